/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mechanism backends of the SCHED_HPC class: what makes a hardware thread
 * priority take effect. The class decides the priorities (hpc_policy.c);
 * a backend applies them.
 */
#ifndef _KERNEL_SCHED_HPC_BACKEND_H
#define _KERNEL_SCHED_HPC_BACKEND_H

#include "hpc_policy.h"

struct rq;
struct task_struct;

/*
 * All callbacks but init_rq run with the runqueue lock of @rq held and must
 * not take any other runqueue's lock.
 */
struct hpc_backend {
	const char		*name;
	/* The priorities the backend can apply (min_prio/max_prio bounds). */
	struct hpc_prio_range	range;
	/* Boot (sched_init()): per-runqueue state. */
	void (*init_rq)(struct rq *rq, int cpu);
	/*
	 * @p starts a compute phase on @rq's CPU (wakeup or switch-in);
	 * HPC_PRIO_OFF while the mechanism is switched off (backend "none"):
	 * run as an ordinary thread, release whatever is held.
	 */
	void (*apply)(struct rq *rq, struct task_struct *p, u32 prio);
	/* @p left @rq's SCHED_HPC tasks (sleep, migration, exit, policy). */
	void (*reset)(struct rq *rq, struct task_struct *p);
	/* @rq's current SCHED_HPC task ran for @delta ns. */
	void (*account)(struct rq *rq, u64 delta);
	void (*rq_online)(struct rq *rq);
	void (*rq_offline)(struct rq *rq);
	/*
	 * @cpu's SMT sibling changed (CPU hotplug): redo what depends on it.
	 * No lock held; @cpu is online.
	 */
	void (*sibling_changed)(int cpu);
};

extern const struct hpc_backend hpc_emul_backend;
extern const struct hpc_backend hpc_power_backend;

/* Services of the class for its backends (kernel/sched/hpc.c). */
int hpc_cpu_sibling(int cpu);
bool hpc_cpu_task_waits(int cpu);
u64 hpc_emul_period_ns(void);
void hpc_throttle(struct rq *rq);
void hpc_unthrottle(struct rq *rq);

#endif /* _KERNEL_SCHED_HPC_BACKEND_H */
