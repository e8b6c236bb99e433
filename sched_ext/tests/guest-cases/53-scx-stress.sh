#!/bin/sh
# Stress mix under scx_hpc: many unpinned SCHED_EXT tasks, a fork/exit
# storm, CPU 1 going offline and online (>= 2 CPUs); the scheduler must stay
# enabled (no watchdog stall, no error exit) and unload cleanly.
# guest-timeout: 150
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx stress: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx stress"

dmesg -c > /dev/null 2>&1
start_hpc || { nok "scx_hpc enabled"; exit 1; }
/usr/local/bin/scx_stress -t 20 -n 24 > /tmp/stress 2>&1 &
spid=$!
hp=0
if [ "$(nproc)" -ge 2 ] && [ -w /sys/devices/system/cpu/cpu1/online ]; then
	i=0
	while [ $i -lt 6 ]; do
		sleep 1
		echo 0 > /sys/devices/system/cpu/cpu1/online && hp=$((hp + 1))
		sleep 1
		echo 1 > /sys/devices/system/cpu/cpu1/online
		i=$((i + 1))
	done
fi
wait $spid
rc=$?
sed 's/^/# stress: /' /tmp/stress
check "stress tasks completed (status $rc)" test $rc = 0
check "CPU 1 online again" test "$(cat /sys/devices/system/cpu/cpu1/online 2>/dev/null || echo 1)" = 1
diag "cpu1 offline cycles: $hp"
check "scx_hpc still enabled after the stress" test "$(state)" = enabled
check "scx_hpc still the root ops" test "$(ops)" = hpc
H status --json | sed 's/^/# /'
if dmesg | grep -Ei 'sched_ext.*(stall|error|watchdog)|runnable task stall' > /tmp/dm; then
	nok "no sched_ext watchdog/error in dmesg"; sed 's/^/# dmesg: /' /tmp/dm
else
	ok "no sched_ext watchdog/error in dmesg"
fi
stop_hpc
rc=$?
check "clean unload (status $rc)" test $rc = 0
check "exit was not an error" sh -c "! grep -qi 'error\|stall' /tmp/scx_hpc.log"
check "disabled after" wait_state disabled
exit $fail
