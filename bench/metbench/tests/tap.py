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


def mpirun(np, *args):
    """The mpirun prefix that works here (root, 2 CPUs, container)."""
    cmd = ["mpirun", "-np", str(np), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + list(args)


def read_trace(path):
    """CSV trace -> list of dicts with int fields."""
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        for line in f:
            vals = line.strip().split(",")
            rows.append({k: (v if k == "proc" else int(v)) for k, v in zip(header, vals)})
    return header, rows
