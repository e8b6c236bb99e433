#!/usr/bin/env bash
# hpcctl run/trace with an MPI launcher, and the lifetime of the hpcd that
# hpcctl or metbench-3ways.sh starts, on this machine's real cgroups (root,
# Open MPI's mpirun). TAP output.
#
# usage: launcher.sh BUILD_DIR   (its tools/hpcd holds hpcd, hpcctl, hpcd-spin;
#                                 tools/hpcmon/libhpcmon.so for the script)
#
# Never skips: without root, a cpu controller or mpirun every test fails
# with the reason.
set -u
build=${1:?usage: launcher.sh BUILD_DIR}
bin=$build/tools/hpcd
hpcd=$bin/hpcd hpcctl=$bin/hpcctl spin=$bin/hpcd-spin
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/hpcd-launcher.XXXXXX)
export HPCD_CONTROL=$work/ctl HPCD_SOCKET=$work/mon
export HPC_SYSFS=$work/no-kernel # hpcd, whatever the kernel has
# shellcheck source=../../../tests/tap.sh
. "$here/../../../tests/tap.sh"
trap tap_cleanup EXIT
ctl_up() { "$hpcctl" --backend hpcd status --json >/dev/null 2>&1; }
affinity() { awk '/^Cpus_allowed_list/ { print $2 }' /proc/$1/status; }
alive() { kill -0 "$1" 2>/dev/null; }

why=
[ "$(id -u)" -eq 0 ] || why="needs root (cgroups)"
for b in "$hpcd" "$hpcctl" "$spin"; do [ -x "$b" ] || why="$b is not built"; done
command -v mpirun >/dev/null || why="no mpirun (openmpi-bin)"
cgroot=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || why="no cpu cgroup mount"
if [ -n "$why" ]; then
	echo "not ok 1 - launcher preflight: $why"
	echo "1..1"
	exit 1
fi
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
all_cpus=$(affinity $$)
ncpu=$(nproc)

# The hpcd an hpcctl started: "PID GUARDIAN INSTANCE-DIR", once it answers.
hpcd_of() {
	"$hpcctl" --backend hpcd status --json 2>/dev/null |
		python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["pid"], s["guardian"], s["instance"])'
}
# None of it is left: hpcd, its guardian, its cgroups.
all_gone() { ! alive "$1" && ! alive "$2" && [ ! -e "$3" ]; }

# --- 1. hpcctl trace -- mpirun: the ranks are adopted, not mpirun --------------------
# Four ranks without the monitor: found under mpirun, their sleeps and wake-ups
# from hpcd's source (the BPF program, or /proc samples).
# On the emulated SMT cores (mode smt-emul): one context per CPU, pinned.
# hpcd's tree outweighs this shell 10000 to 100, and the contexts fill the
# CPUs: the probe is hpcctl and grep (no interpreter to start), and the ranks
# run long enough for the checks below to see them alive.
"$hpcctl" trace -o "$work/l.jsonl" --hpcd "$hpcd" --heuristic adaptive --set mode=smt-emul -- \
	"${mpi[@]}" -np 4 "$spin" 15 20 10 >/dev/null 2>"$work/l.err" &
tp=$!; pids+=($tp)
wait_for 10 '[ "$("$hpcctl" --backend hpcd top --once --json 2>/dev/null |
	grep -o "\"role\":\"task\"" | wc -l)" -eq 4 ]'
"$hpcctl" --backend hpcd top --once --json >"$work/top.json" 2>/dev/null
python3 - "$work/top.json" >"$work/top.txt" <<'PY'
import json, sys
ts = json.load(open(sys.argv[1]))
ranks = sorted((t for t in ts if t["role"] == "task"), key=lambda t: t["ctx"])
launchers = [t for t in ts if t["role"] == "launcher"]
print("ranks", " ".join(str(t["rank"]) for t in ranks))
print("ctxs", " ".join(str(t["ctx"]) for t in ranks))
print("cpus", " ".join(str(t["cpu"]) for t in ranks))
print("source", " ".join(sorted({t["source"] for t in ranks})))
print("launcher", " ".join("%s:%s:%s" % (t["pid"], t["name"], t["ctx"]) for t in launchers))
print("launched_by", " ".join(sorted({str(t["launched_by"]) for t in ranks})))
print("rankpids", " ".join(str(t["pid"]) for t in ranks))
PY
get() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$work/top.txt"; }
lpid=$(get launcher | cut -d: -f1)
check "trace -- mpirun -np 4: 4 ranks adopted, in rank order on contexts 0..3 ($(get ranks) / $(get ctxs))" \
	test "$(get ranks)/$(get ctxs)" = "0 1 2 3/0 1 2 3"
check "trace -- mpirun: mpirun is the launcher, not paired ($(get launcher))" \
	bash -c "[[ '$(get launcher)' == *:mpirun:-1 ]]"
check "trace -- mpirun: the ranks were found under it ($(get launched_by))" test -n "$lpid" -a "$(get launched_by)" = "$lpid"
src=$("$hpcctl" --backend hpcd status --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["source"])')
check "trace -- mpirun: the ranks' events come from hpcd's source, $src ($(get source))" \
	test -n "$src" -a "$(get source)" = "$src"
# m = ceil(4 / CPUs) consecutive contexts per CPU: a core's two together.
exp_cpus=$(python3 -c 'import sys; n = int(sys.argv[1]); m = -(-4 // n)
print(" ".join(str(min(i // m, n - 1)) for i in range(4)))' "$ncpu")
check "trace -- mpirun: the ranks share the CPUs, consecutive contexts together ($(get cpus), want $exp_cpus)" \
	test "$(get cpus)" = "$exp_cpus"
aff=
for p in $(get rankpids); do aff="$aff $(affinity $p)"; done
check "trace -- mpirun: each rank pinned to its context's CPU ($aff)" test -n "$aff" -a "${aff# }" = "$(get cpus)"
check "trace -- mpirun: mpirun keeps every CPU ($(affinity $lpid) of $all_cpus)" test "$(affinity $lpid)" = "$all_cpus"
wait $tp; rc=$?
check "trace -- mpirun: exit 0" test $rc -eq 0
check "trace -- mpirun: says on stderr that the ranks ran unmonitored" \
	grep -q "warning: 4 of 4 rank(s) ran unmonitored" "$work/l.err"
check "trace -- mpirun: the record's end line says so too" bash -c \
	"tail -1 '$work/l.jsonl' | grep -q '\"warnings\":\[\"4 of 4 rank(s) ran unmonitored'"
check "trace -- mpirun: task lines of the 4 ranks and the launcher" bash -c \
	"[ \$(grep '\"type\":\"task\"' '$work/l.jsonl' | grep '\"role\":\"task\"' | grep -o '\"pid\":[0-9]*' | sort -u | wc -l) -eq 4 ] &&
	 grep '\"type\":\"task\"' '$work/l.jsonl' | grep -q '\"role\":\"launcher\"'"
"$hpcctl" report "$work/l.jsonl" >"$work/rep" 2>&1; rc=$?
check "report of it: 4 ranks P0..P3 and the warning (exit $rc)" bash -c \
	"[ $rc -eq 0 ] && [ \$(grep -cE '^P[0-3] ' '$work/rep') -eq 4 ] && grep -q '^Warning: 4 of 4 rank(s) ran unmonitored' '$work/rep'"

# --- 1b. the same with the monitor: found first or said hello first, the ranks
# end up monitored, in rank order; rank 0 (ignore_ranks) is not adopted.
mb=$build/bench/metbench/metbench mon=$build/tools/hpcmon/libhpcmon.so
"$hpcctl" trace -o "$work/m.jsonl" --hpcd "$hpcd" --set ignore_ranks=0 -- "${mpi[@]}" -np 4 \
	-x LD_PRELOAD="$mon" -x HPCD_SOCKET -x HPCMON_QUIET=1 "$mb" --loads 20,40,20 \
	--iterations 8 --wait spin >/dev/null 2>"$work/m.err"
rc=$?
check "trace -- mpirun, ranks with libhpcmon: exit 0, no warning ($(tail -1 "$work/m.err"))" \
	bash -c "[ $rc -eq 0 ] && ! grep -q warning '$work/m.err'"
python3 - "$work/m.jsonl" >"$work/m.txt" <<'PY'
import json, sys
last = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j.get("type") == "task":
        last[j["pid"]] = j
ranks = sorted((t for t in last.values() if t["role"] == "task"), key=lambda t: t["rank"])
print(" ".join("%d:%s:%d" % (t["rank"], t["source"], t["ctx"]) for t in ranks))
PY
check "trace -- mpirun with libhpcmon: ranks 1..3 monitored on contexts 0..2 ($(cat "$work/m.txt"))" \
	test "$(cat "$work/m.txt")" = "1:monitor:0 2:monitor:1 3:monitor:2"

# --- 2. a launcher run that adopts no rank fails, loudly -------------------------------
"$hpcctl" run --hpcd "$hpcd" --set ignore_ranks=0-1 -- "${mpi[@]}" -np 2 "$spin" 1 >/dev/null 2>"$work/n.err"; rc=$?
check "run -- mpirun, every rank in ignore_ranks: exit 1 ($rc)" test $rc -eq 1
check "run -- mpirun, no rank adopted: a warning says so" grep -q "warning: mpirun started no process hpcd could adopt" "$work/n.err"
"$hpcctl" run --hpcd "$hpcd" --set ignore_ranks=0-1 -- "${mpi[@]}" -np 2 sh -c 'exit 3' >/dev/null 2>&1; rc=$?
check "run -- mpirun that fails, no rank adopted: the command's status ($rc)" test $rc -ne 0 -a $rc -ne 1
"$hpcctl" run --hpcd "$hpcd" -- "$spin" 1 10 10 >/dev/null 2>"$work/p.err"; rc=$?
check "run -- a program (no launcher): exit 0, no warning" test $rc -eq 0 -a ! -s "$work/p.err"
"$hpcctl" run --hpcd "$hpcd" --launcher -- sh -c "\"$spin\" 1 10 10 & \"$spin\" 1 10 10; wait" >/dev/null 2>"$work/w.err"; rc=$?
check "run --launcher -- a wrapper: its two children adopted (unmonitored), exit 0" bash -c \
	"[ $rc -eq 0 ] && grep -q 'warning: 2 of 2 rank(s) ran unmonitored' '$work/w.err'"

# --- 3. the hpcd hpcctl starts ends with it --------------------------------------------
# The command fails: hpcd, guardian and cgroups are gone when hpcctl returns.
"$hpcctl" run --hpcd "$hpcd" -- sh -c "\"$hpcctl\" --backend hpcd status --json >'$work/st.json'; exit 3"; rc=$?
read -r hp gp inst < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["pid"], s["guardian"], s["instance"])' "$work/st.json")
check "run -- a failing command: its status (3), and its hpcd, guardian and cgroups are gone on return" \
	bash -c "[ $rc -eq 3 ] && ! kill -0 $hp 2>/dev/null && ! kill -0 $gp 2>/dev/null && [ ! -e '$inst' ]"
# hpcd refuses a setting after hpcctl started it: hpcctl fails, hpcd must not stay.
"$hpcctl" run --hpcd "$hpcd" --set balance=maybe -- true >/dev/null 2>&1; rc=$?
check "run --set balance=maybe: exit 2, and no hpcd left answering" bash -c "[ $rc -eq 2 ] && ! '$hpcctl' --backend hpcd status >/dev/null 2>&1"
# hpcctl killed (SIGKILL, SIGTERM) while its command runs.
for sig in KILL TERM; do
	"$hpcctl" run --hpcd "$hpcd" -- "${mpi[@]}" -np 2 "$spin" 30 >/dev/null 2>&1 &
	cp=$!; pids+=($cp)
	wait_for 10 '"$hpcctl" --backend hpcd top --once --json >"$work/k.json" 2>/dev/null &&
		[ "$(grep -o "\"role\":\"task\"" "$work/k.json" | wc -l)" -eq 2 ]'
	read -r hp gp inst < <(hpcd_of)
	mp=$(python3 -c 'import json,sys; print(*[t["pid"] for t in json.load(open(sys.argv[1])) if t["role"] == "launcher"])' "$work/k.json")
	kill -$sig $cp
	wait $cp 2>/dev/null
	check "SIG$sig to hpcctl run: its hpcd ($hp), guardian ($gp) and cgroups ($inst) are gone" \
		wait_for 15 "all_gone '$hp' '$gp' '$inst'"
	[ -z "$mp" ] || kill -TERM $mp 2>/dev/null # what hpcctl ran, if SIGKILL left it
	wait_for 10 "! pgrep -f '$spin 30' >/dev/null"
done

# --- 4. metbench-3ways.sh: no hpcd left, whatever ends it ------------------------------
mb=$here/../metbench-3ways.sh
script_hpcd() { # OUT_DIR WAY -> "PID INSTANCE" of the hpcd it logged
	sed -n 's/^hpcd: ready: .* cgroup v[12] \([^,]*\), .*/\1/p' "$1/$2.log" | head -1 |
		awk '{ n = split($1, p, "hpcd-"); print p[n], $1 }'
}
if [ -e "$build/tools/hpcmon/libhpcmon.so" ]; then
	PROGRAM=$spin PROGRAM_ARGS="0.5" PROGRAM_OUTPUT=monitor NP=2 WAYS=baseline \
		"$mb" "$build" "$work/mb1" >"$work/mb1.out" 2>&1; rc=$?
	read -r hp inst < <(script_hpcd "$work/mb1" baseline)
	check "metbench-3ways, a program without the monitor: exit 1, says so" bash -c \
		"[ $rc -eq 1 ] && grep -q 'wrote no monitor report' '$work/mb1.out'"
	check "metbench-3ways failed: its hpcd (${hp:-?}) and cgroups are gone" \
		bash -c "[ -n '$hp' ] && ! kill -0 $hp 2>/dev/null && [ ! -e '$inst' ]"
	PROGRAM=$spin PROGRAM_ARGS="30" PROGRAM_OUTPUT=monitor NP=2 WAYS=baseline \
		"$mb" "$build" "$work/mb2" >"$work/mb2.out" 2>&1 &
	sp=$!; pids+=($sp)
	wait_for 10 "[ -n \"\$(script_hpcd '$work/mb2' baseline 2>/dev/null)\" ] && pgrep -f '$spin 30' >/dev/null"
	read -r hp inst < <(script_hpcd "$work/mb2" baseline)
	kill -TERM $sp
	wait $sp; rc=$?
	check "metbench-3ways, SIGTERM: exit 143 ($rc), its hpcd (${hp:-?}) and cgroups are gone" \
		bash -c "[ $rc -eq 143 ] && [ -n '$hp' ] && ! kill -0 $hp 2>/dev/null && [ ! -e '$inst' ]"
	check "metbench-3ways, SIGTERM: its mpirun and ranks end too" wait_for 10 "! pgrep -f '$spin 30' >/dev/null"
else
	nok "metbench-3ways: $build/tools/hpcmon/libhpcmon.so is not built (make hpcmon)"
fi

tap_end
