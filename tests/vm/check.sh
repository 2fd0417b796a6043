#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: build everything, check it on the host, boot every kernel.
# Environment (the Makefile passes its variables of the same names):
#   KERNELS="distro distro61 rt v72 debug"  the kernels (tests/vm/lib.sh)
#   T=<filter>      only the tests whose name contains <filter>: twheel_test
#                   gets it as argv[1], KUnit as filter_glob "*.*<filter>*"
#                   (or <filter> itself if it has a '.'), the debug guest's
#                   reliability parts by name
#   KUNIT_GLOB=<glob>  KUnit's filter_glob, overriding the one from T
#   STYLE=0         skip checkpatch
#   TWHEEL_ACCEL=kvm|tcg|icount  skip the KVM probe
# Every result is a "PASS|FAIL|SKIP name [# why]" line of
# build/logs/results.txt; the last line printed is "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

LOGS=$TWHEEL_BUILD/logs
VM=$TWHEEL_ROOT/tests/vm
export TWHEEL_RESULTS=$LOGS/results.txt
TIMINGS=$LOGS/timings.txt

# step [--ktap] NAME COMMAND...: one result, NAME, from the command's exit
# status; with --ktap, one per test of the command's KTAP output.
step() {
	local ktap=0 name t0 rc=0 log
	[ "$1" != --ktap ] || { ktap=1; shift; }
	name=$1
	log=$LOGS/$name.txt
	shift
	t0=$(now)
	"$@" >"$log" 2>&1 || rc=$?
	echo "$name $(($(now) - t0))s" >>"$TIMINGS"
	if [ "$ktap" = 1 ]; then
		python3 "$VM/ktap.py" "$name" "$log" | tee -a "$TWHEEL_RESULTS" | grep -v '^PASS' || true
		# A failure that is not a test's: the script stopped.
		[ "$rc" -eq 0 ] || grep -q '^not ok' "$log" ||
			echo "FAIL $name # status $rc: $(tail -n1 "$log")" | tee -a "$TWHEEL_RESULTS"
	elif [ "$rc" -eq 0 ]; then
		echo "PASS $name" >>"$TWHEEL_RESULTS"
	else
		tail -n 30 "$log"
		echo "FAIL $name # status $rc, see $log" | tee -a "$TWHEEL_RESULTS"
	fi
	return "$rc"
}

# The guest of kernel $1, with vm.sh's options $2...; its results go to
# $TWHEEL_RESULTS.
vm() {
	local glob=${KUNIT_GLOB:-} t0 k=$1
	shift
	local -a args=(--no-build "$@")
	[ -n "$glob" ] || [ -z "${T:-}" ] || case "$T" in *.*) glob=$T ;; *) glob="*.*$T*" ;; esac
	[ -z "${T:-}" ] || args+=(--env "TWHEEL_TEST_FILTER=$T")
	[ -z "$glob" ] || args+=(--env "TWHEEL_KUNIT_GLOB=$glob")
	t0=$(now)
	"$VM/vm.sh" check "$k" "${args[@]}" 2>&1 || true
	echo "vm-$k$(sed -n 's/.*TWHEEL_PART=\([a-z]*\).*/-\1/p' <<<"$*") $(($(now) - t0))s" >>"$TIMINGS"
}

exec 2>&1
t0=$(now)
bg='' built=''
mkdir -p "$LOGS"
: >"$TWHEEL_RESULTS"
: >"$TIMINGS"
# Sets and exports TWHEEL_ACCEL, as in bench.sh: keeping only the -accel
# word of its output would turn icount back into multi-threaded TCG.
accel_args >/dev/null
msg "accelerator: $TWHEEL_ACCEL"
KERNELS=${KERNELS:-distro distro61 rt v72 debug}
for k in $KERNELS; do
	case "$k" in distro | distro61 | rt | v72 | debug | rtdebug) ;; *) die "KERNELS: unknown kernel '$k' (distro, distro61, rt, v72, debug, rtdebug)" ;; esac
done
# The debug kernels' guests take longest: their modules, the programs and
# the libtwheel example (lib-check) are built first, then they boot in the
# background. Each one's check runs as two guests at once, the reliability
# runs in one and the rest in the other: a guest keeps about one host CPU
# busy. rtdebug (not in the default set) is debug.config as PREEMPT_RT.
for k in debug rtdebug; do
	case " $KERNELS " in *" $k "*)
		frags=debug.config
		[ "$k" = debug ] || frags+=" rt.config"
		# shellcheck disable=SC2086 # one or two fragments
		step "kernel-$k" "$VM/build-kernel.sh" $frags &&
			step "build-$k" "$VM/build-modules.sh" "$k" "$(kernel_kdir "$k")" &&
			built+=" $k" ;;
	esac
done
# Linux 7.2 is built here from linux-source-7.2 (once, cached), before the
# host checks start: its tree is registered as an installed kernel's
# headers, so that DKMS and the packages build for it too.
case " $KERNELS " in *" v72 "*)
	step kernel-v72 env TWHEEL_KSRC=7.2 "$VM/build-kernel.sh" v72.config &&
		step kernel-v72-register register_kernel_tree "$(kernel_kdir v72)" || true ;;
esac
step build-userspace make -s -j"$(nproc)" -C "$TWHEEL_ROOT" userspace || true
step --ktap lib-check env TWHEEL_LIBTWHEEL_EXAMPLE_OUT="$TWHEEL_BUILD/userspace/libtwheel_example" \
	make -s -C "$TWHEEL_ROOT" lib-check || true
for k in debug rtdebug; do
	case "$built " in *" $k "*)
		vm "$k" --env TWHEEL_PART=core >"$LOGS/vm-$k.txt" &
		bg+=" $!"
		vm "$k" --name "$k-reliability" --env TWHEEL_PART=reliability >"$LOGS/vm-$k-reliability.txt" &
		bg+=" $!" ;;
	esac
done
# The host checks beside the guests, on the CPU time the guests leave.
# The packages' check builds twheel.ko through DKMS for every kernel with
# headers, from the twheel-dkms package: what make dkms (tests/vm/dkms.sh,
# the same tree /usr/src/twheel-<version>) would check again, so that is
# not run here.
{
	step --ktap deb nice -n 19 "$TWHEEL_ROOT/tests/pkg/check-deb.sh" || true
	if [ "${STYLE:-1}" = 0 ]; then
		echo "SKIP style # STYLE=0" >>"$TWHEEL_RESULTS"
	else
		step --ktap style nice -n 19 "$VM/style.sh" "$(kernel_kdir debug)" || true
	fi
	# syzkaller/twheel.txt must describe uapi/twheel.h as it is.
	step syzkaller-description python3 "$TWHEEL_ROOT/syzkaller/check.py" || true
} &
host=$!
# The other kernels' guests two at a time, in two chains (a guest spends
# half its time waiting for deadlines, 0.4 of a host CPU), each kernel's
# modules built while earlier guests run; each guest's output goes to
# its own file, shown once all have ended.
chain_a='' chain_b='' guests=''
for k in $KERNELS; do
	case "$k" in debug | rtdebug) continue ;; esac
	# Linux 7.2 is built here from linux-source-7.2 (once, cached).
	if ! step "build-$k" "$VM/build-modules.sh" "$k" "$(kernel_kdir "$k")"; then
		echo "FAIL $k-check/boot # not built" >>"$TWHEEL_RESULTS"
		continue
	fi
	built+=" $k" guests+=" $k"
	[ -z "$chain_a" ] || wait "$chain_a" || true
	vm "$k" >"$LOGS/vm-$k.txt" &
	chain_a=$chain_b chain_b=$!
done
# shellcheck disable=SC2086 # up to two pids
[ -z "$chain_a$chain_b" ] || wait $chain_a $chain_b || true
for k in $guests; do
	cat "$LOGS/vm-$k.txt"
done
# A debug kernel asked for and not built.
for k in debug rtdebug; do
	case " $KERNELS " in *" $k "*) ;; *) continue ;; esac
	case "$built " in *" $k "*) ;; *) echo "FAIL $k-check/boot # not built" >>"$TWHEEL_RESULTS" ;; esac
done
wait "$host" || true
if [ -n "$bg" ]; then
	msg "waiting for the debug kernels' guests (output in $LOGS/vm-*debug*.txt)"
	# shellcheck disable=SC2086 # two pids per debug kernel
	wait $bg || true
	cat "$LOGS"/vm-*debug*.txt
fi
echo "total $(($(now) - t0))s" >>"$TIMINGS"
echo
echo "twheel: timings: $(tr '\n' ' ' <"$TIMINGS")"
! grep -q '^FAIL' "$TWHEEL_RESULTS" || { echo "twheel: failed tests:"; sed -n 's/^FAIL /  /p' "$TWHEEL_RESULTS"; }
echo "twheel: all results in $TWHEEL_RESULTS, logs in $LOGS/"
# A guest whose kernel reported a problem: the report's first lines and the
# functions of its backtraces, last, where the tail of a CI log shows them.
sed -n 's#^FAIL \([^/ ]*\)/\(console\|boot\) .*#\1#p' "$TWHEEL_RESULTS" | sort -u |
	while IFS= read -r g; do
		[ -f "$LOGS/$g.log" ] || continue
		echo "twheel: $g's kernel report ($LOGS/$g.log):"
		console_report "$LOGS/$g.log" | head -n 24 | sed 's/^/  | /'
	done || true
echo "$(grep -c '^PASS' "$TWHEEL_RESULTS") passed, $(grep -c '^FAIL' "$TWHEEL_RESULTS") failed"
! grep -q '^FAIL' "$TWHEEL_RESULTS" && grep -q '^PASS' "$TWHEEL_RESULTS"
