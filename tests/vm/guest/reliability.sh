#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of the reliability tests (busybox sh): torture, fault
# injection, fuzzing and module lifetime. Prints the same lines as
# tests/vm/guest/check.sh ("TWHEEL-RESULT: ok|not ok|skip NAME [# why]"),
# and "# ..." lines with the numbers.
#
#   reliability.sh short     from check.sh on the debug kernel, twheel.ko
#                            loaded (and loaded again at the end): module
#                            lifetime, fail-nth walks (module load sampled),
#                            ~1 min torture, short fuzz and trinity runs,
#                            100 load/unload cycles
#   reliability.sh torture   alone (make torture, make kcsan): loads
#                            twheel, tortures for TWHEEL_DURATION seconds,
#                            unloads, scans kmemleak
#   reliability.sh fuzz      alone (make fuzz): the full fail-nth walks,
#                            then our fuzzer and trinity for TWHEEL_DURATION
#                            seconds in all, kmemleak
#
# The mode may also come from TWHEEL_RELIABILITY (the kernel command line).
# TWHEEL_TEST_FILTER (make check T=...): in short mode, only the parts
# whose name contains it: lifetime, failnth, torture, fuzz, trinity.
# TWHEEL_KCSAN=1: a KCSAN kernel; its reports must not panic the guest
# (panic_on_warn=0), the host collects them from the console.
#
# Files: /twheel/{twheel,twheel_torture,twheel_consumer}.ko,
# /bin/twheel_{torture,failnth,fuzz}, /usr/bin/trinity with its libc and
# /twheel/trinity_twheel.so (tests/userspace/trinity_twheel.c).
set -u

MODE=${1:-${TWHEEL_RELIABILITY:-short}}
DURATION=${TWHEEL_DURATION:-60}
STATS=/sys/kernel/debug/twheel/stats
KMEMLEAK=/sys/kernel/debug/kmemleak
failed=0

result() {
	# result ok|"not ok"|skip NAME [WHY]
	if [ -n "${3:-}" ]; then
		echo "TWHEEL-RESULT: $1 $2 # $3"
	else
		echo "TWHEEL-RESULT: $1 $2"
	fi
	[ "$1" != "not ok" ] || failed=$((failed + 1))
}

T0=$(cut -d. -f1 /proc/uptime)
step() {
	echo "# ---- reliability: $* (at $(($(cut -d. -f1 /proc/uptime) - T0)) s) ----"
}

# run NAME SECONDS COMMAND...: a test that passes if COMMAND exits 0 in
# time; its output is shown with "# " in front.
run() {
	name=$1
	secs=$2
	shift 2
	timeout "$secs" "$@" >/tmp/rel.out 2>&1
	st=$?
	sed 's/^/# /' /tmp/rel.out
	if [ "$st" -eq 0 ]; then
		result ok "$name"
	elif [ "$st" -eq 77 ]; then
		result skip "$name" "not supported by this kernel"
	elif [ "$st" -eq 143 ] || [ "$st" -eq 124 ]; then
		result "not ok" "$name" "timed out after ${secs}s"
	else
		result "not ok" "$name" "'$*' exited with $st"
	fi
	return "$st"
}

loaded() {
	grep -q "^$1 " /proc/modules
}

# (busybox sh: every variable is global; each function has its own names)
wait_dev() {
	wd_n=50
	while [ "$wd_n" -gt 0 ] && [ ! -c /dev/twheel ]; do
		sleep 0.1
		wd_n=$((wd_n - 1))
	done
	[ -c /dev/twheel ]
}

load_twheel() {
	loaded twheel || insmod /twheel/twheel.ko || return 1
	wait_dev
}

all_cpus_online() {
	[ "$(cat /sys/devices/system/cpu/online)" = "$(cat /sys/devices/system/cpu/possible)" ]
}

# No timer left on any wheel: the "pending" column of twheel's stats.
check_pending_zero() {
	name=$1
	if [ ! -r "$STATS" ]; then
		result skip "$name" "no $STATS"
		return
	fi
	left=$(awk 'NR > 1 { s += $3 } END { print s + 0 }' "$STATS")
	if [ "$left" -eq 0 ]; then
		result ok "$name"
	else
		sed 's/^/# /' "$STATS"
		result "not ok" "$name" "$left timers still on the wheels"
	fi
}

# The kernel log since the latest "twheel-reliability: MARK" line.
MARK=0
mark_log() {
	MARK=$((MARK + 1))
	echo "twheel-reliability: mark $MARK" >/dev/kmsg
}

log_since_mark() {
	dmesg | sed -n "/twheel-reliability: mark $MARK\$/,\$p"
}

# twheel_torture.ko's messages since the mark, without the prefix; the
# last one matching $1.
torture_log() {
	log_since_mark | sed -n 's/^\[[^]]*\] twheel_torture: //p' | grep -E "$1" | tail -n1
}

# ------------------------------------------------------------------
# Module lifetime

lifetime_open_fd() {
	step "rmmod with an open fd"
	load_twheel || { result "not ok" lifetime-open-fd "cannot load twheel"; return 1; }
	# twheel_failnth busy: delete_module with the file open must fail.
	run lifetime-open-fd 60 /bin/twheel_failnth busy twheel || return 1
	if rmmod twheel; then
		result ok lifetime-rmmod-after-close
	else
		result "not ok" lifetime-rmmod-after-close "rmmod failed after the fd was closed"
		return 1
	fi
}

# $1 cycles of: load twheel, the torture module with timers left pending
# and the sample consumer; an open fd with timers; twheel must refuse to
# go; unload all (twheel_failnth cycles: no fork and exec per step).
lifetime_cycles() {
	lc_n=$1
	step "$lc_n load/unload cycles with timers pending"
	if loaded twheel && ! rmmod twheel; then
		result "not ok" lifetime-cycles "twheel is busy before the cycles"
		return 1
	fi
	run lifetime-cycles 900 /bin/twheel_failnth cycles "$lc_n" /twheel
}

# ------------------------------------------------------------------
# Fault injection

failnth() {
	stride=$1
	step "fail-nth"
	load_twheel || { result "not ok" failnth-paths "cannot load twheel"; return 1; }
	run failnth-paths 300 /bin/twheel_failnth paths
	loaded twheel && rmmod twheel
	if loaded twheel; then
		result "not ok" failnth-module-load "twheel cannot be unloaded"
		return 1
	fi
	run failnth-module-load 900 /bin/twheel_failnth modload /twheel/twheel.ko "" "$stride"
	kmemleak_after_walk
	load_twheel
	step "fault-injection points of the in-kernel API"
	mark_log
	if insmod /twheel/twheel_torture.ko api_check=1; then
		log_since_mark | grep 'twheel_torture: api:' | sed 's/^\[[^]]*\] /# /'
		rmmod twheel_torture
		result ok failnth-api
	else
		log_since_mark | grep 'twheel_torture: ' | sed 's/^/# /'
		result "not ok" failnth-api "twheel_torture.ko api_check=1 failed"
	fi
}

# The module-load walk fails kmem_cache_create() inside sysfs_slab_add(),
# which then leaks the kobject's name: mm/slub.c does not kobject_put()
# after kobject_init_and_add() or sysfs_create_group() fails (6.12). Those
# leaks are the kernel's: listed, then cleared so that the final kmemleak
# test sees only the others; any other leak fails here.
kmemleak_after_walk() {
	[ -w "$KMEMLEAK" ] || return 0
	# Older than 5 s, and unchanged between two scans, to be reported.
	sleep 6
	echo scan >"$KMEMLEAK"
	sleep 2
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK" >/tmp/kmemleak-walk
	kl_all=$(grep -c '^unreferenced object' /tmp/kmemleak-walk)
	kl_slub=$(awk '/^unreferenced object/ { n++ } /sysfs_slab_add/ { s[n] = 1 }
		END { print length(s) }' /tmp/kmemleak-walk)
	if [ "$kl_all" -ne "$kl_slub" ]; then
		sed 's/^/# /' /tmp/kmemleak-walk | head -n 100
		result "not ok" failnth-module-load-leaks \
			"$((kl_all - kl_slub)) objects leaked besides the kernel's sysfs_slab_add() ones"
		return
	fi
	echo "# module-load walk: the kernel leaked $kl_slub kobject names in sysfs_slab_add() (mm/slub.c, not twheel); cleared"
	echo clear >"$KMEMLEAK"
	result ok failnth-module-load-leaks
}

# ------------------------------------------------------------------
# Torture

torture() {
	secs=$1
	step "torture: ${secs}s, in-kernel and /dev/twheel, with CPU hotplug"
	load_twheel || { result "not ok" torture "cannot load twheel"; return 1; }
	mark_log
	timeout $((secs + 300)) /bin/twheel_torture -t "$secs" >/tmp/torture-user.out 2>&1 &
	upid=$!
	if timeout $((secs + 300)) insmod /twheel/twheel_torture.ko run_s="$secs" onoff_ms=250; then
		rmmod twheel_torture
		kst=0
	else
		kst=1
	fi
	wait "$upid"
	ust=$?
	log_since_mark | grep 'twheel_torture: ' | sed 's/^\[[^]]*\] /# /'
	sed 's/^/# /' /tmp/torture-user.out
	if [ "$kst" -eq 0 ] && [ -n "$(torture_log '^ok$')" ]; then
		result ok torture-kernel
	else
		result "not ok" torture-kernel "$(torture_log 'FAIL' || true)"
	fi
	if [ "$ust" -eq 0 ]; then
		result ok torture-user
	else
		result "not ok" torture-user "$(grep 'twheel_torture: ' /tmp/torture-user.out | tail -n1)"
	fi
	if all_cpus_online; then
		result ok torture-cpus-online
	else
		result "not ok" torture-cpus-online "online $(cat /sys/devices/system/cpu/online)"
	fi
	check_pending_zero torture-pending-zero
	# The numbers, once more, in one place.
	ops=$(torture_log ' ops: ' | sed 's/ ops:.*//')
	hp=$(torture_log 'cpu hotplug: ' | sed 's/cpu hotplug: //')
	uops=$(sed -n 's/^twheel_torture: ok: \([0-9]*\) ops.*/\1/p' /tmp/torture-user.out)
	echo "# torture numbers: ${ops:-?} in-kernel ops, ${uops:-?} /dev/twheel ops, cpu hotplug: ${hp:-?}"
}

# ------------------------------------------------------------------
# Fuzzing

fuzz() {
	secs=$1
	step "twheel_fuzz: ${secs}s"
	load_twheel || { result "not ok" fuzz "cannot load twheel"; return 1; }
	run fuzz $((secs + 120)) /bin/twheel_fuzz -t "$secs" -n 100000000
	check_pending_zero fuzz-pending-zero
}

# trinity against /dev/twheel, taught its ioctls by trinity_twheel.so.
trinity_run() {
	secs=$1
	step "trinity: ${secs}s"
	if [ ! -x /usr/bin/trinity ] || [ ! -f /twheel/trinity_twheel.so ]; then
		result skip trinity "trinity or trinity_twheel.so not in the initramfs"
		return
	fi
	load_twheel || { result "not ok" trinity "cannot load twheel"; return 1; }
	mkdir -p /tmp/trinity
	seed=$(($(date +%s) % 1000000 + 1))
	# Root in a throwaway VM: --dangerous (it waits 10 s first). No
	# sockets (no networking here) and no files but /dev/twheel.
	(cd /tmp/trinity && LD_PRELOAD=/twheel/trinity_twheel.so \
		exec /usr/bin/trinity --dangerous -q -l off -a 64 -C 4 -s "$seed" \
		--disable-fds=sockets,pipes,perf,epoll,timerfd,testfile,memfd,drm \
		-V /dev/twheel -c ioctl -c read -c poll -c fcntl -c dup \
		--stats) >/tmp/trinity.out 2>&1 &
	tpid=$!
	i=0
	while [ "$i" -lt $((secs + 10)) ] && kill -0 "$tpid" 2>/dev/null; do
		sleep 1
		i=$((i + 1))
	done
	alive=0
	kill -0 "$tpid" 2>/dev/null && alive=1
	kill -INT "$tpid" 2>/dev/null
	i=0
	while [ "$i" -lt 20 ] && kill -0 "$tpid" 2>/dev/null; do
		sleep 1
		i=$((i + 1))
	done
	stuck=0
	if kill -0 "$tpid" 2>/dev/null; then
		stuck=1
		kill -9 "$tpid" 2>/dev/null
	fi
	# Its children too, by their names.
	for p in /proc/[0-9]*; do
		case "$(cat "$p/comm" 2>/dev/null)" in
		trinity*) kill -9 "${p#/proc/}" 2>/dev/null ;;
		esac
	done
	wait "$tpid" 2>/dev/null
	grep -vE 'start: 0x|futex: |Continuing in|^$' /tmp/trinity.out | tail -n 40 | sed 's/^/# /'
	calls=$(sed -n 's/.*Ran \([0-9]*\) syscalls.*/\1/p' /tmp/trinity.out | tail -n1)
	echo "# trinity: seed $seed, ${calls:-?} syscalls"
	if [ "$alive" -eq 0 ]; then
		result "not ok" trinity "trinity stopped by itself: $(grep -E 'exit_reason|taint' /tmp/trinity.out | tail -n1)"
	elif [ "$stuck" -eq 1 ]; then
		result "not ok" trinity "trinity did not stop within 20 s of SIGINT"
	elif [ -z "$calls" ] || [ "$calls" -eq 0 ]; then
		result "not ok" trinity "trinity made no system call"
	else
		result ok trinity
	fi
	check_pending_zero trinity-pending-zero
}

# ------------------------------------------------------------------
# Standalone runs: load, run, unload, kmemleak

kmemleak_clear() {
	[ -w "$KMEMLEAK" ] || return 0
	echo scan >"$KMEMLEAK"
	echo clear >"$KMEMLEAK"
}

kmemleak_result() {
	[ -w "$KMEMLEAK" ] || { result skip kmemleak "no kmemleak"; return; }
	# kmemleak ignores objects younger than 5 s; two scans cut false positives.
	sleep 6
	echo scan >"$KMEMLEAK"
	sleep 2
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK" >/tmp/kmemleak
	if [ -s /tmp/kmemleak ]; then
		head -n 100 /tmp/kmemleak | sed 's/^/# /'
		result "not ok" kmemleak "$(grep -c '^unreferenced object' /tmp/kmemleak) leaked objects"
	else
		result ok kmemleak
	fi
}

standalone() {
	what=$1
	echo "# twheel reliability ($what, ${DURATION}s) on $(uname -r), $(nproc) cpus"
	kmemleak_clear
	load_twheel || { result "not ok" insmod-twheel "cannot load twheel"; return 1; }
	if [ "${TWHEEL_KCSAN:-0}" = 1 ]; then
		# Report every race, do not stop at the first; watch more often
		# than every 4000th access (the default) in a short run.
		echo 0 >/proc/sys/kernel/panic_on_warn
		echo "${TWHEEL_KCSAN_SKIP_WATCH:-500}" >/sys/module/kcsan/parameters/skip_watch
		echo "# kcsan: skip_watch $(cat /sys/module/kcsan/parameters/skip_watch)"
		# A planted race that KCSAN must report (tests/vm/kcsan.sh checks).
		if insmod /twheel/twheel_torture.ko kcsan_canary=1 && rmmod twheel_torture; then
			result ok kcsan-canary-run
		else
			result "not ok" kcsan-canary-run "insmod twheel_torture.ko kcsan_canary=1"
		fi
	fi
	case "$what" in
	torture)
		torture "$DURATION"
		;;
	fuzz)
		failnth 1
		lifetime_open_fd
		load_twheel
		fuzz $((DURATION / 2))
		trinity_run $((DURATION - DURATION / 2))
		;;
	esac
	if loaded twheel && rmmod twheel; then
		result ok rmmod-twheel
	else
		result "not ok" rmmod-twheel "rmmod failed"
	fi
	kmemleak_result
}

# Is part $1 selected by TWHEEL_TEST_FILTER?
want() {
	case "$1" in
	*"${TWHEEL_TEST_FILTER:-}"*) return 0 ;;
	*) return 1 ;;
	esac
}

main() {
	case "$MODE" in
	short)
		echo "# twheel reliability tests (short) on $(uname -r)"
		! want lifetime || lifetime_open_fd
		! want failnth || failnth 3
		! want torture || torture 60
		! want fuzz || fuzz 20
		! want trinity || trinity_run 15
		! want lifetime || lifetime_cycles 100
		load_twheel || result "not ok" reload-twheel "cannot load twheel again"
		;;
	torture | fuzz)
		standalone "$MODE"
		;;
	*)
		echo "reliability.sh: unknown mode '$MODE'" >&2
		return 2
		;;
	esac
	echo "# reliability: $failed failed"
	[ "$failed" -eq 0 ]
}

main
