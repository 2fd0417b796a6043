// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the precise final stage of a wheel (see precise.h).
 *
 * Three binary min-heaps of slots (key, timer), array-backed: the
 * kernel's timers, /dev/twheel's (%TW_F_RATED) and the kernel's that may
 * fire in hard interrupt context (%TWHEEL_F_HARDIRQ). The timer's
 * twheel_timer::bucket holds its heap's base plus its index, so a cancel
 * takes it out in O(log n) without a search, and its entry is linked on
 * the stage's member list, so that it counts as linked as a timer in a
 * bucket does. Every operation is O(log TW_PRECISE_MAX), 12 steps at
 * most, whatever the number of timers pending.
 *
 * The stage is below the wheel and calls nothing of it: the wheel
 * (wheel.c, wheel.h) decides when a timer comes here (tw_wheel_link_precise(),
 * tw_wheel_file_precise()), and accounts for what leaves (its bucket
 * and its count of linked timers); a heap full or a share held makes
 * tw_precise_add() return 0, and the wheel keeps the timer itself.
 *
 * A fair share of the user heap. Its TW_PRECISE_MAX entries per CPU serve
 * every user of /dev/twheel together, so without a share one user's
 * slack-0 timers due within the same two ticks on a CPU (4,096 of them,
 * from one file) left every other user's there a tick late, the slack
 * uapi/twheel.h promised them gone. Now each user (struct twheel_user,
 * one per uid: all its files, processes and threads together) holds at
 * most tw_precise_per_user entries of each CPU's user heap, the module
 * parameter precise_per_user, a quarter of the heap by default; a timer
 * past its user's share keeps the wheel's precision, as one past a full
 * heap does: at most a tick late, never early. So one user cannot deny
 * the slack of another, and four users at their share together are what
 * one user used to be. A user's share is per CPU: timers on many CPUs
 * take a share of each heap, never more of one.
 *
 * The count. Each user has an unsigned int per CPU (alloc_percpu(),
 * fd_obj.c), and each file a copy of its pointer in its struct tw_share
 * (twheel_fd::share, set at open): a %TW_F_SHARED timer (the chardev's,
 * set once when its object is made) is the timer of a struct
 * tw_shared_timer (internal.h), which points at that share: two loads
 * from memory its expiry touches anyway, and the entry of this stage's
 * CPU (tw_precise::cpu). So the stage knows the core's types only, not
 * the chardev's. Only the owner of the wheel changes the count, under
 * the wheel's serialisation, so it is a plain increment in
 * tw_precise_add() and a decrement in tw_precise_del(): no atomic, no shared
 * cache line between CPUs, and nothing at all for the kernel's timers or
 * a timer with the default slack, which never enter the heap's code. Every
 * way a timer leaves a heap (its expiry, tw_precise_pop_due() and
 * tw_precise_pop_hard(); a cancel or re-arming, tw_wheel_unlink(); a CPU
 * going offline and the unload, tw_precise_pop_any(); a closing file,
 * whose timers are cancelled and waited for before its objects are freed
 * and its user put) goes through tw_precise_del(), so the count of a user
 * is its entries exactly, and its memory outlives them. A timer moved to
 * another CPU by hotplug leaves the count of the dead CPU's stage and
 * takes one of the new CPU's when linked there.
 *
 * Who is exempt. The kernel's timers have heaps of their own and no user
 * (%TW_F_SHARED absent): no user's share refuses them. Files opened with
 * CAP_SYS_RESOURCE, exempt from the per-user cap of timers, are exempt
 * from the share too. Lowering precise_per_user refuses new entries; it
 * takes none away.
 *
 * User namespaces. A share is counted against the user of the initial
 * namespace at the top of the file's user's owner chain (fd_obj.c,
 * twheel_user_precise_held()): the uids of a container, and the
 * namespaces one user makes with unshare(CLONE_NEWUSER), all count as the
 * user who made them, as they do against the cap of timers.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "twheel.h"
#include "internal.h"
#include "tw_list.h"
#include "precise.h"

/* Most entries of each CPU's user heap one user holds (see above). */
unsigned int tw_precise_per_user = TW_PRECISE_MAX / 4;
EXPORT_SYMBOL_IF_KUNIT(tw_precise_per_user);

static int precise_per_user_set(const char *val,
				const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, TW_PRECISE_MAX);
}

static const struct kernel_param_ops precise_per_user_ops = {
	.set	= precise_per_user_set,
	.get	= param_get_uint,
};

module_param_cb(precise_per_user, &precise_per_user_ops,
		&tw_precise_per_user, 0644);
MODULE_PARM_DESC(precise_per_user,
		 "most timers of one user with a slack below the tick in each CPU's precise stage, 1..4096 (default 1024)");

/**
 * tw_precise_init - set up an empty stage
 * @p: the stage
 * @node: NUMA node for the heaps
 *
 * Return: 0 or -ENOMEM.
 */
int tw_precise_init(struct tw_precise *p, int node)
{
	struct tw_precise_slot *slots;
	unsigned int k;

	slots = kvmalloc_node(array_size(TW_PRECISE_KINDS * TW_PRECISE_MAX,
					 sizeof(*slots)), GFP_KERNEL, node);
	if (!slots)
		return -ENOMEM;
	for (k = 0; k < TW_PRECISE_KINDS; k++) {
		p->heap[k].slot = slots + k * TW_PRECISE_MAX;
		p->heap[k].n = 0;
		p->heap[k].base = TW_PRECISE_BASE + k * TW_PRECISE_MAX;
	}
	p->n = 0;
	INIT_LIST_HEAD(&p->members);
	p->cpu = 0;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_init);

/**
 * tw_precise_free - release a stage's memory; it must be empty
 * @p: the stage
 */
void tw_precise_free(struct tw_precise *p)
{
	unsigned int k;

	kvfree(p->heap[0].slot);
	for (k = 0; k < TW_PRECISE_KINDS; k++)
		p->heap[k].slot = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_free);

/**
 * tw_slack_class - the class of a slack, as twheel_timer::mode holds it
 * @gran: the wheel's tick, ns
 * @slack_ns: the slack asked for
 *
 * Return: %TW_SLACK_NONE for 0; %TW_SLACK_PRECISE | (2 + log2(@slack_ns))
 * below @gran; 0 (the default, one tick) from @gran to below two ticks,
 * and for %TWHEEL_SLACK_DEFAULT; from two ticks on, log2 of the whole
 * ticks in @slack_ns, at most %TW_SLACK_COARSE_MAX. The slack is rounded
 * down to a power of two (of ns or of ticks), so a timer is never later
 * than it asked.
 */
u64 tw_slack_class(u64 gran, u64 slack_ns)
{
	if (!slack_ns)
		return TW_SLACK_NONE;
	if (slack_ns < gran)
		return TW_SLACK_PRECISE | (ilog2(slack_ns) + 2);
	if (slack_ns == U64_MAX || div64_u64(slack_ns, gran) < 2)
		return 0;
	return min_t(u64, ilog2(div64_u64(slack_ns, gran)), TW_SLACK_COARSE_MAX);
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
	if (!(class & TW_SLACK_PRECISE))
		return gran << class;
	return 1ULL << ((class & ~TW_SLACK_PRECISE) - 2);
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

static __always_inline void tw_slot_set(struct tw_precise_heap *h,
					unsigned int i, struct tw_precise_slot s)
{
	h->slot[i] = s;
	s.t->bucket = h->base + i;
}

/* Move the slot at @i up to its place; at most log2(n) steps. */
static void tw_sift_up(struct tw_precise_heap *h, unsigned int i)
{
	struct tw_precise_slot s = h->slot[i];

	while (i) {
		unsigned int parent = (i - 1) / 2;

		if (!tw_slot_less(&s, &h->slot[parent]))
			break;
		tw_slot_set(h, i, h->slot[parent]);
		i = parent;
	}
	tw_slot_set(h, i, s);
}

/* Move the slot at @i down to its place; at most log2(n) steps. */
static void tw_sift_down(struct tw_precise_heap *h, unsigned int i)
{
	struct tw_precise_slot s = h->slot[i];

	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && tw_slot_less(&h->slot[c + 1], &h->slot[c]))
			c++;
		if (!tw_slot_less(&h->slot[c], &s))
			break;
		tw_slot_set(h, i, h->slot[c]);
		i = c;
	}
	tw_slot_set(h, i, s);
}

/* Take the slot at @i out of the heap; the timer stays on the members list. */
static void tw_heap_remove(struct tw_precise_heap *h, unsigned int i)
{
	if (--h->n == i)
		return;
	tw_slot_set(h, i, h->slot[h->n]);
	/* The last slot may belong above or below @i. */
	if (i && tw_slot_less(&h->slot[i], &h->slot[(i - 1) / 2]))
		tw_sift_up(h, i);
	else
		tw_sift_down(h, i);
}

/*
 * The heap a timer goes to: the user heap for /dev/twheel's, the hard heap
 * for a kernel caller's that may fire in hard interrupt context.
 */
static __always_inline struct tw_precise_heap *
tw_heap_of(struct tw_precise *p, const struct twheel_timer *t)
{
	if (t->flags & TW_F_RATED)
		return &p->heap[TW_PRECISE_USER];
	if (t->flags & TWHEEL_F_HARDIRQ)
		return &p->heap[TW_PRECISE_HARD];
	return &p->heap[TW_PRECISE_KERNEL];
}

/*
 * The count of entries of this stage's user heap that the user of @t, a
 * %TW_F_SHARED timer, holds: its share's (struct tw_shared_timer), on the
 * stage's CPU.
 */
static __always_inline unsigned int *
tw_share_held(const struct tw_precise *p, const struct twheel_timer *t)
{
	const struct tw_shared_timer *st;

	st = container_of(t, struct tw_shared_timer, pt.timer);
	return per_cpu_ptr(st->share->held, p->cpu);
}

/**
 * tw_precise_add - put a timer in its heap
 * @p: the stage
 * @t: an unlinked timer; t->expires is its deadline, t->mode its slack
 * @gran: the wheel's tick, ns (what the default slack class stands for)
 *
 * Return: its key (the latest time it may fire), or 0 when its heap is
 * full, or its user holds its share of it: the caller then files it
 * elsewhere (the wheel keeps its precision).
 */
u64 tw_precise_add(struct tw_precise *p, struct twheel_timer *t, u64 gran)
{
	struct tw_precise_heap *h = tw_heap_of(p, t);
	u64 key, expires = READ_ONCE(t->expires);
	unsigned int class = READ_ONCE(t->mode) >> TW_SLACK_SHIFT;

	if (h->n >= TW_PRECISE_MAX || !h->slot)
		return 0;
	if (t->flags & TW_F_SHARED) {
		unsigned int *held = tw_share_held(p, t);

		if (*held >= READ_ONCE(tw_precise_per_user))
			return 0;
		WRITE_ONCE(*held, *held + 1);
	}
	if (check_add_overflow(expires, tw_class_slack(gran, class), &key) ||
	    key > KTIME_MAX)
		key = KTIME_MAX;
	h->slot[h->n].key = key;
	h->slot[h->n].t = t;
	tw_list_add_tail(&t->entry, &p->members);
	tw_sift_up(h, h->n++);
	p->n++;
	return key;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_add);

/**
 * tw_precise_del - take a timer out of its heap
 * @p: the stage
 * @t: a timer in one of @p's heaps (its bucket is that heap's base plus
 *	its index)
 *
 * For the wheel (tw_wheel_unlink(), tw_wheel_took()), which resets the
 * bucket and its count of linked timers.
 */
void tw_precise_del(struct tw_precise *p, struct twheel_timer *t)
{
	unsigned int b = t->bucket - TW_PRECISE_BASE;

	tw_heap_remove(&p->heap[b / TW_PRECISE_MAX], b % TW_PRECISE_MAX);
	p->n--;
	if (t->flags & TW_F_SHARED) {
		unsigned int *held = tw_share_held(p, t);

		WRITE_ONCE(*held, *held - 1);
	}
	tw_list_del_init(&t->entry);
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_del);

/**
 * tw_precise_pop_due - take a heap's first timer if its deadline came
 * @p: the stage
 * @now_ns: the current time
 *
 * As hrtimer takes the first timer of its queue if its soft expiry came:
 * a timer deeper in a heap whose deadline came waits until it is first,
 * by its key at the latest. Of the kernel's and the user heap's first
 * timers whose deadline came, the one with the earlier key; the hard heap
 * is tw_precise_pop_hard()'s.
 *
 * Return: the timer, out of its heap (tw_precise_del()), or NULL.
 */
struct twheel_timer *tw_precise_pop_due(struct tw_precise *p, u64 now_ns)
{
	const struct tw_precise_slot *best = NULL;
	struct twheel_timer *t;
	unsigned int k;

	for (k = 0; k < TW_PRECISE_HARD; k++) {
		const struct tw_precise_heap *h = &p->heap[k];

		if (!h->n || READ_ONCE(h->slot[0].t->expires) > now_ns)
			continue;
		if (!best || tw_slot_less(&h->slot[0], best))
			best = &h->slot[0];
	}
	if (!best)
		return NULL;
	t = best->t;
	tw_precise_del(p, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_pop_due);

/**
 * tw_precise_pop_hard - take the hard heap's first timer if its deadline
 *	came
 * @p: the stage
 * @now_ns: the current time
 *
 * As tw_precise_pop_due(), for the heap of %TWHEEL_F_HARDIRQ timers.
 *
 * Return: the timer, out of its heap (tw_precise_del()), or NULL.
 */
struct twheel_timer *tw_precise_pop_hard(struct tw_precise *p, u64 now_ns)
{
	const struct tw_precise_heap *h = &p->heap[TW_PRECISE_HARD];
	struct twheel_timer *t;

	if (!h->n || READ_ONCE(h->slot[0].t->expires) > now_ns)
		return NULL;
	t = h->slot[0].t;
	tw_precise_del(p, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_pop_hard);

/**
 * tw_precise_pop_any - take any timer out of the heap, for emptying it
 * @p: the stage
 *
 * Return: the timer, out of its heap (tw_precise_del()), or NULL if the
 * stage is empty.
 */
struct twheel_timer *tw_precise_pop_any(struct tw_precise *p)
{
	struct tw_precise_heap *h;
	struct twheel_timer *t;

	if (!p->n)
		return NULL;
	for (h = p->heap; !h->n; h++)
		;
	/* The last slot: nothing to sift. */
	t = h->slot[h->n - 1].t;
	tw_precise_del(p, t);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(tw_precise_pop_any);
