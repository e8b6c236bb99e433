/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_hpc: types shared by the BPF scheduler (scx_hpc.bpf.c), its loader
 * (scx_hpc.cpp) and hpcctl's scx backend (tools/hpcd/scx_maps.cpp). The BPF
 * side includes this after vmlinux.h and the policy core; user space after
 * <linux/types.h> (through hpc_types.h).
 */
#ifndef SCX_HPC_H
#define SCX_HPC_H

#include "hpc_policy.h"

#define SCX_HPC_MAX_CPUS	64	/* per-CPU maps and loops are bounded by it */
#define SCX_HPC_MAX_TASKS	8192	/* entries of the task_info map (LRU) */

/*
 * The names user space finds a running instance by: sched_ext's root/ops,
 * its programs' prefix, and the maps hpcctl reads and writes (found through
 * the map id iteration by name and value size: nothing is pinned). The BPF
 * side declares the maps under these names.
 */
#define SCX_HPC_OPS_NAME	"hpc"
#define SCX_HPC_PROG_PREFIX	"hpc_"
#define SCX_HPC_MAP_PARAMS	"params_map"	/* array[1]: struct scx_hpc_params */
#define SCX_HPC_MAP_CPUS	"cpu_ctx"	/* array[SCX_HPC_MAX_CPUS]: struct scx_hpc_cpu */
#define SCX_HPC_MAP_TASKS	"task_info"	/* LRU hash pid -> struct scx_hpc_task_info */
#define SCX_HPC_MAP_FIXED	"fixed_prios"	/* hash pid -> u32 fixed priority */

/* The one element of the params map. User space validates it (the core's
 * hpc_params_check() plus the core's HPC_{MIN,MAX}_{TIMESLICE,EMUL_PERIOD}_US:
 * scx_hpc_user.cpp) before every write. */
struct scx_hpc_params {
	struct hpc_params core;
	u32 slice_us;		/* RR time slice */
	u32 period_us;		/* bandwidth period of the SMT emulation */
	u32 fifo;		/* 1: FIFO (run until sleep), 0: RR */
	u32 no_emul;		/* 1: backend none, no SMT emulation (no budget) */
	u32 gen;		/* bumped by every writer */
};

/* Per-CPU scheduler state (array map indexed by CPU; user space sums the
 * counters for its statistics). Written under the CPU's rq lock, except the
 * counters marked (atomic); read racily by the sibling, the timer and user
 * space, which only need a recent value. */
struct scx_hpc_cpu {
	u64 period_idx;		/* bandwidth period the budget belongs to */
	u64 consumed_ns;	/* HPC run time charged in this period */
	u64 run_start;		/* when the running HPC task was last charged */
	u64 throttle_start;	/* when the CPU got throttled */
	u64 budget_ns;		/* budget last computed for this period */
	u64 owed_ns;		/* added to it: owed by the period before */
	u64 late_ns;		/* the period began this late, throttled */
	u32 running;		/* an HPC task runs here */
	u32 throttled;		/* budget exhausted: no HPC dispatch this period */
	u32 cur_prio;		/* priority of the HPC task that runs/ran here */
	u32 cur_pid;
	u32 online;
	u32 shed_to;		/* core balance: requeue the running task on CPU shed_to - 1 */
	u32 shed_skip;		/* pid whose affinity refused the last request */
	u32 pad;
	u64 vtime;		/* the queue's virtual time (hpc_queue.h) */
	u64 cur_vtime;		/* the running task's virtual time at its start */
	u64 cur_start;		/* when the running task started */
	/* counters */
	u64 nr_running;		/* ops.running calls */
	u64 nr_iter;		/* iterations closed on wake-up */
	u64 nr_sib_judged;	/* judgements by hpc_task_sibling_judge */
	u64 nr_throttle;	/* times the CPU ran out of budget */
	u64 throttled_ns;	/* time spent throttled with HPC work pending */
	u64 nr_steal;		/* tasks pulled from another CPU's queue */
	u64 nr_direct;		/* ENQ_LAST tasks kept running */
	u64 nr_kick;		/* period-timer kicks */
	u64 run_ns;		/* HPC task run time on this CPU */
	u64 nr_move;		/* running tasks moved from here to an idle core */
	u64 nr_wake_preempt;	/* waking tasks that preempted the running one */
};

/* What user space shows of each task (LRU hash keyed by pid). Updated when
 * the task joins, when one of its iterations closes, when it is judged and
 * when it leaves. */
struct scx_hpc_task_info {
	u32 pid;
	u32 tgid;
	char comm[16];
	u32 prio;		/* priority for the next compute phase */
	u32 prev_prio;
	u32 last_util;		/* 0.01 % units */
	u32 global_util;
	u32 heur_util;
	u32 cpu;		/* CPU of the last update */
	u32 exited;		/* the task left sched_ext (exit or policy change) */
	u32 fixed_prio;		/* hpcctl prio: fixed priority, 0: dynamic */
	u64 nr_iter;
	u64 nr_judged;		/* judged by its sibling's closes (never waits) */
	u64 last_run_ns;
	u64 last_wait_ns;
	u64 throttled_ns;	/* runnable but held back by the emulation */
	u64 run_ns;		/* total run time under scx_hpc */
};

/*
 * Following a cgroup or a process tree (--take-cgroup, --take-pid): the BPF
 * side sees the tasks that enter a followed cgroup (tracepoint
 * cgroup_attach_task) and the tasks forked into a followed cgroup or process
 * tree (sched_process_fork) and reports those not yet SCHED_EXT through a
 * ring buffer; the loader switches them (a BPF program cannot change a task's
 * policy).
 */
#define SCX_HPC_MAX_TAKE_CGROUPS 16	/* followed cgroups (ids) */
#define SCX_HPC_MAX_TAKE_TGIDS	16384	/* processes of followed trees (LRU) */

enum scx_hpc_take_why {
	SCX_HPC_TAKE_CGROUP_MOVE = 1,	/* moved into a followed cgroup */
	SCX_HPC_TAKE_CGROUP_FORK = 2,	/* forked inside a followed cgroup */
	SCX_HPC_TAKE_TREE_FORK = 3,	/* forked by a process of a followed tree */
};

struct scx_hpc_take_event {
	u32 pid;
	u32 threadgroup;	/* the whole thread group moved */
	u32 why;		/* enum scx_hpc_take_why */
	u32 pad;
};

/* Exit information recorded by ops.exit (the UEI of the scx examples). */
struct scx_hpc_exit {
	s32 kind;
	s32 pad;
	s64 exit_code;
	char reason[128];
	char msg[1024];
};

#endif /* SCX_HPC_H */
