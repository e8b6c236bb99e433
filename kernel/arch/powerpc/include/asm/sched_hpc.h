/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SCHED_HPC class's POWER backend on the return to user space
 * (kernel/sched/hpc_power.c).
 */
#ifndef _ASM_POWERPC_SCHED_HPC_H
#define _ASM_POWERPC_SCHED_HPC_H

#ifdef CONFIG_SCHED_HPC_POWER
#include <linux/sched.h>
#include <asm/cputable.h>

struct pt_regs;

void hpc_power_exit_user(struct pt_regs *regs);
void sched_hpc_power_early_init(void);

/*
 * Give a SCHED_HPC task its hardware thread priority for user space. On
 * POWER5/6 (no PPR) every return asks: the thread's priority may be the
 * previous task's.
 */
static __always_inline void sched_hpc_exit_user(struct pt_regs *regs)
{
	if (unlikely(READ_ONCE(current->thread.hpc_ppr)) ||
	    !cpu_has_feature(CPU_FTR_HAS_PPR))
		hpc_power_exit_user(regs);
}
#else
static inline void sched_hpc_exit_user(struct pt_regs *regs)
{
}

static inline void sched_hpc_power_early_init(void)
{
}
#endif

#endif /* _ASM_POWERPC_SCHED_HPC_H */
