#!/usr/bin/env bash
# Fortran MPI programs launched the way the README says, under Open MPI and
# MPICH: hpcctl trace -- LAUNCHER ... -x LD_PRELOAD=$(hpcmon-lib PROG) PROG,
# then hpcctl report. One program per binding (mpif.h, use mpi, use mpi_f08;
# tools/hpcmon/tests/fortran/), NP ranks, NITER iterations in which rank r
# computes r * UNIT_MS. Checked per program and MPI: the trace adopted every
# rank, each monitored by libhpcmon (no "unmonitored" warning), hpcctl report
# reads the trace and lists every rank P0..P(NP-1) with exactly the iterations
# libhpcmon counted for it (a rank on the critical path, which hardly waits,
# closes fewer than NITER, possibly none), and a heavier rank computes a larger
# share than rank 0. TAP output.
#
# usage: fortran-trace.sh BUILD_DIR   (needs BUILD_DIR/tools/hpcd/{hpcd,hpcctl},
#        the Fortran programs and libhpcmon in BUILD_DIR and BUILD_DIR/mpich)
set -u
build=${1:?usage: fortran-trace.sh BUILD_DIR}
top=$(cd "$(dirname "$0")/../../.." && pwd)
hpcd=$build/tools/hpcd/hpcd hpcctl=$build/tools/hpcd/hpcctl
work=$(mktemp -d /tmp/hpcd-fortran.XXXXXX)
export HPCD_CONTROL=$work/ctl HPCD_SOCKET=$work/mon
export HPC_SYSFS=$work/no-kernel # hpcd, whatever the kernel has
# shellcheck source=../../../tests/tap.sh
. "$top/tests/tap.sh"
trap tap_cleanup EXIT
NP=3 NITER=12 UNIT_MS=10

why=
[ "$(id -u)" -eq 0 ] || why="needs root (cgroups)"
for b in "$hpcd" "$hpcctl"; do [ -x "$b" ] || why="$b is not built"; done
if [ -n "$why" ]; then
	echo "not ok 1 - fortran-trace preflight: $why"
	echo "1..1"
	exit 1
fi

# The README's launcher line for MPI $1, program $2 and its arguments.
launch() {
	local mpi=$1 prog=$2 lib
	shift 2
	lib=$("$top/tools/hpcmon/hpcmon-lib" --build "$build" "$prog") || return 1
	case $mpi in
	openmpi)
		echo mpirun.openmpi --oversubscribe --bind-to none --allow-run-as-root -np $NP \
			-x LD_PRELOAD="$lib" "$prog" "$@"
		;;
	mpich) echo mpiexec.mpich -launcher fork -n $NP -genv LD_PRELOAD "$lib" "$prog" "$@" ;;
	esac
}

# From hpcctl report's table: "RANK ITERATIONS COMPUTE%" per P<rank> row.
report_rows() {
	awk '$1 ~ /^P[0-9]+$/ { print substr($1, 2), $4, $5 }' "$1"
}

one() { # MPI BINDING PROGRAM-DIR NAME
	local mpi=$1 binding=$2 prog=$3/hpcmon-f-$4 t=$work/$mpi-$4 cmd rows
	if [ ! -x "$prog" ]; then
		nok "$mpi, $binding: $prog is built"
		return
	fi
	cmd=$(launch "$mpi" "$prog" $NITER $UNIT_MS) || {
		nok "$mpi, $binding: hpcmon-lib names the library for $prog"
		return
	}
	# shellcheck disable=SC2086
	"$hpcctl" trace -o "$t.jsonl" --hpcd "$hpcd" -- $cmd > "$t.out" 2> "$t.err"
	check "$mpi, $binding: hpcctl trace -- ${cmd%% *} ... exits 0" test $? -eq 0
	if grep -qi "unmonitored\|no rank" "$t.err" "$t.jsonl"; then
		nok "$mpi, $binding: every rank monitored by libhpcmon" "$(grep -i "unmonitored\|no rank" "$t.err" | head -3)"
	else
		ok "$mpi, $binding: every rank monitored by libhpcmon"
	fi
	"$hpcctl" report "$t.jsonl" > "$t.report" 2>&1
	check "$mpi, $binding: hpcctl report reads the trace" test $? -eq 0
	rows=$(report_rows "$t.report" | sort -n)
	local ranks iters mon
	ranks=$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }' <<< "$rows")
	iters=$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }' <<< "$rows")
	# libhpcmon's own summary at MPI_Finalize: "hpcmon: RANK ITERS ...".
	mon=$(cat "$t.out" "$t.err" | awk '$1 == "hpcmon:" && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { print $2, $3 }' |
		sort -n | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }')
	check "$mpi, $binding: report lists every rank ($ranks)" test "$ranks" = "0 1 2"
	check "$mpi, $binding: each rank's iterations as libhpcmon counted them ($iters / $mon)" \
		test -n "$mon" -a "$iters" = "$mon"
	# Rank r computes r * UNIT_MS an iteration, rank 0 nothing. The heaviest
	# rank may never wait long enough to close an iteration (it is the one
	# the others wait for): the heaviest rank that closed any is compared.
	check "$mpi, $binding: a heavier rank computes a larger share than rank 0 ($(tr '\n' ';' <<< "$rows"))" \
		awk '$1 == 0 { c0 = $3 + 0 } $1 > 0 && $2 > 0 { cn = $3 + 0 } END { exit !(cn > c0 + 20) }' <<< "$rows"
}

for mpi in openmpi mpich; do
	dir=$build/tools/hpcmon
	[ $mpi = mpich ] && dir=$build/mpich/tools/hpcmon
	one $mpi "mpif.h" "$dir" mpif-barrier
	one $mpi "use mpi" "$dir" usempi-waitall
	one $mpi "use mpi_f08" "$dir" usempif08-allreduce
done
tap_end
