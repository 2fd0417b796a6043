/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the precise final stage of a wheel (precise.c).
 *
 * A timer whose slack is below the wheel's tick (twheel_timer_set_slack())
 * is filed in the wheel while it is far, at the tick before the one its
 * deadline falls in (rounded down, where every other timer's is rounded
 * up), and when that tick comes it moves here: a binary min-heap, one per
 * wheel, ordered by the latest time each timer may fire (its deadline plus
 * its slack; arming order among equals). The CPU's hrtimer is programmed
 * for the heap's first such time, which serves every window in the heap
 * (hrtimer's own rule for ranges), and a run takes from the heap every
 * timer at its top whose deadline has come: coalesced within their slack,
 * never early. Like the rest of the wheel, no clocks, no CPUs, no locks:
 * time is an argument; the owner serialises every call. The stage is the
 * wheel's lowest layer: it knows nothing of the wheel (wheel.h calls it,
 * never the other way) nor of /dev/twheel (a user's share is reached
 * through the core's struct tw_shared_timer, internal.h).
 *
 * The stage has three heaps: one for the kernel's callers, one for the
 * timers of /dev/twheel (%TW_F_RATED), so that the core can space the runs
 * userspace causes (its coalescing floor, tw_hrtimer_fn()) without holding
 * back the kernel's, and so that userspace cannot fill the kernel's heap;
 * and one for the kernel's timers whose callbacks may run in hard
 * interrupt context (%TWHEEL_F_HARDIRQ), which the core fires from a hard
 * hrtimer of its own (tw_hard_fn()): tw_precise_pop_due() and
 * tw_precise_next() leave that heap to tw_precise_pop_hard() (the wheel's
 * tw_wheel_pop_hard()).
 * Each holds at most TW_PRECISE_MAX timers: past that, a timer keeps the
 * wheel's precision (at most one tick late, never early), so no user makes
 * a section with interrupts off longer than log2(TW_PRECISE_MAX) steps of
 * a heap operation. In the user heap, each user of /dev/twheel holds at
 * most tw_precise_per_user of them (%TW_F_SHARED, precise.c says how):
 * past that, its own timers keep the wheel's precision, and other users'
 * still find room.
 */
#ifndef _TWHEEL_PRECISE_H
#define _TWHEEL_PRECISE_H

#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/list.h>
#include <linux/types.h>

struct twheel_timer;

/* Most timers in one heap of a wheel: 12 levels, 64 KiB per CPU each. */
#define TW_PRECISE_MAX		4096
/* Most timers of one user in one user heap (module parameter, precise.c). */
extern unsigned int tw_precise_per_user;
/*
 * twheel_timer::bucket of a timer in a heap: TW_PRECISE_BASE, plus
 * TW_PRECISE_MAX times its heap's kind, plus its index.
 */
#define TW_PRECISE_BASE		0x8000

/* The heaps of a stage, by whose timers they hold. */
enum tw_precise_kind {
	TW_PRECISE_KERNEL,
	TW_PRECISE_USER,
	TW_PRECISE_HARD,	/* the kernel's, %TWHEEL_F_HARDIRQ */
	TW_PRECISE_KINDS
};

/*
 * twheel_timer::mode: bits 0-1 hold enum twheel_mode, bits 2-7 the slack
 * class. 0 is the default (one tick of the wheel). A class with
 * TW_SLACK_PRECISE set is below the tick (a precise timer, one bit to
 * test): TW_SLACK_NONE for no slack, else TW_SLACK_PRECISE | c for a
 * slack of 2^(c - 2) ns (the tick is at most 1 s < 2^30 ns, so c <= 31).
 * A class k from 1 to TW_SLACK_COARSE_MAX is coarse: a slack of 2^k
 * ticks; the timer fires at the first multiple of 2^k ticks from its
 * deadline on, so that timers of one class fire together on every CPU.
 * At most 2^16 ticks (65 s at the default tick): a longer wait saves no
 * more wake-ups that matter, and a slack of "any time" would otherwise
 * mean weeks.
 */
#define TW_MODE_MASK		0x3u
#define TW_SLACK_SHIFT		2
#define TW_SLACK_PRECISE	0x20u
#define TW_SLACK_NONE		(TW_SLACK_PRECISE | 1u)
#define TW_SLACK_COARSE_MAX	16u

/**
 * struct tw_precise_slot - one entry of the heap
 * @key: ns of CLOCK_MONOTONIC by which the timer must have fired: its
 *	deadline plus its slack
 * @t: the timer
 */
struct tw_precise_slot {
	u64			key;
	struct twheel_timer	*t;
};

/**
 * struct tw_precise_heap - one heap of the stage
 * @slot: TW_PRECISE_MAX slots, a binary min-heap of @n by key
 * @n: timers in the heap
 * @base: twheel_timer::bucket of the heap's first slot
 */
struct tw_precise_heap {
	struct tw_precise_slot	*slot;
	unsigned int		n;
	u16			base;
};

/**
 * struct tw_precise - a wheel's precise final stage
 * @heap: the kernel's heap and the user heap (enum tw_precise_kind)
 * @n: timers in both
 * @members: the timers of the heaps, linked through twheel_timer::entry, so
 *	that a timer in a heap counts as linked (a non-empty entry)
 * @cpu: whose entry of a user's per-CPU count (%TW_F_SHARED) this stage's
 *	user heap charges: the wheel's CPU, set by cpu.c; 0 after
 *	tw_precise_init(), for the virtual wheels of the KUnit tests
 *
 * Owned by the wheel that embeds it; the owner serialises every call.
 */
struct tw_precise {
	struct tw_precise_heap	heap[TW_PRECISE_KINDS];
	unsigned int		n;
	struct list_head	members;
	int			cpu;
};

int tw_precise_init(struct tw_precise *p, int node);
void tw_precise_free(struct tw_precise *p);
u64 tw_slack_class(u64 gran, u64 slack_ns);
u64 tw_class_slack(u64 gran, unsigned int class);
u64 tw_precise_add(struct tw_precise *p, struct twheel_timer *t, u64 gran);
void tw_precise_del(struct tw_precise *p, struct twheel_timer *t);
struct twheel_timer *tw_precise_pop_due(struct tw_precise *p, u64 now_ns);
struct twheel_timer *tw_precise_pop_hard(struct tw_precise *p, u64 now_ns);
struct twheel_timer *tw_precise_pop_any(struct tw_precise *p);

/**
 * tw_precise_next_kind - when one heap next wants the CPU
 * @p: the stage
 * @kind: the heap
 *
 * Return: the key at the heap's top, KTIME_MAX when it is empty.
 */
static inline ktime_t tw_precise_next_kind(const struct tw_precise *p,
					   enum tw_precise_kind kind)
{
	const struct tw_precise_heap *h = &p->heap[kind];

	return h->n ? (ktime_t)h->slot[0].key : KTIME_MAX;
}

/**
 * tw_precise_in_hard - is a timer in the hard heap
 * @t: a timer of the wheel that owns the stage
 *
 * Return: true if @t waits in the stage's %TW_PRECISE_HARD heap.
 */
static inline bool tw_precise_in_hard(const struct twheel_timer *t)
{
	unsigned int b = t->bucket - TW_PRECISE_BASE;

	return b >= TW_PRECISE_HARD * TW_PRECISE_MAX &&
	       b < TW_PRECISE_KINDS * TW_PRECISE_MAX;
}

/**
 * tw_precise_next - when the stage next wants the wheel's own run
 * @p: the stage
 *
 * Return: the earlier key of the kernel's and the user heap's tops,
 * KTIME_MAX when both are empty (the hard heap has its own hrtimer).
 */
static inline ktime_t tw_precise_next(const struct tw_precise *p)
{
	return min(tw_precise_next_kind(p, TW_PRECISE_KERNEL),
		   tw_precise_next_kind(p, TW_PRECISE_USER));
}

/**
 * tw_precise_next_floored - when the stage next wants the CPU, the user
 *	heap held back to a floor
 * @p: the stage
 * @floor: ns before which the user heap may not have the CPU
 *
 * Return: the kernel heap's first key, or the user heap's but not before
 * @floor, whichever is earlier; KTIME_MAX when both are empty.
 */
static inline ktime_t tw_precise_next_floored(const struct tw_precise *p,
					      ktime_t floor)
{
	/* An empty user heap's KTIME_MAX stays KTIME_MAX. */
	return min(tw_precise_next_kind(p, TW_PRECISE_KERNEL),
		   max(tw_precise_next_kind(p, TW_PRECISE_USER), floor));
}

#endif /* _TWHEEL_PRECISE_H */
