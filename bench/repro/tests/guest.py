#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The guest backends of make reproduce, from recorded guest output: no QEMU, no time.

data/guest-repro-kernel.log and data/guest-repro-scx.log are console logs of
real boots (bench/repro/guest: SCHED_HPC kernel, scx_hpc), small sizes, two
rounds (hpc.repro_repeat=2), the static way with the paper's priorities.
report.py --guest-extract turns them into the hpcd backend's files and the
report puts their rows into Tables III/IV, with the medians and spread of
the rounds; a failed way, a garbage result, a truncated log are reported as
failed, never as a number; reproduce.sh --backends says why a backend is
skipped.
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
TABLES = os.path.join(top, "Documentation", "data", "paper-tables.json")
DATA = os.path.join(here, "data")
LOGS = {"kernel": os.path.join(DATA, "guest-repro-kernel.log"),
        "scx": os.path.join(DATA, "guest-repro-scx.log")}
PY = "/usr/bin/python3"
tmp = tempfile.mkdtemp(prefix="repro-guest-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)


def extract(backend, log, out):
    return run([PY, REPORT, "--guest-extract", backend, log, out])


WAYS = ("baseline", "static", "equal", "uniform", "adaptive", "phase")
LABEL = {"baseline": "Baseline", "static": "Static", "equal": "All at 4", "uniform": "Uniform",
         "adaptive": "Adaptive", "phase": "Phase"}
ROUNDS = ("", "@2")  # the recorded boots' two rounds: WAY, WAY@2


def json_lines(log, case):
    """{(prog, way[@R]): metbench result} as the recorded log has them."""
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


def pct(a, b):
    return 100.0 * (1.0 - a / b)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def wdir(d, prog, r):
    return os.path.join(d, prog) if not r else os.path.join(d, prog, "round-" + r[1:])


# ---- the recorded logs extract into the hpcd backend's shape
out = os.path.join(tmp, "ok")
os.makedirs(out)
rec = {}
for b, case in (("kernel", "70-repro-kernel.sh"), ("scx", "71-repro-scx.sh")):
    rec[b] = json_lines(LOGS[b], case)
    rc, so, se = extract(b, LOGS[b], out)
    d = os.path.join(out, "guest-" + b)
    want = ["%s %s %s%s: ok" % (b, p, w, r) for p in ("metbench", "metbenchvar")
            for w in WAYS for r in ROUNDS]
    check(rc == 0 and all(w in so for w in want) and ": na: " not in so and ": failed" not in so,
          "%s: --guest-extract: every way of both programs ok in both rounds, static included" % b, so + se)
    ok = True
    for p in ("metbench", "metbenchvar"):
        for w in WAYS:
            for r in ROUNDS:
                try:
                    with open(os.path.join(wdir(d, p, r), w + ".json")) as f:
                        ok = ok and json.load(f) == rec[b][(p, w + r)]
                    with open(os.path.join(wdir(d, p, r), w + ".csv")) as f:
                        rows = f.read().splitlines()
                    ok = ok and rows[0].startswith("rank,proc,iteration") and len(rows) > 5
                except (OSError, ValueError, KeyError):
                    ok = False
    check(ok, "%s: W.json is the guest's metbench --json, W.csv its trace; round 2 in round-2/" % b)
    prio = os.path.join(d, "metbench", "uniform.prio")
    lines = open(prio).read().split("\n") if os.path.exists(prio) else []
    check(len([x for x in lines if re.fullmatch(r"P[1-4] [1-6]", x)]) == 4,
          "%s: MetBench Uniform: a sampled priority per worker (W.prio)" % b, "\n".join(lines))
    sp = ""
    for p in ("metbench", "metbenchvar"):
        for r in ROUNDS:
            q = os.path.join(wdir(d, p, r), "static.prio")
            sp += open(q).read() if os.path.exists(q) else "(none)\n"
    check(sp == "P1 4\nP2 6\nP3 4\nP4 6\n" * 4,
          "%s: static, both programs, both rounds: the workers ran at the paper's 4,6,4,6" % b, sp)
    check(not any(f.endswith(".na") for _, _, fs in os.walk(d) for f in fs), "%s: no way n/a" % b)

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

# a kernel boot whose class applied no priorities (backend none: x86's
# default) ran no emulated machine: every way but the baseline is failed,
# saying why, never a number
none_log = os.path.join(tmp, "none.log")
text = open(LOGS["kernel"]).read()
with open(none_log, "w") as f:
    f.write(text.replace("# sched_hpc: backend x86-smt-emul,", "# sched_hpc: backend none,"))
o3 = os.path.join(tmp, "none")
rc, so, se = extract("kernel", none_log, o3)
lines = [x for x in so.splitlines() if x.startswith("kernel ")]
why = "the kernel applied no priorities (sched_hpc backend none)"
check("# sched_hpc: backend x86-smt-emul," in text and rc == 1 and len(lines) == 24
      and all((": ok" in x) == (" baseline" in x) for x in lines)
      and all(why in x for x in lines if " baseline" not in x)
      and not os.path.exists(os.path.join(o3, "guest-kernel", "metbench", "static.json"))
      and os.path.exists(os.path.join(o3, "guest-kernel", "metbench", "static.failed")),
      "--guest-extract kernel, backend none: every way but the baseline failed, saying why", so + se)

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
for b, label in (("kernel", "SCHED_HPC kernel"), ("scx", "scx_hpc")):
    r = rec[b]
    base, eq, st = (r[("metbench", w)]["total_time_s"] for w in ("baseline", "equal", "static"))
    sect = md.split("On the " + label)[1] if "On the " + label in md else ""
    row = "| Static | P1 | %.2f | 4 | %.2f s | %s | %s |" % (
        [x for x in r[("metbench", "static")]["ranks"] if x["proc"] == "P1"][0]["compute_pct"],
        st, gain(st, base), gain(st, eq))
    check(row in sect and "| P2 | %.2f | 6 |" % [x for x in r[("metbench", "static")]["ranks"]
                                                 if x["proc"] == "P2"][0]["compute_pct"] in sect,
          "%s: MetBench's static row: priorities 4/6, time, gains vs baseline and all at 4" % b,
          row + "\n" + sect[:1500])
    # the repeat table: medians, min - max, spread, median gains, from the log's own numbers
    rows = {}
    for w in WAYS:
        ts = [r[("metbench", w + x)]["total_time_s"] for x in ROUNDS]
        cells = []
        for i, bw in enumerate(("baseline", "equal")):
            gs = [pct(r[("metbench", w + x)]["total_time_s"], r[("metbench", bw + x)]["total_time_s"])
                  for x in ROUNDS] if w not in ("baseline", "equal")[:i + 1] else []
            cells.append("%.1f %% (%.1f %% - %.1f %%)" % (median(gs), min(gs), max(gs)) if gs else "")
        rows[w] = "| %s | 2 | %.2f s | %.2f - %.2f s | %.0f %% | %s |" % (
            LABEL[w], median(ts), min(ts), max(ts),
            100.0 * (max(ts) - min(ts)) / median(ts), " | ".join(cells))
    rep_sect = sect.split("Repeated: 2 rounds")[1].split("\n\n")[1] if "Repeated: 2 rounds" in sect else ""
    check(all(rows[w] in rep_sect for w in WAYS),
          "%s: MetBench's repeat table: per way 2 rounds, median time, min - max, spread, median gains"
          % b, "\n".join(rows.values()) + "\n---\n" + rep_sect)
    med_u = median([pct(r[("metbench", "uniform" + x)]["total_time_s"],
                        r[("metbench", "baseline" + x)]["total_time_s"]) for x in ROUNDS])
    check(re.search(r"\*\*MetBench on the %s[^\n]*Uniform %s" % (re.escape(label.split()[0]),
                                                              re.escape("%.1f %%" % med_u)), md)
          is not None, "%s: the analysis quotes the median of the rounds' gains" % b)

# ---- hpcd-shaped rounds (OUT/PROG/W.json, OUT/PROG/round-2/W.json) from the
# recorded results: the hpcd sections get the same repeat table
hp = os.path.join(tmp, "hpcd")
HPCD_WAYS = ("baseline", "static", "uniform", "adaptive", "phase")
for p in ("metbench", "metbenchvar"):
    for r, src in (("", "kernel"), ("@2", "scx")):
        d = wdir(hp, p, r)
        os.makedirs(d, exist_ok=True)
        for w in HPCD_WAYS:
            with open(os.path.join(d, w + ".json"), "w") as f:
                json.dump(rec[src][(p, w)], f)
os.makedirs(os.path.join(hp, "sim"))
rc, so, se = run([os.path.join(build, "tools", "sim", "hpcsim"), "table", "--workload", "metbench", "--json"])
with open(os.path.join(hp, "sim", "metbench.json"), "w") as f:
    f.write(so)
sim = json.loads(so) if rc == 0 else {}
rc, so, se = run([PY, REPORT, hp, "--tables", TABLES])
md = open(os.path.join(hp, "report.md")).read() if rc == 0 else ""
sect = md.split("## MetBench — the paper's Table III")[1].split("## ")[0] if "Table III" in md else ""
times = {w: [rec["kernel"][("metbench", w)]["total_time_s"], rec["scx"][("metbench", w)]["total_time_s"]]
         for w in ("baseline", "static", "uniform", "adaptive")}
gs = [pct(times["static"][i], times["baseline"][i]) for i in (0, 1)]
row = "| Static | 2 | %.2f s | %.2f - %.2f s | %.0f %% | %.1f %% (%.1f %% - %.1f %%) |" % (
    median(times["static"]), min(times["static"]), max(times["static"]),
    100.0 * (max(times["static"]) - min(times["static"])) / median(times["static"]), median(gs), min(gs), max(gs))
check(rc == 0 and "Repeated: 2 rounds" in sect and row in sect,
      "hpcd sections: round-2/ gives the repeat table (static: median, min - max, spread, median gain)",
      so + se + row + "\n---\n" + sect[:2500])
check(re.search(r"\*\*MetBench\*\*:[^\n]*Static %s here" % re.escape("%.1f %%" % median(gs)), md) is not None,
      "hpcd analysis: the static gain quoted is the median of the rounds")
# Phase, the third heuristic: its row beside the others, no paper numbers
# (the paper has no Phase), and the simulator's Phase beside ours
ph = rec["kernel"][("metbench", "phase")]
row = "| Phase | P1 | %.2f | " % [x for x in ph["ranks"] if x["proc"] == "P1"][0]["compute_pct"]
prow = [line for line in sect.split("\n") if line.startswith(row)]
sgain = pct(sim["phase"]["time_s"], sim["baseline"]["time_s"]) if sim else 0
check(len(prow) == 1 and prow[0].endswith("| %s |  |  |  |  |" % gain(ph["total_time_s"],
                                                                     rec["kernel"][("metbench", "baseline")]["total_time_s"]))
      and re.search(r"^\| Phase \| [0-9. /]+ \| [4-6],[4-6],[4-6],[4-6] \| [0-9.]+ s \| %s \|$" %
                    re.escape("%.1f %%" % sgain), sect, re.M),
      "hpcd sections: Phase's row with its gain and no paper numbers; the simulator's Phase row",
      "\n".join(prow) + "\n---\n" + sect[:3000])
check(re.search(r"\*\*MetBench\*\*:[^\n]*Phase -?[0-9.]+ %% here, %s in the simulator" %
                re.escape("%.1f %%" % sgain), md) is not None,
      "hpcd analysis: Phase's gain beside the simulator's, no paper's", md[-4000:])
one = os.path.join(tmp, "hpcd-one")
shutil.copytree(hp, one)
for p in ("metbench", "metbenchvar"):
    shutil.rmtree(os.path.join(one, p, "round-2"))
rc, so, se = run([PY, REPORT, one, "--tables", TABLES])
check(rc == 0 and "Repeated:" not in open(os.path.join(one, "report.md")).read(),
      "one round: no repeat table", so + se)

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
    ("static-left", lambda t: sub_line(t, CASE + "metbench adaptive end ok",
                                       CASE + "metbench adaptive end failed a fixed worker ran at another priority: P2:5"),
     "a fixed worker ran at another priority"),
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

rc, msg, o = mutate("round-2", lambda t: sub_line(t, CASE + "metbench adaptive@2 end ok",
                                                 CASE + "metbench adaptive@2 end failed exit status 3"))
d = os.path.join(o, "guest-kernel", "metbench")
check(rc == 1 and "kernel metbench adaptive@2: failed: exit status 3" in msg
      and os.path.exists(os.path.join(d, "round-2", "adaptive.failed"))
      and not os.path.exists(os.path.join(d, "round-2", "adaptive.json"))
      and os.path.exists(os.path.join(d, "adaptive.json")) and "kernel metbench adaptive: ok" in msg,
      "a failed way in round 2: round-2/adaptive.failed, round 1's kept", msg)
rc2, so2, se2 = run([PY, REPORT, o, "--tables", TABLES])
md2 = open(os.path.join(o, "report.md")).read() if rc2 == 0 else ""
check(rc2 == 0 and re.search(r"^\| Adaptive \| 1 \| ", md2, re.M) and re.search(r"^\| Uniform \| 2 \| ", md2, re.M),
      "report.py: the repeat table counts the rounds that gave a result (Adaptive 1, Uniform 2)", so2 + se2)
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
                 ({"GUEST_K": "0"}, "positive integers"), ({"REPRO_REPEAT": "0"}, "REPRO_REPEAT must be"),
                 ({"REPRO_REPEAT": "two"}, "REPRO_REPEAT must be")):
    rc, so, se = run(["bash", REPRO, "--backends", build], env=env)
    check(rc == 2 and msg in se, "reproduce.sh %s: status 2, '%s'" % (" ".join("%s=%s" % kv for kv in env.items()), msg), so + se)
done()
