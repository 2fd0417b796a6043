// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: checkpoint and restore of an open /dev/twheel (uapi/twheel.h:
 * TWHEEL_IOC_DUMP, TWHEEL_IOC_RESTORE, TWHEEL_IOC_RING_STATE), what
 * CRIU's plugin (tools/criu/) and `twheelctl dump` / `restore` build on.
 * In the chardev layer (fd.h lists its files) it calls fd_obj.c,
 * fd_ops.c and fd_ring.c; chardev.c calls it, through fd_cr.h.
 *
 * A dump walks the id table, one snapshot of a timer per entry under
 * tf->lock, a chunk of entries per hold of the lock, then the event queue
 * for the orphans (cancelled timers whose event is unread, which hold no
 * slot). It never stops a timer: the file's users are stopped by whoever
 * dumps (CRIU freezes them), and the timers fire meanwhile; an entry
 * taken before an expiry is restored pending, one taken after it with
 * the event, so no expiry is lost or counted twice by the restored copy.
 * A timer whose callback is running when the dump reaches it is waited
 * for (the callback needs tf->lock, so the dump lets go of it), so that
 * the entry is taken either before the expiry or after it is recorded.
 *
 * A restore fills a file that holds no timers. Ids must come back with
 * their slot and generation, and the table's free list is a singly linked
 * stack, which cannot give up a slot from its middle: so restore mode
 * (tf->restoring) puts ids where they belong and leaves the list stale,
 * refuses everything that takes from it, and relinks it once, at the end
 * (TWHEEL_RESTORE_DONE): as many steps as the table has slots, at most
 * max_timers.
 */

#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/time.h>
#include <linux/uaccess.h>

#include "twheel.h"
#include "internal.h"
#include "precise.h"
#include "fd_table.h"
#include "fd.h"
#include "fd_obj.h"
#include "fd_ops.h"
#include "fd_ring.h"
#include "fd_cr.h"
#include "uapi/twheel.h"

/* Entries taken per hold of tf->lock (and copied per round): 3,840 bytes. */
#define TWHEEL_FD_CR_CHUNK	32

/* Most events of the queue a dump steps over per hold of tf->lock. */
#define TWHEEL_FD_DUMP_STEPS	256

/* Most times a dump waits for a timer's running callback. */
#define TWHEEL_FD_DUMP_WAITS	1000

/* A dump's position once the table is done: the nth event of the queue. */
#define TWHEEL_FD_DUMP_QUEUE	BIT_ULL(63)

/* The clockid of each TW_CLK_*. */
static const u32 twheel_fd_clockids[TW_CLK_NR] = {
	[TW_CLK_MONO]		= TWHEEL_CLOCK_MONOTONIC,
	[TW_CLK_REAL]		= TWHEEL_CLOCK_REALTIME,
	[TW_CLK_BOOT]		= TWHEEL_CLOCK_BOOTTIME,
	[TW_CLK_REAL_ALARM]	= TWHEEL_CLOCK_REALTIME_ALARM,
	[TW_CLK_BOOT_ALARM]	= TWHEEL_CLOCK_BOOTTIME_ALARM,
};

/* The slack of @ft's arming as TWHEEL_TIMER_SLACK gives it, if not default. */
static void twheel_fd_dump_slack(const struct twheel_fd_timer *ft,
				 struct twheel_timer_state *st)
{
	unsigned int class = READ_ONCE(ft->timer.mode) >> TW_SLACK_SHIFT;

	if (!class)
		return;
	st->flags |= TWHEEL_TIMER_SLACK;
	st->slack = tw_class_slack(twheel_granularity(), class);
}

/* The unread event of @ft, if it has one, into @st. */
static void twheel_fd_dump_event_locked(struct twheel_fd *tf,
					struct twheel_fd_timer *ft,
					struct twheel_timer_state *st)
{
	struct twheel_fd_rec *rec = ft->rec;

	lockdep_assert_held(&tf->lock);

	if (ft->starved) {
		/* Owed, with no record: it would be queued last. */
		st->ev_count = ft->starved_count;
		st->ev_user_data = ft->user_data;
		st->ev_deadline = twheel_fd_from_host(tf, TW_CLK_MONO,
						      twheel_deadline(&ft->timer));
		st->ev_fired = st->ev_deadline;
		st->ev_seq = U64_MAX;
		st->ev_clockid = TWHEEL_CLOCK_MONOTONIC;
		return;
	}
	if (!ft->on_list)
		return;
	st->ev_count = rec->count;
	st->ev_user_data = rec->user_data;
	st->ev_deadline = twheel_fd_from_host(tf, rec->clock, rec->deadline);
	st->ev_fired = twheel_fd_from_host(tf, rec->clock, rec->fired);
	st->ev_flags = rec->flags;
	st->ev_seq = rec->seq;
	st->ev_clockid = twheel_fd_clockids[rec->clock];
}

/*
 * One live timer into @st. Return: 0; -EAGAIN if a reader holds it (start
 * again); 1 if its callback runs: let go of tf->lock and come back.
 */
static int twheel_fd_dump_timer_locked(struct twheel_fd *tf,
				       struct twheel_fd_timer *ft,
				       struct twheel_timer_state *st)
{
	int clock = TW_CLK_MONO;
	bool pending;
	ktime_t deadline;
	u64 period;

	lockdep_assert_held(&tf->ctl_mutex);
	lockdep_assert_held(&tf->lock);

	/* Under ctl_mutex no cancel waits for a callback (cancelling). */
	if (ft->in_flight)
		return -EAGAIN;
	if (twheel_running(&ft->timer))
		return 1;

	memset(st, 0, sizeof(*st));
	st->id = ft->id;
	st->user_data = ft->user_data;
	if (ft->clock) {
		struct twheel_clock_link *link = ft->rec->clk;

		clock = link->clock;
		pending = twheel_clock_link_read(link, &deadline, &period);
		if (link->flags & TWHEEL_CLOCK_CANCEL_ON_SET)
			st->flags |= TWHEEL_TIMER_CANCEL_ON_SET;
	} else if (ft->parked) {
		/* Counts as pending: it is, for its user. */
		pending = true;
		deadline = ft->rec->park_deadline;
		period = twheel_fd_period(ft);
	} else {
		pending = twheel_pending(&ft->timer);
		deadline = twheel_deadline(&ft->timer);
		period = ft->mode == TWHEEL_ONESHOT ? 0 : twheel_fd_period(ft);
	}
	st->clockid = twheel_fd_clockids[clock];
	if (pending) {
		st->state = TWHEEL_STATE_PENDING;
		st->deadline = twheel_fd_from_host(tf, clock, deadline);
		if (ft->mode != TWHEEL_ONESHOT) {
			st->period = period;
			st->flags |= TWHEEL_TIMER_PERIODIC;
			if (ft->mode == TWHEEL_FIXED_DELAY)
				st->flags |= TWHEEL_TIMER_FIXED_DELAY;
		}
	} else {
		/* A fired one-shot timer: what matters is its event. */
		st->flags &= ~TWHEEL_TIMER_CANCEL_ON_SET;
	}
	twheel_fd_dump_slack(ft, st);
	twheel_fd_dump_event_locked(tf, ft, st);
	return 0;
}

/* The free slot @slot into @st: the id its next timer gets. */
static void twheel_fd_dump_free(const struct twheel_fd *tf, u32 slot,
				struct twheel_timer_state *st)
{
	u64 w = twheel_fd_slot(&tf->table, slot)->w;

	memset(st, 0, sizeof(*st));
	st->id = (u64)TWHEEL_FD_FREE_GEN(w) << 32 | (slot + 1);
	st->clockid = TWHEEL_CLOCK_MONOTONIC;
	st->state = TWHEEL_STATE_FREE;
}

/* An orphan into @st: its id and its event. */
static void twheel_fd_dump_orphan(struct twheel_fd *tf,
				  struct twheel_fd_timer *ft,
				  struct twheel_timer_state *st)
{
	memset(st, 0, sizeof(*st));
	st->id = ft->id;
	st->user_data = ft->user_data;
	st->clockid = TWHEEL_CLOCK_MONOTONIC;
	st->state = TWHEEL_STATE_ORPHAN;
	twheel_fd_dump_event_locked(tf, ft, st);
}

/* Where the dump at @pos goes on in tf->ready, or NULL (-EAGAIN). */
static struct list_head *twheel_fd_dump_resume_locked(struct twheel_fd *tf,
						      u64 pos)
{
	if (pos == TWHEEL_FD_DUMP_QUEUE)
		return tf->ready.next;
	if (tf->dump_next && tf->dump_pos == pos &&
	    tf->dump_unqueued == tf->unqueued)
		return tf->dump_next;
	return NULL;
}

/*
 * Up to @want entries from *@pos on, under the file's locks; *@pos moves
 * on past them. Return: how many; *@err is set for a timer a reader
 * holds (-EAGAIN), a position the queue no longer has (-EAGAIN), or a
 * callback to wait for (1); *@done once everything is described.
 */
static unsigned int twheel_fd_dump_locked(struct twheel_fd *tf,
					  struct twheel_timer_state *buf,
					  unsigned int want, u64 *pos,
					  int *err, bool *done)
{
	unsigned int n = 0, steps = 0;
	struct twheel_fd_timer *ft;
	struct list_head *node;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);
	lockdep_assert_held(&tf->lock);

	while (!(*pos & TWHEEL_FD_DUMP_QUEUE) && n < want) {
		if (*pos >= tf->table.nslots) {
			*pos = TWHEEL_FD_DUMP_QUEUE;
			break;
		}
		ft = twheel_fd_slot_timer(tf, *pos);
		if (!ft) {
			twheel_fd_dump_free(tf, *pos, &buf[n]);
		} else {
			ret = twheel_fd_dump_timer_locked(tf, ft, &buf[n]);
			if (ret) {
				*err = ret;
				return n;
			}
		}
		n++;
		(*pos)++;
	}
	if (n == want)
		return n;

	node = twheel_fd_dump_resume_locked(tf, *pos);
	if (!node) {
		*err = -EAGAIN;
		return n;
	}
	while (node != &tf->ready && n < want &&
	       steps++ < TWHEEL_FD_DUMP_STEPS) {
		ft = list_entry(node, struct twheel_fd_rec, node)->ft;
		if (!ft->live)
			twheel_fd_dump_orphan(tf, ft, &buf[n++]);
		node = node->next;
		(*pos)++;
	}
	*done = node == &tf->ready;
	tf->dump_next = node;
	tf->dump_pos = *pos;
	tf->dump_unqueued = tf->unqueued;
	return n;
}

/**
 * twheel_fd_ioc_dump - TWHEEL_IOC_DUMP
 * @tf: the file
 * @ud: the caller's struct twheel_dump
 *
 * Context: process context; takes tf->ctl_mutex and tf->lock per chunk.
 * Return: entries written (fewer than asked for: the dump is complete), or
 * -EFAULT, -EINVAL, -EAGAIN, -ENOMEM.
 */
long twheel_fd_ioc_dump(struct twheel_fd *tf, struct twheel_dump __user *ud)
{
	struct twheel_timer_state __user *out;
	struct twheel_timer_state *buf;
	unsigned int n = 0, got, want, waits = 0;
	struct twheel_dump d;
	bool done = false;
	int err = 0;
	u64 pos;

	if (copy_from_user(&d, ud, sizeof(d)))
		return -EFAULT;
	if (!d.count || d.count > TWHEEL_BATCH_MAX || d.flags || d.reserved)
		return -EINVAL;
	out = u64_to_user_ptr(d.timers);
	buf = kmalloc_array(TWHEEL_FD_CR_CHUNK, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	pos = d.pos;
	while (n < d.count && !done) {
		want = min_t(unsigned int, TWHEEL_FD_CR_CHUNK, d.count - n);
		mutex_lock(&tf->ctl_mutex);
		spin_lock_bh(&tf->lock);
		got = twheel_fd_dump_locked(tf, buf, want, &pos, &err, &done);
		spin_unlock_bh(&tf->lock);
		mutex_unlock(&tf->ctl_mutex);
		if (got && copy_to_user(out + n, buf, got * sizeof(*buf))) {
			err = -EFAULT;
			break;
		}
		n += got;
		if (err == 1 && waits++ < TWHEEL_FD_DUMP_WAITS) {
			/* A callback waits for tf->lock: let it finish. */
			err = 0;
			cond_resched();
			continue;
		}
		if (err)
			break;
		cond_resched();
	}
	kfree(buf);
	if (err == 1)
		err = -EAGAIN;
	if (err)
		return err;
	if (put_user(pos, &ud->pos))
		return -EFAULT;
	return n;
}

/* Enters restore mode, if the file may: it holds no timer. */
static int twheel_fd_restore_begin(struct twheel_fd *tf)
{
	int ret = 0;

	lockdep_assert_held(&tf->ctl_mutex);

	if (tf->restoring)
		return 0;
	spin_lock_bh(&tf->lock);
	if (tf->ntimers || tf->table.used)
		ret = -EBUSY;
	else
		WRITE_ONCE(tf->restoring, true);
	spin_unlock_bh(&tf->lock);
	return ret;
}

/* Leaves restore mode: the free list is made whole again. */
static void twheel_fd_restore_end(struct twheel_fd *tf)
{
	lockdep_assert_held(&tf->ctl_mutex);

	spin_lock_bh(&tf->lock);
	twheel_fd_table_relink(&tf->table);
	WRITE_ONCE(tf->restoring, false);
	spin_unlock_bh(&tf->lock);
}

/* The fields of @st that need nothing of the file. */
static int twheel_fd_restore_check(const struct twheel_timer_state *st)
{
	if (st->pad || st->reserved[0] || st->reserved[1])
		return -EINVAL;
	switch (st->state) {
	case TWHEEL_STATE_FREE:
		if (st->deadline || st->period || st->slack || st->user_data ||
		    st->clockid != TWHEEL_CLOCK_MONOTONIC || st->flags ||
		    st->ev_flags || st->ev_count || st->ev_user_data ||
		    st->ev_deadline || st->ev_fired || st->ev_seq ||
		    st->ev_clockid)
			return -EINVAL;
		return 0;
	case 0:
	case TWHEEL_STATE_PENDING:
	case TWHEEL_STATE_ORPHAN:
		return 0;
	default:
		return -EINVAL;
	}
}

/* One entry: checked, prepared (may sleep), then made under the locks. */
static int twheel_fd_restore_one(struct twheel_fd *tf,
				 const struct twheel_timer_state *st,
				 struct twheel_fd_prealloc *pre)
{
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_restore_check(st);
	if (ret)
		return ret;
	ret = twheel_fd_restore_prepare(tf, st, pre);
	if (ret)
		return ret;
	if (st->state == TWHEEL_STATE_FREE) {
		spin_lock_bh(&tf->lock);
		ret = twheel_fd_table_set_free(&tf->table, st->id);
		spin_unlock_bh(&tf->lock);
		return ret;
	}
	return twheel_fd_restore_timer(tf, st, pre);
}

/**
 * twheel_fd_ioc_restore - TWHEEL_IOC_RESTORE
 * @tf: the file
 * @ur: the caller's struct twheel_restore
 *
 * Context: process context; holds tf->ctl_mutex, takes tf->lock per entry.
 * Return: entries restored, or the error of the first entry if none was
 * (see uapi/twheel.h), -EFAULT, -EINVAL, -EBUSY.
 */
long twheel_fd_ioc_restore(struct twheel_fd *tf,
			   const struct twheel_restore __user *ur)
{
	const struct twheel_timer_state __user *in;
	struct twheel_timer_state *buf;
	struct twheel_fd_prealloc pre;
	unsigned int n = 0, got, i;
	struct twheel_restore r;
	int err = 0;

	if (copy_from_user(&r, ur, sizeof(r)))
		return -EFAULT;
	if (r.count > TWHEEL_BATCH_MAX || r.flags & ~TWHEEL_RESTORE_DONE ||
	    r.reserved)
		return -EINVAL;
	in = u64_to_user_ptr(r.timers);
	buf = kmalloc_array(TWHEEL_FD_CR_CHUNK, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	INIT_LIST_HEAD(&pre.links);
	INIT_LIST_HEAD(&pre.recs);

	mutex_lock(&tf->ctl_mutex);
	err = twheel_fd_restore_begin(tf);
	mutex_unlock(&tf->ctl_mutex);
	while (!err && n < r.count) {
		got = min_t(unsigned int, TWHEEL_FD_CR_CHUNK, r.count - n);
		/* Never under ctl_mutex: mmap() takes it under mmap_lock. */
		if (copy_from_user(buf, in + n, got * sizeof(*buf))) {
			err = -EFAULT;
			break;
		}
		mutex_lock(&tf->ctl_mutex);
		for (i = 0; i < got && !err; i++) {
			err = twheel_fd_restore_one(tf, &buf[i], &pre);
			n += !err;
		}
		mutex_unlock(&tf->ctl_mutex);
		cond_resched();
	}
	if (!err && r.flags & TWHEEL_RESTORE_DONE) {
		mutex_lock(&tf->ctl_mutex);
		twheel_fd_restore_end(tf);
		mutex_unlock(&tf->ctl_mutex);
	}

	twheel_fd_links_free(&pre.links);
	twheel_fd_recs_free(&pre.recs);
	kfree(buf);
	return n ? n : err;
}
