#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hpcd at node scale: its own CPU time while it manages N synthetic iterating
# tasks (hpcd-spin: compute SCALE_RUN_MS of CPU time, sleep SCALE_WAIT_MS, in
# a loop), for each N of SCALE_TASKS, in weight mode (the default: hpcd only
# watches while no rank needs a weight) and in smt-emul mode (quotas: hpcd
# samples every --sample-ms). Oversubscribed on purpose: the measure is
# hpcd's own CPU time (the run time in /proc/<hpcd>/schedstat, ns) over
# SCALE_SECS, as % of one CPU, and the tasks' (theirs, likewise).
# Nothing here asserts a time; the table says what one run measured.
#
# usage: hpcd-scale.sh BUILD_DIR [OUT_DIR]        (as root: hpcd makes cgroups)
# env:   SCALE_TASKS (16 64 256)  SCALE_MODES (weight smt-emul)  SCALE_SECS (10)
#        SCALE_RUN_MS (2)  SCALE_WAIT_MS (98)  SCALE_SETUP_S (120: how long hpcd
#        may take to manage every task before the row says it did not)
set -u
build=$(cd "${1:?usage: hpcd-scale.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$build/bench-scale}
hpcd=$build/tools/hpcd/hpcd spin=$build/tools/hpcd/hpcd-spin hpcctl=$build/tools/hpcd/hpcctl
tasks=${SCALE_TASKS:-16 64 256} modes=${SCALE_MODES:-weight smt-emul}
secs=${SCALE_SECS:-10} run_ms=${SCALE_RUN_MS:-2} wait_ms=${SCALE_WAIT_MS:-98}
warm=2 # seconds before the window, once hpcd manages every task
setup_max=${SCALE_SETUP_S:-120}

die() { echo "hpcd-scale: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (hpcd creates cgroups)"
if [ ! -x "$hpcd" ] || [ ! -x "$spin" ] || [ ! -x "$hpcctl" ]; then die "no $hpcd, $spin or $hpcctl (make build)"; fi
for n in $tasks; do
	if ! [[ $n =~ ^[1-9][0-9]*$ ]] || [ "$n" -gt 1024 ]; then die "SCALE_TASKS: '$n' is not 1..1024"; fi
done
for m in $modes; do
	case $m in weight | smt-emul) ;; *) die "SCALE_MODES: '$m' is not weight or smt-emul" ;; esac
done
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "SCALE_SECS: '$secs' is not a positive whole number of seconds"
[[ $setup_max =~ ^[1-9][0-9]*$ ]] || die "SCALE_SETUP_S: '$setup_max' is not a positive whole number of seconds"
mkdir -p "$out" || die "cannot make $out"
work=$(mktemp -d) || die "mktemp failed"

pids=() hp=''
# shellcheck disable=SC2317  # called by the trap
cleanup() {
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_ns PID...: the tasks' run time so far (ns, summed), from
# /proc/PID/schedstat; empty if one has gone.
run_ns() {
	local p r sum=0
	for p in "$@"; do
		read -r r _ <"/proc/$p/schedstat" 2>/dev/null || return
		sum=$((sum + r))
	done
	echo "$sum"
}

# managed: how many tasks hpcd manages now (its control socket; a daemon too
# busy to answer within 10 s says nothing).
managed() {
	HPCD_CONTROL=$work/ctl timeout 10 "$hpcctl" --backend hpcd status --json 2>/dev/null |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["tasks"])' 2>/dev/null
}

# one MODE N: hpcd managing N tasks in MODE; prints a table row.
one() {
	local mode=$1 n=$2
	local i a b t0 t1 ta tb ts k=0 setup log="$out/hpcd-$mode-$n.log" args=()
	pids=()
	for ((i = 0; i < n; i++)); do
		"$spin" 3600 "$run_ms" "$wait_ms" >/dev/null &
		pids+=($!)
		args+=(--pid $!)
	done
	ts=$(date +%s%N)
	"$hpcd" --mode "$mode" --no-adopt --exit-when-idle --control "$work/ctl" \
		--monitor "$work/mon" "${args[@]}" >"$log" 2>&1 &
	hp=$!
	# until hpcd manages every task (at most SCALE_SETUP_S)
	while kill -0 "$hp" 2>/dev/null && [ "$(date +%s%N)" -lt $((ts + setup_max * 1000000000)) ]; do
		k=$(managed)
		[ "${k:-0}" -ge "$n" ] && break
		sleep 0.2
	done
	setup=$(awk -v a="$ts" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	if [ "${k:-0}" -lt "$n" ]; then
		printf '%-9s %6s %8s  %s\n' "$mode" "$n" ">$setup" \
			"hpcd managed ${k:-no} task(s) of $n after $setup s (log $log)"
	else
		sleep "$warm"
		a=$(run_ns "$hp") ta=$(run_ns "${pids[@]}") t0=$(date +%s%N)
		sleep "$secs"
		b=$(run_ns "$hp") tb=$(run_ns "${pids[@]}") t1=$(date +%s%N)
		if [ -z "$a" ] || [ -z "$b" ] || [ -z "$ta" ] || [ -z "$tb" ]; then
			printf '%-9s %6s %8s  %s\n' "$mode" "$n" "$setup" "hpcd or a task ended (log $log)"
		else
			printf '%-9s %6s %8s %10s %14s  %s\n' "$mode" "$n" "$setup" \
				"$(awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" \
					'BEGIN { printf "%.2f", 100 * (b - a) / (t1 - t0) }')" \
				"$(awk -v a="$ta" -v b="$tb" -v t0="$t0" -v t1="$t1" -v n="$n" -v r="$run_ms" \
					-v w="$wait_ms" 'BEGIN { printf "%.0f", 100 * (b - a) / (n * (t1 - t0) * r / (r + w)) }')" \
				"$(cut -d' ' -f1 /proc/loadavg)"
		fi
	fi
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	# hpcd exits when its last task has gone; give it 10 s
	for ((i = 0; i < 100; i++)); do
		kill -0 "$hp" 2>/dev/null || break
		sleep 0.1
	done
	kill "$hp" 2>/dev/null && echo "hpcd-scale: hpcd ($mode, $n tasks) still ran 10 s after its tasks" >&2
	wait "$hp" 2>/dev/null
	hp='' pids=()
}

{
	echo "hpcd at scale: N tasks computing $run_ms ms and sleeping $wait_ms ms in a loop, on $(nproc) CPUs;"
	echo "set-up: seconds until hpcd managed every task; then, over $secs s (after $warm s), hpcd's"
	echo "CPU time as % of one CPU, and the tasks' CPU time as % of what they ask for (below 100:"
	echo "the CPUs were short, or the emulation held them back)"
	printf '%-9s %6s %8s %10s %14s  %s\n' mode tasks "set-up s" "hpcd %CPU" "tasks % asked" "load average"
	for n in $tasks; do
		for m in $modes; do
			one "$m" "$n"
		done
	done
} | tee "$out/summary.txt"
