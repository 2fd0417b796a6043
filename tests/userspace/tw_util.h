/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tw_util.h: the helpers the userspace test programs of /dev/twheel
 * in tests/userspace share: clock reads, a PRNG step and, for the checks of
 * the raw ABI, the ioctl calling convention, a spec builder and the
 * file's fdinfo. Everything
 * else goes through libtwheel (<libtwheel.h>, linked statically), which
 * this header includes.
 *
 * Nothing here reports errors: each program checks the values returned in
 * its own way (test failures, "# FAIL" lines, exit codes).
 */
#ifndef TW_UTIL_H
#define TW_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "uapi/twheel.h"
#include <libtwheel.h>

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* libtwheel's types, so &id is what twheel_schedule() takes */
typedef uint64_t u64;
typedef uint32_t u32;

/* CLOCK_MONOTONIC in ns, the clock of TWHEEL_CLOCK_MONOTONIC timers */
static inline u64 now_ns(void)
{
	return twheel_now();
}

/* Sleep @ns, resuming after signals. */
static inline void sleep_ns(u64 ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC_PER_SEC,
			       .tv_nsec = ns % NSEC_PER_SEC };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * @cpu's count on the row @label ("LOC:", "HRTIMER:") of @path, a table of
 * /proc/interrupts' or /proc/softirqs' shape: a header naming the columns
 * CPU0 CPU1 ..., online CPUs only. -1 if there is none.
 */
static inline long long proc_cpu_count(const char *path, const char *label,
				       int cpu)
{
	char line[8192], *p, *end, *save;
	size_t len = strlen(label);
	int col = -1, n = 0;
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		for (p = strtok_r(line, " \t\n", &save); p;
		     p = strtok_r(NULL, " \t\n", &save), n++)
			if (!strncmp(p, "CPU", 3) && atoi(p + 3) == cpu)
				col = n;
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, label, len))
			continue;
		p += len;
		for (n = 0; n <= col; n++) {
			v = strtoll(p, &end, 10);
			if (end == p) {
				v = -1;
				break;
			}
			p = end;
		}
		break;
	}
	fclose(f);
	return v;
}

/* One step of xorshift64* on @state (which must not be 0). */
static inline u64 xorshift64s(u64 *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1DULL;
}

/*
 * For the raw ABI checks only (bad structs, reserved fields, EFAULT, ...):
 * an ioctl's return value, or -errno.
 */
static inline long xioctl(int fd, unsigned long req, void *arg)
{
	long r = ioctl(fd, req, arg);

	return r < 0 ? -errno : r;
}

/* A valid spec to hand-edit for the raw ABI checks. */
static inline struct twheel_timer_spec mkspec(u64 value, u64 period, u64 ud,
					      u32 flags)
{
	return (struct twheel_timer_spec){
		.value = value, .period = period, .user_data = ud,
		.clockid = TWHEEL_CLOCK_MONOTONIC, .flags = flags,
	};
}

/* A number from /proc/self/fdinfo/@fd ("twheel-extended", ...), or -1. */
static inline long long fdinfo_val(int fd, const char *key)
{
	char path[64], line[128];
	long long v = -1;
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtoll(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

/* debugfs twheel/stats: a line per CPU, these columns (cpu.c). */
#define STATS		"/sys/kernel/debug/twheel/stats"
#define STAT_EXPIRED	4
#define STAT_KICKS	8
#define STAT_ADVANCE_NS	9
#define STAT_EXPIRE_NS	10
#define STAT_YIELDS	11
#define STAT_DEFERRALS	12
#define STAT_PROGRAMS	13
#define STAT_HOLDS	14
#define STAT_COLS	15

/*
 * Column @col (STAT_*) of CPU @cpu's line of debugfs twheel/stats, -1 if
 * none.
 * @fd: an open descriptor of it (root opened it before giving up root),
 * or -1 to open it here.
 */
static inline long cpu_stat(int fd, int cpu, int col)
{
	char line[512];
	long v = -1;
	FILE *f;

	if (fd >= 0) {
		lseek(fd, 0, SEEK_SET);
		f = fdopen(dup(fd), "r");
	} else {
		f = fopen(STATS, "r");
	}
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long c[STAT_COLS];

		if (sscanf(line, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7],
			   &c[8], &c[9], &c[10], &c[11], &c[12],
			   &c[13], &c[14]) == STAT_COLS && c[0] == (unsigned long long)cpu)
			v = (long)c[col];
	}
	fclose(f);
	return v;
}

#endif /* TW_UTIL_H */
