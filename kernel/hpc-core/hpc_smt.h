/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SMT throughput model of the SCHED_HPC emulation backend.
 *
 * The speed of each context of a 2-way SMT core, relative to running alone
 * (single-thread mode), as a function of its own hardware priority, its
 * sibling's priority and whether the sibling is busy. The priorities act
 * through POWER5's decode split; a piecewise-linear map turns the decode
 * share into speed; a waiting sibling releases the core part of the time.
 * Shared by the kernel class, scx_hpc and the user-space tools.
 *
 * The hpcsched project's sched-hpc-policy.rst derives the calibration.
 */
#ifndef _KERNEL_SCHED_HPC_SMT_H
#define _KERNEL_SCHED_HPC_SMT_H

#include "hpc_types.h"

/* Speed in permille of single-thread speed. */
#define HPC_SMT_SCALE		1000U
/* Decode share in units of 1/1024 of the decode cycles. */
#define HPC_SHARE_SCALE		1024U
/* Largest priority difference of the decode table (R = 64). */
#define HPC_SMT_MAX_DIFF	5
/* The priority a waiting context competes at, whatever its task's. */
#define HPC_SMT_PRIO_NORMAL	4
/*
 * Permille of a wait during which the waiting context releases the core
 * (its sibling runs in single-thread mode); it competes at
 * HPC_SMT_PRIO_NORMAL for the rest. Fitted with the speed map.
 */
#define HPC_SMT_WAIT_RELEASED	708U

/*
 * The priorities an emulation by CPU bandwidth can apply (the kernel's
 * x86-smt-emul backend, scx_hpc, hpcd): 1 (background) .. 6. 0 (context
 * off) and 7 (single-thread mode) change the core, not a budget.
 */
#define HPC_SMT_EMUL_PRIO_MIN	1
#define HPC_SMT_EMUL_PRIO_MAX	6

/*
 * The thread of a hardware core that shares an emulated 2-way core with
 * its thread @k, the core's @nr online threads numbered 0 .. @nr - 1 in
 * the order of its sibling mask: two by two, 0-1, 2-3, 4-5, 6-7 (one pair
 * on x86, two or four on POWER8-10's SMT4 and SMT8); the last of an odd
 * number pairs with none, -1.
 */
static inline int hpc_thread_sibling(int k, int nr)
{
	return (k ^ 1) < nr ? k ^ 1 : -1;
}

/*
 * The context that shares a core with context @ctx: its hardware sibling
 * @hw (the thread hpc_thread_sibling() gives in a core of several online
 * threads; -1 if it has none) if there is one, else the other context of
 * the emulated 2-way core 2k, 2k + 1 if @other_free: that one exists and
 * neither it nor @ctx has another thread in its core; else none, -1.
 * The one pairing rule of the kernel class, scx_hpc and hpcd.
 */
static inline int hpc_ctx_sibling(int ctx, int hw, bool other_free)
{
	if (hw >= 0)
		return hw;
	return other_free ? ctx ^ 1 : -1;
}

HPC_API u32 hpc_smt_decode_share(u32 own, u32 sib);
HPC_API u32 hpc_smt_share_speed(u32 share);
HPC_API u32 hpc_smt_speed(u32 own, u32 sib, bool sib_busy);

/*
 * What the sibling context of an emulated core holds, as its emulation sees
 * it (macros, not an enum: scx_hpc includes this file after the patched
 * kernel's vmlinux.h, which would hold the enum too).
 */
#define HPC_SMT_SIB_NONE	0U	/* no task: single-thread mode for the other */
#define HPC_SMT_SIB_WAITS	1U	/* a task in a wait (asleep between iterations) */
#define HPC_SMT_SIB_BUSY	2U	/* a task that computes */

/*
 * The emulation by CPU bandwidth (the kernel's x86-smt-emul backend,
 * scx_hpc, hpcd): the share of each period, in permille, that a context
 * whose task computes at priority @own may run beside a sibling context at
 * @sib that holds @what: the model's speed beside a busy or a waiting
 * sibling, the whole period beside none (single-thread mode). A waiting
 * sibling's priority does not count (hpc_smt_speed()): an idle CPU whose
 * task waits publishes none.
 */
static inline u32 hpc_smt_emul_share_of(u32 own, u32 sib, u32 what)
{
	if (what == HPC_SMT_SIB_NONE)
		return HPC_SMT_SCALE;
	if (what == HPC_SMT_SIB_WAITS)
		return hpc_smt_speed(own, HPC_SMT_PRIO_NORMAL, false);
	return hpc_smt_speed(own, sib, true);
}

/*
 * What the sibling context holds, for an emulation that sees whether the
 * sibling CPU has HPC work (@busy: a task running, queued or held back) and
 * the snapshot of the task that ran there last (the kernel's backend,
 * scx_hpc): without work, a task of its own asleep in a wait (@task_waits,
 * hpc_task_waits() of that snapshot: it waits for a message or at a
 * barrier) makes it a waiting context; else it holds no task (none ran
 * there, it left the CPU or the class, exited, or blocks on a lock).
 */
static inline u32 hpc_smt_sib_holds(bool busy, bool task_waits)
{
	if (busy)
		return HPC_SMT_SIB_BUSY;
	return task_waits ? HPC_SMT_SIB_WAITS : HPC_SMT_SIB_NONE;
}

/* The budget of a period of @period_ns at @share permille. */
static inline u64 hpc_smt_budget(u64 period_ns, u32 share)
{
	return hpc_div64(period_ns * share, HPC_SMT_SCALE);
}

/*
 * What a new period starts with, used: the run time @used charged to the
 * period that ends beyond its @budget (a throttle that came late), at most
 * one period, so that the share stays exact on average.
 */
static inline u64 hpc_smt_carry(u64 used, u64 budget, u64 period_ns)
{
	u64 over = used > budget ? used - budget : 0;

	return over < period_ns ? over : period_ns;
}

/*
 * What a new period adds to its budget, owed by the period that ends: the
 * part of that period's @budget its CPU could not run because the period
 * began @late_ns late while the CPU was held back (its timer fired late: a
 * virtual CPU the host did not run, an idle CPU woken late), or because the
 * budget, with what was owed before, exceeds the period. Only what the
 * period left unused (@used) is owed, so a CPU whose tasks waited instead
 * is owed nothing beyond it; at most one period.
 */
static inline u64 hpc_smt_owed(u64 used, u64 budget, u64 late_ns, u64 period_ns)
{
	u64 room = period_ns > late_ns ? period_ns - late_ns : 0;
	u64 lost = budget > room ? budget - room : 0;
	u64 left = budget > used ? budget - used : 0;
	u64 owed = left < lost ? left : lost;

	return owed < period_ns ? owed : period_ns;
}

/*
 * Real 2-way SMT core (x86 Hyper-Threading), which has no thread
 * priorities: the speed of each hardware thread while both are busy, in
 * permille of single-thread speed. Marr et al., "Hyper-Threading
 * Technology Architecture and Microarchitecture", Intel Technology
 * Journal 6(1), 2002: up to 30 % more throughput from the two threads of
 * a core than from one, i.e. 1300 / 2 per thread.
 */
#define HPC_SMT_REAL_DUAL_SPEED	650U

HPC_API u32 hpc_smt_real_duty(u32 own, u32 sib);
HPC_API u32 hpc_smt_real_speed(u32 own, u32 sib);

#endif /* _KERNEL_SCHED_HPC_SMT_H */
