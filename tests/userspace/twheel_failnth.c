// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_failnth: fault injection on every allocation of /dev/twheel's
 * paths and of module load, with failslab and /proc/thread-self/fail-nth;
 * plus the module lifetime checks that need a system call.
 *
 * Usage:
 *   twheel_failnth paths [FILTER]   walk open, SCHEDULE, BATCH, MODIFY,
 *                                   CANCEL, SET_EVENTFD, INFO, read, poll,
 *                                   epoll and close of /dev/twheel
 *   twheel_failnth modload KO [PARAMS [STRIDE]]
 *                                   walk finit_module(KO) (every STRIDE-th
 *                                   fault point, default 1); the module must
 *                                   not be loaded, and is loaded at the end
 *   twheel_failnth busy NAME        with a /dev/twheel fd open and timers
 *                                   armed, delete_module(NAME) must fail
 *                                   (EWOULDBLOCK: the file pins the module)
 *   twheel_failnth starve           every expiry finds no event record
 *                                   (failslab aimed at the twheel_fd_rec
 *                                   cache, allocations that cannot sleep
 *                                   only): no event may be lost, early or
 *                                   wrong, read() and MODIFY and CANCEL
 *                                   must deliver every one
 *   twheel_failnth cycles N DIR     N times: load DIR/twheel.ko, then
 *                                   DIR/twheel_torture.ko pending=32 (it
 *                                   leaves 32 timers armed) and
 *                                   DIR/twheel_consumer.ko (if there), check
 *                                   "busy", unload all three; nothing may
 *                                   fail, and twheel_torture must find its
 *                                   timers pending at exit (kernel log)
 *
 * The walk, for each path: prepare the state without injection, write n to
 * /proc/thread-self/fail-nth, make the one system call, read fail-nth back
 * (0: the n-th fault point was reached and failed) and reset it; n = 1, 2,
 * ... until the call completes without reaching its n-th point. Every
 * injected failure must give ENOMEM (or be absorbed: the call succeeds),
 * and afterwards the state must be exactly what the result says: the fd
 * keeps working, INFO's counts match, the ids that exist are the ones the
 * call reported, a batch did exactly the operations it said it did, a
 * module that failed to load is gone.
 *
 * failslab is configured for it (ignore-gfp-wait=N so GFP_KERNEL
 * allocations count, verbose=0 so no stack is dumped per failure) and put
 * back at the end.
 *
 * Each injected failure is attributed with the kmem tracepoints (a
 * stacktrace trigger on failed allocations of this process): a "#   PATH
 * N RESULT SITE" line names the allocation that failed, through the first
 * twheel function on the stack. TWHEEL_FAILNTH_DEBUG=1 prints the raw trace.
 *
 * Output: "# ..." lines, one per path with its number of fault points, and
 * "twheel_failnth: ok: ..." or "twheel_failnth: FAILED: ..."; exit status
 * 0 iff every check passed, 77 if the kernel has no fail-nth.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "tw_util.h"

#define FAR		(3600ULL * NSEC_PER_SEC)
#define MAX_POINTS	20000		/* a walk that does not end is a bug */
#define UNTOUCHED	0x5a5a
#define FAILSLAB	"/sys/kernel/debug/failslab"


static int g_errors;
static int g_nth_fd = -1;
static unsigned int g_points, g_paths;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	g_errors++;
	if (g_errors > 40)
		return;
	printf("# FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* fail-nth and failslab                                               */
/* ------------------------------------------------------------------ */

static void set_nth(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(g_nth_fd, buf, (size_t)len, 0) != len) {
		printf("twheel_failnth: FAILED: writing fail-nth: %s\n",
		       strerror(errno));
		exit(1);
	}
}

static unsigned int get_nth(void)
{
	char buf[16] = "";

	if (pread(g_nth_fd, buf, sizeof(buf) - 1, 0) <= 0) {
		printf("twheel_failnth: FAILED: reading fail-nth: %s\n",
		       strerror(errno));
		exit(1);
	}
	return (unsigned int)strtoul(buf, NULL, 10);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

static void read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[r > 0 ? r : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
}

/* The failslab knobs the modes set, each saved the first time it is set. */
static struct {
	const char *name;
	char old[24];
} g_fs[] = {
	{ .name = "probability" }, { .name = "interval" },
	{ .name = "times" }, { .name = "space" },
	{ .name = "cache-filter" }, { .name = "ignore-gfp-wait" },
	{ .name = "verbose" }, { .name = "task-filter" },
};

/* Puts back what failslab_set() changed: at exit (main), or on a signal. */
static void failslab_restore(void)
{
	char path[96];
	size_t i;

	for (i = 0; i < sizeof(g_fs) / sizeof(g_fs[0]); i++) {
		if (!g_fs[i].old[0])
			continue;
		snprintf(path, sizeof(path), FAILSLAB "/%s", g_fs[i].name);
		write_file(path, g_fs[i].old);
	}
}

/*
 * Sets failslab's knob @name (one of g_fs) to @val, its value saved first.
 * Return: 0, or -1 with the reason printed.
 */
static int failslab_set(const char *name, const char *val)
{
	char path[96];
	size_t i = 0;

	while (strcmp(g_fs[i].name, name))
		i++;
	snprintf(path, sizeof(path), FAILSLAB "/%s", name);
	if (!g_fs[i].old[0]) {
		read_file(path, g_fs[i].old, sizeof(g_fs[i].old));
		if (!g_fs[i].old[0]) {
			printf("# no %s (CONFIG_FAILSLAB, debugfs?)\n", path);
			return -1;
		}
	}
	if (write_file(path, val)) {
		printf("# cannot set %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Which allocation failed: the kmem tracepoints, filtered to our failed
 * allocations, with a stacktrace trigger, record the call chain of each
 * injected failure in the trace buffer (not on the console).
 */
static char g_tracing[64];
static char g_trace_filter[96];
static const char *const g_trace_events[] = {
	"kmem/kmalloc", "kmem/kmem_cache_alloc",
};

static void trace_event_file(const char *ev, const char *file, char *path,
			     size_t len)
{
	snprintf(path, len, "%s/events/%s/%s", g_tracing, ev, file);
}

static void tracing_restore(void)
{
	char path[160], trig[128];
	size_t i;

	for (i = 0; g_tracing[0] && i < 2; i++) {
		trace_event_file(g_trace_events[i], "enable", path, sizeof(path));
		write_file(path, "0");
		trace_event_file(g_trace_events[i], "trigger", path, sizeof(path));
		snprintf(trig, sizeof(trig), "!stacktrace if %s", g_trace_filter);
		write_file(path, trig);
		trace_event_file(g_trace_events[i], "filter", path, sizeof(path));
		write_file(path, "0");
	}
}

static void tracing_setup(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/debug/tracing", "/sys/kernel/tracing",
	};
	char path[160], trig[128];
	size_t i;

	for (i = 0; i < 2 && !g_tracing[0]; i++) {
		snprintf(path, sizeof(path), "%s/events/kmem/kmalloc/trigger",
			 dirs[i]);
		if (!access(path, W_OK))
			snprintf(g_tracing, sizeof(g_tracing), "%s", dirs[i]);
	}
	if (!g_tracing[0]) {
		printf("# no kmem tracepoints: fault points are not attributed\n");
		return;
	}
	snprintf(g_trace_filter, sizeof(g_trace_filter),
		 "ptr == 0 && common_pid == %d", (int)getpid());
	snprintf(trig, sizeof(trig), "stacktrace if %s", g_trace_filter);
	atexit(tracing_restore);
	for (i = 0; i < 2; i++) {
		trace_event_file(g_trace_events[i], "filter", path, sizeof(path));
		write_file(path, g_trace_filter);
		trace_event_file(g_trace_events[i], "trigger", path, sizeof(path));
		write_file(path, trig);
		trace_event_file(g_trace_events[i], "enable", path, sizeof(path));
		if (write_file(path, "1")) {
			printf("# cannot enable %s: fault points are not attributed\n",
			       g_trace_events[i]);
			g_tracing[0] = '\0';
			return;
		}
	}
	snprintf(path, sizeof(path), "%s/tracing_on", g_tracing);
	write_file(path, "1");
}

static void trace_clear(void)
{
	char path[96];
	int fd;

	if (!g_tracing[0])
		return;
	snprintf(path, sizeof(path), "%s/trace", g_tracing);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
}

/* Allocator internals, skipped to name the code that allocated. */
static bool alloc_frame(const char *f)
{
	static const char *const pfx[] = {
		"trace_", "__trace", "kmalloc", "__kmalloc", "kmem_cache_",
		"__kmem_cache", "slab_", "__slab", "___slab", "kzalloc",
		"kvmalloc", "__kvmalloc", "kcalloc",
	};
	size_t i;

	for (i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (!strncmp(f, pfx[i], strlen(pfx[i])))
			return true;
	return false;
}

/* Where in a module load a failure happened. */
enum load_phase {
	LOAD_CORE,	/* load_module() itself: the kernel's part */
	LOAD_DO_INIT,	/* do_init_module(), around the init function */
	LOAD_INIT,	/* the module's init function (do_one_initcall) */
};

/*
 * The call chain of the failed allocation of the last attempt, as
 * "caller < ... < first twheel frame" (or "?"), and where in a module load
 * it happened.
 */
static void trace_site(char *site, size_t len, enum load_phase *phase)
{
	static char buf[1 << 16];
	char path[96], *line, *save = NULL, *f, *end;
	int fd, frames = 0;
	ssize_t r;
	size_t used = 0;
	bool stack = false, named = false;

	snprintf(site, len, "?");
	*phase = LOAD_CORE;
	if (!g_tracing[0])
		return;
	snprintf(path, sizeof(path), "%s/trace", g_tracing);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (used < sizeof(buf) - 1 &&
	       (r = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)r;
	close(fd);
	buf[used] = '\0';
	if (getenv("TWHEEL_FAILNTH_DEBUG"))
		printf("%s", buf);
	site[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "<stack trace>")) {
			/* The latest failure wins. */
			stack = true;
			named = false;
			frames = 0;
			site[0] = '\0';
			*phase = LOAD_CORE;
			continue;
		}
		f = strstr(line, "=> ");
		if (!stack || !f)
			continue;
		f += 3;
		end = f + strcspn(f, " +");
		*end = '\0';
		if (!strcmp(f, "do_one_initcall"))
			*phase = LOAD_INIT;
		else if (!strcmp(f, "do_init_module") && *phase == LOAD_CORE)
			*phase = LOAD_DO_INIT;
		/* The init function's own symbol is gone from kallsyms. */
		if (!strncmp(f, "0x", 2))
			f = "(module init)";
		if (alloc_frame(f) || named)
			continue;
		if (frames++ < 3 || strstr(f, "twheel") || !strncmp(f, "tw_", 3)) {
			snprintf(site + strlen(site), len - strlen(site), "%s%s",
				 site[0] ? " < " : "", f);
			named = strstr(f, "twheel") || !strncmp(f, "tw_", 3);
		}
	}
	if (!site[0])
		snprintf(site, len, "?");
}

static int setup(void)
{
	g_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (g_nth_fd < 0) {
		printf("# no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION off?): %s\n",
		       strerror(errno));
		return -1;
	}
	if (failslab_set("ignore-gfp-wait", "N") ||
	    failslab_set("verbose", "0"))
		return -1;
	tracing_setup();
	return 0;
}

/* ------------------------------------------------------------------ */
/* /dev/twheel helpers (never under injection): libtwheel                */
/* ------------------------------------------------------------------ */

static void tw_open(struct twheel *tw)
{
	int r = twheel_open(tw, 0);

	if (r < 0) {
		printf("twheel_failnth: FAILED: open %s: %s\n", TWHEEL_DEVICE,
		       strerror(-r));
		exit(1);
	}
}

/* A one-shot timer in @delay ns (user_data @delay): its id, 0 on failure. */
static u64 sched_delay(struct twheel *tw, u64 delay)
{
	u64 id;
	int r = twheel_schedule(tw, delay, 0, 0, delay, &id);

	if (r) {
		fail("SCHEDULE without injection: %s", strerror(-r));
		return 0;
	}
	return id;
}

static struct twheel_info info_of(struct twheel *tw)
{
	struct twheel_info i = { 0 };
	int r = twheel_get_info(tw, &i);

	if (r)
		fail("INFO without injection: %s", strerror(-r));
	return i;
}

/* Wait (bounded) until @n events are queued. */
static bool wait_queued(struct twheel *tw, unsigned int n)
{
	int i;

	for (i = 0; i < 2000; i++) {
		if (info_of(tw).queued >= n)
			return true;
		usleep(5000);
	}
	fail("%u events not queued within 10 s", n);
	return false;
}

/*
 * The fd works: a new timer can be armed, fires, is read, and is gone.
 * One-shot events queued before it are read too, releasing their timers.
 */
static void check_fd_works(const char *path, unsigned int n, struct twheel *tw)
{
	struct twheel_info before = info_of(tw), after;
	unsigned int released = 0;
	struct twheel_event ev;
	u64 id = sched_delay(tw, 0);
	int r;

	if (!id || !wait_queued(tw, before.queued + 1)) {
		fail("%s n=%u: the fd does not work after the failure", path, n);
		return;
	}
	/* Read until ours: older events may be queued ahead of it. */
	for (;;) {
		r = twheel_read_nowait(tw, &ev, 1);
		if (r != 1) {
			fail("%s n=%u: read: %s", path, n,
			     r < 0 ? strerror(-r) : "no event");
			return;
		}
		if (ev.id == id)
			break;
		if (!(ev.flags & TWHEEL_EVENT_PERIODIC))
			released++;
	}
	after = info_of(tw);
	if (after.timers != before.timers - released)
		fail("%s n=%u: %u timers after a fired-and-read one, %u before",
		     path, n, after.timers, before.timers - released);
}

/* ------------------------------------------------------------------ */
/* The walk                                                            */
/* ------------------------------------------------------------------ */

struct ctx {
	struct twheel tw;	/* the file under test */
	int fd2;
	u64 a, b;
	struct twheel_op *ops;
	unsigned int nops;
	unsigned int before;	/* timers before the call */
	long r;		/* the call's result, or -errno */
};

struct path {
	const char *name;
	void (*prepare)(struct ctx *c);
	long (*call)(struct ctx *c);
	/* Check the state given the result; n is the fault point tried. */
	void (*verify)(const char *name, unsigned int n, bool injected,
		       struct ctx *c);
	void (*cleanup)(struct ctx *c);
};

static void walk(const struct path *p)
{
	unsigned int n, enomem = 0, absorbed = 0;
	struct ctx c;
	bool injected;
	int e;

	for (n = 1; n <= MAX_POINTS; n++) {
		memset(&c, 0, sizeof(c));
		c.tw.fd = c.fd2 = -1;
		if (p->prepare)
			p->prepare(&c);
		trace_clear();
		set_nth(n);
		c.r = p->call(&c);
		e = c.r < 0 ? (int)-c.r : 0;
		/* A batch reports the failure of an op in that op's result. */
		if (c.ops && c.r >= 0 && c.r < (long)c.nops)
			e = -c.ops[c.r].result;
		injected = get_nth() == 0;
		set_nth(0);
		if (injected) {
			enum load_phase phase;
			char site[256];

			trace_site(site, sizeof(site), &phase);
			printf("#   %-16s %3u %-8s %s\n", p->name, n,
			       e ? strerror(e) : "absorbed", site);
			if (!e)
				absorbed++;
			else if (e == ENOMEM)
				enomem++;
			else
				fail("%s: fault point %u: %s, not ENOMEM",
				     p->name, n, strerror(e));
		} else if (e) {
			fail("%s: fails without injection: %s", p->name,
			     strerror(e));
		}
		p->verify(p->name, n, injected, &c);
		if (p->cleanup)
			p->cleanup(&c);
		twheel_close(&c.tw);
		if (c.fd2 >= 0)
			close(c.fd2);
		free(c.ops);
		if (!injected)
			break;
	}
	if (n > MAX_POINTS)
		fail("%s: more than %u fault points", p->name, MAX_POINTS);
	printf("# %-16s %3u fault points: %u ENOMEM, %u absorbed (the call succeeded)\n",
	       p->name, n - 1, enomem, absorbed);
	g_points += n - 1;
	g_paths++;
}

/*
 * The calls under injection are the raw system calls, each alone between
 * the write and the read of fail-nth, so the walk sees every fault point of
 * that one call and nothing else (twheel_open() adds TWHEEL_IOC_INFO); the
 * library does the preparing and checking around them.
 */

/* open: the new file goes in fd2 until verify_open() hands it to tw */

static long call_open(struct ctx *c)
{
	c->fd2 = open(TWHEEL_DEVICE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	return c->fd2 < 0 ? -errno : 0;
}

static void verify_open(const char *name, unsigned int n, bool inj,
			struct ctx *c)
{
	struct twheel_info i;
	int r;

	if (c->fd2 < 0)
		return;
	r = twheel_open_fd(&c->tw, c->fd2, 0);
	if (r) {
		fail("%s n=%u: twheel_open_fd: %s", name, n, strerror(-r));
		return;
	}
	c->fd2 = -1;
	i = info_of(&c->tw);
	if (i.timers || i.queued || !i.max_timers)
		fail("%s n=%u: new file has %u timers, %u queued, limit %u",
		     name, n, i.timers, i.queued, i.max_timers);
	check_fd_works(name, n, &c->tw);
	(void)inj;
}

/* SCHEDULE: the first id (the xarray's first node), and id 64 (a new level) */

static void prep_fd(struct ctx *c)
{
	tw_open(&c->tw);
}

static void prep_fd_63(struct ctx *c)
{
	tw_open(&c->tw);
	for (c->before = 0; c->before < 63; c->before++)
		sched_delay(&c->tw, FAR);
}

static long call_schedule(struct ctx *c)
{
	struct twheel_timer_spec s = {
		.value = FAR,
		.clockid = TWHEEL_CLOCK_MONOTONIC,
		.user_data = 7,
	};
	long r = xioctl(c->tw.fd, TWHEEL_IOC_SCHEDULE, &s);

	c->a = s.id;
	return r;
}

static void verify_schedule(const char *name, unsigned int n, bool inj,
			    struct ctx *c)
{
	unsigned int before = c->before;
	struct twheel_info i = info_of(&c->tw);

	(void)inj;
	if (c->r == 0) {
		if (!c->a || i.timers != before + 1)
			fail("%s n=%u: succeeded, id %llu, %u timers", name, n,
			     (unsigned long long)c->a, i.timers);
		else if (twheel_cancel(&c->tw, c->a) != 1)
			fail("%s n=%u: the new timer %llu is not pending", name,
			     n, (unsigned long long)c->a);
	} else if (c->a) {
		fail("%s n=%u: failed but wrote id %llu", name, n,
		     (unsigned long long)c->a);
	}
	i = info_of(&c->tw);
	if (i.timers != before)
		fail("%s n=%u: %u timers, expected %u", name, n, i.timers, before);
	check_fd_works(name, n, &c->tw);
}

/* BATCH: schedule, modify, schedule, cancel, schedule */

static void prep_batch(struct ctx *c)
{
	unsigned int i;

	tw_open(&c->tw);
	c->a = sched_delay(&c->tw, FAR);
	c->b = sched_delay(&c->tw, FAR);
	c->nops = 5;
	c->ops = calloc(c->nops, sizeof(*c->ops));
	if (!c->ops)
		exit(2);
	for (i = 0; i < c->nops; i++) {
		c->ops[i].result = UNTOUCHED;
		c->ops[i].spec.clockid = TWHEEL_CLOCK_MONOTONIC;
		c->ops[i].spec.value = FAR + i;
		c->ops[i].op = i % 2 ? TWHEEL_OP_MODIFY : TWHEEL_OP_SCHEDULE;
	}
	c->ops[1].spec.id = c->a;
	c->ops[3] = (struct twheel_op){ .op = TWHEEL_OP_CANCEL,
					.result = UNTOUCHED,
					.spec.id = c->b };
}

static long call_batch(struct ctx *c)
{
	struct twheel_batch b = { .ops = (uintptr_t)c->ops, .count = c->nops };

	return xioctl(c->tw.fd, TWHEEL_IOC_BATCH, &b);
}

static void verify_batch(const char *name, unsigned int n, bool inj,
			 struct ctx *c)
{
	unsigned int done = c->r < 0 ? 0 : (unsigned int)c->r, i, timers = 2;
	struct twheel_info info = info_of(&c->tw);

	(void)inj;
	if (c->r < 0) {
		for (i = 0; i < c->nops; i++)
			if (c->ops[i].result != UNTOUCHED)
				fail("%s n=%u: failed with %s, but op %u has result %d",
				     name, n, strerror((int)-c->r), i,
				     c->ops[i].result);
	} else if (done > c->nops) {
		fail("%s n=%u: returned %ld", name, n, c->r);
		return;
	} else if (done < c->nops && c->ops[done].result != -ENOMEM) {
		fail("%s n=%u: stopped at op %u with result %d, not -ENOMEM",
		     name, n, done, c->ops[done].result);
	}
	for (i = 0; i < c->nops; i++) {
		struct twheel_op *op = &c->ops[i];

		if (i >= done) {
			if (i > done && op->result != UNTOUCHED)
				fail("%s n=%u: op %u after the failure was written",
				     name, n, i);
			continue;
		}
		switch (op->op) {
		case TWHEEL_OP_SCHEDULE:
			timers++;
			if (op->result || !op->spec.id)
				fail("%s n=%u: op %u: result %d, id %llu", name, n,
				     i, op->result,
				     (unsigned long long)op->spec.id);
			else if (twheel_cancel(&c->tw, op->spec.id) != 1)
				fail("%s n=%u: op %u: timer %llu not pending",
				     name, n, i, (unsigned long long)op->spec.id);
			else
				timers--;
			break;
		case TWHEEL_OP_MODIFY:
			if (op->result != 1)
				fail("%s n=%u: MODIFY of a pending timer gave %d",
				     name, n, op->result);
			break;
		default:
			if (op->result != 1)
				fail("%s n=%u: CANCEL of a pending timer gave %d",
				     name, n, op->result);
			timers--;
			break;
		}
	}
	/* What the batch did not do is undone: b is still there unless cancelled. */
	if (twheel_cancel(&c->tw, c->b) != (done > 3 ? -ENOENT : 1))
		fail("%s n=%u: timer b after a batch of %u ops", name, n, done);
	if (done <= 3)
		timers--;
	info = info_of(&c->tw);
	if (info.timers != timers)
		fail("%s n=%u: %u timers, expected %u", name, n, info.timers,
		     timers);
	check_fd_works(name, n, &c->tw);
}

/* BATCH of TWHEEL_BATCH_MAX ops: kvmalloc() of 256 KiB */

static void prep_batch_max(struct ctx *c)
{
	unsigned int i;

	tw_open(&c->tw);
	c->a = sched_delay(&c->tw, FAR);
	c->nops = TWHEEL_BATCH_MAX;
	c->ops = calloc(c->nops, sizeof(*c->ops));
	if (!c->ops)
		exit(2);
	for (i = 0; i < c->nops; i++) {
		c->ops[i].op = TWHEEL_OP_MODIFY;
		c->ops[i].result = UNTOUCHED;
		c->ops[i].spec.id = c->a;
		c->ops[i].spec.value = FAR + i;
		c->ops[i].spec.clockid = TWHEEL_CLOCK_MONOTONIC;
	}
}

static void verify_batch_max(const char *name, unsigned int n, bool inj,
			     struct ctx *c)
{
	struct twheel_info info = info_of(&c->tw);

	(void)inj;
	if (c->r >= 0 && c->r != (long)c->nops)
		fail("%s n=%u: %ld of %u ops done", name, n, c->r, c->nops);
	if (c->r < 0 && c->ops[0].result != UNTOUCHED)
		fail("%s n=%u: failed but wrote results", name, n);
	if (c->r >= 0 && (c->ops[0].result != 1 ||
			  c->ops[c->nops - 1].result != 1))
		fail("%s n=%u: results %d..%d", name, n, c->ops[0].result,
		     c->ops[c->nops - 1].result);
	if (info.timers != 1 || twheel_cancel(&c->tw, c->a) != 1)
		fail("%s n=%u: the timer is not pending alone (%u timers)", name,
		     n, info.timers);
	check_fd_works(name, n, &c->tw);
}

/* MODIFY, CANCEL, INFO, SET_EVENTFD: no allocation expected */

static void prep_one(struct ctx *c)
{
	tw_open(&c->tw);
	c->a = sched_delay(&c->tw, FAR);
	c->fd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static long call_modify(struct ctx *c)
{
	struct twheel_timer_spec s = {
		.id = c->a,
		.value = FAR / 2,
		.clockid = TWHEEL_CLOCK_MONOTONIC,
	};

	return xioctl(c->tw.fd, TWHEEL_IOC_MODIFY, &s);
}

static long call_cancel(struct ctx *c)
{
	struct twheel_cancel k = { .id = c->a };

	return xioctl(c->tw.fd, TWHEEL_IOC_CANCEL, &k);
}

static long call_info(struct ctx *c)
{
	struct twheel_info i;

	return xioctl(c->tw.fd, TWHEEL_IOC_INFO, &i);
}

static long call_set_eventfd(struct ctx *c)
{
	struct twheel_eventfd e = { .fd = c->fd2 };

	return xioctl(c->tw.fd, TWHEEL_IOC_SET_EVENTFD, &e);
}

static void verify_one(const char *name, unsigned int n, bool inj,
		       struct ctx *c)
{
	struct twheel_info info = info_of(&c->tw);
	bool cancelled = !strcmp(name, "CANCEL") && c->r == 1;
	uint64_t v = 0;

	(void)inj;
	if (c->r < 0)
		return;
	if (!strcmp(name, "MODIFY") && c->r != 1)
		fail("%s n=%u: returned %ld for a pending timer", name, n, c->r);
	if (!strcmp(name, "CANCEL") && c->r != 1)
		fail("%s n=%u: returned %ld for a pending timer", name, n, c->r);
	if (info.timers != (cancelled ? 0u : 1u))
		fail("%s n=%u: %u timers", name, n, info.timers);
	check_fd_works(name, n, &c->tw);
	if (!strcmp(name, "SET_EVENTFD") &&
	    (read(c->fd2, &v, sizeof(v)) != sizeof(v) || v != 1))
		fail("%s n=%u: the eventfd was not signalled (%llu)", name, n,
		     (unsigned long long)v);
}

/* read() and poll() of a queued event */

static void prep_queued(struct ctx *c)
{
	tw_open(&c->tw);
	c->a = sched_delay(&c->tw, 0);
	wait_queued(&c->tw, 1);
}

static long call_read(struct ctx *c)
{
	struct twheel_event ev[2];
	ssize_t r = read(c->tw.fd, ev, sizeof(ev));

	if (r < 0)
		return -errno;
	c->b = ev[0].id;
	return r;
}

static void verify_read(const char *name, unsigned int n, bool inj,
			struct ctx *c)
{
	struct twheel_info info = info_of(&c->tw);

	(void)inj;
	if (c->r >= 0 && (c->r != sizeof(struct twheel_event) || c->b != c->a))
		fail("%s n=%u: read %ld bytes, id %llu", name, n, c->r,
		     (unsigned long long)c->b);
	if (c->r >= 0 ? info.timers || info.queued :
			info.timers != 1 || info.queued != 1)
		fail("%s n=%u: %u timers, %u queued after read gave %ld", name,
		     n, info.timers, info.queued, c->r);
	check_fd_works(name, n, &c->tw);
}

static long call_poll(struct ctx *c)
{
	struct pollfd p = { .fd = c->tw.fd, .events = POLLIN };
	int r = poll(&p, 1, 0);

	if (r < 0)
		return -errno;
	return r == 1 && (p.revents & POLLIN) ? 0 : -EIO;
}

static void verify_poll(const char *name, unsigned int n, bool inj,
			struct ctx *c)
{
	struct twheel_info info = info_of(&c->tw);

	(void)inj;
	if (info.queued != 1)
		fail("%s n=%u: %u events queued", name, n, info.queued);
	check_fd_works(name, n, &c->tw);
}

/* epoll_ctl(ADD): eventpoll allocates, then calls our poll() */

static void prep_epoll(struct ctx *c)
{
	tw_open(&c->tw);
	c->fd2 = epoll_create1(EPOLL_CLOEXEC);
	if (c->fd2 < 0)
		fail("epoll_create1: %s", strerror(errno));
}

static long call_epoll(struct ctx *c)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 42 };

	return epoll_ctl(c->fd2, EPOLL_CTL_ADD, c->tw.fd, &e) ? -errno : 0;
}

static void verify_epoll(const char *name, unsigned int n, bool inj,
			 struct ctx *c)
{
	struct epoll_event e;
	int r;

	(void)inj;
	sched_delay(&c->tw, 0);
	r = epoll_wait(c->fd2, &e, 1, c->r ? 50 : 10000);
	if (c->r == 0 && (r != 1 || e.data.u64 != 42))
		fail("%s n=%u: epoll_wait gave %d", name, n, r);
	if (c->r && r != 0)
		fail("%s n=%u: ADD failed, yet epoll_wait gave %d", name, n, r);
	wait_queued(&c->tw, 1);
}

/* close() with timers pending, firing and queued */

/* a 1 ms periodic timer, firing at once */
static void sched_periodic(struct twheel *tw)
{
	int r = twheel_schedule(tw, 0, NSEC_PER_MSEC, TWHEEL_TIMER_PERIODIC, 0,
				NULL);

	if (r)
		fail("SCHEDULE periodic: %s", strerror(-r));
}

static void prep_close(struct ctx *c)
{
	int i;

	tw_open(&c->tw);
	for (i = 0; i < 8; i++)
		sched_delay(&c->tw, i % 2 ? FAR : 0);
	sched_periodic(&c->tw);
	wait_queued(&c->tw, 2);
}

static long call_close(struct ctx *c)
{
	int r = close(c->tw.fd);

	c->tw.fd = -1;	/* closed here: twheel_close() has no result to check */
	return r ? -errno : 0;
}

static void verify_close(const char *name, unsigned int n, bool inj,
			 struct ctx *c)
{
	(void)inj;
	if (c->r)
		fail("%s n=%u: close: %s", name, n, strerror((int)-c->r));
}

static const struct path paths[] = {
	{ "open", NULL, call_open, verify_open, NULL },
	{ "SCHEDULE-first", prep_fd, call_schedule, verify_schedule, NULL },
	{ "SCHEDULE-64th", prep_fd_63, call_schedule, verify_schedule, NULL },
	{ "BATCH", prep_batch, call_batch, verify_batch, NULL },
	{ "BATCH-4096", prep_batch_max, call_batch, verify_batch_max, NULL },
	{ "MODIFY", prep_one, call_modify, verify_one, NULL },
	{ "CANCEL", prep_one, call_cancel, verify_one, NULL },
	{ "SET_EVENTFD", prep_one, call_set_eventfd, verify_one, NULL },
	{ "INFO", prep_one, call_info, verify_one, NULL },
	{ "read", prep_queued, call_read, verify_read, NULL },
	{ "poll", prep_queued, call_poll, verify_poll, NULL },
	{ "epoll_ctl-ADD", prep_epoll, call_epoll, verify_epoll, NULL },
	{ "close", prep_close, call_close, verify_close, NULL },
};

static int cmd_paths(const char *filter)
{
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!filter || strstr(paths[i].name, filter))
			walk(&paths[i]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Module load and unload                                              */
/* ------------------------------------------------------------------ */

/* Is module @name loaded (any state)? */
static bool module_loaded(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	FILE *f = fopen("/proc/modules", "re");
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ')
			found = true;
	fclose(f);
	return found;
}

static void module_name(const char *ko, char *name, size_t len)
{
	const char *base = strrchr(ko, '/');
	size_t n;

	base = base ? base + 1 : ko;
	n = strcspn(base, ".");
	if (n >= len)
		n = len - 1;
	memcpy(name, base, n);
	name[n] = '\0';
}

/*
 * The kernel reports some injected failures of its own allocations with a
 * stack dump (kmem_cache_create(), vmalloc's warn_alloc()): expected here,
 * but a stack on the console reads as a splat. During the module-load walk
 * the console shows only KERN_ERR and worse (KASAN reports still do, and
 * panic_on_warn still panics), and this program reads the kernel log of
 * the walk itself: any report other than those dumps fails the test.
 */
static char g_old_printk[64];
static int g_kmsg_fd = -1;

static void console_restore(void)
{
	if (g_old_printk[0])
		write_file("/proc/sys/kernel/printk", g_old_printk);
}

static void console_quiet(void)
{
	read_file("/proc/sys/kernel/printk", g_old_printk, sizeof(g_old_printk));
	if (g_old_printk[0]) {
		atexit(console_restore);
		write_file("/proc/sys/kernel/printk", "4");
	}
	g_kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g_kmsg_fd >= 0)
		lseek(g_kmsg_fd, 0, SEEK_END);
}

/* Check the kernel log written since console_quiet(); returns the dumps. */
static unsigned int kmsg_check(void)
{
	static const char *const bad[] = {
		"BUG:", "WARNING:", "ODEBUG:", "Oops", "KASAN:", "UBSAN:",
		"possible circular locking", "possible recursive locking",
		"inconsistent lock state", "locking correctness validator",
		"INFO: task ", "INFO: rcu_", "general protection fault",
		"kernel BUG", "list_add corruption", "list_del corruption",
	};
	unsigned int dumps = 0;
	char rec[2048], *msg;
	ssize_t r;
	size_t i;

	if (g_kmsg_fd < 0)
		return 0;
	for (;;) {
		r = read(g_kmsg_fd, rec, sizeof(rec) - 1);
		if (r < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (r <= 0)
			break;
		rec[r] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		msg[strcspn(msg, "\n")] = '\0';
		if (strstr(msg, "Call Trace:"))
			dumps++;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (strstr(msg, bad[i]))
				fail("module-load: kernel report: %s", msg);
	}
	close(g_kmsg_fd);
	g_kmsg_fd = -1;
	console_restore();
	return dumps;
}

static int finit(int fd, const char *params)
{
	return syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
}

static bool unload(const char *name, unsigned int n)
{
	if (!syscall(SYS_delete_module, name, O_NONBLOCK))
		return true;
	fail("modload n=%u: unloading %s: %s", n, name, strerror(errno));
	return false;
}

/*
 * Module load: the fault points of load_module() before the module's init
 * are the kernel's (vmalloc, execmem, sysfs, ftrace), and some of them
 * report a failure with a stack dump or a WARN (kernel/trace/trace_events.c
 * WARNs when a field of a module's trace event cannot be allocated), which
 * is not twheel's doing and which panic_on_warn turns into a crash. So the
 * walk covers do_init_module(): the module's init and what it calls, and
 * the allocations just before and after it. It counts the points of a
 * clean load, then fails them from the last one down (the numbering
 * shifts a little from one load to the next: debugobjects and kmemleak
 * refill their pools now and then), and stops at the first one that is
 * in load_module() proper. Without the kmem tracepoints to tell where a
 * failure happened it cannot know where that is, and skips.
 */
static int cmd_modload(const char *ko, const char *params,
			unsigned int stride)
{
	unsigned int n, total, left, enomem = 0, absorbed = 0, init = 0;
	unsigned int tried = 0, dumps;
	const unsigned int big = 1U << 30;
	bool injected, seen_init = false;
	enum load_phase phase;
	char name[64], site[256];
	struct stat sb;
	int fd, r;

	module_name(ko, name, sizeof(name));
	if (module_loaded(name)) {
		fail("modload: %s is loaded already", name);
		return 1;
	}
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fail("modload: open %s: %s", ko, strerror(errno));
		return 1;
	}
	if (!g_tracing[0]) {
		printf("# module-load: no kmem tracepoints to find the module's init: skipped\n");
		r = finit(fd, params);
		if (r)
			fail("modload: %s", strerror(-r));
		close(fd);
		return 0;
	}
	set_nth(big);
	r = finit(fd, params);
	left = get_nth();
	set_nth(0);
	if (r) {
		fail("modload: a clean load fails: %s", strerror(-r));
		close(fd);
		return 1;
	}
	total = big - left;
	unload(name, 0);
	console_quiet();

	for (n = total; n >= 1 && n <= total; n -= stride) {
		trace_clear();
		set_nth(n);
		r = finit(fd, params);
		injected = get_nth() == 0;
		set_nth(0);
		trace_site(site, sizeof(site), &phase);
		if (!injected) {
			/* Fewer points this time (pools, caches): go on. */
			if (!r)
				unload(name, n);
			continue;
		}
		tried++;
		printf("#   %-16s %3u %-8s %s%s\n", "module-load", n,
		       r ? strerror(-r) : "absorbed", site,
		       phase == LOAD_INIT ? "" : phase == LOAD_DO_INIT ?
		       " (do_init_module)" : " (load_module: stop)");
		if (phase == LOAD_INIT) {
			seen_init = true;
			init++;
		}
		if (!r) {
			absorbed++;
			if (!module_loaded(name))
				fail("modload n=%u: loaded, yet not in /proc/modules", n);
			unload(name, n);
		} else {
			if (r == -ENOMEM)
				enomem++;
			else
				fail("modload: fault point %u (%s): %s, not ENOMEM",
				     n, site, strerror(-r));
			if (module_loaded(name))
				fail("modload n=%u: failed, yet %s is loaded", n, name);
			/* devtmpfs removes the node synchronously; there is no udev. */
			if (!strcmp(name, "twheel") && !stat(TWHEEL_DEVICE, &sb))
				fail("modload n=%u: failed, yet %s exists", n,
				     TWHEEL_DEVICE);
		}
		if (phase == LOAD_CORE)
			break;
	}
	dumps = kmsg_check();
	if (!seen_init)
		fail("modload: no fault point inside %s's init", name);
	r = finit(fd, params);
	if (r)
		fail("modload: the final load fails: %s", strerror(-r));
	close(fd);
	printf("# %-16s %3u fault points in its init tried (of %u in load_module, stride %u), %u more: %u ENOMEM, %u absorbed (the module loaded)\n",
	       "module-load", init, total, stride, tried - init, enomem,
	       absorbed);
	printf("# module-load: the kernel dumped the stack %u times for failures it reports (kmem_cache_create, warn_alloc); no other report\n",
	       dumps);
	g_points += tried;
	g_paths++;
	if (!module_loaded(name))
		fail("modload: %s is not loaded at the end", name);
	return 0;
}

static void busy(const char *name, bool quiet)
{
	struct twheel tw;
	int r, e;

	tw_open(&tw);
	sched_delay(&tw, FAR);
	sched_delay(&tw, 0);
	sched_periodic(&tw);
	r = (int)syscall(SYS_delete_module, name, O_NONBLOCK);
	e = errno;
	if (!r)
		fail("busy: %s unloaded while %s was open", name, TWHEEL_DEVICE);
	else if (e != EWOULDBLOCK && e != EBUSY)
		fail("busy: delete_module(%s) with an open fd: %s", name,
		     strerror(e));
	else if (!quiet)
		printf("# delete_module(%s) with %s open: %s (%s)\n", name,
		       TWHEEL_DEVICE, e == EBUSY ? "EBUSY" : "EWOULDBLOCK",
		       strerror(e));
	if (!module_loaded(name))
		fail("busy: %s is gone", name);
	if (info_of(&tw).timers != 3)
		fail("busy: the timers of the open fd are gone");
	twheel_close(&tw);
}

static int load_ko(const char *path, const char *params)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = finit(fd, params);
	close(fd);
	return r;
}

static int cmd_cycles(unsigned int n, const char *dir)
{
	char tw[256], tt[256], tc[256], rec[1024];
	bool consumer;
	struct timespec t0, t1;
	unsigned int i;
	int kmsg, r;
	ssize_t len;

	snprintf(tw, sizeof(tw), "%s/twheel.ko", dir);
	snprintf(tt, sizeof(tt), "%s/twheel_torture.ko", dir);
	snprintf(tc, sizeof(tc), "%s/twheel_consumer.ko", dir);
	consumer = !access(tc, R_OK);
	if (module_loaded("twheel")) {
		fail("cycles: twheel is loaded already");
		return 1;
	}
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg >= 0)
		lseek(kmsg, 0, SEEK_END);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n && !g_errors; i++) {
		r = load_ko(tw, "");
		if (r) {
			fail("cycle %u: loading twheel: %s", i, strerror(-r));
			break;
		}
		r = load_ko(tt, "pending=32");
		if (r)
			fail("cycle %u: loading twheel_torture: %s", i, strerror(-r));
		r = consumer ? load_ko(tc, "") : 0;
		if (r)
			fail("cycle %u: loading twheel_consumer: %s", i, strerror(-r));
		/* An open file, and modules using it: twheel cannot go. */
		busy("twheel", true);
		if (consumer && module_loaded("twheel_consumer") &&
		    syscall(SYS_delete_module, "twheel_consumer", O_NONBLOCK))
			fail("cycle %u: unloading twheel_consumer: %s", i,
			     strerror(errno));
		if (module_loaded("twheel_torture") &&
		    syscall(SYS_delete_module, "twheel_torture", O_NONBLOCK))
			fail("cycle %u: unloading twheel_torture: %s", i,
			     strerror(errno));
		if (syscall(SYS_delete_module, "twheel", O_NONBLOCK))
			fail("cycle %u: unloading twheel: %s", i, strerror(errno));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* twheel_torture checks at exit that its timers were all pending. */
	while (kmsg >= 0 && ((len = read(kmsg, rec, sizeof(rec) - 1)) > 0 ||
			     (len < 0 && errno == EPIPE))) {
		if (len <= 0)
			continue;
		rec[len] = '\0';
		if (strstr(rec, "twheel_torture: FAIL") ||
		    (strstr(rec, "twheel_consumer: ") && strstr(rec, "fail")))
			fail("kernel log: %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
	}
	if (kmsg >= 0)
		close(kmsg);
	printf("# lifetime: %u load/unload cycles of twheel, twheel_torture (32 timers pending)%s in %.1f s\n",
	       i, consumer ? " and twheel_consumer" : "",
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

/* ------------------------------------------------------------------ */
/* starve: expiries that find no record                                */
/* ------------------------------------------------------------------ */

#define STARVE_N	256
#define REC_SLAB	"/sys/kernel/slab/twheel_fd_rec/failslab"

static void starve_restore(void)
{
	write_file(REC_SLAB, "0");
	failslab_restore();
}

/*
 * Killed by the runner's timeout, or past our own: put failslab back, or
 * every test after this one would run with it aimed at the record cache.
 */
static void starve_signal(int sig)
{
	static const char msg[] = "twheel_failnth: FAILED: starve timed out\n";

	(void)sig;
	starve_restore();
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * Every allocation of a record that cannot sleep fails; others do not.
 * The filters first, the probability last (failslab_restore() puts it
 * back first): with probability 100 and no cache filter yet, every slab
 * allocation of the machine failed, loudly (verbose), for as long as the
 * knobs took to write. A process exiting then (busybox's timeout) had its
 * SIGCHLD's allocation fail with a stack dump, which the debug guest's
 * console check reports as a kernel problem.
 */
static int starve_setup(void)
{
	static const char *const knob[][2] = {
		{ "cache-filter", "Y" }, { "ignore-gfp-wait", "Y" },
		{ "verbose", "0" }, { "task-filter", "N" },
		{ "interval", "1" }, { "times", "-1" }, { "space", "0" },
		{ "probability", "100" },
	};
	size_t i;

	atexit(starve_restore);
	signal(SIGTERM, starve_signal);
	signal(SIGINT, starve_signal);
	signal(SIGALRM, starve_signal);
	alarm(100);		/* the runner gives it 120 s */
	for (i = 0; i < sizeof(knob) / sizeof(knob[0]); i++)
		if (failslab_set(knob[i][0], knob[i][1]))
			return -1;
	if (write_file(REC_SLAB, "1")) {
		printf("# cannot set %s: %s\n", REC_SLAB, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * STARVE_N one-shot timers 2-53 ms away all expire with no record to be
 * had. Each must then be owed, not lost: INFO counts it as queued, poll()
 * says readable, MODIFY and CANCEL of a starved timer deliver its event
 * first, and read() delivers the rest, each once, with its deadline and
 * user data, a count of 1, and a fired time not before the deadline.
 */
static void cmd_starve(void)
{
	static u64 ids[STARVE_N], due[STARVE_N];
	static bool seen[STARVE_N];
	struct twheel_event ev[32];
	unsigned int got = 0, i;
	u64 now = twheel_now();
	struct pollfd pfd;
	struct twheel tw;
	int r, k, fd;

	tw_open(&tw);
	fd = tw.fd;
	for (i = 0; i < STARVE_N; i++) {
		due[i] = now + 2000000 + (u64)i * 200000;
		r = twheel_schedule(&tw, due[i], 0, TWHEEL_TIMER_ABSTIME, i,
				    &ids[i]);
		if (r) {
			fail("SCHEDULE %u: %s", i, strerror(-r));
			return;
		}
	}
	for (k = 0; k < 2000 && fdinfo_val(fd, "twheel-starved") < STARVE_N; k++)
		usleep(5000);
	if (fdinfo_val(fd, "twheel-starved") != STARVE_N) {
		fail("%lld of %u timers starved within 10 s",
		     fdinfo_val(fd, "twheel-starved"), STARVE_N);
		return;
	}
	if (info_of(&tw).queued != STARVE_N)
		fail("INFO: %u queued with %u owed events", info_of(&tw).queued,
		     STARVE_N);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN))
		fail("poll() does not say readable with owed events");

	/*
	 * MODIFY of a starved timer: not pending; its owed event is queued
	 * first, with the user data and deadline of the expiry it stands for.
	 */
	r = twheel_modify(&tw, ids[0], FAR, 0, 0, 1000);
	if (r != 0)
		fail("MODIFY of a starved timer: %d, want 0", r);
	/* CANCEL of another: not pending; its event stays to be read. */
	r = twheel_cancel(&tw, ids[1]);
	if (r != 0)
		fail("CANCEL of a starved timer: %d, want 0", r);
	if (fdinfo_val(fd, "twheel-starved") != STARVE_N - 2)
		fail("%lld starved after MODIFY and CANCEL, want %u",
		     fdinfo_val(fd, "twheel-starved"), STARVE_N - 2);

	while (got < STARVE_N) {
		r = twheel_read_timeout(&tw, ev, 32, 10ULL * NSEC_PER_SEC);
		if (r <= 0) {
			fail("read after %u events: %s", got,
			     r < 0 ? strerror(-r) : "none");
			return;
		}
		for (k = 0; k < r; k++, got++) {
			u64 u = ev[k].user_data;

			if (u >= STARVE_N || ev[k].id != ids[u] || seen[u]) {
				fail("event %u: id %llx user_data %llu: unknown or twice",
				     got, (unsigned long long)ev[k].id,
				     (unsigned long long)u);
				continue;
			}
			seen[u] = true;
			if (ev[k].count != 1 || ev[k].deadline != due[u] ||
			    ev[k].fired < due[u] || ev[k].flags)
				fail("timer %llu: count %llu deadline %llu (want %llu) fired %llu flags %x",
				     (unsigned long long)u,
				     (unsigned long long)ev[k].count,
				     (unsigned long long)ev[k].deadline,
				     (unsigned long long)due[u],
				     (unsigned long long)ev[k].fired,
				     ev[k].flags);
		}
	}
	/* The modified timer is pending again, for an hour. */
	r = twheel_cancel(&tw, ids[0]);
	if (r != 1)
		fail("CANCEL of the modified timer: %d, want 1", r);
	if (fdinfo_val(fd, "twheel-starved") != 0 || info_of(&tw).timers != 0)
		fail("after reading all: %lld starved, %u timers",
		     fdinfo_val(fd, "twheel-starved"), info_of(&tw).timers);

	/*
	 * A periodic timer has its record from its arming (allocated where
	 * SCHEDULE may sleep, which failslab leaves alone here): it never
	 * starves, and its events come as usual.
	 */
	r = twheel_schedule(&tw, 2000000, 2000000, TWHEEL_TIMER_PERIODIC, 77,
			    &ids[0]);
	if (r) {
		fail("periodic SCHEDULE under failslab: %s", strerror(-r));
	} else {
		r = twheel_read_timeout(&tw, ev, 1, 10ULL * NSEC_PER_SEC);
		if (r != 1 || ev[0].id != ids[0] || ev[0].user_data != 77 ||
		    !(ev[0].flags & TWHEEL_EVENT_PERIODIC) || !ev[0].count ||
		    ev[0].fired < ev[0].deadline)
			fail("periodic timer under failslab: read %d, wrong or no event",
			     r);
		if (fdinfo_val(fd, "twheel-starved") != 0)
			fail("a periodic timer starved");
		r = twheel_cancel(&tw, ids[0]);
		if (r != 1)
			fail("CANCEL of the periodic timer: %d, want 1", r);
	}
	close(fd);
	printf("# starve: %u owed events delivered, none lost, none early\n",
	       got);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: twheel_failnth paths [FILTER]\n"
		"       twheel_failnth modload KO [PARAMS [STRIDE]]\n"
		"       twheel_failnth busy MODULE\n"
		"       twheel_failnth cycles N DIR\n"
		"       twheel_failnth starve\n");
	exit(2);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(failslab_restore);
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "busy") && argc == 3) {
		busy(argv[2], false);
	} else if (!strcmp(argv[1], "starve") && argc == 2) {
		if (starve_setup())
			return 77;
		cmd_starve();
	} else if (!strcmp(argv[1], "cycles") && argc == 4) {
		cmd_cycles((unsigned int)atoi(argv[2]), argv[3]);
	} else if (!strcmp(argv[1], "paths") && argc <= 3) {
		if (setup())
			return 77;
		cmd_paths(argc == 3 ? argv[2] : NULL);
	} else if (!strcmp(argv[1], "modload") && argc >= 3 && argc <= 5) {
		unsigned int stride = argc == 5 ? (unsigned int)atoi(argv[4]) : 1;

		if (setup())
			return 77;
		cmd_modload(argv[2], argc >= 4 ? argv[3] : "",
			    stride ? stride : 1);
	} else {
		usage();
	}
	if (g_errors) {
		printf("twheel_failnth: FAILED: %d errors\n", g_errors);
		return 1;
	}
	if (g_paths)
		printf("twheel_failnth: ok: %u fault points on %u paths\n",
		       g_points, g_paths);
	else
		printf("twheel_failnth: ok\n");
	return 0;
}
