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
#include <sys/wait.h>

#include "tw_util.h"

#define MAX_WINDOWS	8		/* unresolved armings tracked per id */
#define LIVE_HIGH	1500		/* above this, a worker cancels more */
#define PERIODIC_MAX	6		/* live periodic timers per worker */
#define MAX_ERRORS	30		/* error lines printed */
#define CHAOS_FD_BASE	900		/* the chaos reader's private fd numbers */

typedef __s64 s64;

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

struct worker {
	int idx, cpu, efd;
	struct twheel tw;		/* tw.fd -1: no file */
	struct twheel_sqbuf sq;		/* op_batch()'s */
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

static void check_event(struct worker *w, const struct twheel_event *ev)
{
	struct tmr *t = tmr_get(w, ev->id);

	atomic_fetch_add(&st.events, 1);
	if (ev->pad)
		err("worker %d: event pad %u", w->idx, ev->pad);
	if (!t) {
		err("worker %d: event of unknown id %llu", w->idx,
		    (unsigned long long)ev->id);
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
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static void fill_oneshot(struct worker *w, struct twheel_timer_spec *s,
			 u64 *lo_off, bool *abs)
{
	u64 d = rnd_delay(&w->rnd), now;

	memset(s, 0, sizeof(*s));
	s->clockid = TWHEEL_CLOCK_MONOTONIC;
	s->user_data = rnd_next(&w->rnd);
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
	u64 ud = rnd_next(&w->rnd), value, period, id;
	bool delay = rnd(&w->rnd, 2);
	int r;

	if (delay)
		flags |= TWHEEL_TIMER_FIXED_DELAY;
	value = now_ns() + rnd(&w->rnd, 50 * NSEC_PER_MSEC);
	period = NSEC_PER_MSEC / 2 + rnd(&w->rnd, 50 * NSEC_PER_MSEC);
	r = twheel_schedule(&w->tw, value, period, flags, ud, &id);
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
	long r;

	memset(&info, 0xa5, sizeof(info));
	r = twheel_get_info(&w->tw, &info);
	atomic_fetch_add(&st.infos, 1);
	if (r) {
		err("worker %d: INFO: %s", w->idx, strerror((int)-r));
		return;
	}
	/* The user and device counts move with the other workers: no order. */
	if ((info.flags & ~(TWHEEL_INFO_USER_CAP_EXEMPT | TWHEEL_INFO_MAP |
			    TWHEEL_INFO_CLOCKS | TWHEEL_INFO_SHORT_OPS |
			    TWHEEL_INFO_SLACK | TWHEEL_INFO_RING)) ||
	    !info.granularity_ns ||
	    !info.max_user_timers || !info.max_total_timers)
		err("worker %d: INFO: unknown flags, or no granularity or caps",
		    w->idx);
	/* Dead ids whose expiries are unread still hold a slot. */
	if (info.timers < w->nlive || info.timers > w->nlive + w->norphans)
		err("worker %d: INFO: %u timers, model: %u live + up to %u orphans",
		    w->idx, info.timers, w->nlive, w->norphans);
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
				reset_model(w);
			}
			return;
		}
	}
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
	if (r)
		err("worker %d: SET_EVENTFD %d: %s", w->idx, efd, strerror(-r));
	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		err("worker %d: eventfd read: %s", w->idx, strerror(errno));
}

static void op_poll(struct worker *w)
{
	struct pollfd p = { .fd = w->tw.fd, .events = POLLIN };
	int r = poll(&p, 1, (int)rnd(&w->rnd, 3));

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
		cancel_done(w, id, r, now_ns());
	}
	for (;;) {
		r = twheel_get_info(&w->tw, &info);
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
		if (poll(&p, 1, 100) == 1)
			read_events(w, 16);
	}
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
		/* A child shares the file, arms timers on it and exits. */
		if (!rnd(&seed, 4)) {
			pid = fork();
			if (pid == 0) {
				s.value = 0;
				for (i = 0; i < 16; i++)
					ioctl(cr.fd, TWHEEL_IOC_SCHEDULE, &s);
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
	printf("# early %llu, lost %llu, double %llu, misreported deadlines %llu\n",
	       (unsigned long long)st.early, (unsigned long long)st.lost,
	       (unsigned long long)st.doubled,
	       (unsigned long long)st.misreported);
	if (atomic_load(&g_errors)) {
		printf("twheel_torture: FAILED: %d errors (seed %llu)\n",
		       atomic_load(&g_errors), (unsigned long long)seed);
		return 1;
	}
	printf("twheel_torture: ok: %llu ops, %llu expiries, %u cpu offline/online\n",
	       (unsigned long long)st.ops,
	       (unsigned long long)(st.oneshot_expiries + st.periodic_expiries),
	       st.offline + st.online);
	return 0;
}
