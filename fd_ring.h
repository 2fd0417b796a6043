/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_ring.c offers chardev.c (fd.h lists the chardev layer's
 * files): the submission ring. Calls fd_obj.c and fd_ops.c only.
 */
#ifndef _TWHEEL_FD_RING_H
#define _TWHEEL_FD_RING_H

#include "fd.h"

struct seq_file;
struct vm_area_struct;

int twheel_fd_ring_mmap(struct file *file, struct vm_area_struct *vma);
int twheel_fd_ring_enter(struct twheel_fd *tf);
bool twheel_fd_ring_busy(struct twheel_fd *tf);
void twheel_fd_ring_destroy(struct twheel_fd *tf);
void twheel_fd_ring_show(struct seq_file *m, struct twheel_fd *tf);
long twheel_fd_ioc_ring_state(struct twheel_fd *tf,
			      struct twheel_ring_state __user *us);

#endif /* _TWHEEL_FD_RING_H */
