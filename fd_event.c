// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the events of /dev/twheel, from a timer's expiry to read(). An
 * expiry (twheel_fd_expire(), softirq) records itself in its timer's event
 * record (struct twheel_fd_rec), taken from the file's spare records or
 * the slab (fd_obj.c), and queues it; read() takes the records off the
 * queue, copies the events out and settles their timers; periodic timers
 * are parked while their event is unread. The states and the locking are
 * described at the top of chardev.c; the data is in fd.h. In the chardev
 * layer (fd.h lists its files) it calls fd_obj.c and fd_map.h; fd_ops.c
 * and chardev.c call it, through fd_event.h.
 */

#include <linux/compiler.h>
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "twheel.h"
#include "compat.h"
#include "internal.h"
#include "fd.h"
#include "fd_obj.h"
#include "fd_map.h"
#include "fd_event.h"

/* Queues the event of @ft, which has a record (fd_event.h). */
void twheel_fd_queue_tail_locked(struct twheel_fd *tf,
				 struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&tf->lock);

	ft->rec->seq = tf->queued_seq++;
	tw_list_add_tail(&ft->rec->node, &tf->ready);
	ft->on_list = true;
	WRITE_ONCE(tf->nqueued, tf->nqueued + 1);
}

/*
 * Lazy re-arming: a periodic timer that comes due while its previous event
 * is still unread is not re-armed; it stays parked, costing no CPU, until
 * read() takes its event and arms it again for the deadline it would have
 * had (twheel_fd_settle()). A fixed-rate timer then fires at once if that
 * deadline has passed, and its next event counts the periods skipped
 * meanwhile, so the counts still add up to every period that passed: the
 * reader's view is the same as if the kernel had kept firing, as timerfd
 * computes its overrun count at read(). Without this, an unread timer with
 * a 1 ns period would run its callback back to back on its CPU for as long
 * as the file stays open.
 *
 * Called by the callback, under tf->lock; twheel_cancel_running() stops
 * the core's re-arming of the expiry being run and takes no lock.
 */
static void twheel_fd_park_locked(struct twheel_fd_timer *ft, u64 missed)
{
	u64 next;

	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	/* False if MODIFY re-armed the timer since this expiry began. */
	if (!twheel_cancel_running(&ft->timer))
		return;
	if (ft->mode == TWHEEL_FIXED_RATE) {
		if (check_mul_overflow(missed + 1, twheel_fd_period(ft), &next) ||
		    check_add_overflow(next, ft->rec->deadline, &next))
			next = KTIME_MAX;
	} else {
		next = twheel_fd_sat_add(ft->rec->fired, twheel_fd_period(ft));
	}
	ft->rec->park_deadline = min_t(u64, next, KTIME_MAX);
	ft->parked = true;
}

/*
 * A periodic timer on another clock ended by a set of the clock
 * (TWHEEL_TIMER_CANCEL_ON_SET): its event says so, and the timer is now a
 * fired one-shot one, whose id read() releases (see @mode of struct
 * twheel_fd_timer). Its link is no longer pending.
 */
static void twheel_fd_clock_end_locked(struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	/* Read under ctl_mutex alone by twheel_fd_settle(): see @mode. */
	WRITE_ONCE(ft->mode, TWHEEL_ONESHOT);
	ft->parked = false;
}

/*
 * twheel_fd_catch_up_locked() for a timer on another clock: clock.c counts
 * the periods of its clock that passed since its link's next deadline, or
 * finds it ended by a set.
 */
static noinline void twheel_fd_catch_up_clock_locked(struct twheel_fd_timer *ft)
{
	struct twheel_clock_expiry ex;

	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	switch (twheel_clock_link_catch_up(ft->rec->clk, &ex)) {
	case TWHEEL_CLOCK_SET:
		ft->rec->flags |= TWHEEL_EVENT_CLOCK_SET;
		twheel_fd_clock_end_locked(ft);
		break;
	case TWHEEL_CLOCK_FIRE:
		break;
	default:
		return;
	}
	ft->rec->deadline = ex.deadline;
	ft->rec->fired = ex.now;
	ft->rec->clock = ft->rec->clk->clock;
	ft->rec->user_data = ft->user_data;
	ft->rec->count = twheel_fd_sat_add(ft->rec->count, ex.count);
}

/*
 * read() of a parked timer's event: count the periods that passed since it
 * was parked, as if it had kept firing; the event then names the latest
 * of them, and its @ev_fired is now, when it was accounted for.
 */
static void twheel_fd_catch_up_locked(struct twheel_fd_timer *ft)
{
	u64 now, n, next, period;

	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	if (unlikely(ft->clock)) {
		twheel_fd_catch_up_clock_locked(ft);
		return;
	}
	now = ktime_get_ns();
	if (now < ft->rec->park_deadline)
		return;
	period = twheel_fd_period(ft);
	n = div64_u64(now - ft->rec->park_deadline, period);
	/* park_deadline + n * period <= now: no overflow. */
	ft->rec->deadline = ft->rec->park_deadline + n * period;
	ft->rec->fired = now;
	ft->rec->clock = TW_CLK_MONO;
	ft->rec->user_data = ft->user_data;
	ft->rec->count = twheel_fd_sat_add(ft->rec->count, n + 1);
	/*
	 * The next expiry: a period after the latest one counted for a
	 * fixed-rate timer; for a fixed-delay one a period after this, the
	 * end of the expiry it stands for. From the latest deadline instead,
	 * it came as soon as 1 ns after the read (seen on PREEMPT_RT: a second
	 * event of the timer in the same read()).
	 */
	next = ft->mode == TWHEEL_FIXED_DELAY ? now : ft->rec->deadline;
	ft->rec->park_deadline = min_t(u64, twheel_fd_sat_add(next, period),
				       KTIME_MAX);
}

/* twheel_fd_unpark_locked() of a timer that is parked (fd_event.h). */
void twheel_fd_end_parking_locked(struct twheel_fd_timer *ft)
{
	twheel_fd_catch_up_locked(ft);
	ft->parked = false;
}

/*
 * Deadline extension: a one-shot timer comes due, and the program may have
 * stored a later deadline in the timer's slot of the mapped array. The slot
 * is read once; a later value (clamped to KTIME_MAX) files the timer again
 * for it, once per expiry, and the expiry is not reported. Anything else,
 * garbage included, leaves the expiry to be reported: the value is never
 * used for anything but this timer's deadline. A store that races the
 * expiry is thus either seen here (extension, no event) or not (event, and
 * the timer is no longer pending): never both, never neither.
 *
 * Not when MODIFY re-armed the timer since this expiry began (it is
 * pending again: that arming stands, and this expiry is reported) nor for
 * a timer whose id was released. Under tf->lock, as MODIFY's arming is.
 * Return: true if the timer was filed again.
 */
static bool twheel_fd_extend_locked(struct twheel_fd *tf,
				    struct twheel_fd_timer *ft)
{
	/* Pairs with smp_store_release() in twheel_fd_map_create(). */
	u64 *slot = twheel_fd_deadline_slot(smp_load_acquire(&tf->deadlines),
					    ft);
	u64 want, due;

	lockdep_assert_held(&tf->lock);

	if (!slot || ft->mode != TWHEEL_ONESHOT || !ft->live ||
	    ft->starved || twheel_pending(&ft->timer))
		return false;
	/* The program's time, in the file's namespace: to the host's. */
	want = twheel_fd_to_host(tf, TW_CLK_MONO, READ_ONCE(*slot));
	due = ktime_to_ns(twheel_deadline(&ft->timer));
	if (want <= due)
		return false;
	if (twheel_arm(&ft->timer, (ktime_t)want, 0, TWHEEL_ONESHOT) < 0)
		return false;
	tf->extended++;
	return true;
}

/*
 * Records @n expiries of @ft, the latest due at @deadline and run at
 * @fired on @clock (TW_CLK_*), in its event, queues the event unless it is queued or a reader
 * holds it, and signals the eventfd. Under tf->lock, which
 * TWHEEL_IOC_SET_EVENTFD holds to swap the eventfd (it puts the old one
 * only after unlocking).
 */
static __always_inline void
twheel_fd_record_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			u64 n, u64 deadline, u64 fired, int clock, u8 flags)
{
	lockdep_assert_held(&tf->lock);

	ft->rec->count = twheel_fd_sat_add(ft->rec->count, n);
	ft->rec->deadline = deadline;
	ft->rec->fired = fired;
	ft->rec->clock = clock;
	ft->rec->user_data = ft->user_data;
	ft->rec->flags = flags;
	if (!ft->on_list && !ft->in_flight)
		twheel_fd_queue_tail_locked(tf, ft);
	if (tf->evctx)
		twheel_eventfd_signal(tf->evctx);
}

/*
 * The expiry of a timer on another clock (twheel_fd_expire()): report it
 * only if the clock reached the deadline, or a set ended a cancel-on-set
 * timer (clock.c files it again if the clock went back). A periodic one
 * is counted and filed for its next deadline by clock.c, or parked there
 * if its previous event is still unread (lazy re-arming, as
 * twheel_fd_park_locked() does on CLOCK_MONOTONIC); a set ends a
 * cancel-on-set one. No deadline extension. Return: whether an event was
 * recorded.
 */
static noinline bool twheel_fd_expire_clock_locked(struct twheel_fd *tf,
						   struct twheel_fd_timer *ft)
{
	bool periodic = ft->mode != TWHEEL_ONESHOT;
	bool park = periodic && ft->rec->count;
	struct twheel_clock_expiry ex;
	u8 flags = periodic ? TWHEEL_EVENT_PERIODIC : 0;

	lockdep_assert_held(&tf->lock);

	/* MODIFY arms under tf->lock, which we hold: the link is stable. */
	switch (twheel_clock_link_expire(ft->rec->clk, park, &ex)) {
	case TWHEEL_CLOCK_FIRE:
		/* Parked: pending, unfiled, until read() (twheel_fd_resume()). */
		ft->parked = park;
		break;
	case TWHEEL_CLOCK_SET:
		flags |= TWHEEL_EVENT_CLOCK_SET;
		if (periodic)
			twheel_fd_clock_end_locked(ft);
		break;
	default:
		return false;
	}
	twheel_fd_record_locked(tf, ft, ex.count, ex.deadline, ex.now,
				ft->rec->clk->clock, flags);
	return true;
}

/*
 * No record to be had for @n expiries of a one-shot timer on
 * CLOCK_MONOTONIC (tf->recs is empty, and the slab has none without
 * sleeping): they are owed, not lost. The timer is starved, counted in
 * tf->nstarved, and the reader is woken: read() gives it a record,
 * allocated where it may sleep, before it takes any event
 * (twheel_fd_unstarve()), as do MODIFY and CANCEL before they touch it.
 * Its event then has the deadline the core kept for it and, as fired, the
 * time it was recorded: later than the expiry ran, never earlier. Nobody
 * arms a starved timer, but an arming by MODIFY can race the expiry it owes
 * (the arming came first, the callback was already on its way): then, as
 * for a record in that race, the event has the new arming's user data, and
 * a later expiry of that arming adds to its count. Its deadline is the new
 * arming's too, but never later than its fired: the new deadline may be
 * still to come, and no event looks early.
 */
static noinline void twheel_fd_starve_locked(struct twheel_fd *tf,
					     struct twheel_fd_timer *ft, u64 n)
{
	lockdep_assert_held(&tf->lock);

	if (!ft->starved) {
		ft->starved = true;
		ft->starved_count = 0;
		WRITE_ONCE(tf->nstarved, tf->nstarved + 1);
	}
	ft->starved_count = twheel_fd_sat_add(ft->starved_count, n);
	if (tf->evctx)
		twheel_eventfd_signal(tf->evctx);
}

/*
 * Gives a starved timer its record (from @pre, tf->recs or the slab without
 * sleeping) and queues the event it is owed. Under tf->lock.
 * Return: 0, or -ENOMEM with no record to be had (it stays starved).
 */
noinline int twheel_fd_unstarve_locked(struct twheel_fd *tf,
				       struct twheel_fd_timer *ft,
				       struct twheel_fd_prealloc *pre)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_get_locked(tf, pre);
	u64 count = ft->starved_count;

	lockdep_assert_held(&tf->lock);

	if (!rec)
		return -ENOMEM;
	ft->starved = false;
	WRITE_ONCE(tf->nstarved, tf->nstarved - 1);
	twheel_fd_rec_attach(ft, rec);
	rec->count = count;
	rec->fired = ktime_get_ns();
	rec->clock = TW_CLK_MONO;
	/* An arming that raced the expiry may be due later (see above). */
	rec->deadline = min_t(u64, ktime_to_ns(twheel_deadline(&ft->timer)),
			      rec->fired);
	rec->user_data = ft->user_data;
	twheel_fd_queue_tail_locked(tf, ft);
	return 0;
}

/*
 * The callback, in softirq context. The timer and the file outlive it: an
 * object is recycled or freed only once no callback runs for it, and the
 * file only after every object.
 */
void twheel_fd_expire(struct twheel_timer *timer, u64 missed)
{
	struct twheel_fd_timer *ft = container_of(timer, struct twheel_fd_timer,
						  timer);
	struct twheel_fd *tf = twheel_fd_of(ft);
	struct twheel_fd_rec *rec;
	u64 n = twheel_fd_sat_add(missed, 1);
	bool unread;

	spin_lock(&tf->lock);
	if (unlikely(ft->clock)) {
		unread = twheel_fd_expire_clock_locked(tf, ft);
		spin_unlock(&tf->lock);
		if (unread)
			twheel_fd_wake(tf);
		return;
	}
	if (twheel_fd_extend_locked(tf, ft)) {
		spin_unlock(&tf->lock);
		return;
	}
	rec = twheel_fd_rec_of(ft);
	if (!rec) {
		/* A one-shot timer: periodic ones always have a record. */
		rec = twheel_fd_rec_get_locked(tf, NULL);
		if (unlikely(!rec)) {
			twheel_fd_starve_locked(tf, ft, n);
			spin_unlock(&tf->lock);
			twheel_fd_wake(tf);
			return;
		}
		if (unlikely(ft->starved)) {
			/* Owed from before: MODIFY's arming raced an expiry. */
			n = twheel_fd_sat_add(n, ft->starved_count);
			ft->starved = false;
			WRITE_ONCE(tf->nstarved, tf->nstarved - 1);
		}
		twheel_fd_rec_attach(ft, rec);
	}
	unread = rec->count;
	twheel_fd_record_locked(tf, ft, n, ktime_to_ns(twheel_deadline(timer)),
				ktime_get_ns(), TW_CLK_MONO,
				ft->mode == TWHEEL_ONESHOT ? 0 : TWHEEL_EVENT_PERIODIC);
	if (ft->mode != TWHEEL_ONESHOT && unread)
		twheel_fd_park_locked(ft, missed);
	spin_unlock(&tf->lock);

	twheel_fd_wake(tf);
}

/*
 * Takes up to @max events off the ready list into @ev, their timers into
 * @fts (now in_flight, count reset). Returns how many.
 */
static unsigned int twheel_fd_pop(struct twheel_fd *tf,
				  struct twheel_event *ev,
				  struct twheel_fd_timer **fts,
				  unsigned int max)
{
	struct twheel_fd_timer *ft;
	struct twheel_fd_rec *rec;
	unsigned int n = 0;

	spin_lock_bh(&tf->lock);
	while (n < max && !list_empty(&tf->ready)) {
		rec = list_first_entry(&tf->ready, struct twheel_fd_rec, node);
		ft = rec->ft;
		tw_list_del_init(&rec->node);
		tf->unqueued++;
		ft->on_list = false;
		ft->in_flight = true;
		WRITE_ONCE(tf->nqueued, tf->nqueued - 1);
		if (ft->parked)
			twheel_fd_catch_up_locked(ft);

		ev[n] = (struct twheel_event) {
			.id		= ft->id,
			.user_data	= ft->rec->user_data,
			/* On the clocks of the file's time namespace. */
			.deadline	= twheel_fd_from_host(tf, ft->rec->clock,
							      ft->rec->deadline),
			.fired		= twheel_fd_from_host(tf, ft->rec->clock,
							      ft->rec->fired),
			.count		= ft->rec->count,
			.flags		= ft->rec->flags,
		};
		ft->rec->count = 0;
		fts[n++] = ft;
	}
	spin_unlock_bh(&tf->lock);
	return n;
}

/*
 * A reader is done with @ft (in_flight): queue it again if it fired again
 * meanwhile (*@woke is then set), recycle it if it was cancelled meanwhile
 * (an orphan: the cancel made (c) true), else leave it armed.
 */
static void twheel_fd_reader_done_locked(struct twheel_fd *tf,
					 struct twheel_fd_timer *ft, bool *woke,
					 struct llist_head *doomed)
{
	lockdep_assert_held(&tf->lock);

	ft->in_flight = false;
	if (ft->rec->count) {
		twheel_fd_queue_tail_locked(tf, ft);
		*woke = true;
	} else if (!ft->live) {
		tf->ntimers--;
		twheel_fd_recycle_locked(tf, ft, doomed);
	} else {
		/*
		 * Live, with no new event: a one-shot timer that MODIFY armed
		 * again gives its record back; a periodic one keeps it.
		 */
		twheel_fd_rec_trim_locked(tf, ft);
	}
}

/*
 * The second half of reading a fired one-shot timer's event: release its id
 * and recycle it, unless MODIFY re-armed it or it fired again meanwhile.
 * @ft is in_flight, so it is still allocated.
 */
static bool twheel_fd_release_oneshot(struct twheel_fd *tf,
				      struct twheel_fd_timer *ft,
				      struct llist_head *doomed)
{
	bool armed = true, woke = false;

	lockdep_assert_held(&tf->ctl_mutex);

	if (ft->live && READ_ONCE(ft->mode) == TWHEEL_ONESHOT &&
	    !twheel_pending(&ft->timer)) {
		/*
		 * Not pending and nobody can arm it (we hold ctl_mutex, and
		 * the ops under tf->lock alone leave in_flight timers alone): this
		 * only waits for a callback still running, so that the core
		 * no longer references the timer. Should an arming have been
		 * caught on its way to its callback, give it back its
		 * deadline rather than lose the expiry.
		 */
		if (!twheel_cancel_sync(&ft->timer))
			armed = false;
		else if (ft->clock)
			armed = twheel_clock_link_refile(ft->rec->clk);
		else
			WARN_ON_ONCE(twheel_arm(&ft->timer,
						twheel_deadline(&ft->timer),
						0, TWHEEL_ONESHOT) < 0);
	}

	spin_lock_bh(&tf->lock);
	twheel_fd_reader_done_locked(tf, ft, &woke, doomed);
	if (ft->live && !woke && !armed) {
		/* (c) by the cancel_sync above. */
		twheel_fd_table_remove(&tf->table, ft->id);
		ft->live = false;
		tf->ntimers--;
		twheel_fd_recycle_locked(tf, ft, doomed);
	}
	spin_unlock_bh(&tf->lock);
	return woke;
}

/*
 * The second half of reading a parked periodic timer's event: arm it again
 * for the deadline it would have had (see twheel_fd_park_locked()), or
 * free it if it was cancelled meanwhile. @ft is in_flight.
 */
static bool twheel_fd_resume(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			     struct llist_head *doomed)
{
	bool woke = false;

	lockdep_assert_held(&tf->ctl_mutex);

	spin_lock_bh(&tf->lock);
	if (ft->live && ft->parked) {
		ft->parked = false;
		/* Under tf->lock, as in twheel_fd_modify(). */
		if (unlikely(ft->clock))
			/* Its next deadline is in its link, still pending. */
			WARN_ON_ONCE(!twheel_clock_link_refile(ft->rec->clk));
		else
			WARN_ON_ONCE(twheel_arm(&ft->timer, ft->rec->park_deadline,
						twheel_fd_period(ft),
						ft->mode) < 0);
	}
	twheel_fd_reader_done_locked(tf, ft, &woke, doomed);
	spin_unlock_bh(&tf->lock);
	return woke;
}

/* Under ctl_mutex, what twheel_fd_finish() could not do under tf->lock. */
static bool twheel_fd_settle(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			     struct llist_head *doomed)
{
	lockdep_assert_held(&tf->ctl_mutex);

	/* A callback may end a periodic clock timer meanwhile: see @mode. */
	if (READ_ONCE(ft->mode) == TWHEEL_ONESHOT)
		return twheel_fd_release_oneshot(tf, ft, doomed);
	return twheel_fd_resume(tf, ft, doomed);
}

/*
 * Finishes the @n timers taken by twheel_fd_pop() of which the first @ok
 * had their event copied out. The others are put back at the head, in
 * order, with their count restored.
 */
static void twheel_fd_finish(struct twheel_fd *tf,
			     const struct twheel_event *ev,
			     struct twheel_fd_timer **fts,
			     unsigned int n, unsigned int ok)
{
	unsigned long settle = 0;
	struct twheel_fd_timer *ft;
	LLIST_HEAD(doomed);
	bool woke = false;
	unsigned int i;

	BUILD_BUG_ON(TWHEEL_FD_READ_CHUNK > BITS_PER_LONG);
	spin_lock_bh(&tf->lock);
	for (i = n; i-- > ok; ) {
		ft = fts[i];
		ft->in_flight = false;
		ft->rec->count = twheel_fd_sat_add(ft->rec->count, ev[i].count);
		tw_list_add(&ft->rec->node, &tf->ready);
		ft->on_list = true;
		WRITE_ONCE(tf->nqueued, tf->nqueued + 1);
		woke = true;
	}
	for (i = 0; i < ok; i++) {
		ft = fts[i];
		/*
		 * A fired one-shot or a parked timer that did not fire again
		 * meanwhile stays in_flight until settled under ctl_mutex.
		 */
		if (!ft->rec->count && ft->live &&
		    (ft->mode == TWHEEL_ONESHOT || ft->parked))
			settle |= BIT(i);
		else
			twheel_fd_reader_done_locked(tf, ft, &woke, &doomed);
	}
	spin_unlock_bh(&tf->lock);

	if (settle) {
		mutex_lock(&tf->ctl_mutex);
		for_each_set_bit(i, &settle, ok)
			woke |= twheel_fd_settle(tf, fts[i], &doomed);
		mutex_unlock(&tf->ctl_mutex);
	}
	twheel_fd_destroy_list(tf, &doomed);

	if (woke)
		twheel_fd_wake(tf);
}

/* Slots looked at per hold of tf->lock by twheel_fd_unstarve(). */
#define TWHEEL_FD_SCAN_ROUND	512

/*
 * Gives the starved timers their records (twheel_fd_starve_locked()),
 * allocated here, where we may sleep and charge the reader's memory
 * cgroup, and queues their events. Under ctl_mutex, so that the table does
 * not grow meanwhile; looks at TWHEEL_FD_SCAN_ROUND slots at most per hold
 * of tf->lock, and at each slot once. Only after an expiry found no memory
 * to be had. Return: 0, or -ENOMEM if no record could be had.
 */
static noinline int twheel_fd_unstarve(struct twheel_fd *tf)
{
	struct twheel_fd_prealloc pre;
	struct twheel_fd_timer *ft;
	u32 slot = 0, end;
	int ret = 0;

	INIT_LIST_HEAD(&pre.links);
	INIT_LIST_HEAD(&pre.recs);
	mutex_lock(&tf->ctl_mutex);
	while (!ret && READ_ONCE(tf->nstarved) && slot < tf->table.nslots) {
		/* Short of these, spare records and the slab without sleeping. */
		if (list_empty(&pre.recs))
			twheel_fd_recs_alloc(&pre.recs,
					     min_t(unsigned int,
						   READ_ONCE(tf->nstarved),
						   TWHEEL_FD_LOCK_ROUND));
		end = min_t(u32, slot + TWHEEL_FD_SCAN_ROUND, tf->table.nslots);
		spin_lock_bh(&tf->lock);
		for (; slot < end && tf->nstarved && !ret; slot++) {
			ft = twheel_fd_slot_timer(tf, slot);
			if (ft && ft->starved)
				ret = twheel_fd_unstarve_locked(tf, ft, &pre);
		}
		spin_unlock_bh(&tf->lock);
		cond_resched();
	}
	mutex_unlock(&tf->ctl_mutex);
	twheel_fd_recs_free(&pre.recs);
	return ret;
}

ssize_t twheel_fd_read(struct file *file, char __user *buf, size_t count,
		       loff_t *ppos)
{
	struct twheel_fd *tf = file->private_data;
	/*
	 * Not cleared on entry: twheel_fd_pop() writes each event whole
	 * (struct twheel_event has no hole), and only the events it wrote
	 * are copied out or looked at.
	 */
	struct twheel_event ev[TWHEEL_FD_READ_CHUNK] __uninitialized;
	struct twheel_fd_timer *fts[TWHEEL_FD_READ_CHUNK] __uninitialized;
	size_t max = count / sizeof(ev[0]), done = 0;
	unsigned int n, ok;
	unsigned long left;
	int ret;

	if (!max)
		return -EINVAL;

	while (done < max) {
		if (unlikely(READ_ONCE(tf->nstarved))) {
			ret = twheel_fd_unstarve(tf);
			if (ret && !done && !READ_ONCE(tf->nqueued))
				return ret;
		}
		n = twheel_fd_pop(tf, ev, fts,
				  min_t(size_t, max - done, ARRAY_SIZE(ev)));
		if (!n) {
			if (done)
				break;
			if (file->f_flags & O_NONBLOCK)
				return -EAGAIN;
			ret = wait_event_interruptible(tf->wq,
						       READ_ONCE(tf->nqueued) ||
						       READ_ONCE(tf->nstarved));
			if (ret)
				return ret;
			continue;
		}

		left = copy_to_user(buf + done * sizeof(ev[0]), ev,
				    n * sizeof(ev[0]));
		ok = n - DIV_ROUND_UP(left, sizeof(ev[0]));
		twheel_fd_finish(tf, ev, fts, n, ok);
		done += ok;
		if (ok < n) {
			if (!done)
				return -EFAULT;
			break;
		}
		/*
		 * Periodic timers that this read() re-arms can fire again
		 * before it finds the queue empty: with enough of them a
		 * read() into a large buffer would run until the buffer is
		 * full, deaf to signals, a killed task included. What was
		 * read is returned at a signal, as a pipe does.
		 */
		if (signal_pending(current))
			break;
		cond_resched();
	}
	return done * sizeof(ev[0]);
}

__poll_t twheel_fd_poll(struct file *file, poll_table *wait)
{
	struct twheel_fd *tf = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &tf->wq, wait);

	spin_lock_bh(&tf->lock);
	if (tf->nqueued || tf->nstarved)
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock_bh(&tf->lock);
	return mask;
}
