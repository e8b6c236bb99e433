#!/usr/bin/env bash
# make bench, libhpclb part 2: Stencil2D on the namespace test cluster
# (2 nodes, each on its own CPU set), no balancing vs each method, under
# three conditions:
#   hetero  node 1 at BENCH_QUOTA % CPU (cgroup quota) from the start
#   interf  a busy process joins node 1 (its cgroup and CPU set: it slows
#           node 1 only) BENCH_INTERF_AT s after the timed loop starts
#   both    the two together
# Methods: none, refine, refine-fp (the refinement with f_p measured again at
# every LB step for 0.01 s, --remeasure), container, drum.
# The grid (1024 x 1024, 16 MB) fits the L3 cache the emulated nodes share:
# at 2048 x 2048 they shared the memory bandwidth too, and a node's blocks
# ran 45 % slower when the other node computed more, so that no node had a
# speed of its own. Each block is swept 10 times an iteration (--work 10,
# in cache): an iteration lasts ~9 ms, several of the quota's 2 ms periods
# and of the scheduler's slices, so a node under a quota or beside a busy
# process is a slower CPU for it rather than one stopped for whole
# iterations (MPI ranks busy-poll: a rank stopped for longer than a step
# holds every other rank up, whatever its share of the work).
# Each round runs every method of a condition one after the other (side by
# side; the order rotates from round to round, so that a drift of the
# machine's load is not always against the same method); medians over
# BENCH_HPCLB_REPEAT rounds (2). Between two runs the node is torn down to
# its idle state (busy processes ended, quota back to 100 %) and the run
# stops with an error if anything is still running in a node's cgroup.
# summary.py prints time, gain over no balancing, that gain as % of the
# theoretical one, residual imbalance, LB steps to recover and LB cost.
#
# usage: compare.sh BUILD_DIR OUT_DIR      (as root: it makes the cluster)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: compare.sh BUILD_DIR OUT_DIR}
out=${2:?usage: compare.sh BUILD_DIR OUT_DIR}
cl=$here/../cluster/hpclb-cluster
app=$build/tools/hpclb/hpclb-stencil2d
reps=${BENCH_HPCLB_REPEAT:-2} quota=${BENCH_QUOTA:-50} at=${BENCH_INTERF_AT:-2}
iters=${BENCH_STENCIL_ITERS:-600} n=${BENCH_STENCIL_N:-1024} every=${BENCH_STENCIL_LB_EVERY:-10}
work=${BENCH_STENCIL_WORK:-10}
[ -x "$app" ] || { echo "bench-hpclb: $app is not built" >&2; exit 1; }
name=hbench
mkdir -p "$out"
trap '"$cl" down $name >/dev/null 2>&1 || true' EXIT
"$cl" down $name >/dev/null 2>&1 || true
"$cl" up 2 $name >/dev/null

# Back to the idle cluster: no busy process, no quota, nothing running in a
# node's cgroups (what a round leaves behind would slow the next one).
teardown() {
	"$cl" unbusy all $name
	"$cl" quota 0 100 $name
	"$cl" quota 1 100 $name
	local left=
	for _ in $(seq 50); do
		left=$("$cl" leftovers $name)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "bench-hpclb: still running in the cluster's nodes after a run:" >&2
	ps -o pid,etime,args -p "$(echo "$left" | paste -sd,)" >&2 || true
	exit 1
}

# run FILE COND CMD...: the command on the cluster under condition COND; the
# busy process starts $at s after the line "started at EPOCH" (the timed
# loop's start), and its real start goes to FILE as "interference EPOCH".
run() {
	local f=$1 cond=$2
	shift 2
	teardown
	echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >"$f"
	case $cond in hetero | both) "$cl" quota 1 "$quota" $name ;; esac
	timeout -k 5 600 "$cl" mpirun $name -- -np 2 "$@" >>"$f" 2>&1 &
	local job=$! bpid=
	case $cond in interf | both)
		(
			for _ in $(seq 3000); do
				grep -q "^started at " "$f" && break
				kill -0 $job 2>/dev/null || exit 0
				sleep 0.02
			done
			sleep "$at"
			kill -0 $job 2>/dev/null || exit 0
			"$cl" busy 1 600 $name >/dev/null
			echo "interference $(date +%s.%N)" >>"$f.interf"
		) &
		bpid=$!
		;;
	esac
	if ! wait $job; then
		echo
		cat "$f" >&2
		echo "bench-hpclb: $f failed" >&2
		exit 1
	fi
	[ -z "$bpid" ] || wait "$bpid" || true
	[ -e "$f.interf" ] && cat "$f.interf" >>"$f" && rm -f "$f.interf"
	teardown
}

methods=(none refine refine-fp container drum)
echo "== libhpclb: Stencil2D ${n}x${n}, 256 blocks, $iters iterations of $work sweeps, LB every $every, 2 namespace nodes (one CPU each); $reps round(s)"
for r in $(seq "$reps"); do
	printf 'round %d/%d:' "$r" "$reps"
	for cond in hetero interf both; do
		k=$(((r - 1) % ${#methods[@]}))
		for m in "${methods[@]:$k}" "${methods[@]:0:$k}"; do
			case $m in
			refine-fp) margs=(--mode refine --remeasure 0.01) ;;
			*) margs=(--mode "$m") ;;
			esac
			run "$out/$cond-$m-$r.txt" $cond "$app" --n "$n" --blocks 16 \
				--iters "$iters" --lb-every "$every" --work "$work" "${margs[@]}"
			printf ' %s/%s' "$cond" "$m"
		done
	done
	echo
done
# RUPER-LB: Monte-Carlo (2 threads per node), static split vs RUPER-LB.
mc=$build/tools/hpclb/hpclb-montecarlo
samples=${BENCH_MC_SAMPLES:-300000000}
echo "== libhpclb: Monte-Carlo, $samples samples, 2 nodes x 2 threads; $reps round(s)"
for r in $(seq "$reps"); do
	printf 'round %d/%d:' "$r" "$reps"
	for cond in hetero interf both; do
		order=(static ruper)
		[ $((r % 2)) -eq 0 ] && order=(ruper static)
		for m in "${order[@]}"; do
			f=$out/mc-$cond-$m-$r.txt
			run "$f" $cond "$mc" --samples "$samples" --threads 2 \
				$([ $m = static ] && echo --no-lb)
			printf ' %s/%s' "$cond" "$m"
		done
	done
	echo
done
/usr/bin/python3 "$here/summary.py" "$out" --rounds "$reps" --quota "$quota" | tee "$out/summary.txt"
