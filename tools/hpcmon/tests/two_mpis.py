#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Open MPI and MPICH side by side: each build links its own MPI, a plain MPI
program built with mpicc.mpich is monitored by libhpcmon-mpich.so (report and
records as hpcd gets them), and a libhpcmon of the other MPI is refused with
one error line while the program runs unmonitored; hpcmon-lib picks the
library for a program; hpcd manages MetBench under MPICH from that library's
records. No timed assertions.

usage: two_mpis.py BUILD_DIR   (Open MPI build in BUILD_DIR, MPICH build and
the tiny_mpi programs in BUILD_DIR/mpich)
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "bench", "metbench", "tests"))
from tap import check, done, hpcmon_lib, mpirun, run  # noqa: E402

sys.path.insert(0, here)
from rx import BYE, HELLO, ITERATION, Receiver, load_json  # noqa: E402

build = sys.argv[1]
mbuild = os.path.join(build, "mpich")
tmp = tempfile.mkdtemp(prefix="hpcmon-two-mpis-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)

MB = {"openmpi": os.path.join(build, "bench", "metbench", "metbench"),
      "mpich": os.path.join(mbuild, "bench", "metbench", "metbench")}
LIB = {"openmpi": hpcmon_lib(build, "openmpi"), "mpich": hpcmon_lib(mbuild, "mpich")}
TINY = {m: os.path.join(mbuild, f"tiny-mpi-{m}") for m in ("openmpi", "mpich")}
SONAME = {"openmpi": "libmpi.so.40", "mpich": "libmpich.so.12"}
NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}
OTHER = {"openmpi": "mpich", "mpich": "openmpi"}


def needed(path):
    """The DT_NEEDED sonames of @path."""
    rc, out, err = run(["readelf", "-d", path])
    return {l.split("[")[1].split("]")[0] for l in out.splitlines() if "(NEEDED)" in l}


# ---- 1. each build links its own MPI and only that one
for mpi in ("openmpi", "mpich"):
    for what, path in (("metbench", MB[mpi]), (os.path.basename(LIB[mpi]), LIB[mpi]),
                       ("tiny-mpi", TINY[mpi])):
        libs = needed(path) if os.path.exists(path) else set()
        check(SONAME[mpi] in libs and SONAME[OTHER[mpi]] not in libs,
              f"{mpi}: {what} links {SONAME[mpi]} only", f"{path}: {sorted(libs)}")
check(os.path.islink(os.path.join(build, "tools", "hpcmon", "libhpcmon-openmpi.so")),
      "libhpcmon-openmpi.so names the Open MPI build")

# ---- 2. a plain MPICH program (mpicc.mpich, no hpcmon header) under the monitor
ITERS, UNIT, NP = 8, 500, 4
sock = os.path.join(tmp, "hpcd.sock")
rep = os.path.join(tmp, "tiny.json")
env = {"HPCD_SOCKET": sock, "HPCMON_MIN_WAIT_US": "0", "HPCMON_REPORT": rep}
rx = Receiver(sock)
rc, out, err = run(mpirun(NP, TINY["mpich"], str(ITERS), str(UNIT), env=env,
                          preload=LIB["mpich"], mpi="mpich"), env=env)
rx.close()
want_sum = ITERS * UNIT * sum(4 if r % 2 else 1 for r in range(NP))
check(rc == 0 and f"tiny_mpi: {NP} ranks, {ITERS} iterations, sum {want_sum}" in out,
      "mpich: tiny_mpi runs under LD_PRELOAD=libhpcmon-mpich.so, its result unchanged",
      f"rc={rc}\n{out}\n{err}")
r = load_json(rep)
ranks = r.get("ranks", [])
check(r.get("size") == NP and len(ranks) == NP, f"mpich: report of {NP} ranks", r)
check(all(x["iterations"] == ITERS for x in ranks),
      f"mpich: {ITERS} iterations per rank (one per MPI_Allreduce)",
      [x["iterations"] for x in ranks])
check(all(0 < x["compute_pct"] < 100 and x["compute_ns"] > 0 and x["wait_ns"] > 0
          and x["calls"] == ITERS for x in ranks),
      "mpich: utilisation of every rank in (0, 100) %, compute and wait measured", ranks)
comp = [x["compute_ns"] for x in ranks]
if len(comp) == NP and min(comp) > 0:
    mean = sum(comp) / NP
    lip, eff = (max(comp) - mean) / max(comp), mean / max(comp)
else:
    lip = eff = None
check(lip is not None and r.get("lip") is not None and abs(r["lip"] - lip) < 1e-3
      and abs(r["efficiency"] - eff) < 1e-3 and 0 < eff < 1,
      "mpich: LIP and POP load balance efficiency = recomputed from the ranks' compute",
      f"report {r.get('lip')} {r.get('efficiency')}, recomputed {lip} {eff}")
check(r.get("iter_lip_count") == ITERS and r.get("iter_lip_mean") is not None,
      f"mpich: per-iteration LIP over the {ITERS} iterations", r)
odd = sum(comp[1::2])
even = sum(comp[0::2])
check(odd > even, "mpich: the odd (4x) ranks compute more than the even ones",
      f"odd={comp[1::2]} even={comp[0::2]}")
check("hpcmon: LIP" in err and "load balance efficiency" in err
      and "per-iteration LIP" in err, "mpich: rank 0 prints the report (LIP, efficiency)", err)
recs = rx.recs
by = {rk: [x for x in recs if x["rank"] == rk] for rk in range(NP)}
sent = {x["rank"]: x["sent"] for x in ranks}
check(rx.bad == 0 and {rk: len(v) for rk, v in by.items()} == sent,
      "mpich: hpcd's socket receives every record sent, per rank",
      f"bad={rx.bad} got={ {rk: len(v) for rk, v in by.items()} } sent={sent}")
check(all([x["kind"] for x in v] == [HELLO] + [ITERATION] * ITERS + [BYE] for v in by.values())
      and len({x["pid"] for x in recs}) == NP and len({x["job"] for x in recs}) == 1
      and all(x["size"] == NP for x in recs),
      f"mpich: per rank HELLO, {ITERS} ITERATION, BYE; one pid per rank, one job",
      {rk: [x["kind"] for x in v] for rk, v in by.items()})

# tiny_mpi 3 50 on 3 ranks: 3 iterations x 50 x (1 + 4 + 1)
SUM3 = 3 * 50 * 6

# ---- 3. the other MPI's library: one error line, the program runs unmonitored
for prog_mpi in ("mpich", "openmpi"):
    lib_mpi = OTHER[prog_mpi]
    lib = os.path.basename(LIB[lib_mpi])
    for what, prog in (("metbench", [MB[prog_mpi], "--loads", "20,80", "-n", "3",
                                     "--calibrate-ms", "0"]),
                       ("tiny_mpi", [TINY[prog_mpi], "3", "50"])):
        sock = os.path.join(tmp, f"mm-{prog_mpi}.sock")
        rep = os.path.join(tmp, f"mm-{prog_mpi}-{what}.json")
        env = {"HPCD_SOCKET": sock, "HPCMON_REPORT": rep}
        rx = Receiver(sock)
        rc, out, err = run(mpirun(3, *prog, env=env, preload=LIB[lib_mpi], mpi=prog_mpi),
                           env=env)
        rx.close()
        errs = [l for l in err.splitlines() if l.startswith("hpcmon: error:")]
        ok_out = ("Exec. time" in out) if what == "metbench" else (f"sum {SUM3}" in out)
        tag = f"{lib} preloaded into {what} ({NAME[prog_mpi]})"
        check(rc == 0 and ok_out, f"{tag}: the program runs to completion, output unchanged",
              f"rc={rc}\n{out}\n{err}")
        check(len(errs) == 1 and f"built for {NAME[lib_mpi]}" in errs[0]
              and f"uses {NAME[prog_mpi]}" in errs[0] and "monitor off" in errs[0],
              f"{tag}: one error line naming both MPIs", err)
        check(not os.path.exists(rep) and not rx.recs and "hpcmon: LIP" not in err,
              f"{tag}: inert (no report, nothing sent)",
              f"{len(rx.recs)} records\n{err}")

# ---- 4. if the library cannot take itself out of the program (not in
# LD_PRELOAD, or already tried): Open MPI's handles pass through MPICH's
# library unharmed; the reverse would truncate them, so it exits cleanly.
rep = os.path.join(tmp, "kept.json")
env = {"HPCMON_REEXEC": "1", "HPCD_SOCKET": "", "HPCMON_REPORT": rep}
rc, out, err = run(mpirun(3, TINY["mpich"], "3", "50", env=env, preload=LIB["openmpi"],
                          mpi="mpich"), env=env)
check(rc == 0 and f"sum {SUM3}" in out and "monitor off" in err and not os.path.exists(rep)
      and "hpcmon: LIP" not in err,
      "libhpcmon.so kept in an MPICH program: passes every call through, no report",
      f"rc={rc}\n{out}\n{err}")
rc, out, err = run(mpirun(3, TINY["openmpi"], "3", "50", env=env, preload=LIB["mpich"],
                          mpi="openmpi"), env=env)
check(rc == 127 and f"sum {SUM3}" not in out and "cannot run this program without" in err
      and "Segmentation" not in err and "signal" not in err,
      "libhpcmon-mpich.so kept in an Open MPI program: clear error, exit 127, no crash",
      f"rc={rc}\n{out}\n{err}")

# ---- 5. hpcmon-lib: the library for a program, from the MPI it loads
PICK = os.path.join(here, "..", "hpcmon-lib")
for mpi in ("openmpi", "mpich"):
    for what, prog in (("metbench", MB[mpi]), ("tiny_mpi", TINY[mpi])):
        rc, out, err = run([PICK, "--build", build, prog])
        check(rc == 0 and out.strip() == LIB[mpi],
              f"hpcmon-lib: {what} ({NAME[mpi]}) -> {os.path.basename(LIB[mpi])}",
              f"rc={rc}\n{out}\n{err}")
static = os.path.join(build, "bench", "metbench", "metbench-shm-static")
for args, want_rc, msg in (
        (["/usr/bin/true"], 2, "uses neither Open MPI"),
        ([static], 2, "not a dynamically linked program"),
        ([os.path.join(tmp, "missing")], 2, "no such readable file"),
        (["--build", os.path.join(tmp, "nobuild"), MB["mpich"]], 1, "is not built"),
        ([], 2, "usage:")):
    rc, out, err = run([PICK, *args])
    check(rc == want_rc and msg in err and not out,
          f"hpcmon-lib {' '.join(os.path.basename(a) for a in args) or '(no argument)'}: "
          f"status {want_rc}, "
          f"'{msg}'", f"rc={rc}\n{out}\n{err}")

# ---- 6. the CMake choice of MPI: explicit, whatever mpicc is first in PATH
MODULE = os.path.normpath(os.path.join(here, "..", "..", "..", "bench", "metbench", "cmake",
                                       "HpcschedMPI.cmake"))
proj = os.path.join(tmp, "cmake-mpi")
os.makedirs(proj)
with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.25)\nproject(t C)\n"
            f"include({MODULE})\n"
            'file(WRITE ${CMAKE_BINARY_DIR}/mpi.txt "${MPI_C_COMPILER}|${MPI_C_INCLUDE_DIRS}")\n')
# As if Debian's alternatives pointed at MPICH: mpicc/mpicxx first in PATH are MPICH's.
fake = os.path.join(tmp, "fake-bin")
os.makedirs(fake)
for w in ("mpicc", "mpicxx"):
    os.symlink(f"/usr/bin/{w}.mpich", os.path.join(fake, w))
penv = {"PATH": fake + os.pathsep + os.environ.get("PATH", "")}


def configure(tag, *defs):
    b = os.path.join(tmp, f"cmake-{tag}")
    rc, out, err = run(["cmake", "-S", proj, "-B", b, *defs], env=penv)
    try:
        with open(os.path.join(b, "mpi.txt")) as f:
            comp, inc = f.read().split("|", 1)
    except OSError:
        comp = inc = ""
    return rc, out + err, comp, inc


rc, log, comp, inc = configure("default")
check(rc == 0 and comp == "/usr/bin/mpicc.openmpi" and "openmpi" in inc and "mpich" not in inc,
      "cmake, mpicc in PATH is MPICH's: the default build still uses mpicc.openmpi",
      f"rc={rc} compiler={comp} include={inc}\n{log}")
rc, log, comp, inc = configure("mpich", "-DHPCSCHED_MPI=mpich")
check(rc == 0 and comp == "/usr/bin/mpicc.mpich" and "mpich" in inc,
      "cmake -DHPCSCHED_MPI=mpich: mpicc.mpich, MPICH's mpi.h",
      f"rc={rc} compiler={comp} include={inc}\n{log}")
rc, log, comp, inc = configure("bad", "-DHPCSCHED_MPI=lam")
check(rc != 0 and "HPCSCHED_MPI='lam': must be openmpi or mpich" in log,
      "cmake -DHPCSCHED_MPI=lam: refused, names the choices", log)
rc, log, comp, inc = configure("mixed", "-DMPI_C_COMPILER=/usr/bin/mpicc.mpich")
check(rc != 0 and "is another MPI" in log,
      "cmake: HPCSCHED_MPI=openmpi with mpicc.mpich is refused", log)

# ---- 7. hpcd manages MetBench under MPICH (libhpcmon-mpich.so's records)
HPCD = os.path.join(build, "tools", "hpcd", "hpcd")
HPCCTL = os.path.join(build, "tools", "hpcd", "hpcctl")


def hpcd_metbench():
    """hpcd adopting MetBench's workers (MPICH) from the monitor's hello records."""
    if os.geteuid() != 0 or not os.access(HPCD, os.X_OK):
        return False, "", "", f"needs root and {HPCD} built (hpcd creates cgroups)"
    env = dict(os.environ, HPCD_CONTROL=os.path.join(tmp, "ctl"),
               HPCD_SOCKET=os.path.join(tmp, "hpcd-mon"), HPCMON_QUIET="1",
               HPCMON_BLOCKING_WAIT="1")
    log = open(os.path.join(tmp, "hpcd.log"), "w+")
    d = subprocess.Popen([HPCD, "--set", "ignore_ranks=0", "--exit-when-idle", "--heuristic",
                          "adaptive", "-v"], stderr=log, env=env)
    for _ in range(200):  # until hpcd answers on its control socket (not a timed check)
        if run([HPCCTL, "--backend", "hpcd", "status"], env=env)[0] == 0 or d.poll() is not None:
            break
        time.sleep(0.05)
    rc, out, err = run(mpirun(5, MB["mpich"], "--loads", "250,1000,250,1000", "-n", "10",
                              "--calibrate-ms", "20", "--json", preload=LIB["mpich"],
                              mpi="mpich"), env=env)
    try:
        drc = d.wait(timeout=60)
    except subprocess.TimeoutExpired:
        d.kill()
        drc = "still running 60 s after the job"
    log.seek(0)
    return rc == 0 and drc == 0, out, log.read(), f"metbench rc={rc} hpcd rc={drc}\n{err}"


ok, out, log, why = hpcd_metbench()
check(ok, "hpcd + MPICH MetBench: both end cleanly, hpcd on its own after the last rank",
      f"{why}\n{log}")
managed = re.findall(r"managing \d+ \(metbench\) job (\S+) rank (\d+)", log)
check(sorted(int(r) for _, r in managed) == [1, 2, 3, 4] and len({j for j, _ in managed}) == 1
      and "rank 0 (pid" in log and "not adopted" in log,
      "hpcd + MPICH MetBench: workers 1-4 adopted as one job, the master (rank 0) not", log)
iters = {int(r) for r in re.findall(r"rank (\d+) iteration \d+ ", log)}
check(iters == {1, 2, 3, 4}, "hpcd + MPICH MetBench: iterations of every worker reach hpcd",
      sorted(iters))
check(log.count("the monitor said bye") + log.count(": exited") >= 4,
      "hpcd + MPICH MetBench: every worker released (bye or exit)", log)
try:
    res = json.loads(out)
except ValueError:
    res = {}
check([r.get("load_units") for r in res.get("ranks", [])] == [0, 2500, 10000, 2500, 10000],
      "hpcd + MPICH MetBench: MetBench's JSON, load units as asked", out)

done()
