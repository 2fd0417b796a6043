/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_cr.c offers chardev.c (fd.h lists the chardev layer's
 * files): checkpoint and restore. Calls fd_obj.c, fd_ops.c and fd_ring.c.
 */
#ifndef _TWHEEL_FD_CR_H
#define _TWHEEL_FD_CR_H

#include "fd.h"

long twheel_fd_ioc_dump(struct twheel_fd *tf, struct twheel_dump __user *ud);
long twheel_fd_ioc_restore(struct twheel_fd *tf,
			   const struct twheel_restore __user *ur);

#endif /* _TWHEEL_FD_CR_H */
