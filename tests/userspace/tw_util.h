/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tw_util.h: the helpers the userspace test programs of /dev/twheel
 * in tests/userspace share: clock reads, a PRNG step, the ioctl calling
 * convention and thin wrappers around the ioctls of uapi/twheel.h.
 *
 * Nothing here reports errors: each program checks the values returned in
 * its own way (test failures, "# FAIL" lines, exit codes).
 */
#ifndef TW_UTIL_H
#define TW_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>

#include "uapi/twheel.h"

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* the ABI's own types, so &spec.id is a u64 * */
typedef __u64 u64;
typedef __u32 u32;

/* CLOCK_MONOTONIC in ns, the clock of TWHEEL_CLOCK_MONOTONIC timers */
static inline u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

/* Sleep @ns, resuming after signals. */
static inline void sleep_ns(u64 ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC_PER_SEC,
			       .tv_nsec = ns % NSEC_PER_SEC };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One step of xorshift64* on @state (which must not be 0). */
static inline u64 xorshift64s(u64 *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1DULL;
}

/* An ioctl's return value, or -errno. */
static inline long xioctl(int fd, unsigned long req, void *arg)
{
	long r = ioctl(fd, req, arg);

	return r < 0 ? -errno : r;
}

/* open(TWHEEL_DEVICE) read-write, close-on-exec, plus @flags */
static inline int tw_open_dev(int flags)
{
	return open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC | flags);
}

static inline struct twheel_timer_spec mkspec(u64 value, u64 period, u64 ud,
					      u32 flags)
{
	return (struct twheel_timer_spec){
		.value = value, .period = period, .user_data = ud,
		.clockid = TWHEEL_CLOCK_MONOTONIC, .flags = flags,
	};
}

/* SCHEDULE; *@id (if given) gets the new id, 0 on failure. */
static inline long tw_sched(int fd, u64 value, u64 period, u64 ud, u32 flags,
			    u64 *id)
{
	struct twheel_timer_spec s = mkspec(value, period, ud, flags);
	long r = xioctl(fd, TWHEEL_IOC_SCHEDULE, &s);

	if (id)
		*id = r == 0 ? s.id : 0;
	return r;
}

static inline long tw_modify(int fd, u64 id, u64 value, u64 period, u64 ud,
			     u32 flags)
{
	struct twheel_timer_spec s = mkspec(value, period, ud, flags);

	s.id = id;
	return xioctl(fd, TWHEEL_IOC_MODIFY, &s);
}

static inline long tw_cancel(int fd, u64 id)
{
	struct twheel_cancel c = { .id = id };

	return xioctl(fd, TWHEEL_IOC_CANCEL, &c);
}

static inline long tw_info(int fd, struct twheel_info *info)
{
	memset(info, 0, sizeof(*info));
	return xioctl(fd, TWHEEL_IOC_INFO, info);
}

static inline long tw_eventfd(int fd, int efd)
{
	struct twheel_eventfd e = { .fd = efd };

	return xioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e);
}

static inline long tw_batch(int fd, struct twheel_op *ops, u32 count)
{
	struct twheel_batch b = { .ops = (uintptr_t)ops, .count = count };

	return xioctl(fd, TWHEEL_IOC_BATCH, &b);
}

#endif /* TW_UTIL_H */
