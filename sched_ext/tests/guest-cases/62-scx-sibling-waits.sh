#!/bin/sh
# The SMT model's waiting context under scx_hpc: an HPC task on CPU 1 that
# computes, then sleeps in a wait, leaves its CPU idle, yet the HPC spinner
# on CPU 0 beside it runs at hpc_smt_emul_share_of(4, 4, HPC_SMT_SIB_WAITS)
# (883 permille: held back ~11.7 % of the time), not in single-thread mode.
# Once that task has exited, CPU 1 holds no task and the spinner runs
# unthrottled. max_prio 4 keeps both at priority 4. (No fair filler: the
# fair class ranks above sched_ext and would starve the spinner.)
# guest-timeout: 90
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx sibling waits: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx sibling waits"
if [ "$(nproc)" -lt 2 ]; then nok "scx sibling waits: needs 2 CPUs, the guest has $(nproc)"; exit 1; fi

kids=
cleanup_waits() {
	for p in $kids; do kill -9 $p 2>/dev/null; done
	cleanup
}
trap cleanup_waits EXIT

# ns_now: the monotonic clock in ns (uptime's centiseconds are enough here)
ns_now() { awk '{ printf "%.0f\n", $1 * 1e9 }' /proc/uptime; }
# cpu0_thr: the time CPU 0 was held back (the spinner's per-task count is
# published at its iteration events, and a spinner has none)
cpu0_thr() {
	H status --json 2>/dev/null |
		sed -n 's/.*{"cpu":0,[^}]*"throttled_ns":\([0-9]*\).*/\1/p'
}
# pid_in FILE: the pid a task wrote there (hpcctl run forks it; 10 s)
pid_in() {
	n=100
	while [ $n -gt 0 ] && [ ! -s "$1" ]; do sleep 0.1; n=$((n - 1)); done
	cat "$1" 2>/dev/null
}

rm -f /tmp/waiter.pid /tmp/spinner.pid /tmp/waiter.go
mkfifo /tmp/waiter.go || { nok "scx sibling waits: mkfifo"; exit 1; }
start_hpc --max-prio 4 || { nok "scx_hpc enabled"; exit 1; }
# the waiter: computes (a shell loop), then sleeps in a wait for a message
# (the FIFO's writer) until the measurement is done, however long the
# guest takes (on a loaded host, 1.5 s of sleep took 2.6 s)
taskset -c 1 $HPCCTL --backend scx run -- sh -c 'echo $$ > /tmp/waiter.pid
	i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; read go < /tmp/waiter.go' &
hw=$!
waiter=$(pid_in /tmp/waiter.pid)
kids="$hw $waiter"
n=100
while [ $n -gt 0 ] && ! grep -q '^State:.*S' /proc/$waiter/status 2>/dev/null; do
	sleep 0.05
	n=$((n - 1))
done
check "the waiter sleeps in its wait on CPU 1" grep -q '^State:.*S' /proc/$waiter/status
# pinned before it is SCHED_EXT: a task that ran on CPU 1 would be the
# task that ran there last, and CPU 1 would no longer hold the waiter
taskset -c 0 $HPCCTL --backend scx run -- sh -c 'echo $$ > /tmp/spinner.pid; while :; do :; done' &
hs=$!
spinner=$(pid_in /tmp/spinner.pid)
kids="$kids $hs $spinner"
check "the spinner is scheduled by scx_hpc (pid ${spinner:-none})" \
	test -n "$(task_field "${spinner:-0}" pid)"
sleep 0.5

t0=$(ns_now); th0=$(cpu0_thr)
sleep 1.5
t1=$(ns_now); th1=$(cpu0_thr)
wall=$((t1 - t0)); thr=$((${th1:-0} - ${th0:-0}))
pm=$((thr * 1000 / wall))
diag "beside the waiting context: CPU 0 throttled +$thr ns in $wall ns ($pm permille; model 117)"
check "the spinner is held back ~117 permille beside a waiting context (got $pm)" \
	test "$pm" -ge 58 -a "$pm" -le 234
check "the waiter still waits (measured beside a waiting context)" \
	grep -q '^State:.*S' /proc/$waiter/status

kill -0 "$waiter" 2>/dev/null && echo go > /tmp/waiter.go
wait $hw
check "the waiter exits (status 0)" test $? = 0
sleep 0.5
th0=$(cpu0_thr)
sleep 1
th1=$(cpu0_thr)
diag "sibling gone: CPU 0 throttled +$((${th1:-0} - ${th0:-0})) ns in 1 s"
check "sibling gone: the spinner runs unthrottled (single-thread mode)" \
	test "${th1:-x}" = "${th0:-y}"

kill -9 $spinner 2>/dev/null
wait $hs 2>/dev/null
stop_hpc
check "clean unload" test $? = 0
exit $fail
