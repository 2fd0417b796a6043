#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel in QEMU with a throwaway initramfs and run one guest script:
#
#   tests/vm/run-vm.sh --kernel BZIMAGE --name NAME --script GUEST_SCRIPT
#                      [--add SRC[:DEST]]... [--env VAR=VALUE]...
#                      [--cmdline ARGS] [--timeout SECONDS] [--live]
#   tests/vm/run-vm.sh --probe-accel BZIMAGE     # prints kvm or tcg
#
# The initramfs holds busybox (static), /init (tests/vm/guest/init), the
# guest script as /guest/<name of the script>, and each --add file (DEST is
# a path in the guest; default /twheel/<basename>). --env VAR=VALUE goes on
# the kernel command line, so the guest's init (and script) see it in the
# environment; VALUE must not contain spaces.
#
# Logs: build/logs/NAME.log is the whole serial console (kernel messages and
# guest output); build/logs/NAME.out is the guest script's output alone (a
# second serial port, free of interleaved kernel messages).
#
# Exit status: the guest script's status (from its "TWHEEL-EXIT: N" line),
# 124 if the guest hung past --timeout (default $TWHEEL_VM_TIMEOUT or 1500 s),
# 125 if the guest died before finishing (panic, WARN with panic_on_warn,
# sanitizer report, ...); the cause is printed.
#
# Accelerator: $TWHEEL_ACCEL (kvm or tcg) if set, else KVM when a short
# probe boot under KVM works, else TCG (multi-threaded).
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

GUEST_DIR=$TWHEEL_ROOT/tests/vm/guest
BUSYBOX=${TWHEEL_BUSYBOX:-/bin/busybox}

kernel=
name=
script=
cmdline=
timeout=${TWHEEL_VM_TIMEOUT:-1500}
live=0
QEMU_PID=
adds=()
envs=()

usage() {
	sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# Boot BZIMAGE under KVM until it panics for lack of an init (a few
# seconds): prints kvm if that worked, tcg otherwise.
probe_accel() {
	local bz=$1 log
	if [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	log=$(mktemp)
	# (A subshell: bash would report the abort of a qemu that fails.)
	if (timeout -k 5 60 qemu-system-x86_64 -accel kvm -cpu max -m 256 \
		-nographic -no-reboot -monitor none -nic none \
		-serial "file:$log" -kernel "$bz" \
		-append "console=ttyS0 panic=-1 rdinit=/twheel-none" \
		</dev/null >/dev/null 2>&1 || exit 1) 2>/dev/null &&
		grep -aq 'Kernel panic' "$log"; then
		echo kvm
	else
		echo tcg
	fi
	rm -f "$log"
}

accel_args() {
	local accel=${TWHEEL_ACCEL:-}
	[ -n "$accel" ] || accel=$(probe_accel "$kernel")
	case "$accel" in
	kvm) echo "-accel kvm -cpu max" ;;
	tcg) echo "-accel tcg,thread=multi -cpu max" ;;
	*) die "TWHEEL_ACCEL must be kvm or tcg, not '$accel'" ;;
	esac
}

parse_args() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=$2; shift 2 ;;
		--name) name=$2; shift 2 ;;
		--script) script=$2; shift 2 ;;
		--add) adds+=("$2"); shift 2 ;;
		--env) envs+=("$2"); shift 2 ;;
		--cmdline) cmdline+=" $2"; shift 2 ;;
		--timeout) timeout=$2; shift 2 ;;
		--live) live=1; shift ;;
		--probe-accel) probe_accel "$2"; exit 0 ;;
		-h | --help) usage ;;
		*) msg "run-vm: unknown argument '$1'"; usage ;;
		esac
	done
	if [ -z "$kernel" ] || [ -z "$name" ] || [ -z "$script" ]; then
		usage
	fi
	[ -r "$kernel" ] || die "$name: cannot read kernel $kernel"
	[ -r "$script" ] || die "$name: no guest script $script"
	[ -x "$BUSYBOX" ] || die "no $BUSYBOX: install busybox-static (tests/vm/setup-host.sh)"
}

# Fill the initramfs tree $1.
populate() {
	local root=$1 a src dst
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc,guest,twheel}
	cp "$BUSYBOX" "$root/bin/busybox"
	install -m 0755 "$GUEST_DIR/init" "$root/init"
	install -m 0755 "$script" "$root/guest/$(basename "$script")"
	# The kernel opens /dev/console before /init can mount devtmpfs.
	if [ "$(id -u)" -eq 0 ]; then
		mknod -m 0600 "$root/dev/console" c 5 1
		mknod -m 0666 "$root/dev/null" c 1 3
	fi
	for a in ${adds[@]+"${adds[@]}"}; do
		src=${a%%:*}
		dst=/twheel/$(basename "$src")
		[ "$a" = "$src" ] || dst=${a#*:}
		[ -e "$src" ] || die "$name: missing $src"
		mkdir -p "$root$(dirname "$dst")"
		cp -p "$src" "$root$dst"
	done
}

make_initramfs() {
	local root=$1 out=$2
	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$out"
}

kernel_cmdline() {
	local e line="console=ttyS0 panic_on_warn=1 oops=panic panic=-1 rdinit=/init"
	line+=" TWHEEL_SCRIPT=$(basename "$script")"
	for e in ${envs[@]+"${envs[@]}"}; do
		case "$e" in
		*' '* | *'"'*) die "$name: --env '$e': no spaces or quotes allowed" ;;
		*=*) line+=" $e" ;;
		*) die "$name: --env '$e' is not VAR=VALUE" ;;
		esac
	done
	echo "$line$cmdline"
}

# Print the guest's output as it comes: the whole console with --live,
# else the guest script's own output (the kernel's problems are reported
# after the run).
follow() {
	local pid=$1 log=$2 out=$3 file=$3
	[ "$live" -eq 0 ] || file=$log
	tail -n +1 -F --pid="$pid" "$file" 2>/dev/null | tr -d '\r' |
		if [ "$live" -eq 1 ]; then
			# Drop the firmware's terminal resets and escapes.
			sed -u -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g'
		else
			sed -u 's/^/  /'
		fi
}

# Wait for qemu: kill it after $timeout seconds, or 30 s after the guest
# printed its exit marker (if poweroff did not work). Prints "timeout" if
# it had to kill a hung guest.
supervise() {
	local pid=$1 out=$2 log=$3 start marker_at=
	start=$(now)
	while kill -0 "$pid" 2>/dev/null; do
		if [ -z "$marker_at" ] && grep -aqs '^TWHEEL-EXIT:' "$out" "$log"; then
			marker_at=$(now)
		fi
		if [ -n "$marker_at" ] && [ $(($(now) - marker_at)) -gt 30 ]; then
			kill "$pid" 2>/dev/null || true
			break
		fi
		if [ $(($(now) - start)) -ge "$timeout" ]; then
			kill "$pid" 2>/dev/null || true
			sleep 2
			kill -9 "$pid" 2>/dev/null || true
			echo timeout
			return
		fi
		sleep 1
	done
}

# The guest's exit status from its marker line, or nothing.
guest_status() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		tr -d '\r' <"$f" | sed -n 's/^TWHEEL-EXIT: \([0-9][0-9]*\).*/\1/p' | tail -n1
		return
	done
}

report_problems() {
	local log=$1 problems first
	problems=$(console_problems "$log")
	[ -n "$problems" ] || return 0
	msg "$name: the kernel reported problems (full log: $log):"
	first=$(tr -d '\r' <"$log" | grep -anE "$KMSG_RE.*($PROBLEM_RE)" | head -n1 | cut -d: -f1)
	sed -n "$((first > 5 ? first - 5 : 1)),$((first + 60))p" "$log" | tr -d '\r' | sed 's/^/  | /' >&2
}

main() {
	local dir root initrd log out qpid rc=0 status verdict start elapsed accel
	parse_args "$@"
	dir=$TWHEEL_BUILD/vm/$name
	root=$dir/root
	initrd=$dir/initramfs.cpio.gz
	log=$TWHEEL_BUILD/logs/$name.log
	out=$TWHEEL_BUILD/logs/$name.out
	mkdir -p "$dir" "$(dirname "$log")"
	populate "$root"
	make_initramfs "$root" "$initrd"
	rm -f "$log" "$out"
	: >"$log"
	: >"$out"
	accel=$(accel_args)
	msg "$name: booting $kernel (${accel%% -cpu*}, timeout ${timeout}s, log $log)"
	start=$(now)
	# shellcheck disable=SC2086 # $accel is several words
	qemu-system-x86_64 $accel -smp 4 -m 2048 \
		-nographic -no-reboot -monitor none -nic none \
		-serial "file:$log" -serial "file:$out" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "$(kernel_cmdline)" </dev/null >"$dir/qemu.stderr" 2>&1 &
	qpid=$!
	QEMU_PID=$qpid
	# Interrupted (Ctrl-C, a closed pipe): take the VM down too.
	trap 'kill "$QEMU_PID" 2>/dev/null || true' EXIT
	trap 'exit 130' INT TERM HUP PIPE
	follow "$qpid" "$log" "$out" &
	verdict=$(supervise "$qpid" "$out" "$log")
	wait "$qpid" || rc=$?
	wait || true
	elapsed=$(($(now) - start))
	status=$(guest_status "$out" "$log")
	report_problems "$log"
	if [ "$verdict" = timeout ]; then
		msg "$name: TIMEOUT: the guest hung, killed after ${timeout}s ($(problem_cause "$log")); last console lines:"
		tail -n 20 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
		return 124
	fi
	if [ -z "$status" ]; then
		msg "$name: CRASHED after ${elapsed}s, no exit marker: $(problem_cause "$log") (qemu status $rc; log $log)"
		[ ! -s "$dir/qemu.stderr" ] || sed 's/^/  qemu: /' "$dir/qemu.stderr" >&2
		return 125
	fi
	msg "$name: guest finished with status $status in ${elapsed}s"
	return "$status"
}

main "$@"
