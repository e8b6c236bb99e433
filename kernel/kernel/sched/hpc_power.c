// SPDX-License-Identifier: GPL-2.0
/*
 * SCHED_HPC mechanism backend "power-smt": IBM POWER hardware SMT thread
 * priorities.
 *
 * Each hardware thread of a POWER5 or later core has a priority, 1 (very
 * low) to 7 (very high), 4 being normal, that sets its share of the core's
 * decode cycles. The kernel may set 1 to 6; the class's priority numbers
 * are these hardware priorities. From POWER7 on the priority lives in the
 * Program Priority Register (PPR, SPR 896, value << 50): interrupt entry
 * saves it in regs->ppr, the interrupt return to user space restores it,
 * and a system call returns with medium-low (3). POWER5 and POWER6 have no
 * PPR: the priority belongs to the hardware thread and is set with or-nops.
 *
 * The class's priority for a task is in thread.hpc_ppr (0: none). It takes
 * effect on every return to user space:
 *  - interrupt_exit_user_prepare_main() calls hpc_power_exit_user(), which
 *    puts it into regs->ppr (restored by the return path), or on POWER5/6
 *    chooses the or-nop that the exit assembly issues just before the
 *    return (HMT_USER_EXIT, interrupt_64.S: an interrupt entry in between
 *    would set medium again, and the fast return runs no C);
 *  - the system call exit (and the return from fork) loads it instead of
 *    HMT_MEDIUM_LOW (HMT_SYSCALL_EXIT, interrupt_64.S).
 * A task that left SCHED_HPC goes back to medium-low on its next return and
 * is then left alone, as every task outside the class always is. A change
 * made while the task runs in user space takes effect on its next interrupt
 * (at the latest the next tick) or system call.
 */
#include <linux/mmu_context.h>

#include <asm/cputable.h>
#include <asm/ptrace.h>
#include <asm/sched_hpc.h>

#include "sched.h"
#include "hpc_backend.h"

#define HPC_POWER_PRIO_MIN	1
#define HPC_POWER_PRIO_MAX	6
#define HPC_POWER_PPR_SHIFT	50

/* POWER5/6: this CPU's hardware thread runs at a class priority. */
static DEFINE_PER_CPU(bool, hpc_hmt_set);

/* sched_hpc_power=ornop: see sched_hpc_power_early_init(). */
static bool hpc_power_ornop __initdata;

static int __init hpc_power_setup(char *str)
{
	if (!str)
		return -EINVAL;
	if (!strcmp(str, "ornop"))
		hpc_power_ornop = true;
	else if (!strcmp(str, "ppr"))
		hpc_power_ornop = false;
	else
		return -EINVAL;
	return 0;
}
early_param("sched_hpc_power", hpc_power_setup);

/*
 * Called once the boot CPU's features are known and before the feature
 * fixups. With sched_hpc_power=ornop a CPU that has a PPR is treated as a
 * POWER5/6: the kernel neither saves nor restores the PPR and the class
 * sets priorities with or-nops. For testing the or-nop path on POWER7 and
 * later, and under QEMU, whose or-nops set the PPR that user space reads.
 */
void __init sched_hpc_power_early_init(void)
{
	if (!hpc_power_ornop || !(cur_cpu_spec->cpu_features & CPU_FTR_HAS_PPR))
		return;
	pr_info("sched_hpc: thread priorities by or-nop, PPR not used (sched_hpc_power=ornop)\n");
	cur_cpu_spec->cpu_features &= ~CPU_FTR_HAS_PPR;
}

/* Return to user space with interrupts disabled (see sched_hpc_exit_user). */
notrace void hpc_power_exit_user(struct pt_regs *regs)
{
	unsigned long ppr = READ_ONCE(current->thread.hpc_ppr);
	unsigned int hmt = 0;

	/* Left the class: medium-low once, then never touched again. */
	if (ppr && READ_ONCE(current->policy) != SCHED_HPC) {
		cmpxchg(&current->thread.hpc_ppr, ppr, 0);
		ppr = cpu_has_feature(CPU_FTR_HAS_PPR) ? DEFAULT_PPR : 0;
	}

	if (cpu_has_feature(CPU_FTR_HAS_PPR)) {
		if (ppr)
			regs->ppr = ppr;
		return;
	}
	/* The or-nop is issued by the exit assembly (HMT_USER_EXIT). */
	if (ppr) {
		hmt = ppr >> HPC_POWER_PPR_SHIFT;
		__this_cpu_write(hpc_hmt_set, true);
	} else if (__this_cpu_read(hpc_hmt_set)) {
		/* The thread priority outlives the task: back to normal. */
		hmt = HPC_PRIO_NORMAL;
		__this_cpu_write(hpc_hmt_set, false);
	}
	current->thread.hpc_hmt = hmt;
}

static void hpc_power_apply(struct rq *rq, struct task_struct *p, u32 prio)
{
	/* Kernel threads never return to user space. */
	if (p->flags & PF_KTHREAD)
		return;
	/* HPC_PRIO_OFF (the mechanism is off): an ordinary thread's. */
	prio = prio ? clamp(prio, HPC_POWER_PRIO_MIN, HPC_POWER_PRIO_MAX) :
		      HPC_PRIO_NORMAL;
	WRITE_ONCE(p->thread.hpc_ppr,
		   (unsigned long)prio << HPC_POWER_PPR_SHIFT);
}

/*
 * A task that sleeps or migrates keeps its priority: it applies only in
 * user space, and the next apply() comes before the task gets there.
 */
static void hpc_power_reset(struct rq *rq, struct task_struct *p)
{
}

static void hpc_power_init_rq(struct rq *rq, int cpu)
{
}

static void hpc_power_account(struct rq *rq, u64 delta)
{
}

static void hpc_power_rq_online(struct rq *rq)
{
}

static void hpc_power_rq_offline(struct rq *rq)
{
}

/* The hardware pairs the threads: nothing to redo. */
static void hpc_power_sibling_changed(int cpu)
{
}

const struct hpc_backend hpc_power_backend = {
	.name		= "power-smt",
	.range		= { .min = HPC_POWER_PRIO_MIN, .max = HPC_POWER_PRIO_MAX },
	.init_rq	= hpc_power_init_rq,
	.apply		= hpc_power_apply,
	.reset		= hpc_power_reset,
	.account	= hpc_power_account,
	.rq_online	= hpc_power_rq_online,
	.rq_offline	= hpc_power_rq_offline,
	.sibling_changed = hpc_power_sibling_changed,
};
