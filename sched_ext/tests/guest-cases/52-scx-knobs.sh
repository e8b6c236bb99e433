#!/bin/sh
# Invalid knob values are refused before anything is loaded: exit status 2,
# a message naming the problem, sched_ext stays disabled, no program loaded.
# guest-timeout: 60
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx knobs: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx knobs"

refused() {  # refused "ARGS" "MESSAGE PART"
	$SCX_HPC $1 > /tmp/out 2>&1
	rc=$?
	if [ $rc = 2 ] && grep -q "$2" /tmp/out && [ "$(state)" = disabled ]; then
		ok "refused: $1"
	else
		nok "refused: $1 (status $rc, state $(state))"
		sed 's/^/# /' /tmp/out
	fi
}
refused "--low-util 200" "within 0..100"
refused "--high-util 101" "within 0..100"
refused "--low-util 90" "low_util must be below high_util"
refused "--min-prio 0" "backend's range"
refused "--max-prio 7" "backend's range"
refused "--min-prio 6 --max-prio 5" "min_prio must not be above max_prio"
refused "--global-weight 50 --last-weight 60" "global_weight + last_weight must be 100"
refused "--global-weight 101" "within 0..100"
refused "--heuristic foo" "uniform, adaptive or phase"
refused "--min-wait-us 1000001" "min_wait_us must be within"
refused "--slice-us 999" "timeslice_us=999"
refused "--slice-us 1000001" "timeslice_us"
refused "--period-us 0" "emul_period_us=0"
refused "--low-util abc" "not a valid value"
refused "--low-util -1" "not a valid value"
refused "--no-such-flag" "not expected"
check "no scx_hpc program loaded" no_hpc_prog
# valid edge values load (and unload)
if start_hpc --low-util 90 --high-util 95 --min-prio 1 --max-prio 6 --heuristic adaptive --global-weight 30 --slice-us 1000 --period-us 1000000; then
	ok "valid edge values load"
	H status --json > /tmp/st
	check "knobs reach the BPF side" grep -q '"low_util":90,"high_util":95,"min_prio":1,"max_prio":6,"global_weight":30,"last_weight":70,"heuristic":"adaptive"' /tmp/st
else
	nok "valid edge values load"
fi
stop_hpc
check "disabled after" wait_state disabled
# the third heuristic by name
if start_hpc --heuristic phase; then
	ok "--heuristic phase loads"
	H status --json > /tmp/st
	check "the BPF side runs phase" grep -q '"heuristic":"phase"' /tmp/st
else
	nok "--heuristic phase loads"
fi
stop_hpc
check "disabled after phase" wait_state disabled
exit $fail
