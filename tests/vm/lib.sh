# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers shared by the host-side scripts in tests/vm/. Source it; it sets
# TWHEEL_ROOT (the repository) and TWHEEL_BUILD (its build/ directory).

TWHEEL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TWHEEL_BUILD=${TWHEEL_BUILD:-$TWHEEL_ROOT/build}
export TWHEEL_ROOT TWHEEL_BUILD

msg() { echo "twheel: $*" >&2; }
die() { msg "$*"; exit 1; }
now() { date +%s; }	# seconds since the epoch

# The newest installed distro kernel that can both boot in a VM and build
# modules (/boot/vmlinuz-<ver> and /lib/modules/<ver>/build) whose version
# starts with $1 ("6.1.": Debian 12's default) and, with $2, ends with it
# ("-rt-amd64"; without $2, RT kernels are left out). Prints <ver>.
distro_version() {
	local d ver best=
	for d in /lib/modules/*/build; do
		ver=${d#/lib/modules/}
		ver=${ver%/build}
		[ -f "$d/Makefile" ] && [ -r "/boot/vmlinuz-$ver" ] || continue
		case "$ver" in "${1:-}"*"${2:-}") ;; *) continue ;; esac
		[ -n "${2:-}" ] || case "$ver" in *-rt-*) continue ;; esac
		best+="$ver"$'\n'
	done
	[ -n "$best" ] || die "no distro kernel ${1:+$1* }with headers (/boot/vmlinuz-* + /lib/modules/*/build); run tests/vm/setup-host.sh"
	printf '%s' "$best" | sort -V | tail -n1
}

# The kernels a VM can run: KDIR (a build tree for modules) and image. debug,
# rtdebug and kcsan are built once from linux-source-6.12 and cached; v72
# from linux-source-7.2 (Debian sid: tests/vm/setup-host.sh), since sid's
# own 7.2 headers need a newer gcc and glibc than Debian 12 has.
kernel_kdir() {
	case "$1" in
	distro) echo "/lib/modules/$(distro_version)/build" ;;
	distro61) echo "/lib/modules/$(distro_version 6.1.)/build" ;;
	rt) echo "/lib/modules/$(distro_version 6.12. -rt-amd64)/build" ;;
	debug) "$TWHEEL_ROOT/tests/vm/build-kernel.sh" debug.config ;;
	rtdebug) "$TWHEEL_ROOT/tests/vm/build-kernel.sh" debug.config rt.config ;;
	kcsan) "$TWHEEL_ROOT/tests/vm/build-kernel.sh" debug.config kcsan.config ;;
	v72) TWHEEL_KSRC=7.2 "$TWHEEL_ROOT/tests/vm/build-kernel.sh" v72.config ;;
	*) die "unknown kernel '$1' (distro, distro61, rt, v72, debug, rtdebug, kcsan)" ;;
	esac
}

# Makes the kernel tree $1 (built by build-kernel.sh) an installed kernel's
# headers, /lib/modules/<its release>/build, as a linux-headers package
# would, so that DKMS builds for it; the tree has no modules of its own
# there (the VM loads them from its initramfs). Idempotent; needs root.
register_kernel_tree() {
	local rel
	rel=$(cat "$1/include/config/kernel.release") || return
	mkdir -p "/lib/modules/$rel" && ln -sfn "$1" "/lib/modules/$rel/build"
}

kernel_image() {
	case "$1" in
	distro) echo "/boot/vmlinuz-$(distro_version)" ;;
	distro61) echo "/boot/vmlinuz-$(distro_version 6.1.)" ;;
	rt) echo "/boot/vmlinuz-$(distro_version 6.12. -rt-amd64)" ;;
	*) echo "$(kernel_kdir "$1")/arch/x86/boot/bzImage" ;;
	esac
}

# "90", "90s", "10m", "1h" -> seconds.
seconds() {
	case "$1" in
	*[0-9]s) echo "${1%s}" ;;
	*[0-9]m) echo $((${1%m} * 60)) ;;
	*[0-9]h) echo $((${1%h} * 3600)) ;;
	*[0-9]) echo "$1" ;;
	*) die "bad duration '$1' (examples: 90s, 10m, 1h)" ;;
	esac
}

# QEMU's accelerator: $TWHEEL_ACCEL (kvm, tcg or icount), else KVM if a kernel
# boots under it until it panics for lack of an init (a few seconds; at
# most 20), else TCG. The answer is cached per host kernel and QEMU.
accel_args() {
	local log cache
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/twheel/accel-$(uname -r)-$(qemu-system-x86_64 --version | head -n1 | tr -cd '0-9.')
	[ -n "${TWHEEL_ACCEL:-}" ] || [ ! -w /dev/kvm ] || TWHEEL_ACCEL=$(cat "$cache" 2>/dev/null || true)
	if [ -z "${TWHEEL_ACCEL:-}" ]; then
		TWHEEL_ACCEL=tcg
		log=$(mktemp)
		if [ -w /dev/kvm ] && (timeout -k 2 20 qemu-system-x86_64 -accel kvm \
			-cpu max -m 256 -nographic -no-reboot -monitor none -nic none \
			-serial "file:$log" -kernel "$(kernel_image distro)" \
			-append "console=ttyS0 panic=-1 rdinit=/none" </dev/null \
			>/dev/null 2>&1 || exit 1) 2>/dev/null && grep -aq 'Kernel panic' "$log"; then
			TWHEEL_ACCEL=kvm
		fi
		rm -f "$log"
		mkdir -p "${cache%/*}" && echo "$TWHEEL_ACCEL" >"$cache"
	fi
	export TWHEEL_ACCEL
	case "$TWHEEL_ACCEL" in
	kvm) echo "-accel kvm -cpu max" ;;
	tcg) echo "-accel tcg,thread=multi -cpu max" ;;
	# Deterministic: one thread runs every vCPU, and the guest's clocks
	# count its instructions (1 ns each): BENCHMARKS.md's instruction
	# counts. Only for make bench's tables 1-3; nothing else keeps time.
	icount) echo "-accel tcg,thread=single -icount shift=0,sleep=off -cpu max" ;;
	*) die "TWHEEL_ACCEL must be kvm, tcg or icount, not '$TWHEEL_ACCEL'" ;;
	esac
}

# The kernel sources of the module, relative to the repository: the tracked
# and untracked-but-not-ignored *.c, *.h and Kbuild files at the top level
# and under tests/, samples/ and uapi/ (not userspace programs nor the
# libtwheel tests of tests/lib/), and VERSION, which Kbuild reads.
module_sources() {
	local f
	(cd "$TWHEEL_ROOT" && { git ls-files -co --exclude-standard 2>/dev/null ||
		find . -path ./build -prune -o -type f -print | sed 's|^\./||'; }) |
		grep -E '^((tests|samples|uapi)/)?[^/]+(\.[ch]|/Kbuild|^Kbuild)$|^((tests|samples)/)?Kbuild$|^VERSION$' |
		while IFS= read -r f; do
			[ ! -f "$TWHEEL_ROOT/$f" ] || echo "$f"
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

# The kernel's first report of a console log, condensed: its first line,
# RCU's lines (a stall's ticks and CPUs), the CPU and RIP lines, the
# <IRQ>/<TASK> marks and one "function+offset" line per backtrace frame
# (no addresses, registers nor timestamps).
console_report() {
	tr -d '\r' <"$1" | grep -aE "$KMSG_RE" | sed -E "s/$KMSG_RE//" |
		sed -E -n "/$CAUSE_RE/,\$p" |
		grep -aE "$CAUSE_RE|^rcu: |^[[:space:]]*\\(t=[0-9]|^CPU: |^RIP: |^ *</?[A-Z]+>\$|^ *(\\? )?[A-Za-z_][A-Za-z0-9_.]*\+0x" |
		sed -E 's/^ *(\? )?([A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+)\/0x[0-9a-f]+/  \1\2/' || true
}

# One phrase naming the problem of a console log: the earliest report
# (sanitizer, debugobjects, lockdep, WARN, BUG, ...) and the panic it caused.
problem_cause() {
	local cause panic
	cause=$(console_problems "$1" | grep -aE "$CAUSE_RE" | head -n1 | sed 's/^\[[^]]*\] *//')
	panic=$(console_problems "$1" | grep -a -m1 'Kernel panic' | sed 's/^\[[^]]*\] *//')
	echo "${cause}${cause:+${panic:+ => }}${panic:-}" | grep . ||
		echo "no kernel error in the console log"
}
