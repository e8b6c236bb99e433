#!/usr/bin/env python3
"""Summary of bench/hpclb/compare.sh: medians over rounds, ratios side by side."""
import argparse
import re
import statistics
from pathlib import Path

STEP = re.compile(r"^lb step (\d+) iter (\d+) at ([\d.]+): imbalance ([\d.]+) -> ([\d.]+), (\d+) moves")


def parse(path):
    steps, time, interf = [], None, None
    for line in path.read_text().splitlines():
        m = STEP.match(line)
        if m:
            steps.append((float(m.group(3)), float(m.group(4))))
        elif line.startswith("time "):
            time = float(line.split()[1])
        elif line.startswith("interference "):
            interf = float(line.split()[1])
    return steps, time, interf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--quota", type=float, required=True)
    a = ap.parse_args()
    out = Path(a.out)
    # Theory: with relative speeds s_i, the best split takes sum(work)/sum(s),
    # the equal split work/P / min(s): gain = 1 - P*min(s)/sum(s). Node speeds
    # are nominal: node 1 at quota% (hetero), at 50% while a busy process
    # shares its CPU (interf, from its start on), their product (both).
    q = a.quota / 100
    nominal = {"hetero": q, "interf": 0.5, "both": q * 0.5}
    print(f"{'condition':9} {'method':10} {'time s':>8} {'gain':>7} {'% theory':>9} "
          f"{'resid. imb.':>11} {'steps to recover':>16}")
    for cond in ("hetero", "interf", "both"):
        s1 = nominal[cond]
        theory = 1 - 2 * s1 / (1 + s1)
        base = None
        for m in ("none", "refine", "refine-fp", "container", "drum"):
            times, resid, recover = [], [], []
            for r in range(1, a.rounds + 1):
                steps, t, interf = parse(out / f"{cond}-{m}-{r}.txt")
                if t is None:
                    continue
                times.append(t)
                half = [imb for _, imb in steps[len(steps) // 2:]]
                if half:
                    resid.append(sum(half) / len(half))
                if interf is not None:
                    after = [imb for at, imb in steps if at >= interf]
                    k = next((i + 1 for i, imb in enumerate(after) if i > 0 and imb < 1.15), None)
                    if k is not None:
                        recover.append(k)
            if not times:
                print(f"{cond:9} {m:10} no result")
                continue
            t = statistics.median(times)
            if m == "none":
                base = t
            gain = 1 - t / base if base else 0
            pct = 100 * gain / theory if theory > 0 else 0
            rs = f"{statistics.median(resid):.3f}" if resid else "-"
            # Without balancing nothing recovers but by chance: not shown.
            rc = (f"{statistics.median(recover):.0f}" if recover else "never") \
                if cond != "hetero" and m != "none" else "-"
            print(f"{cond:9} {m:10} {t:8.2f} {100 * gain:6.1f}% {pct:8.0f}% {rs:>11} {rc:>16}")
    montecarlo(out, a.rounds, nominal)
    print("(theoretical gain: node 1 at nominal speed %.2f / 0.50 / %.2f of node 0 for hetero / "
          "interf / both; the nominal speeds ignore what else runs on the machine, so a measured "
          "gain can exceed them; the interference starts %s s after the launch)" % (q, q * 0.5, "a few"))


def montecarlo(out, rounds, nominal):
    print()
    print(f"{'condition':9} {'method':10} {'time s':>8} {'gain':>7} {'% theory':>9} "
          f"{'samples run / asked':>20}")
    for cond in ("hetero", "interf", "both"):
        s1 = nominal[cond]
        theory = 1 - 2 * s1 / (1 + s1)
        base = None
        for m in ("static", "ruper"):
            times, extra = [], []
            for r in range(1, rounds + 1):
                p = out / f"mc-{cond}-{m}-{r}.txt"
                if not p.exists():
                    continue
                txt = p.read_text()
                t = re.search(r"^time ([\d.]+) s", txt, re.M)
                sm = re.search(r"^samples (\d+) of (\d+)", txt, re.M)
                if t and sm:
                    times.append(float(t.group(1)))
                    extra.append(int(sm.group(1)) / int(sm.group(2)))
            if not times:
                continue
            t = statistics.median(times)
            if m == "static":
                base = t
            gain = 1 - t / base if base else 0
            print(f"{cond:9} {m:10} {t:8.2f} {100 * gain:6.1f}% {100 * gain / theory:8.0f}% "
                  f"{statistics.median(extra):20.3f}")


if __name__ == "__main__":
    main()
