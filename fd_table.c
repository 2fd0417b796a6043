// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the slot table of one open /dev/twheel. See fd_table.h.
 */

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "fd_table.h"

/**
 * twheel_fd_table_init - an empty table
 * @t: the table
 * @max_slots: the most slots it may ever have, at least 1
 *
 * Context: any context; allocates nothing.
 */
void twheel_fd_table_init(struct twheel_fd_table *t, u32 max_slots)
{
	memset(t, 0, sizeof(*t));
	t->max_slots = max_slots;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_init);

/**
 * twheel_fd_table_destroy - free the table's memory
 * @t: the table; the objects its slots name are the caller's to free
 *
 * Context: process context.
 */
void twheel_fd_table_destroy(struct twheel_fd_table *t)
{
	u32 i;

	for (i = 0; i < t->nchunks; i++)
		kfree(t->chunks[i]);
	kvfree(t->chunks);
	t->chunks = NULL;
	t->nchunks = 0;
	t->nslots = 0;
	t->free_head = 0;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_destroy);

/**
 * twheel_fd_table_grow - add a chunk of free slots
 * @t: the table
 *
 * Context: process context; may sleep. Memory is charged to the caller's
 * memory cgroup.
 * Return: 0; -ENOSPC if the table has @max_slots slots already, -ENOMEM.
 */
int twheel_fd_table_grow(struct twheel_fd_table *t)
{
	struct twheel_fd_slot *chunk, **dir;
	u32 i, first = t->nslots, n;

	if (t->nslots >= t->max_slots)
		return -ENOSPC;
	n = min_t(u32, TWHEEL_FD_CHUNK_SLOTS, t->max_slots - t->nslots);

	if (t->nchunks == t->dir_size) {
		u32 size = max(8u, t->dir_size * 2);

		dir = kvcalloc(size, sizeof(*dir), GFP_KERNEL_ACCOUNT);
		if (!dir)
			return -ENOMEM;
		if (t->nchunks)
			memcpy(dir, t->chunks, t->nchunks * sizeof(*dir));
		kvfree(t->chunks);
		t->chunks = dir;
		t->dir_size = size;
	}
	chunk = kcalloc(TWHEEL_FD_CHUNK_SLOTS, sizeof(*chunk),
			GFP_KERNEL_ACCOUNT);
	if (!chunk)
		return -ENOMEM;
	t->chunks[t->nchunks++] = chunk;
	t->nslots += n;

	/* Lowest first on the free list (empty when we are called to grow). */
	for (i = n; i-- > 0; ) {
		chunk[i].next_free = t->free_head;
		t->free_head = first + i + 1;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_grow);
