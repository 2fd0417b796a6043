/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_event.c offers the rest of the chardev layer (fd.h lists
 * the layer's files): the expiry callback, parking and starving, read()
 * and poll(). Calls fd_obj.c and fd_map.h only.
 */
#ifndef _TWHEEL_FD_EVENT_H
#define _TWHEEL_FD_EVENT_H

#include <linux/fs.h>
#include <linux/poll.h>

#include "fd.h"

struct twheel_fd_prealloc;

void twheel_fd_queue_tail_locked(struct twheel_fd *tf,
				 struct twheel_fd_timer *ft);
void twheel_fd_end_parking_locked(struct twheel_fd_timer *ft);
int twheel_fd_unstarve_locked(struct twheel_fd *tf, struct twheel_fd_timer *ft,
			      struct twheel_fd_prealloc *pre);
void twheel_fd_expire(struct twheel_timer *timer, u64 missed);
ssize_t twheel_fd_read(struct file *file, char __user *buf, size_t count,
		       loff_t *ppos);
__poll_t twheel_fd_poll(struct file *file, poll_table *wait);

/*
 * MODIFY or CANCEL of a parked timer: count the periods that passed, as
 * read() would, and end the parking. Return: whether it was parked.
 */
static __always_inline bool twheel_fd_unpark_locked(struct twheel_fd_timer *ft)
{
	if (!ft->parked)
		return false;
	twheel_fd_end_parking_locked(ft);
	return true;
}

#endif /* _TWHEEL_FD_EVENT_H */
