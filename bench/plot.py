#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Draw the figures of BENCHMARKS.md from make bench's raw files.

  bench/plot.py OUTDIR RAW.tsv...

One SVG per figure whose table is in one of the raw files (a later file's
table replaces an earlier one's): table1.svg (in-kernel cost per timer
against pending timers), table4.svg and table8.svg (lateness: p50, p99 and
max per facility), table5.svg (interrupts on an idle CPU), table7.svg
(userspace cost per timer, by method), table10.svg (an HTTP server's
CPU per request, by backend and connection count) and table11.svg
(wake-ups of the idle CPUs, per mechanism, grouped by kernel: every file
with table 11 adds its kernel's group, a later file of the same kernel
replacing an earlier one's). Every point is the median over the
repetitions, its bar the min-max, as in the tables.

Needs matplotlib (Debian: python3-matplotlib; run it with /usr/bin/python3,
not a python3 of another prefix): without it, it says so and exits 0, so
that make bench does not fail for want of a plot.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import T7_NAMES, Raw, med, num, nums  # noqa: E402

try:
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError:
    plt = None

COLORS = {"twheel": "C0", "timer_list": "C1", "hrtimer": "C2", "twheel_slack0": "C3",
          "twheel_slack0_hardirq": "C4", "hrtimer_soft": "C5", "timerfd": "C1",
          "io_uring": "C2", "twheel_ring": "C4", "heap": "C5", "twheel-ring": "C4"}


def spread(values):
    """median, and its distance to the min and the max, of a metric's repetitions."""
    v = nums(values)
    if not v:
        return None
    m = med(v)
    return m, m - min(v), max(v) - m


def title(raws, text, keys=("date", "commit", "kernel", "accel")):
    """text, then the run's date, commit, kernel and accelerator (of one raw
    file or a list of them: each distinct value once)."""
    raws = raws if isinstance(raws, list) else [raws]
    return f"{text}\n" + ", ".join(", ".join(dict.fromkeys(r.meta.get(k, "?") for r in raws))
                                   for k in keys)


def save(fig, outdir, name):
    fig.tight_layout()
    path = os.path.join(outdir, name)
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    print(f"bench-plot: {path}")


def table1(raw, outdir):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for fac in ("twheel", "timer_list", "hrtimer", "twheel_slack0"):
        pts = sorted((int(d["pending"]), spread(m.get("ns_per_op")))
                     for d, m in raw.select(1, facility=fac) if "pending" in d)
        pts = [(x, s) for x, s in pts if s]
        if pts:
            ax.errorbar([x for x, _ in pts], [s[0] for _, s in pts],
                        yerr=[[s[1] for _, s in pts], [s[2] for _, s in pts]],
                        marker="o", capsize=3, label=fac, color=COLORS[fac])
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("timers pending on the CPU")
    ax.set_ylabel("ns per timer (arm + cancel)")
    ax.set_title(title(raw, "Table 1: schedule + cancel, one CPU"), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, outdir, "table1.svg")


def lateness(raw, outdir, n, order, text, ylabel):
    rows = {d["facility"]: m for d, m in raw.select(n)}
    facs = [f for f in order if f in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, (metric, marker) in enumerate((("p50_us", "o"), ("p99_us", "s"), ("max_us", "^"))):
        pts = [(j, spread(rows[f].get(metric))) for j, f in enumerate(facs)]
        pts = [(j, s) for j, s in pts if s]
        ax.errorbar([j + (i - 1) * 0.18 for j, _ in pts], [s[0] for _, s in pts],
                    yerr=[[s[1] for _, s in pts], [s[2] for _, s in pts]], fmt=marker,
                    capsize=3, label=metric.removesuffix("_us"), color=f"C{i}")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(facs)), facs, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title(raw, text), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, outdir, f"table{n}.svg")


def table5(raw, outdir):
    names = {"none": "no timers", "netty_tick": "Netty-style tick (1 granule)"}
    rows = [(names.get(d["facility"], f"{d['facility']}, {int(d['timers']):,} timers"),
             spread(m.get("irqs_per_s")), d["facility"])
            for d, m in raw.select(5) if "timers" in d]
    rows = [(name, s, COLORS.get(f, "C7")) for name, s, f in rows if s]
    hbars(raw, outdir, "table5.svg", rows, (7, 3.2), 8,
          "local timer interrupts per second on the idle CPU",
          "Table 5: interrupts on an idle CPU")


def table7(raw, outdir):
    rows = []
    for (fac, chunk), (name, _) in T7_NAMES.items():
        s = spread((raw.find(7, facility=fac, chunk=chunk) or {}).get("ns_per_op"))
        if s:
            rows.append((name, s, "C0" if fac.startswith("twheel") else "C1"))
    hbars(raw, outdir, "table7.svg", rows, (8, 0.28 * len(rows) + 1.4), 7,
          "ns per timer (blue: twheel; orange: the others)",
          "Table 7: schedule + cancel from userspace")


def hbars(raw, outdir, name, rows, size, fontsize, xlabel, text):
    """Horizontal bars on a log scale: rows of (label, spread, colour), top down."""
    fig, ax = plt.subplots(figsize=size)
    y = range(len(rows))
    ax.barh(y, [s[0] for _, s, _ in rows], xerr=[[s[1] for _, s, _ in rows],
            [s[2] for _, s, _ in rows]], capsize=2, color=[c for _, _, c in rows])
    ax.set_yticks(y, [r[0] for r in rows], fontsize=fontsize)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    fig.suptitle(title(raw, text), fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    save(fig, outdir, name)


def table10(raw, outdir):
    order = ["twheel", "heap", "timerfd", "twheel-ring"]
    rows = raw.select(10, phase="keepalive")
    conns = sorted({int(d["conns"]) for d, _ in rows})
    backends = [b for b in order if any(d["backend"] == b for d, _ in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), sharey=True)
    width = 0.8 / max(len(backends), 1)
    for ax, metric, what in zip(axes, ("cpu_us_per_req", "machine_us_per_req"),
                                ("server's CPU", "whole machine's CPU")):
        for i, b in enumerate(backends):
            pts = [(j, spread((raw.find(10, backend=b, phase="keepalive", conns=c) or {})
                              .get(metric))) for j, c in enumerate(conns)]
            pts = [(j, s) for j, s in pts if s]
            if pts:
                ax.bar([j + (i - (len(backends) - 1) / 2) * width for j, _ in pts],
                       [s[0] for _, s in pts], width,
                       yerr=[[s[1] for _, s in pts], [s[2] for _, s in pts]], capsize=3,
                       label=b, color=COLORS.get(b, "C7"))
        ax.set_xticks(range(len(conns)), [f"{c:,} connections" for c in conns], fontsize=8)
        ax.set_title(f"{what} per request", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("µs per request")
    axes[0].legend(fontsize=8)
    fig.suptitle(title(raw, "Table 10: an HTTP server's timeouts (keep-alive phase)"),
                 fontsize=9)
    save(fig, outdir, "table10.svg")


# Table 11's bars in each kernel's group: (facility, label, colour, hatch, alpha);
# kernel timers plain, userspace ones hatched.
T11_BARS = [("twheel", "twheel (movable)", "C0", "", 1),
            ("twheel_pinned", "twheel, pinned", "C0", "", 0.5),
            ("twheel_slack10", "twheel, 10% slack", "C4", "", 1),
            ("timer_list", "timer_list", "C1", "", 1),
            ("timer_list_pinned", "timer_list, pinned", "C1", "", 0.5),
            ("hrtimer", "hrtimer", "C2", "", 1),
            ("twheel_fd", "/dev/twheel", "C0", "//", 1), ("timerfd", "timerfd", "C1", "//", 1)]


def guest_kernel(raw):
    """The kernel the idle part booted (the raw file's meta may name the build's)."""
    return ((raw.find(0, part="idle") or {}).get("kernel") or [raw.meta.get("kernel", "?")])[0]


def table11(raws, outdir):
    """Wake-ups per second of the idle CPUs together, a group of bars per raw file
    (kernel), the floor with no timers as a dashed line across each group."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / (len(T11_BARS) + 0.5)
    floor, low = None, []
    for g, raw in enumerate(raws):
        def wakeups(fac):
            m = raw.find(11, facility=fac, cpu="idle") or {}
            return spread([a / b for a, b in zip(nums(m.get("wakeups")),
                                                 nums(m.get("seconds"))) if b])
        for i, (fac, label, color, hatch, alpha) in enumerate(T11_BARS):
            s = wakeups(fac)
            if not s:
                continue
            x = g - 0.4 + (i + 0.5 + (0.5 if hatch else 0)) * width
            low.append(s[0])
            bars = ax.bar(x, s[0], width, yerr=[[s[1]], [s[2]]] if s[1] or s[2] else None,
                          capsize=2, color=color, alpha=alpha, hatch=hatch, edgecolor="white",
                          linewidth=0, label=label if g == 0 else None)
            ax.bar_label(bars, [num(s[0])], padding=2, fontsize=6)
        s = wakeups("none")
        if s:
            low.append(s[0])
            floor = ax.hlines(s[0], g - 0.42, g + 0.42, colors="k", linestyles="dashed",
                              linewidth=1, label=None if floor else "no timers (the floor)")
    if not low:
        plt.close(fig)
        return
    ax.set_yscale("log")
    ax.set_ylim(max(min(low), 1) / 2, ax.get_ylim()[1] * 4)
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(raws)), [f"Linux {guest_kernel(r)}" for r in raws], fontsize=8)
    ncpu = raws[0].first(11, "cpus", cpu="idle")
    ax.set_ylabel(f"wake-ups per second, {ncpu or 'the'} idle CPUs together")
    ax.set_title(title(raws, "Table 11: wake-ups of idle CPUs (kernel timers plain, "
                       "userspace hatched)", ("date", "commit", "accel")), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=4, loc="upper center")
    save(fig, outdir, "table11.svg")


FIGURES = [
    (1, table1),
    (4, lambda raw, out: lateness(
        raw, out, 4, ["twheel", "timer_list", "hrtimer", "twheel_slack0",
                      "twheel_slack0_hardirq", "hrtimer_soft"],
        "Table 4: lateness of in-kernel callbacks, 10,000 timers pending",
        "µs after the deadline")),
    (5, table5),
    (7, table7),
    (8, lambda raw, out: lateness(
        raw, out, 8, ["twheel", "timerfd", "io_uring", "twheel_slack0", "twheel_ring"],
        "Table 8: from the deadline to a blocked userspace reader",
        "µs after the deadline")),
    (10, table10),
]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    if plt is None:
        print("bench-plot: no plots: matplotlib is missing "
              "(apt-get install python3-matplotlib; run with /usr/bin/python3)")
        return 0
    outdir, paths = sys.argv[1], sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    plt.rcParams["svg.hashsalt"] = "twheel"
    latest, idle = {}, {}
    for path in paths:
        raw = Raw(path)
        for n, _ in FIGURES:
            if any(t == n for t, _ in raw.rows):
                latest[n] = raw
        if any(t == 11 for t, _ in raw.rows):
            idle[guest_kernel(raw)] = raw
    for n, draw in FIGURES:
        if n in latest:
            draw(latest[n], outdir)
    if idle:
        table11(list(idle.values()), outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
