#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb: the Debian packages twheel-dkms, libtwheel1, libtwheel-dev and
# twheel-tools, into build/deb/ (TWHEEL_DEB_OUT overrides).
#
# dpkg-buildpackage writes its packages into the parent of the source
# directory, so the build runs in a copy of the tree under build/deb/: the
# tracked and untracked-but-not-ignored files, as the module's sources are
# copied for DKMS (tests/vm/lib.sh), so that uncommitted changes are in.
# The copy gets debian/changelog, written here from the file VERSION: the
# packages' version cannot drift from the module's and the library's.
# Needs debhelper, dh-dkms and dpkg-dev (tests/vm/setup-host.sh), not root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${TWHEEL_DEB_OUT:-$ROOT/build/deb}
MAINTAINER=$(sed -n 's/^Maintainer: //p' "$ROOT/debian/control")

msg() { echo "twheel: $*" >&2; }
die() { msg "$*"; exit 1; }

ver=$(cat "$ROOT/VERSION")
# A native package's version: no "-revision", digits first.
[[ "$ver" =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || die "VERSION '$ver' is not a Debian native version"
for tool in dpkg-buildpackage dh dh_dkms cpio; do
	command -v "$tool" >/dev/null ||
		die "no $tool: run tests/vm/setup-host.sh (debhelper, dh-dkms, dpkg-dev, cpio)"
done

# The tree's files, as git sees them (or all but build/ and .git without git).
tree_files() {
	local f
	(cd "$ROOT" && { git ls-files -co --exclude-standard 2>/dev/null ||
		find . \( -path ./build -o -path ./.git \) -prune -o -type f -print |
		sed 's|^\./||'; }) |
		while IFS= read -r f; do
			[ ! -f "$ROOT/$f" ] || echo "$f"
		done
}

rm -rf "$OUT"
src=$OUT/twheel-$ver
mkdir -p "$src"
tree_files | (cd "$ROOT" && cpio -pdm --quiet "$src")

# The changelog's date is the last commit's, so that two builds of one
# commit are the same (dpkg takes SOURCE_DATE_EPOCH from it).
date=$(git -C "$ROOT" log -1 --format=%cD 2>/dev/null) || date=$(date -R)
desc=$(git -C "$ROOT" describe --always --dirty 2>/dev/null) || desc="a tree without git"
cat >"$src/debian/changelog" <<EOC
twheel ($ver) unstable; urgency=medium

  * twheel $ver, built from $desc. make deb writes this entry from the
    file VERSION; the project's history is its git log.

 -- $MAINTAINER  $date
EOC

msg "building the packages of twheel $ver in $src (log: $OUT/build.log)"
if ! (cd "$src" && dpkg-buildpackage --build=binary --no-sign) >"$OUT/build.log" 2>&1; then
	tail -n 30 "$OUT/build.log" >&2
	die "dpkg-buildpackage failed; the copy is kept in $src"
fi
rm -rf "$src"
ls -l "$OUT"/*.deb
