#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) the twheel debug kernel from Debian's linux-source-6.12:
# tinyconfig + tests/vm/debug.config. The result is cached outside the
# repository, keyed by the source package version and the config hash:
#   ${XDG_CACHE_HOME:-~/.cache}/twheel/kernel-<srcver>-<hash>/
# On success prints that directory (it holds arch/x86/boot/bzImage and is a
# KDIR for out-of-tree modules).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
frag=${1:-$here/debug.config}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/twheel
tarball=/usr/src/linux-source-6.12.tar.xz
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
hash=$( (cat "$frag" "$0") | sha256sum | cut -c1-12)
name=$(basename "$frag" .config)
out=$cache/kernel-$name-$srcver-$hash

if [ -f "$out/.twheel-ok" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
echo "twheel: building the $name kernel ($srcver) in $out (a few minutes, once)" >&2
tar -C "$out.tmp" --strip-components=1 -xf "$tarball"
cd "$out.tmp"
jobs=$(nproc)
make -s ARCH=x86_64 tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m -O . .config "$frag" >/dev/null
make -s ARCH=x86_64 olddefconfig >/dev/null

# Kconfig silently drops options whose dependencies are unmet: refuse that.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		if ! grep -qx "$line" .config; then
			echo "twheel: $name kernel: '$line' did not survive Kconfig" >&2
			bad=1
		fi
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" .config; then
			echo "twheel: $name kernel: '$opt' must be off" >&2
			bad=1
		fi
		;;
	esac
done < "$frag"
[ $bad -eq 0 ] || exit 1

log=$out.tmp/build.log
if ! make ARCH=x86_64 -j"$jobs" bzImage modules >"$log" 2>&1; then
	tail -40 "$log" >&2
	echo "twheel: $name kernel build failed; full log: $log" >&2
	exit 1
fi
touch .twheel-ok
cd /
mv "$out.tmp" "$out"
echo "$out"
