/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel: what differs between the kernels twheel builds for (6.1 LTS,
 * 6.12 with or without PREEMPT_RT, and 7.2). Each shim names the kernel
 * that changed the interface; the code calls the shim, never the version.
 * The test modules under tests/ use it too.
 */
#ifndef _TWHEEL_COMPAT_H
#define _TWHEEL_COMPAT_H

#include <linux/eventfd.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/workqueue.h>

/*
 * 6.8 dropped eventfd_signal()'s count argument (it was always 1 but in
 * one driver); before, it took the value to add.
 */
static inline void twheel_eventfd_signal(struct eventfd_ctx *ctx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/*
 * 6.3 made vma->vm_flags read-only outside mm and added vm_flags_set();
 * before, drivers set the bits directly (under mmap_lock, held in ->mmap).
 */
static inline void twheel_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * 6.5 added SLAB_NO_MERGE; before, a cache of the same size and flags
 * could share another's slabs, and with them its failslab setting.
 */
#ifdef SLAB_NO_MERGE
#define TWHEEL_SLAB_NO_MERGE	SLAB_NO_MERGE
#else
#define TWHEEL_SLAB_NO_MERGE	0
#endif

/*
 * 6.13 added hrtimer_setup(), which takes the callback with the clock and
 * the mode, and 6.15 removed hrtimer_init() (with it, setting ->function
 * by hand: the field became __private). Before 6.13, only hrtimer_init().
 */
static inline void
twheel_hrtimer_setup(struct hrtimer *timer,
		     enum hrtimer_restart (*fn)(struct hrtimer *),
		     clockid_t clock_id, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, fn, clock_id, mode);
#else
	hrtimer_init(timer, clock_id, mode);
	timer->function = fn;
#endif
}

/*
 * 6.13 made a symbol namespace a string literal: MODULE_IMPORT_NS("NS");
 * before, a bare token: MODULE_IMPORT_NS(NS), which the macros stringify
 * after expanding it. TWHEEL_INTERNAL_NS is what twheel.ko exports to its
 * own test and bench modules only, outside the API (internal.h says
 * which): EXPORT_SYMBOL_NS_GPL(sym, TWHEEL_INTERNAL_NS) and
 * MODULE_IMPORT_NS(TWHEEL_INTERNAL_NS) on every kernel.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define TWHEEL_IMPORT_KUNIT_NS() MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#define TWHEEL_INTERNAL_NS "TWHEEL_INTERNAL"
#else
#define TWHEEL_IMPORT_KUNIT_NS() MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#define TWHEEL_INTERNAL_NS TWHEEL_INTERNAL
#endif

/*
 * 6.17 named the system workqueues for what they are (system_dfl_wq is
 * the unbound one; system_unbound_wq stays, deprecated, and 7.2 warns on
 * its first use) and added WQ_PERCPU, which alloc_workqueue() wants said
 * (7.2 WARNs when a caller gives neither WQ_PERCPU nor WQ_UNBOUND).
 * Before, a workqueue was per-CPU unless WQ_UNBOUND.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define TWHEEL_WQ_PERCPU	WQ_PERCPU
#define twheel_unbound_wq	system_dfl_wq
#else
#define TWHEEL_WQ_PERCPU	0
#define twheel_unbound_wq	system_unbound_wq
#endif

/*
 * The local APIC timer interrupts a CPU took so far ("LOC" in
 * /proc/interrupts), for make bench. x86 now keeps its interrupt counts
 * in an array, irq_stat.counts[IRQ_COUNT_*], and added inc_perf_irq_stat()
 * with it: 7.2 is the first kernel here that has it (6.12 has a field per
 * count; which 7.x release changed it is not known here, so the shim tests
 * for the macro instead of a version).
 */
#ifdef CONFIG_X86_LOCAL_APIC
#include <asm/hardirq.h>
#ifdef inc_perf_irq_stat
#define twheel_apic_timer_irqs(cpu) \
	(per_cpu(irq_stat, cpu).counts[IRQ_COUNT_APIC_TIMER])
#else
#define twheel_apic_timer_irqs(cpu) (per_cpu(irq_stat, cpu).apic_timer_irqs)
#endif
#endif

/*
 * The offsets of the caller's time namespace from the host's clocks
 * (CLOCK_MONOTONIC and CLOCK_BOOTTIME; CLOCK_REALTIME has none), read once
 * when a file is opened. timerfd and clock_nanosleep() convert with
 * timens_ktime_to_host(), whose out-of-line part is not exported; the
 * offsets themselves are in struct time_namespace, in the public header,
 * on every kernel twheel builds for (6.1, 6.12, 7.2).
 *
 * A copy is correct because the offsets of a namespace that has a task
 * never change: /proc/PID/timens_offsets can only be written before the
 * first task enters (proc_timens_set_offset() fails with EACCES once
 * frozen_offsets is set, which timens_commit() does for the first task,
 * at fork or setns()). The opener is a task of the namespace it reads, so
 * what it reads is final. (7.2's timens_commit() sets frozen_offsets only
 * with CONFIG_TIME_NS_VDSO, which every architecture with a vDSO time
 * namespace page has, x86-64 and arm64 among them; on one without, a
 * namespace's offsets could still be written after the open, and the
 * file keeps those it saw.) Without CONFIG_TIME_NS every offset is 0.
 */
#ifdef CONFIG_TIME_NS
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/time_namespace.h>

static inline void twheel_timens_offsets(ktime_t *mono, ktime_t *boot)
{
	const struct timens_offsets *o = &current->nsproxy->time_ns->offsets;

	*mono = timespec64_to_ktime(o->monotonic);
	*boot = timespec64_to_ktime(o->boottime);
}
#else
static inline void twheel_timens_offsets(ktime_t *mono, ktime_t *boot)
{
	*mono = 0;
	*boot = 0;
}
#endif

/*
 * The alarmtimer (kernel/time/alarmtimer.c), which programs the RTC to
 * wake a suspended machine for the earliest alarm. A release between 6.12
 * and 7.2 made its callbacks return void (no more enum alarmtimer_restart)
 * and replaced alarm_start() with alarm_start_timer(). Which one is not
 * known here, and neither leaves a macro behind: Kbuild looks for
 * alarm_start_timer in the kernel's <linux/alarmtimer.h> and defines
 * TWHEEL_HAVE_ALARM_START_TIMER, which clock.c's one alarm callback
 * also tests for its type.
 */
#include <linux/alarmtimer.h>
/* Return: false if the alarm was not queued (7.2: @expires was past). */
static inline bool twheel_alarm_start(struct alarm *alarm, ktime_t expires)
{
#ifdef TWHEEL_HAVE_ALARM_START_TIMER
	return alarm_start_timer(alarm, expires, false);
#else
	alarm_start(alarm, expires);
	return true;
#endif
}

#endif /* _TWHEEL_COMPAT_H */
