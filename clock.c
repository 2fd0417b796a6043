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
 *
 * Alarm clocks (CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM) are the same
 * clocks with their own lists: awake, their timers run on the wheels like
 * any other. What they add is waking a suspended machine, which only the
 * alarmtimer does (it programs the RTC for its earliest alarm when the
 * machine suspends). Each alarm clock keeps one struct alarm, @wake, due
 * no later than its earliest pending deadline:
 *
 *   - an arming earlier than @wake_at moves it earlier (under the lock);
 *   - nothing moves it later but a walk: when it fires (awake, or by
 *     waking the machine) it queues tw_clock_wake_work, which walks the
 *     clock's list as the set work does, in chunks, and sets it for the
 *     earliest deadline it found (or for none). Cancels and expiries do
 *     not look for the next one: at worst the alarm fires early, for
 *     nothing, and the walk puts it right.
 *
 * After a resume the timekeeper announces the time spent asleep as a set
 * (both clocks' offsets from CLOCK_MONOTONIC grew), and the set work files
 * the timers again: those now due fire at the wheel's next tick. So the
 * alarm only has to wake the machine; the wheel reports the expiry. A walk
 * costs one pass over the clock's timers per earliest deadline reached,
 * and only callers with CAP_WAKE_ALARM (or in-kernel ones) arm them.
 */
#include <linux/alarmtimer.h>
#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
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
 * @walk_lock: serialises the walks of @todo (the set work's and the wake
 *	work's)
 * @wake: an alarm clock's wake-up, due at @wake_at (see the top of this
 *	file); started under @lock, and by the walk
 * @wake_at: when @wake is due, %KTIME_MAX for never; under @lock
 * @wake_next: the earliest deadline a walk in progress has seen or an
 *	arming meanwhile has set; under @lock
 * @wake_fired: @wake has fired since it was last started: the next walk
 *	must start it again even for the same @wake_at; written by its
 *	callback, read under @lock
 */
struct tw_clock {
	spinlock_t		lock;		/* see the top of this file */
	struct list_head	armed;
	struct list_head	todo;
	enum tk_offsets		offs;
	struct mutex		walk_lock;	/* the walks of @todo */
	struct alarm		wake;
	ktime_t			wake_at;
	ktime_t			wake_next;
	bool			wake_fired;
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
	[TW_CLK_REAL_ALARM] = {
		.lock	= __SPIN_LOCK_UNLOCKED(tw_clocks[TW_CLK_REAL_ALARM].lock),
		.armed	= LIST_HEAD_INIT(tw_clocks[TW_CLK_REAL_ALARM].armed),
		.todo	= LIST_HEAD_INIT(tw_clocks[TW_CLK_REAL_ALARM].todo),
		.offs	= TK_OFFS_REAL,
	},
	[TW_CLK_BOOT_ALARM] = {
		.lock	= __SPIN_LOCK_UNLOCKED(tw_clocks[TW_CLK_BOOT_ALARM].lock),
		.armed	= LIST_HEAD_INIT(tw_clocks[TW_CLK_BOOT_ALARM].armed),
		.todo	= LIST_HEAD_INIT(tw_clocks[TW_CLK_BOOT_ALARM].todo),
		.offs	= TK_OFFS_BOOT,
	},
};

static void tw_clock_set_fn(struct work_struct *work);
static DECLARE_WORK(tw_clock_set_work, tw_clock_set_fn);
static void tw_clock_wake_fn(struct work_struct *work);
static DECLARE_WORK(tw_clock_wake_work, tw_clock_wake_fn);

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * For the KUnit tests: a virtual skew added to a clock as twheel reads it,
 * to simulate a set of CLOCK_REALTIME or a suspend (CLOCK_BOOTTIME)
 * without touching the system's clocks. WRITE_ONCE() by the tests only.
 */
static ktime_t tw_clock_skew[TW_CLK_NR];

static ktime_t tw_clock_test_skew(int clock)
{
	return READ_ONCE(tw_clock_skew[tw_clock_base(clock)]);
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
 * Return: %TW_CLK_MONO, %TW_CLK_REAL, %TW_CLK_BOOT, %TW_CLK_REAL_ALARM or
 * %TW_CLK_BOOT_ALARM, or -EINVAL for a clock twheel does not offer.
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
	case CLOCK_REALTIME_ALARM:
		return TW_CLK_REAL_ALARM;
	case CLOCK_BOOTTIME_ALARM:
		return TW_CLK_BOOT_ALARM;
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
 * @clock: %TW_CLK_* (an alarm clock reads as the clock it counts)
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

/* Starts @c's wake-up for @at, or stops it for %KTIME_MAX. */
static void tw_clock_wake_set_locked(struct tw_clock *c, ktime_t at)
{
	lockdep_assert_held(&c->lock);

	/* Pairs with nothing: a stale true costs one start for the same time. */
	if (at == c->wake_at && !READ_ONCE(c->wake_fired))
		return;
	c->wake_at = at;
	WRITE_ONCE(c->wake_fired, false);
	/*
	 * Stopped first: a start racing the callback of the previous expiry
	 * could have the callback's dequeue take the new one off the
	 * alarmtimer's queue, out of sight of its suspend.
	 */
	alarm_try_to_cancel(&c->wake);
	if (at == KTIME_MAX)
		return;
	/*
	 * 7.2 queues nothing for a time already past (it would fire at once)
	 * and calls no callback: count it as fired, and walk for the next.
	 */
	if (!twheel_alarm_start(&c->wake, at)) {
		WRITE_ONCE(c->wake_fired, true);
		queue_work(twheel_unbound_wq, &tw_clock_wake_work);
	}
}

/*
 * An arming on an alarm clock for @deadline: wake no later than that. A
 * wake-up that has fired is due no more, though the walk it queued may
 * not have run yet: until it has, every arming starts it again (the walk
 * then sets it for the earliest of all).
 */
static void tw_clock_wake_arm_locked(struct tw_clock *c, ktime_t deadline)
{
	lockdep_assert_held(&c->lock);

	c->wake_next = min(c->wake_next, deadline);
	if (deadline < c->wake_at || READ_ONCE(c->wake_fired))
		tw_clock_wake_set_locked(c, deadline);
}

/*
 * @c's wake-up fired: a machine woken by it or not, its deadline is past.
 * Hard interrupt context (the alarm's hrtimer); c->lock is not taken here.
 */
static void tw_clock_wake_note(struct alarm *alarm)
{
	struct tw_clock *c = container_of(alarm, struct tw_clock, wake);

	WRITE_ONCE(c->wake_fired, true);
	queue_work(twheel_unbound_wq, &tw_clock_wake_work);
}

/* The callback's type changed with alarm_start_timer() (compat.h). */
#ifdef TWHEEL_HAVE_ALARM_START_TIMER
static void tw_clock_wake_fired(struct alarm *alarm, ktime_t now)
{
	tw_clock_wake_note(alarm);
}
#else
static enum alarmtimer_restart tw_clock_wake_fired(struct alarm *alarm,
						   ktime_t now)
{
	tw_clock_wake_note(alarm);
	return ALARMTIMER_NORESTART;
}
#endif

/**
 * twheel_clock_link_arm - file a timer for a deadline on a clock
 * @link: its link, not linked on another clock's list
 * @timer: the timer; filed one-shot whatever @mode
 * @clock: %TW_CLK_*
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
	if (ret >= 0 && tw_clock_is_alarm(clock))
		tw_clock_wake_arm_locked(c, deadline);
	spin_unlock_irqrestore(&c->lock, irqflags);
	return ret < 0 ? ret : (was_linked || ret);
}

/**
 * twheel_clock_link_read - a link's arming, for a dump of its timer
 * @link: the link
 * @deadline: out: its next deadline, ns of its clock
 * @period: out: its period, 0 for a one-shot arming
 *
 * Context: any context but NMI.
 * Return: true if the arming is pending (not yet reported, not ended).
 */
bool twheel_clock_link_read(struct twheel_clock_link *link, ktime_t *deadline,
			    u64 *period)
{
	struct tw_clock *c = &tw_clocks[link->clock];
	unsigned long irqflags;
	bool linked;

	spin_lock_irqsave(&c->lock, irqflags);
	linked = !list_empty(&link->node);
	*deadline = link->deadline;
	*period = link->period;
	spin_unlock_irqrestore(&c->lock, irqflags);
	return linked;
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
	/* Its next period wakes the machine too. */
	if (tw_clock_is_alarm(link->clock))
		tw_clock_wake_arm_locked(&tw_clocks[link->clock], next);
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

/*
 * Visits every pending link of @clock: files it again for the clock's
 * offset now, and for an alarm clock sets the wake-up for the earliest
 * deadline seen (or armed meanwhile).
 */
static void tw_clock_walk(struct tw_clock *c, int clock)
{
	bool alarm = tw_clock_is_alarm(clock);
	struct twheel_clock_link *link;
	unsigned int n = 0;
	ktime_t offset, now = 0;

	mutex_lock(&c->walk_lock);
	spin_lock_irq(&c->lock);
	list_splice_tail_init(&c->armed, &c->todo);
	offset = tw_clock_offset(clock);
	c->wake_next = KTIME_MAX;
	/*
	 * Deadlines already past are the awake wheel's to fire: a wake-up for
	 * them would fire at once and walk again until the wheel has.
	 */
	if (alarm)
		now = twheel_clock_read(clock);
	while (!list_empty(&c->todo)) {
		link = list_first_entry(&c->todo, struct twheel_clock_link,
					node);
		list_move_tail(&link->node, &c->armed);
		tw_clock_visit_locked(c, link, offset);
		if (alarm && link->deadline > now)
			c->wake_next = min(c->wake_next, link->deadline);
		if (++n % TW_CLOCK_CHUNK == 0 && !list_empty(&c->todo)) {
			spin_unlock_irq(&c->lock);
			cond_resched();
			spin_lock_irq(&c->lock);
			/* A set meanwhile is seen from here on. */
			offset = tw_clock_offset(clock);
		}
	}
	if (alarm)
		tw_clock_wake_set_locked(c, c->wake_next);
	spin_unlock_irq(&c->lock);
	mutex_unlock(&c->walk_lock);
}

static void tw_clock_set_fn(struct work_struct *work)
{
	int clock;

	for (clock = TW_CLK_MONO + 1; clock < TW_CLK_NR; clock++)
		tw_clock_walk(&tw_clocks[clock], clock);
}

/* An alarm clock's wake-up fired: set it for the next deadline. */
static void tw_clock_wake_fn(struct work_struct *work)
{
	tw_clock_walk(&tw_clocks[TW_CLK_REAL_ALARM], TW_CLK_REAL_ALARM);
	tw_clock_walk(&tw_clocks[TW_CLK_BOOT_ALARM], TW_CLK_BOOT_ALARM);
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
 * @clockid: %CLOCK_MONOTONIC, %CLOCK_REALTIME, %CLOCK_BOOTTIME,
 *	%CLOCK_REALTIME_ALARM or %CLOCK_BOOTTIME_ALARM (as their base clock,
 *	and the machine is woken from suspend for its deadline; no
 *	CAP_WAKE_ALARM check for in-kernel callers)
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
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET (CLOCK_REALTIME and
 *	CLOCK_REALTIME_ALARM only) or 0
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
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET (CLOCK_REALTIME[_ALARM] only: a set of the
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
	if ((flags & TWHEEL_CLOCK_CANCEL_ON_SET) &&
	    tw_clock_base(clock) != TW_CLK_REAL)
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
 * @clockid: a clock of twheel_clock_timer_init()
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

	if (clock <= TW_CLK_MONO || clock != tw_clock_base(clock))
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
	int clock;

	for (clock = 0; clock < TW_CLK_NR; clock++) {
		mutex_init(&tw_clocks[clock].walk_lock);
		tw_clocks[clock].wake_at = KTIME_MAX;
	}
	alarm_init(&tw_clocks[TW_CLK_REAL_ALARM].wake, ALARM_REALTIME,
		   tw_clock_wake_fired);
	alarm_init(&tw_clocks[TW_CLK_BOOT_ALARM].wake, ALARM_BOOTTIME,
		   tw_clock_wake_fired);
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
	/* The wake-ups first: their callbacks queue the wake work. */
	alarm_cancel(&tw_clocks[TW_CLK_REAL_ALARM].wake);
	alarm_cancel(&tw_clocks[TW_CLK_BOOT_ALARM].wake);
	cancel_work_sync(&tw_clock_wake_work);
	/* No timer is armed: a last walk stopped them, or left them stopped. */
	alarm_cancel(&tw_clocks[TW_CLK_REAL_ALARM].wake);
	alarm_cancel(&tw_clocks[TW_CLK_BOOT_ALARM].wake);
	for (i = 0; i < TW_CLK_NR; i++)
		WARN_ON_ONCE(!list_empty(&tw_clocks[i].armed));
}
