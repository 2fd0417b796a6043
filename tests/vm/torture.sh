#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host side of the long reliability runs (make torture, make fuzz, make
# kcsan), and the guest files of the short ones that make check runs:
#
#   tests/vm/torture.sh [--mode torture|fuzz] [--kernel debug|kcsan]
#                       [--duration 10m]
#   tests/vm/torture.sh --files KERNEL     SRC:DEST lines for the initramfs
#
# Builds what is missing (the kernel from tests/vm/<kernel>.config with
# build-kernel.sh, cached; the modules for it with build-modules.sh; the
# static programs; trinity's helper), boots the kernel with
# tests/vm/guest/reliability.sh MODE for --duration (s, m or h; default
# 10m), and counts its TWHEEL-RESULT lines, the boot and the console like
# make check. Logs: build/logs/<kernel>-<mode>.{log,out}. The last line is
# "N passed, N failed"; exit status 1 on any failure.
#
# On the kcsan kernel, KCSAN reports are left to tests/vm/kcsan.sh (they
# are not counted as console problems here).
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

VM=$TWHEEL_ROOT/tests/vm
PROGS=(tests/userspace/twheel_torture tests/userspace/twheel_failnth tests/userspace/twheel_fuzz)

# "90", "90s", "10m", "1h" -> seconds.
parse_duration() {
	local d=$1
	case "$d" in
	*[0-9]s) echo "${d%s}" ;;
	*[0-9]m) echo $((${d%m} * 60)) ;;
	*[0-9]h) echo $((${d%h} * 3600)) ;;
	*[0-9]) echo "$d" ;;
	*) die "bad duration '$d' (examples: 90s, 10m, 1h)" ;;
	esac
}

# trinity_twheel.so, built next to the module builds (not in the tree).
trinity_helper() {
	local src=$TWHEEL_ROOT/tests/userspace/trinity_twheel.c
	local so=$TWHEEL_BUILD/trinity/trinity_twheel.so
	[ -f "$src" ] || return 1
	if [ ! -f "$so" ] || [ "$src" -nt "$so" ] ||
		[ "$TWHEEL_ROOT/uapi/twheel.h" -nt "$so" ]; then
		mkdir -p "$(dirname "$so")"
		gcc -shared -fPIC -O2 -g -Wall -Wextra -Werror -I"$TWHEEL_ROOT" \
			-o "$so" "$src" -ldl >&2 || return 1
	fi
	echo "$so"
}

# The guest files of the reliability tests for kernel $1 (besides twheel.ko
# and the consumer, which make check adds itself): SRC:DEST lines.
guest_files() {
	local k=$1 f lib so
	echo "$VM/guest/reliability.sh:/twheel/reliability.sh"
	f=$TWHEEL_BUILD/$k/tests/twheel_torture.ko
	[ ! -f "$f" ] || echo "$f:/twheel/twheel_torture.ko"
	for f in "${PROGS[@]}"; do
		[ ! -x "$TWHEEL_ROOT/$f" ] || echo "$TWHEEL_ROOT/$f:/bin/${f##*/}"
	done
	# trinity is dynamic: its libc and loader go along, at the same paths.
	if [ -x /usr/bin/trinity ] && so=$(trinity_helper); then
		echo "/usr/bin/trinity:/usr/bin/trinity"
		echo "$so:/twheel/trinity_twheel.so"
		while IFS= read -r lib; do
			echo "$lib:$lib"
		done < <(ldd /usr/bin/trinity "$so" 2>/dev/null |
			awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' |
			sort -u)
	fi
}

# Count the results of the run named $1 (exit status $2 of run-vm.sh).
count() {
	local name=$1 rc=$2 kernel=$3 out txt log problems npass=0 nfail=0 rest
	log=$TWHEEL_BUILD/logs/$name.log
	out=$TWHEEL_BUILD/logs/$name.out
	txt=$TWHEEL_BUILD/logs/$name.txt
	tr -d '\r' <"$out" >"$txt"
	grep -q '^TWHEEL-' "$txt" || tr -d '\r' <"$log" >"$txt"
	echo
	while IFS= read -r rest; do
		case "$rest" in
		"ok "*) echo "PASS ${rest#ok }"; npass=$((npass + 1)) ;;
		"not ok "*) echo "FAIL ${rest#not ok }"; nfail=$((nfail + 1)) ;;
		"skip "*) echo "SKIP ${rest#skip }" ;;
		esac
	done < <(sed -n 's/^TWHEEL-RESULT: //p' "$txt")
	case "$rc" in
	124) echo "FAIL boot # guest hung"; nfail=$((nfail + 1)) ;;
	125) echo "FAIL boot # guest crashed: $(problem_cause "$log")"; nfail=$((nfail + 1)) ;;
	*) echo "PASS boot"; npass=$((npass + 1)) ;;
	esac
	if [ "$rc" -ne 124 ] && [ "$rc" -ne 125 ]; then
		problems=$(console_problems "$log")
		[ "$kernel" != kcsan ] ||
			problems=$(printf '%s\n' "$problems" | grep -v 'KCSAN' || true)
		if [ -n "$problems" ]; then
			echo "FAIL console # $(printf '%s\n' "$problems" | head -n1)"
			nfail=$((nfail + 1))
		else
			echo "PASS console"
			npass=$((npass + 1))
		fi
	fi
	grep -E '^# (torture numbers|lifetime|twheel_fuzz|trinity:|module-load|open|SCHEDULE|BATCH)|^twheel_(torture|fuzz|failnth): ' \
		"$txt" | sed 's/^/  /' || true
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
}

main() {
	local mode=torture kernel=debug duration=${DURATION:-} secs kdir bz name rc=0 f
	local -a words=()
	if [ "${1:-}" = --files ]; then
		guest_files "${2:?usage: torture.sh --files KERNEL}"
		return
	fi
	while [ $# -gt 0 ]; do
		case "$1" in
		--mode) mode=$2; shift 2 ;;
		--kernel) kernel=$2; shift 2 ;;
		--duration) duration=$2; shift 2 ;;
		*) die "torture.sh: unknown argument '$1' (see the top of $0)" ;;
		esac
	done
	case "$mode" in torture | fuzz) ;; *) die "--mode torture or fuzz" ;; esac
	case "$kernel" in debug | kcsan) ;; *) die "--kernel debug or kcsan" ;; esac
	secs=$(parse_duration "${duration:-10m}")
	"$VM/setup-host.sh"

	msg "$kernel kernel: tests/vm/$kernel.config (built once, cached)"
	kdir=$("$VM/build-kernel.sh" "$VM/$kernel.config")
	bz=$kdir/arch/x86/boot/bzImage
	"$VM/build-modules.sh" "$kernel" "$kdir"
	for f in "${PROGS[@]}"; do
		make -s -C "$TWHEEL_ROOT" "$f"
	done
	words+=(--add "$TWHEEL_BUILD/$kernel/twheel.ko:/twheel/twheel.ko")
	f=$TWHEEL_BUILD/$kernel/samples/twheel_consumer.ko
	[ ! -f "$f" ] || words+=(--add "$f:/twheel/twheel_consumer.ko")
	while IFS= read -r f; do
		words+=(--add "$f")
	done < <(guest_files "$kernel")
	words+=(--env "TWHEEL_RELIABILITY=$mode" --env "TWHEEL_DURATION=$secs")
	[ "$kernel" != kcsan ] || words+=(--env TWHEEL_KCSAN=1)
	name=$kernel-$mode
	msg "$name: ${secs}s of $mode (plus boot, setup and checks)"
	"$VM/run-vm.sh" --kernel "$bz" --name "$name" \
		--script "$VM/guest/reliability.sh" "${words[@]}" \
		--timeout $((secs * 2 + 1200)) || rc=$?
	count "$name" "$rc" "$kernel"
}

main "$@"
