#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make kcsan: the torture on a kernel with KCSAN, and every data race it
# reported.
#
#   tests/vm/kcsan.sh [--duration 3m]
#
# Builds (once, cached) the debug kernel with tests/vm/kcsan.config on top,
# runs tests/vm/vm.sh torture kcsan (the in-kernel and the /dev/twheel
# torture with CPU hotplug; KCSAN reports do not panic the guest there),
# then lists the KCSAN reports of the console log: each
# distinct race once, with how often it was reported and the top frames of
# both accesses. A race is twheel's when one of the racing accesses is made
# by twheel's code: the top frame of its stack is in twheel.ko or
# twheel_torture.ko. A race of the kernel's own with twheel further down a
# stack (say, hrtimer internals interrupting a twheel callback) is listed
# as the kernel's, marked "twheel on the stack". The list is also written to
# build/logs/kcsan-races.txt. Exit status 1 if the torture failed or a race
# involves twheel; races elsewhere in the kernel are listed, not counted.
# Before the torture the guest plants a race (twheel_torture.ko
# kcsan_canary=1, functions tt_canary_*): KCSAN must report it, else the
# run proves nothing and fails; it is not counted as twheel's.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

main() {
	local duration=${DURATION:-3m} rc=0 races=0 log out
	while [ $# -gt 0 ]; do
		case "$1" in
		--duration) duration=$2; shift 2 ;;
		*) die "kcsan.sh: unknown argument '$1'" ;;
		esac
	done
	"$TWHEEL_ROOT/tests/vm/vm.sh" torture kcsan --duration "$duration" \
		--env TWHEEL_KCSAN=1 || rc=$?
	log=$TWHEEL_BUILD/logs/kcsan-torture.log
	out=$TWHEEL_BUILD/logs/kcsan-races.txt
	[ -f "$log" ] || die "no $log"
	python3 - "$log" "$out" <<'PY' || races=$?
import re, sys

log, out = sys.argv[1], sys.argv[2]
ts = re.compile(r'^\[ *\d+\.\d+\] ?')
lines = [ts.sub('', l.rstrip('\r\n')) for l in open(log, errors='replace')
         if ts.match(l)]
reports, cur = [], None
for l in lines:
    if l.startswith('=' * 20):
        if cur and any('BUG: KCSAN:' in x for x in cur):
            reports.append(cur)
        cur = []
    elif cur is not None:
        cur.append(l)
if cur and any('BUG: KCSAN:' in x for x in cur):
    reports.append(cur)

ours = re.compile(r'\[(twheel|twheel_torture)\]')
access = re.compile(r'^(race at unknown origin, with )?'
                    r'(read|write|read-write|assert no accesses|assert no writes)'
                    r'.* (by task|by interrupt|to 0x)')
races = {}
for r in reports:
    title = next(x for x in r if 'BUG: KCSAN:' in x).split('BUG: KCSAN: ', 1)[1]
    acc, frames = [], None
    for l in r:
        if access.match(l):
            frames = []
            acc.append((l, frames))
        elif frames is not None and l.startswith(' ') and '+0x' in l:
            if len(frames) < 5:
                frames.append(l.strip().split('+')[0] +
                              (' [%s]' % m.group(1) if (m := ours.search(l)) else ''))
        elif not l.strip():
            frames = None
    key = title
    e = races.setdefault(key, {'n': 0, 'acc': acc, 'ours': False, 'stack': False})
    e['n'] += 1
    e['ours'] |= any(fr and '[twheel' in fr[0] for _, fr in acc)
    e['stack'] |= any(ours.search(l) for l in r)

canary = {k: v for k, v in races.items() if 'tt_canary_' in k}
mine = {k: v for k, v in races.items() if v['ours'] and k not in canary}
near = {k: v for k, v in races.items() if v['stack'] and k not in canary and k not in mine}
with open(out, 'w') as f:
    f.write('KCSAN: %d reports, %d distinct races: %d in twheel, %d of the kernel with twheel on the stack, %d elsewhere; the planted race %s\n'
            % (len(reports), len(races), len(mine), len(near),
               len(races) - len(mine) - len(near) - len(canary),
               'was reported' if canary else 'was NOT reported: this run proves nothing'))
    for k, v in sorted(races.items(), key=lambda kv: (kv[0] not in mine, kv[0] not in near, kv[0])):
        tag = ('[canary]' if k in canary else '[twheel]' if k in mine else
               '[kernel, twheel on the stack]' if k in near else '[kernel]')
        f.write('\n%s %s (%d reports)\n' % (tag, k, v['n']))
        for a, fr in v['acc']:
            f.write('    %s\n      %s\n' % (a, ' < '.join(fr)))
print(open(out).read(), end='')
sys.exit(1 if mine else 2 if not canary else 0)
PY
	msg "KCSAN races: $out"
	if [ "$rc" -ne 0 ]; then
		msg "the torture on the KCSAN kernel failed (status $rc)"
		return 1
	fi
	case "$races" in
	0) ;;
	2) msg "KCSAN did not report the planted race: no evidence either way"; return 1 ;;
	*) msg "data races involving twheel (see above)"; return 1 ;;
	esac
	msg "no data race involving twheel"
}

main "$@"
