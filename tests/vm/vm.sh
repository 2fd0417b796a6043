#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The one VM runner: every target (check, bench, demo, torture, fuzz,
# kcsan) boots its kernel through it.
#
#   tests/vm/vm.sh MODE KERNEL [--name NAME] [--duration 10m] [--live]
#                  [--env VAR=VALUE]... [--cmdline ARGS] [--timeout S]
#                  [--no-build]
#
# MODE is guest/run.sh's (check, torture, fuzz, bench, demo, httpd); KERNEL one of
# lib.sh's kernel_kdir(). Builds the modules and the static programs
# (unless --no-build), packs an initramfs, boots it (again, twice at most,
# if the kernel dies before /init runs: seen under TCG, an int3 Oops while
# it patches its own code) and waits for "TWHEEL-EXIT: N", at most
# --timeout s (1500, or twice --duration + 1200). Results: the guest's KTAP
# through ktap.py, plus NAME/boot and NAME/console (no panic, WARN,
# sanitizer, lockdep or hung-task report; KCSAN's are kcsan.sh's),
# printed and appended to $TWHEEL_RESULTS. Logs: build/logs/NAME.log (the
# console) and NAME.out (the guest's second serial port, its output alone).
# Exit status 0 iff nothing failed.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

VM=$TWHEEL_ROOT/tests/vm
mode=${1:?usage: vm.sh MODE KERNEL [options], see the top of $0}
kernel=${2:?usage: vm.sh MODE KERNEL [options]}
shift 2
name=$kernel-$mode
timeout=
dur=
live=0
build=1
cmdline=
envs=(TWHEEL_MODE="$mode" TWHEEL_KERNEL="$kernel")

while [ $# -gt 0 ]; do
	case "$1" in
	--name) name=$2; shift 2 ;;
	--duration) dur=$(seconds "$2"); envs+=(TWHEEL_DURATION="$dur"); shift 2 ;;
	--live) live=1; shift ;;
	--env) envs+=("$2"); shift 2 ;;
	--cmdline) cmdline+=" $2"; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	*) die "vm.sh: unknown argument '$1'" ;;
	esac
done
timeout=${timeout:-$((${dur:-150} * 2 + 1200))}
LOG=$TWHEEL_BUILD/logs/$name.log
OUT=$TWHEEL_BUILD/logs/$name.out
DIR=$TWHEEL_BUILD/vm/$name
# KASAN's boot, kmemleak's scans grow with memory; 768 MiB fit 65536 timers.
case "$kernel" in debug | rtdebug | kcsan) mem=768 ;; *) mem=2048 ;; esac

# The initramfs's files, SRC:DEST: every module built for the kernel, the
# static programs and, for the reliability runs, trinity with its libraries.
guest_files() {
	local f so
	for f in "$TWHEEL_BUILD/$kernel"/{,samples/,tests/}*.ko; do
		[ ! -f "$f" ] || echo "$f:/twheel/${f##*/}"
	done
	for f in tools/twheelctl tools/twheel_bench tests/userspace/twheel_{test,abuse,torture,failnth,fuzz}; do
		[ ! -x "$TWHEEL_ROOT/$f" ] || echo "$TWHEEL_ROOT/$f:/bin/${f##*/}"
	done
	f=$TWHEEL_BUILD/userspace/libtwheel_example
	[ ! -x "$f" ] || echo "$f:/bin/libtwheel_example"
	# The HTTP server's test (check and httpd modes) and table 10 (bench):
	# the server, its idle client, its load script (not in /bin/, which
	# is stripped) and wrk, dynamic, with its libraries as perf below.
	case "$mode" in
	check | httpd | bench)
		for f in examples/twheel_httpd examples/httpd_idle; do
			[ ! -x "$TWHEEL_ROOT/$f" ] || echo "$TWHEEL_ROOT/$f:/bin/${f##*/}"
		done
		echo "$TWHEEL_ROOT/examples/httpd-load.sh:/twheel/httpd-load.sh"
		if f=$(readlink -f "$(command -v wrk)"); then
			echo "$f:/usr/bin/wrk"
			ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 ":" $3 }
				$1 ~ /^\// && $2 ~ /^\(/ { print $1 ":" $1 }' | sort -u
		fi
		;;
	esac
	# CRIU (dynamic, with its libraries) and twheel's plugin for it, for
	# make check's criu test.
	if [ "$mode" = check ] && f=$(command -v criu || ls /usr/sbin/criu 2>/dev/null); then
		echo "$f:/usr/sbin/criu"
		ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 ":" $3 }
			$1 ~ /^\// && $2 ~ /^\(/ { print $1 ":" $1 }' | sort -u
		f=$TWHEEL_ROOT/tools/criu/twheel_criu.so
		[ ! -f "$f" ] || echo "$f:/usr/lib/criu/twheel_criu.so"
		criu_modules
	fi
	# perf (dynamic, with its libraries) for make bench: table 10's
	# profile, and table 7's with TWHEEL_BENCH_PERF=1.
	if { [ "$mode" = bench ] || [ -n "${TWHEEL_BENCH_PERF:-}" ]; } &&
		f=$(readlink -f "$(command -v perf)"); then
		echo "$f:/usr/bin/perf"
		ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 ":" $3 }
			$1 ~ /^\// && $2 ~ /^\(/ { print $1 ":" $1 }' | sort -u
	fi
	case "$kernel" in debug | rtdebug | kcsan) ;; *) return 0 ;; esac
	# trinity is dynamic: its libc and loader go along, at the same paths.
	[ -x /usr/bin/trinity ] || return 0
	so=$TWHEEL_BUILD/trinity/trinity_twheel.so
	mkdir -p "${so%/*}"
	gcc -shared -fPIC -O2 -Wall -Wextra -Werror -I"$TWHEEL_ROOT" \
		-I"$TWHEEL_ROOT/lib" -I"$TWHEEL_ROOT/lib/include" -o "$so" \
		"$TWHEEL_ROOT/tests/userspace/trinity_twheel.c" -ldl >&2 || return 0
	echo "/usr/bin/trinity:/usr/bin/trinity"
	echo "$so:/twheel/trinity_twheel.so"
	ldd /usr/bin/trinity "$so" | awk '$2 == "=>" && $3 ~ /^\// { print $3 ":" $3 }
		$1 ~ /^\// && $2 ~ /^\(/ { print $1 ":" $1 }' | sort -u
}

# The socket diag modules criu needs, uncompressed, for a distro kernel
# (the kernels built here have them built in or not at all).
criu_modules() {
	local rel dir m
	case "$kernel" in
	distro) rel=$(distro_version) ;;
	distro61) rel=$(distro_version 6.1.) ;;
	rt) rel=$(distro_version 6.12. -rt-amd64) ;;
	*) return 0 ;;
	esac
	dir=$TWHEEL_BUILD/criu-modules/$rel
	mkdir -p "$dir"
	# In load order (the guest has no modprobe): criu's probes open
	# sockets of each diag family, nf_tables, a tun and a veth.
	for m in net/ipv4/inet_diag net/ipv4/tcp_diag net/ipv4/udp_diag \
		net/ipv4/raw_diag net/unix/unix_diag net/netlink/netlink_diag \
		net/packet/af_packet_diag crypto/crc32c_generic lib/libcrc32c \
		net/netfilter/nfnetlink net/netfilter/nf_tables drivers/net/tun \
		drivers/net/veth; do
		# 6.12's are xz-compressed, 6.1's not.
		f=/lib/modules/$rel/kernel/$m.ko
		if [ -f "$f.xz" ]; then
			[ -f "$dir/${m##*/}.ko" ] || xz -dc "$f.xz" >"$dir/${m##*/}.ko"
			f=$dir/${m##*/}.ko
		fi
		[ -f "$f" ] || continue
		echo "$f:/twheel/criu/${m##*/}.ko"
	done
}

initramfs() {
	local root=$DIR/root src dst
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc,twheel}
	cp "${TWHEEL_BUSYBOX:-/bin/busybox}" "$root/bin/busybox"
	install -m 0755 "$VM/guest/run.sh" "$root/init"
	# The kernel opens /dev/console before /init can mount devtmpfs.
	mknod -m 0600 "$root/dev/console" c 5 1
	mknod -m 0666 "$root/dev/null" c 1 3
	# Stripped, uncompressed: 6 MB of gzip took the debug kernel 4 s, 22 MB 0.4.
	while IFS=: read -r src dst; do
		mkdir -p "$root${dst%/*}"
		cp -p "$src" "$root$dst"
		case "$dst" in /bin/* | *.ko) strip --strip-debug "$root$dst" ;; esac
	done < <(guest_files)
	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) >"$DIR/initramfs.cpio"
}

# Boot once; prints the guest's exit status, "hung" or "crashed". RCU
# stall reports are held back only until init starts (the kernel's own
# boot, twheel not loaded yet): a host busy with a kernel build once
# starved a booting debug guest for 44 s, which is none of twheel's.
boot() {
	local qpid start marker="" e line="console=ttyS0 panic_on_warn=1 oops=panic panic=-1 rdinit=/init rcupdate.rcu_cpu_stall_suppress_at_boot=1"
	for e in "${envs[@]}"; do
		case "$e" in *' '* | *'"'* | [!A-Z]*) die "$name: bad --env '$e'" ;; esac
		line+=" $e"
	done
	: >"$LOG"
	: >"$OUT"
	# No ACPI hotplug methods for the PCI slots: 1.3 s of debug kernel boot.
	# shellcheck disable=SC2046 # accel_args is several words
	qemu-system-x86_64 $(accel_args) -smp 4 -m "$mem" -nographic -no-reboot \
		-global PIIX4_PM.acpi-root-pci-hotplug=off \
		-monitor none -nic none -serial "file:$LOG" -serial "file:$OUT" \
		-kernel "$(kernel_image "$kernel")" -initrd "$DIR/initramfs.cpio" \
		-append "$line$cmdline" </dev/null >"$DIR/qemu.stderr" 2>&1 &
	qpid=$!
	trap 'kill $qpid 2>/dev/null || true' EXIT
	if [ "$live" = 1 ]; then
		tail -n +1 -F --pid="$qpid" "$LOG" 2>/dev/null | tr -d '\r' |
			sed -u -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' >&2 &
	else
		tail -n +1 -F --pid="$qpid" "$OUT" 2>/dev/null | tr -d '\r' | sed -u 's/^/  /' >&2 &
	fi
	start=$(now)
	# Wait for qemu; kill it 30 s after the exit marker (if poweroff did
	# not work) or after $timeout s.
	while kill -0 "$qpid" 2>/dev/null; do
		if [ -z "$marker" ] && grep -aqs '^TWHEEL-EXIT:' "$OUT" "$LOG"; then
			marker=$(now)
		fi
		if [ -n "$marker" ] && [ $(($(now) - marker)) -gt 30 ]; then
			kill "$qpid"
		elif [ $(($(now) - start)) -ge "$timeout" ]; then
			kill -9 "$qpid"
			wait "$qpid" 2>/dev/null || true
			echo hung
			return
		fi
		sleep 1
	done
	wait "$qpid" 2>/dev/null || true
	trap - EXIT
	tr -d '\r' <"$OUT" | sed -n 's/^TWHEEL-EXIT: \([0-9]*\).*/\1/p' | grep . ||
		tr -d '\r' <"$LOG" | sed -n 's/^TWHEEL-EXIT: \([0-9]*\).*/\1/p' | grep . || echo crashed
}

main() {
	local st attempt t0 results problems
	mkdir -p "$DIR" "$TWHEEL_BUILD/logs"
	[ -x "${TWHEEL_BUSYBOX:-/bin/busybox}" ] || die "no busybox: run tests/vm/setup-host.sh"
	if [ "$build" = 1 ]; then
		TWHEEL_WARNINGS_OK=1 "$VM/build-modules.sh" "$kernel" "$(kernel_kdir "$kernel")" >&2
		make -s -C "$TWHEEL_ROOT" userspace >&2
	fi
	initramfs
	msg "$name: booting $(kernel_image "$kernel") (timeout ${timeout}s, log $LOG)"
	t0=$(now)
	for attempt in 1 2 3; do
		st=$(boot)
		[ "$st" = crashed ] && ! grep -aq '^TWHEEL-BOOTED' "$OUT" || break
		msg "$name: the kernel died while booting (attempt $attempt), booting again"
	done
	msg "$name: guest status $st after $(($(now) - t0))s"
	# What the kernel reported, with some context.
	problems=$(console_problems "$LOG")
	[ "$kernel" != kcsan ] || problems=$(grep -v KCSAN <<<"$problems" || true)
	if [ -n "$problems" ]; then
		msg "$name: the kernel reported problems (full log: $LOG):"
		grep -anE "$KMSG_RE.*($PROBLEM_RE)" "$LOG" | head -n1 | cut -d: -f1 |
			{ read -r l; sed -n "$((l > 5 ? l - 5 : 1)),$((l + 60))p" "$LOG"; } |
			tr -d '\r' | sed 's/^/  | /' >&2
	fi
	results=$(tr -d '\r' <"$OUT" | python3 "$VM/ktap.py" "$name") || true
	case "$st" in
	hung) results+=$'\n'"FAIL $name/boot # guest hung, killed after ${timeout}s: $(problem_cause "$LOG")" ;;
	crashed) results+=$'\n'"FAIL $name/boot # guest crashed: $(problem_cause "$LOG")" ;;
	*) results+=$'\n'"PASS $name/boot" ;;
	esac
	if [ -n "$problems" ]; then
		results+=$'\n'"FAIL $name/console # $(problem_cause "$LOG")"
	else
		results+=$'\n'"PASS $name/console"
	fi
	results=$(grep . <<<"$results")
	[ -z "${TWHEEL_RESULTS:-}" ] || echo "$results" >>"$TWHEEL_RESULTS"
	grep -E '^(FAIL|SKIP) ' <<<"$results" | sed 's/^/twheel: /' >&2 || true
	msg "$name: $(grep -c '^PASS' <<<"$results") passed, $(grep -c '^FAIL' <<<"$results") failed"
	! grep -q '^FAIL' <<<"$results"
}

main
