// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_torture: torture test of twheel's in-kernel API.
 *
 * Run by tests/vm/guest/run.sh (make check, make torture, make
 * kcsan), usually while tests/userspace/twheel_torture hammers /dev/twheel.
 * Everything happens in module init, which returns when the run is over:
 * 0 if every check passed, -EIO if one failed (the kernel log says which).
 *
 * run_s=N      for N seconds, one kthread per possible CPU arms, moves,
 *              cancels and cancel_syncs timers of its own at random: one-shot
 *              ones (softirq and process context, some re-arming themselves
 *              from their callback), fixed-rate and fixed-delay periodic
 *              ones, with delays across every wheel level, pinned to random
 *              CPUs, from process context and with interrupts or bottom
 *              halves off.
 * onoff_ms=M   meanwhile a kthread takes a random CPU (not CPU 0) offline or
 *              online every M ms on average, with remove_cpu()/add_cpu()
 *              (the torture_onoff pattern of kernel/torture.c), and brings
 *              every CPU back at the end.
 * pending=N    after the run, arm N timers (most far in the future, a few
 *              periodic ones firing) and leave them armed: module exit shuts
 *              them down and checks that all N were still pending. For the
 *              module lifetime tests.
 * api_check=1  count the fault-injection points the API reaches (failslab
 *              and friends, through current->fail_nth): none is expected,
 *              twheel never allocates on those paths.
 * shutdown_race=N  N rounds of: shut a group down while its periodic timer
 *              (on another CPU) is at the end of a slow callback; every
 *              round must count that timer as pending.
 * kcsan_canary=1  a planted data race (plain accesses to one variable from
 *              two kthreads, in tt_canary_*()) for up to two seconds: on a
 *              KCSAN kernel, tests/vm/kcsan.sh requires it to be reported,
 *              or its "no race" would mean nothing.
 *
 * The checks:
 *  - A one-shot arming ends exactly once: its callback runs or the cancel
 *    that stopped it returns true, never both and never neither. Every
 *    arming that starts (twheel_arm() returning 0; 1 means a pending one
 *    moved) is counted, and at every quiescent point (twheel_cancel_sync()
 *    or twheel_group_cancel_sync() returned) armed == fired + cancelled.
 *  - Never early: a one-shot callback runs at or after the lowest deadline
 *    that may be the one firing (a "floor" that the arming thread keeps
 *    exact whenever no callback can be in flight); a periodic callback at or
 *    after its own deadline.
 *  - Fixed rate: each deadline is on the grid first + k * period, and the
 *    expiries counted so far plus the overruns passed to the callback equal
 *    the periods elapsed up to that deadline, exactly. At cancel time the
 *    count never exceeds the periods elapsed. Fixed delay: each deadline is
 *    at least one period after the end of the previous callback, and
 *    missed is always 0.
 *  - After the run every timer is idle and the CPUs are all back online.
 *
 *  - In a callback, twheel_deadline() is the deadline of the expiry being
 *    run, even when the timer was re-armed meanwhile: never after the
 *    time the callback runs, never below the floor. This holds for
 *    process-context callbacks too, whose work may be queued for a while
 *    and see the timer re-armed before it runs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bottom_half.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "../twheel.h"

static unsigned int run_s;
module_param(run_s, uint, 0444);
MODULE_PARM_DESC(run_s, "Seconds of torture in module init (0: none)");

static unsigned int onoff_ms;
module_param(onoff_ms, uint, 0444);
MODULE_PARM_DESC(onoff_ms, "Mean ms between CPU offline/online operations (0: no hotplug)");

static unsigned int slots = 48;
module_param(slots, uint, 0444);
MODULE_PARM_DESC(slots, "Timers per thread, 8..4096 (default 48)");

static unsigned int pending;
module_param(pending, uint, 0444);
MODULE_PARM_DESC(pending, "Timers left armed after init, shut down at exit");

static bool api_check;
module_param(api_check, bool, 0444);
MODULE_PARM_DESC(api_check, "Count fault-injection points reached by the API");

static unsigned int shutdown_race;
module_param(shutdown_race, uint, 0444);
MODULE_PARM_DESC(shutdown_race, "Rounds of group shutdown racing a periodic callback");

static bool kcsan_canary;
module_param(kcsan_canary, bool, 0444);
MODULE_PARM_DESC(kcsan_canary, "Plant a data race for KCSAN to find");

static ulong seed;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "Seed of the random choices (0: random)");

/* Kinds of slot; a slot keeps its kind for the whole run. */
enum tt_kind {
	TT_ONESHOT,		/* softirq callback */
	TT_ONESHOT_WORK,	/* process-context callback */
	TT_REARM,		/* one-shot that re-arms itself a few times */
	TT_RATE,		/* fixed-rate periodic */
	TT_DELAY,		/* fixed-delay periodic, process context */
	TT_NR_KINDS,
};

#define TT_MAX_ERRORS_SHOWN	20
#define TT_FLOOR_NONE		KTIME_MAX

struct tt_thread;

/**
 * struct tt_slot - one timer of a torture thread, and its accounting
 * @wt: the timer, for the process-context kinds
 * @pt: the timer, for TT_RATE (@pt.timer is @wt.timer)
 * @member: its link in the thread's group
 * @th: the owning thread; only it arms and cancels, except that TT_REARM
 *	callbacks arm their own timer and periodic callbacks may cancel it
 * @kind: enum tt_kind
 * @armed: armings that started (twheel_arm() returned 0)
 * @fired: one-shot callbacks run
 * @cancelled: twheel_cancel*() calls that returned true
 * @floor: the lowest deadline any in-flight or pending arming may have
 * @rearm_left: TT_REARM: re-armings its callback may still do
 * @stopping: TT_REARM: the owner is about to quiesce, do not re-arm
 * @first: periodic: the first deadline; constant while @live
 * @period: periodic: the period; constant while @live
 * @count: periodic: expiries plus overruns since the arming
 * @last_end: TT_DELAY: when the previous callback ended, 0 if none yet
 * @live: periodic: armed and not quiesced yet (owner only)
 * @owner_cancelled: periodic: the owner's cancel returned true (owner only)
 * @self_cancelled: periodic: the callback cancelled its own timer
 * @precise: armed with slack 0 (the precise stage); constant
 */
struct tt_slot {
	union {
		struct twheel_work_timer	wt;
		struct twheel_periodic_timer	pt;
	};
	struct twheel_group_member member;
	struct tt_thread	*th;
	enum tt_kind		kind;
	atomic64_t		armed;
	atomic64_t		fired;
	atomic64_t		cancelled;
	atomic64_t		floor;
	atomic_t		rearm_left;
	bool			stopping;
	u64			first;
	u64			period;
	atomic64_t		count;
	u64			last_end;
	bool			live;
	bool			owner_cancelled;
	bool			self_cancelled;
	bool			precise;
};

/**
 * struct tt_thread - one torture kthread and its timers
 * @task: the kthread
 * @cpu: the CPU it prefers to run on
 * @rnd: its random state
 * @group: all its timers
 * @slots: @nslots timers
 * @nslots: how many
 * @ops: operations done
 * @quiesced: quiescent-point checks done
 */
struct tt_thread {
	struct task_struct	*task;
	int			cpu;
	struct rnd_state	rnd;
	struct twheel_group	group;
	struct tt_slot		*slots;
	unsigned int		nslots;
	u64			ops;
	u64			quiesced;
};

/* Totals, updated from every context. */
static struct {
	atomic64_t	ops;
	atomic64_t	armed;
	atomic64_t	moved;
	atomic64_t	fired;
	atomic64_t	cancelled;
	atomic64_t	periodic_runs;
	atomic64_t	precise_runs;
	atomic64_t	hardirq_runs;
	atomic64_t	overruns;
	atomic64_t	quiesced;
	atomic64_t	group_cancels;
	atomic64_t	errors;
	atomic64_t	early;
	atomic64_t	lost;
	atomic64_t	doubled;
	atomic64_t	max_lag_periods;
	atomic_t	offline;
	atomic_t	online;
	atomic_t	onoff_failed;
} tt;

static struct tt_thread *tt_threads;
static struct task_struct *tt_onoff_task;
static struct rnd_state tt_onoff_rnd;

/* pending=N: the timers left armed. */
static struct twheel_group tt_pending_group;
/* Each a periodic-capable timer and its group link. */
struct tt_pending_timer {
	struct twheel_periodic_timer	pt;
	struct twheel_group_member	member;
};

static struct tt_pending_timer *tt_pending_timers;
static unsigned int tt_pending_armed;

#define tt_err(fmt, ...)						\
	do {								\
		if (atomic64_inc_return(&tt.errors) <= TT_MAX_ERRORS_SHOWN) \
			pr_err("FAIL: " fmt "\n", ##__VA_ARGS__);	\
	} while (0)

static u32 tt_rand(struct rnd_state *rnd, u32 n)
{
	return n ? prandom_u32_state(rnd) % n : 0;
}

static void tt_max64(atomic64_t *v, s64 x)
{
	s64 old = atomic64_read(v);

	while (x > old && !atomic64_try_cmpxchg(v, &old, x))
		;
}

static void tt_floor_min(struct tt_slot *s, s64 d)
{
	s64 old = atomic64_read(&s->floor);

	while (d < old && !atomic64_try_cmpxchg(&s->floor, &old, d))
		;
}

static struct tt_slot *tt_slot_of(struct twheel_timer *t)
{
	return container_of(t, struct tt_slot, wt.timer);
}

static unsigned int tt_slot_index(const struct tt_slot *s)
{
	return s - s->th->slots;
}

/*
 * A delay somewhere in the wheel: mostly ones that fire during a run
 * (levels 0 and 1), some on levels 2-4 and beyond that are cancelled long
 * before they are due but move between levels and CPUs meanwhile.
 */
static u64 tt_delay(struct rnd_state *rnd)
{
	u32 r = tt_rand(rnd, 100);

	if (r < 8)
		return 0;
	if (r < 25)
		return tt_rand(rnd, 2 * NSEC_PER_MSEC);
	if (r < 60)
		return tt_rand(rnd, 64 * NSEC_PER_MSEC);
	if (r < 85)
		return 64 * NSEC_PER_MSEC + tt_rand(rnd, 4000) * (u64)NSEC_PER_MSEC;
	if (r < 93)
		return 4 * NSEC_PER_SEC + tt_rand(rnd, 260) * (u64)NSEC_PER_SEC;
	if (r < 97)
		return 260 * NSEC_PER_SEC + tt_rand(rnd, 5 * 3600) * (u64)NSEC_PER_SEC;
	return (u64)tt_rand(rnd, 400 * 24) * 3600 * NSEC_PER_SEC;
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

static void tt_oneshot_fn(struct tt_slot *s, struct twheel_timer *t,
			  u64 missed, ktime_t now)
{
	s64 floor = atomic64_read(&s->floor);
	ktime_t dl = twheel_deadline(t);
	u64 delay;
	int ret;

	if (now < floor) {
		atomic64_inc(&tt.early);
		tt_err("cpu %d slot %u: one-shot fired %lld ns early (floor %lld)",
		       s->th->cpu, tt_slot_index(s), floor - now, floor);
	} else if (now < dl || dl < floor) {
		tt_err("cpu %d slot %u: twheel_deadline() in the callback is %lld, now %lld, floor %lld",
		       s->th->cpu, tt_slot_index(s), dl, now, floor);
	}
	if (missed)
		tt_err("cpu %d slot %u: one-shot callback got missed=%llu",
		       s->th->cpu, tt_slot_index(s), missed);
	/* Full barrier: the checks above happen before the owner sees this. */
	atomic64_inc_return(&s->fired);
	atomic64_inc(&tt.fired);

	if (s->kind != TT_REARM || READ_ONCE(s->stopping) ||
	    atomic_dec_if_positive(&s->rearm_left) < 0)
		return;
	/*
	 * get_random_u32() takes a local lock, a sleeping one on
	 * PREEMPT_RT: not from a TWHEEL_F_HARDIRQ callback, which hashes
	 * the clock instead.
	 */
	if (t->flags & TWHEEL_F_HARDIRQ)
		delay = (u32)(now * 2654435761ULL >> 16) % (3 * NSEC_PER_MSEC);
	else
		delay = get_random_u32_below(3 * NSEC_PER_MSEC);
	tt_floor_min(s, now + delay);
	atomic64_inc(&s->armed);
	ret = twheel_schedule(t, delay);
	if (ret == 1) {
		atomic64_dec(&s->armed);	/* the owner armed it meanwhile */
		atomic64_inc(&tt.moved);
	} else if (ret < 0) {
		atomic64_dec(&s->armed);
		tt_err("cpu %d slot %u: re-arming from the callback: %d",
		       s->th->cpu, tt_slot_index(s), ret);
	} else {
		atomic64_inc(&tt.armed);
	}
}

static void tt_rate_fn(struct tt_slot *s, struct twheel_timer *t, u64 missed,
		       ktime_t now)
{
	ktime_t dl = twheel_deadline(t);
	u64 k, rem, before;

	if (now < dl) {
		atomic64_inc(&tt.early);
		tt_err("cpu %d slot %u: fixed-rate expiry %lld ns early",
		       s->th->cpu, tt_slot_index(s), dl - now);
	}
	if (dl < s->first) {
		tt_err("cpu %d slot %u: deadline %lld before the first %llu",
		       s->th->cpu, tt_slot_index(s), dl, s->first);
		return;
	}
	k = div64_u64_rem(dl - s->first, s->period, &rem);
	before = atomic64_fetch_add(1 + missed, &s->count);
	if (rem || before != k)
		tt_err("cpu %d slot %u: fixed rate: deadline first+%llu*period+%llu, %llu expiries+overruns before it",
		       s->th->cpu, tt_slot_index(s), k, rem, before);
	if (now >= dl && missed > div64_u64(now - dl, s->period))
		tt_err("cpu %d slot %u: missed=%llu but only %llu periods late",
		       s->th->cpu, tt_slot_index(s), missed,
		       div64_u64(now - dl, s->period));
	atomic64_add(missed, &tt.overruns);
}

static void tt_delay_fn(struct tt_slot *s, struct twheel_timer *t, u64 missed,
			ktime_t now)
{
	ktime_t dl = twheel_deadline(t);

	if (now < dl) {
		atomic64_inc(&tt.early);
		tt_err("cpu %d slot %u: fixed-delay expiry %lld ns early",
		       s->th->cpu, tt_slot_index(s), dl - now);
	}
	if (missed)
		tt_err("cpu %d slot %u: fixed-delay callback got missed=%llu",
		       s->th->cpu, tt_slot_index(s), missed);
	if (!s->last_end ? dl != s->first : dl < s->last_end + s->period)
		tt_err("cpu %d slot %u: fixed delay: deadline %lld, previous end %llu, period %llu",
		       s->th->cpu, tt_slot_index(s), dl, s->last_end, s->period);
	atomic64_inc(&s->count);
	/* An occasional slow callback: it may sleep. */
	if (!get_random_u32_below(16))
		usleep_range(50, 200);
}

static void tt_fn(struct twheel_timer *t, u64 missed)
{
	struct tt_slot *s = tt_slot_of(t);
	ktime_t now = ktime_get();

	if (s->precise) {
		atomic64_inc(&tt.precise_runs);
		if (in_hardirq())
			atomic64_inc(&tt.hardirq_runs);
	}
	if (in_hardirq() && !(t->flags & TWHEEL_F_HARDIRQ))
		tt_err("slot %u: callback in hard interrupt context without TWHEEL_F_HARDIRQ",
		       tt_slot_index(s));
	switch (s->kind) {
	case TT_ONESHOT:
	case TT_ONESHOT_WORK:
	case TT_REARM:
		tt_oneshot_fn(s, t, missed, now);
		if (s->kind == TT_ONESHOT_WORK && !get_random_u32_below(16))
			usleep_range(50, 200);
		return;
	case TT_RATE:
		tt_rate_fn(s, t, missed, now);
		break;
	case TT_DELAY:
		tt_delay_fn(s, t, missed, now);
		break;
	default:
		tt_err("slot of unknown kind %d", s->kind);
		return;
	}
	atomic64_inc(&tt.periodic_runs);
	/* Now and then a periodic timer stops itself. */
	if (!get_random_u32_below(64) && twheel_cancel(t)) {
		WRITE_ONCE(s->self_cancelled, true);
		atomic64_inc(&s->cancelled);
	}
	if (s->kind == TT_DELAY)
		s->last_end = ktime_get();
}

/* ------------------------------------------------------------------ */
/* Operations of the torture threads                                   */
/* ------------------------------------------------------------------ */

enum tt_ctx { TT_CTX_TASK, TT_CTX_IRQOFF, TT_CTX_BHOFF };

static enum tt_ctx tt_pick_ctx(struct tt_thread *th)
{
	u32 r = tt_rand(&th->rnd, 100);

	return r < 70 ? TT_CTX_TASK : r < 85 ? TT_CTX_IRQOFF : TT_CTX_BHOFF;
}

static int tt_arm_in(enum tt_ctx ctx, struct twheel_timer *t, ktime_t dl,
		     u64 period, enum twheel_mode mode)
{
	unsigned long flags;
	int ret;

	switch (ctx) {
	case TT_CTX_IRQOFF:
		local_irq_save(flags);
		ret = twheel_arm(t, dl, period, mode);
		local_irq_restore(flags);
		return ret;
	case TT_CTX_BHOFF:
		local_bh_disable();
		ret = twheel_arm(t, dl, period, mode);
		local_bh_enable();
		return ret;
	default:
		return twheel_arm(t, dl, period, mode);
	}
}

static bool tt_cancel_in(enum tt_ctx ctx, struct twheel_timer *t)
{
	unsigned long flags;
	bool ret;

	switch (ctx) {
	case TT_CTX_IRQOFF:
		local_irq_save(flags);
		ret = twheel_cancel(t);
		local_irq_restore(flags);
		return ret;
	case TT_CTX_BHOFF:
		local_bh_disable();
		ret = twheel_cancel(t);
		local_bh_enable();
		return ret;
	default:
		return twheel_cancel(t);
	}
}

static s64 tt_outstanding(struct tt_slot *s)
{
	/* Acquire: pairs with the full barrier of the callback's increment. */
	s64 fired = atomic64_read_acquire(&s->fired);

	return atomic64_read(&s->armed) - fired - atomic64_read(&s->cancelled);
}

/* A one-shot slot is quiescent: check and resynchronise its accounting. */
static void tt_oneshot_quiesced(struct tt_thread *th, struct tt_slot *s)
{
	s64 out = tt_outstanding(s);

	th->quiesced++;
	if (out) {
		if (out > 0)
			atomic64_add(out, &tt.lost);
		else
			atomic64_add(-out, &tt.doubled);
		tt_err("cpu %d slot %u: %lld armed, %lld fired, %lld cancelled: %s",
		       th->cpu, tt_slot_index(s), atomic64_read(&s->armed),
		       atomic64_read(&s->fired), atomic64_read(&s->cancelled),
		       out > 0 ? "an arming neither fired nor was cancelled" :
				 "an arming both fired and was cancelled");
		atomic64_set(&s->armed, atomic64_read(&s->fired) +
			     atomic64_read(&s->cancelled));
	}
	atomic64_set(&s->floor, TT_FLOOR_NONE);
}

static void tt_oneshot_arm(struct tt_thread *th, struct tt_slot *s)
{
	enum tt_ctx ctx = tt_pick_ctx(th);
	s64 out = tt_outstanding(s);
	ktime_t now = ktime_get(), dl;
	u64 delay = tt_delay(&th->rnd);
	int ret;

	/* Now and then a deadline in the past: due at once. */
	if (!tt_rand(&th->rnd, 20) && now > NSEC_PER_SEC)
		dl = now - tt_rand(&th->rnd, NSEC_PER_SEC);
	else
		dl = now + delay;
	if (s->kind == TT_REARM)
		atomic_set(&s->rearm_left, tt_rand(&th->rnd, 4));

	/*
	 * No callback can be on its way (none is pending, every one that
	 * fired has done its checks): the floor is exactly this deadline.
	 */
	if (!out && s->kind != TT_REARM)
		atomic64_set(&s->floor, dl);
	else
		tt_floor_min(s, dl);

	atomic64_inc(&s->armed);
	ret = tt_arm_in(ctx, &s->wt.timer, dl, 0, TWHEEL_ONESHOT);
	if (ret == 1) {
		/* A pending arming moved: it will not fire, this one will. */
		atomic64_dec(&s->armed);
		atomic64_inc(&tt.moved);
		if (out == 1 && s->kind != TT_REARM)
			atomic64_set(&s->floor, dl);
	} else if (ret < 0) {
		atomic64_dec(&s->armed);
		tt_err("cpu %d slot %u: twheel_arm: %d", th->cpu,
		       tt_slot_index(s), ret);
	} else {
		atomic64_inc(&tt.armed);
	}
}

static void tt_oneshot_op(struct tt_thread *th, struct tt_slot *s)
{
	u32 r = tt_rand(&th->rnd, 100);
	bool ret;

	if (r < 50) {
		tt_oneshot_arm(th, s);
	} else if (r < 75) {
		if (tt_cancel_in(tt_pick_ctx(th), &s->wt.timer)) {
			atomic64_inc(&s->cancelled);
			atomic64_inc(&tt.cancelled);
		}
	} else if (r < 95) {
		WRITE_ONCE(s->stopping, true);
		ret = twheel_cancel_sync(&s->wt.timer);
		if (ret) {
			atomic64_inc(&s->cancelled);
			atomic64_inc(&tt.cancelled);
		}
		if (twheel_pending(&s->wt.timer))
			tt_err("cpu %d slot %u: pending after twheel_cancel_sync()",
			       th->cpu, tt_slot_index(s));
		tt_oneshot_quiesced(th, s);
		WRITE_ONCE(s->stopping, false);
	} else {
		/* Next arming on another CPU, maybe an offline one. */
		int cpu = tt_rand(&th->rnd, nr_cpu_ids);

		if (!cpu_possible(cpu) || !tt_rand(&th->rnd, 4))
			cpu = TWHEEL_ANY_CPU;
		if (twheel_timer_set_cpu(&s->wt.timer, cpu))
			tt_err("twheel_timer_set_cpu refused cpu %d", cpu);
	}
}

static u64 tt_periods(const struct tt_slot *s, ktime_t t)
{
	return t < (ktime_t)s->first ? 0 :
	       div64_u64(t - s->first, s->period) + 1;
}

/*
 * A periodic slot is quiescent: each expiry counted had its deadline
 * before it ran, and so before now, hence never more expiries plus
 * overruns than periods elapsed now. If it was still @running until this
 * cancel, @before (taken before the cancel) measures how far behind the
 * callbacks were.
 */
static void tt_periodic_quiesced(struct tt_thread *th, struct tt_slot *s,
				 ktime_t before, bool running)
{
	u64 count = atomic64_read(&s->count);
	u64 elapsed = tt_periods(s, ktime_get());

	th->quiesced++;
	if (count > elapsed)
		tt_err("cpu %d slot %u: %s: %llu expiries+overruns, only %llu periods elapsed",
		       th->cpu, tt_slot_index(s),
		       s->kind == TT_RATE ? "fixed rate" : "fixed delay",
		       count, elapsed);
	else if (running && s->kind == TT_RATE && tt_periods(s, before) > count)
		tt_max64(&tt.max_lag_periods, tt_periods(s, before) - count);
	s->live = false;
}

static void tt_periodic_op(struct tt_thread *th, struct tt_slot *s)
{
	enum twheel_mode mode = s->kind == TT_RATE ? TWHEEL_FIXED_RATE :
						     TWHEEL_FIXED_DELAY;
	u32 r = tt_rand(&th->rnd, 100);
	bool running;
	ktime_t now;
	int ret;

	if (!s->live) {
		/* Quiescent: nobody reads these until the arming below. */
		s->first = ktime_get() + tt_rand(&th->rnd, 50 * NSEC_PER_MSEC);
		s->period = NSEC_PER_MSEC / 4 +
			    tt_rand(&th->rnd, 40 * NSEC_PER_MSEC);
		atomic64_set(&s->count, 0);
		s->last_end = 0;
		s->owner_cancelled = false;
		WRITE_ONCE(s->self_cancelled, false);
		s->live = true;
		ret = tt_arm_in(tt_pick_ctx(th), &s->wt.timer, s->first,
				s->period, mode);
		if (ret) {
			tt_err("cpu %d slot %u: arming an idle periodic timer: %d",
			       th->cpu, tt_slot_index(s), ret);
			s->live = false;
		} else {
			atomic64_inc(&tt.armed);
		}
		return;
	}
	if (r < 60)
		return;		/* let it run */
	if (r < 75) {
		if (tt_cancel_in(tt_pick_ctx(th), &s->wt.timer)) {
			s->owner_cancelled = true;
			atomic64_inc(&s->cancelled);
			atomic64_inc(&tt.cancelled);
		}
		return;
	}
	now = ktime_get();
	running = twheel_cancel_sync(&s->wt.timer);
	if (running) {
		s->owner_cancelled = true;
		atomic64_inc(&s->cancelled);
		atomic64_inc(&tt.cancelled);
	}
	tt_periodic_quiesced(th, s, now, running);
}

/* Cancel every timer of the thread at once and check each slot. */
static void tt_group_quiesce(struct tt_thread *th)
{
	unsigned int i, n, expect = 0;
	ktime_t now;

	for (i = 0; i < th->nslots; i++)
		WRITE_ONCE(th->slots[i].stopping, true);
	now = ktime_get();
	n = twheel_group_cancel_sync(&th->group);
	atomic64_inc(&tt.group_cancels);
	for (i = 0; i < th->nslots; i++) {
		struct tt_slot *s = &th->slots[i];
		s64 out;

		if (s->kind == TT_RATE || s->kind == TT_DELAY) {
			bool running;

			if (!s->live)
				continue;
			running = !s->owner_cancelled &&
				  !READ_ONCE(s->self_cancelled);
			expect += running;
			tt_periodic_quiesced(th, s, now, running);
			continue;
		}
		out = tt_outstanding(s);
		if (out >= 1) {
			/*
			 * The group cancel stopped it; and a second arming
			 * if its callback, running then, re-armed it before
			 * it saw @stopping (the group cancels that one too).
			 */
			expect += out;
			atomic64_add(out, &s->cancelled);
			atomic64_add(out, &tt.cancelled);
		}
		tt_oneshot_quiesced(th, s);
		WRITE_ONCE(s->stopping, false);
	}
	if (n != expect)
		tt_err("cpu %d: twheel_group_cancel_sync() stopped %u timers, %u were pending",
		       th->cpu, n, expect);
}

static void tt_step(struct tt_thread *th)
{
	struct tt_slot *s;

	if (!tt_rand(&th->rnd, 500)) {
		tt_group_quiesce(th);
		return;
	}
	s = &th->slots[tt_rand(&th->rnd, th->nslots)];
	if (s->kind == TT_RATE || s->kind == TT_DELAY)
		tt_periodic_op(th, s);
	else
		tt_oneshot_op(th, s);
}

/*
 * Go home, or somewhere else; hotplug may have moved us. Only to a CPU that
 * is online, with hotplug held off meanwhile. On the PREEMPT_RT debug
 * kernel (6.12-rt), changing our affinity while a CPU went down tripped
 * the scheduler's own WARN in affine_move_task() at a later
 * migrate_enable() (local_bh_enable()), within a second, in every run we made;
 * under cpus_read_lock() it does not. The races this torture is after are
 * twheel's with hotplug, not the scheduler's.
 */
static void tt_move(struct tt_thread *th)
{
	unsigned int cpu = th->cpu;

	if (!tt_rand(&th->rnd, 8))
		cpu = tt_rand(&th->rnd, nr_cpu_ids);
	cpus_read_lock();
	if (cpu_online(cpu))
		set_cpus_allowed_ptr(current, cpumask_of(cpu));
	cpus_read_unlock();
}

static int tt_thread_fn(void *arg)
{
	struct tt_thread *th = arg;

	while (!kthread_should_stop()) {
		tt_step(th);
		th->ops++;
		if (th->ops % 64)
			continue;
		tt_move(th);
		/* Leave time for expiries: a short nap now and then. */
		if (!tt_rand(&th->rnd, 4))
			usleep_range(100, 2000);
		cond_resched();
	}
	/* The end: everything stops, every slot is checked once more. */
	tt_group_quiesce(th);
	atomic64_add(th->ops, &tt.ops);
	atomic64_add(th->quiesced, &tt.quiesced);
	return 0;
}

/* ------------------------------------------------------------------ */
/* CPU hotplug                                                         */
/* ------------------------------------------------------------------ */

static int tt_onoff_fn(void *arg)
{
	unsigned int cpu;
	int ret;

	while (!kthread_should_stop()) {
		cpu = 1 + tt_rand(&tt_onoff_rnd, nr_cpu_ids - 1);
		if (cpu < nr_cpu_ids && cpu_possible(cpu)) {
			if (cpu_online(cpu)) {
				ret = remove_cpu(cpu);
				atomic_inc(ret ? &tt.onoff_failed : &tt.offline);
			} else {
				ret = add_cpu(cpu);
				atomic_inc(ret ? &tt.onoff_failed : &tt.online);
			}
		}
		schedule_timeout_interruptible(msecs_to_jiffies(onoff_ms / 2 +
					       tt_rand(&tt_onoff_rnd, onoff_ms + 1)));
	}
	return 0;
}

static void tt_all_cpus_online(void)
{
	unsigned int cpu;
	int ret;

	for_each_possible_cpu(cpu) {
		if (cpu_online(cpu))
			continue;
		ret = add_cpu(cpu);
		if (ret)
			tt_err("cannot bring cpu %u back online: %d", cpu, ret);
		else
			atomic_inc(&tt.online);
	}
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

static void tt_free_threads(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		/* Every slot is idle: the threads quiesced them. */
		twheel_group_shutdown_sync(&tt_threads[i].group);
		kfree(tt_threads[i].slots);
	}
	kfree(tt_threads);
	tt_threads = NULL;
}

static int tt_init_thread(struct tt_thread *th, int cpu, u64 s)
{
	unsigned int i;

	th->cpu = cpu;
	th->nslots = clamp(slots, 8u, 4096u);
	prandom_seed_state(&th->rnd, s + cpu);
	twheel_group_init(&th->group);
	th->slots = kcalloc(th->nslots, sizeof(*th->slots), GFP_KERNEL);
	if (!th->slots)
		return -ENOMEM;
	for (i = 0; i < th->nslots; i++) {
		struct tt_slot *sl = &th->slots[i];

		sl->th = th;
		sl->kind = i % TT_NR_KINDS;
		/*
		 * A quarter of each kind is precise (slack 0), and half of
		 * the plain one-shots among those may fire in hard interrupt
		 * context (TWHEEL_F_HARDIRQ): the precise stage's heaps and
		 * the hard hrtimer race the same operations as the wheel.
		 */
		sl->precise = (i / TT_NR_KINDS) % 4 == 1;
		if (sl->kind == TT_ONESHOT_WORK || sl->kind == TT_DELAY)
			twheel_work_timer_init(&sl->wt, tt_fn);
		else if (sl->kind == TT_RATE)
			twheel_periodic_timer_init(&sl->pt, tt_fn);
		else
			twheel_timer_init(&sl->wt.timer, tt_fn,
					  sl->precise && (i / TT_NR_KINDS) % 8 == 1 ?
					  TWHEEL_F_HARDIRQ : 0);
		if (sl->precise)
			twheel_timer_set_slack(&sl->wt.timer, 0);
		atomic64_set(&sl->floor, TT_FLOOR_NONE);
		if (twheel_group_add(&th->group, &sl->member, &sl->wt.timer))
			return -EINVAL;
	}
	return 0;
}

static int tt_run(u64 s)
{
	unsigned int nthreads = 0, i;
	unsigned long end;
	int cpu, ret = 0;

	tt_threads = kcalloc(num_possible_cpus(), sizeof(*tt_threads),
			     GFP_KERNEL);
	if (!tt_threads)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct tt_thread *th = &tt_threads[nthreads];

		ret = tt_init_thread(th, cpu, s);
		nthreads++;
		if (ret)
			goto out_free;
	}
	for (i = 0; i < nthreads; i++) {
		struct tt_thread *th = &tt_threads[i];

		th->task = kthread_create(tt_thread_fn, th, "twheel_torture/%d",
					  th->cpu);
		if (IS_ERR(th->task)) {
			ret = PTR_ERR(th->task);
			th->task = NULL;
			goto out_stop;
		}
		if (cpu_online(th->cpu))
			set_cpus_allowed_ptr(th->task, cpumask_of(th->cpu));
		wake_up_process(th->task);
	}
	if (onoff_ms && num_possible_cpus() > 1) {
		prandom_seed_state(&tt_onoff_rnd, s ^ 0x6f6e6f6666ULL);
		tt_onoff_task = kthread_run(tt_onoff_fn, NULL,
					    "twheel_torture_onoff");
		if (IS_ERR(tt_onoff_task)) {
			ret = PTR_ERR(tt_onoff_task);
			tt_onoff_task = NULL;
			goto out_stop;
		}
	}

	pr_info("running %u s: %u threads of %u timers, cpu hotplug %s\n",
		run_s, nthreads, tt_threads[0].nslots,
		tt_onoff_task ? "on" : "off");
	end = jiffies + (unsigned long)run_s * HZ;
	/* Interruptible: a signal (say, a timeout killing insmod) ends it. */
	while (time_before(jiffies, end))
		if (msleep_interruptible(100))
			break;

out_stop:
	if (tt_onoff_task) {
		kthread_stop(tt_onoff_task);
		tt_onoff_task = NULL;
	}
	for (i = 0; i < nthreads; i++)
		if (tt_threads[i].task)
			kthread_stop(tt_threads[i].task);
	tt_all_cpus_online();
out_free:
	tt_free_threads(nthreads);
	return ret;
}

static void tt_report(void)
{
	pr_info("%lld ops: %lld armings (%lld moved while pending), %lld one-shot expiries, %lld cancelled, %lld periodic expiries with %lld overruns, %lld quiescent checks, %lld group cancels\n",
		atomic64_read(&tt.ops), atomic64_read(&tt.armed),
		atomic64_read(&tt.moved), atomic64_read(&tt.fired),
		atomic64_read(&tt.cancelled),
		atomic64_read(&tt.periodic_runs),
		atomic64_read(&tt.overruns), atomic64_read(&tt.quiesced),
		atomic64_read(&tt.group_cancels));
	pr_info("precise (slack 0): %lld expiries, %lld in hard interrupt context\n",
		atomic64_read(&tt.precise_runs),
		atomic64_read(&tt.hardirq_runs));
	pr_info("cpu hotplug: %d offline, %d online, %d refused\n",
		atomic_read(&tt.offline), atomic_read(&tt.online),
		atomic_read(&tt.onoff_failed));
	pr_info("early %lld, lost %lld, double %lld, errors %lld; max fixed-rate lag %lld periods\n",
		atomic64_read(&tt.early), atomic64_read(&tt.lost),
		atomic64_read(&tt.doubled), atomic64_read(&tt.errors),
		atomic64_read(&tt.max_lag_periods));
}

/* ------------------------------------------------------------------ */
/* api_check: does the API reach fault-injection points?               */
/* ------------------------------------------------------------------ */

#ifdef CONFIG_FAULT_INJECTION
static void tt_nop_fn(struct twheel_timer *t, u64 missed)
{
}

/* Fault points reached since the last call (fail_nth counts down). */
static unsigned int tt_points(unsigned int *mark)
{
	unsigned int now = READ_ONCE(current->fail_nth), n = *mark - now;

	*mark = now;
	return n;
}

static int tt_api_check(void)
{
	struct twheel_periodic_timer *pt;
	struct twheel_group_member member;
	struct twheel_work_timer *wt;
	struct twheel_timer *t;
	struct twheel_group *g;
	unsigned int mark = 1U << 30, calls = 0, points = 0;
	int ret = 0;

	pt = kzalloc(sizeof(*pt), GFP_KERNEL);
	wt = kzalloc(sizeof(*wt), GFP_KERNEL);
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!pt || !wt || !g) {
		ret = -ENOMEM;
		goto out;
	}

	/* Far from 0: nothing fails, every point only counts down. */
	WRITE_ONCE(current->fail_nth, mark);
#define TT_CALL(expr) do { expr; calls++; points += tt_points(&mark); } while (0)
	t = &pt->timer;
	TT_CALL(twheel_periodic_timer_init(pt, tt_nop_fn));
	TT_CALL(twheel_group_init(g));
	TT_CALL(twheel_group_add(g, &member, t));
	TT_CALL(twheel_timer_set_cpu(t, 0));
	TT_CALL(twheel_schedule(t, 3600 * NSEC_PER_SEC));
	TT_CALL(twheel_arm(t, ktime_get() + NSEC_PER_SEC, NSEC_PER_SEC,
			   TWHEEL_FIXED_RATE));
	TT_CALL(twheel_schedule_at(t, ktime_get() + NSEC_PER_SEC));
	TT_CALL(twheel_pending(t));
	TT_CALL(twheel_deadline(t));
	TT_CALL(twheel_granularity());
	TT_CALL(twheel_cancel(t));
	TT_CALL(twheel_schedule(t, 0));
	TT_CALL(twheel_cancel_sync(t));
	TT_CALL(twheel_timer_set_cpu(t, TWHEEL_ANY_CPU));
	TT_CALL(twheel_schedule(t, NSEC_PER_MSEC));
	TT_CALL(twheel_group_cancel_sync(g));
	TT_CALL(twheel_group_del(g, &member));
	TT_CALL(twheel_shutdown_sync(t));
	TT_CALL(twheel_group_shutdown_sync(g));
	/*
	 * Process-context timers: INIT_WORK() and queue_work() may refill
	 * the debugobjects pool (an allocation that is not twheel's);
	 * reported separately.
	 */
	pr_info("api: %u fault-injection points in %u calls of the softirq-timer API\n",
		points, calls);
	if (points) {
		tt_err("the in-kernel API reached %u fault-injection points", points);
		ret = -EIO;
	}
	points = 0;
	calls = 0;
	TT_CALL(twheel_work_timer_init(wt, tt_nop_fn));
	TT_CALL(twheel_schedule(&wt->timer, 0));
	msleep(20);
	TT_CALL(twheel_cancel_sync(&wt->timer));
	TT_CALL(twheel_arm(&wt->timer, ktime_get(), NSEC_PER_MSEC,
			   TWHEEL_FIXED_DELAY));
	msleep(20);
	TT_CALL(twheel_shutdown_sync(&wt->timer));
#undef TT_CALL
	WRITE_ONCE(current->fail_nth, 0);
	pr_info("api: %u fault-injection points in %u calls with a process-context timer (debugobjects)\n",
		points, calls);
out:
	kfree(g);
	kfree(wt);
	kfree(pt);
	return ret;
}
#else
static int tt_api_check(void)
{
	pr_info("api: no CONFIG_FAULT_INJECTION, nothing to count\n");
	return 0;
}
#endif

/* ------------------------------------------------------------------ */
/* shutdown_race=N                                                     */
/* ------------------------------------------------------------------ */

struct tt_race {
	struct twheel_periodic_timer	pt;
	struct twheel_group_member	member;
	struct twheel_group	g;
	atomic_t		runs;
};

/* A slow periodic callback; softirq context, so it busy-waits. */
#define TT_RACE_CALLBACK_US	200

static void tt_race_fn(struct twheel_timer *t, u64 missed)
{
	struct tt_race *r = container_of(t, struct tt_race, pt.timer);

	atomic_inc(&r->runs);
	udelay(TT_RACE_CALLBACK_US);
}

/*
 * twheel_group_shutdown_sync() must count a periodic timer that is pending
 * when it is called, even when its callback ends meanwhile.
 */
static int tt_shutdown_race(void)
{
	unsigned int i, bad = 0, n, cpu;
	struct tt_race *r;
	unsigned long end;
	int runs;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	for (i = 0; i < shutdown_race; i++) {
		twheel_periodic_timer_init(&r->pt, tt_race_fn);
		twheel_group_init(&r->g);
		atomic_set(&r->runs, 0);
		cpu = cpumask_next(raw_smp_processor_id(), cpu_online_mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first(cpu_online_mask);
		twheel_timer_set_cpu(&r->pt.timer, cpu);
		if (twheel_group_add(&r->g, &r->member, &r->pt.timer) ||
		    twheel_arm(&r->pt.timer, ktime_get(), NSEC_PER_MSEC / 2,
			       TWHEEL_FIXED_RATE)) {
			kfree(r);
			return -EINVAL;
		}
		/* Wait for a callback to start, then aim at its end. */
		runs = atomic_read(&r->runs);
		end = jiffies + HZ;
		while (atomic_read(&r->runs) == runs && time_before(jiffies, end))
			cpu_relax();
		udelay(150 + get_random_u32_below(100));
		n = twheel_group_shutdown_sync(&r->g);
		if (n != 1)
			bad++;
		twheel_group_del(&r->g, &r->member);
		cond_resched();
	}
	kfree(r);
	pr_info("shutdown_race: %u of %u rounds: twheel_group_shutdown_sync() missed the pending periodic timer\n",
		bad, shutdown_race);
	if (bad) {
		tt_err("twheel_group_shutdown_sync() undercounted %u times", bad);
		return -EIO;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* kcsan_canary=1                                                      */
/* ------------------------------------------------------------------ */

static unsigned long tt_canary_var;

/* Deliberately racy: plain accesses, for KCSAN to report. */
static noinline void tt_canary_write(unsigned long v)
{
	tt_canary_var = v;
}

static noinline unsigned long tt_canary_read(void)
{
	return tt_canary_var;
}

static int tt_canary_fn(void *arg)
{
	unsigned long i, sum = 0;

	for (i = 0; !kthread_should_stop(); i++) {
		if (arg)
			tt_canary_write(i);
		else
			sum += tt_canary_read();
		if (!(i % 1024))
			cond_resched();
	}
	return sum & 1;
}

static void tt_kcsan_canary(void)
{
	struct task_struct *w, *r;

	w = kthread_run(tt_canary_fn, (void *)1, "twheel_canary_w");
	r = kthread_run(tt_canary_fn, NULL, "twheel_canary_r");
	msleep(2000);
	if (!IS_ERR(w))
		kthread_stop(w);
	if (!IS_ERR(r))
		kthread_stop(r);
	pr_info("kcsan canary: planted race run for 2 s\n");
}

/* ------------------------------------------------------------------ */
/* pending=N                                                           */
/* ------------------------------------------------------------------ */

static void tt_pending_fn(struct twheel_timer *t, u64 missed)
{
}

static int tt_arm_pending(void)
{
	ktime_t now = ktime_get();
	unsigned int i;
	int ret;

	twheel_group_init(&tt_pending_group);
	tt_pending_timers = kcalloc(pending, sizeof(*tt_pending_timers),
				    GFP_KERNEL);
	if (!tt_pending_timers)
		return -ENOMEM;
	for (i = 0; i < pending; i++) {
		struct tt_pending_timer *p = &tt_pending_timers[i];
		struct twheel_timer *t = &p->pt.timer;

		twheel_periodic_timer_init(&p->pt, tt_pending_fn);
		twheel_timer_set_cpu(t, i % nr_cpu_ids);
		ret = twheel_group_add(&tt_pending_group, &p->member, t);
		if (ret)
			return ret;
		/* Most far away, every eighth a periodic one firing all along. */
		if (i % 8 == 7)
			ret = twheel_arm(t, now + NSEC_PER_MSEC, 10 * NSEC_PER_MSEC,
					 TWHEEL_FIXED_RATE);
		else
			ret = twheel_arm(t, now + (1 + i) * 60 * NSEC_PER_SEC,
					 0, TWHEEL_ONESHOT);
		if (ret)
			return ret < 0 ? ret : -EINVAL;
		tt_pending_armed++;
	}
	return 0;
}

static void tt_free_pending(void)
{
	unsigned int n;

	if (!tt_pending_timers)
		return;
	n = twheel_group_shutdown_sync(&tt_pending_group);
	if (n != tt_pending_armed)
		pr_err("FAIL: exit: %u of %u armed timers were pending\n", n,
		       tt_pending_armed);
	else if (n)
		pr_info("exit: shut down %u pending timers\n", n);
	kfree(tt_pending_timers);
	tt_pending_timers = NULL;
}

static int __init tt_init(void)
{
	u64 s = seed ? seed : get_random_u64();
	int ret = 0;

	if (api_check) {
		ret = tt_api_check();
		if (ret)
			return ret;
	}
	if (shutdown_race) {
		ret = tt_shutdown_race();
		if (ret)
			return ret;
	}
	if (kcsan_canary)
		tt_kcsan_canary();
	if (run_s) {
		pr_info("seed %llu\n", s);
		ret = tt_run(s);
		tt_report();
		if (ret) {
			pr_err("FAIL: could not run: %d\n", ret);
			return ret;
		}
		if (atomic64_read(&tt.errors)) {
			pr_err("FAIL: %lld errors\n", atomic64_read(&tt.errors));
			return -EIO;
		}
		pr_info("ok\n");
	}
	if (pending) {
		ret = tt_arm_pending();
		if (ret) {
			tt_free_pending();
			pr_err("FAIL: arming %u pending timers: %d\n", pending, ret);
			return ret;
		}
	}
	return 0;
}

static void __exit tt_exit(void)
{
	tt_free_pending();
}

module_init(tt_init);
module_exit(tt_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Torture test of twheel's in-kernel API, with CPU hotplug");
