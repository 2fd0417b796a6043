#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make dkms: the module through DKMS, as a distribution would ship it. Adds
# the module's sources as twheel/<the version of ./VERSION>, builds
# them against every kernel whose headers are installed (here 6.1, 6.12 and
# 6.12-rt), then removes them again. Needs root. Prints "ok/not ok" per
# kernel and exits non-zero if any build failed.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

fail=0
n=0
mkdir -p "$TWHEEL_BUILD/logs"
ver=$(cat "$TWHEEL_ROOT/VERSION")
[ -n "$ver" ] || die "VERSION is empty"
command -v dkms >/dev/null || die "no dkms: run tests/vm/setup-host.sh"
src=/usr/src/twheel-$ver
# The Debian package (make deb) uses the same name and version: its tree
# must not be taken over, nor removed below.
if dpkg-query -W -f='${Status}' twheel-dkms 2>/dev/null | grep -q ' installed$'; then
	die "the twheel-dkms package is installed: it owns $src (apt-get purge twheel-dkms first)"
fi
dkms remove -m twheel -v "$ver" --all >/dev/null 2>&1 || true
rm -rf "$src"
mkdir -p "$src"
(cd "$TWHEEL_ROOT" && module_sources | cpio -pdm --quiet "$src")
# dkms.conf's version placeholder (dh_dkms's) becomes VERSION's.
sed "s/#MODULE_VERSION#/$ver/g" "$TWHEEL_ROOT/dkms.conf" >"$src/dkms.conf"
dkms add -m twheel -v "$ver" >/dev/null
for kdir in /lib/modules/*/build; do
	[ -f "$kdir/Makefile" ] || continue
	k=$(basename "$(dirname "$kdir")")
	n=$((n + 1))
	if dkms build -m twheel -v "$ver" -k "$k" >"$TWHEEL_BUILD/logs/dkms-$k.log" 2>&1; then
		echo "ok $n dkms build $k"
	else
		tail -n 20 "$TWHEEL_BUILD/logs/dkms-$k.log" | sed 's/^/# /'
		echo "not ok $n dkms build $k"
		fail=$((fail + 1))
	fi
done
dkms remove -m twheel -v "$ver" --all >/dev/null 2>&1
rm -rf "$src"
[ "$n" -gt 0 ] || die "no kernel headers installed"
msg "dkms: $((n - fail)) of $n kernels built"
[ "$fail" -eq 0 ]
