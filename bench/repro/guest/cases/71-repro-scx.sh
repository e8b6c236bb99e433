#!/bin/sh
# make reproduce: MetBench and MetBenchVar under scx_hpc (sched_ext, this
# boot), baseline (SCHED_OTHER), Uniform and Adaptive; static priorities are
# reported n/a (scx_hpc has no per-task priority). See
# /usr/local/share/hpcsched-repro/ways.sh for what it prints.
# guest-timeout: 1500
BACKEND=scx
. /usr/local/share/hpcsched-repro/ways.sh
run_backend
