/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the core's private declarations, shared by its five files:
 *
 *   twheel.c   the per-CPU wheels' data, arming and cancelling, the
 *              timers' initialisers: the API's entry point; the design,
 *              the state machine and who owns what are in docs/design.md
 *   submit.c   submission (the lock-free hand-off between CPUs, the kick
 *              and the courier, the owner's drain) and waking waiters
 *   sync.c     waiting for a timer (twheel_cancel_sync()) and for groups
 *   expiry.c   a wheel's run: the hrtimer's softirq, the kick IPI,
 *              callbacks, work timers
 *   cpu.c      CPU hotplug, the statistics, module load and unload
 *
 * They call each other in one direction only: cpu.c calls expiry.c,
 * sync.c and expiry.c call twheel.c, and all of them call submit.c, the
 * lowest, which calls only the wheel (wheel.h, below it precise.h).
 * What the arming and cancel paths use on every call is inline here.
 */
#ifndef _TWHEEL_CORE_H
#define _TWHEEL_CORE_H

#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "twheel.h"
#include "wheel.h"
#include "internal.h"

#define TW_PENDING	BIT(0)
#define TW_HELD		BIT(1)
#define TW_QUEUED	BIT(2)
#define TW_RUNNING	BIT(3)
#define TW_SHUTDOWN	BIT(4)
#define TW_BUSY		BIT(5)
#define TW_WAITER	BIT(6)
#define TW_PARKED	BIT(7)
/*
 * Bits 16-31: the CPU whose wheel the latest arming wants (tw_pick_cpu()
 * of it), set by the same cmpxchg that publishes the arming. A holder that
 * finds a pending timer on its submission list hands it there (a re-arm
 * from another CPU migrates the timer, as mod_timer() does a timer_list).
 */
#define TW_WANT_SHIFT	16
#define TW_WANT_MASK	GENMASK(31, TW_WANT_SHIFT)
static_assert(CONFIG_NR_CPUS <= (TW_WANT_MASK >> TW_WANT_SHIFT) + 1);
/*
 * Most timers handled in one interrupts-off section (or under one spinlock)
 * by any pass: the wheel run, a long submission list, a group cancel, CPU
 * offline, module unload. See "Bounded work" in docs/design.md.
 */
#define TW_IRQ_CHUNK	256

/* Kbuild refuses a 32-bit kernel: the sequence needs the upper half. */
static_assert(BITS_PER_LONG == 64, "twheel needs a 64-bit kernel");
#define TW_SEQ_SHIFT	32
#define TW_SEQ_ONE	BIT(TW_SEQ_SHIFT)

static inline u32 tw_seq(unsigned long state)
{
	return state >> TW_SEQ_SHIFT;
}

static inline int tw_want(unsigned long state)
{
	return (state & TW_WANT_MASK) >> TW_WANT_SHIFT;
}

static inline unsigned long tw_set_want(unsigned long state, int cpu)
{
	return (state & ~TW_WANT_MASK) | ((unsigned long)cpu << TW_WANT_SHIFT);
}

/* Module parameters (twheel.c), checked by twheel_core_init(); read-only. */
extern unsigned long granularity_ns;
extern unsigned int wheel_bits;
extern unsigned int expire_batch;
extern unsigned int precise_per_tick;
extern unsigned int run_budget_us;

/**
 * struct twheel_stats - per-CPU counters, shown in debugfs
 * @scheduled: armings made on this CPU
 * @expired: callbacks this CPU's wheel ran or queued
 * @cancelled: cancels made on this CPU that stopped a pending timer
 * @max_lateness_ns: the latest expiry of this CPU's wheel
 * @max_batch: most expiries in one run
 * @kicks: kick IPIs this CPU received
 * @parked: expiries found with their callback still running (tw_claim())
 * @advance_ns: time the wheel's runs spent advancing the wheel (moving
 *	timers down the levels, sorting the due ones)
 * @expire_ns: time they spent claiming, running and finishing due timers
 * @yields: runs that went over run_budget_us and left the rest to a later
 *	run (tw_hrtimer_fn())
 * @deferrals: of those, the ones whose next run waited for the work item
 *	(tw_resume_fn()): all but those that interrupted an idle CPU
 *	(tw_must_defer())
 * @holds: runs over run_budget_us that set only one user's due timers
 *	aside (tw_hold_due()) and let the wheel run on for the others'
 * @programs: programmings of the wheel's hrtimer (hrtimer_start_range_ns()
 *	of @hrt: tw_program(), tw_program_run_end())
 *
 * Written by this CPU only; read racily for display.
 */
struct twheel_stats {
	u64	scheduled;
	u64	expired;
	u64	cancelled;
	u64	max_lateness_ns;
	u64	kicks;
	u64	parked;
	u64	advance_ns;
	u64	expire_ns;
	u64	yields;
	u64	deferrals;
	u64	holds;
	u64	programs;
	u32	max_batch;
};

/**
 * struct twheel_cpu - one CPU's wheel
 * @wheel: the buckets; owner CPU, interrupts disabled
 * @backlog: drained submissions not yet processed, oldest first; owner
 * @submit: submission list; any context adds, the owner drains
 * @hrt: drives the wheel; soft, pinned to the owner
 * @hrt_hard: fires the precise stage's hard heap (%TWHEEL_F_HARDIRQ
 *	timers, tw_hard_fn()); hard, pinned to the owner
 * @kick: IPI that makes the owner drain @submit
 * @kicked: @kick is ours to send or on its way: set by the one sender
 *	that sends it (tw_kick()), cleared by the IPI itself (tw_kick_fn()),
 *	or by that sender if the send failed. It serialises the senders of
 *	@kick, as smp_call_function_single_async() requires
 * @programmed: ns the hrtimer is set for, KTIME_MAX if idle; while a run is
 *	under way (@in_run), KTIME_MAX or the earliest time an arming asked
 *	for since the run began, which the run's end programs at the latest;
 *	written by the owner, read from afar by tw_push_arming()
 * @courier_by: ns by which @courier will have run, KTIME_MAX if it is not
 *	set: written under @courier_lock, read locklessly by tw_push_arming()
 * @hard_programmed: ns @hrt_hard is set for, KTIME_MAX if idle or while
 *	it runs; owner, interrupts disabled
 * @online: accepts new timers; see the hotplug callbacks
 * @here: which timers an arming on this CPU may file here, one load for
 *	tw_pick_cpu(): %TW_HERE_PINNED while @online, and %TW_HERE_MOVABLE
 *	while @online and the CPU is not idle (in its idle loop, or in an
 *	interrupt taken there, as the power:cpu_idle tracepoint says:
 *	tw_idle_probe()). Written by this CPU only (the probe, with
 *	interrupts off, and the hotplug callbacks, which run here); read by
 *	any CPU looking for an awake one (tw_pick_awake(), READ_ONCE())
 * @order: arming counter of this CPU, for FIFO among equal deadlines
 * @running: the softirq callback running on this CPU (or the hard one
 *	that interrupted it, until it returns); this CPU only
 * @running_expires: the deadline it runs for, for twheel_deadline()
 * @wake_pending: a waiter of tw_idle_wq is to be woken once interrupts are
 *	on again (tw_wake_waiters()); owner, interrupts disabled
 * @in_run: tw_hrtimer_fn() is under way: tw_program() lowers @programmed
 *	but leaves the hrtimer to the run's end, which programs it once
 *	(tw_program_run_end()); owner, interrupts disabled
 * @deferred: a run went over its time budget with work left that was not
 *	one user's due timers (tw_hold_due()) nor a batch (tw_rest_small())
 *	and queued @resume: the hrtimer stays off until @resume runs, so
 *	that every task that outranks a SCHED_OTHER one runs first; or the
 *	run ended in a @gap. tw_program() programs nothing meanwhile; owner,
 *	interrupts disabled
 * @gap: the run before set @deferred and programmed the hrtimer for a
 *	budget after its end (tw_hold_due(), tw_rest_small()): the next run,
 *	that one, clears both; owner, interrupts disabled
 * @resume: work item bound to the owner: clears @deferred and lets the
 *	wheel run again, or gives a held user's timers back (tw_resume_fn())
 * @clock_each: the latest run found its callbacks slow (more than
 *	run_budget_us / 16 each): the next one claims and runs them one at a
 *	time, reading the clock after each, not TW_CLOCK_EVERY at a time;
 *	owner, interrupts disabled
 * @precise_floor: ns before which the hrtimer is not programmed for the
 *	precise stage's user heap (/dev/twheel's timers): the end of the last
 *	run for it plus a tick / precise_per_tick (the coalescing floor,
 *	tw_hrtimer_fn()); owner, interrupts disabled
 * @stats: counters
 * @cpu: the owner
 * @courier: kicks the owner shortly before the earliest deadline queued on
 *	@submit without a kick (tw_push_far(), tw_courier_fn()); hard, not
 *	pinned: it runs on the CPU that armed it last
 * @courier_lock: serialises the armings of @courier (tw_push_far()) with
 *	its callback's reset of @courier_by; a leaf lock, taken with
 *	interrupts off, only on the slow path of a remote arming
 */
struct twheel_cpu {
	struct tw_wheel		wheel;
	struct llist_node	*backlog;
	struct llist_head	submit;
	struct hrtimer		hrt;
	struct hrtimer		hrt_hard;
	call_single_data_t	kick;
	atomic_t		kicked;
	ktime_t			programmed;
	ktime_t			courier_by;
	ktime_t			hard_programmed;
	bool			online;
	u8			here;
	u32			order;
	struct twheel_timer	*running;
	u64			running_expires;
	bool			wake_pending;
	bool			in_run;
	bool			deferred;
	bool			gap;
	bool			clock_each;
	struct work_struct	resume;
	ktime_t			precise_floor;
	struct twheel_stats	stats;
	int			cpu;
	struct hrtimer		courier;
	raw_spinlock_t		courier_lock;
};

/*
 * twheel_cpu::here. TWHEEL_ANY_CPU + 3 and TWHEEL_THIS_CPU + 3 are the
 * bits an arming of each needs (tw_pick_cpu()).
 */
#define TW_HERE_PINNED		0x1u
#define TW_HERE_MOVABLE		0x2u
static_assert(TWHEEL_ANY_CPU + 3 == TW_HERE_MOVABLE &&
	      TWHEEL_THIS_CPU + 3 == TW_HERE_PINNED);

/* Every CPU's wheel (twheel.c). */
DECLARE_PER_CPU(struct twheel_cpu, twheel_cpus);

/*
 * submit.c: waiters of twheel_cancel_sync() and of the group waits sleep on
 * tw_idle_wq until the timer they wait for lets go of TW_HELD and
 * TW_RUNNING; tw_wake_work wakes them for a CPU going offline.
 */
extern struct wait_queue_head tw_idle_wq;
extern struct work_struct tw_wake_work;

/*
 * Module unload has begun: a run no longer defers (tw_hrtimer_fn()). In
 * twheel.c with the rest of the core's data, set by cpu.c, as is:
 */
extern bool tw_stopping;
/* the per-CPU workqueue of work timers' callbacks and deferred runs. */
extern struct workqueue_struct *twheel_wq;

/* ---------------------------------------------------------------------
 * State word helpers
 */

/* Take TW_BUSY; interrupts are off, so the holder is never this CPU's IRQ. */
static __always_inline unsigned long tw_lock_busy(struct twheel_timer *t)
{
	unsigned long old = atomic_long_read(&t->state);

	for (;;) {
		if (old & TW_BUSY) {
			cpu_relax();
			old = atomic_long_read(&t->state);
			continue;
		}
		/* Pairs with the release in tw_publish(). */
		if (atomic_long_try_cmpxchg_acquire(&t->state, &old,
						    old | TW_BUSY))
			return old;
	}
}

/* Read the state once no arming is writing the timer's fields. */
static inline unsigned long tw_read_settled(struct twheel_timer *t)
{
	unsigned long s;

	/* Pairs with the release that clears TW_BUSY in tw_publish(). */
	while ((s = atomic_long_read_acquire(&t->state)) & TW_BUSY)
		cpu_relax();
	return s;
}

static inline struct twheel_cpu *tw_cpu(int cpu)
{
	return per_cpu_ptr(&twheel_cpus, cpu);
}

int tw_pick_cpu_slow(int want);

/*
 * A CPU whose wheel takes timers; interrupts are off (RCU read side). The
 * common cases inline: a timer for whichever CPU arms it (one per-CPU
 * load), or one pinned to a CPU that is up.
 */
/* tw_arm_locked()'s @slack, and tw_pick_timer_cpu()'s: keep the timer's. */
#define TW_SLACK_KEEP	0xffu

/*
 * tw_pick_cpu() and tw_pick_timer_cpu(): one load of @here on the common
 * path. With @t (a constant NULL folds it away), a movable timer with a
 * slack below the tick (its class @slack, or TW_SLACK_KEEP: its own),
 * looked at only when this CPU is idle, stays on it: an awake CPU's wheel
 * would only add the hand-off's lateness to a timer that asked for
 * precision.
 */
static __always_inline int __tw_pick_cpu(int want,
					 const struct twheel_timer *t,
					 unsigned int slack)
{
	if (want < 0) {
		u8 here = this_cpu_read(twheel_cpus.here);

		/*
		 * This CPU, online, and for a movable timer not idle (an
		 * interrupt that woke it arms, or a callback there).
		 */
		if (likely(here & (want + 3)))
			return smp_processor_id();
		if (t && (here & TW_HERE_PINNED) &&
		    (slack == TW_SLACK_KEEP ? tw_timer_precise(t) :
		     tw_class_precise(slack)))
			return smp_processor_id();
	} else if (likely(READ_ONCE(tw_cpu(want)->online))) {
		return want;	/* pinned, and that CPU takes timers */
	}
	return tw_pick_cpu_slow(want);
}

static __always_inline int tw_pick_cpu(int want)
{
	return __tw_pick_cpu(want, NULL, 0);
}

/* The wheel for an arming of @t whose slack class is @slack. */
static __always_inline int tw_pick_timer_cpu(const struct twheel_timer *t,
					     unsigned int slack)
{
	return __tw_pick_cpu(READ_ONCE(t->target_cpu), t, slack);
}

/*
 * llist_add() inline, as 7.x has it (6.x calls llist_add_batch()): a
 * successful try_cmpxchg() is fully ordered, the barrier that
 * tw_push_arming() pairs with.
 */
static __always_inline void tw_llist_add(struct llist_node *n,
					 struct llist_head *head)
{
	struct llist_node *first = READ_ONCE(head->first);

	do {
		n->next = first;
	} while (!try_cmpxchg(&head->first, &first, n));
}

/*
 * Owner: make sure the hrtimer fires by @when. Interrupts are off. Not
 * while a run has deferred the rest of its work: tw_resume_fn() programs
 * the hrtimer for at once when it runs, which is as early as any @when.
 * Nothing when the hrtimer is set for @when or earlier already: an arming
 * or a move that leaves the wheel's next expiry where it was costs no
 * hrtimer_start() (a cancel never programs it). Nor while the wheel runs:
 * a callback's armings and the drain's cost one programming in all, at
 * the run's end (tw_program_run_end()), not one each that is earlier than
 * the last (issue 43).
 */
static inline void tw_program(struct twheel_cpu *tc, ktime_t when)
{
	lockdep_assert_irqs_disabled();
	if (when >= tc->programmed || tc->deferred)
		return;
	/* Read from afar by tw_push_arming(): a run comes by @when. */
	WRITE_ONCE(tc->programmed, when);
	if (tc->in_run)
		return;
	tc->stats.programs++;
	hrtimer_start_range_ns(&tc->hrt, when, 0, HRTIMER_MODE_ABS_PINNED_SOFT);
}

/*
 * Owner: make sure the hard hrtimer fires by @when, for the precise
 * stage's hard heap. Interrupts are off. A run deferred by the time budget
 * does not hold it back: its callbacks are the kernel's, which hrtimer
 * would not hold back either, and each hard run is bounded on its own.
 */
static inline void tw_program_hard(struct twheel_cpu *tc, ktime_t when)
{
	lockdep_assert_irqs_disabled();
	if (when >= tc->hard_programmed)
		return;
	tc->hard_programmed = when;
	hrtimer_start_range_ns(&tc->hrt_hard, when, 0,
			       HRTIMER_MODE_ABS_PINNED_HARD);
}

/* Owner: link @t on this wheel for the arming @seq, wherever it was. */
static __always_inline void tw_link(struct twheel_cpu *tc,
				    struct twheel_timer *t, u32 seq)
{
	struct tw_wheel *w = &tc->wheel;
	ktime_t when;

	t->linked_seq = seq;
	/* Only the new timer's bucket can be earlier than what is programmed. */
	when = tw_wheel_relink_ns(w, t);
	if (unlikely(tw_timer_precise(t))) {
		/*
		 * A precise timer of /dev/twheel's waits for the coalescing
		 * floor (tw_hrtimer_fn()); a kernel caller's does not, and
		 * one in the hard heap has the hard hrtimer.
		 */
		if ((t->flags & TW_F_RATED) && when < tc->precise_floor)
			when = tc->precise_floor;
		if (tw_precise_in_hard(t)) {
			tw_program_hard(tc, when);
			return;
		}
	}
	tw_program(tc, when);
}

static inline void tw_unlink(struct twheel_cpu *tc, struct twheel_timer *t)
{
	if (!list_empty(&t->entry))
		tw_wheel_unlink(&tc->wheel, t);
}

/*
 * Where @t's period lives: in the structure that embeds a timer that may
 * be periodic (twheel_timer::flags says which), nowhere for a plain one.
 */
static inline u64 *tw_period_slot(struct twheel_timer *t)
{
	if (t->flags & TWHEEL_F_PROCESS)
		return &container_of(t, struct twheel_work_timer, timer)->period;
	if (t->flags & TWHEEL_F_PERIODIC)
		return &container_of(t, struct twheel_periodic_timer,
				     timer)->period;
	return NULL;
}

/* The period of the arming whose mode is @mode; 0 for a one-shot. */
static inline u64 tw_period(struct twheel_timer *t, u8 mode)
{
	return mode == TWHEEL_ONESHOT ? 0 : READ_ONCE(*tw_period_slot(t));
}

/* submit.c: submission and waking waiters (see there) */
void tw_wake_waiters_slow(struct twheel_timer *t);

/*
 * Called after an atomic read-modify-write of @t->state, which returned
 * @old, cleared TW_HELD or TW_RUNNING: wakes the waiters of the timer, if
 * it has any (tw_wake_waiters_slow()).
 */
static inline void tw_wake_waiters(struct twheel_timer *t, unsigned long old)
{
	if (old & TW_WAITER)
		tw_wake_waiters_slow(t);
}

void tw_irq_enable_wake(struct twheel_cpu *tc);
void tw_kick(int cpu);
enum hrtimer_restart tw_courier_fn(struct hrtimer *hrt);
void tw_push_far(struct twheel_cpu *tc, int cpu, ktime_t expires);
void tw_push_list(struct llist_node *first, struct llist_node *last, int cpu,
		  bool kick);

/* tw_push_list() of one timer. */
static inline void tw_push(struct twheel_timer *t, int cpu, bool kick)
{
	tw_push_list(&t->llnode, &t->llnode, cpu, kick);
}

void tw_release(struct twheel_timer *t);
void tw_drain(struct twheel_cpu *tc, unsigned int *budget);

/* twheel.c: arming and cancelling */
int tw_publish_next(struct twheel_timer *t, int want);
bool tw_cancel_refusing(struct twheel_timer *t, unsigned long *oldp,
			unsigned long refuse);

/* Set up a timer for its initialiser (twheel.c, and expiry.c's work timer). */
static inline void tw_timer_setup(struct twheel_timer *timer, twheel_fn_t func,
				  unsigned int flags, const char *name,
				  struct lock_class_key *key)
{
	memset(timer, 0, sizeof(*timer));
	INIT_LIST_HEAD(&timer->entry);
	timer->func = func;
	timer->flags = flags;
	timer->target_cpu = TWHEEL_ANY_CPU;
	timer->bucket = TW_NO_BUCKET;
	lockdep_init_map(&timer->lockdep_map, name, key, 0);
}

/* expiry.c: a wheel's run */
void tw_resume_fn(struct work_struct *work);
enum hrtimer_restart tw_hrtimer_fn(struct hrtimer *hrt);
enum hrtimer_restart tw_hard_fn(struct hrtimer *hrt);
void tw_kick_fn(void *info);

#endif /* _TWHEEL_CORE_H */
