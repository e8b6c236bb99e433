#!/bin/sh
# make reproduce: MetBench and MetBenchVar under the SCHED_HPC class (this
# boot), baseline (SCHED_OTHER), Uniform and Adaptive; static priorities are
# reported n/a (the class has no per-task priority). See
# /usr/local/share/hpcsched-repro/ways.sh for what it prints.
# guest-timeout: 1500
BACKEND=kernel
. /usr/local/share/hpcsched-repro/ways.sh
run_backend
