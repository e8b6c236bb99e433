#!/usr/bin/env bash
# hpcctl --backend scx on this host (TAP): every refusal and error path that
# needs no sched_ext scheduler to be loaded. A fake sched_ext directory
# ($HPC_SCX_SYSFS) stands for the kernel's state; the real scx_hpc loader is
# used where one is built. Loading itself is tested in the QEMU guest
# (sched_ext/tests/guest-cases/57-scx-hpcctl.sh).
#
# usage: hpcctl-scx.sh BIN_DIR [SCX_HPC]
set -u
bin=${1:?usage: hpcctl-scx.sh BIN_DIR [SCX_HPC]}
hpcctl=$bin/hpcctl
scx=${2:-}
work=$(mktemp -d /tmp/hpcctl-scx.XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck source=../../../tests/tap.sh
. "$(cd "$(dirname "$0")" && pwd)/../../../tests/tap.sh"
# expect NAME WANT_RC WANT_TEXT CMD...: exits WANT_RC and says WANT_TEXT
expect() {
	local name=$1 want=$2 text=$3 rc; shift 3
	"$@" >"$work/o" 2>&1; rc=$?
	if [ $rc -eq "$want" ] && grep -qF -- "$text" "$work/o"; then
		ok "hpcctl scx: $name"
	else
		nok "hpcctl scx: $name" "exit $rc (want $want), want '$text' in: $(head -c 400 "$work/o")"
	fi
}
[ -x "$hpcctl" ] || { echo "not ok 1 - hpcctl scx: $hpcctl is not built"; exit 1; }

fake=$work/sched_ext
mkdir -p "$fake/root"
setstate() { echo "$1" >"$fake/state"; echo "$2" >"$fake/root/ops"; }
export HPCCTL_SCX_LOG=$work/scx.log
H() { "$hpcctl" --backend scx "$@"; }

# no sched_ext in the kernel
export HPC_SCX_SYSFS=$work/none
expect "run without sched_ext: exit 1, says so" 1 "the kernel has no sched_ext" H run -- true
expect "top without sched_ext: exit 1" 1 "the kernel has no sched_ext" H top --once
expect "status without sched_ext: exit 1" 1 "the kernel has no sched_ext" H status
expect "get without sched_ext: exit 1" 1 "the kernel has no sched_ext" H get low_util
expect "set without sched_ext: exit 1" 1 "the kernel has no sched_ext" H set low_util=60

# knobs: names and values refused before anything is looked at or started
export HPC_SCX_SYSFS=$fake
setstate disabled none
expect "run --set bogus=1: exit 2" 2 "unknown parameter 'bogus'" H run --set bogus=1 -- true
expect "run --set mode=quota (hpcd only): exit 2" 2 "mode is not a knob of scx_hpc" H run --set mode=quota -- true
expect "run --set smt_pairs=1 (read-only): exit 2" 2 "smt_pairs is not a knob of scx_hpc" H run --set smt_pairs=1 -- true
expect "run --set low_util=abc: exit 2" 2 "low_util: 'abc' is not a valid value" H run --set low_util=abc -- true
expect "run --set heuristic=foo: exit 2" 2 "(uniform, adaptive or phase)" H run --set heuristic=foo -- true
expect "run --set timeslice_us=10: exit 2 (parse_sched_knob)" 2 "timeslice_us=10: must be a whole number within" H run --set timeslice_us=10 -- true
expect "run --set queue=lifo: exit 2" 2 "queue=lifo: must be rr or fifo" H run --set queue=lifo -- true
expect "run --set emul_period_us=0: exit 2" 2 "emul_period_us=0" H run --set emul_period_us=0 -- true
expect "run --set low_util=90 (above high_util 85) before starting: exit 2" 2 "low_util must be below high_util" H run --set low_util=90 -- true
expect "run --set max_prio=7 (emulation's range 1..6): exit 2" 2 "backend's range" H run --set max_prio=7 -- true
expect "run --set global_weight=50 --set last_weight=60: exit 2" 2 "must be 100" H run --set global_weight=50 --set last_weight=60 -- true
expect "run --set noequals: exit 2" 2 "expected KEY=VALUE" H run --set noequals -- true
expect "set bogus=1: exit 2" 2 "unknown parameter 'bogus'" H set bogus=1
expect "get bogus: exit 2" 2 "unknown parameter 'bogus'" H get bogus
expect "run --membind 99: exit 64, names the node" 64 "NUMA node 99 does not exist" H run --membind 99 -- true
check_nolog() { if [ ! -e "$HPCCTL_SCX_LOG" ]; then ok "hpcctl scx: refusals started nothing"; else nok "hpcctl scx: refusals started nothing" "$(cat "$HPCCTL_SCX_LOG")"; fi; }
check_nolog

# scx_hpc not running
expect "top with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H top --once
expect "status with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H status --json
expect "get with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H get
expect "set with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H set low_util=60

# another sched_ext scheduler
setstate enabled simple
expect "run while scx_simple is loaded: exit 1, names it" 1 "another sched_ext scheduler is active (simple)" H run -- true
expect "top while scx_simple is loaded: exit 1" 1 "another sched_ext scheduler is active (simple)" H top --once

# the loader cannot be run or does not come up
setstate disabled none
expect "run with a missing loader: exit 1, says which" 1 "did not come up" H --scx-hpc "$work/no-scx_hpc" run -- true
check_log() { if grep -q "cannot run $work/no-scx_hpc" "$HPCCTL_SCX_LOG"; then ok "hpcctl scx: its log says why"; else nok "hpcctl scx: its log says why" "$(cat "$HPCCTL_SCX_LOG" 2>&1)"; fi; }
check_log
expect "run with a loader that fails: exit 1" 1 "did not come up" H --scx-hpc /bin/false run -- true
# The real loader's checks need it built (make scx, which needs the kernel):
# the scx-host suite runs this script with it; elsewhere they are skipped.
loader_built() { [ -n "$scx" ] && [ -x "$scx" ]; }
if loader_built && [ ! -e /sys/kernel/sched_ext ]; then
	# the real loader on this kernel without sched_ext: its message comes through
	expect "run with scx_hpc on a kernel without sched_ext: exit 1, the loader's message" 1 \
		"this kernel has no sched_ext" H --scx-hpc "$scx" run -- true
else
	skip "hpcctl scx: run with scx_hpc on a kernel without sched_ext" \
		"$(loader_built && echo "this kernel has sched_ext" || echo "scx_hpc is not built (make scx)")"
fi
setstate enabled hpc
expect "status with a missing loader: exit 1, says how to name it" 1 "give --scx-hpc BIN" H --scx-hpc "$work/no-scx_hpc" status

# prio: the value is checked first; then scx_hpc --prio PID=P on the loaded
# instance (a stand-in loader records what it gets and answers as scx_hpc)
setstate disabled none
expect "prio 1 7 (emulation's range 1..6): exit 2" 2 "prio: 7 is outside 1..6" H prio 1 7
expect "prio with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H prio 1 4
setstate enabled hpc
printf '#!/bin/sh\necho "$*" >"%s/prio-args"\n' "$work" >"$work/prio-ok"
printf '#!/bin/sh\necho "scx_hpc: --prio: task 12 is not SCHED_EXT (policy 0): scx_hpc does not schedule it" >&2\nexit 1\n' >"$work/prio-refuse"
printf '#!/bin/sh\necho "scx_hpc: invalid value: prio 9 is outside 1..6 (0: dynamic)" >&2\nexit 2\n' >"$work/prio-bad"
chmod +x "$work/prio-ok" "$work/prio-refuse" "$work/prio-bad"
for p in 6 0; do
	rm -f "$work/prio-args"
	H --scx-hpc "$work/prio-ok" prio 12 $p >"$work/o" 2>&1; rc=$?
	if [ $rc -eq 0 ] && [ "$(cat "$work/prio-args" 2>/dev/null)" = "--prio 12=$p" ]; then
		ok "hpcctl scx: prio 12 $p runs scx_hpc --prio 12=$p, exit 0"
	else
		nok "hpcctl scx: prio 12 $p runs scx_hpc --prio 12=$p, exit 0" \
			"exit $rc, loader got: $(cat "$work/prio-args" 2>&1), output: $(head -c 300 "$work/o")"
	fi
done
expect "prio of a task scx_hpc does not schedule: exit 1, the loader's reason" 1 \
	"task 12 is not SCHED_EXT" H --scx-hpc "$work/prio-refuse" prio 12 4
expect "prio refused by the loader as a value: exit 2" 2 "outside 1..6" H --scx-hpc "$work/prio-bad" prio 12 4
if loader_built; then
	# the real loader checks --prio before it looks for a loaded instance
	expect "scx_hpc --prio 1=7: exit 2" 2 "prio 7 is outside 1..6" "$scx" --prio 1=7
	expect "scx_hpc --prio x=4: exit 2" 2 "expected PID=PRIO" "$scx" --prio x=4
	expect "scx_hpc --prio of a task that is not SCHED_EXT: exit 1" 1 "is not SCHED_EXT" "$scx" --prio $$=4
else
	skip "hpcctl scx: scx_hpc --prio checks of the real loader" "scx_hpc is not built (make scx)"
fi
setstate disabled none
expect "--backend bogus: exit 64" 64 "bogus" "$hpcctl" --backend bogus status
expect "run --backend scx without --: exit 65" 65 "put '--'" H run true
expect "run --backend scx -- (no command): exit 65" 65 "no command after '--'" H run --

# hpcctl trace --backend scx: refusals (no file left), then a recording from
# a stand-in loader that serves scripted --dump-tasks maps in turn and
# unloads after the last (no timing: the trace ends when the loader is gone).
check_nofile() { if [ ! -e "$work/t.jsonl" ]; then ok "hpcctl scx: $1: no file"; else nok "hpcctl scx: $1: no file"; rm -f "$work/t.jsonl"; fi; }
export HPC_SCX_SYSFS=$work/none
expect "trace without sched_ext: exit 1" 1 "the kernel has no sched_ext" H trace -o "$work/t.jsonl" --duration 1
check_nofile "trace without sched_ext"
export HPC_SCX_SYSFS=$fake
setstate disabled none
expect "trace with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H trace -o "$work/t.jsonl" --duration 1
check_nofile "trace with scx_hpc not loaded"
setstate enabled simple
expect "trace while scx_simple is loaded: exit 1, names it" 1 "another sched_ext scheduler is active (simple)" H trace -o "$work/t.jsonl" --duration 1
check_nofile "trace while scx_simple is loaded"
setstate disabled none
expect "trace --set bogus=1 -- true: exit 2" 2 "unknown parameter 'bogus'" H trace -o "$work/t.jsonl" --set bogus=1 -- true
expect "trace --set mode=quota (hpcd only): exit 2" 2 "mode is not a knob of scx_hpc" H trace -o "$work/t.jsonl" --set mode=quota -- true
check_nofile "trace with a bad knob"
expect "trace --sample-ms 0: exit 64" 64 "sample-ms" H trace -o "$work/t.jsonl" --duration 1 --sample-ms 0
expect "trace --sample-ms without scx: exit 64" 64 "--sample-ms is for --backend scx" \
	"$hpcctl" --backend hpcd trace -o "$work/t.jsonl" --duration 1 --sample-ms 5
check_nofile "trace with a bad --sample-ms"

loader=$work/fake-scx
cat >"$loader" <<EOL
#!/bin/bash
d=$work/dumps
case " \$* " in
*" --stats-once "*) echo '{"params":{"heuristic":"adaptive","low_util":60}}' ;;
*" --dump-tasks "*)
	n=\$(( \$(cat \$d/calls 2>/dev/null || echo 0) + 1 )); echo \$n >\$d/calls
	if [ -e \$d/dump\$n.json ]; then cat \$d/dump\$n.json; exit 0; fi
	echo disabled >$fake/state; echo none >$fake/root/ops
	echo "scx_hpc: scx_hpc is not loaded" >&2; exit 1 ;;
*) exit 1 ;;
esac
EOL
chmod +x "$loader"
T() { # pid iterations prio prev_prio run_ns wait_ns util
	printf '{"pid":%d,"tgid":%d,"comm":"app%d","cpu":1,"prio":%d,"prev_prio":%d,"iterations":%d,"judgements":0,"last_util":%d,"global_util":%d,"heur_util":%d,"last_run_ns":%d,"last_wait_ns":%d,"throttled_ns":0,"run_ns":0,"exited":0}' \
		"$1" "$1" "$1" "$3" "$4" "$2" "$7" "$7" "$7" "$5" "$6"
}
mkdir -p "$work/dumps"
# 1: baseline (pid 7 closed 3 iterations before); 2: 7 closes one and rises,
# 8 is judged down; 3: nothing new; 4: 7 closes three (two missed), 8 and a
# new task 9 close their first; then the loader unloads.
echo "[$(T 7 3 4 4 0 0 0),$(T 8 0 4 4 0 0 0)]" >"$work/dumps/dump1.json"
echo "[$(T 7 4 5 4 900000 100000 9000),$(T 8 0 3 4 0 0 0)]" >"$work/dumps/dump2.json"
cp "$work/dumps/dump2.json" "$work/dumps/dump3.json"
echo "[$(T 7 7 6 5 950000 50000 9500),$(T 8 1 3 4 100000 900000 1000),$(T 9 1 4 4 500000 500000 5000)]" >"$work/dumps/dump4.json"
setstate enabled hpc
timeout 120 "$hpcctl" --backend scx --scx-hpc "$loader" trace -o "$work/t.jsonl" \
	--perfetto "$work/t.json" --paraver "$work/t" --duration 1e6 --sample-ms 1 >"$work/o" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "4 iteration(s) of 3 task(s)" "$work/o"; then
	ok "hpcctl scx: trace records the sampled map until scx_hpc unloads"
else
	nok "hpcctl scx: trace records the sampled map until scx_hpc unloads" "exit $rc: $(head -c 600 "$work/o")"
fi
check_record() {
	python3 - "$work/t.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
h, end = lines[0], lines[-1]
assert h["source"] == "scx" and h["settings"]["heuristic"] == "adaptive", h
assert h["settings"]["sample_ms"] == 1, h
tasks = [l["pid"] for l in lines if l.get("type") == "task"]
assert tasks == [7, 8, 9], tasks
it = [(l["pid"], l["iteration"], l["old_prio"], l["prio"], l["run_ns"], l["wait_ns"], l["util"])
      for l in lines if l.get("type") == "iteration"]
want = [(7, 4, 4, 5, 900000, 100000, 9000), (7, 7, 5, 6, 950000, 50000, 9500),
        (8, 1, 3, 3, 100000, 900000, 1000), (9, 1, 4, 4, 500000, 500000, 5000)]
assert it == want, it
pr = [(l["pid"], l["old_prio"], l["prio"]) for l in lines if l.get("type") == "priority"]
assert pr == [(8, 4, 3)], pr
assert end["type"] == "end" and end["missed"] == 2, end
assert end["reason"] == "scx_hpc unloaded (sched_ext state disabled)", end
PY
}
if out=$(check_record 2>&1); then ok "hpcctl scx: the record: task lines, iterations, the judgement, missed"; else nok "hpcctl scx: the record: task lines, iterations, the judgement, missed" "$out"; fi
if [ -s "$work/t.json" ] && [ -s "$work/t.prv" ] && [ -s "$work/t.pcf" ] && [ -s "$work/t.row" ] &&
   python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; assert any(x.get("name")=="compute" for x in e)' "$work/t.json"; then
	ok "hpcctl scx: trace writes the Perfetto and Paraver exports"
else
	nok "hpcctl scx: trace writes the Perfetto and Paraver exports" "$(ls -l "$work")"
fi
expect "report of an scx record: sampled, the priorities in turn" 0 "scx_hpc (sched_ext, sampled)" "$hpcctl" report "$work/t.jsonl"
expect "report of an scx record: pid 7 4>5>6" 0 "4>5>6" "$hpcctl" report "$work/t.jsonl"

# a loader that prints something else than its map: exit 1, no file
rm -f "$work/t.jsonl" "$work/dumps/calls"
echo "[$(T 7 3 4 4 0 0 0)]" >"$work/dumps/dump1.json"
echo "not json" >"$work/dumps/dump2.json"
setstate enabled hpc
expect "trace with a loader printing no JSON: exit 1" 1 "printed no JSON" \
	timeout 120 "$hpcctl" --backend scx --scx-hpc "$loader" trace -o "$work/t.jsonl" --duration 1e6 --sample-ms 1
check_nofile "trace with a loader printing no JSON"
rm -f "$work/dumps/calls"
echo '[{"pid":7}]' >"$work/dumps/dump2.json"
setstate enabled hpc
expect "trace with an entry missing fields: exit 1, names it" 1 "entry 1: \"tgid\"" \
	timeout 120 "$hpcctl" --backend scx --scx-hpc "$loader" trace -o "$work/t.jsonl" --duration 1e6 --sample-ms 1
check_nofile "trace with an entry missing fields"

tap_end
