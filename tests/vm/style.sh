#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch --strict on every kernel source file of the module (not tools/
# nor tests/userspace/), with the debug kernel's scripts/checkpatch.pl:
#   tests/vm/style.sh [KSRC]
# Prints KTAP: one "ok N <file>" or "not ok N <file>" line per file (with the
# findings of the failing ones) and exits non-zero if any file has an
# ERROR, WARNING or CHECK.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

check_file() {
	local ksrc=$1 f=$2 out total
	local -a extra=()
	# BIT() does not exist for userspace: uapi headers use shifts.
	# compat.h is the one place where kernel versions are compared, which
	# checkpatch flags in code meant for one kernel (and reads
	# LINUX_VERSION_CODE as a constant on the left).
	case "$f" in
	uapi/*) extra+=(--ignore BIT_MACRO) ;;
	compat.h) extra+=(--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON) ;;
	esac
	out=$(cd "$ksrc" && perl scripts/checkpatch.pl --strict --no-tree \
		--show-types --color=never "${extra[@]}" \
		-f "$TWHEEL_ROOT/$f" 2>&1) || true
	total=$(printf '%s\n' "$out" | grep -E '^total: ' | tail -n1)
	if [ -z "$total" ]; then
		printf '%s\n' "$out" | sed 's/^/    /'
		echo "not ok $n $f # checkpatch printed no summary"
		return 1
	fi
	if printf '%s\n' "$total" | grep -qE '^total: 0 errors, 0 warnings,( 0 checks,)? '; then
		echo "ok $n $f"
		return 0
	fi
	printf '%s\n' "$out" | sed -e '/^total: /,$d' -e '/^$/d' -e 's/^/    /'
	echo "not ok $n $f # $total"
	return 1
}

main() {
	local ksrc=${1:-} f fail=0 n=0
	[ -n "$ksrc" ] || ksrc=$(kernel_kdir debug)
	[ -x "$ksrc/scripts/checkpatch.pl" ] || die "no scripts/checkpatch.pl in $ksrc"
	while IFS= read -r f; do
		case "$f" in
		*.c | *.h) ;;
		*) continue ;;
		esac
		n=$((n + 1))
		check_file "$ksrc" "$f" || fail=$((fail + 1))
	done < <(module_sources)
	[ "$n" -gt 0 ] || die "style: no kernel sources found"
	if [ "$fail" -ne 0 ]; then
		msg "style: $fail of $n files have checkpatch findings"
		return 1
	fi
	msg "style: $n files clean"
}

main "$@"
