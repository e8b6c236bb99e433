#!/bin/sh
# scx_hpc's cost per scheduling event, side by side with the kernel's
# scx_simple in one boot (make scx-bench; a benchmark, not a test: it prints
# numbers and asserts nothing about them). The same workload runs under each
# scheduler, alternately, BENCH_REPEAT rounds, with
# kernel.bpf_stats_enabled=1: the MetBench-shaped pair (scx_metbench) and a
# sleep/wake/fork mix (scx_stress). For every callback the kernel counts the
# runs and the time spent in the BPF program. Printed: the instruction
# counts; per callback the median over the rounds of the average ns per run
# under each scheduler and their ratio; per round and as medians, the BPF
# time per context switch (ops.running), its share of the CPU time, and the
# workload's wall time. scx_hpc follows an (empty) cgroup meanwhile, so that
# its fork hook (take_fork, on every fork of the system) is measured too.
# Under QEMU TCG every instruction is emulated and a vCPU can lose the host
# CPU inside a program: absolute ns are inflated and noisy, ratios and
# shares are the signal.
# guest-timeout: 900
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx bench"
BENCH_ITERS=${BENCH_ITERS:-40}
BENCH_REPEAT=${BENCH_REPEAT:-5}

workload() {
	/usr/local/bin/scx_metbench -i $BENCH_ITERS -H 20 -L 5 > /dev/null 2>&1
	/usr/local/bin/scx_stress -t 10 -n 8 > /dev/null 2>&1
}
uptime_cs() { awk '{ split($1, a, "."); print a[1] * 100 + a[2] }' /proc/uptime; }
# flat FILE PREFIX: "callback runs ns" per program of status --progs --json
flat() { sed 's/^[[,]*//; s/[]]*$//' "$1" | awk -F'[:,}]' -v pre="$2" '{
	for (i = 1; i < NF; i++) {
		if ($i ~ /"name"/) { n = $(i + 1); gsub(/"/, "", n); sub("^" pre, "", n) }
		if ($i ~ /"run_cnt"/) r = $(i + 1)
		if ($i ~ /"run_time_ns"/) t = $(i + 1)
	}
	print n, r, t }'; }
# measure NAME PREFIX ROUND: the workload under the loaded scheduler
measure() {
	echo 0 > /proc/sys/kernel/bpf_stats_enabled
	H status --progs --json --prefix "$2" > /tmp/pi0
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
	t0=$(uptime_cs)
	workload
	t1=$(uptime_cs)
	H status --progs --json --prefix "$2" > /tmp/pi1
	echo 0 > /proc/sys/kernel/bpf_stats_enabled
	flat /tmp/pi0 "$2" > /tmp/f0; flat /tmp/pi1 "$2" > /tmp/f1
	# counters of this round only (stats stay with the programs)
	awk 'NR == FNR { r[$1] = $2; t[$1] = $3; next } { print $1, $2 - r[$1], $3 - t[$1] }' \
		/tmp/f0 /tmp/f1 > /tmp/f.$1.$3
	echo $((t1 - t0)) > /tmp/wall.$1.$3
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'; }

[ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mkdir -p /sys/fs/cgroup/scx-bench
r=1
while [ $r -le $BENCH_REPEAT ]; do
	start_hpc --take-cgroup /sys/fs/cgroup/scx-bench || { nok "scx_hpc enabled"; exit 1; }
	if [ $r = 1 ]; then
		echo "# instruction counts of scx_hpc's programs (xlated: after the verifier's rewrites; verified: instructions the verifier walked)"
		H status --progs | sed 's/  runs .*//; s/^/# /'
	fi
	measure hpc hpc_ $r
	stop_hpc > /dev/null
	wait_state disabled
	/usr/local/bin/scx_simple > /dev/null 2>&1 &
	sp=$!
	wait_state enabled || { nok "scx_simple enabled"; exit 1; }
	measure simple simple_ $r
	kill -INT $sp; wait $sp
	wait_state disabled
	# per round: BPF ns per context switch, share of CPU time, wall time
	awk -v ncpu=$(nproc) -v wh=$(cat /tmp/wall.hpc.$r) -v ws=$(cat /tmp/wall.simple.$r) -v r=$r '
		NR == FNR { ts += $3; if ($1 == "running") rs = $2; next }
		{ th += $3; if ($1 == "running") rh = $2 }
		END {
			ph = rh ? th / rh : 0; ps = rs ? ts / rs : 0
			printf "round %d %.0f %.0f %.3f %.3f %.3f %.2f %.2f\n", r, ph, ps, ps ? ph / ps : 0,
				th / (wh * 1e7 * ncpu) * 100, ts / (ws * 1e7 * ncpu) * 100, wh / 100, ws / 100
		}' /tmp/f.simple.$r /tmp/f.hpc.$r >> /tmp/rounds
	r=$((r + 1))
done
rmdir /sys/fs/cgroup/scx-bench 2>/dev/null

echo "# per round: BPF ns per context switch (hpc, simple, ratio), BPF share of CPU time % (hpc, simple), workload wall s (hpc, simple)"
sed 's/^/# /' /tmp/rounds
echo "# per callback, medians over $BENCH_REPEAT rounds (QEMU TCG): runs and avg ns under scx_hpc, under scx_simple, ratio"
for cb in $(awk '{ print $1 }' /tmp/f.hpc.1); do
	hr=$(cat /tmp/f.hpc.* | awk -v c=$cb '$1 == c { print $2 }' | median)
	ha=$(cat /tmp/f.hpc.* | awk -v c=$cb '$1 == c && $2 > 0 { print $3 / $2 }' | median)
	sr=$(cat /tmp/f.simple.* | awk -v c=$cb '$1 == c { print $2 }' | median)
	sa=$(cat /tmp/f.simple.* | awk -v c=$cb '$1 == c && $2 > 0 { print $3 / $2 }' | median)
	awk -v c=$cb -v hr=$hr -v ha=$ha -v sr=$sr -v sa=$sa 'BEGIN {
		srs = (sr > 0) ? sr : "-"; sas = (sa > 0) ? sprintf("%.0f", sa) : "-"
		q = (ha > 0 && sa > 0) ? sprintf("%.2f", ha / sa) : "-"
		printf "# %-12s hpc %7d runs %9.0f ns   simple %7s runs %9s ns   ratio %s\n", c, hr, ha, srs, sas, q }'
done
awk '{ print $5 }' /tmp/rounds | median > /tmp/m1
echo "# median BPF ns per context switch ratio hpc/simple: $(cat /tmp/m1)"
echo "# median BPF share of CPU time: hpc $(awk '{ print $6 }' /tmp/rounds | median) %, simple $(awk '{ print $7 }' /tmp/rounds | median) %"
echo "# median workload wall time ratio hpc/simple: $(awk '{ print $8 / $9 }' /tmp/rounds | median)"
check "both schedulers' programs ran the workload in every round" sh -c "[ \$(awk '\$2 > 0 && \$3 > 0' /tmp/rounds | wc -l) = $BENCH_REPEAT ]"
exit $fail
