/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the pure hierarchical wheel. No clocks, no CPUs, no locks: time
 * is an argument, so KUnit can drive it with a virtual clock. twheel.c owns
 * one per CPU and calls it only on that CPU with interrupts disabled.
 */
#ifndef _TWHEEL_WHEEL_H
#define _TWHEEL_WHEEL_H

#include <linux/bitops.h>
#include <linux/list.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/types.h>

#include "twheel.h"
#include "tw_list.h"

#define TW_BITS_MIN	6	/* 64 buckets: one bitmap word per level */
#define TW_BITS_MAX	8
#define TW_LEVELS_MAX	10
#define TW_NO_BUCKET	0xffff	/* twheel_timer::bucket when not linked */
/* Most due timers of one tick sorted, with interrupts off (tw_sort_due()). */
#define TW_SORT_MAX	4096

/**
 * struct tw_wheel - one hierarchical timing wheel
 * @gran: ns per tick of level 0
 * @bits: log2 of the buckets per level; level L ticks every 2^(bits*L)
 *	level-0 ticks
 * @levels: number of levels
 * @clk: the wheel's time in level-0 ticks: every bucket that starts at or
 *	before @clk has been processed
 * @count: timers linked in buckets or on @expired
 * @pending: one bit per bucket, set while the bucket is not empty
 * @buckets: @levels << @bits lists, FIFO
 * @expired: timers due, sorted by deadline then by arming order
 *
 * Not shared: the owner serialises every call.
 */
struct tw_wheel {
	u64			gran;
	unsigned int		bits;
	unsigned int		levels;
	u64			clk;
	unsigned long		count;
	unsigned long		*pending;
	struct list_head	*buckets;
	struct list_head	expired;
};

unsigned int tw_levels_for(u64 gran, unsigned int bits);
int tw_wheel_init(struct tw_wheel *w, u64 gran, unsigned int bits,
		  u64 now_ns, int node);
void tw_wheel_free(struct tw_wheel *w);
u64 tw_wheel_next(const struct tw_wheel *w);
bool tw_wheel_advance(struct tw_wheel *w, u64 now_ns, unsigned int *budget);
void tw_wheel_forward(struct tw_wheel *w, u64 now_ns);
struct twheel_timer *tw_wheel_pop(struct tw_wheel *w);

/*
 * The arming path's part of the wheel, inline: an arming and a cancel call
 * no function of wheel.c (under emulation a call and its return thunk cost
 * more than the work here). The owner serialises every call, as for the
 * rest.
 */

static inline u64 tw_tick_of(const struct tw_wheel *w, u64 ns)
{
	/* Round up: the bucket of tick e is due no earlier than the deadline. */
	return div64_u64(ns + w->gran - 1, w->gran);
}

static inline unsigned int tw_size(const struct tw_wheel *w)
{
	return 1U << w->bits;
}

/* Link @t for tick @e; return the tick at which its bucket is processed. */
static __always_inline u64 tw_link_tick(struct tw_wheel *w,
					struct twheel_timer *t, u64 e)
{
	unsigned int lvl, idx, shift, top = w->bits * w->levels;
	u64 delta;

	if (e <= w->clk) {
		t->bucket = TW_NO_BUCKET;
		tw_list_add_tail(&t->entry, &w->expired);
		return w->clk;
	}
	delta = e - w->clk;
	for (lvl = 0; lvl < w->levels - 1; lvl++)
		if (delta < (1ULL << (w->bits * (lvl + 1))))
			break;
	if (lvl == w->levels - 1 && top < 64 && delta >= (1ULL << top))
		e = w->clk + (1ULL << top) - 1;		/* park; put back later */
	shift = w->bits * lvl;
	idx = (lvl << w->bits) + ((e >> shift) & (tw_size(w) - 1));
	t->bucket = idx;
	tw_list_add_tail(&t->entry, &w->buckets[idx]);
	__set_bit(idx, w->pending);
	return (e >> shift) << shift;
}

/**
 * tw_wheel_unlink - take a linked timer off its bucket or the expired list
 * @w: the wheel
 * @t: the timer
 */
static __always_inline void tw_wheel_unlink(struct tw_wheel *w,
					    struct twheel_timer *t)
{
	tw_list_del_init(&t->entry);
	/*
	 * After a bucket was moved to the expired list whole, its timers
	 * keep a stale index: testing the bucket itself keeps the bit exact.
	 */
	if (t->bucket != TW_NO_BUCKET && list_empty(&w->buckets[t->bucket]))
		__clear_bit(t->bucket, w->pending);
	t->bucket = TW_NO_BUCKET;
	w->count--;
}

/**
 * tw_wheel_link_tick - link a timer to fire at a given level-0 tick
 * @w: the wheel
 * @t: an unlinked timer
 * @tick: the tick; at or before the wheel's clock means due now
 *
 * Return: the tick at which the wheel must next look at @t's bucket.
 */
static __always_inline u64 tw_wheel_link_tick(struct tw_wheel *w,
					      struct twheel_timer *t, u64 tick)
{
	w->count++;
	return tw_link_tick(w, t, tick);
}

/**
 * tw_wheel_link - link a timer by its deadline
 * @w: the wheel
 * @t: an unlinked timer; t->expires is its deadline in ns
 *
 * Return: the tick at which the wheel must next look at @t's bucket.
 */
static __always_inline u64 tw_wheel_link(struct tw_wheel *w,
					 struct twheel_timer *t)
{
	return tw_wheel_link_tick(w, t, tw_tick_of(w, READ_ONCE(t->expires)));
}

/**
 * tw_wheel_relink - link a timer by its deadline, off wherever it was
 * @w: the wheel
 * @t: a timer linked on @w, or not linked at all (an empty t->entry)
 *
 * The arming path in one call into the wheel: unlink if linked, then link.
 *
 * Return: the tick at which the wheel must next look at @t's bucket.
 */
static __always_inline u64 tw_wheel_relink(struct tw_wheel *w,
					   struct twheel_timer *t)
{
	if (!list_empty(&t->entry))
		tw_wheel_unlink(w, t);
	return tw_wheel_link(w, t);
}

/**
 * tw_wheel_has_due - whether timers wait on the expired list
 * @w: the wheel
 *
 * Return: true if tw_wheel_pop_due() has a timer to give.
 */
static inline bool tw_wheel_has_due(const struct tw_wheel *w)
{
	return !list_empty(&w->expired);
}

/**
 * tw_wheel_pop_due - take the first due timer off the expired list
 * @w: the wheel; tw_wheel_has_due() must be true
 *
 * Return: the timer, unlinked: the earliest due (see tw_wheel_advance()).
 */
static __always_inline struct twheel_timer *tw_wheel_pop_due(struct tw_wheel *w)
{
	struct twheel_timer *t = list_first_entry(&w->expired,
						  struct twheel_timer, entry);

	tw_wheel_unlink(w, t);
	return t;
}

/**
 * tw_wheel_tick_time - when a level-0 tick starts
 * @w: the wheel
 * @tick: the tick, as tw_wheel_link() or tw_wheel_next() gave it
 *
 * Return: its start in ns, or KTIME_MAX past the end of time (and for
 * U64_MAX, "never").
 */
static __always_inline ktime_t tw_wheel_tick_time(const struct tw_wheel *w,
						  u64 tick)
{
	u64 ns;

	/* No division: this runs on every arming. */
	if (check_mul_overflow(tick, w->gran, &ns) || ns > KTIME_MAX)
		return KTIME_MAX;
	return ns;
}

#endif /* _TWHEEL_WHEEL_H */
