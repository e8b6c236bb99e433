#!/bin/sh
# make reproduce: MetBench and MetBenchVar under the SCHED_HPC class (this
# boot): baseline (SCHED_OTHER), static priorities (each worker's
# sched_priority fixed through hpcctl prio), every worker at 4, Uniform,
# Adaptive and Phase, hpc.repro_repeat rounds. See
# /usr/local/share/hpcsched-repro/ways.sh for what it prints.
# The boot's own timeout (GUEST_TIMEOUT per round) bounds it:
# guest-timeout: 36000
BACKEND=kernel
. /usr/local/share/hpcsched-repro/ways.sh
run_backend
