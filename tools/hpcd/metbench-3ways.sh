#!/usr/bin/env bash
# MetBench under hpcd, three ways: baseline (SMT emulation, every worker at
# priority 4), Uniform and Adaptive (on the emulated SMT cores, hpcd
# --mode smt-emul). Needs root (cgroups), Open MPI, and the metbench and
# hpcmon targets built.
#
# usage: metbench-3ways.sh BUILD_DIR [OUT_DIR]
# env:   LOADS (250,1000,250,1000)  ITERATIONS (30)  WAIT (spin)
#        SWAP_EVERY (MetBenchVar: swap the pairs' loads every K iterations)
#        WAYS ("baseline uniform adaptive"; also "phase", the third
#        heuristic; "weight": hpcd --mode
#        weight on the real CPUs, every rank adopted (MetBench's master too);
#        "none": no hpcd, the monitor loaded; "plain": plain mpirun, neither
#        hpcd nor the monitor, what a user compares with)
#        GROUP_WEIGHT (10000: hpcd's tree against the rest of the machine;
#        empty: hpcd's default, which is the same)
#        HPCD_ARGS (extra hpcd options, e.g. "--mode weight")
#        MPIRUN_ARGS (extra mpirun options, e.g. "--mca mpi_yield_when_idle 0":
#        Open MPI's waits poll without yielding)
#        WAYS may also hold "static": hpcd without balancing, each worker
#        fixed at its STATIC_PRIOS entry (e.g. 4,6,4,6; hpcctl prio, as
#        soon as hpcd has adopted the rank)
#        PROGRAM, PROGRAM_ARGS, NP: run this MPI program instead of
#        MetBench, NP ranks (4), every rank a worker (rank r is P<r+1>);
#        it must take --json and --trace FILE and print/write MetBench's
#        forms (bench/btmz/btmz, bench/siesta/siesta-proxy do); LOADS,
#        ITERATIONS, WAIT and SWAP_EVERY are then unused
#        PROGRAM_OUTPUT=monitor: PROGRAM is any MPI program (the real NPB
#        BT-MZ, SIESTA ...): it gets no --json/--trace; W.json is made from
#        libhpcmon's per-rank report (HPCMON_REPORT), and there is no trace
#        BACKGROUND (a command run during each way, then stopped: e.g.
#        ordinary processes competing with the ranks)
#        EMUL_WAITS: how the emulated cores' ranks wait (tools/hpcd/README.md,
#        "Waits"): poll (default: the ranks sleep in their waits, libhpcmon's
#        HPCMON_BLOCKING_WAIT=1, and hpcd counts a waiting context as
#        polling, hpcd waits=poll: MPI's polling waits, every quota constant
#        while the ranks wait), model (they sleep and hpcd gives a waiting
#        context the SMT model's share, hpcd waits=model: the machine fitted
#        to the paper's tables, a quota change at every wait), sleep (they
#        sleep and their contexts idle: single-thread mode for the sibling)
#        or spin (MPI's own polling waits for real, HPCMON_BLOCKING_WAIT=0)
#        or auto
#        (libhpcmon's default, HPCMON_BLOCKING_WAIT=auto: sleeping waits
#        where the ranks outnumber the CPUs, MPI's own otherwise; what a user
#        gets, and what the "plain" way, without the monitor, does not)
# OUT_DIR (default: a temporary directory) keeps, per way, MetBench's JSON
# result and trace, hpcd's log and the workers' final priorities, in the
# form bench/metbench/report.py reads.
set -eu
build=${1:?usage: metbench-3ways.sh BUILD_DIR}
hpcd=$build/tools/hpcd/hpcd hpcctl=$build/tools/hpcd/hpcctl
mb=$build/bench/metbench/metbench mon=$build/tools/hpcmon/libhpcmon.so
[ -z "${PROGRAM:-}" ] || mb=$PROGRAM
for f in "$hpcd" "$hpcctl" "$mb" "$mon"; do
	[ -e "$f" ] || { echo "metbench-3ways: $f is not built" >&2; exit 1; }
done
# Whatever ends the script (a failed step, a signal), the hpcd it started,
# the static-priority helper and the background command end with it; hpcd's
# guardian then undoes what hpcd did.
d= sp= bg= job= tmpwork=
stop_pid() { # PID [SECONDS]: SIGTERM, then SIGKILL if still there after SECONDS (5)
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	kill "$1" 2>/dev/null
	for _ in $(seq $((${2:-5} * 20))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
cleanup() {
	stop_pid "$job"
	stop_pid "$sp"
	stop_pid "$bg"
	stop_pid "$d"
	[ -z "$tmpwork" ] || rm -rf "$tmpwork"
}
trap cleanup EXIT
# run CMD...: in the background and waited for, so that a signal to the
# script is handled at once (bash runs a trap only after its foreground job).
run() {
	"$@" &
	job=$!
	local st=0
	wait "$job" || st=$?
	job=
	return $st
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
if [ -n "${2:-}" ]; then
	work=$2
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/hpcd-mb.XXXXXX)
	tmpwork=$work
fi
export HPCD_CONTROL=$work/ctl HPCD_SOCKET=$work/mon HPCMON_QUIET=1
emul_waits=${EMUL_WAITS:-poll}
case $emul_waits in
poll) HPCMON_BLOCKING_WAIT=1 hpcd_waits=poll ;;
model) HPCMON_BLOCKING_WAIT=1 hpcd_waits=model ;;
sleep) HPCMON_BLOCKING_WAIT=1 hpcd_waits=sleep ;;
spin) HPCMON_BLOCKING_WAIT=0 hpcd_waits=poll ;;
auto) HPCMON_BLOCKING_WAIT=auto hpcd_waits=sleep ;;
*) echo "metbench-3ways: EMUL_WAITS must be poll, model, sleep, spin or auto, not '$emul_waits'" >&2; exit 2 ;;
esac
export HPCMON_BLOCKING_WAIT
root=$([ "$(id -u)" -eq 0 ] && echo --allow-run-as-root || true)
loads=${LOADS:-250,1000,250,1000} iters=${ITERATIONS:-30} wait=${WAIT:-spin}
nworkers=$(( $(tr -cd , <<<"$loads" | wc -c) + 1 ))
# MetBench: rank 0 is the master (not paired), workers are ranks 1..N.
# Another program: every rank is a worker, rank r is P<r+1>.
master=1 first=1
if [ -n "${PROGRAM:-}" ]; then
	nworkers=${NP:-4} master=0 first=0
	case $nworkers in '' | *[!0-9]* | 0) echo "metbench-3ways: NP must be a whole number >= 1" >&2; exit 2 ;; esac
fi
ways=${WAYS:-baseline uniform adaptive}
for way in $ways; do
	case $way in
	baseline | static | uniform | adaptive | phase | weight | none | plain) ;;
	*) echo "metbench-3ways: unknown way '$way' (baseline static uniform adaptive phase weight none plain)" >&2; exit 2 ;;
	esac
	if [ "$way" = static ]; then
		IFS=, read -r -a sprio <<<"${STATIC_PRIOS:-}"
		if [ "${#sprio[@]}" -ne "$nworkers" ]; then
			echo "metbench-3ways: way static needs STATIC_PRIOS with $nworkers priorities" >&2
			exit 2
		fi
	fi
done
# static_prios LOG: fix each worker's priority once hpcd has adopted it.
static_prios() {
	local log=$1 r p pid left
	for _ in $(seq 400); do
		left=0
		for r in $(seq 0 $((nworkers - 1))); do
			[ -e "$work/static.set.$r" ] && continue
			pid=$(awk -v r=$((r + first)) '$2 == "managing" && $7 == "rank" && $8 == r { print $3 }' "$log" | tail -n 1)
			if [ -n "$pid" ] && "$hpcctl" --backend hpcd prio "$pid" "${sprio[$r]}" >"$work/static.msg" 2>&1; then
				: >"$work/static.set.$r"
			else
				left=1
			fi
		done
		[ "$left" -eq 0 ] && break
		sleep 0.025
	done
	if [ "$left" -ne 0 ]; then
		echo "  (static: not every rank was adopted in time: $(cat "$work/static.msg" 2>/dev/null))" >&2
		return 0
	fi
	# Until hpcd exits: a rank whose logged priority is not its entry
	# (re-adopted, or the request raced its adoption) gets it again.
	while kill -0 "$d" 2>/dev/null; do
		sleep 0.5
		for r in $(seq 0 $((nworkers - 1))); do
			read -r pid p < <(awk -v r=$((r + first)) '$2 == "managing" && $7 == "rank" && $8 == r { pid = $3 }
				$3 == "rank" && $4 == r && $5 == "iteration" { p = $NF } END { print pid, p }' "$log")
			[ -z "$p" ] || [ "$p" = "${sprio[$r]}" ] ||
				"$hpcctl" --backend hpcd prio "$pid" "${sprio[$r]}" >/dev/null 2>&1 || true
		done
	done
}
swap=()
[ -z "${SWAP_EVERY:-}" ] || swap=(--swap-every "$SWAP_EVERY")
gw=()
[ -z "${GROUP_WEIGHT-10000}" ] || gw=(--group-weight "${GROUP_WEIGHT-10000}")

case $emul_waits in
poll) echo "waits: poll (the ranks sleep in their waits; hpcd counts a waiting context as polling, as MPI's waits do)" ;;
model) echo "waits: model (the ranks sleep in their waits; hpcd gives a waiting context the SMT model's share: it releases the core part of the time)" ;;
sleep) echo "waits: sleep (the ranks sleep in their waits and their contexts idle: the sibling runs alone)" ;;
spin) echo "waits: spin (MPI's own polling waits; a rank out of quota holds up the collective until its next period)" ;;
auto) echo "waits: auto (libhpcmon's default: the ranks sleep in their waits where they outnumber the CPUs, else MPI's own waits)" ;;
esac
printf '%-9s %10s   %s\n' way "time (s)" "final priority per worker (P1..P$nworkers)"
for way in $ways; do
	case $way in
	baseline | static) set_=(--mode smt-emul --set balance=off) ;;
	weight) set_=(--mode weight) ;;
	none | plain) set_=() ;;
	*) set_=(--mode smt-emul --set "heuristic=$way") ;;
	esac
	: >"$work/$way.log"
	# plain: neither hpcd nor the monitor.
	pre=(-x LD_PRELOAD="$mon")
	[ "$way" != plain ] || pre=()
	if [ "$way" != none ] && [ "$way" != plain ]; then
		# Rank 0 is MetBench's master: not paired on the emulated cores
		# (weight mode adopts it: with next to no work, it gets next to
		# no CPU while it waits). hpcd exits after the last BYE.
		ign=()
		[ "$master" -eq 0 ] || [ "$way" = weight ] || ign=(--set ignore_ranks=0)
		# shellcheck disable=SC2086
		"$hpcd" "${set_[@]}" "${ign[@]}" --set "waits=$hpcd_waits" \
			--exit-when-idle "${gw[@]}" -v \
			${HPCD_ARGS:-} 2>"$work/$way.log" &
		d=$!
		for _ in $(seq 100); do "$hpcctl" --backend hpcd status >/dev/null 2>&1 && break; sleep 0.05; done
	fi
	sp=
	if [ "$way" = static ]; then
		rm -f "$work"/static.set.*
		# At the top nice level: the ranks' cgroups outweigh ordinary
		# processes, and the priorities must land before the run is over.
		renice_top() { renice -n -20 -p "$BASHPID" >/dev/null 2>&1 || true; }
		(renice_top; static_prios "$work/$way.log") &
		sp=$!
	fi
	bg=
	if [ -n "${BACKGROUND:-}" ]; then
		# shellcheck disable=SC2086
		${BACKGROUND} >"$work/$way.background" 2>&1 &
		bg=$!
	fi
	# "none": the monitor is loaded all the same (nobody reads its records).
	if [ -n "${PROGRAM:-}" ] && [ "${PROGRAM_OUTPUT:-}" = monitor ]; then
		# shellcheck disable=SC2086
		HPCMON_REPORT=$work/$way.monitor.json run mpirun --oversubscribe $root --bind-to none \
			-np "$nworkers" -x LD_PRELOAD="$mon" -x HPCD_SOCKET -x HPCMON_QUIET \
			-x HPCMON_BLOCKING_WAIT -x HPCMON_REPORT "$mb" ${PROGRAM_ARGS:-} \
			>"$work/$way.out"
		if [ ! -s "$work/$way.monitor.json" ]; then
			echo "metbench-3ways: $mb wrote no monitor report ($work/$way.monitor.json):" \
				"libhpcmon saw no MPI_Finalize of it (is it an MPI program linked with" \
				"the MPI libhpcmon was built for? does the monitor wrap its MPI calls?)" >&2
			exit 1
		fi
		python3 - "$work/$way.monitor.json" >"$work/$way.json" <<-'PY'
			import json, sys
			m = json.load(open(sys.argv[1]))
			ranks = [{"rank": r["rank"], "proc": "P%d" % (r["rank"] + 1),
			          "compute_pct": r["compute_pct"], "compute_s": r["compute_ns"] / 1e9,
			          "wait_s": r["wait_ns"] / 1e9} for r in m["ranks"]]
			print(json.dumps({"program": "monitor", "ranks": ranks,
			                  "total_time_s": max(r["wall_ns"] for r in m["ranks"]) / 1e9}))
		PY
	elif [ -n "${PROGRAM:-}" ]; then
		# shellcheck disable=SC2086
		run mpirun --oversubscribe $root --bind-to none -np "$nworkers" \
			"${pre[@]}" -x HPCD_SOCKET -x HPCMON_QUIET -x HPCMON_BLOCKING_WAIT ${MPIRUN_ARGS:-} \
			"$mb" ${PROGRAM_ARGS:-} --json --trace "$work/$way.csv" >"$work/$way.json"
	else
		run mpirun --oversubscribe $root --bind-to none -np $((nworkers + 1)) \
			"${pre[@]}" -x HPCD_SOCKET -x HPCMON_QUIET -x HPCMON_BLOCKING_WAIT ${MPIRUN_ARGS:-} \
			"$mb" --loads "$loads" --iterations "$iters" --wait "$wait" "${swap[@]}" --json \
			--trace "$work/$way.csv" >"$work/$way.json"
	fi
	[ -z "$bg" ] || { kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null || true; }
	bg=
	[ -z "$sp" ] || wait "$sp" || true
	sp=
	rm -f "$work"/static.set.*
	# hpcd exits after the last rank's BYE; one that adopted no rank (no
	# monitor in the program) is told to.
	if [ -n "$d" ]; then
		for _ in $(seq 100); do kill -0 "$d" 2>/dev/null || break; sleep 0.05; done
		stop_pid "$d" 10
		d=
	fi
	t=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["total_time_s"])' "$work/$way.json")
	# The last decision logged for each rank.
	prios=$(awk '/ rank [0-9]+ iteration / { for (i = 1; i <= NF; i++) if ($i == "rank") r = $(i + 1); p[r] = $NF }
		END { for (r = '"$first"'; r < '"$first + $nworkers"'; r++) printf "%s ", (r in p ? p[r] : "-") }' "$work/$way.log")
	printf '%-9s %10s   %s\n' "$way" "$t" "$prios"
	n=1
	: >"$work/$way.prio"
	for p in $prios; do echo "P$n $p" >>"$work/$way.prio"; n=$((n + 1)); done
	grep -h "emulating" "$work/$way.log" | tail -n 1 | sed 's/^/  /'
	case $way in baseline | none | plain) ;; *)
		[ -n "${prios//[ -]/}" ] || echo "  (no iteration reached hpcd: see $work/$way.log)" ;;
	esac
done
