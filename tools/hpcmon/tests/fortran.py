#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""libhpcmon and Fortran programs: one program per binding (mpif.h, 'use mpi',
'use mpi_f08'; tests/fortran/), run under LD_PRELOAD with a receiver of its records.

Every program runs NITER iterations in which rank r computes r * UNIT_MS of
wall-clock busy time, then makes one blocking call (MPI_Barrier, MPI_Waitall,
MPI_Allreduce). Checked: every rank registers (HELLO, report), the monitor
closes exactly NITER iterations per rank (HPCMON_MIN_WAIT_US=0: one per
blocking call), the heaviest rank's compute share is well above the lightest
rank's (ranks compared with each other, no absolute time), and LIP is
(max - mean) / max of the reported compute, per run and per iteration. Also:
libhpcmon defines every Fortran name the MPI's Fortran libraries export for
the calls it wraps in C, and a program making every wrapped call through
'use mpi_f08' gets the same results with the monitor (either wait mode) as
without it, each call accounted once.
usage: [HPCSCHED_MPI=mpich] fortran.py BUILD_DIR
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "bench", "metbench", "tests"))
from tap import MPI, check, done, hpcmon_lib, mpirun, run  # noqa: E402

sys.path.insert(0, here)
from rx import HELLO, ITERATION, Receiver, load_json  # noqa: E402

build = sys.argv[1]
LIB = hpcmon_lib(build)
BIN = os.path.join(build, "tools", "hpcmon")
TABLE = os.path.join(here, "..", "fortran_calls.h")
NP, NITER, UNIT_MS = 3, 20, 10
PROGRAMS = (("mpif.h", "mpif_barrier", "MPI_Barrier"),
            ("use mpi", "usempi_waitall", "MPI_Waitall"),
            ("use mpi_f08", "usempif08_allreduce", "MPI_Allreduce"))
tmp = tempfile.mkdtemp(prefix="hpcmon-fortran-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)


def prog_path(name):
    return os.path.join(BIN, "hpcmon-f-" + name.replace("_", "-"))


def lip(values):
    """(max - mean) / max, None if nothing computed."""
    m = max(values)
    return (m - sum(values) / len(values)) / m if m > 0 else None


def defined(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def fortran_libs(prog):
    """The MPI Fortran binding libraries @prog loads (ldd)."""
    out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    return [m.group(1) for m in re.finditer(r"=> (\S*lib(?:mpi_mpifh|mpi_usempif08|mpichfort)"
                                            r"\.so[.0-9]*) ", out)]


def table_rows():
    with open(TABLE) as f:
        return re.findall(r"X\((\w+), (\w+), (\d+), (\w+), (\w+)\)", f.read())


def fortran_names(lc, uc):
    return {f"mpi_{lc}", f"mpi_{lc}_", f"mpi_{lc}__", f"MPI_{uc}", f"mpi_{lc}_f08_",
            f"mpi_{lc}_f08ts_", f"mpi_{lc}_f08ts_large_"}


# ------------------------------------------- 1. the names libhpcmon defines
mine = defined(LIB)
rows = table_rows()
c_wrapped = {s for s in mine if re.fullmatch(r"MPI_[A-Z][a-z_]+", s)}
check(rows and {f"MPI_{lc.capitalize()}" for lc, *_ in rows} == c_wrapped,
      f"{MPI}: the Fortran table has one row per C wrapper",
      f"table {sorted(r[0] for r in rows)}\nC {sorted(c_wrapped)}")
libs = sorted({lib for _, name, _ in PROGRAMS for lib in fortran_libs(prog_path(name))})
check(len(libs) >= 1, f"{MPI}: the test programs load the MPI's Fortran libraries", libs)
exported = set().union(*(defined(lib) for lib in libs)) if libs else set()
wanted = {n for lc, uc, *_ in rows for n in fortran_names(lc, uc)} & exported
missing = sorted(wanted - mine)
check(len(wanted) >= 4 * len(rows) and not missing,
      f"{MPI}: libhpcmon defines all {len(wanted)} Fortran names of its calls that "
      f"{', '.join(os.path.basename(lib) for lib in libs)} export",
      f"missing: {missing}")

# ------------------------------------------------ 2. one run per binding
for binding, name, call in PROGRAMS:
    tag = f"{MPI} {binding}"
    sock = os.path.join(tmp, f"{name}.sock")
    report = os.path.join(tmp, f"{name}.json")
    env = {"HPCD_SOCKET": sock, "HPCMON_MIN_WAIT_US": "0", "HPCMON_REPORT": report}
    rx = Receiver(sock)
    rc, out, err = run(mpirun(NP, prog_path(name), str(NITER), str(UNIT_MS), env=env,
                              preload=LIB), env=env)
    rx.close()
    check(rc == 0 and f"done {NITER}" in out, f"{tag}: {name} runs under LD_PRELOAD",
          f"rc={rc}\n{out}\n{err}")
    rep = load_json(report)
    ranks = rep.get("ranks", [])
    hello = sorted(r["rank"] for r in rx.recs if r["kind"] == HELLO)
    check(hello == list(range(NP)) and rep.get("size") == NP
          and sorted(r["rank"] for r in ranks) == list(range(NP)),
          f"{tag}: every rank registers (HELLO record, report)", f"hello={hello}\n{rep}")
    iters = {r["rank"]: (r["iterations"], r["calls"]) for r in ranks}
    check(len(iters) == NP and all(v == (NITER, NITER) for v in iters.values()),
          f"{tag}: {NITER} {call} calls and {NITER} iterations per rank",
          f"(iterations, calls) per rank: {iters}")
    runs = {rk: [r["run_ns"] for r in sorted(rx.recs, key=lambda r: r["iteration"])
                 if r["kind"] == ITERATION and r["rank"] == rk] for rk in range(NP)}
    check(all(len(v) == NITER for v in runs.values()),
          f"{tag}: one ITERATION record per rank and iteration",
          {rk: len(v) for rk, v in runs.items()})
    if len(ranks) != NP:
        continue
    pct = {r["rank"]: r["compute_pct"] for r in ranks}
    comp = [r["compute_ns"] for r in sorted(ranks, key=lambda r: r["rank"])]
    check(pct[NP - 1] > pct[0] + 25 and comp[NP - 1] > comp[0],
          f"{tag}: rank {NP - 1} (computes {NP - 1} units) computes a far larger share "
          f"than rank 0 (none): {pct[NP - 1]:.1f} % vs {pct[0]:.1f} %", pct)
    want = lip(comp)
    check(want is not None and rep.get("lip") is not None
          and abs(rep["lip"] - want) < 1e-3 and 0 < rep["lip"] < 1,
          f"{tag}: LIP = (max - mean) / max of the ranks' compute ({want and 100 * want:.1f} %)",
          f"report lip={rep.get('lip')}")
    if all(len(v) == NITER for v in runs.values()):
        per = [lip([runs[rk][i] for rk in range(NP)]) for i in range(NITER)]
        per = [x for x in per if x is not None]
        mean = sum(per) / len(per) if per else None
        check(per and rep.get("iter_lip_count") == len(per)
              and abs(rep.get("iter_lip_mean", -9) - mean) < 1e-3
              and abs(rep.get("iter_lip_max", -9) - max(per)) < 1e-3 and max(per) < 1,
              f"{tag}: per-iteration LIP = (max - mean) / max of each iteration's compute, "
              f"below 100 %",
              f"report mean={rep.get('iter_lip_mean')} max={rep.get('iter_lip_max')} "
              f"n={rep.get('iter_lip_count')}, recomputed mean={mean} "
              f"max={per and max(per)} n={len(per)}")

# -------------------- 3. every wrapped call from mpi_f08, results unchanged
CALLS = prog_path("usempif08_calls")
rc, plain, err = run(mpirun(NP, CALLS), env={"LD_PRELOAD": ""})
check(rc == 0 and "not ok" not in plain and plain.count("\nok ") >= 12,
      f"{MPI} use mpi_f08: usempif08_calls passes without the monitor", plain + err)
for bw in ("0", "1"):
    report = os.path.join(tmp, f"calls{bw}.json")
    env = {"HPCD_SOCKET": "", "HPCMON_QUIET": "1", "HPCMON_BLOCKING_WAIT": bw,
           "HPCMON_REPORT": report}
    rc, out, err = run(mpirun(NP, CALLS, env=env, preload=LIB), env=env)
    check(rc == 0 and out == plain,
          f"{MPI} use mpi_f08, HPCMON_BLOCKING_WAIT={bw}: every wrapped call, same results "
          f"as without the monitor", f"rc={rc}\nwith:\n{out}{err}\nwithout:\n{plain}")
    made = re.search(r"^calls (\d+)$", plain, re.M)
    calls = {r["rank"]: r["calls"] for r in load_json(report).get("ranks", [])}
    check(made and len(calls) == NP and set(calls.values()) == {int(made.group(1))},
          f"{MPI} use mpi_f08, HPCMON_BLOCKING_WAIT={bw}: each wrapped call accounted once "
          f"({made and made.group(1)} per rank)", calls)

done()
