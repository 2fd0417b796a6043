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
#include "internal.h"
#include "precise.h"

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
 * @ready_ns: ns before which no bucket can come due: the end of @clk's tick
 *	after a complete tw_wheel_advance(), 0 after one that ran out of
 *	budget (a bucket at @clk may still hold timers). A bucket a timer is
 *	linked to starts after @clk; a timer due at @clk or before goes to
 *	@expired.
 * @count: timers linked in buckets, on @expired, @spilled, @unsorted,
 *	@cleared or @held
 * @pending: one bit per bucket, set while the bucket is not empty
 * @mixed: one bit per level-0 bucket, set when a timer linked there sorted
 *	before the one linked last (tw_note_order()), cleared when its tick
 *	comes: only then are its tick's due timers sorted
 * @buckets: @levels << @bits lists, FIFO
 * @expired: timers due, sorted by deadline then by arming order
 * @spilled: the buckets of the tick an advance stopped in, moved whole by
 *	tw_wheel_spill(), in bucket order; the next advance moves them down
 *	before any later tick
 * @unsorted: due timers a run over its time budget set aside
 *	(tw_wheel_hold()), in due order, to be sorted by owner
 *	(tw_wheel_sort()): while it is not empty, nothing on @expired fires
 * @cleared: timers tw_wheel_sort() took off @unsorted that are not
 *	@held_owner's, in due order; back to the head of @expired once
 *	@unsorted is empty
 * @held: @held_owner's due timers, in due order, until
 *	tw_wheel_release(): its timers that come due meanwhile queue here too
 *	(tw_wheel_pop_next()), so that the owner's timers keep their order;
 *	none not yet due (tw_wheel_sort())
 * @held_owner: tw_timer_owner() of the timers on @held, 0 when no burst is
 *	held
 * @held_free: @held was released (tw_wheel_release()): its timers fire
 *	once the expired list is empty, @held_owner's new ones still
 *	behind them
 * @precise: the precise final stage (precise.h): timers with a slack below
 *	@gran, within a tick of their deadline
 *
 * Not shared: the owner serialises every call.
 */
struct tw_wheel {
	u64			gran;
	unsigned int		bits;
	unsigned int		levels;
	u64			clk;
	u64			ready_ns;
	unsigned long		count;
	unsigned long		*pending;
	DECLARE_BITMAP(mixed, 1 << TW_BITS_MAX);
	struct list_head	*buckets;
	struct list_head	expired;
	struct list_head	spilled;
	struct list_head	unsorted;
	struct list_head	cleared;
	struct list_head	held;
	unsigned long		held_owner;
	bool			held_free;
	struct tw_precise	precise;
};

unsigned int tw_levels_for(u64 gran, unsigned int bits);
int tw_wheel_init(struct tw_wheel *w, u64 gran, unsigned int bits,
		  u64 now_ns, int node);
void tw_wheel_free(struct tw_wheel *w);
u64 tw_wheel_next(const struct tw_wheel *w);
bool tw_wheel_advance(struct tw_wheel *w, u64 now_ns, unsigned int *budget);
void tw_wheel_spill(struct tw_wheel *w);
bool tw_wheel_sort(struct tw_wheel *w, u64 now_ns, unsigned int *budget);
void tw_wheel_forward(struct tw_wheel *w, u64 now_ns);
struct twheel_timer *tw_wheel_pop(struct tw_wheel *w);
ktime_t tw_wheel_link_precise(struct tw_wheel *w, struct twheel_timer *t);
void tw_wheel_file_precise(struct tw_wheel *w, struct twheel_timer *t);

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

/* @t's slack class (precise.h): 0 for the default slack. */
static __always_inline unsigned int tw_timer_slack(const struct twheel_timer *t)
{
	return READ_ONCE(t->mode) >> TW_SLACK_SHIFT;
}

/* Whether a slack class (precise.h) is below the tick: a bit. */
static __always_inline bool tw_class_precise(unsigned int class)
{
	return class & TW_SLACK_PRECISE;
}

/* Whether a slack class (precise.h) is coarse: two ticks or more. */
static __always_inline bool tw_class_coarse(unsigned int class)
{
	return class && !(class & TW_SLACK_PRECISE);
}

/* Whether @t asked for a slack below the tick (precise.h): a bit test. */
static __always_inline bool tw_timer_precise(const struct twheel_timer *t)
{
	return READ_ONCE(t->mode) & (TW_SLACK_PRECISE << TW_SLACK_SHIFT);
}

/*
 * The tick of a coarse slack @class (precise.h) for a deadline @ns: its
 * tick rounded up to a multiple of the class's 2^k ticks, the same
 * instants on every CPU. At most the slack late: (2^k - 1) ticks past the
 * deadline's tick, whose start is less than a tick past it.
 */
static __always_inline u64 tw_coarse_tick(const struct tw_wheel *w, u64 ns,
					  unsigned int class)
{
	u64 mask = (1ULL << class) - 1;

	return (tw_tick_of(w, ns) + mask) & ~mask;
}

/*
 * The tick of a precise timer's deadline rounded down, less one: its
 * bucket is processed a tick before the deadline's, so that it is in the
 * precise stage before its deadline's tick begins and its own run is the
 * only one between it and its deadline (tw_wheel_link_precise()).
 */
static __always_inline u64 tw_precise_tick(const struct tw_wheel *w, u64 ns)
{
	u64 tick = div64_u64(ns, w->gran);

	return tick ? tick - 1 : 0;
}

/*
 * The tick at which a linked timer's bucket is to be processed: its
 * deadline rounded up, or for a precise timer tw_precise_tick().
 */
static __always_inline u64 tw_timer_tick(const struct tw_wheel *w,
					 const struct twheel_timer *t)
{
	u64 ns = READ_ONCE(t->expires);
	unsigned int class = tw_timer_slack(t);

	if (unlikely(class)) {
		if (tw_class_precise(class))
			return tw_precise_tick(w, ns);
		return tw_coarse_tick(w, ns, class);
	}
	return tw_tick_of(w, ns);
}

static inline unsigned int tw_size(const struct tw_wheel *w)
{
	return 1U << w->bits;
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

/*
 * The order of due timers: by deadline, then by arming order (a per-CPU
 * counter, compared as it wraps). Whether the key @e, @o sorts strictly
 * before @le, @lo. Hinted false, as where a link (tw_note_order()) or a
 * tick's walk (tw_sort_due()) asks: the arming path then falls through.
 */
static __always_inline bool tw_key_before(u64 e, u32 o, u64 le, u32 lo)
{
	return unlikely(e <= le) && (e < le || (s32)(o - lo) < 0);
}

/*
 * @t goes to the tail of level-0 bucket @idx: if it sorts before the
 * timer there now (tw_key_before()), the bucket is out of order (@mixed),
 * and its tick's due timers are looked at and sorted (tw_sort_due()). The
 * tail's deadline (and arming order, on a tie) is the load it adds: the
 * list add reads the tail pointer itself. Owner only, as the wheel.
 */
static __always_inline void tw_note_order(struct tw_wheel *w,
					  const struct twheel_timer *t,
					  unsigned int idx)
{
	const struct list_head *head = &w->buckets[idx], *last = head->prev;
	const struct twheel_timer *l;

	if (last == head)
		return;
	l = list_entry(last, struct twheel_timer, entry);
	if (tw_key_before(READ_ONCE(t->expires), t->order,
			  READ_ONCE(l->expires), l->order))
		__set_bit(idx, w->mixed);
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
	/* Level 0 apart: only its buckets note their order. */
	if (delta < tw_size(w)) {
		idx = e & (tw_size(w) - 1);
		t->bucket = idx;
		tw_note_order(w, t, idx);
		tw_list_add_tail(&t->entry, &w->buckets[idx]);
		__set_bit(idx, w->pending);
		return e;
	}
	for (lvl = 1; lvl < w->levels - 1; lvl++)
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
 * tw_wheel_unlink - take a linked timer off its bucket, a due list
 *	(expired, unsorted, cleared, held), the spilled list or the precise
 *	stage
 * @w: the wheel
 * @t: the timer
 */
static __always_inline void tw_wheel_unlink(struct tw_wheel *w,
					    struct twheel_timer *t)
{
	unsigned int b = t->bucket;

	if (likely(b < TW_PRECISE_BASE)) {
		tw_list_del_init(&t->entry);
		/*
		 * After a bucket was moved to the expired list whole, its
		 * timers keep a stale index: testing the bucket itself keeps
		 * the bit exact.
		 */
		if (list_empty(&w->buckets[b]))
			__clear_bit(b, w->pending);
	} else if (b == TW_NO_BUCKET) {
		tw_list_del_init(&t->entry);
	} else {
		tw_precise_del(&w->precise, t);
	}
	t->bucket = TW_NO_BUCKET;
	w->count--;
}

/**
 * tw_wheel_took - account for a timer the precise stage gave up
 * @w: the wheel
 * @t: a timer just taken out of @w's precise stage (tw_precise_pop_*()),
 *	or NULL
 *
 * The rest of tw_wheel_unlink() for it: the stage took it out of its heap,
 * the wheel forgets its bucket and counts it no more.
 *
 * Return: @t.
 */
static __always_inline struct twheel_timer *
tw_wheel_took(struct tw_wheel *w, struct twheel_timer *t)
{
	if (t) {
		t->bucket = TW_NO_BUCKET;
		w->count--;
	}
	return t;
}

/**
 * tw_wheel_pop_precise - take the precise stage's next due timer
 * @w: the wheel
 * @now_ns: the current time
 *
 * Return: the timer, unlinked, of the kernel's or the user heap
 * (tw_precise_pop_due()), or NULL.
 */
static __always_inline struct twheel_timer *
tw_wheel_pop_precise(struct tw_wheel *w, u64 now_ns)
{
	return tw_wheel_took(w, tw_precise_pop_due(&w->precise, now_ns));
}

/**
 * tw_wheel_pop_hard - take the hard heap's first timer if its deadline came
 * @w: the wheel
 * @now_ns: the current time
 *
 * Return: the timer, unlinked (tw_precise_pop_hard()), or NULL.
 */
static __always_inline struct twheel_timer *
tw_wheel_pop_hard(struct tw_wheel *w, u64 now_ns)
{
	return tw_wheel_took(w, tw_precise_pop_hard(&w->precise, now_ns));
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
 * tw_wheel_relink_ns - link a timer by its deadline and slack, off
 *	wherever it was
 * @w: the wheel
 * @t: a timer linked on @w (in a bucket, on the expired list or in the
 *	precise stage), or not linked at all (an empty t->entry)
 *
 * The arming path in one call into the wheel. A timer with the default
 * slack is linked as tw_wheel_relink() links it; a precise one
 * (tw_timer_precise()) by tw_wheel_link_precise(); a coarse one for its
 * tw_coarse_tick().
 *
 * Return: the time, ns, by which the wheel must next look at @t.
 */
static __always_inline ktime_t tw_wheel_relink_ns(struct tw_wheel *w,
						  struct twheel_timer *t)
{
	unsigned int class;

	if (!list_empty(&t->entry))
		tw_wheel_unlink(w, t);
	class = tw_timer_slack(t);
	if (unlikely(class)) {
		if (tw_class_precise(class))
			return tw_wheel_link_precise(w, t);
		return tw_wheel_tick_time(w, tw_wheel_link_tick(w, t,
							tw_timer_tick(w, t)));
	}
	return tw_wheel_tick_time(w, tw_wheel_link(w, t));
}

/**
 * tw_wheel_sorting - whether a held burst is still to be sorted by owner
 * @w: the wheel
 *
 * Return: true while @w->unsorted has timers (tw_wheel_sort()).
 */
static inline bool tw_wheel_sorting(const struct tw_wheel *w)
{
	return !list_empty(&w->unsorted);
}

/**
 * tw_wheel_has_due - whether due timers wait, to fire or to be sorted
 * @w: the wheel
 *
 * Return: true if the expired list has timers, or the unsorted list (the
 * next run sorts them first), or the held list once released. Until
 * tw_wheel_release(), the held list does not count: its timers wait.
 */
static inline bool tw_wheel_has_due(const struct tw_wheel *w)
{
	return !list_empty(&w->expired) || tw_wheel_sorting(w) ||
	       (w->held_free && !list_empty(&w->held));
}

/**
 * tw_wheel_hold - set the due timers aside, to hold an owner's
 * @w: the wheel
 * @owner: tw_timer_owner() of the timers to hold, not 0; @w->held_owner
 *	if a burst is held already
 *
 * What a run over its time budget leaves on the expired list goes to the
 * tail of the unsorted list, in O(1): tw_wheel_sort() then puts @owner's
 * timers on the held list and the others back at the head of the expired
 * list, in their order. Timers of other owners due meanwhile wait for that
 * sort, no longer.
 */
static inline void tw_wheel_hold(struct tw_wheel *w, unsigned long owner)
{
	w->held_owner = owner;
	w->held_free = false;
	list_splice_tail_init(&w->expired, &w->unsorted);
}

/**
 * tw_wheel_release_all - give a held burst back at once
 * @w: the wheel
 *
 * In O(1), to the head of the expired list, with whatever is still to be
 * sorted: first the timers sorted out, then the held ones, then the
 * unsorted ones, each in due order, and the owner's timers after the
 * ones they were due behind. For a wheel being emptied (tw_wheel_pop()),
 * and for a release that comes while the sort is under way.
 *
 * Return: true if any timer was given back.
 */
static inline bool tw_wheel_release_all(struct tw_wheel *w)
{
	bool any = !list_empty(&w->held) || tw_wheel_sorting(w);

	list_splice_init(&w->unsorted, &w->expired);
	list_splice_init(&w->held, &w->expired);
	list_splice_init(&w->cleared, &w->expired);
	w->held_owner = 0;
	w->held_free = false;
	return any;
}

/**
 * tw_wheel_release - let a held burst fire, after everyone else's
 * @w: the wheel
 *
 * The held timers may fire again, in O(1), but after the expired list's
 * (tw_wheel_pop_next()): the timers of others that came due while the
 * burst was held do not wait behind it a second time. The owner stays
 * held, so that its timers that come due meanwhile still go behind its
 * held ones, until the held list is empty. While the sort is under way,
 * tw_wheel_release_all().
 *
 * Return: true if any timer was given back.
 */
static inline bool tw_wheel_release(struct tw_wheel *w)
{
	if (tw_wheel_sorting(w))
		return tw_wheel_release_all(w);
	w->held_free = !list_empty(&w->held);
	return w->held_free;
}

/**
 * tw_wheel_pop_due - take the first due timer off the expired list
 * @w: the wheel
 *
 * Return: the timer, unlinked: the earliest due (see tw_wheel_advance());
 * NULL if the expired list is empty. One load of its head for both.
 */
static __always_inline struct twheel_timer *tw_wheel_pop_due(struct tw_wheel *w)
{
	struct twheel_timer *t = list_first_entry_or_null(&w->expired,
							  struct twheel_timer,
							  entry);

	if (!t)
		return NULL;

	/*
	 * tw_wheel_unlink() for the expired list: its timers are in no
	 * bucket (a level-0 bucket moved here whole had its bit cleared,
	 * tw_collect(), and its timers' stale index is not looked at) and
	 * in no heap.
	 */
	tw_list_del_init(&t->entry);
	t->bucket = TW_NO_BUCKET;
	w->count--;
	return t;
}

/*
 * A timer just taken off a due list or the precise stage while a burst is
 * held: if it is the held owner's, it goes behind the owner's held
 * timers, linked (counted, in no bucket) until tw_wheel_release().
 * Return: true if it did.
 */
static __always_inline bool tw_timer_held(struct tw_wheel *w,
					  struct twheel_timer *t)
{
	if (tw_timer_owner(t) != w->held_owner)
		return false;
	t->bucket = TW_NO_BUCKET;
	w->count++;
	tw_list_add_tail(&t->entry, &w->held);
	return true;
}

struct twheel_timer *tw_wheel_pop_next_held(struct tw_wheel *w, u64 now_ns,
					    unsigned int *budget,
					    unsigned int floor);

/**
 * tw_wheel_pop_next - take the next timer to fire
 * @w: the wheel
 * @now_ns: the current time
 * @budget: how many timers may be moved to the precise stage; decremented
 * @floor: below @budget; where @budget stops this call: one call moves at
 *	most @budget - @floor timers, which the caller's interrupts-off step
 *	bounds
 *
 * First a timer of the precise stage whose deadline has come, then the
 * expired list's first. A precise timer taken off the expired list before
 * its deadline (its tick came, rounded down) moves to the precise stage
 * instead, for one unit of @budget. While a burst is held,
 * tw_wheel_pop_next_held() instead: the fast path tests one word more.
 *
 * Return: the timer, unlinked, due at @now_ns; NULL when none is (or
 * @budget came down to @floor).
 */
static __always_inline struct twheel_timer *
tw_wheel_pop_next(struct tw_wheel *w, u64 now_ns, unsigned int *budget,
		  unsigned int floor)
{
	struct twheel_timer *t;

	/* No sort under way without a held owner (tw_wheel_hold()). */
	if (unlikely(w->held_owner))
		return tw_wheel_pop_next_held(w, now_ns, budget, floor);
	if (unlikely(w->precise.n)) {
		t = tw_wheel_pop_precise(w, now_ns);
		if (t)
			return t;
	}
	while ((t = tw_wheel_pop_due(w))) {
		/*
		 * Never early: a default timer's tick is never before it; a
		 * precise one's may be, and the precise stage takes it.
		 */
		if (likely(READ_ONCE(t->expires) <= now_ns))
			return t;
		tw_wheel_file_precise(w, t);
		if (*budget <= floor || --*budget <= floor)
			break;
	}
	return NULL;
}

/**
 * tw_wheel_next_ns - when the wheel next needs attention, in ns
 * @w: the wheel
 *
 * Return: the earlier of tw_wheel_next()'s tick and the precise stage's
 * first key (tw_precise_next()); KTIME_MAX when the wheel is empty.
 */
static inline ktime_t tw_wheel_next_ns(const struct tw_wheel *w)
{
	return min(tw_wheel_tick_time(w, tw_wheel_next(w)),
		   tw_precise_next(&w->precise));
}

#endif /* _TWHEEL_WHEEL_H */
