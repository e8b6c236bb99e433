#!/usr/bin/env bash
# make reproduce: the paper's four programs — MetBench, MetBenchVar, BT-MZ
# (bench/btmz proxy) and SIESTA (bench/siesta proxy) — under baseline, static
# priorities, Uniform, Adaptive and Phase (the third heuristic, which the
# paper does not have) on every backend this machine offers, and a report
# (Markdown + PNG) beside the paper's Tables III-VI.
#
# Backends: hpcd (cgroup SMT emulation, any kernel) always; the simulator's
# model view always; MetBench and MetBenchVar also on the SCHED_HPC kernel
# and under scx_hpc, each in one QEMU boot (bench/repro/guest: baseline
# SCHED_OTHER, static priorities (sched_priority, scx_hpc's fixed_prios), every
# worker at priority 4, Uniform, Adaptive, Phase) where the kernel (and scx_hpc)
# are built; backends.txt says which ran and why the others did not. BT-MZ
# and SIESTA are MPI programs: hpcd only. REPRO_REPEAT=N runs every way N
# times (rounds one after the other, each way of a round side by side); the
# report shows medians and spread.
#
# usage: reproduce.sh BUILD_DIR [OUT_DIR]           (as root: hpcd creates cgroups)
#        reproduce.sh --backends BUILD_DIR         which backends would run, and
#                                                  why not the others; runs nothing
# env:   REPRO_PROGRAMS ("metbench metbenchvar btmz siesta")  REPRO_REPEAT (1)
#        MB_LOADS (500,2000,500,2000)  MB_ITERATIONS (20)  MBV_K (15)
#        BTMZ_CLASS (A)  BTMZ_STEPS (class default: 200)  BTMZ_MAPPING (rows)
#        SIESTA_ARGS ("")  SIESTA_NOISE ("--procs 2 --busy-us 2000 --sleep-us 8000")
#        REPRO_GUEST (auto: guest backends where built; no: none)
#        GUEST_KERNEL (build-kernel/bzImage)  GUEST_LOADS (40,160,40,160)
#        GUEST_ITERATIONS (16)  GUEST_K (5)  GUEST_TIMEOUT (1200 s per boot and round)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
backends_only=0
if [ "${1:-}" = --backends ]; then
	backends_only=1
	shift
fi
build=${1:?usage: reproduce.sh [--backends] BUILD_DIR [OUT_DIR]}
out=${2:-$build/reproduce}
programs=${REPRO_PROGRAMS:-metbench metbenchvar btmz siesta}
mb_loads=${MB_LOADS:-500,2000,500,2000} mb_iters=${MB_ITERATIONS:-20} k=${MBV_K:-15}
bt_class=${BTMZ_CLASS:-A} bt_steps=${BTMZ_STEPS:-} bt_map=${BTMZ_MAPPING:-rows}
si_args=${SIESTA_ARGS:-} si_noise=${SIESTA_NOISE:---procs 2 --busy-us 2000 --sleep-us 8000}
ways3=$top/tools/hpcd/metbench-3ways.sh
sim=$build/tools/sim/hpcsim btmz=$build/bench/btmz/btmz
siesta=$build/bench/siesta/siesta-proxy noise=$build/bench/siesta/siesta-noise
tables=$top/Documentation/data/paper-tables.json
guest=${REPRO_GUEST:-auto}
repeat=${REPRO_REPEAT:-1}
gkernel=${GUEST_KERNEL:-$top/build-kernel/bzImage}
g_loads=${GUEST_LOADS:-40,160,40,160} g_iters=${GUEST_ITERATIONS:-16} g_k=${GUEST_K:-5}
g_timeout=${GUEST_TIMEOUT:-1200}
scx_root=$build/scx/guest-root hpcctl_root=$build/scx/hpcctl-root
mbstatic=$build/bench/metbench/metbench-shm-static

for p in $programs; do
	case $p in metbench | metbenchvar | btmz | siesta) ;;
	*) echo "reproduce: unknown program '$p' (metbench metbenchvar btmz siesta)" >&2; exit 2 ;;
	esac
done
case $guest in auto | no) ;; *) echo "reproduce: REPRO_GUEST must be auto or no" >&2; exit 2 ;; esac
[[ $repeat =~ ^[1-9][0-9]?$ ]] ||
	{ echo "reproduce: REPRO_REPEAT must be a number of rounds, 1..99" >&2; exit 2; }
[[ $g_loads =~ ^[0-9]+,[0-9]+,[0-9]+,[0-9]+$ ]] ||
	{ echo "reproduce: GUEST_LOADS must be four work units L1,L2,L3,L4" >&2; exit 2; }
[[ $g_iters =~ ^[1-9][0-9]*$ && $g_k =~ ^[1-9][0-9]*$ && $g_timeout =~ ^[1-9][0-9]*$ ]] ||
	{ echo "reproduce: GUEST_ITERATIONS, GUEST_K and GUEST_TIMEOUT must be positive integers" >&2; exit 2; }
case $bt_class in S | W | A | B) ;; *) echo "reproduce: BTMZ_CLASS must be S, W, A or B" >&2; exit 2 ;; esac
# The guest backends: which can run, and why not the others.
gprogs=$(for p in $programs; do case $p in metbench | metbenchvar) echo -n "$p " ;; esac; done)
gprogs=${gprogs% }
kernel_why='' scx_why=''
if [ "$guest" = no ]; then
	kernel_why="not run: REPRO_GUEST=no" scx_why="not run: REPRO_GUEST=no"
elif [ -z "$gprogs" ]; then
	kernel_why="not run: only MetBench and MetBenchVar run in the guest, and REPRO_PROGRAMS has neither"
	scx_why=$kernel_why
elif [ ! -r "$gkernel" ]; then
	kernel_why="not run: no patched kernel at $gkernel (make kernel, or make reproduce REPRO_GUEST=build)"
	scx_why="not run: it runs in the same guest kernel, and there is none at $gkernel"
elif ! command -v qemu-system-x86_64 >/dev/null; then
	kernel_why="not run: qemu-system-x86_64 is not installed (make deps)" scx_why=$kernel_why
elif [ ! -x "$mbstatic" ]; then
	kernel_why="not run: $mbstatic is not built (make metbench-static)" scx_why=$kernel_why
elif [ ! -x "$hpcctl_root/usr/local/bin/hpcctl" ]; then
	kernel_why="not run: no guest copy of hpcctl in $hpcctl_root (make scx-hpcctl)" scx_why=$kernel_why
fi
if [ -z "$scx_why" ] && [ ! -x "$scx_root/usr/local/bin/scx_hpc" ]; then
	scx_why="not run: scx_hpc is not built ($scx_root/usr/local/bin/scx_hpc: make scx)"
fi
gbackends=''
[ -n "$kernel_why" ] || gbackends+="kernel "
[ -n "$scx_why" ] || gbackends+="scx "
gbackends=${gbackends% }
# guest_backends: one line per guest backend and per hpcd-only program
guest_backends() {
	echo "kernel: ${kernel_ran:+$kernel_ran: SCHED_HPC in QEMU ($gkernel, 4 vCPUs, one boot): $gprogs}${kernel_why}"
	echo "scx_hpc: ${scx_ran:+$scx_ran: scx_hpc (sched_ext) in QEMU (same kernel, one boot): $gprogs}${scx_why}"
	for p in $programs; do
		case $p in btmz | siesta)
			echo "$p: hpcd only: an MPI program, and the QEMU guest has no MPI" ;;
		esac
	done
}
if [ "$backends_only" = 1 ]; then
	[ -n "$kernel_why" ] || kernel_ran="would run"
	[ -n "$scx_why" ] || scx_ran="would run"
	guest_backends
	exit 0
fi
for f in "$sim" "$btmz" "$siesta" "$noise" "$build/tools/hpcd/hpcd" "$build/bench/metbench/metbench"; do
	[ -x "$f" ] || { echo "reproduce: $f is not built (make build)" >&2; exit 1; }
done
[ -r "$tables" ] || { echo "reproduce: the paper's tables are not at $tables" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "reproduce: run as root (hpcd creates cgroups)" >&2; exit 1; }
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -e "$out/.hpcsched-reproduce" ]; then
	echo "reproduce: $out exists and is not a reproduction directory: not removing it" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out/sim"
: >"$out/.hpcsched-reproduce"
t0=$(date +%s)
step=0 nsteps=$(($(wc -w <<<"$programs") * repeat + 2 + $(wc -w <<<"$gbackends")))
progress() {
	step=$((step + 1))
	printf '[%d/%d] %s (%d s so far)\n' "$step" "$nsteps" "$1" $(($(date +%s) - t0))
}
# Static priorities: the paper's (Tables III-V); for SIESTA, which the paper's
# Table VI has none for, the simulator's best static priorities.
paper_static() {
	python3 -c 'import json,sys; print(",".join(str(p) for p in json.load(open(sys.argv[1]))[sys.argv[2]]["static"]["priority"]))' "$tables" "$1"
}
# hpcd's ways of every program (SIESTA's also without hpcd): the baseline,
# the paper's static priorities and the three heuristics.
hways="baseline static uniform adaptive phase"
# ways NAME [VAR=VALUE...]: the ways through metbench-3ways.sh, round
# $round (round 1 in OUT/NAME, round R > 1 in OUT/NAME/round-R); each way's
# line is shown as it finishes.
round=1
ways() {
	local name=$1 dir=$out/$1
	shift
	[ "$round" = 1 ] || dir=$out/$name/round-$round
	if ! env "$@" "$ways3" "$build" "$dir" 2>"$dir.err" | tee "$dir.txt" | sed -u 's/^/    /'; then
		cat "$dir.err" >&2
		echo "reproduce: $name failed (see $dir)" >&2
		exit 1
	fi
}
# of_rounds TEXT: TEXT, with the round when there are several
of_rounds() {
	if [ "$repeat" -gt 1 ]; then echo "$1, round $round of $repeat"; else echo "$1"; fi
}

{
	echo "date: $(date -u +%FT%TZ)"
	echo "cpus: $(nproc)"
	echo "kernel: $(uname -r)"
	echo "load_start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "programs: $programs"
	echo "repeat: $repeat round(s) of every way"
	echo "metbench: loads $mb_loads, $mb_iters iterations; metbenchvar: k $k, $((3 * k)) iterations"
	echo "btmz: class $bt_class, ${bt_steps:-default} steps, mapping $bt_map"
	echo "siesta: ${si_args:-defaults}; background: siesta-noise $si_noise"
	[ -z "$gbackends" ] || echo "guest ($gbackends): $gkernel, QEMU TCG 4 vCPUs; $gprogs; loads $g_loads, MetBench $g_iters iterations, MetBenchVar k $g_k ($((3 * g_k)) iterations); blocking waits"
} >"$out/run-info.txt"

echo "== make reproduce: $(nproc) CPUs; results in $out"
for p in $programs; do
	for round in $(seq 1 "$repeat"); do
	case $p in
	metbench)
		progress "$(of_rounds "MetBench (loads $mb_loads, $mb_iters iterations): baseline, static, Uniform, Adaptive, Phase under hpcd")"
		ways metbench WAYS="$hways" STATIC_PRIOS="$(paper_static metbench)" \
			LOADS="$mb_loads" ITERATIONS="$mb_iters"
		;;
	metbenchvar)
		progress "$(of_rounds "MetBenchVar (k = $k, $((3 * k)) iterations): five ways under hpcd")"
		ways metbenchvar WAYS="$hways" \
			STATIC_PRIOS="$(paper_static metbenchvar)" LOADS="$mb_loads" \
			ITERATIONS=$((3 * k)) SWAP_EVERY="$k"
		;;
	btmz)
		args="--class $bt_class --mapping $bt_map${bt_steps:+ --steps $bt_steps}"
		progress "$(of_rounds "BT-MZ proxy ($args, 4 ranks): five ways under hpcd")"
		"$btmz" --layout --np 4 --class "$bt_class" --mapping "$bt_map" >"$out/btmz-layout.json"
		"$btmz" --layout --np 4 --class "$bt_class" --mapping binpack >"$out/btmz-layout-binpack.json"
		ways btmz PROGRAM="$btmz" PROGRAM_ARGS="$args" NP=4 \
			WAYS="$hways" STATIC_PRIOS="$(paper_static bt_mz)"
		;;
	siesta)
		# shellcheck disable=SC2086
		"$siesta" --schedule --np 4 $si_args >"$out/siesta-schedule.json"
		python3 "$top/bench/repro/report.py" --spec siesta "$out/siesta-schedule.json" \
			>"$out/sim/siesta-spec.json"
		sprio=$("$sim" table --spec "$out/sim/siesta-spec.json" --json |
			python3 -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin)["static_prio"])))')
		progress "$(of_rounds "SIESTA proxy (4 ranks, background: siesta-noise $si_noise): CFS, baseline, static ($sprio), Uniform, Adaptive, Phase")"
		# SIESTA's gain is wake-up latency: its ranks sleep in their waits and
		# their emulated contexts idle (EMUL_WAITS=sleep), as in the paper.
		ways siesta PROGRAM="$siesta" PROGRAM_ARGS="$si_args" NP=4 \
			WAYS="none $hways" STATIC_PRIOS="$sprio" \
			BACKGROUND="$noise $si_noise" GROUP_WEIGHT=10000 EMUL_WAITS=sleep
		;;
	esac
	done
done
round=1

# guest_boot BACKEND: one QEMU boot running bench/repro/guest's case for
# BACKEND (every way of every guest program), then its rows extracted.
guest_boot() {
	local b=$1 pid rc start
	[ -e "$out/guest/initrd.gz" ] || {
		mkdir -p "$out/guest/bk" "$out/guest/stage/usr/local/bin"
		cp "$mbstatic" "$out/guest/stage/usr/local/bin/"
		local extra=$hpcctl_root:$top/bench/repro/guest/root:$out/guest/stage
		[ ! -d "$scx_root" ] || extra=$scx_root:$extra
		BK=$out/guest/bk GUEST_EXTRA=$extra GUEST_CASES=$top/bench/repro/guest/cases \
			"$top/tests/guest/mkinitramfs" -o "$out/guest/initrd.gz" >"$out/guest/mkinitramfs.log" 2>&1 || {
			cat "$out/guest/mkinitramfs.log" >&2
			echo "reproduce: the guest image could not be built" >&2
			return 1
		}
	}
	start=$(date +%s)
	RESULTS=$out/guest "$top/tests/guest/run-qemu" --kernel "$gkernel" --initrd "$out/guest/initrd.gz" \
		--smp 4 --name "repro-$b" --cases "7*-repro-$b.sh" --timeout $((g_timeout * repeat)) \
		--append " hpc.repro_progs=${gprogs// /,} hpc.repro_loads=$g_loads hpc.repro_iters=$g_iters hpc.repro_k=$g_k hpc.repro_repeat=$repeat$gstatic" \
		>"$out/guest/repro-$b.tap" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		sleep 5
		kill -0 $pid 2>/dev/null || break
		[ $((($(date +%s) - start) % 60)) -ge 5 ] ||
			printf '    ... guest running, %d s (limit %d s)\n' $(($(date +%s) - start)) $((g_timeout * repeat))
	done
	wait $pid && rc=0 || rc=$?
	grep -E '^(not )?ok ' "$out/guest/repro-$b.tap" | sed 's/^/    /'
	/usr/bin/python3 "$top/bench/repro/report.py" --guest-extract "$b" "$out/guest/guest-repro-$b.log" "$out" \
		2>&1 | sed 's/^/    /'
	return $rc
}
kernel_ran='' scx_ran=''
# the guest's static priorities: the paper's, as for hpcd
gstatic=''
for p in $gprogs; do gstatic+=" hpc.repro_static_$p=$(paper_static "$p")"; done
gways="baseline, static, all at 4, Uniform, Adaptive, Phase"
[ "$repeat" = 1 ] || gways+=", $repeat rounds"
for b in $gbackends; do
	case $b in
	kernel) progress "the SCHED_HPC kernel in QEMU (one boot, 4 vCPUs): $gprogs: $gways" ;;
	scx) progress "scx_hpc in QEMU (one boot, same kernel): $gprogs: $gways" ;;
	esac
	if guest_boot "$b"; then
		printf -v "${b}_ran" 'run'
	else
		printf -v "${b}_ran" 'failed (see %s)' "$out/guest/guest-repro-$b.log"
	fi
done

progress "the simulator's model view (paper's machine model)"
"$sim" table --workload metbench --json >"$out/sim/metbench.json"
"$sim" table --workload metbenchvar -k "$k" --json >"$out/sim/metbenchvar.json"
if [ -e "$out/btmz-layout.json" ]; then
	python3 "$top/bench/repro/report.py" --spec btmz "$out/btmz-layout.json" >"$out/sim/btmz-spec.json"
	"$sim" table --spec "$out/sim/btmz-spec.json" --json >"$out/sim/btmz.json"
fi
[ ! -e "$out/sim/siesta-spec.json" ] ||
	"$sim" table --spec "$out/sim/siesta-spec.json" --json >"$out/sim/siesta.json"

# Other backends: run only where built; otherwise say why not.
{
	echo "hpcd: run (cgroup SMT emulation on $(nproc) CPUs)"
	echo "simulator: run (model of the paper's POWER5)"
	guest_backends
} >"$out/backends.txt"
echo "load_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run-info.txt"
echo "elapsed_s: $(($(date +%s) - t0))" >>"$out/run-info.txt"

progress "the report"
/usr/bin/python3 "$top/bench/repro/report.py" "$out" --tables "$tables"
echo "(make reproduce took $(($(date +%s) - t0)) s; report: $out/report.md)"
