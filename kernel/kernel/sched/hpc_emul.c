// SPDX-License-Identifier: GPL-2.0
/*
 * SCHED_HPC mechanism backend "x86-smt-emul": SMT thread priorities
 * emulated with runtime budgets.
 *
 * x86 has no hardware thread priorities. This backend pairs the CPUs into
 * emulated SMT cores (the class's SMT pairs) and, while both CPUs of a pair
 * have SCHED_HPC work, lets each of them run its SCHED_HPC tasks only
 * hpc_smt_speed(own, sibling, busy) permille of every emul_period_us: the
 * share of single-thread speed a POWER5 context gets at that priority pair.
 * When a CPU has used its budget it is throttled: its SCHED_HPC tasks are
 * not picked, fair and idle tasks run, until the period timer refills the
 * budget. An expiry timer ends the budget on time; ticks and switches only
 * charge what ran. A sibling without SCHED_HPC work whose last task sleeps
 * there in a wait (a message, a barrier) is a waiting context: the model's
 * waiting sibling (HPC_SMT_SIB_WAITS, hpc_smt_sib_holds()), as on POWER5,
 * where the waiting rank's context still takes part of the core. A CPU
 * whose sibling holds no task (none ran there, it left or exited, or it
 * blocks on a lock) runs unthrottled, as a context in single-thread mode
 * would. A wait's end on another CPU (the waking task migrates) is seen at
 * the next period.
 *
 * Each CPU publishes its own state (busy, applied priority) in one word that
 * the sibling reads locklessly; a change kicks the sibling with an irq_work
 * so that it recomputes its budget under its own runqueue lock.
 */
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/mmu_context.h>
#include <linux/sched/clock.h>

#include "sched.h"
#include "hpc_backend.h"
#include "hpc_smt.h"

#define HPC_EMUL_BUSY		0x100U
#define HPC_EMUL_PRIO_MASK	0x0ffU

/* Per CPU: HPC_EMUL_BUSY | applied priority, or 0 when not busy. */
static DEFINE_PER_CPU(u32, hpc_emul_word);
static DEFINE_PER_CPU(struct irq_work, hpc_emul_kick);

static struct rq *hpc_emul_rq(struct hrtimer *timer)
{
	return container_of(timer, struct rq, hpc.emul_timer);
}

/* Arm the expiry timer for the rest of @rq's budget in this period. */
static void hpc_emul_arm_expiry(struct rq *rq)
{
	if (!rq->hpc.emul_limited || rq->hpc.throttled ||
	    rq->hpc.emul_used >= rq->hpc.emul_quota)
		return;
	hrtimer_start(&rq->hpc.emul_expiry,
		      ns_to_ktime(rq->hpc.emul_quota - rq->hpc.emul_used),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static void hpc_emul_start_timer(struct rq *rq)
{
	if (rq->hpc.emul_timer_active)
		return;
	/* A new stretch of limited periods starts with a full budget. */
	rq->hpc.emul_used = 0;
	rq->hpc.emul_owed = 0;
	rq->hpc.emul_late = 0;
	rq->hpc.emul_timer_active = 1;
	hrtimer_start(&rq->hpc.emul_timer, ns_to_ktime(hpc_emul_period_ns()),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

/* What the sibling context @sib holds, from its @word and its last task. */
static u32 hpc_emul_sib_holds(int sib, u32 word)
{
	bool busy = word & HPC_EMUL_BUSY;

	return hpc_smt_sib_holds(busy, !busy && hpc_cpu_task_waits(sib));
}

/*
 * Recompute @rq's budget from its own state and its sibling's published
 * word; throttle or unthrottle accordingly.
 */
static void hpc_emul_recompute(struct rq *rq)
{
	int sib = hpc_cpu_sibling(cpu_of(rq));
	u32 own = READ_ONCE(per_cpu(hpc_emul_word, cpu_of(rq)));
	u32 other = sib >= 0 ? READ_ONCE(per_cpu(hpc_emul_word, sib)) : 0;
	u32 share = HPC_SMT_SCALE;

	if (rq->hpc.online && (own & HPC_EMUL_BUSY) && sib >= 0)
		share = hpc_smt_emul_share_of(own & HPC_EMUL_PRIO_MASK,
					      other & HPC_EMUL_PRIO_MASK,
					      hpc_emul_sib_holds(sib, other));

	if (share >= HPC_SMT_SCALE) {
		rq->hpc.emul_limited = 0;
		if (rq->hpc.throttled)
			hpc_unthrottle(rq);
		return;
	}

	rq->hpc.emul_limited = 1;
	rq->hpc.emul_quota = hpc_smt_budget(hpc_emul_period_ns(), share) +
			     rq->hpc.emul_owed;
	hpc_emul_start_timer(rq);
	if (rq->hpc.emul_used >= rq->hpc.emul_quota) {
		if (!rq->hpc.throttled)
			hpc_throttle(rq);
	} else if (rq->hpc.throttled) {
		hpc_unthrottle(rq);
	}
	hpc_emul_arm_expiry(rq);
}

/* Publish @rq's state; if it changed, make the sibling recompute too. */
static void hpc_emul_publish(struct rq *rq, u32 word)
{
	int cpu = cpu_of(rq), sib = hpc_cpu_sibling(cpu);
	u32 old = READ_ONCE(per_cpu(hpc_emul_word, cpu));

	if (!rq->hpc.online)
		word = 0;
	if (word != old) {
		WRITE_ONCE(per_cpu(hpc_emul_word, cpu), word);
		if (sib >= 0 && cpu_online(sib))
			irq_work_queue_on(per_cpu_ptr(&hpc_emul_kick, sib), sib);
	}
	hpc_emul_recompute(rq);
}

static void hpc_emul_kick_fn(struct irq_work *work)
{
	struct rq *rq = this_rq();
	struct rq_flags rf;

	rq_lock_irqsave(rq, &rf);
	update_rq_clock(rq);
	if (rq->curr->sched_class == &hpc_sched_class)
		rq->curr->sched_class->update_curr(rq);
	hpc_emul_recompute(rq);
	rq_unlock_irqrestore(rq, &rf);
}

/* How much later than its period began the running @timer fired. */
static u64 hpc_emul_timer_late(struct hrtimer *timer)
{
	s64 late = ktime_to_ns(ktime_sub(hrtimer_cb_get_time(timer),
					 hrtimer_get_expires(timer)));

	return late > 0 ? late : 0;
}

/*
 * A new period begins, @late ns ago. The expiry timer can fire late (a CPU
 * with interrupts off, a virtual CPU not scheduled), so a CPU can overrun
 * its quota: the overrun carries into the new period (hpc_smt_carry()).
 * The period timer can fire late too: a throttled CPU is then held back
 * into the new period, and what that costs its tasks is owed to the next
 * one (hpc_smt_owed()).
 */
static void hpc_emul_new_period(struct rq *rq, u64 late)
{
	u64 per = hpc_emul_period_ns();

	if (!rq->hpc.emul_limited) {
		rq->hpc.emul_owed = 0;
		rq->hpc.emul_used = 0;
		rq->hpc.emul_late = 0;
		return;
	}
	rq->hpc.emul_owed = hpc_smt_owed(rq->hpc.emul_used, rq->hpc.emul_quota,
					 rq->hpc.emul_late, per);
	rq->hpc.emul_used = hpc_smt_carry(rq->hpc.emul_used, rq->hpc.emul_quota,
					  per);
	rq->hpc.emul_late = rq->hpc.throttled ? late : 0;
}

static enum hrtimer_restart hpc_emul_period_fn(struct hrtimer *timer)
{
	struct rq *rq = hpc_emul_rq(timer);
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	struct rq_flags rf;

	rq_lock_irqsave(rq, &rf);
	update_rq_clock(rq);
	if (rq->curr->sched_class == &hpc_sched_class)
		rq->curr->sched_class->update_curr(rq);
	hpc_emul_new_period(rq, hpc_emul_timer_late(timer));
	/* The timer is running, so nothing may start it. */
	rq->hpc.emul_timer_active = 1;
	hpc_emul_recompute(rq);
	if (rq->hpc.emul_limited) {
		hrtimer_forward_now(timer, ns_to_ktime(hpc_emul_period_ns()));
		ret = HRTIMER_RESTART;
	} else {
		rq->hpc.emul_timer_active = 0;
	}
	rq_unlock_irqrestore(rq, &rf);
	return ret;
}

/*
 * The budget of @rq ran out, if a SCHED_HPC task ran all along: charge it
 * (the class throttles the CPU at the quota), or wait for the rest.
 */
static enum hrtimer_restart hpc_emul_expiry_fn(struct hrtimer *timer)
{
	struct rq *rq = container_of(timer, struct rq, hpc.emul_expiry);
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	struct rq_flags rf;

	rq_lock_irqsave(rq, &rf);
	update_rq_clock(rq);
	if (rq->curr->sched_class == &hpc_sched_class) {
		rq->curr->sched_class->update_curr(rq);
		/* Re-armed by a recompute while this callback waited for the lock. */
		if (!hrtimer_is_queued(timer) && rq->hpc.emul_limited &&
		    !rq->hpc.throttled &&
		    rq->hpc.emul_used < rq->hpc.emul_quota) {
			hrtimer_forward_now(timer,
					    ns_to_ktime(rq->hpc.emul_quota -
							rq->hpc.emul_used));
			ret = HRTIMER_RESTART;
		}
	}
	rq_unlock_irqrestore(rq, &rf);
	return ret;
}

/* HPC_PRIO_OFF (the mechanism is off): not busy, nothing held back. */
static void hpc_emul_apply(struct rq *rq, struct task_struct *p, u32 prio)
{
	rq->hpc.emul_prio = prio;
	hpc_emul_publish(rq, prio ? HPC_EMUL_BUSY |
			 (prio & HPC_EMUL_PRIO_MASK) : 0);
}

static void hpc_emul_reset(struct rq *rq, struct task_struct *p)
{
	if (rq->hpc.nr_queued && rq->hpc.emul_prio)
		hpc_emul_publish(rq, HPC_EMUL_BUSY | rq->hpc.emul_prio);
	else
		hpc_emul_publish(rq, 0);
}

static void hpc_emul_account(struct rq *rq, u64 delta)
{
	if (!rq->hpc.emul_limited)
		return;
	rq->hpc.emul_used += delta;
	if (rq->hpc.emul_used >= rq->hpc.emul_quota && !rq->hpc.throttled)
		hpc_throttle(rq);
}

static void hpc_emul_rq_online(struct rq *rq)
{
	hpc_emul_reset(rq, NULL);
}

static void hpc_emul_rq_offline(struct rq *rq)
{
	/* A CPU going down runs unthrottled so that its tasks can leave. */
	hpc_emul_publish(rq, 0);
	if (hrtimer_try_to_cancel(&rq->hpc.emul_timer) >= 0)
		rq->hpc.emul_timer_active = 0;
	hrtimer_try_to_cancel(&rq->hpc.emul_expiry);
}

/*
 * @cpu has another sibling (CPU hotplug, SMT switched): its budget and
 * throttling follow from the new sibling's word, recomputed on @cpu
 * under its runqueue lock (the timers are pinned to it).
 */
static void hpc_emul_sibling_changed(int cpu)
{
	irq_work_queue_on(per_cpu_ptr(&hpc_emul_kick, cpu), cpu);
}

static void hpc_emul_init_rq(struct rq *rq, int cpu)
{
	init_irq_work(per_cpu_ptr(&hpc_emul_kick, cpu),
		      hpc_emul_kick_fn);
	hrtimer_init(&rq->hpc.emul_timer, CLOCK_MONOTONIC,
		     HRTIMER_MODE_REL_PINNED_HARD);
	rq->hpc.emul_timer.function = hpc_emul_period_fn;
	hrtimer_init(&rq->hpc.emul_expiry, CLOCK_MONOTONIC,
		     HRTIMER_MODE_REL_PINNED_HARD);
	rq->hpc.emul_expiry.function = hpc_emul_expiry_fn;
	rq->hpc.emul_timer_active = 0;
	rq->hpc.emul_limited = 0;
	rq->hpc.emul_used = 0;
	rq->hpc.emul_owed = 0;
	rq->hpc.emul_late = 0;
	rq->hpc.emul_prio = HPC_PRIO_NORMAL;
}

const struct hpc_backend hpc_emul_backend = {
	.name		= "x86-smt-emul",
	.range		= { .min = HPC_SMT_EMUL_PRIO_MIN, .max = HPC_SMT_EMUL_PRIO_MAX },
	.init_rq	= hpc_emul_init_rq,
	.apply		= hpc_emul_apply,
	.reset		= hpc_emul_reset,
	.account	= hpc_emul_account,
	.rq_online	= hpc_emul_rq_online,
	.rq_offline	= hpc_emul_rq_offline,
	.sibling_changed = hpc_emul_sibling_changed,
};
