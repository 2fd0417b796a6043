/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel tracepoints: schedule, expire (with lateness) and cancel.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM twheel

#if !defined(_TWHEEL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TWHEEL_TRACE_H

#include <linux/tracepoint.h>

struct twheel_timer;

TRACE_EVENT(twheel_schedule,
	    TP_PROTO(const struct twheel_timer *timer, u64 expires, u64 period,
		     int cpu, bool was_pending),
	    TP_ARGS(timer, expires, period, cpu, was_pending),
	    TP_STRUCT__entry(__field(const void *, timer)
			     __field(u64, expires)
			     __field(u64, period)
			     __field(int, cpu)
			     __field(bool, was_pending)),
	    TP_fast_assign(__entry->timer = timer;
			   __entry->expires = expires;
			   __entry->period = period;
			   __entry->cpu = cpu;
			   __entry->was_pending = was_pending;),
	    TP_printk("timer=%p expires=%llu period=%llu cpu=%d was_pending=%d",
		      __entry->timer, __entry->expires, __entry->period,
		      __entry->cpu, __entry->was_pending)
);

TRACE_EVENT(twheel_expire,
	    TP_PROTO(const struct twheel_timer *timer, u64 expires, u64 now,
		     u64 missed),
	    TP_ARGS(timer, expires, now, missed),
	    TP_STRUCT__entry(__field(const void *, timer)
			     __field(u64, expires)
			     __field(u64, lateness)
			     __field(u64, missed)),
	    TP_fast_assign(__entry->timer = timer;
			   __entry->expires = expires;
			   __entry->lateness = now - expires;
			   __entry->missed = missed;),
	    TP_printk("timer=%p expires=%llu lateness=%llu missed=%llu",
		      __entry->timer, __entry->expires, __entry->lateness,
		      __entry->missed)
);

TRACE_EVENT(twheel_cancel,
	    TP_PROTO(const struct twheel_timer *timer, bool was_pending),
	    TP_ARGS(timer, was_pending),
	    TP_STRUCT__entry(__field(const void *, timer)
			     __field(bool, was_pending)),
	    TP_fast_assign(__entry->timer = timer;
			   __entry->was_pending = was_pending;),
	    TP_printk("timer=%p was_pending=%d", __entry->timer,
		      __entry->was_pending)
);

#endif /* _TWHEEL_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE twheel_trace
#include <trace/define_trace.h>
