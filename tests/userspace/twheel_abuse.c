// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_abuse: what one local user can cost the machine through
 * /dev/twheel (mode 0666), measured in the VM by tests/vm/guest/run.sh.
 * Each mode prints its figures as "# " lines and exits 0 if the bound
 * holds, 1 if not, 2 if it could not run.
 *
 *   twheel_abuse cpu [TIMERS]
 *	As uid 65534, once the guest is quiet (kernel_quiet()): a busy loop
 *	on every CPU, 7 rounds of 1 s without and 1 s with TIMERS
 *	(default 1000) periodic timers of a 1 ns period armed from every CPU
 *	and never read. twheel may run at most 2 callbacks per timer in a
 *	round (lazy re-arming), its timed work (debugfs twheel/stats'
 *	advance_ns and expire_ns) at most 2% of each CPU in the loaded
 *	phases, and each CPU's loop must keep at least 90% of the share of
 *	the ticks it had alone, in its median round; 75% where its rounds
 *	spread over 20 points (the debug guest beside a kernel build saw
 *	64-144% with twheel running no callback and no timed work in the
 *	loaded phases: the host's scheduling of vCPUs, not the guest's).
 *   twheel_abuse user-cap
 *	As uid 65534: fill files until the per-user cap refuses a timer with
 *	EDQUOT, once INFO.user_timers (a timer counts one unit, a page of a
 *	file's timer table PAGE_SIZE / 256) is within one timer and one
 *	table page of INFO.max_user_timers; another uid is unaffected;
 *	the count goes back to 0 within 120 s of closing the files, or 4
 *	times the filling's time if longer (a file of more than 1024
 *	objects is freed after close()). Then, as root,
 *	the global cap refuses with EAGAIN. Prints the timers and the bytes
 *	(MemAvailable) one uid could pin.
 *   twheel_abuse userns-cap
 *	As root: max_user_timers lowered to 2000, and a user namespace made
 *	by uid 4321 whose uids 1, 2 and 3 each fill a file until refused:
 *	they are charged to its owner too (struct twheel_user::owner), so
 *	all three together hold at most 2000 timers, not 2000 each, and the
 *	first gets within a timer and a table page of it.
 *   twheel_abuse close N
 *	One file holding N far-future timers is closed, by uid 65534 if N
 *	is within max_timers, else by root after raising it; prints how long
 *	the close took and, when the irqsoff tracer is on, the longest
 *	interrupts-off section seen meanwhile (in us).
 *   twheel_abuse burst [N [GAP_MS]]
 *	As uid 65534: N (default 65536) one-shot timers due at one deadline
 *	on CPU 0's wheel, never read, while root's SCHED_FIFO thread on CPU 0
 *	sleeps 1 ms at a time. Its longest gap must stay within 100 ms on
 *	every kernel (the softirq's runs are bounded by run_budget_us and
 *	then wait for the CPU's SCHED_OTHER work), plus twice the longest gap
 *	of a control sampler on CPU 2, which holds no timers: under emulation
 *	on a busy host a vCPU can go unscheduled for longer than the bound.
 *	GAP_MS replaces the 100; 0 only reports the gap. Then the file, with its N
 *	records queued, is closed: that must take at most 2 s on every
 *	kernel (the objects are freed after close() returns, see chardev.c).
 *   twheel_abuse burst-others [N]
 *	As root, issue 42's burst goal: uid 65534's N (default 65536)
 *	one-shot timers due at one deadline D on CPU 0's wheel, a SCHED_FIFO
 *	thread spinning on CPU 0 from D - 10 ms until 50 ms after the last
 *	of uid 65533's 100 one-shot timers of the default slack on the same
 *	wheel, due every 2 ms from a level-0 revolution and two ticks after
 *	D (66 ms by default: past the level-1 bucket that moves down with
 *	the burst). Five rounds with the burst alternate
 *	with five without; the victim's lateness (its records' fired -
 *	deadline), median and p99 of the median round, must stay within two
 *	granules of the rounds without, none early or lost; so must those of
 *	an in-kernel consumer's 100 timers set to CPU 0 and due with them
 *	(tests/twheel_stall.ko, when loaded). Before 6.12, a
 *	round in which ksoftirqd/0 was runnable under the spinner is run
 *	again: the kernel had left CPU 0's softirqs to it, and the spinner
 *	starves them all, burst or not; past 10 such rounds, and on
 *	PREEMPT_RT (soft hrtimers expire in a thread the spinner outranks),
 *	exit 77.
 *   twheel_abuse ring-cgroup
 *	As root, in cgroup v2 (mounted if need be; exit 77 without its cpu
 *	controller): uid 65534 in a cgroup with cpu.max "20000 200000" keeps
 *	16 submission rings full (512 ARMs of distinct slots each, every
 *	millisecond; RING_ENTER only on NEED_WAKEUP), and uid 65533 in
 *	another cgroup runs a busy loop, all on CPU 1. Five attack phases
 *	of 2 s alternate with six control phases (the attacker stopped),
 *	after the guest's kernel work has quieted down (at most 30 s). The
 *	attacker's CPU time over the attack phases, its cgroup's usage_usec
 *	(its rings' poller threads included) plus the kworkers' time beyond
 *	their rate in the control phases (others' work: a file of an earlier
 *	test being freed, kmemleak), must be within 12% of one CPU, and the
 *	busy loop must keep 85% of its control CPU time: the median, over
 *	the attack phases, of its CPU time against the mean of the control
 *	phases either side, so that a host whose speed drifts moves both
 *	alike. Where a plain busy loop under the same cpu.max on CPU 2 was
 *	let use more than 10% (the guest's CFS charges a task for the time
 *	the host takes its vCPU away), the attacker's bound is that loop's
 *	share plus 2%, and the victim's 85% falls by as much as that bound
 *	rose above 12%: what the attacker may take, the victim may lose.
 *   twheel_abuse modify [TIMERS [MS]]
 *	As uid 65534: a storm of MODIFYs (batches of TIMERS, default 4096)
 *	from CPU 1 for MS ms (default 500) at a time, 8 times, on timers armed from
 *	CPU 0 (held by CPU 0's wheel), against the same storm on timers armed
 *	from CPU 1 itself. A busy loop pinned on CPU 0 counts its iterations
 *	meanwhile; the storm on CPU 0's timers must leave it at least 90% of
 *	what it keeps under the storm on CPU 1's own timers: one user's
 *	operations are paid on its CPU. The two storms alternate, so that
 *	drift of the host's load falls on both alike, and no third loop runs:
 *	under emulation on a host with fewer cores than busy virtual CPUs,
 *	which two share a core would decide the figures.
 *   twheel_abuse precise
 *	Issue 42: one user's share of a CPU's precise heap. Uid 65534 arms
 *	4096 one-shot slack-0 timers from CPU 1 due 1.95 ticks after a tick
 *	B, and uid 65533 10 slack-0 timers due between B + 1.2 ticks and
 *	B + 1.85: the run at B moves all of them to CPU 1's precise stage,
 *	in the order they were linked (more than 4096 due in one tick are
 *	not sorted). In an attack round the attacker arms first and takes
 *	what the heap gives it (its share, precise_per_user, 1024; before
 *	the share, all 4096); in a control round the victim arms first:
 *	the same timers, the same run, no heap taken from it. 30 rounds of
 *	each, alternating. The attacked victim's median lateness, and its
 *	p99 as the median round's latest timer, must stay within 1.2x the
 *	control's plus a twentieth of a tick, and no victim timer may fire
 *	early.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/utsname.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tw_util.h"

#define NOBODY		65534
#define OTHER_UID	65533
#define MAX_CPUS	64
#define BATCH		4096
#define FAR_NS		(3600ULL * 1000000000ULL)
#define TRACING		"/sys/kernel/tracing"
#define PARAMS		"/sys/module/twheel/parameters"

static void become(uid_t uid)
{
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
		printf("# setuid(%u): %s\n", uid, strerror(errno));
		exit(2);
	}
}

static void die(const char *what, int r)
{
	printf("# %s: %s\n", what, strerror(-r));
	exit(2);
}

static void tw_open(struct twheel *tw)
{
	int r = twheel_open(tw, 0);

	if (r)
		die("open " TWHEEL_DEVICE, r);
}

static struct twheel_info info_of(struct twheel *tw)
{
	struct twheel_info info;
	int r = twheel_get_info(tw, &info);

	if (r)
		die("INFO", r);
	return info;
}

/*
 * Schedule up to @n timers on @tw in batches, each with @value, @period
 * and @flags. Return how many were scheduled; *@err gets the errno of the
 * op that stopped it, 0 if none did.
 */
static uint64_t fill_ops(struct twheel *tw, uint64_t n, uint64_t value,
			 uint64_t period, unsigned int flags, int *err)
{
	static struct twheel_sqbuf sq;
	uint64_t done = 0;
	int r;

	*err = 0;
	if (!sq.ops && (r = twheel_sqbuf_init(&sq, BATCH)))
		die("twheel_sqbuf_init", r);
	while (done < n) {
		uint32_t k = n - done < BATCH ? (uint32_t)(n - done) : BATCH;

		twheel_sqbuf_reset(&sq);
		for (uint32_t i = 0; i < k; i++)
			twheel_sqbuf_schedule(&sq, value, period, flags, 0);
		r = twheel_submit(tw, &sq);
		if (r < 0) {
			*err = -r;
			return done;
		}
		done += (uint64_t)r;
		if ((uint32_t)r < k) {
			*err = -sq.ops[r].result;
			return done;
		}
	}
	return done;
}

/*
 * Schedule up to @n timers, each far in the future, or periodic with
 * @period from now: as fill_ops().
 */
static uint64_t fill(struct twheel *tw, uint64_t n, uint64_t period, int *err)
{
	return fill_ops(tw, n, period ? 0 : FAR_NS, period,
			period ? TWHEEL_TIMER_PERIODIC : 0, err);
}

static long meminfo_kb(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

static int write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(val, f) < 0 ? -1 : 0;
	return fclose(f) || ret ? -1 : 0;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* ---- cpu: busy loops against unread short-period timers ---- */

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static atomic_int busy_stop;
static uint64_t busy_count[MAX_CPUS];

static void *busy_thread(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;
	uint64_t n = 0, x = 0;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++) {
			x += (uint64_t)i;
			/* Keeps the loop: the compiler may not fold it. */
			__asm__ __volatile__("" : "+r"(x));
		}
		n++;
	}
	busy_count[cpu] = n;
	return NULL;
}

/* Per-CPU ticks from /proc/stat: [0] user (and nice), [1] all. */
static void cpu_ticks(int ncpu, uint64_t (*t)[2])
{
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	memset(t, 0, sizeof(*t) * (size_t)ncpu);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[10] = { 0 };
		int cpu;

		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu",
			   &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]) < 9 || cpu < 0 || cpu >= ncpu)
			continue;
		t[cpu][0] = v[0] + v[1];
		for (int i = 0; i < 8; i++)
			t[cpu][1] += v[i];
	}
	fclose(f);
}

static long long kthreads_us(void);

/* The guest's system, irq and softirq time, all CPUs, in microseconds. */
static long long kernel_us(void)
{
	long long hz = sysconf(_SC_CLK_TCK), v = -1;
	unsigned long long s[7];
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f) &&
	    sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu", &s[0], &s[1],
		   &s[2], &s[3], &s[4], &s[5], &s[6]) == 7)
		v = (long long)(s[2] + s[5] + s[6]) * 1000000 / hz;
	fclose(f);
	return v;
}

#define QUIET_WIN_MS	500
#define QUIET_STEADY_US	10000	/* 2% of one CPU per window */

/*
 * Waits until the kernel's work left over from earlier tests has died
 * down: closing a file of 65,536 timers leaves seconds of RCU callbacks
 * and kworker time behind it (more under KASAN and kmemleak), which
 * would land in whichever phase of a measurement comes first. Quiet is
 * two windows of QUIET_WIN_MS in a row whose kernel time (system, irq
 * and softirq, all CPUs: kworkers included) differs by at most 2% of one
 * CPU or a fifth, whichever is more, with the kworkers under 2%: left-over
 * work dies down, an idle guest's own (its ticks, which under emulation on
 * a busy host can cost a tenth of each CPU) holds steady. At most @max_s
 * seconds. Returns the milliseconds waited, -1 if the guest never got
 * quiet; @last: the last window's kernel time, in % of a CPU.
 */
static long kernel_quiet(int max_s, double *last)
{
	long long prev = -1;

	for (int w = 0; w < max_s * 1000 / QUIET_WIN_MS; w++) {
		long long k0 = kthreads_us(), s0 = kernel_us(), k, sum, tol;

		usleep(QUIET_WIN_MS * 1000);
		k = kthreads_us() - k0;
		sum = kernel_us() - s0;
		*last = (double)sum * 100 / (QUIET_WIN_MS * 1000);
		tol = prev / 5 > QUIET_STEADY_US ? prev / 5 : QUIET_STEADY_US;
		if (prev >= 0 && k < QUIET_STEADY_US && llabs(sum - prev) <= tol)
			return (long)(w + 1) * QUIET_WIN_MS;
		prev = sum;
	}
	return -1;
}

/*
 * Every CPU's loop iterations in @ms milliseconds, added to @iters, and
 * its user and total ticks (/proc/stat), added to @ticks. Under emulation
 * the host schedules the virtual CPUs unevenly, so iterations are noisy;
 * the share of ticks the guest charged to user time is not: the kernel's
 * work (softirq, ksoftirqd) takes its ticks from the loop.
 */
static void busy(int ncpu, unsigned int ms, uint64_t *iters,
		 uint64_t (*ticks)[2])
{
	pthread_t th[MAX_CPUS];
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	uint64_t t0[MAX_CPUS][2], t1[MAX_CPUS][2];

	atomic_store(&busy_stop, 0);
	for (long i = 0; i < ncpu; i++)
		pthread_create(&th[i], NULL, busy_thread, (void *)i);
	usleep(20 * 1000);	/* every loop running before counting ticks */
	cpu_ticks(ncpu, t0);
	nanosleep(&ts, NULL);
	cpu_ticks(ncpu, t1);
	atomic_store(&busy_stop, 1);
	for (int i = 0; i < ncpu; i++) {
		pthread_join(th[i], NULL);
		iters[i] += busy_count[i];
		ticks[i][0] += t1[i][0] - t0[i][0];
		ticks[i][1] += t1[i][1] - t0[i][1];
	}
}

/* Arm @ntimers 1 ns periodic timers on @fd, spread over every CPU. */
static uint64_t arm_short(struct twheel *tw, int ncpu, int ntimers)
{
	uint64_t armed = 0;
	int err;

	for (int c = 0; c < ncpu; c++) {
		uint64_t share = (uint64_t)ntimers / (uint64_t)ncpu +
				 (c < ntimers % ncpu);

		pin(c);
		armed += fill(tw, share, 1, &err);
		if (err)
			printf("# cpu %d: SCHEDULE: %s\n", c, strerror(err));
	}
	return armed;
}

/*
 * Rounds of baseline then loaded: drift of the host's load falls on both
 * alike, and the median round per CPU leaves out one where the host took
 * a vCPU away in the middle of a phase (the debug guest's baselines, two
 * guests at once on two cores, have varied from 72% to 90% of the ticks).
 * Seven rounds of 1 s phases: with five of 0.5 s, the debug guest's rounds
 * spread over 50-236% of the baseline with twheel running no timed work
 * and no hrtimer, and its median missed the bound by 0.3-5.8 points in
 * three of five make checks (ci63, ci65, ci67).
 */
#define CPU_ROUNDS	7
#define CPU_PHASE_MS	1000
#define CPU_KEEP_MIN	0.90	/* of the loop's baseline share, per CPU */
#define CPU_NOISY	0.20	/* rounds spread wider: the host decides */
#define CPU_KEEP_NOISY	0.75	/* ... and the loop is held to this */
#define CPU_OWN_MAX	0.02	/* twheel's timed work, of each CPU */

/*
 * CPU @cpu's interrupts and softirqs by kind, for the phases' lines: what
 * the attacker makes the CPU do beyond the victim's loop and its own time.
 */
static const struct {
	const char *path, *label, *name;
} cg_irq_kinds[] = {
	{ "/proc/interrupts", "LOC:", "timer irq" },
	{ "/proc/interrupts", "RES:", "resched IPI" },
	{ "/proc/interrupts", "CAL:", "call IPI" },
	{ "/proc/softirqs", "HRTIMER:", "HRTIMER" },
	{ "/proc/softirqs", "TIMER:", "TIMER" },
	{ "/proc/softirqs", "SCHED:", "SCHED" },
	{ "/proc/softirqs", "RCU:", "RCU" },
};

#define CG_IRQ_KINDS	(sizeof(cg_irq_kinds) / sizeof(cg_irq_kinds[0]))

static void cg_irq_counts(int cpu, long long *v)
{
	for (size_t i = 0; i < CG_IRQ_KINDS; i++)
		v[i] = proc_cpu_count(cg_irq_kinds[i].path,
				      cg_irq_kinds[i].label, cpu);
}

/* "; per s: timer irq 1000, ...": each kind's rate between @a and @b. */
static void cg_irq_print(const long long *a, const long long *b, double s)
{
	printf("; per s:");
	for (size_t i = 0; i < CG_IRQ_KINDS; i++)
		if (a[i] >= 0 && b[i] >= 0)
			printf(" %s %.0f", cg_irq_kinds[i].name,
			       (double)(b[i] - a[i]) / s);
}

static int cmp_double(const void *a, const void *b);

/* twheel's timed work on @cpu so far (wheel advance and expiry), in ns. */
static long long own_ns(int fd, int cpu)
{
	long a = cpu_stat(fd, cpu, STAT_ADVANCE_NS);
	long e = cpu_stat(fd, cpu, STAT_EXPIRE_NS);

	return a < 0 || e < 0 ? -1 : (long long)a + e;
}

/* Callbacks twheel has run on every CPU so far. */
static long long fired_all(int fd, int ncpu)
{
	long long sum = 0;

	for (int c = 0; c < ncpu; c++) {
		long v = cpu_stat(fd, c, STAT_EXPIRED);

		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

static int mode_cpu(int ntimers)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), ok = 1;
	int sfd = open(STATS, O_RDONLY);
	struct twheel tw;
	static double keep[MAX_CPUS][CPU_ROUNDS];
	uint64_t bi[MAX_CPUS] = { 0 }, li[MAX_CPUS] = { 0 };
	uint64_t bt[MAX_CPUS][2] = { { 0 } }, lt[MAX_CPUS][2] = { { 0 } };
	long long own[MAX_CPUS] = { 0 }, prog[MAX_CPUS] = { 0 };
	long long fired_max = 0, loaded_ns = 0;
	uint64_t armed = 0;
	struct twheel_info info = { 0 };
	double worst = 1e9, own_worst = 0, last;
	long waited;

	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	waited = kernel_quiet(30, &last);
	printf("# kernel work left by earlier tests: %s after %ld ms (%.1f%% of a CPU in the last %d ms)\n",
	       waited < 0 ? "still there" : "quiet", waited < 0 ? 30000 : waited,
	       last, QUIET_WIN_MS);
	become(NOBODY);
	for (int r = 0; r < CPU_ROUNDS; r++) {
		uint64_t rbt[MAX_CPUS][2] = { { 0 } }, rlt[MAX_CPUS][2] = { { 0 } };
		long long o0[MAX_CPUS], p0[MAX_CPUS], f0, f1, t0;

		busy(ncpu, CPU_PHASE_MS, bi, rbt);
		f0 = fired_all(sfd, ncpu);
		tw_open(&tw);
		armed = arm_short(&tw, ncpu, ntimers);
		usleep(200 * 1000);
		info = info_of(&tw);
		for (int c = 0; c < ncpu; c++) {
			o0[c] = own_ns(sfd, c);
			p0[c] = cpu_stat(sfd, c, STAT_PROGRAMS);
		}
		t0 = (long long)now_ns();
		busy(ncpu, CPU_PHASE_MS, li, rlt);
		loaded_ns += (long long)now_ns() - t0;
		for (int c = 0; c < ncpu; c++) {
			own[c] += own_ns(sfd, c) - o0[c];
			prog[c] += cpu_stat(sfd, c, STAT_PROGRAMS) - p0[c];
		}
		f1 = fired_all(sfd, ncpu);
		twheel_close(&tw);
		if (f0 >= 0 && f1 - f0 > fired_max)
			fired_max = f1 - f0;
		if (armed != (uint64_t)ntimers)
			ok = 0;
		for (int c = 0; c < ncpu; c++) {
			double bs = rbt[c][1] ? (double)rbt[c][0] / (double)rbt[c][1] : 0;
			double ls = rlt[c][1] ? (double)rlt[c][0] / (double)rlt[c][1] : 0;

			keep[c][r] = bs > 0 ? ls / bs : 0;
			for (int i = 0; i < 2; i++) {
				bt[c][i] += rbt[c][i];
				lt[c][i] += rlt[c][i];
			}
		}
	}

	printf("# %llu periodic timers of 1 ns armed from %d CPUs as uid %d, never read; %u events queued\n",
	       (unsigned long long)armed, ncpu, NOBODY, info.queued);
	for (int c = 0; c < ncpu; c++) {
		double bs = bt[c][1] ? (double)bt[c][0] / (double)bt[c][1] : 0;
		double ls = lt[c][1] ? (double)lt[c][0] / (double)lt[c][1] : 0;
		double ownf = loaded_ns ? (double)own[c] / (double)loaded_ns : 0;
		double med, spread, min;

		qsort(keep[c], CPU_ROUNDS, sizeof(keep[c][0]), cmp_double);
		med = keep[c][CPU_ROUNDS / 2];
		spread = keep[c][CPU_ROUNDS - 1] - keep[c][0];
		min = spread > CPU_NOISY ? CPU_KEEP_NOISY : CPU_KEEP_MIN;
		printf("# cpu %d: the loop had %.1f%% of the ticks alone, %.1f%% with the timers; median round %.1f%% of its baseline (rounds %.1f-%.1f%%, iterations %.1f%%; bound %.0f%%); twheel's timed work %.3f%% of the CPU, %lld hrtimer programs\n",
		       c, bs * 100, ls * 100, med * 100, keep[c][0] * 100,
		       keep[c][CPU_ROUNDS - 1] * 100,
		       bi[c] ? (double)li[c] * 100 / (double)bi[c] : 0,
		       min * 100, ownf * 100, prog[c]);
		if (med - min < worst)
			worst = med - min;
		if (ownf > own_worst)
			own_worst = ownf;
	}
	printf("# callbacks run per round: at most %lld for %d timers (bound: 2 each); twheel's timed work at most %.3f%% of a CPU (bound: %.0f%%)\n",
	       fired_max, ntimers, own_worst * 100, CPU_OWN_MAX * 100);
	printf("# worst CPU's median round against its bound: %+.1f%% (bound: %.0f%% of its baseline, %.0f%% where its rounds spread over %.0f points: the host's noise)\n",
	       worst * 100, CPU_KEEP_MIN * 100, CPU_KEEP_NOISY * 100,
	       CPU_NOISY * 100);
	if (sfd < 0 || fired_max > 2LL * ntimers || own_worst > CPU_OWN_MAX)
		ok = 0;
	if (worst < 0)
		ok = 0;
	if (sfd >= 0)
		close(sfd);
	return ok ? 0 : 1;
}

/* ---- user-cap: one uid against the per-user cap ---- */

static int other_uid_can_schedule(void)
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		struct twheel tw;
		int err;

		become(OTHER_UID);
		tw_open(&tw);
		_exit(fill(&tw, 16, 0, &err) == 16 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Cap units of a page of a file's timer table (chardev.c). */
static long page_units(void)
{
	return sysconf(_SC_PAGESIZE) / 256;
}

/*
 * Most seconds the freeing of closed files may take (see below), or this
 * many times what filling them took in the same run if that is longer.
 */
#define CLOSE_FREE_MAX_S	120
#define CLOSE_FREE_FILL_MULT	4

/* The parent's half of the other-uid check: see mode_user_cap(). */
static int at_cap_fd = -1, go_on_fd = -1;

static int user_cap_child(void)
{
	static struct twheel tws[4096];
	struct twheel_info info;
	uint64_t total = 0, cap, t0, fill_ns, free_max;
	long avail0, avail1;
	int nfd = 0, err = 0, ok = 1;

	become(NOBODY);
	tw_open(&tws[nfd++]);
	info = info_of(&tws[0]);
	cap = info.max_user_timers;
	if (info.flags & TWHEEL_INFO_USER_CAP_EXEMPT) {
		printf("# uid %d is exempt from the per-user cap?\n", NOBODY);
		return 1;
	}
	avail0 = meminfo_kb("MemAvailable");
	t0 = now_ns();
	for (;;) {
		total += fill(&tws[nfd - 1], UINT64_MAX, 0, &err);
		if (err != ENOSPC || nfd == 4096)
			break;
		tw_open(&tws[nfd++]);	/* this file is full: next one */
	}
	fill_ns = now_ns() - t0;
	avail1 = meminfo_kb("MemAvailable");
	info = info_of(&tws[0]);
	printf("# uid %d: %llu timers in %d files, then %s (%s); cap %llu, per file %u\n",
	       NOBODY, (unsigned long long)total, nfd, strerror(err),
	       err == EDQUOT ? "EDQUOT" : "?", (unsigned long long)cap,
	       info.max_timers);
	printf("# pinned: %ld KiB of MemAvailable, %.0f B per timer; the cap is %.2f%% of MemTotal\n",
	       avail0 - avail1, total ? (double)(avail0 - avail1) * 1024 / (double)total : 0,
	       (double)(avail0 - avail1) * 100 / (double)meminfo_kb("MemTotal"));
	/* Refused only when the next timer and table page would not fit. */
	if (err != EDQUOT || info.user_timers > cap || info.user_timers < total ||
	    info.user_timers + 1 + page_units() <= cap) {
		printf("# expected EDQUOT within %ld units of %llu (INFO says %llu, %llu timers)\n",
		       1 + page_units(), (unsigned long long)cap,
		       (unsigned long long)info.user_timers,
		       (unsigned long long)total);
		ok = 0;
	}
	/* Hold the files while root checks that another uid is unaffected. */
	{
		char c = 'F';

		if (write(at_cap_fd, &c, 1) != 1 || read(go_on_fd, &c, 1) != 1)
			ok = 0;
	}
	for (int i = 0; i < nfd; i++)
		twheel_close(&tws[i]);
	/*
	 * A file of more than 1024 objects is freed by a work item after
	 * close() returns, its units counted until then: they must all go,
	 * within CLOSE_FREE_MAX_S (minutes of freeing on the debug kernel
	 * would be a bug) or CLOSE_FREE_FILL_MULT times the filling if that
	 * is longer: both are the kernel's work on each of the same timers,
	 * and a host busy with other guests or a build stretches both alike.
	 */
	free_max = CLOSE_FREE_MAX_S * 1000000000ULL;
	if (fill_ns * CLOSE_FREE_FILL_MULT > free_max)
		free_max = fill_ns * CLOSE_FREE_FILL_MULT;
	tw_open(&tws[0]);
	t0 = now_ns();
	do {
		info = info_of(&tws[0]);
		if (!info.user_timers)
			break;
		sleep_ns(10000000ULL);
	} while (now_ns() - t0 < free_max);
	printf("# units back to 0 %llu ms after the last close (bound: %llu ms, the larger of %d s and %d times the filling's %llu ms)\n",
	       (unsigned long long)(now_ns() - t0) / 1000000,
	       (unsigned long long)free_max / 1000000, CLOSE_FREE_MAX_S,
	       CLOSE_FREE_FILL_MULT, (unsigned long long)fill_ns / 1000000);
	if (info.user_timers) {
		printf("# %llu timers still counted %llu s after every file closed\n",
		       (unsigned long long)info.user_timers,
		       (unsigned long long)free_max / 1000000000);
		ok = 0;
	}
	twheel_close(&tws[0]);
	return ok ? 0 : 1;
}

static int mode_user_cap(void)
{
	char buf[32];
	struct twheel_info info;
	struct twheel tw;
	long saved;
	int err, st, ok = 1;
	uint64_t n;
	int at_cap[2], go_on[2];
	char c;
	pid_t pid;

	if (pipe(at_cap) || pipe(go_on))
		return 2;
	pid = fork();
	if (!pid) {
		at_cap_fd = at_cap[1];
		go_on_fd = go_on[0];
		_exit(user_cap_child());
	}
	if (pid < 0)
		return 2;
	if (read(at_cap[0], &c, 1) == 1 && !other_uid_can_schedule()) {
		printf("# uid %d could not schedule while uid %d is at its cap\n",
		       OTHER_UID, NOBODY);
		ok = 0;
	}
	c = 'G';
	if (write(go_on[1], &c, 1) != 1 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 2;
	ok &= WEXITSTATUS(st) == 0;

	/* The global cap, lowered by root for the test: a table page, 10 timers. */
	tw_open(&tw);
	info = info_of(&tw);
	saved = read_long(PARAMS "/max_total_timers");
	info.total_timers += page_units();
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)info.total_timers + 10);
	if (saved < 0 || write_file(PARAMS "/max_total_timers", buf)) {
		printf("# cannot set max_total_timers\n");
		return 2;
	}
	n = fill(&tw, 20, 0, &err);
	snprintf(buf, sizeof(buf), "%ld", saved);
	write_file(PARAMS "/max_total_timers", buf);
	printf("# global cap lowered to %llu: %llu scheduled, then %s\n",
	       (unsigned long long)info.total_timers + 10, (unsigned long long)n,
	       strerror(err));
	if (n != 10 || err != EAGAIN)
		ok = 0;
	twheel_close(&tw);
	return ok ? 0 : 1;
}

/* ---- userns-cap: a container's uids share their owner's cap ---- */

#define USERNS_OWNER	4321
#define USERNS_BASE	300000	/* its uids 0-99 are these outside */
#define USERNS_UIDS	3	/* uids of the container that fill files */
#define USERNS_CAP	2000	/* max_user_timers for the test */

/*
 * The container's half: in a user namespace made by USERNS_OWNER, each of
 * its uids 1..USERNS_UIDS in turn (the real uid, which the files are
 * charged to; euid 0 keeps the namespace's capabilities) fills a file
 * until a cap refuses. Prints the total; exit 0 if it is within the
 * owner's one cap, not USERNS_UIDS of them.
 */
static int userns_child(int ready_fd, int go_fd)
{
	static struct twheel tws[USERNS_UIDS];
	uint64_t n[USERNS_UIDS], total = 0;
	int err[USERNS_UIDS], ok = 1;
	long long owner;
	char c = 'R';

	become(USERNS_OWNER);
	if (unshare(CLONE_NEWUSER)) {
		printf("# unshare(CLONE_NEWUSER): %s\n", strerror(errno));
		return 2;
	}
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1 || c != 'G')
		return 2;
	for (int i = 0; i < USERNS_UIDS; i++) {
		if (setresuid((uid_t)i + 1, 0, 0)) {
			printf("# setresuid(%d): %s\n", i + 1, strerror(errno));
			return 2;
		}
		tw_open(&tws[i]);
		n[i] = fill(&tws[i], UINT64_MAX, 0, &err[i]);
		total += n[i];
		printf("# container uid %d (uid %d outside): %llu timers, then %s\n", i + 1,
		       USERNS_BASE + i + 1, (unsigned long long)n[i], strerror(err[i]));
		ok &= err[i] == EDQUOT;
	}
	/* The owner's units: its container's timers, table pages, spares. */
	owner = fdinfo_val(tws[0].fd, "twheel-owner-timers");
	printf("# container of uid %d: %llu timers in all, its owner charged %lld units, under a per-user cap of %d\n",
	       USERNS_OWNER, (unsigned long long)total, owner, USERNS_CAP);
	/* Refused only when the next timer and table page would not fit. */
	if (total > USERNS_CAP || owner > USERNS_CAP ||
	    owner + 1 + page_units() <= USERNS_CAP) {
		printf("# expected %d units at most in all, within %ld of it\n",
		       USERNS_CAP, 1 + page_units());
		ok = 0;
	}
	for (int i = 0; i < USERNS_UIDS; i++)
		twheel_close(&tws[i]);
	return ok ? 0 : 1;
}

/*
 * As root: max_user_timers lowered to USERNS_CAP, a user namespace of
 * USERNS_OWNER mapped onto uids USERNS_BASE.. outside; its uids fill files.
 */
static int mode_userns_cap(void)
{
	int ready[2], go[2], st, ret;
	char buf[64], path[64], c;
	long saved;
	pid_t pid;

	saved = read_long(PARAMS "/max_user_timers");
	if (saved < 0 || pipe(ready) || pipe(go))
		return 2;
	snprintf(buf, sizeof(buf), "%d", USERNS_CAP);
	if (write_file(PARAMS "/max_user_timers", buf))
		return 2;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(ready[0]);
		close(go[1]);
		_exit(userns_child(ready[1], go[0]));
	}
	/* Only the child's ends left open: its exit ends every wait here. */
	close(ready[1]);
	close(go[0]);
	ret = 2;
	if (pid < 0)
		goto out_restore;
	if (read(ready[0], &c, 1) != 1) {
		waitpid(pid, &st, 0);
		goto out_restore;
	}
	snprintf(buf, sizeof(buf), "0 %d 100\n", USERNS_BASE);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (write_file(path, buf))
		goto out_kill;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (write_file(path, buf))
		goto out_kill;
	c = 'G';
	if (write(go[1], &c, 1) != 1)
		goto out_kill;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		ret = WEXITSTATUS(st);
	goto out_restore;

out_kill:
	printf("# cannot map the namespace's uids: %s\n", strerror(errno));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
out_restore:
	snprintf(buf, sizeof(buf), "%ld", saved);
	write_file(PARAMS "/max_user_timers", buf);
	return ret;
}

/* ---- close: the cost of closing a full file ---- */

/*
 * The file is filled and closed by uid 65534 when N is within the default
 * per-file cap, else by root after raising max_timers; root resets and
 * reads the irqsoff tracer around the close.
 */
static int mode_close(uint64_t n)
{
	char buf[32], c;
	long saved = read_long(PARAMS "/max_timers"), lat = -1;
	int tracer, ready[2], go[2], done[2], st;
	uint64_t t0, t1;
	pid_t pid;

	if (saved < 0 || pipe(ready) || pipe(go) || pipe(done))
		return 2;
	if ((uint64_t)saved < n) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)n);
		if (write_file(PARAMS "/max_timers", buf))
			return 2;
	}
	pid = fork();
	if (!pid) {
		struct twheel tw;
		uint64_t got;
		int err;

		/* On CPU 1, where tests/twheel_stall.ko's probe runs. */
		pin(1);
		if ((uint64_t)saved >= n)
			become(NOBODY);
		tw_open(&tw);
		got = fill(&tw, n, 0, &err);
		if (got != n)
			printf("# filled %llu of %llu: %s\n", (unsigned long long)got,
			       (unsigned long long)n, strerror(err));
		c = got == n ? 'F' : 'E';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		twheel_close(&tw);
		c = 'C';
		_exit(write(done[1], &c, 1) == 1 ? 0 : 2);
	}
	if (pid < 0)
		return 2;
	if (read(ready[0], &c, 1) != 1 || c != 'F') {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 2;
	}
	if ((uint64_t)saved < n) {
		snprintf(buf, sizeof(buf), "%ld", saved);
		write_file(PARAMS "/max_timers", buf);
	}
	tracer = !write_file(TRACING "/tracing_max_latency", "0");
	/* Restart tests/twheel_stall.ko's probe, if loaded, for the close only. */
	write_file("/sys/module/twheel_stall/parameters/cmd", "probe");
	t0 = now_ns();
	c = 'G';
	if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
		return 2;
	t1 = now_ns();
	if (tracer)
		lat = read_long(TRACING "/tracing_max_latency");
	waitpid(pid, &st, 0);
	printf("# close of a file with %llu timers by uid %d: %llu ms; longest interrupts-off section %ld us\n",
	       (unsigned long long)n, (uint64_t)saved >= n ? NOBODY : 0,
	       (unsigned long long)(t1 - t0) / 1000000, lat);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
}

/* ---- burst: many timers due at one deadline against a real-time task ---- */

#define BURST_GAP_MAX_MS	100
/*
 * The control's gap counts twice: the two samplers' longest gaps are the
 * worst of two minutes of a loaded host's descheduling each, not the same
 * one. Debug kernel in fresh-clone make checks: CPU 0 161-249 ms against
 * the control's 135-290; once 249 against 135. A burst run without its
 * yields keeps CPU 0 for the whole expiry, 0.5-3 s on the distro kernel
 * and 30-180 s on the debug one: far past either bound.
 */
#define BURST_CONTROL_MULT	2
#define CLOSE_MAX_MS		2000
#define CLOSE_ARM_DIV		4

static atomic_int sampler_stop;
static atomic_int sampler_up;

/*
 * A SCHED_FIFO sampler pinned to @cpu: sleeps 1 ms at a time, keeps its
 * longest gap. The one on CPU 0 watches the burst; the one on CPU 2, which
 * holds none of the timers, is the control: under emulation the host may
 * leave a vCPU unscheduled for a while, and that shows on both. The host
 * treats a busy vCPU worse than an idle one (its thread has used its share
 * and is preempted for longer), and CPU 0's is busy for the whole burst
 * (30-40 s on the debug kernel), so a SCHED_OTHER busy loop keeps CPU 2's
 * busy too (busy_thread()); the control sampler preempts it at once.
 */
struct sampler {
	int cpu;
	uint64_t gap_ns, gap_at, loops;
};

static void *sampler_thread(void *arg)
{
	struct sched_param sp = { .sched_priority = 50 };
	struct timespec ts = { 0, 1000000L };
	struct sampler *sm = arg;
	uint64_t prev, t;

	pin(sm->cpu);
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("# sched_setscheduler(SCHED_FIFO): %s\n", strerror(errno));
		atomic_store(&sampler_up, -1);
		return NULL;
	}
	atomic_fetch_add(&sampler_up, 1);
	prev = now_ns();
	while (!atomic_load_explicit(&sampler_stop, memory_order_relaxed)) {
		nanosleep(&ts, NULL);
		t = now_ns();
		if (t - prev > sm->gap_ns) {
			sm->gap_ns = t - prev;
			sm->gap_at = t;
		}
		prev = t;
		sm->loops++;
	}
	return NULL;
}

/*
 * Timers of the file that times the arming rate: fewer than the 1024
 * objects past which a closed file is freed by a work item, so that no
 * teardown runs beside the measured arming on CPU 0: on the debug kernel
 * that work item frees about 0.3 ms an object, some 1.2 s for the 4096
 * this file had, and the arming overran its deadline in a fresh-clone
 * make check.
 */
#define BURST_PROBE	1000
#define BURST_ATTEMPTS	3

/*
 * The child, as uid 65534: @n one-shot timers on CPU 0's wheel, all due
 * at one deadline, far enough ahead that the arming is over by then (a
 * first file of BURST_PROBE times the rate). Tells the parent the
 * deadline, waits on CPU 1 until every record is queued, then closes the
 * file and tells how long that took, and the arming before.
 */
static int burst_child(uint64_t n, int ready_fd, int done_fd)
{
	uint64_t t0, t1, deadline, margin, got, close_ns, arm_ns, msg[4];
	struct twheel_info info;
	struct twheel tw;
	int err, attempt;

	become(NOBODY);
	pin(0);
	tw_open(&tw);
	t0 = now_ns();
	got = fill(&tw, BURST_PROBE, 0, &err);
	t1 = now_ns();
	twheel_close(&tw);
	if (got != BURST_PROBE)
		return 2;
	margin = 2 * (t1 - t0) * (n / BURST_PROBE + 1);
	for (attempt = 1; ; attempt++) {
		deadline = now_ns() + 300000000ULL + margin;
		tw_open(&tw);
		t0 = now_ns();
		got = fill_ops(&tw, n, deadline, 0, TWHEEL_TIMER_ABSTIME, &err);
		arm_ns = now_ns() - t0;
		if (got != n) {
			printf("# armed %llu of %llu: %s\n", (unsigned long long)got,
			       (unsigned long long)n, strerror(err));
			return 2;
		}
		if (now_ns() < deadline)
			break;
		/*
		 * The arming outran the probe's estimate: the debug kernel's
		 * cost per timer grows with the file, and a host running other
		 * guests slows down unevenly. The timers fired while some were
		 * still being armed, which is not the burst this test is
		 * about: again, with twice this arming's time as the margin.
		 */
		printf("# attempt %d: arming took %llu ms, past the deadline (margin %llu ms)\n",
		       attempt, (unsigned long long)arm_ns / 1000000,
		       (unsigned long long)margin / 1000000);
		twheel_close(&tw);
		if (attempt == BURST_ATTEMPTS)
			return 2;
		/*
		 * Its objects are freed by a work item: not beside the next
		 * arming (see BURST_PROBE). Their units are counted until then.
		 */
		tw_open(&tw);
		t0 = now_ns();
		while (info_of(&tw).user_timers &&
		       now_ns() - t0 < CLOSE_FREE_MAX_S * 1000000000ULL)
			sleep_ns(10000000ULL);
		twheel_close(&tw);
		margin = 2 * arm_ns;
	}
	if (write(ready_fd, &deadline, sizeof(deadline)) != sizeof(deadline))
		return 2;
	pin(1);
	do {
		sleep_ns(10000000ULL);
		if (twheel_get_info(&tw, &info))
			return 2;
	} while (info.queued < n &&
		 (int64_t)(now_ns() - deadline) < 600 * 1000000000LL);
	msg[0] = now_ns();
	msg[1] = info.queued;
	t0 = now_ns();
	twheel_close(&tw);
	close_ns = now_ns() - t0;
	msg[2] = close_ns;
	msg[3] = arm_ns;
	return write(done_fd, msg, sizeof(msg)) == sizeof(msg) ? 0 : 2;
}

static long cpu0_yields(void)
{
	return cpu_stat(-1, 0, STAT_YIELDS);
}

/* @gap_max_ms: CPU 0's bound above the control's gap; 0: only reported. */
static int mode_burst(uint64_t n, int gap_max_ms)
{
	int ready[2], done[2], st, ok = 1;
	uint64_t deadline, close_max, msg[4] = { 0 };
	struct sampler sm[2] = { { .cpu = 0 }, { .cpu = 2 } };
	long y0, y1;
	pthread_t th[2], hog;
	pid_t pid;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 3) {
		printf("# needs three CPUs\n");
		return 2;
	}
	if (pipe(ready) || pipe(done))
		return 2;
	pid = fork();
	if (!pid)
		_exit(burst_child(n, ready[1], done[1]));
	if (pid < 0)
		return 2;
	close(ready[1]);
	close(done[1]);
	if (read(ready[0], &deadline, sizeof(deadline)) != sizeof(deadline)) {
		waitpid(pid, &st, 0);
		return 2;
	}
	y0 = cpu0_yields();
	if (pthread_create(&th[0], NULL, sampler_thread, &sm[0]))
		return 2;
	if (pthread_create(&th[1], NULL, sampler_thread, &sm[1]))
		return 2;
	/* The control's CPU as busy as CPU 0: see sampler_thread(). */
	if (pthread_create(&hog, NULL, busy_thread, (void *)(long)sm[1].cpu))
		return 2;
	while (atomic_load(&sampler_up) >= 0 && atomic_load(&sampler_up) < 2)
		usleep(1000);
	if (atomic_load(&sampler_up) < 0) {
		atomic_store(&sampler_stop, 1);
		atomic_store(&busy_stop, 1);
		pthread_join(th[0], NULL);
		pthread_join(th[1], NULL);
		pthread_join(hog, NULL);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 2;
	}
	if (read(done[0], msg, sizeof(msg)) != sizeof(msg))
		ok = 0;
	atomic_store(&sampler_stop, 1);
	atomic_store(&busy_stop, 1);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	pthread_join(hog, NULL);
	y1 = cpu0_yields();
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		ok = 0;
	printf("# %llu one-shot timers of uid %d due at one deadline on CPU 0: %llu records queued %lld ms after it\n",
	       (unsigned long long)n, NOBODY, (unsigned long long)msg[1],
	       (long long)(msg[0] - deadline) / 1000000);
	printf("# SCHED_FIFO sampler on CPU 0 (1 ms sleeps, %llu loops): longest gap %llu.%03llu ms, at %lld ms from the deadline; wheel runs that yielded: %ld\n",
	       (unsigned long long)sm[0].loops,
	       (unsigned long long)sm[0].gap_ns / 1000000,
	       (unsigned long long)sm[0].gap_ns / 1000 % 1000,
	       ((long long)sm[0].gap_at - (long long)deadline) / 1000000,
	       y0 >= 0 && y1 >= 0 ? y1 - y0 : -1);
	printf("# control sampler on CPU 2 (no timers): longest gap %llu.%03llu ms; bound on CPU 0: %d ms + %d times that%s\n",
	       (unsigned long long)sm[1].gap_ns / 1000000,
	       (unsigned long long)sm[1].gap_ns / 1000 % 1000, gap_max_ms,
	       BURST_CONTROL_MULT, gap_max_ms ? "" : " (0: reported only)");
	/*
	 * The close's bound: CLOSE_MAX_MS, or a quarter of what arming the
	 * same timers took in this run if that is longer. Both are the
	 * kernel's work on each of the n timers and stretch alike when the
	 * host runs other guests beside this one (make check runs three).
	 * On a quiet host the debug kernel arms them in 10.4 s and closes
	 * the file in 0.27 s; in fresh-clone make checks the close took up
	 * to 9% of the arming (1.5 s of 16.9 s). A close that freed its
	 * objects inline again (59 s against the arming's 10 s, issue 29)
	 * fails on any host.
	 */
	close_max = CLOSE_MAX_MS * 1000000ULL;
	if (msg[3] / CLOSE_ARM_DIV > close_max)
		close_max = msg[3] / CLOSE_ARM_DIV;
	printf("# close of the file with %llu records queued: %llu ms (bound: %llu ms, the larger of %d ms and 1/%d of the arming's %llu ms)\n",
	       (unsigned long long)msg[1], (unsigned long long)msg[2] / 1000000,
	       (unsigned long long)close_max / 1000000, CLOSE_MAX_MS,
	       CLOSE_ARM_DIV, (unsigned long long)msg[3] / 1000000);
	if (msg[1] != n || (gap_max_ms &&
	    sm[0].gap_ns > gap_max_ms * 1000000ULL +
			   BURST_CONTROL_MULT * sm[1].gap_ns))
		ok = 0;
	if (msg[2] > close_max)
		ok = 0;
	return ok ? 0 : 1;
}

/* ---- burst-others: a burst holds back only the timers due with it ---- */

#define BO_VICTIMS	100		/* the victim's timers, one per step */
#define BO_STEP_NS	2000000ULL	/* 200 ms of them */
#define BO_LEAD_NS	10000000ULL	/* the spinner starts at D - 10 ms */
#define BO_TAIL_NS	50000000ULL	/* and spins 50 ms past the last */
#define BO_ROUNDS	5
/* Rounds the kernel's ksoftirqd starved, redone, before giving up (77). */
#define BO_STARVED_MAX	10
#define BO_GRANULES	2

/*
 * The in-kernel consumer (issue 42's goal names one): tests/twheel_stall.ko's
 * BO_VICTIMS kernel timers set to CPU 0, due with the victim's. Measured
 * when the guest loaded the module; without it, said and not judged.
 */
#define BO_STALL	"/sys/module/twheel_stall/parameters/"

/* One round's figures of the consumer's timers, ns; @fired < BO_VICTIMS: lost. */
struct bo_kernel {
	long long p50, p99, max;
	unsigned int fired, early;
};

/* Arms the consumer's timers from @first on; false if there is none. */
static bool bo_kernel_arm(uint64_t first)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "consumer 0 %llu %llu %d",
		 (unsigned long long)first, (unsigned long long)BO_STEP_NS,
		 BO_VICTIMS);
	return !write_file(BO_STALL "cmd", cmd);
}

/* Waits for the consumer's timers and reads their figures into @k. */
static int bo_kernel_read(struct bo_kernel *k)
{
	char line[256] = "";
	FILE *f;

	memset(k, 0, sizeof(*k));
	/* Fails (EIO) for one lost or early: the line says which. */
	write_file(BO_STALL "cmd", "consumer-wait");
	f = fopen(BO_STALL "result", "r");
	if (!f)
		return 2;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	if (sscanf(line, "consumer: fired %u of %*u, early %u, p50 %lld p99 %lld max %lld",
		   &k->fired, &k->early, &k->p50, &k->p99, &k->max) == 5)
		return 0;
	if (sscanf(line, "consumer: fired %u of", &k->fired) == 1)
		return 0;
	printf("# twheel_stall's consumer: %s", line);
	return 2;
}

/*
 * The victim's first timer is due this long after D: past the level-1
 * bucket that holds D (a level-0 revolution and two ticks). Timers of
 * that bucket move down with the burst's, and are told apart from them
 * by the sort that follows a hold (design.md, Bounded work): a list move
 * per burst timer, ms under emulation, which they wait for.
 */
static uint64_t bo_first_ns;

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The state letter of ksoftirqd/@cpu (/proc/PID/stat), '?' if not found. */
static char ksoftirqd_state(int cpu)
{
	char name[32], path[300], buf[256];
	struct dirent *de;
	char st = '?';
	DIR *d;

	snprintf(name, sizeof(name), "ksoftirqd/%d\n", cpu);
	d = opendir("/proc");
	if (!d)
		return st;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f) || strcmp(buf, name)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f)) {
			char *p = strrchr(buf, ')');

			if (p && p[1] == ' ')
				st = p[2];
		}
		if (f)
			fclose(f);
		break;
	}
	closedir(d);
	return st;
}

/*
 * Whether this kernel may leave softirqs to a runnable ksoftirqd rather
 * than run them on interrupt exit: 6.1's invoke_softirq() does
 * (ksoftirqd_running()), 6.12's no longer has the check. Taken as any
 * kernel before 6.12: where the check went earlier, a round is only run
 * again for nothing.
 */
static bool softirqs_wait_ksoftirqd(void)
{
	static int v = -1;
	struct utsname u;
	int maj, min;

	if (v < 0)
		v = !uname(&u) && sscanf(u.release, "%d.%d", &maj, &min) == 2 &&
		    (maj < 6 || (maj == 6 && min < 12));
	return v;
}

/* A SCHED_FIFO thread on CPU 0 that spins from @from to @to, ns. */
struct bo_spinner {
	uint64_t from, to;
	int ok;
};

static void *bo_spin_thread(void *arg)
{
	struct sched_param sp = { .sched_priority = 50 };
	struct bo_spinner *b = arg;

	pin(0);
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("# sched_setscheduler(SCHED_FIFO): %s\n", strerror(errno));
		return NULL;
	}
	b->ok = 1;
	while (now_ns() < b->from)
		;
	while (now_ns() < b->to)
		;
	return NULL;
}

/*
 * The victim, as uid 65533: BO_VICTIMS one-shot timers of the default
 * slack on CPU 0's wheel, due every BO_STEP_NS after @d; moves to CPU 1
 * and says so on @armed (the spinner may then take CPU 0), reads their
 * records and writes each one's lateness (fired - deadline, ns) to @out,
 * UINT64_MAX for one fired early or never.
 */
static int bo_victim(uint64_t d, int armed, int out)
{
	struct twheel_event ev[BO_VICTIMS];
	uint64_t late[BO_VICTIMS];
	struct twheel tw;
	unsigned int i, got = 0;
	int r;

	become(OTHER_UID);
	pin(0);
	tw_open(&tw);
	for (i = 0; i < BO_VICTIMS; i++) {
		late[i] = UINT64_MAX;
		r = twheel_schedule(&tw, d + bo_first_ns + i * BO_STEP_NS, 0,
				    TWHEEL_TIMER_ABSTIME, i, NULL);
		if (r < 0)
			die("SCHEDULE", r);
	}
	pin(1);
	if (write(armed, &d, sizeof(d)) != sizeof(d))
		return 2;
	while (got < BO_VICTIMS) {
		r = twheel_read_timeout(&tw, ev, BO_VICTIMS - got,
					60000000000ULL);
		if (r <= 0)
			break;
		for (int k = 0; k < r; k++) {
			uint64_t u = ev[k].user_data;

			if (u < BO_VICTIMS && ev[k].fired >= ev[k].deadline)
				late[u] = ev[k].fired - ev[k].deadline;
		}
		got += (unsigned int)r;
	}
	twheel_close(&tw);
	return write(out, late, sizeof(late)) == sizeof(late) ? 0 : 2;
}

/*
 * One round: with @n > 0, uid 65534 arms @n one-shot timers due at one
 * deadline D on CPU 0 (burst_child()); without, D is 300 ms ahead. The
 * victim's timers follow D; a SCHED_FIFO spinner holds CPU 0 from just
 * before D until after the victim's last. Lateness of each victim timer
 * in @late, and in @starved whether ksoftirqd/0 was found runnable while
 * the spinner ran; returns 0, or 2 if the round could not run.
 */
static int bo_round(uint64_t n, uint64_t *late, bool *starved,
		    struct bo_kernel *k)
{
	bool kernel = false;
	int ready[2], done[2], vout[2], armed[2], st, ret = 0;
	struct bo_spinner b = { 0 };
	uint64_t d = 0, msg[4], x;
	pid_t att = -1, vic = -1;
	pthread_t th;

	*starved = false;
	if (pipe(ready) || pipe(done) || pipe(vout) || pipe(armed))
		return 2;
	if (n) {
		att = fork();
		if (!att)
			_exit(burst_child(n, ready[1], done[1]));
	}
	/* Only the children write: a child that dies ends our read. */
	close(ready[1]);
	close(done[1]);
	if (!n)
		d = now_ns() + 300000000ULL;
	else if (att < 0 || read(ready[0], &d, sizeof(d)) != sizeof(d))
		ret = 2;
	if (!ret) {
		vic = fork();
		if (!vic)
			_exit(bo_victim(d, armed[1], vout[1]));
	}
	close(armed[1]);
	close(vout[1]);
	b.from = d - BO_LEAD_NS;
	b.to = d + bo_first_ns + BO_VICTIMS * BO_STEP_NS + BO_TAIL_NS;
	/* Not before the victim armed and left CPU 0. */
	if (!ret && vic > 0 && read(armed[0], &x, sizeof(x)) == sizeof(x))
		kernel = k && bo_kernel_arm(d + bo_first_ns);
	else
		ret = 2;
	if (ret || now_ns() > b.from ||
	    pthread_create(&th, NULL, bo_spin_thread, &b)) {
		ret = 2;
	} else {
		long e0 = cpu_stat(-1, 0, STAT_EXPIRED), g0 = cpu_stat(-1, 0, STAT_PROGRAMS);
		uint64_t t;

		/*
		 * ksoftirqd/0 runnable while the spinner has CPU 0: the kernel
		 * left CPU 0's softirqs to it, and the spinner starves them
		 * all, twheel's and timer_list's, until it stops (6.1's
		 * invoke_softirq() does, once a softirq pass woke ksoftirqd).
		 */
		while ((t = now_ns()) + 10000000ULL < b.to) {
			if (softirqs_wait_ksoftirqd() && t > b.from &&
			    ksoftirqd_state(0) == 'R') {
				*starved = true;
				break;
			}
			sleep_ns(10000000ULL);
		}
		pthread_join(th, NULL);
		/* What CPU 0's wheel did while the spinner had it. */
		printf("# spinner done: CPU 0's wheel expired %ld, programmed %ld times;%s\n",
		       cpu_stat(-1, 0, STAT_EXPIRED) - e0,
		       cpu_stat(-1, 0, STAT_PROGRAMS) - g0,
		       *starved ? " ksoftirqd/0 was runnable meanwhile" : "");
		if (!b.ok)
			ret = 2;
		if (read(vout[0], late, BO_VICTIMS * sizeof(*late)) !=
		    (ssize_t)(BO_VICTIMS * sizeof(*late)))
			ret = 2;
	}
	if (kernel && bo_kernel_read(k))
		ret = 2;
	if (vic > 0) {
		if (ret)
			kill(vic, SIGKILL);
		waitpid(vic, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			ret = 2;
	}
	if (att > 0) {
		if (ret)
			kill(att, SIGKILL);
		else if (read(done[0], msg, sizeof(msg)) != sizeof(msg))
			ret = 2;
		waitpid(att, &st, 0);
		if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st)))
			ret = 2;
	}
	close(ready[0]);
	close(done[0]);
	close(vout[0]);
	close(armed[0]);
	return ret;
}

/* Median and p99 of @v (@n values, sorted here) into @p50 and @p99. */
static void bo_stats(uint64_t *v, unsigned int n, uint64_t *p50, uint64_t *p99)
{
	qsort(v, n, sizeof(*v), u64_cmp);
	*p50 = v[n / 2];
	*p99 = v[n * 99 / 100];
}

/*
 * Issue 42's burst goal: @n timers of uid 65534 due at one deadline on
 * CPU 0, a SCHED_FIFO task spinning there, and uid 65533's timers due
 * after the deadline on the same wheel keep their lateness within
 * BO_GRANULES ticks of the same rounds without the burst, none early.
 * Rounds alternate, control first, so that drift of the host's speed
 * falls on both. Judged by the median round: of each kind's rounds, the
 * median of their p50s and of their p99s. A vCPU the host stalls inside
 * a run of the victim's own timers makes that run go over its budget and
 * holds the victim itself (design.md, Bounded work), with or without a
 * burst: under emulation one round in a few, which decides no median of
 * BO_ROUNDS. Without the holds, every burst round waited for the spinner.
 */
static int mode_burst_others(uint64_t n)
{
	static uint64_t att[BO_ROUNDS * BO_VICTIMS], ctl[BO_ROUNDS * BO_VICTIMS];
	uint64_t r50[2][BO_ROUNDS], r99[2][BO_ROUNDS];
	uint64_t k50[2][BO_ROUNDS], k99[2][BO_ROUNDS];
	uint64_t a50, a99, c50, c99, gran, bound, holds0, holds1;
	unsigned int i, early = 0, starved_rounds = 0, kbad = 0;
	bool kernel = access(BO_STALL "cmd", W_OK) == 0;
	struct bo_kernel k;
	long bits;
	struct twheel_info info;
	struct twheel tw;
	int r;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 3) {
		printf("# needs three CPUs\n");
		return 2;
	}
	tw_open(&tw);
	info = info_of(&tw);
	twheel_close(&tw);
	gran = info.granularity_ns;
	bits = read_long(PARAMS "/wheel_bits");
	if (bits < 1)
		return 2;
	bo_first_ns = ((1ULL << bits) + 2) * gran;
	if (access("/sys/kernel/realtime", F_OK) == 0) {
		/*
		 * PREEMPT_RT expires soft hrtimers in a SCHED_FIFO 1 thread,
		 * which the spinner outranks: every soft timer of CPU 0,
		 * twheel's and timer_list's, waits for it, burst or not.
		 */
		printf("# PREEMPT_RT: CPU 0's soft timers wait for any SCHED_FIFO task above the timer thread, with or without a burst\n");
		return 77;
	}
	holds0 = (uint64_t)cpu_stat(-1, 0, STAT_HOLDS);
	for (i = 0; i < 2 * BO_ROUNDS; i++) {
		uint64_t *l = (i & 1 ? att : ctl) + i / 2 * BO_VICTIMS, v[BO_VICTIMS];
		long y0 = cpu_stat(-1, 0, STAT_YIELDS), f0 = cpu_stat(-1, 0, STAT_DEFERRALS);
		long h0 = cpu_stat(-1, 0, STAT_HOLDS);
		bool starved;

		r = bo_round(i & 1 ? n : 0, l, &starved, kernel ? &k : NULL);
		if (r)
			return r;
		if (starved) {
			/* The kernel's wait, not twheel's: not counted. */
			printf("# round %u (%s): ksoftirqd/0 was runnable under the spinner: again\n",
			       i / 2 + 1, i & 1 ? "burst" : "control");
			if (++starved_rounds > BO_STARVED_MAX) {
				printf("# the kernel left CPU 0's softirqs to ksoftirqd, which the SCHED_FIFO task starves, in %u rounds\n",
				       starved_rounds);
				return 77;
			}
			i--;
			continue;
		}
		memcpy(v, l, sizeof(v));
		bo_stats(v, BO_VICTIMS, &r50[i & 1][i / 2], &r99[i & 1][i / 2]);
		printf("# round %u (%s): victim lateness p50/p99/max %llu/%llu/%llu us, first %llu us; CPU 0's runs over budget %ld, deferred %ld, held %ld\n",
		       i / 2 + 1, i & 1 ? "burst" : "control",
		       (unsigned long long)r50[i & 1][i / 2] / 1000,
		       (unsigned long long)r99[i & 1][i / 2] / 1000,
		       (unsigned long long)v[BO_VICTIMS - 1] / 1000,
		       (unsigned long long)l[0] / 1000,
		       cpu_stat(-1, 0, STAT_YIELDS) - y0,
		       cpu_stat(-1, 0, STAT_DEFERRALS) - f0,
		       cpu_stat(-1, 0, STAT_HOLDS) - h0);
		if (!kernel)
			continue;
		k50[i & 1][i / 2] = k.p50 > 0 ? (uint64_t)k.p50 : 0;
		k99[i & 1][i / 2] = k.p99 > 0 ? (uint64_t)k.p99 : 0;
		kbad += (BO_VICTIMS - k.fired) + k.early;
		printf("# round %u (%s): in-kernel consumer's lateness p50/p99/max %lld/%lld/%lld us; fired %u of %d, early %u\n",
		       i / 2 + 1, i & 1 ? "burst" : "control", k.p50 / 1000,
		       k.p99 / 1000, k.max / 1000, k.fired, BO_VICTIMS, k.early);
	}
	holds1 = (uint64_t)cpu_stat(-1, 0, STAT_HOLDS);
	for (i = 0; i < BO_ROUNDS * BO_VICTIMS; i++)
		early += att[i] == UINT64_MAX || ctl[i] == UINT64_MAX;
	bo_stats(att, BO_ROUNDS * BO_VICTIMS, &a50, &a99);
	bo_stats(ctl, BO_ROUNDS * BO_VICTIMS, &c50, &c99);
	printf("# uid %d's %d timers on CPU 0, due every %llu ms from %llu ms after a deadline, a SCHED_FIFO task spinning there: lateness p50/p99/max %llu/%llu/%llu us beside %llu timers of uid %d due at that deadline, %llu/%llu/%llu us without (all %d rounds of each); runs that held a user's timers: %lld; early or lost: %u\n",
	       OTHER_UID, BO_VICTIMS, BO_STEP_NS / 1000000,
	       (unsigned long long)bo_first_ns / 1000000,
	       (unsigned long long)a50 / 1000, (unsigned long long)a99 / 1000,
	       (unsigned long long)att[BO_ROUNDS * BO_VICTIMS - 1] / 1000,
	       (unsigned long long)n, NOBODY,
	       (unsigned long long)c50 / 1000, (unsigned long long)c99 / 1000,
	       (unsigned long long)ctl[BO_ROUNDS * BO_VICTIMS - 1] / 1000,
	       BO_ROUNDS, (long long)(holds1 - holds0), early);
	/* The median round's figures. */
	qsort(r50[0], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
	qsort(r50[1], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
	qsort(r99[0], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
	qsort(r99[1], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
	c50 = r50[0][BO_ROUNDS / 2];
	a50 = r50[1][BO_ROUNDS / 2];
	c99 = r99[0][BO_ROUNDS / 2];
	a99 = r99[1][BO_ROUNDS / 2];
	bound = BO_GRANULES * gran;
	printf("# median round: p50/p99 %llu/%llu us beside the burst, %llu/%llu us without; bound: the control's + %d granules (%llu us)\n",
	       (unsigned long long)a50 / 1000, (unsigned long long)a99 / 1000,
	       (unsigned long long)c50 / 1000, (unsigned long long)c99 / 1000,
	       BO_GRANULES, (unsigned long long)bound / 1000);
	if (!kernel) {
		printf("# no twheel_stall.ko: the in-kernel consumer was not measured\n");
		return !early && a50 <= c50 + bound && a99 <= c99 + bound ? 0 : 1;
	}
	for (i = 0; i < 2; i++) {
		qsort(k50[i], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
		qsort(k99[i], BO_ROUNDS, sizeof(uint64_t), u64_cmp);
	}
	printf("# in-kernel consumer (twheel_stall.ko, %d timers set to CPU 0, due with the victim's), median round: p50/p99 %llu/%llu us beside the burst, %llu/%llu us without; early or lost: %u\n",
	       BO_VICTIMS, (unsigned long long)k50[1][BO_ROUNDS / 2] / 1000,
	       (unsigned long long)k99[1][BO_ROUNDS / 2] / 1000,
	       (unsigned long long)k50[0][BO_ROUNDS / 2] / 1000,
	       (unsigned long long)k99[0][BO_ROUNDS / 2] / 1000, kbad);
	return !early && !kbad && a50 <= c50 + bound && a99 <= c99 + bound &&
	       k50[1][BO_ROUNDS / 2] <= k50[0][BO_ROUNDS / 2] + bound &&
	       k99[1][BO_ROUNDS / 2] <= k99[0][BO_ROUNDS / 2] + bound ? 0 : 1;
}

/* ---- modify: a storm of MODIFYs on timers another CPU holds ---- */

#define MODIFY_ROUNDS	8
#define MODIFY_OWNER	0
#define MODIFY_STORM	1

static atomic_int loop_stop;
static atomic_uint_fast64_t loop_count;

/* The busy loop on CPU 0. */
static void *loop_thread(void *arg)
{
	uint64_t n = 0, x = 0;

	(void)arg;
	pin(MODIFY_OWNER);
	while (!atomic_load_explicit(&loop_stop, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++) {
			x += (uint64_t)i;
			__asm__ __volatile__("" : "+r"(x));
		}
		n++;
	}
	atomic_store(&loop_count, n);
	return NULL;
}

/* Arm @n far-future one-shot timers on @tw from @cpu; their ids in @ids. */
static int modify_arm(struct twheel *tw, struct twheel_sqbuf *sq, int cpu,
		      uint64_t *ids, uint32_t n)
{
	int r;

	pin(cpu);
	twheel_sqbuf_reset(sq);
	for (uint32_t i = 0; i < n; i++)
		twheel_sqbuf_schedule(sq, FAR_NS, 0, 0, 0);
	r = twheel_submit(tw, sq);
	if (r != (int)n) {
		printf("# SCHEDULE on cpu %d: %d of %u: %s\n", cpu, r, n,
		       strerror(r < 0 ? -r : -sq->ops[r].result));
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		ids[i] = sq->ops[i].spec.id;
	return 0;
}

/*
 * From CPU 1, MODIFY the @n timers of @ids over and over for @ms, each
 * batch moving every deadline (alternately nearer and farther, so that
 * none can be skipped); the loops on CPU 0 and CPU 2 count meanwhile.
 * Adds their iterations to @iters and returns the MODIFYs made, 0 on error.
 */
static int stats_fd = -1;

static uint64_t modify_storm(struct twheel *tw, struct twheel_sqbuf *sq,
			     const uint64_t *ids, uint32_t n, unsigned int ms,
			     uint64_t *iters, uint64_t (*ticks)[2], long *kicks)
{
	uint64_t ops = 0, end, t0[1][2], t1[1][2];
	pthread_t th;
	long k0, k1;
	int r, k = 0;

	pin(MODIFY_STORM);
	atomic_store(&loop_stop, 0);
	if (pthread_create(&th, NULL, loop_thread, NULL))
		return 0;
	usleep(20 * 1000);	/* the loop running */
	k0 = cpu_stat(stats_fd, MODIFY_OWNER, STAT_KICKS);
	cpu_ticks(1, t0);
	end = now_ns() + (uint64_t)ms * 1000000ULL;
	while (now_ns() < end) {
		uint64_t value = k++ & 1 ? FAR_NS : FAR_NS / 2;

		twheel_sqbuf_reset(sq);
		for (uint32_t i = 0; i < n; i++)
			twheel_sqbuf_modify(sq, ids[i], value + i, 0, 0, 0);
		r = twheel_submit(tw, sq);
		if (r != (int)n) {
			printf("# MODIFY: %d of %u: %s\n", r, n,
			       strerror(r < 0 ? -r : -sq->ops[r].result));
			ops = 0;
			break;
		}
		ops += n;
	}
	cpu_ticks(1, t1);
	k1 = cpu_stat(stats_fd, MODIFY_OWNER, STAT_KICKS);
	if (k0 >= 0 && k1 >= 0)
		*kicks += k1 - k0;
	ticks[0][0] += t1[0][0] - t0[0][0];
	ticks[0][1] += t1[0][1] - t0[0][1];
	atomic_store(&loop_stop, 1);
	pthread_join(th, NULL);
	*iters += atomic_load(&loop_count);
	return ops;
}

static int mode_modify(uint32_t n, unsigned int ms)
{
	/* [0]: the storm on CPU 1's own timers; [1]: on CPU 0's. */
	uint64_t iters[2] = { 0 }, ops[2] = { 0 }, *ids;
	uint64_t ticks[2][1][2] = { { { 0 } } };
	long kicks[2] = { 0 };
	static const char *const what[2] = { "CPU 1's own", "CPU 0's" };
	struct twheel_sqbuf sq;
	double share;
	struct twheel tw;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("# needs two CPUs\n");
		return 2;
	}
	if (n == 0 || n > TWHEEL_BATCH_MAX || ms == 0)
		return 2;
	ids = calloc(n, sizeof(*ids));
	if (!ids || twheel_sqbuf_init(&sq, n))
		return 2;
	stats_fd = open(STATS, O_RDONLY);	/* root's, kept as uid 65534 */
	become(NOBODY);
	for (int r = 0; r < MODIFY_ROUNDS; r++) {
		for (int remote = 0; remote < 2; remote++) {
			uint64_t done;

			tw_open(&tw);
			if (modify_arm(&tw, &sq, remote ? MODIFY_OWNER : MODIFY_STORM,
				       ids, n))
				return 2;
			done = modify_storm(&tw, &sq, ids, n, ms, &iters[remote],
					    ticks[remote], &kicks[remote]);
			twheel_close(&tw);
			if (!done)
				return 2;
			ops[remote] += done;
		}
	}
	for (int remote = 0; remote < 2; remote++) {
		printf("# MODIFY storm from CPU 1 on %s %u timers: %.0f ops/s; CPU 0's loop %llu iterations, %.1f%% of its ticks user time; %ld kick IPIs to CPU 0\n",
		       what[remote], n,
		       (double)ops[remote] * 1000.0 / (MODIFY_ROUNDS * ms),
		       (unsigned long long)iters[remote],
		       ticks[remote][0][1] ? (double)ticks[remote][0][0] * 100 /
					     (double)ticks[remote][0][1] : 0,
		       stats_fd >= 0 ? kicks[remote] : -1L);
	}
	share = iters[0] ? (double)iters[1] / (double)iters[0] : 0;
	printf("# CPU 0 keeps %.1f%% of its throughput under the storm on its timers (bound: 90%%)\n",
	       share * 100);
	return share >= 0.90 ? 0 : 1;
}

/* ---- ring-cgroup: the ring's poller pays in its user's cgroup ---- */

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_ATTACKER	CG_ROOT "/twheel-attacker"
#define CG_VICTIM	CG_ROOT "/twheel-victim"
#define CG_CALIB	CG_ROOT "/twheel-calib"
/*
 * 10% of one CPU, over a period of 200 ms rather than CFS's default 100:
 * a guest stalled for more than 3 periods makes the kernel's CFS period
 * timer print "period too short, scaling up" while it holds cfs_b->lock,
 * and 6.12's lockdep then reports a circular dependency through the
 * console (seen once on the debug kernel beside a kernel build), which
 * fails make check for a report that is none of twheel's.
 */
#define CG_CPU_MAX	"20000 200000"
#define CG_RINGS	16
#define CG_SLOTS	1024		/* distinct slots: no op folds */
#define CG_CPU		1		/* every task of the test runs here */
#define CG_CALIB_CPU	2		/* but the calibration loop */
/*
 * Control, attack, ..., control: five attack phases. With three, the
 * debug guest beside another guest judged the victim by 82.4-90.4% of its
 * control time in nine measurements, its control phases' interrupt time moving
 * between 6% and 19.5% from one phase to the next (the host's, not the
 * attacker's): one phase's noise decided a median of three.
 */
#define CG_PHASES	11
#define CG_PHASE_MS	2000
#define CG_SETTLE_MS	300
#define CG_SHARE_MAX	0.12		/* of one CPU, threads included */
#define CG_SHARE_OVER	0.02		/* past what cpu.max let a loop use */
#define CG_KEEP_MIN	0.85		/* of the victim's control rate */

/* Counters the children publish, in a shared anonymous mapping. */
struct cg_shared {
	_Atomic uint64_t victim_iters;
	_Atomic uint64_t drained;	/* attacker: ops its rings consumed */
	_Atomic int attacker_up;	/* 1 ready, -1 failed */
};

static struct cg_shared *cg;

static int cg_join(const char *dir)
{
	char path[128], pid[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (write_file(path, pid)) {
		printf("# join %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Microseconds of CPU the cgroup @dir used: all its tasks and threads. */
static long long cg_usage_us(const char *dir)
{
	char path[128], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "usage_usec ", 11))
			v = strtoll(line + 11, NULL, 10);
	fclose(f);
	return v;
}

/*
 * CPU time of every kworker and twheel-ring thread outside the cgroups,
 * in microseconds (/proc/PID/stat, clock ticks): the old poller's, and
 * any that would escape the cgroup. Others' work counts too: a stricter
 * bound, and the kworkers of an idle guest cost little.
 */
static long long kthreads_us(void)
{
	long long sum = 0, hz = sysconf(_SC_CLK_TCK);
	char path[300], buf[512];
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		unsigned long long ut, st;
		char *p;
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (!p || !strstr(buf, "(kworker") || !(p = strrchr(buf, ')')))
			continue;
		/* After the comm: state, then fields 4..13, utime, stime. */
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			   &ut, &st) == 2)
			sum += (long long)(ut + st) * 1000000 / hz;
	}
	closedir(d);
	return sum;
}

/* irq and softirq time of CPU @cpu in /proc/stat, in microseconds. */
static long long irq_us(int cpu)
{
	long long hz = sysconf(_SC_CLK_TCK), v = -1;
	char line[512];
	FILE *f = fopen("/proc/stat", "r");
	unsigned long long s[7];
	int c;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu", &c,
			   &s[0], &s[1], &s[2], &s[3], &s[4], &s[5], &s[6]) == 8 &&
		    c == cpu)
			v = (long long)(s[5] + s[6]) * 1000000 / hz;
	fclose(f);
	return v;
}

/*
 * Nanoseconds task @pid has run on a CPU: the scheduler's own sum in
 * /proc/PID/schedstat (CONFIG_SCHED_INFO), else utime + stime in ticks.
 */
static long long task_run_ns(pid_t pid)
{
	long long hz = sysconf(_SC_CLK_TCK), v = -1;
	unsigned long long ut, st;
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
		if (v >= 0)
			return v;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &ut, &st) != 2)
		return -1;
	return (long long)(ut + st) * 1000000000LL / hz;
}

/*
 * The calibration: a plain busy loop under the attacker's cpu.max, on a
 * CPU of its own, for what the guest's CFS bandwidth control lets any
 * task of such a cgroup use: under emulation a vCPU the host takes away
 * is charged to the task it ran, past the quota (a loaded host's debug
 * guest let the attacker's cgroup use 12.3-13.7% of a CPU).
 */
static void cg_calib(void)
{
	uint64_t x = 0;

	for (;;) {
		x++;
		__asm__ __volatile__("" : "+r"(x));
	}
}

/* The victim: a busy loop on CG_CPU, its iterations published. */
static void cg_victim(void)
{
	uint64_t n = 0, x = 0;

	for (;;) {
		for (int i = 0; i < 1000; i++) {
			x += (uint64_t)i;
			__asm__ __volatile__("" : "+r"(x));
		}
		atomic_store_explicit(&cg->victim_iters, ++n,
				      memory_order_relaxed);
	}
}

/*
 * The attacker: CG_RINGS rings, each kept full (TWHEEL_RING_ENTRIES ARMs
 * of distinct slots, an hour away: MODIFYs once armed) every
 * millisecond, a system call only when the kernel asks for one
 * (TWHEEL_RING_NEED_WAKEUP): its pollers drain all they can.
 */
static void cg_attacker(void)
{
	struct twheel_ring_hdr *hdr[CG_RINGS];
	struct twheel_ring_op *sq[CG_RINGS];
	uint32_t tail[CG_RINGS], seq = 0;
	uint64_t seen[CG_RINGS] = { 0 };
	struct twheel tw[CG_RINGS];
	size_t len = ((size_t)TWHEEL_RING_MAP_BYTES + 4095) & ~(size_t)4095;

	for (int k = 0; k < CG_RINGS; k++) {
		void *m;

		tw_open(&tw[k]);
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 tw[k].fd, (off_t)TWHEEL_RING_OFFSET);
		if (m == MAP_FAILED) {
			printf("# ring %d: mmap: %s\n", k, strerror(errno));
			atomic_store(&cg->attacker_up, -1);
			_exit(2);
		}
		hdr[k] = m;
		sq[k] = (struct twheel_ring_op *)((char *)m + TWHEEL_RING_SQ_OFF);
		tail[k] = 0;
	}
	atomic_store(&cg->attacker_up, 1);
	for (;;) {
		for (int k = 0; k < CG_RINGS; k++) {
			uint64_t drained;
			uint32_t head = __atomic_load_n(&hdr[k]->sq_head,
							__ATOMIC_ACQUIRE);

			while (tail[k] - head < TWHEEL_RING_ENTRIES) {
				struct twheel_ring_op *op =
					&sq[k][tail[k] % TWHEEL_RING_ENTRIES];

				op->op = TWHEEL_RING_ARM;
				op->flags = 0;
				op->pad = 0;
				op->slot = seq++ % CG_SLOTS;
				op->value = FAR_NS;
				op->user_data = 0;
				op->reserved = 0;
				tail[k]++;
			}
			__atomic_store_n(&hdr[k]->sq_tail, tail[k],
					 __ATOMIC_RELEASE);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&hdr[k]->flags, __ATOMIC_RELAXED) &
			    TWHEEL_RING_NEED_WAKEUP)
				ioctl(tw[k].fd, TWHEEL_IOC_RING_ENTER);
			/* Per ring: a slow pass still shows its progress. */
			drained = __atomic_load_n(&hdr[k]->drained,
						  __ATOMIC_RELAXED);
			atomic_fetch_add_explicit(&cg->drained,
						  drained - seen[k],
						  memory_order_relaxed);
			seen[k] = drained;
		}
		sleep_ns(NSEC_PER_MSEC);
	}
}

/* A child in cgroup @dir, on @cpu, as @uid, running @fn. */
static pid_t cg_spawn(const char *dir, int cpu, uid_t uid, void (*fn)(void))
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	if (cg_join(dir))
		_exit(2);
	pin(cpu);
	become(uid);
	fn();
	_exit(0);
}

static int cg_setup(void)
{
	char ctl[256] = "";
	FILE *f;

	if (access(CG_ROOT "/cgroup.controllers", R_OK) &&
	    mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL)) {
		printf("# no cgroup v2 (CONFIG_CGROUPS): mount: %s\n",
		       strerror(errno));
		return 77;
	}
	f = fopen(CG_ROOT "/cgroup.controllers", "r");
	if (!f || !fgets(ctl, sizeof(ctl), f)) {
		if (f)
			fclose(f);
		printf("# cannot read " CG_ROOT "/cgroup.controllers\n");
		return 2;
	}
	fclose(f);
	if (!strstr(ctl, "cpu ") && !strstr(ctl, "cpu\n")) {
		printf("# no cgroup v2 cpu controller (CONFIG_CFS_BANDWIDTH); controllers: %s",
		       ctl);
		return 77;
	}
	if (write_file(CG_ROOT "/cgroup.subtree_control", "+cpu")) {
		printf("# +cpu in " CG_ROOT "/cgroup.subtree_control: %s\n",
		       strerror(errno));
		return 2;
	}
	if ((mkdir(CG_ATTACKER, 0755) && errno != EEXIST) ||
	    (mkdir(CG_VICTIM, 0755) && errno != EEXIST) ||
	    (mkdir(CG_CALIB, 0755) && errno != EEXIST)) {
		printf("# mkdir: %s\n", strerror(errno));
		return 2;
	}
	if (write_file(CG_ATTACKER "/cpu.max", CG_CPU_MAX) ||
	    write_file(CG_CALIB "/cpu.max", CG_CPU_MAX)) {
		printf("# cpu.max: %s\n", strerror(errno));
		return 2;
	}
	return 0;
}

/* rmdir once the released rings' threads have left: up to 10 s. */
static void cg_teardown(void)
{
	for (int i = 0; i < 100; i++) {
		if ((!rmdir(CG_ATTACKER) || errno == ENOENT) &&
		    (!rmdir(CG_VICTIM) || errno == ENOENT) &&
		    (!rmdir(CG_CALIB) || errno == ENOENT))
			return;
		usleep(100 * 1000);
	}
	printf("# rmdir of the test's cgroups: %s\n", strerror(errno));
}

static void cg_kill(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* max_user_timers for the ring-cgroup test, if the default is lower. */
#define CG_USER_CAP	262144

static int mode_ring_cgroup(void)
{
	long long a_us = 0, k_us = 0, kc_us = 0, a0, k0, q0, r0, t0, t1;
	double rate[CG_PHASES], run[CG_PHASES], irq[CG_PHASES];
	double ratio[CG_PHASES / 2], part[CG_PHASES / 2], kph[CG_PHASES / 2];
	double aph[CG_PHASES / 2], cph[CG_PHASES / 2], over[CG_PHASES / 2];
	double k_bg, k_att, irq_att = 0, irq_ctl = 0;
	long long c0, n0[CG_IRQ_KINDS], n1[CG_IRQ_KINDS];
	long saved_cap;
	uint64_t ms[2] = { 0, 0 }, drained = 0, i0, d0;
	pid_t attacker = -1, victim = -1, calib = -1;
	double share, keep, keep_min[CG_PHASES / 2], margin[CG_PHASES / 2];
	double bound, last;
	long waited;
	int irq_accounted;
	int ret;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CG_CALIB_CPU) {
		printf("# needs CPUs %d and %d\n", CG_CPU, CG_CALIB_CPU);
		return 77;
	}
	ret = cg_setup();
	if (ret)
		return ret;
	cg = mmap(NULL, sizeof(*cg), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cg == MAP_FAILED)
		return 2;
	memset(cg, 0, sizeof(*cg));
	/*
	 * 16 rings of max_timers 65,536 cost about 2,500 units each (pages,
	 * ids, the thread): past the per-user cap of a small guest's memory
	 * (40,000 in the debug kernel's 768 MiB). Raised by root for the
	 * test, as the CPU it measures does not depend on it.
	 */
	saved_cap = read_long(PARAMS "/max_user_timers");
	if (saved_cap >= 0 && saved_cap < CG_USER_CAP) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%d", CG_USER_CAP);
		if (write_file(PARAMS "/max_user_timers", buf))
			return 2;
	}
	/* The parent sleeps on CPU 0, out of the way. */
	pin(0);
	ret = 2;
	victim = cg_spawn(CG_VICTIM, CG_CPU, OTHER_UID, cg_victim);
	attacker = cg_spawn(CG_ATTACKER, CG_CPU, NOBODY, cg_attacker);
	calib = cg_spawn(CG_CALIB, CG_CALIB_CPU, NOBODY, cg_calib);
	if (victim < 0 || attacker < 0 || calib < 0)
		goto out;
	/*
	 * Until the attacker says how its rings went, or dies: bounded by
	 * its progress, not the host's speed (5 s was too short beside a
	 * kernel build); 120 s at most, within make check's 300.
	 */
	for (int i = 0; i < 12000 && !atomic_load(&cg->attacker_up) &&
	     waitpid(attacker, NULL, WNOHANG) == 0; i++)
		usleep(10 * 1000);
	if (atomic_load(&cg->attacker_up) != 1) {
		printf("# the attacker's rings are not up\n");
		goto out;
	}
	/* Phases alternate, control first: drift falls on both alike. */
	kill(attacker, SIGSTOP);
	/* Earlier tests' leftovers first (the victim's loop is user time). */
	waited = kernel_quiet(30, &last);
	printf("# kernel work left by earlier tests: %s after %ld ms (%.1f%% of a CPU in the last %d ms)\n",
	       waited < 0 ? "still there" : "quiet", waited < 0 ? 30000 : waited,
	       last, QUIET_WIN_MS);
	/*
	 * The victim's throughput is judged by the CPU time the guest's
	 * scheduler gave it (schedstat) per unit of the guest's time: under
	 * emulation its iterations per ms measure the host, whose load
	 * comes and goes between phases (control phases of one run have
	 * differed by 1.8x beside other guests), while the time a task is
	 * given is the guest's own decision. The interrupt time CPU 1 spent
	 * beyond its control phases is taken from the victim too: without
	 * CONFIG_IRQ_TIME_ACCOUNTING (Debian's kernels) the scheduler
	 * counts it as the victim's. With it (TWHEEL_IRQ_TIME_ACCOUNTING
	 * set: make check's debug kernels) the victim's time already
	 * leaves it out. Each phase prints CPU 1's interrupts and softirqs
	 * by kind: what the attacker makes that CPU do.
	 */
	irq_accounted = getenv("TWHEEL_IRQ_TIME_ACCOUNTING") != NULL;
	for (int p = 0; p < CG_PHASES; p++) {
		int att = p & 1;

		if (att)
			kill(attacker, SIGCONT);
		usleep(CG_SETTLE_MS * 1000);
		a0 = cg_usage_us(CG_ATTACKER);
		c0 = cg_usage_us(CG_CALIB);
		k0 = kthreads_us();
		q0 = irq_us(CG_CPU);
		r0 = task_run_ns(victim);
		cg_irq_counts(CG_CPU, n0);
		d0 = atomic_load(&cg->drained);
		i0 = atomic_load(&cg->victim_iters);
		t0 = (long long)now_ns();
		usleep(CG_PHASE_MS * 1000);
		t1 = (long long)now_ns();
		cg_irq_counts(CG_CPU, n1);
		run[p] = (double)(task_run_ns(victim) - r0) / (double)(t1 - t0);
		irq[p] = (double)(irq_us(CG_CPU) - q0) * 1000 / (double)(t1 - t0);
		rate[p] = (double)(atomic_load(&cg->victim_iters) - i0) /
			  ((double)(t1 - t0) / 1e6);
		ms[att] += (uint64_t)(t1 - t0) / 1000000;
		if (!att) {
			kc_us += kthreads_us() - k0;
			irq_ctl += irq[p] / (CG_PHASES - CG_PHASES / 2);
		} else {
			aph[p / 2] = (double)(cg_usage_us(CG_ATTACKER) - a0);
			cph[p / 2] = (double)(cg_usage_us(CG_CALIB) - c0);
			kph[p / 2] = (double)(kthreads_us() - k0);
			a_us += (long long)aph[p / 2];
			k_us += (long long)kph[p / 2];
			/* Each phase's length, in µs, to divide by below. */
			part[p / 2] = (double)(t1 - t0) / 1000;
			drained += atomic_load(&cg->drained) - d0;
			irq_att += irq[p] / (CG_PHASES / 2);
			kill(attacker, SIGSTOP);
		}
		printf("# phase %d (%s): victim ran %.1f%% of CPU %d, %.0f iterations/ms; irq+softirq %.1f%%",
		       p, att ? "attack" : "control", run[p] * 100, CG_CPU,
		       rate[p], irq[p] * 100);
		cg_irq_print(n0, n1, (double)(t1 - t0) / 1e9);
		printf("\n");
	}
	kill(attacker, SIGCONT);
	/* The kworkers' time beyond their control rate is the attacker's. */
	k_bg = (double)kc_us * (double)ms[1] / (double)ms[0];
	k_att = (double)k_us > k_bg ? (double)k_us - k_bg : 0;
	/*
	 * The attacker's share is judged per attack phase, the median of
	 * five, against CG_SHARE_MAX or, where the guest's CFS let the
	 * calibration loop use more, against that plus CG_SHARE_OVER: the
	 * guest's clock runs on while the host has a vCPU's thread off its
	 * CPUs (make check runs two guests at once, maybe beside a kernel
	 * build), and the task that held the vCPU is charged for it, past
	 * what cpu.max throttles.
	 */
	for (int i = 0; i < CG_PHASES / 2; i++) {
		double k = kph[i] - (double)kc_us / (double)ms[0] * part[i] / 1000;

		aph[i] = (aph[i] + (k > 0 ? k : 0)) / part[i];
		cph[i] /= part[i];
		bound = cph[i] + CG_SHARE_OVER > CG_SHARE_MAX ?
			cph[i] + CG_SHARE_OVER : CG_SHARE_MAX;
		over[i] = aph[i] - bound;
		/* What the attacker may take, the victim may lose. */
		keep_min[i] = CG_KEEP_MIN - (bound - CG_SHARE_MAX);
	}
	qsort(aph, CG_PHASES / 2, sizeof(aph[0]), cmp_double);
	qsort(cph, CG_PHASES / 2, sizeof(cph[0]), cmp_double);
	qsort(over, CG_PHASES / 2, sizeof(over[0]), cmp_double);
	share = aph[CG_PHASES / 4];
	/* Each attack phase against the control phases either side of it. */
	for (int p = 1; p < CG_PHASES; p += 2) {
		double irq_more = irq[p] - (irq[p - 1] + irq[p + 1]) / 2;

		if (irq_more < 0 || irq_accounted)
			irq_more = 0;
		ratio[p / 2] = (run[p] - irq_more) /
			       ((run[p - 1] + run[p + 1]) / 2);
		/* Judged by its margin over the phase's bound. */
		margin[p / 2] = ratio[p / 2] - keep_min[p / 2];
	}
	qsort(ratio, CG_PHASES / 2, sizeof(ratio[0]), cmp_double);
	qsort(margin, CG_PHASES / 2, sizeof(margin[0]), cmp_double);
	qsort(keep_min, CG_PHASES / 2, sizeof(keep_min[0]), cmp_double);
	keep = margin[CG_PHASES / 4];
	printf("# attacker (%d rings, cpu.max \"%s\"): cgroup %.1f%%, kworkers %.1f%% (%.1f%% in control phases), total %.1f%% of one CPU (median of phases %.1f%%, bound %.0f%%); CPU %d irq+softirq %.1f%% (%.1f%% in control phases); %.0f ops drained/s\n",
	       CG_RINGS, CG_CPU_MAX, a_us / 10.0 / (double)ms[1],
	       k_att / 10.0 / (double)ms[1], kc_us / 10.0 / (double)ms[0],
	       ((double)a_us + k_att) / 10.0 / (double)ms[1], share * 100,
	       CG_SHARE_MAX * 100, CG_CPU, irq_att * 100,
	       irq_ctl * 100, (double)drained * 1000 / (double)ms[1]);
	printf("# calibration loop under the same cpu.max on CPU %d: %.1f%% (median of phases); attacker's median excess over its bound (%.0f%%, or the loop's + %.0f%%): %+.1f%%\n",
	       CG_CALIB_CPU, cph[CG_PHASES / 4] * 100, CG_SHARE_MAX * 100,
	       CG_SHARE_OVER * 100, over[CG_PHASES / 4] * 100);
	printf("# victim on CPU %d: %.1f%% of its control CPU time (median of phases; bound %.0f%%, less what the attacker's bound rose by: %.1f-%.1f%%); median margin %+.1f%%\n",
	       CG_CPU, ratio[CG_PHASES / 4] * 100, CG_KEEP_MIN * 100,
	       keep_min[0] * 100, keep_min[CG_PHASES / 2 - 1] * 100,
	       keep * 100);
	ret = over[CG_PHASES / 4] <= 0 && keep >= 0 ? 0 : 1;
out:
	cg_kill(attacker);
	cg_kill(victim);
	cg_kill(calib);
	if (saved_cap >= 0 && saved_cap < CG_USER_CAP) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%ld", saved_cap);
		write_file(PARAMS "/max_user_timers", buf);
	}
	cg_teardown();
	return ret;
}

/* ---- precise: one user's share of a CPU's precise heap ---- */

/*
 * Rounds of the precise mode: half with the attacker's timers at slack 0,
 * half (alternating, so that the host's drift falls on both) with the same
 * timers at the default slack, the control. PRECISE_VICTIMS victim timers
 * per round: 200 of each kind.
 */
#define PRECISE_ROUNDS		60
#define PRECISE_VICTIMS		10
#define PRECISE_ATTACK		4096	/* TW_PRECISE_MAX: the whole heap */

struct precise_shm {
	_Atomic uint32_t round;		/* futex: the round under way, + 1 */
	_Atomic uint32_t go;		/* futex: rounds the attacker armed */
	_Atomic uint32_t armed;		/* futex: rounds the victim armed */
	long min_held;			/* entries the attacker should hold */
	_Atomic uint32_t done[2];	/* futex: rounds each child finished */
	int64_t base;			/* the round's B, ns */
	int64_t held[PRECISE_ROUNDS];	/* attacker's entries, victim armed */
	int64_t late[PRECISE_ROUNDS][PRECISE_VICTIMS]; /* -1: skipped */
	int64_t early;			/* victim timers that fired early */
	int64_t arm_end[PRECISE_ROUNDS];	/* attacker armed, ns from B */
	int64_t vic_arm[PRECISE_ROUNDS];	/* victim armed, ns from B */
	uint64_t arm_ns;		/* the longest round start to armed */
	uint64_t gran;
	int cpu, other;
};

static void fx_wait(_Atomic uint32_t *a, uint32_t want)
{
	uint32_t v;

	while ((v = atomic_load(a)) < want)
		syscall(SYS_futex, a, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void fx_set(_Atomic uint32_t *a, uint32_t v)
{
	atomic_store(a, v);
	syscall(SYS_futex, a, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / NSEC_PER_SEC,
			       .tv_nsec = t % NSEC_PER_SEC };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int attacker_or_victim(uint64_t first, uint32_t n, uint64_t slack,
			      struct twheel *tw, struct twheel_sqbuf *sq,
			      uint64_t *ids, bool create)
{
	int r;

	twheel_sqbuf_reset(sq);
	for (uint32_t i = 0; i < n; i++) {
		int k = create ?
			twheel_sqbuf_schedule(sq, first, 0, TWHEEL_TIMER_ABSTIME, i) :
			twheel_sqbuf_modify(sq, ids[i], first, 0,
					    TWHEEL_TIMER_ABSTIME, i);

		if (slack != UINT64_MAX) {
			sq->ops[k].spec.flags |= TWHEEL_TIMER_SLACK;
			sq->ops[k].spec.slack = slack;
		}
	}
	r = twheel_submit_all(tw, sq);
	if (r < 0)
		return r;
	if (create)
		for (uint32_t i = 0; i < n; i++)
			ids[i] = sq->ops[i].spec.id;
	return 0;
}

/*
 * The attacker, as uid 65534: PRECISE_ATTACK one-shot slack-0 timers
 * armed from the CPU under test, re-armed each round to fall due 1.95
 * ticks after a tick B: the run at B moves them to the precise stage, as
 * many as the heap and the user's share take, where they wait until
 * B + 1.95 ticks. It arms before the victim in an attack round, after it
 * in a control round. At B + 1.1 ticks it reads from the other CPU how
 * many entries it holds (its fdinfo).
 */
static int precise_attacker(struct precise_shm *sh)
{
	static uint64_t ids[PRECISE_ATTACK];
	struct twheel_sqbuf sq;
	struct twheel tw;
	uint64_t t1;
	int r;

	become(NOBODY);
	tw_open(&tw);
	if ((r = twheel_sqbuf_init(&sq, PRECISE_ATTACK)))
		die("twheel_sqbuf_init", r);
	pin(sh->cpu);
	if ((r = attacker_or_victim(now_ns() + FAR_NS, PRECISE_ATTACK, 0,
				    &tw, &sq, ids, true)))
		die("arming the attacker's timers", r);
	for (uint32_t rd = 0; rd < PRECISE_ROUNDS; rd++) {
		fx_wait(&sh->round, rd + 1);
		if (!(rd & 1))
			fx_wait(&sh->armed, rd + 1);
		pin(sh->cpu);
		r = attacker_or_victim(sh->base + sh->gran * 195 / 100,
				       PRECISE_ATTACK, 0, &tw, &sq, ids, false);
		if (r)
			die("re-arming the attacker's timers", r);
		t1 = now_ns();
		sh->arm_end[rd] = (int64_t)(t1 - sh->base);
		fx_set(&sh->go, rd + 1);
		pin(sh->other);
		sleep_until(sh->base + sh->gran * 11 / 10);
		sh->held[rd] = (long)fdinfo_val(tw.fd, "twheel-user-precise");
		fx_set(&sh->done[0], rd + 1);
	}
	twheel_close(&tw);
	return 0;
}

/*
 * The victim, as uid 65533, on the same CPU: PRECISE_VICTIMS one-shot
 * slack-0 timers spread over [B + 1.2 ticks, B + 1.85 ticks], before the
 * attacker's deadline but in the same tick's bucket: more than
 * TW_SORT_MAX timers due in one tick are moved in the order they were
 * linked, so whoever armed first takes what the heap gives first. It arms
 * after the attacker in an attack round, before it in a control round
 * (the same timers moved by the same run, no heap taken from it), and
 * reads their events. A round whose armings ended later than two ticks
 * before B is skipped.
 */
static int precise_victim(struct precise_shm *sh)
{
	struct twheel_event ev[PRECISE_VICTIMS];
	uint64_t dl[PRECISE_VICTIMS];
	struct twheel_sqbuf sq;
	struct twheel tw;
	int r, got;

	become(OTHER_UID);
	tw_open(&tw);
	if ((r = twheel_sqbuf_init(&sq, PRECISE_VICTIMS)))
		die("twheel_sqbuf_init", r);
	pin(sh->cpu);
	for (uint32_t rd = 0; rd < PRECISE_ROUNDS; rd++) {
		uint64_t g = sh->gran, b, first, last;

		fx_wait(&sh->round, rd + 1);
		if (rd & 1)
			fx_wait(&sh->go, rd + 1);
		b = sh->base;
		first = b + g * 12 / 10;
		last = b + g * 185 / 100;
		twheel_sqbuf_reset(&sq);
		for (int i = 0; i < PRECISE_VICTIMS; i++) {
			int k;

			dl[i] = first + (last - first) * i / (PRECISE_VICTIMS - 1);
			k = twheel_sqbuf_schedule(&sq, dl[i], 0,
						  TWHEEL_TIMER_ABSTIME |
						  TWHEEL_TIMER_SLACK, i);
			sq.ops[k].spec.slack = 0;
		}
		r = twheel_submit_all(&tw, &sq);
		if (r < 0)
			die("arming the victim's timers", r);
		sh->vic_arm[rd] = (int64_t)(now_ns() - b);
		fx_set(&sh->armed, rd + 1);
		for (got = 0; got < PRECISE_VICTIMS; ) {
			r = twheel_read(&tw, ev, PRECISE_VICTIMS - got);
			if (r < 0)
				die("reading the victim's events", r);
			for (int i = 0; i < r; i++) {
				uint64_t j = ev[i].user_data;

				if (j >= PRECISE_VICTIMS || ev[i].deadline != dl[j])
					die("a stray event", -EPROTO);
				if (ev[i].fired < ev[i].deadline)
					sh->early++;
				sh->late[rd][j] = ev[i].fired >= ev[i].deadline ?
						  (int64_t)(ev[i].fired - ev[i].deadline) : 0;
			}
			got += r;
		}
		fx_wait(&sh->go, rd + 1);
		if (sh->vic_arm[rd] > -2 * (int64_t)g ||
		    sh->arm_end[rd] > -2 * (int64_t)g)
			for (int i = 0; i < PRECISE_VICTIMS; i++)
				sh->late[rd][i] = -1;
		fx_set(&sh->done[1], rd + 1);
	}
	twheel_close(&tw);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Bound of the precise mode: the attacked victim's median and p99 lateness
 * within 1.2 times the control's, plus PRECISE_SLOP_DIV-th of a tick
 * (50 us at the default 1 ms) for the emulator's noise. A victim without
 * a heap entry is late by half a tick on average, its p99 most of one.
 */
#define PRECISE_SLOP_DIV	20

static int mode_precise(void)
{
	int64_t att[PRECISE_ROUNDS * PRECISE_VICTIMS], ctl[PRECISE_ROUNDS * PRECISE_VICTIMS];
	/* Each round's latest victim timer, attack and control rounds. */
	int64_t amax[PRECISE_ROUNDS], cmax[PRECISE_ROUNDS];
	int na = 0, nc = 0, nra = 0, nrc = 0, held_ok = 0, st[2], bad = 0;
	long share = read_long(PARAMS "/precise_per_user");
	int64_t am, ap, cm, cp, slop, min_held;
	struct precise_shm *sh;
	struct twheel tw;
	pid_t pid[2];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("# needs 2 CPUs\n");
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	memset(sh, 0, sizeof(*sh));
	tw_open(&tw);
	sh->gran = info_of(&tw).granularity_ns;
	twheel_close(&tw);
	sh->cpu = 1;
	sh->other = 0;
	/* Before the share: the attacker holds what the heap takes. */
	min_held = share > 0 && share < PRECISE_ATTACK ? share : PRECISE_ATTACK;
	sh->min_held = min_held;
	pid[0] = fork();
	if (!pid[0])
		_exit(precise_attacker(sh));
	pid[1] = fork();
	if (!pid[1])
		_exit(precise_victim(sh));
	pin(sh->other);
	sleep_ns(200 * NSEC_PER_MSEC);	/* the attacker's first arming */
	for (uint32_t rd = 0; rd < PRECISE_ROUNDS; rd++) {
		/* Both armings well before B: twice the longest so far. */
		uint64_t t0 = now_ns(), b = t0 + 20 * sh->gran + 2 * sh->arm_ns;
		int64_t end;

		sh->base = b - b % sh->gran;
		fx_set(&sh->round, rd + 1);
		fx_wait(&sh->done[0], rd + 1);
		fx_wait(&sh->done[1], rd + 1);
		/* From the round's start to the end of its second arming. */
		end = sh->arm_end[rd] > sh->vic_arm[rd] ? sh->arm_end[rd] :
							   sh->vic_arm[rd];
		end += (int64_t)(sh->base - t0);
		if (end > (int64_t)sh->arm_ns)
			sh->arm_ns = end;
	}
	waitpid(pid[0], &st[0], 0);
	waitpid(pid[1], &st[1], 0);
	for (int i = 0; i < 2; i++)
		if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]))
			return 2;
	for (int rd = 0; rd < PRECISE_ROUNDS; rd++) {
		printf("# round %d %s: attacker armed at B%+lld us, victim at B%+lld us, held %lld, late us",
		       rd, rd & 1 ? "attack" : "control",
		       (long long)sh->arm_end[rd] / 1000,
		       (long long)sh->vic_arm[rd] / 1000, (long long)sh->held[rd]);
		for (int i = 0; i < PRECISE_VICTIMS; i++)
			printf(" %lld", (long long)sh->late[rd][i] / 1000);
		printf("\n");
		if (sh->late[rd][0] < 0)
			continue;
		if (rd & 1)
			/* Read at B + 1.1 ticks: the run at B may be moving. */
			held_ok += sh->held[rd] < 0 ||
				   sh->held[rd] * 4 >= min_held * 3;
		if (rd & 1)
			amax[nra] = 0;
		else
			cmax[nrc] = 0;
		for (int i = 0; i < PRECISE_VICTIMS; i++) {
			int64_t l = sh->late[rd][i];

			if (rd & 1) {
				att[na++] = l;
				amax[nra] = l > amax[nra] ? l : amax[nra];
			} else {
				ctl[nc++] = l;
				cmax[nrc] = l > cmax[nrc] ? l : cmax[nrc];
			}
		}
		if (rd & 1)
			nra++;
		else
			nrc++;
	}
	printf("# gran %llu ns, share %ld, attacker %d timers; rounds holding 3/4 of %lld: %d of %d; held:",
	       (unsigned long long)sh->gran, share, PRECISE_ATTACK,
	       (long long)min_held, held_ok, na / PRECISE_VICTIMS);
	for (int rd = 1; rd < PRECISE_ROUNDS; rd += 2)
		printf(" %lld", (long long)sh->held[rd]);
	printf("\n");
	if (na < PRECISE_ROUNDS * PRECISE_VICTIMS / 4 ||
	    nc < PRECISE_ROUNDS * PRECISE_VICTIMS / 4 ||
	    held_ok * PRECISE_VICTIMS * 2 < na) {
		printf("# too few rounds ran as meant (victim %d/%d timers, held %d)\n",
		       na, nc, held_ok);
		return 2;
	}
	qsort(att, na, sizeof(att[0]), cmp_i64);
	qsort(ctl, nc, sizeof(ctl[0]), cmp_i64);
	qsort(amax, nra, sizeof(amax[0]), cmp_i64);
	qsort(cmax, nrc, sizeof(cmax[0]), cmp_i64);
	am = att[na / 2];
	cm = ctl[nc / 2];
	slop = sh->gran / PRECISE_SLOP_DIV;
	printf("# victim lateness, us: attacked p50 %.1f p99 %.1f max %.1f (%d timers); control p50 %.1f p99 %.1f max %.1f (%d); early %lld\n",
	       am / 1e3, att[na * 99 / 100] / 1e3, att[na - 1] / 1e3, na,
	       cm / 1e3, ctl[nc * 99 / 100] / 1e3, ctl[nc - 1] / 1e3, nc,
	       (long long)sh->early);
	/*
	 * The tail by the median round's latest timer (the p99 of its 10):
	 * a vCPU stalled for ms in a round or two decides a p99 of all 300,
	 * and falls more often on the attack rounds, whose run at B moves
	 * 4,106 timers, than on the control's; a heap taken from the victim
	 * makes it late in every round.
	 */
	ap = amax[nra / 2];
	cp = cmax[nrc / 2];
	printf("# the median round's latest victim timer, us: attacked %.1f, control %.1f\n",
	       ap / 1e3, cp / 1e3);
	if (sh->early) {
		printf("# FAIL: %lld victim timers fired early\n", (long long)sh->early);
		bad = 1;
	}
	if (am * 10 > cm * 12 + slop * 10 || ap * 10 > cp * 12 + slop * 10) {
		printf("# FAIL: attacked lateness past 1.2x the control's + %lld us\n",
		       (long long)slop / 1000);
		bad = 1;
	}
	return bad;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "cpu"))
		return mode_cpu(argc > 2 ? atoi(argv[2]) : 1000);
	if (argc == 2 && !strcmp(argv[1], "user-cap"))
		return mode_user_cap();
	if (argc == 2 && !strcmp(argv[1], "userns-cap"))
		return mode_userns_cap();
	if (argc == 3 && !strcmp(argv[1], "close"))
		return mode_close(strtoull(argv[2], NULL, 0));
	if (argc >= 2 && !strcmp(argv[1], "burst"))
		return mode_burst(argc > 2 ? strtoull(argv[2], NULL, 0) : 65536,
				  argc > 3 ? atoi(argv[3]) : BURST_GAP_MAX_MS);
	if (argc >= 2 && !strcmp(argv[1], "burst-others"))
		return mode_burst_others(argc > 2 ? strtoull(argv[2], NULL, 0) : 65536);
	if (argc >= 2 && !strcmp(argv[1], "modify"))
		return mode_modify(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 4096,
				   argc > 3 ? (unsigned int)atoi(argv[3]) : 500);
	if (argc == 2 && !strcmp(argv[1], "ring-cgroup"))
		return mode_ring_cgroup();
	if (argc == 2 && !strcmp(argv[1], "precise"))
		return mode_precise();
	fprintf(stderr, "usage: twheel_abuse cpu [TIMERS] | user-cap | userns-cap | close N | burst [N [GAP_MS]] | burst-others [N] | modify [TIMERS [MS]] | ring-cgroup | precise\n");
	return 2;
}
