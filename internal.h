/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: declarations shared between the module's own files.
 */
#ifndef _TWHEEL_INTERNAL_H
#define _TWHEEL_INTERNAL_H

#include <linux/types.h>

/* twheel.c: the core, brought up and down by main.c */
int twheel_core_init(void);
void twheel_core_exit(void);

/* chardev.c: /dev/twheel, registered by main.c once the core is up */
int twheel_chardev_init(void);
void twheel_chardev_exit(void);

/* twheel.c, for the KUnit tests only: kick IPIs @cpu received so far. */
u64 twheel_kicks(int cpu);
/* twheel.c, for the KUnit tests only: expiries parked, all CPUs. */
u64 twheel_parks(void);

#endif /* _TWHEEL_INTERNAL_H */
