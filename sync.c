// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: waiting for timers. twheel_cancel_sync() and
 * twheel_shutdown_sync() wait for one timer's callback and for its wheel
 * to let go of it; the group calls cancel every member first and then
 * wait for each. Waiters sleep on tw_idle_wq, which every release of
 * TW_HELD or TW_RUNNING wakes when TW_WAITER is set (tw_wake_waiters()).
 * The state bits and who may touch what: "Timer state" and "Ownership and
 * locking" in docs/design.md.
 */
#include <linux/export.h>
#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "core.h"
#include "internal.h"

static bool tw_idle(unsigned long state)
{
	return !(state & (TW_HELD | TW_RUNNING));
}

/*
 * The timer is idle, or its callback has returned and re-armed it: either
 * way there is nothing more to wait for before cancelling again.
 */
static bool tw_settled(unsigned long state)
{
	return !(state & TW_RUNNING) &&
	       (!(state & TW_HELD) || (state & TW_PENDING));
}

/* Wait until tw_settled(); return the state seen then. */
static unsigned long tw_wait_settled(struct twheel_timer *t)
{
	unsigned long flags, s;

	s = atomic_long_read(&t->state);
	if (tw_settled(s))
		return s;
	/*
	 * A cancel from another CPU queued the timer to its holder without a
	 * kick (twheel_cancel()): kick now. TW_QUEUED set means t->cpu is the
	 * CPU whose list holds it, or one it is being handed to with a kick.
	 * TW_WAITER stays set: every later release of the timer wakes
	 * tw_idle_wq, and a spurious wake-up costs a re-check.
	 */
	local_irq_save(flags);
	if (atomic_long_fetch_or(TW_WAITER, &t->state) & TW_QUEUED)
		tw_kick(READ_ONCE(t->cpu));
	local_irq_restore(flags);
	/*
	 * tw_wake_waiters() runs after every clear of TW_HELD or TW_RUNNING;
	 * the barrier of set_current_state() in prepare_to_wait_event() pairs
	 * with its smp_mb__after_atomic().
	 */
	wait_event(tw_idle_wq,
		   tw_settled(s = atomic_long_read(&t->state)));
	return s;
}

/*
 * For a group: cancel until the timer is idle. Wait for a running callback
 * to return, then cancel what is pending, again if the timer was re-armed
 * meanwhile (by its callback or by anyone). Every cancel that stops an
 * arming is counted, so the group's count stays exact however many there
 * were.
 * Return: how many pending armings the cancels stopped.
 */
static unsigned int tw_cancel_wait_idle(struct twheel_timer *t)
{
	unsigned int cancelled = 0;
	unsigned long s;

	for (;;) {
		s = tw_wait_settled(t);
		if (tw_idle(s))
			return cancelled;
		cancelled += twheel_cancel(t);
		cond_resched();
	}
}

/*
 * twheel_cancel_sync(), as timer_delete_sync() and its loop over
 * __try_to_del_timer_sync(): stop at most one arming, and only while no
 * callback of the timer runs. Then no callback of the arming stopped, or
 * of any arming before it, can run any more, and the timer is pending
 * again only if someone armed it after that cancel: a callback cannot,
 * none runs. So we only wait for the wheel to let go, or return at once
 * if the timer is pending again (that arming is not ours to stop).
 *
 * Cancelling again after a success, as this did before, stopped two
 * armings when one was made while we waited for the wheel, and said one:
 * an arming that neither ran, nor was reported cancelled, nor moved.
 * Return: true if an arming was stopped.
 */
static bool tw_cancel_sync_one(struct twheel_timer *t)
{
	unsigned long s;
	bool stopped = false;

	for (;;) {
		s = tw_wait_settled(t);
		/*
		 * Settled and not pending is idle. Pending but held by no
		 * wheel is a periodic timer kept pending for the cancel of
		 * its shutdown (tw_end_run()): that one is still to stop.
		 */
		if (stopped || !(s & TW_PENDING))
			return stopped;
		/* Pending, no callback runs: refused only if one began since. */
		stopped = tw_cancel_refusing(t, &s, TW_RUNNING);
		cond_resched();
	}
}

static void tw_lockdep_sync(struct twheel_timer *t)
{
#ifdef CONFIG_LOCKDEP
	unsigned long flags;

	/*
	 * Tell lockdep we wait for the callback: holding a lock here that
	 * the callback takes is a deadlock, reported like timer_delete_sync().
	 */
	local_irq_save(flags);
	lock_map_acquire(&t->lockdep_map);
	lock_map_release(&t->lockdep_map);
	local_irq_restore(flags);
#endif
}

static bool tw_in_own_callback(struct twheel_timer *t)
{
	struct twheel_work_timer *wt;

	if (!(t->flags & TWHEEL_F_PROCESS))
		return false;
	wt = container_of(t, struct twheel_work_timer, timer);
	return current_work() == &wt->work;
}

/**
 * twheel_cancel_sync - stop a timer and wait until it is quiescent
 * @timer: the timer
 *
 * As timer_delete_sync(): waits for a running callback to return, then
 * cancels the pending arming, if any, the one the callback may have made
 * meanwhile included, and waits until the wheel has let go of the timer.
 * It stops at most one arming, and only while no callback of the timer
 * runs, so that every arming is accounted for exactly once: by its
 * callback, by a cancel that returned true, or by a later arming that
 * returned 1. On return no callback of the timer runs and it is not
 * pending, unless somebody else armed it concurrently (that arming stands
 * and may run); with nobody else arming it, its memory may then be freed.
 * Must not be called under a lock that the callback takes (lockdep
 * reports it), nor from the timer's own callback.
 *
 * Context: process context; may sleep.
 * Return: true if it stopped a pending arming (whose callback will not
 * run), false if there was none.
 */
bool twheel_cancel_sync(struct twheel_timer *timer)
{
	might_sleep();
	tw_lockdep_sync(timer);
	if (WARN_ON_ONCE(tw_in_own_callback(timer)))
		return twheel_cancel(timer);
	return tw_cancel_sync_one(timer);
}
EXPORT_SYMBOL_GPL(twheel_cancel_sync);

/*
 * For the close of a /dev/twheel file (chardev.c), which waits for
 * thousands of timers of one lockdep class (one initialiser: fd_ops.c)
 * under the same locks (none): lockdep is told once, by
 * twheel_sync_annotate() on any one of them, what twheel_cancel_sync()
 * tells it for each; then twheel_cancel_sync_quiet() waits as
 * twheel_cancel_sync() does without telling it again. Never from a
 * callback.
 */
void twheel_sync_annotate(struct twheel_timer *timer)
{
	might_sleep();
	tw_lockdep_sync(timer);
}

bool twheel_cancel_sync_quiet(struct twheel_timer *timer)
{
	might_sleep();
	return tw_cancel_sync_one(timer);
}

/**
 * twheel_shutdown_sync - cancel a timer for good, for teardown
 * @timer: the timer
 *
 * Cancels and waits as twheel_cancel_sync(); from then on twheel_arm() and
 * friends fail with -ESHUTDOWN, so a callback that re-arms its own timer
 * cannot bring it back.
 *
 * Context: process context; may sleep.
 */
void twheel_shutdown_sync(struct twheel_timer *timer)
{
	might_sleep();
	atomic_long_or(TW_SHUTDOWN, &timer->state);
	twheel_cancel_sync(timer);
}
EXPORT_SYMBOL_GPL(twheel_shutdown_sync);

/* ---------------------------------------------------------------------
 * Groups
 */

/**
 * twheel_group_init - initialise an empty group
 * @group: the group
 *
 * Context: any context.
 */
void twheel_group_init(struct twheel_group *group)
{
	spin_lock_init(&group->lock);
	INIT_LIST_HEAD(&group->timers);
	group->count = 0;
	group->shutdown = false;
}
EXPORT_SYMBOL_GPL(twheel_group_init);

/**
 * twheel_group_add - make a timer a member of a group
 * @group: the group
 * @member: the caller's link for @timer, not in any group; it must live
 *	as long as the membership (embed it beside the timer)
 * @timer: an initialised timer
 *
 * Context: any context but NMI.
 * Return: 0, or -ESHUTDOWN if the group was shut down.
 */
int twheel_group_add(struct twheel_group *group,
		     struct twheel_group_member *member,
		     struct twheel_timer *timer)
{
	unsigned long flags;
	int ret = 0;

	member->timer = timer;
	spin_lock_irqsave(&group->lock, flags);
	if (group->shutdown) {
		ret = -ESHUTDOWN;
	} else {
		list_add_tail(&member->node, &group->timers);
		group->count++;
	}
	spin_unlock_irqrestore(&group->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(twheel_group_add);

/**
 * twheel_group_del - remove a timer from its group
 * @group: the group
 * @member: the link twheel_group_add() succeeded with; not to be called
 *	while a group cancel runs
 *
 * Context: any context but NMI.
 */
void twheel_group_del(struct twheel_group *group,
		      struct twheel_group_member *member)
{
	unsigned long flags;

	spin_lock_irqsave(&group->lock, flags);
	list_del_init(&member->node);
	group->count--;
	spin_unlock_irqrestore(&group->lock, flags);
}
EXPORT_SYMBOL_GPL(twheel_group_del);

static unsigned int tw_group_stop(struct twheel_group *group, bool shutdown)
{
	struct twheel_group_member *m;
	struct twheel_timer *t;
	unsigned int stopped = 0, n = 0;
	unsigned long flags;

	might_sleep();
	spin_lock_irqsave(&group->lock, flags);
	if (shutdown)
		group->shutdown = true;
	/*
	 * Members are neither added (shutdown, or the caller's promise) nor
	 * removed while we run, so the walk may drop the lock between nodes.
	 */
	list_for_each_entry(m, &group->timers, node) {
		t = m->timer;
		if (shutdown)
			atomic_long_or(TW_SHUTDOWN, &t->state);
		stopped += twheel_cancel(t);
		if (++n % TW_IRQ_CHUNK == 0) {
			spin_unlock_irqrestore(&group->lock, flags);
			cond_resched();
			spin_lock_irqsave(&group->lock, flags);
		}
	}
	spin_unlock_irqrestore(&group->lock, flags);

	/*
	 * Members stay put while we wait: deleting them now is a caller bug.
	 * A callback that was running re-armed its timer: stopped too.
	 */
	list_for_each_entry(m, &group->timers, node) {
		t = m->timer;
		tw_lockdep_sync(t);
		stopped += tw_cancel_wait_idle(t);
		cond_resched();
	}
	return stopped;
}

/**
 * twheel_group_cancel_sync - cancel every member and wait for them
 * @group: the group
 *
 * All members are cancelled first, then waited for, so thousands of timers
 * cancel in one pass. Members must not be added or removed meanwhile.
 *
 * Context: process context; may sleep.
 * Return: how many pending armings were stopped: one per member that was
 * pending, plus one for each that a running callback re-armed meanwhile.
 */
unsigned int twheel_group_cancel_sync(struct twheel_group *group)
{
	return tw_group_stop(group, false);
}
EXPORT_SYMBOL_GPL(twheel_group_cancel_sync);

/**
 * twheel_group_shutdown_sync - shut every member down, for teardown
 * @group: the group
 *
 * As twheel_group_cancel_sync(), and members then refuse to be armed
 * (-ESHUTDOWN), as does twheel_group_add().
 *
 * Context: process context; may sleep.
 * Return: as twheel_group_cancel_sync().
 */
unsigned int twheel_group_shutdown_sync(struct twheel_group *group)
{
	return tw_group_stop(group, true);
}
EXPORT_SYMBOL_GPL(twheel_group_shutdown_sync);
