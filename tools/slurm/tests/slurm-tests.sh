#!/usr/bin/env bash
# The slurm suite: the hpcsched SPANK plugin in a real Slurm that the suite
# starts itself (tools/slurm/tests/cluster.sh: munged, slurmctld, slurmd of
# Debian's packages, one node, every file in a temporary directory), root.
# MetBench (a master and 4 workers, loads light/heavy/light/heavy) is
# launched by srun itself (Open MPI's ranks through PMIx) with --hpcsched;
# then the errors, a job without the option, scancel and a killed rank. TAP.
#
# usage: tools/slurm/tests/slurm-tests.sh BUILD   (from the top of the tree)
set -u
build=$(cd "${1:-build}" && pwd)
top=$(pwd)
# shellcheck source=../../../tests/tap.sh
. tests/tap.sh
# shellcheck source=cluster.sh
. tools/slurm/tests/cluster.sh

plugin=$build/tools/slurm/hpcsched.so
hpcctl=$build/tools/hpcd/hpcctl hpcd=$build/tools/hpcd/hpcd
mb=$build/bench/metbench/metbench

if [ "$(id -u)" -ne 0 ]; then
	nok "the slurm suite runs slurmctld, slurmd and hpcd: run it as root"
	tap_end
	exit 1
fi
for f in "$plugin" "$hpcctl" "$hpcd" "$mb" "$build/tools/hpcmon/libhpcmon.so" "$build/tools/hpcd/hpcd-spin"; do
	[ -e "$f" ] || { nok "$f is built (make slurm-plugin hpcd metbench hpcmon)"; tap_end; exit 1; }
done

work=$(mktemp -d /tmp/slurm-suite.XXXXXX)
chmod 755 "$work"
run=$work/run job=$work/job
mkdir -p "$job"
cleanup() {
	cluster_down
	# A failed run keeps its logs (Slurm's, the jobs' output and reports).
	if [ "$failed" -gt 0 ] && [ -n "${RESULTS:-}" ]; then
		rm -rf "$RESULTS/slurm-failed"
		mkdir -p "$RESULTS/slurm-failed"
		cp -r "$work"/*.out "$work"/*.err "$work"/*.json "$work/job" "$work/slurm/log" \
			"$RESULTS/slurm-failed/" 2>/dev/null
		echo "# the failed run's logs: $RESULTS/slurm-failed"
	fi
	# Whatever a failed check left: this suite's hpcds (their sockets are
	# under $run), then hpcd --cleanup for trees of dead instances.
	for p in $(pgrep -f -- "--control $run/" 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for p in $(pgrep -f -- "--control $run/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	tap_cleanup
}
trap cleanup EXIT

# hpcmon-lib of the source tree, for the libraries of BUILD.
hpcmon_lib=$work/hpcmon-lib
printf '#!/bin/sh\nexec %s --build %s "$@"\n' "$top/tools/hpcmon/hpcmon-lib" "$build" >"$hpcmon_lib"
chmod 755 "$hpcmon_lib"
cat >"$work/plugstack.conf" <<EOF
required $plugin hpcctl=$hpcctl hpcd=$hpcd hpcmon_lib=$hpcmon_lib rundir=$run
EOF
if ! cluster_up "$work/plugstack.conf"; then
	nok "a one-node Slurm starts (munged, slurmctld, slurmd)" "$(tail -5 "$work"/slurm/log/*.log 2>/dev/null)"
	tap_end
	exit 1
fi
ok "a one-node Slurm of its own: $(sinfo -h -o '%N %c CPUs %T'), plugstack.conf loads $plugin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
cd "$job" || exit 1

check "srun --help lists --hpcsched and --hpcsched-set" bash -c \
	"srun --help 2>&1 | grep -q -- '--hpcsched=uniform|adaptive|phase|off' && srun --help 2>&1 | grep -q -- '--hpcsched-set='"
mpi=pmix
if ! srun --mpi=list 2>&1 | grep -qw pmix; then
	mpi=pmi2
fi

# This suite's hpcd (its control socket under $run), and what it made.
our_hpcd() { pgrep -f -- "--control $run/" | head -1; }
# Wait for a step's hpcd to have N tasks; prints "pid guardian instance ctl".
step_hpcd() {
	local n=$1 ctl=
	wait_for 60 'ctl=$(ls "$run"/*/hpcd.ctl 2>/dev/null | head -1); [ -n "$ctl" ] &&
		HPCD_CONTROL=$ctl "$hpcctl" --backend hpcd status --json >"$work/st.json" 2>/dev/null &&
		[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"tasks\"])" "$work/st.json")" -ge "$n" ]' ||
		return 1
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["pid"], s["guardian"], s["instance"], sys.argv[2])' \
		"$work/st.json" "$ctl"
}
# Nothing of a step's hpcd left: the processes, its cgroups, the run directory.
all_gone() {
	local hp=$1 gp=$2 inst=$3
	! kill -0 "$hp" 2>/dev/null && ! kill -0 "$gp" 2>/dev/null && [ ! -e "$inst" ] &&
		[ -z "$(ls -A "$run" 2>/dev/null)" ] && [ -z "$(our_hpcd)" ]
}
# The priorities each rank ran with in turn, from a report: "rank:4>5>6 ..."
prio_hist() {
	awk '/^P[0-9]+ / { n = split($0, f, " "); p = "";
		for (i = 1; i <= n; i++) if (f[i] ~ /^[1-6](>([1-6]|\.\.))*$/) p = f[i];
		printf "%s:%s ", substr($1, 2), p }' "$1"
}

# --- 1. a job that does not ask: untouched ---------------------------------------------
srun -n 2 -O sh -c 'echo "pre=[$LD_PRELOAD] sock=[$HPCD_SOCKET]"; ls -A '"$run"' 2>/dev/null | wc -l' \
	>"$work/plain.out" 2>"$work/plain.err"
rc=$?
check "a job without --hpcsched: runs (exit $rc), no LD_PRELOAD, no HPCD_SOCKET, no hpcd started ($(sort -u "$work/plain.out" | tr '\n' ' '))" \
	bash -c "[ $rc -eq 0 ] && [ \$(grep -c '^pre=\[\] sock=\[\]$' '$work/plain.out') -eq 2 ] &&
		[ \$(grep -cx 0 '$work/plain.out') -eq 2 ] && ! grep -q hpcsched '$work/plain.err'"
check "a job without --hpcsched: no report written" test -z "$(ls "$job" | grep hpcsched)"

# --- 2. the errors: one clear line, the program never runs --------------------------
srun -n 1 --hpcsched=bogus touch "$work/ran.bogus" >"$work/e1.out" 2>"$work/e1.err"; rc=$?
check "--hpcsched=bogus: refused by srun (exit $rc), one line names it: $(grep -m1 'hpcsched:' "$work/e1.err")" \
	bash -c "[ $rc -ne 0 ] && [ \$(grep -c \"hpcsched: --hpcsched: 'bogus' is not a heuristic (uniform, adaptive, phase, or off)\" '$work/e1.err') -eq 1 ] &&
		[ \$(grep -c 'hpcsched:' '$work/e1.err') -eq 1 ] && [ ! -e '$work/ran.bogus' ]"
HPCSCHED=bogus srun -n 1 touch "$work/ran.env" >"$work/e2.out" 2>"$work/e2.err"; rc=$?
check "HPCSCHED=bogus: refused (exit $rc), one line: $(grep -m1 'hpcsched:' "$work/e2.err")" \
	bash -c "[ $rc -ne 0 ] && [ \$(grep -c 'hpcsched:' '$work/e2.err') -eq 1 ] && grep -q \"HPCSCHED: 'bogus' is not a heuristic\" '$work/e2.err' && [ ! -e '$work/ran.env' ]"
srun -n 2 -O --hpcsched=adaptive --hpcsched-set low_util=999 touch "$work/ran.set" >"$work/e3.out" 2>"$work/e3.err"; rc=$?
check "--hpcsched-set low_util=999: the step fails (exit $rc) with hpcd's reason, one line: $(grep -m1 'hpcsched:' "$work/e3.err")" \
	bash -c "[ $rc -ne 0 ] && [ \$(grep -c 'hpcsched:' '$work/e3.err') -eq 1 ] &&
		grep -q 'hpcsched: job [0-9]*\.0: hpcd refused to start: .*low_util' '$work/e3.err' && [ ! -e '$work/ran.set' ]"
check "--hpcsched-set low_util=999: no hpcd, no run directory left" bash -c "[ -z \"\$(ls -A '$run' 2>/dev/null)\" ] && [ -z \"$(our_hpcd)\" ]"
srun -n 1 --hpcsched=uniform --hpcsched-set low_util true >"$work/e4.out" 2>"$work/e4.err"; rc=$?
check "--hpcsched-set low_util (no value): refused by srun (exit $rc): $(grep -m1 'hpcsched:' "$work/e4.err")" \
	bash -c "[ $rc -ne 0 ] && grep -q \"hpcsched: --hpcsched-set: 'low_util' is not KEY=VALUE\" '$work/e4.err'"

# --- 2b. a node with the kernel class (a stand-in sysfs: the same files) -----------
# hpcctl's choice as hpcctl makes it: the class's directory exists, so the
# step's settings go to it through hpcctl --backend kernel set; this kernel
# has no SCHED_HPC, so the tasks then cannot switch: one line, no program run.
k=$work/sysfs
mkdir -p "$k"
for kv in low_util=65 high_util=85 min_prio=4 max_prio=6 global_weight=10 last_weight=90 \
	heuristic=uniform min_wait_us=100 queue=rr timeslice_us=100000 emul_period_us=10000 \
	backend=none "prio_range=1 6" "smt_pairs=0 1"; do echo "${kv#*=}" >"$k/${kv%%=*}"; done
cp "$work/plugstack.conf" "$work/plugstack.hpcd"
echo "required $plugin hpcctl=$hpcctl hpcd=$hpcd hpcmon_lib=$hpcmon_lib rundir=$run sysfs=$k" >"$work/plugstack.conf"
srun -n 1 --hpcsched=uniform --hpcsched-set low_util=90 touch "$work/ran.k1" >"$work/k1.out" 2>"$work/k1.err"; rc=$?
check "kernel class, --hpcsched-set low_util=90 (not below high_util): hpcctl set refuses (exit $rc), one line, nothing written: $(grep -m1 'hpcsched:' "$work/k1.err")" \
	bash -c "[ $rc -ne 0 ] && [ \$(grep -c 'hpcsched:' '$work/k1.err') -eq 1 ] && grep -q 'hpcsched: job [0-9]*\.0: .*low_util' '$work/k1.err' &&
		[ \"\$(cat '$k/low_util')/\$(cat '$k/heuristic')\" = 65/uniform ] && [ ! -e '$work/ran.k1' ]"
srun -n 2 -O --hpcsched=adaptive --hpcsched-set low_util=60 touch "$work/ran.k2" >"$work/k2.out" 2>"$work/k2.err"; rc=$?
if [ -d /sys/kernel/sched_hpc ]; then
	skip "kernel class: the tasks switch to SCHED_HPC" "this kernel has the class: the stand-in is not needed"
else
	check "kernel class: the step's settings written by hpcctl ($(cat "$k/low_util")/$(cat "$k/heuristic")), the tasks cannot switch on this kernel: exit $rc, one line: $(grep -m1 'hpcsched:' "$work/k2.err")" \
		bash -c "[ $rc -ne 0 ] && [ \"\$(cat '$k/low_util')/\$(cat '$k/heuristic')\" = 60/adaptive ] &&
			[ \$(grep -c 'hpcsched:' '$work/k2.err') -eq 1 ] && grep -q 'cannot switch the tasks to SCHED_HPC' '$work/k2.err' &&
			[ ! -e '$work/ran.k2' ]"
fi
check "kernel class: no hpcd started, the run directory empty" bash -c "[ -z \"\$(ls -A '$run')\" ] && [ -z '$(our_hpcd)' ]"
cp "$work/plugstack.hpcd" "$work/plugstack.conf"
rm -f "$job"/hpcsched-*

# --- 3. MetBench under srun --hpcsched=adaptive -------------------------------------
# make run's workload on the emulated SMT cores (mode=smt-emul, waits=poll:
# the ranks sleep in their waits, hpcd counts them polling), rank 0 (the
# master) not paired: the heavy workers (P2, P4) must rise to 5 or 6, the
# light ones (P1, P3) stay at 4. 60 iterations (some 8 s): the step still
# runs when its hpcd is asked for its tasks, on a slow machine too (20
# iterations took 3 s, and were over by then at times).
export HPCMON_BLOCKING_WAIT=1 HPCMON_QUIET=1
mbargs=(--loads 500,2000,500,2000 --iterations 60 --wait spin)
srun -n 5 -O --mpi=$mpi --hpcsched=adaptive --hpcsched-set mode=smt-emul,waits=poll,ignore_ranks=0 \
	"$mb" "${mbargs[@]}" >"$work/mb.out" 2>"$work/mb.err" &
sp=$!
pids+=($sp)
if read -r hp gp inst ctl < <(step_hpcd 4); then
	ok "srun --hpcsched=adaptive MetBench: the step's hpcd (pid $hp) manages its 4 workers"
	HPCD_CONTROL=$ctl "$hpcctl" --backend hpcd top --once --json >"$work/top.json" 2>&1
	trc=$?
	check "every worker is monitored (libhpcmon in LD_PRELOAD, HPCD_SOCKET): ranks $(python3 -c 'import json,sys; print(sorted((t["rank"], t["source"]) for t in json.load(open(sys.argv[1]))))' "$work/top.json" 2>/dev/null || echo "unread: hpcctl top exit $trc: $(head -c 300 "$work/top.json")")" \
		python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert sorted((x["rank"], x["source"]) for x in t) == [(r, "monitor") for r in (1, 2, 3, 4)]' "$work/top.json"
else
	nok "srun --hpcsched=adaptive MetBench: the step's hpcd manages its 4 workers" "$(cat "$work/mb.err")" \
		"status: $(cat "$work/st.json" 2>/dev/null)" "$(tail -5 "$run"/*/hpcd.log 2>/dev/null)"
	hp=999999999 gp=999999999 inst=/nonexistent
fi
wait $sp; rc=$?
check "MetBench under srun: exit 0 ($rc), its 5 ranks ran ($(grep -c . "$work/mb.out") lines of output)" \
	test $rc -eq 0
# srun returns when the tasks end; slurmstepd then writes the report and
# removes the run directory.
check "MetBench: every hpcd, guardian, cgroup and socket of the step gone" wait_for 30 "all_gone '$hp' '$gp' '$inst'"
jobid=$(basename "$(dirname "${ctl:-/0.0/x}")")
jobid=${jobid%%.*}
rep=$job/hpcsched-$jobid.0.txt
check "the report was written: $rep" test -s "$rep"
sed 's/^/#   /' "$rep" 2>/dev/null | head -20
check "the report: rows P1..P4 (the workers), with % compute and priorities" bash -c \
	"[ \$(grep -cE '^P[1-4] ' '$rep') -eq 4 ] && ! grep -qE '^P0 ' '$rep'"
# The heavy workers rise to 5 or 6 (where a lead overshot on this busy
# machine, the rule's lid holds them a step below); the light ones never
# leave 4.
fp=$(prio_hist "$rep")
check "imbalanced ranks at the expected priorities: heavy P2, P4 rose to 5 or 6, light P1, P3 stayed at 4 ($fp)" \
	bash -c "[[ ' $fp' =~ \ 1:4\  ]] && [[ ' $fp' =~ \ 3:4\  ]] && [[ ' $fp' =~ \ 2:[^\ ]*[56] ]] && [[ ' $fp' =~ \ 4:[^\ ]*[56] ]]"
check "the report: LIP and load balance efficiency (libhpcmon)" grep -qE '^LIP [0-9.]+ %, load balance efficiency [0-9.]+' "$rep"
check "the report's header: job, backend hpcd, heuristic adaptive, the settings" \
	grep -q "^hpcsched: job $jobid step 0 on .*: hpcd, heuristic adaptive, mode=smt-emul,waits=poll,ignore_ranks=0, 5 task(s)" "$rep"
check "the step's trace beside it (hpcsched-$jobid.0.jsonl), readable by hpcctl report" \
	bash -c "\"$hpcctl\" report \"$job/hpcsched-$jobid.0.jsonl\" | grep -qE \"^P[1-4] \""

# --- 3b. a program without MPI: its tasks added to hpcd by pid ----------------------
spin=$build/tools/hpcd/hpcd-spin
srun -n 2 -O --hpcsched=uniform "$spin" 2 50 50 >"$work/sp.out" 2>"$work/sp.err"; rc=$?
wait_for 30 '[ -z "$(ls -A "$run")" ]'
sj=$(ls "$job" | sed -n 's/^hpcsched-\([0-9]*\)\.0\.txt$/\1/p' | sort -n | tail -1)
srep=$job/hpcsched-$sj.0.txt
sed 's/^/#   /' "$srep" 2>/dev/null | sed -n '3,6p'
check "a program without MPI (hpcd-spin, 2 tasks): exit $rc, both tasks added by pid, their iterations followed" \
	bash -c "[ $rc -eq 0 ] && [ \$(awk '\$3 == \"hpcd-spin\" && \$4 >= 5' '$srep' | wc -l) -eq 2 ]"
check "a program without MPI: no libhpcmon preloaded, nothing left" bash -c \
	"! grep -q hpcmon '$work/sp.err' && [ -z \"\$(ls -A '$run')\" ] && [ -z '$(our_hpcd)' ]"

# --- 4. scancel of a running step -----------------------------------------------------
long=(--loads 500,2000,500,2000 --iterations 100000 --wait spin)
srun -n 5 -O --mpi=$mpi --hpcsched=uniform --hpcsched-set ignore_ranks=0 "$mb" "${long[@]}" \
	>"$work/sc.out" 2>"$work/sc.err" &
sp=$!
pids+=($sp)
if read -r hp gp inst ctl < <(step_hpcd 4); then
	jid=$(squeue -h -o %i | head -1)
	scancel "$jid"
	wait_for 60 "! kill -0 $sp 2>/dev/null"
	check "scancel of a running step (job $jid): srun ends" bash -c "! kill -0 $sp 2>/dev/null"
	check "scancel: hpcd ($hp), its guardian ($gp), cgroups ($inst) and sockets gone" \
		wait_for 20 "all_gone '$hp' '$gp' '$inst'"
	check "scancel: no rank left running" wait_for 10 "! pgrep -f -- '$mb --loads 500,2000,500,2000 --iterations 100000' >/dev/null"
	check "scancel: the report still written" test -s "$job/hpcsched-$jid.0.txt"
else
	nok "scancel: the step's hpcd manages its 4 workers" "$(cat "$work/sc.err")"
fi
wait $sp 2>/dev/null

# --- 5. one rank killed (SIGKILL) -----------------------------------------------------
srun -n 5 -O --mpi=$mpi -K --hpcsched=phase --hpcsched-set ignore_ranks=0 "$mb" "${long[@]}" \
	>"$work/k.out" 2>"$work/k.err" &
sp=$!
pids+=($sp)
if read -r hp gp inst ctl < <(step_hpcd 4); then
	HPCD_CONTROL=$ctl "$hpcctl" --backend hpcd top --once --json >"$work/ktop.json" 2>&1
	victim=$(python3 -c 'import json,sys; print([t["pid"] for t in json.load(open(sys.argv[1])) if t["rank"] == 2][0])' "$work/ktop.json")
	kill -KILL "$victim"
	wait_for 60 "! kill -0 $sp 2>/dev/null"
	check "kill -9 of rank 2 (pid $victim): the step ends (srun -K)" bash -c "! kill -0 $sp 2>/dev/null"
	check "kill -9 of a rank: hpcd ($hp), its guardian ($gp), cgroups ($inst) and sockets gone" \
		wait_for 20 "all_gone '$hp' '$gp' '$inst'"
	check "kill -9 of a rank: no rank left running" wait_for 10 "! pgrep -f -- '$mb --loads 500,2000,500,2000 --iterations 100000' >/dev/null"
else
	nok "kill -9 of a rank: the step's hpcd manages its 4 workers" "$(cat "$work/k.err")"
fi
wait $sp 2>/dev/null

# --- 6. #SBATCH --hpcsched: the job's sruns inherit it ----------------------------
cat >"$work/batch.sh" <<EOF
#!/bin/bash
#SBATCH --hpcsched=adaptive
#SBATCH -n 5 -O
#SBATCH -o $work/batch.out
srun --mpi=$mpi $mb --loads 20,80,20,80 --iterations 10 --wait spin
EOF
bj=$(sbatch --parsable "$work/batch.sh" 2>"$work/batch.err")
check "sbatch with #SBATCH --hpcsched=adaptive: submitted ($bj)" test -n "$bj"
wait_for 120 "[ -z \"\$(squeue -h -j $bj 2>/dev/null)\" ]"
check "#SBATCH --hpcsched: the job's srun step ran under hpcd, its report written (hpcsched-$bj.0.txt)" \
	wait_for 30 "grep -q '^hpcsched: job $bj step 0 .*hpcd, heuristic adaptive' '$job/hpcsched-$bj.0.txt' &&
		[ \$(grep -cE '^P[0-4] ' '$job/hpcsched-$bj.0.txt') -ge 4 ]"
check "#SBATCH --hpcsched: the batch script itself not managed (no report for its batch step)" \
	bash -c "[ \$(ls '$job' | grep -c 'hpcsched-$bj\.') -eq 2 ]"

# --- 6b. another user's job (nobody): hpcmon-lib and the report as the user -----------
mkdir -p "$work/njob"
chown nobody:nogroup "$work/njob"
cat >"$work/nbatch.sh" <<EOF
#!/bin/bash
#SBATCH -n 5 -O
#SBATCH -o $work/njob/out
srun --mpi=$mpi --hpcsched=uniform $mb --loads 20,80,20,80 --iterations 10 --wait spin
EOF
nj=$(sbatch --uid=nobody --gid=nogroup --chdir="$work/njob" --parsable "$work/nbatch.sh" 2>"$work/nbatch.err")
wait_for 120 "[ -n '$nj' ] && [ -z \"\$(squeue -h -j '$nj' 2>/dev/null)\" ]"
nrep=$work/njob/hpcsched-$nj.0.txt
wait_for 30 "[ -s '$nrep' ] && [ -z \"\$(ls -A '$run')\" ]"
check "a job of nobody: its ranks monitored by the step's hpcd, the report written as nobody ($(stat -c %U "$nrep" 2>/dev/null))" \
	bash -c "[ \"\$(stat -c %U '$nrep')\" = nobody ] && grep -q '^hpcsched: job $nj step 0 .*hpcd, heuristic uniform' '$nrep' &&
		[ \$(grep -cE '^P[0-4] ' '$nrep') -ge 4 ]"
check "a job of nobody: nothing left in the run directory, no hpcd" bash -c "[ -z \"\$(ls -A '$run')\" ] && [ -z '$(our_hpcd)' ]"

# --- 7. everything this suite started stops -------------------------------------------
cluster_down
check "the cluster stops: no slurmctld, slurmd, munged of this suite left" bash -c \
	"! kill -0 ${cluster_ctld:-0} 2>/dev/null && ! kill -0 ${cluster_slurmd:-0} 2>/dev/null && ! kill -0 ${cluster_munged:-0} 2>/dev/null"
tap_end
