#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) a test kernel from a Debian linux-source package (6.12 unless
# TWHEEL_KSRC names another, e.g. 7.2): tinyconfig, then the fragments of
# tests/vm/ merged in order with the kernel's scripts/kconfig/merge_config.sh
# (a later fragment overrides an earlier):
#   tests/vm/build-kernel.sh debug.config               # the debug kernel
#   tests/vm/build-kernel.sh debug.config kcsan.config  # the KCSAN kernel
#   TWHEEL_KSRC=7.2 tests/vm/build-kernel.sh v72.config # Linux 7.2
# The result is cached outside the repository, keyed by the source package
# version and a hash of the fragments and this script:
#   ${XDG_CACHE_HOME:-~/.cache}/twheel/kernel-<last fragment>-<srcver>-<hash>/
# On success prints that directory (a KDIR for out-of-tree modules, with
# arch/x86/boot/bzImage).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
frags=()
for f in "${@:-debug.config}"; do
	frags+=("$here/$f")
done
cache=${XDG_CACHE_HOME:-$HOME/.cache}/twheel
ksrc=${TWHEEL_KSRC:-6.12}
srcver=$(dpkg-query -W -f='${Version}' "linux-source-$ksrc")
hash=$(cat "${frags[@]}" "$0" | sha256sum | cut -c1-12)
name=$(basename "${frags[-1]}" .config)
out=$cache/kernel-$name-$srcver-$hash

if [ -f "$out/.twheel-ok" ]; then
	echo "$out"
	exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
echo "twheel: building the $name kernel ($srcver) in $out (a few minutes, once)" >&2
tar -C "$out.tmp" --strip-components=1 -xf "/usr/src/linux-source-$ksrc.tar.xz"
cd "$out.tmp"
make -s ARCH=x86_64 tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m -O . .config "${frags[@]}" >/dev/null
make -s ARCH=x86_64 olddefconfig >/dev/null

# Kconfig silently drops options whose dependencies are unmet: refuse that.
# Each option is checked as the last fragment that names it sets it.
bad=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=.*/&/p; s/^# \(CONFIG_[A-Z0-9_]*\) is not set/&/p' \
	"${frags[@]}" | awk '{ o = $1 ~ /^#/ ? $2 : substr($1, 1, index($1, "=") - 1)
		last[o] = $0 } END { for (o in last) print last[o] }' |
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*) grep -qx "$line" .config || echo "'$line' did not survive Kconfig" ;;
		*) opt=${line#\# }; opt=${opt%% *}
		   ! grep -q "^$opt=" .config || echo "'$opt' must be off" ;;
		esac
	done)
[ -z "$bad" ] || { sed "s/^/twheel: $name kernel: /" <<<"$bad" >&2; exit 1; }

if ! make ARCH=x86_64 -j"$(nproc)" bzImage modules >build.log 2>&1; then
	tail -40 build.log >&2
	echo "twheel: $name kernel build failed; full log: $out.tmp/build.log" >&2
	exit 1
fi
touch .twheel-ok
cd /
mv "$out.tmp" "$out"
echo "$out"
