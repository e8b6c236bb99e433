#!/usr/bin/env python3
"""Summary of tools/hpclb/bench/compare.sh: medians over rounds, ratios side by side.

Theory: node 0 runs at speed 1; node 1 at s1(t): BENCH_QUOTA (hetero), 1 then
0.5 from the interference on (interf; the busy process shares node 1's CPU
set half and half), quota then quota/2 (both). Without balancing node 1 is
the last to finish, so its work per node is W = integral of s1 over the
measured no-balancing time T0; the best split finishes 2W at the speed
1 + s1(t): T*. The theoretical gain is 1 - T*/T0, with the interference start
measured in the no-balancing run itself.

Steps to recover (interf, both): from the first LB step after the
interference whose period shows it (max/avg >= 1.15), the LB steps until
max/avg is below 1.15 again; "-" when no step showed it, "never" when it
stayed.
"""
import argparse
import re
import statistics
from pathlib import Path

STEP = re.compile(r"^lb step (\d+) iter (\d+) at ([\d.]+): imbalance ([\d.]+) -> ([\d.]+), (\d+) moves")
THRESH = 1.15


def parse(path):
    r = {"steps": [], "time": None, "interf": None, "started": None, "lb": None, "moves": 0}
    if not path.exists():
        return r
    for line in path.read_text().splitlines():
        m = STEP.match(line)
        if m:
            r["steps"].append((float(m.group(3)), float(m.group(4))))
            r["moves"] += int(m.group(6))
        elif line.startswith("time "):
            r["time"] = float(line.split()[1])
        elif line.startswith("interference "):
            r["interf"] = float(line.split()[1])
        elif line.startswith("started at "):
            r["started"] = float(line.split()[2])
        elif line.startswith("lb time "):
            r["lb"] = float(line.split()[2])
    return r


def theory_time(t0, s_before, s_after, at):
    """T*: the best split's time, given the no-balancing time t0."""
    if at is None or at >= t0:
        s_after, at = s_before, t0
    work = s_before * min(t0, at) + s_after * max(0.0, t0 - at)
    if 2 * work <= (1 + s_before) * at:
        return 2 * work / (1 + s_before)
    return at + (2 * work - (1 + s_before) * at) / (1 + s_after)


def recover(steps, interf):
    if interf is None:
        return None
    after = [imb for at, imb in steps if at >= interf]
    j = next((i for i, imb in enumerate(after) if imb >= THRESH), None)
    if j is None:
        return "-"
    k = next((i for i in range(j + 1, len(after)) if after[i] < THRESH), None)
    return "never" if k is None else k - j


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--quota", type=float, required=True)
    a = ap.parse_args()
    out = Path(a.out)
    q = a.quota / 100
    speeds = {"hetero": (q, q), "interf": (1.0, 0.5), "both": (q, q * 0.5)}
    print(f"{'condition':9} {'method':10} {'time s':>8} {'spread':>7} {'gain':>7} {'% theory':>9} "
          f"{'paired':>7} {'resid. imb.':>11} {'recover':>8} {'LB cost':>8} {'moves':>6}")
    for cond in ("hetero", "interf", "both"):
        sb, sa = speeds[cond]
        base = theory = None
        base_by_round = {}
        for m in ("none", "refine", "refine-fp", "container", "drum"):
            runs = [parse(out / f"{cond}-{m}-{r}.txt") for r in range(1, a.rounds + 1)]
            for k, r in enumerate(runs, 1):
                r["round"] = k
            runs = [r for r in runs if r["time"] is not None]
            if m == "none":
                base_by_round = {r["round"]: r["time"] for r in runs}
            if not runs:
                print(f"{cond:9} {m:10} no result")
                continue
            times = [r["time"] for r in runs]
            t = statistics.median(times)
            spread = (max(times) - min(times)) / t if len(times) > 1 else 0
            if m == "none":
                base = t
                ats = [r["interf"] - r["started"] for r in runs
                       if r["interf"] is not None and r["started"] is not None]
                at = statistics.median(ats) if ats else None
                if cond != "hetero" and at is None:
                    theory = 0.0  # the interference never started during the run
                else:
                    theory = 1 - theory_time(t, sb, sa, at if cond != "hetero" else None) / t
            gain = 1 - t / base if base else 0
            pct = f"{100 * gain / theory:8.0f}%" if theory and theory > 0.01 else f"{'-':>9}"
            resid = [statistics.mean([imb for _, imb in r["steps"][len(r["steps"]) // 2:]])
                     for r in runs if r["steps"]]
            rs = f"{statistics.median(resid):.3f}" if resid else "-"
            if cond == "hetero" or m == "none":
                rc = "-"
            else:
                rcs = [recover(r["steps"], r["interf"]) for r in runs]
                nums = [x for x in rcs if isinstance(x, int)]
                rc = f"{statistics.median(nums):.0f}" if nums else (
                    "never" if "never" in rcs else "-")
            lbs = [r["lb"] / r["time"] for r in runs if r["lb"] is not None and r["time"]]
            lb = f"{100 * statistics.median(lbs):7.1f}%" if lbs and m != "none" else f"{'-':>8}"
            mv = statistics.median([r["moves"] for r in runs])
            print(f"{cond:9} {m:10} {t:8.2f} {100 * spread:6.0f}% {100 * gain:6.1f}% {pct} "
                  f"{paired(runs, base_by_round)} {rs:>11} {rc:>8} {lb} {mv:6.0f}")
    montecarlo(out, a.rounds, speeds)
    print(f"(theory: node 1 at {q:.2f} / 1 then 0.50 / {q:.2f} then {q * 0.5:.2f} of node 0's speed for "
          "hetero / interf / both, the interference start measured in the no-balancing run; spread: "
          "(max - min) / median over the rounds; paired: median over the rounds of the time over the "
          "same round's no-balancing time (run side by side, < 1 is faster); LB cost: rank 0's time "
          "in hpclb_mpi_step and the moves, of the run's time; moves: blocks moved, median)")


def paired(runs, base_by_round):
    """Median over the rounds of time / the same round's baseline time."""
    ratios = [r["time"] / base_by_round[r["round"]] for r in runs
              if base_by_round.get(r["round"])]
    return f"{statistics.median(ratios):7.3f}" if ratios else f"{'-':>7}"


def montecarlo(out, rounds, speeds):
    print()
    print(f"{'condition':9} {'method':10} {'time s':>8} {'spread':>7} {'gain':>7} {'% theory':>9} "
          f"{'paired':>7} {'samples run / asked':>20}")
    for cond in ("hetero", "interf", "both"):
        sb, sa = speeds[cond]
        base = theory = None
        base_by_round = {}
        for m in ("static", "ruper"):
            times, extra, ats, runs = [], [], [], []
            for r in range(1, rounds + 1):
                p = out / f"mc-{cond}-{m}-{r}.txt"
                if not p.exists():
                    continue
                txt = p.read_text()
                t = re.search(r"^time ([\d.]+) s", txt, re.M)
                sm = re.search(r"^samples (\d+) of (\d+)", txt, re.M)
                st = re.search(r"^started at ([\d.]+)", txt, re.M)
                it = re.search(r"^interference ([\d.]+)", txt, re.M)
                if t and sm:
                    times.append(float(t.group(1)))
                    runs.append({"round": r, "time": float(t.group(1))})
                    extra.append(int(sm.group(1)) / int(sm.group(2)))
                    if st and it:
                        ats.append(float(it.group(1)) - float(st.group(1)))
            if not times:
                continue
            t = statistics.median(times)
            spread = (max(times) - min(times)) / t if len(times) > 1 else 0
            if m == "static":
                base = t
                base_by_round = {x["round"]: x["time"] for x in runs}
                at = statistics.median(ats) if ats else None
                if cond != "hetero" and at is None:
                    theory = 0.0
                else:
                    theory = 1 - theory_time(t, sb, sa, at if cond != "hetero" else None) / t
            gain = 1 - t / base if base else 0
            pct = f"{100 * gain / theory:8.0f}%" if theory and theory > 0.01 else f"{'-':>9}"
            print(f"{cond:9} {m:10} {t:8.2f} {100 * spread:6.0f}% {100 * gain:6.1f}% {pct} "
                  f"{paired(runs, base_by_round)} {statistics.median(extra):20.3f}")


if __name__ == "__main__":
    main()
