/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_obj.c offers the rest of the chardev layer (fd.h lists
 * the layer's files): timer objects, their event records, the caps, and
 * recycling. Calls nothing above it.
 */
#ifndef _TWHEEL_FD_OBJ_H
#define _TWHEEL_FD_OBJ_H

#include <linux/cred.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "fd.h"

struct seq_file;
struct twheel_info;

/*
 * The unit of the caps: what one timer costs the kernel, rounded up (its
 * object and its slot). Every object counts one unit, whether it holds a
 * timer or waits on the spare list; a page of the slot table or of the
 * deadline array counts PAGE_SIZE / TWHEEL_TIMER_COST units.
 */
#define TWHEEL_TIMER_COST	256
#define TWHEEL_PAGE_UNITS	(PAGE_SIZE / TWHEEL_TIMER_COST)

extern struct kmem_cache *twheel_fd_timer_cache;
extern struct kmem_cache *twheel_fd_rec_cache;

int twheel_fd_obj_init(void);
void twheel_fd_obj_exit(void);

/* The caps */
unsigned int twheel_fd_max_timers(void);
struct twheel_user *twheel_user_get(void);
void twheel_user_put(struct twheel_user *u);
unsigned int __percpu *twheel_user_precise_held(const struct twheel_user *u);
int twheel_fd_charge(struct twheel_fd *tf, unsigned long n);
void twheel_fd_uncharge(struct twheel_fd *tf, unsigned long n);
int twheel_fd_charge_ring(struct twheel_fd *tf);
void twheel_fd_uncharge_ring(struct twheel_fd *tf);
void twheel_fd_caps_info(const struct twheel_fd *tf, struct twheel_info *info);
void twheel_fd_caps_show(struct seq_file *m, const struct twheel_fd *tf);

/* Objects, their links and their freeing */
void twheel_fd_timer_free(struct twheel_fd *tf, struct twheel_fd_timer *ft);
void twheel_fd_timer_quiesce(struct twheel_fd_timer *ft, bool quiet);
void twheel_fd_timer_destroy(struct twheel_fd *tf, struct twheel_fd_timer *ft);
void twheel_fd_clock_put(struct twheel_fd_timer *ft);
void twheel_fd_links_free(struct list_head *links);
void twheel_fd_links_alloc(struct list_head *links, unsigned int n);
void twheel_fd_destroy_list(struct twheel_fd *tf, struct llist_head *doomed);

/* Event records */
struct twheel_fd_prealloc;
struct twheel_fd_rec *twheel_fd_rec_take_locked(struct twheel_fd *tf,
						struct twheel_fd_prealloc *pre);
void twheel_fd_rec_attach(struct twheel_fd_timer *ft, struct twheel_fd_rec *rec);
struct twheel_fd_rec *twheel_fd_rec_get_locked(struct twheel_fd *tf,
					       struct twheel_fd_prealloc *pre);
void twheel_fd_rec_put_locked(struct twheel_fd *tf, struct twheel_fd_rec *rec);
int twheel_fd_rec_need_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			      struct twheel_fd_prealloc *pre);
void twheel_fd_rec_trim_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft);
void twheel_fd_recs_alloc(struct list_head *recs, unsigned int n);
void twheel_fd_recs_free(struct list_head *recs);

/* At most this many spare records per file (5 KiB). */
#define TWHEEL_FD_RECS_MAX	64

/*
 * What the ops of a batch may need beyond the objects, allocated while they
 * may still sleep: clock links for the ops onto another clock, and records
 * for those and for the periodic ones. NULL for the single ioctls under
 * tf->lock alone, which take records from tf->recs only.
 */
struct twheel_fd_prealloc {
	struct list_head	links;
	struct list_head	recs;
};

/*
 * An object that may be recycled ((a), (b) and (c) at the top of
 * chardev.c) goes back to the spare list, or to @doomed if that is full,
 * for twheel_fd_destroy_list() once tf->lock is dropped; with no @doomed
 * (an object that was never armed) to the spare list whatever its length.
 * Its record goes back too.
 */
static __always_inline void
twheel_fd_recycle_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			 struct llist_head *doomed)
{
	struct twheel_fd_rec *rec = twheel_fd_rec_of(ft);

	lockdep_assert_held(&tf->lock);

	if (unlikely(ft->clock))
		twheel_fd_clock_put(ft);
	if (rec)
		twheel_fd_rec_put_locked(tf, rec);
	ft->rec = NULL;
	ft->starved = false;
	if (tf->nspare < TWHEEL_FD_SPARE_MAX || !doomed) {
		__llist_add(&ft->free_node, &tf->spare);
		WRITE_ONCE(tf->nspare, tf->nspare + 1);
	} else {
		__llist_add(&ft->free_node, doomed);
	}
}

#endif /* _TWHEEL_FD_OBJ_H */
