#!/bin/sh
# Wake-up latency, a message-passing load and shares of equal busy tasks,
# as normal tasks, as SCHED_HPC tasks of the kernel class and as SCHED_EXT
# tasks of scx_hpc, each scheduler with its SMT emulation off (backend none)
# and on, in one boot (make scx-bench; a benchmark: it prints numbers and
# asserts nothing about them). BENCH_REPEAT rounds, the ways alternated in
# each round; printed per way, medians over the rounds:
#   probe   lateness (us) of a task sleeping 1 ms in a loop beside 4 busy
#           tasks and 2 hackbench groups, all of the way's policy: median,
#           p99, max
#   hb      hackbench (4 groups, 300 loops) wall time, and its ratio to the
#           normal tasks' of the same round
#   shares  CPU time max / min of 4 identical busy tasks
# The emulation runs both busy contexts of an emulated core at 600 permille
# (hpc_smt_speed(4, 4, busy)): the model predicts 1.667 x for hackbench.
# guest-timeout: 900
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx wakemix bench"
W=/usr/local/bin/scx_wakemix
K=/sys/kernel/sched_hpc/backend
BENCH_REPEAT=${BENCH_REPEAT:-3}
kbe=$(cat $K 2>/dev/null)
[ -n "$kbe" ] || { nok "wakemix bench: the kernel has SCHED_HPC"; exit 1; }
start_hpc || { nok "wakemix bench: scx_hpc enabled"; exit 1; }

WAYS="other hpc-none hpc-emul ext-none ext-emul"
# setup WAY: the mechanisms for WAY; prints its policy
setup() {
	case $1 in
	other) echo 0 ;;
	hpc-none) echo none > $K; echo 8 ;;
	hpc-emul) echo x86-smt-emul > $K; echo 8 ;;
	ext-none) H set backend=none > /dev/null 2>&1; echo 7 ;;
	ext-emul) H set backend=x86-smt-emul > /dev/null 2>&1; echo 7 ;;
	esac
}
field() { sed -n "s/^$1=//p" "$2" | head -n 1; }
med() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

: > /tmp/wm-res
r=1
while [ $r -le "$BENCH_REPEAT" ]; do
	for w in $WAYS; do
		p=$(setup $w)
		$W probe -p "$p" -t 3 -b 4 -g 2 -l 200 > /tmp/wm-p 2>&1
		$W hackbench -p "$p" -g 4 -l 300 -T 60 > /tmp/wm-h 2>&1
		$W shares -p "$p" -t 4 -n 4 > /tmp/wm-s 2>&1
		echo "$r $w $(field probe_late_med_us /tmp/wm-p) $(field probe_late_p99_us /tmp/wm-p)" \
			"$(field probe_late_max_us /tmp/wm-p) $(field hackbench_s /tmp/wm-h)" \
			"$(field shares_ratio /tmp/wm-s)" >> /tmp/wm-res
	done
	r=$((r + 1))
done
echo "$kbe" > $K
H set backend=x86-smt-emul > /dev/null 2>&1
stop_hpc

echo "# wakemix: per round: round way probe_med_us probe_p99_us probe_max_us hackbench_s shares_ratio"
sed 's/^/# wakemix: /' /tmp/wm-res
echo "# wakemix: medians over $BENCH_REPEAT round(s) (QEMU TCG, 2 CPUs):"
echo "# wakemix:   way       probe med/p99/max (us)   hackbench s  x normal  shares max/min"
for w in $WAYS; do
	pm=$(awk -v w=$w '$2 == w { print $3 }' /tmp/wm-res | med)
	pp=$(awk -v w=$w '$2 == w { print $4 }' /tmp/wm-res | med)
	px=$(awk -v w=$w '$2 == w { print $5 }' /tmp/wm-res | med)
	hb=$(awk -v w=$w '$2 == w { print $6 }' /tmp/wm-res | med)
	# the ratio to the normal tasks of the same round, median over the rounds
	hr=$(awk -v w=$w '$2 == "other" { o[$1] = $6 } $2 == w && o[$1] > 0 { printf "%.3f\n", $6 / o[$1] }' \
		/tmp/wm-res | med)
	sh=$(awk -v w=$w '$2 == w { print $7 }' /tmp/wm-res | med)
	printf '# wakemix:   %-9s %7s %7s %7s      %7s  %7s   %s\n' "$w" "$pm" "$pp" "$px" "$hb" "$hr" "$sh"
done
check "every way of every round measured" \
	sh -c "[ \$(awk 'NF == 7' /tmp/wm-res | wc -l) = $((BENCH_REPEAT * 5)) ]"
exit $fail
