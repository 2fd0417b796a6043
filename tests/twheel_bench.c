// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_bench: in-kernel benchmarks of twheel against timer_list and
 * hrtimer, tables 1 to 6 of `make bench` (BENCHMARKS.md explains them).
 *
 * Loading the module runs the tables chosen by the `tables` parameter in a
 * kthread bound to CPU `cpu`; insmod returns when they are done. Every
 * figure is one line in the kernel log. The keys before "rep=" name the
 * row, the keys after it are what one repetition measured:
 *
 *   twheel_bench: table=1 facility=twheel pending=1000 rep=0 ns_per_op=812.4
 *
 * bench/report.py takes the median and spread over the
 * repetitions. Each table cancels and frees everything it armed before it
 * returns, also when it is cut short (a signal to insmod, or `time_limit`
 * seconds), so the module holds nothing once insmod returns and rmmod has
 * nothing to clean up.
 *
 *   1  schedule + cancel of one timer on one CPU, with 1k .. 1M others
 *      pending; random delays spread over several levels of each wheel;
 *      for twheel, also its hrtimer's programmings per arming
 *      (twheel_programs(), a counter of the module's)
 *   2  the same, armed on `cpu` and cancelled on `peer_cpu`, plus the work
 *      a remote cancel leaves for the arming CPU (twheel: none until its
 *      wheel's next run, which the end of each repetition forces and
 *      spreads over the repetition's timers)
 *   3  `expire_count` timers due in the same granule: CPU time per expired
 *      timer, and the longest stretch the expiry took the CPU from a task
 *   4  lateness of `accuracy_count` timers (p50, p99, max) and early ones;
 *      hrtimers with hard and with softirq callbacks, the peers of twheel's
 *      slack-0 timers of each kind
 *   5  local timer interrupts per second on the idle CPU `quiet_cpu`: no
 *      timers, 1M far-future timers, a Netty-style tick every granule
 *   6  bytes per timer (struct sizes, slab deltas) and per CPU
 *
 * Method notes:
 * - Each facility is used as its users would: twheel_schedule() and
 *   twheel_cancel(); mod_timer() and timer_delete(); hrtimer_start() and
 *   hrtimer_cancel(); default (non-pinned) modes everywhere.
 * - Tables 1 and 2 time chunks of CHUNK pairs, or rounds, with ktime_get()
 *   and report the median chunk per repetition (and the mean): a host that
 *   takes a vCPU away for a while spoils a few chunks, not the figure. The
 *   three facilities take turns chunk by chunk, each with its own pending
 *   timers armed, so a slow spell of the host hits them alike. Interrupts
 *   stay enabled, so their cost lands where it would in use.
 * - Table 2 hands rounds of armed timers to a kthread on `peer_cpu`. A
 *   twheel cancel from another CPU queues the timer to its owner and kicks
 *   it, so the owner has work left to do: the arming CPU keeps bottom
 *   halves disabled while the peer cancels and then times
 *   local_bh_enable(), which runs that work ("drain").
 * - Table 3 watches from a task spinning on the CPU where the (pinned)
 *   timers expire: a gap longer than GAP_NS between two of its clock reads
 *   is time something else took the CPU, and the gaps that overlap the
 *   first to the last callback are the expiry (hardirq, softirq or
 *   ksoftirqd): their sum per timer, and the longest of them. A wait of
 *   more than GAP_NS between two callbacks is a hand-off if the task read
 *   the clock in it (the expiry gave the CPU back between two runs), else
 *   a gap inside a run (an interrupt, a tick's mostly): each kind's
 *   longest, and the hand-offs' count and medians.
 * - Timers that should not fire (pending ones, probes) are far enough
 *   away not to; a callback outside the watched set is counted in the
 *   last line ("stray_callbacks").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bottom_half.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/hardirq.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/timer.h>
#include <linux/tracepoint.h>
#include <linux/vmstat.h>
#include <trace/events/power.h>

#include "../compat.h"
#include "../twheel.h"
#include "../internal.h"

/* twheel_programs(): the wheel hrtimer's programmings, table 1. */
MODULE_IMPORT_NS(TWHEEL_INTERNAL_NS);

static unsigned int tables = 0x3f;
module_param(tables, uint, 0444);
MODULE_PARM_DESC(tables, "Tables to run, bit 0 = table 1 .. bit 5 = table 6, bit 10 = table 11 (default 0x3f)");

static unsigned int reps = 5;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "Repetitions of each measurement, 1..50 (default 5)");

static unsigned int max_pending = 1000000;
module_param(max_pending, uint, 0444);
MODULE_PARM_DESC(max_pending, "Largest pending count of tables 1, 2 and 5 (default 1000000)");

static unsigned int ops = 20000;
module_param(ops, uint, 0444);
MODULE_PARM_DESC(ops, "Schedule + cancel pairs per repetition, tables 1 and 2 (default 20000)");

static unsigned int expire_count = 100000;
module_param(expire_count, uint, 0444);
MODULE_PARM_DESC(expire_count, "Timers expiring together, table 3 (default 100000)");

/*
 * Table 3's second pattern (issue 43, item 5): fewer timers, one-shots
 * whose callbacks count, due over many ticks rather than in one granule,
 * as an outside consumer measured them: per-run costs (the interrupt, the
 * softirq, the wheel's advance) fall on a few timers each.
 */
static unsigned int spread_count = 4000;
module_param(spread_count, uint, 0444);
MODULE_PARM_DESC(spread_count, "Timers of table 3's spread pattern (default 4000)");

static unsigned int spread_ms = 400;
module_param(spread_ms, uint, 0444);
MODULE_PARM_DESC(spread_ms, "Their deadlines, uniform over this many ms; 0: no such rows (default 400)");

static unsigned int accuracy_count = 10000;
module_param(accuracy_count, uint, 0444);
MODULE_PARM_DESC(accuracy_count, "Timers whose lateness is measured, table 4 (default 10000)");

static unsigned int idle_ms = 2000;
module_param(idle_ms, uint, 0444);
MODULE_PARM_DESC(idle_ms, "Length of one idle window in ms, table 5 (default 2000)");

static unsigned int mem_count = 1000000;
module_param(mem_count, uint, 0444);
MODULE_PARM_DESC(mem_count, "Timers allocated one by one for the slab delta, table 6 (default 1000000)");

static int bench_cpu = 1;
module_param_named(cpu, bench_cpu, int, 0444);
MODULE_PARM_DESC(cpu, "CPU that arms the timers (default 1)");

static int peer_cpu = 2;
module_param(peer_cpu, int, 0444);
MODULE_PARM_DESC(peer_cpu, "CPU that cancels them in table 2 (default 2)");

static bool remote_only;
module_param(remote_only, bool, 0444);
MODULE_PARM_DESC(remote_only, "Table 2: only the rows that arm a timer another CPU owns (for profiling)");

static unsigned int remote_ops = 0x1f;
module_param(remote_ops, uint, 0444);
MODULE_PARM_DESC(remote_ops, "Table 2's remote rows to run, bit 0 = arm, 1 = rearm, 2 = rearm_pinned, 3 = arm_cancel, 4 = arm_at (default 0x1f)");

static unsigned int remote_facs = 0x7;
module_param(remote_facs, uint, 0444);
MODULE_PARM_DESC(remote_facs, "Facilities of table 2's remote rows, bit 0 = twheel, 1 = timer_list, 2 = hrtimer (default 0x7)");

static int quiet_cpu = 3;
module_param(quiet_cpu, int, 0444);
MODULE_PARM_DESC(quiet_cpu, "Idle CPU watched by table 5 (default 3)");

static int awake_cpu;
module_param(awake_cpu, int, 0444);
MODULE_PARM_DESC(awake_cpu, "CPU kept busy while the others idle, table 11 (default 0)");

static unsigned int t11_secs = 30;
module_param(t11_secs, uint, 0444);
MODULE_PARM_DESC(t11_secs, "Seconds counted per row, table 11 (default 30)");

static unsigned int time_limit = 900;
module_param(time_limit, uint, 0444);
MODULE_PARM_DESC(time_limit, "Seconds after which the run stops early (default 900)");

/*
 * FAC_PRECISE is a twheel timer with slack 0 (twheel_timer_set_slack()):
 * tables 1, 4 and 5 measure it beside the others; tables 2, 3 and 6 keep
 * the first NR_BASE_FACS. FAC_PRECISE_HARD is one that may fire in hard
 * interrupt context as the hrtimers here do (TWHEEL_F_HARDIRQ): table 4
 * only, as its arming and cancel are FAC_PRECISE's. FAC_HRTIMER_SOFT is
 * an hrtimer whose callback runs in softirq context (HRTIMER_MODE_SOFT),
 * as FAC_PRECISE's does: table 4 only, the peer of that row, as
 * FAC_HRTIMER is the peer of FAC_PRECISE_HARD's.
 */
enum bench_fac {
	FAC_TWHEEL, FAC_TIMER_LIST, FAC_HRTIMER, NR_BASE_FACS,
	FAC_PRECISE = NR_BASE_FACS, NR_FACS,
	FAC_PRECISE_HARD = NR_FACS, FAC_HRTIMER_SOFT, NR_T4_FACS
};

static const char *const fac_names[NR_T4_FACS] = {
	[FAC_TWHEEL] = "twheel",
	[FAC_TIMER_LIST] = "timer_list",
	[FAC_HRTIMER] = "hrtimer",
	[FAC_PRECISE] = "twheel_slack0",
	[FAC_PRECISE_HARD] = "twheel_slack0_hardirq",
	[FAC_HRTIMER_SOFT] = "hrtimer_soft",
};

/* The mode bit of @fac's hrtimers: softirq callbacks or hard ones. */
static enum hrtimer_mode fac_hr_soft(enum bench_fac fac)
{
	return fac == FAC_HRTIMER_SOFT ? HRTIMER_MODE_SOFT : 0;
}

static bool fac_is_tw(enum bench_fac fac)
{
	return fac == FAC_TWHEEL || fac == FAC_PRECISE ||
	       fac == FAC_PRECISE_HARD;
}

#define PROBES		1024	/* timers cycled through by measured loops */
#define CHUNK		256	/* table 1: pairs timed together */
#define MAX_SAMPLES	4096	/* timed chunks or rounds per repetition */
#define DELAYS		4096	/* precomputed random delays */
#define XCPU_BATCH	256	/* timers per round of table 2, bursty case */
#define GAP_NS		(10 * NSEC_PER_USEC)	/* table 3: a clock gap */
#define ROUND_TIMEOUT	NSEC_PER_SEC		/* table 2: peer is stuck */
/* Table 2 adds this to the delays: a round may wait for a descheduled vCPU. */
#define XCPU_MIN_NS	(100 * NSEC_PER_MSEC)

/* Table 3: a stretch of time, in which the watching task did not run. */
struct gap {
	ktime_t	from;
	ktime_t	to;
};

#define CB_GAPS		128	/* table 3: waits between callbacks kept */

/* Delays of the measured timers: 1 ms << 0..21, so up to 70 min. */
#define PROBE_MIN_NS	NSEC_PER_MSEC
#define PROBE_OCTAVES	22
/* Timers pending meanwhile: 60 s << 0..9, up to 17 h; none fire. */
#define BG_MIN_NS	(60 * NSEC_PER_SEC)
#define BG_OCTAVES	10
/* Table 5: far-future timers, 1 h << 0..3, up to 16 h. */
#define FAR_MIN_NS	(3600 * NSEC_PER_SEC)
#define FAR_OCTAVES	4
/* Table 4: 1 ms << 0..10, up to 2 s. */
#define ACC_MIN_NS	NSEC_PER_MSEC
#define ACC_OCTAVES	11

/**
 * struct tset - an array of timers of one facility
 * @fac: the facility
 * @n: number of timers
 * @mem: the timers (kvmalloc'd), seen through the member of @fac
 * @tw: @mem as twheel timers
 * @tl: @mem as timer_lists
 * @hr: @mem as hrtimers
 * @deadline: table 4: requested deadline of each timer, or NULL
 * @lat: table 4: lateness of each expiry, or NULL
 * @fired: callbacks run for this set while it was watched
 * @first: time of the first of them
 * @last: time of the last of them
 * @home: the CPU they are pinned to, or -1
 * @away: callbacks that ran on another CPU than @home
 * @prev_cb: table 3 (pinned sets, whose callbacks run one at a time on
 *	@home): time of the latest callback
 * @max_cb_gap: table 3: the longest time between two callbacks
 * @ncb_gaps: table 3: waits of more than GAP_NS between two callbacks
 * @cb_gaps: the first CB_GAPS of them
 */
struct tset {
	enum bench_fac		fac;
	unsigned int		n;
	union {
		void			*mem;
		struct twheel_timer	*tw;
		struct timer_list	*tl;
		struct hrtimer		*hr;
	};
	ktime_t			*deadline;
	s64			*lat;
	atomic_t		fired;
	atomic64_t		first;
	atomic64_t		last;
	int			home;
	atomic_t		away;
	ktime_t			prev_cb;
	ktime_t			max_cb_gap;
	unsigned int		ncb_gaps;
	struct gap		cb_gaps[CB_GAPS];
};

static bool bench_abort;		/* insmod was interrupted */
static ktime_t bench_deadline;		/* time_limit */
static bool bench_cut;			/* a table stopped early */
static struct tset *watched;		/* callbacks record for this set */
static atomic_long_t stray;		/* other callbacks that ran */
static DECLARE_COMPLETION(runner_done);

static DEFINE_PER_CPU(unsigned long, bench_counter);	/* primitives() */
static DEFINE_SPINLOCK(bench_lock);			/* primitives() */
static u64 bench_divisor = NSEC_PER_MSEC;		/* primitives() */
static u64 bench_sink;					/* primitives() */
static u64 probe_ns[DELAYS];		/* delays of measured timers */
static unsigned long probe_jif[DELAYS];	/* the same in jiffies */
static u64 xprobe_ns[DELAYS];		/* table 2: XCPU_MIN_NS more */
static unsigned long xprobe_jif[DELAYS];

static bool stopping(void)
{
	if (READ_ONCE(bench_abort) ||
	    ktime_after(ktime_get(), READ_ONCE(bench_deadline))) {
		bench_cut = true;
		return true;
	}
	return false;
}

/* Log-uniform over @octaves octaves from @lo, uniform within each octave. */
static u64 rand_delay(u64 lo, unsigned int octaves)
{
	u64 base = lo << get_random_u32_below(octaves);

	return base + mul_u64_u32_shr(base, get_random_u32(), 32);
}

static unsigned long ns_to_jiffies_up(u64 ns)
{
	return div_u64(ns + TICK_NSEC - 1, TICK_NSEC);
}

/* @total / @n in tenths, for fx(). */
static u64 per10(u64 total, u64 n)
{
	return div64_u64(total * 10, max_t(u64, n, 1));
}

struct fx {
	char s[24];
};

/* A value in tenths as text with one decimal: pr_info("%s", fx(v).s). */
static struct fx fx(u64 tenths)
{
	struct fx f;

	snprintf(f.s, sizeof(f.s), "%llu.%llu", tenths / 10, tenths % 10);
	return f;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* The median of @v[0 .. @n - 1]; sorts @v. */
static u64 median(u64 *v, unsigned int n)
{
	if (!n)
		return 0;
	sort(v, n, sizeof(*v), cmp_u64, NULL);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---------------------------------------------------------------------
 * Timer sets
 */

static void bench_note(struct tset *s, unsigned long i)
{
	ktime_t now = ktime_get();
	s64 old = 0;

	if (s->lat)
		s->lat[i] = now - s->deadline[i];
	atomic64_try_cmpxchg(&s->first, &old, now);
	if (s->home >= 0) {
		if (s->home != raw_smp_processor_id())
			atomic_inc(&s->away);
		if (s->prev_cb && now - s->prev_cb > s->max_cb_gap)
			s->max_cb_gap = now - s->prev_cb;
		if (s->prev_cb && now - s->prev_cb > GAP_NS &&
		    s->ncb_gaps++ < CB_GAPS) {
			s->cb_gaps[s->ncb_gaps - 1].from = s->prev_cb;
			s->cb_gaps[s->ncb_gaps - 1].to = now;
		}
		s->prev_cb = now;
	}
	old = atomic64_read(&s->last);
	while (old < now && !atomic64_try_cmpxchg(&s->last, &old, now))
		;
	/* Pairs with the acquire of the reader: @lat is written. */
	atomic_inc_return_release(&s->fired);
}

static void bench_tw_fn(struct twheel_timer *t, u64 missed)
{
	struct tset *s = READ_ONCE(watched);

	if (s && fac_is_tw(s->fac) && t >= s->tw && t < s->tw + s->n)
		bench_note(s, t - s->tw);
	else
		atomic_long_inc(&stray);
}

static void bench_tl_fn(struct timer_list *t)
{
	struct tset *s = READ_ONCE(watched);

	if (s && s->fac == FAC_TIMER_LIST && t >= s->tl && t < s->tl + s->n)
		bench_note(s, t - s->tl);
	else
		atomic_long_inc(&stray);
}

static enum hrtimer_restart bench_hr_fn(struct hrtimer *t)
{
	struct tset *s = READ_ONCE(watched);

	if (s && (s->fac == FAC_HRTIMER || s->fac == FAC_HRTIMER_SOFT) &&
	    t >= s->hr && t < s->hr + s->n)
		bench_note(s, t - s->hr);
	else
		atomic_long_inc(&stray);
	return HRTIMER_NORESTART;
}

static size_t fac_size(enum bench_fac fac)
{
	switch (fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		return sizeof(struct twheel_timer);
	case FAC_TIMER_LIST:
		return sizeof(struct timer_list);
	default:
		return sizeof(struct hrtimer);
	}
}

/* @pinned: expire on this CPU (the caller is bound to it). */
static void fac_init(enum bench_fac fac, void *timer, bool pinned)
{
	switch (fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		twheel_timer_init((struct twheel_timer *)timer, bench_tw_fn,
				  fac == FAC_PRECISE_HARD ? TWHEEL_F_HARDIRQ : 0);
		if (pinned)
			twheel_timer_set_cpu(timer, raw_smp_processor_id());
		if (fac != FAC_TWHEEL)
			twheel_timer_set_slack(timer, 0);
		break;
	case FAC_TIMER_LIST:
		timer_setup((struct timer_list *)timer, bench_tl_fn,
			    pinned ? TIMER_PINNED : 0);
		break;
	default:
		twheel_hrtimer_setup((struct hrtimer *)timer, bench_hr_fn,
				     CLOCK_MONOTONIC,
				     HRTIMER_MODE_REL | fac_hr_soft(fac));
		break;
	}
}

static void fac_arm_rel(enum bench_fac fac, void *timer, u64 delay)
{
	switch (fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		twheel_schedule(timer, delay);
		break;
	case FAC_TIMER_LIST:
		mod_timer(timer, jiffies + ns_to_jiffies_up(delay));
		break;
	default:
		hrtimer_start(timer, ns_to_ktime(delay),
			      HRTIMER_MODE_REL | fac_hr_soft(fac));
		break;
	}
}

/* Waits for a running callback too: the memory may be freed afterwards. */
static void fac_stop(enum bench_fac fac, void *timer)
{
	switch (fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		twheel_cancel_sync(timer);
		break;
	case FAC_TIMER_LIST:
		timer_delete_sync(timer);
		break;
	default:
		hrtimer_cancel(timer);
		break;
	}
}

static void *tset_timer(struct tset *s, unsigned int i)
{
	return (char *)s->mem + (size_t)i * fac_size(s->fac);
}

#define TSET_TRACK	0x1	/* keep deadlines and lateness (table 4) */
#define TSET_PINNED	0x2	/* expire on this CPU (table 3) */

static struct tset *tset_alloc(enum bench_fac fac, unsigned int n,
			       unsigned int flags)
{
	bool track = flags & TSET_TRACK;
	struct tset *s = kzalloc(sizeof(*s), GFP_KERNEL);
	unsigned int i;

	if (!s)
		return NULL;
	s->fac = fac;
	s->n = n;
	s->home = flags & TSET_PINNED ? raw_smp_processor_id() : -1;
	s->mem = kvcalloc(n, fac_size(fac), GFP_KERNEL);
	if (track) {
		s->deadline = kvcalloc(n, sizeof(*s->deadline), GFP_KERNEL);
		s->lat = kvcalloc(n, sizeof(*s->lat), GFP_KERNEL);
	}
	if (!s->mem || (track && (!s->deadline || !s->lat))) {
		kvfree(s->lat);
		kvfree(s->deadline);
		kvfree(s->mem);
		kfree(s);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		fac_init(fac, tset_timer(s, i), flags & TSET_PINNED);
		if (!(i & 4095))
			cond_resched();
	}
	return s;
}

/* Cancel every timer and wait for running callbacks. */
static void tset_stop(struct tset *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		fac_stop(s->fac, tset_timer(s, i));
		if (!(i & 1023))
			cond_resched();
	}
}

static void tset_free(struct tset *s)
{
	if (!s)
		return;
	tset_stop(s);
	if (READ_ONCE(watched) == s)
		WRITE_ONCE(watched, NULL);
	kvfree(s->lat);
	kvfree(s->deadline);
	kvfree(s->mem);
	kfree(s);
}

static void tset_watch(struct tset *s)
{
	atomic_set(&s->fired, 0);
	atomic64_set(&s->first, 0);
	atomic64_set(&s->last, 0);
	atomic_set(&s->away, 0);
	WRITE_ONCE(watched, s);
}

/* Arm every timer with a random delay; returns -EINTR if stopped. */
static int tset_arm_random(struct tset *s, u64 lo, unsigned int octaves)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		fac_arm_rel(s->fac, tset_timer(s, i), rand_delay(lo, octaves));
		if (!(i & 1023)) {
			cond_resched();
			if (stopping())
				return -EINTR;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Running something on another CPU
 */

struct on_cpu {
	int			(*fn)(void *arg);
	void			*arg;
	int			ret;
	struct completion	done;
};

static int on_cpu_thread(void *data)
{
	struct on_cpu *w = data;

	w->ret = w->fn(w->arg);
	kthread_complete_and_exit(&w->done, 0);
}

/* Run @fn(@arg) in a kthread bound to @cpu and wait for it. */
static int run_on_cpu(int cpu, int (*fn)(void *arg), void *arg)
{
	struct on_cpu w = { .fn = fn, .arg = arg };
	struct task_struct *t;

	init_completion(&w.done);
	t = kthread_create_on_cpu(on_cpu_thread, &w, cpu, "twheel_bench/%u");
	if (IS_ERR(t))
		return PTR_ERR(t);
	wake_up_process(t);
	wait_for_completion(&w.done);
	return w.ret;
}

/* ---------------------------------------------------------------------
 * Table 1: schedule + cancel on one CPU
 */

/* Local timer interrupts a CPU took so far ("LOC" in /proc/interrupts). */
static u64 timer_irqs(int cpu)
{
#ifdef CONFIG_X86_LOCAL_APIC
	/* Maybe another CPU's counter: a racy read, as /proc/interrupts does. */
	return data_race(twheel_apic_timer_irqs(cpu));
#else
	return 0;
#endif
}

/* @n schedule + cancel pairs from probe @from on; returns the ns taken. */
static u64 pair_loop(struct tset *p, unsigned int from, unsigned int n)
{
	ktime_t t0 = ktime_get();
	unsigned int i;

	switch (p->fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		for (i = from; i < from + n; i++) {
			struct twheel_timer *t = &p->tw[i % PROBES];

			twheel_schedule(t, probe_ns[i % DELAYS]);
			twheel_cancel(t);
		}
		break;
	case FAC_TIMER_LIST:
		for (i = from; i < from + n; i++) {
			struct timer_list *t = &p->tl[i % PROBES];

			mod_timer(t, jiffies + probe_jif[i % DELAYS]);
			timer_delete(t);
		}
		break;
	default:
		for (i = from; i < from + n; i++) {
			struct hrtimer *t = &p->hr[i % PROBES];

			hrtimer_start(t, ns_to_ktime(probe_ns[i % DELAYS]),
				      HRTIMER_MODE_REL);
			hrtimer_cancel(t);
		}
		break;
	}
	return ktime_get() - t0;
}

/* Arm @k probes from index @from on with delays @dns; returns the ns taken. */
static u64 arm_loop(struct tset *p, unsigned int from, unsigned int k,
		    const u64 *dns, const unsigned long *djif)
{
	ktime_t t0 = ktime_get();
	unsigned int i, j;

	switch (p->fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		for (i = from; i < from + k; i++) {
			j = i % PROBES;
			twheel_schedule(&p->tw[j], dns[i % DELAYS]);
		}
		break;
	case FAC_TIMER_LIST:
		for (i = from; i < from + k; i++) {
			j = i % PROBES;
			mod_timer(&p->tl[j], jiffies + djif[i % DELAYS]);
		}
		break;
	default:
		for (i = from; i < from + k; i++) {
			j = i % PROBES;
			hrtimer_start(&p->hr[j], ns_to_ktime(dns[i % DELAYS]),
				      HRTIMER_MODE_REL);
		}
		break;
	}
	return ktime_get() - t0;
}

static u64 cancel_loop(struct tset *p, unsigned int from, unsigned int k)
{
	ktime_t t0 = ktime_get();
	unsigned int i;

	switch (p->fac) {
	case FAC_TWHEEL:
	case FAC_PRECISE:
	case FAC_PRECISE_HARD:
		for (i = from; i < from + k; i++)
			twheel_cancel(&p->tw[i % PROBES]);
		break;
	case FAC_TIMER_LIST:
		for (i = from; i < from + k; i++)
			timer_delete(&p->tl[i % PROBES]);
		break;
	default:
		for (i = from; i < from + k; i++)
			hrtimer_cancel(&p->hr[i % PROBES]);
		break;
	}
	return ktime_get() - t0;
}

/* What a chunk or a round took: the second index of samples[][][]. */
enum { XS_PAIR, XS_ARM, XS_REARM, XS_CANCEL, XS_DRAIN, XS_WALL, NR_XS };

/*
 * Per facility, the time of every chunk (table 1) or round (table 2) of
 * one repetition: it reports their median, which a vCPU the host took away
 * for a while does not move (the mean, also printed, shows such spells).
 */
static u64 (*samples)[NR_XS][MAX_SAMPLES];

/*
 * The facilities take turns chunk by chunk, so a slow spell of the host
 * hits all three alike; each has its own @pending timers armed meanwhile.
 */
static void table1(struct tset **probes, unsigned int pending)
{
	unsigned int r, i, f, chunks = clamp(ops / CHUNK, 1U, MAX_SAMPLES);
	unsigned int rounds = clamp(ops / PROBES, 1U, MAX_SAMPLES);
	u64 total[NR_FACS], irqs[NR_FACS], progs[NR_FACS], c0, p0;

	for (f = 0; f < NR_FACS; f++)
		pair_loop(probes[f], 0, PROBES);	/* warm up */
	for (r = 0; r < reps && !stopping(); r++) {
		memset(total, 0, sizeof(total));
		memset(irqs, 0, sizeof(irqs));
		memset(progs, 0, sizeof(progs));
		for (i = 0; i < chunks; i++) {
			for (f = 0; f < NR_FACS; f++) {
				c0 = timer_irqs(bench_cpu);
				p0 = twheel_programs(bench_cpu);
				samples[f][XS_PAIR][i] =
					pair_loop(probes[f], i * CHUNK, CHUNK);
				irqs[f] += timer_irqs(bench_cpu) - c0;
				/* Only twheel's chunks program its hrtimer. */
				progs[f] += twheel_programs(bench_cpu) - p0;
				total[f] += samples[f][XS_PAIR][i];
			}
			cond_resched();
		}
		/*
		 * The halves apart: arm all probes (100 ms+ away), arm them
		 * again while pending (other delays: a real move, not
		 * mod_timer()'s same-expiry shortcut), cancel all.
		 */
		for (i = 0; i < rounds; i++) {
			for (f = 0; f < NR_FACS; f++) {
				samples[f][XS_ARM][i] =
					arm_loop(probes[f], 0, PROBES,
						 xprobe_ns, xprobe_jif);
				samples[f][XS_REARM][i] =
					arm_loop(probes[f], PROBES, PROBES,
						 xprobe_ns, xprobe_jif);
				samples[f][XS_CANCEL][i] =
					cancel_loop(probes[f], 0, PROBES);
			}
			cond_resched();
		}
		/*
		 * programs_per_arm: programmings of twheel's hrtimer on this
		 * CPU per arming of the pairs, to a thousandth, the wheel's
		 * runs meanwhile included; "-" for the other facilities.
		 */
		for (f = 0; f < NR_FACS; f++) {
			u64 pm = div64_u64(progs[f] * 1000, chunks * CHUNK);
			char pa[24] = "-";

			if (fac_is_tw(f))
				snprintf(pa, sizeof(pa), "%llu.%03llu",
					 pm / 1000, pm % 1000);
			pr_info("table=1 facility=%s pending=%u rep=%u ns_per_op=%s mean_ns=%s arm_ns=%s rearm_ns=%s cancel_ns=%s irqs_per_s=%llu programs_per_arm=%s\n",
				fac_names[f], pending, r,
				fx(per10(median(samples[f][XS_PAIR], chunks),
					 CHUNK)).s,
				fx(per10(total[f], chunks * CHUNK)).s,
				fx(per10(median(samples[f][XS_ARM], rounds),
					 PROBES)).s,
				fx(per10(median(samples[f][XS_REARM], rounds),
					 PROBES)).s,
				fx(per10(median(samples[f][XS_CANCEL], rounds),
					 PROBES)).s,
				div64_u64(irqs[f] * NSEC_PER_SEC,
					  max_t(u64, total[f], 1)), pa);
		}
	}
}

/*
 * What the primitives the facilities are made of cost here: under
 * emulation they do not cost what they cost on hardware, and the ratios
 * of table 1 follow from how many of each a facility uses.
 */
static void primitives(void)
{
	static const char *const names[] = {
		"ktime_get", "cmpxchg", "irq_save_restore",
		"spin_lock_irqsave_unlock", "this_cpu_inc", "div64_u64",
	};
	/* Not a constant: the compiler must divide each time (an arming does). */
	u64 divisor = READ_ONCE(bench_divisor), acc = 0;
	const unsigned int n = 100000;
	unsigned int p, i, r;
	unsigned long flags;
	atomic_long_t word;
	ktime_t t0;
	long old;
	u64 ns;

	atomic_long_set(&word, 0);
	for (r = 0; r < reps && !stopping(); r++) {
		for (p = 0; p < ARRAY_SIZE(names); p++) {
			t0 = ktime_get();
			for (i = 0; i < n; i++) {
				switch (p) {
				case 0:
					ktime_get();
					break;
				case 1:
					old = i;
					atomic_long_try_cmpxchg(&word, &old, i + 1);
					break;
				case 2:
					local_irq_save(flags);
					local_irq_restore(flags);
					break;
				case 3:
					spin_lock_irqsave(&bench_lock, flags);
					spin_unlock_irqrestore(&bench_lock, flags);
					break;
				case 4:
					this_cpu_inc(bench_counter);
					break;
				default:
					acc += div64_u64(acc + i + (1ULL << 50),
							 divisor);
					break;
				}
			}
			ns = per10(ktime_get() - t0, n);
			WRITE_ONCE(bench_sink, acc);
			pr_info("table=1 item=primitive name=%s rep=%u ns=%s\n",
				names[p], r, fx(ns).s);
		}
		cond_resched();
	}
}

/* ---------------------------------------------------------------------
 * Table 2: armed on one CPU, cancelled on another
 */

/**
 * struct peer - the cancelling side of table 2
 * @probes: the timers of this round; written before it is handed over
 * @k: timers per round; likewise
 * @go: rounds handed over: round r cancels the k probes from (r - 1) * k
 * @done: rounds finished
 * @stop: set by the runner when it is done
 * @cancel_ns: time cancel_loop() took in the last round finished
 * @exited: completed when the thread is gone
 */
struct peer {
	struct tset		*probes;
	unsigned int		k;
	atomic_t		go;
	atomic_t		done;
	bool			stop;
	u64			cancel_ns;
	struct completion	exited;
};

static int peer_thread(void *data)
{
	struct peer *p = data;
	unsigned int spins = 0;
	int seen = 0, go;
	u64 ns;

	while (!READ_ONCE(p->stop)) {
		/* Pairs with the release of the runner: the probes are armed. */
		go = atomic_read_acquire(&p->go);
		if (go == seen) {
			cpu_relax();
			if (!(++spins & 1023))
				cond_resched();
			continue;
		}
		ns = cancel_loop(READ_ONCE(p->probes),
				 (go - 1) * READ_ONCE(p->k), READ_ONCE(p->k));
		WRITE_ONCE(p->cancel_ns, ns);
		seen = go;
		/* Pairs with the acquire of the runner: cancel_ns is written. */
		atomic_set_release(&p->done, go);
	}
	kthread_complete_and_exit(&p->exited, 0);
}

/* The last probe table 2 cancelled on the peer, for twheel_flush_lazy(). */
static unsigned int tw_last_probe;

/*
 * One round: arm k probes of @probes here, have the peer cancel them, run
 * what is left; the times go to samples[facility][...][@i].
 */
static int xcpu_round(struct peer *p, struct tset *probes, int round,
		      unsigned int i, unsigned int *kicks_seen)
{
	unsigned int k = p->k, from = (round - 1) * k;
	u64 *s[NR_XS];
	ktime_t t0, t1, t3;
	int x;

	for (x = 0; x < NR_XS; x++)
		s[x] = &samples[probes->fac][x][i];
	t0 = ktime_get();
	*s[XS_ARM] = arm_loop(probes, from, k, xprobe_ns, xprobe_jif);
	/* Keep the work a remote cancel queues here until we time it. */
	local_bh_disable();
	WRITE_ONCE(p->probes, probes);
	/* Pairs with the acquire of the peer. */
	atomic_set_release(&p->go, round);
	t1 = ktime_get();
	while (atomic_read_acquire(&p->done) != round) {
		cpu_relax();
		if (ktime_get() - t1 > ROUND_TIMEOUT) {
			local_bh_enable();
			pr_warn("table 2: the peer CPU did not answer\n");
			return -ETIMEDOUT;
		}
	}
	*s[XS_CANCEL] = READ_ONCE(p->cancel_ns);
	/*
	 * twheel's cancels from afar send no kick: the timers wait on this
	 * CPU's list for its wheel's next run (table2() forces one at the end
	 * of the repetition). Seeing the softirq raised now means a kick.
	 */
	if (probes->fac == FAC_TWHEEL) {
		if (local_softirq_pending() & BIT(HRTIMER_SOFTIRQ))
			(*kicks_seen)++;
		tw_last_probe = (from + k - 1) % PROBES;
	}
	t3 = ktime_get();
	local_bh_enable();
	*s[XS_DRAIN] = ktime_get() - t3;
	*s[XS_WALL] = ktime_get() - t0;
	return 0;
}

/*
 * Table 2, twheel: the cancels of a repetition wait on this CPU's
 * submission list (a cancel from afar does not kick). Run this CPU's wheel
 * now, as its next run would, and return the time: twheel_cancel_sync() of
 * the last one cancelled kicks this CPU's wheel, which drains all of them
 * in order.
 */
static u64 twheel_flush_lazy(struct tset *probes)
{
	ktime_t t0 = ktime_get();

	twheel_cancel_sync(&probes->tw[tw_last_probe]);
	return ktime_get() - t0;
}

/* As table 1, the facilities take turns, round by round. */
static int table2(struct tset **probes, unsigned int pending)
{
	static const unsigned int batches[] = { XCPU_BATCH, 1 };
	unsigned int b, r, k, rounds, i, f, late[NR_FACS];
	u64 arm, cancel, drain, flush, total[NR_FACS];
	struct task_struct *t;
	struct peer *p;
	int round = 0, ret = 0;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	init_completion(&p->exited);
	t = kthread_create_on_cpu(peer_thread, p, peer_cpu,
				  "twheel_bench_peer/%u");
	if (IS_ERR(t)) {
		kfree(p);
		return PTR_ERR(t);
	}
	wake_up_process(t);

	for (b = 0; b < ARRAY_SIZE(batches) && !ret; b++) {
		k = batches[b];
		/* Single handoffs take longer each: fewer of them. */
		rounds = clamp(ops / k / (k == 1 ? 10 : 1), 1U, MAX_SAMPLES);
		/* The peer is idle between rounds: k is not in use. */
		WRITE_ONCE(p->k, k);
		for (r = 0; r < reps && !ret && !stopping(); r++) {
			memset(late, 0, sizeof(late));
			memset(total, 0, sizeof(total));
			for (i = 0; i < rounds && !ret; i++) {
				for (f = 0; f < NR_BASE_FACS && !ret; f++) {
					ret = xcpu_round(p, probes[f], ++round,
							 i, &late[f]);
					total[f] += samples[f][XS_ARM][i] +
						    samples[f][XS_CANCEL][i] +
						    samples[f][XS_DRAIN][i];
				}
				if (!(i & 15))
					cond_resched();
			}
			if (ret)
				break;
			/* Charge twheel's deferred drain evenly to its rounds. */
			flush = twheel_flush_lazy(probes[FAC_TWHEEL]);
			for (i = 0; i < rounds; i++)
				samples[FAC_TWHEEL][XS_DRAIN][i] += flush / rounds;
			total[FAC_TWHEEL] += flush;
			for (f = 0; f < NR_BASE_FACS; f++) {
				arm = per10(median(samples[f][XS_ARM], rounds), k);
				cancel = per10(median(samples[f][XS_CANCEL], rounds), k);
				drain = per10(median(samples[f][XS_DRAIN], rounds), k);
				pr_info("table=2 facility=%s pending=%u batch=%u rep=%u ns_per_op=%s mean_ns=%s arm_ns=%s cancel_ns=%s drain_ns=%s round_ns=%s kicks_seen=%u\n",
					fac_names[f], pending, k, r,
					fx(arm + cancel + drain).s,
					fx(per10(total[f], rounds * k)).s,
					fx(arm).s, fx(cancel).s, fx(drain).s,
					fx(per10(median(samples[f][XS_WALL],
							rounds), k)).s,
					late[f]);
			}
		}
	}
	WRITE_ONCE(p->stop, true);
	wait_for_completion(&p->exited);
	kfree(p);
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 2, remote rows: arming a timer that another CPU owns
 */

/*
 * The ways a timer is armed for @peer_cpu's wheel from `cpu`, the timer
 * owned by @peer_cpu: RA_ARM arms an idle one (twheel: pinned there with
 * twheel_timer_set_cpu(); add_timer_on()), RA_REARM re-arms one pending
 * there (armed on @peer_cpu first, then twheel_schedule(), mod_timer(),
 * hrtimer_start() here: all three move it here), RA_REARM_PIN re-arms
 * one pinned there (twheel only: it stays there), RA_ARM_CANCEL arms an
 * idle one as RA_ARM and cancels it at once. RA_ARM_AT (twheel only) is
 * RA_ARM with twheel_schedule_at() and a deadline the caller has (the
 * pass's start plus the delay), as add_timer_on() takes an expiry the
 * caller computed from jiffies: the same arming without the clock read
 * that twheel_schedule() makes.
 */
enum { RA_ARM, RA_REARM, RA_REARM_PIN, RA_ARM_CANCEL, RA_ARM_AT, NR_RA };

static const char *const ra_names[NR_RA] = {
	[RA_ARM] = "arm", [RA_REARM] = "rearm",
	[RA_REARM_PIN] = "rearm_pinned", [RA_ARM_CANCEL] = "arm_cancel",
	[RA_ARM_AT] = "arm_at",
};

/* One probe set per (facility, op) that makes sense; NULL for the others. */
struct remote_sets {
	struct tset *s[NR_RA][NR_BASE_FACS];
};

static bool ra_makes_sense(unsigned int op, enum bench_fac fac)
{
	if (!(remote_ops & BIT(op)) || !(remote_facs & BIT(fac)))
		return false;
	if (fac == FAC_HRTIMER)		/* arms on the caller's CPU only */
		return op == RA_REARM;
	if (op == RA_REARM_PIN)		/* timer_list cannot re-arm in place */
		return fac == FAC_TWHEEL;
	if (op == RA_ARM_AT)		/* add_timer_on() is RA_ARM's row */
		return fac == FAC_TWHEEL;
	return true;
}

/* Runs on peer_cpu (an IPI): arm every probe of @arg there. */
static void ra_arm_there(void *arg)
{
	struct tset *p = arg;
	unsigned int i;

	for (i = 0; i < PROBES; i++)
		fac_arm_rel(p->fac, tset_timer(p, i), xprobe_ns[i % DELAYS]);
}

/*
 * Cancel every probe and wait until no wheel or base holds it. twheel's
 * cancels from here queue the probes to their holder without a kick: one
 * twheel_cancel_sync() of the last kicks it and waits for its drain of
 * all of them, so the syncs after it find them settled (one wait, not one
 * per probe).
 */
static void ra_settle(struct tset *p)
{
	unsigned int i;

	if (p->fac == FAC_TWHEEL) {
		for (i = 0; i < PROBES; i++)
			twheel_cancel(&p->tw[i]);
		twheel_cancel_sync(&p->tw[PROBES - 1]);
	}
	tset_stop(p);
}

/* One timed pass of @op over the PROBES probes of @p; returns the ns. */
static u64 ra_pass(struct tset *p, unsigned int op, unsigned int from)
{
	unsigned int i, j;
	ktime_t t0;

	if (op == RA_REARM || op == RA_REARM_PIN)
		smp_call_function_single(peer_cpu, ra_arm_there, p, 1);
	t0 = ktime_get();
	for (i = from; i < from + PROBES; i++) {
		j = i % PROBES;
		switch (p->fac) {
		case FAC_TWHEEL:
			if (op == RA_ARM_AT)
				twheel_schedule_at(&p->tw[j],
						   t0 + xprobe_ns[i % DELAYS]);
			else
				twheel_schedule(&p->tw[j], xprobe_ns[i % DELAYS]);
			if (op == RA_ARM_CANCEL)
				twheel_cancel(&p->tw[j]);
			break;
		case FAC_TIMER_LIST:
			if (op == RA_REARM) {
				mod_timer(&p->tl[j], jiffies + xprobe_jif[i % DELAYS]);
				break;
			}
			p->tl[j].expires = jiffies + xprobe_jif[i % DELAYS];
			add_timer_on(&p->tl[j], peer_cpu);
			if (op == RA_ARM_CANCEL)
				timer_delete(&p->tl[j]);
			break;
		default:
			hrtimer_start(&p->hr[j], ns_to_ktime(xprobe_ns[i % DELAYS]),
				      HRTIMER_MODE_REL);
			break;
		}
	}
	t0 = ktime_get() - t0;
	ra_settle(p);
	return t0;
}

/* The owner's state for the "busy" rows: a task spinning on it. */
static int ra_spin(void *unused)
{
	unsigned int spins = 0;

	while (!kthread_should_stop()) {
		cpu_relax();
		if (!(++spins & 1023))
			cond_resched();
	}
	return 0;
}

/* Every pass of round @i: the times go to samples[facility][op][@i]. */
static void ra_round(struct remote_sets *rs, unsigned int i)
{
	unsigned int op, f;

	for (op = 0; op < NR_RA; op++)
		for (f = 0; f < NR_BASE_FACS; f++)
			if (rs->s[op][f])
				samples[f][op][i] = ra_pass(rs->s[op][f], op,
							    i * PROBES);
}

static void table2_remote(struct remote_sets *rs, unsigned int pending)
{
	static const char *const owner_state[] = { "idle", "busy" };
	/* Half of table 1's rounds: each pass also settles its probes. */
	unsigned int b, r, i, op, f, rounds = clamp(ops / PROBES / 2, 1U, MAX_SAMPLES);
	struct task_struct *spin = NULL;

	BUILD_BUG_ON((int)NR_RA > (int)NR_XS);

	for (b = 0; b < ARRAY_SIZE(owner_state) && !stopping(); b++) {
		if (b) {
			spin = kthread_create_on_cpu(ra_spin, NULL, peer_cpu,
						     "twheel_bench_spin/%u");
			if (IS_ERR(spin)) {
				pr_warn("table 2: no spinner on the owner CPU\n");
				return;
			}
			wake_up_process(spin);
		}
		msleep(20);	/* the owner settles: idle, or running the spinner */
		for (r = 0; r < reps && !stopping(); r++) {
			/* Facilities take turns pass by pass, as in table 1. */
			for (i = 0; i < rounds; i++) {
				ra_round(rs, i);
				cond_resched();
			}
			for (op = 0; op < NR_RA; op++)
				for (f = 0; f < NR_BASE_FACS; f++)
					if (rs->s[op][f])
						pr_info("table=2 facility=%s op=%s owner=%s pending=%u rep=%u ns_per_op=%s\n",
							fac_names[f], ra_names[op],
							owner_state[b], pending, r,
							fx(per10(median(samples[f][op], rounds),
								 PROBES)).s);
		}
		if (spin)
			kthread_stop(spin);
	}
}

static void remote_sets_free(struct remote_sets *rs)
{
	unsigned int op, f;

	for (op = 0; op < NR_RA; op++)
		for (f = 0; f < NR_BASE_FACS; f++) {
			tset_free(rs->s[op][f]);
			rs->s[op][f] = NULL;
		}
}

static int remote_sets_alloc(struct remote_sets *rs)
{
	unsigned int op, f, i;

	for (op = 0; op < NR_RA; op++)
		for (f = 0; f < NR_BASE_FACS; f++) {
			if (!ra_makes_sense(op, f))
				continue;
			rs->s[op][f] = tset_alloc(f, PROBES, 0);
			if (!rs->s[op][f]) {
				remote_sets_free(rs);
				return -ENOMEM;
			}
			/* Owned by peer_cpu for good: pinned there. */
			if (f == FAC_TWHEEL && op != RA_REARM)
				for (i = 0; i < PROBES; i++)
					twheel_timer_set_cpu(&rs->s[op][f]->tw[i],
							     peer_cpu);
		}
	return 0;
}

/* ---------------------------------------------------------------------
 * Tables 1 and 2 share the pending timers: for each count, arm that many
 * of each facility, then run both.
 */

static int tables12(void)
{
	static const unsigned int counts[] = { 1000, 10000, 100000, 1000000 };
	bool xcpu = (tables & BIT(1)) && peer_cpu != bench_cpu &&
		    cpu_online(peer_cpu);
	struct tset *bg[NR_FACS] = { NULL }, *probes[NR_FACS] = { NULL };
	unsigned int c, i, f;
	int ret = 0;

	if ((tables & BIT(1)) && !xcpu)
		pr_info("table=2 skipped=1 reason=peer_cpu_%d_not_usable\n", peer_cpu);
	if (tables & BIT(0))
		primitives();
	samples = kvcalloc(NR_FACS, sizeof(*samples), GFP_KERNEL);
	if (!samples)
		return -ENOMEM;
	for (i = 0; i < DELAYS; i++) {
		probe_ns[i] = rand_delay(PROBE_MIN_NS, PROBE_OCTAVES);
		probe_jif[i] = ns_to_jiffies_up(probe_ns[i]);
		xprobe_ns[i] = probe_ns[i] + XCPU_MIN_NS;
		xprobe_jif[i] = ns_to_jiffies_up(xprobe_ns[i]);
	}
	for (c = 0; c < ARRAY_SIZE(counts) && !ret && !stopping(); c++) {
		if (counts[c] > max_pending)
			break;
		for (f = 0; f < NR_FACS && !ret; f++) {
			probes[f] = tset_alloc(f, PROBES, 0);
			bg[f] = tset_alloc(f, counts[c], 0);
			if (!probes[f] || !bg[f])
				ret = -ENOMEM;
			else
				ret = tset_arm_random(bg[f], BG_MIN_NS,
						      BG_OCTAVES);
		}
		if (!ret && (tables & BIT(0)))
			table1(probes, counts[c]);
		if (!ret && xcpu && !remote_only)
			ret = table2(probes, counts[c]);
		/* Remote rows at the fewest and the most pending only. */
		if (!ret && xcpu && !stopping() &&
		    (!c || c + 1 == ARRAY_SIZE(counts) ||
		     counts[c + 1] > max_pending)) {
			struct remote_sets rs = { };

			ret = remote_sets_alloc(&rs);
			if (!ret)
				table2_remote(&rs, counts[c]);
			remote_sets_free(&rs);
		}
		for (f = 0; f < NR_FACS; f++) {
			tset_free(bg[f]);
			tset_free(probes[f]);
			bg[f] = NULL;
			probes[f] = NULL;
		}
	}
	kvfree(samples);
	samples = NULL;
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 3: many timers expiring in the same granule
 */

#define MAX_GAPS	32768	/* 2.2 s of a first repetition's wait, noisy host */

/*
 * Spin on this CPU until @s has fired completely, recording every gap
 * between two clock reads longer than GAP_NS. The loop goes round once
 * more after it saw the last callback, so the gap holding it is complete.
 */
static unsigned int watch_gaps(struct tset *s, ktime_t deadline,
			       struct gap *gaps)
{
	ktime_t now, prev = ktime_get();
	unsigned int ngaps = 0, spins = 0;
	bool done = false;

	for (;;) {
		now = ktime_get();
		if (now - prev > GAP_NS && ngaps < MAX_GAPS) {
			gaps[ngaps].from = prev;
			gaps[ngaps++].to = now;
		}
		prev = now;
		if (done)
			break;
		/* Pairs with the release in bench_note(). */
		done = atomic_read_acquire(&s->fired) >= s->n;
		if (!(++spins & 15) && now > deadline + 20 * NSEC_PER_SEC)
			break;
		cond_resched();
	}
	return ngaps;
}

/* Table 3: the waits between two callbacks, by kind (see the top). */
struct cb_gap_kinds {
	u64		run_max;	/* longest with the task away throughout */
	unsigned int	handoffs;	/* waits in which the task ran */
	u64		handoff_max;
	u64		handoff_p50;
	u64		task_p50;	/* the task's time in a hand-off */
};

/*
 * Sort @s's waits between callbacks by whether the watching task read the
 * clock in them: it did if one of its @gaps (both in time order) ended
 * inside the wait, and it ran from there to the start of its next gap.
 */
static void cb_gap_kinds(const struct tset *s, const struct gap *gaps,
			 unsigned int ngaps, struct cb_gap_kinds *k)
{
	unsigned int i, j = 0, g, n = min(s->ncb_gaps, CB_GAPS);
	u64 *len = kmalloc_array(2 * CB_GAPS, sizeof(*len), GFP_KERNEL);
	u64 *task = len + CB_GAPS;

	memset(k, 0, sizeof(*k));
	if (!len)
		return;
	for (i = 0; i < n; i++) {
		ktime_t from = s->cb_gaps[i].from, to = s->cb_gaps[i].to;
		u64 ran = 0;

		while (j < ngaps && gaps[j].to <= from)
			j++;
		for (g = j; g < ngaps && gaps[g].to < to; g++)
			ran += (g + 1 < ngaps ? min(gaps[g + 1].from, to) : to) -
			       gaps[g].to;
		if (!ran) {
			k->run_max = max_t(u64, k->run_max, to - from);
			continue;
		}
		len[k->handoffs] = to - from;
		task[k->handoffs++] = ran;
		k->handoff_max = max_t(u64, k->handoff_max, to - from);
	}
	k->handoff_p50 = median(len, k->handoffs);
	k->task_p50 = median(task, k->handoffs);
	kfree(len);
}

/* Table 3's spread rows: twheel with timer_list's slack, an eighth. */
#define SLACK_EIGHTH	U64_MAX

static const char *t3_name(enum bench_fac fac, u64 slack_ns)
{
	if (slack_ns == SLACK_EIGHTH)
		return "twheel_slack_eighth";
	return slack_ns ? "twheel_slack_jiffy" : fac_names[fac];
}

/*
 * Table 3's spread pattern, without timers: what a task spinning on this
 * CPU loses to everything else (its ticks, mostly) over @ns, in ns of
 * gaps per ms, and the local timer interrupts it took per second. The
 * facilities' rows take this rate times their expiry's span off their own
 * loss, which leaves what the timers cost ("net").
 */
static void table3_floor(u64 ns, u64 *busy_per_ms, u64 *irqs_per_s)
{
	ktime_t t0 = ktime_get(), prev = t0, now;
	u64 busy = 0, c0 = timer_irqs(raw_smp_processor_id());

	do {
		now = ktime_get();
		if (now - prev > GAP_NS)
			busy += now - prev;
		prev = now;
		cond_resched();
	} while (now - t0 < ns);
	*busy_per_ms = div64_u64(busy * NSEC_PER_MSEC, now - t0);
	*irqs_per_s = div64_u64((timer_irqs(raw_smp_processor_id()) - c0) *
				NSEC_PER_SEC, now - t0);
}

/*
 * Table 3's patterns: the burst (expire_count timers, one deadline); the
 * spread (spread_count timers, deadlines uniform over spread_ms); the
 * relative (spread_count timers, each armed for the same delay from its
 * own arming, as a loop of mod_timer(t, jiffies + d) does: deadlines
 * spread over the arming loop's time, a few granules of twheel's, one or
 * two jiffies of timer_list's); and the small burst (spread_count timers,
 * one deadline: the burst at a size that stays in the caches).
 */
enum t3_pattern { T3_BURST, T3_SPREAD, T3_RELATIVE, T3_SMALL };

static const char *const t3_patterns[] = {
	[T3_BURST] = "", [T3_SPREAD] = " pattern=spread",
	[T3_RELATIVE] = " pattern=relative", [T3_SMALL] = " pattern=small",
};

static int table3_rep(enum bench_fac fac, unsigned int rep, u64 *arm_est,
		      struct gap *gaps, enum t3_pattern pat, u64 slack_ns,
		      u64 floor_per_ms)
{
	u64 spread_ns = pat == T3_SPREAD ? (u64)spread_ms * NSEC_PER_MSEC : 0;
	u64 busy = 0, max_gap = 0, idle_gap = 0, len;
	unsigned int i, n = pat ? spread_count : expire_count, ngaps, fired;
	struct cb_gap_kinds kinds;
	ktime_t t0, deadline, first, last, from = 0, to = 0;
	unsigned long jdl;
	struct tset *s;
	u64 irqs;
	s64 net;

	/* twheel's own: its runs' time inside and its hrtimer programmings. */
	u64 run_ns0 = twheel_run_ns(raw_smp_processor_id());
	u64 progs0 = twheel_programs(raw_smp_processor_id());

	/* Pinned: they must expire where this task watches. */
	s = tset_alloc(fac, n, TSET_PINNED);
	if (!s)
		return -ENOMEM;
	tset_watch(s);
	t0 = ktime_get();
	deadline = t0 + 200 * NSEC_PER_MSEC + 2 * *arm_est;
	jdl = jiffies + ns_to_jiffies_up(deadline - ktime_get());
	for (i = 0; i < n; i++) {
		ktime_t d = deadline;

		/* Spread: uniform over [deadline, deadline + spread_ns). */
		if (spread_ns) {
			d += mul_u64_u32_shr(spread_ns, get_random_u32(), 32);
			jdl = jiffies + ns_to_jiffies_up(d - ktime_get());
		} else if (pat == T3_RELATIVE) {
			/* The same delay from now: the first's deadline. */
			d = ktime_get() + (deadline - t0);
			jdl = jiffies + ns_to_jiffies_up(deadline - t0);
		}
		switch (fac) {
		case FAC_TWHEEL:
			/*
			 * timer_list's own bound past its first level: an
			 * eighth of the delay, a jiffy at least.
			 */
			if (slack_ns == SLACK_EIGHTH)
				twheel_timer_set_slack(&s->tw[i],
						       max_t(u64, TICK_NSEC,
							     (d - ktime_get()) / 8));
			else if (slack_ns)
				twheel_timer_set_slack(&s->tw[i], slack_ns);
			twheel_schedule_at(&s->tw[i], d);
			break;
		case FAC_TIMER_LIST:
			mod_timer(&s->tl[i], jdl);
			break;
		default:
			hrtimer_start(&s->hr[i], d, HRTIMER_MODE_ABS_PINNED);
			break;
		}
		if (!(i & 1023))
			cond_resched();
	}
	*arm_est = ktime_get() - t0;

	irqs = timer_irqs(raw_smp_processor_id());
	ngaps = watch_gaps(s, deadline + spread_ns + *arm_est, gaps);
	irqs = timer_irqs(raw_smp_processor_id()) - irqs;
	fired = atomic_read(&s->fired);
	first = atomic64_read(&s->first);
	last = atomic64_read(&s->last);
	/* The expiry is every gap that overlaps first .. last callback. */
	for (i = 0; i < ngaps; i++) {
		len = gaps[i].to - gaps[i].from;
		if (!first || gaps[i].to < first) {
			idle_gap = max(idle_gap, len);
			continue;
		}
		if (gaps[i].from > last)
			continue;
		if (!from)
			from = gaps[i].from;
		to = gaps[i].to;
		busy += len;
		max_gap = max(max_gap, len);
	}
	/* Ordered after the callbacks' stores by the acquire of @fired. */
	cb_gap_kinds(s, gaps, ngaps, &kinds);
	/*
	 * Where a spread run's time goes: inside twheel's runs, or around;
	 * net of the floor (table3_floor()) over the expiry's span; the
	 * local timer interrupts from the end of the arming to the last
	 * callback; the waits of more than GAP_NS between two callbacks
	 * (one before each expiry pass, and the interrupts inside them).
	 */
	net = (s64)busy - (s64)div64_u64(floor_per_ms * (last - first),
					 NSEC_PER_MSEC);
	if (pat)
		pr_info("table=3 facility=%s%s item=net rep=%u net_ns_per_timer=%lld irqs_per_100_timers=%s waits_per_100_timers=%s\n",
			t3_name(fac, slack_ns), t3_patterns[pat], rep,
			div_s64(net, max_t(u32, fired, 1)),
			fx(per10(irqs * 100, fired)).s,
			fx(per10((u64)s->ncb_gaps * 100, fired)).s);
	if (pat && fac == FAC_TWHEEL)
		pr_info("table=3 facility=%s%s item=runs rep=%u inside_ns_per_timer=%s programs_per_100_timers=%s\n",
			t3_name(fac, slack_ns), t3_patterns[pat], rep,
			fx(per10(twheel_run_ns(raw_smp_processor_id()) - run_ns0,
				 fired)).s,
			fx(per10((twheel_programs(raw_smp_processor_id()) - progs0) *
				 100, fired)).s);
	pr_info("table=3 facility=%s%s timers=%u rep=%u ns_per_timer=%s max_run_us=%llu cb_gap_us=%llu span_us=%llu first_late_us=%lld idle_gap_us=%llu fired=%u away=%d gaps=%u setup_late=%d run_gap_us=%llu handoffs=%u handoff_max_us=%llu handoff_p50_us=%llu handoff_task_p50_us=%llu cb_gaps=%u\n",
		t3_name(fac, slack_ns), t3_patterns[pat], n, rep,
		fx(per10(busy, fired)).s, div_u64(max_gap, NSEC_PER_USEC),
		div_u64(s->max_cb_gap, NSEC_PER_USEC),
		div_u64(to - from, NSEC_PER_USEC),
		first ? div_s64(first - deadline, NSEC_PER_USEC) : -1,
		div_u64(idle_gap, NSEC_PER_USEC), fired, atomic_read(&s->away),
		ngaps, t0 + *arm_est > deadline,
		div_u64(kinds.run_max, NSEC_PER_USEC), kinds.handoffs,
		div_u64(kinds.handoff_max, NSEC_PER_USEC),
		div_u64(kinds.handoff_p50, NSEC_PER_USEC),
		div_u64(kinds.task_p50, NSEC_PER_USEC), s->ncb_gaps);
	tset_free(s);
	return fired < n ? -ETIMEDOUT : 0;
}

static int table3(void)
{
	u64 arm_est[NR_BASE_FACS + 2], rel_est[NR_BASE_FACS];
	u64 small_est[NR_BASE_FACS];
	unsigned int f, r;
	struct gap *gaps;
	int ret = 0;

	gaps = kvcalloc(MAX_GAPS, sizeof(*gaps), GFP_KERNEL);
	if (!gaps)
		return -ENOMEM;
	for (f = 0; f < NR_FACS; f++)
		arm_est[f] = NSEC_PER_SEC;
	/* Facilities alternate: a slow spell of the host hits all alike. */
	for (r = 0; r < reps && !ret && !stopping(); r++)
		for (f = 0; f < NR_BASE_FACS && !ret; f++)
			ret = table3_rep(f, r, &arm_est[f], gaps, T3_BURST, 0, 0);
	/* The spread pattern, its facilities alternating too. */
	for (f = 0; f < ARRAY_SIZE(arm_est); f++)
		arm_est[f] = NSEC_PER_SEC;
	for (f = 0; f < NR_BASE_FACS; f++) {
		rel_est[f] = NSEC_PER_SEC;
		small_est[f] = NSEC_PER_SEC;
	}
	for (r = 0; spread_ms && r < reps && !ret && !stopping(); r++) {
		u64 floor, irqs;

		table3_floor((u64)spread_ms * NSEC_PER_MSEC, &floor, &irqs);
		pr_info("table=3 facility=none pattern=spread item=floor rep=%u busy_ns_per_ms=%llu irqs_per_s=%llu\n",
			r, floor, irqs);
		for (f = 0; f < NR_BASE_FACS && !ret; f++)
			ret = table3_rep(f, r, &arm_est[f], gaps, T3_SPREAD, 0,
					 floor);
		for (f = 0; f < NR_BASE_FACS && !ret; f++)
			ret = table3_rep(f, r, &rel_est[f], gaps, T3_RELATIVE,
					 0, floor);
		for (f = 0; f < NR_BASE_FACS && !ret; f++)
			ret = table3_rep(f, r, &small_est[f], gaps, T3_SMALL,
					 0, floor);
		/*
		 * And twheel at timer_list's precision: a slack of a jiffy
		 * (timer_list's first level), which coalesces its timers on
		 * multiples of 2^k ticks, and of an eighth of the delay
		 * (timer_list's bound past its first level).
		 */
		if (!ret)
			ret = table3_rep(FAC_TWHEEL, r, &arm_est[NR_BASE_FACS],
					 gaps, T3_SPREAD, TICK_NSEC, floor);
		if (!ret)
			ret = table3_rep(FAC_TWHEEL, r,
					 &arm_est[NR_BASE_FACS + 1], gaps,
					 T3_SPREAD, SLACK_EIGHTH, floor);
	}
	kvfree(gaps);
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 4: lateness
 */

static int cmp_s64(const void *a, const void *b)
{
	s64 x = *(const s64 *)a, y = *(const s64 *)b;

	return x < y ? -1 : x > y;
}

static int table4_rep(enum bench_fac fac, unsigned int rep)
{
	unsigned int i, n = accuracy_count, early = 0;
	ktime_t now, wait_until;
	struct tset *s;
	u64 d;
	int ret = 0;

	s = tset_alloc(fac, n, TSET_TRACK);
	if (!s)
		return -ENOMEM;
	tset_watch(s);
	for (i = 0; i < n; i++) {
		d = rand_delay(ACC_MIN_NS, ACC_OCTAVES);
		now = ktime_get();
		s->deadline[i] = now + d;
		switch (fac) {
		case FAC_TWHEEL:
		case FAC_PRECISE:
		case FAC_PRECISE_HARD:
			twheel_schedule_at(&s->tw[i], s->deadline[i]);
			break;
		case FAC_TIMER_LIST:
			/* The usual idiom: now in jiffies, plus the delay rounded up. */
			mod_timer(&s->tl[i], jiffies + ns_to_jiffies_up(d));
			break;
		default:
			hrtimer_start(&s->hr[i], s->deadline[i],
				      HRTIMER_MODE_ABS | fac_hr_soft(fac));
			break;
		}
		if (!(i & 1023))
			cond_resched();
	}
	wait_until = ktime_get() + (ACC_MIN_NS << ACC_OCTAVES) + 10 * NSEC_PER_SEC;
	/* Pairs with the release in bench_note(). */
	while (atomic_read_acquire(&s->fired) < n) {
		if (ktime_get() > wait_until || READ_ONCE(bench_abort)) {
			ret = -ETIMEDOUT;
			break;
		}
		msleep(20);
	}
	tset_stop(s);
	WRITE_ONCE(watched, NULL);
	if (!ret) {
		sort(s->lat, n, sizeof(*s->lat), cmp_s64, NULL);
		for (i = 0; i < n; i++)
			early += s->lat[i] < 0;
		pr_info("table=4 facility=%s timers=%u rep=%u p50_us=%lld p99_us=%lld max_us=%lld min_us=%lld early=%u\n",
			fac_names[fac], n, rep,
			div_s64(s->lat[n / 2], NSEC_PER_USEC),
			div_s64(s->lat[(u64)n * 99 / 100], NSEC_PER_USEC),
			div_s64(s->lat[n - 1], NSEC_PER_USEC),
			div_s64(s->lat[0], NSEC_PER_USEC), early);
	}
	tset_free(s);
	return ret;
}

static int table4(void)
{
	unsigned int f, r;
	int ret = 0;

	for (r = 0; r < reps && !ret && !stopping(); r++)
		for (f = 0; f < NR_T4_FACS && !ret; f++)
			ret = table4_rep(f, r);
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 5: interrupts on an idle CPU
 */

static int arm_far(void *arg)
{
	return tset_arm_random(arg, FAR_MIN_NS, FAR_OCTAVES);
}

static int stop_all(void *arg)
{
	tset_stop(arg);
	return 0;
}

static struct hrtimer netty_tick;
static u64 netty_ticks;

static enum hrtimer_restart netty_fn(struct hrtimer *t)
{
	/* A wheel that ticks whether or not a bucket is due. */
	WRITE_ONCE(netty_ticks, netty_ticks + 1);
	hrtimer_forward_now(t, ns_to_ktime(twheel_granularity()));
	return HRTIMER_RESTART;
}

static int netty_start(void *unused)
{
	twheel_hrtimer_setup(&netty_tick, netty_fn, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED);
	hrtimer_start(&netty_tick, ns_to_ktime(twheel_granularity()),
		      HRTIMER_MODE_REL_PINNED);
	return 0;
}

static void table5_windows(const char *what, unsigned int timers)
{
	u64 c0, c1;
	ktime_t t0, t1;
	unsigned int r;

	msleep(300);	/* let the arming settle */
	for (r = 0; r < reps && !stopping(); r++) {
		c0 = timer_irqs(quiet_cpu);
		t0 = ktime_get();
		msleep(idle_ms);
		c1 = timer_irqs(quiet_cpu);
		t1 = ktime_get();
		pr_info("table=5 facility=%s timers=%u rep=%u irqs_per_s=%s\n",
			what, timers, r,
			fx(div64_u64((c1 - c0) * 10 * NSEC_PER_SEC, t1 - t0)).s);
	}
}

/*
 * Table 5, the spread rows: SPREAD_N timers due at random over one second
 * (from SPREAD_LEAD on), armed on the quiet CPU with a slack of
 * spread_slack ns (twheel_timer_set_slack(); hrtimer_start_range_ns(), as
 * a timerfd with that timer slack arms): how many interrupts the CPU takes
 * while they fire.
 */
#define SPREAD_N	10000
#define SPREAD_LEAD	(100 * NSEC_PER_MSEC)

struct spread {
	struct tset	*s;
	u64		slack;
	ktime_t		t0;
};

static int spread_arm(void *arg)
{
	struct spread *sp = arg;
	struct tset *s = sp->s;
	unsigned int i;
	ktime_t dl;

	if (fac_is_tw(s->fac))
		for (i = 0; i < s->n; i++)
			twheel_timer_set_slack(&s->tw[i], sp->slack);
	sp->t0 = ktime_get();
	for (i = 0; i < s->n; i++) {
		dl = sp->t0 + SPREAD_LEAD +
		     mul_u64_u32_shr(NSEC_PER_SEC, get_random_u32(), 32);
		if (fac_is_tw(s->fac))
			twheel_schedule_at(&s->tw[i], dl);
		else
			hrtimer_start_range_ns(&s->hr[i], dl, sp->slack,
					       HRTIMER_MODE_ABS_PINNED);
	}
	return 0;
}

static int table5_spread(void)
{
	static const struct {
		enum bench_fac fac;
		u64 slack;
	} rows[] = {
		{ FAC_TWHEEL, NSEC_PER_MSEC }, { FAC_HRTIMER, NSEC_PER_MSEC },
		{ FAC_PRECISE, 0 }, { FAC_HRTIMER, 0 },
	};
	struct spread sp;
	unsigned int r, i;
	ktime_t t1, until;
	u64 c0, c1;
	int ret = 0;

	for (r = 0; r < reps && !ret && !stopping(); r++) {
		for (i = 0; i < ARRAY_SIZE(rows) && !ret; i++) {
			sp.slack = rows[i].slack;
			sp.s = tset_alloc(rows[i].fac, SPREAD_N, 0);
			if (!sp.s)
				return -ENOMEM;
			sp.s->home = quiet_cpu;
			tset_watch(sp.s);
			msleep(50);
			c0 = timer_irqs(quiet_cpu);
			ret = run_on_cpu(quiet_cpu, spread_arm, &sp);
			until = sp.t0 + SPREAD_LEAD + 3 * NSEC_PER_SEC;
			/* Pairs with the release in bench_note(). */
			while (!ret && atomic_read_acquire(&sp.s->fired) < SPREAD_N) {
				if (ktime_get() > until || READ_ONCE(bench_abort)) {
					ret = -ETIMEDOUT;
					break;
				}
				msleep(20);
			}
			c1 = timer_irqs(quiet_cpu);
			t1 = ktime_get();
			if (!ret)
				pr_info("table=5 facility=%s spread=%u slack_ns=%llu rep=%u irqs=%llu seconds=%s away=%d\n",
					fac_names[rows[i].fac], SPREAD_N, rows[i].slack,
					r, c1 - c0,
					fx(div64_u64((t1 - sp.t0) * 10, NSEC_PER_SEC)).s,
					atomic_read(&sp.s->away));
			run_on_cpu(quiet_cpu, stop_all, sp.s);
			tset_free(sp.s);
		}
	}
	return ret;
}

static int table5(void)
{
	unsigned int f, n = min(max_pending, 1000000U);
	struct tset *s;
	int ret = 0;

	if (quiet_cpu == bench_cpu || !cpu_online(quiet_cpu)) {
		pr_info("table=5 skipped=1 reason=quiet_cpu_%d_not_usable\n", quiet_cpu);
		return 0;
	}
	table5_windows("none", 0);
	for (f = 0; f < NR_FACS && !ret && !stopping(); f++) {
		s = tset_alloc(f, n, 0);
		if (!s)
			return -ENOMEM;
		ret = run_on_cpu(quiet_cpu, arm_far, s);
		if (!ret)
			table5_windows(fac_names[f], n);
		/* Cancelled where they are held: quick for every facility. */
		run_on_cpu(quiet_cpu, stop_all, s);
		tset_free(s);
	}
	if (ret || stopping())
		return ret;
	ret = run_on_cpu(quiet_cpu, netty_start, NULL);
	if (!ret) {
		table5_windows("netty_tick", 0);
		hrtimer_cancel(&netty_tick);
	}
	if (!ret && !stopping())
		ret = table5_spread();
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 11: wake-ups of idle CPUs
 */

/*
 * One CPU (awake_cpu) kept busy by a task that spins, the others idle,
 * nothing runnable there: T11_KEEP keepalive timers, deadlines uniform
 * over T11_KEEP_MIN_NS .. T11_KEEP_MAX_NS and re-armed so from their
 * callback when they fire, and T11_PERIODIC timers of period
 * T11_PERIOD_NS, armed a quarter from each CPU. For t11_secs seconds,
 * per CPU: its exits from idle (the power:cpu_idle tracepoint, state
 * PWR_EVENT_EXIT), its local timer interrupts (LOC of /proc/interrupts)
 * and the callbacks that ran on it. A row without timers ("none") gives
 * the floor: the ticks and housekeeping of an idle system.
 */
#define T11_KEEP		10000
#define T11_PERIODIC		1000
#define T11_N			(T11_KEEP + T11_PERIODIC)
#define T11_KEEP_MIN_NS		(10 * NSEC_PER_MSEC)
#define T11_KEEP_MAX_NS		(10 * NSEC_PER_SEC)
#define T11_PERIOD_NS		(100 * NSEC_PER_MSEC)
#define T11_SETTLE_MS		1000

/*
 * twheel's rows: its timers as they come (movable), pinned to the CPU that
 * arms them (TWHEEL_THIS_CPU, what every twheel timer was before issue 43),
 * and movable with a slack of a tenth of each delay (coalesced).
 */
enum t11_fac {
	T11_NONE, T11_TWHEEL, T11_TWHEEL_PINNED, T11_TWHEEL_SLACK,
	T11_TIMER_LIST, T11_TIMER_LIST_PINNED, T11_HRTIMER, NR_T11
};

static const char *const t11_names[NR_T11] = {
	[T11_NONE] = "none",
	[T11_TWHEEL] = "twheel",
	[T11_TWHEEL_PINNED] = "twheel_pinned",
	[T11_TWHEEL_SLACK] = "twheel_slack10",
	[T11_TIMER_LIST] = "timer_list",
	[T11_TIMER_LIST_PINNED] = "timer_list_pinned",
	[T11_HRTIMER] = "hrtimer",
};

union t11_timer {
	struct twheel_periodic_timer	tw;
	struct timer_list		tl;
	struct hrtimer			hr;
};

static union t11_timer *t11_timers;
static bool t11_live;			/* callbacks re-arm while set */
static bool t11_slack;			/* twheel's armings take 10% slack */
static DEFINE_PER_CPU(unsigned long, t11_wakeups);
static DEFINE_PER_CPU(unsigned long, t11_fired);
/*
 * twheel's callbacks' lateness (end of the deadline to the callback), in
 * buckets of T11_LATE_STEP_NS, the last one open; and the early ones.
 */
#define T11_LATE_STEP_NS	(100 * NSEC_PER_USEC)
#define T11_LATE_BUCKETS	256
static DEFINE_PER_CPU(unsigned long [T11_LATE_BUCKETS], t11_late);
static DEFINE_PER_CPU(unsigned long, t11_early);

/* power:cpu_idle: a CPU leaves idle (every kernel here: state, cpu_id). */
static void t11_idle_probe(void *data, unsigned int state, unsigned int cpu)
{
	if (state == PWR_EVENT_EXIT)
		this_cpu_inc(t11_wakeups);
}

static u64 t11_delay(void)
{
	return T11_KEEP_MIN_NS +
	       mul_u64_u32_shr(T11_KEEP_MAX_NS - T11_KEEP_MIN_NS,
			       get_random_u32(), 32);
}

/* Index of @p, a member of t11_timers[]: below T11_KEEP a keepalive. */
static unsigned long t11_index(const void *p)
{
	return ((const char *)p - (const char *)t11_timers) / sizeof(*t11_timers);
}

static void t11_tw_fn(struct twheel_timer *t, u64 missed)
{
	s64 late = ktime_get() - twheel_deadline(t);

	this_cpu_inc(t11_fired);
	if (late < 0)
		this_cpu_inc(t11_early);
	else
		this_cpu_inc(t11_late[min_t(u64, div_u64(late, T11_LATE_STEP_NS),
					    T11_LATE_BUCKETS - 1)]);
	/* A keepalive: re-armed from its callback; the periodic ones rearm. */
	if (t11_index(t) < T11_KEEP && READ_ONCE(t11_live)) {
		u64 delay = t11_delay();

		if (t11_slack)
			twheel_timer_set_slack(t, delay / 10);
		twheel_schedule(t, delay);
	}
}

static void t11_tl_fn(struct timer_list *t)
{
	this_cpu_inc(t11_fired);
	if (!READ_ONCE(t11_live))
		return;
	if (t11_index(t) < T11_KEEP)
		mod_timer(t, jiffies + ns_to_jiffies_up(t11_delay()));
	else
		mod_timer(t, t->expires + ns_to_jiffies_up(T11_PERIOD_NS));
}

static enum hrtimer_restart t11_hr_fn(struct hrtimer *t)
{
	this_cpu_inc(t11_fired);
	if (!READ_ONCE(t11_live))
		return HRTIMER_NORESTART;
	if (t11_index(t) < T11_KEEP)
		hrtimer_forward_now(t, ns_to_ktime(t11_delay()));
	else
		hrtimer_forward(t, hrtimer_get_expires(t), ns_to_ktime(T11_PERIOD_NS));
	return HRTIMER_RESTART;
}

struct t11_arm {
	enum t11_fac	fac;
	unsigned int	part;		/* this CPU's share: i % parts == part */
	unsigned int	parts;
};

/* On each CPU in turn: arm its share of the keepalives and periodic timers. */
static int t11_arm_fn(void *arg)
{
	const struct t11_arm *a = arg;
	unsigned int i;
	u64 delay;

	for (i = a->part; i < T11_N; i += a->parts) {
		union t11_timer *x = &t11_timers[i];

		delay = i < T11_KEEP ? t11_delay() :
			1 + mul_u64_u32_shr(T11_PERIOD_NS, get_random_u32(), 32);
		switch (a->fac) {
		case T11_TWHEEL:
		case T11_TWHEEL_PINNED:
		case T11_TWHEEL_SLACK:
			if (t11_slack)
				twheel_timer_set_slack(&x->tw.timer,
						       i < T11_KEEP ? delay / 10 :
						       T11_PERIOD_NS / 10);
			if (i < T11_KEEP)
				twheel_schedule(&x->tw.timer, delay);
			else
				twheel_arm(&x->tw.timer, ktime_get() + delay,
					   T11_PERIOD_NS, TWHEEL_FIXED_RATE);
			break;
		case T11_TIMER_LIST:
		case T11_TIMER_LIST_PINNED:
			mod_timer(&x->tl, jiffies + ns_to_jiffies_up(delay));
			break;
		case T11_HRTIMER:
			hrtimer_start(&x->hr, ns_to_ktime(delay), HRTIMER_MODE_REL);
			break;
		default:
			break;
		}
		if (!(i & 1023))
			cond_resched();
	}
	return 0;
}

struct t11_count {
	unsigned long	wakeups[NR_CPUS];
	unsigned long	fired[NR_CPUS];
	u64		loc[NR_CPUS];
	unsigned long	late[T11_LATE_BUCKETS];	/* all CPUs' */
	unsigned long	early;
};

static void t11_snap(struct t11_count *c)
{
	unsigned int b;
	int cpu;

	for_each_online_cpu(cpu) {
		c->wakeups[cpu] = per_cpu(t11_wakeups, cpu);
		c->fired[cpu] = per_cpu(t11_fired, cpu);
		c->loc[cpu] = timer_irqs(cpu);
		for (b = 0; b < T11_LATE_BUCKETS; b++)
			c->late[b] += per_cpu(t11_late, cpu)[b];
		c->early += per_cpu(t11_early, cpu);
	}
}

struct t11_watch {
	struct t11_count	c0;
	struct t11_count	c1;
	ktime_t			t0;
	ktime_t			t1;
};

/*
 * The lateness below which @frac_pm per mille of twheel's callbacks of
 * the counted interval ran, µs: the upper end of its bucket.
 */
static unsigned long t11_late_us(const struct t11_watch *w, unsigned int frac_pm)
{
	unsigned long n = 0, seen = 0, need;
	unsigned int b;

	for (b = 0; b < T11_LATE_BUCKETS; b++)
		n += w->c1.late[b] - w->c0.late[b];
	if (!n)
		return 0;
	need = DIV_ROUND_UP(n * frac_pm, 1000);
	for (b = 0; b < T11_LATE_BUCKETS; b++) {
		seen += w->c1.late[b] - w->c0.late[b];
		if (seen >= need)
			break;
	}
	return (b + 1) * (T11_LATE_STEP_NS / NSEC_PER_USEC);
}

/*
 * On awake_cpu: spin (with cond_resched(), so that softirqs, kworkers
 * and the callbacks pulled here still run) through the settling time and
 * the counted interval, snapshotting the counts at both ends of it.
 */
static int t11_spin(void *arg)
{
	struct t11_watch *w = arg;
	ktime_t until = ktime_add_ms(ktime_get(), T11_SETTLE_MS);

	while (ktime_get() < until && !READ_ONCE(bench_abort))
		cond_resched();
	t11_snap(&w->c0);
	w->t0 = ktime_get();
	until = w->t0 + (u64)t11_secs * NSEC_PER_SEC;
	while (ktime_get() < until && !READ_ONCE(bench_abort))
		cond_resched();
	t11_snap(&w->c1);
	w->t1 = ktime_get();
	return 0;
}

static void t11_init(enum t11_fac fac)
{
	unsigned int i;

	for (i = 0; i < T11_N; i++) {
		union t11_timer *x = &t11_timers[i];

		switch (fac) {
		case T11_TWHEEL:
		case T11_TWHEEL_PINNED:
		case T11_TWHEEL_SLACK:
			twheel_periodic_timer_init(&x->tw, t11_tw_fn);
			if (fac == T11_TWHEEL_PINNED)
				twheel_timer_set_cpu(&x->tw.timer, TWHEEL_THIS_CPU);
			break;
		case T11_TIMER_LIST:
		case T11_TIMER_LIST_PINNED:
			timer_setup(&x->tl, t11_tl_fn,
				    fac == T11_TIMER_LIST_PINNED ? TIMER_PINNED : 0);
			break;
		case T11_HRTIMER:
			twheel_hrtimer_setup(&x->hr, t11_hr_fn, CLOCK_MONOTONIC,
					     HRTIMER_MODE_REL);
			break;
		default:
			break;
		}
	}
}

static void t11_stop(enum t11_fac fac)
{
	unsigned int i, pass;

	WRITE_ONCE(t11_live, false);
	/* Twice: a callback that saw t11_live set may re-arm during the first. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < T11_N; i++) {
			union t11_timer *x = &t11_timers[i];

			switch (fac) {
			case T11_TWHEEL:
			case T11_TWHEEL_PINNED:
			case T11_TWHEEL_SLACK:
				twheel_cancel_sync(&x->tw.timer);
				break;
			case T11_TIMER_LIST:
			case T11_TIMER_LIST_PINNED:
				timer_delete_sync(&x->tl);
				break;
			case T11_HRTIMER:
				hrtimer_cancel(&x->hr);
				break;
			default:
				break;
			}
			if (!(i & 1023))
				cond_resched();
		}
	}
}

static int table11_row(enum t11_fac fac, unsigned int rep)
{
	struct t11_arm a = { .fac = fac, .parts = num_online_cpus() };
	struct t11_watch *w = kvzalloc(sizeof(*w), GFP_KERNEL);
	unsigned long wk, fired, idle_wk = 0, idle_fired = 0, all_fired = 0;
	u64 loc, idle_loc = 0, secs10;
	int cpu, ret = 0;

	if (!w)
		return -ENOMEM;
	memset(t11_timers, 0, T11_N * sizeof(*t11_timers));
	t11_slack = fac == T11_TWHEEL_SLACK;
	t11_init(fac);
	WRITE_ONCE(t11_live, true);
	a.part = 0;
	for_each_online_cpu(cpu) {
		ret = run_on_cpu(cpu, t11_arm_fn, &a);
		if (ret)
			break;
		a.part++;
	}
	if (!ret)
		ret = run_on_cpu(awake_cpu, t11_spin, w);
	t11_stop(fac);
	if (ret || READ_ONCE(bench_abort))
		goto out;
	secs10 = div64_u64((w->t1 - w->t0) * 10, NSEC_PER_SEC);
	for_each_online_cpu(cpu) {
		wk = w->c1.wakeups[cpu] - w->c0.wakeups[cpu];
		fired = w->c1.fired[cpu] - w->c0.fired[cpu];
		loc = w->c1.loc[cpu] - w->c0.loc[cpu];
		all_fired += fired;
		if (cpu != awake_cpu) {
			idle_wk += wk;
			idle_loc += loc;
			idle_fired += fired;
		}
		pr_info("table=11 facility=%s cpu=%d rep=%u awake=%d wakeups=%lu loc=%llu fired=%lu seconds=%s\n",
			t11_names[fac], cpu, rep, cpu == awake_cpu, wk, loc,
			fired, fx(secs10).s);
	}
	pr_info("table=11 facility=%s cpu=idle rep=%u cpus=%u wakeups=%lu loc=%llu fired=%lu all_fired=%lu seconds=%s wakeups_per_s=%s\n",
		t11_names[fac], rep, num_online_cpus() - 1, idle_wk, idle_loc,
		idle_fired, all_fired, fx(secs10).s,
		fx(per10(idle_wk * 10, secs10)).s);
	/* twheel's callbacks: how late, on whichever CPU they ran. */
	if (fac == T11_TWHEEL || fac == T11_TWHEEL_PINNED ||
	    fac == T11_TWHEEL_SLACK)
		pr_info("table=11 facility=%s item=lateness rep=%u late_p50_us=%lu late_p99_us=%lu late_max_us=%lu early=%lu\n",
			t11_names[fac], rep, t11_late_us(w, 500),
			t11_late_us(w, 990), t11_late_us(w, 1000),
			w->c1.early - w->c0.early);
out:
	kvfree(w);
	return ret;
}

static int table11(void)
{
	unsigned int r, f;
	int ret;

	if (awake_cpu < 0 || awake_cpu >= nr_cpu_ids || !cpu_online(awake_cpu) ||
	    num_online_cpus() < 2) {
		pr_info("table=11 skipped=1 reason=awake_cpu_%d_not_usable\n", awake_cpu);
		return 0;
	}
	t11_timers = kvcalloc(T11_N, sizeof(*t11_timers), GFP_KERNEL);
	if (!t11_timers)
		return -ENOMEM;
	ret = register_trace_cpu_idle(t11_idle_probe, NULL);
	if (ret)
		goto out_free;
	/* Rows alternate within each repetition: drift hits all alike. */
	for (r = 0; r < reps && !ret && !stopping(); r++)
		for (f = 0; f < NR_T11 && !ret && !stopping(); f++)
			ret = table11_row(f, r);
	unregister_trace_cpu_idle(t11_idle_probe, NULL);
	tracepoint_synchronize_unregister();
out_free:
	kvfree(t11_timers);
	t11_timers = NULL;
	return ret;
}

/* ---------------------------------------------------------------------
 * Table 6: memory
 */

static long slab_bytes(void)
{
	return (global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B) +
		global_node_page_state_pages(NR_SLAB_RECLAIMABLE_B)) << PAGE_SHIFT;
}

static int table6_fac(enum bench_fac fac)
{
	unsigned int i, n = mem_count, done = 0;
	size_t size = fac_size(fac);
	long s0, s1, s2;
	void **t;
	int ret = 0;

	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	s0 = slab_bytes();
	for (; done < n; done++) {
		t[done] = kmalloc(size, GFP_KERNEL);
		if (!t[done]) {
			ret = -ENOMEM;
			break;
		}
		fac_init(fac, t[done], false);
		if (!(done & 4095))
			cond_resched();
	}
	s1 = slab_bytes();
	for (i = 0; i < done; i++) {
		fac_arm_rel(fac, t[i], rand_delay(FAR_MIN_NS, FAR_OCTAVES));
		if (!(i & 4095))
			cond_resched();
	}
	s2 = slab_bytes();
	for (i = 0; i < done; i++) {
		fac_stop(fac, t[i]);
		kfree(t[i]);
		if (!(i & 4095))
			cond_resched();
	}
	kvfree(t);
	if (ret)
		return ret;
	pr_info("table=6 facility=%s timers=%u rep=0 sizeof=%zu slab_object=%zu slab_per_timer=%lld armed_extra=%lld\n",
		fac_names[fac], n, size, kmalloc_size_roundup(size),
		div_s64(s1 - s0 + n / 2, n), div_s64(s2 - s1, n));
	return 0;
}

static int table6(void)
{
	unsigned int f;
	int ret = 0;

	pr_info("table=6 facility=twheel_work_timer rep=0 sizeof=%zu slab_object=%zu\n",
		sizeof(struct twheel_work_timer),
		kmalloc_size_roundup(sizeof(struct twheel_work_timer)));
	pr_info("table=6 facility=hrtimer item=percpu rep=0 bytes=%zu\n",
		sizeof(struct hrtimer_cpu_base));
	for (f = 0; f < NR_BASE_FACS && !ret && !stopping(); f++)
		ret = table6_fac(f);
	return ret;
}

/* ---------------------------------------------------------------------
 * The run
 */

static int runner_thread(void *unused)
{
	static const struct {
		unsigned int mask;
		int (*fn)(void);
	} steps[] = {
		{ BIT(0) | BIT(1), tables12 },
		{ BIT(2), table3 },
		{ BIT(3), table4 },
		{ BIT(4), table5 },
		{ BIT(5), table6 },
		{ BIT(10), table11 },
	};
	ktime_t t0 = ktime_get();
	unsigned int i;
	int ret;

	pr_info("table=0 rep=0 cpus=%u hz=%u granularity_ns=%lld cpu=%d peer_cpu=%d quiet_cpu=%d reps=%u ops=%u\n",
		num_online_cpus(), HZ, ktime_to_ns(twheel_granularity()),
		bench_cpu, peer_cpu, quiet_cpu, reps, ops);
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		if (!(tables & steps[i].mask) || stopping())
			continue;
		ret = steps[i].fn();
		if (ret)
			pr_warn("step %u failed: %d\n", i + 1, ret);
	}
	pr_info("table=0 rep=0 done=1 cut_short=%d stray_callbacks=%ld seconds=%lld\n",
		bench_cut, atomic_long_read(&stray),
		div_s64(ktime_get() - t0, NSEC_PER_SEC));
	kthread_complete_and_exit(&runner_done, 0);
}

static int __init twheel_bench_init(void)
{
	struct task_struct *t;
	int ret;

	if (!reps || reps > 50 || !ops || !expire_count || !accuracy_count ||
	    !mem_count || !idle_ms || bench_cpu < 0 ||
	    bench_cpu >= nr_cpu_ids || !cpu_online(bench_cpu) ||
	    peer_cpu < 0 || peer_cpu >= nr_cpu_ids ||
	    quiet_cpu < 0 || quiet_cpu >= nr_cpu_ids) {
		pr_err("invalid parameters (see modinfo twheel_bench)\n");
		return -EINVAL;
	}
	bench_deadline = ktime_get() + (u64)time_limit * NSEC_PER_SEC;
	t = kthread_create_on_cpu(runner_thread, NULL, bench_cpu,
				  "twheel_bench/%u");
	if (IS_ERR(t))
		return PTR_ERR(t);
	wake_up_process(t);
	ret = wait_for_completion_interruptible(&runner_done);
	if (ret) {
		/* Interrupted: the runner stops at its next check and cleans up. */
		WRITE_ONCE(bench_abort, true);
		wait_for_completion(&runner_done);
		return -EINTR;
	}
	return 0;
}

static void __exit twheel_bench_exit(void)
{
	/* Nothing is left: every table frees what it armed before returning. */
}

module_init(twheel_bench_init);
module_exit(twheel_bench_exit);
MODULE_DESCRIPTION("twheel benchmarks against timer_list and hrtimer");
MODULE_LICENSE("GPL");
