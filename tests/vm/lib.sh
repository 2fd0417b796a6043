# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers shared by the host-side scripts in tests/vm/. Source it; it sets
# TWHEEL_ROOT (the repository) and TWHEEL_BUILD (its build/ directory).

TWHEEL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TWHEEL_BUILD=${TWHEEL_BUILD:-$TWHEEL_ROOT/build}
export TWHEEL_ROOT TWHEEL_BUILD

msg() {
	echo "twheel: $*" >&2
}

die() {
	msg "$*"
	exit 1
}

# Seconds since the epoch, for timings.
now() {
	date +%s
}

# The newest installed distro kernel that can both boot in a VM and build
# modules: /boot/vmlinuz-<ver> plus /lib/modules/<ver>/build. Prints <ver>.
# With an argument, only versions that start with it ("6.1.": Debian 12's
# default kernel).
distro_version() {
	local d ver best= series=${1:-}
	for d in /lib/modules/*/build; do
		[ -f "$d/Makefile" ] || continue
		ver=${d#/lib/modules/}
		ver=${ver%/build}
		case "$ver" in "$series"*) ;; *) continue ;; esac
		[ -r "/boot/vmlinuz-$ver" ] || continue
		best+="$ver"$'\n'
	done
	[ -n "$best" ] || return 1
	printf '%s' "$best" | sort -V | tail -n1
}

# KDIR for the distro kernel; with "6.1.", for Debian 12's default one.
distro_kdir() {
	local ver
	ver=$(distro_version "${1:-}") || die "no distro kernel ${1:+$1* }with headers (/boot/vmlinuz-* + /lib/modules/*/build); run tests/vm/setup-host.sh"
	echo "/lib/modules/$ver/build"
}

distro_bzimage() {
	local ver
	ver=$(distro_version "${1:-}") || die "no distro kernel ${1:+$1* }with headers (/boot/vmlinuz-* + /lib/modules/*/build); run tests/vm/setup-host.sh"
	echo "/boot/vmlinuz-$ver"
}

# KDIR (and source tree) of the debug kernel; builds it once, cached.
debug_kdir() {
	"$TWHEEL_ROOT/tests/vm/build-kernel.sh"
}

kdir_for() {
	case "$1" in
	distro) distro_kdir ;;
	distro61) distro_kdir 6.1. ;;
	debug) debug_kdir ;;
	*) die "unknown kernel '$1' (distro, distro61 or debug)" ;;
	esac
}

bzimage_for() {
	case "$1" in
	distro) distro_bzimage ;;
	distro61) distro_bzimage 6.1. ;;
	debug) echo "$(debug_kdir)/arch/x86/boot/bzImage" ;;
	*) die "unknown kernel '$1' (distro, distro61 or debug)" ;;
	esac
}

# The kernel sources of the module, relative to the repository: the tracked
# and untracked-but-not-ignored *.c, *.h and Kbuild files at the top level
# and under tests/, samples/ and uapi/ (not userspace programs nor the
# libtwheel tests of tests/lib/).
module_sources() {
	(
		cd "$TWHEEL_ROOT" || exit
		if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			git ls-files --cached --others --exclude-standard -- \
				'*.c' '*.h' 'Kbuild' 'tests/*' 'samples/*' 'uapi/*'
		else
			find . -path ./build -prune -o -type f -print | sed 's|^\./||'
		fi
	) | grep -E '^([^/]+|(tests|samples|uapi)/.+)$' |
		grep -E '(\.c|\.h|(^|/)Kbuild)$' |
		grep -vE '^(tools|tests/userspace|tests/lib|tests/vm|build)/' |
		while IFS= read -r f; do
			[ -f "$TWHEEL_ROOT/$f" ] && echo "$f"
		done | sort -u
}

# Kernel console lines that mean something went wrong in the guest, even when
# the guest script finished: panics, oopses, WARN()s, sanitizer reports,
# debugobjects and lockdep splats, hung tasks. (kmemleak has its own test.)
CAUSE_RE='BUG:|WARNING:|ODEBUG:|Oops|KASAN:|UBSAN:|possible circular locking|possible recursive locking|inconsistent lock state|locking correctness validator|INFO: task .* blocked|INFO: rcu_.* stall|general protection fault'
PROBLEM_RE="Kernel panic|Call Trace:|$CAUSE_RE"

# Kernel messages on the console start with a timestamp; the guest's own
# output (which may quote a report, e.g. kmemleak's) does not.
KMSG_RE='^\[ *[0-9]+\.[0-9]+\] '

# Prints the kernel's problem lines of a console log (nothing if clean).
console_problems() {
	tr -d '\r' <"$1" | grep -aE "$KMSG_RE" | grep -aE "$PROBLEM_RE" || true
}

# One phrase naming the problem of a console log: the earliest report
# (sanitizer, debugobjects, lockdep, WARN, BUG, kmemleak, ...) and the panic
# it caused, if any.
problem_cause() {
	local log=$1 cause panic
	cause=$(tr -d '\r' <"$log" | grep -aE "$KMSG_RE" | grep -aE "$CAUSE_RE" |
		head -n1 | sed 's/^\[[^]]*\] *//') || true
	panic=$(grep -a -m1 'Kernel panic' "$log" | tr -d '\r' | sed 's/^\[[^]]*\] *//') || true
	if [ -n "$cause" ] && [ -n "$panic" ]; then
		echo "$cause => $panic"
	elif [ -n "$cause$panic" ]; then
		echo "$cause$panic"
	else
		echo "no kernel error in the console log"
	fi
}
