#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fit the SMT model of kernel/hpc-core/hpc_smt.c to Tables III, IV, V.

One model for every workload:

  * the decode split of Table I (fixed: the higher context of a pair at
    priority difference d gets 1 - 2^-(d+1) of the decode cycles);
  * a share -> speed map, piecewise linear through (0, 0), five knots at the
    shares of d = 2, 1, 0, -1, -2 (1/8, 1/4, 1/2, 3/4, 7/8) and (1, 1): the
    free parameters;
  * what a waiting context does to its busy sibling, one of
      poll     it keeps competing at its task's priority (MPI polling)
      release  it releases its core: the sibling runs at single-thread speed
      normal   it competes at priority 4 whatever its task's priority
      mixed    it competes at its task's priority up to 4, releases above:
               a raised task's wait leaves the core to its sibling
    each fitted in turn; the one with the least residual is the model.

The workloads are built from the baseline rows, as the simulator builds them
(tools/sim/workloads.cpp): MetBench's light load is the one that gives the
light ranks their baseline % compute at (4,4), the heavy load its baseline
time; MetBenchVar uses MetBench's loads (its baseline row is then a
prediction: same benchmark, same loads); BT-MZ's four loads come from its
baseline % compute with P1,P4 and P2,P3 sharing a core (the static row's
P1, whose priority stays 4 and whose compute time grows 3.4x, says so; the
other two pairings are fitted too and printed). Every rank waits at a barrier
at the end of each iteration.

The least squares run over every model-determined number of the three tables
(baseline and static rows: times in % of the paper's time, % compute in
points). The Uniform and Adaptive rows depend on the rule as well; the
simulator's tests check them (tools/sim/sim_tests.cpp).

python3 only (no numpy): Nelder-Mead from several starts.

  python3 tools/sim/fit/fit_smt.py [--chip] [Documentation/data/paper-tables.json]

--chip also fits the model with a term for what the two cores of the chip
share (every busy context slower by chip/2 per busy context of the other
core), to see whether Table V's static (4,4,5,6) asks for one.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLES = os.path.join(HERE, "..", "..", "..", "Documentation", "data",
                              "paper-tables.json")

SHARES = [1 / 8, 1 / 4, 1 / 2, 3 / 4, 7 / 8]
S0 = 0.6              # s(1/2): two busy contexts at equal priority (prior)
METBENCH_ITERS = 10   # 81.78 s / 10 = 368.17 s / 45: the same loads
BTMZ_ITERS = 200      # class A, 200 iterations (Table V)


def share(own, sib):
    """Decode share of a busy context at @own beside a busy one at @sib."""
    d = min(abs(own - sib), 5)
    r = 2 ** (d + 1)
    if own > sib:
        return 1 - 1 / r
    if own < sib:
        return 1 / r
    return 0.5


def speed_map(knots):
    xs = [0.0] + SHARES + [1.0]
    ys = [0.0] + list(knots) + [1.0]

    def s(x):
        for i in range(1, len(xs)):
            if x <= xs[i]:
                return ys[i - 1] + (x - xs[i - 1]) * (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1])
        return 1.0
    return s


class Model:
    """knots: s at SHARES; rho: the part of a wait that releases the core;
    compete: what the rest of a wait competes at, "own" (the waiting task's
    priority: MPI polling) or "normal" (priority 4 whatever the task's)."""

    def __init__(self, knots, rho, compete):
        self.knots = list(knots)
        self.s = speed_map(knots)
        self.rho = rho
        self.compete = compete

    def speed(self, own, sib, sib_busy):
        if sib_busy:
            return self.s(share(own, sib))
        other = sib if self.compete == "own" else 4
        return self.rho + (1 - self.rho) * self.s(share(own, other))

    def pair(self, wa, wb, pa, pb):
        """Busy times of two contexts starting together with work wa, wb."""
        sa, sb = self.speed(pa, pb, True), self.speed(pb, pa, True)
        ta, tb = wa / sa, wb / sb
        if ta <= tb:
            done_b = sb * ta
            return ta, ta + (wb - done_b) / self.speed(pb, pa, False)
        done_a = sa * tb
        return tb + (wa - done_a) / self.speed(pa, pb, False), tb

    def iteration(self, loads, prios, pairs):
        busy = [0.0] * len(loads)
        for a, b in pairs:
            busy[a], busy[b] = self.pair(loads[a], loads[b], prios[a], prios[b])
        return max(busy), busy

    def run(self, phases, prios, pairs):
        """phases: list of (iterations, loads). Returns time, % compute."""
        total, comp = 0.0, [0.0] * len(prios)
        for n, loads in phases:
            t, busy = self.iteration(loads, prios, pairs)
            total += n * t
            for i, b in enumerate(busy):
                comp[i] += n * b
        return total, [100 * c / total for c in comp]

    def derive_pair(self, c_short, c_long, t):
        """Loads of a pair at (4,4) whose busy fractions of an iteration of
        length t are c_short <= c_long (both start at the barrier)."""
        w_short = self.speed(4, 4, True) * c_short * t
        w_long = w_short + self.speed(4, 4, False) * (c_long - c_short) * t
        return w_short, w_long

    def loads(self, comp, t, pairs):
        """Loads that give busy fractions comp of an iteration of length t
        at (4,4,...)."""
        loads = [0.0] * len(comp)
        for a, b in pairs:
            s, l = (a, b) if comp[a] <= comp[b] else (b, a)
            loads[s], loads[l] = self.derive_pair(comp[s], comp[l], t)
        return loads


class ChipModel(Model):
    """Model, and the two cores of the chip share it (L2, memory): every
    busy context runs (1 - chip * n / 2) times its core's speed, n the busy
    contexts of the other core. Only with --chip: Tables III-V do not ask
    for it (see main())."""

    def __init__(self, knots, rho, compete, chip):
        super().__init__(knots, rho, compete)
        self.chip = chip

    def iteration(self, loads, prios, pairs):
        n = len(loads)
        sib, core = [None] * n, [None] * n
        for k, (a, b) in enumerate(pairs):
            sib[a], sib[b], core[a], core[b] = b, a, k, k
        rem, busy, t, out = list(loads), [True] * n, 0.0, [0.0] * n
        while any(busy):
            sp = [0.0] * n
            for i in range(n):
                if busy[i]:
                    other = sum(1 for j in range(n) if busy[j] and core[j] != core[i])
                    sp[i] = (self.speed(prios[i], prios[sib[i]], busy[sib[i]]) *
                             (1 - self.chip * other / 2))
            dt = min(rem[i] / sp[i] for i in range(n) if busy[i])
            t += dt
            for i in range(n):
                if busy[i]:
                    out[i] += dt
                    rem[i] -= sp[i] * dt
                    if rem[i] <= 1e-12 * loads[i]:
                        busy[i] = False
        return t, out

    def loads(self, comp, t, pairs):
        # The cores are coupled: scale every load until each rank's busy
        # time at (4,4,...) is its share of t.
        loads = [c * t * 0.7 for c in comp]
        for _ in range(100):
            _, busy = self.iteration(loads, [4] * len(loads), pairs)
            loads = [w * c * t / b for w, c, b in zip(loads, comp, busy)]
        return loads


def metbench_loads(m, paper):
    b = paper["metbench"]["baseline"]
    light = (b["comp"][0] + b["comp"][2]) / 200
    t = b["time_s"] / METBENCH_ITERS
    return m.loads([light, 1.0, light, 1.0], t, [(0, 1), (2, 3)])[:2]


def mean(a, b):
    return (a + b) / 2


def predictions(m, paper, btmz_pairs):
    """(name, model, paper, unit) for every number of the fit."""
    out = []
    light, heavy = metbench_loads(m, paper)
    mb = paper["metbench"]
    pairs = [(0, 1), (2, 3)]
    loads = [light, heavy, light, heavy]
    for row in ("baseline", "static"):
        pr = mb[row]["priority"]
        t, c = m.run([(METBENCH_ITERS, loads)], pr, pairs)
        out.append(("III " + row + " time", t, mb[row]["time_s"], "s"))
        out.append(("III " + row + " %comp P1,P3", mean(c[0], c[2]),
                    mean(mb[row]["comp"][0], mb[row]["comp"][2]), "%"))
        out.append(("III " + row + " %comp P2,P4", mean(c[1], c[3]),
                    mean(mb[row]["comp"][1], mb[row]["comp"][3]), "%"))
    mv = paper["metbenchvar"]
    rev = [heavy, light, heavy, light]
    phases = [(15, loads), (15, rev), (15, loads)]
    for row in ("baseline", "static"):
        pr = mv[row]["priority"]
        t, c = m.run(phases, pr, pairs)
        out.append(("IV " + row + " time", t, mv[row]["time_s"], "s"))
        out.append(("IV " + row + " %comp P1,P3", mean(c[0], c[2]),
                    mean(mv[row]["comp"][0], mv[row]["comp"][2]), "%"))
        out.append(("IV " + row + " %comp P2,P4", mean(c[1], c[3]),
                    mean(mv[row]["comp"][1], mv[row]["comp"][3]), "%"))
    bt = paper["bt_mz"]
    b = bt["baseline"]
    t = b["time_s"] / BTMZ_ITERS
    loads = m.loads([x / 100 for x in b["comp"]], t, btmz_pairs)
    for row in ("baseline", "static"):
        pr = bt[row]["priority"]
        tt, c = m.run([(BTMZ_ITERS, loads)], pr, btmz_pairs)
        out.append(("V " + row + " time", tt, bt[row]["time_s"], "s"))
        for i in range(4):
            out.append(("V %s %%comp P%d" % (row, i + 1), c[i], bt[row]["comp"][i], "%"))
    return out


def residual(name, model, paper, unit):
    """Times in % of the paper's, % compute in points."""
    return 100 * (model - paper) / paper if unit == "s" else model - paper


def project(x):
    """Knots within (0.02, 1], non-decreasing in the share."""
    k = [min(1.0, max(0.02, v)) for v in x]
    for i in range(1, len(k)):
        k[i] = max(k[i], k[i - 1])
    return k


# The variants fitted: (name, compete, rho: None = fitted, s0: None = fitted)
VARIANTS = [
    ("poll", "own", 0.0, S0),
    ("release", "own", 1.0, S0),
    ("normal", "normal", 0.0, S0),
    ("poll+release", "own", None, S0),
    ("normal+release", "normal", None, S0),
    ("normal+release, s(1/2) free", "normal", None, None),
]
MODEL = "normal+release"


def unpack(x, rho, s0):
    """x: s(1/8), s(1/4), s(3/4), s(7/8)[, rho][, s0] -> knots, rho, penalty."""
    x = list(x)
    s0 = x.pop() if s0 is None else s0
    rho = x.pop() if rho is None else rho
    raw = [x[0], x[1], s0, x[2], x[3]]
    k = project(raw)
    r = min(1.0, max(0.0, rho))
    pen = (sum((a - b) ** 2 for a, b in zip(raw, k)) + (rho - r) ** 2) * 1e4
    return k, r, pen


STATIC_MARGIN = 0.3   # %: how much (4,6) must beat (4,5) on MetBench


def static_order(m, paper):
    """Table III's static best is (4,6): (4,5) must be slower by
    STATIC_MARGIN % at least (hinge, in %)."""
    light, heavy = metbench_loads(m, paper)
    loads = [light, heavy, light, heavy]
    t6 = m.run([(METBENCH_ITERS, loads)], [4, 6, 4, 6], [(0, 1), (2, 3)])[0]
    t5 = m.run([(METBENCH_ITERS, loads)], [4, 5, 4, 5], [(0, 1), (2, 3)])[0]
    return max(0.0, 100 * (t6 - t5) / t6 + STATIC_MARGIN)


def sse(x, compete, rho, s0, paper, pairs):
    k, r, pen = unpack(x, rho, s0)
    m = Model(k, r, compete)
    pen += 1e4 * static_order(m, paper) ** 2
    return pen + sum(residual(*p) ** 2 for p in predictions(m, paper, pairs))


def nelder_mead(f, x0, step=0.08, iters=3000, tol=1e-10):
    n = len(x0)
    pts = [list(x0)]
    for i in range(n):
        p = list(x0)
        p[i] += step
        pts.append(p)
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        c = [sum(p[i] for p in pts[:-1]) / n for i in range(n)]
        xr = [c[i] + (c[i] - pts[-1][i]) for i in range(n)]
        fr = f(xr)
        if fr < vals[0]:
            xe = [c[i] + 2 * (c[i] - pts[-1][i]) for i in range(n)]
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = [c[i] + 0.5 * (pts[-1][i] - c[i]) for i in range(n)]
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                for j in range(1, n + 1):
                    pts[j] = [pts[0][i] + 0.5 * (pts[j][i] - pts[0][i]) for i in range(n)]
                    vals[j] = f(pts[j])
    i = min(range(n + 1), key=lambda i: vals[i])
    return pts[i], vals[i]


def fit(compete, rho, s0, paper, pairs):
    best = None
    for start in ([0.175, 0.32, 0.69, 0.70], [0.15, 0.35, 0.9, 1.0],
                  [0.2, 0.5, 0.8, 0.95], [0.1, 0.3, 0.7, 0.8]):
        start = start + ([0.5] if rho is None else []) + ([0.6] if s0 is None else [])
        f = lambda x: sse(x, compete, rho, s0, paper, pairs)
        x, v = nelder_mead(f, start)
        x, v = nelder_mead(f, x, step=0.02)
        if best is None or v < best[1]:
            best = (x, v)
    k, r, _ = unpack(best[0], rho, s0)
    return Model(k, r, compete), best[1]


def sse_chip(x, paper, pairs):
    """x: s(1/8), s(1/4), s(3/4), s(7/8), rho, chip."""
    k, r, pen = unpack(x[:5], None, S0)
    c = min(0.5, max(0.0, x[5]))
    pen += (x[5] - c) ** 2 * 1e4
    m = ChipModel(k, r, "normal", c)
    pen += 1e4 * static_order(m, paper) ** 2
    return pen + sum(residual(*p) ** 2 for p in predictions(m, paper, pairs))


def fit_chip(start, paper, pairs):
    """The chosen model plus a shared-chip term, from the chosen model's
    values and a few chip terms."""
    best = None
    for c in (0.0, 0.04, 0.1):
        x0 = [start.knots[0], start.knots[1], start.knots[3], start.knots[4], start.rho, c]
        f = lambda x: sse_chip(x, paper, pairs)
        x, v = nelder_mead(f, x0, step=0.03, iters=1500)
        x, v = nelder_mead(f, x, step=0.01, iters=1500)
        if best is None or v < best[1]:
            best = (x, v)
    x = best[0]
    k, r, _ = unpack(x[:5], None, S0)
    return ChipModel(k, r, "normal", min(0.5, max(0.0, x[5]))), best[1]


def btmz_statics(m, paper, pairs):
    """Every static BT-MZ setting within 4..6 with at most one raised
    context per core (as the simulator searches), fastest first."""
    b = paper["bt_mz"]["baseline"]
    loads = m.loads([x / 100 for x in b["comp"]], b["time_s"] / BTMZ_ITERS, pairs)
    out = []
    for k in range(3 ** 4):
        pr = [4 + (k // 3 ** i) % 3 for i in range(4)]
        if any(pr[a] > 4 and pr[c] > 4 for a, c in pairs):
            continue
        out.append((m.run([(BTMZ_ITERS, loads)], pr, pairs)[0], pr))
    return sorted(out)


def print_btmz_statics(m, paper, pairs):
    st = btmz_statics(m, paper, pairs)
    best = st[0][0]
    print("  BT-MZ static settings within 0.01 %% of the best (%.2f s): %s" % (
        best, " ".join("(%s)" % ",".join(map(str, pr)) for t, pr in st
                       if t <= best * 1.0001)))
    paper_pr = paper["bt_mz"]["static"]["priority"]
    t = [t for t, pr in st if pr == paper_pr][0]
    print("  the paper's (%s): %.2f s, %+.3f %% against the best" % (
        ",".join(map(str, paper_pr)), t, 100 * (t / best - 1)))


def table_rms(preds):
    by = {}
    for p in preds:
        by.setdefault(p[0].split()[0], []).append(residual(*p) ** 2)
    return {k: (sum(v) / len(v)) ** 0.5 for k, v in by.items()}


def gains(m, paper, pairs):
    d = {p[0]: p[1] for p in predictions(m, paper, pairs)}
    return ["%s %.1f%%" % (t, 100 * (1 - d[t + " static time"] / d[t + " baseline time"]))
            for t in ("III", "IV", "V")]


def integer_model(m):
    """The model as hpc_smt.c holds it: permille knots and rho."""
    k = [round(v * 1000) / 1000 for v in m.knots]
    return Model(k, round(m.rho * 1000) / 1000, m.compete)


def main():
    args = [a for a in sys.argv[1:] if a != "--chip"]
    chip = len(args) < len(sys.argv) - 1
    path = args[0] if args else DEFAULT_TABLES
    with open(path) as f:
        paper = json.load(f)
    pairings = {"P1P4,P2P3": [(0, 3), (1, 2)], "P1P2,P3P4": [(0, 1), (2, 3)],
                "P1P3,P2P4": [(0, 2), (1, 3)]}
    main_pairs = pairings["P1P4,P2P3"]
    print("BT-MZ: which ranks share a core (model %s): SSE of the fit" % MODEL)
    for name, pairs in pairings.items():
        print("  %-10s %10.1f" % (name, fit("normal", None, S0, paper, pairs)[1]))
    print("\nwaiting context: a part rho of a wait releases the core (single-thread")
    print("mode), the rest competes at the waiting task's priority (poll) or at")
    print("normal priority 4 (normal). s(1/2) = %.3f unless fitted.\n" % S0)
    print("%-28s %8s %6s  %-35s %-24s %s" % ("variant", "SSE", "rho",
          "s(1/8) s(1/4) s(1/2) s(3/4) s(7/8)", "rms III IV V", "static gains III IV V"))
    chosen, chosen_sse = None, None
    for name, compete, rho, s0 in VARIANTS:
        m, v = fit(compete, rho, s0, paper, main_pairs)
        rms = table_rms(predictions(m, paper, main_pairs))
        print("%-28s %8.2f %6.3f  %-35s %-24s %s" % (
            name, v, m.rho, " ".join("%6.3f" % x for x in m.knots),
            " ".join("%5.2f" % rms[t] for t in ("III", "IV", "V")),
            " ".join(gains(m, paper, main_pairs))))
        if name == MODEL:
            chosen, chosen_sse = m, v
    m = integer_model(chosen)
    print("\nmodel (%s), as kernel/hpc-core/hpc_smt.c holds it:" % MODEL)
    print("  knots (share/1024, permille): " + ", ".join(
        "{%d, %d}" % (round(x * 1024), round(y * 1000)) for x, y in zip(SHARES, m.knots)))
    # Beyond d = 2 (no table uses it): d = 5 (share 63/64) gains 1/0.95 of
    # what d = 2 gains, as the POWER5 characterisation reports.
    s0, s78 = m.knots[2], m.knots[4]
    s63 = s0 + (s78 - s0) / 0.95
    print("  and {1024, %d} (d = 5 gains 1/0.95 of d = 2's gain)"
          % round(1000 * (s78 + (s63 - s78) * 128 / 112)))
    print("  released part of a wait: %d permille; the rest competes at priority 4"
          % round(m.rho * 1000))
    print("  paper's static gains: III 13.3%, IV 8.1%, V 16.2%; model: " +
          " ".join(gains(m, paper, main_pairs)))
    print("\n%-24s %9s %9s %9s" % ("number", "model", "paper", "residual"))
    for p in predictions(m, paper, main_pairs):
        unit = "%" if p[3] == "s" else "pt"
        print("%-24s %9.2f %9.2f %+8.2f%s" % (p[0], p[1], p[2], residual(*p), unit))
    rms = table_rms(predictions(m, paper, main_pairs))
    print("rms residual by table: " + ", ".join("%s %.2f" % kv for kv in sorted(rms.items())))
    # P4 computes 99.85 % of both BT-MZ runs of the paper: the run lasts as
    # long as P4 computes, which only its own core decides. P3's priority
    # (the paper's static 5) changes nothing with independent cores.
    print()
    print_btmz_statics(m, paper, main_pairs)
    if not chip:
        return
    # Could the cores share something that makes P3's raise pay? A chip
    # term, fitted with the rest.
    mc, v = fit_chip(chosen, paper, main_pairs)
    rms = table_rms(predictions(mc, paper, main_pairs))
    print("\nwith a shared-chip term (each busy context of the other core costs"
          " chip/2 of a context's speed):")
    print("  SSE %.2f (without it: %.2f), chip %.3f, rho %.3f, knots %s" % (
        v, chosen_sse, mc.chip, mc.rho, " ".join("%.3f" % x for x in mc.knots)))
    print("  rms III %.2f, IV %.2f, V %.2f; static gains %s" % (
        rms["III"], rms["IV"], rms["V"], " ".join(gains(mc, paper, main_pairs))))
    print_btmz_statics(mc, paper, main_pairs)


if __name__ == "__main__":
    main()
