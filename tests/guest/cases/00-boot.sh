#!/bin/sh
# Example guest test case (harness smoke test). Conventions:
#  - print "ok - what" / "not ok - what" for each check (the harness numbers
#    them and prefixes the case name); any other output is logged as comment
#  - exit status 0 = the case passed (non-zero adds a "not ok" for the case)
#  - optional directive: guest-timeout: 60
# guest-timeout: 60

check() {  # check DESCRIPTION COMMAND...
	d=$1; shift
	if "$@" >/dev/null 2>&1; then echo "ok - $d"; else echo "not ok - $d"; fail=1; fi
}
fail=0

echo "kernel $(uname -r), $(nproc) CPUs, cmdline: $(cat /proc/cmdline)"
check "proc mounted" test -r /proc/self/stat
check "sysfs mounted" test -d /sys/devices/system/cpu
check "tmpfs /tmp writable" sh -c 'echo x > /tmp/.probe && rm /tmp/.probe'
check "online CPUs match nproc" test "$(grep -c '^processor' /proc/cpuinfo)" = "$(nproc)"
check "tracefs mounted" test -e /sys/kernel/tracing/trace
check "cgroup2 mounted" test -e /sys/fs/cgroup/cgroup.controllers
check "sched_ext present" test -e /sys/kernel/sched_ext/state
# a task can be moved to, and runs on, every CPU
n=$(nproc); c=0; ok=1
while [ "$c" -lt "$n" ]; do
	taskset -c "$c" sh -c 'true' || ok=0
	c=$((c + 1))
done
check "taskset on each of $n CPUs" test "$ok" = 1
exit "$fail"
