// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: a wheel's run. Each CPU's soft, pinned hrtimer runs
 * tw_hrtimer_fn() in softirq context on the owner: it drains the
 * submission list, advances the wheel (wheel.c) and its precise stage
 * (precise.c), claims each due timer from a racing cancel (tw_claim()) and
 * runs its callback, or queues it to the workqueue for a work timer; a
 * periodic timer is armed again for its next expiry (tw_finish()). The
 * kick IPI (tw_kick_fn()) drains the submission list in hard interrupt
 * context. A second, hard hrtimer per CPU runs tw_hard_fn(): the precise
 * stage's %TWHEEL_F_HARDIRQ timers, in hard interrupt context. All are
 * bounded by count, the run also by time: see "Bounded work" in
 * docs/design.md, where the state bits and the owners are too ("Timer
 * state", "Ownership and locking").
 */
#include <linux/export.h>
#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "core.h"
#include "twheel_trace.h"

/* What one expiry runs with, read while the arming was settled. */
struct tw_shot {
	u64	expires;
	u64	period;
	u8	mode;
};

/*
 * Owner: @t was just taken off the expired list; claim the expiry from a
 * racing cancel. Interrupts are off.
 * Return: true if the callback is to run; TW_RUNNING is then set.
 */
static __always_inline bool tw_claim(struct twheel_cpu *tc,
				     struct twheel_timer *t,
				     struct tw_shot *shot)
{
	unsigned long old, new;

	lockdep_assert_irqs_disabled();
	for (;;) {
		/*
		 * Settled first, every time: a failed cmpxchg may have seen an
		 * arming take TW_BUSY, and its fields are then half written.
		 */
		old = tw_read_settled(t);
		/* The common case in one test: pending, linked here, idle. */
		if (unlikely((old & (TW_QUEUED | TW_PENDING | TW_RUNNING)) !=
			     TW_PENDING || tw_seq(old) != t->linked_seq)) {
			/* Queued from afar: its submission decides. */
			if (old & TW_QUEUED)
				return false;
			if (WARN_ON_ONCE(!(old & TW_PENDING) ||
					 tw_seq(old) != t->linked_seq)) {
				tw_release(t);
				return false;
			}
			/*
			 * TW_RUNNING: due again while its callback still runs
			 * (in process context, or on another CPU): park it,
			 * off every wheel. tw_finish() queues it again when
			 * the callback returns, rather than this wheel looking
			 * every tick.
			 */
			if (atomic_long_try_cmpxchg(&t->state, &old,
						    old | TW_PARKED)) {
				tc->stats.parked++;
				return false;
			}
			continue;
		}
		shot->expires = READ_ONCE(t->expires);
		shot->mode = READ_ONCE(t->mode) & TW_MODE_MASK;
		shot->period = tw_period(t, shot->mode);
		new = (old | TW_RUNNING) & ~TW_HELD;
		if (shot->mode == TWHEEL_ONESHOT)
			new &= ~TW_PENDING;
		/* Fails if an arming took TW_BUSY since: the fields may be new. */
		if (atomic_long_try_cmpxchg(&t->state, &old, new))
			return true;
	}
}

/*
 * Let go of TW_RUNNING. A timer parked meanwhile (tw_claim()) goes back to
 * a wheel if it is still pending, or is released if it was cancelled.
 * Interrupts are off.
 */
static void tw_end_run(struct twheel_timer *t)
{
	unsigned long old = atomic_long_read(&t->state), new;
	bool requeue;

	lockdep_assert_irqs_disabled();
	do {
		new = old & ~(TW_RUNNING | TW_PARKED);
		requeue = false;
		if (old & TW_PARKED) {
			/* Nobody else queues a parked timer: see tw_publish(). */
			WARN_ON_ONCE(old & TW_QUEUED);
			if (old & TW_PENDING) {
				new |= TW_QUEUED;
				requeue = true;
			} else {
				new &= ~TW_HELD;
			}
		} else if (!(old & (TW_HELD | TW_SHUTDOWN))) {
			/*
			 * A periodic timer that is not re-armed now is over;
			 * but one being shut down stays pending for the cancel
			 * that follows TW_SHUTDOWN, so that it is counted as
			 * stopped (it was pending when the shutdown began).
			 */
			new &= ~TW_PENDING;
		}
		/* Pairs with the acquire in tw_read_settled() of a later claim. */
	} while (!atomic_long_try_cmpxchg_release(&t->state, &old, new));
	if (requeue) {
		/*
		 * We set TW_QUEUED on a timer no wheel holds: t->cpu is ours.
		 * It goes where its latest arming wants it (tw_publish()).
		 */
		int dest = tw_want(new);

		if (!READ_ONCE(tw_cpu(dest)->online))
			dest = tw_pick_timer_cpu(t, TW_SLACK_KEEP);
		if (dest < 0)
			dest = smp_processor_id();	/* no wheel online */
		WRITE_ONCE(t->cpu, dest);
		tw_push(t, dest, true);
		/*
		 * Re-armed while parked: a waiter of twheel_cancel_sync() now
		 * has a settled timer to cancel again. tw_wake_waiters() does
		 * not touch @t, which its new holder may already have freed.
		 */
	}
	tw_wake_waiters(t, old);
}

static void tw_finish_slow(struct twheel_timer *t, const struct tw_shot *shot,
			   u64 missed);

/*
 * After the callback: re-arm a periodic timer unless it was cancelled or
 * re-armed meanwhile, then let go of TW_RUNNING. Inline for the one-shot's
 * fast path, which every expiry of a burst takes.
 */
static __always_inline void tw_finish(struct twheel_timer *t,
				      const struct tw_shot *shot, u64 missed)
{
	unsigned long old;

	if (shot->mode == TWHEEL_ONESHOT) {
		/* Fast path: one atomic, interrupts left alone. */
		old = atomic_long_read(&t->state);
		while (!(old & TW_PARKED)) {
			/* Pairs with the acquire in tw_read_settled(). */
			if (atomic_long_try_cmpxchg_release(&t->state, &old,
							    old & ~TW_RUNNING)) {
				tw_wake_waiters(t, old);
				return;
			}
		}
	}
	tw_finish_slow(t, shot, missed);
}

/* tw_finish() of a periodic timer, or of a one-shot parked meanwhile. */
static noinline void tw_finish_slow(struct twheel_timer *t,
				    const struct tw_shot *shot, u64 missed)
{
	unsigned long flags, old;
	u64 next;

	local_irq_save(flags);
	if (shot->mode == TWHEEL_ONESHOT)
		goto end_run;
	old = atomic_long_read(&t->state);
	/* Still pending and nobody re-armed it (re-arming sets TW_HELD). */
	if ((old & TW_PENDING) && !(old & (TW_HELD | TW_SHUTDOWN))) {
		if (shot->mode == TWHEEL_FIXED_RATE) {
			if (check_mul_overflow(missed + 1, shot->period, &next) ||
			    check_add_overflow(next, shot->expires, &next))
				next = KTIME_MAX;
		} else {
			next = ktime_get() + shot->period;	/* < 2^64 */
		}
		/* Beyond the end of time: stays armed, never fires again. */
		next = min_t(u64, next, KTIME_MAX);
		old = tw_lock_busy(t);
		if ((old & TW_PENDING) && !(old & (TW_HELD | TW_SHUTDOWN))) {
			WRITE_ONCE(t->expires, next);
			WRITE_ONCE(t->order, this_cpu_inc_return(twheel_cpus.order));
			int dest = tw_pick_timer_cpu(t, TW_SLACK_KEEP);

			/* No wheel online (teardown): keep it on this one. */
			tw_publish_next(t, dest < 0 ? smp_processor_id() : dest);
			local_irq_restore(flags);
			return;
		}
		/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
		atomic_long_fetch_andnot_release(TW_BUSY, &t->state);
	}
end_run:
	tw_end_run(t);
	local_irq_restore(flags);
}

/*
 * Run @t's callback for the expiry @shot. @in_irq: it runs on the owner in
 * interrupt context (softirq or hard), and @tc, the owner's wheel, records
 * it as running; else in process context (a work timer's), @tc unused. A
 * constant at every call, so the fast path tests neither.
 */
static __always_inline void tw_run_callback(struct twheel_cpu *tc,
					    bool in_irq,
					    struct twheel_timer *t,
					    const struct tw_shot *shot)
{
	bool hard = t->flags & TWHEEL_F_HARDIRQ;
	unsigned long flags = 0;
	ktime_t now = 0;
	u64 missed = 0;

	/* The clock only for a fixed-rate overrun count, or for tracing. */
	if (shot->mode == TWHEEL_FIXED_RATE || trace_twheel_expire_enabled())
		now = ktime_get();
	if (shot->mode == TWHEEL_FIXED_RATE && now > (ktime_t)shot->expires)
		missed = div64_u64(now - shot->expires, shot->period);
	trace_twheel_expire(t, shot->expires, now, missed);

	if (in_irq) {
		/* Interrupt context: this CPU runs nothing else of ours meanwhile. */
		tc->running = t;
		tc->running_expires = shot->expires;
	}

	/*
	 * A TWHEEL_F_HARDIRQ timer's callback runs with interrupts off
	 * wherever it runs: in tw_hard_fn(), or here in the wheel's softirq
	 * when that fired it, so that its locks are taken one way (lockdep:
	 * IN-HARDIRQ).
	 */
	if (unlikely(hard))
		local_irq_save(flags);
	lock_map_acquire(&t->lockdep_map);
	t->func(t, missed);
	lock_map_release(&t->lockdep_map);
	if (unlikely(hard))
		local_irq_restore(flags);

	if (in_irq)
		tc->running = NULL;
	tw_finish(t, shot, missed);
}

/* A work timer's work: its callback, in process context. */
static void tw_work_fn(struct work_struct *work)
{
	struct twheel_work_timer *wt =
		container_of(work, struct twheel_work_timer, work);
	/*
	 * The expiry claimed by tw_hrtimer_fn(), not the timer's fields: those
	 * belong to a re-arming made while the work was queued, if any.
	 */
	struct tw_shot shot = {
		.expires = wt->run_expires,
		.period = wt->run_period,
		.mode = wt->run_mode,
	};

	tw_run_callback(NULL, false, &wt->timer, &shot);
}

/**
 * __twheel_work_timer_init - initialise a work timer; use
 *	twheel_work_timer_init()
 * @wt: the timer
 * @func: the callback, run in process context
 * @name: lockdep name
 * @key: lockdep class
 *
 * Here, beside its work function, rather than with the other initialisers
 * in twheel.c: the arming code calls nothing of the run's.
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_work_timer_init(struct twheel_work_timer *wt, twheel_fn_t func,
			      const char *name, struct lock_class_key *key)
{
	tw_timer_setup(&wt->timer, func, TWHEEL_F_PROCESS | TWHEEL_F_PERIODIC,
		       name, key);
	wt->period = 0;
	INIT_WORK(&wt->work, tw_work_fn);
}
EXPORT_SYMBOL_GPL(__twheel_work_timer_init);

/* Owner, TW_RUNNING claimed: hand the expiry to the workqueue. */
static void tw_queue_work(struct twheel_timer *t, const struct tw_shot *shot)
{
	struct twheel_work_timer *wt =
		container_of(t, struct twheel_work_timer, timer);

	wt->run_expires = shot->expires;
	wt->run_period = shot->period;
	wt->run_mode = shot->mode;
	/*
	 * queue_work() orders the stores above before the work runs (see its
	 * kernel-doc). The previous run of this work may still be returning
	 * (tw_finish() cleared TW_RUNNING, which let us claim), but it copied
	 * these fields at its start and reads only the timer since.
	 */
	queue_work(twheel_wq, &wt->work);
}

/* Let pending interrupts in, between two steps of a wheel run. */
static void tw_irq_window(void)
{
	local_irq_enable();
	local_irq_disable();
}

/*
 * Expiries between two looks at the clock in a wheel run, claimed in one
 * interrupts-off step and then run in one interrupts-on window.
 */
#define TW_CLOCK_EVERY	8

/* A claimed expiry whose callback is still to run (tw_hrtimer_fn()). */
struct tw_due {
	struct twheel_timer	*t;
	struct tw_shot		shot;
};

/*
 * The rest of a run that went over its time budget, bound to the owner
 * CPU: a work item on a per-CPU workqueue, run by a SCHED_OTHER worker, so
 * every real-time task that wants this CPU runs first (as ksoftirqd takes
 * over from softirqs on interrupt exit). It only lets the wheel run again,
 * or gives a held burst back (tw_wheel_release()): expiry stays in the
 * hrtimer's softirq, where callbacks are promised to run, and that run is
 * again bounded by the budget.
 */
void tw_resume_fn(struct work_struct *work)
{
	struct twheel_cpu *tc = container_of(work, struct twheel_cpu, resume);

	local_irq_disable();
	/*
	 * A per-CPU work item runs on another CPU once its CPU went down;
	 * @tc is then not ours to touch, and the owner's tw_cpu_offline()
	 * has cleared @deferred itself.
	 */
	if (smp_processor_id() != tc->cpu) {
		local_irq_enable();
		return;
	}
	if (tw_wheel_release(&tc->wheel) || tc->deferred) {
		tc->deferred = false;
		if (READ_ONCE(tc->online))
			tw_program(tc, ktime_get());
	}
	tw_irq_enable_wake(tc);
}

/*
 * A run over its time budget: must the rest wait for tw_resume_fn()?
 * Yes unless the run interrupted this CPU's idle task and no task has
 * woken since (need_resched()). A task the run interrupted, of any class,
 * is owed the CPU: a real-time one must not be interrupted again at once,
 * and a SCHED_OTHER one runs between two runs. That is little in a long
 * burst: the runs are softirqs on its interrupt exits, charged to it, and
 * the worker preempts it at once (table 3's watcher had 0.2 ms of a 20.6
 * ms burst); a run the worker made itself, charged to the worker, gave it
 * whole scheduler slices but chained the runs and left gaps of ms between
 * callbacks (BENCHMARKS.md). Under the abuse tests' MODIFY storm CPU 0's
 * busy loop must keep 90% of its throughput; with runs coming back at once
 * whenever no task waited, a fresh-clone make check's debug kernel kept
 * 83-89% three times in a row, though the test alone passed. On
 * PREEMPT_RT soft hrtimers expire in a SCHED_FIFO thread, so there the run
 * always defers. An idle CPU loses nothing to a run that comes back at
 * once: one interrupt rather than a work item's wake-up and two context
 * switches.
 */
static bool tw_must_defer(void)
{
	return !is_idle_task(current) || need_resched();
}

/*
 * A run over its time budget that left no more than a batch of due timers
 * (TW_CLOCK_EVERY) and nothing else: not a burst, but a run the host or a
 * slow callback stretched. It comes back after a budget's gap rather than
 * holding the user whose timer is first in line, or the whole wheel, until
 * the work item: under emulation a vCPU the host stalls inside a run of
 * one timer would otherwise hold its user for as long as a real-time task
 * keeps the CPU. Counts at most TW_CLOCK_EVERY + 1 timers.
 */
static bool tw_rest_small(struct twheel_cpu *tc, bool done, ktime_t now)
{
	struct tw_wheel *w = &tc->wheel;
	struct list_head *pos;
	unsigned int n = 0;

	if (!done || tc->backlog || !llist_empty(&tc->submit) ||
	    tw_wheel_sorting(w) || tw_precise_next(&w->precise) <= now)
		return false;
	list_for_each(pos, &w->expired)
		if (++n > TW_CLOCK_EVERY)
			return false;
	return true;
}

/*
 * A run over its time budget that must leave the rest to tw_resume_fn()
 * (tw_must_defer()): can it hold only the user whose timers it was
 * expiring, and let the wheel run on for everyone else's? Yes if that is
 * what is left: due timers, or else the buckets of the tick an advance
 * stopped in (tw_wheel_spill()), the first of them a /dev/twheel timer
 * whose user is the one held already, if any; or the sort of a held
 * burst, which went over the budget itself. Then that user's due
 * timers wait, in their order, for tw_resume_fn() (tw_wheel_hold()); the
 * others due with them only for the next run's sort (tw_wheel_sort()), a
 * list move each; the spilled timers are moved down by the next runs,
 * and that user's among them, once due, queue behind its held ones. A
 * drain left over, a kernel timer first in line, or a second user makes
 * the whole wheel wait, as before.
 *
 * Return: true if the due timers were set aside and the wheel runs on.
 */
static bool tw_hold_due(struct twheel_cpu *tc, bool done)
{
	struct tw_wheel *w = &tc->wheel;
	unsigned long owner;

	if (tc->backlog || !llist_empty(&tc->submit))
		return false;
	if (!done)
		tw_wheel_spill(w);
	if (tw_wheel_sorting(w))
		/* The sort went over: it goes on, nothing else fired. */
		owner = w->held_owner;
	else if (!list_empty(&w->expired))
		owner = tw_timer_owner(list_first_entry(&w->expired,
							struct twheel_timer,
							entry));
	else if (!list_empty(&w->spilled))
		/* A burst armed far ahead, still being moved down. */
		owner = tw_timer_owner(list_first_entry(&w->spilled,
							struct twheel_timer,
							entry));
	else if (w->held_free && !list_empty(&w->held))
		owner = w->held_owner;	/* its released burst went over */
	else
		return false;	/* a due precise timer left */
	if (!owner || (w->held_owner && owner != w->held_owner))
		return false;
	tw_wheel_hold(w, owner);
	tc->stats.holds++;
	return true;
}

/*
 * The end of a run, interrupts off: program the hrtimer once, for @next
 * or for what an arming during the run asked for (tw_program() lowered
 * @programmed meanwhile: from afar, tw_push_arming() may have counted on
 * it and skipped its kick), whichever is earlier. A run that deferred
 * the rest programs nothing: tw_resume_fn() will, and until then
 * @programmed says KTIME_MAX, so that armings from afar kick. A run that
 * ends in a gap programs @next, the gap's end, and nothing earlier.
 */
static void tw_program_run_end(struct twheel_cpu *tc, ktime_t next)
{
	ktime_t when = min(next, tc->programmed);

	tc->in_run = false;
	if (tc->gap) {
		/* Nothing earlier: tw_program() refuses while @deferred. */
		WRITE_ONCE(tc->programmed, next);
		tc->stats.programs++;
		hrtimer_start_range_ns(&tc->hrt, next, 0,
				       HRTIMER_MODE_ABS_PINNED_SOFT);
		return;
	}
	if (tc->deferred) {
		WRITE_ONCE(tc->programmed, KTIME_MAX);
		return;
	}
	if (when == KTIME_MAX)
		return;
	WRITE_ONCE(tc->programmed, when);
	tc->stats.programs++;
	hrtimer_start_range_ns(&tc->hrt, when, 0, HRTIMER_MODE_ABS_PINNED_SOFT);
}

/* The wheel's hrtimer: runs in softirq context on the owner CPU. */
enum hrtimer_restart tw_hrtimer_fn(struct hrtimer *hrt)
{
	struct twheel_cpu *tc = container_of(hrt, struct twheel_cpu, hrt);
	unsigned int budget = expire_batch, fired = 0, every, unadvanced;
	ktime_t now, next, t_start, t_due, t_mark, t_end, t_stop, slow_ns;
	/* The run's longest lateness, for the statistics. */
	ktime_t late = 0;
	struct tw_wheel *w = &tc->wheel;
	bool done, over = false, rated, slow = false, sorted;
	/*
	 * One batch's claimed expiries. Here, not in the loop: a kernel that
	 * zeroes its stack variables (CONFIG_INIT_STACK_ALL_ZERO, Debian's)
	 * would clear it for every batch, 4 stores a timer.
	 */
	struct tw_due due[TW_CLOCK_EVERY];

	local_irq_disable();
	/*
	 * A gap ends with this run: the hrtimer fires while @deferred only
	 * for that (tw_program() refuses otherwise).
	 */
	if (tc->gap) {
		tc->gap = false;
		tc->deferred = false;
	}
	/* Armings from here to the end program nothing (tw_program()). */
	tc->in_run = true;
	/*
	 * Before the drain's llist_del_all(): pairs with the read of
	 * tw_push_arming(), which kicks unless this run will see its entry
	 * or an arming during it has lowered @programmed since (the run's
	 * end programs that time: tw_program_run_end()).
	 */
	WRITE_ONCE(tc->programmed, KTIME_MAX);
	t_start = ktime_get();
	t_stop = t_start + (ktime_t)run_budget_us * NSEC_PER_USEC;
	/* A callback is slow past 1/16 of the budget: 125 us by default. */
	slow_ns = (ktime_t)run_budget_us * NSEC_PER_USEC / (2 * TW_CLOCK_EVERY);
	every = tc->clock_each ? 1 : TW_CLOCK_EVERY;
	/*
	 * TW_IRQ_CHUNK timers at a time, letting interrupts in between:
	 * the wheel is consistent between two steps, and a hard interrupt
	 * that arms or cancels here finds it so. The clock is read between
	 * steps and every TW_CLOCK_EVERY expiries: past run_budget_us the
	 * run stops with the wheel consistent, as when @budget runs out.
	 */
	for (;;) {
		unsigned int chunk = min(budget, TW_IRQ_CHUNK), left = chunk;

		tw_drain(tc, &left);
		budget -= chunk - left;
		if (left || !budget)
			break;
		tw_irq_window();
		if (ktime_get() > t_stop) {
			over = true;
			break;
		}
	}
	/*
	 * The clock again only if the drain had work: a run for the precise
	 * stage reads it once before its first callback. An earlier @now is
	 * never early for a timer, and the precise stage looks again before
	 * it stops (below).
	 */
	now = budget == expire_batch ? t_start : ktime_get();
	unadvanced = budget;
	done = false;
	while (!over) {
		unsigned int chunk = min(budget, TW_IRQ_CHUNK), left = chunk;

		done = tw_wheel_advance(w, now, &left);
		budget -= chunk - left;
		if (done || !budget)
			break;
		tw_irq_window();
		over = ktime_get() > t_stop;
	}
	/*
	 * A held burst to sort by owner first (tw_hold_due()): until it is,
	 * none of the expired list fires. Bounded by the run's time alone:
	 * a list move per timer, no callback.
	 */
	sorted = false;
	while (!over && tw_wheel_sorting(w)) {
		unsigned int left = TW_IRQ_CHUNK;

		sorted = true;
		if (tw_wheel_sort(w, now, &left))
			break;
		tw_irq_window();
		over = ktime_get() > t_stop;
	}
	/* Where an expiry's time goes: the advance's part, if it had work. */
	t_due = done && budget == unadvanced && !sorted ? now : ktime_get();
	tc->stats.advance_ns += t_due - now;
	/*
	 * A run for the user heap of the precise stage: the end of a window
	 * of a /dev/twheel timer came (not a tick).
	 */
	rated = tw_precise_next_kind(&w->precise, TW_PRECISE_USER) <= now;
	over = over || t_due > t_stop;
	/* The clock's last reading: where the next callbacks' time starts. */
	t_mark = t_due;
	while (!over && budget) {
		/* Each timer looked at takes one from @budget. */
		unsigned int floor = budget > every ? budget - every : 0;
		struct tw_due *d = due, *e;
		bool empty = false;

		/*
		 * Claim up to TW_CLOCK_EVERY due timers with interrupts off,
		 * then run their callbacks with interrupts on: one interrupts
		 * window per batch rather than per timer. A claimed timer's
		 * callback will run (TW_RUNNING is set), so a cancel from a
		 * callback earlier in the batch returns false for it, as it
		 * would once that callback had begun. The timers looked at
		 * are counted, claimed or not: an interrupts-off step looks at
		 * no more than TW_CLOCK_EVERY, however many claims fail.
		 */
		while (budget > floor) {
			struct twheel_timer *t;

			t = tw_wheel_pop_next(w, now, &budget, floor);

			if (!t) {
				/*
				 * A precise timer may have come due since the
				 * run began: one more look at the clock, not a
				 * run more.
				 */
				ktime_t later;

				/*
				 * After the callbacks claimed so far, or once
				 * moves to the precise stage took this step's
				 * share of @budget: the next step goes on.
				 */
				if (d != due || budget <= floor)
					break;
				empty = true;
				if (!w->precise.n)
					break;
				later = ktime_get();
				/* The expired list gave none: the stage's. */
				t = tw_wheel_pop_next(w, later, &budget, floor);
				if (!t)
					break;
				empty = false;
				now = later;
			}
			budget--;
			if (!tw_claim(tc, t, &d->shot))
				continue;
			/*
			 * The step's first is its latest: the due timers come
			 * in deadline order (a tick of more than TW_SORT_MAX,
			 * unsorted, within a tick).
			 */
			if (d == due)
				late = max(late, now - (ktime_t)d->shot.expires);
			if (t->flags & TWHEEL_F_PROCESS) {
				fired++;
				tw_queue_work(t, &d->shot);
				continue;
			}
			d->t = t;
			d++;
		}
		if (d != due) {
			ktime_t t_cb = t_mark, t_now;

			fired += d - due;
			local_irq_enable();
			for (e = due; e < d; e++)
				tw_run_callback(tc, true, e->t, &e->shot);
			local_irq_disable();
			/*
			 * Callbacks too slow for TW_CLOCK_EVERY of them to fit
			 * in the budget's slack (the debug kernel's take up to
			 * tens of ms: steps of 8 took 78 ms): one at a time,
			 * for this run and the next.
			 */
			t_now = ktime_get();
			if (t_now - t_cb > (ktime_t)(d - due) * slow_ns) {
				every = 1;
				slow = true;
			}
			t_mark = t_now;
			if (t_now > t_stop)
				over = true;
		} else if (!empty && ktime_get() > t_stop) {
			over = true;
		}
		if (empty)
			break;
	}
	if (late > (ktime_t)tc->stats.max_lateness_ns)
		tc->stats.max_lateness_ns = late;
	tc->clock_each = slow;
	tc->stats.expired += fired;
	if (fired > tc->stats.max_batch)
		tc->stats.max_batch = fired;
	t_end = ktime_get();
	tc->stats.expire_ns += t_end - t_due;

	/*
	 * The coalescing floor: after a run for the user heap of the precise
	 * stage, the hrtimer is not programmed for that heap again within a
	 * tick / precise_per_tick of this run's end (tw_link() too), so that
	 * userspace's precise timers cause at most precise_per_tick runs per
	 * tick. The kernel's callers are trusted as hrtimer's are: their
	 * heap is not held back. A run for a tick leaves the floor alone: a
	 * precise timer due just after the tick it moved in at is not held
	 * back.
	 */
	if (rated)
		tc->precise_floor = t_end + div_u64(granularity_ns,
						    precise_per_tick);
	/*
	 * A held user whose held timers were all cancelled is held no more:
	 * its user may be freed, and another made at the same address.
	 */
	if (unlikely(w->held_owner) && list_empty(&w->held) &&
	    !tw_wheel_sorting(w)) {
		w->held_owner = 0;
		w->held_free = false;
	}
	if (!done || tw_wheel_has_due(w) || tc->backlog ||
	    !llist_empty(&tc->submit) ||
	    tw_precise_next(&w->precise) <= now) {
		next = t_end + 1;		/* more to do: yield, come back */
		if (over)
			tc->stats.yields++;
		/*
		 * Over the time budget with a task owed the CPU: come back
		 * only once the CPU's SCHED_OTHER tasks may run, so a burst
		 * cannot keep a real-time task off the CPU for more than about
		 * one budget, nor a SCHED_OTHER one from its share
		 * (tw_must_defer()). Not while the CPU goes down (its wheel
		 * is being emptied) or the module goes away (nothing may be
		 * queued then). If only one user's timers made it so, only
		 * they wait (tw_hold_due()), and if only a batch is left,
		 * nobody does (tw_rest_small()): the wheel comes back after a
		 * gap of a budget's time, which the task has first, and no
		 * run comes earlier (tc->gap).
		 */
		if (over && tw_must_defer() && READ_ONCE(tc->online) &&
		    !READ_ONCE(tw_stopping)) {
			if (tw_rest_small(tc, done, now)) {
				tc->gap = true;
			} else {
				if (tw_hold_due(tc, done))
					tc->gap = true;
				else
					tc->stats.deferrals++;
				queue_work_on(tc->cpu, twheel_wq, &tc->resume);
			}
			tc->deferred = true;
			if (tc->gap)
				next = t_end + (ktime_t)run_budget_us *
					       NSEC_PER_USEC;
		}
	} else {
		next = min(tw_wheel_tick_time(w, tw_wheel_next(w)),
			   tw_precise_next_floored(&w->precise,
						   tc->precise_floor));
	}
	tw_program_run_end(tc, next);
	/* Timers this run moved to the hard heap (tw_wheel_file_precise()). */
	tw_program_hard(tc, tw_precise_next_kind(&w->precise,
						 TW_PRECISE_HARD));
	tw_irq_enable_wake(tc);
	return HRTIMER_NORESTART;
}

/* Most callbacks one run of the hard hrtimer makes (tw_hard_fn()). */
#define TW_HARD_BUDGET	16

/*
 * The precise stage's hard heap: the kernel's %TWHEEL_F_HARDIRQ timers,
 * fired from the owner's hard hrtimer as a _HARD hrtimer is, without the
 * softirq hop. Hard interrupt context, interrupts off: this CPU owns the
 * wheel, and no step of its run is under way meanwhile (each runs with
 * interrupts off; only callbacks run with them on, and this may interrupt
 * one of those). At most TW_HARD_BUDGET callbacks per interrupt, as a kick
 * is bounded; past that the hrtimer comes back at once, letting the
 * interrupt exit (and what waits on it) in between.
 */
enum hrtimer_restart tw_hard_fn(struct hrtimer *hrt)
{
	struct twheel_cpu *tc = container_of(hrt, struct twheel_cpu, hrt_hard);
	/* A softirq callback this interrupted: twheel_deadline() looks here. */
	struct twheel_timer *interrupted = tc->running, *t;
	u64 interrupted_expires = tc->running_expires;
	unsigned int budget = TW_HARD_BUDGET;
	struct tw_wheel *w = &tc->wheel;
	struct tw_shot shot;
	ktime_t now, next;

	lockdep_assert_irqs_disabled();
	tc->hard_programmed = KTIME_MAX;
	now = ktime_get();
	/* An earlier @now is never early: a timer due since waits for the next. */
	while (budget && (t = tw_wheel_pop_hard(w, now))) {
		budget--;
		if (!tw_claim(tc, t, &shot))
			continue;
		tc->stats.expired++;
		if (now - (ktime_t)shot.expires > (ktime_t)tc->stats.max_lateness_ns)
			tc->stats.max_lateness_ns = now - shot.expires;
		tw_run_callback(tc, true, t, &shot);
	}
	tc->running = interrupted;
	tc->running_expires = interrupted_expires;
	next = tw_precise_next_kind(&w->precise, TW_PRECISE_HARD);
	if (!budget) {
		/* More due: at once, through the hrtimer interrupt's loop. */
		tw_program_hard(tc, max(next, now));
	} else if (next > now) {
		tw_program_hard(tc, next);
	} else if (next != KTIME_MAX) {
		/*
		 * The top's window ended but its deadline has not come: it
		 * was re-armed from afar, and waits in @submit to be taken
		 * out (tw_publish()). Programmed for @next, the hrtimer would
		 * run this again in the same interrupt, for ever: the wheel's
		 * run drains @submit first, and programs this hrtimer again
		 * at its end.
		 */
		tw_program(tc, now);
	}
	return HRTIMER_NORESTART;
}

/* Most submissions a kick processes in its hard interrupt. */
#define TW_KICK_BUDGET	64

/*
 * Someone queued a submission for this CPU: drain it here, in the IPI,
 * rather than waking the wheel's softirq for it. Hard interrupt context.
 */
void tw_kick_fn(void *info)
{
	struct twheel_cpu *tc = info;
	unsigned int budget = TW_KICK_BUDGET;

	tc->stats.kicks++;
	/*
	 * The csd is unlocked (the IPI code did that before calling us):
	 * the next sender may queue it again. The xchg (a full barrier)
	 * orders clearing @kicked before the llist_del_all() of tw_drain():
	 * pairs with the llist_add() then the read of @kicked in tw_kick().
	 */
	atomic_xchg(&tc->kicked, 0);
	tw_drain(tc, &budget);
	/* More than one run's worth: the wheel's softirq goes on with it. */
	if (tc->backlog || !llist_empty(&tc->submit))
		tw_program(tc, ktime_get());
}
