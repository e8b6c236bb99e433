#!/usr/bin/python3
"""Paper-style report of MetBench runs: the Table III shape and a timeline.

usage: report.py DIR [--png FILE] [--title TEXT]
       report.py --timeline [LABEL=]CSV ... --png FILE [--title TEXT]

DIR holds, for each way W run (baseline, static, uniform, adaptive, phase,
in that order when present): W.json (metbench --json), W.csv (metbench --trace) and
optionally W.prio (one line per worker: "P<n> <final priority>").
Prints per worker % compute, priority and the execution time with the gain
over the baseline; with --png, draws per-rank timelines like the paper's
figures (compute dark, wait light), one panel per way.

With --timeline (repeatable) it only draws: one panel per CSV in the
metbench --trace form (`hpcctl report --plot` passes its trace this way).
"""
import argparse
import csv
import json
import os
import sys

WAYS = ["baseline", "static", "uniform", "adaptive", "phase"]


def load(dirname, ways=WAYS):
    """The runs of @ways (in that order) found in @dirname."""
    runs = []
    for way in ways:
        path = os.path.join(dirname, way + ".json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            res = json.load(f)
        prios = {}
        ppath = os.path.join(dirname, way + ".prio")
        if os.path.exists(ppath):
            with open(ppath) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2:
                        prios[parts[0]] = parts[1]
        trace = []
        tpath = os.path.join(dirname, way + ".csv")
        if os.path.exists(tpath):
            with open(tpath) as f:
                trace = list(csv.DictReader(f))
        runs.append((way, res, prios, trace))
    if not runs:
        sys.exit("report.py: no results (W.json) in " + dirname)
    return runs


def table(runs):
    base = runs[0][1]["total_time_s"] if runs[0][0] == "baseline" else None
    out = ["%-9s %-4s %8s %9s %10s %8s" % ("Test", "Proc", "% Comp", "Priority", "Time", "Gain")]
    for way, res, prios, _ in runs:
        workers = [r for r in res["ranks"] if r["proc"] != "M"]
        for i, r in enumerate(workers):
            prio = prios.get(r["proc"], "-" if r.get("priority") is None else str(r["priority"]))
            time = "%.2f s" % res["total_time_s"] if i == 0 else ""
            gain = ""
            if i == 0 and base and way != "baseline":
                gain = "%.1f %%" % (100 * (1 - res["total_time_s"] / base))
            out.append("%-9s %-4s %8.2f %9s %10s %8s" % (
                way.capitalize() if i == 0 else "", r["proc"], r["compute_pct"], prio, time, gain))
    return "\n".join(out)


def timeline(panels, png, title):
    """panels: [(panel title, metbench --trace rows)]"""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(w, t) for w, t in panels if t]
    if not panels:
        sys.exit("report.py: no traces (W.csv) for the timeline")
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 1.6 + 1.1 * len(panels) * 2), squeeze=False)
    for ax, (way, trace) in zip(axes[:, 0], panels):
        t0 = min(int(r["start_ns"]) for r in trace)
        procs = sorted({r["proc"] for r in trace if r["proc"] != "M"}, key=lambda p: int(p[1:]))
        for y, proc in enumerate(procs):
            rows = [r for r in trace if r["proc"] == proc]
            comp = [((int(r["start_ns"]) - t0) / 1e9, (int(r["compute_end_ns"]) - int(r["start_ns"])) / 1e9) for r in rows]
            wait = [((int(r["compute_end_ns"]) - t0) / 1e9, (int(r["wait_end_ns"]) - int(r["compute_end_ns"])) / 1e9) for r in rows]
            ax.broken_barh(wait, (y - 0.35, 0.7), facecolors="#d0d0d0")
            ax.broken_barh(comp, (y - 0.35, 0.7), facecolors="#303030")
        ax.set_yticks(range(len(procs)))
        ax.set_yticklabels(procs)
        ax.invert_yaxis()
        ax.set_title(way, loc="left", fontsize=10)
        ax.set_xlabel("time (s)")
    fig.suptitle(title + "  (dark: compute, light: wait)")
    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--png")
    ap.add_argument("--title", default="MetBench")
    ap.add_argument("--timeline", action="append", default=[], metavar="[LABEL=]CSV",
                    help="draw this trace (metbench --trace CSV) instead of DIR's runs")
    a = ap.parse_args()
    if a.timeline:
        if a.dir or not a.png:
            ap.error("--timeline draws only: give --png and no DIR")
        panels = []
        for spec in a.timeline:
            label, _, path = spec.rpartition("=")
            label = label or os.path.splitext(os.path.basename(path))[0]
            try:
                with open(path) as f:
                    panels.append((label, list(csv.DictReader(f))))
            except OSError as e:
                sys.exit("report.py: cannot read %s: %s" % (path, e.strerror))
        timeline(panels, a.png, a.title)
        print("timeline: " + a.png)
        return
    if not a.dir:
        ap.error("give DIR, or --timeline CSV")
    runs = load(a.dir)
    print(table(runs))
    if a.png:
        timeline([(w.capitalize(), t) for w, _, _, t in runs], a.png, a.title)
        print("timeline: " + a.png)


if __name__ == "__main__":
    main()
