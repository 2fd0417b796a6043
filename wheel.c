// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the pure hierarchical timing wheel (see docs/design.md: "Levels",
 * "The wheel's interface"). Every function here takes the time as an
 * argument and touches only the wheel it is given; the caller serialises.
 *
 * A timer due at tick e (its deadline rounded up to a level-0 tick) is put
 * on the lowest level L whose range covers e - clk: level L has 2^bits
 * buckets of 2^(bits*L) ticks each. A level-0 bucket is due at its tick; a
 * bucket of a higher level is processed when its span starts, and its
 * timers are put back on lower levels (Kafka's overflow wheels), so every
 * timer finally fires from level 0, at most one tick late and never early.
 * Deadlines beyond the top level are parked in its farthest bucket and put
 * back when it comes round.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/ktime.h>
#include <linux/list_sort.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "twheel.h"
#include "wheel.h"

/**
 * tw_levels_for - number of levels needed to cover every ktime_t deadline
 * @gran: ns per level-0 tick
 * @bits: log2 of the buckets per level
 *
 * Return: the level count, at least 2 (a link tests level 0 apart, then
 * looks from level 1 up: tw_link_tick()), at most %TW_LEVELS_MAX and such
 * that the top level's span still fits in a u64.
 */
unsigned int tw_levels_for(u64 gran, unsigned int bits)
{
	unsigned int need = fls64(div64_u64(KTIME_MAX, gran));

	return clamp(DIV_ROUND_UP(need, bits), 2U, min(TW_LEVELS_MAX, 63 / bits));
}
EXPORT_SYMBOL_IF_KUNIT(tw_levels_for);

/**
 * tw_wheel_init - set up an empty wheel
 * @w: the wheel
 * @gran: ns per level-0 tick, at least 1
 * @bits: log2 of the buckets per level, %TW_BITS_MIN..%TW_BITS_MAX
 * @now_ns: the current time
 * @node: NUMA node for the buckets
 *
 * Return: 0, -EINVAL for a bad @gran or @bits, or -ENOMEM.
 */
int tw_wheel_init(struct tw_wheel *w, u64 gran, unsigned int bits,
		  u64 now_ns, int node)
{
	unsigned int i, n;

	if (!gran || bits < TW_BITS_MIN || bits > TW_BITS_MAX)
		return -EINVAL;
	w->gran = gran;
	w->bits = bits;
	w->levels = tw_levels_for(gran, bits);
	n = w->levels << bits;
	w->buckets = kvmalloc_node(n * sizeof(*w->buckets), GFP_KERNEL, node);
	if (!w->buckets)
		return -ENOMEM;
	w->pending = bitmap_zalloc_node(n, GFP_KERNEL, node);
	if (!w->pending)
		goto err_free_buckets;
	if (tw_precise_init(&w->precise, node))
		goto err_free_pending;
	for (i = 0; i < n; i++)
		INIT_LIST_HEAD(&w->buckets[i]);
	INIT_LIST_HEAD(&w->expired);
	INIT_LIST_HEAD(&w->spilled);
	INIT_LIST_HEAD(&w->unsorted);
	INIT_LIST_HEAD(&w->cleared);
	INIT_LIST_HEAD(&w->held);
	w->held_owner = 0;
	w->held_free = false;
	bitmap_zero(w->mixed, 1 << TW_BITS_MAX);
	w->count = 0;
	w->clk = div64_u64(now_ns, gran);
	w->ready_ns = 0;
	return 0;

err_free_pending:
	bitmap_free(w->pending);
	w->pending = NULL;
err_free_buckets:
	kvfree(w->buckets);
	w->buckets = NULL;
	return -ENOMEM;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_init);

/**
 * tw_wheel_free - release a wheel's memory; it must be empty
 * @w: the wheel
 */
void tw_wheel_free(struct tw_wheel *w)
{
	tw_precise_free(&w->precise);
	bitmap_free(w->pending);
	kvfree(w->buckets);
	w->pending = NULL;
	w->buckets = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_free);

/* The earliest tick at which a non-empty bucket starts, or U64_MAX. */
static u64 tw_next_bucket(const struct tw_wheel *w)
{
	unsigned int size = tw_size(w), mask = size - 1;
	u64 best = U64_MAX;
	unsigned int lvl;

	for (lvl = 0; lvl < w->levels; lvl++) {
		const unsigned long *map = w->pending + lvl * (size / BITS_PER_LONG);
		unsigned int shift = w->bits * lvl;
		u64 p0 = (w->clk + (1ULL << shift) - 1) >> shift;
		unsigned int pos = p0 & mask, bit;
		u64 start;

		bit = find_next_bit(map, size, pos);
		if (bit >= size) {
			bit = find_first_bit(map, size);
			if (bit >= size)
				continue;
		}
		start = (p0 + ((bit - pos) & mask)) << shift;
		best = min(best, start);
	}
	return best;
}

/**
 * tw_wheel_next - when the wheel next needs attention
 * @w: the wheel
 *
 * Return: the level-0 tick at which the earliest non-empty bucket is due
 * (the wheel's clock if timers are already due, or a spill's are still to
 * be moved down), or U64_MAX when empty.
 */
u64 tw_wheel_next(const struct tw_wheel *w)
{
	if (tw_wheel_has_due(w) || !list_empty(&w->spilled))
		return w->clk;
	return tw_next_bucket(w);
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_next);

static int tw_cmp(void *priv, const struct list_head *a,
		  const struct list_head *b)
{
	const struct twheel_timer *ta = list_entry(a, struct twheel_timer, entry);
	const struct twheel_timer *tb = list_entry(b, struct twheel_timer, entry);

	/* list_sort() keeps @a first unless this is > 0: stable. */
	return tw_key_before(READ_ONCE(tb->expires), tb->order,
			     READ_ONCE(ta->expires), ta->order);
}

/*
 * Sort the due timers by deadline then arming order, in O(n) if in order.
 * Return: how many timers were looked at, at most %TW_SORT_MAX + 1.
 * The caller has interrupts off: a tick with more than %TW_SORT_MAX due
 * timers is left in bucket order (for each level, the order in which its
 * timers were linked) rather than sorted, which bounds this work to
 * O(%TW_SORT_MAX log %TW_SORT_MAX) whatever the number of timers.
 */
static unsigned int tw_sort_due(struct list_head *due)
{
	const struct twheel_timer *t;
	struct list_head *pos;
	unsigned int n = 0;
	u64 expires = 0;
	u32 order = 0;

	/*
	 * Only for a tick whose buckets were linked out of order
	 * (tw_collect()'s @mixed): a load or two per timer, the last key
	 * in registers.
	 */
	list_for_each(pos, due) {
		u64 e;

		t = list_entry(pos, struct twheel_timer, entry);
		e = READ_ONCE(t->expires);
		if (++n > TW_SORT_MAX)
			return n;
		if (n > 1 && tw_key_before(e, t->order, expires, order))
			goto unsorted;
		expires = e;
		order = t->order;
	}
	return n;
unsorted:
	list_for_each_continue(pos, due)
		if (++n > TW_SORT_MAX)
			return n;
	list_sort(NULL, due, tw_cmp);
	return n;
}

/*
 * Move the timers of @head, a higher level's bucket that starts at @tick
 * or the spilled list, down: those due at @tick to @due (and @mixed set),
 * the others to the bucket of their tick. One unit of @budget each.
 * Return: false if @budget ran out first.
 */
static bool tw_move_down(struct tw_wheel *w, struct list_head *head, u64 tick,
			 struct list_head *due, unsigned int *budget,
			 bool *mixed)
{
	while (!list_empty(head)) {
		struct twheel_timer *t;
		u64 e;

		if (!*budget)
			return false;
		(*budget)--;
		t = list_first_entry(head, struct twheel_timer, entry);
		list_del_init(&t->entry);
		e = tw_timer_tick(w, t);
		if (e <= tick) {
			t->bucket = TW_NO_BUCKET;
			list_add_tail(&t->entry, due);
			*mixed = true;
		} else {
			tw_link_tick(w, t, e);
		}
	}
	return true;
}

/*
 * Process the buckets that start at @tick, highest level first. @mixed:
 * set if @due may be out of order: a higher level's timer due at @tick
 * went there, or the level-0 bucket was (tw_note_order()).
 */
static bool tw_collect(struct tw_wheel *w, u64 tick, struct list_head *due,
		       unsigned int *budget, bool *mixed)
{
	unsigned int mask = tw_size(w) - 1;
	int lvl;

	for (lvl = w->levels - 1; lvl >= 0; lvl--) {
		unsigned int shift = w->bits * lvl, idx;
		struct list_head *head;

		if (tick & ((1ULL << shift) - 1))
			continue;
		idx = (lvl << w->bits) + ((tick >> shift) & mask);
		if (!test_bit(idx, w->pending))
			continue;
		head = &w->buckets[idx];
		if (!lvl) {
			list_splice_tail_init(head, due);
			__clear_bit(idx, w->pending);
			if (__test_and_clear_bit(idx, w->mixed))
				*mixed = true;
			continue;
		}
		if (!tw_move_down(w, head, tick, due, budget, mixed))
			return false;
		__clear_bit(idx, w->pending);
	}
	return true;
}

/**
 * tw_wheel_advance - bring the wheel up to a given time
 * @w: the wheel
 * @now_ns: the current time
 * @budget: how many timers may be moved between levels or looked at for
 *	sorting; decremented
 *
 * Moves every timer due at @now_ns to the expired list, sorted by deadline
 * and then by arming order, and puts the timers of higher-level buckets
 * that started by then back on lower levels. A spill's timers first
 * (tw_wheel_spill()): they finish the tick at the wheel's clock before a
 * later tick's due timers go behind them.
 *
 * Return: true when done, false when @budget ran out first (call again).
 */
bool tw_wheel_advance(struct tw_wheel *w, u64 now_ns, unsigned int *budget)
{
	u64 now;
	bool done = true;

	if (unlikely(!list_empty(&w->spilled))) {
		bool mixed = false;
		LIST_HEAD(due);

		done = tw_move_down(w, &w->spilled, w->clk, &due, budget,
				    &mixed);
		if (mixed)
			*budget -= min(*budget, tw_sort_due(&due));
		list_splice_tail(&due, &w->expired);
		if (!done || !*budget) {
			w->ready_ns = 0;
			return false;
		}
	}

	/*
	 * Still in the tick of the last complete advance: nothing can have
	 * come due (@ready_ns), and a run for the precise stage skips the
	 * scan of every level's bitmap.
	 */
	if (now_ns < w->ready_ns)
		return true;
	now = div64_u64(now_ns, w->gran);
	for (;;) {
		u64 tick = tw_next_bucket(w);
		bool mixed = false;
		LIST_HEAD(due);

		if (tick > now)
			break;
		w->clk = tick;
		done = tw_collect(w, tick, &due, budget, &mixed);
		/*
		 * Sorting costs budget too: one run sorts a bounded number.
		 * A tick whose timers were all linked in order costs nothing
		 * (table 3's burst of 4,000: 15 instructions a timer less).
		 */
		if (mixed)
			*budget -= min(*budget, tw_sort_due(&due));
		list_splice_tail(&due, &w->expired);
		if (!done || !*budget) {
			w->ready_ns = 0;
			return false;
		}
	}
	if (now > w->clk)
		w->clk = now;
	w->ready_ns = (w->clk + 1) * w->gran;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_advance);

/**
 * tw_wheel_spill - set aside the tick an advance stopped in
 * @w: the wheel; tw_wheel_advance() ran out of budget
 *
 * Every bucket that starts at the wheel's clock (the tick whose buckets
 * the advance was moving down) goes to the spilled list whole, in
 * O(levels), not a timer at a time, so that a run over its time budget
 * knows whose burst it was moving (tw_timer_owner() of the first) and can
 * hold that owner (tw_wheel_hold()) as for a burst armed near. The next
 * advance moves them down first, for a unit of budget each, as it would
 * have: none goes to the expired list before the wheel's clock reaches
 * its tick, so that none fires ahead of a timer due before it, or due
 * with it and armed before it, that the advance had already moved down
 * (seen on the debug kernel: 744 of a batch of 1,000 timers of one
 * deadline spilled, the resume came after the deadline, and they fired
 * before the 256 moved down). Their stale bucket index is harmless, as
 * for a level-0 bucket moved whole (tw_wheel_unlink()). The next advance
 * looks at the bitmaps again (@ready_ns stays 0).
 */
void tw_wheel_spill(struct tw_wheel *w)
{
	unsigned int mask = tw_size(w) - 1;
	u64 tick = w->clk;
	int lvl;

	for (lvl = w->levels - 1; lvl >= 0; lvl--) {
		unsigned int shift = w->bits * lvl, idx;

		if (tick & ((1ULL << shift) - 1))
			continue;
		idx = (lvl << w->bits) + ((tick >> shift) & mask);
		if (!test_bit(idx, w->pending))
			continue;
		list_splice_tail_init(&w->buckets[idx], &w->spilled);
		__clear_bit(idx, w->pending);
		if (!lvl)
			__clear_bit(idx, w->mixed);
	}
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_spill);

/**
 * tw_wheel_sort - sort a held burst by owner
 * @w: the wheel; a burst is held (tw_wheel_hold())
 * @now_ns: the current time
 * @budget: how many timers may be looked at; decremented
 *
 * Takes timers off the head of the unsorted list: the held owner's due at
 * @now_ns to the tail of the held list, every other one to the tail of the
 * cleared list, but for the held owner's not yet due (a precise timer,
 * whose tick comes before its deadline), which go to the precise stage
 * (tw_wheel_file_precise()). So the held list holds only due timers, in
 * due order, and those of the owner that come due later queue behind them
 * in order (tw_timer_held()). Once the unsorted list is empty, the cleared
 * list goes back to the head of the expired list, ahead of the timers that
 * came due since: each owner's timers stay in their order, and only the
 * held owner's wait. A list move and three loads per timer, no callback.
 * The timers of a spill are not sorted here: the advance moves them down
 * (tw_wheel_spill()).
 *
 * Return: true when the unsorted list is empty.
 */
bool tw_wheel_sort(struct tw_wheel *w, u64 now_ns, unsigned int *budget)
{
	while (tw_wheel_sorting(w)) {
		struct twheel_timer *t;

		if (!*budget)
			return false;
		(*budget)--;
		t = list_first_entry(&w->unsorted, struct twheel_timer, entry);
		if (tw_timer_owner(t) != w->held_owner) {
			list_move_tail(&t->entry, &w->cleared);
		} else if (READ_ONCE(t->expires) <= now_ns) {
			list_move_tail(&t->entry, &w->held);
		} else {
			tw_list_del_init(&t->entry);
			w->count--;
			tw_wheel_file_precise(w, t);
		}
	}
	list_splice_init(&w->cleared, &w->expired);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_sort);

/**
 * tw_wheel_pop_next_held - tw_wheel_pop_next() while a burst is held
 * @w: the wheel; @w->held_owner is set
 * @now_ns: the current time
 * @budget: as for tw_wheel_pop_next()
 * @floor: as for tw_wheel_pop_next()
 *
 * As tw_wheel_pop_next(), but: none of the expired list's timers while the
 * held burst is to be sorted (tw_wheel_sort()); a timer of the held owner,
 * off the expired list or the precise stage, goes behind its held ones
 * (tw_timer_held()), for one unit of @budget; and once the burst is
 * released (tw_wheel_release()) and the expired list is empty, the held
 * list's first, until it is empty and the owner held no more.
 *
 * Return: the timer, unlinked, due at @now_ns; NULL when none is (or
 * @budget came down to @floor).
 */
struct twheel_timer *tw_wheel_pop_next_held(struct tw_wheel *w, u64 now_ns,
					    unsigned int *budget,
					    unsigned int floor)
{
	struct twheel_timer *t;

	while (w->precise.n) {
		t = tw_wheel_pop_precise(w, now_ns);
		if (!t)
			break;
		if (!tw_timer_held(w, t))
			return t;
		if (*budget <= floor || --*budget <= floor)
			return NULL;
	}
	/* Not while a held burst is sorted: its owners' timers go first. */
	while (!tw_wheel_sorting(w) && (t = tw_wheel_pop_due(w))) {
		/*
		 * A precise one before its deadline: to the precise stage,
		 * whoever's it is (the held list holds due timers only,
		 * tw_wheel_sort()). The held owner's due one goes behind its
		 * held ones, in its order.
		 */
		if (READ_ONCE(t->expires) > now_ns)
			tw_wheel_file_precise(w, t);
		else if (!tw_timer_held(w, t))
			return t;
		if (*budget <= floor || --*budget <= floor)
			return NULL;
	}
	/* A released burst: once everyone else's due timers fired. */
	while (w->held_free && !tw_wheel_sorting(w) &&
	       list_empty(&w->expired) && !list_empty(&w->held)) {
		t = list_first_entry(&w->held, struct twheel_timer, entry);
		tw_list_del_init(&t->entry);
		w->count--;
		if (list_empty(&w->held)) {
			w->held_owner = 0;
			w->held_free = false;
		}
		if (READ_ONCE(t->expires) <= now_ns)
			return t;
		tw_wheel_file_precise(w, t);	/* precise, before its deadline */
		if (*budget <= floor || --*budget <= floor)
			break;
	}
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_pop_next_held);

/**
 * tw_wheel_forward - move an idle wheel's clock to the present
 * @w: the wheel; nothing may be due
 * @now_ns: the current time
 */
void tw_wheel_forward(struct tw_wheel *w, u64 now_ns)
{
	u64 now = div64_u64(now_ns, w->gran);

	if (now > w->clk && tw_wheel_next(w) > now)
		w->clk = now;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_forward);

/**
 * tw_wheel_link_precise - link a precise timer by its deadline
 * @w: the wheel
 * @t: an unlinked timer; t->expires is its deadline, t->mode its slack
 *
 * A deadline two ticks away or more goes to the wheel for the tick
 * before its own (tw_precise_tick(): tw_wheel_pop_next() brings it to
 * the precise stage when that tick comes); one that has passed to the
 * expired list; one within this tick or the next to the stage's heap.
 * With the heap full, or its user's share of it held, the timer keeps
 * the wheel's precision (each heap fills on its own).
 *
 * Return: the time, ns, by which the wheel must next look at @t.
 */
ktime_t tw_wheel_link_precise(struct tw_wheel *w, struct twheel_timer *t)
{
	u64 expires = READ_ONCE(t->expires), tick = tw_precise_tick(w, expires);
	u64 key;

	w->count++;
	if (tick > w->clk)
		return tw_wheel_tick_time(w, tw_link_tick(w, t, tick));
	if (tw_tick_of(w, expires) > w->clk) {
		key = tw_precise_add(&w->precise, t, w->gran);
		if (key)
			return key;
	}
	return tw_wheel_tick_time(w, tw_link_tick(w, t, tw_tick_of(w, expires)));
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_link_precise);

/**
 * tw_wheel_file_precise - move a timer to the precise stage
 * @w: the wheel
 * @t: a timer just taken off the expired list (tw_wheel_pop_due()), its
 *	deadline still to come
 *
 * To the stage's heap; with the heap full or its user's share of it
 * held, back to the wheel for its deadline's tick rounded up, at most one
 * tick late as every other timer is. A precise timer whose tick (the one
 * before its deadline's) is still to come goes back to the wheel for it;
 * a default one to its deadline's tick, a coarse one to its
 * tw_coarse_tick().
 */
void tw_wheel_file_precise(struct tw_wheel *w, struct twheel_timer *t)
{
	u64 expires = READ_ONCE(t->expires);
	bool precise = tw_timer_precise(t);

	w->count++;
	if (precise) {
		u64 tick = tw_precise_tick(w, expires);

		/* Before the tick it waits for: back to that tick. */
		if (tick > w->clk) {
			tw_link_tick(w, t, tick);
			return;
		}
		if (tw_precise_add(&w->precise, t, w->gran))
			return;
	}
	/* A precise one with the heap full: its deadline's tick rounded up. */
	tw_link_tick(w, t, precise ? tw_tick_of(w, expires) : tw_timer_tick(w, t));
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_file_precise);

/**
 * tw_wheel_pop - take any linked timer off the wheel
 * @w: the wheel
 *
 * For emptying a wheel (CPU offline, unload) a timer at a time, in O(levels)
 * per timer whatever the number linked.
 *
 * Return: the timer, now unlinked, or NULL if the wheel is empty.
 */
struct twheel_timer *tw_wheel_pop(struct tw_wheel *w)
{
	unsigned int n = w->levels << w->bits, idx;
	struct twheel_timer *t;

	tw_wheel_release_all(w);
	list_splice_init(&w->spilled, &w->expired);
	t = tw_wheel_pop_due(w);
	if (t)
		return t;
	t = tw_wheel_took(w, tw_precise_pop_any(&w->precise));
	if (t)
		return t;
	for (;;) {
		idx = find_first_bit(w->pending, n);
		if (idx >= n)
			return NULL;
		if (!list_empty(&w->buckets[idx]))
			break;
		__clear_bit(idx, w->pending);
	}
	t = list_first_entry(&w->buckets[idx], struct twheel_timer, entry);
	tw_wheel_unlink(w, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_wheel_pop);
