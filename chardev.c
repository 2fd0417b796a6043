// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: /dev/twheel, the userspace interface (uapi/twheel.h).
 *
 * Every open file is a context of its own (struct twheel_fd): a set of
 * timers named by ids, a FIFO of timers that have expiries to report, a
 * waitqueue for read() and poll(), and optionally an eventfd signalled on
 * every expiry. Nothing is shared between open files.
 *
 * A timer of this interface (struct twheel_fd_timer) embeds a struct
 * twheel_timer and carries the record of its next event. Its states:
 *
 *   SCHEDULE -> ARMED:    id live (in tf->timers), pending in the core.
 *   ARMED --expiry-->     the event record is updated (count += 1 + missed)
 *                         and the timer is put on tf->ready unless it is
 *                         there already. A periodic timer stays ARMED; a
 *                         one-shot one becomes FIRED (id still live).
 *   MODIFY:               ARMED or FIRED -> ARMED; a queued event stays.
 *   read() of the event:  ARMED: count goes back to 0, nothing else.
 *                         FIRED: the id is released and the object freed.
 *   CANCEL:               the id is released at once. Without a queued
 *                         event the object is freed; with one it becomes an
 *                         ORPHAN, reachable only from tf->ready, freed when
 *                         that event (TWHEEL_EVENT_CANCELLED if periodic)
 *                         is read.
 *   close():              every object is freed.
 *
 * So an object is freed once (a) its id is no longer live, (b) it has no
 * queued event, and (c) the core no longer references it, which is
 * guaranteed by twheel_cancel_sync() or twheel_group_shutdown_sync() having
 * returned with nobody allowed to re-arm it since. Each free path below
 * says which of these makes (c) true.
 *
 * Locking, outermost first:
 *
 *   tf->ctl_mutex  serialises everything that makes an id live or not live
 *                  and everything that arms or cancels a timer: the ioctls,
 *                  and the part of read() that releases the ids of fired
 *                  one-shot timers. Held across twheel_cancel_sync(), which
 *                  is fine: the callback never takes it. Never held across
 *                  a user copy, so a thread stuck in a page fault cannot
 *                  stall another one on the mutex.
 *   tf->lock       a spinlock taken by the timer callback (softirq) and with
 *                  bottom halves disabled everywhere else. Protects the
 *                  event records, the ready list and the counters, and the
 *                  eventfd pointer. Never held across a twheel_* call.
 *   xa_lock        taken inside the xarray helpers, under ctl_mutex only.
 *
 * A reader takes events off tf->ready under tf->lock, marks their timers
 * in_flight, copies the events out with no lock held, and then, under
 * tf->lock again (and ctl_mutex for a fired one-shot timer, whose id it must
 * release), either puts back what it could not copy or finishes the
 * timers. While a timer is in_flight nobody else frees it, and the callback
 * only updates its record: it does not requeue it, the reader does that if
 * the timer fired again meanwhile.
 *
 * fork(): the child shares the parent's struct file, so both processes
 * operate on the same context; nothing is copied and nothing needs doing.
 * The memory stays charged to the memory cgroup of whoever allocated it.
 *
 * Accounting: the context, the timer objects (SLAB_ACCOUNT cache), the
 * xarray nodes and the batch buffers are charged to the caller's memory
 * cgroup, and the number of timer objects of one file is capped, which is
 * why the device is world read-writable.
 */

#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/eventfd.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/lockdep.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "twheel.h"
#include "internal.h"
#include "uapi/twheel.h"

/*
 * Every struct of the ABI has the same layout for 32- and 64-bit callers
 * (sizes are multiples of 8 and every __u64 is at an 8-aligned offset), so
 * compat_ptr_ioctl() is all the compat support needed and an array of
 * struct twheel_op has the same stride everywhere.
 */
static_assert(sizeof(struct twheel_timer_spec) == 56);
static_assert(offsetof(struct twheel_timer_spec, clockid) == 32);
static_assert(offsetof(struct twheel_timer_spec, reserved) == 40);
static_assert(sizeof(struct twheel_cancel) == 16);
static_assert(sizeof(struct twheel_eventfd) == 16);
static_assert(offsetof(struct twheel_eventfd, reserved) == 8);
static_assert(sizeof(struct twheel_op) == 64);
static_assert(offsetof(struct twheel_op, spec) == 8);
static_assert(sizeof(struct twheel_batch) == 24);
static_assert(offsetof(struct twheel_batch, reserved) == 16);
static_assert(sizeof(struct twheel_info) == 56);
static_assert(offsetof(struct twheel_info, user_timers) == 24);
static_assert(offsetof(struct twheel_info, max_total_timers) == 48);
static_assert(sizeof(struct twheel_event) == 48);
static_assert(offsetof(struct twheel_event, flags) == 40);

/* Upper bound of the max_timers parameter: 16M timers per open file. */
#define TWHEEL_FD_MAX_TIMERS_LIMIT	(16u << 20)

/* Ids are never 0 (XA_FLAGS_ALLOC1) and fit the xarray index everywhere. */
#define TWHEEL_FD_ID_LIMIT		XA_LIMIT(1, U32_MAX)

/* Events taken off the ready list per round of read(); lives on the stack. */
#define TWHEEL_FD_READ_CHUNK		8

static unsigned int max_timers = 65536;

/*
 * Per-user and global caps on timer objects, across all open files.
 * 0 at load time means the default, scaled to the memory of the machine as
 * epoll's max_user_watches is: a user may pin 1/25th (4%) of low memory
 * in timers, and all users together a quarter, at TWHEEL_TIMER_COST bytes
 * per timer. Root may change both at any time; a lower cap refuses new
 * timers, it does not take existing ones away.
 */
static unsigned long max_user_timers;
module_param(max_user_timers, ulong, 0644);
MODULE_PARM_DESC(max_user_timers,
		 "most timers of one user across all open files (default: 4% of low memory / 256 B)");

static unsigned long max_total_timers;
module_param(max_total_timers, ulong, 0644);
MODULE_PARM_DESC(max_total_timers,
		 "most timers of all users together (default: 25% of low memory / 256 B)");

/*
 * What one timer costs the kernel, rounded up: the object (its slab slot)
 * plus its share of the id table. Used only to scale the default caps.
 */
#define TWHEEL_TIMER_COST	256

/**
 * struct twheel_user - what one user's open files hold together
 * @node: in twheel_users, under twheel_users_lock
 * @uid: the user, from the credentials of open()
 * @files: open files charged to this user; under twheel_users_lock
 * @timers: timer objects of those files; atomic, changed by
 *	twheel_fd_reserve() and twheel_fd_unreserve() only
 */
struct twheel_user {
	struct hlist_node	node;
	kuid_t			uid;
	unsigned int		files;
	atomic_long_t		timers;
};

/* uid -> struct twheel_user of every user with an open file. */
static DEFINE_HASHTABLE(twheel_users, 6);
static DEFINE_SPINLOCK(twheel_users_lock);	/* twheel_users, ::files */

/* Timer objects of all files; against max_total_timers. */
static atomic_long_t twheel_total_timers = ATOMIC_LONG_INIT(0);

static int max_timers_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, TWHEEL_FD_MAX_TIMERS_LIMIT);
}

static const struct kernel_param_ops max_timers_ops = {
	.set	= max_timers_set,
	.get	= param_get_uint,
};

/*
 * Sampled by each open(): changing it affects files opened afterwards, so
 * the limit of a file never changes under its user (TWHEEL_IOC_INFO reports
 * the one in force).
 */
module_param_cb(max_timers, &max_timers_ops, &max_timers, 0644);
MODULE_PARM_DESC(max_timers,
		 "most timers per open /dev/twheel, sampled at open (1..16777216, default 65536)");

/**
 * struct twheel_fd - the context of one open /dev/twheel
 * @ctl_mutex: serialises id allocation and release and every arm or cancel
 *	(see the top of this file)
 * @timers: id -> struct twheel_fd_timer for the live ids. Entries are added
 *	and erased under @ctl_mutex only, and looked up under it.
 * @next_id: cursor of xa_alloc_cyclic(); under @ctl_mutex
 * @max_timers: the cap on @ntimers; set at open, constant afterwards
 * @user: the user charged for this file's timers (per-user cap); constant
 * @cap_exempt: the opener had CAP_SYS_RESOURCE: the per-user cap does not
 *	apply (the per-file and global caps do); constant
 * @group: every timer of this file, so that release() can stop them all
 * @lock: protects @ready, @nqueued, @ntimers, @evctx and the event record
 *	of every timer (see struct twheel_fd_timer). Taken by the callback in
 *	softirq context, so with bottom halves disabled everywhere else.
 * @ready: timers with a queued event, in the order their expiries ran;
 *	linked through twheel_fd_timer::ready_node; under @lock
 * @nqueued: length of @ready; written under @lock, read locklessly by the
 *	wait condition of read()
 * @ntimers: timer objects allocated (live ids, plus orphans whose event is
 *	queued); under @lock. Reserved before an object is allocated and
 *	dropped when the decision to free it is taken.
 * @evctx: the registered eventfd, or NULL; under @lock, which the callback
 *	holds while signalling it, so that TWHEEL_IOC_SET_EVENTFD can swap it
 *	and put the old one after unlocking
 * @wq: readers and pollers; woken after every expiry
 */
struct twheel_fd {
	struct mutex		ctl_mutex;	/* ids, arming, cancelling */
	struct xarray		timers;
	u32			next_id;
	unsigned int		max_timers;
	struct twheel_user	*user;
	bool			cap_exempt;
	struct twheel_group	group;

	spinlock_t		lock;		/* events; also taken in softirq */
	struct list_head	ready;
	unsigned int		nqueued;
	unsigned int		ntimers;
	struct eventfd_ctx	*evctx;

	wait_queue_head_t	wq;
};

/**
 * struct twheel_fd_timer - one timer of an open /dev/twheel
 * @timer: the core's timer; armed and cancelled under tf->ctl_mutex only
 * @tf: the file the timer belongs to; constant
 * @id: its id; set before it becomes live, constant afterwards
 * @armed_deadline: the deadline of the latest arming; under tf->ctl_mutex
 * @period: the period of the latest arming; written with both locks held
 * @parked: a periodic timer that expired while its previous event was
 *	still unread, and was therefore not re-armed (lazy re-arming, see
 *	twheel_fd_expire()); read() arms it again. Set by the callback under
 *	tf->lock; cleared with both locks held. It counts as pending.
 * @park_deadline: when a parked timer is next due; under tf->lock
 * @mode: the mode of the latest arming. Written with both tf->ctl_mutex
 *	and tf->lock held, so either is enough to read it (the callback uses
 *	tf->lock).
 * @live: @id is in tf->timers and usable by the ioctls. Written with both
 *	locks held, like @mode.
 * @user_data: the latest one given by SCHEDULE or MODIFY; under tf->lock
 * @ready_node: on tf->ready while @on_list. While the timer is in_flight and
 *	off the list, the reader that holds it may link it on a list of its
 *	own (nobody else touches it then).
 *
 * The event record, all under tf->lock; written by the callback, taken and
 * reset by read():
 * @ev_user_data: @user_data when the latest expiry ran
 * @ev_deadline: deadline of the latest expiry, ns of CLOCK_MONOTONIC
 * @ev_fired: when the latest expiry ran
 * @count: expiries since the event was last read; 0 means no event
 * @ev_flags: TWHEEL_EVENT_*
 * @on_list: on tf->ready
 * @in_flight: taken off tf->ready by a reader that has not finished with it
 *	yet; a timer is never both @on_list and @in_flight
 */
struct twheel_fd_timer {
	struct twheel_timer	timer;
	struct twheel_fd	*tf;
	u32			id;
	ktime_t			armed_deadline;
	u64			period;
	enum twheel_mode	mode;
	bool			live;
	bool			parked;
	ktime_t			park_deadline;
	u64			user_data;
	struct list_head	ready_node;

	u64			ev_user_data;
	u64			ev_deadline;
	u64			ev_fired;
	u64			count;
	u32			ev_flags;
	bool			on_list;
	bool			in_flight;
};

static struct kmem_cache *twheel_fd_timer_cache __read_mostly;

static u64 twheel_fd_sat_add(u64 a, u64 b)
{
	u64 sum;

	if (check_add_overflow(a, b, &sum))
		return U64_MAX;
	return sum;
}

/*
 * Counts a new timer object against the caps: this file's (ENOSPC), its
 * user's unless the opener had CAP_SYS_RESOURCE (EDQUOT), and the global
 * one (EAGAIN). On failure nothing is counted.
 */
static int twheel_fd_reserve(struct twheel_fd *tf)
{
	int ret;

	spin_lock_bh(&tf->lock);
	if (tf->ntimers >= tf->max_timers) {
		spin_unlock_bh(&tf->lock);
		return -ENOSPC;
	}
	tf->ntimers++;
	spin_unlock_bh(&tf->lock);

	if ((unsigned long)atomic_long_inc_return(&tf->user->timers) >
	    READ_ONCE(max_user_timers) && !tf->cap_exempt) {
		ret = -EDQUOT;
		goto err_user;
	}
	if ((unsigned long)atomic_long_inc_return(&twheel_total_timers) >
	    READ_ONCE(max_total_timers)) {
		ret = -EAGAIN;
		goto err_total;
	}
	return 0;

err_total:
	atomic_long_dec(&twheel_total_timers);
err_user:
	atomic_long_dec(&tf->user->timers);
	spin_lock_bh(&tf->lock);
	tf->ntimers--;
	spin_unlock_bh(&tf->lock);
	return ret;
}

/* Gives back what twheel_fd_reserve() counted, once the object is doomed. */
static void twheel_fd_unreserve_locked(struct twheel_fd *tf)
{
	lockdep_assert_held(&tf->lock);

	tf->ntimers--;
	atomic_long_dec(&tf->user->timers);
	atomic_long_dec(&twheel_total_timers);
}

/*
 * Frees a timer object nobody references any more: not live, no queued
 * event, not in the core (the caller says why), and @tf->ntimers already
 * dropped.
 */
static void twheel_fd_timer_free(struct twheel_fd *tf,
				 struct twheel_fd_timer *ft)
{
	twheel_group_del(&tf->group, &ft->timer);
	kmem_cache_free(twheel_fd_timer_cache, ft);
}

static void twheel_fd_queue_tail_locked(struct twheel_fd *tf,
					struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&tf->lock);

	list_add_tail(&ft->ready_node, &tf->ready);
	ft->on_list = true;
	WRITE_ONCE(tf->nqueued, tf->nqueued + 1);
}

static void twheel_fd_wake(struct twheel_fd *tf)
{
	/* Pairs with the barrier in prepare_to_wait() and in poll_wait(). */
	if (wq_has_sleeper(&tf->wq))
		wake_up_poll(&tf->wq, EPOLLIN | EPOLLRDNORM);
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

	lockdep_assert_held(&ft->tf->lock);

	/* False if MODIFY re-armed the timer since this expiry began. */
	if (!twheel_cancel_running(&ft->timer))
		return;
	if (ft->mode == TWHEEL_FIXED_RATE) {
		if (check_mul_overflow(missed + 1, ft->period, &next) ||
		    check_add_overflow(next, ft->ev_deadline, &next))
			next = KTIME_MAX;
	} else {
		next = twheel_fd_sat_add(ft->ev_fired, ft->period);
	}
	ft->park_deadline = min_t(u64, next, KTIME_MAX);
	ft->parked = true;
}

/*
 * read() of a parked timer's event: count the periods that passed since it
 * was parked, as if it had kept firing; the event then names the latest
 * of them, and its @ev_fired is now, when it was accounted for.
 */
static void twheel_fd_catch_up_locked(struct twheel_fd_timer *ft)
{
	u64 now = ktime_get_ns(), n;

	lockdep_assert_held(&ft->tf->lock);

	if (now < ft->park_deadline)
		return;
	n = div64_u64(now - ft->park_deadline, ft->period);
	/* park_deadline + n * period <= now: no overflow. */
	ft->ev_deadline = ft->park_deadline + n * ft->period;
	ft->ev_fired = now;
	ft->ev_user_data = ft->user_data;
	ft->count = twheel_fd_sat_add(ft->count, n + 1);
	ft->park_deadline = min_t(u64, twheel_fd_sat_add(ft->ev_deadline,
							 ft->period),
				  KTIME_MAX);
}

/*
 * MODIFY or CANCEL of a parked timer: count the periods that passed, as
 * read() would, and end the parking. Return: whether it was parked.
 */
static bool twheel_fd_unpark_locked(struct twheel_fd_timer *ft)
{
	if (!ft->parked)
		return false;
	twheel_fd_catch_up_locked(ft);
	ft->parked = false;
	return true;
}

/*
 * The callback, in softirq context. The timer and the file outlive it: both
 * are freed only after a twheel_cancel_sync() or
 * twheel_group_shutdown_sync() that waits for it.
 */
static void twheel_fd_expire(struct twheel_timer *timer, u64 missed)
{
	struct twheel_fd_timer *ft = container_of(timer, struct twheel_fd_timer,
						  timer);
	struct twheel_fd *tf = ft->tf;

	bool unread;

	spin_lock(&tf->lock);
	unread = ft->count;
	ft->count = twheel_fd_sat_add(ft->count,
				      twheel_fd_sat_add(missed, 1));
	ft->ev_deadline = ktime_to_ns(twheel_deadline(timer));
	ft->ev_fired = ktime_get_ns();
	ft->ev_user_data = ft->user_data;
	ft->ev_flags = ft->mode == TWHEEL_ONESHOT ? 0 : TWHEEL_EVENT_PERIODIC;
	if (ft->mode != TWHEEL_ONESHOT && unread)
		twheel_fd_park_locked(ft, missed);
	if (!ft->on_list && !ft->in_flight)
		twheel_fd_queue_tail_locked(tf, ft);
	/*
	 * Under tf->lock: TWHEEL_IOC_SET_EVENTFD swaps the pointer under it
	 * and puts the old context only after unlocking.
	 */
	if (tf->evctx)
		eventfd_signal(tf->evctx);
	spin_unlock(&tf->lock);

	twheel_fd_wake(tf);
}

/* An arming of the core, checked and converted from a struct twheel_timer_spec. */
struct twheel_fd_arming {
	ktime_t			deadline;
	u64			period;
	enum twheel_mode	mode;
};

/*
 * Checks @spec as uapi/twheel.h documents (all EINVAL first, then ERANGE)
 * and converts it. A relative value is taken from now.
 */
static int twheel_fd_check_spec(const struct twheel_timer_spec *spec,
				struct twheel_fd_arming *arm)
{
	ktime_t now;

	if (spec->flags & ~TWHEEL_TIMER_FLAGS)
		return -EINVAL;
	if (spec->reserved[0] || spec->reserved[1])
		return -EINVAL;
	if (spec->clockid != TWHEEL_CLOCK_MONOTONIC)
		return -EINVAL;
	if (spec->value > S64_MAX)
		return -EINVAL;

	if (spec->flags & TWHEEL_TIMER_PERIODIC) {
		if (!spec->period || spec->period > S64_MAX)
			return -EINVAL;
		arm->mode = spec->flags & TWHEEL_TIMER_FIXED_DELAY ?
			    TWHEEL_FIXED_DELAY : TWHEEL_FIXED_RATE;
	} else {
		if (spec->period || (spec->flags & TWHEEL_TIMER_FIXED_DELAY))
			return -EINVAL;
		arm->mode = TWHEEL_ONESHOT;
	}
	arm->period = spec->period;

	if (spec->flags & TWHEEL_TIMER_ABSTIME) {
		arm->deadline = (ktime_t)spec->value;
	} else {
		now = ktime_get();
		if (spec->value > (u64)(KTIME_MAX - now))
			return -ERANGE;
		arm->deadline = now + (ktime_t)spec->value;
	}
	return 0;
}

static struct twheel_fd_timer *twheel_fd_lookup(struct twheel_fd *tf, u64 id)
{
	lockdep_assert_held(&tf->ctl_mutex);

	/* Ids are u32: a larger one would be truncated on 32-bit kernels. */
	if (!id || id > U32_MAX)
		return NULL;
	return xa_load(&tf->timers, (unsigned long)id);
}

/*
 * TWHEEL_IOC_SCHEDULE and TWHEEL_OP_SCHEDULE: on success, writes the new id
 * to @spec->id and returns 0. On failure nothing has changed.
 */
static int twheel_fd_schedule(struct twheel_fd *tf,
			      struct twheel_timer_spec *spec)
{
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	u32 id;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_check_spec(spec, &arm);
	if (ret)
		return ret;

	ret = twheel_fd_reserve(tf);
	if (ret)
		return ret;

	ft = kmem_cache_zalloc(twheel_fd_timer_cache, GFP_KERNEL_ACCOUNT);
	if (!ft) {
		ret = -ENOMEM;
		goto err_unreserve;
	}
	ft->tf = tf;
	INIT_LIST_HEAD(&ft->ready_node);
	twheel_timer_init(&ft->timer, twheel_fd_expire, 0);

	ret = twheel_group_add(&tf->group, &ft->timer);
	if (ret)
		goto err_free;

	/*
	 * Visible to lookups at once, but those all hold ctl_mutex, as we do:
	 * nobody sees the timer before it is armed.
	 */
	ret = xa_alloc_cyclic(&tf->timers, &id, ft, TWHEEL_FD_ID_LIMIT,
			      &tf->next_id, GFP_KERNEL_ACCOUNT);
	if (ret < 0) {
		if (ret == -EBUSY)
			ret = -ENOSPC;
		goto err_group_del;
	}
	ft->id = id;
	ft->armed_deadline = arm.deadline;
	ft->period = arm.period;

	spin_lock_bh(&tf->lock);
	ft->mode = arm.mode;
	ft->user_data = spec->user_data;
	ft->live = true;
	spin_unlock_bh(&tf->lock);

	ret = twheel_arm(&ft->timer, arm.deadline, arm.period, arm.mode);
	if (ret < 0)
		goto err_erase;

	spec->id = id;
	return 0;

err_erase:
	/* Never armed, so the core does not reference it. */
	xa_erase(&tf->timers, id);
err_group_del:
	twheel_group_del(&tf->group, &ft->timer);
err_free:
	kmem_cache_free(twheel_fd_timer_cache, ft);
err_unreserve:
	spin_lock_bh(&tf->lock);
	twheel_fd_unreserve_locked(tf);
	spin_unlock_bh(&tf->lock);
	return ret;
}

/* TWHEEL_IOC_MODIFY and TWHEEL_OP_MODIFY: 1 if it was pending, 0 if not. */
static int twheel_fd_modify(struct twheel_fd *tf,
			    const struct twheel_timer_spec *spec)
{
	struct twheel_fd_arming arm;
	struct twheel_fd_timer *ft;
	bool parked;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_check_spec(spec, &arm);
	if (ret)
		return ret;

	ft = twheel_fd_lookup(tf, spec->id);
	if (!ft)
		return -ENOENT;

	/*
	 * An expiry of the previous arming may still be running, and will
	 * see the new mode and user_data: it is reported as the new timer's.
	 */
	ft->armed_deadline = arm.deadline;
	/*
	 * Armed under tf->lock (twheel_arm() takes no lock and does not
	 * wait), so that a running callback decides whether to park the
	 * timer (twheel_fd_park_locked()) either before this arming, which
	 * then undoes the parking, or after it, and then leaves it alone.
	 */
	spin_lock_bh(&tf->lock);
	/* The periods of the old arming, up to now, are counted. */
	parked = twheel_fd_unpark_locked(ft);
	ft->mode = arm.mode;
	ft->period = arm.period;
	ft->user_data = spec->user_data;
	ret = twheel_arm(&ft->timer, arm.deadline, arm.period, arm.mode);
	spin_unlock_bh(&tf->lock);

	/* A parked periodic timer was pending, as far as its user knows. */
	return ret < 0 ? ret : ret || parked;
}

/*
 * Cancels @ft and releases its id; 1 if it was pending, 0 if not. A queued
 * event stays readable (then the object is freed by the reader), unless
 * @discard, which drops an event still on the ready list.
 */
static int twheel_fd_cancel_timer(struct twheel_fd *tf,
				  struct twheel_fd_timer *ft, bool discard)
{
	bool pending, free_now = false;

	lockdep_assert_held(&tf->ctl_mutex);

	/* Nobody can re-arm it after this: that takes ctl_mutex and the id. */
	pending = twheel_cancel_sync(&ft->timer);
	xa_erase(&tf->timers, ft->id);

	spin_lock_bh(&tf->lock);
	ft->live = false;
	/* Parked: not armed in the core, but pending for its user. */
	if (twheel_fd_unpark_locked(ft))
		pending = true;
	if (discard && ft->on_list) {
		list_del_init(&ft->ready_node);
		ft->on_list = false;
		ft->count = 0;
		WRITE_ONCE(tf->nqueued, tf->nqueued - 1);
	}
	if (ft->on_list || ft->in_flight) {
		/*
		 * An orphan now: the reader of its event frees it. The event
		 * of a periodic timer says that no more will follow.
		 */
		if (ft->mode != TWHEEL_ONESHOT)
			ft->ev_flags |= TWHEEL_EVENT_CANCELLED;
	} else {
		twheel_fd_unreserve_locked(tf);
		free_now = true;
	}
	spin_unlock_bh(&tf->lock);

	if (free_now)
		twheel_fd_timer_free(tf, ft);	/* (c): cancel_sync above */
	return pending;
}

/* TWHEEL_IOC_CANCEL and TWHEEL_OP_CANCEL: 1 if it was pending, 0 if not. */
static int twheel_fd_cancel(struct twheel_fd *tf, const struct twheel_cancel *c)
{
	struct twheel_fd_timer *ft;

	lockdep_assert_held(&tf->ctl_mutex);

	if (c->flags || c->pad)
		return -EINVAL;
	ft = twheel_fd_lookup(tf, c->id);
	if (!ft)
		return -ENOENT;
	return twheel_fd_cancel_timer(tf, ft, false);
}

static long twheel_fd_ioc_schedule(struct twheel_fd *tf,
				   struct twheel_timer_spec __user *uspec)
{
	struct twheel_timer_spec spec;
	struct twheel_fd_timer *ft;
	int ret;

	if (copy_from_user(&spec, uspec, sizeof(spec)))
		return -EFAULT;

	mutex_lock(&tf->ctl_mutex);
	ret = twheel_fd_schedule(tf, &spec);
	mutex_unlock(&tf->ctl_mutex);
	if (ret)
		return ret;

	if (!put_user(spec.id, &uspec->id))
		return 0;

	/*
	 * The caller cannot learn the id, so cannot use the timer: undo,
	 * unless another thread guessed the id and got there first.
	 */
	mutex_lock(&tf->ctl_mutex);
	ft = twheel_fd_lookup(tf, spec.id);
	if (ft)
		twheel_fd_cancel_timer(tf, ft, true);
	mutex_unlock(&tf->ctl_mutex);
	return -EFAULT;
}

static long twheel_fd_ioc_modify(struct twheel_fd *tf,
				 const struct twheel_timer_spec __user *uspec)
{
	struct twheel_timer_spec spec;
	int ret;

	if (copy_from_user(&spec, uspec, sizeof(spec)))
		return -EFAULT;

	mutex_lock(&tf->ctl_mutex);
	ret = twheel_fd_modify(tf, &spec);
	mutex_unlock(&tf->ctl_mutex);
	return ret;
}

static long twheel_fd_ioc_cancel(struct twheel_fd *tf,
				 const struct twheel_cancel __user *uc)
{
	struct twheel_cancel c;
	int ret;

	if (copy_from_user(&c, uc, sizeof(c)))
		return -EFAULT;

	mutex_lock(&tf->ctl_mutex);
	ret = twheel_fd_cancel(tf, &c);
	mutex_unlock(&tf->ctl_mutex);
	return ret;
}

static int twheel_fd_run_op(struct twheel_fd *tf, struct twheel_op *op)
{
	const struct twheel_timer_spec *s = &op->spec;
	struct twheel_cancel c = { .id = s->id };

	lockdep_assert_held(&tf->ctl_mutex);

	switch (op->op) {
	case TWHEEL_OP_SCHEDULE:
		return twheel_fd_schedule(tf, &op->spec);
	case TWHEEL_OP_MODIFY:
		return twheel_fd_modify(tf, s);
	case TWHEEL_OP_CANCEL:
		if (s->value || s->period || s->user_data || s->clockid ||
		    s->flags || s->reserved[0] || s->reserved[1])
			return -EINVAL;
		return twheel_fd_cancel(tf, &c);
	default:
		return -EINVAL;
	}
}

static long twheel_fd_ioc_batch(struct twheel_fd *tf,
				const struct twheel_batch __user *ub)
{
	struct twheel_batch b;
	struct twheel_op *ops;
	struct twheel_op __user *uops;
	unsigned int done, nwrite;
	long ret;
	int r;

	if (copy_from_user(&b, ub, sizeof(b)))
		return -EFAULT;
	if (b.flags || b.reserved || !b.count || b.count > TWHEEL_BATCH_MAX)
		return -EINVAL;

	uops = u64_to_user_ptr(b.ops);
	ops = kvmalloc_array(b.count, sizeof(*ops), GFP_KERNEL_ACCOUNT);
	if (!ops)
		return -ENOMEM;
	if (copy_from_user(ops, uops, array_size(b.count, sizeof(*ops)))) {
		ret = -EFAULT;
		goto out_free_ops;
	}

	mutex_lock(&tf->ctl_mutex);
	for (done = 0; done < b.count; done++) {
		r = twheel_fd_run_op(tf, &ops[done]);
		ops[done].result = r;
		if (r < 0)
			break;
	}
	mutex_unlock(&tf->ctl_mutex);

	/* Write back the ops that ran, the failed one included, no more. */
	nwrite = min(done + 1, b.count);
	if (copy_to_user(uops, ops, array_size(nwrite, sizeof(*ops))))
		ret = -EFAULT;
	else
		ret = done;

out_free_ops:
	kvfree(ops);
	return ret;
}

static long twheel_fd_ioc_set_eventfd(struct twheel_fd *tf,
				      const struct twheel_eventfd __user *ue)
{
	struct twheel_eventfd e;
	struct eventfd_ctx *ctx = NULL, *old;

	if (copy_from_user(&e, ue, sizeof(e)))
		return -EFAULT;
	if (e.flags || e.reserved || e.fd < -1)
		return -EINVAL;

	if (e.fd >= 0) {
		/* -EBADF for no such fd, -EINVAL if it is not an eventfd. */
		ctx = eventfd_ctx_fdget(e.fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}

	spin_lock_bh(&tf->lock);
	old = tf->evctx;
	tf->evctx = ctx;
	spin_unlock_bh(&tf->lock);

	/* No callback can be signalling @old now: they do it under the lock. */
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

static long twheel_fd_ioc_info(struct twheel_fd *tf,
			       struct twheel_info __user *ui)
{
	struct twheel_info info;

	memset(&info, 0, sizeof(info));
	info.granularity_ns = ktime_to_ns(twheel_granularity());
	info.max_timers = tf->max_timers;
	spin_lock_bh(&tf->lock);
	info.timers = tf->ntimers;
	info.queued = tf->nqueued;
	spin_unlock_bh(&tf->lock);
	info.flags = tf->cap_exempt ? TWHEEL_INFO_USER_CAP_EXEMPT : 0;
	info.user_timers = atomic_long_read(&tf->user->timers);
	info.max_user_timers = READ_ONCE(max_user_timers);
	info.total_timers = atomic_long_read(&twheel_total_timers);
	info.max_total_timers = READ_ONCE(max_total_timers);

	if (copy_to_user(ui, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long twheel_fd_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct twheel_fd *tf = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case TWHEEL_IOC_SCHEDULE:
		return twheel_fd_ioc_schedule(tf, argp);
	case TWHEEL_IOC_MODIFY:
		return twheel_fd_ioc_modify(tf, argp);
	case TWHEEL_IOC_CANCEL:
		return twheel_fd_ioc_cancel(tf, argp);
	case TWHEEL_IOC_BATCH:
		return twheel_fd_ioc_batch(tf, argp);
	case TWHEEL_IOC_SET_EVENTFD:
		return twheel_fd_ioc_set_eventfd(tf, argp);
	case TWHEEL_IOC_INFO:
		return twheel_fd_ioc_info(tf, argp);
	default:
		return -ENOTTY;
	}
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
	unsigned int n = 0;

	spin_lock_bh(&tf->lock);
	while (n < max && !list_empty(&tf->ready)) {
		ft = list_first_entry(&tf->ready, struct twheel_fd_timer,
				      ready_node);
		list_del_init(&ft->ready_node);
		ft->on_list = false;
		ft->in_flight = true;
		WRITE_ONCE(tf->nqueued, tf->nqueued - 1);
		if (ft->parked)
			twheel_fd_catch_up_locked(ft);

		ev[n] = (struct twheel_event) {
			.id		= ft->id,
			.user_data	= ft->ev_user_data,
			.deadline	= ft->ev_deadline,
			.fired		= ft->ev_fired,
			.count		= ft->count,
			.flags		= ft->ev_flags,
		};
		ft->count = 0;
		fts[n++] = ft;
	}
	spin_unlock_bh(&tf->lock);
	return n;
}

/*
 * A reader is done with @ft (in_flight): queue it again if it fired again
 * meanwhile (*@woke is then set), or tell the caller to free it if it was
 * cancelled meanwhile, which makes (c) true.
 * Return: true if the caller must free @ft, now not counted any more.
 */
static bool twheel_fd_reader_done_locked(struct twheel_fd *tf,
					 struct twheel_fd_timer *ft, bool *woke)
{
	lockdep_assert_held(&tf->lock);

	ft->in_flight = false;
	if (ft->count) {
		twheel_fd_queue_tail_locked(tf, ft);
		*woke = true;
		return false;
	}
	if (!ft->live) {
		twheel_fd_unreserve_locked(tf);
		return true;
	}
	return false;
}

/*
 * The second half of reading a fired one-shot timer's event: release its id
 * and free it, unless MODIFY re-armed it or it fired again meanwhile. @ft
 * is in_flight, so it is still allocated.
 */
static bool twheel_fd_release_oneshot(struct twheel_fd *tf,
				      struct twheel_fd_timer *ft)
{
	bool armed = true, woke = false, erase = false, free_now = false;

	lockdep_assert_held(&tf->ctl_mutex);

	if (ft->live && ft->mode == TWHEEL_ONESHOT &&
	    !twheel_pending(&ft->timer)) {
		/*
		 * Not pending and nobody can arm it (we hold ctl_mutex): this
		 * only waits for a callback still running, so that the core
		 * no longer references the timer. Should an arming have been
		 * caught on its way to its callback, give it back its
		 * deadline rather than lose the expiry.
		 */
		if (twheel_cancel_sync(&ft->timer))
			WARN_ON_ONCE(twheel_arm(&ft->timer, ft->armed_deadline,
						0, TWHEEL_ONESHOT) < 0);
		else
			armed = false;
	}

	spin_lock_bh(&tf->lock);
	free_now = twheel_fd_reader_done_locked(tf, ft, &woke);
	if (!free_now && !woke && !armed) {
		/* (c) by the cancel_sync above. */
		ft->live = false;
		twheel_fd_unreserve_locked(tf);
		erase = true;
		free_now = true;
	}
	spin_unlock_bh(&tf->lock);

	if (erase)
		xa_erase(&tf->timers, ft->id);
	if (free_now)
		twheel_fd_timer_free(tf, ft);
	return woke;
}

/*
 * The second half of reading a parked periodic timer's event: arm it again
 * for the deadline it would have had (see twheel_fd_park_locked()), or
 * free it if it was cancelled meanwhile. @ft is in_flight.
 */
static bool twheel_fd_resume(struct twheel_fd *tf, struct twheel_fd_timer *ft)
{
	bool woke = false, free_now = false;

	lockdep_assert_held(&tf->ctl_mutex);

	spin_lock_bh(&tf->lock);
	if (ft->live && ft->parked) {
		ft->parked = false;
		/* Under tf->lock, as in twheel_fd_modify(). */
		WARN_ON_ONCE(twheel_arm(&ft->timer, ft->park_deadline,
					ft->period, ft->mode) < 0);
	}
	free_now = twheel_fd_reader_done_locked(tf, ft, &woke);
	spin_unlock_bh(&tf->lock);

	if (free_now)
		twheel_fd_timer_free(tf, ft);
	return woke;
}

/* Under ctl_mutex, what twheel_fd_finish() could not do under tf->lock. */
static bool twheel_fd_settle(struct twheel_fd *tf, struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&tf->ctl_mutex);

	if (ft->mode == TWHEEL_ONESHOT)
		return twheel_fd_release_oneshot(tf, ft);
	return twheel_fd_resume(tf, ft);
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
	struct twheel_fd_timer *ft, *tmp;
	LIST_HEAD(release);
	LIST_HEAD(dead);
	bool woke = false;
	unsigned int i;

	spin_lock_bh(&tf->lock);
	for (i = n; i-- > ok; ) {
		ft = fts[i];
		ft->in_flight = false;
		ft->count = twheel_fd_sat_add(ft->count, ev[i].count);
		list_add(&ft->ready_node, &tf->ready);
		ft->on_list = true;
		WRITE_ONCE(tf->nqueued, tf->nqueued + 1);
		woke = true;
	}
	for (i = 0; i < ok; i++) {
		ft = fts[i];
		if (ft->count) {
			/* It fired again while its event was being read. */
			ft->in_flight = false;
			twheel_fd_queue_tail_locked(tf, ft);
			woke = true;
		} else if (!ft->live) {
			/* An orphan: (c) by the cancel that orphaned it. */
			ft->in_flight = false;
			twheel_fd_unreserve_locked(tf);
			list_add_tail(&ft->ready_node, &dead);
		} else if (ft->mode == TWHEEL_ONESHOT || ft->parked) {
			/* Stays in_flight until settled under ctl_mutex. */
			list_add_tail(&ft->ready_node, &release);
		} else {
			ft->in_flight = false;
		}
	}
	spin_unlock_bh(&tf->lock);

	list_for_each_entry_safe(ft, tmp, &dead, ready_node)
		twheel_fd_timer_free(tf, ft);

	if (!list_empty(&release)) {
		mutex_lock(&tf->ctl_mutex);
		list_for_each_entry_safe(ft, tmp, &release, ready_node) {
			list_del_init(&ft->ready_node);
			woke |= twheel_fd_settle(tf, ft);
		}
		mutex_unlock(&tf->ctl_mutex);
	}

	if (woke)
		twheel_fd_wake(tf);
}

static ssize_t twheel_fd_read(struct file *file, char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct twheel_fd *tf = file->private_data;
	struct twheel_event ev[TWHEEL_FD_READ_CHUNK];
	struct twheel_fd_timer *fts[TWHEEL_FD_READ_CHUNK];
	size_t max = count / sizeof(ev[0]), done = 0;
	unsigned int n, ok;
	unsigned long left;
	int ret;

	if (!max)
		return -EINVAL;

	while (done < max) {
		n = twheel_fd_pop(tf, ev, fts,
				  min_t(size_t, max - done, ARRAY_SIZE(ev)));
		if (!n) {
			if (done)
				break;
			if (file->f_flags & O_NONBLOCK)
				return -EAGAIN;
			ret = wait_event_interruptible(tf->wq,
						       READ_ONCE(tf->nqueued));
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
	}
	return done * sizeof(ev[0]);
}

static __poll_t twheel_fd_poll(struct file *file, poll_table *wait)
{
	struct twheel_fd *tf = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &tf->wq, wait);

	spin_lock_bh(&tf->lock);
	if (tf->nqueued)
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock_bh(&tf->lock);
	return mask;
}

/* The accounting record of the opener's user, created on first use. */
static struct twheel_user *twheel_user_get(kuid_t uid)
{
	struct twheel_user *u, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		return NULL;
	spin_lock(&twheel_users_lock);
	hash_for_each_possible(twheel_users, u, node, __kuid_val(uid)) {
		if (uid_eq(u->uid, uid))
			goto found;
	}
	u = fresh;
	fresh = NULL;
	u->uid = uid;
	atomic_long_set(&u->timers, 0);
	hash_add(twheel_users, &u->node, __kuid_val(uid));
found:
	u->files++;
	spin_unlock(&twheel_users_lock);
	kfree(fresh);
	return u;
}

/* A file of @u is gone, with all its timers. */
static void twheel_user_put(struct twheel_user *u)
{
	bool last;

	spin_lock(&twheel_users_lock);
	last = !--u->files;
	if (last)
		hash_del(&u->node);
	spin_unlock(&twheel_users_lock);
	if (last) {
		WARN_ON_ONCE(atomic_long_read(&u->timers));
		kfree(u);
	}
}

static int twheel_fd_open(struct inode *inode, struct file *file)
{
	struct twheel_fd *tf;

	tf = kzalloc(sizeof(*tf), GFP_KERNEL_ACCOUNT);
	if (!tf)
		return -ENOMEM;
	tf->user = twheel_user_get(current_uid());
	if (!tf->user) {
		kfree(tf);
		return -ENOMEM;
	}
	/* As RLIMIT_* are: root may exceed the per-user cap. */
	tf->cap_exempt = capable(CAP_SYS_RESOURCE);

	mutex_init(&tf->ctl_mutex);
	xa_init_flags(&tf->timers, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	tf->max_timers = READ_ONCE(max_timers);
	twheel_group_init(&tf->group);
	spin_lock_init(&tf->lock);
	INIT_LIST_HEAD(&tf->ready);
	init_waitqueue_head(&tf->wq);

	file->private_data = tf;
	return stream_open(inode, file);
}

/*
 * The last reference to the file is gone: no ioctl or read() is running,
 * none will, and after the group shutdown no callback is running or will
 * run (nor can a timer be re-armed), so the locks are not needed any more.
 */
static int twheel_fd_release(struct inode *inode, struct file *file)
{
	struct twheel_fd *tf = file->private_data;
	struct twheel_fd_timer *ft, *tmp;
	unsigned long id;

	/* Bounded sections, rescheduling in between: see tw_group_stop(). */
	twheel_group_shutdown_sync(&tf->group);

	/* Orphans are only on the ready list; live timers are in the xarray. */
	list_for_each_entry_safe(ft, tmp, &tf->ready, ready_node) {
		list_del(&ft->ready_node);
		if (!ft->live)
			kmem_cache_free(twheel_fd_timer_cache, ft);
		cond_resched();
	}
	/*
	 * Erased one at a time: xa_destroy() of a full table frees every
	 * node with interrupts off, a stall that grows with the number of
	 * timers. The group is dead: its list is not kept any more.
	 */
	xa_for_each(&tf->timers, id, ft) {
		xa_erase(&tf->timers, id);
		kmem_cache_free(twheel_fd_timer_cache, ft);
		cond_resched();
	}
	xa_destroy(&tf->timers);
	atomic_long_sub(tf->ntimers, &tf->user->timers);
	atomic_long_sub(tf->ntimers, &twheel_total_timers);
	twheel_user_put(tf->user);

	if (tf->evctx)
		eventfd_ctx_put(tf->evctx);
	mutex_destroy(&tf->ctl_mutex);
	kfree(tf);
	return 0;
}

static void twheel_fd_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct twheel_fd *tf = file->private_data;
	unsigned int ntimers, nqueued;

	spin_lock_bh(&tf->lock);
	ntimers = tf->ntimers;
	nqueued = tf->nqueued;
	spin_unlock_bh(&tf->lock);

	seq_printf(m, "twheel-timers:\t%u\n", ntimers);
	seq_printf(m, "twheel-queued:\t%u\n", nqueued);
	seq_printf(m, "twheel-max-timers:\t%u\n", tf->max_timers);
	seq_printf(m, "twheel-user-timers:\t%ld\n",
		   atomic_long_read(&tf->user->timers));
	seq_printf(m, "twheel-max-user-timers:\t%lu%s\n",
		   READ_ONCE(max_user_timers),
		   tf->cap_exempt ? " (exempt)" : "");
	seq_printf(m, "twheel-total-timers:\t%ld\n",
		   atomic_long_read(&twheel_total_timers));
	seq_printf(m, "twheel-max-total-timers:\t%lu\n",
		   READ_ONCE(max_total_timers));
	seq_printf(m, "twheel-granularity-ns:\t%lld\n",
		   ktime_to_ns(twheel_granularity()));
}

static const struct file_operations twheel_fd_fops = {
	.owner		= THIS_MODULE,
	.open		= twheel_fd_open,
	.release	= twheel_fd_release,
	.read		= twheel_fd_read,
	.poll		= twheel_fd_poll,
	.unlocked_ioctl	= twheel_fd_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.show_fdinfo	= twheel_fd_show_fdinfo,
};

/*
 * World read-writable: each open file is its own context, capped by
 * max_timers, and everything it allocates is charged to the caller's
 * memory cgroup.
 */
static struct miscdevice twheel_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "twheel",
	.fops	= &twheel_fd_fops,
	.mode	= 0666,
};

/**
 * twheel_chardev_init - register /dev/twheel
 *
 * Called from the module's init once the core is ready to arm timers.
 *
 * Return: 0, or a negative errno (nothing is left registered then).
 */
int twheel_chardev_init(void)
{
	unsigned long low = totalram_pages() - totalhigh_pages();
	int ret;

	/* The defaults: see max_user_timers and max_total_timers. */
	if (!max_user_timers)
		max_user_timers = max(1UL, (low / 25) * (PAGE_SIZE / TWHEEL_TIMER_COST));
	if (!max_total_timers)
		max_total_timers = max(1UL, (low / 4) * (PAGE_SIZE / TWHEEL_TIMER_COST));

	twheel_fd_timer_cache = KMEM_CACHE(twheel_fd_timer, SLAB_ACCOUNT);
	if (!twheel_fd_timer_cache)
		return -ENOMEM;

	ret = misc_register(&twheel_miscdev);
	if (ret)
		goto err_destroy_cache;
	return 0;

err_destroy_cache:
	kmem_cache_destroy(twheel_fd_timer_cache);
	return ret;
}

/**
 * twheel_chardev_exit - unregister /dev/twheel
 *
 * Called from the module's exit. No file can be open: each pins the
 * module through twheel_fd_fops.owner, and release() frees everything.
 */
void twheel_chardev_exit(void)
{
	misc_deregister(&twheel_miscdev);
	kmem_cache_destroy(twheel_fd_timer_cache);
}
