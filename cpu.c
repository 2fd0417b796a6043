// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the per-CPU wheels' life. A CPU going down hands its timers to
 * the CPUs that stay (tw_cpu_offline()); debugfs shows each wheel's
 * counters; module load sets every wheel up and unload empties them. The
 * state bits and who may touch what: "Timer state" and "Ownership and
 * locking" in docs/design.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>
#include <trace/events/power.h>

#include "compat.h"
#include "core.h"
#include "internal.h"

static enum cpuhp_state twheel_hp_state;
static struct dentry *twheel_debugfs;

/* ---------------------------------------------------------------------
 * CPU hotplug
 */

/*
 * Timers taken off an offline wheel for one live CPU, linked through their
 * llnode, not yet on its submission list: handed off together by
 * tw_evict_flush().
 */
struct tw_evict_batch {
	struct llist_node	*first;
	struct llist_node	*last;
	int			dest;
};

/*
 * Hand @b's timers to their CPU with at most one kick IPI for the lot: a
 * kick per timer sent a million timers' new owner 79,499 IPIs in 950 ms.
 */
static void tw_evict_flush(struct tw_evict_batch *b)
{
	if (!b->first)
		return;
	tw_push_list(b->first, b->last, b->dest, true);
	b->first = NULL;
	b->last = NULL;
}

/*
 * Owner, wheel offline, interrupts off: add a timer taken off the wheel to
 * @b, for a live CPU; a run of timers for one CPU goes in one batch. Its
 * TW_QUEUED and @cpu say where it goes before it is there, until
 * tw_evict_some() flushes @b, before interrupts are on again. Meanwhile
 * others may change its state word as for any queued timer (a cancel
 * clears TW_PENDING, a re-arm bumps the sequence and the CPU it wants) and
 * kick @cpu, or this CPU if they read @cpu before we set it; none can
 * queue it (TW_QUEUED is set) or let go of it (TW_HELD is, until @cpu's
 * drain takes it). An early kick is only a wasted one.
 */
static void tw_evict(struct twheel_timer *t, struct tw_evict_batch *b)
{
	unsigned long old = atomic_long_read(&t->state);
	int dest;

	do {
		/* Queued here by someone: the final drain hands it off. */
		if (old & TW_QUEUED)
			return;
	} while (!atomic_long_try_cmpxchg(&t->state, &old, old | TW_QUEUED));
	dest = tw_pick_cpu(READ_ONCE(t->target_cpu));
	/*
	 * No wheel online but ours: another CPU is held below our hotplug
	 * state (a debug knob can). Its drain keeps the timer until it is
	 * online (tw_dest()), then its wheel runs it.
	 */
	if (unlikely(dest < 0))
		dest = cpumask_any_but(cpu_online_mask, smp_processor_id());
	WRITE_ONCE(t->cpu, dest);
	if (b->first && b->dest != dest)
		tw_evict_flush(b);
	t->llnode.next = b->first;
	b->first = &t->llnode;
	if (!b->last)
		b->last = &t->llnode;
	b->dest = dest;
}

/*
 * Owner, wheel offline, interrupts off: hand up to TW_IRQ_CHUNK timers
 * to live CPUs. Return: true once the wheel is empty.
 */
static bool tw_evict_some(struct twheel_cpu *tc)
{
	struct tw_evict_batch batch = { };
	unsigned int budget = TW_IRQ_CHUNK;
	struct twheel_timer *t;
	bool empty = false;

	lockdep_assert_irqs_disabled();
	tw_drain(tc, &budget);
	while (budget--) {
		t = tw_wheel_pop(&tc->wheel);
		if (!t) {
			empty = !tc->backlog && llist_empty(&tc->submit);
			break;
		}
		tw_evict(t, &batch);
	}
	tw_evict_flush(&batch);
	return empty;
}

/* Process context: a chunk at a time, rescheduling in between. */
static void tw_evict_all(struct twheel_cpu *tc)
{
	bool empty;

	do {
		local_irq_disable();
		empty = tw_evict_some(tc);
		tw_irq_enable_wake(tc);
		cond_resched();
	} while (!empty);
}

/*
 * power:cpu_idle, on the CPU that enters or leaves its idle loop, with
 * interrupts off: whether a movable timer armed here now would wake this
 * CPU again (tw_pick_cpu()). An interrupt that wakes an idle CPU runs
 * before the exit event, so its armings, and those of the callbacks its
 * softirq runs there, see the CPU idle.
 */
static void tw_idle_probe(void *data, unsigned int state, unsigned int cpu)
{
	u8 here = this_cpu_read(twheel_cpus.here) & TW_HERE_PINNED;

	/*
	 * A variable, not an expression: x86's this_cpu_write() (6.12's
	 * __pcpu_cast_1()) casts its value unparenthesised, so "state !=
	 * PWR_EVENT_EXIT" would read "(unsigned long)state != -1", always true.
	 * Online (@here's pinned bit) and leaving idle: movable timers too.
	 */
	if (here && state == PWR_EVENT_EXIT)
		here |= TW_HERE_MOVABLE;
	this_cpu_write(twheel_cpus.here, here);
}

/* Whether tw_idle_probe() is registered: movable timers move. */
static bool tw_idle_probed;

static int tw_cpu_online(unsigned int cpu)
{
	struct twheel_cpu *tc = tw_cpu(cpu);

	local_irq_disable();
	tw_wheel_forward(&tc->wheel, ktime_get());
	WRITE_ONCE(tc->online, true);
	/* On this CPU, which runs this: not idle. The probe keeps it after. */
	WRITE_ONCE(tc->here, TW_HERE_PINNED | TW_HERE_MOVABLE);
	local_irq_enable();
	return 0;
}

/* Runs on the CPU going down, before it stops taking interrupts. */
static int tw_cpu_offline(unsigned int cpu)
{
	struct twheel_cpu *tc = tw_cpu(cpu);

	local_irq_disable();
	WRITE_ONCE(tc->online, false);
	WRITE_ONCE(tc->here, 0);
	local_irq_enable();
	/* Armings that still saw us online run with interrupts off. */
	synchronize_rcu();
	tw_evict_all(tc);
	/* Pushes that raced with the eviction have landed on our list... */
	synchronize_rcu();
	/* ...and nothing can be queued here any more: hand those off too. */
	tw_evict_all(tc);
	hrtimer_cancel(&tc->hrt);
	hrtimer_cancel(&tc->hrt_hard);
	/* A run deferred before we began: its work finds @online clear. */
	cancel_work_sync(&tc->resume);
	local_irq_disable();
	WRITE_ONCE(tc->programmed, KTIME_MAX);
	tc->hard_programmed = KTIME_MAX;
	tc->deferred = false;
	tc->gap = false;
	tw_irq_enable_wake(tc);
	return 0;
}

/* ---------------------------------------------------------------------
 * debugfs: per-CPU statistics
 */

static int tw_stats_show(struct seq_file *m, void *unused)
{
	int cpu;

	seq_puts(m, "cpu online pending scheduled expired cancelled max_lateness_ns max_batch kicks advance_ns expire_ns yields deferrals programs holds\n");
	for_each_possible_cpu(cpu) {
		struct twheel_cpu *tc = tw_cpu(cpu);
		/* Other CPUs' counters, read racily: a snapshot for people. */
		struct twheel_stats st = data_race(tc->stats);
		/* Likewise: the owner changes it with interrupts off. */
		unsigned long pending = data_race(tc->wheel.count);

		seq_printf(m, "%d %d %lu %llu %llu %llu %llu %u %llu %llu %llu %llu %llu %llu %llu\n",
			   cpu, READ_ONCE(tc->online), pending, st.scheduled,
			   st.expired, st.cancelled, st.max_lateness_ns,
			   st.max_batch, st.kicks, st.advance_ns, st.expire_ns,
			   st.yields, st.deferrals, st.programs, st.holds);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tw_stats);

/* For the KUnit tests: kick IPIs @cpu received. */
u64 twheel_kicks(int cpu)
{
	/* The owner counts in its IPI; a racy snapshot is all tests need. */
	return data_race(tw_cpu(cpu)->stats.kicks);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_kicks);

/* For the KUnit tests: expiries parked behind a running callback, all CPUs. */
u64 twheel_parks(void)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		/* Each owner counts with interrupts off: a racy sum will do. */
		sum += data_race(tw_cpu(cpu)->stats.parked);
	}
	return sum;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_parks);

/* For the KUnit tests: runs of @cpu's wheel that went over run_budget_us. */
u64 twheel_yields(int cpu)
{
	/* The owner counts with interrupts off: a racy snapshot will do. */
	return data_race(tw_cpu(cpu)->stats.yields);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_yields);

/* For the KUnit tests: of those, the runs that waited for tw_resume_fn(). */
u64 twheel_deferrals(int cpu)
{
	/* As twheel_yields(). */
	return data_race(tw_cpu(cpu)->stats.deferrals);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_deferrals);

/* For the KUnit tests: whether @cpu is idle, as a movable arming sees it. */
bool twheel_cpu_idle(int cpu)
{
	return !(READ_ONCE(tw_cpu(cpu)->here) & TW_HERE_MOVABLE);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_cpu_idle);

/* For the KUnit tests: runs of @cpu's wheel that held one user's timers. */
u64 twheel_holds(int cpu)
{
	/* As twheel_yields(). */
	return data_race(tw_cpu(cpu)->stats.holds);
}
EXPORT_SYMBOL_IF_KUNIT(twheel_holds);

/*
 * For the KUnit tests and the bench module (table 1): programmings of
 * @cpu's wheel hrtimer so far. Not part of the API: exported in the
 * TWHEEL_INTERNAL namespace, on every kernel (the bench runs where KUnit
 * is not built).
 */
u64 twheel_programs(int cpu)
{
	/* The owner counts with interrupts off: a racy snapshot will do. */
	return data_race(tw_cpu(cpu)->stats.programs);
}
EXPORT_SYMBOL_NS_GPL(twheel_programs, TWHEEL_INTERNAL_NS);

/*
 * For the bench module (table 3's spread pattern): the time @cpu's wheel
 * runs spent inside themselves so far, advancing the wheel and expiring
 * its due timers, ns. As twheel_programs().
 */
u64 twheel_run_ns(int cpu)
{
	const struct twheel_stats *st = &tw_cpu(cpu)->stats;

	/* As twheel_programs(): the owner adds with interrupts off. */
	return data_race(st->advance_ns + st->expire_ns);
}
EXPORT_SYMBOL_NS_GPL(twheel_run_ns, TWHEEL_INTERNAL_NS);

/* ---------------------------------------------------------------------
 * Module load and unload
 */

/*
 * Unload: let go of a timer a wheel still references. Return 1 if it was
 * still armed (a leak), 0 if it was only waiting to be unlinked (cancelled
 * from another CPU, see twheel_cancel()).
 */
static unsigned int tw_drop(struct twheel_timer *t)
{
	return !!(atomic_long_fetch_andnot(TW_PENDING | TW_QUEUED | TW_HELD,
					   &t->state) & TW_PENDING);
}

/*
 * Unload, interrupts off: drop up to TW_IRQ_CHUNK of what leaked users
 * left on @tc's wheel, adding to *@left those still armed.
 * Return: true if more may remain.
 */
static bool tw_flush_some(struct twheel_cpu *tc, unsigned int *left)
{
	struct twheel_timer *t;
	struct llist_node *n;
	unsigned int i;

	lockdep_assert_irqs_disabled();
	for (i = 0; i < TW_IRQ_CHUNK; i++) {
		if (tc->backlog) {
			n = tc->backlog;
			tc->backlog = n->next;
			*left += tw_drop(llist_entry(n, struct twheel_timer,
						     llnode));
			continue;
		}
		if (!llist_empty(&tc->submit)) {
			tc->backlog = llist_del_all(&tc->submit);
			continue;
		}
		t = tw_wheel_pop(&tc->wheel);
		if (!t)
			return false;
		*left += tw_drop(t);
	}
	return true;
}

/* Unload: empty one CPU's wheel, a chunk at a time. */
static long tw_flush_cpu(void *arg)
{
	struct twheel_cpu *tc = arg;
	unsigned int left = 0;
	bool more;

	do {
		local_irq_disable();
		more = tw_flush_some(tc, &left);
		local_irq_enable();
		cond_resched();
	} while (more);
	if (left)
		pr_warn("cpu %d: %u timers left armed at unload, dropped\n",
			tc->cpu, left);
	return 0;
}

static void tw_free_wheels(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		tw_wheel_free(&tw_cpu(cpu)->wheel);
}

/**
 * twheel_core_init - set up every CPU's wheel; called by main.c
 *
 * Context: module init, process context.
 * Return: 0, or a negative errno with nothing left set up.
 */
int __init twheel_core_init(void)
{
	int cpu, ret;

	if (granularity_ns < NSEC_PER_USEC || granularity_ns > NSEC_PER_SEC ||
	    wheel_bits < TW_BITS_MIN || wheel_bits > TW_BITS_MAX ||
	    expire_batch < 64 || expire_batch > (1U << 20) ||
	    run_budget_us < 100 || run_budget_us > 100 * USEC_PER_MSEC ||
	    precise_per_tick < 1 || precise_per_tick > 1024) {
		pr_err("invalid module parameters (see modinfo twheel)\n");
		return -EINVAL;
	}

	for_each_possible_cpu(cpu) {
		struct twheel_cpu *tc = tw_cpu(cpu);

		ret = tw_wheel_init(&tc->wheel, granularity_ns, wheel_bits,
				    ktime_get(), cpu_to_node(cpu));
		if (ret)
			goto err_free_wheels;
		/* Its user heap charges each user's count of this CPU. */
		tc->wheel.precise.cpu = cpu;
		init_llist_head(&tc->submit);
		twheel_hrtimer_setup(&tc->hrt, tw_hrtimer_fn, CLOCK_MONOTONIC,
				     HRTIMER_MODE_ABS_PINNED_SOFT);
		twheel_hrtimer_setup(&tc->hrt_hard, tw_hard_fn,
				     CLOCK_MONOTONIC,
				     HRTIMER_MODE_ABS_PINNED_HARD);
		tc->hard_programmed = KTIME_MAX;
		INIT_CSD(&tc->kick, tw_kick_fn, tc);
		INIT_WORK(&tc->resume, tw_resume_fn);
		tc->programmed = KTIME_MAX;
		twheel_hrtimer_setup(&tc->courier, tw_courier_fn,
				     CLOCK_MONOTONIC, HRTIMER_MODE_ABS_HARD);
		raw_spin_lock_init(&tc->courier_lock);
		tc->courier_by = KTIME_MAX;
		tc->cpu = cpu;
	}

	twheel_wq = alloc_workqueue("twheel", WQ_HIGHPRI | WQ_MEM_RECLAIM |
				    TWHEEL_WQ_PERCPU, 0);
	if (!twheel_wq) {
		ret = -ENOMEM;
		goto err_free_wheels;
	}

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "twheel:online",
				tw_cpu_online, tw_cpu_offline);
	if (ret < 0)
		goto err_destroy_wq;
	twheel_hp_state = ret;
	/*
	 * Without the tracepoint (a kernel without CONFIG_TRACEPOINTS) no CPU
	 * reads as idle: movable timers stay where they are armed.
	 */
	ret = register_trace_cpu_idle(tw_idle_probe, NULL);
	tw_idle_probed = !ret;
	if (ret)
		pr_notice("power:cpu_idle not available (%d): movable timers stay on the CPU that arms them\n",
			  ret);

	twheel_debugfs = debugfs_create_dir("twheel", NULL);
	debugfs_create_file("stats", 0444, twheel_debugfs, NULL,
			    &tw_stats_fops);

	pr_info("%d CPUs, %lu ns ticks, %u levels of %u buckets\n",
		num_online_cpus(), granularity_ns,
		tw_cpu(0)->wheel.levels, 1U << wheel_bits);
	return 0;

err_destroy_wq:
	destroy_workqueue(twheel_wq);
err_free_wheels:
	tw_free_wheels();
	return ret;
}

/**
 * twheel_core_exit - stop and free every CPU's wheel; called by main.c
 *
 * Context: module exit, process context; every user of the API is gone.
 */
void twheel_core_exit(void)
{
	int cpu;

	debugfs_remove_recursive(twheel_debugfs);
	if (tw_idle_probed) {
		unregister_trace_cpu_idle(tw_idle_probe, NULL);
		tracepoint_synchronize_unregister();
	}
	cpuhp_remove_state_nocalls(twheel_hp_state);
	/*
	 * Users are gone (they hold module references): only leaks remain.
	 * Stop the wheels, then empty each on its own CPU (serialised with
	 * late kicks by interrupts off), or here for a CPU that is offline.
	 * A run from now on defers nothing; one that already did has its
	 * work cancelled once no run is left in flight (after the hrtimer's).
	 */
	WRITE_ONCE(tw_stopping, true);
	for_each_possible_cpu(cpu) {
		hrtimer_cancel(&tw_cpu(cpu)->courier);
		hrtimer_cancel(&tw_cpu(cpu)->hrt);
		hrtimer_cancel(&tw_cpu(cpu)->hrt_hard);
	}
	for_each_possible_cpu(cpu)
		cancel_work_sync(&tw_cpu(cpu)->resume);
	/* Process-context callbacks end first: they may queue timers. */
	destroy_workqueue(twheel_wq);
	cpus_read_lock();
	for_each_possible_cpu(cpu) {
		if (cpu_online(cpu))
			work_on_cpu(cpu, tw_flush_cpu, tw_cpu(cpu));
		else
			tw_flush_cpu(tw_cpu(cpu));
	}
	cpus_read_unlock();
	/* A late kick may have programmed a wheel again: nothing is left. */
	for_each_possible_cpu(cpu) {
		hrtimer_cancel(&tw_cpu(cpu)->courier);
		hrtimer_cancel(&tw_cpu(cpu)->hrt);
		hrtimer_cancel(&tw_cpu(cpu)->hrt_hard);
	}
	flush_work(&tw_wake_work);
	tw_free_wheels();
}
