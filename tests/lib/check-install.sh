#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make lib-check: libtwheel on the host, no VM and no module needed.
#   tests/lib/check-install.sh
# Installs with `make install DESTDIR=<tmp> PREFIX=/usr`, builds the
# README's example.c against the installed copy through pkg-config
# (--define-prefix relocates it into DESTDIR), linked shared, static and
# fully static, and runs it; checks the soname and that the exports are
# exactly the names of lib/libtwheel.map at their versions (LIBTWHEEL_1.x), each
# documented in libtwheel.h and reachable with man; renders every man page
# with man and groff, any warning failing; runs tests/lib/libtwheel_unit.c
# (the library against a model of the ioctls); uninstalls.
#
# TWHEEL_LIBTWHEEL_EXAMPLE_OUT=PATH: also copy the fully static example to
# PATH (its directory is created), one more check; make check puts it in
# the VM as /bin/libtwheel_example. A stale copy is removed first, so PATH
# exists afterwards only if this run built it.
# One "ok N - ..." or "not ok N - ..." line per check (details as "#"
# lines), then "1..N"; exits 1 if any check failed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$ROOT/lib
tmp=$(mktemp -d "${TMPDIR:-/tmp}/twheel-lib-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
DEST=$tmp/dest
PC_DIR=$DEST/usr/lib/pkgconfig
MAN_DIR=$DEST/usr/share/man
CFLAGS_CHECK=(-O2 -Wall -Wextra -Werror)
EXAMPLE_OUT=${TWHEEL_LIBTWHEEL_EXAMPLE_OUT:-}
export MANWIDTH=80 MANPAGER=cat PAGER=cat LC_ALL=C.UTF-8

# shellcheck source=tests/lib/tap.sh
. "$ROOT/tests/lib/tap.sh"

pc() {
	PKG_CONFIG_PATH=$PC_DIR pkg-config --define-prefix "$@" libtwheel
}

# The names of the map's global section: the API.
api_names() {
	api_versions | sed 's/@@.*//'
}

# name@@NODE for every name of lib/libtwheel.map
api_versions() {
	awk '/^LIBTWHEEL_[0-9.]+ *\{/ { node = $1 }
	     /^[[:space:]]*local:/ { node = "" }
	     node && /^[[:space:]]*[a-z_0-9]+;/ { sub(/;.*/, ""); print $1 "@@" node }' \
		"$LIB/libtwheel.map"
}

# The example of README.md, between its marker comments, without fences.
extract_example() {
	sed -n '/^<!-- example\.c begin/,/^<!-- example\.c end/p' \
		"$ROOT/README.md" | sed -e '1d' -e '$d' | grep -v '^```'
}

check_installed_files() {
	local f missing=0
	for f in usr/lib/libtwheel.so.1 usr/lib/libtwheel.so \
		usr/lib/libtwheel.a usr/lib/pkgconfig/libtwheel.pc \
		usr/include/libtwheel.h usr/include/twheel/twheel_uapi.h \
		usr/share/man/man7/twheel.7; do
		[ -e "$DEST/$f" ] || { echo "missing $f"; missing=1; }
	done
	for f in "$LIB"/man/*.3; do
		[ -e "$MAN_DIR/man3/${f##*/}" ] || { echo "missing ${f##*/}"; missing=1; }
	done
	cmp "$ROOT/uapi/twheel.h" "$DEST/usr/include/twheel/twheel_uapi.h" ||
		missing=1
	return "$missing"
}

check_pkg_config() {
	local flags ver want
	flags=$(pc --cflags --libs) || return 1
	echo "pkg-config: $flags"
	ver=$(pc --modversion) || return 1
	want=$(cat "$ROOT/VERSION")
	[ "$ver" = "$want" ] || { echo "version $ver, VERSION says $want"; return 1; }
	case " $flags " in
	*" -I$DEST/usr/include "*"-L$DEST/usr/lib "*) ;;
	*) echo "flags do not point into DESTDIR"; return 1 ;;
	esac
}

# needs_libtwheel BINARY: 0 iff BINARY has libtwheel.so.1 as NEEDED.
needs_libtwheel() {
	readelf -d "$1" | grep -q 'NEEDED.*\[libtwheel\.so\.1\]'
}

# run_example BINARY: without /dev/twheel the example must say ENOENT and
# exit 1; with it, print its record and exit 0.
run_example() {
	local rc=0
	LD_LIBRARY_PATH=$DEST/usr/lib "$1" || rc=$?
	if [ -e /dev/twheel ]; then
		[ "$rc" -eq 0 ]
	else
		[ "$rc" -eq 1 ]
	fi
}

check_run_output() {
	if [ -e /dev/twheel ]; then
		grep -q '^timer .* ns late$' "$1"
	else
		grep -qx 'twheel_open: No such file or directory' "$1"
	fi
}

example_runs() {
	run_example "$1" >"$tmp/run.out" 2>&1
	local rc=$?
	cat "$tmp/run.out"
	[ "$rc" -eq 0 ] && check_run_output "$tmp/run.out"
}

# copy_example BINARY: to $EXAMPLE_OUT, creating its directory.
copy_example() {
	[ -x "$1" ] || { echo "$1 was not built"; return 1; }
	mkdir -p "$(dirname "$EXAMPLE_OUT")" && cp "$1" "$EXAMPLE_OUT"
}

check_exports() {
	local got want bad
	# "T name@@LIBTWHEEL_1.x" for every export, x its node in the map;
	# the version nodes themselves are absolute symbols.
	nm -D --defined-only "$DEST/usr/lib/libtwheel.so.1" >"$tmp/nm" || return 1
	bad=$(grep -vE '^[0-9a-f]+ (T [a-z_0-9]+@@LIBTWHEEL_1\.[0-9]+|A LIBTWHEEL_1\.[0-9]+)$' "$tmp/nm")
	[ -z "$bad" ] || { echo "unexpected: $bad"; return 1; }
	want=$(api_versions | sort)
	got=$(sed -n 's/^[0-9a-f]* T \(.*\)$/\1/p' "$tmp/nm" | sort)
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
	[ -n "$want" ]
}

check_static_exports() {
	local got want
	want=$(api_names | sort)
	got=$(nm --defined-only --extern-only "$DEST/usr/lib/libtwheel.a" |
		sed -n 's/^[0-9a-f]* [A-Z] //p' | sort)
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
}

check_soname() {
	readelf -d "$DEST/usr/lib/libtwheel.so.1" |
		grep -q 'SONAME.*\[libtwheel\.so\.1\]' &&
		[ "$(readlink "$DEST/usr/lib/libtwheel.so")" = libtwheel.so.1 ]
}

# Every exported function has a prototype and a kernel-doc comment; the
# inline ring ops' prototypes open with LIBTWHEEL_RING_INLINE.
check_header_docs() {
	local name rc=0
	for name in $(api_names); do
		grep -q "^ \* $name() - " "$LIB/libtwheel.h" ||
			{ echo "no kernel-doc for $name"; rc=1; }
		grep -qE "^(LIBTWHEEL_RING_INLINE )?(int|void|uint64_t) $name\(" \
			"$LIB/libtwheel.h" ||
			{ echo "no prototype for $name"; rc=1; }
	done
	return "$rc"
}

# Every exported name (and twheel(7)) opens with man, through the ".so"
# pages of install, without warnings.
check_man_names() {
	local name rc=0
	for name in $(api_names); do
		if ! man --warnings -M "$MAN_DIR" 3 "$name" >"$tmp/page" 2>"$tmp/err" ||
			[ -s "$tmp/err" ] || ! grep -q "$name" "$tmp/page"; then
			echo "man 3 $name:"
			cat "$tmp/err"
			rc=1
		fi
	done
	if ! man --warnings -M "$MAN_DIR" 7 twheel >/dev/null 2>"$tmp/err" ||
		[ -s "$tmp/err" ]; then
		echo "man 7 twheel:"
		cat "$tmp/err"
		rc=1
	fi
	return "$rc"
}

# Users may compile in strict ISO C: the header must not need POSIX.
check_strict_c() {
	printf '#include <libtwheel.h>\nint main(void) { return 0; }\n' |
		cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only \
		-x c -I"$DEST/usr/include" -
}

check_cxx() {
	# shellcheck disable=SC2046 # pkg-config's words are separate arguments
	echo '#include <libtwheel.h>' |
		g++ -fsyntax-only -Wall -Wextra -Werror -x c++ $(pc --cflags) -
}

check_uninstall() {
	make -s -C "$LIB" uninstall DESTDIR="$DEST" PREFIX=/usr || return 1
	find "$DEST" -type f -o -type l | grep . && return 1
	return 0
}

main() {
	local tool missing=() page
	echo "TAP version 13"
	[ -z "$EXAMPLE_OUT" ] || rm -f "$EXAMPLE_OUT"
	for tool in cc make pkg-config nm readelf man groff; do
		command -v "$tool" >/dev/null || missing+=("$tool")
	done
	if [ ${#missing[@]} -ne 0 ]; then
		echo "Bail out! missing ${missing[*]} (apt-get install build-essential pkg-config man-db groff-base)"
		exit 1
	fi

	t "make install DESTDIR=\$tmp PREFIX=/usr" \
		make -s -C "$ROOT" install DESTDIR="$DEST" PREFIX=/usr
	t "installed files, twheel_uapi.h a copy of uapi/twheel.h" check_installed_files
	t "pkg-config --define-prefix finds libtwheel in DESTDIR" check_pkg_config

	extract_example >"$tmp/example.c"
	t "README.md has example.c between its markers" grep -q '^int main(void)$' "$tmp/example.c"

	# shellcheck disable=SC2046 # pkg-config's words are separate arguments
	t "example.c builds against libtwheel.so" \
		cc "${CFLAGS_CHECK[@]}" -o "$tmp/example-shared" "$tmp/example.c" \
		$(pc --cflags --libs)
	t "example-shared needs libtwheel.so.1" needs_libtwheel "$tmp/example-shared"
	t "example-shared runs$([ -e /dev/twheel ] || echo ' (no /dev/twheel: ENOENT)')" \
		example_runs "$tmp/example-shared"

	# shellcheck disable=SC2046
	t "example.c builds against libtwheel.a" \
		cc "${CFLAGS_CHECK[@]}" -o "$tmp/example-static" "$tmp/example.c" \
		$(pc --cflags --libs --static | sed 's/-ltwheel/-l:libtwheel.a/')
	t "example-static does not need libtwheel.so" \
		bash -c "! readelf -d '$tmp/example-static' | grep -q libtwheel"
	t "example-static runs" example_runs "$tmp/example-static"
	# shellcheck disable=SC2046
	t "example.c builds fully static (cc -static)" \
		cc -static "${CFLAGS_CHECK[@]}" -o "$tmp/example-fullstatic" \
		"$tmp/example.c" $(pc --cflags --libs --static)
	t "example-fullstatic runs" example_runs "$tmp/example-fullstatic"
	if [ -n "$EXAMPLE_OUT" ]; then
		t "example-fullstatic copied to $EXAMPLE_OUT" \
			copy_example "$tmp/example-fullstatic"
	fi

	t "soname libtwheel.so.1, libtwheel.so -> libtwheel.so.1" check_soname
	t "nm -D: exactly lib/libtwheel.map's names, at their nodes" check_exports
	t "libtwheel.a: no other global symbol" check_static_exports
	t "libtwheel.h: a prototype and kernel-doc for every export" check_header_docs
	t "libtwheel.h compiles as ISO C99 (-pedantic-errors)" check_strict_c
	if command -v g++ >/dev/null; then
		t "libtwheel.h compiles as C++" check_cxx
	else
		skip "libtwheel.h compiles as C++" "no g++"
	fi

	for page in "$LIB"/man/*.[37]; do
		quiet "man --warnings -l ${page#"$ROOT"/}" \
			man --warnings=w -l "$page"
		quiet "groff -man -ww ${page#"$ROOT"/}" \
			groff -man -Tutf8 -ww -z "$page"
	done
	t "man 3 NAME opens a page for every export, man 7 twheel" check_man_names

	# shellcheck disable=SC2046
	t "libtwheel_unit.c builds against libtwheel.so" \
		cc "${CFLAGS_CHECK[@]}" -o "$tmp/unit-shared" \
		"$ROOT/tests/lib/libtwheel_unit.c" $(pc --cflags --libs)
	t "unit tests, libtwheel.so (ioctl() replaced by a model)" \
		env LD_LIBRARY_PATH="$DEST/usr/lib" "$tmp/unit-shared"
	# shellcheck disable=SC2046
	t "libtwheel_unit.c builds against libtwheel.a" \
		cc "${CFLAGS_CHECK[@]}" -o "$tmp/unit-static" \
		"$ROOT/tests/lib/libtwheel_unit.c" \
		$(pc --cflags --libs --static | sed 's/-ltwheel/-l:libtwheel.a/')
	t "unit tests, libtwheel.a" "$tmp/unit-static"

	t "make -C lib uninstall leaves no file" check_uninstall

	echo "1..$n"
	echo "# lib-check: $((n - nfail)) passed, $nfail failed"
	[ "$nfail" -eq 0 ]
}

main "$@"
