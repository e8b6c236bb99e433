#!/usr/bin/env bash
# make bench: what hpcd gains and what it costs, measured side by side in one
# run on this machine and printed as ratios (nothing here asserts a time).
#
#  1. MetBench and MetBenchVar (k = 15): baseline, hpcd Uniform, Adaptive and
#     Phase (the third heuristic), one after the other in each round
#     (tools/hpcd/metbench-3ways.sh; the other MetBench entries: baseline,
#     Uniform, Adaptive),
#     BENCH_REPEAT rounds; medians, gains over the baseline, and those gains
#     as % of what the simulator (hpcsim, the same workload) gains; MetBench
#     with the emulated machine's waits polling (EMUL_WAITS=poll, as make run),
#     the fitted SMT model's waiting context (model, beside the simulator's
#     modelled waits), sleeping (sleep: the model sees nothing to gain) and
#     MPI's own polling for real (spin);
#  2. hpcd's CPU time per managed task (its /proc/self/stat when it exits);
#  3. libhpcmon's wall time per MPI call against no monitor (hpcmon-overhead);
#  4. weight mode on a balanced MetBench against no hpcd at all (hpcd's tree
#     at its default weight: as much CPU as the tasks had without it);
#  5. a balanced application (bench/balanced: BT-MZ class A's balance, 4
#     ranks of nearly equal work with per-step noise, neighbour exchange;
#     its Fortran build, monitored through libhpcmon's Fortran wrappers):
#     baseline, Uniform, Adaptive; each heuristic must lose nothing (its
#     ratio to the baseline at most 1.02).
#  6. what a user compares: the same program under plain mpirun (neither
#     hpcd nor the monitor) and under hpcd in each mode, every way's ratio to
#     plain mpirun in the same round (rounds alternate the order of the
#     ways), with libhpcmon's default waits and hpcd's tree at its default
#     weight: the balanced application with as many ranks as CPUs and with
#     twice as many, and MetBench (loads BENCH_LOADS, a master and 4
#     workers) with Open MPI's yielding waits (its default when ranks
#     outnumber CPUs) and with polling ones (--mca mpi_yield_when_idle 0).
#     Ways: plain, weight (the default mode), and the SMT emulation
#     (smt-emul) with every rank at priority 4, Uniform and Adaptive.
#
# usage: bench.sh BUILD_DIR [OUT_DIR]        (as root: hpcd creates cgroups)
# env:   BENCH_REPEAT (5)  BENCH_LOADS (500,2000,500,2000)  BENCH_ITERATIONS (20)
#        BENCH_K (15)  BENCH_BALANCED (1250,1250,1250,1250)  BENCH_CALLS (200000)
#        BENCH_APP_ARGS (--steps 200 --work 4000 --noise 5: the balanced
#        application's)  BENCH_REAL_ARGS (--steps 200 --work 2000 --noise 5:
#        the balanced application's in 6.)
#        BENCH_ONLY: run only these entries (space-separated: metbench
#        metbenchvar metbench-model metbench-sleep metbench-spin balanced balanced-app
#        overhead real-balanced real-balanced-over real-imbalanced-yield
#        real-imbalanced-poll); default all
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: bench.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/bench-results}
reps=${BENCH_REPEAT:-5} loads=${BENCH_LOADS:-500,2000,500,2000} iters=${BENCH_ITERATIONS:-20}
k=${BENCH_K:-15} balanced=${BENCH_BALANCED:-1250,1250,1250,1250} calls=${BENCH_CALLS:-200000}
app_args=${BENCH_APP_ARGS:---steps 200 --work 4000 --noise 5} only=${BENCH_ONLY:-}
real_args=${BENCH_REAL_ARGS:---steps 200 --work 2000 --noise 5}
# The Fortran build (use mpi), as BT-MZ is written; the C one where no
# Fortran compiler was found.
app=$build/bench/balanced/balanced-f
[ -x "$app" ] || app=$build/bench/balanced/balanced
for e in $only; do
	case $e in
	metbench | metbenchvar | metbench-model | metbench-sleep | metbench-spin | balanced | balanced-app | overhead) ;;
	real-balanced | real-balanced-over | real-imbalanced-yield | real-imbalanced-poll) ;;
	*) echo "bench: BENCH_ONLY: unknown entry '$e'" >&2; exit 1 ;;
	esac
done
# want ENTRY: whether this run includes it.
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
ways3=$top/tools/hpcd/metbench-3ways.sh
ovh=$build/tools/hpcmon/hpcmon-overhead mon=$build/tools/hpcmon/libhpcmon.so
for f in "$ovh" "$mon" "$build/tools/sim/hpcsim" "$app"; do
	[ -e "$f" ] || { echo "bench: $f is not built" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (hpcd creates cgroups)" >&2; exit 1; }
case $reps in '' | *[!0-9]* | 0) echo "bench: BENCH_REPEAT must be a whole number >= 1" >&2; exit 1 ;; esac
root=$([ "$(id -u)" -eq 0 ] && echo --allow-run-as-root || true)

# Start afresh, but never remove a directory this script did not make.
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -e "$out/.hpcsched-bench" ]; then
	echo "bench: $out exists and is not a bench output directory: not removing it" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"
: >"$out/.hpcsched-bench"
t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== make bench: $(nproc) CPUs, $reps round(s); results in $out"
# ways BENCH ROUND [VAR=VALUE...]: one round of metbench-3ways.sh; its
# output (and MetBench's calibration lines) kept in OUT_DIR/BENCH-ROUND.txt.
ways() {
	local b=$1 r=$2
	shift 2
	if ! env "$@" "$ways3" "$build" "$out/$b/$r" >"$out/$b-$r.txt" 2>&1; then
		echo; cat "$out/$b-$r.txt" >&2
		echo "bench: $b round $r failed (see $out/$b/$r)" >&2
		exit 1
	fi
	printf ' %s' "$b"
}
# MetBench and MetBenchVar: the baseline and every heuristic.
heur="baseline uniform adaptive phase"
for r in $(seq "$reps"); do
	printf 'round %d/%d:' "$r" "$reps"
	! want metbench || ways metbench "$r" WAYS="$heur" LOADS="$loads" ITERATIONS="$iters"
	! want metbenchvar || ways metbenchvar "$r" WAYS="$heur" LOADS="$loads" ITERATIONS=$((3 * k)) \
		SWAP_EVERY="$k"
	! want metbench-model || ways metbench-model "$r" LOADS="$loads" ITERATIONS="$iters" EMUL_WAITS=model
	! want metbench-sleep || ways metbench-sleep "$r" LOADS="$loads" ITERATIONS="$iters" EMUL_WAITS=sleep
	! want metbench-spin || ways metbench-spin "$r" LOADS="$loads" ITERATIONS="$iters" EMUL_WAITS=spin
	! want balanced || ways balanced "$r" WAYS="none weight" LOADS="$balanced" ITERATIONS="$iters" GROUP_WEIGHT=
	! want balanced-app || ways balanced-app "$r" PROGRAM="$app" NP=4 PROGRAM_ARGS="$app_args"
	# 6. against plain mpirun; odd rounds in one order, even ones reversed.
	rw="plain weight baseline uniform adaptive"
	[ $((r % 2)) -eq 1 ] || rw="adaptive uniform baseline weight plain"
	real=(WAYS="$rw" EMUL_WAITS=auto GROUP_WEIGHT=)
	! want real-balanced || ways real-balanced "$r" "${real[@]}" PROGRAM="$app" NP="$(nproc)" \
		PROGRAM_ARGS="$real_args"
	! want real-balanced-over || ways real-balanced-over "$r" "${real[@]}" PROGRAM="$app" \
		NP=$((2 * $(nproc))) PROGRAM_ARGS="$real_args"
	! want real-imbalanced-yield || ways real-imbalanced-yield "$r" "${real[@]}" LOADS="$loads" \
		ITERATIONS="$iters" WAIT=spin
	! want real-imbalanced-poll || ways real-imbalanced-poll "$r" "${real[@]}" LOADS="$loads" \
		ITERATIONS="$iters" WAIT=spin MPIRUN_ARGS="--mca mpi_yield_when_idle 0"
	printf ' (%d s so far)\n' $(($(date +%s) - t0))
done

# The monitor's per-call cost: one rank, so MPI itself costs next to nothing.
if want overhead; then
	mpirun --oversubscribe $root -np 1 "$ovh" "$calls" >"$out/overhead-none.txt"
	HPCD_SOCKET= HPCMON_QUIET=1 mpirun --oversubscribe $root -np 1 -x HPCD_SOCKET -x HPCMON_QUIET \
		-x LD_PRELOAD="$mon" "$ovh" "$calls" >"$out/overhead-hpcmon.txt"
fi

echo
/usr/bin/python3 "$top/bench/summary.py" "$out" --hpcsim "$build/tools/sim/hpcsim" \
	--rounds "$reps" --loads "$loads" --iterations "$iters" -k "$k" --balanced "$balanced" \
	--calls "$calls" --app-args="$app_args" --real-args="$real_args" --np "$(nproc)" \
	${only:+--only "$only"} | tee "$out/summary.txt"
echo "(make bench took $(($(date +%s) - t0)) s; load average $load0 at the start," \
	"$(cut -d' ' -f1-3 /proc/loadavg) at the end, on $(nproc) CPUs: times are noise when" \
	"the machine is busy, the ratios of one round are side by side)"
