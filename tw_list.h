/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: list_add(), list_add_tail() and list_del_init() for the hot
 * paths (arming, cancelling, an ioctl's operations), with the checks of
 * CONFIG_LIST_HARDENED made inline. Debian's kernels also set
 * CONFIG_DEBUG_LIST, which turns every list_add()/list_del() into a call out
 * of line, dearer than the whole operation under emulation. Here a sound
 * list costs no call, and a corrupted one is still handed to the kernel's
 * own list code, which reports it: the same protection, not less.
 */
#ifndef _TWHEEL_TW_LIST_H
#define _TWHEEL_TW_LIST_H

#include <linux/compiler.h>
#include <linux/list.h>

static __always_inline void tw_list_add(struct list_head *new,
					struct list_head *head)
{
	struct list_head *next = head->next;

	if (unlikely(next->prev != head || new == head || new == next)) {
		list_add(new, head);		/* reports the corruption */
		return;
	}
	next->prev = new;
	new->next = next;
	new->prev = head;
	WRITE_ONCE(head->next, new);
}

static __always_inline void tw_list_add_tail(struct list_head *new,
					     struct list_head *head)
{
	struct list_head *prev = head->prev;

	if (unlikely(prev->next != head || new == prev || new == head)) {
		list_add_tail(new, head);	/* reports the corruption */
		return;
	}
	new->next = head;
	new->prev = prev;
	WRITE_ONCE(prev->next, new);
	head->prev = new;
}

static __always_inline void tw_list_del_init(struct list_head *entry)
{
	struct list_head *prev = entry->prev, *next = entry->next;

	if (unlikely(prev->next != entry || next->prev != entry)) {
		list_del_init(entry);		/* reports the corruption */
		return;
	}
	next->prev = prev;
	WRITE_ONCE(prev->next, next);
	INIT_LIST_HEAD(entry);
}

#endif /* _TWHEEL_TW_LIST_H */
