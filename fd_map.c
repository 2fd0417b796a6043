// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the deadline array of /dev/twheel, which mmap() shares with the
 * program: its pages, created by the first mmap() and freed at release,
 * and the mapping. The kernel's stores and loads of its slots are
 * fd_map.h's twheel_fd_publish_deadline() (every arming) and
 * twheel_fd_extend_locked() in fd_event.c (every expiry of a one-shot
 * timer). In the chardev layer (fd.h lists its files) it calls fd_obj.c
 * only, for the charge of the pages.
 */

#include <linux/compiler.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "fd.h"
#include "fd_map.h"
#include "fd_obj.h"

/*
 * The deadline array of mmap(): one u64 per slot, for every slot the file
 * may ever have (max_timers), in pages charged to the caller's memory
 * cgroup and counted against the caps, mapped contiguously for the kernel.
 * Created by the first mmap(), freed at release.
 */
static int twheel_fd_map_create(struct twheel_fd *tf)
{
	unsigned int n = DIV_ROUND_UP((size_t)tf->max_timers * sizeof(u64),
				      PAGE_SIZE);
	struct page **pages;
	unsigned int i;
	u64 *map;
	int ret;

	lockdep_assert_held(&tf->ctl_mutex);

	ret = twheel_fd_charge(tf, (unsigned long)n * TWHEEL_PAGE_UNITS);
	if (ret)
		return ret;
	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i]) {
			ret = -ENOMEM;
			goto err_free_pages;
		}
	}
	map = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!map) {
		ret = -ENOMEM;
		goto err_free_pages;
	}
	tf->dl_pages = pages;
	tf->dl_npages = n;
	/*
	 * Pairs with smp_load_acquire() in twheel_fd_extend_locked() and
	 * twheel_fd_publish_deadline().
	 */
	smp_store_release(&tf->deadlines, map);
	return 0;

err_free_pages:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
err_uncharge:
	twheel_fd_uncharge(tf, (unsigned long)n * TWHEEL_PAGE_UNITS);
	return ret;
}

/*
 * mmap() of the deadline array: MAP_SHARED, offset 0, exactly the array's
 * size (max_timers u64s rounded up to pages); read-only mappings are
 * fine. Every mapping of the file maps the same pages.
 */
int twheel_fd_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct twheel_fd *tf = file->private_data;
	size_t size = PAGE_ALIGN((size_t)tf->max_timers * sizeof(u64));
	unsigned long npages;
	int ret;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != size)
		return -EINVAL;
	/* A private mapping would write to copies the kernel never reads. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&tf->ctl_mutex);
	if (!tf->deadlines) {
		ret = twheel_fd_map_create(tf);
		if (ret)
			goto out_unlock;
	}
	twheel_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	npages = tf->dl_npages;
	ret = vm_insert_pages(vma, vma->vm_start, tf->dl_pages, &npages);
out_unlock:
	mutex_unlock(&tf->ctl_mutex);
	return ret;
}

/*
 * At release, once nothing can use the array any more: frees it, if there
 * is one. Its charge goes with the file's (twheel_fd_uncharge()).
 */
void twheel_fd_map_destroy(struct twheel_fd *tf)
{
	unsigned int i;

	if (tf->deadlines) {
		vunmap(tf->deadlines);
		for (i = 0; i < tf->dl_npages; i++)
			__free_page(tf->dl_pages[i]);
		kvfree(tf->dl_pages);
	}
}

