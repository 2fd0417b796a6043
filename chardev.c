// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: /dev/twheel, the userspace interface (uapi/twheel.h): the file,
 * its timer objects and their operations. The events, from a timer's
 * expiry to read(), are in fd_event.c; the data both share is in fd.h.
 *
 * Every open file is a context of its own (struct twheel_fd): a table of
 * timers named by ids (fd_table.c), a FIFO of the event records of timers
 * that have expiries to report, a waitqueue for read() and poll(), optionally an eventfd
 * signalled on every expiry, and optionally the deadline array that
 * mmap() shares with the program. Nothing is shared between open files.
 *
 * A timer of this interface (struct twheel_fd_timer) embeds a struct
 * twheel_timer; its event record (struct twheel_fd_rec) is out of line,
 * taken by the expiry of a one-shot timer on CLOCK_MONOTONIC and given back
 * by read(), held for as long as they are armed by the others (fd_event.c).
 * Its states:
 *
 *   SCHEDULE -> ARMED:    id live (in tf->table), pending in the core.
 *   ARMED --expiry-->     if the program moved the timer's deadline later
 *                         in the mapped array (one-shot timers), the timer
 *                         is filed again for it and nothing else happens
 *                         (twheel_fd_extend_locked()). Otherwise the event
 *                         record is updated (count += 1 + missed) and the
 *                         timer is put on tf->ready unless it is there
 *                         already. A periodic timer stays ARMED; a one-shot
 *                         one becomes FIRED (id still live). A one-shot
 *                         timer whose expiry finds no memory for its record
 *                         becomes STARVED instead: FIRED, its event owed
 *                         until read(), MODIFY or CANCEL queues it
 *                         (twheel_fd_starve_locked()).
 *   MODIFY:               ARMED or FIRED -> ARMED; a queued event stays.
 *   read() of the event:  ARMED: count goes back to 0, nothing else.
 *                         FIRED: the id is released, the object recycled.
 *   CANCEL:               the id is released at once. Without a queued
 *                         event the object is recycled; with one it becomes
 *                         an ORPHAN, reachable only from tf->ready, recycled
 *                         when that event (TWHEEL_EVENT_CANCELLED if
 *                         periodic) is read.
 *   close():              every object is freed.
 *
 * Objects are recycled, not freed: a released object goes to the file's
 * spare list (at most TWHEEL_FD_SPARE_MAX) and SCHEDULE takes it from
 * there, so the steady state of schedule and cancel allocates nothing. An
 * object may be recycled once (a) its id is no longer live, (b) it has no
 * queued event, and (c) no callback runs for it: twheel_cancel() ended its
 * arming and twheel_running() was false afterwards (or a
 * twheel_cancel_sync() returned). The core may still link a recycled timer
 * on another CPU's wheel until that wheel's next run: arming it again is
 * fine, freeing it is not, so an object leaves for the slab only through
 * twheel_fd_timer_destroy(), which waits for the wheel to let go.
 *
 * Locking, outermost first:
 *
 *   tf->ctl_mutex  serialises the work that must drop tf->lock halfway:
 *                  batches (allocating objects and growing the table before
 *                  they take tf->lock), a cancel that waits for a running
 *                  callback (twheel_cancel_sync()), mmap(), and the part of
 *                  read() that settles fired one-shot and parked timers.
 *                  Held across twheel_cancel_sync(), which is fine: the
 *                  callback never takes it. Never held across a user copy,
 *                  so a thread stuck in a page fault cannot stall another
 *                  one on the mutex (and mmap(), which runs under mmap_lock,
 *                  may take it).
 *   tf->lock       a spinlock taken by the timer callback (softirq) and with
 *                  bottom halves disabled everywhere else. Every change of
 *                  the id table, every arming and cancel of a timer, the
 *                  event records, the ready and spare lists, the counters
 *                  and the eventfd pointer are under it. The operations
 *                  (SCHEDULE, MODIFY, CANCEL) hold it with interrupts off
 *                  (twheel_fd_lock_ops()), so that the core arms and
 *                  cancels without saving and restoring them for each; a
 *                  batch holds it for at most TWHEEL_FD_BATCH_CHUNK
 *                  operations at a time, and drops it to wait for a
 *                  callback.
 *                  The single SCHEDULE, MODIFY and CANCEL on
 *                  CLOCK_MONOTONIC take it alone, without ctl_mutex, when
 *                  they need neither (twheel_fd_lockless_ok()): they leave
 *                  alone a timer that a reader holds (in_flight) or that a
 *                  cancel waits for (cancelling), and a batch that finds
 *                  its prepared objects taken makes more.
 *   the lock of a clock (clock.c), innermost: taken under tf->lock by the
 *                  armings, cancels and expiries of timers on CLOCK_REALTIME
 *                  and CLOCK_BOOTTIME; clock.c never takes tf->lock.
 *
 * A reader takes events off tf->ready under tf->lock, marks their timers
 * in_flight, copies the events out with no lock held, and then, under
 * tf->lock again (and ctl_mutex for a fired one-shot timer, whose id it must
 * release), either puts back what it could not copy or finishes the
 * timers. While a timer is in_flight nobody else recycles it, and the
 * callback only updates its record: it does not requeue it, the reader
 * does that if the timer fired again meanwhile.
 *
 * fork(): the child shares the parent's struct file, so both processes
 * operate on the same context, and a mapping of the deadline array is
 * shared too (it is MAP_SHARED). The memory stays charged to the memory
 * cgroup of whoever allocated it.
 *
 * Accounting: the context, the timer objects (SLAB_ACCOUNT cache), the
 * table and the deadline array are charged to the caller's memory cgroup
 * and counted against the caps below (struct twheel_user), which is why
 * the device is world read-writable.
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
#include <linux/llist.h>
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
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "twheel.h"
#include "compat.h"
#include "internal.h"
#include "fd_table.h"
#include "fd.h"
#include "tw_list.h"
#include "uapi/twheel.h"

/*
 * Every struct of the ABI has the same layout for 32- and 64-bit callers
 * (sizes are multiples of 8 and every __u64 is at an 8-aligned offset), so
 * compat_ptr_ioctl() is all the compat support needed and an array of
 * struct twheel_op has the same stride everywhere.
 */
static_assert(sizeof(struct twheel_timer_spec) == 56);
static_assert(offsetof(struct twheel_timer_spec, clockid) == 32);
static_assert(offsetof(struct twheel_timer_spec, slack) == 40);
static_assert(offsetof(struct twheel_timer_spec, reserved) == 48);
static_assert(sizeof(struct twheel_cancel) == 16);
static_assert(sizeof(struct twheel_eventfd) == 16);
static_assert(offsetof(struct twheel_eventfd, reserved) == 8);
static_assert(sizeof(struct twheel_op) == 64);
static_assert(offsetof(struct twheel_op, spec) == 8);
static_assert(sizeof(struct twheel_short_op) == 32);
static_assert(offsetof(struct twheel_short_op, result) == 4);
static_assert(offsetof(struct twheel_short_op, id) == 8);
static_assert(sizeof(struct twheel_batch) == 24);
static_assert(offsetof(struct twheel_batch, reserved) == 16);
static_assert(sizeof(struct twheel_info) == 56);
static_assert(offsetof(struct twheel_info, user_timers) == 24);
static_assert(offsetof(struct twheel_info, max_total_timers) == 48);
static_assert(sizeof(struct twheel_event) == 48);
static_assert(offsetof(struct twheel_event, flags) == 40);

/* Upper bound of the max_timers parameter: 16M timers per open file. */
#define TWHEEL_FD_MAX_TIMERS_LIMIT	(16u << 20)
/* A free slot keeps the next one in 31 bits (fd_table.h). */
static_assert(TWHEEL_FD_MAX_TIMERS_LIMIT < (1u << 31));

/*
 * Operations of a batch read, run and written back at a time: 1.5 KiB on
 * the stack (a frame under the kernel's 2 KiB warning), so that a batch
 * allocates nothing. Below TWHEEL_FD_LOCK_ROUND, so each chunk takes
 * tf->lock once.
 */
#define TWHEEL_FD_BATCH_CHUNK		24
static_assert(TWHEEL_FD_BATCH_CHUNK <= TWHEEL_FD_LOCK_ROUND);

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
 * The unit of the caps: what one timer costs the kernel, rounded up (its
 * object and its slot). Every object counts one unit, whether it holds a
 * timer or waits on the spare list; a page of the slot table or of the
 * deadline array counts PAGE_SIZE / TWHEEL_TIMER_COST units.
 */
#define TWHEEL_TIMER_COST	256
#define TWHEEL_PAGE_UNITS	(PAGE_SIZE / TWHEEL_TIMER_COST)

/**
 * struct twheel_user - what one user's open files hold together
 * @node: in twheel_users, under twheel_users_lock
 * @uid: the user, from the credentials of open()
 * @files: open files charged to this user; under twheel_users_lock
 * @units: cap units of those files (see TWHEEL_TIMER_COST); atomic,
 *	changed by twheel_fd_charge() and twheel_fd_uncharge() only
 */
struct twheel_user {
	struct hlist_node	node;
	kuid_t			uid;
	unsigned int		files;
	atomic_long_t		units;
};

/* uid -> struct twheel_user of every user with an open file. */
static DEFINE_HASHTABLE(twheel_users, 6);
static DEFINE_SPINLOCK(twheel_users_lock);	/* twheel_users, ::files */

/* Cap units of all files; against max_total_timers. */
static atomic_long_t twheel_total_units = ATOMIC_LONG_INIT(0);

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

static struct kmem_cache *twheel_fd_timer_cache __read_mostly;
struct kmem_cache *twheel_fd_rec_cache __read_mostly;

/*
 * Counts @n units against the caps: the user's unless the opener had
 * CAP_SYS_RESOURCE (EDQUOT), and the global one (EAGAIN). On failure
 * nothing is counted.
 */
static int twheel_fd_charge(struct twheel_fd *tf, unsigned long n)
{
	if ((unsigned long)atomic_long_add_return(n, &tf->user->units) >
	    READ_ONCE(max_user_timers) && !tf->cap_exempt)
		goto err_user;
	if ((unsigned long)atomic_long_add_return(n, &twheel_total_units) >
	    READ_ONCE(max_total_timers))
		goto err_total;
	atomic_long_add(n, &tf->charged);
	return 0;

err_total:
	atomic_long_sub(n, &twheel_total_units);
	atomic_long_sub(n, &tf->user->units);
	return -EAGAIN;
err_user:
	atomic_long_sub(n, &tf->user->units);
	return -EDQUOT;
}

static void twheel_fd_uncharge(struct twheel_fd *tf, unsigned long n)
{
	atomic_long_sub(n, &tf->charged);
	atomic_long_sub(n, &tf->user->units);
	atomic_long_sub(n, &twheel_total_units);
}

/*
 * Frees an object for good: waits until the core lets go of it (a wheel of
 * another CPU may still link it, see the top of this file). No id, no
 * event, nobody may arm it. May sleep.
 */
static void twheel_fd_timer_destroy(struct twheel_fd *tf,
				    struct twheel_fd_timer *ft)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_of(ft);

	/* Unlinked first: then the clock's work cannot file it again. */
	if (ft->clock)
		twheel_clock_link_unlink(rec->clk);
	twheel_cancel_sync(&ft->timer);
	if (rec) {
		kfree(rec->clk);
		kmem_cache_free(twheel_fd_rec_cache, rec);
	}
	kmem_cache_free(twheel_fd_timer_cache, ft);
	twheel_fd_uncharge(tf, 1);
}

/*
 * Timers on CLOCK_REALTIME and CLOCK_BOOTTIME (clock.c), one-shot or
 * periodic (the period on their clock; clock.c files them for each
 * expiry), each have a struct twheel_clock_link of its own
 * (twheel_fd_rec::clk), taken from the links that twheel_fd_run_ops()
 * allocates before it takes tf->lock, one per SCHEDULE or MODIFY onto such
 * a clock, and freed when the object is recycled or destroyed or MODIFY
 * moves it back to CLOCK_MONOTONIC, so that a monotonic timer's object
 * stays as small as it was. The link (56 B, in 64 B of kmalloc), the
 * object (112 B), its record (80 B) and its slot (8 B) make 264 B, 8 more
 * than the TWHEEL_TIMER_COST unit the timer is counted as: the caps bound
 * such timers within 3%. Every arming of such a timer goes through the
 * link, and every cancel unlinks it before cancelling the core timer, so
 * that the clock-set work of clock.c cannot file it again.
 *
 * Drops the link of @ft, whose arming is over: (c) holds, or no callback
 * can use the link any more (it tests twheel_fd_timer::clock under
 * tf->lock, which the caller holds).
 */
void twheel_fd_clock_put(struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&ft->tf->lock);

	twheel_clock_link_unlink(ft->rec->clk);
	kfree(ft->rec->clk);
	ft->rec->clk = NULL;
	ft->clock = false;
}

static void twheel_fd_links_free(struct list_head *links)
{
	struct twheel_clock_link *link, *tmp;

	list_for_each_entry_safe(link, tmp, links, node)
		kfree(link);
}

/*
 * Up to @n links for the SCHEDULE and MODIFY ops of a batch onto another
 * clock; the op that finds none left fails with -ENOMEM. May sleep.
 */
static void twheel_fd_links_alloc(struct list_head *links, unsigned int n)
{
	struct twheel_clock_link *link;

	while (n--) {
		link = kmalloc(sizeof(*link), GFP_KERNEL_ACCOUNT);
		if (!link)
			break;
		list_add(&link->node, links);
	}
}

void twheel_fd_destroy_list(struct twheel_fd *tf, struct llist_head *doomed)
{
	struct twheel_fd_timer *ft, *tmp;

	llist_for_each_entry_safe(ft, tmp, __llist_del_all(doomed), free_node) {
		twheel_fd_timer_destroy(tf, ft);
		cond_resched();
	}
}

/*
 * Every arming stores its deadline in the mapped array, so that the slot
 * holds the timer's own deadline, never one the slot's previous timer left,
 * and the program can read it. Under tf->lock. An array created meanwhile
 * (mmap(), under ctl_mutex) starts zeroed, and 0 moves no timer.
 */
static __always_inline void
twheel_fd_publish_deadline(struct twheel_fd *tf,
			   const struct twheel_fd_timer *ft, ktime_t deadline)
{
	u64 *slot;

	lockdep_assert_held(&tf->lock);

	/* Pairs with smp_store_release() in twheel_fd_map_create(). */
	slot = twheel_fd_deadline_slot(smp_load_acquire(&tf->deadlines), ft);
	if (slot)
		WRITE_ONCE(*slot, deadline);
}

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

	lockdep_assert_held(&ft->tf->lock);
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

	lockdep_assert_held(&ft->tf->lock);
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
 * twheel_fd_check_spec() for CLOCK_REALTIME and CLOCK_BOOTTIME: one-shot
 * or periodic (fixed rate or fixed delay, the period on that clock) as on
 * CLOCK_MONOTONIC; TWHEEL_TIMER_CANCEL_ON_SET only on an absolute
 * CLOCK_REALTIME timer, periodic or not. A relative value counts from that
 * clock's now, read here.
 */
static noinline int twheel_fd_check_clock_spec(const struct twheel_timer_spec *spec,
					       struct twheel_fd_arming *arm)
{
	ktime_t now;
	int clock;

	if (spec->flags & ~TWHEEL_TIMER_FLAGS)
		return -EINVAL;
	if (spec->reserved)
		return -EINVAL;
	if (spec->clockid != TWHEEL_CLOCK_REALTIME &&
	    spec->clockid != TWHEEL_CLOCK_BOOTTIME)
		return -EINVAL;
	clock = twheel_clock_index(spec->clockid);
	if (twheel_fd_check_mode(spec, arm))
		return -EINVAL;
	if ((spec->flags & TWHEEL_TIMER_CANCEL_ON_SET) &&
	    (clock != TW_CLK_REAL || !(spec->flags & TWHEEL_TIMER_ABSTIME)))
		return -EINVAL;

	arm->period = spec->period;
	arm->clock = clock;
	arm->cflags = spec->flags & TWHEEL_TIMER_CANCEL_ON_SET ?
		      TWHEEL_CLOCK_CANCEL_ON_SET : 0;
	if (spec->flags & TWHEEL_TIMER_ABSTIME) {
		arm->deadline = (ktime_t)spec->value;
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
twheel_fd_check_spec(const struct twheel_timer_spec *spec,
		     struct twheel_fd_arming *arm, ktime_t *now)
{
	if (unlikely(spec->clockid != TWHEEL_CLOCK_MONOTONIC))
		return twheel_fd_check_clock_spec(spec, arm);
	if (spec->flags & ~TWHEEL_FD_MONO_FLAGS)
		return -EINVAL;
	if (spec->reserved)
		return -EINVAL;
	if (twheel_fd_check_mode(spec, arm))
		return -EINVAL;
	arm->period = spec->period;

	if (spec->flags & TWHEEL_TIMER_ABSTIME) {
		arm->deadline = (ktime_t)spec->value;
	} else {
		if (!*now)
			*now = ktime_get();
		if (spec->value > (u64)(KTIME_MAX - *now))
			return -ERANGE;
		arm->deadline = *now + (ktime_t)spec->value;
	}
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
		struct twheel_fd_table_growth g;
		struct twheel_fd_slot **old_dir;

		table_err = twheel_fd_charge(tf, TWHEEL_PAGE_UNITS);
		if (table_err)
			break;
		table_err = twheel_fd_table_grow_alloc(t, &g);
		if (table_err) {
			twheel_fd_uncharge(tf, TWHEEL_PAGE_UNITS);
			break;
		}
		spin_lock_bh(&tf->lock);
		old_dir = twheel_fd_table_grow_commit(t, &g);
		spin_unlock_bh(&tf->lock);
		/* Lookups of the old directory were under tf->lock. */
		kvfree(old_dir);
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
		ft->tf = tf;
		/* Spare objects have no record (twheel_fd_recycle_locked()). */
		ft->clock = false;
		ft->cancelling = false;
		ft->starved = false;
		ft->rec = NULL;
		twheel_periodic_timer_init(&ft->pt, twheel_fd_expire);
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

	lockdep_assert_held(&ft->tf->ctl_mutex);
	lockdep_assert_held(&ft->tf->lock);

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

	ret = twheel_fd_check_spec(spec, &arm, now);
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

	ft = llist_entry(tf->spare.first, struct twheel_fd_timer, free_node);
	tf->spare.first = ft->free_node.next;
	WRITE_ONCE(tf->nspare, tf->nspare - 1);
	tf->ntimers++;

	twheel_fd_table_insert(&tf->table, &ft->id);
	ft->mode = arm.mode;
	ft->user_data = spec->user_data;
	ft->live = true;
	ft->parked = false;
	ft->on_list = false;
	ft->in_flight = false;
	if (unlikely(rec))
		twheel_fd_rec_attach(ft, rec);
	twheel_fd_publish_deadline(tf, ft, arm.deadline);

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
	twheel_fd_publish_deadline(tf, ft, arm->deadline);
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
	twheel_fd_publish_deadline(tf, ft, arm->deadline);
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

	ret = twheel_fd_check_spec(spec, &arm, now);
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
static unsigned int twheel_fd_run_ops(struct twheel_fd *tf,
				      struct twheel_op *ops, unsigned int count,
				      ktime_t *now)
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
 * Copies @n 64-bit words from userspace, eight bytes at a time: for the
 * small structs of the ioctls cheaper than copy_from_user(), whose string
 * copy costs the emulator a round per byte. Return: 0 or -EFAULT.
 */
static __always_inline int twheel_fd_get_words(void *dst,
					       const void __user *src,
					       unsigned int n)
{
	const u64 __user *from = src;
	u64 *to = dst;
	unsigned int i;

	if (!user_access_begin(src, array_size(n, sizeof(u64))))
		return -EFAULT;
	for (i = 0; i < n; i++)
		unsafe_get_user(to[i], &from[i], err_fault);
	user_access_end();
	return 0;

err_fault:
	user_access_end();
	return -EFAULT;
}

#define twheel_fd_get_struct(dst, src) ({				\
	typeof(dst) __dst = (dst);					\
	static_assert(sizeof(*__dst) % sizeof(u64) == 0);		\
	twheel_fd_get_words(__dst, src, sizeof(*__dst) / sizeof(u64));	\
})

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

static long twheel_fd_ioc_schedule(struct twheel_fd *tf,
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

static long twheel_fd_ioc_modify(struct twheel_fd *tf,
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
		ret = twheel_fd_check_spec(&spec, &arm, &now);
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

static long twheel_fd_ioc_cancel(struct twheel_fd *tf,
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
 * The struct twheel_op that a struct twheel_short_op stands for
 * (uapi/twheel.h): period 0, CLOCK_MONOTONIC (a CANCEL's spec is zero but
 * for its id, as twheel_fd_cancel_locked() wants it), reserved fields
 * zero. A flag other than TWHEEL_TIMER_ABSTIME makes an op that fails with
 * EINVAL: the checks of the long form would take TWHEEL_TIMER_PERIODIC
 * with a period, which a short op has no room for.
 */
static __always_inline void twheel_fd_expand_short(struct twheel_op *op,
						   const struct twheel_short_op *s)
{
	op->op = s->flags & ~TWHEEL_TIMER_ABSTIME ? 0 : s->op;
	op->result = s->result;
	op->spec.id = s->id;
	op->spec.value = s->value;
	op->spec.period = 0;
	op->spec.user_data = s->user_data;
	op->spec.clockid = s->op == TWHEEL_OP_CANCEL ? 0 : TWHEEL_CLOCK_MONOTONIC;
	op->spec.flags = s->flags;
	op->spec.slack = 0;
	op->spec.reserved = 0;
}

/*
 * Reads @n ops of a batch from @uops into @ops: struct twheel_op as they
 * are, struct twheel_short_op (@is_short) as the ops they stand for, eight
 * bytes at a time. Return: 0 or -EFAULT.
 */
static __always_inline int twheel_fd_get_ops(struct twheel_op *ops,
					     const void __user *uops,
					     unsigned int n, bool is_short)
{
	const struct twheel_short_op __user *us = uops;
	unsigned int i;

	if (!is_short)
		return twheel_fd_get_words(ops, uops,
					   n * sizeof(*ops) / sizeof(u64));
	if (!user_access_begin(us, array_size(n, sizeof(*us))))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		const u64 __user *from = (const u64 __user *)&us[i];
		union {
			u64			w[4];
			struct twheel_short_op	op;
		} s;

		unsafe_get_user(s.w[0], &from[0], err_fault);
		unsafe_get_user(s.w[1], &from[1], err_fault);
		unsafe_get_user(s.w[2], &from[2], err_fault);
		unsafe_get_user(s.w[3], &from[3], err_fault);
		twheel_fd_expand_short(&ops[i], &s.op);
	}
	user_access_end();
	return 0;

err_fault:
	user_access_end();
	return -EFAULT;
}

/*
 * Writes back what the kernel changed in the first @n ops: each result, and
 * the id of each SCHEDULE that succeeded. The rest of an op is as the
 * caller passed it, so nothing else is copied.
 */
static int twheel_fd_put_results(void __user *uops, const struct twheel_op *ops,
				 unsigned int n, bool is_short)
{
	struct twheel_short_op __user *us = uops;
	struct twheel_op __user *ul = uops;
	unsigned int i;

	if (!user_access_begin(uops, array_size(n, is_short ? sizeof(*us) :
						   sizeof(*ul))))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		bool id = ops[i].op == TWHEEL_OP_SCHEDULE && !ops[i].result;

		if (is_short) {
			unsafe_put_user(ops[i].result, &us[i].result, err_fault);
			if (id)
				unsafe_put_user(ops[i].spec.id, &us[i].id,
						err_fault);
		} else {
			unsafe_put_user(ops[i].result, &ul[i].result, err_fault);
			if (id)
				unsafe_put_user(ops[i].spec.id, &ul[i].spec.id,
						err_fault);
		}
	}
	user_access_end();
	return 0;

err_fault:
	user_access_end();
	return -EFAULT;
}

/*
 * TWHEEL_IOC_BATCH: chunks of TWHEEL_FD_BATCH_CHUNK ops, each read, run
 * and written back in turn (uapi/twheel.h), with one clock read for the
 * whole call. Nothing is allocated: the chunk lives on the stack, in the
 * long form whichever form the caller passed.
 */
static long twheel_fd_ioc_batch(struct twheel_fd *tf,
				const struct twheel_batch __user *ub)
{
	/*
	 * Not cleared on entry (CONFIG_INIT_STACK_ALL_ZERO would clear 1.5
	 * KiB per call): each op is read whole from the caller before it is
	 * used, and only the ops read are run and written back.
	 */
	struct twheel_op ops[TWHEEL_FD_BATCH_CHUNK] __uninitialized;
	unsigned int done = 0, n, ran, i;
	bool unreadable = false, is_short;
	struct twheel_batch b;
	void __user *uops;
	ktime_t now = 0;
	size_t size;

	if (twheel_fd_get_struct(&b, ub))
		return -EFAULT;
	if ((b.flags & ~TWHEEL_BATCH_SHORT) || b.reserved || !b.count ||
	    b.count > TWHEEL_BATCH_MAX)
		return -EINVAL;
	is_short = b.flags & TWHEEL_BATCH_SHORT;
	size = is_short ? sizeof(struct twheel_short_op) : sizeof(*ops);
	uops = u64_to_user_ptr(b.ops);

	while (done < b.count) {
		n = min_t(unsigned int, b.count - done, TWHEEL_FD_BATCH_CHUNK);
		unreadable = twheel_fd_get_ops(ops, uops + done * size, n,
					       is_short);
		if (unreadable) {
			/*
			 * Only the ops before the first that cannot be read
			 * run (a racing munmap() may have moved it, or made
			 * it readable again: never past this chunk).
			 */
			for (i = 0; i < n; i++)
				if (twheel_fd_get_ops(&ops[i],
						      uops + (done + i) * size,
						      1, is_short))
					break;
			unreadable = i < n;
			n = i;
			if (!n)
				break;
		}
		ran = twheel_fd_run_ops(tf, ops, n, &now);
		/* Write back the ops that ran, the failed one included. */
		if (twheel_fd_put_results(uops + done * size, ops,
					  min(ran + 1, n), is_short))
			return -EFAULT;
		done += ran;
		if (ran < n || unreadable)
			break;
	}
	/* An op that cannot be read stops the batch; its result is not set. */
	return unreadable && !done ? -EFAULT : done;
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
	info.queued = tf->nqueued + tf->nstarved;
	spin_unlock_bh(&tf->lock);
	info.flags = TWHEEL_INFO_MAP | TWHEEL_INFO_CLOCKS |
		     TWHEEL_INFO_SHORT_OPS | TWHEEL_INFO_SLACK;
	if (tf->cap_exempt)
		info.flags |= TWHEEL_INFO_USER_CAP_EXEMPT;
	info.user_timers = atomic_long_read(&tf->user->units);
	info.max_user_timers = READ_ONCE(max_user_timers);
	info.total_timers = atomic_long_read(&twheel_total_units);
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
	atomic_long_set(&u->units, 0);
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
		WARN_ON_ONCE(atomic_long_read(&u->units));
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
	tf->max_timers = READ_ONCE(max_timers);
	twheel_fd_table_init(&tf->table, tf->max_timers);
	spin_lock_init(&tf->lock);
	INIT_LIST_HEAD(&tf->ready);
	init_llist_head(&tf->spare);
	INIT_LIST_HEAD(&tf->recs);
	init_waitqueue_head(&tf->wq);

	file->private_data = tf;
	return stream_open(inode, file);
}

/*
 * The deadline array of mmap(): one u64 per slot, for every slot the file
 * may ever have (max_timers), in pages charged to the caller's memory
 * cgroup and counted against the caps, mapped contiguously for the kernel.
 * Created by the first mmap(), freed at release.
 */
static int twheel_fd_map_create(struct twheel_fd *tf)
{
	unsigned int n = DIV_ROUND_UP((size_t)tf->max_timers * sizeof(u64),
				      PAGE_SIZE);
	struct page **pages;
	unsigned int i;
	u64 *map;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_charge(tf, (unsigned long)n * TWHEEL_PAGE_UNITS);
	if (ret)
		return ret;
	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i]) {
			ret = -ENOMEM;
			goto err_free_pages;
		}
	}
	map = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!map) {
		ret = -ENOMEM;
		goto err_free_pages;
	}
	tf->dl_pages = pages;
	tf->dl_npages = n;
	/*
	 * Pairs with smp_load_acquire() in twheel_fd_extend_locked() and
	 * twheel_fd_publish_deadline().
	 */
	smp_store_release(&tf->deadlines, map);
	return 0;

err_free_pages:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
err_uncharge:
	twheel_fd_uncharge(tf, (unsigned long)n * TWHEEL_PAGE_UNITS);
	return ret;
}

/*
 * mmap() of the deadline array: MAP_SHARED, offset 0, exactly the array's
 * size (max_timers u64s rounded up to pages); read-only mappings are
 * fine. Every mapping of the file maps the same pages.
 */
static int twheel_fd_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct twheel_fd *tf = file->private_data;
	size_t size = PAGE_ALIGN((size_t)tf->max_timers * sizeof(u64));
	unsigned long npages;
	int ret;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != size)
		return -EINVAL;
	/* A private mapping would write to copies the kernel never reads. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&tf->ctl_mutex);
	if (!tf->deadlines) {
		ret = twheel_fd_map_create(tf);
		if (ret)
			goto out_unlock;
	}
	twheel_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	npages = tf->dl_npages;
	ret = vm_insert_pages(vma, vma->vm_start, tf->dl_pages, &npages);
out_unlock:
	mutex_unlock(&tf->ctl_mutex);
	return ret;
}

/*
 * The last reference to the file is gone: no ioctl, read() or mmap() is
 * running and none will (a mapping holds a reference), so the locks are
 * not needed any more but for the callbacks, which may still be running
 * when we start: every live timer is cancelled first, then every object
 * waited for (twheel_cancel_sync()) and freed, so that a wheel of another
 * CPU unlinks thousands of timers in one run. Both passes reschedule
 * between timers: a file of a million timers stalls nobody.
 */
static int twheel_fd_release(struct inode *inode, struct file *file)
{
	struct twheel_fd *tf = file->private_data;
	struct twheel_fd_rec *rec, *tmp;
	struct twheel_fd_timer *ft;
	unsigned int slot, i;

	for (slot = 0; slot < tf->table.nslots; slot++) {
		ft = twheel_fd_slot_timer(tf, slot);
		if (ft && ft->clock)
			twheel_clock_link_unlink(ft->rec->clk);
		if (ft)
			twheel_cancel(&ft->timer);
		if (slot % TWHEEL_FD_LOCK_ROUND == 0)
			cond_resched();
	}
	/*
	 * Orphans are only on the ready list, live timers in the table and
	 * recycled ones on the spare list; a callback may still queue a live
	 * timer on the ready list until the second pass waited for it.
	 */
	for (slot = 0; slot < tf->table.nslots; slot++) {
		ft = twheel_fd_slot_timer(tf, slot);
		if (ft)
			twheel_cancel_sync(&ft->timer);
		cond_resched();
	}
	list_for_each_entry_safe(rec, tmp, &tf->ready, node) {
		list_del(&rec->node);
		if (!rec->ft->live)
			twheel_fd_timer_destroy(tf, rec->ft);
		cond_resched();
	}
	for (slot = 0; slot < tf->table.nslots; slot++) {
		ft = twheel_fd_slot_timer(tf, slot);
		if (ft)
			twheel_fd_timer_destroy(tf, ft);
		cond_resched();
	}
	twheel_fd_destroy_list(tf, &tf->spare);
	twheel_fd_recs_free(&tf->recs);
	twheel_fd_table_destroy(&tf->table);

	if (tf->deadlines) {
		vunmap(tf->deadlines);
		for (i = 0; i < tf->dl_npages; i++)
			__free_page(tf->dl_pages[i]);
		kvfree(tf->dl_pages);
	}
	/* The table's and the array's pages. */
	twheel_fd_uncharge(tf, atomic_long_read(&tf->charged));
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
	unsigned int ntimers, nqueued, nspare, nrecs, nstarved;
	u64 extended;

	spin_lock_bh(&tf->lock);
	ntimers = tf->ntimers;
	nqueued = tf->nqueued;
	nspare = tf->nspare;
	nrecs = tf->nrecs;
	nstarved = tf->nstarved;
	extended = tf->extended;
	spin_unlock_bh(&tf->lock);

	seq_printf(m, "twheel-timers:\t%u\n", ntimers);
	seq_printf(m, "twheel-queued:\t%u\n", nqueued);
	seq_printf(m, "twheel-max-timers:\t%u\n", tf->max_timers);
	seq_printf(m, "twheel-slots:\t%u\n", READ_ONCE(tf->table.nslots));
	seq_printf(m, "twheel-spare:\t%u\n", nspare);
	seq_printf(m, "twheel-spare-records:\t%u\n", nrecs);
	seq_printf(m, "twheel-starved:\t%u\n", nstarved);
	seq_printf(m, "twheel-extended:\t%llu\n", extended);
	seq_printf(m, "twheel-mapped:\t%u\n", tf->deadlines ? 1 : 0);
	seq_printf(m, "twheel-charged:\t%ld\n",
		   atomic_long_read(&tf->charged));
	seq_printf(m, "twheel-user-timers:\t%ld\n",
		   atomic_long_read(&tf->user->units));
	seq_printf(m, "twheel-max-user-timers:\t%lu%s\n",
		   READ_ONCE(max_user_timers),
		   tf->cap_exempt ? " (exempt)" : "");
	seq_printf(m, "twheel-total-timers:\t%ld\n",
		   atomic_long_read(&twheel_total_units));
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
	.mmap		= twheel_fd_mmap,
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
	/* Apart from others, so that failslab can aim at it (tests). */
	twheel_fd_rec_cache = KMEM_CACHE(twheel_fd_rec,
					 SLAB_ACCOUNT | TWHEEL_SLAB_NO_MERGE);
	if (!twheel_fd_rec_cache) {
		ret = -ENOMEM;
		goto err_destroy_timer_cache;
	}

	ret = misc_register(&twheel_miscdev);
	if (ret)
		goto err_destroy_rec_cache;
	return 0;

err_destroy_rec_cache:
	kmem_cache_destroy(twheel_fd_rec_cache);
err_destroy_timer_cache:
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
	kmem_cache_destroy(twheel_fd_rec_cache);
	kmem_cache_destroy(twheel_fd_timer_cache);
}
