/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what fd_ops.c offers chardev.c (fd.h lists the chardev layer's
 * files): the operations on timers, single and batched. Calls fd_obj.c,
 * fd_map.h and fd_event.c only.
 */
#ifndef _TWHEEL_FD_OPS_H
#define _TWHEEL_FD_OPS_H

#include <linux/ktime.h>

#include "fd.h"
#include "uapi/twheel.h"

unsigned int twheel_fd_run_ops(struct twheel_fd *tf, struct twheel_op *ops,
			       unsigned int count, ktime_t *now);
long twheel_fd_ioc_schedule(struct twheel_fd *tf,
			    struct twheel_timer_spec __user *uspec);
long twheel_fd_ioc_modify(struct twheel_fd *tf,
			  const struct twheel_timer_spec __user *uspec);
long twheel_fd_ioc_cancel(struct twheel_fd *tf,
			  const struct twheel_cancel __user *uc);

struct twheel_fd_prealloc;
int twheel_fd_restore_prepare(struct twheel_fd *tf,
			      const struct twheel_timer_state *st,
			      struct twheel_fd_prealloc *pre);
int twheel_fd_restore_timer(struct twheel_fd *tf,
			    const struct twheel_timer_state *st,
			    struct twheel_fd_prealloc *pre);

#endif /* _TWHEEL_FD_OPS_H */
