#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench` (busybox sh). Every figure is one line that
# starts with "table=" (format: tests/twheel_bench.c); the host
# (tests/vm/bench.sh) collects them from this script's output.
#
# Environment (from the kernel command line):
#   TWHEEL_BENCH_PART   main: tables 1-8 (the 2 GiB VM); scale: table 9
#                       (booted with mem=1024M)
#   TWHEEL_BENCH_REPS   repetitions of each measurement (default 5)
#   TWHEEL_BENCH_SCALE_REPS  repetitions of table 9 (default 2)
#   TWHEEL_BENCH_ARGS   extra twheel_bench.ko parameters, comma-separated
#                       (e.g. max_pending=100000,tables=0x1)
#
# Files: /twheel/twheel.ko, /twheel/twheel_bench.ko, /bin/twheel_bench.
# Exit status: 0 if every step ran, 1 otherwise (never for speed).

PART=${TWHEEL_BENCH_PART:-main}
REPS=${TWHEEL_BENCH_REPS:-5}
SCALE_REPS=${TWHEEL_BENCH_SCALE_REPS:-2}
failed=0

step() {
	echo "# ---- $* ($(cut -d' ' -f1 /proc/uptime)s) ----"
}

fail() {
	echo "# FAILED: $*"
	failed=1
}

# kB value of a /proc/meminfo field
meminfo() {
	sed -n "s/^$1: *\([0-9]*\) kB/\1/p" /proc/meminfo
}

# Size of a per-CPU variable of the kernel: the distance from its address
# to the next per-CPU symbol in /proc/kallsyms (per-CPU symbols are the
# ones below 0x100000000, offsets into the per-CPU area; modules' symbols
# have a fourth field).
percpu_size() {
	awk -v want="$1" '
		length($1) == 16 && $1 ~ /^00000000/ && NF == 3 {
			a = 0
			for (i = 1; i <= 16; i++)
				a = a * 16 + index("0123456789abcdef", substr($1, i, 1)) - 1
			addr[n] = a; name[n] = $3; n++
		}
		END {
			for (i = 0; i < n; i++) {
				if (name[i] != want)
					continue
				best = -1
				for (j = 0; j < n; j++)
					if (addr[j] > addr[i] && (best < 0 || addr[j] < best))
						best = addr[j]
				if (best > 0)
					print best - addr[i]
				exit
			}
		}' /proc/kallsyms
}

info() {
	echo "table=0 part=$PART rep=0 kernel=$(uname -r) cpus=$(nproc) mem_kib=$(meminfo MemTotal) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}

load_twheel() {
	s0=$(meminfo Slab)
	v0=$(meminfo VmallocUsed)
	if ! insmod /twheel/twheel.ko "$@"; then
		fail "insmod twheel.ko $*"
		return 1
	fi
	s1=$(meminfo Slab)
	v1=$(meminfo VmallocUsed)
	echo "table=6 facility=twheel item=load rep=0 slab_kib=$((s1 - s0)) vmalloc_kib=$((v1 - v0)) module_bytes=$(sed -n 's/^twheel \([0-9]*\) .*/\1/p' /proc/modules)"
	# "twheel_core: 4 CPUs, 1000000 ns ticks, 8 levels of 64 buckets"
	line=$(dmesg | sed -n 's/.*twheel[a-z_]*: \([0-9]*\) CPUs, \([0-9]*\) ns ticks, \([0-9]*\) levels of \([0-9]*\) buckets.*/levels=\3 buckets=\4 granularity_ns=\2/p' | tail -n1)
	[ -z "$line" ] || echo "table=6 facility=twheel item=wheel rep=0 $line"
}

main_part() {
	load_twheel || return
	for sym in timer_bases hrtimer_bases; do
		st=$(percpu_size "$sym")
		[ -z "$st" ] || echo "table=6 facility=kernel item=$sym rep=0 bytes=$st"
	done

	# The first figures after boot come out slower, for every facility
	# alike (seen under TCG): a short pass of table 1 first, thrown away.
	step "warm-up pass (discarded)"
	timeout 300 insmod /twheel/twheel_bench.ko tables=0x1 reps=2 max_pending=1000 &&
		rmmod twheel_bench

	step "tables 1-6: twheel_bench.ko (in-kernel, a few minutes, no output until done)"
	args="reps=$REPS $(echo "${TWHEEL_BENCH_ARGS:-}" | tr ',' ' ')"
	dmesg -c >/dev/null
	# shellcheck disable=SC2086 # $args is several words
	timeout 1500 insmod /twheel/twheel_bench.ko $args
	st=$?
	dmesg | sed -n 's/^\[[^]]*\] twheel_bench: //p' | grep -E '^table=|failed'
	if [ "$st" -ne 0 ]; then
		fail "insmod twheel_bench.ko $args: status $st"
	else
		rmmod twheel_bench || fail "rmmod twheel_bench"
	fi
	# The most expiries twheel ran in one go, over the whole run, and
	# where its wheel runs spent their time, per expired timer (all
	# tables: table 3's 100 000-timer storms are most of the expiries).
	awk 'NR > 1 { if ($8 > m) m = $8; e += $5; a += $10; x += $11 }
		END { printf "table=3 facility=twheel item=debugfs rep=0 max_batch=%d expired=%d advance_ns_per_timer=%.1f expire_ns_per_timer=%.1f\n",
			m, e, e ? a / e : 0, e ? x / e : 0 }' /sys/kernel/debug/twheel/stats

	step "table 7: schedule + cancel from userspace"
	timeout 600 twheel_bench ops -r "$REPS" || fail "twheel_bench ops"
	step "table 8: deadline to read()"
	timeout 600 twheel_bench latency -r "$REPS" || fail "twheel_bench latency"
	rmmod twheel || fail "rmmod twheel"
}

scale_part() {
	# Memory is what table 9 measures, not the caps of /dev/twheel: with
	# their defaults (a quarter of low memory at 256 bytes a timer) one
	# process stops near 0.9M timers in this VM, with EAGAIN.
	load_twheel max_timers=16777216 max_user_timers=1000000000 \
		max_total_timers=1000000000 || return
	echo 16777216 >/proc/sys/fs/nr_open
	echo 16777216 >/proc/sys/fs/file-max
	# The fills may push memory to its floor: never let the OOM killer pick us.
	echo -1000 >/proc/self/oom_score_adj
	step "table 9: most pending timers in $(($(meminfo MemTotal) / 1024)) MiB"
	timeout 1200 twheel_bench scale -r "$SCALE_REPS" -t 90 -f 64 || fail "twheel_bench scale"
	rmmod twheel || fail "rmmod twheel"
}

step "twheel bench, part $PART"
dmesg -n 1	# keep the benchmark's kernel messages off the serial console
info
case "$PART" in
main) main_part ;;
scale) scale_part ;;
*) fail "unknown TWHEEL_BENCH_PART '$PART'" ;;
esac
step "done"
exit "$failed"
