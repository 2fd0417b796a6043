/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: per-CPU hierarchical timing wheels driven by hrtimers.
 *
 * The in-kernel API. A struct twheel_timer is embedded by its user, like a
 * timer_list: scheduling never allocates. See docs/design.md for the
 * design.
 */
#ifndef _TWHEEL_H
#define _TWHEEL_H

#include <linux/types.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/lockdep_types.h>
#include <linux/build_bug.h>

struct twheel_timer;

/**
 * typedef twheel_fn_t - a timer callback
 * @timer: the timer that expired
 * @missed: for a fixed-rate periodic timer, how many whole periods were
 *	skipped since the previous call because the callback ran late (an
 *	overrun count, as hrtimer_forward() gives); otherwise 0.
 *
 * Runs in softirq context, or in process context for a timer initialised
 * with %TWHEEL_F_PROCESS; a timer initialised with %TWHEEL_F_HARDIRQ may
 * have it run in hard interrupt context instead. A timer's callback never
 * runs concurrently with itself.
 */
typedef void (*twheel_fn_t)(struct twheel_timer *timer, u64 missed);

/*
 * twheel_timer::flags, each set only by the initialiser of the structure
 * that embeds the timer: %TWHEEL_F_PROCESS by twheel_work_timer_init() (a
 * struct twheel_work_timer), %TWHEEL_F_PERIODIC by that and by
 * twheel_periodic_timer_init() (a struct twheel_periodic_timer). They tell
 * twheel where the timer's period lives. twheel_timer_init() refuses both,
 * at build time when the flags are a constant, else by ignoring them with
 * an error in the log.
 */
#define TWHEEL_F_PROCESS	0x1u	/* callback may sleep: runs on a workqueue */
#define TWHEEL_F_PERIODIC	0x2u	/* embedder holds a period: may be periodic */
#define TWHEEL_F_ALL		(TWHEEL_F_PROCESS | TWHEEL_F_PERIODIC)
/*
 * twheel_timer_init()'s one flag: the callback is safe in hard interrupt
 * context (it takes no lock that is not irq-safe, and on PREEMPT_RT no
 * sleeping one), so a precise timer (twheel_timer_set_slack() below the
 * tick) may run it from its CPU's hrtimer interrupt, as an hrtimer started
 * in a _HARD mode does: without the softirq hop. It always runs with
 * interrupts off: in hard interrupt context, or in the wheel's softirq
 * when that fired the timer (a default slack, or a run that came after
 * the deadline). Without PREEMPT_RT only; there, as hrtimer does for its
 * soft timers, the flag is dropped.
 */
#define TWHEEL_F_HARDIRQ	0x4u
/*
 * twheel_timer_init()'s other flag, as timer_list's TIMER_PINNED: the timer
 * is pinned to the CPU that arms it (twheel_timer_set_cpu() with
 * %TWHEEL_THIS_CPU). Without it a timer is movable (%TWHEEL_ANY_CPU).
 */
#define TWHEEL_F_PINNED		0x8u

/* Periodic modes for twheel_arm(). */
enum twheel_mode {
	TWHEEL_ONESHOT = 0,
	TWHEEL_FIXED_RATE = 1,	/* next = previous deadline + period */
	TWHEEL_FIXED_DELAY = 2,	/* next = end of callback + period */
};

/*
 * twheel_timer_set_cpu()'s two CPUs that are not a CPU number.
 * %TWHEEL_ANY_CPU, every timer's default: movable. It goes to the wheel of
 * the CPU that arms it, unless that CPU is idle (the arming runs in an
 * interrupt that woke it, or in a callback there): then to an awake CPU
 * near it, so that the timer does not wake the idle one again, as
 * timer_list's non-pinned timers go (get_nohz_timer_target()). Its
 * callback may then run on another CPU than the one that armed it. A
 * timer with a slack below the tick (twheel_timer_set_slack()) stays on
 * the arming CPU, as a pinned one.
 * %TWHEEL_THIS_CPU: pinned to the CPU that arms it, idle or not.
 */
#define TWHEEL_ANY_CPU		(-1)
#define TWHEEL_THIS_CPU		(-2)

/**
 * struct twheel_timer - a timer embedded by its user
 *
 * All fields are private to twheel. Ownership (see "Ownership and locking"
 * in docs/design.md):
 * @state is the only field written by more than one CPU, and only with
 * atomic read-modify-write; @entry, @bucket and @linked_seq are touched only
 * by the CPU whose wheel holds the timer, with interrupts disabled;
 * @expires, @mode (which holds the slack of twheel_timer_set_slack() in
 * its upper bits) and @order are written only under the TW_BUSY bit of
 * @state. 64 bytes on 64-bit without lockdep, one cache line: what only
 * some timers need lives in the structure that embeds them (the period in
 * struct twheel_periodic_timer or struct twheel_work_timer, the group link
 * in struct twheel_group_member).
 */
struct twheel_timer {
	struct list_head	entry;		/* bucket or expired list */
	struct llist_node	llnode;		/* submission queue of @cpu */
	atomic_long_t		state;		/* TW_* bits + arming sequence */
	u64			expires;	/* deadline, ns of CLOCK_MONOTONIC */
	twheel_fn_t		func;
	u32			linked_seq;	/* owner: arming it was linked for */
	u32			order;		/* FIFO among equal deadlines */
	s16			cpu;		/* wheel that holds it */
	s16			target_cpu;	/* TWHEEL_ANY_CPU, _THIS_CPU or a CPU */
	u8			mode;		/* enum twheel_mode, slack */
	u8			flags;		/* TWHEEL_F_*, set at init */
	u16			bucket;		/* owner: index of its bucket */
#ifdef CONFIG_LOCKDEP
	struct lockdep_map	lockdep_map;
#endif
};

/**
 * struct twheel_periodic_timer - a timer that may be armed periodically
 * @timer: the timer; pass &pt->timer to every twheel_* call
 * @period: private: ns between expiries of the current arming, written
 *	under TW_BUSY as twheel_timer::expires is
 *
 * A plain struct twheel_timer is one-shot only: twheel_arm() with a period
 * refuses it with -EINVAL, so one-shot users do not pay for the period.
 */
struct twheel_periodic_timer {
	struct twheel_timer	timer;
	u64			period;
};

/**
 * struct twheel_work_timer - a timer whose callback runs in process context
 * @timer: the timer; pass &wt->timer to every twheel_* call
 * @period: private: as twheel_periodic_timer::period (work timers may be
 *	periodic)
 * @work: private
 * @run_expires: private
 * @run_period: private
 * @run_mode: private
 *
 * The run_* fields are the expiry the work was queued for: written by the
 * owner CPU once it claimed the expiry (TW_RUNNING), before queue_work(),
 * and read by the work, which queue_work() orders after those writes. A
 * re-arming while the work is queued changes the timer, not these.
 */
struct twheel_work_timer {
	struct twheel_timer	timer;
	u64			period;
	struct work_struct	work;
	u64			run_expires;	/* deadline of the queued expiry */
	u64			run_period;	/* its period */
	u8			run_mode;	/* its enum twheel_mode */
};

/**
 * struct twheel_group_member - a timer's membership of a group
 * @node: private: in twheel_group::timers, under twheel_group::lock
 * @timer: private: the member, set by twheel_group_add()
 *
 * Embedded by the user next to the timer it links (of any kind: plain,
 * periodic or work), only where the timer belongs to a group.
 */
struct twheel_group_member {
	struct list_head	node;
	struct twheel_timer	*timer;
};

/**
 * struct twheel_group - a set of timers that can be cancelled at once
 * @lock: protects @timers and @shutdown
 * @timers: members, struct twheel_group_member linked through their node
 * @count: number of members
 * @shutdown: set by twheel_group_shutdown_sync(); members refuse re-arming
 */
struct twheel_group {
	spinlock_t		lock;		/* protects the fields below */
	struct list_head	timers;
	unsigned int		count;
	bool			shutdown;
};

/*
 * Timers on CLOCK_REALTIME and CLOCK_BOOTTIME (clock.c)
 * =====================================================
 *
 * A struct twheel_clock_timer expires when its clock, fixed at
 * initialisation, reaches its deadline: CLOCK_MONOTONIC, CLOCK_REALTIME or
 * CLOCK_BOOTTIME, as hrtimer and timerfd do. It is one-shot
 * (twheel_clock_arm()) or periodic (twheel_clock_arm_periodic(), the period
 * counted on the same clock), and its callback runs in softirq context.
 * The wheel stays monotonic: the timer is filed at the monotonic time its
 * clock is expected to reach the deadline, and filed again when the clock
 * is set (or time spent in suspend is added to CLOCK_BOOTTIME), so that it
 * fires promptly after a clock set forward past its deadline and never
 * before its clock reaches it. With %TWHEEL_CLOCK_CANCEL_ON_SET
 * (CLOCK_REALTIME[_ALARM] only) a set of the clock ends the timer instead,
 * periodic or not: its callback is called once with %TWHEEL_CLOCK_WAS_SET, as
 * timerfd's TFD_TIMER_CANCEL_ON_SET reports ECANCELED. Like timerfd, a
 * resume from suspend counts as a set.
 *
 * CLOCK_REALTIME_ALARM and CLOCK_BOOTTIME_ALARM count as CLOCK_REALTIME and
 * CLOCK_BOOTTIME (cancel-on-set on the former), and a suspended machine is
 * woken for their deadlines, through the kernel's alarmtimer and the RTC.
 * No capability is checked for in-kernel callers; /dev/twheel checks
 * CAP_WAKE_ALARM, as timerfd does.
 */
struct twheel_clock_timer;

/* twheel_clock_fn_t's @flags */
#define TWHEEL_CLOCK_WAS_SET		0x1u	/* cancelled by a clock set */

/**
 * typedef twheel_clock_fn_t - the callback of a struct twheel_clock_timer
 * @ct: the timer
 * @flags: 0 when its clock reached the deadline; %TWHEEL_CLOCK_WAS_SET
 *	when a timer armed with %TWHEEL_CLOCK_CANCEL_ON_SET was ended by a
 *	set of its clock (before the deadline was reached)
 * @missed: for a fixed-rate periodic timer, how many whole periods of its
 *	clock passed unreported before this expiry (it ran late, or the clock
 *	was set forward past them), as hrtimer_forward() counts overruns;
 *	otherwise 0
 *
 * Runs in softirq context, once per arming of a one-shot timer and once
 * per expiry of a periodic one, never in a burst; never concurrently with
 * itself. It may arm the timer again.
 */
typedef void (*twheel_clock_fn_t)(struct twheel_clock_timer *ct,
				  unsigned int flags, u64 missed);

/* twheel_clock_arm()'s @flags */
#define TWHEEL_CLOCK_CANCEL_ON_SET	0x1u	/* CLOCK_REALTIME: end on a set */

/**
 * struct twheel_clock_link - what a timer on a clock other than the wheel's
 *	remembers; private to twheel
 * @node: on the armed list of its clock while the arming has not been
 *	reported (one-shot) or cancelled or ended by a set (periodic): while
 *	it is pending; under that clock's lock (clock.c)
 * @timer: the core timer the link files; set by each arming. Always filed
 *	one-shot: clock.c files a periodic link's timer for each expiry.
 * @deadline: the next deadline, ns of the link's clock: a periodic link's
 *	moves a period on (or more, counting missed periods) at each expiry
 * @offset: the clock's offset from CLOCK_MONOTONIC when it was armed
 *	(a cancel-on-set arming ends when the offset changes)
 * @period: ns of the link's clock between expiries, or 0 (one-shot)
 * @clock: index of its clock in clock.c; changed only while unlinked
 * @flags: %TWHEEL_CLOCK_CANCEL_ON_SET or 0
 * @was_set: a set ended it; its expiry reports %TWHEEL_CLOCK_WAS_SET
 * @mode: enum twheel_mode of the arming
 *
 * Every field is written under the lock of the link's clock, by the
 * arming, the cancel, the expiry or the clock-set work (clock.c); the
 * owner of the link serialises its armings and cancels.
 */
struct twheel_clock_link {
	struct list_head	node;
	struct twheel_timer	*timer;
	ktime_t			deadline;
	ktime_t			offset;
	u64			period;
	u8			clock;
	u8			flags;
	bool			was_set;
	u8			mode;
};

/**
 * struct twheel_clock_timer - a one-shot or periodic timer on
 *	CLOCK_MONOTONIC, CLOCK_REALTIME or CLOCK_BOOTTIME
 * @timer: private: the core timer, on the monotonic wheel
 * @link: private: the clock, deadline, period and membership of the
 *	clock's list
 * @func: private: the callback
 *
 * 128 bytes on x86-64 without lockdep. Pass it to the twheel_clock_*()
 * functions only, not to twheel_arm() and the other functions of a struct
 * twheel_timer.
 */
struct twheel_clock_timer {
	struct twheel_timer		timer;
	struct twheel_clock_link	link;
	twheel_clock_fn_t		func;
};

void __twheel_clock_timer_init(struct twheel_clock_timer *ct,
			       clockid_t clockid, twheel_clock_fn_t func,
			       const char *name, struct lock_class_key *key);

/**
 * twheel_clock_timer_init - initialise a timer on a clock
 * @ct: the timer, a struct twheel_clock_timer (type-checked)
 * @clockid: %CLOCK_MONOTONIC, %CLOCK_REALTIME, %CLOCK_BOOTTIME,
 *	%CLOCK_REALTIME_ALARM or %CLOCK_BOOTTIME_ALARM; any other makes every
 *	twheel_clock_arm() fail with -EINVAL
 * @func: the callback, called in softirq context
 *
 * Context: any context. The timer must not be in use.
 */
#define twheel_clock_timer_init(ct, clockid, func)			\
	do {								\
		static struct lock_class_key __key;			\
		__twheel_clock_timer_init((ct), (clockid), (func), #ct,	\
					  &__key);			\
	} while (0)

int twheel_clock_arm(struct twheel_clock_timer *ct, ktime_t deadline,
		     unsigned int flags);
int twheel_clock_arm_periodic(struct twheel_clock_timer *ct, ktime_t deadline,
			      u64 period, enum twheel_mode mode,
			      unsigned int flags);
bool twheel_clock_cancel(struct twheel_clock_timer *ct);
bool twheel_clock_cancel_sync(struct twheel_clock_timer *ct);
bool twheel_clock_pending(struct twheel_clock_timer *ct);
ktime_t twheel_clock_now(clockid_t clockid);

void __twheel_timer_init(struct twheel_timer *timer, twheel_fn_t func,
			 unsigned int flags, const char *name,
			 struct lock_class_key *key);
void __twheel_work_timer_init(struct twheel_work_timer *wt, twheel_fn_t func,
			      const char *name, struct lock_class_key *key);
void __twheel_periodic_timer_init(struct twheel_periodic_timer *pt,
				  twheel_fn_t func, const char *name,
				  struct lock_class_key *key);

/**
 * twheel_timer_init - initialise a timer before its first use
 * @timer: the timer
 * @func: the callback
 * @flags: 0, or either or both of %TWHEEL_F_HARDIRQ: the callback may run
 *	in hard interrupt context when the timer has a slack below the tick
 *	(it then fires from its CPU's hrtimer interrupt, as a _HARD hrtimer
 *	does; otherwise, and always on PREEMPT_RT, in softirq context); and
 *	%TWHEEL_F_PINNED: the timer stays on the CPU that arms it, even an
 *	idle one (else it is movable: see %TWHEEL_ANY_CPU). A timer whose callback
 *	may sleep is a struct twheel_work_timer, set up with
 *	twheel_work_timer_init(); a periodic one a struct
 *	twheel_periodic_timer, set up with twheel_periodic_timer_init():
 *	%TWHEEL_F_PROCESS or %TWHEEL_F_PERIODIC here fails the build, or is
 *	ignored if not constant.
 *
 * Context: any context. The timer must not be in use.
 */
#define twheel_timer_init(timer, func, flags)				\
	do {								\
		static struct lock_class_key __key, __hardirq_key;	\
		unsigned int __flags = (flags);				\
		BUILD_BUG_ON(__builtin_constant_p(flags) &&		\
			     ((flags) & TWHEEL_F_ALL));			\
		/* Callbacks in hard interrupt context: a class apart. */ \
		__twheel_timer_init((timer), (func), __flags, #timer,	\
				    __flags & TWHEEL_F_HARDIRQ ?	\
				    &__hardirq_key : &__key);		\
	} while (0)

/**
 * twheel_work_timer_init - initialise a timer whose callback may sleep
 * @wt: the timer, a struct twheel_work_timer (type-checked)
 * @func: the callback, called in process context on the twheel workqueue
 *
 * Context: any context. The timer must not be in use.
 */
#define twheel_work_timer_init(wt, func)				\
	do {								\
		static struct lock_class_key __key;			\
		__twheel_work_timer_init((wt), (func), #wt, &__key);	\
	} while (0)

/**
 * twheel_periodic_timer_init - initialise a timer that may be periodic
 * @pt: the timer, a struct twheel_periodic_timer (type-checked)
 * @func: the callback, called in softirq context
 *
 * Context: any context. The timer must not be in use.
 */
#define twheel_periodic_timer_init(pt, func)				\
	do {								\
		static struct lock_class_key __key;			\
		__twheel_periodic_timer_init((pt), (func), #pt, &__key); \
	} while (0)

int twheel_timer_set_cpu(struct twheel_timer *timer, int cpu);

/* twheel_timer_set_slack(): the default slack, one tick of the wheel. */
#define TWHEEL_SLACK_DEFAULT	U64_MAX

u64 twheel_timer_set_slack(struct twheel_timer *timer, u64 slack_ns);

/**
 * twheel_clock_timer_set_slack - how late a clock timer may fire
 * @ct: the timer
 * @slack_ns: as for twheel_timer_set_slack()
 *
 * Context: any context but NMI.
 * Return: as twheel_timer_set_slack().
 */
static inline u64 twheel_clock_timer_set_slack(struct twheel_clock_timer *ct,
					       u64 slack_ns)
{
	return twheel_timer_set_slack(&ct->timer, slack_ns);
}
int twheel_arm(struct twheel_timer *timer, ktime_t deadline, u64 period,
	       enum twheel_mode mode);
int twheel_schedule(struct twheel_timer *timer, u64 delay_ns);
int twheel_schedule_at(struct twheel_timer *timer, ktime_t deadline);
bool twheel_cancel(struct twheel_timer *timer);
/*
 * Every arming ends exactly once: its callback runs, a twheel_cancel() or
 * twheel_cancel_sync() that stopped it returns true, or a later arming finds
 * it pending and returns 1. twheel_cancel_sync() stops at most one arming,
 * as timer_delete_sync() does (see its kernel-doc in twheel.c).
 */
bool twheel_cancel_sync(struct twheel_timer *timer);
bool twheel_cancel_running(struct twheel_timer *timer);
void twheel_shutdown_sync(struct twheel_timer *timer);
bool twheel_pending(const struct twheel_timer *timer);
bool twheel_running(const struct twheel_timer *timer);
ktime_t twheel_deadline(const struct twheel_timer *timer);
ktime_t twheel_granularity(void);

void twheel_group_init(struct twheel_group *group);
int twheel_group_add(struct twheel_group *group,
		     struct twheel_group_member *member,
		     struct twheel_timer *timer);
void twheel_group_del(struct twheel_group *group,
		      struct twheel_group_member *member);
unsigned int twheel_group_cancel_sync(struct twheel_group *group);
unsigned int twheel_group_shutdown_sync(struct twheel_group *group);

#endif /* _TWHEEL_H */
