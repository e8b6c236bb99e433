#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How well hpcd finds the sleeps and wake-ups of the tasks it manages
(bench/hpcd-scale.sh): hpcd's iteration events against the tasks' own stamps.

  hpcd-boundaries.py now
      CLOCK_MONOTONIC, ns (the clock of both).
  hpcd-boundaries.py dump SOCKET OUT [--every S]
      Reads hpcd's iteration log from its control socket SOCKET
      ({"cmd":"iterations","since":N}: a ring of 16384 events, so
      incrementally, every S seconds, 1 by default) into OUT, one JSON object
      a line, until SIGTERM or SIGINT (then once more) or until hpcd goes.
      Events the ring no longer held when asked for (hpcd outran the reads)
      are written as {"event":"dropped","count":N,"mono_ns":T}.
  hpcd-boundaries.py match [--from NS] [--to NS] EVENTS PID=SPINLOG...
      Matches the boundaries in EVENTS (the dump) against the tasks' own,
      SPINLOG being what `hpcd-spin SECS RUN WAIT SPINLOG` wrote for the task
      PID: "sleep NS" just before each sleep, "due NS" when the sleep was to
      end, "wake NS" just after it did.

An iteration event closes a wait: hpcd saw a sleep start at at_ns - wait_ns
and the wake-up at at_ns. A true wait runs from the task's "sleep" stamp to
its wake-up: its "due" time, when its timer made it runnable again (its
"wake" stamp where it has no "due", or where a signal cut the sleep short).
Its "wake" stamp is later by the time it then waited for a CPU: the tasks'
wait for a CPU is reported beside, and the error of the detected wake-ups
against the "wake" stamps too. Over the window [--from, --to] (default: all):
  - error: each detected sleep and wake-up in the window against the nearest
    true boundary of the same kind and task, |detected - true|, median and
    99th percentile in µs (over sleeps and wake-ups together, then each);
  - waits seen: of the true waits in the window (sleep and wake-up in it),
    the fraction that one detected wait matches, its sleep and its wake-up
    each within half the true wait's length of the true ones (a detected
    wait matches one true wait at most).
The last line reads "fields: MEDIAN_US P99_US SEEN_PERCENT", "-" for what
there was nothing to measure.
"""
import argparse
import bisect
import json
import math
import signal
import socket
import statistics
import sys
import time

MAX_PER_REQUEST = 4096  # events per reply: about 1.3 MB, below hpcd's 8 MB limit per client


def cmd_now(_args):
    print(time.monotonic_ns())
    return 0


def cmd_dump(args):
    stop = [signal.SIGTERM, signal.SIGINT]
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(10)  # a daemon that does not answer in 10 s has stopped answering
        c.connect(args.socket)
    except OSError as e:
        print(f"hpcd-boundaries: cannot connect to {args.socket}: {e}", file=sys.stderr)
        return 1
    f = c.makefile("r")
    since, first, total = 1, True, 0
    with open(args.out, "w") as out:
        ending = False
        while True:
            try:
                c.sendall(json.dumps({"cmd": "iterations", "since": since,
                                      "max": MAX_PER_REQUEST}).encode() + b"\n")
                line = f.readline()
            except OSError as e:
                line = ""
                why = str(e)
            else:
                why = "it closed the connection"
            if not line:
                print(f"hpcd-boundaries: hpcd stopped answering ({why}); "
                      f"{total} event(s) in {args.out}", file=sys.stderr)
                return 1
            r = json.loads(line)
            if not r.get("ok"):
                print(f"hpcd-boundaries: hpcd said: {r.get('error', line.strip())}",
                      file=sys.stderr)
                return 1
            # The first reply's losses are from before the dump began.
            if r.get("dropped") and not first:
                out.write(json.dumps({"event": "dropped", "count": r["dropped"],
                                      "mono_ns": time.monotonic_ns()}) + "\n")
            first = False
            evs = r.get("events", [])
            for ev in evs:
                out.write(json.dumps(ev, separators=(",", ":")) + "\n")
            total += len(evs)
            since = max(since, r.get("next", since))
            if len(evs) >= MAX_PER_REQUEST:
                continue  # more waiting: ask again at once
            out.flush()
            if ending:
                return 0
            if signal.sigtimedwait(stop, args.every) is not None:
                ending = True  # read what came since, once more


def read_spin_log(path):
    """One task's log: (sleeps, wake-ups, waits, wake stamps, bad lines);
    sleeps and wake-ups sorted, the wake stamps in the wake-ups' order;
    waits (sleep, wake-up, how long the task then waited for a CPU or None)."""
    sleeps, wakes, waits, stamps, bad = [], [], [], [], 0
    cur = None  # the sleep under way: [sleep, due]
    with open(path) as f:
        for line in f:
            parts = line.split()
            if (len(parts) != 2 or parts[0] not in ("sleep", "due", "wake")
                    or not parts[1].isdigit()):
                bad += 1
                continue
            kind, t = parts[0], int(parts[1])
            if kind == "sleep":
                sleeps.append(t)
                cur = [t, None]
            elif kind == "due":
                if cur is not None:
                    cur[1] = t
            else:
                stamps.append(t)
                wake, cpu = t, None
                if cur is not None and cur[1] is not None:
                    wake, cpu = min(t, cur[1]), max(0, t - cur[1])
                wakes.append(wake)
                if cur is not None and wake >= cur[0]:
                    waits.append((cur[0], wake, cpu))
                cur = None
    sleeps.sort()
    pairs = sorted(zip(wakes, stamps))  # each wake-up with its own "wake" stamp
    return sleeps, [w for w, _ in pairs], waits, [s for _, s in pairs], bad


def read_events(path):
    """pid -> sorted detected waits (sleep, wake); the drop records; the
    iterations hpcd said it missed; lines that were not events."""
    det, drops, missed, bad = {}, [], {}, 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
                kind = ev.get("event")
                if kind == "dropped":
                    drops.append((int(ev["mono_ns"]), int(ev["count"])))
                    continue
                if kind != "iteration":
                    continue
                pid, at, wait = int(ev["pid"]), int(ev["at_ns"]), int(ev["wait_ns"])
            except (ValueError, KeyError, TypeError, AttributeError):
                bad += 1
                continue
            det.setdefault(pid, []).append((at - wait, at))
            if ev.get("missed"):
                missed.setdefault(pid, []).append((at, int(ev["missed"])))
    for v in det.values():
        v.sort(key=lambda w: w[1])
    return det, drops, missed, bad


def nearest(sorted_ts, t):
    """The index of the nearest of sorted_ts to t, None if there is none."""
    i = bisect.bisect_left(sorted_ts, t)
    if i == len(sorted_ts) or (i > 0 and t - sorted_ts[i - 1] < sorted_ts[i] - t):
        i -= 1
    return i if i >= 0 else None


def pct(values, q):
    """The q-th percentile (nearest rank) of values."""
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def seen_waits(true_waits, detected):
    """Which of `detected` (sorted by wake-up) match true_waits, one each
    at most (its sleep and wake-up within half the true wait of the true
    ones, the closest): the set of their indices."""
    wakes = [w for _, w in detected]
    used = set()
    for s, w in true_waits:
        tol = (w - s) / 2
        best = None
        for j in range(bisect.bisect_left(wakes, w - tol), len(wakes)):
            ds, dw = detected[j]
            if dw > w + tol:
                break
            if j in used or abs(ds - s) > tol:
                continue
            cost = abs(dw - w) + abs(ds - s)
            if best is None or cost < best[0]:
                best = (cost, j)
        if best is not None:
            used.add(best[1])
    return used


def us(ns):
    return f"{ns / 1e3:.1f}"


def mp(values):
    """'median M, p99 P' of values in ns, in µs."""
    return f"median {us(statistics.median(values))}, p99 {us(pct(values, 99))}"


def cmd_match(args):
    lo = args.lo if args.lo is not None else -math.inf
    hi = args.hi if args.hi is not None else math.inf
    if lo > hi:
        print(f"hpcd-boundaries: --from {args.lo} is after --to {args.hi}", file=sys.stderr)
        return 2
    specs = [(spec,) + spec.partition("=") for spec in args.logs]
    for spec, pid, sep, path in specs:
        if not sep or not pid.isdigit() or not path:
            print(f"hpcd-boundaries: '{spec}' is not PID=SPINLOG", file=sys.stderr)
            return 2
    # A file that cannot be read counts as empty (said so; exit status 1).
    rc, tasks = 0, {}
    for _, pid, _, path in specs:
        try:
            tasks[int(pid)] = read_spin_log(path)
        except OSError as e:
            print(f"cannot read a task log: {e}")
            tasks[int(pid)], rc = ([], [], [], [], 0), 1
    try:
        det, drops, missed, bad_ev = read_events(args.events)
    except OSError as e:
        print(f"cannot read the events: {e}")
        det, drops, missed, bad_ev, rc = {}, [], {}, 0, 1

    def inside(t):
        return lo <= t <= hi

    errs = {"sleep": [], "wake": [], "stamp": []}
    cpu_waits = []
    n_true = n_seen = n_det = n_used = 0
    no_log = 0  # detected waits of tasks without a log
    for pid, ws in det.items():
        if pid not in tasks:
            no_log += sum(1 for w in ws if inside(w[1]))
    for pid, (sleeps, wakes, waits, stamps, _) in tasks.items():
        dws = det.get(pid, [])
        for ds, dw in dws:
            if inside(ds) and (i := nearest(sleeps, ds)) is not None:
                errs["sleep"].append(abs(ds - sleeps[i]))
            if inside(dw) and (i := nearest(wakes, dw)) is not None:
                errs["wake"].append(abs(dw - wakes[i]))
                errs["stamp"].append(abs(dw - stamps[i]))
        tw = [(s, w) for s, w, _ in waits if inside(s) and inside(w)]
        cpu_waits += [c for s, w, c in waits if inside(s) and inside(w) and c is not None]
        used = seen_waits(tw, dws)
        n_true += len(tw)
        n_seen += len(used)
        for j, (ds, dw) in enumerate(dws):
            if inside(ds) and inside(dw):
                n_det += 1
                n_used += j in used
    bad_logs = sum(t[4] for t in tasks.values())

    span = f"{(hi - lo) / 1e9:.2f} s" if math.isfinite(hi - lo) else "all of it"
    print(f"window: {span}; {len(tasks)} task log(s), {n_true} true wait(s) in the window; "
          f"{n_det} detected wait(s) in it ({len(det)} task(s) in hpcd's events)")
    if bad_logs or bad_ev:
        print(f"skipped: {bad_logs} line(s) of the task logs, {bad_ev} of the events "
              "that were not stamps or events")
    if no_log:
        print(f"ignored: {no_log} detected wait(s) of tasks without a log")
    lost = sum(c for t, c in drops if t >= lo)
    if lost:
        print(f"warning: {lost} event(s) were gone from hpcd's ring before the dump read "
              "them: the dump read too seldom")
    n_missed = sum(c for v in missed.values() for t, c in v if inside(t))
    if n_missed:
        print(f"hpcd's events say {n_missed} iteration(s) closed unseen by its log")
    why = ""
    if not any(t[0] or t[1] for t in tasks.values()):
        why = "the task logs hold no stamps (did hpcd-spin get a LOGFILE?)"
    elif not det:
        why = "no iteration events in " + args.events
    elif not n_det and not any(errs.values()):
        why = "no detected boundary of these tasks lies in the window"
    if why:
        print("nothing to match: " + why)
    both = errs["sleep"] + errs["wake"]
    med = p99 = seen = "-"
    if both:
        med, p99 = us(statistics.median(both)), us(pct(both, 99))
        each = "; ".join(f"{k}s: {mp(v)} ({len(v)})" for k, v in
                         (("sleep", errs["sleep"]), ("wake-up", errs["wake"])) if v)
        print(f"error |detected - true|, µs: median {med}, p99 {p99} over {len(both)} "
              f"boundaries ({each})")
    elif not why:
        print("error: no detected boundary in the window has a true one to match")
    if cpu_waits:
        print(f"the tasks' wait for a CPU after their wake-ups, µs: {mp(cpu_waits)}")
    if errs["stamp"]:
        print(f"the detected wake-ups against the same wake-ups' \"wake\" stamps (after that "
              f"wait), µs: {mp(errs['stamp'])}")
    if n_true:
        seen = f"{100 * n_seen / n_true:.1f}"
        print(f"waits seen: {seen} % ({n_seen} of {n_true} true waits matched within half "
              f"their length); {n_det - n_used} detected wait(s) in the window matched none")
    elif not why:
        print("waits seen: no true wait lies in the window")
    print(f"fields: {med} {p99} {seen}")
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("now", help="CLOCK_MONOTONIC, ns").set_defaults(fn=cmd_now)
    d = sub.add_parser("dump", help="hpcd's iteration events into a JSON-lines file")
    d.add_argument("socket")
    d.add_argument("out")
    d.add_argument("--every", type=float, default=1.0, help="seconds between reads (1)")
    d.set_defaults(fn=cmd_dump)
    m = sub.add_parser("match", help="detected boundaries against the tasks' own")
    m.add_argument("--from", dest="lo", type=int, help="window start, CLOCK_MONOTONIC ns")
    m.add_argument("--to", dest="hi", type=int, help="window end, CLOCK_MONOTONIC ns")
    m.add_argument("events")
    m.add_argument("logs", nargs="*", metavar="PID=SPINLOG")
    m.set_defaults(fn=cmd_match)
    args = ap.parse_args()
    if args.cmd == "dump" and not args.every > 0:
        ap.error("--every must be positive")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
