#!/usr/bin/env bash
# hpcctl --backend scx on this host (TAP): every refusal and error path that
# needs no sched_ext scheduler to be loaded. A fake sched_ext directory
# ($HPC_SCX_SYSFS) stands for the kernel's state; the real scx_hpc loader is
# used where one is built; stand-in maps of a running instance
# (hpcctl-scx-maps, as root) for what hpcctl reads and writes in them:
# status, top, get, set, prio's checks, trace. Loading itself is tested in
# the QEMU guest (sched_ext/tests/guest-cases/57-scx-hpcctl.sh).
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

# setstate STATE OPS: both at once (a symlink replaced: hpcctl may read them
# while they change)
fake=$work/sched_ext
setstate() {
	local d
	d=$(mktemp -d "$work/scx.XXXXXX")
	mkdir "$d/root"
	echo "$1" >"$d/state"
	echo "$2" >"$d/root/ops"
	ln -sfn "$d" "$fake.new" && mv -T "$fake.new" "$fake"
}
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
if loader_built; then
	expect "scx_hpc: the running instance's options are hpcctl's (--stats-once refused: exit 2)" 2 \
		"not expected" "$scx" --stats-once
	expect "scx_hpc --help names hpcctl for the running instance" 0 "hpcctl --backend scx" "$scx" --help
else
	skip "hpcctl scx: scx_hpc's options" "scx_hpc is not built (make scx)"
fi
setstate enabled hpc
expect "status --progs, no hpc_ program: exit 1" 1 "no hpc_* program is loaded" H status --progs
expect "status --tasks with another backend: exit 64" 64 "are for --backend scx" "$hpcctl" --backend hpcd status --tasks

# prio: the value is checked first, then that scx_hpc runs, then that the
# task is SCHED_EXT, before any map is looked at
setstate disabled none
expect "prio 1 7 (emulation's range 1..6): exit 2" 2 "prio: 7 is outside 1..6" H prio 1 7
expect "prio with scx_hpc not loaded: exit 1" 1 "scx_hpc is not loaded" H prio 1 4
setstate enabled hpc
expect "prio of a task scx_hpc does not schedule: exit 1, says why" 1 "task $$ is not SCHED_EXT" H prio $$ 4
expect "prio of no task: exit 1" 1 "no task 99999999" H prio 99999999 4
setstate disabled none
expect "--backend bogus: exit 64" 64 "bogus" "$hpcctl" --backend bogus status
expect "run --backend scx without --: exit 65" 65 "put '--'" H run true
expect "run --backend scx -- (no command): exit 65" 65 "no command after '--'" H run --

# hpcctl trace --backend scx: refusals (no file left); a recording from the
# stand-in maps below.
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

# A running scx_hpc's maps, stood in for (hpcctl-scx-maps, as root): the
# statistics and the task map as scripts read them, get and set, the
# sampled trace until scx_hpc unloads. hpcctl finds maps by name among all
# of the machine's: one run of this script at a time has them (a lock).
exec 4>/tmp/hpcctl-scx-maps.lock
flock 4
setstate enabled hpc
expect "status, sched_ext says scx_hpc but no maps: exit 1" 1 "its maps were not found" H status
expect "status --tasks, no maps: exit 1" 1 "its maps were not found" H status --tasks
maps_out=$work/maps.out
# M CMD...: one command to the stand-in, its answer
M() {
	local n
	n=$(wc -l <"$maps_out")
	echo "$*" >&3
	for _ in $(seq 100); do [ "$(wc -l <"$maps_out")" -gt "$n" ] && break; sleep 0.05; done
	tail -n 1 "$maps_out"
}
start_maps() {
	mkfifo "$work/maps.in"
	"$bin/hpcctl-scx-maps" <"$work/maps.in" >"$maps_out" 2>&1 &
	maps_pid=$!
	exec 3>"$work/maps.in"
	for _ in $(seq 100); do grep -q ready "$maps_out" && return 0; kill -0 $maps_pid 2>/dev/null || break; sleep 0.05; done
	return 1
}
if [ ! -x "$bin/hpcctl-scx-maps" ] || ! start_maps; then
	skip "hpcctl scx: the stand-in maps" "$(cat "$maps_out" 2>/dev/null || echo "$bin/hpcctl-scx-maps is not built")"
	tap_end
	exit
fi
setstate enabled hpc
M task 7 3 4 4 0 0 0 >/dev/null
M task 8 0 4 4 0 0 0 >/dev/null
H status --json >"$work/st" 2>&1
if grep -q "^{\"backend\":\"scx\",\"sysfs\":\"$fake\",\"state\":\"enabled\",\"ops\":\"hpc\",\"tasks\":2,\"live_tasks\":2,\"running\":0," "$work/st" &&
   grep -q '"params":{"low_util":65,"high_util":85,"min_prio":4,"max_prio":6,"global_weight":10,"last_weight":90,"heuristic":"uniform","min_wait_us":100,"timeslice_us":100000,"emul_period_us":10000,"queue":"rr","backend":"x86-smt-emul"},"cpus":\[{"cpu":0,"online":1,' "$work/st" &&
   [ "$(wc -l <"$work/st")" = 1 ]; then
	ok "hpcctl scx: status --json: one line, the statistics' keys in scx_hpc's order"
else
	nok "hpcctl scx: status --json: one line, the statistics' keys in scx_hpc's order" "$(head -c 600 "$work/st")"
fi
M exited 8 >/dev/null
H status --tasks --json >"$work/dt" 2>&1
if [ "$(sed -n 1p "$work/dt")" = '[{"pid":7,"tgid":7,"comm":"app7","cpu":1,"prio":4,"prev_prio":4,"iterations":3,"judgements":0,"last_util":0,"global_util":0,"heur_util":0,"last_run_ns":0,"last_wait_ns":0,"throttled_ns":0,"run_ns":0,"fixed_prio":0,"exited":0},' ] &&
   grep -q '^ {"pid":8,.*"exited":1}]$' "$work/dt"; then
	ok "hpcctl scx: status --tasks --json: every entry, one a line"
else
	nok "hpcctl scx: status --tasks --json: every entry, one a line" "$(head -c 600 "$work/dt")"
fi
H status --tasks >"$work/dt" 2>&1
if head -n 1 "$work/dt" | grep -q '^    pid    tgid comm .* state$' && awk '$1 == 8 && $3 == "app8" && $NF == "exited" { f = 1 } END { exit !f }' "$work/dt"; then
	ok "hpcctl scx: status --tasks: the table, exited entries too"
else
	nok "hpcctl scx: status --tasks: the table, exited entries too" "$(cat "$work/dt")"
fi
H top --once --json >"$work/top" 2>&1
if grep -q '"pid":7' "$work/top" && ! grep -q '"pid":8' "$work/top"; then ok "hpcctl scx: top: the live tasks"; else nok "hpcctl scx: top: the live tasks" "$(cat "$work/top")"; fi
expect "get heuristic" 0 "uniform" H get heuristic
if H set low_util=50 queue=fifo >"$work/o" 2>&1; then ok "hpcctl scx: set low_util=50 queue=fifo: exit 0"; else nok "hpcctl scx: set low_util=50 queue=fifo: exit 0" "$(cat "$work/o")"; fi
check_params() { if [ "$(M params)" = "$2" ]; then ok "hpcctl scx: $1"; else nok "hpcctl scx: $1" "$(tail -n 1 "$maps_out")"; fi; }
check_params "... written, the generation bumped" "gen=1 low_util=50 fifo=1"
expect "get queue: fifo" 0 "fifo" H get queue
expect "set high_util=40 (below low_util 50): exit 2" 2 "low_util must be below high_util" H set high_util=40
expect "run --set high_util=40, scx_hpc running: exit 2" 2 "low_util must be below high_util" H run --set high_util=40 -- true
check_params "... nothing written" "gen=1 low_util=50 fifo=1"

# trace: a baseline, then the map changes while it samples, then scx_hpc
# unloads (sched_ext's state): 1: baseline (pid 7 closed 3 iterations
# before); 2: 7 closes one and rises, 8 is judged down; 3: 7 closes three
# (two missed), 8 and a new task 9 close their first.
M task 8 0 4 4 0 0 0 >/dev/null
timeout 120 "$hpcctl" --backend scx trace -o "$work/t.jsonl" --perfetto "$work/t.json" \
	--paraver "$work/t" --duration 1e6 --sample-ms 1 >"$work/o" 2>&1 &
tp=$!
for _ in $(seq 200); do [ -e "$work/.hpcctl-$tp-t.jsonl" ] && break; sleep 0.05; done
sleep 0.5
M task 7 4 5 4 900000 100000 9000 >/dev/null
M task 8 0 3 4 0 0 0 >/dev/null
sleep 0.5
M task 7 7 6 5 950000 50000 9500 >/dev/null
M task 8 1 3 4 100000 900000 1000 >/dev/null
M task 9 1 4 4 500000 500000 5000 >/dev/null
sleep 0.5
setstate disabled none
wait $tp
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
assert h["source"] == "scx" and h["settings"]["low_util"] == 50, h
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
exec 3>&-
wait "$maps_pid"

tap_end
