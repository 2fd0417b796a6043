// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_httpd: a small epoll HTTP/1.1 keep-alive server whose timeouts
 * are those of a real server, on one of three timer backends.
 *
 *   twheel_httpd [-b timerfd|heap|twheel|twheel-ring] [-t threads] [-p port]
 *                [-a addr] [-i idle_ms] [-r request_ms] [-m max_conns]
 *
 * One thread per CPU (pinned), each with its own SO_REUSEPORT listener and
 * epoll set, answers every request (anything up to "\r\n\r\n"; pipelined
 * ones in order) with a fixed 200 "ok". Each connection has an idle
 * timeout (-i, default 30 s), pushed back by every request, and each
 * request a deadline (-r, default 5 s) from its arrival until its reply is
 * written; a connection whose timeout or deadline passes is closed.
 * With pipelining the deadline is that of the oldest request not yet
 * answered.
 *
 * Backends:
 * - timerfd: a timerfd per connection for the idle timeout, re-armed with
 *   timerfd_settime() on every request, and one for the request deadline,
 *   armed and disarmed per request; all in the epoll set.
 * - heap: a 4-ary min-heap per thread, indexed (each connection knows the
 *   position of its entries), and epoll_wait()'s timeout from its top.
 *   The idle timeout is pushed back lazily: a request only updates the
 *   connection's deadline, and an entry that comes due early is moved to
 *   it then (one sift-down per idle period, not one per request).
 * - twheel: one /dev/twheel per thread through libtwheel. Idle timeouts are
 *   pushed back by a store to the mapped deadline array (twheel_extend());
 *   timers are scheduled and cancelled in one twheel_submit_all() per
 *   epoll round, just before epoll_wait(), and expiry records are read
 *   from the file, which is in the epoll set. A request answered within
 *   the round it arrived in never reaches the kernel.
 * - twheel-ring: one /dev/twheel per thread, its timers armed and
 *   cancelled through the kernel's submission ring (libtwheel's
 *   twheel_ring_*(), twheel_ring(3)): each connection owns two ring slots,
 *   2 * its slot for the idle timeout and 2 * its slot + 1 for the request
 *   deadline. A request arms its deadline and the reply cancels it with a
 *   store into the ring each; the idle timeout is pushed back lazily, as
 *   the heap's (re-armed when it comes due early). The ops of a round are
 *   published in one twheel_ring_submit() before epoll_wait(), a system
 *   call only when the kernel stopped polling the ring; an arm and a
 *   cancel that the kernel drains together never touch its wheel. Without
 *   the ring (TWHEEL_INFO_RING) libtwheel makes a system call per op, and
 *   the server says so when it starts.
 *
 * An idle expiry closes a connection only if now >= last request +
 * idle timeout: a timer that fires before its own deadline is counted as
 * idle_early (an error, the connection is not closed), one whose deadline
 * was pushed back after it fired is armed again (idle_rearms). The
 * counters of all threads are summed and printed as one line on SIGUSR1
 * and at exit (SIGINT, SIGTERM).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <libtwheel.h>

#define NSEC_PER_SEC	1000000000ull
#define NSEC_PER_MSEC	1000000ull

#define RESPONSE	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" \
			"Content-Type: text/plain\r\n\r\nok"
#define RESP_LEN	(sizeof(RESPONSE) - 1)
/* Responses one write() may carry: pipelined requests are answered in one. */
#define RESP_COPIES	64
/* Bytes of one connection's requests buffered while incomplete. */
#define INBUF_SIZE	2048
/* Responses owed before the connection stops reading (pipelining flood). */
#define OUT_LIMIT	(RESP_COPIES * RESP_LEN)

/* Bounds of the loops that work on one fd per event. */
#define MAX_EVENTS	256
#define ACCEPT_BURST	64
#define IO_BURST	16
#define RECORDS		256
#define RECORD_READS	16
#define HEAP_BURST	65536

enum backend { BACKEND_TIMERFD, BACKEND_HEAP, BACKEND_TWHEEL, BACKEND_RING };
static const char *const backend_names[] = {
	"timerfd", "heap", "twheel", "twheel-ring"
};
#define NR_BACKENDS	(sizeof(backend_names) / sizeof(backend_names[0]))

/* What an epoll event, a heap entry or a twheel record is about. */
enum kind {
	KIND_LISTEN = 1,
	KIND_STOP,
	KIND_TWHEEL,
	KIND_CONN,
	KIND_IDLE,	/* the idle timeout of a connection */
	KIND_REQ,	/* the request deadline of a connection */
};

/*
 * A connection is named by its slot in its thread's table and the slot's
 * generation, bumped at every close: what names a closed connection (an
 * epoll event later in the same batch, a twheel record) finds another
 * generation and is stale.
 */
static uint64_t tag(enum kind kind, uint32_t slot, uint32_t gen)
{
	return (uint64_t)kind << 56 | (uint64_t)(slot & 0xffffff) << 32 | gen;
}

#define TAG_KIND(t)	((enum kind)((t) >> 56))
#define TAG_SLOT(t)	((uint32_t)((t) >> 32) & 0xffffff)
#define TAG_GEN(t)	((uint32_t)(t))

struct conn {
	int fd;			/* -1: the slot is free */
	uint32_t gen;
	uint32_t next_free;
	bool want_out;		/* waiting for EPOLLOUT, not EPOLLIN */
	bool tw_dirty;		/* on the thread's twheel dirty list */
	char *in;
	unsigned int in_len;
	uint64_t out_pending;	/* bytes of responses not yet written */
	unsigned int out_off;	/* offset in RESPONSE of the next byte */
	uint64_t last_activity;	/* ns: accept, then the latest request */
	uint64_t idle_deadline;	/* last_activity + idle timeout */
	uint64_t req_deadline;	/* of the oldest unanswered request */
	/* timerfd */
	int idle_tfd;
	int req_tfd;
	uint64_t idle_armed;	/* the deadline idle_tfd was set to */
	/* heap: position + 1 of the entries, 0 for none */
	uint32_t idle_pos;
	uint32_t req_pos;
	/* twheel: the timers' ids, 0 for none; twheel-ring: 1 if armed */
	uint64_t idle_id;
	uint64_t req_id;
};

struct heap_entry {
	uint64_t key;
	uint32_t slot;
	uint32_t kind;
};

/* What a twheel op of the current flush is for. */
struct op_aux {
	uint32_t slot;
	uint32_t gen;
	enum kind kind;
};

struct dirty {
	uint32_t slot;
	uint32_t gen;
};

/* Written by the owning thread only, read by the main thread. */
struct counters {
	uint64_t conns;		/* connections accepted */
	uint64_t requests;	/* requests answered (queued for writing) */
	uint64_t idle_closes;
	uint64_t idle_early;	/* an idle timer fired before its deadline */
	uint64_t idle_rearms;	/* it came due, but the deadline had moved */
	uint64_t deadline_fires;
	uint64_t timer_errors;	/* a timer could not be armed or read */
	uint64_t twice;		/* an idle expiry for a closed connection */
	uint64_t stale;		/* explained records or events of closed ones */
	uint64_t peer_closes;
	uint64_t rejected;	/* table full */
	uint64_t errors;	/* I/O and protocol errors, connection closed */
};

#define COUNT(w, field)	__atomic_store_n(&(w)->c.field, (w)->c.field + 1, \
					 __ATOMIC_RELAXED)
#define COUNT_N(w, field, n)	__atomic_store_n(&(w)->c.field, \
						 (w)->c.field + (n), \
						 __ATOMIC_RELAXED)

struct worker {
	pthread_t thread;
	unsigned int id;
	int epfd;
	int lfd;
	struct conn *conns;
	uint32_t free_head;	/* UINT32_MAX: none */
	uint32_t nr_open;
	struct counters c;
	/* heap */
	struct heap_entry *heap;
	uint32_t heap_len;
	/* twheel */
	struct twheel tw;
	struct twheel_sqbuf sq;
	struct op_aux *aux;
	struct dirty *dirty;
	uint32_t nr_dirty;
	uint64_t *cancels;	/* ids of closed connections' timers */
	uint32_t nr_cancels;
	bool in_flush;
	uint64_t expected_stale; /* cancels that found the record queued */
	struct twheel_event records[RECORDS];
};

static struct {
	enum backend backend;
	unsigned int threads;
	unsigned int port;
	const char *addr;
	uint64_t idle_ns;
	uint64_t req_ns;
	uint32_t max_conns;
} opt = {
	.backend = BACKEND_HEAP,
	.port = 8080,
	.addr = "0.0.0.0",
	.idle_ns = 30 * NSEC_PER_SEC,
	.req_ns = 5 * NSEC_PER_SEC,
	.max_conns = 32768,
};

static struct worker *workers;
static int stop_efd = -1;
static int stopping;	/* read and written with __atomic */
static char resp_buf[RESP_COPIES * RESP_LEN];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "twheel_httpd: %s: %s\n", what, strerror(err));
	exit(1);
}

static int epoll_set(struct worker *w, int op, int fd, uint32_t events,
		     uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (epoll_ctl(w->epfd, op, fd, &ev) < 0)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------ heap */

/*
 * A 4-ary min-heap: half the depth of a binary one, and the four children
 * of a node share a cache line (16-byte entries), as libev's 4-heap.
 */
static uint32_t *heap_pos(struct worker *w, const struct heap_entry *e)
{
	struct conn *c = &w->conns[e->slot];

	return e->kind == KIND_IDLE ? &c->idle_pos : &c->req_pos;
}

static void heap_place(struct worker *w, uint32_t i, struct heap_entry e)
{
	w->heap[i] = e;
	*heap_pos(w, &w->heap[i]) = i + 1;
}

static void heap_sift_up(struct worker *w, uint32_t i)
{
	struct heap_entry e = w->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 4;

		if (w->heap[parent].key <= e.key)
			break;
		heap_place(w, i, w->heap[parent]);
		i = parent;
	}
	heap_place(w, i, e);
}

static void heap_sift_down(struct worker *w, uint32_t i)
{
	struct heap_entry e = w->heap[i];

	for (;;) {
		uint32_t first = 4 * i + 1, best = i, k;
		uint64_t best_key = e.key;

		for (k = first; k < first + 4 && k < w->heap_len; k++) {
			if (w->heap[k].key < best_key) {
				best = k;
				best_key = w->heap[k].key;
			}
		}
		if (best == i)
			break;
		heap_place(w, i, w->heap[best]);
		i = best;
	}
	heap_place(w, i, e);
}

/* The heap has room for two entries per connection: this cannot fail. */
static void heap_insert(struct worker *w, struct conn *c, enum kind kind,
			uint64_t key)
{
	uint32_t i = w->heap_len++;

	w->heap[i] = (struct heap_entry){
		.key = key,
		.slot = (uint32_t)(c - w->conns),
		.kind = kind,
	};
	heap_sift_up(w, i);
}

static void heap_remove(struct worker *w, uint32_t *posp)
{
	uint32_t i = *posp - 1, last = --w->heap_len;

	*posp = 0;
	if (i == last)
		return;
	heap_place(w, i, w->heap[last]);
	if (i > 0 && w->heap[(i - 1) / 4].key > w->heap[i].key)
		heap_sift_up(w, i);
	else
		heap_sift_down(w, i);
}

/* Moves an entry to a later deadline (increase-key). */
static void heap_delay(struct worker *w, uint32_t pos, uint64_t key)
{
	w->heap[pos - 1].key = key;
	heap_sift_down(w, pos - 1);
}

/* epoll_wait()'s timeout: rounded up, so the loop never wakes early. */
static int heap_timeout_ms(struct worker *w)
{
	uint64_t now, left;

	if (!w->heap_len)
		return -1;
	now = now_ns();
	if (w->heap[0].key <= now)
		return 0;
	left = (w->heap[0].key - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* ------------------------------------------------------- timers, generic */

static void conn_close(struct worker *w, struct conn *c);

static int tfd_arm(int tfd, uint64_t deadline)
{
	struct itimerspec its = {
		.it_value.tv_sec = (time_t)(deadline / NSEC_PER_SEC),
		.it_value.tv_nsec = (long)(deadline % NSEC_PER_SEC),
	};

	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	return 0;
}

static int tfd_disarm(int tfd)
{
	struct itimerspec its = { 0 };

	if (timerfd_settime(tfd, 0, &its, NULL) < 0)
		return -errno;
	return 0;
}

/* A timerfd for @c of @kind, in the epoll set; -errno on failure. */
static int tfd_create(struct worker *w, struct conn *c, enum kind kind)
{
	int tfd, ret;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (tfd < 0)
		return -errno;
	ret = epoll_set(w, EPOLL_CTL_ADD, tfd, EPOLLIN,
			tag(kind, (uint32_t)(c - w->conns), c->gen));
	if (ret < 0) {
		close(tfd);
		return ret;
	}
	return tfd;
}

static void tw_flush(struct worker *w);

/*
 * The lists a flush empties are sized for a round; a round that fills one
 * flushes early (a slot closed and reused many times in one round).
 */
#define DIRTY_CAP	(opt.max_conns)
#define CANCEL_CAP	(4 * opt.max_conns)
#define SQ_CAP		(2 * DIRTY_CAP + CANCEL_CAP)

static void tw_mark_dirty(struct worker *w, struct conn *c)
{
	if (c->tw_dirty)
		return;
	if (w->nr_dirty == DIRTY_CAP && !w->in_flush)
		tw_flush(w);
	c->tw_dirty = true;
	w->dirty[w->nr_dirty++] = (struct dirty){
		.slot = (uint32_t)(c - w->conns),
		.gen = c->gen,
	};
}

/* twheel-ring: the ring slot of a connection's timer of @kind. */
static uint32_t ring_slot(struct worker *w, struct conn *c, enum kind kind)
{
	return 2 * (uint32_t)(c - w->conns) + (kind == KIND_REQ);
}

/* twheel-ring: arms (or moves) the timer of @kind for @deadline. */
static int ring_arm(struct worker *w, struct conn *c, enum kind kind,
		    uint64_t deadline)
{
	int ret = twheel_ring_arm(&w->tw, ring_slot(w, c, kind), deadline,
				  TWHEEL_TIMER_ABSTIME,
				  tag(kind, (uint32_t)(c - w->conns), c->gen));

	if (ret < 0)
		return ret;
	if (kind == KIND_IDLE)
		c->idle_id = 1;
	else
		c->req_id = 1;
	return 0;
}

/* twheel-ring: cancels the timer of @kind, if armed. */
static int ring_cancel(struct worker *w, struct conn *c, enum kind kind)
{
	uint64_t *armed = kind == KIND_IDLE ? &c->idle_id : &c->req_id;

	if (!*armed)
		return 0;
	*armed = 0;
	return twheel_ring_cancel(&w->tw, ring_slot(w, c, kind));
}

/* Arms the idle timeout of a new connection; false if it could not. */
static bool idle_start(struct worker *w, struct conn *c)
{
	int ret;

	switch (opt.backend) {
	case BACKEND_TIMERFD:
		ret = tfd_create(w, c, KIND_IDLE);
		if (ret < 0)
			return false;
		c->idle_tfd = ret;
		c->idle_armed = c->idle_deadline;
		return tfd_arm(c->idle_tfd, c->idle_deadline) == 0;
	case BACKEND_HEAP:
		heap_insert(w, c, KIND_IDLE, c->idle_deadline);
		return true;
	case BACKEND_TWHEEL:
		/* Scheduled by the flush before the next epoll_wait(). */
		tw_mark_dirty(w, c);
		return true;
	case BACKEND_RING:
		return ring_arm(w, c, KIND_IDLE, c->idle_deadline) == 0;
	}
	return false;
}

/* A request came: push the idle timeout back to c->idle_deadline. */
static int idle_push_back(struct worker *w, struct conn *c)
{
	switch (opt.backend) {
	case BACKEND_TIMERFD:
		c->idle_armed = c->idle_deadline;
		return tfd_arm(c->idle_tfd, c->idle_deadline);
	case BACKEND_HEAP:
	case BACKEND_RING:
		/* Lazily: the entry or timer moves when it comes due. */
		return 0;
	case BACKEND_TWHEEL:
		/* One store; not yet scheduled: the flush uses the new one. */
		if (c->idle_id)
			return twheel_extend(&w->tw, c->idle_id,
					     c->idle_deadline);
		return 0;
	}
	return -EINVAL;
}

/* Arms the request deadline c->req_deadline. */
static int req_arm(struct worker *w, struct conn *c)
{
	int ret;

	switch (opt.backend) {
	case BACKEND_TIMERFD:
		if (c->req_tfd < 0) {
			ret = tfd_create(w, c, KIND_REQ);
			if (ret < 0)
				return ret;
			c->req_tfd = ret;
		}
		return tfd_arm(c->req_tfd, c->req_deadline);
	case BACKEND_HEAP:
		heap_insert(w, c, KIND_REQ, c->req_deadline);
		return 0;
	case BACKEND_TWHEEL:
		/*
		 * A timer left from an earlier request whose cancel is not
		 * yet submitted is pushed back by a store, as the idle one.
		 */
		if (c->req_id)
			return twheel_extend(&w->tw, c->req_id,
					     c->req_deadline);
		tw_mark_dirty(w, c);
		return 0;
	case BACKEND_RING:
		return ring_arm(w, c, KIND_REQ, c->req_deadline);
	}
	return -EINVAL;
}

/* Every reply is written: the request deadline is off. */
static int req_cancel(struct worker *w, struct conn *c)
{
	switch (opt.backend) {
	case BACKEND_TIMERFD:
		return c->req_tfd >= 0 ? tfd_disarm(c->req_tfd) : 0;
	case BACKEND_HEAP:
		if (c->req_pos)
			heap_remove(w, &c->req_pos);
		return 0;
	case BACKEND_TWHEEL:
		/* A deadline still unscheduled is simply never scheduled. */
		if (c->req_id)
			tw_mark_dirty(w, c);
		return 0;
	case BACKEND_RING:
		return ring_cancel(w, c, KIND_REQ);
	}
	return -EINVAL;
}

/*
 * An idle timer armed for @armed came due and fired at @fired (0: now).
 * Closes the connection if its idle timeout has passed; arms the timer
 * again if a request pushed it back (a push-back that raced the expiry);
 * counts a timer that fired before its own deadline as idle_early, an
 * error, and keeps the connection. Returns true if @c was closed.
 */
static bool idle_expired(struct worker *w, struct conn *c, uint64_t armed,
			 uint64_t fired)
{
	uint64_t now = now_ns();
	int ret = 0;

	if ((fired ? fired : now) < armed || now < armed) {
		COUNT(w, idle_early);
	} else if (now < c->last_activity + opt.idle_ns) {
		COUNT(w, idle_rearms);
	} else {
		COUNT(w, idle_closes);
		conn_close(w, c);
		return true;
	}
	switch (opt.backend) {
	case BACKEND_TIMERFD:
		c->idle_armed = c->idle_deadline;
		ret = tfd_arm(c->idle_tfd, c->idle_deadline);
		break;
	case BACKEND_HEAP:
		heap_delay(w, c->idle_pos, c->idle_deadline);
		break;
	case BACKEND_TWHEEL:
		tw_mark_dirty(w, c);
		break;
	case BACKEND_RING:
		ret = ring_arm(w, c, KIND_IDLE, c->idle_deadline);
		break;
	}
	if (ret < 0) {
		COUNT(w, timer_errors);
		conn_close(w, c);
		return true;
	}
	return false;
}

/*
 * A request deadline came due. It counts only if a reply is still
 * unwritten and the deadline of the oldest such request has passed: a
 * later request may have pushed it back (twheel: by a store that raced
 * the expiry), and then the timer is armed again.
 */
static void req_expired(struct worker *w, struct conn *c)
{
	if (!c->out_pending)
		return;
	if (now_ns() < c->req_deadline) {
		if (req_arm(w, c) < 0) {
			COUNT(w, timer_errors);
			conn_close(w, c);
		}
		return;
	}
	COUNT(w, deadline_fires);
	conn_close(w, c);
}

/* ------------------------------------------------------------ connections */

static void conn_close(struct worker *w, struct conn *c)
{
	uint32_t slot = (uint32_t)(c - w->conns);

	switch (opt.backend) {
	case BACKEND_TIMERFD:
		/* Closing a timerfd takes it out of the epoll set. */
		if (c->idle_tfd >= 0)
			close(c->idle_tfd);
		if (c->req_tfd >= 0)
			close(c->req_tfd);
		c->idle_tfd = -1;
		c->req_tfd = -1;
		break;
	case BACKEND_HEAP:
		if (c->idle_pos)
			heap_remove(w, &c->idle_pos);
		if (c->req_pos)
			heap_remove(w, &c->req_pos);
		break;
	case BACKEND_TWHEEL:
		/* Cancelled by the next flush; two per connection at most. */
		if (w->nr_cancels + 2 > CANCEL_CAP && !w->in_flush)
			tw_flush(w);
		if (w->nr_cancels + 2 > CANCEL_CAP) {
			/* Within a flush (cannot happen): the timers fire. */
			COUNT(w, timer_errors);
		} else {
			if (c->idle_id)
				w->cancels[w->nr_cancels++] = c->idle_id;
			if (c->req_id)
				w->cancels[w->nr_cancels++] = c->req_id;
		}
		c->idle_id = 0;
		c->req_id = 0;
		c->tw_dirty = false;
		break;
	case BACKEND_RING:
		/* Folded with their arms if the kernel drains them together. */
		if (ring_cancel(w, c, KIND_IDLE) < 0 ||
		    ring_cancel(w, c, KIND_REQ) < 0)
			COUNT(w, timer_errors);
		break;
	}
	close(c->fd);
	free(c->in);
	c->in = NULL;
	c->fd = -1;
	c->gen++;
	c->next_free = w->free_head;
	w->free_head = slot;
	__atomic_store_n(&w->nr_open, w->nr_open - 1, __ATOMIC_RELAXED);
}

/* Sets the events of @c to EPOLLOUT while it owes replies, else EPOLLIN. */
static bool conn_want_out(struct worker *w, struct conn *c, bool out)
{
	if (c->want_out == out)
		return true;
	if (epoll_set(w, EPOLL_CTL_MOD, c->fd, out ? EPOLLOUT : EPOLLIN,
		      tag(KIND_CONN, (uint32_t)(c - w->conns), c->gen)) < 0) {
		COUNT(w, errors);
		conn_close(w, c);
		return false;
	}
	c->want_out = out;
	return true;
}

/* Writes what replies it can. Returns false if @c was closed. */
static bool conn_write(struct worker *w, struct conn *c)
{
	unsigned int i;

	for (i = 0; i < IO_BURST && c->out_pending; i++) {
		size_t len = sizeof(resp_buf) - c->out_off;
		ssize_t r;

		if (len > c->out_pending)
			len = c->out_pending;
		r = send(c->fd, resp_buf + c->out_off, len, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			COUNT(w, errors);
			conn_close(w, c);
			return false;
		}
		c->out_pending -= (uint64_t)r;
		c->out_off = (unsigned int)((c->out_off + (size_t)r) %
					    RESP_LEN);
	}
	if (!c->out_pending) {
		if (req_cancel(w, c) < 0) {
			COUNT(w, timer_errors);
			conn_close(w, c);
			return false;
		}
		return conn_want_out(w, c, false);
	}
	return conn_want_out(w, c, true);
}

/* Answers the whole requests in c->in; false if @c was closed. */
static bool conn_parse(struct worker *w, struct conn *c, uint64_t now)
{
	unsigned int off = 0, n = 0;
	bool held = false;

	for (;;) {
		char *end = memmem(c->in + off, c->in_len - off, "\r\n\r\n", 4);

		if (!end)
			break;
		if (c->out_pending + (uint64_t)(n + 1) * RESP_LEN > OUT_LIMIT) {
			/* Read on once the replies are out. */
			held = true;
			break;
		}
		off = (unsigned int)(end + 4 - c->in);
		n++;
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (!n) {
		if (!held && c->in_len == INBUF_SIZE) {
			/* A request larger than the buffer: not ours. */
			COUNT(w, errors);
			conn_close(w, c);
			return false;
		}
		return true;
	}
	c->last_activity = now;
	c->idle_deadline = now + opt.idle_ns;
	if (idle_push_back(w, c) < 0)
		COUNT(w, timer_errors);
	if (!c->out_pending) {
		c->req_deadline = now + opt.req_ns;
		if (req_arm(w, c) < 0)
			COUNT(w, timer_errors);
	}
	c->out_pending += (uint64_t)n * RESP_LEN;
	COUNT_N(w, requests, n);
	return conn_write(w, c);
}

static void conn_read(struct worker *w, struct conn *c)
{
	uint64_t now = now_ns();
	unsigned int i;

	for (i = 0; i < IO_BURST; i++) {
		size_t room = INBUF_SIZE - c->in_len;
		ssize_t r;

		if (!room || c->out_pending >= OUT_LIMIT)
			break;
		r = recv(c->fd, c->in + c->in_len, room, 0);
		if (r == 0) {
			COUNT(w, peer_closes);
			conn_close(w, c);
			return;
		}
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno == ECONNRESET)
				COUNT(w, peer_closes);
			else
				COUNT(w, errors);
			conn_close(w, c);
			return;
		}
		c->in_len += (unsigned int)r;
		if (!conn_parse(w, c, now))
			return;
		if ((size_t)r < room)
			break;
	}
}

static void conn_accept(struct worker *w)
{
	uint64_t now = now_ns();
	unsigned int i;
	int one = 1;

	for (i = 0; i < ACCEPT_BURST; i++) {
		struct conn *c;
		uint32_t slot;
		int fd;

		fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				COUNT(w, errors);
			return;
		}
		if (w->free_head == UINT32_MAX) {
			COUNT(w, rejected);
			close(fd);
			continue;
		}
		slot = w->free_head;
		c = &w->conns[slot];
		w->free_head = c->next_free;
		__atomic_store_n(&w->nr_open, w->nr_open + 1,
				 __ATOMIC_RELAXED);
		c->fd = fd;
		c->in = malloc(INBUF_SIZE);
		c->in_len = 0;
		c->out_pending = 0;
		c->out_off = 0;
		c->want_out = false;
		c->last_activity = now;
		c->idle_deadline = now + opt.idle_ns;
		COUNT(w, conns);
		if (!c->in ||
		    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			       sizeof(one)) < 0 ||
		    epoll_set(w, EPOLL_CTL_ADD, fd, EPOLLIN,
			      tag(KIND_CONN, slot, c->gen)) < 0) {
			COUNT(w, errors);
			conn_close(w, c);
			continue;
		}
		if (!idle_start(w, c)) {
			COUNT(w, timer_errors);
			conn_close(w, c);
		}
	}
}

/* ----------------------------------------------------------------- twheel */

/* Takes @id off the cancels not yet submitted; true if it was there. */
static bool tw_uncancel(struct worker *w, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < w->nr_cancels; i++) {
		if (w->cancels[i] == id) {
			w->cancels[i] = w->cancels[--w->nr_cancels];
			return true;
		}
	}
	return false;
}

/*
 * A record of a timer that is no longer its connection's: expected if a
 * close or a cancel raced its expiry (the cancel is still pending, or it
 * found the record queued); otherwise the server lost track of a timer.
 */
static void tw_stale(struct worker *w, const struct twheel_event *ev)
{
	if (tw_uncancel(w, ev->id)) {
		COUNT(w, stale);
	} else if (w->expected_stale) {
		w->expected_stale--;
		COUNT(w, stale);
	} else if (TAG_KIND(ev->user_data) == KIND_IDLE) {
		COUNT(w, twice);
	} else {
		COUNT(w, timer_errors);
	}
}

/* twheel-ring: publishes the round's ops, and counts the failed ones. */
static void ring_flush(struct worker *w)
{
	struct twheel_ring_cqe cqes[64];
	unsigned int i;
	int n;

	if (twheel_ring_submit(&w->tw) < 0)
		COUNT(w, timer_errors);
	for (i = 0; i < 16; i++) {
		n = twheel_ring_reap(&w->tw, cqes, 64);
		if (n <= 0)
			break;
		COUNT_N(w, timer_errors, (uint64_t)n);
	}
}

/*
 * A record is its connection's if the tag's generation matches and the
 * record's timer is the one armed: the same id for the ioctl backends;
 * for twheel-ring, which does not know the kernel's ids, any timer still
 * armed of that kind. Otherwise a close or a cancel raced the expiry (the
 * record of an expiry that won stays readable): expected on the ring,
 * checked on the others (tw_stale()).
 */
static void tw_record(struct worker *w, const struct twheel_event *ev)
{
	uint32_t slot = TAG_SLOT(ev->user_data);
	struct conn *c = slot < opt.max_conns ? &w->conns[slot] : NULL;
	enum kind kind = TAG_KIND(ev->user_data);
	bool ring = opt.backend == BACKEND_RING;
	uint64_t armed = 0;

	if (c)
		armed = kind == KIND_IDLE ? c->idle_id : c->req_id;
	if (!c || c->fd < 0 || c->gen != TAG_GEN(ev->user_data) ||
	    (ring ? !armed : ev->id != armed)) {
		if (ring)
			COUNT(w, stale);
		else
			tw_stale(w, ev);
		return;
	}
	/* A one-shot timer's id is gone once its record is read. */
	if (kind == KIND_IDLE) {
		c->idle_id = 0;
		idle_expired(w, c, ev->deadline, ev->fired);
	} else {
		c->req_id = 0;
		req_expired(w, c);
	}
}

static void tw_read(struct worker *w)
{
	unsigned int i;
	int n, k;

	for (i = 0; i < RECORD_READS; i++) {
		n = twheel_read_nowait(&w->tw, w->records, RECORDS);
		if (n == -EAGAIN || n == -EINTR)
			return;
		if (n < 0) {
			COUNT(w, timer_errors);
			return;
		}
		for (k = 0; k < n; k++)
			tw_record(w, &w->records[k]);
		if (n < RECORDS)
			return;
	}
}

static void tw_add(struct worker *w, int idx, struct conn *c, enum kind kind)
{
	if (idx < 0) {
		/* Cannot happen: the buffer holds every op of a round. */
		COUNT(w, timer_errors);
		return;
	}
	w->aux[idx] = (struct op_aux){
		.slot = c ? (uint32_t)(c - w->conns) : UINT32_MAX,
		.gen = c ? c->gen : 0,
		.kind = kind,
	};
}

/* The result of op @i of the flush. */
static void tw_result(struct worker *w, const struct twheel_op *op,
		      const struct op_aux *a)
{
	struct conn *c = a->slot == UINT32_MAX ? NULL : &w->conns[a->slot];
	bool same = c && c->fd >= 0 && c->gen == a->gen;

	if (op->op == TWHEEL_OP_CANCEL) {
		if (op->result == 0)
			w->expected_stale++;	/* fired: its record comes */
		else if (op->result < 0)
			COUNT(w, timer_errors);
		return;
	}
	if (op->result < 0) {
		/* -ENOSPC, -EDQUOT, -EAGAIN: no timer, so no connection. */
		COUNT(w, timer_errors);
		if (same && a->kind == KIND_IDLE)
			conn_close(w, c);
		return;
	}
	if (!same) {
		/* Closed by an earlier result of this flush. */
		if (w->nr_cancels < CANCEL_CAP)
			w->cancels[w->nr_cancels++] = op->spec.id;
		else
			COUNT(w, timer_errors);	/* fires, is stale */
		return;
	}
	if (a->kind == KIND_IDLE)
		c->idle_id = op->spec.id;
	else
		c->req_id = op->spec.id;
}

/*
 * Brings the kernel up to date with the round's changes, in one batch:
 * the idle timers of new (or re-armed) connections, the deadlines of
 * requests still unanswered, and the cancels of answered requests and
 * closed connections.
 */
static void tw_flush(struct worker *w)
{
	uint32_t i, nr_cancels = w->nr_cancels;
	int ret;

	twheel_sqbuf_reset(&w->sq);
	for (i = 0; i < w->nr_dirty; i++) {
		struct conn *c = &w->conns[w->dirty[i].slot];

		if (c->fd < 0 || c->gen != w->dirty[i].gen || !c->tw_dirty)
			continue;
		c->tw_dirty = false;
		if (!c->idle_id)
			tw_add(w, twheel_sqbuf_schedule(&w->sq,
				c->idle_deadline, 0, TWHEEL_TIMER_ABSTIME,
				tag(KIND_IDLE, w->dirty[i].slot, c->gen)),
			       c, KIND_IDLE);
		if (c->out_pending && !c->req_id) {
			tw_add(w, twheel_sqbuf_schedule(&w->sq,
				c->req_deadline, 0, TWHEEL_TIMER_ABSTIME,
				tag(KIND_REQ, w->dirty[i].slot, c->gen)),
			       c, KIND_REQ);
		} else if (!c->out_pending && c->req_id) {
			tw_add(w, twheel_sqbuf_cancel(&w->sq, c->req_id), NULL,
			       KIND_REQ);
			c->req_id = 0;
		}
	}
	w->nr_dirty = 0;
	for (i = 0; i < nr_cancels; i++)
		tw_add(w, twheel_sqbuf_cancel(&w->sq, w->cancels[i]), NULL,
		       KIND_IDLE);
	w->nr_cancels = 0;
	if (!w->sq.count)
		return;
	ret = twheel_submit_all(&w->tw, &w->sq);
	w->in_flush = true;
	for (i = 0; i < w->sq.count; i++) {
		if (ret < 0)
			w->sq.ops[i].result = ret;
		tw_result(w, &w->sq.ops[i], &w->aux[i]);
	}
	w->in_flush = false;
}

/* ----------------------------------------------------------------- thread */

static void run_heap(struct worker *w)
{
	uint64_t now = now_ns();
	unsigned int i;

	for (i = 0; i < HEAP_BURST && w->heap_len; i++) {
		struct heap_entry e = w->heap[0];
		struct conn *c = &w->conns[e.slot];

		if (e.key > now)
			return;
		if (e.kind == KIND_IDLE) {
			idle_expired(w, c, e.key, 0);
		} else {
			heap_remove(w, &c->req_pos);
			req_expired(w, c);
		}
	}
}

static void tfd_event(struct worker *w, struct conn *c, enum kind kind)
{
	int tfd = kind == KIND_IDLE ? c->idle_tfd : c->req_tfd;
	uint64_t ticks;

	if (read(tfd, &ticks, sizeof(ticks)) != sizeof(ticks)) {
		/* Re-armed since the expiry: settime cleared it. */
		if (errno != EAGAIN)
			COUNT(w, timer_errors);
		return;
	}
	if (kind == KIND_IDLE)
		idle_expired(w, c, c->idle_armed, 0);
	else
		req_expired(w, c);
}

static void dispatch(struct worker *w, uint64_t data, uint32_t events)
{
	enum kind kind = TAG_KIND(data);
	struct conn *c;

	switch (kind) {
	case KIND_LISTEN:
		conn_accept(w);
		return;
	case KIND_STOP:
		return;
	case KIND_TWHEEL:
		tw_read(w);
		return;
	default:
		break;
	}
	c = &w->conns[TAG_SLOT(data)];
	if (c->fd < 0 || c->gen != TAG_GEN(data)) {
		/* Closed earlier in this batch of events. */
		COUNT(w, stale);
		return;
	}
	switch (kind) {
	case KIND_CONN:
		if (events & EPOLLOUT) {
			if (!conn_write(w, c))
				return;
			/* Drained: read what waited behind the replies. */
			if (!c->out_pending && c->in_len &&
			    !conn_parse(w, c, now_ns()))
				return;
		}
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			conn_read(w, c);
		return;
	case KIND_IDLE:
	case KIND_REQ:
		tfd_event(w, c, kind);
		return;
	default:
		return;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];
	int n, i, timeout;

	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		timeout = -1;
		if (opt.backend == BACKEND_TWHEEL)
			tw_flush(w);
		else if (opt.backend == BACKEND_RING)
			ring_flush(w);
		else if (opt.backend == BACKEND_HEAP)
			timeout = heap_timeout_ms(w);
		n = epoll_wait(w->epfd, evs, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait", errno);
		}
		for (i = 0; i < n; i++)
			dispatch(w, evs[i].data.u64, evs[i].events);
		if (opt.backend == BACKEND_HEAP)
			run_heap(w);
	}
	return NULL;
}

static int listener(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)opt.port),
	};
	int fd, one = 1;

	if (inet_pton(AF_INET, opt.addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "twheel_httpd: bad address %s\n", opt.addr);
		exit(1);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket", errno);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		die("setsockopt", errno);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind", errno);
	if (listen(fd, 4096) < 0)
		die("listen", errno);
	return fd;
}

static void worker_init(struct worker *w, unsigned int id)
{
	uint32_t i;
	int ret;

	w->id = id;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		die("epoll_create1", errno);
	w->lfd = listener();
	w->conns = calloc(opt.max_conns, sizeof(*w->conns));
	if (!w->conns)
		die("calloc", ENOMEM);
	for (i = 0; i < opt.max_conns; i++) {
		w->conns[i].fd = -1;
		w->conns[i].idle_tfd = -1;
		w->conns[i].req_tfd = -1;
		w->conns[i].next_free = i + 1 < opt.max_conns ? i + 1 :
				       UINT32_MAX;
	}
	w->free_head = 0;
	if (epoll_set(w, EPOLL_CTL_ADD, w->lfd, EPOLLIN,
		      tag(KIND_LISTEN, 0, 0)) < 0 ||
	    epoll_set(w, EPOLL_CTL_ADD, stop_efd, EPOLLIN,
		      tag(KIND_STOP, 0, 0)) < 0)
		die("epoll_ctl", errno);
	w->tw.fd = -1;
	if (opt.backend == BACKEND_HEAP) {
		w->heap = calloc(2 * (size_t)opt.max_conns, sizeof(*w->heap));
		if (!w->heap)
			die("calloc", ENOMEM);
	} else if (opt.backend == BACKEND_TWHEEL) {
		ret = twheel_open(&w->tw, LIBTWHEEL_OPEN_MAP);
		if (ret < 0)
			die("twheel_open", -ret);
		/* Two ops per dirty connection at most, and the cancels. */
		ret = twheel_sqbuf_init(&w->sq, SQ_CAP);
		if (ret < 0)
			die("twheel_sqbuf_init", -ret);
		w->aux = calloc(SQ_CAP, sizeof(*w->aux));
		w->dirty = calloc(DIRTY_CAP, sizeof(*w->dirty));
		w->cancels = calloc(CANCEL_CAP, sizeof(*w->cancels));
		if (!w->aux || !w->dirty || !w->cancels)
			die("calloc", ENOMEM);
		if (epoll_set(w, EPOLL_CTL_ADD, w->tw.fd, EPOLLIN,
			      tag(KIND_TWHEEL, 0, 0)) < 0)
			die("epoll_ctl", errno);
	} else if (opt.backend == BACKEND_RING) {
		ret = twheel_open(&w->tw, 0);
		if (ret < 0)
			die("twheel_open", -ret);
		if (2 * (uint64_t)opt.max_conns > w->tw.info.max_timers) {
			fprintf(stderr, "twheel_httpd: twheel-ring needs 2 ring "
				"slots per connection: -m %u is more than half "
				"of max_timers (%u)\n", opt.max_conns,
				w->tw.info.max_timers);
			exit(1);
		}
		if (!id && !(w->tw.info.flags & TWHEEL_INFO_RING))
			fprintf(stderr, "twheel_httpd: the kernel has no "
				"submission ring (TWHEEL_INFO_RING): twheel-ring "
				"makes a system call per timer op instead\n");
		ret = twheel_ring_init(&w->tw);
		if (ret < 0)
			die("twheel_ring_init", -ret);
		if (epoll_set(w, EPOLL_CTL_ADD, w->tw.fd, EPOLLIN,
			      tag(KIND_TWHEEL, 0, 0)) < 0)
			die("epoll_ctl", errno);
	}
}

static void worker_fini(struct worker *w)
{
	uint32_t i;

	for (i = 0; i < opt.max_conns; i++)
		if (w->conns[i].fd >= 0)
			conn_close(w, &w->conns[i]);
	/* Closing the file cancels every timer left. */
	if (w->tw.fd >= 0)
		twheel_close(&w->tw);
	twheel_sqbuf_free(&w->sq);
	free(w->aux);
	free(w->dirty);
	free(w->cancels);
	free(w->heap);
	free(w->conns);
	close(w->lfd);
	close(w->epfd);
}

static void print_counters(void)
{
	struct counters sum = { 0 };
	struct rusage ru;
	struct twheel_info info;
	uint64_t open = 0, tw_timers = 0, tw_units = 0;
	unsigned int i;

#define ADD(f) (sum.f += __atomic_load_n(&workers[i].c.f, __ATOMIC_RELAXED))
	for (i = 0; i < opt.threads; i++) {
		ADD(conns); ADD(requests); ADD(idle_closes); ADD(idle_early);
		ADD(idle_rearms); ADD(deadline_fires); ADD(timer_errors);
		ADD(twice); ADD(stale); ADD(peer_closes); ADD(rejected);
		ADD(errors);
		open += __atomic_load_n(&workers[i].nr_open, __ATOMIC_RELAXED);
		if (workers[i].tw.fd >= 0 &&
		    twheel_get_info(&workers[i].tw, &info) == 0) {
			tw_timers += info.timers;
			/* per user: the same for every file */
			tw_units = info.user_timers;
		}
	}
#undef ADD
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		memset(&ru, 0, sizeof(ru));
	printf("httpd: backend=%s threads=%u conns=%llu requests=%llu "
	       "idle_closes=%llu idle_early=%llu idle_rearms=%llu "
	       "deadline_fires=%llu timer_errors=%llu twice=%llu stale=%llu "
	       "peer_closes=%llu rejected=%llu errors=%llu open=%llu "
	       "tw_timers=%llu tw_units=%llu utime_us=%llu stime_us=%llu\n",
	       backend_names[opt.backend], opt.threads,
	       (unsigned long long)sum.conns,
	       (unsigned long long)sum.requests,
	       (unsigned long long)sum.idle_closes,
	       (unsigned long long)sum.idle_early,
	       (unsigned long long)sum.idle_rearms,
	       (unsigned long long)sum.deadline_fires,
	       (unsigned long long)sum.timer_errors,
	       (unsigned long long)sum.twice,
	       (unsigned long long)sum.stale,
	       (unsigned long long)sum.peer_closes,
	       (unsigned long long)sum.rejected,
	       (unsigned long long)sum.errors,
	       (unsigned long long)open,
	       (unsigned long long)tw_timers,
	       (unsigned long long)tw_units,
	       (unsigned long long)ru.ru_utime.tv_sec * 1000000ull +
			(unsigned long long)ru.ru_utime.tv_usec,
	       (unsigned long long)ru.ru_stime.tv_sec * 1000000ull +
			(unsigned long long)ru.ru_stime.tv_usec);
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: twheel_httpd [-b timerfd|heap|twheel|twheel-ring] [-t threads]\n"
		"                    [-p port] [-a addr] [-i idle_ms] [-r request_ms]\n"
		"                    [-m max_conns]\n"
		"  -b  timer backend (heap)\n"
		"  -t  threads, one per CPU, pinned (the number of CPUs)\n"
		"  -p  TCP port (8080); -a  IPv4 address (0.0.0.0)\n"
		"  -i  idle timeout of a connection in ms (30000)\n"
		"  -r  deadline of a request in ms (5000)\n"
		"  -m  most connections per thread (32768)\n"
		"SIGUSR1 prints the counters, SIGINT and SIGTERM print them and exit.\n");
	exit(2);
}

static unsigned long parse_num(const char *s, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	sigset_t sigs;
	unsigned int i;
	int o, sig, ret;
	uint64_t one = 1;

	while ((o = getopt(argc, argv, "b:t:p:a:i:r:m:h")) != -1) {
		switch (o) {
		case 'b':
			for (i = 0; i < NR_BACKENDS; i++)
				if (!strcmp(optarg, backend_names[i]))
					break;
			if (i == NR_BACKENDS)
				usage();
			opt.backend = (enum backend)i;
			break;
		case 't':
			opt.threads = (unsigned int)parse_num(optarg, 1024);
			break;
		case 'p':
			opt.port = (unsigned int)parse_num(optarg, 65535);
			break;
		case 'a':
			opt.addr = optarg;
			break;
		case 'i':
			opt.idle_ns = parse_num(optarg, 86400000) * NSEC_PER_MSEC;
			break;
		case 'r':
			opt.req_ns = parse_num(optarg, 86400000) * NSEC_PER_MSEC;
			break;
		case 'm':
			opt.max_conns = (uint32_t)parse_num(optarg, 1 << 22);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !opt.max_conns)
		usage();
	if (!opt.threads)
		opt.threads = ncpu > 0 ? (unsigned int)ncpu : 1;
	memset(resp_buf, 0, sizeof(resp_buf));
	for (i = 0; i < RESP_COPIES; i++)
		memcpy(resp_buf + i * RESP_LEN, RESPONSE, RESP_LEN);

	/* Signals go to the main thread only, which waits for them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	ret = pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (ret)
		die("pthread_sigmask", ret);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		die("signal", errno);
	/* Readable for ever once written: wakes every thread to stop. */
	stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_efd < 0)
		die("eventfd", errno);

	workers = calloc(opt.threads, sizeof(*workers));
	if (!workers)
		die("calloc", ENOMEM);
	for (i = 0; i < opt.threads; i++)
		worker_init(&workers[i], i);
	for (i = 0; i < opt.threads; i++) {
		cpu_set_t set;

		ret = pthread_create(&workers[i].thread, NULL, worker_main,
				     &workers[i]);
		if (ret)
			die("pthread_create", ret);
		CPU_ZERO(&set);
		CPU_SET(i % (ncpu > 0 ? (unsigned int)ncpu : 1), &set);
		ret = pthread_setaffinity_np(workers[i].thread, sizeof(set),
					     &set);
		if (ret)
			fprintf(stderr, "twheel_httpd: affinity: %s\n",
				strerror(ret));
	}
	printf("httpd: ready backend=%s threads=%u port=%u idle_ms=%llu "
	       "request_ms=%llu pid=%d\n", backend_names[opt.backend],
	       opt.threads, opt.port,
	       (unsigned long long)(opt.idle_ns / NSEC_PER_MSEC),
	       (unsigned long long)(opt.req_ns / NSEC_PER_MSEC), (int)getpid());
	fflush(stdout);

	for (;;) {
		sig = sigwaitinfo(&sigs, NULL);
		if (sig < 0) {
			if (errno == EINTR)
				continue;
			die("sigwaitinfo", errno);
		}
		if (sig != SIGUSR1)
			break;
		print_counters();
	}
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	if (write(stop_efd, &one, sizeof(one)) != sizeof(one))
		die("eventfd write", errno);
	for (i = 0; i < opt.threads; i++) {
		ret = pthread_join(workers[i].thread, NULL);
		if (ret)
			die("pthread_join", ret);
	}
	print_counters();
	for (i = 0; i < opt.threads; i++)
		worker_fini(&workers[i]);
	free(workers);
	close(stop_efd);
	return 0;
}
