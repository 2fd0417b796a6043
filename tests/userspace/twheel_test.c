// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_test: ABI tests for /dev/twheel (uapi/twheel.h).
 *
 * Usage: twheel_test [-l | -h | FILTER]
 *   FILTER  run only the tests whose name contains FILTER
 *   -l      list the test names
 * Environment:
 *   TWHEEL_TEST_SLACK_MS  lateness bound for one expiry (default 2000: the
 *                         guests run under TCG emulation); EARLY expiries
 *                         are always failures, whatever this says.
 *   TWHEEL_TEST_SEED      seed of the random delays (default: fixed)
 *
 * Output is KTAP-like: "TAP version 13", "1..N", then "ok N name" or
 * "not ok N name" preceded by "# file:line: ..." lines for each failed check,
 * and finally "# twheel_test: P passed, F failed". Exit status 0 iff all
 * selected tests passed.
 *
 * Each test runs in its own forked process with an alarm, so a test that
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
#include <sys/wait.h>

#include "uapi/twheel.h"

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL
#define EV_SIZE		sizeof(struct twheel_event)
#define FAR_FUTURE	(3600ULL * NSEC_PER_SEC)	/* never fires in a test */
#define WATCHDOG_UD	0x5741544348444f47ULL		/* "WATCHDOG" */

/* the ABI's own types, so &spec.id is a u64 * */
typedef __u64 u64;
typedef __u32 u32;

/* ------------------------------------------------------------------ */
/* Harness                                                            */
/* ------------------------------------------------------------------ */

static int g_failed;			/* failed checks in this test */
static char *g_skip;			/* shared with the parent: skip reason */
static u64 g_slack_ns = 2000 * NSEC_PER_MSEC;
static u64 g_seed = 0x74776865656cULL;	/* "twheel" */
static u64 g_granularity_ns;
static u32 g_max_timers;

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

static void sleep_ns(u64 ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC_PER_SEC,
			       .tv_nsec = ns % NSEC_PER_SEC };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

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
	const char *base = strrchr(file, '/');
	va_list ap;

	__atomic_add_fetch(&g_failed, 1, __ATOMIC_RELAXED);
	flockfile(stdout);
	printf("# %s:%d: ", base ? base + 1 : file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	funlockfile(stdout);
	fflush(stdout);
}

static void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_skip, 256, fmt, ap);
	va_end(ap);
}

/* Each check evaluates to true when it passed. */
#define FAIL(...)	fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...) ({						\
	bool _ok = (cond);						\
	if (!_ok)							\
		FAIL(__VA_ARGS__);					\
	_ok;								\
})
#define EXPECT(cond)	CHECK(cond, "expected %s", #cond)
/* An ioctl-style result: a value >= 0 or a negative errno. */
#define EXPECT_RET(expr, want) ({					\
	long _r = (long)(expr), _w = (long)(want);			\
	bool _ok = _r == _w;						\
	if (!_ok)							\
		FAIL("%s: expected %s, got %s", #expr, rstr(_w), rstr(_r)); \
	_ok;								\
})
#define EXPECT_EQ(got, want) ({						\
	long long _g = (long long)(got), _w = (long long)(want);	\
	bool _ok = _g == _w;						\
	if (!_ok)							\
		FAIL("%s: expected %lld (%#llx), got %lld (%#llx)",	\
		     #got, _w, (unsigned long long)_w, _g,		\
		     (unsigned long long)_g);				\
	_ok;								\
})
/* lo <= got <= hi, unsigned */
#define EXPECT_RANGE(got, lo, hi) ({					\
	unsigned long long _g = (got), _l = (lo), _h = (hi);		\
	bool _ok = _g >= _l && _g <= _h;				\
	if (!_ok)							\
		FAIL("%s: expected in [%llu, %llu], got %llu",		\
		     #got, _l, _h, _g);					\
	_ok;								\
})
#define REQUIRE(check)	do { if (!(check)) return; } while (0)

/* ------------------------------------------------------------------ */
/* Device helpers                                                     */
/* ------------------------------------------------------------------ */

static long xioctl(int fd, unsigned long req, void *arg)
{
	long r = ioctl(fd, req, arg);

	return r < 0 ? -errno : r;
}

static int tw_open_flags(int flags)
{
	int fd = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC | flags);

	if (fd < 0)
		FAIL("open(%s): %s", TWHEEL_DEVICE, ename(errno));
	return fd;
}

/* Non-blocking by default: a read after poll never hangs a test. */
static int tw_open(void)
{
	return tw_open_flags(O_NONBLOCK);
}

static struct twheel_timer_spec mkspec(u64 value, u64 period, u64 ud, u32 flags)
{
	return (struct twheel_timer_spec){
		.value = value, .period = period, .user_data = ud,
		.clockid = TWHEEL_CLOCK_MONOTONIC, .flags = flags,
	};
}

static long tw_sched(int fd, u64 value, u64 period, u64 ud, u32 flags, u64 *id)
{
	struct twheel_timer_spec s = mkspec(value, period, ud, flags);
	long r = xioctl(fd, TWHEEL_IOC_SCHEDULE, &s);

	if (id)
		*id = r == 0 ? s.id : 0;
	return r;
}

static long tw_modify(int fd, u64 id, u64 value, u64 period, u64 ud, u32 flags)
{
	struct twheel_timer_spec s = mkspec(value, period, ud, flags);

	s.id = id;
	return xioctl(fd, TWHEEL_IOC_MODIFY, &s);
}

static long tw_cancel(int fd, u64 id)
{
	struct twheel_cancel c = { .id = id };

	return xioctl(fd, TWHEEL_IOC_CANCEL, &c);
}

static long tw_info(int fd, struct twheel_info *info)
{
	memset(info, 0, sizeof(*info));
	return xioctl(fd, TWHEEL_IOC_INFO, info);
}

static long tw_eventfd(int fd, int efd)
{
	struct twheel_eventfd e = { .fd = efd };

	return xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e);
}

static long tw_batch(int fd, struct twheel_op *ops, u32 count)
{
	struct twheel_batch b = { .ops = (uintptr_t)ops, .count = count };

	return xioctl(fd, TWHEEL_IOC_BATCH, &b);
}

/* INFO.timers, or -1 after reporting the failure */
static long tw_timers(int fd)
{
	struct twheel_info info;

	if (!EXPECT_RET(tw_info(fd, &info), 0))
		return -1;
	return info.timers;
}

static long tw_queued(int fd)
{
	struct twheel_info info;

	if (!EXPECT_RET(tw_info(fd, &info), 0))
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
 * read; *seen (if given) is the time of the last successful read.
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
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
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
	int fd;
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
		tw_sched(w->fd, 0, 0, WATCHDOG_UD, 0, NULL);
	}
	return NULL;
}

static bool watchdog_start(struct watchdog *w, int fd, unsigned int ms)
{
	w->fd = fd;
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

static void test_open_close(void)
{
	int fds[16];
	struct twheel_info info;

	for (int i = 0; i < 16; i++) {
		fds[i] = tw_open_flags(i & 1 ? O_NONBLOCK : 0);
		REQUIRE(fds[i] >= 0);
	}
	for (int i = 0; i < 16; i++) {
		EXPECT_RET(tw_info(fds[i], &info), 0);
		EXPECT_EQ(info.timers, 0);
		EXPECT_EQ(info.queued, 0);
	}
	/* a fd with timers (pending and fired) closes cleanly too */
	EXPECT_RET(tw_sched(fds[0], FAR_FUTURE, 0, 1, 0, NULL), 0);
	EXPECT_RET(tw_sched(fds[0], 0, 0, 2, 0, NULL), 0);
	for (int i = 0; i < 16; i++)
		CHECK(close(fds[i]) == 0, "close: %s", ename(errno));
	/* read-only opens work as well */
	fds[0] = open(TWHEEL_DEVICE, O_RDONLY | O_CLOEXEC);
	CHECK(fds[0] >= 0, "open O_RDONLY: %s", ename(errno));
	if (fds[0] >= 0)
		close(fds[0]);
}

static void test_unknown_ioctl_enotty(void)
{
	static const struct {
		unsigned long req;
		const char *what;
	} cases[] = {
		{ _IO(TWHEEL_IOC_MAGIC, 0x06), "_IO(magic, 0x06)" },
		{ _IOWR(TWHEEL_IOC_MAGIC, 0x7f, struct twheel_info), "_IOWR(magic, 0x7f)" },
		{ _IO(TWHEEL_IOC_MAGIC, 0xff), "_IO(magic, 0xff)" },
		{ _IOWR(TWHEEL_IOC_MAGIC, 0x00, __u64), "SCHEDULE nr, wrong size" },
		{ _IOR(TWHEEL_IOC_MAGIC, 0x00, struct twheel_timer_spec), "SCHEDULE nr, wrong direction" },
		{ _IOW(TWHEEL_IOC_MAGIC, 0x05, struct twheel_info), "INFO nr, wrong direction" },
		{ _IOR(TWHEEL_IOC_MAGIC + 1, 0x05, struct twheel_info), "INFO with another magic" },
		{ 0x5401 /* TCGETS */, "TCGETS" },
	};
	_Alignas(8) char buf[512];
	int fd = tw_open();

	REQUIRE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long r;

		memset(buf, 0, sizeof(buf));
		r = xioctl(fd, cases[i].req, buf);
		CHECK(r == -ENOTTY, "ioctl %s (%#lx): expected -ENOTTY, got %s",
		      cases[i].what, cases[i].req, rstr(r));
	}
	EXPECT_EQ(tw_timers(fd), 0);
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

static void test_efault_bad_pointers(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *guard = map_guard();
	int fd = tw_open();

	REQUIRE(fd >= 0 && guard);
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
			CHECK(r == -EFAULT, "%s with pointer %p: expected -EFAULT, got %s",
			      all_ioctls[i].name, bad[j], rstr(r));
		}
	}
	/* Nothing was scheduled by any of that. */
	EXPECT_EQ(tw_timers(fd), 0);

	/* INFO writes its result: a read-only buffer faults */
	mprotect(guard, pg, PROT_READ);
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_INFO, guard), -EFAULT);
	/*
	 * SCHEDULE writes the id back: a read-only spec faults. Whether the
	 * timer then exists is not specified (the caller never learnt its id).
	 */
	mprotect(guard, pg, PROT_READ | PROT_WRITE);
	*(struct twheel_timer_spec *)guard = mkspec(FAR_FUTURE, 0, 0, 0);
	mprotect(guard, pg, PROT_READ);
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_SCHEDULE, guard), -EFAULT);
	diag("timers after SCHEDULE whose id could not be written back: %ld",
	     tw_timers(fd));

	/* read() into bad memory, with an event queued */
	{
		int fd2 = tw_open();
		struct pollfd p = { .fd = fd2, .events = POLLIN };

		REQUIRE(fd2 >= 0);
		REQUIRE(EXPECT_RET(tw_sched(fd2, 0, 0, 1, 0, NULL), 0));
		REQUIRE(CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1,
			      "zero-delay timer: no POLLIN"));
		void *volatile null = NULL;	/* hide it from -Wnonnull */

		errno = 0;
		CHECK(read(fd2, null, EV_SIZE) == -1 && errno == EFAULT,
		      "read(NULL): expected EFAULT, got %s", ename(errno));
		errno = 0;
		CHECK(read(fd2, guard, EV_SIZE) == -1 && errno == EFAULT,
		      "read into read-only memory: expected EFAULT, got %s", ename(errno));
		errno = 0;
		CHECK(read(fd2, (void *)0xffff888000000000ULL, EV_SIZE) == -1 && errno == EFAULT,
		      "read into a kernel address: expected EFAULT, got %s", ename(errno));
		diag("queued after failed reads: %ld (whether a faulting read loses the event is unspecified)",
		     tw_queued(fd2));
	}
}

static void test_schedule_einval_fields(void)
{
	static const struct {
		const char *what;
		u64 value, period, r0, r1;
		u32 clockid, flags;
	} cases[] = {
		{ "reserved[0] = 1", FAR_FUTURE, 0, 1, 0, 1, 0 },
		{ "reserved[1] = 1", FAR_FUTURE, 0, 0, 1, 1, 0 },
		{ "reserved[1] = 1<<63", FAR_FUTURE, 0, 0, 1ULL << 63, 1, 0 },
		{ "flags 1<<3", FAR_FUTURE, 0, 0, 0, 1, 1u << 3 },
		{ "flags 1<<31", FAR_FUTURE, 0, 0, 0, 1, 1u << 31 },
		{ "flags all ones", FAR_FUTURE, 1000000, 0, 0, 1, ~0u },
		{ "clockid 0 (REALTIME)", FAR_FUTURE, 0, 0, 0, 0, 0 },
		{ "clockid 7 (BOOTTIME)", FAR_FUTURE, 0, 0, 0, 7, 0 },
		{ "clockid 2", FAR_FUTURE, 0, 0, 0, 2, 0 },
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
	int fd = tw_open();

	REQUIRE(fd >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct twheel_timer_spec s = mkspec(cases[i].value, cases[i].period, 0,
						    cases[i].flags);
		long r;

		s.clockid = cases[i].clockid;
		s.reserved[0] = cases[i].r0;
		s.reserved[1] = cases[i].r1;
		r = xioctl(fd, TWHEEL_IOC_SCHEDULE, &s);
		CHECK(r == -EINVAL, "SCHEDULE %s: expected -EINVAL, got %s",
		      cases[i].what, rstr(r));
	}
	EXPECT_EQ(tw_timers(fd), 0);
	no_events(fd, 50, "after refused SCHEDULEs");
}

static void test_schedule_periodic_zero_period_einval(void)
{
	int fd = tw_open();

	REQUIRE(fd >= 0);
	EXPECT_RET(tw_sched(fd, NSEC_PER_MSEC, 0, 0, TWHEEL_TIMER_PERIODIC, NULL), -EINVAL);
	EXPECT_RET(tw_sched(fd, 0, 0, 0, TWHEEL_TIMER_PERIODIC, NULL), -EINVAL);
	EXPECT_RET(tw_sched(fd, NSEC_PER_MSEC, 0, 0,
			    TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY, NULL), -EINVAL);
	/* and the smallest valid period is accepted */
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 1, 0, TWHEEL_TIMER_PERIODIC, NULL), 0);
	EXPECT_EQ(tw_timers(fd), 1);
}

static void test_schedule_negative_einval(void)
{
	static const u64 vals[] = { ~0ULL, 1ULL << 63, (u64)INT64_MIN + 1, (u64)-NSEC_PER_SEC };
	int fd = tw_open();

	REQUIRE(fd >= 0);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		long r = tw_sched(fd, vals[i], 0, 0, 0, NULL);

		CHECK(r == -EINVAL, "SCHEDULE delay %lld: expected -EINVAL, got %s",
		      (long long)vals[i], rstr(r));
		r = tw_sched(fd, vals[i], 0, 0, TWHEEL_TIMER_ABSTIME, NULL);
		CHECK(r == -EINVAL, "SCHEDULE ABSTIME %lld: expected -EINVAL, got %s",
		      (long long)vals[i], rstr(r));
	}
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_schedule_huge_delay_erange(void)
{
	int fd = tw_open();
	u64 id1 = 0, id2 = 0, now;

	REQUIRE(fd >= 0);
	EXPECT_RET(tw_sched(fd, INT64_MAX, 0, 0, 0, NULL), -ERANGE);
	EXPECT_RET(tw_sched(fd, INT64_MAX, NSEC_PER_SEC, 0, TWHEEL_TIMER_PERIODIC, NULL), -ERANGE);
	/*
	 * A valid value (<= INT64_MAX) that overflows only once added to the
	 * kernel's now, which is later than ours.
	 */
	now = now_ns();
	EXPECT_RET(tw_sched(fd, INT64_MAX - now / 2, 0, 0, 0, NULL), -ERANGE);
	EXPECT_RET(tw_sched(fd, INT64_MAX - now + 1, 0, 0, 0, NULL), -ERANGE);
	EXPECT_EQ(tw_timers(fd), 0);

	/* Far but representable deadlines are accepted and stay pending. */
	now = now_ns();
	EXPECT_RET(tw_sched(fd, INT64_MAX - now - 1000 * NSEC_PER_SEC, 0, 1, 0, &id1), 0);
	EXPECT_RET(tw_sched(fd, INT64_MAX, 0, 2, TWHEEL_TIMER_ABSTIME, &id2), 0);
	EXPECT_RET(tw_sched(fd, 1ULL << 62, 0, 3, 0, NULL), 0);
	EXPECT_EQ(tw_timers(fd), 3);
	no_events(fd, 200, "far-future timers");
	if (id1)
		EXPECT_RET(tw_cancel(fd, id1), 1);
	if (id2)
		EXPECT_RET(tw_cancel(fd, id2), 1);
	EXPECT_EQ(tw_timers(fd), 1);

	/* MODIFY checks the same overflow */
	{
		u64 id;

		REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
		EXPECT_RET(tw_modify(fd, id, INT64_MAX, 0, 0, 0), -ERANGE);
		EXPECT_RET(tw_modify(fd, id, 1ULL << 63, 0, 0, 0), -EINVAL);
		EXPECT_RET(tw_cancel(fd, id), 1);
	}
}

static void test_modify_einval_fields(void)
{
	int fd = tw_open();
	u64 id;
	struct twheel_timer_spec s;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
#define MOD_CASE(what, field_stmt) do {					\
		long _r;						\
		s = mkspec(FAR_FUTURE, 0, 0, 0);			\
		s.id = id;						\
		field_stmt;						\
		_r = xioctl(fd, TWHEEL_IOC_MODIFY, &s);			\
		CHECK(_r == -EINVAL, "MODIFY %s: expected -EINVAL, got %s", what, rstr(_r)); \
	} while (0)
	MOD_CASE("reserved[0] = 1", s.reserved[0] = 1);
	MOD_CASE("reserved[1] = 1", s.reserved[1] = 1);
	MOD_CASE("flags 1<<3", s.flags = 1u << 3);
	MOD_CASE("flags 1<<31", s.flags = 1u << 31);
	MOD_CASE("clockid 0", s.clockid = 0);
	MOD_CASE("clockid 7", s.clockid = 7);
	MOD_CASE("period without PERIODIC", s.period = NSEC_PER_MSEC);
	MOD_CASE("FIXED_DELAY without PERIODIC", s.flags = TWHEEL_TIMER_FIXED_DELAY);
	MOD_CASE("PERIODIC period 0", s.flags = TWHEEL_TIMER_PERIODIC);
	MOD_CASE("PERIODIC period 1<<63", (s.flags = TWHEEL_TIMER_PERIODIC, s.period = 1ULL << 63));
	MOD_CASE("value 1<<63", s.value = 1ULL << 63);
	MOD_CASE("value 0 with bad flags", (s.value = 0, s.flags = 1u << 7));
#undef MOD_CASE
	/* the timer was left alone: still pending, nothing fired */
	no_events(fd, 100, "after refused MODIFYs");
	EXPECT_RET(tw_cancel(fd, id), 1);
}

static void test_cancel_einval_fields(void)
{
	int fd = tw_open();
	u64 id;
	struct twheel_cancel c;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	c = (struct twheel_cancel){ .id = id, .flags = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_CANCEL, &c), -EINVAL);
	c = (struct twheel_cancel){ .id = id, .flags = 1u << 31 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_CANCEL, &c), -EINVAL);
	c = (struct twheel_cancel){ .id = id, .pad = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_CANCEL, &c), -EINVAL);
	c = (struct twheel_cancel){ .id = id, .pad = ~0u };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_CANCEL, &c), -EINVAL);
	EXPECT_EQ(tw_timers(fd), 1);
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_eventfd_einval_fields(void)
{
	int fd = tw_open();
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_eventfd e;
	struct twheel_event ev;
	u64 cnt;

	REQUIRE(fd >= 0 && CHECK(efd >= 0, "eventfd: %s", ename(errno)));
	e = (struct twheel_eventfd){ .fd = efd, .flags = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e), -EINVAL);
	e = (struct twheel_eventfd){ .fd = efd, .flags = 1u << 31 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e), -EINVAL);
	e = (struct twheel_eventfd){ .fd = efd, .reserved = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e), -EINVAL);
	e = (struct twheel_eventfd){ .fd = -1, .reserved = 1ULL << 63 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e), -EINVAL);
	/* none of those registered it */
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0, 0, NULL), 0));
	wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay timer");
	errno = 0;
	CHECK(read(efd, &cnt, 8) == -1 && errno == EAGAIN,
	      "eventfd signalled although its registration was refused");
}

static void test_batch_einval_fields(void)
{
	int fd = tw_open();
	struct twheel_op ops[4];
	struct twheel_batch b;
	u64 id;

	REQUIRE(fd >= 0);
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .flags = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EINVAL);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .reserved = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EINVAL);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 2, .flags = 1u << 31 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EINVAL);
	EXPECT_EQ(tw_timers(fd), 0);

	/* per-op checks: each op fails alone with -EINVAL at index 0 */
	static const u32 bad_ops[] = { 0, 4, 0x100, ~0u };
	for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
		ops[0].op = bad_ops[i];
		ops[1].result = 77;
		EXPECT_RET(tw_batch(fd, ops, 2), 0);
		CHECK(ops[0].result == -EINVAL, "op code %u: result %s, expected -EINVAL",
		      bad_ops[i], rstr(ops[0].result));
		EXPECT_EQ(ops[1].result, 77);
	}
	/* a SCHEDULE op with a bad spec */
	fill_schedule_ops(ops, 1, FAR_FUTURE, 0);
	ops[0].spec.reserved[0] = 1;
	EXPECT_RET(tw_batch(fd, ops, 1), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	fill_schedule_ops(ops, 1, FAR_FUTURE, 0);
	ops[0].spec.flags = 1u << 9;
	EXPECT_RET(tw_batch(fd, ops, 1), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	EXPECT_EQ(tw_timers(fd), 0);

	/* a CANCEL op: fields other than spec.id must be zero */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	memset(ops, 0, sizeof(ops));
	ops[0].op = TWHEEL_OP_CANCEL;
	ops[0].spec.id = id;
	ops[0].spec.user_data = 1;
	EXPECT_RET(tw_batch(fd, ops, 1), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	ops[0].spec.user_data = 0;
	ops[0].spec.clockid = TWHEEL_CLOCK_MONOTONIC;
	ops[0].result = 0;
	EXPECT_RET(tw_batch(fd, ops, 1), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	ops[0].spec.clockid = 0;
	ops[0].spec.reserved[1] = 1;
	EXPECT_RET(tw_batch(fd, ops, 1), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	/* still pending; a clean CANCEL op works and returns 1 */
	ops[0].spec.reserved[1] = 0;
	ops[0].result = 0;
	EXPECT_RET(tw_batch(fd, ops, 1), 1);
	EXPECT_EQ(ops[0].result, 1);
	EXPECT_EQ(tw_timers(fd), 0);
}

/* ------------------------------------------------------------------ */
/* Tests: expiry                                                      */
/* ------------------------------------------------------------------ */

static void test_schedule_zero_delay_fires(void)
{
	int fd = tw_open();
	struct twheel_event ev;
	u64 id, t0, t1, seen;

	REQUIRE(fd >= 0);
	t0 = now_ns();
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0xabc, 0, &id), 0));
	t1 = now_ns();
	REQUIRE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			 "zero-delay timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(ev.id, id);
	EXPECT_EQ(ev.user_data, 0xabc);
	EXPECT_EQ(ev.count, 1);
	EXPECT_RANGE(ev.deadline, t0, t1);
	diag("zero delay: fired %llu us after the SCHEDULE call",
	     (unsigned long long)((ev.fired - t0) / 1000));
	no_events(fd, 100, "after the one-shot fired");
}

static void test_abs_past_fires_at_once(void)
{
	int fd = tw_open();
	struct twheel_event ev[3];
	u64 ids[3], vals[3], t1, seen;
	int n;

	REQUIRE(fd >= 0);
	vals[0] = 1;
	vals[1] = now_ns() - NSEC_PER_SEC;
	vals[2] = 0;
	for (int i = 0; i < 3; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, vals[i], 0, (u64)i, TWHEEL_TIMER_ABSTIME, &ids[i]), 0));
	t1 = now_ns();
	n = wait_events(fd, ev, 3, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 3, "expected 3 events from past deadlines, got %d", n));
	for (int i = 0; i < 3; i++) {
		u64 k = ev[i].user_data;

		REQUIRE(CHECK(k < 3, "bad user_data %llu", (unsigned long long)k));
		EXPECT_EQ(ev[i].id, ids[k]);
		/* the deadline reported is the one scheduled */
		CHECK(ev[i].deadline == vals[k], "event %llu: deadline %llu, expected %llu",
		      (unsigned long long)k, (unsigned long long)ev[i].deadline,
		      (unsigned long long)vals[k]);
		CHECK(ev[i].fired >= ev[i].deadline, "fired before the deadline");
		CHECK(ev[i].fired <= seen, "fired after it was read");
		CHECK(ev[i].fired <= t1 + g_slack_ns, "fired %llu us after scheduling",
		      (unsigned long long)((ev[i].fired - t1) / 1000));
		EXPECT_EQ(ev[i].count, 1);
	}
}

static void test_abs_future_not_early(void)
{
	int fd = tw_open();
	struct twheel_event ev;
	u64 id, dl, seen;

	REQUIRE(fd >= 0);
	dl = now_ns() + 300 * NSEC_PER_MSEC;
	REQUIRE(EXPECT_RET(tw_sched(fd, dl, 0, 7, TWHEEL_TIMER_ABSTIME, &id), 0));
	REQUIRE(wait_one(fd, &ev, 300 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			 "absolute deadline 300 ms ahead"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(ev.id, id);
	EXPECT_EQ(ev.deadline, dl);
	CHECK(seen >= dl, "event read %llu us before its deadline",
	      (unsigned long long)((dl - seen) / 1000));
	diag("absolute deadline: fired %lld us late, read %lld us late",
	     (long long)(ev.fired - dl) / 1000, (long long)(seen - dl) / 1000);
}

static void test_oneshot_fires_once(void)
{
	int fd = tw_open();
	struct twheel_event ev[4];
	const u64 delay = 100 * NSEC_PER_MSEC, ud = 0xdeadbeefcafef00dULL;
	u64 id, t0, t1, seen;
	struct twheel_info info;
	int n;

	REQUIRE(fd >= 0);
	t0 = now_ns();
	REQUIRE(EXPECT_RET(tw_sched(fd, delay, 0, ud, 0, &id), 0));
	t1 = now_ns();
	CHECK(id != 0, "SCHEDULE returned id 0");
	EXPECT_EQ(tw_timers(fd), 1);
	/* room for 4 in the buffer: exactly one may come */
	n = read_once(fd, ev, 4, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 1, "expected exactly 1 event, got %d", n));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, ud);
	EXPECT_EQ(ev[0].count, 1);
	EXPECT_EQ(ev[0].flags, 0);
	EXPECT_RANGE(ev[0].deadline, t0 + delay, t1 + delay);
	CHECK(seen >= t0 + delay, "read before the delay elapsed");
	no_events(fd, 300, "after the one-shot's event was read");
	/* read: the id is gone */
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
	EXPECT_RET(tw_modify(fd, id, FAR_FUTURE, 0, 0, 0), -ENOENT);
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT_EQ(info.timers, 0);
	EXPECT_EQ(info.queued, 0);
}

static void test_oneshot_lateness(void)
{
	enum { N = 20 };
	int fd = tw_open();
	struct twheel_event ev[N];
	u64 ids[N], t0[N], t1[N], delay[N], seen = 0;
	u64 max_fire = 0, max_seen = 0, sum_fire = 0;
	bool got[N] = { false };
	int n;

	REQUIRE(fd >= 0);
	for (int i = 0; i < N; i++) {
		delay[i] = (u64)(1 + 10 * i) * NSEC_PER_MSEC + (u64)i * 1234;
		t0[i] = now_ns();
		REQUIRE(EXPECT_RET(tw_sched(fd, delay[i], 0, (u64)i, 0, &ids[i]), 0));
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
			EXPECT_RANGE(ev[j].deadline, t0[i] + delay[i], t1[i] + delay[i]);
			EXPECT_EQ(ev[j].count, 1);
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
	CHECK(n == N, "expected %d events, got %d", N, n);
	diag("lateness over %d one-shots (1..191 ms): fired-deadline max %llu us, mean %llu us; read-deadline max %llu us; granularity %llu us; bound %llu us",
	     n, (unsigned long long)(max_fire / 1000),
	     (unsigned long long)(n ? sum_fire / (u64)n / 1000 : 0),
	     (unsigned long long)(max_seen / 1000),
	     (unsigned long long)(g_granularity_ns / 1000),
	     (unsigned long long)(g_slack_ns / 1000));
	CHECK(max_seen <= g_slack_ns + 200 * NSEC_PER_MSEC,
	      "an event was read %llu us after its deadline",
	      (unsigned long long)(max_seen / 1000));
}

/* ------------------------------------------------------------------ */
/* Tests: cancel and modify                                           */
/* ------------------------------------------------------------------ */

static void test_cancel_pending(void)
{
	int fd = tw_open();
	u64 id, id2;
	struct twheel_info info;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 200 * NSEC_PER_MSEC, 0, 1, 0, &id), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 150 * NSEC_PER_MSEC, 50 * NSEC_PER_MSEC, 2,
				    TWHEEL_TIMER_PERIODIC, &id2), 0));
	EXPECT_EQ(tw_timers(fd), 2);
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_RET(tw_cancel(fd, id2), 1);
	EXPECT_EQ(tw_timers(fd), 0);
	/* well past both deadlines: nothing */
	no_events(fd, 500, "cancelled timers");
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT_EQ(info.timers, 0);
	EXPECT_EQ(info.queued, 0);
}

static void test_cancel_twice_enoent(void)
{
	int fd = tw_open();
	u64 id;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
	EXPECT_RET(tw_modify(fd, id, FAR_FUTURE, 0, 0, 0), -ENOENT);
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_cancel_unknown_enoent(void)
{
	int fd = tw_open();
	u64 id;

	REQUIRE(fd >= 0);
	/* nothing scheduled yet */
	for (u64 i = 0; i < 5; i++)
		EXPECT_RET(tw_cancel(fd, i), -ENOENT);
	EXPECT_RET(tw_cancel(fd, ~0ULL), -ENOENT);
	EXPECT_RET(tw_cancel(fd, 1ULL << 63), -ENOENT);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	EXPECT_RET(tw_cancel(fd, 0), -ENOENT);
	EXPECT_RET(tw_cancel(fd, ~0ULL), -ENOENT);
	EXPECT_EQ(tw_timers(fd), 1);
}

static void test_cancel_fired_keeps_event(void)
{
	int fd = tw_open();
	struct twheel_event ev[2];
	struct pollfd p;
	u64 id, seen;
	int n;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0x55, 0, &id), 0));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	REQUIRE(CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1,
		      "zero-delay timer: no POLLIN"));
	EXPECT_EQ(tw_queued(fd), 1);
	/* fired, event unread: cancel says 0 and the event stays */
	EXPECT_RET(tw_cancel(fd, id), 0);
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
	EXPECT_EQ(tw_queued(fd), 1);
	n = wait_events(fd, ev, 2, 200, &seen);
	REQUIRE(CHECK(n == 1, "expected the queued event to survive the cancel, got %d events", n));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 0x55);
	EXPECT_EQ(ev[0].count, 1);
	EXPECT_EQ(tw_queued(fd), 0);
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_cancel_periodic(void)
{
	int fd = tw_open();
	struct twheel_event ev;
	const u64 P = 300 * NSEC_PER_MSEC;
	u64 id, seen;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 20 * NSEC_PER_MSEC, P, 9, TWHEEL_TIMER_PERIODIC, &id), 0));
	REQUIRE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC) + 20, &seen,
			 "first expiry of a periodic timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(ev.id, id);
	CHECK(ev.flags & TWHEEL_EVENT_PERIODIC, "periodic event without TWHEEL_EVENT_PERIODIC (flags %#x)",
	      ev.flags);
	/* a periodic timer stays valid after its event was read */
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
	if (ev.fired + P < now_ns())
		diag("note: the reader was slower than the period; an event may be queued");
	else
		no_events(fd, 700, "periodic timer after cancel");
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_cancel_periodic_queued_event(void)
{
	int fd = tw_open();
	struct twheel_event ev[2];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	u64 id, seen;
	int n;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 10 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC, 0x99,
				    TWHEEL_TIMER_PERIODIC, &id), 0));
	REQUIRE(CHECK(poll(&p, 1, (int)(10 + g_slack_ns / NSEC_PER_MSEC)) == 1,
		      "periodic timer: no POLLIN"));
	/* an expiry is queued, and the timer is still pending */
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
	/* the queued event stays readable, marked cancelled; nothing after it */
	n = read_once(fd, ev, 2, 100, &seen);
	REQUIRE(CHECK(n == 1, "expected the queued event, got %d events", n));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 0x99);
	CHECK(ev[0].flags & TWHEEL_EVENT_CANCELLED,
	      "event of a periodic timer cancelled after it: flags %#x lack TWHEEL_EVENT_CANCELLED",
	      ev[0].flags);
	no_events(fd, 100, "cancelled periodic timer");
	EXPECT_EQ(tw_timers(fd), 0);
	EXPECT_EQ(tw_queued(fd), 0);
}

static void test_events_in_expiry_order(void)
{
	enum { N = 5 };
	int fd = tw_open();
	struct twheel_event ev[N + 1];
	u64 ids[N], last;
	int n;

	REQUIRE(fd >= 0);
	/* scheduled latest first: 250, 200, ... 50 ms */
	for (int i = 0; i < N; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, (u64)(N - i) * 50 * NSEC_PER_MSEC, 0, (u64)i, 0,
					    &ids[i]), 0));
	last = now_ns() + (u64)N * 50 * NSEC_PER_MSEC;
	sleep_ns(last - now_ns());
	while (tw_queued(fd) < N && now_ns() < last + g_slack_ns)
		idle_ms(10);
	n = read_once(fd, ev, N + 1, 0, NULL);
	REQUIRE(CHECK(n == N, "expected %d events in one read, got %d", N, n));
	for (int k = 0; k < N; k++) {
		/* the earliest deadline (scheduled last) comes first */
		CHECK(ev[k].id == ids[N - 1 - k] && ev[k].user_data == (u64)(N - 1 - k),
		      "event %d is timer %llu, expected %d (events must be in expiry order)",
		      k, (unsigned long long)ev[k].user_data, N - 1 - k);
		if (k)
			CHECK(ev[k].deadline > ev[k - 1].deadline && ev[k].fired >= ev[k - 1].fired,
			      "event %d: deadline/fired not after event %d's", k, k - 1);
	}
}

static void test_modify_moves_timer(void)
{
	int fd = tw_open();
	struct twheel_event ev[2];
	u64 id, id2, t0, t1, seen;
	int n;

	REQUIRE(fd >= 0);
	/* later: 300 ms -> 800 ms */
	REQUIRE(EXPECT_RET(tw_sched(fd, 300 * NSEC_PER_MSEC, 0, 1, 0, &id), 0));
	t0 = now_ns();
	EXPECT_RET(tw_modify(fd, id, 800 * NSEC_PER_MSEC, 0, 2, 0), 1);
	t1 = now_ns();
	n = read_once(fd, ev, 2, 800 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 1, "expected 1 event after MODIFY, got %d", n));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 2);	/* MODIFY replaced it */
	EXPECT_RANGE(ev[0].deadline, t0 + 800 * NSEC_PER_MSEC, t1 + 800 * NSEC_PER_MSEC);
	CHECK(seen >= t0 + 800 * NSEC_PER_MSEC, "read %llu us before the new deadline",
	      (unsigned long long)((t0 + 800 * NSEC_PER_MSEC - seen) / 1000));
	EXPECT_EQ(ev[0].count, 1);
	no_events(fd, 200, "old deadline of the modified timer");

	/* earlier: far future -> 100 ms */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 3, 0, &id2), 0));
	t0 = now_ns();
	EXPECT_RET(tw_modify(fd, id2, 100 * NSEC_PER_MSEC, 0, 4, 0), 1);
	t1 = now_ns();
	REQUIRE(wait_one(fd, ev, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			 "timer moved earlier"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id2);
	EXPECT_EQ(ev[0].user_data, 4);
	EXPECT_RANGE(ev[0].deadline, t0 + 100 * NSEC_PER_MSEC, t1 + 100 * NSEC_PER_MSEC);

	/* absolute, and a one-shot made periodic */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 5, 0, &id), 0));
	t0 = now_ns() + 50 * NSEC_PER_MSEC;
	EXPECT_RET(tw_modify(fd, id, t0, 50 * NSEC_PER_MSEC, 6,
			     TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC), 1);
	REQUIRE(wait_one(fd, ev, 50 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			 "one-shot modified into a periodic timer"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 6);
	CHECK(ev[0].flags & TWHEEL_EVENT_PERIODIC, "flags %#x lack PERIODIC", ev[0].flags);
	CHECK(ev[0].deadline >= t0 && (ev[0].deadline - t0) % (50 * NSEC_PER_MSEC) == 0,
	      "deadline %llu not on the grid %llu + k * 50 ms",
	      (unsigned long long)ev[0].deadline, (unsigned long long)t0);
	EXPECT_RET(tw_cancel(fd, id), 1);
}

static void test_modify_unknown_enoent(void)
{
	int fd = tw_open();
	u64 id;

	REQUIRE(fd >= 0);
	EXPECT_RET(tw_modify(fd, 0, FAR_FUTURE, 0, 0, 0), -ENOENT);
	EXPECT_RET(tw_modify(fd, 1, FAR_FUTURE, 0, 0, 0), -ENOENT);
	EXPECT_RET(tw_modify(fd, ~0ULL, FAR_FUTURE, 0, 0, 0), -ENOENT);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	EXPECT_RET(tw_modify(fd, 0, FAR_FUTURE, 0, 0, 0), -ENOENT);
	EXPECT_EQ(tw_timers(fd), 1);
	EXPECT_RET(tw_modify(fd, id, FAR_FUTURE, 0, 0, 0), 1);
	EXPECT_EQ(tw_timers(fd), 1);
}

static void test_modify_fired_rearms(void)
{
	int fd = tw_open();
	struct pollfd p;
	u64 id;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 1, 0, &id), 0));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	REQUIRE(CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1,
		      "zero-delay timer: no POLLIN"));
	/* fired, event unread: the id is still valid, the timer not pending */
	EXPECT_RET(tw_modify(fd, id, FAR_FUTURE, 0, 2, 0), 0);
	/* re-armed: now it is pending */
	EXPECT_RET(tw_modify(fd, id, FAR_FUTURE, 0, 3, 0), 1);
	EXPECT_RET(tw_cancel(fd, id), 1);
	EXPECT_RET(tw_cancel(fd, id), -ENOENT);
}

/* ------------------------------------------------------------------ */
/* Tests: periodic                                                    */
/* ------------------------------------------------------------------ */

static void test_periodic_fixed_rate_unread(void)
{
	int fd = tw_open();
	struct twheel_event ev[8];
	const u64 P = 100 * NSEC_PER_MSEC;
	u64 id, d0, seen, lo, hi, total = 0;
	struct pollfd p;
	int n;

	REQUIRE(fd >= 0);
	d0 = now_ns() + P;
	REQUIRE(EXPECT_RET(tw_sched(fd, d0, P, 0x77, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC,
				    &id), 0));
	/* readable soon after the first period, but left unread */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&p, 1, (int)((P + g_slack_ns) / NSEC_PER_MSEC)) == 1,
	      "no POLLIN after the first period");
	sleep_ns(d0 + 10 * P + P / 2 - now_ns());	/* ~10.5 periods after d0 */
	EXPECT_EQ(tw_queued(fd), 1);
	n = (int)read(fd, ev, sizeof(ev));
	seen = now_ns();
	REQUIRE(CHECK(n == (int)EV_SIZE, "read returned %d, expected exactly one event (%zu bytes): %s",
		      n, EV_SIZE, n < 0 ? ename(errno) : "-"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 0x77);
	CHECK(ev[0].flags & TWHEEL_EVENT_PERIODIC, "flags %#x lack PERIODIC", ev[0].flags);
	CHECK(ev[0].deadline >= d0 && (ev[0].deadline - d0) % P == 0,
	      "deadline %llu is not d0 + k * period (d0 %llu)",
	      (unsigned long long)ev[0].deadline, (unsigned long long)d0);
	/* every deadline <= fired was an expiry; none after the read */
	lo = (ev[0].fired - d0) / P + 1;
	hi = (seen - d0) / P + 1;
	diag("fixed rate, %llu ms unread: count %llu, elapsed/period %.2f, expected [%llu-1, %llu]",
	     (unsigned long long)((seen - d0 + P) / NSEC_PER_MSEC),
	     (unsigned long long)ev[0].count, (double)(seen - d0 + P) / (double)P,
	     (unsigned long long)lo, (unsigned long long)hi);
	EXPECT_RANGE(ev[0].count, lo - 1, hi);
	total = ev[0].count;

	/* keep going: the counts add up, never one event per expiry */
	sleep_ns(5 * P);
	n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 1, "second read: expected 1 event, got %d", n));
	CHECK_EVENT(&ev[0], seen);
	total += ev[0].count;
	lo = (ev[0].fired - d0) / P + 1;
	hi = (seen - d0) / P + 1;
	CHECK(total + 1 >= lo && total <= hi,
	      "total count %llu over both reads, expected [%llu-1, %llu]",
	      (unsigned long long)total, (unsigned long long)lo, (unsigned long long)hi);
	EXPECT_RET(tw_cancel(fd, id), 1);
}

static void test_periodic_fixed_rate_grid(void)
{
	int fd = tw_open();
	struct twheel_event ev;
	const u64 P = 50 * NSEC_PER_MSEC;
	u64 id, d0, seen = 0, prev, sum = 0, end, last_fired = 0;
	int events = 0;

	REQUIRE(fd >= 0);
	d0 = now_ns() + P;
	REQUIRE(EXPECT_RET(tw_sched(fd, d0, P, 1, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC,
				    &id), 0));
	prev = d0 - P;
	end = d0 + 12 * P;
	while (now_ns() < end) {
		if (!wait_one(fd, &ev, (unsigned int)((P + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "periodic expiry"))
			break;
		events++;
		CHECK_EVENT(&ev, seen);
		EXPECT_EQ(ev.id, id);
		if (!CHECK(ev.deadline > prev && (ev.deadline - d0) % P == 0,
			   "deadline %llu not after %llu on the grid d0 %llu + k * %llu",
			   (unsigned long long)ev.deadline, (unsigned long long)prev,
			   (unsigned long long)d0, (unsigned long long)P))
			break;
		prev = ev.deadline;
		sum += ev.count;
		last_fired = ev.fired;
	}
	EXPECT_RET(tw_cancel(fd, id), 1);
	REQUIRE(CHECK(events >= 2, "only %d events in 12 periods", events));
	diag("fixed rate, read as they come: %d events, %llu expiries, last deadline k=%llu",
	     events, (unsigned long long)sum, (unsigned long long)((prev - d0) / P));
	/* all expiries up to the last one's firing are counted, +-1 */
	EXPECT_RANGE(sum, (last_fired - d0) / P, (last_fired - d0) / P + 2);
}

static void test_periodic_fixed_delay(void)
{
	int fd = tw_open();
	struct twheel_event ev[4];
	const u64 P = 50 * NSEC_PER_MSEC;
	u64 id, t0, seen = 0, prev_fired = 0, sum = 0, end;
	int events = 0, n;

	REQUIRE(fd >= 0);
	t0 = now_ns();
	REQUIRE(EXPECT_RET(tw_sched(fd, P, P, 2, TWHEEL_TIMER_PERIODIC | TWHEEL_TIMER_FIXED_DELAY,
				    &id), 0));
	end = t0 + 12 * P;
	while (now_ns() < end) {
		if (!wait_one(fd, ev, (unsigned int)((P + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "fixed-delay expiry"))
			break;
		events++;
		CHECK_EVENT(&ev[0], seen);
		EXPECT_EQ(ev[0].id, id);
		CHECK(ev[0].flags & TWHEEL_EVENT_PERIODIC, "flags %#x lack PERIODIC", ev[0].flags);
		/* the period counts from the end of the previous expiry */
		if (prev_fired)
			CHECK(ev[0].deadline >= prev_fired + P,
			      "fixed delay: deadline %llu < previous fired %llu + period",
			      (unsigned long long)ev[0].deadline, (unsigned long long)prev_fired);
		prev_fired = ev[0].fired;
		sum += ev[0].count;
	}
	diag("fixed delay, read as they come: %d events, %llu expiries in %llu ms",
	     events, (unsigned long long)sum, (unsigned long long)((seen - t0) / NSEC_PER_MSEC));
	CHECK(events >= 3, "only %d events in 12 periods", events);
	CHECK(sum <= (seen - t0) / P, "%llu expiries in %llu periods",
	      (unsigned long long)sum, (unsigned long long)((seen - t0) / P));

	/* unread: still one event, counting the expiries */
	t0 = now_ns();
	sleep_ns(8 * P);
	n = read_once(fd, ev, 4, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 1, "unread fixed-delay timer: expected 1 event, got %d", n));
	CHECK_EVENT(&ev[0], seen);
	diag("fixed delay, %llu ms unread: count %llu",
	     (unsigned long long)((seen - t0) / NSEC_PER_MSEC), (unsigned long long)ev[0].count);
	EXPECT_RANGE(ev[0].count, 2, (seen - t0) / P + 1);
	EXPECT_RET(tw_cancel(fd, id), 1);
}

/*
 * Periods at the ends of the range: INT64_MAX (the next deadline would
 * overflow s64 if computed carelessly: it must simply never come) and 1 ns
 * (due on every tick: events keep coming, counts add up, nothing early).
 */
static void test_periodic_extreme_periods(void)
{
	static const u32 modes[2] = { 0, TWHEEL_TIMER_FIXED_DELAY };
	int fd = tw_open();
	struct twheel_event ev[8];
	u64 id, d0, seen, sum;
	int n;

	REQUIRE(fd >= 0);
	for (int m = 0; m < 2; m++) {
		const char *mode = m ? "fixed delay" : "fixed rate";

		/* deadline 1 s ago, period INT64_MAX: one expiry, then none */
		d0 = now_ns() - NSEC_PER_SEC;
		REQUIRE(EXPECT_RET(tw_sched(fd, d0, INT64_MAX, 1, TWHEEL_TIMER_ABSTIME |
					    TWHEEL_TIMER_PERIODIC | modes[m], &id), 0));
		n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
		if (CHECK(n == 1, "%s, period INT64_MAX: expected 1 event, got %d", mode, n)) {
			CHECK_EVENT(&ev[0], seen);
			EXPECT_EQ(ev[0].count, 1);
			EXPECT_EQ(ev[0].deadline, d0);
		}
		no_events(fd, 200, "period INT64_MAX after its first expiry");
		/* still a periodic timer, armed for ~292 years from d0 */
		CHECK(tw_cancel(fd, id) == 1, "%s, period INT64_MAX: CANCEL after the first expiry did not return 1 (pending)",
		      mode);

		/* relative start, period INT64_MAX: the first deadline is near now */
		REQUIRE(EXPECT_RET(tw_sched(fd, 0, INT64_MAX, 2, TWHEEL_TIMER_PERIODIC | modes[m],
					    &id), 0));
		n = read_once(fd, ev, 8, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
		CHECK(n == 1 && ev[0].count == 1, "%s, delay 0, period INT64_MAX: %d events, count %llu",
		      mode, n, n ? (unsigned long long)ev[0].count : 0ULL);
		no_events(fd, 200, "period INT64_MAX after its first expiry");
		CHECK(tw_cancel(fd, id) == 1, "%s, delay 0, period INT64_MAX: CANCEL after the first expiry did not return 1 (pending)",
		      mode);

		/* period 1 ns for 300 ms */
		d0 = now_ns();
		REQUIRE(EXPECT_RET(tw_sched(fd, d0, 1, 3, TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC |
					    modes[m], &id), 0));
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
		EXPECT_RET(tw_cancel(fd, id), 1);
		/* drain what the cancel left queued (the fd is non-blocking) */
		while (read(fd, ev, sizeof(ev)) > 0)
			;
		diag("%s, period 1 ns for 300 ms: %d events, %llu expiries", mode, n,
		     (unsigned long long)sum);
		CHECK(n >= 5, "%s, period 1 ns: only %d events in 300 ms", mode, n);
		if (!m)	/* fixed rate counts every nanosecond that passed */
			CHECK(sum >= 100 * NSEC_PER_MSEC && sum <= seen - d0 + 1,
			      "fixed rate, period 1 ns: %llu expiries in %llu ns",
			      (unsigned long long)sum, (unsigned long long)(seen - d0));
		no_events(fd, 100, "period 1 ns after cancel");
	}
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_modify_periodic(void)
{
	int fd = tw_open();
	struct twheel_event ev;
	const u64 P1 = 40 * NSEC_PER_MSEC, P2 = 150 * NSEC_PER_MSEC;
	u64 id, seen, t_mod, d1;
	int after = 0;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, P1, P1, 0xa, TWHEEL_TIMER_PERIODIC, &id), 0));
	REQUIRE(wait_one(fd, &ev, (unsigned int)((P1 + g_slack_ns) / NSEC_PER_MSEC), &seen,
			 "first expiry"));
	EXPECT_EQ(ev.user_data, 0xa);
	d1 = now_ns() + P2;
	REQUIRE(EXPECT_RET(tw_modify(fd, id, d1, P2, 0xb,
				     TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC), 1));
	t_mod = now_ns();
	/* events of the old arming may still be queued; after d1, only the new one */
	while (after < 2 && now_ns() < t_mod + 2 * P2 + g_slack_ns) {
		if (!wait_one(fd, &ev, (unsigned int)((2 * P2 + g_slack_ns) / NSEC_PER_MSEC), &seen,
			      "expiry after MODIFY"))
			break;
		CHECK_EVENT(&ev, seen);
		EXPECT_EQ(ev.id, id);
		if (ev.deadline < t_mod)
			continue;
		after++;
		EXPECT_EQ(ev.user_data, 0xb);
		CHECK(ev.deadline >= d1 && (ev.deadline - d1) % P2 == 0,
		      "deadline %llu not on the new grid %llu + k * %llu",
		      (unsigned long long)ev.deadline, (unsigned long long)d1,
		      (unsigned long long)P2);
	}
	CHECK(after >= 1, "no expiry of the modified periodic timer");
	EXPECT_RET(tw_cancel(fd, id), 1);
}

/* ------------------------------------------------------------------ */
/* Tests: batch                                                       */
/* ------------------------------------------------------------------ */

static void test_batch_all_success(void)
{
	enum { N = 64 };
	int fd = tw_open();
	struct twheel_op ops[N];
	u64 ids[N];

	REQUIRE(fd >= 0);
	fill_schedule_ops(ops, N, FAR_FUTURE, 100);
	for (int i = 0; i < N; i++)
		ops[i].result = -12345;
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, N), N));
	for (int i = 0; i < N; i++) {
		CHECK(ops[i].result == 0, "op %d: result %s, expected 0", i, rstr(ops[i].result));
		ids[i] = ops[i].spec.id;
	}
	REQUIRE(ids_distinct(ids, N));
	EXPECT_EQ(tw_timers(fd), N);

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
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, 4), 4));
	EXPECT_EQ(ops[0].result, 1);
	EXPECT_EQ(ops[1].result, 1);
	EXPECT_EQ(ops[2].result, 0);
	CHECK(ops[2].spec.id != 0, "SCHEDULE op returned id 0");
	EXPECT_EQ(ops[3].result, 1);
	EXPECT_EQ(tw_timers(fd), N - 1);
	EXPECT_RET(tw_cancel(fd, ids[1]), -ENOENT);
	EXPECT_RET(tw_cancel(fd, ops[2].spec.id), 1);

	/* cancel the rest in one batch */
	memset(ops, 0, sizeof(ops));
	for (int i = 3; i < N; i++) {
		ops[i - 3].op = TWHEEL_OP_CANCEL;
		ops[i - 3].spec.id = ids[i];
	}
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, N - 3), N - 3));
	for (int i = 0; i < N - 3; i++)
		CHECK(ops[i].result == 1, "cancel op %d: result %s, expected 1", i, rstr(ops[i].result));
	EXPECT_RET(tw_cancel(fd, ids[0]), 1);
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_batch_partial_failure(void)
{
	int fd = tw_open();
	struct twheel_op ops[5];
	const int sentinel = 0x5a5a5a5a;

	REQUIRE(fd >= 0);
	/* schedule, schedule, cancel(unknown), schedule, schedule */
	fill_schedule_ops(ops, 5, FAR_FUTURE, 10);
	for (int i = 0; i < 5; i++) {
		ops[i].result = sentinel;
		ops[i].spec.id = 0xfeedULL + (u64)i;	/* out field: kernel overwrites on success */
	}
	memset(&ops[2].spec, 0, sizeof(ops[2].spec));
	ops[2].op = TWHEEL_OP_CANCEL;
	ops[2].spec.id = 0x7fffffff12345ULL;
	EXPECT_RET(tw_batch(fd, ops, 5), 2);
	EXPECT_EQ(ops[0].result, 0);
	EXPECT_EQ(ops[1].result, 0);
	EXPECT_EQ(ops[2].result, -ENOENT);
	EXPECT_EQ(ops[3].result, sentinel);
	EXPECT_EQ(ops[4].result, sentinel);
	EXPECT_EQ(ops[3].spec.id, 0xfeed + 3);
	EXPECT_EQ(ops[4].spec.id, 0xfeed + 4);
	/* earlier ops were done: their timers exist */
	EXPECT_EQ(tw_timers(fd), 2);
	CHECK(ops[0].spec.id != 0 && ops[0].spec.id != ops[1].spec.id,
	      "ids %llu, %llu", (unsigned long long)ops[0].spec.id,
	      (unsigned long long)ops[1].spec.id);
	EXPECT_RET(tw_cancel(fd, ops[0].spec.id), 1);
	EXPECT_RET(tw_cancel(fd, ops[1].spec.id), 1);

	/* failure at index 0: nothing done */
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	ops[0].spec.clockid = 0;
	ops[1].result = sentinel;
	ops[2].result = sentinel;
	EXPECT_RET(tw_batch(fd, ops, 3), 0);
	EXPECT_EQ(ops[0].result, -EINVAL);
	EXPECT_EQ(ops[1].result, sentinel);
	EXPECT_EQ(tw_timers(fd), 0);

	/* failure at the last index: ERANGE from a MODIFY */
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, 2), 2));
	ops[2].op = TWHEEL_OP_MODIFY;
	ops[2].spec = mkspec(INT64_MAX, 0, 0, 0);
	ops[2].spec.id = ops[0].spec.id;
	ops[2].result = sentinel;
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	EXPECT_RET(tw_batch(fd, ops, 3), 2);
	EXPECT_EQ(ops[2].result, -ERANGE);
	EXPECT_EQ(tw_timers(fd), 4);
}

static void test_batch_count_einval(void)
{
	int fd = tw_open();
	struct twheel_op *ops = calloc(TWHEEL_BATCH_MAX + 1, sizeof(*ops));
	struct twheel_batch b;

	REQUIRE(fd >= 0 && ops);
	fill_schedule_ops(ops, TWHEEL_BATCH_MAX + 1, FAR_FUTURE, 0);
	EXPECT_RET(tw_batch(fd, ops, 0), -EINVAL);
	EXPECT_RET(tw_batch(fd, ops, TWHEEL_BATCH_MAX + 1), -EINVAL);
	EXPECT_RET(tw_batch(fd, ops, UINT32_MAX), -EINVAL);
	b = (struct twheel_batch){ .ops = 0, .count = 0 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EINVAL);
	EXPECT_EQ(tw_timers(fd), 0);
	/* the largest batch is accepted */
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, TWHEEL_BATCH_MAX), TWHEEL_BATCH_MAX));
	EXPECT_EQ(tw_timers(fd), TWHEEL_BATCH_MAX);
	for (u32 i = 0; i < TWHEEL_BATCH_MAX; i++) {
		u64 id = ops[i].spec.id;

		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].op = TWHEEL_OP_CANCEL;
		ops[i].spec.id = id;
	}
	EXPECT_RET(tw_batch(fd, ops, TWHEEL_BATCH_MAX), TWHEEL_BATCH_MAX);
	EXPECT_EQ(tw_timers(fd), 0);
	free(ops);
}

static void test_batch_efault(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *guard = map_guard();
	int fd = tw_open();
	struct twheel_op *ops;
	struct twheel_batch b;

	REQUIRE(fd >= 0 && guard);
	/* bad ops pointers: nothing done */
	b = (struct twheel_batch){ .ops = 0, .count = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EFAULT);
	b = (struct twheel_batch){ .ops = 0xffff888000000000ULL, .count = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EFAULT);
	b = (struct twheel_batch){ .ops = (uintptr_t)(guard + pg), .count = 1 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EFAULT);
	/* array whose tail runs into the guard page: read before anything runs */
	ops = (struct twheel_op *)(guard + pg) - 3;
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 4 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EFAULT);
	EXPECT_EQ(tw_timers(fd), 0);
	no_events(fd, 50, "after faulting batches");

	/* read-only array: the ops run, the write-back faults */
	ops = (struct twheel_op *)guard;
	fill_schedule_ops(ops, 3, FAR_FUTURE, 0);
	mprotect(guard, pg, PROT_READ);
	b = (struct twheel_batch){ .ops = (uintptr_t)ops, .count = 3 };
	EXPECT_RET(xioctl(fd, TWHEEL_IOC_BATCH, &b), -EFAULT);
	EXPECT_EQ(tw_timers(fd), 3);
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

static void test_eventfd_counts(void)
{
	int fd = tw_open();
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_event ev[4];
	u64 seen, id;
	long total = 0, c, sum = 0;
	int n = 0;

	REQUIRE(fd >= 0 && CHECK(efd >= 0, "eventfd: %s", ename(errno)));
	REQUIRE(EXPECT_RET(tw_eventfd(fd, efd), 0));
	EXPECT_RET(efd_read(efd), -EAGAIN);
	for (int i = 0; i < 3; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, (u64)(i + 1) * 60 * NSEC_PER_MSEC, 0, (u64)i, 0, NULL), 0));
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
		CHECK(c > 0, "eventfd readable but read gave %s", rstr(c));
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
	EXPECT_EQ(n, 3);
	EXPECT_EQ(total, 3);
	EXPECT_RET(efd_read(efd), -EAGAIN);

	/* periodic: at least one signal, at most one per expiry */
	REQUIRE(EXPECT_RET(tw_sched(fd, 20 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC, 9,
				    TWHEEL_TIMER_PERIODIC, &id), 0));
	idle_ms(300);
	EXPECT_RET(tw_cancel(fd, id), 1);
	c = efd_read(efd);
	n = wait_events(fd, ev, 4, 100, NULL);
	for (int i = 0; i < n; i++)
		sum += (long)ev[i].count;
	diag("periodic 20 ms for 300 ms: eventfd counter %ld, event counts %ld", c, sum);
	CHECK(c >= 1 && c <= sum, "eventfd counter %ld, expected in [1, %ld]", c, sum);
	/* cancelled: no more signals */
	idle_ms(100);
	EXPECT_RET(efd_read(efd), -EAGAIN);
}

static void test_eventfd_wrong_type_einval(void)
{
	int fd = tw_open(), fd2 = tw_open();
	int p[2] = { -1, -1 };
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int proc = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0 && fd2 >= 0);
	REQUIRE(CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe: %s", ename(errno)));
	EXPECT_RET(tw_eventfd(fd, p[0]), -EINVAL);
	EXPECT_RET(tw_eventfd(fd, p[1]), -EINVAL);
	if (CHECK(devnull >= 0, "open /dev/null: %s", ename(errno)))
		EXPECT_RET(tw_eventfd(fd, devnull), -EINVAL);
	if (CHECK(ep >= 0, "epoll_create1: %s", ename(errno)))
		EXPECT_RET(tw_eventfd(fd, ep), -EINVAL);
	if (proc >= 0)
		EXPECT_RET(tw_eventfd(fd, proc), -EINVAL);
	EXPECT_RET(tw_eventfd(fd, fd), -EINVAL);
	EXPECT_RET(tw_eventfd(fd, fd2), -EINVAL);
}

static void test_eventfd_ebadf(void)
{
	int fd = tw_open();
	int efd = eventfd(0, EFD_CLOEXEC);
	int hi = 4000;

	REQUIRE(fd >= 0 && CHECK(efd >= 0, "eventfd: %s", ename(errno)));
	while (fcntl(hi, F_GETFD) >= 0)
		hi++;
	EXPECT_RET(tw_eventfd(fd, hi), -EBADF);
	EXPECT_RET(tw_eventfd(fd, INT_MAX), -EBADF);
	close(efd);
	EXPECT_RET(tw_eventfd(fd, efd), -EBADF);	/* just closed */
	/* the fd stays usable */
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), 0);
}

static void test_eventfd_closed_before_expiry(void)
{
	int fd = tw_open();
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), efd2;
	struct twheel_event ev[4];
	u64 id, pid, seen;
	int n;

	REQUIRE(fd >= 0 && CHECK(efd >= 0, "eventfd: %s", ename(errno)));
	REQUIRE(EXPECT_RET(tw_eventfd(fd, efd), 0));
	close(efd);
	REQUIRE(EXPECT_RET(tw_sched(fd, 50 * NSEC_PER_MSEC, 0, 1, 0, &id), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 5 * NSEC_PER_MSEC, 5 * NSEC_PER_MSEC, 2,
				    TWHEEL_TIMER_PERIODIC, &pid), 0));
	idle_ms(200);
	EXPECT_RET(tw_cancel(fd, pid), 1);
	n = wait_events(fd, ev, 2, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	CHECK(n == 2, "expected 2 events (one-shot and periodic), got %d", n);
	no_events(fd, 100, "after the periodic timer was cancelled");
	for (int i = 0; i < n; i++)
		CHECK_EVENT(&ev[i], seen);

	/* a new registration replaces the orphaned one */
	efd2 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(CHECK(efd2 >= 0, "eventfd: %s", ename(errno)));
	REQUIRE(EXPECT_RET(tw_eventfd(fd, efd2), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 3, 0, NULL), 0));
	REQUIRE(wait_one(fd, ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen, "zero-delay"));
	EXPECT_RET(efd_read(efd2), 1);
}

static void test_eventfd_unregister(void)
{
	int fd = tw_open();
	int a = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int b = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct twheel_event ev;

	REQUIRE(fd >= 0 && CHECK(a >= 0 && b >= 0, "eventfd: %s", ename(errno)));
	/* unregistering with nothing registered is harmless */
	EXPECT_RET(tw_eventfd(fd, -1), 0);
	REQUIRE(EXPECT_RET(tw_eventfd(fd, a), 0));
	EXPECT_RET(tw_eventfd(fd, -1), 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 1, 0, NULL), 0));
	REQUIRE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay"));
	EXPECT_RET(efd_read(a), -EAGAIN);

	/* registering b replaces a */
	REQUIRE(EXPECT_RET(tw_eventfd(fd, a), 0));
	REQUIRE(EXPECT_RET(tw_eventfd(fd, b), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 2, 0, NULL), 0));
	REQUIRE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "zero-delay"));
	EXPECT_RET(efd_read(a), -EAGAIN);
	EXPECT_RET(efd_read(b), 1);
}

/* ------------------------------------------------------------------ */
/* Tests: read and poll                                               */
/* ------------------------------------------------------------------ */

static void test_read_small_buffer_einval(void)
{
	int fd = tw_open();
	struct twheel_event ev[2];
	char buf[EV_SIZE];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	static const size_t sizes[] = { 0, 1, 8, EV_SIZE - 1 };

	REQUIRE(fd >= 0);
	/* nothing queued: the size is still checked first */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		ssize_t r = read(fd, buf, sizes[i]);

		CHECK(r == -1 && errno == EINVAL, "empty queue, read(%zu): expected EINVAL, got %zd (%s)",
		      sizes[i], r, ename(errno));
	}
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 1, 0, NULL), 0));
	REQUIRE(CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1, "no POLLIN"));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		ssize_t r = read(fd, buf, sizes[i]);

		CHECK(r == -1 && errno == EINVAL, "event queued, read(%zu): expected EINVAL, got %zd (%s)",
		      sizes[i], r, ename(errno));
	}
	/* the event was not consumed */
	EXPECT_EQ(tw_queued(fd), 1);
	EXPECT_EQ(read(fd, ev, sizeof(ev)), (long)EV_SIZE);
	EXPECT_EQ(ev[0].user_data, 1);
}

static void test_read_whole_events_only(void)
{
	int fd = tw_open();
	struct twheel_event ev[4];
	char *buf = (char *)ev;
	u64 t_end;

	REQUIRE(fd >= 0);
	for (int i = 0; i < 3; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, (u64)i, 0, NULL), 0));
	t_end = now_ns() + g_slack_ns;
	while (tw_queued(fd) < 3 && now_ns() < t_end)
		idle_ms(5);
	REQUIRE(EXPECT_EQ(tw_queued(fd), 3));
	/* 2.5 events of room: 2 whole events */
	memset(ev, 0xee, sizeof(ev));
	EXPECT_EQ(read(fd, buf, 2 * EV_SIZE + EV_SIZE / 2), (long)(2 * EV_SIZE));
	/* nothing written past the whole events */
	CHECK((unsigned char)buf[2 * EV_SIZE] == 0xee, "read wrote past the last whole event");
	EXPECT_EQ(tw_queued(fd), 1);
	EXPECT_EQ(read(fd, buf, sizeof(ev)), (long)EV_SIZE);
	errno = 0;
	CHECK(read(fd, buf, sizeof(ev)) == -1 && errno == EAGAIN, "expected EAGAIN, got %s",
	      ename(errno));
}

static void test_read_nonblock_eagain(void)
{
	int fd = tw_open(), fd2 = tw_open_flags(0);
	struct twheel_event ev;

	REQUIRE(fd >= 0 && fd2 >= 0);
	errno = 0;
	CHECK(read(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN,
	      "O_NONBLOCK read, empty: expected EAGAIN, got %s", ename(errno));
	/* a pending timer does not change that */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), 0));
	errno = 0;
	CHECK(read(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN,
	      "O_NONBLOCK read, timer pending: expected EAGAIN, got %s", ename(errno));
	/* O_NONBLOCK set later with fcntl */
	REQUIRE(CHECK(fcntl(fd2, F_SETFL, O_NONBLOCK) == 0, "fcntl: %s", ename(errno)));
	errno = 0;
	CHECK(read(fd2, &ev, sizeof(ev)) == -1 && errno == EAGAIN,
	      "fcntl O_NONBLOCK read: expected EAGAIN, got %s", ename(errno));
}

static void test_read_blocking_wakes(void)
{
	int fd = tw_open_flags(0);
	struct twheel_event ev[4];
	struct watchdog wd;
	u64 id, t0, seen;
	ssize_t r;

	REQUIRE(fd >= 0);
	t0 = now_ns();
	REQUIRE(EXPECT_RET(tw_sched(fd, 200 * NSEC_PER_MSEC, 0, 0x42, 0, &id), 0));
	REQUIRE(watchdog_start(&wd, fd, 5000));
	r = read(fd, ev, sizeof(ev));
	seen = now_ns();
	CHECK(!watchdog_stop(&wd), "blocking read did not return within 5 s");
	REQUIRE(CHECK(r == (ssize_t)EV_SIZE, "blocking read returned %zd (%s)", r,
		      r < 0 ? ename(errno) : "-"));
	CHECK_EVENT(&ev[0], seen);
	EXPECT_EQ(ev[0].id, id);
	EXPECT_EQ(ev[0].user_data, 0x42);
	CHECK(seen >= t0 + 200 * NSEC_PER_MSEC, "blocking read returned early");
	diag("blocking read returned %lld us after the deadline",
	     (long long)(seen - ev[0].deadline) / 1000);

	/* with an event already queued it returns at once */
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0x43, 0, NULL), 0));
	idle_ms(50);
	REQUIRE(watchdog_start(&wd, fd, 5000));
	r = read(fd, ev, sizeof(ev));
	CHECK(!watchdog_stop(&wd), "blocking read with a queued event did not return");
	CHECK(r == (ssize_t)EV_SIZE && ev[0].user_data == 0x43, "read returned %zd, ud %#llx", r,
	      (unsigned long long)ev[0].user_data);
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

static void test_read_blocking_eintr(void)
{
	int fd = tw_open_flags(0);
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct twheel_event ev;
	struct watchdog wd;
	pthread_t self = pthread_self(), th;
	ssize_t r;
	int err;

	REQUIRE(fd >= 0);
	sigaction(SIGUSR1, &sa, NULL);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), 0));
	REQUIRE(watchdog_start(&wd, fd, 5000));
	pthread_create(&th, NULL, send_usr1, &self);
	r = read(fd, &ev, sizeof(ev));
	err = errno;
	pthread_join(th, NULL);
	CHECK(!watchdog_stop(&wd), "blocking read not interrupted by a signal within 5 s");
	CHECK(r == -1 && err == EINTR, "blocking read + signal: expected EINTR, got %zd (%s)", r,
	      r < 0 ? ename(err) : "-");
}

static void test_poll_pollin(void)
{
	int fd = tw_open();
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	struct twheel_event ev;
	u64 t0, t1, id;
	int r;

	REQUIRE(fd >= 0);
	r = poll(&p, 1, 0);
	CHECK(r == 0 || !(p.revents & POLLIN), "POLLIN with nothing queued (revents %#x)", p.revents);
	REQUIRE(EXPECT_RET(tw_sched(fd, 150 * NSEC_PER_MSEC, 0, 1, 0, &id), 0));
	p.revents = 0;
	p.events = POLLIN;
	r = poll(&p, 1, 0);
	EXPECT_EQ(r, 0);
	t0 = now_ns();
	r = poll(&p, 1, (int)(150 + g_slack_ns / NSEC_PER_MSEC));
	t1 = now_ns();
	REQUIRE(CHECK(r == 1 && (p.revents & POLLIN), "poll: %d, revents %#x", r, p.revents));
	CHECK(t1 - t0 >= 100 * NSEC_PER_MSEC, "poll woke after %llu ms, the timer was 150 ms",
	      (unsigned long long)((t1 - t0) / NSEC_PER_MSEC));
	/* level-triggered: still readable until read */
	EXPECT_EQ(poll(&p, 1, 0), 1);
	EXPECT_EQ(read(fd, &ev, sizeof(ev)), (long)EV_SIZE);
	CHECK(ev.deadline <= t1, "POLLIN before the deadline");
	EXPECT_EQ(poll(&p, 1, 0), 0);
}

static void test_epoll_epollin(void)
{
	int fd = tw_open();
	int ep = epoll_create1(EPOLL_CLOEXEC), ep_et = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ee = { .events = EPOLLIN, .data.u64 = 0x1234 }, out[2];
	struct twheel_event ev[2];
	int r;

	REQUIRE(fd >= 0 && CHECK(ep >= 0 && ep_et >= 0, "epoll_create1: %s", ename(errno)));
	REQUIRE(CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee) == 0, "epoll_ctl: %s", ename(errno)));
	ee.events = EPOLLIN | EPOLLET;
	REQUIRE(CHECK(epoll_ctl(ep_et, EPOLL_CTL_ADD, fd, &ee) == 0, "epoll_ctl ET: %s", ename(errno)));
	EXPECT_EQ(epoll_wait(ep, out, 2, 0), 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, 100 * NSEC_PER_MSEC, 0, 1, 0, NULL), 0));
	r = epoll_wait(ep, out, 2, (int)(100 + g_slack_ns / NSEC_PER_MSEC));
	REQUIRE(CHECK(r == 1 && (out[0].events & EPOLLIN) && out[0].data.u64 == 0x1234,
		      "epoll_wait: %d, events %#x", r, r > 0 ? out[0].events : 0));
	EXPECT_EQ(epoll_wait(ep_et, out, 2, 0), 1);
	EXPECT_EQ(epoll_wait(ep_et, out, 2, 0), 0);	/* edge already reported */
	EXPECT_EQ(epoll_wait(ep, out, 2, 0), 1);	/* level: still there */
	EXPECT_EQ(read(fd, ev, sizeof(ev)), (long)EV_SIZE);
	EXPECT_EQ(epoll_wait(ep, out, 2, 0), 0);
	/* a second expiry is a new edge */
	REQUIRE(EXPECT_RET(tw_sched(fd, 20 * NSEC_PER_MSEC, 0, 2, 0, NULL), 0));
	r = epoll_wait(ep_et, out, 2, (int)(20 + g_slack_ns / NSEC_PER_MSEC));
	CHECK(r == 1, "edge-triggered epoll: second expiry not reported (%d)", r);
	EXPECT_EQ(read(fd, ev, sizeof(ev)), (long)EV_SIZE);
	EXPECT_EQ(ev[0].user_data, 2);
}

/* ------------------------------------------------------------------ */
/* Tests: limits and accounting                                       */
/* ------------------------------------------------------------------ */

static void test_info_counts(void)
{
	int fd = tw_open();
	struct twheel_info info;
	struct twheel_event ev;
	u64 far[3], t_end;

	REQUIRE(fd >= 0);
	memset(&info, 0xa5, sizeof(info));
	REQUIRE(EXPECT_RET(xioctl(fd, TWHEEL_IOC_INFO, &info), 0));
	CHECK(info.granularity_ns > 0 && info.granularity_ns <= NSEC_PER_SEC,
	      "granularity %llu ns", (unsigned long long)info.granularity_ns);
	CHECK(info.max_timers > 0, "max_timers 0");
	EXPECT_EQ(info.timers, 0);
	EXPECT_EQ(info.queued, 0);
	/* The tests run as root: the per-user cap does not apply to it. */
	EXPECT_EQ(info.flags, TWHEEL_INFO_USER_CAP_EXEMPT | TWHEEL_INFO_MAP);
	EXPECT_EQ(info.user_timers, 0);
	CHECK(info.max_user_timers > 0 && info.max_total_timers >= info.max_user_timers,
	      "caps: user %llu, total %llu", (unsigned long long)info.max_user_timers,
	      (unsigned long long)info.max_total_timers);
	diag("granularity %llu ns, max_timers %u, max_user_timers %llu, max_total_timers %llu",
	     (unsigned long long)info.granularity_ns, info.max_timers,
	     (unsigned long long)info.max_user_timers,
	     (unsigned long long)info.max_total_timers);

	for (int i = 0; i < 3; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &far[i]), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0, 0, NULL), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0, 0, NULL), 0));
	t_end = now_ns() + g_slack_ns;
	do {
		REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
		if (info.queued == 2)
			break;
		idle_ms(5);
	} while (now_ns() < t_end);
	EXPECT_EQ(info.queued, 2);
	EXPECT_EQ(info.timers, 5);		/* fired with unread events still count */
	EXPECT_EQ(read(fd, &ev, sizeof(ev)), (long)EV_SIZE);
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT_EQ(info.queued, 1);
	EXPECT_EQ(info.timers, 4);
	EXPECT_RET(tw_cancel(fd, far[0]), 1);
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT_EQ(info.timers, 3);
	EXPECT_EQ(info.queued, 1);
	/* a periodic timer with a queued event counts once, as one event */
	{
		u64 pid;
		REQUIRE(EXPECT_RET(tw_sched(fd, 0, 10 * NSEC_PER_MSEC, 0, TWHEEL_TIMER_PERIODIC, &pid), 0));
		idle_ms(100);
		REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
		EXPECT_EQ(info.timers, 4);
		EXPECT_EQ(info.queued, 2);
		EXPECT_RET(tw_cancel(fd, pid), 1);
	}
}

static void test_limit_enospc(void)
{
	int fd = tw_open();
	struct twheel_info info;
	struct twheel_op *ops;
	u64 *ids, probe, t_end, t_fill, t_checks, t_close;
	u32 max, done = 0;
	struct twheel_event ev;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	max = info.max_timers;
	if (max > (1u << 20)) {
		skip("max_timers %u is too many to fill in a test", max);
		return;
	}
	ops = calloc(TWHEEL_BATCH_MAX, sizeof(*ops));
	ids = calloc(max, sizeof(*ids));
	REQUIRE(CHECK(ops && ids, "out of memory"));
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
	REQUIRE(EXPECT_EQ(tw_timers(fd), max));
	/* full: single and batched schedules fail, nothing changes */
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), -ENOSPC);
	EXPECT_RET(tw_sched(fd, 0, 0, 0, 0, NULL), -ENOSPC);
	fill_schedule_ops(ops, 2, FAR_FUTURE, 0);
	EXPECT_RET(tw_batch(fd, ops, 2), 0);
	EXPECT_EQ(ops[0].result, -ENOSPC);
	EXPECT_EQ(tw_timers(fd), max);
	/* modify does not need room */
	EXPECT_RET(tw_modify(fd, ids[1], FAR_FUTURE, 0, 0, 0), 1);
	/* cancel 10: room for exactly 10 */
	for (int i = 0; i < 10; i++)
		EXPECT_RET(tw_cancel(fd, ids[max - 1 - (u32)i]), 1);
	EXPECT_EQ(tw_timers(fd), max - 10);
	fill_schedule_ops(ops, 11, FAR_FUTURE, 0);
	EXPECT_RET(tw_batch(fd, ops, 11), 10);
	EXPECT_EQ(ops[10].result, -ENOSPC);
	EXPECT_EQ(tw_timers(fd), max);
	/* a fired one-shot holds its slot until its event is read */
	REQUIRE(EXPECT_RET(tw_modify(fd, ids[0], 0, 0, 0xf1, 0), 1));
	t_end = now_ns() + g_slack_ns;
	while (tw_queued(fd) < 1 && now_ns() < t_end)
		idle_ms(5);
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), -ENOSPC);
	REQUIRE(EXPECT_EQ(read(fd, &ev, sizeof(ev)), (long)EV_SIZE));
	EXPECT_EQ(ev.user_data, 0xf1);
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &probe), 0);
	EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), -ENOSPC);
	EXPECT_EQ(tw_timers(fd), max);
	t_checks = now_ns() - t_checks;
	t_close = now_ns();
	close(fd);
	t_close = now_ns() - t_close;
	diag("filled %u timers in %.2f s, checks %.2f s, close %.2f s", max,
	     (double)t_fill / 1e9, (double)t_checks / 1e9, (double)t_close / 1e9);
	free(ops);
	free(ids);
}

static void test_schedule_ids_unique(void)
{
	enum { N = 2000 };
	int fd = tw_open();
	u64 *ids = calloc(N, sizeof(*ids));

	REQUIRE(fd >= 0 && ids);
	for (int i = 0; i < N; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &ids[i]), 0));
	ids_distinct(ids, N);
	EXPECT_EQ(tw_timers(fd), N);
	/* cancel half, schedule again: the live ids stay distinct */
	for (int i = 0; i < N; i += 2)
		EXPECT_RET(tw_cancel(fd, ids[i]), 1);
	for (int i = 0; i < N; i += 2)
		REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &ids[i]), 0));
	ids_distinct(ids, N);
	for (int i = 0; i < N; i++)
		EXPECT_RET(tw_cancel(fd, ids[i]), 1);
	EXPECT_EQ(tw_timers(fd), 0);
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
static u64 tw_user_units(int fd)
{
	struct twheel_info info;

	if (!EXPECT_RET(tw_info(fd, &info), 0))
		return 0;
	return info.user_timers;
}

/* A number from /proc/self/fdinfo/@fd ("twheel-extended", ...), or -1. */
static long long fdinfo_val(int fd, const char *key)
{
	char path[64], line[128];
	long long v = -1;
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtoll(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The size every mapping of @fd must have. */
static size_t map_len(int fd)
{
	struct twheel_info info;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!EXPECT_RET(tw_info(fd, &info), 0))
		return 0;
	return (TWHEEL_MAP_SIZE(info.max_timers) + page - 1) / page * page;
}

static u64 *tw_map(int fd, int prot)
{
	void *p = mmap(NULL, map_len(fd), prot, MAP_SHARED, fd, 0);

	if (!CHECK(p != MAP_FAILED, "mmap: %s", ename(errno)))
		return NULL;
	return p;
}

static volatile u64 *slot_of(u64 *map, u64 id)
{
	return &map[TWHEEL_ID_SLOT(id)];
}

static void test_table_stale_ids(void)
{
	int fd = tw_open();
	u64 a, b, c, d, e, f;
	struct twheel_event ev;

	REQUIRE(fd >= 0);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &a), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &b), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &c), 0));
	/* slots from 0, generation 0 */
	EXPECT_EQ(a, 1);
	EXPECT_EQ(b, 2);
	EXPECT_EQ(c, 3);
	/* a released slot is taken first, under the next generation */
	EXPECT_RET(tw_cancel(fd, b), 1);
	EXPECT_RET(tw_cancel(fd, b), -ENOENT);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &d), 0));
	EXPECT_EQ(TWHEEL_ID_SLOT(d), TWHEEL_ID_SLOT(b));
	EXPECT_EQ(ID_GEN(d), ID_GEN(b) + 1);
	EXPECT_RET(tw_modify(fd, b, FAR_FUTURE, 0, 0, 0), -ENOENT);
	EXPECT_RET(tw_cancel(fd, b), -ENOENT);
	/* a fired one-shot's slot is released when its event is read */
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0xe, 0, &e), 0));
	REQUIRE(wait_one(fd, &ev, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL, "e"));
	EXPECT_EQ(ev.id, e);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &f), 0));
	EXPECT_EQ(TWHEEL_ID_SLOT(f), TWHEEL_ID_SLOT(e));
	EXPECT_EQ(ID_GEN(f), ID_GEN(e) + 1);
	EXPECT_RET(tw_cancel(fd, e), -ENOENT);
	/* ids that name no slot, or another generation of a live one */
	EXPECT_RET(tw_cancel(fd, 0x7fffffffULL), -ENOENT);
	EXPECT_RET(tw_cancel(fd, a + (5ULL << 32)), -ENOENT);
	EXPECT_RET(tw_cancel(fd, a | 0xffffffff00000000ULL), -ENOENT);
	EXPECT_RET(tw_cancel(fd, a & ~0xffffffffULL), -ENOENT);
	EXPECT_RET(tw_cancel(fd, a), 1);
	EXPECT_RET(tw_cancel(fd, c), 1);
	EXPECT_RET(tw_cancel(fd, d), 1);
	EXPECT_RET(tw_cancel(fd, f), 1);
	EXPECT_EQ(tw_timers(fd), 0);
	close(fd);
}

/*
 * What a file holds against the caps: a unit per timer object (kept for
 * reuse after a cancel) and page_units() per page of its table; all of it
 * goes when the file is closed. The steady state allocates nothing.
 */
static void test_table_units(void)
{
	enum { N = 1024 };
	static struct twheel_op ops[N];
	int fd = tw_open(), probe = tw_open();
	u64 base, chunks = (N + 255) / 256;

	REQUIRE(fd >= 0 && probe >= 0);
	base = tw_user_units(probe);
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &ops[0].spec.id), 0));
	EXPECT_EQ(tw_user_units(probe) - base, 1 + page_units());
	EXPECT_RET(tw_cancel(fd, ops[0].spec.id), 1);
	/* kept for reuse: still counted */
	EXPECT_EQ(tw_user_units(probe) - base, 1 + page_units());
	EXPECT_EQ(fdinfo_val(fd, "twheel-spare"), 1);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			ops[i] = (struct twheel_op){ .op = TWHEEL_OP_SCHEDULE,
				.spec = mkspec(FAR_FUTURE, 0, (u64)i, 0) };
		}
		REQUIRE(EXPECT_RET(tw_batch(fd, ops, N), N));
		EXPECT_EQ(tw_timers(fd), N);
		for (int i = 0; i < N; i++) {
			u64 id = ops[i].spec.id;

			ops[i] = (struct twheel_op){ .op = TWHEEL_OP_CANCEL };
			ops[i].spec.id = id;
		}
		REQUIRE(EXPECT_RET(tw_batch(fd, ops, N), N));
		EXPECT_EQ(tw_timers(fd), 0);
		/* the same N objects and the same table, round after round */
		EXPECT_EQ(tw_user_units(probe) - base, N + chunks * page_units());
		EXPECT_EQ(fdinfo_val(fd, "twheel-slots"), (long long)(chunks * 256));
	}
	close(fd);
	EXPECT_EQ(tw_user_units(probe), base);
	close(probe);
}

static void test_map_args(void)
{
	int fd = tw_open(), probe = tw_open();
	size_t len, page = (size_t)sysconf(_SC_PAGESIZE);
	struct twheel_info info;
	u64 *m1, *m2, *ro, id, base;
	void *p;

	REQUIRE(fd >= 0 && probe >= 0);
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT(info.flags & TWHEEL_INFO_MAP);
	len = map_len(fd);
	REQUIRE(len);
	base = tw_user_units(probe);
	p = mmap(NULL, len - page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "mmap of one page less: %s",
	      p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len + page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "mmap of one page more: %s",
	      p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)page);
	CHECK(p == MAP_FAILED && errno == EINVAL, "mmap at offset one page: %s",
	      p == MAP_FAILED ? ename(errno) : "mapped");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "private mmap: %s",
	      p == MAP_FAILED ? ename(errno) : "mapped");
	/* nothing allocated by the refusals */
	EXPECT_EQ(tw_user_units(probe), base);

	m1 = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(m1);
	EXPECT_EQ(tw_user_units(probe) - base, len / page * page_units());
	EXPECT_EQ(fdinfo_val(fd, "twheel-mapped"), 1);
	m2 = tw_map(fd, PROT_READ | PROT_WRITE);
	ro = tw_map(fd, PROT_READ);
	REQUIRE(m2 && ro);
	/* one array: the second mapping costs nothing */
	EXPECT_EQ(tw_user_units(probe) - base, len / page * page_units());
	/* every arming stores its deadline; all mappings see one array */
	REQUIRE(EXPECT_RET(tw_sched(fd, 1000 * NSEC_PER_SEC, 0, 0, TWHEEL_TIMER_ABSTIME, &id), 0));
	EXPECT_EQ(*slot_of(m1, id), 1000 * NSEC_PER_SEC);
	EXPECT_EQ(*slot_of(ro, id), 1000 * NSEC_PER_SEC);
	*slot_of(m2, id) = 1234;
	EXPECT_EQ(*slot_of(m1, id), 1234);
	EXPECT_EQ(*slot_of(ro, id), 1234);
	/* the last slot exists */
	m1[len / sizeof(u64) - 1] = 42;
	EXPECT_EQ(ro[len / sizeof(u64) - 1], 42);
	/* a mapping does not grow */
	p = mremap(m1, len, len + page, MREMAP_MAYMOVE);
	CHECK(p == MAP_FAILED, "mremap grew the mapping");
	munmap(m1, len);
	munmap(m2, len);
	munmap(ro, len);
	EXPECT_RET(tw_cancel(fd, id), 1);
	close(fd);
	EXPECT_EQ(tw_user_units(probe), base);
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
	EXPECT_EQ(ev.id, id);
	EXPECT_EQ(ev.count, 1);
	CHECK(ev.deadline == deadline, "%s: deadline %llu, expected %llu", what,
	      (unsigned long long)ev.deadline, (unsigned long long)deadline);
	CHECK(seen >= deadline, "%s: seen %llu before the deadline %llu", what,
	      (unsigned long long)seen, (unsigned long long)deadline);
}

static void test_map_extend(void)
{
	int fd = tw_open();
	u64 *map, id, t0, dl, ext;

	REQUIRE(fd >= 0);
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	t0 = now_ns();
	REQUIRE(EXPECT_RET(tw_sched(fd, 100 * NSEC_PER_MSEC, 0, 7, 0, &id), 0));
	dl = *slot_of(map, id);
	EXPECT_RANGE(dl, t0 + 100 * NSEC_PER_MSEC, now_ns() + 100 * NSEC_PER_MSEC);
	/* pushed back twice, with plain stores */
	ext = dl + 200 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	idle_ms(150);
	ext += 200 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	expect_fire_at(fd, id, ext, "extended timer");
	EXPECT(fdinfo_val(fd, "twheel-extended") >= 1);
	EXPECT(fdinfo_val(fd, "twheel-extended") <= 2);
	EXPECT_EQ(tw_timers(fd), 0);
	munmap(map, map_len(fd));
	close(fd);
}

/* Garbage in a slot affects that timer only, and never makes it early. */
static void test_map_garbage(void)
{
	static const u64 bad[] = { 0, 1, 1ULL << 63, ~0ULL };
	int fd = tw_open();
	u64 *map, id[4], far, per, dl[4];

	REQUIRE(fd >= 0);
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	for (int i = 0; i < 4; i++) {
		REQUIRE(EXPECT_RET(tw_sched(fd, (50 + 10 * (u64)i) * NSEC_PER_MSEC, 0, (u64)i, 0,
					    &id[i]), 0));
		dl[i] = *slot_of(map, id[i]);
		*slot_of(map, id[i]) = bad[i];
	}
	/* 0 and 1 are earlier: the timers fire as armed */
	expect_fire_at(fd, id[0], dl[0], "slot 0");
	expect_fire_at(fd, id[1], dl[1], "slot 1");
	/* above INT64_MAX: taken as INT64_MAX, so pending for ever */
	no_events(fd, 300, "slots beyond INT64_MAX");
	EXPECT_RET(tw_cancel(fd, id[2]), 1);
	EXPECT_RET(tw_cancel(fd, id[3]), 1);
	/* periodic timers ignore their slot */
	REQUIRE(EXPECT_RET(tw_sched(fd, 20 * NSEC_PER_MSEC, 20 * NSEC_PER_MSEC, 0,
				    TWHEEL_TIMER_PERIODIC, &per), 0));
	*slot_of(map, per) = ~0ULL;
	{
		struct twheel_event ev;

		REQUIRE(wait_one(fd, &ev, 20 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL,
				 "periodic"));
		EXPECT_EQ(ev.id, per);
	}
	EXPECT_RET(tw_cancel(fd, per), 1);
	/* a slot with no timer: nothing happens */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &far), 0));
	map[TWHEEL_ID_SLOT(far) + 1] = 1;
	EXPECT_RET(tw_cancel(fd, far), 1);
	EXPECT_EQ(tw_timers(fd), 0);
	munmap(map, map_len(fd));
	close(fd);
}

/*
 * A store racing the expiry: each timer is pushed back once, right about
 * when it comes due. Either the kernel saw the store (one event, at the
 * new deadline) or it did not (one event, at the old one): never both,
 * never neither.
 */
static void test_map_race_expiry(void)
{
	enum { N = 300 };
	static u64 id[N], dl[N], ext[N];
	static struct twheel_event ev[N];
	bool seen_id[N] = { false };
	int fd = tw_open(), got, late = 0, moved = 0;
	u64 *map, t0, seed = g_seed;

	REQUIRE(fd >= 0);
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	t0 = now_ns() + 100 * NSEC_PER_MSEC;
	for (int i = 0; i < N; i++) {
		dl[i] = t0 + (u64)i * 300 * NSEC_PER_USEC;
		REQUIRE(EXPECT_RET(tw_sched(fd, dl[i], 0, (u64)i, TWHEEL_TIMER_ABSTIME, &id[i]), 0));
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
	EXPECT_EQ(got, N);
	for (int k = 0; k < got; k++) {
		int i = (int)ev[k].user_data;

		if (!CHECK(i >= 0 && i < N && ev[k].id == id[i] && !seen_id[i],
			   "event %d: id %#llx user_data %llu: unknown or twice", k,
			   (unsigned long long)ev[k].id, (unsigned long long)ev[k].user_data))
			continue;
		seen_id[i] = true;
		CHECK_EVENT(&ev[k], 0);
		EXPECT_EQ(ev[k].count, 1);
		if (ev[k].deadline == ext[i])
			moved++;
		else if (CHECK(ev[k].deadline == dl[i], "timer %d: deadline %llu, neither %llu nor %llu",
			       i, (unsigned long long)ev[k].deadline,
			       (unsigned long long)dl[i], (unsigned long long)ext[i]))
			late++;
	}
	no_events(fd, 100, "after one event per timer");
	EXPECT_EQ(moved + late, N);
	EXPECT_EQ(fdinfo_val(fd, "twheel-extended"), moved);
	diag("%d of %d stores were in time to move their timer", moved, N);
	EXPECT_EQ(tw_timers(fd), 0);
	munmap(map, map_len(fd));
	close(fd);
}

/* MODIFY and CANCEL win over stores; a fired timer ignores its slot. */
static void test_map_modify_cancel(void)
{
	int fd = tw_open();
	u64 *map, id, dl, c, f;
	struct twheel_event ev;

	REQUIRE(fd >= 0);
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	/* MODIFY stores its own deadline over the program's: earlier wins */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, &id), 0));
	*slot_of(map, id) = now_ns() + 10 * NSEC_PER_SEC;
	EXPECT_RET(tw_modify(fd, id, 80 * NSEC_PER_MSEC, 0, 0, 0), 1);
	dl = *slot_of(map, id);
	CHECK(dl < now_ns() + 100 * NSEC_PER_MSEC, "MODIFY did not store its deadline");
	expect_fire_at(fd, id, dl, "modified timer");
	/* CANCEL: the extension stored before does not bring it back */
	REQUIRE(EXPECT_RET(tw_sched(fd, 50 * NSEC_PER_MSEC, 0, 0, 0, &c), 0));
	*slot_of(map, c) = *slot_of(map, c) + 100 * NSEC_PER_MSEC;
	EXPECT_RET(tw_cancel(fd, c), 1);
	*slot_of(map, c) = now_ns() + 200 * NSEC_PER_MSEC;
	/* a fired one-shot with its event unread is not moved by a store */
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 0xf, 0, &f), 0));
	REQUIRE(wait_events(fd, &ev, 1, (unsigned int)(g_slack_ns / NSEC_PER_MSEC), NULL) == 1);
	EXPECT_EQ(ev.id, f);
	no_events(fd, 400, "after CANCEL and a store");
	EXPECT_EQ(tw_timers(fd), 0);
	munmap(map, map_len(fd));
	close(fd);
}

/* munmap with timers pending; close with a mapping left; fork. */
static void test_map_lifetime(void)
{
	int fd = tw_open(), probe = tw_open(), st;
	size_t len = map_len(fd);
	u64 *map, id, ext, base, units;
	pid_t pid;

	REQUIRE(fd >= 0 && probe >= 0 && len);
	base = tw_user_units(probe);
	/* the array outlives the mapping: an extension stored before holds */
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	REQUIRE(EXPECT_RET(tw_sched(fd, 60 * NSEC_PER_MSEC, 0, 1, 0, &id), 0));
	ext = *slot_of(map, id) + 150 * NSEC_PER_MSEC;
	*slot_of(map, id) = ext;
	munmap(map, len);
	expect_fire_at(fd, id, ext, "extended, then unmapped");

	/* fork: the child's store moves the parent's timer */
	map = tw_map(fd, PROT_READ | PROT_WRITE);
	REQUIRE(map);
	REQUIRE(EXPECT_RET(tw_sched(fd, 100 * NSEC_PER_MSEC, 0, 2, 0, &id), 0));
	ext = *slot_of(map, id) + 150 * NSEC_PER_MSEC;
	fflush(stdout);
	pid = fork();
	REQUIRE(CHECK(pid >= 0, "fork: %s", ename(errno)));
	if (!pid) {
		*slot_of(map, id) = ext;
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "child failed (status %#x)", st);
	expect_fire_at(fd, id, ext, "extended by the child");

	/* close with the mapping alive: the file lives until munmap */
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 3, 0, &id), 0));
	units = tw_user_units(probe);
	CHECK(units > base, "nothing counted for the open file");
	close(fd);
	EXPECT_EQ(tw_user_units(probe), units);
	EXPECT(*slot_of(map, id) > now_ns());
	*slot_of(map, id) = 1;
	munmap(map, len);
	EXPECT_EQ(tw_user_units(probe), base);
	close(probe);
}

/* ------------------------------------------------------------------ */
/* Tests: concurrency, lifetime, isolation                            */
/* ------------------------------------------------------------------ */

enum { THR_OPS = 1500, THR_N = 3, SHORT_N = 400 };

struct thr_arg {
	int fd;
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
			long r = tw_cancel(a->fd, live[k]);

			if (r != 1) {
				FAIL("thread %d: cancel %llu: %s", a->idx,
				     (unsigned long long)live[k], rstr(r));
				a->errors++;
			}
			live[k] = live[--nlive];
		} else {
			u64 id;
			long r = tw_sched(a->fd, FAR_FUTURE, 0, (u64)a->idx, 0, &id);

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

static void *thr_short(void *p)
{
	struct thr_arg *a = p;

	for (int i = 0; i < SHORT_N; i++) {
		u64 id;
		long r = tw_sched(a->fd, (u64)(i % 50) * NSEC_PER_MSEC, 0, 1000 + (u64)i, 0, &id);

		if (r != 0) {
			FAIL("short thread: schedule: %s", rstr(r));
			a->errors++;
		}
	}
	return NULL;
}

static void test_threads_one_fd(void)
{
	int fd = tw_open();
	static struct thr_arg args[THR_N + 1];
	pthread_t th[THR_N + 1];
	struct twheel_event ev[64];
	bool seen_short[SHORT_N] = { false };
	int nshort = 0, total_live = 0;
	u64 *all, seen, t_end;

	REQUIRE(fd >= 0);
	for (int i = 0; i <= THR_N; i++) {
		args[i] = (struct thr_arg){ .fd = fd, .idx = i };
		pthread_create(&th[i], NULL, i < THR_N ? thr_sched_cancel : thr_short, &args[i]);
	}
	/* meanwhile, read the short timers' events */
	t_end = now_ns() + 10 * NSEC_PER_SEC;
	while (nshort < SHORT_N && now_ns() < t_end) {
		int n = wait_events(fd, ev, 64, 200, &seen);

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
	for (int i = 0; i <= THR_N; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(nshort, SHORT_N);
	for (int i = 0; i < THR_N; i++) {
		EXPECT_EQ(args[i].errors, 0);
		total_live += args[i].nids;
	}
	all = calloc((size_t)total_live + 1, sizeof(*all));
	REQUIRE(all);
	for (int i = 0, k = 0; i < THR_N; i++)
		for (int j = 0; j < args[i].nids; j++)
			all[k++] = args[i].ids[j];
	ids_distinct(all, (size_t)total_live);
	EXPECT_EQ(tw_timers(fd), total_live);
	EXPECT_EQ(tw_queued(fd), 0);
	diag("%d threads: %d timers left live, %d short timers read", THR_N, total_live, nshort);
	/* every live id is cancellable exactly once */
	for (int i = 0; i < total_live; i++)
		if (!EXPECT_RET(tw_cancel(fd, all[i]), 1))
			break;
	EXPECT_EQ(tw_timers(fd), 0);
	free(all);
}

static void test_close_while_firing(void)
{
	enum { ROUNDS = 4, N = 128 };
	static struct twheel_op ops[N];
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	long before;

	REQUIRE(CHECK(efd >= 0, "eventfd: %s", ename(errno)));
	for (int r = 0; r < ROUNDS; r++) {
		int fd = tw_open();
		struct twheel_info info;

		REQUIRE(fd >= 0);
		REQUIRE(EXPECT_RET(tw_eventfd(fd, efd), 0));
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
		REQUIRE(EXPECT_RET(tw_batch(fd, ops, N), N));
		idle_ms(30 + 20 * (u32)r);
		CHECK(efd_read(efd) > 0, "round %d: no expiry signalled", r);
		CHECK(close(fd) == 0, "close: %s", ename(errno));
		/* reopen works and is empty */
		fd = tw_open();
		REQUIRE(fd >= 0);
		REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
		EXPECT_EQ(info.timers, 0);
		EXPECT_EQ(info.queued, 0);
		EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 0, 0, NULL), 0);
		close(fd);
	}
	/* closed: the eventfd is not signalled any more */
	idle_ms(20);
	before = efd_read(efd);
	idle_ms(200);
	EXPECT_RET(efd_read(efd), -EAGAIN);
	diag("signals after the last close settled: %s (before the quiet period)", rstr(before));
}

static void test_fork_shared_fd(void)
{
	int fd = tw_open();
	int pp[2];
	u64 far, zero, child_ids[2] = { 0, 0 }, seen;
	struct twheel_event ev;
	pid_t pid;
	int st;

	REQUIRE(fd >= 0);
	REQUIRE(CHECK(pipe2(pp, O_CLOEXEC) == 0, "pipe: %s", ename(errno)));
	REQUIRE(EXPECT_RET(tw_sched(fd, FAR_FUTURE, 0, 1, 0, &far), 0));
	REQUIRE(EXPECT_RET(tw_sched(fd, 0, 0, 2, 0, &zero), 0));
	fflush(stdout);
	pid = fork();
	REQUIRE(CHECK(pid >= 0, "fork: %s", ename(errno)));
	if (pid == 0) {
		/* the child: same open file, same timers, same queue */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct twheel_event cev;
		u64 out[2] = { 0, 0 };

		alarm(10);
		g_failed = 0;
		EXPECT_RET(tw_cancel(fd, far), 1);		/* the parent's timer */
		if (CHECK(poll(&p, 1, (int)(g_slack_ns / NSEC_PER_MSEC)) == 1, "child: no POLLIN") &&
		    EXPECT_EQ(read(fd, &cev, sizeof(cev)), (long)EV_SIZE)) {
			EXPECT_EQ(cev.id, zero);		/* read here, not in the parent */
			out[0] = cev.id;
		}
		EXPECT_RET(tw_sched(fd, 100 * NSEC_PER_MSEC, 0, 0xc4117d, 0, &out[1]), 0);
		if (write(pp[1], out, sizeof(out)) != sizeof(out))
			FAIL("child: pipe write");
		fflush(stdout);
		_exit(g_failed ? 1 : 0);
	}
	close(pp[1]);
	CHECK(read(pp[0], child_ids, sizeof(child_ids)) == sizeof(child_ids), "no word from the child");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child failed (status %#x)", st);
	/* the child cancelled the parent's timer */
	EXPECT_RET(tw_cancel(fd, far), -ENOENT);
	/* the child consumed the zero-delay event: not seen here */
	EXPECT_EQ(child_ids[0], zero);
	/* the child's timer (it has exited) fires on the shared file */
	REQUIRE(wait_one(fd, &ev, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen,
			 "child's timer"));
	CHECK_EVENT(&ev, seen);
	EXPECT_EQ(ev.id, child_ids[1]);
	EXPECT_EQ(ev.user_data, 0xc4117d);
	no_events(fd, 100, "after the child's event");
	EXPECT_EQ(tw_timers(fd), 0);
}

static void test_two_fds_isolation(void)
{
	int a = tw_open(), b = tw_open();
	struct twheel_event ev[4];
	u64 ida, idb, ida2, seen;
	int n;

	REQUIRE(a >= 0 && b >= 0);
	REQUIRE(EXPECT_RET(tw_sched(a, 100 * NSEC_PER_MSEC, 0, 0xa, 0, &ida), 0));
	REQUIRE(EXPECT_RET(tw_sched(a, FAR_FUTURE, 0, 0xa, 0, &ida2), 0));
	REQUIRE(EXPECT_RET(tw_sched(b, FAR_FUTURE, 0, 0xb, 0, &idb), 0));
	/* ids of a are unknown to b unless they happen to coincide with b's */
	if (ida != idb)
		EXPECT_RET(tw_cancel(b, ida), -ENOENT);
	if (ida2 != idb) {
		EXPECT_RET(tw_cancel(b, ida2), -ENOENT);
		EXPECT_RET(tw_modify(b, ida2, 0, 0, 0, 0), -ENOENT);
	}
	if (idb != ida && idb != ida2)
		EXPECT_RET(tw_cancel(a, idb), -ENOENT);
	EXPECT_EQ(tw_timers(a), 2);
	EXPECT_EQ(tw_timers(b), 1);
	/* events only on a */
	n = read_once(a, ev, 4, 100 + (unsigned int)(g_slack_ns / NSEC_PER_MSEC), &seen);
	REQUIRE(CHECK(n == 1, "fd a: expected 1 event, got %d", n));
	no_events(a, 100, "fd a after its one-shot");
	EXPECT_EQ(ev[0].id, ida);
	EXPECT_EQ(ev[0].user_data, 0xa);
	no_events(b, 100, "fd b");
	EXPECT_EQ(tw_queued(b), 0);
	/* both still hold their far timers */
	EXPECT_RET(tw_cancel(a, ida2), 1);
	EXPECT_RET(tw_cancel(b, idb), 1);
}

static void test_many_timers(void)
{
	enum { N = 10000 };
	const u64 span = 500 * NSEC_PER_MSEC;
	int fd = tw_open();
	struct twheel_op *ops = calloc(TWHEEL_BATCH_MAX, sizeof(*ops));
	u64 *ids = calloc(N, sizeof(*ids)), *delay = calloc(N, sizeof(*delay));
	u64 *t0 = calloc(N, sizeof(*t0)), *t1 = calloc(N, sizeof(*t1));
	unsigned char *got = calloc(N, 1);
	struct twheel_event *ev = calloc(1024, EV_SIZE);
	u64 max_late = 0, t_end, seen, inversions = 0, prev_dl = 0;
	/*
	 * 10000 expiries within 500 ms queue up behind each other on a slow
	 * (emulated, KASAN) machine: allow the slack plus 200 us per timer.
	 */
	const u64 burst_slack = g_slack_ns + N * 200 * NSEC_PER_USEC;
	const u64 saved_slack = g_slack_ns;
	struct twheel_info info;
	int nread = 0, dups = 0;

	REQUIRE(fd >= 0 && CHECK(ops && ids && delay && t0 && t1 && got && ev, "out of memory"));
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
		REQUIRE(EXPECT_RET(tw_batch(fd, ops, (u32)n), n));
		b = now_ns();
		for (int i = 0; i < n; i++) {
			ids[done + i] = ops[i].spec.id;
			t0[done + i] = a;
			t1[done + i] = b;
		}
		done += n;
	}
	REQUIRE(ids_distinct(ids, N));
	g_slack_ns = burst_slack;	/* CHECK_EVENT's lateness bound */
	t_end = now_ns() + span + 10 * NSEC_PER_SEC;
	while (nread < N && now_ns() < t_end) {
		int n = wait_events(fd, ev, 1024, 500, &seen);

		for (int j = 0; j < n; j++) {
			u64 i = ev[j].user_data;

			if (!CHECK(i < N && ev[j].id == ids[i], "event id %llu ud %llu unknown",
				   (unsigned long long)ev[j].id, (unsigned long long)i))
				continue;
			if (got[i]++) {
				dups++;
				continue;
			}
			if (!CHECK_EVENT(&ev[j], seen) ||
			    !EXPECT_RANGE(ev[j].deadline, t0[i] + delay[i], t1[i] + delay[i]) ||
			    !EXPECT_EQ(ev[j].count, 1))
				REQUIRE(g_failed < 20);
			if (ev[j].fired - ev[j].deadline > max_late)
				max_late = ev[j].fired - ev[j].deadline;
			if (ev[j].deadline < prev_dl)
				inversions++;
			prev_dl = ev[j].deadline;
		}
		nread += n;
	}
	g_slack_ns = saved_slack;
	CHECK(nread == N && dups == 0, "read %d events (%d duplicates), expected %d", nread, dups, N);
	no_events(fd, 200, "after all timers fired");
	REQUIRE(EXPECT_RET(tw_info(fd, &info), 0));
	EXPECT_EQ(info.timers, 0);
	EXPECT_EQ(info.queued, 0);
	diag("%d timers over %llu ms: max lateness %llu us (bound %llu us), %llu deadline inversions in read order",
	     N, (unsigned long long)(span / NSEC_PER_MSEC), (unsigned long long)(max_late / 1000),
	     (unsigned long long)(burst_slack / 1000), (unsigned long long)inversions);
	free(ops); free(ids); free(delay); free(t0); free(t1); free(got); free(ev);
}

/* Wait until @want events are queued (all fired), then read them in one go. */
static int read_all_at_once(int fd, struct twheel_event *ev, int want, u64 deadline)
{
	u64 t_end = deadline + g_slack_ns;
	long q;
	ssize_t r;

	sleep_ns(deadline > now_ns() ? deadline - now_ns() : 0);
	while ((q = tw_queued(fd)) >= 0 && q < want && now_ns() < t_end)
		idle_ms(10);
	CHECK(q == want, "%ld of %d events queued %llu ms after the deadline", q, want,
	      (unsigned long long)(g_slack_ns / NSEC_PER_MSEC));
	r = read(fd, ev, (size_t)want * EV_SIZE);
	if (r < 0) {
		FAIL("read: %s", ename(errno));
		return 0;
	}
	return (int)(r / (ssize_t)EV_SIZE);
}

static void test_equal_deadlines_fifo(void)
{
	enum { N = 1000, M = 200 };
	int fd = tw_open();
	struct twheel_op *ops = calloc(N, sizeof(*ops));
	struct twheel_event *ev = calloc(N, EV_SIZE);
	u64 dl, seen;
	cpu_set_t set;
	int n, bad = 0;

	REQUIRE(fd >= 0 && CHECK(ops && ev, "out of memory"));
	/*
	 * One batch, all with the same absolute deadline, from one CPU: the
	 * order holds per CPU, and a preemptible kernel may move the thread
	 * in the middle of the batch.
	 */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "sched_setaffinity: %s", ename(errno));
	dl = now_ns() + 300 * NSEC_PER_MSEC;
	for (int i = 0; i < N; i++) {
		ops[i].op = TWHEEL_OP_SCHEDULE;
		ops[i].spec = mkspec(dl, 0, (u64)i, TWHEEL_TIMER_ABSTIME);
	}
	REQUIRE(EXPECT_RET(tw_batch(fd, ops, N), N));
	n = read_all_at_once(fd, ev, N, dl);
	seen = now_ns();
	EXPECT_EQ(n, N);
	for (int i = 0; i < n; i++) {
		CHECK_EVENT(&ev[i], seen);
		if (ev[i].user_data != (u64)i || ev[i].id != ops[i].spec.id || ev[i].deadline != dl) {
			if (bad++ < 3)
				FAIL("batch: event %d is timer %llu (id %llu, deadline %+lld ns): not in scheduling order",
				     i, (unsigned long long)ev[i].user_data,
				     (unsigned long long)ev[i].id, (long long)(ev[i].deadline - dl));
		}
	}
	if (bad)
		FAIL("batch: %d of %d events out of scheduling order", bad, n);

	/* separate SCHEDULE calls from one CPU */
	dl = now_ns() + 200 * NSEC_PER_MSEC;
	for (int i = 0; i < M; i++)
		REQUIRE(EXPECT_RET(tw_sched(fd, dl, 0, (u64)i, TWHEEL_TIMER_ABSTIME, &ops[i].spec.id), 0));
	n = read_all_at_once(fd, ev, M, dl);
	EXPECT_EQ(n, M);
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
/* Runner                                                             */
/* ------------------------------------------------------------------ */

struct test {
	const char *name;
	void (*fn)(void);
	unsigned int timeout_s;
};

#define T(name, to) { #name, test_##name, to }
static const struct test tests[] = {
	T(open_close, 20),
	T(unknown_ioctl_enotty, 20),
	T(efault_bad_pointers, 20),
	T(schedule_einval_fields, 20),
	T(schedule_periodic_zero_period_einval, 20),
	T(schedule_negative_einval, 20),
	T(schedule_huge_delay_erange, 20),
	T(modify_einval_fields, 20),
	T(cancel_einval_fields, 20),
	T(eventfd_einval_fields, 20),
	T(batch_einval_fields, 20),
	T(schedule_zero_delay_fires, 20),
	T(abs_past_fires_at_once, 20),
	T(abs_future_not_early, 20),
	T(oneshot_fires_once, 20),
	T(oneshot_lateness, 30),
	T(cancel_pending, 20),
	T(cancel_twice_enoent, 20),
	T(cancel_unknown_enoent, 20),
	T(cancel_fired_keeps_event, 20),
	T(cancel_periodic, 20),
	T(cancel_periodic_queued_event, 20),
	T(modify_moves_timer, 20),
	T(modify_unknown_enoent, 20),
	T(modify_fired_rearms, 20),
	T(modify_periodic, 20),
	T(periodic_fixed_rate_unread, 30),
	T(periodic_fixed_rate_grid, 30),
	T(periodic_fixed_delay, 30),
	T(periodic_extreme_periods, 30),
	T(batch_all_success, 20),
	T(batch_partial_failure, 20),
	T(batch_count_einval, 30),
	T(batch_efault, 20),
	T(eventfd_counts, 20),
	T(eventfd_wrong_type_einval, 20),
	T(eventfd_ebadf, 20),
	T(eventfd_closed_before_expiry, 20),
	T(eventfd_unregister, 20),
	T(read_small_buffer_einval, 20),
	T(read_whole_events_only, 20),
	T(read_nonblock_eagain, 20),
	T(read_blocking_wakes, 20),
	T(read_blocking_eintr, 20),
	T(poll_pollin, 20),
	T(epoll_epollin, 20),
	T(info_counts, 20),
	T(limit_enospc, 90),
	T(schedule_ids_unique, 30),
	T(threads_one_fd, 40),
	T(close_while_firing, 30),
	T(fork_shared_fd, 20),
	T(two_fds_isolation, 20),
	T(events_in_expiry_order, 20),
	T(many_timers, 60),
	T(equal_deadlines_fifo, 30),
	T(table_stale_ids, 20),
	T(table_units, 60),
	T(map_args, 20),
	T(map_extend, 20),
	T(map_garbage, 20),
	T(map_race_expiry, 30),
	T(map_modify_cancel, 20),
	T(map_lifetime, 30),
};
#define N_TESTS (sizeof(tests) / sizeof(tests[0]))

static bool selected(const struct test *t, const char *filter)
{
	return !filter || strstr(t->name, filter);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: twheel_test [-l | -h | FILTER]\n"
		"  Runs the /dev/twheel ABI tests whose name contains FILTER (all without one)\n"
		"  and prints KTAP-like results; exit status 0 iff all passed.\n"
		"  -l, --list   list the test names\n"
		"  -h, --help   this text\n"
		"environment: TWHEEL_TEST_SLACK_MS (lateness bound, default 2000),\n"
		"             TWHEEL_TEST_SEED (random delays)\n");
}

static double secs(u64 ns)
{
	return (double)ns / 1e9;
}

int main(int argc, char **argv)
{
	const char *filter = NULL, *env;
	int n = 0, num = 0, passed = 0, failed = 0, skipped = 0, fd;
	struct twheel_info info;
	u64 start = now_ns();

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2) {
		usage(stderr);
		return 2;
	}
	if (argc == 2) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[1], "-l") || !strcmp(argv[1], "--list")) {
			for (size_t i = 0; i < N_TESTS; i++)
				puts(tests[i].name);
			return 0;
		}
		if (argv[1][0] == '-') {
			fprintf(stderr, "twheel_test: unknown option '%s'\n", argv[1]);
			usage(stderr);
			return 2;
		}
		filter = argv[1];
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
	env = getenv("TWHEEL_TEST_SEED");
	if (env)
		g_seed = strtoull(env, NULL, 0) | 1;

	for (size_t i = 0; i < N_TESTS; i++)
		n += selected(&tests[i], filter);
	if (!n) {
		fprintf(stderr, "twheel_test: no test name contains '%s' (see -l)\n", filter);
		return 2;
	}
	printf("TAP version 13\n1..%d\n", n);

	fd = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		printf("Bail out! cannot open %s: %s (%s)%s\n", TWHEEL_DEVICE, strerror(e), ename(e),
		       e == ENOENT ? " -- is the twheel module loaded?" : "");
		printf("# twheel_test: 0 passed, %d failed\n", n);
		return 1;
	}
	if (ioctl(fd, TWHEEL_IOC_INFO, &info) == 0) {
		g_granularity_ns = info.granularity_ns;
		g_max_timers = info.max_timers;
	}
	close(fd);
	printf("# twheel_test: granularity %llu ns, max_timers %u, slack %llu ms, seed %#llx\n",
	       (unsigned long long)g_granularity_ns, g_max_timers,
	       (unsigned long long)(g_slack_ns / NSEC_PER_MSEC), (unsigned long long)g_seed);

	g_skip = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_skip == MAP_FAILED) {
		perror("twheel_test: mmap");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	for (size_t i = 0; i < N_TESTS; i++) {
		const struct test *t = &tests[i];
		u64 t0 = now_ns(), dt;
		pid_t pid;
		int st = 0;
		bool ok;

		if (!selected(t, filter))
			continue;
		num++;
		g_skip[0] = 0;
		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			printf("# fork: %s\nnot ok %d %s\n", strerror(errno), num, t->name);
			failed++;
			continue;
		}
		if (pid == 0) {
			alarm(t->timeout_s);
			g_failed = 0;
			t->fn();
			fflush(stdout);
			_exit(g_failed ? 1 : 0);
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		dt = now_ns() - t0;
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (WIFSIGNALED(st)) {
			if (WTERMSIG(st) == SIGALRM)
				printf("# %s: timed out after %u s\n", t->name, t->timeout_s);
			else
				printf("# %s: killed by %s\n", t->name, sigabbrev_np(WTERMSIG(st)) ?: "signal");
		} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) {
			printf("# %s: exit status %d\n", t->name, WEXITSTATUS(st));
		}
		if (dt > 2 * NSEC_PER_SEC)
			printf("# %s took %.2f s\n", t->name, secs(dt));
		if (ok && g_skip[0]) {
			printf("ok %d %s # SKIP %s\n", num, t->name, g_skip);
			skipped++;
			passed++;
		} else if (ok) {
			printf("ok %d %s\n", num, t->name);
			passed++;
		} else {
			printf("not ok %d %s\n", num, t->name);
			failed++;
		}
	}
	if (skipped)
		printf("# twheel_test: %d skipped (counted as passed)\n", skipped);
	printf("# twheel_test: total %.1f s\n", secs(now_ns() - start));
	printf("# twheel_test: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
