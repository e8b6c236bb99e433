#!/usr/bin/env bash
# make bench, libhpclb part 2: Stencil2D on the namespace test cluster
# (2 nodes), no balancing vs each method, under three conditions:
#   hetero  node 1 at BENCH_QUOTA % CPU (cgroup quota) from the start
#   interf  a busy process joins node 1 BENCH_INTERF_AT s after the start
#   both    the two together
# Methods: none, refine, refine-fp (the refinement with f_p measured again at
# every LB step for 0.05 s, --remeasure), container, drum.
# Each round runs every method of a condition one after the other (side by
# side); medians over BENCH_HPCLB_REPEAT rounds (2). Printed: time, residual imbalance
# (mean max/avg of the last half of the LB steps), LB steps to recover after
# the interference starts (first step with max/avg < 1.15), the gain over no
# balancing and that gain as % of the theoretical one.
#
# usage: compare.sh BUILD_DIR OUT_DIR      (as root: it makes the cluster)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: compare.sh BUILD_DIR OUT_DIR}
out=${2:?usage: compare.sh BUILD_DIR OUT_DIR}
cl=$top/tools/hpclb/cluster/hpclb-cluster
app=$build/tools/hpclb/hpclb-stencil2d
reps=${BENCH_HPCLB_REPEAT:-2} quota=${BENCH_QUOTA:-50} at=${BENCH_INTERF_AT:-3}
iters=${BENCH_STENCIL_ITERS:-300} n=${BENCH_STENCIL_N:-2048}
[ -x "$app" ] || { echo "bench-hpclb: $app is not built" >&2; exit 1; }
name=hbench
mkdir -p "$out"
trap '"$cl" down $name >/dev/null 2>&1 || true' EXIT
"$cl" down $name >/dev/null 2>&1 || true
"$cl" up 2 $name >/dev/null
echo "== libhpclb: Stencil2D ${n}x${n}, 256 blocks, $iters iterations, LB every 10, 2 namespace nodes; $reps round(s)"
for r in $(seq "$reps"); do
	printf 'round %d/%d:' "$r" "$reps"
	for cond in hetero interf both; do
		for m in none refine refine-fp container drum; do
			"$cl" quota 1 100 $name
			case $cond in hetero | both) "$cl" quota 1 "$quota" $name ;; esac
			case $m in
			refine-fp) margs=(--mode refine --remeasure 0.05) ;;
			*) margs=(--mode "$m") ;;
			esac
			f=$out/$cond-$m-$r.txt
			start=$(date +%s.%N)
			echo "start $start" >"$f"
			bpid=
			case $cond in interf | both)
				(sleep "$at"; "$cl" busy 1 600 $name >"$f.busy") &
				bpid=$!
				;;
			esac
			timeout -k 5 600 "$cl" mpirun $name -- -np 2 "$app" --n "$n" --blocks 16 \
				--iters "$iters" --lb-every 10 "${margs[@]}" >>"$f" 2>&1 ||
				{ echo; cat "$f" >&2; echo "bench-hpclb: $cond/$m failed" >&2; exit 1; }
			if [ -n "$bpid" ]; then
				wait "$bpid" || true
				[ -s "$f.busy" ] && kill "$(cat "$f.busy")" 2>/dev/null || true
				echo "interference $(awk -v s="$start" -v a="$at" 'BEGIN {printf "%.3f", s + a}')" >>"$f"
			fi
			printf ' %s/%s' "$cond" "$m"
		done
	done
	echo
done
# RUPER-LB: Monte-Carlo (2 threads per node), static split vs RUPER-LB.
mc=$build/tools/hpclb/hpclb-montecarlo
samples=${BENCH_MC_SAMPLES:-60000000}
echo "== libhpclb: Monte-Carlo, $samples samples, 2 nodes x 2 threads; $reps round(s)"
for r in $(seq "$reps"); do
	printf 'round %d/%d:' "$r" "$reps"
	for cond in hetero interf both; do
		for m in static ruper; do
			"$cl" quota 1 100 $name
			case $cond in hetero | both) "$cl" quota 1 "$quota" $name ;; esac
			f=$out/mc-$cond-$m-$r.txt
			: >"$f"
			bpid=
			case $cond in interf | both)
				(sleep "$at"; "$cl" busy 1 600 $name >"$f.busy") &
				bpid=$!
				;;
			esac
			timeout -k 5 600 "$cl" mpirun $name -- -np 2 "$mc" --samples "$samples" --threads 2 \
				$([ $m = static ] && echo --no-lb) >>"$f" 2>&1 ||
				{ echo; cat "$f" >&2; echo "bench-hpclb: montecarlo $cond/$m failed" >&2; exit 1; }
			if [ -n "$bpid" ]; then
				wait "$bpid" || true
				[ -s "$f.busy" ] && kill "$(cat "$f.busy")" 2>/dev/null || true
			fi
			printf ' %s/%s' "$cond" "$m"
		done
	done
	echo
done
/usr/bin/python3 "$top/bench/hpclb/summary.py" "$out" --rounds "$reps" --quota "$quota" | tee "$out/summary.txt"
