#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Open MPI and MPICH side by side, in one run (make bench-mpich).

1. MetBench (master + 4 workers, the same loads and iterations) under each
   MPI, alternating within each round: the launcher's wall time and
   MetBench's own execution time; the MPICH/Open MPI ratio of each round,
   then the median ratio.
2. libhpcmon's cost per wrapped call under each MPI: hpcmon-overhead on one
   rank with and without the monitor preloaded (publishing off), the
   difference of the medians, per call.

Times are noise on a busy machine; ratios of one round are side by side.
usage: bench-mpich.py BUILD_DIR [--rounds N] [--calls N]
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "bench", "metbench", "tests"))
from tap import hpcmon_lib, mpirun, run  # noqa: E402

ap = argparse.ArgumentParser(description="Open MPI and MPICH side by side")
ap.add_argument("build")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--calls", type=int, default=200000)
ap.add_argument("--loads", default="250,1000,250,1000")
ap.add_argument("--iterations", type=int, default=20)
a = ap.parse_args()
if a.rounds < 1 or a.calls < 1 or a.iterations < 1:
    sys.exit("bench-mpich: --rounds, --calls and --iterations must be >= 1")
BUILD = {"openmpi": a.build, "mpich": os.path.join(a.build, "mpich")}
MPIS = ("openmpi", "mpich")
np_ = a.loads.count(",") + 2
for mpi in MPIS:
    for f in (os.path.join(BUILD[mpi], "bench", "metbench", "metbench"),
              os.path.join(BUILD[mpi], "tools", "hpcmon", "hpcmon-overhead"),
              hpcmon_lib(BUILD[mpi], mpi)):
        if not os.path.exists(f):
            sys.exit(f"bench-mpich: {f} is not built (make metbench hpcmon mpich)")


def metbench(mpi):
    mb = os.path.join(BUILD[mpi], "bench", "metbench", "metbench")
    t0 = time.monotonic()
    rc, out, err = run(mpirun(np_, mb, "--loads", a.loads, "-n", str(a.iterations), "--wait",
                              "block", "--calibrate-ms", "0", "--json", mpi=mpi))
    wall = time.monotonic() - t0
    if rc != 0:
        sys.exit(f"bench-mpich: MetBench under {mpi} failed (rc {rc}):\n{err}")
    return wall, json.loads(out)["total_time_s"]


print(f"== MetBench, {np_} processes, loads {a.loads}, {a.iterations} iterations, wait block, "
      f"{a.rounds} rounds (order alternates)")
print(f"{'round':>5} {'openmpi wall':>13} {'mpich wall':>11} {'ratio':>6}   "
      f"{'openmpi exec':>13} {'mpich exec':>11} {'ratio':>6}")
walls, execs = [], []
for r in range(a.rounds):
    res = {}
    for mpi in (MPIS if r % 2 == 0 else MPIS[::-1]):
        res[mpi] = metbench(mpi)
    (ow, oe), (mw, me) = res["openmpi"], res["mpich"]
    walls.append(mw / ow)
    execs.append(me / oe)
    print(f"{r + 1:>5} {ow:>12.3f}s {mw:>10.3f}s {mw / ow:>6.3f}   {oe:>12.3f}s {me:>10.3f}s "
          f"{me / oe:>6.3f}")
print(f"MPICH / Open MPI, median of {a.rounds}: launcher wall time {statistics.median(walls):.3f}, "
      f"MetBench execution time {statistics.median(execs):.3f}")

print(f"\n== libhpcmon per wrapped call, 1 rank, {a.calls} calls x 3 reps, publishing off")
pat = re.compile(r"MPI_Barrier ([\d.]+) ns/call, MPI_Allreduce ([\d.]+) ns/call")
env = {"HPCD_SOCKET": "", "HPCMON_QUIET": "1"}
print(f"{'MPI':>8} {'call':>14} {'without':>10} {'with':>10} {'overhead':>10}")
for mpi in MPIS:
    ovh = os.path.join(BUILD[mpi], "tools", "hpcmon", "hpcmon-overhead")
    med = {}
    for way, pre in (("without", None), ("with", hpcmon_lib(BUILD[mpi], mpi))):
        rc, out, err = run(mpirun(1, ovh, str(a.calls), env=env, preload=pre, mpi=mpi), env=env)
        vals = pat.findall(out)
        if rc != 0 or not vals:
            sys.exit(f"bench-mpich: hpcmon-overhead under {mpi} ({way}) failed:\n{out}\n{err}")
        med[way] = [statistics.median(float(v[i]) for v in vals) for i in (0, 1)]
    for i, call in enumerate(("MPI_Barrier", "MPI_Allreduce")):
        w, m = med["without"][i], med["with"][i]
        print(f"{mpi:>8} {call:>14} {w:>8.1f}ns {m:>8.1f}ns {m - w:>8.1f}ns")
