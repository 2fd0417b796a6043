// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: per-CPU hierarchical timing wheels driven by hrtimers.
 *
 * A loadable facility of timers for kernel callers and, through
 * /dev/twheel, for userspace. Every CPU owns one hierarchical timing wheel
 * and one soft, pinned hrtimer, programmed for the wheel's next non-empty
 * bucket only. Only the owner touches its wheel, with interrupts disabled
 * and no lock. Arming and cancelling are O(1): one atomic change of the
 * timer's state word, then a link on the local wheel or an llist_add() to
 * the owner's lock-free submission list, with a kick IPI (or the courier,
 * an hrtimer on the arming CPU) when the owner must look soon. The
 * hrtimer's softirq drains that list, advances the wheel and runs the due
 * callbacks, bounded by count and by time. Timers with a slack below the
 * tick finish in a per-CPU heap, the precise stage; a slack of two ticks
 * or more files a timer for a multiple of a power of two of ticks, the
 * same instants on every CPU. A timer is movable unless pinned: armed on
 * an idle CPU (in an interrupt or a callback there), it goes to an awake
 * CPU's wheel, so that it does not wake the idle one (tw_pick_cpu()).
 *
 * Files, by concern:
 *
 *   main.c      module entry: brings up the core, then /dev/twheel
 *   this one    the per-CPU wheels' data, the state machine, arming and
 *               cancelling, the initialisers: the API's entry point
 *   submit.c    submission lists, the kick and the courier, the drain
 *   expiry.c    a wheel's run, the kick IPI, callbacks, work timers
 *   sync.c      twheel_cancel_sync(), twheel_shutdown_sync(), groups
 *   cpu.c       CPU hotplug, debugfs statistics, load and unload
 *   core.h      what those five share, and which calls which
 *   wheel.c     the pure wheel: buckets, clock, expired list (wheel.h)
 *   precise.c   the precise stage's heaps (precise.h)
 *   clock.c     timers on CLOCK_REALTIME and CLOCK_BOOTTIME
 *   chardev.c   /dev/twheel, with fd_*.c (fd.h)
 *
 * docs/design.md has the rest: Architecture, Where remote work runs,
 * Programming the hrtimer, Levels, Precise timers, Bounded work, Files of
 * the core, The wheel's interface, Ownership and locking, Timer state, In
 * the code, Source layout.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "compat.h"
#include "twheel.h"
#include "wheel.h"
#include "internal.h"
#include "core.h"

#define CREATE_TRACE_POINTS
#include "twheel_trace.h"

/* One cache line per timer: see struct twheel_timer. */
static_assert(!IS_ENABLED(CONFIG_64BIT) || IS_ENABLED(CONFIG_LOCKDEP) ||
	      sizeof(struct twheel_timer) <= 64);

unsigned long granularity_ns = NSEC_PER_MSEC;
module_param(granularity_ns, ulong, 0444);
MODULE_PARM_DESC(granularity_ns,
		 "Level-0 tick in ns, 1000..1000000000 (default 1000000)");

unsigned int wheel_bits = 6;
module_param(wheel_bits, uint, 0444);
MODULE_PARM_DESC(wheel_bits, "log2 of the buckets per level, 6..8 (default 6)");

unsigned int expire_batch = 8192;
module_param(expire_batch, uint, 0444);
MODULE_PARM_DESC(expire_batch,
		 "Most timers one wheel run processes, 64..1048576 (default 8192)");

unsigned int precise_per_tick = 16;
module_param(precise_per_tick, uint, 0444);
MODULE_PARM_DESC(precise_per_tick,
		 "Most runs of a CPU's wheel per tick for /dev/twheel's timers with a slack below it, 1..1024 (default 16)");

unsigned int run_budget_us = 2000;
module_param(run_budget_us, uint, 0444);
MODULE_PARM_DESC(run_budget_us,
		 "Most us one wheel run takes before it yields to tasks, 100..100000 (default 2000)");

DEFINE_PER_CPU(struct twheel_cpu, twheel_cpus);
/* Set by cpu.c: see core.h. */
bool tw_stopping;
struct workqueue_struct *twheel_wq;

/* ---------------------------------------------------------------------
 * Arming
 */

/*
 * Queue an arming of @t, due at @expires, for @cpu's wheel: as tw_push()
 * with a kick, but without the IPI when @cpu's hrtimer is set to run by
 * @expires anyway. That run drains the list before it looks at a bucket
 * (tw_hrtimer_fn()), so the timer is linked before it is due, and a
 * remote arming far ahead of the owner's next run (the common case of a
 * timeout) costs no interrupt on either CPU. Interrupts are off.
 */
static __always_inline void tw_push_arming(struct twheel_timer *t, int cpu,
					   u64 expires)
{
	struct twheel_cpu *tc = tw_cpu(cpu);

	if (cpu == smp_processor_id()) {
		tw_push(t, cpu, true);
		return;
	}
	tw_llist_add(&t->llnode, &tc->submit);
	/*
	 * Pairs with the run's store of KTIME_MAX to @programmed before its
	 * llist_del_all() (tw_hrtimer_fn()): tw_llist_add() and that xchg are
	 * full barriers, so either we read KTIME_MAX (or a time after
	 * @expires) and kick, or the run's drain sees our entry. A time
	 * before @expires read here is one the run will come at: only a run
	 * (which drains first) or the CPU's teardown (which empties the list,
	 * tw_cpu_offline()) lets go of it. One that an arming during a run
	 * wrote there is programmed by that run's end (tw_program_run_end()).
	 * A deferred run keeps KTIME_MAX there until tw_resume_fn(), whose
	 * run drains the list first, entries made before the deferral too.
	 * @t is not touched: it may be freed.
	 */
	if ((ktime_t)expires >= READ_ONCE(tc->programmed))
		return;
	/*
	 * The courier will kick the owner a granule or more before @expires:
	 * its run clears @courier_by before it reads the list (tw_courier_fn()).
	 */
	if ((ktime_t)expires - (ktime_t)granularity_ns >= READ_ONCE(tc->courier_by))
		return;
	tw_push_far(tc, cpu, expires);
}

/*
 * Publish an arming: clear TW_BUSY, bump the sequence, set TW_PENDING and
 * make sure a wheel will look at the timer. Interrupts are off. @clear is
 * TW_RUNNING for a periodic timer's next expiry (tw_finish()), which must
 * not bring back a timer cancelled since tw_finish() looked.
 */
static __always_inline int tw_publish(struct twheel_timer *t, int want,
				      unsigned long clear)
{
	struct twheel_cpu *local = this_cpu_ptr(&twheel_cpus);
	/* Pairs with the holder's cmpxchg that cleared TW_QUEUED after it set t->cpu. */
	unsigned long old = atomic_long_read_acquire(&t->state), new;
	/* Ours while we hold TW_BUSY; once published, @t may be freed. */
	u64 expires = READ_ONCE(t->expires), period = 0;
	int push_to, kick, this = smp_processor_id();
	bool direct, dropped;

	/* Only the trace wants the period: not worth a load on every arming. */
	if (trace_twheel_schedule_enabled())
		period = tw_period(t, READ_ONCE(t->mode) & TW_MODE_MASK);

	do {
		direct = false;
		push_to = -1;
		kick = -1;
		dropped = false;
		if (old & TW_SHUTDOWN) {
			/* Shut down while we wrote: the arming never happened. */
			new = old & ~(TW_BUSY | clear);
			dropped = true;
		} else if ((clear & TW_RUNNING) && !(old & TW_PENDING)) {
			/*
			 * The next expiry of a periodic timer, cancelled while
			 * tw_finish() wrote it (a cancel takes no TW_BUSY): that
			 * cancel returned true, so the timer stops here.
			 */
			new = old & ~(TW_BUSY | clear);
			dropped = true;
		} else if (!(old & TW_HELD)) {
			new = ((old | TW_PENDING) & ~(TW_BUSY | clear)) + TW_SEQ_ONE;
			new = tw_set_want(new, want);
			/* Nobody holds it: it goes to @want's wheel. */
			WRITE_ONCE(t->cpu, want);
			if (want == this) {
				new |= TW_HELD;
				direct = true;
			} else {
				new |= TW_HELD | TW_QUEUED;
				push_to = want;
			}
		} else {
			int holder = READ_ONCE(t->cpu);

			new = ((old | TW_PENDING) & ~(TW_BUSY | clear)) + TW_SEQ_ONE;
			new = tw_set_want(new, want);
			/*
			 * Held elsewhere, or wanted elsewhere: its holder only
			 * unlinks it and hands it to @want (tw_reconcile()), so
			 * a storm of re-arms from afar moves the timers here
			 * once and then costs their old holder nothing.
			 */
			if (old & TW_PARKED)
				;	/* tw_end_run() queues it when it returns */
			else if (holder == this && want == this &&
				 !(old & TW_QUEUED))
				direct = true;	/* held here: relink in place */
			else if (!(old & TW_QUEUED))
				push_to = holder; /* ask its holder to look again */
			else
				kick = holder;	/* queued, maybe by a lazy cancel */
			if (push_to >= 0)
				new |= TW_QUEUED;
		}
		/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
	} while (!atomic_long_try_cmpxchg_release(&t->state, &old, new));

	if (dropped) {
		tw_wake_waiters(t, old);
		return old & TW_SHUTDOWN ? -ESHUTDOWN : 0;
	}
	/* A periodic timer's next expiry ended a run: its waiters may go on. */
	if (clear & TW_RUNNING)
		tw_wake_waiters(t, old);
	trace_twheel_schedule(t, expires, period,
			      push_to >= 0 ? push_to : this, old & TW_PENDING);
	/*
	 * Last touch of @t: once on another CPU's list it may be cancelled,
	 * released and freed before tw_push() returns.
	 */
	if (direct)
		tw_link(local, t, tw_seq(new));
	else if (push_to >= 0)
		tw_push_arming(t, push_to, expires);
	else if (kick >= 0)
		tw_kick(kick);	/* a CPU number: @t is not touched */
	return !!(old & TW_PENDING);
}

/* tw_publish() for the next expiry of a periodic timer (expiry.c). */
int tw_publish_next(struct twheel_timer *t, int want)
{
	return tw_publish(t, want, TW_RUNNING);
}

/*
 * Store a new arming; interrupts are off. @slack is a slack class
 * (precise.h) or TW_SLACK_KEEP.
 */
static __always_inline int tw_arm_locked(struct twheel_timer *t, u64 expires,
					 u64 period, enum twheel_mode mode,
					 unsigned int slack)
{
	unsigned long old;
	u8 m = mode;
	int want;

	want = tw_pick_timer_cpu(t, slack);
	if (WARN_ON_ONCE(want < 0))
		return -ENODEV;
	old = tw_lock_busy(t);
	if (old & TW_SHUTDOWN) {
		/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
		atomic_long_fetch_andnot_release(TW_BUSY, &t->state);
		return -ESHUTDOWN;
	}
	WRITE_ONCE(t->expires, expires);
	if (mode != TWHEEL_ONESHOT)
		WRITE_ONCE(*tw_period_slot(t), period);
	/* The slack class shares the byte: the same store as before. */
	if (slack == TW_SLACK_KEEP)
		m |= READ_ONCE(t->mode) & ~TW_MODE_MASK;
	else
		m |= slack << TW_SLACK_SHIFT;
	WRITE_ONCE(t->mode, m);
	WRITE_ONCE(t->order, this_cpu_inc_return(twheel_cpus.order));
	this_cpu_inc(twheel_cpus.stats.scheduled);
	return tw_publish(t, want, 0);
}

/* An arming already validated, from any context: interrupts off around it. */
static __always_inline int tw_arm(struct twheel_timer *t, u64 expires,
				  u64 period, enum twheel_mode mode)
{
	unsigned long flags;
	int ret;

	local_irq_save(flags);
	ret = tw_arm_locked(t, expires, period, mode, TW_SLACK_KEEP);
	local_irq_restore(flags);
	return ret;
}

/**
 * twheel_arm - arm a timer, or move it if it is pending
 * @timer: an initialised timer
 * @deadline: absolute CLOCK_MONOTONIC time of the (first) expiry; a time in
 *	the past means now
 * @period: ns between expiries for a periodic @mode, 0 for %TWHEEL_ONESHOT
 * @mode: %TWHEEL_ONESHOT, %TWHEEL_FIXED_RATE or %TWHEEL_FIXED_DELAY
 *
 * The timer goes to the wheel of the calling CPU, or of the CPU set with
 * twheel_timer_set_cpu(). A timer that another CPU's wheel holds moves to
 * that wheel, as mod_timer() moves a timer_list: its old holder only
 * unlinks it, at its next run (kicked with an IPI if that run would come
 * after the new deadline), and the work of this and every later arming
 * from here is this CPU's.
 *
 * Context: any context but NMI.
 * Return: 1 if the timer was pending (it has been moved), 0 if it was not,
 * -EINVAL for a negative @deadline, an unknown @mode, a @period that does
 * not match @mode, or a periodic @mode on a plain timer (only a struct
 * twheel_periodic_timer or twheel_work_timer has room for a period),
 * -ESHUTDOWN after twheel_shutdown_sync().
 */
int twheel_arm(struct twheel_timer *timer, ktime_t deadline, u64 period,
	       enum twheel_mode mode)
{
	if (deadline < 0 || tw_check_mode(mode, period))
		return -EINVAL;
	if (mode != TWHEEL_ONESHOT && !(timer->flags & TWHEEL_F_PERIODIC))
		return -EINVAL;
	return tw_arm(timer, deadline, period, mode);
}
EXPORT_SYMBOL_GPL(twheel_arm);

/**
 * twheel_schedule - arm a one-shot timer to fire after a delay
 * @timer: an initialised timer
 * @delay_ns: ns from now; 0 fires at once
 *
 * Context: any context but NMI.
 * Return: as twheel_arm(), and -ERANGE if now + @delay_ns overflows ktime_t.
 */
int twheel_schedule(struct twheel_timer *timer, u64 delay_ns)
{
	ktime_t now = ktime_get();

	if (delay_ns > (u64)(KTIME_MAX - now))
		return -ERANGE;
	return tw_arm(timer, now + delay_ns, 0, TWHEEL_ONESHOT);
}
EXPORT_SYMBOL_GPL(twheel_schedule);

/**
 * twheel_schedule_at - arm a one-shot timer for an absolute time
 * @timer: an initialised timer
 * @deadline: CLOCK_MONOTONIC time; in the past means now
 *
 * Context: any context but NMI.
 * Return: as twheel_arm().
 */
int twheel_schedule_at(struct twheel_timer *timer, ktime_t deadline)
{
	if (deadline < 0)
		return -EINVAL;
	return tw_arm(timer, deadline, 0, TWHEEL_ONESHOT);
}
EXPORT_SYMBOL_GPL(twheel_schedule_at);

/* ---------------------------------------------------------------------
 * Cancelling
 */

/*
 * twheel_cancel(), also giving the state word it found in *@oldp. A timer
 * whose state has a bit of @refuse set is left alone (false): a constant,
 * 0 but for twheel_cancel_sync(), which refuses TW_RUNNING.
 */
static __always_inline bool tw_cancel_irqsoff(struct twheel_timer *timer,
					      unsigned long *oldp,
					      unsigned long refuse)
{
	unsigned long old, new;
	int this, push_to;
	bool local = false;

	lockdep_assert_irqs_disabled();
	this = smp_processor_id();
	/* Pairs with the holder's cmpxchg that cleared TW_QUEUED after it set t->cpu. */
	old = atomic_long_read_acquire(&timer->state);
	do {
		if (!(old & TW_PENDING)) {
			/*
			 * Unlinked by an earlier round, then cancelled from
			 * afar: that cancel set TW_QUEUED (the timer was held
			 * here), and the submission releases it. Never held
			 * and unqueued: that would leak the hold.
			 */
			if (local && WARN_ON_ONCE((old & (TW_HELD | TW_QUEUED)) ==
						  TW_HELD))
				tw_release(timer);
			trace_twheel_cancel(timer, false);
			*oldp = old;
			return false;
		}
		/*
		 * Checked on every round: TW_RUNNING is set only by a claim
		 * on the holder CPU, and a round that unlinked the timer here
		 * (@local) is that CPU, with interrupts off, so the bit cannot
		 * appear after such a round.
		 */
		if (old & refuse) {
			*oldp = old;
			return false;
		}
		new = old & ~TW_PENDING;
		local = false;
		push_to = -1;
		/* A parked timer is released by tw_end_run(): nothing to do. */
		if ((old & TW_HELD) && !(old & (TW_QUEUED | TW_PARKED))) {
			int holder = READ_ONCE(timer->cpu);

			if (holder == this && !(old & TW_BUSY)) {
				/*
				 * Held here: unlink now and drop the hold in
				 * the same cmpxchg (one atomic, not two). The
				 * link is the owner's to undo at any time;
				 * should the cmpxchg fail, the state it finds
				 * sends the timer through the submission list,
				 * which links it again if it is still pending.
				 */
				tw_unlink(this_cpu_ptr(&twheel_cpus), timer);
				local = true;
				new &= ~TW_HELD;
			} else {
				new |= TW_QUEUED;
				push_to = holder;
			}
		}
	} while (!atomic_long_try_cmpxchg(&timer->state, &old, new));

	if (local) {
		/* Unlinked and released: its memory is free at once. */
		tw_wake_waiters(timer, old);
	} else if (push_to >= 0) {
		/*
		 * No kick: the timer cannot fire now (its owner finds it not
		 * pending), so the owner unlinks it at its next run, at the
		 * latest when the timer's bucket comes due. Waiters kick.
		 */
		tw_push(timer, push_to, false);
	}
	this_cpu_inc(twheel_cpus.stats.cancelled);
	trace_twheel_cancel(timer, true);
	*oldp = old;
	return true;
}

static __always_inline bool tw_cancel(struct twheel_timer *timer,
				      unsigned long *oldp, unsigned long refuse)
{
	unsigned long flags;
	bool ret;

	local_irq_save(flags);
	ret = tw_cancel_irqsoff(timer, oldp, refuse);
	local_irq_restore(flags);
	return ret;
}

/* tw_cancel() for sync.c, which refuses TW_RUNNING. */
bool tw_cancel_refusing(struct twheel_timer *t, unsigned long *oldp,
			unsigned long refuse)
{
	return tw_cancel(t, oldp, refuse);
}

/**
 * twheel_cancel - stop a timer without waiting
 * @timer: the timer
 *
 * Callable from any context, the timer's own callback included. For a
 * periodic timer it stops every later expiry; a callback already running
 * finishes.
 *
 * Unlike timer_delete(), a true return does not mean that twheel let go of
 * the timer: cancelled from a CPU other than its wheel's, the timer stays
 * referenced by that wheel (linked in a bucket, or on its submission
 * list) until the wheel's next run, since no CPU may touch another's
 * wheel and no IPI is sent for it. So `if (twheel_cancel(t)) kfree(obj)`
 * is a use-after-free: free only after twheel_cancel_sync() or
 * twheel_shutdown_sync() has returned (or twheel_group_*_sync() for a
 * member of a group).
 *
 * Context: any context but NMI.
 * Return: true exactly when the timer was pending and its callback will not
 * run for that arming; false if it was not pending (never armed, already
 * cancelled, or its callback has run or is running).
 */
bool twheel_cancel(struct twheel_timer *timer)
{
	unsigned long old;

	return tw_cancel(timer, &old, 0);
}
EXPORT_SYMBOL_GPL(twheel_cancel);

/*
 * twheel_cancel() for fd_ops.c, which then needs to know whether a
 * callback may still run: *@running is false when none ran when the
 * arming was cancelled, and then none can begin (as twheel_running() false
 * after twheel_cancel()); true means "ask twheel_running()". One atomic
 * and one call fewer per cancel than the pair. Interrupts must be off:
 * fd_ops.c runs the operations of a batch in one interrupts-off section
 * rather than saving and restoring them for each.
 */
bool twheel_cancel_idle_irqsoff(struct twheel_timer *timer, bool *running)
{
	unsigned long old;
	bool ret = tw_cancel_irqsoff(timer, &old, 0);

	*running = old & TW_RUNNING;
	return ret;
}

/*
 * twheel_arm() for fd_ops.c, whose armings are checked already: a
 * deadline >= 0, a period that matches @mode, periodic modes only on its
 * struct twheel_periodic_timer. @slack is the arming's slack class
 * (twheel_slack_class()), stored with it. Interrupts must be off, as for
 * twheel_cancel_idle_irqsoff().
 */
int twheel_arm_irqsoff(struct twheel_timer *timer, ktime_t deadline,
		       u64 period, enum twheel_mode mode, unsigned int slack)
{
	lockdep_assert_irqs_disabled();
	return tw_arm_locked(timer, deadline, period, mode, slack);
}

/* A slack class for twheel_arm_irqsoff() (chardev.c): see precise.h. */
unsigned int twheel_slack_class(u64 slack_ns)
{
	return tw_slack_class(granularity_ns, slack_ns);
}

/**
 * twheel_cancel_running - stop a periodic timer from its own callback
 * @timer: the timer whose callback is running
 *
 * Stops the re-arming of the expiry being run, unless the timer was armed
 * again or cancelled since that expiry began, which twheel_cancel() cannot
 * tell apart.
 *
 * Context: the timer's own callback.
 * Return: true if the timer will not run again; false if it was re-armed
 * (that arming stands) or was not pending.
 */
bool twheel_cancel_running(struct twheel_timer *timer)
{
	unsigned long old = atomic_long_read(&timer->state);

	do {
		/* Re-armed since: held by a wheel, queued, or being written. */
		if ((old & (TW_PENDING | TW_HELD | TW_QUEUED | TW_BUSY)) !=
		    TW_PENDING || !(old & TW_RUNNING))
			return false;
	} while (!atomic_long_try_cmpxchg(&timer->state, &old,
					  old & ~TW_PENDING));
	trace_twheel_cancel(timer, true);
	return true;
}
EXPORT_SYMBOL_GPL(twheel_cancel_running);

/**
 * twheel_pending - is the timer armed?
 * @timer: the timer
 *
 * Context: any context.
 * Return: true if an expiry is still to come.
 */
bool twheel_pending(const struct twheel_timer *timer)
{
	return atomic_long_read(&timer->state) & TW_PENDING;
}
EXPORT_SYMBOL_GPL(twheel_pending);

/**
 * twheel_running - is the timer's callback running?
 * @timer: the timer
 *
 * Lets a user that cancelled with twheel_cancel() skip the wait of
 * twheel_cancel_sync() when no callback is in flight: once twheel_cancel()
 * has cleared the pending state no new run can begin, so a false return
 * after it means that no callback touches the timer's container any more
 * and that the timer may be armed again for another purpose. The timer
 * may still be linked on its wheel: freeing it still takes
 * twheel_cancel_sync().
 *
 * Context: any context.
 * Return: true while the callback runs (or, for a work timer, is queued
 * to run); the load is an acquire, so a false return orders the
 * callback's stores before the caller's later accesses.
 */
bool twheel_running(const struct twheel_timer *timer)
{
	/* Pairs with the releases that clear TW_RUNNING (tw_finish() and on). */
	return atomic_long_read_acquire(&timer->state) & TW_RUNNING;
}
EXPORT_SYMBOL_GPL(twheel_running);

/**
 * twheel_deadline - the deadline of the current arming
 * @timer: the timer
 *
 * Context: any context; in the timer's callback, the deadline of the expiry
 * being run.
 * Return: CLOCK_MONOTONIC ns.
 */
ktime_t twheel_deadline(const struct twheel_timer *timer)
{
	/*
	 * In its own callback the timer may already be re-armed by someone
	 * else: report the deadline of the expiry being run, not the new one.
	 */
	if (timer->flags & TWHEEL_F_PROCESS) {
		struct twheel_work_timer *wt =
			container_of(timer, struct twheel_work_timer, timer);

		if (current_work() == &wt->work)
			return wt->run_expires;
	} else if ((in_serving_softirq() || in_hardirq()) &&
		   this_cpu_read(twheel_cpus.running) == timer) {
		/* A softirq callback, or a TWHEEL_F_HARDIRQ one (tw_hard_fn()). */
		return this_cpu_read(twheel_cpus.running_expires);
	}
	return READ_ONCE(timer->expires);
}
EXPORT_SYMBOL_GPL(twheel_deadline);

/**
 * twheel_granularity - the wheel's level-0 tick
 *
 * Context: any context.
 * Return: ns by which an expiry may be late, beyond system latency.
 */
ktime_t twheel_granularity(void)
{
	return granularity_ns;
}
EXPORT_SYMBOL_GPL(twheel_granularity);

/**
 * twheel_timer_set_slack - how late the timer may fire
 * @timer: an initialised timer of any kind (for a struct
 *	twheel_clock_timer, twheel_clock_timer_set_slack())
 * @slack_ns: ns the timer may fire after its deadline, beyond system
 *	latency; %TWHEEL_SLACK_DEFAULT, or a value from twheel_granularity()
 *	to below twice it, for the default: one tick of the wheel. 0 asks
 *	for hrtimer's precision.
 *
 * As the slack of hrtimer_start_range_ns(): a timer whose slack is below
 * the tick reaches its deadline through its CPU's precise stage once it is
 * within a tick of it, and fires between its deadline and its deadline
 * plus the slack, coalesced with the other timers whose windows allow it;
 * never early. A slack of two ticks or more is rounded down to 2^k ticks,
 * and the timer fires at the first multiple of 2^k ticks of
 * CLOCK_MONOTONIC from its deadline on: with every timer of that slack due
 * then, the same instants on every CPU, as round_jiffies() and
 * timer_list's coarser levels coalesce. The slack is the timer's until set
 * again, for every arming from the next one on (an arming pending
 * meanwhile keeps either slack).
 * A kernel caller's precise timer runs when its window ends, as an
 * hrtimer's does; only /dev/twheel's are spaced, at most precise_per_tick
 * runs per tick (a module parameter).
 *
 * Context: any context but NMI.
 * Return: the slack in effect, ns: @slack_ns rounded down to a power of
 * two (0 stays 0) below the tick, to a power of two of ticks from two
 * ticks on (at most 2^16 of them), or twheel_granularity() for the
 * default.
 */
u64 twheel_timer_set_slack(struct twheel_timer *timer, u64 slack_ns)
{
	unsigned int class = tw_slack_class(granularity_ns, slack_ns);
	unsigned long flags;
	u8 m;

	local_irq_save(flags);
	tw_lock_busy(timer);
	m = READ_ONCE(timer->mode) & TW_MODE_MASK;
	WRITE_ONCE(timer->mode, m | class << TW_SLACK_SHIFT);
	/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
	atomic_long_fetch_andnot_release(TW_BUSY, &timer->state);
	local_irq_restore(flags);
	return tw_class_slack(granularity_ns, class);
}
EXPORT_SYMBOL_GPL(twheel_timer_set_slack);

/**
 * __twheel_timer_init - initialise a timer; use twheel_timer_init()
 * @timer: the timer
 * @func: the callback
 * @flags: 0, %TWHEEL_F_HARDIRQ, %TWHEEL_F_PINNED or both;
 *	%TWHEEL_F_PROCESS and %TWHEEL_F_PERIODIC are refused (see
 *	twheel_timer_init())
 * @name: lockdep name
 * @key: lockdep class
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_timer_init(struct twheel_timer *timer, twheel_fn_t func,
			 unsigned int flags, const char *name,
			 struct lock_class_key *key)
{
	/*
	 * Both flags make twheel treat the timer as the first member of a
	 * bigger structure (a struct twheel_work_timer or a struct
	 * twheel_periodic_timer): on a plain timer it would write past the
	 * object. Refuse them; the timer is a one-shot with a softirq callback.
	 */
	bool pinned = flags & TWHEEL_F_PINNED;

	flags &= ~TWHEEL_F_PINNED;
	if (flags & ~TWHEEL_F_HARDIRQ)
		pr_err("%s: flags %#x refused: use twheel_work_timer_init() or twheel_periodic_timer_init()\n",
		       name, flags & ~TWHEEL_F_HARDIRQ);
	/* On PREEMPT_RT, callbacks stay out of hard interrupts (hrtimer's rule). */
	flags &= IS_ENABLED(CONFIG_PREEMPT_RT) ? 0 : TWHEEL_F_HARDIRQ;
	tw_timer_setup(timer, func, flags, name, key);
	if (pinned)
		timer->target_cpu = TWHEEL_THIS_CPU;
}
EXPORT_SYMBOL_GPL(__twheel_timer_init);

/**
 * __twheel_periodic_timer_init - initialise a timer that may be periodic;
 *	use twheel_periodic_timer_init()
 * @pt: the timer
 * @func: the callback, run in softirq context
 * @name: lockdep name
 * @key: lockdep class
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_periodic_timer_init(struct twheel_periodic_timer *pt,
				  twheel_fn_t func, const char *name,
				  struct lock_class_key *key)
{
	tw_timer_setup(&pt->timer, func, TWHEEL_F_PERIODIC, name, key);
	pt->period = 0;
}
EXPORT_SYMBOL_GPL(__twheel_periodic_timer_init);

/**
 * twheel_timer_set_cpu - choose the CPU whose wheel runs the timer
 * @timer: the timer
 * @cpu: a possible CPU; %TWHEEL_ANY_CPU, the default: the CPU that arms
 *	it, or an awake one when that one is idle (a movable timer, see
 *	twheel.h); or %TWHEEL_THIS_CPU: the CPU that arms it, always (pinned,
 *	as %TWHEEL_F_PINNED at init)
 *
 * Takes effect at the next arming. While @cpu is offline, its timers run on
 * another CPU. A movable timer's callback may run on another CPU than the
 * one that armed it, as a non-pinned timer_list's does.
 *
 * Context: any context.
 * Return: 0, or -EINVAL for an impossible CPU.
 */
int twheel_timer_set_cpu(struct twheel_timer *timer, int cpu)
{
	if (cpu != TWHEEL_ANY_CPU && cpu != TWHEEL_THIS_CPU &&
	    (cpu < 0 || cpu >= nr_cpu_ids || !cpu_possible(cpu)))
		return -EINVAL;
	WRITE_ONCE(timer->target_cpu, cpu);
	return 0;
}
EXPORT_SYMBOL_GPL(twheel_timer_set_cpu);
