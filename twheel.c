// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: per-CPU hierarchical timing wheels driven by hrtimers.
 *
 * Design
 * ======
 *
 * Every CPU owns one hierarchical timing wheel (wheel.c) and one soft,
 * pinned hrtimer. Only the owner CPU touches its wheel, with interrupts
 * disabled, so no spinlock guards the buckets. Any CPU or context reaches
 * another CPU's wheel through that wheel's lock-free submission list (an
 * llist: many producers, one consumer) and an IPI that kicks the owner
 * (smp_call_function_single_async(), at most one until the owner drains;
 * irq_work_queue_on() is not exported to modules). The IPI drains the list
 * itself. This is the MPSC queue of Netty's and Akka's wheels, done per
 * CPU. A cancel from afar queues the timer without a kick: it cannot fire
 * any more, so its owner unlinks it at its next run, as Netty's wheel
 * processes its cancelled queue at its next tick; twheel_cancel_sync()
 * kicks, since it waits for the owner to let go. An arming from afar kicks
 * only if it is due before the owner's hrtimer is set to run (that run
 * drains the list first: tw_push_arming()), so a timeout armed for another
 * CPU, or moved here from it, usually costs no IPI. When the owner's wheel
 * would not run by then (it is empty, or its next event is later), an
 * arming due TW_FAR_GRANULES or more ahead still sends none: the owner's
 * courier, an hrtimer on the arming CPU, kicks it one to two granules
 * before the deadline (tw_push_far()), once for every timer queued so, and
 * not at all if the owner has drained its list by then. An idle CPU is not
 * woken at every remote arming of a timeout, only before the first one
 * that could fire.
 * Schedule and cancel are O(1): an atomic state change, plus either a
 * bucket link on the local wheel or an llist_add to the owner's list.
 *
 * Where remote work runs. Whoever arms, re-arms or cancels a timer pays
 * for it on its own CPU, as timer_list's mod_timer() does (it takes the
 * remote base's lock, or moves the timer to the local CPU). twheel moves
 * it: an arming wants the caller's wheel (or the pinned CPU's), and says so
 * in the state word (tw_want()); a timer another wheel holds is queued to
 * that holder, which at its next look only unlinks it and hands it over,
 * O(1) and once: from then on the timer is held by the caller's wheel and
 * every further re-arm, MODIFY or cancel from there is local, with no
 * atomic beyond the state word and no IPI. So a storm of re-arms from one
 * CPU on timers another CPU holds costs that CPU one unlink per timer, not
 * one per operation (issue 29: the owner's busy loop kept 63% of its
 * throughput under such a storm when the owner relinked every re-arm). A
 * cancel from afar still leaves the unlink to the holder's next run
 * without a kick; it stops the timer, so the next arming finds no holder
 * and links locally. Only a timer pinned to another CPU
 * (twheel_timer_set_cpu()) keeps costing that CPU a relink per re-arm:
 * the in-kernel user asked for it, and /dev/twheel never pins.
 *
 * The hrtimer is programmed for the next non-empty bucket only (a bitmap
 * per level, as the kernel's timer_list does), so an empty wheel, or one
 * holding only far-future timers, does not wake its CPU. It is programmed
 * only when that moves earlier: an arming, a move or a cancel that leaves
 * the next expiry where it was costs no hrtimer_start() (as the 4.8
 * timer wheel's mod_timer() of a timer to its own bucket, or 7.1's lazy
 * hrtimer re-arm), and a run programs it once, at its end, whatever its
 * callbacks and its drain armed (tw_program()).
 *
 * Levels, with the default granularity of 1 ms and 64 buckets per level
 * (both module parameters; a level-0 tick is `granularity_ns`):
 *
 *   level  bucket width   range
 *   0      1 ms           64 ms
 *   1      64 ms          4.1 s
 *   2      4.1 s          4.4 min
 *   3      4.4 min        4.7 h
 *   4      4.7 h          12.4 days
 *   5      12.4 days      2.2 years
 *   6      2.2 years      142 years
 *   7      142 years      9100 years
 *
 * Levels continue until every ktime_t deadline fits (at most 10; past the
 * top level a timer is parked and put back when its bucket comes round).
 * A higher-level bucket is processed when its span starts and its timers
 * move down (Kafka's overflow wheels), so every timer fires from level 0:
 * never early, and late by at most one level-0 tick plus system latency.
 * Each timer moves down at most once per level. Due timers are sorted by
 * deadline and then by arming order (a per-CPU counter), so timers with
 * equal deadlines armed on one CPU fire in the order they were armed, in
 * every tick with at most TW_SORT_MAX due timers (bigger ticks are left in
 * each level's linking order: the sort runs with interrupts off).
 *
 * A run of the wheel (the hrtimer callback, in softirq context) drains the
 * submission list, advances the wheel, and runs due callbacks, processing at
 * most `expire_batch` timers and for at most `run_budget_us` (2 ms); if more
 * remain it re-arms itself at once, so a million timers expiring together
 * never stall the CPU. A run on interrupt exit cannot be preempted, and the
 * kernel's own hand-off of softirqs to ksoftirqd never sees one that keeps
 * re-arming its hrtimer, so a run that goes over its time budget does not
 * re-arm: it queues a work item bound to its CPU (tw_resume_fn()), run by
 * a SCHED_OTHER worker, which re-arms the hrtimer for at once. (Only a run
 * that interrupted the idle task, with no task woken since, re-arms at
 * once itself: one interrupt rather than a wake-up and two context
 * switches, and nobody kept waiting.) Until then
 * nothing programs it (twheel_cpu::deferred), so the next run waits for
 * every real-time task that wants the CPU: a burst costing seconds of
 * callbacks keeps such a task waiting about one budget, and the callbacks
 * still run in softirq context, as promised. Only the time between two runs
 * changes, as when `expire_batch` runs out: timers fire late, never early,
 * once, and in the same order.
 *
 * Precise timers. A timer's slack (twheel_timer_set_slack(), kept in the
 * upper bits of twheel_timer::mode) says how late it may fire. The default,
 * one tick, is the wheel's own precision. A timer with less is filed at
 * the tick before its deadline's (rounded down), and when that comes it
 * moves to the wheel's precise stage (precise.c): a heap ordered by the
 * end of each timer's window (deadline plus slack). The hrtimer is
 * programmed for the heap's first end, the latest moment that serves every
 * window, and a run fires each timer at the heap's top whose deadline has
 * come: hrtimer's range rule, so timers coalesce within their slack and
 * never fire early. The stage has two heaps, the kernel callers' and
 * /dev/twheel's (TW_F_RATED, set by the chardev). To bound the interrupts
 * userspace's precise timers can cause, the hrtimer is not programmed for
 * the user heap sooner than a tick / precise_per_tick (16) after the end
 * of the previous run for it: at most 16 such runs per tick per CPU,
 * besides the wheel's own, not one per timer, whoever arms them. The
 * kernel's heap is not held back: kernel callers are trusted with hrtimers
 * already, and a floor cost them hrtimer's precision (table 4 of
 * BENCHMARKS.md: lateness p50 3.0x hrtimer's with it). A kernel caller's
 * timer initialised with TWHEEL_F_HARDIRQ goes to a third heap, fired by a
 * second, hard hrtimer per CPU (tw_hard_fn()) in hard interrupt context,
 * as an hrtimer started in a _HARD mode fires: without the softirq hop,
 * which under emulation is most of what separated slack-0 timers from
 * hrtimer's lateness. The wheel's run moves such a timer there at the tick
 * before its deadline's, and fires it itself (in softirq) only when that
 * run comes after its deadline. PREEMPT_RT drops the flag, as it moves
 * hrtimers that do not ask for _HARD to softirq.
 *
 * Files. The core is five files that share core.h, above the wheel:
 *
 *   file       what                                  calls functions of
 *   ---------  ------------------------------------  ----------------------
 *   cpu.c      CPU hotplug, debugfs, module load     expiry.c, submit.c,
 *              and unload                            wheel.c
 *   sync.c     twheel_cancel_sync(), the group       this one, submit.c
 *              waits
 *   expiry.c   a wheel's run: tw_hrtimer_fn(), the   this one, submit.c,
 *              kick IPI, callbacks, periodic         wheel.c, precise.c
 *              re-arming, work timers
 *   this one   the per-CPU wheels' data, the state   submit.c, wheel.c,
 *              machine, arming and cancelling, the   precise.c
 *              initialisers: the API's entry point
 *   submit.c   submission: the lists, the kick and   wheel.c, precise.c
 *              the courier, the owner's drain;
 *              waking waiters
 *   wheel.c    the buckets (wheel.h)                 precise.c
 *   precise.c  the precise stage (precise.h)         none
 *
 * (through the inline helpers of core.h and wheel.h too). A file calls
 * only files below it in that table, so no calls go round a circle
 * (clock.c and /dev/twheel are above it all); the data every file reads
 * (the module parameters, twheel_cpus) is this one's. The run re-arms a
 * periodic timer through the arming code (tw_publish_next()), so the
 * arming code calls nothing of the run's: the work timer's initialiser
 * lives beside its work function in expiry.c. What the arming and cancel
 * paths use on every call is inline in core.h and wheel.h, so that
 * splitting the files cost those paths no call.
 *
 * The wheel's interface (wheel.h). wheel.c owns every bucket, the wheel's
 * clock and its expired list, precise.c its precise stage; the core only
 * calls them, and wheel.c calls precise.c, never the other way: the
 * wheel decides what enters the stage and accounts for what leaves it,
 * and a %TW_F_SHARED timer's count is reached through struct
 * tw_shared_timer (internal.h), not the chardev's types. An arming is
 * one call, tw_wheel_relink_ns() (unlink if linked, link by deadline and
 * slack), which returns the time to program; a cancel is
 * tw_wheel_unlink(); a run is tw_wheel_advance() then tw_wheel_pop_next()
 * per due timer; teardown is tw_wheel_pop(). The arming's and the
 * cancel's part is inline in wheel.h: under emulation a call and its
 * return thunk cost more than the work.
 *
 * Bounded work. No pass runs with interrupts off, or in one softirq run,
 * for a number of timers that a user can raise:
 *
 *   pass                              bound per section (defaults)
 *   --------------------------------  ------------------------------------
 *   wheel run: drain, move down,      TW_IRQ_CHUNK timers (256) per
 *   sort, claim (interrupts on         interrupts-off step, expire_batch
 *   between steps and around the       (8192) per softirq run, claims and
 *   callbacks of each TW_CLOCK_EVERY   moves to the precise stage in steps
 *   (8) claims)                        of TW_CLOCK_EVERY; a tick with
 *                                      more than TW_SORT_MAX (4096) due
 *                                      timers is not sorted (a sort of up
 *                                      to 4096 is the longest step)
 *   wheel run, by time (softirq:       run_budget_us (2000 us), the clock
 *   no task preempts it)               read between steps and every
 *                                      TW_CLOCK_EVERY (8) expiries, or
 *                                      at each expiry while callbacks
 *                                      take over run_budget_us / 16; past
 *                                      it the next run waits for a
 *                                      SCHED_OTHER work item on the CPU
 *                                      (at once if the CPU was idle)
 *   precise stage: arming, cancel,    one heap operation, log2 of
 *   move from the wheel, expiry        TW_PRECISE_MAX (4096): 12 steps;
 *   (interrupts off)                   the heap never holds more (past it
 *                                      a timer keeps the wheel's
 *                                      precision); a move costs the run
 *                                      one unit of expire_batch
 *   hard heap's hrtimer (hard         TW_HARD_BUDGET callbacks (16) per
 *   interrupt; kernel callers'         interrupt, then the hrtimer comes
 *   TWHEEL_F_HARDIRQ timers only)      back at once
 *   precise runs of /dev/twheel's     a tick / precise_per_tick (16)
 *   timers (interrupts)                between the end of a run and the
 *                                      next run for the user heap (the
 *                                      kernel's heap: as hrtimer, none)
 *   kick IPI (hard interrupt)         TW_KICK_BUDGET submissions (64)
 *   group cancel, close of a file     TW_IRQ_CHUNK members (256) under
 *                                      the group lock, then cond_resched()
 *   CPU offline, module unload        TW_IRQ_CHUNK timers (256) per
 *                                      interrupts-off step, cond_resched();
 *                                      offline: at most one kick IPI per
 *                                      step and destination
 *   /dev/twheel's submission ring     TWHEEL_RING_ENTRIES ops (512) per
 *   drain (fd_ring.c: process          drain, whatever the ring's indices
 *   context, the poller once per       say; TWHEEL_RING_COALESCE (64) per
 *   tick)                              twheel_fd_run_ops(), whose lock
 *                                      holds are TWHEEL_FD_LOCK_ROUND (64)
 *                                      ops, cond_resched() between chunks
 *
 * The worst case of a section is thus a constant number of timers, about
 * a millisecond under emulation, whatever the number pending; that of a
 * softirq run, the budget plus one step or TW_CLOCK_EVERY callbacks, or
 * one callback where they are slow (the debug kernel's take up to tens of
 * ms each: runs of 8 took up to 78 ms and kept a SCHED_FIFO task off the
 * CPU as long).
 *
 * Ownership and locking
 * =====================
 *
 *   what                            who may touch it, and how
 *   ------------------------------  ------------------------------------------
 *   twheel_cpu::wheel, ::backlog,   the owner CPU only, interrupts disabled
 *   ::deferred, ::programmed,       (tw_resume_fn(), a work item of a
 *   ::in_run, ::hard_programmed,
 *   ::precise_floor, the wheel's    per-CPU workqueue, checks that it runs
 *   precise stage, twheel_timer::   on the owner: after the owner went
 *   entry, ::bucket, ::linked_seq   down it may run elsewhere); but
 *                                   ::programmed is written WRITE_ONCE()
 *                                   and read from afar by tw_push_arming()
 *   twheel_cpu::submit              any context: llist_add(); the owner:
 *                                   llist_del_all() (no lock needed, see
 *                                   llist.h: one consumer)
 *   twheel_cpu::kick, ::kicked      @kick is sent only by the tw_kick()
 *                                   that set ::kicked (atomic_xchg()); the
 *                                   kick's own IPI clears it, or that sender
 *                                   when the send fails (-ENXIO)
 *   twheel_cpu::courier,            any arming from afar may arm @courier,
 *   ::courier_by                    under ::courier_lock (a leaf raw
 *                                   spinlock, interrupts off); its callback
 *                                   resets ::courier_by under the lock;
 *                                   armings read ::courier_by locklessly
 *                                   (READ_ONCE(), tw_push_arming())
 *   twheel_cpu::online              written by the CPU's own hotplug
 *                                   callbacks; read with READ_ONCE() under
 *                                   interrupts disabled (an RCU read side)
 *   twheel_timer::state             any context, atomic read-modify-write
 *   twheel_timer::expires, ::mode   written under TW_BUSY (a bit lock in
 *   (its slack class too), ::order, ::state: an arming, or
 *   and the period that             twheel_timer_set_slack()); read by the
 *   twheel_periodic_timer and       owner after waiting for TW_BUSY to
 *   twheel_work_timer hold          clear, validated by the arming sequence
 *                                   in ::state (the wheel's links read the
 *                                   deadline and slack of a linked timer
 *                                   racily: a new arming relinks it)
 *   twheel_timer::target_cpu        twheel_timer_set_cpu(), WRITE_ONCE(), at
 *                                   any time, no lock; read with READ_ONCE()
 *                                   by each arming and hand-off, so a change
 *                                   takes effect at the next one
 *   the wanted CPU (bits 16-31 of   written by each arming in the cmpxchg
 *   twheel_timer::state)            that publishes it (tw_publish()); read
 *                                   by the holder that drains the timer
 *                                   (tw_reconcile()) or ends its parked run
 *                                   (tw_end_run()), to hand it there
 *   twheel_timer::flags             set once by the initialiser
 *   twheel_timer::cpu               written by whoever sets TW_QUEUED while
 *                                   TW_HELD is clear, by the owner while it
 *                                   holds TW_QUEUED, or by tw_end_run() when
 *                                   it clears TW_PARKED and sets TW_QUEUED
 *                                   (a stale read then only kicks a CPU for
 *                                   nothing); read by those that set
 *                                   TW_QUEUED on a held timer
 *
 * Timer state (twheel_timer::state)
 * =================================
 *
 *   bit          meaning           set by (how)           cleared by (how)
 *   -----------  ----------------  ---------------------  ------------------
 *   TW_PENDING   the callback will  tw_publish(): every    twheel_cancel*()
 *                run (a periodic    arming (cmpxchg,       (cmpxchg); tw_claim()
 *                timer's: again)    under TW_BUSY)         for a one-shot
 *                                                          (owner, cmpxchg);
 *                                                          tw_reconcile() and
 *                                                          tw_end_run() drop a
 *                                                          shut-down arming
 *   TW_HELD      a wheel or a       tw_publish() when no   the holder only,
 *                submission list    wheel holds it         after unlinking:
 *                references it      (cmpxchg)              tw_release(),
 *                                                          tw_reconcile(), a
 *                                                          local cancel, and
 *                                                          tw_claim() (owner,
 *                                                          cmpxchg)
 *   TW_QUEUED    on the submission  whoever needs the      the holder draining
 *                list of ::cpu (or  holder to look again:  it (tw_reconcile(),
 *                on its way there:  an arming, a remote    cmpxchg; a hand-off
 *                an offline CPU's   cancel, tw_end_run()   to another CPU keeps
 *                batch for it,      (cmpxchg)              it), or tw_drop() at
 *                tw_evict())                               unload
 *   TW_RUNNING   the callback runs  tw_claim() (owner,     tw_end_run() and
 *                or is queued on    cmpxchg)               tw_finish() once its
 *                the workqueue                             callback returns
 *                                                          (cmpxchg, release),
 *                                                          tw_publish() for a
 *                                                          periodic re-arm
 *   TW_SHUTDOWN  arming fails,      twheel_shutdown_sync(), never: the timer
 *                -ESHUTDOWN         group shutdown         is done
 *                                   (atomic_long_or)
 *   TW_BUSY      an arming writes   tw_lock_busy()         tw_publish(), or
 *                ::expires, ::mode, (cmpxchg, acquire)     tw_arm_locked() on
 *                ::order, period                           shutdown (release)
 *   TW_WAITER    someone waits for  tw_wait_settled()      never: every later
 *                the timer          (fetch_or)             release wakes
 *                                                          tw_idle_wq (a
 *                                                          spurious wake-up
 *                                                          costs a re-check)
 *   TW_PARKED    due while its      tw_claim() (owner,     tw_end_run() when
 *                callback still     cmpxchg)               the callback
 *                ran: no wheel                             returns: queued
 *                links it; arming                          again if pending,
 *                and cancelling                            else released
 *                only change the
 *                state word
 *   bits 16-31   the CPU whose wheel the latest arming wants (tw_want())
 *   bits 32-63   arming sequence, bumped by every arming
 *
 *   idle --arm--> PENDING|HELD (linked, or QUEUED to its wheel)
 *   PENDING|HELD --expiry--> RUNNING (one-shot) or RUNNING|PENDING (periodic)
 *   PENDING|HELD --cancel--> HELD --holder unlinks--> idle
 *   PENDING|HELD on X --re-arm on Y--> +QUEUED on X's list --X unlinks-->
 *       QUEUED on Y's list --Y links--> PENDING|HELD on Y
 *   RUNNING --callback returns--> idle, or re-armed (periodic)
 *   RUNNING|PENDING|HELD --due--> +PARKED --callback returns--> QUEUED
 *
 * Waking a waiter takes a spinlock_t (a sleeping lock on PREEMPT_RT), so it
 * never happens with interrupts off or in hard interrupt context: there
 * tw_wake_waiters() leaves it to the CPU's wheel softirq.
 *
 * Cancel and expiry race on TW_PENDING with cmpxchg, so exactly one wins:
 * twheel_cancel() returns true exactly when the callback will not run for
 * that arming (Kafka's purgatory needs this: an operation completes by its
 * event or by its timeout, never both).
 *
 * Memory (x86-64, no lockdep; a static_assert holds it): struct
 * twheel_timer is 64 bytes, one cache line (timer_list: 40, hrtimer: 64):
 * list links for its bucket (16) and its submission (8), the state word,
 * deadline and callback (24), and 16 bytes of owner bookkeeping. What only
 * some timers need lives in the structure that embeds them: a struct
 * twheel_periodic_timer adds the period (72 bytes); a twheel_work_timer
 * (128 bytes) the period, a work_struct, and the deadline, period and mode
 * of the expiry its work was queued for; a group member is a struct
 * twheel_group_member (24 bytes) that its user keeps beside it. Per CPU: struct
 * twheel_cpu (488 bytes), the buckets (16 bytes each; 8 levels of 64 with
 * the defaults: 8 KiB), a one-bit-per-bucket bitmap (64 bytes) and the
 * precise stage's three heaps (TW_PRECISE_MAX slots of 16 bytes each: 192
 * KiB).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>

#include "compat.h"
#include "twheel.h"
#include "wheel.h"
#include "internal.h"
#include "core.h"

#define CREATE_TRACE_POINTS
#include "twheel_trace.h"

/* One cache line per timer: see struct twheel_timer. */
static_assert(!IS_ENABLED(CONFIG_64BIT) || IS_ENABLED(CONFIG_LOCKDEP) ||
	      sizeof(struct twheel_timer) <= 64);

unsigned long granularity_ns = NSEC_PER_MSEC;
module_param(granularity_ns, ulong, 0444);
MODULE_PARM_DESC(granularity_ns,
		 "Level-0 tick in ns, 1000..1000000000 (default 1000000)");

unsigned int wheel_bits = 6;
module_param(wheel_bits, uint, 0444);
MODULE_PARM_DESC(wheel_bits, "log2 of the buckets per level, 6..8 (default 6)");

unsigned int expire_batch = 8192;
module_param(expire_batch, uint, 0444);
MODULE_PARM_DESC(expire_batch,
		 "Most timers one wheel run processes, 64..1048576 (default 8192)");

unsigned int precise_per_tick = 16;
module_param(precise_per_tick, uint, 0444);
MODULE_PARM_DESC(precise_per_tick,
		 "Most runs of a CPU's wheel per tick for /dev/twheel's timers with a slack below it, 1..1024 (default 16)");

unsigned int run_budget_us = 2000;
module_param(run_budget_us, uint, 0444);
MODULE_PARM_DESC(run_budget_us,
		 "Most us one wheel run takes before it yields to tasks, 100..100000 (default 2000)");

DEFINE_PER_CPU(struct twheel_cpu, twheel_cpus);
/* Set by cpu.c: see core.h. */
bool tw_stopping;
struct workqueue_struct *twheel_wq;

/* ---------------------------------------------------------------------
 * Arming
 */

/*
 * Queue an arming of @t, due at @expires, for @cpu's wheel: as tw_push()
 * with a kick, but without the IPI when @cpu's hrtimer is set to run by
 * @expires anyway. That run drains the list before it looks at a bucket
 * (tw_hrtimer_fn()), so the timer is linked before it is due, and a
 * remote arming far ahead of the owner's next run (the common case of a
 * timeout) costs no interrupt on either CPU. Interrupts are off.
 */
static __always_inline void tw_push_arming(struct twheel_timer *t, int cpu,
					   u64 expires)
{
	struct twheel_cpu *tc = tw_cpu(cpu);

	if (cpu == smp_processor_id()) {
		tw_push(t, cpu, true);
		return;
	}
	tw_llist_add(&t->llnode, &tc->submit);
	/*
	 * Pairs with the run's store of KTIME_MAX to @programmed before its
	 * llist_del_all() (tw_hrtimer_fn()): tw_llist_add() and that xchg are
	 * full barriers, so either we read KTIME_MAX (or a time after
	 * @expires) and kick, or the run's drain sees our entry. A time
	 * before @expires read here is one the run will come at: only a run
	 * (which drains first) or the CPU's teardown (which empties the list,
	 * tw_cpu_offline()) lets go of it. One that an arming during a run
	 * wrote there is programmed by that run's end (tw_program_run_end()).
	 * A deferred run keeps KTIME_MAX there until tw_resume_fn(), whose
	 * run drains the list first, entries made before the deferral too.
	 * @t is not touched: it may be freed.
	 */
	if ((ktime_t)expires >= READ_ONCE(tc->programmed))
		return;
	/*
	 * The courier will kick the owner a granule or more before @expires:
	 * its run clears @courier_by before it reads the list (tw_courier_fn()).
	 */
	if ((ktime_t)expires - (ktime_t)granularity_ns >= READ_ONCE(tc->courier_by))
		return;
	tw_push_far(tc, cpu, expires);
}

/*
 * Publish an arming: clear TW_BUSY, bump the sequence, set TW_PENDING and
 * make sure a wheel will look at the timer. Interrupts are off. @clear is
 * TW_RUNNING for a periodic timer's next expiry (tw_finish()), which must
 * not bring back a timer cancelled since tw_finish() looked.
 */
static __always_inline int tw_publish(struct twheel_timer *t, int want,
				      unsigned long clear)
{
	struct twheel_cpu *local = this_cpu_ptr(&twheel_cpus);
	/* Pairs with the holder's cmpxchg that cleared TW_QUEUED after it set t->cpu. */
	unsigned long old = atomic_long_read_acquire(&t->state), new;
	/* Ours while we hold TW_BUSY; once published, @t may be freed. */
	u64 expires = READ_ONCE(t->expires), period = 0;
	int push_to, kick, this = smp_processor_id();
	bool direct, dropped;

	/* Only the trace wants the period: not worth a load on every arming. */
	if (trace_twheel_schedule_enabled())
		period = tw_period(t, READ_ONCE(t->mode) & TW_MODE_MASK);

	do {
		direct = false;
		push_to = -1;
		kick = -1;
		dropped = false;
		if (old & TW_SHUTDOWN) {
			/* Shut down while we wrote: the arming never happened. */
			new = old & ~(TW_BUSY | clear);
			dropped = true;
		} else if ((clear & TW_RUNNING) && !(old & TW_PENDING)) {
			/*
			 * The next expiry of a periodic timer, cancelled while
			 * tw_finish() wrote it (a cancel takes no TW_BUSY): that
			 * cancel returned true, so the timer stops here.
			 */
			new = old & ~(TW_BUSY | clear);
			dropped = true;
		} else if (!(old & TW_HELD)) {
			new = ((old | TW_PENDING) & ~(TW_BUSY | clear)) + TW_SEQ_ONE;
			new = tw_set_want(new, want);
			/* Nobody holds it: it goes to @want's wheel. */
			WRITE_ONCE(t->cpu, want);
			if (want == this) {
				new |= TW_HELD;
				direct = true;
			} else {
				new |= TW_HELD | TW_QUEUED;
				push_to = want;
			}
		} else {
			int holder = READ_ONCE(t->cpu);

			new = ((old | TW_PENDING) & ~(TW_BUSY | clear)) + TW_SEQ_ONE;
			new = tw_set_want(new, want);
			/*
			 * Held elsewhere, or wanted elsewhere: its holder only
			 * unlinks it and hands it to @want (tw_reconcile()), so
			 * a storm of re-arms from afar moves the timers here
			 * once and then costs their old holder nothing.
			 */
			if (old & TW_PARKED)
				;	/* tw_end_run() queues it when it returns */
			else if (holder == this && want == this &&
				 !(old & TW_QUEUED))
				direct = true;	/* held here: relink in place */
			else if (!(old & TW_QUEUED))
				push_to = holder; /* ask its holder to look again */
			else
				kick = holder;	/* queued, maybe by a lazy cancel */
			if (push_to >= 0)
				new |= TW_QUEUED;
		}
		/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
	} while (!atomic_long_try_cmpxchg_release(&t->state, &old, new));

	if (dropped) {
		tw_wake_waiters(t, old);
		return old & TW_SHUTDOWN ? -ESHUTDOWN : 0;
	}
	/* A periodic timer's next expiry ended a run: its waiters may go on. */
	if (clear & TW_RUNNING)
		tw_wake_waiters(t, old);
	trace_twheel_schedule(t, expires, period,
			      push_to >= 0 ? push_to : this, old & TW_PENDING);
	/*
	 * Last touch of @t: once on another CPU's list it may be cancelled,
	 * released and freed before tw_push() returns.
	 */
	if (direct)
		tw_link(local, t, tw_seq(new));
	else if (push_to >= 0)
		tw_push_arming(t, push_to, expires);
	else if (kick >= 0)
		tw_kick(kick);	/* a CPU number: @t is not touched */
	return !!(old & TW_PENDING);
}

/* tw_publish() for the next expiry of a periodic timer (expiry.c). */
int tw_publish_next(struct twheel_timer *t, int want)
{
	return tw_publish(t, want, TW_RUNNING);
}

/* tw_arm_locked()'s @slack: keep the timer's slack class. */
#define TW_SLACK_KEEP	0xffu

/*
 * Store a new arming; interrupts are off. @slack is a slack class
 * (precise.h) or TW_SLACK_KEEP.
 */
static __always_inline int tw_arm_locked(struct twheel_timer *t, u64 expires,
					 u64 period, enum twheel_mode mode,
					 unsigned int slack)
{
	unsigned long old;
	u8 m = mode;
	int want;

	want = tw_pick_cpu(READ_ONCE(t->target_cpu));
	if (WARN_ON_ONCE(want < 0))
		return -ENODEV;
	old = tw_lock_busy(t);
	if (old & TW_SHUTDOWN) {
		/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
		atomic_long_fetch_andnot_release(TW_BUSY, &t->state);
		return -ESHUTDOWN;
	}
	WRITE_ONCE(t->expires, expires);
	if (mode != TWHEEL_ONESHOT)
		WRITE_ONCE(*tw_period_slot(t), period);
	/* The slack class shares the byte: the same store as before. */
	if (slack == TW_SLACK_KEEP)
		m |= READ_ONCE(t->mode) & ~TW_MODE_MASK;
	else
		m |= slack << TW_SLACK_SHIFT;
	WRITE_ONCE(t->mode, m);
	WRITE_ONCE(t->order, this_cpu_inc_return(twheel_cpus.order));
	this_cpu_inc(twheel_cpus.stats.scheduled);
	return tw_publish(t, want, 0);
}

/* An arming already validated, from any context: interrupts off around it. */
static __always_inline int tw_arm(struct twheel_timer *t, u64 expires,
				  u64 period, enum twheel_mode mode)
{
	unsigned long flags;
	int ret;

	local_irq_save(flags);
	ret = tw_arm_locked(t, expires, period, mode, TW_SLACK_KEEP);
	local_irq_restore(flags);
	return ret;
}

/**
 * twheel_arm - arm a timer, or move it if it is pending
 * @timer: an initialised timer
 * @deadline: absolute CLOCK_MONOTONIC time of the (first) expiry; a time in
 *	the past means now
 * @period: ns between expiries for a periodic @mode, 0 for %TWHEEL_ONESHOT
 * @mode: %TWHEEL_ONESHOT, %TWHEEL_FIXED_RATE or %TWHEEL_FIXED_DELAY
 *
 * The timer goes to the wheel of the calling CPU, or of the CPU set with
 * twheel_timer_set_cpu(). A timer that another CPU's wheel holds moves to
 * that wheel, as mod_timer() moves a timer_list: its old holder only
 * unlinks it, at its next run (kicked with an IPI if that run would come
 * after the new deadline), and the work of this and every later arming
 * from here is this CPU's.
 *
 * Context: any context but NMI.
 * Return: 1 if the timer was pending (it has been moved), 0 if it was not,
 * -EINVAL for a negative @deadline, an unknown @mode, a @period that does
 * not match @mode, or a periodic @mode on a plain timer (only a struct
 * twheel_periodic_timer or twheel_work_timer has room for a period),
 * -ESHUTDOWN after twheel_shutdown_sync().
 */
int twheel_arm(struct twheel_timer *timer, ktime_t deadline, u64 period,
	       enum twheel_mode mode)
{
	if (deadline < 0 || tw_check_mode(mode, period))
		return -EINVAL;
	if (mode != TWHEEL_ONESHOT && !(timer->flags & TWHEEL_F_PERIODIC))
		return -EINVAL;
	return tw_arm(timer, deadline, period, mode);
}
EXPORT_SYMBOL_GPL(twheel_arm);

/**
 * twheel_schedule - arm a one-shot timer to fire after a delay
 * @timer: an initialised timer
 * @delay_ns: ns from now; 0 fires at once
 *
 * Context: any context but NMI.
 * Return: as twheel_arm(), and -ERANGE if now + @delay_ns overflows ktime_t.
 */
int twheel_schedule(struct twheel_timer *timer, u64 delay_ns)
{
	ktime_t now = ktime_get();

	if (delay_ns > (u64)(KTIME_MAX - now))
		return -ERANGE;
	return tw_arm(timer, now + delay_ns, 0, TWHEEL_ONESHOT);
}
EXPORT_SYMBOL_GPL(twheel_schedule);

/**
 * twheel_schedule_at - arm a one-shot timer for an absolute time
 * @timer: an initialised timer
 * @deadline: CLOCK_MONOTONIC time; in the past means now
 *
 * Context: any context but NMI.
 * Return: as twheel_arm().
 */
int twheel_schedule_at(struct twheel_timer *timer, ktime_t deadline)
{
	if (deadline < 0)
		return -EINVAL;
	return tw_arm(timer, deadline, 0, TWHEEL_ONESHOT);
}
EXPORT_SYMBOL_GPL(twheel_schedule_at);

/* ---------------------------------------------------------------------
 * Cancelling
 */

/*
 * twheel_cancel(), also giving the state word it found in *@oldp. A timer
 * whose state has a bit of @refuse set is left alone (false): a constant,
 * 0 but for twheel_cancel_sync(), which refuses TW_RUNNING.
 */
static __always_inline bool tw_cancel_irqsoff(struct twheel_timer *timer,
					      unsigned long *oldp,
					      unsigned long refuse)
{
	unsigned long old, new;
	int this, push_to;
	bool local = false;

	lockdep_assert_irqs_disabled();
	this = smp_processor_id();
	/* Pairs with the holder's cmpxchg that cleared TW_QUEUED after it set t->cpu. */
	old = atomic_long_read_acquire(&timer->state);
	do {
		if (!(old & TW_PENDING)) {
			/*
			 * Unlinked by an earlier round, then cancelled from
			 * afar: that cancel set TW_QUEUED (the timer was held
			 * here), and the submission releases it. Never held
			 * and unqueued: that would leak the hold.
			 */
			if (local && WARN_ON_ONCE((old & (TW_HELD | TW_QUEUED)) ==
						  TW_HELD))
				tw_release(timer);
			trace_twheel_cancel(timer, false);
			*oldp = old;
			return false;
		}
		/*
		 * Checked on every round: TW_RUNNING is set only by a claim
		 * on the holder CPU, and a round that unlinked the timer here
		 * (@local) is that CPU, with interrupts off, so the bit cannot
		 * appear after such a round.
		 */
		if (old & refuse) {
			*oldp = old;
			return false;
		}
		new = old & ~TW_PENDING;
		local = false;
		push_to = -1;
		/* A parked timer is released by tw_end_run(): nothing to do. */
		if ((old & TW_HELD) && !(old & (TW_QUEUED | TW_PARKED))) {
			int holder = READ_ONCE(timer->cpu);

			if (holder == this && !(old & TW_BUSY)) {
				/*
				 * Held here: unlink now and drop the hold in
				 * the same cmpxchg (one atomic, not two). The
				 * link is the owner's to undo at any time;
				 * should the cmpxchg fail, the state it finds
				 * sends the timer through the submission list,
				 * which links it again if it is still pending.
				 */
				tw_unlink(this_cpu_ptr(&twheel_cpus), timer);
				local = true;
				new &= ~TW_HELD;
			} else {
				new |= TW_QUEUED;
				push_to = holder;
			}
		}
	} while (!atomic_long_try_cmpxchg(&timer->state, &old, new));

	if (local) {
		/* Unlinked and released: its memory is free at once. */
		tw_wake_waiters(timer, old);
	} else if (push_to >= 0) {
		/*
		 * No kick: the timer cannot fire now (its owner finds it not
		 * pending), so the owner unlinks it at its next run, at the
		 * latest when the timer's bucket comes due. Waiters kick.
		 */
		tw_push(timer, push_to, false);
	}
	this_cpu_inc(twheel_cpus.stats.cancelled);
	trace_twheel_cancel(timer, true);
	*oldp = old;
	return true;
}

static __always_inline bool tw_cancel(struct twheel_timer *timer,
				      unsigned long *oldp, unsigned long refuse)
{
	unsigned long flags;
	bool ret;

	local_irq_save(flags);
	ret = tw_cancel_irqsoff(timer, oldp, refuse);
	local_irq_restore(flags);
	return ret;
}

/* tw_cancel() for sync.c, which refuses TW_RUNNING. */
bool tw_cancel_refusing(struct twheel_timer *t, unsigned long *oldp,
			unsigned long refuse)
{
	return tw_cancel(t, oldp, refuse);
}

/**
 * twheel_cancel - stop a timer without waiting
 * @timer: the timer
 *
 * Callable from any context, the timer's own callback included. For a
 * periodic timer it stops every later expiry; a callback already running
 * finishes.
 *
 * Unlike timer_delete(), a true return does not mean that twheel let go of
 * the timer: cancelled from a CPU other than its wheel's, the timer stays
 * referenced by that wheel (linked in a bucket, or on its submission
 * list) until the wheel's next run, since no CPU may touch another's
 * wheel and no IPI is sent for it. So `if (twheel_cancel(t)) kfree(obj)`
 * is a use-after-free: free only after twheel_cancel_sync() or
 * twheel_shutdown_sync() has returned (or twheel_group_*_sync() for a
 * member of a group).
 *
 * Context: any context but NMI.
 * Return: true exactly when the timer was pending and its callback will not
 * run for that arming; false if it was not pending (never armed, already
 * cancelled, or its callback has run or is running).
 */
bool twheel_cancel(struct twheel_timer *timer)
{
	unsigned long old;

	return tw_cancel(timer, &old, 0);
}
EXPORT_SYMBOL_GPL(twheel_cancel);

/*
 * twheel_cancel() for fd_ops.c, which then needs to know whether a
 * callback may still run: *@running is false when none ran when the
 * arming was cancelled, and then none can begin (as twheel_running() false
 * after twheel_cancel()); true means "ask twheel_running()". One atomic
 * and one call fewer per cancel than the pair. Interrupts must be off:
 * fd_ops.c runs the operations of a batch in one interrupts-off section
 * rather than saving and restoring them for each.
 */
bool twheel_cancel_idle_irqsoff(struct twheel_timer *timer, bool *running)
{
	unsigned long old;
	bool ret = tw_cancel_irqsoff(timer, &old, 0);

	*running = old & TW_RUNNING;
	return ret;
}

/*
 * twheel_arm() for fd_ops.c, whose armings are checked already: a
 * deadline >= 0, a period that matches @mode, periodic modes only on its
 * struct twheel_periodic_timer. @slack is the arming's slack class
 * (twheel_slack_class()), stored with it. Interrupts must be off, as for
 * twheel_cancel_idle_irqsoff().
 */
int twheel_arm_irqsoff(struct twheel_timer *timer, ktime_t deadline,
		       u64 period, enum twheel_mode mode, unsigned int slack)
{
	lockdep_assert_irqs_disabled();
	return tw_arm_locked(timer, deadline, period, mode, slack);
}

/* A slack class for twheel_arm_irqsoff() (chardev.c): see precise.h. */
unsigned int twheel_slack_class(u64 slack_ns)
{
	return tw_slack_class(granularity_ns, slack_ns);
}

/**
 * twheel_cancel_running - stop a periodic timer from its own callback
 * @timer: the timer whose callback is running
 *
 * Stops the re-arming of the expiry being run, unless the timer was armed
 * again or cancelled since that expiry began, which twheel_cancel() cannot
 * tell apart.
 *
 * Context: the timer's own callback.
 * Return: true if the timer will not run again; false if it was re-armed
 * (that arming stands) or was not pending.
 */
bool twheel_cancel_running(struct twheel_timer *timer)
{
	unsigned long old = atomic_long_read(&timer->state);

	do {
		/* Re-armed since: held by a wheel, queued, or being written. */
		if ((old & (TW_PENDING | TW_HELD | TW_QUEUED | TW_BUSY)) !=
		    TW_PENDING || !(old & TW_RUNNING))
			return false;
	} while (!atomic_long_try_cmpxchg(&timer->state, &old,
					  old & ~TW_PENDING));
	trace_twheel_cancel(timer, true);
	return true;
}
EXPORT_SYMBOL_GPL(twheel_cancel_running);

/**
 * twheel_pending - is the timer armed?
 * @timer: the timer
 *
 * Context: any context.
 * Return: true if an expiry is still to come.
 */
bool twheel_pending(const struct twheel_timer *timer)
{
	return atomic_long_read(&timer->state) & TW_PENDING;
}
EXPORT_SYMBOL_GPL(twheel_pending);

/**
 * twheel_running - is the timer's callback running?
 * @timer: the timer
 *
 * Lets a user that cancelled with twheel_cancel() skip the wait of
 * twheel_cancel_sync() when no callback is in flight: once twheel_cancel()
 * has cleared the pending state no new run can begin, so a false return
 * after it means that no callback touches the timer's container any more
 * and that the timer may be armed again for another purpose. The timer
 * may still be linked on its wheel: freeing it still takes
 * twheel_cancel_sync().
 *
 * Context: any context.
 * Return: true while the callback runs (or, for a work timer, is queued
 * to run); the load is an acquire, so a false return orders the
 * callback's stores before the caller's later accesses.
 */
bool twheel_running(const struct twheel_timer *timer)
{
	/* Pairs with the releases that clear TW_RUNNING (tw_finish() and on). */
	return atomic_long_read_acquire(&timer->state) & TW_RUNNING;
}
EXPORT_SYMBOL_GPL(twheel_running);

/**
 * twheel_deadline - the deadline of the current arming
 * @timer: the timer
 *
 * Context: any context; in the timer's callback, the deadline of the expiry
 * being run.
 * Return: CLOCK_MONOTONIC ns.
 */
ktime_t twheel_deadline(const struct twheel_timer *timer)
{
	/*
	 * In its own callback the timer may already be re-armed by someone
	 * else: report the deadline of the expiry being run, not the new one.
	 */
	if (timer->flags & TWHEEL_F_PROCESS) {
		struct twheel_work_timer *wt =
			container_of(timer, struct twheel_work_timer, timer);

		if (current_work() == &wt->work)
			return wt->run_expires;
	} else if ((in_serving_softirq() || in_hardirq()) &&
		   this_cpu_read(twheel_cpus.running) == timer) {
		/* A softirq callback, or a TWHEEL_F_HARDIRQ one (tw_hard_fn()). */
		return this_cpu_read(twheel_cpus.running_expires);
	}
	return READ_ONCE(timer->expires);
}
EXPORT_SYMBOL_GPL(twheel_deadline);

/**
 * twheel_granularity - the wheel's level-0 tick
 *
 * Context: any context.
 * Return: ns by which an expiry may be late, beyond system latency.
 */
ktime_t twheel_granularity(void)
{
	return granularity_ns;
}
EXPORT_SYMBOL_GPL(twheel_granularity);

/**
 * twheel_timer_set_slack - how late the timer may fire
 * @timer: an initialised timer of any kind (for a struct
 *	twheel_clock_timer, twheel_clock_timer_set_slack())
 * @slack_ns: ns the timer may fire after its deadline, beyond system
 *	latency; %TWHEEL_SLACK_DEFAULT, or any value of at least
 *	twheel_granularity(), for the default: one tick of the wheel. 0 asks
 *	for hrtimer's precision.
 *
 * As the slack of hrtimer_start_range_ns(): a timer whose slack is below
 * the tick reaches its deadline through its CPU's precise stage once it is
 * within a tick of it, and fires between its deadline and its deadline
 * plus the slack, coalesced with the other timers whose windows allow it;
 * never early. The slack is the timer's until set again, for every arming
 * from the next one on (an arming pending meanwhile keeps either slack).
 * A kernel caller's precise timer runs when its window ends, as an
 * hrtimer's does; only /dev/twheel's are spaced, at most precise_per_tick
 * runs per tick (a module parameter).
 *
 * Context: any context but NMI.
 * Return: the slack in effect, ns: @slack_ns rounded down to a power of
 * two (0 stays 0), or twheel_granularity() for the default.
 */
u64 twheel_timer_set_slack(struct twheel_timer *timer, u64 slack_ns)
{
	unsigned int class = tw_slack_class(granularity_ns, slack_ns);
	unsigned long flags;
	u8 m;

	local_irq_save(flags);
	tw_lock_busy(timer);
	m = READ_ONCE(timer->mode) & TW_MODE_MASK;
	WRITE_ONCE(timer->mode, m | class << TW_SLACK_SHIFT);
	/* Pairs with the acquire in tw_lock_busy()/tw_read_settled(). */
	atomic_long_fetch_andnot_release(TW_BUSY, &timer->state);
	local_irq_restore(flags);
	return tw_class_slack(granularity_ns, class);
}
EXPORT_SYMBOL_GPL(twheel_timer_set_slack);

/**
 * __twheel_timer_init - initialise a timer; use twheel_timer_init()
 * @timer: the timer
 * @func: the callback
 * @flags: 0 or %TWHEEL_F_HARDIRQ; %TWHEEL_F_PROCESS and %TWHEEL_F_PERIODIC
 *	are refused (see twheel_timer_init())
 * @name: lockdep name
 * @key: lockdep class
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_timer_init(struct twheel_timer *timer, twheel_fn_t func,
			 unsigned int flags, const char *name,
			 struct lock_class_key *key)
{
	/*
	 * Both flags make twheel treat the timer as the first member of a
	 * bigger structure (a struct twheel_work_timer or a struct
	 * twheel_periodic_timer): on a plain timer it would write past the
	 * object. Refuse them; the timer is a one-shot with a softirq callback.
	 */
	if (flags & ~TWHEEL_F_HARDIRQ)
		pr_err("%s: flags %#x refused: use twheel_work_timer_init() or twheel_periodic_timer_init()\n",
		       name, flags & ~TWHEEL_F_HARDIRQ);
	/* On PREEMPT_RT, callbacks stay out of hard interrupts (hrtimer's rule). */
	flags &= IS_ENABLED(CONFIG_PREEMPT_RT) ? 0 : TWHEEL_F_HARDIRQ;
	tw_timer_setup(timer, func, flags, name, key);
}
EXPORT_SYMBOL_GPL(__twheel_timer_init);

/**
 * __twheel_periodic_timer_init - initialise a timer that may be periodic;
 *	use twheel_periodic_timer_init()
 * @pt: the timer
 * @func: the callback, run in softirq context
 * @name: lockdep name
 * @key: lockdep class
 *
 * Context: any context; the timer must not be in use.
 */
void __twheel_periodic_timer_init(struct twheel_periodic_timer *pt,
				  twheel_fn_t func, const char *name,
				  struct lock_class_key *key)
{
	tw_timer_setup(&pt->timer, func, TWHEEL_F_PERIODIC, name, key);
	pt->period = 0;
}
EXPORT_SYMBOL_GPL(__twheel_periodic_timer_init);

/**
 * twheel_timer_set_cpu - choose the CPU whose wheel runs the timer
 * @timer: the timer
 * @cpu: a possible CPU, or %TWHEEL_ANY_CPU for the CPU that arms it
 *
 * Takes effect at the next arming. While @cpu is offline, its timers run on
 * another CPU.
 *
 * Context: any context.
 * Return: 0, or -EINVAL for an impossible CPU.
 */
int twheel_timer_set_cpu(struct twheel_timer *timer, int cpu)
{
	if (cpu != TWHEEL_ANY_CPU &&
	    (cpu < 0 || cpu >= nr_cpu_ids || !cpu_possible(cpu)))
		return -EINVAL;
	WRITE_ONCE(timer->target_cpu, cpu);
	return 0;
}
EXPORT_SYMBOL_GPL(twheel_timer_set_cpu);
