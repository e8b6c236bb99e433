# make reproduce, guest side (busybox ash): MetBench and MetBenchVar under one
# backend of this boot, way after way, printed on the console for the host
# (bench/repro/reproduce.sh extracts them; bench/repro/report.py reads them).
# Sourced by /tests/7*-repro-*.sh with BACKEND=kernel|scx.
#
# Per program and way, lines (the guest's init prefixes them with "# CASE: "):
# Ways: baseline (SCHED_OTHER), equal (the backend with every worker at
# priority 4: min_prio = max_prio = 4), static (each worker fixed at its
# static priority: hpcctl prio, i.e. sched_priority on the kernel class and
# scx_hpc's fixed_prios map under scx_hpc), uniform, adaptive, phase (the third
# heuristic). Round R > 1 of a way
# (hpc.repro_repeat) is named WAY@R.
#   REPRO PROG WAY begin
#   REPRO PROG WAY json {metbench --json}
#   REPRO PROG WAY csv LINE          (metbench --trace, header first)
#   REPRO PROG WAY prio P<n> <prio>  (last priority sampled while it ran)
#   REPRO PROG WAY end ok|failed REASON
#   REPRO PROG WAY na REASON         (a way this backend cannot run)
# Parameters from the kernel command line (run-qemu --append):
#   hpc.repro_progs=metbench,metbenchvar  hpc.repro_loads=L1,L2,L3,L4
#   hpc.repro_iters=N (MetBench)  hpc.repro_k=K (MetBenchVar: 3K iterations)
#   hpc.repro_static_metbench=P1,P2,P3,P4  hpc.repro_static_metbenchvar=...
#   (the static way's priorities; default 4,6,4,6, the paper's)
#   hpc.repro_repeat=R (rounds of every way; default 1)
MB=/usr/local/bin/metbench-shm-static
HPCCTL=/usr/local/bin/hpcctl
SCX_HPC=/usr/local/bin/scx_hpc
SYS=/sys/kernel/sched_hpc
fail=0

param() {  # param NAME DEFAULT: hpc.repro_NAME= from /proc/cmdline
	for w in $(cat /proc/cmdline); do
		case $w in "hpc.repro_$1="*) echo "${w#*=}"; return 0 ;; esac
	done
	echo "$2"
}
progs=$(param progs metbench,metbenchvar | tr , ' ')
loads=$(param loads 60,240,60,240)
iters=$(param iters 10)
k=$(param k 5)
repeat=$(param repeat 1)

# children PID: the master's workers, by pid (forked in order P1..P4)
children() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v pp="$1" '$4 == pp { print $1 }' | sort -n
}
# snap: what prio_of reads in this sample (scx: scx_hpc's task map, read
# once for all the workers: one hpcctl a sample)
snap() {
	[ "$BACKEND" = kernel ] || hctl status --tasks --json > /tmp/tasks.json 2>/dev/null
}
# prio_of PID: the task's priority under this backend (empty if none)
prio_of() {
	if [ "$BACKEND" = kernel ]; then
		sed -n 's/^prio: //p' /proc/$1/sched_hpc 2>/dev/null
	else
		tr '{' '\n' < /tmp/tasks.json | grep "\"pid\":$1," |
			sed -n 's/.*"prio":\([0-9]*\).*/\1/p'
	fi
}

# hctl ARGS: hpcctl for this backend
hctl() {
	if [ "$BACKEND" = kernel ]; then $HPCCTL "$@"; else $HPCCTL --backend scx "$@"; fi
}

# pin_static WORKERS: fix each worker at its static priority ($sprio, in
# worker order), all four at once (an hpcctl takes a while to start under
# TCG); 0 if every one took it
pin_static() {
	n=1 pids=
	for w in $1; do
		hctl prio "$w" "$(echo "$sprio" | cut -d, -f$n)" > /tmp/pin.$n 2>&1 &
		pids="$pids $!"
		n=$((n + 1))
	done
	rc=0 n=1
	for p in $pids; do
		if ! wait $p; then
			echo "# static: hpcctl prio: $(head -1 /tmp/pin.$n)"
			rc=1
		fi
		n=$((n + 1))
	done
	return $rc
}

# run_way PROG WAY [ROUND]: MetBench (PROG) once under WAY, sampled every
# 0.5 s (the static way: every 0.1 s until its workers are fixed)
run_way() {
	prog=$1 way=$2 round=${3:-1}
	name=$way
	[ "$round" = 1 ] || name=$way@$round
	set -- --loads "$loads" --wait block --pin 0,1,2,3 --json --trace /tmp/trace.csv
	if [ "$prog" = metbenchvar ]; then
		set -- "$@" --iterations $((3 * k)) --swap-every "$k"
	else
		set -- "$@" --iterations "$iters"
	fi
	# static: the workers wait at the start (metbench --hold) until each
	# one is fixed at its priority (an hpcctl takes seconds to start under
	# TCG), so that the whole run is static
	[ "$way" != static ] || set -- "$@" --hold 300
	echo "REPRO $prog $name begin"
	rm -f /tmp/out.json /tmp/err /tmp/trace.csv /tmp/prio.*
	case $way in
	baseline) $MB "$@" > /tmp/out.json 2> /tmp/err & ;;
	equal)
		# every worker at priority 4, balancing off (min = max = 4): the
		# paper's baseline on its SMT machine, here on emulated SMT cores
		if [ "$BACKEND" = kernel ]; then
			$HPCCTL run --set min_prio=4 --set max_prio=4 -- $MB "$@" > /tmp/out.json 2> /tmp/err &
		else
			$HPCCTL --backend scx run --set min_prio=4 --set max_prio=4 -- $MB "$@" > /tmp/out.json 2> /tmp/err &
		fi ;;
	static)
		# the backend as it is (heuristic irrelevant: every worker gets
		# a fixed priority as soon as it is seen)
		hctl run -- $MB "$@" > /tmp/out.json 2> /tmp/err & ;;
	uniform | adaptive | phase)
		# kernel: hpcctl sets /sys/kernel/sched_hpc/heuristic and runs the
		# command under SCHED_HPC; scx: it starts scx_hpc with the heuristic
		# (unloaded when the command is gone) and runs it under SCHED_EXT.
		if [ "$BACKEND" = kernel ]; then
			$HPCCTL run --heuristic $way -- $MB "$@" > /tmp/out.json 2> /tmp/err &
		else
			$HPCCTL --backend scx run --heuristic $way -- $MB "$@" > /tmp/out.json 2> /tmp/err &
		fi ;;
	esac
	bg=$!
	t0=$(cut -d' ' -f1 /proc/uptime)
	master= workers= pinned= pin_failed= left=
	while kill -0 $bg 2>/dev/null; do
		if [ -z "$master" ]; then
			# hpcctl execs the command or forks it: the master is $bg
			# itself once it runs MetBench, else its child that does
			# (the first match: the workers are named alike)
			for p in $bg $(children $bg); do
				if grep -q '^Name:.*metbench' /proc/$p/status 2>/dev/null; then
					master=$p
					break
				fi
			done
		fi
		if [ -n "$master" ]; then
			[ -n "$workers" ] || workers=$(children $master)
			[ $(echo $workers | wc -w) = 4 ] || workers=
			if [ "$way" = static ] && [ -n "$workers" ] && [ -z "$pinned$pin_failed" ]; then
				if pin_static "$workers"; then
					pinned=$(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')
				else
					pin_failed=1
				fi
				kill -USR1 "$master"	# start the run (reported failed if not fixed)
			fi
			n=1
			snap
			for w in $workers; do
				p=$(prio_of $w)
				[ -z "$p" ] || echo "$p" > /tmp/prio.$n
				# a fixed worker must stay at its priority
				if [ -n "$pinned" ] && [ -n "$p" ] && [ "$p" != "$(echo "$sprio" | cut -d, -f$n)" ]; then
					left="$left P$n:$p"
				fi
				n=$((n + 1))
			done
		fi
		if [ "$way" = static ] && [ -z "$pinned$pin_failed" ]; then
			sleep 0.1
		else
			sleep 0.5
		fi
	done
	wait $bg
	rc=$?
	echo "# $prog $name: master ${master:-not seen}, workers $(echo ${workers:-not seen}), samples $(cat /tmp/prio.* 2>/dev/null | wc -l)"
	[ "$way" != static ] || echo "# $prog $name: workers fixed at $sprio ${pinned:+after $pinned s, before the run started}${pin_failed:+: failed}${left:+; left it:$left}"
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "# $prog $name: exit $rc after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (guest uptime)"
	sed 's/^/# stderr: /' /tmp/err | head -5
	if [ $rc != 0 ]; then
		echo "REPRO $prog $name end failed exit status $rc"
		fail=1
		return
	fi
	if ! grep -q '"total_time_s"' /tmp/out.json; then
		echo "REPRO $prog $name end failed no JSON result"
		fail=1
		return
	fi
	if [ "$way" = static ] && [ -z "$pinned" ]; then
		echo "REPRO $prog $name end failed the workers could not be fixed at $sprio (hpcctl prio)"
		fail=1
		return
	fi
	if [ -n "$left" ]; then
		echo "REPRO $prog $name end failed a fixed worker ran at another priority:$left"
		fail=1
		return
	fi
	echo "REPRO $prog $name json $(cat /tmp/out.json)"
	[ -r /tmp/trace.csv ] && sed "s/^/REPRO $prog $name csv /" /tmp/trace.csv
	if [ "$way" != baseline ]; then
		for n in 1 2 3 4; do
			[ -r /tmp/prio.$n ] && echo "REPRO $prog $name prio P$n $(cat /tmp/prio.$n)"
		done
	fi
	echo "REPRO $prog $name end ok"
}

# restore: the backend's default priority range after the equal way
restore() {
	if [ "$BACKEND" = kernel ]; then
		echo 6 > $SYS/max_prio
		echo 4 > $SYS/min_prio
	else
		wait_disabled
	fi
}

wait_disabled() {
	n=150
	while [ $n -gt 0 ] && [ "$(cat /sys/kernel/sched_ext/state)" != disabled ]; do
		sleep 0.1
		n=$((n - 1))
	done
}

run_backend() {
	echo "# backend $BACKEND: programs $progs; loads $loads; MetBench $iters iterations; MetBenchVar k $k ($((3 * k)) iterations); $repeat round(s); $(nproc) CPUs"
	if [ "$BACKEND" = kernel ]; then
		[ -d $SYS ] || { echo "not ok - repro kernel: no $SYS (not a SCHED_HPC kernel)"; exit 1; }
		# The paper's machine: x86 boots with backend none (the class
		# decides priorities and applies none), so select the SMT
		# emulation; POWER boots with its own thread priorities.
		boot_backend=$(cat $SYS/backend)
		[ "$boot_backend" != none ] || echo x86-smt-emul > $SYS/backend
		echo "# sched_hpc: backend $(cat $SYS/backend), prio_range $(cat $SYS/prio_range), pairs $(cat $SYS/smt_pairs | tr '\n' ' ')"
		[ "$(cat $SYS/backend)" != none ] ||
			{ echo "not ok - repro kernel: no mechanism backend could be selected (backend none)"; exit 1; }
	else
		[ -e /sys/kernel/sched_ext/state ] || { echo "not ok - repro scx: no sched_ext in this kernel"; exit 1; }
		[ -x $SCX_HPC ] || { echo "not ok - repro scx: no $SCX_HPC in this image"; exit 1; }
	fi
	r=1
	while [ $r -le "$repeat" ]; do
		for prog in $progs; do
			sprio=$(param static_$prog 4,6,4,6)
			run_way $prog baseline $r
			run_way $prog static $r
			[ "$BACKEND" = kernel ] || wait_disabled
			run_way $prog equal $r
			restore
			run_way $prog uniform $r
			[ "$BACKEND" = kernel ] || wait_disabled
			run_way $prog adaptive $r
			[ "$BACKEND" = kernel ] || wait_disabled
			run_way $prog phase $r
			# scx_hpc unloads once its last task is gone: wait for it, so
			# that the next baseline runs without it
			[ "$BACKEND" = kernel ] || wait_disabled
		done
		r=$((r + 1))
	done
	if [ "$BACKEND" = kernel ]; then
		echo uniform > $SYS/heuristic
		echo "$boot_backend" > $SYS/backend
	fi
	if [ $fail = 0 ]; then echo "ok - repro $BACKEND: every way ran"; else echo "not ok - repro $BACKEND: a way failed"; fi
	exit $fail
}
