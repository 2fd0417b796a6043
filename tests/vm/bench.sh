#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host side of `make bench`: build twheel for the distro kernel, boot it
# twice in QEMU and print the nine tables of BENCHMARKS.md.
#
#   tests/vm/bench.sh
#
# 1. builds the modules (tests/vm/build-modules.sh distro; warnings are
#    shown but do not stop a benchmark) and tools/twheel_bench;
# 2. boots the distro kernel (2 GiB) and runs tests/vm/guest/bench.sh part
#    "main": tables 1-6 from tests/twheel_bench.ko, 7-8 from
#    tools/twheel_bench;
# 3. boots it again with mem=1024M for table 9 (part "scale");
# 4. writes every figure to build/logs/bench-raw.tsv and prints the tables
#    (tests/vm/bench-report.py), also saved as build/logs/bench-report.txt.
#
# Environment:
#   TWHEEL_BENCH_REPS=5        repetitions of each measurement
#   TWHEEL_BENCH_SCALE_REPS=2  repetitions of table 9
#   TWHEEL_BENCH_ARGS=         extra twheel_bench.ko parameters, comma-separated
#   TWHEEL_BENCH_PARTS="main scale"  which VM runs to do
#   TWHEEL_ACCEL=kvm|tcg       skip the KVM probe
#
# The figures are never checked against anything: the exit status is 1 only
# if a VM did not finish or a table has no data at all.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

VM=$TWHEEL_ROOT/tests/vm
LOGS=$TWHEEL_BUILD/logs
RAW=$LOGS/bench-raw.tsv
REPORT=$LOGS/bench-report.txt
PARTS=${TWHEEL_BENCH_PARTS:-main scale}

python() {
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 "$@"
	else
		python3 "$@"
	fi
}

build() {
	TWHEEL_WARNINGS_OK=1 "$VM/build-modules.sh" distro "$(distro_kdir)"
	make -s -C "$TWHEEL_ROOT" tools/twheel_bench
	for f in "$TWHEEL_BUILD/distro/twheel.ko" "$TWHEEL_BUILD/distro/tests/twheel_bench.ko" \
		"$TWHEEL_ROOT/tools/twheel_bench"; do
		[ -f "$f" ] || die "bench: $f was not built"
	done
}

# Boot for one part; the guest's output is build/logs/distro-bench-PART.out.
# Returns 0 if the guest script ran to its end (whatever it measured).
run_part() {
	local part=$1 out=$LOGS/distro-bench-$1.out rc=0 attempt
	local -a args=(
		--kernel "$(distro_bzimage)" --name "distro-bench-$part"
		--script "$VM/guest/bench.sh" --timeout 1800
		--add "$TWHEEL_BUILD/distro/twheel.ko:/twheel/twheel.ko"
		--add "$TWHEEL_BUILD/distro/tests/twheel_bench.ko:/twheel/twheel_bench.ko"
		--add "$TWHEEL_ROOT/tools/twheel_bench:/bin/twheel_bench"
		--env "TWHEEL_KERNEL=distro" --env "TWHEEL_BENCH_PART=$part"
		--env "TWHEEL_BENCH_REPS=${TWHEEL_BENCH_REPS:-5}"
		--env "TWHEEL_BENCH_SCALE_REPS=${TWHEEL_BENCH_SCALE_REPS:-2}"
	)
	[ -z "${TWHEEL_BENCH_ARGS:-}" ] || args+=(--env "TWHEEL_BENCH_ARGS=$TWHEEL_BENCH_ARGS")
	[ "$part" != scale ] || args+=(--cmdline mem=1024M)
	echo "twheel: ==== bench, part $part: boot the distro kernel ===="
	for attempt in 1 2 3; do
		rc=0
		"$VM/run-vm.sh" "${args[@]}" || rc=$?
		# A kernel that dies while booting, before the guest script
		# started (seen under TCG: an int3 Oops while the kernel
		# patches its own code), says nothing about twheel: boot again.
		if [ "$rc" -eq 125 ] && ! grep -aq '^TWHEEL-BOOTED' "$out"; then
			msg "bench: part $part: the kernel died while booting (attempt $attempt), booting again"
			continue
		fi
		break
	done
	case "$rc" in
	124 | 125) return 1 ;;	# hung or crashed: run-vm.sh said why
	esac
	# The guest's own verdict, from its exit marker.
	if ! tr -d '\r' <"$out" | grep -qx 'TWHEEL-EXIT: 0'; then
		msg "bench: part $part did not finish cleanly (see $out)"
		return 1
	fi
}

main() {
	local t0 part rc=0 twcpu accel load date commit
	local -a outs=()
	t0=$(now)
	# What is measured: the tree as it is built now.
	date=$(date -u +%Y-%m-%dT%H:%MZ)
	commit=$(git -C "$TWHEEL_ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
	if [ -n "$(git -C "$TWHEEL_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		commit+="+changes"
	fi
	# Other work on the host slows the emulated CPUs unevenly: record it.
	load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')
	mkdir -p "$LOGS"
	build
	if [ -z "${TWHEEL_ACCEL:-}" ]; then
		TWHEEL_ACCEL=$("$VM/run-vm.sh" --probe-accel "$(distro_bzimage)")
		export TWHEEL_ACCEL
	fi
	accel=$TWHEEL_ACCEL
	msg "accelerator: $accel"
	for part in $PARTS; do
		outs+=("$LOGS/distro-bench-$part.out")
		rm -f "$LOGS/distro-bench-$part.out"
		run_part "$part" || rc=1
	done
	# Size of struct twheel_cpu, the per-CPU variable of twheel.ko.
	twcpu=$(nm -S "$TWHEEL_BUILD/distro/twheel.ko" 2>/dev/null |
		awk '$4 == "twheel_cpus" { print $2 }')
	twcpu=$((16#${twcpu:-0}))
	python "$VM/bench-report.py" collect \
		--meta "date=$date" \
		--meta "kernel=$(distro_version)" --meta "accel=$accel" \
		--meta "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1 | tr ' \t' '__')" \
		--meta "host_cpus=$(nproc)" --meta "host_load=$load" \
		--meta "commit=$commit" \
		--meta "twheel_cpu_bytes=$twcpu" \
		"${outs[@]}" >"$RAW"
	python "$VM/bench-report.py" report --elapsed "$(($(now) - t0))" "$RAW" | tee "$REPORT" ||
		rc=1
	msg "bench: raw figures in $RAW, tables in $REPORT ($(($(now) - t0)) s)"
	return "$rc"
}

main "$@"
