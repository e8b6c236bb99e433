#!/bin/sh
# Harness self-test: runs after the timed-out case, with no stray processes.
n=$(ps | grep -c '[s]leep 1000')
[ "$n" = 0 ] && echo "ok - timed-out case was killed with its children" ||
	echo "not ok - $n sleep processes survived the timeout"
