#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""MetBench end to end: option errors, the shm layer (dynamic and static), MPI mode.

Assertions are on counts and generous ratios, never on absolute times.
With --mpi-only only the MPI program's checks run: the mpich suite runs them
on the MPICH build (HPCSCHED_MPI=mpich e2e.py build/mpich --mpi-only).
usage: [HPCSCHED_MPI=mpich] e2e.py BUILD_DIR [--mpi-only]
"""
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import MPI, check, done, mpirun, read_trace, run  # noqa: E402

build = sys.argv[1]
MPI_ONLY = sys.argv[2:] == ["--mpi-only"]
if sys.argv[2:] and not MPI_ONLY:
    sys.exit("usage: e2e.py BUILD_DIR [--mpi-only]")
bindir = os.path.join(build, "bench", "metbench")
MB = os.path.join(bindir, "metbench")
SHM = os.path.join(bindir, "metbench-shm")
STATIC = os.path.join(bindir, "metbench-shm-static")
tmp = tempfile.mkdtemp(prefix="metbench-e2e-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)
LIGHT, HEAVY = 200, 800
LOADS = f"{LIGHT},{HEAVY},{LIGHT},{HEAVY}"
ITERS = 10

# ---- option errors: every bad argument -> message naming it, exit status 2
bad = [
    ([SHM, "--bogus"], "unknown argument '--bogus'"),
    ([SHM, "--loads", "1,x"], "'x'"),
    ([SHM, "--loads"], "needs a value"),
    ([SHM, "--iterations", "0"], "at least 1"),
    ([SHM, "--wait", "sometimes"], "not spin or block"),
    ([SHM, "--sync", "mpi"], "no MPI"),
    ([SHM, "--swap-every", "2", "--loads", "1,2,3"], "even number"),
    ([SHM, "--pin", "0,1"], "one CPU per worker"),
    ([SHM, "--loads", "1,2", "--pin", "0,1000"], "not available"),
    ([SHM, "--loads-file", os.path.join(tmp, "missing")], "cannot open"),
    ([SHM, "--hold", "0"], "at least 1 second"),
    ([MB, "--sync", "carrier-pigeon"], "not mpi or shm"),
    ([MB, "--json=yes"], "takes no value"),
]
for cmd, msg in bad:
    if MPI_ONLY and cmd[0] != MB:
        continue
    rc, out, err = run(cmd)
    name = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
    check(rc == 2 and msg in err, f"error: {name} -> status 2, '{msg}'",
          f"rc={rc}\nstderr={err}\nstdout={out}")

if not MPI_ONLY:
    rc, out, err = run([SHM, "--help"])
    check(rc == 0 and "--loads" in out and "--swap-every" in out, "metbench-shm --help", err)

# MPI: the number of loads must match the number of workers.
rc, out, err = run(mpirun(3, MB, "--loads", "1,2,3,4", "--calibrate-ms", "0"))
check(rc != 0 and "need 5 MPI processes" in err, f"{MPI}: 3 processes for 4 loads are refused",
      f"rc={rc}\n{err}")
# MPI --hold: rank 0 waits for SIGUSR1; without it the job ends, saying why
rc, out, err = run(mpirun(3, MB, "--loads", "1,2", "--hold", "1", "--calibrate-ms", "0"))
check(rc != 0 and "no SIGUSR1 within 1 s" in err, f"{MPI}: --hold 1 without SIGUSR1 ends the job, "
      "saying why", f"rc={rc}\n{err}")


def light_heavy_checks(tag, res, loads, band=True):
    """% compute of the light workers ~ light/heavy within a generous band.

    With one CPU per worker the light workers compute light/heavy of the time;
    time-shared CPUs (2 here, shared with other jobs) move it up (a light and a
    heavy worker share a CPU: 2L/(L+H)) or down (the heavy ones get less than
    a CPU): hence the wide band, on the mean of the light workers. Spinning
    waiters on an oversubscribed machine steal the heavy workers' CPU, so
    with spin waits only the order is checked.
    """
    ranks = {r["proc"]: r for r in res["ranks"]}
    ratio = LIGHT / HEAVY
    light = [ranks[p]["compute_pct"] / 100 for p in ("P1", "P3")]
    heavy = [ranks[p]["compute_pct"] / 100 for p in ("P2", "P4")]
    lo, hi = ratio / 5, min(1.0, ratio * 2.6)
    if band:
        check(lo <= sum(light) / 2 <= hi,
              f"{tag}: light workers' % compute ~ {ratio:.2f} (band {lo:.3f}..{hi:.3f})",
              f"light={light} heavy={heavy}")
    check(sum(heavy) > sum(light), f"{tag}: heavy workers compute a larger share (mean)",
          f"light={light} heavy={heavy}")
    check(all(abs(r["compute_pct"] + r["wait_pct"] - 100) < 0.05 for r in res["ranks"]),
          f"{tag}: % compute + % wait = 100 for every rank")
    check([r["load_units"] for r in res["ranks"]] == [0] + [l * ITERS for l in loads],
          f"{tag}: load units per rank = load x iterations")


def trace_checks(tag, path, nranks, iters, loads_of):
    header, rows = read_trace(path)
    check(header == ["rank", "proc", "iteration", "load", "start_ns", "compute_end_ns",
                     "wait_end_ns"], f"{tag}: trace header", str(header))
    check(len(rows) == nranks * iters, f"{tag}: trace has ranks x iterations rows",
          f"{len(rows)} != {nranks}x{iters}")
    ordered = all(r["start_ns"] <= r["compute_end_ns"] <= r["wait_end_ns"] for r in rows)
    check(ordered, f"{tag}: trace start <= compute end <= wait end")
    want = [(rk, i, loads_of(rk, i)) for rk in range(nranks) for i in range(iters)]
    got = [(r["rank"], r["iteration"], r["load"]) for r in rows]
    check(got == want, f"{tag}: trace loads per rank and iteration", f"{got[:12]}...")
    # An iteration's barrier releases everybody: next start >= all previous compute ends.
    by_it = {}
    for r in rows:
        by_it.setdefault(r["iteration"], []).append(r)
    sync_ok = all(min(x["wait_end_ns"] for x in by_it[i]) >= max(x["compute_end_ns"]
                                                                    for x in by_it[i])
                  for i in by_it)
    check(sync_ok, f"{tag}: nobody leaves the barrier before the last one computed")
    return rows


def plain_loads(loads):
    return lambda rk, i: 0 if rk == 0 else loads[rk - 1]


loads = [LIGHT, HEAVY, LIGHT, HEAVY]

def run_json(label, cmd):
    """Run cmd: (status, its JSON output or None, stdout, stderr); output that
    does not parse is a failed check."""
    rc, out, err = run(cmd)
    try:
        return rc, json.loads(out), out, err
    except ValueError as ex:
        check(False, f"{label}: JSON output parses", f"rc={rc} {ex}\n{out}\n{err}")
        return rc, None, out, err


def children(pid):
    """The pids whose parent is @pid."""
    kids = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                if d.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return kids


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def running_with(marker):
    """Processes whose command line holds @marker."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if d.isdigit() and marker.encode() in f.read().replace(b"\0", b" "):
                    found.append(int(d))
        except OSError:
            pass
    return found


def shm_layer():
    """The shm layer, the static build and MetBenchVar over shm (no MPI)."""
    # ---- shm layer, both wait modes, dynamic binary
    for wait in ("block", "spin"):
        tr = os.path.join(tmp, f"shm-{wait}.csv")
        rc, res, out, err = run_json(f"shm {wait}", [SHM, "--loads", LOADS, "-n", str(ITERS),
                                                     "--wait", wait, "--json", "--trace", tr,
                                                     "--calibrate-ms", "20"])
        if res is not None:
            check(rc == 0 and len(res["ranks"]) == 5 and res["sync"] == "shm"
                  and res["wait"] == wait, f"shm {wait}: JSON output parses, master + 4 ranks",
                  out + err)
            check("units/s" in err, f"shm {wait}: calibration printed (stderr with --json)", err)
            light_heavy_checks(f"shm {wait}", res, loads, band=(wait == "block"))
            trace_checks(f"shm {wait}", tr, 5, ITERS, plain_loads(loads))

    # table output
    rc, out, err = run([SHM, "--loads", LOADS, "-n", "3", "--wait", "block",
                        "--calibrate-ms", "10"])
    lines = out.splitlines()
    rows = [l for l in lines if l.startswith("P") and not l.startswith("Proc")]
    check(rc == 0 and "units/s" in out and "% Comp" in out and len(rows) == 4
          and all(l.split()[3] == "-" for l in rows) and "Exec. time" in out,
          "shm table: calibration, Proc/% Comp/% Wait/Priority rows, exec time", out + err)

    # loads file + pinning (every worker on a CPU this machine has)
    lf = os.path.join(tmp, "loads.txt")
    with open(lf, "w") as f:
        f.write("# light heavy\n20 80\n")
    cpus = sorted(os.sched_getaffinity(0))
    pin = f"{cpus[0]},{cpus[-1]}"
    rc, out, err = run([SHM, "--loads-file", lf, "-n", "3", "--pin", pin, "--json", "--wait",
                        "block", "--calibrate-ms", "0"])
    ok = rc == 0 and [r["load_units"] for r in json.loads(out)["ranks"]] == [0, 60, 240]
    check(ok, f"shm: --loads-file and --pin {pin}", out + err)

    # --hold: the workers wait at the start until the master gets SIGUSR1;
    # without it the run fails after the given time and leaves no worker
    hold = subprocess.Popen([SHM, "--loads", "20,80", "-n", "3", "--wait", "block", "--json",
                             "--hold", "30", "--calibrate-ms", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    kids = []
    for _ in range(100):
        kids = children(hold.pid)
        if len(kids) == 2:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    waiting = hold.poll() is None and all(state(k) == "S" for k in kids)
    hold.send_signal(signal.SIGUSR1)
    out, err = hold.communicate(timeout=60)
    ok = hold.returncode == 0 and len(json.loads(out)["ranks"]) == 3
    check(len(kids) == 2 and waiting and ok,
          "shm --hold: 2 workers started, master and workers asleep until SIGUSR1, then the run",
          f"kids={kids} waiting={waiting} rc={hold.returncode}\n{out}{err}")
    t0 = time.monotonic()
    rc, out, err = run([SHM, "--loads", "21,83", "-n", "3", "--wait", "block", "--hold", "1",
                        "--calibrate-ms", "0"])
    left = running_with("--loads 21,83 ")
    check(rc == 1 and "no SIGUSR1 within 1 s" in err and time.monotonic() - t0 < 20 and not left,
          "shm --hold 1 without SIGUSR1: status 1, says why, no worker left",
          f"rc={rc} left={left}\n{err}")

    # ---- static build: no dynamic loader, same output
    rc, out, err = run(["ldd", STATIC])
    check("not a dynamic executable" in out + err, "metbench-shm-static is static", out + err)
    tr = os.path.join(tmp, "static.csv")
    rc, out, err = run([STATIC, "--loads", "20,80", "-n", "4", "--wait", "block", "--json",
                        "--trace", tr, "--calibrate-ms", "0"])
    ok = rc == 0 and len(json.loads(out)["ranks"]) == 3 if rc == 0 else False
    check(ok, "static: runs, JSON parses", out + err)
    if ok:
        trace_checks("static", tr, 3, 4, plain_loads([20, 80]))

    # ---- MetBenchVar: swap P1,P3 <-> P2,P4 every k iterations (JSON lines trace)
    trj = os.path.join(tmp, "var.jsonl")
    rc, out, err = run([SHM, "--loads", "10,40,10,40", "-n", "6", "--swap-every", "2", "--wait",
                        "block", "--trace", trj, "--calibrate-ms", "0"])
    ok = rc == 0 and out.startswith("MetBenchVar")
    check(ok, "MetBenchVar: runs and names itself", out + err)
    if ok:
        recs = [json.loads(l) for l in open(trj)]
        want = []
        for rk in range(5):
            for i in range(6):
                w = rk - 1
                own = [10, 40, 10, 40]
                want.append(0 if rk == 0 else (own[w ^ 1] if (i // 2) % 2 else own[w]))
        check([r["load"] for r in recs] == want and len(recs) == 30,
              "MetBenchVar: JSON-lines trace, loads swapped in iterations 2,3 only",
              str([r["load"] for r in recs]))


if not MPI_ONLY:
    shm_layer()

# ---- MPI mode, master + 4 workers
for wait in ("block", "spin"):
    tr = os.path.join(tmp, f"mpi-{wait}.csv")
    rc, res, out, err = run_json(f"mpi {wait}", mpirun(5, MB, "--loads", LOADS, "-n", str(ITERS),
                                                       "--wait", wait, "--json", "--trace", tr,
                                                       "--calibrate-ms", "20"))
    if res is not None:
        check(rc == 0 and len(res["ranks"]) == 5 and res["sync"] == "mpi",
              f"mpi {wait}: JSON output parses, master + 4 ranks", out + err)
        light_heavy_checks(f"mpi {wait}", res, loads, band=(wait == "block"))
        trace_checks(f"mpi {wait}", tr, 5, ITERS, plain_loads(loads))

# Table output, master + 3 workers (4 processes)
rc, out, err = run(mpirun(4, MB, "--loads", f"{LIGHT},{HEAVY},{LIGHT}", "-n", "3",
                          "--calibrate-ms", "10"))
rows = [l.split() for l in out.splitlines() if l[:2] in ("P1", "P2", "P3")]
check(rc == 0 and "MetBench: 3 workers" in out and "% Comp" in out and len(rows) == 3
      and [r[4] for r in rows] == [str(3 * LIGHT), str(3 * HEAVY), str(3 * LIGHT)]
      and "Exec. time" in out, f"{MPI}: 4 processes, per-rank table (Proc, % Comp, Load)",
      out + err)

# MetBenchVar over MPI: P1,P3 <-> P2,P4 swapped every 2 of 6 iterations
trv = os.path.join(tmp, "mpi-var.jsonl")
rc, out, err = run(mpirun(5, MB, "--loads", "10,40,10,40", "-n", "6", "--swap-every", "2",
                          "--json", "--trace", trv, "--calibrate-ms", "0"))
try:
    res = json.loads(out)
except ValueError as ex:
    res = None
    check(False, "mpi MetBenchVar: JSON output parses", f"rc={rc} {ex}\n{out}\n{err}")
if res is not None:
    units = [r["load_units"] for r in res["ranks"]]
    check(rc == 0 and res["benchmark"] == "MetBenchVar" and res["sync"] == "mpi"
          and res["swap_every"] == 2 and len(res["ranks"]) == 5,
          "mpi MetBenchVar: JSON names MetBenchVar, sync mpi, swap every 2, 5 ranks", out)
    # 4 iterations at the own load, 2 swapped: P1 4x10 + 2x40, P2 4x40 + 2x10
    check(units == [0, 120, 180, 120, 180], "mpi MetBenchVar: load units 0,120,180,120,180",
          str(units))
    recs = [json.loads(l) for l in open(trv)] if os.path.exists(trv) else []
    want = [0 if rk == 0 else ([10, 40, 10, 40][(rk - 1) ^ 1] if (i // 2) % 2 else
                               [10, 40, 10, 40][rk - 1]) for rk in range(5) for i in range(6)]
    check([r["load"] for r in recs] == want,
          "mpi MetBenchVar: trace loads swapped in iterations 2,3 only",
          str([r["load"] for r in recs]))

# --sync shm from the MPI binary, without mpirun
rc, out, err = run([MB, "--sync", "shm", "--loads", "10,40", "-n", "2", "--wait", "block",
                    "--calibrate-ms", "0"])
check(rc == 0 and "sync shm" in out, "metbench --sync shm runs without mpirun", out + err)

done()
