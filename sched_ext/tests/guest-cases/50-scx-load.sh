#!/bin/sh
# scx_hpc loads, reports (hpcctl --backend scx status), and unloads cleanly
# (sched_ext state enabled -> disabled, ops "hpc"); instruction counts of
# its programs for the record.
# Needs the scx guest image: make scx-guest-initrd (else skipped).
# guest-timeout: 60
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx load: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx load"

check "sched_ext disabled before" test "$(state)" = disabled
if start_hpc; then ok "scx_hpc enabled (ops $(ops))"; else nok "scx_hpc enabled"; stop_hpc; exit 1; fi
check "root/ops is hpc" test "$(ops)" = hpc

H status --progs > /tmp/pi 2>&1
check "status --progs lists the struct_ops programs" grep -q '^hpc_tick' /tmp/pi
sed 's/^/# insns: /' /tmp/pi

H status --json > /tmp/st 2>&1
check "status --json: state enabled" grep -q '"state":"enabled"' /tmp/st
check "status --json: per-CPU entries" grep -q '"cpu":1,' /tmp/st
sed 's/^/# /' /tmp/st

# a SCHED_EXT task runs under it and shows in the dump
/usr/local/bin/scx_stress -t 1 -n 2 > /tmp/out 2>&1
check "SCHED_EXT tasks run under scx_hpc" test $? = 0
n=$(H status --tasks --json | grep -c '"pid":')
diag "tasks in the map: $n"
check "status --tasks lists them" test "$n" -ge 3

# set: valid change applied, invalid refused (exit 2, unchanged)
H set low_util=50 queue=fifo >/dev/null 2>&1
check "set low_util=50 queue=fifo applied" sh -c "$HPCCTL --backend scx status --json | grep -q '\"low_util\":50,.*\"queue\":\"fifo\"'"
H set high_util=10 >/dev/null 2>/tmp/err
check "set high_util=10 refused with status 2" test $? = 2
check "set refusal says why" grep -q 'low_util must be below high_util' /tmp/err
check "parameters unchanged after refusal" sh -c "$HPCCTL --backend scx status --json | grep -q '\"high_util\":85,'"
H set low_util=65 queue=rr >/dev/null 2>&1

stop_hpc
check "loader exits 0 on SIGINT" test $? = 0
check "sched_ext disabled after" wait_state disabled
check "exit info printed" grep -q 'EXIT:' /tmp/scx_hpc.log
check "no scx_hpc program left" no_hpc_prog
# SIGTERM as well
if start_hpc --fifo; then
	kill -TERM $scx_pid; wait $scx_pid; rc=$?; scx_pid=
	check "SIGTERM: exit status 0" test $rc = 0
	check "SIGTERM: disabled after" wait_state disabled
else
	nok "second load (--fifo)"
fi
# without -q: a status line every second; --duration unloads
$SCX_HPC --duration 2 > /tmp/sl 2>&1; rc=$?
sed 's/^/# --duration 2: /' /tmp/sl
check "--duration 2: exit 0, a status line a second" sh -c "test $rc = 0 && grep -q '^scx_hpc: state=enabled tasks=0/0 iter=' /tmp/sl"
check "--duration: disabled after" wait_state disabled
exit $fail
