// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for twheel.
 *
 * twheel_wheel: the pure wheel driven by a virtual clock, deterministic, no
 * sleeping. twheel_api: the real per-CPU, hrtimer-driven wheels through the
 * exported API, with bounds that hold under emulation; an expiry is never
 * allowed to be early.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/sort.h>

#include "../compat.h"
#include "../twheel.h"
#include "../wheel.h"
#include "../internal.h"
#include "../fd_table.h"
#include "../fd.h"

TWHEEL_IMPORT_KUNIT_NS();
MODULE_IMPORT_NS(TWHEEL_INTERNAL_NS);

#define GRAN		NSEC_PER_MSEC
#define BITS		6
#define BASE_NS		(1000 * NSEC_PER_SEC)	/* virtual "now" at start */

/* ---------------------------------------------------------------------
 * twheel_wheel: virtual clock
 */

static void tw_test_timer(struct twheel_timer *t, u64 expires, u32 order)
{
	memset(t, 0, sizeof(*t));
	INIT_LIST_HEAD(&t->entry);
	t->expires = expires;
	t->order = order;
	t->bucket = TW_NO_BUCKET;
}

static void tw_wheel_exit_action(void *w)
{
	tw_wheel_free(w);
}

static struct tw_wheel *tw_test_wheel(struct kunit *test, u64 now)
{
	struct tw_wheel *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_EQ(test, tw_wheel_init(w, GRAN, BITS, now, NUMA_NO_NODE), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, tw_wheel_exit_action, w), 0);
	return w;
}

static bool tw_on_expired(struct tw_wheel *w, struct twheel_timer *t)
{
	struct twheel_timer *pos;

	list_for_each_entry(pos, &w->expired, entry)
		if (pos == t)
			return true;
	return false;
}

/*
 * Advance the virtual clock bucket by bucket, as the hrtimer would, until
 * @t is due. Return the virtual time at which it became due.
 */
static u64 tw_run_until_due(struct kunit *test, struct tw_wheel *w,
			    struct twheel_timer *t)
{
	unsigned int steps;

	for (steps = 0; steps < 64; steps++) {
		u64 tick = tw_wheel_next(w), now;
		unsigned int budget = UINT_MAX;

		if (tw_on_expired(w, t))
			return w->clk * GRAN;
		KUNIT_ASSERT_NE(test, tick, U64_MAX);
		now = tick * GRAN;
		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
		if (tw_on_expired(w, t))
			return now;
	}
	KUNIT_FAIL(test, "timer not due after 64 wheel runs");
	return 0;
}

static const u64 tw_delays[] = {
	0, 1, GRAN - 1, GRAN, GRAN + 1,
	63 * GRAN, 64 * GRAN - 1, 64 * GRAN, 64 * GRAN + 1,	/* one revolution */
	4096 * GRAN - 1, 4096 * GRAN, 4096 * GRAN + 1,		/* level 2 */
	262144 * GRAN - 1, 262144 * GRAN, 262144 * GRAN + 1,	/* level 3 */
	(1ULL << 24) * GRAN + 12345, (1ULL << 30) * GRAN + 777,
	(1ULL << 36) * GRAN + 1,				/* level 6 */
};

static void tw_delay_desc(const u64 *d, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "delay %llu ns", *d);
}

KUNIT_ARRAY_PARAM(tw_delay, tw_delays, tw_delay_desc);

/* Every delay fires no earlier than its deadline and at most a tick late. */
static void tw_test_delay(struct kunit *test)
{
	const u64 *delay = test->param_value;
	u64 now = BASE_NS + 123456;	/* not on a tick boundary */
	struct tw_wheel *w = tw_test_wheel(test, now);
	struct twheel_timer t;
	u64 fired;

	tw_test_timer(&t, now + *delay, 1);
	/* What link says to program is what the wheel says is next. */
	KUNIT_EXPECT_EQ(test, tw_wheel_link(w, &t), tw_wheel_next(w));
	fired = tw_run_until_due(test, w, &t);
	KUNIT_EXPECT_GE(test, fired, now + *delay);
	KUNIT_EXPECT_LT(test, fired - (now + *delay), (u64)GRAN);
	KUNIT_EXPECT_EQ(test, w->count, 1UL);
	tw_wheel_unlink(w, &t);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
}

/* The farthest deadline: parked beyond the top level, never early. */
static void tw_test_max_deadline(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	struct twheel_timer t;
	unsigned int budget = UINT_MAX;

	tw_test_timer(&t, KTIME_MAX, 1);
	tw_wheel_link(w, &t);
	KUNIT_EXPECT_NE(test, tw_wheel_next(w), U64_MAX);
	/* Far from due: a run at a much later time must not expire it. */
	KUNIT_EXPECT_TRUE(test, tw_wheel_advance(w, KTIME_MAX / 2, &budget));
	KUNIT_EXPECT_FALSE(test, tw_on_expired(w, &t));
	KUNIT_EXPECT_EQ(test, tw_run_until_due(test, w, &t) >= KTIME_MAX - GRAN, true);
	tw_wheel_unlink(w, &t);
}

/* Levels cover every ktime_t at any allowed granularity. */
static void tw_test_levels(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, tw_levels_for(NSEC_PER_MSEC, 6), 8U);
	KUNIT_EXPECT_LE(test, tw_levels_for(NSEC_PER_USEC, 6), (unsigned int)TW_LEVELS_MAX);
	KUNIT_EXPECT_GE(test, tw_levels_for(NSEC_PER_SEC, 8), 2U);
}

/* A deadline already past goes straight to the expired list. */
static void tw_test_past(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	struct twheel_timer t;

	tw_test_timer(&t, BASE_NS - 5 * GRAN, 1);
	tw_wheel_link(w, &t);
	KUNIT_EXPECT_TRUE(test, tw_on_expired(w, &t));
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), w->clk);
	tw_wheel_unlink(w, &t);
}

/*
 * tw_wheel_advance()'s shortcut (tw_wheel::ready_ns): within the tick of
 * a complete advance nothing can come due, whatever is linked meanwhile
 * (the next tick's bucket, a higher level's, a deadline already past);
 * an advance that ran out of budget, and the next tick, take the long way
 * and miss nothing.
 */
static void tw_test_advance_shortcut(struct kunit *test)
{
	u64 base = BASE_NS + 7 * GRAN;
	struct tw_wheel *w = tw_test_wheel(test, base);
	struct twheel_timer a, b, c, d[4];
	unsigned int budget = UINT_MAX, i;

	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, base + 10, &budget));
	KUNIT_EXPECT_EQ(test, w->ready_ns, base + GRAN);
	tw_test_timer(&a, base + GRAN, 1);		/* next tick */
	tw_test_timer(&b, base + 200 * GRAN, 2);	/* level 1 */
	tw_test_timer(&c, base - GRAN, 3);		/* past: expired now */
	tw_wheel_link(w, &a);
	tw_wheel_link(w, &b);
	tw_wheel_link(w, &c);
	KUNIT_EXPECT_TRUE(test, tw_on_expired(w, &c));
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, tw_wheel_advance(w, base + GRAN - 1, &budget));
	KUNIT_EXPECT_EQ(test, budget, UINT_MAX);
	KUNIT_EXPECT_FALSE(test, tw_on_expired(w, &a));
	/* The tick came: the long way, which finds a. */
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, tw_wheel_advance(w, base + GRAN, &budget));
	KUNIT_EXPECT_TRUE(test, tw_on_expired(w, &a));
	KUNIT_EXPECT_EQ(test, w->ready_ns, base + 2 * GRAN);
	tw_wheel_unlink(w, &a);
	tw_wheel_unlink(w, &c);
	/*
	 * Out of budget: no shortcut until an advance completes. Linked out
	 * of order, so that their tick's sort costs budget (one in order
	 * costs none, tw_note_order()).
	 */
	for (i = 0; i < ARRAY_SIZE(d); i++) {
		tw_test_timer(&d[i], base + 3 * GRAN, 10 - i);
		tw_wheel_link(w, &d[i]);
	}
	budget = 2;
	KUNIT_EXPECT_FALSE(test, tw_wheel_advance(w, base + 3 * GRAN, &budget));
	KUNIT_EXPECT_EQ(test, w->ready_ns, 0ULL);
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, tw_wheel_advance(w, base + 3 * GRAN, &budget));
	for (i = 0; i < ARRAY_SIZE(d); i++) {
		KUNIT_EXPECT_TRUE(test, tw_on_expired(w, &d[i]));
		tw_wheel_unlink(w, &d[i]);
	}
	tw_wheel_unlink(w, &b);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
}

/*
 * Equal deadlines armed at different times land on different levels; they
 * must still come out in arming order, after the earlier deadlines.
 */
static void tw_test_fifo(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	u64 deadline = BASE_NS + 5000 * GRAN + 17;
	struct twheel_timer *t, *pos;
	unsigned int i, n = 64, budget;
	u32 expect = 0;

	t = kunit_kcalloc(test, n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < n; i++) {
		/* Advance time between armings, as a real workload would. */
		budget = UINT_MAX;
		tw_wheel_advance(w, BASE_NS + i * 70 * GRAN, &budget);
		tw_test_timer(&t[i], deadline - (i % 3 ? 0 : GRAN / 2), i);
		tw_wheel_link(w, &t[i]);
	}
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, deadline + GRAN, &budget));
	/* First the earlier deadline (i % 3 == 0), then the rest, each in order. */
	list_for_each_entry(pos, &w->expired, entry) {
		if (pos->expires != deadline)
			continue;
		while (expect % 3 == 0)
			expect++;
		KUNIT_EXPECT_EQ(test, pos->order, expect);
		expect++;
	}
	i = 0;
	list_for_each_entry(pos, &w->expired, entry)
		i++;
	KUNIT_EXPECT_EQ(test, i, n);
	for (i = 0; i < n; i++)
		tw_wheel_unlink(w, &t[i]);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
}

/*
 * Timers linked straight to one level-0 bucket come due sorted by
 * deadline, then arming order, whichever order they were linked in: in
 * order (the bucket is not marked and its tick is not sorted), deadlines
 * out of order within the tick, equal deadlines whose arming order runs
 * backwards (armed on other CPUs, tw_note_order()). The mark goes with
 * the tick.
 */
static void tw_test_level0_order(struct kunit *test)
{
	static const struct {
		u64 off[4];	/* ns into the tick */
		u32 order[4];
		bool mixed;
	} cases[] = {
		{ { 1, 1, 5, 9 }, { 1, 2, 3, 4 }, false },
		{ { 9, 5, 1, 7 }, { 1, 2, 3, 4 }, true },
		{ { 3, 3, 3, 3 }, { 4, 3, 2, 1 }, true },
		{ { 3, 3, 8, 8 }, { 7, 9, 2, 3 }, false },
	};
	struct twheel_timer t[4], *x;
	unsigned int c, i, budget;

	for (c = 0; c < ARRAY_SIZE(cases); c++) {
		struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
		u64 tick = BASE_NS / GRAN + 5, prev_e = 0;
		u32 prev_o = 0;

		for (i = 0; i < 4; i++) {
			tw_test_timer(&t[i], (tick - 1) * GRAN + cases[c].off[i],
				      cases[c].order[i]);
			tw_wheel_link(w, &t[i]);
		}
		KUNIT_EXPECT_EQ(test, t[0].bucket, (u16)(tick & 63));
		KUNIT_EXPECT_EQ(test, test_bit(t[0].bucket, w->mixed),
				cases[c].mixed);
		budget = UINT_MAX;
		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, tick * GRAN,
							 &budget));
		KUNIT_EXPECT_FALSE(test, test_bit(tick & 63, w->mixed));
		for (i = 0; i < 4; i++) {
			x = tw_wheel_pop_next(w, tick * GRAN, &budget, 0);
			KUNIT_ASSERT_NOT_NULL(test, x);
			if (i)
				KUNIT_EXPECT_TRUE_MSG(test, x->expires > prev_e ||
						      (x->expires == prev_e &&
						       (s32)(x->order - prev_o) > 0),
						      "case %u: timer %u out of order",
						      c, i);
			prev_e = x->expires;
			prev_o = x->order;
		}
		KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, tick * GRAN,
							  &budget, 0));
		KUNIT_EXPECT_EQ(test, w->count, 0UL);
	}
}

/* 100,000 timers due at the same instant, moved in bounded steps. */
static void tw_test_mass_expiry(struct kunit *test)
{
	unsigned int i, n = 100000, runs = 0, budget;
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	u64 deadline = BASE_NS + 10 * NSEC_PER_SEC;
	struct twheel_timer *t, *pos;
	u32 expect = 0;

	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < n; i++) {
		tw_test_timer(&t[i], deadline, i);
		tw_wheel_link(w, &t[i]);
	}
	KUNIT_EXPECT_EQ(test, w->count, (unsigned long)n);
	/* Cascading from level 2 is bounded by the budget. */
	do {
		budget = 8192;
		runs++;
	} while (!tw_wheel_advance(w, deadline, &budget) && runs < 1000);
	KUNIT_EXPECT_GT(test, runs, 1U);
	list_for_each_entry(pos, &w->expired, entry) {
		if (pos->order != expect)
			break;
		expect++;
	}
	KUNIT_EXPECT_EQ(test, expect, n);
	for (i = 0; i < n; i++)
		tw_wheel_unlink(w, &t[i]);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
	kvfree(t);
}

/*
 * Two users' timers and the kernel's, for the held-burst tests: a timer of
 * /dev/twheel as the core sees it (TW_F_RATED, its share naming its user,
 * tw_timer_owner()). The shares are never dereferenced past their
 * pointer: the wheel only compares them.
 */
static struct tw_share tw_test_share[2] = {
	{ .held = (unsigned int __percpu __force *)0x1000 },
	{ .held = (unsigned int __percpu __force *)0x2000 },
};

#define TW_OWN_A	0
#define TW_OWN_B	1
#define TW_OWN_KERNEL	2

static void tw_test_owned(struct tw_shared_timer *st, u64 expires, u32 order,
			  int owner)
{
	tw_test_timer(&st->pt.timer, expires, order);
	st->share = NULL;
	if (owner == TW_OWN_KERNEL)
		return;
	st->pt.timer.flags |= TW_F_RATED;
	st->share = &tw_test_share[owner];
}

/*
 * Issue 42: a run over its time budget holds one user's due timers
 * (tw_wheel_hold()); the sort (tw_wheel_sort()) gives the other user's and
 * the kernel's back at once, in their order; the held user's timers that
 * come due meanwhile queue behind its held ones; nothing fires before the
 * sort is done; the release lets the held user's fire in its order, once
 * the others' due since have fired.
 */
static void tw_test_hold_sort(struct kunit *test)
{
	/*
	 * Arming order: A0 B0 A1 K0 B1 A2, then A3 B2 while held, then B3
	 * A4 before the release.
	 */
	static const int owner[] = { TW_OWN_A, TW_OWN_B, TW_OWN_A, TW_OWN_KERNEL,
				     TW_OWN_B, TW_OWN_A, TW_OWN_A, TW_OWN_B,
				     TW_OWN_B, TW_OWN_A };
	static const u32 fired_held[] = { 1, 3, 4, 7 };
	static const u32 fired_released[] = { 8, 2, 5, 6, 9 };
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	u64 now = BASE_NS + 5 * GRAN, d0 = now - 2 * GRAN;
	static struct tw_shared_timer t[10];
	unsigned int i, n = 0, budget = UINT_MAX;
	struct twheel_timer *x;

	for (i = 0; i < 6; i++) {
		tw_test_owned(&t[i], d0, i, owner[i]);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	/* A0 fired; the run went over its budget with the rest due. */
	x = tw_wheel_pop_next(w, now, &budget, 0);
	KUNIT_ASSERT_PTR_EQ(test, x, &t[0].pt.timer);
	tw_wheel_hold(w, tw_timer_owner(&t[0].pt.timer));
	KUNIT_EXPECT_TRUE(test, tw_wheel_sorting(w));
	KUNIT_EXPECT_TRUE(test, tw_wheel_has_due(w));
	/* Due meanwhile: A3 (behind A's held), B2 (after B's). */
	for (i = 6; i < 8; i++) {
		tw_test_owned(&t[i], now, i, owner[i]);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, now, &budget, 0));
	/* Sorted two at a time: resumable, in order. */
	for (i = 0; i < 8; i++) {
		unsigned int two = 2;

		if (tw_wheel_sort(w, now, &two))
			break;
	}
	KUNIT_EXPECT_FALSE(test, tw_wheel_sorting(w));
	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		if (n < ARRAY_SIZE(fired_held))
			KUNIT_EXPECT_EQ(test, x->order, fired_held[n]);
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, (unsigned int)ARRAY_SIZE(fired_held));
	KUNIT_EXPECT_FALSE(test, tw_wheel_has_due(w));
	/* A's three wait, counted: a cancel finds them linked. */
	KUNIT_EXPECT_EQ(test, w->count, 3UL);
	/*
	 * Released: B3, due since, fires first; A4 goes behind A's held
	 * ones, which fire once nobody else's are due.
	 */
	for (i = 8; i < 10; i++) {
		tw_test_owned(&t[i], now, i, owner[i]);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	KUNIT_EXPECT_TRUE(test, tw_wheel_release(w));
	n = 0;
	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		if (n < ARRAY_SIZE(fired_released))
			KUNIT_EXPECT_EQ(test, x->order, fired_released[n]);
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, (unsigned int)ARRAY_SIZE(fired_released));
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, w->held_owner, 0UL);
	KUNIT_EXPECT_FALSE(test, tw_wheel_has_due(w));
}

/*
 * A release while the sort is under way (the work item ran first, or the
 * CPU went down) gives every timer back in an order that keeps each
 * owner's: sorted out, held, then not yet sorted; a cancel of a held
 * timer unlinks it.
 */
static void tw_test_hold_release_early(struct kunit *test)
{
	static const int owner[] = { TW_OWN_A, TW_OWN_B, TW_OWN_A, TW_OWN_B,
				     TW_OWN_A, TW_OWN_KERNEL };
	static const u32 want[] = { 1, 0, 3, 4, 5 };
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	u64 now = BASE_NS + 5 * GRAN, d0 = now - 2 * GRAN;
	static struct tw_shared_timer t[6];
	unsigned int i, n = 0, budget = UINT_MAX, three = 3;
	struct twheel_timer *x;

	for (i = 0; i < 6; i++) {
		tw_test_owned(&t[i], d0, i, owner[i]);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	tw_wheel_hold(w, tw_timer_owner(&t[0].pt.timer));
	/* A0 and A2 held, B1 sorted out, B3 A4 K5 not yet looked at. */
	KUNIT_EXPECT_FALSE(test, tw_wheel_sort(w, now, &three));
	tw_wheel_unlink(w, &t[2].pt.timer);
	KUNIT_EXPECT_TRUE(test, tw_wheel_release(w));
	KUNIT_EXPECT_FALSE(test, tw_wheel_sorting(w));
	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		if (n < ARRAY_SIZE(want))
			KUNIT_EXPECT_EQ(test, x->order, want[n]);
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, (unsigned int)ARRAY_SIZE(want));
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
}

/*
 * A tick whose buckets hold more than an advance's budget, as a burst
 * armed far ahead makes: tw_wheel_spill() sets them aside whole, the hold
 * and the sort set the due ones aside (one user's), the next advances
 * move the spilled ones down, and after the release tw_wheel_pop_next()
 * gives each timer at its own tick, none early, none lost.
 */
static void tw_test_spill(struct kunit *test)
{
	unsigned int i, n = 1000, got = 0, early = 0, late = 0, budget;
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	/* BASE_NS is a multiple of 64 ticks: this is a level-1 bucket's. */
	u64 start = BASE_NS + 128 * GRAN, now, tick;
	struct tw_shared_timer *t;
	struct twheel_timer *x;

	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < n; i++) {
		/* Over the bucket's 64 ticks, a few ns into each. */
		tw_test_owned(&t[i], start + (i % 64) * GRAN - (i % 3), i,
			      TW_OWN_A);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	now = start;
	budget = 100;
	KUNIT_ASSERT_FALSE(test, tw_wheel_advance(w, now, &budget));
	tw_wheel_spill(w);
	KUNIT_EXPECT_EQ(test, w->count, (unsigned long)n);
	tw_wheel_hold(w, tw_timer_owner(&t[0].pt.timer));
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, tw_wheel_sort(w, now, &budget));
	KUNIT_EXPECT_FALSE(test, tw_wheel_has_due(w));
	/* The spilled tick is still to be moved down: the next run's. */
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), now / GRAN);
	KUNIT_EXPECT_TRUE(test, tw_wheel_release(w));
	for (tick = start / GRAN; tick <= start / GRAN + 64; tick++) {
		now = tick * GRAN;
		budget = UINT_MAX;
		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
		while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
			got++;
			if (x->expires > now)
				early++;
			else if (now - x->expires >= GRAN)
				late++;
		}
	}
	KUNIT_EXPECT_EQ(test, got, n);
	KUNIT_EXPECT_EQ(test, early, 0U);
	KUNIT_EXPECT_EQ(test, late, 0U);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_TRUE(test, list_empty(&w->held));
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
	kvfree(t);
}

/*
 * Pops every timer due at @now: they must come in arming order (test
 * timers' order 0, 1, ...). Return: how many came.
 */
static unsigned int tw_test_pop_in_order(struct kunit *test,
					 struct tw_wheel *w, u64 now)
{
	unsigned int n = 0, bad = 0, budget = UINT_MAX;
	struct twheel_timer *x;

	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		if (x->order != n && bad++ < 3)
			KUNIT_FAIL(test, "fired %u: timer %u", n, x->order);
		n++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
	return n;
}

/*
 * One user's burst of one deadline, armed far enough ahead for a level-1
 * bucket, whose move down at the bucket's start runs out of budget: the
 * first timers are moved down, the rest spilled, held and sorted. The
 * release comes only after the deadline (the work item starved), when the
 * moved-down ones come due behind the held list. All fire in arming
 * order: the sort put the spilled ones, not yet due, back on the wheel
 * behind those moved down, rather than on the held list ahead of them
 * (seen on the debug kernel: 104 of a batch of 1,000 fired first).
 */
static void tw_test_spill_hold_order(struct kunit *test)
{
	enum { N = 300, MOVED = 100 };
	unsigned int i, budget;
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	/* A level-1 bucket's start; the deadline 10 ticks into it. */
	u64 start = BASE_NS + 128 * GRAN, dl = start + 10 * GRAN, now;
	struct tw_shared_timer *t;

	t = kvcalloc(N, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < N; i++) {
		tw_test_owned(&t[i], dl, i, TW_OWN_A);
		tw_wheel_link(w, &t[i].pt.timer);
	}
	budget = MOVED;
	KUNIT_ASSERT_FALSE(test, tw_wheel_advance(w, start, &budget));
	tw_wheel_spill(w);
	tw_wheel_hold(w, tw_timer_owner(&t[0].pt.timer));
	budget = UINT_MAX;
	KUNIT_EXPECT_TRUE(test, tw_wheel_sort(w, start, &budget));
	/* None of them due yet: the held list is empty. */
	KUNIT_EXPECT_TRUE(test, list_empty(&w->held));
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, start, &budget, 0));
	/* The deadline's tick, the owner still held: all go behind. */
	for (now = start + GRAN; now <= dl; now += GRAN) {
		budget = UINT_MAX;
		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
		KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, now, &budget, 0));
	}
	KUNIT_EXPECT_TRUE(test, tw_wheel_release(w));
	KUNIT_EXPECT_EQ(test, tw_test_pop_in_order(test, w, dl),
			(unsigned int)N);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, w->held_owner, 0UL);
	kvfree(t);
}

/*
 * A move down that ran out of budget and spilled, then a run that comes
 * back only after the deadlines (the whole wheel deferred, its work item
 * starved): the timers moved down before the spill and those spilled
 * fire in deadline and arming order, whichever list they waited on. On
 * the expired list, the spilled ones fired first (seen on the debug
 * kernel: of a batch of 1,000 timers of one deadline, 256 moved down and
 * 744 spilled, which fired before them).
 */
static void tw_test_spill_order(struct kunit *test)
{
	enum { N = 300, MOVED = 100 };
	unsigned int i, budget;
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	/* A level-1 bucket's start; deadlines 10 and 20 ticks into it. */
	u64 start = BASE_NS + 128 * GRAN, late = start + 20 * GRAN;
	struct twheel_timer *t;

	t = kvcalloc(N, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	/* 0-199 at +10 ticks, 200-299 at +20; the spill takes 100-299. */
	for (i = 0; i < N; i++) {
		tw_test_timer(&t[i], start + (i < 200 ? 10 : 20) * GRAN, i);
		tw_wheel_link(w, &t[i]);
	}
	budget = MOVED;
	KUNIT_ASSERT_FALSE(test, tw_wheel_advance(w, start, &budget));
	tw_wheel_spill(w);
	KUNIT_EXPECT_EQ(test, w->count, (unsigned long)N);
	KUNIT_EXPECT_FALSE(test, tw_wheel_has_due(w));
	/* The spilled tick is still to be moved down: at once. */
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), start / GRAN);
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, late, &budget));
	KUNIT_EXPECT_EQ(test, tw_test_pop_in_order(test, w, late),
			(unsigned int)N);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
	kvfree(t);
}

/* Unlinking the last timer of a bucket leaves nothing to wake for. */
static void tw_test_unlink(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	struct twheel_timer a, b;

	tw_test_timer(&a, BASE_NS + 10 * GRAN, 1);
	tw_test_timer(&b, BASE_NS + 10 * GRAN, 2);
	tw_wheel_link(w, &a);
	tw_wheel_link(w, &b);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w) * GRAN, BASE_NS + 10 * GRAN);
	tw_wheel_unlink(w, &a);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w) * GRAN, BASE_NS + 10 * GRAN);
	tw_wheel_unlink(w, &b);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
}

/* Emptying a wheel a timer at a time finds every timer, from every level. */
static void tw_test_pop(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	static struct twheel_timer t[200];
	unsigned int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		tw_test_timer(&t[i], BASE_NS + (1ULL << (i % 40)) * GRAN, i);
		tw_wheel_link(w, &t[i]);
	}
	while (tw_wheel_pop(w))
		n++;
	KUNIT_EXPECT_EQ(test, n, (unsigned int)ARRAY_SIZE(t));
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, tw_wheel_next(w), U64_MAX);
}

/*
 * A tick with more due timers than TW_SORT_MAX is not sorted with
 * interrupts off: they stay in bucket order, and the work of one advance
 * is bounded by its budget.
 */
static void tw_test_sort_bounded(struct kunit *test)
{
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	unsigned int i, n = TW_SORT_MAX + 100, budget, runs = 0, seen = 0;
	u64 deadline = BASE_NS + 5 * GRAN;
	struct twheel_timer *t, *pos;

	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	/* Reverse deadlines within one tick: out of order. */
	for (i = 0; i < n; i++) {
		tw_test_timer(&t[i], deadline - (i % 1000), i);
		tw_wheel_link(w, &t[i]);
	}
	do {
		budget = 256;
		runs++;
	} while (!tw_wheel_advance(w, deadline, &budget) && runs < 1000);
	list_for_each_entry(pos, &w->expired, entry)
		seen++;
	KUNIT_EXPECT_EQ(test, seen, n);
	/* Left in linking order: the sort was skipped. */
	KUNIT_EXPECT_EQ(test, list_first_entry(&w->expired, struct twheel_timer,
					       entry)->order, 0U);
	for (i = 0; i < n; i++)
		tw_wheel_unlink(w, &t[i]);
	kvfree(t);
}

/* ---------------------------------------------------------------------
 * twheel_wheel: the precise final stage (precise.c), virtual clock
 */

/* A test timer with the slack class of @slack_ns (precise.h). */
static void tw_test_precise_timer(struct twheel_timer *t, u64 expires,
				  u32 order, u64 slack_ns)
{
	tw_test_timer(t, expires, order);
	t->mode = tw_slack_class(GRAN, slack_ns) << TW_SLACK_SHIFT;
}

/*
 * Run the wheel as tw_hrtimer_fn() does, at each time it asks for (the
 * first at @when), until @t fires; return that time. Other timers that
 * fire meanwhile must not be early.
 */
static u64 tw_precise_run(struct kunit *test, struct tw_wheel *w,
			  struct twheel_timer *t, u64 when)
{
	unsigned int steps;

	for (steps = 0; steps < 10000; steps++) {
		unsigned int budget = UINT_MAX;
		struct twheel_timer *x;
		u64 now = when;

		KUNIT_ASSERT_LT(test, when, (u64)KTIME_MAX);
		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
		budget = UINT_MAX;
		while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
			KUNIT_EXPECT_LE(test, x->expires, now);
			if (x == t)
				return now;
		}
		when = tw_wheel_next_ns(w);
		/* Never asks for a time it has already served. */
		KUNIT_ASSERT_GT(test, when, now);
	}
	KUNIT_FAIL(test, "timer not fired after 10000 runs");
	return 0;
}

struct tw_precise_case {
	const char	*what;
	s64		delay;		/* from the start, ns */
	bool		boundary;	/* deadline moved onto a tick boundary */
	u64		slack;
};

static const struct tw_precise_case tw_precise_cases[] = {
	{ "slack 0, 1 ns ahead (this tick)", 1, false, 0 },
	{ "slack 0, half a tick", GRAN / 2, false, 0 },
	{ "slack 0, on a tick boundary", 5 * GRAN, true, 0 },
	{ "slack 0, boundary of the next tick", 1, true, 0 },
	{ "slack 0, level 1", 70 * GRAN + 7, false, 0 },
	{ "slack 0, level 2", 5000 * GRAN + 1, false, 0 },
	{ "slack 0, in the past", -5, false, 0 },
	{ "slack 1 ns", 3 * GRAN + 11, false, 1 },
	{ "slack 1000 ns", GRAN / 3, false, 1000 },
	{ "slack above the distance", 100, false, GRAN / 2 },
	{ "slack above the distance, on a boundary", 1, true, GRAN - 1 },
	{ "slack of a tick: the default", 2 * GRAN + 5, false, GRAN },
};

static void tw_precise_case_desc(const struct tw_precise_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->what);
}

KUNIT_ARRAY_PARAM(tw_precise_edge, tw_precise_cases, tw_precise_case_desc);

/*
 * A precise timer fires between its deadline and its deadline plus its
 * slack: at the end of its window when nothing else runs the wheel, since
 * the wheel is run for the latest moment that serves the window. The old
 * wheel fired at the next tick: late by up to a tick whatever the slack.
 */
static void tw_test_precise_edge(struct kunit *test)
{
	const struct tw_precise_case *c = test->param_value;
	u64 start = BASE_NS + 123456, d = start + c->delay, eff, fired, when;
	struct tw_wheel *w = tw_test_wheel(test, start);
	unsigned int class = tw_slack_class(GRAN, c->slack);
	struct twheel_timer t;

	if (c->boundary)
		d = roundup(d, GRAN);
	eff = tw_class_slack(GRAN, class);
	KUNIT_EXPECT_LE(test, eff, c->slack);
	tw_test_precise_timer(&t, d, 1, c->slack);
	when = tw_wheel_relink_ns(w, &t);
	KUNIT_EXPECT_EQ(test, w->count, 1UL);
	fired = tw_precise_run(test, w, &t, max(when, start));
	KUNIT_EXPECT_GE(test, fired, d);
	/* A deadline already past fires at the first run. */
	KUNIT_EXPECT_LE(test, fired - max(d, start), eff);
	if (class && d > start)
		KUNIT_EXPECT_EQ(test, fired, d + eff);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, w->precise.n, 0U);
}

/*
 * Issue 43, coarse slack: a slack of two ticks or more fires the timer at
 * the first multiple of its class's 2^k ticks from its deadline on: never
 * early, at most its slack late, and every timer of the class whose
 * deadline falls in one window at the same instant (a level-2 deadline
 * too, which the wheel moves down twice).
 */
static void tw_test_coarse_slack(struct kunit *test)
{
	static const struct { s64 delay; u64 slack; } cases[] = {
		{ 3 * GRAN + 5, 2 * GRAN }, { 13 * GRAN + 5, 10 * GRAN },
		{ 100 * GRAN + 1, 64 * GRAN }, { 5000 * GRAN + 7, 1000 * GRAN },
		{ 70 * GRAN, 100 * GRAN - 1 }, { 9 * GRAN, 8 * GRAN },
	};
	u64 start = BASE_NS + 123456;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct tw_wheel *w = tw_test_wheel(test, start);
		u64 d = start + cases[i].delay, unit, fired[2] = { }, when;
		unsigned int class = tw_slack_class(GRAN, cases[i].slack);
		struct twheel_timer t[2], *x;
		unsigned int steps, budget;

		KUNIT_EXPECT_TRUE(test, tw_class_coarse(class));
		unit = tw_class_slack(GRAN, class);
		KUNIT_EXPECT_LE(test, unit, cases[i].slack);
		KUNIT_EXPECT_GT(test, 2 * unit + GRAN, cases[i].slack);
		/* Two deadlines in the same window of the class. */
		tw_test_precise_timer(&t[0], d, 1, cases[i].slack);
		tw_test_precise_timer(&t[1], rounddown(d, unit) + 1, 2,
				      cases[i].slack);
		KUNIT_EXPECT_FALSE(test, tw_timer_precise(&t[0]));
		when = tw_wheel_relink_ns(w, &t[0]);
		when = min_t(u64, when, tw_wheel_relink_ns(w, &t[1]));
		KUNIT_EXPECT_EQ(test, w->precise.n, 0U);
		when = max(when, start);
		/* Run the wheel at each time it asks for, as tw_hrtimer_fn(). */
		for (steps = 0; steps < 10000 && !(fired[0] && fired[1]); steps++) {
			KUNIT_ASSERT_LT(test, when, (u64)KTIME_MAX);
			budget = UINT_MAX;
			KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, when, &budget));
			budget = UINT_MAX;
			while ((x = tw_wheel_pop_next(w, when, &budget, 0)))
				fired[x == &t[1]] = when;
			when = tw_wheel_next_ns(w);
		}
		kunit_info(test, "deadline +%lld ns, slack %llu: unit %llu, fired %llu ns late\n",
			   cases[i].delay, cases[i].slack, unit, fired[0] - d);
		KUNIT_EXPECT_GE(test, fired[0], d);
		KUNIT_EXPECT_LE(test, fired[0] - d, unit);
		KUNIT_EXPECT_EQ(test, fired[0] % unit, 0ULL);
		KUNIT_EXPECT_EQ(test, fired[1], fired[0]);
		KUNIT_EXPECT_EQ(test, w->count, 0UL);
	}
}

/*
 * Coalescing: the wheel runs at the earliest end of a window and fires
 * every timer at the stage's top whose deadline has come, in the order of
 * their windows' ends; a cancel takes a timer out of the middle.
 */
static void tw_test_precise_coalesce(struct kunit *test)
{
	u64 base = BASE_NS + 10 * GRAN;
	struct tw_wheel *w = tw_test_wheel(test, base);
	struct twheel_timer a, b, c, gone, *x;
	unsigned int budget = UINT_MAX;
	u64 when;

	/* Windows: a [10, 10+64) us, b [50, 50+32), c [100, 100], gone. */
	tw_test_precise_timer(&a, base + 10000, 1, 65536);
	tw_test_precise_timer(&b, base + 50000, 2, 32768);
	tw_test_precise_timer(&c, base + 100000, 3, 0);
	tw_test_precise_timer(&gone, base + 20000, 4, 0);
	tw_wheel_relink_ns(w, &a);
	tw_wheel_relink_ns(w, &b);
	tw_wheel_relink_ns(w, &c);
	tw_wheel_relink_ns(w, &gone);
	KUNIT_EXPECT_EQ(test, w->precise.n, 4U);
	KUNIT_EXPECT_EQ(test, tw_wheel_next_ns(w), (ktime_t)(base + 20000));
	tw_wheel_unlink(w, &gone);
	KUNIT_EXPECT_EQ(test, w->precise.n, 3U);
	when = tw_wheel_next_ns(w);
	/* The earliest end of a window: a's (b's ends later). */
	KUNIT_EXPECT_EQ(test, when, (ktime_t)(base + 10000 + 65536));
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, when, &budget));
	budget = UINT_MAX;
	x = tw_wheel_pop_next(w, when, &budget, 0);
	KUNIT_EXPECT_PTR_EQ(test, x, &a);
	/* b's deadline came too: served by the same run. */
	x = tw_wheel_pop_next(w, when, &budget, 0);
	KUNIT_EXPECT_PTR_EQ(test, x, &b);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, when, &budget, 0));
	KUNIT_EXPECT_EQ(test, tw_wheel_next_ns(w), (ktime_t)(base + 100000));
	tw_wheel_unlink(w, &c);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, tw_wheel_next_ns(w), KTIME_MAX);
}

/*
 * One tw_wheel_pop_next() moves precise timers to the stage only down to
 * its @floor: a run's interrupts-off step moves at most TW_CLOCK_EVERY,
 * however many precise timers one tick brings. None is lost or early.
 */
static void tw_test_precise_move_floor(struct kunit *test)
{
	u64 base = BASE_NS + 10 * GRAN, when = base + 5 * GRAN;
	struct tw_wheel *w = tw_test_wheel(test, base);
	unsigned int i, n = 64, budget = UINT_MAX, fired = 0;
	struct twheel_timer *t = kunit_kcalloc(test, n, sizeof(*t), GFP_KERNEL);
	struct twheel_timer *x;

	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < n; i++) {
		tw_test_precise_timer(&t[i], when + 1000 + i, i, 0);
		tw_wheel_relink_ns(w, &t[i]);
	}
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, when, &budget));
	KUNIT_ASSERT_TRUE(test, tw_wheel_has_due(w));
	budget = 100;
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, when, &budget, 92));
	KUNIT_EXPECT_EQ(test, budget, 92U);
	KUNIT_EXPECT_EQ(test, w->precise.n, 8U);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, when, &budget, 84));
	KUNIT_EXPECT_EQ(test, budget, 84U);
	KUNIT_EXPECT_EQ(test, w->precise.n, 16U);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, when, &budget, 0));
	KUNIT_EXPECT_EQ(test, w->precise.n, n);
	KUNIT_EXPECT_FALSE(test, tw_wheel_has_due(w));
	/* Each at its deadline, in order. */
	for (i = 0; i < n; i++) {
		budget = UINT_MAX;
		x = tw_wheel_pop_next(w, when + 1000 + i, &budget, 0);
		KUNIT_EXPECT_PTR_EQ(test, x, &t[i]);
		fired += x == &t[i];
	}
	KUNIT_EXPECT_EQ(test, fired, n);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
}

/*
 * More precise timers due within one tick than the stage holds: the rest
 * keep the wheel's precision (at most a tick late), none is early, every
 * one fires once, and the stage never holds more than TW_PRECISE_MAX.
 */
static void tw_test_precise_full(struct kunit *test)
{
	unsigned int i, n = TW_PRECISE_MAX + 8, fired = 0, late = 0, steps;
	u64 base = BASE_NS + 10 * GRAN, when = U64_MAX;
	struct tw_wheel *w = tw_test_wheel(test, BASE_NS);
	struct twheel_timer *t = kunit_kcalloc(test, n, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < n; i++) {
		tw_test_precise_timer(&t[i], base + 1000 + (n - i) * 100, i, 0);
		when = min_t(u64, when, tw_wheel_relink_ns(w, &t[i]));
	}
	for (steps = 0; fired < n && steps < 2 * n; steps++) {
		unsigned int budget = UINT_MAX;
		struct twheel_timer *x;

		KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, when, &budget));
		budget = UINT_MAX;
		while ((x = tw_wheel_pop_next(w, when, &budget, 0))) {
			KUNIT_EXPECT_LE(test, x->expires, when);
			KUNIT_EXPECT_LT(test, when - x->expires, (u64)GRAN);
			late += when != x->expires;
			fired++;
		}
		KUNIT_EXPECT_LE(test, w->precise.n, (unsigned int)TW_PRECISE_MAX);
		if (fired < n) {
			u64 next = tw_wheel_next_ns(w);

			KUNIT_ASSERT_GT(test, next, when);
			when = next;
		}
	}
	KUNIT_EXPECT_EQ(test, fired, n);
	/* Only those the stage had no room for fired off their deadline. */
	KUNIT_EXPECT_LE(test, late, 8U);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
}

/*
 * The stage's two heaps: /dev/twheel's timers (TW_F_RATED) fill theirs
 * without taking the kernel's room; each heap's first key is reported
 * apart, the user heap's held back to a floor and the kernel's not; a run
 * fires the due timers of both, never early, in the order of their keys.
 */
static void tw_test_precise_kinds(struct kunit *test)
{
	unsigned int i, n = TW_PRECISE_MAX, fired = 0;
	u64 base = BASE_NS + 10 * GRAN, now, prev = 0;
	struct tw_wheel *w = tw_test_wheel(test, base);
	struct twheel_timer *u = kunit_kcalloc(test, n + 1, sizeof(*u),
					       GFP_KERNEL);
	struct twheel_timer k, *x;
	unsigned int budget;

	KUNIT_ASSERT_NOT_NULL(test, u);
	for (i = 0; i <= n; i++) {
		tw_test_precise_timer(&u[i], base + 1000 + i * 10, i, 0);
		u[i].flags |= TW_F_RATED;
		tw_wheel_relink_ns(w, &u[i]);
	}
	tw_test_precise_timer(&k, base + 500000, n + 1, 0);
	tw_wheel_relink_ns(w, &k);
	/* The user heap is full: its last timer keeps the wheel's precision. */
	KUNIT_EXPECT_LT(test, u[n].bucket, (u16)TW_PRECISE_BASE);
	/* The kernel's timer still has its heap. */
	KUNIT_EXPECT_GE(test, k.bucket, (u16)TW_PRECISE_BASE);
	KUNIT_EXPECT_LT(test, k.bucket, (u16)(TW_PRECISE_BASE + TW_PRECISE_MAX));
	KUNIT_EXPECT_EQ(test, w->precise.n, n + 1);
	KUNIT_EXPECT_EQ(test, tw_precise_next_kind(&w->precise, TW_PRECISE_USER),
			(ktime_t)(base + 1000));
	KUNIT_EXPECT_EQ(test,
			tw_precise_next_kind(&w->precise, TW_PRECISE_KERNEL),
			(ktime_t)(base + 500000));
	/* A floor holds back the user heap only. */
	KUNIT_EXPECT_EQ(test, tw_precise_next_floored(&w->precise, base + 600000),
			(ktime_t)(base + 500000));
	KUNIT_EXPECT_EQ(test, tw_precise_next_floored(&w->precise, base + 2000),
			(ktime_t)(base + 2000));
	KUNIT_EXPECT_EQ(test, tw_precise_next_floored(&w->precise, 0),
			(ktime_t)(base + 1000));
	KUNIT_EXPECT_EQ(test, tw_wheel_next_ns(w), (ktime_t)(base + 1000));
	tw_wheel_unlink(w, &u[n]);
	/* Every user timer due, the kernel's not yet. */
	now = base + 1000 + n * 10;
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	budget = UINT_MAX;
	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		KUNIT_EXPECT_TRUE(test, x->flags & TW_F_RATED);
		KUNIT_EXPECT_LE(test, x->expires, now);
		KUNIT_EXPECT_GE(test, x->expires, prev);
		prev = x->expires;
		fired++;
	}
	KUNIT_EXPECT_EQ(test, fired, n);
	KUNIT_EXPECT_EQ(test, w->precise.n, 1U);
	KUNIT_EXPECT_EQ(test, tw_precise_next_kind(&w->precise, TW_PRECISE_USER),
			KTIME_MAX);
	now = base + 500000;
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	budget = UINT_MAX;
	KUNIT_EXPECT_PTR_EQ(test, tw_wheel_pop_next(w, now, &budget, 0), &k);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, tw_wheel_next_ns(w), KTIME_MAX);
}

/*
 * A user's share of the user heap (TW_F_SHARED, precise_per_user): past
 * its share, a user's timer keeps the wheel's precision while another
 * user's and the kernel's still get entries; the count follows every way
 * out of the heap (cancel, expiry, emptying) back to 0.
 */
static void tw_test_precise_share(struct kunit *test)
{
	const unsigned int share = 4, na = 6, nb = 3;
	unsigned int saved = tw_precise_per_user, i, fired = 0, budget;
	u64 base = BASE_NS + 10 * GRAN, now;
	struct tw_wheel *w = tw_test_wheel(test, base);
	struct twheel_fd *tf = kunit_kcalloc(test, 2, sizeof(*tf), GFP_KERNEL);
	struct twheel_fd_timer *ft = kunit_kcalloc(test, na + nb, sizeof(*ft),
						   GFP_KERNEL);
	unsigned int *held[2];
	struct twheel_timer k, *x;

	KUNIT_ASSERT_NOT_NULL(test, tf);
	KUNIT_ASSERT_NOT_NULL(test, ft);
	for (i = 0; i < 2; i++) {
		tf[i].share.held = alloc_percpu(unsigned int);
		KUNIT_ASSERT_TRUE(test, !!tf[i].share.held);
		held[i] = per_cpu_ptr(tf[i].share.held, w->precise.cpu);
	}
	tw_precise_per_user = share;
	/* User 0's timers first, all within the tick: they reach the heap. */
	for (i = 0; i < na + nb; i++) {
		ft[i].shared.share = &tf[i < na ? 0 : 1].share;
		tw_test_precise_timer(&ft[i].timer, base + 1000 + i * 10, i, 0);
		ft[i].timer.flags |= TW_F_RATED | TW_F_SHARED;
		tw_wheel_relink_ns(w, &ft[i].timer);
	}
	tw_test_precise_timer(&k, base + 2000, na + nb, 0);
	tw_wheel_relink_ns(w, &k);
	for (i = 0; i < na + nb; i++) {
		bool in_heap = ft[i].timer.bucket >= TW_PRECISE_BASE &&
			       ft[i].timer.bucket != TW_NO_BUCKET;

		/* Only user 0's past its share are left to the wheel. */
		KUNIT_EXPECT_EQ(test, in_heap, i < share || i >= na);
	}
	KUNIT_EXPECT_EQ(test, *held[0], share);
	KUNIT_EXPECT_EQ(test, *held[1], nb);
	KUNIT_EXPECT_GE(test, k.bucket, (u16)TW_PRECISE_BASE);
	KUNIT_EXPECT_EQ(test, w->precise.n, share + nb + 1);
	/* A cancel frees an entry of its user's share, and only that. */
	tw_wheel_unlink(w, &ft[0].timer);
	KUNIT_EXPECT_EQ(test, *held[0], share - 1);
	KUNIT_EXPECT_EQ(test, *held[1], nb);
	/* Re-armed within the tick: user 0's entry is taken again. */
	tw_wheel_relink_ns(w, &ft[na - 1].timer);
	KUNIT_EXPECT_EQ(test, *held[0], share);
	tw_wheel_relink_ns(w, &ft[0].timer);
	KUNIT_EXPECT_EQ(test, *held[0], share);
	KUNIT_EXPECT_LT(test, ft[0].timer.bucket, (u16)TW_PRECISE_BASE);
	/* Expiries give the entries back; never early, even past the share. */
	now = base + 1000 + (na + nb) * 10;
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	budget = UINT_MAX;
	while ((x = tw_wheel_pop_next(w, now, &budget, 0))) {
		KUNIT_EXPECT_LE(test, x->expires, now);
		fired++;
	}
	KUNIT_EXPECT_EQ(test, *held[1], 0U);
	KUNIT_EXPECT_EQ(test, *held[0], 0U);
	/* The rest, the wheel's and the kernel's, as an offline CPU does. */
	while ((x = tw_wheel_pop(w)))
		fired++;
	KUNIT_EXPECT_EQ(test, fired, na + nb + 1);
	KUNIT_EXPECT_EQ(test, *held[0], 0U);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	tw_precise_per_user = saved;
	for (i = 0; i < 2; i++)
		free_percpu(tf[i].share.held);
}

/*
 * The hard heap (TWHEEL_F_HARDIRQ): a kernel timer that may fire in hard
 * interrupt context goes to its own heap, near or moved from the wheel;
 * the wheel's run neither fires it nor waits for it (tw_precise_next()
 * and tw_wheel_pop_next() leave it), tw_wheel_pop_hard() takes it at
 * its deadline and not a nanosecond before, and only it.
 */
static void tw_test_precise_hard(struct kunit *test)
{
	u64 base = BASE_NS + 10 * GRAN, now;
	struct tw_wheel *w = tw_test_wheel(test, base);
	struct twheel_timer near, far, soft;
	unsigned int budget;

	tw_test_precise_timer(&near, base + GRAN / 2, 1, 0);
	near.flags |= TWHEEL_F_HARDIRQ;
	tw_test_precise_timer(&far, base + 5 * GRAN + 7, 2, 0);
	far.flags |= TWHEEL_F_HARDIRQ;
	tw_test_precise_timer(&soft, base + GRAN / 2 + 1, 3, 0);
	KUNIT_EXPECT_EQ(test, tw_wheel_relink_ns(w, &near),
			(ktime_t)(base + GRAN / 2));
	KUNIT_EXPECT_TRUE(test, tw_precise_in_hard(&near));
	tw_wheel_relink_ns(w, &far);
	KUNIT_EXPECT_FALSE(test, tw_precise_in_hard(&far));
	tw_wheel_relink_ns(w, &soft);
	KUNIT_EXPECT_FALSE(test, tw_precise_in_hard(&soft));
	KUNIT_EXPECT_EQ(test, tw_precise_next_kind(&w->precise, TW_PRECISE_HARD),
			(ktime_t)(base + GRAN / 2));
	/* The wheel's own run waits for the soft timer only. */
	KUNIT_EXPECT_EQ(test, tw_precise_next(&w->precise),
			(ktime_t)(base + GRAN / 2 + 1));
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_hard(w, base + GRAN / 2 - 1));
	now = base + GRAN / 2 + 1;
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	budget = UINT_MAX;
	KUNIT_EXPECT_PTR_EQ(test, tw_wheel_pop_next(w, now, &budget, 0), &soft);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, now, &budget, 0));
	KUNIT_EXPECT_PTR_EQ(test, tw_wheel_pop_hard(w, now), &near);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_hard(w, now));
	/* The far one: the wheel moves it to the hard heap at its tick. */
	now = base + 5 * GRAN;
	budget = UINT_MAX;
	KUNIT_ASSERT_TRUE(test, tw_wheel_advance(w, now, &budget));
	budget = UINT_MAX;
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_next(w, now, &budget, 0));
	KUNIT_EXPECT_TRUE(test, tw_precise_in_hard(&far));
	KUNIT_EXPECT_EQ(test, tw_precise_next(&w->precise), KTIME_MAX);
	KUNIT_EXPECT_NULL(test, tw_wheel_pop_hard(w, base + 5 * GRAN + 6));
	KUNIT_EXPECT_PTR_EQ(test, tw_wheel_pop_hard(w, base + 5 * GRAN + 7),
			    &far);
	KUNIT_EXPECT_EQ(test, w->count, 0UL);
	KUNIT_EXPECT_EQ(test, w->precise.n, 0U);
}

/* The slack classes: never more slack than asked, at least half of it. */
static void tw_test_precise_slack_class(struct kunit *test)
{
	static const u64 asks[] = { 0, 1, 2, 3, 1000, 65535, 65536,
				    GRAN / 2, GRAN - 1, GRAN, GRAN + 1,
				    2 * GRAN - 1, 2 * GRAN, 3 * GRAN,
				    1000 * GRAN, S64_MAX, U64_MAX };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(asks); i++) {
		unsigned int class = tw_slack_class(GRAN, asks[i]);
		u64 eff = tw_class_slack(GRAN, class);

		KUNIT_EXPECT_LT(test, class, 64U);
		if (asks[i] >= GRAN && (asks[i] < 2 * GRAN || asks[i] == U64_MAX)) {
			KUNIT_EXPECT_EQ(test, class, 0U);
			KUNIT_EXPECT_EQ(test, eff, (u64)GRAN);
			continue;
		}
		if (asks[i] >= GRAN) {
			/* Coarse: a power of two of ticks, at most the ask. */
			KUNIT_EXPECT_TRUE(test, tw_class_coarse(class));
			KUNIT_EXPECT_LE(test, eff, asks[i]);
			/* At least half of it, below the largest class. */
			if (class < TW_SLACK_COARSE_MAX)
				KUNIT_EXPECT_GT(test, 2 * eff + GRAN, asks[i]);
			KUNIT_EXPECT_EQ(test, tw_slack_class(GRAN, eff), class);
			continue;
		}
		KUNIT_EXPECT_NE(test, class, 0U);
		KUNIT_EXPECT_LE(test, eff, asks[i]);
		KUNIT_EXPECT_GE(test, 2 * eff, asks[i] == 1 ? 1 : asks[i] & ~1ULL);
	}
}

static struct kunit_case tw_wheel_cases[] = {
	KUNIT_CASE_PARAM(tw_test_delay, tw_delay_gen_params),
	KUNIT_CASE(tw_test_max_deadline),
	KUNIT_CASE(tw_test_levels),
	KUNIT_CASE(tw_test_past),
	KUNIT_CASE(tw_test_advance_shortcut),
	KUNIT_CASE(tw_test_fifo),
	KUNIT_CASE(tw_test_level0_order),
	KUNIT_CASE_SLOW(tw_test_mass_expiry),
	KUNIT_CASE(tw_test_hold_sort),
	KUNIT_CASE(tw_test_hold_release_early),
	KUNIT_CASE(tw_test_spill),
	KUNIT_CASE(tw_test_spill_order),
	KUNIT_CASE(tw_test_spill_hold_order),
	KUNIT_CASE(tw_test_unlink),
	KUNIT_CASE(tw_test_pop),
	KUNIT_CASE(tw_test_sort_bounded),
	KUNIT_CASE_PARAM(tw_test_precise_edge, tw_precise_edge_gen_params),
	KUNIT_CASE(tw_test_precise_coalesce),
	KUNIT_CASE(tw_test_precise_move_floor),
	KUNIT_CASE(tw_test_precise_full),
	KUNIT_CASE(tw_test_precise_kinds),
	KUNIT_CASE(tw_test_precise_share),
	KUNIT_CASE(tw_test_precise_hard),
	KUNIT_CASE(tw_test_precise_slack_class),
	KUNIT_CASE(tw_test_coarse_slack),
	{}
};

static struct kunit_suite tw_wheel_suite = {
	.name = "twheel_wheel",
	.test_cases = tw_wheel_cases,
};

/* ---------------------------------------------------------------------
 * twheel_api: the real wheels
 */

/* Lateness allowed under TCG emulation with KASAN; early is never allowed. */
#define LATE_MAX_NS	(2 * NSEC_PER_SEC)
#define WAIT_MAX	(20 * HZ)

struct tw_probe {
	union {		/* periodic-capable; @timer is what tests pass */
		struct twheel_timer		timer;
		struct twheel_periodic_timer	pt;
		/* A user's timer, as /dev/twheel's (tw_test_share[]). */
		struct tw_shared_timer		st;
	};
	struct twheel_group_member	member;
	atomic_t		runs;
	atomic_t		early;
	u64			missed;
	ktime_t			deadlines[8];
	ktime_t			ends[8];
	u64			misses[8];
	ktime_t			end_deadline;
	unsigned int		stop_after;
	unsigned int		delay_ms;
	bool			rearm;
	struct completion	done;
	struct completion	started;
	int			index;
	int			cpu;		/* where the callback last ran */
	atomic_t		*order;
	atomic_t		*disorder;
	atomic_t		*fired;
};

static void tw_probe_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_probe *p = container_of(t, struct tw_probe, timer);
	int n = atomic_read(&p->runs);

	if (ktime_get() < twheel_deadline(t))
		atomic_inc(&p->early);
	if (n < ARRAY_SIZE(p->deadlines)) {
		p->deadlines[n] = twheel_deadline(t);
		p->misses[n] = missed;
	}
	p->missed += missed;
	complete(&p->started);
	if (p->delay_ms) {
		/* Spin on the wheel's own clock: mdelay() drifts under emulation. */
		ktime_t end = ktime_get() + p->delay_ms * NSEC_PER_MSEC;

		while (ktime_get() < end)
			cpu_relax();
	}
	if (n < ARRAY_SIZE(p->ends))
		p->ends[n] = ktime_get();
	p->end_deadline = twheel_deadline(t);
	WRITE_ONCE(p->cpu, raw_smp_processor_id());
	atomic_inc(&p->runs);
	if (p->rearm) {
		p->rearm = false;
		twheel_schedule(t, 5 * NSEC_PER_MSEC);
		return;
	}
	if (p->stop_after && n + 1 >= p->stop_after) {
		/* A periodic timer stops itself: still pending, so true. */
		WARN_ON(!twheel_cancel(t));
		complete(&p->done);
	} else if (!p->stop_after) {
		complete(&p->done);
	}
}

static void tw_probe_init(struct tw_probe *p)
{
	memset(p, 0, sizeof(*p));
	twheel_periodic_timer_init(&p->pt, tw_probe_fn);
	init_completion(&p->done);
	init_completion(&p->started);
}

/*
 * Waits for the one expiry of a one-shot probe and lets go of it: it ran
 * once, not early. Returns how late its callback ended.
 */
static s64 tw_expect_fired_once(struct kunit *test, struct tw_probe *p)
{
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	twheel_cancel_sync(&p->timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	return p->ends[0] - p->deadlines[0];
}

static void tw_test_oneshot(struct kunit *test)
{
	struct tw_probe p;
	ktime_t deadline;

	tw_probe_init(&p);
	deadline = ktime_get() + 20 * NSEC_PER_MSEC;
	KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p.timer, deadline), 0);
	KUNIT_EXPECT_TRUE(test, twheel_pending(&p.timer));
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p.done, WAIT_MAX), 0);
	twheel_cancel_sync(&p.timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.early), 0);
	KUNIT_EXPECT_EQ(test, p.deadlines[0], deadline);
	KUNIT_EXPECT_LT(test, p.ends[0] - deadline, (ktime_t)LATE_MAX_NS);
	KUNIT_EXPECT_FALSE(test, twheel_pending(&p.timer));
	/* Cancel after expiry: nothing to stop. */
	KUNIT_EXPECT_FALSE(test, twheel_cancel(&p.timer));
}

static void tw_test_bad_args(struct kunit *test)
{
	struct twheel_timer plain;
	struct tw_probe p;

	/* A plain timer has no room for a period: one-shot only. */
	twheel_timer_init(&plain, tw_probe_fn, 0);
	KUNIT_EXPECT_EQ(test, twheel_arm(&plain, KTIME_MAX, 1, TWHEEL_FIXED_RATE),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_arm(&plain, KTIME_MAX, 1, TWHEEL_FIXED_DELAY),
			-EINVAL);
	KUNIT_EXPECT_FALSE(test, twheel_pending(&plain));
	KUNIT_EXPECT_EQ(test, twheel_arm(&plain, KTIME_MAX, 0, TWHEEL_ONESHOT), 0);
	KUNIT_EXPECT_TRUE(test, twheel_cancel_sync(&plain));

	tw_probe_init(&p);
	KUNIT_EXPECT_EQ(test, twheel_arm(&p.timer, -1, 0, TWHEEL_ONESHOT), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_arm(&p.timer, 0, 5, TWHEEL_ONESHOT), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_arm(&p.timer, 0, 0, TWHEEL_FIXED_RATE), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_arm(&p.timer, 0, 0, TWHEEL_FIXED_DELAY), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_arm(&p.timer, 0, 1, 7), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, U64_MAX), -ERANGE);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, KTIME_MAX), -ERANGE);
	KUNIT_EXPECT_EQ(test, twheel_timer_set_cpu(&p.timer, -3), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_timer_set_cpu(&p.timer, nr_cpu_ids), -EINVAL);
	KUNIT_EXPECT_FALSE(test, twheel_pending(&p.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 0);
}

static void tw_test_cancel_pending(struct kunit *test)
{
	struct tw_probe p;

	tw_probe_init(&p);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&p.timer, 50 * NSEC_PER_MSEC), 0);
	/* Re-scheduling a pending timer moves it and says it was pending. */
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, 60 * NSEC_PER_MSEC), 1);
	KUNIT_EXPECT_TRUE(test, twheel_cancel(&p.timer));
	KUNIT_EXPECT_FALSE(test, twheel_cancel(&p.timer));
	msleep(150);
	KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 0);
}

/* Park @cpu with interrupts off, so its submission list is not drained. */
struct tw_park {
	atomic_t	parked;
	atomic_t	release;
};

static void tw_park_fn(void *arg)
{
	struct tw_park *park = arg;
	u64 limit = ktime_get() + 10 * NSEC_PER_SEC;

	atomic_set(&park->parked, 1);
	while (!atomic_read(&park->release) && ktime_get() < limit)
		cpu_relax();
}

/* Cancel while the timer is still on the owner's submission list. */
static void tw_test_cancel_in_llist(struct kunit *test)
{
	static call_single_data_t csd;
	struct tw_park park = {};
	struct tw_probe p;
	int this, other;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	tw_probe_init(&p);
	this = get_cpu();
	other = cpumask_any_but(cpu_online_mask, this);
	INIT_CSD(&csd, tw_park_fn, &park);
	KUNIT_ASSERT_EQ(test, smp_call_function_single_async(other, &csd), 0);
	while (!atomic_read(&park.parked))
		cpu_relax();
	twheel_timer_set_cpu(&p.timer, other);
	/* @other has interrupts off: the arming waits on its list. */
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, 0), 0);
	KUNIT_EXPECT_TRUE(test, twheel_cancel(&p.timer));
	atomic_set(&park.release, 1);
	put_cpu();
	KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p.timer));
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 0);
}

/*
 * A cancel from another CPU sends no IPI: the timer waits on its owner's
 * list until the owner's next run. twheel_cancel_sync() kicks the owner,
 * since it waits for it.
 */
#define LAZY_N	64

static void tw_nop_fn(void *info)
{
}

/*
 * Waits until every IPI queued to @cpu before the call has run. The
 * armings above can leave a redundant kick in flight (one sent after the
 * owner cleared @kicked, whose drain had already taken the entry), and it
 * would be counted after the test took its count. Two synchronous calls:
 * a flush of @cpu's queue runs its synchronous entries before the others,
 * so the first can return before an earlier kick has run; the second is
 * taken by a later flush, after that kick.
 */
static void tw_settle_ipis(int cpu)
{
	smp_call_function_single(cpu, tw_nop_fn, NULL, 1);
	smp_call_function_single(cpu, tw_nop_fn, NULL, 1);
}

/*
 * Two CPUs' test: @n probes in *@p, migration off, this CPU in *@this;
 * returns another online CPU. Skips the test on one CPU.
 */
static int tw_remote_setup(struct kunit *test, unsigned int n,
			   struct tw_probe **p, int *this)
{
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	*p = kunit_kcalloc(test, n, sizeof(**p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, *p);
	migrate_disable();
	*this = smp_processor_id();
	return cpumask_any_but(cpu_online_mask, *this);
}

static void tw_test_lazy_cancel(struct kunit *test)
{
	struct tw_probe *p, probe;
	u64 kicks;
	int this, other, i;

	other = tw_remote_setup(test, LAZY_N, &p, &this);
	for (i = 0; i < LAZY_N; i++) {
		tw_probe_init(&p[i]);
		twheel_timer_set_cpu(&p[i].timer, other);
		KUNIT_EXPECT_EQ(test, twheel_schedule(&p[i].timer, 60 * NSEC_PER_SEC), 0);
	}
	/* The owner drains in order: once this one fires, all are linked. */
	tw_probe_init(&probe);
	twheel_timer_set_cpu(&probe.timer, other);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&probe.timer, 0), 0);
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&probe.done, WAIT_MAX), 0);
	twheel_cancel_sync(&probe.timer);

	tw_settle_ipis(other);
	kicks = twheel_kicks(other);
	for (i = 0; i < LAZY_N; i++)
		KUNIT_EXPECT_TRUE(test, twheel_cancel(&p[i].timer));
	/* Room for a wrong IPI to land: none may. */
	msleep(100);
	KUNIT_EXPECT_EQ(test, twheel_kicks(other) - kicks, 0);

	/* Waiting for the owner to let go kicks it, once for the lot. */
	KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p[0].timer));
	KUNIT_EXPECT_GE(test, twheel_kicks(other) - kicks, 1);
	for (i = 1; i < LAZY_N; i++)
		KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p[i].timer));
	KUNIT_EXPECT_LE(test, twheel_kicks(other) - kicks, 2);
	migrate_enable();
	for (i = 0; i < LAZY_N; i++)
		KUNIT_EXPECT_EQ(test, atomic_read(&p[i].runs), 0);
}

/*
 * An arming for another CPU's wheel that will not run by the deadline: a
 * near deadline kicks the owner at once; one four granules ahead or more
 * sends no IPI, and the owner's courier kicks it in time (tw_push_far()).
 * Each timer fires once, on its owner, never early. The far ones are armed
 * latest first, so that each is the earliest yet and moves the courier.
 */
#define COURIER_N	16

static void tw_test_remote_far_courier(struct kunit *test)
{
	struct tw_probe *p, near;
	ktime_t start;
	u64 kicks;
	int this, other, i;

	other = tw_remote_setup(test, COURIER_N, &p, &this);
	tw_probe_init(&near);
	twheel_timer_set_cpu(&near.timer, other);
	tw_settle_ipis(other);
	kicks = twheel_kicks(other);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&near.timer, twheel_granularity()), 0);
	tw_settle_ipis(other);
	KUNIT_EXPECT_GE(test, twheel_kicks(other) - kicks, 1);
	KUNIT_EXPECT_LE(test, tw_expect_fired_once(test, &near), (s64)LATE_MAX_NS);

	tw_settle_ipis(other);
	kicks = twheel_kicks(other);
	start = ktime_get();
	for (i = 0; i < COURIER_N; i++) {
		tw_probe_init(&p[i]);
		twheel_timer_set_cpu(&p[i].timer, other);
		KUNIT_EXPECT_EQ(test, twheel_schedule_at(&p[i].timer, start +
				NSEC_PER_SEC + (COURIER_N - i) * NSEC_PER_MSEC), 0);
	}
	tw_settle_ipis(other);
	KUNIT_EXPECT_EQ(test, twheel_kicks(other) - kicks, 0);
	migrate_enable();
	for (i = 0; i < COURIER_N; i++) {
		KUNIT_EXPECT_LE(test, tw_expect_fired_once(test, &p[i]),
				(s64)LATE_MAX_NS);
		KUNIT_EXPECT_EQ(test, READ_ONCE(p[i].cpu), other);
	}
	kunit_info(test, "cpu %d armed %d far timers on cpu %d: %llu kicks there until they fired\n",
		   this, COURIER_N, other, twheel_kicks(other) - kicks);
}

/*
 * Issue 29: a re-arm from another CPU is that CPU's work. The timers are
 * armed on @other's wheel (from an IPI there), then re-armed over and over
 * from this CPU: the first re-arm moves each timer here (its old holder
 * only unlinks it), the rest are local, and every callback runs here. On
 * the old code each re-arm went through @other's list and IPI, and the
 * callbacks ran on @other.
 */
#define MIGRATE_N	64
#define MIGRATE_ROUNDS	64

struct tw_migrate {
	struct tw_probe	*p;
	int		armed;
};

static void tw_migrate_arm_fn(void *arg)
{
	struct tw_migrate *m = arg;
	int i;

	for (i = 0; i < MIGRATE_N; i++)
		m->armed += !twheel_schedule(&m->p[i].timer, 60 * NSEC_PER_SEC);
}

static void tw_test_remote_rearm_migrates(struct kunit *test)
{
	struct tw_migrate m = {};
	int this, other, i, r, was_pending = 0, here = 0;
	ktime_t soon;
	u64 kicks;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	m.p = kunit_kcalloc(test, MIGRATE_N, sizeof(*m.p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m.p);
	/* Pinned: linked on @other's wheel even when @other is idle. */
	for (i = 0; i < MIGRATE_N; i++) {
		tw_probe_init(&m.p[i]);
		twheel_timer_set_cpu(&m.p[i].timer, TWHEEL_THIS_CPU);
	}
	migrate_disable();
	this = smp_processor_id();
	other = cpumask_any_but(cpu_online_mask, this);
	/* Armed in @other's hard interrupt: linked on its wheel at once. */
	KUNIT_ASSERT_EQ(test, smp_call_function_single(other, tw_migrate_arm_fn,
						       &m, 1), 0);
	KUNIT_ASSERT_EQ(test, m.armed, MIGRATE_N);
	kicks = twheel_kicks(other);
	for (r = 0; r < MIGRATE_ROUNDS; r++)
		for (i = 0; i < MIGRATE_N; i++)
			was_pending += twheel_schedule(&m.p[i].timer,
						       (60 + r) * NSEC_PER_SEC) == 1;
	soon = ktime_get() + 20 * NSEC_PER_MSEC;
	for (i = 0; i < MIGRATE_N; i++)
		was_pending += twheel_schedule_at(&m.p[i].timer, soon) == 1;
	migrate_enable();
	KUNIT_EXPECT_EQ(test, was_pending, MIGRATE_N * (MIGRATE_ROUNDS + 1));
	for (i = 0; i < MIGRATE_N; i++) {
		KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&m.p[i].done,
								  WAIT_MAX), 0);
		twheel_cancel_sync(&m.p[i].timer);
		KUNIT_EXPECT_EQ(test, atomic_read(&m.p[i].runs), 1);
		KUNIT_EXPECT_EQ(test, atomic_read(&m.p[i].early), 0);
		here += READ_ONCE(m.p[i].cpu) == this;
	}
	kunit_info(test, "%d re-arms from cpu %d of timers held by cpu %d: %llu kicks there, %d of %d callbacks here\n",
		   MIGRATE_N * (MIGRATE_ROUNDS + 1), this, other,
		   twheel_kicks(other) - kicks, here, MIGRATE_N);
	KUNIT_EXPECT_EQ(test, here, MIGRATE_N);
	/* At most one kick per timer moved, whatever the number of rounds. */
	KUNIT_EXPECT_LE(test, twheel_kicks(other) - kicks, MIGRATE_N);
}

/*
 * Issue 43, item 4: an arming, a re-arm or a cancel that leaves the wheel's
 * next expiry where it was costs no hrtimer programming; an arming before
 * it costs one. Nor does an arming made while the wheel runs (a callback's,
 * or one from afar that the run drains): the run programs the hrtimer once,
 * at its end. Three cases on this CPU, each bracketed so that no other run
 * of the wheel can fall inside it: armings with interrupts off; a
 * callback's armings, counted from inside it; armings from another CPU,
 * counted from before they were made to the callback of the run that
 * drained them. Each batch is armed latest first, 70 ms apart (beyond a
 * level-1 bucket), so that each arming is the earliest yet of its batch.
 * Then every timer fires once, on this CPU, never early.
 */
#define LAZY_REARM_N	16
#define LAZY_STEP_NS	(70 * NSEC_PER_MSEC)
/* Tries of the armings from afar before a stalled host is given up on. */
#define LAZY_TRIES	3

struct tw_lazy {
	struct twheel_timer	timer;
	struct tw_probe		*arm;	/* armed by the callback, if any */
	ktime_t			base;
	ktime_t			deadline;
	u64			progs_in;	/* at the callback's start */
	u64			progs_out;	/* after its armings */
	int			cpu;
	bool			early;
	struct completion	done;
};

/* @p's LAZY_REARM_N probes, latest first, the earliest LAZY_STEP_NS after @base. */
static void tw_lazy_arm(struct tw_probe *p, ktime_t base)
{
	int i;

	for (i = 0; i < LAZY_REARM_N; i++)
		WARN_ON(twheel_schedule_at(&p[i].timer, base +
					   (LAZY_REARM_N - i) * LAZY_STEP_NS));
}

static void tw_lazy_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_lazy *l = container_of(t, struct tw_lazy, timer);
	int cpu = smp_processor_id();

	l->early = ktime_get() < l->deadline;
	l->cpu = cpu;
	l->progs_in = twheel_programs(cpu);
	if (l->arm)
		tw_lazy_arm(l->arm, l->base);
	l->progs_out = twheel_programs(cpu);
	complete(&l->done);
}

static void tw_lazy_start(struct kunit *test, struct tw_lazy *l,
			  struct tw_probe *arm, ktime_t base, ktime_t deadline)
{
	memset(l, 0, sizeof(*l));
	twheel_timer_init(&l->timer, tw_lazy_fn, 0);
	init_completion(&l->done);
	l->arm = arm;
	l->base = base;
	l->deadline = deadline;
	KUNIT_ASSERT_EQ(test, twheel_schedule_at(&l->timer, deadline), 0);
}

/*
 * Wait for @l's callback, then for the rest of its run: on PREEMPT_RT the
 * run is a thread that may still be going (local_bh_disable() waits for it).
 */
static void tw_lazy_wait(struct kunit *test, struct tw_lazy *l, int cpu)
{
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&l->done, WAIT_MAX), 0);
	local_bh_disable();
	local_bh_enable();
	twheel_cancel_sync(&l->timer);
	KUNIT_EXPECT_FALSE(test, l->early);
	KUNIT_EXPECT_EQ(test, l->cpu, cpu);
}

struct tw_lazy_remote {
	struct tw_probe	*p;
	ktime_t		base;
};

static void tw_lazy_remote_fn(void *arg)
{
	struct tw_lazy_remote *r = arg;

	tw_lazy_arm(r->p, r->base);
}

static void tw_test_lazy_rearm(struct kunit *test)
{
	struct tw_probe *p, *remote, *cb, *later, *warm, *first, *earlier;
	u64 p0, p1, p2, progs_remote, kicks;
	struct tw_lazy_remote r;
	bool stalled = false;
	struct tw_lazy *l;
	ktime_t start;
	int this, other, i;

	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l);
	/* The batches, then three probes of their own. */
	other = tw_remote_setup(test, 3 * LAZY_REARM_N + 3, &p, &this);
	remote = p;
	cb = p + LAZY_REARM_N;
	later = p + 2 * LAZY_REARM_N;
	warm = p + 3 * LAZY_REARM_N;
	first = warm + 1;
	earlier = warm + 2;
	for (i = 0; i < 3 * LAZY_REARM_N + 3; i++) {
		tw_probe_init(&p[i]);
		twheel_timer_set_cpu(&p[i].timer, this);
	}
	/* A run brings the wheel's clock to now: near timers go to level 0. */
	KUNIT_ASSERT_EQ(test, twheel_schedule(&warm->timer, 0), 0);
	tw_expect_fired_once(test, warm);

	/*
	 * From afar, later than a pending timer here: drained by its run.
	 * That run must come after the armings: a host that stalls the
	 * vCPUs past the timer's deadline meanwhile (seen on 7.2 in a
	 * fresh-clone make check) puts it inside the window; then again,
	 * with a later deadline, 3 tries at most.
	 */
	for (i = 1; i <= LAZY_TRIES; i++) {
		start = ktime_get();
		tw_lazy_start(test, l, NULL, 0, start + i * 30 * NSEC_PER_MSEC);
		tw_settle_ipis(this);
		kicks = twheel_kicks(this);
		p0 = twheel_programs(this);
		r.p = remote;
		r.base = start + NSEC_PER_SEC;
		KUNIT_ASSERT_EQ(test, smp_call_function_single(other,
							       tw_lazy_remote_fn,
							       &r, 1), 0);
		p1 = twheel_programs(this);
		stalled = completion_done(&l->done);
		tw_settle_ipis(this);
		kicks = twheel_kicks(this) - kicks;
		tw_lazy_wait(test, l, this);
		if (!stalled)
			break;
		kunit_info(test, "try %d: the timer's run came before the armings from afar were done\n",
			   i);
	}
	progs_remote = l->progs_in - p1;
	if (!stalled) {
		KUNIT_EXPECT_EQ(test, p1 - p0, 0);
		KUNIT_EXPECT_EQ(test, progs_remote, 0);
	}
	kunit_info(test, "%d armings from cpu %d for cpu %d: %llu kicks, %llu programmings, %llu in the run that drained them%s\n",
		   LAZY_REARM_N, other, this, kicks, p1 - p0, progs_remote,
		   stalled ? " (not checked: every try stalled)" : "");

	/* From a callback, later than the timers above. */
	start = ktime_get();
	tw_lazy_start(test, l, cb, start + 2 * NSEC_PER_SEC,
		      start + 20 * NSEC_PER_MSEC);
	tw_lazy_wait(test, l, this);
	KUNIT_EXPECT_EQ(test, l->progs_out - l->progs_in, 0);
	kunit_info(test, "%d armings from a callback: %llu programmings\n",
		   LAZY_REARM_N, l->progs_out - l->progs_in);

	/*
	 * Here, interrupts off: later than @first, then moved (still later),
	 * half of them cancelled; then @earlier, before everything pending.
	 */
	start = ktime_get();
	KUNIT_ASSERT_EQ(test, twheel_schedule_at(&first->timer,
						 start + 300 * NSEC_PER_MSEC), 0);
	local_irq_disable();
	p0 = twheel_programs(this);
	tw_lazy_arm(later, start + NSEC_PER_SEC);
	for (i = 0; i < LAZY_REARM_N; i++)
		WARN_ON(twheel_schedule_at(&later[i].timer, start +
					   NSEC_PER_SEC / 2 + (i + 10) * LAZY_STEP_NS) != 1);
	for (i = 1; i < LAZY_REARM_N; i += 2)
		WARN_ON(!twheel_cancel(&later[i].timer));
	p1 = twheel_programs(this);
	WARN_ON(twheel_schedule_at(&earlier->timer, start + 100 * NSEC_PER_MSEC));
	p2 = twheel_programs(this);
	local_irq_enable();
	KUNIT_EXPECT_EQ(test, p1 - p0, 0);
	KUNIT_EXPECT_EQ(test, p2 - p1, 1);
	kunit_info(test, "%d armings, %d re-arms, %d cancels, all later than a pending timer: %llu programmings; one arming before it: %llu\n",
		   LAZY_REARM_N, LAZY_REARM_N, LAZY_REARM_N / 2, p1 - p0, p2 - p1);
	migrate_enable();

	/* All on time, on this CPU; the cancelled ones not at all. */
	for (i = 0; i < 3 * LAZY_REARM_N + 3; i++) {
		if (&p[i] == warm)
			continue;
		if (&p[i] >= later && &p[i] < warm && (i & 1)) {
			KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p[i].timer));
			KUNIT_EXPECT_EQ(test, atomic_read(&p[i].runs), 0);
			continue;
		}
		KUNIT_EXPECT_LE(test, tw_expect_fired_once(test, &p[i]),
				(s64)LATE_MAX_NS);
		KUNIT_EXPECT_EQ(test, READ_ONCE(p[i].cpu), this);
	}
}

/* Cancel from its own callback; re-arm from its own callback. */
static void tw_test_callback_rearm(struct kunit *test)
{
	struct tw_probe p;

	tw_probe_init(&p);
	p.rearm = true;
	KUNIT_ASSERT_EQ(test, twheel_schedule(&p.timer, NSEC_PER_MSEC), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p.done, WAIT_MAX), 0);
	twheel_cancel_sync(&p.timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.early), 0);
}

static void tw_test_periodic_rate(struct kunit *test)
{
	u64 period = 10 * NSEC_PER_MSEC;
	struct tw_probe p;
	int i, runs;

	tw_probe_init(&p);
	p.stop_after = 4;
	p.delay_ms = 35;	/* overrun: three periods per callback */
	KUNIT_ASSERT_EQ(test, twheel_arm(&p.timer, ktime_get() + period, period,
					 TWHEEL_FIXED_RATE), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p.done, WAIT_MAX), 0);
	twheel_cancel_sync(&p.timer);
	runs = atomic_read(&p.runs);
	KUNIT_EXPECT_EQ(test, runs, 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.early), 0);
	/* No drift: each deadline is the previous plus whole periods. */
	for (i = 1; i < runs; i++) {
		KUNIT_EXPECT_EQ(test, p.deadlines[i],
				p.deadlines[i - 1] + (p.misses[i - 1] + 1) * period);
		/* A 35 ms callback makes the next call at least 2 periods late. */
		KUNIT_EXPECT_GE(test, p.misses[i], 2ULL);
	}
	KUNIT_EXPECT_FALSE(test, twheel_pending(&p.timer));
}

static void tw_test_periodic_delay(struct kunit *test)
{
	u64 period = 10 * NSEC_PER_MSEC;
	struct tw_probe p;
	int i;

	tw_probe_init(&p);
	p.stop_after = 4;
	p.delay_ms = 20;
	KUNIT_ASSERT_EQ(test, twheel_arm(&p.timer, ktime_get() + period, period,
					 TWHEEL_FIXED_DELAY), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p.done, WAIT_MAX), 0);
	twheel_cancel_sync(&p.timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.early), 0);
	KUNIT_EXPECT_EQ(test, p.missed, 0ULL);
	/* The next deadline counts from the end of the previous callback. */
	for (i = 1; i < 4; i++)
		KUNIT_EXPECT_GE(test, p.deadlines[i], p.ends[i - 1] + (ktime_t)period);
}

/*
 * Start @p's callback on another CPU, where it spins for 100 ms, and return
 * once it runs. Skips the test on a single CPU.
 */
static void tw_start_remote_callback(struct kunit *test, struct tw_probe *p)
{
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	tw_probe_init(p);
	p->delay_ms = 100;
	twheel_timer_set_cpu(&p->timer, cpumask_any_but(cpu_online_mask,
							raw_smp_processor_id()));
	KUNIT_ASSERT_EQ(test, twheel_schedule(&p->timer, NSEC_PER_MSEC), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->started, WAIT_MAX), 0);
}

/* cancel_sync from another CPU waits for a callback that is running. */
static void tw_test_cancel_sync_waits(struct kunit *test)
{
	struct tw_probe p;

	tw_start_remote_callback(test, &p);
	/* The callback runs: the expiry won, so cancel says false, and waits. */
	KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 1);
}

/* Re-armed by someone else while its callback runs: the deadline stays. */
static void tw_test_deadline_in_callback(struct kunit *test)
{
	struct tw_probe p;

	tw_start_remote_callback(test, &p);
	/* Running, so not pending: the new arming is a fresh one. */
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, 10 * NSEC_PER_SEC), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p.done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, p.end_deadline, p.deadlines[0]);
	KUNIT_EXPECT_GT(test, twheel_deadline(&p.timer), p.deadlines[0]);
	KUNIT_EXPECT_TRUE(test, twheel_cancel_sync(&p.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 1);
}

struct tw_sleeper {
	struct twheel_work_timer	wt;
	struct completion		started;
	atomic_t			finished;
};

static void tw_sleeper_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_sleeper *s = container_of(t, struct tw_sleeper, wt.timer);

	complete(&s->started);
	msleep(100);		/* process context: sleeping is allowed */
	atomic_set(&s->finished, 1);
}

static void tw_test_process_context(struct kunit *test)
{
	struct tw_sleeper *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	twheel_work_timer_init(&s->wt, tw_sleeper_fn);
	init_completion(&s->started);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&s->wt.timer, NSEC_PER_MSEC), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&s->started, WAIT_MAX), 0);
	/* The callback sleeps: cancel_sync waits until it has returned. */
	KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&s->wt.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&s->finished), 1);
}

static void tw_test_shutdown(struct kunit *test)
{
	struct tw_probe p;

	tw_probe_init(&p);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&p.timer, NSEC_PER_SEC), 0);
	twheel_shutdown_sync(&p.timer);
	KUNIT_EXPECT_FALSE(test, twheel_pending(&p.timer));
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p.timer, 0), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, atomic_read(&p.runs), 0);
}

static void tw_count_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_probe *p = container_of(t, struct tw_probe, timer);

	if (ktime_get() < twheel_deadline(t))
		atomic_inc(&p->early);
	atomic_inc(&p->runs);
	if (p->order) {
		/* Equal deadlines armed on one CPU fire in arming order. */
		if (atomic_read(p->order) != p->index)
			atomic_inc(p->disorder);
		atomic_inc(p->order);
	}
	if (p->fired)
		atomic_inc(p->fired);
}

static struct tw_probe *tw_probes(struct kunit *test, unsigned int n)
{
	struct tw_probe *p = kvcalloc(n, sizeof(*p), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < n; i++) {
		twheel_timer_init(&p[i].timer, tw_count_fn, 0);
		p[i].index = i;
	}
	return p;
}

/*
 * Wait (60 s at most) until @n probes armed once each have fired, then
 * cancel them: each must have run once, none early.
 */
static void tw_probes_settle(struct kunit *test, struct tw_probe *p,
			     unsigned int n, atomic_t *fired)
{
	unsigned long limit = jiffies + 60 * HZ;
	unsigned int i, runs = 0, early = 0;

	while (atomic_read(fired) < n && time_before(jiffies, limit))
		msleep(20);
	for (i = 0; i < n; i++) {
		twheel_cancel_sync(&p[i].timer);
		runs += atomic_read(&p[i].runs);
		early += atomic_read(&p[i].early);
	}
	KUNIT_EXPECT_EQ(test, runs, n);
	KUNIT_EXPECT_EQ(test, early, 0U);
}

static void tw_test_group_cancel(struct kunit *test)
{
	unsigned int i, n = 10000, runs = 0;
	struct twheel_group g;
	struct tw_probe *p;

	p = tw_probes(test, n);
	twheel_group_init(&g);
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, twheel_group_add(&g, &p[i].member,
						       &p[i].timer), 0);
		KUNIT_ASSERT_EQ(test, twheel_schedule(&p[i].timer,
						      NSEC_PER_SEC + i * NSEC_PER_MSEC), 0);
	}
	KUNIT_EXPECT_EQ(test, twheel_group_cancel_sync(&g), n);
	KUNIT_EXPECT_EQ(test, twheel_group_shutdown_sync(&g), 0U);
	KUNIT_EXPECT_EQ(test, twheel_group_add(&g, &p[0].member, &p[0].timer),
			-ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p[1].timer, 0), -ESHUTDOWN);
	for (i = 0; i < n; i++)
		runs += atomic_read(&p[i].runs);
	KUNIT_EXPECT_EQ(test, runs, 0U);
	kvfree(p);
}

static atomic_t tw_million_fired;

static void tw_million_fn(struct twheel_timer *t, u64 missed)
{
	atomic_inc(&tw_million_fired);
}

/*
 * 1,000,000 timers armed and cancelled: each was either stopped by its
 * cancel or fired (arming a million may outlast the shortest delay under
 * emulation), never both, never neither.
 */
static void tw_test_million(struct kunit *test)
{
	unsigned int i, n = 1000000, stopped = 0;
	struct twheel_timer *t;

	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	atomic_set(&tw_million_fired, 0);
	for (i = 0; i < n; i++) {
		twheel_timer_init(&t[i], tw_million_fn, 0);
		KUNIT_ASSERT_EQ(test, twheel_schedule(&t[i], NSEC_PER_SEC +
			(get_random_u64() % (3600 * NSEC_PER_SEC))), 0);
	}
	for (i = 0; i < n; i++)
		stopped += twheel_cancel(&t[i]);
	for (i = 0; i < n; i++)
		twheel_cancel_sync(&t[i]);
	KUNIT_EXPECT_EQ(test, stopped + atomic_read(&tw_million_fired), n);
	KUNIT_EXPECT_GT(test, stopped, n / 2);
	kvfree(t);
}

/* 100,000 timers due at the same instant: all fire once, in order. */
/*
 * Timers with one deadline, armed on one CPU, fire in arming order as long
 * as at most TW_SORT_MAX come due in one tick: the sort that makes it so
 * runs with interrupts off, so a bigger tick is left in bucket order (a
 * bound on interrupts-off work, see wheel.c). Either way every timer fires
 * once and none early.
 */
static void tw_mass_same_instant(struct kunit *test, unsigned int n,
				 bool ordered)
{
	atomic_t order = ATOMIC_INIT(0), disorder = ATOMIC_INIT(0);
	atomic_t fired = ATOMIC_INIT(0);
	struct tw_probe *p;
	unsigned int i;
	ktime_t deadline;
	int cpu;

	p = tw_probes(test, n);
	cpu = get_cpu();
	/* Far enough that every arming is done first, even under KASAN. */
	deadline = ktime_get() + 200 * NSEC_PER_MSEC + n * 50 * NSEC_PER_USEC;
	for (i = 0; i < n; i++) {
		p[i].order = &order;
		p[i].disorder = &disorder;
		p[i].fired = &fired;
		twheel_timer_set_cpu(&p[i].timer, cpu);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, deadline), 0);
	}
	put_cpu();
	tw_probes_settle(test, p, n, &fired);
	if (ordered)
		KUNIT_EXPECT_EQ(test, atomic_read(&disorder), 0);
	kvfree(p);
}

static void tw_test_mass_same_instant(struct kunit *test)
{
	tw_mass_same_instant(test, 100000, false);
}

static void tw_test_same_instant_fifo(struct kunit *test)
{
	tw_mass_same_instant(test, TW_SORT_MAX, true);
}

/*
 * Issue 29: a wheel run stops after run_budget_us (default 2 ms); the rest
 * comes in later runs (after a work item on the CPU, or at once if the run
 * interrupted an idle CPU: see tw_test_run_budget_rt()). 64 timers due at
 * one instant on this CPU, each callback spinning 1 ms: the runs stop at
 * the budget, and the timers still fire once each, in arming order, none
 * early, all in softirq context.
 */
static atomic_t tw_budget_wrong_ctx;

static void tw_budget_fn(struct twheel_timer *t, u64 missed)
{
	ktime_t end = ktime_get() + NSEC_PER_MSEC;

	if (!in_serving_softirq())
		atomic_inc(&tw_budget_wrong_ctx);
	tw_count_fn(t, missed);
	/* Spin on the wheel's own clock: mdelay() drifts under emulation. */
	while (ktime_get() < end)
		cpu_relax();
}

static void tw_test_run_budget(struct kunit *test)
{
	atomic_t order = ATOMIC_INIT(0), disorder = ATOMIC_INIT(0);
	atomic_t fired = ATOMIC_INIT(0);
	unsigned int i, n = 64;
	struct tw_probe *p;
	ktime_t deadline;
	u64 yields;
	int cpu;

	p = tw_probes(test, n);
	atomic_set(&tw_budget_wrong_ctx, 0);
	cpu = get_cpu();
	yields = twheel_yields(cpu);
	deadline = ktime_get() + 100 * NSEC_PER_MSEC;
	for (i = 0; i < n; i++) {
		twheel_timer_init(&p[i].timer, tw_budget_fn, 0);
		p[i].order = &order;
		p[i].disorder = &disorder;
		p[i].fired = &fired;
		twheel_timer_set_cpu(&p[i].timer, cpu);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, deadline), 0);
	}
	put_cpu();
	tw_probes_settle(test, p, n, &fired);
	KUNIT_EXPECT_EQ(test, atomic_read(&disorder), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&tw_budget_wrong_ctx), 0);
	/*
	 * 64 ms of callbacks; a run looks at the clock every 8 expiries, so
	 * it stops after 8 of these at most: 7 yields at least.
	 */
	KUNIT_EXPECT_GE(test, twheel_yields(cpu) - yields, 4ULL);
	kunit_info(test, "%llu runs yielded\n", twheel_yields(cpu) - yields);
	kvfree(p);
}

/* tw_test_run_budget_rt(): a SCHED_FIFO task spinning until @until. */
struct tw_rt_spinner {
	ktime_t			until;
	ktime_t			began;
	atomic_t		*fired;
	int			fired_during;
	struct completion	done;
};

static int tw_rt_spin_fn(void *arg)
{
	struct tw_rt_spinner *sp = arg;

	sched_set_fifo(current);
	sp->began = ktime_get();
	while (ktime_get() < sp->until)
		cpu_relax();
	sp->fired_during = atomic_read(sp->fired);
	complete(&sp->done);
	/* Wait for kthread_stop(): the test holds no reference to us. */
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * A SCHED_FIFO spinner for @sp, bound to @cpu, not yet woken: it will spin
 * from its wake-up until 100 ms past *@deadline, which is set 300 ms from
 * now for the test's timers.
 */
static struct task_struct *tw_rt_spinner_make(struct kunit *test,
					      struct tw_rt_spinner *sp, int cpu,
					      ktime_t *deadline)
{
	struct task_struct *task;

	init_completion(&sp->done);
	task = kthread_create(tw_rt_spin_fn, sp, "twheel_rt_spin");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	kthread_bind(task, cpu);
	*deadline = ktime_get() + 300 * NSEC_PER_MSEC;
	sp->until = *deadline + 100 * NSEC_PER_MSEC;
	return task;
}

/* Wake the spinner, wait (60 s at most) for it to stop. Return: it did. */
static bool tw_rt_spinner_run(struct task_struct *task,
			      struct tw_rt_spinner *sp)
{
	bool ran;

	wake_up_process(task);
	/* Bounded: the spinner stops at @until, whatever the test sees. */
	ran = wait_for_completion_timeout(&sp->done, 60 * HZ);
	kthread_stop(task);
	return ran;
}

/*
 * Issue 29, the real-time side: the same burst as tw_test_run_budget(),
 * due while a SCHED_FIFO task spins on that CPU for 100 ms. A run may
 * interrupt it (a softirq on interrupt exit), but once over the budget it
 * must leave the rest to the work item, which the spinner outranks: at
 * most one run's claims (TW_CLOCK_EVERY, 8) fire while it spins, that run
 * counts a deferral, and the rest fire once it stops.
 */
static void tw_test_run_budget_rt(struct kunit *test)
{
	atomic_t fired = ATOMIC_INIT(0);
	struct tw_rt_spinner sp = { .fired = &fired };
	struct task_struct *task;
	unsigned int i, n = 64;
	struct tw_probe *p;
	ktime_t deadline;
	bool ran;
	u64 deferrals;
	int cpu;

	p = tw_probes(test, n);
	cpu = raw_smp_processor_id();
	deferrals = twheel_deferrals(cpu);
	task = tw_rt_spinner_make(test, &sp, cpu, &deadline);
	for (i = 0; i < n; i++) {
		twheel_timer_init(&p[i].timer, tw_budget_fn, 0);
		p[i].fired = &fired;
		twheel_timer_set_cpu(&p[i].timer, cpu);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, deadline), 0);
	}
	ran = tw_rt_spinner_run(task, &sp);
	KUNIT_EXPECT_TRUE(test, ran);
	tw_probes_settle(test, p, n, &fired);
	kunit_info(test, "%d of %u fired while a SCHED_FIFO task spun, %llu runs deferred\n",
		   sp.fired_during, n, twheel_deferrals(cpu) - deferrals);
	/* The emulator kept the spinner from starting before the deadline. */
	if (!ran || sp.began > deadline)
		kunit_skip(test, "the spinner began %lld us after the deadline",
			   ktime_us_delta(sp.began, deadline));
	KUNIT_EXPECT_LE(test, sp.fired_during, 8);
	if (sp.fired_during)
		KUNIT_EXPECT_GE(test, twheel_deferrals(cpu) - deferrals, 1ULL);
	kvfree(p);
}

/*
 * Issue 42, the other tenants' side: the burst of tw_test_run_budget_rt(),
 * but a user's (as /dev/twheel's timers, TW_F_RATED), and beside it two
 * bystanders on the same CPU due 20 ms after it: a kernel timer and
 * another user's. The run over its budget holds only the burst's user
 * (a hold, not a deferral of the whole wheel), so both bystanders fire
 * while the spinner still spins, 80 ms before the burst's rest may; the
 * burst still fires whole, in arming order, none early. Not on
 * PREEMPT_RT, where soft hrtimers expire in a thread the spinner
 * outranks: there they fire once it stops, as hrtimer's would.
 */
static void tw_test_run_budget_user(struct kunit *test)
{
	atomic_t order = ATOMIC_INIT(0), disorder = ATOMIC_INIT(0);
	atomic_t fired = ATOMIC_INIT(0);
	struct tw_rt_spinner sp = { .fired = &fired };
	struct task_struct *task;
	unsigned int i, n = 64;
	struct tw_probe *p, *by;
	unsigned int armed;
	ktime_t deadline, due;
	u64 deferrals, holds;
	bool ran;
	int cpu;

	p = tw_probes(test, n);
	by = kunit_kcalloc(test, 2, sizeof(*by), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, by);
	cpu = raw_smp_processor_id();
	deferrals = twheel_deferrals(cpu);
	holds = twheel_holds(cpu);
	task = tw_rt_spinner_make(test, &sp, cpu, &deadline);
	due = deadline + 20 * NSEC_PER_MSEC;
	/*
	 * Armed without a move to another CPU in between: the arming order
	 * is a per-CPU count (ci69: all 64 out of order once, the test's
	 * thread moved while it armed).
	 */
	armed = 0;
	preempt_disable();
	for (i = 0; i < n; i++) {
		twheel_timer_init(&p[i].timer, tw_budget_fn, 0);
		p[i].timer.flags |= TW_F_RATED;
		p[i].st.share = &tw_test_share[TW_OWN_A];
		p[i].fired = &fired;
		p[i].order = &order;
		p[i].disorder = &disorder;
		twheel_timer_set_cpu(&p[i].timer, cpu);
		armed += !twheel_schedule_at(&p[i].timer, deadline);
	}
	preempt_enable();
	KUNIT_ASSERT_EQ(test, armed, n);
	for (i = 0; i < 2; i++) {
		tw_probe_init(&by[i]);
		if (i) {
			by[i].timer.flags |= TW_F_RATED;
			by[i].st.share = &tw_test_share[TW_OWN_B];
		}
		twheel_timer_set_cpu(&by[i].timer, cpu);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&by[i].timer, due), 0);
	}
	ran = tw_rt_spinner_run(task, &sp);
	KUNIT_EXPECT_TRUE(test, ran);
	tw_probes_settle(test, p, n, &fired);
	KUNIT_EXPECT_EQ(test, atomic_read(&disorder), 0);
	for (i = 0; i < 2; i++) {
		/* Bounded: due long before the burst's rest. */
		KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&by[i].done,
								  WAIT_MAX), 0);
		twheel_cancel_sync(&by[i].timer);
		KUNIT_EXPECT_EQ(test, atomic_read(&by[i].runs), 1);
		KUNIT_EXPECT_EQ(test, atomic_read(&by[i].early), 0);
	}
	kunit_info(test, "%d of %u fired while a SCHED_FIFO task spun, %llu runs deferred, %llu held one user; the bystanders ended %lld and %lld us after their deadline, %lld and %lld us before the spinner stopped\n",
		   sp.fired_during, n, twheel_deferrals(cpu) - deferrals,
		   twheel_holds(cpu) - holds,
		   ktime_us_delta(by[0].ends[0], due),
		   ktime_us_delta(by[1].ends[0], due),
		   ktime_us_delta(sp.until, by[0].ends[0]),
		   ktime_us_delta(sp.until, by[1].ends[0]));
	kvfree(p);
	/* The emulator kept the spinner from starting before the deadline. */
	if (!ran || sp.began > deadline)
		kunit_skip(test, "the spinner began %lld us after the deadline",
			   ktime_us_delta(sp.began, deadline));
	KUNIT_EXPECT_LE(test, sp.fired_during, 8);
	if (!sp.fired_during)
		return;
	/* The whole wheel never waited for the burst: one user did. */
	KUNIT_EXPECT_EQ(test, twheel_deferrals(cpu) - deferrals, 0ULL);
	KUNIT_EXPECT_GE(test, twheel_holds(cpu) - holds, 1ULL);
	if (!IS_ENABLED(CONFIG_PREEMPT_RT)) {
		KUNIT_EXPECT_LT(test, by[0].ends[0], sp.until);
		KUNIT_EXPECT_LT(test, by[1].ends[0], sp.until);
	}
}

/*
 * A run stretched by one slow callback is not a burst (tw_rest_small()):
 * a user's 9 timers due together while a SCHED_FIFO task spins on their
 * CPU, the first callback spinning 3 ms, more than the run's budget. The
 * run that ran it goes over with at most a batch (8) left, whether it
 * claimed a batch or, after a test whose callbacks were slow, one timer
 * at a time (twheel_cpu::clock_each): it ends in a gap of a budget,
 * holding nobody, and the rest fire in the next run, while the spinner
 * still spins, not once it stops. Not on PREEMPT_RT, where soft hrtimers
 * expire in a thread the spinner outranks.
 */
/* TW_CLOCK_EVERY of expiry.c: the expiries claimed in one step. */
#define TW_TEST_BATCH	8

static void tw_test_run_budget_small(struct kunit *test)
{
	atomic_t fired = ATOMIC_INIT(0);
	struct tw_rt_spinner sp = { .fired = &fired };
	struct task_struct *task;
	unsigned int i, n = TW_TEST_BATCH + 1, late = 0;
	u64 deferrals, holds;
	ktime_t deadline;
	bool ran;
	struct tw_probe *p;
	int cpu;

	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		kunit_skip(test, "soft hrtimers expire in a thread the spinner outranks");
	p = kunit_kcalloc(test, n, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	cpu = raw_smp_processor_id();
	deferrals = twheel_deferrals(cpu);
	holds = twheel_holds(cpu);
	task = tw_rt_spinner_make(test, &sp, cpu, &deadline);
	for (i = 0; i < n; i++) {
		tw_probe_init(&p[i]);
		p[i].timer.flags |= TW_F_RATED;
		p[i].st.share = &tw_test_share[TW_OWN_A];
		p[i].delay_ms = i ? 0 : 3;
		twheel_timer_set_cpu(&p[i].timer, cpu);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, deadline), 0);
	}
	ran = tw_rt_spinner_run(task, &sp);
	KUNIT_EXPECT_TRUE(test, ran);
	for (i = 0; i < n; i++) {
		/* Bounded: due long before. */
		KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&p[i].done,
								  WAIT_MAX), 0);
		twheel_cancel_sync(&p[i].timer);
		KUNIT_EXPECT_EQ(test, atomic_read(&p[i].runs), 1);
		KUNIT_EXPECT_EQ(test, atomic_read(&p[i].early), 0);
		late += p[i].ends[0] >= sp.until;
	}
	kunit_info(test, "%u of %u ended after the spinner stopped; %llu runs held a user, %llu deferred\n",
		   late, n, twheel_holds(cpu) - holds,
		   twheel_deferrals(cpu) - deferrals);
	/* The emulator kept the spinner from starting before the deadline. */
	if (!ran || sp.began > deadline)
		kunit_skip(test, "the spinner began %lld us after the deadline",
			   ktime_us_delta(sp.began, deadline));
	KUNIT_EXPECT_EQ(test, late, 0U);
	KUNIT_EXPECT_EQ(test, twheel_holds(cpu) - holds, 0ULL);
	KUNIT_EXPECT_EQ(test, twheel_deferrals(cpu) - deferrals, 0ULL);
}

/*
 * The CPU a hotplug test takes down: the last online one, never CPU 0.
 * Skips the test where there is none.
 */
static int tw_hotplug_victim(struct kunit *test)
{
	int victim;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	victim = cpumask_last(cpu_online_mask);
	if (!victim)
		kunit_skip(test, "CPU 0 only");
	return victim;
}

/* Take a CPU down with timers pending on it: none lost, none twice. */
static void tw_test_hotplug(struct kunit *test)
{
	unsigned int i, n = 1000, runs = 0, early = 0;
	atomic_t fired = ATOMIC_INIT(0);
	unsigned long limit;
	struct tw_probe *p;
	int victim, ret;

	victim = tw_hotplug_victim(test);
	p = tw_probes(test, n);
	for (i = 0; i < n; i++) {
		p[i].fired = &fired;
		twheel_timer_set_cpu(&p[i].timer, victim);
		u64 delay = (i % 2 ? 300 : 3) * NSEC_PER_MSEC + i * 10000;

		KUNIT_ASSERT_EQ(test, twheel_schedule(&p[i].timer, delay), 0);
	}
	ret = remove_cpu(victim);
	if (ret) {
		for (i = 0; i < n; i++)
			twheel_cancel_sync(&p[i].timer);
		kvfree(p);
		kunit_skip(test, "remove_cpu: %d", ret);
	}
	limit = jiffies + 30 * HZ;
	while (atomic_read(&fired) < n && time_before(jiffies, limit))
		msleep(20);
	KUNIT_EXPECT_EQ(test, add_cpu(victim), 0);
	/* And back: timers armed on it again work. */
	twheel_timer_set_cpu(&p[0].timer, victim);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p[0].timer, NSEC_PER_MSEC), 0);
	limit = jiffies + 30 * HZ;
	while (atomic_read(&fired) < n + 1 && time_before(jiffies, limit))
		msleep(20);
	for (i = 0; i < n; i++) {
		twheel_cancel_sync(&p[i].timer);
		runs += atomic_read(&p[i].runs);
		early += atomic_read(&p[i].early);
	}
	KUNIT_EXPECT_EQ(test, runs, n + 1);
	KUNIT_EXPECT_EQ(test, early, 0U);
	kvfree(p);
}

/*
 * Item 4 of the safety review: a one-shot timer whose callback re-arms it
 * every time. twheel_cancel_sync() must cancel again once the callback has
 * returned, and end with the timer idle; the old code waited for ever.
 * Run in a thread and bounded, so that a regression fails instead of
 * hanging the suite.
 */
struct tw_rearmer {
	struct twheel_timer	timer;
	atomic_t		runs;
	atomic_t		stop;
	struct completion	started;
	struct completion	synced;
};

static void tw_rearmer_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_rearmer *r = container_of(t, struct tw_rearmer, timer);
	/* Long enough that the cancel lands while the callback runs. */
	ktime_t end = ktime_get() + 20 * NSEC_PER_MSEC;

	atomic_inc(&r->runs);
	complete(&r->started);
	while (ktime_get() < end)
		cpu_relax();
	if (!atomic_read(&r->stop))
		twheel_schedule(t, 0);
}

static int tw_rearmer_sync(void *arg)
{
	struct tw_rearmer *r = arg;

	twheel_cancel_sync(&r->timer);
	complete(&r->synced);
	return 0;
}

static void tw_test_cancel_sync_self_rearm(struct kunit *test)
{
	struct tw_rearmer *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct task_struct *task;
	unsigned long left;
	int runs;

	KUNIT_ASSERT_NOT_NULL(test, r);
	twheel_timer_init(&r->timer, tw_rearmer_fn, 0);
	init_completion(&r->started);
	init_completion(&r->synced);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&r->timer, 0), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&r->started, WAIT_MAX), 0);
	/* The callback runs now, and will re-arm its timer. */
	task = kthread_run(tw_rearmer_sync, r, "tw_rearm_sync");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	left = wait_for_completion_timeout(&r->synced, 10 * HZ);
	if (!left) {
		/* Let the old code's waiter finish before failing. */
		atomic_set(&r->stop, 1);
		wait_for_completion(&r->synced);
	}
	KUNIT_EXPECT_GT_MSG(test, left, 0UL,
			    "twheel_cancel_sync() did not return within 10 s");
	KUNIT_EXPECT_FALSE(test, twheel_pending(&r->timer));
	runs = atomic_read(&r->runs);
	msleep(50);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->runs), runs);
	atomic_set(&r->stop, 1);
	twheel_cancel_sync(&r->timer);
}

/*
 * Item 5: twheel_cancel() from another CPU returns true while the owner's
 * wheel may still reference the timer; the documented way to free it is
 * after twheel_cancel_sync(). Free right after that, then make the owner
 * run its wheel and drain: KASAN reports any touch of the freed timer.
 */
static void tw_test_remote_cancel_free(struct kunit *test)
{
	struct tw_probe *p, probe;
	int this, other, i;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	for (i = 0; i < 16; i++) {
		p = kmalloc(sizeof(*p), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, p);
		tw_probe_init(p);
		migrate_disable();
		this = smp_processor_id();
		other = cpumask_any_but(cpu_online_mask, this);
		twheel_timer_set_cpu(&p->timer, other);
		/*
		 * Due in 10 s: a guest stalled by a busy host between the
		 * arming and the cancel must not let it fire (20 ms did, once,
		 * beside a kernel build).
		 */
		KUNIT_EXPECT_EQ(test, twheel_schedule(&p->timer, 10 * NSEC_PER_SEC), 0);
		if (i & 1)
			usleep_range(200, 400);	/* linked on @other's wheel */
		KUNIT_EXPECT_TRUE(test, twheel_cancel(&p->timer));
		migrate_enable();
		KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p->timer));
		KUNIT_EXPECT_FALSE(test, twheel_pending(&p->timer));
		kfree(p);
	}
	/* The owner's wheel runs and drains after the frees. */
	tw_probe_init(&probe);
	twheel_timer_set_cpu(&probe.timer, other);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&probe.timer, 30 * NSEC_PER_MSEC), 0);
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&probe.done, WAIT_MAX), 0);
	twheel_cancel_sync(&probe.timer);
}

/*
 * Item 8: TWHEEL_F_PROCESS given to twheel_timer_init() on a plain timer
 * made the core treat it as a twheel_work_timer and write past it (KASAN:
 * slab-out-of-bounds). It is refused: the timer stays a softirq timer.
 */
/* TWHEEL_F_PROCESS where the compiler cannot see it. */
static unsigned int tw_process_flag = TWHEEL_F_PROCESS;

static void tw_softirq_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_probe *p = container_of(t, struct tw_probe, timer);

	if (!in_serving_softirq())
		atomic_inc(&p->early);	/* reused as "wrong context" */
	atomic_inc(&p->runs);
	complete(&p->done);
}

static void tw_test_process_flag_refused(struct kunit *test)
{
	/* Not a constant: a constant TWHEEL_F_PROCESS fails the build. */
	unsigned int flags = READ_ONCE(tw_process_flag);
	struct twheel_timer *t = kmalloc(sizeof(*t), GFP_KERNEL);
	struct tw_probe *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	twheel_timer_init(t, tw_softirq_fn, flags);
	kfree(t);

	init_completion(&p->done);
	twheel_timer_init(&p->timer, tw_softirq_fn, flags);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&p->timer, NSEC_PER_MSEC), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	twheel_cancel_sync(&p->timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
}

/*
 * Item 9: a work timer due again while its callback still sleeps is parked
 * once, not relinked on every tick of the 200 ms the callback takes (about
 * 200 times with the default 1 ms tick before), and still runs again after.
 */
struct tw_slow_work {
	struct twheel_work_timer	wt;
	atomic_t			runs;
	struct completion		started;
	struct completion		second;
};

static void tw_slow_work_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_slow_work *s = container_of(t, struct tw_slow_work, wt.timer);

	if (atomic_inc_return(&s->runs) == 1) {
		complete(&s->started);
		msleep(200);
	} else {
		complete(&s->second);
	}
}

/* Start the slow callback, and arm the timer due again while it sleeps. */
static void tw_slow_work_park(struct kunit *test, struct tw_slow_work *s)
{
	reinit_completion(&s->started);
	atomic_set(&s->runs, 0);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&s->wt.timer, 0), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&s->started, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&s->wt.timer, 0), 0);
	msleep(20);
}

static void tw_test_work_due_while_running(struct kunit *test)
{
	struct tw_slow_work *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	bool cancelled;
	u64 parks;

	KUNIT_ASSERT_NOT_NULL(test, s);
	twheel_work_timer_init(&s->wt, tw_slow_work_fn);
	init_completion(&s->started);
	init_completion(&s->second);
	KUNIT_ASSERT_EQ(test, twheel_schedule(&s->wt.timer, 0), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&s->started, WAIT_MAX), 0);
	parks = twheel_parks();
	/* Due at once, while the first run sleeps. */
	KUNIT_EXPECT_EQ(test, twheel_schedule(&s->wt.timer, 0), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&s->second, WAIT_MAX), 0);
	KUNIT_EXPECT_LE(test, twheel_parks() - parks, 2ULL);
	KUNIT_EXPECT_GE(test, twheel_parks() - parks, 1ULL);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->runs), 2);
	twheel_cancel_sync(&s->wt.timer);
	/*
	 * Parked, then cancel_sync while the callback still sleeps: it waits
	 * for the callback, then the parked expiry either runs or is the one
	 * cancelled, exactly one of the two, and the timer ends idle.
	 */
	tw_slow_work_park(test, s);
	cancelled = twheel_cancel_sync(&s->wt.timer);
	KUNIT_EXPECT_FALSE(test, twheel_pending(&s->wt.timer));
	KUNIT_EXPECT_EQ(test, atomic_read(&s->runs) + cancelled, 2);
	/* And a parked expiry cancelled without waiting is released. */
	tw_slow_work_park(test, s);
	KUNIT_EXPECT_TRUE(test, twheel_cancel(&s->wt.timer));
	twheel_cancel_sync(&s->wt.timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->runs), 1);
}

/*
 * Item 7: the release of a timer by a kick's drain runs in hard interrupt
 * context, where waking a waiter (a spinlock_t, a sleeping lock on
 * PREEMPT_RT) is invalid; with PROVE_RAW_LOCK_NESTING lockdep reports it
 * ("Invalid wait context"). Wait for lazily cancelled timers many times so
 * that the kick's drain releases them while we sleep.
 */
static void tw_test_wake_from_kick(struct kunit *test)
{
	struct tw_probe *p;
	int this, other, i;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	p = kunit_kcalloc(test, 64, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < 64; i++) {
		tw_probe_init(&p[i]);
		migrate_disable();
		this = smp_processor_id();
		other = cpumask_any_but(cpu_online_mask, this);
		twheel_timer_set_cpu(&p[i].timer, other);
		KUNIT_EXPECT_EQ(test, twheel_schedule(&p[i].timer, NSEC_PER_SEC), 0);
		usleep_range(100, 200);
		KUNIT_EXPECT_TRUE(test, twheel_cancel(&p[i].timer));
		migrate_enable();
		KUNIT_EXPECT_FALSE(test, twheel_cancel_sync(&p[i].timer));
	}
	for (i = 0; i < 64; i++)
		KUNIT_EXPECT_EQ(test, atomic_read(&p[i].runs), 0);
}

/*
 * Issue 29: shared one-shot timers armed, re-armed, cancelled and
 * cancel_synced from a kthread on every CPU. Every arming ends exactly one
 * way: its callback runs, a twheel_cancel() or twheel_cancel_sync() that
 * stopped it returns true, or a later arming finds it still pending and
 * returns 1. Counted per timer, the identity
 *	armings == callbacks + true cancels + re-arms of a pending timer
 * must hold once every thread has stopped and each timer had a last
 * twheel_cancel_sync(). A twheel_cancel_sync() that stopped two armings
 * and returned one true (issue 29) leaves one unaccounted. Two of the
 * timers are work timers whose callback takes 1 ms, so that expiries come
 * due while it runs (TW_PARKED) and cancels meet it running.
 */
#define TW_ACCT_TIMERS	5
#define TW_ACCT_WORK	2
#define TW_ACCT_MS	3000

struct tw_acct_timer {
	struct twheel_work_timer wt;	/* a plain timer uses wt.timer only */
	atomic_t		armed;
	atomic_t		rearmed;
	atomic_t		cancelled;
	atomic_t		fired;
};

struct tw_acct {
	struct tw_acct_timer	t[TW_ACCT_TIMERS];
	atomic_t		stop;
	atomic_t		running;
	atomic_t		ops;
	struct completion	done;
};

static void tw_acct_fn(struct twheel_timer *t, u64 missed)
{
	atomic_inc(&container_of(t, struct tw_acct_timer, wt.timer)->fired);
}

static void tw_acct_work_fn(struct twheel_timer *t, u64 missed)
{
	ktime_t end = ktime_get() + NSEC_PER_MSEC;

	atomic_inc(&container_of(t, struct tw_acct_timer, wt.timer)->fired);
	while (ktime_get() < end)
		cpu_relax();
}

static int tw_acct_thread(void *arg)
{
	struct tw_acct *a = arg;
	u32 r;
	int ret;

	while (!atomic_read(&a->stop)) {
		struct tw_acct_timer *at;

		r = get_random_u32();
		at = &a->t[r % TW_ACCT_TIMERS];
		r /= TW_ACCT_TIMERS;
		switch (r % 8) {
		case 0 ... 3:
			/* Mostly on another CPU's wheel: remote, lazy cancels. */
			twheel_timer_set_cpu(&at->wt.timer, (r >> 3) % 4 ?
					     (r >> 5) % num_online_cpus() :
					     TWHEEL_ANY_CPU);
			ret = twheel_schedule(&at->wt.timer,
					      ((r >> 4) % 4) * NSEC_PER_MSEC);
			if (ret >= 0)
				atomic_inc(&at->armed);
			if (ret == 1)
				atomic_inc(&at->rearmed);
			break;
		case 4 ... 5:
			if (twheel_cancel(&at->wt.timer))
				atomic_inc(&at->cancelled);
			break;
		default:
			if (twheel_cancel_sync(&at->wt.timer))
				atomic_inc(&at->cancelled);
			break;
		}
		atomic_inc(&a->ops);
		if (!(r & 0x300))
			cond_resched();
	}
	if (atomic_dec_and_test(&a->running))
		complete(&a->done);
	return 0;
}

static void tw_test_cancel_sync_accounting(struct kunit *test)
{
	struct tw_acct *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct task_struct *task;
	int cpu, i, armed, ends;
	u64 parks = twheel_parks();

	KUNIT_ASSERT_NOT_NULL(test, a);
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	for (i = 0; i < TW_ACCT_TIMERS; i++) {
		if (i < TW_ACCT_WORK)
			twheel_work_timer_init(&a->t[i].wt, tw_acct_work_fn);
		else
			twheel_timer_init(&a->t[i].wt.timer, tw_acct_fn, 0);
	}
	init_completion(&a->done);
	atomic_set(&a->running, 1);
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		task = kthread_create_on_cpu(tw_acct_thread, a, cpu, "tw_acct/%u");
		if (IS_ERR(task))
			continue;
		atomic_inc(&a->running);
		wake_up_process(task);
	}
	cpus_read_unlock();
	msleep(TW_ACCT_MS);
	atomic_set(&a->stop, 1);
	if (!atomic_dec_and_test(&a->running))
		wait_for_completion(&a->done);
	for (i = 0; i < TW_ACCT_TIMERS; i++) {
		struct tw_acct_timer *at = &a->t[i];

		if (twheel_cancel_sync(&at->wt.timer))
			atomic_inc(&at->cancelled);
		KUNIT_EXPECT_FALSE(test, twheel_pending(&at->wt.timer));
		armed = atomic_read(&at->armed);
		ends = atomic_read(&at->fired) + atomic_read(&at->cancelled) +
		       atomic_read(&at->rearmed);
		kunit_info(test, "timer %d: %d armings, %d callbacks + %d true cancels + %d re-arms = %d\n",
			   i, armed, atomic_read(&at->fired),
			   atomic_read(&at->cancelled),
			   atomic_read(&at->rearmed), ends);
		KUNIT_EXPECT_EQ(test, armed, ends);
	}
	kunit_info(test, "%d operations, %llu expiries parked\n",
		   atomic_read(&a->ops), twheel_parks() - parks);
}

/* ---------------------------------------------------------------------
 * twheel_api: precise timers (twheel_timer_set_slack())
 */

static int tw_cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

static s64 tw_median(s64 *v, unsigned int n)
{
	sort(v, n, sizeof(*v), tw_cmp_s64, NULL);
	return v[n / 2];
}

#define TW_PRECISE_N	16
/*
 * One round of tw_test_precise_oneshot(): TW_PRECISE_N timers of each
 * kind, interleaved; their lateness in @late[0] (slack 0) and @late[1].
 */
static void tw_precise_oneshot_round(struct kunit *test, struct tw_probe *p,
				     s64 late[2][TW_PRECISE_N])
{
	ktime_t base = roundup(ktime_get(), GRAN), at;
	unsigned int i;
	u64 slack;

	for (i = 0; i < 2 * TW_PRECISE_N; i++) {
		tw_probe_init(&p[i]);
		/* Even: slack 0; odd: the default, one tick. */
		slack = i % 2 ? TWHEEL_SLACK_DEFAULT : 0;
		KUNIT_EXPECT_EQ(test, twheel_timer_set_slack(&p[i].timer, slack),
				i % 2 ? (u64)GRAN : 0ULL);
		at = base + (10 + 2 * i) * GRAN + 10 * NSEC_PER_USEC;
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, at), 0);
	}
	for (i = 0; i < 2 * TW_PRECISE_N; i++) {
		late[i % 2][i / 2] = tw_expect_fired_once(test, &p[i]);
		KUNIT_EXPECT_LT(test, late[i % 2][i / 2], (s64)LATE_MAX_NS);
	}
}

/*
 * Slack 0 against the default, side by side: each deadline 10 us past a
 * tick boundary, where the wheel alone fires a tick later (990 us late);
 * the precise stage fires it at once. Both suffer the same latency (under
 * emulation, from 0.2 ms to several ms on a busy host), so the precise
 * timers' median lateness must beat the default timers' by a quarter of a
 * tick; without the precise stage it is the same. Never early.
 *
 * The debug kernel right after tw_test_hotplug once had the slack-0
 * timers' median at 1427 us against the default's 1625 (0.1-0.6 ms in
 * other runs): measured once more before the medians are judged, as
 * twheel_test's precise_slack is; a real loss of precision loses twice.
 */
static void tw_test_precise_oneshot(struct kunit *test)
{
	struct tw_probe *p = kunit_kcalloc(test, 2 * TW_PRECISE_N, sizeof(*p),
					   GFP_KERNEL);
	s64 late[2][TW_PRECISE_N], med[2];
	unsigned int round;

	KUNIT_ASSERT_NOT_NULL(test, p);
	for (round = 0; round < 2; round++) {
		tw_precise_oneshot_round(test, p, late);
		med[0] = tw_median(late[0], TW_PRECISE_N);
		med[1] = tw_median(late[1], TW_PRECISE_N);
		kunit_info(test, "lateness median: slack 0 %lld ns, default %lld ns",
			   med[0], med[1]);
		if (med[0] + (s64)GRAN / 4 < med[1])
			break;
	}
	KUNIT_EXPECT_LT(test, med[0] + (s64)GRAN / 4, med[1]);
}

#define TW_ONE_TICK_N	64

/*
 * TW_ONE_TICK_N slack-0 timers of one CPU due within one tick: when it
 * comes, the run moves them to the precise stage TW_CLOCK_EVERY per
 * interrupts-off step (the floor of tw_wheel_pop_next()) and goes on with
 * the next step. Each fires once, none early.
 */
static void tw_test_precise_one_tick(struct kunit *test)
{
	struct tw_probe *p = kunit_kcalloc(test, TW_ONE_TICK_N, sizeof(*p),
					   GFP_KERNEL);
	ktime_t base = roundup(ktime_get(), GRAN) + 10 * GRAN;
	int cpu = raw_smp_processor_id();
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < TW_ONE_TICK_N; i++) {
		/* 10 us apart: all within the tick that starts at @base. */
		ktime_t at = base + (i + 1) * 10 * NSEC_PER_USEC;

		tw_probe_init(&p[i]);
		KUNIT_EXPECT_EQ(test, twheel_timer_set_slack(&p[i].timer, 0), 0ULL);
		KUNIT_ASSERT_EQ(test, twheel_timer_set_cpu(&p[i].timer, cpu), 0);
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer, at), 0);
	}
	for (i = 0; i < TW_ONE_TICK_N; i++)
		KUNIT_EXPECT_LT(test, tw_expect_fired_once(test, &p[i]),
				(s64)LATE_MAX_NS);
}

#define TW_HARD_N	8

/* A TWHEEL_F_HARDIRQ timer, and where its callback ran. */
struct tw_hard_probe {
	struct twheel_timer	timer;
	ktime_t			deadline;
	ktime_t			fired;
	atomic_t		runs;
	bool			hardirq;
	bool			softirq;
	bool			irqs_off;
	atomic_t		*left;
};

static void tw_hard_probe_fn(struct twheel_timer *t, u64 missed)
{
	struct tw_hard_probe *p = container_of(t, struct tw_hard_probe, timer);

	p->fired = ktime_get();
	p->hardirq = in_hardirq();
	p->softirq = in_serving_softirq();
	p->irqs_off = irqs_disabled();
	atomic_inc(&p->runs);
	atomic_dec(p->left);
}

/*
 * TWHEEL_F_HARDIRQ: slack-0 timers, due within a tick or ticks away, reach
 * the hard heap (straight, or through the wheel's run for the tick before
 * theirs) and fire from the hard hrtimer, in hard interrupt context with
 * interrupts off; the wheel's run fires one itself, in softirq, only if
 * its deadline came while that run ran, and then with interrupts off as
 * well. Each fires once, never early; a cancelled one never; and on
 * PREEMPT_RT none in hard interrupt context.
 */
static void tw_test_precise_hardirq(struct kunit *test)
{
	struct tw_hard_probe *p = kunit_kcalloc(test, 2 * TW_HARD_N + 1,
						sizeof(*p), GFP_KERNEL);
	bool rt = IS_ENABLED(CONFIG_PREEMPT_RT);
	atomic_t left = ATOMIC_INIT(2 * TW_HARD_N), c_left = ATOMIC_INIT(1);
	struct tw_hard_probe *c;
	bool cancelled;
	unsigned int i, hard = 0;
	unsigned long limit;
	s64 late[2 * TW_HARD_N];

	KUNIT_ASSERT_NOT_NULL(test, p);
	c = &p[2 * TW_HARD_N];
	for (i = 0; i <= 2 * TW_HARD_N; i++) {
		twheel_timer_init(&p[i].timer, tw_hard_probe_fn,
				  TWHEEL_F_HARDIRQ);
		KUNIT_EXPECT_EQ(test, !!(p[i].timer.flags & TWHEEL_F_HARDIRQ),
				!rt);
		twheel_timer_set_slack(&p[i].timer, 0);
		p[i].left = i < 2 * TW_HARD_N ? &left : &c_left;
	}
	/*
	 * One cancelled while it waits in the hard heap: it never runs, or
	 * (a slow host) it ran before the cancel, which then says so.
	 */
	c->deadline = ktime_get() + GRAN / 2;
	KUNIT_ASSERT_EQ(test, twheel_schedule_at(&c->timer, c->deadline), 0);
	cancelled = twheel_cancel(&c->timer);
	for (i = 0; i < 2 * TW_HARD_N; i++) {
		u64 delay = i < TW_HARD_N ? GRAN / 4 : 5 * GRAN + GRAN / 3;

		p[i].deadline = ktime_get() + delay + i * 1000;
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer,
							 p[i].deadline), 0);
	}
	limit = jiffies + WAIT_MAX;
	while (atomic_read(&left) > 0 && time_before(jiffies, limit))
		msleep(20);
	for (i = 0; i <= 2 * TW_HARD_N; i++)
		twheel_cancel_sync(&p[i].timer);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->runs), cancelled ? 0 : 1);
	for (i = 0; i < 2 * TW_HARD_N; i++) {
		KUNIT_EXPECT_EQ(test, atomic_read(&p[i].runs), 1);
		KUNIT_EXPECT_GE(test, p[i].fired, p[i].deadline);
		late[i] = p[i].fired - p[i].deadline;
		KUNIT_EXPECT_LT(test, late[i], (s64)LATE_MAX_NS);
		/* Hard or soft interrupt context, never a task's. */
		KUNIT_EXPECT_TRUE(test, p[i].hardirq || p[i].softirq);
		/* Interrupts off in either, but on PREEMPT_RT (no flag). */
		KUNIT_EXPECT_EQ(test, p[i].irqs_off, !rt);
		hard += p[i].hardirq;
	}
	kunit_info(test, "%u of %u in hard interrupt context, lateness median %lld ns",
		   hard, 2 * TW_HARD_N, tw_median(late, 2 * TW_HARD_N));
	/*
	 * A wheel's run may fire one whose deadline came while it ran (a
	 * slow host): in softirq. Most reach the hard heap in time; where
	 * none did (seen once in a loaded make check), the hard path was not
	 * exercised: skipped, not failed; tw_test_precise_hard covers it on
	 * the virtual clock.
	 */
	if (rt)
		KUNIT_EXPECT_EQ(test, hard, 0U);
	else if (!hard)
		kunit_mark_skipped(test, "none reached the hard heap in time");
}

/*
 * A CPU goes offline with TWHEEL_F_HARDIRQ timers pending, some in its
 * hard heap (due within a tick), some in its wheel: every one moves to a
 * live CPU and fires once, none early, in hard or soft interrupt context.
 */
static void tw_test_precise_hard_hotplug(struct kunit *test)
{
	unsigned int i, n = 64, runs = 0;
	atomic_t left = ATOMIC_INIT(n);
	struct tw_hard_probe *p;
	unsigned long limit;
	int victim, ret;

	victim = tw_hotplug_victim(test);
	p = kunit_kcalloc(test, n, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < n; i++) {
		u64 delay = (i % 2 ? 300 * NSEC_PER_MSEC : GRAN / 2) + i * 1000;

		twheel_timer_init(&p[i].timer, tw_hard_probe_fn,
				  TWHEEL_F_HARDIRQ);
		twheel_timer_set_cpu(&p[i].timer, victim);
		twheel_timer_set_slack(&p[i].timer, 0);
		p[i].left = &left;
		p[i].deadline = ktime_get() + delay;
		KUNIT_ASSERT_EQ(test, twheel_schedule_at(&p[i].timer,
							 p[i].deadline), 0);
	}
	ret = remove_cpu(victim);
	if (ret) {
		for (i = 0; i < n; i++)
			twheel_cancel_sync(&p[i].timer);
		kunit_skip(test, "remove_cpu: %d", ret);
	}
	limit = jiffies + 30 * HZ;
	while (atomic_read(&left) > 0 && time_before(jiffies, limit))
		msleep(20);
	KUNIT_EXPECT_EQ(test, add_cpu(victim), 0);
	for (i = 0; i < n; i++) {
		twheel_cancel_sync(&p[i].timer);
		runs += atomic_read(&p[i].runs);
		KUNIT_EXPECT_GE(test, p[i].fired, p[i].deadline);
		KUNIT_EXPECT_TRUE(test, p[i].hardirq || p[i].softirq);
	}
	KUNIT_EXPECT_EQ(test, runs, n);
}

/* A fixed-rate periodic precise timer: on its grid, never early. */
static void tw_test_precise_periodic(struct kunit *test)
{
	u64 period = GRAN + GRAN / 3;	/* off the ticks */
	struct tw_probe *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	s64 late[8];
	int i, runs;

	KUNIT_ASSERT_NOT_NULL(test, p);
	tw_probe_init(p);
	p->stop_after = 8;
	twheel_timer_set_slack(&p->timer, 0);
	KUNIT_ASSERT_EQ(test, twheel_arm(&p->timer, ktime_get() + 5 * GRAN + 7,
					 period, TWHEEL_FIXED_RATE), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	twheel_cancel_sync(&p->timer);
	runs = atomic_read(&p->runs);
	KUNIT_EXPECT_EQ(test, runs, 8);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	for (i = 0; i < runs && i < 8; i++) {
		if (i)
			KUNIT_EXPECT_EQ(test, p->deadlines[i], p->deadlines[i - 1] +
					(p->misses[i - 1] + 1) * period);
		late[i] = p->ends[i] - p->deadlines[i];
	}
	/* Precision is tw_test_precise_oneshot()'s: shown, not judged. */
	kunit_info(test, "lateness median %lld ns", tw_median(late, runs));
}

/*
 * A CPU goes offline with precise timers pending, some in its precise
 * stage (due within a tick), some in its wheel: every one moves and fires
 * once, none early; and armed on the CPU again, they work.
 */
static void tw_test_precise_hotplug(struct kunit *test)
{
	unsigned int i, n = 256, runs = 0, early = 0;
	atomic_t fired = ATOMIC_INIT(0);
	unsigned long limit;
	struct tw_probe *p;
	int victim, ret;

	victim = tw_hotplug_victim(test);
	p = tw_probes(test, n);
	for (i = 0; i < n; i++) {
		u64 delay = (i % 2 ? 300 * NSEC_PER_MSEC : GRAN / 2) + i * 1000;

		p[i].fired = &fired;
		twheel_timer_set_cpu(&p[i].timer, victim);
		twheel_timer_set_slack(&p[i].timer, i % 3 ? 0 : 1000);
		KUNIT_ASSERT_EQ(test, twheel_schedule(&p[i].timer, delay), 0);
	}
	ret = remove_cpu(victim);
	if (ret) {
		for (i = 0; i < n; i++)
			twheel_cancel_sync(&p[i].timer);
		kvfree(p);
		kunit_skip(test, "remove_cpu: %d", ret);
	}
	limit = jiffies + 30 * HZ;
	while (atomic_read(&fired) < n && time_before(jiffies, limit))
		msleep(20);
	KUNIT_EXPECT_EQ(test, add_cpu(victim), 0);
	twheel_timer_set_cpu(&p[0].timer, victim);
	KUNIT_EXPECT_EQ(test, twheel_schedule(&p[0].timer, GRAN / 4), 0);
	limit = jiffies + 30 * HZ;
	while (atomic_read(&fired) < n + 1 && time_before(jiffies, limit))
		msleep(20);
	for (i = 0; i < n; i++) {
		twheel_cancel_sync(&p[i].timer);
		runs += atomic_read(&p[i].runs);
		early += atomic_read(&p[i].early);
	}
	KUNIT_EXPECT_EQ(test, runs, n + 1);
	KUNIT_EXPECT_EQ(test, early, 0U);
	kvfree(p);
}

/*
 * Issue 43: timers armed on an idle CPU, in the call-function interrupt
 * that wakes it. A movable one goes to an awake CPU's wheel; a pinned
 * one (TWHEEL_THIS_CPU), a precise one (slack below the tick) and one
 * set to a CPU stay where they ask.
 */
#define IDLE_ARM_N	5

struct tw_idle_arm {
	struct tw_probe	*p;
	unsigned int	n;
	u64		delay;
	bool		idle;		/* the CPU read as idle in the interrupt */
	unsigned long	idle_mask;	/* the CPUs read as idle there */
	int		ret[IDLE_ARM_N];
	int		held[IDLE_ARM_N];	/* the wheel each went to */
};

static void tw_idle_arm_fn(void *arg)
{
	struct tw_idle_arm *a = arg;
	unsigned int i;
	int cpu;

	a->idle = twheel_cpu_idle(smp_processor_id());
	a->idle_mask = 0;
	for_each_online_cpu(cpu)
		if (cpu < BITS_PER_LONG && twheel_cpu_idle(cpu))
			a->idle_mask |= BIT(cpu);
	for (i = 0; i < a->n; i++) {
		a->ret[i] = twheel_schedule(&a->p[i].timer, a->delay);
		a->held[i] = READ_ONCE(a->p[i].timer.cpu);
	}
}

/*
 * Arm @a's probes on an idle CPU other than @busy (this one, or one that
 * runs this test) whose first awake CPU after it is @busy when @want_busy
 * is set, trying up to 100 times. Return: the idle CPU, or -1.
 */
static int tw_arm_on_idle(struct tw_idle_arm *a, int busy, bool want_busy)
{
	unsigned int tries, i;
	int cpu, idle;

	for (tries = 0; tries < 100; tries++) {
		idle = -1;
		for_each_online_cpu(cpu)
			if (cpu != busy && twheel_cpu_idle(cpu))
				idle = cpu;
		if (idle >= 0 &&
		    !smp_call_function_single(idle, tw_idle_arm_fn, a, 1) &&
		    a->idle && (!want_busy || a->held[0] == busy))
			return idle;
		for (i = 0; i < a->n; i++)
			twheel_cancel_sync(&a->p[i].timer);
		usleep_range(2000, 3000);
	}
	return -1;
}

static void tw_test_movable_idle(struct kunit *test)
{
	struct tw_idle_arm a = { .n = 5, .delay = 30 * NSEC_PER_MSEC };
	struct twheel_timer pinned;
	int this, idle, i;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	/* TWHEEL_F_PINNED at init is TWHEEL_THIS_CPU. */
	twheel_timer_init(&pinned, tw_count_fn, TWHEEL_F_PINNED);
	KUNIT_EXPECT_EQ(test, (int)pinned.target_cpu, TWHEEL_THIS_CPU);
	KUNIT_EXPECT_EQ(test, pinned.flags, 0);
	KUNIT_EXPECT_EQ(test, twheel_timer_set_cpu(&pinned, -3), -EINVAL);

	a.p = kunit_kcalloc(test, a.n, sizeof(*a.p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a.p);
	for (i = 0; i < a.n; i++)
		tw_probe_init(&a.p[i]);
	/*
	 * [0] movable; [1] pinned; [2] precise; [3] set to this CPU; [4]
	 * movable with a coarse slack (4 ticks).
	 */
	KUNIT_ASSERT_EQ(test, twheel_timer_set_cpu(&a.p[1].timer,
						   TWHEEL_THIS_CPU), 0);
	twheel_timer_set_slack(&a.p[2].timer, 0);
	twheel_timer_set_slack(&a.p[4].timer, 4 * twheel_granularity());
	migrate_disable();
	this = smp_processor_id();
	twheel_timer_set_cpu(&a.p[3].timer, this);
	idle = tw_arm_on_idle(&a, this, false);
	migrate_enable();
	if (idle < 0)
		kunit_skip(test, "no CPU was idle when interrupted (or no power:cpu_idle)");
	for (i = 0; i < a.n; i++)
		KUNIT_EXPECT_EQ(test, a.ret[i], 0);
	kunit_info(test, "armed on idle cpu %d (idle cpus %#lx): movable to cpu %d, pinned %d, precise %d, set to %d, coarse to %d\n",
		   idle, a.idle_mask, a.held[0], a.held[1], a.held[2],
		   a.held[3], a.held[4]);
	KUNIT_EXPECT_NE(test, a.held[0], idle);
	KUNIT_EXPECT_NE(test, a.held[4], idle);
	KUNIT_EXPECT_EQ(test, a.held[1], idle);
	KUNIT_EXPECT_EQ(test, a.held[2], idle);
	KUNIT_EXPECT_EQ(test, a.held[3], this);
	/* Each fires once, never early, on the wheel that took it. */
	for (i = 0; i < a.n; i++) {
		tw_expect_fired_once(test, &a.p[i]);
		KUNIT_EXPECT_EQ(test, READ_ONCE(a.p[i].cpu), a.held[i]);
	}
}

/*
 * Issue 43: a CPU takes an idle CPU's movable timer, then goes idle
 * itself and offline while holding it: the timer fires once, never early,
 * after the CPU went down, on another CPU.
 */
static void tw_test_movable_offline(struct kunit *test)
{
	struct tw_idle_arm a = { .n = 1, .delay = 3 * NSEC_PER_SEC };
	cpumask_var_t others;
	unsigned long limit;
	int victim, idle, ret;
	ktime_t down;

	victim = tw_hotplug_victim(test);
	if (num_online_cpus() < 3)
		kunit_skip(test, "needs three CPUs");
	KUNIT_ASSERT_TRUE(test, alloc_cpumask_var(&others, GFP_KERNEL));
	cpumask_copy(others, cpu_online_mask);
	cpumask_clear_cpu(victim, others);
	a.p = kunit_kzalloc(test, sizeof(*a.p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a.p);
	tw_probe_init(a.p);
	/* Run on @victim, so that it is the awake CPU an idle one finds. */
	ret = set_cpus_allowed_ptr(current, cpumask_of(victim));
	idle = ret ? -1 : tw_arm_on_idle(&a, victim, true);
	/* Leave it: nothing else runs there, it goes idle with the timer. */
	KUNIT_EXPECT_EQ(test, set_cpus_allowed_ptr(current, others), 0);
	free_cpumask_var(others);
	if (idle < 0) {
		set_cpus_allowed_ptr(current, cpu_possible_mask);
		kunit_skip(test, "no idle CPU handed its timer to cpu %d (%d)",
			   victim, ret);
	}
	limit = jiffies + HZ;
	while (!twheel_cpu_idle(victim) && time_before(jiffies, limit))
		usleep_range(1000, 2000);
	KUNIT_EXPECT_TRUE(test, twheel_cpu_idle(victim));
	KUNIT_EXPECT_EQ(test, atomic_read(&a.p->runs), 0);
	ret = remove_cpu(victim);
	down = ktime_get();
	if (ret) {
		twheel_cancel_sync(&a.p->timer);
		set_cpus_allowed_ptr(current, cpu_possible_mask);
		kunit_skip(test, "remove_cpu: %d", ret);
	}
	tw_expect_fired_once(test, a.p);
	KUNIT_EXPECT_EQ(test, add_cpu(victim), 0);
	set_cpus_allowed_ptr(current, cpu_possible_mask);
	kunit_info(test, "armed on idle cpu %d, held by cpu %d, fired on cpu %d %lld ms after it went down\n",
		   idle, victim, READ_ONCE(a.p->cpu),
		   ktime_ms_delta(a.p->ends[0], down));
	KUNIT_EXPECT_NE(test, READ_ONCE(a.p->cpu), victim);
	KUNIT_EXPECT_GT(test, a.p->ends[0], down);
}

static struct kunit_case tw_api_cases[] = {
	KUNIT_CASE(tw_test_oneshot),
	KUNIT_CASE(tw_test_bad_args),
	KUNIT_CASE(tw_test_cancel_pending),
	KUNIT_CASE(tw_test_cancel_in_llist),
	KUNIT_CASE(tw_test_lazy_cancel),
	KUNIT_CASE(tw_test_remote_far_courier),
	KUNIT_CASE(tw_test_remote_rearm_migrates),
	KUNIT_CASE_SLOW(tw_test_lazy_rearm),
	KUNIT_CASE(tw_test_callback_rearm),
	KUNIT_CASE(tw_test_periodic_rate),
	KUNIT_CASE(tw_test_periodic_delay),
	KUNIT_CASE(tw_test_cancel_sync_waits),
	KUNIT_CASE(tw_test_deadline_in_callback),
	KUNIT_CASE(tw_test_process_context),
	KUNIT_CASE(tw_test_shutdown),
	KUNIT_CASE_SLOW(tw_test_group_cancel),
	KUNIT_CASE_SLOW(tw_test_million),
	KUNIT_CASE_SLOW(tw_test_mass_same_instant),
	KUNIT_CASE(tw_test_same_instant_fifo),
	KUNIT_CASE(tw_test_run_budget),
	KUNIT_CASE_SLOW(tw_test_run_budget_rt),
	KUNIT_CASE_SLOW(tw_test_run_budget_user),
	KUNIT_CASE_SLOW(tw_test_run_budget_small),
	KUNIT_CASE_SLOW(tw_test_hotplug),
	KUNIT_CASE(tw_test_cancel_sync_self_rearm),
	KUNIT_CASE(tw_test_remote_cancel_free),
	KUNIT_CASE(tw_test_process_flag_refused),
	KUNIT_CASE(tw_test_work_due_while_running),
	KUNIT_CASE(tw_test_wake_from_kick),
	KUNIT_CASE_SLOW(tw_test_cancel_sync_accounting),
	KUNIT_CASE(tw_test_precise_oneshot),
	KUNIT_CASE(tw_test_precise_one_tick),
	KUNIT_CASE(tw_test_precise_periodic),
	KUNIT_CASE(tw_test_precise_hardirq),
	KUNIT_CASE_SLOW(tw_test_precise_hard_hotplug),
	KUNIT_CASE_SLOW(tw_test_precise_hotplug),
	KUNIT_CASE(tw_test_movable_idle),
	KUNIT_CASE_SLOW(tw_test_movable_offline),
	{}
};

static struct kunit_suite tw_api_suite = {
	.name = "twheel_api",
	.test_cases = tw_api_cases,
};

/* ---------------------------------------------------------------------
 * twheel_clock: timers on CLOCK_REALTIME and CLOCK_BOOTTIME (clock.c)
 *
 * Sets of the clock and suspends are simulated: twheel_clock_test_set()
 * moves the clock as twheel reads it (a virtual skew; the system's clocks
 * are left alone) and runs the path of the timekeeper's notification.
 * Every callback checks its own clock: never early.
 */

struct tw_cprobe {
	struct twheel_clock_timer	ct;
	clockid_t		clk;
	ktime_t			deadline;	/* the first one */
	u64			period;		/* fixed rate, or 0 */
	u64			expiries;	/* periodic: sum of missed + 1 */
	u64			last_missed;
	ktime_t			fired;		/* on @clk */
	ktime_t			fired_mono;
	atomic_t		runs;
	atomic_t		early;
	atomic_t		was_set;
	atomic_t		*count;
	struct completion	done;
};

static void tw_cprobe_fn(struct twheel_clock_timer *ct, unsigned int flags,
			 u64 missed)
{
	struct tw_cprobe *p = container_of(ct, struct tw_cprobe, ct);
	ktime_t now = twheel_clock_now(p->clk);
	ktime_t due = p->deadline;

	if (p->period && !(flags & TWHEEL_CLOCK_WAS_SET)) {
		/* The latest expiry reported is on the grid of the clock. */
		p->expiries += missed + 1;
		p->last_missed = missed;
		due += (p->expiries - 1) * p->period;
	} else if (missed) {
		atomic_inc(&p->early);	/* only fixed rate counts missed */
	}
	if (flags & TWHEEL_CLOCK_WAS_SET)
		atomic_inc(&p->was_set);
	else if (now < due)
		atomic_inc(&p->early);
	p->fired = now;
	p->fired_mono = ktime_get();
	atomic_inc(&p->runs);
	if (p->count)
		atomic_inc(p->count);
	complete(&p->done);
}

static void tw_cprobe_stop(void *p)
{
	twheel_clock_cancel_sync(&((struct tw_cprobe *)p)->ct);
}

/*
 * The probe is stopped when the test ends, however it ends (an ASSERT
 * leaves the test function at once): it must outlive the test function,
 * so probes are allocated with kunit_kzalloc(), whose free runs after the
 * stop (actions run in reverse order).
 */
static void tw_cprobe_init(struct kunit *test, struct tw_cprobe *p,
			   clockid_t clk)
{
	memset(p, 0, sizeof(*p));
	p->clk = clk;
	twheel_clock_timer_init(&p->ct, clk, tw_cprobe_fn);
	init_completion(&p->done);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, tw_cprobe_stop, p), 0);
}

static struct tw_cprobe *tw_cprobe_new(struct kunit *test, clockid_t clk)
{
	struct tw_cprobe *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	tw_cprobe_init(test, p, clk);
	return p;
}

static int tw_cprobe_arm(struct tw_cprobe *p, ktime_t deadline,
			 unsigned int flags)
{
	p->deadline = deadline;
	return twheel_clock_arm(&p->ct, deadline, flags);
}

static int tw_cprobe_arm_periodic(struct tw_cprobe *p, ktime_t deadline,
				  u64 period, unsigned int flags)
{
	p->deadline = deadline;
	p->period = period;
	return twheel_clock_arm_periodic(&p->ct, deadline, period,
					 TWHEEL_FIXED_RATE, flags);
}

/* Waits until the probe's callback ran @runs times in all. */
static bool tw_cprobe_wait_runs(struct tw_cprobe *p, int runs)
{
	unsigned long end = jiffies + WAIT_MAX;

	while (atomic_read(&p->runs) < runs && time_before(jiffies, end))
		msleep(20);
	return atomic_read(&p->runs) >= runs;
}

/* The skew the tests added to each clock, undone by the suite's exit. */
static ktime_t tw_clock_skews[2];	/* REALTIME, BOOTTIME */

static void tw_clock_shift(clockid_t clk, ktime_t delta, bool notify)
{
	tw_clock_skews[clk == CLOCK_BOOTTIME] += delta;
	twheel_clock_test_set(clk, delta, notify);
}

static void tw_clock_exit(struct kunit *test)
{
	if (tw_clock_skews[0])
		twheel_clock_test_set(CLOCK_REALTIME, -tw_clock_skews[0], true);
	if (tw_clock_skews[1])
		twheel_clock_test_set(CLOCK_BOOTTIME, -tw_clock_skews[1], true);
	tw_clock_skews[0] = 0;
	tw_clock_skews[1] = 0;
}

static const clockid_t tw_clock_ids[] = {
	CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_MONOTONIC,
};

static void tw_clock_id_desc(const clockid_t *clk, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "clockid %d", *clk);
}

KUNIT_ARRAY_PARAM(tw_clock_id, tw_clock_ids, tw_clock_id_desc);

/* Arm, fire, never early on the timer's clock; then cancel. */
static void tw_clock_test_fire(struct kunit *test)
{
	clockid_t clk = *(const clockid_t *)test->param_value;
	struct tw_cprobe *p;
	ktime_t dl;

	p = tw_cprobe_new(test, clk);
	dl = twheel_clock_now(clk) + 20 * NSEC_PER_MSEC;
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(p, dl, 0), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->was_set), 0);
	KUNIT_EXPECT_LE(test, p->fired - dl, LATE_MAX_NS);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));
	KUNIT_EXPECT_FALSE(test, twheel_clock_cancel(&p->ct));

	/* armed, cancelled: never runs */
	reinit_completion(&p->done);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(p, twheel_clock_now(clk) +
					    30 * NSEC_PER_MSEC, 0), 0);
	/* re-arming a pending timer moves it: 1 */
	KUNIT_EXPECT_EQ(test, tw_cprobe_arm(p, twheel_clock_now(clk) +
					    20 * NSEC_PER_MSEC, 0), 1);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel(&p->ct));
	KUNIT_EXPECT_FALSE(test, twheel_clock_cancel_sync(&p->ct));
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&p->done,
							  msecs_to_jiffies(100)), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));
}

static void tw_clock_test_bad_args(struct kunit *test)
{
	struct tw_cprobe *p, *tai;

	p = tw_cprobe_new(test, CLOCK_BOOTTIME);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm(&p->ct, -1, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm(&p->ct, KTIME_MAX,
					       TWHEEL_CLOCK_CANCEL_ON_SET),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm(&p->ct, KTIME_MAX, 0x100), -EINVAL);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));

	tai = tw_cprobe_new(test, CLOCK_TAI);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm(&tai->ct, KTIME_MAX, 0), -EINVAL);
	KUNIT_EXPECT_FALSE(test, twheel_clock_cancel(&tai->ct));
	KUNIT_EXPECT_EQ(test, twheel_clock_now(CLOCK_TAI), 0);

	/* KTIME_MAX is a valid, far deadline on every clock */
	KUNIT_EXPECT_EQ(test, twheel_clock_arm(&p->ct, KTIME_MAX, 0), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&p->ct));
	/* a REALTIME deadline before the epoch fires at once */
	p = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_EXPECT_EQ(test, tw_cprobe_arm(p, 0, TWHEEL_CLOCK_CANCEL_ON_SET), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->was_set), 0);
}

/* REALTIME set forward past the deadline: fires promptly after the set. */
static void tw_clock_test_set_forward(struct kunit *test)
{
	struct tw_cprobe *p, *late;
	ktime_t set_mono;

	p = tw_cprobe_new(test, CLOCK_REALTIME);
	late = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(p, twheel_clock_now(CLOCK_REALTIME) +
					    3600 * NSEC_PER_SEC, 0), 0);
	/* not past this one: it stays pending */
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(late, twheel_clock_now(CLOCK_REALTIME) +
					    7200 * NSEC_PER_SEC, 0), 0);
	set_mono = ktime_get();
	tw_clock_shift(CLOCK_REALTIME, 3601 * NSEC_PER_SEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_LE(test, p->fired_mono - set_mono, LATE_MAX_NS);
	KUNIT_EXPECT_EQ(test, atomic_read(&late->runs), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&late->ct));
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&late->ct));
}

/*
 * REALTIME set backward: the timer waits for the wall clock. First with
 * the set unannounced, so that the expiry's own check must catch it, then
 * announced; then the clock comes back and it fires.
 */
static void tw_clock_test_set_backward(struct kunit *test)
{
	struct tw_cprobe *p;
	ktime_t dl;

	p = tw_cprobe_new(test, CLOCK_REALTIME);
	dl = twheel_clock_now(CLOCK_REALTIME) + 50 * NSEC_PER_MSEC;
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(p, dl, 0), 0);
	tw_clock_shift(CLOCK_REALTIME, -10 * NSEC_PER_SEC, false);
	/* its monotonic filing comes due: the expiry files it again */
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&p->done,
							  msecs_to_jiffies(300)), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	/* announced now: filed for the new offset, still waiting */
	tw_clock_shift(CLOCK_REALTIME, 0, true);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&p->done,
							  msecs_to_jiffies(100)), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 0);
	/* the clock comes back: due, it fires */
	tw_clock_shift(CLOCK_REALTIME, 10 * NSEC_PER_SEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->was_set), 0);
}

/* Cancel-on-set: a set ends it with TWHEEL_CLOCK_WAS_SET; others move. */
static void tw_clock_test_cancel_on_set(struct kunit *test)
{
	struct tw_cprobe *cos, *plain, *after;
	ktime_t far = twheel_clock_now(CLOCK_REALTIME) + 3600 * NSEC_PER_SEC;

	cos = tw_cprobe_new(test, CLOCK_REALTIME);
	plain = tw_cprobe_new(test, CLOCK_REALTIME);
	after = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(cos, far, TWHEEL_CLOCK_CANCEL_ON_SET), 0);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(plain, far, 0), 0);
	tw_clock_shift(CLOCK_REALTIME, NSEC_PER_SEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&cos->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&cos->was_set), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&cos->runs), 1);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&cos->ct));
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&plain->ct));

	/* armed after that set: only a later one ends it */
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(after, far, TWHEEL_CLOCK_CANCEL_ON_SET), 0);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&after->done,
							  msecs_to_jiffies(100)), 0);
	tw_clock_shift(CLOCK_REALTIME, -NSEC_PER_SEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&after->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&after->was_set), 1);
	/* the first one was ended once only */
	KUNIT_EXPECT_EQ(test, atomic_read(&cos->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&plain->runs), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&plain->ct));
}

/*
 * A simulated suspend: CLOCK_BOOTTIME jumps 10 s ahead of CLOCK_MONOTONIC
 * and the resume is announced. A BOOTTIME timer whose deadline passed
 * fires promptly; a MONOTONIC one for the same time stays pending.
 */
static void tw_clock_test_boottime_suspend(struct kunit *test)
{
	struct tw_cprobe *boot, *mono;
	ktime_t resume_mono;

	boot = tw_cprobe_new(test, CLOCK_BOOTTIME);
	mono = tw_cprobe_new(test, CLOCK_MONOTONIC);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(boot, twheel_clock_now(CLOCK_BOOTTIME) +
					    5 * NSEC_PER_SEC, 0), 0);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(mono, ktime_get() + 5 * NSEC_PER_SEC, 0), 0);
	resume_mono = ktime_get();
	tw_clock_shift(CLOCK_BOOTTIME, 10 * NSEC_PER_SEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&boot->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&boot->early), 0);
	KUNIT_EXPECT_LE(test, boot->fired_mono - resume_mono, LATE_MAX_NS);
	KUNIT_EXPECT_EQ(test, atomic_read(&mono->runs), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&mono->ct));
}

/* More timers than one chunk of the set work: every one fires, once. */
static void tw_clock_test_many(struct kunit *test)
{
	const unsigned int n = 1000;
	struct tw_cprobe *p;
	atomic_t count = ATOMIC_INIT(0);
	ktime_t far = twheel_clock_now(CLOCK_REALTIME) + 3600 * NSEC_PER_SEC;
	unsigned long end = jiffies + WAIT_MAX;
	unsigned int i, early = 0;

	p = kunit_kcalloc(test, n, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < n; i++) {
		tw_cprobe_init(test, &p[i], CLOCK_REALTIME);
		p[i].count = &count;
		KUNIT_ASSERT_EQ(test, tw_cprobe_arm(&p[i], far + i, 0), 0);
	}
	tw_clock_shift(CLOCK_REALTIME, 3601 * NSEC_PER_SEC, true);
	while (atomic_read(&count) < n && time_before(jiffies, end))
		msleep(20);
	KUNIT_EXPECT_EQ(test, atomic_read(&count), n);
	for (i = 0; i < n; i++) {
		twheel_clock_cancel_sync(&p[i].ct);
		early += atomic_read(&p[i].early);
		KUNIT_EXPECT_LE(test, atomic_read(&p[i].runs), 1);
	}
	KUNIT_EXPECT_EQ(test, early, 0);
}

/* Periodic on each clock: fires on the grid of its clock, never early. */
static void tw_clock_test_periodic(struct kunit *test)
{
	clockid_t clk = *(const clockid_t *)test->param_value;
	const u64 period = 20 * NSEC_PER_MSEC;
	struct tw_cprobe *p;
	u64 seen;

	p = tw_cprobe_new(test, clk);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm_periodic(p, twheel_clock_now(clk) +
						     period, period, 0), 0);
	KUNIT_ASSERT_TRUE(test, tw_cprobe_wait_runs(p, 5));
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&p->ct));
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->was_set), 0);
	/* each expiry counted once: the callbacks never outnumber them */
	KUNIT_EXPECT_GE(test, p->expiries, (u64)atomic_read(&p->runs));
	seen = atomic_read(&p->runs);
	msleep(60);
	KUNIT_EXPECT_EQ(test, (u64)atomic_read(&p->runs), seen);
}

/*
 * A periodic REALTIME timer and a set forward past ten of its periods:
 * one callback at once, told of the periods missed; then it goes on.
 */
static void tw_clock_test_periodic_set_forward(struct kunit *test)
{
	const u64 period = NSEC_PER_SEC;
	struct tw_cprobe *p;
	ktime_t set_mono;

	p = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm_periodic(p, twheel_clock_now(CLOCK_REALTIME) +
						     500 * NSEC_PER_MSEC, period,
						     0), 0);
	set_mono = ktime_get();
	tw_clock_shift(CLOCK_REALTIME, 10 * period + 600 * NSEC_PER_MSEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_LE(test, p->fired_mono - set_mono, LATE_MAX_NS);
	KUNIT_EXPECT_GE(test, p->last_missed, 10ULL);
	KUNIT_EXPECT_GE(test, p->expiries, 11ULL);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	/* and the next one comes a period of the clock later */
	KUNIT_ASSERT_TRUE(test, tw_cprobe_wait_runs(p, 2));
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&p->ct));
}

/* Set backward: the next expiry waits for the clock to come back. */
static void tw_clock_test_periodic_set_backward(struct kunit *test)
{
	const u64 period = 50 * NSEC_PER_MSEC;
	struct tw_cprobe *p;
	int runs;

	p = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm_periodic(p, twheel_clock_now(CLOCK_REALTIME) +
						     period, period, 0), 0);
	KUNIT_ASSERT_TRUE(test, tw_cprobe_wait_runs(p, 1));
	tw_clock_shift(CLOCK_REALTIME, -10 * NSEC_PER_SEC, true);
	/* an expiry racing the set may still run: let it */
	msleep(100);
	runs = atomic_read(&p->runs);
	msleep(300);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), runs);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	tw_clock_shift(CLOCK_REALTIME, 10 * NSEC_PER_SEC, true);
	KUNIT_ASSERT_TRUE(test, tw_cprobe_wait_runs(p, runs + 2));
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&p->ct));
}

/* Cancel-on-set on a periodic timer: a set ends it, one callback. */
static void tw_clock_test_periodic_cancel_on_set(struct kunit *test)
{
	const u64 period = 20 * NSEC_PER_MSEC;
	struct tw_cprobe *p;
	int runs;

	p = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm_periodic(p, twheel_clock_now(CLOCK_REALTIME) +
						     period, period,
						     TWHEEL_CLOCK_CANCEL_ON_SET), 0);
	KUNIT_ASSERT_TRUE(test, tw_cprobe_wait_runs(p, 2));
	tw_clock_shift(CLOCK_REALTIME, NSEC_PER_SEC, true);
	/* the set work ends it at once (maybe before the shift returns) */
	for (runs = 0; !atomic_read(&p->was_set) && runs < 500; runs++)
		msleep(20);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->was_set), 1);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));
	runs = atomic_read(&p->runs);
	msleep(100);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), runs);
	KUNIT_EXPECT_EQ(test, atomic_read(&p->early), 0);
	KUNIT_EXPECT_FALSE(test, twheel_clock_cancel_sync(&p->ct));
}

static void tw_clock_test_periodic_bad_args(struct kunit *test)
{
	struct tw_cprobe *p = tw_cprobe_new(test, CLOCK_BOOTTIME);
	ktime_t far = twheel_clock_now(CLOCK_BOOTTIME) + 3600 * NSEC_PER_SEC;

	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, far, 0,
							TWHEEL_FIXED_RATE, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, far,
							(u64)KTIME_MAX + 1,
							TWHEEL_FIXED_DELAY, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, far, 1,
							TWHEEL_ONESHOT, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, far, 1, 3, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, far, 1,
							TWHEEL_FIXED_RATE,
							TWHEEL_CLOCK_CANCEL_ON_SET),
			-EINVAL);
	KUNIT_EXPECT_FALSE(test, twheel_clock_pending(&p->ct));
	/* a KTIME_MAX period: one expiry, then never again */
	KUNIT_EXPECT_EQ(test, twheel_clock_arm_periodic(&p->ct, 0, KTIME_MAX,
							TWHEEL_FIXED_DELAY, 0),
			0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&p->done, WAIT_MAX), 0);
	KUNIT_EXPECT_TRUE(test, twheel_clock_pending(&p->ct));
	KUNIT_EXPECT_TRUE(test, twheel_clock_cancel_sync(&p->ct));
	KUNIT_EXPECT_EQ(test, atomic_read(&p->runs), 1);
}

/*
 * A REALTIME timer with slack 0 across sets of the clock, forward (it
 * fires at once, not before its clock reaches the deadline) and backward
 * (it waits for the clock): never early on its clock, and prompt.
 */
static void tw_clock_test_precise_set(struct kunit *test)
{
	struct tw_cprobe *fwd, *back;
	ktime_t now = twheel_clock_now(CLOCK_REALTIME);

	fwd = tw_cprobe_new(test, CLOCK_REALTIME);
	back = tw_cprobe_new(test, CLOCK_REALTIME);
	KUNIT_EXPECT_EQ(test, twheel_clock_timer_set_slack(&fwd->ct, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, twheel_clock_timer_set_slack(&back->ct, 0), 0ULL);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(fwd, now + 200 * NSEC_PER_MSEC, 0), 0);
	KUNIT_ASSERT_EQ(test, tw_cprobe_arm(back, now + 100 * NSEC_PER_MSEC, 0), 0);
	/* +150 ms: fwd is 50 ms away on its clock; back is past. */
	tw_clock_shift(CLOCK_REALTIME, 150 * NSEC_PER_MSEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&back->done, WAIT_MAX), 0);
	/* -400 ms: fwd is 350 ms away again and waits for its clock. */
	tw_clock_shift(CLOCK_REALTIME, -400 * NSEC_PER_MSEC, true);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&fwd->done, WAIT_MAX), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&fwd->early), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&back->early), 0);
	KUNIT_EXPECT_GE(test, fwd->fired, fwd->deadline);
	kunit_info(test, "lateness on CLOCK_REALTIME: %lld ns",
		   fwd->fired - fwd->deadline);
	KUNIT_EXPECT_LT(test, fwd->fired - fwd->deadline, (ktime_t)LATE_MAX_NS);
}

static struct kunit_case tw_clock_cases[] = {
	KUNIT_CASE_PARAM(tw_clock_test_fire, tw_clock_id_gen_params),
	KUNIT_CASE(tw_clock_test_bad_args),
	KUNIT_CASE(tw_clock_test_set_forward),
	KUNIT_CASE(tw_clock_test_set_backward),
	KUNIT_CASE(tw_clock_test_cancel_on_set),
	KUNIT_CASE(tw_clock_test_boottime_suspend),
	KUNIT_CASE_SLOW(tw_clock_test_many),
	KUNIT_CASE_PARAM(tw_clock_test_periodic, tw_clock_id_gen_params),
	KUNIT_CASE(tw_clock_test_periodic_set_forward),
	KUNIT_CASE(tw_clock_test_periodic_set_backward),
	KUNIT_CASE(tw_clock_test_periodic_cancel_on_set),
	KUNIT_CASE(tw_clock_test_periodic_bad_args),
	KUNIT_CASE(tw_clock_test_precise_set),
	{}
};

static struct kunit_suite tw_clock_suite = {
	.name = "twheel_clock",
	.exit = tw_clock_exit,
	.test_cases = tw_clock_cases,
};

/* ---------------------------------------------------------------------
 * twheel_fd_table: the slot table of /dev/twheel (fd_table.c)
 */

static void tw_table_teardown(void *t)
{
	twheel_fd_table_destroy(t);
}

static struct twheel_fd_table *tw_table_new(struct kunit *test, u32 max)
{
	struct twheel_fd_table *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	twheel_fd_table_init(t, max);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, tw_table_teardown, t), 0);
	return t;
}

/* Stale ids miss; released slots come back first, one generation on. */
static void tw_test_table_ids(struct kunit *test)
{
	struct twheel_fd_table *t = tw_table_new(test, 1000);
	u64 objs[4];
	u64 a, b, c, d;

	KUNIT_EXPECT_FALSE(test, twheel_fd_table_has_free(t));
	KUNIT_ASSERT_EQ(test, twheel_fd_table_grow(t), 0);
	a = twheel_fd_table_insert(t, &objs[0]);
	b = twheel_fd_table_insert(t, &objs[1]);
	c = twheel_fd_table_insert(t, &objs[2]);
	KUNIT_EXPECT_EQ(test, a, 1ULL);
	KUNIT_EXPECT_EQ(test, b, 2ULL);
	KUNIT_EXPECT_EQ(test, c, 3ULL);
	KUNIT_EXPECT_PTR_EQ(test, twheel_fd_table_lookup(t, b), &objs[1]);
	/* the table wrote each object's id */
	KUNIT_EXPECT_EQ(test, objs[0], a);
	KUNIT_EXPECT_EQ(test, objs[2], c);
	twheel_fd_table_remove(t, b);
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, b));
	d = twheel_fd_table_insert(t, &objs[3]);
	KUNIT_EXPECT_EQ(test, d, (1ULL << 32) | 2);
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, b));
	KUNIT_EXPECT_PTR_EQ(test, twheel_fd_table_lookup(t, d), &objs[3]);
	/* no slot, slot 0 of any generation, a slot beyond the table */
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, 0));
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, 1ULL << 32));
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, t->nslots + 1));
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, U64_MAX));
	KUNIT_EXPECT_EQ(test, t->used, 3u);
}

/* After 2^32 releases a slot's generation wraps to 0: ids stay unique. */
static void tw_test_table_gen_wrap(struct kunit *test)
{
	struct twheel_fd_table *t = tw_table_new(test, 10);
	u64 obj;
	u64 last, wrapped;

	KUNIT_ASSERT_EQ(test, twheel_fd_table_grow(t), 0);
	t->chunks[0][0].w = TWHEEL_FD_FREE_WORD(U32_MAX - 1,
						TWHEEL_FD_FREE_NEXT(t->chunks[0][0].w));
	last = twheel_fd_table_insert(t, &obj);
	KUNIT_EXPECT_EQ(test, last, ((u64)(U32_MAX - 1) << 32) | 1);
	twheel_fd_table_remove(t, last);
	last = twheel_fd_table_insert(t, &obj);
	KUNIT_EXPECT_EQ(test, last, ((u64)U32_MAX << 32) | 1);
	twheel_fd_table_remove(t, last);
	wrapped = twheel_fd_table_insert(t, &obj);
	KUNIT_EXPECT_EQ(test, wrapped, 1ULL);
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, last));
	KUNIT_EXPECT_PTR_EQ(test, twheel_fd_table_lookup(t, wrapped), &obj);
}

/*
 * A restore (fd_cr.c): ids put back at their slot and generation, free
 * slots given theirs, taken slots refused; after the relink the free list
 * gives every other slot once, lowest first, each with its generation.
 */
static void tw_test_table_restore(struct kunit *test)
{
	struct twheel_fd_table *t = tw_table_new(test, 100);
	u64 objs[3], obj, id;
	u32 i;

	KUNIT_ASSERT_EQ(test, twheel_fd_table_grow(t), 0);
	objs[0] = 7ULL << 32 | 5;		/* slot 4, generation 7 */
	objs[1] = 1ULL << 32 | 1;		/* slot 0, generation 1 */
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert_at(t, &objs[0]), 0);
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert_at(t, &objs[1]), 0);
	objs[2] = 9ULL << 32 | 5;		/* slot 4 again */
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert_at(t, &objs[2]), -EEXIST);
	objs[2] = 1ULL << 32;			/* no slot */
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert_at(t, &objs[2]), -EINVAL);
	objs[2] = (u64)t->nslots + 1;		/* past the table */
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert_at(t, &objs[2]), -EINVAL);
	KUNIT_EXPECT_EQ(test, twheel_fd_table_set_free(t, 3ULL << 32 | 2), 0);
	KUNIT_EXPECT_EQ(test, twheel_fd_table_set_free(t, 3ULL << 32 | 5), -EEXIST);
	KUNIT_EXPECT_EQ(test, t->used, 2u);
	twheel_fd_table_relink(t);

	KUNIT_EXPECT_PTR_EQ(test, twheel_fd_table_lookup(t, objs[0]), &objs[0]);
	KUNIT_EXPECT_PTR_EQ(test, twheel_fd_table_lookup(t, objs[1]), &objs[1]);
	KUNIT_EXPECT_NULL(test, twheel_fd_table_lookup(t, 6ULL << 32 | 5));
	/* slot 1 with the generation it was given, then slots 2, 3, 5, ... */
	KUNIT_EXPECT_EQ(test, twheel_fd_table_insert(t, &obj), 3ULL << 32 | 2);
	for (i = 2; i < t->nslots; i++) {
		if (i == 4)
			continue;
		KUNIT_ASSERT_TRUE(test, twheel_fd_table_has_free(t));
		id = twheel_fd_table_insert(t, &obj);
		KUNIT_EXPECT_EQ(test, id, (u64)i + 1);
	}
	KUNIT_EXPECT_FALSE(test, twheel_fd_table_has_free(t));
	KUNIT_EXPECT_EQ(test, t->used, t->nslots);
}

/* The table grows a page at a time up to its cap, never past it. */
static void tw_test_table_cap(struct kunit *test)
{
	struct twheel_fd_table *t = tw_table_new(test, TWHEEL_FD_CHUNK_SLOTS + 3);
	u64 obj;
	u32 i;

	KUNIT_ASSERT_EQ(test, twheel_fd_table_grow(t), 0);
	KUNIT_EXPECT_EQ(test, t->nslots, (u32)TWHEEL_FD_CHUNK_SLOTS);
	KUNIT_ASSERT_EQ(test, twheel_fd_table_grow(t), 0);
	KUNIT_EXPECT_EQ(test, t->nslots, (u32)TWHEEL_FD_CHUNK_SLOTS + 3);
	KUNIT_EXPECT_EQ(test, twheel_fd_table_grow(t), -ENOSPC);
	/* Every slot once, the newest chunk's first; then none. */
	for (i = 0; i < TWHEEL_FD_CHUNK_SLOTS + 3; i++) {
		u32 slot;

		KUNIT_ASSERT_TRUE(test, twheel_fd_table_has_free(t));
		slot = TWHEEL_FD_ID_SLOT(twheel_fd_table_insert(t, &obj));
		KUNIT_EXPECT_EQ(test, slot, i < 3 ? (u32)TWHEEL_FD_CHUNK_SLOTS + i : i - 3);
	}
	KUNIT_EXPECT_FALSE(test, twheel_fd_table_has_free(t));
	KUNIT_EXPECT_EQ(test, t->used, (u32)TWHEEL_FD_CHUNK_SLOTS + 3);
}

static struct kunit_case tw_table_cases[] = {
	KUNIT_CASE(tw_test_table_ids),
	KUNIT_CASE(tw_test_table_gen_wrap),
	KUNIT_CASE(tw_test_table_cap),
	KUNIT_CASE(tw_test_table_restore),
	{}
};

static struct kunit_suite tw_table_suite = {
	.name = "twheel_fd_table",
	.test_cases = tw_table_cases,
};

kunit_test_suites(&tw_wheel_suite, &tw_api_suite, &tw_clock_suite,
		  &tw_table_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for twheel");
