/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SCHED_HPC policy core: iteration accounting, the Uniform, Adaptive and
 * Phase heuristics and parameter validation.
 *
 * Integer-only and allocation-free. The same source is built into the kernel
 * class, the scx_hpc BPF scheduler and the user-space controller, simulator
 * and tests; nothing here knows which of them is calling.
 *
 * Model: a task alternates a compute phase (runnable) and a wait phase
 * (sleeping). An iteration closes when the task wakes up after a wait of at
 * least min_wait_us; shorter waits (page faults, short I/O, lock hand-offs)
 * are counted as compute. When an iteration closes, the heuristic picks the
 * hardware priority the task runs its next compute phase with. A task on the
 * critical path never waits, so its iteration never closes: it is judged,
 * without closing anything, each time its SMT sibling closes an iteration it
 * computed through (hpc_task_sibling_judge(), from hpc_on_tick()). A pair
 * of tasks neither of which waits is equal: a lead one of them took is
 * given back (hpc_task_sibling_judge() again).
 *
 * Documentation/scheduler/sched-hpc.rst ("Iterations and priorities")
 * describes the rule; the hpcsched project's sched-hpc-policy.rst derives it
 * from the paper.
 */
#ifndef _KERNEL_SCHED_HPC_POLICY_H
#define _KERNEL_SCHED_HPC_POLICY_H

#include "hpc_types.h"

/* Utilisation is kept in units of 0.01 %: 10000 is 100 %. */
#define HPC_UTIL_SCALE		10000U

/* Hardware thread priorities (POWER5 numbering, emulated elsewhere). */
#define HPC_PRIO_OFF		0
#define HPC_PRIO_NORMAL		4
#define HPC_PRIO_ST		7
#define HPC_PRIO_LIMIT		7

enum hpc_heuristic {
	HPC_HEUR_UNIFORM	= 0,
	HPC_HEUR_ADAPTIVE	= 1,
	HPC_HEUR_PHASE		= 2,
	HPC_HEUR_NR,
};

/* Run-time tunables; every front end validates them with hpc_params_check(). */
struct hpc_params {
	u32 low_util;		/* percent: below it a task is "low" */
	u32 high_util;		/* percent: above it a task is "high" */
	u32 min_prio;		/* lowest priority the heuristic may give */
	u32 max_prio;		/* highest priority the heuristic may give */
	u32 global_weight;	/* percent: Adaptive's G */
	u32 last_weight;	/* percent: Adaptive's L, G + L = 100 */
	u32 heuristic;		/* enum hpc_heuristic */
	u32 min_wait_us;	/* shorter waits do not close an iteration */
};

#define HPC_DEF_LOW_UTIL	65
#define HPC_DEF_HIGH_UTIL	85
#define HPC_DEF_MIN_PRIO	4
#define HPC_DEF_MAX_PRIO	6
#define HPC_DEF_GLOBAL_WEIGHT	10
#define HPC_DEF_LAST_WEIGHT	90
#define HPC_DEF_HEURISTIC	HPC_HEUR_UNIFORM
#define HPC_DEF_MIN_WAIT_US	100
#define HPC_MAX_MIN_WAIT_US	1000000

/*
 * The schedulers' own knobs (not policy), with the same names, defaults and
 * ranges in the kernel class, scx_hpc and the tools: the round-robin time
 * slice and the bandwidth period of the SMT emulation, in microseconds.
 */
#define HPC_DEF_TIMESLICE_US	100000
#define HPC_MIN_TIMESLICE_US	1000
#define HPC_MAX_TIMESLICE_US	1000000
#define HPC_DEF_EMUL_PERIOD_US	10000
#define HPC_MIN_EMUL_PERIOD_US	1000
#define HPC_MAX_EMUL_PERIOD_US	1000000

/* The priorities a mechanism backend can apply. */
struct hpc_prio_range {
	u32 min;
	u32 max;
};

/* Why hpc_params_check() rejected a parameter set. */
enum hpc_param_err {
	HPC_PARAM_OK = 0,
	HPC_PARAM_ERR_UTIL_RANGE,
	HPC_PARAM_ERR_UTIL_ORDER,
	HPC_PARAM_ERR_PRIO_RANGE,
	HPC_PARAM_ERR_PRIO_ORDER,
	HPC_PARAM_ERR_WEIGHT_RANGE,
	HPC_PARAM_ERR_WEIGHT_SUM,
	HPC_PARAM_ERR_HEURISTIC,
	HPC_PARAM_ERR_MIN_WAIT,
	HPC_PARAM_ERR_NR,
};

/* The tunables by name, in the order of hpc_param_names[]. */
enum hpc_param_id {
	HPC_P_LOW_UTIL = 0,
	HPC_P_HIGH_UTIL,
	HPC_P_MIN_PRIO,
	HPC_P_MAX_PRIO,
	HPC_P_GLOBAL_WEIGHT,
	HPC_P_LAST_WEIGHT,
	HPC_P_HEURISTIC,
	HPC_P_MIN_WAIT_US,
	HPC_P_NR,
};

extern const char * const hpc_param_names[HPC_P_NR];
extern const char * const hpc_heuristic_names[HPC_HEUR_NR];

HPC_API void hpc_params_default(struct hpc_params *p);
HPC_API int hpc_params_check(const struct hpc_params *p,
			     const struct hpc_prio_range *allowed);
HPC_API u32 hpc_param_get(const struct hpc_params *p, int id);
HPC_API void hpc_param_put(struct hpc_params *p, int id, u32 val);
#ifndef __bpf__
/* Messages and names: for the front ends that read or print them. */
HPC_API const char *hpc_param_err_str(int err);
HPC_API int hpc_param_lookup(const char *name);
HPC_API int hpc_heuristic_lookup(const char *name);
#endif

/*
 * Phase's history (see hpc_heur_util()) weighs at most this many iterations:
 * beyond it, its mean moves by 1/HPC_PHASE_MAX_NR of each new one.
 */
#define HPC_PHASE_MAX_NR	1000

/*
 * Decisions a lid holds (see hpc_task_decide()) before the task may try the
 * lead above it again: one iteration of overshoot in HPC_LID_DECISIONS, at
 * most, where the balance point lies between two priorities.
 */
#define HPC_LID_DECISIONS	16

/*
 * A task that computes this long without a wait, beside a sibling that does
 * the same, is one of a busy pair (see hpc_task_sibling_judge()).
 */
#define HPC_BUSY_PAIR_NS	1000000000ULL

/*
 * A wait of @wait_ns ends an iteration: at least min_wait_us. Shorter ones
 * (page faults, short I/O, lock hand-offs, an MPI call that returns at
 * once) count as compute. The one iteration boundary of every front end,
 * the MPI monitor's too.
 */
static inline bool hpc_wait_closes(u64 wait_ns, const struct hpc_params *p)
{
	return wait_ns >= (u64)p->min_wait_us * 1000;
}

/* Task states for the accounting. */
#define HPC_TASK_RUNNABLE	0
#define HPC_TASK_SLEEPING	1

/*
 * The scheduler's task state of a task that blocks for a lock that would
 * spin without PREEMPT_RT (Linux's TASK_RTLOCK_WAIT).
 */
#define HPC_STATE_RTLOCK_WAIT	0x00001000

/*
 * Whether a task that blocks in the scheduler's task state @state begins a
 * wait phase. A block for such a lock is part of the compute phase, as a
 * preemption is: on PREEMPT_RT every contended spinlock_t blocks, and its
 * waits would cut the compute phases into iterations of their own.
 */
static inline bool hpc_block_is_wait(unsigned int state)
{
	return !(state & HPC_STATE_RTLOCK_WAIT);
}

/* How the heuristic classes a utilisation. */
enum hpc_class {
	HPC_CLASS_NONE = -1,	/* no information (no sibling) */
	HPC_CLASS_LOW = 0,
	HPC_CLASS_MEDIUM,
	HPC_CLASS_HIGH,
};

/*
 * Flags on a class passed to hpc_decide(). HPC_PEER_RAISED: set in what
 * hpc_peer_class() returns when the sibling runs above min_prio, or ran the
 * judged iteration above it (a pair keeps at most one raised context); not
 * on a deep wait, which hands the lead over. HPC_PEER_UNSURE: on the
 * sibling's low iteration when it is neither deep nor confirmed by the one
 * before (it may be noise). HPC_CLASS_DEEP: on a low iteration below half
 * of low_util, the task's own or the sibling's (the loads changed). The
 * class is the rest (hpc_class_of()).
 */
#define HPC_PEER_RAISED		0x100
#define HPC_CLASS_DEEP		0x200
#define HPC_PEER_UNSURE		0x400

static inline int hpc_class_of(int c)
{
	return c < 0 ? c : (c & ~(HPC_PEER_RAISED | HPC_CLASS_DEEP |
				  HPC_PEER_UNSURE));
}

/*
 * Per-task iteration state. Timestamps are in ns from any monotonic clock.
 * The fields up to @state are what a sibling context reads to judge this
 * task (see hpc_peer_class()): the whole structure can be copied as a
 * snapshot.
 */
struct hpc_task {
	u64 iter_start;		/* start of the current iteration */
	u64 seg_start;		/* start of the current run or sleep segment */
	u64 cur_run;		/* compute time folded so far in this iteration */
	u64 sum_run;		/* sum of t_R over closed iterations */
	u64 sum_total;		/* sum of t_i over closed iterations */
	u64 last_run;		/* t_R of the last closed iteration */
	u64 last_wait;		/* t_W of the last closed iteration */
	u64 nr_iter;		/* closed iterations */
	u64 judged_at;		/* sibling's iter_start it was last judged on */
	u64 nr_judged;		/* judgements by hpc_task_sibling_judge() */
	u32 last_util;		/* U of the last closed iteration */
	u32 prev_util;		/* U of the one before (see hpc_peer_class()) */
	u32 global_util;	/* U over all closed iterations */
	u32 heur_util;		/* what the heuristic decided on */
	u32 prio;		/* priority for the next compute phase */
	u32 prev_prio;		/* priority before the last decision */
	u16 ph_util;		/* mean U of the iterations of this phase */
	u16 ph_nr;		/* their number, at most HPC_PHASE_MAX_NR */
	u8 state;		/* HPC_TASK_RUNNABLE or HPC_TASK_SLEEPING */
	u8 lid;			/* highest priority to rise to (0: none) */
	u8 lid_left;		/* decisions until the lid is lifted */
};

/* Is @t asleep in a wait, between two compute phases? */
static inline bool hpc_task_waits(const struct hpc_task *t)
{
	return t->state == HPC_TASK_SLEEPING;
}

HPC_API void hpc_task_init(struct hpc_task *t, u64 now, const struct hpc_params *p);
HPC_API void hpc_task_sleep(struct hpc_task *t, u64 now);
HPC_API int hpc_task_wakeup(struct hpc_task *t, u64 now, const struct hpc_params *p,
			    int peer_class);
HPC_API int hpc_task_sibling_judge(struct hpc_task *t, u64 now,
				   const struct hpc_params *p,
				   const struct hpc_task *peer);
HPC_API void hpc_task_tick(struct hpc_task *t, u64 now);
HPC_API u32 hpc_task_clamp_prio(struct hpc_task *t, const struct hpc_params *p);
HPC_API u32 hpc_task_next_prio(struct hpc_task *t, const struct hpc_params *p,
			       u32 fixed);

/*
 * The events every front end reports, each a decision of the core: the
 * kernel class, scx_hpc and hpcd only hook them and apply t->prio. @peer is
 * a snapshot of the task on the sibling context (NULL: none); @fixed the
 * task's fixed priority (0: the core decides). Both return 1 if they
 * decided.
 */
HPC_API int hpc_on_wakeup(struct hpc_task *t, u64 now, const struct hpc_params *p,
			  const struct hpc_task *peer, u32 fixed);
HPC_API int hpc_on_tick(struct hpc_task *t, u64 now, const struct hpc_params *p,
			const struct hpc_task *peer, u32 fixed);

HPC_API u32 hpc_util(u64 run, u64 total);
HPC_API int hpc_classify(u32 util, const struct hpc_params *p);
HPC_API u32 hpc_decide(u32 prio, int own_class, int own_now, int peer,
		       const struct hpc_params *p);
HPC_API int hpc_peer_class(const struct hpc_task *peer, u64 now, u64 since,
			   const struct hpc_params *p);

#endif /* _KERNEL_SCHED_HPC_POLICY_H */
