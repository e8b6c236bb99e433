# SPDX-License-Identifier: GPL-2.0
"""Minimal TAP output and helpers shared by the MetBench and hpcmon end-to-end tests."""
import os
import subprocess
import sys

_n = 0
_failed = 0


def check(cond, name, diag=""):
    """Report one test; @diag is printed (as TAP comments) when it fails."""
    global _n, _failed
    _n += 1
    if cond:
        print(f"ok {_n} - {name}", flush=True)
    else:
        _failed += 1
        print(f"not ok {_n} - {name}", flush=True)
        for line in str(diag).splitlines():
            print(f"#   {line}", flush=True)
    return bool(cond)


def done():
    print(f"1..{_n}", flush=True)
    sys.exit(1 if _failed else 0)


def run(cmd, env=None, timeout=300):
    """Run @cmd; returns (rc, stdout, stderr). The timeout only guards against hangs."""
    e = dict(os.environ)
    if env:
        e.update(env)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as ex:
        return -1, ex.stdout or "", f"timeout after {timeout}s: {' '.join(cmd)}"


# The MPI the programs under test are built for: HPCSCHED_MPI=openmpi (default)
# or mpich. Each is started by its own launcher, never through Debian's
# mpirun/mpiexec alternative, so the suites do not depend on which MPI that
# alternative points to.
MPI = os.environ.get("HPCSCHED_MPI", "openmpi")
if MPI not in ("openmpi", "mpich"):
    sys.exit(f"tap.py: HPCSCHED_MPI={MPI!r}: must be openmpi or mpich")


def mpirun(np, *args, env=(), preload=None, mpi=None):
    """The launcher command for @np ranks of @args (root, 2 CPUs, container).

    @env: names of variables the ranks take from the launcher's environment,
    @preload: LD_PRELOAD for the ranks only (not the launcher), @mpi: openmpi or
    mpich (default HPCSCHED_MPI)."""
    mpi = mpi or MPI
    if mpi == "mpich":
        # Hydra passes the whole environment to the ranks; one host: fork.
        cmd = ["mpiexec.mpich", "-launcher", "fork", "-n", str(np)]
        if preload:
            cmd += ["-genv", "LD_PRELOAD", preload]
        return cmd + list(args)
    cmd = ["mpirun.openmpi", "-np", str(np), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for k in env:
        cmd += ["-x", k]
    if preload:
        cmd += ["-x", "LD_PRELOAD=" + preload]
    return cmd + list(args)


def hpcmon_lib(build, mpi=None):
    """libhpcmon built for @mpi in @build (build/ for Open MPI, build/mpich for MPICH)."""
    mpi = mpi or MPI
    name = "libhpcmon.so" if mpi == "openmpi" else f"libhpcmon-{mpi}.so"
    return os.path.join(build, "tools", "hpcmon", name)


def read_trace(path):
    """CSV trace -> list of dicts with int fields."""
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        for line in f:
            vals = line.strip().split(",")
            rows.append({k: (v if k == "proc" else int(v)) for k, v in zip(header, vals)})
    return header, rows
