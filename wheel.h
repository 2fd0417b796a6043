/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the pure hierarchical wheel. No clocks, no CPUs, no locks: time
 * is an argument, so KUnit can drive it with a virtual clock. twheel.c owns
 * one per CPU and calls it only on that CPU with interrupts disabled.
 */
#ifndef _TWHEEL_WHEEL_H
#define _TWHEEL_WHEEL_H

#include <linux/list.h>
#include <linux/types.h>

struct twheel_timer;

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
u64 tw_wheel_link(struct tw_wheel *w, struct twheel_timer *t);
u64 tw_wheel_link_tick(struct tw_wheel *w, struct twheel_timer *t, u64 tick);
void tw_wheel_unlink(struct tw_wheel *w, struct twheel_timer *t);
u64 tw_wheel_relink(struct tw_wheel *w, struct twheel_timer *t);
u64 tw_wheel_next(const struct tw_wheel *w);
bool tw_wheel_advance(struct tw_wheel *w, u64 now_ns, unsigned int *budget);
void tw_wheel_forward(struct tw_wheel *w, u64 now_ns);
struct twheel_timer *tw_wheel_pop(struct tw_wheel *w);

#endif /* _TWHEEL_WHEEL_H */
