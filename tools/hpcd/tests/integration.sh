#!/usr/bin/env bash
# hpcd on this machine's real cgroups (v1 or v2), as root. TAP output.
#
# usage: integration.sh BIN_DIR     (BIN_DIR holds hpcd, hpcctl, hpcd-spin)
# $HPCD_SOURCE: the event source of every hpcd not given one (auto, bpf or
# proc; run-suite.sh runs it with auto, then with the /proc fallback forced).
#
# Never skips: without root or without a usable cpu controller every test
# fails with the reason.
set -u
bin=${1:?usage: integration.sh BIN_DIR}
hpcd=$bin/hpcd hpcctl=$bin/hpcctl spin=$bin/hpcd-spin
here=$(cd "$(dirname "$0")" && pwd) # hpcd_ctl.py: the Python helpers' sockets
work=$(mktemp -d /tmp/hpcd-it.XXXXXX)
export HPCD_CONTROL=$work/ctl HPCD_SOCKET=$work/mon
export HPC_SYSFS=$work/no-kernel # this suite tests hpcd, whatever the kernel has
# shellcheck source=../../../tests/tap.sh
. "$(dirname "$0")/../../../tests/tap.sh"
trap tap_cleanup EXIT

# --- preflight: root and a cpu controller we can write -----------------------
why=
[ "$(id -u)" -eq 0 ] || why="needs root (it creates cgroups and moves tasks)"
for b in "$hpcd" "$hpcctl" "$spin"; do [ -x "$b" ] || why="$b is not built"; done
cgv=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print "v1 " $5; exit }' /proc/self/mountinfo)
if [ -z "$cgv" ]; then
	m=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	[ -n "$m" ] && grep -qw cpu "$m/cgroup.controllers" 2>/dev/null && cgv="v2 $m"
fi
[ -z "$why" ] && [ -z "$cgv" ] && why="no cgroup v1 cpu mount and no cgroup2 with the cpu controller"
if [ -z "$why" ]; then
	root=${cgv#* }
	probe=$root/hpcsched-probe-$$
	if mkdir "$probe" 2>"$work/err"; then rmdir "$probe"; else why="cannot create a cgroup in $root: $(cat "$work/err")"; fi
fi
if [ -n "$why" ]; then
	echo "not ok 1 - integration preflight: $why"
	exit 1
fi
ver=${cgv%% *}
echo "# cgroup $ver at $root"
py=/usr/bin/python3; [ -x $py ] || py=python3

quota_of() { # PID -> "quota period" of its cgroup
	local rel d
	if [ "$ver" = v1 ]; then
		rel=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/$1/cgroup)
		d=$root$rel
		echo "$(cat "$d/cpu.cfs_quota_us" 2>/dev/null) $(cat "$d/cpu.cfs_period_us" 2>/dev/null)"
	else
		rel=$(awk -F: '$1 == "0" { print $3 }' /proc/$1/cgroup)
		cat "$root$rel/cpu.max" 2>/dev/null
	fi
}
cg_of() { if [ "$ver" = v1 ]; then awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/$1/cgroup; else awk -F: '$1 == "0" { print $3 }' /proc/$1/cgroup; fi; }
runtime() { awk '{ print $1 }' /proc/$1/schedstat; }
affinity() { awk '/^Cpus_allowed_list/ { print $2 }' /proc/$1/status; }
ctl_up() { "$hpcctl" --backend hpcd status --json >/dev/null 2>&1; }
# status_field KEY: that field of hpcd's status (empty: no answer).
status_field() {
	"$hpcctl" --backend hpcd status --json 2>/dev/null | $py -c "import json,sys; print(json.load(sys.stdin)['$1'])" 2>/dev/null
}
start_spin() { "$spin" "$@" >/dev/null & pids+=($!); }
# As libhpcmon would: hello records for ranks 0 (pid A) and 1 (pid B) of one
# job, then N iterations 1 s apart, A heavy (999.8 ms computing), B light.
send_pair() {
	/usr/bin/python3 - "$here" "$HPCD_SOCKET" "$1" "$2" "$3" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
from hpcd_ctl import HELLO, ITERATION, monitor, record
path, a, b, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = monitor(path)
for pid, rank in ((a, 0), (b, 1)):
    s.send(record(HELLO, pid, rank, 2, 7))
time.sleep(0.3)
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
for i in range(n):
    end = now + (i + 1) * 1000000000
    s.send(record(ITERATION, b, 1, 2, 7, i, 250000000, 750000000, end))
    s.send(record(ITERATION, a, 0, 2, 7, i, 999800000, 200000, end + 10000))
PY
}
task_json() { "$hpcctl" --backend hpcd top --once --json | python3 -c "import json,sys; t={x['pid']:x for x in json.load(sys.stdin)}; print(t[$1]['$2'])"; }

orig_aff=$(affinity $$)
ncpu=$(nproc)
cpus="0,1"; [ "$ncpu" -lt 2 ] && cpus=0

# --- 1. a static pair (4, 6): quotas as the model, pinned, CPU-time ratio ----
start_spin 60; a=$!
start_spin 60; b=$!
orig_cg=$(cg_of $a)
"$hpcd" --mode smt-emul --pid $a --pid $b --prio 4 --prio 6 --cpus $cpus --group-weight 10000 2>"$work/hpcd1.log" &
d=$!; pids+=($d)
if wait_for 5 ctl_up && wait_for 3 'test "$(quota_of $a)" = "1740 10000" -a "$(quota_of $b)" = "9610 10000"'; then
	ok "static pair (4,6): light quota $(quota_of $a), heavy $(quota_of $b) = hpc_smt_speed 174/961 permille of 10 ms"
else
	nok "static pair (4,6) quotas" "light: $(quota_of $a) heavy: $(quota_of $b) (want 1740 / 9610 of 10000)" "$(tail -3 "$work/hpcd1.log")"
fi
case $cpus in
0,1) check "emulated core: ranks pinned to CPUs 0 and 1" test "$(affinity $a)/$(affinity $b)" = "0/1" ;;
*) check "one CPU: both contexts on CPU 0" test "$(affinity $a)/$(affinity $b)" = "0/0" ;;
esac
ra=$(runtime $a) rb=$(runtime $b); sleep 3; ra=$(( $(runtime $a) - ra )); rb=$(( $(runtime $b) - rb ))
ratio=$(awk -v a=$ra -v b=$rb 'BEGIN { printf "%.3f", b ? a / b : 99 }')
echo "# cpu time over 3 s: light $((ra / 1000000)) ms, heavy $((rb / 1000000)) ms, ratio $ratio (model 174/961 = 0.18)"
if awk -v r=$ratio 'BEGIN { exit !(r >= 0.09 && r <= 0.40) }'; then
	ok "cpu time ratio light/heavy $ratio within 0.09..0.40 (model 0.18)"
else
	nok "cpu time ratio light/heavy $ratio not within 0.09..0.40 (model 0.18)" "light $ra ns heavy $rb ns; a loaded machine can starve both"
fi
thr=$(task_json $a nr_throttled 2>/dev/null)
check "the light context is throttled (nr_throttled=$thr)" test "${thr:-0}" -gt 0

# --- 2. knobs through hpcctl and hpcd -------------------------------------------
check "hpcctl set low_util=60" "$hpcctl" set low_util=60
check "hpcctl get low_util -> 60" test "$("$hpcctl" get low_util)" = 60
"$hpcctl" set bogus=1 >"$work/o" 2>&1; rc=$?
check "hpcctl set bogus=1: exit 2, names the key ($(head -c 60 "$work/o"))" test $rc -eq 2 -a -n "$(grep -l "unknown parameter 'bogus'" "$work/o")"
"$hpcctl" set low_util=abc >"$work/o" 2>&1; rc=$?
check "hpcctl set low_util=abc: exit 2" test $rc -eq 2
"$hpcctl" set min_wait_us=500 low_util=99 >"$work/o" 2>&1; rc=$?
check "hpcctl set with an invariant broken: exit 2, nothing changed" \
	test $rc -eq 2 -a "$("$hpcctl" get low_util)" = 60 -a "$("$hpcctl" get min_wait_us)" = 100
"$hpcctl" set backend=x >/dev/null 2>&1; rc=$?
check "hpcctl set backend=x (read-only): exit 2" test $rc -eq 2
"$hpcctl" set queue=fifo >/dev/null 2>&1; rc=$?
check "hpcctl set queue=fifo (kernel only): exit 2" test $rc -eq 2
"$hpcctl" get nosuchkey >/dev/null 2>&1; rc=$?
check "hpcctl get nosuchkey: exit 2" test $rc -eq 2
"$hpcctl" prio $a 9 >/dev/null 2>&1; rc=$?
check "hpcctl prio PID 9 (outside 1..6): exit 2" test $rc -eq 2
check "hpcctl top --once prints a table" bash -c "'$hpcctl' top --once | grep -q '^ *$a '"
# waits: a stopped (not runnable) light context leaves the core to the heavy
# one with waits=sleep, counts as polling with waits=poll, and is the SMT
# model's waiting context with waits=model.
unlimited() { case $(quota_of $1) in "-1 "* | "max "*) return 0 ;; esac; return 1; }
kill -STOP $a
if wait_for 3 "unlimited $b"; then
	ok "waits=sleep: beside a sleeping sibling the heavy context runs unthrottled ($(quota_of $b))"
else
	nok "waits=sleep: heavy context still throttled beside a sleeping sibling" "$(quota_of $b)"
fi
check "hpcctl set waits=poll" "$hpcctl" set waits=poll
if wait_for 3 'test "$(quota_of $b)" = "9610 10000"'; then
	ok "waits=poll: the sleeping sibling counts as polling, the heavy context keeps 961 permille ($(quota_of $b))"
else
	nok "waits=poll: heavy context not back at its two-context quota" "$(quota_of $b) (want 9610 10000)"
fi
"$hpcctl" set waits=spin >"$work/o" 2>&1; rc=$?
check "hpcctl set waits=spin: exit 2, nothing changed" test $rc -eq 2 -a "$("$hpcctl" get waits)" = poll
check "hpcctl set waits=model" "$hpcctl" set waits=model
# (6, waiting): 708 permille alone + 292 of (6,4)'s 961 = 988.
if wait_for 3 'test "$(quota_of $b)" = "9880 10000"'; then
	ok "waits=model: beside the model's waiting sibling the heavy context gets 988 permille ($(quota_of $b))"
else
	nok "waits=model: heavy context not at the model's waiting-sibling quota" "$(quota_of $b) (want 9880 10000)"
fi
check "hpcctl set waits=sleep" "$hpcctl" set waits=sleep
kill -CONT $a
kill -TERM $d; wait $d 2>/dev/null
check "SIGTERM: tasks back in their cgroup ($(cg_of $a))" test "$(cg_of $a)" = "$orig_cg" -a "$(cg_of $b)" = "$orig_cg"
check "SIGTERM: affinity restored ($(affinity $a))" test "$(affinity $a)" = "$orig_aff"
check "SIGTERM: hpcd's cgroups removed" test ! -e "$root/hpcsched/hpcd-$d"

# --- 3. SIGKILL: the guardian undoes everything ------------------------------------
"$hpcd" --mode smt-emul --pid $a --pid $b --prio 6 --prio 4 --cpus $cpus 2>"$work/hpcd2.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
if wait_for 3 'test "$(quota_of $a)" = "9610 10000"'; then ok "before SIGKILL: throttled ($(quota_of $a), $(quota_of $b))"; else nok "before SIGKILL: quota not set" "$(quota_of $a)"; fi
g=$(pgrep -P $d hpcd-guardian || pgrep -x hpcd-guardian | head -1)
kill -KILL $d; wait $d 2>/dev/null
if wait_for 3 'test "$(cg_of $a)" = "$orig_cg" -a "$(cg_of $b)" = "$orig_cg" -a ! -e "$root/hpcsched/hpcd-$d"'; then
	ok "after SIGKILL: tasks back in $orig_cg, no quota left, hpcd's cgroups gone"
else
	nok "after SIGKILL: cleanup" "a in $(cg_of $a), b in $(cg_of $b), tree: $(ls "$root/hpcsched" 2>&1)"
fi
check "after SIGKILL: affinity restored ($(affinity $a))" test "$(affinity $a)" = "$orig_aff" -a "$(affinity $b)" = "$orig_aff"
check "after SIGKILL: the tasks still run" kill -0 $a $b
check "after SIGKILL: no quota on their cgroup ($(quota_of $a))" bash -c "q='$(quota_of $a)'; case \$q in -1*|max*) exit 0;; esac; exit 1"

# --- 4. /proc sampling drives the core: heavy spin + light sleeper ------------
{ kill -9 $a $b; wait $a $b; } 2>/dev/null
start_spin 60; a=$!
start_spin 60 10 100; b=$!   # computes 10 ms (CPU time), sleeps 100 ms
"$hpcd" --mode smt-emul --pid $a --pid $b --cpus $cpus --group-weight 10000 2>"$work/hpcd3.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
if wait_for 10 'test "$(task_json $a prio 2>/dev/null)" = 6'; then
	ok "/proc sampling: the busy task rises to prio 6 (light: $(task_json $b prio), U_last $(task_json $b last_util))"
else
	nok "/proc sampling: busy task did not rise" "$("$hpcctl" top --once)"
fi
# The sleeper's iterations (110 ms each) go on being counted: waited for,
# not read at the moment the busy task rose (on an idle machine that came
# after 5 of them).
wait_for 10 'test "$(task_json $b iterations 2>/dev/null || echo 0)" -gt 5'
it=$(task_json $b iterations)
check "/proc sampling: the sleeper's iterations are counted ($it)" test "${it:-0}" -gt 5
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $a $b; wait $a $b; } 2>/dev/null

# --- 5. the monitor's records: hello adopts ranks, iterations drive the core ----
start_spin 60; a=$!
start_spin 60; b=$!
"$hpcd" --mode smt-emul --cpus $cpus -v 2>"$work/hpcd4.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
# 8 iterations, ending 1..8 s from now: the heavy rank holds its lead until
# 2 iterations after the last record's end (then hpcd's tick judges it alone
# and gives the lead back), time enough for the checks on a slow machine (4
# ended in 4 s, and a check that came 6 s after them found both ranks at 4).
send_pair $a $b 8
sleep 0.3
check "monitor: hello adopted both ranks" wait_for 3 'test "$(task_json $a source 2>/dev/null)/$(task_json $b rank 2>/dev/null)" = "monitor/1"'
check "monitor: iterations drive the core (heavy prio $(task_json $a prio), light $(task_json $b prio))" \
	wait_for 3 'test "$(task_json $a prio)/$(task_json $b prio)" = "6/4"'
if wait_for 3 'test "$(quota_of $a)" = "9610 10000" -a "$(quota_of $b)" = "1740 10000"'; then
	ok "monitor: modelled quotas 9610 / 1740 of 10000"
else
	nok "monitor: modelled quotas 9610 / 1740 of 10000: $(quota_of $a) / $(quota_of $b)" \
		"$("$hpcctl" top --once)" "$("$hpcctl" --backend hpcd status --json)" "$(tail -20 "$work/hpcd4.log")"
fi
# -v logs every rank's iterations, the held side of a barrier's pair too.
check "monitor: hpcd -v logs the 8 iterations of each rank ($(grep -c "^hpcd: $a rank 0 iteration" "$work/hpcd4.log") and $(grep -c "^hpcd: $b rank 1 iteration" "$work/hpcd4.log"))" \
	test "$(grep -c "^hpcd: $a rank 0 iteration" "$work/hpcd4.log")/$(grep -c "^hpcd: $b rank 1 iteration" "$work/hpcd4.log")" = 8/8
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $a $b; wait $a $b; } 2>/dev/null

# --- 5b. ranks adopted from the monitor onto fewer CPUs than contexts: said ------
start_spin 60; a=$!
start_spin 60; b=$!
"$hpcd" --mode smt-emul --cpus 0 2>"$work/hpcd5.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
send_pair $a $b 1
check "fewer CPUs than adopted contexts: hpcd says it emulates ($(grep -m1 emulating "$work/hpcd5.log"))" \
	wait_for 3 "grep -q '2 tasks need 2 CPUs (one per SMT context) but 1 is available: emulating 2 contexts per CPU' '$work/hpcd5.log'"
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $a $b; wait $a $b; } 2>/dev/null

# --- 6. hpcctl run: starts hpcd, exits with the command's status ---------------------
"$hpcctl" run --hpcd "$hpcd" -- sh -c 'exit 7'; rc=$?
check "hpcctl run -- sh -c 'exit 7': exit 7" test $rc -eq 7
out=$("$hpcctl" run --hpcd "$hpcd" --heuristic adaptive --set mode=smt-emul -- sh -c 'cat /proc/self/cgroup'); rc=$?
check "hpcctl run --set mode=smt-emul: the command runs in hpcd's cgroup" bash -c "[ $rc -eq 0 ] && echo '$out' | grep -q /hpcsched/hpcd-"
wait_for 5 '! ctl_up'
out=$("$hpcctl" run --hpcd "$hpcd" -- sh -c 'cat /proc/self/cgroup'); rc=$?
check "hpcctl run (mode weight, one task, nothing to share): the command stays in its own cgroup" \
	bash -c "[ $rc -eq 0 ] && ! echo '$out' | grep -q /hpcsched/hpcd-"
wait_for 5 '! ctl_up'
check "hpcctl run: the hpcd it started exits with its last task" bash -c "! '$hpcctl' --backend hpcd status >/dev/null 2>&1"
"$hpcctl" run --hpcd "$hpcd" -- /nonexistent/cmd 2>/dev/null; rc=$?
check "hpcctl run -- /nonexistent/cmd: exit 127" test $rc -eq 127
"$hpcctl" run --hpcd "$hpcd" --set bogus=1 -- true 2>/dev/null; rc=$?
check "hpcctl run --set bogus=1: exit 2" test $rc -eq 2

# --- 6a. a task's exit ends it at once (its pidfd), and the watchers hear it ------
# Sampling every second: only the pidfd can tell hpcd first (a sampled end
# is logged "gone from /proc").
# Started with a soft open-file limit of 256: hpcd raises it to the hard one.
(ulimit -Sn 256 && exec "$hpcd" --sample-ms 1000 2>"$work/hpcd-pidfd.log") &
d=$!; pids+=($d)
wait_for 5 ctl_up
sleep 30 & s=$!; pids+=($s)
$py - "$here" "$HPCD_CONTROL" $s >"$work/released" 2>&1 <<'PY' &
import json, os, signal, sys
sys.path.insert(0, sys.argv[1])
from hpcd_ctl import watch_and_add
pid = int(sys.argv[3])
w, wf, added = watch_and_add(sys.argv[2], pid, "sleeper")
print("add:", added)
os.kill(pid, signal.SIGKILL)
w.settimeout(10)
for line in wf:
    ev = json.loads(line)
    if ev.get("event") == "released":
        print("released:", ev["pid"])
        break
PY
wp=$!
wait $wp
wait $s 2>/dev/null
check "a task that exits: the watchers get {\"event\":\"released\",\"pid\":$s} ($(tr '\n' ' ' <"$work/released"))" \
	grep -qx "released: $s" "$work/released"
check "a task that exits: hpcd ends it from its pidfd, not at the next sample" \
	grep -q "released $s (sleeper): exited\$" "$work/hpcd-pidfd.log"
nofile=$(awk '/^Max open files/ { print $4 "/" $5 }' /proc/$d/limits)
check "hpcd started with 256 open files raised it to the hard limit (two per rank: $nofile)" \
	test "${nofile%/*}" = "${nofile#*/}" -a "${nofile%/*}" != 256
kill -TERM $d; wait $d 2>/dev/null

# --- 6a2. a launcher is released after its ranks -----------------------------
# A launcher (a shell waiting for two sleepers) is managed; the sleepers say
# hello as its ranks. hpcd is stopped, the ranks are killed and the launcher
# exits: all three exits come to hpcd at once when it continues. It releases
# the ranks first: the launcher's release ends hpcctl run/trace, which must
# have the ranks' ends.
"$hpcd" 2>"$work/hpcd-order.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
bash -c 'sleep 60 & sleep 60 & wait' & l=$!; pids+=($l)
wait_for 5 '[ "$(pgrep -P $l | wc -l)" -eq 2 ]'
read -r r0 r1 <<<"$(pgrep -P $l | sort -n | tr '\n' ' ')"
$py - "$here" "$HPCD_CONTROL" "$HPCD_SOCKET" $l $r0 $r1 >"$work/order" 2>&1 <<'PY' &
import json, sys
sys.path.insert(0, sys.argv[1])
from hpcd_ctl import HELLO, monitor, record, watch_and_add
mon, l, r0, r1 = sys.argv[3], *map(int, sys.argv[4:])
w, wf, _ = watch_and_add(sys.argv[2], l, "launcher")
for rank, pid in enumerate((r0, r1)):
    m = monitor(mon)
    m.send(record(HELLO, pid, rank, 2, 7))
print("ready", flush=True)
w.settimeout(20)
seen = []
for line in wf:
    ev = json.loads(line)
    if ev.get("event") == "released":
        seen.append(ev["pid"])
        if l in seen:
            break
print("released:", *seen)
PY
wp=$!; pids+=($wp)
wait_for 10 '[ "$("$hpcctl" --backend hpcd top --once --json 2>/dev/null |
	grep -o "\"source\":\"monitor\"" | wc -l)" -eq 2 ] && grep -q ready "$work/order"'
kill -STOP $d
kill -9 $r0 $r1
wait_for 5 "! kill -0 $l 2>/dev/null"
kill -CONT $d
wait $wp
check "hpcd held up while a job ends: its ranks released before the launcher ($(tail -1 "$work/order"); launcher $l, ranks $r0 $r1)" \
	bash -c "tail -1 '$work/order' | grep -Eqx 'released: ($r0 $r1|$r1 $r0) $l'"
kill -TERM $d; wait $d 2>/dev/null

# --- 6b. weight mode (the default): real CPUs, weights, no quota ----------------
start_spin 60; a=$!
start_spin 60; b=$!
"$hpcd" --pid $a --pid $b --cpus $cpus 2>"$work/hpcd5.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
check "weight mode is the default ($("$hpcctl" get mode), backend $("$hpcctl" get backend))" \
	test "$("$hpcctl" get mode)/$("$hpcctl" get backend)" = weight/cgroup-weight
check "weight mode: as many tasks as CPUs are not pinned ($(affinity $a)/$(affinity $b))" \
	test "$(affinity $a)/$(affinity $b)" = "$orig_aff/$orig_aff"
if [ "$ver" = v1 ]; then w=$(cat "$root$(cg_of $a)/cpu.shares"); else w=$(cat "$root$(cg_of $a)/cpu.weight"); fi
check "weight mode: no quota ($(quota_of $a)), weight written ($w)" bash -c "case '$(quota_of $a)' in -1*|max*) [ -n '$w' ];; *) exit 1;; esac"
check "weight mode: hpcd says what it does" grep -q "mode weight: ranks keep the real CPUs" "$work/hpcd5.log"
"$hpcctl" set mode=smt-emul >/dev/null
check "mode=smt-emul at run time: contexts on CPUs of their own" wait_for 3 'test "$(affinity $a)/$(affinity $b)" = "${cpus%%,*}/${cpus##*,}"'
check "mode=smt-emul: hpcd says what the emulation costs" grep -q "mode smt-emul: .* up to about 2x slower" "$work/hpcd5.log"
"$hpcctl" set mode=weight >/dev/null
check "mode=weight again: the tasks' own CPUs back ($(affinity $a))" wait_for 3 'test "$(affinity $a)/$(affinity $b)" = "$orig_aff/$orig_aff"'
"$hpcctl" set mode=turbo >"$work/o" 2>&1; rc=$?
check "hpcctl set mode=turbo: exit 2, names the modes, nothing changed" \
	test $rc -eq 2 -a "$("$hpcctl" get mode)" = weight -a -n "$(grep -l 'weight or smt-emul' "$work/o")"
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $a $b; wait $a $b; } 2>/dev/null

# --- 6b2. real SMT threads: the lighter thread held back, the heavier never ---
# Only where a core has more than one hardware thread (not on every machine:
# skipped, and said, elsewhere).
sibs=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null)
sib_cpus=$(python3 -c "import sys
s = sys.argv[1]
c = [int(x) for p in s.split(',') if p for x in (range(int(p.split('-')[0]), int(p.split('-')[-1]) + 1))]
print('%d,%d' % (c[0], c[1]) if len(c) > 1 else '')" "${sibs:-0}" 2>/dev/null)
if [ -n "$sib_cpus" ]; then
	start_spin 60; a=$!
	start_spin 60; b=$!
	"$hpcd" --pid $a --pid $b --prio 4 --prio 6 --cpus "$sib_cpus" 2>"$work/hpcd-smt.log" &
	d=$!; pids+=($d)
	wait_for 5 ctl_up
	duty=$(grep -o 'e.g. [0-9]* permille' "$work/hpcd-smt.log" | grep -o '[0-9]*')
	want=$((10000 * ${duty:-0} / 1000)); [ "$want" -ge 1000 ] || want=1000
	check "real SMT ($sib_cpus): the lighter thread runs $duty permille of 10 ms ($(quota_of $a))" \
		wait_for 3 "test \"\$(quota_of $a)\" = '$want 10000'"
	check "real SMT: the heavier thread is never throttled ($(quota_of $b))" \
		bash -c "case '$(quota_of $b)' in -1*|max*) exit 0;; esac; exit 1"
	kill -TERM $d; wait $d 2>/dev/null
	{ kill -9 $a $b; wait $a $b; } 2>/dev/null
else
	skip "real SMT: the lighter thread of a core held back" "CPU 0 has no SMT sibling (${sibs:-unknown})"
fi

# --- 6c. hpcctl against the kernel's sysfs (a fake one: same files) ------------
k=$work/sysfs; mkdir -p "$k"
for kv in low_util=65 high_util=85 min_prio=4 max_prio=6 global_weight=10 last_weight=90 \
	heuristic=uniform min_wait_us=100 queue=rr timeslice_us=100000 emul_period_us=10000 \
	backend=x86-smt-emul "prio_range=1 6" "smt_pairs=0 1"; do echo "${kv#*=}" >"$k/${kv%%=*}"; done
check "kernel: hpcctl get low_util" test "$(HPC_SYSFS=$k "$hpcctl" get low_util)" = 65
HPC_SYSFS=$k "$hpcctl" set low_util=60 heuristic=adaptive; rc=$?
check "kernel: hpcctl set writes sysfs" test $rc -eq 0 -a "$(cat "$k/low_util")/$(cat "$k/heuristic")" = "60/adaptive"
HPC_SYSFS=$k "$hpcctl" set min_wait_us=500 low_util=90 2>"$work/o"; rc=$?
check "kernel: invariant broken (low_util=90 >= high_util): exit 2, nothing written" \
	test $rc -eq 2 -a "$(cat "$k/low_util")/$(cat "$k/min_wait_us")" = "60/100"
HPC_SYSFS=$k "$hpcctl" set max_prio=7 2>/dev/null; rc=$?
check "kernel: max_prio=7 outside prio_range 1 6: exit 2" test $rc -eq 2
HPC_SYSFS=$k "$hpcctl" set smt_pairs=1 2>/dev/null; rc=$?
check "kernel: read-only smt_pairs: exit 2" test $rc -eq 2
HPC_SYSFS=$k "$hpcctl" set timeslice_us=10 2>/dev/null; rc=$?
check "kernel: timeslice_us=10: exit 2" test $rc -eq 2
# prio: sched_priority of a SCHED_HPC task; the value is checked against
# prio_range first, then the task's policy (this host's tasks are not SCHED_HPC)
HPC_SYSFS=$k "$hpcctl" prio $$ 7 2>"$work/o"; rc=$?
check "kernel: prio PID 7 (outside prio_range 1 6): exit 2, says so" \
	test $rc -eq 2 -a -n "$(grep -l 'prio: 7 is outside 1..6' "$work/o")"
pol=$(awk '{ print $41 }' /proc/$$/stat)
HPC_SYSFS=$k "$hpcctl" prio $$ 4 2>"$work/o"; rc=$?
check "kernel: prio of a task that is not SCHED_HPC: exit 1, says so, policy unchanged" \
	test $rc -eq 1 -a -n "$(grep -l 'is not SCHED_HPC' "$work/o")" -a "$(awk '{ print $41 }' /proc/$$/stat)" = "$pol"
HPC_SYSFS=$k "$hpcctl" prio 999999999 4 2>"$work/o"; rc=$?
check "kernel: prio of no task: exit 1" test $rc -eq 1 -a -n "$(grep -l 'no task 999999999' "$work/o")"
HPC_SYSFS=$k "$hpcctl" run -- true 2>"$work/o"; rc=$?
if [ -d /sys/kernel/sched_hpc ]; then
	check "kernel: hpcctl run -- true under SCHED_HPC" test $rc -eq 0
else
	check "kernel: run without SCHED_HPC in this kernel: exit 1, says sched_setscheduler" \
		test $rc -eq 1 -a -n "$(grep -l 'sched_setscheduler(SCHED_HPC)' "$work/o")"
fi

# --- 6d. hpcctl trace and report: refusals change nothing ------------------------
tdir=$work/trace; mkdir -p "$tdir"
state() { (cd "$tdir" && find . -type f -exec md5sum {} + | sort); }
# refused NAME WANT_RC WANT_TEXT CMD...: exits WANT_RC, says WANT_TEXT, and
# leaves $tdir as it was (no file, no temporary file, nothing overwritten).
refused() {
	local name=$1 want=$2 text=$3 before rc; shift 3
	before=$(state)
	"$@" >"$work/o" 2>&1; rc=$?
	if [ $rc -eq "$want" ] && grep -qF -- "$text" "$work/o" && [ "$(state)" = "$before" ]; then
		ok "$name"
	else
		nok "$name" "exit $rc (want $want), want '$text' in: $(head -c 300 "$work/o")" \
			"files before: $before" "files after: $(state)"
	fi
}
T=$tdir/t.jsonl
refused "trace without --duration or a command: exit 64" 64 "give --duration SEC" "$hpcctl" trace -o "$T"
refused "trace --duration 0: exit 64" 64 "--duration" "$hpcctl" trace -o "$T" --duration 0
refused "trace without -o: exit 64" 64 "--output" "$hpcctl" trace --duration 1
refused "trace without hpcd: exit 3" 3 "hpcd is not running" "$hpcctl" trace -o "$T" --duration 1
refused "trace into a missing directory: exit 1" 1 "does not exist" \
	"$hpcctl" trace -o "$tdir/no/such/dir/t.jsonl" --duration 1
echo keep >"$tdir/old.jsonl"
refused "trace onto an existing file: exit 1, file kept" 1 "exists (--force overwrites it)" \
	"$hpcctl" trace -o "$tdir/old.jsonl" --duration 1
refused "trace with the same file twice: exit 64" 64 "named twice" \
	"$hpcctl" trace -o "$T" --perfetto "$T" --duration 1
refused "trace --set bogus=1 -- true: exit 2" 2 "unknown parameter 'bogus'" \
	"$hpcctl" trace -o "$T" --set bogus=1 -- true
refused "trace --set without a command: exit 64" 64 "go with a command" \
	"$hpcctl" trace -o "$T" --duration 1 --set low_util=60
refused "trace -- (no command): exit 65" 65 "no command after '--'" "$hpcctl" trace -o "$T" --
refused "trace --membind 99 -- true: exit 64" 64 "NUMA node 99 does not exist" \
	"$hpcctl" trace -o "$T" --membind 99 -- true
refused "trace -- /nonexistent/cmd: exit 127" 127 "cannot run '/nonexistent/cmd'" \
	"$hpcctl" trace -o "$T" --hpcd "$hpcd" -- /nonexistent/cmd
wait_for 5 '! ctl_up'
refused "trace --backend kernel without SCHED_HPC: exit 1" 1 "has no SCHED_HPC" \
	"$hpcctl" --backend kernel trace -o "$T" --duration 1
fakefs=$work/tracefs; mkdir -p "$fakefs/instances"
refused "kernel trace without the tracepoint: exit 1" 1 "no sched_hpc_iteration tracepoint" \
	env HPC_SYSFS="$k" "$hpcctl" trace -o "$T" --duration 1 --tracefs "$fakefs"
mkdir -p "$fakefs/events/sched/sched_hpc_iteration"
refused "kernel trace where tracefs refuses: exit 1" 1 "trace_clock" \
	env HPC_SYSFS="$k" "$hpcctl" trace -o "$T" --duration 1 --tracefs "$fakefs"
check "kernel trace: no tracefs instance left behind" test -z "$(ls -A "$fakefs/instances")"
refused "tracefs not mounted: exit 1" 1 "tracefs is not mounted at $work/none" \
	env HPC_SYSFS="$k" "$hpcctl" trace -o "$T" --duration 1 --tracefs "$work/none"

fx=$work/fixture.jsonl
cp "$(dirname "$0")/data/trace_pair.jsonl" "$fx"
echo hello >"$work/bad.jsonl"
printf '%s\n' '{"format":"hpcsched-trace","version":1,"source":"hpcd","start_ns":0}' \
	'{"type":"end","end_ns":10}' >"$work/empty.jsonl"
refused "report of a missing file: exit 1" 1 "cannot read $work/nonexistent.jsonl" \
	"$hpcctl" report "$work/nonexistent.jsonl" --plot "$tdir/p.png"
refused "report of a malformed file: exit 1, names the line" 1 "bad.jsonl: line 1: not JSON" \
	"$hpcctl" report "$work/bad.jsonl" --perfetto "$tdir/p.json"
refused "report of a trace without iterations: exit 1" 1 "holds no iteration" \
	"$hpcctl" report "$work/empty.jsonl" --paraver "$tdir/p"
refused "report --plot onto an existing file: exit 1, file kept" 1 "exists" \
	"$hpcctl" report "$fx" --plot "$tdir/old.jsonl"
refused "report --plot without a usable python: exit 1, no png" 1 "the plot failed" \
	env HPCCTL_PYTHON=/nonexistent/python3 "$hpcctl" report "$fx" --plot "$tdir/p.png"
refused "report --plot without report.py: exit 1" 1 "draws with /nonexistent/report.py" \
	env HPCCTL_REPORT_PY=/nonexistent/report.py "$hpcctl" report "$fx" --plot "$tdir/p.png"
refused "report --perfetto onto the trace it reads: exit 64" 64 "is the trace being read" \
	"$hpcctl" report "$fx" --perfetto "$fx" --force
refused "report --paraver into a missing directory: exit 1" 1 "does not exist" \
	"$hpcctl" report "$fx" --paraver "$tdir/no/dir/p"
refused "report without FILE: exit 64" 64 "FILE is required" "$hpcctl" report
refused "report --plot and --perfetto on one file: exit 64" 64 "named twice" \
	"$hpcctl" report "$fx" --plot "$tdir/x" --perfetto "$tdir/x"

# --- 6e. hpcctl report: the table, the plot and the exports of a fixture ---------
"$hpcctl" report "$fx" --plot "$tdir/p.png" --perfetto "$tdir/p.json" --paraver "$tdir/p" \
	>"$work/o" 2>&1; rc=$?
check "report of the fixture: exit 0 ($(tail -c 200 "$work/o" | tr '\n' ' '))" test $rc -eq 0
check "report: the table has P1 at 90 % compute, priorities 4>5>6" \
	grep -Eq '^P1 +201 +app +3 +90\.00 +4>5>6 ' "$work/o"
check "report --plot: a PNG" bash -c "head -c 8 '$tdir/p.png' | grep -q PNG"
check "report --perfetto: 12 compute/wait slices" \
	test "$($py -c "import json,sys; print(sum(e['ph'] == 'X' for e in json.load(open(sys.argv[1]))['traceEvents']))" "$tdir/p.json")" = 12
check "report --paraver: .prv header, 12 state records, .pcf and .row" bash -c \
	"head -1 '$tdir/p.prv' | grep -q '^#Paraver (01/01/70 at 00:00):400000000_ns:1(2):1:2(1:1,1:1)$' &&
	 [ \$(grep -c '^1:' '$tdir/p.prv') -eq 12 ] && grep -q SCHED_HPC '$tdir/p.pcf' &&
	 grep -q 'LEVEL THREAD SIZE 2' '$tdir/p.row'"
check "report: no temporary file left" test -z "$(ls -A "$tdir" | grep hpcctl)"
refused "report again without --force: exit 1, files kept" 1 "exists" \
	"$hpcctl" report "$fx" --perfetto "$tdir/p.json"
"$hpcctl" report "$fx" --perfetto "$tdir/p.json" --force >/dev/null 2>&1; rc=$?
check "report --force overwrites" test $rc -eq 0

# --- 6f. hpcctl trace of hpcd: what the monitor reported, exactly -----------------
start_spin 60; a=$!
start_spin 60; b=$!
"$hpcd" --cpus $cpus 2>"$work/hpcd6.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
"$hpcctl" status --json >"$work/status.json" 2>&1
check "status: hwloc's topology ($(grep -o '"topology":{[^}]*}' "$work/status.json")) and hpcd's CPU time" \
	$py -c "import json,sys; s=json.load(open(sys.argv[1])); t=s['topology']
assert t['cores'] >= 1 and t['packages'] >= 1 and t['numa_nodes'] and t['cpus'] >= int(sys.argv[2])
assert isinstance(s['cpu_ms'], int)" "$work/status.json" "$ncpu"
"$hpcctl" trace -o "$tdir/live.jsonl" --duration 120 --perfetto "$tdir/live.json" 2>"$work/trace.err" &
tp=$!; pids+=($tp)
wait_for 5 '[ -n "$(ls -A "$tdir" | grep hpcctl-)" ]'
send_pair $a $b 6
sleep 0.5
kill -INT $tp; wait $tp; rc=$?
check "trace of hpcd stopped by SIGINT: exit 0 ($(tr '\n' ' ' <"$work/trace.err"))" test $rc -eq 0
n_it=$(grep -c '"type":"iteration"' "$tdir/live.jsonl" 2>/dev/null)
check "trace: both ranks' 6 iterations recorded ($n_it)" test "${n_it:-0}" -eq 12
check "trace: the light rank's last iteration as the monitor said (run 250 ms, wait 750 ms)" bash -c \
	"grep '\"type\":\"iteration\",\"pid\":$b,' '$tdir/live.jsonl' | tail -1 | grep -q '\"run_ns\":250000000,\"wait_ns\":750000000,'"
check "trace: an end line says it was interrupted" bash -c \
	"tail -1 '$tdir/live.jsonl' | grep -q '\"reason\":\"interrupted'"
"$hpcctl" report "$tdir/live.jsonl" >"$work/o" 2>&1; rc=$?
check "report of the live trace: the heavy rank rose to 6" bash -c \
	"[ $rc -eq 0 ] && grep -Eq '^P0 +$a .* 4>5>6 ' '$work/o'"
check "trace --perfetto: 12 compute slices" \
	test "$($py -c "import json,sys; print(sum(e['name'] == 'compute' for e in json.load(open(sys.argv[1]))['traceEvents']))" "$tdir/live.json" 2>/dev/null)" = 12
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $a $b; wait $a $b; } 2>/dev/null

# --- 6f2. a node's barrier: 256 ranks' records at once, none lost ---------------
# Each rank has its own connection (its own queue): the records of a barrier
# of every rank of a node arrive, where one shared datagram queue held 10.
many=()
for _ in $(seq 256); do sleep 120 & many+=($!); done
"$hpcd" --cpus $cpus 2>"$work/hpcd6f2.log" &
d=$!; pids+=($d)
wait_for 5 ctl_up
$py - "$here" "$HPCD_SOCKET" "${many[@]}" >"$work/many.out" 2>&1 <<'PY' &
import sys, time
sys.path.insert(0, sys.argv[1])
from hpcd_ctl import HELLO, ITERATION, monitor, record
path, pids = sys.argv[2], [int(p) for p in sys.argv[3:]]
def rec(kind, pid, rank, it=0, end=0):
    return record(kind, pid, rank, len(pids), 9, it, 90000000, 10000000, end, 90000000)
conns = []
for rank, pid in enumerate(pids):
    s = monitor(path)
    s.send(rec(HELLO, pid, rank))
    conns.append(s)
time.sleep(1)
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
for i in range(3):  # three barriers, every rank's record sent at once
    for rank, (pid, s) in enumerate(zip(pids, conns)):
        s.send(rec(ITERATION, pid, rank, i, now + (i + 1) * 100000000))
print("sent", len(pids) * 4)
time.sleep(30)  # hpcd reads at its pace; the test ends this sooner
PY
sender=$!; pids+=($sender)
wait_for 20 '[ "$(status_field records)" = 1024 ]'
check "256 ranks, three barriers at once: hpcd got all 1024 records ($(status_field records), rejected $(status_field records_rejected), $(status_field monitor_connections) connections)" \
	test "$(status_field records)" = 1024 -a "$(status_field records_rejected)" = 0 -a "$(status_field monitor_connections)" = 256
check "256 ranks: each managed (the hellos' $(status_field tasks) tasks)" test "$(status_field tasks)" = 256
kill -TERM $d; wait $d 2>/dev/null
{ kill -9 $sender "${many[@]}"; wait $sender "${many[@]}"; } 2>/dev/null

# --- 6g. hpcctl trace -- CMD: /proc sampling, until the command ends --------------
"$hpcctl" trace -o "$tdir/cmd.jsonl" --hpcd "$hpcd" -- "$spin" 3 10 40 >/dev/null 2>"$work/o"; rc=$?
n_it=$(grep -c '"type":"iteration"' "$tdir/cmd.jsonl" 2>/dev/null)
check "trace -- hpcd-spin 3 10 40: exit 0, iterations from /proc sampling ($n_it; $(tr '\n' ' ' <"$work/o"))" \
	test $rc -eq 0 -a "${n_it:-0}" -ge 10
check "trace -- CMD: ended with the command" bash -c \
	"tail -1 '$tdir/cmd.jsonl' | grep -Eq '\"reason\":\"(the command ended|hpcd: no task left)'"
"$hpcctl" trace -o "$tdir/st.jsonl" --hpcd "$hpcd" -- sh -c 'exit 5' >/dev/null 2>&1; rc=$?
check "trace -- sh -c 'exit 5': exit 5, the record kept" test $rc -eq 5 -a -s "$tdir/st.jsonl"
wait_for 5 '! ctl_up'

# --- 6h. --membind (libnuma) ---------------------------------------------------------
out=$("$hpcctl" run --hpcd "$hpcd" --membind 0 -- cat /proc/self/numa_maps 2>&1); rc=$?
check "run --membind 0: the command's memory is bound to node 0" bash -c \
	"[ $rc -eq 0 ] && grep -q ' bind:0 ' <<<'$out'"
"$hpcctl" run --membind 99 -- true >"$work/o" 2>&1; rc=$?
check "run --membind 99: exit 64, names the node" test $rc -eq 64 -a -n "$(grep -l 'NUMA node 99 does not exist' "$work/o")"
"$hpcctl" run --membind x -- true >"$work/o" 2>&1; rc=$?
check "run --membind x: exit 64" test $rc -eq 64 -a -n "$(grep -l 'not a list of NUMA nodes' "$work/o")"
wait_for 5 '! ctl_up'

# --- 7. the event source: BPF (the scheduler's tracepoints), or /proc ---------
threads=$bin/hpcd-threads
# top_field PID KEY: that field of the task in hpcctl top (empty: not listed).
top_field() {
	"$hpcctl" --backend hpcd top --once --json 2>/dev/null |
		$py -c "import json,sys; t={x['pid']:x for x in json.load(sys.stdin)}; print(t[$1]['$2'] if $1 in t else '')" 2>/dev/null
}
# A rank whose iterations run in a worker thread (10 ms computing, 20 ms
# asleep) while its main thread waits, beside a storm of 64 short-lived
# threads at a time for its first 2 s. The BPF source follows every thread:
# the iterations go on after the storm (each dead thread was counted out).
"$threads" 8 10 20 2 64 >/dev/null & tp=$!; pids+=($tp)
"$hpcd" --source bpf --pid $tp 2>"$work/hpcd-bpf.log" &
hp=$!; pids+=($hp)
wait_for 10 ctl_up
src=$(status_field source)
check "--source bpf: hpcd says it uses it (status source: $src; $(head -1 "$work/hpcd-bpf.log"))" test "$src" = bpf
check "--source bpf: the task's iterations come from it (source $(top_field $tp source))" test "$(top_field $tp source)" = bpf
sleep 3.5
i1=$(top_field $tp iterations)
sleep 2
i2=$(top_field $tp iterations) u=$(top_field $tp last_util) lost=$(status_field bpf_lost)
check "--source bpf: a worker thread's iterations are seen after a thread storm ($i1 then $i2 iterations, 2 s apart)" \
	test -n "$i1" -a -n "$i2" -a "${i2:-0}" -ge $((${i1:-0} + 10))
check "--source bpf: ... with its waits (last utilisation ${u:-?} of 10000, under 8000)" test -n "$u" -a "${u:-10000}" -lt 8000
check "--source bpf: the storm lost no event ($lost)" test "$lost" = 0
kill $tp 2>/dev/null
wait_for 5 '[ -z "$(top_field '$tp' pid)" ]'
check "--source bpf: a task that exits is released" test -z "$(top_field $tp pid)"
kill $hp 2>/dev/null; wait $hp 2>/dev/null

# The same rank with /proc sampling sees its main thread only, asleep in
# pthread_join: no iteration once the storm is over.
"$threads" 8 10 20 2 64 >/dev/null & tp=$!; pids+=($tp)
"$hpcd" --source proc --pid $tp 2>"$work/hpcd-proc.log" &
hp=$!; pids+=($hp)
wait_for 10 ctl_up
src=$(status_field source)
check "--source proc: hpcd samples /proc (status source: $src)" test "$src" = proc
sleep 3.5
i1=$(top_field $tp iterations)
sleep 2
i2=$(top_field $tp iterations)
check "--source proc: the main thread only (source $(top_field $tp source); iterations $i1 then $i2)" \
	test "$(top_field $tp source)" = proc -a -n "$i1" -a "$i1" = "$i2"
kill $tp $hp 2>/dev/null; wait $hp 2>/dev/null

# Waits shorter than the sampling period (1 ms, 2 ms computing): the BPF
# source sees each (every wait of at least min_wait_us closes an iteration).
"$spin" 30 2 1 "$work/spin.log" >/dev/null & sp=$!; pids+=($sp)
"$hpcd" --source bpf --pid $sp 2>"$work/hpcd-short.log" &
hp=$!; pids+=($hp)
wait_for 10 ctl_up
sleep 2
i1=$(top_field $sp iterations)
kill -TERM $sp; wait $sp 2>/dev/null
slept=$(grep -c '^sleep ' "$work/spin.log" 2>/dev/null)
check "--source bpf: 1 ms waits each close an iteration ($i1 iterations, $slept waits)" \
	test -n "$i1" -a "${slept:-0}" -gt 100 -a "$((${i1:-0} * 10))" -ge "$((${slept:-0} * 8))"
wait_for 5 '! kill -0 '$hp' 2>/dev/null || ! ctl_up' || kill $hp 2>/dev/null
kill $hp 2>/dev/null; wait $hp 2>/dev/null

# A task that exits in the middle of a compute phase, its sibling held back
# by a quota (smt-emul, priorities 4 and 6): the sibling's quota goes.
start_spin 60; a=$!
start_spin 60; b=$!
"$hpcd" --source bpf --mode smt-emul --pid $a --pid $b --prio 4 --prio 6 --cpus $cpus 2>"$work/hpcd-exit.log" &
hp=$!; pids+=($hp)
wait_for 10 ctl_up
wait_for 5 '[ "$(quota_of '$a' | cut -d" " -f1)" != "-1" ] && [ "$(quota_of '$a' | cut -d" " -f1)" != max ]'
q0=$(quota_of $a)
kill -9 $b; wait $b 2>/dev/null
wait_for 5 '[ "$(quota_of '$a' | cut -d" " -f1)" = -1 ] || [ "$(quota_of '$a' | cut -d" " -f1)" = max ]'
check "--source bpf: the sibling of a task killed mid-iteration is no longer held back ($q0 -> $(quota_of $a))" \
	bash -c "case '$(quota_of $a)' in -1* | max*) true ;; *) false ;; esac"
kill $a $hp 2>/dev/null; wait $hp 2>/dev/null

# Many tasks that exit at once (more than one look at the exit set holds):
# each is released, and hpcd, idle, exits. On a loaded machine, starting 80
# processes and hpcd takes seconds, and a task gone before hpcd starts is an
# error ("no process"): each waits for a line on a FIFO, which the test
# holds open (fd 7), and becomes the spin loop (3 s) once hpcd manages all.
mkfifo "$work/many.fifo"
exec 7<>"$work/many.fifo"
many=()
for i in $(seq 80); do
	sh -c 'read -r _ < "$1"; exec "$2" 3 5 45' sh "$work/many.fifo" "$spin" >/dev/null 7>&- &
	many+=(--pid $!); pids+=($!)
done
"$hpcd" --exit-when-idle "${many[@]}" 2>"$work/hpcd-many.log" 7>&- &
hp=$!; pids+=($hp)
# shellcheck disable=SC2016 # expanded by wait_for's eval
wait_for 20 '[ "$(grep -c "^hpcd: managing" "$work/hpcd-many.log")" -ge 80 ] || ! kill -0 '$hp' 2>/dev/null'
printf 'go\n%.0s' $(seq 80) >&7
wait_for 20 '! kill -0 '$hp' 2>/dev/null'
exec 7>&-
check "80 tasks that exit together: each released, hpcd exits ($(grep -c '^hpcd: released' "$work/hpcd-many.log") released; $(grep -v '^hpcd: \(managing\|released\)' "$work/hpcd-many.log" | tail -1))" \
	bash -c "! kill -0 $hp 2>/dev/null && [ \$(grep -c '^hpcd: released' '$work/hpcd-many.log') -eq 80 ]"
kill $hp 2>/dev/null; wait $hp 2>/dev/null

# The program cannot load (a file that is no BTF stands for a kernel
# without it): --source bpf refuses with the reason and changes nothing;
# auto falls back to /proc and says why.
start_spin 30; a=$!
"$hpcd" --source bpf --bpf-btf /etc/hostname --pid $a >"$work/o" 2>&1; rc=$?
check "--source bpf without a usable BTF: exit 1 and why ($(grep -o 'cannot load.*' "$work/o" | head -1))" \
	test $rc -eq 1 -a -n "$(grep -l 'cannot load the BPF program' "$work/o")"
check "... and the task where it was, in no hpcd cgroup ($(cg_of $a))" test "$(cg_of $a)" = "$orig_cg"
"$hpcd" --source auto --bpf-btf /etc/hostname --pid $a 2>"$work/hpcd-fb.log" &
hp=$!; pids+=($hp)
wait_for 10 ctl_up
check "--source auto without a usable BTF: falls back to /proc ($(status_field source))" test "$(status_field source)" = proc
check "... and says why" grep -q 'event source: /proc.*no BPF source: cannot load the BPF program' "$work/hpcd-fb.log"
kill $a $hp 2>/dev/null; wait $hp 2>/dev/null
HPCD_SOURCE=kernel "$hpcd" >"$work/o" 2>&1; rc=$?
check "HPCD_SOURCE=kernel: exit 64, says what it may be" test $rc -eq 64 -a -n "$(grep -l 'not auto, bpf or proc' "$work/o")"
"$hpcd" --source sysfs >/dev/null 2>&1; rc=$?
check "hpcd --source sysfs: exit 64" test $rc -eq 64
wait_for 5 '! ctl_up'

# --- 8. hpcctl usage errors -----------------------------------------------------
"$hpcctl" frobnicate >"$work/o" 2>&1; rc=$?
check "hpcctl frobnicate: exit 64, 'unknown command'" test $rc -eq 64 -a -n "$(grep -l "unknown command 'frobnicate'" "$work/o")"
"$hpcctl" run true >"$work/o" 2>&1; rc=$?
check "hpcctl run without --: exit 65" test $rc -eq 65 -a -n "$(grep -l "put '--'" "$work/o")"
"$hpcctl" run -- >/dev/null 2>&1; rc=$?
check "hpcctl run -- (no command): exit 65" test $rc -eq 65
"$hpcctl" >/dev/null 2>&1; rc=$?
check "hpcctl (nothing): exit 64" test $rc -eq 64
"$hpcctl" get low_util >/dev/null 2>&1; rc=$?
check "hpcctl get without hpcd: exit 3" test $rc -eq 3
"$hpcctl" top --interval -1 >/dev/null 2>&1; rc=$?
check "hpcctl top --interval -1: exit 64" test $rc -eq 64
for c in "" run get set top status prio trace report; do
	"$hpcctl" $c --help >/dev/null 2>&1; rc=$?
	check "hpcctl $c --help: exit 0" test $rc -eq 0
done
"$hpcd" --mode turbo >/dev/null 2>&1; rc=$?
check "hpcd --mode turbo: exit 64" test $rc -eq 64
"$hpcd" --set low_util=101 >/dev/null 2>&1; rc=$?
check "hpcd --set low_util=101: exit 2" test $rc -eq 2
"$hpcd" --cpus 0-4095 >/dev/null 2>&1; rc=$?
check "hpcd --cpus with CPUs it may not use: exit 2" test $rc -eq 2
check "no hpcd cgroups left behind" bash -c "! ls -d '$root'/hpcsched/hpcd-* >/dev/null 2>&1"

tap_end
