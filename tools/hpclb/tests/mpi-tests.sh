#!/usr/bin/env bash
# libhpclb under mpirun (2-4 ranks on this machine), TAP. Every mpirun runs
# under `timeout`, so nothing can hang the suite.
#
# usage: mpi-tests.sh BUILD_DIR
set -u
build=${1:?usage: mpi-tests.sh BUILD_DIR}
app=$build/tools/hpclb/hpclb-stencil2d
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$([ "$(id -u)" -eq 0 ] && echo --allow-run-as-root || true)
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$2" | tail -15; }
run() { # run NP OUT ARGS...: the app under mpirun with a 120 s limit
	local np=$1 out=$2
	shift 2
	timeout -k 5 120 mpirun $root --oversubscribe -np "$np" "$app" --n 512 --blocks 16 \
		--iters 60 --lb-every 10 "$@" >"$out" 2>&1
}
sum() { sed -n 's/^checksum //p' "$1"; }
blocks() { sed -n 's/^blocks per rank: //p' "$1"; }

[ -x "$app" ] || { echo "Bail out! $app is not built"; exit 1; }

# Moving blocks changes nothing in the result: the same checksum with every
# mode as without balancing, on 2 and 4 ranks, a slow rank forcing moves.
# These runs have 5 LB steps on a loaded machine, where a period may dip
# below the damping's threshold: a plan at every overloaded period
# (--persistence 1), so that blocks do move (the damping's own behaviour is
# tested deterministically in hpclb-tests, Damping.*).
for np in 2 4; do
	run "$np" "$tmp/none$np" --mode none --slow 0:4
	ref=$(sum "$tmp/none$np")
	for m in refine container drum; do
		run "$np" "$tmp/$m$np" --mode "$m" --slow 0:4 --persistence 1
		rc=$?
		moves=$(awk '/^lb step/ {m += $(NF-1)} END {print m + 0}' "$tmp/$m$np")
		# The refinement must have moved blocks, or this proves nothing.
		if [ $rc -eq 0 ] && [ -n "$ref" ] && [ "$(sum "$tmp/$m$np")" = "$ref" ] &&
			{ [ "$m" != refine ] || [ "$moves" -gt 0 ]; }; then
			ok "stencil2d $np ranks, $m: $moves moves, checksum $ref as without balancing"
		else
			nok "stencil2d $np ranks, $m: exit $rc, checksum $(sum "$tmp/$m$np") vs $ref" \
				"$tmp/$m$np"
		fi
	done
done
# Without the blocks' peers (--no-peers) the refinement picks its own
# blocks: they move and the result is the same.
run 2 "$tmp/nopeers" --mode refine --slow 0:4 --persistence 1 --no-peers
rc=$?
moves=$(awk '/^lb step/ {m += $(NF-1)} END {print m + 0}' "$tmp/nopeers")
if [ $rc -eq 0 ] && [ "$(sum "$tmp/nopeers")" = "$(sum "$tmp/none2")" ] && [ "$moves" -gt 0 ]; then
	ok "stencil2d --no-peers: $moves moves, checksum as without balancing"
else
	nok "stencil2d --no-peers: exit $rc, $moves moves" "$tmp/nopeers"
fi
# The documented example: every unit is somewhere, once, after the moves.
timeout -k 5 120 mpirun $root --oversubscribe -np 3 "$build/tools/hpclb/hpclb-example" >"$tmp/ex" 2>&1
rc=$?
units=$(awk '/^rank [0-9]+: [0-9]+ units$/ {u += $3; r++} END {print u + 0, r + 0}' "$tmp/ex")
moved=$(awk '/^step/ {m += $(NF-1)} END {print m + 0}' "$tmp/ex")
if [ $rc -eq 0 ] && [ "$units" = "32 3" ]; then
	ok "example: 32 units on 3 ranks after $moved moves"
else
	nok "example: exit $rc, units/ranks $units" "$tmp/ex"
fi
# The example builds as the documentation says, from an installed tree, with
# pkg-config (hpclb.pc.in with the prefix filled in).
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$tmp/inst/lib/pkgconfig" "$tmp/inst/include"
cp -r "$src/include/hpclb" "$tmp/inst/include/"
cp -P "$build"/tools/hpclb/libhpclb.so* "$tmp/inst/lib/"
sed "s|@HPCLB_PREFIX@|$tmp/inst|" "$src/hpclb.pc.in" >"$tmp/inst/lib/pkgconfig/hpclb.pc"
if PKG_CONFIG_PATH=$tmp/inst/lib/pkgconfig cc "$src/apps/example.c" \
	$(PKG_CONFIG_PATH=$tmp/inst/lib/pkgconfig pkg-config --cflags --libs hpclb) -o "$tmp/ex" \
	>"$tmp/cc" 2>&1 &&
	LD_LIBRARY_PATH=$tmp/inst/lib timeout -k 5 60 mpirun $root --oversubscribe -x LD_LIBRARY_PATH \
		-np 2 "$tmp/ex" >"$tmp/ex2" 2>&1 && [ "$(grep -c "units$" "$tmp/ex2")" -eq 2 ]; then
	ok "the example builds with pkg-config hpclb and runs"
else
	nok "the example with pkg-config" "$tmp/cc"
fi
# RUPER-LB at thread and MPI level: the job ends, every sample is run (a
# few more may run between a report and its answer), the estimate is pi.
for np in 2 3; do
	timeout -k 5 120 mpirun $root --oversubscribe -np $np "$build/tools/hpclb/hpclb-montecarlo" \
		--samples 10000000 --threads 2 --slow 1:4 >"$tmp/mc$np" 2>&1
	rc=$?
	got=$(sed -n 's/^samples \([0-9]*\) of .*/\1/p' "$tmp/mc$np")
	pi=$(sed -n 's/^pi //p' "$tmp/mc$np")
	split=$(sed -n 's/^rank \([0-9]*\): \([0-9]*\) samples.*/\1:\2/p' "$tmp/mc$np" | sort | tr '\n' ' ')
	if [ $rc -eq 0 ] && [ -n "$got" ] && [ "$got" -ge 10000000 ] &&
		awk -v p="$pi" 'BEGIN {exit !(p > 3.13 && p < 3.153)}'; then
		ok "montecarlo $np ranks x 2 threads: $got samples of 10000000 (by rank $split), pi $pi"
	else
		nok "montecarlo $np ranks: exit $rc, $got samples, pi $pi" "$tmp/mc$np"
	fi
done
timeout -k 5 60 mpirun $root --oversubscribe -np 2 "$build/tools/hpclb/hpclb-montecarlo" --threads 0 >"$tmp/mcbad" 2>&1
if [ $? -eq 2 ] && grep -q "bad arguments" "$tmp/mcbad"; then
	ok "montecarlo refuses bad arguments"
else
	nok "montecarlo bad arguments" "$tmp/mcbad"
fi
# Wave2D (two time levels per block): the same result wherever blocks run.
timeout -k 5 120 mpirun $root --oversubscribe -np 3 "$app" --kernel wave --n 512 --blocks 16 \
	--iters 60 --lb-every 10 --mode none --slow 0:4 >"$tmp/wnone" 2>&1
timeout -k 5 120 mpirun $root --oversubscribe -np 3 "$app" --kernel wave --n 512 --blocks 16 \
	--iters 60 --lb-every 10 --mode refine --slow 0:4 --persistence 1 >"$tmp/wref" 2>&1
rc=$?
wmoves=$(awk '/^lb step/ {m += $(NF-1)} END {print m + 0}' "$tmp/wref")
if [ $rc -eq 0 ] && [ -n "$(sum "$tmp/wnone")" ] && [ "$(sum "$tmp/wref")" = "$(sum "$tmp/wnone")" ] &&
	[ "$wmoves" -gt 0 ] && [ "$(sum "$tmp/wnone")" != "$(sum "$tmp/none2")" ]; then
	ok "wave2d 3 ranks, refine: $wmoves moves, checksum $(sum "$tmp/wref") as without balancing"
else
	nok "wave2d: exit $rc, $wmoves moves, checksum $(sum "$tmp/wref") vs $(sum "$tmp/wnone")" "$tmp/wref"
fi
# Without balancing nothing moves.
if [ "$(blocks "$tmp/none2")" = "128 128" ] && ! grep -qv " 0 moves$" <(grep '^lb step' "$tmp/none2"); then
	ok "mode none moves nothing"
else
	nok "mode none moved blocks" "$tmp/none2"
fi
# A rank that dies ends the job with an error naming it, well before the limit.
start=$(date +%s)
run 3 "$tmp/die" --mode refine --die-at 15
rc=$?
took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && grep -qi "rank 1" "$tmp/die" &&
	grep -q "exits at iteration 15" "$tmp/die"; then
	ok "a dying rank ends the job (exit $rc after ${took}s) with an error naming it"
else
	nok "a dying rank: exit $rc after ${took}s" "$tmp/die"
fi
# DRUM over the ranks. The node of a rank is named by $HPCLB_HOST (set per
# rank here with mpirun's app contexts) or, without it, by the processor
# name of its shared-memory group.
cat >"$tmp/m.xml" <<'XML'
<machinemodel numnode="4">
<node type="NETWORK_NODE" name="0" description="switch" childrenNum="2" children="1;2;" IsMonitorable="1"/>
<node type="COMPUTING_NODE" name="1" description="node-a" childrenNum="0" children=";" IsMonitorable="1" mflops="100"/>
<node type="NETWORK_NODE" name="2" description="switch-b" childrenNum="1" children="3;" IsMonitorable="1"/>
<node type="COMPUTING_NODE" name="3" description="node-b" childrenNum="0" children=";" IsMonitorable="1" mflops="300"/>
</machinemodel>
XML
# The monitor samples every 1 ms and an LB period lasts several (512 x 512
# over 10 iterations): the steps read aggregates of several samples even on
# an idle machine (at 256 x 256 and 5 ms the whole run took 7 ms there).
drum=("$app" --n 512 --blocks 8 --iters 40 --lb-every 10 --mode drum --monitor-period 0.001)
drum_run() { # drum_run OUT XML HOST_OF_RANKS_0_1 HOST_OF_RANK_2
	HPCLB_DEBUG=1 timeout -k 5 120 mpirun $root --oversubscribe \
		-np 2 -x HPCLB_DEBUG -x HPCLB_HOST="$3" "${drum[@]}" ${2:+--machine "$2"} : \
		-np 1 -x HPCLB_DEBUG -x HPCLB_HOST="$4" "${drum[@]}" ${2:+--machine "$2"} >"$1" 2>&1
}
share() { sed -n "s/^hpclb: drum rank $2 node [0-9]* ([^)]*) share \([^ ]*\) .*/\1/p" "$1" | head -1; }
drum_run "$tmp/dx" "$tmp/m.xml" node-a node-b
rc=$?
s0=$(share "$tmp/dx" 0) s1=$(share "$tmp/dx" 1) s2=$(share "$tmp/dx" 2)
timeout -k 5 120 mpirun $root --oversubscribe -np 3 "${drum[@]}" --mode none >"$tmp/dref" 2>&1
# node-b's 300 MFLOPS against node-a's 100 (from the XML): node-b's one rank
# gets more than both of node-a's together, which split node-a's share.
if [ $rc -eq 0 ] && grep -q "^hpclb: drum rank 1 node 1 (node-a)" "$tmp/dx" &&
	grep -q "^hpclb: drum rank 2 node 3 (node-b)" "$tmp/dx" && [ -n "$s0" ] && [ "$s0" = "$s1" ] &&
	awk -v a="$s0" -v b="$s2" 'BEGIN {exit !(b > 2 * a)}' && [ -n "$(sum "$tmp/dref")" ] &&
	[ "$(sum "$tmp/dx")" = "$(sum "$tmp/dref")" ]; then
	ok "drum, XML tree: ranks 0, 1 on node-a (share $s0 each), rank 2 on node-b (share $s2), checksum as without balancing"
else
	nok "drum with the XML tree: exit $rc, shares $s0 $s1 $s2" "$tmp/dx"
fi
# The monitor thread sampled beside the application and the step read it.
if [ $rc -eq 0 ] && grep -qE "^monitor samples \(fewest on a rank\): [1-9]" "$tmp/dx" &&
	grep -qE "^hpclb: drum rank .* samples [2-9]" "$tmp/dx"; then
	ok "drum: monitor threads sampled ($(sed -n 's/^monitor samples (fewest on a rank): //p' "$tmp/dx") on the rank with fewest) and the steps read their aggregates"
else
	nok "drum: no monitor samples read by the steps" "$tmp/dx"
fi
# A rank on a host the XML does not have: a clear error, the job ends.
drum_run "$tmp/dunk" "$tmp/m.xml" node-a node-zz
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 2 runs on host "node-zz", which is no computing node' "$tmp/dunk"; then
	ok "drum: a rank on an unknown host ends the job with a clear error"
else
	nok "drum unknown host: exit $rc" "$tmp/dunk"
fi
# A computing node of the XML without a rank: a clear error.
drum_run "$tmp/dmiss" "$tmp/m.xml" node-a node-a
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'computing node 3 (host "node-b") has no rank' "$tmp/dmiss"; then
	ok "drum: a computing node without a rank is a clear error"
else
	nok "drum missing host: exit $rc" "$tmp/dmiss"
fi
# Without XML the tree is discovered: one computing node per host name.
drum_run "$tmp/ddisc" "" h1 h2
rc=$?
if [ $rc -eq 0 ] && grep -q "^hpclb: drum rank 0 node 1 (h1)" "$tmp/ddisc" &&
	grep -q "^hpclb: drum rank 1 node 1 (h1)" "$tmp/ddisc" &&
	grep -q "^hpclb: drum rank 2 node 2 (h2)" "$tmp/ddisc"; then
	ok "drum: discovered tree, ranks grouped by host name (2 nodes)"
else
	nok "drum discovered tree: exit $rc" "$tmp/ddisc"
fi
# Without HPCLB_HOST, the ranks of this machine share one node (one
# shared-memory group, one processor name), equal shares.
HPCLB_DEBUG=1 timeout -k 5 120 mpirun $root --oversubscribe -np 3 -x HPCLB_DEBUG "${drum[@]}" >"$tmp/dloc" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c "^hpclb: drum rank [0-2] node 1 ($(hostname)) share 0.3333 " "$tmp/dloc")" -ge 3 ]; then
	ok "drum: ranks of one machine are one computing node ($(hostname)), a third each"
else
	nok "drum one machine: exit $rc" "$tmp/dloc"
fi
# A bad monitor period is refused on every rank, with the reason.
run 2 "$tmp/dper" --mode drum --monitor-period 100
rc=$?
if [ $rc -ne 0 ] && grep -q "monitor period must be in \[0.001, 60\]" "$tmp/dper"; then
	ok "drum: a bad monitor period is refused with a message"
else
	nok "drum bad monitor period: exit $rc" "$tmp/dper"
fi
# f_p measured once (default) or again at every LB step (--remeasure).
freqs() { sed -n 's/^hpclb: rank 1 freq \([^ ]*\) .*/\1/p' "$1" | sort -u | wc -l; }
HPCLB_DEBUG=1 timeout -k 5 120 mpirun $root --oversubscribe -np 2 -x HPCLB_DEBUG "$app" --n 256 \
	--blocks 8 --iters 40 --lb-every 10 --mode refine >"$tmp/f1" 2>&1
rc1=$?
HPCLB_DEBUG=1 timeout -k 5 120 mpirun $root --oversubscribe -np 2 -x HPCLB_DEBUG "$app" --n 256 \
	--blocks 8 --iters 40 --lb-every 10 --mode refine --remeasure 0.01 >"$tmp/f2" 2>&1
rc2=$?
steps=$(grep -c "^hpclb: rank 1 freq" "$tmp/f2")
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(freqs "$tmp/f1")" -eq 1 ] && [ "$steps" -ge 3 ] &&
	[ "$(freqs "$tmp/f2")" -ge 2 ]; then
	ok "f_p: one measure without --remeasure; $(freqs "$tmp/f2") different ones over $steps steps with it"
else
	nok "f_p re-measure: exit $rc1/$rc2, $(freqs "$tmp/f1") and $(freqs "$tmp/f2") values" "$tmp/f2"
fi
run 2 "$tmp/fbad" --mode refine --remeasure 20
rc=$?
if [ $rc -ne 0 ] && grep -q "re-measure time must be 0 (off) or in \[0.001, 10\] s" "$tmp/fbad"; then
	ok "a bad re-measure time is refused with a message"
else
	nok "bad re-measure time: exit $rc" "$tmp/fbad"
fi
# Bad damping parameters: the library's error, nothing runs.
for bad in "--persistence -1:persistence must be >= 1" "--max-moves 0:move budget must be >= 1" \
	"--move-fraction 0:move budget fraction must be in (0, 1]"; do
	run 2 "$tmp/dbad" --mode refine ${bad%%:*}
	rc=$?
	if [ $rc -ne 0 ] && grep -qF "${bad#*:}" "$tmp/dbad" && ! grep -q "^lb step" "$tmp/dbad"; then
		ok "damping ${bad%%:*} is refused: ${bad#*:}"
	else
		nok "damping ${bad%%:*}: exit $rc" "$tmp/dbad"
	fi
done
# --work K sweeps each block K times an iteration: the same result and the
# same LB steps.
run 2 "$tmp/work1" --mode none
run 2 "$tmp/work4" --mode none --work 4
steps() { awk '/^lb step/ {n++} END {print n + 0}' "$1"; }
if [ -n "$(sum "$tmp/work1")" ] && [ "$(sum "$tmp/work4")" = "$(sum "$tmp/work1")" ] &&
	[ "$(steps "$tmp/work4")" -gt 0 ] && [ "$(steps "$tmp/work4")" = "$(steps "$tmp/work1")" ]; then
	ok "stencil2d --work 4: the same checksum and LB steps as --work 1"
else
	nok "stencil2d --work: checksums $(sum "$tmp/work1") / $(sum "$tmp/work4")" "$tmp/work4"
fi
# Bad arguments: a clear error, exit 2, on every rank count.
bad_ok=0
for b in "--mode fastest" "--work 0" "--work 5000"; do
	run 2 "$tmp/bad" $b
	rc=$?
	if [ $rc -ne 0 ] && grep -q "bad arguments" "$tmp/bad" && ! grep -q "^lb step" "$tmp/bad"; then
		bad_ok=$((bad_ok + 1))
	else
		cp "$tmp/bad" "$tmp/bad-shown"
		echo "# $b: exit $rc" >>"$tmp/bad-shown"
	fi
done
if [ $bad_ok -eq 3 ]; then
	ok "bad arguments (an unknown mode, --work 0 and 5000) are refused with a message"
else
	nok "bad arguments: $bad_ok of 3 refused" "$tmp/bad-shown"
fi
echo "1..$n"
[ $fail -eq 0 ]
