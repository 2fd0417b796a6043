#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check syzkaller/twheel.txt (and .txt.const) against uapi/twheel.h.

    syzkaller/check.py             # make check runs it on the host

The header is the truth; the C compiler gives the sizes, offsets and values:
  - every TWHEEL_IOC_* has an ioctl$TWHEEL_IOC_*, and no other: its command
    constant, the argument's direction (_IOWR inout, _IOW in, _IOR out) and
    struct (a description struct named like the header's, maybe with a
    suffix such as _out);
  - every description struct matches its header struct field by field:
    names and order, and sizes and offsets under syzkaller's layout rules
    (natural alignment), and the total size;
  - fields the header documents as "must be zero", and pad and reserved
    fields, are const[0] in structs the kernel reads;
  - each flag set of TWHEEL_* names holds every macro of its prefix (not
    masks like TWHEEL_TIMER_FLAGS), and nothing else;
  - twheel.txt.const has every constant the description uses and no other,
    with the values the compiler gives (TWHEEL_*, AT_FDCWD, O_*; __NR_* for
    amd64 and 386 from the host's asm/unistd_{64,32}.h);
and, so that a broken checker cannot pass, a few deliberately wrong copies
of the description must each fail.

Prints "syz-check: ok: ..." or one "syz-check: FAIL: ..." line per problem;
exit status 0 iff all is well.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), '..'))
HEADER = os.path.join(ROOT, 'uapi', 'twheel.h')
DESC = os.path.join(ROOT, 'syzkaller', 'twheel.txt')
CONST = DESC + '.const'

C_SIZES = {'__u8': 1, '__s8': 1, '__u16': 2, '__s16': 2, '__u32': 4,
           '__s32': 4, '__u64': 8, '__s64': 8}
SYZ_INTS = {'int8': 1, 'int16': 2, 'int32': 4, 'int64': 8, 'intptr': 8,
            'bool8': 1, 'bool16': 2, 'bool32': 4, 'bool64': 8}
# Resources of sys/linux this description uses, and their base types.
SYZ_EXTERNAL_RESOURCES = {'fd': 'int32', 'fd_event': 'fd'}


def strip_c_comments(text):
    return re.sub(r'/\*.*?\*/', '', text, flags=re.S)


def parse_header(text):
    """Structs (ordered fields), ioctls, TWHEEL_* macro names, must-be-zero fields."""
    code = strip_c_comments(text)
    structs = {}
    for m in re.finditer(r'struct\s+(\w+)\s*\{(.*?)\};', code, re.S):
        fields = []
        for f in re.finditer(r'(struct\s+\w+|__[us]\d+)\s+(\w+)\s*(?:\[(\d+)\])?\s*;',
                             m.group(2)):
            fields.append((f.group(2), f.group(1), int(f.group(3) or 1)))
        structs[m.group(1)] = fields
    ioctls = {}
    for m in re.finditer(r'#define\s+(TWHEEL_IOC_\w+)\s+_IO(WR|W|R)\s*\(\s*TWHEEL_IOC_MAGIC\s*,'
                         r'\s*(\w+)\s*,\s*struct\s+(\w+)\s*\)', code):
        ioctls[m.group(1)] = {'dir': {'WR': 'inout', 'W': 'in', 'R': 'out'}[m.group(2)],
                              'struct': m.group(4)}
    macros = [m.group(1) for m in re.finditer(r'#define\s+(TWHEEL_\w+)\s+\S', code)]
    zero = set()
    for m in re.finditer(r'/\*\*\s*\n\s*\*\s*struct\s+(\w+)\s+-(.*?)\*/', text, re.S):
        for f in re.finditer(r'@(\w+):([^@]*)', m.group(2)):
            if re.search(r'must be zero', f.group(2)):
                zero.add((m.group(1), f.group(1)))
    return structs, ioctls, macros, zero


def c_facts(structs, macros):
    """sizeof/offsetof of every struct and field, and every macro's value."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include <fcntl.h>',
             '#include "uapi/twheel.h"', 'int main(void) {']
    for s, fields in structs.items():
        lines.append('printf("size %s %%zu\\n", sizeof(struct %s));' % (s, s))
        for name, _, _ in fields:
            lines.append('printf("off %s %s %%zu %%zu\\n", offsetof(struct %s, %s), '
                         'sizeof(((struct %s *)0)->%s));' % (s, name, s, name, s, name))
    for mac in macros + ['AT_FDCWD', 'O_RDWR', 'O_NONBLOCK', 'O_CLOEXEC']:
        if mac == 'TWHEEL_DEVICE':
            continue
        lines.append('printf("val %s %%llu\\n", (unsigned long long)(%s));' % (mac, mac))
    lines.append('return 0; }')
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, 'f.c'), os.path.join(d, 'f')
        open(src, 'w').write('\n'.join(lines) + '\n')
        subprocess.run(['gcc', '-I', ROOT, '-o', exe, src], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    sizes, offs, vals = {}, {}, {}
    for l in out.splitlines():
        w = l.split()
        if w[0] == 'size':
            sizes[w[1]] = int(w[2])
        elif w[0] == 'off':
            offs[(w[1], w[2])] = (int(w[3]), int(w[4]))
        else:
            vals[w[1]] = int(w[2])
    return sizes, offs, vals


def syscall_numbers():
    """__NR_ioctl/openat/read for amd64 and 386, from the host's headers."""
    nrs = {}
    for arch, hdr in (('amd64', 'asm/unistd_64.h'), ('386', 'asm/unistd_32.h')):
        src = '#include <%s>\n' % hdr + ''.join(
            'long long %s_v = %s;\n' % (n, n) for n in ('__NR_ioctl', '__NR_openat', '__NR_read'))
        r = subprocess.run(['gcc', '-E', '-dM', '-x', 'c', '-'], input=src,
                           capture_output=True, text=True)
        for n in ('__NR_ioctl', '__NR_openat', '__NR_read'):
            m = re.search(r'#define %s (\d+)' % n, r.stdout)
            if m:
                nrs[(arch, n)] = int(m.group(1))
    return nrs


def parse_desc(text):
    lines = [l for l in text.splitlines() if not l.lstrip().startswith('#')]
    body = '\n'.join(lines)
    resources = {m.group(1): m.group(2)
                 for m in re.finditer(r'^resource\s+(\w+)\[(\w+)\]', body, re.M)}
    structs = {}
    for m in re.finditer(r'^(\w+)\s*\{\n(.*?)\n\}', body, re.M | re.S):
        fields = []
        for l in m.group(2).splitlines():
            if not l.strip():
                continue
            w = l.split(None, 1)
            typ = w[1].strip()
            attr = None
            a = re.search(r'\s\((in|out|inout)\)$', typ)
            if a:
                attr, typ = a.group(1), typ[:a.start()].strip()
            fields.append((w[0], typ, attr))
        structs[m.group(1)] = fields
    ioctls = {}
    for m in re.finditer(r'^ioctl\$(\w+)\(fd (\w+), cmd const\[(\w+)\], arg ptr\[(in|out|inout), (\w+)\]\)',
                         body, re.M):
        ioctls[m.group(1)] = {'fd': m.group(2), 'cmd': m.group(3), 'dir': m.group(4),
                              'struct': m.group(5)}
    flagsets = {m.group(1): [v.strip() for v in m.group(2).split(',')]
                for m in re.finditer(r'^(\w+)\s*=\s*(.+)$', body, re.M)}
    # Call names (ioctl$TWHEEL_IOC_BATCH_short) are names, not constants.
    used = set(re.findall(r'\b(TWHEEL_\w+|AT_FDCWD|O_[A-Z]+)\b',
                          re.sub(r'^(\w+)\s*=.*$|^\w+\$\w+', '', body, flags=re.M) + '\n' +
                          '\n'.join(' '.join(v) for v in flagsets.values())))
    calls = re.findall(r'^(\w+)\$\w+\(', body, re.M)
    return resources, structs, ioctls, flagsets, used, calls


def syz_layout(typ, structs, resources, depth=0):
    """(size, alignment) of a syzkaller type in a struct."""
    typ = typ.strip()
    if typ in SYZ_INTS:
        return SYZ_INTS[typ], SYZ_INTS[typ]
    m = re.match(r'(const|flags|len|bytesize)\[.*,\s*(\w+)\]$', typ)
    if m and m.group(2) in SYZ_INTS:
        return SYZ_INTS[m.group(2)], SYZ_INTS[m.group(2)]
    if re.match(r'ptr64\[|ptr\[', typ):
        return 8, 8
    m = re.match(r'array\[(.+),\s*(\d+)\]$', typ)
    if m:
        size, align = syz_layout(m.group(1), structs, resources, depth + 1)
        return size * int(m.group(2)), align
    base = resources.get(typ) or SYZ_EXTERNAL_RESOURCES.get(typ)
    if base:
        return syz_layout(base, structs, resources, depth + 1)
    if typ in structs and depth < 8:
        return struct_layout(typ, structs, resources)[0:2]
    raise ValueError('unknown type %s' % typ)


def struct_layout(name, structs, resources):
    """(size, alignment, {field: (offset, size)}) under natural alignment."""
    off, align, fields = 0, 1, {}
    for fname, typ, _ in structs[name]:
        size, a = syz_layout(typ, structs, resources)
        off = (off + a - 1) // a * a
        fields[fname] = (off, size)
        off += size
        align = max(align, a)
    return (off + align - 1) // align * align, align, fields


def zero_type(typ):
    return bool(re.match(r'(const\[0\s*,|array\[const\[0\s*,)', typ))


def check(desc_text, const_text, header_text, facts, nrs):
    errs = []
    h_structs, h_ioctls, h_macros, h_zero = parse_header(header_text)
    sizes, offs, vals = facts
    resources, d_structs, d_ioctls, flagsets, used, calls = parse_desc(desc_text)

    def header_struct_of(dname):
        best = None
        for h in h_structs:
            if dname == h or dname.startswith(h + '_'):
                if not best or len(h) > len(best):
                    best = h
        return best

    # ioctls, both ways. A variant of an ioctl (another argument struct, as
    # TWHEEL_BATCH_SHORT gives TWHEEL_IOC_BATCH) is named
    # ioctl$TWHEEL_IOC_X_suffix and checked against TWHEEL_IOC_X.
    for name in h_ioctls:
        if name not in d_ioctls:
            errs.append('no ioctl$%s for %s' % (name, name))
    for name, d in d_ioctls.items():
        hname = name if name in h_ioctls else d['cmd']
        h = h_ioctls.get(hname)
        if not h or (name != hname and not name.startswith(hname + '_')):
            errs.append('ioctl$%s: no such ioctl in uapi/twheel.h' % name)
            continue
        if d['cmd'] != hname:
            errs.append('ioctl$%s: cmd const[%s], not const[%s]' % (name, d['cmd'], hname))
        if d['fd'] != 'fd_twheel':
            errs.append('ioctl$%s: fd %s, not fd_twheel' % (name, d['fd']))
        if d['dir'] != h['dir']:
            errs.append('ioctl$%s: ptr[%s], the header says %s' % (name, d['dir'], h['dir']))
        if header_struct_of(d['struct']) != h['struct']:
            errs.append('ioctl$%s: struct %s, the header passes struct %s' %
                        (name, d['struct'], h['struct']))

    # structs that the kernel reads (in/inout), directly or inside another
    read_structs = set()
    for d in d_ioctls.values():
        if d['dir'] in ('in', 'inout'):
            read_structs.add(d['struct'])
    changed = True
    while changed:
        changed = False
        for s in list(read_structs):
            for _, typ, _ in d_structs.get(s, []):
                for t in re.findall(r'\b(\w+)\b', typ):
                    if t in d_structs and t not in read_structs:
                        read_structs.add(t)
                        changed = True

    for dname, dfields in d_structs.items():
        h = header_struct_of(dname)
        if not h:
            errs.append('struct %s: no struct of that name in uapi/twheel.h' % dname)
            continue
        hnames = [f[0] for f in h_structs[h]]
        dnames = [f[0] for f in dfields]
        if hnames != dnames:
            errs.append('struct %s: fields %s, the header has %s' % (dname, dnames, hnames))
            continue
        try:
            size, _, layout = struct_layout(dname, d_structs, resources)
        except ValueError as e:
            errs.append('struct %s: %s' % (dname, e))
            continue
        if size != sizes[h]:
            errs.append('struct %s: %d bytes, struct %s has %d' % (dname, size, h, sizes[h]))
        for fname, typ, _ in dfields:
            if layout[fname] != offs[(h, fname)]:
                errs.append('struct %s: field %s at %d (%d bytes), the header has it at %d (%d bytes)' %
                            ((dname, fname) + layout[fname] + offs[(h, fname)]))
            must_zero = (h, fname) in h_zero or re.match(r'(pad|reserved)', fname)
            if must_zero and dname in read_structs and not zero_type(typ):
                errs.append('struct %s: field %s must be zero (const[0, ...]), is %s' %
                            (dname, fname, typ))

    # flag sets of TWHEEL_* names: all of their prefix, masks excepted
    for fname, values in flagsets.items():
        names = [v for v in values if v.startswith('TWHEEL_')]
        if not names:
            continue
        prefix = os.path.commonprefix(names)
        prefix = prefix[:prefix.rfind('_') + 1]
        want = {m for m in h_macros if m.startswith(prefix) and not m.endswith('_FLAGS')
                and not m.startswith('TWHEEL_IOC_')}
        if set(names) != want:
            errs.append('flags %s = %s; uapi/twheel.h has %s' %
                        (fname, sorted(names), sorted(want)))

    # the const file
    consts, arches = {}, []
    for l in const_text.splitlines():
        if not l.strip() or l.startswith('#'):
            continue
        k, v = [x.strip() for x in l.split('=', 1)]
        if k == 'arches':
            arches = [a.strip() for a in v.split(',')]
            continue
        parts = [p.strip() for p in v.split(',')]
        per = {a: int(parts[0], 0) for a in arches}
        for p in parts[1:]:
            names, val = p.rsplit(':', 1)
            for a in names.split(':'):
                per[a] = int(val, 0)
        consts[k] = per
    need = used | {'__NR_ioctl', '__NR_openat', '__NR_read'}
    for k in sorted(need - set(consts)):
        errs.append('%s is used but not in twheel.txt.const' % k)
    for k in sorted(set(consts) - need):
        errs.append('twheel.txt.const has %s, which the description does not use' % k)
    for k, per in consts.items():
        for arch, v in per.items():
            if k.startswith('__NR_'):
                want = nrs.get((arch, k))
                if want is None:
                    continue        # no header for that arch here
            elif k in vals:
                want = vals[k]      # generic _IOC and fcntl values on all three
            else:
                errs.append('%s: no such macro in uapi/twheel.h' % k)
                break
            if v != want:
                errs.append('%s = %d for %s in twheel.txt.const, the header gives %d' %
                            (k, v, arch, want))
    if 'openat' not in calls or 'read' not in calls:
        errs.append('no openat$twheel or read$twheel')
    return errs, (len(d_ioctls), len(d_structs), len(consts))


def mutants(text):
    """Wrong descriptions that the checker must refuse."""
    yield 'a dropped field', text.replace('\tqueued\t\tint32\n', '', 1)
    yield 'a wrong direction', text.replace('arg ptr[in, twheel_cancel]', 'arg ptr[out, twheel_cancel]', 1)
    yield 'a lost ioctl', re.sub(r'^ioctl\$TWHEEL_IOC_INFO.*\n', '', text, flags=re.M)
    yield 'a reserved field that is not const 0', text.replace(
        'reserved\tconst[0, int64]', 'reserved\tint64', 1)
    yield 'a field of the wrong size', text.replace('\tpad\tconst[0, int32]', '\tpad\tconst[0, int16]', 1)
    yield 'a missing flag', text.replace(', TWHEEL_TIMER_FIXED_DELAY\n', '\n', 1)


def main():
    header = open(HEADER).read()
    desc = open(DESC).read()
    const = open(CONST).read()
    h_structs, _, h_macros, _ = parse_header(header)
    facts = c_facts(h_structs, h_macros)
    nrs = syscall_numbers()
    errs, (nio, nst, nco) = check(desc, const, header, facts, nrs)
    for what, bad in mutants(desc):
        if bad == desc:
            errs.append('self-test: could not make %s (the description changed?)' % what)
        elif not check(bad, const, header, facts, nrs)[0]:
            errs.append('self-test: a description with %s passed' % what)
    bad_const = re.sub(r'^TWHEEL_IOC_CANCEL = \d+', 'TWHEEL_IOC_CANCEL = 1', const, flags=re.M)
    if not check(desc, bad_const, header, facts, nrs)[0]:
        errs.append('self-test: a wrong ioctl number passed')
    for e in errs:
        print('syz-check: FAIL: %s' % e)
    if errs:
        return 1
    print('syz-check: ok: syzkaller/twheel.txt matches uapi/twheel.h: %d ioctls, '
          '%d structs, %d constants' % (nio, nst, nco))
    return 0


if __name__ == '__main__':
    sys.exit(main())
