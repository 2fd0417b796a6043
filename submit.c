// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: submission to a CPU's wheel, and waking the waiters. Whoever
 * arms or cancels a timer another wheel holds, or wants on another wheel,
 * queues it on that wheel's lock-free submission list (an llist: many
 * producers, one consumer) and, when the owner must look soon, kicks it:
 * at once on this CPU, else with one IPI until the owner drains
 * (tw_kick()), or with the owner's courier, an hrtimer on the arming CPU,
 * for an arming far ahead (tw_push_far(), tw_courier_fn()). The owner
 * drains its list (tw_drain()) and does what each timer's state asks:
 * link it, hand it to the CPU its arming wants, or drop it
 * (tw_reconcile()). Waiters of twheel_cancel_sync() and the group waits
 * are woken here too, whatever context lets go of their timer
 * (tw_wake_waiters_slow()).
 *
 * The design, the state bits and who may touch what: docs/design.md
 * ("Timer state", "Ownership and locking"). This file calls the wheel
 * (wheel.h) and no other file of the core: the arming and cancelling
 * paths (twheel.c), the run (expiry.c), the waits (sync.c) and hotplug
 * (cpu.c) call it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "twheel.h"
#include "wheel.h"
#include "core.h"

/*
 * Waiters of twheel_cancel_sync() and the group waits sleep here until the
 * timer they wait for lets go of TW_HELD and TW_RUNNING. One queue for all
 * timers: waits are rare, a spurious wake-up only re-checks a condition.
 */
DECLARE_WAIT_QUEUE_HEAD(tw_idle_wq);

/* Wakes tw_idle_wq for a CPU that is going offline (tw_wake_waiters()). */
static void tw_wake_work_fn(struct work_struct *work)
{
	wake_up_all(&tw_idle_wq);
}

DECLARE_WORK(tw_wake_work, tw_wake_work_fn);

/*
 * tw_wake_waiters() (core.h) found TW_WAITER in the state word that an
 * atomic read-modify-write returned, which cleared TW_HELD or TW_RUNNING.
 * Waking takes tw_idle_wq's lock, a
 * spinlock_t: a sleeping lock on PREEMPT_RT, so not to be taken in hard
 * interrupt context or with interrupts disabled. There the wake-up is left
 * to this CPU's wheel softirq (tw_hrtimer_fn()), programmed to run at once.
 */
void tw_wake_waiters_slow(struct twheel_timer *t)
{
	struct twheel_cpu *tc;

	/*
	 * Orders the state change before the waitqueue is looked at; pairs
	 * with the barrier of set_current_state() in the waiter's
	 * prepare_to_wait_event() (tw_wait_settled()): either the waiter is
	 * on the queue, or its check of the condition sees the new state.
	 */
	smp_mb__after_atomic();
	/* Lockless check, made safe by the barrier above (wq_has_sleeper()). */
	if (!waitqueue_active(&tw_idle_wq))
		return;
	if (!irqs_disabled() && !in_hardirq()) {
		wake_up_all(&tw_idle_wq);
		return;
	}
	tc = this_cpu_ptr(&twheel_cpus);
	if (!READ_ONCE(tc->online)) {
		/* Its wheel is going or gone: not its hrtimer, then. */
		queue_work(twheel_unbound_wq, &tw_wake_work);
		return;
	}
	tc->wake_pending = true;
	/* A run under way wakes them as it ends (tw_irq_enable_wake()). */
	if (!tc->in_run)
		tw_program(tc, ktime_get());
}

/*
 * Owner: turn interrupts back on, then do the wake-up tw_wake_waiters()
 * left for this CPU, if any. Softirq or process context.
 */
void tw_irq_enable_wake(struct twheel_cpu *tc)
{
	bool wake = tc->wake_pending;

	lockdep_assert_irqs_disabled();
	tc->wake_pending = false;
	local_irq_enable();
	if (wake)
		wake_up_all(&tw_idle_wq);
}

/*
 * Most CPUs a movable timer armed on an idle CPU looks at for an awake
 * one (tw_pick_awake()): a bound on the remote loads of one arming.
 */
#define TW_AWAKE_LOOKS	8

/*
 * A wheel for a movable timer armed on @this, an idle CPU (in an interrupt
 * that woke it, or a callback there): the first awake CPU of its node after
 * it that takes timers and is not isolated from timers (isolcpus=,
 * nohz_full=), as get_nohz_timer_target() looks for a busy one;
 * @this when none of TW_AWAKE_LOOKS is. One read of each looked-at CPU's
 * @here, which may be stale: a CPU that has just gone idle
 * takes the timer and wakes for it once, as before; one that has just
 * woken keeps it here.
 */
static int tw_pick_awake(int this)
{
	unsigned int looks = 0;
	int cpu;

	for_each_cpu_wrap(cpu, cpumask_of_node(cpu_to_node(this)), this + 1) {
		const struct twheel_cpu *tc = tw_cpu(cpu);

		/* Nor an isolated CPU (nohz_full=, isolcpus=): it keeps its own. */
		if (cpu == this || !housekeeping_cpu(cpu, HK_TYPE_TIMER))
			continue;
		if (READ_ONCE(tc->here) & TW_HERE_MOVABLE)
			return cpu;
		if (++looks == TW_AWAKE_LOOKS)
			break;
	}
	return this;
}

noinline int tw_pick_cpu_slow(int want)
{
	int cpu;

	if (want >= 0 && READ_ONCE(tw_cpu(want)->online))
		return want;
	cpu = smp_processor_id();
	if (READ_ONCE(tw_cpu(cpu)->online))
		return want == TWHEEL_ANY_CPU ? tw_pick_awake(cpu) : cpu;
	for_each_online_cpu(cpu)
		if (READ_ONCE(tw_cpu(cpu)->online))
			return cpu;
	return -1;
}

/*
 * Make the owner of @cpu's wheel drain its submission list soon: at once
 * for this CPU, else with one IPI per drain. Interrupts are off.
 */
void tw_kick(int cpu)
{
	struct twheel_cpu *tc = tw_cpu(cpu);

	if (cpu == smp_processor_id()) {
		tw_program(tc, ktime_get());
		return;
	}
	/*
	 * One IPI until it runs. Our caller's llist_add() (a full barrier)
	 * comes before we read @kicked; the IPI's atomic_xchg() clearing it
	 * comes before its llist_del_all() (tw_kick_fn()). So either that
	 * drain sees our entry, or we see @kicked clear and send the IPI.
	 * Seeing it set means an IPI is queued that has yet to clear it, and
	 * its drain (or the wheel run it programs) will see our entry.
	 *
	 * Only the IPI clears @kicked, never a drain of the wheel's own run:
	 * that would let a second sender in while the first is still inside
	 * smp_call_function_single_async(), whose test and set of the csd's
	 * lock is not atomic. Both would queue the csd, and a csd queued
	 * twice links to itself: the owner then loops in its IPI for ever.
	 */
	if (atomic_read(&tc->kicked) || atomic_xchg(&tc->kicked, 1))
		return;
	/*
	 * -ENXIO: the CPU is offline and the csd was not queued; its
	 * teardown handed everything off (tw_cpu_offline()). We still own
	 * the csd: let the next sender have it. A sender that saw @kicked
	 * set meanwhile relied on us, so if the CPU has come back and has
	 * work, send once more (once: it may go down again).
	 */
	if (smp_call_function_single_async(cpu, &tc->kick) != -ENXIO)
		return;
	atomic_set(&tc->kicked, 0);
	/* Pairs with the barrier of the llist_add() before such a sender's read. */
	smp_mb__after_atomic();
	if (READ_ONCE(tc->online) && !llist_empty(&tc->submit) &&
	    !atomic_xchg(&tc->kicked, 1) &&
	    smp_call_function_single_async(cpu, &tc->kick) == -ENXIO)
		atomic_set(&tc->kicked, 0);
}

/*
 * An arming from afar due this many granules ahead or more waits for the
 * owner's courier rather than kicking it at once (tw_push_far()).
 */
#define TW_FAR_GRANULES	4

/*
 * The courier of a CPU's wheel fell due: a remote arming left a timer on
 * the wheel's list without a kick, due a granule or more after now. Kick
 * the owner, unless it has drained the list since. Hard interrupt context,
 * on the CPU that last armed the courier (or the one its timers migrated
 * to when that CPU went down).
 */
enum hrtimer_restart tw_courier_fn(struct hrtimer *hrt)
{
	struct twheel_cpu *tc = container_of(hrt, struct twheel_cpu, courier);

	raw_spin_lock(&tc->courier_lock);
	WRITE_ONCE(tc->courier_by, KTIME_MAX);
	raw_spin_unlock(&tc->courier_lock);
	/*
	 * Pairs with the full barrier of the llist_add() before an arming's
	 * read of @courier_by (tw_push_arming()): either that arming reads
	 * KTIME_MAX and arms the courier again, or we see its entry here and
	 * kick.
	 */
	smp_mb();
	if (!llist_empty(&tc->submit))
		tw_kick(tc->cpu);
	return HRTIMER_NORESTART;
}

/*
 * tw_push_arming()'s slow path: @cpu's wheel is not set to run by
 * @expires, no kick is on its way and the courier would come too late.
 * A deadline at least TW_FAR_GRANULES away sets the courier for the
 * window [@expires - 2 granules, @expires - 1 granule]: the owner then
 * drains its list a granule or more before the deadline, in time for the
 * timer's tick, or for the precise stage (which takes a timer a granule
 * before its deadline). A nearer one kicks now. Interrupts are off.
 *
 * The clock is read here only: the fast path compares deadlines. At most
 * one hrtimer_start_range_ns() per call, under a leaf lock held for it
 * alone; a caller that arms ever earlier deadlines pays it on each (as
 * each of those kicked before the courier), and each courier run costs
 * the owner one IPI at most.
 */
noinline void tw_push_far(struct twheel_cpu *tc, int cpu, ktime_t expires)
{
	ktime_t by = expires - (ktime_t)granularity_ns;

	/* A kick is on its way: its drain will see our entry (tw_kick()). */
	if (atomic_read(&tc->kicked))
		return;
	if (expires - ktime_get() < (ktime_t)(TW_FAR_GRANULES * granularity_ns)) {
		tw_kick(cpu);
		return;
	}
	raw_spin_lock(&tc->courier_lock);
	if (by < tc->courier_by) {
		WRITE_ONCE(tc->courier_by, by);
		hrtimer_start_range_ns(&tc->courier, by - (ktime_t)granularity_ns,
				       granularity_ns, HRTIMER_MODE_ABS_HARD);
	}
	raw_spin_unlock(&tc->courier_lock);
}

/*
 * Queue the timers linked from @first to @last through their llnode for
 * @cpu's wheel, in one llist_add_batch(); the caller set TW_QUEUED on each.
 * With @kick the owner is made to look soon (an arming, a hand-off): one
 * kick for them all; without it (a cancel: the timer cannot fire any more)
 * the entries wait for the owner's next run.
 */
void tw_push_list(struct llist_node *first, struct llist_node *last, int cpu,
		  bool kick)
{
	llist_add_batch(first, last, &tw_cpu(cpu)->submit);
	if (kick)
		tw_kick(cpu);
}

/*
 * Owner: @t is unlinked; drop the wheel's reference unless someone queued
 * it again (then the submission list holds it and will bring it back here).
 */
void tw_release(struct twheel_timer *t)
{
	unsigned long old = atomic_long_read(&t->state);

	do {
		if (old & TW_QUEUED)
			return;
	} while (!atomic_long_try_cmpxchg(&t->state, &old, old & ~TW_HELD));
	tw_wake_waiters(t, old);
}

/*
 * Where a pending timer is to go: the wheel its latest arming wants
 * (tw_want()), if that is still online; else its pinned CPU, this one, or
 * any, as tw_pick_cpu() would choose now.
 */
static int tw_dest(struct twheel_cpu *tc, struct twheel_timer *t,
		   unsigned long state)
{
	int dest = tw_want(state), pin;

	if (dest < nr_cpu_ids && READ_ONCE(tw_cpu(dest)->online))
		return dest;
	pin = READ_ONCE(t->target_cpu);
	if (pin >= 0 && READ_ONCE(tw_cpu(pin)->online))
		return pin;
	if (READ_ONCE(tc->online))
		return tc->cpu;
	dest = tw_pick_cpu(-1);
	return dest < 0 ? tc->cpu : dest;	/* no wheel online: keep it */
}

/*
 * Owner: look at a timer taken from the submission list and do what its
 * state asks: link it here, hand it to the CPU its arming wants, or drop
 * it. A hand-off is O(1) here: unlink, one llist_add() and a kick.
 */
static void tw_reconcile(struct twheel_cpu *tc, struct twheel_timer *t)
{
	unsigned long old, new;
	int dest;

	lockdep_assert_irqs_disabled();
	old = tw_read_settled(t);
	for (;;) {
		if (!(old & TW_PENDING)) {
			tw_unlink(tc, t);
			new = old & ~(TW_QUEUED | TW_HELD);
		} else {
			dest = tw_dest(tc, t, old);
			if (dest != tc->cpu) {
				/* Hand off: TW_QUEUED stays set, so t->cpu is ours to change. */
				tw_unlink(tc, t);
				WRITE_ONCE(t->cpu, dest);
				tw_push(t, dest, true);
				return;
			}
			tw_link(tc, t, tw_seq(old));
			new = old & ~TW_QUEUED;
		}
		if (atomic_long_try_cmpxchg(&t->state, &old, new))
			break;
		/* Re-armed or cancelled meanwhile: look again. */
		old = tw_read_settled(t);
	}
	if (!(new & TW_HELD))
		tw_wake_waiters(t, old);
}

/*
 * An llist comes off newest first. Put it back in arrival order if it is
 * short; a long one (a burst of a million cancels from another CPU) would
 * take that many steps with interrupts off, so it is processed as it is:
 * arrival order only decides the order of linking, and the sort of a
 * tick's due timers restores arming order (twheel_timer::order) anyway.
 */
static struct llist_node *tw_arrival_order(struct llist_node *head)
{
	struct llist_node *n = head;
	unsigned int len = 0;

	while (n && ++len <= TW_IRQ_CHUNK)
		n = n->next;
	return len <= TW_IRQ_CHUNK ? llist_reverse_order(head) : head;
}

/*
 * Owner: process submissions, at most *budget of them: each batch taken
 * off the list is finished before the next is taken, oldest first when
 * it is short (tw_arrival_order()).
 */
void tw_drain(struct twheel_cpu *tc, unsigned int *budget)
{
	lockdep_assert_irqs_disabled();
	while (*budget) {
		struct twheel_timer *t;

		if (!tc->backlog) {
			tc->backlog = tw_arrival_order(llist_del_all(&tc->submit));
			if (!tc->backlog)
				return;
		}
		t = llist_entry(tc->backlog, struct twheel_timer, llnode);
		tc->backlog = tc->backlog->next;
		(*budget)--;
		tw_reconcile(tc, t);
	}
}
