/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: declarations shared between the module's own files.
 */
#ifndef _TWHEEL_INTERNAL_H
#define _TWHEEL_INTERNAL_H

#include <linux/types.h>

/* chardev.c: /dev/twheel */
int twheel_chardev_init(void);
void twheel_chardev_exit(void);

/* twheel.c, for the KUnit tests only: kick IPIs @cpu received so far. */
u64 twheel_kicks(int cpu);
/* twheel.c, for the KUnit tests only: expiries parked, all CPUs. */
u64 twheel_parks(void);

#endif /* _TWHEEL_INTERNAL_H */
