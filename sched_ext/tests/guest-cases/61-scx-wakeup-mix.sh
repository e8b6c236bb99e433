#!/bin/sh
# scx_hpc under a mix of busy and waking tasks: the three measurements of
# scx_wakemix (tests/guest/cases/wakemix.h, as the kernel case
# 32-wakeup-mix makes them for SCHED_HPC), every measured task SCHED_EXT
# and unpinned, scx_hpc in RR mode with its default slice:
#  A  a task sleeping 1 ms in a loop beside 4 busy tasks and 2 hackbench
#     groups (restarted for the whole ~5 s), the SMT emulation off (hpcctl set
#     backend=none): worst lateness <= 2 slices, or the same load's worst as
#     SCHED_OTHER tasks in this boot if that is worse (a stall of the host's
#     vCPU delays any task); over the bound, the reference and the probe
#     measured once more, the second pair counts; with the emulation,
#     reported;
#  B  hackbench (4 groups, 500 loops) as SCHED_OTHER (left in fair: partial
#     mode) and as SCHED_EXT with the SMT emulation off (hpcctl set
#     backend=none), in 5 blocks of OTHER, EXT, EXT, OTHER: the median of the
#     5 blocks' ratios EXT / OTHER <= 1.3 (a host load that grows or falls
#     steadily over a block weighs the same on both; over the bound, the 5
#     blocks measured once more, the second median counts); the same with the
#     emulation on is measured in the middle of the first 3 blocks and
#     reported with the model's prediction (both busy contexts of an emulated core at
#     hpc_smt_speed(4, 4, busy) = 600 permille, kernel/hpc-core/hpc_smt.c);
#     a run is killed, as hung, after the deadline of the slowest
#     SCHED_OTHER run so far (scx_wakemix -R: wm_hb_timeout_ms(), wakemix.h);
#  C  4 identical busy tasks for ~8 s, the first 100 ms 3 on CPU 0 and 1 on
#     CPU 1, then unpinned (-S: tasks that never sleep are evened out only by
#     the scheduler's balancing of task counts): CPU time max / min <= 1.2
#     (over it, measured once more, the second run counts).
# guest-timeout: 720
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx wakeup mix: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx wakeup mix"
WM=/usr/local/bin/scx_wakemix
EMUL_PERMILLE=600	# hpc_smt_speed(4, 4, true)

start_hpc || { nok "scx_hpc enabled"; exit 1; }
H status --json > /tmp/wm-st 2>/dev/null
slice=$(json_field timeslice_us < /tmp/wm-st)
queue=$(sed -n 's/.*"queue":"\([a-z]*\)".*/\1/p' /tmp/wm-st)
diag "queue $queue, timeslice_us $slice, $(nproc) CPUs"
if ! [ "$queue" = rr ] || ! [ "${slice:-0}" -gt 0 ]; then
	nok "RR queues with a time slice (queue $queue, slice $slice us)"
	stop_hpc
	exit 1
fi
ok "RR queues with a time slice (queue $queue, $slice us)"

# field KEY FILE: the value of a key=value line
field() { sed -n "s/^$1=//p" "$2" | head -n 1; }

# A: the probe, with the SMT emulation off (the scheduler's own wake-up
# latency), then with it (reported: a context at a low priority runs at 174
# permille of a CPU)
H set backend=none > /dev/null 2>&1 || nok "A: set backend=none"
# The reference (the same load as SCHED_OTHER tasks, left in fair: partial
# mode), then SCHED_EXT. Over the bound, both once more and the second pair
# counts: a host that takes the guest's vCPUs away for a moment disturbs one
# run, a wake-up that waits for a round both.
twice=
for run in 1 2; do
	bound=$((2 * slice))
	$WM probe -p 0 -t 5 -b 4 -g 2 -l 200 > /tmp/wm-a 2>&1
	sed 's/^/# probe as SCHED_OTHER (the reference): /' /tmp/wm-a
	ref=$(field probe_late_max_us /tmp/wm-a)
	[ -n "$ref" ] && [ "$ref" -gt $bound ] && bound=$ref
	$WM probe -p 7 -t 5 -b 4 -g 2 -l 200 > /tmp/wm-a 2>&1
	rc=$?
	sed 's/^/# probe, emulation off: /' /tmp/wm-a
	p999=$(field probe_late_p999_us /tmp/wm-a)
	max=$(field probe_late_max_us /tmp/wm-a)
	loops=$(field probe_loops /tmp/wm-a)
	if [ $rc != 0 ] || [ -z "$max" ] || [ "$max" -le $bound ] || [ $run = 2 ]; then
		break
	fi
	diag "A: worst lateness $max us > $bound us: both measured once more"
	twice=", measured twice"
done
if [ $rc = 0 ] && [ -n "$max" ] && [ -n "$loops" ]; then
	check "A: woken SCHED_EXT probe's worst lateness $max us <= $bound us (2 slices, or SCHED_OTHER's worst), p99.9 $p999 us, $loops wake-ups$twice" \
		test "$max" -le $bound -a "$loops" -ge 10
else
	nok "A: probe beside 4 busy SCHED_EXT tasks and 2 hackbench groups ran (status $rc)"
fi
H set backend=x86-smt-emul > /dev/null 2>&1 || nok "A: set backend=x86-smt-emul"
$WM probe -p 7 -t 5 -b 4 -g 2 -l 200 2>&1 | grep late | sed 's/^/# probe, with the SMT emulation: /'

# B: hackbench as SCHED_OTHER (0), SCHED_EXT with the SMT emulation off
# (hpcctl set backend=none) and SCHED_EXT with it (in the first 3 blocks), in 5
# blocks of the ways forward then backward: a host load that grows or falls
# steadily over a block weighs the same on every way. A block's ratio is the
# way's two runs over SCHED_OTHER's two; the median of the 5 counts (of the 3
# for the emulation, only reported): on a shared host a block can be
# slowed by twice as much on one way as on the other. Over the bound, the 5
# blocks without the emulation once more, and the second median counts (as
# A, C and the kernel's 32-wakeup-mix B do): this host's runs of one way
# range over 2.5 x (the ratio was 0.93-1.06 in the blocks of one boot).
# add A B: A + B
add() { awk -v a="$1" -v b="$2" 'BEGIN { print a + b }'; }
# median LIST...: the middle one of an odd count of numbers
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
# sorted LIST...: the numbers in ascending order, on one line
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
# mean SUM N: a way's mean run over its N runs
mean() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.3f", a / n }'; }
# measure_b EMUL_BLOCKS: the 5 blocks, the emulation in the first
# EMUL_BLOCKS; sets re rx te tx to (ratios and sums) and hbfail.
slowest=0
measure_b() {
	re='' rx='' te=0 tx=0 to=0 hbfail=''
	for blk in 1 2 3 4 5; do
		other=0 none=0 emul=0 ways='other none none other'
		[ "$blk" -le "$1" ] && ways='other none emul emul none other'
		for m in $ways; do
			p=7
			case $m in
			other) p=0 ;;
			none) H set backend=none > /dev/null 2>&1 || { hbfail="set backend=none"; return; } ;;
			emul) H set backend=x86-smt-emul > /dev/null 2>&1 || { hbfail="set backend=x86-smt-emul"; return; } ;;
			esac
			$WM hackbench -p $p -g 4 -l 500 -R $slowest > /tmp/wm-b 2>&1
			rc=$?
			s=$(field hackbench_s /tmp/wm-b)
			[ "$m" = other ] && [ -n "$s" ] &&
				slowest=$(awk -v s="$s" -v b="$slowest" 'BEGIN { ms = int(s * 1000); print (ms > b ? ms : b) }')
			diag "B: hackbench -g 4 -l 500 as $m: ${s:-failed} s"
			if [ $rc != 0 ] || [ -z "$s" ]; then
				sed 's/^/# hackbench: /' /tmp/wm-b
				hbfail="block $blk as $m: status $rc"
				return
			fi
			case $m in
			other) other=$(add "$other" "$s") ;;
			none) none=$(add "$none" "$s") ;;
			emul) emul=$(add "$emul" "$s") ;;
			esac
		done
		re="$re $(awk -v a="$none" -v b="$other" 'BEGIN { printf "%.3f", a / b }')"
		[ "$blk" -le "$1" ] && rx="$rx $(awk -v a="$emul" -v b="$other" 'BEGIN { printf "%.3f", a / b }')"
		to=$(add "$to" "$other") te=$(add "$te" "$none") tx=$(add "$tx" "$emul")
	done
}
HB_BOUND=1.3
measure_b 3
if [ -z "$hbfail" ]; then
	# shellcheck disable=SC2086
	diag "B: with the SMT emulation: mean $(mean "$tx" 6) s, median ratio $(median $rx) to SCHED_OTHER; the model runs both busy contexts of a core at $EMUL_PERMILLE permille: $(awk -v e=$EMUL_PERMILLE 'BEGIN { printf "%.3f", 1000 / e }') x predicted"
	# shellcheck disable=SC2086
	ratio=$(median $re)
fi
twice=
if [ -z "$hbfail" ] && ! awk -v r="$ratio" -v b=$HB_BOUND 'BEGIN { exit !(r <= b) }'; then
	# shellcheck disable=SC2086
	diag "B: median ratio $ratio > $HB_BOUND ($(sorted $re)): measured once more"
	measure_b 0
	# shellcheck disable=SC2086
	[ -z "$hbfail" ] && ratio=$(median $re)
	twice=", measured twice"
fi
H set backend=x86-smt-emul > /dev/null 2>&1
if [ -n "$hbfail" ]; then
	nok "B: hackbench runs ($hbfail)"
else
	# shellcheck disable=SC2086
	check "B: hackbench as SCHED_EXT, emulation off, <= $HB_BOUND x as SCHED_OTHER: median ratio $ratio of 5 blocks ($(sorted $re); mean $(mean "$te" 10) s, $(mean "$to" 10) s)$twice" \
		awk -v r="$ratio" -v b=$HB_BOUND 'BEGIN { exit !(r <= b) }'
fi

# C: shares of 4 equal busy tasks. Over the bound, measured once more and
# the second run counts: the emulation leaves each CPU idle for part of
# every period, and a host slow to run a vCPU again at the period boundary
# takes its tasks' time in one run; a placement, balancing or priority
# error shows in both. Each run prints the four tasks' last state (their
# entries stay after they exit).
skew=
[ "$(nproc)" -gt 1 ] && skew=-S
twice=
for run in 1 2; do
	$WM shares -p 7 -t 8 -n 4 $skew > /tmp/wm-c 2>&1
	rc=$?
	sed 's/^/# shares: /' /tmp/wm-c
	H status --tasks > /tmp/wm-d 2>/dev/null
	head -n 1 /tmp/wm-d | sed 's/^/# C: /'
	for p in $(sed -n 's/^pid_[0-9]*=//p' /tmp/wm-c); do
		awk -v p="$p" '$1 == p' /tmp/wm-d | sed 's/^/# C: /'
	done
	ratio=$(field shares_ratio /tmp/wm-c)
	if [ $rc != 0 ] || [ -z "$ratio" ] || awk -v r="$ratio" 'BEGIN { exit !(r <= 1.2) }' ||
		[ $run = 2 ]; then
		break
	fi
	diag "C: max / min $ratio > 1.2: measured once more"
	twice=", measured twice"
done
if [ $rc = 0 ] && [ -n "$ratio" ]; then
	check "C: equal busy SCHED_EXT tasks get equal CPU time: max / min $ratio <= 1.2$twice" \
		awk -v r="$ratio" 'BEGIN { exit !(r <= 1.2) }'
else
	nok "C: 4 busy SCHED_EXT tasks ran (status $rc)"
fi

check "scx_hpc still enabled after the runs" test "$(state)" = enabled
H status --json | sed 's/^/# /'
stop_hpc
rc=$?
check "clean unload (status $rc)" test $rc = 0
check "sched_ext disabled after" wait_state disabled
exit $fail
