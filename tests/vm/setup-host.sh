#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host setup for building and testing twheel: installs what is missing with
# apt-get when run as root, otherwise prints the exact command to run.
# Idempotent; near-instant when everything is already there.
set -euo pipefail

KVER_PKG=6.12
pkgs=(
	build-essential bc flex bison libelf-dev libssl-dev dwarves sparse
	cpio busybox-static qemu-system-x86 kmod xz-utils zstd python3
	"linux-headers-${KVER_PKG}-amd64" "linux-image-${KVER_PKG}-amd64"
	"linux-source-${KVER_PKG}" liburing-dev trinity
	pkg-config man-db groff-base
	# Debian 12's default kernel (6.1), its headers and DKMS: make check
	# builds the modules for 6.1 and boots it, and builds through DKMS.
	linux-image-amd64 linux-headers-amd64 dkms
	# 6.12's PREEMPT_RT flavour: make check boots it too (KERNELS=rt).
	"linux-image-${KVER_PKG}-rt-amd64" "linux-headers-${KVER_PKG}-rt-amd64"
	# make deb and its checks in make check: the Debian packaging tools.
	debhelper dh-dkms lintian fakeroot
	# The example server's load (make check, make bench table 10).
	wrk
	# make bench's figures (bench/plot.py, run by /usr/bin/python3).
	python3-matplotlib
	# CRIU (3.17): its plugin header builds tools/criu/twheel_criu.so, and
	# make check's criu test checkpoints a process with it in the VM.
	criu
)
# From Debian sid, pinned so that nothing else comes from it: the source of
# Linux 7.2, from which tests/vm/build-kernel.sh builds make check's 7.2
# kernel (KERNELS=v72). sid's own 7.2 headers need its gcc-16 and glibc
# 2.38, which Debian 12 lacks, so they are not used.
SID_PKGS=(linux-source-7.2)
SID_LIST=/etc/apt/sources.list.d/twheel-sid.sources
SID_PIN=/etc/apt/preferences.d/twheel-sid

missing=()
for p in "${pkgs[@]}" "${SID_PKGS[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "twheel: missing host packages: ${missing[*]}" >&2
	echo "twheel: run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi

echo "twheel: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# sid as an extra source at priority 100: apt never upgrades to it or
# prefers it; only a package that exists nowhere else comes from it.
sid_new=0
if [ ! -f "$SID_LIST" ]; then
	cat >"$SID_LIST" <<'EOF2'
# twheel (tests/vm/setup-host.sh): for linux-source-7.2 only; pinned low.
Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF2
	sid_new=1
fi
if [ ! -f "$SID_PIN" ]; then
	cat >"$SID_PIN" <<'EOF2'
# twheel (tests/vm/setup-host.sh): nothing from sid unless asked for.
Package: *
Pin: release n=sid
Pin-Priority: 100
EOF2
fi
[ "$sid_new" = 0 ] || apt-get update >/dev/null
# The kernel image is only used as a VM guest: skip initramfs and bootloader
# hooks on the host, they are slow and may fail inside a container.
mkdir -p /etc/initramfs-tools/conf.d
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; then
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
