#!/bin/sh
# 99-final: after every other case, the guest is back to its initial state
# and the kernel log is clean: all knobs at their ABI defaults, no task left
# in SCHED_HPC, every CPU online, the shell's own /proc/self/sched_hpc reads
# "policy: other", and dmesg holds no WARNING/BUG/lockdep/hung/stall report.
# guest-timeout: 60
. "${0%/*}/lib.sh"

if [ ! -d "$HPC_SYSFS" ]; then
	t_fail "SCHED_HPC present" "$HPC_SYSFS missing"
	t_done; exit $?
fi

bad=$(knobs_non_default)
if [ -z "$bad" ]; then t_ok "every knob at its default after the suite"; else t_fail "every knob at its default after the suite" "$bad"; knobs_restore; fi

left=$(hpc_tasks | tr '\n' ' ')
if [ -z "$left" ]; then t_ok "no task left in SCHED_HPC"; else
	for p in $left; do t_diag "left: $p $(cat /proc/$p/comm 2>/dev/null)"; done
	t_fail "no task left in SCHED_HPC" "pids: $left"
fi

off=
for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
	[ -r "$f" ] && [ "$(cat "$f")" != 1 ] && off="$off ${f%/online}"
done
if [ -z "$off" ]; then t_ok "every CPU online"; else t_fail "every CPU online" "offline:$off"; fi
[ -z "${GUEST_NCPUS:-}" ] || t_is "nproc unchanged" "$(nproc)" "$GUEST_NCPUS"

# /init keeps the result port open: on PREEMPT_RT (interrupts in threads) the
# port's interrupt thread that /init saw at the start still runs (a port
# closed and opened again would have a new one).
if uname -v | grep -q PREEMPT_RT && [ -c /dev/ttyS1 ]; then
	start=$(cat /tmp/hpc-tap-irq 2>/dev/null)
	gone=
	while read -r d n; do
		[ "$(cat "$d/comm" 2>/dev/null)" = "$n" ] || gone="$gone $d"
	done < /tmp/hpc-tap-irq
	if [ -n "$start" ] && [ -z "$gone" ]; then
		t_ok "result port's interrupt thread never created again ($start)"
	else
		t_fail "result port's interrupt thread never created again" "at the start '$start', gone:$gone"
	fi
fi

t_is "shell's /proc/self/sched_hpc" "$(cat /proc/self/sched_hpc)" "policy: other"

pat='WARNING:|BUG:|Oops|general protection|possible recursive locking|circular locking|inconsistent lock state|bad unlock balance|suspicious RCU usage|scheduling while atomic|sleeping function called from invalid context|blocked for more than|soft lockup|hard LOCKUP|rcu_.* self-detected stall|detected stalls on CPUs|Call Trace'
hits=$(dmesg | grep -E "$pat")
# Known benign lines: the host's list (tests/guest/check-log.allow).
if [ -n "$hits" ] && [ -r /etc/check-log.allow ]; then
	grep -vE '^[[:space:]]*(#|$)' /etc/check-log.allow > /tmp/.allow
	[ -s /tmp/.allow ] && hits=$(echo "$hits" | grep -vEf /tmp/.allow)
fi
if [ -z "$hits" ]; then t_ok "kernel log clean after the suite"; else
	echo "$hits" | head -20 | sed 's/^/# dmesg: /'
	t_fail "kernel log clean after the suite" "$(echo "$hits" | head -1 | cut -c1-120)"
fi
t_done
