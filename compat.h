/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what differs between the kernels twheel builds for (6.1 LTS and
 * 6.12, with or without PREEMPT_RT). Each shim names the kernel that
 * changed the interface; the code calls the shim, never the version.
 */
#ifndef _TWHEEL_COMPAT_H
#define _TWHEEL_COMPAT_H

#include <linux/eventfd.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>

/*
 * 6.8 dropped eventfd_signal()'s count argument (it was always 1 but in
 * one driver); before, it took the value to add.
 */
static inline void twheel_eventfd_signal(struct eventfd_ctx *ctx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/*
 * 6.3 made vma->vm_flags read-only outside mm and added vm_flags_set();
 * before, drivers set the bits directly (under mmap_lock, held in ->mmap).
 */
static inline void twheel_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * 6.5 added SLAB_NO_MERGE; before, a cache of the same size and flags
 * could share another's slabs, and with them its failslab setting.
 */
#ifdef SLAB_NO_MERGE
#define TWHEEL_SLAB_NO_MERGE	SLAB_NO_MERGE
#else
#define TWHEEL_SLAB_NO_MERGE	0
#endif

#endif /* _TWHEEL_COMPAT_H */
