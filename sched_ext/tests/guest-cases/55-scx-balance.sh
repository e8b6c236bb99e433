#!/bin/sh
# Task-count balancing of scx_hpc: 4 unpinned SCHED_EXT spinners (forked
# from one parent) must run on both CPUs, about evenly (select_cpu places them on the
# least loaded CPU, dispatch pulls from the busiest queue). With 4 CPUs (the
# scx-guest-smp4 suite) 2 spinners must also end on different emulated cores,
# also when their affinity first holds them on one core and is then widened.
# guest-timeout: 60
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx balance: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx balance"
if [ "$(nproc)" -lt 2 ]; then ok "scx balance # SKIP needs 2 CPUs"; exit 0; fi

start_hpc || { nok "scx_hpc enabled"; exit 1; }
/usr/local/bin/scx_stress -s -t 4 -n 4 > /tmp/bal 2>&1
sed 's/^/# /' /tmp/bal
used=$(sed -n 's/^cpus_used=//p' /tmp/bal)
diag "spinners used $used CPUs (the SMT emulation holds each CPU of a busy pair back)"
# HPC run time per CPU: both CPUs of the pair must have run the spinners
H status --json | sed 's/.*"cpus":\[//; s/},{/}|{/g' | tr '|' '\n' > /tmp/cpus
r0=$(sed -n 1p /tmp/cpus | json_field run_ns); r1=$(sed -n 2p /tmp/cpus | json_field run_ns)
diag "HPC run time: cpu0 ${r0}ns cpu1 ${r1}ns"
check "both CPUs ran the spinners (cpu0 $r0, cpu1 $r1 ns)" test "${r0:-0}" -gt 0 -a "${r1:-0}" -gt 0
check "balanced within 2x (cpu0 $r0, cpu1 $r1 ns)" awk -v a="${r0:-0}" -v b="${r1:-0}" 'BEGIN { exit !(a > 0 && b > 0 && a <= 2 * b && b <= 2 * a) }'
H status --json | sed 's/^/# /'
stop_hpc
check "clean unload" test $? = 0

# With two emulated cores (4 CPUs: cores 0-1 and 2-3), two spinners go to
# different cores: the least loaded CPU first, then the least loaded core.
# On one core each would get only the model's 60 % of its CPU.
if [ "$(nproc)" -ge 4 ]; then
	start_hpc || { nok "scx_hpc enabled (4 CPUs)"; exit 1; }
	/usr/local/bin/scx_stress -s -t 4 -n 2 > /tmp/bal2 2>&1
	sed 's/^/# /' /tmp/bal2
	H status --json | sed 's/.*"cpus":\[//; s/},{/}|{/g' | tr '|' '\n' > /tmp/cpus
	r() { sed -n "$(($1 + 1))p" /tmp/cpus | json_field run_ns; }
	c0=$(( $(r 0) + $(r 1) )); c1=$(( $(r 2) + $(r 3) ))
	diag "HPC run time per emulated core: core0 ${c0}ns core1 ${c1}ns"
	H status --json | sed 's/^/# /'
	check "2 spinners on 2 emulated cores: both cores ran one (core0 $c0, core1 $c1 ns)" \
		awk -v a="$c0" -v b="$c1" 'BEGIN { exit !(a > 0 && b > 0 && a <= 2 * b && b <= 2 * a) }'
	stop_hpc
	check "clean unload (4 CPUs)" test $? = 0

	# Two spinners held on core 0 by their affinity, then let go while
	# they run: no wake-up places them again, the core balance must send
	# one to the idle core 1 (pulled from its queue while held back by the
	# budget, or moved while it runs).
	core1_ns() {
		H status --json | sed 's/.*"cpus":\[//; s/},{/}|{/g' | tr '|' '\n' > /tmp/cpus
		echo $(( $(r 2) + $(r 3) ))
	}
	start_hpc || { nok "scx_hpc enabled (4 CPUs, let go)"; exit 1; }
	taskset 3 /usr/local/bin/scx_stress -s -t 6 -n 2 > /tmp/bal3 2>&1 &
	sp=$!
	sleep 1
	kids=$(awk -v pp="$sp" '$4 == pp { print $1 }' /proc/[0-9]*/stat 2>/dev/null)
	before=$(core1_ns)
	diag "stress parent $sp; processes (pid comm state ppid cpu):"
	awk '{ print "#   " $1, $2, $3, $4, $39 }' /proc/[0-9]*/stat 2>/dev/null | grep scx_stress
	for k in $kids; do taskset -p f "$k" > /dev/null; done
	wait $sp
	after=$(core1_ns)
	H status --json | sed 's/"cpus":.*//' > /tmp/tot
	moves=$(json_field moves < /tmp/tot); steals=$(json_field steals < /tmp/tot)
	diag "let go: spinners $(echo $kids), core1 ran $((after - before))ns after; $steals pulled, $moves moved"
	H status --json | sed 's/^/# /'
	check "2 spinners let go from core 0: one went to core 1 (pulled $steals, moved $moves, core1 $((after - before)) ns)" \
		test "$(echo $kids | wc -w)" = 2 -a $((${steals:-0} + ${moves:-0})) -ge 1 -a $((after - before)) -gt 1000000000
	stop_hpc
	check "clean unload (4 CPUs, let go)" test $? = 0
fi
exit $fail
