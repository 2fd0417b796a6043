/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the data of an open /dev/twheel (struct twheel_fd, its timers
 * and their event records), shared by the files of the chardev layer, and
 * the helpers that need nothing but that data and fd_table.h. The design,
 * the states of a timer and the locking are described at the top of
 * chardev.c.
 *
 * The layer's files, each calling only those listed before it (each
 * file's header declares what it offers the ones after it):
 *
 *   fd_table.c  the id -> timer table
 *   fd_obj.c    timer objects and their records, the caps, recycling
 *   fd_map.c    the deadline array shared by mmap()
 *   fd_event.c  expiries, event records queued for read(), read(), poll()
 *   fd_ops.c    SCHEDULE, MODIFY and CANCEL, single and batched, and the
 *               ioctls of the single ones (their fast paths inline the ops)
 *   fd_ring.c   the submission ring, drained into fd_ops.c's operations
 *   chardev.c   the file: open, release, the ioctl dispatch, BATCH, the
 *               eventfd, INFO, fdinfo, the misc device
 *
 * This header calls none of them.
 */
#ifndef _TWHEEL_FD_H
#define _TWHEEL_FD_H

#include <linux/compiler.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "twheel.h"
#include "internal.h"
#include "fd_table.h"
#include "tw_list.h"
#include "uapi/twheel.h"

struct eventfd_ctx;
struct twheel_fd_ring;
struct twheel_user;

/* Events taken off the ready list per round of read(); lives on the stack. */
#define TWHEEL_FD_READ_CHUNK		8

/* Most operations of a batch run per hold of tf->lock (bottom halves off). */
#define TWHEEL_FD_LOCK_ROUND		64

/*
 * Most objects a close frees itself; a file with more has them freed by a
 * work item after close() returned (chardev.c), their units still counted
 * against the caps until then.
 */
#define TWHEEL_FD_CLOSE_INLINE		1024

/* Most released objects a file keeps for reuse: one full batch. */
#define TWHEEL_FD_SPARE_MAX		TWHEEL_BATCH_MAX

/**
 * struct twheel_fd - the context of one open /dev/twheel
 * @ctl_mutex: serialises the work that drops @lock halfway (see the top of
 *	chardev.c)
 * @table: id -> struct twheel_fd_timer for the live ids; changed under
 *	@lock, grown only under @ctl_mutex too (twheel_fd_prepare())
 * @max_timers: the cap on @ntimers and on the table's slots; set at open,
 *	constant afterwards
 * @user: the user charged for this file's units; constant
 * @share: the user's count, per CPU, of the entries its timers hold in
 *	that CPU's precise user heap (precise.c), reached from a timer of the
 *	file there (%TW_F_SHARED, struct tw_shared_timer); constant, the
 *	user's own
 * @cap_exempt: the opener had CAP_SYS_RESOURCE: the per-user cap does not
 *	apply (the per-file and global caps do); constant
 * @wake_alarm: the opener had CAP_WAKE_ALARM: timers on the alarm clocks
 *	may be armed; constant
 * @restoring: TWHEEL_IOC_RESTORE has begun and not yet ended (fd_cr.c):
 *	the table's free list is stale, so nothing may take a slot from it.
 *	Written under @ctl_mutex and @lock; read with READ_ONCE() by the
 *	ioctl dispatch and the ring's drains, which then refuse, and under
 *	either lock by everything else
 * @charged: cap units this file holds (objects, table and array pages);
 *	atomic, since objects are freed both under @ctl_mutex and by read()
 * @deadlines: the deadline array shared by mmap(), one u64 per slot, or
 *	NULL until the first mmap(); set once under @ctl_mutex with a release
 *	store, read by the callback with an acquire load. Its contents are the
 *	program's: the kernel stores the deadline of every arming there and
 *	reads it once per expiry, never trusting what it finds.
 * @dl_pages: the pages of @deadlines; @dl_npages of them; under @ctl_mutex
 * @dl_npages: see @dl_pages
 * @timens: the offset of each clock (TW_CLK_*) of the opener's time
 *	namespace from the host's, ns: what a time of the ABI is on top of
 *	the time the wheels and clock.c count (twheel_fd_to_host(),
 *	twheel_fd_from_host()). Set at open, constant afterwards (compat.h's
 *	twheel_timens_offsets() says why a copy is exact); 0 outside a time
 *	namespace and always for CLOCK_REALTIME.
 * @ring: the submission ring (fd_ring.c), or NULL until its first mmap();
 *	set once under @ctl_mutex with a release store, read with an
 *	acquire load
 * @lock: protects @ready, @nqueued, @ntimers, @spare, @nspare, @recs,
 *	@nrecs, @nstarved, @extended, @evctx and the event record of every
 *	timer (see struct twheel_fd_timer). Taken by the callback in softirq
 *	context, so with bottom halves disabled everywhere else.
 * @ready: the records of the timers with a queued event, in the order
 *	their expiries ran; linked through twheel_fd_rec::node; under @lock
 * @nqueued: length of @ready; written under @lock, read locklessly by
 *	the wait condition of read()
 * @queued_seq: records queued on @ready so far, each numbered by it
 *	(twheel_fd_rec::seq) for a dump to give their order; under @lock
 * @unqueued: records taken off @ready so far (modulo 2^32): a dump's
 *	place in @ready (@dump_next) holds while this does not change;
 *	under @lock
 * @dump_next: where on @ready the dump that is looking for orphans goes
 *	on (fd_cr.c), valid while @dump_unqueued is @unqueued and the
 *	dump's position is @dump_pos; under @lock
 * @dump_pos: see @dump_next
 * @dump_unqueued: see @dump_next
 * @ntimers: timers this file holds (live ids, plus orphans whose event is
 *	queued), against @max_timers; under @lock
 * @spare: released objects ready for reuse, through free_node; at most
 *	TWHEEL_FD_SPARE_MAX, plus those a batch's twheel_fd_prepare() makes for
 *	itself; under @lock
 * @nspare: length of @spare; written under @lock, read locklessly by
 *	twheel_fd_prepare() as an estimate
 * @recs: spare event records (struct twheel_fd_rec), through their node;
 *	at most TWHEEL_FD_RECS_MAX; under @lock
 * @nrecs: length of @recs; under @lock
 * @nstarved: live timers whose expiry found no record to be had (see
 *	twheel_fd_starve_locked()); written under @lock, read locklessly by
 *	read()
 * @reserved: SCHEDULE ops the batch holding @ctl_mutex has yet to run; the
 *	single SCHEDULEs under @lock alone leave it that many spare objects
 *	and free slots, so that what twheel_fd_prepare() made for it stays
 *	there while it drops @lock; under @lock
 * @extended: expiries that moved their timer to a later deadline found in
 *	@deadlines instead of firing; under @lock
 * @evctx: the registered eventfd, or NULL; under @lock, which the callback
 *	holds while signalling it, so that TWHEEL_IOC_SET_EVENTFD can swap it
 *	and put the old one after unlocking
 * @wq: readers and pollers; woken after every expiry
 * @close_work: frees the objects of a closed file that held more than
 *	TWHEEL_FD_CLOSE_INLINE of them (chardev.c); owns the context then
 */
struct twheel_fd {
	struct mutex		ctl_mutex;	/* ids, arming, cancelling */
	struct twheel_fd_table	table;
	unsigned int		max_timers;
	struct twheel_user	*user;
	struct tw_share		share;
	bool			cap_exempt;
	bool			wake_alarm;
	bool			restoring;
	atomic_long_t		charged;
	u64			*deadlines;
	struct page		**dl_pages;
	unsigned int		dl_npages;
	ktime_t			timens[TW_CLK_NR];
	struct twheel_fd_ring	*ring;

	spinlock_t		lock;		/* events; also taken in softirq */
	struct list_head	ready;
	unsigned int		nqueued;
	u64			queued_seq;
	unsigned int		unqueued;
	struct list_head	*dump_next;
	u64			dump_pos;
	unsigned int		dump_unqueued;
	unsigned int		ntimers;
	struct llist_head	spare;
	unsigned int		nspare;
	struct list_head	recs;
	unsigned int		nrecs;
	unsigned int		nstarved;
	unsigned int		reserved;
	u64			extended;
	struct eventfd_ctx	*evctx;

	wait_queue_head_t	wq;
	struct work_struct	close_work;
};

/**
 * struct twheel_fd_rec - the event record of a timer, kept out of line
 * @node: on tf->ready while its timer is on_list; on tf->recs while spare
 * @ft: the timer it belongs to, while it belongs to one
 * @clk: while the timer is on another clock: the clock, the deadline and
 *	period on it and the membership of the clock's list (clock.c),
 *	allocated for this timer only. Set and freed with both locks held, or
 *	by the reader that recycles the timer. NULL otherwise.
 * @park_deadline: while the timer is parked on CLOCK_MONOTONIC: when it is
 *	next due. A parked timer on another clock keeps it in @clk instead.
 *
 * The event, written by the callback, taken and reset by read():
 * @user_data: the timer's user_data when the latest expiry ran
 * @deadline: deadline of the latest expiry, ns of the timer's clock
 * @fired: when the latest expiry ran, on the same clock
 * @count: expiries since the event was last read; 0 means no event
 * @flags: TWHEEL_EVENT_*
 * @clock: the clock (TW_CLK_*) of @deadline and @fired, which read() gives
 *	as the file's time namespace sees that clock: the timer's clock when
 *	they were written, which a MODIFY onto another may have changed since
 * @seq: tf->queued_seq when the record was last queued at the tail of
 *	tf->ready: its place in the queue, for TWHEEL_IOC_DUMP
 *
 * All under tf->lock. A pending one-shot timer on CLOCK_MONOTONIC, the
 * common timer by far, has none: its expiry takes one (tf->recs, else the
 * slab without sleeping), and the reader gives it back once the event is
 * read. Periodic timers and timers on other clocks have one from the
 * arming that made them so until they are recycled: their parking, their
 * link and their expiries need it at any time. 88 bytes.
 */
struct twheel_fd_rec {
	struct list_head		node;
	struct twheel_fd_timer		*ft;
	struct twheel_clock_link	*clk;
	u64				park_deadline;
	u64				user_data;
	u64				deadline;
	u64				fired;
	u64				count;
	u64				seq;
	u8				flags;
	u8				clock;
};

/**
 * struct twheel_fd_timer - one timer of an open /dev/twheel
 * @timer: the core's timer; armed and cancelled under tf->lock (its own
 *	callback's re-filing of a one-shot timer included), and, without
 *	tf->lock, by read()'s settling of an in_flight timer under
 *	tf->ctl_mutex, which the ops under tf->lock alone leave alone
 * @pt: the same timer as a periodic one (room for the core's period copy)
 * @shared: the same timer as the core's precise stage sees it (struct
 *	tw_shared_timer, %TW_F_SHARED): shared.share is the share of the
 *	file the timer belongs to, tf->share, so that twheel_fd_of() gives
 *	that file; constant
 * @id: its id (see fd_table.h); set before it becomes live, constant until
 *	the object is recycled
 * @user_data: the latest one given by SCHEDULE or MODIFY; under tf->lock
 * @free_node: on tf->spare or a list of objects to free, while recycled
 *	(it then has no user_data)
 * @rec: its event record (struct twheel_fd_rec), or NULL; under tf->lock.
 *	Never NULL while @on_list, @in_flight, @parked or @clock, nor while
 *	the timer is periodic.
 * @starved_count: while @starved, in place of @rec: the expiries that
 *	found no record, and are owed an event
 * @mode: the mode of the latest arming. Written under tf->lock, with
 *	tf->ctl_mutex also held but by the single ioctls of
 *	twheel_fd_lockless_ok(), which never touch an in_flight timer: so
 *	tf->ctl_mutex is enough to read it for the in_flight timers that
 *	read() settles. Another exception, under tf->lock alone: a periodic timer on
 *	another clock ended by a set (TWHEEL_TIMER_CANCEL_ON_SET) becomes
 *	TWHEEL_ONESHOT, a fired one-shot timer that read() releases
 *	(twheel_fd_clock_end_locked(), with WRITE_ONCE()). The readers under
 *	tf->ctl_mutex alone, twheel_fd_settle() and
 *	twheel_fd_release_oneshot() (READ_ONCE()), do right with either
 *	value: an ended timer is not pending and its event is queued, so the
 *	reader queues it again instead of releasing it.
 * @live: @id is in tf->table and usable by the ioctls. Written under
 *	tf->lock, like @mode.
 * @parked: a periodic timer that expired while its previous event was
 *	still unread, and was therefore not re-armed (lazy re-arming, see
 *	twheel_fd_expire()); read() arms it again. Set by the callback under
 *	tf->lock; cleared with both locks held, or under tf->lock by the
 *	catch-up that finds a timer on another clock ended by a set. It
 *	counts as pending.
 * @cancelling: a cancel under tf->ctl_mutex waits for the timer's
 *	callback with tf->lock dropped: the ops that take tf->lock alone
 *	leave the timer alone (twheel_fd_lockless_ok()). Under tf->lock.
 * @clock: the latest arming is on CLOCK_REALTIME or CLOCK_BOOTTIME and
 *	rec->clk is set; written as that is. The one flag the monotonic
 *	paths test.
 * @on_list: its record is on tf->ready; under tf->lock
 * @in_flight: taken off tf->ready by a reader that has not finished with it
 *	yet; a timer is never both @on_list and @in_flight; under tf->lock
 * @starved: a one-shot timer on CLOCK_MONOTONIC whose expiry found no
 *	record: it is counted in tf->nstarved and read() gives it one
 *	(twheel_fd_unstarve()); under tf->lock
 *
 * 112 bytes on x86-64 without lockdep: with its slot, 120 bytes a pending
 * one-shot timer.
 */
struct twheel_fd_timer {
	union {		/* @timer is what the code passes; @pt gives a period */
		struct twheel_timer		timer;
		struct twheel_periodic_timer	pt;
		struct tw_shared_timer		shared;
	};
	u64			id;
	union {
		u64			user_data;
		struct llist_node	free_node;
	};
	union {
		struct twheel_fd_rec	*rec;
		u64			starved_count;
	};
	u8			mode;
	bool			live;
	bool			parked;
	bool			on_list;
	bool			in_flight;
	bool			clock;
	bool			cancelling;
	bool			starved;
};

#ifndef CONFIG_LOCKDEP
static_assert(sizeof(struct twheel_fd_timer) <= 112);
#endif

/* The file a timer belongs to: its share is that file's (@shared). */
static __always_inline struct twheel_fd *
twheel_fd_of(const struct twheel_fd_timer *ft)
{
	return container_of(ft->shared.share, struct twheel_fd, share);
}

/* The timer of a live id, or NULL (fd_table.h: the table keeps &ft->id). */
static __always_inline struct twheel_fd_timer *
twheel_fd_lookup(const struct twheel_fd *tf, u64 id)
{
	u64 *idp = twheel_fd_table_lookup(&tf->table, id);

	return idp ? container_of(idp, struct twheel_fd_timer, id) : NULL;
}

/*
 * The period of a periodic timer on CLOCK_MONOTONIC: the core's copy
 * (twheel_periodic_timer::period), which every arming of the timer writes
 * and which only fd_ops.c arms, under tf->lock; a parked timer keeps the
 * period of the arming it parked. No copy of our own: eight bytes less per
 * timer. Timers on other clocks keep theirs in their link.
 */
static __always_inline u64 twheel_fd_period(const struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&twheel_fd_of(ft)->lock);
	return READ_ONCE(ft->pt.period);
}

/* The timer holding a slot, or NULL if it is free. */
static inline struct twheel_fd_timer *
twheel_fd_slot_timer(const struct twheel_fd *tf, u32 slot)
{
	u64 *idp = twheel_fd_table_slot_obj(&tf->table, slot);

	return idp ? container_of(idp, struct twheel_fd_timer, id) : NULL;
}

static inline u64 twheel_fd_sat_add(u64 a, u64 b)
{
	u64 sum;

	if (check_add_overflow(a, b, &sum))
		return U64_MAX;
	return sum;
}

/*
 * Time namespaces. A time a program gives (an ABSTIME deadline, a slot of
 * the mapped deadline array) is on the clocks of the file's namespace;
 * the host's time is that minus the namespace's offset. One before the
 * namespace's offset (its clock's 0) is already due, and one past
 * KTIME_MAX on the host never comes: both are clamped, as
 * timens_ktime_to_host() does for timerfd. @t counts as at most KTIME_MAX
 * (the mapped array holds anything). Outside a namespace, @t itself.
 */
static __always_inline ktime_t twheel_fd_to_host(const struct twheel_fd *tf,
						 int clock, u64 t)
{
	ktime_t off = tf->timens[clock];
	ktime_t v = (ktime_t)min_t(u64, t, KTIME_MAX);

	if (likely(!off))
		return v;
	if (off > 0)
		return v > off ? v - off : 0;
	return v > KTIME_MAX + off ? KTIME_MAX : v - off;
}

/*
 * A time of the host's @clock as the file's namespace sees it, for what
 * the kernel gives back (events, the mapped array), clamped to
 * [0, KTIME_MAX] where the offset would take it out. CLOCK_REALTIME's
 * times, which may be negative, have no offset and pass unchanged.
 */
static __always_inline u64 twheel_fd_from_host(const struct twheel_fd *tf,
					       int clock, ktime_t t)
{
	ktime_t off = tf->timens[clock];

	if (likely(!off))
		return t;
	if (off > 0)
		return t > KTIME_MAX - off ? KTIME_MAX : t + off;
	return t > -off ? t + off : 0;
}

/* Its record, if it has one (a starved timer keeps a count there). */
static __always_inline struct twheel_fd_rec *
twheel_fd_rec_of(const struct twheel_fd_timer *ft)
{
	return ft->starved ? NULL : ft->rec;
}

static inline void twheel_fd_wake(struct twheel_fd *tf)
{
	/* Pairs with the barrier in prepare_to_wait() and in poll_wait(). */
	if (wq_has_sleeper(&tf->wq))
		wake_up_poll(&tf->wq, EPOLLIN | EPOLLRDNORM);
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

#endif /* _TWHEEL_FD_H */
