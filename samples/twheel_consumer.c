// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_consumer: a small in-kernel user of twheel's exported API.
 *
 * On load it arms a one-shot timer, a fixed-rate periodic timer that stops
 * itself from its callback after a few expiries, and a timer whose callback
 * sleeps (process context), all in one group; it waits for them, checks
 * that none fired early, and logs "twheel_consumer: ok". Unload shuts the
 * group down. Loaded by `make check` and shown by `make demo`.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/module.h>

#include "../twheel.h"

#define PERIODIC_RUNS	5

/*
 * A one-shot is a plain 64-byte struct twheel_timer; a periodic timer needs
 * room for its period, a process-context one for its work; membership of a
 * group is a link the user keeps beside each timer.
 */
static struct twheel_group group;
static struct twheel_group_member members[3];
static struct twheel_timer oneshot;
static struct twheel_periodic_timer periodic;
static struct twheel_work_timer sleeper;
static DECLARE_COMPLETION(oneshot_done);
static DECLARE_COMPLETION(periodic_done);
static DECLARE_COMPLETION(sleeper_done);
static atomic_t periodic_runs = ATOMIC_INIT(0);
static atomic_t early = ATOMIC_INIT(0);

static void check_not_early(struct twheel_timer *t)
{
	if (ktime_get() < twheel_deadline(t))
		atomic_inc(&early);
}

static void oneshot_fn(struct twheel_timer *t, u64 missed)
{
	check_not_early(t);
	complete(&oneshot_done);
}

static void periodic_fn(struct twheel_timer *t, u64 missed)
{
	check_not_early(t);
	if (atomic_add_return(1 + missed, &periodic_runs) >= PERIODIC_RUNS) {
		twheel_cancel(t);	/* stop ourselves */
		complete(&periodic_done);
	}
}

static void sleeper_fn(struct twheel_timer *t, u64 missed)
{
	check_not_early(t);
	usleep_range(1000, 2000);	/* allowed: process context */
	complete(&sleeper_done);
}

static int __init twheel_consumer_init(void)
{
	ktime_t now = ktime_get();
	int ret;

	twheel_group_init(&group);
	twheel_timer_init(&oneshot, oneshot_fn, 0);
	twheel_periodic_timer_init(&periodic, periodic_fn);
	twheel_work_timer_init(&sleeper, sleeper_fn);
	twheel_group_add(&group, &members[0], &oneshot);
	twheel_group_add(&group, &members[1], &periodic.timer);
	twheel_group_add(&group, &members[2], &sleeper.timer);

	ret = twheel_schedule(&oneshot, 10 * NSEC_PER_MSEC);
	if (ret >= 0)
		ret = twheel_arm(&periodic.timer, now + 20 * NSEC_PER_MSEC,
				 20 * NSEC_PER_MSEC, TWHEEL_FIXED_RATE);
	if (ret >= 0)
		ret = twheel_schedule(&sleeper.timer, 30 * NSEC_PER_MSEC);
	if (ret < 0) {
		pr_err("arming failed: %d\n", ret);
		goto err_shutdown;
	}

	ret = -ETIMEDOUT;
	if (!wait_for_completion_timeout(&oneshot_done, 10 * HZ) ||
	    !wait_for_completion_timeout(&periodic_done, 10 * HZ) ||
	    !wait_for_completion_timeout(&sleeper_done, 10 * HZ)) {
		pr_err("timers did not fire in 10 s\n");
		goto err_shutdown;
	}
	if (atomic_read(&early)) {
		pr_err("%d early expiries\n", atomic_read(&early));
		ret = -EIO;
		goto err_shutdown;
	}
	pr_info("one-shot, %d periodic and process-context expiries in %lld us\n",
		atomic_read(&periodic_runs),
		ktime_to_us(ktime_sub(ktime_get(), now)));
	pr_info("ok\n");
	return 0;

err_shutdown:
	twheel_group_shutdown_sync(&group);
	return ret;
}

static void __exit twheel_consumer_exit(void)
{
	unsigned int pending = twheel_group_shutdown_sync(&group);

	pr_info("unloaded, %u timers were still pending\n", pending);
}

module_init(twheel_consumer_init);
module_exit(twheel_consumer_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Sample in-kernel user of twheel");
