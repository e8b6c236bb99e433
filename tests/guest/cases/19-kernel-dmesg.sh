#!/bin/sh
# Kernel engineer's smoke check: after the other cases ran, the kernel log
# must hold no WARNING, BUG, lockdep report or scheduling-while-atomic splat.
# (Runs late: the cases run in name order; rerun at the end if needed.)
case=19-kernel-dmesg
bad=$(dmesg | grep -E 'WARNING:|BUG:|cut here|DEBUG_LOCKS_WARN_ON|possible recursive locking|circular locking|inconsistent lock state|lock held when returning|suspicious RCU usage|scheduling while atomic|sleeping function called from invalid context|Call Trace' | head -20)
if [ -z "$bad" ]; then
	echo "ok 1 - $case: no WARNING/BUG/lockdep in dmesg"
	exit 0
fi
echo "$bad" | sed 's/^/# /'
echo "not ok 1 - $case: no WARNING/BUG/lockdep in dmesg # see above"
exit 1
