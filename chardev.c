// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: /dev/twheel, the userspace interface (uapi/twheel.h): the file
 * (open, release, the ioctl dispatch, TWHEEL_IOC_BATCH, the eventfd, INFO,
 * fdinfo) and the design of the whole chardev layer, below. The layer's
 * other files, each calling only those before it, and this file calling
 * them all: fd_table.c (the ids), fd_obj.c (timer objects, their records,
 * the caps, recycling), fd_map.c (the mapped deadline array), fd_event.c
 * (expiries, events, read()), fd_ops.c (the operations), fd_ring.c (the
 * submission ring); the data they share is in fd.h.
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
 *   close():              every object is freed: by close() itself, or,
 *                         in a file of more than TWHEEL_FD_CLOSE_INLINE
 *                         objects, by a work item once close() has
 *                         cancelled and waited for every live timer
 *                         (twheel_fd_release()).
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
 *   ring->mutex    serialises the drains of the submission ring
 *                  (fd_ring.c), which run the ring's ops through
 *                  twheel_fd_run_ops() and so take the locks below.
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
 * and counted against the caps of fd_obj.c (struct twheel_user), which is why
 * the device is world read-writable.
 */

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/compiler.h>
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/llist.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "twheel.h"
#include "compat.h"
#include "internal.h"
#include "fd_table.h"
#include "fd.h"
#include "fd_obj.h"
#include "fd_map.h"
#include "fd_event.h"
#include "fd_ops.h"
#include "fd_ring.h"
#include "fd_cr.h"
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
static_assert(sizeof(struct twheel_timer_state) == 120);
static_assert(offsetof(struct twheel_timer_state, ev_seq) == 88);
static_assert(sizeof(struct twheel_dump) == 32);
static_assert(sizeof(struct twheel_restore) == 24);
static_assert(sizeof(struct twheel_ring_state) == 56);
static_assert(offsetof(struct twheel_event, flags) == 40);

/*
 * Operations of a batch read, run and written back at a time: 1.5 KiB on
 * the stack (a frame under the kernel's 2 KiB warning), so that a batch
 * allocates nothing. Below TWHEEL_FD_LOCK_ROUND, so each chunk takes
 * tf->lock once.
 */
#define TWHEEL_FD_BATCH_CHUNK		24
static_assert(TWHEEL_FD_BATCH_CHUNK <= TWHEEL_FD_LOCK_ROUND);

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
	if (e.flags & ~TWHEEL_EVENTFD_QUERY || e.reserved || e.fd < -1)
		return -EINVAL;

	if (e.fd >= 0) {
		/* -EBADF for no such fd, -EINVAL if it is not an eventfd. */
		ctx = eventfd_ctx_fdget(e.fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}
	if (e.flags & TWHEEL_EVENTFD_QUERY) {
		spin_lock_bh(&tf->lock);
		old = tf->evctx;
		spin_unlock_bh(&tf->lock);
		/* Only compared: @old may be put once we let go of the lock. */
		if (ctx)
			eventfd_ctx_put(ctx);
		return e.fd >= 0 ? old == ctx : !!old;
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
		     TWHEEL_INFO_SHORT_OPS | TWHEEL_INFO_SLACK | TWHEEL_INFO_RING |
		     TWHEEL_INFO_ALARM | TWHEEL_INFO_RESTORE;
	if (tf->cap_exempt)
		info.flags |= TWHEEL_INFO_USER_CAP_EXEMPT;
	if (tf->wake_alarm)
		info.flags |= TWHEEL_INFO_WAKE_ALARM;
	twheel_fd_caps_info(tf, &info);

	if (copy_to_user(ui, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long twheel_fd_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct twheel_fd *tf = file->private_data;
	void __user *argp = (void __user *)arg;

	/*
	 * Ring ops published before the call take effect before it.
	 * TWHEEL_IOC_RING_ENTER drains by itself, and returns what starting
	 * the poller gave.
	 */
	if (unlikely(twheel_fd_ring_busy(tf)) && cmd != TWHEEL_IOC_RING_ENTER)
		twheel_fd_ring_enter(tf);
	/* Restore mode (fd_cr.c): nothing that changes the id table. */
	if (unlikely(READ_ONCE(tf->restoring)) &&
	    (cmd == TWHEEL_IOC_SCHEDULE || cmd == TWHEEL_IOC_MODIFY ||
	     cmd == TWHEEL_IOC_CANCEL || cmd == TWHEEL_IOC_BATCH ||
	     cmd == TWHEEL_IOC_RING_ENTER))
		return -EBUSY;
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
	case TWHEEL_IOC_RING_ENTER:
		return twheel_fd_ring_enter(tf);
	case TWHEEL_IOC_DUMP:
		return twheel_fd_ioc_dump(tf, argp);
	case TWHEEL_IOC_RESTORE:
		return twheel_fd_ioc_restore(tf, argp);
	case TWHEEL_IOC_RING_STATE:
		return twheel_fd_ioc_ring_state(tf, argp);
	default:
		return -ENOTTY;
	}
}

static int twheel_fd_open(struct inode *inode, struct file *file)
{
	struct twheel_fd *tf;

	tf = kzalloc(sizeof(*tf), GFP_KERNEL_ACCOUNT);
	if (!tf)
		return -ENOMEM;
	tf->user = twheel_user_get();
	if (!tf->user) {
		kfree(tf);
		return -ENOMEM;
	}
	tf->share.held = twheel_user_precise_held(tf->user);
	/* As RLIMIT_* are: root may exceed the per-user cap. */
	tf->cap_exempt = capable(CAP_SYS_RESOURCE);
	/* As timerfd_create() asks for alarm clocks, once (see uapi/twheel.h). */
	tf->wake_alarm = ns_capable_noaudit(&init_user_ns, CAP_WAKE_ALARM);
	/* Every absolute time of the file is on the opener's namespace's clocks. */
	twheel_timens_offsets(&tf->timens[TW_CLK_MONO], &tf->timens[TW_CLK_BOOT]);
	tf->timens[TW_CLK_BOOT_ALARM] = tf->timens[TW_CLK_BOOT];

	mutex_init(&tf->ctl_mutex);
	tf->max_timers = twheel_fd_max_timers();
	twheel_fd_table_init(&tf->table, tf->max_timers);
	spin_lock_init(&tf->lock);
	INIT_LIST_HEAD(&tf->ready);
	init_llist_head(&tf->spare);
	INIT_LIST_HEAD(&tf->recs);
	init_waitqueue_head(&tf->wq);

	file->private_data = tf;
	return stream_open(inode, file);
}

/* read() and poll() drain the ring first (fd_ring.c), then fd_event.c's. */
static ssize_t twheel_fd_file_read(struct file *file, char __user *buf,
				   size_t count, loff_t *ppos)
{
	if (unlikely(twheel_fd_ring_busy(file->private_data)))
		twheel_fd_ring_enter(file->private_data);
	return twheel_fd_read(file, buf, count, ppos);
}

static __poll_t twheel_fd_file_poll(struct file *file, poll_table *wait)
{
	if (unlikely(twheel_fd_ring_busy(file->private_data)))
		twheel_fd_ring_enter(file->private_data);
	return twheel_fd_poll(file, wait);
}

/* The deadline array at offset 0 (fd_map.c), the ring (fd_ring.c). */
static int twheel_fd_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff == TWHEEL_RING_OFFSET >> PAGE_SHIFT)
		return twheel_fd_ring_mmap(file, vma);
	return twheel_fd_mmap(file, vma);
}

/*
 * What a close leaves to a work item (twheel_fd_release()): freeing the
 * objects, records, table and array of a closed file, whose timers are
 * all cancelled and waited for but for orphans and spare objects, and
 * then the context. Every object gives its unit back as it is freed, so
 * the caps count the file's memory until it is gone. May sleep; the
 * passes reschedule between objects.
 */
static void twheel_fd_teardown(struct twheel_fd *tf)
{
	struct twheel_fd_timer *ft, *next;
	struct twheel_fd_rec *rec, *tmp;
	struct llist_node *node;
	unsigned int slot;

	/*
	 * Orphans and spare objects were cancelled with no wait: a callback
	 * may still run, a wheel may still link them. One lockdep
	 * annotation for them all (one class, no lock held), then a wait
	 * for each.
	 */
	rec = list_first_entry_or_null(&tf->ready, struct twheel_fd_rec, node);
	ft = llist_entry(tf->spare.first, struct twheel_fd_timer, free_node);
	if (rec)
		twheel_sync_annotate(&rec->ft->timer);
	else if (tf->spare.first)
		twheel_sync_annotate(&ft->timer);
	list_for_each_entry_safe(rec, tmp, &tf->ready, node) {
		list_del(&rec->node);
		ft = rec->ft;
		if (!ft->live) {
			twheel_fd_timer_quiesce(ft, true);
			twheel_fd_timer_free(tf, ft);
		}
		cond_resched();
	}
	/*
	 * Live timers: twheel_fd_release() waited for each already. Those on
	 * another clock are unlinked and waited for again, as any object
	 * freed for good is (twheel_fd_timer_destroy()): cheap, and rare.
	 */
	for (slot = 0; slot < tf->table.nslots; slot++) {
		ft = twheel_fd_slot_timer(tf, slot);
		if (ft && ft->clock)
			twheel_fd_timer_quiesce(ft, true);
		if (ft)
			twheel_fd_timer_free(tf, ft);
		cond_resched();
	}
	node = __llist_del_all(&tf->spare);
	llist_for_each_entry_safe(ft, next, node, free_node) {
		twheel_fd_timer_quiesce(ft, true);
		twheel_fd_timer_free(tf, ft);
		cond_resched();
	}
	twheel_fd_recs_free(&tf->recs);
	twheel_fd_table_destroy(&tf->table);

	twheel_fd_map_destroy(tf);
	/* The table's and the array's pages. */
	twheel_fd_uncharge(tf, atomic_long_read(&tf->charged));
	twheel_user_put(tf->user);

	if (tf->evctx)
		eventfd_ctx_put(tf->evctx);
	mutex_destroy(&tf->ctl_mutex);
	kfree(tf);
}

/*
 * Closes of files with more than TWHEEL_FD_CLOSE_INLINE objects leave
 * their freeing to twheel_fd_close_wq; twheel_fd_closing counts those
 * queued and not finished, which the module's exit waits for.
 */
static struct workqueue_struct *twheel_fd_close_wq;
static atomic_t twheel_fd_closing = ATOMIC_INIT(0);

static void twheel_fd_close_fn(struct work_struct *work)
{
	twheel_fd_teardown(container_of(work, struct twheel_fd, close_work));
	atomic_dec(&twheel_fd_closing);
}

/*
 * The last reference to the file is gone: no ioctl, read() or mmap() is
 * running and none will (a mapping holds a reference), so the locks are
 * not needed any more but for the callbacks, which may still be running
 * when we start: every live timer is cancelled first, then each waited
 * for (twheel_cancel_sync()), so that a wheel of another CPU unlinks
 * thousands of timers in one run. Then twheel_fd_teardown() frees it all,
 * here or, for a file of more than TWHEEL_FD_CLOSE_INLINE objects, in a
 * work item. Every pass reschedules between timers: a file of a million
 * timers stalls nobody.
 */
static int twheel_fd_release(struct inode *inode, struct file *file)
{
	struct twheel_fd *tf = file->private_data;
	struct twheel_fd_timer *ft;
	bool annotated = false;
	unsigned int slot;

	/* Its poller drains no more: then the timers go as any others. */
	twheel_fd_ring_destroy(tf);
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
	 * timer on the ready list until this pass waited for it. Every
	 * timer of the file is of one lockdep class and no lock is held:
	 * lockdep is told of the wait once, not once per timer.
	 */
	for (slot = 0; slot < tf->table.nslots; slot++) {
		ft = twheel_fd_slot_timer(tf, slot);
		if (ft) {
			if (!annotated)
				twheel_sync_annotate(&ft->timer);
			annotated = true;
			twheel_cancel_sync_quiet(&ft->timer);
		}
		cond_resched();
	}
	/*
	 * No callback of a live timer runs any more, none is pending and no
	 * wheel holds one: nobody but us references them. What remains is
	 * freeing, which the debug kernel's checkers make cost about 0.2 ms
	 * an object (a KASAN free stack, kmemleak's bookkeeping): a file of
	 * many objects has it done by a work item, so that close() returns
	 * within a bounded time whatever the file held.
	 */
	if (tf->ntimers + tf->nspare <= TWHEEL_FD_CLOSE_INLINE) {
		twheel_fd_teardown(tf);
		return 0;
	}
	atomic_inc(&twheel_fd_closing);
	INIT_WORK(&tf->close_work, twheel_fd_close_fn);
	queue_work(twheel_fd_close_wq, &tf->close_work);
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
	seq_printf(m, "twheel-timens-offsets-ns:\t%lld %lld\n",
		   ktime_to_ns(tf->timens[TW_CLK_MONO]),
		   ktime_to_ns(tf->timens[TW_CLK_BOOT]));
	twheel_fd_caps_show(m, tf);
	twheel_fd_ring_show(m, tf);
	seq_printf(m, "twheel-granularity-ns:\t%lld\n",
		   ktime_to_ns(twheel_granularity()));
}

static const struct file_operations twheel_fd_fops = {
	.owner		= THIS_MODULE,
	.open		= twheel_fd_open,
	.release	= twheel_fd_release,
	.read		= twheel_fd_file_read,
	.poll		= twheel_fd_file_poll,
	.mmap		= twheel_fd_file_mmap,
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
	int ret;

	ret = twheel_fd_obj_init();
	if (ret)
		return ret;
	twheel_fd_close_wq = alloc_workqueue("twheel_close", WQ_UNBOUND, 0);
	if (!twheel_fd_close_wq) {
		ret = -ENOMEM;
		goto err_obj_exit;
	}
	ret = misc_register(&twheel_miscdev);
	if (ret)
		goto err_destroy_wq;
	return 0;

err_destroy_wq:
	destroy_workqueue(twheel_fd_close_wq);
err_obj_exit:
	twheel_fd_obj_exit();
	return ret;
}

/**
 * twheel_chardev_exit - unregister /dev/twheel
 *
 * Called from the module's exit. No file can be open: each pins the
 * module through twheel_fd_fops.owner. release() frees everything, or
 * leaves it to twheel_fd_close_wq: waits for those, in short sleeps (the
 * freeing of a file of a million objects takes minutes on a debug
 * kernel, longer than the hung-task detector allows one wait).
 */
void twheel_chardev_exit(void)
{
	misc_deregister(&twheel_miscdev);
	while (atomic_read(&twheel_fd_closing))
		msleep(20);
	/* Waits for the last work items to return, and orders their frees. */
	destroy_workqueue(twheel_fd_close_wq);
	twheel_fd_obj_exit();
}
