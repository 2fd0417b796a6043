#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the modules for one kernel, out of the source tree:
#   tests/vm/build-modules.sh KERNEL [KDIR]
# Copies the module sources into build/<kernel>/ (kbuild builds M= in
# place, so two kernels need two copies) and builds there from scratch with
# W=1 C=1 (sparse). Fails if make fails or prints any warning or error,
# unless TWHEEL_WARNINGS_OK=1 (then they are only shown). The log is
# build/logs/build-<kernel>.log.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: build-modules.sh KERNEL [KDIR]}
kdir=${2:-$(kernel_kdir "$kernel")}
dst=$TWHEEL_BUILD/$kernel
log=$TWHEEL_BUILD/logs/build-$kernel.log
rc=0
[ -f "$kdir/Makefile" ] || die "$kernel: no kernel build tree at $kdir"
rm -rf "$dst"
mkdir -p "$dst" "${log%/*}"
(cd "$TWHEEL_ROOT" && module_sources | cpio -pdm --quiet "$dst")
msg "build-$kernel: make -C $kdir M=$dst W=1 C=1 modules"
make -C "$kdir" M="$dst" W=1 C=1 -j"$(nproc)" modules >"$log" 2>&1 || rc=$?
bad=$(grep -iE 'warning:|error:' "$log" || true)
[ -z "$bad" ] || printf '%s\n' "$bad" >&2
if [ "$rc" -ne 0 ]; then
	tail -n 30 "$log" >&2
	die "build-$kernel: FAILED (make status $rc; full log: $log)"
elif [ -n "$bad" ] && [ "${TWHEEL_WARNINGS_OK:-0}" != 1 ]; then
	die "build-$kernel: FAILED, with the warnings above (full log: $log)"
fi
msg "build-$kernel: ok ($(cd "$dst" && find . -name '*.ko' | sed 's|^\./||' | sort | tr '\n' ' '))"
