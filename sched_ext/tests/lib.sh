# Helpers of the scx_hpc guest cases (tests/guest/cases/5*-scx-*.sh), shipped
# in the scx guest image as /usr/local/share/scx_hpc/lib.sh (busybox ash).
SCX=/sys/kernel/sched_ext
SCX_HPC=/usr/local/bin/scx_hpc
HPCCTL=/usr/local/bin/hpcctl
fail=0
scx_pid=

ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; fail=1; }
check() {  # check DESCRIPTION COMMAND...
	d=$1; shift
	if "$@" >/dev/null 2>&1; then ok "$d"; else nok "$d"; fi
}
diag() { echo "# $*"; }

state() { cat $SCX/state 2>/dev/null; }
ops() { cat $SCX/root/ops 2>/dev/null; }

# wait_state STATE [TENTHS]: until $SCX/state reads STATE (default 10 s)
wait_state() {
	n=${2:-100}
	while [ "$n" -gt 0 ]; do
		[ "$(state)" = "$1" ] && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# H ARGS: hpcctl --backend scx, which inspects and changes the running
# scx_hpc (status [--json|--tasks|--progs], top, get, set, prio, trace)
H() { $HPCCTL --backend scx "$@"; }

# Cases need the scx image (make scx-guest-initrd); elsewhere they skip.
need_scx() {
	if [ ! -x $SCX_HPC ] || [ ! -x $HPCCTL ] || [ ! -e $SCX/state ]; then
		echo "ok - $1 # SKIP scx_hpc, hpcctl or sched_ext not in this image"
		exit 0
	fi
	if [ "$(state)" != disabled ]; then
		nok "no sched_ext scheduler active at start (state $(state), ops $(ops))"
		exit 1
	fi
}

# start_hpc ARGS...: load scx_hpc in the background, log in /tmp/scx_hpc.log
start_hpc() {
	$SCX_HPC -q "$@" > /tmp/scx_hpc.log 2>&1 &
	scx_pid=$!
	if wait_state enabled && [ "$(ops)" = hpc ]; then
		return 0
	fi
	diag "scx_hpc did not come up: state $(state) ops $(ops)"
	sed 's/^/# log: /' /tmp/scx_hpc.log
	return 1
}

# stop_hpc: SIGINT, wait for exit; returns the loader's exit status
stop_hpc() {
	[ -n "$scx_pid" ] || return 0
	kill -INT "$scx_pid" 2>/dev/null
	n=100
	while [ "$n" -gt 0 ] && kill -0 "$scx_pid" 2>/dev/null; do
		sleep 0.1
		n=$((n - 1))
	done
	if kill -0 "$scx_pid" 2>/dev/null; then
		kill -KILL "$scx_pid"
		diag "scx_hpc ignored SIGINT"
	fi
	wait "$scx_pid"
	rc=$?
	scx_pid=
	sed 's/^/# log: /' /tmp/scx_hpc.log
	return $rc
}

# json_field FIELD < one-line JSON object: its numeric value
json_field() { sed -n "s/.*\"$1\":\\([0-9-]*\\).*/\\1/p" | head -n 1; }

# task_field PID FIELD: a field of PID's entry in scx_hpc's task map
# (hpcctl --backend scx status --tasks --json: an entry a line)
task_field() {
	H status --tasks --json 2>/dev/null | grep "\"pid\":$1," | json_field "$2"
}

cleanup() {
	[ -n "$scx_pid" ] && kill -KILL "$scx_pid" 2>/dev/null
	return 0
}
trap cleanup EXIT

# no_hpc_prog: no scx_hpc program loaded (freeing is RCU-deferred: retry 5 s)
no_hpc_prog() {
	n=50
	while [ "$n" -gt 0 ]; do
		H status --progs > /dev/null 2>&1 || return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}
