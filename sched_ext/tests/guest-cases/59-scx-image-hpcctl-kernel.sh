#!/bin/sh
# hpcctl on the SCHED_HPC kernel class, its default backend where the class
# exists. This image carries hpcctl, and its kernel has the class as well as
# sched_ext. run sets SCHED_HPC (policy 8); get/set use /sys/kernel/sched_hpc
# with the same names and refusals as the other backends; trace records every
# closed iteration from the sched_hpc_iteration tracepoint: a task's records
# match the iteration count in its /proc/<pid>/sched_hpc exactly; prio sets a
# task's sched_priority (fixed priority), refusals change nothing.
# guest-timeout: 150
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - hpcctl kernel: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
HPCCTL=/usr/local/bin/hpcctl
[ -x $HPCCTL ] || { nok "hpcctl in the image"; exit 1; }
if [ ! -d /sys/kernel/sched_hpc ]; then nok "the kernel has SCHED_HPC (/sys/kernel/sched_hpc)"; exit 1; fi

# 1. run: the command runs under SCHED_HPC (policy 8, stat field 41)
out=$($HPCCTL run -- sh -c 'awk "{ print \$41 }" /proc/self/stat' 2>/tmp/err)
rc=$?
diag "run printed: $(echo $out) $(cat /tmp/err)"
check "status names the kernel class" sh -c "$HPCCTL status | grep -qi kernel"
check "run -- CMD: exit 0, the command ran under SCHED_HPC (policy 8)" test $rc = 0 -a "$(echo $out)" = 8
$HPCCTL run -- sh -c 'exit 5'
check "run -- sh -c 'exit 5': exit 5" test $? = 5

# 2. get/set: the sysfs knobs, all or nothing
old=$($HPCCTL get low_util)
check "get low_util reads sysfs ($old)" test "$old" = "$(cat /sys/kernel/sched_hpc/low_util)"
$HPCCTL set low_util=60 high_util=80
check "set low_util=60 high_util=80: both in sysfs" \
	test "$(cat /sys/kernel/sched_hpc/low_util)/$(cat /sys/kernel/sched_hpc/high_util)" = 60/80
$HPCCTL set low_util=70 high_util=200 2>/tmp/err
rc=$?
diag "refused: $(cat /tmp/err)"
check "set with one bad value: exit 2, nothing changed" \
	test $rc = 2 -a "$(cat /sys/kernel/sched_hpc/low_util)/$(cat /sys/kernel/sched_hpc/high_util)" = 60/80
$HPCCTL set low_util=65 high_util=85
check "defaults back (65/85)" test "$($HPCCTL get low_util)/$($HPCCTL get high_util)" = 65/85

# 3. trace from the tracepoint. The traced shell computes, then sleeps in
# wait for a 'sleep 0.02' child, 12 times: one iteration each; at the end
# it reads its own /proc/<pid>/sched_hpc with builtins only (no fork, no
# wait, so no iteration closes after the reading).
grep -q tracefs /proc/mounts || mount -t tracefs nodev /sys/kernel/tracing
rm -f /tmp/k.jsonl /tmp/kpid /tmp/kfinal
$HPCCTL trace -o /tmp/k.jsonl -- sh -c '
	echo $$ > /tmp/kpid
	n=0
	while [ $n -lt 12 ]; do
		j=0; while [ $j -lt 3000 ]; do j=$((j + 1)); done
		sleep 0.02
		n=$((n + 1))
	done
	while read -r l; do echo "$l"; done < /proc/$$/sched_hpc > /tmp/kfinal' 2>/tmp/trace.err
rc=$?
sed 's/^/# trace: /' /tmp/trace.err
sed 's/^/# sched_hpc: /' /tmp/kfinal
kp=$(cat /tmp/kpid 2>/dev/null)
want=$(sed -n 's/^iterations: *//p' /tmp/kfinal)
got=$(grep -c "\"type\":\"iteration\",\"pid\":$kp," /tmp/k.jsonl)
diag "traced shell pid $kp: /proc says $want iterations, the trace has $got records"
check "trace -- CMD: exit 0" test $rc = 0
check "the record's source is the kernel" grep -q '"source":"kernel"' /tmp/k.jsonl
check "the traced shell closed its 12 iterations at least (/proc: $want)" test "${want:-0}" -ge 12
check "one record per closed iteration, none lost ($got records, /proc $want)" test "$got" = "$want"
check "nothing dropped" sh -c "! grep -q '\"dropped\":[1-9]' /tmp/k.jsonl"
$HPCCTL report /tmp/k.jsonl > /tmp/report 2>&1
sed 's/^/# report: /' /tmp/report | head -n 12
check "report reads it: SCHED_HPC (kernel tracepoint)" grep -q 'SCHED_HPC (kernel tracepoint)' /tmp/report

# 4. prio: a SCHED_HPC task's sched_priority (its fixed priority; 0: dynamic)
fixed() { sed -n 's/^fixed_prio: *//p' /proc/$1/sched_hpc; }
now() { sed -n 's/^prio: *//p' /proc/$1/sched_hpc; }
$HPCCTL run -- sleep 60 &
sp=$!
n=20
while [ "$(awk '{ print $41 }' /proc/$sp/stat 2>/dev/null)" != 8 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
$HPCCTL prio $sp 6
check "prio PID 6: exit 0" test $? = 0
check "... /proc: fixed_prio 6, prio 6, sched_priority 6 (stat field 40)" \
	test "$(fixed $sp)/$(now $sp)/$(awk '{ print $40 }' /proc/$sp/stat)" = 6/6/6
$HPCCTL prio $sp 7 > /tmp/err 2>&1; rc=$?
diag "refused: $(cat /tmp/err)"
check "prio PID 7 (outside prio_range): exit 2, still 6" test $rc = 2 -a "$(fixed $sp)" = 6
$HPCCTL prio $$ 4 > /tmp/err 2>&1; rc=$?
diag "refused: $(cat /tmp/err)"
check "prio of this shell (SCHED_OTHER): exit 1, says so, still SCHED_OTHER" \
	test $rc = 1 -a "$(awk '{ print $41 }' /proc/$$/stat)" = 0 -a -n "$(grep -l 'is not SCHED_HPC' /tmp/err)"
$HPCCTL prio $sp 0
check "prio PID 0: dynamic again (fixed_prio 0)" test $? = 0 -a "$(fixed $sp)" = 0
kill $sp 2>/dev/null
wait $sp 2>/dev/null
exit $fail
