#!/usr/bin/env bash
# make reproduce: the paper's four programs — MetBench, MetBenchVar, BT-MZ
# (bench/btmz proxy) and SIESTA (bench/siesta proxy) — under baseline, static
# priorities, Uniform and Adaptive on every backend this machine offers, and
# a report (Markdown + PNG) beside the paper's Tables III-VI.
#
# Backends: hpcd (cgroup SMT emulation, any kernel) always; the simulator's
# model view always; the SCHED_HPC kernel (QEMU guest) and scx_hpc are
# listed with the reason they were or were not run.
#
# usage: reproduce.sh BUILD_DIR [OUT_DIR]           (as root: hpcd creates cgroups)
# env:   REPRO_PROGRAMS ("metbench metbenchvar btmz siesta")
#        MB_LOADS (500,2000,500,2000)  MB_ITERATIONS (20)  MBV_K (15)
#        BTMZ_CLASS (A)  BTMZ_STEPS (class default: 200)  BTMZ_MAPPING (rows)
#        SIESTA_ARGS ("")  SIESTA_NOISE ("--procs 2 --busy-us 2000 --sleep-us 8000")
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: reproduce.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/reproduce}
programs=${REPRO_PROGRAMS:-metbench metbenchvar btmz siesta}
mb_loads=${MB_LOADS:-500,2000,500,2000} mb_iters=${MB_ITERATIONS:-20} k=${MBV_K:-15}
bt_class=${BTMZ_CLASS:-A} bt_steps=${BTMZ_STEPS:-} bt_map=${BTMZ_MAPPING:-rows}
si_args=${SIESTA_ARGS:-} si_noise=${SIESTA_NOISE:---procs 2 --busy-us 2000 --sleep-us 8000}
ways3=$top/tools/hpcd/metbench-3ways.sh
sim=$build/tools/sim/hpcsim btmz=$build/bench/btmz/btmz
siesta=$build/bench/siesta/siesta-proxy noise=$build/bench/siesta/siesta-noise
tables=$top/../shared/reference/paper-tables.json

for p in $programs; do
	case $p in metbench | metbenchvar | btmz | siesta) ;;
	*) echo "reproduce: unknown program '$p' (metbench metbenchvar btmz siesta)" >&2; exit 2 ;;
	esac
done
case $bt_class in S | W | A | B) ;; *) echo "reproduce: BTMZ_CLASS must be S, W, A or B" >&2; exit 2 ;; esac
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
step=0 nsteps=$(($(wc -w <<<"$programs") + 2))
progress() {
	step=$((step + 1))
	printf '[%d/%d] %s (%d s so far)\n' "$step" "$nsteps" "$1" $(($(date +%s) - t0))
}
# Static priorities: the paper's (Tables III-V); for SIESTA, which the paper's
# Table VI has none for, the simulator's best static priorities.
paper_static() {
	python3 -c 'import json,sys; print(",".join(str(p) for p in json.load(open(sys.argv[1]))[sys.argv[2]]["static"]["priority"]))' "$tables" "$1"
}
# ways NAME [VAR=VALUE...]: the four ways through metbench-3ways.sh; each way's
# line is shown as it finishes.
ways() {
	local name=$1
	shift
	if ! env "$@" "$ways3" "$build" "$out/$name" 2>"$out/$name.err" | tee "$out/$name.txt" | sed -u 's/^/    /'; then
		cat "$out/$name.err" >&2
		echo "reproduce: $name failed (see $out/$name)" >&2
		exit 1
	fi
}

{
	echo "date: $(date -u +%FT%TZ)"
	echo "cpus: $(nproc)"
	echo "kernel: $(uname -r)"
	echo "load_start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "programs: $programs"
	echo "metbench: loads $mb_loads, $mb_iters iterations; metbenchvar: k $k, $((3 * k)) iterations"
	echo "btmz: class $bt_class, ${bt_steps:-default} steps, mapping $bt_map"
	echo "siesta: ${si_args:-defaults}; background: siesta-noise $si_noise"
} >"$out/run-info.txt"

echo "== make reproduce: $(nproc) CPUs; results in $out"
for p in $programs; do
	case $p in
	metbench)
		progress "MetBench (loads $mb_loads, $mb_iters iterations): baseline, static, Uniform, Adaptive under hpcd"
		ways metbench WAYS="baseline static uniform adaptive" STATIC_PRIOS="$(paper_static metbench)" \
			LOADS="$mb_loads" ITERATIONS="$mb_iters"
		;;
	metbenchvar)
		progress "MetBenchVar (k = $k, $((3 * k)) iterations): four ways under hpcd"
		ways metbenchvar WAYS="baseline static uniform adaptive" \
			STATIC_PRIOS="$(paper_static metbenchvar)" LOADS="$mb_loads" \
			ITERATIONS=$((3 * k)) SWAP_EVERY="$k"
		;;
	btmz)
		args="--class $bt_class --mapping $bt_map${bt_steps:+ --steps $bt_steps}"
		progress "BT-MZ proxy ($args, 4 ranks): four ways under hpcd"
		"$btmz" --layout --np 4 --class "$bt_class" --mapping "$bt_map" >"$out/btmz-layout.json"
		"$btmz" --layout --np 4 --class "$bt_class" --mapping binpack >"$out/btmz-layout-binpack.json"
		ways btmz PROGRAM="$btmz" PROGRAM_ARGS="$args" NP=4 \
			WAYS="baseline static uniform adaptive" STATIC_PRIOS="$(paper_static bt_mz)"
		;;
	siesta)
		# shellcheck disable=SC2086
		"$siesta" --schedule --np 4 $si_args >"$out/siesta-schedule.json"
		python3 "$top/bench/repro/report.py" --spec siesta "$out/siesta-schedule.json" \
			>"$out/sim/siesta-spec.json"
		sprio=$("$sim" table --spec "$out/sim/siesta-spec.json" --json |
			python3 -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin)["static_prio"])))')
		progress "SIESTA proxy (4 ranks, background: siesta-noise $si_noise): CFS, baseline, static ($sprio), Uniform, Adaptive"
		ways siesta PROGRAM="$siesta" PROGRAM_ARGS="$si_args" NP=4 \
			WAYS="none baseline static uniform adaptive" STATIC_PRIOS="$sprio" \
			BACKGROUND="$noise $si_noise" GROUP_WEIGHT=10000
		;;
	esac
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
	if [ -e /sys/kernel/sched_hpc ]; then
		echo "kernel: this kernel has SCHED_HPC: hpcctl would use it; not run by this script (hpcd results above)"
	elif [ -e "$top/build-kernel/bzImage" ]; then
		echo "kernel: not run: build-kernel/bzImage exists, but the QEMU guest (make guest-run) carries only its own tests, not these programs and MPI"
	else
		echo "kernel: not run: no patched kernel built (make kernel builds build-kernel/bzImage)"
	fi
	if [ -e /sys/kernel/sched_ext/state ]; then
		echo "scx_hpc: not run: sched_ext is available here but this script does not load BPF schedulers on the host"
	else
		echo "scx_hpc: not run: the running kernel ($(uname -r)) has no sched_ext (/sys/kernel/sched_ext missing)"
	fi
} >"$out/backends.txt"
echo "load_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run-info.txt"
echo "elapsed_s: $(($(date +%s) - t0))" >>"$out/run-info.txt"

progress "the report"
/usr/bin/python3 "$top/bench/repro/report.py" "$out" --tables "$tables"
echo "(make reproduce took $(($(date +%s) - t0)) s; report: $out/report.md)"
