#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host side of `make check`: builds and boots everything and counts tests.
#
#   tests/vm/check.sh            # what `make check` runs
#
# Environment (the Makefile passes its variables of the same names):
#   KERNELS="distro distro61 debug"  kernels to build for and boot, in order
#                           (distro: newest Debian kernel, 6.12; distro61:
#                           Debian 12's default 6.1; debug: our own 6.12)
#   T=<filter>              run only the tests whose name contains <filter>:
#                           passed to the guest as TWHEEL_TEST_FILTER, which
#                           the guest gives twheel_test as argv[1]; KUnit gets
#                           filter_glob "*.*<filter>*", or <filter> itself if
#                           it has a '.' (suite_glob.test_glob). A side with
#                           no matching test is skipped, not failed.
#   KUNIT_GLOB=<glob>       KUnit's filter_glob, overriding the one from T
#   STYLE=0                 skip checkpatch
#   TWHEEL_VM_TIMEOUT=1500  seconds before a hung guest is killed
#   TWHEEL_ACCEL=kvm|tcg    skip the KVM probe
#
# Every test is one "PASS name" / "FAIL name" line in build/logs/results.txt;
# the last line printed is "N passed, N failed". Exit status 1 on any failure.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

KERNELS=${KERNELS:-distro distro61 debug}
T=${T:-}
KUNIT_GLOB=${KUNIT_GLOB:-}
STYLE=${STYLE:-1}
LOGS=$TWHEEL_BUILD/logs
RESULTS=$LOGS/results.txt
TIMINGS=$LOGS/timings.txt
VM=$TWHEEL_ROOT/tests/vm
LIB_EXAMPLE=$TWHEEL_BUILD/userspace/libtwheel_example
debug_dir=
declare -A built=()

pass() {
	echo "PASS $1" >>"$RESULTS"
}

fail() {
	echo "FAIL $1${2:+ # $2}" >>"$RESULTS"
	echo "twheel: FAIL: $1${2:+ ($2)}"
}

skip() {
	echo "SKIP $1${2:+ # $2}" >>"$RESULTS"
}

# timed NAME COMMAND...: run, record the wall time, return its status.
timed() {
	local name=$1 t0 rc=0
	shift
	t0=$(now)
	"$@" || rc=$?
	echo "$name $(($(now) - t0))s" >>"$TIMINGS"
	return "$rc"
}

python() {
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 "$@"
	else
		python3 "$@"
	fi
}

step_debug_kernel() {
	local out
	if out=$(timed kernel-debug "$VM/build-kernel.sh"); then
		debug_dir=$out
		pass kernel-debug
	else
		fail kernel-debug "tests/vm/build-kernel.sh failed"
	fi
}

step_modules() {
	local k=$1 kdir
	if [ "$k" = debug ]; then
		[ -n "$debug_dir" ] || { fail "build-$k" "no debug kernel"; return; }
		kdir=$debug_dir
	else
		kdir=$(kdir_for "$k")
	fi
	if timed "build-$k" "$VM/build-modules.sh" "$k" "$kdir"; then
		pass "build-$k"
		built[$k]=1
	else
		fail "build-$k" "warnings or errors, see above"
	fi
}

# The module through DKMS against every installed header set (6.1 and 6.12
# on Debian 12): tests/vm/dkms.sh.
step_dkms() {
	local line rc=0
	timed dkms "$VM/dkms.sh" >"$LOGS/dkms.txt" 2>&1 || rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*) pass "dkms:${line##* }" ;;
		"not ok "*) fail "dkms:${line##* }" "see build/logs/dkms-${line##* }.log" ;;
		*) echo "$line" ;;
		esac
	done <"$LOGS/dkms.txt"
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' "$LOGS/dkms.txt"; then
		fail dkms "tests/vm/dkms.sh failed (status $rc)"
	fi
}

step_style() {
	local line rest rc=0
	if [ "$STYLE" = 0 ]; then
		skip style "STYLE=0"
		return
	fi
	if [ -z "$debug_dir" ]; then
		fail style "no debug kernel tree for checkpatch"
		return
	fi
	timed style "$VM/style.sh" "$debug_dir" >"$LOGS/style.txt" || rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*) pass "style:${line#ok }" ;;
		"not ok "*)
			line=${line#not ok }
			rest=${line#* (}
			fail "style:${line%% (*}" "checkpatch: ${rest%)}"
			;;
		*) echo "$line" ;;
		esac
	done <"$LOGS/style.txt"
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' "$LOGS/style.txt"; then
		fail style "tests/vm/style.sh failed (status $rc)"
	fi
}

step_userspace() {
	local prog src
	for prog in tools/twheelctl tests/userspace/twheel_test \
		tests/userspace/twheel_torture tests/userspace/twheel_failnth \
		tests/userspace/twheel_fuzz tests/userspace/twheel_abuse; do
		src=$TWHEEL_ROOT/$prog.c
		if [ ! -f "$src" ]; then
			skip "build-${prog##*/}" "no $prog.c yet"
			msg "${prog##*/}: no $prog.c yet, skipped"
			continue
		fi
		if timed "build-${prog##*/}" make -s -C "$TWHEEL_ROOT" "$prog"; then
			pass "build-${prog##*/}"
		else
			fail "build-${prog##*/}" "see the compiler output above"
		fi
	done
	step_lib_check
}

# make lib-check: libtwheel on the host (install, README example, exports,
# man pages, unit tests). It also leaves the fully static example at
# $LIB_EXAMPLE, which vm_files() puts in the guest.
step_lib_check() {
	local rc=0 out=$LOGS/lib-check.txt failed
	timed lib-check env TWHEEL_LIBTWHEEL_EXAMPLE_OUT="$LIB_EXAMPLE" \
		make -s -C "$TWHEEL_ROOT" lib-check >"$out" 2>&1 || rc=$?
	failed=$(sed -n 's/^not ok [0-9]* - //p' "$out" | paste -sd ';' - | sed 's/;/; /g')
	if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
		pass lib-check
		return
	fi
	# The failing checks with their "#" diagnostics, and what else went wrong.
	grep -vE '^(ok [0-9]+|1\.\.[0-9]+$|TAP version)' "$out" || true
	if [ -n "$failed" ]; then
		fail lib-check "not ok: $failed"
	else
		fail lib-check "status $rc: $(grep -m1 -E '^Bail out!' "$out" || echo "see $out")"
	fi
}

# The files of the initramfs for kernel $1: SRC:DEST lines.
vm_files() {
	local k=$1 f
	local -A map=(
		[twheel.ko]=/twheel/twheel.ko
		[samples/twheel_consumer.ko]=/twheel/twheel_consumer.ko
		[tests/twheel_kunit.ko]=/twheel/twheel_kunit.ko
		[tests/twheel_stall.ko]=/twheel/twheel_stall.ko
	)
	for f in "${!map[@]}"; do
		[ ! -f "$TWHEEL_BUILD/$k/$f" ] || echo "$TWHEEL_BUILD/$k/$f:${map[$f]}"
	done
	for f in tools/twheelctl tests/userspace/twheel_test tests/userspace/twheel_abuse; do
		[ ! -x "$TWHEEL_ROOT/$f" ] || echo "$TWHEEL_ROOT/$f:/bin/${f##*/}"
	done
	# The README's libtwheel example, built by step_lib_check.
	[ ! -x "$LIB_EXAMPLE" ] || echo "$LIB_EXAMPLE:/bin/libtwheel_example"
	# The reliability tests (tests/vm/guest/reliability.sh) and their files.
	[ "$k" != debug ] || "$VM/torture.sh" --files "$k"
}

# syzkaller/twheel.txt must describe uapi/twheel.h as it is.
step_syzkaller() {
	if timed syz-check python "$VM/syz-check.py"; then
		pass syzkaller-description
	else
		fail syzkaller-description "tests/vm/syz-check.py, see above"
	fi
}

# Count the "ok N name"/"not ok N name" lines of twheel_test's output.
count_userspace() {
	local k=$1 txt=$2 sec st line name summary
	sec=$(sed -n '/^TWHEEL-BEGIN: twheel_test$/,/^TWHEEL-END: twheel_test/p' "$txt")
	[ -n "$sec" ] || return 0
	while IFS= read -r line; do
		name=$(printf '%s' "$line" | sed -E 's/^(not )?ok [0-9]+ (- )?//; s/ # .*//')
		case "$line" in
		"ok "*" # SKIP"* | "ok "*" # skip"*) skip "$k/twheel_test/$name" ;;
		"ok "*) pass "$k/twheel_test/$name" ;;
		"not ok "*) fail "$k/twheel_test/$name" ;;
		esac
	done < <(printf '%s\n' "$sec" | grep -E '^(not )?ok [0-9]+')
	st=$(printf '%s\n' "$sec" | sed -n 's/^TWHEEL-END: twheel_test status=//p')
	summary=$(printf '%s\n' "$sec" | grep -E '^# twheel_test: [0-9]+ passed, [0-9]+ failed' || true)
	if [ -n "$T" ] && [ "$st" = 2 ] && ! printf '%s\n' "$sec" | grep -qE '^(not )?ok [0-9]+'; then
		skip "$k/twheel_test" "no test name contains '$T'"
	elif [ -z "$st" ]; then
		fail "$k/twheel_test" "did not finish"
	elif [ -z "$summary" ]; then
		fail "$k/twheel_test" "no '# twheel_test: N passed, N failed' line (status $st)"
	elif [ "$st" != 0 ] && ! printf '%s\n' "$sec" | grep -qE '^not ok [0-9]+'; then
		fail "$k/twheel_test" "exit status $st"
	fi
}

# Parse KTAP ($3) with the kernel's kunit.py and count each test case as
# <kernel>/kunit/<suite>/<case>; $2 names the KTAP in messages.
count_kunit_ktap() {
	local k=$1 what=$2 ktap=$3 json=$3.json rc=0 counts
	python "$debug_dir/tools/testing/kunit/kunit.py" parse --json="$json" "$ktap" \
		>"$ktap.parsed" 2>&1 || rc=$?
	grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]|Testing complete|ERROR|error' "$ktap.parsed" |
		sed -E 's/^\[[0-9:]+\] /    /'
	counts=$(python - "$json" "$k/kunit" <<-'EOF' 2>&1
		import json, sys
		try:
		    data = json.load(open(sys.argv[1]))
		except Exception as e:
		    print("BROKEN", e)
		    sys.exit(0)
		def walk(group, path):
		    for case in group.get("test_cases", []):
		        st = case.get("status", "ERROR")
		        word = {"PASS": "PASS", "SKIP": "SKIP"}.get(st, "FAIL")
		        name = case.get("name") or "(did not run)"
		        print(word, "/".join(path + [name]).replace(" ", "_"))
		    for sub in group.get("sub_groups", []):
		        walk(sub, path + [sub["name"]])
		walk(data, [sys.argv[2]])
		EOF
	)
	if printf '%s\n' "$counts" | grep -q '^BROKEN'; then
		fail "$k/kunit/$what" "kunit.py could not parse the results, see $ktap.parsed"
		return
	fi
	while read -r word name; do
		case "$word" in
		PASS) pass "$name" ;;
		SKIP) skip "$name" ;;
		FAIL) fail "$name" ;;
		esac
	done <<<"$counts"
	if ! printf '%s\n' "$counts" | grep -qE '^(PASS|FAIL|SKIP) '; then
		fail "$k/kunit/$what" "no test case results (crashed?)"
	elif [ "$rc" -ne 0 ] && ! printf '%s\n' "$counts" | grep -q '^FAIL '; then
		fail "$k/kunit/$what" "kunit.py parse failed (status $rc), see $ktap.parsed"
	fi
}

# After a crash: the KTAP that KUnit printed on the console until then,
# from the top-level header before the first twheel_* suite.
console_ktap() {
	tr -d '\r' <"$1" | sed -n 's/^\[ *[0-9]*\.[0-9]*\] //p' | awk '
		/^KTAP version 1$/ { held = 1; n = 0 }
		held && !started { buf[n++] = $0 }
		held && !started && /^ *# Subtest: twheel_/ {
			started = 1
			for (i = 0; i < n; i++) print buf[i]
			next
		}
		started { print }'
}

count_kunit() {
	local k=$1 txt=$2 log=$3 suite dir
	dir=$LOGS/kunit-$k
	rm -rf "$dir"
	mkdir -p "$dir"
	while IFS= read -r suite; do
		sed -n "/^TWHEEL-KUNIT-BEGIN: $suite\$/,/^TWHEEL-KUNIT-END: $suite\$/p" "$txt" |
			sed '1d;$d' >"$dir/$suite.ktap"
		count_kunit_ktap "$k" "$suite" "$dir/$suite.ktap"
	done < <(sed -n 's/^TWHEEL-KUNIT-BEGIN: //p' "$txt")
	if grep -q '^TWHEEL-KUNIT-NONE' "$txt"; then
		if [ -n "$KUNIT_GLOB$T" ]; then
			skip "$k/kunit" "no twheel_* suite matched the filter"
		else
			fail "$k/kunit" "twheel_kunit.ko loaded but made no twheel_* suite"
		fi
	fi
	# The guest died before it could read debugfs: count what the console has.
	if ! grep -q '^TWHEEL-KUNIT-' "$txt" && grep -aq '# Subtest: twheel_' "$log"; then
		console_ktap "$log" >"$dir/console.ktap"
		msg "$k: KUnit results from the console (the guest did not finish):"
		count_kunit_ktap "$k" console "$dir/console.ktap"
	fi
}

# Count the results of one VM run from its logs.
count_vm() {
	local k=$1 rc=$2 log out txt word rest problems
	log=$LOGS/$k-check.log
	out=$LOGS/$k-check.out
	txt=$LOGS/$k-check.txt
	tr -d '\r' <"$out" >"$txt"
	# No second serial port: fall back to the console.
	grep -q '^TWHEEL-' "$txt" || tr -d '\r' <"$log" >"$txt"
	while IFS= read -r rest; do
		case "$rest" in
		"ok "*) pass "$k/${rest#ok }" ;;
		"not ok "*)
			rest=${rest#not ok }
			word=${rest#* # }
			[ "$word" != "$rest" ] || word=
			fail "$k/${rest%% # *}" "$word"
			;;
		"skip "*)
			rest=${rest#skip }
			skip "$k/${rest%% # *}" "${rest#* # }"
			msg "$k: skipped ${rest%% # *}: ${rest#* # }"
			;;
		esac
	done < <(sed -n 's/^TWHEEL-RESULT: //p' "$txt")
	count_userspace "$k" "$txt"
	count_kunit "$k" "$txt" "$log"
	case "$rc" in
	124) fail "$k/boot" "guest hung: killed after ${TWHEEL_VM_TIMEOUT:-1500}s" ;;
	125) fail "$k/boot" "guest crashed: $(problem_cause "$log")" ;;
	*) pass "$k/boot" ;;
	esac
	if [ "$rc" -ne 124 ] && [ "$rc" -ne 125 ]; then
		problems=$(console_problems "$log")
		if [ -n "$problems" ]; then
			fail "$k/console" "kernel splat: $(problem_cause "$log")"
		else
			pass "$k/console"
		fi
	fi
}

step_vm() {
	local k=$1 bz rc=0 kglob=$KUNIT_GLOB f
	local -a words=()
	if [ -z "${built[$k]:-}" ]; then
		fail "$k/boot" "modules not built"
		return
	fi
	if [ "$k" = debug ]; then
		bz=$debug_dir/arch/x86/boot/bzImage
	else
		bz=$(bzimage_for "$k")
	fi
	while IFS= read -r f; do
		words+=(--add "$f")
	done < <(vm_files "$k")
	if [ "$k" = debug ] && [ -f "$TWHEEL_ROOT/tests/twheel_kunit.c" ] &&
		[ ! -f "$TWHEEL_BUILD/$k/tests/twheel_kunit.ko" ]; then
		fail "$k/kunit" "tests/twheel_kunit.c exists but kbuild made no tests/twheel_kunit.ko (Kbuild must add it to obj-m when CONFIG_KUNIT is set)"
	fi
	if [ -z "$kglob" ] && [ -n "$T" ]; then
		case "$T" in
		*.*) kglob=$T ;;
		*) kglob="*.*$T*" ;;
		esac
	fi
	words+=(--env "TWHEEL_KERNEL=$k")
	[ -z "$T" ] || words+=(--env "TWHEEL_TEST_FILTER=$T")
	[ -z "$kglob" ] || words+=(--env "TWHEEL_KUNIT_GLOB=$kglob")
	echo "twheel: ==== $k kernel: boot and run tests/vm/guest/check.sh ===="
	local attempt
	for attempt in 1 2 3; do
		rc=0
		timed "vm-$k" "$VM/run-vm.sh" --kernel "$bz" --name "$k-check" \
			--script "$VM/guest/check.sh" "${words[@]}" || rc=$?
		# A kernel that died before /init ran (seen under TCG: an int3
		# Oops while it patches its own code) says nothing about twheel:
		# boot again. A crash once the guest is up always counts.
		if [ "$rc" -eq 125 ] &&
			! grep -aq '^TWHEEL-BOOTED' "$LOGS/$k-check.out" 2>/dev/null; then
			msg "$k: the kernel died while booting (attempt $attempt), booting again"
			continue
		fi
		break
	done
	count_vm "$k" "$rc"
}

summary() {
	local npass nfail nskip
	npass=$(grep -c '^PASS ' "$RESULTS" || true)
	nfail=$(grep -c '^FAIL ' "$RESULTS" || true)
	nskip=$(grep -c '^SKIP ' "$RESULTS" || true)
	echo
	echo "twheel: timings: $(tr '\n' ' ' <"$TIMINGS")"
	[ "$nskip" -eq 0 ] || echo "twheel: $nskip skipped: $(sed -n 's/^SKIP \([^ ]*\).*/\1/p' "$RESULTS" | tr '\n' ' ')"
	if [ "$nfail" -ne 0 ]; then
		echo "twheel: failed tests:"
		sed -n 's/^FAIL /  /p' "$RESULTS"
	fi
	echo "twheel: all results in $RESULTS, logs in $LOGS/"
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
}

main() {
	local k t0
	# One stream, in order: progress, failures and splats all on stdout.
	exec 2>&1
	t0=$(now)
	mkdir -p "$LOGS"
	: >"$RESULTS"
	: >"$TIMINGS"
	if [ -z "${TWHEEL_ACCEL:-}" ]; then
		TWHEEL_ACCEL=$("$VM/run-vm.sh" --probe-accel "$(distro_bzimage)")
		export TWHEEL_ACCEL
		msg "accelerator: $TWHEEL_ACCEL"
	fi
	step_debug_kernel
	for k in $KERNELS; do
		case "$k" in
		distro | distro61 | debug) step_modules "$k" ;;
		*) die "KERNELS: unknown kernel '$k' (distro, distro61, debug)" ;;
		esac
	done
	step_dkms
	step_style
	step_userspace
	step_syzkaller
	for k in $KERNELS; do
		step_vm "$k"
	done
	echo "total $(($(now) - t0))s" >>"$TIMINGS"
	summary
}

main "$@"
