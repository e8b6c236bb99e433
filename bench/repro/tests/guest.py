#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The guest backends of make reproduce, from recorded guest output: no QEMU, no time.

data/guest-repro-kernel.log and data/guest-repro-scx.log are console logs of
real boots (bench/repro/guest: SCHED_HPC kernel, scx_hpc), small sizes.
report.py --guest-extract turns them into the hpcd backend's files and the
report puts their rows into Tables III/IV; a failed way, a garbage result,
a truncated log are reported as failed, never as a number; reproduce.sh
--backends says why a backend is skipped.
usage: guest.py BUILD_DIR
"""
import atexit
import json
import os
import re
import shutil
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(top, "bench", "metbench", "tests"))
from tap import check, done, run  # noqa: E402

build = sys.argv[1]
REPORT = os.path.join(top, "bench", "repro", "report.py")
REPRO = os.path.join(top, "bench", "repro", "reproduce.sh")
TABLES = os.path.join(top, "..", "shared", "reference", "paper-tables.json")
DATA = os.path.join(here, "data")
LOGS = {"kernel": os.path.join(DATA, "guest-repro-kernel.log"),
        "scx": os.path.join(DATA, "guest-repro-scx.log")}
PY = "/usr/bin/python3"
tmp = tempfile.mkdtemp(prefix="repro-guest-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)


def extract(backend, log, out):
    return run([PY, REPORT, "--guest-extract", backend, log, out])


def json_lines(log, case):
    """{(prog, way): metbench result} as the recorded log has them."""
    res = {}
    pat = re.compile(r"^# %s: REPRO (\S+) (\S+) json (.*)$" % re.escape(case))
    with open(log) as f:
        for line in f:
            m = pat.match(line.rstrip("\n"))
            if m:
                res[(m.group(1), m.group(2))] = json.loads(m.group(3))
    return res


def gain(a, b):
    return "%.1f %%" % (100.0 * (1.0 - a / b))


# ---- the recorded logs extract into the hpcd backend's shape
out = os.path.join(tmp, "ok")
os.makedirs(out)
rec = {}
for b, case in (("kernel", "70-repro-kernel.sh"), ("scx", "71-repro-scx.sh")):
    rec[b] = json_lines(LOGS[b], case)
    rc, so, se = extract(b, LOGS[b], out)
    d = os.path.join(out, "guest-" + b)
    want = ["%s %s %s: ok" % (b, p, w) for p in ("metbench", "metbenchvar")
            for w in ("baseline", "equal", "uniform", "adaptive")]
    check(rc == 0 and all(w in so for w in want) and so.count(": na: ") == 2,
          "%s: --guest-extract: every way of both programs ok, static n/a" % b, so + se)
    ok = True
    for p in ("metbench", "metbenchvar"):
        for w in ("baseline", "equal", "uniform", "adaptive"):
            try:
                with open(os.path.join(d, p, w + ".json")) as f:
                    ok = ok and json.load(f) == rec[b][(p, w)]
                with open(os.path.join(d, p, w + ".csv")) as f:
                    rows = f.read().splitlines()
                ok = ok and rows[0].startswith("rank,proc,iteration") and len(rows) > 5
            except (OSError, ValueError):
                ok = False
    check(ok, "%s: W.json is the guest's metbench --json, W.csv its trace" % b)
    prio = os.path.join(d, "metbench", "uniform.prio")
    lines = open(prio).read().split("\n") if os.path.exists(prio) else []
    check(len([x for x in lines if re.fullmatch(r"P[1-4] [1-6]", x)]) == 4,
          "%s: MetBench Uniform: a sampled priority per worker (W.prio)" % b, "\n".join(lines))
    na = os.path.join(d, "metbench", "static.na")
    check(os.path.exists(na) and "no per-task priority" in open(na).read()
          and not os.path.exists(os.path.join(d, "metbench", "static.json")),
          "%s: static: n/a with the reason, no result" % b)

# the other backend's case in the same log is not taken
both = os.path.join(tmp, "both.log")
with open(both, "w") as f:
    f.write(open(LOGS["kernel"]).read() + open(LOGS["scx"]).read())
o2 = os.path.join(tmp, "both")
rc, so, se = extract("kernel", both, o2)
j = os.path.join(o2, "guest-kernel", "metbench", "adaptive.json")
check(rc == 0 and json.load(open(j)) == rec["kernel"][("metbench", "adaptive")]
      and not os.path.exists(os.path.join(o2, "guest-scx")),
      "--guest-extract kernel on a log with both cases: the kernel case's rows only", so + se)

# ---- the report: guest rows beside hpcd's and the paper's
rc, so, se = run([PY, REPORT, out, "--tables", TABLES])
md = open(os.path.join(out, "report.md")).read() if rc == 0 else ""
check(rc == 0 and "On the SCHED_HPC kernel (QEMU, 4 vCPUs)" in md and "On the scx_hpc (QEMU, 4 vCPUs)" in md
      and "Table III" in md and "Table IV" in md, "report.py: kernel and scx sections in Tables III and IV",
      so + se + md[:800])
for b, label in (("kernel", "SCHED_HPC kernel"), ("scx", "scx_hpc")):
    for p, title in (("metbench", "MetBench"), ("metbenchvar", "MetBenchVar (k = 15)")):
        r = rec[b]
        base, eq, uni = (r[(p, w)]["total_time_s"] for w in ("baseline", "equal", "uniform"))
        want = "| Uniform | P1 | %.2f | " % [x for x in r[(p, "uniform")]["ranks"] if x["proc"] == "P1"][0]["compute_pct"]
        row = "%.2f s | %s | %s |" % (uni, gain(uni, base), gain(uni, eq))
        sect = md.split("On the " + label)[1 if p == "metbench" else 2] if md.count("On the " + label) == 2 else ""
        check(want in sect and row in sect,
              "%s %s: Uniform's row: guest %% compute, time, gain vs that boot's baseline and vs all at 4"
              % (b, p), want + " ... " + row + "\n" + sect[:1500])
    check(os.path.getsize(os.path.join(out, "metbench-%s-timeline.png" % b)) > 0
          and "(metbench-%s-timeline.png)" % b in md, "%s: MetBench timeline drawn from the guest's trace" % b)
    check(re.search(r"\*\*MetBench on the %s[^*]*\*\*[^\n]*Uniform -?[0-9.]+ %%" % re.escape(label.split()[0]), md)
          is not None, "%s: the analysis lists the guest gains" % b)
check("| Static | | | | n/a on this backend: the SCHED_HPC class has no per-task priority" in md,
      "report: the kernel's static row says n/a and why")

# ---- failures and garbage are failed ways, never numbers
src = open(LOGS["kernel"]).read()
CASE = "# 70-repro-kernel.sh: REPRO "


def mutate(name, fn):
    log = os.path.join(tmp, name + ".log")
    with open(log, "w") as f:
        f.write(fn(src))
    o = os.path.join(tmp, name)
    os.makedirs(o)
    rc, so, se = extract("kernel", log, o)
    return rc, so + se, o


def sub_line(text, prefix, new):
    lines = text.split("\n")
    i = next(k for k, line in enumerate(lines) if line.startswith(prefix))
    if new is None:
        del lines[i]
    else:
        lines[i] = new
    return "\n".join(lines)


cases = [
    ("garbage-json", lambda t: sub_line(t, CASE + "metbench adaptive json ", CASE + "metbench adaptive json {\"total_ti"),
     "does not parse"),
    ("exit-status", lambda t: sub_line(t, CASE + "metbench adaptive end ok", CASE + "metbench adaptive end failed exit status 1"),
     "exit status 1"),
    ("truncated", lambda t: t[:t.index(CASE + "metbench adaptive end ok")], "no end of run"),
    ("bad-percent", lambda t: sub_line(t, CASE + "metbench adaptive json ", CASE + "metbench adaptive json " + json.dumps(
        dict(rec["kernel"][("metbench", "adaptive")],
             ranks=[dict(x, compute_pct=250.0) if x["proc"] == "P2" else x
                    for x in rec["kernel"][("metbench", "adaptive")]["ranks"]]))), "not a percentage"),
    ("three-workers", lambda t: sub_line(t, CASE + "metbench adaptive json ", CASE + "metbench adaptive json " + json.dumps(
        dict(rec["kernel"][("metbench", "adaptive")], ranks=rec["kernel"][("metbench", "adaptive")]["ranks"][:4]))),
     "3 workers"),
    ("bad-prio", lambda t: sub_line(t, CASE + "metbench adaptive end ok",
                                    CASE + "metbench adaptive prio P1 high\n" + CASE + "metbench adaptive end ok"),
     "priority line"),
]
for name, fn, why in cases:
    rc, msg, o = mutate(name, fn)
    d = os.path.join(o, "guest-kernel", "metbench")
    failed = os.path.join(d, "adaptive.failed")
    check(rc == 1 and "kernel metbench adaptive: failed: " in msg and why in msg
          and os.path.exists(failed) and not os.path.exists(os.path.join(d, "adaptive.json"))
          and os.path.exists(os.path.join(d, "uniform.json")),
          "a guest run with %s: adaptive failed ('%s'), the other ways kept" % (name, why), msg)
    if name == "garbage-json":
        rc2, so2, se2 = run([PY, REPORT, o, "--tables", TABLES])
        md2 = open(os.path.join(o, "report.md")).read() if rc2 == 0 else ""
        sect = md2.split("On the SCHED_HPC kernel")[1] if "On the SCHED_HPC kernel" in md2 else ""
        sect = sect.split("\n\n")[1] if "\n\n" in sect else ""
        check(rc2 == 0 and re.search(r"^\| Adaptive \| \| \| \| failed: its JSON result does not parse \| \| \|$",
                                     sect, re.M) and not re.search(r"^\| Adaptive \| P1", sect, re.M)
              and "Adaptive failed" in md2,
              "report.py: the failed way is a 'failed: why' row, no numbers, and the analysis says failed",
              so2 + se2 + sect[:1200])

rc, msg, o = mutate("nothing", lambda t: "\n".join(l for l in t.split("\n") if "REPRO" not in l))
check(rc == 1 and "no REPRO lines" in msg and not os.listdir(o), "a console log without guest results: an error", msg)
rc, so, se = extract("qemu", LOGS["kernel"], os.path.join(tmp, "x"))
check(rc == 2 and "kernel or scx" in se and not os.path.exists(os.path.join(tmp, "x")),
      "--guest-extract with an unknown backend: status 2, nothing written", se)
rc, so, se = extract("kernel", os.path.join(tmp, "missing.log"), os.path.join(tmp, "y"))
check(rc == 1 and "no console log" in se and not os.path.exists(os.path.join(tmp, "y")),
      "--guest-extract without the log: an error, nothing written", se)

# ---- reproduce.sh says why a guest backend is skipped
rc, so, se = run(["bash", REPRO, "--backends", build], env={"GUEST_KERNEL": os.path.join(tmp, "no-bzImage")})
check(rc == 0 and re.search(r"^kernel: not run: no patched kernel at .*no-bzImage \(make kernel", so, re.M)
      and re.search(r"^scx_hpc: not run: .*same guest kernel", so, re.M),
      "reproduce.sh, kernel absent: kernel and scx_hpc skipped, saying why", so + se)
check(re.search(r"^btmz: hpcd only: an MPI program, and the QEMU guest has no MPI$", so, re.M)
      and re.search(r"^siesta: hpcd only: an MPI program", so, re.M),
      "reproduce.sh: BT-MZ and SIESTA are hpcd only, with the reason", so)
rc, so, se = run(["bash", REPRO, "--backends", build], env={"REPRO_GUEST": "no"})
check(rc == 0 and so.count("not run: REPRO_GUEST=no") == 2, "reproduce.sh REPRO_GUEST=no: both skipped, saying so", so + se)
rc, so, se = run(["bash", REPRO, "--backends", build], env={"GUEST_KERNEL": LOGS["kernel"],
                                                          "REPRO_PROGRAMS": "btmz siesta"})
check(rc == 0 and "REPRO_PROGRAMS has neither" in so, "reproduce.sh without MetBench: no guest backend, saying why", so)
for env, msg in (({"REPRO_GUEST": "maybe"}, "REPRO_GUEST must be"), ({"GUEST_LOADS": "1,2"}, "GUEST_LOADS must be"),
                 ({"GUEST_K": "0"}, "positive integers")):
    rc, so, se = run(["bash", REPRO, "--backends", build], env=env)
    check(rc == 2 and msg in se, "reproduce.sh %s: status 2, '%s'" % (" ".join("%s=%s" % kv for kv in env.items()), msg), so + se)
done()
