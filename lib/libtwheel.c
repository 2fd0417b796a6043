// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libtwheel: see libtwheel.h for the interface and twheel(7) for the model.
 *
 * Every function returns a negative errno on failure. The functions that
 * make system calls may change errno as a side effect, as libc does, but
 * errno is never the way an error is reported.
 */
#define _GNU_SOURCE	/* ppoll() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/*
 * Exported; everything else is hidden (-fvisibility=hidden), and the map
 * gives the exported names their version. The header's inline ring ops
 * are built here as exported functions too (libtwheel 1.4's symbols).
 */
#define TWHEEL_API __attribute__((visibility("default")))
#define LIBTWHEEL_RING_INLINE TWHEEL_API

#include "libtwheel.h"

#define NSEC_PER_SEC	1000000000ull

/* The largest number of records one read() is asked for. */
#define READ_MAX	((unsigned int)(INT_MAX / sizeof(struct twheel_event)))

TWHEEL_API uint64_t twheel_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

TWHEEL_API uint64_t twheel_now_clock(int clockid)
{
	struct timespec ts;

	if (clock_gettime(clockid, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct twheel_timer_spec spec_on(int clockid, uint64_t id,
					uint64_t value, uint64_t period,
					unsigned int flags, uint64_t user_data)
{
	/* Everything not named here, slack and reserved included, is zero. */
	return (struct twheel_timer_spec){
		.id = id,
		.value = value,
		.period = period,
		.user_data = user_data,
		.clockid = (uint32_t)clockid,
		.flags = flags,
	};
}

static struct twheel_timer_spec spec_of(uint64_t id, uint64_t value,
					uint64_t period, unsigned int flags,
					uint64_t user_data)
{
	return spec_on(TWHEEL_CLOCK_MONOTONIC, id, value, period, flags,
		       user_data);
}

TWHEEL_API int twheel_map(struct twheel *tw)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t len;
	void *p;

	if (tw->map)
		return 0;
	if (!(tw->info.flags & TWHEEL_INFO_MAP))
		return -EOPNOTSUPP;
	if (page <= 0)
		page = 4096;
	len = TWHEEL_MAP_SIZE(tw->info.max_timers);
	len = (len + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
	if (len > SIZE_MAX)
		return -ENOMEM;
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 tw->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	tw->map = p;
	tw->map_len = (size_t)len;
	return 0;
}

/* Fills @tw for @fd; on failure @tw->fd is -1 and @fd is left open. */
static int handle_init(struct twheel *tw, int fd, unsigned int flags)
{
	int ret;

	memset(tw, 0, sizeof(*tw));
	tw->fd = -1;
	if (flags & ~LIBTWHEEL_OPEN_MAP)
		return -EINVAL;
	tw->open_flags = flags;
	if (ioctl(fd, TWHEEL_IOC_INFO, &tw->info) < 0)
		return -errno;
	tw->fd = fd;
	if (flags & LIBTWHEEL_OPEN_MAP) {
		ret = twheel_map(tw);
		if (ret < 0) {
			tw->fd = -1;
			return ret;
		}
	}
	return 0;
}

TWHEEL_API int twheel_open(struct twheel *tw, unsigned int flags)
{
	int fd, ret;

	memset(tw, 0, sizeof(*tw));
	tw->fd = -1;
	if (flags & ~LIBTWHEEL_OPEN_MAP)
		return -EINVAL;
	fd = open(TWHEEL_DEVICE, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = handle_init(tw, fd, flags);
	if (ret < 0)
		close(fd);
	return ret;
}

TWHEEL_API int twheel_open_fd(struct twheel *tw, int fd, unsigned int flags)
{
	return handle_init(tw, fd, flags);
}

static void ring_free(struct twheel *tw);

TWHEEL_API void twheel_close(struct twheel *tw)
{
	ring_free(tw);
	if (tw->map)
		munmap(tw->map, tw->map_len);
	tw->map = NULL;
	tw->map_len = 0;
	if (tw->fd >= 0)
		close(tw->fd);
	tw->fd = -1;
}

TWHEEL_API int twheel_get_info(struct twheel *tw, struct twheel_info *info)
{
	if (ioctl(tw->fd, TWHEEL_IOC_INFO, info) < 0)
		return -errno;
	return 0;
}

TWHEEL_API int twheel_schedule(struct twheel *tw, uint64_t value,
			       uint64_t period, unsigned int flags,
			       uint64_t user_data, uint64_t *id)
{
	struct twheel_timer_spec s = spec_of(0, value, period, flags,
					     user_data);

	if (ioctl(tw->fd, TWHEEL_IOC_SCHEDULE, &s) < 0)
		return -errno;
	if (id)
		*id = s.id;
	return 0;
}

TWHEEL_API int twheel_modify(struct twheel *tw, uint64_t id, uint64_t value,
			     uint64_t period, unsigned int flags,
			     uint64_t user_data)
{
	struct twheel_timer_spec s = spec_of(id, value, period, flags,
					     user_data);
	int ret = ioctl(tw->fd, TWHEEL_IOC_MODIFY, &s);

	return ret < 0 ? -errno : ret;
}

TWHEEL_API int twheel_schedule_clock(struct twheel *tw, int clockid,
				     uint64_t value, uint64_t period,
				     unsigned int flags, uint64_t user_data,
				     uint64_t *id)
{
	struct twheel_timer_spec s = spec_on(clockid, 0, value, period, flags,
					     user_data);

	if (ioctl(tw->fd, TWHEEL_IOC_SCHEDULE, &s) < 0)
		return -errno;
	if (id)
		*id = s.id;
	return 0;
}

TWHEEL_API int twheel_modify_clock(struct twheel *tw, uint64_t id,
				   int clockid, uint64_t value,
				   uint64_t period, unsigned int flags,
				   uint64_t user_data)
{
	struct twheel_timer_spec s = spec_on(clockid, id, value, period, flags,
					     user_data);
	int ret = ioctl(tw->fd, TWHEEL_IOC_MODIFY, &s);

	return ret < 0 ? -errno : ret;
}

TWHEEL_API int twheel_schedule_slack(struct twheel *tw, int clockid,
				     uint64_t value, uint64_t period,
				     uint64_t slack, unsigned int flags,
				     uint64_t user_data, uint64_t *id)
{
	struct twheel_timer_spec s = spec_on(clockid, 0, value, period,
					     flags | TWHEEL_TIMER_SLACK,
					     user_data);

	s.slack = slack;
	if (ioctl(tw->fd, TWHEEL_IOC_SCHEDULE, &s) < 0)
		return -errno;
	if (id)
		*id = s.id;
	return 0;
}

TWHEEL_API int twheel_modify_slack(struct twheel *tw, uint64_t id,
				   int clockid, uint64_t value,
				   uint64_t period, uint64_t slack,
				   unsigned int flags, uint64_t user_data)
{
	struct twheel_timer_spec s = spec_on(clockid, id, value, period,
					     flags | TWHEEL_TIMER_SLACK,
					     user_data);
	int ret;

	s.slack = slack;
	ret = ioctl(tw->fd, TWHEEL_IOC_MODIFY, &s);
	return ret < 0 ? -errno : ret;
}

TWHEEL_API int twheel_cancel(struct twheel *tw, uint64_t id)
{
	struct twheel_cancel c = { .id = id };
	int ret = ioctl(tw->fd, TWHEEL_IOC_CANCEL, &c);

	return ret < 0 ? -errno : ret;
}

TWHEEL_API int twheel_sqbuf_init(struct twheel_sqbuf *sq,
				 unsigned int capacity)
{
	memset(sq, 0, sizeof(*sq));
	if (!capacity || capacity > INT_MAX)
		return -EINVAL;
	sq->ops = calloc(capacity, sizeof(*sq->ops));
	if (!sq->ops)
		return -ENOMEM;
	sq->capacity = capacity;
	return 0;
}

TWHEEL_API void twheel_sqbuf_free(struct twheel_sqbuf *sq)
{
	free(sq->ops);
	sq->ops = NULL;
	sq->count = 0;
	sq->capacity = 0;
}

TWHEEL_API void twheel_sqbuf_reset(struct twheel_sqbuf *sq)
{
	sq->count = 0;
}

/* Appends one operation; the whole record is rewritten, result included. */
static int sqbuf_add(struct twheel_sqbuf *sq, uint32_t op,
		     const struct twheel_timer_spec *spec)
{
	if (sq->count >= sq->capacity)
		return -ENOBUFS;
	sq->ops[sq->count] = (struct twheel_op){ .op = op, .spec = *spec };
	return (int)sq->count++;
}

TWHEEL_API int twheel_sqbuf_schedule(struct twheel_sqbuf *sq, uint64_t value,
				     uint64_t period, unsigned int flags,
				     uint64_t user_data)
{
	struct twheel_timer_spec s = spec_of(0, value, period, flags,
					     user_data);

	return sqbuf_add(sq, TWHEEL_OP_SCHEDULE, &s);
}

TWHEEL_API int twheel_sqbuf_modify(struct twheel_sqbuf *sq, uint64_t id,
				   uint64_t value, uint64_t period,
				   unsigned int flags, uint64_t user_data)
{
	struct twheel_timer_spec s = spec_of(id, value, period, flags,
					     user_data);

	return sqbuf_add(sq, TWHEEL_OP_MODIFY, &s);
}

TWHEEL_API int twheel_sqbuf_schedule_clock(struct twheel_sqbuf *sq,
					   int clockid, uint64_t value,
					   uint64_t period, unsigned int flags,
					   uint64_t user_data)
{
	struct twheel_timer_spec s = spec_on(clockid, 0, value, period, flags,
					     user_data);

	return sqbuf_add(sq, TWHEEL_OP_SCHEDULE, &s);
}

TWHEEL_API int twheel_sqbuf_modify_clock(struct twheel_sqbuf *sq,
					 uint64_t id, int clockid,
					 uint64_t value, uint64_t period,
					 unsigned int flags,
					 uint64_t user_data)
{
	struct twheel_timer_spec s = spec_on(clockid, id, value, period, flags,
					     user_data);

	return sqbuf_add(sq, TWHEEL_OP_MODIFY, &s);
}

TWHEEL_API int twheel_sqbuf_cancel(struct twheel_sqbuf *sq, uint64_t id)
{
	/* A batched CANCEL uses spec.id only: the clock too must be zero. */
	struct twheel_timer_spec s = { .id = id };

	return sqbuf_add(sq, TWHEEL_OP_CANCEL, &s);
}

/*
 * Runs @count ops of @size bytes at @ops in TWHEEL_BATCH_MAX-sized calls;
 * @result points to the first op's result field. As twheel_submit().
 */
static int submit_ops(struct twheel *tw, void *ops, size_t size,
		      unsigned int count, unsigned int flags, int32_t *result)
{
	unsigned int done = 0, n;
	int ret;

	while (done < count) {
		struct twheel_batch b = {
			.ops = (uintptr_t)((char *)ops + (size_t)done * size),
			.flags = flags,
		};

		n = count - done;
		if (n > TWHEEL_BATCH_MAX)
			n = TWHEEL_BATCH_MAX;
		b.count = n;
		ret = ioctl(tw->fd, TWHEEL_IOC_BATCH, &b);
		if (ret < 0) {
			ret = -errno;
			if (!done)
				return ret;
			*(int32_t *)((char *)result + (size_t)done * size) = ret;
			break;
		}
		done += (unsigned int)ret;
		if ((unsigned int)ret < n)
			break;
	}
	return (int)done;
}

TWHEEL_API int twheel_submit(struct twheel *tw, struct twheel_sqbuf *sq)
{
	if (!sq->count)
		return 0;
	return submit_ops(tw, sq->ops, sizeof(*sq->ops), sq->count, 0,
			  &sq->ops[0].result);
}

/*
 * As twheel_submit(), but past failures: after an op that failed, the ops
 * after it are submitted again, so each op runs once and gets its own
 * result. Every call runs at least one op or ends the loop.
 */
TWHEEL_API int twheel_submit_all(struct twheel *tw, struct twheel_sqbuf *sq)
{
	unsigned int start = 0, ok = 0, n, i;
	int ret;

	while (start < sq->count) {
		struct twheel_batch b = {
			.ops = (uintptr_t)&sq->ops[start],
		};

		n = sq->count - start;
		if (n > TWHEEL_BATCH_MAX)
			n = TWHEEL_BATCH_MAX;
		b.count = n;
		ret = ioctl(tw->fd, TWHEEL_IOC_BATCH, &b);
		if (ret < 0) {
			ret = -errno;
			if (!start)
				return ret;
			/* Nothing of this call ran: every op left says why. */
			for (i = start; i < sq->count; i++)
				sq->ops[i].result = ret;
			break;
		}
		ok += (unsigned int)ret;
		start += (unsigned int)ret;
		if ((unsigned int)ret < n) {
			/*
			 * Op @start failed and holds its errno; one the
			 * kernel could not read kept its result (0) and did
			 * not run either.
			 */
			if (sq->ops[start].result >= 0)
				sq->ops[start].result = -EFAULT;
			start++;
		}
	}
	return (int)ok;
}

TWHEEL_API int twheel_submit_short(struct twheel *tw,
				   struct twheel_short_op *ops,
				   unsigned int count)
{
	if (!(tw->info.flags & TWHEEL_INFO_SHORT_OPS))
		return -EOPNOTSUPP;
	return submit_ops(tw, ops, sizeof(*ops), count, TWHEEL_BATCH_SHORT,
			  &ops[0].result);
}

TWHEEL_API int twheel_extend(struct twheel *tw, uint64_t id,
			     uint64_t deadline)
{
	uint32_t slot = TWHEEL_ID_SLOT(id);

	if (!tw->map)
		return -ENXIO;
	if (slot >= tw->info.max_timers)
		return -EINVAL;
	/*
	 * The kernel reads the slot once, with READ_ONCE(), when the timer
	 * comes due, and looks at nothing else the program wrote: the store
	 * only has to be single-copy atomic, so relaxed is enough.
	 */
	__atomic_store_n(&tw->map[slot], deadline, __ATOMIC_RELAXED);
	return 0;
}

/* One non-blocking read(): records, or -EAGAIN if none is queued. */
static int read_once(struct twheel *tw, struct twheel_event *evs,
		     unsigned int nr)
{
	ssize_t r;

	if (nr > READ_MAX)
		nr = READ_MAX;
	r = read(tw->fd, evs, (size_t)nr * sizeof(*evs));
	if (r < 0)
		return -errno;
	return (int)((size_t)r / sizeof(*evs));
}

/*
 * Reads, waiting with ppoll() while nothing is queued: until @end
 * (CLOCK_MONOTONIC ns) if @timed, else for ever. The fd is non-blocking,
 * so records another reader took first mean another wait, not a block.
 */
static int read_wait(struct twheel *tw, struct twheel_event *evs,
		     unsigned int nr, int timed, uint64_t end)
{
	struct pollfd pfd = { .fd = tw->fd, .events = POLLIN };
	struct timespec ts;
	uint64_t now, left;
	int ret;

	if (!nr)
		return -EINVAL;
	for (;;) {
		ret = read_once(tw, evs, nr);
		if (ret != -EAGAIN)
			return ret;
		if (timed) {
			now = twheel_now();
			if (now >= end)
				return -ETIME;
			left = end - now;
			ts.tv_sec = (time_t)(left / NSEC_PER_SEC);
			ts.tv_nsec = (long)(left % NSEC_PER_SEC);
		}
		ret = ppoll(&pfd, 1, timed ? &ts : NULL, NULL);
		if (ret < 0)
			return -errno;
		if (pfd.revents & POLLNVAL)
			return -EBADF;
	}
}

TWHEEL_API int twheel_read(struct twheel *tw, struct twheel_event *evs,
			   unsigned int nr)
{
	return read_wait(tw, evs, nr, 0, 0);
}

TWHEEL_API int twheel_read_nowait(struct twheel *tw, struct twheel_event *evs,
				  unsigned int nr)
{
	if (!nr)
		return -EINVAL;
	return read_once(tw, evs, nr);
}

TWHEEL_API int twheel_read_timeout(struct twheel *tw, struct twheel_event *evs,
				   unsigned int nr, uint64_t timeout_ns)
{
	uint64_t now = twheel_now();
	uint64_t end = timeout_ns > UINT64_MAX - now ? UINT64_MAX :
		       now + timeout_ns;

	return read_wait(tw, evs, nr, 1, end);
}

TWHEEL_API int twheel_set_eventfd(struct twheel *tw, int efd)
{
	struct twheel_eventfd reg = { .fd = efd };

	if (ioctl(tw->fd, TWHEEL_IOC_SET_EVENTFD, &reg) < 0)
		return -errno;
	return 0;
}

TWHEEL_API int twheel_eventfd(struct twheel *tw, unsigned int flags)
{
	int efd, ret;

	if (flags & ~(unsigned int)(EFD_NONBLOCK | EFD_SEMAPHORE))
		return -EINVAL;
	efd = eventfd(0, (int)flags | EFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	ret = twheel_set_eventfd(tw, efd);
	if (ret < 0) {
		close(efd);
		return ret;
	}
	return efd;
}

/*
 * Arming by slot: the library's state, in tw->resv[0]. @sq first: the
 * header's inline ops read it there (struct twheel_ring_sq). With the
 * kernel's ring: the mapping; without: the id behind each slot, for the
 * system calls that stand in for the ring, and @sq.tail == @sq.limit for
 * good, so that every op comes to twheel_ring_op_slow().
 */
struct ring_state {
	struct twheel_ring_sq sq;
	struct twheel_ring_hdr *hdr;
	struct twheel_ring_cqe *cq;
	size_t len;
	uint64_t *ids;
};

static struct ring_state *ring_of(struct twheel *tw)
{
	return (struct ring_state *)(uintptr_t)tw->resv[0];
}

static void ring_free(struct twheel *tw)
{
	struct ring_state *r = ring_of(tw);

	if (!r)
		return;
	if (r->hdr)
		munmap(r->hdr, r->len);
	free(r->ids);
	free(r);
	tw->resv[0] = 0;
}

TWHEEL_API int twheel_ring_init(struct twheel *tw)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ring_state *r;
	void *p;

	if (ring_of(tw))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->sq.nslots = tw->info.max_timers;
	if (page <= 0)
		page = 4096;
	if (tw->info.flags & TWHEEL_INFO_RING) {
		r->len = (TWHEEL_RING_MAP_BYTES + (size_t)page - 1) /
			 (size_t)page * (size_t)page;
		p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 tw->fd, (off_t)TWHEEL_RING_OFFSET);
		if (p == MAP_FAILED) {
			int err = errno;

			free(r);
			return -err;
		}
		r->hdr = p;
		r->sq.ops = (void *)((char *)p + TWHEEL_RING_SQ_OFF);
		r->cq = (void *)((char *)p + TWHEEL_RING_CQ_OFF);
		r->sq.tail = __atomic_load_n(&r->hdr->sq_tail, __ATOMIC_RELAXED);
		r->sq.limit = r->sq.tail;	/* the first op looks at sq_head */
	} else {
		r->ids = calloc(r->sq.nslots ? r->sq.nslots : 1,
				sizeof(*r->ids));
		if (!r->ids) {
			free(r);
			return -ENOMEM;
		}
	}
	tw->resv[0] = (uint64_t)(uintptr_t)r;
	return 0;
}

/*
 * Room for one op once the room the kernel last gave (sq.limit) is used
 * up: sq_head read again, and the ring published and drained by the
 * kernel if need be. The ops come here once per TWHEEL_RING_ENTRIES at
 * most.
 */
static int ring_room(struct twheel *tw, struct ring_state *r)
{
	uint32_t head;

	/* Pairs with the kernel's release store of sq_head. */
	head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);
	if (r->sq.tail - head >= TWHEEL_RING_ENTRIES) {
		__atomic_store_n(&r->hdr->sq_tail, r->sq.tail,
				 __ATOMIC_RELEASE);
		if (ioctl(tw->fd, TWHEEL_IOC_RING_ENTER) < 0)
			return -errno;
		head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);
		/* A drain consumes nothing only if sq_tail was overwritten. */
		if (r->sq.tail - head >= TWHEEL_RING_ENTRIES)
			return -EIO;
	}
	r->sq.limit = head + TWHEEL_RING_ENTRIES;
	return 0;
}

/* twheel_ring_arm() without the kernel's ring: a system call. */
static int ring_arm_call(struct twheel *tw, struct ring_state *r,
			 uint32_t slot, uint64_t value, unsigned int flags,
			 uint64_t user_data)
{
	uint64_t id;
	int ret;

	if (r->ids[slot]) {
		ret = twheel_modify(tw, r->ids[slot], value, 0, flags,
				    user_data);
		if (ret != -ENOENT)
			return ret < 0 ? ret : 0;
		r->ids[slot] = 0;
	}
	ret = twheel_schedule(tw, value, 0, flags, user_data, &id);
	if (ret < 0)
		return ret;
	r->ids[slot] = id;
	return 0;
}

/* twheel_ring_cancel() without the kernel's ring: a system call. */
static int ring_cancel_call(struct twheel *tw, struct ring_state *r,
			    uint32_t slot)
{
	int ret;

	if (!r->ids[slot])
		return 0;
	ret = twheel_cancel(tw, r->ids[slot]);
	if (ret < 0 && ret != -ENOENT)
		return ret;
	r->ids[slot] = 0;
	return 0;
}

TWHEEL_API int twheel_ring_op_slow(struct twheel *tw, unsigned int op,
				   uint32_t slot, uint64_t value,
				   unsigned int flags, uint64_t user_data)
{
	struct ring_state *r = ring_of(tw);
	int ret;

	if (!r || slot >= r->sq.nslots)
		return -EINVAL;
	if (op == TWHEEL_RING_ARM) {
		if (flags & ~(unsigned int)TWHEEL_TIMER_ABSTIME)
			return -EINVAL;
		if (!r->hdr)
			return ring_arm_call(tw, r, slot, value, flags,
					     user_data);
	} else if (op == TWHEEL_RING_CANCEL) {
		if (!r->hdr)
			return ring_cancel_call(tw, r, slot);
		value = 0;
		flags = 0;
		user_data = 0;
	} else {
		return -EINVAL;
	}
	if (r->sq.tail == r->sq.limit) {
		ret = ring_room(tw, r);
		if (ret < 0)
			return ret;
	}
	twheel_ring_sq_write(&r->sq, op, slot, value, flags, user_data);
	return 0;
}

TWHEEL_API int twheel_ring_submit(struct twheel *tw)
{
	struct ring_state *r = ring_of(tw);

	if (!r)
		return -EINVAL;
	if (!r->hdr)
		return 0;
	/* Pairs with the kernel's acquire load of sq_tail. */
	__atomic_store_n(&r->hdr->sq_tail, r->sq.tail, __ATOMIC_RELEASE);
	/* Pairs with the kernel's smp_mb() before it rechecks sq_tail. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) &
	    TWHEEL_RING_NEED_WAKEUP) {
		if (ioctl(tw->fd, TWHEEL_IOC_RING_ENTER) < 0)
			return -errno;
	}
	return 0;
}

TWHEEL_API int twheel_ring_reap(struct twheel *tw,
				struct twheel_ring_cqe *cqes, unsigned int nr)
{
	struct ring_state *r = ring_of(tw);
	uint32_t head, tail;
	unsigned int n = 0;

	if (!r)
		return -EINVAL;
	if (!r->hdr)
		return 0;
	head = __atomic_load_n(&r->hdr->cq_head, __ATOMIC_RELAXED);
	/* Pairs with the kernel's release store of cq_tail. */
	tail = __atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE);
	while (n < nr && head != tail)
		cqes[n++] = r->cq[head++ % TWHEEL_RING_ENTRIES];
	/* The entries are read: the kernel may write them again. */
	__atomic_store_n(&r->hdr->cq_head, head, __ATOMIC_RELEASE);
	return (int)n;
}
