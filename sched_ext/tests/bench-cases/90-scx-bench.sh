#!/bin/sh
# scx_hpc's cost per scheduling event, side by side with the kernel's
# scx_simple in one boot (make scx-bench; a benchmark, not a test: it
# prints numbers and asserts nothing about them). The same workload runs
# under each scheduler with kernel.bpf_stats_enabled=1: the MetBench-shaped
# pair (scx_metbench) and a sleep/wake/fork mix (scx_stress). For every
# callback the kernel counts the runs and the time spent in the BPF program;
# printed: runs, average ns per run under each scheduler, and the ratio.
# Under QEMU TCG every instruction is emulated: the absolute ns are
# inflated, the ratios are the signal. Instruction counts (xlated, and what
# the verifier walked) come first.
# guest-timeout: 400
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx bench"
BENCH_ITERS=${BENCH_ITERS:-30}

workload() {
	/usr/local/bin/scx_metbench -i $BENCH_ITERS -H 20 -L 5 > /dev/null 2>&1
	/usr/local/bin/scx_stress -t 8 -n 8 > /dev/null 2>&1
}

# measure NAME PREFIX: stats of the loaded scheduler's programs after the workload
measure() {
	echo 0 > /proc/sys/kernel/bpf_stats_enabled
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
	t0=$(date +%s)
	workload
	t1=$(date +%s)
	$SCX_HPC --prog-info --json --prog-prefix "$2" > /tmp/pi.$1
	echo 0 > /proc/sys/kernel/bpf_stats_enabled
	diag "$1: workload took $((t1 - t0)) s"
}

start_hpc || { nok "scx_hpc enabled"; exit 1; }
echo "# instruction counts of scx_hpc's programs (xlated = after the verifier's rewrites; verified = instructions the verifier walked)"
$SCX_HPC --prog-info | sed 's/^/# /'
measure hpc hpc_
stop_hpc > /dev/null
wait_state disabled

/usr/local/bin/scx_simple > /dev/null 2>&1 &
sp=$!
wait_state enabled || { nok "scx_simple enabled"; exit 1; }
measure simple simple_
kill -INT $sp; wait $sp
wait_state disabled

# name runs ns per program: "callback runs ns"
flat() { sed 's/^[[,]*//; s/[]]*$//' "$1" | awk -F'[:,}]' -v pre="$2" '{
	for (i = 1; i < NF; i++) {
		if ($i ~ /"name"/) { n = $(i + 1); gsub(/"/, "", n); sub("^" pre, "", n) }
		if ($i ~ /"run_cnt"/) r = $(i + 1)
		if ($i ~ /"run_time_ns"/) t = $(i + 1)
	}
	print n, r, t }'; }
flat /tmp/pi.hpc hpc_ > /tmp/f.hpc
flat /tmp/pi.simple simple_ > /tmp/f.simple
echo "# per-event cost (bpf_stats, QEMU TCG): callback, runs and avg ns under scx_hpc, under scx_simple, ratio"
awk 'NR == FNR { sr[$1] = $2; st[$1] = $3; next }
	{ h = $2 ? $3 / $2 : 0; s = sr[$1] ? st[$1] / sr[$1] : 0
	  th += $3; rh += $2
	  if ($1 in sr) { ts += st[$1]; rs += sr[$1] }
	  printf "# %-12s hpc %8d runs %8.0f ns   simple %8s runs %8s ns   ratio %s\n", $1, $2, h,
		($1 in sr) ? sr[$1] : "-", ($1 in sr) ? sprintf("%.0f", s) : "-",
		(s > 0 && h > 0) ? sprintf("%.2f", h / s) : "-" }
	END { printf "# %-12s hpc %8d runs %8.0f ns   simple %8d runs %8.0f ns   ratio %.2f\n", "all", rh,
		rh ? th / rh : 0, rs, rs ? ts / rs : 0, (rs && ts && rh) ? (th / rh) / (ts / rs) : 0 }' \
	/tmp/f.simple /tmp/f.hpc
check "both schedulers' programs ran the workload" sh -c "awk '{ s += \$2 } END { exit !(s > 0) }' /tmp/f.hpc && awk '{ s += \$2 } END { exit !(s > 0) }' /tmp/f.simple"
exit $fail
