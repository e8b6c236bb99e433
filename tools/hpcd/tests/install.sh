#!/usr/bin/env bash
# make install into a DESTDIR, then the installed tools from there: versions,
# hpcmon-lib finding the installed library, hpcctl starting the installed
# hpcd, and README.md's "Stock kernels: hpcd" commands as written (root,
# 4 ranks on however many CPUs, an Open MPI program as ./app). TAP output.
# usage: install.sh TOP BUILD_DIR
set -u
top=${1:?usage: install.sh TOP BUILD_DIR}
build=${2:?usage: install.sh TOP BUILD_DIR}
# shellcheck source=../../../tests/tap.sh
. "$top/tests/tap.sh"
work=$(mktemp -d /tmp/hpcsched-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # another user runs the installed hpcctl from it
dest=$work/root prefix=/opt/hpcsched
inst=$dest$prefix

make -C "$top" --no-print-directory install DESTDIR="$dest" PREFIX="$prefix" BUILD="$build" \
	>"$work/make.log" 2>&1
rc=$?
check "make install DESTDIR PREFIX=$prefix: exit 0 ($(tail -1 "$work/make.log"))" test $rc -eq 0
for f in bin/hpcctl bin/hpcmon-lib sbin/hpcd lib/hpcsched/libhpcmon.so share/hpcsched/report.py \
	share/man/man1/hpcctl.1 share/man/man8/hpcd.8; do
	check "installed: $prefix/$f" test -e "$inst/$f"
done
check "nothing installed outside DESTDIR" bash -c "! ls -d $prefix >/dev/null 2>&1"
if [ -e "$build/mpich/tools/hpcmon/libhpcmon-mpich.so" ]; then
	check "installed: libhpcmon-mpich.so (built)" test -e "$inst/lib/hpcsched/libhpcmon-mpich.so"
else
	skip "installed: libhpcmon-mpich.so" "make mpich has not built it"
fi
v=$("$inst/bin/hpcctl" --version 2>&1); rc=$?
check "installed hpcctl --version: exit 0 ($v)" bash -c "[ $rc -eq 0 ] && [[ '$v' == 'hpcctl (hpcsched) '* ]]"
v=$("$inst/sbin/hpcd" --version 2>&1); rc=$?
check "installed hpcd --version: exit 0 ($v)" bash -c "[ $rc -eq 0 ] && [[ '$v' == 'hpcd (hpcsched) '* ]]"
app=$build/bench/metbench/metbench
lib=$("$inst/bin/hpcmon-lib" "$app" 2>&1); rc=$?
check "installed hpcmon-lib: the installed libhpcmon.so for an Open MPI program ($lib)" \
	test $rc -eq 0 -a "$lib" = "$(cd "$inst/lib/hpcsched" && pwd)/libhpcmon.so"
lib=$("$inst/bin/hpcmon-lib" --build "$build" "$app" 2>&1)
check "installed hpcmon-lib --build DIR: that build's library ($lib)" test "$lib" = "$build/tools/hpcmon/libhpcmon.so"
check "man pages: hpcctl(1), hpcd(8)" bash -c \
	"grep -q '^\.TH HPCCTL 1' '$inst/share/man/man1/hpcctl.1' && grep -q '^\.TH HPCD 8' '$inst/share/man/man8/hpcd.8'"

# README.md's commands, with the installed tools on PATH and MetBench as ./app.
export PATH=$inst/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HPCD_CONTROL=$work/ctl HPCD_SOCKET=$work/mon HPC_SYSFS=$work/no-kernel
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir "$work/app" && cp "$app" "$work/app/app" && cd "$work/app" || exit 1
# MetBench: rank 0 is its master, ranks 1..3 workers (small loads).
export METBENCH_ARGS="--loads 20,40,20 --iterations 6 --wait spin"
hpcctl run -- sh -c 'readlink /proc/$(hpcctl status --json |
	python3 -c "import json,sys; print(json.load(sys.stdin)[\"pid\"])")/exe' >"$work/exe" 2>&1
check "installed hpcctl starts the installed hpcd ($(cat "$work/exe"))" test "$(cat "$work/exe")" = "$inst/sbin/hpcd"
# shellcheck disable=SC2086
hpcctl run --set heuristic=adaptive -- mpirun --oversubscribe --bind-to none -np 4 \
	-x LD_PRELOAD=$(hpcmon-lib ./app) ./app $METBENCH_ARGS >"$work/run.out" 2>"$work/run.err"
rc=$?
check "README: hpcctl run -- mpirun ... -np 4 ./app: exit 0 as root, $(nproc) CPU(s) ($(tail -1 "$work/run.err"))" test $rc -eq 0
check "README: hpcctl run: every rank monitored (no warning)" bash -c "! grep -q warning '$work/run.err'"
# shellcheck disable=SC2086
hpcctl trace -o run.jsonl -- mpirun --oversubscribe --bind-to none -np 4 \
	-x LD_PRELOAD=$(hpcmon-lib ./app) ./app $METBENCH_ARGS >/dev/null 2>"$work/trace.err"
rc=$?
check "README: hpcctl trace -o run.jsonl -- mpirun ...: exit 0, iterations recorded" \
	bash -c "[ $rc -eq 0 ] && grep -q '\"type\":\"iteration\"' run.jsonl"
hpcctl report run.jsonl --plot run.png --perfetto run.json --paraver run >"$work/rep" 2>&1; rc=$?
check "README: hpcctl report run.jsonl --plot --perfetto --paraver: exit 0, every file" \
	bash -c "[ $rc -eq 0 ] && [ -s run.png ] && [ -s run.json ] && [ -s run.prv ] && grep -q '^P3 ' '$work/rep'"
# Another user: the Open MPI pair changes nothing for it.
if id nobody >/dev/null 2>&1 && command -v runuser >/dev/null; then
	runuser -u nobody -- env HOME=/tmp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe --bind-to none -np 4 true >"$work/nobody" 2>&1
	rc=$?
	check "not root: mpirun --oversubscribe --bind-to none -np 4 with the pair set: exit 0 ($(tail -1 "$work/nobody"))" test $rc -eq 0
	runuser -u nobody -- "$inst/bin/hpcctl" --version >/dev/null 2>&1
	check "not root: the installed hpcctl --version" test $? -eq 0
fi

tap_end
