/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_SCHED_HPC_H
#define _LINUX_SCHED_HPC_H

/*
 * Interfaces of the SCHED_HPC scheduling class outside kernel/sched/.
 * See Documentation/scheduler/sched-hpc.rst.
 */

#include <linux/sched.h>

struct seq_file;
struct pid_namespace;
struct pid;

#ifdef CONFIG_SCHED_HPC
/* /proc/<pid>/sched_hpc */
int proc_pid_sched_hpc(struct seq_file *m, struct pid_namespace *ns,
		       struct pid *pid, struct task_struct *p);

/* Has @p the SCHED_HPC policy? A PI boost does not change it. */
static inline bool hpc_task_policy(struct task_struct *p)
{
	return p->policy == SCHED_HPC;
}
#else
static inline bool hpc_task_policy(struct task_struct *p)
{
	return false;
}
#endif

#endif /* _LINUX_SCHED_HPC_H */
