#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages on this host, from build to purge (make check runs it
# beside the guests; alone: tests/pkg/check-deb.sh, as root):
#   - make deb builds twheel-dkms, libtwheel1, libtwheel-dev, twheel-tools;
#   - lintian on them (and the debug symbol packages): any E: or W: fails;
#   - apt-get installs the four: DKMS builds twheel.ko in the postinst, and
#     it must then be installed, at the version of VERSION and for the right
#     kernel, for every kernel with a build tree (/lib/modules/*/build);
#     a kernel the postinst left out (dkms builds only for the running and
#     the newest kernel when the running one is installed) gets "dkms
#     install", as a kernel installed later gets "dkms autoinstall";
#   - the udev rule gives /dev/twheel the mode chardev.c creates it with;
#     no modules-load.d file is active, the documented example is there;
#   - the README's example.c builds with pkg-config against libtwheel-dev
#     and runs; twheelctl runs, linked with the packaged libtwheel.so.1;
#   - man twheelctl, man 7 twheel and a man 3 page render without warnings;
#   - apt-get purge removes it all: no file with "twheel" in its path is
#     left under /usr (so /lib/modules, /usr/src), /var/lib/dkms, /etc/udev,
#     /etc/modules-load.d or /etc/modprobe.d that was not there before.
# One "ok N - ..." or "not ok N - ..." line per check (details as "#"
# lines), then "1..N"; exits 1 if any check failed. About 90 s on 2 cores
# for three kernels, most of it DKMS: run it with nice. Leftovers of an
# interrupted run (the packages, or DKMS's twheel at this version, e.g.
# from make dkms) are removed first: the two must not run at the same
# time. Other versions in DKMS (another checkout's make dkms) are left be.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${TWHEEL_DEB_OUT:-$ROOT/build/deb}
LOGS=${TWHEEL_BUILD:-$ROOT/build}/logs
PKGS=(twheel-dkms libtwheel1 libtwheel-dev twheel-tools)
CFLAGS_CHECK=(-O2 -Wall -Wextra -Werror)
export MANWIDTH=80 MANPAGER=cat PAGER=cat LC_ALL=C.UTF-8
export DEBIAN_FRONTEND=noninteractive

tmp=$(mktemp -d "${TMPDIR:-/tmp}/twheel-deb-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ver=$(cat "$ROOT/VERSION")
# shellcheck source=tests/lib/tap.sh
. "$ROOT/tests/lib/tap.sh"

installed_pkgs() {
	local p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$p" 2>/dev/null |
			grep -v '^not-installed ' || true
	done
}

# What the packages may leave behind: every path with "twheel" in it, and
# which modules.dep lists a twheel module from DKMS (depmod's work). Other
# versions' DKMS trees are make dkms's (of another checkout), not ours.
host_state() {
	find /usr /var/lib/dkms /etc/udev /etc/modules-load.d /etc/modprobe.d \
		-path /usr/src/linux-source-\* -prune -o -path '*twheel*' -print 2>/dev/null |
		awk -v v="$ver" '$0 == "/var/lib/dkms/twheel" { next }
			/^\/usr\/src\/twheel-/ && index($0, "/usr/src/twheel-" v) != 1 { next }
			/^\/var\/lib\/dkms\/twheel\// && index($0, "/var/lib/dkms/twheel/" v) != 1 { next }
			{ print }' | sort
	grep -l 'updates/dkms/twheel\.ko' /lib/modules/*/modules.dep 2>/dev/null || true
}

# Kernels DKMS can build for: a build tree with its Makefile, as make dkms.
kernels() {
	local kdir
	for kdir in /lib/modules/*/build; do
		[ -f "$kdir/Makefile" ] || continue
		kdir=${kdir%/build}
		echo "${kdir##*/}"
	done
}

remove_leftovers() {
	if [ -n "$(installed_pkgs)" ]; then
		echo "# purging twheel packages left installed: $(installed_pkgs | tr '\n' ' ')"
		apt-get purge -y "${PKGS[@]}" >/dev/null 2>&1 || true
	fi
	# Only this version: make dkms in another checkout may be at work.
	if [ -d "/var/lib/dkms/twheel/$ver" ]; then
		echo "# removing twheel $ver from DKMS (an earlier make dkms or run)"
		dkms remove -m twheel -v "$ver" --all >/dev/null 2>&1 || true
		rm -rf "/var/lib/dkms/twheel/$ver"
		rmdir /var/lib/dkms/twheel 2>/dev/null || true
	fi
	rm -rf "/usr/src/twheel-$ver"
}

check_debs() {
	local p
	for p in "${PKGS[@]}"; do
		ls "$OUT/${p}_${ver}_"*.deb || return 1
	done
}

# lintian's tags of every package built, E: and W: failing; overrides
# (debian/*.lintian-overrides, each with its reason) are not shown.
check_lintian() {
	lintian --tag-display-limit 0 "$OUT"/*.changes >"$tmp/lintian" 2>&1 || true
	grep -v '^running with root privileges' "$tmp/lintian" || true
	! grep -q '^[EW]: ' "$tmp/lintian"
}

check_apt_install() {
	local debs=() p
	for p in "${PKGS[@]}"; do
		debs+=("$(ls "$OUT/${p}_${ver}_"*.deb)")
	done
	apt-get install -y --no-install-recommends "${debs[@]}" \
		>"$LOGS/deb-install.log" 2>&1 ||
		{ grep -v '^readelf: Warning' "$LOGS/deb-install.log" | tail -n 40; return 1; }
	! installed_pkgs | grep -v '^installed ' >/dev/null || { installed_pkgs; return 1; }
}

# check_kernel K: DKMS has twheel $ver installed for K, as a .ko for K
# (vermagic) at VERSION's version (MODULE_VERSION) in updates/dkms/.
check_kernel() {
	local k=$1 ko
	# (dkms status's stderr: readelf's notes on .ko.xz modules, noise)
	dkms status -m twheel -v "$ver" -k "$k" 2>/dev/null >"$tmp/status"
	cat "$tmp/status"
	grep -q ': installed' "$tmp/status" || return 1
	# twheel.ko, or .ko.xz etc. where DKMS is set to compress
	for ko in "/lib/modules/$k/updates/dkms/twheel.ko"*; do
		[ -e "$ko" ] && break
	done
	[ -e "$ko" ] || { echo "no /lib/modules/$k/updates/dkms/twheel.ko"; return 1; }
	echo "$ko: version $(modinfo -F version "$ko"), vermagic $(modinfo -F vermagic "$ko")"
	[ "$(modinfo -F version "$ko")" = "$ver" ] || return 1
	modinfo -F vermagic "$ko" | grep "^$k " >/dev/null
}

# Whatever DKMS said, for a build that failed.
dkms_log() {
	local log=/var/lib/dkms/twheel/$ver/build/make.log
	[ -f "$log" ] && tail -n 30 "$log"
	return 1
}

# The rule's MODE is the one chardev.c gives its misc device.
check_udev_rule() {
	local rule=/lib/udev/rules.d/60-twheel.rules code mode
	code=$(sed -n 's/^[[:space:]]*\.mode[[:space:]]*=[[:space:]]*\(0[0-7]*\),.*/\1/p' \
		"$ROOT/chardev.c")
	mode=$(sed -n '/^[^#]*KERNEL=="twheel"/s/.*MODE="\([0-7]*\)".*/\1/p' "$rule")
	echo "chardev.c: .mode = $code; $rule: MODE=\"$mode\""
	[ -n "$code" ] && [ "$code" = "$mode" ]
}

check_no_autoload() {
	[ ! -e /etc/modules-load.d/twheel.conf ] &&
		! grep -rqs '^twheel' /etc/modules-load.d /etc/modules &&
		grep -qx twheel /usr/share/doc/twheel-dkms/examples/modules-load.d/twheel.conf
}

# The example of README.md, between its marker comments, without fences
# (as tests/lib/check-install.sh).
extract_example() {
	sed -n '/^<!-- example\.c begin/,/^<!-- example\.c end/p' \
		"$ROOT/README.md" | sed -e '1d' -e '$d' | grep -v '^```'
}

check_pkg_config() {
	pkg-config --cflags --libs libtwheel
	[ "$(pkg-config --modversion libtwheel)" = "$ver" ]
}

# Without /dev/twheel the example must say ENOENT and exit 1; with it,
# print its record and exit 0.
example_runs() {
	local rc=0
	"$1" >"$tmp/run.out" 2>&1 || rc=$?
	cat "$tmp/run.out"
	if [ -e /dev/twheel ]; then
		[ "$rc" -eq 0 ] && grep -q '^timer .* ns late$' "$tmp/run.out"
	else
		[ "$rc" -eq 1 ] &&
			grep -qx 'twheel_open: No such file or directory' "$tmp/run.out"
	fi
}

# needs_packaged_lib BINARY: the dynamic linker gives BINARY libtwheel1's
# libtwheel.so.1 (dpkg knows the /usr path; ldd may say /lib, merged /usr).
needs_packaged_lib() {
	local lib
	ldd "$1" >"$tmp/ldd" || return 1
	cat "$tmp/ldd"
	lib=$(sed -n 's/^[[:space:]]*libtwheel\.so\.1 => \(\/[^ ]*\) .*/\1/p' "$tmp/ldd")
	[ -n "$lib" ] || return 1
	{ dpkg -S "$lib" || dpkg -S "$(realpath "$lib")"; } 2>/dev/null |
		grep '^libtwheel1:' >/dev/null
}

check_twheelctl() {
	needs_packaged_lib /usr/bin/twheelctl || return 1
	/usr/bin/twheelctl --help | grep '^usage: twheelctl COMMAND' >/dev/null
}

# man -w finds the page where the package put it, and it renders; any
# warning (stderr) fails it (quiet).
check_man() {
	local path
	path=$(man -w "$@") || return 1
	case "$path" in /usr/share/man/*) ;; *) echo "found $path" >&2; return 1 ;; esac
	man --warnings "$@" >"$tmp/page" && [ -s "$tmp/page" ]
}

check_purged() {
	apt-get purge -y "${PKGS[@]}" >"$LOGS/deb-purge.log" 2>&1 ||
		{ grep -v '^readelf: Warning' "$LOGS/deb-purge.log" | tail -n 40; return 1; }
	[ -z "$(installed_pkgs)" ] || { installed_pkgs; return 1; }
}

check_dkms_gone() {
	dkms status -m twheel -v "$ver" 2>/dev/null >"$tmp/status"
	cat "$tmp/status"
	[ ! -s "$tmp/status" ] && [ ! -e "/var/lib/dkms/twheel/$ver" ]
}

check_host_as_before() {
	host_state >"$tmp/after"
	diff "$tmp/before" "$tmp/after"
}

main() {
	local tool missing=() k ks=() t0 deb
	echo "TAP version 13"
	[ "$(id -u)" -eq 0 ] || { echo "Bail out! needs root (apt-get install, dkms)"; exit 1; }
	for tool in dpkg-buildpackage dh_dkms lintian dkms apt-get cc pkg-config man; do
		command -v "$tool" >/dev/null || missing+=("$tool")
	done
	if [ ${#missing[@]} -ne 0 ]; then
		echo "Bail out! missing ${missing[*]} (run tests/vm/setup-host.sh)"
		exit 1
	fi
	mkdir -p "$LOGS"
	mapfile -t ks < <(kernels)
	echo "# twheel $ver; kernels with a build tree: ${ks[*]:-none}"
	remove_leftovers
	host_state >"$tmp/before"
	sed 's/^/# there before: /' "$tmp/before"

	t0=$(date +%s)
	if ! t "make deb builds ${PKGS[*]} $ver" make -s -C "$ROOT" deb; then
		echo "1..$n"
		exit 1
	fi
	echo "# make deb: $(($(date +%s) - t0)) s"
	for deb in "$OUT"/*.deb; do
		echo "# ${deb##*/}: $(stat -c %s "$deb") bytes, Installed-Size $(dpkg-deb -f "$deb" Installed-Size) KiB"
	done
	t "lintian: no error or warning" check_lintian

	t0=$(date +%s)
	t "apt-get install ./*.deb (DKMS builds in the postinst)" check_apt_install
	echo "# install: $(($(date +%s) - t0)) s"
	[ ${#ks[@]} -gt 0 ] || not_ok "a kernel with a build tree to build for"
	for k in "${ks[@]}"; do
		if ! dkms status -m twheel -v "$ver" -k "$k" 2>/dev/null | grep ': installed' >/dev/null; then
			# What dkms autoinstall -k does for a kernel installed later,
			# for twheel alone: other modules (make dkms's) are not ours.
			echo "# $k: not built by the postinst; dkms install -m twheel -v $ver -k $k"
			dkms install -m twheel -v "$ver" -k "$k" >"$tmp/autoinstall" 2>&1 || true
		fi
		if check_kernel "$k" >"$tmp/out" 2>&1; then
			ok "dkms: twheel.ko $ver installed for $k"
			sed 's/^/# /' "$tmp/out"
		else
			dkms_log >>"$tmp/out" || true
			not_ok "dkms: twheel.ko $ver installed for $k" "$tmp/out"
		fi
	done
	t "udev rule: /dev/twheel's mode as chardev.c creates it" check_udev_rule
	t "no modules-load.d file active, the example shipped" check_no_autoload

	extract_example >"$tmp/example.c"
	t "pkg-config libtwheel: version $ver" check_pkg_config
	# shellcheck disable=SC2046 # pkg-config's words are separate arguments
	t "README example.c builds with pkg-config libtwheel" \
		cc "${CFLAGS_CHECK[@]}" -o "$tmp/example" "$tmp/example.c" \
		$(pkg-config --cflags --libs libtwheel)
	t "example links libtwheel1's libtwheel.so.1" needs_packaged_lib "$tmp/example"
	t "example runs$([ -e /dev/twheel ] || echo ' (no /dev/twheel: ENOENT)')" \
		example_runs "$tmp/example"
	t "twheelctl --help, linked with the packaged libtwheel.so.1" check_twheelctl
	quiet "man twheelctl renders" check_man twheelctl
	quiet "man 7 twheel renders" check_man 7 twheel
	quiet "man 3 twheel_submit_short renders (a link)" check_man 3 twheel_submit_short

	t0=$(date +%s)
	t "apt-get purge ${PKGS[*]}" check_purged
	echo "# purge: $(($(date +%s) - t0)) s"
	t "dkms: no twheel $ver left (status, /var/lib/dkms/twheel/$ver)" check_dkms_gone
	t "host as before: no twheel file left (/usr, /var/lib/dkms, /etc)" \
		check_host_as_before
	# Whatever the purge left, so that the next run starts clean.
	remove_leftovers >/dev/null

	echo "1..$n"
	echo "# deb-check: $((n - nfail)) passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}

main "$@"
