// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_bench: userspace benchmarks of /dev/twheel against timerfd,
 * io_uring timeouts and POSIX timers; tables 7, 8, 9 and 11 of `make bench`
 * (BENCHMARKS.md explains them).
 *
 *   twheel_bench ops [-r REPS] [-n TIMERS] [-m ROWS]
 *                                                  7: schedule + cancel cost
 *   twheel_bench latency [-r REPS] [-n SAMPLES]   8: deadline to read()
 *   twheel_bench spread [-r REPS] [-n TIMERS]     5: interrupts of timers
 *                                                  due over a second
 *   twheel_bench scale [-r REPS] [-t SECONDS] [-f MIB]
 *                                                  9: most pending timers
 *   twheel_bench idle [-r REPS] [-t SECONDS]       11: wake-ups of idle
 *                                                  CPUs (/dev/twheel and
 *                                                  timerfd)
 *
 * Every measurement is one line on stdout, in the format twheel_bench.ko
 * writes to the kernel log: the keys before "rep=" name the row, those
 * after it are what that repetition measured.
 *
 *   table=7 facility=timerfd chunk=64 rep=0 ns_per_op=1834.2
 *
 * A facility that cannot be measured prints "skipped=1 reason=..." instead
 * and the exit status is 1; 2 is a usage error. Every wait is bounded, and
 * an alarm ends the program if a step hangs.
 *
 * /dev/twheel is used through libtwheel, as a program would use it, except
 * in the rows that measure the system call itself against timerfd and
 * io_uring (twheel_info_floor, twheel_ioctl): those make the raw ioctl.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <pthread.h>
#include <liburing.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "uapi/twheel.h"
#include <libtwheel.h>

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

#define EXIT_USAGE	2
#define MAX_CHUNK	1024	/* largest batch of table 7 */
#define DELAYS		4096	/* precomputed random delays */
#define STEP_ALARM	300	/* seconds before a hung step is killed */

typedef uint64_t u64;

static int failures;

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec ns_to_ts(u64 ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	return ts;
}

static void skip(int table, const char *facility, const char *why, int err)
{
	printf("table=%d facility=%s skipped=1 reason=%s%s%s\n", table, facility,
	       why, err ? ":" : "", err ? strerrorname_np(err) : "");
	fflush(stdout);
	failures++;
}

/* xorshift64*: reproducible, and cheap enough to keep out of the way */
static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* Log-uniform over @octaves octaves from @lo, as twheel_bench.ko does. */
static u64 rand_delay(u64 lo, unsigned int octaves)
{
	u64 base = lo << (rnd() % octaves);

	return base + (u64)(((unsigned __int128)base * (rnd() >> 32)) >> 32);
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		perror("twheel_bench: calloc");
		exit(1);
	}
	return p;
}

static void on_alarm(int sig)
{
	static const char msg[] = "twheel_bench: a step hung, giving up\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* ------------------------------------------------------------------ */
/* Table 7: schedule + cancel                                          */
/* ------------------------------------------------------------------ */

/*
 * Delays of table 7: log-uniform over 100 ms .. 109 min, several levels of
 * each wheel. Long enough that a timer rarely fires between its arming
 * and its cancel (a batch of 1024 takes milliseconds under emulation);
 * one that does is counted ("fired"), not an error.
 */
#define OPS_MIN_NS	(100 * NSEC_PER_MSEC)
#define OPS_OCTAVES	16
#define REARM_NS	(3600 * NSEC_PER_SEC)	/* re-arm rows: never fire */

#define HEAP_PENDING	100000	/* timers pending in the heap row */
#define HEAP_D		4	/* children per node */

struct heap_ent {
	u64 key;		/* deadline */
	uint32_t id;
};

/* The heap row's 4-ary min-heap: e[0] is the earliest. */
struct heap4 {
	struct heap_ent *e;
	uint32_t *pos;		/* id -> its index in e[] */
	uint32_t n;
};

/* What the ring rows know of the ring, besides libtwheel's handle. */
struct ring_view {
	const struct twheel_ring_hdr *hdr;	/* a read-only mapping */
	size_t len;
	int fdinfo;		/* /proc/self/fdinfo/<fd>: the drain time */
	u64 sent;		/* ops published since the ring was made */
};

struct ops_ctx {
	unsigned int n;			/* timers per repetition */
	unsigned int fired;		/* timers that fired before the cancel */
	unsigned int base;		/* first delay of this chunk */
	u64 delay[DELAYS];		/* random delays, see OPS_MIN_NS */
	struct twheel tw;		/* /dev/twheel, tw.map if mapped */
	int tfd[MAX_CHUNK];		/* timerfds */
	timer_t ptimer[MAX_CHUNK];	/* POSIX timers */
	struct io_uring ring;
	bool modify_armed;		/* m_twheel_modify() armed its timers */
	bool extend_armed;		/* m_twheel_extend() armed its timers */
	bool update_armed;		/* m_uring_update() armed its timeouts */
	struct twheel_sqbuf sq;		/* MAX_CHUNK ops */
	struct twheel_short_op sops[MAX_CHUNK];
	u64 id[MAX_CHUNK];		/* ids of the chunk being cancelled */
	u64 mid[MAX_CHUNK];		/* ids re-armed by m_twheel_modify() */
	u64 xid[MAX_CHUNK];		/* ids pushed back by m_twheel_extend() */
	struct twheel rtw;		/* the ring rows' file */
	bool rtw_open;
	struct ring_view rv;
	struct heap4 heap;		/* the heap rows' */
	u64 untimed;			/* ns of a chunk's waits: not its cost */
};

typedef int (*ops_fn)(struct ops_ctx *c, unsigned int chunk, unsigned int n);

/*
 * The floor: two of the cheapest ioctl, what any unbatched pair costs. Raw
 * ioctl() here and in m_twheel_single(): these rows measure the system
 * call, against timerfd_settime() and io_uring.
 */
static int m_info(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct twheel_info info;
	unsigned int i;

	(void)chunk;
	for (i = 0; i < 2 * n; i++)
		if (ioctl(c->tw.fd, TWHEEL_IOC_INFO, &info))
			return -errno;
	return 0;
}

static int m_twheel_single(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct twheel_timer_spec spec;
	struct twheel_cancel cancel;
	unsigned int i, j;
	int ret;

	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++) {
			memset(&spec, 0, sizeof(spec));
			spec.value = c->delay[(c->base + i + j) % DELAYS];
			spec.clockid = TWHEEL_CLOCK_MONOTONIC;
			if (ioctl(c->tw.fd, TWHEEL_IOC_SCHEDULE, &spec))
				return -errno;
			c->id[j] = spec.id;
		}
		for (j = 0; j < chunk; j++) {
			memset(&cancel, 0, sizeof(cancel));
			cancel.id = c->id[j];
			ret = ioctl(c->tw.fd, TWHEEL_IOC_CANCEL, &cancel);
			if (ret < 0)
				return -errno;
			c->fired += !ret;
		}
	}
	return 0;
}

/* One TWHEEL_IOC_BATCH per chunk each way (chunk <= TWHEEL_BATCH_MAX). */
static int m_twheel_batch(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct twheel_sqbuf *sq = &c->sq;
	unsigned int i, j;
	int ret;

	for (i = 0; i < n; i += chunk) {
		twheel_sqbuf_reset(sq);
		for (j = 0; j < chunk; j++)
			twheel_sqbuf_schedule(sq, c->delay[(c->base + i + j) % DELAYS], 0, 0, 0);
		ret = twheel_submit(&c->tw, sq);
		if (ret != (int)chunk)
			return ret < 0 ? ret : -EPROTO;
		/* op j is read before the cancel of op j overwrites it */
		twheel_sqbuf_reset(sq);
		for (j = 0; j < chunk; j++)
			twheel_sqbuf_cancel(sq, sq->ops[j].spec.id);
		ret = twheel_submit(&c->tw, sq);
		if (ret != (int)chunk)
			return ret < 0 ? ret : -EPROTO;
		for (j = 0; j < chunk; j++)
			c->fired += !sq->ops[j].result;
	}
	return 0;
}

/* The same with short ops (TWHEEL_BATCH_SHORT): half the bytes per op. */
static int m_twheel_sbatch(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct twheel_short_op *ops = c->sops;
	unsigned int i, j;
	int ret;

	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++)
			twheel_prep_schedule(&ops[j], c->delay[(c->base + i + j) % DELAYS], 0, 0);
		ret = twheel_submit_short(&c->tw, ops, chunk);
		if (ret != (int)chunk)
			return ret < 0 ? ret : -EPROTO;
		/* op j is read before the cancel of op j overwrites it */
		for (j = 0; j < chunk; j++)
			twheel_prep_cancel(&ops[j], ops[j].id);
		ret = twheel_submit_short(&c->tw, ops, chunk);
		if (ret != (int)chunk)
			return ret < 0 ? ret : -EPROTO;
		for (j = 0; j < chunk; j++)
			c->fired += !ops[j].result;
	}
	return 0;
}

static int m_timerfd(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct itimerspec on = { 0 }, off = { 0 };
	unsigned int i, j;

	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++) {
			on.it_value = ns_to_ts(c->delay[(c->base + i + j) % DELAYS]);
			if (timerfd_settime(c->tfd[(i + j) % MAX_CHUNK], 0, &on, NULL))
				return -errno;
		}
		for (j = 0; j < chunk; j++)
			if (timerfd_settime(c->tfd[(i + j) % MAX_CHUNK], 0, &off, NULL))
				return -errno;
	}
	return 0;
}

static int m_posix(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct itimerspec on = { 0 }, off = { 0 };
	unsigned int i, j;

	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++) {
			on.it_value = ns_to_ts(c->delay[(c->base + i + j) % DELAYS]);
			if (timer_settime(c->ptimer[(i + j) % MAX_CHUNK], 0, &on, NULL))
				return -errno;
		}
		for (j = 0; j < chunk; j++)
			if (timer_settime(c->ptimer[(i + j) % MAX_CHUNK], 0, &off, NULL))
				return -errno;
	}
	return 0;
}

/*
 * Re-arming a pending timer, one call per timer: what a timeout that is
 * pushed back on every event costs. No allocation on either side. The
 * first (warm-up) call arms the chunk; every delay is an hour longer, so
 * nothing fires.
 */
static int m_twheel_modify(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	unsigned int i;
	int ret;

	if (!c->modify_armed) {
		for (i = 0; i < chunk; i++) {
			ret = twheel_schedule(&c->tw, REARM_NS + c->delay[(c->base + i) % DELAYS],
					      0, 0, 0, &c->mid[i]);
			if (ret)
				return ret;
		}
		c->modify_armed = true;
	}
	for (i = 0; i < n; i++) {
		ret = twheel_modify(&c->tw, c->mid[i % chunk],
				    REARM_NS + c->delay[(c->base + i) % DELAYS], 0, 0, 0);
		if (ret != 1)
			return ret < 0 ? ret : -EPROTO;
	}
	return 0;
}

static int m_timerfd_rearm(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	struct itimerspec on = { 0 };
	unsigned int i;

	for (i = 0; i < n; i++) {
		on.it_value = ns_to_ts(REARM_NS + c->delay[(c->base + i) % DELAYS]);
		if (timerfd_settime(c->tfd[i % chunk], 0, &on, NULL))
			return -errno;
	}
	return 0;
}

/*
 * Pushing a pending timer back without a system call: one store of a later
 * deadline into its slot of the mapped array (uapi/twheel.h), with the time
 * read once per chunk, as an event loop reads it once per wake-up. The
 * kernel's part comes only when a timer is due: one re-filing (an in-kernel
 * arm, table 1) per expiry, however many stores moved it; the timers here
 * are an hour away, so this row is the program's part alone.
 */
static int m_twheel_extend(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	volatile u64 *slot;
	unsigned int i, j;
	int ret;
	u64 now;

	if (!c->tw.map)
		return -ENODEV;
	if (!c->extend_armed) {
		for (i = 0; i < chunk; i++) {
			ret = twheel_schedule(&c->tw, REARM_NS, 0, 0, 0, &c->xid[i]);
			if (ret)
				return ret;
		}
		c->extend_armed = true;
	}
	/*
	 * The store of twheel_extend(), inline: the row is the program's part,
	 * which a loop like this one makes without a call per timer.
	 */
	for (i = 0; i < n; i += chunk) {
		now = now_ns() + REARM_NS;
		for (j = 0; j < chunk; j++) {
			slot = &c->tw.map[TWHEEL_ID_SLOT(c->xid[j])];
			*slot = now + j;
		}
	}
	return 0;
}

/* Submit the @n queued SQEs: 0, or a negative errno (-EPROTO if short). */
static int uring_submit_all(struct io_uring *ring, unsigned int n)
{
	int ret = io_uring_submit(ring);

	if (ret == (int)n)
		return 0;
	return ret < 0 ? ret : -EPROTO;
}

static void ts_set(struct __kernel_timespec *ts, u64 ns)
{
	ts->tv_sec = ns / NSEC_PER_SEC;
	ts->tv_nsec = ns % NSEC_PER_SEC;
}

/* IORING_OP_TIMEOUT_UPDATE of pending timeouts, @chunk per submit. */
static int m_uring_update(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	static struct __kernel_timespec ts[MAX_CHUNK];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	unsigned int i, j, got;
	int ret;

	if (!c->update_armed) {
		for (j = 0; j < chunk; j++) {
			ts_set(&ts[j], REARM_NS);
			sqe = io_uring_get_sqe(&c->ring);
			if (!sqe)
				return -EBUSY;
			io_uring_prep_timeout(sqe, &ts[j], 0, 0);
			sqe->user_data = 1000 + j;
		}
		ret = uring_submit_all(&c->ring, chunk);
		if (ret)
			return ret;
		c->update_armed = true;
	}
	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++) {
			u64 d = REARM_NS + c->delay[(c->base + i + j) % DELAYS];

			ts_set(&ts[j], d);
			sqe = io_uring_get_sqe(&c->ring);
			if (!sqe)
				return -EBUSY;
			io_uring_prep_timeout_update(sqe, &ts[j], 1000 + j, 0);
			sqe->user_data = 0;
		}
		ret = uring_submit_all(&c->ring, chunk);
		if (ret)
			return ret;
		for (got = 0; got < chunk; got++) {
			ret = io_uring_wait_cqe(&c->ring, &cqe);
			if (ret)
				return ret;
			ret = cqe->user_data ? -EPROTO : cqe->res;
			io_uring_cqe_seen(&c->ring, cqe);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* IORING_OP_TIMEOUT x chunk, then IORING_OP_TIMEOUT_REMOVE x chunk. */
static int m_uring(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	static struct __kernel_timespec ts[MAX_CHUNK];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	unsigned int i, j, got;
	int ret;

	for (i = 0; i < n; i += chunk) {
		for (j = 0; j < chunk; j++) {
			u64 d = c->delay[(c->base + i + j) % DELAYS];

			ts_set(&ts[j], d);
			sqe = io_uring_get_sqe(&c->ring);
			if (!sqe)
				return -EBUSY;
			io_uring_prep_timeout(sqe, &ts[j], 0, 0);
			sqe->user_data = j + 1;
		}
		ret = uring_submit_all(&c->ring, chunk);
		if (ret)
			return ret;
		for (j = 0; j < chunk; j++) {
			sqe = io_uring_get_sqe(&c->ring);
			if (!sqe)
				return -EBUSY;
			io_uring_prep_timeout_remove(sqe, j + 1, 0);
			sqe->user_data = 0;
		}
		ret = uring_submit_all(&c->ring, chunk);
		if (ret)
			return ret;
		/* Each removal completes itself and the timeout it removed. */
		for (got = 0; got < 2 * chunk; got++) {
			ret = io_uring_wait_cqe(&c->ring, &cqe);
			if (ret)
				return ret;
			/* A timeout that fired first: -ETIME, and -ENOENT for its removal. */
			if (cqe->user_data && cqe->res == -ETIME)
				c->fired++;
			else if (cqe->user_data ? cqe->res != -ECANCELED :
				 cqe->res != 0 && cqe->res != -ENOENT)
				ret = cqe->res < 0 ? cqe->res : -EPROTO;
			io_uring_cqe_seen(&c->ring, cqe);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Read the records of timers that fired before their cancel. */
static void drain_events(struct ops_ctx *c)
{
	struct twheel_event ev[64];
	int i;

	for (i = 0; i < 100000 && c->tw.fd >= 0; i++)
		if (twheel_read_nowait(&c->tw, ev, sizeof(ev) / sizeof(ev[0])) <= 0)
			break;
}

struct method {
	const char *facility;
	unsigned int chunk;
	ops_fn fn;
	int need;		/* NEED_* */
	int err;		/* negative errno once it failed */
};

#define NEED_TWHEEL	1
#define NEED_TIMERFD	2
#define NEED_POSIX	3
#define NEED_URING	4
#define NEED_RING	5
#define NEED_NONE	6

/* ------------------------------------------------------------------ */
/* Table 7: the submission ring, and an in-process heap as its peer    */
/* ------------------------------------------------------------------ */

/*
 * The peer of the ring rows: what a timer costs an event loop that keeps
 * its timers in its own heap (libev's 4-heap; libuv's is binary). Plain C,
 * HEAP_PENDING timers pending throughout; a timer is an id, its place in
 * the heap kept in pos[] so that it can be removed (cancelled) by id.
 */
static void heap_place(struct heap4 *h, uint32_t i, struct heap_ent x)
{
	h->e[i] = x;
	h->pos[x.id] = i;
}

static void heap_up(struct heap4 *h, uint32_t i, struct heap_ent x)
{
	while (i) {
		uint32_t p = (i - 1) / HEAP_D;

		if (h->e[p].key <= x.key)
			break;
		heap_place(h, i, h->e[p]);
		i = p;
	}
	heap_place(h, i, x);
}

static void heap_down(struct heap4 *h, uint32_t i, struct heap_ent x)
{
	for (;;) {
		uint32_t c = i * HEAP_D + 1, k, best;

		if (c >= h->n)
			break;
		best = c;
		for (k = c + 1; k < c + HEAP_D && k < h->n; k++)
			if (h->e[k].key < h->e[best].key)
				best = k;
		if (h->e[best].key >= x.key)
			break;
		heap_place(h, i, h->e[best]);
		i = best;
	}
	heap_place(h, i, x);
}

static void heap_insert(struct heap4 *h, uint32_t id, u64 key)
{
	struct heap_ent x = { .key = key, .id = id };

	heap_up(h, h->n++, x);
}

static void heap_remove(struct heap4 *h, uint32_t id)
{
	uint32_t i = h->pos[id];
	struct heap_ent last = h->e[--h->n];

	if (i == h->n)
		return;
	if (i && h->e[(i - 1) / HEAP_D].key > last.key)
		heap_up(h, i, last);
	else
		heap_down(h, i, last);
}

/*
 * Untimed (c->untimed): waits until the next millisecond of the clock
 * begins, spinning as ring_wait() does while the ring rows wait for the
 * poller's drain, which comes once per granule (1 ms). The heap rows with
 * waits have the same gaps between their timed parts as the ring rows, so
 * that the ring's program part is compared with a heap used in the same
 * rhythm: the gaps alone make the heap little dearer (129-136 ns a timer
 * against 130 back to back in one run, 91-103 against 87 in another),
 * the ring's program part much more after a drain that ran elsewhere
 * meanwhile (110 ns, against 76 when the program drains with RING_ENTER
 * itself).
 */
static void heap_wait(struct ops_ctx *c)
{
	u64 t0 = now_ns(), end = (t0 / NSEC_PER_MSEC + 1) * NSEC_PER_MSEC, t;
	unsigned int spins = 0;

	do {
		__builtin_ia32_pause();
		t = ++spins & 1023 ? 0 : now_ns();
	} while (t < end);
	c->untimed += now_ns() - t0;
}

/*
 * Insert @chunk timers, then remove them, with HEAP_PENDING others, in one
 * of three rhythms (@waits):
 *   0  heap4        back to back
 *   1  heap4_wait   a wait after the removes: as twheel_ring_tick (arm and
 *                   cancel in one publish)
 *   2  heap4_split  a wait after the inserts and one after the removes: as
 *                   twheel_ring (armed in one wake-up, cancelled in a later
 *                   one)
 */
static int heap_rhythm(struct ops_ctx *c, unsigned int chunk, unsigned int n,
		       unsigned int waits)
{
	struct heap4 *h = &c->heap;
	unsigned int i, j;
	u64 now;

	if (!h->e)
		return -ENOMEM;
	for (i = 0; i < n; i += chunk) {
		/* the time read once per chunk, as a loop reads it per wake-up */
		now = now_ns();
		for (j = 0; j < chunk; j++)
			heap_insert(h, HEAP_PENDING + j,
				    now + c->delay[(c->base + i + j) % DELAYS]);
		if (waits == 2)
			heap_wait(c);
		for (j = 0; j < chunk; j++)
			heap_remove(h, HEAP_PENDING + j);
		if (waits)
			heap_wait(c);
	}
	return h->n == HEAP_PENDING ? 0 : -EPROTO;
}

static int m_heap(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return heap_rhythm(c, chunk, n, 0);
}

static int m_heap_wait(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return heap_rhythm(c, chunk, n, 1);
}

static int m_heap_split(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return heap_rhythm(c, chunk, n, 2);
}

static int heap_setup(struct heap4 *h)
{
	u64 now = now_ns();
	uint32_t i;

	h->e = calloc(HEAP_PENDING + MAX_CHUNK, sizeof(*h->e));
	h->pos = calloc(HEAP_PENDING + MAX_CHUNK, sizeof(*h->pos));
	if (!h->e || !h->pos) {
		free(h->e);
		free(h->pos);
		h->e = NULL;
		h->pos = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < HEAP_PENDING; i++)
		heap_insert(h, i, now + rand_delay(OPS_MIN_NS, OPS_OCTAVES));
	/* the heap's own check: no parent later than its child */
	for (i = 1; i < h->n; i++)
		if (h->e[(i - 1) / HEAP_D].key > h->e[i].key || h->pos[h->e[i].id] != i)
			return -EPROTO;
	return 0;
}

/*
 * The submission ring (uapi/twheel.h), through libtwheel's twheel_ring_*()
 * as a program would use it, on a handle of its own (c->rtw). No system
 * call: the program writes its ops and publishes them, and the kernel's
 * poller takes them within a tick. The program's part is timed here; the
 * kernel's, its drains, is what the file's fdinfo says they took
 * (twheel-ring-drain-ns: the time inside each drain that consumed ops,
 * whoever ran it), read between chunks, once the drains are over.
 *
 *   twheel_ring       arm @chunk, wait for the drain, cancel them, wait:
 *                     every timer reaches the wheel and leaves it
 *   twheel_ring_tick  arm @chunk and cancel them in one publish: they meet
 *                     in one drain, inside one tick (the purgatory case)
 *
 *   twheel_ring_enter the same as twheel_ring, with a TWHEEL_IOC_RING_ENTER
 *                     after each publish (untimed): the drain on the
 *                     program's CPU instead of the poller's
 *
 * Each prints two figures per timer: prog_ns, the program's, and
 * drain_ns, the kernel's; ns_per_op is their sum, or drain_ns alone for
 * the tick row (its goal is about the kernel's cost). Rows of their own
 * for the goals: twheel_ring_prog (twheel_ring's program part) and
 * twheel_ring_tick_all (the tick row's program + drain).
 */
static long long fdinfo_val(int fd, const char *key)
{
	char buf[4096], *p;
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);
	size_t klen = strlen(key);

	if (len <= 0)
		return -1;
	buf[len] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return strtoll(p + klen + 1, NULL, 10);
	return -1;
}

/*
 * Waits until the kernel's drains of every op published are over (the
 * header's drained count, written at the end of a drain): 0 or
 * -ETIMEDOUT. It spins rather than sleeps: a sleep and its wake-up would
 * leave the next chunk's figure with the costs of a cold TLB under
 * emulation, which the rows that run their chunks back to back don't pay.
 */
static int ring_wait(struct ops_ctx *c)
{
	u64 end = now_ns() + 5 * NSEC_PER_SEC;
	unsigned int spins = 0;

	while (c->rv.sent != __atomic_load_n(&c->rv.hdr->drained, __ATOMIC_ACQUIRE)) {
		__builtin_ia32_pause();
		if (!(++spins & 1023) && now_ns() > end)
			return -ETIMEDOUT;
	}
	return 0;
}

static int ring_arm_chunk(struct ops_ctx *c, unsigned int chunk, unsigned int base)
{
	unsigned int j;
	int ret;

	for (j = 0; j < chunk; j++) {
		ret = twheel_ring_arm(&c->rtw, j, c->delay[(base + j) % DELAYS], 0, j + 1);
		if (ret)
			return ret;
	}
	c->rv.sent += chunk;
	return 0;
}

static int ring_cancel_chunk(struct ops_ctx *c, unsigned int chunk)
{
	unsigned int j;
	int ret;

	for (j = 0; j < chunk; j++) {
		ret = twheel_ring_cancel(&c->rtw, j);
		if (ret)
			return ret;
	}
	c->rv.sent += chunk;
	return 0;
}

/* Let the kernel take what was published: the doorbell if asked, the drain. */
static int ring_settle(struct ops_ctx *c, bool enter)
{
	if (enter && ioctl(c->rtw.fd, TWHEEL_IOC_RING_ENTER))
		return -errno;
	return ring_wait(c);
}

/* One chunk of a ring row: the program's ns and the kernel's, in total. */
static int ring_chunk(struct ops_ctx *c, bool tick, bool enter, unsigned int chunk,
		      u64 *prog, u64 *drain)
{
	long long d0 = fdinfo_val(c->rv.fdinfo, "twheel-ring-drain-ns"), d1;
	u64 t0, t1, t2 = 0, t3 = 0;
	int ret;

	if (d0 < 0)
		return -ENODATA;
	t0 = now_ns();
	ret = ring_arm_chunk(c, chunk, c->base);
	if (!ret && tick)
		ret = ring_cancel_chunk(c, chunk);
	if (!ret)
		ret = twheel_ring_submit(&c->rtw);
	t1 = now_ns();
	if (!ret)
		ret = ring_settle(c, enter);
	if (!ret && !tick) {
		t2 = now_ns();
		ret = ring_cancel_chunk(c, chunk);
		if (!ret)
			ret = twheel_ring_submit(&c->rtw);
		t3 = now_ns();
		if (!ret)
			ret = ring_settle(c, enter);
	}
	d1 = fdinfo_val(c->rv.fdinfo, "twheel-ring-drain-ns");
	if (ret)
		return ret;
	if (d1 < d0)
		return -ENODATA;
	*prog = (t1 - t0) + (t3 - t2);
	*drain = d1 - d0;
	return 0;
}

/* Failed ring ops come back as completions: none is expected here. */
static int ring_check_cq(struct ops_ctx *c)
{
	struct twheel_ring_cqe cqe[16];
	int n = twheel_ring_reap(&c->rtw, cqe, 16);

	if (n > 0) {
		fprintf(stderr, "twheel_bench: ring op on slot %u failed: %d\n",
			cqe[0].slot, cqe[0].result);
		return cqe[0].result < 0 ? cqe[0].result : -EPROTO;
	}
	return n < 0 ? n : 0;
}

/* The untimed passes of the ring rows (warm-up): @n timers, a chunk at a time. */
static int ring_pass(struct ops_ctx *c, bool tick, bool enter, unsigned int chunk,
		     unsigned int n)
{
	u64 prog, drain;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n && !ret; i += chunk)
		ret = ring_chunk(c, tick, enter, chunk, &prog, &drain);
	return ret ? ret : ring_check_cq(c);
}

static int m_ring(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return ring_pass(c, false, false, chunk, n);
}

/* twheel_ring, each publish followed by TWHEEL_IOC_RING_ENTER (untimed). */
static int m_ring_enter(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return ring_pass(c, false, true, chunk, n);
}

static int m_ring_tick(struct ops_ctx *c, unsigned int chunk, unsigned int n)
{
	return ring_pass(c, true, false, chunk, n);
}

/* The records of ring timers that fired before their cancel: counted. */
static unsigned int ring_fired(struct ops_ctx *c)
{
	struct twheel_event ev[64];
	unsigned int fired = 0;
	int i, got;

	for (i = 0; i < 100000; i++) {
		got = twheel_read_nowait(&c->rtw, ev, sizeof(ev) / sizeof(ev[0]));
		if (got <= 0)
			break;
		fired += got;
	}
	return fired;
}

static double median_u64(u64 *v, unsigned int n)
{
	qsort(v, n, sizeof(v[0]), cmp_u64);
	return n & 1 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/*
 * One repetition of a ring row: as run_once(), the medians of the chunks,
 * of the program's part, the kernel's and their sum.
 */
static void run_ring_once(struct ops_ctx *c, struct method *m, unsigned int rep)
{
	static u64 vp[4096], vd[4096], vs[4096];
	unsigned int i, chunks = c->n / m->chunk;
	bool tick = m->fn == m_ring_tick;
	u64 tp = 0, td = 0;
	double p, d, sum;
	int ret = 0;

	if (!chunks)
		chunks = 1;
	if (chunks > sizeof(vp) / sizeof(vp[0]))
		chunks = sizeof(vp) / sizeof(vp[0]);
	for (i = 0; i < chunks && !ret; i++) {
		c->base = i * m->chunk;
		ret = ring_chunk(c, tick, m->fn == m_ring_enter, m->chunk, &vp[i], &vd[i]);
		vs[i] = vp[i] + vd[i];
		tp += vp[i];
		td += vd[i];
	}
	if (!ret)
		ret = ring_check_cq(c);
	c->fired = ring_fired(c);
	if (ret) {
		m->err = ret;
		skip(7, m->facility, "failed", -ret);
		return;
	}
	p = median_u64(vp, chunks) / m->chunk;
	d = median_u64(vd, chunks) / m->chunk;
	sum = median_u64(vs, chunks) / m->chunk;
	printf("table=7 facility=%s chunk=%u rep=%u ns_per_op=%.1f prog_ns=%.1f drain_ns=%.1f mean_ns=%.1f fired=%u\n",
	       m->facility, m->chunk, rep, tick ? d : sum, p, d,
	       (double)(tick ? td : tp + td) / (chunks * m->chunk), c->fired);
	if (m->fn == m_ring)
		printf("table=7 facility=twheel_ring_prog chunk=%u rep=%u ns_per_op=%.1f mean_ns=%.1f fired=%u\n",
		       m->chunk, rep, p, (double)tp / (chunks * m->chunk), c->fired);
	if (tick)
		printf("table=7 facility=twheel_ring_tick_all chunk=%u rep=%u ns_per_op=%.1f mean_ns=%.1f fired=%u\n",
		       m->chunk, rep, sum, (double)(tp + td) / (chunks * m->chunk), c->fired);
	fflush(stdout);
}

/* The ring rows' handle: a file of its own, its ring and a view of it. */
static int ring_setup(struct ops_ctx *c)
{
	long page = sysconf(_SC_PAGESIZE);
	char path[64];
	void *p;
	int ret;

	ret = twheel_open(&c->rtw, 0);
	if (ret)
		return ret;
	c->rtw_open = true;
	if (!(c->rtw.info.flags & TWHEEL_INFO_RING))
		return -EOPNOTSUPP;
	ret = twheel_ring_init(&c->rtw);
	if (ret)
		return ret;
	c->rv.len = (TWHEEL_RING_MAP_BYTES + page - 1) / page * page;
	p = mmap(NULL, c->rv.len, PROT_READ, MAP_SHARED, c->rtw.fd,
		 (off_t)TWHEEL_RING_OFFSET);
	if (p == MAP_FAILED)
		return -errno;
	c->rv.hdr = p;
	c->rv.sent = __atomic_load_n(&c->rv.hdr->drained, __ATOMIC_RELAXED);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", c->rtw.fd);
	c->rv.fdinfo = open(path, O_RDONLY | O_CLOEXEC);
	if (c->rv.fdinfo < 0)
		return -errno;
	return fdinfo_val(c->rv.fdinfo, "twheel-ring-drain-ns") < 0 ? -ENODATA : 0;
}

static void ring_teardown(struct ops_ctx *c)
{
	if (c->rv.hdr)
		munmap((void *)c->rv.hdr, c->rv.len);
	if (c->rv.fdinfo >= 0)
		close(c->rv.fdinfo);
	if (c->rtw_open)
		twheel_close(&c->rtw);
	free(c->heap.e);
	free(c->heap.pos);
}

/*
 * One repetition of @m: c->n timers in chunks, each chunk timed alone.
 * Prints the median chunk per timer (a host that takes the vCPU away for
 * a while spoils a few chunks, not the figure) and the mean, or records
 * why it failed.
 */
static void run_once(struct ops_ctx *c, struct method *m, unsigned int rep)
{
	unsigned int i, chunks = c->n / m->chunk;
	static u64 v[16384];
	u64 t0, t1, total = 0;
	int ret = 0;

	if (!chunks)
		chunks = 1;
	if (chunks > sizeof(v) / sizeof(v[0]))
		chunks = sizeof(v) / sizeof(v[0]);
	c->fired = 0;
	for (i = 0; i < chunks && !ret; i++) {
		c->base = i * m->chunk;
		c->untimed = 0;
		t0 = now_ns();
		ret = m->fn(c, m->chunk, m->chunk);
		t1 = now_ns();
		v[i] = t1 - t0 - c->untimed;
		total += v[i];
	}
	drain_events(c);
	if (ret) {
		m->err = ret;
		skip(7, m->facility, "failed", -ret);
		return;
	}
	qsort(v, chunks, sizeof(v[0]), cmp_u64);
	printf("table=7 facility=%s chunk=%u rep=%u ns_per_op=%.1f mean_ns=%.1f fired=%u\n",
	       m->facility, m->chunk, rep,
	       (double)(chunks & 1 ? v[chunks / 2] :
			(v[chunks / 2 - 1] + v[chunks / 2]) / 2) / m->chunk,
	       (double)total / (chunks * m->chunk), c->fired);
	fflush(stdout);
}

/*
 * -m LIST: only the methods LIST names, comma-separated, each "facility" or
 * "facility/chunk" (twheel_batch/1024); all of them without -m.
 */
static const char *ops_only;

static bool ops_selected(const struct method *m)
{
	const char *p = ops_only;
	size_t len = strlen(m->facility);
	char *end;

	while (p && *p) {
		if (!strncmp(p, m->facility, len) &&
		    (p[len] == ',' || !p[len] ||
		     (p[len] == '/' && strtoul(p + len + 1, &end, 10) == m->chunk &&
		      (*end == ',' || !*end))))
			return true;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return !ops_only;
}

static int cmd_ops(unsigned int reps, unsigned int n)
{
	struct method methods[] = {
		{ "twheel_info_floor", 64, m_info, NEED_TWHEEL, 0 },
		{ "twheel_ioctl", 64, m_twheel_single, NEED_TWHEEL, 0 },
		{ "twheel_ioctl", 1, m_twheel_single, NEED_TWHEEL, 0 },
		{ "twheel_batch", 64, m_twheel_batch, NEED_TWHEEL, 0 },
		{ "twheel_batch", 1024, m_twheel_batch, NEED_TWHEEL, 0 },
		{ "twheel_sbatch", 64, m_twheel_sbatch, NEED_TWHEEL, 0 },
		{ "twheel_sbatch", 1024, m_twheel_sbatch, NEED_TWHEEL, 0 },
		{ "timerfd", 64, m_timerfd, NEED_TIMERFD, 0 },
		{ "timerfd", 1, m_timerfd, NEED_TIMERFD, 0 },
		{ "posix_timer", 64, m_posix, NEED_POSIX, 0 },
		{ "io_uring", 64, m_uring, NEED_URING, 0 },
		{ "twheel_modify", 64, m_twheel_modify, NEED_TWHEEL, 0 },
		{ "timerfd_rearm", 64, m_timerfd_rearm, NEED_TIMERFD, 0 },
		{ "twheel_extend", 64, m_twheel_extend, NEED_TWHEEL, 0 },
		{ "io_uring_update", 64, m_uring_update, NEED_URING, 0 },
		{ "heap4", 64, m_heap, NEED_NONE, 0 },
		{ "heap4_wait", 64, m_heap_wait, NEED_NONE, 0 },
		{ "heap4_split", 64, m_heap_split, NEED_NONE, 0 },
		{ "twheel_ring", 64, m_ring, NEED_RING, 0 },
		{ "twheel_ring_tick", 64, m_ring_tick, NEED_RING, 0 },
		{ "twheel_ring_enter", 64, m_ring_enter, NEED_RING, 0 },
	};
	const unsigned int nm = sizeof(methods) / sizeof(methods[0]);
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	struct ops_ctx *c = xcalloc(1, sizeof(*c));
	unsigned int i, r, ntfd, nposix;
	bool have[7] = { false };
	struct rlimit rl;
	int ret;

	c->n = n;
	for (i = 0; i < DELAYS; i++)
		c->delay[i] = rand_delay(OPS_MIN_NS, OPS_OCTAVES);
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 4 * MAX_CHUNK) {
		rl.rlim_cur = rl.rlim_max < 4 * MAX_CHUNK ? rl.rlim_max : 4 * MAX_CHUNK;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	/* Everything is created first: the timed runs only arm and cancel. */
	ret = twheel_open(&c->tw, 0);
	if (!ret)
		ret = twheel_sqbuf_init(&c->sq, MAX_CHUNK);
	have[NEED_TWHEEL] = !ret;
	if (ret)
		skip(7, "twheel", "open", -ret);
	else if ((ret = twheel_map(&c->tw)))
		skip(7, "twheel_extend", "mmap", -ret);
	for (ntfd = 0; ntfd < MAX_CHUNK; ntfd++) {
		c->tfd[ntfd] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (c->tfd[ntfd] < 0)
			break;
	}
	have[NEED_TIMERFD] = ntfd == MAX_CHUNK;
	if (!have[NEED_TIMERFD])
		skip(7, "timerfd", "timerfd_create", errno);
	for (nposix = 0; nposix < MAX_CHUNK; nposix++)
		if (timer_create(CLOCK_MONOTONIC, &sev, &c->ptimer[nposix]))
			break;
	have[NEED_POSIX] = nposix == MAX_CHUNK;
	if (!have[NEED_POSIX])
		skip(7, "posix_timer", "timer_create", errno);
	ret = io_uring_queue_init(4 * 64, &c->ring, 0);
	have[NEED_URING] = !ret;
	if (ret)
		skip(7, "io_uring", "io_uring_queue_init", -ret);
	c->rv.fdinfo = -1;
	ret = ring_setup(c);
	have[NEED_RING] = !ret;
	if (ret)
		skip(7, "twheel_ring", "ring", -ret);
	ret = heap_setup(&c->heap);
	have[NEED_NONE] = !ret;
	if (ret)
		skip(7, "heap4", "setup", -ret);

	alarm(STEP_ALARM);
	for (i = 0; i < nm; i++) {
		struct method *m = &methods[i];

		if (!have[m->need] || !ops_selected(m)) {
			m->err = -ENODEV;
			continue;
		}
		m->err = m->fn(c, m->chunk, m->chunk);	/* warm up */
		drain_events(c);
		if (m->err)
			skip(7, m->facility, "failed", -m->err);
	}
	/* Methods alternate: a slow spell of the host hits all alike. */
	for (r = 0; r < reps; r++)
		for (i = 0; i < nm; i++)
			if (!methods[i].err && methods[i].need == NEED_RING)
				run_ring_once(c, &methods[i], r);
			else if (!methods[i].err)
				run_once(c, &methods[i], r);
	alarm(0);

	if (have[NEED_URING])
		io_uring_queue_exit(&c->ring);
	while (nposix--)
		timer_delete(c->ptimer[nposix]);
	while (ntfd--)
		close(c->tfd[ntfd]);
	ring_teardown(c);
	twheel_sqbuf_free(&c->sq);
	twheel_close(&c->tw);
	free(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Table 8: from the deadline to the reader                            */
/* ------------------------------------------------------------------ */

#define LAT_MIN_NS	(2 * NSEC_PER_MSEC)
#define LAT_SPAN_NS	(10 * NSEC_PER_MSEC)

struct lat {
	u64 *lat;	/* deadline -> read done */
	u64 *fired;	/* twheel: expiry ran -> read done */
	unsigned int n;
	unsigned int early;
};

static u64 next_deadline(void)
{
	return now_ns() + LAT_MIN_NS + rnd() % LAT_SPAN_NS;
}

/*
 * Wait up to 5 s for one epoll event. EINTR is retried: io_uring's task
 * work (the ring of the previous facility being torn down) interrupts a
 * sleeping syscall without any signal.
 */
static int wait_one(int ep)
{
	struct epoll_event ev;
	int i, n;

	for (i = 0; i < 100; i++) {
		n = epoll_wait(ep, &ev, 1, 5000);
		if (n == 1)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	return -EINTR;
}

/* How table 8's twheel rows arm: SCHEDULE, with slack 0, or by the ring. */
enum lat_arm { LAT_SCHEDULE, LAT_SLACK0, LAT_RING };

/*
 * Table 8's twheel rows: the default slack, slack 0 (precise), or the
 * submission ring (issue 27: an ABSTIME arm of slot 0, published with no
 * system call, drained by the kernel's poller within a tick).
 */
static int lat_twheel_arm(struct lat *l, enum lat_arm how)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct twheel_event rec;
	struct twheel tw;
	int efd = -1, ep = -1, ret;
	unsigned int i;
	u64 cnt, t, dl;

	ret = twheel_open(&tw, 0);
	if (ret)
		return ret;
	efd = twheel_eventfd(&tw, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (efd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)) {
		ret = efd < 0 ? efd : -errno;
		goto out;
	}
	if (how == LAT_RING) {
		ret = twheel_ring_init(&tw);
		/* Without a ring, twheel_ring_arm() is an ioctl: not this row. */
		if (!ret && !(tw.info.flags & TWHEEL_INFO_RING))
			ret = -EOPNOTSUPP;
		if (ret)
			goto out;
	}
	for (i = 0; i < l->n; i++) {
		dl = next_deadline();
		switch (how) {
		case LAT_SLACK0:
			ret = twheel_schedule_slack(&tw, CLOCK_MONOTONIC, dl, 0, 0,
						    TWHEEL_TIMER_ABSTIME, 0, NULL);
			break;
		case LAT_RING:
			ret = twheel_ring_arm(&tw, 0, dl, TWHEEL_TIMER_ABSTIME, i);
			if (!ret)
				ret = twheel_ring_submit(&tw);
			break;
		default:
			ret = twheel_schedule(&tw, dl, 0, TWHEEL_TIMER_ABSTIME, 0, NULL);
			break;
		}
		if (ret)
			break;
		ret = wait_one(ep);
		if (ret)
			break;
		if (read(efd, &cnt, sizeof(cnt)) != sizeof(cnt) ||
		    twheel_read_nowait(&tw, &rec, 1) != 1) {
			ret = -EIO;
			break;
		}
		t = now_ns();
		/* Exactly the arming made: its deadline, its tag, once. */
		if (rec.deadline != dl || rec.count != 1 ||
		    (how == LAT_RING && rec.user_data != i)) {
			ret = -EPROTO;
			break;
		}
		l->early += t < dl || rec.fired < rec.deadline;
		l->lat[i] = t - dl;
		l->fired[i] = t - rec.fired;
	}
	/* Nothing more: no expiry twice. */
	if (!ret && twheel_read_nowait(&tw, &rec, 1) != -EAGAIN)
		ret = -EPROTO;
out:
	if (ep >= 0)
		close(ep);
	if (efd >= 0)
		close(efd);
	twheel_close(&tw);
	return ret;
}

static int lat_twheel(struct lat *l)
{
	return lat_twheel_arm(l, LAT_SCHEDULE);
}

static int lat_twheel_slack0(struct lat *l)
{
	return lat_twheel_arm(l, LAT_SLACK0);
}

static int lat_twheel_ring(struct lat *l)
{
	return lat_twheel_arm(l, LAT_RING);
}

static int lat_timerfd(struct lat *l)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = { 0 };
	int tfd, ep, ret = 0;
	unsigned int i;
	u64 cnt, t, dl;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (tfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev)) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < l->n; i++) {
		dl = next_deadline();
		its.it_value = ns_to_ts(dl);
		if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL)) {
			ret = -errno;
			break;
		}
		ret = wait_one(ep);
		if (ret)
			break;
		if (read(tfd, &cnt, sizeof(cnt)) != sizeof(cnt)) {
			ret = -EIO;
			break;
		}
		t = now_ns();
		l->early += t < dl;
		l->lat[i] = t - dl;
	}
out:
	if (ep >= 0)
		close(ep);
	if (tfd >= 0)
		close(tfd);
	return ret;
}

static int lat_uring(struct lat *l)
{
	struct __kernel_timespec ts, wait = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	unsigned int i, tries;
	u64 t, dl;
	int ret;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret)
		return ret;
	for (i = 0; i < l->n; i++) {
		dl = next_deadline();
		ts.tv_sec = dl / NSEC_PER_SEC;
		ts.tv_nsec = dl % NSEC_PER_SEC;
		sqe = io_uring_get_sqe(&ring);
		if (!sqe) {
			ret = -EBUSY;
			break;
		}
		io_uring_prep_timeout(sqe, &ts, 0, IORING_TIMEOUT_ABS);
		ret = io_uring_submit(&ring);
		if (ret != 1) {
			ret = ret < 0 ? ret : -EPROTO;
			break;
		}
		for (tries = 0; tries < 100; tries++) {
			ret = io_uring_wait_cqe_timeout(&ring, &cqe, &wait);
			if (ret != -EINTR)
				break;
		}
		if (ret < 0)
			break;
		t = now_ns();
		ret = cqe->res == -ETIME ? 0 : (cqe->res < 0 ? cqe->res : -EPROTO);
		io_uring_cqe_seen(&ring, cqe);
		if (ret)
			break;
		l->early += t < dl;
		l->lat[i] = t - dl;
	}
	io_uring_queue_exit(&ring);
	return ret < 0 ? ret : 0;
}

static double pct_us(u64 *v, unsigned int n, unsigned int pct)
{
	return v[(u64)n * pct / 100 - (pct == 100)] / 1000.0;
}

static int cmd_latency(unsigned int reps, unsigned int n)
{
	static const struct {
		const char *name;
		int (*fn)(struct lat *l);
	} facs[] = {
		{ "twheel", lat_twheel },
		{ "timerfd", lat_timerfd },
		{ "io_uring", lat_uring },
		{ "twheel_slack0", lat_twheel_slack0 },
		{ "twheel_ring", lat_twheel_ring },
	};
	struct lat l = { .n = n };
	unsigned int f, r;
	int ret;

	l.lat = xcalloc(n, sizeof(u64));
	l.fired = xcalloc(n, sizeof(u64));
	/* Facilities alternate within each repetition: drift hits all alike. */
	for (r = 0; r < reps; r++) {
		for (f = 0; f < sizeof(facs) / sizeof(facs[0]); f++) {
			alarm(STEP_ALARM);
			l.early = 0;
			ret = facs[f].fn(&l);
			alarm(0);
			if (ret) {
				skip(8, facs[f].name, "failed", -ret);
				continue;
			}
			qsort(l.lat, n, sizeof(u64), cmp_u64);
			printf("table=8 facility=%s samples=%u rep=%u p50_us=%.1f p99_us=%.1f max_us=%.1f early=%u",
			       facs[f].name, n, r, pct_us(l.lat, n, 50),
			       pct_us(l.lat, n, 99), pct_us(l.lat, n, 100), l.early);
			if (facs[f].fn == lat_twheel || facs[f].fn == lat_twheel_slack0 ||
			    facs[f].fn == lat_twheel_ring) {
				qsort(l.fired, n, sizeof(u64), cmp_u64);
				printf(" fired_p50_us=%.1f fired_p99_us=%.1f",
				       pct_us(l.fired, n, 50), pct_us(l.fired, n, 99));
			}
			printf("\n");
			fflush(stdout);
		}
	}
	free(l.lat);
	free(l.fired);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Table 5, from userspace: timers due over one second, with a slack     */
/* ------------------------------------------------------------------ */

#define SPREAD_LEAD_NS	(100 * NSEC_PER_MSEC)	/* first deadline */
#define SPREAD_NS	NSEC_PER_SEC		/* deadlines spread over this */

/* Local timer interrupts ("LOC" in /proc/interrupts) of @cpu so far. */
static long long loc_irqs(int cpu)
{
	char line[4096], *p, *end;
	long long v = -1;
	FILE *f = fopen("/proc/interrupts", "r");
	int i;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (i = 0; i <= cpu; i++) {
			v = strtoll(p, &end, 10);
			if (end == p) {
				v = -1;
				break;
			}
			p = end;
		}
		break;
	}
	fclose(f);
	return v;
}

struct spread_row {
	const char *name;
	bool twheel;
	u64 slack;
};

/*
 * One row: @n timers armed from @cpu (a twheel fd's timers go to its
 * wheel, a timerfd's hrtimer to its base), deadlines at random over one
 * second, nobody reading; the interrupts @cpu takes until all are due.
 */
static int spread_one(const struct spread_row *row, unsigned int n, int cpu,
		      unsigned int rep)
{
	struct itimerspec its = { 0 };
	struct twheel_event ev[256];
	unsigned int i, fired = 0;
	struct twheel tw;
	long long c0, c1;
	u64 t0, t1, dl, last = 0, cnt;
	int *tfd = NULL, ret = 0, k;

	/* timerfd's slack is the task's: 0 would mean the default (50 us). */
	if (prctl(PR_SET_TIMERSLACK, row->slack ? row->slack : 1, 0, 0, 0))
		return -errno;
	if (row->twheel) {
		ret = twheel_open(&tw, 0);
		if (ret)
			return ret;
	} else {
		tfd = xcalloc(n, sizeof(*tfd));
		for (i = 0; i < n; i++) {
			tfd[i] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
			if (tfd[i] < 0) {
				ret = -errno;
				while (i--)
					close(tfd[i]);
				free(tfd);
				return ret;
			}
		}
	}
	usleep(50000);
	c0 = loc_irqs(cpu);
	t0 = now_ns();
	for (i = 0; i < n && !ret; i++) {
		dl = t0 + SPREAD_LEAD_NS + rnd() % SPREAD_NS;
		last = dl > last ? dl : last;
		if (row->twheel) {
			ret = twheel_schedule_slack(&tw, CLOCK_MONOTONIC, dl, 0, row->slack,
						    TWHEEL_TIMER_ABSTIME, i, NULL);
		} else {
			its.it_value = ns_to_ts(dl);
			if (timerfd_settime(tfd[i], TFD_TIMER_ABSTIME, &its, NULL))
				ret = -errno;
		}
	}
	/* Sleep past the last deadline plus its slack; nothing reads meanwhile. */
	while (!ret && (t1 = now_ns()) < last + row->slack + 20 * NSEC_PER_MSEC)
		usleep((last + row->slack + 20 * NSEC_PER_MSEC - t1) / 1000 + 1);
	c1 = loc_irqs(cpu);
	t1 = now_ns();
	if (row->twheel) {
		while (!ret && (k = twheel_read_nowait(&tw, ev, 256)) > 0)
			fired += k;
		twheel_close(&tw);
	} else {
		for (i = 0; i < n; i++) {
			if (read(tfd[i], &cnt, sizeof(cnt)) == sizeof(cnt))
				fired++;
			close(tfd[i]);
		}
		free(tfd);
	}
	if (ret)
		return ret;
	printf("table=5 facility=%s spread=%u slack_ns=%" PRIu64 " rep=%u irqs=%lld seconds=%.2f fired=%u\n",
	       row->name, n, row->slack, rep, c1 - c0, (t1 - t0) / 1e9, fired);
	return fired == n ? 0 : -ETIMEDOUT;
}

static int cmd_spread(unsigned int reps, unsigned int n)
{
	static const struct spread_row rows[] = {
		{ "twheel_fd", true, NSEC_PER_MSEC },
		{ "timerfd", false, NSEC_PER_MSEC },
		{ "twheel_fd_slack0", true, 0 },
		{ "timerfd_slack0", false, 0 },
	};
	struct rlimit rl = { .rlim_cur = n + 64, .rlim_max = n + 64 };
	int cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	unsigned int r, f;
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 64 &&
	     (rl.rlim_cur = rl.rlim_max = n + 64, setrlimit(RLIMIT_NOFILE, &rl)))) {
		skip(5, "timerfd", "setup", errno);
		return 1;
	}
	for (r = 0; r < reps; r++) {
		for (f = 0; f < sizeof(rows) / sizeof(rows[0]); f++) {
			alarm(STEP_ALARM);
			ret = spread_one(&rows[f], n, cpu, r);
			alarm(0);
			if (ret)
				skip(5, rows[f].name, "failed", -ret);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Table 11, from userspace: wake-ups of idle CPUs                      */
/* ------------------------------------------------------------------ */

/*
 * As twheel_bench.ko's table 11 (see there): IDLE_KEEP keepalive timers
 * (deadlines uniform over 10 ms - 10 s, armed again when their expiry is
 * read) and IDLE_PERIODIC timers of 100 ms, a quarter armed from each
 * CPU; then one thread on the awake CPU (0) reads every expiry and re-arms
 * the keepalives, while a SCHED_IDLE thread keeps that CPU busy and the
 * others have nothing to run. Per CPU for the interval: exits from idle
 * (the power:cpu_idle tracepoint's exits, counted by tracefs per CPU) and
 * local timer interrupts (LOC).
 */
#define IDLE_KEEP	10000
#define IDLE_PERIODIC	1000
#define IDLE_N		(IDLE_KEEP + IDLE_PERIODIC)
#define IDLE_KEEP_MIN	(10 * NSEC_PER_MSEC)
#define IDLE_KEEP_MAX	(10 * NSEC_PER_SEC)
#define IDLE_PERIOD	(100 * NSEC_PER_MSEC)
#define IDLE_SETTLE	NSEC_PER_SEC
#define IDLE_MAX_CPUS	64
#define TRACEFS		"/sys/kernel/tracing"

static volatile int idle_spinning;

static u64 idle_delay(void)
{
	return IDLE_KEEP_MIN + rnd() % (IDLE_KEEP_MAX - IDLE_KEEP_MIN);
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static int tracefs_write(const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Exits from idle of every CPU: the cpu_idle events recorded there. */
static int idle_trace_on(void)
{
	int ret;

	if (access(TRACEFS "/events/power/cpu_idle", F_OK) &&
	    mount("nodev", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	ret = tracefs_write("events/power/cpu_idle/filter", "state == 4294967295");
	if (!ret)
		ret = tracefs_write("buffer_size_kb", "4096");
	if (!ret)
		ret = tracefs_write("events/power/cpu_idle/enable", "1");
	if (!ret)
		ret = tracefs_write("tracing_on", "1");
	return ret;
}

static void idle_trace_off(void)
{
	tracefs_write("events/power/cpu_idle/enable", "0");
	tracefs_write("events/power/cpu_idle/filter", "0");
	tracefs_write("trace", "");
}

/* Events recorded on @cpu so far, lost ones (overrun) included. */
static long long idle_exits(int cpu)
{
	char path[256], line[256];
	long long entries = -1, overrun = 0, v;
	FILE *f;

	snprintf(path, sizeof(path), TRACEFS "/per_cpu/cpu%d/stats", cpu);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "entries: %lld", &v) == 1)
			entries = v;
		else if (sscanf(line, "overrun: %lld", &v) == 1)
			overrun = v;
	}
	fclose(f);
	return entries < 0 ? -1 : entries + overrun;
}

static void *idle_spin(void *arg)
{
	struct sched_param sp = { 0 };

	(void)arg;
	pin(0);
	sched_setscheduler(0, SCHED_IDLE, &sp);
	while (idle_spinning)
		;
	return NULL;
}

struct idle_counts {
	long long exits[IDLE_MAX_CPUS];
	long long loc[IDLE_MAX_CPUS];
};

static void idle_snap(struct idle_counts *c, int ncpu)
{
	int cpu;

	for (cpu = 0; cpu < ncpu; cpu++) {
		c->exits[cpu] = idle_exits(cpu);
		c->loc[cpu] = loc_irqs(cpu);
	}
}

struct idle_row {
	const char *name;
	bool twheel;
	struct twheel tw;
	int *tfd;
	int ep;
	u64 events;
};

static int idle_arm(struct idle_row *row, unsigned int i, u64 delay, bool periodic)
{
	struct itimerspec its = { 0 };

	if (row->twheel)
		return twheel_schedule(&row->tw, delay, periodic ? IDLE_PERIOD : 0,
				       periodic ? TWHEEL_TIMER_PERIODIC : 0, i, NULL);
	its.it_value = ns_to_ts(delay);
	if (periodic)
		its.it_interval = ns_to_ts(IDLE_PERIOD);
	return timerfd_settime(row->tfd[i], 0, &its, NULL) ? -errno : 0;
}

/* Read what expired, within @wait_ns; re-arm the keepalives from here. */
static int idle_serve(struct idle_row *row, u64 wait_ns)
{
	struct epoll_event eev[256];
	struct twheel_event ev[256];
	int k, j, ret = 0;
	u64 cnt;

	if (row->twheel) {
		k = twheel_read_timeout(&row->tw, ev, 256, wait_ns);
		if (k == -ETIME || k == -EINTR)
			return 0;
		for (j = 0; j < k && !ret; j++) {
			row->events++;
			if (ev[j].user_data < IDLE_KEEP)
				ret = idle_arm(row, ev[j].user_data, idle_delay(), false);
		}
		return k < 0 ? k : ret;
	}
	k = epoll_wait(row->ep, eev, 256, wait_ns / NSEC_PER_MSEC + 1);
	if (k < 0)
		return errno == EINTR ? 0 : -errno;
	for (j = 0; j < k && !ret; j++) {
		unsigned int i = eev[j].data.u32;

		if (read(row->tfd[i], &cnt, sizeof(cnt)) != sizeof(cnt))
			continue;
		row->events++;
		if (i < IDLE_KEEP)
			ret = idle_arm(row, i, idle_delay(), false);
	}
	return ret;
}

static int idle_one(struct idle_row *row, int ncpu, unsigned int seconds,
		    unsigned int rep)
{
	struct idle_counts *c0 = xcalloc(1, sizeof(*c0)), *c1 = xcalloc(1, sizeof(*c1));
	long long wk, loc, idle_wk = 0, idle_loc = 0;
	unsigned int i, made = 0;
	pthread_t spinner;
	u64 t0, t1, until;
	int cpu, ret = 0;

	row->events = 0;
	if (row->twheel) {
		ret = twheel_open(&row->tw, 0);
	} else {
		row->tfd = xcalloc(IDLE_N, sizeof(*row->tfd));
		row->ep = epoll_create1(EPOLL_CLOEXEC);
		ret = row->ep < 0 ? -errno : 0;
		for (; made < IDLE_N && !ret; made++) {
			struct epoll_event e = { .events = EPOLLIN, .data.u32 = made };

			row->tfd[made] = timerfd_create(CLOCK_MONOTONIC,
							TFD_CLOEXEC | TFD_NONBLOCK);
			if (row->tfd[made] < 0 ||
			    epoll_ctl(row->ep, EPOLL_CTL_ADD, row->tfd[made], &e))
				ret = -errno;
		}
	}
	/* A quarter of each kind from each CPU, as the kernel's rows. */
	for (cpu = 0; cpu < ncpu && !ret; cpu++) {
		ret = pin(cpu);
		for (i = cpu; i < IDLE_N && !ret; i += ncpu)
			ret = idle_arm(row, i, i < IDLE_KEEP ? idle_delay() :
				       1 + rnd() % IDLE_PERIOD, i >= IDLE_KEEP);
	}
	if (!ret)
		ret = pin(0);
	idle_spinning = 1;
	if (!ret && pthread_create(&spinner, NULL, idle_spin, NULL)) {
		ret = -EAGAIN;
		idle_spinning = 0;
	}
	until = now_ns() + IDLE_SETTLE;
	while (!ret && now_ns() < until)
		ret = idle_serve(row, until - now_ns());
	idle_snap(c0, ncpu);
	t0 = now_ns();
	until = t0 + (u64)seconds * NSEC_PER_SEC;
	while (!ret && now_ns() < until)
		ret = idle_serve(row, until - now_ns());
	idle_snap(c1, ncpu);
	t1 = now_ns();
	if (idle_spinning) {
		idle_spinning = 0;
		pthread_join(spinner, NULL);
	}
	if (row->twheel) {
		twheel_close(&row->tw);
	} else {
		while (made--)
			if (row->tfd[made] >= 0)
				close(row->tfd[made]);
		if (row->ep >= 0)
			close(row->ep);
		free(row->tfd);
	}
	if (!ret) {
		for (cpu = 0; cpu < ncpu; cpu++) {
			wk = c1->exits[cpu] - c0->exits[cpu];
			loc = c1->loc[cpu] - c0->loc[cpu];
			if (cpu) {
				idle_wk += wk;
				idle_loc += loc;
			}
			printf("table=11 facility=%s cpu=%d rep=%u awake=%d wakeups=%lld loc=%lld seconds=%.1f\n",
			       row->name, cpu, rep, !cpu, wk, loc, (t1 - t0) / 1e9);
		}
		printf("table=11 facility=%s cpu=idle rep=%u cpus=%d wakeups=%lld loc=%lld events=%" PRIu64 " seconds=%.1f wakeups_per_s=%.1f\n",
		       row->name, rep, ncpu - 1, idle_wk, idle_loc, row->events,
		       (t1 - t0) / 1e9, idle_wk / ((t1 - t0) / 1e9));
	}
	free(c0);
	free(c1);
	return ret;
}

static int cmd_idle(unsigned int reps, unsigned int seconds)
{
	struct idle_row rows[] = {
		{ .name = "twheel_fd", .twheel = true, .ep = -1 },
		{ .name = "timerfd", .twheel = false, .ep = -1 },
	};
	struct rlimit rl = { .rlim_cur = IDLE_N + 64, .rlim_max = IDLE_N + 64 };
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int r, f;
	int ret;

	if (ncpu < 2 || ncpu > IDLE_MAX_CPUS) {
		skip(11, "timerfd", "cpus", 0);
		return 1;
	}
	if ((getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < IDLE_N + 64 &&
	     (rl.rlim_cur = rl.rlim_max = IDLE_N + 64, setrlimit(RLIMIT_NOFILE, &rl)))) {
		skip(11, "timerfd", "setup", errno);
		return 1;
	}
	ret = idle_trace_on();
	if (ret) {
		skip(11, "twheel_fd", "tracefs", -ret);
		return 1;
	}
	for (r = 0; r < reps; r++) {
		for (f = 0; f < sizeof(rows) / sizeof(rows[0]); f++) {
			alarm(seconds + STEP_ALARM);
			ret = idle_one(&rows[f], ncpu, seconds, r);
			alarm(0);
			if (ret)
				skip(11, rows[f].name, "failed", -ret);
		}
	}
	idle_trace_off();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Table 9: how many pending timers fit                                */
/* ------------------------------------------------------------------ */

#define FAR_NS		(3600 * NSEC_PER_SEC)	/* never fires during the run */
#define FILL_STEP	4096			/* timers between memory checks */

/*
 * Written by the child as it goes, read by the parent when it is gone.
 * Memory is MemFree, not MemAvailable: the guest has no page cache to
 * reclaim, and MemAvailable counts reclaimable slab (the dentry of each
 * timerfd) as free although it is in use.
 */
struct fill {
	u64 timers;		/* pending timers at the last check */
	long free0, slab0;	/* MemFree, Slab before (kB) */
	long free, slab;	/* ... at the last check */
	u64 t0, t1;		/* ns */
	int err;		/* errno that stopped it, or 0 */
	char stop[16];		/* why it stopped */
};

static int meminfo(long *free, long *slab)
{
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemFree: %ld kB", free) == 1)
			found |= 1;
		else if (sscanf(line, "Slab: %ld kB", slab) == 1)
			found |= 2;
	}
	fclose(f);
	return found == 3 ? 0 : -1;
}

static long floor_kb;
static u64 fill_deadline;

/* Record progress; true when the child should stop. */
static bool fill_check(struct fill *s, u64 timers)
{
	long free, slab;

	if (meminfo(&free, &slab))
		return true;
	s->free = free;
	s->slab = slab;
	s->timers = timers;
	s->t1 = now_ns();
	if (free < floor_kb) {
		strcpy(s->stop, "mem_floor");
		return true;
	}
	if (s->t1 > fill_deadline) {
		strcpy(s->stop, "time_limit");
		return true;
	}
	return false;
}

static void fill_twheel(struct fill *s)
{
	struct twheel_sqbuf sq;
	struct twheel tw;
	u64 n = 0;
	int ret, i;

	ret = twheel_open(&tw, 0);
	if (!ret)
		ret = twheel_sqbuf_init(&sq, FILL_STEP);
	if (ret) {
		s->err = -ret;
		strcpy(s->stop, "open");
		return;
	}
	do {
		twheel_sqbuf_reset(&sq);
		for (i = 0; i < FILL_STEP; i++)
			twheel_sqbuf_schedule(&sq, FAR_NS + n + i, 0, 0, 0);
		ret = twheel_submit(&tw, &sq);
		if (ret < 0) {
			s->err = -ret;
			break;
		}
		n += ret;
		if (ret < FILL_STEP) {
			s->err = -sq.ops[ret].result;
			break;
		}
	} while (!fill_check(s, n));
	if (s->err) {
		fill_check(s, n);
		snprintf(s->stop, sizeof(s->stop), "%s",
			 s->err == ENOSPC ? "max_timers" : "error");
	}
	/* The fd is closed by exit(): that cancels and frees everything. */
}

static void fill_timerfd(struct fill *s)
{
	struct itimerspec its = { .it_value = ns_to_ts(FAR_NS) };
	struct rlimit rl;
	long nr_open = 1 << 20;
	FILE *f;
	u64 n = 0;
	int fd;

	f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%ld", &nr_open) != 1)
			nr_open = 1 << 20;
		fclose(f);
	}
	rl.rlim_cur = rl.rlim_max = nr_open;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		getrlimit(RLIMIT_NOFILE, &rl);
	for (;;) {
		fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (fd < 0 || timerfd_settime(fd, 0, &its, NULL)) {
			s->err = errno;
			break;
		}
		if (!(++n % FILL_STEP) && fill_check(s, n))
			break;
	}
	if (s->err) {
		fill_check(s, n);
		snprintf(s->stop, sizeof(s->stop), "%s",
			 s->err == EMFILE ? "fd_limit" : "error");
	}
}

static void fill_uring(struct fill *s)
{
	struct __kernel_timespec ts = { .tv_sec = FAR_NS / NSEC_PER_SEC };
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = 2 * FILL_STEP };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	u64 n = 0;
	int i, ret;

	ret = io_uring_queue_init_params(FILL_STEP, &ring, &p);
	if (ret) {
		s->err = -ret;
		strcpy(s->stop, "setup");
		return;
	}
	do {
		for (i = 0; i < FILL_STEP; i++) {
			sqe = io_uring_get_sqe(&ring);
			if (!sqe)
				break;
			io_uring_prep_timeout(sqe, &ts, 0, 0);
		}
		ret = io_uring_submit(&ring);
		if (ret < 0) {
			s->err = -ret;
			break;
		}
		n += ret;
		/* A timeout completes now only if it could not be queued. */
		if (!io_uring_peek_cqe(&ring, &cqe)) {
			s->err = cqe->res < 0 ? -cqe->res : EPROTO;
			n--;
			break;
		}
		if (ret < FILL_STEP) {
			s->err = EAGAIN;
			break;
		}
	} while (!fill_check(s, n));
	if (s->err) {
		fill_check(s, n);
		strcpy(s->stop, "error");
	}
	/* exit() tears the ring down and cancels the timeouts. */
}

static void wait_memory_back(long free0)
{
	long free, slab;
	int i;

	for (i = 0; i < 600; i++) {
		if (meminfo(&free, &slab) || free > free0 - 16 * 1024)
			return;
		usleep(100 * 1000);
	}
}

/* One facility, one repetition: fill in a child, report, wait for memory. */
static void scale_one(struct fill *s, const char *name,
		      void (*fn)(struct fill *s), unsigned int rep,
		      unsigned int seconds)
{
	unsigned int waited;
	long free0, slab;
	int status;
	pid_t pid;

	memset(s, 0, sizeof(*s));
	if (meminfo(&free0, &slab)) {
		skip(9, name, "meminfo", errno);
		return;
	}
	s->free0 = s->free = free0;
	s->slab0 = s->slab = slab;
	strcpy(s->stop, "killed");
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		skip(9, name, "fork", errno);
		return;
	}
	if (!pid) {
		FILE *adj = fopen("/proc/self/oom_score_adj", "we");

		/* If memory runs out after all, the OOM killer takes us. */
		if (adj) {
			fputs("1000", adj);
			fclose(adj);
		}
		s->t0 = s->t1 = now_ns();
		fill_deadline = s->t0 + seconds * NSEC_PER_SEC;
		fn(s);
		_exit(0);
	}
	for (waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
		if (waited > (seconds + 120) * 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			strcpy(s->stop, "hung");
			break;
		}
		usleep(100 * 1000);
	}
	/* Closing millions of timers is not instant: wait for the memory. */
	wait_memory_back(free0);
	printf("table=9 facility=%s rep=%u timers=%" PRIu64 " stop=%s%s%s kernel_kib=%ld slab_kib=%ld bytes_per_timer=%.0f seconds=%.1f teardown_s=%.1f\n",
	       name, rep, s->timers, s->stop, s->err ? ":" : "",
	       s->err ? strerrorname_np(s->err) : "",
	       s->free0 - s->free, s->slab - s->slab0,
	       s->timers ? (s->free0 - s->free) * 1024.0 / s->timers : 0,
	       (s->t1 - s->t0) / 1e9, s->t1 ? (now_ns() - s->t1) / 1e9 : 0);
	fflush(stdout);
}

static int cmd_scale(unsigned int reps, unsigned int seconds,
		     unsigned int floor_mib)
{
	static const struct {
		const char *name;
		void (*fn)(struct fill *s);
	} facs[] = {
		{ "twheel", fill_twheel },
		{ "timerfd", fill_timerfd },
		{ "io_uring", fill_uring },
	};
	unsigned int f, r;
	struct fill *s;

	floor_kb = floor_mib * 1024L;
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		perror("twheel_bench: mmap");
		return 1;
	}
	for (r = 0; r < reps; r++)
		for (f = 0; f < sizeof(facs) / sizeof(facs[0]); f++)
			scale_one(s, facs[f].name, facs[f].fn, r, seconds);
	munmap(s, sizeof(*s));
	return 0;
}

/* ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: twheel_bench ops [-r REPS] [-n TIMERS] [-m FACILITY[/CHUNK],...] (table 7)\n"
		"       twheel_bench latency [-r REPS] [-n SAMPLES]  (table 8)\n"
		"       twheel_bench spread [-r REPS] [-n TIMERS]   (table 5, from userspace)\n"
		"       twheel_bench scale [-r REPS] [-t SECONDS] [-f MIB] (table 9)\n"
		"       twheel_bench idle [-r REPS] [-t SECONDS]     (table 11, from userspace)\n");
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	unsigned int reps = 5, n = 0, seconds = 0, floor_mib = 64;
	const char *cmd;
	char *end;
	int opt;

	if (argc < 2)
		usage();
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "r:n:t:f:m:")) != -1) {
		unsigned long v;

		if (!optarg)
			usage();
		if (opt == 'm') {
			ops_only = optarg;
			continue;
		}
		v = strtoul(optarg, &end, 0);
		if (*end || !v || v > 100000000)
			usage();
		switch (opt) {
		case 'r':
			reps = v;
			break;
		case 'n':
			n = v;
			break;
		case 't':
			seconds = v;
			break;
		case 'f':
			floor_mib = v;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	signal(SIGALRM, on_alarm);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "ops"))
		cmd_ops(reps, n ? n : 16384);
	else if (!strcmp(cmd, "latency"))
		cmd_latency(reps, n ? n : 200);
	else if (!strcmp(cmd, "spread"))
		cmd_spread(reps, n ? n : 10000);
	else if (!strcmp(cmd, "scale"))
		cmd_scale(reps, seconds ? seconds : 120, floor_mib);
	else if (!strcmp(cmd, "idle"))
		cmd_idle(reps, seconds ? seconds : 30);
	else
		usage();
	return failures ? 1 : 0;
}
