// SPDX-License-Identifier: GPL-2.0
/*
 * twheel: the module's entry point.
 *
 * The core (twheel.c and the files core.h lists, with wheel.c and
 * precise.c: the wheels and the exported API) comes up first and goes
 * down last; then the clock listener (clock.c: timers on
 * CLOCK_REALTIME and CLOCK_BOOTTIME); /dev/twheel (chardev.c) is one user of that API
 * and is registered only once the core can arm timers. Neither calls the
 * other's init or exit.
 */
#include <linux/init.h>
#include <linux/module.h>

#include "internal.h"

static int __init twheel_init(void)
{
	int ret;

	ret = twheel_core_init();
	if (ret)
		return ret;
	ret = twheel_clock_init();
	if (ret)
		goto err_core_exit;
	ret = twheel_chardev_init();
	if (ret)
		goto err_clock_exit;
	return 0;

err_clock_exit:
	twheel_clock_exit();
err_core_exit:
	twheel_core_exit();
	return ret;
}

static void __exit twheel_exit(void)
{
	/* No file is open (each pins the module): no fd timer is left. */
	twheel_chardev_exit();
	twheel_clock_exit();
	twheel_core_exit();
}

module_init(twheel_init);
module_exit(twheel_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Per-CPU hierarchical timing wheels driven by hrtimers");
MODULE_AUTHOR("The twheel developers");
MODULE_VERSION(TWHEEL_VERSION);
