#!/usr/bin/env python3
"""Compare the headline ratios of two raw `make bench` results (twheel).

  bench/compare.py OLD.tsv NEW.tsv [--spread OTHER.tsv] [--tables 1,3,4,7,8]

For every headline comparison of tables 1, 3, 4, 7 and 8 (twheel against
timer_list / hrtimer in the kernel tables, /dev/twheel against timerfd,
io_uring and POSIX timers in tables 7 and 8) it prints the ratio
twheel / peer of each file, as median (min-max) over the repetitions, and a
verdict:

  within  NEW's median ratio lies inside [OLD's min, OLD's max]
  better  NEW's median ratio lies below OLD's min (every metric compared is
          a cost: ns or us; a lower twheel / peer ratio favours twheel)
  WORSE   NEW's median ratio lies above OLD's max

Ratios are paired by repetition number: the rows of one repetition ran a
moment apart, so the pairing cancels the host's drift. When a row has no
usable pairing (no common rep numbers, or a rep number seen twice) the
ratio of the medians is used instead, marked "(med)"; its range is then a
single value. twheel's own medians, old -> new, are printed for information.
--spread OTHER.tsv, another run of the same code as OLD, widens OLD's range
to both runs': the run-to-run spread, which one run's range understates
(two runs of one module differed by 2-10% on some rows).
"""

import argparse
import math
import statistics
import sys

COLUMNS = ["part", "table", "row", "rep", "metric", "value"]
LOWER_IS_BETTER = True  # every metric below is a cost (ns, us)


class Raw:
    """A raw TSV: meta, and (table, row dict) -> metric -> [(rep, value)]."""

    def __init__(self, path):
        self.path, self.meta, self.rows = path, {}, {}
        try:
            f = open(path, encoding="utf-8")
        except OSError as e:
            sys.exit(f"cmpbench: {path}: {e}")
        with f:
            if f.readline().rstrip("\n").split("\t") != COLUMNS:
                sys.exit(f"cmpbench: {path}: not a bench TSV (header {' '.join(COLUMNS)})")
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) != len(COLUMNS):
                    continue
                part, table, row, rep, metric, value = cols
                if part == "meta":
                    self.meta[metric] = value
                    continue
                try:
                    t = int(table)
                except ValueError:
                    continue
                self.rows.setdefault((t, row), {}).setdefault(metric, []).append((rep, value))
        self.dicts = {key: dict(kv.split("=", 1) for kv in key[1].split(",") if "=" in kv)
                      for key in self.rows}

    def tables(self):
        return {t for t, _ in self.rows}

    def select(self, n, **want):
        """[(row dict, metrics)] of table n's rows with those keys and values."""
        return [(d, self.rows[key]) for key, d in self.dicts.items()
                if key[0] == n and all(d.get(k) == str(v) for k, v in want.items())]

    def find(self, n, **want):
        rows = self.select(n, **want)
        return rows[0][1] if rows else None

    def values(self, n, want, metric):
        """[(rep, float)] of a metric of a row, finite numbers only; None: no such row."""
        m = self.find(n, **want)
        if m is None:
            return None
        res = []
        for rep, v in m.get(metric, []):
            try:
                x = float(v)
            except ValueError:
                continue
            if math.isfinite(x):
                res.append((rep, x))
        return res

    def keyvals(self, n, key, **want):
        """The int values of key among table n's rows (with want)."""
        res = set()
        for d, _ in self.select(n, **want):
            try:
                res.add(int(d[key]))
            except (KeyError, ValueError):
                pass
        return res


def comparisons(raws, tables):
    """[(table, label, metric, twheel row want, peer row want)]: the headline
    comparisons, built from the rows either file has."""
    out = []

    def add(t, label, metric, tw, peer):
        if (t, label, metric) not in {(a, b, c) for a, b, c, _, _ in out}:
            out.append((t, label, metric, tw, peer))

    if 1 in tables:
        pend = sorted(set().union(*(r.keyvals(1, "pending") for r in raws)))
        for n in pend:
            p = {"pending": n}
            add(1, f"twheel/timer_list, {n:,} pending", "ns_per_op",
                {"facility": "twheel", **p}, {"facility": "timer_list", **p})
            add(1, f"twheel/hrtimer, {n:,} pending", "ns_per_op",
                {"facility": "twheel", **p}, {"facility": "hrtimer", **p})
            add(1, f"twheel_slack0/hrtimer, {n:,} pending", "ns_per_op",
                {"facility": "twheel_slack0", **p}, {"facility": "hrtimer", **p})
            for metric, what in (("arm_ns", "arm alone"), ("rearm_ns", "re-arm pending")):
                add(1, f"twheel/timer_list {what}, {n:,} pending", metric,
                    {"facility": "twheel", **p}, {"facility": "timer_list", **p})
    if 3 in tables:
        for n in sorted(set().union(*(r.keyvals(3, "timers") for r in raws))):
            p = {"timers": n}
            for metric in ("ns_per_timer", "max_run_us", "cb_gap_us"):
                for peer in ("timer_list", "hrtimer"):
                    add(3, f"twheel/{peer}, {n:,} expiring", metric,
                        {"facility": "twheel", **p}, {"facility": peer, **p})
    if 4 in tables:
        for n in sorted(set().union(*(r.keyvals(4, "timers") for r in raws))):
            p = {"timers": n}
            for metric in ("p50_us", "p99_us"):
                for tw, peer in (("twheel", "timer_list"), ("twheel", "hrtimer"),
                                 ("twheel_slack0", "hrtimer_soft"),
                                 ("twheel_slack0", "hrtimer"),
                                 ("twheel_slack0_hardirq", "hrtimer")):
                    add(4, f"{tw}/{peer}, {n:,} pending", metric,
                        {"facility": tw, **p}, {"facility": peer, **p})
    if 7 in tables:
        for tw, peer, label in (
                ("twheel_batch 64", "timerfd 64", "BATCH of 64 / timerfd arm+disarm"),
                ("twheel_batch 64", "io_uring 64", "BATCH of 64 / io_uring 64 per submit"),
                ("twheel_batch 64", "posix_timer 64", "BATCH of 64 / timer_settime"),
                ("twheel_sbatch 64", "timerfd 64", "short BATCH of 64 / timerfd"),
                ("twheel_sbatch 64", "io_uring 64", "short BATCH of 64 / io_uring"),
                ("twheel_ioctl 64", "timerfd 64", "ioctl pair / timerfd (64 at a time)"),
                ("twheel_ioctl 64", "posix_timer 64", "ioctl pair / timer_settime"),
                ("twheel_ioctl 1", "timerfd 1", "ioctl pair / timerfd (one at a time)"),
                ("twheel_modify 64", "timerfd_rearm 64", "re-arm: MODIFY / timerfd_settime"),
                ("twheel_modify 64", "io_uring_update 64",
                 "re-arm: MODIFY / io_uring TIMEOUT_UPDATE"),
                ("twheel_extend 64", "timerfd_rearm 64", "push back: store / timerfd_settime"),
                ("twheel_extend 64", "io_uring_update 64",
                 "push back: store / io_uring TIMEOUT_UPDATE")):
            tf, tc = tw.split()
            pf, pc = peer.split()
            add(7, label, "ns_per_op", {"facility": tf, "chunk": tc},
                {"facility": pf, "chunk": pc})
    if 8 in tables:
        for metric in ("p50_us", "p99_us"):
            for tw, peer in (("twheel", "timerfd"), ("twheel", "io_uring"),
                             ("twheel_slack0", "timerfd")):
                add(8, f"{tw}/{peer}", metric, {"facility": tw}, {"facility": peer})
    return out


def ratios(raw, t, metric, tw_want, peer_want):
    """(ratios, how, twheel's median) or (None, why, None)."""
    tw, peer = raw.values(t, tw_want, metric), raw.values(t, peer_want, metric)
    missing = [f"{w['facility']}" for w, v in ((tw_want, tw), (peer_want, peer)) if v is None]
    if missing:
        return None, "no row " + ", ".join(missing), None
    empty = [w["facility"] for w, v in ((tw_want, tw), (peer_want, peer)) if not v]
    if empty:
        return None, f"no {metric} for " + ", ".join(empty), None
    tw_med = statistics.median(x for _, x in tw)
    peer_med = statistics.median(x for _, x in peer)
    a, b = dict(tw), dict(peer)
    common = sorted(set(a) & set(b), key=lambda r: (len(r), r))
    if len(a) == len(tw) and len(b) == len(peer) and common:
        rs = [a[r] / b[r] for r in common if b[r]]
        if rs:
            how = "" if len(common) == max(len(a), len(b)) else f"({len(rs)} reps)"
            return rs, how, tw_med
    if not peer_med:
        return None, "peer's values all 0", tw_med
    return [tw_med / peer_med], "(med)", tw_med


def fmt(x):
    """An absolute figure, as bench/report.py prints it."""
    if x is None:
        return "-"
    ax = abs(x)
    return f"{x:.0f}" if ax >= 100 else f"{x:.1f}" if ax >= 10 else f"{x:.2f}"


def rfmt(x):
    """A ratio: 3 significant digits, enough to show why a verdict is not "within"."""
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def rng(rs, how):
    m = statistics.median(rs)
    s = rfmt(m) if len(rs) == 1 else f"{rfmt(m)} ({rfmt(min(rs))}-{rfmt(max(rs))})"
    return s + (" " + how if how else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--spread", action="append", default=[],
                    help="another run of unchanged code: OLD's range becomes the union of both")
    ap.add_argument("--tables", default="1,3,4,7,8",
                    help="comma-separated table numbers among 1,3,4,7,8 (default: all)")
    args = ap.parse_args()
    try:
        tables = [int(x) for x in args.tables.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"cmpbench: --tables {args.tables}: not a list of numbers")
    unknown = [t for t in tables if t not in (1, 3, 4, 7, 8)]
    if unknown:
        print(f"cmpbench: no headline comparisons defined for table(s) "
              f"{', '.join(map(str, unknown))}; ignored", file=sys.stderr)
    tables = [t for t in tables if t in (1, 3, 4, 7, 8)]
    old, new = Raw(args.old), Raw(args.new)
    others = [Raw(p) for p in args.spread]
    for tag, r in (("OLD", old), ("NEW", new)):
        print(f"{tag}: {r.path}  {r.meta.get('date', '?')} commit {r.meta.get('commit', '?')} "
              f"{r.meta.get('accel', '?')} host load {r.meta.get('host_load', '?')}")
    if old.meta.get("accel") != new.meta.get("accel"):
        print(f"warning: accelerators differ ({old.meta.get('accel', '?')} vs "
              f"{new.meta.get('accel', '?')}): the ratios are not measured alike")
    print("ratio = twheel / peer per repetition, median (min-max); below 1: twheel cheaper. "
          "verdict: NEW median vs [OLD min, OLD max].")
    counts = {"within": 0, "better": 0, "WORSE": 0, "n/a": 0}
    rows = []
    absent = {}
    for t in tables:
        gone = [tag for tag, r in (("OLD", old), ("NEW", new)) if t not in r.tables()]
        if gone:
            absent[t] = gone
    for t, label, metric, tw_want, peer_want in comparisons([old, new], tables):
        if t in absent:
            continue
        o, ohow, otw = ratios(old, t, metric, tw_want, peer_want)
        n, nhow, ntw = ratios(new, t, metric, tw_want, peer_want)
        if o is None or n is None:
            why = "; ".join(f"{tag}: {how}" for tag, rs, how in (("OLD", o, ohow),
                                                                 ("NEW", n, nhow)) if rs is None)
            rows.append([str(t), label, metric, rng(o, ohow) if o else "-",
                         rng(n, nhow) if n else "-", "n/a", why])
            counts["n/a"] += 1
            continue
        nm = statistics.median(n)
        lo, hi = min(o), max(o)
        for other in others:
            x, _, _ = ratios(other, t, metric, tw_want, peer_want)
            if x:
                lo, hi = min(lo, min(x)), max(hi, max(x))
        if lo <= nm <= hi:
            verdict = "within"
        elif (nm < lo) == LOWER_IS_BETTER:
            verdict = "better"
        else:
            verdict = "WORSE"
        counts[verdict] += 1
        rows.append([str(t), label, metric, rng(o, ohow), rng(n, nhow), verdict,
                     f"{tw_want['facility']} {fmt(otw)} -> {fmt(ntw)}"])
    head = ["table", "comparison", "metric", "OLD ratio", "NEW ratio", "verdict",
            "twheel-side median old -> new"]
    width = [max(len(x) for x in col) for col in zip(head, *rows)] if rows else []
    if rows:
        for r in [head] + rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip())
    for t, gone in sorted(absent.items()):
        print(f"table {t}: not in {' nor '.join(gone)} "
              f"({' nor '.join((old if g == 'OLD' else new).path for g in gone)}); skipped")
    na = f", {counts['n/a']} n/a (row missing in a file)" if counts["n/a"] else ""
    skipped = f", tables not in both files: {', '.join(map(str, sorted(absent)))}" if absent \
        else ""
    print(f"summary: {counts['within']} within, {counts['better']} better, "
          f"{counts['WORSE']} WORSE{na}{skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
