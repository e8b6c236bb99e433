#!/bin/sh
# After scx_hpc ran and unloaded, the kernel's own example scheduler
# (scx_simple) loads and unloads: scx_hpc left nothing behind.
# guest-timeout: 60
[ -r /usr/local/share/scx_hpc/lib.sh ] || { echo "not ok - scx_simple after scx_hpc: no scx image (make scx-guest-initrd)"; exit 1; }
. /usr/local/share/scx_hpc/lib.sh
need_scx "scx_simple after scx_hpc"
[ -x /usr/local/bin/scx_simple ] || { ok "scx_simple after # SKIP no scx_simple"; exit 0; }

start_hpc || { nok "scx_hpc enabled"; exit 1; }
/usr/local/bin/scx_metbench -i 5 -H 5 -L 2 > /dev/null 2>&1
stop_hpc
check "scx_hpc unloaded" wait_state disabled
/usr/local/bin/scx_simple > /tmp/simple.log 2>&1 &
sp=$!
if wait_state enabled && [ "$(ops)" = simple ]; then ok "scx_simple enabled after scx_hpc"; else nok "scx_simple enabled after scx_hpc (state $(state) ops $(ops))"; fi
/usr/local/bin/scx_stress -t 1 -n 4 > /dev/null 2>&1
check "SCHED_EXT tasks run under scx_simple" test $? = 0
kill -INT $sp; wait $sp
check "scx_simple unloaded" wait_state disabled
sed 's/^/# simple: /' /tmp/simple.log | tail -3
# and scx_hpc loads again after scx_simple
if start_hpc; then ok "scx_hpc loads again after scx_simple"; else nok "scx_hpc loads again after scx_simple"; fi
stop_hpc
check "disabled at the end" wait_state disabled
exit $fail
