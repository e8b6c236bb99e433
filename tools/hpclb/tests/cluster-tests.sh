#!/usr/bin/env bash
# libhpclb on the namespace test cluster (tools/hpclb/cluster/hpclb-cluster),
# TAP. If the machine cannot make the cluster (not root, no netns, veth,
# bridge or cpu cgroup), the first test fails with the reason: nothing is
# skipped. Every mpirun runs under `timeout`.
#
# usage: cluster-tests.sh BUILD_DIR
set -u
build=${1:?usage: cluster-tests.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
cl=$here/cluster/hpclb-cluster
app=$build/tools/hpclb/hpclb-stencil2d
name=hct$$
name=${name:0:8}
tmp=$(mktemp -d)
cleanup() { "$cl" down "$name" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/#   /' "$2" | tail -15; }
end() { echo "1..$n"; [ $fail -eq 0 ]; exit; }
crun() { timeout -k 5 120 "$cl" mpirun "$name" -- "$@"; }

if "$cl" up 3 "$name" >"$tmp/up" 2>&1; then
	ok "a 3-node cluster of network namespaces is up ($(tail -1 "$tmp/up"))"
else
	nok "cannot make the namespace cluster: $(tail -1 "$tmp/up")" "$tmp/up"
	end
fi
# Each rank runs in its own node: its namespace's address and its cgroup.
crun -np 3 sh -c 'echo "$(ip -4 -o addr show eth0 | awk "{print \$4}") $(grep -E "(cpu[,:]|^0::)" /proc/self/cgroup | head -1)"' \
	>"$tmp/where" 2>&1
# Only the ranks' lines count: Open MPI's rsh launcher may add a warning
# of its own ("setpgid(...) failed in parent": the daemon was faster).
grep "^10\.77\." "$tmp/where" >"$tmp/where.ranks"
if [ "$(wc -l <"$tmp/where.ranks")" -eq 3 ] &&
	[ "$(cut -d' ' -f1 "$tmp/where.ranks" | sort -u | wc -l)" -eq 3 ] &&
	[ "$(grep -oE "$name/n[0-9]+" "$tmp/where.ranks" | sort -u | wc -l)" -eq 3 ]; then
	ok "mpirun places one rank per node: 3 addresses, 3 node cgroups"
else
	nok "ranks are not one per node" "$tmp/where"
fi
# Each node's Open MPI daemon has a session directory of its own (the
# namespaces share /tmp and a host name: in a shared one two daemons wrote
# their hwloc topology into one file and one crashed now and then, leaving
# mpirun waiting for it), and launches back to back all start.
crun -np 3 sh -c 'echo "$OMPI_MCA_orte_tmpdir_base"' >"$tmp/sess" 2>&1
grep -E "^/.*/tmp-n[0-2]\$" "$tmp/sess" >"$tmp/sess.ranks"
if [ "$(wc -l <"$tmp/sess.ranks")" -eq 3 ] &&
	[ "$(sort -u "$tmp/sess.ranks" | wc -l)" -eq 3 ]; then
	ok "each node's daemon has its own session directory"
else
	nok "session directories are not one per node" "$tmp/sess"
fi
started=0
for _ in $(seq 15); do
	timeout -k 5 30 "$cl" mpirun "$name" -- -np 3 true >"$tmp/launch" 2>&1 || break
	started=$((started + 1))
done
if [ $started -eq 15 ]; then
	ok "15 launches back to back: every daemon started, none hung"
else
	nok "launch $((started + 1)) of 15 failed or hung (30 s)" "$tmp/launch"
fi
# Blocks move between nodes over TCP and the result is unchanged.
# Three LB steps on a loaded machine: a plan at every overloaded period
# (--persistence 1) so that blocks do move.
args=(--n 512 --blocks 16 --iters 40 --lb-every 10 --slow 0:4)
crun -np 3 "$app" "${args[@]}" --mode none >"$tmp/none" 2>&1
crun -np 3 "$app" "${args[@]}" --mode refine --persistence 1 >"$tmp/refine" 2>&1
rc=$?
ref=$(sed -n 's/^checksum //p' "$tmp/none")
moves=$(awk '/^lb step/ {m += $(NF-1)} END {print m + 0}' "$tmp/refine")
if [ $rc -eq 0 ] && [ -n "$ref" ] && [ "$(sed -n 's/^checksum //p' "$tmp/refine")" = "$ref" ] &&
	[ "$moves" -gt 0 ]; then
	ok "stencil2d across 3 nodes: $moves block moves, checksum $ref as without balancing"
else
	nok "stencil2d across nodes: exit $rc, $moves moves, checksum vs $ref" "$tmp/refine"
fi
# DRUM over the cluster: the launcher names each node after its namespace,
# so the discovered tree has one computing node per namespace; the XML tree
# with those names maps the same way.
HPCLB_DEBUG=1 crun -x HPCLB_DEBUG -np 3 "$app" --n 240 --blocks 12 --iters 30 --lb-every 10 \
	--mode drum --monitor-period 0.01 >"$tmp/drum" 2>&1
rc=$?
found=0
for i in 0 1 2; do
	grep -q "^hpclb: drum rank $i node $((i + 1)) ($name-n$i) share" "$tmp/drum" && found=$((found + 1))
done
if [ $rc -eq 0 ] && [ $found -eq 3 ]; then
	ok "drum across 3 nodes: a discovered computing node per namespace"
else
	nok "drum discovered tree on the cluster: exit $rc, $found of 3 nodes" "$tmp/drum"
fi
{
	echo '<machinemodel numnode="6">'
	echo '<node type="NETWORK_NODE" name="0" description="br" childrenNum="2" children="1;2;" IsMonitorable="1"/>'
	echo '<node type="NETWORK_NODE" name="1" description="rack1" childrenNum="2" children="3;4;" IsMonitorable="1"/>'
	echo '<node type="NETWORK_NODE" name="2" description="rack2" childrenNum="1" children="5;" IsMonitorable="1"/>'
	for i in 0 1 2; do
		echo "<node type=\"COMPUTING_NODE\" name=\"$((i + 3))\" description=\"$name-n$i\" childrenNum=\"0\" children=\";\" IsMonitorable=\"1\" mflops=\"100\"/>"
	done
	echo '</machinemodel>'
} >"$tmp/cl.xml"
HPCLB_DEBUG=1 crun -x HPCLB_DEBUG -np 3 "$app" --n 240 --blocks 12 --iters 30 --lb-every 10 \
	--mode drum --machine "$tmp/cl.xml" >"$tmp/drumx" 2>&1
rc=$?
# Equal MFLOPS: rack1 and rack2 get half each (w_dynamic is 0 at the first
# step); inside rack1, n0 and n1 a quarter each.
if [ $rc -eq 0 ] && grep -q "^hpclb: drum rank 2 node 5 ($name-n2) share" "$tmp/drumx" &&
	grep -q "^hpclb: drum rank 0 node 3 ($name-n0) share" "$tmp/drumx"; then
	ok "drum across 3 nodes with the XML tree (2 racks): ranks mapped by namespace"
else
	nok "drum XML tree on the cluster: exit $rc" "$tmp/drumx"
fi
# A node's CPU quota is set on its cgroup (1 ms, the kernel's least, in
# every 100 / PERCENT ms), lifted at 100 %, and refused for unknown nodes.
quota_of() { # quota_of NODE: "QUOTA_US PERIOD_US" of its cgroup (-1: none)
	local v2=/sys/fs/cgroup/hpclb-$name/n$1 v1=/sys/fs/cgroup/cpu/hpclb-$name/n$1
	if [ -e "$v2/cpu.max" ]; then
		sed 's/^max/-1/' "$v2/cpu.max"
	else
		echo "$(cat "$v1/cpu.cfs_quota_us") $(cat "$v1/cpu.cfs_period_us")"
	fi
}
q25= q50= q100=
"$cl" quota 1 25 "$name" && q25=$(quota_of 1)
"$cl" quota 1 50 "$name" && q50=$(quota_of 1)
"$cl" quota 1 100 "$name" && q100=$(quota_of 1)
if [ "$q25" = "1000 4000" ] && [ "$q50" = "1000 2000" ] && [ "${q100%% *}" = -1 ] &&
	[ "$(quota_of 0 | cut -d' ' -f1)" = -1 ] &&
	! "$cl" quota 7 50 "$name" 2>"$tmp/q" && grep -q "no node 7" "$tmp/q"; then
	ok "quota per node: 1 ms in 4 at 25 %, in 2 at 50 %, none at 100 %; unknown node refused"
else
	echo "25 %: $q25; 50 %: $q50; 100 %: $q100" >>"$tmp/q"
	nok "quota" "$tmp/q"
fi
# Each node has its CPU set (CPU i mod the machine's CPUs), and its ranks run
# on it only.
ncpu=$(getconf _NPROCESSORS_ONLN)
c0=$("$cl" cpus 0 "$name") c1=$("$cl" cpus 1 "$name")
crun -np 3 sh -c 'echo "$HPCLB_HOST $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"' \
	>"$tmp/cpus" 2>&1
if [ -n "$c0" ] && [ -n "$c1" ] && { [ "$ncpu" -lt 2 ] || [ "$c0" != "$c1" ]; } &&
	grep -qx "$name-n0 $c0" "$tmp/cpus" && grep -qx "$name-n1 $c1" "$tmp/cpus"; then
	ok "nodes 0 and 1 have their own CPU sets ($c0, $c1) and their ranks run on them only"
else
	nok "CPU sets of the nodes: n0 '$c0', n1 '$c1'" "$tmp/cpus"
fi
# A busy process (interference) runs inside its node's cgroup and CPU set:
# it slows that node only.
pid=$("$cl" busy 1 30 "$name")
sleep 0.3
loop=$(pgrep -P "$pid" | head -1)
if [ -n "$pid" ] && [ -n "$loop" ] && grep -qE "cpu[,:].*$name/n1$" "/proc/$loop/cgroup" &&
	grep -qE "cpuset:.*$name/n1$|^0::/hpclb-$name/n1$" "/proc/$loop/cgroup" &&
	[ "$(awk '/^Cpus_allowed_list/ {print $2}' "/proc/$loop/status")" = "$c1" ]; then
	ok "busy process $pid (loop $loop) runs in node 1's cgroup and on its CPU set ($c1) only"
else
	nok "busy process not confined to node 1: $(cat "/proc/${loop:-$pid}/cgroup" 2>/dev/null | tr '\n' ' ') cpus $(awk '/^Cpus_allowed_list/ {print $2}' "/proc/${loop:-$pid}/status" 2>/dev/null)"
fi
# unbusy ends it (the loop too) and the nodes are left with nothing running.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
"$cl" unbusy 1 "$name" 2>"$tmp/ub"
rc=$?
sleep 0.2
left=$("$cl" leftovers "$name")
if [ $rc -eq 0 ] && ! alive "$pid" && ! alive "$loop" && [ -z "$left" ] &&
	! "$cl" unbusy 9 "$name" 2>"$tmp/ub9" && grep -q "no node '9'" "$tmp/ub9"; then
	ok "unbusy ends node 1's busy process and leaves nothing in the nodes; unknown node refused"
else
	nok "unbusy: exit $rc, left '$left' $(alive "$pid" && echo "busy $pid alive")" "$tmp/ub"
fi
pid=$("$cl" busy 2 30 "$name")
# A rank that dies on a node ends the whole job with an error, no hang.
crun -np 3 "$app" --n 256 --blocks 8 --iters 40 --die-at 5 >"$tmp/die" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && grep -q "exits at iteration 5" "$tmp/die"; then
	ok "a rank dying on a node ends the job (exit $rc) with an error"
else
	nok "dying rank on the cluster: exit $rc" "$tmp/die"
fi
# Down removes namespaces, bridge, cgroups and the busy process.
"$cl" down "$name"
sleep 0.2
if ! ip netns list | grep -q "^$name-" && ! ip link show "$name-br" >/dev/null 2>&1 &&
	! alive "$pid" && ! ls -d /sys/fs/cgroup/hpclb-"$name" /sys/fs/cgroup/cpu/hpclb-"$name" /sys/fs/cgroup/cpuset/hpclb-"$name" 2>/dev/null | grep -q .; then
	ok "down removes namespaces, bridge, cgroups and busy processes"
else
	nok "down left something behind: $(ip netns list | grep "^$name-" | tr "\n" " ")$(ip link show "$name-br" 2>/dev/null | head -1)$(alive "$pid" && echo " busy $pid alive")$(ls -d /sys/fs/cgroup/hpclb-"$name" /sys/fs/cgroup/cpu/hpclb-"$name" /sys/fs/cgroup/cpuset/hpclb-"$name" 2>/dev/null)"
fi
# Bad input.
if ! "$cl" up 0 "$name" 2>"$tmp/e1" && grep -q "N must be" "$tmp/e1" &&
	! "$cl" up 2 "BAD!" 2>"$tmp/e2" && grep -q "cluster name" "$tmp/e2" &&
	! "$cl" mpirun nosuch -- -np 1 true 2>"$tmp/e3" && grep -q "not up" "$tmp/e3"; then
	ok "bad arguments are refused with a message"
else
	nok "bad arguments" "$tmp/e1"
fi
end
