/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: the slot table of one open /dev/twheel (fd_table.c).
 *
 * A timer's id names a slot of its file's table and the generation the slot
 * had when the timer took it:
 *
 *   id = generation << 32 | (slot + 1)
 *
 * so an id is never 0, the low 32 bits minus one are the slot (the index of
 * the timer's entry in the deadline array of mmap()), and an id whose slot
 * has since been released, and perhaps taken again, no longer matches: a
 * stale id gets ENOENT until the slot's generation has gone round all
 * 2^32 values.
 *
 * Slots are handed out from a free list, most recently released first, and
 * the table grows one chunk (a page of slots) at a time up to its cap. It
 * never shrinks while the file is open: the caller counts every chunk
 * against the memory caps (fd_obj.c).
 *
 * Locking: the caller serialises every call, none of which sleeps but
 * twheel_fd_table_grow() and twheel_fd_table_grow_alloc(). The chardev
 * makes every change under tf->lock, and grows the table in two steps:
 * the allocation under tf->ctl_mutex alone (only one grower at a time),
 * the constant-time commit under tf->lock too, so that the lookups and
 * changes of the single ioctls, which take tf->lock alone, never see a
 * table half grown.
 */
#ifndef _TWHEEL_FD_TABLE_H
#define _TWHEEL_FD_TABLE_H

#include <linux/kernel.h>
#include <linux/types.h>
#include <asm/page.h>

/**
 * struct twheel_fd_slot - one slot, one word
 * @w: while the slot is taken, the address of its object's id (a u64 the
 *	table writes at insert time, and that the object keeps while it
 *	holds the slot): an 8-aligned pointer, bit 0 clear. While the slot is
 *	free: TWHEEL_FD_FREE_WORD(generation, next free slot plus one, 0 at
 *	the end), bit 0 set. A taken slot's generation is that of its id.
 *
 * Eight bytes a slot, not sixteen: a pending timer costs its object and
 * one word of the table.
 */
struct twheel_fd_slot {
	u64	w;
};

#define TWHEEL_FD_FREE_WORD(gen, next)	((u64)(gen) << 32 | (u64)(next) << 1 | 1)
#define TWHEEL_FD_FREE_GEN(w)		((u32)((w) >> 32))
#define TWHEEL_FD_FREE_NEXT(w)		((u32)(w) >> 1)

#define TWHEEL_FD_CHUNK_SLOTS	(PAGE_SIZE / sizeof(struct twheel_fd_slot))

/**
 * struct twheel_fd_table - the slots of one file
 * @chunks: @nchunks chunks of TWHEEL_FD_CHUNK_SLOTS slots each
 * @nchunks: chunks allocated
 * @dir_size: entries @chunks has room for
 * @nslots: slots that exist: at most @max_slots
 * @max_slots: the cap, set at init
 * @free_head: the first free slot plus one, 0 if none is free
 * @used: slots taken; read locklessly (READ_ONCE()) by a grower, as an
 *	estimate
 */
struct twheel_fd_table {
	struct twheel_fd_slot	**chunks;
	u32			nchunks;
	u32			dir_size;
	u32			nslots;
	u32			max_slots;
	u32			free_head;
	u32			used;
};

/**
 * struct twheel_fd_table_growth - a chunk of slots not yet in the table
 * @chunk: the new slots, their free list linked but for the last one
 * @nslots: how many of them the table takes
 * @dir: a bigger directory with the current chunks, or NULL if the
 *	current one has room
 * @dir_size: entries @dir has room for
 */
struct twheel_fd_table_growth {
	struct twheel_fd_slot	*chunk;
	u32			nslots;
	struct twheel_fd_slot	**dir;
	u32			dir_size;
};

#define TWHEEL_FD_ID_SLOT(id)	(lower_32_bits(id) - 1)
#define TWHEEL_FD_ID_GEN(id)	((u32)((id) >> 32))

void twheel_fd_table_init(struct twheel_fd_table *t, u32 max_slots);
void twheel_fd_table_destroy(struct twheel_fd_table *t);
int twheel_fd_table_grow(struct twheel_fd_table *t);
int twheel_fd_table_grow_alloc(struct twheel_fd_table *t,
			       struct twheel_fd_table_growth *g);
struct twheel_fd_slot **
twheel_fd_table_grow_commit(struct twheel_fd_table *t,
			    struct twheel_fd_table_growth *g);

/* How many free slots there are. */
static inline u32 twheel_fd_table_nfree(const struct twheel_fd_table *t)
{
	return t->nslots - t->used;
}

/* Free slots ready for twheel_fd_table_insert()? */
static inline bool twheel_fd_table_has_free(const struct twheel_fd_table *t)
{
	return t->free_head;
}

/*
 * What every operation of an ioctl does, inline: under emulation a call
 * and its return thunk cost as much as the work.
 */

static inline struct twheel_fd_slot *
twheel_fd_slot(const struct twheel_fd_table *t, u32 slot)
{
	return &t->chunks[slot / TWHEEL_FD_CHUNK_SLOTS]
			 [slot % TWHEEL_FD_CHUNK_SLOTS];
}

/**
 * twheel_fd_table_insert - take a free slot for an object
 * @t: the table, with a free slot (twheel_fd_table_has_free())
 * @idp: the object's id, which this sets and the object must keep, as is,
 *	while it holds the slot: lookups compare it with the id they are
 *	given
 *
 * Context: any context.
 * Return: the new id.
 */
static inline u64 twheel_fd_table_insert(struct twheel_fd_table *t, u64 *idp)
{
	u32 slot = t->free_head - 1;
	struct twheel_fd_slot *s = twheel_fd_slot(t, slot);
	u64 id = (u64)TWHEEL_FD_FREE_GEN(s->w) << 32 | (slot + 1);

	t->free_head = TWHEEL_FD_FREE_NEXT(s->w);
	*idp = id;
	s->w = (unsigned long)idp;
	WRITE_ONCE(t->used, t->used + 1);	/* read locklessly by growers */
	return id;
}

/**
 * twheel_fd_table_lookup - the object of a live id
 * @t: the table
 * @id: any value
 *
 * Context: any context.
 * Return: the id field of the object (as given to twheel_fd_table_insert()),
 * or NULL if @id names no slot, a free one, or one taken again since
 * (another generation).
 */
static inline u64 *twheel_fd_table_lookup(const struct twheel_fd_table *t,
					  u64 id)
{
	u32 slot = TWHEEL_FD_ID_SLOT(id);
	u64 w, *idp;

	if (!lower_32_bits(id) || slot >= t->nslots)
		return NULL;
	w = twheel_fd_slot(t, slot)->w;
	if (w & 1)
		return NULL;
	idp = (u64 *)(unsigned long)w;
	return *idp == id ? idp : NULL;
}

/**
 * twheel_fd_table_slot_obj - the object in a slot, whatever its generation
 * @t: the table
 * @slot: below @t->nslots
 *
 * Context: any context.
 * Return: the id field of the object, NULL if the slot is free.
 */
static inline u64 *twheel_fd_table_slot_obj(const struct twheel_fd_table *t,
					    u32 slot)
{
	u64 w = twheel_fd_slot(t, slot)->w;

	return w & 1 ? NULL : (u64 *)(unsigned long)w;
}

/**
 * twheel_fd_table_remove - release the slot of a live id
 * @t: the table
 * @id: an id twheel_fd_table_lookup() finds
 *
 * The slot's generation moves on (wrapping after 2^32 releases), so @id and
 * every earlier id of the slot stop matching, and the slot goes to the head
 * of the free list.
 *
 * Context: any context.
 */
static inline void twheel_fd_table_remove(struct twheel_fd_table *t, u64 id)
{
	u32 slot = TWHEEL_FD_ID_SLOT(id);

	twheel_fd_slot(t, slot)->w =
		TWHEEL_FD_FREE_WORD(TWHEEL_FD_ID_GEN(id) + 1, t->free_head);
	t->free_head = slot + 1;
	WRITE_ONCE(t->used, t->used - 1);
}

/* Restoring a dump (fd_cr.c): ids put back where they were. */
int twheel_fd_table_insert_at(struct twheel_fd_table *t, u64 *idp);
int twheel_fd_table_set_free(struct twheel_fd_table *t, u64 id);
void twheel_fd_table_relink(struct twheel_fd_table *t);

#endif /* _TWHEEL_FD_TABLE_H */
