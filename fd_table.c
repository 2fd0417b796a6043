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
 * twheel_fd_table_grow_alloc - allocate what the next chunk of slots needs
 * @t: the table; only the caller grows it (the caller's serialisation),
 *	others may insert, look up and remove meanwhile
 * @g: filled with the new chunk, its free list already linked, and, when
 *	the directory is full, a directory twice as big holding the current
 *	chunks (they never move, so copying them without the caller's lock
 *	is fine)
 *
 * Nothing of @t changes: twheel_fd_table_grow_commit() adds the chunk.
 *
 * Context: process context; may sleep. Memory is charged to the caller's
 * memory cgroup.
 * Return: 0; -ENOSPC if the table has @max_slots slots already, -ENOMEM.
 */
int twheel_fd_table_grow_alloc(struct twheel_fd_table *t,
			       struct twheel_fd_table_growth *g)
{
	u32 i, first = t->nslots, n;

	memset(g, 0, sizeof(*g));
	if (t->nslots >= t->max_slots)
		return -ENOSPC;
	n = min_t(u32, TWHEEL_FD_CHUNK_SLOTS, t->max_slots - t->nslots);

	if (t->nchunks == t->dir_size) {
		g->dir_size = max(8u, t->dir_size * 2);
		g->dir = kvcalloc(g->dir_size, sizeof(*g->dir),
				  GFP_KERNEL_ACCOUNT);
		if (!g->dir)
			return -ENOMEM;
		if (t->nchunks)
			memcpy(g->dir, t->chunks, t->nchunks * sizeof(*g->dir));
	}
	g->chunk = kcalloc(TWHEEL_FD_CHUNK_SLOTS, sizeof(*g->chunk),
			   GFP_KERNEL_ACCOUNT);
	if (!g->chunk) {
		kvfree(g->dir);
		g->dir = NULL;
		return -ENOMEM;
	}
	/* Lowest first, generation 0; the last one's successor is set by the commit. */
	for (i = 0; i < n; i++)
		g->chunk[i].w = TWHEEL_FD_FREE_WORD(0, i + 1 < n ? first + i + 2 : 0);
	g->nslots = n;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_grow_alloc);

/**
 * twheel_fd_table_grow_commit - add the chunk twheel_fd_table_grow_alloc() made
 * @t: the table, not grown since
 * @g: what twheel_fd_table_grow_alloc() filled in
 *
 * Constant time: the caller may hold the lock that its lookups take.
 *
 * Context: any context; frees nothing.
 * Return: the directory that was replaced, for the caller to kvfree() once
 * no lookup can be using it (NULL if none was).
 */
struct twheel_fd_slot **
twheel_fd_table_grow_commit(struct twheel_fd_table *t,
			    struct twheel_fd_table_growth *g)
{
	struct twheel_fd_slot **old = NULL;
	u32 first = t->nslots;

	if (g->dir) {
		old = t->chunks;
		t->chunks = g->dir;
		t->dir_size = g->dir_size;
	}
	t->chunks[t->nchunks++] = g->chunk;
	WRITE_ONCE(t->nslots, t->nslots + g->nslots);	/* fdinfo reads it */
	g->chunk[g->nslots - 1].w = TWHEEL_FD_FREE_WORD(0, t->free_head);
	t->free_head = first + 1;
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_grow_commit);

/**
 * twheel_fd_table_grow - add a chunk of free slots
 * @t: the table
 *
 * twheel_fd_table_grow_alloc() and twheel_fd_table_grow_commit() in one,
 * for a caller that serialises every use of @t.
 *
 * Context: process context; may sleep. Memory is charged to the caller's
 * memory cgroup.
 * Return: 0; -ENOSPC if the table has @max_slots slots already, -ENOMEM.
 */
int twheel_fd_table_grow(struct twheel_fd_table *t)
{
	struct twheel_fd_table_growth g;
	int ret;

	ret = twheel_fd_table_grow_alloc(t, &g);
	if (!ret)
		kvfree(twheel_fd_table_grow_commit(t, &g));
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_grow);

/* The free slot of @id, or NULL (-EINVAL, -EEXIST in *@err). */
static struct twheel_fd_slot *
twheel_fd_table_free_slot(struct twheel_fd_table *t, u64 id, int *err)
{
	u32 slot = TWHEEL_FD_ID_SLOT(id);
	struct twheel_fd_slot *s;

	*err = -EINVAL;
	if (!lower_32_bits(id) || slot >= t->nslots)
		return NULL;
	s = twheel_fd_slot(t, slot);
	*err = -EEXIST;
	return s->w & 1 ? s : NULL;
}

/**
 * twheel_fd_table_insert_at - make an id live again, where a dump found it
 * @t: the table, grown to hold the id's slot
 * @idp: where the object keeps its id, which names the slot and generation
 *
 * Leaves the free list stale: no twheel_fd_table_insert() until
 * twheel_fd_table_relink().
 *
 * Context: the table's lock.
 * Return: 0; -EINVAL for an id whose slot the table does not have, -EEXIST
 * if that slot holds an id.
 */
int twheel_fd_table_insert_at(struct twheel_fd_table *t, u64 *idp)
{
	struct twheel_fd_slot *s;
	int err;

	s = twheel_fd_table_free_slot(t, *idp, &err);
	if (!s)
		return err;
	s->w = (unsigned long)idp;
	WRITE_ONCE(t->used, t->used + 1);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_insert_at);

/**
 * twheel_fd_table_set_free - give a free slot the generation a dump found
 * @t: the table, grown to hold the id's slot
 * @id: the id the slot's next timer gets
 *
 * Leaves the free list stale, as twheel_fd_table_insert_at() does.
 *
 * Context: the table's lock.
 * Return: as twheel_fd_table_insert_at().
 */
int twheel_fd_table_set_free(struct twheel_fd_table *t, u64 id)
{
	struct twheel_fd_slot *s;
	int err;

	s = twheel_fd_table_free_slot(t, id, &err);
	if (!s)
		return err;
	s->w = TWHEEL_FD_FREE_WORD(TWHEEL_FD_ID_GEN(id), 0);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_set_free);

/**
 * twheel_fd_table_relink - link every free slot again, lowest first
 * @t: the table
 *
 * One pass over the slots, after twheel_fd_table_insert_at() and
 * twheel_fd_table_set_free(): as many steps as the table has slots, at
 * most its max_slots.
 *
 * Context: the table's lock.
 */
void twheel_fd_table_relink(struct twheel_fd_table *t)
{
	struct twheel_fd_slot *s;
	u32 i = t->nslots;

	t->free_head = 0;
	while (i--) {
		s = twheel_fd_slot(t, i);
		if (!(s->w & 1))
			continue;
		s->w = TWHEEL_FD_FREE_WORD(TWHEEL_FD_FREE_GEN(s->w),
					   t->free_head);
		t->free_head = i + 1;
	}
}
EXPORT_SYMBOL_IF_KUNIT(twheel_fd_table_relink);
