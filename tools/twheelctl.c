// SPDX-License-Identifier: GPL-2.0
/*
 * twheelctl: schedule /dev/twheel timers and watch them fire.
 *
 * Timers belong to the open file that scheduled them and die with it, so
 * scheduling and watching are one command: twheelctl opens /dev/twheel,
 * submits the timers (one TWHEEL_IOC_SCHEDULE, or TWHEEL_IOC_BATCH for
 * several), registers an eventfd, and prints one line per event until the
 * timers are done, a count or time limit is reached, or Ctrl-C.
 *
 * Every call on /dev/twheel goes through libtwheel (lib/libtwheel.h),
 * linked statically: open and TWHEEL_IOC_INFO, schedule, modify, cancel,
 * batches, the eventfd, reads and the deadline mapping. Only eventfd()
 * itself is created here, so that its errors keep their own message.
 *
 * --clock puts every timer of a command on CLOCK_REALTIME or CLOCK_BOOTTIME
 * (or their alarm twins, which wake a suspended machine and need
 * CAP_WAKE_ALARM) instead of CLOCK_MONOTONIC (one-shot or periodic, as the kernel allows):
 * their times, --at and the columns count on that clock; the watch loop's
 * own deadlines (--for, --cancel, ...) stay on CLOCK_MONOTONIC.
 *
 * Exit status: 0 ok, 1 runtime or kernel error, 2 usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <fcntl.h>

#include <libtwheel.h>

#include "twheel_cr.h"

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

#define EXIT_RUNTIME	1
#define EXIT_USAGE	2

#define MAX_TIMERS_TOTAL	(1u << 20)

typedef __u64 u64;
typedef __u32 u32;
typedef int64_t s64;

static const char *prog = "twheelctl";

/* ------------------------------------------------------------------ */
/* Messages                                                           */
/* ------------------------------------------------------------------ */

static void usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s %s--help' for more information.\n", prog,
		cmd ? cmd : "");
	exit(EXIT_USAGE);
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "?";
}

static void die_errno(int e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void die_errno(int e, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s (%s)\n", strerror(e), errname(e));
	exit(EXIT_RUNTIME);
}

/* ------------------------------------------------------------------ */
/* Durations                                                          */
/* ------------------------------------------------------------------ */

static const struct unit {
	const char *name;
	u64 ns;
} units[] = {
	{ "ns", 1 },
	{ "us", NSEC_PER_USEC },
	{ "ms", NSEC_PER_MSEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
};
#define N_UNITS (sizeof(units) / sizeof(units[0]))

/*
 * Parse a human duration: one or more NUMBER UNIT groups ("250ms", "1.5s",
 * "100us", "1m30s"); NUMBER may have a fraction; UNIT is ns, us, ms, s, m or
 * h. A bare "0" is allowed. Returns NULL and sets *ns, or an error message.
 */
static const char *parse_duration(const char *s, u64 *ns)
{
	u64 total = 0;
	const char *p = s;

	if (!*s)
		return "empty duration";
	if (!strcmp(s, "0")) {
		*ns = 0;
		return NULL;
	}
	while (*p) {
		u64 ip = 0, frac = 0, fdiv = 1, v, unit = 0;
		bool digits = false;
		size_t ulen = 0;

		if (*p == '-')
			return "durations cannot be negative";
		if (*p == '+')
			return "unexpected '+'";
		while (*p >= '0' && *p <= '9') {
			if (ip > (UINT64_MAX - 9) / 10)
				return "number too large";
			ip = ip * 10 + (u64)(*p++ - '0');
			digits = true;
		}
		if (*p == '.') {
			p++;
			while (*p >= '0' && *p <= '9') {
				/* keep 18 digits: more is below 1 ns for any unit */
				if (fdiv < 1000000000000000000ULL) {
					frac = frac * 10 + (u64)(*p - '0');
					fdiv *= 10;
				}
				p++;
				digits = true;
			}
		}
		if (!digits)
			return *p ? "expected a number" : "missing number";
		for (size_t i = 0; i < N_UNITS; i++) {
			size_t l = strlen(units[i].name);

			/* longest match: "ms" before "m", "ns"/"us" fine */
			if (!strncmp(p, units[i].name, l) && l > ulen &&
			    !(p[l] >= 'a' && p[l] <= 'z')) {
				unit = units[i].ns;
				ulen = l;
			}
		}
		if (!unit) {
			if (!*p)
				return "missing unit (use ns, us, ms, s, m or h, e.g. 250ms)";
			return "unknown unit (use ns, us, ms, s, m or h)";
		}
		p += ulen;
		if (ip > (u64)INT64_MAX / unit)
			return "too large (at most ~292 years)";
		v = ip * unit;
		/* fraction: frac/fdiv * unit, without overflow */
		if (frac) {
			unsigned __int128 f = (unsigned __int128)frac * unit / fdiv;

			v += (u64)f;
		}
		if (v > (u64)INT64_MAX - total)
			return "too large (at most ~292 years)";
		total += v;
	}
	*ns = total;
	return NULL;
}

static u64 duration_arg(const char *cmd, const char *opt, const char *s)
{
	u64 ns;
	const char *err = parse_duration(s, &ns);

	if (err)
		usage_error(cmd, "invalid duration '%s' for %s: %s", s, opt, err);
	return ns;
}

/* "1.5 s", "250 ms", "100 us", "17 ns": the largest unit that fits. */
static const char *fmt_dur(u64 ns, char *buf, size_t len)
{
	static const struct unit show[] = {
		{ "h", 3600 * NSEC_PER_SEC }, { "min", 60 * NSEC_PER_SEC },
		{ "s", NSEC_PER_SEC }, { "ms", NSEC_PER_MSEC },
		{ "us", NSEC_PER_USEC }, { "ns", 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(show) / sizeof(show[0]) - 1; i++)
		if (ns >= show[i].ns)
			break;
	if (ns % show[i].ns == 0) {
		snprintf(buf, len, "%llu %s", (unsigned long long)(ns / show[i].ns), show[i].name);
	} else {
		char *e;

		snprintf(buf, len, "%.3f", (double)ns / (double)show[i].ns);
		e = buf + strlen(buf) - 1;
		while (*e == '0')
			*e-- = 0;
		snprintf(buf + strlen(buf), len - strlen(buf), " %s", show[i].name);
	}
	return buf;
}

static u64 u64_arg(const char *cmd, const char *opt, const char *s, u64 min)
{
	char *end;
	u64 v;

	errno = 0;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		usage_error(cmd, "invalid number '%s' for %s", s, opt);
	v = strtoull(s, &end, 0);
	if (*end || end == s)
		usage_error(cmd, "invalid number '%s' for %s", s, opt);
	if (errno == ERANGE)
		usage_error(cmd, "number '%s' for %s is too large", s, opt);
	if (v < min)
		usage_error(cmd, "%s must be at least %llu, not '%s'", opt,
			    (unsigned long long)min, s);
	return v;
}

/* ------------------------------------------------------------------ */
/* Timer specs                                                        */
/* ------------------------------------------------------------------ */

enum when_kind { WHEN_IN, WHEN_AT, WHEN_AT_REL };

static const struct clock_name {
	const char *name;
	int clockid;
} clock_names[] = {
	{ "monotonic", TWHEEL_CLOCK_MONOTONIC },
	{ "realtime", TWHEEL_CLOCK_REALTIME },
	{ "boottime", TWHEEL_CLOCK_BOOTTIME },
	/* As their base clocks, and they wake a suspended machine. */
	{ "realtime-alarm", TWHEEL_CLOCK_REALTIME_ALARM },
	{ "boottime-alarm", TWHEEL_CLOCK_BOOTTIME_ALARM },
};
#define N_CLOCKS (sizeof(clock_names) / sizeof(clock_names[0]))

/* --clock NAME: monotonic, realtime, boottime or their -alarm (any case). */
static int clock_arg(const char *cmd, const char *s)
{
	for (size_t i = 0; i < N_CLOCKS; i++)
		if (!strcasecmp(s, clock_names[i].name))
			return clock_names[i].clockid;
	usage_error(cmd, "unknown clock '%s' for --clock (monotonic, realtime, boottime, "
		    "realtime-alarm or boottime-alarm)", s);
}

static const char *clock_name(int clockid)
{
	for (size_t i = 0; i < N_CLOCKS; i++)
		if (clock_names[i].clockid == clockid)
			return clock_names[i].name;
	return "?";
}

struct tspec {
	enum when_kind when;
	u64 value;		/* delay, absolute time, or offset for WHEN_AT_REL */
	u64 period;		/* 0: one-shot */
	bool fixed_delay;
	bool cancel_on_set;	/* TWHEEL_TIMER_CANCEL_ON_SET */
	bool has_data;
	u64 data;
	u64 max_count;		/* cancel after this many expiries; 0: never */
	u32 copies;		/* identical timers */
	const char *text;	/* as given */
};

/* One timer as submitted. */
struct timer {
	u64 id;
	int spec;		/* index into specs */
	u64 expiries;
	bool live;		/* pending, or fired with its event unread */
};

enum action_kind { ACT_CANCEL, ACT_MODIFY, ACT_EXTEND };

struct action {
	enum action_kind kind;
	int spec;		/* 0-based */
	u64 at;			/* ns after start */
	struct tspec mod;	/* ACT_MODIFY */
	u64 by;			/* ACT_EXTEND: the new deadline, ns after @at */
	const char *text;
};

/*
 * SPEC    = WHEN[,OPTION]...
 * WHEN    = DUR | in:DUR | at:TIME | at:+DUR | every:DUR
 * OPTION  = every=DUR | delay | cancel-on-set | data=U64 | count=N | copies=N
 */
static void parse_spec(const char *cmd, const char *opt, const char *arg, struct tspec *t)
{
	char *buf = strdup(arg), *rest, *tok;
	bool first = true;

	if (!buf) {
		perror(prog);
		exit(EXIT_RUNTIME);
	}
	memset(t, 0, sizeof(*t));
	t->copies = 1;
	t->text = arg;
	if (!*arg)
		usage_error(cmd, "empty timer spec for %s", opt);
	rest = buf;
	for (; (tok = strsep(&rest, ",")); first = false) {
		char what[96];
		const char *val;

		if (!*tok)
			usage_error(cmd, "empty %s in %s '%s'", first ? "time" : "option", opt, arg);

		if (first) {
			if (!strncmp(tok, "in:", 3)) {
				snprintf(what, sizeof(what), "%s '%s'", opt, arg);
				t->value = duration_arg(cmd, what, tok + 3);
			} else if (!strncmp(tok, "at:", 3)) {
				val = tok + 3;
				snprintf(what, sizeof(what), "%s '%s'", opt, arg);
				if (*val == '+') {
					t->when = WHEN_AT_REL;
					val++;
				} else {
					t->when = WHEN_AT;
				}
				t->value = duration_arg(cmd, what, val);
			} else if (!strncmp(tok, "every:", 6)) {
				snprintf(what, sizeof(what), "%s '%s'", opt, arg);
				t->value = t->period = duration_arg(cmd, what, tok + 6);
				if (!t->period)
					usage_error(cmd, "the period in %s '%s' must be more than 0", opt, arg);
			} else {
				snprintf(what, sizeof(what), "%s '%s'", opt, arg);
				t->value = duration_arg(cmd, what, tok);
			}
			continue;
		}
		snprintf(what, sizeof(what), "%.*s in %s '%s'",
			 (int)(strchr(tok, '=') ? strchr(tok, '=') - tok + 1 : (long)strlen(tok)), tok, opt, arg);
		if (!strncmp(tok, "every=", 6)) {
			t->period = duration_arg(cmd, what, tok + 6);
			if (!t->period)
				usage_error(cmd, "%s must be more than 0", what);
		} else if (!strcmp(tok, "delay")) {
			t->fixed_delay = true;
		} else if (!strcmp(tok, "cancel-on-set")) {
			t->cancel_on_set = true;
		} else if (!strncmp(tok, "data=", 5)) {
			t->data = u64_arg(cmd, what, tok + 5, 0);
			t->has_data = true;
		} else if (!strncmp(tok, "count=", 6)) {
			t->max_count = u64_arg(cmd, what, tok + 6, 1);
		} else if (!strncmp(tok, "copies=", 7)) {
			u64 n = u64_arg(cmd, what, tok + 7, 1);

			if (n > MAX_TIMERS_TOTAL)
				usage_error(cmd, "%s: at most %u copies, not %llu",
					    what, MAX_TIMERS_TOTAL, (unsigned long long)n);
			t->copies = (u32)n;
		} else {
			usage_error(cmd, "unknown option '%s' in %s '%s' (expected every=DUR, delay, cancel-on-set, data=N, count=N or copies=N)",
				    tok, opt, arg);
		}
	}
	if (t->fixed_delay && !t->period)
		usage_error(cmd, "'delay' in %s '%s' needs a period (every=DUR)", opt, arg);
	free(buf);
}

static void describe_spec(const struct tspec *t, u64 first_deadline, u64 t0, char *buf, size_t len)
{
	char d1[32], d2[32];
	size_t n = 0;

	if (t->period)
		n += (size_t)snprintf(buf + n, len - n, "every %s (%s), first at %+.3f ms",
				      fmt_dur(t->period, d1, sizeof(d1)),
				      t->fixed_delay ? "fixed delay" : "fixed rate",
				      ((double)(s64)(first_deadline - t0)) / 1e6);
	else
		n += (size_t)snprintf(buf + n, len - n, "once at %+.3f ms",
				      ((double)(s64)(first_deadline - t0)) / 1e6);
	if (n < len && t->when != WHEN_IN)
		n += (size_t)snprintf(buf + n, len - n, " (absolute %llu.%09llu s)",
				      (unsigned long long)(first_deadline / NSEC_PER_SEC),
				      (unsigned long long)(first_deadline % NSEC_PER_SEC));
	if (n < len && t->cancel_on_set)
		n += (size_t)snprintf(buf + n, len - n, ", ends on a clock set");
	if (n < len && t->max_count)
		n += (size_t)snprintf(buf + n, len - n, ", cancel after %llu",
				      (unsigned long long)t->max_count);
	(void)d2;
}

/* @t_base: the start, on @clockid, for WHEN_AT_REL */
static struct twheel_timer_spec to_kspec(const struct tspec *t, u64 data, u64 t_base,
					 int clockid)
{
	struct twheel_timer_spec s = {
		.value = t->value,
		.period = t->period,
		.user_data = t->has_data ? t->data : data,
		.clockid = (u32)clockid,
	};

	if (t->when == WHEN_AT)
		s.flags |= TWHEEL_TIMER_ABSTIME;
	if (t->when == WHEN_AT_REL) {
		s.flags |= TWHEEL_TIMER_ABSTIME;
		s.value = t_base + t->value;
	}
	if (t->period)
		s.flags |= TWHEEL_TIMER_PERIODIC;
	if (t->fixed_delay)
		s.flags |= TWHEEL_TIMER_FIXED_DELAY;
	if (t->cancel_on_set)
		s.flags |= TWHEEL_TIMER_CANCEL_ON_SET;
	return s;
}

/* ------------------------------------------------------------------ */
/* The watch loop                                                     */
/* ------------------------------------------------------------------ */

struct run_opts {
	const char *cmd;		/* "schedule " or "run " for messages */
	struct tspec *specs;
	int nspecs;
	struct action *actions;
	int nactions;
	u64 count;			/* stop after this many expiries; 0: no limit */
	u64 duration;			/* stop after this long; 0: no limit */
	bool poll_fd;			/* epoll the twheel fd, not an eventfd */
	int quiet;			/* 1: only the summary; 2: nothing */
	bool single;			/* use TWHEEL_IOC_SCHEDULE, not BATCH */
	int clockid;			/* TWHEEL_CLOCK_* of every timer */
	bool has_slack;			/* --slack: TWHEEL_TIMER_SLACK */
	u64 slack;			/* its value, ns */
};

struct state {
	struct twheel tw;		/* the fd; tw.map for --extend */
	u64 t0;				/* the start, CLOCK_MONOTONIC */
	u64 c0;				/* the start, on the timers' clock */
	struct timer *timers;
	u32 ntimers;
	u32 *hash;			/* id -> timer index + 1 */
	u32 hmask;
	u64 events, expiries, live;
	u64 late_sum, late_max, late_min;
	bool quiet;
	const struct run_opts *o;
};

static u32 hash_slot(const struct state *st, u64 id)
{
	return (u32)((id * 0x9e3779b97f4a7c15ULL) >> 32) & st->hmask;
}

static void hash_add(struct state *st, u32 idx)
{
	u32 h = hash_slot(st, st->timers[idx].id);

	while (st->hash[h])
		h = (h + 1) & st->hmask;
	st->hash[h] = idx + 1;
}

static struct timer *find_timer(struct state *st, u64 id)
{
	u32 h = hash_slot(st, id);

	while (st->hash[h]) {
		struct timer *t = &st->timers[st->hash[h] - 1];

		if (t->id == id)
			return t;
		h = (h + 1) & st->hmask;
	}
	return NULL;
}

static double rel_ms(const struct state *st, u64 t)
{
	return (double)(s64)(t - st->t0) / 1e6;
}

/* A time of the timers' clock (an event's), since the start. */
static double rel_clk_ms(const struct state *st, u64 t)
{
	return (double)(s64)(t - st->c0) / 1e6;
}

static void print_table_header(const struct state *st)
{
	if (st->quiet)
		return;
	printf("\n%6s %8s %12s %14s %14s %10s %6s  %s\n", "timer", "id", "user_data",
	       "deadline ms", "fired ms", "late us", "count", "flags");
}

static void note(const struct state *st, const struct timer *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(const struct state *st, const struct timer *t, const char *fmt, ...)
{
	va_list ap;
	char idx[16];

	if (st->quiet)
		return;
	snprintf(idx, sizeof(idx), "#%d", t->spec + 1);
	printf("%6s %8llu   ", idx, (unsigned long long)t->id);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/*
 * Cancel one timer. Whatever CANCEL says, the id is gone afterwards: 1 means
 * it was pending, 0 that it had fired and its event is still queued (read by
 * the next drain, which prints it).
 */
static void cancel_timer(struct state *st, struct timer *t, const char *why)
{
	int r = twheel_cancel(&st->tw, t->id);
	u64 now = twheel_now();

	if (r < 0 && r != -ENOENT)
		die_errno(-r, "cancel timer #%d (id %llu)", t->spec + 1,
			  (unsigned long long)t->id);
	if (r < 0)
		note(st, t, "%s at %.3f ms: already gone", why, rel_ms(st, now));
	else
		note(st, t, "%s at %.3f ms: %s", why, rel_ms(st, now),
		     r == 1 ? "was pending" : "had fired, its event is still queued");
	if (t->live) {
		t->live = false;
		st->live--;
	}
}

static void handle_event(struct state *st, const struct twheel_event *e)
{
	struct timer *t = find_timer(st, e->id);
	const struct tspec *sp = t ? &st->o->specs[t->spec] : NULL;
	s64 late = (s64)(e->fired - e->deadline);
	char idx[16], flags[40] = "";

	st->events++;
	st->expiries += e->count;
	if (late >= 0) {
		if ((u64)late > st->late_max)
			st->late_max = (u64)late;
		if ((u64)late < st->late_min)
			st->late_min = (u64)late;
		st->late_sum += (u64)late;
	}
	if (e->flags & TWHEEL_EVENT_PERIODIC)
		strcat(flags, " periodic");
	if (e->flags & TWHEEL_EVENT_CANCELLED)
		strcat(flags, " cancelled");
	if (e->flags & TWHEEL_EVENT_CLOCK_SET)
		strcat(flags, " clock-set");
	if (late < 0)
		strcat(flags, " EARLY!");
	if (t)
		snprintf(idx, sizeof(idx), "#%d", t->spec + 1);
	else
		snprintf(idx, sizeof(idx), "?");
	if (!st->quiet)
		printf("%6s %8llu %12llu %14.3f %14.3f %10lld %6llu %s\n", idx,
		       (unsigned long long)e->id, (unsigned long long)e->user_data,
		       rel_clk_ms(st, e->deadline), rel_clk_ms(st, e->fired), (long long)late / 1000,
		       (unsigned long long)e->count, flags);
	if (!t)
		return;
	t->expiries += e->count;
	if (!(e->flags & TWHEEL_EVENT_PERIODIC) ||
	    (e->flags & (TWHEEL_EVENT_CANCELLED | TWHEEL_EVENT_CLOCK_SET))) {
		/* a one-shot's event has been read: its id is gone */
		if (t->live) {
			t->live = false;
			st->live--;
		}
		return;
	}
	if (t->live && sp->max_count && t->expiries >= sp->max_count) {
		char why[48];

		snprintf(why, sizeof(why), "cancelled after %llu expiries",
			 (unsigned long long)t->expiries);
		cancel_timer(st, t, why);
	}
}

/* Read every queued event. Returns false if --count was reached. */
static bool drain(struct state *st)
{
	struct twheel_event ev[64];

	for (;;) {
		int n = twheel_read_nowait(&st->tw, ev, sizeof(ev) / sizeof(ev[0]));

		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return true;
		if (n < 0)
			die_errno(-n, "read %s", TWHEEL_DEVICE);
		if (n == 0) {
			/* read() returned less than one whole event */
			fprintf(stderr, "%s: read returned no whole event\n", prog);
			exit(EXIT_RUNTIME);
		}
		for (int i = 0; i < n; i++) {
			handle_event(st, &ev[i]);
			if (st->o->count && st->expiries >= st->o->count)
				return false;
		}
	}
}

static void do_action(struct state *st, struct action *a)
{
	const struct tspec *sp = &st->o->specs[a->spec];
	u64 now = twheel_now();

	for (u32 i = 0; i < st->ntimers; i++) {
		struct timer *t = &st->timers[i];

		if (t->spec != a->spec)
			continue;
		if (a->kind == ACT_CANCEL) {
			cancel_timer(st, t, "cancel");
			continue;
		}
		if (a->kind == ACT_EXTEND) {
			char d[32];
			int r;

			/* One store: no system call. The kernel reads it when due. */
			r = twheel_extend(&st->tw, t->id, now + a->by);
			if (r < 0)
				die_errno(-r, "extend timer #%d (id %llu)", a->spec + 1,
					  (unsigned long long)t->id);
			note(st, t, "extend at %.3f ms: due %s from now (a store, no system call%s)",
			     rel_ms(st, now), fmt_dur(a->by, d, sizeof(d)),
			     sp->period ? "; a periodic timer ignores it" :
			     st->o->clockid != TWHEEL_CLOCK_MONOTONIC ?
			     "; a timer on another clock ignores it" : "");
			continue;
		}
		/* ACT_MODIFY */
		{
			int clk = st->o->clockid;
			struct twheel_timer_spec s = to_kspec(&a->mod, sp->has_data ? sp->data :
							      (u64)(a->spec + 1),
							      twheel_now_clock(clk), clk);
			int r;
			char d[32];

			if (a->mod.has_data)
				s.user_data = a->mod.data;
			if (st->o->has_slack)
				r = twheel_modify_slack(&st->tw, t->id, clk, s.value, s.period,
							st->o->slack, s.flags, s.user_data);
			else
				r = twheel_modify_clock(&st->tw, t->id, clk, s.value, s.period,
							s.flags, s.user_data);
			if (r == -ENOENT) {
				note(st, t, "modify at %.3f ms: already gone", rel_ms(st, now));
				continue;
			}
			if (r < 0)
				die_errno(-r, "modify timer #%d (id %llu) to '%s'", a->spec + 1,
					  (unsigned long long)t->id, a->mod.text);
			if (!t->live) {
				t->live = true;
				st->live++;
			}
			if (a->mod.period)
				note(st, t, "modify at %.3f ms (%s): now every %s, was %s", rel_ms(st, now),
				     a->mod.text, fmt_dur(a->mod.period, d, sizeof(d)),
				     r == 1 ? "pending" : "not pending");
			else
				note(st, t, "modify at %.3f ms (%s): %s", rel_ms(st, now), a->mod.text,
				     r == 1 ? "was pending" : "was not pending, re-armed");
		}
	}
	/* later count= checks use the new spec */
	if (a->kind == ACT_MODIFY) {
		bool keep_data = st->o->specs[a->spec].has_data;
		u64 data = st->o->specs[a->spec].data;

		st->o->specs[a->spec] = a->mod;
		if (!a->mod.has_data && keep_data) {
			st->o->specs[a->spec].has_data = true;
			st->o->specs[a->spec].data = data;
		}
	}
}

static int cmp_action(const void *a, const void *b)
{
	const struct action *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * twheel_open(): open() and TWHEEL_IOC_INFO, into tw->info. It does not say
 * which of the two failed: ENOTTY can only be the ioctl's (a /dev/twheel
 * that is not this module), anything else is taken for open()'s.
 */
static void open_device(struct twheel *tw)
{
	int ret = twheel_open(tw, 0);

	if (ret == -ENOTTY)
		die_errno(ENOTTY, "TWHEEL_IOC_INFO");
	if (ret < 0) {
		int e = -ret;

		fprintf(stderr, "%s: cannot open %s: %s (%s)\n", prog, TWHEEL_DEVICE,
			strerror(e), errname(e));
		if (e == ENOENT)
			fprintf(stderr, "%s: is the twheel module loaded? (insmod twheel.ko)\n", prog);
		else if (e == EACCES || e == EPERM)
			fprintf(stderr, "%s: try as root\n", prog);
		exit(EXIT_RUNTIME);
	}
}

/*
 * Batches of one-shot CLOCK_MONOTONIC timers take short ops
 * (TWHEEL_BATCH_SHORT), half the bytes, when the kernel has them.
 */
static bool short_ops_fit(const struct state *st, const struct run_opts *o)
{
	if (!(st->tw.info.flags & TWHEEL_INFO_SHORT_OPS) ||
	    o->clockid != TWHEEL_CLOCK_MONOTONIC || o->has_slack)
		return false;
	for (int i = 0; i < o->nspecs; i++)
		if (o->specs[i].period || o->specs[i].fixed_delay ||
		    o->specs[i].cancel_on_set)
			return false;
	return true;
}

/* submit() with short ops: the same calls, the same errors. */
static void submit_short(struct state *st, const struct run_opts *o)
{
	u32 n = 0, total = st->ntimers;
	struct twheel_short_op *ops;
	int r;

	ops = calloc(total < TWHEEL_BATCH_MAX ? total : TWHEEL_BATCH_MAX, sizeof(*ops));
	if (!ops)
		die_errno(ENOMEM, "batch");
	for (u32 done = 0; done < total; done += n) {
		n = total - done < TWHEEL_BATCH_MAX ? total - done : TWHEEL_BATCH_MAX;
		for (u32 i = 0; i < n; i++) {
			const struct timer *t = &st->timers[done + i];
			struct twheel_timer_spec s = to_kspec(&o->specs[t->spec],
							      (u64)t->spec + 1, st->c0,
							      o->clockid);

			twheel_prep_schedule(&ops[i], s.value, s.flags, s.user_data);
		}
		/* n <= TWHEEL_BATCH_MAX: one TWHEEL_IOC_BATCH call */
		r = twheel_submit_short(&st->tw, ops, n);
		if (r < 0)
			die_errno(-r, "submit a batch of %u timers", n);
		for (u32 i = 0; i < (u32)r; i++)
			st->timers[done + i].id = ops[i].id;
		if ((u32)r < n) {
			int e = -ops[r].result;

			die_errno(e > 0 ? e : EIO, "schedule timer #%d ('%s', timer %u of %u)",
				  st->timers[done + (u32)r].spec + 1,
				  o->specs[st->timers[done + (u32)r].spec].text, done + (u32)r + 1, total);
		}
	}
	free(ops);
}

/*
 * One twheel_schedule() per timer with --single (and for schedule), else a
 * submission buffer of at most TWHEEL_BATCH_MAX operations, refilled and
 * submitted once per TWHEEL_IOC_BATCH call: a million copies need 4096
 * operations of memory, not a million.
 */
static void submit(struct state *st, const struct run_opts *o)
{
	struct twheel_sqbuf sq;
	u32 n = 0, total = st->ntimers;
	int r;

	if (o->single) {
		for (u32 i = 0; i < total; i++) {
			struct timer *t = &st->timers[i];
			const struct tspec *sp = &o->specs[t->spec];
			struct twheel_timer_spec s = to_kspec(sp, (u64)t->spec + 1, st->c0,
							      o->clockid);
			uint64_t id;

			if (o->has_slack)
				r = twheel_schedule_slack(&st->tw, o->clockid, s.value,
							  s.period, o->slack, s.flags,
							  s.user_data, &id);
			else
				r = twheel_schedule_clock(&st->tw, o->clockid, s.value,
							  s.period, s.flags, s.user_data,
							  &id);
			if (r < 0)
				die_errno(-r, "schedule timer '%s'", sp->text);
			t->id = id;
		}
		return;
	}
	if (short_ops_fit(st, o)) {
		submit_short(st, o);
		return;
	}
	r = twheel_sqbuf_init(&sq, total < TWHEEL_BATCH_MAX ? total : TWHEEL_BATCH_MAX);
	if (r < 0)
		die_errno(-r, "batch");
	for (u32 done = 0; done < total; done += n) {
		n = total - done < TWHEEL_BATCH_MAX ? total - done : TWHEEL_BATCH_MAX;
		twheel_sqbuf_reset(&sq);
		for (u32 i = 0; i < n; i++) {
			const struct timer *t = &st->timers[done + i];
			struct twheel_timer_spec s = to_kspec(&o->specs[t->spec],
							      (u64)t->spec + 1, st->c0,
							      o->clockid);

			twheel_sqbuf_schedule_clock(&sq, o->clockid, s.value, s.period,
						    s.flags, s.user_data);
			if (o->has_slack) {
				struct twheel_timer_spec *q = &sq.ops[sq.count - 1].spec;

				q->flags |= TWHEEL_TIMER_SLACK;
				q->slack = o->slack;
			}
		}
		/* n <= TWHEEL_BATCH_MAX: one TWHEEL_IOC_BATCH call */
		r = twheel_submit(&st->tw, &sq);
		if (r < 0)
			die_errno(-r, "submit a batch of %u timers", n);
		for (u32 i = 0; i < (u32)r; i++)
			st->timers[done + i].id = sq.ops[i].spec.id;
		if ((u32)r < n) {
			int e = -sq.ops[r].result;

			die_errno(e > 0 ? e : EIO, "schedule timer #%d ('%s', timer %u of %u)",
				  st->timers[done + (u32)r].spec + 1,
				  o->specs[st->timers[done + (u32)r].spec].text, done + (u32)r + 1, total);
		}
	}
	twheel_sqbuf_free(&sq);
}

static void print_plan(const struct state *st, const struct run_opts *o, const struct twheel_info *info)
{
	char gran[32];
	u32 i = 0;

	if (st->quiet)
		return;
	printf("%s: %u timer%s on %s, clock %s (tick %s, at most %u per fd)\n", prog,
	       st->ntimers, st->ntimers == 1 ? "" : "s", TWHEEL_DEVICE, clock_name(o->clockid),
	       fmt_dur(info->granularity_ns, gran, sizeof(gran)), info->max_timers);
	for (int s = 0; s < o->nspecs; s++) {
		const struct tspec *sp = &o->specs[s];
		u64 first;
		char desc[160], ids[48], idx[16];

		while (i < st->ntimers && st->timers[i].spec != s)
			i++;
		first = sp->when == WHEN_IN ? st->c0 + sp->value :
			sp->when == WHEN_AT_REL ? st->c0 + sp->value : sp->value;
		describe_spec(sp, first, st->c0, desc, sizeof(desc));
		if (sp->copies > 1)
			snprintf(ids, sizeof(ids), "ids %llu..%llu x%u",
				 (unsigned long long)st->timers[i].id,
				 (unsigned long long)st->timers[i + sp->copies - 1].id, sp->copies);
		else
			snprintf(ids, sizeof(ids), "id %llu", (unsigned long long)st->timers[i].id);
		snprintf(idx, sizeof(idx), "#%d", s + 1);
		printf("%6s  %-16s %s, user_data %llu\n", idx, ids, desc,
		       (unsigned long long)(sp->has_data ? sp->data : (u64)s + 1));
	}
	for (int a = 0; a < o->nactions; a++) {
		const struct action *ac = &o->actions[a];
		char at[32], idx[16];

		snprintf(idx, sizeof(idx), "#%d", ac->spec + 1);
		if (ac->kind == ACT_CANCEL)
			printf("%6s  %-16s cancel at %s\n", idx, "", fmt_dur(ac->at, at, sizeof(at)));
		else if (ac->kind == ACT_EXTEND)
			printf("%6s  %-16s extend at %s by a store\n", idx, "",
			       fmt_dur(ac->at, at, sizeof(at)));
		else
			printf("%6s  %-16s modify at %s to %s\n", idx, "", fmt_dur(ac->at, at, sizeof(at)),
			       ac->mod.text);
	}
	if (o->count || o->duration) {
		char d[32];

		printf("%6s  stop after", "");
		if (o->count)
			printf(" %llu expir%s", (unsigned long long)o->count, o->count == 1 ? "y" : "ies");
		if (o->count && o->duration)
			printf(" or");
		if (o->duration)
			printf(" %s", fmt_dur(o->duration, d, sizeof(d)));
		putchar('\n');
	}
}

static int run(const struct run_opts *o)
{
	struct state st = { .quiet = o->quiet > 0, .o = o, .late_min = UINT64_MAX };
	const struct twheel_info *info = &st.tw.info;
	struct epoll_event ee;
	sigset_t sigs;
	int efd = -1, sfd, ep, next_action = 0, fd, r;
	u64 total = 0, stop_at = 0;
	const char *why = "all timers done";
	u32 hsize = 16;

	for (int i = 0; i < o->nspecs; i++)
		total += o->specs[i].copies;
	if (total > MAX_TIMERS_TOTAL)
		usage_error(o->cmd, "%llu timers in all: at most %u", (unsigned long long)total,
			    MAX_TIMERS_TOTAL);
	st.ntimers = (u32)total;
	st.timers = calloc(total, sizeof(*st.timers));
	while (hsize < 2 * total)
		hsize <<= 1;
	st.hash = calloc(hsize, sizeof(*st.hash));
	st.hmask = hsize - 1;
	if (!st.timers || !st.hash)
		die_errno(ENOMEM, "allocate %llu timers", (unsigned long long)total);
	for (u32 i = 0, k = 0; i < (u32)o->nspecs; i++)
		for (u32 c = 0; c < o->specs[i].copies; c++, k++)
			st.timers[k] = (struct timer){ .spec = (int)i, .live = true };

	open_device(&st.tw);
	fd = st.tw.fd;
	if (total > info->max_timers)
		fprintf(stderr, "%s: warning: %llu timers, but this fd may hold %u\n", prog,
			(unsigned long long)total, info->max_timers);
	for (int a = 0; a < o->nactions && !st.tw.map; a++) {
		if (o->actions[a].kind != ACT_EXTEND)
			continue;
		r = twheel_map(&st.tw);
		if (r == -EOPNOTSUPP)
			die_errno(EOPNOTSUPP, "--extend: this twheel has no deadline mapping");
		if (r < 0)
			die_errno(-r, "mmap of the deadline array");
	}

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		die_errno(errno, "signalfd/epoll");
	if (!o->poll_fd) {
		efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (efd < 0)
			die_errno(errno, "eventfd");
		r = twheel_set_eventfd(&st.tw, efd);
		if (r < 0)
			die_errno(-r, "TWHEEL_IOC_SET_EVENTFD");
	}
	ee = (struct epoll_event){ .events = EPOLLIN, .data.fd = o->poll_fd ? fd : efd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ee.data.fd, &ee) < 0)
		die_errno(errno, "epoll_ctl");
	ee = (struct epoll_event){ .events = EPOLLIN, .data.fd = sfd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ee) < 0)
		die_errno(errno, "epoll_ctl");

	qsort(o->actions, (size_t)o->nactions, sizeof(*o->actions), cmp_action);
	st.t0 = twheel_now();
	st.c0 = twheel_now_clock(o->clockid);
	submit(&st, o);
	for (u32 i = 0; i < st.ntimers; i++)
		hash_add(&st, i);
	st.live = st.ntimers;
	if (o->duration)
		stop_at = st.t0 + o->duration;
	print_plan(&st, o, info);
	print_table_header(&st);
	fflush(stdout);

	for (;;) {
		struct epoll_event out[4];
		u64 now = twheel_now(), wake = stop_at;
		int timeout = -1, n;

		if (!st.live && next_action >= o->nactions)
			break;
		if (next_action < o->nactions && (!wake || st.t0 + o->actions[next_action].at < wake))
			wake = st.t0 + o->actions[next_action].at;
		if (wake)
			timeout = wake <= now ? 0 : (int)((wake - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		n = epoll_wait(ep, out, 4, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_errno(errno, "epoll_wait");
		for (int i = 0; i < n; i++) {
			if (out[i].data.fd == sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					why = si.ssi_signo == SIGINT ? "interrupted" : "terminated";
					goto done;
				}
			} else if (out[i].data.fd == efd) {
				u64 cnt;

				if (read(efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
					die_errno(errno, "read eventfd");
			}
		}
		if (!drain(&st)) {
			why = "count reached";
			goto done;
		}
		now = twheel_now();
		while (next_action < o->nactions && st.t0 + o->actions[next_action].at <= now) {
			do_action(&st, &o->actions[next_action++]);
			if (!drain(&st)) {
				why = "count reached";
				goto done;
			}
		}
		if (stop_at && twheel_now() >= stop_at) {
			why = "time limit reached";
			drain(&st);
			goto done;
		}
		fflush(stdout);
	}
	/* no live timers: read what cancels left queued */
	drain(&st);
done:
	if (o->quiet < 2) {
		u64 dt = twheel_now() - st.t0;

		printf("%s%s: %s: %llu event%s, %llu expir%s in %.3f s", o->quiet ? "" : "\n", prog, why,
		       (unsigned long long)st.events, st.events == 1 ? "" : "s",
		       (unsigned long long)st.expiries, st.expiries == 1 ? "y" : "ies",
		       (double)dt / 1e9);
		if (st.events && st.late_min != UINT64_MAX)
			printf("; lateness min %.3f / avg %.3f / max %.3f ms",
			       (double)st.late_min / 1e6,
			       (double)st.late_sum / (double)st.events / 1e6,
			       (double)st.late_max / 1e6);
		putchar('\n');
	}
	fflush(stdout);
	twheel_close(&st.tw);	/* cancels whatever is left */
	free(st.timers);
	free(st.hash);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Commands                                                           */
/* ------------------------------------------------------------------ */

static void help_main(FILE *f)
{
	fprintf(f,
"usage: twheelctl COMMAND [OPTIONS]\n"
"\n"
"Schedule timers on " TWHEEL_DEVICE " and watch them fire. Timers belong to the\n"
"open file and die with it, so every command that schedules also watches.\n"
"\n"
"commands:\n"
"  schedule   one timer: --in/--at, optionally --every; prints each expiry\n"
"  run        several timers (-t SPEC ...), with cancels and modifies on cue\n"
"  watch      the same as run\n"
"  info       the limits and counters of a fresh fd, and the clock\n"
"  dump       write an image of another process's open file (checkpoint)\n"
"  restore    make a file from such an image and run a command with it\n"
"  help [COMMAND]\n"
"\n"
"durations: a number and a unit, ns us ms s m h; fractions and sums work:\n"
"  250ms  1.5s  100us  2m  1m30s\n"
"\n"
"examples:\n"
"  twheelctl schedule --in 250ms\n"
"  twheelctl schedule --in 100ms --every 500ms --count 5\n"
"  twheelctl schedule --clock realtime --every 1s --count 3\n"
"  twheelctl run -t 250ms -t 1s -t every:200ms,count=5 --cancel 2@500ms\n"
"  twheelctl run -t 1s,copies=10000 --quiet\n"
"\n"
"exit status: 0 ok, 1 runtime or kernel error, 2 usage error.\n"
"Run 'twheelctl COMMAND --help' for a command's options.\n");
}

static void help_schedule(FILE *f)
{
	fprintf(f,
"usage: twheelctl schedule (--in DUR | --at TIME) [--every DUR [--delay-mode]]\n"
"                          [--clock CLOCK [--cancel-on-set]] [--slack DUR]\n"
"                          [--count N] [--data U64] [--poll] [--quiet]\n"
"\n"
"Schedule one timer on a new fd and print a line per expiry. A one-shot timer\n"
"exits after it fires; a periodic one runs until --count or Ctrl-C.\n"
"\n"
"  -i, --in DUR        first expiry DUR from now (default: one period, or 0)\n"
"  -a, --at TIME       first expiry at TIME of the clock (CLOCK_MONOTONIC: a\n"
"                      duration since boot, e.g. 12345.5s; see 'twheelctl\n"
"                      info'), or +DUR: an absolute deadline DUR from now\n"
"  -e, --every DUR     periodic: re-arm every DUR (fixed rate: missed periods\n"
"                      are counted, deadlines stay on the grid)\n"
"  -D, --delay-mode    with --every: the period counts from each expiry's end\n"
"  -C, --clock CLOCK   monotonic (default), realtime or boottime: the clock of\n"
"                      the timer, its period, --at and the time columns\n"
"                      (timerfd's semantics: a set of the wall clock moves\n"
"                      realtime timers, counting the periods it skips)\n"
"      --cancel-on-set with --clock realtime and --at: a set of the wall clock\n"
"                      ends the timer (flag clock-set)\n"
"      --slack DUR     how late the timer may fire (timerfd's timer slack):\n"
"                      0 for hrtimer's precision; default one tick\n"
"  -n, --count N       exit after N expiries\n"
"  -d, --data U64      user_data echoed in events (decimal or 0x hex; default 1)\n"
"      --for DUR       exit after DUR\n"
"      --poll          wait with epoll on the twheel fd instead of an eventfd\n"
"  -q, --quiet         print only the summary line; twice: nothing but errors\n"
"  -h, --help          this text\n"
"\n"
"Columns: timer (#N), kernel id, user_data, deadline and fired time in ms since\n"
"the start on the timer's clock, lateness in us, count (expiries since the\n"
"previous event), flags.\n");
}

static void help_run(FILE *f)
{
	fprintf(f,
"usage: twheelctl run -t SPEC [-t SPEC]... [--cancel T@DUR]... [--modify T@DUR=SPEC]...\n"
"                     [--extend T@DUR=DUR]... [--clock CLOCK] [--slack DUR]\n"
"                     [--count N] [--for DUR] [--single] [--poll] [--quiet]\n"
"\n"
"Schedule several timers on one fd (in one TWHEEL_IOC_BATCH) and watch them\n"
"until none is left, --count or --for is reached, or Ctrl-C. Timers are\n"
"numbered #1, #2, ... in the order of -t.\n"
"\n"
"  -t, --timer SPEC        a timer; SPEC is WHEN[,OPTION]...\n"
"        WHEN:   DUR | in:DUR    first expiry DUR from the start\n"
"                at:TIME         at TIME of the clock; at:+DUR: absolute, DUR\n"
"                                from the start\n"
"                every:DUR       periodic, first after DUR, then every DUR\n"
"        OPTION: every=DUR       periodic with this period (fixed rate)\n"
"                delay           fixed-delay mode (period from each expiry's end)\n"
"                cancel-on-set   --clock realtime, at: only: a clock set ends it\n"
"                data=U64        user_data (default: the timer's number)\n"
"                count=N         cancel this timer after N expiries\n"
"                copies=N        N identical timers (one batch per 4096)\n"
"  -c, --cancel T@DUR      cancel timer #T, DUR after the start\n"
"  -m, --modify T@DUR=SPEC re-arm timer #T with SPEC, DUR after the start\n"
"                          (SPEC's times count from that moment)\n"
"  -x, --extend T@DUR=DUR2 push one-shot timer #T back, DUR after the start, to\n"
"                          DUR2 from then, by a store to the mapped deadline\n"
"                          array (no system call; moving it earlier takes --modify)\n"
"  -C, --clock CLOCK       monotonic (default), realtime or boottime: the clock\n"
"                          of every timer, its period, at: and the time columns\n"
"                          (--cancel, --for, ... count on CLOCK_MONOTONIC)\n"
"      --slack DUR         how late every timer may fire (timerfd's timer\n"
"                          slack): 0 for hrtimer's precision; default one tick\n"
"  -n, --count N           stop after N expiries in all\n"
"      --for DUR           stop after DUR\n"
"      --single            one TWHEEL_IOC_SCHEDULE per timer instead of a batch\n"
"      --poll              wait with epoll on the twheel fd instead of an eventfd\n"
"  -q, --quiet             print only the summary line; twice: nothing but errors\n"
"  -h, --help              this text\n"
"\n"
"examples:\n"
"  twheelctl run -t 250ms -t 1s -t every:500ms,count=5\n"
"  twheelctl run -t every:100ms -t every:300ms,delay --cancel 1@1s --for 2s\n"
"  twheelctl run -t 5s --modify 1@500ms=250ms      # fires at 750 ms, not 5 s\n"
"  twheelctl run -t 500ms --extend 1@300ms=500ms   # fires at 800 ms, pushed back by a store\n"
"  twheelctl run -t at:+1s,data=0xfeed\n"
"  twheelctl run --clock boottime -t every:1s,count=3 -t 2s\n"
"  twheelctl run --clock realtime -t at:+1h,every=1h,cancel-on-set\n");
}

static void help_info(FILE *f)
{
	fprintf(f,
"usage: twheelctl info\n"
"\n"
"Open " TWHEEL_DEVICE " and print TWHEEL_IOC_INFO: the wheel's tick, the per-fd\n"
"timer limit, and the current time of each clock (for --at and --clock).\n");
}

static int cmd_info(int argc, char **argv)
{
	struct twheel tw;
	const struct twheel_info *info = &tw.info;
	char d[32];
	u64 now;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help_info(stdout);
			return 0;
		}
		usage_error("info ", "unexpected argument '%s'", argv[i]);
	}
	open_device(&tw);	/* reads TWHEEL_IOC_INFO into tw.info */
	now = twheel_now();
	printf("%-16s %s\n", "device", TWHEEL_DEVICE);
	printf("%-16s %s (%llu ns): expiries are never early, late by at most this\n",
	       "granularity", fmt_dur(info->granularity_ns, d, sizeof(d)),
	       (unsigned long long)info->granularity_ns);
	printf("%-16s %u timers per open file\n", "max timers", info->max_timers);
	printf("%-16s %u (this fresh fd)\n", "timers", info->timers);
	printf("%-16s %u\n", "queued events", info->queued);
	printf("%-16s %d (batch limit)\n", "batch max", TWHEEL_BATCH_MAX);
	printf("%-16s %s\n", "short ops", info->flags & TWHEEL_INFO_SHORT_OPS ?
	       "yes: batches of one-shot MONOTONIC timers take 32-byte ops" : "no");
	printf("%-16s %s\n", "slack", info->flags & TWHEEL_INFO_SLACK ?
	       "yes: --slack DUR below the granularity fires within DUR" : "no");
	printf("%-16s CLOCK_MONOTONIC, now %llu.%09llu s\n", "clock",
	       (unsigned long long)(now / NSEC_PER_SEC), (unsigned long long)(now % NSEC_PER_SEC));
	printf("%-16s %s\n", "clocks", info->flags & TWHEEL_INFO_CLOCKS ?
	       "MONOTONIC REALTIME BOOTTIME (--clock picks one)" : "MONOTONIC");
	if (info->flags & TWHEEL_INFO_CLOCKS) {
		for (int c = TWHEEL_CLOCK_REALTIME; c <= TWHEEL_CLOCK_BOOTTIME;
		     c += TWHEEL_CLOCK_BOOTTIME - TWHEEL_CLOCK_REALTIME) {
			now = twheel_now_clock(c);
			printf("%-16s CLOCK_%s, now %llu.%09llu s\n", "clock",
			       c == TWHEEL_CLOCK_REALTIME ? "REALTIME" : "BOOTTIME",
			       (unsigned long long)(now / NSEC_PER_SEC),
			       (unsigned long long)(now % NSEC_PER_SEC));
		}
	}
	printf("%-16s %s\n", "alarm clocks", !(info->flags & TWHEEL_INFO_ALARM) ? "no" :
	       info->flags & TWHEEL_INFO_WAKE_ALARM ?
	       "REALTIME_ALARM BOOTTIME_ALARM: wake a suspended machine" :
	       "REALTIME_ALARM BOOTTIME_ALARM, not for this user (no CAP_WAKE_ALARM)");
	twheel_close(&tw);
	return 0;
}

static int cmd_schedule(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "in", required_argument, NULL, 'i' },
		{ "at", required_argument, NULL, 'a' },
		{ "every", required_argument, NULL, 'e' },
		{ "delay-mode", no_argument, NULL, 'D' },
		{ "clock", required_argument, NULL, 'C' },
		{ "cancel-on-set", no_argument, NULL, 'O' },
		{ "slack", required_argument, NULL, 'L' },
		{ "count", required_argument, NULL, 'n' },
		{ "data", required_argument, NULL, 'd' },
		{ "for", required_argument, NULL, 'F' },
		{ "poll", no_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cmd = "schedule ";
	struct tspec t = { .copies = 1, .text = "" };
	struct run_opts o = { .cmd = cmd, .specs = &t, .nspecs = 1, .single = true,
			      .clockid = TWHEEL_CLOCK_MONOTONIC };
	bool have_in = false, have_at = false;
	static char text[256];
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:a:e:DC:n:d:qh", lopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (have_in || have_at)
				usage_error(cmd, "give one of --in and --at, once");
			have_in = true;
			t.value = duration_arg(cmd, "--in", optarg);
			break;
		case 'a':
			if (have_in || have_at)
				usage_error(cmd, "give one of --in and --at, once");
			have_at = true;
			if (optarg[0] == '+') {
				t.when = WHEN_AT_REL;
				t.value = duration_arg(cmd, "--at", optarg + 1);
			} else {
				t.when = WHEN_AT;
				t.value = duration_arg(cmd, "--at", optarg);
			}
			break;
		case 'e':
			t.period = duration_arg(cmd, "--every", optarg);
			if (!t.period)
				usage_error(cmd, "--every must be more than 0");
			break;
		case 'D':
			t.fixed_delay = true;
			break;
		case 'C':
			o.clockid = clock_arg(cmd, optarg);
			break;
		case 'L':
			o.has_slack = true;
			o.slack = duration_arg(cmd, "--slack", optarg);
			break;
		case 'O':
			t.cancel_on_set = true;
			break;
		case 'n':
			o.count = u64_arg(cmd, "--count", optarg, 1);
			break;
		case 'd':
			t.data = u64_arg(cmd, "--data", optarg, 0);
			t.has_data = true;
			break;
		case 'F':
			o.duration = duration_arg(cmd, "--for", optarg);
			if (!o.duration)
				usage_error(cmd, "--for must be more than 0");
			break;
		case 'P':
			o.poll_fd = true;
			break;
		case 'q':
			o.quiet++;
			break;
		case 'h':
			help_schedule(stdout);
			return 0;
		case ':':
			usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
		default:
			usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!have_in && !have_at) {
		if (!t.period)
			usage_error(cmd, "say when: --in DUR or --at TIME (or --every DUR)");
		t.value = t.period;	/* first expiry after one period */
	}
	if (t.fixed_delay && !t.period)
		usage_error(cmd, "--delay-mode needs --every");
	if (t.cancel_on_set && ((o.clockid != TWHEEL_CLOCK_REALTIME &&
				  o.clockid != TWHEEL_CLOCK_REALTIME_ALARM) || !have_at))
		usage_error(cmd, "--cancel-on-set needs --clock realtime[-alarm] and --at");
	snprintf(text, sizeof(text), "schedule");
	t.text = text;
	return run(&o);
}

/* T@DUR or T@DUR=SPEC */
static void parse_action(const char *cmd, const char *opt, const char *arg, enum action_kind kind,
			 struct action *a)
{
	char *buf = strdup(arg), *at, *eq = NULL, *end;
	char what[96];
	long t;

	if (!buf)
		die_errno(ENOMEM, "parse");
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->text = arg;
	at = strchr(buf, '@');
	if (!at)
		usage_error(cmd, "invalid %s '%s': expected %s", opt, arg,
			    kind == ACT_CANCEL ? "T@DUR, e.g. 2@500ms" :
			    kind == ACT_EXTEND ? "T@DUR=DUR, e.g. 1@300ms=500ms" :
			    "T@DUR=SPEC, e.g. 1@1s=250ms");
	*at++ = 0;
	if (kind != ACT_CANCEL) {
		eq = strchr(at, '=');
		if (!eq)
			usage_error(cmd, "invalid %s '%s': expected %s", opt, arg,
				    kind == ACT_EXTEND ? "T@DUR=DUR, e.g. 1@300ms=500ms" :
				    "T@DUR=SPEC, e.g. 1@1s=250ms");
		*eq++ = 0;
	}
	errno = 0;
	t = strtol(buf[0] == '#' ? buf + 1 : buf, &end, 10);
	if (!buf[0] || *end || t < 1 || errno)
		usage_error(cmd, "invalid timer number '%s' in %s %s (timers are #1, #2, ...)", buf,
			    opt, arg);
	a->spec = (int)(t - 1);
	snprintf(what, sizeof(what), "%s %s", opt, arg);
	a->at = duration_arg(cmd, what, at);
	if (kind == ACT_EXTEND)
		a->by = duration_arg(cmd, what, eq);
	if (kind == ACT_MODIFY) {
		parse_spec(cmd, opt, strdup(eq), &a->mod);
		if (a->mod.copies != 1)
			usage_error(cmd, "copies= makes no sense in %s %s", opt, arg);
	}
	free(buf);
}

static int cmd_run(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "timer", required_argument, NULL, 't' },
		{ "cancel", required_argument, NULL, 'c' },
		{ "modify", required_argument, NULL, 'm' },
		{ "extend", required_argument, NULL, 'x' },
		{ "clock", required_argument, NULL, 'C' },
		{ "slack", required_argument, NULL, 'L' },
		{ "count", required_argument, NULL, 'n' },
		{ "for", required_argument, NULL, 'F' },
		{ "single", no_argument, NULL, 'S' },
		{ "poll", no_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cmd = "run ";
	struct run_opts o = { .cmd = cmd, .clockid = TWHEEL_CLOCK_MONOTONIC };
	int c;

	o.specs = calloc((size_t)argc, sizeof(*o.specs));
	o.actions = calloc((size_t)argc, sizeof(*o.actions));
	if (!o.specs || !o.actions)
		die_errno(ENOMEM, "parse");
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":t:c:m:x:C:n:qh", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			parse_spec(cmd, "-t", optarg, &o.specs[o.nspecs++]);
			break;
		case 'c':
			parse_action(cmd, "--cancel", optarg, ACT_CANCEL, &o.actions[o.nactions++]);
			break;
		case 'm':
			parse_action(cmd, "--modify", optarg, ACT_MODIFY, &o.actions[o.nactions++]);
			break;
		case 'x':
			parse_action(cmd, "--extend", optarg, ACT_EXTEND, &o.actions[o.nactions++]);
			break;
		case 'C':
			o.clockid = clock_arg(cmd, optarg);
			break;
		case 'L':
			o.has_slack = true;
			o.slack = duration_arg(cmd, "--slack", optarg);
			break;
		case 'n':
			o.count = u64_arg(cmd, "--count", optarg, 1);
			break;
		case 'F':
			o.duration = duration_arg(cmd, "--for", optarg);
			if (!o.duration)
				usage_error(cmd, "--for must be more than 0");
			break;
		case 'S':
			o.single = true;
			break;
		case 'P':
			o.poll_fd = true;
			break;
		case 'q':
			o.quiet++;
			break;
		case 'h':
			help_run(stdout);
			return 0;
		case ':':
			usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
		default:
			usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(cmd, "unexpected argument '%s' (timers are given with -t SPEC)",
			    argv[optind]);
	if (!o.nspecs)
		usage_error(cmd, "no timers: give at least one -t SPEC, e.g. -t 250ms");
	for (int i = 0; i < o.nspecs; i++)
		if (o.specs[i].cancel_on_set &&
		    (o.clockid != TWHEEL_CLOCK_REALTIME || o.specs[i].when == WHEN_IN))
			usage_error(cmd, "cancel-on-set in -t '%s' needs --clock realtime and at:",
				    o.specs[i].text);
	for (int i = 0; i < o.nactions; i++)
		if (o.actions[i].spec >= o.nspecs)
			usage_error(cmd, "'%s' names timer #%d, but there %s only %d", o.actions[i].text,
				    o.actions[i].spec + 1, o.nspecs == 1 ? "is" : "are", o.nspecs);
	return run(&o);
}

static void help_dump(FILE *f)
{
	fprintf(f,
"usage: twheelctl dump --pid PID --fd N -o IMAGE\n"
"\n"
"Write an image of the open " TWHEEL_DEVICE " that is fd N of process PID: every\n"
"timer (TWHEEL_IOC_DUMP), its deadline array and submission ring, and which\n"
"of PID's eventfds it signals. Stop the process first (kill -STOP), so that\n"
"nothing changes the file meanwhile; its timers go on firing, and the image\n"
"carries the expiries counted so far. Needs ptrace access to PID\n"
"(pidfd_getfd). 'twheelctl restore' makes a file from the image.\n");
}

static void help_restore(FILE *f)
{
	fprintf(f,
"usage: twheelctl restore -i IMAGE --fd N -- COMMAND [ARG]...\n"
"\n"
"Open " TWHEEL_DEVICE ", recreate the timers of IMAGE in it with the same ids\n"
"(TWHEEL_IOC_RESTORE), its deadline array and ring, and run COMMAND with the\n"
"file as fd N and, if the dumped file signalled an eventfd, a new eventfd\n"
"with the same count at the number it had. Absolute times are on the clocks\n"
"of this process's time namespace: restore where the clocks go on from the\n"
"dumped process's. Fails, running nothing, if the kernel has no twheel.\n");
}

/* The value of option @i of argv, or a usage error. */
static const char *opt_arg(const char *cmd, int argc, char **argv, int i)
{
	if (i + 1 >= argc)
		usage_error(cmd, "option '%s' needs an argument", argv[i]);
	return argv[i + 1];
}

static int cmd_dump(int argc, char **argv)
{
	const char *cmd = "dump ", *out = NULL;
	struct twheel_cr_image img;
	long long pid = -1, theirs = -1;
	int pidfd, fd, ofd, ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help_dump(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--pid")) {
			pid = (long long)u64_arg(cmd, "--pid", opt_arg(cmd, argc, argv, i), 1);
			i++;
		} else if (!strcmp(argv[i], "--fd")) {
			theirs = (long long)u64_arg(cmd, "--fd", opt_arg(cmd, argc, argv, i), 0);
			i++;
		} else if (!strcmp(argv[i], "-o")) {
			out = opt_arg(cmd, argc, argv, i);
			i++;
		} else {
			usage_error(cmd, "unexpected argument '%s'", argv[i]);
		}
	}
	if (pid < 0 || theirs < 0 || !out)
		usage_error(cmd, "give --pid, --fd and -o");
	if (pid > INT_MAX || theirs > INT_MAX)
		usage_error(cmd, "--pid and --fd must be at most %d", INT_MAX);
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd < 0)
		die_errno(errno, "pidfd_open(%lld)", pid);
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)theirs, 0);
	if (fd < 0)
		die_errno(errno, "fd %lld of process %lld", theirs, pid);
	ret = twheel_cr_dump(fd, &img);
	if (ret)
		die_errno(-ret, "dump of fd %lld of process %lld", theirs, pid);
	img.hdr.eventfd = twheel_cr_find_eventfd(pidfd, (int)pid, fd,
						 &img.hdr.eventfd_count);
	if (img.hdr.eventfd >= 0)
		img.hdr.flags |= TWHEEL_CR_EVENTFD;
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ofd < 0)
		die_errno(errno, "%s", out);
	ret = twheel_cr_write(ofd, &img);
	if (ret || close(ofd))
		die_errno(ret ? -ret : errno, "%s", out);
	printf("dumped %llu entries%s%s%s to %s\n",
	       (unsigned long long)img.hdr.ntimers,
	       img.hdr.flags & TWHEEL_CR_MAP ? ", the deadline array" : "",
	       img.hdr.flags & TWHEEL_CR_RING ? ", the ring" : "",
	       img.hdr.flags & TWHEEL_CR_EVENTFD ? ", an eventfd" : "", out);
	twheel_cr_free(&img);
	close(fd);
	close(pidfd);
	return 0;
}

/* Moves @fd to number @want (not close-on-exec). */
static void cr_place_fd(int fd, int want, const char *what)
{
	if (fd == want) {
		if (fcntl(fd, F_SETFD, 0))
			die_errno(errno, "%s", what);
		return;
	}
	if (dup2(fd, want) < 0)
		die_errno(errno, "%s as fd %d", what, want);
	close(fd);
}

static int cmd_restore(int argc, char **argv)
{
	const char *cmd = "restore ", *in = NULL;
	struct twheel_cr_image img;
	long long want = -1;
	int i, ifd, fd, efd = -1, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help_restore(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-i")) {
			in = opt_arg(cmd, argc, argv, i);
			i++;
		} else if (!strcmp(argv[i], "--fd")) {
			want = (long long)u64_arg(cmd, "--fd", opt_arg(cmd, argc, argv, i), 0);
			i++;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			usage_error(cmd, "unexpected argument '%s'", argv[i]);
		}
	}
	if (!in || want < 0 || i >= argc)
		usage_error(cmd, "give -i, --fd and a command after --");
	if (want > INT_MAX)
		usage_error(cmd, "--fd must be at most %d", INT_MAX);
	ifd = open(in, O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		die_errno(errno, "%s", in);
	ret = twheel_cr_read(ifd, &img);
	if (ret)
		die_errno(-ret, "%s", in);
	close(ifd);
	fd = open(TWHEEL_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		fprintf(stderr, "%s: cannot open %s: %s (%s)\n", prog, TWHEEL_DEVICE,
			strerror(e), errname(e));
		if (e == ENOENT)
			fprintf(stderr, "%s: is the twheel module loaded? (insmod twheel.ko)\n", prog);
		exit(EXIT_RUNTIME);
	}
	ret = twheel_cr_restore(fd, &img);
	if (ret)
		die_errno(-ret, "restore of %s", in);
	if (img.hdr.flags & TWHEEL_CR_EVENTFD) {
		struct twheel_eventfd e = { 0 };

		if (img.hdr.eventfd == want)
			usage_error(cmd, "the image's eventfd was fd %d: pick another --fd",
				    img.hdr.eventfd);
		efd = eventfd((unsigned int)img.hdr.eventfd_count, EFD_CLOEXEC);
		if (efd < 0)
			die_errno(errno, "eventfd");
		e.fd = efd;
		if (ioctl(fd, TWHEEL_IOC_SET_EVENTFD, &e))
			die_errno(errno, "TWHEEL_IOC_SET_EVENTFD");
		/* Out of the way of the numbers it is moved to. */
		if (efd == want || fd == img.hdr.eventfd) {
			int moved = fcntl(efd == want ? efd : fd, F_DUPFD_CLOEXEC,
					  (want > img.hdr.eventfd ? want : img.hdr.eventfd) + 1);

			if (moved < 0)
				die_errno(errno, "fcntl");
			close(efd == want ? efd : fd);
			if (efd == want)
				efd = moved;
			else
				fd = moved;
		}
	}
	cr_place_fd(fd, (int)want, TWHEEL_DEVICE);
	if (efd >= 0)
		cr_place_fd(efd, img.hdr.eventfd, "the eventfd");
	twheel_cr_free(&img);
	execvp(argv[i], argv + i);
	die_errno(errno, "%s", argv[i]);
}

int main(int argc, char **argv)
{
	const char *cmd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		help_main(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		help_main(stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		if (argc < 3)
			help_main(stdout);
		else if (!strcmp(argv[2], "schedule"))
			help_schedule(stdout);
		else if (!strcmp(argv[2], "run") || !strcmp(argv[2], "watch"))
			help_run(stdout);
		else if (!strcmp(argv[2], "info"))
			help_info(stdout);
		else if (!strcmp(argv[2], "dump"))
			help_dump(stdout);
		else if (!strcmp(argv[2], "restore"))
			help_restore(stdout);
		else
			usage_error(NULL, "no such command '%s'", argv[2]);
		return 0;
	}
	if (!strcmp(cmd, "schedule"))
		return cmd_schedule(argc - 1, argv + 1);
	if (!strcmp(cmd, "run") || !strcmp(cmd, "watch"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(cmd, "restore"))
		return cmd_restore(argc - 1, argv + 1);
	usage_error(NULL, "unknown command '%s' (schedule, run, watch, info, dump, restore, help)", cmd);
}
