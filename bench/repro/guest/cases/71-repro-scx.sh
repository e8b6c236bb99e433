#!/bin/sh
# make reproduce: MetBench and MetBenchVar under scx_hpc (sched_ext, this
# boot): baseline (SCHED_OTHER), static priorities (scx_hpc's fixed
# priorities, through hpcctl --backend scx prio), every worker at 4, Uniform,
# Adaptive and Phase, hpc.repro_repeat rounds. See
# /usr/local/share/hpcsched-repro/ways.sh for what it prints.
# The boot's own timeout (GUEST_TIMEOUT per round) bounds it:
# guest-timeout: 36000
BACKEND=scx
. /usr/local/share/hpcsched-repro/ways.sh
run_backend
