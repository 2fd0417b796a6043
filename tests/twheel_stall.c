// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_stall: the scenarios that once kept one CPU busy with interrupts
 * off for as long as it took to handle every timer, for the abuse tests of
 * tests/vm/guest/run.sh. They read the longest interrupts-off section
 * from the irqsoff tracer around each step; this module only sets the
 * scene, one step per write to its "cmd" parameter:
 *
 *   echo "arm N tick" > /sys/module/twheel_stall/parameters/cmd
 *	N one-shot timers on CPU 1, all due in the same tick, 2 s after the
 *	arming ends, with deadlines in reverse order of arming (the worst
 *	case for sorting the tick); armed from CPU 1 itself, so they are
 *	linked there, and re-armed for that tick once all are armed
 *   echo "arm N far" > .../cmd     N timers on CPU 1, due in an hour
 *   echo "arm N group" > .../cmd   as far, and all in one twheel_group
 *   echo probe > .../cmd    (re)start the latency probe on CPU 1
 *   echo wait > .../cmd     wait (at most 300 s) until every timer fired
 *   echo stop > .../cmd     twheel_group_shutdown_sync() of the group
 *   echo free > .../cmd     cancel_sync and free every timer (kept, poisoned,
 *			    until the next arming checks it was not written)
 *
 * And the in-kernel consumer of twheel_abuse's burst-others (issue 42):
 *
 *   echo "consumer CPU FIRST STEP N" > .../cmd
 *	N (at most 1000) one-shot timers of the kernel, set to CPU, due at
 *	FIRST + i * STEP ns of CLOCK_MONOTONIC; each records its lateness
 *   echo consumer-wait > .../cmd    wait (at most 60 s) until all fired,
 *			    then cancel and free them
 *
 * Each command blocks until done; "result" then holds a line the guest
 * prints: what was done, how many timers fired, how long it took (for
 * consumer-wait: "consumer: fired F of N, early E, p50 A p99 B max C ns").
 *
 * The probe is a hard-interrupt hrtimer pinned to CPU 1 every 1 ms: its
 * worst lateness since "probe", in "probe_max_us", bounds from above the
 * longest stretch CPU 1 spent with interrupts off (plus what emulation
 * adds), on any kernel, where the irqsoff tracer is only on the debug one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "../compat.h"
#include "../twheel.h"

/* The CPU whose wheel holds the timers. */
#define STALL_CPU	1

/* A timer and its link in stall_group (used by "arm N group"). */
struct stall_timer {
	struct twheel_timer		timer;
	struct twheel_group_member	member;
};

static struct stall_timer *stall_timers;
static unsigned int stall_count;
static struct twheel_group stall_group;
static atomic_t stall_fired = ATOMIC_INIT(0);
static atomic_t stall_early = ATOMIC_INIT(0);
static DEFINE_MUTEX(stall_mutex);	/* serialises the commands */

static char stall_result[160] = "none";
module_param_string(result, stall_result, sizeof(stall_result), 0444);
MODULE_PARM_DESC(result, "what the last command did");

static void stall_fn(struct twheel_timer *t, u64 missed)
{
	if (ktime_get() < twheel_deadline(t))
		atomic_inc(&stall_early);
	atomic_inc(&stall_fired);
}

/* Timers armed per work_on_cpu() call: each call stays well under a second. */
#define STALL_CHUNK	4096

struct stall_arm {
	ktime_t		deadline;
	bool		group;
	bool		init;
	unsigned int	spread;		/* ns between deadlines, 0 or 1 */
	unsigned int	from;
	unsigned int	armed;
};

/* Runs on STALL_CPU: arm a chunk of timers there. */
static long stall_arm_on_cpu(void *arg)
{
	struct stall_arm *a = arg;
	unsigned int i, end = min(stall_count, a->from + STALL_CHUNK);

	for (i = a->from; i < end; i++) {
		struct twheel_timer *t = &stall_timers[i].timer;

		if (a->init) {
			twheel_timer_init(t, stall_fn, 0);
			twheel_timer_set_cpu(t, STALL_CPU);
			if (a->group &&
			    twheel_group_add(&stall_group,
					     &stall_timers[i].member, t))
				break;
		}
		/*
		 * In one tick but in reverse order of arming, for "tick": the
		 * worst case of the sort that orders a tick's due timers.
		 */
		if (twheel_schedule_at(t, a->deadline - a->spread * (i % 1000)) < 0)
			break;
		a->armed++;
	}
	return 0;
}

/* Arm every timer, a chunk per call on STALL_CPU, sleeping in between. */
static void stall_arm_all(struct stall_arm *a)
{
	for (a->from = 0; a->from < stall_count; a->from += STALL_CHUNK) {
		work_on_cpu(STALL_CPU, stall_arm_on_cpu, a);
		cond_resched();
	}
}

static struct hrtimer stall_probe;
static atomic64_t stall_probe_max = ATOMIC64_INIT(0);
static bool stall_probe_on;

static unsigned long probe_max_us;
module_param(probe_max_us, ulong, 0444);
MODULE_PARM_DESC(probe_max_us, "worst lateness of the probe since 'probe'");

static enum hrtimer_restart stall_probe_fn(struct hrtimer *h)
{
	ktime_t now = ktime_get(), late = now - hrtimer_get_expires(h);

	if (late > atomic64_read(&stall_probe_max))
		atomic64_set(&stall_probe_max, late);
	WRITE_ONCE(probe_max_us, atomic64_read(&stall_probe_max) / NSEC_PER_USEC);
	hrtimer_forward(h, now, NSEC_PER_MSEC);
	return HRTIMER_RESTART;
}

static long stall_probe_start(void *unused)
{
	hrtimer_start(&stall_probe, NSEC_PER_MSEC, HRTIMER_MODE_REL_PINNED_HARD);
	return 0;
}

static int stall_cmd_probe(void)
{
	if (stall_probe_on)
		hrtimer_cancel(&stall_probe);
	stall_probe_on = false;
	atomic64_set(&stall_probe_max, 0);
	WRITE_ONCE(probe_max_us, 0);
	if (!cpu_online(STALL_CPU))
		return -ENODEV;
	work_on_cpu(STALL_CPU, stall_probe_start, NULL);
	stall_probe_on = true;
	snprintf(stall_result, sizeof(stall_result), "probe: started on CPU %d",
		 STALL_CPU);
	return 0;
}

/*
 * The last array freed, kept and filled with STALL_POISON until the next
 * command that arms or unloads: a byte changed meanwhile is a write by
 * twheel to a timer after twheel_cancel_sync() said it let go of it.
 */
#define STALL_POISON	0x5a
static void *stall_grave;
static size_t stall_grave_len;

static unsigned long after_free;
module_param(after_free, ulong, 0444);
MODULE_PARM_DESC(after_free, "bytes of freed timers written after their cancel_sync()");

static void stall_grave_check(void)
{
	u8 *p = stall_grave, *end = p + stall_grave_len, *bad;
	unsigned long n = 0;

	if (!p)
		return;
	while ((bad = memchr_inv(p, STALL_POISON, end - p))) {
		size_t off = bad - (u8 *)stall_grave;

		if (!n)
			pr_err("written after free: timer %zu, byte %zu of %zu: %*ph\n",
			       off / sizeof(struct stall_timer),
			       off % sizeof(struct stall_timer),
			       sizeof(struct stall_timer),
			       (int)min_t(size_t, 16, end - bad), bad);
		n++;
		p = bad + 1;
	}
	/* After unload too, where "after_free" is gone: the console's check. */
	WARN_ON_ONCE(n);
	after_free += n;
	kvfree(stall_grave);
	stall_grave = NULL;
}

static void stall_free(void)
{
	unsigned int i;

	/*
	 * Cancel them all first, then wait for each: a timer held by another
	 * CPU (all of them, after "offline") makes twheel_cancel_sync() kick
	 * its holder and sleep until the holder lets go, and one such run
	 * lets go of every cancelled timer queued to it, not only the one
	 * waited for. One pass of twheel_cancel_sync() took 173 s for a
	 * million timers on PREEMPT_RT under TCG: a kick, a switch to the
	 * softirq thread and a wake-up per timer.
	 */
	for (i = 0; i < stall_count; i++)
		twheel_cancel(&stall_timers[i].timer);
	for (i = 0; i < stall_count; i++) {
		twheel_cancel_sync(&stall_timers[i].timer);
		if (!(i % 1024))
			cond_resched();
	}
	stall_grave_check();
	stall_grave_len = array_size(stall_count, sizeof(*stall_timers));
	memset(stall_timers, STALL_POISON, stall_grave_len);
	stall_grave = stall_timers;
	stall_timers = NULL;
	stall_count = 0;
}

static int stall_cmd_arm(unsigned int n, const char *kind)
{
	struct stall_arm a = { .group = !strcmp(kind, "group"), .init = true };
	bool tick = !strcmp(kind, "tick");
	ktime_t t0 = ktime_get();

	if (stall_timers || !n || n > (16U << 20))
		return -EINVAL;
	stall_grave_check();
	if (!tick && strcmp(kind, "far") && !a.group)
		return -EINVAL;
	a.deadline = t0 + 3600 * NSEC_PER_SEC;
	if (!cpu_online(STALL_CPU))
		return -ENODEV;
	stall_timers = kvcalloc(n, sizeof(*stall_timers), GFP_KERNEL);
	if (!stall_timers)
		return -ENOMEM;
	stall_count = n;
	twheel_group_init(&stall_group);
	atomic_set(&stall_fired, 0);
	atomic_set(&stall_early, 0);
	stall_arm_all(&a);
	if (tick && a.armed == n) {
		/*
		 * Now that the arming is over: all due 2 s from now, in one
		 * tick (the deadline is on a tick boundary, and no deadline is
		 * more than 999 ns before it).
		 */
		u64 gran = twheel_granularity();

		a.deadline = roundup(ktime_get() + 2 * NSEC_PER_SEC, gran);
		a.spread = gran >= 1000;
		a.init = false;
		a.armed = 0;
		stall_arm_all(&a);
	}
	snprintf(stall_result, sizeof(stall_result),
		 "arm %s: %u of %u armed in %lld ms", kind, a.armed, n,
		 ktime_ms_delta(ktime_get(), t0));
	if (a.armed != n) {
		stall_free();
		return -EIO;
	}
	return 0;
}

static int stall_cmd_wait(void)
{
	unsigned long limit = jiffies + 300 * HZ;
	ktime_t t0 = ktime_get();

	while (atomic_read(&stall_fired) < stall_count &&
	       time_before(jiffies, limit))
		msleep(50);
	snprintf(stall_result, sizeof(stall_result),
		 "wait: fired %d of %u, early %d, in %lld ms",
		 atomic_read(&stall_fired), stall_count,
		 atomic_read(&stall_early), ktime_ms_delta(ktime_get(), t0));
	return atomic_read(&stall_fired) == stall_count &&
	       !atomic_read(&stall_early) ? 0 : -EIO;
}

static int stall_cmd_stop(void)
{
	ktime_t t0 = ktime_get();
	unsigned int stopped = twheel_group_shutdown_sync(&stall_group);

	snprintf(stall_result, sizeof(stall_result),
		 "stop: %u of %u were pending, stopped in %lld ms", stopped,
		 stall_count, ktime_ms_delta(ktime_get(), t0));
	return stopped == stall_count ? 0 : -EIO;
}

/*
 * The consumer's timers and their lateness (ns, from the callback's clock
 * to the deadline; negative is early). Each callback writes its own slot,
 * then counts itself in @stall_cons_fired (release), which the wait reads
 * (acquire) before it reads the slots. Set up and freed under stall_mutex.
 */
#define STALL_CONS_MAX	1000
static struct twheel_timer *stall_cons;
static s64 *stall_cons_late;
static unsigned int stall_cons_n;
static atomic_t stall_cons_fired = ATOMIC_INIT(0);

static void stall_cons_fn(struct twheel_timer *t, u64 missed)
{
	WRITE_ONCE(stall_cons_late[t - stall_cons],
		   ktime_get() - twheel_deadline(t));
	/* Pairs with atomic_read_acquire() in stall_cmd_consumer_wait(). */
	atomic_inc_return_release(&stall_cons_fired);
}

/* No callback of the consumer runs once this returns. */
static void stall_cons_cancel(void)
{
	unsigned int i;

	for (i = 0; i < stall_cons_n; i++)
		twheel_cancel_sync(&stall_cons[i]);
}

static void stall_cons_free(void)
{
	stall_cons_cancel();
	kfree(stall_cons);
	kfree(stall_cons_late);
	stall_cons = NULL;
	stall_cons_late = NULL;
	stall_cons_n = 0;
}

static int stall_cmd_consumer(int cpu, u64 first, u64 step, unsigned int n)
{
	unsigned int i;
	int ret;

	if (stall_cons)
		stall_cons_free();
	if (!n || n > STALL_CONS_MAX || first > KTIME_MAX ||
	    step > (KTIME_MAX - first) / n)
		return -EINVAL;
	if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -ENODEV;
	stall_cons = kcalloc(n, sizeof(*stall_cons), GFP_KERNEL);
	stall_cons_late = kcalloc(n, sizeof(*stall_cons_late), GFP_KERNEL);
	if (!stall_cons || !stall_cons_late) {
		ret = -ENOMEM;
		goto err_free;
	}
	atomic_set(&stall_cons_fired, 0);
	for (i = 0; i < n; i++) {
		twheel_timer_init(&stall_cons[i], stall_cons_fn, 0);
		ret = twheel_timer_set_cpu(&stall_cons[i], cpu);
		if (ret)
			goto err_free;
	}
	stall_cons_n = n;
	for (i = 0; i < n; i++) {
		ret = twheel_schedule_at(&stall_cons[i], first + i * step);
		if (ret < 0)
			goto err_free;
	}
	snprintf(stall_result, sizeof(stall_result),
		 "consumer: %u timers on CPU %d", n, cpu);
	return 0;
err_free:
	stall_cons_free();
	return ret;
}

static int stall_cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

static int stall_cmd_consumer_wait(void)
{
	unsigned long limit = jiffies + 60 * HZ;
	unsigned int n = stall_cons_n, fired, i, early = 0;
	s64 *late = stall_cons_late;
	int ret = 0;

	if (!n)
		return -EINVAL;
	while ((fired = atomic_read_acquire(&stall_cons_fired)) < n &&
	       time_before(jiffies, limit))
		msleep(20);
	/* Those still pending are not waited for: the slots are ours now. */
	stall_cons_cancel();
	if (fired < n) {
		snprintf(stall_result, sizeof(stall_result),
			 "consumer: fired %u of %u in 60 s", fired, n);
		ret = -EIO;
		goto out_free;
	}
	for (i = 0; i < n; i++)
		early += late[i] < 0;
	sort(late, n, sizeof(*late), stall_cmp_s64, NULL);
	snprintf(stall_result, sizeof(stall_result),
		 "consumer: fired %u of %u, early %u, p50 %lld p99 %lld max %lld ns",
		 fired, n, early, late[n / 2], late[n * 99 / 100], late[n - 1]);
	if (early)
		ret = -EIO;
out_free:
	stall_cons_free();
	return ret;
}

static int stall_cmd_set(const char *val, const struct kernel_param *kp)
{
	unsigned long long first, step;
	char kind[16] = "";
	unsigned int n;
	int ret, cpu;

	mutex_lock(&stall_mutex);
	if (sscanf(val, "arm %u %15s", &n, kind) == 2) {
		ret = stall_cmd_arm(n, kind);
	} else if (sscanf(val, "consumer %d %llu %llu %u", &cpu, &first, &step,
			  &n) == 4) {
		ret = stall_cmd_consumer(cpu, first, step, n);
	} else if (sysfs_streq(val, "consumer-wait")) {
		ret = stall_cmd_consumer_wait();
	} else if (sysfs_streq(val, "wait")) {
		ret = stall_cmd_wait();
	} else if (sysfs_streq(val, "probe")) {
		ret = stall_cmd_probe();
	} else if (sysfs_streq(val, "stop")) {
		ret = stall_cmd_stop();
	} else if (sysfs_streq(val, "free")) {
		ktime_t t0 = ktime_get();
		unsigned int n = stall_count;

		stall_free();
		snprintf(stall_result, sizeof(stall_result),
			 "free: %u timers in %lld ms", n,
			 ktime_ms_delta(ktime_get(), t0));
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&stall_mutex);
	return ret;
}

static const struct kernel_param_ops stall_cmd_ops = {
	.set = stall_cmd_set,
};
module_param_cb(cmd, &stall_cmd_ops, NULL, 0200);
MODULE_PARM_DESC(cmd, "arm N tick|far|group, wait, stop, free, consumer CPU FIRST STEP N, consumer-wait");

static void __exit stall_exit(void)
{
	mutex_lock(&stall_mutex);
	if (stall_probe_on)
		hrtimer_cancel(&stall_probe);
	if (stall_timers)
		stall_free();
	if (stall_cons)
		stall_cons_free();
	stall_grave_check();
	mutex_unlock(&stall_mutex);
}
module_exit(stall_exit);

static int __init stall_init(void)
{
	twheel_hrtimer_setup(&stall_probe, stall_probe_fn, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED_HARD);
	return 0;
}
module_init(stall_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("twheel: interrupts-off scenarios for the abuse tests");
