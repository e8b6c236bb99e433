#!/bin/sh
# Following a process tree and a cgroup (--take-pid, --take-cgroup): the
# tasks there at load time are switched to SCHED_EXT, and so are the tasks
# that join later: a child forked by a tree process that left SCHED_EXT
# (the BPF side's sched_process_fork hook), a task moved into the cgroup
# (cgroup_attach_task), a task forked inside the cgroup by a process in the
# fair class. Unrelated tasks stay in the fair class.
# guest-timeout: 90
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx follow: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx follow"

pol() { awk '{ print $41 }' /proc/$1/stat 2>/dev/null; }
# wait_pol PID POLICY: until PID's policy reads POLICY (10 s: an event, not a timing)
wait_pol() {
	n=100
	while [ "$n" -gt 0 ]; do
		[ "$(pol $1)" = "$2" ] && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}
wait_file() {
	n=100
	while [ "$n" -gt 0 ] && [ ! -s "$1" ]; do sleep 0.1; n=$((n - 1)); done
	cat "$1" 2>/dev/null
}
FOLLOW=/usr/local/bin/scx_follow
kids=
cleanup_follow() {
	for p in $kids $(cat /tmp/kid1 /tmp/kid2 /tmp/kid3 2>/dev/null); do kill -9 $p 2>/dev/null; done
	sleep 0.2
	rmdir $cg 2>/dev/null
	cleanup
}
trap cleanup_follow EXIT

[ -e /sys/fs/cgroup/cgroup.procs ] || mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
cg=/sys/fs/cgroup/scx-follow
rm -f /tmp/go1 /tmp/go2 /tmp/kid1 /tmp/kid2 /tmp/kid3
mkfifo /tmp/go1 /tmp/go2
if ! mkdir $cg; then nok "cgroup v2 directory $cg"; exit 1; fi

# the tree: its root waits, then forks a plain child and a scx_follow
sh -c "read x < /tmp/go1; sleep 60 & echo \$! > /tmp/kid1; $FOLLOW /tmp/kid2 60 & wait" &
root=$!
# in the cgroup at load time
sleep 60 &
early=$!
echo $early > $cg/cgroup.procs
# to be moved in later; once in, it runs scx_follow (fork in the cgroup)
sh -c "read x < /tmp/go2; exec $FOLLOW /tmp/kid3 60" &
late=$!
sleep 60 &
other=$!
kids="$root $early $late $other"
check "before loading: tree root in the fair class" test "$(pol $root)" = 0
check "before loading: cgroup member in the fair class" test "$(pol $early)" = 0

if ! start_hpc --take-pid $root --take-cgroup $cg; then nok "scx_hpc enabled"; exit 1; fi
check "tree root switched at load" wait_pol $root 7
check "cgroup member switched at load" wait_pol $early 7

echo go > /tmp/go1
kid1=$(wait_file /tmp/kid1); kid2=$(wait_file /tmp/kid2)
diag "tree children: plain $kid1, of scx_follow $kid2"
check "child forked after load is SCHED_EXT (inherited)" wait_pol "$kid1" 7
check "child of a tree process that left SCHED_EXT is switched" wait_pol "$kid2" 7

check "outside task in the fair class" test "$(pol $late)" = 0
echo $late > $cg/cgroup.procs
check "task moved into the cgroup after load is switched" wait_pol $late 7
echo go > /tmp/go2
kid3=$(wait_file /tmp/kid3)
diag "forked in the cgroup: $kid3"
check "child forked in the cgroup by a fair-class process is switched" wait_pol "$kid3" 7
check "it is in the cgroup" grep -q '^0::/scx-follow$' /proc/$kid3/cgroup

sleep 1.5 # a rescan of the cgroup has passed
check "unrelated task stays in the fair class" test "$(pol $other)" = 0
H status --tasks > /tmp/dump
check "the moved task is in scx_hpc's task map" grep -q "^ *$late " /tmp/dump

stop_hpc
check "clean unload" test $? = 0
check "loader saw the move into the cgroup" grep -q 'moved into a followed cgroup: [1-9]' /tmp/scx_hpc.log
check "loader saw the fork inside the cgroup" grep -q 'forked inside one: [1-9]' /tmp/scx_hpc.log
check "loader saw the fork into the tree" grep -q 'forked into a followed tree: [1-9]' /tmp/scx_hpc.log
check "disabled after" wait_state disabled

# refused before loading: not a cgroup v2 directory, no such process
$SCX_HPC --take-cgroup /tmp > /tmp/out 2>&1
check "--take-cgroup /tmp: exit 2, says why" sh -c "test $? = 2 && grep -q 'not a cgroup v2 directory' /tmp/out"
$SCX_HPC --take-pid 999999 > /tmp/out 2>&1
check "--take-pid 999999: exit 2, says why" sh -c "test $? = 2 && grep -q 'no such process' /tmp/out"
check "still disabled" test "$(state)" = disabled
exit $fail
