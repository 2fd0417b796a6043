// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_fuzz: model-checked random operations on /dev/twheel.
 *
 * Usage: twheel_fuzz [-n OPS] [-t SECONDS] [-s SEED] [-f FDS] [-v]
 *   -n  stop after OPS operations (default 20000)
 *   -t  stop after SECONDS (default 60), whichever comes first
 *   -s  seed (default: from the clock); the same seed gives the same
 *       operations, so a failure is replayed with -s and the op number
 *   -f  open files used at once (default 4)
 *   -v  print every operation
 *
 * Random, mostly valid sequences of every call on several files: SCHEDULE,
 * MODIFY, CANCEL and BATCH with valid specs and with each kind of invalid
 * field, bad and read-only pointers; SET_EVENTFD with eventfds, other
 * files, closed and negative fds; INFO; read() with small, large, faulting
 * and partly faulting buffers; poll(); write(), lseek(), mmap() (sizes,
 * private, read-only) and unknown ioctls; close() and re-open (with a
 * random max_timers, the module parameter being sampled at open); ops
 * through the submission ring (op_ring(): arms, cancels, malformed ops,
 * a lying tail, ops on one slot folded in a drain); fork()
 * with a child arming timers on
 * the shared file. Every result is checked against a model of what that
 * call must return, following uapi/twheel.h: the error and its precedence
 * (EFAULT, then EINVAL, then ERANGE, then ENOSPC/ENOENT), the id (ids of a
 * file count up from 1), MODIFY's and CANCEL's 0 or 1, batch results and
 * where a batch stopped, INFO's counts, each event's id, user data, count,
 * flags, deadline and firing time, the eventfd's counter.
 *
 * The operations are raw system calls, not libtwheel: what is fuzzed is
 * the ABI itself, bad structs and pointers included, and the model checks
 * each field the kernel writes. Only the start-up read of the tick uses
 * the library.
 *
 * To keep every result predictable, a timer either never fires during the
 * run (deadlines and periods of an hour or more) or fires at once (a zero
 * delay, or a deadline in the past), and then the fuzzer waits (at most
 * 10 s) for its event before going on.
 *
 * Ends with "twheel_fuzz: ok: N ops ..." or "twheel_fuzz: FAILED at op N
 * (seed S): ..."; exit status 0 iff no check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
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

#define HOUR		(3600ULL * NSEC_PER_SEC)
#define S64MAX		((u64)INT64_MAX)
#define MAX_FDS		8
#define MAX_IDS		4096		/* per file: the model's table */
#define EV		sizeof(struct twheel_event)
#define MAX_TIMERS_PARAM "/sys/module/twheel/parameters/max_timers"
#define RING_SLOTS	6		/* ring slots used: ops on them meet */

static u64 g_seed, g_rnd, g_op;
static bool g_verbose;
static unsigned long g_hist[32];
static const char *const g_names[] = {
	"schedule", "schedule-garbage", "modify", "modify-garbage", "cancel",
	"batch", "set_eventfd", "info", "read", "poll", "close", "fork",
	"bad-pointer", "readonly-spec", "other-syscalls", "eventfd-read",
	"ring",
};
static char g_old_max[32];
static u64 g_granularity;

static u64 rnd64(void)
{
	return xorshift64s(&g_rnd);
}

static u64 rnd(u64 n)
{
	return n ? rnd64() % n : 0;
}

static bool chance(unsigned int pct)
{
	return rnd(100) < pct;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("twheel_fuzz: FAILED at op %llu (seed %llu): ",
	       (unsigned long long)g_op, (unsigned long long)g_seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (g_old_max[0]) {
		int fd = open(MAX_TIMERS_PARAM, O_WRONLY);

		if (fd >= 0) {
			if (write(fd, g_old_max, strlen(g_old_max)) < 0)
				perror("restoring max_timers");
			close(fd);
		}
	}
	exit(1);
}

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!g_verbose)
		return;
	printf("# op %llu: ", (unsigned long long)g_op);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static const char *rs(long r)
{
	static char buf[4][48];
	static int i;
	char *s = buf[i++ & 3];

	if (r < 0)
		snprintf(s, sizeof(buf[0]), "-%s", strerrorname_np((int)-r) ?: "?");
	else
		snprintf(s, sizeof(buf[0]), "%ld", r);
	return s;
}

#define EXPECT(got, want, what, ...)					\
	do {								\
		long g_ = (got), w_ = (want);				\
		if (g_ != w_)						\
			die(what ": got %s, expected %s", ##__VA_ARGS__,	\
			    rs(g_), rs(w_));				\
	} while (0)

/* ------------------------------------------------------------------ */
/* The model                                                           */
/* ------------------------------------------------------------------ */

enum mode { ONESHOT, RATE, DELAY };

struct mt {
	bool exists;		/* the kernel has the object: live, or orphan */
	bool live;		/* its id is valid */
	bool pending;		/* armed: will fire again (never, here) */
	enum mode mode;
	u64 user_data;
	/* the queued record */
	bool queued;
	u64 kid;		/* the kernel's id */
	u64 ev_count, ev_user_data, dl_lo, dl_hi;
	u32 ev_flags;
};

/* The kernel's slot table (fd_table.c): chunks of a page of 16-byte slots. */
#define CHUNK_SLOTS	256
#define MAX_SLOTS	(MAX_IDS + CHUNK_SLOTS)

struct mfd {
	int fd;			/* -1: closed */
	u32 max_timers;
	u64 next_id;		/* the model's next handle: index into t[] */
	struct mt t[MAX_IDS];
	u64 queue[MAX_IDS];	/* handles with a queued record, oldest first */
	u32 gen[MAX_SLOTS];	/* the slot table: generations, */
	u32 next_free[MAX_SLOTS]; /* free list links (slot + 1), */
	u32 free_head, nslots, nfree; /* head (slot + 1), sizes */
	unsigned int nq;
	int efd;		/* the registered eventfd, or -1 */
	u64 efd_count;		/* its expected counter */
	unsigned int nexists;
	/* the submission ring, once mapped (op_ring()) */
	struct twheel_ring_hdr *ring;
	size_t ring_len;
	u32 ring_tail;		/* ops published */
	u64 ring_ids[RING_SLOTS]; /* the id the kernel keeps per ring slot */
};

static struct mfd g_fds[MAX_FDS];
static int g_nfds = 4;
static int g_efds[2];		/* two eventfds to register */
static u64 g_efd_count[2];
static int g_notev = -1;	/* an open file that is not an eventfd */

static unsigned int count_exists(struct mfd *m)
{
	unsigned int n = 0;
	u64 id;

	for (id = 1; id < m->next_id && id < MAX_IDS; id++)
		n += m->t[id].exists;
	return n;
}

/* The model's entry of a live kernel id, or NULL: ENOENT. */
static struct mt *find_live(struct mfd *m, u64 kid)
{
	u64 h;

	for (h = 1; h < m->next_id && h < MAX_IDS; h++)
		if (m->t[h].live && m->t[h].kid == kid)
			return &m->t[h];
	return NULL;
}

/* Table growth before a call with @k SCHEDULE ops, as twheel_fd_prepare(). */
static void slots_prepare(struct mfd *m, unsigned int k)
{
	u32 n, i;

	while (m->nfree < k && m->nslots < m->max_timers) {
		if (m->nslots + CHUNK_SLOTS > MAX_SLOTS)
			die("model slot table full");
		n = m->max_timers - m->nslots;
		if (n > CHUNK_SLOTS)
			n = CHUNK_SLOTS;
		for (i = n; i-- > 0; ) {
			m->next_free[m->nslots + i] = m->free_head;
			m->free_head = m->nslots + i + 1;
		}
		m->nslots += n;
		m->nfree += n;
	}
}

/* The id the next SCHEDULE gets, taking its slot. */
static u64 slot_take(struct mfd *m)
{
	u32 slot = m->free_head - 1;

	if (!m->free_head)
		die("model: no free slot for a SCHEDULE the kernel accepted");
	m->free_head = m->next_free[slot];
	m->nfree--;
	return (u64)m->gen[slot] << 32 | (slot + 1);
}

/* Release the slot of @kid: a new generation, head of the free list. */
static void slot_release(struct mfd *m, u64 kid)
{
	u32 slot = (u32)kid - 1;

	m->gen[slot]++;
	m->next_free[slot] = m->free_head;
	m->free_head = slot + 1;
	m->nfree++;
}

static u64 *efd_counter(struct mfd *m)
{
	if (m->efd == g_efds[0])
		return &g_efd_count[0];
	if (m->efd == g_efds[1])
		return &g_efd_count[1];
	return NULL;
}

/* The model's side of one expiry of @id, deadline in [lo, hi]. */
static void model_expire(struct mfd *m, u64 id, u64 lo, u64 hi)
{
	struct mt *t = &m->t[id];
	u64 *c = efd_counter(m);

	t->ev_count++;
	t->ev_user_data = t->user_data;
	t->ev_flags = t->mode == ONESHOT ? 0 : TWHEEL_EVENT_PERIODIC;
	t->dl_lo = lo;
	t->dl_hi = hi;
	if (!t->queued) {
		t->queued = true;
		m->queue[m->nq++] = id;
	}
	if (t->mode == ONESHOT)
		t->pending = false;
	if (c)
		(*c)++;
}

static struct twheel_info get_info(struct mfd *m)
{
	struct twheel_info i;

	memset(&i, 0x5a, sizeof(i));
	if (ioctl(m->fd, TWHEEL_IOC_INFO, &i))
		die("INFO: %s", strerror(errno));
	return i;
}

/* Wait for the kernel to queue the records the model expects. */
static void wait_queued(struct mfd *m)
{
	u64 end = now_ns() + 10 * NSEC_PER_SEC;
	struct twheel_info i;

	for (;;) {
		i = get_info(m);
		if (i.queued >= m->nq)
			break;
		if (now_ns() > end)
			die("an expiry due at once did not happen in 10 s (%u of %u events queued)",
			    i.queued, m->nq);
		usleep(200);
	}
	if (i.queued != m->nq)
		die("INFO: %u events queued, model %u", i.queued, m->nq);
}

static void check_info(struct mfd *m)
{
	struct twheel_info i = get_info(m);

	if (count_exists(m) != m->nexists)
		die("model: %u timers counted, %u in the table", m->nexists,
		    count_exists(m));

	if (i.timers != m->nexists || i.queued != m->nq ||
	    i.max_timers != m->max_timers || i.granularity_ns != g_granularity ||
	    i.user_timers < i.timers || i.max_user_timers == 0 ||
	    i.max_total_timers == 0)
		die("INFO: timers %u queued %u max %u gran %llu flags %u; model: %u %u %u %llu",
		    i.timers, i.queued, i.max_timers,
		    (unsigned long long)i.granularity_ns, i.flags, m->nexists,
		    m->nq, m->max_timers, (unsigned long long)g_granularity);
}

/* ------------------------------------------------------------------ */
/* Specs                                                               */
/* ------------------------------------------------------------------ */

/* What a spec means: an error, or an arming that is FAR or NOW. */
struct meaning {
	long err;		/* 0 or -errno */
	enum mode mode;
	bool now;		/* fires at once (first deadline in the past) */
	bool abs;
	u64 dl;			/* for abs: the deadline */
};

/* The rules of uapi/twheel.h, in chardev's order. */
static struct meaning judge(const struct twheel_timer_spec *s, u64 t0)
{
	struct meaning mn = { 0 };

	/*
	 * The model is of CLOCK_MONOTONIC timers: garbage_spec() makes no
	 * valid spec on another clock (twheel_test covers those).
	 */
	if (s->flags & ~TWHEEL_TIMER_FLAGS || s->reserved ||
	    ((s->flags & TWHEEL_TIMER_SLACK) ? s->slack > S64MAX : s->slack) ||
	    s->clockid != TWHEEL_CLOCK_MONOTONIC || s->value > S64MAX ||
	    (s->flags & TWHEEL_TIMER_CANCEL_ON_SET)) {
		mn.err = -EINVAL;
		return mn;
	}
	if (s->flags & TWHEEL_TIMER_PERIODIC) {
		if (!s->period || s->period > S64MAX) {
			mn.err = -EINVAL;
			return mn;
		}
		mn.mode = s->flags & TWHEEL_TIMER_FIXED_DELAY ? DELAY : RATE;
	} else {
		if (s->period || (s->flags & TWHEEL_TIMER_FIXED_DELAY)) {
			mn.err = -EINVAL;
			return mn;
		}
		mn.mode = ONESHOT;
	}
	mn.abs = s->flags & TWHEEL_TIMER_ABSTIME;
	if (mn.abs) {
		mn.dl = s->value;
		mn.now = s->value <= t0;
	} else {
		/* now + value must fit; t0 is a lower bound of the kernel's now. */
		if (s->value > S64MAX - t0 - 10 * NSEC_PER_SEC &&
		    s->value <= S64MAX - t0) {
			mn.err = 1;	/* too close to call: the caller avoids it */
			return mn;
		}
		if (s->value > S64MAX - t0) {
			mn.err = -ERANGE;
			return mn;
		}
		mn.now = !s->value;
	}
	return mn;
}

/*
 * A valid spec, FAR or NOW (@now), of a random kind. A periodic NOW timer
 * has a period of hours: it fires once.
 */
static void valid_spec(struct twheel_timer_spec *s, bool now)
{
	u64 t = now_ns();
	unsigned int kind = (unsigned int)rnd(10);

	memset(s, 0, sizeof(*s));
	s->clockid = TWHEEL_CLOCK_MONOTONIC;
	s->user_data = rnd64();
	if (kind >= 7) {
		s->flags = TWHEEL_TIMER_PERIODIC;
		if (kind == 9)
			s->flags |= TWHEEL_TIMER_FIXED_DELAY;
		s->period = HOUR + rnd(S64MAX - HOUR);
	}
	if (chance(40)) {
		s->flags |= TWHEEL_TIMER_ABSTIME;
		/* A periodic one just past: no overruns, fires exactly once. */
		if (now && (s->flags & TWHEEL_TIMER_PERIODIC))
			s->value = t - rnd(t < NSEC_PER_SEC ? t : NSEC_PER_SEC);
		else if (now)
			s->value = chance(20) ? 0 : t - rnd(t);
		else
			s->value = t + HOUR + rnd(S64MAX - t - HOUR);
	} else {
		s->value = now ? 0 : HOUR + rnd(S64MAX / 2);
	}
}

/* Random fields, mostly invalid; fixed up so that a valid one is FAR or NOW. */
static void garbage_spec(struct twheel_timer_spec *s)
{
	u64 t = now_ns();
	struct meaning mn;

	valid_spec(s, chance(20));
	switch (rnd(9)) {
	case 0: s->flags = (u32)rnd64(); break;
	case 1: s->flags |= 1u << (3 + rnd(29)); break;
	case 2:
		if (rnd(2))
			s->reserved = 1 + rnd(1000);
		else
			s->slack = 1 + rnd(1000);
		break;
	case 3:
		s->clockid = chance(50) ? (u32)rnd(16) : (u32)rnd64();
		/* REALTIME, BOOTTIME and their alarms are valid: not in the model. */
		if (s->clockid == TWHEEL_CLOCK_REALTIME ||
		    s->clockid == TWHEEL_CLOCK_BOOTTIME ||
		    s->clockid == TWHEEL_CLOCK_REALTIME_ALARM ||
		    s->clockid == TWHEEL_CLOCK_BOOTTIME_ALARM)
			s->clockid = 2;
		break;
	case 4: s->value = S64MAX + 1 + rnd(S64MAX); break;
	case 5: s->period = chance(50) ? 0 : S64MAX + 1 + rnd(S64MAX); break;
	case 6: s->flags ^= TWHEEL_TIMER_FIXED_DELAY; break;
	case 7: s->flags &= ~TWHEEL_TIMER_ABSTIME; s->value = S64MAX - rnd(HOUR); break;
	default: s->value = rnd64(); s->period = rnd64(); s->flags = (u32)rnd(8); break;
	}
	mn = judge(s, t);
	if (mn.err)
		return;
	/* Valid: make it certain, FAR or NOW. */
	if (s->flags & TWHEEL_TIMER_ABSTIME) {
		if (s->value > t && s->value < t + 2 * HOUR)
			s->value = t + 2 * HOUR;
		else if (s->value <= t && (s->flags & TWHEEL_TIMER_PERIODIC))
			s->value = t - rnd(t < NSEC_PER_SEC ? t : NSEC_PER_SEC);
	} else if (s->value && s->value < 2 * HOUR) {
		s->value = 2 * HOUR;
	}
	if ((s->flags & TWHEEL_TIMER_PERIODIC) && s->period < 2 * HOUR)
		s->period = 2 * HOUR + rnd(HOUR);
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static struct mfd *pick_fd(void)
{
	struct mfd *m = &g_fds[rnd((u64)g_nfds)];

	return m;
}

static u64 pick_id(struct mfd *m)
{
	u64 id;
	int tries;

	/* Mostly a live one; sometimes stale, unknown or absurd. */
	if (chance(85) && m->next_id > 1) {
		for (tries = 0; tries < 16; tries++) {
			id = 1 + rnd(m->next_id - 1);
			if (id < MAX_IDS && m->t[id].live)
				return m->t[id].kid;
		}
	}
	switch (rnd(6)) {
	case 0: return 0;
	case 1: return m->nslots + 1 + rnd(3);		/* no such slot */
	case 2: return (u64)UINT32_MAX + 1 + rnd(1000);	/* gen 1, slot 0.. */
	case 3: return rnd64();
	case 4:		/* a live slot, another generation */
		id = m->next_id > 1 ? m->t[1 + rnd(m->next_id - 1)].kid : 1;
		return id + ((1 + rnd(3)) << 32);
	default:	/* any the model saw: live, stale, orphaned */
		return m->next_id > 1 ? m->t[1 + rnd(m->next_id - 1)].kid : 1;
	}
}

/* Apply a SCHEDULE that the kernel accepted with id @id. */
static void model_schedule(struct mfd *m, const struct twheel_timer_spec *s,
			   u64 id, u64 t0, u64 t1)
{
	struct meaning mn = judge(s, t0);
	u64 want = slot_take(m), h = m->next_id;
	struct mt *t;

	if (id != want)
		die("SCHEDULE gave id %#llx, expected %#llx",
		    (unsigned long long)id, (unsigned long long)want);
	if (h >= MAX_IDS)
		die("model table full");
	m->next_id++;
	t = &m->t[h];
	memset(t, 0, sizeof(*t));
	t->kid = id;
	t->exists = t->live = t->pending = true;
	t->mode = mn.mode;
	t->user_data = s->user_data;
	m->nexists++;
	if (mn.now)
		model_expire(m, h, mn.abs ? mn.dl : t0, mn.abs ? mn.dl : t1);
}

/* The result SCHEDULE must give, or 1 if it succeeds. */
static long expect_schedule(struct mfd *m, const struct twheel_timer_spec *s,
			    u64 t0)
{
	struct meaning mn = judge(s, t0);

	if (mn.err)
		return mn.err;
	if (m->nexists >= m->max_timers)
		return -ENOSPC;
	return 1;
}

static void op_schedule(struct mfd *m, bool garbage)
{
	struct twheel_timer_spec s;
	long want, r;
	u64 t0, t1;

	do {
		if (garbage)
			garbage_spec(&s);
		else
			valid_spec(&s, chance(40));
		s.id = rnd64();	/* ignored on input */
		t0 = now_ns();
		want = expect_schedule(m, &s, t0);
	} while (want == 1 && judge(&s, t0).err == 1);
	/* A record already queued would only see its count grow: not here. */
	slots_prepare(m, 1);
	r = ioctl(m->fd, TWHEEL_IOC_SCHEDULE, &s) ? -errno : 0;
	t1 = now_ns();
	vlog("SCHEDULE fd %d flags %#x value %llu period %llu -> %s id %llu",
	     m->fd, s.flags, (unsigned long long)s.value,
	     (unsigned long long)s.period, rs(r), (unsigned long long)s.id);
	if (want == 1) {
		EXPECT(r, 0, "SCHEDULE of a valid spec");
		model_schedule(m, &s, s.id, t0, t1);
		wait_queued(m);
	} else {
		EXPECT(r, want, "SCHEDULE flags %#x value %llu period %llu clock %u",
		       s.flags, (unsigned long long)s.value,
		       (unsigned long long)s.period, s.clockid);
	}
}

/* The result MODIFY of @s must give; applies it to the model if told to. */
static long modify_model(struct mfd *m, const struct twheel_timer_spec *s,
			 u64 t0, u64 t1, bool apply)
{
	struct meaning mn = judge(s, t0);
	struct mt *t;
	long ret;

	if (mn.err)
		return mn.err;
	t = find_live(m, s->id);
	if (!t)
		return -ENOENT;
	ret = t->pending;
	if (!apply)
		return ret;
	t->pending = true;
	t->mode = mn.mode;
	t->user_data = s->user_data;
	if (mn.now)
		model_expire(m, (u64)(t - m->t), mn.abs ? mn.dl : t0,
			     mn.abs ? mn.dl : t1);
	return ret;
}

/* Would MODIFY to NOW grow a queued record's count? Then use FAR. */
static void modify_spec(struct mfd *m, struct twheel_timer_spec *s, u64 id,
			bool garbage)
{
	struct mt *t = find_live(m, id);
	bool queued = t && t->queued;

	if (garbage) {
		do
			garbage_spec(s);
		while (queued && judge(s, now_ns()).now);
	} else {
		valid_spec(s, !queued && chance(40));
	}
	s->id = id;
}

static void op_modify(struct mfd *m, bool garbage)
{
	struct twheel_timer_spec s;
	u64 id = pick_id(m), t0, t1;
	long want, r;

	do {
		modify_spec(m, &s, id, garbage);
		t0 = now_ns();
	} while (judge(&s, t0).err == 1);
	want = modify_model(m, &s, t0, t0, false);
	r = ioctl(m->fd, TWHEEL_IOC_MODIFY, &s);
	r = r < 0 ? -errno : r;
	t1 = now_ns();
	vlog("MODIFY fd %d id %llu flags %#x -> %s", m->fd,
	     (unsigned long long)id, s.flags, rs(r));
	EXPECT(r, want, "MODIFY id %llu flags %#x value %llu period %llu",
	       (unsigned long long)id, s.flags, (unsigned long long)s.value,
	       (unsigned long long)s.period);
	if (r >= 0) {
		modify_model(m, &s, t0, t1, true);
		wait_queued(m);
	}
}

/* The result CANCEL must give; applies it if told to. */
static long cancel_model(struct mfd *m, const struct twheel_cancel *c,
			 bool apply)
{
	struct mt *t;
	long ret;

	if (c->flags || c->pad)
		return -EINVAL;
	t = find_live(m, c->id);
	if (!t)
		return -ENOENT;
	ret = t->pending;
	if (!apply)
		return ret;
	t->live = false;
	slot_release(m, t->kid);
	if (t->queued) {
		/* A periodic timer's last event says no more will follow. */
		if (t->mode != ONESHOT)
			t->ev_flags |= TWHEEL_EVENT_CANCELLED;
	} else {
		t->exists = false;
		m->nexists--;
	}
	t->pending = false;
	return ret;
}

static void op_cancel(struct mfd *m)
{
	struct twheel_cancel c = { .id = pick_id(m) };
	long want, r;

	if (chance(5))
		c.flags = 1u << rnd(32);
	if (chance(5))
		c.pad = 1 + (u32)rnd(100);
	want = cancel_model(m, &c, false);
	r = ioctl(m->fd, TWHEEL_IOC_CANCEL, &c);
	r = r < 0 ? -errno : r;
	vlog("CANCEL fd %d id %llu -> %s", m->fd, (unsigned long long)c.id, rs(r));
	EXPECT(r, want, "CANCEL id %llu flags %#x pad %u",
	       (unsigned long long)c.id, c.flags, c.pad);
	if (r >= 0)
		cancel_model(m, &c, true);
}

/* One op of a batch: what it must give, applied to the model. */
static long batch_op_model(struct mfd *m, struct twheel_op *op, u64 t0, u64 t1,
			   bool apply)
{
	struct twheel_cancel c = { .id = op->spec.id };
	const struct twheel_timer_spec *s = &op->spec;
	long want;

	switch (op->op) {
	case TWHEEL_OP_SCHEDULE:
		want = expect_schedule(m, s, t0);
		if (want == 1) {
			if (apply)
				model_schedule(m, s, op->spec.id, t0, t1);
			return 0;
		}
		return want;
	case TWHEEL_OP_MODIFY:
		return modify_model(m, s, t0, t1, apply);
	case TWHEEL_OP_CANCEL:
		if (s->value || s->period || s->user_data || s->clockid ||
		    s->flags || s->slack || s->reserved)
			return -EINVAL;
		return cancel_model(m, &c, apply);
	default:
		return -EINVAL;
	}
}

/*
 * The long op a short op stands for (uapi/twheel.h), written here from the
 * header's words: period 0, CLOCK_MONOTONIC (0 for a CANCEL), and an op
 * that fails with EINVAL for a flag other than TWHEEL_TIMER_ABSTIME.
 */
static void short_to_long(struct twheel_op *op, const struct twheel_short_op *s)
{
	memset(op, 0, sizeof(*op));
	op->op = (s->flags & ~TWHEEL_TIMER_ABSTIME) ? 0 : s->op;
	op->result = s->result;
	op->spec.id = s->id;
	op->spec.value = s->value;
	op->spec.user_data = s->user_data;
	op->spec.flags = s->flags;
	op->spec.clockid = s->op == TWHEEL_OP_CANCEL ? 0 : TWHEEL_CLOCK_MONOTONIC;
}

static void op_batch(struct mfd *m)
{
	unsigned int n = 1 + (unsigned int)rnd(chance(10) ? 64 : 8), i, done;
	struct twheel_batch b = { .count = n };
	struct twheel_op ops[64], orig[64];
	struct twheel_short_op sops[64], sorig[64];
	/* Short ops now and then: the long ones as far as they fit. */
	bool is_short = chance(30);
	u64 t0, t1, id;
	long want, r;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < n; i++) {
		struct twheel_op *op = &ops[i];

		op->result = (int)rnd64();
		switch (rnd(chance(3) ? 5 : 3)) {
		case 0:
			op->op = TWHEEL_OP_SCHEDULE;
			/* NOW only alone: records of one batch arrive in any order. */
			valid_spec(&op->spec, false);
			while (chance(10) || judge(&op->spec, now_ns()).err == 1 ||
			       judge(&op->spec, now_ns()).now)
				garbage_spec(&op->spec);
			break;
		case 1:
			op->op = TWHEEL_OP_MODIFY;
			id = pick_id(m);
			do
				modify_spec(m, &op->spec, id, chance(10));
			while (judge(&op->spec, now_ns()).now ||
			       judge(&op->spec, now_ns()).err == 1);
			break;
		case 2:
			op->op = TWHEEL_OP_CANCEL;
			op->spec.id = pick_id(m);
			if (chance(5))
				op->spec.user_data = 1;
			break;
		case 3:
			op->op = (u32)rnd64();
			break;
		default:
			op->op = chance(50) ? 0 : 4 + (u32)rnd(4);
			break;
		}
	}
	/* The batch itself, now and then invalid. */
	switch (rnd(40)) {
	case 0: b.flags = 1u << (1 + rnd(31)); break;
	case 1: b.reserved = 1 + rnd(9); break;
	case 2: b.count = 0; break;
	case 3: b.count = TWHEEL_BATCH_MAX + 1 + (u32)rnd(100); break;
	default: break;
	}
	if (is_short) {
		memset(sops, 0, sizeof(sops));
		for (i = 0; i < n; i++) {
			struct meaning mn;

			sops[i].op = (uint16_t)ops[i].op;
			sops[i].flags = (uint16_t)ops[i].spec.flags;
			sops[i].result = ops[i].result;
			sops[i].id = ops[i].spec.id;
			sops[i].value = ops[i].spec.value;
			sops[i].user_data = ops[i].spec.user_data;
			short_to_long(&ops[i], &sops[i]);
			if (ops[i].op != TWHEEL_OP_SCHEDULE &&
			    ops[i].op != TWHEEL_OP_MODIFY)
				continue;
			/* Dropping the period may have made it NOW: no NOW here. */
			mn = judge(&ops[i].spec, now_ns());
			if (mn.now || mn.err == 1) {
				sops[i].flags = 0;
				sops[i].value = HOUR;
				short_to_long(&ops[i], &sops[i]);
			}
		}
		memcpy(sorig, sops, sizeof(sops));
		b.flags |= TWHEEL_BATCH_SHORT;
	}
	memcpy(orig, ops, sizeof(ops));
	b.ops = is_short ? (uintptr_t)sops : (uintptr_t)ops;
	if (!(b.flags & ~TWHEEL_BATCH_SHORT) && !b.reserved && b.count &&
	    b.count <= TWHEEL_BATCH_MAX) {
		unsigned int k = 0;

		for (i = 0; i < b.count; i++)
			k += ops[i].op == TWHEEL_OP_SCHEDULE;
		if (k)
			slots_prepare(m, k);
	}
	t0 = now_ns();
	r = ioctl(m->fd, TWHEEL_IOC_BATCH, &b);
	r = r < 0 ? -errno : r;
	t1 = now_ns();
	vlog("BATCH%s fd %d of %u -> %s", is_short ? " short" : "", m->fd,
	     b.count, rs(r));
	if ((b.flags & ~TWHEEL_BATCH_SHORT) || b.reserved || !b.count ||
	    b.count > TWHEEL_BATCH_MAX) {
		EXPECT(r, -EINVAL, "BATCH flags %#x reserved %llu count %u",
		       b.flags, (unsigned long long)b.reserved, b.count);
		return;
	}
	if (is_short) {
		/* What the kernel wrote back, seen through the long form. */
		for (i = 0; i < n; i++) {
			if (i > (unsigned int)r &&
			    memcmp(&sops[i], &sorig[i], sizeof(sops[i])))
				die("BATCH short: op %u after the failing op %ld was written",
				    i, r);
			if (sorig[i].op != TWHEEL_OP_SCHEDULE &&
			    sops[i].id != sorig[i].id)
				die("BATCH short: op %u's id changed", i);
			if (sops[i].op != sorig[i].op || sops[i].flags != sorig[i].flags ||
			    sops[i].value != sorig[i].value ||
			    sops[i].user_data != sorig[i].user_data)
				die("BATCH short: op %u's input changed", i);
			ops[i].result = sops[i].result;
			ops[i].spec.id = sops[i].id;
		}
	}
	/* Replay on the model: schedules take the ids the kernel wrote. */
	for (done = 0; done < n; done++) {
		struct twheel_op probe = orig[done];

		if (probe.op == TWHEEL_OP_SCHEDULE)
			probe.spec.id = ops[done].spec.id;
		want = batch_op_model(m, &probe, t0, t1, false);
		if (want < 0) {
			EXPECT(ops[done].result, want, "BATCH op %u (op %u)", done,
			       probe.op);
			break;
		}
		EXPECT(ops[done].result, want, "BATCH op %u (op %u) result", done,
		       probe.op);
		batch_op_model(m, &probe, t0, t1, true);
	}
	EXPECT(r, (long)done, "BATCH of %u: ops done", n);
	for (i = done + 1; i < n; i++)
		if (memcmp(&ops[i], &orig[i], sizeof(ops[i])))
			die("BATCH: op %u after the failing op %u was written", i, done);
	for (i = 0; i < n && i <= done; i++)
		if (orig[i].op != TWHEEL_OP_SCHEDULE &&
		    memcmp(&ops[i].spec, &orig[i].spec, sizeof(ops[i].spec)))
			die("BATCH: op %u's spec changed", i);
	wait_queued(m);
}

/*
 * Ring ops go through the mapping at TWHEEL_RING_OFFSET, mapped on a
 * file's first ring op: 1-4 ops per publish on a few slots (so that ops
 * on one slot meet in a drain and fold into the last), each a valid ARM or
 * CANCEL or a malformed op, then TWHEEL_IOC_RING_ENTER, which returns once
 * every op published is drained. The model applies the last op on each
 * slot, as uapi/twheel.h says: an ARM is a MODIFY of the slot's timer if
 * the model has it live, else a SCHEDULE (whose id it predicts); a CANCEL
 * is a CANCEL of a live one, else nothing. Failures must come back as
 * completions, in op order for the malformed ones: {slot, -errno,
 * user_data}, and nothing else. Sometimes the tail lies (more than
 * TWHEEL_RING_ENTRIES ahead): nothing may be consumed, and BAD_TAIL set
 * until the tail is sane again.
 */
static int ring_map_fd(struct mfd *m)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (m->ring)
		return 0;
	m->ring_len = (TWHEEL_RING_MAP_BYTES + (size_t)page - 1) / (size_t)page * (size_t)page;
	p = mmap(NULL, m->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd,
		 (off_t)TWHEEL_RING_OFFSET);
	if (p == MAP_FAILED)
		return -errno;
	m->ring = p;
	m->ring_tail = m->ring->sq_tail;
	memset(m->ring_ids, 0, sizeof(m->ring_ids));
	return 0;
}

static void ring_unmap_fd(struct mfd *m)
{
	if (m->ring)
		munmap(m->ring, m->ring_len);
	m->ring = NULL;
}

static void ring_enter(struct mfd *m)
{
	if (ioctl(m->fd, TWHEEL_IOC_RING_ENTER))
		die("RING_ENTER: %s", strerror(errno));
}

/* Takes every completion: they must be exactly @want[0..@n). */
static void ring_check_cq(struct mfd *m, const struct twheel_ring_cqe *want,
			  unsigned int n)
{
	struct twheel_ring_hdr *h = m->ring;
	u32 head = h->cq_head;
	u32 tail = __atomic_load_n(&h->cq_tail, __ATOMIC_ACQUIRE);
	const struct twheel_ring_cqe *cq = (void *)((char *)h + TWHEEL_RING_CQ_OFF);
	unsigned int i;

	if (tail - head != n || h->cq_overflow)
		die("ring: %u completions (overflow %llu), expected %u",
		    tail - head, (unsigned long long)h->cq_overflow, n);
	for (i = 0; i < n; i++) {
		const struct twheel_ring_cqe *c = &cq[(head + i) % TWHEEL_RING_ENTRIES];

		if (c->slot != want[i].slot || c->result != want[i].result ||
		    c->user_data != want[i].user_data)
			die("ring: completion %u {slot %u, %d, %llu}, expected {%u, %d, %llu}",
			    i, c->slot, c->result, (unsigned long long)c->user_data,
			    want[i].slot, want[i].result,
			    (unsigned long long)want[i].user_data);
	}
	__atomic_store_n(&h->cq_head, tail, __ATOMIC_RELEASE);
}

/* A malformed op: each kind of bad field, or a slot out of range. */
static void ring_garbage(struct mfd *m, struct twheel_ring_op *o)
{
	memset(o, 0, sizeof(*o));
	o->op = TWHEEL_RING_ARM;
	o->slot = (u32)rnd(RING_SLOTS < m->max_timers ? RING_SLOTS : m->max_timers);
	o->user_data = rnd64();
	switch (rnd(7)) {
	case 0: o->op = chance(50) ? 0 : 3 + (uint8_t)rnd(250); break;
	case 1: o->pad = 1 + (uint16_t)rnd(1000); break;
	case 2: o->reserved = 1 + rnd64() / 2; break;
	case 3: o->slot = m->max_timers + (u32)rnd(UINT32_MAX - m->max_timers); break;
	case 4: o->flags = (uint8_t)(2 + rnd(254)); break;
	case 5: o->value = S64MAX + 1 + rnd(S64MAX); break;
	default:
		o->op = TWHEEL_RING_CANCEL;
		if (chance(50))
			o->value = 1 + rnd(HOUR);
		else
			o->flags = 1;
		break;
	}
}

static void op_ring(struct mfd *m)
{
	struct twheel_ring_cqe want[8];
	struct twheel_ring_op ops[4], *sq;
	unsigned int n = 1 + (unsigned int)rnd(4), i, j, nwant = 0, nrun = 0;
	struct twheel_ring_cqe run[4];
	bool bad[4], last, now_used = false;
	u32 nslots = RING_SLOTS < m->max_timers ? RING_SLOTS : m->max_timers;
	u64 t0, t1, head;
	int ret = ring_map_fd(m);

	if (ret) {
		/* The caps may refuse the ring; nothing else may. */
		if (ret != -EDQUOT && ret != -EAGAIN)
			die("mmap of the ring: %s", strerror(-ret));
		return;
	}
	sq = (void *)((char *)m->ring + TWHEEL_RING_SQ_OFF);

	if (chance(5)) {
		/* A lying tail consumes nothing; a sane one again clears it. */
		head = m->ring->sq_head;
		__atomic_store_n(&m->ring->sq_tail,
				 m->ring_tail + TWHEEL_RING_ENTRIES + 1 + (u32)rnd(UINT32_MAX / 2),
				 __ATOMIC_RELEASE);
		ring_enter(m);
		vlog("RING fd %d lying tail", m->fd);
		if (m->ring->sq_head != head || !(m->ring->flags & TWHEEL_RING_BAD_TAIL))
			die("ring: a lying tail moved the head or set no BAD_TAIL");
		__atomic_store_n(&m->ring->sq_tail, m->ring_tail, __ATOMIC_RELEASE);
		ring_enter(m);
		if (m->ring->flags & TWHEEL_RING_BAD_TAIL)
			die("ring: BAD_TAIL stays with a sane tail");
		return;
	}

	for (i = 0; i < n; i++) {
		struct twheel_ring_op *o = &ops[i];
		u32 slot = (u32)rnd(nslots);
		struct mt *t = m->ring_ids[slot] ? find_live(m, m->ring_ids[slot]) : NULL;

		bad[i] = chance(15);
		if (bad[i]) {
			ring_garbage(m, o);
		} else if (chance(55)) {
			memset(o, 0, sizeof(*o));
			o->op = TWHEEL_RING_ARM;
			o->slot = slot;
			o->user_data = rnd64();
			/*
			 * NOW only where no record is queued (its count would
			 * grow), and once per publish: records of one drain
			 * arrive in any order.
			 */
			if (!(t && t->queued) && !now_used && chance(30)) {
				now_used = true;
				o->flags = chance(50) ? TWHEEL_TIMER_ABSTIME : 0;
				o->value = o->flags ? now_ns() - rnd(NSEC_PER_SEC) : 0;
			} else {
				o->flags = chance(50) ? TWHEEL_TIMER_ABSTIME : 0;
				o->value = (o->flags ? now_ns() : 0) + HOUR + rnd(HOUR);
			}
		} else {
			memset(o, 0, sizeof(*o));
			o->op = TWHEEL_RING_CANCEL;
			o->slot = slot;
		}
		sq[m->ring_tail++ % TWHEEL_RING_ENTRIES] = *o;
	}
	t0 = now_ns();
	__atomic_store_n(&m->ring->sq_tail, m->ring_tail, __ATOMIC_RELEASE);
	ring_enter(m);
	t1 = now_ns();
	if (m->ring->sq_head != m->ring_tail)
		die("ring: head %u after RING_ENTER, tail %u", m->ring->sq_head, m->ring_tail);

	/* The model: malformed ones fail in order, then the last op per slot. */
	for (i = 0; i < n; i++) {
		if (bad[i]) {
			want[nwant++] = (struct twheel_ring_cqe){
				.slot = ops[i].slot, .result = -EINVAL,
				.user_data = ops[i].user_data,
			};
			continue;
		}
		for (last = true, j = i + 1; j < n; j++)
			if (!bad[j] && ops[j].slot == ops[i].slot)
				last = false;
		vlog("RING fd %d op %u slot %u value %llu flags %u%s", m->fd,
		     ops[i].op, ops[i].slot, (unsigned long long)ops[i].value,
		     ops[i].flags, last ? "" : " (folded)");
		if (!last)
			continue;
		if (ops[i].op == TWHEEL_RING_CANCEL) {
			struct twheel_cancel c = { .id = m->ring_ids[ops[i].slot] };

			if (c.id && cancel_model(m, &c, false) >= 0)
				cancel_model(m, &c, true);
			m->ring_ids[ops[i].slot] = 0;
			continue;
		}
		{
			struct twheel_timer_spec s = {
				.id = m->ring_ids[ops[i].slot],
				.value = ops[i].value,
				.user_data = ops[i].user_data,
				.clockid = TWHEEL_CLOCK_MONOTONIC,
				.flags = ops[i].flags,
			};

			if (s.id && modify_model(m, &s, t0, t1, false) >= 0) {
				modify_model(m, &s, t0, t1, true);
			} else if (m->nexists >= m->max_timers) {
				m->ring_ids[ops[i].slot] = 0;
				/* its completion comes after the malformed ones */
				run[nrun++] = (struct twheel_ring_cqe){
					.slot = ops[i].slot, .result = -ENOSPC,
					.user_data = ops[i].user_data,
				};
			} else {
				slots_prepare(m, 1);
				if (!m->free_head)
					die("model: no free slot for a ring SCHEDULE");
				m->ring_ids[ops[i].slot] =
					(u64)m->gen[m->free_head - 1] << 32 | m->free_head;
				model_schedule(m, &s, m->ring_ids[ops[i].slot], t0, t1);
			}
		}
	}
	for (i = 0; i < nrun; i++)
		want[nwant++] = run[i];
	ring_check_cq(m, want, nwant);
	wait_queued(m);
}

static void op_set_eventfd(struct mfd *m)
{
	struct twheel_eventfd e = { .fd = -1 };
	int closed = -1;
	long want = 0, r;

	switch (rnd(8)) {
	case 0: case 1: case 2: e.fd = g_efds[rnd(2)]; break;
	case 3: e.fd = -1; break;
	case 4: e.fd = g_notev; want = -EINVAL; break;
	case 5:
		closed = dup(g_notev);
		if (closed < 0)
			die("dup: %s", strerror(errno));
		close(closed);
		e.fd = closed;
		want = -EBADF;
		break;
	case 6: e.fd = -2 - (int)rnd(1000); want = -EINVAL; break;
	default:
		e.fd = g_efds[0];
		/* Not bit 0, TWHEEL_EVENTFD_QUERY, which changes nothing. */
		if (chance(50))
			e.flags = 2u << rnd(31);
		else
			e.reserved = 1 + rnd(1000);
		want = -EINVAL;
		break;
	}
	r = ioctl(m->fd, TWHEEL_IOC_SET_EVENTFD, &e) ? -errno : 0;
	vlog("SET_EVENTFD fd %d efd %d -> %s", m->fd, e.fd, rs(r));
	EXPECT(r, want, "SET_EVENTFD fd %d flags %#x", e.fd, e.flags);
	if (!r)
		m->efd = e.fd;
}

static void check_event(struct mfd *m, const struct twheel_event *ev, u64 t1)
{
	struct mt *t;
	u64 id;

	if (!m->nq)
		die("read an event, the model has none");
	id = m->queue[0];
	t = &m->t[id];
	if (ev->id != t->kid || ev->user_data != t->ev_user_data ||
	    ev->count != t->ev_count || ev->flags != t->ev_flags || ev->pad ||
	    ev->deadline < t->dl_lo || ev->deadline > t->dl_hi ||
	    ev->fired < ev->deadline || ev->fired > t1)
		die("event id %llu ud %#llx count %llu flags %#x deadline %llu fired %llu; model: id %llu ud %#llx count %llu flags %#x deadline %llu..%llu",
		    (unsigned long long)ev->id,
		    (unsigned long long)ev->user_data,
		    (unsigned long long)ev->count, ev->flags,
		    (unsigned long long)ev->deadline,
		    (unsigned long long)ev->fired, (unsigned long long)t->kid,
		    (unsigned long long)t->ev_user_data,
		    (unsigned long long)t->ev_count, t->ev_flags,
		    (unsigned long long)t->dl_lo, (unsigned long long)t->dl_hi);
	memmove(m->queue, m->queue + 1, (m->nq - 1) * sizeof(m->queue[0]));
	m->nq--;
	t->queued = false;
	t->ev_count = 0;
	t->ev_flags = 0;
	/* An orphan is freed; a fired one-shot timer's id is released. */
	if (!t->live || (t->mode == ONESHOT && !t->pending)) {
		if (t->live)
			slot_release(m, t->kid);
		t->live = false;
		t->exists = false;
		m->nexists--;
	}
}

static char *g_guard;		/* two pages, the second PROT_NONE */
static long g_page;

static void op_read(struct mfd *m)
{
	struct twheel_event ev[20];
	unsigned int want_n, i, kind = (unsigned int)rnd(10);
	size_t len;
	char *buf = (char *)ev;
	ssize_t r;
	u64 t1;

	if (kind == 0) {
		len = rnd(EV);		/* smaller than one record */
	} else if (kind == 1 && m->nq) {
		/* The second record straddles an unmapped page. */
		buf = g_guard + g_page - EV - 1 - rnd(EV - 1);
		len = 2 * EV;
	} else if (kind == 2 && m->nq) {
		buf = NULL;
		len = EV;
	} else {
		len = EV * (1 + rnd(20)) + rnd(EV);
	}
	r = read(m->fd, buf, len);
	t1 = now_ns();
	r = r < 0 ? -errno : r;
	vlog("read fd %d len %zu -> %s", m->fd, len, rs(r));
	if (len < EV) {
		EXPECT(r, -EINVAL, "read of %zu bytes", len);
		return;
	}
	if (!m->nq) {
		EXPECT(r, -EAGAIN, "read with no event queued");
		return;
	}
	if (!buf) {
		EXPECT(r, -EFAULT, "read into NULL");
		return;
	}
	want_n = (unsigned int)(len / EV);
	if (want_n > m->nq)
		want_n = m->nq;
	if (kind == 1) {
		/* One whole record fits; copy_to_user() may stop earlier. */
		if (r != -EFAULT)
			EXPECT(r, (long)EV, "read straddling a hole");
		if (r == (long)EV) {
			memcpy(ev, buf, EV);
			check_event(m, &ev[0], t1);
		}
		return;
	}
	EXPECT(r, (long)(want_n * EV), "read of %zu bytes, %u events queued", len,
	       m->nq);
	for (i = 0; i < want_n; i++)
		check_event(m, &ev[i], t1);
}

static void op_poll(struct mfd *m)
{
	struct pollfd p = { .fd = m->fd, .events = POLLIN | POLLOUT };
	int r = poll(&p, 1, 0);

	if (r < 0)
		die("poll: %s", strerror(errno));
	if (!!(p.revents & POLLIN) != !!m->nq || (p.revents & ~POLLIN))
		die("poll: revents %#x with %u events queued", p.revents, m->nq);
}

static void open_fd(struct mfd *m)
{
	char buf[32];
	int pfd;

	m->max_timers = 65536;
	pfd = open(MAX_TIMERS_PARAM, O_RDWR);
	if (pfd >= 0) {
		/* Sampled at open: small limits make ENOSPC reachable. */
		m->max_timers = chance(50) ? 1 + (u32)rnd(24) : 65536;
		snprintf(buf, sizeof(buf), "%u", m->max_timers);
		if (write(pfd, buf, strlen(buf)) < 0)
			die("writing %s: %s", MAX_TIMERS_PARAM, strerror(errno));
		close(pfd);
	}
	m->fd = open(TWHEEL_DEVICE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (m->fd < 0)
		die("open %s: %s", TWHEEL_DEVICE, strerror(errno));
	memset(m->t, 0, sizeof(m->t));
	memset(m->gen, 0, sizeof(m->gen));
	m->free_head = m->nslots = m->nfree = 0;
	m->next_id = 1;
	m->nq = 0;
	m->efd = -1;
	m->nexists = 0;
	check_info(m);
}

static void op_close(struct mfd *m)
{
	vlog("close fd %d (%u timers, %u events)", m->fd, m->nexists, m->nq);
	ring_unmap_fd(m);
	if (close(m->fd))
		die("close: %s", strerror(errno));
	open_fd(m);
}

/* A child arms a timer on the shared file and exits; the file lives on. */
static void op_fork(struct mfd *m)
{
	struct twheel_timer_spec s;
	int st, p[2];
	u64 id = 0, t0, t1;
	pid_t pid;

	if (m->nexists >= m->max_timers)
		return;
	valid_spec(&s, false);
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	t0 = now_ns();
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(p[0]);
		if (ioctl(m->fd, TWHEEL_IOC_SCHEDULE, &s))
			_exit(1);
		if (write(p[1], &s.id, sizeof(s.id)) != sizeof(s.id))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	slots_prepare(m, 1);
	if (read(p[0], &id, sizeof(id)) != sizeof(id))
		id = 0;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("fork: the child failed (status %#x)", st);
	t1 = now_ns();
	vlog("fork: child scheduled id %llu", (unsigned long long)id);
	model_schedule(m, &s, id, t0, t1);
}

/* NULL and unmapped pointers: EFAULT, nothing changes. */
static void op_bad_pointer(struct mfd *m)
{
	static const unsigned long cmds[] = {
		TWHEEL_IOC_SCHEDULE, TWHEEL_IOC_MODIFY, TWHEEL_IOC_CANCEL,
		TWHEEL_IOC_BATCH, TWHEEL_IOC_SET_EVENTFD, TWHEEL_IOC_INFO,
	};
	unsigned long cmd = cmds[rnd(6)];
	void *p = chance(50) ? NULL : g_guard + g_page;
	struct twheel_batch b = {
		.ops = (uintptr_t)(g_guard + g_page), .count = 1 + (u32)rnd(9),
	};
	long r;

	if (cmd == TWHEEL_IOC_BATCH && chance(50))
		p = &b;		/* the batch is fine, its ops are not */
	r = ioctl(m->fd, cmd, p) ? -errno : 0;
	vlog("ioctl %#lx with a bad pointer -> %s", cmd, rs(r));
	EXPECT(r, -EFAULT, "ioctl %#lx with a bad pointer", cmd);
	check_info(m);
}

/*
 * SCHEDULE from a read-only spec: the id cannot be written back, so the
 * new timer is removed again (EFAULT), and its id is used up.
 */
static void op_readonly_spec(struct mfd *m)
{
	struct twheel_timer_spec *s = (void *)g_guard;
	long want, r;
	u64 t0;

	if (mprotect(g_guard, (size_t)g_page, PROT_READ | PROT_WRITE))
		die("mprotect: %s", strerror(errno));
	valid_spec(s, false);
	if (mprotect(g_guard, (size_t)g_page, PROT_READ))
		die("mprotect: %s", strerror(errno));
	t0 = now_ns();
	want = expect_schedule(m, s, t0);
	slots_prepare(m, 1);
	r = ioctl(m->fd, TWHEEL_IOC_SCHEDULE, s) ? -errno : 0;
	vlog("SCHEDULE from a read-only spec -> %s", rs(r));
	if (want == 1) {
		EXPECT(r, -EFAULT, "SCHEDULE from a read-only spec");
		/* Its slot was taken and given back: a new generation. */
		slot_release(m, slot_take(m));
	} else {
		EXPECT(r, want, "SCHEDULE from a read-only spec");
	}
	if (mprotect(g_guard, (size_t)g_page, PROT_READ | PROT_WRITE))
		die("mprotect: %s", strerror(errno));
	check_info(m);
}

static void op_other(struct mfd *m)
{
	char c = 0;
	long r;

	switch (rnd(6)) {
	case 0:
		r = write(m->fd, &c, 1) < 0 ? -errno : 0;
		EXPECT(r, -EINVAL, "write");
		break;
	case 1:
		r = lseek(m->fd, (off_t)rnd(100), SEEK_SET) < 0 ? -errno : 0;
		EXPECT(r, -ESPIPE, "lseek");
		break;
	case 2: {
		/* The deadline array: only its exact size, shared, at 0. */
		size_t len = ((size_t)m->max_timers * 8 + (size_t)g_page - 1) /
			     (size_t)g_page * (size_t)g_page;
		size_t bad = chance(50) || len == (size_t)g_page ?
			     len + (size_t)g_page : len - (size_t)g_page;
		void *p;

		if (chance(50)) {
			p = mmap(NULL, bad, PROT_READ, MAP_SHARED, m->fd, 0);
			r = p == MAP_FAILED ? -errno : 0;
			EXPECT(r, -EINVAL, "mmap of the wrong size");
			p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, m->fd, 0);
			r = p == MAP_FAILED ? -errno : 0;
			EXPECT(r, -EINVAL, "private mmap");
			break;
		}
		/* Read-only: the model has no extensions. */
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, m->fd, 0);
		r = p == MAP_FAILED ? -errno : 0;
		EXPECT(r, 0, "mmap");
		if (!r)
			munmap(p, len);
		break;
	}
	case 3:
		/* Unknown commands, of our magic and of others. */
		r = ioctl(m->fd, _IOWR(TWHEEL_IOC_MAGIC, 6 + rnd(250), __u64),
			  g_guard) ? -errno : 0;
		EXPECT(r, -ENOTTY, "unknown ioctl");
		break;
	case 4:
		/* A known number with the wrong size or direction. */
		r = ioctl(m->fd, chance(50) ?
			  _IOW(TWHEEL_IOC_MAGIC, 0x00, struct twheel_cancel) :
			  _IOR(TWHEEL_IOC_MAGIC, 0x02, struct twheel_cancel),
			  g_guard) ? -errno : 0;
		EXPECT(r, -ENOTTY, "ioctl with a wrong size or direction");
		break;
	default: {
		/* A random command: ENOTTY, unless the VFS knows it ('f', 'T'). */
		unsigned long cmd = (unsigned long)rnd64() & 0xffffffff;

		if (cmd == TWHEEL_IOC_SCHEDULE || cmd == TWHEEL_IOC_MODIFY ||
		    cmd == TWHEEL_IOC_CANCEL || cmd == TWHEEL_IOC_BATCH ||
		    cmd == TWHEEL_IOC_SET_EVENTFD || cmd == TWHEEL_IOC_INFO ||
		    cmd == TWHEEL_IOC_DUMP || cmd == TWHEEL_IOC_RESTORE ||
		    cmd == TWHEEL_IOC_RING_STATE ||
		    _IOC_TYPE(cmd) == 'f' || _IOC_TYPE(cmd) == 'T' ||
		    _IOC_TYPE(cmd) == 0x94)
			break;
		r = ioctl(m->fd, cmd, NULL);
		EXPECT(r < 0 ? -errno : r, -ENOTTY, "ioctl %#lx", cmd);
		break;
	}
	}
	check_info(m);
}

/* Each eventfd counted every expiry while it was registered. */
static void op_eventfd_read(void)
{
	uint64_t v;
	int i;

	for (i = 0; i < 2; i++) {
		if (read(g_efds[i], &v, sizeof(v)) != sizeof(v)) {
			if (errno != EAGAIN)
				die("eventfd read: %s", strerror(errno));
			v = 0;
		}
		if (v != g_efd_count[i])
			die("eventfd %d counted %llu expiries, model %llu", i,
			    (unsigned long long)v,
			    (unsigned long long)g_efd_count[i]);
		g_efd_count[i] = 0;
	}
}

/* ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: twheel_fuzz [-n OPS] [-t SECONDS] [-s SEED] [-f FDS] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	u64 max_ops = 20000, secs = 60, end, t0;
	struct twheel tw;
	unsigned int i;
	int opt, fd, r;

	while ((opt = getopt(argc, argv, "n:t:s:f:v")) != -1) {
		switch (opt) {
		case 'n': max_ops = strtoull(optarg, NULL, 0); break;
		case 't': secs = strtoull(optarg, NULL, 0); break;
		case 's': g_seed = strtoull(optarg, NULL, 0); break;
		case 'f': g_nfds = atoi(optarg); break;
		case 'v': g_verbose = true; break;
		default: usage();
		}
	}
	if (optind != argc || g_nfds < 1 || g_nfds > MAX_FDS)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!g_seed)
		g_seed = now_ns() ^ ((u64)getpid() << 40);
	g_rnd = g_seed | 1;
	printf("# twheel_fuzz: seed %llu, %d files, at most %llu ops in %llu s\n",
	       (unsigned long long)g_seed, g_nfds, (unsigned long long)max_ops,
	       (unsigned long long)secs);

	g_page = sysconf(_SC_PAGESIZE);
	g_guard = mmap(NULL, 2 * (size_t)g_page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_guard == MAP_FAILED || mprotect(g_guard + g_page, (size_t)g_page,
					      PROT_NONE))
		die("mmap: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		g_efds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (g_efds[i] < 0)
			die("eventfd: %s", strerror(errno));
	}
	g_notev = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fd = open(MAX_TIMERS_PARAM, O_RDONLY);
	if (fd >= 0) {
		ssize_t r = read(fd, g_old_max, sizeof(g_old_max) - 1);

		g_old_max[r > 0 ? r : 0] = '\0';
		close(fd);
	}
	r = twheel_open(&tw, 0);
	if (r)
		die("%s: %s", TWHEEL_DEVICE, strerror(-r));
	g_granularity = tw.info.granularity_ns;
	twheel_close(&tw);
	for (i = 0; i < (unsigned int)g_nfds; i++)
		open_fd(&g_fds[i]);

	t0 = now_ns();
	end = t0 + secs * NSEC_PER_SEC;
	for (g_op = 1; g_op <= max_ops && now_ns() < end; g_op++) {
		struct mfd *m = pick_fd();
		u64 r = rnd(1000);
		unsigned int k;

		/* The model's table is full: a new file. */
		if (m->next_id > MAX_IDS - 100)
			op_close(m);

		if (r < 150)
			k = 0, op_schedule(m, false);
		else if (r < 200)
			k = 16, op_ring(m);
		else if (r < 260)
			k = 1, op_schedule(m, true);
		else if (r < 380)
			k = 2, op_modify(m, false);
		else if (r < 420)
			k = 3, op_modify(m, true);
		else if (r < 540)
			k = 4, op_cancel(m);
		else if (r < 620)
			k = 5, op_batch(m);
		else if (r < 660)
			k = 6, op_set_eventfd(m);
		else if (r < 700)
			k = 7, check_info(m);
		else if (r < 840)
			k = 8, op_read(m);
		else if (r < 870)
			k = 9, op_poll(m);
		else if (r < 885)
			k = 10, op_close(m);
		else if (r < 895)
			k = 11, op_fork(m);
		else if (r < 930)
			k = 12, op_bad_pointer(m);
		else if (r < 945)
			k = 13, op_readonly_spec(m);
		else if (r < 975)
			k = 14, op_other(m);
		else
			k = 15, op_eventfd_read();
		g_hist[k]++;
		if (!(g_op % 64))
			for (i = 0; i < (unsigned int)g_nfds; i++)
				check_info(&g_fds[i]);
	}
	g_op--;
	for (i = 0; i < (unsigned int)g_nfds; i++) {
		check_info(&g_fds[i]);
		close(g_fds[i].fd);
	}
	if (g_old_max[0]) {
		fd = open(MAX_TIMERS_PARAM, O_WRONLY);
		if (fd < 0 || write(fd, g_old_max, strlen(g_old_max)) < 0)
			die("restoring max_timers: %s", strerror(errno));
		close(fd);
	}
	printf("# ops:");
	for (i = 0; i < sizeof(g_names) / sizeof(g_names[0]); i++)
		printf(" %s %lu%s", g_names[i], g_hist[i],
		       i + 1 < sizeof(g_names) / sizeof(g_names[0]) ? "," : "\n");
	printf("twheel_fuzz: ok: %llu ops in %.1f s, seed %llu\n",
	       (unsigned long long)g_op, (double)(now_ns() - t0) / 1e9,
	       (unsigned long long)g_seed);
	return 0;
}
