#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""libhpcmon end to end: MetBench under LD_PRELOAD with a receiver of its records.

Checks counts (records per rank and iteration), consistency of run_ns/wait_ns
with MetBench's own trace (generous ratios), the LIP / efficiency report, and
that HPCMON_BLOCKING_WAIT turns waits into sleeps. No timed assertions.
The same checks run for every MPI: HPCSCHED_MPI=openmpi (default, BUILD_DIR
build/) or mpich (BUILD_DIR build/mpich, libhpcmon-mpich.so).
usage: [HPCSCHED_MPI=mpich] e2e.py BUILD_DIR
"""
import atexit
import json
import os
import shutil
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "bench", "metbench", "tests"))
from tap import MPI, check, done, hpcmon_lib, mpirun, read_trace, run  # noqa: E402

sys.path.insert(0, here)
from rx import BYE, HELLO, ITERATION, MAGIC, VERSION, Receiver, load_json  # noqa: E402

build = sys.argv[1]
LIB = hpcmon_lib(build)
LIBNAME = os.path.basename(LIB)
MB = os.path.join(build, "bench", "metbench", "metbench")
CALLS = os.path.join(build, "tools", "hpcmon", "hpcmon-mpi-calls")
tmp = tempfile.mkdtemp(prefix="hpcmon-e2e-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)

N = 10
LOADS = "200,800,200,800"


def monitored(env, *mb_args, np=5, prog=None):
    """Run MetBench (or @prog) under the monitor; @env reaches the ranks,
    LD_PRELOAD only the ranks (not the launcher)."""
    return run(mpirun(np, *(prog or [MB]), *mb_args, env=env, preload=LIB), env=env)


# ---------------------------------------------------------------- 1. records
sock = os.path.join(tmp, "hpcd.sock")
rep1 = os.path.join(tmp, "report1.json")
trace = os.path.join(tmp, "trace.csv")
rx = Receiver(sock)
rc, out, err = monitored({"HPCD_SOCKET": sock, "HPCMON_MIN_WAIT_US": "0",
                          "HPCMON_IGNORE_RANKS": "0", "HPCMON_REPORT": rep1},
                         "--loads", LOADS, "-n", str(N), "--wait", "spin", "--json",
                         "--trace", trace, "--calibrate-ms", "20")
rx.close()
check(rc == 0, f"{MPI}: MetBench runs under LD_PRELOAD={LIBNAME}", f"rc={rc}\n{out}\n{err}")
rep = load_json(rep1)
check("ranks" in rep and len(rep["ranks"]) == 5, "HPCMON_REPORT JSON parses, 5 ranks", rep)
recs = rx.recs
check(rx.bad == 0 and recs and all(r["magic"] == MAGIC and r["version"] == VERSION and r["size"] == 5
                                   for r in recs),
      "every record is an hpcmon_record (magic, version, size 5)", f"bad={rx.bad}")
pids = {r["rank"]: r["pid"] for r in recs}
check(sorted(pids) == [0, 1, 2, 3, 4] and len(set(pids.values())) == 5
      and len({r["job"] for r in recs}) == 1, "5 ranks, one pid each, one job id", pids)
ranks = rep.get("ranks", [])
sent = {r["rank"]: r["sent"] for r in ranks}
dropped = {r["rank"]: r["dropped"] for r in ranks}
got = {rk: sum(1 for r in recs if r["rank"] == rk) for rk in range(5)}
check(got == sent, "received = sent per rank (losses only where the monitor counted a drop)",
      f"received={got} sent={sent} dropped={dropped}")
for kind, name in ((HELLO, "HELLO"), (BYE, "BYE")):
    n = {rk: sum(1 for r in recs if r["rank"] == rk and r["kind"] == kind) for rk in range(5)}
    check(all(n[rk] + dropped.get(rk, 0) >= 1 and n[rk] <= 1 for rk in n),
          f"one {name} per rank", n)
# With HPCMON_MIN_WAIT_US=0 each wrapped call closes an iteration: MetBench
# makes N + 2 of them (start barrier, N iteration barriers, result gather).
iters = {rk: [r for r in recs if r["rank"] == rk and r["kind"] == ITERATION] for rk in range(5)}
closed = {r["rank"]: r["iterations"] for r in ranks}
check(all(abs(closed[rk] - (N + 2)) <= 1 for rk in closed),
      f"monitor closed N+2 = {N + 2} iterations per rank (+-1)", closed)
check(all(abs(len(iters[rk]) - (N + 2)) <= 1 for rk in iters),
      f"one ITERATION record per rank and iteration (N+2 = {N + 2}, +-1)",
      {rk: len(v) for rk, v in iters.items()})
check(all([r["iteration"] for r in v] == sorted({r["iteration"] for r in v}) for v in
          iters.values()), "iteration numbers increase")

# run_ns / wait_ns against MetBench's own trace (same CLOCK_MONOTONIC).
header, rows = read_trace(trace) if os.path.exists(trace) else ([], [])
for rk in range(5):
    mine = [r for r in rows if r["rank"] == rk]
    recs_rk = iters[rk]
    if not mine or not recs_rk:
        check(False, f"rank {rk}: trace and records to compare", f"{len(mine)} {len(recs_rk)}")
        continue
    t_run = t_wait = m_run = m_wait = 0
    for t in mine:
        m = min(recs_rk, key=lambda r: abs(r["end_ns"] - t["wait_end_ns"]))
        t_run += t["compute_end_ns"] - t["start_ns"]
        t_wait += t["wait_end_ns"] - t["compute_end_ns"]
        m_run += m["run_ns"]
        m_wait += m["wait_ns"]
    ratio = (m_run + m_wait) / (t_run + t_wait)
    u_t, u_m = t_run / (t_run + t_wait), m_run / (m_run + m_wait)
    check(0.8 <= ratio <= 1.25 and abs(u_t - u_m) <= 0.1,
          f"rank {rk}: records match the trace (iteration time ratio {ratio:.3f}, "
          f"utilisation {u_m:.3f} vs {u_t:.3f})",
          f"trace run={t_run} wait={t_wait} monitor run={m_run} wait={m_wait}")

# cpu_ns: the CPU time of each compute phase, which does not grow when ranks
# share CPUs: the heavy workers' (loads 800) well above the light ones' (200),
# and never above the compute time the same records give.
cpu = {rk: sum(r["cpu_ns"] for r in iters[rk]) for rk in range(5)}
run_ = {rk: sum(r["run_ns"] for r in iters[rk]) for rk in range(5)}
check(all(0 < cpu[rk] <= run_[rk] * 1.02 + 2000000 for rk in range(1, 5))
      and cpu[2] + cpu[4] > 2 * (cpu[1] + cpu[3]),
      "records: cpu_ns of the compute phases, heavy workers > 2x light ones, <= run_ns",
      f"cpu={cpu} run={run_}")
# phases: with HPCMON_MIN_WAIT_US=0 every record is one compute phase.
check(all(r["phases"] == 1 for v in iters.values() for r in v),
      "records: phases = 1 when every wrapped call closes an iteration",
      {rk: [r["phases"] for r in v] for rk, v in iters.items()})
# MetBenchVar (loads swapped every 3 iterations) with a min wait (5 ms)
# longer than the heavy workers' waits and far shorter than the light ones'
# (2300 units more work, about 60 ms on this machine): those
# waits join the next compute phase, and the record that closes when the
# worker turns light holds several phases.
# Summed over a rank's records, the phases are still one per wait phase of
# the program (N + 2, less those of the iteration still open at
# MPI_Finalize).
sock_j = os.path.join(tmp, "hpcd-j.sock")
rx = Receiver(sock_j)
rc, out_j, err_j = monitored({"HPCD_SOCKET": sock_j, "HPCMON_MIN_WAIT_US": "5000",
                              "HPCMON_QUIET": "1"},
                             "--loads", "100,2400,100,2400", "-n", str(N), "--wait", "spin", "--swap-every", "3",
                             "--calibrate-ms", "20")
rx.close()
jit = {rk: [r for r in rx.recs if r["rank"] == rk and r["kind"] == ITERATION] for rk in range(1, 5)}
phases = {rk: [r["phases"] for r in v] for rk, v in jit.items()}
check(rc == 0 and all(v and all(p >= 1 for p in v) and sum(v) <= N + 2 for v in phases.values())
      and any(p > 1 for v in phases.values() for p in v)
      and all(sum(v) >= N // 2 for v in phases.values()),
      "records: a wait below the min wait joins compute phases, counted in phases "
      "(N / 2 to N + 2 per rank)", f"{phases}\n{err_j}")
# HPCMON_BLOCKING_WAIT unset (auto): 5 ranks sleep in their waits where they
# outnumber the CPUs, and poll where they do not.
ncpu = len(os.sched_getaffinity(0))
check(rep.get("blocking_wait") is (5 > ncpu),
      f"auto blocking wait: {rep.get('blocking_wait')} for 5 ranks on {ncpu} CPU(s)", rep)
rep_few = os.path.join(tmp, "few.json")
rc, out_few, err_few = monitored({"HPCD_SOCKET": "", "HPCMON_REPORT": rep_few, "HPCMON_QUIET": "1"},
                                 "--loads", "20", "-n", "2", "--calibrate-ms", "0", np=2)
few = load_json(rep_few)
check(rc == 0 and few.get("blocking_wait") is (2 > ncpu),
      f"auto blocking wait: {few.get('blocking_wait')} for 2 ranks on {ncpu} CPU(s)",
      out_few + err_few)

# The report: LIP (container paper) and POP efficiency from the per-rank compute.
inc = [r["compute_ns"] for r in ranks if not r["ignored"]]
if inc and min(inc) > 0:
    mean = sum(inc) / len(inc)
    lip = (max(inc) - mean) / max(inc)
    eff = mean / max(inc)
else:
    lip = eff = None
check(lip is not None and rep.get("lip") is not None and abs(rep["lip"] - lip) < 1e-3
      and abs(rep["efficiency"] - eff) < 1e-3,
      "report: LIP = (max - mean)/max and efficiency = mean/max over ranks 1-4",
      f"report lip={rep.get('lip')} eff={rep.get('efficiency')} recomputed {lip} {eff}")
check(eff is not None and 0 < eff < 0.95 and lip > 0.1,
      f"report: imbalance detected (LIP {lip and 100 * lip:.1f} %, efficiency {eff:.3f})")
check(rep.get("iter_lip_count", 0) >= N and rep.get("iter_lip_mean") is not None
      and 0 <= rep["iter_lip_mean"] <= rep["iter_lip_max"] < 1,
      "report: per-iteration LIP over every iteration, below 100 %", rep)
check("hpcmon: LIP" in err and "load balance efficiency" in err and "(ignored)" in err,
      "report printed by rank 0 (LIP, efficiency, ignored master)", err)
mbres = {}
try:
    mbres = {r["rank"]: r for r in json.loads(out)["ranks"]}
except ValueError:
    pass
light = [r["compute_pct"] for r in ranks if r["rank"] in (1, 3)]
heavy = [r["compute_pct"] for r in ranks if r["rank"] in (2, 4)]
check(light and heavy and sum(light) < sum(heavy) and len(mbres) == 5,
      "monitor's % compute: light workers below heavy workers", f"{light} {heavy}")

# ------------------------------------------------- 2. no listener: never fatal
rc, out, err = monitored({"HPCD_SOCKET": os.path.join(tmp, "nobody.sock"),
                          "HPCMON_QUIET": "1", "HPCMON_REPORT": os.path.join(tmp, "r2.json")},
                         "--loads", "20,80", "-n", "3", "--calibrate-ms", "0", np=3)
r2 = load_json(os.path.join(tmp, "r2.json"))
check(rc == 0 and "hpcmon:" not in err and all(r["sent"] == 0 and r["dropped"] > 0
                                               for r in r2.get("ranks", [{}])),
      "no hpcd listening: records dropped, program unaffected, HPCMON_QUIET", err + str(r2))

# --------------------------------- 3. blocking-wait mode: waits become sleeps
reps = {}
for bw in ("0", "1"):
    path = os.path.join(tmp, f"bw{bw}.json")
    rc, out, err = monitored({"HPCD_SOCKET": "", "HPCMON_BLOCKING_WAIT": bw,
                              "HPCMON_IGNORE_RANKS": "0", "HPCMON_REPORT": path},
                             "--loads", LOADS, "-n", str(N), "--wait", "spin", "--json",
                             "--calibrate-ms", "0")
    ok = rc == 0
    try:
        res = json.loads(out)
        ok = ok and len(res["ranks"]) == 5
    except ValueError:
        ok = False
    check(ok, f"HPCMON_BLOCKING_WAIT={bw}: MetBench runs, its results parse", out + err)
    reps[bw] = {r["rank"]: r for r in load_json(path).get("ranks", [])}
if len(reps["0"]) == 5 and len(reps["1"]) == 5:
    m0, m1 = reps["0"][0], reps["1"][0]
    check(all(reps["1"][rk]["nvcsw"] >= N for rk in (0, 1, 3)),
          "blocking wait: the waiting ranks sleep (>= 1 voluntary switch per iteration)",
          {rk: reps["1"][rk]["nvcsw"] for rk in range(5)})
    check(m1["nvcsw"] > m0["nvcsw"],
          f"blocking wait: master's voluntary switches {m0['nvcsw']} -> {m1['nvcsw']}")
    check(m1["cpu_ns"] < m1["wall_ns"] / 2,
          f"blocking wait: master's CPU time << wall time ({m1['cpu_ns'] / 1e6:.1f} ms of "
          f"{m1['wall_ns'] / 1e6:.1f} ms)")
    check(all(abs(reps["1"][rk]["iterations"] - (N + 2)) <= 2 for rk in (0, 1, 3)),
          "blocking wait, default 100 us threshold: waiting ranks close ~N+2 iterations",
          {rk: reps["1"][rk]["iterations"] for rk in range(5)})
else:
    check(False, "blocking wait reports", reps)

# ------------------------ 4. every wrapped call, results unchanged, both modes
for bw in ("0", "1"):
    rc, out, err = monitored({"HPCD_SOCKET": "", "HPCMON_BLOCKING_WAIT": bw, "HPCMON_QUIET": "1"},
                             np=3, prog=[CALLS])
    lines = out.splitlines()
    oks = [l for l in lines if l.startswith("ok ")]
    nots = [l for l in lines if l.startswith("not ok")]
    check(rc == 0 and len(oks) == 14 and not nots,
          f"HPCMON_BLOCKING_WAIT={bw}: the 14 wrapped-call checks pass", out + err)

done()
