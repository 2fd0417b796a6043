// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the timer objects of /dev/twheel and what they cost: the caps
 * (per file, per user, global) and the units every object and page is
 * charged, the slab caches of the objects and of their event records, the
 * spare records of a file, the clock links of timers on other clocks, and
 * the freeing of objects for good. The bottom of the chardev layer (fd.h
 * lists its files): calls nothing of it but fd.h's helpers; the files
 * above call it through fd_obj.h. How objects are recycled, and when they
 * may be freed, is described at the top of chardev.c.
 */

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/compiler.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "twheel.h"
#include "compat.h"
#include "internal.h"
#include "fd.h"
#include "fd_obj.h"
#include "precise.h"
#include "tw_list.h"
#include "uapi/twheel.h"

/* Upper bound of the max_timers parameter: 16M timers per open file. */
#define TWHEEL_FD_MAX_TIMERS_LIMIT	(16u << 20)
/* A free slot keeps the next one in 31 bits (fd_table.h). */
static_assert(TWHEEL_FD_MAX_TIMERS_LIMIT < (1u << 31));

static unsigned int max_timers = 65536;

/*
 * Per-user and global caps on timer objects, across all open files.
 * 0 at load time means the default, scaled to the memory of the machine as
 * epoll's max_user_watches is: a user may pin 1/25th (4%) of low memory
 * in timers, and all users together a quarter, at TWHEEL_TIMER_COST bytes
 * per timer. Root may change both at any time; a lower cap refuses new
 * timers, it does not take existing ones away.
 */
static unsigned long max_user_timers;
module_param(max_user_timers, ulong, 0644);
MODULE_PARM_DESC(max_user_timers,
		 "most timers of one user across all open files (default: 4% of low memory / 256 B)");

static unsigned long max_total_timers;
module_param(max_total_timers, ulong, 0644);
MODULE_PARM_DESC(max_total_timers,
		 "most timers of all users together (default: 25% of low memory / 256 B)");

/*
 * Per-user cap on submission rings, each of which has a kernel thread of
 * its own, its poller (fd_ring.c), from its first start to release:
 * counted like the units, up the chain of owners, so that a user cannot
 * make threads without bound, nor a container one bound per uid. Root
 * may change it at any time; a lower cap refuses new rings.
 */
static unsigned int max_user_rings = 128;
module_param(max_user_rings, uint, 0644);
MODULE_PARM_DESC(max_user_rings,
		 "most submission rings (each with a poller thread) of one user across all files (default 128)");

/**
 * struct twheel_user - what one user's open files hold together
 * @node: in twheel_users, under twheel_users_lock
 * @uid: the user, from the credentials of open()
 * @ns: the user namespace @uid opened in (a reference); a user is a
 *	(namespace, uid) pair, as the kernel's ucounts are
 * @owner: for a user of another namespace than the initial one, the user
 *	that created that namespace, in its parent (a reference): charged
 *	for everything this one is, and so on up to the initial namespace.
 *	So the 65,536 uids of a container share the cap of the user who
 *	made the container, as inotify's and epoll's limits are shared
 *	through ucounts. NULL in the initial namespace.
 * @refs: open files charged to this user, plus the users whose @owner it
 *	is; under twheel_users_lock
 * @units: cap units of those files (see TWHEEL_TIMER_COST); atomic,
 *	changed by twheel_fd_charge() and twheel_fd_uncharge() only
 * @precise_held: per CPU, the entries of that CPU's precise user heap the
 *	user's timers hold, against its share (precise.c); changed only by
 *	the owner of that CPU's wheel
 * @rings: submission rings of those files, against max_user_rings;
 *	changed by twheel_fd_charge_ring() and twheel_fd_uncharge_ring()
 *	only
 */
struct twheel_user {
	struct hlist_node	node;
	kuid_t			uid;
	struct user_namespace	*ns;
	struct twheel_user	*owner;
	unsigned int		refs;
	atomic_long_t		units;
	unsigned int __percpu	*precise_held;
	atomic_t		rings;
};

/* uid -> struct twheel_user of every user charged for an open file. */
static DEFINE_HASHTABLE(twheel_users, 6);
static DEFINE_SPINLOCK(twheel_users_lock);	/* twheel_users, ::files */

/* Cap units of all files; against max_total_timers. */
static atomic_long_t twheel_total_units = ATOMIC_LONG_INIT(0);

static int max_timers_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, TWHEEL_FD_MAX_TIMERS_LIMIT);
}

static const struct kernel_param_ops max_timers_ops = {
	.set	= max_timers_set,
	.get	= param_get_uint,
};

/*
 * Sampled by each open(): changing it affects files opened afterwards, so
 * the limit of a file never changes under its user (TWHEEL_IOC_INFO reports
 * the one in force).
 */
module_param_cb(max_timers, &max_timers_ops, &max_timers, 0644);
MODULE_PARM_DESC(max_timers,
		 "most timers per open /dev/twheel, sampled at open (1..16777216, default 65536)");

struct kmem_cache *twheel_fd_timer_cache __read_mostly;
struct kmem_cache *twheel_fd_rec_cache __read_mostly;

/*
 * Counts @n units against the caps: the user's unless the opener had
 * CAP_SYS_RESOURCE (EDQUOT), and the global one (EAGAIN). On failure
 * nothing is counted.
 */
/* Takes @n units back from @u and its owners, up to (not including) @end. */
static void twheel_user_uncharge(struct twheel_user *u, struct twheel_user *end,
				 unsigned long n)
{
	for (; u != end; u = u->owner)
		atomic_long_sub(n, &u->units);
}

/*
 * Counts @n units against the caps: the user's and each of its owners'
 * (struct twheel_user) unless the opener had CAP_SYS_RESOURCE (EDQUOT),
 * and the global one (EAGAIN). On failure nothing is counted. The owners
 * are one load and one atomic each: none for a user of the initial
 * namespace, one per level of nesting otherwise.
 */
int twheel_fd_charge(struct twheel_fd *tf, unsigned long n)
{
	unsigned long max_user = READ_ONCE(max_user_timers);
	struct twheel_user *u;

	for (u = tf->user; u; u = u->owner) {
		if ((unsigned long)atomic_long_add_return(n, &u->units) >
		    max_user && !tf->cap_exempt)
			goto err_user;
	}
	if ((unsigned long)atomic_long_add_return(n, &twheel_total_units) >
	    READ_ONCE(max_total_timers))
		goto err_total;
	atomic_long_add(n, &tf->charged);
	return 0;

err_total:
	atomic_long_sub(n, &twheel_total_units);
	twheel_user_uncharge(tf->user, NULL, n);
	return -EAGAIN;
err_user:
	twheel_user_uncharge(tf->user, u->owner, n);
	return -EDQUOT;
}

void twheel_fd_uncharge(struct twheel_fd *tf, unsigned long n)
{
	atomic_long_sub(n, &tf->charged);
	twheel_user_uncharge(tf->user, NULL, n);
	atomic_long_sub(n, &twheel_total_units);
}

/* Takes a ring back from @u and its owners, up to (not including) @end. */
static void twheel_user_uncharge_ring(struct twheel_user *u,
				      struct twheel_user *end)
{
	for (; u != end; u = u->owner)
		atomic_dec(&u->rings);
}

/*
 * Counts a submission ring, and so its poller thread, against
 * max_user_rings: the user's and each of its owners', unless the opener
 * had CAP_SYS_RESOURCE. Return: 0, or -EDQUOT with nothing counted.
 */
int twheel_fd_charge_ring(struct twheel_fd *tf)
{
	unsigned int max = READ_ONCE(max_user_rings);
	struct twheel_user *u;

	for (u = tf->user; u; u = u->owner) {
		if ((unsigned int)atomic_inc_return(&u->rings) > max &&
		    !tf->cap_exempt) {
			twheel_user_uncharge_ring(tf->user, u->owner);
			return -EDQUOT;
		}
	}
	return 0;
}

void twheel_fd_uncharge_ring(struct twheel_fd *tf)
{
	twheel_user_uncharge_ring(tf->user, NULL);
}

/*
 * Frees an object that nothing references any more: no id, no event, no
 * callback running and no wheel holding it (twheel_fd_timer_destroy(), or
 * a twheel_cancel_sync() since its last arming). Its units go back to
 * the caps as its memory goes back to the slab.
 */
void twheel_fd_timer_free(struct twheel_fd *tf, struct twheel_fd_timer *ft)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_of(ft);

	if (rec) {
		kfree(rec->clk);
		kmem_cache_free(twheel_fd_rec_cache, rec);
	}
	kmem_cache_free(twheel_fd_timer_cache, ft);
	twheel_fd_uncharge(tf, 1);
}

/*
 * Waits until the core lets go of an object (a wheel of another CPU may
 * still link it, see the top of chardev.c). No id, no event, nobody may
 * arm it. @quiet: the caller told lockdep already (twheel_sync_annotate()).
 * May sleep.
 */
void twheel_fd_timer_quiesce(struct twheel_fd_timer *ft, bool quiet)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_of(ft);

	/* Unlinked first: then the clock's work cannot file it again. */
	if (ft->clock)
		twheel_clock_link_unlink(rec->clk);
	if (quiet)
		twheel_cancel_sync_quiet(&ft->timer);
	else
		twheel_cancel_sync(&ft->timer);
}

/* Frees an object for good, once the core let go of it. May sleep. */
void twheel_fd_timer_destroy(struct twheel_fd *tf, struct twheel_fd_timer *ft)
{
	twheel_fd_timer_quiesce(ft, false);
	twheel_fd_timer_free(tf, ft);
}

/*
 * Timers on CLOCK_REALTIME and CLOCK_BOOTTIME (clock.c), one-shot or
 * periodic (the period on their clock; clock.c files them for each
 * expiry), each have a struct twheel_clock_link of its own
 * (twheel_fd_rec::clk), taken from the links that twheel_fd_run_ops()
 * allocates before it takes tf->lock, one per SCHEDULE or MODIFY onto such
 * a clock, and freed when the object is recycled or destroyed or MODIFY
 * moves it back to CLOCK_MONOTONIC, so that a monotonic timer's object
 * stays as small as it was. The link (56 B, in 64 B of kmalloc), the
 * object (112 B), its record (80 B) and its slot (8 B) make 264 B, 8 more
 * than the TWHEEL_TIMER_COST unit the timer is counted as: the caps bound
 * such timers within 3%. Every arming of such a timer goes through the
 * link, and every cancel unlinks it before cancelling the core timer, so
 * that the clock-set work of clock.c cannot file it again.
 *
 * Drops the link of @ft, whose arming is over: (c) holds, or no callback
 * can use the link any more (it tests twheel_fd_timer::clock under
 * tf->lock, which the caller holds).
 */
void twheel_fd_clock_put(struct twheel_fd_timer *ft)
{
	lockdep_assert_held(&twheel_fd_of(ft)->lock);

	twheel_clock_link_unlink(ft->rec->clk);
	kfree(ft->rec->clk);
	ft->rec->clk = NULL;
	ft->clock = false;
}

void twheel_fd_links_free(struct list_head *links)
{
	struct twheel_clock_link *link, *tmp;

	list_for_each_entry_safe(link, tmp, links, node)
		kfree(link);
}

/*
 * Up to @n links for the SCHEDULE and MODIFY ops of a batch onto another
 * clock; the op that finds none left fails with -ENOMEM. May sleep.
 */
void twheel_fd_links_alloc(struct list_head *links, unsigned int n)
{
	struct twheel_clock_link *link;

	while (n--) {
		link = kmalloc(sizeof(*link), GFP_KERNEL_ACCOUNT);
		if (!link)
			break;
		list_add(&link->node, links);
	}
}

void twheel_fd_destroy_list(struct twheel_fd *tf, struct llist_head *doomed)
{
	struct twheel_fd_timer *ft, *tmp;

	llist_for_each_entry_safe(ft, tmp, __llist_del_all(doomed), free_node) {
		twheel_fd_timer_destroy(tf, ft);
		cond_resched();
	}
}

/*
 * Event records. The expiry of a one-shot timer on CLOCK_MONOTONIC takes
 * one from tf->recs or, with none there, from the slab without sleeping
 * (charged to nobody then: the TWHEEL_TIMER_COST of its timer covers it,
 * so the caps still bound them); the reader gives it back when it is done
 * with the event. SCHEDULE and MODIFY take one for a periodic timer or a
 * timer on another clock from tf->recs or from those the batch allocated
 * before it took tf->lock (struct twheel_fd_prealloc).
 */

/* A spare record from @pre or tf->recs, or NULL. */
struct twheel_fd_rec *twheel_fd_rec_take_locked(struct twheel_fd *tf,
						struct twheel_fd_prealloc *pre)
{
	struct list_head *from = &tf->recs;
	struct twheel_fd_rec *rec;

	lockdep_assert_held(&tf->lock);

	if (pre && !list_empty(&pre->recs)) {
		from = &pre->recs;
	} else {
		if (!tf->nrecs)
			return NULL;
		tf->nrecs--;
	}
	rec = list_first_entry(from, struct twheel_fd_rec, node);
	tw_list_del_init(&rec->node);
	return rec;
}

void twheel_fd_rec_attach(struct twheel_fd_timer *ft, struct twheel_fd_rec *rec)
{
	rec->ft = ft;
	rec->clk = NULL;
	rec->count = 0;
	rec->flags = 0;
	rec->clock = TW_CLK_MONO;
	ft->rec = rec;
}

/* A record from @pre or tf->recs, else from the slab without sleeping. */
struct twheel_fd_rec *twheel_fd_rec_get_locked(struct twheel_fd *tf,
					       struct twheel_fd_prealloc *pre)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_take_locked(tf, pre);

	return rec ?: kmem_cache_alloc(twheel_fd_rec_cache,
				       GFP_NOWAIT | __GFP_NOWARN);
}

/* Gives @rec back: to tf->recs, or to the slab if that is full. */
void twheel_fd_rec_put_locked(struct twheel_fd *tf, struct twheel_fd_rec *rec)
{
	lockdep_assert_held(&tf->lock);

	if (tf->nrecs < TWHEEL_FD_RECS_MAX) {
		tw_list_add(&rec->node, &tf->recs);
		tf->nrecs++;
	} else {
		kmem_cache_free(twheel_fd_rec_cache, rec);
	}
}

/*
 * Makes sure @ft has a record, as a periodic timer or one on another clock
 * must: 0, or -ENOMEM with none to be had.
 */
int twheel_fd_rec_need_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			      struct twheel_fd_prealloc *pre)
{
	struct twheel_fd_rec *rec;

	/* A starved timer's count is where its record would be. */
	if (WARN_ON_ONCE(ft->starved))
		return -EINVAL;
	if (ft->rec)
		return 0;
	rec = twheel_fd_rec_take_locked(tf, pre);
	if (!rec)
		return -ENOMEM;
	twheel_fd_rec_attach(ft, rec);
	return 0;
}

/*
 * A one-shot timer on CLOCK_MONOTONIC with no event to report needs no
 * record: give it back, so that a pending timer costs only its object.
 */
void twheel_fd_rec_trim_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_of(ft);

	lockdep_assert_held(&tf->lock);

	if (rec && !rec->count && ft->mode == TWHEEL_ONESHOT && !ft->clock &&
	    !ft->on_list && !ft->in_flight && !ft->parked) {
		ft->rec = NULL;
		twheel_fd_rec_put_locked(tf, rec);
	}
}

/* Up to @n records, as many as can be had. May sleep. */
void twheel_fd_recs_alloc(struct list_head *recs, unsigned int n)
{
	struct twheel_fd_rec *rec;

	while (n--) {
		rec = kmem_cache_alloc(twheel_fd_rec_cache, GFP_KERNEL_ACCOUNT);
		if (!rec)
			break;
		list_add(&rec->node, recs);
	}
}

void twheel_fd_recs_free(struct list_head *recs)
{
	struct twheel_fd_rec *rec, *tmp;

	list_for_each_entry_safe(rec, tmp, recs, node)
		kmem_cache_free(twheel_fd_rec_cache, rec);
}

/* The record of @uid in @ns, if there is one. */
static struct twheel_user *twheel_user_find(struct user_namespace *ns,
					    kuid_t uid)
{
	struct twheel_user *u;

	lockdep_assert_held(&twheel_users_lock);
	hash_for_each_possible(twheel_users, u, node, __kuid_val(uid)) {
		if (uid_eq(u->uid, uid) && u->ns == ns)
			return u;
	}
	return NULL;
}

static void twheel_user_free(struct twheel_user *u)
{
	if (u)
		free_percpu(u->precise_held);
	kfree(u);
}

/*
 * The accounting record of @uid in @ns, one more reference on it. The
 * lookup comes first: a record new to twheel_users gets its owners
 * (struct twheel_user::owner) and its per-CPU counts, which are got
 * outside the lock, before it is added: a record is in the table only
 * once it has its owner. Recursion as deep as the namespace (at most 33
 * levels).
 */
static struct twheel_user *twheel_user_get_ns(struct user_namespace *ns,
					      kuid_t uid)
{
	struct twheel_user *u, *fresh = NULL, *owner = NULL;

	spin_lock(&twheel_users_lock);
	u = twheel_user_find(ns, uid);
	if (u)
		goto found;
	spin_unlock(&twheel_users_lock);

	if (ns != &init_user_ns) {
		owner = twheel_user_get_ns(ns->parent, ns->owner);
		if (!owner)
			return NULL;
	}
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		goto err_put_owner;
	fresh->precise_held = alloc_percpu_gfp(unsigned int,
					       GFP_KERNEL_ACCOUNT);
	if (!fresh->precise_held)
		goto err_free_fresh;
	spin_lock(&twheel_users_lock);
	u = twheel_user_find(ns, uid);
	if (!u) {
		u = fresh;
		fresh = NULL;
		u->uid = uid;
		u->ns = get_user_ns(ns);
		u->owner = owner;
		owner = NULL;
		atomic_long_set(&u->units, 0);
		hash_add(twheel_users, &u->node, __kuid_val(uid));
	}
found:
	u->refs++;
	spin_unlock(&twheel_users_lock);
	twheel_user_free(fresh);
	if (owner)
		twheel_user_put(owner);
	return u;

err_free_fresh:
	kfree(fresh);
err_put_owner:
	if (owner)
		twheel_user_put(owner);
	return NULL;
}

/* The accounting record of the opener: its uid in its user namespace. */
struct twheel_user *twheel_user_get(void)
{
	return twheel_user_get_ns(current_user_ns(), current_uid());
}

/* A file of @u (or a user @u owns) is gone, with all its timers. */
void twheel_user_put(struct twheel_user *u)
{
	struct twheel_user *owner;
	bool last;
	int cpu;

	while (u) {
		spin_lock(&twheel_users_lock);
		last = !--u->refs;
		if (last)
			hash_del(&u->node);
		spin_unlock(&twheel_users_lock);
		if (!last)
			return;
		WARN_ON_ONCE(atomic_long_read(&u->units));
		/* Its files' timers left every heap before the files went. */
		for_each_possible_cpu(cpu)
			WARN_ON_ONCE(*per_cpu_ptr(u->precise_held, cpu));
		owner = u->owner;
		put_user_ns(u->ns);
		twheel_user_free(u);
		u = owner;
	}
}

/*
 * The per-CPU counts of precise entries that @u's files' timers count
 * against: those of its outermost owner, the user of the initial user
 * namespace that made the first namespace of the chain (@u itself in the
 * initial namespace). So every uid of a container, and every namespace a
 * user makes with unshare(CLONE_NEWUSER), shares that user's one share,
 * as they share its cap of timers; the counts of the users in between
 * stay 0.
 */
unsigned int __percpu *twheel_user_precise_held(const struct twheel_user *u)
{
	while (u->owner)
		u = u->owner;
	return u->precise_held;
}

/* The max_timers parameter, for a file being opened. */
unsigned int twheel_fd_max_timers(void)
{
	return READ_ONCE(max_timers);
}

/* The caps and their counts, for TWHEEL_IOC_INFO. */
void twheel_fd_caps_info(const struct twheel_fd *tf, struct twheel_info *info)
{
	info->user_timers = atomic_long_read(&tf->user->units);
	info->max_user_timers = READ_ONCE(max_user_timers);
	info->total_timers = atomic_long_read(&twheel_total_units);
	info->max_total_timers = READ_ONCE(max_total_timers);
}

/* The caps and their counts, for fdinfo. */
void twheel_fd_caps_show(struct seq_file *m, const struct twheel_fd *tf)
{
	unsigned int held = 0;
	int cpu;

	/* A sum of counts each CPU changes on its own: a snapshot. */
	for_each_possible_cpu(cpu)
		held += READ_ONCE(*per_cpu_ptr(tf->share.held, cpu));
	seq_printf(m, "twheel-user-precise:\t%u\n", held);
	seq_printf(m, "twheel-precise-per-user:\t%u%s\n",
		   READ_ONCE(tw_precise_per_user),
		   tf->cap_exempt ? " (exempt)" : "");
	seq_printf(m, "twheel-charged:\t%ld\n",
		   atomic_long_read(&tf->charged));
	seq_printf(m, "twheel-user-timers:\t%ld\n",
		   atomic_long_read(&tf->user->units));
	/* The nearest owner's count: a container's, all its uids together. */
	if (tf->user->owner)
		seq_printf(m, "twheel-owner-timers:\t%ld\n",
			   atomic_long_read(&tf->user->owner->units));
	seq_printf(m, "twheel-max-user-timers:\t%lu%s\n",
		   READ_ONCE(max_user_timers),
		   tf->cap_exempt ? " (exempt)" : "");
	seq_printf(m, "twheel-user-rings:\t%d\n",
		   atomic_read(&tf->user->rings));
	seq_printf(m, "twheel-max-user-rings:\t%u%s\n",
		   READ_ONCE(max_user_rings),
		   tf->cap_exempt ? " (exempt)" : "");
	seq_printf(m, "twheel-total-timers:\t%ld\n",
		   atomic_long_read(&twheel_total_units));
	seq_printf(m, "twheel-max-total-timers:\t%lu\n",
		   READ_ONCE(max_total_timers));
}

/*
 * The defaults of the caps (see max_user_timers and max_total_timers) and
 * the caches. Return: 0, or -ENOMEM (nothing is left created then).
 */
int twheel_fd_obj_init(void)
{
	unsigned long low = totalram_pages() - totalhigh_pages();

	if (!max_user_timers)
		max_user_timers = max(1UL, (low / 25) * (PAGE_SIZE / TWHEEL_TIMER_COST));
	if (!max_total_timers)
		max_total_timers = max(1UL, (low / 4) * (PAGE_SIZE / TWHEEL_TIMER_COST));

	twheel_fd_timer_cache = KMEM_CACHE(twheel_fd_timer, SLAB_ACCOUNT);
	if (!twheel_fd_timer_cache)
		return -ENOMEM;
	/* Apart from others, so that failslab can aim at it (tests). */
	twheel_fd_rec_cache = KMEM_CACHE(twheel_fd_rec,
					 SLAB_ACCOUNT | TWHEEL_SLAB_NO_MERGE);
	if (!twheel_fd_rec_cache)
		goto err_destroy_timer_cache;
	return 0;

err_destroy_timer_cache:
	kmem_cache_destroy(twheel_fd_timer_cache);
	return -ENOMEM;
}

/* No object is left: every file is closed. */
void twheel_fd_obj_exit(void)
{
	kmem_cache_destroy(twheel_fd_rec_cache);
	kmem_cache_destroy(twheel_fd_timer_cache);
}

