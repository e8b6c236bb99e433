#!/bin/sh
# Fixed priorities under scx_hpc (hpcctl --backend scx prio PID P, which
# writes scx_hpc's fixed_prios map): the MetBench shape of 51-scx-metbench (heavy on CPU 0, light on
# CPU 1), where the rule raises the heavy worker to 5..6, with the heavy one
# fixed at 4 and the light one at 6: both stay there in every sample while
# their iterations go on being accounted (counts, utilisations that would
# move them). Bad values and tasks scx_hpc does not schedule are refused and
# nothing changes; 0 makes a task dynamic again; a child forked by a fixed
# task inherits its priority.
# guest-timeout: 150
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx prio: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx prio"
if [ "$(nproc)" -lt 2 ]; then ok "scx prio # SKIP needs 2 CPUs"; exit 0; fi
[ -x $HPCCTL ] || { nok "hpcctl in the scx image"; exit 1; }

start_hpc || { nok "scx_hpc enabled"; exit 1; }
/usr/local/bin/scx_metbench -i 40 -H 60 -L 10 > /tmp/mb 2>&1 &
mbp=$!
n=50
while [ -z "$(sed -n 's/^light_pid=//p' /tmp/mb)" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
heavy=$(sed -n 's/^heavy_pid=//p' /tmp/mb)
light=$(sed -n 's/^light_pid=//p' /tmp/mb)
check "prio heavy 4: exit 0" H prio "$heavy" 4
check "prio light 6: exit 0" H prio "$light" 6
check "status --tasks: heavy fixed_prio 4" test "$(task_field "$heavy" fixed_prio)" = 4
check "status --tasks: light fixed_prio 6" test "$(task_field "$light" fixed_prio)" = 6

# refusals change nothing
H prio "$heavy" 7 > /tmp/err 2>&1; rc=$?
check "prio heavy 7: exit 2" test $rc = 2
check "... says the range" grep -q "prio: 7 is outside 1..6" /tmp/err
H prio "$$" 4 > /tmp/err 2>&1; rc=$?
check "prio of this shell (SCHED_OTHER): exit 1" test $rc = 1
check "... says it is not SCHED_EXT" grep -q "is not SCHED_EXT" /tmp/err
check "refused: nothing changed" \
	test "$(task_field "$light" fixed_prio)/$(task_field "$heavy" fixed_prio)" = 6/4

samples=0 off=0
while kill -0 $mbp 2>/dev/null; do
	H status --tasks --json > /tmp/dt 2>/dev/null
	hs=$(grep "\"pid\":$heavy," /tmp/dt | json_field prio)
	lsp=$(grep "\"pid\":$light," /tmp/dt | json_field prio)
	if [ -n "$hs" ] && [ -n "$lsp" ]; then
		samples=$((samples + 1))
		[ "$hs/$lsp" = 4/6 ] || { off=$((off + 1)); diag "sample: heavy $hs light $lsp"; }
	fi
	sleep 0.3
done
wait $mbp
rc=$?
sed 's/^/# metbench: /' /tmp/mb
check "metbench ran (status 0)" test $rc = 0
H status --tasks | sed 's/^/# /'
hi=$(task_field "$heavy" iterations); hj=$(task_field "$heavy" judgements)
li=$(task_field "$light" iterations); lj=$(task_field "$light" judgements)
hu=$(task_field "$heavy" heur_util); lu=$(task_field "$light" heur_util)
diag "heavy: iter $hi judged $hj heur_util $hu; light: iter $li judged $lj heur_util $lu; $samples samples, $off off 4/6"
check "heavy 4, light 6 in every sample while it ran ($off of $samples off)" test "$samples" -ge 3 -a "$off" = 0
check "final priorities: heavy 4, light 6" test "$(task_field "$heavy" prio)/$(task_field "$light" prio)" = 4/6
check "fixed tasks are still accounted (heavy $hi + $hj, light $li + $lj decisions)" \
	test $(( ${hi:-0} + ${hj:-0} )) -ge 20 -a $(( ${li:-0} + ${lj:-0} )) -ge 20
check "the rule would move them: heavy heur_util $hu > 85 %, light $lu < 65 %" \
	test "${hu:-0}" -gt 8500 -a "${lu:-99999}" -lt 6500

# 0: dynamic again
$HPCCTL --backend scx run -- sleep 4 &
sp=$!
n=20
while [ "$(awk '{ print $41 }' /proc/$sp/stat 2>/dev/null)" != 7 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
check "a SCHED_EXT task: fixed at 5" H prio "$sp" 5
check "... fixed_prio 5, prio 5" test "$(task_field "$sp" fixed_prio)/$(task_field "$sp" prio)" = 5/5
check "... 0 makes it dynamic: exit 0" H prio "$sp" 0
check "... fixed_prio 0" test "$(task_field "$sp" fixed_prio)" = 0
kill $sp 2>/dev/null
wait $sp 2>/dev/null

# fork: a child of a fixed task inherits its priority (the shell forks it
# only once it is fixed: /tmp/go)
rm -f /tmp/go
$HPCCTL --backend scx run -- sh -c 'while [ ! -e /tmp/go ]; do sleep 0.1; done; sleep 3 & echo "child=$!"; wait' > /tmp/fk 2>&1 &
fp=$!
n=20
while [ "$(awk '{ print $41 }' /proc/$fp/stat 2>/dev/null)" != 7 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
check "a SCHED_EXT shell fixed at 3" H prio "$fp" 3
: > /tmp/go
n=40
while ! grep -q '^child=' /tmp/fk && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
child=$(sed -n 's/^child=//p' /tmp/fk)
sleep 0.3
diag "shell $fp, child ${child:-none}: $(H status --tasks --json 2>/dev/null | grep "\"pid\":${child:-0},")"
check "its child ($child) inherits fixed_prio 3" test "$(task_field "${child:-0}" fixed_prio)" = 3
check "... and runs at 3" test "$(task_field "${child:-0}" prio)" = 3
wait $fp
stop_hpc > /dev/null
check "clean unload" test $? = 0
check "sched_ext disabled after" wait_state disabled
exit $fail
