#!/usr/bin/python3
"""make bench's summary: medians over the rounds bench.sh ran, as ratios.

usage: summary.py OUT_DIR --hpcsim BIN --rounds N --loads L --iterations I -k K
                  --balanced L --calls C --app-args=ARGS [--only "ENTRY ..."]
       summary.py --scx BENCH_TXT     (make bench-scx: scx_hpc beside scx_simple)

OUT_DIR/{metbench,metbenchvar,metbench-model,metbench-sleep,metbench-spin,balanced,balanced-app}/<round>/
hold what tools/hpcd/metbench-3ways.sh keeps per way (W.json, W.log);
overhead-*.txt the output of hpcmon-overhead. The simulator runs the same
workloads (loads in proportion, the same iterations and swaps) on the paper's
machine model with the waits of the emulated machine: polling (EMUL_WAITS
poll and spin: a waiting context computes at its priority), or the fitted
model's waiting context (EMUL_WAITS model, and sleep, whose idle context
gives its sibling the whole core, more than the fitted model's 883 permille
at priority 4: the simulator has no idle context).

Gains are medians of the per-round ratios way/baseline: the ways of one round
run one after the other within seconds, so a drift of the machine's load
between rounds cancels out.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

WAYS = ("baseline", "uniform", "adaptive", "phase", "none", "weight", "plain")
# The heuristics, in the order the tables show them (Phase: the third one).
HEURISTICS = ("uniform", "adaptive", "phase")
REAL = ("real-balanced", "real-balanced-over", "real-imbalanced-yield", "real-imbalanced-poll")
BENCHES = ("metbench", "metbenchvar", "metbench-model", "metbench-sleep", "metbench-spin", "balanced",
           "balanced-app") + REAL
# Against plain mpirun (make bench, 6.): the default mode must never be
# slower; weight mode must win where ranks outnumber CPUs and poll.
REAL_TARGET = {"real-balanced": 1.02, "real-balanced-over": 1.02,
               "real-imbalanced-yield": 1.00, "real-imbalanced-poll": 0.80}
# The slowest run of a way at most this times its median.
OUTLIER = 1.1
# A heuristic must not slow a balanced application down by more than this.
NO_HARM = 1.02


def rounds(out, bench, n):
    """[{way: metbench --json result}] per round that ran."""
    res = []
    for r in range(1, n + 1):
        d = os.path.join(out, bench, str(r))
        runs = {}
        for way in WAYS:
            path = os.path.join(d, way + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    runs[way] = json.load(f)
        if runs:
            res.append(runs)
    if not res:
        sys.exit("summary.py: no rounds of %s in %s" % (bench, out))
    return res


def median_time(rs, way):
    return statistics.median(r[way]["total_time_s"] for r in rs if way in r)


def round_ratios(rs, way, ref="baseline"):
    """way/ref time of each round that ran both."""
    return [r[way]["total_time_s"] / r[ref]["total_time_s"] for r in rs if way in r and ref in r]


def simulate(hpcsim, out, name, loads, iterations, k=0, wait="spin"):
    ms = [x / 10.0 for x in loads]
    spec = {"name": name, "iterations": iterations, "wait": wait}
    if k:
        swapped = [ms[i ^ 1] for i in range(len(ms))]
        spec["phases"] = [{"from": f, "loads_ms": swapped if (f // k) % 2 else ms}
                          for f in range(0, iterations, k)]
    else:
        spec["loads_ms"] = ms
    path = os.path.join(out, "%s-sim-%s.json" % (name, wait))
    with open(path, "w") as f:
        json.dump(spec, f)
    p = subprocess.run([hpcsim, "table", "--spec", path, "--json"], capture_output=True, text=True)
    if p.returncode:
        sys.exit("summary.py: %s failed: %s" % (hpcsim, p.stderr.strip()))
    return json.loads(p.stdout)


def gain(t, base):
    return 1 - t / base


def pct_of(real, sim):
    return "%6.0f %%" % (100 * real / sim) if sim > 0.005 else "      -"


def table(title, rs, sim, wait="polling"):
    """The ways of one bench beside the simulator's run of the same workload
    (with the waits of the emulated machine)."""
    sbase = sim["baseline"]["time_s"]
    sideal = gain(sim["ideal_time_s"], sbase)
    lines = [title,
             "%-9s %9s %12s %8s %15s %10s %9s %11s" % (
                 "way", "time (s)", "vs baseline", "gain", "gain per round", "sim gain",
                 "% of sim", "% of ideal")]
    for way in ("baseline",) + HEURISTICS:
        if not any(way in r for r in rs):
            continue  # not run in this entry (Phase: MetBench and MetBenchVar only)
        t = median_time(rs, way)
        if way == "baseline":
            lines.append("%-9s %9.3f %12.3f %8s %15s %10s %9s %11s" % (
                way, t, 1.0, "-", "-", "-", "-", "-"))
            continue
        ratios = round_ratios(rs, way)
        ratio = statistics.median(ratios)
        g = 1 - ratio
        sg = gain(sim[way]["time_s"], sbase)
        per = "%.0f..%.0f %%" % (100 * (1 - max(ratios)), 100 * (1 - min(ratios)))
        lines.append("%-9s %9.3f %12.3f %7.1f%% %15s %9.1f%% %9s %11s" % (
            way, t, ratio, 100 * g, per, 100 * sg, pct_of(g, sg), pct_of(g, sideal)))
    spread = [r["baseline"]["total_time_s"] for r in rs]
    lines.append("(%d round(s): times are medians, gains medians of the per-round ratios; baseline "
                 "%.3f..%.3f s; simulator, %s waits: ideal gain %.1f %%, best static %.1f %% (%s))"
                 % (len(rs), min(spread), max(spread), wait, 100 * sideal,
                    100 * gain(sim["static"]["time_s"], sbase),
                    ",".join(str(p) for p in sim["static_prio"])))
    return "\n".join(lines)


LOG_COST = re.compile(r"hpcd: ran ([0-9.]+) s, CPU ([0-9]+) ms .*at most ([0-9]+) managed task")


def real_table(title, rs, target):
    """Every way's ratio to plain mpirun, per round: median and spread."""
    lines = [title, "%-22s %9s %11s %15s %13s" % (
        "way", "time (s)", "vs plain", "per round", "slowest/med")]
    verdict = []
    for way, name in (("plain", "plain mpirun"), ("weight", "weight (default)"),
                      ("baseline", "smt-emul, all at 4"), ("uniform", "smt-emul, uniform"),
                      ("adaptive", "smt-emul, adaptive")):
        times = [r[way]["total_time_s"] for r in rs if way in r]
        if not times:
            continue
        med = statistics.median(times)
        if way == "plain":
            lines.append("%-22s %9.3f %11.3f %15s %13.2f" % (name, med, 1.0, "-", max(times) / med))
            continue
        ratios = round_ratios(rs, way, "plain")
        ratio = statistics.median(ratios)
        lines.append("%-22s %9.3f %11.3f %15s %13.2f" % (
            name, med, ratio, "%.2f..%.2f" % (min(ratios), max(ratios)), max(times) / med))
        if way == "weight":
            ok = ratio <= target and max(times) / med <= OUTLIER
            verdict.append("weight mode: %.3f x plain (target <= %.2f), slowest run %.2f x its "
                           "median (target <= %.1f): %s" % (ratio, target, max(times) / med,
                                                            OUTLIER, "met" if ok else "NOT met"))
    lines.append("(%d round(s): times are medians; ratios medians of the per-round ratios to "
                 "plain mpirun, with their range)" % len(rs))
    return "\n".join(lines + verdict)


def hpcd_cost(out):
    cpu_ms = task_s = 0.0
    runs = 0
    for bench in BENCHES:
        base = os.path.join(out, bench)
        if not os.path.isdir(base):
            continue
        for r in sorted(os.listdir(base)):
            for way in ("baseline",) + HEURISTICS + ("weight",):
                path = os.path.join(base, r, way + ".log")
                if not os.path.exists(path):
                    continue
                m = None
                for line in open(path):
                    m = LOG_COST.search(line) or m
                if m and int(m.group(3)):
                    runs += 1
                    cpu_ms += float(m.group(2))
                    task_s += float(m.group(1)) * int(m.group(3))
    if not runs:
        return "hpcd's CPU cost: no hpcd log with its cost line"
    return ("hpcd's CPU time per managed task: %.2f %% of a CPU (%.0f ms of CPU over %.1f "
            "task-seconds, %d hpcd runs)" % (100 * cpu_ms / 1000 / task_s, cpu_ms, task_s, runs))


CALL = re.compile(r"MPI_Barrier ([0-9.]+) ns/call, MPI_Allreduce ([0-9.]+) ns/call")


def overhead(out, calls):
    def per_call(name):
        vals = [CALL.search(line) for line in open(os.path.join(out, "overhead-%s.txt" % name))]
        vals = [v for v in vals if v]
        if not vals:
            sys.exit("summary.py: no measurement in overhead-%s.txt" % name)
        return [statistics.median(float(v.group(i)) for v in vals) for i in (1, 2)]
    none, mon = per_call("none"), per_call("hpcmon")
    lines = ["libhpcmon per MPI call (1 rank, %d calls, median of 3; publishing off):" % calls]
    for i, name in enumerate(("MPI_Barrier", "MPI_Allreduce")):
        lines.append("  %-13s %7.1f ns without, %7.1f ns with the monitor: x%.2f (+%.1f ns)" % (
            name, none[i], mon[i], mon[i] / none[i], mon[i] - none[i]))
    return "\n".join(lines)


PRIO_LINE = re.compile(r" rank ([0-9]+) iteration .* prio ([0-9]+)$")


def prio_moves(log):
    """(decisions that changed a rank's priority, highest priority logged)
    from hpcd's log."""
    last, moves, top = {}, 0, 0
    for line in open(log):
        m = PRIO_LINE.search(line.strip())
        if not m:
            continue
        r, p = m.group(1), int(m.group(2))
        moves += r in last and last[r] != p
        last[r] = p
        top = max(top, p)
    return moves, top


def balanced_app(out, n, args):
    """The balanced application: each heuristic's time over the baseline's
    (median of the per-round ratios, their spread), against NO_HARM."""
    rs = rounds(out, "balanced-app", n)
    comp = [r["compute_pct"] for r in rs[0]["baseline"]["ranks"]]
    lines = ["A balanced application (bench/balanced %s; 4 ranks, baseline %% compute %s), "
             "waits poll:" % (args, " ".join("%.0f" % c for c in comp)),
             "%-9s %9s %12s %15s %22s %s" % ("way", "time (s)", "vs baseline", "per round",
                                              "priority changes/max", "")]
    lines.append("%-9s %9.3f %12.3f" % ("baseline", median_time(rs, "baseline"), 1.0))
    for way in ("uniform", "adaptive"):
        ratios = round_ratios(rs, way)
        med = statistics.median(ratios)
        moves = [prio_moves(os.path.join(out, "balanced-app", str(i + 1), way + ".log"))
                 for i in range(len(rs))]
        verdict = "ok (<= %.2f)" % NO_HARM if med <= NO_HARM else "HARM (> %.2f)" % NO_HARM
        lines.append("%-9s %9.3f %12.3f %15s %22s %s" % (
            way, median_time(rs, way), med, "%.3f..%.3f" % (min(ratios), max(ratios)),
            "%d / %d" % (sum(m[0] for m in moves), max(m[1] for m in moves)), verdict))
    lines.append("(%d round(s); time: median; vs baseline: median of the per-round ratios; "
                 "priority changes: over all rounds, from hpcd's log)" % len(rs))
    return "\n".join(lines)


SCX_MEDIANS = {
    "switch": re.compile(r"median BPF ns per context switch ratio hpc/simple: ([0-9.]+)"),
    "share": re.compile(r"median BPF share of CPU time: hpc ([0-9.]+) %, simple ([0-9.]+) %"),
    "wall": re.compile(r"median workload wall time ratio hpc/simple: ([0-9.]+)"),
}
SCX_TOTAL = re.compile(r"^total\s+(\d+) programs, xlated (\d+) insns, verified (\d+) insns")


def scx(path):
    """make scx-bench's table (sched_ext/tests/bench-cases/90-scx-bench.sh) as
    the summary's lines: scx_hpc's costs over scx_simple's in the same boot."""
    try:
        text = open(path).read().splitlines()
    except OSError as e:
        sys.exit("summary.py: cannot read %s: %s" % (path, e.strerror))
    got, total = {}, None
    rounds_run = sum(1 for line in text if re.match(r"round \d+ ", line))
    for line in text:
        for k, rx in SCX_MEDIANS.items():
            m = rx.search(line)
            if m:
                got[k] = [float(x) for x in m.groups()]
        total = SCX_TOTAL.match(line) or total
    missing = [k for k in SCX_MEDIANS if k not in got]
    if missing or not rounds_run:
        sys.exit("summary.py: %s is not a complete scx-bench result (missing: %s)" % (
            path, ", ".join(missing or ["rounds"])))
    hs, ss = got["share"]
    lines = ["scx_hpc beside scx_simple (sched_ext in the QEMU guest, one boot, %d round(s), "
             "medians; per callback: %s):" % (rounds_run, path),
             "  BPF time per context switch: scx_hpc / scx_simple = %.3f" % got["switch"][0],
             "  BPF share of CPU time: %.3f %% vs %.3f %% (%.3f)" % (hs, ss, hs / ss if ss else 0),
             "  workload wall time: scx_hpc / scx_simple = %.3f" % got["wall"][0]]
    if total:
        lines.append("  scx_hpc: %s BPF programs, %s instructions (xlated), %s verified" %
                     total.groups())
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["--scx"]:
        if len(sys.argv) != 3:
            sys.exit("usage: summary.py --scx BENCH_TXT")
        print(scx(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--hpcsim", required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--loads", required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("-k", type=int, required=True)
    ap.add_argument("--balanced", required=True)
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--app-args", required=True)
    ap.add_argument("--real-args", default="--steps 200 --work 2000 --noise 5")
    ap.add_argument("--np", type=int, default=2, help="CPUs of the machine (make bench, 6.)")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    loads = [int(x) for x in a.loads.split(",")]
    only = a.only.split()
    unknown = [e for e in only if e not in BENCHES + ("overhead",)]
    if unknown:
        sys.exit("summary.py: --only: unknown entry %s" % ", ".join(unknown))

    def want(entry):
        return not only or entry in only

    mb = "MetBench (loads %s, %d iterations)" % (a.loads, a.iterations)
    sim_poll = None
    if want("metbench") or want("metbench-spin"):
        sim_poll = simulate(a.hpcsim, a.out, "metbench", loads, a.iterations)
    if want("metbench"):
        print(table(mb + ", waits poll (the ranks sleep, hpcd counts them polling)",
                    rounds(a.out, "metbench", a.rounds), sim_poll))
        print()
    if want("metbenchvar"):
        var = rounds(a.out, "metbenchvar", a.rounds)
        print(table("MetBenchVar (loads %s swapped every k = %d, %d iterations), waits poll" % (
            a.loads, a.k, 3 * a.k), var,
            simulate(a.hpcsim, a.out, "metbenchvar", loads, 3 * a.k, a.k)))
        print()
    if want("metbench-model"):
        print(table(mb + ", waits model (the ranks sleep, hpcd gives their contexts the SMT "
                    "model's waiting speed; its quotas change at every wait)",
                    rounds(a.out, "metbench-model", a.rounds),
                    simulate(a.hpcsim, a.out, "metbench", loads, a.iterations, wait="block"),
                    "modelled"))
        print()
    if want("metbench-sleep"):
        print(table(mb + ", waits sleep (the ranks sleep, their contexts idle)",
                    rounds(a.out, "metbench-sleep", a.rounds),
                    simulate(a.hpcsim, a.out, "metbench", loads, a.iterations, wait="block"),
                    "sleeping"))
        print()
    if want("metbench-spin"):
        print(table(mb + ", waits spin (MPI's own polling: a throttled rank holds up the "
                    "barrier)", rounds(a.out, "metbench-spin", a.rounds), sim_poll))
        print()
    if want("balanced-app"):
        print(balanced_app(a.out, a.rounds, a.app_args))
        print()
    real_titles = {
        "real-balanced": "balanced application (%s), %d ranks on %d CPUs" % (
            a.real_args, a.np, a.np),
        "real-balanced-over": "balanced application (%s), %d ranks on %d CPUs" % (
            a.real_args, 2 * a.np, a.np),
        "real-imbalanced-yield": mb + ", a master and %d workers on %d CPUs, Open MPI's "
        "yielding waits" % (len(loads), a.np),
        "real-imbalanced-poll": mb + ", a master and %d workers on %d CPUs, polling waits "
        "(--mca mpi_yield_when_idle 0)" % (len(loads), a.np),
    }
    for b in REAL:
        if want(b) and os.path.isdir(os.path.join(a.out, b)):
            print(real_table("Against plain mpirun: " + real_titles[b],
                             rounds(a.out, b, a.rounds), REAL_TARGET[b]))
            print()
    print(hpcd_cost(a.out))
    if want("overhead"):
        print(overhead(a.out, a.calls))
    if want("balanced"):
        bal = rounds(a.out, "balanced", a.rounds)
        tn, tw = median_time(bal, "none"), median_time(bal, "weight")
        ratios = sorted(r["weight"]["total_time_s"] / r["none"]["total_time_s"] for r in bal)
        print("Weight mode on a balanced MetBench (loads %s, %d iterations): hpcd --mode weight "
              "/ no hpcd = %.3f (%.3f s vs %.3f s; per round %s)" % (
                  a.balanced, a.iterations, tw / tn, tw, tn,
                  ", ".join("%.3f" % x for x in ratios)))


if __name__ == "__main__":
    main()
