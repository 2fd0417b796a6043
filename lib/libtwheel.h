/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libtwheel: a small userspace library for /dev/twheel.
 *
 * A thin layer over the ioctls, read() and mmap() of uapi/twheel.h
 * (installed as <twheel/twheel_uapi.h>, which this header includes): it
 * fills the ABI's structs (clock, reserved fields and padding), splits
 * submission buffers into TWHEEL_IOC_BATCH calls, maps the deadline array
 * and waits for records. The ABI's structs, flags and errnos are used as
 * they are; see twheel(7) and the section 3 pages.
 *
 * Every function that can fail returns a negative errno (-EINVAL, ...) and
 * leaves errno alone as far as its interface goes: the value returned is
 * the error.
 */
#ifndef LIBTWHEEL_H
#define LIBTWHEEL_H

#include <stddef.h>
#include <stdint.h>
#include <twheel/twheel_uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBTWHEEL_VERSION_MAJOR	1
#define LIBTWHEEL_VERSION_MINOR	5

/* twheel_open() flags */
#define LIBTWHEEL_OPEN_MAP	0x1u	/* also twheel_map() */

/**
 * struct twheel - an open /dev/twheel file: one independent set of timers
 * @fd: the file, opened O_RDWR | O_NONBLOCK | O_CLOEXEC; -1 once closed.
 *	It may be given to poll() or epoll (EPOLLIN while records wait).
 * @open_flags: the flags given to twheel_open().
 * @info: TWHEEL_IOC_INFO as it was at twheel_open(). @info.max_timers
 *	and @info.flags do not change for the life of the file; the counters
 *	do, and twheel_get_info() reads them afresh.
 * @map: the deadline array, @info.max_timers slots, once twheel_map() has
 *	succeeded; NULL before.
 * @map_len: bytes mapped at @map (a whole number of pages), or 0.
 * @resv: reserved for the library; zero until twheel_ring_init(), which
 *	points @resv[0] to the ring's struct twheel_ring_sq.
 *
 * The caller owns the memory of the struct; twheel_open() fills it and
 * twheel_close() releases what it holds. The fields may be read.
 */
struct twheel {
	int fd;
	unsigned int open_flags;
	struct twheel_info info;
	uint64_t *map;
	size_t map_len;
	uint64_t resv[4];
};

/**
 * struct twheel_sqbuf - a submission buffer of batch operations
 * @ops: @capacity struct twheel_op, the first @count of them filled
 * @count: operations added since twheel_sqbuf_init() or the last
 *	twheel_sqbuf_reset()
 * @capacity: room in @ops
 * @resv: reserved for the library; zero.
 *
 * After twheel_submit(), @ops[i].result and, for a successful
 * TWHEEL_OP_SCHEDULE, @ops[i].spec.id hold what the kernel wrote back.
 */
struct twheel_sqbuf {
	struct twheel_op *ops;
	unsigned int count;
	unsigned int capacity;
	uint64_t resv[2];
};

/**
 * twheel_now() - the current CLOCK_MONOTONIC time in ns
 *
 * The clock of TWHEEL_CLOCK_MONOTONIC: for TWHEEL_TIMER_ABSTIME deadlines,
 * twheel_extend() and the times of struct twheel_event.
 *
 * Return: nanoseconds.
 */
uint64_t twheel_now(void);

/**
 * twheel_open() - open /dev/twheel
 * @tw: the handle to fill
 * @flags: 0, or LIBTWHEEL_OPEN_MAP to map the deadline array as well
 *
 * Opens TWHEEL_DEVICE and reads TWHEEL_IOC_INFO into @tw->info. On failure
 * nothing stays open and @tw->fd is -1.
 *
 * Return: 0, or -EINVAL for unknown @flags, or the negative errno of
 * open(), TWHEEL_IOC_INFO or twheel_map() (-ENOENT: the module is not
 * loaded).
 */
int twheel_open(struct twheel *tw, unsigned int flags);

/**
 * twheel_open_fd() - make a handle of a /dev/twheel file opened elsewhere
 * @tw: the handle to fill
 * @fd: an open /dev/twheel file: opened with other flags (blocking,
 *	read-only, ...), inherited, or received with SCM_RIGHTS
 * @flags: 0, or LIBTWHEEL_OPEN_MAP to map the deadline array as well
 *
 * As twheel_open(), on a file the caller opened: reads TWHEEL_IOC_INFO
 * into @tw->info and leaves the file's flags as they are (the _nowait and
 * _timeout reads need O_NONBLOCK). On success the handle owns @fd and
 * twheel_close() closes it; on failure @fd stays open, the caller's, and
 * @tw->fd is -1.
 *
 * Return: 0, or -EINVAL for unknown @flags, or the negative errno of
 * TWHEEL_IOC_INFO (-ENOTTY: not a /dev/twheel file) or twheel_map().
 */
int twheel_open_fd(struct twheel *tw, int fd, unsigned int flags);

/**
 * twheel_close() - unmap and close the file
 * @tw: a handle from twheel_open(); closed ones are ignored
 *
 * The kernel cancels every timer of the file and drops its eventfd once
 * the last reference to the file is gone (see twheel(7) for fork()).
 */
void twheel_close(struct twheel *tw);

/**
 * twheel_get_info() - read the limits and counters of the file
 * @tw: the handle
 * @info: out, TWHEEL_IOC_INFO's answer
 *
 * Return: 0 or a negative errno.
 */
int twheel_get_info(struct twheel *tw, struct twheel_info *info);

/**
 * twheel_schedule() - TWHEEL_IOC_SCHEDULE: start a timer
 * @tw: the handle
 * @value: ns: a delay from now, or with TWHEEL_TIMER_ABSTIME a
 *	CLOCK_MONOTONIC deadline
 * @period: ns between expiries with TWHEEL_TIMER_PERIODIC, else 0
 * @flags: TWHEEL_TIMER_ABSTIME, TWHEEL_TIMER_PERIODIC and
 *	TWHEEL_TIMER_FIXED_DELAY, passed to the kernel as they are
 * @user_data: echoed in the timer's records
 * @id: out, the new timer's id (never 0); may be NULL
 *
 * Return: 0, or the negative errno of the ioctl (-EINVAL, -ERANGE,
 * -ENOSPC, -EDQUOT, -EAGAIN, -ENOMEM; see twheel(7)).
 */
int twheel_schedule(struct twheel *tw, uint64_t value, uint64_t period,
		    unsigned int flags, uint64_t user_data, uint64_t *id);

/**
 * twheel_modify() - TWHEEL_IOC_MODIFY: re-arm a timer
 * @tw: the handle
 * @id: the timer
 * @value: as for twheel_schedule()
 * @period: as for twheel_schedule()
 * @flags: as for twheel_schedule()
 * @user_data: replaces the timer's user data
 *
 * Return: 1 if the timer was pending, 0 if it was not (a fired one-shot
 * timer whose record is unread: armed again, the record stays), or a
 * negative errno (-ENOENT for an id that is gone).
 */
int twheel_modify(struct twheel *tw, uint64_t id, uint64_t value,
		  uint64_t period, unsigned int flags, uint64_t user_data);

/**
 * twheel_now_clock() - the current time of a clock in ns (libtwheel 1.1)
 * @clockid: TWHEEL_CLOCK_MONOTONIC, TWHEEL_CLOCK_REALTIME or
 *	TWHEEL_CLOCK_BOOTTIME (their values are those of <time.h>)
 *
 * The clock a timer of that clock counts on: for its TWHEEL_TIMER_ABSTIME
 * deadlines and the times of its records.
 *
 * Return: nanoseconds, or 0 if clock_gettime() fails.
 */
uint64_t twheel_now_clock(int clockid);

/**
 * twheel_schedule_clock() - twheel_schedule() on a clock (libtwheel 1.1)
 * @tw: the handle
 * @clockid: TWHEEL_CLOCK_MONOTONIC, TWHEEL_CLOCK_REALTIME or
 *	TWHEEL_CLOCK_BOOTTIME
 * @value: ns: a delay from that clock's now, or with TWHEEL_TIMER_ABSTIME
 *	a deadline on it
 * @period: as for twheel_schedule(), on every clock: ns of @clockid
 *	between expiries with TWHEEL_TIMER_PERIODIC (needs a kernel whose
 *	twheel takes periods on CLOCK_REALTIME and CLOCK_BOOTTIME; an older
 *	one gives -EINVAL)
 * @flags: as for twheel_schedule(), and TWHEEL_TIMER_CANCEL_ON_SET for an
 *	absolute CLOCK_REALTIME timer, periodic or not
 * @user_data: as for twheel_schedule()
 * @id: as for twheel_schedule()
 *
 * The clocks' semantics are timerfd's, the period's included: see
 * twheel(7).
 *
 * Return: as twheel_schedule(); -EINVAL also for an unknown clock, or
 * TWHEEL_TIMER_CANCEL_ON_SET without TWHEEL_CLOCK_REALTIME and
 * TWHEEL_TIMER_ABSTIME.
 */
int twheel_schedule_clock(struct twheel *tw, int clockid, uint64_t value,
			  uint64_t period, unsigned int flags,
			  uint64_t user_data, uint64_t *id);

/**
 * twheel_modify_clock() - twheel_modify() onto a clock (libtwheel 1.1)
 * @tw: the handle
 * @id: the timer
 * @clockid: as for twheel_schedule_clock(); it may differ from the
 *	timer's current clock
 * @value: as for twheel_schedule_clock()
 * @period: as for twheel_schedule_clock()
 * @flags: as for twheel_schedule_clock()
 * @user_data: replaces the timer's user data
 *
 * Return: as twheel_modify().
 */
int twheel_modify_clock(struct twheel *tw, uint64_t id, int clockid,
			uint64_t value, uint64_t period, unsigned int flags,
			uint64_t user_data);

/**
 * twheel_schedule_slack() - twheel_schedule_clock() with a slack
 *	(libtwheel 1.4)
 * @tw: the handle
 * @clockid: as for twheel_schedule_clock()
 * @value: as for twheel_schedule_clock()
 * @period: as for twheel_schedule_clock()
 * @slack: ns the timer may fire after its deadline, as timerfd's timer
 *	slack: 0 for hrtimer's precision; one granularity_ns of
 *	twheel_get_info() or more for the default (see
 *	struct twheel_timer_spec in twheel(7)). At most INT64_MAX.
 * @flags: as for twheel_schedule_clock(); TWHEEL_TIMER_SLACK is implied
 * @user_data: as for twheel_schedule_clock()
 * @id: as for twheel_schedule_clock()
 *
 * Needs a kernel whose struct twheel_info has TWHEEL_INFO_SLACK; an older
 * one gives -EINVAL.
 *
 * Return: as twheel_schedule_clock(); -EINVAL also for @slack above
 * INT64_MAX.
 */
int twheel_schedule_slack(struct twheel *tw, int clockid, uint64_t value,
			  uint64_t period, uint64_t slack, unsigned int flags,
			  uint64_t user_data, uint64_t *id);

/**
 * twheel_modify_slack() - twheel_modify_clock() with a slack (libtwheel 1.4)
 * @tw: the handle
 * @id: the timer
 * @clockid: as for twheel_modify_clock()
 * @value: as for twheel_modify_clock()
 * @period: as for twheel_modify_clock()
 * @slack: as for twheel_schedule_slack(); replaces the timer's
 * @flags: as for twheel_modify_clock(); TWHEEL_TIMER_SLACK is implied
 * @user_data: replaces the timer's user data
 *
 * Return: as twheel_modify().
 */
int twheel_modify_slack(struct twheel *tw, uint64_t id, int clockid,
			uint64_t value, uint64_t period, uint64_t slack,
			unsigned int flags, uint64_t user_data);

/**
 * twheel_cancel() - TWHEEL_IOC_CANCEL: stop a timer
 * @tw: the handle
 * @id: the timer
 *
 * Either way the id is gone afterwards.
 *
 * Return: 1 if the timer was pending, 0 if not (a fired one-shot timer
 * whose record is still queued: the record stays), or a negative errno.
 */
int twheel_cancel(struct twheel *tw, uint64_t id);

/**
 * twheel_sqbuf_init() - allocate a submission buffer
 * @sq: the buffer to fill
 * @capacity: the most operations it holds, 1..INT_MAX; any number of
 *	TWHEEL_BATCH_MAX-sized calls is made for it
 *
 * Return: 0, -EINVAL for a bad @capacity, or -ENOMEM.
 */
int twheel_sqbuf_init(struct twheel_sqbuf *sq, unsigned int capacity);

/**
 * twheel_sqbuf_free() - free a submission buffer
 * @sq: the buffer; its @ops is freed and set to NULL
 */
void twheel_sqbuf_free(struct twheel_sqbuf *sq);

/**
 * twheel_sqbuf_reset() - empty a submission buffer for reuse
 * @sq: the buffer
 */
void twheel_sqbuf_reset(struct twheel_sqbuf *sq);

/**
 * twheel_sqbuf_schedule() - add a TWHEEL_OP_SCHEDULE
 * @sq: the buffer
 * @value: as for twheel_schedule()
 * @period: as for twheel_schedule()
 * @flags: as for twheel_schedule()
 * @user_data: as for twheel_schedule()
 *
 * Return: the index of the operation in @sq->ops, or -ENOBUFS if the
 * buffer is full.
 */
int twheel_sqbuf_schedule(struct twheel_sqbuf *sq, uint64_t value,
			  uint64_t period, unsigned int flags,
			  uint64_t user_data);

/**
 * twheel_sqbuf_schedule_clock() - add a TWHEEL_OP_SCHEDULE on a clock
 *	(libtwheel 1.1)
 * @sq: the buffer
 * @clockid: as for twheel_schedule_clock()
 * @value: as for twheel_schedule_clock()
 * @period: as for twheel_schedule_clock()
 * @flags: as for twheel_schedule_clock()
 * @user_data: as for twheel_schedule_clock()
 *
 * Return: as twheel_sqbuf_schedule().
 */
int twheel_sqbuf_schedule_clock(struct twheel_sqbuf *sq, int clockid,
				uint64_t value, uint64_t period,
				unsigned int flags, uint64_t user_data);

/**
 * twheel_sqbuf_modify_clock() - add a TWHEEL_OP_MODIFY onto a clock
 *	(libtwheel 1.1)
 * @sq: the buffer
 * @id: the timer
 * @clockid: as for twheel_schedule_clock()
 * @value: as for twheel_schedule_clock()
 * @period: as for twheel_schedule_clock()
 * @flags: as for twheel_schedule_clock()
 * @user_data: as for twheel_schedule_clock()
 *
 * Return: as twheel_sqbuf_schedule().
 */
int twheel_sqbuf_modify_clock(struct twheel_sqbuf *sq, uint64_t id,
			      int clockid, uint64_t value, uint64_t period,
			      unsigned int flags, uint64_t user_data);

/**
 * twheel_sqbuf_modify() - add a TWHEEL_OP_MODIFY
 * @sq: the buffer
 * @id: the timer
 * @value: as for twheel_modify()
 * @period: as for twheel_modify()
 * @flags: as for twheel_modify()
 * @user_data: as for twheel_modify()
 *
 * Return: the index of the operation, or -ENOBUFS if the buffer is full.
 */
int twheel_sqbuf_modify(struct twheel_sqbuf *sq, uint64_t id, uint64_t value,
			uint64_t period, unsigned int flags,
			uint64_t user_data);

/**
 * twheel_sqbuf_cancel() - add a TWHEEL_OP_CANCEL
 * @sq: the buffer
 * @id: the timer
 *
 * Return: the index of the operation, or -ENOBUFS if the buffer is full.
 */
int twheel_sqbuf_cancel(struct twheel_sqbuf *sq, uint64_t id);

/**
 * twheel_submit() - run the operations of a buffer with TWHEEL_IOC_BATCH
 * @tw: the handle
 * @sq: the buffer; left filled, with the results written back
 *
 * Submits @sq->ops[0..count) in order, in calls of at most
 * TWHEEL_BATCH_MAX operations (each call has its own "now" for relative
 * values), and stops at the first operation that fails: its result holds
 * the negative errno, later ones are not run and keep the result they
 * had (0). If a call after the first fails as a whole, the library writes
 * its negative errno in the result of that call's first operation, which
 * did not run.
 *
 * Return: the number of operations that succeeded (@sq->count if all
 * did; 0 for an empty buffer), or a negative errno if the first call
 * failed as a whole and nothing ran.
 */
int twheel_submit(struct twheel *tw, struct twheel_sqbuf *sq);

/**
 * twheel_submit_all() - run every operation of a buffer, each with its own
 *	result (libtwheel 1.3)
 * @tw: the handle
 * @sq: the buffer; left filled, with the results written back
 *
 * As twheel_submit(), but an operation that fails does not stop the ones
 * after it: they are submitted again, from the one after it, until every
 * operation has run once. This is what an event loop wants from the
 * operations it gathered in one round: a CANCEL whose timer's record was
 * read meanwhile (-ENOENT), or a SCHEDULE past a cap (-ENOSPC, -EDQUOT,
 * -EAGAIN), concerns that one connection, not the others. Each failure
 * costs one more TWHEEL_IOC_BATCH call. If a call after the first fails
 * as a whole, its errno is written into the result of every operation not
 * yet run; an operation the kernel could not read gets -EFAULT.
 *
 * Return: the number of operations that succeeded (@sq->count if all did;
 * 0 for an empty buffer): the others hold their negative errno in their
 * result. A negative errno if the first call failed as a whole and nothing
 * ran (no result is written then).
 */
int twheel_submit_all(struct twheel *tw, struct twheel_sqbuf *sq);

/**
 * twheel_prep_schedule() - fill a short op: schedule a one-shot
 *	CLOCK_MONOTONIC timer (libtwheel 1.2)
 * @op: the op
 * @value: ns: a delay, or with TWHEEL_TIMER_ABSTIME a deadline
 * @flags: 0 or TWHEEL_TIMER_ABSTIME (any other flag makes the op fail with
 *	EINVAL)
 * @user_data: echoed in the timer's events
 */
static inline void twheel_prep_schedule(struct twheel_short_op *op,
					uint64_t value, unsigned int flags,
					uint64_t user_data)
{
	/* Field by field: libtwheel.h is also C++. */
	op->op = TWHEEL_OP_SCHEDULE;
	op->flags = (uint16_t)(flags > 0xffff ? 0xffff : flags);
	op->result = 0;
	op->id = 0;
	op->value = value;
	op->user_data = user_data;
}

/**
 * twheel_prep_modify() - fill a short op: re-arm a timer as a one-shot
 *	CLOCK_MONOTONIC timer (libtwheel 1.2)
 * @op: the op
 * @id: the timer
 * @value: as for twheel_prep_schedule()
 * @flags: as for twheel_prep_schedule()
 * @user_data: as for twheel_prep_schedule()
 */
static inline void twheel_prep_modify(struct twheel_short_op *op, uint64_t id,
				      uint64_t value, unsigned int flags,
				      uint64_t user_data)
{
	twheel_prep_schedule(op, value, flags, user_data);
	op->op = TWHEEL_OP_MODIFY;
	op->id = id;
}

/**
 * twheel_prep_cancel() - fill a short op: cancel a timer (libtwheel 1.2)
 * @op: the op
 * @id: the timer
 */
static inline void twheel_prep_cancel(struct twheel_short_op *op, uint64_t id)
{
	op->op = TWHEEL_OP_CANCEL;
	op->flags = 0;
	op->result = 0;
	op->id = id;
	op->value = 0;
	op->user_data = 0;
}

/**
 * twheel_submit_short() - run short ops with TWHEEL_IOC_BATCH
 *	(libtwheel 1.2)
 * @tw: the handle
 * @ops: @count ops, filled with twheel_prep_schedule(),
 *	twheel_prep_modify() and twheel_prep_cancel(); the results and new ids
 *	are written back into them
 * @count: how many
 *
 * As twheel_submit(), for struct twheel_short_op: one-shot timers on
 * CLOCK_MONOTONIC, with half the bytes per operation to write and for the
 * kernel to read (TWHEEL_BATCH_SHORT). Periodic timers and other clocks
 * take a struct twheel_sqbuf.
 *
 * Return: as twheel_submit(), or -EOPNOTSUPP if the kernel lacks
 * TWHEEL_INFO_SHORT_OPS.
 */
int twheel_submit_short(struct twheel *tw, struct twheel_short_op *ops,
			unsigned int count);

/**
 * twheel_map() - map the deadline array (TWHEEL_INFO_MAP)
 * @tw: the handle
 *
 * Maps the file's array of CLOCK_MONOTONIC deadlines, one per slot, shared
 * and writable, at @tw->map. Does nothing if it is mapped already.
 *
 * Return: 0, -EOPNOTSUPP if the kernel lacks TWHEEL_INFO_MAP, or the
 * negative errno of mmap() (-EDQUOT, -EAGAIN and -ENOMEM for the caps).
 */
int twheel_map(struct twheel *tw);

/**
 * twheel_extend() - push a one-shot timer back without a system call
 * @tw: the handle, mapped with twheel_map()
 * @id: the timer, which must still be the caller's (see twheel_extend(3))
 * @deadline: the new CLOCK_MONOTONIC deadline in ns
 *
 * One atomic store of @deadline into slot TWHEEL_ID_SLOT(@id) of the array.
 * The kernel reads the slot when the timer comes due and files it again if
 * @deadline is later; otherwise the timer fires as usual.
 *
 * Return: 0, -ENXIO if the array is not mapped, or -EINVAL if the id's
 * slot is outside the array.
 */
int twheel_extend(struct twheel *tw, uint64_t id, uint64_t deadline);

/**
 * twheel_ring_init() - set up arming by slot (the submission ring)
 * @tw: the handle
 *
 * Maps the kernel's submission ring when it has one (TWHEEL_INFO_RING);
 * otherwise the twheel_ring_*() functions below make one system call per
 * op instead, with the same results for the program. Ring timers are
 * one-shot CLOCK_MONOTONIC timers named by slots the caller picks, 0 to
 * @tw->info.max_timers - 1. Does nothing if done already. Not thread-safe:
 * one thread at a time may use the twheel_ring_*() functions of a handle.
 *
 * Return: 0, or a negative errno (-ENOMEM, or mmap()'s: -EDQUOT, -EAGAIN
 * for the caps).
 */
int twheel_ring_init(struct twheel *tw);

/**
 * struct twheel_ring_sq - where the next ring op goes (libtwheel 1.5)
 * @ops: the ring's entries in the mapping; NULL without the kernel's ring
 * @tail: the entry the next op is written to; not yet published
 * @limit: @tail may reach this without a look at the kernel's sq_head;
 *	equal to @tail for good without the kernel's ring
 * @nslots: the slots are 0 to @nslots - 1
 * @resv: the library's
 *
 * The library's state, not the program's: after twheel_ring_init(),
 * @tw->resv[0] points to it, and the inline twheel_ring_arm() and
 * twheel_ring_cancel() below read and advance it. Only they and the
 * library may write it. It is in this header, as liburing's submission
 * queue is in liburing.h, so that an op costs a program a few stores, not
 * a call into the library; the layout is part of libtwheel's ABI from
 * version 1.5 on.
 */
struct twheel_ring_sq {
	struct twheel_ring_op *ops;
	uint32_t tail;
	uint32_t limit;
	uint32_t nslots;
	uint32_t resv;
};

/**
 * twheel_ring_op_slow() - a ring op the inline path does not take
 *	(libtwheel 1.5)
 * @tw: the handle
 * @op: TWHEEL_RING_ARM or TWHEEL_RING_CANCEL
 * @slot: as for twheel_ring_arm()
 * @value: as for twheel_ring_arm(); 0 for a cancel
 * @flags: as for twheel_ring_arm(); 0 for a cancel
 * @user_data: as for twheel_ring_arm(); 0 for a cancel
 *
 * What twheel_ring_arm() and twheel_ring_cancel() call when the op is not
 * a plain write at the tail: no twheel_ring_init() yet, a bad slot or
 * flag, no kernel ring (a system call per op), or the room the kernel
 * last gave used up. Programs call those two, not this.
 *
 * Return: as twheel_ring_arm(); -EINVAL for an unknown @op.
 */
int twheel_ring_op_slow(struct twheel *tw, unsigned int op, uint32_t slot,
			uint64_t value, unsigned int flags, uint64_t user_data);

/*
 * The library builds the two functions below as exported ones too (for
 * programs that do not use this header, and for those built against
 * libtwheel 1.4), by defining LIBTWHEEL_RING_INLINE before including it.
 */
#ifndef LIBTWHEEL_RING_INLINE
#define LIBTWHEEL_RING_INLINE static inline
#endif
LIBTWHEEL_RING_INLINE int twheel_ring_arm(struct twheel *tw, uint32_t slot,
					  uint64_t value, unsigned int flags,
					  uint64_t user_data);
LIBTWHEEL_RING_INLINE int twheel_ring_cancel(struct twheel *tw,
					     uint32_t slot);

/*
 * Writes an op at the tail, not yet published: four 8-byte stores of
 * general registers. Relaxed atomics: one plain store each, never merged
 * into vector stores or a zeroing of the entry first, which under
 * emulation cost more than the op's own stores. The caller checked that
 * the tail may move (sq->tail != sq->limit).
 */
static inline void twheel_ring_sq_write(struct twheel_ring_sq *sq,
					unsigned int op, uint32_t slot,
					uint64_t value, unsigned int flags,
					uint64_t user_data)
{
	uint64_t *e = (uint64_t *)(void *)
		&sq->ops[sq->tail % TWHEEL_RING_ENTRIES];
	/* struct twheel_ring_op's first 8 bytes: op, flags, pad, slot */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	uint64_t head = (uint64_t)(uint8_t)op << 56 |
			(uint64_t)(uint8_t)flags << 48 | slot;
#else
	uint64_t head = (uint64_t)(uint8_t)op |
			(uint64_t)(uint8_t)flags << 8 |
			(uint64_t)slot << 32;
#endif

	__atomic_store_n(&e[0], head, __ATOMIC_RELAXED);
	__atomic_store_n(&e[1], value, __ATOMIC_RELAXED);
	__atomic_store_n(&e[2], user_data, __ATOMIC_RELAXED);
	__atomic_store_n(&e[3], (uint64_t)0, __ATOMIC_RELAXED);
	sq->tail++;
}

/*
 * The handle's ring state if an op on @slot may be written at its tail
 * without the library: a kernel ring with room the kernel gave, and a
 * slot in range. NULL sends the op to twheel_ring_op_slow().
 */
static inline struct twheel_ring_sq *twheel_ring_sq_room(struct twheel *tw,
							  uint32_t slot)
{
	struct twheel_ring_sq *sq =
		(struct twheel_ring_sq *)(uintptr_t)tw->resv[0];

	if (__builtin_expect(!sq || sq->tail == sq->limit ||
			     slot >= sq->nslots, 0))
		return NULL;
	return sq;
}

/**
 * twheel_ring_arm() - arm the timer of a slot
 * @tw: the handle, set up with twheel_ring_init()
 * @slot: the caller's name for the timer
 * @value: ns: a delay, or a deadline with TWHEEL_TIMER_ABSTIME
 * @flags: 0 or TWHEEL_TIMER_ABSTIME
 * @user_data: for the timer's records
 *
 * Arms the slot's timer, or moves it if it is armed. With a ring the op
 * takes effect once submitted (twheel_ring_submit()); a delay then counts
 * from when the kernel takes the op, so ABSTIME is the precise choice.
 * Inline since libtwheel 1.5: with the kernel's ring, a compare and the
 * op's stores; everything else in twheel_ring_op_slow().
 *
 * Return: 0, or a negative errno: -EINVAL for a bad slot or flag, or
 * before twheel_ring_init(); without a ring the errors of
 * twheel_schedule() and twheel_modify(); with one, the kernel reports a
 * failed op as a completion (twheel_ring_reap()), and the call fails only
 * if the ring is full and the kernel took none of it when asked: -EIO (the
 * mapping's sq_tail was overwritten), or the errno of that system call.
 */
LIBTWHEEL_RING_INLINE int twheel_ring_arm(struct twheel *tw, uint32_t slot,
					  uint64_t value, unsigned int flags,
					  uint64_t user_data)
{
	struct twheel_ring_sq *sq = twheel_ring_sq_room(tw, slot);

	if (__builtin_expect(!sq ||
			     (flags & ~(unsigned int)TWHEEL_TIMER_ABSTIME), 0))
		return twheel_ring_op_slow(tw, TWHEEL_RING_ARM, slot, value,
					   flags, user_data);
	twheel_ring_sq_write(sq, TWHEEL_RING_ARM, slot, value, flags,
			     user_data);
	return 0;
}

/**
 * twheel_ring_cancel() - cancel the timer of a slot, if it has one
 * @tw: the handle, set up with twheel_ring_init()
 * @slot: the timer
 *
 * The slot is free afterwards. A record of an expiry that won the race
 * stays readable. Inline since libtwheel 1.5, as twheel_ring_arm().
 *
 * Return: 0, or a negative errno as twheel_ring_arm().
 */
LIBTWHEEL_RING_INLINE int twheel_ring_cancel(struct twheel *tw, uint32_t slot)
{
	struct twheel_ring_sq *sq = twheel_ring_sq_room(tw, slot);

	if (__builtin_expect(!sq, 0))
		return twheel_ring_op_slow(tw, TWHEEL_RING_CANCEL, slot, 0, 0,
					   0);
	twheel_ring_sq_write(sq, TWHEEL_RING_CANCEL, slot, 0, 0, 0);
	return 0;
}

/**
 * twheel_ring_submit() - publish the ops armed and cancelled so far
 * @tw: the handle, set up with twheel_ring_init()
 *
 * One release store, and a system call only when the kernel has stopped
 * polling the ring (TWHEEL_RING_NEED_WAKEUP). Nothing without a ring.
 *
 * Return: 0, or the negative errno of that system call.
 */
int twheel_ring_submit(struct twheel *tw);

/**
 * twheel_ring_reap() - the completions of failed ring ops
 * @tw: the handle, set up with twheel_ring_init()
 * @cqes: room for @nr completions
 * @nr: how many may be taken
 *
 * Return: how many were taken, 0 without a ring.
 */
int twheel_ring_reap(struct twheel *tw, struct twheel_ring_cqe *cqes,
		     unsigned int nr);

/**
 * twheel_read() - read records, waiting for the first
 * @tw: the handle
 * @evs: room for @nr records
 * @nr: at least 1
 *
 * Return: the number of records read (>= 1), -EINVAL if @nr is 0, -EINTR
 * if a signal interrupted the wait, or another negative errno.
 */
int twheel_read(struct twheel *tw, struct twheel_event *evs, unsigned int nr);

/**
 * twheel_read_nowait() - read the records already queued
 * @tw: the handle
 * @evs: room for @nr records
 * @nr: at least 1
 *
 * Return: the number of records read (>= 1), -EAGAIN if none is queued, or
 * another negative errno.
 */
int twheel_read_nowait(struct twheel *tw, struct twheel_event *evs,
		       unsigned int nr);

/**
 * twheel_read_timeout() - read records, waiting at most a while
 * @tw: the handle
 * @evs: room for @nr records
 * @nr: at least 1
 * @timeout_ns: the longest wait for the first record, in ns
 *
 * Return: the number of records read (>= 1), -ETIME if none came within
 * @timeout_ns, -EINTR if a signal interrupted the wait, or another negative
 * errno.
 */
int twheel_read_timeout(struct twheel *tw, struct twheel_event *evs,
			unsigned int nr, uint64_t timeout_ns);

/**
 * twheel_set_eventfd() - TWHEEL_IOC_SET_EVENTFD
 * @tw: the handle
 * @efd: an eventfd signalled on every expiry, or -1 to unregister
 *
 * The kernel holds its own reference to the eventfd: the caller may close
 * @efd whenever it likes.
 *
 * Return: 0, -EBADF if @efd is not open, -EINVAL if it is not an eventfd,
 * or another negative errno.
 */
int twheel_set_eventfd(struct twheel *tw, int efd);

/**
 * twheel_eventfd() - create an eventfd and register it
 * @tw: the handle
 * @flags: 0, or EFD_NONBLOCK and/or EFD_SEMAPHORE (EFD_CLOEXEC is implied)
 *
 * Return: the new eventfd, which the caller owns and closes, or -EINVAL
 * for other @flags, or the negative errno of eventfd() or
 * twheel_set_eventfd() (nothing is left open then).
 */
int twheel_eventfd(struct twheel *tw, unsigned int flags);

#ifdef __cplusplus
}
#endif

#endif /* LIBTWHEEL_H */
