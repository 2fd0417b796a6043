// SPDX-License-Identifier: GPL-2.0
/*
 * httpd_idle: how late, if ever, a server closes idle keep-alive
 * connections.
 *
 *   httpd_idle [-a addr] [-p port] [-n conns] [-i idle_ms] [-g grace_ms]
 *              [-b busy_conns] [-B busy_interval_ms]
 *
 * Opens @conns connections, sends one request on each, reads its reply
 * and then says nothing. A server with an idle timeout of @idle_ms must
 * close each connection no earlier than @idle_ms after the request was
 * sent (the time is taken before send(), so it is never after the
 * server's own "last activity"), and should close it soon after. For each
 * connection the time it saw EOF is recorded; at the end (every
 * connection closed, or @grace_ms after the last deadline) one line gives
 * the lateness of the closes relative to request + @idle_ms (p50, p99,
 * max, in ms), the closes that came early, and the connections that were
 * never closed (lost). Exit status 0 if every connection was answered and
 * closed, none early.
 *
 * With -b, as many more connections stay busy meanwhile: each sends a
 * request every -B ms (half the idle timeout) after its previous reply,
 * a paced load that, unlike wrk's, leaves the server time to spare and
 * never lets these connections go idle. The server must not close them
 * (busy_closed). A request's reply is owed within -B ms + the grace.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC	1000000000ull
#define NSEC_PER_MSEC	1000000ull

/* Connects in flight at once: more would overflow the listen backlog. */
#define CONNECTING_MAX	256
#define MAX_EVENTS	256
#define REPLY_MAX	1024

static const char request[] = "GET / HTTP/1.1\r\nHost: httpd-idle\r\n\r\n";

enum state { CONNECTING, REPLYING, IDLE, CLOSED, FAILED, BUSY };

struct client {
	int fd;
	enum state state;
	uint64_t sent;		/* ns, just before the request was sent */
	uint64_t closed;	/* ns, EOF seen */
	unsigned int got;	/* bytes of the reply so far */
	unsigned int need;	/* bytes of the whole reply, 0: not known */
	bool busy;		/* one of the -b connections */
	uint64_t next_send;	/* busy: when to send the next request */
	char reply[REPLY_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "httpd_idle: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(struct client *c, unsigned int *errors)
{
	close(c->fd);
	c->fd = -1;
	c->state = FAILED;
	(*errors)++;
}

/* Is the reply complete: its head, and Content-Length bytes after it? */
static bool reply_done(struct client *c)
{
	char *end, *cl;

	if (!c->need) {
		end = memmem(c->reply, c->got, "\r\n\r\n", 4);
		if (!end)
			return false;
		c->reply[end - c->reply] = '\0';
		cl = strcasestr(c->reply, "\r\nContent-Length:");
		c->need = (unsigned int)(end + 4 - c->reply) +
			  (cl ? (unsigned int)strtoul(cl + 17, NULL, 10) : 0);
	}
	return c->got >= c->need;
}

/* Sends the request; false if it could not. */
static bool send_request(struct client *c)
{
	c->sent = now_ns();
	c->got = 0;
	c->need = 0;
	return send(c->fd, request, sizeof(request) - 1, MSG_NOSIGNAL) ==
	       (ssize_t)sizeof(request) - 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: httpd_idle [-a addr] [-p port] [-n conns] "
		"[-i idle_ms] [-g grace_ms]\n"
		"                  [-b busy_conns] [-B busy_interval_ms]\n");
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 100000000)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *addr = "127.0.0.1";
	unsigned int port = 8080, nconns = 100, i, next = 0, connecting = 0;
	unsigned int closed = 0, early = 0, lost = 0, errors = 0, answered = 0;
	uint64_t idle_ns = NSEC_PER_SEC, grace_ns = 2 * NSEC_PER_SEC;
	uint64_t last_sent = 0, *late, early_max = 0, now, start;
	struct epoll_event evs[MAX_EVENTS];
	struct client *cs;
	struct rlimit rl;
	unsigned int nlate = 0, nbusy = 0, total, busy_closed = 0;
	unsigned int *fifo, fifo_head = 0, fifo_len = 0;
	uint64_t busy_ns = 0, busy_requests = 0, wait_ms;
	int o, epfd, n, k;

	while ((o = getopt(argc, argv, "a:p:n:i:g:b:B:")) != -1) {
		switch (o) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = (unsigned int)num(optarg);
			break;
		case 'n':
			nconns = (unsigned int)num(optarg);
			break;
		case 'i':
			idle_ns = num(optarg) * NSEC_PER_MSEC;
			break;
		case 'g':
			grace_ns = num(optarg) * NSEC_PER_MSEC;
			break;
		case 'b':
			nbusy = (unsigned int)num(optarg);
			break;
		case 'B':
			busy_ns = num(optarg) * NSEC_PER_MSEC;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !nconns || port > 65535)
		usage();
	if (!busy_ns)
		busy_ns = idle_ns / 2;
	total = nconns + nbusy;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		usage();
	/* One fd per connection: take what the hard limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit");
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			die("setrlimit");
	}
	/* The busy connections first: the load is on when the idle go. */
	cs = calloc(total, sizeof(*cs));
	late = calloc(nconns, sizeof(*late));
	/* Busy connections waiting to send, in the order of next_send. */
	fifo = calloc(nbusy + 1, sizeof(*fifo));
	if (!cs || !late || !fifo)
		die("calloc");
	for (i = 0; i < nbusy; i++)
		cs[i].busy = true;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");

	start = now_ns();
	for (;;) {
		/* Keep CONNECTING_MAX connects in flight. */
		while (next < total && connecting < CONNECTING_MAX) {
			struct client *c = &cs[next];
			struct epoll_event ev = {
				.events = EPOLLOUT | EPOLLIN,
				.data.u32 = next++,
			};

			c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
				       SOCK_CLOEXEC, 0);
			if (c->fd < 0)
				die("socket");
			if (connect(c->fd, (struct sockaddr *)&sin,
				    sizeof(sin)) < 0 && errno != EINPROGRESS) {
				fail(c, &errors);
				continue;
			}
			if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
				die("epoll_ctl");
			c->state = CONNECTING;
			connecting++;
		}
		now = now_ns();
		/* The busy connections whose turn it is send again. */
		while (fifo_len && cs[fifo[fifo_head]].next_send <= now) {
			struct client *c = &cs[fifo[fifo_head]];

			fifo_head = (fifo_head + 1) % (nbusy + 1);
			fifo_len--;
			if (c->state != BUSY)
				continue;
			if (!send_request(c)) {
				fail(c, &errors);
				continue;
			}
			c->state = REPLYING;
		}
		if (next == total && closed + errors >= nconns)
			break;
		/* Everyone sent: wait until the last deadline + grace. */
		if (next == total && !connecting && last_sent &&
		    now > last_sent + idle_ns + grace_ns)
			break;
		/* A bound of its own on the whole run. */
		if (now - start > 2 * (idle_ns + grace_ns) +
		    (uint64_t)nconns * NSEC_PER_MSEC + 60 * NSEC_PER_SEC)
			break;
		wait_ms = 100;
		if (fifo_len) {
			uint64_t t = cs[fifo[fifo_head]].next_send;

			wait_ms = t <= now ? 0 :
				  (t - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;
			if (wait_ms > 100)
				wait_ms = 100;
		}
		n = epoll_wait(epfd, evs, MAX_EVENTS, (int)wait_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		now = now_ns();
		for (k = 0; k < n; k++) {
			struct client *c = &cs[evs[k].data.u32];
			ssize_t r;
			int err = 0;
			socklen_t len = sizeof(err);

			if (c->state == CONNECTING) {
				struct epoll_event ev = {
					.events = EPOLLIN,
					.data.u32 = evs[k].data.u32,
				};

				if (!(evs[k].events & (EPOLLOUT | EPOLLERR |
						       EPOLLHUP)))
					continue;
				connecting--;
				if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR,
					       &err, &len) < 0 || err) {
					fail(c, &errors);
					continue;
				}
				if (!send_request(c) ||
				    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd,
					      &ev) < 0) {
					fail(c, &errors);
					continue;
				}
				if (!c->busy && c->sent > last_sent)
					last_sent = c->sent;
				c->state = REPLYING;
				continue;
			}
			if (c->state == REPLYING) {
				r = recv(c->fd, c->reply + c->got,
					 REPLY_MAX - 1 - c->got, 0);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r <= 0 || c->got + (size_t)r >=
					      REPLY_MAX - 1) {
					if (!r && c->busy)
						busy_closed++;
					fail(c, &errors);
					continue;
				}
				c->got += (unsigned int)r;
				if (reply_done(c)) {
					if (strncmp(c->reply, "HTTP/1.1 200",
						    12)) {
						fail(c, &errors);
						continue;
					}
					if (c->busy) {
						/* Its turn comes again. */
						busy_requests++;
						c->state = BUSY;
						c->next_send = now + busy_ns;
						fifo[(fifo_head + fifo_len) %
						     (nbusy + 1)] =
							evs[k].data.u32;
						fifo_len++;
						continue;
					}
					answered++;
					c->state = IDLE;
				}
				continue;
			}
			if (c->state == BUSY) {
				/* Nothing may come but an EOF, too early. */
				r = recv(c->fd, c->reply, REPLY_MAX, 0);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r == 0)
					busy_closed++;
				fail(c, &errors);
				continue;
			}
			if (c->state != IDLE)
				continue;
			/* Idle: the only thing that may come is the EOF. */
			r = recv(c->fd, c->reply, REPLY_MAX, 0);
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r > 0) {
				fail(c, &errors);
				continue;
			}
			c->closed = now;
			c->state = CLOSED;
			closed++;
			close(c->fd);
			c->fd = -1;
			if (c->closed < c->sent + idle_ns) {
				early++;
				if (c->sent + idle_ns - c->closed > early_max)
					early_max = c->sent + idle_ns -
						    c->closed;
			} else {
				late[nlate++] = c->closed - c->sent - idle_ns;
			}
		}
	}
	for (i = 0; i < total; i++) {
		if (cs[i].state == IDLE || cs[i].state == REPLYING ||
		    cs[i].state == CONNECTING || cs[i].state == BUSY) {
			if (cs[i].state == IDLE)
				lost++;
			else if (cs[i].state != BUSY && !cs[i].busy)
				errors++;
			close(cs[i].fd);
		}
	}
	qsort(late, nlate, sizeof(*late), cmp_u64);
#define PCT(p)	(nlate ? (double)late[(nlate - 1) * (p) / 100] / 1e6 : 0.0)
	printf("httpd_idle: conns=%u answered=%u closed=%u early=%u lost=%u "
	       "errors=%u idle_ms=%llu late_p50_ms=%.3f late_p99_ms=%.3f "
	       "late_max_ms=%.3f early_max_ms=%.3f busy_conns=%u "
	       "busy_requests=%llu busy_closed=%u\n", nconns, answered,
	       closed, early, lost, errors,
	       (unsigned long long)(idle_ns / NSEC_PER_MSEC), PCT(50), PCT(99),
	       PCT(100), (double)early_max / 1e6, nbusy,
	       (unsigned long long)busy_requests, busy_closed);
#undef PCT
	free(fifo);
	free(late);
	free(cs);
	close(epfd);
	return early || lost || errors || answered != nconns ? 1 : 0;
}
