#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make kcsan [DURATION=3m]: the torture on the KCSAN kernel (debug.config
# with kcsan.config on top, built once), then every data race KCSAN
# reported on the console: each distinct race once, with its count and the
# top frames of both accesses, also in build/logs/kcsan-races.txt.
#
# A race is twheel's when one of its accesses is made by twheel's code (the
# top frame of its stack is in twheel.ko or twheel_torture.ko); a race of
# the kernel's with twheel further down a stack is listed as the kernel's,
# "twheel on the stack". The guest first plants a race (twheel_torture.ko
# kcsan_canary=1, functions tt_canary_*) that KCSAN must report, else the
# run proves nothing. Exit status 1 if the torture failed, the planted race
# went unreported or a race is twheel's; others are listed, not counted.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

rc=0
"$TWHEEL_ROOT/tests/vm/vm.sh" torture kcsan --duration "${1:-${DURATION:-3m}}" \
	--env TWHEEL_KCSAN=1 || rc=1
python3 - "$TWHEEL_BUILD/logs/kcsan-torture.log" "$TWHEEL_BUILD/logs/kcsan-races.txt" <<'PY' || rc=1
import re, sys

ts = re.compile(r'^\[ *\d+\.\d+\] ?')
lines = [ts.sub('', l.rstrip('\r\n')) for l in open(sys.argv[1], errors='replace') if ts.match(l)]
# One report: the lines between two rows of '='; KCSAN's have "BUG: KCSAN:".
reports, cur = [], []
for l in lines + ['=' * 20]:
    if l.startswith('=' * 20):
        if any('BUG: KCSAN:' in x for x in cur):
            reports.append(cur)
        cur = []
    else:
        cur.append(l)
ours = re.compile(r'\[(twheel|twheel_torture)\]')
access = re.compile(r'^(race at unknown origin, with )?(read|write|read-write|'
                    r'assert no accesses|assert no writes).* (by task|by interrupt|to 0x)')
races = {}
for r in reports:
    title = next(x for x in r if 'BUG: KCSAN:' in x).split('BUG: KCSAN: ', 1)[1]
    acc, frames = [], None
    for l in r:
        if access.match(l):
            frames = []
            acc.append((l, frames))
        elif frames is not None and l.startswith(' ') and '+0x' in l and len(frames) < 5:
            m = ours.search(l)
            frames.append(l.strip().split('+')[0] + (' [%s]' % m.group(1) if m else ''))
        elif not l.strip():
            frames = None
    e = races.setdefault(title, {'n': 0, 'acc': acc, 'ours': False, 'stack': False})
    e['n'] += 1
    e['ours'] |= any(fr and '[twheel' in fr[0] for _, fr in acc)
    e['stack'] |= any(ours.search(l) for l in r)
order = ['twheel', 'kernel, twheel on the stack', 'kernel', 'canary']
tags = {k: 'canary' if 'tt_canary_' in k else order[0 if v['ours'] else 1 if v['stack'] else 2]
        for k, v in races.items()}
count = {t: list(tags.values()).count(t) for t in order}
with open(sys.argv[2], 'w') as f:
    f.write('KCSAN: %d reports, %d distinct races: %d in twheel, %d of the kernel with twheel on '
            'the stack, %d elsewhere; the planted race %s\n'
            % (len(reports), len(races), count['twheel'], count['kernel, twheel on the stack'],
               count['kernel'], 'was reported' if count['canary'] else
               'was NOT reported: this run proves nothing'))
    for k in sorted(races, key=lambda k: (order.index(tags[k]), k)):
        f.write('\n[%s] %s (%d reports)\n' % (tags[k], k, races[k]['n']))
        for a, fr in races[k]['acc']:
            f.write('    %s\n      %s\n' % (a, ' < '.join(fr)))
print(open(sys.argv[2]).read(), end='')
sys.exit(1 if count['twheel'] or not count['canary'] else 0)
PY
msg "KCSAN races: $TWHEEL_BUILD/logs/kcsan-races.txt"
[ "$rc" -eq 0 ] && msg "no data race involving twheel" ||
	msg "make kcsan failed: the torture, the planted race or a race of twheel's (see above)"
exit "$rc"
