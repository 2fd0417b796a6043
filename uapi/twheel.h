/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * twheel userspace ABI: /dev/twheel.
 *
 * Each open file is an independent set of timers. Timers are scheduled,
 * modified and cancelled with ioctls, one at a time or in batches; every
 * expiry queues (or updates) one fixed-size struct twheel_event per timer,
 * read with read(), announced by poll()/epoll (EPOLLIN) and, if registered,
 * by signalling an eventfd.
 *
 * Ids. A timer's id names a slot of its file's timer table and the
 * generation of that slot: id = generation << 32 | (slot + 1). Ids are
 * never 0; an id whose timer is gone gets ENOENT, even once its slot holds
 * another timer (until the slot has been reused 2^32 times).
 * TWHEEL_ID_SLOT(id) is the slot, the index into the deadline array.
 *
 * Deadline extension without a system call (TWHEEL_INFO_MAP). mmap() of the
 * file, MAP_SHARED, offset 0, length TWHEEL_MAP_SIZE(info.max_timers)
 * rounded up to the page size, maps an array of __u64 CLOCK_MONOTONIC
 * deadlines in ns, one per slot (on the clock of the file's time namespace:
 * see Clocks below). Every SCHEDULE and MODIFY stores the
 * timer's deadline in its slot. When a one-shot timer comes due, the kernel
 * reads its slot once: if the program stored a later deadline there, the
 * timer is filed again for it (values above INT64_MAX count as INT64_MAX)
 * and no event is queued; otherwise it fires as usual. So an idle timeout
 * is pushed back with one store per packet, and costs the kernel one
 * re-filing per expiry, not one system call per packet. Moving a deadline
 * earlier takes MODIFY; periodic timers and timers on another clock than
 * CLOCK_MONOTONIC ignore their slot. A store that
 * races the expiry either extends the timer or comes too late (the event
 * is queued): never both. The array is the program's: garbage in a slot
 * affects only that slot's timer. Any number of mappings share one array,
 * which lives until the file is closed and counts against the caps of
 * struct twheel_info (TWHEEL_MAP_SIZE / 256 timers); a private or
 * wrongly sized mapping, or one at another offset, gives EINVAL.
 *
 * Rules (Documentation/process/botching-up-ioctls.rst): all structs have a
 * fixed size and explicit padding; user pointers are __u64; padding and
 * reserved fields must be zero and unknown flags are refused with EINVAL,
 * so the ABI can grow. Unknown commands give ENOTTY.
 */
#ifndef _UAPI_TWHEEL_H
#define _UAPI_TWHEEL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define TWHEEL_DEVICE		"/dev/twheel"

/* The slot of an id: its index in the mapped deadline array. */
#define TWHEEL_ID_SLOT(id)	((__u32)(id) - 1)
/* Bytes of the deadline array, before rounding up to the page size. */
#define TWHEEL_MAP_SIZE(max_timers)	((__u64)(max_timers) * sizeof(__u64))

/*
 * Clocks (struct twheel_timer_spec::clockid; TWHEEL_INFO_CLOCKS says the
 * kernel has the last two); others give EINVAL. The values are those of
 * <time.h>. As timerfd's:
 *
 * - A CLOCK_REALTIME timer fires when the wall clock reaches its deadline:
 *   promptly after the clock is set forward past it, and never before the
 *   clock reaches it (set backward, it waits).
 * - A CLOCK_BOOTTIME timer counts time spent in suspend: one whose deadline
 *   passed during a suspend fires promptly after the resume.
 * - A relative timer on any clock is an absolute one at that clock's now
 *   plus the delay, as hrtimer and timerfd make it: setting the clock moves
 *   it too.
 * - A periodic timer's period is on its own clock, as timerfd's interval
 *   is: a fixed-rate one's deadlines stay on the grid of its first
 *   deadline on that clock. After a set forward past several periods the
 *   next event comes at once and its count includes the periods skipped
 *   (timerfd's overrun count), never early; after a set backward the next
 *   expiry waits for the clock. A fixed-delay one's next deadline is a
 *   period of its clock after each expiry.
 * - TWHEEL_TIMER_CANCEL_ON_SET (absolute CLOCK_REALTIME timers only, as
 *   TFD_TIMER_CANCEL_ON_SET, periodic or not): a set of the clock, or a
 *   resume from suspend, before the deadline (for a periodic timer: at
 *   any time before it is cancelled) ends the timer with an event flagged
 *   TWHEEL_EVENT_CLOCK_SET instead of expiring it.
 *
 * - Time namespaces (unshare(CLONE_NEWTIME), /proc/PID/timens_offsets):
 *   every absolute time of a file is on the clocks of the time namespace
 *   of the task that opened it, as that task's clock_gettime() reads
 *   them: ABSTIME values of SCHEDULE, MODIFY, batches, short ops and ring
 *   ARMs; the mapped deadline array, both ways; an event's deadline and
 *   fired. The namespace is the opener's at open() (the mapped array is
 *   read without a system call, so no later caller can be asked), and
 *   stays the file's wherever the file goes (fork, SCM_RIGHTS, pidfd_getfd).
 *   CLOCK_MONOTONIC and CLOCK_BOOTTIME take the namespace's offsets;
 *   CLOCK_REALTIME has none. An ABSTIME deadline before the namespace's
 *   clock could have been (one below its offset) is already due and
 *   fires at once, as timerfd's does; its event gives that earliest
 *   possible deadline. /proc/PID/fdinfo shows the file's offsets
 *   (twheel-timens-offsets-ns: monotonic boottime).
 *
 * - Alarm clocks (TWHEEL_INFO_ALARM): TWHEEL_CLOCK_REALTIME_ALARM and
 *   TWHEEL_CLOCK_BOOTTIME_ALARM count as CLOCK_REALTIME and CLOCK_BOOTTIME
 *   in everything above (CANCEL_ON_SET on the former), and a suspended
 *   machine is woken for their deadlines (through the kernel's alarmtimer
 *   and the RTC), as timerfd's are. Arming one needs CAP_WAKE_ALARM, which
 *   the kernel reads once, at open() (TWHEEL_INFO_WAKE_ALARM says the
 *   opener had it), where timerfd reads it at timerfd_create(): EPERM
 *   without it, after every EINVAL of the spec.
 *
 * Timers on CLOCK_REALTIME and CLOCK_BOOTTIME may be periodic like those
 * on CLOCK_MONOTONIC (TWHEEL_TIMER_PERIODIC, optionally
 * TWHEEL_TIMER_FIXED_DELAY), with the same lazy re-arming of an unread
 * one (see struct twheel_event). Their slot of the mapped deadline array
 * receives their deadline (on their clock) from SCHEDULE and MODIFY like
 * any other, but is never read back: like periodic timers they ignore it.
 * The events of a timer give its deadline and firing time on its own
 * clock.
 */
#define TWHEEL_CLOCK_REALTIME	0	/* == CLOCK_REALTIME */
#define TWHEEL_CLOCK_MONOTONIC	1	/* == CLOCK_MONOTONIC */
#define TWHEEL_CLOCK_BOOTTIME	7	/* == CLOCK_BOOTTIME */
#define TWHEEL_CLOCK_REALTIME_ALARM 8	/* == CLOCK_REALTIME_ALARM */
#define TWHEEL_CLOCK_BOOTTIME_ALARM 9	/* == CLOCK_BOOTTIME_ALARM */

/* struct twheel_timer_spec::flags */
#define TWHEEL_TIMER_ABSTIME	0x1u	/* value is a deadline, not a delay */
#define TWHEEL_TIMER_PERIODIC	0x2u	/* re-arm every period (fixed rate) */
/* With PERIODIC: the period counts from the end of the previous expiry. */
#define TWHEEL_TIMER_FIXED_DELAY 0x4u
/* With ABSTIME on CLOCK_REALTIME: a set of the clock ends the timer. */
#define TWHEEL_TIMER_CANCEL_ON_SET 0x8u
/* @slack holds the timer's slack (TWHEEL_INFO_SLACK says the kernel has it). */
#define TWHEEL_TIMER_SLACK	0x10u
#define TWHEEL_TIMER_FLAGS	(TWHEEL_TIMER_ABSTIME | TWHEEL_TIMER_PERIODIC | \
				 TWHEEL_TIMER_FIXED_DELAY | \
				 TWHEEL_TIMER_CANCEL_ON_SET | TWHEEL_TIMER_SLACK)

/**
 * struct twheel_timer_spec - schedule or modify one timer
 * @id: TWHEEL_IOC_SCHEDULE: out, the new timer's id (unique within the fd,
 *	never 0). TWHEEL_IOC_MODIFY: in, the timer to re-arm.
 * @value: ns; a delay from now (the time the call began: one time for
 *	all the CLOCK_MONOTONIC ops of a batch; the time of the op on another
 *	clock), or with TWHEEL_TIMER_ABSTIME a deadline on @clockid. At most
 *	INT64_MAX (EINVAL), and now + delay must not overflow (ERANGE). A
 *	deadline in the past fires at once.
 * @period: ns between expiries for a TWHEEL_TIMER_PERIODIC timer, > 0 and at
 *	most INT64_MAX; must be 0 otherwise (EINVAL).
 * @user_data: echoed in every event of this timer. MODIFY replaces it.
 * @clockid: TWHEEL_CLOCK_MONOTONIC, TWHEEL_CLOCK_REALTIME or
 *	TWHEEL_CLOCK_BOOTTIME (see above). MODIFY may change it.
 * @flags: TWHEEL_TIMER_*.
 * @slack: with TWHEEL_TIMER_SLACK, ns the timer may fire after its
 *	deadline (beyond system latency), as timerfd's timer slack or
 *	hrtimer's range: at most INT64_MAX (EINVAL). 0 asks for hrtimer's
 *	precision. A slack below the wheel's tick (twheel_info's
 *	granularity_ns) is rounded down to a power of two; one from a tick
 *	to below two is the default; one of two ticks or more is rounded
 *	down to a power of two of ticks, 2^k (at most 2^16), and the timer
 *	fires at the first multiple of 2^k ticks (of CLOCK_MONOTONIC, the
 *	same instants on every CPU) from its deadline on, with every other
 *	such timer due then: coalesced, never early. Without
 *	TWHEEL_TIMER_SLACK only 0 is taken
 *	(else EINVAL), and the timer has the default slack: one tick. Each
 *	SCHEDULE and MODIFY sets it (a short op sets the default). A CPU
 *	runs /dev/twheel's timers with a slack below the tick, all users'
 *	together, at most 16 times per tick (module parameter
 *	precise_per_tick), so such timers armed close together may fire up
 *	to a tick / 16 later than their slack. What a user can count on: a
 *	CPU keeps the slack of 4096 such timers within a tick of their
 *	deadline, all users' together, and of at most 1024 of one user's
 *	(module parameter precise_per_user; the user is the uid that opened
 *	the file, all its files and processes together, and for a uid of a
 *	user namespace the user of the initial namespace who made it, so a
 *	container's uids share one; a file opened with CAP_SYS_RESOURCE is
 *	exempt). Past either, a timer has the default precision: at most a
 *	tick late, never early. So no other user can take a user's slack
 *	away, unless four or more other users hold their whole share on that
 *	CPU at once.
 * @reserved: must be zero.
 *
 * SCHEDULE returns 0. If the id cannot be written back the new timer is
 * removed again and the call fails with EFAULT. MODIFY returns 1 if the
 * timer was pending, 0 if not: a fired one-shot timer whose event is still
 * unread is armed again (its id stays valid) and the queued event stays.
 */
struct twheel_timer_spec {
	__u64 id;
	__u64 value;
	__u64 period;
	__u64 user_data;
	__u32 clockid;
	__u32 flags;
	__u64 slack;
	__u64 reserved;
};

/**
 * struct twheel_cancel - cancel one timer
 * @id: in, the timer
 * @flags: must be zero
 * @pad: must be zero
 *
 * The ioctl returns 1 if the timer was pending (it will not fire again), 0
 * if it was not (a one-shot timer that has fired and whose event is still
 * queued: the event stays). Either way the id is gone afterwards.
 */
struct twheel_cancel {
	__u64 id;
	__u32 flags;
	__u32 pad;
};

/*
 * struct twheel_eventfd::flags: change nothing, but return 1 if @fd is the
 * registered eventfd (with @fd -1: if one is registered), else 0; what
 * a dump uses to find the eventfd (TWHEEL_INFO_RESTORE says the kernel
 * has it).
 */
#define TWHEEL_EVENTFD_QUERY	0x1u

/**
 * struct twheel_eventfd - register the eventfd signalled on every expiry
 * @fd: an eventfd, or -1 to unregister. A number that is not an open file
 *	gives EBADF; an open file that is not an eventfd, or a value below -1,
 *	gives EINVAL.
 *
 * The eventfd's counter goes up by one for each expiry callback; periods a
 * late fixed-rate timer skipped are counted in twheel_event::count only.
 * @flags: 0 or TWHEEL_EVENTFD_QUERY
 * @reserved: must be zero
 */
struct twheel_eventfd {
	__s32 fd;
	__u32 flags;
	__u64 reserved;
};

/* struct twheel_op::op */
#define TWHEEL_OP_SCHEDULE	1
#define TWHEEL_OP_MODIFY	2
#define TWHEEL_OP_CANCEL	3

/**
 * struct twheel_op - one operation of a batch
 * @op: TWHEEL_OP_*
 * @result: out; >= 0 on success (as the single ioctl would return), or a
 *	negative errno for the operation that stopped the batch
 * @spec: for SCHEDULE and MODIFY, as for the single ioctls; for CANCEL only
 *	@spec.id is used and the other fields must be zero
 */
struct twheel_op {
	__u32 op;
	__s32 result;
	struct twheel_timer_spec spec;
};

/**
 * struct twheel_short_op - one operation of a TWHEEL_BATCH_SHORT batch
 * @op: TWHEEL_OP_*
 * @flags: SCHEDULE and MODIFY: 0 or TWHEEL_TIMER_ABSTIME; CANCEL: 0
 * @result: out, as twheel_op::result
 * @id: SCHEDULE: out, the new timer's id; MODIFY and CANCEL: in, the timer
 * @value: SCHEDULE and MODIFY: as twheel_timer_spec::value; CANCEL: 0
 * @user_data: SCHEDULE and MODIFY: as twheel_timer_spec::user_data;
 *	CANCEL: 0
 *
 * Half the size of struct twheel_op, for the common case: one-shot timers
 * on CLOCK_MONOTONIC. An op means what the struct twheel_op with the same
 * op, id, value, user_data and flags, period 0 and clockid
 * TWHEEL_CLOCK_MONOTONIC (0 for a CANCEL) means, and fails as that would
 * (EINVAL for a flag other than TWHEEL_TIMER_ABSTIME). Periodic timers and
 * other clocks take struct twheel_op.
 */
struct twheel_short_op {
	__u16 op;
	__u16 flags;
	__s32 result;
	__u64 id;
	__u64 value;
	__u64 user_data;
};

/* Most operations in one TWHEEL_IOC_BATCH. */
#define TWHEEL_BATCH_MAX	4096

/*
 * struct twheel_batch::flags: @ops points to struct twheel_short_op rather
 * than struct twheel_op (TWHEEL_INFO_SHORT_OPS says the kernel has it).
 */
#define TWHEEL_BATCH_SHORT	0x1u

/**
 * struct twheel_batch - submit many operations in one call
 * @ops: user pointer to @count struct twheel_op (struct twheel_short_op
 *	with TWHEEL_BATCH_SHORT)
 * @count: 1..TWHEEL_BATCH_MAX
 * @flags: 0 or TWHEEL_BATCH_SHORT
 * @reserved: must be zero
 *
 * Operations run in order and the batch stops at the first one that fails:
 * that op's @result holds its -errno, later ops are untouched (@result stays
 * as passed), and the ioctl returns the number of ops that succeeded. So a
 * return value equal to @count means all succeeded. The array is read, run
 * and written back in chunks of up to 24 ops: an op that cannot be read
 * stops the batch before it, as a failed op would but with its @result left
 * as it was (the ioctl fails with EFAULT if that is the first op); a chunk
 * that cannot be written back ends the call with EFAULT (its ops did run,
 * later ones did not). A batch is not atomic: other calls on the file may
 * run between its chunks. Nothing is allocated for it.
 */
struct twheel_batch {
	__u64 ops;
	__u32 count;
	__u32 flags;
	__u64 reserved;
};

/* struct twheel_info::flags */
/* The opener had CAP_SYS_RESOURCE: @max_user_timers does not apply. */
#define TWHEEL_INFO_USER_CAP_EXEMPT	0x1u
/* mmap() gives the deadline array (see the top of this file). */
#define TWHEEL_INFO_MAP			0x2u
/* TWHEEL_CLOCK_REALTIME, TWHEEL_CLOCK_BOOTTIME and CANCEL_ON_SET work. */
#define TWHEEL_INFO_CLOCKS		0x4u
/* TWHEEL_IOC_BATCH takes TWHEEL_BATCH_SHORT. */
#define TWHEEL_INFO_SHORT_OPS		0x8u
/* struct twheel_timer_spec takes TWHEEL_TIMER_SLACK and a slack. */
#define TWHEEL_INFO_SLACK		0x10u
/* mmap() at TWHEEL_RING_OFFSET gives the submission ring (below). */
#define TWHEEL_INFO_RING		0x20u
/* TWHEEL_CLOCK_REALTIME_ALARM and TWHEEL_CLOCK_BOOTTIME_ALARM work. */
#define TWHEEL_INFO_ALARM		0x40u
/* The opener had CAP_WAKE_ALARM: this file may arm timers on them. */
#define TWHEEL_INFO_WAKE_ALARM		0x80u
/* TWHEEL_IOC_DUMP, TWHEEL_IOC_RESTORE and TWHEEL_IOC_RING_STATE work. */
#define TWHEEL_INFO_RESTORE		0x100u

/**
 * struct twheel_info - limits and counters of this fd
 * @granularity_ns: the wheel's tick: expiries are late by at most this
 *	much (plus system latency), or by their slack (TWHEEL_TIMER_SLACK)
 *	where that is less; never early
 * @max_timers: the most timers this fd may hold (module parameter
 *	max_timers, sampled at open); past it SCHEDULE fails with ENOSPC
 * @timers: timers this fd holds now: pending, or fired or cancelled with
 *	an unread event (those keep their slot against every cap until the
 *	event is read)
 * @queued: events waiting to be read
 * @flags: TWHEEL_INFO_*
 * @user_timers: timers held by all open files of this fd's user (the uid
 *	that opened it), in units of one timer: a file also holds the timers
 *	it keeps for reuse (up to TWHEEL_BATCH_MAX), one per 32 slots of its
 *	table, and TWHEEL_MAP_SIZE(max_timers) / 256 for a deadline array,
 *	until it is closed
 * @max_user_timers: the most timers one user may hold (module parameter
 *	max_user_timers); past it SCHEDULE and mmap() fail with EDQUOT. A
 *	user of a user namespace other than the initial one is charged to
 *	the namespace's creator too (and so on up), each against this cap:
 *	EDQUOT may come from an owner's count, which @user_timers does not
 *	show (fdinfo's twheel-owner-timers does)
 * @total_timers: timers held by all open files of the device, counted as
 *	@user_timers
 * @max_total_timers: the most timers all users together may hold (module
 *	parameter max_total_timers); past it SCHEDULE and mmap() fail with
 *	EAGAIN
 */
struct twheel_info {
	__u64 granularity_ns;
	__u32 max_timers;
	__u32 timers;
	__u32 queued;
	__u32 flags;
	__u64 user_timers;
	__u64 max_user_timers;
	__u64 total_timers;
	__u64 max_total_timers;
};

/* struct twheel_event::flags */
#define TWHEEL_EVENT_PERIODIC	0x1u	/* from a periodic timer */
/* A periodic timer cancelled after these expiries: no more will follow. */
#define TWHEEL_EVENT_CANCELLED	0x2u
/*
 * A TWHEEL_TIMER_CANCEL_ON_SET timer was ended by a set of its clock before
 * its deadline: it did not expire, and will not (count includes this end
 * as one, besides any expiries of a periodic timer not yet read; deadline
 * is the one the set ended, fired the clock's time when the end was
 * reported, and may be before deadline). A periodic timer's event has
 * TWHEEL_EVENT_PERIODIC too. The timer is gone once the event is read, as
 * a fired one-shot timer is.
 */
#define TWHEEL_EVENT_CLOCK_SET	0x4u

/**
 * struct twheel_event - what read() returns, one per timer with expiries
 * @id: the timer
 * @user_data: the timer's when the event was last updated: SCHEDULE's, or
 *	the latest MODIFY's. A MODIFY that overtakes an expiry still being
 *	recorded gives that expiry's event its new user_data.
 * @deadline: ns, the scheduled deadline of the latest expiry, on the
 *	timer's clock
 * @fired: ns, when that expiry ran, on the timer's clock (>= @deadline:
 *	never early; but see TWHEEL_EVENT_CLOCK_SET)
 * @count: expiries since the previous event of this timer was read,
 *	including periods skipped because the timer ran late or (on
 *	CLOCK_REALTIME and CLOCK_BOOTTIME) because its clock was set forward
 *	past them. A slow reader never loses an expiry and never makes the
 *	kernel queue more than one event per timer; a periodic timer due
 *	while its event is unread is not re-armed until read() counts the
 *	periods that passed.
 * @flags: TWHEEL_EVENT_*
 * @pad: zero
 *
 * read() returns only whole events; if copying them out faults, the events
 * not delivered stay queued and read() fails with EFAULT (or returns what
 * it did copy).
 */
struct twheel_event {
	__u64 id;
	__u64 user_data;
	__u64 deadline;
	__u64 fired;
	__u64 count;
	__u32 flags;
	__u32 pad;
};

/*
 * The submission ring: arm and cancel one-shot CLOCK_MONOTONIC timers
 * without a system call. mmap() of TWHEEL_RING_MAP_BYTES rounded up to the
 * page size, MAP_SHARED, at offset TWHEEL_RING_OFFSET, gives a header, an
 * array of TWHEEL_RING_ENTRIES ops (the submission queue) and one of as
 * many completions; the first such mmap() creates the ring (counted
 * against the caps as TWHEEL_RING_MAP_BYTES, the kernel's own state of
 * the ring, about 30 KiB, and 8 bytes per max_timers, as the deadline
 * array is), later ones map the same pages. Without it nothing changes.
 *
 * The program names a ring timer by a slot of its own choosing, 0 to
 * max_timers - 1 (it keeps the free ones itself); the kernel keeps the id
 * behind each slot. An op is written at sq[sq_tail % TWHEEL_RING_ENTRIES]
 * and published by a release store of sq_tail + 1; the kernel consumes
 * ops in order and says so by a release store of sq_head, after which the
 * entry may be written again. At most TWHEEL_RING_ENTRIES ops may be
 * outstanding (sq_tail - sq_head, modulo 2^32).
 *
 *   TWHEEL_RING_ARM     value (ns; a deadline with TWHEEL_TIMER_ABSTIME,
 *                       else a delay counted from when the op is drained),
 *                       user_data: arms the slot's timer, as SCHEDULE if
 *                       it has none (or its one-shot timer fired and its
 *                       event was read), else as MODIFY of that timer (an
 *                       unread event of it stays readable).
 *   TWHEEL_RING_CANCEL  cancels the slot's timer, if any, as CANCEL; the
 *                       slot is free afterwards. value and user_data 0.
 *
 * Expiries are reported as for any timer, by read(), with the id the
 * kernel gave the timer and the op's user_data. Pushing a ring timer
 * later needs another ARM: its deadline-array slot is that of its id.
 *
 * When an op takes effect: when the kernel drains the ring, which it does
 * at every system call into the file (read(), poll(), every ioctl, before
 * the call's own work, so ring ops published before an ioctl take effect
 * before it), on TWHEEL_IOC_RING_ENTER, and once per granularity_ns while
 * it polls. It polls while it keeps consuming ops; after two granules
 * without any it sets TWHEEL_RING_NEED_WAKEUP in flags and stops, until a
 * system call into the file finds ops to consume: a program that finds
 * the flag set after publishing (a full barrier between its store of
 * sq_tail and its load of flags) calls TWHEEL_IOC_RING_ENTER. Nothing
 * else restarts it, whatever the program writes to the ring meanwhile
 * (fdinfo shows twheel-ring-polling and twheel-ring-poll-runs). So an op
 * takes effect at the latest one granule (plus scheduling latency) after
 * it is published, or at the next system call into the file, whichever
 * is first. A timer is never early: an ABSTIME deadline stands as given;
 * a delay counts from the drain, so it is late by the drain's delay at
 * most.
 *
 * Who pays: a system call's drain is the caller's work. The poller is a
 * kernel thread of the ring's own ("twheel-ring/<pid>"), made by the
 * first system call into the file that starts it and attached to that
 * caller's cgroups (cgroup v2's cpu.max and cpu.weight, cpusets), with its
 * nice level and CPU affinity: a program gets no more CPU through its
 * rings than its cgroup gives it, and under a throttled cgroup its ops
 * may take effect later than a granule. The thread sleeps while the
 * poller is stopped and is stopped at release; it stays where it was
 * made if that process moves. Each ring (so each thread) counts against
 * its user's max_user_rings (128 by default; the mmap() that would create
 * one more fails with EDQUOT). If the thread cannot be made,
 * TWHEEL_IOC_RING_ENTER drains the ring, then fails with that error
 * (ENOMEM, EINTR, the cgroups' refusal) and the poller does not start.
 *
 * Ops on the same slot drained together (all of one drain, up to
 * TWHEEL_RING_ENTRIES ops) take effect as the last one alone: an ARM and
 * a CANCEL of a slot without a timer that meet in one drain never touch
 * the wheel and report nothing. (A program that picks its slots to
 * collide in the kernel's table may find some of its ops run one by one
 * instead, with the same outcome.) A CANCEL that races the expiry gives exactly one of: no event
 * (the cancel won), or the event (the expiry won; the event says so, as
 * for TWHEEL_IOC_CANCEL).
 *
 * Failures: an op that fails (EINVAL for a malformed one or a slot out of
 * range, the errors of SCHEDULE and MODIFY otherwise) writes a completion,
 * {slot, -errno, user_data}, at cq[cq_tail % TWHEEL_RING_ENTRIES] and a
 * release store of cq_tail + 1, if cq_tail - cq_head (the program's) is
 * below TWHEEL_RING_ENTRIES; otherwise it counts in cq_overflow. Nothing
 * else is reported: ops that succeed write no completion.
 *
 * The kernel reads sq_tail, cq_head and each op once, then checks them; it
 * never reads back what it wrote. A sq_tail more than TWHEEL_RING_ENTRIES
 * past the kernel's head consumes nothing and sets TWHEEL_RING_BAD_TAIL
 * (cleared by a drain that finds it sane again); it brings no ops, so it
 * keeps no poller going and starts none. One drain consumes at most
 * TWHEEL_RING_ENTRIES ops, each charged against the caps as SCHEDULE is.
 */
#define TWHEEL_RING_OFFSET	0x40000000ULL	/* 1 GiB */
#define TWHEEL_RING_ENTRIES	512
/* Most ops the kernel runs together (one twheel_fd_run_ops()) per drain. */
#define TWHEEL_RING_COALESCE	64

#define TWHEEL_RING_ARM		1
#define TWHEEL_RING_CANCEL	2

/* struct twheel_ring_hdr::flags */
#define TWHEEL_RING_NEED_WAKEUP	0x1u	/* not polling: TWHEEL_IOC_RING_ENTER */
#define TWHEEL_RING_BAD_TAIL	0x2u	/* sq_tail lies: nothing consumed */

/**
 * struct twheel_ring_hdr - the header of the ring, at its offset 0
 * @sq_tail: the program's: ops published (free-running, modulo 2^32)
 * @cq_head: the program's: completions read
 * @sq_head: the kernel's: ops consumed
 * @cq_tail: the kernel's: completions written
 * @flags: the kernel's: TWHEEL_RING_*
 * @entries: the kernel's: TWHEEL_RING_ENTRIES
 * @cq_overflow: the kernel's: completions lost to a full queue
 * @drained: the kernel's: ops consumed since the ring was created
 *
 * The program's fields and the kernel's are on separate cache lines.
 */
struct twheel_ring_hdr {
	__u32 sq_tail;
	__u32 cq_head;
	__u32 pad0[14];
	__u32 sq_head;
	__u32 cq_tail;
	__u32 flags;
	__u32 entries;
	__u64 cq_overflow;
	__u64 drained;
	__u64 pad1[4];
};

/* An op of the submission queue; reserved and pad must be 0. */
struct twheel_ring_op {
	__u8  op;
	__u8  flags;		/* TWHEEL_TIMER_ABSTIME, for ARM */
	__u16 pad;
	__u32 slot;
	__u64 value;
	__u64 user_data;
	__u64 reserved;
};

/* A completion: an op that failed. */
struct twheel_ring_cqe {
	__u32 slot;
	__s32 result;
	__u64 user_data;
};

#define TWHEEL_RING_SQ_OFF	128
#define TWHEEL_RING_CQ_OFF	(TWHEEL_RING_SQ_OFF + \
				 TWHEEL_RING_ENTRIES * 32)
#define TWHEEL_RING_MAP_BYTES	(TWHEEL_RING_CQ_OFF + \
				 TWHEEL_RING_ENTRIES * 16)

/*
 * Checkpoint and restore (TWHEEL_INFO_RESTORE): what CRIU's plugin and
 * `twheelctl dump` / `restore` use to move a file's timers to a new file,
 * in another process or on another machine, with the same ids.
 *
 * TWHEEL_IOC_DUMP describes the file's timers, one struct
 * twheel_timer_state each, from slot @pos of the id table on: the live
 * timers (pending, or fired with an unread event), the slots without one
 * (TWHEEL_STATE_FREE: @id is the id the slot's next timer gets) and, once
 * the slots are done, the timers cancelled with their event unread
 * (TWHEEL_STATE_ORPHAN). It drains the ring first, as every ioctl does.
 * Each entry is a snapshot of its timer under the file's lock; a timer
 * that expires while the dump goes on may be described before or after
 * that expiry, never half of it. To get a consistent picture, stop the
 * file's users first (CRIU freezes them): the timers go on firing meanwhile,
 * which is right, since their restored copies will carry every expiry
 * counted so far and fire the others, late but never early. EAGAIN: a
 * read() of the file was halfway through its copy, or read() took an
 * orphan's event between two calls: start again from @pos 0.
 *
 * TWHEEL_IOC_RESTORE recreates timers from such entries in a file that
 * holds none yet: the first call puts the file in restore mode, where the
 * ops that create ids (SCHEDULE, MODIFY, CANCEL, BATCH, RING_ENTER and the
 * ring's drains) fail with EBUSY, and a call with TWHEEL_RESTORE_DONE
 * leaves it. Give every entry TWHEEL_IOC_DUMP gave, in any order but for
 * those with an event (@ev_count > 0), which queue in the order they are
 * given: sort them by @ev_seq to keep the order read() had. A pending
 * timer is armed for @deadline (absolute, on @clockid of the file's time
 * namespace: a restored process in a time namespace whose clocks go on
 * from the dumped one's, as CRIU makes it, sees every deadline where it
 * was), fires at once if that has passed, and parks as read() would if
 * its event is still unread; its slot of the mapped deadline array is
 * left alone, so restore the array (write it through a mapping) before
 * the timers. Errors, by the first entry that fails (the call returns
 * how many entries it restored before it, or the error if none): EINVAL
 * for an entry TWHEEL_IOC_DUMP could not have given, EEXIST for an id
 * whose slot is taken, ENOSPC past max_timers, EPERM for an alarm clock
 * without CAP_WAKE_ALARM, EBUSY for a file that held timers before
 * restore mode, and those of SCHEDULE (EDQUOT, EAGAIN, ENOMEM). Closing
 * a file in restore mode is fine.
 *
 * TWHEEL_IOC_RING_STATE reads, or with TWHEEL_RING_STATE_SET (in restore
 * mode, once the ring is mapped) sets, the kernel's side of the
 * submission ring: its head and completion tail, its counters and the id
 * behind each of the program's slots. The program's side (sq_tail,
 * cq_head, the ops and completions) is in the mapping: copy it back
 * through one.
 */

/* struct twheel_timer_state::state */
#define TWHEEL_STATE_PENDING	0x1u	/* armed: fires at @deadline */
#define TWHEEL_STATE_ORPHAN	0x2u	/* cancelled; its event is unread */
#define TWHEEL_STATE_FREE	0x4u	/* no timer: @id is its slot's next */
#define TWHEEL_STATE_FLAGS	(TWHEEL_STATE_PENDING | TWHEEL_STATE_ORPHAN | \
				 TWHEEL_STATE_FREE)

/**
 * struct twheel_timer_state - one timer (or slot) of a dump
 * @id: the timer's id (TWHEEL_STATE_FREE: the slot's next one)
 * @deadline: TWHEEL_STATE_PENDING: its next expiry, ns on @clockid of the
 *	file's time namespace; else 0
 * @period: ns, for a periodic timer; else 0
 * @slack: with TWHEEL_TIMER_SLACK in @flags, as struct twheel_timer_spec's
 *	(the slack the kernel kept: a slack below the tick rounded down)
 * @user_data: the timer's latest
 * @clockid: TWHEEL_CLOCK_*
 * @flags: TWHEEL_TIMER_* of its arming (TWHEEL_TIMER_ABSTIME left out)
 * @state: TWHEEL_STATE_*
 * @ev_flags: the unread event's TWHEEL_EVENT_*
 * @ev_count: the unread event's count: expiries (and periods skipped)
 *	not yet read; 0: no unread event
 * @ev_user_data: the unread event's user_data
 * @ev_deadline: the unread event's deadline, ns on @ev_clockid of the
 *	file's time namespace
 * @ev_fired: the unread event's fired, likewise
 * @ev_seq: the event's place in the queue read() takes events from:
 *	smaller ones are read first
 * @ev_clockid: the clock of @ev_deadline and @ev_fired (a MODIFY onto
 *	another clock may have left it other than @clockid)
 * @pad: zero
 * @reserved: zero
 *
 * What is not here is not the timer's: a timer is restored from these
 * fields alone. FREE entries have only @id and @state.
 */
struct twheel_timer_state {
	__u64 id;
	__u64 deadline;
	__u64 period;
	__u64 slack;
	__u64 user_data;
	__u32 clockid;
	__u32 flags;
	__u32 state;
	__u32 ev_flags;
	__u64 ev_count;
	__u64 ev_user_data;
	__u64 ev_deadline;
	__u64 ev_fired;
	__u64 ev_seq;
	__u32 ev_clockid;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct twheel_dump - TWHEEL_IOC_DUMP
 * @timers: user pointer to @count struct twheel_timer_state
 * @count: room in @timers, 1..TWHEEL_BATCH_MAX
 * @flags: must be zero
 * @pos: in: where to go on (0 to begin); out: where the next call goes on
 * @reserved: must be zero
 *
 * Returns the number of entries written; fewer than @count (0 included)
 * means the dump is complete.
 */
struct twheel_dump {
	__u64 timers;
	__u32 count;
	__u32 flags;
	__u64 pos;
	__u64 reserved;
};

/* struct twheel_restore::flags: leave restore mode after these entries. */
#define TWHEEL_RESTORE_DONE	0x1u

/**
 * struct twheel_restore - TWHEEL_IOC_RESTORE
 * @timers: user pointer to @count struct twheel_timer_state
 * @count: 0..TWHEEL_BATCH_MAX
 * @flags: 0 or TWHEEL_RESTORE_DONE
 * @reserved: must be zero
 */
struct twheel_restore {
	__u64 timers;
	__u32 count;
	__u32 flags;
	__u64 reserved;
};

/* struct twheel_ring_state::flags: set rather than read. */
#define TWHEEL_RING_STATE_SET	0x1u

/**
 * struct twheel_ring_state - TWHEEL_IOC_RING_STATE
 * @ids: user pointer to @nslots __u64: the id behind each ring slot, or 0
 * @nslots: entries of @ids: reading, at least the ring's (max_timers when
 *	it was made; EINVAL if fewer); setting, at most the ring's
 * @flags: 0 or TWHEEL_RING_STATE_SET
 * @sq_head: the kernel's ops consumed (struct twheel_ring_hdr's)
 * @cq_tail: the kernel's completions written
 * @ring_flags: TWHEEL_RING_NEED_WAKEUP and TWHEEL_RING_BAD_TAIL
 * @pad: zero
 * @cq_overflow: as struct twheel_ring_hdr's
 * @drained: as struct twheel_ring_hdr's
 * @reserved: zero
 *
 * ENXIO without a ring. Reading returns the ring's number of slots.
 */
struct twheel_ring_state {
	__u64 ids;
	__u32 nslots;
	__u32 flags;
	__u32 sq_head;
	__u32 cq_tail;
	__u32 ring_flags;
	__u32 pad;
	__u64 cq_overflow;
	__u64 drained;
	__u64 reserved;
};

#define TWHEEL_IOC_MAGIC	0xB9
#define TWHEEL_IOC_SCHEDULE	_IOWR(TWHEEL_IOC_MAGIC, 0x00, struct twheel_timer_spec)
#define TWHEEL_IOC_MODIFY	_IOW(TWHEEL_IOC_MAGIC, 0x01, struct twheel_timer_spec)
#define TWHEEL_IOC_CANCEL	_IOW(TWHEEL_IOC_MAGIC, 0x02, struct twheel_cancel)
#define TWHEEL_IOC_BATCH	_IOW(TWHEEL_IOC_MAGIC, 0x03, struct twheel_batch)
#define TWHEEL_IOC_SET_EVENTFD	_IOW(TWHEEL_IOC_MAGIC, 0x04, struct twheel_eventfd)
#define TWHEEL_IOC_INFO		_IOR(TWHEEL_IOC_MAGIC, 0x05, struct twheel_info)
/* Drains the submission ring (see above); 0, or ENXIO with no ring. */
#define TWHEEL_IOC_RING_ENTER	_IO(TWHEEL_IOC_MAGIC, 0x06)
#define TWHEEL_IOC_DUMP		_IOWR(TWHEEL_IOC_MAGIC, 0x07, struct twheel_dump)
#define TWHEEL_IOC_RESTORE	_IOW(TWHEEL_IOC_MAGIC, 0x08, struct twheel_restore)
#define TWHEEL_IOC_RING_STATE	_IOWR(TWHEEL_IOC_MAGIC, 0x09, struct twheel_ring_state)

#endif /* _UAPI_TWHEEL_H */
