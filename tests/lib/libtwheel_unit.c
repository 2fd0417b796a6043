// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * Host-side unit tests of libtwheel, run by tests/lib/check-install.sh
 * (make lib-check) without /dev/twheel: this program defines ioctl(), which
 * the library's calls bind to instead of libc's, and answers with a model
 * of the ABI that checks every struct the library hands it (clock,
 * reserved fields, padding, batch sizes) and records what it was given.
 * Records are read from a pipe standing in for the file, and mmap() of the
 * file's submission ring gets a buffer that the model drains on
 * TWHEEL_IOC_RING_ENTER.
 *
 *   libtwheel_unit        prints "# ok NAME" / "# not ok NAME" lines;
 *                         exit status 0 iff all passed
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libtwheel.h>

#define FAKE_FD		1000
#define NSEC_PER_MSEC	1000000ull

/* The model's state: what it was given and what it is told to do. */
static struct {
	struct twheel_timer_spec spec;	/* last SCHEDULE or MODIFY */
	struct twheel_cancel cancel;	/* last CANCEL */
	unsigned int calls;		/* BATCH calls */
	unsigned int counts[8];		/* their counts */
	unsigned int ops_seen;		/* ops run, over all calls */
	long fail_op;			/* this op (of all calls) fails */
	unsigned int fail_call;		/* this call (from 1) fails */
	int fail_errno;
	int efd;			/* last SET_EVENTFD */
	int set_eventfd_err;		/* make SET_EVENTFD fail with it */
	int bad;			/* a struct broke the ABI */
	uint64_t next_id;
	void *ring;			/* the ring's mapping, or NULL */
	unsigned int ring_enters;	/* TWHEEL_IOC_RING_ENTER calls */
	int ring_stuck;			/* RING_ENTER consumes nothing */
} m;

/*
 * The library's own exports of the header's inline ring ops: what a
 * program built against libtwheel 1.4, or in another language, calls.
 */
int exported_ring_arm(struct twheel *tw, uint32_t slot, uint64_t value,
		      unsigned int flags, uint64_t user_data)
	__asm__("twheel_ring_arm");
int exported_ring_cancel(struct twheel *tw, uint32_t slot)
	__asm__("twheel_ring_cancel");

/* mmap() of the fake file's ring: a buffer of the model's; else the kernel's. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd != FAKE_FD)
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (off != (off_t)TWHEEL_RING_OFFSET || len < TWHEEL_RING_MAP_BYTES ||
	    m.ring) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	m.ring = calloc(1, len);
	return m.ring ? m.ring : MAP_FAILED;
}

int munmap(void *addr, size_t len)
{
	if (addr && addr == m.ring) {
		free(m.ring);
		m.ring = NULL;
		return 0;
	}
	return (int)syscall(SYS_munmap, addr, len);
}

/* The kernel's drain, as far as the library sees it: sq_head = sq_tail. */
static void model_ring_enter(void)
{
	struct twheel_ring_hdr *h = m.ring;

	m.ring_enters++;
	if (h && !m.ring_stuck)
		__atomic_store_n(&h->sq_head, h->sq_tail, __ATOMIC_RELEASE);
}

static int failed;

static void check(int cond, const char *name)
{
	printf("# %s %s\n", cond ? "ok" : "not ok", name);
	if (!cond)
		failed = 1;
}

static int spec_ok(const struct twheel_timer_spec *s)
{
	return s->clockid == TWHEEL_CLOCK_MONOTONIC && !s->reserved &&
	       !(s->flags & ~TWHEEL_TIMER_FLAGS) &&
	       ((s->flags & TWHEEL_TIMER_SLACK) ? s->slack <= INT64_MAX : !s->slack);
}

static int model_batch(struct twheel_batch *b)
{
	struct twheel_op *ops = (struct twheel_op *)(uintptr_t)b->ops;
	unsigned int i;

	if (b->flags || b->reserved || !b->count ||
	    b->count > TWHEEL_BATCH_MAX) {
		m.bad = 1;
		errno = EINVAL;
		return -1;
	}
	if (++m.calls == m.fail_call) {
		errno = m.fail_errno;
		return -1;
	}
	if (m.calls <= 8)
		m.counts[m.calls - 1] = b->count;
	for (i = 0; i < b->count; i++, m.ops_seen++) {
		struct twheel_op *op = &ops[i];

		if (op->op == TWHEEL_OP_CANCEL) {
			struct twheel_timer_spec s = { .id = op->spec.id };

			if (memcmp(&s, &op->spec, sizeof(s)))
				m.bad = 1;
		} else if (!spec_ok(&op->spec)) {
			m.bad = 1;
		}
		if ((long)m.ops_seen == m.fail_op) {
			op->result = -ENOENT;
			m.ops_seen++;
			return (int)i;
		}
		op->result = op->op == TWHEEL_OP_SCHEDULE ? 0 : 1;
		if (op->op == TWHEEL_OP_SCHEDULE)
			op->spec.id = m.next_id++;
	}
	return (int)b->count;
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd != FAKE_FD) {
		errno = EBADF;
		return -1;
	}
	switch (req) {
	case TWHEEL_IOC_SCHEDULE:
		m.spec = *(struct twheel_timer_spec *)arg;
		if (!spec_ok(&m.spec) || m.spec.id)
			m.bad = 1;
		((struct twheel_timer_spec *)arg)->id = m.next_id++;
		return 0;
	case TWHEEL_IOC_MODIFY:
		m.spec = *(struct twheel_timer_spec *)arg;
		if (!spec_ok(&m.spec))
			m.bad = 1;
		return 1;
	case TWHEEL_IOC_CANCEL:
		m.cancel = *(struct twheel_cancel *)arg;
		if (m.cancel.flags || m.cancel.pad)
			m.bad = 1;
		return 1;
	case TWHEEL_IOC_BATCH:
		return model_batch(arg);
	case TWHEEL_IOC_SET_EVENTFD: {
		struct twheel_eventfd *e = arg;

		if (e->flags || e->reserved)
			m.bad = 1;
		m.efd = e->fd;
		if (m.set_eventfd_err) {
			errno = m.set_eventfd_err;
			return -1;
		}
		return 0;
	}
	case TWHEEL_IOC_INFO:
		memset(arg, 0, sizeof(struct twheel_info));
		return 0;
	case TWHEEL_IOC_RING_ENTER:
		model_ring_enter();
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

static void reset_model(void)
{
	memset(&m, 0, sizeof(m));
	m.fail_op = -1;
	m.next_id = 1ull << 32 | 1;
}

static struct twheel fake_handle(void)
{
	struct twheel tw = { .fd = FAKE_FD };

	tw.info.max_timers = 4;
	tw.info.flags = TWHEEL_INFO_MAP;
	return tw;
}

static void test_open_fd(void)
{
	struct twheel tw;

	check(twheel_open_fd(&tw, FAKE_FD, 0x2) == -EINVAL && tw.fd == -1,
	      "open_fd_unknown_flag_einval");
	check(twheel_open_fd(&tw, FAKE_FD + 1, 0) == -EBADF && tw.fd == -1,
	      "open_fd_info_error");
	check(twheel_open_fd(&tw, FAKE_FD, LIBTWHEEL_OPEN_MAP) == -EOPNOTSUPP &&
	      tw.fd == -1, "open_fd_map_unsupported");
	check(twheel_open_fd(&tw, FAKE_FD, 0) == 0 && tw.fd == FAKE_FD &&
	      !tw.open_flags && !tw.map, "open_fd");
}

static void test_open(void)
{
	struct twheel tw;

	if (access(TWHEEL_DEVICE, F_OK) == 0) {
		printf("# skip open_without_device (%s exists)\n",
		       TWHEEL_DEVICE);
		return;
	}
	check(twheel_open(&tw, 0) == -ENOENT && tw.fd == -1,
	      "open_without_device_enoent");
	check(twheel_open(&tw, 0x2) == -EINVAL && tw.fd == -1,
	      "open_unknown_flag_einval");
	twheel_close(&tw);
	check(tw.fd == -1, "close_closed_handle");
}

static void test_single(void)
{
	struct twheel tw = fake_handle();
	uint64_t id = 0;

	reset_model();
	check(twheel_schedule(&tw, 5, 7, TWHEEL_TIMER_PERIODIC, 42, &id) == 0 &&
	      id == (1ull << 32 | 1) && m.spec.value == 5 &&
	      m.spec.period == 7 && m.spec.user_data == 42 &&
	      m.spec.flags == TWHEEL_TIMER_PERIODIC && !m.bad,
	      "schedule_spec");
	check(twheel_schedule(&tw, 5, 0, 0, 0, NULL) == 0,
	      "schedule_null_id");
	check(twheel_modify(&tw, id, 9, 0, TWHEEL_TIMER_ABSTIME, 3) == 1 &&
	      m.spec.id == id && m.spec.value == 9 && m.spec.user_data == 3 &&
	      m.spec.flags == TWHEEL_TIMER_ABSTIME && !m.bad, "modify_spec");
	check(twheel_cancel(&tw, id) == 1 && m.cancel.id == id && !m.bad,
	      "cancel_struct");
	tw.fd = 3000;
	check(twheel_cancel(&tw, id) == -EBADF, "errors_are_negative_errno");
}

static void test_sqbuf(void)
{
	struct twheel tw = fake_handle();
	struct twheel_sqbuf sq;
	struct twheel_timer_spec zero = { .id = 99 };
	unsigned int i;
	int ret;

	check(twheel_sqbuf_init(&sq, 0) == -EINVAL && !sq.ops,
	      "sqbuf_init_zero_einval");
	check(twheel_sqbuf_init(&sq, 3) == 0 && sq.capacity == 3,
	      "sqbuf_init");
	check(twheel_sqbuf_schedule(&sq, 1, 0, 0, 1) == 0 &&
	      twheel_sqbuf_modify(&sq, 5, 2, 0, 0, 2) == 1 &&
	      twheel_sqbuf_cancel(&sq, 99) == 2 &&
	      twheel_sqbuf_cancel(&sq, 99) == -ENOBUFS && sq.count == 3,
	      "sqbuf_add_and_full");
	check(sq.ops[0].op == TWHEEL_OP_SCHEDULE &&
	      sq.ops[1].op == TWHEEL_OP_MODIFY && sq.ops[1].spec.id == 5 &&
	      sq.ops[2].op == TWHEEL_OP_CANCEL &&
	      !memcmp(&sq.ops[2].spec, &zero, sizeof(zero)),
	      "sqbuf_op_encoding");
	twheel_sqbuf_free(&sq);

	/* 10000 ops: three calls of 4096, 4096 and 1808. */
	reset_model();
	twheel_sqbuf_init(&sq, 10000);
	for (i = 0; i < 10000; i++)
		twheel_sqbuf_schedule(&sq, i, 0, 0, i);
	ret = twheel_submit(&tw, &sq);
	check(ret == 10000 && m.calls == 3 && m.counts[0] == 4096 &&
	      m.counts[1] == 4096 && m.counts[2] == 1808 && !m.bad &&
	      sq.ops[9999].spec.id == (1ull << 32 | 10000),
	      "submit_splits_at_batch_max");

	/* The op that fails stops everything, and later ops stay as given. */
	reset_model();
	m.fail_op = 5000;
	twheel_sqbuf_reset(&sq);
	for (i = 0; i < 10000; i++)
		twheel_sqbuf_schedule(&sq, i, 0, 0, i);
	ret = twheel_submit(&tw, &sq);
	check(ret == 5000 && m.calls == 2 && sq.ops[5000].result == -ENOENT &&
	      sq.ops[5001].result == 0 && sq.ops[5001].spec.id == 0,
	      "submit_stops_at_failed_op");

	reset_model();
	m.fail_call = 1;
	m.fail_errno = ENOMEM;
	check(twheel_submit(&tw, &sq) == -ENOMEM && sq.ops[0].result == 0,
	      "submit_first_call_fails");

	reset_model();
	m.fail_call = 2;
	m.fail_errno = ENOMEM;
	check(twheel_submit(&tw, &sq) == 4096 &&
	      sq.ops[4096].result == -ENOMEM,
	      "submit_later_call_fails");

	/* twheel_submit_all(): past the failed op, each op its result. */
	reset_model();
	m.fail_op = 5000;
	twheel_sqbuf_reset(&sq);
	for (i = 0; i < 10000; i++)
		twheel_sqbuf_schedule(&sq, i, 0, 0, i);
	ret = twheel_submit_all(&tw, &sq);
	check(ret == 9999 && m.calls == 4 && m.counts[1] == 4096 &&
	      m.counts[2] == 4096 && m.counts[3] == 4999 - 4096 &&
	      sq.ops[5000].result == -ENOENT && sq.ops[4999].result == 0 &&
	      sq.ops[5001].result == 0 && sq.ops[5001].spec.id &&
	      sq.ops[9999].spec.id && !m.bad,
	      "submit_all_runs_past_failed_op");

	reset_model();
	m.fail_call = 1;
	m.fail_errno = ENOMEM;
	check(twheel_submit_all(&tw, &sq) == -ENOMEM && m.calls == 1,
	      "submit_all_first_call_fails");

	reset_model();
	m.fail_call = 2;
	m.fail_errno = EBADF;
	for (i = 0; i < 10000; i++)
		sq.ops[i].result = 0;
	check(twheel_submit_all(&tw, &sq) == 4096 && m.calls == 2 &&
	      sq.ops[4096].result == -EBADF && sq.ops[9999].result == -EBADF,
	      "submit_all_later_call_fails");

	reset_model();
	twheel_sqbuf_reset(&sq);
	check(twheel_submit_all(&tw, &sq) == 0 && m.calls == 0,
	      "submit_all_empty");

	reset_model();
	twheel_sqbuf_reset(&sq);
	check(twheel_submit(&tw, &sq) == 0 && m.calls == 0, "submit_empty");
	twheel_sqbuf_free(&sq);
	check(!sq.ops && !sq.capacity, "sqbuf_free");
}

static void test_extend(void)
{
	struct twheel tw = fake_handle();
	uint64_t map[4] = { 0 };

	check(twheel_extend(&tw, 1, 5) == -ENXIO, "extend_unmapped_enxio");
	tw.map = map;
	check(twheel_extend(&tw, 7ull << 32 | 1, 11) == 0 && map[0] == 11 &&
	      twheel_extend(&tw, 3ull << 32 | 4, 12) == 0 && map[3] == 12,
	      "extend_stores_in_slot");
	check(twheel_extend(&tw, 5, 13) == -EINVAL &&
	      twheel_extend(&tw, 0, 13) == -EINVAL &&
	      twheel_extend(&tw, 1ull << 32, 13) == -EINVAL &&
	      map[0] == 11 && map[3] == 12, "extend_out_of_range_einval");
	check(twheel_map(&tw) == 0 && tw.map == map, "map_when_mapped");
	tw.map = NULL;
	tw.info.flags = 0;
	check(twheel_map(&tw) == -EOPNOTSUPP, "map_without_feature");
}

static void test_read(void)
{
	struct twheel tw = fake_handle();
	struct twheel_event in[2] = { { .id = 1 }, { .id = 2 } }, out[4];
	uint64_t t0;
	int p[2], ret;
	pid_t pid;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC)) {
		check(0, "pipe");
		return;
	}
	tw.fd = p[0];
	check(twheel_read_nowait(&tw, out, 4) == -EAGAIN, "read_nowait_empty");
	check(twheel_read_nowait(&tw, out, 0) == -EINVAL &&
	      twheel_read(&tw, out, 0) == -EINVAL &&
	      twheel_read_timeout(&tw, out, 0, 0) == -EINVAL, "read_nr_zero");
	if (write(p[1], in, sizeof(in)) != sizeof(in)) {
		check(0, "pipe_write");
		return;
	}
	check(twheel_read_nowait(&tw, out, 4) == 2 && out[0].id == 1 &&
	      out[1].id == 2, "read_nowait_records");
	t0 = twheel_now();
	ret = twheel_read_timeout(&tw, out, 4, 20 * NSEC_PER_MSEC);
	check(ret == -ETIME && twheel_now() - t0 >= 20 * NSEC_PER_MSEC,
	      "read_timeout_etime");
	check(twheel_read_timeout(&tw, out, 4, 0) == -ETIME,
	      "read_timeout_zero");

	pid = fork();
	if (pid == 0) {
		usleep(30000);
		_exit(write(p[1], in, sizeof(in[0])) != sizeof(in[0]));
	}
	t0 = twheel_now();
	ret = twheel_read(&tw, out, 4);
	check(ret == 1 && out[0].id == 1 &&
	      twheel_now() - t0 >= 20 * NSEC_PER_MSEC, "read_blocks");
	waitpid(pid, NULL, 0);

	pid = fork();
	if (pid == 0) {
		usleep(30000);
		_exit(write(p[1], in, sizeof(in[0])) != sizeof(in[0]));
	}
	ret = twheel_read_timeout(&tw, out, 4, 5000 * NSEC_PER_MSEC);
	check(ret == 1 && out[0].id == 1, "read_timeout_record");
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
}

static void test_eventfd(void)
{
	struct twheel tw = fake_handle();
	int efd;

	reset_model();
	check(twheel_set_eventfd(&tw, -1) == 0 && m.efd == -1 && !m.bad,
	      "set_eventfd_unregister");
	efd = twheel_eventfd(&tw, EFD_NONBLOCK);
	check(efd >= 0 && m.efd == efd &&
	      (fcntl(efd, F_GETFD) & FD_CLOEXEC) &&
	      (fcntl(efd, F_GETFL) & O_NONBLOCK), "eventfd_created");
	if (efd >= 0)
		close(efd);
	check(twheel_eventfd(&tw, O_APPEND) == -EINVAL, "eventfd_bad_flags");
	m.set_eventfd_err = EINVAL;
	efd = twheel_eventfd(&tw, 0);
	check(efd == -EINVAL && fcntl(m.efd, F_GETFD) < 0 && errno == EBADF,
	      "eventfd_closed_on_failure");
}

/* Without the kernel's ring, arming by slot is one system call per op. */
static void test_ring_fallback(void)
{
	struct twheel tw = fake_handle();
	struct twheel_ring_cqe cqe;
	uint64_t id;

	reset_model();
	check(twheel_ring_arm(&tw, 0, 5, 0, 1) == -EINVAL, "ring_needs_init");
	check(twheel_ring_init(&tw) == 0 && twheel_ring_init(&tw) == 0,
	      "ring_init_fallback");
	id = m.next_id;
	check(twheel_ring_arm(&tw, 2, 5, TWHEEL_TIMER_ABSTIME, 42) == 0 &&
	      m.next_id == id + 1 && m.spec.value == 5 &&
	      m.spec.user_data == 42 && m.spec.flags == TWHEEL_TIMER_ABSTIME &&
	      !m.bad, "ring_arm_schedules");
	check(twheel_ring_arm(&tw, 2, 9, 0, 43) == 0 && m.next_id == id + 1 &&
	      m.spec.id == id && m.spec.value == 9 && m.spec.user_data == 43 &&
	      !m.bad, "ring_arm_again_modifies");
	check(twheel_ring_cancel(&tw, 2) == 0 && m.cancel.id == id && !m.bad,
	      "ring_cancel");
	m.cancel.id = 0;
	check(twheel_ring_cancel(&tw, 2) == 0 && m.cancel.id == 0,
	      "ring_cancel_free_slot_no_call");
	check(twheel_ring_arm(&tw, 4, 5, 0, 1) == -EINVAL &&
	      twheel_ring_arm(&tw, 1, 5, TWHEEL_TIMER_PERIODIC, 1) == -EINVAL &&
	      twheel_ring_cancel(&tw, 4) == -EINVAL, "ring_bad_slot_flags");
	check(twheel_ring_submit(&tw) == 0 && twheel_ring_reap(&tw, &cqe, 1) == 0,
	      "ring_submit_reap_fallback");
	tw.fd = -1;
	twheel_close(&tw);
	check(tw.resv[0] == 0, "ring_freed_by_close");
}

/* Does the ring's entry @i hold this op, with every other byte 0? */
static int ring_op_is(unsigned int i, unsigned int op, unsigned int flags,
		      uint32_t slot, uint64_t value, uint64_t user_data)
{
	const struct twheel_ring_op *sq = (const void *)((char *)m.ring +
							 TWHEEL_RING_SQ_OFF);
	const struct twheel_ring_op *e = &sq[i % TWHEEL_RING_ENTRIES];

	return e->op == op && e->flags == flags && !e->pad && e->slot == slot &&
	       e->value == value && e->user_data == user_data && !e->reserved;
}

/*
 * With the kernel's ring: the header's inline ops and the library's
 * exports write the same entries; a bad slot or flag writes nothing; a full
 * ring is published and drained (RING_ENTER) before the next op, or -EIO
 * if the kernel took none of it.
 */
static void test_ring_inline(void)
{
	struct twheel tw = fake_handle();
	struct twheel_ring_hdr *h;
	unsigned int i, n;
	int ok = 1;

	reset_model();
	tw.info.flags |= TWHEEL_INFO_RING;
	check(twheel_ring_init(&tw) == 0 && m.ring, "ring_init_maps");
	if (!m.ring)
		return;
	h = m.ring;
	check(twheel_ring_arm(&tw, 1, 77, TWHEEL_TIMER_ABSTIME, 5) == 0 &&
	      ring_op_is(0, TWHEEL_RING_ARM, TWHEEL_TIMER_ABSTIME, 1, 77, 5),
	      "ring_inline_arm_entry");
	check(twheel_ring_cancel(&tw, 1) == 0 &&
	      ring_op_is(1, TWHEEL_RING_CANCEL, 0, 1, 0, 0),
	      "ring_inline_cancel_entry");
	check(exported_ring_arm(&tw, 3, 88, 0, 6) == 0 &&
	      ring_op_is(2, TWHEEL_RING_ARM, 0, 3, 88, 6) &&
	      exported_ring_cancel(&tw, 3) == 0 &&
	      ring_op_is(3, TWHEEL_RING_CANCEL, 0, 3, 0, 0),
	      "ring_exported_ops_same_entries");
	check(twheel_ring_op_slow(&tw, 3, 1, 0, 0, 0) == -EINVAL &&
	      twheel_ring_arm(&tw, 4, 1, 0, 0) == -EINVAL &&
	      exported_ring_arm(&tw, 4, 1, 0, 0) == -EINVAL &&
	      twheel_ring_arm(&tw, 0, 1, TWHEEL_TIMER_PERIODIC, 0) == -EINVAL &&
	      twheel_ring_cancel(&tw, UINT32_MAX) == -EINVAL &&
	      ((struct twheel_ring_sq *)(uintptr_t)tw.resv[0])->tail == 4 &&
	      ring_op_is(4, 0, 0, 0, 0, 0), "ring_bad_op_slot_flag_writes_nothing");
	check(h->sq_tail == 0 && twheel_ring_submit(&tw) == 0 &&
	      h->sq_tail == 4 && m.ring_enters == 0, "ring_submit_publishes");
	h->flags = TWHEEL_RING_NEED_WAKEUP;
	check(twheel_ring_submit(&tw) == 0 && m.ring_enters == 1 &&
	      h->sq_head == 4, "ring_submit_rings_doorbell");
	h->flags = 0;
	/* Fill the ring: the kernel took the first 4, so 512 fit. */
	for (i = 0, n = 4; i < TWHEEL_RING_ENTRIES; i++, n++)
		ok &= twheel_ring_arm(&tw, i & 3, i, 0, i) == 0;
	check(ok && m.ring_enters == 1 && h->sq_tail == 4,
	      "ring_fills_without_call");
	check(twheel_ring_cancel(&tw, 2) == 0 && m.ring_enters == 2 &&
	      h->sq_tail == n && h->sq_head == n &&
	      ring_op_is(n, TWHEEL_RING_CANCEL, 0, 2, 0, 0) &&
	      ring_op_is(n - 1, TWHEEL_RING_ARM, 0, 3, TWHEEL_RING_ENTRIES - 1,
			 TWHEEL_RING_ENTRIES - 1), "ring_full_enters_then_writes");
	n++;
	m.ring_stuck = 1;
	for (i = 0, ok = 1; i < TWHEEL_RING_ENTRIES - 1; i++, n++)
		ok &= twheel_ring_cancel(&tw, 0) == 0;
	check(ok && twheel_ring_cancel(&tw, 0) == -EIO &&
	      exported_ring_cancel(&tw, 0) == -EIO && h->sq_tail == n,
	      "ring_full_kernel_took_nothing_eio");
	tw.fd = -1;
	twheel_close(&tw);
	check(tw.resv[0] == 0 && !m.ring, "ring_unmapped_by_close");
}

int main(void)
{
	reset_model();
	test_open();
	test_open_fd();
	test_single();
	test_sqbuf();
	test_extend();
	test_read();
	test_eventfd();
	test_ring_fallback();
	test_ring_inline();
	printf("# libtwheel_unit: %s\n", failed ? "FAILED" : "all passed");
	return failed;
}
