// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the submission ring of /dev/twheel (uapi/twheel.h says what the
 * program sees): a second mapping, at TWHEEL_RING_OFFSET, whose ops the
 * kernel drains into the operations of fd_ops.c. The top of the chardev
 * layer but for chardev.c (fd.h lists the files): it calls fd_obj.c (the
 * charge of its pages) and fd_ops.c (twheel_fd_run_ops()); chardev.c calls
 * it, through fd_ring.h, at mmap() and before every system call's work.
 *
 * The ring is the program's memory: the kernel reads sq_tail, cq_head and
 * each op once (READ_ONCE()), checks what it read, and keeps its own
 * copies of what it owns (the heads and tails it writes), which it never
 * reads back. So a program that writes anything, from any number of
 * threads or processes (fork() shares the file and the mapping), at any
 * time, affects its own timers only: each op it manages to publish is
 * one the ioctls would have taken, or one that fails with EINVAL.
 *
 * A drain runs under ring->mutex, outside every other lock of the file
 * (twheel_fd_run_ops() takes ctl_mutex and tf->lock inside it), in process
 * context: on a system call, or in the poller, the ring's own kernel
 * thread, woken once per granule while the ring keeps bringing ops. One
 * drain takes
 * at most TWHEEL_RING_ENTRIES ops, reads them into its own copy, folds
 * the ops on each slot into the last (a table of TWHEEL_RING_FOLD buckets,
 * at most TWHEEL_RING_PROBES probes per op whatever slots the program
 * picks), and runs what is left in runs of up to TWHEEL_RING_COALESCE,
 * each one twheel_fd_run_ops() (ctl_mutex once, tf->lock once per
 * TWHEEL_FD_LOCK_ROUND ops, the objects charged to the caps as for
 * TWHEEL_IOC_BATCH): a constant, whatever userspace writes. The kernel's
 * state of the ring (struct twheel_fd_ring, about 30 KiB) is charged to
 * the caps with the pages.
 *
 * The poller is paid for by the ops it consumes, never by what the shared
 * pages say: it arms itself again only from a run whose drain consumed
 * ops, or for up to TWHEEL_RING_IDLE_RUNS runs after one (or after the
 * system call that started it, which only a tail with ops to consume
 * does). A sq_tail that lies (TWHEEL_RING_BAD_TAIL), that goes back, or
 * that changes between two reads consumes nothing, so it is idleness like
 * any other. As it stops, the poller looks once more for ops published
 * before the program could see TWHEEL_RING_NEED_WAKEUP; it drains them
 * then and there, and polls on only if that drain consumed some, rather
 * than trusting sq_tail to have brought any. So a ring that brings no
 * ops costs at most TWHEEL_RING_IDLE_RUNS poller runs (and one already
 * queued as it stops) per system call into the file, and none while the
 * program makes none, whatever it writes; fdinfo counts the runs.
 *
 * The pages stay until release, whatever munmap() does: the kernel works
 * on its own mapping of them (vmap()).
 *
 * Who runs what, and who pays (issue 42). A system call's drain runs in
 * the caller, and is the caller's: its CPU time, cgroups, nice level and
 * affinity, its memory cgroup, as an ioctl's work is. The poller's drains
 * run in the ring's poller thread, a kernel thread of the ring's own
 * ("twheel-ring/<pid>"), made by the first system call into the file that
 * finds ops to consume (twheel_fd_ring_start_worker()), not by mmap(),
 * which holds mmap_lock, under which the cgroups' locks may not be taken
 * (cpuset's attach takes mmap_lock inside them). Before the thread first
 * runs it is attached to every cgroup of that caller, as vhost attaches
 * its workers to the owner's (cgroup_attach_task_all()), and takes the
 * caller's nice level and CPU affinity (it sets both itself as it starts,
 * after what kthread() picks for it). So its CPU time counts against that
 * cgroup's CPU controller (cpu.max, cpu.weight), its cpuset and its nice
 * level, as the caller's own would: a user whose cgroup has 10% of a CPU
 * gets no more through its rings, however many it makes. What it
 * allocates (timer objects, records) is charged to the caps as any op's,
 * and to the memory cgroup of the process that created the ring
 * (set_active_memcg() around its drains). These are taken once: a later
 * move of that process to other cgroups, or a change of its nice level
 * or affinity, leaves the thread where it was (vhost's rule too); and the
 * thread keeps its cgroups populated until the file is released.
 *
 * The thread sleeps until @tick, a plain twheel_timer armed for the next
 * granule as the work item was, wakes it: the tick's callback (softirq,
 * the wheel's run) only marks the run due and wakes the thread, and the
 * poller arms the next tick from its run, so a thread that its cgroup
 * throttles is woken at most once per run it gets; that wake-up and the
 * tick's expiry are the only work done for the ring outside its thread
 * and the system calls, and charged to no one. A ring that stops polling
 * (TWHEEL_RING_NEED_WAKEUP) leaves its thread asleep, at no cost, until
 * a system call starts it again; the thread is stopped and freed at
 * release. Each ring has one, counted against the user's max_user_rings
 * (fd_obj.c: each uid of a user namespace counts against its owner's too)
 * from the mmap() that creates the ring, and its task_struct and stack
 * against the caps with the ring's pages (TWHEEL_RING_THREAD_BYTES), so
 * that no user makes threads without bound.
 */

#include <linux/bits.h>
#include <linux/cgroup.h>
#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "twheel.h"
#include "compat.h"
#include "fd.h"
#include "fd_obj.h"
#include "fd_ops.h"
#include "fd_ring.h"
#include "uapi/twheel.h"

static_assert(sizeof(struct twheel_ring_hdr) == TWHEEL_RING_SQ_OFF);
static_assert(sizeof(struct twheel_ring_op) == 32);
static_assert(sizeof(struct twheel_ring_cqe) == 16);
static_assert(offsetof(struct twheel_ring_hdr, sq_head) == 64);
static_assert(TWHEEL_RING_ENTRIES % TWHEEL_RING_COALESCE == 0);
/* is_power_of_2(): the indices wrap at 2^32 */
static_assert((TWHEEL_RING_ENTRIES & (TWHEEL_RING_ENTRIES - 1)) == 0);

/* Poller runs that find nothing before it stops (TWHEEL_RING_NEED_WAKEUP). */
#define TWHEEL_RING_IDLE_RUNS	2

/*
 * What the poller's thread costs, counted against the caps with the ring:
 * its kernel stack and about 16 KiB for its task_struct (more with the
 * lock checkers) and the scheduler's and cgroups' state of it.
 */
#define TWHEEL_RING_THREAD_BYTES	(THREAD_SIZE + SZ_16K)

/* Buckets of the fold table: twice the ops of a drain. */
#define TWHEEL_RING_FOLD_BITS	10
#define TWHEEL_RING_FOLD	BIT(TWHEEL_RING_FOLD_BITS)
static_assert(TWHEEL_RING_FOLD >= 2 * TWHEEL_RING_ENTRIES);
/* Buckets one slot may try: a bound whatever slots the program picks. */
#define TWHEEL_RING_PROBES	8

/* What a drain does with each op it read: twheel_fd_ring::state. */
enum {
	TWHEEL_RING_SKIP,	/* malformed, or folded into a later op */
	TWHEEL_RING_RUN,	/* the last op on its slot */
	TWHEEL_RING_ALONE,	/* no room in the fold table: runs alone */
};

/* twheel_ring_fold::last of an entry without an op yet */
#define TWHEEL_RING_NONE	0xffffu
static_assert(TWHEEL_RING_ENTRIES < TWHEEL_RING_NONE);

/**
 * struct twheel_ring_fold - the last op on a slot in one drain
 * @slot: the slot
 * @last: the index in twheel_fd_ring::in of its last op so far, or
 *	TWHEEL_RING_NONE
 * @gen: the drain (twheel_fd_ring::gen) the entry belongs to; older
 *	entries are empty buckets
 */
struct twheel_ring_fold {
	u32	slot;
	u16	last;
	u16	gen;
};

/**
 * struct twheel_fd_ring - the kernel's side of a file's ring
 * @tick: wakes @worker for its run, once per granule while @polling
 * @worker: the poller's thread, which drains once per @tick while
 *	@polling; NULL until the first system call that starts the poller,
 *	then constant until release (set once, under @start_lock)
 * @start_lock: serialises the making of @worker; outside every other lock
 *	of the file
 * @due: a @tick fired since @worker's last run began: set by @tick,
 *	taken (xchg()) by @worker
 * @cpus: the CPUs @worker may run on, its starter's; constant once set
 * @nice: @worker's nice level, its starter's; constant once set
 * @mutex: serialises the drains; outside ctl_mutex and tf->lock
 * @tf: the file; constant
 * @hdr: the shared header (the kernel's mapping of the pages); the
 *	program's fields are read once per drain, the kernel's only written
 * @sq: the shared ops, each read once per drain
 * @cq: the shared completions, only written
 * @pages: the pages, @npages of them; constant
 * @npages: see @pages
 * @ids: slot -> id of its timer, or 0; @nslots (max_timers) of them;
 *	under @mutex
 * @nslots: see @ids; constant
 * @units: cap units charged for the pages and @ids; constant
 * @memcg: the memory cgroup of the ring's creator, which the poller's
 *	allocations are charged to; a reference held until release; constant
 * @head: ops consumed; the truth behind hdr->sq_head; under @mutex
 * @done: ops consumed and run: @head once a drain has run what it read;
 *	written under @mutex, read without it by twheel_fd_ring_busy()
 * @cq_tail: completions written; behind hdr->cq_tail; under @mutex
 * @flags: behind hdr->flags; under @mutex
 * @cq_overflow: behind hdr->cq_overflow; under @mutex
 * @drained: behind hdr->drained; under @mutex
 * @drain_ns: time spent in drains that consumed ops (fdinfo); under @mutex
 * @idle: poller runs in a row that found nothing; under @mutex
 * @poll_runs: poller runs since the ring was created (fdinfo), not
 *	counting a run that finds the poller stopped and nothing to do;
 *	under @mutex
 * @polling: @tick is armed or its run of @worker due or running; under
 *	@mutex
 * @closing: release has begun: the poller arms itself no more; under
 *	@mutex
 * @seed: of the fold table's hash, random per ring; constant
 * @gen: the generation of @fold's entries in the current drain; under
 *	@mutex
 * @fold: slot -> its last op in the drain, an open hash table with at
 *	most TWHEEL_RING_PROBES probes; under @mutex
 * @in: a drain's ops as read from @sq; under @mutex
 * @state: for each of @in, what the drain does with it (TWHEEL_RING_SKIP,
 *	_RUN or _ALONE); under @mutex
 * @ops: up to TWHEEL_RING_COALESCE of @in as operations of fd_ops.c, run
 *	together; under @mutex
 * @idx: for each of @ops, its op in @in; under @mutex
 */
struct twheel_fd_ring {
	struct twheel_timer		tick;
	struct task_struct		*worker;
	struct mutex			start_lock;	/* @worker's making */
	int				due;
	cpumask_var_t			cpus;
	int				nice;
	struct mutex			mutex;		/* the drains */
	struct twheel_fd		*tf;
	struct twheel_ring_hdr		*hdr;
	struct twheel_ring_op		*sq;
	struct twheel_ring_cqe		*cq;
	struct page			**pages;
	unsigned int			npages;
	u64				*ids;
	unsigned int			nslots;
	unsigned long			units;
	struct mem_cgroup		*memcg;
	u32				head;
	u32				done;
	u32				cq_tail;
	u32				flags;
	u64				cq_overflow;
	u64				drained;
	u64				drain_ns;
	unsigned int			idle;
	u64				poll_runs;
	bool				polling;
	bool				closing;
	u32				seed;
	u16				gen;
	struct twheel_ring_fold		fold[TWHEEL_RING_FOLD];
	struct twheel_ring_op		in[TWHEEL_RING_ENTRIES];
	u8				state[TWHEEL_RING_ENTRIES];
	struct twheel_op		ops[TWHEEL_RING_COALESCE];
	u16				idx[TWHEEL_RING_COALESCE];
};

/* The kernel's header fields, published together after a drain. */
static void twheel_fd_ring_publish(struct twheel_fd_ring *r)
{
	lockdep_assert_held(&r->mutex);

	WRITE_ONCE(r->hdr->flags, r->flags);
	WRITE_ONCE(r->hdr->cq_overflow, r->cq_overflow);
	WRITE_ONCE(r->hdr->drained, r->drained);
}

/* A completion for an op that failed, if the program has room for it. */
static void twheel_fd_ring_fail(struct twheel_fd_ring *r,
				const struct twheel_ring_op *in, int err)
{
	/* Pairs with the program's release store of cq_head. */
	u32 cq_head = smp_load_acquire(&r->hdr->cq_head);
	struct twheel_ring_cqe *cqe;

	lockdep_assert_held(&r->mutex);

	/* A lying cq_head gives a count past the queue: the cqe is lost. */
	if (r->cq_tail - cq_head >= TWHEEL_RING_ENTRIES) {
		r->cq_overflow++;
		return;
	}
	cqe = &r->cq[r->cq_tail % TWHEEL_RING_ENTRIES];
	WRITE_ONCE(cqe->slot, in->slot);
	WRITE_ONCE(cqe->result, err);
	WRITE_ONCE(cqe->user_data, in->user_data);
	r->cq_tail++;
	/* Pairs with the program's acquire load of cq_tail. */
	smp_store_release(&r->hdr->cq_tail, r->cq_tail);
}

/* Reads the op at @pos once, whole: later stores to it change nothing. */
static void twheel_fd_ring_read_op(struct twheel_fd_ring *r, u32 pos,
				   struct twheel_ring_op *in)
{
	const u64 *from = (const u64 *)&r->sq[pos % TWHEEL_RING_ENTRIES];
	u64 *to = (u64 *)in;
	unsigned int i;

	for (i = 0; i < sizeof(*in) / sizeof(u64); i++)
		to[i] = READ_ONCE(from[i]);
}

/* Is @in well formed? Return: 0 or -EINVAL. */
static int twheel_fd_ring_check(const struct twheel_fd_ring *r,
				const struct twheel_ring_op *in)
{
	if (in->pad || in->reserved || in->slot >= r->nslots)
		return -EINVAL;
	switch (in->op) {
	case TWHEEL_RING_ARM:
		if (in->flags & ~TWHEEL_TIMER_ABSTIME || in->value > S64_MAX)
			return -EINVAL;
		return 0;
	case TWHEEL_RING_CANCEL:
		if (in->flags || in->value || in->user_data)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * The operation of fd_ops.c that @in, checked, stands for, given its
 * slot's id. Field by field rather than a memset() and stores: the
 * memset() becomes a string instruction, which TCG runs a round per word,
 * and a CANCEL's value, user_data and flags are 0 once checked.
 */
static void twheel_fd_ring_to_op(const struct twheel_ring_op *in, u64 id,
				 struct twheel_op *op)
{
	bool cancel = in->op == TWHEEL_RING_CANCEL;

	if (cancel)
		op->op = TWHEEL_OP_CANCEL;
	else
		op->op = id ? TWHEEL_OP_MODIFY : TWHEEL_OP_SCHEDULE;
	op->result = 0;
	op->spec.id = id;
	op->spec.value = in->value;
	op->spec.period = 0;
	op->spec.user_data = in->user_data;
	/* A CANCEL's clockid is 0 (twheel_fd_cancel_locked()). */
	op->spec.clockid = cancel ? 0 : TWHEEL_CLOCK_MONOTONIC;
	op->spec.flags = in->flags;
	op->spec.slack = 0;
	op->spec.reserved = 0;
}

/* What a successful op leaves behind: the slot's id. */
static void twheel_fd_ring_settle(struct twheel_fd_ring *r, unsigned int i)
{
	const struct twheel_op *op = &r->ops[i];
	u32 slot = r->in[r->idx[i]].slot;

	if (op->op == TWHEEL_OP_CANCEL)
		r->ids[slot] = 0;
	else if (op->op == TWHEEL_OP_SCHEDULE)
		r->ids[slot] = op->spec.id;
}

/*
 * Runs r->ops[0..@nops) through twheel_fd_run_ops(), again past each
 * failure. A MODIFY whose id is gone (its one-shot timer fired and was
 * read, or the program cancelled it by id) runs again as a SCHEDULE, once:
 * a SCHEDULE never becomes a MODIFY, so at most 2 * @nops runs.
 */
static void twheel_fd_ring_run(struct twheel_fd_ring *r, unsigned int nops,
			       ktime_t *now)
{
	const struct twheel_ring_op *in;
	unsigned int i, k, done;
	struct twheel_op *op;

	lockdep_assert_held(&r->mutex);

	for (k = 0; k < nops; k++) {
		done = twheel_fd_run_ops(r->tf, &r->ops[k], nops - k, now);
		for (i = k; i < k + done; i++)
			twheel_fd_ring_settle(r, i);
		k += done;
		if (k == nops)
			break;
		/* r->ops[k] failed. */
		op = &r->ops[k];
		in = &r->in[r->idx[k]];
		if (op->result == -ENOENT) {
			/* Its timer is gone: the slot is free. */
			r->ids[in->slot] = 0;
			if (op->op == TWHEEL_OP_CANCEL)
				continue;
			if (op->op == TWHEEL_OP_MODIFY) {
				twheel_fd_ring_to_op(in, 0, op);
				k--;	/* this op again, as a SCHEDULE */
				continue;
			}
		}
		twheel_fd_ring_fail(r, in, op->result);
	}
}

/* The bucket of @slot in r->fold, seeded per ring: 0..TWHEEL_RING_FOLD-1. */
static unsigned int twheel_fd_ring_hash(const struct twheel_fd_ring *r,
					u32 slot)
{
	return ((slot ^ r->seed) * 0x9e3779b1u) >> (32 - TWHEEL_RING_FOLD_BITS);
}

/*
 * The entry of r->fold for @slot in this drain, found or made, or NULL if
 * its TWHEEL_RING_PROBES buckets are taken by other slots: then no entry
 * for @slot is ever made in this drain (entries are not removed within
 * one), and every op on it runs.
 */
static struct twheel_ring_fold *twheel_fd_ring_fold(struct twheel_fd_ring *r,
						    u32 slot)
{
	unsigned int b = twheel_fd_ring_hash(r, slot), i;
	struct twheel_ring_fold *f;

	for (i = 0; i < TWHEEL_RING_PROBES; i++) {
		f = &r->fold[(b + i) & (TWHEEL_RING_FOLD - 1)];
		if (f->gen != r->gen) {
			f->gen = r->gen;
			f->slot = slot;
			f->last = TWHEEL_RING_NONE;
			return f;
		}
		if (f->slot == slot)
			return f;
	}
	return NULL;
}

/*
 * Drains what the program published, at most TWHEEL_RING_ENTRIES ops:
 * reads them all once (the entries are then the program's again), checks
 * each, folds the ops on each slot into the last of them, and runs the
 * rest in order, TWHEEL_RING_COALESCE per twheel_fd_run_ops().
 * Return: how many ops it consumed.
 */
static unsigned int twheel_fd_ring_drain_locked(struct twheel_fd_ring *r)
{
	struct twheel_ring_fold *f;
	unsigned int total, i, nops = 0;
	struct twheel_ring_op *in;
	ktime_t now;
	u64 t0;
	u32 tail;

	lockdep_assert_held(&r->mutex);

	/* Restore mode: nothing may take a slot (fd_cr.c); ops wait. */
	if (unlikely(READ_ONCE(r->tf->restoring)))
		return 0;
	/* Pairs with the program's release store of sq_tail. */
	tail = smp_load_acquire(&r->hdr->sq_tail);
	total = tail - r->head;
	if (total > TWHEEL_RING_ENTRIES) {
		r->flags |= TWHEEL_RING_BAD_TAIL;
		twheel_fd_ring_publish(r);
		return 0;
	}
	r->flags &= ~TWHEEL_RING_BAD_TAIL;
	if (!total) {
		twheel_fd_ring_publish(r);
		return 0;
	}
	/*
	 * The time of the drain, read once: the "now" a delay counts from
	 * for every op of it (after the acquire of sq_tail, so after each op
	 * was published: never early), and the start of drain_ns.
	 */
	t0 = ktime_get_ns();
	now = (ktime_t)t0;

	/* A new generation empties r->fold; a wrapped one clears it. */
	if (!++r->gen) {
		memset(r->fold, 0, sizeof(r->fold));
		r->gen = 1;
	}
	/* Each op read once, then checked and folded from the copy. */
	for (i = 0; i < total; i++) {
		in = &r->in[i];
		twheel_fd_ring_read_op(r, r->head + i, in);
		if (twheel_fd_ring_check(r, in)) {
			r->state[i] = TWHEEL_RING_SKIP;
			twheel_fd_ring_fail(r, in, -EINVAL);
			continue;
		}
		f = twheel_fd_ring_fold(r, in->slot);
		if (!f) {
			r->state[i] = TWHEEL_RING_ALONE;
			continue;
		}
		/* The slot's op before this one, if any, is folded into it. */
		if (f->last != TWHEEL_RING_NONE)
			r->state[f->last] = TWHEEL_RING_SKIP;
		f->last = i;
		r->state[i] = TWHEEL_RING_RUN;
	}
	WRITE_ONCE(r->head, r->head + total);
	/*
	 * The entries are read: the program may write them again.
	 * Pairs with the program's acquire load of sq_head.
	 */
	smp_store_release(&r->hdr->sq_head, r->head);

	for (i = 0; i < total; i++) {
		in = &r->in[i];
		if (r->state[i] == TWHEEL_RING_SKIP)
			continue;
		/*
		 * An op on a slot r->fold has no room for may be one of
		 * several on it: those before it run first, so that it is
		 * converted with the slot's id as they leave it.
		 */
		if (r->state[i] == TWHEEL_RING_ALONE && nops) {
			twheel_fd_ring_run(r, nops, &now);
			nops = 0;
		}
		if (in->op == TWHEEL_RING_CANCEL && !r->ids[in->slot])
			continue;
		twheel_fd_ring_to_op(in, r->ids[in->slot], &r->ops[nops]);
		r->idx[nops++] = i;
		if (nops == TWHEEL_RING_COALESCE ||
		    r->state[i] == TWHEEL_RING_ALONE) {
			twheel_fd_ring_run(r, nops, &now);
			nops = 0;
			cond_resched();
		}
	}
	if (nops)
		twheel_fd_ring_run(r, nops, &now);
	r->drained += total;
	r->drain_ns += ktime_get_ns() - t0;
	twheel_fd_ring_publish(r);
	/* Pairs with smp_load_acquire() in twheel_fd_ring_busy(). */
	smp_store_release(&r->done, r->head);
	return total;
}

/* The poller's next run, a granule from now: none without its thread. */
static void twheel_fd_ring_arm_poller(struct twheel_fd_ring *r)
{
	lockdep_assert_held(&r->mutex);

	/* READ_ONCE(): set outside @mutex. */
	if (r->closing || !READ_ONCE(r->worker))
		return;
	r->polling = twheel_schedule(&r->tick,
				     ktime_to_ns(twheel_granularity())) >= 0;
}

/*
 * Has the program published ops that a drain would consume? sq_tail read
 * once: 1 to TWHEEL_RING_ENTRIES past the head. An empty ring and a tail
 * that lies have none. A hint only: the drain reads sq_tail again, and
 * without @mutex @head may be a drain behind.
 */
static bool twheel_fd_ring_pending(const struct twheel_fd_ring *r)
{
	u32 ahead = READ_ONCE(r->hdr->sq_tail) - READ_ONCE(r->head);

	return ahead - 1 < TWHEEL_RING_ENTRIES;
}

/* The poller's drain: what it allocates is the ring creator's memory. */
static unsigned int twheel_fd_ring_poll_drain(struct twheel_fd_ring *r)
{
	struct mem_cgroup *old_memcg;
	unsigned int drained;

	old_memcg = set_active_memcg(r->memcg);
	drained = twheel_fd_ring_drain_locked(r);
	set_active_memcg(old_memcg);
	return drained;
}

/*
 * The poller: one drain per granule while the ring keeps bringing ops.
 * Its next run is armed before the drain, not after: the wheel's hrtimer
 * is then set for a granule from now while the drain arms the ring's
 * timers, so that none of those (a timeout, due later) needs the hrtimer
 * programmed again. Armed after, each arming earlier than the last one
 * programmed it anew: about ln(n) programmings of the hrtimer in a drain
 * of n SCHEDULE ops on an otherwise empty wheel, each a clock-event write
 * that costs more than the arming itself under emulation.
 *
 * Only ops consumed keep it going (the design comment at the top): a
 * drain that consumes nothing is an idle run, whatever sq_tail says.
 * Runs in the ring's thread (twheel_fd_ring_thread()), once per @tick.
 */
static void twheel_fd_ring_poll(struct twheel_fd_ring *r)
{
	bool stale;

	mutex_lock(&r->mutex);
	/*
	 * A run armed before the poller stopped, too late to be taken back
	 * (below): it polls on only if its drain consumes ops, as the last
	 * run would have, and is counted only then: a program that sees the
	 * poller stopped sees its runs stay put.
	 */
	stale = !r->polling;
	if (stale)
		goto stopped;
	r->poll_runs++;
	twheel_fd_ring_arm_poller(r);
	if (twheel_fd_ring_poll_drain(r))
		r->idle = 0;
	else
		r->idle++;
	if (r->idle < TWHEEL_RING_IDLE_RUNS)
		goto out_unlock;
	/*
	 * Idle: the run armed above is taken back. Should it have fired
	 * meanwhile (a drain longer than a granule), its run of the thread
	 * finds the poller stopped.
	 */
	twheel_cancel(&r->tick);
	r->polling = false;
	r->flags |= TWHEEL_RING_NEED_WAKEUP;
	WRITE_ONCE(r->hdr->flags, r->flags);
	/*
	 * Pairs with the program's full barrier between its store of
	 * sq_tail and its load of flags: either it sees the flag and enters,
	 * or the drain below sees its tail and consumes its ops.
	 */
	smp_mb();
stopped:
	/*
	 * Those ops are drained here, not left to a next run armed on the
	 * word of sq_tail: a tail that lies would pass that test for ever.
	 * Only a drain that consumed ops keeps the poller going.
	 */
	if (twheel_fd_ring_poll_drain(r)) {
		if (stale)
			r->poll_runs++;
		r->flags &= ~TWHEEL_RING_NEED_WAKEUP;
		WRITE_ONCE(r->hdr->flags, r->flags);
		r->idle = 0;
		twheel_fd_ring_arm_poller(r);
	}
out_unlock:
	mutex_unlock(&r->mutex);
}

/* @tick: the poller's run is due. Softirq (the wheel's run). */
static void twheel_fd_ring_tick(struct twheel_timer *timer, u64 missed)
{
	struct twheel_fd_ring *r = container_of(timer, struct twheel_fd_ring,
						tick);

	/* Before the wake-up: pairs with its barrier (wake_up_process()). */
	WRITE_ONCE(r->due, 1);
	/* Set before @tick was first armed, under @mutex. */
	wake_up_process(READ_ONCE(r->worker));
}

/*
 * The poller's thread: one twheel_fd_ring_poll() per @tick, asleep
 * otherwise, until release stops it (kthread_stop()). It runs in the
 * cgroups of the task that made it (twheel_fd_ring_start_worker()), with
 * its CPUs and nice level, set here: kthread() may pick CPUs of its own
 * before calling this (Linux 6.14 and later).
 */
static int twheel_fd_ring_thread(void *data)
{
	struct twheel_fd_ring *r = data;

	set_cpus_allowed_ptr(current, r->cpus);
	set_user_nice(current, r->nice);
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		/* After the state: a tick's wake-up is not lost. */
		if (!xchg(&r->due, 0)) {
			schedule();
			continue;
		}
		__set_current_state(TASK_RUNNING);
		twheel_fd_ring_poll(r);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * Makes the poller's thread of @r, on behalf of the current task, the
 * first that starts the poller: in its cgroups (all hierarchies), with its
 * CPUs and nice level (the design comment at the top), under @start_lock,
 * which no other lock of the file nests in or around: a racing call waits
 * and finds the thread made. cgroup_attach_task_all() takes the cgroups'
 * locks, and kthread_create() waits for kthreadd.
 * Return: 0, or the error of a step (-ENOMEM, -EINTR on a fatal signal,
 * the cgroups' refusal).
 */
static int twheel_fd_ring_start_worker(struct twheel_fd_ring *r)
{
	struct task_struct *w;
	int ret = 0;

	mutex_lock(&r->start_lock);
	if (r->worker)
		goto out_unlock;
	w = kthread_create(twheel_fd_ring_thread, r, "twheel-ring/%d",
			   task_tgid_nr(current));
	if (IS_ERR(w)) {
		ret = PTR_ERR(w);
		goto out_unlock;
	}
	ret = cgroup_attach_task_all(current, w);
	if (ret) {
		kthread_stop(w);
		goto out_unlock;
	}
	/* Read by the thread as it starts, after either wake-up below. */
	cpumask_copy(r->cpus, current->cpus_ptr);
	r->nice = task_nice(current);
	/*
	 * Published after them: a @tick is armed only once @worker is seen,
	 * and its wake-up may come first.
	 */
	smp_store_release(&r->worker, w);
	wake_up_process(w);
out_unlock:
	mutex_unlock(&r->start_lock);
	return ret;
}

/**
 * twheel_fd_ring_enter - drain @tf's ring, if it has one
 * @tf: the file
 *
 * Called before the work of every system call into the file, and by
 * TWHEEL_IOC_RING_ENTER. Starts the poller if the ring has ops to
 * consume, before the drain, as the poller arms itself
 * (twheel_fd_ring_poll()); a tail that lies starts nothing. The first
 * call that starts it makes its thread, in the caller's cgroups.
 *
 * Context: process context, no lock of the file held; may sleep.
 * Return: 0; -ENXIO if the file has no ring; -EBUSY in restore mode
 * (fd_cr.c), draining nothing; the error of making the poller's thread
 * (twheel_fd_ring_start_worker()), after the drain, with the poller not
 * started (TWHEEL_RING_NEED_WAKEUP stays set).
 */
int twheel_fd_ring_enter(struct twheel_fd *tf)
{
	/* Pairs with smp_store_release() in twheel_fd_ring_create(). */
	struct twheel_fd_ring *r = smp_load_acquire(&tf->ring);
	int ret = 0;

	if (!r)
		return -ENXIO;
	if (READ_ONCE(tf->restoring))
		return -EBUSY;
	/* Once per ring; READ_ONCE(): set outside @mutex. */
	if (unlikely(!READ_ONCE(r->worker)) && twheel_fd_ring_pending(r))
		ret = twheel_fd_ring_start_worker(r);
	mutex_lock(&r->mutex);
	if (!r->polling && twheel_fd_ring_pending(r)) {
		r->idle = 0;
		twheel_fd_ring_arm_poller(r);
		if (r->polling) {
			r->flags &= ~TWHEEL_RING_NEED_WAKEUP;
			WRITE_ONCE(r->hdr->flags, r->flags);
		}
	}
	twheel_fd_ring_drain_locked(r);
	mutex_unlock(&r->mutex);
	return ret;
}

/* Is there anything for twheel_fd_ring_enter() to do? No lock. */
bool twheel_fd_ring_busy(struct twheel_fd *tf)
{
	/* Pairs with smp_store_release() in twheel_fd_ring_create(). */
	struct twheel_fd_ring *r = smp_load_acquire(&tf->ring);

	/*
	 * Not @head: a drain that has read ops but not run them yet (the
	 * poller's, or another call's) must be waited for, or this call
	 * would overtake ops published before it. A stale @done costs a
	 * drain; @done is the kernel's own, read without its mutex for this
	 * only.
	 */
	return r && READ_ONCE(r->hdr->sq_tail) != smp_load_acquire(&r->done);
}

static void twheel_fd_ring_free(struct twheel_fd_ring *r)
{
	unsigned int i;

	if (r->hdr)
		vunmap(r->hdr);
	for (i = 0; i < r->npages; i++)
		if (r->pages[i])
			__free_page(r->pages[i]);
	kvfree(r->pages);
	kvfree(r->ids);
	free_cpumask_var(r->cpus);
	mem_cgroup_put(r->memcg);
	mutex_destroy(&r->start_lock);
	mutex_destroy(&r->mutex);
	kvfree(r);
}

/* The ring of a file, zeroed, charged; under ctl_mutex. */
static int twheel_fd_ring_create(struct twheel_fd *tf)
{
	unsigned int npages = PAGE_ALIGN(TWHEEL_RING_MAP_BYTES) >> PAGE_SHIFT;
	struct twheel_fd_ring *r;
	unsigned long units;
	unsigned int i;
	void *map;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	units = (npages + DIV_ROUND_UP(sizeof(*r), PAGE_SIZE) +
		 DIV_ROUND_UP(TWHEEL_RING_THREAD_BYTES, PAGE_SIZE) +
		 DIV_ROUND_UP((size_t)tf->max_timers * sizeof(u64),
			      PAGE_SIZE)) * TWHEEL_PAGE_UNITS;
	ret = twheel_fd_charge_ring(tf);
	if (ret)
		return ret;
	ret = twheel_fd_charge(tf, units);
	if (ret)
		goto err_uncharge_ring;
	ret = -ENOMEM;
	r = kvzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto err_uncharge;
	mutex_init(&r->mutex);
	mutex_init(&r->start_lock);
	r->seed = get_random_u32();
	r->tf = tf;
	r->units = units;
	/* NULL without memory cgroups: the poller charges the root's. */
	r->memcg = get_mem_cgroup_from_mm(current->mm);
	r->nslots = tf->max_timers;
	r->ids = kvcalloc(r->nslots, sizeof(*r->ids), GFP_KERNEL_ACCOUNT);
	r->pages = kvcalloc(npages, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
	if (!r->ids || !r->pages ||
	    !zalloc_cpumask_var(&r->cpus, GFP_KERNEL_ACCOUNT))
		goto err_free;
	r->npages = npages;
	for (i = 0; i < npages; i++) {
		r->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!r->pages[i])
			goto err_free;
	}
	map = vmap(r->pages, npages, VM_MAP, PAGE_KERNEL);
	if (!map)
		goto err_free;
	r->hdr = map;
	r->sq = map + TWHEEL_RING_SQ_OFF;
	r->cq = map + TWHEEL_RING_CQ_OFF;
	r->flags = TWHEEL_RING_NEED_WAKEUP;
	r->hdr->flags = r->flags;
	r->hdr->entries = TWHEEL_RING_ENTRIES;
	twheel_timer_init(&r->tick, twheel_fd_ring_tick, 0);
	/* Pairs with smp_load_acquire() in twheel_fd_ring_enter(). */
	smp_store_release(&tf->ring, r);
	return 0;

err_free:
	twheel_fd_ring_free(r);
err_uncharge:
	twheel_fd_uncharge(tf, units);
err_uncharge_ring:
	twheel_fd_uncharge_ring(tf);
	return ret;
}

/**
 * twheel_fd_ring_mmap - mmap() of the ring, at TWHEEL_RING_OFFSET
 * @file: the file
 * @vma: the mapping: MAP_SHARED, TWHEEL_RING_MAP_BYTES rounded up to pages
 *
 * Creates the ring on first use. Every mapping maps the same pages.
 *
 * Context: process context, under mmap_lock; takes ctl_mutex.
 * Return: 0, -EINVAL for a wrong size or a private mapping, or the error
 * of the charge (-EDQUOT, also past max_user_rings; -EAGAIN) or of an
 * allocation (-ENOMEM).
 */
int twheel_fd_ring_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct twheel_fd *tf = file->private_data;
	unsigned long npages;
	int ret;

	if (vma->vm_end - vma->vm_start != PAGE_ALIGN(TWHEEL_RING_MAP_BYTES))
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&tf->ctl_mutex);
	if (!tf->ring) {
		ret = twheel_fd_ring_create(tf);
		if (ret)
			goto out_unlock;
	}
	twheel_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	npages = tf->ring->npages;
	ret = vm_insert_pages(vma, vma->vm_start, tf->ring->pages, &npages);
out_unlock:
	mutex_unlock(&tf->ctl_mutex);
	return ret;
}

/**
 * twheel_fd_ring_destroy - stop the poller and free the ring, at release
 * @tf: the file, whose timers are still all there
 *
 * Context: process context; may sleep. Nothing else can enter the ring:
 * no system call runs, and the poller is stopped here for good.
 */
void twheel_fd_ring_destroy(struct twheel_fd *tf)
{
	struct twheel_fd_ring *r = tf->ring;

	if (!r)
		return;
	mutex_lock(&r->mutex);
	r->closing = true;
	mutex_unlock(&r->mutex);
	/* No tick wakes the thread any more; its runs arm none. */
	twheel_shutdown_sync(&r->tick);
	/* Waits for a running poll, which arms nothing; none is made now. */
	if (r->worker)
		kthread_stop(r->worker);
	twheel_fd_uncharge(tf, r->units);
	twheel_fd_uncharge_ring(tf);
	twheel_fd_ring_free(r);
	tf->ring = NULL;
}

/* For fdinfo: ops drained, whether the poller runs, and its runs. */
void twheel_fd_ring_show(struct seq_file *m, struct twheel_fd *tf)
{
	/* Pairs with smp_store_release() in twheel_fd_ring_create(). */
	struct twheel_fd_ring *r = smp_load_acquire(&tf->ring);

	if (!r)
		return;
	mutex_lock(&r->mutex);
	seq_printf(m, "twheel-ring-drained:\t%llu\n", r->drained);
	seq_printf(m, "twheel-ring-polling:\t%u\n", r->polling);
	seq_printf(m, "twheel-ring-poll-runs:\t%llu\n", r->poll_runs);
	seq_printf(m, "twheel-ring-cq-overflow:\t%llu\n", r->cq_overflow);
	seq_printf(m, "twheel-ring-drain-ns:\t%llu\n", r->drain_ns);
	mutex_unlock(&r->mutex);
}

/* Ids copied per hold of the ring's mutex by TWHEEL_IOC_RING_STATE. */
#define TWHEEL_RING_IDS_CHUNK	64

/* TWHEEL_IOC_RING_STATE's read: the ids, then the rest at once. */
static int twheel_fd_ring_state_get(struct twheel_fd_ring *r,
				    struct twheel_ring_state *rs,
				    u64 __user *ids)
{
	u64 chunk[TWHEEL_RING_IDS_CHUNK];
	unsigned int i, n;

	if (rs->nslots < r->nslots)
		return -EINVAL;
	for (i = 0; i < r->nslots; i += n) {
		n = min_t(unsigned int, TWHEEL_RING_IDS_CHUNK, r->nslots - i);
		mutex_lock(&r->mutex);
		memcpy(chunk, &r->ids[i], n * sizeof(*chunk));
		mutex_unlock(&r->mutex);
		/* Never under the mutex: a fault may need mmap_lock. */
		if (copy_to_user(&ids[i], chunk, n * sizeof(*chunk)))
			return -EFAULT;
	}
	mutex_lock(&r->mutex);
	rs->nslots = r->nslots;
	rs->sq_head = r->head;
	rs->cq_tail = r->cq_tail;
	rs->ring_flags = r->flags;
	rs->cq_overflow = r->cq_overflow;
	rs->drained = r->drained;
	mutex_unlock(&r->mutex);
	return 0;
}

/*
 * TWHEEL_IOC_RING_STATE's set, in restore mode. The ring is left not
 * polling, NEED_WAKEUP set: a program checks the flag after each publish,
 * so the first op published after the restore brings a RING_ENTER.
 */
static int twheel_fd_ring_state_set(struct twheel_fd_ring *r,
				    const struct twheel_ring_state *rs,
				    const u64 __user *ids)
{
	u64 chunk[TWHEEL_RING_IDS_CHUNK];
	unsigned int i, n;

	if (rs->nslots > r->nslots ||
	    rs->ring_flags & ~(TWHEEL_RING_NEED_WAKEUP | TWHEEL_RING_BAD_TAIL))
		return -EINVAL;
	for (i = 0; i < r->nslots; i += n) {
		n = min_t(unsigned int, TWHEEL_RING_IDS_CHUNK, r->nslots - i);
		memset(chunk, 0, sizeof(chunk));
		if (i < rs->nslots &&
		    copy_from_user(chunk, &ids[i], min(n, rs->nslots - i) *
				   sizeof(*chunk)))
			return -EFAULT;
		mutex_lock(&r->mutex);
		memcpy(&r->ids[i], chunk, n * sizeof(*chunk));
		mutex_unlock(&r->mutex);
	}
	mutex_lock(&r->mutex);
	r->head = rs->sq_head;
	r->cq_tail = rs->cq_tail;
	r->flags = rs->ring_flags | TWHEEL_RING_NEED_WAKEUP;
	r->cq_overflow = rs->cq_overflow;
	r->drained = rs->drained;
	r->idle = 0;
	/* Pairs with smp_load_acquire() in twheel_fd_ring_busy(). */
	smp_store_release(&r->done, r->head);
	/* Pairs with the program's acquire of sq_head. */
	smp_store_release(&r->hdr->sq_head, r->head);
	/* Pairs with the program's acquire of cq_tail. */
	smp_store_release(&r->hdr->cq_tail, r->cq_tail);
	twheel_fd_ring_publish(r);
	mutex_unlock(&r->mutex);
	return 0;
}

/**
 * twheel_fd_ioc_ring_state - TWHEEL_IOC_RING_STATE
 * @tf: the file
 * @us: the caller's struct twheel_ring_state
 *
 * Context: process context; takes the ring's mutex per chunk of ids.
 * Return: 0, -ENXIO without a ring, -EINVAL (a set outside restore mode
 * included), -EFAULT.
 */
long twheel_fd_ioc_ring_state(struct twheel_fd *tf,
			      struct twheel_ring_state __user *us)
{
	/* Pairs with smp_store_release() in twheel_fd_ring_create(). */
	struct twheel_fd_ring *r = smp_load_acquire(&tf->ring);
	struct twheel_ring_state rs;
	int ret;

	if (copy_from_user(&rs, us, sizeof(rs)))
		return -EFAULT;
	if (rs.flags & ~TWHEEL_RING_STATE_SET || rs.pad || rs.reserved)
		return -EINVAL;
	if (!r)
		return -ENXIO;
	if (rs.flags & TWHEEL_RING_STATE_SET) {
		if (!READ_ONCE(tf->restoring))
			return -EINVAL;
		return twheel_fd_ring_state_set(r, &rs, u64_to_user_ptr(rs.ids));
	}
	ret = twheel_fd_ring_state_get(r, &rs, u64_to_user_ptr(rs.ids));
	if (ret)
		return ret;
	return copy_to_user(us, &rs, sizeof(rs)) ? -EFAULT : 0;
}
