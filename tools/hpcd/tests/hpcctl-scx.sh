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
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
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
expect "run --set heuristic=foo: exit 2" 2 "(uniform or adaptive)" H run --set heuristic=foo -- true
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
if [ -n "$scx" ] && [ -x "$scx" ] && [ ! -e /sys/kernel/sched_ext ]; then
	# the real loader on this kernel without sched_ext: its message comes through
	expect "run with scx_hpc on a kernel without sched_ext: exit 1, the loader's message" 1 \
		"this kernel has no sched_ext" H --scx-hpc "$scx" run -- true
fi
setstate enabled hpc
expect "status with a missing loader: exit 1, says how to name it" 1 "give --scx-hpc BIN" H --scx-hpc "$work/no-scx_hpc" status

# commands the scx backend does not have
expect "trace --backend scx: exit 1" 1 "trace is not available with --backend scx" H trace -o "$work/t.jsonl" --duration 1
expect "prio --backend scx: exit 1" 1 "prio is not available with --backend scx" H prio 1 4
expect "--backend bogus: exit 64" 64 "bogus" "$hpcctl" --backend bogus status
expect "run --backend scx without --: exit 65" 65 "put '--'" H run true
expect "run --backend scx -- (no command): exit 65" 65 "no command after '--'" H run --
check_nofile() { if [ ! -e "$work/t.jsonl" ]; then ok "hpcctl scx: trace refusal wrote no file"; else nok "hpcctl scx: trace refusal wrote no file"; fi; }
check_nofile

echo "1..$n"
[ $failed -eq 0 ]
