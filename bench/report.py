#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Collect, print and compare the figures of `make bench`.

  bench/report.py collect [--meta KEY=VALUE]... GUEST_OUTPUT... > RAW.tsv
  bench/report.py report [--markdown] [--elapsed SECONDS] [--parts "main scale"] RAW.tsv
  bench/report.py compare OLD.tsv NEW.tsv

collect reads the "table=..." lines that tests/vm/guest/run.sh (bench) printed
(from tests/twheel_bench.c and tools/twheel_bench.c): the keys before
"rep=" name a row, the keys after it are what one repetition measured. It
writes one TSV line per measured value:

  part  table  row                        rep  metric     value
  main  1      facility=twheel,pending=1000  0  ns_per_op  812.4

report prints the tables: for every figure the median over the
repetitions and the spread (min-max), and the ratio to twheel. compare
prints, for every figure two runs have in common, both medians and their
ratio. Exit status of report: 1 if a table has no data.
"""

import argparse
import math
import statistics
import sys

FACS = ["twheel", "timer_list", "hrtimer"]
COLUMNS = ["part", "table", "row", "rep", "metric", "value"]


def collect(args):
    print(*COLUMNS, sep="\t")
    for key, _, value in (meta.partition("=") for meta in args.meta):
        print("meta", "0", "", "0", key, value, sep="\t")
    for path in args.outputs:
        part = path.rsplit("/", 1)[-1].removesuffix(".out").removeprefix("distro-bench-")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().replace("\r", "").splitlines()
        except OSError as e:
            print(f"bench-report: {path}: {e}", file=sys.stderr)
            continue
        for line in lines:
            if not line.strip().startswith("table="):
                continue
            words = [w.split("=", 1) for w in line.split() if "=" in w]
            keys = [k for k, _ in words]
            if "rep" in keys:
                cut = keys.index("rep")
                rep, metrics = words[cut][1], words[cut + 1:]
            else:  # "skipped=1 reason=..." lines have no rep: the row ends there.
                cut = keys.index("skipped") if "skipped" in keys else len(words)
                rep, metrics = "0", words[cut:]
            row = ",".join(f"{k}={v}" for k, v in words[1:cut])
            for metric, value in metrics:
                print(part, words[0][1], row, rep, metric, value, sep="\t")


def nums(values):
    """The finite numbers among a metric's values."""
    res = []
    for v in values or []:
        try:
            res.append(float(v))
        except ValueError:
            pass
    return [x for x in res if math.isfinite(x)]


def med(values):
    v = nums(values)
    return statistics.median(v) if v else None


def num(x):
    if x is None:
        return "-"
    ax = abs(x)
    return f"{x:.0f}" if ax >= 100 or ax == int(ax) else f"{x:.1f}" if ax >= 10 else f"{x:.2f}"


def cell(values, scale=1.0):
    """'median (min-max)' of a metric's repetitions."""
    v = [x * scale for x in nums(values)]
    if not v:
        return "-"
    m, lo, hi = statistics.median(v), min(v), max(v)
    return num(m) if lo == hi else f"{num(m)} ({num(lo)}-{num(hi)})"


def ratio(x, ref):
    if x is None or ref is None or ref == 0:
        return "-"
    r = x / ref
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def paired(xs, refs):
    """x / ref of every repetition: its two rows ran a moment apart."""
    return [a / b for a, b in zip(xs, refs) if b]


def goal(what, rs, op=">=", bound=1, big=math.inf):
    """A row of a goals grid: the median of the ratios rs; no decimals from big up."""
    if not rs:
        return [what, "-", "-", f"{op} {bound:g}", "no data"]
    r, lo, hi = statistics.median(rs), min(rs), max(rs)
    fmt = "{:.0f}".format if hi >= big else "{:.2f}".format
    return [what, f"{r:.0f}" if r >= big else f"{r:.2f}", f"{fmt(lo)}-{fmt(hi)}",
            f"{op} {bound:g}", "met" if (r >= bound if op == ">=" else r <= bound) else "NOT met"]


def ordered(entries, order=FACS, key=lambda d: d.get("facility")):
    """(row dict, metrics) entries by their facility's (or key's) place in order, others last."""
    rank = {k: i for i, k in enumerate(order)}
    return sorted(entries, key=lambda e: rank.get(key(e[0]), 99))


def skipped(d, dashes, what="skipped"):
    """The row of a facility that skipped a table."""
    return [d.get("facility", "?"), what] + ["-"] * dashes


# The cells of a table row: functions of its row dict d, its metrics m and tw,
# the metrics of the row of twheel it is compared with.
def facility(d, m, tw): return d["facility"]
def pending(d, m, tw): return f"{int(d['pending']):,}"
def spread(key, scale=1.0): return lambda d, m, tw: cell(m.get(key), scale)
def median(key): return lambda d, m, tw: num(med(m.get(key)))
def vs(key): return lambda d, m, tw: ratio(med(m.get(key)), med(tw and tw.get(key)))
def total(key): return lambda d, m, tw: f"{sum(nums(m.get(key))):.0f}"


def programs_per_arm(d, m, tw):
    """Table 1: twheel's hrtimer_start calls per arming, median; "-" elsewhere."""
    x = med(m.get("programs_per_arm"))
    return "-" if x is None else f"{x:.3f}"


LATENCY = [("p50 us", spread("p50_us")), ("p99 us", spread("p99_us")), ("max us", spread("max_us"))]
LATENCY_VS = [("p50 vs twheel", vs("p50_us")), ("p99 vs twheel", vs("p99_us"))]

# (facility, chunk) -> (name, calls per timer) of table 7's rows; in the order printed
T7_NAMES = {
    ("twheel_info_floor", "64"): ("floor: 2 x TWHEEL_IOC_INFO", 2),
    ("twheel_ioctl", "64"): ("twheel SCHEDULE + CANCEL ioctls", 2),
    ("twheel_ioctl", "1"): ("twheel SCHEDULE + CANCEL, one timer at a time", 2),
    ("twheel_batch", "64"): ("twheel BATCH of 64 (x2)", 2),
    ("twheel_batch", "1024"): ("twheel BATCH of 1024 (x2)", 2),
    ("twheel_sbatch", "64"): ("twheel BATCH of 64 short ops (x2)", 2),
    ("twheel_sbatch", "1024"): ("twheel BATCH of 1024 short ops (x2)", 2),
    ("timerfd", "64"): ("timerfd_settime arm + disarm", 2),
    ("timerfd", "1"): ("timerfd_settime arm + disarm, one at a time", 2),
    ("posix_timer", "64"): ("timer_settime arm + disarm", 2),
    ("io_uring", "64"): ("io_uring TIMEOUT + TIMEOUT_REMOVE, 64 per submit", 2),
    ("twheel_modify", "64"): ("re-arm a pending one: twheel MODIFY", 1),
    ("timerfd_rearm", "64"): ("re-arm a pending one: timerfd_settime", 1),
    ("io_uring_update", "64"): ("re-arm a pending one: io_uring TIMEOUT_UPDATE, 64 per submit", 1),
    ("twheel_extend", "64"): ("push back a pending one: a store to twheel's mapping", 1),
}

# The goals of the fast path (issue 12): (what, x, ref, >= or <=, bound) of the
# figure x / ref, rows "facility chunk" of table 7; ref None: table 1's twheel, 1,000 pending.
T7_GOALS = [
    ("BATCH of 64, timerfd arm + disarm / twheel", "timerfd 64", "twheel_batch 64", ">=", 3),
    ("BATCH of 64, io_uring 64 per submit / twheel", "io_uring 64", "twheel_batch 64", ">=", 2),
    ("BATCH of 64, twheel / in-kernel arm + cancel (table 1, 1k pending)", "twheel_batch 64",
     None, "<=", 2),
    ("BATCH of 1024 / BATCH of 64, per timer", "twheel_batch 1024", "twheel_batch 64", "<=", 1),
    ("short ops: BATCH of 64, timerfd arm + disarm / twheel", "timerfd 64", "twheel_sbatch 64",
     ">=", 3),
    ("short ops: BATCH of 64, io_uring 64 per submit / twheel", "io_uring 64",
     "twheel_sbatch 64", ">=", 2),
    ("short ops: BATCH of 64, twheel / in-kernel arm + cancel", "twheel_sbatch 64", None, "<=",
     2),
    ("short ops: BATCH of 1024 / BATCH of 64, per timer", "twheel_sbatch 1024",
     "twheel_sbatch 64", "<=", 1),
    ("single ioctls, timerfd / twheel (64 at a time)", "timerfd 64", "twheel_ioctl 64", ">=", 1),
    ("single ioctls, timerfd / twheel (one at a time)", "timerfd 1", "twheel_ioctl 1", ">=", 1),
    ("re-arm, timerfd_settime / twheel MODIFY", "timerfd_rearm 64", "twheel_modify 64", ">=", 1.2),
    ("push back, timerfd_settime / twheel store", "timerfd_rearm 64", "twheel_extend 64", ">=",
     100),
    ("push back, io_uring TIMEOUT_UPDATE / twheel store", "io_uring_update 64", "twheel_extend 64",
     ">=", 1),
]

# The submission ring's rows of table 7 and their peer (issue 27), printed
# after the others, and their goals: table7_ring().
T7_RING_NAMES = {
    ("heap4", "64"): ("peer: in-process 4-ary heap insert + remove, 100,000 pending", 2),
    ("heap4_wait", "64"): ("peer: the heap, waiting a tick after each chunk "
                           "(the one-tick row's pattern)", 2),
    ("heap4_split", "64"): ("peer: the heap, waiting a tick after the inserts and after "
                            "the removes (the ring row's pattern)", 2),
    ("twheel_ring_prog", "64"): ("twheel ring arm + cancel: the program's CPU", 2),
    ("twheel_ring", "64"): ("twheel ring arm + cancel: program + kernel drain", 2),
    ("twheel_ring_enter", "64"): ("twheel ring arm + cancel, drained by RING_ENTER: "
                                  "program + kernel drain", 2),
    ("twheel_ring_tick", "64"): ("twheel ring arm + cancel in one tick: kernel drain", 2),
    ("twheel_ring_tick_all", "64"): ("twheel ring arm + cancel in one tick: program + drain", 2),
}
T7_NAMES.update(T7_RING_NAMES)

T7_RING_GOALS = [
    ("ring, program / 4-ary heap", "twheel_ring_prog 64", "heap4 64", "<=", 1),
    ("ring, program + kernel drain / 4-ary heap", "twheel_ring 64", "heap4 64", "<=", 2),
    ("ring, one tick: kernel drain / in-kernel arm + cancel (table 1, 1k pending)",
     "twheel_ring_tick 64", None, "<=", 1 / 3),
    ("ring, one tick: program + kernel drain / 4-ary heap", "twheel_ring_tick_all 64",
     "heap4 64", "<=", 2),
]


# Table 2's remote rows (issue 28): op -> what it is, in the order printed.
RA_OPS = ["arm", "arm_at", "rearm", "rearm_pinned", "arm_cancel"]
RA_NAMES = {
    "arm": "arm an idle timer B owns (twheel pinned to B; add_timer_on)",
    "arm_at": "the same, twheel_schedule_at() with a deadline at hand (no clock read)",
    "rearm": "re-arm one pending on B (it moves to A; mod_timer, hrtimer_start)",
    "rearm_pinned": "re-arm one pending on B, pinned there (it stays)",
    "arm_cancel": "arm one B owns + cancel (add_timer_on + timer_delete)",
}


class Raw:
    """A raw TSV: meta key -> value, (table, row) -> metric -> [values in rep order]."""

    def __init__(self, path):
        self.meta, self.rows = {}, {}
        with open(path, encoding="utf-8") as f:
            if f.readline().rstrip("\n").split("\t") != COLUMNS:
                sys.exit(f"bench-report: {path}: not a bench TSV")
            for cols in (line.rstrip("\n").split("\t") for line in f):
                if len(cols) != len(COLUMNS):
                    continue
                part, table, row, _, metric, value = cols
                if part == "meta":
                    self.meta[metric] = value
                else:
                    self.rows.setdefault((int(table), row), {}).setdefault(metric, []).append(value)

    def select(self, n, **want):
        """[(row dict, metrics)] of the rows of table n with the keys and values want."""
        rows = ((dict(kv.split("=", 1) for kv in row.split(",") if kv), m)
                for (t, row), m in self.rows.items() if t == n)
        return [(d, m) for d, m in rows if all(d.get(k) == str(v) for k, v in want.items())]

    def find(self, n, **want):
        """The metrics of the first of those rows, or None."""
        return next((m for _, m in self.select(n, **want)), None)

    def series(self, n, metric, **want):
        return nums((self.find(n, **want) or {}).get(metric))

    def first(self, n, key, **want):
        """The first non-empty value of key in those rows, or None."""
        return next((d[key] for d, _ in self.select(n, **want) if d.get(key)), None)

    def keys(self, n, *names):
        """The int values of names in the rows of table n that have names[0], sorted."""
        return sorted({tuple(int(d[k]) for k in names) for d, _ in self.select(n) if names[0] in d})

    def by_keys(self, n, *names, order=None):
        """The rows of table n grouped by keys(), by facility in each group."""
        return [e for key in sorted(self.keys(n, *names), key=order)
                for e in ordered(self.select(n, **dict(zip(names, key))))]


class Report(Raw):
    """The tables of a raw TSV, as text or in markdown."""

    def __init__(self, path, markdown):
        super().__init__(path)
        self.markdown, self.missing = markdown, []

    def note(self, text):
        print(("\n" if self.markdown else "   ") + text)

    def grid(self, n, head, rows):
        if not rows:
            self.missing.append(n)
            print("_(no data)_" if self.markdown else "   (no data)")
        elif self.markdown:
            for r in [head, None] + rows:
                print("|" + "---|" * len(head) if r is None else "| " + " | ".join(r) + " |")
        else:
            width = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
            fmt = "   " + "  ".join(f"{{:<{w}}}" for w in width)
            for r in [head, ["-" * w for w in width]] + rows:
                print(fmt.format(*r))

    def subgrid(self, n, note, heads, rows):
        """A second grid under table n, after a note that says what it holds."""
        if not self.markdown:
            print()
        self.note(note)
        if not self.markdown:
            print()
        self.grid(n, heads, rows)

    def table(self, n, title, question, cols, entries, ref=None, skip=lambda d, m: None):
        """Table n: a row per (row dict d, metrics m) of entries, a cell per (head, function)
        of cols; ref: twheel's metrics, or a function of d that finds them; skip(d, m): the
        row of a skipped d."""
        print(f"\n### Table {n}: {title}\n\n{question}\n" if self.markdown else
              f"\n== Table {n}: {title}\n   {question}")

        def cells(d, m):
            tw = ref(d) if callable(ref) else ref
            return [f(d, m, tw) for _, f in cols]

        self.grid(n, [head for head, _ in cols], [skip(d, m) or cells(d, m) for d, m in entries])

    def table1(self):
        self.table(1, "schedule + cancel, one CPU",
                   "ns per timer (twheel_schedule+twheel_cancel, mod_timer+timer_delete, "
                   "hrtimer_start+hrtimer_cancel) with N other timers pending. "
                   "Does twheel stay flat while hrtimer grows?",
                   [("pending", pending), ("facility", facility),
                    ("ns/timer, median (min-max)", spread("ns_per_op")),
                    ("vs twheel", vs("ns_per_op")), ("arm alone", median("arm_ns")),
                    ("re-arm pending", median("rearm_ns")), ("cancel alone", median("cancel_ns")),
                    ("hrtimer programmings per arm", programs_per_arm)],
                   self.by_keys(1, "pending"),
                   ref=lambda d: self.find(1, facility="twheel", pending=d["pending"]))
        prim = [f"{d['name']} {num(med(m.get('ns')))}" for d, m in self.select(1, item="primitive")]
        if prim:
            self.note("What the building blocks cost in this VM, ns each: " + ", ".join(prim) + ".")

    def table2(self):
        self.table(2, "armed on one CPU, cancelled on another",
                   "ns per timer: arm on CPU A + cancel on CPU B + the work the cancel "
                   "leaves on A (twheel: the cancelled timers wait on A's submission "
                   "list, without a kick, for its wheel's next run; each repetition "
                   "ends by forcing that run, and its time is spread over the "
                   "repetition's timers). batch: timers per handoff.",
                   [("batch", lambda d, m, tw: d["batch"]), ("pending", pending),
                    ("facility", facility), ("total ns/timer", spread("ns_per_op")),
                    ("arm A", median("arm_ns")), ("cancel B", median("cancel_ns")),
                    ("drain A", median("drain_ns")), ("vs twheel", vs("ns_per_op"))],
                   self.by_keys(2, "batch", "pending", order=lambda k: (-k[0], k[1])),
                   ref=lambda d: self.find(2, facility="twheel", pending=d["pending"],
                                           batch=d["batch"]))
        self.table2_remote()
        kicks = [int(v) for _, m in self.select(2, facility="twheel")
                 for v in m.get("kicks_seen", []) if v.isdigit()]
        if kicks:
            self.note(f"twheel: rounds in which A's wheel softirq was already raised when the "
                      f"remote cancels were done (a kick would raise it): {sum(kicks)}, over "
                      f"{len(kicks)} repetitions of all rows; a timer of A's falling due "
                      "raises it too.")

    def remote(self):
        """Table 2's remote rows: [(row dict, metrics)] by op, owner state, pending."""
        rows = [e for e in self.select(2) if "op" in e[0] and "pending" in e[0]]
        return sorted(rows, key=lambda e: (RA_OPS.index(e[0]["op"]) if e[0]["op"] in RA_OPS
                                           else 9, e[0].get("owner") != "idle",
                                           int(e[0]["pending"]),
                                           FACS.index(e[0]["facility"])
                                           if e[0]["facility"] in FACS else 9))

    def table2_remote(self):
        rows = self.remote()
        if not rows:
            return
        self.note("Arming a timer that CPU B owns, from CPU A (ns per timer, the operation "
                  "alone; the probes are settled between passes, untimed). B idle, or "
                  "running a task that spins. vs timer_list: timer_list's row / this row "
                  "(above 1: cheaper than timer_list).")
        grid = []
        for d, m in rows:
            tl_op = {"rearm_pinned": None, "arm_at": "arm"}.get(d["op"], d["op"])
            tl = tl_op and self.find(2, facility="timer_list", op=tl_op, owner=d["owner"],
                                     pending=d["pending"])
            grid.append([RA_NAMES.get(d["op"], d["op"]), d["owner"], f"{int(d['pending']):,}",
                         d["facility"], cell(m.get("ns_per_op")),
                         ratio(med(tl and tl.get("ns_per_op")), med(m.get("ns_per_op")))
                         if tl else "-"])
        if not self.markdown:
            print()
        self.grid(2, ["operation", "B", "pending on A", "facility", "ns/timer",
                      "vs timer_list"], grid)

    def table3(self):
        n = self.first(3, "timers") or "?"
        self.table(3, f"{int(n):,} timers expiring in the same granule" if n != "?" else "expiry",
                   "CPU time per expired timer (all the time a task on that CPU lost), the "
                   "longest single stretch the expiry took the CPU away from it, and the "
                   "longest wait between two of its callbacks.",
                   [("facility", facility), ("ns/expired timer", spread("ns_per_timer")),
                    ("vs twheel", vs("ns_per_timer")),
                    ("longest run ms", spread("max_run_us", 1e-3)), ("vs twheel", vs("max_run_us")),
                    ("longest gap between callbacks us", spread("cb_gap_us")),
                    ("vs twheel", vs("cb_gap_us")),
                    ("of them inside a run us", spread("run_gap_us")),
                    ("vs twheel", vs("run_gap_us")),
                    ("all done after ms", spread("span_us", 1e-3)),
                    ("first callback late ms", spread("first_late_us", 1e-3))],
                   ordered(e for e in self.select(3)
                           if "timers" in e[0] and "pattern" not in e[0]),
                   self.find(3, facility="twheel", timers=n))
        tw3 = self.find(3, facility="twheel", timers=n)
        if tw3 and tw3.get("handoffs"):
            self.note("A wait between two callbacks is a hand-off if the watching task ran in "
                      "it (the expiry gave the CPU back between two runs), else a gap inside a "
                      "run (an interrupt, mostly a tick's). twheel's hand-offs per burst: "
                      f"{num(med(tw3.get('handoffs')))}, each {num(med(tw3.get('handoff_p50_us')))} "
                      f"us (median; the task's part {num(med(tw3.get('handoff_task_p50_us')))} "
                      f"us), the longest {num(med(tw3.get('handoff_max_us')))} us (medians over "
                      "the repetitions).")
        titles = {
            "spread": "The same, {n} one-shot timers due uniformly over 400 ms (spread_ms) "
                      "rather than in one granule: a few timers per run (issue 43, item 5). "
                      "twheel_slack_jiffy: twheel's timers with a slack of a jiffy "
                      "(timer_list's first level); twheel_slack_eighth: with an eighth of "
                      "the delay (timer_list's bound past its first level, where most of "
                      "these fall).",
            "relative": "The same, {n} one-shot timers each armed for one delay from its "
                        "own arming, as a loop of mod_timer(t, jiffies + d) arms them: "
                        "their deadlines spread over the arming loop's time.",
            "small": "The same, {n} one-shot timers due at one deadline: the burst at a size "
                     "that stays in the caches.",
        }
        for pat, title in titles.items():
            rows = ordered(e for e in self.select(3)
                           if e[0].get("pattern") == pat and "item" not in e[0])
            if not rows:
                continue
            tws = next((m for d, m in rows if d["facility"] == "twheel"), None)
            net = {d["facility"]: self.find(3, facility=d["facility"], pattern=pat,
                                            item="net") or {} for d, _ in rows}
            twn = net.get("twheel")
            self.subgrid(3, title.format(n=self.first(3, "timers", pattern=pat) or "?") +
                         " Net: less what the same task loses over the same span with no "
                         "timers at all (the floor: its ticks). Waits: callbacks that came "
                         "more than 10 us after the one before (one per expiry pass, and "
                         "the interrupts inside one).",
                         ["facility", "ns/expired timer", "vs twheel", "net ns", "vs twheel",
                          "timer interrupts per 100 timers", "waits per 100 timers",
                          "longest run ms", "all done after ms"],
                         [[d["facility"], spread("ns_per_timer")(d, m, tws),
                           vs("ns_per_timer")(d, m, tws),
                           spread("net_ns_per_timer")(d, net[d["facility"]], twn),
                           vs("net_ns_per_timer")(d, net[d["facility"]], twn),
                           spread("irqs_per_100_timers")(d, net[d["facility"]], twn),
                           spread("waits_per_100_timers")(d, net[d["facility"]], twn),
                           spread("max_run_us", 1e-3)(d, m, tws),
                           spread("span_us", 1e-3)(d, m, tws)] for d, m in rows])
            fl = self.find(3, facility="none", pattern="spread", item="floor")
            if fl and pat == "spread":
                self.note(f"The floor: {num(med(fl.get('busy_ns_per_ms')))} ns lost per ms "
                          f"with no timers, {num(med(fl.get('irqs_per_s')))} timer interrupts "
                          "a second (medians over the repetitions).")
            runs = [(f, self.find(3, facility=f, pattern=pat, item="runs"))
                    for f in ("twheel", "twheel_slack_jiffy", "twheel_slack_eighth")]
            runs = [f"{f} {num(med(m.get('inside_ns_per_timer')))} ns a timer inside its "
                    f"wheel's runs, {num(med(m.get('programs_per_100_timers')))} hrtimer "
                    "programmings per 100 timers" for f, m in runs if m]
            if runs:
                self.note("Of it, twheel's own time (debugfs advance_ns + expire_ns of the "
                          "CPU, medians): " + "; ".join(runs) + "; the rest is the "
                          "interrupts, softirqs and hrtimer work around the runs, and "
                          "the ticks both facilities take.")
        dbg = self.find(3, facility="twheel", item="debugfs")
        if dbg:
            self.note(f"twheel's own count (debugfs max_batch): at most "
                      f"{num(med(dbg.get('max_batch')))} expiries in one run of a wheel "
                      "(expire_batch); it re-arms at once for the rest.")
        if dbg and dbg.get("advance_ns_per_timer"):
            self.note("Where twheel's wheel runs spent their time, per expired timer over the "
                      f"whole run ({num(med(dbg.get('expired')))} expiries): advancing the wheel "
                      f"{num(med(dbg.get('advance_ns_per_timer')))} ns, claiming, running and "
                      f"finishing the due timers {num(med(dbg.get('expire_ns_per_timer')))} ns; "
                      "the rest of ns/expired timer is the softirq and hrtimer around the runs.")

    def goals13(self):
        """The goals of the in-kernel hot path (issue 13), from tables 1-3 and 6."""
        def ratios(n, metric, peer, **want):  # peer / twheel
            return paired(self.series(n, metric, facility=peer, **want),
                          self.series(n, metric, facility="twheel", **want))

        goals, pend = [], [n for n, in self.keys(1, "pending")]
        for n in pend:
            goals.append((f"arm + cancel, timer_list / twheel, {n:,} pending",
                          ratios(1, "ns_per_op", "timer_list", pending=n)))
        if pend:
            low, top = pend[0], pend[-1]
            goals.append((f"arm + cancel, hrtimer / twheel, {top:,} pending",
                          ratios(1, "ns_per_op", "hrtimer", pending=top), ">=", 3))
            for n in (low, top):
                goals += [(f"arm alone, mod_timer / twheel_schedule, {n:,} pending",
                           ratios(1, "arm_ns", "timer_list", pending=n)),
                          (f"re-arm pending, mod_timer / twheel_schedule, {n:,} pending",
                           ratios(1, "rearm_ns", "timer_list", pending=n))]
            goals.append((f"growth of twheel's arm + cancel, {low:,} -> {top:,} pending",
                          paired(self.series(1, "ns_per_op", facility="twheel", pending=top),
                                 self.series(1, "ns_per_op", facility="twheel", pending=low)),
                          "<=", 1.10))
        n3 = self.first(3, "timers")
        if n3:
            goals += [("expiry, timer_list / twheel, ns per expired timer",
                       ratios(3, "ns_per_timer", "timer_list", timers=n3)),
                      ("longest expiry stretch, timer_list / twheel",
                       ratios(3, "max_run_us", "timer_list", timers=n3))]
        ns3 = self.first(3, "timers", pattern="spread")
        if ns3:
            goals.append(("expiry spread over many ticks, timer_list / twheel (issue 43)",
                          ratios(3, "ns_per_timer", "timer_list", timers=ns3,
                                 pattern="spread")))
            for pat, what in (("relative", "timers armed for one delay in a loop"),
                              ("small", "a burst that stays in the caches")):
                nr3 = self.first(3, "timers", pattern=pat)
                if nr3:
                    goals.append((f"expiry of {int(nr3):,} {what}, timer_list / twheel "
                                  "(issue 43)",
                                  ratios(3, "ns_per_timer", "timer_list", timers=nr3,
                                         pattern=pat)))
            for f, what in (("twheel_slack_jiffy", "a jiffy's slack"),
                            ("twheel_slack_eighth", "an eighth of the delay as slack")):
                if self.find(3, facility=f, pattern="spread"):
                    goals.append((f"the same, twheel with {what} (timer_list's precision)",
                                  paired(self.series(3, "ns_per_timer", facility="timer_list",
                                                     timers=ns3, pattern="spread"),
                                         self.series(3, "ns_per_timer", facility=f,
                                                     timers=ns3, pattern="spread"))))
        for fac in ("timer_list", "hrtimer"):
            goals.append((f"remote cancel, {fac} / twheel, all rows of table 2",
                          [r for batch, n in self.keys(2, "batch", "pending")
                           for r in ratios(2, "cancel_ns", fac, pending=n, batch=batch)]))
        size = self.series(6, "sizeof", facility="twheel",
                           timers=self.first(6, "timers", facility="twheel"))
        if size:
            goals.append(("sizeof(struct twheel_timer) / 64 bytes", [size[0] / 64], "<=", 1))
        self.grid(3, ["goal (issue 13)", "ratio", "per repetition", "goal", ""],
                  [goal(what, rs, *bound) for what, rs, *bound in goals])
        self.note("Ratios are peer / twheel (above 1: twheel cheaper), paired by "
                  "repetition; growth and size are twheel's own.")

    def table4(self):
        def most_early(d, m, tw):
            least = min(nums(m.get("min_us")), default=0)
            return num(-least) if least < 0 else "-"

        n = self.first(4, "timers")
        self.table(4, f"lateness, {int(n):,} timers pending" if n else "lateness",
                   "How late callbacks run after their deadline (delays 1 ms - 2 s, "
                   "log-uniform), and how many ran early (must be 0 for twheel).",
                   [("facility", facility), *LATENCY, ("early (all reps)", total("early")),
                    ("most early us", most_early), *LATENCY_VS],
                   ordered(self.select(4)), self.find(4, facility="twheel", timers=n))

    def table5(self):
        names = {"none": "no timers", "netty_tick": "Netty-style tick (1 granule)"}
        self.table(5, "interrupts on an idle CPU",
                   "Local timer interrupts per second on an otherwise idle CPU, with no timers, "
                   "with far-future timers (1-16 h) of each facility armed on it, and with a "
                   "Netty-style wheel: an hrtimer that ticks every granule.",
                   [("timers", lambda d, m, tw: names.get(d["facility"], d["facility"])),
                    ("pending", lambda d, m, tw: f"{int(d.get('timers', 0)):,}"
                     if int(d.get("timers", 0)) else "-"),
                    ("interrupts/s", spread("irqs_per_s")), ("vs twheel", vs("irqs_per_s"))],
                   ordered([e for e in self.select(5) if "timers" in e[0]],
                           ["none", "twheel", "twheel_slack0", "timer_list", "hrtimer",
                            "netty_tick"]),
                   self.find(5, facility="twheel", timers=self.first(5, "timers",
                                                                     facility="twheel")))
        sprd = ordered([e for e in self.select(5) if "spread" in e[0]],
                         ["twheel", "twheel_slack0", "hrtimer", "twheel_fd",
                          "twheel_fd_slack0", "timerfd", "timerfd_slack0"],
                         key=lambda d: d.get("facility"))
        sprd.sort(key=lambda e: e[0].get("slack_ns") == "0")
        if sprd:
            n = sprd[0][0]["spread"]
            self.note(f"{int(n):,} timers due at random over one second (from 100 ms on), "
                      "armed on the idle CPU with a slack (twheel_timer_set_slack() or "
                      "TWHEEL_TIMER_SLACK; hrtimer_start_range_ns(); a timerfd's is its "
                      "task's, prctl(PR_SET_TIMERSLACK)): local timer interrupts of that CPU "
                      "until all were due. In the kernel (twheel_bench.ko) and from "
                      "userspace (twheel_bench spread: /dev/twheel, timerfds); nobody reads "
                      "the expiries.")
            grid = []
            for d, m in sprd:
                user = d["facility"] in ("twheel_fd", "timerfd", "twheel_fd_slack0",
                                         "timerfd_slack0")
                peer = "timerfd" if user else "hrtimer"
                if d.get("slack_ns") == "0":
                    peer += "_slack0" if user else ""
                pm = self.find(5, facility=peer, spread=d["spread"], slack_ns=d["slack_ns"])
                grid.append([d["facility"], "userspace" if user else "kernel",
                             f"{int(d['slack_ns']) / 1e6:g} ms", cell(m.get("irqs")),
                             cell(m.get("seconds")),
                             f"{sum(nums(m.get('fired'))):.0f}" if m.get("fired") else "-",
                             ratio(med(pm and pm.get("irqs")), med(m.get("irqs")))
                             if pm else "-"])
            if not self.markdown:
                print()
            self.grid(5, ["timers", "armed from", "slack", "interrupts", "seconds",
                          "fired (all reps)", "hrtimer or timerfd / this"],
                      grid)

    def table6(self):
        # The first twheel_work_timer row ends the grid: its struct and slab object only.
        work = [(d, {k: v for k, v in m.items() if k in ("sizeof", "slab_object")})
                for d, m in self.select(6, facility="twheel_work_timer")][:1]
        self.table(6, "memory",
                   "Bytes per timer: the struct, the slab object it takes when allocated alone, "
                   "and the slab growth measured for 1M of them; arming allocates nothing more.",
                   [("timer", facility), ("sizeof", median("sizeof")),
                    ("slab object", median("slab_object")),
                    ("measured bytes/timer", median("slab_per_timer")),
                    ("extra when armed", median("armed_extra")),
                    ("vs twheel", vs("slab_per_timer"))],
                   ordered(e for e in self.select(6) if "timers" in e[0]) + work,
                   self.find(6, facility="twheel",
                             timers=self.first(6, "timers", facility="twheel")))
        per = []
        wheel = self.find(6, facility="twheel", item="wheel") or {}
        twcpu = float(self.meta.get("twheel_cpu_bytes", 0) or 0)
        levels, buckets = med(wheel.get("levels")), med(wheel.get("buckets"))
        if levels and buckets:
            bitmap = math.ceil(levels * buckets / 64) * 8
            per.append(["twheel", num(twcpu + levels * buckets * 16 + bitmap),
                        f"struct twheel_cpu {num(twcpu)} + {num(levels)} levels x "
                        f"{num(buckets)} buckets x 16 + bitmap {num(bitmap)}"])
        tb = self.find(6, facility="kernel", item="timer_bases")
        if tb:
            per.append(["timer_list", num(med(tb.get("bytes"))),
                        "timer_bases: 3 timer_base (kallsyms); always there"])
        hb = (self.find(6, facility="kernel", item="hrtimer_bases") or
              self.find(6, facility="hrtimer", item="percpu"))
        if hb:
            per.append(["hrtimer", num(med(hb.get("bytes"))),
                        "hrtimer_bases: struct hrtimer_cpu_base; always there"])
        if per:
            self.note("Per CPU:" + ("\n" if self.markdown else ""))
            self.grid(6, ["facility", "bytes per CPU", "what"], per)
        load = self.find(6, facility="twheel", item="load")
        if load:
            self.note(f"Loading twheel.ko: slab +{num(med(load.get('slab_kib')))} KiB, vmalloc +"
                      f"{num(med(load.get('vmalloc_kib')))} KiB, module "
                      f"{num(med(load.get('module_bytes')))} bytes.")

    def table7(self):
        single = self.find(7, facility="twheel_ioctl")
        modify = self.find(7, facility="twheel_modify")
        b64 = self.find(7, facility="twheel_batch", chunk=64)
        floor = med(self.series(7, "ns_per_op", facility="twheel_info_floor"))

        def name(d):
            return T7_NAMES.get((d["facility"], d["chunk"]), (f"{d['facility']} x{d['chunk']}", 2))

        def series(row):
            fac, chunk = row.split()
            return self.series(7, "ns_per_op", facility=fac, chunk=chunk)

        self.table(7, "schedule + cancel from userspace",
                   "ns per timer (arm, then cancel/disarm), random delays 100 ms - 109 min; "
                   "timerfds and POSIX timers created beforehand. No unbatched call can beat "
                   "the floor.",
                   [("method", lambda d, m, tw: name(d)[0]), ("ns/timer", spread("ns_per_op")),
                    ("vs twheel ioctl", vs("ns_per_op")),
                    ("vs twheel batch 64",
                     lambda d, m, tw: vs("ns_per_op")(d, m, b64) if name(d)[1] == 2 else "-"),
                    ("vs floor", lambda d, m, tw: ratio(med(m.get("ns_per_op")),
                                                        floor * name(d)[1] / 2 if floor else None)),
                    ("fired first", total("fired"))],
                   ordered(self.select(7), T7_NAMES,
                           key=lambda d: (d.get("facility"), d.get("chunk"))),
                   ref=lambda d: single if name(d)[1] == 2 else modify,
                   skip=lambda d, m: "chunk" not in d and skipped(
                       d, 4, "skipped: " + ",".join(m.get("reason", []))))
        self.note("Re-arm rows: one call per timer, compared with twheel MODIFY and with one "
                  "TWHEEL_IOC_INFO (half the floor).")
        t1 = self.series(1, "ns_per_op", facility="twheel", pending=1000)
        self.grid(7, ["goal (issue 12)", "ratio", "per repetition", "goal", ""],
                  [goal(what, paired(series(x), series(ref) if ref else t1), op, bound, big=10)
                   for what, x, ref, op, bound in T7_GOALS])
        self.note("Goal ratios are paired: each repetition's two rows ran a moment apart; the "
                  "median of the repetitions' ratios (table 1's repetitions for its row).")
        self.table7_ring()

    def table7_ring(self):
        """The submission ring's rows of table 7: their parts and goals (issue 27)."""
        ring = [(d, m) for d, m in self.select(7) if d.get("facility") in
                ("twheel_ring", "twheel_ring_enter", "twheel_ring_tick") and "chunk" in d]
        if not ring:
            return

        def series(row):
            fac, chunk = row.split()
            return self.series(7, "ns_per_op", facility=fac, chunk=chunk)

        self.note("Ring rows, ns per timer: " + "; ".join(
            f"{T7_NAMES.get((d['facility'], d['chunk']), (d['facility'],))[0]}: program "
            f"{cell(m.get('prog_ns'))}, kernel drain {cell(m.get('drain_ns'))}"
            for d, m in ring) + ". The drain's time is the kernel's own, timed inside each "
                  "drain (fdinfo twheel-ring-drain-ns), whoever ran it: the per-tick poller, "
                  "but for the RING_ENTER row; the program's part has no system call.")
        t1 = self.series(1, "ns_per_op", facility="twheel", pending=1000)
        self.grid(7, ["goal (issue 27)", "ratio", "per repetition", "goal", ""],
                  [goal(what, paired(series(x), series(ref) if ref else t1), op, bound, big=10)
                   for what, x, ref, op, bound in T7_RING_GOALS])

    def table8(self):
        tw = self.find(8, facility="twheel")
        self.table(8, "from the deadline to userspace",
                   "us from a timer's deadline until a thread blocked in epoll_wait (twheel's "
                   "eventfd, a timerfd) or io_uring_wait_cqe has the expiry; delays 2-12 ms.",
                   [("facility", facility), *LATENCY, ("early", total("early")), *LATENCY_VS],
                   self.select(8), tw, skip=lambda d, m: "samples" not in d and skipped(d, 5))
        if tw and tw.get("fired_p50_us"):
            self.note(f"twheel from the moment its wheel ran the expiry (the record's fired time) "
                      f"to the reader: p50 {cell(tw.get('fired_p50_us'))} us, "
                      f"p99 {cell(tw.get('fired_p99_us'))} us.")
        t0 = self.find(8, facility="twheel_slack0")
        if t0 and t0.get("fired_p50_us"):
            self.note(f"twheel_slack0 (slack 0: the precise stage) from its fired time to the "
                      f"reader: p50 {cell(t0.get('fired_p50_us'))} us, "
                      f"p99 {cell(t0.get('fired_p99_us'))} us.")
        tr = self.find(8, facility="twheel_ring")
        if tr and tr.get("fired_p50_us"):
            self.note(f"twheel_ring (armed through the submission ring, no system call; issue "
                      f"27) from its fired time to the reader: p50 "
                      f"{cell(tr.get('fired_p50_us'))} us, p99 {cell(tr.get('fired_p99_us'))} us.")
        if tr and tw:
            # The ring's documented extra lateness: one tick, whoever drains.
            wheel = self.find(6, facility="twheel", item="wheel") or {}
            gran_us = (nums(wheel.get("granularity_ns")) or [1000000])[0] / 1000
            rows = []
            for q in ("p50_us", "p99_us"):
                extra = [(a - b) / gran_us for a, b in zip(self.series(8, q, facility="twheel_ring"),
                                                           self.series(8, q, facility="twheel"))]
                rows.append(goal(f"ring: deadline to reader {q[:3]}, twheel_ring - twheel, "
                                 "in ticks", extra, "<=", 1))
            early = self.series(8, "early", facility="twheel_ring")
            rows.append(goal("ring: early expiries (all reps)", [sum(early)] if early else [],
                             "<=", 0))
            print("\n" if self.markdown else "")
            self.grid(8, ["goal (issue 27)", "ratio", "per repetition", "goal", ""], rows)

    def goals28(self):
        """The goals of precise timers, expiry and remote arming (issue 28), tables 1-5, 8."""
        def ser(n, metric, fac, **want):
            return self.series(n, metric, facility=fac, **want)

        goals = []
        pend = [n for n, in self.keys(1, "pending")
                if self.find(1, facility="twheel_slack0", pending=n)]
        for n in (pend[:1] + pend[-1:] if len(pend) > 1 else pend):
            goals.append((f"slack 0: arm + cancel, hrtimer / twheel_slack0, {n:,} pending",
                          paired(ser(1, "ns_per_op", "hrtimer", pending=n),
                                 ser(1, "ns_per_op", "twheel_slack0", pending=n)), ">=", 1))
        n4 = self.first(4, "timers")
        # Each kind of callback against the hrtimer of its kind: softirq
        # callbacks against HRTIMER_MODE_SOFT's (when the run has them; runs
        # before 2026-11-28 do not), hard-interrupt ones (TWHEEL_F_HARDIRQ)
        # against the hard hrtimer's. The softirq ones against the hard
        # hrtimer too: what the softirq hop costs.
        pairs4 = [("twheel_slack0", "hrtimer", "slack 0, softirq vs hard hrtimer")]
        if n4 and self.find(4, facility="hrtimer_soft", timers=n4):
            pairs4.insert(0, ("twheel_slack0", "hrtimer_soft", "slack 0"))
        pairs4.append(("twheel_slack0_hardirq", "hrtimer", "slack 0, hard irq"))
        for fac4, peer4, how in pairs4:
            if not (n4 and self.find(4, facility=fac4, timers=n4)):
                continue
            for q in ("p50_us", "p99_us"):
                goals.append((f"{how}: lateness {q[:3]}, {fac4} / {peer4} (table 4)",
                              paired(ser(4, q, fac4, timers=n4),
                                     ser(4, q, peer4, timers=n4)), "<=", 1.2))
        for fac4, how in (("twheel_slack0", "slack 0"),
                          ("twheel_slack0_hardirq", "slack 0, hard irq")):
            early = ser(4, "early", fac4, timers=n4) if n4 else []
            if early:
                goals.append((f"{how}: early callbacks (table 4, all reps)",
                              [sum(early)], "<=", 0))
        n5 = self.first(5, "timers", facility="twheel_slack0")
        if n5:
            goals.append((f"slack 0: interrupts/s with {int(n5):,} far timers / with none",
                          paired(ser(5, "irqs_per_s", "twheel_slack0", timers=n5),
                                 ser(5, "irqs_per_s", "none")), "<=", 1))
        for peer, tw, where in (("hrtimer", "twheel", "kernel"),
                                ("timerfd", "twheel_fd", "userspace")):
            sp = self.first(5, "spread", facility=tw)
            if sp:
                goals.append((f"1 ms slack, {int(sp):,} due over 1 s: interrupts, {peer} / "
                              f"twheel ({where})",
                              paired(ser(5, "irqs", peer, spread=sp, slack_ns=1000000),
                                     ser(5, "irqs", tw, spread=sp, slack_ns=1000000)),
                              ">=", 1))
        if self.find(8, facility="twheel_slack0"):
            for q in ("p50_us", "p99_us"):
                goals.append((f"slack 0: deadline to reader {q[:3]}, twheel_slack0 / timerfd "
                              "(table 8)",
                              paired(ser(8, q, "twheel_slack0"), ser(8, q, "timerfd")),
                              "<=", 1.1))
            e8 = ser(8, "early", "twheel_slack0")
            goals.append(("slack 0: early expiries (table 8, all reps)",
                          [sum(e8)] if e8 else [], "<=", 0))
        n3 = self.first(3, "timers")
        if n3 and self.series(3, "cb_gap_us", facility="twheel", timers=n3):
            goals += [("expiry, timer_list / twheel, ns per expired timer (table 3)",
                       paired(ser(3, "ns_per_timer", "timer_list", timers=n3),
                              ser(3, "ns_per_timer", "twheel", timers=n3)), ">=", 1),
                      ("expiry, longest gap between two callbacks, timer_list / twheel",
                       paired(ser(3, "cb_gap_us", "timer_list", timers=n3),
                              ser(3, "cb_gap_us", "twheel", timers=n3)), ">=", 1)]
            if self.series(3, "run_gap_us", facility="twheel", timers=n3):
                goals.append(("expiry, longest gap inside a run, timer_list / twheel "
                              "(information: the ticks both take)",
                              paired(ser(3, "run_gap_us", "timer_list", timers=n3),
                                     ser(3, "run_gap_us", "twheel", timers=n3)), ">=", 1))
        for d, m in self.remote():
            # arm_at is shown beside add_timer_on() in table 2, not a goal:
            # the goal is the relative arming.
            if d["facility"] != "twheel" or d["op"] in ("rearm_pinned", "arm_at"):
                continue
            goals.append((f"remote {d['op']}, B {d['owner']}, timer_list / twheel, "
                          f"{int(d['pending']):,} pending",
                          paired(ser(2, "ns_per_op", "timer_list", op=d["op"], owner=d["owner"],
                                     pending=d["pending"]), nums(m.get("ns_per_op"))),
                          ">=", 1))
        if not goals:
            return
        print("\n" if self.markdown else "")
        self.grid(28, ["goal (issue 28)", "ratio", "per repetition", "goal", ""],
                  [goal(what, rs, *bound) for what, rs, *bound in goals])
        self.note("Ratios paired by repetition (rows a moment apart); early counts are "
                  "totals over the repetitions.")

    def table9(self):
        mem = med((self.find(0, part="scale") or {}).get("mem_kib"))
        # A skipped row is a cell short: the text grid then drops the last column.
        self.table(9, "most pending timers in one process" +
                   (f", {mem / 1024:.0f} MiB VM" if mem else ""),
                   "Timers armed (1 h away) until free memory falls to 64 MiB or the facility "
                   "refuses; the kernel memory they took (MemFree and Slab deltas).",
                   [("facility", facility), ("timers", spread("timers")),
                    ("vs twheel", vs("timers")),
                    ("stopped by", lambda d, m, tw: ",".join(sorted(set(m.get("stop", []))))),
                    ("kernel MiB", spread("kernel_kib", 1 / 1024)),
                    ("bytes/timer", spread("bytes_per_timer")), ("fill s", spread("seconds")),
                    ("teardown s", spread("teardown_s"))],
                   self.select(9), self.find(9, facility="twheel"),
                   skip=lambda d, m: "skipped" in m and skipped(d, 5))

    def table10(self):
        """An HTTP server's timeouts (examples/httpd-load.sh): a row per backend and
        connection count, keep-alive figures beside the quiet phase's."""
        keep = {(d["backend"], int(d["conns"])): m for d, m in self.select(10, phase="keepalive")}
        quiet = {(d["backend"], int(d["conns"])): m for d, m in self.select(10, phase="quiet")}
        prof = {(d["backend"], int(d["conns"])): m for d, m in self.select(10, phase="profile")}
        if not keep and not quiet:
            self.missing.append(10)
            return
        order = ["twheel", "heap", "timerfd"]
        rows = sorted(set(keep) | set(quiet),
                      key=lambda k: (k[1], order.index(k[0]) if k[0] in order else 9))
        print(f"\n### Table 10: an HTTP server's timeouts\n\n" if self.markdown else
              "\n== Table 10: an HTTP server's timeouts\n   ", end="")
        print("examples/twheel_httpd under wrk (keep-alive, idle timeout 30 s pushed back on "
              "every request, a 5 s deadline per request), then a quiet phase where a tenth "
              "of the connections go silent: how late their idle closes came (ms after "
              "last request + idle timeout), and none early, lost or twice. CPU: the "
              "server's utime + stime per request; machine: the whole guest's busy CPU "
              "per request (/proc/stat), wrk's share and the kernel's uncharged work (the "
              "ring's drain runs in a kworker) included; timer %: the share of the server's perf samples "
              "(the keep-alive load again, under perf's cpu-clock at 999 Hz) in timer work, kernel and user "
              "(examples/httpd-load.sh says which symbols). tw KiB: twheel's kernel memory for the "
              "server's timers (its slab units); slab KiB: the slab growth of the whole "
              "machine mid-phase. vs twheel: this backend's figure / twheel's at the same "
              "count. wrk's own figures stand beside the server's counters.\n")
        grid = []
        for b, n in rows:
            k, q = keep.get((b, n), {}), quiet.get((b, n), {})
            tk = keep.get(("twheel", n), {})
            wrk = (f"{(k.get('wrk_requests') or ['-'])[0]}/{(k.get('requests') or ['-'])[0]}, "
                   f"{(k.get('lat_p50') or ['-'])[0]}/{(k.get('lat_p99') or ['-'])[0]}, "
                   f"{(k.get('sock_errors') or ['-'])[0]}/{(k.get('non2xx') or ['-'])[0]}")
            grid.append([b, f"{n:,}", wrk, num(med(k.get("rps"))),
                         ratio(med(k.get("rps")), med(tk.get("rps"))),
                         num(med(k.get("cpu_us_per_req"))),
                         ratio(med(k.get("cpu_us_per_req")), med(tk.get("cpu_us_per_req"))),
                         num(med(k.get("machine_us_per_req"))),
                         ratio(med(k.get("machine_us_per_req")),
                               med(tk.get("machine_us_per_req"))),
                         num(med(prof.get((b, n), {}).get("timer_pct"))),
                         num(med(k.get("tw_kb"))) if b == "twheel" else "-",
                         num(med(k.get("slab_kb"))),
                         "/".join(num(med(q.get(x))) for x in
                                  ("late_p50_ms", "late_p99_ms", "late_max_ms")) if q else "-",
                         "/".join(num(med(q.get(x))) for x in ("early", "lost", "twice"))
                         if q else "-",
                         (k.get("check") or ["-"])[0] + "/" + (q.get("check") or ["-"])[0]])
        self.grid(10, ["backend", "conns",
                       "requests wrk/server, wrk latency p50/p99, socket errors/non-2xx",
                       "req/s", "vs twheel", "CPU us/req", "vs twheel",
                       "machine us/req", "vs twheel", "timer %",
                       "tw KiB", "slab KiB", "idle late p50/p99/max ms", "early/lost/twice",
                       "checks"], grid)
        # Issue 27: the ring backend's CPU per request against the heap's,
        # paired by repetition (httpd-load.sh -r: the order reversed in
        # every other one, so a drifting host weighs on both alike).
        goals = []
        for n in sorted({n for _, n in rows}):
            ring, heap = keep.get(("twheel-ring", n)), keep.get(("heap", n))
            if not ring or not heap:
                continue
            for metric, what in (("cpu_us_per_req", "server's"),
                                 ("machine_us_per_req", "machine's")):
                rs = paired(nums(ring.get(metric)), nums(heap.get(metric)))
                if rs:
                    goals.append(goal(f"{n:,} connections, twheel-ring / heap, {what} CPU "
                                      "per request", rs, "<=", 1))
        if goals:
            print()
            self.grid(10, ["goal (issue 27)", "ratio", "per repetition", "goal", ""], goals)

    def table11(self):
        """Wake-ups of idle CPUs: a row per facility, from its cpu=idle line (the
        idle CPUs together) and its cpu=N lines."""
        user = ("twheel_fd", "timerfd")
        rows = ordered(self.select(11, cpu="idle"),
                       ["none", "twheel", "twheel_pinned", "twheel_slack10", "timer_list",
                        "timer_list_pinned", "hrtimer", "twheel_fd", "timerfd"])

        def per_s(m, key):
            v = [a / b for a, b in zip(nums(m.get(key)), nums(m.get("seconds"))) if b]
            return v

        grid = []
        for d, m in rows:
            fac = d["facility"]
            if "skipped" in m:
                grid.append(skipped(d, 6))
                continue
            peer = self.find(11, facility="timerfd" if fac in user else "timer_list",
                             cpu="idle")
            cpus = sorted(int(e["cpu"]) for e, _ in self.select(11, facility=fac)
                          if e.get("cpu", "").isdigit())
            each = []
            awake = "-"
            for c in cpus:
                cm = self.find(11, facility=fac, cpu=str(c)) or {}
                w = med(per_s(cm, "wakeups"))
                if (cm.get("awake") or ["0"])[0] == "1":
                    awake = num(w)
                else:
                    each.append(num(w))
            fired = sum(nums(m.get("fired"))) if m.get("fired") else None
            every = sum(nums(m.get("all_fired"))) if m.get("all_fired") else None
            wk, pw = med(per_s(m, "wakeups")), med(per_s(peer or {}, "wakeups"))
            grid.append([fac, "userspace" if fac in user else "kernel",
                         cell(per_s(m, "wakeups")), " / ".join(each) or "-",
                         cell(per_s(m, "loc")), awake,
                         f"{100 * fired / every:.0f}%" if fired is not None and every
                         else "-",
                         ratio(wk, pw) if peer and fac not in ("timer_list", "timerfd",
                                                                "none") else "-"])
        ncpu = self.first(11, "cpus", cpu="idle")
        print(f"\n### Table 11: wake-ups of idle CPUs\n" if self.markdown else
              "\n== Table 11: wake-ups of idle CPUs")
        self.note("One CPU kept busy (CPU 0), the others idle; 10,000 timers due 10 ms-10 s "
                  "(uniform), re-armed when they fire (in the kernel from their callback, "
                  "from userspace by the reader on CPU 0), and 1,000 periodic timers of "
                  "100 ms, a quarter armed from each CPU. Per second of the counted "
                  "interval: exits from idle of the idle CPUs together (power:cpu_idle), "
                  "each idle CPU's, their local timer interrupts (LOC), the busy CPU's "
                  "exits, and the share of callbacks run on idle CPUs; \"vs peer\" = this / "
                  "timer_list (kernel) or timerfd (userspace). \"none\": no timers, the "
                  "floor." + (f" {ncpu} idle CPUs." if ncpu else "") +
                  "".join(f" {k}: {v[0]}." for k, v in
                          (self.find(11, item="kernel") or {}).items()))
        if not self.markdown:
            print()
        self.grid(11, ["timers", "armed from", "idle wake-ups/s", "per idle CPU",
                       "idle LOC/s", "busy CPU wake-ups/s", "callbacks on idle CPUs",
                       "vs peer"], grid)
        # twheel's callbacks: how late, whichever CPU ran them (medians over
        # the repetitions); the slack row's may be late by its slack.
        late = []
        for fac in ("twheel", "twheel_pinned", "twheel_slack10"):
            m = self.find(11, facility=fac, item="lateness")
            if not m:
                continue
            late.append([fac] + [num(med(nums(m.get(k))) / 1000)
                                 for k in ("late_p50_us", "late_p99_us", "late_max_us")] +
                        [num(sum(nums(m.get("early"))))])
        if late:
            self.subgrid(11, "twheel's callbacks of the counted interval, ms after their "
                         "deadline (100 us buckets, upper ends; the last bucket is 25.6 ms "
                         "and more); twheel_slack10's may be late by their slack, a tenth "
                         "of their delay.",
                         ["timers", "late p50 (ms)", "late p99 (ms)", "late max (ms)",
                          "early"], late)

    def report(self, elapsed, parts="main scale"):
        # The main part's guest line, else (a run of other parts) the first one.
        m = self.meta
        info = self.find(0, part="main") or next(
            (g for _, g in self.select(0) if "kernel" in g and "cpus" in g), {})
        kernel = (info.get("kernel") or [m.get("kernel", "?")])[0]
        head = (f"twheel benchmarks, {m.get('date', '?')}, kernel {kernel}, "
                f"accelerator {m.get('accel', '?')}, commit {m.get('commit', '?')}")
        vm = (f"guest: {num(med(info.get('cpus')))} vCPUs, "
              f"{num((med(info.get('mem_kib')) or 0) / 1024)} MiB, clocksource "
              f"{(info.get('clocksource') or ['?'])[0]}; host: {m.get('host_cpus', '?')} x "
              f"{m.get('host_cpu', '?').replace('_', ' ')}, load {m.get('host_load', '?')} "
              "at the start")
        print(f"{head}.  \n{vm}." if self.markdown else f"{head}\n{vm}")
        sep = "\n" if self.markdown else ""
        accel = m.get("accel", "?")
        if accel == "icount":
            print(sep + ("> " if self.markdown else "") +
                  "Under ICOUNT the guest's clocks count the instructions it executes, one "
                  "ns each: every ns figure of tables 1-3 is a count of guest instructions, "
                  "the same in every repetition, whatever the host does; what an instruction "
                  "costs (an atomic, a cache miss, an emulated clock read) is not in it.")
        elif accel != "kvm":
            print(sep + ("> " if self.markdown else "") +
                  f"Under {accel.upper()} emulation absolute times mean little: every "
                  "instruction, timer interrupt and IPI is emulated. Compare the ratios of rows "
                  "measured in the same run.")
        print(sep + "Figures: median over the repetitions (min-max in parentheses); \"vs twheel\" "
              "= this row / twheel's row (below 1: cheaper or better than twheel).")
        for table in (self.table1, self.table2, self.table3, self.goals13, self.table4,
                      self.table5, self.table6, self.table7, self.table8, self.goals28,
                      self.table9,
                      self.table10, self.table11):
            table()
        done = self.find(0, done=1) or {}
        extra = [f"make bench wall time: {elapsed} s"] if elapsed else []
        if done.get("seconds"):
            extra.append(f"in-kernel tables: {done['seconds'][0]} s")
        if done.get("stray_callbacks"):
            extra.append(f"stray callbacks: {done['stray_callbacks'][0]}")
        if done.get("cut_short") and done["cut_short"][0] != "0":
            extra.append("the in-kernel run was CUT SHORT (time_limit)")
        if extra:
            print("\n" + "; ".join(extra) + ".")
        # Tables 1-8 come from the main part, table 9 from the scale part,
        # table 7 alone from the ops part; the kernel part runs the tables
        # TWHEEL_BENCH_ARGS picks, so none is required of it.
        want = {t for t in range(1, 10) if ("main" if t != 9 else "scale") in parts.split()}
        if "httpd" in parts.split():
            want.add(10)
        if "idle" in parts.split():
            want.add(11)
        if "ops" in parts.split():
            want.add(7)
        missing = sorted(t for t in set(self.missing) if t in want)
        if missing:
            print("\nbench-report: no data for table(s) "
                  f"{', '.join(map(str, missing))}", file=sys.stderr)
        return 1 if missing else 0


def compare(args):
    old, new = Raw(args.old), Raw(args.new)
    print(f"old: {old.meta.get('date', '?')} {old.meta.get('commit', '?')}   "
          f"new: {new.meta.get('date', '?')} {new.meta.get('commit', '?')}")
    print(f"{'table':<5} {'row':<52} {'metric':<16} {'old':>10} {'new':>10} {'new/old':>8}")
    for key, metrics in new.rows.items():
        if key not in old.rows:
            continue
        for metric, values in metrics.items():
            a, b = med(old.rows[key].get(metric)), med(values)
            if a is not None and b is not None:
                print(f"{key[0]:<5} {key[1][:52]:<52} {metric[:16]:<16} {num(a):>10} "
                      f"{num(b):>10} {ratio(b, a):>8}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--meta", action="append", default=[])
    c.add_argument("outputs", nargs="*")
    r = sub.add_parser("report")
    r.add_argument("--markdown", action="store_true")
    r.add_argument("--elapsed")
    r.add_argument("--parts", default="main scale")
    r.add_argument("raw")
    k = sub.add_parser("compare")
    k.add_argument("old")
    k.add_argument("new")
    args = ap.parse_args()
    if args.cmd == "collect":
        return collect(args) or 0
    if args.cmd == "report":
        return Report(args.raw, args.markdown).report(args.elapsed, args.parts)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
