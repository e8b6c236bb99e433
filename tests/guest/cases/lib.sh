#!/bin/sh
# shellcheck shell=sh
# Helpers for the sh test cases in tests/guest/cases (busybox ash).
# Source it from a case:   . "${0%/*}/lib.sh"
#
# A case prints one TAP line per check, "ok N - <name>" or
# "not ok N - <name> # <reason>" (the guest's /init adds the case name), and
# ends with `t_done` whose status is the case's exit status. The line format
# lives in t_line below: adapting to another convention is a change there.
# t_skip never prints "ok".
#
# The harness copies only executable files of this directory into the guest
# (and runs each as a case), so this file is executable: run on its own, as
# the case "lib.sh", it tests itself (the helpers against the guest's real
# sysfs and /proc, see the end of the file). Once the harness installs
# non-executable helpers too, `chmod -x lib.sh` makes it a plain helper.

T_N=0
T_FAIL=0
HPC_SYSFS=/sys/kernel/sched_hpc

t_line() {  # t_line ok|"not ok" N NAME [REASON]
	if [ -n "$4" ]; then echo "$1 $2 - $3 # $4"; else echo "$1 $2 - $3"; fi
}
t_ok() { T_N=$((T_N + 1)); t_line ok "$T_N" "$1"; }
t_fail() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); t_line "not ok" "$T_N" "$1" "${2:-failed}"; }
t_skip() { echo "# SKIP $1: ${2:-}"; }
t_diag() { echo "# $*"; }
# t_check NAME CMD...: one check, passes when CMD succeeds
t_check() {
	_n=$1; shift
	if "$@"; then t_ok "$_n"; else t_fail "$_n" "command failed: $*"; fi
}
# t_is NAME GOT WANT
t_is() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "got '$2', want '$3'"; fi
}
t_done() {
	echo "1..$T_N"
	[ "$T_N" -gt 0 ] && [ "$T_FAIL" -eq 0 ]
}

# knobs
knob() { cat "$HPC_SYSFS/$1" 2>/dev/null; }
knob_set() { echo "$2" > "$HPC_SYSFS/$1" 2>/dev/null; }
KNOB_DEFAULTS="high_util=85 low_util=65 max_prio=6 min_prio=4 global_weight=10
last_weight=90 heuristic=uniform min_wait_us=100 queue=rr timeslice_us=100000
emul_period_us=10000"
# knobs_restore: every knob to its ABI default (several passes: invariants)
knobs_restore() {
	for _p in 1 2 3; do
		for _kv in $KNOB_DEFAULTS; do knob_set "${_kv%%=*}" "${_kv#*=}"; done
	done
	knobs_non_default >/dev/null
}
# knobs_non_default: prints the knobs that differ from the default; status 1 if any
knobs_non_default() {
	_bad=
	for _kv in $KNOB_DEFAULTS; do
		[ -e "$HPC_SYSFS/${_kv%%=*}" ] || continue	# existence: 25/26-sysfs
		[ "$(knob "${_kv%%=*}")" = "${_kv#*=}" ] || _bad="$_bad ${_kv%%=*}=$(knob "${_kv%%=*}")"
	done
	echo "$_bad"
	[ -z "$_bad" ]
}
# hpc_tasks: pids whose /proc/<pid>/sched_hpc says "policy: hpc"
hpc_tasks() {
	for _f in /proc/[0-9]*/sched_hpc; do
		[ "$(head -n 1 "$_f" 2>/dev/null)" = "policy: hpc" ] || continue
		_p=${_f#/proc/}; echo "${_p%/sched_hpc}"
	done
}

# Run on its own (as the case "lib.sh"): test the helpers themselves.
if [ "${0##*/}" = lib.sh ]; then
	_t=$( (T_N=0 T_FAIL=0; t_ok a; t_fail b r; t_skip c d; t_done; echo "rc=$?") )
	t_is "lib: result lines and status" "$(echo "$_t" | tr '\n' '|')" \
		"ok 1 - a|not ok 2 - b # r|# SKIP c: d|1..2|rc=1|"
	if [ -d "$HPC_SYSFS" ]; then
		knobs_restore
		t_is "lib: knob reads a default" "$(knob low_util)" 65
		t_check "lib: knob_set writes a valid value" knob_set low_util 60
		t_is "lib: ... which reads back" "$(knob low_util)" 60
		t_check "lib: knobs_non_default sees the change" sh -c "! (. ${0}; knobs_non_default >/dev/null)"
		if knob_set low_util 99; then t_fail "lib: knob_set fails on an invalid value"; else t_ok "lib: knob_set fails on an invalid value"; fi
		t_check "lib: knobs_restore restores" knobs_restore
		t_is "lib: hpc_tasks lists none now" "$(hpc_tasks | wc -l)" 0
	else
		t_fail "lib: $HPC_SYSFS present" "kernel without SCHED_HPC?"
	fi
	t_done
	exit $?
fi
