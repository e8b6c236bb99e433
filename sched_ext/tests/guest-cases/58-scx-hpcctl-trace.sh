#!/bin/sh
# hpcctl --backend scx trace: a MetBench-shaped run under a loaded scx_hpc is
# recorded from the sampled per-task map (iterations of the light worker,
# the heavy one's raise, the source "scx"), exported to Perfetto and
# Paraver and read back by hpcctl report; trace -- CMD returns the command's
# status; a trace ends by itself when scx_hpc unloads.
# guest-timeout: 150
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx hpcctl trace: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx hpcctl trace"
if [ "$(nproc)" -lt 2 ]; then ok "scx hpcctl trace # SKIP needs 2 CPUs"; exit 0; fi
[ -x $HPCCTL ] || { nok "hpcctl in the scx image"; exit 1; }

start_hpc || { nok "scx_hpc enabled"; exit 1; }
rm -f /tmp/t.jsonl /tmp/t.json /tmp/t.prv /tmp/t.pcf /tmp/t.row
$HPCCTL --backend scx trace -o /tmp/t.jsonl --perfetto /tmp/t.json --paraver /tmp/t --duration 600 --sample-ms 100 2>/tmp/trace.err &
tp=$!
# metbench only once the trace runs (its output is open: hpcctl writes
# /tmp/.hpcctl-PID-t.jsonl, renamed at the end); under TCG on a loaded host
# hpcctl can take seconds to get there, and a run it missed has no records
n=300
while [ $n -gt 0 ] && [ ! -e /tmp/.hpcctl-$tp-t.jsonl ] && kill -0 $tp 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
sleep 0.5
diag "tracing (pid $tp); metbench starts at uptime $(cut -d' ' -f1 /proc/uptime)"
/usr/local/bin/scx_metbench -i 20 -H 40 -L 10 > /tmp/mb 2>&1
mrc=$?
diag "metbench done at uptime $(cut -d' ' -f1 /proc/uptime)"
heavy=$(sed -n 's/^heavy_pid=//p' /tmp/mb)
light=$(sed -n 's/^light_pid=//p' /tmp/mb)
sleep 0.5
kill -INT $tp
wait $tp
rc=$?
diag "trace exited $rc at uptime $(cut -d' ' -f1 /proc/uptime)"
sed 's/^/# trace: /' /tmp/trace.err
check "metbench ran (status 0)" test $mrc = 0
check "trace ended on SIGINT: exit 0" test $rc = 0
check "the record's source is scx" grep -q '"source":"scx"' /tmp/t.jsonl
check "light worker (pid $light): iteration records" grep -q "\"type\":\"iteration\",\"pid\":$light," /tmp/t.jsonl
# The heavy worker never waits: its raise comes from its sibling's closes.
raised=$(grep -E "\"pid\":$heavy,.*\"prio\":[56]" /tmp/t.jsonl | grep -cE '"type":"(iteration|priority)"')
check "heavy worker (pid $heavy) recorded at priority 5..6 ($raised records)" test "$raised" -ge 1
[ "$raised" -ge 1 ] || grep -E "\"pid\":($heavy|$light)," /tmp/t.jsonl | tail -n 20 | sed 's/^/# record: /'
check "end line: interrupted" grep -q '"type":"end".*"reason":"interrupted' /tmp/t.jsonl
check "Perfetto and Paraver exports written" test -s /tmp/t.json -a -s /tmp/t.prv -a -s /tmp/t.pcf -a -s /tmp/t.row
$HPCCTL report /tmp/t.jsonl > /tmp/report 2>&1
sed 's/^/# report: /' /tmp/report
check "report reads it: scx_hpc (sched_ext, sampled)" grep -q 'scx_hpc (sched_ext, sampled)' /tmp/report

# trace -- CMD with scx_hpc running: the command's status comes back
H trace -o /tmp/t2.jsonl --sample-ms 100 -- sh -c 'exit 3' 2>/dev/null; rc=$?
check "trace -- sh -c 'exit 3': exit 3, record written" sh -c "test $rc = 3 && grep -q '\"type\":\"end\"' /tmp/t2.jsonl"

# scx_hpc unloads during a trace: the trace ends by itself
$HPCCTL --backend scx trace -o /tmp/t3.jsonl --duration 600 --sample-ms 100 2>/tmp/trace3.err &
tp=$!
# unload only once the trace runs: it has found scx_hpc and opened its
# output (hpcctl writes /tmp/.hpcctl-PID-t3.jsonl, renamed at the end);
# under TCG on a loaded host hpcctl can take seconds to get there
n=300
while [ $n -gt 0 ] && [ ! -e /tmp/.hpcctl-$tp-t3.jsonl ] && kill -0 $tp 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
sleep 0.5
stop_hpc > /dev/null
n=100
while [ $n -gt 0 ] && kill -0 $tp 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
if kill -0 $tp 2>/dev/null; then kill -INT $tp; fi
wait $tp
rc=$?
sed 's/^/# trace: /' /tmp/trace3.err
check "trace ends when scx_hpc unloads: exit 0" test $rc = 0
check "... its end line says so" grep -q '"reason":"scx_hpc unloaded' /tmp/t3.jsonl
check "unloaded" wait_state disabled
exit $fail
