#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch --strict on every kernel source file of the module (not tools/
# nor tests/userspace/), with the debug kernel's scripts/checkpatch.pl:
#   tests/vm/style.sh [KSRC]
# Prints KTAP: one "ok N <file>" or "not ok N <file> # totals" line per
# file, after the findings of a failing one. Exit status 1 if any file has
# an ERROR, WARNING or CHECK.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

ksrc=${1:-$(kernel_kdir debug)}
fail=0
n=0
[ -x "$ksrc/scripts/checkpatch.pl" ] || die "no scripts/checkpatch.pl in $ksrc"
while IFS= read -r f; do
	case "$f" in *.c | *.h) n=$((n + 1)) ;; *) continue ;; esac
	# BIT() does not exist for userspace: uapi headers use shifts.
	# compat.h is the one place where kernel versions are compared, which
	# checkpatch flags in code meant for one kernel (and reads
	# LINUX_VERSION_CODE as a constant on the left).
	case "$f" in
	uapi/*) ignore=BIT_MACRO ;;
	compat.h) ignore=LINUX_VERSION_CODE,CONSTANT_COMPARISON ;;
	*) ignore=NONE ;;
	esac
	out=$(cd "$ksrc" && perl scripts/checkpatch.pl --strict --no-tree --show-types \
		--color=never --ignore "$ignore" -f "$TWHEEL_ROOT/$f" 2>&1) || true
	total=$(grep -E '^total: ' <<<"$out" | tail -n1) || true
	if grep -qE '^total: 0 errors, 0 warnings,( 0 checks,)? ' <<<"$total"; then
		echo "ok $n $f"
		continue
	fi
	sed -e '/^total: /,$d' -e '/^$/d' -e 's/^/    /' <<<"$out"
	echo "not ok $n $f # ${total:-checkpatch printed no summary}"
	fail=$((fail + 1))
done < <(module_sources)
[ "$n" -gt 0 ] || die "style: no kernel sources found"
[ "$fail" -eq 0 ] || die "style: $fail of $n files have checkpatch findings"
msg "style: $n files clean"
