// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: timers on CLOCK_REALTIME and CLOCK_BOOTTIME.
 *
 * The wheels count CLOCK_MONOTONIC. A timer on another clock is filed on
 * them at the monotonic time its clock should reach its deadline:
 *
 *   mono = deadline - (clock - CLOCK_MONOTONIC), clamped to [0, KTIME_MAX]
 *
 * and remembers its clock and its deadline in a struct twheel_clock_link,
 * which stays on its clock's armed list until the arming is reported. The
 * offset between the clocks changes only when the clock is set
 * (settimeofday(), clock_settime(), adjtimex() offsets, leap seconds) or,
 * for CLOCK_BOOTTIME, when time spent in suspend is added on resume. The
 * timekeeper announces each such change to pvclock_gtod notifiers with
 * was_set; twheel_clock_notify() queues tw_clock_set_work through an
 * irq_work, since it runs under the timekeeper's raw lock with interrupts
 * off and the seqcount held for write (it must not read a clock nor wake
 * anybody). The work walks the armed lists and files each timer again for
 * the new offset, or, for a timer armed with TWHEEL_CLOCK_CANCEL_ON_SET
 * whose clock's offset is no longer the one it was armed with, marks it
 * ended by the set and files it to fire at once, so that its callback
 * reports it. Comparing offsets rather than counting notifications keeps
 * was_set updates that move no clock (a change of clocksource, the
 * notifier's registration) from ending cancel-on-set timers, as timerfd's
 * do not either; a set and its exact undo before the work runs end none.
 * So:
 *
 *   - a timer fires promptly after a set forward past its deadline (and a
 *     CLOCK_BOOTTIME timer after a resume past it): the work files it in
 *     the past, which the wheel runs at its next tick;
 *   - it never fires before its clock reaches the deadline: every expiry
 *     reads the clock (twheel_clock_link_expire()) and, if the clock went
 *     back since the timer was filed, files it again for the new offset
 *     instead of reporting it. That new monotonic deadline is in the
 *     future, so this happens at most once per set of the clock.
 *
 * Relative timers are absolute ones at clock_now + delay, as hrtimer and
 * timerfd make them: a set of the clock moves them too.
 *
 * Periodic timers. The period is on the timer's own clock, as timerfd's
 * interval is: the link's deadline is the next expiry on that clock, and
 * the core timer is always filed one-shot, for that deadline. The expiry
 * (under the clock's lock) counts the expiries up to the clock's now,
 * moves the deadline past them (fixed rate: on the grid of the first
 * deadline; fixed delay: a period after now) and files the timer for the
 * new deadline at the current offset. So after a set forward past several
 * periods the next expiry comes at once and counts them (timerfd's overrun
 * count), after a set backward it waits for the clock, and a cancel-on-set
 * periodic timer is ended by a set as a one-shot one is. The link stays on
 * its clock's list from the arming until it is cancelled or ended by a
 * set. A user that wants to stop re-filing for a while (/dev/twheel's lazy
 * re-arming of an unread timer) asks the expiry to leave the timer unfiled
 * (parked): the link keeps its next deadline and stays on the list, where
 * the set work leaves it alone, as it leaves every unfiled timer (for
 * cancel-on-set it notes the set); twheel_clock_link_catch_up() later
 * counts the periods that passed and twheel_clock_link_refile() files it
 * again.
 *
 * Locking and races. Each clock has a spinlock (tw_clock::lock, taken with
 * interrupts off: armings come from any context) that protects its lists
 * and every field of the links on them. A link is on its clock's list
 * exactly while its arming is pending, i.e. not yet reported:
 *
 *   arming   (twheel_clock_link_arm())     links it and files the timer,
 *                                          under the lock (a periodic link
 *                                          stays linked after its expiries,
 *                                          until a cancel or a set ends it)
 *   cancel   (twheel_clock_link_unlink())  unlinks it under the lock, and
 *                                          only then cancels the timer, so
 *                                          the work cannot file it again
 *   expiry   (twheel_clock_link_expire())  under the lock: not linked (it
 *                                          was cancelled meanwhile) means
 *                                          nothing to report; else it is
 *                                          reported and unlinked, or filed
 *                                          again (the clock went back)
 *   set work (tw_clock_walk())             under the lock, moves a timer
 *                                          only if twheel_cancel() says it
 *                                          was pending: an expiry already
 *                                          begun finds the news under the
 *                                          lock instead, and is reported
 *                                          exactly once either way
 *
 * A set concurrent with an arming is seen by the arming or by the work
 * (which runs after the new offset is published): never by neither. The
 * arming reads the offset under the clock's lock and the work reads it
 * again under that lock, so a cancel-on-set timer is ended exactly when the
 * offset it was armed with is gone.
 *
 * Bounds: the work holds a lock with interrupts off for at most
 * TW_CLOCK_CHUNK timers, then reschedules; its total is linear in the
 * armed timers of the clock, which the caps of /dev/twheel bound.
 */
#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/overflow.h>
#include <linux/pvclock_gtod.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "compat.h"
#include "twheel.h"
#include "internal.h"

/* Links filed again per hold of a clock's lock by the set work. */
#define TW_CLOCK_CHUNK	256

/**
 * struct tw_clock - one clock's timers
 * @lock: protects @armed, @todo and the links on them
 * @armed: pending links, struct twheel_clock_link::node
 * @todo: links the set work has still to visit; only that work moves
 *	links here, everybody may unlink them
 * @offs: the timekeeper's offset of the clock from CLOCK_MONOTONIC
 */
struct tw_clock {
	spinlock_t		lock;		/* see the top of this file */
	struct list_head	armed;
	struct list_head	todo;
	enum tk_offsets		offs;
};

/* CLOCK_MONOTONIC's "offset" is never used: its list is never walked. */
static struct tw_clock tw_clocks[TW_CLK_NR] = {
	[TW_CLK_MONO] = {
		.lock	= __SPIN_LOCK_UNLOCKED(tw_clocks[TW_CLK_MONO].lock),
		.armed	= LIST_HEAD_INIT(tw_clocks[TW_CLK_MONO].armed),
		.todo	= LIST_HEAD_INIT(tw_clocks[TW_CLK_MONO].todo),
		.offs	= TK_OFFS_MAX,
	},
	[TW_CLK_REAL] = {
		.lock	= __SPIN_LOCK_UNLOCKED(tw_clocks[TW_CLK_REAL].lock),
		.armed	= LIST_HEAD_INIT(tw_clocks[TW_CLK_REAL].armed),
		.todo	= LIST_HEAD_INIT(tw_clocks[TW_CLK_REAL].todo),
		.offs	= TK_OFFS_REAL,
	},
	[TW_CLK_BOOT] = {
		.lock	= __SPIN_LOCK_UNLOCKED(tw_clocks[TW_CLK_BOOT].lock),
		.armed	= LIST_HEAD_INIT(tw_clocks[TW_CLK_BOOT].armed),
		.todo	= LIST_HEAD_INIT(tw_clocks[TW_CLK_BOOT].todo),
		.offs	= TK_OFFS_BOOT,
	},
};

static void tw_clock_set_fn(struct work_struct *work);
static DECLARE_WORK(tw_clock_set_work, tw_clock_set_fn);

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * For the KUnit tests: a virtual skew added to a clock as twheel reads it,
 * to simulate a set of CLOCK_REALTIME or a suspend (CLOCK_BOOTTIME)
 * without touching the system's clocks. WRITE_ONCE() by the tests only.
 */
static ktime_t tw_clock_skew[TW_CLK_NR];

static ktime_t tw_clock_test_skew(int clock)
{
	return READ_ONCE(tw_clock_skew[clock]);
}
#else
static ktime_t tw_clock_test_skew(int clock)
{
	return 0;
}
#endif

/**
 * twheel_clock_index - twheel's index of a clock
 * @clockid: a clockid_t
 *
 * Context: any context.
 * Return: %TW_CLK_MONO, %TW_CLK_REAL or %TW_CLK_BOOT, or -EINVAL for a
 * clock twheel does not offer.
 */
int twheel_clock_index(clockid_t clockid)
{
	switch (clockid) {
	case CLOCK_MONOTONIC:
		return TW_CLK_MONO;
	case CLOCK_REALTIME:
		return TW_CLK_REAL;
	case CLOCK_BOOTTIME:
		return TW_CLK_BOOT;
	default:
		return -EINVAL;
	}
}

/* The clock's offset from CLOCK_MONOTONIC, now. */
static ktime_t tw_clock_offset(int clock)
{
	if (clock == TW_CLK_MONO)
		return 0;
	return ktime_mono_to_any(0, tw_clocks[clock].offs) +
	       tw_clock_test_skew(clock);
}

/**
 * twheel_clock_read - read a clock by its index
 * @clock: %TW_CLK_MONO, %TW_CLK_REAL or %TW_CLK_BOOT
 *
 * Context: any context but NMI.
 * Return: the clock's time, ns.
 */
ktime_t twheel_clock_read(int clock)
{
	if (clock == TW_CLK_MONO)
		return ktime_get();
	return ktime_get_with_offset(tw_clocks[clock].offs) +
	       tw_clock_test_skew(clock);
}

/* Where a deadline of a clock whose offset is @offset falls on the wheel. */
static ktime_t tw_clock_to_mono(ktime_t deadline, ktime_t offset)
{
	ktime_t mono;

	if (check_sub_overflow(deadline, offset, &mono))
		return offset < 0 ? KTIME_MAX : 0;
	return clamp_t(ktime_t, mono, 0, KTIME_MAX);
}

/**
 * twheel_clock_link_arm - file a timer for a deadline on a clock
 * @link: its link, not linked on another clock's list
 * @timer: the timer; filed one-shot whatever @mode
 * @clock: %TW_CLK_MONO, %TW_CLK_REAL or %TW_CLK_BOOT
 * @deadline: ns of @clock, >= 0
 * @period: ns of @clock between expiries, 1 to %KTIME_MAX, for a periodic
 *	@mode; ignored for %TWHEEL_ONESHOT (checked by the caller)
 * @mode: enum twheel_mode
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET (checked by the caller) or 0
 *
 * The caller serialises the armings and cancels of @link.
 *
 * Context: any context but NMI.
 * Return: 1 if @link was pending (linked) or its timer was (as
 * twheel_arm() says), 0 if not, or the error of twheel_arm() (the link is
 * then not pending).
 */
int twheel_clock_link_arm(struct twheel_clock_link *link,
			  struct twheel_timer *timer, int clock,
			  ktime_t deadline, u64 period, enum twheel_mode mode,
			  unsigned int flags)
{
	struct tw_clock *c = &tw_clocks[clock];
	unsigned long irqflags;
	bool was_linked;
	ktime_t offset;
	int ret;

	spin_lock_irqsave(&c->lock, irqflags);
	was_linked = !list_empty(&link->node);
	if (WARN_ON_ONCE(was_linked && link->clock != clock)) {
		spin_unlock_irqrestore(&c->lock, irqflags);
		return -EINVAL;
	}
	link->timer = timer;
	link->deadline = deadline;
	link->clock = clock;
	link->flags = flags;
	link->mode = mode;
	link->period = mode == TWHEEL_ONESHOT ? 0 : period;
	link->was_set = false;
	offset = tw_clock_offset(clock);
	link->offset = offset;
	ret = twheel_arm(timer, tw_clock_to_mono(deadline, offset), 0,
			 TWHEEL_ONESHOT);
	if (ret < 0)
		list_del_init(&link->node);
	else if (!was_linked)
		list_add_tail(&link->node, &c->armed);
	spin_unlock_irqrestore(&c->lock, irqflags);
	return ret < 0 ? ret : (was_linked || ret);
}

/**
 * twheel_clock_link_unlink - end a link's arming, before cancelling its timer
 * @link: the link
 *
 * After this neither the set work nor an expiry files the timer again or
 * reports it; the caller then cancels the timer itself.
 *
 * Context: any context but NMI.
 * Return: true if the arming was pending (not yet reported).
 */
bool twheel_clock_link_unlink(struct twheel_clock_link *link)
{
	struct tw_clock *c = &tw_clocks[link->clock];
	unsigned long irqflags;
	bool was_linked;

	spin_lock_irqsave(&c->lock, irqflags);
	was_linked = !list_empty(&link->node);
	list_del_init(&link->node);
	link->was_set = false;
	spin_unlock_irqrestore(&c->lock, irqflags);
	return was_linked;
}

/*
 * A periodic link's deadline has come (@now >= its deadline): count the
 * expiries up to @now in @ex and move the deadline to the next one: on the
 * grid of the first deadline (fixed rate), or a period after @now (fixed
 * delay). A fixed-delay expiry counts one, as the core's do, unless @all
 * (catching up a parked link: every period that passed counts, as for the
 * parked timers of the wheel's own clock in fd_event.c).
 */
static void tw_clock_advance(struct twheel_clock_link *link, ktime_t now,
			     bool all, struct twheel_clock_expiry *ex)
{
	u64 n = 0, base, next;

	lockdep_assert_held(&tw_clocks[link->clock].lock);

	/* 0 <= deadline <= now: the difference fits. */
	if (link->mode == TWHEEL_FIXED_RATE || all)
		n = div64_u64((u64)(now - link->deadline), link->period);
	/* deadline + n * period <= now: no overflow. */
	ex->deadline = link->deadline + n * link->period;
	ex->count = n + 1;
	base = link->mode == TWHEEL_FIXED_DELAY ? now : ex->deadline;
	/* Beyond the end of time: stays pending, never fires again. */
	if (check_add_overflow(base, link->period, &next) || next > KTIME_MAX)
		next = KTIME_MAX;
	link->deadline = next;
}

/**
 * twheel_clock_link_expire - decide what an expiry of a link's timer means
 * @link: the link, whose timer's callback is running
 * @park: for a periodic link: do not file the timer for its next deadline
 *	(the link stays pending, its timer unfiled, until
 *	twheel_clock_link_refile())
 * @ex: out: for %TWHEEL_CLOCK_FIRE and %TWHEEL_CLOCK_SET, the time on the
 *	link's clock, the deadline reported and the expiries it stands for
 *
 * Called by the timer's callback before it reports anything. A periodic
 * link's deadline moves past the expiries reported, and its timer is filed
 * for the next one unless @park.
 *
 * Context: the callback of @link's timer.
 * Return: %TWHEEL_CLOCK_FIRE: the clock reached the deadline; report it. A
 * one-shot link is then no longer pending, a periodic one is.
 * %TWHEEL_CLOCK_SET: a set ended a cancel-on-set timer; report that. The
 * link is no longer pending. %TWHEEL_CLOCK_LATER: the clock went back, the
 * timer was filed again; report nothing. %TWHEEL_CLOCK_STALE: the arming
 * was cancelled; report nothing.
 */
enum twheel_clock_verdict twheel_clock_link_expire(struct twheel_clock_link *link,
						   bool park,
						   struct twheel_clock_expiry *ex)
{
	struct tw_clock *c = &tw_clocks[link->clock];
	enum twheel_clock_verdict v;
	unsigned long irqflags;
	int clock = link->clock;
	ktime_t offset;

	spin_lock_irqsave(&c->lock, irqflags);
	if (list_empty(&link->node)) {
		v = TWHEEL_CLOCK_STALE;
		goto out_unlock;
	}
	ex->now = twheel_clock_read(clock);
	ex->deadline = link->deadline;
	ex->count = 1;
	offset = tw_clock_offset(clock);
	if (link->was_set || ((link->flags & TWHEEL_CLOCK_CANCEL_ON_SET) &&
			      offset != link->offset)) {
		/* Set, and the work has not visited it yet: same verdict. */
		v = TWHEEL_CLOCK_SET;
	} else if (ex->now < link->deadline) {
		/* The clock went back: never early. Later on the wheel. */
		if (twheel_arm(link->timer,
			       tw_clock_to_mono(link->deadline, offset),
			       0, TWHEEL_ONESHOT) >= 0) {
			v = TWHEEL_CLOCK_LATER;
			goto out_unlock;
		}
		/* Shut down: nothing more to report. */
		v = TWHEEL_CLOCK_STALE;
	} else if (link->mode == TWHEEL_ONESHOT) {
		v = TWHEEL_CLOCK_FIRE;
	} else {
		v = TWHEEL_CLOCK_FIRE;
		tw_clock_advance(link, ex->now, false, ex);
		if (park) {
			/* Pending but unfiled: drop a racing arming's filing. */
			twheel_cancel(link->timer);
			goto out_unlock;
		}
		if (twheel_arm(link->timer,
			       tw_clock_to_mono(link->deadline, offset),
			       0, TWHEEL_ONESHOT) >= 0)
			goto out_unlock;
		/* Shut down: this expiry is its last. */
	}
	list_del_init(&link->node);
	link->was_set = false;
	/*
	 * An arming of the same link that raced this expiry and found the
	 * deadline already due is reported by it: drop its filing, so that
	 * the timer is not pending for nothing.
	 */
	twheel_cancel(link->timer);
out_unlock:
	spin_unlock_irqrestore(&c->lock, irqflags);
	return v;
}

/**
 * twheel_clock_link_catch_up - count what a parked periodic link missed
 * @link: a periodic link whose timer is not filed (parked by
 *	twheel_clock_link_expire()), or one that is no longer pending
 * @ex: out: for %TWHEEL_CLOCK_FIRE and %TWHEEL_CLOCK_SET, as for
 *	twheel_clock_link_expire()
 *
 * Counts the expiries that came due since the link was parked, every
 * period that passed on the link's clock, and moves its deadline past
 * them, as its expiries would have; the caller files the timer again with
 * twheel_clock_link_refile(). A link that is no longer pending (cancelled)
 * is counted the same, so that a cancel may report what it missed.
 *
 * Context: any context but NMI.
 * Return: %TWHEEL_CLOCK_FIRE: at least one expiry came due (@ex).
 * %TWHEEL_CLOCK_SET: a set ended the pending cancel-on-set link meanwhile;
 * it is no longer pending (@ex: the end, one expiry). %TWHEEL_CLOCK_LATER:
 * nothing came due yet, or the link is one-shot.
 */
enum twheel_clock_verdict twheel_clock_link_catch_up(struct twheel_clock_link *link,
						     struct twheel_clock_expiry *ex)
{
	struct tw_clock *c = &tw_clocks[link->clock];
	enum twheel_clock_verdict v = TWHEEL_CLOCK_LATER;
	unsigned long irqflags;
	ktime_t now;

	spin_lock_irqsave(&c->lock, irqflags);
	now = twheel_clock_read(link->clock);
	if (!list_empty(&link->node) &&
	    (link->was_set || ((link->flags & TWHEEL_CLOCK_CANCEL_ON_SET) &&
			       tw_clock_offset(link->clock) != link->offset))) {
		v = TWHEEL_CLOCK_SET;
		ex->now = now;
		ex->deadline = link->deadline;
		ex->count = 1;
		list_del_init(&link->node);
		link->was_set = false;
		twheel_cancel(link->timer);
	} else if (link->mode != TWHEEL_ONESHOT && now >= link->deadline) {
		v = TWHEEL_CLOCK_FIRE;
		ex->now = now;
		tw_clock_advance(link, now, true, ex);
	}
	spin_unlock_irqrestore(&c->lock, irqflags);
	return v;
}

/**
 * twheel_clock_link_refile - file a pending link's timer again
 * @link: the link
 *
 * For a caller that had to cancel the timer of a pending link without
 * ending the arming, or that parked a periodic link: files it for its
 * deadline at the current offset (at once if a set ended it meanwhile).
 *
 * Context: any context but NMI.
 * Return: true if the link was pending and its timer is filed again.
 */
bool twheel_clock_link_refile(struct twheel_clock_link *link)
{
	struct tw_clock *c = &tw_clocks[link->clock];
	unsigned long irqflags;
	bool filed = false;

	spin_lock_irqsave(&c->lock, irqflags);
	if (!list_empty(&link->node))
		filed = twheel_arm(link->timer,
				   link->was_set ? 0 :
				   tw_clock_to_mono(link->deadline,
						    tw_clock_offset(link->clock)),
				   0, TWHEEL_ONESHOT) >= 0;
	spin_unlock_irqrestore(&c->lock, irqflags);
	return filed;
}

/*
 * The set work's visit of one pending link: a cancel-on-set arming whose
 * offset is gone is ended (filed to fire at once, its expiry reports it);
 * any other is filed for the new offset.
 */
static void tw_clock_visit_locked(struct tw_clock *c,
				  struct twheel_clock_link *link,
				  ktime_t offset)
{
	ktime_t mono;

	lockdep_assert_held(&c->lock);

	if ((link->flags & TWHEEL_CLOCK_CANCEL_ON_SET) &&
	    link->offset != offset) {
		link->was_set = true;
		mono = 0;
	} else {
		mono = tw_clock_to_mono(link->deadline, offset);
	}
	/*
	 * Only a pending filing is moved. If the expiry has begun,
	 * twheel_cancel() fails and the callback, which takes c->lock, sees
	 * the new offset or was_set there.
	 */
	if (ktime_to_ns(twheel_deadline(link->timer)) != mono &&
	    twheel_cancel(link->timer))
		twheel_arm(link->timer, mono, 0, TWHEEL_ONESHOT);
}

static void tw_clock_walk(struct tw_clock *c, int clock)
{
	struct twheel_clock_link *link;
	unsigned int n = 0;
	ktime_t offset;

	spin_lock_irq(&c->lock);
	list_splice_tail_init(&c->armed, &c->todo);
	offset = tw_clock_offset(clock);
	while (!list_empty(&c->todo)) {
		link = list_first_entry(&c->todo, struct twheel_clock_link,
					node);
		list_move_tail(&link->node, &c->armed);
		tw_clock_visit_locked(c, link, offset);
		if (++n % TW_CLOCK_CHUNK == 0 && !list_empty(&c->todo)) {
			spin_unlock_irq(&c->lock);
			cond_resched();
			spin_lock_irq(&c->lock);
			/* A set meanwhile is seen from here on. */
			offset = tw_clock_offset(clock);
		}
	}
	spin_unlock_irq(&c->lock);
}

static void tw_clock_set_fn(struct work_struct *work)
{
	tw_clock_walk(&tw_clocks[TW_CLK_REAL], TW_CLK_REAL);
	tw_clock_walk(&tw_clocks[TW_CLK_BOOT], TW_CLK_BOOT);
}

static void tw_clock_irq_work_fn(struct irq_work *work)
{
	queue_work(twheel_unbound_wq, &tw_clock_set_work);
}

static struct irq_work tw_clock_irq_work;

/*
 * Called by the timekeeper on every update, under its raw lock with
 * interrupts off and its seqcount held for write: note a set and leave
 * the rest to the work (an irq_work may be queued from any context).
 */
static int twheel_clock_notify(struct notifier_block *nb, unsigned long was_set,
			       void *tk)
{
	if (was_set)
		irq_work_queue(&tw_clock_irq_work);
	return NOTIFY_DONE;
}

static struct notifier_block tw_clock_nb = {
	.notifier_call = twheel_clock_notify,
};

/* ---------------------------------------------------------------------
 * The exported API: struct twheel_clock_timer
 */

static void tw_clock_timer_fn(struct twheel_timer *timer, u64 missed)
{
	struct twheel_clock_timer *ct = container_of(timer,
						     struct twheel_clock_timer,
						     timer);
	struct twheel_clock_expiry ex;

	switch (twheel_clock_link_expire(&ct->link, false, &ex)) {
	case TWHEEL_CLOCK_FIRE:
		ct->func(ct, 0, ex.count - 1);
		break;
	case TWHEEL_CLOCK_SET:
		ct->func(ct, TWHEEL_CLOCK_WAS_SET, 0);
		break;
	default:
		break;
	}
}

/**
 * __twheel_clock_timer_init - initialise a timer on a clock; use
 *	twheel_clock_timer_init()
 * @ct: the timer
 * @clockid: %CLOCK_MONOTONIC, %CLOCK_REALTIME or %CLOCK_BOOTTIME
 * @func: the callback
 * @name: lockdep name
 * @key: lockdep class
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_clock_timer_init(struct twheel_clock_timer *ct,
			       clockid_t clockid, twheel_clock_fn_t func,
			       const char *name, struct lock_class_key *key)
{
	int clock = twheel_clock_index(clockid);

	__twheel_timer_init(&ct->timer, tw_clock_timer_fn, 0, name, key);
	INIT_LIST_HEAD(&ct->link.node);
	ct->link.timer = &ct->timer;
	ct->link.deadline = 0;
	ct->link.offset = 0;
	ct->link.period = 0;
	ct->link.mode = TWHEEL_ONESHOT;
	/* An unknown clock is refused by every arming. */
	ct->link.clock = clock < 0 ? TW_CLK_NR : clock;
	ct->link.flags = 0;
	ct->link.was_set = false;
	ct->func = func;
}
EXPORT_SYMBOL_GPL(__twheel_clock_timer_init);

/**
 * twheel_clock_arm - arm a clock timer, one-shot, or move it if it is pending
 * @ct: the timer
 * @deadline: absolute time on the timer's clock; in the past means now.
 *	For a delay, pass twheel_clock_now() + delay: a set of the clock
 *	then moves the timer, as hrtimer and timerfd do.
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET (CLOCK_REALTIME only) or 0
 *
 * Armings and cancels of one timer are serialised by its user, as for a
 * struct twheel_timer; its callback may arm it. A periodic timer armed
 * again becomes one-shot.
 *
 * Context: any context but NMI; with PREEMPT_RT not hard interrupt context
 * either (the clock's lock is a spinlock_t, which sleeps there, so that the
 * set work's chunks do not run with interrupts off on RT).
 * Return: 1 if the timer was pending, 0 if not, -EINVAL for a negative
 * @deadline, unknown @flags, cancel-on-set on another clock than
 * CLOCK_REALTIME, or a timer initialised with an unknown clock, or
 * -ESHUTDOWN after twheel_shutdown_sync().
 */
int twheel_clock_arm(struct twheel_clock_timer *ct, ktime_t deadline,
		     unsigned int flags)
{
	return twheel_clock_arm_periodic(ct, deadline, 0, TWHEEL_ONESHOT,
					 flags);
}
EXPORT_SYMBOL_GPL(twheel_clock_arm);

/**
 * twheel_clock_arm_periodic - arm a clock timer, periodic or not, or move it
 * @ct: the timer
 * @deadline: the first expiry, absolute time on the timer's clock, as for
 *	twheel_clock_arm()
 * @period: ns of the timer's clock between expiries, 1 to %KTIME_MAX; 0
 *	with %TWHEEL_ONESHOT
 * @mode: %TWHEEL_FIXED_RATE (the expiries stay on the grid @deadline + k *
 *	@period of the clock: after a set forward past several periods the
 *	next callback comes at once and is told how many it missed, after a
 *	set backward it waits for the clock), %TWHEEL_FIXED_DELAY (the next
 *	expiry is a period of the clock after the callback's), or
 *	%TWHEEL_ONESHOT (as twheel_clock_arm())
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET (CLOCK_REALTIME only: a set of the
 *	clock ends the timer, periodic or not, with one callback flagged
 *	%TWHEEL_CLOCK_WAS_SET) or 0
 *
 * As timerfd's interval: the period is counted on the timer's clock, and a
 * late or skipped expiry is one callback with the periods missed, never a
 * burst. The timer stays pending until cancelled, armed again, or ended by
 * a set.
 *
 * Context: as twheel_clock_arm().
 * Return: as twheel_clock_arm(); also -EINVAL for an unknown @mode, a
 * periodic @mode with a @period of 0 or above %KTIME_MAX, or a period with
 * %TWHEEL_ONESHOT.
 */
int twheel_clock_arm_periodic(struct twheel_clock_timer *ct, ktime_t deadline,
			      u64 period, enum twheel_mode mode,
			      unsigned int flags)
{
	int clock = ct->link.clock;

	if (clock >= TW_CLK_NR || deadline < 0 ||
	    (flags & ~TWHEEL_CLOCK_CANCEL_ON_SET))
		return -EINVAL;
	if ((flags & TWHEEL_CLOCK_CANCEL_ON_SET) && clock != TW_CLK_REAL)
		return -EINVAL;
	if (tw_check_mode(mode, period))
		return -EINVAL;
	return twheel_clock_link_arm(&ct->link, &ct->timer, clock, deadline,
				     period, mode, flags);
}
EXPORT_SYMBOL_GPL(twheel_clock_arm_periodic);

/**
 * twheel_clock_cancel - stop a clock timer without waiting
 * @ct: the timer
 *
 * As twheel_cancel(): a callback already running finishes, and the memory
 * may be freed only after twheel_clock_cancel_sync().
 *
 * Context: as twheel_clock_arm().
 * Return: true if the timer was pending (for a periodic timer: armed and
 * not ended by a set) and its callback will not run for that arming.
 */
bool twheel_clock_cancel(struct twheel_clock_timer *ct)
{
	bool pending;

	if (ct->link.clock >= TW_CLK_NR)
		return false;
	pending = twheel_clock_link_unlink(&ct->link);
	twheel_cancel(&ct->timer);
	return pending;
}
EXPORT_SYMBOL_GPL(twheel_clock_cancel);

/**
 * twheel_clock_cancel_sync - stop a clock timer and wait for its callback
 * @ct: the timer
 *
 * Afterwards the timer is idle and may be freed, unless somebody else
 * arms it: a re-arming by its own callback is undone.
 *
 * Context: process context; may sleep.
 * Return: true if the timer was pending and its callback will not run for
 * that arming.
 */
bool twheel_clock_cancel_sync(struct twheel_clock_timer *ct)
{
	bool pending;

	if (ct->link.clock >= TW_CLK_NR)
		return false;
	pending = twheel_clock_link_unlink(&ct->link);
	twheel_cancel_sync(&ct->timer);
	/* The callback may have armed it again before it ended. */
	twheel_clock_link_unlink(&ct->link);
	return pending;
}
EXPORT_SYMBOL_GPL(twheel_clock_cancel_sync);

/**
 * twheel_clock_pending - whether a clock timer's arming is still to report
 * @ct: the timer
 *
 * Context: as twheel_clock_arm().
 * Return: true if armed and neither reported (one-shot), ended by a set
 * nor cancelled yet.
 */
bool twheel_clock_pending(struct twheel_clock_timer *ct)
{
	struct tw_clock *c;
	unsigned long irqflags;
	bool pending;

	if (ct->link.clock >= TW_CLK_NR)
		return false;
	c = &tw_clocks[ct->link.clock];
	spin_lock_irqsave(&c->lock, irqflags);
	pending = !list_empty(&ct->link.node);
	spin_unlock_irqrestore(&c->lock, irqflags);
	return pending;
}
EXPORT_SYMBOL_GPL(twheel_clock_pending);

/**
 * twheel_clock_now - the time on a clock, as twheel_clock_arm() counts it
 * @clockid: %CLOCK_MONOTONIC, %CLOCK_REALTIME or %CLOCK_BOOTTIME
 *
 * Context: any context but NMI.
 * Return: ns, or 0 for another clock.
 */
ktime_t twheel_clock_now(clockid_t clockid)
{
	int clock = twheel_clock_index(clockid);

	return clock < 0 ? 0 : twheel_clock_read(clock);
}
EXPORT_SYMBOL_GPL(twheel_clock_now);

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * twheel_clock_test_set - KUnit only: simulate a set of a clock
 * @clockid: %CLOCK_REALTIME or %CLOCK_BOOTTIME
 * @delta: ns added to the clock as twheel sees it (a suspend of @delta ns
 *	for CLOCK_BOOTTIME)
 * @notify: announce it as the timekeeper would; false leaves the clock
 *	changed unannounced (as between a set and its notification)
 *
 * With @notify, runs the path of a real set: the count, the irq_work, the
 * work, and waits for the work.
 *
 * Context: process context; may sleep.
 */
void twheel_clock_test_set(clockid_t clockid, ktime_t delta, bool notify)
{
	int clock = twheel_clock_index(clockid);

	if (clock <= TW_CLK_MONO)
		return;
	WRITE_ONCE(tw_clock_skew[clock], tw_clock_skew[clock] + delta);
	if (!notify)
		return;
	twheel_clock_notify(NULL, 1, NULL);
	irq_work_sync(&tw_clock_irq_work);
	flush_work(&tw_clock_set_work);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_clock_test_set);
#endif

/**
 * twheel_clock_init - listen to the timekeeper; called by main.c
 *
 * Context: module init, process context.
 * Return: 0, or a negative errno.
 */
int twheel_clock_init(void)
{
	init_irq_work(&tw_clock_irq_work, tw_clock_irq_work_fn);
	return pvclock_gtod_register_notifier(&tw_clock_nb);
}

/**
 * twheel_clock_exit - stop listening; called by main.c
 *
 * Context: module exit, process context; no clock timer is armed.
 */
void twheel_clock_exit(void)
{
	int i;

	pvclock_gtod_unregister_notifier(&tw_clock_nb);
	irq_work_sync(&tw_clock_irq_work);
	cancel_work_sync(&tw_clock_set_work);
	for (i = 0; i < TW_CLK_NR; i++)
		WARN_ON_ONCE(!list_empty(&tw_clocks[i].armed));
}
