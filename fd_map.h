/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_map.c offers the rest of the chardev layer (fd.h lists
 * the layer's files): the deadline array that mmap() shares with the
 * program. Calls fd_obj.c only.
 */
#ifndef _TWHEEL_FD_MAP_H
#define _TWHEEL_FD_MAP_H

#include <linux/compiler.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>

#include "fd.h"

struct vm_area_struct;

int twheel_fd_mmap(struct file *file, struct vm_area_struct *vma);
void twheel_fd_map_destroy(struct twheel_fd *tf);

/* The slot of @ft in the mapped deadline array, if there is one. */
static inline u64 *twheel_fd_deadline_slot(u64 *deadlines,
					   const struct twheel_fd_timer *ft)
{
	return deadlines ? &deadlines[TWHEEL_FD_ID_SLOT(ft->id)] : NULL;
}

/*
 * Every arming stores its deadline (on @clock, TW_CLK_*, as the file's time
 * namespace sees it) in the mapped array, so that the slot holds the
 * timer's own deadline, never one the slot's previous timer left, and the
 * program can read it. Under tf->lock. An array created meanwhile (mmap(),
 * under ctl_mutex) starts zeroed, and 0 moves no timer.
 */
static __always_inline void
twheel_fd_publish_deadline(struct twheel_fd *tf,
			   const struct twheel_fd_timer *ft, int clock,
			   ktime_t deadline)
{
	u64 *slot;

	lockdep_assert_held(&tf->lock);

	/* Pairs with smp_store_release() in twheel_fd_map_create(). */
	slot = twheel_fd_deadline_slot(smp_load_acquire(&tf->deadlines), ft);
	if (slot)
		WRITE_ONCE(*slot, twheel_fd_from_host(tf, clock, deadline));
}

#endif /* _TWHEEL_FD_MAP_H */
