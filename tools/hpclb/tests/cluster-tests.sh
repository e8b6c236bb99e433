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
if [ "$(grep -c "^10\.77\." "$tmp/where")" -eq 3 ] &&
	[ "$(cut -d' ' -f1 "$tmp/where" | sort -u | wc -l)" -eq 3 ] &&
	[ "$(grep -oE "$name/n[0-9]+" "$tmp/where" | sort -u | wc -l)" -eq 3 ]; then
	ok "mpirun places one rank per node: 3 addresses, 3 node cgroups"
else
	nok "ranks are not one per node" "$tmp/where"
fi
# Blocks move between nodes over TCP and the result is unchanged.
args=(--n 512 --blocks 16 --iters 40 --lb-every 10 --slow 0:4)
crun -np 3 "$app" "${args[@]}" --mode none >"$tmp/none" 2>&1
crun -np 3 "$app" "${args[@]}" --mode refine >"$tmp/refine" 2>&1
rc=$?
ref=$(sed -n 's/^checksum //p' "$tmp/none")
moves=$(awk '/^lb step/ {m += $(NF-1)} END {print m + 0}' "$tmp/refine")
if [ $rc -eq 0 ] && [ -n "$ref" ] && [ "$(sed -n 's/^checksum //p' "$tmp/refine")" = "$ref" ] &&
	[ "$moves" -gt 0 ]; then
	ok "stencil2d across 3 nodes: $moves block moves, checksum $ref as without balancing"
else
	nok "stencil2d across nodes: exit $rc, $moves moves, checksum vs $ref" "$tmp/refine"
fi
# A node's CPU quota is set on its cgroup, and refused for unknown nodes.
if "$cl" quota 1 25 "$name" && "$cl" quota 1 100 "$name" && ! "$cl" quota 7 50 "$name" 2>"$tmp/q" &&
	grep -q "no node 7" "$tmp/q"; then
	ok "quota per node; an unknown node is refused with a message"
else
	nok "quota" "$tmp/q"
fi
# A busy process (interference) runs inside the node's cgroup.
pid=$("$cl" busy 2 30 "$name")
sleep 0.3
if [ -n "$pid" ] && grep -qE "$name/n2" "/proc/$pid/cgroup" 2>/dev/null; then
	ok "busy process $pid runs in node 2's cgroup"
else
	nok "busy process not in node 2's cgroup"
fi
# A rank that dies on a node ends the whole job with an error, no hang.
crun -np 3 "$app" --n 256 --blocks 8 --iters 40 --die-at 5 >"$tmp/die" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && grep -q "exits at iteration 5" "$tmp/die"; then
	ok "a rank dying on a node ends the job (exit $rc) with an error"
else
	nok "dying rank on the cluster: exit $rc" "$tmp/die"
fi
# A process that still runs (a zombie waiting for its reaper does not).
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# Down removes namespaces, bridge, cgroups and the busy process.
"$cl" down "$name"
sleep 0.2
if ! ip netns list | grep -q "^$name-" && ! ip link show "$name-br" >/dev/null 2>&1 &&
	! alive "$pid" && ! ls -d /sys/fs/cgroup/hpclb-"$name" /sys/fs/cgroup/cpu/hpclb-"$name" 2>/dev/null | grep -q .; then
	ok "down removes namespaces, bridge, cgroups and busy processes"
else
	nok "down left something behind: $(ip netns list | grep "^$name-" | tr "\n" " ")$(ip link show "$name-br" 2>/dev/null | head -1)$(alive "$pid" && echo " busy $pid alive")$(ls -d /sys/fs/cgroup/hpclb-"$name" /sys/fs/cgroup/cpu/hpclb-"$name" 2>/dev/null)"
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
