// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_test: ABI tests for /dev/twheel (uapi/twheel.h), on the kernel's
 * kselftest harness (tools/testing/selftests/kselftest_harness.h, copied
 * from the kernel sources at build time, see tests/userspace/README).
 *
 * Usage: twheel_test [-l | -h | FILTER | harness options]
 *   FILTER  run only the tests whose name contains FILTER
 *   -l      list the test names
 *   other options (-t, -T, -r, ...) go to the harness unchanged
 * Environment:
 *   TWHEEL_TEST_SLACK_MS  lateness bound for one expiry (default 2000: the
 *                         guests run under TCG emulation); EARLY expiries
 *                         are always failures, whatever this says.
 *   TWHEEL_TEST_SEED      seed of the random delays (default: fixed)
 *   TWHEEL_TEST_MANY      timers of many_timers (default 10000; the debug
 *                         kernel's guest uses fewer: the same paths, in a
 *                         quarter of its 45 s)
 *
 * Output is the harness's KTAP: "TAP version 13", "1..N", then for each
 * test "ok N twheel.name", "ok N twheel.name # SKIP why" or "not ok N
 * twheel.name" preceded by "# file:line:..." lines for each failed check,
 * and finally "# Totals: pass:P fail:F ...". Exit status 0 iff all selected
 * tests passed, 1 if one failed, 2 for a usage error or a filter that
 * matches nothing.
 *
 * Each test runs in its own forked process with a timeout, so a test that
 * crashes or hangs is reported and the others still run; its file
 * descriptors (and so its timers) die with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <linux/capability.h>

/* failure messages on stdout, in order with the KTAP lines */
#define TH_LOG_STREAM stdout
#include "kselftest_harness.h"

#include "tw_util.h"

#define EV_SIZE		sizeof(struct twheel_event)
#define FAR_FUTURE	(3600ULL * NSEC_PER_SEC)	/* never fires in a test */
#define WATCHDOG_UD	0x5741544348444f47ULL		/* "WATCHDOG" */

static u64 g_slack_ns = 2000 * NSEC_PER_MSEC;
/* Timers of many_timers, TWHEEL_TEST_MANY. */
static int g_many = 10000;
static u64 g_seed = 0x74776865656cULL;	/* "twheel" */
static u64 g_granularity_ns;
static u32 g_max_timers;

/* ------------------------------------------------------------------ */
/* Checks in helpers (outside a test body, no _metadata)               */
/* ------------------------------------------------------------------ */

/*
 * The test running in this process, set by the fixture's setup: a helper's
 * failed check marks it failed, as the harness's EXPECT_*() do.
 */
static struct __test_metadata *tw_meta;
static int g_failed;			/* failed helper checks in this test */

static const char *ename(int e)
{
	static __thread char buf[4][16];
	static __thread unsigned int i;
	const char *n = strerrorname_np(e);
	char *s;

	if (n)
		return n;
	s = buf[i++ & 3];
	snprintf(s, sizeof(buf[0]), "E%d", e);
	return s;
}

/* An ioctl-style return value: ">= 0" or "-ENAME". */
static const char *rstr(long r)
{
	static __thread char buf[8][40];
	static __thread unsigned int i;
	char *s = buf[i++ & 7];

	if (r < 0)
		snprintf(s, sizeof(buf[0]), "-%s", ename((int)-r));
	else
		snprintf(s, sizeof(buf[0]), "%ld", r);
	return s;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	flockfile(stdout);
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	funlockfile(stdout);
	fflush(stdout);
}

static void fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	__atomic_add_fetch(&g_failed, 1, __ATOMIC_RELAXED);
	if (tw_meta)
		tw_meta->exit_code = KSFT_FAIL;
	flockfile(stdout);
	printf("# %s:%d:%s:", file, line, tw_meta ? tw_meta->name : "?");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	funlockfile(stdout);
	fflush(stdout);
}

/*
 * Checks that are expressions (true when they passed), for helpers and
 * for the few places in tests that branch on a check's outcome.
 */
#define FAIL(...)	fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...) ({						\
	bool _ok = (cond);						\
	if (!_ok)							\
		FAIL(__VA_ARGS__);					\
	_ok;								\
})
/* An ioctl-style result: a value >= 0 or a negative errno. */
#define CHECK_RET(expr, want) ({					\
	long _r = (long)(expr), _w = (long)(want);			\
	bool _ok = _r == _w;						\
	if (!_ok)							\
		FAIL("%s: expected %s, got %s", #expr, rstr(_w), rstr(_r)); \
	_ok;								\
})
#define CHECK_EQ(got, want) ({						\
	long long _g = (long long)(got), _w = (long long)(want);	\
	bool _ok = _g == _w;						\
	if (!_ok)							\
		FAIL("%s: expected %lld (%#llx), got %lld (%#llx)",	\
		     #got, _w, (unsigned long long)_w, _g,		\
		     (unsigned long long)_g);				\
	_ok;								\
})
/* lo <= got <= hi, unsigned */
#define CHECK_RANGE(got, lo, hi) ({					\
	unsigned long long _g = (got), _l = (lo), _h = (hi);		\
	bool _ok = _g >= _l && _g <= _h;				\
	if (!_ok)							\
		FAIL("%s: expected in [%llu, %llu], got %llu",		\
		     #got, _l, _h, _g);					\
	_ok;								\
})

/*
 * One fixture for every test: it only points tw_meta at the test and
 * reports tests that took long.
 */
FIXTURE(twheel) {
	u64 t0;
};

FIXTURE_SETUP(twheel)
{
	tw_meta = _metadata;
	g_failed = 0;
	self->t0 = now_ns();
}

FIXTURE_TEARDOWN(twheel)
{
	u64 dt = now_ns() - self->t0;

	if (dt > 2 * NSEC_PER_SEC)
		diag("%s took %.2f s", _metadata->name, (double)dt / 1e9);
}

/* ------------------------------------------------------------------ */
/* Device helpers                                                     */
/* ------------------------------------------------------------------ */

/* open() read-write, close-on-exec, plus @flags, as @tw: @tw->fd or -1 */
static int tw_open_flags(struct twheel *tw, int flags)
{
	int fd = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC | flags), r;

	tw->fd = -1;
	if (fd < 0) {
		FAIL("open(%s): %s", TWHEEL_DEVICE, ename(errno));
		return -1;
	}
	r = twheel_open_fd(tw, fd, 0);
	if (r < 0) {
		FAIL("twheel_open_fd: %s", ename(-r));
		close(fd);
	}
	return tw->fd;
}

/* Non-blocking by default: a read after poll never hangs a test. */
static int tw_open(struct twheel *tw)
{
	return tw_open_flags(tw, O_NONBLOCK);
}

/* INFO.timers, or -1 after reporting the failure */
static long tw_timers(struct twheel *tw)
{
	struct twheel_info info;

	if (!CHECK_RET(twheel_get_info(tw, &info), 0))
		return -1;
	return info.timers;
}

static long tw_queued(struct twheel *tw)
{
	struct twheel_info info;

	if (!CHECK_RET(twheel_get_info(tw, &info), 0))
		return -1;
	return info.queued;
}

/* Sleep on a fd that will not be ready (polls the twheel fd for nothing). */
static void idle_ms(unsigned int ms)
{
	sleep_ns((u64)ms * NSEC_PER_MSEC);
}

/*
 * Read events until @want were read or @timeout_ms passed. Returns the number
 * read; *seen (if given) is the time of the last successful read. Raw read()
 * here and in read_once(): every read is checked to return whole records,
 * which twheel_read*() would hide.
 */
static int wait_events(int fd, struct twheel_event *ev, int want,
		       unsigned int timeout_ms, u64 *seen)
{
	u64 end = now_ns() + (u64)timeout_ms * NSEC_PER_MSEC;
	int n = 0;

	while (n < want) {
		u64 t = now_ns();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = t >= end ? 0 : (int)((end - t + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		ssize_t got;
		int r;

		r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			FAIL("poll: %s", ename(errno));
			break;
		}
		if (r == 0)
			break;
		got = read(fd, ev + n, (size_t)(want - n) * EV_SIZE);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got < 0) {
			FAIL("read: %s", ename(errno));
			break;
		}
		if (got == 0 || got % EV_SIZE) {
			FAIL("read returned %zd, not a positive multiple of %zu",
			     got, EV_SIZE);
			break;
		}
		if (seen)
			*seen = now_ns();
		n += (int)(got / EV_SIZE);
	}
	return n;
}

/*
 * Wait up to @timeout_ms for the fd to be readable, then read() once into a
 * buffer of @max events. Returns the number of events read.
 */
static int read_once(int fd, struct twheel_event *ev, int max, unsigned int timeout_ms,
		     u64 *seen)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t got;

	if (poll(&p, 1, (int)timeout_ms) != 1) {
		FAIL("no POLLIN within %u ms", timeout_ms);
		return 0;
	}
	got = read(fd, ev, (size_t)max * EV_SIZE);
	if (seen)
		*seen = now_ns();
	if (got < 0) {
		FAIL("read: %s", ename(errno));
		return 0;
	}
	if (got % EV_SIZE)
		FAIL("read returned %zd, not a multiple of %zu", got, EV_SIZE);
	return (int)(got / EV_SIZE);
}

static bool wait_one(int fd, struct twheel_event *ev, unsigned int timeout_ms,
		     u64 *seen, const char *what)
{
	if (wait_events(fd, ev, 1, timeout_ms, seen) == 1)
		return true;
	FAIL("%s: no event within %u ms", what, timeout_ms);
	return false;
}

static void print_event(const char *what, const struct twheel_event *e)
{
	diag("%s: id=%llu user_data=%#llx deadline=%llu fired=%llu (late %lld us) count=%llu flags=%#x pad=%u",
	     what, (unsigned long long)e->id, (unsigned long long)e->user_data,
	     (unsigned long long)e->deadline, (unsigned long long)e->fired,
	     ((long long)e->fired - (long long)e->deadline) / 1000,
	     (unsigned long long)e->count, e->flags, e->pad);
}

/* Expect no event for @ms. */
static bool no_events(int fd, unsigned int ms, const char *what)
{
	struct twheel_event ev[8];
	int n = wait_events(fd, ev, 8, ms, NULL);

	for (int i = 0; i < n; i++)
		print_event("unexpected event", &ev[i]);
	return CHECK(n == 0, "%s: expected no event within %u ms, got %d",
		     what, ms, n);
}

/*
 * The invariants of every event: never early, observed after it fired, pad
 * zero, count >= 1, and late by at most the slack.
 */
static bool check_event_at(const char *file, int line, const struct twheel_event *e,
			   u64 seen)
{
	int before = g_failed;

	if (e->fired < e->deadline)
		fail_at(file, line, "event id %llu fired EARLY: fired %llu < deadline %llu (by %llu ns)",
			(unsigned long long)e->id, (unsigned long long)e->fired,
			(unsigned long long)e->deadline,
			(unsigned long long)(e->deadline - e->fired));
	if (seen && seen < e->fired)
		fail_at(file, line, "event id %llu read at %llu, before it fired at %llu",
			(unsigned long long)e->id, (unsigned long long)seen,
			(unsigned long long)e->fired);
	if (e->fired >= e->deadline && e->fired - e->deadline > g_slack_ns)
		fail_at(file, line, "event id %llu late by %llu us > slack %llu us",
			(unsigned long long)e->id,
			(unsigned long long)((e->fired - e->deadline) / 1000),
			(unsigned long long)(g_slack_ns / 1000));
	if (e->pad)
		fail_at(file, line, "event id %llu: pad %u, expected 0",
			(unsigned long long)e->id, e->pad);
	if (e->count < 1)
		fail_at(file, line, "event id %llu: count 0", (unsigned long long)e->id);
	if (e->flags & ~(TWHEEL_EVENT_PERIODIC | TWHEEL_EVENT_CANCELLED))
		fail_at(file, line, "event id %llu: unknown flags %#x",
			(unsigned long long)e->id, e->flags);
	if (g_failed != before)
		print_event("offending event", e);
	return g_failed == before;
}
#define CHECK_EVENT(e, seen) check_event_at(__FILE__, __LINE__, (e), (seen))

static void *map_guard(void)
{
	/* two pages: the first read-write, the second inaccessible */
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		FAIL("mmap: %s", ename(errno));
		return NULL;
	}
	mprotect(p + pg, pg, PROT_NONE);
	return p;
}

static u64 rng_state;
static u64 rnd(void)
{
	return xorshift64s(&rng_state);
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* True when all @n ids are nonzero and distinct (sorts a copy). */
static bool ids_distinct(const u64 *ids, size_t n)
{
	u64 *c = malloc(n * sizeof(*c));
	bool ok = true;

	if (!c)
		return false;
	memcpy(c, ids, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (c[i] == 0 || (i && c[i] == c[i - 1])) {
			FAIL("id %llu is %s", (unsigned long long)c[i],
			     c[i] ? "duplicated" : "zero");
			ok = false;
			break;
		}
	}
	free(c);
	return ok;
}

/*
 * A raw TWHEEL_IOC_BATCH of @count ops: the batch tests check the ioctl's
 * own contract (count bounds, stop at the first failure, results written
 * back, faulting arrays), which twheel_submit() hides by splitting and
 * resuming; the bulk users take the same path so they need no buffer.
 */
static long tw_batch(int fd, struct twheel_op *ops, u32 count)
{
	struct twheel_batch b = { .ops = (uintptr_t)ops, .count = count };

	return xioctl(fd, TWHEEL_IOC_BATCH, &b);
}

static void fill_schedule_ops(struct twheel_op *ops, u32 n, u64 value, u64 ud0)
{
	memset(ops, 0, n * sizeof(*ops));
	for (u32 i = 0; i < n; i++) {
		ops[i].op = TWHEEL_OP_SCHEDULE;
		ops[i].spec = mkspec(value, 0, ud0 + i, 0);
	}
}

/*
 * Watchdog for blocking calls: if not stopped within @ms, it schedules a
 * zero-delay timer (user_data WATCHDOG_UD) on @fd so a blocked read returns
 * and the test fails instead of hanging.
 */
struct watchdog {
	struct twheel *tw;
	unsigned int ms;
	int pipe[2];
	bool fired;
	pthread_t th;
};

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;
	struct pollfd p = { .fd = w->pipe[0], .events = POLLIN };

	if (poll(&p, 1, (int)w->ms) == 0) {
		w->fired = true;
		twheel_schedule(w->tw, 0, 0, 0, WATCHDOG_UD, NULL);
	}
	return NULL;
}

static bool watchdog_start(struct watchdog *w, struct twheel *tw, unsigned int ms)
{
	w->tw = tw;
	w->ms = ms;
	w->fired = false;
	if (pipe2(w->pipe, O_CLOEXEC) < 0) {
		FAIL("pipe: %s", ename(errno));
		return false;
	}
	if (pthread_create(&w->th, NULL, watchdog_main, w)) {
		FAIL("pthread_create failed");
		return false;
	}
	return true;
}

/* Returns true if the watchdog had to fire. */
static bool watchdog_stop(struct watchdog *w)
{
	if (write(w->pipe[1], "x", 1) != 1)
		FAIL("watchdog pipe write: %s", ename(errno));
	pthread_join(w->th, NULL);
	close(w->pipe[0]);
	close(w->pipe[1]);
	return w->fired;
}

/* ------------------------------------------------------------------ */
/* Tests: basics and argument checking                                */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, open_close, 20)
{
	struct twheel tws[16];
	int fds[16];
	struct twheel_info info;

	for (int i = 0; i < 16; i++) {
		fds[i] = tw_open_flags(&tws[i], i & 1 ? O_NONBLOCK : 0);
		ASSERT_TRUE(fds[i] >= 0);
	}
	for (int i = 0; i < 16; i++) {
		EXPECT_EQ(0, twheel_get_info(&tws[i], &info));
		EXPECT_EQ(0, info.timers);
		EXPECT_EQ(0, info.queued);
	}
	/* a fd with timers (pending and fired) closes cleanly too */
	EXPECT_EQ(0, twheel_schedule(&tws[0], FAR_FUTURE, 0, 0, 1, NULL));
	EXPECT_EQ(0, twheel_schedule(&tws[0], 0, 0, 0, 2, NULL));
	for (int i = 0; i < 16; i++) {
		EXPECT_TRUE(close(fds[i]) == 0)
			TH_LOG("close: %s", ename(errno));
	}
	/* read-only opens work as well */
	fds[0] = open(TWHEEL_DEVICE, O_RDONLY | O_CLOEXEC);
	EXPECT_TRUE(fds[0] >= 0)
		TH_LOG("open O_RDONLY: %s", ename(errno));
	if (fds[0] >= 0)
		close(fds[0]);
}

TEST_F_TIMEOUT(twheel, unknown_ioctl_enotty, 20)
{
	static const struct {
		unsigned long req;
		const char *what;
	} cases[] = {
		{ _IO(TWHEEL_IOC_MAGIC, 0x07), "_IO(magic, 0x07)" },
		{ _IOW(TWHEEL_IOC_MAGIC, 0x06, __u64), "RING_ENTER nr, with a size" },
		{ _IOWR(TWHEEL_IOC_MAGIC, 0x7f, struct twheel_info), "_IOWR(magic, 0x7f)" },
		{ _IO(TWHEEL_IOC_MAGIC, 0xff), "_IO(magic, 0xff)" },
		{ _IOWR(TWHEEL_IOC_MAGIC, 0x00, __u64), "SCHEDULE nr, wrong size" },
		{ _IOR(TWHEEL_IOC_MAGIC, 0x00, struct twheel_timer_spec), "SCHEDULE nr, wrong direction" },
		{ _IOW(TWHEEL_IOC_MAGIC, 0x05, struct twheel_info), "INFO nr, wrong direction" },
		{ _IOR(TWHEEL_IOC_MAGIC + 1, 0x05, struct twheel_info), "INFO with another magic" },
		{ 0x5401 /* TCGETS */, "TCGETS" },
	};
	_Alignas(8) char buf[512];
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long r;

		memset(buf, 0, sizeof(buf));
		r = xioctl(fd, cases[i].req, buf);
		EXPECT_TRUE(r == -ENOTTY)
			TH_LOG("ioctl %s (%#lx): expected -ENOTTY, got %s", cases[i].what,
			       cases[i].req, rstr(r));
	}
	EXPECT_EQ(0, tw_timers(&tw));
}

static const struct {
	unsigned long req;
	const char *name;
	size_t size;
} all_ioctls[] = {
	{ TWHEEL_IOC_SCHEDULE, "SCHEDULE", sizeof(struct twheel_timer_spec) },
	{ TWHEEL_IOC_MODIFY, "MODIFY", sizeof(struct twheel_timer_spec) },
	{ TWHEEL_IOC_CANCEL, "CANCEL", sizeof(struct twheel_cancel) },
	{ TWHEEL_IOC_BATCH, "BATCH", sizeof(struct twheel_batch) },
	{ TWHEEL_IOC_SET_EVENTFD, "SET_EVENTFD", sizeof(struct twheel_eventfd) },
	{ TWHEEL_IOC_INFO, "INFO", sizeof(struct twheel_info) },
};
#define N_IOCTLS (sizeof(all_ioctls) / sizeof(all_ioctls[0]))

TEST_F_TIMEOUT(twheel, efault_bad_pointers, 20)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *guard = map_guard();
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0 && guard);
	for (size_t i = 0; i < N_IOCTLS; i++) {
		void *bad[] = {
			NULL, (void *)1, guard + pg,
			/* straddles into the inaccessible page */
			guard + pg - all_ioctls[i].size + 8,
			(void *)0xffff888000000000ULL,	/* kernel address */
			(void *)0xdead000000000000ULL,	/* non-canonical */
		};

		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			long r;

			/* A straddling struct: valid contents in the readable part. */
			memset(guard, 0, pg);
			r = xioctl(fd, all_ioctls[i].req, bad[j]);
			EXPECT_TRUE(r == -EFAULT)
				TH_LOG("%s with pointer %p: expected -EFAULT, got %s",
				       all_ioctls[i].name, bad[j], rstr(r));
		}
	}
	/* Nothing was scheduled by any of that. */
	EXPECT_EQ(0, tw_timers(&tw));

	/* INFO writes its result: a read-only buffer faults */
	mprotect(guard, pg, PROT_READ);
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_INFO, guard));
	/*
	 * SCHEDULE writes the id back: a read-only spec faults. Whether the
	 * timer then exists is not specified (the caller never learnt its id).
	 */
	mprotect(guard, pg, PROT_READ | PROT_WRITE);
	*(struct twheel_timer_spec *)guard = mkspec(FAR_FUTURE, 0, 0, 0);
	mprotect(guard, pg, PROT_READ);
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_SCHEDULE, guard));
	diag("timers after SCHEDULE whose id could not be written back: %ld",
	     tw_timers(&tw));

	/* read() into bad memory, with an event queued */
	{
		struct twheel tw2;
		int fd2 = tw_open(&tw2);
		struct pollfd p = { .fd = fd2, .events = POLLIN };

		ASSERT_TRUE(fd2 >= 0);
		ASSERT_EQ(0, twheel_schedule(&tw2, 0, 0, 0, 1, NULL));
		ASSERT_TRUE(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1)
			TH_LOG("zero-delay timer: no POLLIN");
		void *volatile null = NULL;	/* hide it from -Wnonnull */

		errno = 0;
		EXPECT_TRUE(read(fd2, null, EV_SIZE) == -1 && errno == EFAULT)
			TH_LOG("read(NULL): expected EFAULT, got %s", ename(errno));
		errno = 0;
		EXPECT_TRUE(read(fd2, guard, EV_SIZE) == -1 && errno == EFAULT)
			TH_LOG("read into read-only memory: expected EFAULT, got %s", ename(errno));
		errno = 0;
		EXPECT_TRUE(read(fd2, (void *)0xffff888000000000ULL, EV_SIZE) == -1 && errno == EFAULT)
			TH_LOG("read into a kernel address: expected EFAULT, got %s", ename(errno));
		diag("queued after failed reads: %ld (whether a faulting read loses the event is unspecified)",
		     tw_queued(&tw2));
	}
}

TEST_F_TIMEOUT(twheel, schedule_einval_fields, 20)
{
	static const struct {
		const char *what;
		u64 value, period, r0, r1;
		u32 clockid, flags;
	} cases[] = {
		{ "slack = 1 without SLACK", FAR_FUTURE, 0, 1, 0, 1, 0 },
		{ "SLACK, slack 1<<63", FAR_FUTURE, 0, 1ULL << 63, 0, 1, TWHEEL_TIMER_SLACK },
		{ "SLACK, slack ~0", FAR_FUTURE, 0, ~0ULL, 0, 1, TWHEEL_TIMER_SLACK },
		{ "SLACK|PERIODIC, slack 1<<63", FAR_FUTURE, NSEC_PER_MSEC, 1ULL << 63, 0, 1,
		  TWHEEL_TIMER_SLACK | TWHEEL_TIMER_PERIODIC },
		{ "REALTIME SLACK, slack 1<<63", FAR_FUTURE, 0, 1ULL << 63, 0, 0,
		  TWHEEL_TIMER_SLACK },
		{ "SLACK, slack 0, reserved 1", FAR_FUTURE, 0, 0, 1, 1, TWHEEL_TIMER_SLACK },
		{ "reserved = 1", FAR_FUTURE, 0, 0, 1, 1, 0 },
		{ "reserved = 1<<63", FAR_FUTURE, 0, 0, 1ULL << 63, 1, 0 },
		{ "flags 1<<3", FAR_FUTURE, 0, 0, 0, 1, 1u << 3 },
		{ "flags 1<<31", FAR_FUTURE, 0, 0, 0, 1, 1u << 31 },
		{ "flags all ones", FAR_FUTURE, 1000000, 0, 0, 1, ~0u },
		{ "clockid 2", FAR_FUTURE, 0, 0, 0, 2, 0 },
		{ "clockid 11 (TAI)", FAR_FUTURE, 0, 0, 0, 11, 0 },
		{ "REALTIME PERIODIC, period 0", FAR_FUTURE, 0, 0, 0, 0, TWHEEL_TIMER_PERIODIC },
		{ "BOOTTIME PERIODIC|FIXED_DELAY, period 1<<63", FAR_FUTURE, 1ULL << 63, 0, 0, 7,
		  TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY },
		{ "REALTIME period without PERIODIC", FAR_FUTURE, NSEC_PER_SEC, 0, 0, 0, 0 },
		{ "BOOTTIME FIXED_DELAY without PERIODIC", FAR_FUTURE, NSEC_PER_SEC, 0, 0, 7,
		  TWHEEL_TIMER_FIXED_DELAY },
		{ "REALTIME PERIODIC|CANCEL_ON_SET relative", FAR_FUTURE, NSEC_PER_SEC, 0, 0, 0,
		  TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_CANCEL_ON_SET },
		{ "BOOTTIME PERIODIC|CANCEL_ON_SET|ABSTIME", FAR_FUTURE, NSEC_PER_SEC, 0, 0, 7,
		  TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_ABSTIME },
		{ "REALTIME CANCEL_ON_SET relative", FAR_FUTURE, 0, 0, 0, 0,
		  TWHEEL_TIMER_CANCEL_ON_SET },
		{ "BOOTTIME CANCEL_ON_SET|ABSTIME", FAR_FUTURE, 0, 0, 0, 7,
		  TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_ABSTIME },
		{ "MONOTONIC CANCEL_ON_SET|ABSTIME", FAR_FUTURE, 0, 0, 0, 1,
		  TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_ABSTIME },
		{ "REALTIME value 1<<63", 1ULL << 63, 0, 0, 0, 0, 0 },
		{ "REALTIME slack = 1 without SLACK", FAR_FUTURE, 0, 1, 0, 0, 0 },
		{ "REALTIME reserved = 1", FAR_FUTURE, 0, 0, 1, 0, 0 },
		{ "clockid ~0", FAR_FUTURE, 0, 0, 0, ~0u, 0 },
		{ "period without PERIODIC", FAR_FUTURE, NSEC_PER_MSEC, 0, 0, 1, 0 },
		{ "FIXED_DELAY without PERIODIC", FAR_FUTURE, 0, 0, 0, 1, TWHEEL_TIMER_FIXED_DELAY },
		{ "FIXED_DELAY without PERIODIC, period set", FAR_FUTURE, NSEC_PER_MSEC, 0, 0, 1, TWHEEL_TIMER_FIXED_DELAY },
		{ "PERIODIC, period 0", FAR_FUTURE, 0, 0, 0, 1, TWHEEL_TIMER_PERIODIC },
		{ "PERIODIC|FIXED_DELAY, period 0", FAR_FUTURE, 0, 0, 0, 1,
		  TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY },
		{ "PERIODIC, period 1<<63", FAR_FUTURE, 1ULL << 63, 0, 0, 1, TWHEEL_TIMER_PERIODIC },
		{ "PERIODIC, period ~0", FAR_FUTURE, ~0ULL, 0, 0, 1, TWHEEL_TIMER_PERIODIC },
		{ "value 1<<63", 1ULL << 63, 0, 0, 0, 1, 0 },
		{ "value ~0", ~0ULL, 0, 0, 0, 1, 0 },
		{ "ABSTIME value 1<<63", 1ULL << 63, 0, 0, 0, 1, TWHEEL_TIMER_ABSTIME },
		{ "ABSTIME|PERIODIC value ~0", ~0ULL, NSEC_PER_SEC, 0, 0, 1,
		  TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC },
	};
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct twheel_timer_spec s = mkspec(cases[i].value, cases[i].period, 0,
						    cases[i].flags);
		long r;

		s.clockid = cases[i].clockid;
		s.slack = cases[i].r0;
		s.reserved = cases[i].r1;
		r = xioctl(fd, TWHEEL_IOC_SCHEDULE, &s);
		EXPECT_TRUE(r == -EINVAL)
			TH_LOG("SCHEDULE %s: expected -EINVAL, got %s", cases[i].what, rstr(r));
	}
	EXPECT_EQ(0, tw_timers(&tw));
	no_events(fd, 50, "after refused SCHEDULEs");
}

TEST_F_TIMEOUT(twheel, schedule_periodic_zero_period_einval, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	EXPECT_EQ(-EINVAL, twheel_schedule(&tw, NSEC_PER_MSEC, 0, TWHEEL_TIMER_PERIODIC, 0, NULL));
	EXPECT_EQ(-EINVAL, twheel_schedule(&tw, 0, 0, TWHEEL_TIMER_PERIODIC, 0, NULL));
	EXPECT_EQ(-EINVAL,
		  twheel_schedule(&tw, NSEC_PER_MSEC, 0,
				  TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY, 0, NULL));
	/* and the smallest valid period is accepted */
	EXPECT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 1, TWHEEL_TIMER_PERIODIC, 0, NULL));
	EXPECT_EQ(1, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, schedule_negative_einval, 20)
{
	static const u64 vals[] = { ~0ULL, 1ULL << 63, (u64)INT64_MIN + 1, (u64)-NSEC_PER_SEC };
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		long r = twheel_schedule(&tw, vals[i], 0, 0, 0, NULL);

		EXPECT_TRUE(r == -EINVAL)
			TH_LOG("SCHEDULE delay %lld: expected -EINVAL, got %s", (long long)vals[i],
			       rstr(r));
		r = twheel_schedule(&tw, vals[i], 0, TWHEEL_TIMER_ABSTIME, 0, NULL);
		EXPECT_TRUE(r == -EINVAL)
			TH_LOG("SCHEDULE ABSTIME %lld: expected -EINVAL, got %s",
			       (long long)vals[i], rstr(r));
	}
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, schedule_huge_delay_erange, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id1 = 0, id2 = 0, now;

	ASSERT_TRUE(fd >= 0);
	EXPECT_EQ(-ERANGE, twheel_schedule(&tw, INT64_MAX, 0, 0, 0, NULL));
	EXPECT_EQ(-ERANGE, twheel_schedule(&tw, INT64_MAX, NSEC_PER_SEC, TWHEEL_TIMER_PERIODIC, 0,
					   NULL));
	/*
	 * A valid value (<= INT64_MAX) that overflows only once added to the
	 * kernel's now, which is later than ours.
	 */
	now = now_ns();
	EXPECT_EQ(-ERANGE, twheel_schedule(&tw, INT64_MAX - now / 2, 0, 0, 0, NULL));
	EXPECT_EQ(-ERANGE, twheel_schedule(&tw, INT64_MAX - now + 1, 0, 0, 0, NULL));
	EXPECT_EQ(0, tw_timers(&tw));

	/* Far but representable deadlines are accepted and stay pending. */
	now = now_ns();
	EXPECT_EQ(0, twheel_schedule(&tw, INT64_MAX - now - 1000 * NSEC_PER_SEC, 0, 0, 1, &id1));
	EXPECT_EQ(0, twheel_schedule(&tw, INT64_MAX, 0, TWHEEL_TIMER_ABSTIME, 2, &id2));
	EXPECT_EQ(0, twheel_schedule(&tw, 1ULL << 62, 0, 0, 3, NULL));
	EXPECT_EQ(3, tw_timers(&tw));
	no_events(fd, 200, "far-future timers");
	if (id1) {
		EXPECT_EQ(1, twheel_cancel(&tw, id1));
	}
	if (id2) {
		EXPECT_EQ(1, twheel_cancel(&tw, id2));
	}
	EXPECT_EQ(1, tw_timers(&tw));

	/* MODIFY checks the same overflow */
	{
		u64 id;

		ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
		EXPECT_EQ(-ERANGE, twheel_modify(&tw, id, INT64_MAX, 0, 0, 0));
		EXPECT_EQ(-EINVAL, twheel_modify(&tw, id, 1ULL << 63, 0, 0, 0));
		EXPECT_EQ(1, twheel_cancel(&tw, id));
	}
}

TEST_F_TIMEOUT(twheel, modify_einval_fields, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id;
	struct twheel_timer_spec s;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
#define MOD_CASE(what, field_stmt) do {					\
		long _r;						\
		s = mkspec(FAR_FUTURE, 0, 0, 0);			\
		s.id = id;						\
		field_stmt;						\
		_r = xioctl(fd, TWHEEL_IOC_MODIFY, &s);			\
		EXPECT_TRUE(_r == -EINVAL)				\
			TH_LOG("MODIFY %s: expected -EINVAL, got %s",	\
			       what, rstr(_r));				\
	} while (0)
	MOD_CASE("slack = 1 without SLACK", s.slack = 1);
	MOD_CASE("SLACK, slack 1<<63", (s.flags = TWHEEL_TIMER_SLACK, s.slack = 1ULL << 63));
	MOD_CASE("reserved = 1", s.reserved = 1);
	MOD_CASE("flags 1<<3", s.flags = 1u << 3);
	MOD_CASE("flags 1<<31", s.flags = 1u << 31);
	MOD_CASE("clockid 2", s.clockid = 2);
	MOD_CASE("REALTIME PERIODIC period 0", (s.clockid = TWHEEL_CLOCK_REALTIME,
						s.flags = TWHEEL_TIMER_PERIODIC));
	MOD_CASE("BOOTTIME PERIODIC period 1<<63", (s.clockid = TWHEEL_CLOCK_BOOTTIME,
		 s.flags = TWHEEL_TIMER_PERIODIC, s.period = 1ULL << 63));
	MOD_CASE("BOOTTIME CANCEL_ON_SET|ABSTIME", (s.clockid = TWHEEL_CLOCK_BOOTTIME,
		 s.flags = TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_ABSTIME));
	MOD_CASE("period without PERIODIC", s.period = NSEC_PER_MSEC);
	MOD_CASE("FIXED_DELAY without PERIODIC", s.flags = TWHEEL_TIMER_FIXED_DELAY);
	MOD_CASE("PERIODIC period 0", s.flags = TWHEEL_TIMER_PERIODIC);
	MOD_CASE("PERIODIC period 1<<63", (s.flags = TWHEEL_TIMER_PERIODIC, s.period = 1ULL << 63));
	MOD_CASE("value 1<<63", s.value = 1ULL << 63);
	MOD_CASE("value 0 with bad flags", (s.value = 0, s.flags = 1u << 7));
#undef MOD_CASE
	/* the timer was left alone: still pending, nothing fired */
	no_events(fd, 100, "after refused MODIFYs");
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

TEST_F_TIMEOUT(twheel, cancel_einval_fields, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id;
	struct twheel_cancel c;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	c = (struct twheel_cancel){ .id = id, .flags = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_CANCEL, &c));
	c = (struct twheel_cancel){ .id = id, .flags = 1u << 31 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_CANCEL, &c));
	c = (struct twheel_cancel){ .id = id, .pad = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_CANCEL, &c));
	c = (struct twheel_cancel){ .id = id, .pad = ~0u };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_CANCEL, &c));
	EXPECT_EQ(1, tw_timers(&tw));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, eventfd_einval_fields, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_eventfd e;
	struct twheel_event ev;
	u64 cnt;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(efd >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	e = (struct twheel_eventfd){ .fd = efd, .flags = 2 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	/* TWHEEL_EVENTFD_QUERY asks and changes nothing: none is registered. */
	e = (struct twheel_eventfd){ .fd = efd, .flags = TWHEEL_EVENTFD_QUERY };
	EXPECT_EQ(0, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	e = (struct twheel_eventfd){ .fd = -1, .flags = TWHEEL_EVENTFD_QUERY };
	EXPECT_EQ(0, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	e = (struct twheel_eventfd){ .fd = efd, .flags = 1u << 31 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	e = (struct twheel_eventfd){ .fd = efd, .reserved = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	e = (struct twheel_eventfd){ .fd = -1, .reserved = 1ULL << 63 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e));
	/* none of those registered it */
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0, NULL));
	wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay timer");
	errno = 0;
	EXPECT_TRUE(read(efd, &cnt, 8) == -1 && errno == EAGAIN)
		TH_LOG("eventfd signalled although its registration was refused");
}

TEST_F_TIMEOUT(twheel, batch_einval_fields, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op ops[4];
	struct twheel_batch b;
	u64 id;

	ASSERT_TRUE(fd >= 0);
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	/* the first flag past TWHEEL_BATCH_SHORT */
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .flags = 0x2 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .reserved = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .flags = 1u << 31 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(0, tw_timers(&tw));

	/* per-op checks: each op fails alone with -EINVAL at index 0 */
	static const u32 bad_ops[] = { 0, 4, 0x100, ~0u };
	for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
		ops[0].op = bad_ops[i];
		ops[1].result = 77;
		EXPECT_EQ(0, tw_batch(fd, ops, 2));
		EXPECT_TRUE(ops[0].result == -EINVAL)
			TH_LOG("op code %u: result %s, expected -EINVAL", bad_ops[i],
			       rstr(ops[0].result));
		EXPECT_EQ(77, ops[1].result);
	}
	/* a SCHEDULE op with a bad spec */
	fill_schedule_ops(ops, 1, FAR_FUTURE, 0);
	ops[0].spec.slack = 1;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	fill_schedule_ops(ops, 1, FAR_FUTURE, 0);
	ops[0].spec.flags = 1u << 9;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	EXPECT_EQ(0, tw_timers(&tw));

	/* a CANCEL op: fields other than spec.id must be zero */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	memset(ops, 0, sizeof(ops));
	ops[0].op = TWHEEL_OP_CANCEL;
	ops[0].spec.id = id;
	ops[0].spec.user_data = 1;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	ops[0].spec.user_data = 0;
	ops[0].spec.clockid = TWHEEL_CLOCK_MONOTONIC;
	ops[0].result = 0;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	ops[0].spec.clockid = 0;
	ops[0].spec.reserved = 1;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	ops[0].spec.reserved = 0;
	ops[0].spec.slack = 1;
	ops[0].result = 0;
	EXPECT_EQ(0, tw_batch(fd, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	/* still pending; a clean CANCEL op works and returns 1 */
	ops[0].spec.slack = 0;
	ops[0].result = 0;
	EXPECT_EQ(1, tw_batch(fd, ops, 1));
	EXPECT_EQ(1, ops[0].result);
	EXPECT_EQ(0, tw_timers(&tw));
}

/* ------------------------------------------------------------------ */
/* Tests: expiry                                                      */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, schedule_zero_delay_fires, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev;
	u64 id, t0, t1, seen;

	ASSERT_TRUE(fd >= 0);
	t0 = now_ns();
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0xabc, &id));
	t1 = now_ns();
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			     "zero-delay timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(0xabc, ev.user_data);
	EXPECT_EQ(1, ev.count);
	EXPECT_GE(ev.deadline, t0);
	EXPECT_LE(ev.deadline, t1);
	diag("zero delay: fired %llu us after the SCHEDULE call",
	     (unsigned long long)((ev.fired - t0) / 1000));
	no_events(fd, 100, "after the one-shot fired");
}

TEST_F_TIMEOUT(twheel, abs_past_fires_at_once, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[3];
	u64 ids[3], vals[3], t1, seen;
	int n;

	ASSERT_TRUE(fd >= 0);
	vals[0] = 1;
	vals[1] = now_ns() - NSEC_PER_SEC;
	vals[2] = 0;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, vals[i], 0, TWHEEL_TIMER_ABSTIME, (u64)i,
					     &ids[i]));
	}
	t1 = now_ns();
	n = wait_events(fd, ev, 3, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 3)
		TH_LOG("expected 3 events from past deadlines, got %d", n);
	for (int i = 0; i < 3; i++) {
		u64 k = ev[i].user_data;

		ASSERT_TRUE(k < 3)
			TH_LOG("bad user_data %llu", (unsigned long long)k);
		EXPECT_EQ(ids[k], ev[i].id);
		/* the deadline reported is the one scheduled */
		EXPECT_TRUE(ev[i].deadline == vals[k])
			TH_LOG("event %llu: deadline %llu, expected %llu", (unsigned long long)k,
			       (unsigned long long)ev[i].deadline, (unsigned long long)vals[k]);
		EXPECT_TRUE(ev[i].fired >= ev[i].deadline)
			TH_LOG("fired before the deadline");
		EXPECT_TRUE(ev[i].fired <= seen)
			TH_LOG("fired after it was read");
		EXPECT_TRUE(ev[i].fired <= t1 + g_slack_ns)
			TH_LOG("fired %llu us after scheduling",
			       (unsigned long long)((ev[i].fired - t1) / 1000));
		EXPECT_EQ(1, ev[i].count);
	}
}

TEST_F_TIMEOUT(twheel, abs_future_not_early, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev;
	u64 id, dl, seen;

	ASSERT_TRUE(fd >= 0);
	dl = now_ns() + 300 * NSEC_PER_MSEC;
	ASSERT_EQ(0, twheel_schedule(&tw, dl, 0, TWHEEL_TIMER_ABSTIME, 7, &id));
	ASSERT_TRUE(wait_one(fd, &ev, 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			     "absolute deadline 300 ms ahead"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(dl, ev.deadline);
	EXPECT_TRUE(seen >= dl)
		TH_LOG("event read %llu us before its deadline",
		       (unsigned long long)((dl - seen) / 1000));
	diag("absolute deadline: fired %lld us late, read %lld us late",
	     (long long)(ev.fired - dl) / 1000, (long long)(seen - dl) / 1000);
}

TEST_F_TIMEOUT(twheel, oneshot_fires_once, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[4];
	const u64 delay = 100 * NSEC_PER_MSEC, ud = 0xdeadbeefcafef00dULL;
	u64 id, t0, t1, seen;
	struct twheel_info info;
	int n;

	ASSERT_TRUE(fd >= 0);
	t0 = now_ns();
	ASSERT_EQ(0, twheel_schedule(&tw, delay, 0, 0, ud, &id));
	t1 = now_ns();
	EXPECT_TRUE(id != 0)
		TH_LOG("SCHEDULE returned id 0");
	EXPECT_EQ(1, tw_timers(&tw));
	/* room for 4 in the buffer: exactly one may come */
	n = read_once(fd, ev, 4, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 1)
		TH_LOG("expected exactly 1 event, got %d", n);
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(ud, ev[0].user_data);
	EXPECT_EQ(1, ev[0].count);
	EXPECT_EQ(0, ev[0].flags);
	EXPECT_GE(ev[0].deadline, t0 + delay);
	EXPECT_LE(ev[0].deadline, t1 + delay);
	EXPECT_TRUE(seen >= t0 + delay)
		TH_LOG("read before the delay elapsed");
	no_events(fd, 300, "after the one-shot's event was read");
	/* read: the id is gone */
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, id, FAR_FUTURE, 0, 0, 0));
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_EQ(0, info.timers);
	EXPECT_EQ(0, info.queued);
}

/*
 * TWHEEL_TIMER_SLACK: the feature bit; slack 0 by SCHEDULE and by MODIFY
 * against the default, side by side, each deadline 20 us past a tick
 * boundary (where the wheel alone fires a tick later): never early, and
 * the kernel's firing times (event.fired) of the slack-0 timers beat the
 * default ones' by a quarter of a tick at the median (both suffer the
 * same latency, from 0.2 ms to several ms under emulation). Then a
 * REALTIME one, a coarse one (a slack of 4 ticks) and one of INT64_MAX.
 */
TEST_F_TIMEOUT(twheel, precise_slack, 60)
{
	enum { N = 12 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[3 * N];
	u64 ids[3 * N], late[3][N], gran, base, id;
	int n, got[3];
	int rounds = 0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(tw.info.flags & TWHEEL_INFO_SLACK);
	gran = tw.info.granularity_ns;
measure:
	memset(got, 0, sizeof(got));
	base = (now_ns() / gran + 20) * gran + 20000;
	/* i % 3: 0 slack 0 by SCHEDULE, 1 slack 0 by MODIFY, 2 the default */
	for (int i = 0; i < 3 * N; i++) {
		u64 dl = base + (u64)i * 2 * gran;

		if (i % 3 == 0) {
			ASSERT_EQ(0, twheel_schedule_slack(&tw, TWHEEL_CLOCK_MONOTONIC, dl, 0, 0,
							   TWHEEL_TIMER_ABSTIME, (u64)i,
							   &ids[i]));
		} else if (i % 3 == 1) {
			int r;

			ASSERT_EQ(0, twheel_schedule(&tw, dl + 1000 * gran, 0,
						     TWHEEL_TIMER_ABSTIME, (u64)i, &ids[i]));
			r = twheel_modify_slack(&tw, ids[i], TWHEEL_CLOCK_MONOTONIC,
						dl, 0, 0, TWHEEL_TIMER_ABSTIME, (u64)i);
			EXPECT_EQ(1, r)
				TH_LOG("MODIFY of timer %d: %d, now %llu, deadline %llu", i, r,
				       (unsigned long long)now_ns(),
				       (unsigned long long)dl);
		} else {
			ASSERT_EQ(0, twheel_schedule(&tw, dl, 0, TWHEEL_TIMER_ABSTIME,
						     (u64)i, &ids[i]));
		}
	}
	n = wait_events(fd, ev, 3 * N, 10000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC),
			NULL);
	ASSERT_EQ(3 * N, n);
	for (int j = 0; j < n; j++) {
		u64 i = ev[j].user_data;

		ASSERT_TRUE(i < 3 * N && ev[j].id == ids[i]);
		EXPECT_EQ(base + i * 2 * gran, ev[j].deadline);
		EXPECT_GE(ev[j].fired, ev[j].deadline);
		late[i % 3][got[i % 3]++] = ev[j].fired - ev[j].deadline;
	}
	for (int k = 0; k < 3; k++) {
		ASSERT_EQ(N, got[k]);
		for (int a = 0; a < N; a++)
			for (int b = a + 1; b < N; b++)
				if (late[k][b] < late[k][a]) {
					u64 t = late[k][a];

					late[k][a] = late[k][b];
					late[k][b] = t;
				}
	}
	diag("fired-deadline median: slack 0 by SCHEDULE %llu us, by MODIFY %llu us, default %llu us (granularity %llu us)",
	     (unsigned long long)(late[0][N / 2] / 1000),
	     (unsigned long long)(late[1][N / 2] / 1000),
	     (unsigned long long)(late[2][N / 2] / 1000), (unsigned long long)(gran / 1000));
	/*
	 * Precision can only show where the guest keeps up: a default timer
	 * fires within a tick plus scheduling. Beside other guests the debug
	 * kernel was once 26 ms late for all three kinds alike; then only
	 * never early (above) is judged.
	 */
	if (late[2][N / 2] > 4 * gran) {
		diag("precise_slack: default timers %llu us late, the guest does not keep up: lateness not compared",
		     (unsigned long long)(late[2][N / 2] / 1000));
	} else if (++rounds < 5 && !(late[0][N / 2] + gran / 4 < late[2][N / 2] &&
					late[1][N / 2] < late[2][N / 2] + gran)) {
		/*
		 * Beside other guests (make check boots three at once on two
		 * cores) one kind's timers were all late together: 1906 us
		 * for slack 0 by SCHEDULE against the default's 1168, the
		 * MODIFY ones 326; and on the 7.2 kernel twice in a row, 1307
		 * and 1254 us against 1525 and 1311 (MODIFY 900 and 330): as
		 * late as a default timer, a tick after the deadline. Not
		 * explained (issue 28). Up to five rounds; a real loss of
		 * precision loses all five. (Three were lost on the RT kernel
		 * beside a kernel build, load 9: slack 0 by SCHEDULE 2.3, 3.1
		 * and 1.7 ms against the default's 2.3, 1.6 and 2.5.)
		 */
		diag("precise_slack: medians not as expected, measuring again");
		goto measure;
	} else {
		EXPECT_TRUE(late[0][N / 2] + gran / 4 < late[2][N / 2])
			TH_LOG("slack 0 by SCHEDULE: median lateness %llu ns, default %llu ns",
			       (unsigned long long)late[0][N / 2], (unsigned long long)late[2][N / 2]);
		/*
		 * A MODIFY may come from another CPU than the one holding the timer,
		 * which now hands it over (issue 29): on the RT kernel beside other
		 * guests that once made slack 0 by MODIFY later than the default
		 * (2266 us against 1559). Until that hand-off keeps the precision
		 * (issue 28), a MODIFY to slack 0 is held to at most a tick more
		 * than the default; never early is checked above for every timer.
		 */
		EXPECT_TRUE(late[1][N / 2] < late[2][N / 2] + gran)
			TH_LOG("slack 0 by MODIFY: median lateness %llu ns, default %llu ns",
			       (unsigned long long)late[1][N / 2], (unsigned long long)late[2][N / 2]);
	}

	/* REALTIME, relative, slack 1 us */
	ASSERT_EQ(0, twheel_schedule_slack(&tw, TWHEEL_CLOCK_REALTIME, 5 * gran + 20000, 0,
					   1000, 0, 99, &id));
	ASSERT_EQ(1, wait_events(fd, ev, 1, 5000, NULL));
	EXPECT_EQ(id, ev[0].id);
	EXPECT_GE(ev[0].fired, ev[0].deadline);
	/*
	 * A slack of two ticks or more is coarse (issue 43): 4 ticks fire
	 * the timer at the first multiple of 4 ticks of CLOCK_MONOTONIC from
	 * its deadline on, never before it. INT64_MAX is taken too (at most
	 * 2^16 ticks of coalescing): cancelled, it does not wait for them.
	 */
	ASSERT_EQ(0, twheel_schedule_slack(&tw, TWHEEL_CLOCK_MONOTONIC, gran + 12345,
					   0, 4 * gran, 0, 7, &id));
	ASSERT_EQ(1, wait_events(fd, ev, 1, 5000, NULL));
	EXPECT_GE(ev[0].fired, ev[0].deadline);
	EXPECT_GE(ev[0].fired, (ev[0].deadline + 4 * gran - 1) / (4 * gran) * (4 * gran));
	ASSERT_EQ(0, twheel_schedule_slack(&tw, TWHEEL_CLOCK_MONOTONIC, gran, 0,
					   INT64_MAX, 0, 8, &id));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

TEST_F_TIMEOUT(twheel, oneshot_lateness, 30)
{
	enum { N = 20 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[N];
	u64 ids[N], t0[N], t1[N], delay[N], seen = 0;
	u64 max_fire = 0, max_seen = 0, sum_fire = 0;
	bool got[N] = { false };
	int n;

	ASSERT_TRUE(fd >= 0);
	for (int i = 0; i < N; i++) {
		delay[i] = (u64)(1 + 10 * i) * NSEC_PER_MSEC + (u64)i * 1234;
		t0[i] = now_ns();
		ASSERT_EQ(0, twheel_schedule(&tw, delay[i], 0, 0, (u64)i, &ids[i]));
		t1[i] = now_ns();
	}
	n = 0;
	while (n < N) {
		u64 s = 0;
		/* one read per wake-up, so that s is when these events were read */
		int k = read_once(fd, ev + n, N - n,
				  200 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &s);

		if (k == 0)
			break;
		for (int j = n; j < n + k; j++) {
			u64 i = ev[j].user_data;
			u64 late;

			if (!CHECK(i < N && !got[i] && ev[j].id == ids[i],
				   "unexpected or duplicate event id %llu ud %llu",
				   (unsigned long long)ev[j].id, (unsigned long long)i))
				continue;
			got[i] = true;
			CHECK_EVENT(&ev[j], s);
			EXPECT_GE(ev[j].deadline, t0[i] + delay[i]);
			EXPECT_LE(ev[j].deadline, t1[i] + delay[i]);
			EXPECT_EQ(1, ev[j].count);
			late = ev[j].fired - ev[j].deadline;
			sum_fire += late;
			if (late > max_fire)
				max_fire = late;
			if (s - ev[j].deadline > max_seen)
				max_seen = s - ev[j].deadline;
		}
		n += k;
		seen = s;
	}
	(void)seen;
	EXPECT_TRUE(n == N)
		TH_LOG("expected %d events, got %d", N, n);
	diag("lateness over %d one-shots (1..191 ms): fired-deadline max %llu us, mean %llu us; read-deadline max %llu us; granularity %llu us; bound %llu us",
	     n, (unsigned long long)(max_fire / 1000),
	     (unsigned long long)(n ? sum_fire / (u64)n / 1000 : 0),
	     (unsigned long long)(max_seen / 1000),
	     (unsigned long long)(g_granularity_ns / 1000),
	     (unsigned long long)(g_slack_ns / 1000));
	EXPECT_TRUE(max_seen <= g_slack_ns + 200 * NSEC_PER_MSEC)
		TH_LOG("an event was read %llu us after its deadline",
		       (unsigned long long)(max_seen / 1000));
}

/* ------------------------------------------------------------------ */
/* Tests: cancel and modify                                           */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, cancel_pending, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id, id2;
	struct twheel_info info;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, 200 * NSEC_PER_MSEC, 0, 0, 1, &id));
	ASSERT_EQ(0,
		  twheel_schedule(&tw, 150 * NSEC_PER_MSEC, 50 * NSEC_PER_MSEC,
				  TWHEEL_TIMER_PERIODIC, 2, &id2));
	EXPECT_EQ(2, tw_timers(&tw));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(1, twheel_cancel(&tw, id2));
	EXPECT_EQ(0, tw_timers(&tw));
	/* well past both deadlines: nothing */
	no_events(fd, 500, "cancelled timers");
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_EQ(0, info.timers);
	EXPECT_EQ(0, info.queued);
}

TEST_F_TIMEOUT(twheel, cancel_twice_enoent, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, id, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, cancel_unknown_enoent, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id;

	ASSERT_TRUE(fd >= 0);
	/* nothing scheduled yet */
	for (u64 i = 0; i < 5; i++) {
		EXPECT_EQ(-ENOENT, twheel_cancel(&tw, i));
	}
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, ~0ULL));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, 1ULL << 63));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, 0));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, ~0ULL));
	EXPECT_EQ(1, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, cancel_fired_keeps_event, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[2];
	struct pollfd p;
	u64 id, seen;
	int n;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0x55, &id));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ASSERT_TRUE(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1)
		TH_LOG("zero-delay timer: no POLLIN");
	EXPECT_EQ(1, tw_queued(&tw));
	/* fired, event unread: cancel says 0 and the event stays */
	EXPECT_EQ(0, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	EXPECT_EQ(1, tw_queued(&tw));
	n = wait_events(fd, ev, 2, 200, &seen);
	ASSERT_TRUE(n == 1)
		TH_LOG("expected the queued event to survive the cancel, got %d events", n);
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(0x55, ev[0].user_data);
	EXPECT_EQ(1, ev[0].count);
	EXPECT_EQ(0, tw_queued(&tw));
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, cancel_periodic, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev;
	const u64 P = 300 * NSEC_PER_MSEC;
	u64 id, seen;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, 20 * NSEC_PER_MSEC, P, TWHEEL_TIMER_PERIODIC, 9, &id));
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC) + 20, &seen,
			     "first expiry of a periodic timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(id, ev.id);
	EXPECT_TRUE(ev.flags & TWHEEL_EVENT_PERIODIC)
		TH_LOG("periodic event without TWHEEL_EVENT_PERIODIC (flags %#x)", ev.flags);
	/* a periodic timer stays valid after its event was read */
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	if (ev.fired + P < now_ns())
		diag("note: the reader was slower than the period; an event may be queued");
	else
		no_events(fd, 700, "periodic timer after cancel");
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, cancel_periodic_queued_event, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[2];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	u64 id, seen;
	int n;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0,
		  twheel_schedule(&tw, 10 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC,
				  TWHEEL_TIMER_PERIODIC, 0x99, &id));
	ASSERT_TRUE(poll(&p, 1, (int)(10 + g_slack_ns / NSEC_PER_MSEC)) == 1)
		TH_LOG("periodic timer: no POLLIN");
	/* an expiry is queued, and the timer is still pending */
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	/* the queued event stays readable, marked cancelled; nothing after it */
	n = read_once(fd, ev, 2, 100, &seen);
	ASSERT_TRUE(n == 1)
		TH_LOG("expected the queued event, got %d events", n);
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(0x99, ev[0].user_data);
	EXPECT_TRUE(ev[0].flags & TWHEEL_EVENT_CANCELLED)
		TH_LOG("event of a periodic timer cancelled after it: flags %#x lack TWHEEL_EVENT_CANCELLED",
		       ev[0].flags);
	no_events(fd, 100, "cancelled periodic timer");
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(0, tw_queued(&tw));
}

TEST_F_TIMEOUT(twheel, events_in_expiry_order, 20)
{
	enum { N = 5 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[N + 1];
	u64 ids[N], last, base;
	int n;

	ASSERT_TRUE(fd >= 0);
	/*
	 * Scheduled latest first: 250, 200, ... 50 ms from one base, as
	 * absolute times, so that a slow arming (the debug kernel beside
	 * another guest took more than 50 ms for one) cannot reorder them.
	 */
	base = now_ns();
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, base + (u64)(N - i) * 50 * NSEC_PER_MSEC, 0,
					     TWHEEL_TIMER_ABSTIME, (u64)i, &ids[i]));
	}
	last = base + (u64)N * 50 * NSEC_PER_MSEC;
	sleep_ns(last - now_ns());
	while (tw_queued(&tw) < N && now_ns() < last + g_slack_ns)
		idle_ms(10);
	n = read_once(fd, ev, N + 1, 0, NULL);
	ASSERT_TRUE(n == N)
		TH_LOG("expected %d events in one read, got %d", N, n);
	for (int k = 0; k < N; k++) {
		/* the earliest deadline (scheduled last) comes first */
		EXPECT_TRUE(ev[k].id == ids[N - 1 - k] && ev[k].user_data == (u64)(N - 1 - k))
			TH_LOG("event %d is timer %llu, expected %d (events must be in expiry order)",
			       k, (unsigned long long)ev[k].user_data, N - 1 - k);
		if (k) {
			EXPECT_TRUE(ev[k].deadline > ev[k - 1].deadline && ev[k].fired >= ev[k - 1].fired)
				TH_LOG("event %d: deadline/fired not after event %d's", k, k - 1);
		}
	}
}

TEST_F_TIMEOUT(twheel, modify_moves_timer, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[2];
	u64 id, id2, t0, t1, seen;
	int n;

	ASSERT_TRUE(fd >= 0);
	/* later: 300 ms -> 800 ms */
	ASSERT_EQ(0, twheel_schedule(&tw, 300 * NSEC_PER_MSEC, 0, 0, 1, &id));
	t0 = now_ns();
	EXPECT_EQ(1, twheel_modify(&tw, id, 800 * NSEC_PER_MSEC, 0, 0, 2));
	t1 = now_ns();
	n = read_once(fd, ev, 2, 800 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 1)
		TH_LOG("expected 1 event after MODIFY, got %d", n);
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(2, ev[0].user_data);	/* MODIFY replaced it */
	EXPECT_GE(ev[0].deadline, t0 + 800 * NSEC_PER_MSEC);
	EXPECT_LE(ev[0].deadline, t1 + 800 * NSEC_PER_MSEC);
	EXPECT_TRUE(seen >= t0 + 800 * NSEC_PER_MSEC)
		TH_LOG("read %llu us before the new deadline",
		       (unsigned long long)((t0 + 800 * NSEC_PER_MSEC - seen) / 1000));
	EXPECT_EQ(1, ev[0].count);
	no_events(fd, 200, "old deadline of the modified timer");

	/* earlier: far future -> 100 ms */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 3, &id2));
	t0 = now_ns();
	EXPECT_EQ(1, twheel_modify(&tw, id2, 100 * NSEC_PER_MSEC, 0, 0, 4));
	t1 = now_ns();
	ASSERT_TRUE(wait_one(fd, ev, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			     "timer moved earlier"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id2, ev[0].id);
	EXPECT_EQ(4, ev[0].user_data);
	EXPECT_GE(ev[0].deadline, t0 + 100 * NSEC_PER_MSEC);
	EXPECT_LE(ev[0].deadline, t1 + 100 * NSEC_PER_MSEC);

	/* absolute, and a one-shot made periodic */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 5, &id));
	t0 = now_ns() + 50 * NSEC_PER_MSEC;
	EXPECT_EQ(1,
		  twheel_modify(&tw, id, t0, 50 * NSEC_PER_MSEC,
				TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC, 6));
	ASSERT_TRUE(wait_one(fd, ev, 50 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			     "one-shot modified into a periodic timer"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(6, ev[0].user_data);
	EXPECT_TRUE(ev[0].flags & TWHEEL_EVENT_PERIODIC)
		TH_LOG("flags %#x lack PERIODIC", ev[0].flags);
	EXPECT_TRUE(ev[0].deadline >= t0 && (ev[0].deadline - t0) % (50 * NSEC_PER_MSEC) == 0)
		TH_LOG("deadline %llu not on the grid %llu + k * 50 ms",
		       (unsigned long long)ev[0].deadline, (unsigned long long)t0);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

TEST_F_TIMEOUT(twheel, modify_unknown_enoent, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id;

	ASSERT_TRUE(fd >= 0);
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, 0, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, 1, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, ~0ULL, FAR_FUTURE, 0, 0, 0));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, 0, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(1, tw_timers(&tw));
	EXPECT_EQ(1, twheel_modify(&tw, id, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(1, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, modify_fired_rearms, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct pollfd p;
	u64 id;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 1, &id));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ASSERT_TRUE(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1)
		TH_LOG("zero-delay timer: no POLLIN");
	/* fired, event unread: the id is still valid, the timer not pending */
	EXPECT_EQ(0, twheel_modify(&tw, id, FAR_FUTURE, 0, 0, 2));
	/* re-armed: now it is pending */
	EXPECT_EQ(1, twheel_modify(&tw, id, FAR_FUTURE, 0, 0, 3));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
}

/* ------------------------------------------------------------------ */
/* Tests: periodic                                                    */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, periodic_fixed_rate_unread, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[8];
	const u64 P = 100 * NSEC_PER_MSEC;
	u64 id, d0, seen, lo, hi, total = 0;
	struct pollfd p;
	int n;

	ASSERT_TRUE(fd >= 0);
	d0 = now_ns() + P;
	ASSERT_EQ(0, twheel_schedule(&tw, d0, P, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC, 0x77,
				     &id));
	/* readable soon after the first period, but left unread */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_TRUE(poll(&p, 1, (int)((P + g_slack_ns) / NSEC_PER_MSEC)) == 1)
		TH_LOG("no POLLIN after the first period");
	sleep_ns(d0 + 10 * P + P / 2 - now_ns());	/* ~10.5 periods after d0 */
	EXPECT_EQ(1, tw_queued(&tw));
	n = (int)read(fd, ev, sizeof(ev));
	seen = now_ns();
	/*
	 * One event; a second only where the read outlasted what was left
	 * of the period (the debug kernel beside a kernel build): the timer,
	 * re-armed as the first was taken, came due again meanwhile.
	 */
	ASSERT_TRUE(n > 0 && n % (int)EV_SIZE == 0 && n <= 2 * (int)EV_SIZE)
		TH_LOG("read returned %d, expected one event (%zu bytes): %s", n, EV_SIZE,
		       n < 0 ? ename(errno) : "-");
	n /= (int)EV_SIZE;
	if (n > 1)
		diag("fixed rate: the read outlasted the period: %d events", n);
	for (int i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		EXPECT_EQ(id, ev[i].id);
		EXPECT_EQ(0x77, ev[i].user_data);
		EXPECT_TRUE(ev[i].flags & TWHEEL_EVENT_PERIODIC)
			TH_LOG("flags %#x lack PERIODIC", ev[i].flags);
		EXPECT_TRUE(ev[i].deadline >= d0 && (ev[i].deadline - d0) % P == 0)
			TH_LOG("deadline %llu is not d0 + k * period (d0 %llu)",
			       (unsigned long long)ev[i].deadline, (unsigned long long)d0);
		total += ev[i].count;
	}
	/* every deadline <= fired was an expiry; none after the read */
	lo = (ev[n - 1].fired - d0) / P + 1;
	hi = (seen - d0) / P + 1;
	diag("fixed rate, %llu ms unread: count %llu, elapsed/period %.2f, expected [%llu-1, %llu]",
	     (unsigned long long)((seen - d0 + P) / NSEC_PER_MSEC),
	     (unsigned long long)total, (double)(seen - d0 + P) / (double)P,
	     (unsigned long long)lo, (unsigned long long)hi);
	EXPECT_GE(total, lo - 1);
	EXPECT_LE(total, hi);

	/*
	 * keep going: the counts add up, never one event per expiry; a
	 * second event only as in the first read (the read outlasted what
	 * was left of the period: seen on the debug kernel beside another
	 * guest)
	 */
	sleep_ns(5 * P);
	n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 1 || n == 2)
		TH_LOG("second read: expected 1 event, got %d", n);
	if (n > 1)
		diag("fixed rate: the second read outlasted the period: %d events", n);
	for (int i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		total += ev[i].count;
	}
	lo = (ev[n - 1].fired - d0) / P + 1;
	hi = (seen - d0) / P + 1;
	EXPECT_TRUE(total + 1 >= lo && total <= hi)
		TH_LOG("total count %llu over both reads, expected [%llu-1, %llu]",
		       (unsigned long long)total, (unsigned long long)lo, (unsigned long long)hi);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

TEST_F_TIMEOUT(twheel, periodic_fixed_rate_grid, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev;
	const u64 P = 50 * NSEC_PER_MSEC;
	u64 id, d0, seen = 0, prev, sum = 0, end, last_fired = 0;
	int events = 0;

	ASSERT_TRUE(fd >= 0);
	d0 = now_ns() + P;
	ASSERT_EQ(0, twheel_schedule(&tw, d0, P, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC, 1,
				     &id));
	prev = d0 - P;
	end = d0 + 12 * P;
	while (now_ns() < end) {
		if (!wait_one(fd, &ev, (unsigned int)((P + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "periodic expiry"))
			break;
		events++;
		CHECK_EVENT(&ev, seen);
		EXPECT_EQ(id, ev.id);
		if (!CHECK(ev.deadline > prev && (ev.deadline - d0) % P == 0,
			   "deadline %llu not after %llu on the grid d0 %llu + k * %llu",
			   (unsigned long long)ev.deadline, (unsigned long long)prev,
			   (unsigned long long)d0, (unsigned long long)P))
			break;
		prev = ev.deadline;
		sum += ev.count;
		last_fired = ev.fired;
	}
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	ASSERT_TRUE(events >= 2)
		TH_LOG("only %d events in 12 periods", events);
	diag("fixed rate, read as they come: %d events, %llu expiries, last deadline k=%llu",
	     events, (unsigned long long)sum, (unsigned long long)((prev - d0) / P));
	/* all expiries up to the last one's firing are counted, +-1 */
	EXPECT_GE(sum, (last_fired - d0) / P);
	EXPECT_LE(sum, (last_fired - d0) / P + 2);
}

TEST_F_TIMEOUT(twheel, periodic_fixed_delay, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[4];
	const u64 P = 50 * NSEC_PER_MSEC;
	u64 id, t0, seen = 0, prev_fired = 0, sum = 0, end;
	int events = 0, n;

	ASSERT_TRUE(fd >= 0);
	t0 = now_ns();
	ASSERT_EQ(0, twheel_schedule(&tw, P, P, TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY, 2,
				     &id));
	end = t0 + 12 * P;
	while (now_ns() < end) {
		if (!wait_one(fd, ev, (unsigned int)((P + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "fixed-delay expiry"))
			break;
		events++;
		CHECK_EVENT(&ev[0], seen);
		EXPECT_EQ(id, ev[0].id);
		EXPECT_TRUE(ev[0].flags & TWHEEL_EVENT_PERIODIC)
			TH_LOG("flags %#x lack PERIODIC", ev[0].flags);
		/* the period counts from the end of the previous expiry */
		if (prev_fired) {
			EXPECT_TRUE(ev[0].deadline >= prev_fired + P)
				TH_LOG("fixed delay: deadline %llu < previous fired %llu + period",
				       (unsigned long long)ev[0].deadline,
				       (unsigned long long)prev_fired);
		}
		prev_fired = ev[0].fired;
		sum += ev[0].count;
	}
	diag("fixed delay, read as they come: %d events, %llu expiries in %llu ms",
	     events, (unsigned long long)sum, (unsigned long long)((seen - t0) / NSEC_PER_MSEC));
	EXPECT_TRUE(events >= 3)
		TH_LOG("only %d events in 12 periods", events);
	EXPECT_TRUE(sum <= (seen - t0) / P)
		TH_LOG("%llu expiries in %llu periods", (unsigned long long)sum,
		       (unsigned long long)((seen - t0) / P));

	/*
	 * unread: still one event, counting the expiries; a second only if
	 * the read outlasted a period (the timer fires anew once the first
	 * is taken), as periodic_fixed_rate_unread allows
	 */
	t0 = now_ns();
	sleep_ns(8 * P);
	n = read_once(fd, ev, 4, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 1 || n == 2)
		TH_LOG("unread fixed-delay timer: expected 1 event, got %d", n);
	sum = 0;
	for (int i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		EXPECT_EQ(id, ev[i].id);
		sum += ev[i].count;
	}
	if (n == 2) {
		diag("fixed delay: the read outlasted the period: 2 events");
		EXPECT_EQ(1, ev[1].count);
		EXPECT_TRUE(ev[1].deadline >= ev[0].fired + P);
	}
	diag("fixed delay, %llu ms unread: count %llu",
	     (unsigned long long)((seen - t0) / NSEC_PER_MSEC), (unsigned long long)sum);
	EXPECT_GE(sum, 2);
	/* a period at most from the last read to t0, and one per event */
	EXPECT_LE(sum, (seen - t0) / P + (u64)n);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

/*
 * Periods at the ends of the range: INT64_MAX (the next deadline would
 * overflow s64 if computed carelessly: it must simply never come) and 1 ns
 * (due on every tick: events keep coming, counts add up, nothing early).
 */
TEST_F_TIMEOUT(twheel, periodic_extreme_periods, 30)
{
	static const u32 modes[2] = { 0, TWHEEL_TIMER_FIXED_DELAY };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[8];
	u64 id, d0, seen, sum;
	int n;

	ASSERT_TRUE(fd >= 0);
	for (int m = 0; m < 2; m++) {
		const char *mode = m ? "fixed delay" : "fixed rate";

		/* deadline 1 s ago, period INT64_MAX: one expiry, then none */
		d0 = now_ns() - NSEC_PER_SEC;
		ASSERT_EQ(0,
			  twheel_schedule(&tw, d0, INT64_MAX,
					  TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC | modes[m], 1, &id));
		n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
		if (CHECK(n == 1, "%s, period INT64_MAX: expected 1 event, got %d", mode, n)) {
			CHECK_EVENT(&ev[0], seen);
			EXPECT_EQ(1, ev[0].count);
			EXPECT_EQ(d0, ev[0].deadline);
		}
		no_events(fd, 200, "period INT64_MAX after its first expiry");
		/* still a periodic timer, armed for ~292 years from d0 */
		EXPECT_TRUE(twheel_cancel(&tw, id) == 1)
			TH_LOG("%s, period INT64_MAX: CANCEL after the first expiry did not return 1 (pending)",
			       mode);

		/* relative start, period INT64_MAX: the first deadline is near now */
		ASSERT_EQ(0, twheel_schedule(&tw, 0, INT64_MAX, TWHEEL_TIMER_PERIODIC | modes[m], 2,
					     &id));
		n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
		EXPECT_TRUE(n == 1 && ev[0].count == 1)
			TH_LOG("%s, delay 0, period INT64_MAX: %d events, count %llu", mode, n,
			       n ? (unsigned long long)ev[0].count : 0ULL);
		no_events(fd, 200, "period INT64_MAX after its first expiry");
		EXPECT_TRUE(twheel_cancel(&tw, id) == 1)
			TH_LOG("%s, delay 0, period INT64_MAX: CANCEL after the first expiry did not return 1 (pending)",
			       mode);

		/* period 1 ns for 300 ms */
		d0 = now_ns();
		ASSERT_EQ(0,
			  twheel_schedule(&tw, d0, 1,
					  TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC | modes[m], 3, &id));
		sum = 0;
		n = 0;
		while (now_ns() < d0 + 300 * NSEC_PER_MSEC) {
			int k = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);

			if (!k)
				break;
			for (int i = 0; i < k; i++) {
				CHECK_EVENT(&ev[i], seen);
				sum += ev[i].count;
			}
			n += k;
		}
		EXPECT_EQ(1, twheel_cancel(&tw, id));
		/* drain what the cancel left queued (the fd is non-blocking) */
		while (read(fd, ev, sizeof(ev)) > 0)
			;
		diag("%s, period 1 ns for 300 ms: %d events, %llu expiries", mode, n,
		     (unsigned long long)sum);
		EXPECT_TRUE(n >= 5)
			TH_LOG("%s, period 1 ns: only %d events in 300 ms", mode, n);
		if (!m)	/* fixed rate counts every nanosecond that passed */
			EXPECT_TRUE(sum >= 100 * NSEC_PER_MSEC && sum <= seen - d0 + 1)
				TH_LOG("fixed rate, period 1 ns: %llu expiries in %llu ns",
				       (unsigned long long)sum, (unsigned long long)(seen - d0));
		no_events(fd, 100, "period 1 ns after cancel");
	}
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, modify_periodic, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev;
	const u64 P1 = 40 * NSEC_PER_MSEC, P2 = 150 * NSEC_PER_MSEC;
	u64 id, seen, t_mod, d1;
	int after = 0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, P1, P1, TWHEEL_TIMER_PERIODIC, 0xa, &id));
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)((P1 + g_slack_ns) / NSEC_PER_MSEC), &seen,
			     "first expiry"));
	EXPECT_EQ(0xa, ev.user_data);
	d1 = now_ns() + P2;
	ASSERT_EQ(1, twheel_modify(&tw, id, d1, P2, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC,
				   0xb));
	t_mod = now_ns();
	/* events of the old arming may still be queued; after d1, only the new one */
	while (after < 2 && now_ns() < t_mod + 2 * P2 + g_slack_ns) {
		if (!wait_one(fd, &ev, (unsigned int)((2 * P2 + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "expiry after MODIFY"))
			break;
		CHECK_EVENT(&ev, seen);
		EXPECT_EQ(id, ev.id);
		if (ev.deadline < t_mod)
			continue;
		after++;
		EXPECT_EQ(0xb, ev.user_data);
		EXPECT_TRUE(ev.deadline >= d1 && (ev.deadline - d1) % P2 == 0)
			TH_LOG("deadline %llu not on the new grid %llu + k * %llu",
			       (unsigned long long)ev.deadline, (unsigned long long)d1,
			       (unsigned long long)P2);
	}
	EXPECT_TRUE(after >= 1)
		TH_LOG("no expiry of the modified periodic timer");
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

/* ------------------------------------------------------------------ */
/* Tests: batch                                                       */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, batch_all_success, 20)
{
	enum { N = 64 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op ops[N];
	u64 ids[N];

	ASSERT_TRUE(fd >= 0);
	fill_schedule_ops(ops, N, FAR_FUTURE, 100);
	for (int i = 0; i < N; i++)
		ops[i].result = -12345;
	ASSERT_EQ(N, tw_batch(fd, ops, N));
	for (int i = 0; i < N; i++) {
		EXPECT_TRUE(ops[i].result == 0)
			TH_LOG("op %d: result %s, expected 0", i, rstr(ops[i].result));
		ids[i] = ops[i].spec.id;
	}
	ASSERT_TRUE(ids_distinct(ids, N));
	EXPECT_EQ(N, tw_timers(&tw));

	/* one batch mixing the three ops */
	memset(ops, 0, sizeof(ops));
	ops[0].op = TWHEEL_OP_MODIFY;
	ops[0].spec = mkspec(FAR_FUTURE, 0, 1, 0);
	ops[0].spec.id = ids[0];
	ops[1].op = TWHEEL_OP_CANCEL;
	ops[1].spec.id = ids[1];
	ops[2].op = TWHEEL_OP_SCHEDULE;
	ops[2].spec = mkspec(FAR_FUTURE, 0, 2, 0);
	ops[3].op = TWHEEL_OP_CANCEL;
	ops[3].spec.id = ids[2];
	ASSERT_EQ(4, tw_batch(fd, ops, 4));
	EXPECT_EQ(1, ops[0].result);
	EXPECT_EQ(1, ops[1].result);
	EXPECT_EQ(0, ops[2].result);
	EXPECT_TRUE(ops[2].spec.id != 0)
		TH_LOG("SCHEDULE op returned id 0");
	EXPECT_EQ(1, ops[3].result);
	EXPECT_EQ(N - 1, tw_timers(&tw));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, ids[1]));
	EXPECT_EQ(1, twheel_cancel(&tw, ops[2].spec.id));

	/* cancel the rest in one batch */
	memset(ops, 0, sizeof(ops));
	for (int i = 3; i < N; i++) {
		ops[i - 3].op = TWHEEL_OP_CANCEL;
		ops[i - 3].spec.id = ids[i];
	}
	ASSERT_EQ(N - 3, tw_batch(fd, ops, N - 3));
	for (int i = 0; i < N - 3; i++) {
		EXPECT_TRUE(ops[i].result == 1)
			TH_LOG("cancel op %d: result %s, expected 1", i, rstr(ops[i].result));
	}
	EXPECT_EQ(1, twheel_cancel(&tw, ids[0]));
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, batch_partial_failure, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op ops[5];
	const int sentinel = 0x5a5a5a5a;

	ASSERT_TRUE(fd >= 0);
	/* schedule, schedule, cancel(unknown), schedule, schedule */
	fill_schedule_ops(ops, 5, FAR_FUTURE, 10);
	for (int i = 0; i < 5; i++) {
		ops[i].result = sentinel;
		ops[i].spec.id = 0xfeedULL + (u64)i;	/* out field: kernel overwrites on success */
	}
	memset(&ops[2].spec, 0, sizeof(ops[2].spec));
	ops[2].op = TWHEEL_OP_CANCEL;
	ops[2].spec.id = 0x7fffffff12345ULL;
	EXPECT_EQ(2, tw_batch(fd, ops, 5));
	EXPECT_EQ(0, ops[0].result);
	EXPECT_EQ(0, ops[1].result);
	EXPECT_EQ(-ENOENT, ops[2].result);
	EXPECT_EQ(sentinel, ops[3].result);
	EXPECT_EQ(sentinel, ops[4].result);
	EXPECT_EQ(0xfeed + 3, ops[3].spec.id);
	EXPECT_EQ(0xfeed + 4, ops[4].spec.id);
	/* earlier ops were done: their timers exist */
	EXPECT_EQ(2, tw_timers(&tw));
	EXPECT_TRUE(ops[0].spec.id != 0 && ops[0].spec.id != ops[1].spec.id)
		TH_LOG("ids %llu, %llu", (unsigned long long)ops[0].spec.id,
		       (unsigned long long)ops[1].spec.id);
	EXPECT_EQ(1, twheel_cancel(&tw, ops[0].spec.id));
	EXPECT_EQ(1, twheel_cancel(&tw, ops[1].spec.id));

	/* failure at index 0: nothing done */
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	ops[0].spec.clockid = 2;
	ops[1].result = sentinel;
	ops[2].result = sentinel;
	EXPECT_EQ(0, tw_batch(fd, ops, 3));
	EXPECT_EQ(-EINVAL, ops[0].result);
	EXPECT_EQ(sentinel, ops[1].result);
	EXPECT_EQ(0, tw_timers(&tw));

	/* failure at the last index: ERANGE from a MODIFY */
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	ASSERT_EQ(2, tw_batch(fd, ops, 2));
	ops[2].op = TWHEEL_OP_MODIFY;
	ops[2].spec = mkspec(INT64_MAX, 0, 0, 0);
	ops[2].spec.id = ops[0].spec.id;
	ops[2].result = sentinel;
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	EXPECT_EQ(2, tw_batch(fd, ops, 3));
	EXPECT_EQ(-ERANGE, ops[2].result);
	EXPECT_EQ(4, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, batch_count_einval, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op *ops = calloc(TWHEEL_BATCH_MAX + 1, sizeof(*ops));
	struct twheel_batch b;

	ASSERT_TRUE(fd >= 0 && ops);
	fill_schedule_ops(ops, TWHEEL_BATCH_MAX + 1, FAR_FUTURE, 0);
	EXPECT_EQ(-EINVAL, tw_batch(fd, ops, 0));
	EXPECT_EQ(-EINVAL, tw_batch(fd, ops, TWHEEL_BATCH_MAX + 1));
	EXPECT_EQ(-EINVAL, tw_batch(fd, ops, UINT32_MAX));
	b = (struct twheel_batch){ .ops = 0, .count = 0 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(0, tw_timers(&tw));
	/* the largest batch is accepted */
	ASSERT_EQ(TWHEEL_BATCH_MAX, tw_batch(fd, ops, TWHEEL_BATCH_MAX));
	EXPECT_EQ(TWHEEL_BATCH_MAX, tw_timers(&tw));
	for (u32 i = 0; i < TWHEEL_BATCH_MAX; i++) {
		u64 id = ops[i].spec.id;

		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].op = TWHEEL_OP_CANCEL;
		ops[i].spec.id = id;
	}
	EXPECT_EQ(TWHEEL_BATCH_MAX, tw_batch(fd, ops, TWHEEL_BATCH_MAX));
	EXPECT_EQ(0, tw_timers(&tw));
	free(ops);
}

TEST_F_TIMEOUT(twheel, batch_efault, 20)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *guard = map_guard();
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op *ops;
	struct twheel_batch b;

	ASSERT_TRUE(fd >= 0 && guard);
	/* bad ops pointers: nothing done */
	b = (struct twheel_batch){ .ops = 0, .count = 1 };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b = (struct twheel_batch){ .ops = 0xffff888000000000ULL, .count = 1 };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b = (struct twheel_batch){ .ops = (uintptr_t)(guard + pg), .count = 1 };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(0, tw_timers(&tw));
	no_events(fd, 50, "after faulting batches");

	/*
	 * An array whose tail runs into the guard page: the ops before the
	 * unreadable one run, and the batch stops there as at a failed op.
	 * 27 ops: the first chunk of 24 runs whole, the fault is in the
	 * second.
	 */
	ops = (struct twheel_op *)(guard + pg) - 27;
	fill_schedule_ops(ops, 27, FAR_FUTURE, 0);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 30 };
	EXPECT_EQ(27, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(27, tw_timers(&tw));
	EXPECT_EQ(0, ops[0].result);
	EXPECT_EQ(0, ops[26].result);
	EXPECT_NE(0, ops[26].spec.id);
	/* the same with the fault in the first chunk */
	ops = (struct twheel_op *)(guard + pg) - 2;
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 5 };
	EXPECT_EQ(2, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(29, tw_timers(&tw));

	/* read-only array: the ops run, the write-back faults */
	ops = (struct twheel_op *)guard;
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	mprotect(guard, pg, PROT_READ);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 3 };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(29 + 3, tw_timers(&tw));
}

/* A raw TWHEEL_IOC_BATCH of short ops, as tw_batch(). */
static long tw_sbatch(int fd, struct twheel_short_op *ops, u32 count)
{
	struct twheel_batch b = {
		.ops = (uintptr_t)ops,
		.count = count,
		.flags = TWHEEL_BATCH_SHORT,
	};

	return xioctl(fd, TWHEEL_IOC_BATCH, &b);
}

TEST_F_TIMEOUT(twheel, batch_short, 20)
{
	enum { N = 64 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_short_op ops[N];
	struct twheel_event ev;
	u64 ids[N], t0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(tw.info.flags & TWHEEL_INFO_SHORT_OPS);
	for (int i = 0; i < N; i++) {
		twheel_prep_schedule(&ops[i], FAR_FUTURE, 0, 100 + (u64)i);
		ops[i].result = -12345;
	}
	/* 64 ops: three chunks, each written back */
	ASSERT_EQ(N, twheel_submit_short(&tw, ops, N));
	for (int i = 0; i < N; i++) {
		EXPECT_TRUE(ops[i].result == 0)
			TH_LOG("op %d: result %s, expected 0", i, rstr(ops[i].result));
		ids[i] = ops[i].id;
	}
	ASSERT_TRUE(ids_distinct(ids, N));
	EXPECT_EQ(N, tw_timers(&tw));

	/* one batch mixing the three ops; the MODIFY makes ids[0] fire */
	t0 = now_ns();
	twheel_prep_modify(&ops[0], ids[0], t0 + 20 * NSEC_PER_MSEC, TWHEEL_TIMER_ABSTIME, 7);
	twheel_prep_cancel(&ops[1], ids[1]);
	twheel_prep_schedule(&ops[2], FAR_FUTURE, 0, 2);
	twheel_prep_cancel(&ops[3], ids[2]);
	ASSERT_EQ(4, tw_sbatch(fd, ops, 4));
	EXPECT_EQ(1, ops[0].result);
	EXPECT_EQ(ids[0], ops[0].id);
	EXPECT_EQ(1, ops[1].result);
	EXPECT_EQ(0, ops[2].result);
	EXPECT_TRUE(ops[2].id != 0)
		TH_LOG("SCHEDULE op returned id 0");
	EXPECT_EQ(1, ops[3].result);
	EXPECT_EQ(N - 1, tw_timers(&tw));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, ids[1]));
	EXPECT_EQ(1, twheel_cancel(&tw, ops[2].id));

	/* the modified timer fires as a one-shot with the new user_data */
	ASSERT_EQ(1, wait_events(fd, &ev, 1, 5000, NULL));
	EXPECT_EQ(ids[0], ev.id);
	EXPECT_EQ(7, ev.user_data);
	EXPECT_EQ(t0 + 20 * NSEC_PER_MSEC, ev.deadline);
	EXPECT_TRUE(ev.fired >= ev.deadline);
	EXPECT_EQ(1, ev.count);
	EXPECT_EQ(0, ev.flags);

	/* cancel the rest in one batch, in the library's calls */
	for (int i = 3; i < N; i++)
		twheel_prep_cancel(&ops[i - 3], ids[i]);
	ASSERT_EQ(N - 3, twheel_submit_short(&tw, ops, N - 3));
	for (int i = 0; i < N - 3; i++) {
		EXPECT_TRUE(ops[i].result == 1)
			TH_LOG("cancel op %d: result %s, expected 1", i, rstr(ops[i].result));
	}
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(0, twheel_submit_short(&tw, ops, 0));
}

TEST_F_TIMEOUT(twheel, batch_short_einval, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_short_op ops[3], bad;
	struct twheel_batch b;
	u64 id;
	struct {
		const char *what;
		struct twheel_short_op op;
		int want;
	} cases[] = {
		{ "SCHEDULE, PERIODIC flag", { .op = TWHEEL_OP_SCHEDULE, .flags = TWHEEL_TIMER_PERIODIC, .value = FAR_FUTURE }, -EINVAL },
		{ "SCHEDULE, FIXED_DELAY flag", { .op = TWHEEL_OP_SCHEDULE, .flags = TWHEEL_TIMER_FIXED_DELAY, .value = FAR_FUTURE }, -EINVAL },
		{ "SCHEDULE, CANCEL_ON_SET flag", { .op = TWHEEL_OP_SCHEDULE, .flags = TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_ABSTIME, .value = FAR_FUTURE }, -EINVAL },
		{ "SCHEDULE, unknown flag", { .op = TWHEEL_OP_SCHEDULE, .flags = 0x8000, .value = FAR_FUTURE }, -EINVAL },
		{ "SCHEDULE, value above INT64_MAX", { .op = TWHEEL_OP_SCHEDULE, .value = (u64)INT64_MAX + 1 }, -EINVAL },
		{ "SCHEDULE, now + value overflows", { .op = TWHEEL_OP_SCHEDULE, .value = INT64_MAX }, -ERANGE },
		{ "MODIFY, PERIODIC flag", { .op = TWHEEL_OP_MODIFY, .flags = TWHEEL_TIMER_PERIODIC, .value = FAR_FUTURE }, -EINVAL },
		{ "MODIFY, unknown id", { .op = TWHEEL_OP_MODIFY, .id = 0x7fffffff12345ULL, .value = FAR_FUTURE }, -ENOENT },
		{ "CANCEL, a value", { .op = TWHEEL_OP_CANCEL, .value = 1 }, -EINVAL },
		{ "CANCEL, user_data", { .op = TWHEEL_OP_CANCEL, .user_data = 1 }, -EINVAL },
		{ "CANCEL, ABSTIME", { .op = TWHEEL_OP_CANCEL, .flags = TWHEEL_TIMER_ABSTIME }, -EINVAL },
		{ "CANCEL, unknown id", { .op = TWHEEL_OP_CANCEL, .id = 0x7fffffff12345ULL }, -ENOENT },
		{ "op 0", { .op = 0, .value = FAR_FUTURE }, -EINVAL },
		{ "op 4", { .op = 4, .value = FAR_FUTURE }, -EINVAL },
		{ "op 0xffff", { .op = 0xffff, .value = FAR_FUTURE }, -EINVAL },
	};

	ASSERT_TRUE(fd >= 0);
	twheel_prep_schedule(&ops[0], FAR_FUTURE, 0, 1);
	ASSERT_EQ(1, tw_sbatch(fd, ops, 1));
	id = ops[0].id;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bad = cases[i].op;
		/* MODIFY and CANCEL of the live timer: only the field at fault is wrong */
		if (bad.op != TWHEEL_OP_SCHEDULE && bad.id == 0)
			bad.id = id;
		/* a good op, the bad one, a good one: the batch stops at the bad one */
		twheel_prep_schedule(&ops[0], FAR_FUTURE, 0, 2);
		ops[1] = bad;
		ops[1].result = 0x5a5a;
		twheel_prep_schedule(&ops[2], FAR_FUTURE, 0, 3);
		ops[2].result = 0x5a5a;
		EXPECT_EQ(1, tw_sbatch(fd, ops, 3))
			TH_LOG("%s", cases[i].what);
		EXPECT_EQ(cases[i].want, ops[1].result)
			TH_LOG("%s: result %s", cases[i].what, rstr(ops[1].result));
		EXPECT_EQ(0x5a5a, ops[2].result)
			TH_LOG("%s: the op after it ran", cases[i].what);
		EXPECT_EQ(1, twheel_cancel(&tw, ops[0].id));
	}
	/* the live timer is untouched, and nothing else is left */
	EXPECT_EQ(1, tw_timers(&tw));
	/* batch flags other than TWHEEL_BATCH_SHORT */
	twheel_prep_schedule(&ops[0], FAR_FUTURE, 0, 4);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 1, .flags = 0x2 };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b.flags = TWHEEL_BATCH_SHORT | 0x80000000u;
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = TWHEEL_BATCH_MAX + 1,
				   .flags = TWHEEL_BATCH_SHORT };
	EXPECT_EQ(-EINVAL, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(1, tw_timers(&tw));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	/* the library clamps flags above 16 bits into an op that fails */
	twheel_prep_schedule(&ops[0], FAR_FUTURE, 0x10001, 0);
	EXPECT_EQ(0, twheel_submit_short(&tw, ops, 1));
	EXPECT_EQ(-EINVAL, ops[0].result);
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, batch_short_efault, 20)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *guard = map_guard();
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_short_op *ops;
	struct twheel_batch b;

	ASSERT_TRUE(fd >= 0 && guard);
	b = (struct twheel_batch){ .ops = 0, .count = 1, .flags = TWHEEL_BATCH_SHORT };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	b.ops = (uintptr_t)(guard + pg);
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(0, tw_timers(&tw));

	/* the tail runs into the guard page: 27 ops run, in two chunks */
	ops = (struct twheel_short_op *)(guard + pg) - 27;
	for (int i = 0; i < 27; i++)
		twheel_prep_schedule(&ops[i], FAR_FUTURE, 0, (u64)i);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 30,
				   .flags = TWHEEL_BATCH_SHORT };
	EXPECT_EQ(27, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(27, tw_timers(&tw));
	EXPECT_EQ(0, ops[26].result);
	EXPECT_NE(0, ops[26].id);
	/* the fault in the first chunk */
	ops = (struct twheel_short_op *)(guard + pg) - 2;
	for (int i = 0; i < 2; i++)
		twheel_prep_schedule(&ops[i], FAR_FUTURE, 0, (u64)i);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 5,
				   .flags = TWHEEL_BATCH_SHORT };
	EXPECT_EQ(2, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(29, tw_timers(&tw));

	/* read-only array: the ops run, the write-back faults */
	ops = (struct twheel_short_op *)guard;
	for (int i = 0; i < 3; i++)
		twheel_prep_schedule(&ops[i], FAR_FUTURE, 0, (u64)i);
	mprotect(guard, pg, PROT_READ);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 3,
				   .flags = TWHEEL_BATCH_SHORT };
	EXPECT_EQ(-EFAULT, xioctl(fd, TWHEEL_IOC_BATCH, &b));
	EXPECT_EQ(29 + 3, tw_timers(&tw));
}

/* ------------------------------------------------------------------ */
/* Tests: eventfd                                                     */
/* ------------------------------------------------------------------ */

static long efd_read(int efd)
{
	u64 v;

	if (read(efd, &v, 8) != 8)
		return -errno;
	return (long)v;
}

TEST_F_TIMEOUT(twheel, eventfd_counts, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_event ev[4];
	u64 seen, id;
	long total = 0, c, sum = 0;
	int n = 0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(efd >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	ASSERT_EQ(0, twheel_set_eventfd(&tw, efd));
	EXPECT_EQ(-EAGAIN, efd_read(efd));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, (u64)(i + 1) * 60 * NSEC_PER_MSEC, 0, 0, (u64)i,
					     NULL));
	}
	/*
	 * Wait on the eventfd only, as a user multiplexing many fds does; when
	 * it is signalled, an event must already be readable.
	 */
	while (n < 3) {
		struct pollfd p = { .fd = efd, .events = POLLIN };
		ssize_t got;

		if (!CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC) + 200) == 1,
			   "eventfd not signalled (%d of 3 events read)", n))
			break;
		c = efd_read(efd);
		EXPECT_TRUE(c > 0)
			TH_LOG("eventfd readable but read gave %s", rstr(c));
		total += c > 0 ? c : 0;
		got = read(fd, ev, sizeof(ev));
		if (!CHECK(got > 0, "eventfd signalled but no event readable: %s",
			   got < 0 ? ename(errno) : "0"))
			break;
		seen = now_ns();
		for (int i = 0; i < (int)(got / EV_SIZE); i++)
			CHECK_EVENT(&ev[i], seen);
		n += (int)(got / EV_SIZE);
	}
	EXPECT_EQ(3, n);
	EXPECT_EQ(3, total);
	EXPECT_EQ(-EAGAIN, efd_read(efd));

	/* periodic: at least one signal, at most one per expiry */
	ASSERT_EQ(0,
		  twheel_schedule(&tw, 20 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC,
				  TWHEEL_TIMER_PERIODIC, 9, &id));
	idle_ms(300);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	c = efd_read(efd);
	n = wait_events(fd, ev, 4, 100, NULL);
	for (int i = 0; i < n; i++)
		sum += (long)ev[i].count;
	diag("periodic 20 ms for 300 ms: eventfd counter %ld, event counts %ld", c, sum);
	EXPECT_TRUE(c >= 1 && c <= sum)
		TH_LOG("eventfd counter %ld, expected in [1, %ld]", c, sum);
	/* cancelled: no more signals */
	idle_ms(100);
	EXPECT_EQ(-EAGAIN, efd_read(efd));
}

TEST_F_TIMEOUT(twheel, eventfd_wrong_type_einval, 20)
{
	struct twheel tw, tw2;
	int fd = tw_open(&tw), fd2 = tw_open(&tw2);
	int p[2] = { -1, -1 };
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int proc = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	ASSERT_TRUE(fd >= 0 && fd2 >= 0);
	ASSERT_TRUE(pipe2(p, O_CLOEXEC) == 0)
		TH_LOG("pipe: %s", ename(errno));
	EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, p[0]));
	EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, p[1]));
	if (CHECK(devnull >= 0, "open /dev/null: %s", ename(errno))) {
		EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, devnull));
	}
	if (CHECK(ep >= 0, "epoll_create1: %s", ename(errno))) {
		EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, ep));
	}
	if (proc >= 0) {
		EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, proc));
	}
	EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, fd));
	EXPECT_EQ(-EINVAL, twheel_set_eventfd(&tw, fd2));
}

TEST_F_TIMEOUT(twheel, eventfd_ebadf, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int efd = eventfd(0, EFD_CLOEXEC);
	int hi = 4000;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(efd >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	while (fcntl(hi, F_GETFD) >= 0)
		hi++;
	EXPECT_EQ(-EBADF, twheel_set_eventfd(&tw, hi));
	EXPECT_EQ(-EBADF, twheel_set_eventfd(&tw, INT_MAX));
	close(efd);
	EXPECT_EQ(-EBADF, twheel_set_eventfd(&tw, efd));	/* just closed */
	/* the fd stays usable */
	EXPECT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
}

TEST_F_TIMEOUT(twheel, eventfd_closed_before_expiry, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), efd2;
	struct twheel_event ev[4];
	u64 id, pid, seen;
	int n;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(efd >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	ASSERT_EQ(0, twheel_set_eventfd(&tw, efd));
	close(efd);
	ASSERT_EQ(0, twheel_schedule(&tw, 50 * NSEC_PER_MSEC, 0, 0, 1, &id));
	ASSERT_EQ(0,
		  twheel_schedule(&tw, 5 * NSEC_PER_MSEC, 5 * NSEC_PER_MSEC, TWHEEL_TIMER_PERIODIC,
				  2, &pid));
	idle_ms(200);
	EXPECT_EQ(1, twheel_cancel(&tw, pid));
	n = wait_events(fd, ev, 2, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	EXPECT_TRUE(n == 2)
		TH_LOG("expected 2 events (one-shot and periodic), got %d", n);
	no_events(fd, 100, "after the periodic timer was cancelled");
	for (int i = 0; i < n; i++)
		CHECK_EVENT(&ev[i], seen);

	/* a new registration replaces the orphaned one */
	efd2 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_TRUE(efd2 >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	ASSERT_EQ(0, twheel_set_eventfd(&tw, efd2));
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 3, NULL));
	ASSERT_TRUE(wait_one(fd, ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen, "zero-delay"));
	EXPECT_EQ(1, efd_read(efd2));
}

TEST_F_TIMEOUT(twheel, eventfd_unregister, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int a = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int b = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_event ev;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(a >= 0 && b >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	/* unregistering with nothing registered is harmless */
	EXPECT_EQ(0, twheel_set_eventfd(&tw, -1));
	ASSERT_EQ(0, twheel_set_eventfd(&tw, a));
	EXPECT_EQ(0, twheel_set_eventfd(&tw, -1));
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 1, NULL));
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay"));
	EXPECT_EQ(-EAGAIN, efd_read(a));

	/* registering b replaces a */
	ASSERT_EQ(0, twheel_set_eventfd(&tw, a));
	ASSERT_EQ(0, twheel_set_eventfd(&tw, b));
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 2, NULL));
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay"));
	EXPECT_EQ(-EAGAIN, efd_read(a));
	EXPECT_EQ(1, efd_read(b));
}

/* ------------------------------------------------------------------ */
/* Tests: read and poll                                               */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, read_small_buffer_einval, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[2];
	char buf[EV_SIZE];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	static const size_t sizes[] = { 0, 1, 8, EV_SIZE - 1 };

	ASSERT_TRUE(fd >= 0);
	/* nothing queued: the size is still checked first */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		ssize_t r = read(fd, buf, sizes[i]);

		EXPECT_TRUE(r == -1 && errno == EINVAL)
			TH_LOG("empty queue, read(%zu): expected EINVAL, got %zd (%s)", sizes[i], r,
			       ename(errno));
	}
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 1, NULL));
	ASSERT_TRUE(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1)
		TH_LOG("no POLLIN");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		ssize_t r = read(fd, buf, sizes[i]);

		EXPECT_TRUE(r == -1 && errno == EINVAL)
			TH_LOG("event queued, read(%zu): expected EINVAL, got %zd (%s)", sizes[i],
			       r, ename(errno));
	}
	/* the event was not consumed */
	EXPECT_EQ(1, tw_queued(&tw));
	EXPECT_EQ((long)EV_SIZE, read(fd, ev, sizeof(ev)));
	EXPECT_EQ(1, ev[0].user_data);
}

TEST_F_TIMEOUT(twheel, read_whole_events_only, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_event ev[4];
	char *buf = (char *)ev;
	u64 t_end;

	ASSERT_TRUE(fd >= 0);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, (u64)i, NULL));
	}
	t_end = now_ns() + g_slack_ns;
	while (tw_queued(&tw) < 3 && now_ns() < t_end)
		idle_ms(5);
	ASSERT_EQ(3, tw_queued(&tw));
	/* 2.5 events of room: 2 whole events */
	memset(ev, 0xee, sizeof(ev));
	EXPECT_EQ((long)(2 * EV_SIZE), read(fd, buf, 2 * EV_SIZE + EV_SIZE / 2));
	/* nothing written past the whole events */
	EXPECT_TRUE((unsigned char)buf[2 * EV_SIZE] == 0xee)
		TH_LOG("read wrote past the last whole event");
	EXPECT_EQ(1, tw_queued(&tw));
	EXPECT_EQ((long)EV_SIZE, read(fd, buf, sizeof(ev)));
	errno = 0;
	EXPECT_TRUE(read(fd, buf, sizeof(ev)) == -1 && errno == EAGAIN)
		TH_LOG("expected EAGAIN, got %s", ename(errno));
}

TEST_F_TIMEOUT(twheel, read_nonblock_eagain, 20)
{
	struct twheel tw, tw2;
	int fd = tw_open(&tw), fd2 = tw_open_flags(&tw2, 0);
	struct twheel_event ev;

	ASSERT_TRUE(fd >= 0 && fd2 >= 0);
	errno = 0;
	EXPECT_TRUE(read(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN)
		TH_LOG("O_NONBLOCK read, empty: expected EAGAIN, got %s", ename(errno));
	/* a pending timer does not change that */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
	errno = 0;
	EXPECT_TRUE(read(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN)
		TH_LOG("O_NONBLOCK read, timer pending: expected EAGAIN, got %s", ename(errno));
	/* O_NONBLOCK set later with fcntl */
	ASSERT_TRUE(fcntl(fd2, F_SETFL, O_NONBLOCK) == 0)
		TH_LOG("fcntl: %s", ename(errno));
	errno = 0;
	EXPECT_TRUE(read(fd2, &ev, sizeof(ev)) == -1 && errno == EAGAIN)
		TH_LOG("fcntl O_NONBLOCK read: expected EAGAIN, got %s", ename(errno));
}

TEST_F_TIMEOUT(twheel, read_blocking_wakes, 20)
{
	struct twheel tw;
	int fd = tw_open_flags(&tw, 0);
	struct twheel_event ev[4];
	struct watchdog wd;
	u64 id, t0, seen;
	ssize_t r;

	ASSERT_TRUE(fd >= 0);
	t0 = now_ns();
	ASSERT_EQ(0, twheel_schedule(&tw, 200 * NSEC_PER_MSEC, 0, 0, 0x42, &id));
	ASSERT_TRUE(watchdog_start(&wd, &tw, 5000));
	r = read(fd, ev, sizeof(ev));
	seen = now_ns();
	EXPECT_TRUE(!watchdog_stop(&wd))
		TH_LOG("blocking read did not return within 5 s");
	ASSERT_TRUE(r == (ssize_t)EV_SIZE)
		TH_LOG("blocking read returned %zd (%s)", r, r < 0 ? ename(errno) : "-");
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(id, ev[0].id);
	EXPECT_EQ(0x42, ev[0].user_data);
	EXPECT_TRUE(seen >= t0 + 200 * NSEC_PER_MSEC)
		TH_LOG("blocking read returned early");
	diag("blocking read returned %lld us after the deadline",
	     (long long)(seen - ev[0].deadline) / 1000);

	/* with an event already queued it returns at once */
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0x43, NULL));
	idle_ms(50);
	ASSERT_TRUE(watchdog_start(&wd, &tw, 5000));
	r = read(fd, ev, sizeof(ev));
	EXPECT_TRUE(!watchdog_stop(&wd))
		TH_LOG("blocking read with a queued event did not return");
	EXPECT_TRUE(r == (ssize_t)EV_SIZE && ev[0].user_data == 0x43)
		TH_LOG("read returned %zd, ud %#llx", r, (unsigned long long)ev[0].user_data);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *send_usr1(void *arg)
{
	idle_ms(200);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

TEST_F_TIMEOUT(twheel, read_blocking_eintr, 20)
{
	struct twheel tw;
	int fd = tw_open_flags(&tw, 0);
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct twheel_event ev;
	struct watchdog wd;
	pthread_t me = pthread_self(), th;
	ssize_t r;
	int err;

	ASSERT_TRUE(fd >= 0);
	sigaction(SIGUSR1, &sa, NULL);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
	ASSERT_TRUE(watchdog_start(&wd, &tw, 5000));
	pthread_create(&th, NULL, send_usr1, &me);
	r = read(fd, &ev, sizeof(ev));
	err = errno;
	pthread_join(th, NULL);
	EXPECT_TRUE(!watchdog_stop(&wd))
		TH_LOG("blocking read not interrupted by a signal within 5 s");
	EXPECT_TRUE(r == -1 && err == EINTR)
		TH_LOG("blocking read + signal: expected EINTR, got %zd (%s)", r,
		       r < 0 ? ename(err) : "-");
}

TEST_F_TIMEOUT(twheel, poll_pollin, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct twheel_event ev;
	u64 t0, t1, id;
	int r;

	ASSERT_TRUE(fd >= 0);
	r = poll(&p, 1, 0);
	EXPECT_TRUE(r == 0 || !(p.revents & POLLIN))
		TH_LOG("POLLIN with nothing queued (revents %#x)", p.revents);
	ASSERT_EQ(0, twheel_schedule(&tw, 150 * NSEC_PER_MSEC, 0, 0, 1, &id));
	p.revents = 0;
	p.events = POLLIN;
	r = poll(&p, 1, 0);
	EXPECT_EQ(0, r);
	t0 = now_ns();
	r = poll(&p, 1, (int)(150 + g_slack_ns / NSEC_PER_MSEC));
	t1 = now_ns();
	ASSERT_TRUE(r == 1 && (p.revents & POLLIN))
		TH_LOG("poll: %d, revents %#x", r, p.revents);
	EXPECT_TRUE(t1 - t0 >= 100 * NSEC_PER_MSEC)
		TH_LOG("poll woke after %llu ms, the timer was 150 ms",
		       (unsigned long long)((t1 - t0) / NSEC_PER_MSEC));
	/* level-triggered: still readable until read */
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ((long)EV_SIZE, read(fd, &ev, sizeof(ev)));
	EXPECT_TRUE(ev.deadline <= t1)
		TH_LOG("POLLIN before the deadline");
	EXPECT_EQ(0, poll(&p, 1, 0));
}

TEST_F_TIMEOUT(twheel, epoll_epollin, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int ep = epoll_create1(EPOLL_CLOEXEC), ep_et = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ee = { .events = EPOLLIN, .data.u64 = 0x1234 }, out[2];
	struct twheel_event ev[2];
	int r;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ep >= 0 && ep_et >= 0)
		TH_LOG("epoll_create1: %s", ename(errno));
	ASSERT_TRUE(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee) == 0)
		TH_LOG("epoll_ctl: %s", ename(errno));
	ee.events = EPOLLIN | EPOLLET;
	ASSERT_TRUE(epoll_ctl(ep_et, EPOLL_CTL_ADD, fd, &ee) == 0)
		TH_LOG("epoll_ctl ET: %s", ename(errno));
	EXPECT_EQ(0, epoll_wait(ep, out, 2, 0));
	ASSERT_EQ(0, twheel_schedule(&tw, 100 * NSEC_PER_MSEC, 0, 0, 1, NULL));
	r = epoll_wait(ep, out, 2, (int)(100 + g_slack_ns / NSEC_PER_MSEC));
	ASSERT_TRUE(r == 1 && (out[0].events & EPOLLIN) && out[0].data.u64 == 0x1234)
		TH_LOG("epoll_wait: %d, events %#x", r, r > 0 ? out[0].events : 0);
	EXPECT_EQ(1, epoll_wait(ep_et, out, 2, 0));
	EXPECT_EQ(0, epoll_wait(ep_et, out, 2, 0));	/* edge already reported */
	EXPECT_EQ(1, epoll_wait(ep, out, 2, 0));	/* level: still there */
	EXPECT_EQ((long)EV_SIZE, read(fd, ev, sizeof(ev)));
	EXPECT_EQ(0, epoll_wait(ep, out, 2, 0));
	/* a second expiry is a new edge */
	ASSERT_EQ(0, twheel_schedule(&tw, 20 * NSEC_PER_MSEC, 0, 0, 2, NULL));
	r = epoll_wait(ep_et, out, 2, (int)(20 + g_slack_ns / NSEC_PER_MSEC));
	EXPECT_TRUE(r == 1)
		TH_LOG("edge-triggered epoll: second expiry not reported (%d)", r);
	EXPECT_EQ((long)EV_SIZE, read(fd, ev, sizeof(ev)));
	EXPECT_EQ(2, ev[0].user_data);
}

/* ------------------------------------------------------------------ */
/* Tests: limits and accounting                                       */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(twheel, info_counts, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_info info;
	struct twheel_event ev;
	u64 far[3], t_end;

	ASSERT_TRUE(fd >= 0);
	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, xioctl(fd, TWHEEL_IOC_INFO, &info));
	EXPECT_TRUE(info.granularity_ns > 0 && info.granularity_ns <= NSEC_PER_SEC)
		TH_LOG("granularity %llu ns", (unsigned long long)info.granularity_ns);
	EXPECT_TRUE(info.max_timers > 0)
		TH_LOG("max_timers 0");
	EXPECT_EQ(0, info.timers);
	EXPECT_EQ(0, info.queued);
	/* The tests run as root: the per-user cap does not apply to it. */
	EXPECT_EQ(TWHEEL_INFO_USER_CAP_EXEMPT | TWHEEL_INFO_MAP | TWHEEL_INFO_CLOCKS |
		  TWHEEL_INFO_SHORT_OPS | TWHEEL_INFO_SLACK | TWHEEL_INFO_RING |
		  TWHEEL_INFO_ALARM | TWHEEL_INFO_WAKE_ALARM | TWHEEL_INFO_RESTORE, info.flags);
	EXPECT_EQ(0, info.user_timers);
	EXPECT_TRUE(info.max_user_timers > 0 && info.max_total_timers >= info.max_user_timers)
		TH_LOG("caps: user %llu, total %llu", (unsigned long long)info.max_user_timers,
		       (unsigned long long)info.max_total_timers);
	diag("granularity %llu ns, max_timers %u, max_user_timers %llu, max_total_timers %llu",
	     (unsigned long long)info.granularity_ns, info.max_timers,
	     (unsigned long long)info.max_user_timers,
	     (unsigned long long)info.max_total_timers);

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &far[i]));
	}
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0, NULL));
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0, NULL));
	t_end = now_ns() + g_slack_ns;
	do {
		ASSERT_EQ(0, twheel_get_info(&tw, &info));
		if (info.queued == 2)
			break;
		idle_ms(5);
	} while (now_ns() < t_end);
	EXPECT_EQ(2, info.queued);
	EXPECT_EQ(5, info.timers);		/* fired with unread events still count */
	EXPECT_EQ((long)EV_SIZE, read(fd, &ev, sizeof(ev)));
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_EQ(1, info.queued);
	EXPECT_EQ(4, info.timers);
	EXPECT_EQ(1, twheel_cancel(&tw, far[0]));
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_EQ(3, info.timers);
	EXPECT_EQ(1, info.queued);
	/* a periodic timer with a queued event counts once, as one event */
	{
		u64 pid;
		ASSERT_EQ(0, twheel_schedule(&tw, 0, 10 * NSEC_PER_MSEC, TWHEEL_TIMER_PERIODIC, 0,
					     &pid));
		idle_ms(100);
		ASSERT_EQ(0, twheel_get_info(&tw, &info));
		EXPECT_EQ(4, info.timers);
		EXPECT_EQ(2, info.queued);
		EXPECT_EQ(1, twheel_cancel(&tw, pid));
	}
}

TEST_F_TIMEOUT(twheel, limit_enospc, 90)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_info info;
	struct twheel_op *ops;
	u64 *ids, probe, t_end, t_fill, t_checks, t_close;
	u32 max, done = 0;
	struct twheel_event ev;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	max = info.max_timers;
	if (max > (1u << 20))
		SKIP(return, "max_timers %u is too many to fill in a test", max);
	ops = calloc(TWHEEL_BATCH_MAX, sizeof(*ops));
	ids = calloc(max, sizeof(*ids));
	ASSERT_TRUE(ops && ids)
		TH_LOG("out of memory");
	t_fill = now_ns();
	while (done < max) {
		u32 n = max - done < TWHEEL_BATCH_MAX ? max - done : TWHEEL_BATCH_MAX;
		long r;

		fill_schedule_ops(ops, n, FAR_FUTURE + done, done);
		r = tw_batch(fd, ops, n);
		if (!CHECK(r == (long)n, "filling: batch of %u at %u returned %s (result %s)", n, done,
			   rstr(r), r >= 0 && r < (long)n ? rstr(ops[r].result) : "-"))
			return;
		for (u32 i = 0; i < n; i++)
			ids[done + i] = ops[i].spec.id;
		done += n;
	}
	t_fill = now_ns() - t_fill;
	t_checks = now_ns();
	ASSERT_EQ(max, tw_timers(&tw));
	/* full: single and batched schedules fail, nothing changes */
	EXPECT_EQ(-ENOSPC, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
	EXPECT_EQ(-ENOSPC, twheel_schedule(&tw, 0, 0, 0, 0, NULL));
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	EXPECT_EQ(0, tw_batch(fd, ops, 2));
	EXPECT_EQ(-ENOSPC, ops[0].result);
	EXPECT_EQ(max, tw_timers(&tw));
	/* modify does not need room */
	EXPECT_EQ(1, twheel_modify(&tw, ids[1], FAR_FUTURE, 0, 0, 0));
	/* cancel 10: room for exactly 10 */
	for (int i = 0; i < 10; i++) {
		EXPECT_EQ(1, twheel_cancel(&tw, ids[max - 1 - (u32)i]));
	}
	EXPECT_EQ(max - 10, tw_timers(&tw));
	fill_schedule_ops(ops, 11, FAR_FUTURE, 0);
	EXPECT_EQ(10, tw_batch(fd, ops, 11));
	EXPECT_EQ(-ENOSPC, ops[10].result);
	EXPECT_EQ(max, tw_timers(&tw));
	/* a fired one-shot holds its slot until its event is read */
	ASSERT_EQ(1, twheel_modify(&tw, ids[0], 0, 0, 0, 0xf1));
	t_end = now_ns() + g_slack_ns;
	while (tw_queued(&tw) < 1 && now_ns() < t_end)
		idle_ms(5);
	EXPECT_EQ(-ENOSPC, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
	ASSERT_EQ((long)EV_SIZE, read(fd, &ev, sizeof(ev)));
	EXPECT_EQ(0xf1, ev.user_data);
	EXPECT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &probe));
	EXPECT_EQ(-ENOSPC, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
	EXPECT_EQ(max, tw_timers(&tw));
	t_checks = now_ns() - t_checks;
	t_close = now_ns();
	close(fd);
	t_close = now_ns() - t_close;
	diag("filled %u timers in %.2f s, checks %.2f s, close %.2f s", max,
	     (double)t_fill / 1e9, (double)t_checks / 1e9, (double)t_close / 1e9);
	free(ops);
	free(ids);
}

TEST_F_TIMEOUT(twheel, schedule_ids_unique, 30)
{
	enum { N = 2000 };
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 *ids = calloc(N, sizeof(*ids));

	ASSERT_TRUE(fd >= 0 && ids);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &ids[i]));
	}
	ids_distinct(ids, N);
	EXPECT_EQ(N, tw_timers(&tw));
	/* cancel half, schedule again: the live ids stay distinct */
	for (int i = 0; i < N; i += 2) {
		EXPECT_EQ(1, twheel_cancel(&tw, ids[i]));
	}
	for (int i = 0; i < N; i += 2) {
		ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &ids[i]));
	}
	ids_distinct(ids, N);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(1, twheel_cancel(&tw, ids[i]));
	}
	EXPECT_EQ(0, tw_timers(&tw));
	free(ids);
}

/* ------------------------------------------------------------------ */
/* Tests: the timer table and the deadline array of mmap()            */
/* ------------------------------------------------------------------ */

#define ID_GEN(id)	((id) >> 32)

/* Cap units of a page of the timer table or of the deadline array. */
static u64 page_units(void)
{
	return (u64)sysconf(_SC_PAGESIZE) / 256;
}

/* INFO.user_timers, the units this user's files hold. */
static u64 tw_user_units(struct twheel *tw)
{
	struct twheel_info info;

	if (!CHECK_RET(twheel_get_info(tw, &info), 0))
		return 0;
	return info.user_timers;
}

/*
 * INFO.user_timers once no earlier file of this user is still being freed:
 * the close of a file of more than 1024 objects leaves its freeing, and
 * the return of its units, to a kernel worker (twheel(7)), so a test that
 * counts units from a base waits for the count to hold still, 400 ms, at
 * most 120 s: the test's timeout allows 150 s for it (on the debug kernel
 * an earlier test's 58,000 units took about a minute to come back).
 */
static u64 tw_user_units_settled(struct twheel *tw)
{
	u64 units = tw_user_units(tw), again;
	int still = 0, polls;

	for (polls = 0; polls < 1200 && still < 4; polls++) {
		usleep(100 * 1000);
		again = tw_user_units(tw);
		still = again == units ? still + 1 : 0;
		units = again;
	}
	return units;
}

/* The size every mapping of @fd must have. */
static size_t map_len(struct twheel *tw)
{
	struct twheel_info info;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!CHECK_RET(twheel_get_info(tw, &info), 0))
		return 0;
	return (TWHEEL_MAP_SIZE(info.max_timers) + page - 1) / page * page;
}

static u64 *tw_map(struct twheel *tw, int prot)
{
	void *p = mmap(NULL, map_len(tw), prot, MAP_SHARED, tw->fd, 0);

	if (!CHECK(p != MAP_FAILED, "mmap: %s", ename(errno)))
		return NULL;
	return p;
}

static volatile u64 *slot_of(u64 *map, u64 id)
{
	return &map[TWHEEL_ID_SLOT(id)];
}

TEST_F_TIMEOUT(twheel, table_stale_ids, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 a, b, c, d, e, f;
	struct twheel_event ev;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &a));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &b));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &c));
	/* slots from 0, generation 0 */
	EXPECT_EQ(1, a);
	EXPECT_EQ(2, b);
	EXPECT_EQ(3, c);
	/* a released slot is taken first, under the next generation */
	EXPECT_EQ(1, twheel_cancel(&tw, b));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, b));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &d));
	EXPECT_EQ(TWHEEL_ID_SLOT(b), TWHEEL_ID_SLOT(d));
	EXPECT_EQ(ID_GEN(b) + 1, ID_GEN(d));
	EXPECT_EQ(-ENOENT, twheel_modify(&tw, b, FAR_FUTURE, 0, 0, 0));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, b));
	/* a fired one-shot's slot is released when its event is read */
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0xe, &e));
	ASSERT_TRUE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "e"));
	EXPECT_EQ(e, ev.id);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &f));
	EXPECT_EQ(TWHEEL_ID_SLOT(e), TWHEEL_ID_SLOT(f));
	EXPECT_EQ(ID_GEN(e) + 1, ID_GEN(f));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, e));
	/* ids that name no slot, or another generation of a live one */
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, 0x7fffffffULL));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, a + (5ULL << 32)));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, a | 0xffffffff00000000ULL));
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, a & ~0xffffffffULL));
	EXPECT_EQ(1, twheel_cancel(&tw, a));
	EXPECT_EQ(1, twheel_cancel(&tw, c));
	EXPECT_EQ(1, twheel_cancel(&tw, d));
	EXPECT_EQ(1, twheel_cancel(&tw, f));
	EXPECT_EQ(0, tw_timers(&tw));
	close(fd);
}

/*
 * What a file holds against the caps: a unit per timer object (kept for
 * reuse after a cancel) and page_units() per page of its table; all of it
 * goes when the file is closed. The steady state allocates nothing.
 */
TEST_F_TIMEOUT(twheel, table_units, 210)
{
	enum { N = 1024 };
	static struct twheel_op ops[N];
	struct twheel tw, twp;
	int fd = tw_open(&tw), probe = tw_open(&twp);
	/* a page of the table holds a page of 8-byte slots */
	u64 per = (u64)sysconf(_SC_PAGESIZE) / 8;
	u64 base, id, chunks = (N + per - 1) / per;

	ASSERT_TRUE(fd >= 0 && probe >= 0);
	base = tw_user_units_settled(&twp);
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	EXPECT_EQ(1 + page_units(), tw_user_units(&twp) - base);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	/* kept for reuse: still counted */
	EXPECT_EQ(1 + page_units(), tw_user_units(&twp) - base);
	EXPECT_EQ(1, fdinfo_val(fd, "twheel-spare"));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			ops[i] = (struct twheel_op){ .op = TWHEEL_OP_SCHEDULE,
				.spec = mkspec(FAR_FUTURE, 0, (u64)i, 0) };
		}
		ASSERT_EQ(N, tw_batch(fd, ops, N));
		EXPECT_EQ(N, tw_timers(&tw));
		for (int i = 0; i < N; i++) {
			u64 id = ops[i].spec.id;

			ops[i] = (struct twheel_op){ .op = TWHEEL_OP_CANCEL };
			ops[i].spec.id = id;
		}
		ASSERT_EQ(N, tw_batch(fd, ops, N));
		EXPECT_EQ(0, tw_timers(&tw));
		/* the same N objects and the same table, round after round */
		EXPECT_EQ(N + chunks * page_units(), tw_user_units(&twp) - base);
		EXPECT_EQ((long long)(chunks * per), fdinfo_val(fd, "twheel-slots"));
	}
	close(fd);
	EXPECT_EQ(base, tw_user_units(&twp));
	close(probe);
}

TEST_F_TIMEOUT(twheel, map_args, 170)
{
	struct twheel tw, twp;
	int fd = tw_open(&tw), probe = tw_open(&twp);
	size_t len, page = (size_t)sysconf(_SC_PAGESIZE);
	struct twheel_info info;
	u64 *m1, *m2, *ro, id, base;
	void *p;

	ASSERT_TRUE(fd >= 0 && probe >= 0);
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_TRUE(info.flags & TWHEEL_INFO_MAP);
	len = map_len(&tw);
	ASSERT_TRUE(len);
	base = tw_user_units_settled(&twp);
	p = mmap(NULL, len - page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL)
		TH_LOG("mmap of one page less: %s", p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len + page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL)
		TH_LOG("mmap of one page more: %s", p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)page);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL)
		TH_LOG("mmap at offset one page: %s", p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL)
		TH_LOG("private mmap: %s", p == MAP_FAILED ? ename(errno) : "mapped");
	/* nothing allocated by the refusals */
	EXPECT_EQ(base, tw_user_units(&twp));

	m1 = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(m1);
	EXPECT_EQ(len / page * page_units(), tw_user_units(&twp) - base);
	EXPECT_EQ(1, fdinfo_val(fd, "twheel-mapped"));
	m2 = tw_map(&tw, PROT_READ | PROT_WRITE);
	ro = tw_map(&tw, PROT_READ);
	ASSERT_TRUE(m2 && ro);
	/* one array: the second mapping costs nothing */
	EXPECT_EQ(len / page * page_units(), tw_user_units(&twp) - base);
	/* every arming stores its deadline; all mappings see one array */
	ASSERT_EQ(0, twheel_schedule(&tw, 1000 * NSEC_PER_SEC, 0, TWHEEL_TIMER_ABSTIME, 0, &id));
	EXPECT_EQ(1000 * NSEC_PER_SEC, *slot_of(m1, id));
	EXPECT_EQ(1000 * NSEC_PER_SEC, *slot_of(ro, id));
	*slot_of(m2, id) = 1234;
	EXPECT_EQ(1234, *slot_of(m1, id));
	EXPECT_EQ(1234, *slot_of(ro, id));
	/* the last slot exists */
	m1[len / sizeof(u64) - 1] = 42;
	EXPECT_EQ(42, ro[len / sizeof(u64) - 1]);
	/* a mapping does not grow */
	p = mremap(m1, len, len + page, MREMAP_MAYMOVE);
	EXPECT_TRUE(p == MAP_FAILED)
		TH_LOG("mremap grew the mapping");
	munmap(m1, len);
	munmap(m2, len);
	munmap(ro, len);
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	close(fd);
	EXPECT_EQ(base, tw_user_units(&twp));
	close(probe);
}

/* Waits for the one event of @id and checks it names @deadline. */
static void expect_fire_at(int fd, u64 id, u64 deadline, const char *what)
{
	struct twheel_event ev;
	u64 seen, now = now_ns();
	unsigned int ms = (unsigned int)((deadline > now ? deadline - now : 0) / NSEC_PER_MSEC +
					 g_slack_ns / NSEC_PER_MSEC);

	if (!wait_one(fd, &ev, ms, &seen, what))
		return;
	CHECK_EVENT(&ev, seen);
	CHECK_EQ(ev.id, id);
	CHECK_EQ(ev.count, 1);
	CHECK(ev.deadline == deadline, "%s: deadline %llu, expected %llu", what,
	      (unsigned long long)ev.deadline, (unsigned long long)deadline);
	CHECK(seen >= deadline, "%s: seen %llu before the deadline %llu", what,
	      (unsigned long long)seen, (unsigned long long)deadline);
}

TEST_F_TIMEOUT(twheel, map_extend, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 *map, id, t0, dl, ext;

	ASSERT_TRUE(fd >= 0);
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	t0 = now_ns();
	ASSERT_EQ(0, twheel_schedule(&tw, 100 * NSEC_PER_MSEC, 0, 0, 7, &id));
	dl = *slot_of(map, id);
	EXPECT_GE(dl, t0 + 100 * NSEC_PER_MSEC);
	EXPECT_LE(dl, now_ns() + 100 * NSEC_PER_MSEC);
	/* pushed back twice, with plain stores */
	ext = dl + 200 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	idle_ms(150);
	ext += 200 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	expect_fire_at(fd, id, ext, "extended timer");
	EXPECT_TRUE(fdinfo_val(fd, "twheel-extended") >= 1);
	EXPECT_TRUE(fdinfo_val(fd, "twheel-extended") <= 2);
	EXPECT_EQ(0, tw_timers(&tw));
	munmap(map, map_len(&tw));
	close(fd);
}

/* Garbage in a slot affects that timer only, and never makes it early. */
TEST_F_TIMEOUT(twheel, map_garbage, 20)
{
	static const u64 bad[] = { 0, 1, 1ULL << 63, ~0ULL };
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 *map, id[4], far, per, dl[4];

	ASSERT_TRUE(fd >= 0);
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, twheel_schedule(&tw, (50 + 10 * (u64)i) * NSEC_PER_MSEC, 0, 0, (u64)i,
					     &id[i]));
		dl[i] = *slot_of(map, id[i]);
		*slot_of(map, id[i]) = bad[i];
	}
	/* 0 and 1 are earlier: the timers fire as armed */
	expect_fire_at(fd, id[0], dl[0], "slot 0");
	expect_fire_at(fd, id[1], dl[1], "slot 1");
	/* above INT64_MAX: taken as INT64_MAX, so pending for ever */
	no_events(fd, 300, "slots beyond INT64_MAX");
	EXPECT_EQ(1, twheel_cancel(&tw, id[2]));
	EXPECT_EQ(1, twheel_cancel(&tw, id[3]));
	/* periodic timers ignore their slot */
	ASSERT_EQ(0,
		  twheel_schedule(&tw, 20 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC,
				  TWHEEL_TIMER_PERIODIC, 0, &per));
	*slot_of(map, per) = ~0ULL;
	{
		struct twheel_event ev;

		ASSERT_TRUE(wait_one(fd, &ev, 20 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL,
				     "periodic"));
		EXPECT_EQ(per, ev.id);
	}
	EXPECT_EQ(1, twheel_cancel(&tw, per));
	/* a slot with no timer: nothing happens */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &far));
	map[TWHEEL_ID_SLOT(far) + 1] = 1;
	EXPECT_EQ(1, twheel_cancel(&tw, far));
	EXPECT_EQ(0, tw_timers(&tw));
	munmap(map, map_len(&tw));
	close(fd);
}

/*
 * A store racing the expiry: each timer is pushed back once, right about
 * when it comes due. Either the kernel saw the store (one event, at the
 * new deadline) or it did not (one event, at the old one): never both,
 * never neither.
 */
TEST_F_TIMEOUT(twheel, map_race_expiry, 30)
{
	enum { N = 300 };
	static u64 id[N], dl[N], ext[N];
	static struct twheel_event ev[N];
	bool seen_id[N] = { false };
	struct twheel tw;
	int fd = tw_open(&tw), got, late = 0, moved = 0;
	u64 *map, t0, seed = g_seed;

	ASSERT_TRUE(fd >= 0);
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	t0 = now_ns() + 100 * NSEC_PER_MSEC;
	for (int i = 0; i < N; i++) {
		dl[i] = t0 + (u64)i * 300 * NSEC_PER_USEC;
		ASSERT_EQ(0, twheel_schedule(&tw, dl[i], 0, TWHEEL_TIMER_ABSTIME, (u64)i, &id[i]));
		ext[i] = dl[i] + 50 * NSEC_PER_MSEC;
	}
	for (int i = 0; i < N; i++) {
		/* a store within a granule or so of the deadline, either side */
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		u64 at = dl[i] - g_granularity_ns + (seed >> 33) % (2 * g_granularity_ns + 1);

		while (now_ns() < at)
			;
		*slot_of(map, id[i]) = ext[i];
	}
	got = wait_events(fd, ev, N, 500 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL);
	EXPECT_EQ(N, got);
	for (int k = 0; k < got; k++) {
		int i = (int)ev[k].user_data;

		if (!CHECK(i >= 0 && i < N && ev[k].id == id[i] && !seen_id[i],
			   "event %d: id %#llx user_data %llu: unknown or twice", k,
			   (unsigned long long)ev[k].id, (unsigned long long)ev[k].user_data))
			continue;
		seen_id[i] = true;
		CHECK_EVENT(&ev[k], 0);
		EXPECT_EQ(1, ev[k].count);
		if (ev[k].deadline == ext[i])
			moved++;
		else if (CHECK(ev[k].deadline == dl[i], "timer %d: deadline %llu, neither %llu nor %llu",
			       i, (unsigned long long)ev[k].deadline,
			       (unsigned long long)dl[i], (unsigned long long)ext[i]))
			late++;
	}
	no_events(fd, 100, "after one event per timer");
	EXPECT_EQ(N, moved + late);
	EXPECT_EQ(moved, fdinfo_val(fd, "twheel-extended"));
	diag("%d of %d stores were in time to move their timer", moved, N);
	EXPECT_EQ(0, tw_timers(&tw));
	munmap(map, map_len(&tw));
	close(fd);
}

/* MODIFY and CANCEL win over stores; a fired timer ignores its slot. */
TEST_F_TIMEOUT(twheel, map_modify_cancel, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 *map, id, dl, c, f;
	struct twheel_event ev;

	ASSERT_TRUE(fd >= 0);
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	/* MODIFY stores its own deadline over the program's: earlier wins */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, &id));
	*slot_of(map, id) = now_ns() + 10 * NSEC_PER_SEC;
	EXPECT_EQ(1, twheel_modify(&tw, id, 80 * NSEC_PER_MSEC, 0, 0, 0));
	dl = *slot_of(map, id);
	EXPECT_TRUE(dl < now_ns() + 100 * NSEC_PER_MSEC)
		TH_LOG("MODIFY did not store its deadline");
	expect_fire_at(fd, id, dl, "modified timer");
	/*
	 * CANCEL: the extension stored before does not bring it back (due
	 * in 1 s, so that a slow guest cannot see it fire before the CANCEL)
	 */
	ASSERT_EQ(0, twheel_schedule(&tw, NSEC_PER_SEC, 0, 0, 0, &c));
	*slot_of(map, c) = *slot_of(map, c) + 100 * NSEC_PER_MSEC;
	EXPECT_EQ(1, twheel_cancel(&tw, c));
	*slot_of(map, c) = now_ns() + 200 * NSEC_PER_MSEC;
	/* a fired one-shot with its event unread is not moved by a store */
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 0xf, &f));
	ASSERT_TRUE(wait_events(fd, &ev, 1, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL) == 1);
	EXPECT_EQ(f, ev.id);
	no_events(fd, 400, "after CANCEL and a store");
	EXPECT_EQ(0, tw_timers(&tw));
	munmap(map, map_len(&tw));
	close(fd);
}

/* munmap with timers pending; close with a mapping left; fork. */
TEST_F_TIMEOUT(twheel, map_lifetime, 180)
{
	struct twheel tw, twp;
	int fd = tw_open(&tw), probe = tw_open(&twp), st;
	size_t len = map_len(&tw);
	u64 *map, id, dl, ext, base, units;
	struct twheel_event ev;
	pid_t pid;

	ASSERT_TRUE(fd >= 0 && probe >= 0 && len);
	base = tw_user_units_settled(&twp);
	/* the array outlives the mapping: an extension stored before holds */
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	ASSERT_EQ(0, twheel_schedule(&tw, 60 * NSEC_PER_MSEC, 0, 0, 1, &id));
	ext = *slot_of(map, id) + 150 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	munmap(map, len);
	expect_fire_at(fd, id, ext, "extended, then unmapped");

	/* fork: the child's store moves the parent's timer */
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(map);
	ASSERT_EQ(0, twheel_schedule(&tw, 300 * NSEC_PER_MSEC, 0, 0, 2, &id));
	dl = *slot_of(map, id);
	ext = dl + 150 * NSEC_PER_MSEC;
	fflush(stdout);
	pid = fork();
	ASSERT_TRUE(pid >= 0)
		TH_LOG("fork: %s", ename(errno));
	if (!pid) {
		*slot_of(map, id) = ext;
		_exit(0);
	}
	EXPECT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("child failed (status %#x)", st);
	/*
	 * A store made before the deadline must extend the timer. On a busy
	 * debug guest the fork alone may outlast it (seen: 100 ms); a store
	 * after the deadline races the expiry, and either outcome is right.
	 */
	if (now_ns() < dl)
		expect_fire_at(fd, id, ext, "extended by the child");
	else if (wait_events(fd, &ev, 1, 2000, NULL) == 1)
		CHECK(ev.id == id && ev.count == 1 && ev.fired >= ev.deadline &&
		      (ev.deadline == dl || ev.deadline == ext),
		      "child stored late: id %llu count %llu deadline %llu fired %llu, expected %llu or %llu",
		      (unsigned long long)ev.id, (unsigned long long)ev.count,
		      (unsigned long long)ev.deadline, (unsigned long long)ev.fired,
		      (unsigned long long)dl, (unsigned long long)ext);
	else
		FAIL("child stored late: no event");

	/* close with the mapping alive: the file lives until munmap */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 3, &id));
	units = tw_user_units(&twp);
	EXPECT_TRUE(units > base)
		TH_LOG("nothing counted for the open file");
	close(fd);
	EXPECT_EQ(units, tw_user_units(&twp));
	EXPECT_TRUE(*slot_of(map, id) > now_ns());
	*slot_of(map, id) = 1;
	munmap(map, len);
	EXPECT_EQ(base, tw_user_units(&twp));
	close(probe);
}

/* ------------------------------------------------------------------ */
/* Tests: concurrency, lifetime, isolation                            */
/* ------------------------------------------------------------------ */

enum { THR_OPS = 1500, THR_N = 3, SHORT_N = 400 };

struct thr_arg {
	struct twheel *tw;
	int idx;
	u64 ids[THR_OPS];
	int nids;		/* ids still live */
	int errors;
};

static void *thr_sched_cancel(void *p)
{
	struct thr_arg *a = p;
	u64 rs = 0x9e3779b97f4a7c15ULL * (u64)(a->idx + 1);
	u64 live[THR_OPS];
	int nlive = 0, nall = 0;

	for (int i = 0; i < THR_OPS; i++) {
		rs ^= rs << 13;
		rs ^= rs >> 7;
		rs ^= rs << 17;
		if (nlive && (rs & 3) == 0) {
			int k = (int)((rs >> 8) % (u64)nlive);
			long r = twheel_cancel(a->tw, live[k]);

			if (r != 1) {
				FAIL("thread %d: cancel %llu: %s", a->idx,
				     (unsigned long long)live[k], rstr(r));
				a->errors++;
			}
			live[k] = live[--nlive];
		} else {
			u64 id;
			long r = twheel_schedule(a->tw, FAR_FUTURE, 0, 0, (u64)a->idx, &id);

			if (r != 0) {
				FAIL("thread %d: schedule: %s", a->idx, rstr(r));
				a->errors++;
				continue;
			}
			live[nlive++] = id;
			a->ids[nall++] = id;
		}
	}
	/* the kept ids first, for the caller */
	memcpy(a->ids, live, (size_t)nlive * sizeof(u64));
	a->nids = nlive;
	(void)nall;
	return NULL;
}

/*
 * Batches of 64 SCHEDULE then 64 CANCEL while the other threads' single
 * ioctls, which take the file's spinlock alone, take the objects and slots
 * a batch made ready for itself: no batch may fail for want of them.
 */
static void *thr_batch(void *p)
{
	struct thr_arg *a = p;
	struct twheel_op ops[64];

	for (int round = 0; round < THR_OPS / 64; round++) {
		long r;

		fill_schedule_ops(ops, 64, FAR_FUTURE, 5000);
		r = tw_batch(a->tw->fd, ops, 64);
		if (r != 64) {
			FAIL("batch thread: %ld of 64 SCHEDULE ops, op %ld: %s", r, r,
			     r >= 0 && r < 64 ? rstr(ops[r].result) : "-");
			a->errors++;
			break;
		}
		for (int i = 0; i < 64; i++) {
			u64 id = ops[i].spec.id;

			memset(&ops[i], 0, sizeof(ops[i]));
			ops[i].op = TWHEEL_OP_CANCEL;
			ops[i].spec.id = id;
		}
		r = tw_batch(a->tw->fd, ops, 64);
		for (int i = 0; i < 64 && r == 64; i++)
			if (ops[i].result != 1)
				r = -1000 - i;
		if (r != 64) {
			FAIL("batch thread: CANCEL batch gave %ld", r);
			a->errors++;
			break;
		}
	}
	return NULL;
}

/* Set when thr_short() has armed all its timers. */
static int thr_short_done;

static void *thr_short(void *p)
{
	struct thr_arg *a = p;

	for (int i = 0; i < SHORT_N; i++) {
		u64 id;
		long r = twheel_schedule(a->tw, (u64)(i % 50) * NSEC_PER_MSEC, 0, 0, 1000 + (u64)i,
					 &id);

		if (r != 0) {
			FAIL("short thread: schedule: %s", rstr(r));
			a->errors++;
		}
	}
	__atomic_store_n(&thr_short_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(twheel, threads_one_fd, 180)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	static struct thr_arg args[THR_N + 2];
	pthread_t th[THR_N + 2];
	struct twheel_event ev[64];
	bool seen_short[SHORT_N] = { false };
	int nshort = 0, total_live = 0;
	u64 *all, seen, t_end;

	ASSERT_TRUE(fd >= 0);
	thr_short_done = 0;
	for (int i = 0; i <= THR_N + 1; i++) {
		args[i] = (struct thr_arg){ .tw = &tw, .idx = i };
		pthread_create(&th[i], NULL, i < THR_N ? thr_sched_cancel :
			       i == THR_N ? thr_short : thr_batch, &args[i]);
	}
	/*
	 * Meanwhile, read the short timers' events: until 10 s after the
	 * last of them was armed or the last event read, whichever is later
	 * (beside a kernel build the debug kernel's arming outlasted a fixed
	 * 10 s window: 192 of 400 read).
	 */
	t_end = now_ns() + 10 * NSEC_PER_SEC;
	while (nshort < SHORT_N && now_ns() < t_end) {
		int n = wait_events(fd, ev, 64, 200, &seen);

		if (n > 0 || !__atomic_load_n(&thr_short_done, __ATOMIC_ACQUIRE))
			t_end = now_ns() + 10 * NSEC_PER_SEC;

		for (int i = 0; i < n; i++) {
			u64 k = ev[i].user_data - 1000;

			CHECK_EVENT(&ev[i], seen);
			if (!CHECK(ev[i].user_data >= 1000 && k < SHORT_N && !seen_short[k],
				   "unexpected or duplicate event ud %llu",
				   (unsigned long long)ev[i].user_data))
				continue;
			seen_short[k] = true;
			nshort++;
		}
	}
	for (int i = 0; i <= THR_N + 1; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(SHORT_N, nshort);
	EXPECT_EQ(0, args[THR_N + 1].errors);
	for (int i = 0; i < THR_N; i++) {
		EXPECT_EQ(0, args[i].errors);
		total_live += args[i].nids;
	}
	all = calloc((size_t)total_live + 1, sizeof(*all));
	ASSERT_TRUE(all);
	for (int i = 0, k = 0; i < THR_N; i++)
		for (int j = 0; j < args[i].nids; j++)
			all[k++] = args[i].ids[j];
	ids_distinct(all, (size_t)total_live);
	EXPECT_EQ(total_live, tw_timers(&tw));
	EXPECT_EQ(0, tw_queued(&tw));
	diag("%d threads: %d timers left live, %d short timers read", THR_N, total_live, nshort);
	/* every live id is cancellable exactly once */
	for (int i = 0; i < total_live; i++)
		if (!CHECK_RET(twheel_cancel(&tw, all[i]), 1))
			break;
	EXPECT_EQ(0, tw_timers(&tw));
	free(all);
}

TEST_F_TIMEOUT(twheel, close_while_firing, 30)
{
	enum { ROUNDS = 4, N = 128 };
	static struct twheel_op ops[N];
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	long before;

	ASSERT_TRUE(efd >= 0)
		TH_LOG("eventfd: %s", ename(errno));
	for (int r = 0; r < ROUNDS; r++) {
		struct twheel tw;
		int fd = tw_open(&tw);
		struct twheel_info info;

		ASSERT_TRUE(fd >= 0);
		ASSERT_EQ(0, twheel_set_eventfd(&tw, efd));
		memset(ops, 0, sizeof(ops));
		for (int i = 0; i < N; i++) {
			ops[i].op = TWHEEL_OP_SCHEDULE;
			if (i % 8 == 7)
				ops[i].spec = mkspec((u64)(i % 13) * NSEC_PER_MSEC, 0, (u64)i, 0);
			else
				ops[i].spec = mkspec((u64)(i % 3) * NSEC_PER_MSEC,
						     (u64)(1 + i % 5) * NSEC_PER_MSEC / (i % 2 + 1),
						     (u64)i, TWHEEL_TIMER_PERIODIC |
						     (i % 4 == 1 ? TWHEEL_TIMER_FIXED_DELAY : 0));
		}
		ASSERT_EQ(N, tw_batch(fd, ops, N));
		idle_ms(30 + 20 * (u32)r);
		EXPECT_TRUE(efd_read(efd) > 0)
			TH_LOG("round %d: no expiry signalled", r);
		EXPECT_TRUE(close(fd) == 0)
			TH_LOG("close: %s", ename(errno));
		/* reopen works and is empty */
		fd = tw_open(&tw);
		ASSERT_TRUE(fd >= 0);
		ASSERT_EQ(0, twheel_get_info(&tw, &info));
		EXPECT_EQ(0, info.timers);
		EXPECT_EQ(0, info.queued);
		EXPECT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 0, NULL));
		close(fd);
	}
	/* closed: the eventfd is not signalled any more */
	idle_ms(20);
	before = efd_read(efd);
	idle_ms(200);
	EXPECT_EQ(-EAGAIN, efd_read(efd));
	diag("signals after the last close settled: %s (before the quiet period)", rstr(before));
}

TEST_F_TIMEOUT(twheel, fork_shared_fd, 20)
{
	struct twheel tw;
	int fd = tw_open(&tw);
	int pp[2];
	u64 far, zero, child_ids[2] = { 0, 0 }, seen;
	struct twheel_event ev;
	pid_t pid;
	int st;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(pipe2(pp, O_CLOEXEC) == 0)
		TH_LOG("pipe: %s", ename(errno));
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 1, &far));
	ASSERT_EQ(0, twheel_schedule(&tw, 0, 0, 0, 2, &zero));
	fflush(stdout);
	pid = fork();
	ASSERT_TRUE(pid >= 0)
		TH_LOG("fork: %s", ename(errno));
	if (pid == 0) {
		/* the child: same open file, same timers, same queue */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct twheel_event cev;
		u64 out[2] = { 0, 0 };

		alarm(10);
		g_failed = 0;
		CHECK_RET(twheel_cancel(&tw, far), 1);		/* the parent's timer */
		if (CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1, "child: no POLLIN") &&
		    CHECK_EQ(read(fd, &cev, sizeof(cev)), (long)EV_SIZE)) {
			CHECK_EQ(cev.id, zero);		/* read here, not in the parent */
			out[0] = cev.id;
		}
		CHECK_RET(twheel_schedule(&tw, 100 * NSEC_PER_MSEC, 0, 0, 0xc4117d, &out[1]), 0);
		if (write(pp[1], out, sizeof(out)) != sizeof(out))
			FAIL("child: pipe write");
		fflush(stdout);
		_exit(g_failed ? 1 : 0);
	}
	close(pp[1]);
	EXPECT_TRUE(read(pp[0], child_ids, sizeof(child_ids)) == sizeof(child_ids))
		TH_LOG("no word from the child");
	EXPECT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("child failed (status %#x)", st);
	/* the child cancelled the parent's timer */
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, far));
	/* the child consumed the zero-delay event: not seen here */
	EXPECT_EQ(zero, child_ids[0]);
	/* the child's timer (it has exited) fires on the shared file */
	ASSERT_TRUE(wait_one(fd, &ev, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			     "child's timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(child_ids[1], ev.id);
	EXPECT_EQ(0xc4117d, ev.user_data);
	no_events(fd, 100, "after the child's event");
	EXPECT_EQ(0, tw_timers(&tw));
}

TEST_F_TIMEOUT(twheel, two_fds_isolation, 20)
{
	struct twheel twa, twb;
	int a = tw_open(&twa), b = tw_open(&twb);
	struct twheel_event ev[4];
	u64 ida, idb, ida2, seen;
	int n;

	ASSERT_TRUE(a >= 0 && b >= 0);
	ASSERT_EQ(0, twheel_schedule(&twa, 100 * NSEC_PER_MSEC, 0, 0, 0xa, &ida));
	ASSERT_EQ(0, twheel_schedule(&twa, FAR_FUTURE, 0, 0, 0xa, &ida2));
	ASSERT_EQ(0, twheel_schedule(&twb, FAR_FUTURE, 0, 0, 0xb, &idb));
	/* ids of a are unknown to b unless they happen to coincide with b's */
	if (ida != idb) {
		EXPECT_EQ(-ENOENT, twheel_cancel(&twb, ida));
	}
	if (ida2 != idb) {
		EXPECT_EQ(-ENOENT, twheel_cancel(&twb, ida2));
		EXPECT_EQ(-ENOENT, twheel_modify(&twb, ida2, 0, 0, 0, 0));
	}
	if (idb != ida && idb != ida2) {
		EXPECT_EQ(-ENOENT, twheel_cancel(&twa, idb));
	}
	EXPECT_EQ(2, tw_timers(&twa));
	EXPECT_EQ(1, tw_timers(&twb));
	/* events only on a */
	n = read_once(a, ev, 4, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	ASSERT_TRUE(n == 1)
		TH_LOG("fd a: expected 1 event, got %d", n);
	no_events(a, 100, "fd a after its one-shot");
	EXPECT_EQ(ida, ev[0].id);
	EXPECT_EQ(0xa, ev[0].user_data);
	no_events(b, 100, "fd b");
	EXPECT_EQ(0, tw_queued(&twb));
	/* both still hold their far timers */
	EXPECT_EQ(1, twheel_cancel(&twa, ida2));
	EXPECT_EQ(1, twheel_cancel(&twb, idb));
}

/*
 * Is every event late by more than @slack explained by a backlog? It is if
 * the wheel kept firing other events, never pausing for more than @slack,
 * from its deadline to its firing: a busy wheel, however slow the machine,
 * passes; a timer left behind in an idle wheel does not. Return the number
 * of events that fail, and put the longest pause of the wheel in @max_gap.
 */
static int unexplained_late(const u64 *dl, const u64 *fired, int n, u64 slack,
			    u64 *max_gap, bool quiet)
{
	u64 *sorted = malloc((size_t)n * sizeof(*sorted));
	int *gap_from = malloc(((size_t)n + 1) * sizeof(*gap_from));
	int bad = 0;

	*max_gap = 0;
	if (!sorted || !gap_from) {
		free(sorted);
		free(gap_from);
		return n;
	}
	memcpy(sorted, fired, (size_t)n * sizeof(*sorted));
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_u64);
	/* gap_from[k]: the first j >= k with a pause > slack after sorted[j] */
	gap_from[n] = n;
	for (int k = n - 1; k >= 0; k--) {
		u64 gap = k + 1 < n ? sorted[k + 1] - sorted[k] : 0;

		if (gap > *max_gap)
			*max_gap = gap;
		gap_from[k] = k + 1 < n && gap > slack ? k : gap_from[k + 1];
	}
	for (int i = 0; i < n; i++) {
		int lo = 0, hi = n;

		if (fired[i] - dl[i] <= slack)
			continue;
		while (lo < hi) {	/* first firing at or after the deadline */
			int mid = lo + (hi - lo) / 2;

			if (sorted[mid] < dl[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		/* lo < n: event i itself fired after dl[i] */
		if (sorted[lo] - dl[i] > slack ||
		    (gap_from[lo] < n && sorted[gap_from[lo]] < fired[i])) {
			if (bad++ < 10 && !quiet)
				diag("event %d: deadline %llu fired %llu (late %llu us) while the wheel paused for more than %llu us",
				     i, (unsigned long long)dl[i], (unsigned long long)fired[i],
				     (unsigned long long)((fired[i] - dl[i]) / 1000),
				     (unsigned long long)(slack / 1000));
		}
	}
	free(sorted);
	free(gap_from);
	return bad;
}

/*
 * The harness's timeout is a backstop: the debug kernel beside two other
 * guests and a kernel build took 59.8 s for this test, all of it checked,
 * against a timeout of 60. The wait below is bounded by progress instead.
 */
TEST_F_TIMEOUT(twheel, many_timers, 240)
{
	const int N = g_many;
	const u64 span = 500 * NSEC_PER_MSEC;
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op *ops = calloc(TWHEEL_BATCH_MAX, sizeof(*ops));
	u64 *ids = calloc(N, sizeof(*ids)), *delay = calloc(N, sizeof(*delay));
	u64 *t0 = calloc(N, sizeof(*t0)), *t1 = calloc(N, sizeof(*t1));
	u64 *dl = calloc(N, sizeof(*dl)), *fired = calloc(N, sizeof(*fired));
	unsigned char *got = calloc(N, 1);
	struct twheel_event *ev = calloc(1024, EV_SIZE);
	u64 max_late = 0, t_end, seen, inversions = 0, prev_dl = 0, max_gap;
	/*
	 * 10000 expiries within 500 ms queue up behind each other, and on a
	 * slow (emulated, KASAN, shared) machine the backlog alone can make
	 * them seconds late. No fixed bound holds there: an event may be late
	 * by more than the slack only while the wheel is busy with the others
	 * (unexplained_late()). Still never early.
	 */
	const u64 saved_slack = g_slack_ns;
	struct twheel_info info;
	int nread = 0, dups = 0, bad;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ops && ids && delay && t0 && t1 && dl && fired && got && ev)
		TH_LOG("out of memory");
	rng_state = g_seed;
	for (int done = 0; done < N;) {
		int n = N - done < TWHEEL_BATCH_MAX ? N - done : TWHEEL_BATCH_MAX;
		u64 a, b;

		memset(ops, 0, (size_t)n * sizeof(*ops));
		for (int i = 0; i < n; i++) {
			delay[done + i] = rnd() % span;
			ops[i].op = TWHEEL_OP_SCHEDULE;
			ops[i].spec = mkspec(delay[done + i], 0, (u64)(done + i), 0);
		}
		a = now_ns();
		ASSERT_EQ(n, tw_batch(fd, ops, (u32)n));
		b = now_ns();
		for (int i = 0; i < n; i++) {
			ids[done + i] = ops[i].spec.id;
			t0[done + i] = a;
			t1[done + i] = b;
		}
		done += n;
	}
	ASSERT_TRUE(ids_distinct(ids, N));
	/* the checker itself: a backlog passes, a timer left behind does not */
	{
		u64 sd[4] = { 0, 10, 20, 30 }, sf[4] = { 5, 15, 25, 35 };
		u64 gap;

		ASSERT_EQ(0, unexplained_late(sd, sf, 4, 6, &gap, true));
		/* 0 and 3 are late by more than 10, while the others fired */
		sd[1] = 1; sd[2] = 2; sd[3] = 3;
		sf[0] = 24; sf[1] = 5; sf[2] = 12; sf[3] = 20;
		ASSERT_EQ(0, unexplained_late(sd, sf, 4, 10, &gap, true));
		sf[0] = 50;	/* but nothing fired from 20 to 50 */
		ASSERT_EQ(1, unexplained_late(sd, sf, 4, 10, &gap, true));
	}
	g_slack_ns = UINT64_MAX;	/* CHECK_EVENT: unexplained_late() bounds lateness */
	/* 30 s past the last deadline, and past any event read since. */
	t_end = now_ns() + span + 30 * NSEC_PER_SEC;
	while (nread < N && now_ns() < t_end) {
		int n = wait_events(fd, ev, 1024, 500, &seen);

		if (n > 0 && now_ns() + 30 * NSEC_PER_SEC > t_end)
			t_end = now_ns() + 30 * NSEC_PER_SEC;

		for (int j = 0; j < n; j++) {
			u64 i = ev[j].user_data;

			if (!CHECK(i < (u64)N && ev[j].id == ids[i], "event id %llu ud %llu unknown",
				   (unsigned long long)ev[j].id, (unsigned long long)i))
				continue;
			if (got[i]++) {
				dups++;
				continue;
			}
			if (!CHECK_EVENT(&ev[j], seen) ||
			    !CHECK_RANGE(ev[j].deadline, t0[i] + delay[i], t1[i] + delay[i]) ||
			    !CHECK_EQ(ev[j].count, 1)) {
				ASSERT_TRUE(g_failed < 20);
			}
			dl[i] = ev[j].deadline;
			fired[i] = ev[j].fired;
			if (ev[j].fired - ev[j].deadline > max_late)
				max_late = ev[j].fired - ev[j].deadline;
			if (ev[j].deadline < prev_dl)
				inversions++;
			prev_dl = ev[j].deadline;
		}
		nread += n;
	}
	g_slack_ns = saved_slack;
	ASSERT_TRUE(nread == N && dups == 0)
		TH_LOG("read %d events (%d duplicates), expected %d", nread, dups, N);
	bad = unexplained_late(dl, fired, N, g_slack_ns, &max_gap, false);
	EXPECT_EQ(0, bad);
	no_events(fd, 200, "after all timers fired");
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_EQ(0, info.timers);
	EXPECT_EQ(0, info.queued);
	diag("%d timers over %llu ms: max lateness %llu us, longest pause between firings %llu us (bound %llu us), %llu deadline inversions in read order",
	     N, (unsigned long long)(span / NSEC_PER_MSEC), (unsigned long long)(max_late / 1000),
	     (unsigned long long)(max_gap / 1000), (unsigned long long)(g_slack_ns / 1000),
	     (unsigned long long)inversions);
	free(ops); free(ids); free(delay); free(t0); free(t1); free(dl); free(fired);
	free(got); free(ev);
}

/* Wait until @want events are queued (all fired), then read them in one go. */
static int read_all_at_once(struct twheel *tw, struct twheel_event *ev, int want,
			    u64 deadline, long long *starved)
{
	u64 t_end = deadline + g_slack_ns;
	long q;
	ssize_t r;

	sleep_ns(deadline > now_ns() ? deadline - now_ns() : 0);
	while ((q = tw_queued(tw)) >= 0 && q < want && now_ns() < t_end)
		idle_ms(10);
	CHECK(q == want, "%ld of %d events queued %llu ms after the deadline", q, want,
	      (unsigned long long)(g_slack_ns / NSEC_PER_MSEC));
	/* Counted in queued, given their records by the read, at its end. */
	if (starved)
		*starved = fdinfo_val(tw->fd, "twheel-starved");
	r = read(tw->fd, ev, (size_t)want * EV_SIZE);
	if (r < 0) {
		FAIL("read: %s", ename(errno));
		return 0;
	}
	return (int)(r / (ssize_t)EV_SIZE);
}

/* ------------------------------------------------------------------ */
/* CLOCK_REALTIME and CLOCK_BOOTTIME                                  */
/* ------------------------------------------------------------------ */

static u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

/*
 * Setting CLOCK_REALTIME (the guests run the tests as root). The wall time
 * of the start is saved with CLOCK_MONOTONIC beside it, so that
 * wall_restore() puts the clock back to where it would be had nobody set
 * it. Every test that sets the clock restores it before any ASSERT.
 */
struct wall_save {
	u64 real, mono;
};

static void wall_save(struct wall_save *w)
{
	w->real = clock_ns(CLOCK_REALTIME);
	w->mono = now_ns();
}

static int wall_set(u64 ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

/* Moves the wall clock by @delta ns from where it is now. */
static int wall_shift(long long delta)
{
	return wall_set(clock_ns(CLOCK_REALTIME) + (u64)delta);
}

static bool wall_restore(const struct wall_save *w)
{
	return CHECK_RET(wall_set(w->real + (now_ns() - w->mono)), 0);
}

/* Neither fired nor read (@read_clk) before its deadline, on its clock. */
static bool clock_event_not_early(const struct twheel_event *e, u64 read_clk)
{
	bool ok = true;

	ok &= CHECK(e->fired >= e->deadline,
		    "event fired EARLY on its clock: fired %llu < deadline %llu",
		    (unsigned long long)e->fired, (unsigned long long)e->deadline);
	ok &= CHECK(read_clk >= e->deadline,
		    "event read at %llu on its clock, before its deadline %llu",
		    (unsigned long long)read_clk, (unsigned long long)e->deadline);
	return ok;
}

/* The checks of every event of a clock timer that expired. */
static bool check_clock_event(const struct twheel_event *e, u64 id, u64 dl, u64 read_clk)
{
	bool ok = true;

	ok &= CHECK_EQ(e->id, id);
	ok &= CHECK_EQ(e->deadline, dl);
	ok &= CHECK_EQ(e->flags, 0);
	ok &= CHECK_EQ(e->count, 1);
	ok &= clock_event_not_early(e, read_clk);
	if (!ok)
		print_event("clock event", e);
	return ok;
}

TEST_F_TIMEOUT(twheel, clock_info_flag, 20)
{
	struct twheel_info info;
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_TRUE(info.flags & TWHEEL_INFO_CLOCKS)
		TH_LOG("INFO flags %#x lack TWHEEL_INFO_CLOCKS", info.flags);
	EXPECT_EQ(TWHEEL_CLOCK_REALTIME, CLOCK_REALTIME);
	EXPECT_EQ(TWHEEL_CLOCK_MONOTONIC, CLOCK_MONOTONIC);
	EXPECT_EQ(TWHEEL_CLOCK_BOOTTIME, CLOCK_BOOTTIME);
}

/* Absolute and relative timers on both clocks fire, never early on their clock. */
TEST_F_TIMEOUT(twheel, clock_timers_fire, 30)
{
	static const struct {
		u32 clockid, flags;
	} cases[] = {
		{ TWHEEL_CLOCK_REALTIME, TWHEEL_TIMER_ABSTIME },
		{ TWHEEL_CLOCK_REALTIME, 0 },
		{ TWHEEL_CLOCK_REALTIME, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_CANCEL_ON_SET },
		{ TWHEEL_CLOCK_BOOTTIME, TWHEEL_TIMER_ABSTIME },
		{ TWHEEL_CLOCK_BOOTTIME, 0 },
	};
	unsigned int wait = 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clockid_t clk = (clockid_t)cases[i].clockid;
		bool abs = cases[i].flags & TWHEEL_TIMER_ABSTIME;
		struct twheel_event ev;
		u64 id, t0, dl, value;

		t0 = clock_ns(clk);
		value = abs ? t0 + 300 * NSEC_PER_MSEC : 300 * NSEC_PER_MSEC;
		ASSERT_EQ(0, twheel_schedule_clock(&tw, cases[i].clockid, value, 0, cases[i].flags, i, &id));
		ASSERT_TRUE(wait_one(fd, &ev, wait, NULL, "clock timer"));
		dl = abs ? value : ev.deadline;
		EXPECT_TRUE(check_clock_event(&ev, id, dl, clock_ns(clk)))
			TH_LOG("case %zu: clock %u flags %#x", i, cases[i].clockid,
			       cases[i].flags);
		/* relative: the deadline is at least the delay after the call */
		if (!abs)
			EXPECT_TRUE(ev.deadline >= t0 + 300 * NSEC_PER_MSEC)
				TH_LOG("relative deadline %llu < %llu + 300 ms",
				       (unsigned long long)ev.deadline,
				       (unsigned long long)t0);
		EXPECT_EQ(i, ev.user_data);
		/* fired one-shot timer: gone once read */
		EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
	}
	EXPECT_EQ(0, tw_timers(&tw));
}

/* Cancel, MODIFY across clocks, and close with clock timers pending. */
TEST_F_TIMEOUT(twheel, clock_cancel_modify, 30)
{
	unsigned int wait = 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_timer_spec s;
	struct twheel_event ev;
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id, id2, dl;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, 200 * NSEC_PER_MSEC, 0, 0, 1, &id));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME, 200 * NSEC_PER_MSEC, 0, 0, 2, &id));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	no_events(fd, 500, "cancelled clock timers");

	/* MONOTONIC -> REALTIME -> BOOTTIME -> MONOTONIC, pending throughout */
	ASSERT_EQ(0, twheel_schedule(&tw, FAR_FUTURE, 0, 0, 3, &id));
	s = mkspec(FAR_FUTURE, 0, 4, 0);
	s.id = id;
	s.clockid = TWHEEL_CLOCK_REALTIME;
	EXPECT_EQ(1, xioctl(fd, TWHEEL_IOC_MODIFY, &s));
	s.clockid = TWHEEL_CLOCK_BOOTTIME;
	EXPECT_EQ(1, xioctl(fd, TWHEEL_IOC_MODIFY, &s));
	s.clockid = TWHEEL_CLOCK_MONOTONIC;
	EXPECT_EQ(1, xioctl(fd, TWHEEL_IOC_MODIFY, &s));
	/* and onto BOOTTIME for 300 ms: fires there */
	s.clockid = TWHEEL_CLOCK_BOOTTIME;
	s.flags = TWHEEL_TIMER_ABSTIME;
	dl = clock_ns(CLOCK_BOOTTIME) + 300 * NSEC_PER_MSEC;
	s.value = dl;
	EXPECT_EQ(1, xioctl(fd, TWHEEL_IOC_MODIFY, &s));
	ASSERT_TRUE(wait_one(fd, &ev, wait, NULL, "modified onto BOOTTIME"));
	EXPECT_TRUE(check_clock_event(&ev, id, dl, clock_ns(CLOCK_BOOTTIME)));
	EXPECT_EQ(4, ev.user_data);

	/* a batch of clock timers, some cancelled, the rest left to close() */
	for (int i = 0; i < 64; i++) {
		ASSERT_EQ(0, twheel_schedule_clock(&tw, i & 1 ? TWHEEL_CLOCK_REALTIME :
					    TWHEEL_CLOCK_BOOTTIME, FAR_FUTURE, 0, 0, 5, &id2));
		if (i % 3 == 0)
			EXPECT_EQ(1, twheel_cancel(&tw, id2));
	}
	EXPECT_EQ(0, close(fd));
}

/* A batch mixing the clocks: links for the clock timers, a failure stops it. */
TEST_F_TIMEOUT(twheel, clock_batch, 30)
{
	unsigned int wait = 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_event ev[8];
	struct twheel_op ops[8];
	struct twheel tw;
	int fd = tw_open(&tw), n;
	u64 seen_boot;

	ASSERT_TRUE(fd >= 0);
	fill_schedule_ops(ops, 8, 200 * NSEC_PER_MSEC, 100);
	for (int i = 0; i < 8; i++)
		ops[i].spec.clockid = i % 3 == 0 ? TWHEEL_CLOCK_MONOTONIC :
				      i % 3 == 1 ? TWHEEL_CLOCK_REALTIME : TWHEEL_CLOCK_BOOTTIME;
	/* the last one is refused: cancel-on-set on CLOCK_BOOTTIME */
	ops[7].spec.clockid = TWHEEL_CLOCK_BOOTTIME;
	ops[7].spec.flags = TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_ABSTIME |
			    TWHEEL_TIMER_CANCEL_ON_SET;
	ops[7].spec.period = NSEC_PER_SEC;
	EXPECT_EQ(7, tw_batch(fd, ops, 8));
	EXPECT_EQ(-EINVAL, ops[7].result);
	EXPECT_EQ(7, tw_timers(&tw));
	n = wait_events(fd, ev, 7, wait, NULL);
	seen_boot = clock_ns(CLOCK_BOOTTIME);
	ASSERT_EQ(7, n);
	for (int i = 0; i < n; i++) {
		u32 k = (u32)(ev[i].user_data - 100);

		ASSERT_TRUE(k < 7);
		EXPECT_EQ(ops[k].spec.id, ev[i].id);
		EXPECT_TRUE(ev[i].fired >= ev[i].deadline)
			TH_LOG("op %u fired EARLY on its clock", k);
		EXPECT_EQ(0, ev[i].flags);
		if (ops[k].spec.clockid == TWHEEL_CLOCK_BOOTTIME)
			EXPECT_TRUE(seen_boot >= ev[i].deadline);
	}
	EXPECT_EQ(0, tw_timers(&tw));
}

/* REALTIME, clock set forward past the deadline: fires promptly. */
TEST_F_TIMEOUT(twheel, clock_realtime_set_forward, 30)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_event ev[2];
	struct wall_save w;
	u64 id, id2, dl, set_at, seen = 0;
	struct twheel tw;
	int fd = tw_open(&tw), r, n;

	ASSERT_TRUE(fd >= 0);
	wall_save(&w);
	dl = w.real + 3600 * NSEC_PER_SEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, 0, TWHEEL_TIMER_ABSTIME, 1, &id));
	/* a relative one: an hour from now on the wall clock, moved too */
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, 3600 * NSEC_PER_SEC, 0, 0, 2, &id2));
	r = wall_shift(3601LL * NSEC_PER_SEC);
	if (r == -EPERM)
		SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
	set_at = now_ns();
	n = r ? 0 : wait_events(fd, ev, 2, wait, &seen);
	wall_restore(&w);

	ASSERT_EQ(0, r);
	ASSERT_EQ(2, n) TH_LOG("no events within %u ms of the clock set", wait);
	for (int i = 0; i < 2; i++) {
		EXPECT_TRUE(ev[i].fired >= ev[i].deadline)
			TH_LOG("fired EARLY: %llu < %llu", (unsigned long long)ev[i].fired,
			       (unsigned long long)ev[i].deadline);
		EXPECT_EQ(0, ev[i].flags);
		EXPECT_EQ(ev[i].id == id ? dl : ev[i].deadline, ev[i].deadline);
	}
	diag("set forward: both events read %llu ms after the set",
	     (unsigned long long)((seen - set_at) / NSEC_PER_MSEC));
	EXPECT_EQ(0, tw_timers(&tw));
}

/* REALTIME, clock set backward: the timer waits for the wall clock. */
TEST_F_TIMEOUT(twheel, clock_realtime_set_backward, 40)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_event ev;
	struct wall_save w;
	u64 id, dl, wall_read = 0;
	struct twheel tw;
	int fd = tw_open(&tw), r, n = 0, early;

	ASSERT_TRUE(fd >= 0);
	wall_save(&w);
	dl = w.real + 1500 * NSEC_PER_MSEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, 0, TWHEEL_TIMER_ABSTIME, 1, &id));
	/* 20 s back: the deadline is 21.5 s away on the wall clock */
	r = wall_shift(-20LL * NSEC_PER_SEC);
	if (r == -EPERM)
		SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
	/* past the monotonic time the deadline had before the set */
	early = r ? 0 : wait_events(fd, &ev, 1, 1500 + wait, NULL);
	if (early)
		print_event("fired while the wall clock was 20 s back", &ev);
	/* now forward again (past dl): it fires */
	wall_restore(&w);
	if (!early)
		n = wait_events(fd, &ev, 1, wait, NULL);
	wall_read = clock_ns(CLOCK_REALTIME);

	ASSERT_EQ(0, r);
	EXPECT_EQ(0, early) TH_LOG("the timer fired before the wall clock reached its deadline");
	ASSERT_EQ(1, early + n) TH_LOG("no event after the clock was restored");
	EXPECT_TRUE(check_clock_event(&ev, id, dl, wall_read));
}

/* CANCEL_ON_SET: a set ends the timer with TWHEEL_EVENT_CLOCK_SET. */
TEST_F_TIMEOUT(twheel, clock_realtime_cancel_on_set, 30)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_event ev[4];
	struct wall_save w;
	u64 id_cos, id_plain, dl;
	struct twheel tw;
	int fd = tw_open(&tw), r, n = 0, later = 0;

	ASSERT_TRUE(fd >= 0);
	wall_save(&w);
	dl = w.real + 3600 * NSEC_PER_SEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, 0, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_CANCEL_ON_SET, 1, &id_cos));
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, 0, TWHEEL_TIMER_ABSTIME, 2, &id_plain));
	/* one second forward: not past either deadline */
	r = wall_shift(NSEC_PER_SEC);
	if (r == -EPERM)
		SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
	if (!r)
		n = wait_events(fd, ev, 1, wait, NULL);
	wall_restore(&w);
	/* the restore is another set: nothing more comes */
	if (!r)
		later = wait_events(fd, ev + 1, 3, 500, NULL);

	ASSERT_EQ(0, r);
	ASSERT_EQ(1, n) TH_LOG("no TWHEEL_EVENT_CLOCK_SET event within %u ms", wait);
	EXPECT_EQ(id_cos, ev[0].id);
	EXPECT_EQ(TWHEEL_EVENT_CLOCK_SET, ev[0].flags);
	EXPECT_EQ(dl, ev[0].deadline);
	EXPECT_EQ(1, ev[0].count);
	EXPECT_EQ(1, ev[0].user_data);
	EXPECT_TRUE(ev[0].fired < ev[0].deadline);
	EXPECT_EQ(0, later);
	/* the ended timer is gone; the plain one is still pending */
	EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id_cos));
	EXPECT_EQ(1, twheel_cancel(&tw, id_plain));
	EXPECT_EQ(0, tw_timers(&tw));
}

/*
 * The checks of an event of a periodic clock timer whose first deadline
 * was @dl0: on the grid of its clock, never early, flagged periodic.
 */
static bool check_clock_periodic_event(const struct twheel_event *e, u64 id, u64 dl0,
				       u64 period, u64 read_clk)
{
	bool ok = true;

	ok &= CHECK_EQ(e->id, id);
	ok &= CHECK(e->flags & TWHEEL_EVENT_PERIODIC, "flags %#x lack PERIODIC", e->flags);
	ok &= CHECK(e->count >= 1, "count %llu", (unsigned long long)e->count);
	ok &= CHECK(e->deadline >= dl0 && (e->deadline - dl0) % period == 0,
		    "deadline %llu not on the grid %llu + k * %llu",
		    (unsigned long long)e->deadline, (unsigned long long)dl0,
		    (unsigned long long)period);
	ok &= clock_event_not_early(e, read_clk);
	if (!ok)
		print_event("periodic clock event", e);
	return ok;
}

/*
 * Periodic timers on both clocks (fixed rate, absolute and relative, and
 * fixed delay): they fire at their period on their clock, never early,
 * the fixed-rate ones on the grid of their first deadline; the counts add
 * up to the periods that passed.
 */
TEST_F_TIMEOUT(twheel, clock_periodic_fires, 60)
{
	static const struct {
		u32 clockid, flags;
	} cases[] = {
		{ TWHEEL_CLOCK_REALTIME, TWHEEL_TIMER_ABSTIME },
		{ TWHEEL_CLOCK_REALTIME, 0 },
		{ TWHEEL_CLOCK_REALTIME, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_CANCEL_ON_SET },
		{ TWHEEL_CLOCK_REALTIME, TWHEEL_TIMER_FIXED_DELAY },
		{ TWHEEL_CLOCK_BOOTTIME, TWHEEL_TIMER_ABSTIME },
		{ TWHEEL_CLOCK_BOOTTIME, 0 },
		{ TWHEEL_CLOCK_BOOTTIME, TWHEEL_TIMER_FIXED_DELAY },
	};
	const u64 period = 100 * NSEC_PER_MSEC;
	unsigned int wait = 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel tw;
	int fd = tw_open(&tw);

	ASSERT_TRUE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clockid_t clk = (clockid_t)cases[i].clockid;
		unsigned int flags = cases[i].flags | TWHEEL_TIMER_PERIODIC;
		bool abs = flags & TWHEEL_TIMER_ABSTIME;
		bool rate = !(flags & TWHEEL_TIMER_FIXED_DELAY);
		struct twheel_event ev;
		u64 id, t0, dl0 = 0, value, total = 0, last = 0, t1;
		int reads = 0;

		t0 = clock_ns(clk);
		value = abs ? t0 + period : period;
		ASSERT_EQ(0, twheel_schedule_clock(&tw, cases[i].clockid, value, period, flags,
						   i, &id));
		while (reads < 5) {
			ASSERT_TRUE(wait_one(fd, &ev, wait, NULL, "periodic clock timer"));
			if (!reads)
				dl0 = abs ? value : ev.deadline - (rate ? ev.count - 1 : 0) * period;
			if (rate) {
				EXPECT_TRUE(check_clock_periodic_event(&ev, id, dl0, period,
								       clock_ns(clk)))
					TH_LOG("case %zu: clock %u flags %#x", i, cases[i].clockid,
					       flags);
			} else {
				EXPECT_TRUE(ev.fired >= ev.deadline && ev.deadline > last &&
					    (ev.flags & TWHEEL_EVENT_PERIODIC))
					TH_LOG("case %zu: fixed delay: deadline %llu after %llu",
					       i, (unsigned long long)ev.deadline,
					       (unsigned long long)last);
			}
			EXPECT_EQ(i, ev.user_data);
			/* the first deadline is at least a period after the call */
			if (!reads && (rate || ev.count == 1))
				EXPECT_TRUE(dl0 >= t0 + period);
			last = ev.deadline;
			total += ev.count;
			reads++;
		}
		EXPECT_EQ(1, twheel_cancel(&tw, id));
		/*
		 * An expiry between the last read and the cancel stays
		 * readable, as one event with TWHEEL_EVENT_CANCELLED (the
		 * cancel waits for a running callback): the timer's last
		 * (ci68, debug kernel: case 5 read case 4's).
		 */
		if (wait_events(fd, &ev, 1, 0, NULL) == 1) {
			EXPECT_TRUE(ev.id == id && ev.user_data == i &&
				    (ev.flags & TWHEEL_EVENT_CANCELLED))
				print_event("after the cancel", &ev);
			if (ev.deadline > last)
				last = ev.deadline;
			total += ev.count;
		}
		t1 = clock_ns(clk);
		/* fixed rate: every period up to the last deadline counted once */
		if (rate) {
			EXPECT_EQ((last - dl0) / period + 1, total)
				TH_LOG("case %zu: %llu expiries counted, deadlines %llu apart",
				       i, (unsigned long long)total,
				       (unsigned long long)(last - dl0));
		}
		EXPECT_TRUE(t1 - t0 >= total * period - (rate ? 0 : period));
	}
	no_events(fd, 300, "cancelled periodic clock timers");
	EXPECT_EQ(0, tw_timers(&tw));
}

/*
 * Periodic REALTIME, wall clock set forward past ten periods: one event
 * at once counting them (timerfd's overrun count), never early; restored
 * (a set backward by as much), the next expiry waits for the wall clock.
 */
TEST_F_TIMEOUT(twheel, clock_realtime_periodic_set_forward, 40)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	const u64 period = 2 * NSEC_PER_SEC;
	struct twheel_event ev, later[4];
	struct wall_save w;
	u64 id, dl, set_at, seen = 0, wall_read = 0;
	struct twheel tw;
	int fd = tw_open(&tw), r, n = 0, m = 0;

	ASSERT_TRUE(fd >= 0);
	wall_save(&w);
	dl = w.real + 500 * NSEC_PER_MSEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, period,
					   TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC, 1, &id));
	/* 21 s on: the deadlines dl .. dl + 20 s have all passed */
	r = wall_shift(21LL * NSEC_PER_SEC);
	if (r == -EPERM)
		SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
	set_at = now_ns();
	if (!r) {
		n = wait_events(fd, &ev, 1, wait, &seen);
		wall_read = clock_ns(CLOCK_REALTIME);
	}
	/* back to where it was: the next deadline is ~20 s ahead again */
	wall_restore(&w);
	if (!r)
		m = wait_events(fd, later, 4, 1500, NULL);

	ASSERT_EQ(0, r);
	ASSERT_EQ(1, n) TH_LOG("no event within %u ms of the clock set", wait);
	EXPECT_TRUE(check_clock_periodic_event(&ev, id, dl, period, wall_read));
	EXPECT_TRUE(ev.count >= 10)
		TH_LOG("a set 10 periods past the first deadline: count %llu",
		       (unsigned long long)ev.count);
	EXPECT_EQ(dl + (ev.count - 1) * period, ev.deadline);
	diag("set forward: count %llu, read %llu ms after the set",
	     (unsigned long long)ev.count, (unsigned long long)((seen - set_at) / NSEC_PER_MSEC));
	for (int i = 0; i < m; i++)
		print_event("fired while the wall clock was set back", &later[i]);
	EXPECT_EQ(0, m) TH_LOG("the next expiry came before the wall clock reached it");
	EXPECT_EQ(1, twheel_cancel(&tw, id));
	EXPECT_EQ(0, tw_timers(&tw));
}

/*
 * Periodic REALTIME, wall clock set back 20 s: no expiry until the wall
 * clock comes back to the next deadline; when restored, it goes on.
 */
TEST_F_TIMEOUT(twheel, clock_realtime_periodic_set_backward, 40)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	const u64 period = NSEC_PER_SEC;
	struct twheel_event ev, back[4];
	struct wall_save w;
	u64 id, dl, wall_at_set = 0;
	struct twheel tw;
	int fd = tw_open(&tw), r, n = 0, bad = 0;

	ASSERT_TRUE(fd >= 0);
	wall_save(&w);
	dl = w.real + 300 * NSEC_PER_MSEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, period,
					   TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC, 1, &id));
	ASSERT_TRUE(wait_one(fd, &ev, wait, NULL, "first expiry"));
	EXPECT_TRUE(check_clock_periodic_event(&ev, id, dl, period, clock_ns(CLOCK_REALTIME)));
	wall_at_set = clock_ns(CLOCK_REALTIME);
	r = wall_shift(-20LL * NSEC_PER_SEC);
	if (r == -EPERM) {
		twheel_cancel(&tw, id);
		SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
	}
	/* two periods and more: only an expiry due before the set may come */
	if (!r)
		n = wait_events(fd, back, 4, 2500, NULL);
	wall_restore(&w);
	for (int i = 0; i < n; i++) {
		if (back[i].deadline > wall_at_set) {
			print_event("fired while the wall clock was 20 s back", &back[i]);
			bad++;
		}
	}
	/* restored: it goes on, on its grid */
	if (!r)
		ASSERT_TRUE(wait_one(fd, &ev, 2000 + wait, NULL, "after the restore"));

	ASSERT_EQ(0, r);
	EXPECT_EQ(0, bad) TH_LOG("an expiry came before the wall clock reached it");
	EXPECT_TRUE(check_clock_periodic_event(&ev, id, dl, period, clock_ns(CLOCK_REALTIME)));
	EXPECT_EQ(1, twheel_cancel(&tw, id));
}

/*
 * CANCEL_ON_SET on a periodic REALTIME timer: a set ends it with one
 * event flagged TWHEEL_EVENT_CLOCK_SET, after which its id is gone. Once
 * with its event read (the timer armed), once with it unread (the timer
 * parked: the end is found by the read).
 */
TEST_F_TIMEOUT(twheel, clock_realtime_periodic_cancel_on_set, 40)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	const u64 period = 100 * NSEC_PER_MSEC;
	struct twheel_event ev[2];
	struct wall_save w;
	u64 id, dl, total;
	struct twheel tw;
	int fd = tw_open(&tw), r = 0, n, later;
	bool ended;

	ASSERT_TRUE(fd >= 0);
	for (int parked = 0; parked < 2; parked++) {
		wall_save(&w);
		dl = w.real + period;
		ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME, dl, period,
						   TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC |
						   TWHEEL_TIMER_CANCEL_ON_SET, 7, &id));
		if (parked) {
			/* the first expiry's event, left unread: the next parks it */
			struct pollfd p = { .fd = fd, .events = POLLIN };

			ASSERT_EQ(1, poll(&p, 1, (int)wait));
			usleep(250000);
		} else {
			ASSERT_TRUE(wait_one(fd, ev, wait, NULL, "first expiry"));
		}
		r = wall_shift(NSEC_PER_SEC);
		if (r == -EPERM)
			SKIP(return, "clock_settime(CLOCK_REALTIME): EPERM (not root)");
		/* expiries before the set may still come first: then the end */
		total = 0;
		ended = false;
		for (n = 0; !r && !ended && n < 20; n++) {
			if (wait_events(fd, ev, 1, wait, NULL) != 1)
				break;
			total += ev[0].count;
			ended = ev[0].flags & TWHEEL_EVENT_CLOCK_SET;
			if (!ended && ev[0].flags != TWHEEL_EVENT_PERIODIC)
				print_event("neither an expiry nor the end", ev);
		}
		wall_restore(&w);
		/* the restore is another set, which it does not see any more */
		later = r ? 0 : wait_events(fd, ev + 1, 1, 500, NULL);

		ASSERT_EQ(0, r);
		ASSERT_TRUE(ended) TH_LOG("parked %d: no TWHEEL_EVENT_CLOCK_SET event in %d events",
					 parked, n);
		EXPECT_EQ(id, ev[0].id);
		EXPECT_EQ(TWHEEL_EVENT_CLOCK_SET | TWHEEL_EVENT_PERIODIC, ev[0].flags)
			TH_LOG("parked %d: flags %#x", parked, ev[0].flags);
		/* parked: the unread expiries counted with the end */
		EXPECT_TRUE(parked ? ev[0].count >= 2 : total >= 1)
			TH_LOG("parked %d: count %llu", parked, (unsigned long long)ev[0].count);
		EXPECT_EQ(7, ev[0].user_data);
		EXPECT_EQ(0, later);
		EXPECT_EQ(-ENOENT, twheel_cancel(&tw, id));
		EXPECT_EQ(0, tw_timers(&tw));
	}
}

/*
 * BOOTTIME across a real suspend: s2idle ("freeze") with the RTC's wake
 * alarm. A timer whose CLOCK_BOOTTIME deadline passes while suspended
 * fires promptly after the resume. Where the kernel cannot suspend, or
 * CLOCK_MONOTONIC kept running (no time was injected), it is skipped:
 * the KUnit suite twheel_clock simulates the suspend instead.
 */
/*
 * Can this guest suspend to idle and be woken by its RTC? Only where asked
 * to (tests/vm/guest/run.sh asks): a guest that cannot wake up would hang
 * the whole VM until the host's timeout. Return: NULL with *@sfd open on
 * /sys/power/state and *@afd on the RTC's wakealarm, or why not.
 */
static const char *suspend_ready(int *sfd, int *afd)
{
	char states[128] = "";
	ssize_t len;

	if (!getenv("TWHEEL_TEST_SUSPEND"))
		return "TWHEEL_TEST_SUSPEND unset: no suspend attempted";
	*sfd = open("/sys/power/state", O_RDWR | O_CLOEXEC);
	if (*sfd >= 0) {
		len = read(*sfd, states, sizeof(states) - 1);
		states[len > 0 ? len : 0] = '\0';
	}
	if (*sfd < 0 || !strstr(states, "freeze")) {
		if (*sfd >= 0)
			close(*sfd);
		return "no s2idle (\"freeze\" not in /sys/power/state)";
	}
	*afd = open("/sys/class/rtc/rtc0/wakealarm", O_WRONLY | O_CLOEXEC);
	if (*afd < 0) {
		close(*sfd);
		return "no RTC wake alarm (/sys/class/rtc/rtc0/wakealarm)";
	}
	return NULL;
}

/*
 * Suspends to idle with the RTC set to wake the guest @secs from now;
 * closes both files. Return: 0 once resumed, or the errno of the RTC or
 * of the suspend.
 */
static int suspend_for(int sfd, int afd, int secs)
{
	char rel[16];
	int len = snprintf(rel, sizeof(rel), "+%d", secs), e = 0;

	if (write(afd, "0", 1) != 1 || write(afd, rel, (size_t)len) != len)
		e = errno;
	close(afd);
	if (!e && write(sfd, "freeze", 6) != 6)
		e = errno;
	close(sfd);
	return e;
}

TEST_F_TIMEOUT(twheel, clock_boottime_suspend, 60)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	u64 id, dl, b0, m0, b1, m1, resumed, seen = 0;
	struct twheel_event ev;
	struct twheel tw;
	int fd, sfd, afd, n, e;
	const char *why;

	why = suspend_ready(&sfd, &afd);
	if (why)
		SKIP(return, "%s", why);
	fd = tw_open(&tw);
	ASSERT_TRUE(fd >= 0);
	b0 = clock_ns(CLOCK_BOOTTIME);
	m0 = now_ns();
	dl = b0 + 2 * NSEC_PER_SEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME, dl, 0, TWHEEL_TIMER_ABSTIME, 1, &id));
	/* The RTC wakes it 4 s from now (it counts whole seconds). */
	e = suspend_for(sfd, afd, 4);
	if (e)
		SKIP(return, "suspend: %s", ename(e));
	resumed = now_ns();
	b1 = clock_ns(CLOCK_BOOTTIME);
	m1 = resumed;
	diag("suspend: CLOCK_BOOTTIME +%llu ms, CLOCK_MONOTONIC +%llu ms",
	     (unsigned long long)((b1 - b0) / NSEC_PER_MSEC),
	     (unsigned long long)((m1 - m0) / NSEC_PER_MSEC));
	n = wait_events(fd, &ev, 1, wait, &seen);
	ASSERT_EQ(1, n) TH_LOG("no event within %u ms of the resume", wait);
	EXPECT_TRUE(check_clock_event(&ev, id, dl, clock_ns(CLOCK_BOOTTIME)));
	if ((b1 - b0) - (m1 - m0) < NSEC_PER_SEC)
		SKIP(return, "s2idle here did not stop CLOCK_MONOTONIC (no sleep time injected): the timer fired, the suspend case is KUnit's");
	/* the deadline passed during the suspend: prompt after the resume */
	EXPECT_TRUE(seen - resumed <= g_slack_ns)
		TH_LOG("read %llu ms after the resume",
		       (unsigned long long)((seen - resumed) / NSEC_PER_MSEC));
}

/* Per-CPU counters of the wheels (debugfs), for a test's diagnostics. */
#define STAT_CPUS	8
static const int wheel_stat_cols[] = {
	STAT_EXPIRED, STAT_KICKS, STAT_YIELDS, STAT_DEFERRALS, STAT_HOLDS,
};
#define WHEEL_STATS	ARRAY_SIZE(wheel_stat_cols)

struct wheel_stats {
	long v[STAT_CPUS][WHEEL_STATS];
};

static void wheel_stats_read(struct wheel_stats *ws)
{
	for (int c = 0; c < STAT_CPUS; c++)
		for (unsigned int k = 0; k < WHEEL_STATS; k++)
			ws->v[c][k] = cpu_stat(-1, c, wheel_stat_cols[k]);
}

/* The runs of consecutive timers (user_data) in read order, 8 at most. */
static void batch_runs_diag(const struct twheel_event *ev, int n)
{
	int i = 0, runs = 0;

	while (i < n && runs++ < 8) {
		int j = i;

		while (j + 1 < n && ev[j + 1].user_data == ev[j].user_data + 1)
			j++;
		diag("read %d-%d: timers %llu-%llu, fired %+lld..%+lld us after the deadline",
		     i, j, (unsigned long long)ev[i].user_data,
		     (unsigned long long)ev[j].user_data,
		     ((long long)ev[i].fired - (long long)ev[i].deadline) / 1000,
		     ((long long)ev[j].fired - (long long)ev[j].deadline) / 1000);
		i = j + 1;
	}
}

/* What each CPU's wheel did between @a and @b, as diagnostics. */
static void wheel_stats_diag(const struct wheel_stats *a,
			     const struct wheel_stats *b)
{
	for (int c = 0; c < STAT_CPUS && b->v[c][0] >= 0; c++)
		diag("cpu %d: expired %ld, kicks %ld, runs over budget %ld, deferred %ld, held %ld",
		     c, b->v[c][0] - a->v[c][0], b->v[c][1] - a->v[c][1],
		     b->v[c][2] - a->v[c][2], b->v[c][3] - a->v[c][3],
		     b->v[c][4] - a->v[c][4]);
}

TEST_F_TIMEOUT(twheel, equal_deadlines_fifo, 30)
{
	enum { N = 1000, M = 200, TRIES = 3 };
	struct twheel tw;
	int fd = tw_open(&tw);
	struct twheel_op *ops = calloc(N, sizeof(*ops));
	struct twheel_event *ev = calloc(N, EV_SIZE);
	u64 dl, seen, t0, armed = 0, lead = 300 * NSEC_PER_MSEC;
	long long starved = -1, starved_read = -1;
	struct wheel_stats ws0, ws1;
	cpu_set_t set;
	int n, bad = 0, try;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ops && ev)
		TH_LOG("out of memory");
	/*
	 * One batch, all with the same absolute deadline, from one CPU: the
	 * order holds per CPU, and a preemptible kernel may move the thread
	 * in the middle of the batch.
	 */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	EXPECT_TRUE(sched_setaffinity(0, sizeof(set), &set) == 0)
		TH_LOG("sched_setaffinity: %s", ename(errno));
	/*
	 * Each try arms the batch, reads it and checks the order. A try
	 * whose arming outlasted its deadline is tried again, the deadline
	 * four times the arming's time ahead (5 s at most); the first that
	 * did not is judged. On the debug kernel the first 256 timers once
	 * came last (ci58: after 256-359, ci60: after all the others): the
	 * run moved 256 down, went over its time and spilled the other 744
	 * onto the expired list, and the run that came back after the
	 * deadline fired them first (the wheel's spilled list fixed it;
	 * KUnit tw_test_spill_order). A try out of order prints its shape
	 * (the runs of consecutive timers in read order), the arming's
	 * time, the expiries starved of an event record (after the batch,
	 * and before the read, which then queues theirs last) and each
	 * wheel's counters.
	 */
	for (try = 1; try <= TRIES; try++) {
		wheel_stats_read(&ws0);
		t0 = now_ns();
		dl = t0 + lead;
		for (int i = 0; i < N; i++) {
			ops[i].op = TWHEEL_OP_SCHEDULE;
			ops[i].spec = mkspec(dl, 0, (u64)i, TWHEEL_TIMER_ABSTIME);
		}
		ASSERT_EQ(N, tw_batch(fd, ops, N));
		armed = now_ns();
		starved = fdinfo_val(fd, "twheel-starved");
		n = read_all_at_once(&tw, ev, N, dl, &starved_read);
		seen = now_ns();
		wheel_stats_read(&ws1);
		bad = 0;
		for (int i = 0; i < n; i++)
			bad += ev[i].user_data != (u64)i || ev[i].id != ops[i].spec.id ||
			       ev[i].deadline != dl;
		if (armed < dl || try == TRIES)
			break;
		diag("batch try %d: %d of %d events out of order, armed in %llu ms with the deadline %llu ms ahead, %lld starved after the batch, %lld before the read: again",
		     try, bad, n, (unsigned long long)((armed - t0) / NSEC_PER_MSEC),
		     (unsigned long long)(lead / NSEC_PER_MSEC), starved, starved_read);
		if (bad) {
			batch_runs_diag(ev, n);
			wheel_stats_diag(&ws0, &ws1);
		}
		if (armed >= dl) {
			lead = 4 * (armed - t0);
			if (lead > 5 * NSEC_PER_SEC)
				lead = 5 * NSEC_PER_SEC;
		}
	}
	EXPECT_EQ(N, n);
	bad = 0;
	for (int i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		if (ev[i].user_data != (u64)i || ev[i].id != ops[i].spec.id || ev[i].deadline != dl) {
			if (bad++ < 3)
				FAIL("batch: event %d is timer %llu (id %llu, deadline %+lld ns): not in scheduling order",
				     i, (unsigned long long)ev[i].user_data,
				     (unsigned long long)ev[i].id, (long long)(ev[i].deadline - dl));
		}
	}
	if (bad) {
		FAIL("batch: %d of %d events out of scheduling order (try %d: armed in %llu ms, deadline %llu ms ahead, %lld starved after the batch, %lld before the read)",
		     bad, n, try, (unsigned long long)((armed - t0) / NSEC_PER_MSEC),
		     (unsigned long long)(lead / NSEC_PER_MSEC), starved, starved_read);
		batch_runs_diag(ev, n);
		wheel_stats_diag(&ws0, &ws1);
	}

	/* separate SCHEDULE calls from one CPU */
	dl = now_ns() + 200 * NSEC_PER_MSEC;
	for (int i = 0; i < M; i++) {
		u64 id;

		ASSERT_EQ(0, twheel_schedule(&tw, dl, 0, TWHEEL_TIMER_ABSTIME, (u64)i, &id));
		ops[i].spec.id = id;
	}
	n = read_all_at_once(&tw, ev, M, dl, NULL);
	EXPECT_EQ(M, n);
	bad = 0;
	for (int i = 0; i < n; i++) {
		if (ev[i].user_data != (u64)i || ev[i].id != ops[i].spec.id) {
			if (bad++ < 3)
				FAIL("single: event %d is timer %llu: not in scheduling order", i,
				     (unsigned long long)ev[i].user_data);
		}
	}
	if (bad)
		FAIL("single: %d of %d events out of scheduling order", bad, n);
	free(ops);
	free(ev);
}

/* ------------------------------------------------------------------ */
/* The submission ring (uapi/twheel.h, TWHEEL_RING_OFFSET)             */
/* ------------------------------------------------------------------ */

struct ring {
	int fd;
	size_t len;
	struct twheel_ring_hdr *hdr;
	struct twheel_ring_op *sq;
	struct twheel_ring_cqe *cq;
};

static size_t ring_len(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (TWHEEL_RING_MAP_BYTES + page - 1) / page * page;
}

static bool ring_map(struct ring *r, int fd)
{
	void *p;

	r->fd = fd;
	r->len = ring_len();
	p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)TWHEEL_RING_OFFSET);
	if (!CHECK(p != MAP_FAILED, "mmap of the ring: %s", ename(errno)))
		return false;
	r->hdr = p;
	r->sq = (void *)((char *)p + TWHEEL_RING_SQ_OFF);
	r->cq = (void *)((char *)p + TWHEEL_RING_CQ_OFF);
	return true;
}

/* Writes @op at the tail; not yet published. */
static void ring_put(struct ring *r, u32 *tail, unsigned char op, unsigned char flags, u32 slot,
		     u64 value, u64 user_data)
{
	struct twheel_ring_op *o = &r->sq[*tail % TWHEEL_RING_ENTRIES];

	o->op = op;
	o->flags = flags;
	o->pad = 0;
	o->slot = slot;
	o->value = value;
	o->user_data = user_data;
	o->reserved = 0;
	(*tail)++;
}

/* Publishes up to @tail; rings the doorbell if the kernel asks for it. */
static void ring_publish(struct ring *r, u32 tail)
{
	__atomic_store_n(&r->hdr->sq_tail, tail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) & TWHEEL_RING_NEED_WAKEUP)
		CHECK_RET(ioctl(r->fd, TWHEEL_IOC_RING_ENTER) ? -errno : 0, 0);
}

static u32 ring_head(struct ring *r)
{
	return __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);
}

/* Drains now: what was published has taken effect on return. */
static void ring_sync(struct ring *r)
{
	CHECK_RET(ioctl(r->fd, TWHEEL_IOC_RING_ENTER) ? -errno : 0, 0);
}

/* Room for one more op at @tail: published, drained if need be. */
static void ring_room(struct ring *r, u32 tail)
{
	if (tail - ring_head(r) >= TWHEEL_RING_ENTRIES) {
		ring_publish(r, tail);
		ring_sync(r);
	}
}

static u32 ring_cq_tail(struct ring *r)
{
	return __atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE);
}

TEST_F_TIMEOUT(twheel, ring_args, 170)
{
	struct twheel tw, twp;
	int fd = tw_open(&tw), probe = tw_open(&twp);
	size_t len = ring_len(), page = (size_t)sysconf(_SC_PAGESIZE);
	struct twheel_info info;
	struct ring r, r2;
	u64 base, units, state;
	void *p;

	ASSERT_TRUE(fd >= 0 && probe >= 0);
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	EXPECT_TRUE(info.flags & TWHEEL_INFO_RING);
	/* no ring yet */
	EXPECT_EQ(-1, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	EXPECT_EQ(ENXIO, errno);
	base = tw_user_units_settled(&twp);
	p = mmap(NULL, len + page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)TWHEEL_RING_OFFSET);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
		 (off_t)TWHEEL_RING_OFFSET);
	EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL);
	EXPECT_EQ(base, tw_user_units(&twp));

	ASSERT_TRUE(ring_map(&r, fd));
	/*
	 * The ring's pages, the kernel's own state of it (about 30 KiB, in
	 * whole pages), its poller thread's stack and task (THREAD_SIZE +
	 * 16 KiB: 32 KiB, 48 KiB under KASAN) and one u64 per slot, against
	 * the caps.
	 */
	units = tw_user_units(&twp) - base;
	state = units - (len / page + (g_max_timers * 8ULL + page - 1) / page) * page_units();
	EXPECT_TRUE(state >= (24576 + 32768) / page * page_units() &&
		    state <= (32768 + 49152) / page * page_units());
	EXPECT_EQ(0, state % page_units());
	EXPECT_EQ(TWHEEL_RING_ENTRIES, r.hdr->entries);
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP);
	EXPECT_EQ(0, r.hdr->sq_head);
	ASSERT_TRUE(ring_map(&r2, fd));
	/* one ring: the second mapping costs nothing and sees the first */
	EXPECT_EQ(units, tw_user_units(&twp) - base);
	r.hdr->sq_tail = 7;
	EXPECT_EQ(7, r2.hdr->sq_tail);
	r.hdr->sq_tail = 0;
	EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	munmap(r.hdr, len);
	munmap(r2.hdr, len);
	close(fd);
	EXPECT_EQ(base, tw_user_units(&twp));
	close(probe);
}

TEST_F_TIMEOUT(twheel, ring_arm_fire, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw), i, n = 8;
	struct twheel_event ev[8];
	u64 dl[8], seen, t0;
	struct ring r;
	u32 tail = 0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		dl[i] = t0 + (50 + 20 * i) * NSEC_PER_MSEC;
		ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 100 + i,
			 dl[i], 1000 + i);
	}
	ring_publish(&r, tail);
	/* INFO drains the ring first: the timers are there */
	EXPECT_EQ(n, tw_timers(&tw));
	EXPECT_EQ(tail, ring_head(&r));
	EXPECT_EQ(0, ring_cq_tail(&r));
	ASSERT_EQ(n, wait_events(fd, ev, n, 5000, &seen));
	for (i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		EXPECT_EQ(1000 + i, ev[i].user_data);
		EXPECT_EQ(dl[i], ev[i].deadline);
		EXPECT_EQ(1, ev[i].count);
		EXPECT_TRUE(ev[i].fired >= dl[i]);
	}
	EXPECT_EQ(0, tw_timers(&tw));

	/* a slot whose timer fired and was read is armed anew */
	dl[0] = now_ns() + 30 * NSEC_PER_MSEC;
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 100, dl[0], 7);
	ring_publish(&r, tail);
	ASSERT_EQ(1, wait_events(fd, ev, 1, 5000, &seen));
	EXPECT_EQ(7, ev[0].user_data);
	EXPECT_EQ(dl[0], ev[0].deadline);

	/*
	 * An ARM of an armed slot moves its timer (MODIFY): one event. The
	 * first deadline is far: beside a kernel build the debug kernel once
	 * took longer than its 40 ms between the two drains, and the timer
	 * fired before it was moved.
	 */
	dl[0] = now_ns() + 10 * NSEC_PER_SEC;
	dl[1] = now_ns() + 140 * NSEC_PER_MSEC;
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 5, dl[0], 8);
	ring_publish(&r, tail);
	EXPECT_EQ(1, tw_timers(&tw));
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 5, dl[1], 9);
	ring_publish(&r, tail);
	EXPECT_EQ(1, tw_timers(&tw));
	ASSERT_EQ(1, wait_events(fd, ev, 1, 5000, &seen));
	EXPECT_EQ(9, ev[0].user_data);
	EXPECT_EQ(dl[1], ev[0].deadline);
	EXPECT_TRUE(no_events(fd, 100, "one event of a moved ring timer"));
	EXPECT_EQ(0, ring_cq_tail(&r));
	munmap(r.hdr, r.len);
	close(fd);
}

TEST_F_TIMEOUT(twheel, ring_fold_cancel, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw), i;
	struct twheel_event ev;
	struct ring r;
	u32 tail = 0;
	u64 dl;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	/* arm and cancel in one drain: never armed, no event, no timer */
	for (i = 0; i < 16; i++) {
		ring_put(&r, &tail, TWHEEL_RING_ARM, 0, i, 20 * NSEC_PER_MSEC, i);
		ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, i, 0, 0);
	}
	ring_publish(&r, tail);
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(0, fdinfo_val(fd, "twheel-spare"));
	EXPECT_TRUE(no_events(fd, 150, "armed and cancelled in one drain"));
	EXPECT_EQ(32, r.hdr->drained);
	/* the whole drain folds: 200 arms, then their 200 cancels */
	for (i = 0; i < 200; i++)
		ring_put(&r, &tail, TWHEEL_RING_ARM, 0, i, 20 * NSEC_PER_MSEC, i);
	for (i = 0; i < 200; i++)
		ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, i, 0, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(0, fdinfo_val(fd, "twheel-spare"));
	EXPECT_TRUE(no_events(fd, 150, "200 armed, then cancelled, in one drain"));
	EXPECT_EQ(432, r.hdr->drained);
	EXPECT_EQ(0, ring_cq_tail(&r));

	/* in two drains: armed, then cancelled before it is due */
	dl = now_ns() + 300 * NSEC_PER_MSEC;
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 3, dl, 3);
	ring_publish(&r, tail);
	EXPECT_EQ(1, tw_timers(&tw));
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 3, 0, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_TRUE(no_events(fd, 400, "cancelled through the ring"));
	/* a cancel of a free slot does nothing and reports nothing */
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 3, 0, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(0, ring_cq_tail(&r));

	/* a cancel that races the expiry: exactly one of event, no event */
	for (i = 0; i < 20; i++) {
		dl = now_ns() + (u64)(i % 5) * NSEC_PER_MSEC;
		ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 9, dl, 100 + i);
		ring_publish(&r, tail);
		EXPECT_EQ(1, tw_timers(&tw));
		sleep_ns((u64)(i % 3) * NSEC_PER_MSEC);
		ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 9, 0, 0);
		ring_publish(&r, tail);
		if (read(fd, &ev, sizeof(ev)) == sizeof(ev)) {
			EXPECT_EQ(100 + i, ev.user_data);
			EXPECT_EQ(1, ev.count);
			EXPECT_TRUE(ev.fired >= dl);
		}
		EXPECT_EQ(0, tw_timers(&tw));
		EXPECT_TRUE(no_events(fd, 0, "a second event after the cancel"));
	}
	EXPECT_EQ(0, ring_cq_tail(&r));
	munmap(r.hdr, r.len);
	close(fd);
}

TEST_F_TIMEOUT(twheel, ring_poller, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw), i;
	struct ring r;
	u32 tail = 0;
	u64 t0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	/* the doorbell starts the poller */
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 0, FAR_FUTURE, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(tail, ring_head(&r));
	/*
	 * While it polls, ops are drained with no system call on the file.
	 * A slow guest (the debug kernel beside other guests) may let two
	 * idle ticks pass between two ops: then the poller has stopped, says
	 * so, and the doorbell drains.
	 */
	for (i = 1; i <= 3; i++) {
		ring_put(&r, &tail, TWHEEL_RING_ARM, 0, i, FAR_FUTURE, i);
		__atomic_store_n(&r.hdr->sq_tail, tail, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		t0 = now_ns();
		while (ring_head(&r) != tail && now_ns() - t0 < 5 * NSEC_PER_SEC &&
		       !(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP))
			sleep_ns(NSEC_PER_MSEC);
		if (ring_head(&r) != tail)
			CHECK_RET(ioctl(fd, TWHEEL_IOC_RING_ENTER) ? -errno : 0, 0);
		EXPECT_EQ(tail, ring_head(&r));
	}
	EXPECT_EQ(1, fdinfo_val(fd, "twheel-timers") >= 2);
	/* idle, it stops and says so */
	t0 = now_ns();
	while (!(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP) &&
	       now_ns() - t0 < 5 * NSEC_PER_SEC)
		sleep_ns(NSEC_PER_MSEC);
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP);
	EXPECT_EQ(0, fdinfo_val(fd, "twheel-ring-polling"));
	EXPECT_EQ(4, tw_timers(&tw));
	/* close while it may poll: the poller goes with the file */
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 0, 0, 0);
	ring_publish(&r, tail);
	munmap(r.hdr, r.len);
	close(fd);
}

TEST_F_TIMEOUT(twheel, ring_garbage, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw), i;
	struct twheel_ring_op *o;
	struct ring r;
	u32 tail = 0, n;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	/* malformed ops: each fails with EINVAL, echoed with its user_data */
	ring_put(&r, &tail, 0, 0, 1, 1, 1);
	ring_put(&r, &tail, 3, 0, 1, 1, 2);
	ring_put(&r, &tail, 255, 0, 1, 1, 3);
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, g_max_timers, 1, 4);
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, UINT32_MAX, 1, 5);
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_PERIODIC, 1, 1, 6);
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0x80, 1, 1, 7);
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1, 1ULL << 63, 8);
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 1, 1, 9);
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 1, 0, 0);
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1, 1, 11);
	o = &r.sq[(tail - 1) % TWHEEL_RING_ENTRIES];
	o->reserved = 1;
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1, 1, 12);
	o = &r.sq[(tail - 1) % TWHEEL_RING_ENTRIES];
	o->pad = 1;
	n = tail;
	ring_publish(&r, tail);
	EXPECT_EQ(0, tw_timers(&tw));
	EXPECT_EQ(n, ring_head(&r));
	EXPECT_EQ(n - 1, ring_cq_tail(&r));	/* all but the CANCEL of 10 */
	for (i = 0; i < (int)n - 1 && i < (int)ring_cq_tail(&r); i++) {
		EXPECT_EQ(-EINVAL, r.cq[i].result);
		EXPECT_EQ(i < 9 ? i + 1 : i + 2, (int)r.cq[i].user_data);
		EXPECT_EQ(1, r.cq[i].slot == 1 || i == 3 || i == 4);
	}
	/* random bytes: the file goes on, and nothing is left behind */
	for (i = 0; i < 4 * TWHEEL_RING_ENTRIES; i++) {
		u64 *w;

		ring_room(&r, tail);
		w = (u64 *)&r.sq[tail % TWHEEL_RING_ENTRIES];
		/* op 0-3, flags mostly 0, pad mostly 0, slot mostly in range */
		w[0] = rnd() % 4 | (rnd() % 4 ? 0 : rnd() & 0xff) << 8 |
		       (rnd() % 8 ? 0 : 1ULL) << 16 |
		       (rnd() % 8 ? rnd() % 128 : rnd() & 0xffffffffULL) << 32;
		w[1] = rnd() % (2 * FAR_FUTURE);
		w[2] = rnd();
		w[3] = rnd() & 1 ? 0 : rnd();
		tail++;
		if (tail % 64 == 0)
			ring_publish(&r, tail);
	}
	ring_publish(&r, tail);
	EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	EXPECT_EQ(tail, ring_head(&r));
	EXPECT_TRUE(tw_timers(&tw) >= 0);
	munmap(r.hdr, r.len);
	close(fd);
}

TEST_F_TIMEOUT(twheel, ring_lies, 30)
{
	struct twheel tw;
	int fd = tw_open(&tw), i;
	struct ring r;
	u32 tail = 0;

	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	/* a tail past the ring's size consumes nothing, and says so */
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1, FAR_FUTURE, 1);
	r.hdr->sq_tail = TWHEEL_RING_ENTRIES + 1;
	EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	EXPECT_EQ(0, ring_head(&r));
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_BAD_TAIL);
	r.hdr->sq_tail = UINT32_MAX;	/* behind the head */
	EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	EXPECT_EQ(0, ring_head(&r));
	EXPECT_EQ(0, tw_timers(&tw));
	/* a head the program wrote is not believed */
	r.hdr->sq_head = 12345;
	ring_publish(&r, tail);
	EXPECT_EQ(1, tw_timers(&tw));
	EXPECT_EQ(1, ring_head(&r));
	EXPECT_FALSE(r.hdr->flags & TWHEEL_RING_BAD_TAIL);

	/* a full ring: TWHEEL_RING_ENTRIES ops in one go */
	for (i = 0; i < TWHEEL_RING_ENTRIES; i++)
		ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1000 + i, FAR_FUTURE, i);
	ring_publish(&r, tail);
	EXPECT_EQ(1 + TWHEEL_RING_ENTRIES, tw_timers(&tw));
	for (i = 0; i < TWHEEL_RING_ENTRIES; i++)
		ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 1000 + i, 0, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(1, tw_timers(&tw));

	/* a completion queue whose head lies: completions are counted lost */
	r.hdr->cq_head = 5000;
	ring_put(&r, &tail, 0, 0, 0, 0, 1);
	ring_publish(&r, tail);
	ring_sync(&r);
	EXPECT_EQ(0, ring_cq_tail(&r));
	EXPECT_EQ(1, r.hdr->cq_overflow);
	/* and a full one */
	r.hdr->cq_head = 0;
	for (i = 0; i < TWHEEL_RING_ENTRIES + 3; i++) {
		ring_room(&r, tail);
		ring_put(&r, &tail, 0, 0, 0, 0, i);
	}
	ring_publish(&r, tail);
	ring_sync(&r);
	EXPECT_EQ(TWHEEL_RING_ENTRIES, ring_cq_tail(&r));
	EXPECT_EQ(4, r.hdr->cq_overflow);
	munmap(r.hdr, r.len);
	close(fd);
}

/* Local timer interrupts of @cpu so far (/proc/interrupts, LOC:), or -1. */
static long long loc_irqs(int cpu)
{
	return proc_cpu_count("/proc/interrupts", "LOC:", cpu);
}

/* @cpu's local timer interrupts while this process sleeps 1 s, or -1. */
static long long loc_irqs_1s(int cpu)
{
	long long a = loc_irqs(cpu), b;

	sleep_ns(NSEC_PER_SEC);
	b = loc_irqs(cpu);
	return a < 0 || b < a ? -1 : b - a;
}

/*
 * Waits, 10 s at most (the debug kernel under TCG), for the poller of
 * @fd's ring to stop (fdinfo twheel-ring-polling 0), then checks that it
 * stays stopped: its runs (twheel-ring-poll-runs) do not grow over another
 * 300 ms. No system call on @fd meanwhile. Return: the runs, or -1.
 */
static long long ring_poller_stopped(int fd)
{
	long long runs, again;
	u64 t0 = now_ns();

	while (fdinfo_val(fd, "twheel-ring-polling") != 0 &&
	       now_ns() - t0 < 10 * NSEC_PER_SEC)
		sleep_ns(10 * NSEC_PER_MSEC);
	if (!CHECK_EQ(fdinfo_val(fd, "twheel-ring-polling"), 0))
		return -1;
	runs = fdinfo_val(fd, "twheel-ring-poll-runs");
	sleep_ns(300 * NSEC_PER_MSEC);
	again = fdinfo_val(fd, "twheel-ring-poll-runs");
	if (!CHECK(runs >= 0 && again == runs,
		   "stopped poller: %lld runs, %lld 300 ms later", runs, again) ||
	    !CHECK_EQ(fdinfo_val(fd, "twheel-ring-polling"), 0))
		return -1;
	return runs;
}

/* Local timer interrupts in 1 s a lying ring may add to an idle file's 10%. */
#define LOC_SLACK	50

/*
 * A tail that lies brings no ops, so it neither starts the poller nor
 * keeps it going (uapi/twheel.h): once stopped, the poller stays stopped
 * while the program sleeps, and the CPU takes no more timer interrupts
 * than beside an idle file (within 10% and LOC_SLACK: the windows are
 * taken again, up to 3 times, for noise). Only the doorbell starts it
 * again.
 */
TEST_F_TIMEOUT(twheel, ring_lies_poller, 90)
{
	long long runs, loc, idle_loc, ring_loc = -1;
	int idle, fd, i, cpu = sched_getcpu();
	struct twheel tw, twi;
	bool caught = false;
	cpu_set_t set;
	struct ring r;
	u32 tail = 0;

	ASSERT_TRUE(cpu >= 0);
	/* One CPU for the program, so for its wheel and its poller's kworker */
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set))
		TH_LOG("sched_setaffinity: %s", ename(errno));
	idle = tw_open(&twi);
	ASSERT_TRUE(idle >= 0);
	/* An idle file: no ring, no timer */
	idle_loc = loc_irqs_1s(cpu);

	fd = tw_open(&tw);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	EXPECT_EQ(0, fdinfo_val(fd, "twheel-ring-poll-runs"));
	/* a lie, then the doorbell: no poller starts */
	ring_put(&r, &tail, TWHEEL_RING_ARM, 0, 1, FAR_FUTURE, 1);
	r.hdr->sq_tail = TWHEEL_RING_ENTRIES + 1;
	EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
	EXPECT_EQ(0, ring_head(&r));
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_BAD_TAIL);
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP);
	EXPECT_EQ(0, ring_poller_stopped(fd));

	/*
	 * A lie while the poller runs: a sane op and the doorbell start it,
	 * the lie follows at once. NEED_WAKEUP still clear after it (a full
	 * barrier between) means the poller had not stopped yet, so it finds
	 * the lie, and must stop on it. A slow guest may let the poller stop
	 * first (two idle granules): then again.
	 */
	for (i = 0; i < 50 && !caught; i++) {
		tail = ring_head(&r);
		/* a CANCEL of a free slot: consumed, and does nothing */
		ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 0, 0, 0);
		__atomic_store_n(&r.hdr->sq_tail, tail, __ATOMIC_RELEASE);
		ASSERT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
		__atomic_store_n(&r.hdr->sq_tail, tail + TWHEEL_RING_ENTRIES + 1,
				 __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		caught = !(__atomic_load_n(&r.hdr->flags, __ATOMIC_RELAXED) &
			   TWHEEL_RING_NEED_WAKEUP);
		if (!caught && ring_poller_stopped(fd) < 0)
			break;
	}
	ASSERT_TRUE(caught)
		TH_LOG("the poller always stopped before the lie (%d tries)", i);
	runs = ring_poller_stopped(fd);
	EXPECT_TRUE(runs >= 1);
	diag("poller runs: %lld, the lie found by try %d", runs, i);
	EXPECT_EQ(tail, ring_head(&r));
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_BAD_TAIL);
	EXPECT_TRUE(r.hdr->flags & TWHEEL_RING_NEED_WAKEUP);

	/* while the program sleeps: an idle file's timer interrupts */
	for (i = 0; i < 3 && idle_loc >= 0; i++) {
		loc = loc_irqs_1s(cpu);
		if (loc >= 0 && (ring_loc < 0 || loc < ring_loc))
			ring_loc = loc;
		if (ring_loc >= 0 && ring_loc <= idle_loc + idle_loc / 10 + LOC_SLACK)
			break;
	}
	EXPECT_EQ(runs, fdinfo_val(fd, "twheel-ring-poll-runs"));

	/* the doorbell with a sane tail again: drained, polls, stops */
	tail = ring_head(&r);
	ring_put(&r, &tail, TWHEEL_RING_CANCEL, 0, 0, 0, 0);
	ring_publish(&r, tail);
	EXPECT_EQ(tail, ring_head(&r));
	EXPECT_FALSE(r.hdr->flags & TWHEEL_RING_BAD_TAIL);
	EXPECT_TRUE(ring_poller_stopped(fd) > runs);
	munmap(r.hdr, r.len);
	close(fd);

	/* the idle file again, the ring gone: the higher of the two counts */
	loc = loc_irqs_1s(cpu);
	if (loc > idle_loc)
		idle_loc = loc;
	close(idle);
	if (idle_loc < 0 || ring_loc < 0) {
		diag("no LOC: line for CPU %d in /proc/interrupts: not compared", cpu);
	} else if (g_granularity_ns > 5 * NSEC_PER_MSEC) {
		diag("granularity %llu ns: a polling ring would add too few interrupts to tell",
		     (unsigned long long)g_granularity_ns);
	} else {
		diag("CPU %d timer interrupts in 1 s: idle file %lld, lying ring %lld",
		     cpu, idle_loc, ring_loc);
		EXPECT_TRUE(ring_loc <= idle_loc + idle_loc / 10 + LOC_SLACK)
			TH_LOG("CPU %d, timer interrupts in 1 s: %lld with a lying ring, %lld idle",
			       cpu, ring_loc, idle_loc);
	}
}

struct ring_thr {
	struct ring *r;
	int id;
	volatile bool *stop;
};

/* Writes ops and tails as it likes: the ring's other writer. */
static void *thr_ring_writer(void *p)
{
	struct ring_thr *t = p;
	u64 x = 0x9e3779b97f4a7c15ULL * (u64)(t->id + 1);
	u32 tail;

	while (!*t->stop) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		tail = __atomic_load_n(&t->r->hdr->sq_tail, __ATOMIC_RELAXED);
		ring_put(t->r, &tail, (x & 1) + 1, 0, (u32)(x >> 8) % 64,
			 (x >> 16) % (2 * NSEC_PER_MSEC), x);
		if (x & 0x100)
			tail += (u32)(x >> 40);	/* lies, now and then */
		__atomic_store_n(&t->r->hdr->sq_tail, tail, __ATOMIC_RELEASE);
		if ((x & 0xf) == 0)
			ioctl(t->r->fd, TWHEEL_IOC_RING_ENTER);
	}
	return NULL;
}

TEST_F_TIMEOUT(twheel, ring_lib, 30)
{
	struct twheel tw;
	struct twheel_event ev[4];
	struct twheel_ring_cqe cqe;
	u64 dl = now_ns() + 80 * NSEC_PER_MSEC, seen;
	int fd = tw_open(&tw), i, n;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_ring_init(&tw));
	/* four arms, one cancelled in the same submission: three records */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, twheel_ring_arm(&tw, 10 + i, dl + i * NSEC_PER_MSEC,
					     TWHEEL_TIMER_ABSTIME, 500 + i));
	ASSERT_EQ(0, twheel_ring_cancel(&tw, 11));
	ASSERT_EQ(-EINVAL, twheel_ring_arm(&tw, g_max_timers, 1, 0, 0));
	ASSERT_EQ(0, twheel_ring_submit(&tw));
	EXPECT_EQ(3, tw_timers(&tw));
	n = wait_events(fd, ev, 3, 5000, &seen);
	ASSERT_EQ(3, n);
	for (i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		EXPECT_TRUE(ev[i].user_data == 500 || ev[i].user_data == 502 ||
			    ev[i].user_data == 503);
		EXPECT_TRUE(ev[i].fired >= dl);
	}
	EXPECT_TRUE(no_events(fd, 50, "the cancelled ring timer"));
	/* the lib's ops are checked; the kernel's completions are empty */
	EXPECT_EQ(0, twheel_ring_reap(&tw, &cqe, 1));
	/* more ops than the ring holds: the library makes room */
	for (i = 0; i < 3 * TWHEEL_RING_ENTRIES; i++)
		ASSERT_EQ(0, twheel_ring_arm(&tw, (u32)i % 100, FAR_FUTURE, 0, i));
	ASSERT_EQ(0, twheel_ring_submit(&tw));
	EXPECT_EQ(100, tw_timers(&tw));
	twheel_close(&tw);
}

TEST_F_TIMEOUT(twheel, ring_threads_fork, 60)
{
	struct ring_thr t[2];
	volatile bool stop = false;
	struct twheel_event ev[16];
	pthread_t th[2];
	struct twheel tw;
	int fd, i, st, round;
	struct ring r;
	u32 tail;
	pid_t pid;
	u64 dl;

	for (round = 0; round < 3; round++) {
		fd = tw_open(&tw);
		ASSERT_TRUE(fd >= 0);
		ASSERT_TRUE(ring_map(&r, fd));
		stop = false;
		for (i = 0; i < 2; i++) {
			t[i] = (struct ring_thr){ .r = &r, .id = i, .stop = &stop };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, thr_ring_writer, &t[i]));
		}
		for (i = 0; i < 50; i++) {
			read(fd, ev, sizeof(ev));
			sleep_ns(2 * NSEC_PER_MSEC);
		}
		/* close (round 2) while they write: the mapping keeps the file */
		if (round == 2)
			close(fd);
		sleep_ns(20 * NSEC_PER_MSEC);
		stop = true;
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		/* munmap (round 1) while a drain may run: the file goes on */
		if (round == 1) {
			tail = 0;
			r.hdr->sq_tail = 0;
			ioctl(fd, TWHEEL_IOC_RING_ENTER);
			tail = ring_head(&r);
			for (i = 0; i < 64; i++)
				ring_put(&r, &tail, TWHEEL_RING_ARM, 0, i, NSEC_PER_MSEC, i);
			ring_publish(&r, tail);
			munmap(r.hdr, r.len);
			EXPECT_EQ(0, ioctl(fd, TWHEEL_IOC_RING_ENTER));
			EXPECT_TRUE(tw_timers(&tw) >= 0);
			close(fd);
			continue;
		}
		munmap(r.hdr, r.len);
		if (round != 2)
			close(fd);
	}

	/* fork: the child's ops arm the parent's timers */
	fd = tw_open(&tw);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(ring_map(&r, fd));
	dl = now_ns() + 100 * NSEC_PER_MSEC;
	fflush(stdout);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (!pid) {
		tail = 0;
		ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 4, dl, 44);
		ring_publish(&r, tail);
		_exit(0);
	}
	EXPECT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st));
	ASSERT_EQ(1, wait_events(fd, ev, 1, 5000, NULL));
	EXPECT_EQ(44, ev[0].user_data);
	EXPECT_EQ(dl, ev[0].deadline);
	EXPECT_TRUE(ev[0].fired >= dl);
	munmap(r.hdr, r.len);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Time namespaces: absolute times on the opener's namespace's clocks  */
/* ------------------------------------------------------------------ */

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

/* "twheel-timens-offsets-ns: MONO BOOT" of @fd's fdinfo; false if absent. */
static bool fdinfo_timens(int fd, long long *mono, long long *boot)
{
	static const char key[] = "twheel-timens-offsets-ns:";
	char path[64], line[128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, sizeof(key) - 1) &&
		    sscanf(line + sizeof(key) - 1, "%lld %lld", mono, boot) == 2)
			found = true;
	fclose(f);
	return found;
}

/* A timerfd on @clk armed for the absolute @deadline, or -1. */
static int timerfd_at(clockid_t clk, u64 deadline)
{
	struct itimerspec its = {
		.it_value = {
			.tv_sec = (time_t)(deadline / NSEC_PER_SEC),
			.tv_nsec = (long)(deadline % NSEC_PER_SEC),
		},
	};
	int fd = timerfd_create(clk, TFD_CLOEXEC);

	if (!CHECK(fd >= 0, "timerfd_create: %s", ename(errno)))
		return -1;
	if (!CHECK(!timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL),
		   "timerfd_settime: %s", ename(errno))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The timerfd of the control, on @clk: readable within @ms, and not before
 * its deadline on the namespace's clock. Return: when it was seen.
 */
static u64 timerfd_seen(int fd, clockid_t clk, u64 deadline, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	u64 n = 0, seen;

	CHECK(poll(&p, 1, (int)ms) == 1, "control timerfd (clock %d) not readable within %u ms",
	      (int)clk, ms);
	seen = clock_ns(clk);
	CHECK(read(fd, &n, sizeof(n)) == sizeof(n) && n == 1,
	      "control timerfd: read %llu expirations", (unsigned long long)n);
	CHECK(seen >= deadline, "control timerfd (clock %d) early: seen %llu < %llu", (int)clk,
	      (unsigned long long)seen, (unsigned long long)deadline);
	return seen;
}

enum { TN_IOCTL, TN_BOOT, TN_BATCH, TN_SHORT, TN_RING, TN_MAP, TN_PAST, TN_NR };

/*
 * In a time namespace whose offsets are @off on CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME (this process is in it): an ABSTIME timer by each path,
 * due at the namespace's now plus 300-600 ms, fires not early and within
 * the lateness bound of its namespace deadline, beside timerfds armed for
 * the same deadlines; the events and the mapped array give the
 * namespace's times. Return: the failed checks.
 */
static int timens_run(long long off)
{
	static const char *const what[TN_NR] = {
		"ioctl", "boottime", "batch", "short op", "ring", "map", "past",
	};
	u64 dl[TN_NR], ids[TN_NR] = { 0 }, mono, boot, end, seen[TN_NR][2];
	u64 map_armed;
	bool map_late = false;
	unsigned int wait = 600 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_short_op sop = { 0 };
	struct twheel_event ev[TN_NR];
	struct twheel_op op = { 0 };
	long long fmono = 0, fboot = 0;
	int fd, tfd_mono, tfd_boot, n;
	struct twheel tw;
	struct ring r;
	u64 *map;
	u32 tail = 0;

	g_failed = 0;
	fd = tw_open(&tw);
	if (fd < 0)
		return 1;
	CHECK(fdinfo_timens(fd, &fmono, &fboot), "no twheel-timens-offsets-ns in fdinfo");
	CHECK_EQ(fmono, off * (long long)NSEC_PER_SEC);
	CHECK_EQ(fboot, off * (long long)NSEC_PER_SEC);
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	if (!map || !ring_map(&r, fd))
		return g_failed;

	mono = clock_ns(CLOCK_MONOTONIC);
	boot = clock_ns(CLOCK_BOOTTIME);
	dl[TN_IOCTL] = mono + 300 * NSEC_PER_MSEC;
	dl[TN_BOOT] = boot + 300 * NSEC_PER_MSEC;
	dl[TN_BATCH] = mono + 350 * NSEC_PER_MSEC;
	dl[TN_SHORT] = mono + 400 * NSEC_PER_MSEC;
	dl[TN_RING] = mono + 450 * NSEC_PER_MSEC;
	/* Before the namespace's clock could have been: due at once. */
	dl[TN_PAST] = off > 0 ? (u64)off * NSEC_PER_SEC / 2 : 0;

	CHECK_RET(twheel_schedule(&tw, dl[TN_IOCTL], 0, TWHEEL_TIMER_ABSTIME, TN_IOCTL,
				  &ids[TN_IOCTL]), 0);
	CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME, dl[TN_BOOT], 0,
					TWHEEL_TIMER_ABSTIME, TN_BOOT, &ids[TN_BOOT]), 0);
	op.op = TWHEEL_OP_SCHEDULE;
	op.spec = mkspec(dl[TN_BATCH], 0, TN_BATCH, TWHEEL_TIMER_ABSTIME);
	CHECK_RET(tw_batch(fd, &op, 1), 1);
	ids[TN_BATCH] = op.spec.id;
	sop.op = TWHEEL_OP_SCHEDULE;
	sop.flags = TWHEEL_TIMER_ABSTIME;
	sop.value = dl[TN_SHORT];
	sop.user_data = TN_SHORT;
	CHECK_RET(tw_sbatch(fd, &sop, 1), 1);
	ids[TN_SHORT] = sop.id;
	ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 0, dl[TN_RING], TN_RING);
	ring_publish(&r, tail);
	ring_sync(&r);
	/*
	 * From the clock now, not at the start: the armings before may take
	 * longer than 200 ms on a slow guest, and a push stored after the
	 * deadline it moves may come too late for the expiry (uapi/twheel.h).
	 */
	map_armed = clock_ns(CLOCK_MONOTONIC) + 200 * NSEC_PER_MSEC;
	dl[TN_MAP] = map_armed;
	CHECK_RET(twheel_schedule(&tw, dl[TN_MAP], 0, TWHEEL_TIMER_ABSTIME, TN_MAP,
				  &ids[TN_MAP]), 0);
	/* The array holds the namespace's deadline; a push is one too. */
	if (ids[TN_MAP]) {
		CHECK_EQ(*slot_of(map, ids[TN_MAP]), dl[TN_MAP]);
		dl[TN_MAP] = map_armed + 300 * NSEC_PER_MSEC;
		*slot_of(map, ids[TN_MAP]) = dl[TN_MAP];
		map_late = clock_ns(CLOCK_MONOTONIC) >= map_armed;
		if (map_late)
			diag("timens %+llds: the push was stored after the deadline it moves", off);
	}
	CHECK_RET(twheel_schedule(&tw, dl[TN_PAST], 0, TWHEEL_TIMER_ABSTIME, TN_PAST,
				  &ids[TN_PAST]), 0);
	/* The controls: timerfds for the same deadlines. */
	tfd_mono = timerfd_at(CLOCK_MONOTONIC, dl[TN_MAP]);
	tfd_boot = timerfd_at(CLOCK_BOOTTIME, dl[TN_BOOT]);

	/* One at a time: each read's time on both clocks of the namespace. */
	end = now_ns() + wait * NSEC_PER_MSEC;
	for (n = 0; n < TN_NR; n++) {
		u64 t = now_ns();

		if (t >= end || wait_events(fd, &ev[n], 1, (unsigned int)((end - t) / NSEC_PER_MSEC),
					    NULL) != 1)
			break;
		seen[n][0] = clock_ns(CLOCK_MONOTONIC);
		seen[n][1] = clock_ns(CLOCK_BOOTTIME);
	}
	CHECK(n == TN_NR, "%d of %d events within %u ms", n, TN_NR, wait);
	for (int i = 0; i < n; i++) {
		u64 ud = ev[i].user_data;
		clockid_t clk = ud == TN_BOOT ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
		u64 want = ud == TN_PAST ? (u64)(off > 0 ? off : 0) * NSEC_PER_SEC : 0;
		u64 read_at = seen[i][ud == TN_BOOT];

		if (!CHECK(ud < TN_NR, "event with user_data %llu", (unsigned long long)ud))
			continue;
		if (ud != TN_PAST)
			want = dl[ud];
		/* A push that raced its expiry: either deadline, never earlier. */
		if (ud == TN_MAP && map_late && ev[i].deadline == map_armed)
			want = map_armed;
		/* The one due before the namespace's clock's 0: from there. */
		CHECK(ev[i].deadline == want, "%s: event deadline %llu, want %llu", what[ud],
		      (unsigned long long)ev[i].deadline, (unsigned long long)want);
		if (ud != TN_RING)
			CHECK_EQ(ev[i].id, ids[ud]);
		if (ud == TN_PAST)	/* due long before it was armed */
			CHECK(ev[i].fired >= ev[i].deadline, "past: fired %llu < deadline %llu",
			      (unsigned long long)ev[i].fired,
			      (unsigned long long)ev[i].deadline);
		else
			CHECK_EVENT(&ev[i], read_at);
		/* Never early on the namespace's clock, and reported on it. */
		if (ud != TN_PAST && read_at < want)
			FAIL("%s: read %llu us EARLY, before its namespace deadline", what[ud],
			     (unsigned long long)((want - read_at) / 1000));
		CHECK(read_at >= ev[i].fired, "%s: fired %llu is not on the namespace's clock %d",
		      what[ud], (unsigned long long)ev[i].fired, (int)clk);
		if (ud != TN_PAST)
			diag("timens %+llds: %-8s late %6llu us", off, what[ud],
			     (unsigned long long)((ev[i].fired - ev[i].deadline) / 1000));
	}
	if (tfd_mono >= 0) {
		u64 t = timerfd_seen(tfd_mono, CLOCK_MONOTONIC, dl[TN_MAP], wait);

		diag("timens %+llds: timerfd  late %6llu us (seen)", off,
		     (unsigned long long)((t - dl[TN_MAP]) / 1000));
		close(tfd_mono);
	}
	if (tfd_boot >= 0) {
		timerfd_seen(tfd_boot, CLOCK_BOOTTIME, dl[TN_BOOT], wait);
		close(tfd_boot);
	}
	munmap(map, map_len(&tw));
	munmap(r.hdr, r.len);
	close(fd);
	return g_failed;
}

/*
 * Absolute times in time namespaces of offsets -100 s and +100 s (the
 * former no further below the host's clock than its uptime allows: the
 * kernel refuses a namespace clock below 0). Each runs in a child of a
 * process that made the namespace, as a container's init is: a task
 * already in a namespace can no longer have its offsets written.
 */
TEST_F_TIMEOUT(twheel, timens_abstime, 60)
{
	long long up = (long long)(clock_ns(CLOCK_MONOTONIC) / NSEC_PER_SEC);
	long long offs[] = { up > 101 ? -100 : -(up - 1), 100 };

	if (access("/proc/self/timens_offsets", F_OK))
		SKIP(return, "no time namespaces (CONFIG_TIME_NS)");
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		char buf[96];
		int st, len;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		ASSERT_TRUE(pid >= 0);
		if (!pid) {
			int fd;

			/* A namespace for its children, offsets written before one is in it. */
			if (unshare(CLONE_NEWTIME)) {
				printf("# unshare(CLONE_NEWTIME): %s\n", ename(errno));
				_exit(100);
			}
			len = snprintf(buf, sizeof(buf), "monotonic %lld 0\nboottime %lld 0\n",
				       offs[i], offs[i]);
			fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, buf, (size_t)len) != len) {
				printf("# timens_offsets: %s\n", ename(errno));
				_exit(101);
			}
			close(fd);
			fflush(stdout);
			pid = fork();
			if (pid < 0)
				_exit(102);
			if (!pid) {
				int failed = timens_run(offs[i]);

				fflush(stdout);
				_exit(failed ? 1 : 0);
			}
			_exit(waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 103);
		}
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("offset %+lld s: status %#x", offs[i], st);
	}
}

/* ------------------------------------------------------------------ */
/* Alarm clocks: CAP_WAKE_ALARM, their base clocks, waking a suspend   */
/* ------------------------------------------------------------------ */

/* Drops CAP_WAKE_ALARM from this process's effective set. Return: 0 or -errno. */
static int drop_wake_alarm(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_WAKE_ALARM / 32].effective &= ~(1u << (CAP_WAKE_ALARM % 32));
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Pending alarmtimer hrtimers, as /proc/timer_list lists them. */
static int alarm_hrtimers(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[256];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "alarmtimer_fired") != NULL;
	fclose(f);
	return n;
}

/* Alarm timers fire on their base clock's time, never early. */
TEST_F_TIMEOUT(twheel, alarm_clocks_fire, 40)
{
	static const struct {
		u32 clockid, flags;
		clockid_t base;
	} cases[] = {
		{ TWHEEL_CLOCK_REALTIME_ALARM, TWHEEL_TIMER_ABSTIME, CLOCK_REALTIME },
		{ TWHEEL_CLOCK_REALTIME_ALARM, 0, CLOCK_REALTIME },
		{ TWHEEL_CLOCK_REALTIME_ALARM, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_CANCEL_ON_SET,
		  CLOCK_REALTIME },
		{ TWHEEL_CLOCK_BOOTTIME_ALARM, TWHEEL_TIMER_ABSTIME, CLOCK_BOOTTIME },
		{ TWHEEL_CLOCK_BOOTTIME_ALARM, 0, CLOCK_BOOTTIME },
	};
	unsigned int wait = 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	struct twheel_event ev[3];
	struct twheel_info info;
	struct twheel tw;
	int fd = tw_open(&tw);
	u64 id, ids[3], dl;

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(0, twheel_get_info(&tw, &info));
	ASSERT_TRUE(info.flags & TWHEEL_INFO_ALARM)
		TH_LOG("INFO flags %#x lack TWHEEL_INFO_ALARM", info.flags);
	/* Root opened it. */
	ASSERT_TRUE(info.flags & TWHEEL_INFO_WAKE_ALARM);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool abs = cases[i].flags & TWHEEL_TIMER_ABSTIME;
		u64 t0 = clock_ns(cases[i].base), value;

		value = abs ? t0 + 300 * NSEC_PER_MSEC : 300 * NSEC_PER_MSEC;
		ASSERT_EQ(0, twheel_schedule_clock(&tw, cases[i].clockid, value, 0, cases[i].flags,
						   i, &id));
		ASSERT_TRUE(wait_one(fd, &ev[0], wait, NULL, "alarm timer"));
		dl = abs ? value : ev[0].deadline;
		EXPECT_TRUE(check_clock_event(&ev[0], id, dl, clock_ns(cases[i].base)))
			TH_LOG("case %zu: clock %u flags %#x", i, cases[i].clockid,
			       cases[i].flags);
		if (!abs)
			EXPECT_TRUE(ev[0].deadline >= t0 + 300 * NSEC_PER_MSEC);
		EXPECT_EQ(i, ev[0].user_data);
	}
	/* Cancel-on-set is REALTIME's: not BOOTTIME_ALARM's. */
	EXPECT_EQ(-EINVAL, twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM, FAR_FUTURE, 0,
						 TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_CANCEL_ON_SET,
						 0, &id));
	/* Three far ones, the earliest cancelled; one near fires first. */
	dl = clock_ns(CLOCK_BOOTTIME);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM,
						   dl + (u64)(i + 1) * FAR_FUTURE, 0,
						   TWHEEL_TIMER_ABSTIME, 10 + i, &ids[i]));
	/*
	 * The machine's wake-up is armed: an alarmtimer hrtimer is pending
	 * (at once, or within a second if the walk queued by the wake-up of
	 * the timers above has yet to run).
	 */
	if (access("/proc/timer_list", R_OK) == 0) {
		int k = 0;

		while (alarm_hrtimers() < 1 && k++ < 100)
			idle_ms(10);
		EXPECT_TRUE(alarm_hrtimers() >= 1)
			TH_LOG("no alarmtimer_fired in /proc/timer_list within 1 s of arming");
	}
	EXPECT_EQ(1, twheel_cancel(&tw, ids[0]));
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME_ALARM, 200 * NSEC_PER_MSEC,
					   0, 0, 20, &id));
	ASSERT_TRUE(wait_one(fd, &ev[0], wait, NULL, "near alarm timer"));
	EXPECT_EQ(20, ev[0].user_data);
	EXPECT_TRUE(no_events(fd, 300, "far alarm timers"));
	EXPECT_EQ(1, twheel_cancel(&tw, ids[1]));
	EXPECT_EQ(1, twheel_cancel(&tw, ids[2]));
	EXPECT_EQ(0, tw_timers(&tw));
}

/*
 * Without CAP_WAKE_ALARM at open(): EPERM for every arming on an alarm
 * clock, by each path, after the spec's EINVALs; the other clocks work.
 * A file opened with it keeps it.
 */
TEST_F_TIMEOUT(twheel, alarm_clocks_eperm, 30)
{
	struct twheel tw, tw_priv;
	int priv = tw_open(&tw_priv), st;
	pid_t pid;

	ASSERT_TRUE(priv >= 0);
	fflush(stdout);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (!pid) {
		struct twheel_info info;
		struct twheel_op op = { 0 };
		struct twheel_timer_spec s;
		u64 id = 0, id2;
		int fd, r;

		g_failed = 0;
		r = drop_wake_alarm();
		CHECK_RET(r, 0);
		fd = tw_open(&tw);
		if (r || fd < 0)
			_exit(1);
		CHECK_RET(twheel_get_info(&tw, &info), 0);
		CHECK(!(info.flags & TWHEEL_INFO_WAKE_ALARM) && (info.flags & TWHEEL_INFO_ALARM),
		      "INFO flags %#x: want ALARM without WAKE_ALARM", info.flags);
		CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_REALTIME_ALARM,
						100 * NSEC_PER_MSEC, 0, 0, 1, &id), -EPERM);
		CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM,
						100 * NSEC_PER_MSEC, 0, 0, 1, &id), -EPERM);
		/* EINVAL first: a bad flag, cancel-on-set on BOOTTIME_ALARM */
		CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM,
						100 * NSEC_PER_MSEC, 0, 0x8000, 1, &id), -EINVAL);
		CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM,
						FAR_FUTURE, 0, TWHEEL_TIMER_ABSTIME |
						TWHEEL_TIMER_CANCEL_ON_SET, 1, &id), -EINVAL);
		/* MODIFY onto an alarm clock; a batch op */
		CHECK_RET(twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME, FAR_FUTURE, 0, 0, 2,
						&id2), 0);
		s = mkspec(FAR_FUTURE, 0, 3, 0);
		s.id = id2;
		s.clockid = TWHEEL_CLOCK_REALTIME_ALARM;
		CHECK_RET(xioctl(fd, TWHEEL_IOC_MODIFY, &s), -EPERM);
		op.op = TWHEEL_OP_SCHEDULE;
		op.spec = mkspec(FAR_FUTURE, 0, 4, 0);
		op.spec.clockid = TWHEEL_CLOCK_BOOTTIME_ALARM;
		CHECK_RET(tw_batch(fd, &op, 1), 0);
		CHECK_EQ(op.result, -EPERM);
		/* Nothing was armed but the BOOTTIME timer, still pending. */
		CHECK_EQ(tw_timers(&tw), 1);
		CHECK_RET(twheel_cancel(&tw, id2), 1);
		/* The root-opened file still arms them. */
		CHECK_RET(twheel_schedule_clock(&tw_priv, TWHEEL_CLOCK_BOOTTIME_ALARM, FAR_FUTURE,
						0, 0, 5, &id), 0);
		CHECK_RET(twheel_cancel(&tw_priv, id), 1);
		fflush(stdout);
		_exit(g_failed ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("child status %#x", st);
	EXPECT_EQ(0, tw_timers(&tw_priv));
}

/*
 * A BOOTTIME_ALARM timer wakes a suspended guest: s2idle with the RTC's
 * own wake alarm as a fallback 30 s out; the resume must come within
 * 15 s, the timer's doing, and its event be prompt and not early. Only
 * with TWHEEL_TEST_SUSPEND, as clock_boottime_suspend: a guest that
 * cannot wake hangs until the host's timeout.
 */
TEST_F_TIMEOUT(twheel, alarm_wakes_suspend, 90)
{
	unsigned int wait = 1000 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC);
	u64 id, dl, b0, b1, seen = 0;
	struct twheel_event ev;
	struct twheel tw;
	int fd, sfd, afd, e;
	const char *why;

	why = suspend_ready(&sfd, &afd);
	if (why)
		SKIP(return, "%s", why);
	fd = tw_open(&tw);
	ASSERT_TRUE(fd >= 0);
	b0 = clock_ns(CLOCK_BOOTTIME);
	dl = b0 + 4 * NSEC_PER_SEC;
	ASSERT_EQ(0, twheel_schedule_clock(&tw, TWHEEL_CLOCK_BOOTTIME_ALARM, dl, 0,
					   TWHEEL_TIMER_ABSTIME, 1, &id));
	/* The RTC's own alarm, 30 s out, is only the fallback. */
	e = suspend_for(sfd, afd, 30);
	if (e)
		SKIP(return, "suspend: %s", ename(e));
	b1 = clock_ns(CLOCK_BOOTTIME);
	diag("alarm suspend: resumed after %llu ms of CLOCK_BOOTTIME",
	     (unsigned long long)((b1 - b0) / NSEC_PER_MSEC));
	EXPECT_TRUE(b1 - b0 < 15 * NSEC_PER_SEC)
		TH_LOG("woken after %llu ms: by the RTC's fallback, not the alarm",
		       (unsigned long long)((b1 - b0) / NSEC_PER_MSEC));
	ASSERT_EQ(1, wait_events(fd, &ev, 1, wait + 5000, &seen));
	EXPECT_TRUE(check_clock_event(&ev, id, dl, clock_ns(CLOCK_BOOTTIME)));
	afd = open("/sys/class/rtc/rtc0/wakealarm", O_WRONLY | O_CLOEXEC);
	if (afd >= 0) {
		EXPECT_TRUE(write(afd, "0", 1) == 1);
		close(afd);
	}
}

/* ------------------------------------------------------------------ */
/* main: twheel_test's command line on the harness                    */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: twheel_test [-l | -h | FILTER | harness options]\n"
		"  Runs the /dev/twheel ABI tests whose name contains FILTER (all without one)\n"
		"  and prints KTAP; exit status 0 iff all passed.\n"
		"  -l, --list   list the test names\n"
		"  -h, --help   this text\n"
		"  -t, -T, -r, ...  the kselftest harness's own filter options\n"
		"environment: TWHEEL_TEST_SLACK_MS (lateness bound, default 2000),\n"
		"             TWHEEL_TEST_SEED (random delays),\n"
		"             TWHEEL_TEST_MANY (timers of many_timers, default 10000)\n");
}

/* "fixture.test", the name the harness reports */
static const char *test_name(const struct __fixture_metadata *f,
			     const struct __test_metadata *t)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s.%s", f->name, t->name);
	return buf;
}

#define for_each_test(f, t)					\
	for ((f) = __fixture_list; (f); (f) = (f)->next)	\
		for ((t) = (f)->tests; (t); (t) = (t)->next)

/* ------------------------------------------------------------------ */
/* Checkpoint and restore: twheelctl dump and restore                  */
/* ------------------------------------------------------------------ */

/* The kinds of timer of the checkpoint test, CR_EACH of each. */
enum {
	CR_ONESHOT,	/* CLOCK_MONOTONIC, due after the restore */
	CR_FIRED,	/* fired before the dump, its event unread */
	CR_PERIODIC,	/* fixed rate, overruns unread at the dump */
	CR_REAL,	/* CLOCK_REALTIME, absolute */
	CR_BOOT_PER,	/* CLOCK_BOOTTIME, periodic */
	CR_SLACK0,	/* slack 0: hrtimer's precision */
	CR_MAP,		/* pushed later through the deadline array */
	CR_RING,	/* armed through the ring */
	CR_ORPHAN,	/* fired, then cancelled: only its event is left */
	CR_ALARM,	/* CLOCK_BOOTTIME_ALARM (one-shot MONOTONIC without the cap) */
	CR_KINDS
};

#define CR_EACH		100
#define CR_TIMERS	(CR_KINDS * CR_EACH)
#define CR_FD		17	/* the file's number, dumped and restored */
#define CR_EVENTFD	18	/* its eventfd's */

static const char *const cr_kind_name[CR_KINDS] = {
	"oneshot", "fired", "periodic", "realtime", "boot-periodic", "slack0",
	"mapped", "ring", "orphan", "alarm",
};

/* What the checkpoint test's child made, for the restored process to check. */
struct cr_want {
	u64 id;
	u64 user_data;
	u64 deadline;	/* the first, on @clockid (CR_MAP: as pushed) */
	u64 period;
	u32 kind;
	u32 clockid;
	/*
	 * CR_MAP: the push was stored after the deadline it moves had come
	 * (an arming slower than the deadline's distance, as on the debug
	 * kernel beside other guests): the expiry may have read the slot
	 * before the store, and either deadline is right.
	 */
	u64 armed_deadline;
	u32 push_late;
	u32 pad;
};

struct cr_wants {
	u32 n;
	u32 sq_head;	/* the ring's, at the dump */
	u64 arm_ns;	/* how long arming them all took */
	struct cr_want w[CR_TIMERS];
};

static int cr_verify(const char *path);

/*
 * The child of the checkpoint test: CR_TIMERS timers, then it stops
 * (SIGSTOP) to be dumped by twheelctl; or, for CRIU (make check's criu
 * test, TWHEEL_CR_MAKE), it says so in PATH.ready and waits for SIGUSR1,
 * dumped and restored meanwhile, to check its own file and write the
 * verdict in PATH.result.
 */
static int cr_make(const char *path, bool criu)
{
	static struct cr_wants cw;
	u64 mono, real, boot, *map;
	struct twheel_eventfd e = { .fd = CR_EVENTFD };
	struct twheel tw;
	struct ring r;
	u32 tail = 0;
	bool alarm;
	int fd, efd, out;

	if (twheel_open(&tw, 0) < 0 || dup2(tw.fd, CR_FD) != CR_FD)
		return 1;
	close(tw.fd);
	tw.fd = CR_FD;
	fd = CR_FD;
	alarm = tw.info.flags & TWHEEL_INFO_WAKE_ALARM;
	efd = eventfd(0, 0);
	/* One number only: the dump names the first it finds. */
	if (efd < 0 || dup2(efd, CR_EVENTFD) != CR_EVENTFD || close(efd) ||
	    ioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e))
		return 2;
	map = tw_map(&tw, PROT_READ | PROT_WRITE);
	if (!map || !ring_map(&r, fd))
		return 3;
	mono = clock_ns(CLOCK_MONOTONIC);
	real = clock_ns(CLOCK_REALTIME);
	boot = clock_ns(CLOCK_BOOTTIME);
	for (u32 i = 0; i < CR_TIMERS; i++) {
		struct cr_want *w = &cw.w[i];
		u32 k = i % CR_KINDS, j = i / CR_KINDS;
		/* After the restore, spread over 0.8 s. */
		u64 later = 1500 * NSEC_PER_MSEC + j * 8 * NSEC_PER_MSEC;
		int ret = 0;

		w->kind = k;
		w->user_data = 0xc0de000000000000ULL | i;
		w->clockid = TWHEEL_CLOCK_MONOTONIC;
		w->deadline = mono + later;
		switch (k) {
		case CR_FIRED:
		case CR_ORPHAN:
			w->deadline = mono + 20 * NSEC_PER_MSEC;
			break;
		case CR_PERIODIC:
			w->deadline = mono + 20 * NSEC_PER_MSEC;
			w->period = 100 * NSEC_PER_MSEC;
			break;
		case CR_REAL:
			w->clockid = TWHEEL_CLOCK_REALTIME;
			w->deadline = real + later;
			break;
		case CR_BOOT_PER:
			w->clockid = TWHEEL_CLOCK_BOOTTIME;
			w->deadline = boot + later;
			w->period = 150 * NSEC_PER_MSEC;
			break;
		case CR_MAP:
			/*
			 * From now, not from the loop's start: the ring's
			 * timers before it wait for the kernel's drain, which
			 * took the loop past 1.5 s on the debug kernel beside
			 * other guests, and a push stored after the deadline it
			 * moves may come too late.
			 */
			w->deadline = clock_ns(CLOCK_MONOTONIC) + later;
			break;
		case CR_ALARM:
			if (alarm) {
				w->clockid = TWHEEL_CLOCK_BOOTTIME_ALARM;
				w->deadline = boot + later;
			}
			break;
		}
		if (k == CR_RING) {
			ring_put(&r, &tail, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, i,
				 w->deadline, w->user_data);
			ring_publish(&r, tail);
			ring_sync(&r);
			continue;
		}
		if (k == CR_SLACK0)
			ret = twheel_schedule_slack(&tw, TWHEEL_CLOCK_MONOTONIC, w->deadline, 0,
						    0, TWHEEL_TIMER_ABSTIME, w->user_data, &w->id);
		else
			ret = twheel_schedule_clock(&tw, (int)w->clockid, w->deadline,
						    w->period, TWHEEL_TIMER_ABSTIME |
						    (w->period ? TWHEEL_TIMER_PERIODIC : 0),
						    w->user_data, &w->id);
		if (ret)
			return 4;
		if (k == CR_MAP) {
			/* Due before the dump as armed; pushed past the restore. */
			w->armed_deadline = w->deadline;
			w->deadline += 200 * NSEC_PER_MSEC;
			*slot_of(map, w->id) = w->deadline;
			w->push_late = clock_ns(CLOCK_MONOTONIC) >= w->armed_deadline;
		}
	}
	cw.arm_ns = clock_ns(CLOCK_MONOTONIC) - mono;
	/* The ring's ids: the kernel's, read back through RING_STATE. */
	{
		static u64 ids[1u << 20];
		struct twheel_ring_state rs = { .ids = (uintptr_t)ids,
						.nslots = 1u << 20 };

		if (tw.info.max_timers > rs.nslots ||
		    ioctl(fd, TWHEEL_IOC_RING_STATE, &rs))
			return 5;
		for (u32 i = CR_RING; i < CR_TIMERS; i += CR_KINDS)
			cw.w[i].id = ids[i];
		cw.sq_head = rs.sq_head;
	}
	/* Let the early ones fire, then orphan some, and stop. */
	usleep(200 * 1000);
	for (u32 i = CR_ORPHAN; i < CR_TIMERS; i += CR_KINDS)
		if (twheel_cancel(&tw, cw.w[i].id) != 0)
			return 6;
	cw.n = CR_TIMERS;
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0 || write(out, &cw, sizeof(cw)) != (ssize_t)sizeof(cw) || close(out))
		return 7;
	fflush(stdout);
	if (criu) {
		char file[256];
		sigset_t set;
		int sig, verdict;
		FILE *f;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		snprintf(file, sizeof(file), "%s.ready", path);
		f = fopen(file, "w");
		if (!f || fclose(f))
			return 9;
		sigwait(&set, &sig);
		/* Its output in a file of its own, made after the restore. */
		snprintf(file, sizeof(file), "%s.out", path);
		if (!freopen(file, "w", stdout))
			return 11;
		setvbuf(stdout, NULL, _IOLBF, 0);
		verdict = cr_verify(path);
		snprintf(file, sizeof(file), "%s.result", path);
		f = fopen(file, "w");
		if (!f || fprintf(f, "%d\n", verdict) < 0 || fclose(f))
			return 10;
		return verdict;
	}
	raise(SIGSTOP);
	pause();	/* killed once dumped */
	return 8;
}

/* The events of one timer, as the restored process saw them. */
struct cr_seen {
	u64 count, events, first_deadline, last_deadline;
	u64 last_read;	/* the timer's clock when its last event was read */
};

/* TWHEEL_CRIU_TRACE's lines (tools/criu/) of timer @id, for a failure. */
static void cr_trace_show(u64 id)
{
	const char *path = getenv("TWHEEL_CRIU_TRACE");
	char line[512], key[40];
	FILE *f = path ? fopen(path, "r") : NULL;

	if (!f)
		return;
	snprintf(key, sizeof(key), " id=%llx ", (unsigned long long)id);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, key) || strstr(line, " timers"))
			diag("  criu: %.*s", (int)strcspn(line, "\n"), line);
	fclose(f);
}

/* What TWHEEL_IOC_DUMP says of @w's timer now, for a failure. */
static void cr_show(int fd, const struct cr_want *w)
{
	static struct twheel_timer_state st[4096];
	struct twheel_dump d = { .timers = (uintptr_t)st, .count = 4096 };
	long n = ioctl(fd, TWHEEL_IOC_DUMP, &d);

	for (long i = 0; i < n; i++)
		if (st[i].id == w->id)
			diag("  now: state %#x deadline %llu (want %llu) clock %u flags %#x "
			     "slack %llu events %llu, mono now %llu", st[i].state,
			     (unsigned long long)st[i].deadline, (unsigned long long)w->deadline,
			     st[i].clockid, st[i].flags, (unsigned long long)st[i].slack,
			     (unsigned long long)st[i].ev_count,
			     (unsigned long long)clock_ns(CLOCK_MONOTONIC));
}

/*
 * The restored process (twheelctl restore runs twheel_test with
 * TWHEEL_CR_VERIFY): every timer as made, every expiry exactly once,
 * never early. Return: the exit status, 0 if all held.
 */
static int cr_verify(const char *path)
{
	static struct cr_wants cw;
	static struct cr_seen seen[CR_TIMERS];
	static u64 ids[1u << 20];
	struct twheel_ring_state rs = { .ids = (uintptr_t)ids, .nslots = 1u << 20 };
	struct twheel_eventfd q = { .fd = CR_EVENTFD, .flags = TWHEEL_EVENTFD_QUERY };
	u64 started = now_ns(), last = 0, end, fresh;
	struct twheel_event ev[64];
	struct twheel_info info;
	struct twheel tw;
	int in, n, fd = CR_FD, late_pushes = 0;
	const char *t0 = getenv("TWHEEL_CR_T0");

	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0 || read(in, &cw, sizeof(cw)) != (ssize_t)sizeof(cw))
		return 90;
	close(in);
	if (t0)
		diag("checkpoint: restore took %llu ms (twheelctl restore to its command)",
		     (unsigned long long)((started - strtoull(t0, NULL, 0)) / NSEC_PER_MSEC));
	if (twheel_open_fd(&tw, fd, 0) < 0)
		return 91;
	CHECK_RET(twheel_get_info(&tw, &info) ? -errno : 0, 0);
	CHECK_EQ(info.timers, CR_TIMERS);
	n = ioctl(fd, TWHEEL_IOC_SET_EVENTFD, &q);
	CHECK_RET(n < 0 ? -errno : n, 1);
	CHECK_RET(ioctl(fd, TWHEEL_IOC_RING_STATE, &rs) ? -errno : 0, 0);
	CHECK_EQ(rs.sq_head, cw.sq_head);
	for (u32 i = CR_RING; i < CR_TIMERS; i += CR_KINDS)
		CHECK_EQ(ids[i], cw.w[i].id);
	/* A new id is none of the restored ones: the generations came back. */
	CHECK_RET(twheel_schedule(&tw, FAR_FUTURE, 0, 0, 1, &fresh), 0);
	for (u32 i = 0; i < CR_TIMERS; i++)
		CHECK(fresh != cw.w[i].id, "a new timer got restored id %#llx",
		      (unsigned long long)fresh);
	CHECK_RET(twheel_cancel(&tw, fresh), 1);

	/* Every one-shot deadline, plus 1 s; 20 s at most. */
	for (u32 i = 0; i < CR_TIMERS; i++) {
		u64 dl = cw.w[i].deadline;

		if (cw.w[i].clockid == TWHEEL_CLOCK_MONOTONIC && !cw.w[i].period && dl > last)
			last = dl;
	}
	/*
	 * A second past the last, or past the start if the move took longer
	 * (under load: dump and restore took 4 s of the guest's clock once):
	 * then every one-shot expiry is queued, and read in that second.
	 */
	/* From now: the checks above take seconds on the debug kernel. */
	started = now_ns();
	end = (last > started ? last : started) + 2 * NSEC_PER_SEC;
	if (end > started + 20 * NSEC_PER_SEC)
		end = started + 20 * NSEC_PER_SEC;
	/* Past the end too while full reads come, 60 s at most. */
	for (n = 64; (now_ns() < end || n == 64) && now_ns() < started + 60 * NSEC_PER_SEC; ) {
		u64 t = now_ns();

		n = wait_events(fd, ev, 64, t < end ? (unsigned int)((end - t) / NSEC_PER_MSEC + 1) : 1,
				NULL);
		for (int e = 0; e < n; e++) {
			u32 i = (u32)(ev[e].user_data & 0xffff);
			struct cr_want *w = &cw.w[i];
			u64 clk_now = clock_ns(w->clockid == TWHEEL_CLOCK_BOOTTIME_ALARM ?
					       CLOCK_BOOTTIME : (clockid_t)w->clockid);

			if (!CHECK(i < CR_TIMERS && ev[e].user_data == w->user_data &&
				   ev[e].id == w->id, "event id %#llx user_data %#llx: not a timer made",
				   (unsigned long long)ev[e].id, (unsigned long long)ev[e].user_data))
				continue;
			CHECK(ev[e].fired >= ev[e].deadline && clk_now >= ev[e].deadline,
			      "%s %u: EARLY: deadline %llu fired %llu now %llu", cr_kind_name[w->kind],
			      i, (unsigned long long)ev[e].deadline, (unsigned long long)ev[e].fired,
			      (unsigned long long)clk_now);
			if (!seen[i].events)
				seen[i].first_deadline = ev[e].deadline;
			seen[i].events++;
			seen[i].count += ev[e].count;
			seen[i].last_deadline = ev[e].deadline;
			seen[i].last_read = clk_now;
		}
	}
	for (u32 i = 0; i < CR_TIMERS; i++) {
		struct cr_want *w = &cw.w[i];
		struct cr_seen *s = &seen[i];

		if (w->period) {
			/*
			 * Every period counted once: the last event's deadline
			 * is on the grid, the count reaches it (none lost) and
			 * passes it by at most the periods a late expiry skipped
			 * before the read (none counted twice).
			 */
			u64 upto = s->last_deadline >= w->deadline ?
				   (s->last_deadline - w->deadline) / w->period : 0;
			u64 most = s->last_read >= w->deadline ?
				   (s->last_read - w->deadline) / w->period + 1 : 0;

			CHECK(s->count >= 1 && s->last_deadline >= w->deadline &&
			      (s->last_deadline - w->deadline) % w->period == 0 &&
			      s->count >= upto + 1 && s->count <= most,
			      "%s %u: %llu expiries, last deadline %llu read at %llu; want "
			      "%llu + n * %llu, %llu to %llu expiries", cr_kind_name[w->kind], i,
			      (unsigned long long)s->count, (unsigned long long)s->last_deadline,
			      (unsigned long long)s->last_read, (unsigned long long)w->deadline,
			      (unsigned long long)w->period, (unsigned long long)upto + 1,
			      (unsigned long long)most);
			continue;
		}
		if (!CHECK(s->events == 1 && s->count == 1,
			   "%s %u: %llu events, %llu expiries, want exactly one",
			   cr_kind_name[w->kind], i, (unsigned long long)s->events,
			   (unsigned long long)s->count))
			cr_show(fd, w);
		if (w->kind == CR_MAP && w->push_late) {
			late_pushes++;
			CHECK(s->last_deadline == w->deadline ||
			      s->last_deadline == w->armed_deadline,
			      "mapped %u, pushed after its deadline: fired for %llu, "
			      "want %llu or %llu", i, (unsigned long long)s->last_deadline,
			      (unsigned long long)w->armed_deadline,
			      (unsigned long long)w->deadline);
		} else if (w->kind == CR_MAP &&
			   !CHECK(s->last_deadline >= w->deadline, "mapped %u: fired for %llu "
				  "before its pushed deadline %llu", i,
				  (unsigned long long)s->last_deadline,
				  (unsigned long long)w->deadline)) {
			cr_trace_show(w->id);
		}
		else if (s->events)
			CHECK_EQ(s->last_deadline, w->deadline);
	}
	/* The periodic ones go on: cancelled, they are gone. */
	for (u32 i = 0; i < CR_TIMERS; i++)
		if (cw.w[i].period)
			CHECK(twheel_cancel(&tw, cw.w[i].id) >= 0, "cancel of periodic %u", i);
	{
		unsigned long long events = 0, expiries = 0;

		for (u32 i = 0; i < CR_TIMERS; i++) {
			events += seen[i].events;
			expiries += seen[i].count;
		}
		diag("checkpoint: the restored file: %d timers, %llu events of %llu expiries "
		     "checked, %d failed checks; arming took %llu ms, and %d of %d pushes "
		     "through the mapping were stored after the deadline they move",
		     CR_TIMERS, events, expiries, g_failed,
		     (unsigned long long)(cw.arm_ns / NSEC_PER_MSEC), late_pushes, CR_EACH);
	}
	return g_failed ? 1 : 0;
}

/* Runs argv, waits at most @secs; its exit status, or -1 if it did not exit. */
static int cr_run(char *const argv[], const char *env_t0, const char *verify,
		  unsigned int secs, bool no_dev)
{
	u64 end = now_ns() + secs * NSEC_PER_SEC;
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (no_dev && (unshare(CLONE_NEWNS) ||
			       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
			       mount("tmpfs", "/dev", "tmpfs", 0, NULL)))
			_exit(120);
		if (env_t0)
			setenv("TWHEEL_CR_T0", env_t0, 1);
		if (verify)
			setenv("TWHEEL_CR_VERIFY", verify, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10 * 1000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * A process holding a file of 1,000 timers of every kind (one-shot,
 * fired and unread, periodic with overruns unread, each clock, slack 0,
 * pushed through the mapping, armed through the ring, orphaned), stopped,
 * dumped by twheelctl, killed, and restored by twheelctl into a new
 * process: the same ids and user_data, every expiry exactly once and
 * never early, the overruns carried; the ring's ids and the eventfd link
 * restored. And a restore where /dev/twheel does not exist fails, running
 * nothing. (CRIU itself: see tests/vm/guest/run.sh.)
 */
TEST_F_TIMEOUT(twheel, checkpoint_restore, 120)
{
	char img[] = "/tmp/twheel-cr.img", want[] = "/tmp/twheel-cr.want";
	char fdarg[16], pidarg[16], t0[32], exe[256], marker[] = "/tmp/twheel-cr.ran";
	struct stat sb;
	u64 t_dump;
	pid_t child;
	ssize_t len;
	int st;

	if (access("/bin/twheelctl", X_OK) && system("command -v twheelctl >/dev/null"))
		SKIP(return, "no twheelctl");
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_TRUE(len > 0);
	exe[len] = '\0';
	fflush(stdout);
	child = fork();
	ASSERT_TRUE(child >= 0);
	if (!child)
		_exit(cr_make(want, false));
	ASSERT_EQ(child, waitpid(child, &st, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(st)) TH_LOG("the child exited with %d", WEXITSTATUS(st));

	snprintf(pidarg, sizeof(pidarg), "%d", child);
	snprintf(fdarg, sizeof(fdarg), "%d", CR_FD);
	t_dump = now_ns();
	EXPECT_EQ(0, cr_run((char *[]){ "twheelctl", "dump", "--pid", pidarg, "--fd", fdarg,
					"-o", img, NULL }, NULL, NULL, 60, false));
	t_dump = now_ns() - t_dump;
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	ASSERT_EQ(0, stat(img, &sb));
	diag("checkpoint: %d timers dumped in %llu ms, image %lld bytes", CR_TIMERS,
	     (unsigned long long)(t_dump / NSEC_PER_MSEC), (long long)sb.st_size);

	/* Without the device: refused before the command runs. */
	unlink(marker);
	EXPECT_EQ(1, cr_run((char *[]){ "twheelctl", "restore", "-i", img, "--fd", fdarg, "--",
					"touch", marker, NULL }, NULL, NULL, 30, true));
	EXPECT_NE(0, access(marker, F_OK));

	snprintf(t0, sizeof(t0), "%llu", (unsigned long long)now_ns());
	EXPECT_EQ(0, cr_run((char *[]){ "twheelctl", "restore", "-i", img, "--fd", fdarg, "--",
					exe, NULL }, t0, want, 60, false));
	unlink(img);
	unlink(want);
}

int main(int argc, char **argv)
{
	struct __fixture_variant_metadata no_variant = { .name = "" };
	struct __fixture_metadata *f;
	struct __test_metadata *t;
	const char *filter = NULL, *env;
	struct twheel tw;
	char **hargv = argv;
	int hargc = argc, n = 0, r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The restored process of the checkpoint_restore test. */
	env = getenv("TWHEEL_CR_VERIFY");
	if (env)
		return cr_verify(env);
	/* The process make check's criu test checkpoints. */
	env = getenv("TWHEEL_CR_MAKE");
	if (env)
		return cr_make(env, true);
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "-l") || !strcmp(argv[1], "--list"))) {
		for_each_test(f, t)
			puts(test_name(f, t));
		return 0;
	}
	if (argc == 2 && argv[1][0] != '-') {
		filter = argv[1];
	} else if (argc > 1 && (argv[1][0] != '-' ||
				test_harness_argv_check(argc, argv) != KSFT_PASS)) {
		usage(stderr);
		return 2;
	}
	optind = 1;

	/* FILTER: one "-t name" for each test whose full name contains it */
	if (filter) {
		hargc = 1;
		for_each_test(f, t)
			hargc += strstr(test_name(f, t), filter) ? 2 : 0;
		hargv = calloc(hargc + 1, sizeof(*hargv));
		if (!hargv) {
			perror("twheel_test: calloc");
			return 2;
		}
		hargc = 0;
		hargv[hargc++] = argv[0];
		for_each_test(f, t) {
			if (!strstr(test_name(f, t), filter))
				continue;
			hargv[hargc++] = "-t";
			hargv[hargc++] = (char *)t->name;
		}
	}
	for_each_test(f, t)
		n += test_enabled(hargc, hargv, f, &no_variant, t);
	optind = 1;
	if (!n || (filter && hargc == 1)) {
		fprintf(stderr, "twheel_test: no test name contains '%s' (see -l)\n",
			filter ?: "(options)");
		return 2;
	}

	env = getenv("TWHEEL_TEST_SLACK_MS");
	if (env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (*end || !v || end == env) {
			fprintf(stderr, "twheel_test: bad TWHEEL_TEST_SLACK_MS '%s'\n", env);
			return 2;
		}
		g_slack_ns = (u64)v * NSEC_PER_MSEC;
	}
	env = getenv("TWHEEL_TEST_MANY");
	if (env) {
		char *end;
		long v = strtol(env, &end, 10);

		if (*end || v < 1 || v > 1000000 || end == env) {
			fprintf(stderr, "twheel_test: bad TWHEEL_TEST_MANY '%s'\n", env);
			return 2;
		}
		g_many = (int)v;
	}
	env = getenv("TWHEEL_TEST_SEED");
	if (env)
		g_seed = strtoull(env, NULL, 0) | 1;

	r = twheel_open(&tw, 0);
	if (r < 0) {
		int e = -r;

		ksft_print_header();
		ksft_set_plan(n);
		ksft_exit_fail_msg("cannot open %s: %s (%s)%s\n", TWHEEL_DEVICE,
				   strerror(e), ename(e),
				   e == ENOENT ? " -- is the twheel module loaded?" : "");
	}
	g_granularity_ns = tw.info.granularity_ns;
	g_max_timers = tw.info.max_timers;
	twheel_close(&tw);

	/*
	 * The KTAP header, then the device's parameters as a diagnostic line;
	 * KSFT_TAP_LEVEL (set by kselftest's runner when it nests the output)
	 * tells the harness not to print the header again.
	 */
	if (!getenv("KSFT_TAP_LEVEL")) {
		printf("TAP version 13\n");
		setenv("KSFT_TAP_LEVEL", "1", 1);
	}
	printf("# twheel_test: granularity %llu ns, max_timers %u, slack %llu ms, seed %#llx\n",
	       (unsigned long long)g_granularity_ns, g_max_timers,
	       (unsigned long long)(g_slack_ns / NSEC_PER_MSEC), (unsigned long long)g_seed);
	signal(SIGPIPE, SIG_IGN);

	return test_harness_run(hargc, hargv);
}
