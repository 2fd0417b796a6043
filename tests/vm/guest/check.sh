#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make check` (busybox sh), the same on every kernel. The
# host (tests/vm/check.sh) counts what this prints:
#
#   TWHEEL-RESULT: ok <name>               a passed test
#   TWHEEL-RESULT: not ok <name> # why     a failed test
#   TWHEEL-RESULT: skip <name> # why       not run (not counted)
#   TWHEEL-BEGIN: twheel_test              the userspace tests' own output,
#   TWHEEL-END: twheel_test status=N       whose "ok N"/"not ok N" lines count
#   TWHEEL-KUNIT-BEGIN: <suite>            /sys/kernel/debug/kunit/<suite>/results
#   TWHEEL-KUNIT-END: <suite>              (KTAP, parsed with kunit.py)
#   TWHEEL-KUNIT-NONE                      twheel_kunit.ko made no twheel_* suite
#
# Files: /twheel/*.ko, /bin/twheel_test, /bin/twheelctl,
# /bin/libtwheel_example.
# Environment (from the kernel command line): TWHEEL_KERNEL (distro|debug),
# TWHEEL_TEST_FILTER (argv[1] of twheel_test), TWHEEL_KUNIT_GLOB (KUnit's
# filter_glob), TWHEEL_TEST_TIMEOUT (s, default 600).

KMEMLEAK=/sys/kernel/debug/kmemleak
KUNIT_DIR=/sys/kernel/debug/kunit
failed=0
kmemleak_baseline=none

result() {
	# result ok|"not ok"|skip NAME [WHY]
	if [ -n "${3:-}" ]; then
		echo "TWHEEL-RESULT: $1 $2 # $3"
	else
		echo "TWHEEL-RESULT: $1 $2"
	fi
	[ "$1" != "not ok" ] || failed=$((failed + 1))
}

step() {
	echo "# ---- $* ----"
}

# Run a command; a test named $1 passes if it exits 0.
run_test() {
	name=$1
	shift
	if out=$("$@" 2>&1); then
		result ok "$name"
	else
		[ -z "$out" ] || echo "$out" | sed 's/^/# /'
		result "not ok" "$name" "'$*' failed"
	fi
}

kmemleak_start() {
	[ -w "$KMEMLEAK" ] || return 0
	step "kmemleak baseline"
	echo scan >"$KMEMLEAK"
	if [ -n "$(cat "$KMEMLEAK")" ]; then
		kmemleak_baseline=dirty
		echo "# kmemleak: the kernel leaked before the tests ($(grep -c '^unreferenced object' "$KMEMLEAK") objects); only twheel's leaks count"
	else
		kmemleak_baseline=clean
	fi
	echo clear >"$KMEMLEAK"
}

kmemleak_check() {
	[ -w "$KMEMLEAK" ] || return 0
	step "kmemleak"
	# kmemleak ignores objects younger than 5 s; two scans cut false positives.
	sleep 6
	echo scan >"$KMEMLEAK"
	sleep 2
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK" >/tmp/kmemleak
	if [ ! -s /tmp/kmemleak ]; then
		result ok kmemleak
		return
	fi
	sed 's/^/# /' /tmp/kmemleak | head -n 200
	# A kmem_cache_create() failed by the fail-nth module-load walk leaks
	# its kobject name in sysfs_slab_add(): mm/slub.c (6.12) does not
	# kobject_put() after kobject_init_and_add() fails. That one is the
	# kernel's; every other leak counts.
	nleaks=$(awk '/^unreferenced object/ { n++ } /sysfs_slab_add/ { s[n] = 1 }
		END { print n - length(s) }' /tmp/kmemleak)
	if [ "$nleaks" -eq 0 ]; then
		result ok kmemleak
		echo "# kmemleak: only the kernel's sysfs_slab_add() leaks of the module-load walk"
	elif [ "$kmemleak_baseline" = clean ]; then
		result "not ok" kmemleak "$nleaks leaked objects"
	elif grep -qE 'twheel|comm "(insmod|rmmod|twheel_test|twheelctl)"|^ *(\[<[0-9a-f]+>\] )?0xffffffff[0-9a-f]+$' /tmp/kmemleak; then
		# Unsymbolized frames: code of a module that is gone (ours).
		result "not ok" kmemleak "leaks from twheel"
	else
		result ok kmemleak
		echo "# kmemleak: the leaks above are not twheel's"
	fi
}

wait_for() {
	# wait_for SECONDS COMMAND...: poll every 0.2 s
	n=$(($1 * 5))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

load_twheel() {
	step "twheel.ko"
	if [ ! -f /twheel/twheel.ko ]; then
		result "not ok" insmod-twheel "/twheel/twheel.ko missing"
		return 1
	fi
	run_test insmod-twheel insmod /twheel/twheel.ko || return 1
	grep -q '^twheel ' /proc/modules || {
		result "not ok" insmod-twheel "not in /proc/modules"
		return 1
	}
	if wait_for 5 test -c /dev/twheel; then
		result ok dev-twheel
	else
		result "not ok" dev-twheel "/dev/twheel did not appear"
	fi
}

userspace_tests() {
	step "userspace tests"
	if [ ! -x /bin/twheel_test ]; then
		result skip twheel_test "tests/userspace/twheel_test not built (not yet written?)"
		return
	fi
	echo "TWHEEL-BEGIN: twheel_test"
	if [ -n "${TWHEEL_TEST_FILTER:-}" ]; then
		timeout "${TWHEEL_TEST_TIMEOUT:-600}" /bin/twheel_test "$TWHEEL_TEST_FILTER"
	else
		timeout "${TWHEEL_TEST_TIMEOUT:-600}" /bin/twheel_test
	fi
	st=$?
	echo "TWHEEL-END: twheel_test status=$st"
	[ "$st" -eq 0 ] || failed=$((failed + 1))
}

# The README's libtwheel example (built fully static by make lib-check): a
# 10 ms timer whose record it waits for, at most 1 s; exits 0 only if the
# record is the timer's.
libtwheel_example_test() {
	if [ ! -x /bin/libtwheel_example ]; then
		result skip libtwheel-example "no /bin/libtwheel_example (make lib-check did not build it)"
		return
	fi
	run_test libtwheel-example timeout 60 /bin/libtwheel_example
}

# Like run_test, but the output (the figures) is shown either way.
run_show() {
	name=$1
	shift
	out=$("$@" 2>&1)
	st=$?
	[ -z "$out" ] || echo "$out" | sed 's/^/# /'
	if [ "$st" -eq 0 ]; then
		result ok "$name"
	else
		result "not ok" "$name" "'$*' exited $st"
	fi
}

TRACING=/sys/kernel/tracing
STALL=/sys/module/twheel_stall/parameters

# The irqsoff tracer, where the kernel has one (the debug kernel).
irqsoff_start() {
	[ -d "$TRACING/options" ] || mount -t tracefs nodev "$TRACING" 2>/dev/null
	grep -qw irqsoff "$TRACING/available_tracers" 2>/dev/null || return 1
	echo irqsoff >"$TRACING/current_tracer"
}

irqsoff_reset() {
	[ ! -w "$TRACING/tracing_max_latency" ] || echo 0 >"$TRACING/tracing_max_latency"
}

irqsoff_max() {
	if [ "${tracer:-0}" -eq 1 ]; then
		cat "$TRACING/tracing_max_latency"
	else
		echo -1
	fi
}

stall_cmd() {
	echo "$1" >"$STALL/cmd" || {
		echo "# twheel_stall: '$1' failed: $(cat "$STALL/result")"
		return 1
	}
	echo "# twheel_stall: $(cat "$STALL/result")"
}

# One scenario at one size; writes "<tracer us> <probe us>" to /tmp/lat:
# the longest interrupts-off section during its step by the irqsoff tracer
# (-1 without one) and the worst lateness of the module's probe on CPU 1.
stall_scenario() {
	scen=$1
	n=$2
	case "$scen" in
	tick) stall_cmd "arm $n tick" || return 1 ;;
	offline) stall_cmd "arm $n far" || return 1 ;;
	group) stall_cmd "arm $n group" || return 1 ;;
	esac
	stall_cmd probe >/dev/null || return 1
	irqsoff_reset
	case "$scen" in
	tick) stall_cmd wait || return 1 ;;
	offline)
		t0=$(cut -d' ' -f1 /proc/uptime)
		echo 0 >/sys/devices/system/cpu/cpu1/online || return 1
		t1=$(cut -d' ' -f1 /proc/uptime)
		echo "# cpu1 offline with $n timers on it: $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
		;;
	group) stall_cmd stop || return 1 ;;
	close) /bin/twheel_abuse close "$n" | sed 's/^/# /' || return 1 ;;
	esac
	echo "$(irqsoff_max) $(cat "$STALL/probe_max_us")" >/tmp/lat
	# Where the longest section was, for the log.
	[ "${tracer:-0}" -eq 0 ] ||
		grep -E 'latency:|started at|ended at|^ => ' "$TRACING/trace" 2>/dev/null |
		head -n 10 | sed "s/^/# $scen $n irqsoff: /"
	if [ "$scen" = offline ]; then
		echo 1 >/sys/devices/system/cpu/cpu1/online || return 1
		# Let the CPU settle (its workers, its slab state) before
		# the next step arms timers there through a bound worker.
		sleep 1
	fi
	[ "$scen" = close ] || stall_cmd free
}

# Items 1-3 of the safety issue: what one user can cost the machine.
abuse_tests() {
	[ -x /bin/twheel_abuse ] || {
		result skip abuse "tests/userspace/twheel_abuse not built"
		return
	}
	step "abuse: unread short-period timers, per-user cap"
	run_show abuse-cpu /bin/twheel_abuse cpu 1000
	# The debug kernel schedules about 40 times slower: a smaller cap there
	# tests the same code in a few seconds (root may set it at any time).
	cap=/sys/module/twheel/parameters/max_user_timers
	saved_cap=$(cat "$cap")
	[ "${TWHEEL_KERNEL:-}" != debug ] || echo 40000 >"$cap"
	run_show abuse-user-cap /bin/twheel_abuse user-cap
	echo "$saved_cap" >"$cap"

	# The distro kernel arms a million timers in about a second; the
	# debug kernel (KASAN, lockdep) takes 40 times as long: 50k there.
	small=10000
	big=1000000
	[ "${TWHEEL_KERNEL:-}" != debug ] || big=50000
	step "abuse: longest interrupts-off section, $small against $big timers"
	run_test insmod-twheel_stall insmod /twheel/twheel_stall.ko || return
	if irqsoff_start; then
		tracer=1
	else
		tracer=0
		echo "# no irqsoff tracer in this kernel: the probe on CPU 1 measures"
	fi
	for scen in tick offline group close; do
		b=$big
		# A file holds at most max_timers (65536 by default): what one
		# user can close; root may raise it (the distro kernel closes
		# a file of a million, filled by root).
		[ "$scen" != close ] || [ "${TWHEEL_KERNEL:-}" != debug ] || b=65536
		ok=1
		for n in $small $b; do
			if stall_scenario "$scen" "$n"; then
				read -r t p </tmp/lat
				eval "tr_$n=$t pr_$n=$p"
			else
				ok=0
			fi
		done
		eval "ts=\$tr_$small tb=\$tr_$b ps=\$pr_$small pb=\$pr_$b"
		echo "# $scen: longest interrupts-off section (irqsoff tracer) $ts us with $small timers, $tb us with $b; probe on CPU 1: $ps us, $pb us"
		# The probe runs on CPU 1, where each scenario puts its timers
		# (and the close its file): the tracer sees every CPU, and on
		# the debug kernel a console write under TCG can hold
		# interrupts off for tens of ms, whatever twheel does.
		s_=$ps
		b_=$pb
		if [ "$ok" -eq 0 ]; then
			result "not ok" "abuse-irqsoff-$scen" "the scenario failed"
		elif [ "$b_" -gt $((4 * s_ + 20000)) ]; then
			result "not ok" "abuse-irqsoff-$scen" "grows with the timers: $s_ us -> $b_ us"
		else
			result ok "abuse-irqsoff-$scen"
		fi
	done
	[ "$tracer" -eq 0 ] || echo nop >"$TRACING/current_tracer"
	run_test rmmod-twheel_stall rmmod twheel_stall
}

kunit_tests() {
	ko=/twheel/twheel_kunit.ko
	if [ ! -f "$ko" ]; then
		[ "${TWHEEL_KERNEL:-}" != debug ] ||
			result skip kunit "tests/twheel_kunit.ko not built"
		return
	fi
	step "KUnit"
	if [ -n "${TWHEEL_KUNIT_GLOB:-}" ]; then
		# No newline: a charp parameter would keep it.
		printf '%s' "$TWHEEL_KUNIT_GLOB" >/sys/module/kunit/parameters/filter_glob
	fi
	run_test insmod-twheel_kunit insmod "$ko" || return
	n=0
	for d in "$KUNIT_DIR"/twheel_*; do
		[ -f "$d/results" ] || continue
		s=${d##*/}
		echo "TWHEEL-KUNIT-BEGIN: $s"
		cat "$d/results"
		echo "TWHEEL-KUNIT-END: $s"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || echo "TWHEEL-KUNIT-NONE"
	run_test rmmod-twheel_kunit rmmod twheel_kunit
}

consumer_ok() {
	dmesg | grep -qE 'twheel_consumer: ok$'
}

consumer_test() {
	ko=/twheel/twheel_consumer.ko
	if [ ! -f "$ko" ]; then
		result skip twheel_consumer "samples/twheel_consumer.ko not built"
		return
	fi
	step "sample consumer"
	run_test insmod-twheel_consumer insmod "$ko" || return
	if wait_for 10 consumer_ok; then
		result ok twheel_consumer
	else
		result "not ok" twheel_consumer "no 'twheel_consumer: ok' in dmesg within 10 s"
	fi
	dmesg | grep 'twheel_consumer:' | sed 's/^/# dmesg: /'
	run_test rmmod-twheel_consumer rmmod twheel_consumer
}

main() {
	echo "# twheel check on $(uname -r) (${TWHEEL_KERNEL:-?} kernel)"
	kmemleak_start
	if load_twheel; then
		userspace_tests
		libtwheel_example_test
		abuse_tests
		# Torture, fault injection, fuzzing, module lifetime: debug only.
		if [ "${TWHEEL_KERNEL:-}" = debug ] && [ -x /twheel/reliability.sh ]; then
			/twheel/reliability.sh short || failed=$((failed + 1))
		fi
		kunit_tests
		consumer_test
		step "unload"
		run_test rmmod-twheel rmmod twheel
	fi
	kmemleak_check
	echo "# guest: $failed failed"
	[ "$failed" -eq 0 ]
}

main
