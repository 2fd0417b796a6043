// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_torture: torture /dev/twheel from userspace, with exact accounting.
 *
 * Usage: twheel_torture [-t SECONDS] [-j THREADS] [-o ONOFF_MS] [-s SEED]
 *   -t  how long to run (default 30)
 *   -j  worker threads (default: one per online CPU, each pinned to it)
 *   -o  also take random CPUs (not CPU 0) offline and online through
 *       /sys/devices/system/cpu/cpuN/online every ONOFF_MS ms on average
 *   -s  seed of the random choices (default: from the clock; printed)
 *
 * Each worker owns an open /dev/twheel and a model of every timer on it,
 * and does random operations: SCHEDULE (one-shot, fixed-rate and
 * fixed-delay periodic; delays on every wheel level, relative and absolute,
 * some in the past), MODIFY, CANCEL, BATCH, non-blocking read() and poll(),
 * INFO, SET_EVENTFD, and now and then close() with everything in flight
 * (then a new open()). A "chaos" thread meanwhile opens files full of
 * fast periodic timers, has another thread block in read() on them and
 * closes them under it.
 *
 * Checks, on every event read and at the end:
 *  - a one-shot arming ends exactly once: its expiry is read (an event's
 *    count covers that many armings) or the CANCEL that stopped it returned
 *    1; never both, never neither. SCHEDULE and a MODIFY that returned 0
 *    start an arming, a MODIFY that returned 1 moved the pending one;
 *  - never early: an expiry fires no sooner than the deadline of the
 *    arming it belongs to (the window [now before + delay, now after +
 *    delay] of that arming's ioctl);
 *  - fixed rate: each event's deadline is on the grid first + k * period,
 *    and the expiries counted so far plus overruns equal the periods
 *    elapsed up to that deadline plus the overruns the time of firing
 *    allows: (deadline - first) / period + 1 <= total <= (fired - first) /
 *    period + 1. Fixed delay: total <= (deadline - first) / period + 1;
 *  - event flags, user data and ids are those of the timers; INFO's
 *    counts agree with the model;
 *  - at the end every timer is cancelled or has fired and been read, and
 *    INFO shows no timer and no event left.
 *
 * Most files also get a submission ring (uapi/twheel.h), which a fifth of
 * the worker's steps drive beside the ioctls, on the same file: ARMs
 * (delays on every level, deadlines, some in the past, some earlier than
 * the pending one) and CANCELs on RING_SLOTS slots, ops on one slot that
 * meet in one drain, malformed ops and ops SCHEDULE refuses, whole rings
 * (and one op more), publishes that ring the doorbell when the kernel set
 * NEED_WAKEUP (or never, or always), publishes left to the poller with no
 * system call, and MODIFY or CANCEL by id of a ring timer (its id from an
 * event) right after a ring ARM of it. The ring's model is keyed by slot,
 * and by the user_data each arming carries (slot, incarnation, arming):
 *  - each ring arming fires once or is cancelled, never both or neither:
 *    one superseded (by an ARM or CANCEL) before its earliest deadline, or
 *    in the publication that armed it, never fires; one superseded later
 *    may have (a cancel that raced the expiry): at most one event; one
 *    that nothing superseded fires (the end waits for those due);
 *  - never early; a relative arming's deadline lies in [before it was
 *    written + delay, after the next system call into the file + delay]
 *    (ops take effect by the next system call), an absolute one is exact;
 *  - an incarnation keeps one id; ioctls on it see every ring op published
 *    before them done (their results must match the model's);
 *  - every op that must fail gives exactly its completion {slot, -errno,
 *    user_data} by the next system call, and no other op gives one; the
 *    poller takes what was published without the doorbell, and never
 *    stops (NEED_WAKEUP) with it still there;
 *  - INFO counts the ring's timers with the others.
 *
 * When MODIFY races with the expiry of the previous arming, that expiry's
 * event may carry the new user data (chardev.c says so), but its deadline
 * is the one that expired: a deadline of a newer arming is counted as a
 * "misreported deadline" and fails the run.
 *
 * Prints "# ..." progress lines and ends with "twheel_torture: ok: ..." or
 * "twheel_torture: FAILED: ..."; exit status 0 iff no check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tw_util.h"

#define MAX_WINDOWS	8		/* unresolved armings tracked per id */
#define LIVE_HIGH	1500		/* above this, a worker cancels more */
#define PERIODIC_MAX	6		/* live periodic timers per worker */
#define MAX_ERRORS	30		/* error lines printed */
#define CHAOS_FD_BASE	900		/* the chaos reader's private fd numbers */

typedef __s64 s64;
typedef __s32 s32;
typedef uint16_t u16;
typedef uint8_t u8;

/* ------------------------------------------------------------------ */
/* Common                                                              */
/* ------------------------------------------------------------------ */

static atomic_int g_errors;
static atomic_bool g_stop;
static u64 g_end_ns;

static struct {
	atomic_ullong ops, schedules, modifies, moved, cancels, batches;
	atomic_ullong reads, events, oneshot_expiries, periodic_expiries;
	atomic_ullong closes, chaos_files, chaos_events, infos;
	atomic_ullong early, lost, doubled, misreported;
	/* the submission ring */
	atomic_ullong ring_ops, ring_arms, ring_cancels, ring_bad, ring_failed;
	atomic_ullong ring_pubs, ring_doorbells, ring_spurious, ring_full_enters;
	atomic_ullong ring_fulls, ring_fired, ring_cancelled, ring_ioctls;
	atomic_ullong ring_ambiguous, ring_quiet, ring_quiet_late;
	atomic_ullong ring_quiet_max_ns, ring_refused, ring_closed;
	atomic_uint offline, online, onoff_failed;
} st;

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (atomic_fetch_add(&g_errors, 1) < MAX_ERRORS)
		printf("# FAIL: %s\n", buf);
	fflush(stdout);
}

/* xorshift64*: each thread has its own state. */
static u64 rnd_next(u64 *s)
{
	return xorshift64s(s);
}

static u64 rnd(u64 *s, u64 n)
{
	return n ? rnd_next(s) % n : 0;
}

/* A delay somewhere on the wheel's levels, mostly ones that fire. */
static u64 rnd_delay(u64 *s)
{
	u64 r = rnd(s, 100);

	if (r < 8)
		return 0;
	if (r < 30)
		return rnd(s, 2 * NSEC_PER_MSEC);
	if (r < 65)
		return rnd(s, 64 * NSEC_PER_MSEC);
	if (r < 85)
		return 64 * NSEC_PER_MSEC + rnd(s, 4 * NSEC_PER_SEC);
	if (r < 93)
		return 4 * NSEC_PER_SEC + rnd(s, 260 * NSEC_PER_SEC);
	if (r < 97)
		return 260 * NSEC_PER_SEC + rnd(s, 5 * 3600 * NSEC_PER_SEC);
	return rnd(s, 400 * 24 * 3600 * NSEC_PER_SEC);
}

/* ------------------------------------------------------------------ */
/* The model of one worker's file                                      */
/* ------------------------------------------------------------------ */

enum kind { ONESHOT, RATE, DELAY };

/* One arming of a one-shot timer: its deadline lies in [lo, hi]. */
struct window {
	u64 lo, hi, user_data;
};

struct tmr {
	u64 id;			/* the kernel's id */
	bool used;		/* this id was handed out */
	bool live;		/* the id is valid: not cancelled, not released */
	bool orphan;		/* dead, but an unread event may hold its slot */
	enum kind kind;
	unsigned int live_idx;	/* index in worker::live while live */
	/* one-shot: unresolved armings, oldest first */
	unsigned int nwin;
	bool overflow;		/* more armings than MAX_WINDOWS: no window checks */
	s64 outstanding;
	struct window win[MAX_WINDOWS];
	/* periodic */
	u64 first, period, user_data, total, cancel_ns;
	bool cancelled;
	/* one-shot: the latest user data given (an event may carry any) */
	u64 ud_hist[MAX_WINDOWS];
	unsigned int nud;
};

/* ------------------------------------------------------------------ */
/* The model of a worker's submission ring                             */
/* ------------------------------------------------------------------ */

/*
 * A worker's ring timers live in RING_SLOTS slots of the ring (half at the
 * bottom of the slot range, half at its top) and one more, bad_slot, that
 * only ever gets ops that must fail with ERANGE. Every arming of a ring
 * timer (a ring ARM, or an ioctl MODIFY of a ring timer whose id an event
 * gave away) carries a user_data of its own: RING_TAG, the slot's index,
 * the slot's incarnation (a new kernel timer: the first ARM after the slot
 * was free) and the arming's number in its slot. An event is the model's
 * by its id (ioctl timers) or by that user_data (ring timers).
 */
#define RING_SLOTS	128
#define RING_TAG	0xb7ULL		/* top byte of a ring arming's user_data */
#define BAD_TAG		0xb8ULL		/* top byte of an op that must fail */
#define RING_XCQ	1024		/* completions expected at once, at most */
#define RING_QUIET_NS	(100 * NSEC_PER_MSEC)	/* longest syscall-free wait */
#define RING_STALL_NS	(5 * NSEC_PER_SEC)	/* a poller that slept on ops */

enum rstate {
	R_LIVE,		/* the slot's newest arming: fires unless superseded */
	R_MAYBE,	/* superseded when it may have fired: at most one event */
	R_MUST,		/* an ioctl said it fired: its event must come */
};

/* One arming of a ring slot, unresolved: no event counted it yet. */
struct rarm {
	u64 lo, hi;		/* its deadline lies in [lo, hi]; hi 0: not yet known */
	u64 delay;		/* relative: the delay, counted from the drain */
	u64 pos;		/* ring position after its op; 0: an ioctl's */
	u64 id;			/* its incarnation's kernel id, once an event gave it */
	u32 seq;		/* its number in the slot */
	u16 inc;		/* its slot's incarnation */
	u8 state;		/* enum rstate */
	bool rel;		/* relative: hi is known only after the drain */
};

struct rslot {
	u32 kslot;		/* the slot number the kernel sees */
	u32 seq;		/* armings so far */
	u16 inc;		/* incarnations so far; the current one if open */
	bool open;		/* the kernel's id behind the slot is a live timer */
	bool tainted;		/* an event left open unknown: CANCEL next */
	bool handsoff;		/* a short arming left alone until it fires */
	u64 id;			/* the open incarnation's id, once known */
	u64 close_pos;		/* the CANCEL that closed it; an ARM in its
				 * publication folds it away */
	u64 close_id;		/* the id it closed */
	u64 busy_pos;		/* no more ops on it until this is published */
	struct rarm *a;		/* unresolved armings, oldest first */
	unsigned int n, cap;
};

/* A ring op published but not yet known to have been drained. */
struct rpend {
	u64 pos;
	u32 si;
	u32 seq;		/* its arming (ARM), 0 for CANCEL */
	u32 sup;		/* the arming it superseded, 0 if none */
	bool has_seq, has_sup;
};

/* A completion an op must give: it failed. */
struct rxcqe {
	u64 pos, ud;
	u32 slot;
	s32 res;
};

struct wring {
	struct twheel_ring_hdr *hdr;
	struct twheel_ring_op *sq;
	struct twheel_ring_cqe *cq;
	size_t len;
	u64 tail;		/* ops written (positions count from the ring's creation) */
	u64 pub;		/* ops published: the sq_tail stored */
	u64 t0;			/* now_ns() before the ops being written */
	u32 bad_slot;		/* only ever ARMs that fail with ERANGE */
	u64 bad_seq;		/* ops that must fail, for their user_data */
	u64 erange_pos;		/* the last of them on bad_slot */
	struct rslot s[RING_SLOTS];
	struct rpend *p;	/* FIFO: p[ph..np) */
	size_t ph, np, pcap;
	struct rxcqe x[RING_XCQ];
	unsigned int nx;
};

struct worker {
	int idx, cpu, efd;
	struct twheel tw;		/* tw.fd -1: no file */
	struct twheel_sqbuf sq;		/* op_batch()'s */
	struct wring *r;		/* the file's ring, if mapped */
	u64 rnd;
	pthread_t thread;
	struct tmr *t;		/* every id handed out, in order: t[1..nt-1] */
	size_t cap, nt;
	u64 *hkey;		/* open addressing: id -> index into t */
	uint32_t *hval;
	size_t hsize;
	u64 *live;		/* live ids */
	unsigned int nlive, nperiodic;
	unsigned int norphans;	/* ids with tmr::orphan */
	u64 ops;
};

/* Ids are generation << 32 | (slot + 1): spread them over the table. */
static size_t id_hash(u64 id, size_t size)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) & (size - 1);
}

static struct tmr *tmr_get(struct worker *w, u64 id)
{
	size_t i;

	if (!id || !w->hsize)
		return NULL;
	for (i = id_hash(id, w->hsize); w->hkey[i]; i = (i + 1) & (w->hsize - 1))
		if (w->hkey[i] == id)
			return &w->t[w->hval[i]];
	return NULL;
}

/* The model of an id the model knows. */
static struct tmr *tmr_of(struct worker *w, u64 id)
{
	struct tmr *t = tmr_get(w, id);

	if (!t) {
		err("worker %d: id %llu unknown to the model", w->idx,
		    (unsigned long long)id);
		exit(2);
	}
	return t;
}

static void tmr_hash_add(struct worker *w, u64 id, uint32_t idx)
{
	size_t i = id_hash(id, w->hsize);

	while (w->hkey[i])
		i = (i + 1) & (w->hsize - 1);
	w->hkey[i] = id;
	w->hval[i] = idx;
}

static struct tmr *tmr_new(struct worker *w, u64 id)
{
	struct tmr *t;

	if (tmr_get(w, id))
		err("worker %d: id %llu handed out twice", w->idx,
		    (unsigned long long)id);
	if (!w->nt)
		w->nt = 1;
	if (w->nt >= w->cap) {
		size_t ncap = w->cap ? 2 * w->cap : 1024;

		w->t = realloc(w->t, ncap * sizeof(*w->t));
		w->live = realloc(w->live, ncap * sizeof(*w->live));
		if (!w->t || !w->live) {
			perror("realloc");
			exit(2);
		}
		w->cap = ncap;
	}
	if (2 * w->nt >= w->hsize) {
		size_t i, osize = w->hsize;
		u64 *okey = w->hkey;
		uint32_t *oval = w->hval;

		w->hsize = osize ? 2 * osize : 4096;
		w->hkey = calloc(w->hsize, sizeof(*w->hkey));
		w->hval = calloc(w->hsize, sizeof(*w->hval));
		if (!w->hkey || !w->hval) {
			perror("calloc");
			exit(2);
		}
		for (i = 0; i < osize; i++)
			if (okey[i])
				tmr_hash_add(w, okey[i], oval[i]);
		free(okey);
		free(oval);
	}
	t = &w->t[w->nt];
	memset(t, 0, sizeof(*t));
	tmr_hash_add(w, id, (uint32_t)w->nt++);
	t->id = id;
	t->used = true;
	t->live = true;
	t->live_idx = w->nlive;
	w->live[w->nlive++] = id;
	return t;
}

static void tmr_unlive(struct worker *w, u64 id)
{
	struct tmr *t = tmr_of(w, id);
	u64 last;

	if (!t->live)
		return;
	t->live = false;
	last = w->live[--w->nlive];
	w->live[t->live_idx] = last;
	tmr_of(w, last)->live_idx = t->live_idx;
	if (t->kind != ONESHOT)
		w->nperiodic--;
	/* A periodic timer's last event may still be queued. */
	if (t->kind != ONESHOT || t->outstanding > 0) {
		t->orphan = true;
		w->norphans++;
	}
}

/* An event of a dead timer was read: it holds no slot any more. */
static void tmr_unorphan(struct worker *w, struct tmr *t)
{
	if (t->orphan && (t->kind != ONESHOT || t->outstanding <= 0)) {
		t->orphan = false;
		w->norphans--;
	}
}

static void ud_push(struct tmr *t, u64 ud)
{
	t->ud_hist[t->nud++ % MAX_WINDOWS] = ud;
}

static void win_push(struct worker *w, u64 id, struct tmr *t, u64 lo, u64 hi,
		     u64 ud)
{
	ud_push(t, ud);
	t->outstanding++;
	if (t->nwin == MAX_WINDOWS) {
		t->overflow = true;
		return;
	}
	(void)w;
	(void)id;
	t->win[t->nwin++] = (struct window){ .lo = lo, .hi = hi, .user_data = ud };
}

/* The pending (newest) arming moved to a new deadline. */
static void win_replace_last(struct tmr *t, u64 lo, u64 hi, u64 ud)
{
	ud_push(t, ud);
	if (t->nwin)
		t->win[t->nwin - 1] = (struct window){ .lo = lo, .hi = hi,
						       .user_data = ud };
}

/* The newest arming was cancelled. */
static void win_pop_last(struct tmr *t)
{
	t->outstanding--;
	if (t->nwin)
		t->nwin--;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static void check_oneshot_event(struct worker *w, struct tmr *t,
				const struct twheel_event *ev)
{
	unsigned long long id = ev->id;
	struct window last = { 0 };
	bool misreport = false, ud_ok = false;
	unsigned int i, n;

	atomic_fetch_add(&st.oneshot_expiries, ev->count);
	/* CANCELLED is for periodic timers only. */
	if (ev->flags)
		err("worker %d: id %llu: one-shot event flags %#x", w->idx, id,
		    ev->flags);
	if (ev->count < 1 || (s64)ev->count > t->outstanding) {
		err("worker %d: id %llu: event count %llu, %lld armings unresolved",
		    w->idx, id, (unsigned long long)ev->count,
		    (long long)t->outstanding);
		if ((s64)ev->count > t->outstanding)
			atomic_fetch_add(&st.doubled, ev->count - t->outstanding);
	}
	if (!t->overflow && t->nwin >= ev->count) {
		/* The count oldest armings fired; the last of them is reported. */
		n = (unsigned int)ev->count;
		last = t->win[n - 1];
		/*
		 * MODIFY's new user data may show in the old expiry's event,
		 * even if that arming was cancelled or moved since.
		 */
		for (i = 0; i < MAX_WINDOWS && i < t->nud; i++)
			ud_ok |= t->ud_hist[i] == ev->user_data;
		if (ev->fired < t->win[0].lo || ev->fired < last.lo) {
			atomic_fetch_add(&st.early, 1);
			err("worker %d: id %llu fired %lld ns before its deadline",
			    w->idx, id, (long long)(last.lo - ev->fired));
		}
		if (ev->deadline < last.lo || ev->deadline > last.hi) {
			/* A newer arming's deadline: MODIFY raced the expiry. */
			for (i = n; i < t->nwin; i++)
				if (ev->deadline >= t->win[i].lo &&
				    ev->deadline <= t->win[i].hi)
					misreport = true;
			if (misreport) {
				atomic_fetch_add(&st.misreported, 1);
				err("worker %d: id %llu: the event has the deadline of a newer arming",
				    w->idx, id);
			} else
				err("worker %d: id %llu: deadline %llu outside [%llu, %llu]",
				    w->idx, id, (unsigned long long)ev->deadline,
				    (unsigned long long)last.lo,
				    (unsigned long long)last.hi);
		} else if (ev->fired < ev->deadline) {
			atomic_fetch_add(&st.early, 1);
			err("worker %d: id %llu fired %lld ns early", w->idx, id,
			    (long long)(ev->deadline - ev->fired));
		}
		if (!ud_ok)
			err("worker %d: id %llu: user_data %#llx of no arming",
			    w->idx, id, (unsigned long long)ev->user_data);
		memmove(t->win, t->win + n, (t->nwin - n) * sizeof(t->win[0]));
		t->nwin -= n;
	} else {
		t->nwin = 0;
		t->overflow = true;
	}
	t->outstanding -= (s64)ev->count;
	if (t->outstanding < 0)
		t->outstanding = 0;
	/* Fired and read, not re-armed: the id is released. */
	if (!t->outstanding && t->live)
		tmr_unlive(w, ev->id);
	tmr_unorphan(w, t);
}

static void check_periodic_event(struct worker *w, struct tmr *t,
				 const struct twheel_event *ev)
{
	unsigned long long id = ev->id;
	u64 k, lo, hi;

	atomic_fetch_add(&st.periodic_expiries, ev->count);
	tmr_unorphan(w, t);
	if (!(ev->flags & TWHEEL_EVENT_PERIODIC))
		err("worker %d: id %llu: periodic event without PERIODIC (%#x)",
		    w->idx, id, ev->flags);
	if ((ev->flags & TWHEEL_EVENT_CANCELLED) && !t->cancelled)
		err("worker %d: id %llu: CANCELLED before the cancel", w->idx, id);
	if (ev->user_data != t->user_data)
		err("worker %d: id %llu: user_data %#llx, not %#llx", w->idx,
		    id, (unsigned long long)ev->user_data,
		    (unsigned long long)t->user_data);
	if (ev->count < 1)
		err("worker %d: id %llu: event count 0", w->idx, id);
	if (ev->fired < ev->deadline) {
		atomic_fetch_add(&st.early, 1);
		err("worker %d: id %llu: periodic expiry %lld ns early", w->idx,
		    id, (long long)(ev->deadline - ev->fired));
	}
	t->total += ev->count;
	if (ev->deadline < t->first) {
		err("worker %d: id %llu: deadline before the first one", w->idx, id);
		return;
	}
	k = (ev->deadline - t->first) / t->period;
	lo = k + 1;
	hi = ev->fired >= t->first ? (ev->fired - t->first) / t->period + 1 : 0;
	if (t->kind == RATE) {
		if ((ev->deadline - t->first) % t->period)
			err("worker %d: id %llu: deadline off the period grid", w->idx, id);
		if (t->total < lo || t->total > hi)
			err("worker %d: id %llu: fixed rate: %llu expiries+overruns, expected %llu..%llu",
			    w->idx, id, (unsigned long long)t->total,
			    (unsigned long long)lo, (unsigned long long)hi);
	} else if (t->total > lo) {
		err("worker %d: id %llu: fixed delay: %llu expiries by deadline first+%llu periods",
		    w->idx, id, (unsigned long long)t->total,
		    (unsigned long long)k);
	}
}

static void ring_event(struct worker *w, const struct twheel_event *ev);
static void ring_sys(struct worker *w);

static void check_event(struct worker *w, const struct twheel_event *ev)
{
	struct tmr *t = tmr_get(w, ev->id);

	atomic_fetch_add(&st.events, 1);
	if (ev->pad)
		err("worker %d: event pad %u", w->idx, ev->pad);
	if (!t) {
		/* Not an id the ioctls gave: a ring timer's, or none. */
		ring_event(w, ev);
		return;
	}
	if (t->kind == ONESHOT)
		check_oneshot_event(w, t, ev);
	else
		check_periodic_event(w, t, ev);
}

/*
 * Non-blocking read of up to max events; returns how many. A raw read():
 * it also checks that read() returns whole records, which
 * twheel_read_nowait() would hide.
 */
static int read_events(struct worker *w, unsigned int max)
{
	struct twheel_event ev[16];
	ssize_t r;
	int i, n;

	if (max > 16)
		max = 16;
	r = read(w->tw.fd, ev, max * sizeof(ev[0]));
	ring_sys(w);	/* before the events: the read drained the ring */
	atomic_fetch_add(&st.reads, 1);
	if (r < 0) {
		if (errno != EAGAIN)
			err("worker %d: read: %s", w->idx, strerror(errno));
		return 0;
	}
	if (r % sizeof(ev[0]) || r == 0) {
		err("worker %d: read returned %zd", w->idx, r);
		return 0;
	}
	n = (int)(r / sizeof(ev[0]));
	for (i = 0; i < n; i++)
		check_event(w, &ev[i]);
	return n;
}

/* ------------------------------------------------------------------ */
/* The submission ring                                                 */
/* ------------------------------------------------------------------ */

static u64 ring_ud(u32 si, u16 inc, u32 seq)
{
	return RING_TAG << 56 | (u64)si << 48 | (u64)inc << 32 | seq;
}

static struct rarm *rarm_find(struct rslot *s, u32 seq)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->a[i].seq == seq)
			return &s->a[i];
	return NULL;
}

static void rarm_del(struct rslot *s, struct rarm *a)
{
	size_t i = (size_t)(a - s->a);

	memmove(a, a + 1, (s->n - i - 1) * sizeof(*a));
	s->n--;
}

static struct rarm *rarm_add(struct rslot *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->a = realloc(s->a, s->cap * sizeof(*s->a));
		if (!s->a) {
			perror("realloc");
			exit(2);
		}
	}
	return &s->a[s->n++];
}

/* The newest arming of the slot's open incarnation, or NULL. */
static struct rarm *rarm_newest(struct rslot *s)
{
	struct rarm *a = s->n ? &s->a[s->n - 1] : NULL;

	return s->open && a && a->inc == s->inc ? a : NULL;
}

/* Map a ring on the worker's new file, most of the time. */
static void ring_map(struct worker *w)
{
	long page = sysconf(_SC_PAGESIZE);
	u32 mt = w->tw.info.max_timers;
	struct wring *r;
	unsigned int i;
	void *p;

	if (!(w->tw.info.flags & TWHEEL_INFO_RING) || mt < 2 * RING_SLOTS + 1 ||
	    !rnd(&w->rnd, 8))
		return;
	r = calloc(1, sizeof(*r));
	if (!r) {
		perror("calloc");
		exit(2);
	}
	if (page <= 0)
		page = 4096;
	r->len = (TWHEEL_RING_MAP_BYTES + (size_t)page - 1) / (size_t)page *
		 (size_t)page;
	p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, w->tw.fd,
		 (off_t)TWHEEL_RING_OFFSET);
	if (p == MAP_FAILED) {
		/* The caps may refuse it; nothing else may. */
		if (errno != EDQUOT && errno != EAGAIN)
			err("worker %d: mmap of the ring: %s", w->idx, strerror(errno));
		atomic_fetch_add(&st.ring_refused, 1);
		free(r);
		return;
	}
	r->hdr = p;
	r->sq = (void *)((char *)p + TWHEEL_RING_SQ_OFF);
	r->cq = (void *)((char *)p + TWHEEL_RING_CQ_OFF);
	if (r->hdr->entries != TWHEEL_RING_ENTRIES || r->hdr->sq_tail ||
	    r->hdr->sq_head || !(r->hdr->flags & TWHEEL_RING_NEED_WAKEUP))
		err("worker %d: a new ring: entries %u, sq_tail %u, sq_head %u, flags %#x",
		    w->idx, r->hdr->entries, r->hdr->sq_tail, r->hdr->sq_head,
		    r->hdr->flags);
	for (i = 0; i < RING_SLOTS; i++)
		r->s[i].kslot = i < RING_SLOTS / 2 ? i : mt - RING_SLOTS + i;
	r->bad_slot = RING_SLOTS / 2;
	w->r = r;
}

/* Unmap the ring and forget its model: its file is closed, or the run ends. */
static void ring_free(struct worker *w)
{
	struct wring *r = w->r;
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < RING_SLOTS; i++) {
		atomic_fetch_add(&st.ring_closed, r->s[i].n);
		free(r->s[i].a);
	}
	munmap(r->hdr, r->len);
	free(r->p);
	free(r);
	w->r = NULL;
}

static void ring_expect(struct wring *r, u32 slot, s32 res, u64 ud)
{
	r->x[r->nx++] = (struct rxcqe){ .pos = r->tail + 1, .ud = ud,
					 .slot = slot, .res = res };
}

/* Take the completions the kernel wrote: each one an op must have given. */
static void ring_reap(struct worker *w)
{
	struct wring *r = w->r;
	u32 head = r->hdr->cq_head, tail;
	unsigned int i;

	/* Pairs with the kernel's release store of cq_tail. */
	tail = __atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE);
	if (tail - head > TWHEEL_RING_ENTRIES)
		err("worker %d: ring: cq_tail %u, cq_head %u", w->idx, tail, head);
	for (; head != tail && tail - head <= TWHEEL_RING_ENTRIES; head++) {
		struct twheel_ring_cqe c = r->cq[head % TWHEEL_RING_ENTRIES];

		for (i = 0; i < r->nx; i++)
			if (r->x[i].ud == c.user_data)
				break;
		if (i == r->nx || r->x[i].slot != c.slot || r->x[i].res != c.result) {
			err("worker %d: ring: completion {slot %u, %d, %#llx} of no failing op",
			    w->idx, c.slot, c.result,
			    (unsigned long long)c.user_data);
			continue;
		}
		r->x[i] = r->x[--r->nx];
		atomic_fetch_add(&st.ring_failed, 1);
	}
	/* The entries are read: the kernel may write them again. */
	__atomic_store_n(&r->hdr->cq_head, head, __ATOMIC_RELEASE);
	if (r->hdr->cq_overflow)
		err("worker %d: ring: %llu completions overflowed", w->idx,
		    (unsigned long long)r->hdr->cq_overflow);
}

/*
 * A system call into the file has returned: every op published before it
 * has taken effect (uapi/twheel.h), at the latest now. A relative arming's
 * deadline is now known to lie within [written + delay, now + delay]; an
 * arming superseded (by a later ARM or a CANCEL on its slot) before its
 * earliest deadline cannot have fired; a failing op has its completion.
 */
static void ring_sys(struct worker *w)
{
	struct wring *r = w->r;
	struct rslot *s;
	struct rarm *a;
	unsigned int i;
	u64 now;

	if (!r)
		return;
	now = now_ns();
	while (r->ph < r->np && r->p[r->ph].pos <= r->pub) {
		struct rpend *e = &r->p[r->ph++];

		s = &r->s[e->si];
		if (e->has_seq && (a = rarm_find(s, e->seq)) && a->rel && !a->hi)
			a->hi = now + a->delay;
		if (e->has_sup && (a = rarm_find(s, e->sup)) && now < a->lo) {
			if (a->state == R_MUST)
				err("worker %d: ring slot %u: an arming that fired was superseded before its deadline",
				    w->idx, s->kslot);
			rarm_del(s, a);
			atomic_fetch_add(&st.ring_cancelled, 1);
		}
	}
	if (r->ph == r->np)
		r->ph = r->np = 0;
	ring_reap(w);
	for (i = 0; i < r->nx; i++)
		if (r->x[i].pos <= r->pub) {
			err("worker %d: ring: an op on slot %u that must fail (%d) gave no completion by the next system call",
			    w->idx, r->x[i].slot, r->x[i].res);
			r->x[i--] = r->x[--r->nx];
		}
}

static void ring_pend(struct wring *r, struct rpend e)
{
	if (r->np == r->pcap) {
		if (r->ph) {
			memmove(r->p, r->p + r->ph, (r->np - r->ph) * sizeof(*r->p));
			r->np -= r->ph;
			r->ph = 0;
		} else {
			r->pcap = r->pcap ? 2 * r->pcap : 1024;
			r->p = realloc(r->p, r->pcap * sizeof(*r->p));
			if (!r->p) {
				perror("realloc");
				exit(2);
			}
		}
	}
	e.pos = r->tail;
	r->p[r->np++] = e;
}

/*
 * Publish what is written: a release store of sq_tail, a full barrier,
 * then TWHEEL_IOC_RING_ENTER if the kernel says it stopped polling (@mode
 * 0), always (1: a spurious doorbell is legal), or never (2: the ops then
 * wait for the poller, which may have stopped, or the next system call).
 * Return: whether it entered.
 */
static bool ring_publish(struct worker *w, int mode)
{
	struct wring *r = w->r;
	u32 fl;

	/* Pairs with the kernel's acquire load of sq_tail. */
	__atomic_store_n(&r->hdr->sq_tail, (u32)r->tail, __ATOMIC_RELEASE);
	r->pub = r->tail;
	/* Pairs with the kernel's smp_mb() before it rechecks sq_tail. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	fl = __atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED);
	atomic_fetch_add(&st.ring_pubs, 1);
	if (fl & TWHEEL_RING_BAD_TAIL)
		err("worker %d: ring: BAD_TAIL with an honest tail", w->idx);
	if (mode == 2 || (mode == 0 && !(fl & TWHEEL_RING_NEED_WAKEUP)))
		return false;
	if (ioctl(w->tw.fd, TWHEEL_IOC_RING_ENTER))
		err("worker %d: RING_ENTER: %s", w->idx, strerror(errno));
	atomic_fetch_add(fl & TWHEEL_RING_NEED_WAKEUP ? &st.ring_doorbells :
			 &st.ring_spurious, 1);
	ring_sys(w);
	return true;
}

static void ring_write(struct wring *r, const struct twheel_ring_op *op)
{
	r->sq[r->tail % TWHEEL_RING_ENTRIES] = *op;
	r->tail++;
	atomic_fetch_add(&st.ring_ops, 1);
}

/* Room for one more op: a full ring is published and entered, as libtwheel does. */
static void ring_room(struct worker *w)
{
	struct wring *r = w->r;
	/* Pairs with the kernel's release store of sq_head. */
	u32 head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);

	if ((u32)r->tail - head < TWHEEL_RING_ENTRIES)
		return;
	ring_publish(w, 1);
	atomic_fetch_add(&st.ring_full_enters, 1);
	head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);
	if ((u32)r->tail != head)
		err("worker %d: ring: RING_ENTER on a full ring left %u ops",
		    w->idx, (u32)r->tail - head);
}

/* Is the op at @pos published or written but not yet taken by the kernel? */
static bool ring_unconsumed(struct wring *r, u64 pos)
{
	/* Pairs with the kernel's release store of sq_head. */
	u32 head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);

	return pos && (s32)((u32)pos - head) > 0;
}

/*
 * A new op on the slot: its newest arming may not fire any more. One
 * written in this publication never ran (the kernel folds the ops on a
 * slot that meet in one drain into the last): it is gone. Return: the
 * arming superseded, if any.
 */
static bool ring_supersede(struct worker *w, struct rslot *s, u32 *sup)
{
	struct rarm *a = rarm_newest(s);

	if (!a || a->state == R_MAYBE)
		return false;
	if (a->pos > w->r->pub) {
		rarm_del(s, a);
		atomic_fetch_add(&st.ring_cancelled, 1);
		return false;
	}
	if (a->state == R_LIVE)
		a->state = R_MAYBE;
	*sup = a->seq;
	return true;
}

static void ring_arm(struct worker *w, unsigned int si, bool abs, u64 value,
		     bool handsoff)
{
	struct wring *r = w->r;
	struct rslot *s = &r->s[si];
	struct rpend e = { .si = si, .has_seq = true };
	struct twheel_ring_op op = { .op = TWHEEL_RING_ARM };
	struct rarm *a;

	ring_room(w);
	if (!s->open && s->close_pos <= r->pub && ring_unconsumed(r, s->close_pos)) {
		/*
		 * The CANCEL that closed the slot is published but not taken:
		 * if one drain took both, it would fold into this ARM (a MODIFY
		 * of the timer it cancelled). Have it taken first.
		 */
		if (ioctl(w->tw.fd, TWHEEL_IOC_RING_ENTER))
			err("worker %d: RING_ENTER: %s", w->idx, strerror(errno));
		atomic_fetch_add(&st.ring_spurious, 1);
		ring_sys(w);
	}
	if (s->open) {
		e.has_sup = ring_supersede(w, s, &e.sup);
	} else if (s->close_pos > r->pub) {
		/* A CANCEL before it in this publication is folded into it. */
		s->open = true;
		s->id = s->close_id;
	} else {
		s->open = true;
		s->inc++;
		s->id = 0;
	}
	a = rarm_add(s);
	*a = (struct rarm){
		.lo = abs ? value : r->t0 + value, .hi = abs ? value : 0,
		.delay = value, .pos = r->tail + 1, .id = s->id,
		.seq = ++s->seq, .inc = s->inc, .state = R_LIVE, .rel = !abs,
	};
	e.seq = a->seq;
	op.flags = abs ? TWHEEL_TIMER_ABSTIME : 0;
	op.slot = s->kslot;
	op.value = value;
	op.user_data = ring_ud(si, s->inc, a->seq);
	ring_write(r, &op);
	ring_pend(r, e);
	s->handsoff = handsoff;
	atomic_fetch_add(&st.ring_arms, 1);
}

static void ring_cancel(struct worker *w, unsigned int si)
{
	struct wring *r = w->r;
	struct rslot *s = &r->s[si];
	struct rpend e = { .si = si };
	struct twheel_ring_op op = { .op = TWHEEL_RING_CANCEL };

	ring_room(w);
	if (s->open) {
		e.has_sup = ring_supersede(w, s, &e.sup);
		s->open = false;
		s->close_pos = r->tail + 1;
		s->close_id = s->id;
		s->id = 0;
	}
	if (s->tainted) {
		/* Open or not, it is closed now: no more ops on it until published. */
		s->tainted = false;
		s->close_pos = 0;
		s->busy_pos = r->tail + 1;
	}
	op.slot = s->kslot;
	ring_write(r, &op);
	ring_pend(r, e);
	atomic_fetch_add(&st.ring_cancels, 1);
}

/* An op the kernel must refuse with EINVAL, on a slot or past the slots. */
static void ring_bad(struct worker *w)
{
	struct wring *r = w->r;
	struct twheel_ring_op op = { .op = TWHEEL_RING_ARM };
	u64 ud = BAD_TAG << 56 | ++r->bad_seq;

	if (r->nx >= RING_XCQ / 2)
		return;
	ring_room(w);
	op.slot = r->s[rnd(&w->rnd, RING_SLOTS)].kslot;
	op.value = rnd(&w->rnd, NSEC_PER_SEC);
	op.user_data = ud;
	switch (rnd(&w->rnd, 8)) {
	case 0:
		op.slot = rnd(&w->rnd, 2) ? UINT32_MAX :
			  w->tw.info.max_timers + (u32)rnd(&w->rnd, 1000);
		break;
	case 1:
		op.flags = TWHEEL_TIMER_PERIODIC;
		break;
	case 2:
		op.value = (1ULL << 63) + rnd(&w->rnd, 1000);
		break;
	case 3:
		op.pad = 1;
		break;
	case 4:
		op.reserved = rnd_next(&w->rnd) | 1;
		break;
	case 5:
		op.op = (u8)(rnd(&w->rnd, 2) ? 0 : 3 + rnd(&w->rnd, 253));
		break;
	case 6:
		op.op = TWHEEL_RING_CANCEL;	/* with a value */
		break;
	default:
		op.op = TWHEEL_RING_CANCEL;	/* with user data only */
		op.value = 0;
		break;
	}
	ring_expect(r, op.slot, -EINVAL, ud);
	ring_write(r, &op);
	atomic_fetch_add(&st.ring_bad, 1);
}

/*
 * A well-formed ARM that SCHEDULE refuses (now + delay overflows: ERANGE),
 * on the one slot that never has a timer; one per publication, as two
 * would fold into one.
 */
static void ring_erange(struct worker *w)
{
	struct wring *r = w->r;
	struct twheel_ring_op op = {
		.op = TWHEEL_RING_ARM, .slot = r->bad_slot, .value = INT64_MAX,
		.user_data = BAD_TAG << 56 | ++r->bad_seq,
	};

	/* Ops on one slot that meet in a drain fold: one in flight at a time. */
	if (r->nx >= RING_XCQ / 2 || ring_unconsumed(r, r->erange_pos))
		return;
	ring_room(w);
	r->erange_pos = r->tail + 1;
	ring_expect(r, op.slot, -ERANGE, op.user_data);
	ring_write(r, &op);
	atomic_fetch_add(&st.ring_bad, 1);
}

/* A slot ops may go to now, or -1. */
static int ring_pick(struct worker *w)
{
	struct wring *r = w->r;
	unsigned int tries, si;

	for (tries = 0; tries < 8; tries++) {
		si = (unsigned int)rnd(&w->rnd, RING_SLOTS);
		if (!r->s[si].handsoff && r->s[si].busy_pos <= r->pub)
			return (int)si;
	}
	return -1;
}

/* An ARM on the slot: a delay or deadline anywhere, or earlier than now. */
static void ring_arm_rnd(struct worker *w, unsigned int si)
{
	struct wring *r = w->r;
	struct rslot *s = &r->s[si];
	struct rarm *a = rarm_newest(s);
	u64 d = rnd_delay(&w->rnd), t0 = r->t0;
	bool abs = !rnd(&w->rnd, 5), handsoff = false;

	if (a && a->state != R_MAYBE && a->lo > t0 + 1 && rnd(&w->rnd, 2))
		d = rnd(&w->rnd, a->lo - t0);	/* modify earlier */
	else if (!s->open && !abs && !rnd(&w->rnd, 3)) {
		/* Short, and left alone until it fires: it must. */
		d = rnd(&w->rnd, 64 * NSEC_PER_MSEC);
		handsoff = true;
	}
	if (abs)
		ring_arm(w, si, true, rnd(&w->rnd, 10) ? t0 + d :
			 t0 - rnd(&w->rnd, t0 < NSEC_PER_SEC ? t0 : NSEC_PER_SEC),
			 false);
	else
		ring_arm(w, si, false, d, handsoff);
	/* The same slot again in this publication: they meet in one drain. */
	if (!handsoff && !rnd(&w->rnd, 8)) {
		if (rnd(&w->rnd, 2))
			ring_cancel(w, si);
		else
			ring_arm(w, si, false, rnd_delay(&w->rnd), false);
	}
}

/*
 * Without a system call, wait (a bounded time) for the poller to take what
 * was published: the kernel promised it would, as it did not ask for the
 * doorbell. A poller that stops (NEED_WAKEUP) with the ops still there lost
 * them until the next system call: that fails the run.
 */
static void ring_quiet(struct worker *w)
{
	struct wring *r = w->r;
	u64 t = now_ns(), now, stalled = 0;
	unsigned long long lat, max;

	for (;;) {
		/* Pairs with the kernel's release store of sq_head. */
		if (__atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE) == (u32)r->pub) {
			lat = now_ns() - t;
			atomic_fetch_add(lat > RING_QUIET_NS ? &st.ring_quiet_late :
					 &st.ring_quiet, 1);
			max = atomic_load(&st.ring_quiet_max_ns);
			while (lat > max &&
			       !atomic_compare_exchange_weak(&st.ring_quiet_max_ns, &max, lat))
				;
			return;
		}
		now = now_ns();
		if (now - t > RING_QUIET_NS) {
			if (!(__atomic_load_n(&r->hdr->flags, __ATOMIC_ACQUIRE) &
			      TWHEEL_RING_NEED_WAKEUP)) {
				atomic_fetch_add(&st.ring_quiet_late, 1);
				return;
			}
			if (!stalled)
				stalled = now;
			if (now - stalled > RING_STALL_NS) {
				err("worker %d: ring: the poller stopped (NEED_WAKEUP) with %u ops published and not taken",
				    w->idx, (u32)r->pub - r->hdr->sq_head);
				return;
			}
		}
		sched_yield();
	}
}

/* 1-8 ops on random slots (some malformed, some meeting), published. */
static void ring_batch(struct worker *w, bool quiet)
{
	struct wring *r = w->r;
	unsigned int n = 1 + (unsigned int)rnd(&w->rnd, 8), i;
	int si, mode = 0;
	u64 k;

	r->t0 = now_ns();
	for (i = 0; i < n; i++) {
		k = rnd(&w->rnd, 100);
		if (k < 5) {
			ring_bad(w);
			continue;
		}
		if (k < 7) {
			ring_erange(w);
			continue;
		}
		si = ring_pick(w);
		if (si < 0)
			continue;
		if (r->s[si].tainted || (r->s[si].open && k < 35))
			ring_cancel(w, (unsigned int)si);
		else
			ring_arm_rnd(w, (unsigned int)si);
	}
	if (!quiet) {
		k = rnd(&w->rnd, 40);
		mode = k == 0 ? 2 : k == 1 ? 1 : 0;
	}
	if (!ring_publish(w, mode) && quiet)
		ring_quiet(w);
}

/*
 * A whole ring in one publication (TWHEEL_RING_ENTRIES ops, the kernel's
 * limit), now and then with one op more, which finds it full and enters.
 */
static void ring_full(struct worker *w)
{
	struct wring *r = w->r;
	unsigned int i;
	int si;

	if (__atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE) != (u32)r->tail) {
		if (ioctl(w->tw.fd, TWHEEL_IOC_RING_ENTER))
			err("worker %d: RING_ENTER: %s", w->idx, strerror(errno));
		ring_sys(w);
	}
	r->t0 = now_ns();
	for (i = 0; i < TWHEEL_RING_ENTRIES + (rnd(&w->rnd, 2) ? 1 : 0); i++) {
		si = ring_pick(w);
		if (si < 0) {
			/* Nothing there: a CANCEL that finds no timer. */
			struct twheel_ring_op op = { .op = TWHEEL_RING_CANCEL,
						     .slot = r->bad_slot };

			ring_room(w);
			ring_write(r, &op);
		} else if (r->s[si].tainted || (r->s[si].open && !rnd(&w->rnd, 3))) {
			ring_cancel(w, (unsigned int)si);
		} else {
			ring_arm(w, (unsigned int)si, false,
				 NSEC_PER_SEC + rnd(&w->rnd, 10 * NSEC_PER_SEC), false);
		}
	}
	ring_publish(w, 0);
	atomic_fetch_add(&st.ring_fulls, 1);
}

/*
 * An ioctl on a ring timer whose id an event gave away: MODIFY or CANCEL
 * by id, right after (@ring_first) a ring ARM of the same timer that the
 * ioctl must see done. Their results say what became of its newest arming.
 */
static void ring_ioctl(struct worker *w, bool ring_first)
{
	struct wring *r = w->r;
	struct rslot *s = NULL;
	struct rarm *a;
	unsigned int tries, si = 0;
	u64 v, t0, t1, ud;
	bool abs;
	long rr;
	u32 seq;

	for (tries = 0; tries < 16; tries++) {
		si = (unsigned int)rnd(&w->rnd, RING_SLOTS);
		s = &r->s[si];
		a = rarm_newest(s);
		if (s->id && !s->tainted && !s->handsoff && a &&
		    a->state != R_MAYBE && s->busy_pos <= r->pub)
			break;
		s = NULL;
	}
	if (!s) {
		ring_batch(w, false);
		return;
	}
	if (ring_first) {
		r->t0 = now_ns();
		ring_arm(w, si, false, NSEC_PER_MSEC + rnd_delay(&w->rnd), false);
		ring_publish(w, rnd(&w->rnd, 2) ? 2 : 0);
	}
	seq = rarm_newest(s)->seq;
	abs = !rnd(&w->rnd, 5);
	v = rnd_delay(&w->rnd);
	t0 = now_ns();
	if (abs)
		v += t0;
	if (rnd(&w->rnd, 2)) {
		ud = ring_ud(si, s->inc, s->seq + 1);
		rr = twheel_modify(&w->tw, s->id, v, 0,
				   abs ? TWHEEL_TIMER_ABSTIME : 0, ud);
	} else {
		ud = 0;
		rr = twheel_cancel(&w->tw, s->id);
	}
	t1 = now_ns();
	ring_sys(w);
	atomic_fetch_add(&st.ring_ioctls, 1);
	if (rr < 0 || rr > 1) {
		err("worker %d: %s of ring slot %u's timer %llu: %ld (%s)", w->idx,
		    ud ? "MODIFY" : "CANCEL", s->kslot,
		    (unsigned long long)s->id, rr, strerror((int)-rr));
		return;
	}
	a = rarm_find(s, seq);
	if (!a) {
		err("worker %d: ring slot %u: newest arming gone", w->idx, s->kslot);
		return;
	}
	if (rr == 1) {
		/* It was pending: it will not fire. */
		if (a->state == R_MUST)
			err("worker %d: ring slot %u: an arming that fired was pending",
			    w->idx, s->kslot);
		rarm_del(s, a);
		atomic_fetch_add(&st.ring_cancelled, 1);
	} else {
		/* It fired; its event is still to be read. */
		a->state = R_MUST;
	}
	if (!ud) {
		s->open = false;
		s->id = 0;
		s->close_pos = 0;
		return;
	}
	a = rarm_add(s);
	*a = (struct rarm){
		.lo = abs ? v : t0 + v, .hi = abs ? v : t1 + v, .id = s->id,
		.seq = ++s->seq, .inc = s->inc, .state = R_LIVE,
	};
}

static void ring_step(struct worker *w)
{
	u64 k = rnd(&w->rnd, 100);

	if (k < 4) {
		ring_full(w);
	} else if (k < 20) {
		ring_ioctl(w, true);
	} else if (k < 28) {
		ring_ioctl(w, false);
	} else if (k < 31) {
		if (ioctl(w->tw.fd, TWHEEL_IOC_RING_ENTER))
			err("worker %d: RING_ENTER: %s", w->idx, strerror(errno));
		atomic_fetch_add(&st.ring_spurious, 1);
		ring_sys(w);
	} else {
		ring_batch(w, k < 45);
	}
}

/*
 * An event of a ring timer, found by its user_data: the slot, incarnation
 * and arming q whose data it carries. It counts expiries of armings of
 * that incarnation up to q (a MODIFY that overtakes an expiry gives it its
 * data); the newest of them, m, has the deadline reported. Armings up to m
 * are resolved (fired, counted here, or superseded); those between m and q
 * were superseded unfired; q, if not m, is still pending.
 */
static void ring_event(struct worker *w, const struct twheel_event *ev)
{
	struct wring *r = w->r;
	u64 ud = ev->user_data;
	u32 si = (u32)(ud >> 48) & 0xff, q = (u32)ud;
	u16 inc = (u16)(ud >> 32);
	unsigned int i, j, ncand = 0, nle = 0, nmust = 0, first = UINT32_MAX,
		     last = UINT32_MAX;
	struct rslot *s;
	bool drop;
	struct rarm *a;

	if (!r || ud >> 56 != RING_TAG || si >= RING_SLOTS) {
		err("worker %d: event of unknown id %llu, user_data %#llx",
		    w->idx, (unsigned long long)ev->id, (unsigned long long)ud);
		return;
	}
	s = &r->s[si];
	atomic_fetch_add(&st.ring_fired, ev->count);
	if (ev->flags || ev->count < 1)
		err("worker %d: ring slot %u: event flags %#x count %llu", w->idx,
		    s->kslot, ev->flags, (unsigned long long)ev->count);
	if (ev->fired < ev->deadline) {
		atomic_fetch_add(&st.early, 1);
		err("worker %d: ring slot %u fired %lld ns early", w->idx,
		    s->kslot, (long long)(ev->deadline - ev->fired));
	}
	for (i = 0; i < s->n; i++) {
		a = &s->a[i];
		if (a->inc != inc || a->seq > q)
			continue;
		if (a->id && a->id != ev->id) {
			err("worker %d: ring slot %u: id %llu for a timer that was %llu",
			    w->idx, s->kslot, (unsigned long long)ev->id,
			    (unsigned long long)a->id);
			return;
		}
		ncand++;
		if (ev->deadline >= a->lo && (!a->hi || ev->deadline <= a->hi)) {
			if (first == UINT32_MAX)
				first = i;
			last = i;
		}
	}
	if (!ncand) {
		atomic_fetch_add(&st.doubled, 1);
		err("worker %d: ring slot %u: an event (arming %u, deadline %llu) of no arming that may still fire",
		    w->idx, s->kslot, q, (unsigned long long)ev->deadline);
		return;
	}
	if (first == UINT32_MAX) {
		/* Late: the op ran after a system call that began after it. */
		for (i = 0; i < s->n; i++)
			if (s->a[i].inc == inc && s->a[i].seq <= q)
				first = last = i;
		atomic_fetch_add(&st.misreported, 1);
		err("worker %d: ring slot %u: deadline %llu (arming %u) in no arming's window; the newest: arming %u, %llu..%llu",
		    w->idx, s->kslot, (unsigned long long)ev->deadline, q,
		    s->a[last].seq, (unsigned long long)s->a[last].lo,
		    (unsigned long long)s->a[last].hi);
	}
	if (ev->fired < s->a[first].lo) {
		atomic_fetch_add(&st.early, 1);
		err("worker %d: ring slot %u fired before its arming's earliest deadline",
		    w->idx, s->kslot);
	}
	for (i = 0; i <= last; i++)
		if (s->a[i].inc == inc) {
			nle++;
			nmust += s->a[i].state == R_MUST;
		}
	if (ev->count > nle || (first == last && nmust > ev->count)) {
		atomic_fetch_add(&st.doubled, 1);
		err("worker %d: ring slot %u: event count %llu, %u armings could fire, %u did",
		    w->idx, s->kslot, (unsigned long long)ev->count, nle, nmust);
	}
	for (i = 0; i < s->n; i++)
		if (s->a[i].inc == inc)
			s->a[i].id = ev->id;
	if (s->open && s->inc == inc) {
		if (s->id && s->id != ev->id)
			err("worker %d: ring slot %u: id %llu, the slot's is %llu",
			    w->idx, s->kslot, (unsigned long long)ev->id,
			    (unsigned long long)s->id);
		s->id = ev->id;
	}
	if (first != last) {
		/* Two armings' windows hold the deadline: which fired is unknown. */
		atomic_fetch_add(&st.ring_ambiguous, 1);
		for (i = first; i <= last; i++)
			if (s->a[i].inc == inc)
				s->a[i].state = R_MAYBE;
		for (i = j = 0; i < s->n; i++)
			if (i >= first || s->a[i].inc != inc)
				s->a[j++] = s->a[i];
		s->n = j;
		if (s->open && s->inc == inc)
			s->tainted = true;
		return;
	}
	atomic_fetch_add(&st.ring_cancelled, nle - ev->count);
	for (i = j = 0; i < s->n; i++) {
		a = &s->a[i];
		drop = a->inc == inc && (i <= last || a->seq < q);
		if (drop && i > last) {
			if (a->state == R_MUST)
				err("worker %d: ring slot %u: an arming that fired is not in its event",
				    w->idx, s->kslot);
			atomic_fetch_add(&st.ring_cancelled, 1);
		}
		if (!drop)
			s->a[j++] = *a;
	}
	s->n = j;
	/* Read, and nothing of it pending: the kernel forgot the id. */
	if (s->open && s->inc == inc && !rarm_newest(s)) {
		s->open = false;
		s->id = 0;
		s->close_pos = 0;
	}
	if (!s->open)
		s->handsoff = false;
}

/* INFO's count of timers: the ring's share, at least and at most. */
static void ring_info_bounds(struct worker *w, unsigned int *lo, unsigned int *hi)
{
	struct wring *r = w->r;
	unsigned int i;

	*lo = *hi = 0;
	if (!r)
		return;
	for (i = 0; i < RING_SLOTS; i++) {
		*lo += r->s[i].open && !r->s[i].tainted;
		*hi += r->s[i].open || r->s[i].tainted;
		*hi += r->s[i].n;
	}
}

/*
 * The end: cancel every ring timer but those due now or left alone (they
 * must fire), through the ring, entered.
 */
static void ring_finish_cancel(struct worker *w)
{
	struct wring *r = w->r;
	struct rslot *s;
	struct rarm *a;
	unsigned int i;

	if (!r)
		return;
	r->t0 = now_ns();
	for (i = 0; i < RING_SLOTS; i++) {
		s = &r->s[i];
		a = rarm_newest(s);
		if (!s->open && !s->tainted)
			continue;
		if (!s->tainted && a && a->state != R_MAYBE &&
		    (s->handsoff || (a->hi && a->hi <= r->t0 + 50 * NSEC_PER_MSEC)))
			continue;
		ring_cancel(w, i);
	}
	ring_publish(w, 1);
}

/* After everything was read: what was to fire did. */
static void ring_finish_check(struct worker *w)
{
	struct wring *r = w->r;
	struct rslot *s;
	unsigned int i, j;

	if (!r)
		return;
	ring_sys(w);
	for (i = 0; i < RING_SLOTS; i++) {
		s = &r->s[i];
		for (j = 0; j < s->n; j++) {
			if (s->a[j].state == R_MAYBE) {
				/* A cancel that raced its expiry won. */
				atomic_fetch_add(&st.ring_cancelled, 1);
				continue;
			}
			atomic_fetch_add(&st.lost, 1);
			err("worker %d: ring slot %u: arming %u (deadline %llu..%llu) neither fired nor cancelled",
			    w->idx, s->kslot, s->a[j].seq,
			    (unsigned long long)s->a[j].lo,
			    (unsigned long long)s->a[j].hi);
		}
		s->n = 0;
	}
	if (r->nx)
		err("worker %d: ring: %u completions never came", w->idx, r->nx);
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static void fill_oneshot(struct worker *w, struct twheel_timer_spec *s,
			 u64 *lo_off, bool *abs)
{
	u64 d = rnd_delay(&w->rnd), now;

	memset(s, 0, sizeof(*s));
	s->clockid = TWHEEL_CLOCK_MONOTONIC;
	s->user_data = rnd_next(&w->rnd) & ~(1ULL << 63);	/* no ring tag */
	*abs = !rnd(&w->rnd, 5);
	if (*abs) {
		now = now_ns();
		s->flags = TWHEEL_TIMER_ABSTIME;
		/* Some deadlines in the past: due at once. */
		s->value = rnd(&w->rnd, 10) ? now + d :
			   now - rnd(&w->rnd, now < NSEC_PER_SEC ? now : NSEC_PER_SEC);
	} else {
		s->value = d;
	}
	*lo_off = s->value;
}

static void op_schedule_oneshot(struct worker *w)
{
	struct twheel_timer_spec s;
	u64 off, t0, t1, id;
	bool abs;
	int r;

	fill_oneshot(w, &s, &off, &abs);
	t0 = now_ns();
	r = twheel_schedule(&w->tw, s.value, s.period, s.flags, s.user_data, &id);
	ring_sys(w);
	t1 = now_ns();
	if (r) {
		err("worker %d: SCHEDULE: %s", w->idx, strerror(-r));
		return;
	}
	atomic_fetch_add(&st.schedules, 1);
	struct tmr *t = tmr_new(w, id);

	t->kind = ONESHOT;
	win_push(w, id, t, abs ? off : t0 + off, abs ? off : t1 + off,
		 s.user_data);
}

static void op_schedule_periodic(struct worker *w)
{
	unsigned int flags = TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC;
	u64 ud = rnd_next(&w->rnd) & ~(1ULL << 63), value, period, id;
	bool delay = rnd(&w->rnd, 2);
	int r;

	if (delay)
		flags |= TWHEEL_TIMER_FIXED_DELAY;
	value = now_ns() + rnd(&w->rnd, 50 * NSEC_PER_MSEC);
	period = NSEC_PER_MSEC / 2 + rnd(&w->rnd, 50 * NSEC_PER_MSEC);
	r = twheel_schedule(&w->tw, value, period, flags, ud, &id);
	ring_sys(w);
	if (r) {
		err("worker %d: SCHEDULE periodic: %s", w->idx, strerror(-r));
		return;
	}
	atomic_fetch_add(&st.schedules, 1);
	struct tmr *t = tmr_new(w, id);

	t->kind = delay ? DELAY : RATE;
	t->first = value;
	t->period = period;
	t->user_data = ud;
	w->nperiodic++;
}

static u64 pick_live(struct worker *w, bool oneshot_only)
{
	unsigned int tries;
	u64 id;

	for (tries = 0; tries < 8 && w->nlive; tries++) {
		id = w->live[rnd(&w->rnd, w->nlive)];
		if (!oneshot_only || tmr_of(w, id)->kind == ONESHOT)
			return id;
	}
	return 0;
}

/* Apply the result @r of MODIFY of one-shot @id to the model. */
static void modify_done(struct worker *w, u64 id, long r, u64 lo, u64 hi,
			u64 ud)
{
	struct tmr *t = tmr_of(w, id);

	if (r < 0) {
		err("worker %d: MODIFY id %llu: %s", w->idx,
		    (unsigned long long)id, strerror((int)-r));
		return;
	}
	atomic_fetch_add(&st.modifies, 1);
	if (r == 1) {
		atomic_fetch_add(&st.moved, 1);
		if (!t->outstanding)
			err("worker %d: MODIFY id %llu returned 1, nothing pending",
			    w->idx, (unsigned long long)id);
		else if (!t->overflow)
			win_replace_last(t, lo, hi, ud);
		return;
	}
	if (r != 0)
		err("worker %d: MODIFY returned %ld", w->idx, r);
	win_push(w, id, t, lo, hi, ud);
}

static void op_modify(struct worker *w)
{
	struct twheel_timer_spec s;
	u64 id = pick_live(w, true), off, t0, t1;
	bool abs;
	long r;

	if (!id)
		return;
	fill_oneshot(w, &s, &off, &abs);
	t0 = now_ns();
	r = twheel_modify(&w->tw, id, s.value, s.period, s.flags, s.user_data);
	ring_sys(w);
	t1 = now_ns();
	modify_done(w, id, r, abs ? off : t0 + off, abs ? off : t1 + off,
		    s.user_data);
}

static void cancel_done(struct worker *w, u64 id, long r, u64 t1)
{
	struct tmr *t = tmr_of(w, id);

	if (r < 0) {
		err("worker %d: CANCEL id %llu: %s", w->idx,
		    (unsigned long long)id, strerror((int)-r));
		return;
	}
	atomic_fetch_add(&st.cancels, 1);
	if (t->kind == ONESHOT) {
		if (r == 1) {
			if (t->outstanding < 1)
				err("worker %d: CANCEL id %llu returned 1, nothing pending",
				    w->idx, (unsigned long long)id);
			else
				win_pop_last(t);
		} else if (t->outstanding < 1) {
			err("worker %d: CANCEL id %llu returned 0, no expiry to read",
			    w->idx, (unsigned long long)id);
		}
	} else {
		if (r != 1)
			err("worker %d: CANCEL of periodic id %llu returned %ld",
			    w->idx, (unsigned long long)id, r);
		t->cancelled = true;
		t->cancel_ns = t1;
	}
	tmr_unlive(w, id);
}

static void op_cancel(struct worker *w)
{
	u64 id = pick_live(w, false);
	int r;

	if (!id)
		return;
	r = twheel_cancel(&w->tw, id);
	ring_sys(w);
	cancel_done(w, id, r, now_ns());	/* the time after the cancel */
}

/*
 * Up to 8 ops, one TWHEEL_IOC_BATCH (twheel_submit() splits only past
 * TWHEEL_BATCH_MAX). Each op's result is set to 0x7777 once added, so the
 * ops after a failure can be checked untouched.
 */
static void op_batch(struct worker *w)
{
	struct twheel_sqbuf *sq = &w->sq;
	struct twheel_op *ops = sq->ops;
	u64 off[8] = { 0 }, ids[8] = { 0 }, t0, t1;
	bool abs[8] = { false };
	unsigned int n = 1 + (unsigned int)rnd(&w->rnd, 8), i, j;
	struct twheel_timer_spec sp;
	long r;

	twheel_sqbuf_reset(sq);
	for (i = 0; i < n; i++) {
		u64 id = pick_live(w, false);
		bool dup = false;

		for (j = 0; j < i; j++)
			dup |= ids[j] == id && id;
		ids[i] = dup ? 0 : id;
		if (!ids[i] || !rnd(&w->rnd, 2)) {
			fill_oneshot(w, &sp, &off[i], &abs[i]);
			twheel_sqbuf_schedule(sq, sp.value, 0, sp.flags, sp.user_data);
			ids[i] = 0;
		} else if (tmr_of(w, id)->kind == ONESHOT && rnd(&w->rnd, 2)) {
			fill_oneshot(w, &sp, &off[i], &abs[i]);
			twheel_sqbuf_modify(sq, id, sp.value, 0, sp.flags, sp.user_data);
		} else {
			twheel_sqbuf_cancel(sq, id);
		}
		ops[i].result = 0x7777;
	}
	t0 = now_ns();
	r = twheel_submit(&w->tw, sq);
	ring_sys(w);
	t1 = now_ns();
	atomic_fetch_add(&st.batches, 1);
	if (r != (long)n)
		err("worker %d: BATCH of %u returned %ld (first result %d)",
		    w->idx, n, r, ops[0].result);
	if (r < 0)
		return;
	for (i = 0; i < (unsigned int)r && i < n; i++) {
		struct twheel_timer_spec *s = &ops[i].spec;
		u64 lo = abs[i] ? off[i] : t0 + off[i];
		u64 hi = abs[i] ? off[i] : t1 + off[i];

		switch (ops[i].op) {
		case TWHEEL_OP_SCHEDULE: {
			struct tmr *t;

			if (ops[i].result != 0 || !s->id) {
				err("worker %d: batch SCHEDULE result %d id %llu",
				    w->idx, ops[i].result,
				    (unsigned long long)s->id);
				continue;
			}
			atomic_fetch_add(&st.schedules, 1);
			t = tmr_new(w, s->id);
			t->kind = ONESHOT;
			win_push(w, s->id, t, lo, hi, s->user_data);
			break;
		}
		case TWHEEL_OP_MODIFY:
			modify_done(w, ids[i], ops[i].result, lo, hi,
				    s->user_data);
			break;
		default:
			cancel_done(w, ids[i], ops[i].result, t1);
			break;
		}
	}
	for (; i < n; i++)
		if (ops[i].result != 0x7777 && i != (unsigned int)r)
			err("worker %d: batch op %u after the failure was touched",
			    w->idx, i);
}

static void op_info(struct worker *w)
{
	struct twheel_info info;
	unsigned int rlo, rhi;
	long r;

	memset(&info, 0xa5, sizeof(info));
	r = twheel_get_info(&w->tw, &info);
	ring_sys(w);
	atomic_fetch_add(&st.infos, 1);
	if (r) {
		err("worker %d: INFO: %s", w->idx, strerror((int)-r));
		return;
	}
	/* The user and device counts move with the other workers: no order. */
	if ((info.flags & ~(TWHEEL_INFO_USER_CAP_EXEMPT | TWHEEL_INFO_MAP |
			    TWHEEL_INFO_CLOCKS | TWHEEL_INFO_SHORT_OPS |
			    TWHEEL_INFO_SLACK | TWHEEL_INFO_RING |
			    TWHEEL_INFO_ALARM | TWHEEL_INFO_WAKE_ALARM |
			    TWHEEL_INFO_RESTORE)) ||
	    !info.granularity_ns ||
	    !info.max_user_timers || !info.max_total_timers)
		err("worker %d: INFO: unknown flags, or no granularity or caps",
		    w->idx);
	/*
	 * Dead ids whose expiries are unread still hold a slot; so does each
	 * open ring slot, and each ring arming that may have an unread event.
	 */
	ring_info_bounds(w, &rlo, &rhi);
	if (info.timers < w->nlive + rlo ||
	    info.timers > w->nlive + w->norphans + rhi)
		err("worker %d: INFO: %u timers, model: %u live + up to %u orphans, ring %u..%u",
		    w->idx, info.timers, w->nlive, w->norphans, rlo, rhi);
	if (info.queued > info.timers)
		err("worker %d: INFO: %u queued > %u timers", w->idx,
		    info.queued, info.timers);
}

/* A new file in w->tw; w->tw.fd is -1 if it could not be opened. */
static void open_fd(struct worker *w)
{
	int r = twheel_open(&w->tw, 0);

	if (r)
		err("worker %d: open %s: %s", w->idx, TWHEEL_DEVICE, strerror(-r));
	else
		ring_map(w);
}

/* Forget the model of the current file and start a new one. */
static void reset_model(struct worker *w)
{
	free(w->t);
	free(w->live);
	free(w->hkey);
	free(w->hval);
	w->t = NULL;
	w->live = NULL;
	w->hkey = NULL;
	w->hval = NULL;
	w->cap = 0;
	w->nt = 0;
	w->hsize = 0;
	w->nlive = 0;
	w->nperiodic = 0;
	w->norphans = 0;
}

static void op_close_reopen(struct worker *w)
{
	/* Everything in flight dies with the file: pending, firing, queued. */
	if (rnd(&w->rnd, 2)) {
		int d = dup(w->tw.fd), r;

		/* A dup keeps the file: the model stays valid. */
		if (d >= 0) {
			twheel_close(&w->tw);
			r = twheel_open_fd(&w->tw, d, 0);
			if (r) {
				err("worker %d: twheel_open_fd: %s", w->idx, strerror(-r));
				close(d);
				ring_free(w);
				reset_model(w);
			}
			return;
		}
	}
	/* The mapping holds the file too: unmap it, or it stays open. */
	ring_free(w);
	twheel_close(&w->tw);
	atomic_fetch_add(&st.closes, 1);
	reset_model(w);
	open_fd(w);
}

static void op_eventfd(struct worker *w)
{
	int efd = rnd(&w->rnd, 2) ? w->efd : -1, r;
	uint64_t v;

	r = twheel_set_eventfd(&w->tw, efd);
	ring_sys(w);
	if (r)
		err("worker %d: SET_EVENTFD %d: %s", w->idx, efd, strerror(-r));
	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		err("worker %d: eventfd read: %s", w->idx, strerror(errno));
}

static void op_poll(struct worker *w)
{
	struct pollfd p = { .fd = w->tw.fd, .events = POLLIN };
	int r = poll(&p, 1, (int)rnd(&w->rnd, 3));

	ring_sys(w);
	if (r < 0 && errno != EINTR)
		err("worker %d: poll: %s", w->idx, strerror(errno));
	else if (r == 1 && (p.revents & POLLIN))
		read_events(w, 16);
}

static void pin(struct worker *w)
{
	cpu_set_t set;

	if (w->cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	/* Fails while the CPU is offline; hotplug may also have moved us. */
	sched_setaffinity(0, sizeof(set), &set);
}

static void step(struct worker *w)
{
	u64 r = rnd(&w->rnd, 1000);

	if (w->tw.fd < 0) {
		open_fd(w);
		return;
	}
	if (w->r && rnd(&w->rnd, 100) < 20) {
		ring_step(w);
		return;
	}
	if (w->nlive > LIVE_HIGH && r < 300)
		r = 400;	/* too many: cancel instead */
	if (r < 300)
		op_schedule_oneshot(w);
	else if (r < 330)
		w->nperiodic < PERIODIC_MAX ? op_schedule_periodic(w) :
					      op_cancel(w);
	else if (r < 480)
		op_modify(w);
	else if (r < 640)
		op_cancel(w);
	else if (r < 720)
		op_batch(w);
	else if (r < 900)
		read_events(w, 1 + (unsigned int)rnd(&w->rnd, 16));
	else if (r < 960)
		op_poll(w);
	else if (r < 985)
		op_info(w);
	else if (r < 995)
		op_eventfd(w);
	else if (r < 997)
		op_close_reopen(w);
	else
		usleep(rnd(&w->rnd, 3000));
}

/* The end: cancel everything, read every expiry, check nothing is left. */
static void finish(struct worker *w)
{
	struct twheel_info info = { 0 };
	u64 deadline = now_ns() + 60 * NSEC_PER_SEC, id;
	struct pollfd p;

	int r;

	if (w->tw.fd < 0)
		return;
	while (w->nlive) {
		id = w->live[w->nlive - 1];
		r = twheel_cancel(&w->tw, id);
		ring_sys(w);
		cancel_done(w, id, r, now_ns());
	}
	ring_finish_cancel(w);
	for (;;) {
		r = twheel_get_info(&w->tw, &info);
		ring_sys(w);
		if (r) {
			err("worker %d: INFO: %s", w->idx, strerror(-r));
			break;
		}
		if (!info.timers && !info.queued)
			break;
		if (now_ns() > deadline) {
			err("worker %d: 60 s after cancelling everything: %u timers, %u events left",
			    w->idx, info.timers, info.queued);
			break;
		}
		p = (struct pollfd){ .fd = w->tw.fd, .events = POLLIN };
		r = poll(&p, 1, 100);
		ring_sys(w);
		if (r == 1)
			read_events(w, 16);
	}
	ring_finish_check(w);
	for (size_t h = 1; h < w->nt; h++) {
		struct tmr *t = &w->t[h];

		id = t->id;
		if (!t->used)
			continue;
		if (t->kind == ONESHOT && t->outstanding) {
			atomic_fetch_add(&st.lost, (unsigned long long)t->outstanding);
			err("worker %d: id %llu: %lld armings neither fired nor cancelled",
			    w->idx, (unsigned long long)id,
			    (long long)t->outstanding);
		}
		if (t->kind != ONESHOT && t->cancelled &&
		    t->total > (t->cancel_ns - t->first) / t->period + 1 &&
		    t->cancel_ns >= t->first)
			err("worker %d: id %llu: %llu expiries+overruns, more than the periods until the cancel",
			    w->idx, (unsigned long long)id,
			    (unsigned long long)t->total);
	}
	ring_free(w);
	twheel_close(&w->tw);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0 || twheel_sqbuf_init(&w->sq, 8)) {
		err("eventfd or twheel_sqbuf_init failed");
		return NULL;
	}
	open_fd(w);
	while (!atomic_load(&g_stop) && now_ns() < g_end_ns) {
		step(w);
		if (!(++w->ops % 128))
			pin(w);
	}
	atomic_fetch_add(&st.ops, w->ops);
	finish(w);
	close(w->efd);
	twheel_sqbuf_free(&w->sq);
	reset_model(w);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Chaos: close a file while another thread reads it; fork with it      */
/* ------------------------------------------------------------------ */

/*
 * Raw system calls here: the file itself is what is tortured (a private fd
 * number from dup2(), a blocking read() racing close(), a child arming
 * timers on the shared file), not the library's handle around it.
 */

struct chaos_reader {
	int fd;
	pthread_t thread;
};

static void *chaos_reader_main(void *arg)
{
	struct chaos_reader *cr = arg;
	struct twheel_event ev[8];
	ssize_t r;
	int i;

	for (;;) {
		/* Blocking: the file may be closed under us meanwhile. */
		r = read(cr->fd, ev, sizeof(ev));
		if (r < 0) {
			if (errno == EBADF)
				return NULL;
			if (errno != EINTR && errno != EAGAIN)
				err("chaos: read: %s", strerror(errno));
			continue;
		}
		if (r == 0 || r % sizeof(ev[0])) {
			err("chaos: read returned %zd", r);
			return NULL;
		}
		for (i = 0; i < r / (ssize_t)sizeof(ev[0]); i++) {
			atomic_fetch_add(&st.chaos_events, 1);
			if (!ev[i].count || ev[i].fired < ev[i].deadline)
				err("chaos: bad event: id %llu count %llu fired %llu deadline %llu",
				    (unsigned long long)ev[i].id,
				    (unsigned long long)ev[i].count,
				    (unsigned long long)ev[i].fired,
				    (unsigned long long)ev[i].deadline);
		}
	}
}

/* TWHEEL_RING_MAP_BYTES rounded up to the page size. */
static size_t ring_map_len(void)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	return (TWHEEL_RING_MAP_BYTES + (size_t)page - 1) / (size_t)page *
	       (size_t)page;
}

/* 32 short ring ARMs (and some CANCELs) on @fd's ring, published. */
static void chaos_ring_ops(int fd, struct twheel_ring_hdr *h, u64 *seed)
{
	struct twheel_ring_op *sq = (void *)((char *)h + TWHEEL_RING_SQ_OFF);
	u32 tail = __atomic_load_n(&h->sq_tail, __ATOMIC_RELAXED), i;

	/* Another writer may have published meanwhile: no room is no op. */
	if (tail - __atomic_load_n(&h->sq_head, __ATOMIC_ACQUIRE) >
	    TWHEEL_RING_ENTRIES - 32)
		return;
	for (i = 0; i < 32; i++)
		sq[tail++ % TWHEEL_RING_ENTRIES] = (struct twheel_ring_op){
			.op = rnd(seed, 4) ? TWHEEL_RING_ARM : TWHEEL_RING_CANCEL,
			.slot = (u32)rnd(seed, 32),
			.value = 0,
		};
	for (i = 0; i < 32; i++) {
		struct twheel_ring_op *o = &sq[(tail - 32 + i) % TWHEEL_RING_ENTRIES];

		if (o->op == TWHEEL_RING_ARM)
			o->value = rnd(seed, 20 * NSEC_PER_MSEC);
	}
	__atomic_store_n(&h->sq_tail, tail, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & TWHEEL_RING_NEED_WAKEUP)
		ioctl(fd, TWHEEL_IOC_RING_ENTER);
}

/* The ring of a chaos file with ops in it, or NULL. */
static struct twheel_ring_hdr *chaos_ring(int fd, u64 *seed)
{
	void *p = mmap(NULL, ring_map_len(), PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, (off_t)TWHEEL_RING_OFFSET);

	if (p == MAP_FAILED) {
		if (errno != EDQUOT && errno != EAGAIN)
			err("chaos: mmap of the ring: %s", strerror(errno));
		return NULL;
	}
	chaos_ring_ops(fd, p, seed);
	return p;
}

static void *chaos_main(void *arg)
{
	u64 seed = *(u64 *)arg;
	unsigned int round = 0;

	while (!atomic_load(&g_stop) && now_ns() < g_end_ns) {
		struct chaos_reader cr = { .fd = CHAOS_FD_BASE + (int)(round++ % 4) };
		struct twheel_timer_spec s = {
			.clockid = TWHEEL_CLOCK_MONOTONIC,
			.flags = TWHEEL_TIMER_PERIODIC,
			.period = NSEC_PER_MSEC,
		};
		int fd = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC), i;
		struct twheel_ring_hdr *ring;
		pid_t pid;

		if (fd < 0) {
			err("chaos: open: %s", strerror(errno));
			return NULL;
		}
		/* A private number nobody else's open() can get. */
		if (dup2(fd, cr.fd) < 0) {
			err("chaos: dup2: %s", strerror(errno));
			close(fd);
			return NULL;
		}
		close(fd);
		for (i = 0; i < 3; i++)
			if (ioctl(cr.fd, TWHEEL_IOC_SCHEDULE, &s) < 0)
				err("chaos: SCHEDULE: %s", strerror(errno));
		s.flags = 0;
		s.period = 0;
		for (i = 0; i < 64; i++) {
			s.value = rnd(&seed, 20 * NSEC_PER_MSEC);
			if (ioctl(cr.fd, TWHEEL_IOC_SCHEDULE, &s) < 0)
				err("chaos: SCHEDULE: %s", strerror(errno));
		}
		/* Half the files: timers through a ring, mapped until the close. */
		ring = rnd(&seed, 2) ? chaos_ring(cr.fd, &seed) : NULL;
		/* A child shares the file, arms timers on it and exits. */
		if (!rnd(&seed, 4)) {
			pid = fork();
			if (pid == 0) {
				s.value = 0;
				for (i = 0; i < 16; i++)
					ioctl(cr.fd, TWHEEL_IOC_SCHEDULE, &s);
				/* And writes the shared ring (MAP_SHARED stays shared). */
				if (ring)
					chaos_ring_ops(cr.fd, ring, &seed);
				_exit(0);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
		}
		if (pthread_create(&cr.thread, NULL, chaos_reader_main, &cr)) {
			err("chaos: pthread_create failed");
			close(cr.fd);
			return NULL;
		}
		usleep(rnd(&seed, 20000));
		/* Close under the reader: its read() holds the file until it returns. */
		close(cr.fd);
		/* The last reference may be the ring's mapping: release under a drain. */
		if (ring)
			munmap(ring, ring_map_len());
		pthread_join(cr.thread, NULL);
		atomic_fetch_add(&st.chaos_files, 1);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* CPU hotplug through sysfs                                           */
/* ------------------------------------------------------------------ */

static int cpu_set_online(int cpu, int on)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, on ? "1" : "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static int cpu_is_online(int cpu)
{
	char path[64], c = '1';
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = '?';
	close(fd);
	return c == '1';
}

struct onoff_arg {
	int ncpus;
	unsigned int ms;
	u64 seed;
};

static void *onoff_main(void *arg)
{
	struct onoff_arg *a = arg;
	int cpu, on;

	while (!atomic_load(&g_stop) && now_ns() < g_end_ns) {
		cpu = 1 + (int)rnd(&a->seed, (u64)a->ncpus - 1);
		on = cpu_is_online(cpu);
		if (on >= 0) {
			if (cpu_set_online(cpu, !on))
				atomic_fetch_add(&st.onoff_failed, 1);
			else
				atomic_fetch_add(on ? &st.offline : &st.online, 1);
		}
		usleep((useconds_t)(a->ms / 2 + rnd(&a->seed, a->ms + 1)) * 1000);
	}
	for (cpu = 1; cpu < a->ncpus; cpu++)
		if (cpu_is_online(cpu) == 0) {
			if (cpu_set_online(cpu, 1))
				err("cannot bring cpu %d back online", cpu);
			else
				atomic_fetch_add(&st.online, 1);
		}
	return NULL;
}

/* ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: twheel_torture [-t SECONDS] [-j THREADS] [-o ONOFF_MS] [-s SEED]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int secs = 30, onoff = 0, i;
	int nthreads = 0, ncpus, opt;
	u64 seed = 0, t0;
	pthread_t chaos, onoff_thread;
	struct onoff_arg oa;
	struct worker *w;

	while ((opt = getopt(argc, argv, "t:j:o:s:")) != -1) {
		switch (opt) {
		case 't': secs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'j': nthreads = atoi(optarg); break;
		case 'o': onoff = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus < 1)
		ncpus = 1;
	if (nthreads <= 0)
		nthreads = ncpus;
	if (!seed)
		seed = now_ns() ^ ((u64)getpid() << 32);
	seed |= 1;
	printf("# twheel_torture: %u s, %d workers, %d cpus, hotplug %s, seed %llu\n",
	       secs, nthreads, ncpus, onoff ? "on" : "off",
	       (unsigned long long)seed);

	w = calloc((size_t)nthreads, sizeof(*w));
	if (!w)
		return 2;
	t0 = now_ns();
	g_end_ns = t0 + (u64)secs * NSEC_PER_SEC;
	for (i = 0; i < (unsigned int)nthreads; i++) {
		w[i].idx = (int)i;
		w[i].cpu = (int)i % ncpus;
		w[i].tw.fd = -1;
		w[i].rnd = (seed + i * 0x9E3779B97F4A7C15ULL) | 1;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			perror("pthread_create");
			return 2;
		}
	}
	if (pthread_create(&chaos, NULL, chaos_main, &seed)) {
		perror("pthread_create");
		return 2;
	}
	oa = (struct onoff_arg){ .ncpus = ncpus, .ms = onoff, .seed = seed ^ 0xf00d };
	if (onoff && ncpus > 1 &&
	    pthread_create(&onoff_thread, NULL, onoff_main, &oa)) {
		perror("pthread_create");
		return 2;
	}
	for (i = 0; i < (unsigned int)nthreads; i++)
		pthread_join(w[i].thread, NULL);
	pthread_join(chaos, NULL);
	if (onoff && ncpus > 1)
		pthread_join(onoff_thread, NULL);

	printf("# %llu ops in %.1f s: %llu schedules, %llu modifies (%llu moved), %llu cancels, %llu batches, %llu infos\n",
	       (unsigned long long)st.ops, (double)(now_ns() - t0) / 1e9,
	       (unsigned long long)st.schedules, (unsigned long long)st.modifies,
	       (unsigned long long)st.moved, (unsigned long long)st.cancels,
	       (unsigned long long)st.batches, (unsigned long long)st.infos);
	printf("# %llu reads, %llu events: %llu one-shot and %llu periodic expiries; %llu closes with timers in flight, %llu files closed under a reader (%llu events)\n",
	       (unsigned long long)st.reads, (unsigned long long)st.events,
	       (unsigned long long)st.oneshot_expiries,
	       (unsigned long long)st.periodic_expiries,
	       (unsigned long long)st.closes, (unsigned long long)st.chaos_files,
	       (unsigned long long)st.chaos_events);
	printf("# cpu hotplug: %u offline, %u online, %u refused\n",
	       st.offline, st.online, st.onoff_failed);
	printf("# ring: %llu ops (%llu arms, %llu cancels, %llu that must fail) in %llu publishes, %llu doorbells on NEED_WAKEUP, %llu spurious RING_ENTERs, %llu full rings (%llu entered full); %llu rings refused\n",
	       (unsigned long long)st.ring_ops, (unsigned long long)st.ring_arms,
	       (unsigned long long)st.ring_cancels, (unsigned long long)st.ring_bad,
	       (unsigned long long)st.ring_pubs,
	       (unsigned long long)st.ring_doorbells,
	       (unsigned long long)st.ring_spurious,
	       (unsigned long long)st.ring_fulls,
	       (unsigned long long)st.ring_full_enters,
	       (unsigned long long)st.ring_refused);
	printf("# ring: %llu expiries fired, %llu armings cancelled or superseded unfired, %llu failed ops (completions), %llu ioctls on ring timers, %llu ambiguous events, %llu armings closed with their file; poller took %llu quiet publishes within %llu ms, %llu later or not (max %.3f ms)\n",
	       (unsigned long long)st.ring_fired,
	       (unsigned long long)st.ring_cancelled,
	       (unsigned long long)st.ring_failed,
	       (unsigned long long)st.ring_ioctls,
	       (unsigned long long)st.ring_ambiguous,
	       (unsigned long long)st.ring_closed,
	       (unsigned long long)st.ring_quiet,
	       (unsigned long long)(RING_QUIET_NS / NSEC_PER_MSEC),
	       (unsigned long long)st.ring_quiet_late,
	       (double)st.ring_quiet_max_ns / 1e6);
	printf("# early %llu, lost %llu, double %llu, misreported deadlines %llu\n",
	       (unsigned long long)st.early, (unsigned long long)st.lost,
	       (unsigned long long)st.doubled,
	       (unsigned long long)st.misreported);
	if (atomic_load(&g_errors)) {
		printf("twheel_torture: FAILED: %d errors (seed %llu)\n",
		       atomic_load(&g_errors), (unsigned long long)seed);
		return 1;
	}
	printf("twheel_torture: ok: %llu ops, %llu expiries, %u cpu offline/online, ring: %llu ops, %llu fired, %llu cancelled, %llu failed\n",
	       (unsigned long long)st.ops,
	       (unsigned long long)(st.oneshot_expiries + st.periodic_expiries),
	       st.offline + st.online, (unsigned long long)st.ring_ops,
	       (unsigned long long)st.ring_fired,
	       (unsigned long long)st.ring_cancelled,
	       (unsigned long long)st.ring_failed);
	return 0;
}
