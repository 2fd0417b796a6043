#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the modules for one kernel, out of the source tree:
#   tests/vm/build-modules.sh KERNEL [KDIR]
# Copies the module sources into build/<kernel>/ (kbuild builds M= in place,
# so two kernels need two copies), builds from scratch there with W=1 C=1
# (sparse) and fails if the build fails or prints any warning or error.
# The log is build/logs/build-<kernel>.log; the .ko files stay in
# build/<kernel>/. TWHEEL_WARNINGS_OK=1 only shows the warnings.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

copy_sources() {
	local dst=$1 f
	rm -rf "$dst"
	mkdir -p "$dst"
	while IFS= read -r f; do
		mkdir -p "$dst/$(dirname "$f")"
		cp -p "$TWHEEL_ROOT/$f" "$dst/$f"
	done < <(module_sources)
	[ -f "$dst/Kbuild" ] || die "no Kbuild in $TWHEEL_ROOT"
}

# Lines that make the build fail even when make succeeded.
bad_lines() {
	grep -iE 'warning:|error:' "$1" || true
}

main() {
	local kernel=${1:?usage: build-modules.sh KERNEL [KDIR]}
	local kdir=${2:-}
	local dst=$TWHEEL_BUILD/$kernel
	local log=$TWHEEL_BUILD/logs/build-$kernel.log
	local rc=0 bad

	[ -n "$kdir" ] || kdir=$(kernel_kdir "$kernel")
	[ -f "$kdir/Makefile" ] || die "$kernel: no kernel build tree at $kdir"
	mkdir -p "$(dirname "$log")"
	copy_sources "$dst"
	msg "build-$kernel: make -C $kdir M=$dst W=1 C=1 modules"
	make -C "$kdir" M="$dst" W=1 C=1 -j"$(nproc)" modules >"$log" 2>&1 || rc=$?
	bad=$(bad_lines "$log")
	if [ "$rc" -eq 0 ] && [ -n "$bad" ] && [ "${TWHEEL_WARNINGS_OK:-0}" = 1 ]; then
		printf '%s\n' "$bad" >&2
		msg "build-$kernel: built, with the warnings above"
		return 0
	fi
	if [ "$rc" -ne 0 ] || [ -n "$bad" ]; then
		[ -z "$bad" ] || printf '%s\n' "$bad" >&2
		[ "$rc" -eq 0 ] || tail -n 30 "$log" >&2
		msg "build-$kernel: FAILED (make status $rc; full log: $log)"
		return 1
	fi
	msg "build-$kernel: ok ($(cd "$dst" && find . -name '*.ko' | sed 's|^\./||' | sort | tr '\n' ' '))"
}

main "$@"
