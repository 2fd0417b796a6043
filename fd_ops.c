// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the operations on the timers of /dev/twheel: SCHEDULE, MODIFY
 * and CANCEL, checked against uapi/twheel.h, run one at a time by the
 * single ioctls (which take tf->lock alone when they can, see
 * twheel_fd_lockless_ok()) or in runs under ctl_mutex
 * (twheel_fd_run_ops(): batches, and the single ops that cannot take the
 * fast path), and the preparation of a run's objects and slots. The states
 * and the locking are described at the top of chardev.c. In the chardev
 * layer (fd.h lists its files) it calls fd_obj.c, fd_map.h and fd_event.c;
 * only chardev.c calls it, through fd_ops.h.
 */

#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "twheel.h"
#include "compat.h"
#include "internal.h"
#include "fd_table.h"
#include "fd.h"
#include "fd_obj.h"
#include "fd_map.h"
#include "fd_event.h"
#include "fd_ops.h"
#include "tw_list.h"
#include "uapi/twheel.h"

/*
 * tf->lock for the operations: interrupts off, which the core's
 * twheel_arm_irqsoff() and twheel_cancel_idle_irqsoff() need, so that a
 * chunk of a batch turns them off once rather than twice per timer (under
 * emulation a save and restore of the interrupt flag costs as much as the
 * rest of an arming). At most TWHEEL_FD_BATCH_CHUNK operations run in one
 * such section, and none of them sleeps: a cancel that must wait for a
 * callback drops the lock first. On PREEMPT_RT tf->lock is a sleeping
 * lock that spin_lock_irq() takes with interrupts on, and the clock locks
 * taken under it sleep too: there it is taken with bottom halves off, as
 * elsewhere, and twheel_fd_core_arm() and twheel_fd_core_cancel() turn
 * interrupts off around each core call instead.
 */
static __always_inline void twheel_fd_lock_ops(struct twheel_fd *tf)
	__acquires(&tf->lock)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		spin_lock_bh(&tf->lock);
	else
		spin_lock_irq(&tf->lock);
}

static __always_inline void twheel_fd_unlock_ops(struct twheel_fd *tf)
	__releases(&tf->lock)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		spin_unlock_bh(&tf->lock);
	else
		spin_unlock_irq(&tf->lock);
}

/* twheel_arm() of a checked arming, under twheel_fd_lock_ops(). */
static __always_inline int twheel_fd_core_arm(struct twheel_fd_timer *ft,
					      ktime_t deadline, u64 period,
					      enum twheel_mode mode,
					      unsigned int slack)
{
	unsigned long flags;
	int ret;

	lockdep_assert_held(&twheel_fd_of(ft)->lock);
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		return twheel_arm_irqsoff(&ft->timer, deadline, period, mode,
					  slack);
	local_irq_save(flags);
	ret = twheel_arm_irqsoff(&ft->timer, deadline, period, mode, slack);
	local_irq_restore(flags);
	return ret;
}

/* twheel_cancel_idle_irqsoff() under twheel_fd_lock_ops(). */
static __always_inline bool twheel_fd_core_cancel(struct twheel_fd_timer *ft,
						  bool *running)
{
	unsigned long flags;
	bool ret;

	lockdep_assert_held(&twheel_fd_of(ft)->lock);
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		return twheel_cancel_idle_irqsoff(&ft->timer, running);
	local_irq_save(flags);
	ret = twheel_cancel_idle_irqsoff(&ft->timer, running);
	local_irq_restore(flags);
	return ret;
}

/* An arming of the core, checked and converted from a struct twheel_timer_spec. */
struct twheel_fd_arming {
	ktime_t			deadline;
	u64			period;
	enum twheel_mode	mode;
	int			clock;		/* another clock: TW_CLK_* */
	unsigned int		cflags;		/* another clock: TWHEEL_CLOCK_* */
	unsigned int		slack;		/* slack class: precise.h */
	u64			slack_ns;	/* TWHEEL_SLACK_DEFAULT or asked */
};

/* The flags a CLOCK_MONOTONIC timer may have. */
#define TWHEEL_FD_MONO_FLAGS	(TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC | \
				 TWHEEL_TIMER_FIXED_DELAY | TWHEEL_TIMER_SLACK)

/*
 * The value, period, mode and slack of @spec, any clock: sets @arm->mode
 * and the slack (a class for the core, and the ns asked for).
 * Return: 0, or -EINVAL.
 */
static __always_inline int
twheel_fd_check_mode(const struct twheel_timer_spec *spec,
		     struct twheel_fd_arming *arm)
{
	if (spec->value > S64_MAX)
		return -EINVAL;
	arm->slack = 0;
	arm->slack_ns = TWHEEL_SLACK_DEFAULT;
	if (unlikely(spec->flags & TWHEEL_TIMER_SLACK)) {
		if (spec->slack > S64_MAX)
			return -EINVAL;
		arm->slack = twheel_slack_class(spec->slack);
		arm->slack_ns = spec->slack;
	} else if (spec->slack) {
		return -EINVAL;
	}
	if (spec->flags & TWHEEL_TIMER_PERIODIC) {
		if (!spec->period || spec->period > S64_MAX)
			return -EINVAL;
		arm->mode = spec->flags & TWHEEL_TIMER_FIXED_DELAY ?
			    TWHEEL_FIXED_DELAY : TWHEEL_FIXED_RATE;
		return 0;
	}
	if (spec->period || (spec->flags & TWHEEL_TIMER_FIXED_DELAY))
		return -EINVAL;
	arm->mode = TWHEEL_ONESHOT;
	return 0;
}

/*
 * twheel_fd_check_spec() for CLOCK_REALTIME and CLOCK_BOOTTIME and their
 * alarm twins: one-shot or periodic (fixed rate or fixed delay, the period
 * on that clock) as on CLOCK_MONOTONIC; TWHEEL_TIMER_CANCEL_ON_SET only on
 * an absolute CLOCK_REALTIME[_ALARM] timer, periodic or not. An alarm
 * clock needs the opener's CAP_WAKE_ALARM (EPERM, after every EINVAL). A
 * relative value counts from that clock's now, read here.
 */
static noinline int twheel_fd_check_clock_spec(const struct twheel_fd *tf,
					       const struct twheel_timer_spec *spec,
					       struct twheel_fd_arming *arm)
{
	ktime_t now;
	int clock;

	if (spec->flags & ~TWHEEL_TIMER_FLAGS)
		return -EINVAL;
	if (spec->reserved)
		return -EINVAL;
	clock = twheel_clock_index(spec->clockid);
	if (clock <= TW_CLK_MONO)
		return -EINVAL;
	if (twheel_fd_check_mode(spec, arm))
		return -EINVAL;
	if ((spec->flags & TWHEEL_TIMER_CANCEL_ON_SET) &&
	    (tw_clock_base(clock) != TW_CLK_REAL ||
	     !(spec->flags & TWHEEL_TIMER_ABSTIME)))
		return -EINVAL;
	if (tw_clock_is_alarm(clock) && !tf->wake_alarm)
		return -EPERM;

	arm->period = spec->period;
	arm->clock = clock;
	arm->cflags = spec->flags & TWHEEL_TIMER_CANCEL_ON_SET ?
		      TWHEEL_CLOCK_CANCEL_ON_SET : 0;
	if (spec->flags & TWHEEL_TIMER_ABSTIME) {
		arm->deadline = twheel_fd_to_host(tf, clock, spec->value);
		return 0;
	}
	/* CLOCK_REALTIME may be set before 1970: now < 0 is possible. */
	now = twheel_clock_read(clock);
	if (check_add_overflow(now, (ktime_t)spec->value, &arm->deadline))
		return -ERANGE;
	arm->deadline = max_t(ktime_t, arm->deadline, 0);
	return 0;
}

/*
 * Checks @spec as uapi/twheel.h documents (all EINVAL first, then ERANGE)
 * and converts it. A relative value counts from *@now, the time the call
 * first needed it: read once per call (0 until then), so a batch costs one
 * clock read, and every deadline is at least its delay after the call
 * began. Another clock than CLOCK_MONOTONIC: twheel_fd_check_clock_spec(),
 * which sets @arm's clock fields (left alone otherwise).
 */
static __always_inline int
twheel_fd_check_spec(const struct twheel_fd *tf,
		     const struct twheel_timer_spec *spec,
		     struct twheel_fd_arming *arm, ktime_t *now)
{
	if (unlikely(spec->clockid != TWHEEL_CLOCK_MONOTONIC))
		return twheel_fd_check_clock_spec(tf, spec, arm);
	if (spec->flags & ~TWHEEL_FD_MONO_FLAGS)
		return -EINVAL;
	if (spec->reserved)
		return -EINVAL;
	if (twheel_fd_check_mode(spec, arm))
		return -EINVAL;
	arm->period = spec->period;

	if (spec->flags & TWHEEL_TIMER_ABSTIME) {
		/* A deadline on the file's time namespace's clock. */
		arm->deadline = twheel_fd_to_host(tf, TW_CLK_MONO, spec->value);
	} else {
		if (!*now)
			*now = ktime_get();
		if (spec->value > (u64)(KTIME_MAX - *now))
			return -ERANGE;
		arm->deadline = *now + (ktime_t)spec->value;
	}
	return 0;
}

/* One more chunk of the table, charged against the caps. */
static int twheel_fd_grow_table(struct twheel_fd *tf)
{
	struct twheel_fd_table_growth g;
	struct twheel_fd_slot **old_dir;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_charge(tf, TWHEEL_PAGE_UNITS);
	if (ret)
		return ret;
	ret = twheel_fd_table_grow_alloc(&tf->table, &g);
	if (ret) {
		twheel_fd_uncharge(tf, TWHEEL_PAGE_UNITS);
		return ret;
	}
	spin_lock_bh(&tf->lock);
	old_dir = twheel_fd_table_grow_commit(&tf->table, &g);
	spin_unlock_bh(&tf->lock);
	/* Lookups of the old directory were under tf->lock. */
	kvfree(old_dir);
	return 0;
}

/*
 * Makes sure the next @n SCHEDULE operations find a free slot and a spare
 * object, as far as the caps allow: grows the table and allocates objects,
 * which may sleep, before a batch takes tf->lock. Return: 0, or the error
 * that stopped it (-EDQUOT, -EAGAIN, -ENOMEM): the first SCHEDULE that
 * then finds no slot or no object fails with it. A full table is no error
 * here: the SCHEDULE past it fails with -ENOSPC on the per-file cap.
 */
static int twheel_fd_prepare(struct twheel_fd *tf, unsigned int n)
{
	struct twheel_fd_table *t = &tf->table;
	struct twheel_fd_timer *ft;
	unsigned int have, i;
	int table_err = 0, ret = 0;
	LLIST_HEAD(fresh);
	struct llist_node *last = NULL;

	lockdep_assert_held(&tf->ctl_mutex);

	/*
	 * Only we (ctl_mutex) grow the table; the single ioctls take and
	 * give back slots and spare objects under tf->lock alone meanwhile,
	 * so the counts read here are estimates: twheel_fd_run_ops() comes
	 * back if one of its SCHEDULE ops finds nothing left.
	 */
	while (t->nslots - READ_ONCE(t->used) < n && t->nslots < t->max_slots) {
		table_err = twheel_fd_grow_table(tf);
		if (table_err)
			break;
	}
	/* No more objects than free slots. */
	n = min(n, t->nslots - READ_ONCE(t->used));

	have = READ_ONCE(tf->nspare);

	for (i = have; i < n; i++) {
		ret = twheel_fd_charge(tf, 1);
		if (ret)
			break;
		ft = kmem_cache_alloc(twheel_fd_timer_cache, GFP_KERNEL_ACCOUNT);
		if (!ft) {
			twheel_fd_uncharge(tf, 1);
			ret = -ENOMEM;
			break;
		}
		ft->shared.share = &tf->share;
		/* Spare objects have no record (twheel_fd_recycle_locked()). */
		ft->clock = false;
		ft->cancelling = false;
		ft->starved = false;
		ft->rec = NULL;
		twheel_periodic_timer_init(&ft->pt, twheel_fd_expire);
		/*
		 * Userspace's: its precise runs are spaced, and its user
		 * holds a share of each precise user heap (precise.c).
		 */
		ft->pt.timer.flags |= TW_F_RATED;
		if (!tf->cap_exempt)
			ft->pt.timer.flags |= TW_F_SHARED;
		if (!last)
			last = &ft->free_node;
		__llist_add(&ft->free_node, &fresh);
	}
	if (i > have) {
		spin_lock_bh(&tf->lock);
		__llist_add_batch(fresh.first, last, &tf->spare);
		WRITE_ONCE(tf->nspare, tf->nspare + i - have);
		spin_unlock_bh(&tf->lock);
	}
	return table_err ?: ret;
}

/*
 * Arms @ft, which has a record, on another clock: its own link, or one from
 * @pre. Both locks held. Return: as twheel_clock_link_arm(), or -ENOMEM
 * with no link left.
 */
static int twheel_fd_arm_clock_locked(struct twheel_fd_timer *ft,
				      const struct twheel_fd_arming *arm,
				      struct twheel_fd_prealloc *pre)
{
	struct twheel_clock_link *link;

	lockdep_assert_held(&twheel_fd_of(ft)->ctl_mutex);
	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	if (!ft->clock) {
		if (list_empty(&pre->links))
			return -ENOMEM;
		link = list_first_entry(&pre->links, struct twheel_clock_link,
					node);
		list_del_init(&link->node);
		link->clock = arm->clock;
		link->was_set = false;
		ft->rec->clk = link;
		ft->clock = true;
	} else if (ft->rec->clk->clock != arm->clock) {
		/* Another clock's list: leave that one first. */
		twheel_clock_link_unlink(ft->rec->clk);
	}
	/* Every filing of the clock's link keeps it (twheel_arm()). */
	twheel_timer_set_slack(&ft->timer, arm->slack_ns);
	return twheel_clock_link_arm(ft->rec->clk, &ft->timer, arm->clock,
				     arm->deadline, arm->period, arm->mode,
				     arm->cflags);
}

/* Takes a spare object for a new timer of the file: there must be one. */
static __always_inline struct twheel_fd_timer *
twheel_fd_take_spare_locked(struct twheel_fd *tf)
{
	struct twheel_fd_timer *ft;

	lockdep_assert_held(&tf->lock);

	ft = llist_entry(tf->spare.first, struct twheel_fd_timer, free_node);
	tf->spare.first = ft->free_node.next;
	WRITE_ONCE(tf->nspare, tf->nspare - 1);
	tf->ntimers++;
	return ft;
}

/*
 * TWHEEL_OP_SCHEDULE: on success, writes the new id to @spec->id and
 * returns 0. On failure nothing has changed. @prep_err is what
 * twheel_fd_prepare() returned.
 */
static int twheel_fd_schedule_locked(struct twheel_fd *tf,
				     struct twheel_timer_spec *spec,
				     int prep_err, ktime_t *now,
				     struct twheel_fd_prealloc *pre)
{
	bool clock = spec->clockid != TWHEEL_CLOCK_MONOTONIC;
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	struct twheel_fd_rec *rec = NULL;
	int ret;

	lockdep_assert_held(&tf->lock);

	ret = twheel_fd_check_spec(tf, spec, &arm, now);
	if (ret)
		return ret;
	if (tf->ntimers >= tf->max_timers)
		return -ENOSPC;
	if (!tf->spare.first || !twheel_fd_table_has_free(&tf->table))
		return prep_err ?: -ENOMEM;
	if (unlikely(arm.mode != TWHEEL_ONESHOT || clock)) {
		rec = twheel_fd_rec_take_locked(tf, pre);
		if (!rec)
			return -ENOMEM;
	}

	ft = twheel_fd_take_spare_locked(tf);
	twheel_fd_table_insert(&tf->table, &ft->id);
	ft->mode = arm.mode;
	ft->user_data = spec->user_data;
	ft->live = true;
	ft->parked = false;
	ft->on_list = false;
	ft->in_flight = false;
	if (unlikely(rec))
		twheel_fd_rec_attach(ft, rec);
	twheel_fd_publish_deadline(tf, ft, clock ? arm.clock : TW_CLK_MONO,
				   arm.deadline);

	if (unlikely(clock))
		ret = twheel_fd_arm_clock_locked(ft, &arm, pre);
	else
		ret = twheel_fd_core_arm(ft, arm.deadline, arm.period,
					 arm.mode, arm.slack);
	if (ret < 0) {
		/*
		 * Never armed: straight back to the spare list it just
		 * left, however long that is now (a batch's twheel_fd_prepare()
		 * may have filled it past TWHEEL_FD_SPARE_MAX meanwhile).
		 */
		ft->live = false;
		twheel_fd_table_remove(&tf->table, ft->id);
		tf->ntimers--;
		twheel_fd_recycle_locked(tf, ft, NULL);
		return ret;
	}
	spec->id = ft->id;
	return 0;
}

/*
 * twheel_fd_modify_locked() onto or from another clock: as that, and the
 * timer's link follows (taken from @links, or freed).
 */
static noinline int twheel_fd_modify_clock_locked(struct twheel_fd *tf,
						  struct twheel_fd_timer *ft,
						  const struct twheel_timer_spec *spec,
						  const struct twheel_fd_arming *arm,
						  struct twheel_fd_prealloc *pre)
{
	bool to_clock = spec->clockid != TWHEEL_CLOCK_MONOTONIC;
	bool parked;
	int ret;

	if (to_clock && !ft->clock && list_empty(&pre->links))
		return -ENOMEM;
	ret = twheel_fd_rec_need_locked(tf, ft, pre);
	if (ret)
		return ret;
	parked = twheel_fd_unpark_locked(ft);
	if (!to_clock) {
		/* The running expiry, if any, now takes the monotonic path. */
		twheel_fd_clock_put(ft);
	}
	ft->mode = arm->mode;
	ft->user_data = spec->user_data;
	twheel_fd_publish_deadline(tf, ft, to_clock ? arm->clock : TW_CLK_MONO,
				   arm->deadline);
	if (to_clock) {
		ret = twheel_fd_arm_clock_locked(ft, arm, pre);
	} else {
		twheel_timer_set_slack(&ft->timer, arm->slack_ns);
		ret = twheel_arm(&ft->timer, arm->deadline, arm->period,
				 arm->mode);
		/* A pending one-shot timer on CLOCK_MONOTONIC needs none. */
		twheel_fd_rec_trim_locked(tf, ft);
	}
	return ret < 0 ? ret : ret || parked;
}

/*
 * twheel_fd_unstarve_locked() for an op under ctl_mutex: should no record be
 * had without sleeping, one is allocated with tf->lock dropped, the timer
 * marked cancelling meanwhile so that the ops under tf->lock alone leave it
 * alone (and nobody else settles a starved timer without ctl_mutex).
 * Return: 0, or -ENOMEM if even that failed; the timer is then as it was.
 */
static noinline int twheel_fd_unstarve_op_locked(struct twheel_fd *tf,
						 struct twheel_fd_timer *ft,
						 struct twheel_fd_prealloc *pre)
	__must_hold(&tf->lock)
{
	bool cancelling = ft->cancelling;
	struct twheel_fd_rec *rec;

	lockdep_assert_held(&tf->ctl_mutex);

	if (!twheel_fd_unstarve_locked(tf, ft, pre))
		return 0;
	ft->cancelling = true;
	twheel_fd_unlock_ops(tf);
	rec = kmem_cache_alloc(twheel_fd_rec_cache, GFP_KERNEL_ACCOUNT);
	twheel_fd_lock_ops(tf);
	ft->cancelling = cancelling;
	/* Where twheel_fd_unstarve_locked() finds it. */
	if (rec)
		twheel_fd_rec_put_locked(tf, rec);
	/* The callback of an arming that raced it may have given it one. */
	return ft->starved ? twheel_fd_unstarve_locked(tf, ft, pre) : 0;
}

/*
 * TWHEEL_OP_MODIFY of @ft, the timer of @spec->id, to @arm, what @spec
 * checked out as: 1 if it was pending, 0 if not.
 */
static __always_inline int
twheel_fd_modify_timer_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			      const struct twheel_timer_spec *spec,
			      const struct twheel_fd_arming *arm,
			      struct twheel_fd_prealloc *pre)
{
	bool parked;
	int ret;

	lockdep_assert_held(&tf->lock);

	/*
	 * Its owed event first: the arming below moves its deadline. Only
	 * under ctl_mutex: the ops under tf->lock alone leave starved timers
	 * to the batch way (twheel_fd_lockless_ok()).
	 */
	if (unlikely(ft->starved)) {
		ret = twheel_fd_unstarve_op_locked(tf, ft, pre);
		if (ret)
			return ret;
	}
	if (unlikely(ft->clock || spec->clockid != TWHEEL_CLOCK_MONOTONIC))
		return twheel_fd_modify_clock_locked(tf, ft, spec, arm, pre);
	if (unlikely(arm->mode != TWHEEL_ONESHOT)) {
		ret = twheel_fd_rec_need_locked(tf, ft, pre);
		if (ret)
			return ret;
	}

	/*
	 * An expiry of the previous arming may still be running, and will
	 * see the new mode and user_data: it is reported as the new timer's.
	 * Armed under tf->lock (twheel_arm() takes no lock and does not
	 * wait), so that a running callback decides whether to park the
	 * timer (twheel_fd_park_locked()) or to extend it
	 * (twheel_fd_extend_locked()) either before this arming, which then
	 * moves the timer again, or after it, and then leaves it alone.
	 */
	/* The periods of the old arming, up to now, are counted. */
	parked = twheel_fd_unpark_locked(ft);
	ft->mode = arm->mode;
	ft->user_data = spec->user_data;
	twheel_fd_publish_deadline(tf, ft, TW_CLK_MONO, arm->deadline);
	ret = twheel_fd_core_arm(ft, arm->deadline, arm->period, arm->mode,
				 arm->slack);
	/* Periodic no more: a pending one-shot timer needs no record. */
	if (unlikely(ft->rec))
		twheel_fd_rec_trim_locked(tf, ft);

	/* A parked periodic timer was pending, as far as its user knows. */
	return ret < 0 ? ret : ret || parked;
}

/* TWHEEL_OP_MODIFY: 1 if it was pending, 0 if not. */
static int twheel_fd_modify_locked(struct twheel_fd *tf,
				   const struct twheel_timer_spec *spec,
				   ktime_t *now, struct twheel_fd_prealloc *pre)
{
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	int ret;

	lockdep_assert_held(&tf->lock);

	ret = twheel_fd_check_spec(tf, spec, &arm, now);
	if (ret)
		return ret;
	ft = twheel_fd_lookup(tf, spec->id);
	if (!ft)
		return -ENOENT;
	return twheel_fd_modify_timer_locked(tf, ft, spec, &arm, pre);
}

/*
 * The rest of a cancel once the timer's arming is cancelled and no callback
 * runs for it: releases the id, and recycles the object or leaves it to
 * the reader of its queued event. Return: @pending, or true if the timer
 * was parked (pending for its user).
 */
static __always_inline int
twheel_fd_cancel_finish_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			       bool pending, bool discard,
			       struct llist_head *doomed)
{
	lockdep_assert_held(&tf->lock);

	twheel_fd_table_remove(&tf->table, ft->id);
	ft->live = false;
	/* Parked: not armed in the core, but pending for its user. */
	if (twheel_fd_unpark_locked(ft))
		pending = true;
	if (discard && ft->on_list) {
		tw_list_del_init(&ft->rec->node);
		tf->unqueued++;
		ft->on_list = false;
		ft->rec->count = 0;
		WRITE_ONCE(tf->nqueued, tf->nqueued - 1);
	}
	if (ft->on_list || ft->in_flight) {
		/*
		 * An orphan now: the reader of its event recycles it. The
		 * event of a periodic timer says that no more will follow.
		 */
		if (ft->mode != TWHEEL_ONESHOT)
			ft->rec->flags |= TWHEEL_EVENT_CANCELLED;
	} else {
		tf->ntimers--;
		twheel_fd_recycle_locked(tf, ft, doomed);
	}
	return pending;
}

/*
 * Cancels @ft and releases its id; 1 if it was pending, 0 if not. A queued
 * event stays readable (then the object is recycled by the reader), unless
 * @discard, which drops an event still on the ready list. Drops tf->lock
 * while it waits for a callback in flight.
 */
static __always_inline int
twheel_fd_cancel_timer_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			      bool discard, struct llist_head *doomed,
			      struct twheel_fd_prealloc *pre)
	__must_hold(&tf->lock)
{
	bool pending, running;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);
	lockdep_assert_held(&tf->lock);

	/*
	 * Its owed event becomes an orphan's, as a queued one would: before
	 * the cancel, so that ENOMEM changes nothing.
	 */
	if (unlikely(ft->starved) && !discard) {
		ret = twheel_fd_unstarve_op_locked(tf, ft, pre);
		if (ret)
			return ret;
	}

	/*
	 * Nobody can arm it after this but its own callback, which we wait
	 * for: arming takes the id, and the ops that take tf->lock alone
	 * leave a timer that is @cancelling to us (twheel_fd_lockless_ok()).
	 * With no callback in flight (the common case) there is nothing to
	 * wait for: the record is final and the object may be recycled at
	 * once.
	 */
	pending = false;
	if (unlikely(ft->clock))
		pending = twheel_clock_link_unlink(ft->rec->clk);
	pending |= twheel_fd_core_cancel(ft, &running);
	if (running && twheel_running(&ft->timer)) {
		/* Its callback takes tf->lock. */
		ft->cancelling = true;
		twheel_fd_unlock_ops(tf);
		pending |= twheel_cancel_sync(&ft->timer);
		twheel_fd_lock_ops(tf);
		ft->cancelling = false;
	}
	/* That expiry may have found no record: it is owed one. */
	if (unlikely(ft->starved)) {
		if (discard) {
			ft->starved = false;
			ft->rec = NULL;
			WRITE_ONCE(tf->nstarved, tf->nstarved - 1);
		} else if (twheel_fd_unstarve_op_locked(tf, ft, pre)) {
			/* Fired, not pending: a consistent state to leave. */
			return -ENOMEM;
		}
	}
	return twheel_fd_cancel_finish_locked(tf, ft, pending, discard, doomed);
}

/* TWHEEL_OP_CANCEL: 1 if it was pending, 0 if not. */
static int twheel_fd_cancel_locked(struct twheel_fd *tf,
				   const struct twheel_timer_spec *s,
				   struct llist_head *doomed,
				   struct twheel_fd_prealloc *pre)
	__must_hold(&tf->lock)
{
	struct twheel_fd_timer *ft;

	if (s->value || s->period || s->user_data || s->clockid ||
	    s->flags || s->slack || s->reserved)
		return -EINVAL;
	ft = twheel_fd_lookup(tf, s->id);
	if (!ft)
		return -ENOENT;
	return twheel_fd_cancel_timer_locked(tf, ft, false, doomed, pre);
}

static int twheel_fd_run_op_locked(struct twheel_fd *tf, struct twheel_op *op,
				   int prep_err, ktime_t *now,
				   struct llist_head *doomed,
				   struct twheel_fd_prealloc *pre)
	__must_hold(&tf->lock)
{
	switch (op->op) {
	case TWHEEL_OP_SCHEDULE:
		return twheel_fd_schedule_locked(tf, &op->spec, prep_err, now,
						 pre);
	case TWHEEL_OP_MODIFY:
		return twheel_fd_modify_locked(tf, &op->spec, now, pre);
	case TWHEEL_OP_CANCEL:
		return twheel_fd_cancel_locked(tf, &op->spec, doomed, pre);
	default:
		return -EINVAL;
	}
}

/*
 * Runs @ops in order, each op's return in its @result, up to the first that
 * fails. One hold of ctl_mutex for all of them, tf->lock taken once per
 * TWHEEL_FD_LOCK_ROUND of them; the allocations for the SCHEDULE ops are
 * done before (twheel_fd_prepare()), the frees after. *@now is the time of
 * the call, 0 until an op first needs it (twheel_fd_check_spec()).
 * Return: how many succeeded.
 */
unsigned int twheel_fd_run_ops(struct twheel_fd *tf, struct twheel_op *ops,
			       unsigned int count, ktime_t *now)
{
	unsigned int done, nsched = 0, nclock = 0, nrec = 0, i, again = 0;
	struct twheel_fd_prealloc pre;
	LLIST_HEAD(doomed);
	int prep_err = 0, r;

	INIT_LIST_HEAD(&pre.links);
	INIT_LIST_HEAD(&pre.recs);
	for (i = 0; i < count; i++) {
		bool arms = ops[i].op == TWHEEL_OP_SCHEDULE ||
			    ops[i].op == TWHEEL_OP_MODIFY;
		bool clock = ops[i].spec.clockid != TWHEEL_CLOCK_MONOTONIC;

		nsched += ops[i].op == TWHEEL_OP_SCHEDULE;
		nclock += arms && clock;
		/* Timers that need a record; starved ones get theirs later. */
		nrec += arms && (clock || ops[i].spec.flags &
				 TWHEEL_TIMER_PERIODIC);
	}
	/* Links and records: allocated while we may sleep. */
	if (unlikely(nclock))
		twheel_fd_links_alloc(&pre.links, nclock);
	if (unlikely(nrec))
		twheel_fd_recs_alloc(&pre.recs, nrec);

	mutex_lock(&tf->ctl_mutex);
	if (nsched)
		prep_err = twheel_fd_prepare(tf, nsched);
	twheel_fd_lock_ops(tf);
	tf->reserved = nsched;
	for (done = 0; done < count; done++) {
		if (unlikely(ops[done].op == TWHEEL_OP_SCHEDULE && !prep_err &&
			     (!tf->spare.first ||
			      !twheel_fd_table_has_free(&tf->table)) &&
			     again++ < 2)) {
			/*
			 * A single SCHEDULE (tf->lock alone) took what
			 * twheel_fd_prepare() made before @reserved said so:
			 * make the rest again, which @reserved now keeps for
			 * us; should that fail, the op fails as it finds
			 * things.
			 */
			twheel_fd_unlock_ops(tf);
			prep_err = twheel_fd_prepare(tf, nsched);
			twheel_fd_lock_ops(tf);
		}
		if (ops[done].op == TWHEEL_OP_SCHEDULE)
			tf->reserved = --nsched;
		r = twheel_fd_run_op_locked(tf, &ops[done], prep_err, now,
					    &doomed, &pre);
		ops[done].result = r;
		if (r < 0)
			break;
		if ((done + 1) % TWHEEL_FD_LOCK_ROUND == 0 &&
		    done + 1 < count) {
			twheel_fd_unlock_ops(tf);
			cond_resched();
			twheel_fd_lock_ops(tf);
		}
	}
	tf->reserved = 0;
	twheel_fd_unlock_ops(tf);
	mutex_unlock(&tf->ctl_mutex);

	twheel_fd_links_free(&pre.links);
	twheel_fd_recs_free(&pre.recs);
	twheel_fd_destroy_list(tf, &doomed);
	return done;
}

/*
 * The single ioctls on CLOCK_MONOTONIC (the common case) take tf->lock
 * alone, without ctl_mutex, when their op can run with it held throughout:
 * a SCHEDULE that finds a spare object and a free slot, a MODIFY or CANCEL
 * of a timer that twheel_fd_lockless_ok() accepts (and, for CANCEL, whose
 * callback is not running, which would have to be waited for). Otherwise,
 * or on another clock, they take the way of a batch: ctl_mutex, then
 * tf->lock. Both ways make every change under tf->lock.
 */

/*
 * May an op under tf->lock alone touch @ft? Not if a reader holds it
 * (in_flight: read() settles it under ctl_mutex, with tf->lock dropped),
 * not while a cancel under ctl_mutex waits for its callback (cancelling),
 * not on another clock (its link is allocated under ctl_mutex), and not if
 * it is starved (its record may have to be allocated).
 */
static __always_inline bool twheel_fd_lockless_ok(const struct twheel_fd_timer *ft)
{
	return !ft->in_flight && !ft->cancelling && !ft->clock && !ft->starved;
}

/*
 * Has the arming of @spec under tf->lock alone the record it may need? A
 * periodic timer needs one, which then comes from tf->recs.
 */
static __always_inline bool twheel_fd_lockless_rec_ok(const struct twheel_fd *tf,
						      const struct twheel_timer_spec *spec,
						      const struct twheel_fd_timer *ft)
{
	return !(spec->flags & TWHEEL_TIMER_PERIODIC) || tf->nrecs ||
	       (ft && ft->rec);
}

/*
 * A single op the way of a batch (ctl_mutex, then tf->lock): @spec in, and
 * back out with a SCHEDULE's new id. Return: the op's result. Out of line,
 * so that the fast paths set up no struct twheel_op: the kernels built
 * with CONFIG_INIT_STACK_ALL_ZERO would clear one on every call.
 */
static noinline int twheel_fd_run_one(struct twheel_fd *tf, u32 opcode,
				      struct twheel_timer_spec *spec,
				      ktime_t *now)
{
	struct twheel_op op = { .op = opcode, .spec = *spec };

	twheel_fd_run_ops(tf, &op, 1, now);
	spec->id = op.spec.id;
	return op.result;
}

/* A CANCEL of @id the way of a batch, as twheel_fd_run_one(). */
static noinline int twheel_fd_cancel_one(struct twheel_fd *tf, u64 id,
					 ktime_t *now)
{
	struct twheel_timer_spec spec = { .id = id };

	return twheel_fd_run_one(tf, TWHEEL_OP_CANCEL, &spec, now);
}

static int twheel_fd_schedule_one(struct twheel_fd *tf,
				  struct twheel_timer_spec *spec)
{
	ktime_t now = 0;
	int ret;

	if (likely(spec->clockid == TWHEEL_CLOCK_MONOTONIC)) {
		twheel_fd_lock_ops(tf);
		/* What a batch made for itself stays its own (@reserved). */
		if (likely(tf->nspare > tf->reserved &&
			   twheel_fd_table_nfree(&tf->table) > tf->reserved &&
			   twheel_fd_lockless_rec_ok(tf, spec, NULL))) {
			ret = twheel_fd_schedule_locked(tf, spec, 0, &now, NULL);
			twheel_fd_unlock_ops(tf);
			return ret;
		}
		twheel_fd_unlock_ops(tf);
	}
	/* Objects or slots to make first (or another clock). */
	return twheel_fd_run_one(tf, TWHEEL_OP_SCHEDULE, spec, &now);
}

long twheel_fd_ioc_schedule(struct twheel_fd *tf,
			    struct twheel_timer_spec __user *uspec)
{
	/* Filled whole by twheel_fd_get_struct() before any use. */
	struct twheel_timer_spec spec __uninitialized;
	struct twheel_fd_timer *ft;
	LLIST_HEAD(doomed);
	int ret;

	if (twheel_fd_get_struct(&spec, uspec))
		return -EFAULT;
	ret = twheel_fd_schedule_one(tf, &spec);
	if (ret)
		return ret;
	if (!put_user(spec.id, &uspec->id))
		return 0;

	/*
	 * The caller cannot learn the id, so cannot use the timer: undo,
	 * unless another thread guessed the id and got there first.
	 */
	mutex_lock(&tf->ctl_mutex);
	twheel_fd_lock_ops(tf);
	ft = twheel_fd_lookup(tf, spec.id);
	if (ft)
		twheel_fd_cancel_timer_locked(tf, ft, true, &doomed, NULL);
	twheel_fd_unlock_ops(tf);
	mutex_unlock(&tf->ctl_mutex);
	twheel_fd_destroy_list(tf, &doomed);
	return -EFAULT;
}

long twheel_fd_ioc_modify(struct twheel_fd *tf,
			  const struct twheel_timer_spec __user *uspec)
{
	/* Filled whole by twheel_fd_get_struct() before any use. */
	struct twheel_timer_spec spec __uninitialized;
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	ktime_t now = 0;
	long ret;

	if (twheel_fd_get_struct(&spec, uspec))
		return -EFAULT;
	if (likely(spec.clockid == TWHEEL_CLOCK_MONOTONIC)) {
		/* Checked, and the clock read, before interrupts go off. */
		ret = twheel_fd_check_spec(tf, &spec, &arm, &now);
		if (ret)
			return ret;
		twheel_fd_lock_ops(tf);
		ft = twheel_fd_lookup(tf, spec.id);
		if (!ft) {
			twheel_fd_unlock_ops(tf);
			return -ENOENT;
		}
		if (likely(twheel_fd_lockless_ok(ft) &&
			   twheel_fd_lockless_rec_ok(tf, &spec, ft))) {
			ret = twheel_fd_modify_timer_locked(tf, ft, &spec, &arm,
							    NULL);
			twheel_fd_unlock_ops(tf);
			return ret;
		}
		twheel_fd_unlock_ops(tf);
	}
	return twheel_fd_run_one(tf, TWHEEL_OP_MODIFY, &spec, &now);
}

long twheel_fd_ioc_cancel(struct twheel_fd *tf,
			  const struct twheel_cancel __user *uc)
{
	struct twheel_fd_timer *ft;
	/* Filled whole by twheel_fd_get_struct() before any use. */
	struct twheel_cancel c __uninitialized;
	bool cancelled = false, pending = false, running;
	ktime_t now = 0;
	LLIST_HEAD(doomed);
	long ret;

	if (twheel_fd_get_struct(&c, uc))
		return -EFAULT;
	if (c.flags || c.pad)
		return -EINVAL;
	twheel_fd_lock_ops(tf);
	ft = twheel_fd_lookup(tf, c.id);
	if (!ft) {
		twheel_fd_unlock_ops(tf);
		return -ENOENT;
	}
	if (likely(twheel_fd_lockless_ok(ft))) {
		cancelled = true;
		pending = twheel_fd_core_cancel(ft, &running);
		if (likely(!running || !twheel_running(&ft->timer))) {
			ret = twheel_fd_cancel_finish_locked(tf, ft, pending,
							     false, &doomed);
			twheel_fd_unlock_ops(tf);
			if (unlikely(!llist_empty(&doomed)))
				twheel_fd_destroy_list(tf, &doomed);
			return ret;
		}
	}
	twheel_fd_unlock_ops(tf);

	/*
	 * Its callback must be waited for (or another reason above): again
	 * under ctl_mutex. If the id went meanwhile, our cancel came first.
	 */
	ret = twheel_fd_cancel_one(tf, c.id, &now);
	/* Gone meanwhile: another call released it after our cancel. */
	if (ret == -ENOENT && cancelled)
		return pending;
	return ret < 0 ? ret : ret || pending;
}

/*
 * Restoring a dump (TWHEEL_IOC_RESTORE, fd_cr.c): one timer at a time, in
 * restore mode, where nothing else takes a slot.
 */

/**
 * twheel_fd_restore_prepare - what restoring one entry takes that may sleep
 * @tf: the file
 * @st: the entry, as given
 * @pre: where to put a record and a link for it
 *
 * Grows the table to the entry's slot and makes a spare object, a record
 * and (another clock) a link, as far as the caps and memory allow; what
 * it could not make, twheel_fd_restore_timer() fails for.
 *
 * Context: process context, under tf->ctl_mutex.
 * Return: 0, -EINVAL for a slot past max_timers, or the error of the caps
 * or the allocations.
 */
int twheel_fd_restore_prepare(struct twheel_fd *tf,
			      const struct twheel_timer_state *st,
			      struct twheel_fd_prealloc *pre)
{
	u32 slot = TWHEEL_FD_ID_SLOT(st->id);
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	if (!(st->state & TWHEEL_STATE_ORPHAN)) {
		if (!lower_32_bits(st->id) || slot >= tf->table.max_slots)
			return -EINVAL;
		while (slot >= tf->table.nslots) {
			ret = twheel_fd_grow_table(tf);
			if (ret)
				return ret;
		}
	}
	if (st->state & TWHEEL_STATE_FREE)
		return 0;
	ret = twheel_fd_prepare(tf, 1);
	if (ret)
		return ret;
	if (list_empty(&pre->recs))
		twheel_fd_recs_alloc(&pre->recs, 1);
	if (st->clockid != TWHEEL_CLOCK_MONOTONIC && list_empty(&pre->links))
		twheel_fd_links_alloc(&pre->links, 1);
	return 0;
}

/* The unread event of @st given to @ft, queued after those restored before. */
static void twheel_fd_restore_event_locked(struct twheel_fd *tf,
					   struct twheel_fd_timer *ft,
					   const struct twheel_timer_state *st,
					   int clock)
{
	struct twheel_fd_rec *rec = ft->rec;

	rec->user_data = st->ev_user_data;
	rec->deadline = twheel_fd_to_host(tf, clock, st->ev_deadline);
	rec->fired = twheel_fd_to_host(tf, clock, st->ev_fired);
	rec->count = st->ev_count;
	rec->flags = st->ev_flags;
	rec->clock = clock;
	twheel_fd_queue_tail_locked(tf, ft);
}

/* twheel_fd_restore_timer() under twheel_fd_lock_ops(). */
static int twheel_fd_restore_locked(struct twheel_fd *tf,
				    const struct twheel_timer_state *st,
				    struct twheel_fd_prealloc *pre)
{
	struct twheel_timer_spec spec = {
		.value = st->deadline,
		.period = st->period,
		.user_data = st->user_data,
		.clockid = st->clockid,
		.flags = st->flags | TWHEEL_TIMER_ABSTIME,
		.slack = st->slack,
	};
	bool pending = st->state & TWHEEL_STATE_PENDING;
	bool orphan = st->state & TWHEEL_STATE_ORPHAN;
	bool clock = st->clockid != TWHEEL_CLOCK_MONOTONIC;
	struct twheel_fd_rec *rec = NULL;
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	int ev_clock = TW_CLK_MONO;
	ktime_t now = 0;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);
	lockdep_assert_held(&tf->lock);

	if (st->flags & TWHEEL_TIMER_ABSTIME)
		return -EINVAL;
	ret = twheel_fd_check_spec(tf, &spec, &arm, &now);
	if (ret)
		return ret;
	if (st->ev_count) {
		ev_clock = twheel_clock_index(st->ev_clockid);
		if (ev_clock < 0 || st->ev_flags & ~(TWHEEL_EVENT_PERIODIC |
						     TWHEEL_EVENT_CANCELLED |
						     TWHEEL_EVENT_CLOCK_SET))
			return -EINVAL;
	} else if (!pending || st->ev_flags || st->ev_user_data ||
		   st->ev_deadline || st->ev_fired || st->ev_clockid) {
		return -EINVAL;
	}
	if (orphan ? pending : !pending && arm.mode != TWHEEL_ONESHOT)
		return -EINVAL;
	if (!pending && (st->deadline || st->period))
		return -EINVAL;
	if (tf->ntimers >= tf->max_timers)
		return -ENOSPC;
	if (!tf->spare.first)
		return -ENOMEM;
	if (!orphan && twheel_fd_table_slot_obj(&tf->table,
						TWHEEL_FD_ID_SLOT(st->id)))
		return -EEXIST;
	if (clock || arm.mode != TWHEEL_ONESHOT || st->ev_count) {
		rec = twheel_fd_rec_take_locked(tf, pre);
		if (!rec)
			return -ENOMEM;
	}

	ft = twheel_fd_take_spare_locked(tf);
	ft->id = st->id;
	ft->mode = orphan ? TWHEEL_ONESHOT : arm.mode;
	ft->user_data = st->user_data;
	ft->live = !orphan;
	ft->parked = false;
	ft->on_list = false;
	ft->in_flight = false;
	if (rec)
		twheel_fd_rec_attach(ft, rec);
	if (!orphan)
		WARN_ON_ONCE(twheel_fd_table_insert_at(&tf->table, &ft->id));

	if (pending && clock)
		ret = twheel_fd_arm_clock_locked(ft, &arm, pre);
	else if (pending)
		ret = twheel_fd_core_arm(ft, arm.deadline, arm.period,
					 arm.mode, arm.slack);
	if (ret < 0) {
		ft->live = false;
		if (!orphan)
			twheel_fd_table_remove(&tf->table, ft->id);
		tf->ntimers--;
		twheel_fd_recycle_locked(tf, ft, NULL);
		return ret;
	}
	if (st->ev_count)
		twheel_fd_restore_event_locked(tf, ft, st, ev_clock);
	return 0;
}

/**
 * twheel_fd_restore_timer - recreate one timer of a dump
 * @tf: the file, in restore mode
 * @st: the entry (struct twheel_timer_state), other than TWHEEL_STATE_FREE,
 *	whose fixed fields the caller checked
 * @pre: what twheel_fd_restore_prepare() made
 *
 * The timer gets @st's id (a live one) and arming, which is checked as an
 * ABSTIME SCHEDULE's (the slot of the mapped deadline array is left
 * alone), and @st's unread event, queued. An entry no dump could give
 * fails: a live timer neither pending nor with an event, a periodic one
 * not pending, an orphan pending or without an event.
 *
 * Context: process context, under tf->ctl_mutex; takes tf->lock.
 * Return: 0, or -EINVAL, -EEXIST, -ENOSPC, -EPERM, -ENOMEM as uapi/twheel.h
 * says of TWHEEL_IOC_RESTORE.
 */
int twheel_fd_restore_timer(struct twheel_fd *tf,
			    const struct twheel_timer_state *st,
			    struct twheel_fd_prealloc *pre)
{
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	twheel_fd_lock_ops(tf);
	ret = twheel_fd_restore_locked(tf, st, pre);
	twheel_fd_unlock_ops(tf);
	return ret;
}
