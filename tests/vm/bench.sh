#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boot the distro kernel for each part through tests/vm/vm.sh
# (main: tables 1-8 in 2 GiB; scale: table 9, booted with mem=1024M;
# httpd: table 10, examples/httpd-load.sh's "table=10" lines; idle: table
# 11, the wake-ups of idle CPUs, in the kernel and from userspace),
# collect every "table=" line into build/logs/bench-raw.tsv and print the
# tables of BENCHMARKS.md (bench/report.py), also saved as
# build/logs/bench-report.txt, and draw its figures into build/logs/plots/
# (bench/plot.py; skipped, saying so, without python3-matplotlib).
#
# Environment: TWHEEL_BENCH_REPS=5, TWHEEL_BENCH_SCALE_REPS=2 (table 9),
# TWHEEL_BENCH_ARGS= (twheel_bench.ko parameters, comma-separated),
# TWHEEL_BENCH_MODARGS= (twheel.ko parameters, comma-separated),
# TWHEEL_BENCH_USER=ops,latency,spread (the userspace steps of part main:
# tables 7, 8 and table 5's timerfd rows),
# TWHEEL_BENCH_PARTS=kernel (tables 1-6 alone, those TWHEEL_BENCH_ARGS=tables=
# picks; TWHEEL_BENCH_PERF=1 samples every CPU with perf meanwhile),
# TWHEEL_BENCH_PARTS=ops (table 7 alone; TWHEEL_BENCH_OPS=twheel_batch/64,...
# picks its rows, TWHEEL_BENCH_PERF=1 profiles it with perf, which then goes
# into the initramfs, and TWHEEL_BENCH_PERF_SYMS=twheel_ adds the samples per
# instruction of the symbols matching it),
# TWHEEL_BENCH_HTTPD_CONNS=1000,10000, TWHEEL_BENCH_HTTPD_SECONDS (table 10's
# connection counts and seconds per phase: 5 and 20 at 10,000) and
# TWHEEL_BENCH_HTTPD_BACKENDS=heap,timerfd,twheel,twheel-ring,
# TWHEEL_BENCH_HTTPD_REPS=2 (table 10's repetitions, the backends' order
# reversed in every other one),
# TWHEEL_BENCH_T11_SECS=30 and TWHEEL_BENCH_T11_REPS=1 (table 11: seconds
# counted per row, repetitions),
# TWHEEL_BENCH_PARTS="main scale httpd idle", TWHEEL_BENCH_KERNEL=distro (or
# distro61, rt, v72), TWHEEL_ACCEL=kvm|tcg|icount (icount: the guest's clocks count its
# instructions, 1 ns each; deterministic; for tables 1-3 alone:
# TWHEEL_BENCH_PARTS=kernel TWHEEL_BENCH_ARGS=tables=0x7).
# The figures are never judged: the exit status is 1 only if a part did not
# run to its end or a table has no data.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

LOGS=$TWHEEL_BUILD/logs
RAW=$LOGS/bench-raw.tsv
K=${TWHEEL_BENCH_KERNEL:-distro}
t0=$(now)
rc=0
outs=()
commit=$(git -C "$TWHEEL_ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
[ -z "$(git -C "$TWHEEL_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
	commit+="+changes"
# Other work on the host slows the emulated CPUs unevenly: record it.
load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')
# Sets and exports TWHEEL_ACCEL (kvm, tcg or icount) for every part.
accel_args >/dev/null
build=
for part in ${TWHEEL_BENCH_PARTS:-main scale httpd idle}; do
	args=(--name "$K-bench-$part" --timeout 1800 ${build:+"$build"}
		--env "TWHEEL_BENCH_PART=$part"
		--env "TWHEEL_BENCH_REPS=${TWHEEL_BENCH_REPS:-5}"
		--env "TWHEEL_BENCH_SCALE_REPS=${TWHEEL_BENCH_SCALE_REPS:-2}")
	[ -z "${TWHEEL_BENCH_ARGS:-}" ] || args+=(--env "TWHEEL_BENCH_ARGS=$TWHEEL_BENCH_ARGS")
	[ -z "${TWHEEL_BENCH_OPS:-}" ] || args+=(--env "TWHEEL_BENCH_OPS=$TWHEEL_BENCH_OPS")
	[ -z "${TWHEEL_BENCH_MODARGS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_MODARGS=$TWHEEL_BENCH_MODARGS")
	[ -z "${TWHEEL_BENCH_USER:-}" ] || args+=(--env "TWHEEL_BENCH_USER=$TWHEEL_BENCH_USER")
	[ -z "${TWHEEL_BENCH_HTTPD_CONNS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_HTTPD_CONNS=$TWHEEL_BENCH_HTTPD_CONNS")
	[ -z "${TWHEEL_BENCH_HTTPD_SECONDS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_HTTPD_SECONDS=$TWHEEL_BENCH_HTTPD_SECONDS")
	[ -z "${TWHEEL_BENCH_HTTPD_BACKENDS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_HTTPD_BACKENDS=$TWHEEL_BENCH_HTTPD_BACKENDS")
	[ -z "${TWHEEL_BENCH_HTTPD_REPS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_HTTPD_REPS=$TWHEEL_BENCH_HTTPD_REPS")
	[ -z "${TWHEEL_BENCH_T11_SECS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_T11_SECS=$TWHEEL_BENCH_T11_SECS")
	[ -z "${TWHEEL_BENCH_T11_REPS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_T11_REPS=$TWHEEL_BENCH_T11_REPS")
	[ -z "${TWHEEL_BENCH_PERF:-}" ] || args+=(--env "TWHEEL_BENCH_PERF=1")
	[ -z "${TWHEEL_BENCH_PERF_SYMS:-}" ] ||
		args+=(--env "TWHEEL_BENCH_PERF_SYMS=$TWHEEL_BENCH_PERF_SYMS")
	[ "$part" != scale ] || args+=(--cmdline mem=1024M)
	# Under TCG a busy host makes the clocksource watchdog find the TSC
	# "unstable" (seen after tables 1-6); the guest then reads hpet with a
	# system call on every clock_gettime(), a microsecond added to each
	# timed chunk of table 7 for every facility alike, and to nothing
	# else. The TSC of an emulated CPU counts the host's clock: trust it.
	args+=(--cmdline tsc=reliable)
	"$TWHEEL_ROOT/tests/vm/vm.sh" bench "$K" "${args[@]}" || rc=1
	build=--no-build
	outs+=("$LOGS/$K-bench-$part.out")
done
# Size of struct twheel_cpu, the per-CPU variable of twheel.ko.
twcpu=$(nm -S "$TWHEEL_BUILD/$K/twheel.ko" | awk '$4 == "twheel_cpus" { print $2 }')
python3 "$TWHEEL_ROOT/bench/report.py" collect \
	--meta "date=$(date -u +%Y-%m-%dT%H:%MZ)" --meta "kernel=$(basename "$(dirname "$(kernel_kdir "$K")")")" \
	--meta "accel=$TWHEEL_ACCEL" \
	--meta "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1 | tr ' \t' '__')" \
	--meta "host_cpus=$(nproc)" --meta "host_load=$load" --meta "commit=$commit" \
	--meta "twheel_cpu_bytes=$((16#${twcpu:-0}))" "${outs[@]}" >"$RAW"
python3 "$TWHEEL_ROOT/bench/report.py" report --elapsed "$(($(now) - t0))" \
	--parts "${TWHEEL_BENCH_PARTS:-main scale httpd idle}" "$RAW" |
	tee "$LOGS/bench-report.txt" || rc=1
# The figures, from the same raw file: Debian's matplotlib, so Debian's
# python3 (a python3 earlier in PATH may lack it). A missing plot fails nothing.
/usr/bin/python3 "$TWHEEL_ROOT/bench/plot.py" "$LOGS/plots" "$RAW" ||
	msg "bench: the plots failed; the tables above stand"
msg "bench: raw figures in $RAW, tables in $LOGS/bench-report.txt ($(($(now) - t0)) s)"
exit "$rc"
