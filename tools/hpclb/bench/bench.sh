#!/usr/bin/env bash
# make bench, libhpclb part: (1) how long each method takes to decide, for
# BENCH_UNITS work units on BENCH_RANKS simulated ranks (default 1e5 on 1e3),
# medians of 5 runs in one process; (2) Stencil2D and Monte-Carlo on the
# namespace cluster, no balancing vs each method under heterogeneity,
# interference and both (compare.sh; as root).
#
# usage: bench.sh BUILD_DIR [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: bench.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/bench-results/hpclb}
units=${BENCH_UNITS:-100000} ranks=${BENCH_RANKS:-1000}
bin=$build/tools/hpclb/hpclb-decide
[ -x "$bin" ] || { echo "bench-hpclb: $bin is not built" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench-hpclb: run as root (the namespace cluster)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
echo "== libhpclb: decision time"
"$bin" "$units" "$ranks" 5 | tee "$out/decide.txt"
echo
"$here/compare.sh" "$build" "$out/stencil"
