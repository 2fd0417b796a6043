// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the precise final stage of a wheel (see precise.h).
 *
 * A binary min-heap of slots (key, timer), array-backed: the timer's
 * twheel_timer::bucket holds TW_PRECISE_BASE plus its index, so a cancel
 * takes it out in O(log n) without a search, and its entry is linked on
 * the stage's member list, so that it counts as linked as a timer in a
 * bucket does. Every operation is O(log TW_PRECISE_MAX), 12 steps at
 * most, whatever the number of timers pending.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "twheel.h"
#include "wheel.h"
#include "precise.h"

/**
 * tw_precise_init - set up an empty stage
 * @p: the stage
 * @node: NUMA node for the heap
 *
 * Return: 0 or -ENOMEM.
 */
int tw_precise_init(struct tw_precise *p, int node)
{
	p->heap = kvmalloc_node(TW_PRECISE_MAX * sizeof(*p->heap),
				GFP_KERNEL, node);
	if (!p->heap)
		return -ENOMEM;
	p->n = 0;
	INIT_LIST_HEAD(&p->members);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_init);

/**
 * tw_precise_free - release a stage's memory; it must be empty
 * @p: the stage
 */
void tw_precise_free(struct tw_precise *p)
{
	kvfree(p->heap);
	p->heap = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_free);

/**
 * tw_slack_class - the class of a slack, as twheel_timer::mode holds it
 * @gran: the wheel's tick, ns
 * @slack_ns: the slack asked for
 *
 * Return: 0 (the default, one tick) for @slack_ns at least @gran,
 * %TW_SLACK_NONE for 0, else 2 + log2(@slack_ns): the slack is rounded
 * down to a power of two, so a timer is never later than it asked.
 */
u64 tw_slack_class(u64 gran, u64 slack_ns)
{
	if (slack_ns >= gran)
		return 0;
	if (!slack_ns)
		return TW_SLACK_NONE;
	return ilog2(slack_ns) + 2;
}
EXPORT_SYMBOL_IF_KUNIT(tw_slack_class);

/**
 * tw_class_slack - the slack, ns, of a class
 * @gran: the wheel's tick, ns
 * @class: a class of tw_slack_class()
 *
 * Return: the slack the class stands for.
 */
u64 tw_class_slack(u64 gran, unsigned int class)
{
	if (!class)
		return gran;
	if (class == TW_SLACK_NONE)
		return 0;
	return 1ULL << (class - 2);
}
EXPORT_SYMBOL_IF_KUNIT(tw_class_slack);

static __always_inline bool tw_slot_less(const struct tw_precise_slot *a,
					 const struct tw_precise_slot *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	/* Equal keys: arming order, as the wheel's sort keeps it. */
	return (s32)(READ_ONCE(a->t->order) - READ_ONCE(b->t->order)) < 0;
}

static __always_inline void tw_slot_set(struct tw_precise *p, unsigned int i,
					struct tw_precise_slot s)
{
	p->heap[i] = s;
	s.t->bucket = TW_PRECISE_BASE + i;
}

/* Move the slot at @i up to its place; at most log2(n) steps. */
static void tw_sift_up(struct tw_precise *p, unsigned int i)
{
	struct tw_precise_slot s = p->heap[i];

	while (i) {
		unsigned int parent = (i - 1) / 2;

		if (!tw_slot_less(&s, &p->heap[parent]))
			break;
		tw_slot_set(p, i, p->heap[parent]);
		i = parent;
	}
	tw_slot_set(p, i, s);
}

/* Move the slot at @i down to its place; at most log2(n) steps. */
static void tw_sift_down(struct tw_precise *p, unsigned int i)
{
	struct tw_precise_slot s = p->heap[i];

	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= p->n)
			break;
		if (c + 1 < p->n && tw_slot_less(&p->heap[c + 1], &p->heap[c]))
			c++;
		if (!tw_slot_less(&p->heap[c], &s))
			break;
		tw_slot_set(p, i, p->heap[c]);
		i = c;
	}
	tw_slot_set(p, i, s);
}

/* Take the slot at @i out of the heap; the timer stays on the members list. */
static void tw_heap_remove(struct tw_precise *p, unsigned int i)
{
	if (--p->n == i)
		return;
	tw_slot_set(p, i, p->heap[p->n]);
	/* The last slot may belong above or below @i. */
	if (i && tw_slot_less(&p->heap[i], &p->heap[(i - 1) / 2]))
		tw_sift_up(p, i);
	else
		tw_sift_down(p, i);
}

/*
 * Put @t, unlinked and counted, in the heap. Return: its key, or 0 when
 * the heap is full.
 */
static u64 tw_heap_add(struct tw_wheel *w, struct twheel_timer *t)
{
	struct tw_precise *p = &w->precise;
	u64 key, expires = READ_ONCE(t->expires);
	unsigned int class = READ_ONCE(t->mode) >> TW_SLACK_SHIFT;

	if (p->n >= TW_PRECISE_MAX || !p->heap)
		return 0;
	if (check_add_overflow(expires, tw_class_slack(w->gran, class), &key) ||
	    key > KTIME_MAX)
		key = KTIME_MAX;
	p->heap[p->n].key = key;
	p->heap[p->n].t = t;
	tw_list_add_tail(&t->entry, &p->members);
	tw_sift_up(p, p->n++);
	return key;
}

/**
 * tw_precise_link - link a precise timer by its deadline
 * @w: the wheel
 * @t: an unlinked timer; t->expires is its deadline, t->mode its slack
 *
 * A deadline two ticks away or more goes to the wheel for the tick
 * before its own (tw_precise_tick(): tw_wheel_pop_next() brings it here
 * when that tick comes); one that has passed to the expired list; one
 * within this tick or the next to the heap. With the heap full, the timer
 * keeps the wheel's precision.
 *
 * Return: the time, ns, by which the wheel must next look at @t.
 */
ktime_t tw_precise_link(struct tw_wheel *w, struct twheel_timer *t)
{
	u64 expires = READ_ONCE(t->expires), tick = tw_precise_tick(w, expires);
	u64 key;

	w->count++;
	if (tick > w->clk)
		return tw_wheel_tick_time(w, tw_link_tick(w, t, tick));
	if (tw_tick_of(w, expires) > w->clk) {
		key = tw_heap_add(w, t);
		if (key)
			return key;
	}
	return tw_wheel_tick_time(w, tw_link_tick(w, t, tw_tick_of(w, expires)));
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_link);

/**
 * tw_precise_file - move a timer to the precise stage
 * @w: the wheel
 * @t: a timer just taken off the expired list (tw_wheel_pop_due()), its
 *	deadline still to come
 *
 * To the heap; with the heap full, back to the wheel for its deadline's
 * tick rounded up, at most one tick late as every other timer is.
 */
void tw_precise_file(struct tw_wheel *w, struct twheel_timer *t)
{
	w->count++;
	if (tw_heap_add(w, t))
		return;
	tw_link_tick(w, t, tw_tick_of(w, READ_ONCE(t->expires)));
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_file);

/**
 * tw_precise_del - take a timer out of the heap
 * @w: the wheel
 * @t: a timer in @w's heap (its bucket is TW_PRECISE_BASE + index)
 *
 * For tw_wheel_unlink(), which resets the bucket and the count.
 */
void tw_precise_del(struct tw_wheel *w, struct twheel_timer *t)
{
	struct tw_precise *p = &w->precise;

	tw_heap_remove(p, t->bucket - TW_PRECISE_BASE);
	tw_list_del_init(&t->entry);
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_del);

/**
 * tw_precise_pop_due - take the heap's first timer if its deadline came
 * @w: the wheel
 * @now_ns: the current time
 *
 * As hrtimer takes the first timer of its queue if its soft expiry came:
 * a timer deeper in the heap whose deadline came waits until it is first,
 * by its key at the latest.
 *
 * Return: the timer, unlinked and uncounted, or NULL.
 */
struct twheel_timer *tw_precise_pop_due(struct tw_wheel *w, u64 now_ns)
{
	struct tw_precise *p = &w->precise;
	struct twheel_timer *t;

	if (!p->n)
		return NULL;
	t = p->heap[0].t;
	if (READ_ONCE(t->expires) > now_ns)
		return NULL;
	tw_wheel_unlink(w, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_pop_due);

/**
 * tw_precise_pop_any - take any timer out of the heap, for emptying it
 * @w: the wheel
 *
 * Return: the timer, unlinked and uncounted, or NULL if the heap is empty.
 */
struct twheel_timer *tw_precise_pop_any(struct tw_wheel *w)
{
	struct tw_precise *p = &w->precise;
	struct twheel_timer *t;

	if (!p->n)
		return NULL;
	/* The last slot: nothing to sift. */
	t = p->heap[p->n - 1].t;
	tw_wheel_unlink(w, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_pop_any);
