#!/usr/bin/env bash
# make bench, libhpclb part: how long each method takes to decide, for
# BENCH_UNITS work units on BENCH_RANKS simulated ranks (default 1e5 on 1e3),
# medians of BENCH_REPEAT runs, all in one process side by side.
#
# usage: bench.sh BUILD_DIR [OUT_DIR]
set -eu
build=${1:?usage: bench.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/bench-results/hpclb}
units=${BENCH_UNITS:-100000} ranks=${BENCH_RANKS:-1000} reps=${BENCH_REPEAT:-5}
bin=$build/tools/hpclb/hpclb-decide
[ -x "$bin" ] || { echo "bench-hpclb: $bin is not built" >&2; exit 1; }
mkdir -p "$out"
echo "== libhpclb: decision time"
"$bin" "$units" "$ranks" "$reps" | tee "$out/decide.txt"
