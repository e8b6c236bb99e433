#!/bin/sh
# hpcctl --backend scx: run starts scx_hpc (which unloads once its last task
# is gone) or reuses a running one, runs the command under SCHED_EXT with the
# knobs given (same names and checks as the kernel's sysfs), and exits with
# the command's status; top and status show scx_hpc's per-task state and
# statistics; refusals change nothing.
# guest-timeout: 120
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx hpcctl: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx hpcctl"
[ -x $HPCCTL ] || { nok "hpcctl in the scx image"; exit 1; }

# 1. nothing loaded: run starts scx_hpc, the command runs under SCHED_EXT
out=$(H run --set low_util=60 --heuristic adaptive -- sh -c 'awk "{ print \$41 }" /proc/self/stat; cat /sys/kernel/sched_ext/root/ops' 2>/tmp/err)
rc=$?
diag "run printed: $(echo $out) $(cat /tmp/err)"
check "run starts scx_hpc: exit 0" test $rc = 0
check "the command ran under SCHED_EXT (policy 7) with scx_hpc as root ops" test "$(echo $out)" = "7 hpc"
check "the scx_hpc it started unloads after the command" wait_state disabled 150
sed 's/^/# scx_hpc log: /' /run/scx_hpc.log 2>/dev/null | tail -3

# 2. the command's status comes back; knobs reach the BPF side
H run --set low_util=55 --set queue=fifo -- sh -c "$HPCCTL --backend scx status --json > /tmp/st1; exit 7"
rc=$?
check "run -- sh -c 'exit 7': exit 7" test $rc = 7
check "knobs applied at start (low_util 55, fifo)" grep -q '"low_util":55,.*"queue":"fifo"' /tmp/st1
wait_state disabled 150

# 3. a running scx_hpc is reused, and changed by run --set
start_hpc || { nok "scx_hpc enabled"; exit 1; }
H run --set high_util=90 -- sh -c 'sleep 0.2' ; rc=$?
check "run reuses the running scx_hpc: exit 0" test $rc = 0
check "the same loader still runs" kill -0 $scx_pid
check "run --set high_util=90 changed it" sh -c "$HPCCTL --backend scx status --json | grep -q '\"high_util\":90,'"
H run --set low_util=95 -- true > /tmp/err 2>&1; rc=$?
check "run --set low_util=95 (above high_util 90): exit 2" test $rc = 2
check "... says why" grep -q 'low_util must be below high_util' /tmp/err
check "... nothing changed" sh -c "$HPCCTL --backend scx status --json | grep -q '\"low_util\":65,\"high_util\":90,'"

# 4. top and status while a task runs
H run -- /usr/local/bin/scx_stress -s -t 6 -n 1 > /dev/null 2>&1 &
rp=$!
sleep 2
H top --once > /tmp/top 2>&1
sed 's/^/# top: /' /tmp/top
check "top --once: scx_hpc's table with the running task" grep -q 'scx_stress' /tmp/top
H top --once --json > /tmp/topj 2>&1
check "top --json: tasks with priority and iterations" sh -c "grep -q '\"prio\":[1-6]' /tmp/topj && grep -q '\"iterations\":' /tmp/topj"
H status --json > /tmp/status 2>&1
check "status --json: backend scx, state enabled" sh -c "grep -q '\"backend\":\"scx\"' /tmp/status && grep -q '\"state\":\"enabled\"' /tmp/status"
check "get high_util: 90" test "$(H get high_util)" = 90
H set low_util=50 ; rc=$?
check "set low_util=50: exit 0, applied" sh -c "test $rc = 0 && test \"\$($HPCCTL --backend scx get low_util)\" = 50"
H set min_prio=9 > /tmp/err 2>&1; rc=$?
check "set min_prio=9: exit 2" test $rc = 2
wait $rp
check "the task ran to its end" test $? = 0
stop_hpc
check "unloaded" wait_state disabled

# 5. another sched_ext scheduler: refused, it stays
if [ -x /usr/local/bin/scx_simple ]; then
	/usr/local/bin/scx_simple > /dev/null 2>&1 &
	sp=$!
	if wait_state enabled; then
		H run -- true > /tmp/err 2>&1; rc=$?
		check "run while scx_simple is loaded: exit 1, names it" sh -c "test $rc = 1 && grep -q 'another sched_ext scheduler is active (simple)' /tmp/err"
		check "scx_simple still loaded" test "$(ops)" = simple
	else
		nok "scx_simple enabled"
	fi
	kill -INT $sp; wait $sp
	wait_state disabled
fi
H run --set bogus=1 -- true > /tmp/err 2>&1; rc=$?
check "run --set bogus=1: exit 2, nothing loaded" sh -c "test $rc = 2 && test \"\$(cat $SCX/state)\" = disabled"
exit $fail
