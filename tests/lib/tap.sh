# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# TAP output for the host-side check scripts (tests/lib/check-install.sh,
# tests/pkg/check-deb.sh), which check.sh's `step --ktap` parses. Source it
# after setting $tmp (a scratch directory); it keeps the counts in n and
# nfail.

n=0
nfail=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

# not_ok NAME [FILE]: FILE's lines become the diagnostics.
not_ok() {
	n=$((n + 1))
	nfail=$((nfail + 1))
	echo "not ok $n - $1"
	if [ -n "${2:-}" ] && [ -s "$2" ]; then
		sed 's/^/#   /' "$2"
	fi
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# t NAME CMD...: one check, passing iff CMD succeeds; its output is shown
# only if it fails.
t() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		ok "$name"
	else
		not_ok "$name" "$tmp/out"
	fi
}

# quiet NAME CMD...: passes iff CMD succeeds and writes nothing to stderr
# (its stdout is thrown away): warnings fail.
quiet() {
	local name=$1
	shift
	if "$@" 2>"$tmp/err" >/dev/null && [ ! -s "$tmp/err" ]; then
		ok "$name"
	else
		not_ok "$name" "$tmp/err"
	fi
}
