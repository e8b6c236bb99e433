#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hpcd at node scale: its own CPU time while it manages N synthetic iterating
# tasks (hpcd-spin: compute SCALE_RUN_MS of CPU time, sleep SCALE_WAIT_MS, in
# a loop), for each N of SCALE_TASKS, in weight mode (the default: hpcd only
# watches while no rank needs a weight) and in smt-emul mode (quotas: hpcd
# samples every --sample-ms), each with each event source of SCALE_SOURCES
# side by side (hpcd --source: bpf, the scheduler's tracepoints; proc, /proc
# sampled every --sample-ms, 2 ms, or 50 ms while hpcd only watches; auto).
# Then the same for 16 tasks whose waits (SCALE_SHORT_WAIT_MS, 1 ms) are
# shorter than the 2 ms sampling period. Oversubscribed on purpose. Each row,
# over SCALE_SECS from 2 s after hpcd managed every task (the boundaries: over
# the SCALE_SECS after that):
#   set-up s       seconds from hpcd's start until it managed every task
#   hpcd %CPU      hpcd's own CPU time (the run time in /proc/<hpcd>/schedstat,
#                  ns) as % of one CPU: the main measure. The boundaries below
#                  are measured in a second window as long, after this one:
#                  dumping hpcd's iteration log costs hpcd CPU time too.
#   tasks % asked  the tasks' CPU time (theirs, likewise) as % of what they ask
#                  for, N * RUN / (RUN + WAIT) (below 100: the CPUs were short,
#                  or the emulation held them back)
#   err med/p99 µs how far the sleeps and wake-ups hpcd detected are from the
#                  true ones: each task stamps CLOCK_MONOTONIC just before each
#                  sleep, the time the sleep is due to end (it sleeps until
#                  then: runnable again at that time) and just after it
#                  (hpcd-spin's LOGFILE); hpcd's iteration events, read from
#                  its control socket through the window, say where it saw
#                  each wait (at_ns - wait_ns to at_ns). Each detected boundary
#                  in the window against the nearest true one of the same kind
#                  and task (a sleep: the stamp before it; a wake-up: the time
#                  it was due): median and 99th percentile of |detected - true|
#                  (bench/hpcd-boundaries.py). Where the CPUs are short, a task
#                  runs again, and stamps, well after it woke: that wait for a
#                  CPU, and the detected wake-ups against these later stamps,
#                  are in OUT_DIR/boundaries-*.txt.
#   waits seen %   of the tasks' waits in the window, those hpcd saw: one
#                  detected wait with its sleep and its wake-up each within half
#                  the true wait of the true ones
#   load average   /proc/loadavg's first figure at the end of the window
# A row that could not be measured says why; a source hpcd could not use
# (--source bpf on a kernel without it: hpcd exits saying so; or it ran with
# another) is such a row. Each row's matching is in OUT_DIR/boundaries-*.txt,
# hpcd's log in OUT_DIR/hpcd-*.log. Nothing here asserts a time; the table
# says what one run measured.
#
# usage: hpcd-scale.sh BUILD_DIR [OUT_DIR]        (as root: hpcd makes cgroups)
# env:   SCALE_TASKS (16 64 256)  SCALE_MODES (weight smt-emul)  SCALE_SECS (10)
#        SCALE_SOURCES (bpf proc; or auto)  SCALE_RUN_MS (2)  SCALE_WAIT_MS (98)
#        SCALE_SHORT_WAIT_MS (1; 0: no short-wait rows)  SCALE_SETUP_S (120: how
#        long hpcd may take to manage every task before the row says it did not)
set -u
build=$(cd "${1:?usage: hpcd-scale.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$build/bench-scale}
hpcd=$build/tools/hpcd/hpcd spin=$build/tools/hpcd/hpcd-spin hpcctl=$build/tools/hpcd/hpcctl
bnd=$(cd "$(dirname "$0")" && pwd)/hpcd-boundaries.py
tasks=${SCALE_TASKS:-16 64 256} modes=${SCALE_MODES:-weight smt-emul}
sources=${SCALE_SOURCES:-bpf proc}
secs=${SCALE_SECS:-10} run_ms=${SCALE_RUN_MS:-2} wait_ms=${SCALE_WAIT_MS:-98}
short_ms=${SCALE_SHORT_WAIT_MS:-1} short_n=16
warm=2 # seconds before the window, once hpcd manages every task
late=1 # seconds after it, for hpcd to report the window's last waits
setup_max=${SCALE_SETUP_S:-120}

die() { echo "hpcd-scale: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (hpcd creates cgroups)"
if [ ! -x "$hpcd" ] || [ ! -x "$spin" ] || [ ! -x "$hpcctl" ]; then die "no $hpcd, $spin or $hpcctl (make build)"; fi
[ -r "$bnd" ] || die "no $bnd"
for n in $tasks; do
	if ! [[ $n =~ ^[1-9][0-9]*$ ]] || [ "$n" -gt 1024 ]; then die "SCALE_TASKS: '$n' is not 1..1024"; fi
done
for m in $modes; do
	case $m in weight | smt-emul) ;; *) die "SCALE_MODES: '$m' is not weight or smt-emul" ;; esac
done
[ -n "${sources// /}" ] || die "SCALE_SOURCES: empty (bpf, proc or auto)"
for s in $sources; do
	case $s in bpf | proc | auto) ;; *) die "SCALE_SOURCES: '$s' is not bpf, proc or auto" ;; esac
done
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "SCALE_SECS: '$secs' is not a positive whole number of seconds"
[[ $setup_max =~ ^[1-9][0-9]*$ ]] || die "SCALE_SETUP_S: '$setup_max' is not a positive whole number of seconds"
for v in "SCALE_RUN_MS:$run_ms" "SCALE_WAIT_MS:$wait_ms"; do
	if ! [[ ${v#*:} =~ ^[0-9]*\.?[0-9]+$ ]] || ! awk -v x="${v#*:}" 'BEGIN { exit !(x > 0) }'; then
		die "${v%%:*}: '${v#*:}' is not a positive number of milliseconds"
	fi
done
[[ $short_ms =~ ^(0|[1-9][0-9]*)$ ]] || die "SCALE_SHORT_WAIT_MS: '$short_ms' is not a whole number of milliseconds (0: none)"
mkdir -p "$out" || die "cannot make $out"
work=$(mktemp -d) || die "mktemp failed"

pids=() hp='' dp=''
# shellcheck disable=SC2317  # called by the trap
cleanup() {
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	[ -n "$dp" ] && kill "$dp" 2>/dev/null
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

# status: "TASKS SOURCE", how many tasks hpcd manages now and where their
# boundaries come from (its control socket; a daemon too busy to answer
# within 10 s says nothing).
status() {
	HPCD_CONTROL=$work/ctl timeout 10 "$hpcctl" --backend hpcd status --json 2>/dev/null |
		/usr/bin/python3 -c 'import json, sys; s = json.load(sys.stdin)
print(s["tasks"], s.get("source", "?"))' 2>/dev/null
}

# mono: CLOCK_MONOTONIC now, ns (the clock of the tasks' and hpcd's stamps).
mono() { /usr/bin/python3 "$bnd" now; }

row() { printf '%-9s %6s %-8s %8s %10s %14s %10s %10s %12s  %s\n' "$@"; }
# unmeasured MODE N SOURCE SETUP WHY: a row that says why it has no numbers.
unmeasured() { printf '%-9s %6s %-8s %8s  %s\n' "$@"; }

# one MODE N SOURCE WAIT_MS: hpcd managing N tasks in MODE, with the event
# source SOURCE, the tasks sleeping WAIT_MS; prints a table row.
one() {
	local mode=$1 n=$2 src=$3 wait=$4
	local i a b t0 t1 ta tb ts m0 m1 k=0 got='' setup st col cpu asked fields load
	local tag="$mode-$n-$src-w$wait" args=() specs=()
	local log="$out/hpcd-$tag.log" ev="$work/events.jsonl" logs="$work/spin"
	rm -rf "$logs" "$ev"
	mkdir -p "$logs"
	pids=()
	for ((i = 0; i < n; i++)); do
		"$spin" 3600 "$run_ms" "$wait" "$logs/$i" >/dev/null &
		pids+=($!)
		args+=(--pid $!)
		specs+=("$!=$logs/$i")
	done
	ts=$(date +%s%N)
	"$hpcd" --mode "$mode" --source "$src" --no-adopt --exit-when-idle --control "$work/ctl" \
		--monitor "$work/mon" "${args[@]}" >"$log" 2>&1 &
	hp=$!
	# until hpcd manages every task (at most SCALE_SETUP_S)
	while kill -0 "$hp" 2>/dev/null && [ "$(date +%s%N)" -lt $((ts + setup_max * 1000000000)) ]; do
		read -r k got <<<"$(status)"
		[ "${k:-0}" -ge "$n" ] && break
		sleep 0.2
	done
	setup=$(awk -v a="$ts" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	col=$src
	[ "$src" = auto ] && col="auto=${got:-?}"
	if ! kill -0 "$hp" 2>/dev/null; then
		unmeasured "$mode" "$n" "$col" ">$setup" "hpcd ended: $(tail -n 1 "$log") (log $log)"
	elif [ "${k:-0}" -lt "$n" ]; then
		unmeasured "$mode" "$n" "$col" ">$setup" \
			"hpcd managed ${k:-no} task(s) of $n after $setup s (log $log)"
	elif [ "$src" != auto ] && [ "$got" != "$src" ]; then
		unmeasured "$mode" "$n" "$col" "$setup" \
			"hpcd, asked for --source $src, uses '${got:-?}' (log $log)"
	else
		sleep "$warm"
		a=$(run_ns "$hp") ta=$(run_ns "${pids[@]}") t0=$(date +%s%N)
		sleep "$secs"
		b=$(run_ns "$hp") tb=$(run_ns "${pids[@]}") t1=$(date +%s%N)
		load=$(cut -d' ' -f1 /proc/loadavg)
		HPCD_CONTROL=$work/ctl timeout 10 "$hpcctl" --backend hpcd status --json \
			>"$out/status-$tag.json" 2>/dev/null
		# then, in a second window as long, hpcd's iteration events, read
		# through it (its log is a ring): answering them costs hpcd CPU
		# time, which the first window leaves out
		# (at nice -20, 5 times a second: hundreds of starved tasks must not
		# keep it from reading before the ring wraps)
		nice -n -20 /usr/bin/python3 "$bnd" dump --every 0.2 "$work/ctl" "$ev" 2>>"$log" &
		dp=$!
		m0=$(mono)
		sleep "$secs"
		m1=$(mono)
		sleep "$late"
		kill "$dp" 2>/dev/null
		wait "$dp" 2>/dev/null
		dp=''
		if [ -z "$a" ] || [ -z "$b" ] || [ -z "$ta" ] || [ -z "$tb" ]; then
			unmeasured "$mode" "$n" "$col" "$setup" "hpcd or a task ended (log $log)"
		else
			cpu=$(awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" \
				'BEGIN { printf "%.2f", 100 * (b - a) / (t1 - t0) }')
			asked=$(awk -v a="$ta" -v b="$tb" -v t0="$t0" -v t1="$t1" -v n="$n" -v r="$run_ms" \
				-v w="$wait" 'BEGIN { printf "%.0f", 100 * (b - a) / (n * (t1 - t0) * r / (r + w)) }')
			st=measured
		fi
	fi
	# the tasks write their stamps as they end
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	if [ "${st:-}" = measured ]; then
		/usr/bin/python3 "$bnd" match --from "$m0" --to "$m1" "$ev" "${specs[@]}" \
			>"$out/boundaries-$tag.txt" 2>&1
		fields=$(sed -n 's/^fields: //p' "$out/boundaries-$tag.txt")
		read -r -a fields <<<"${fields:-? ? ?}"
		row "$mode" "$n" "$col" "$setup" "$cpu" "$asked" "${fields[@]:0:3}" "$load"
	fi
	# hpcd exits when its last task has gone; give it 10 s
	for ((i = 0; i < 100; i++)); do
		kill -0 "$hp" 2>/dev/null || break
		sleep 0.1
	done
	kill "$hp" 2>/dev/null && echo "hpcd-scale: hpcd ($mode, $n tasks, $src) still ran 10 s after its tasks" >&2
	wait "$hp" 2>/dev/null
	hp='' pids=()
	rm -rf "$logs" "$ev"
}

header() {
	# µ is two bytes: its columns one wider
	printf '%-9s %6s %-8s %8s %10s %14s %11s %11s %12s  %s\n' mode tasks source "set-up s" \
		"hpcd %CPU" "tasks % asked" "err med µs" "err p99 µs" "waits seen %" "load average"
}

{
	echo "hpcd at scale: N tasks computing $run_ms ms and sleeping $wait_ms ms in a loop, on $(nproc) CPUs;"
	echo "set-up: seconds until hpcd managed every task; then, over $secs s (after $warm s), hpcd's"
	echo "CPU time as % of one CPU, and the tasks' CPU time as % of what they ask for (below 100:"
	echo "the CPUs were short, or the emulation held them back); then, over the next $secs s, the"
	echo "sleeps and wake-ups hpcd detected against the tasks' own (a sleep's start, its due end):"
	echo "|detected - true|, median and p99, and the fraction of the tasks' waits it saw (within"
	echo "half the wait); source: hpcd --source"
	header
	for n in $tasks; do
		for m in $modes; do
			for s in $sources; do
				one "$m" "$n" "$s" "$wait_ms"
			done
		done
	done
	if [ "$short_ms" -gt 0 ]; then
		echo
		echo "short waits: $short_n tasks computing $run_ms ms and sleeping $short_ms ms (/proc is sampled"
		echo "every 2 ms, every 50 ms while hpcd only watches); the same columns"
		header
		for m in $modes; do
			for s in $sources; do
				one "$m" "$short_n" "$s" "$short_ms"
			done
		done
	fi
} | tee "$out/summary.txt"
