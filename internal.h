/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: declarations shared between the module's own files.
 */
#ifndef _TWHEEL_INTERNAL_H
#define _TWHEEL_INTERNAL_H

#include <linux/container_of.h>
#include <linux/types.h>
#include <linux/ktime.h>

#include "twheel.h"

struct twheel_clock_link;
struct twheel_timer;

/* twheel.c: the core, brought up and down by main.c */
int twheel_core_init(void);
void twheel_core_exit(void);

/* chardev.c: /dev/twheel, registered by main.c once the core is up */
int twheel_chardev_init(void);
void twheel_chardev_exit(void);

/*
 * twheel_timer::flags, beside TWHEEL_F_*: a timer of /dev/twheel, set by
 * chardev's files once at init. Its precise runs are spaced by the core's
 * coalescing floor (precise_per_tick); a kernel caller's are not, as
 * hrtimer's are not.
 */
#define TW_F_RATED		0x80u
/*
 * twheel_timer::flags: beside %TW_F_RATED, a timer of a file whose user
 * is held to a share of each CPU's precise user heap (precise.c): the
 * timer is the pt.timer of a struct tw_shared_timer, whose share counts
 * the user's entries. Set by chardev's files once at init, unless the
 * opener had CAP_SYS_RESOURCE (as the per-user cap).
 */
#define TW_F_SHARED		0x40u

/**
 * struct tw_share - a user's share of the precise user heaps (precise.c)
 * @held: per CPU, the entries of that CPU's user heap the user's timers
 *	hold; changed only by the owner of that CPU's wheel
 */
struct tw_share {
	unsigned int __percpu	*held;
};

/**
 * struct tw_shared_timer - how the core sees a %TW_F_SHARED timer
 * @pt: the timer, as its owner embeds it (the core is given &pt.timer)
 * @share: its user's share; set before the first arming, constant
 *	while the timer lives
 *
 * The precise stage reaches a user's count through these core types
 * alone: /dev/twheel's timer (struct twheel_fd_timer, fd.h) has this
 * layout as one view of its first member, so the core includes nothing
 * of the chardev.
 */
struct tw_shared_timer {
	struct twheel_periodic_timer	pt;
	struct tw_share			*share;
};

/*
 * Whose timer @t is, for a run that sets a burst aside (tw_wheel_hold()):
 * for a timer of /dev/twheel (%TW_F_RATED), its user's, as the precise
 * share counts it (the user at the top of the owner chain of user
 * namespaces); 0 for the kernel's, which no run sets aside. Two loads
 * from memory the timer's expiry touches anyway.
 */
static __always_inline unsigned long tw_timer_owner(const struct twheel_timer *t)
{
	if (!(t->flags & TW_F_RATED))
		return 0;
	return (__force unsigned long)container_of(t, struct tw_shared_timer,
						   pt.timer)->share->held;
}

/* twheel.c, for fd_ops.c's hot paths, interrupts off (see there) */
bool twheel_cancel_idle_irqsoff(struct twheel_timer *timer, bool *running);
int twheel_arm_irqsoff(struct twheel_timer *timer, ktime_t deadline,
		       u64 period, enum twheel_mode mode, unsigned int slack);
unsigned int twheel_slack_class(u64 slack_ns);
void twheel_sync_annotate(struct twheel_timer *timer);
bool twheel_cancel_sync_quiet(struct twheel_timer *timer);

/* twheel.c, for the KUnit tests only: kick IPIs @cpu received so far. */
u64 twheel_kicks(int cpu);
/* twheel.c, for the KUnit tests only: expiries parked, all CPUs. */
u64 twheel_parks(void);
/* twheel.c, for the KUnit tests only: runs of @cpu's wheel that yielded. */
u64 twheel_yields(int cpu);
u64 twheel_deferrals(int cpu);
u64 twheel_holds(int cpu);
bool twheel_cpu_idle(int cpu);
/*
 * cpu.c, for the KUnit tests and the bench module: programmings of @cpu's
 * wheel hrtimer (TWHEEL_INTERNAL namespace, see compat.h).
 */
u64 twheel_programs(int cpu);
u64 twheel_run_ns(int cpu);

/*
 * twheel_arm() and twheel_clock_arm_periodic(): @period matches @mode (0 for
 * a one-shot arming, 1..KTIME_MAX for a periodic one). Return: 0 or -EINVAL.
 */
static inline int tw_check_mode(enum twheel_mode mode, u64 period)
{
	switch (mode) {
	case TWHEEL_ONESHOT:
		return period ? -EINVAL : 0;
	case TWHEEL_FIXED_RATE:
	case TWHEEL_FIXED_DELAY:
		return !period || period > KTIME_MAX ? -EINVAL : 0;
	default:
		return -EINVAL;
	}
}

/* clock.c: timers on CLOCK_REALTIME and CLOCK_BOOTTIME (see there) */
enum {
	TW_CLK_MONO,		/* CLOCK_MONOTONIC: the wheels' own clock */
	TW_CLK_REAL,		/* CLOCK_REALTIME */
	TW_CLK_BOOT,		/* CLOCK_BOOTTIME */
	TW_CLK_REAL_ALARM,	/* CLOCK_REALTIME_ALARM: REAL, waking a suspend */
	TW_CLK_BOOT_ALARM,	/* CLOCK_BOOTTIME_ALARM: BOOT, waking a suspend */
	TW_CLK_NR,
};

/* The clock an alarm clock counts; any other clock counts itself. */
static inline int tw_clock_base(int clock)
{
	switch (clock) {
	case TW_CLK_REAL_ALARM:
		return TW_CLK_REAL;
	case TW_CLK_BOOT_ALARM:
		return TW_CLK_BOOT;
	default:
		return clock;
	}
}

static inline bool tw_clock_is_alarm(int clock)
{
	return clock == TW_CLK_REAL_ALARM || clock == TW_CLK_BOOT_ALARM;
}

/* What an expiry of a clock timer means: twheel_clock_link_expire(). */
enum twheel_clock_verdict {
	TWHEEL_CLOCK_FIRE,	/* the clock reached the deadline */
	TWHEEL_CLOCK_SET,	/* a set ended a cancel-on-set arming */
	TWHEEL_CLOCK_LATER,	/* the clock went back: filed again */
	TWHEEL_CLOCK_STALE,	/* cancelled meanwhile: nothing to report */
};

/**
 * struct twheel_clock_expiry - what an expiry of a clock timer reports
 * @now: the time on the link's clock when it was decided
 * @deadline: the deadline of the latest expiry it stands for, ns of that
 *	clock (for %TWHEEL_CLOCK_SET the deadline the set ended)
 * @count: expiries it stands for: 1, plus for a fixed-rate periodic link
 *	the periods that passed unreported
 */
struct twheel_clock_expiry {
	ktime_t		now;
	ktime_t		deadline;
	u64		count;
};

int twheel_clock_init(void);
void twheel_clock_exit(void);
int twheel_clock_index(clockid_t clockid);
ktime_t twheel_clock_read(int clock);
int twheel_clock_link_arm(struct twheel_clock_link *link,
			  struct twheel_timer *timer, int clock,
			  ktime_t deadline, u64 period, enum twheel_mode mode,
			  unsigned int flags);
bool twheel_clock_link_unlink(struct twheel_clock_link *link);
bool twheel_clock_link_read(struct twheel_clock_link *link, ktime_t *deadline,
			    u64 *period);
enum twheel_clock_verdict twheel_clock_link_expire(struct twheel_clock_link *link,
						   bool park,
						   struct twheel_clock_expiry *ex);
enum twheel_clock_verdict twheel_clock_link_catch_up(struct twheel_clock_link *link,
						     struct twheel_clock_expiry *ex);
bool twheel_clock_link_refile(struct twheel_clock_link *link);
/* clock.c, for the KUnit tests only: simulate a set of @clockid. */
void twheel_clock_test_set(clockid_t clockid, ktime_t delta, bool notify);

#endif /* _TWHEEL_INTERNAL_H */
