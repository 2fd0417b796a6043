// SPDX-License-Identifier: GPL-2.0
/*
 * trinity_twheel.so: teach trinity the ioctls of /dev/twheel.
 *
 * trinity picks ioctl commands from groups compiled into it and has none
 * for /dev/twheel, so on our file it would only try random numbers, which
 * never hit TWHEEL_IOC_*; and it opens one file of a -V path, blocking, so
 * its children sleep in read(). trinity makes every system call through
 * libc's syscall(); preloaded (LD_PRELOAD=trinity_twheel.so), this library
 * wraps it:
 *  - three ioctl() and read() calls out of four on other files go to one
 *    of a few /dev/twheel files of the child's own (opened on first use;
 *    one is closed and reopened now and then, with its timers);
 *  - an ioctl() on a /dev/twheel file gets, 15 times out of 16, one of the
 *    six commands (the rest keep trinity's number), and half the time an
 *    argument of our own: the command's struct filled with random bytes,
 *    then mostly fixed up field by field (valid clock and flags, zero
 *    reserved fields, small delays and ids, a batch whose ops point into
 *    the same buffer), so that calls get past the first EINVAL; the other
 *    half keep trinity's argument (a random value or a random page);
 *  - a read() of a blocking /dev/twheel file with nothing to read fails
 *    with EAGAIN after 20 ms instead of sleeping.
 * Every other call goes through untouched.
 *
 * Built as a shared object by tests/vm/vm.sh, copied into the guest
 * with trinity and the libc it needs; see tests/vm/guest/run.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "tw_util.h"

typedef long (*syscall_fn)(long, ...);

#define OWN_FDS	4

static syscall_fn real_syscall;
static dev_t twheel_rdev;
static u64 rnd_state = 0x74776865656c;
static int own_fd[OWN_FDS] = { -1, -1, -1, -1 };
static pid_t own_pid;

/* trinity's children are processes, not threads: one buffer each. */
static union {
	struct twheel_timer_spec spec;
	struct twheel_cancel cancel;
	struct twheel_eventfd efd;
	struct twheel_info info;
	struct {
		struct twheel_batch b;
		struct twheel_op ops[16];
	} batch;
	unsigned char bytes[4096];
} buf;

static uint64_t rnd64(void)
{
	return xorshift64s(&rnd_state);
}

static uint64_t rnd(uint64_t n)
{
	return n ? rnd64() % n : 0;
}

__attribute__((constructor)) static void init(void)
{
	struct stat sb;

	real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	if (!stat(TWHEEL_DEVICE, &sb) && S_ISCHR(sb.st_mode))
		twheel_rdev = sb.st_rdev;
}

static int is_twheel(long fd)
{
	struct stat sb;

	if (!twheel_rdev || fd < 0 || fd > 1 << 20)
		return 0;
	return !fstat((int)fd, &sb) && S_ISCHR(sb.st_mode) &&
	       sb.st_rdev == twheel_rdev;
}

/* Random bytes, then most fields made plausible. */
static void fix_spec(struct twheel_timer_spec *s)
{
	if (rnd(4))
		s->clockid = TWHEEL_CLOCK_MONOTONIC;
	if (rnd(4))
		s->flags &= TWHEEL_TIMER_FLAGS;
	if (rnd(4))
		s->slack = s->reserved = 0;
	if (rnd(2))
		s->value = rnd(100000000);	/* up to 100 ms */
	if (!(s->flags & TWHEEL_TIMER_PERIODIC) && rnd(4))
		s->period = 0;
	else if (rnd(2))
		s->period = 1 + rnd(100000000);
	if (rnd(4))
		s->id = 1 + rnd(64);
}

static long fix_arg(unsigned long cmd)
{
	unsigned int i, n;

	for (i = 0; i < sizeof(buf) / 8; i++)
		((uint64_t *)buf.bytes)[i] = rnd64();
	switch (cmd) {
	case TWHEEL_IOC_SCHEDULE:
	case TWHEEL_IOC_MODIFY:
		fix_spec(&buf.spec);
		break;
	case TWHEEL_IOC_CANCEL:
		if (rnd(4)) {
			buf.cancel.flags = 0;
			buf.cancel.pad = 0;
		}
		buf.cancel.id = 1 + rnd(64);
		break;
	case TWHEEL_IOC_SET_EVENTFD:
		buf.efd.fd = (int)rnd(64) - 1;
		if (rnd(4)) {
			buf.efd.flags = 0;
			buf.efd.reserved = 0;
		}
		break;
	case TWHEEL_IOC_BATCH:
		n = 1 + (unsigned int)rnd(16);
		buf.batch.b.ops = (uintptr_t)buf.batch.ops;
		buf.batch.b.count = rnd(8) ? n : (uint32_t)rnd64();
		if (rnd(4)) {
			buf.batch.b.flags = 0;
			buf.batch.b.reserved = 0;
		}
		for (i = 0; i < n; i++) {
			buf.batch.ops[i].op = rnd(8) ? 1 + (uint32_t)rnd(3) :
						       (uint32_t)rnd64();
			fix_spec(&buf.batch.ops[i].spec);
			if (buf.batch.ops[i].op == TWHEEL_OP_CANCEL && rnd(4)) {
				uint64_t id = buf.batch.ops[i].spec.id;

				memset(&buf.batch.ops[i].spec, 0,
				       sizeof(buf.batch.ops[i].spec));
				buf.batch.ops[i].spec.id = id;
			}
		}
		break;
	default:
		break;
	}
	return (long)buf.bytes;
}

/* One of this process's own /dev/twheel files, or -1. */
static long own_twheel_fd(void)
{
	unsigned int i = (unsigned int)rnd(OWN_FDS);

	if (own_pid != getpid()) {
		/* A new child: the parent's files are not ours to close. */
		own_pid = getpid();
		for (i = 0; i < OWN_FDS; i++)
			own_fd[i] = -1;
		i = 0;
	}
	if (own_fd[i] >= 0 && !rnd(256)) {
		close(own_fd[i]);	/* with whatever timers it has */
		own_fd[i] = -1;
	}
	if (own_fd[i] < 0)
		own_fd[i] = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC |
				 (rnd(2) ? O_NONBLOCK : 0));
	return own_fd[i];
}

long syscall(long nr, ...)
{
	static const unsigned long cmds[] = {
		TWHEEL_IOC_SCHEDULE, TWHEEL_IOC_MODIFY, TWHEEL_IOC_CANCEL,
		TWHEEL_IOC_BATCH, TWHEEL_IOC_SET_EVENTFD, TWHEEL_IOC_INFO,
	};
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if ((nr == SYS_ioctl || nr == SYS_read) && twheel_rdev && rnd(4) &&
	    !is_twheel(a[0])) {
		long fd = own_twheel_fd();

		if (fd >= 0)
			a[0] = fd;
	}
	if (nr == SYS_read && is_twheel(a[0]) &&
	    !(fcntl((int)a[0], F_GETFL) & O_NONBLOCK)) {
		struct pollfd p = { .fd = (int)a[0], .events = POLLIN };

		if (poll(&p, 1, 20) != 1) {
			errno = EAGAIN;
			return -1;
		}
	}
	if (nr == SYS_ioctl && is_twheel(a[0])) {
		/* trinity's random arguments seed our choices. */
		rnd_state ^= (uint64_t)a[2] * 0x9E3779B97F4A7C15ULL + (uint64_t)a[1];
		rnd_state |= 1;
		if (rnd(16))
			a[1] = (long)cmds[rnd(6)];
		if (rnd(2))
			a[2] = fix_arg((unsigned long)a[1]);
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
