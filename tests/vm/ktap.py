#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn KTAP into one result line per test: the one parser of tests/vm.

    ktap.py PREFIX [FILE]      (standard input without FILE)

Reads KTAP (or TAP 13) as the guests print it: our guest script's own
results, with the output of twheel_test (kselftest_harness.h) and of
KUnit nested in it as indented subtests. Prints, for every leaf test,

    PASS|FAIL|SKIP PREFIX/parent/.../name [# reason]

and a FAIL for what KTAP says went wrong without a failing leaf: a parent
reported "not ok" whose subtests all passed, a plan ("1..N") that does not
match the results, a "Bail out!", a subtest whose parent never reported
(the program died). Exit status 0 iff no FAIL line.
"""
import re
import sys

RESULT = re.compile(r'^(not ok|ok) +\d+(?: +-)?(?: +([^#]*?))?\s*(?:#\s*(.*))?$')
PLAN = re.compile(r'^1\.\.(\d+)')


class Frame:
    def __init__(self, indent, name=None):
        self.indent, self.name = indent, name
        # docs: [first result, plan] of each KTAP document at this depth
        # (KUnit's debugfs results are one document per suite).
        self.docs, self.results, self.pending = [[0, None]], [], None


def word(name):
    return re.sub(r'\s+', '_', name.strip()) or '(unnamed)'


def emit(out, path, res):
    """res: (status, name, reason, children Frame or None)."""
    status, name, reason, kids = res
    full = path + '/' + word(name)
    failed = 0
    if kids is not None and kids.results:
        failed = close(out, full, kids)
    if reason and re.match(r'(?i)skip', reason):
        out.append('SKIP %s # %s' % (full, reason[4:].strip() or 'skipped'))
    elif kids is None or not kids.results:
        word_ = 'PASS' if status == 'ok' else 'FAIL'
        out.append('%s %s%s' % (word_, full, ' # ' + reason if reason and word_ == 'FAIL' else ''))
        failed += word_ == 'FAIL'
    elif status != 'ok' and not failed:
        out.append('FAIL %s # reported not ok%s' % (full, ': ' + reason if reason else ''))
        failed = 1
    return failed


def close(out, path, frame):
    """Emit a frame's results (and a frame left pending in it)."""
    failed = 0
    for res in frame.results:
        failed += emit(out, path, res)
    ends = [d[0] for d in frame.docs[1:]] + [len(frame.results)]
    for (start, plan), end in zip(frame.docs, ends):
        if plan is not None and plan != end - start:
            out.append('FAIL %s/plan # planned %d tests, %d reported' % (path, plan, end - start))
            failed += 1
    if frame.pending is not None and frame.pending.results:
        kid = frame.pending
        failed += emit(out, path, ('not ok', kid.name or 'subtest',
                                   'no result: it did not finish', kid))
    return failed


def parse(lines, prefix):
    out, stack = [], [Frame(0)]
    for raw in lines:
        line = raw.rstrip('\r\n').expandtabs(8)
        text = line.lstrip(' ')
        if not text:
            continue
        indent = len(line) - len(text)
        m = RESULT.match(text)
        header = (text.startswith(('KTAP version', 'TAP version')) or
                  PLAN.match(text) or text.startswith('# Subtest:'))
        if not m and not header and not text.startswith('Bail out!'):
            continue
        # A shallower line ends the deeper frames: they belong to the next
        # result at its depth (or are left pending, if it never comes).
        while len(stack) > 1 and indent < stack[-1].indent:
            kid = stack.pop()
            stack[-1].pending = kid
        if indent > stack[-1].indent:
            stack.append(Frame(indent))
        top = stack[-1]
        if m:
            top.results.append((m.group(1), m.group(2) or '(unnamed)',
                                m.group(3), top.pending))
            top.pending = None
        elif text.startswith('# Subtest:'):
            top.name = text.split(':', 1)[1].strip()
        elif PLAN.match(text):
            top.docs[-1][1] = int(PLAN.match(text).group(1))
        elif text.startswith('Bail out!'):
            top.results.append(('not ok', top.name or 'bail-out', text, None))
        elif top.results or top.docs[-1][1] is not None:
            top.docs.append([len(top.results), None])    # a new document
    while len(stack) > 1:
        kid = stack.pop()
        stack[-1].pending = kid
    close(out, prefix, stack[0])
    return out


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = open(sys.argv[2], errors='replace') if len(sys.argv) == 3 else sys.stdin
    out = parse(src, sys.argv[1])
    print('\n'.join(out))
    sys.exit(1 if any(l.startswith('FAIL') for l in out) else 0)


if __name__ == '__main__':
    main()
