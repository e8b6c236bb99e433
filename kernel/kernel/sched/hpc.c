// SPDX-License-Identifier: GPL-2.0
/*
 * SCHED_HPC scheduling class.
 *
 * A class between the real-time and the fair class for HPC (MPI-style)
 * applications: one task per CPU that alternates compute phases and waits.
 * The class runs its tasks round-robin by virtual time, a waking task
 * first (or FIFO: see hpc_queue.h), tracks their iterations
 * with the policy core (hpc_policy.c) and gives each task the hardware
 * thread priority the core decides on; a mechanism backend applies it.
 *
 * See Documentation/scheduler/sched-hpc.rst.
 */
#include <linux/sched/clock.h>
#include <linux/sched/hpc.h>
#include <linux/cpuhotplug.h>
#include <linux/irq_work.h>
#include <linux/kobject.h>
#include <linux/mmu_context.h>
#include <linux/ptrace.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "sched.h"
#include "pelt.h"
#include "hpc_backend.h"
#include "hpc_policy.h"
#include "hpc_queue.h"
#include "hpc_smt.h"

static_assert(sizeof(struct hpc_task) <=
	      sizeof_field(struct sched_hpc_entity, state));
static_assert(SCHED_HPC_PRIO_NORMAL == HPC_PRIO_NORMAL);
static_assert(HPC_STATE_RTLOCK_WAIT == TASK_RTLOCK_WAIT);

enum hpc_queue_mode {
	HPC_QUEUE_RR = 0,
	HPC_QUEUE_FIFO,
};

/*
 * Tunables. A write builds a new copy, checks it and publishes it with RCU,
 * so that readers (under a runqueue lock) always see a consistent set.
 */
struct hpc_conf {
	struct hpc_params	p;
	u32			queue;
	u32			timeslice_us;
	u32			emul_period_us;
	u32			mech;	/* 0: no backend (none) */
	struct rcu_head		rcu;
};

/*
 * The mechanism is on at boot where it is the hardware's (POWER thread
 * priorities); the x86 emulation, which slows every pair of busy tasks
 * down, is chosen by writing its name to "backend".
 */
static struct hpc_conf hpc_conf_boot = {
	.queue		= HPC_QUEUE_RR,
	.mech		= IS_ENABLED(CONFIG_SCHED_HPC_POWER),
	.timeslice_us	= HPC_DEF_TIMESLICE_US,
	.emul_period_us	= HPC_DEF_EMUL_PERIOD_US,
};

static struct hpc_conf __rcu *hpc_conf_ptr = RCU_INITIALIZER(&hpc_conf_boot);
static DEFINE_MUTEX(hpc_conf_mutex);

/* What applies the priorities. */
#ifdef CONFIG_SCHED_HPC_POWER
static const struct hpc_backend *const hpc_backend = &hpc_power_backend;
#else
static const struct hpc_backend *const hpc_backend = &hpc_emul_backend;
#endif

/*
 * Snapshot of the SCHED_HPC task running (or that ran last) on a CPU. The
 * task on the sibling SMT context reads it to judge the task it waits for,
 * without touching that CPU's runqueue. The lock is a leaf: it nests inside
 * any runqueue lock and nothing nests inside it.
 */
struct hpc_snap {
	raw_spinlock_t		lock;
	pid_t			pid;	/* 0: no SCHED_HPC task */
	struct hpc_task		t;
};

static DEFINE_PER_CPU(struct hpc_snap, hpc_snaps);
/* The sibling SMT context of each CPU, or -1. */
static DEFINE_PER_CPU(int, hpc_sibling) = -1;

static inline struct hpc_task *hpc_it(struct task_struct *p)
{
	return (struct hpc_task *)p->hpc.state;
}

/*
 * Writers of a task's iteration state and throttle times hold the lock of
 * its runqueue (or, at fork, its pi_lock before anyone can see it); the
 * seqcount lets proc_pid_sched_hpc() copy them without that lock.
 */
static inline void hpc_write_begin(struct task_struct *p)
{
	write_seqcount_begin(&p->hpc.seq);
}

static inline void hpc_write_end(struct task_struct *p)
{
	write_seqcount_end(&p->hpc.seq);
}

static inline struct sched_hpc_entity *hpc_se(struct rb_node *node)
{
	return rb_entry(node, struct sched_hpc_entity, run_node);
}

static inline struct task_struct *hpc_task_of(struct sched_hpc_entity *hse)
{
	return container_of(hse, struct task_struct, hpc);
}

static bool hpc_se_less(struct rb_node *a, const struct rb_node *b)
{
	return hpc_vtime_before(hpc_se(a)->vtime,
				rb_entry(b, struct sched_hpc_entity,
					 run_node)->vtime);
}

/* The queue runs the least virtual time first; equal ones in arrival order. */
static void hpc_queue_add(struct rq *rq, struct sched_hpc_entity *hse)
{
	rb_add_cached(&hse->run_node, &rq->hpc.queue, hpc_se_less);
}

static void hpc_queue_del(struct rq *rq, struct sched_hpc_entity *hse)
{
	rb_erase_cached(&hse->run_node, &rq->hpc.queue);
	RB_CLEAR_NODE(&hse->run_node);
}

static struct sched_hpc_entity *hpc_queue_first(struct rq *rq)
{
	struct rb_node *node = rb_first_cached(&rq->hpc.queue);

	return node ? hpc_se(node) : NULL;
}

static struct sched_hpc_entity *hpc_queue_next(struct sched_hpc_entity *hse)
{
	struct rb_node *node = rb_next(&hse->run_node);

	return node ? hpc_se(node) : NULL;
}

/* Give a queued @hse the virtual time @vtime (its place changes). */
static void hpc_queue_move(struct rq *rq, struct sched_hpc_entity *hse,
			   u64 vtime)
{
	hpc_queue_del(rq, hse);
	hse->vtime = vtime;
	hpc_queue_add(rq, hse);
	rq->hpc.vtime = hpc_queue_advance(rq->hpc.vtime,
					  hpc_queue_first(rq)->vtime);
}

/* Callers hold a runqueue lock or p->pi_lock: preemption is off. */
static inline const struct hpc_conf *hpc_conf(void)
{
	return rcu_dereference_sched(hpc_conf_ptr);
}

static u64 hpc_timeslice_ns(const struct hpc_conf *c)
{
	return (u64)c->timeslice_us * NSEC_PER_USEC;
}

u64 hpc_emul_period_ns(void)
{
	return (u64)hpc_conf()->emul_period_us * NSEC_PER_USEC;
}

/* Lockless: the pairs change on CPU hotplug (hpc_pair_cpus()). */
int hpc_cpu_sibling(int cpu)
{
	return READ_ONCE(per_cpu(hpc_sibling, cpu));
}

/*
 * The backend holds @rq's tasks back: they stay queued but are not picked
 * and do not count as running, as with RT and CFS bandwidth throttling.
 */
void hpc_throttle(struct rq *rq)
{
	struct sched_hpc_entity *hse;
	u64 now = rq_clock(rq);

	if (rq->hpc.throttled)
		return;
	rq->hpc.throttled = 1;
	sub_nr_running(rq, rq->hpc.nr_queued);
	for (hse = hpc_queue_first(rq); hse; hse = hpc_queue_next(hse)) {
		hpc_write_begin(hpc_task_of(hse));
		hse->throttled = 1;
		hse->throttle_start = now;
		hpc_write_end(hpc_task_of(hse));
	}
	if (rq->curr->sched_class == &hpc_sched_class)
		resched_curr(rq);
}

void hpc_unthrottle(struct rq *rq)
{
	struct sched_hpc_entity *hse;
	u64 now = rq_clock(rq);

	if (!rq->hpc.throttled)
		return;
	rq->hpc.throttled = 0;
	add_nr_running(rq, rq->hpc.nr_queued);
	for (hse = hpc_queue_first(rq); hse; hse = hpc_queue_next(hse)) {
		hpc_write_begin(hpc_task_of(hse));
		if (hse->throttled && now > hse->throttle_start)
			hse->throttled_ns += now - hse->throttle_start;
		hse->throttled = 0;
		hpc_write_end(hpc_task_of(hse));
	}
	if (rq->hpc.nr_queued &&
	    sched_class_above(&hpc_sched_class, rq->curr->sched_class))
		resched_curr(rq);
}

/*
 * Publish @p's state as the snapshot of @cpu: always when @p is the task
 * that runs there (@own), else only if the snapshot shows @p or nothing.
 */
static void hpc_snap_store(int cpu, struct task_struct *p, bool own)
{
	struct hpc_snap *s = per_cpu_ptr(&hpc_snaps, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&s->lock, flags);
	if (own || !s->pid || s->pid == p->pid) {
		s->pid = p->pid;
		s->t = *hpc_it(p);
	}
	raw_spin_unlock_irqrestore(&s->lock, flags);
}

/* @p no longer runs on @cpu as SCHED_HPC: forget it there. */
static void hpc_snap_clear(int cpu, struct task_struct *p)
{
	struct hpc_snap *s = per_cpu_ptr(&hpc_snaps, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&s->lock, flags);
	if (s->pid == p->pid)
		s->pid = 0;
	raw_spin_unlock_irqrestore(&s->lock, flags);
}

/* Copy the snapshot of the HPC task on the sibling context of @cpu, if any. */
static bool hpc_sibling_snap(int cpu, struct hpc_task *peer)
{
	int sib = hpc_cpu_sibling(cpu);
	struct hpc_snap *s;
	unsigned long flags;
	bool valid;

	if (sib < 0)
		return false;
	s = per_cpu_ptr(&hpc_snaps, sib);
	raw_spin_lock_irqsave(&s->lock, flags);
	valid = s->pid != 0;
	if (valid)
		*peer = s->t;
	raw_spin_unlock_irqrestore(&s->lock, flags);
	return valid;
}

/*
 * Does the task that ran last on @cpu sleep there in a wait, between two
 * compute phases (its snapshot, hpc_task_waits())? A task that leaves the
 * CPU (migration), the class or the system clears the snapshot.
 */
bool hpc_cpu_task_waits(int cpu)
{
	struct hpc_snap *s = per_cpu_ptr(&hpc_snaps, cpu);
	unsigned long flags;
	bool waits;

	raw_spin_lock_irqsave(&s->lock, flags);
	waits = s->pid && hpc_task_waits(&s->t);
	raw_spin_unlock_irqrestore(&s->lock, flags);
	return waits;
}

/*
 * The clock of the iteration accounting. Iterations are compared across
 * CPUs (a task sleeps on one CPU and wakes on another; a CPU judges its
 * sibling's snapshot), so it must be one clock for all CPUs: the per-CPU
 * rq clocks can drift apart by more than min_wait_us.
 */
static u64 hpc_clock(void)
{
	return ktime_get_mono_fast_ns();
}

/*
 * sched_priority of a SCHED_HPC task: 0, the policy core decides its
 * priority; else a fixed priority, one the backend can apply.
 */
bool hpc_prio_valid(unsigned int prio)
{
	return !prio || (prio >= hpc_backend->range.min &&
			 prio <= hpc_backend->range.max);
}

unsigned int hpc_prio_max(void)
{
	return hpc_backend->range.max;
}

/*
 * The priority the backend applies to @p: its next one (its fixed priority,
 * sched_priority, if it has one, hpc_task_next_prio()); HPC_PRIO_OFF (run as
 * an ordinary thread) while the mechanism is off (backend "none").
 */
static u32 hpc_mech_prio(struct task_struct *p, const struct hpc_conf *c)
{
	if (!c->mech)
		return HPC_PRIO_OFF;
	/*
	 * At every pick: no seqcount write. It stores one word, t->prio,
	 * which a reader sees whole, before or after.
	 */
	return hpc_task_next_prio(hpc_it(p), &c->p, p->rt_priority);
}

/* Fresh iteration state, e.g. when a task enters the class or forks. */
static void hpc_entity_init(struct task_struct *p, u64 now)
{
	const struct hpc_conf *c = hpc_conf();
	struct sched_hpc_entity *hse = &p->hpc;

	hpc_write_begin(p);
	hpc_task_init(hpc_it(p), now, &c->p);
	hse->throttled_ns = 0;
	hse->throttled = 0;
	hpc_write_end(p);
	/* FIFO: it arrives now; round-robin: first, as a woken task. */
	hse->vtime = c->queue == HPC_QUEUE_FIFO ? now : 0;
	hse->wake_exec = p->se.sum_exec_runtime;
	hse->time_slice = hpc_timeslice_ns(c);
	hse->applied_prio = hpc_mech_prio(p, c);
	hse->active = 1;
}

static void update_curr_hpc(struct rq *rq)
{
	struct task_struct *curr = rq->curr;
	s64 delta_exec;

	if (curr->sched_class != &hpc_sched_class)
		return;

	delta_exec = update_curr_common(rq);
	if (unlikely(delta_exec <= 0))
		return;

	if (curr->hpc.time_slice > delta_exec)
		curr->hpc.time_slice -= delta_exec;
	else
		curr->hpc.time_slice = 0;
	/* Round-robin: the virtual time is the CPU time received. */
	if (hpc_conf()->queue == HPC_QUEUE_RR && curr->hpc.on_rq)
		hpc_queue_move(rq, &curr->hpc, curr->hpc.vtime + delta_exec);

	hpc_backend->account(rq, delta_exec);
}

/*
 * The task becomes runnable: the policy core closes its iteration if it
 * waited long enough (hpc_on_wakeup()).
 */
static void hpc_account_wakeup(struct rq *rq, struct task_struct *p)
{
	const struct hpc_conf *c = hpc_conf();
	struct hpc_task *it = hpc_it(p);
	struct hpc_task peer;
	bool sib;
	int closed;

	if (it->state != HPC_TASK_SLEEPING)
		return;
	sib = hpc_sibling_snap(cpu_of(rq), &peer);
	hpc_write_begin(p);
	closed = hpc_on_wakeup(it, hpc_clock(), &c->p, sib ? &peer : NULL,
			       p->rt_priority);
	hpc_write_end(p);
	if (closed)
		trace_sched_hpc_iteration(p, it->last_run, it->last_wait,
					  it->last_util, it->heur_util,
					  it->prev_prio, it->prio);
}

/*
 * The tick of the running task: the policy core folds its run time and
 * judges the task on the critical path, which never sleeps, once its
 * sibling closed an iteration it computed through (hpc_on_tick()).
 */
static void hpc_account_tick(struct rq *rq, struct task_struct *p, u64 now)
{
	const struct hpc_conf *c = hpc_conf();
	struct hpc_task *it = hpc_it(p);
	struct hpc_task peer;
	bool sib = hpc_sibling_snap(cpu_of(rq), &peer);
	int judged;

	hpc_write_begin(p);
	judged = hpc_on_tick(it, now, &c->p, sib ? &peer : NULL, p->rt_priority);
	hpc_write_end(p);
	if (judged) {
		trace_sched_hpc_judge(p, it->heur_util, it->prev_prio,
				      it->prio);
		p->hpc.applied_prio = hpc_mech_prio(p, c);
		hpc_backend->apply(rq, p, p->hpc.applied_prio);
	}
}

/* Where @hse goes on @rq's queue (hpc_queue.h). */
static u64 hpc_enqueue_vtime(struct rq *rq, struct sched_hpc_entity *hse,
			     int flags)
{
	const struct hpc_conf *c = hpc_conf();
	struct sched_hpc_entity *first = hpc_queue_first(rq);
	struct task_struct *p = hpc_task_of(hse);

	if (flags & ENQUEUE_HEAD)
		return first ? first->vtime - 1 : rq->hpc.vtime;
	if (c->queue == HPC_QUEUE_FIFO)
		/* dequeued and enqueued to change an attribute: same place */
		return flags & ENQUEUE_RESTORE ? hse->vtime : hpc_clock();
	return hpc_queue_vtime(hse->vtime, rq->hpc.vtime, hpc_timeslice_ns(c),
			       flags & ENQUEUE_WAKEUP ?
			       hpc_wake_burst(&hse->wake_exec,
					      p->se.sum_exec_runtime) : 0);
}

#ifdef CONFIG_SMP
/*
 * The CPUs with two SCHED_HPC tasks or more, and how many: a CPU looking
 * for one to pull reads the count and, only when it is not zero, visits
 * those CPUs (as the RT class does with its overload mask). A CPU's bit
 * changes only under its runqueue lock.
 */
static struct cpumask hpc_overload_mask;
static atomic_t hpc_overload_count;

static void hpc_update_overload(struct rq *rq)
{
	int cpu = cpu_of(rq);
	bool over = rq->hpc.nr_queued >= 2;

	if (over == cpumask_test_cpu(cpu, &hpc_overload_mask))
		return;
	if (over) {
		cpumask_set_cpu(cpu, &hpc_overload_mask);
		/* The bit is visible before the count says there is one. */
		smp_wmb();
		atomic_inc(&hpc_overload_count);
	} else {
		atomic_dec(&hpc_overload_count);
		cpumask_clear_cpu(cpu, &hpc_overload_mask);
	}
}
#else
static inline void hpc_update_overload(struct rq *rq) { }
#endif

static void enqueue_task_hpc(struct rq *rq, struct task_struct *p, int flags)
{
	struct sched_hpc_entity *hse = &p->hpc;

	if (WARN_ON_ONCE(hse->on_rq))
		return;
	if (unlikely(!hse->active))
		hpc_entity_init(p, hpc_clock());

	hpc_account_wakeup(rq, p);
	/* A task that wakes up starts a new time slice (hpc_queue.h). */
	if (flags & ENQUEUE_WAKEUP)
		hse->time_slice = hpc_timeslice_ns(hpc_conf());

	hse->vtime = hpc_enqueue_vtime(rq, hse, flags);
	hpc_queue_add(rq, hse);
	hse->on_rq = 1;
	rq->hpc.nr_queued++;
	hpc_update_overload(rq);
	if (rq->hpc.throttled) {
		hpc_write_begin(p);
		hse->throttled = 1;
		hse->throttle_start = rq_clock(rq);
		hpc_write_end(p);
	} else {
		add_nr_running(rq, 1);
	}
	cpufreq_update_util(rq, 0);

	hpc_snap_store(cpu_of(rq), p, false);
	/* A woken task starts a compute phase with its new priority. */
	hpc_backend->apply(rq, p, hpc_mech_prio(p, hpc_conf()));
}

static bool dequeue_task_hpc(struct rq *rq, struct task_struct *p, int flags)
{
	struct sched_hpc_entity *hse = &p->hpc;

	update_curr_hpc(rq);

	if (!hse->on_rq)
		return true;

	if (flags & DEQUEUE_SLEEP) {
		if (hpc_block_is_wait(READ_ONCE(p->__state))) {
			hpc_write_begin(p);
			hpc_task_sleep(hpc_it(p), hpc_clock());
			hpc_write_end(p);
		}
		hpc_snap_store(cpu_of(rq), p, false);
	}

	hpc_queue_del(rq, hse);
	hse->on_rq = 0;
	/* Not when it is queued again at once (an attribute changes). */
	if (rq->hpc.resume == p && !(flags & DEQUEUE_SAVE))
		rq->hpc.resume = NULL;
	rq->hpc.nr_queued--;
	hpc_update_overload(rq);
	if (hse->throttled) {
		u64 now = rq_clock(rq);

		hpc_write_begin(p);
		if (now > hse->throttle_start)
			hse->throttled_ns += now - hse->throttle_start;
		hse->throttled = 0;
		hpc_write_end(p);
	}
	if (!rq->hpc.throttled)
		sub_nr_running(rq, 1);

	hpc_backend->reset(rq, p);

	return true;
}

/* Behind every queued task: the slice end of round-robin, a yield. */
static void requeue_task_hpc(struct rq *rq, struct task_struct *p)
{
	struct rb_node *last;
	u64 vtime;

	if (!p->hpc.on_rq)
		return;
	last = rb_last(&rq->hpc.queue.rb_root);
	vtime = hpc_se(last)->vtime;
	/* Strictly behind: queued again with its place, it stays there. */
	if (hpc_se(last) != &p->hpc)
		vtime++;
	if (hpc_vtime_before(vtime, p->hpc.vtime))
		vtime = p->hpc.vtime;
	hpc_queue_move(rq, &p->hpc, vtime);
	if (task_current(rq, p))
		rq->hpc.requeued = 1;
}

static void yield_task_hpc(struct rq *rq)
{
	requeue_task_hpc(rq, rq->curr);
}

/* What @curr has run since it was picked. */
static u64 hpc_ran(struct rq *rq, struct task_struct *curr)
{
	return curr->se.sum_exec_runtime - rq->hpc.pick_exec;
}

/*
 * Round-robin: a woken task (@p) preempts the running one if it is ahead by
 * more than the core's margin (hpc_wake_preempts()). Until it runs, the
 * tick checks again (hpc_tick_preempt()). A sync wake-up (WF_SYNC: a
 * socket's or pipe's writer woke its reader, or the reader a blocked
 * writer) gets no credit (hpc_sync_wake_vtime()): the waker soon sleeps,
 * or passes more messages on. With the credit, tasks that pass messages
 * preempted each other at nearly every tick: hackbench made 1.5 times the
 * context switches of normal tasks and took 1.4 times as long (2 vCPUs
 * under QEMU; 1.1 times without the credit). The core can exempt a sync
 * wake-up from preempting, but here the tick's check preempts for it
 * within the margin anyway: exempted there too, tasks that pass messages
 * held the queue's virtual time back for a whole slice, and a task woken
 * by its timer waited up to twice a slice behind them. This is called
 * only while a task of the class runs: a task woken where another class
 * runs preempts it at once, and one woken from another CPU through its
 * wake list (sched_ttwu_pending()) does not say it was a sync one.
 */
static void wakeup_preempt_hpc(struct rq *rq, struct task_struct *p, int flags)
{
	const struct hpc_conf *c = hpc_conf();
	struct task_struct *curr = rq->curr;
	u64 vtime;

	if (c->queue != HPC_QUEUE_RR || curr == p)
		return;
	if ((flags & WF_SYNC) && p->hpc.on_rq) {
		vtime = hpc_sync_wake_vtime(p->hpc.vtime, rq->hpc.vtime);
		if (vtime != p->hpc.vtime)
			hpc_queue_move(rq, &p->hpc, vtime);
	}
	if (rq->hpc.throttled)
		return;
	update_curr_hpc(rq);
	if (hpc_wake_preempts(p->hpc.vtime, curr->hpc.vtime, hpc_ran(rq, curr),
			      hpc_timeslice_ns(c), false))
		resched_curr(rq);
}

/* Has @p not run since it woke up (or was created)? */
static bool hpc_woken_waiting(struct task_struct *p)
{
	return p->se.sum_exec_runtime == p->hpc.wake_exec;
}

/* The most queued tasks the tick looks at for a woken one. */
#define HPC_TICK_SCAN	4

/*
 * At the tick of @curr: a task that waits in the queue (@curr stays in it
 * while it runs) woke up, has not run since, and is ahead enough by now.
 * It may not have been ahead enough at its wake-up, or a task queued
 * before it (another woken one, or one placed at the least a move allows)
 * was picked first: either way it waits no longer than that margin. A busy
 * task queued before it does not hold it back: round-robin lets @curr run
 * past a task that waits to run, and a woken task behind that one would
 * then wait for the rest of @curr's slice. Then the CPU runs the least of
 * them, which the woken task preempts in its turn.
 */
static bool hpc_tick_preempt(struct rq *rq, struct task_struct *curr,
			     const struct hpc_conf *c)
{
	struct sched_hpc_entity *hse = hpc_queue_first(rq);
	u64 ran = hpc_ran(rq, curr), slice = hpc_timeslice_ns(c);
	int n;

	if (c->queue != HPC_QUEUE_RR)
		return false;
	for (n = 0; hse && n < HPC_TICK_SCAN; hse = hpc_queue_next(hse)) {
		if (hse == &curr->hpc)
			continue;
		/* Queued by virtual time: the ones after are not ahead either. */
		if (!hpc_wake_preempts(hse->vtime, curr->hpc.vtime, ran, slice,
				       false))
			return false;
		if (hpc_woken_waiting(hpc_task_of(hse)))
			return true;
		n++;
	}
	return false;
}

/*
 * A reschedule that the class did not ask for keeps @curr running, as
 * SCHED_RR keeps its running task until its slice ends: a task of a lower
 * class woke up and started the deadline server, a stopper ran and left, or
 * @curr returns to user space with a stale request. The class switches at
 * the end of a slice, at a yield and for a woken task that preempts
 * (hpc_tick_preempt()). Else a task that woke up and ran part of its burst,
 * past the virtual time of a busy task that waits, would go behind that
 * task at any such reschedule and wait for its whole slice.
 */
static bool hpc_keeps_cpu(struct rq *rq, struct task_struct *curr)
{
	if (curr->sched_class != &hpc_sched_class || !curr->hpc.on_rq ||
	    rq->hpc.requeued)
		return false;
	update_curr_hpc(rq);
	return !hpc_tick_preempt(rq, curr, hpc_conf());
}

/*
 * The task that another class took the CPU from (a real-time task or an
 * interrupt thread that woke, the deadline server, the backend's
 * throttle) runs again first, as a preempted SCHED_RR task stays at the
 * head of its queue: its place in the class does not depend on when the
 * other class came. A task that woke up, ran part of its burst and was
 * preempted there would else go behind a busy task whose virtual time its
 * burst passed, and wait for that task's whole slice.
 */
static struct task_struct *pick_task_hpc(struct rq *rq)
{
	struct task_struct *first;

	if (!sched_hpc_runnable(rq))
		return NULL;
	if (rq->hpc.resume)
		return rq->hpc.resume;
	if (hpc_keeps_cpu(rq, rq->curr))
		return rq->curr;
	first = hpc_task_of(hpc_queue_first(rq));
	/* It went behind, and nothing is before it: it keeps the CPU. */
	if (first == rq->curr)
		rq->hpc.requeued = 0;
	return first;
}

static void put_prev_task_hpc(struct rq *rq, struct task_struct *p,
			      struct task_struct *next)
{
	update_curr_hpc(rq);
	update_hpc_rq_load_avg(rq_clock_pelt(rq), rq, 1);
	/* Set again at once (an attribute changes): nothing to note. */
	if (!next)
		return;
	/*
	 * Not after the end of its slice or a yield: it went behind. A task
	 * that entered the class while it ran (set_next_task_hpc()) leaves
	 * the mark of the one another class took the CPU from before.
	 */
	if (!rq->hpc.resume)
		rq->hpc.resume = p->hpc.on_rq && !rq->hpc.requeued &&
				 next->sched_class != &hpc_sched_class ? p : NULL;
	rq->hpc.requeued = 0;
}

static void set_next_task_hpc(struct rq *rq, struct task_struct *p, bool first)
{
	const struct hpc_conf *c = hpc_conf();
	struct sched_hpc_entity *hse = &p->hpc;

	p->se.exec_start = rq_clock_task(rq);
	if (!hse->time_slice)
		hse->time_slice = hpc_timeslice_ns(c);
	/*
	 * Picked: what a resumed task ran before another class came still
	 * counts. Set while it runs (an attribute changed, or it entered the
	 * class, e.g. at the end of a priority boost): the task another class
	 * took the CPU from stays the one to resume, and runs first.
	 */
	if (first) {
		if (rq->hpc.resume != p)
			rq->hpc.pick_exec = p->se.sum_exec_runtime;
		rq->hpc.resume = NULL;
	} else if (!rq->hpc.resume) {
		rq->hpc.pick_exec = p->se.sum_exec_runtime;
	}

	/* A new priority takes effect when the task (re)starts computing. */
	hse->applied_prio = hpc_mech_prio(p, c);
	hpc_snap_store(cpu_of(rq), p, true);
	hpc_backend->apply(rq, p, hse->applied_prio);

	/* put_prev_task_hpc() has accounted the time of an HPC predecessor. */
	if (first && rq->curr->sched_class != &hpc_sched_class)
		update_hpc_rq_load_avg(rq_clock_pelt(rq), rq, 0);
}

#ifdef CONFIG_SMP
/*
 * Task-count balancing: every CPU, then every emulated core, should run the
 * same number of SCHED_HPC tasks, by the policy core's rules (hpc_queue.h,
 * shared with scx_hpc): a CPU without work pulls, a CPU with two more than
 * another pushes at its tick, and a core busy on both contexts gives its
 * running task to an idle core. Counts are read locklessly; moves are made
 * under both runqueue locks and re-checked there.
 */
static DEFINE_PER_CPU(struct irq_work, hpc_push_work);

/*
 * Bounded scans: the wake-up, the pull, the tick's push check and the
 * core balance each read the counts of HPC_SCAN_CPUS CPUs at most, so that
 * what they cost does not grow with the machine. Each scan of a CPU starts
 * HPC_SCAN_CPUS further than its last one, so that successive scans visit
 * every CPU: a CPU with two tasks fewer is found within
 * nr_cpu_ids / HPC_SCAN_CPUS ticks. A wake-up looks at the CPUs after the
 * task's own first, its neighbours. Fork and exec place a task once and
 * read every allowed CPU, as the fair class's find_idlest_cpu() does.
 */
#define HPC_SCAN_CPUS	8

struct hpc_scan {
	unsigned int	next;	/* where the next scan starts */
	int		push;	/* the CPU the tick's push check found, or -1 */
	unsigned int	core;	/* where the core balance looks first */
};

static DEFINE_PER_CPU(struct hpc_scan, hpc_scans);

/* Where this CPU's next scan starts; the one after starts further on. */
static unsigned int hpc_scan_start(void)
{
	struct hpc_scan *sc = this_cpu_ptr(&hpc_scans);
	unsigned int start = sc->next < nr_cpu_ids ? sc->next : 0;

	sc->next = start + HPC_SCAN_CPUS;
	return start;
}

static unsigned int hpc_nr_on(int cpu)
{
	return READ_ONCE(cpu_rq(cpu)->hpc.nr_queued);
}

/*
 * The counts of the policy core's balance rules (hpc_queue.h): the load of
 * @cpu (its tasks, one more while throttled) and how many of them wait.
 */
static unsigned int hpc_load_on(int cpu)
{
	return hpc_nr_on(cpu) + READ_ONCE(cpu_rq(cpu)->hpc.throttled);
}

static unsigned int hpc_waiting_on(int cpu)
{
	unsigned int n = hpc_nr_on(cpu);

	return READ_ONCE(cpu_rq(cpu)->hpc.throttled) || !n ? n : n - 1;
}

/* SCHED_HPC tasks on @cpu's emulated core. */
static unsigned int hpc_nr_core(int cpu)
{
	int sib = hpc_cpu_sibling(cpu);

	return hpc_nr_on(cpu) + (sib >= 0 ? hpc_nr_on(sib) : 0);
}

/* Can @p be moved from @rq to @dst_cpu now? (@rq locked) */
static bool hpc_can_move(struct rq *rq, struct task_struct *p, int dst_cpu)
{
	return !task_on_cpu(rq, p) && !is_migration_disabled(p) &&
	       cpumask_test_cpu(dst_cpu, p->cpus_ptr) && cpu_active(dst_cpu);
}

/* Move @p from @src to @dst; both locked. */
static void hpc_move_task(struct rq *src, struct rq *dst, struct task_struct *p)
{
	deactivate_task(src, p, 0);
	set_task_cpu(p, cpu_of(dst));
	activate_task(dst, p, 0);
	wakeup_preempt(dst, p, 0);
}

/*
 * @this_rq has no SCHED_HPC task left: pull a queued one from the CPU with
 * the most. Called with @this_rq locked (not pinned); may drop the lock.
 */
static void hpc_pull(struct rq *this_rq)
{
	int this_cpu = cpu_of(this_rq), cpu, src_cpu = -1, n = 0;
	unsigned int bw = 0, bl = 0, w, l;
	struct sched_hpc_entity *hse;
	struct rq *src;

	if (!atomic_read(&hpc_overload_count))
		return;
	/* Pairs with the smp_wmb() in hpc_update_overload(). */
	smp_rmb();
	for_each_cpu_wrap(cpu, &hpc_overload_mask, hpc_scan_start()) {
		if (!cpu_active(cpu))
			continue;
		if (n++ == HPC_SCAN_CPUS)
			break;
		l = hpc_load_on(cpu);
		w = hpc_waiting_on(cpu);
		if (cpu != this_cpu && hpc_pull_better(w, l, bw, bl)) {
			bw = w;
			bl = l;
			src_cpu = cpu;
		}
	}
	if (src_cpu < 0)
		return;

	src = cpu_rq(src_cpu);
	double_lock_balance(this_rq, src);
	if (this_rq->hpc.nr_queued || src->hpc.nr_queued < 2)
		goto unlock;
	for (hse = hpc_queue_first(src); hse; hse = hpc_queue_next(hse)) {
		struct task_struct *p = hpc_task_of(hse);

		if (hpc_can_move(src, p, this_cpu)) {
			hpc_move_task(src, this_rq, p);
			break;
		}
	}
unlock:
	double_unlock_balance(this_rq, src);
}

/*
 * An allowed CPU of @p with two SCHED_HPC tasks fewer than @rq, among
 * HPC_SCAN_CPUS from @start on, or -1.
 */
static int hpc_emptier_cpu_for(struct rq *rq, struct task_struct *p,
			       unsigned int start)
{
	int cpu, n = 0;

	for_each_cpu_wrap(cpu, p->cpus_ptr, start) {
		if (cpu == cpu_of(rq) || !cpu_active(cpu))
			continue;
		if (n++ == HPC_SCAN_CPUS)
			break;
		if (hpc_push_worth(rq->hpc.nr_queued, hpc_nr_on(cpu)))
			return cpu;
	}
	return -1;
}

/*
 * @rq has at least two SCHED_HPC tasks more than another CPU: push a queued
 * one there, looking first where the tick's check found that CPU. Called
 * with @rq locked; may drop the lock.
 */
static void hpc_push(struct rq *rq)
{
	int from = this_cpu_read(hpc_scans.push), dst_cpu = -1, n = 0;
	struct sched_hpc_entity *hse;
	struct task_struct *p = NULL;
	struct rq *dst;

	if (rq->hpc.nr_queued < 2 || from < 0)
		return;
	for (hse = hpc_queue_first(rq); hse && n < HPC_SCAN_CPUS;
	     hse = hpc_queue_next(hse)) {
		struct task_struct *t = hpc_task_of(hse);

		if (task_on_cpu(rq, t) || is_migration_disabled(t))
			continue;
		n++;
		dst_cpu = hpc_emptier_cpu_for(rq, t, from);
		if (dst_cpu >= 0) {
			p = t;
			break;
		}
	}
	if (!p)
		return;

	dst = cpu_rq(dst_cpu);
	get_task_struct(p);
	double_lock_balance(rq, dst);
	/* The lock of @rq may have been dropped: check again. */
	if (task_rq(p) == rq && task_on_rq_queued(p) &&
	    hpc_push_worth(rq->hpc.nr_queued, dst->hpc.nr_queued) &&
	    hpc_can_move(rq, p, dst_cpu))
		hpc_move_task(rq, dst, p);
	double_unlock_balance(rq, dst);
	put_task_struct(p);
}

/*
 * Is there an active CPU with two SCHED_HPC tasks fewer than @rq, among
 * this scan's? The push looks there first.
 */
static bool hpc_has_emptier_cpu(struct rq *rq)
{
	int cpu, n = 0;

	for_each_cpu_wrap(cpu, cpu_active_mask, hpc_scan_start()) {
		if (cpu == cpu_of(rq))
			continue;
		if (n++ == HPC_SCAN_CPUS)
			break;
		if (hpc_push_worth(rq->hpc.nr_queued, hpc_nr_on(cpu))) {
			this_cpu_write(hpc_scans.push, cpu);
			return true;
		}
	}
	return false;
}

/*
 * Core balance (hpc_core_gives(), hpc_core_giver()): @rq's core has
 * SCHED_HPC work on both contexts, @rq is the context that gives, and a core
 * @p may run on has none. Returns a CPU of that core, or -1.
 */
static int hpc_idle_core_for(struct rq *rq, struct task_struct *p)
{
	int cpu = cpu_of(rq), sib = hpc_cpu_sibling(cpu), i, s, n = 0;
	unsigned int load = hpc_load_on(cpu), sib_load;
	struct hpc_scan *sc = per_cpu_ptr(&hpc_scans, cpu);

	if (sib < 0 || !hpc_core_giver(cpu, sib))
		return -1;
	sib_load = hpc_load_on(sib);
	if (!hpc_core_gives(load, sib_load, 0))
		return -1;
	for_each_cpu_wrap(i, p->cpus_ptr, sc->core < nr_cpu_ids ? sc->core : 0) {
		if (i == cpu || i == sib || !cpu_active(i))
			continue;
		if (n++ == HPC_SCAN_CPUS)
			break;
		s = hpc_cpu_sibling(i);
		if (hpc_core_gives(load, sib_load,
				   hpc_load_on(i) + (s >= 0 ? hpc_load_on(s) : 0))) {
			/* The push and the stopper look here first. */
			sc->core = i;
			return i;
		}
	}
	return -1;
}

/*
 * The core balance's check, at most once per emulated period on each CPU:
 * should @rq's running task move to an idle core?
 */
static DEFINE_PER_CPU(unsigned long, hpc_core_check);

static bool hpc_core_gives_now(struct rq *rq)
{
	unsigned long *next = per_cpu_ptr(&hpc_core_check, cpu_of(rq));

	if (time_before(jiffies, *next))
		return false;
	*next = jiffies + max(1UL, nsecs_to_jiffies(hpc_emul_period_ns()));
	this_cpu_write(hpc_scans.core, hpc_scan_start());
	return rq->curr->sched_class == &hpc_sched_class &&
	       rq->curr->nr_cpus_allowed > 1 &&
	       hpc_idle_core_for(rq, rq->curr) >= 0;
}

/*
 * The class's find_lock_rq(), for push_cpu_stop(): the idle core's CPU for
 * @p, locked with @rq (@rq's lock may be dropped: checked again), or NULL.
 */
static struct rq *hpc_find_lock_core(struct task_struct *p, struct rq *rq)
{
	int cpu = hpc_idle_core_for(rq, p);
	struct rq *dst;

	if (cpu < 0)
		return NULL;
	dst = cpu_rq(cpu);
	double_lock_balance(rq, dst);
	if (task_rq(p) != rq || !task_on_rq_queued(p) ||
	    p->sched_class != &hpc_sched_class || dst->hpc.nr_queued ||
	    !hpc_can_move(rq, p, cpu)) {
		double_unlock_balance(rq, dst);
		return NULL;
	}
	return dst;
}

/*
 * Push from an irq_work queued at the tick, as RT pushes from its IPI: a
 * queued task to an emptier CPU, or the running task, through the stopper,
 * to an idle core (as RT and deadline push a running task).
 */
static void hpc_push_work_fn(struct irq_work *work)
{
	struct rq *rq = this_rq();
	struct task_struct *p = NULL;

	raw_spin_rq_lock(rq);
	hpc_push(rq);
	if (rq->curr->sched_class == &hpc_sched_class &&
	    hpc_idle_core_for(rq, rq->curr) >= 0)
		p = get_push_task(rq);
	raw_spin_rq_unlock(rq);
	if (p)
		stop_one_cpu_nowait(cpu_of(rq), push_cpu_stop, p,
				    &rq->push_work);
}

static void hpc_queue_push(struct rq *rq)
{
	int cpu = cpu_of(rq);

	if (!rq->hpc.online)
		return;
	this_cpu_write(hpc_scans.push, -1);
	if ((rq->hpc.nr_queued < 2 || !hpc_has_emptier_cpu(rq)) &&
	    !hpc_core_gives_now(rq))
		return;
	irq_work_queue_on(per_cpu_ptr(&hpc_push_work, cpu), cpu);
}

static int balance_hpc(struct rq *rq, struct task_struct *prev,
		       struct rq_flags *rf)
{
	if (!rq->hpc.nr_queued && rq->hpc.online) {
		rq_unpin_lock(rq, rf);
		hpc_pull(rq);
		rq_repin_lock(rq, rf);
	}
	return sched_stop_runnable(rq) || sched_dl_runnable(rq) ||
	       sched_rt_runnable(rq) || sched_hpc_runnable(rq);
}

/*
 * Fork, exec and wakeup: the policy core's placement (hpc_place_better(),
 * hpc_wake_stays()). A task that wakes where no other SCHED_HPC task is
 * queued stays there without a scan: no CPU has fewer, and cores are
 * evened out at fork, exec and by the push and pull.
 */
static int select_task_rq_hpc(struct task_struct *p, int cpu, int flags)
{
	unsigned int bn = UINT_MAX, bc = UINT_MAX, n, c, seen = 0;
	bool here = cpumask_test_cpu(cpu, p->cpus_ptr) && cpu_active(cpu);
	int i, best = -1;

	if (here) {
		best = cpu;
		bn = hpc_nr_on(cpu);
		bc = hpc_nr_core(cpu);
		/* exec: do not count the task itself */
		if ((flags & WF_EXEC) && bn) {
			bn--;
			bc--;
		}
		if (!bn && (flags & WF_TTWU))
			return cpu;
	}
	for_each_cpu_wrap(i, p->cpus_ptr, cpu) {
		if (i == cpu || !cpu_active(i))
			continue;
		/* A wake-up's scan is bounded; fork and exec see every CPU. */
		if ((flags & WF_TTWU) && seen++ == HPC_SCAN_CPUS)
			break;
		n = hpc_nr_on(i);
		c = hpc_nr_core(i);
		if (hpc_place_better(n, c, bn, bc)) {
			best = i;
			bn = n;
			bc = c;
		}
	}
	if (here && best != cpu && (flags & WF_TTWU) &&
	    hpc_wake_stays(hpc_nr_on(cpu), bn))
		return cpu;
	return best >= 0 ? best : cpu;
}

static void migrate_task_rq_hpc(struct task_struct *p, int new_cpu)
{
	/* Its place relative to the queue moves with it (hpc_queue.h). */
	p->hpc.vtime += READ_ONCE(cpu_rq(new_cpu)->hpc.vtime) -
			READ_ONCE(task_rq(p)->hpc.vtime);
	hpc_snap_clear(task_cpu(p), p);
}

static void rq_online_hpc(struct rq *rq)
{
	rq->hpc.online = 1;
	if (hpc_conf()->mech)
		hpc_backend->rq_online(rq);
}

static void rq_offline_hpc(struct rq *rq)
{
	rq->hpc.online = 0;
	hpc_backend->rq_offline(rq);
}
#endif /* CONFIG_SMP */

static void task_tick_hpc(struct rq *rq, struct task_struct *p, int queued)
{
	const struct hpc_conf *c = hpc_conf();
	struct sched_hpc_entity *hse = &p->hpc;
	u64 now = hpc_clock();

	update_curr_hpc(rq);
	update_hpc_rq_load_avg(rq_clock_pelt(rq), rq, 1);
	/* No fair task may run here to ask for the CPU's frequency. */
	cpufreq_update_util(rq, 0);
	hpc_account_tick(rq, p, now);
	hpc_snap_store(cpu_of(rq), p, true);
	/* Picked just as its CPU ran out of budget: leave at once. */
	if (rq->hpc.throttled || hpc_tick_preempt(rq, p, c))
		resched_curr(rq);

#ifdef CONFIG_SMP
	hpc_queue_push(rq);
#endif
	if (c->queue != HPC_QUEUE_RR || hse->time_slice)
		return;

	hse->time_slice = hpc_timeslice_ns(c);
	if (rq->hpc.nr_queued > 1) {
		requeue_task_hpc(rq, p);
		resched_curr(rq);
	}
}

static void task_fork_hpc(struct task_struct *p)
{
	hpc_entity_init(p, hpc_clock());
}

static void task_dead_hpc(struct task_struct *p)
{
	hpc_snap_clear(task_cpu(p), p);
}

static void switching_to_hpc(struct rq *rq, struct task_struct *p)
{
	/* Back from a priority boost: keep the iteration state. */
	if (!p->hpc.active)
		hpc_entity_init(p, hpc_clock());
}

static void switched_from_hpc(struct rq *rq, struct task_struct *p)
{
	/* Left the class on a dequeue that kept its mark (DEQUEUE_SAVE). */
	if (rq->hpc.resume == p)
		rq->hpc.resume = NULL;
	hpc_snap_clear(cpu_of(rq), p);
	if (!task_has_hpc_policy(p))
		p->hpc.active = 0;
}

static void switched_to_hpc(struct rq *rq, struct task_struct *p)
{
	if (!task_on_rq_queued(p))
		return;
	/*
	 * A running task that left a higher class (setscheduler, a PI
	 * de-boost) may now rank below a task queued there.
	 */
	if (task_current(rq, p) ||
	    sched_class_above(&hpc_sched_class, rq->curr->sched_class))
		resched_curr(rq);
}

static void prio_changed_hpc(struct rq *rq, struct task_struct *p,
			     int oldprio)
{
}

static unsigned int get_rr_interval_hpc(struct rq *rq,
					struct task_struct *task)
{
	const struct hpc_conf *c = hpc_conf();

	if (c->queue != HPC_QUEUE_RR)
		return 0;
	return usecs_to_jiffies(c->timeslice_us);
}

DEFINE_SCHED_CLASS(hpc) = {
	.enqueue_task		= enqueue_task_hpc,
	.dequeue_task		= dequeue_task_hpc,
	.yield_task		= yield_task_hpc,

	.wakeup_preempt		= wakeup_preempt_hpc,

	.pick_task		= pick_task_hpc,
	.put_prev_task		= put_prev_task_hpc,
	.set_next_task		= set_next_task_hpc,

#ifdef CONFIG_SMP
	.balance		= balance_hpc,
	.select_task_rq		= select_task_rq_hpc,
	.migrate_task_rq	= migrate_task_rq_hpc,
	.set_cpus_allowed	= set_cpus_allowed_common,
	.find_lock_rq		= hpc_find_lock_core,
	.rq_online		= rq_online_hpc,
	.rq_offline		= rq_offline_hpc,
#endif

	.task_tick		= task_tick_hpc,
	.task_fork		= task_fork_hpc,
	.task_dead		= task_dead_hpc,

	.switching_to		= switching_to_hpc,
	.switched_from		= switched_from_hpc,
	.switched_to		= switched_to_hpc,
	.prio_changed		= prio_changed_hpc,

	.get_rr_interval	= get_rr_interval_hpc,

	.update_curr		= update_curr_hpc,
};

void __init init_hpc_rq(struct rq *rq, int cpu)
{
	struct hpc_snap *s = per_cpu_ptr(&hpc_snaps, cpu);

	rq->hpc.queue = RB_ROOT_CACHED;
	rq->hpc.vtime = 0;
	rq->hpc.resume = NULL;
	rq->hpc.requeued = 0;
	rq->hpc.nr_queued = 0;
	rq->hpc.throttled = 0;
	hpc_backend->init_rq(rq, cpu);
#ifdef CONFIG_SMP
	/* In hard interrupt context also on PREEMPT_RT: it takes @rq's lock. */
	per_cpu(hpc_push_work, cpu) = IRQ_WORK_INIT_HARD(hpc_push_work_fn);
	/* Neighbours first, and not every CPU at the same place. */
	per_cpu(hpc_scans, cpu).next = cpu + 1;
	per_cpu(hpc_scans, cpu).push = -1;
#endif
	raw_spin_lock_init(&s->lock);
	s->pid = 0;

	hpc_params_default(&hpc_conf_boot.p);
}

/* The threads of @cpu's core among the CPUs of @on. */
static unsigned int hpc_hw_threads(int cpu, const struct cpumask *on)
{
	return cpumask_weight_and(topology_sibling_cpumask(cpu), on);
}

/*
 * The thread of @cpu's core that pairs with it (hpc_thread_sibling()), the
 * core's threads taken among the CPUs of @on; -1 if none.
 */
static int hpc_hw_sibling(int cpu, const struct cpumask *on)
{
	const struct cpumask *smt = topology_sibling_cpumask(cpu);
	int i, k = 0, nr = 0;

	for_each_cpu_and(i, smt, on) {
		if (i == cpu)
			k = nr;
		nr++;
	}
	k = hpc_thread_sibling(k, nr);
	if (k < 0)
		return -1;
	i = cpumask_nth_and(k, smt, on);
	return i < nr_cpu_ids ? i : -1;
}

/* @cpu's SMT sibling among the CPUs of @on (hpc_ctx_sibling()), or -1. */
static int hpc_pair_of(int cpu, const struct cpumask *on)
{
	int other = cpu ^ 1;
	bool other_free;

	if (!cpumask_test_cpu(cpu, on))
		return -1;
	other_free = other < nr_cpu_ids && cpumask_test_cpu(other, on) &&
		     hpc_hw_threads(cpu, on) <= 1 &&
		     hpc_hw_threads(other, on) <= 1;
	return hpc_ctx_sibling(cpu, hpc_hw_sibling(cpu, on), other_free);
}

/*
 * Pair the CPUs of @on into SMT cores (hpc_ctx_sibling()): the real
 * siblings two by two if the topology has them, else CPUs 2k and 2k + 1;
 * CPUs outside @on pair with none. Each CPU of @on whose sibling changed
 * recomputes its backend state. Under the CPU hotplug lock, or at boot.
 */
static void hpc_pair_cpus(const struct cpumask *on)
{
	int cpu, sib;

	for_each_possible_cpu(cpu) {
		sib = hpc_pair_of(cpu, on);
		if (sib == per_cpu(hpc_sibling, cpu))
			continue;
		WRITE_ONCE(per_cpu(hpc_sibling, cpu), sib);
		if (cpumask_test_cpu(cpu, on))
			hpc_backend->sibling_changed(cpu);
	}
}

/* After the CPU is online with its topology, before it is active. */
static int hpc_cpu_online(unsigned int cpu)
{
	hpc_pair_cpus(cpu_online_mask);
	return 0;
}

/* Once the CPU is inactive (rq_offline_hpc()), while it is still online. */
static struct cpumask hpc_pair_mask;

static int hpc_cpu_offline(unsigned int cpu)
{
	cpumask_andnot(&hpc_pair_mask, cpu_online_mask, cpumask_of(cpu));
	hpc_pair_cpus(&hpc_pair_mask);
	return 0;
}

/* The pairs of the CPUs online at boot, then after each hotplug. */
void __init init_sched_hpc_class(void)
{
	int cpu, ret;

	for_each_possible_cpu(cpu)
		per_cpu(hpc_sibling, cpu) = hpc_pair_of(cpu, cpu_online_mask);
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "sched/hpc:pairs",
					hpc_cpu_online, hpc_cpu_offline);
	if (ret < 0)
		pr_err("sched_hpc: SMT pairs not updated on hotplug: %d\n", ret);
}

/* /proc/<pid>/sched_hpc */
int proc_pid_sched_hpc(struct seq_file *m, struct pid_namespace *ns,
		       struct pid *pid, struct task_struct *p)
{
	struct hpc_task t = {};
	u64 throttled = 0, start = 0, now;
	unsigned int seq;
	u32 fixed = 0;
	bool hpc;

	/* Another user's iteration times are theirs, as its wchan is. */
	if (!ptrace_may_access(p, PTRACE_MODE_READ_FSCREDS))
		return -EACCES;
	/*
	 * A consistent copy without the runqueue lock, which a reader
	 * polling many tasks would otherwise take from their CPUs.
	 */
	do {
		seq = read_seqcount_begin(&p->hpc.seq);
		hpc = task_has_hpc_policy(p) && READ_ONCE(p->hpc.active);
		if (!hpc)
			continue;
		t = *hpc_it(p);
		fixed = READ_ONCE(p->rt_priority);
		throttled = p->hpc.throttled_ns;
		start = p->hpc.throttled ? p->hpc.throttle_start : 0;
	} while (read_seqcount_retry(&p->hpc.seq, seq));
	/* Throttled now: add the time since, by its CPU's clock. */
	if (start) {
		now = sched_clock_cpu(task_cpu(p));
		if (now > start)
			throttled += now - start;
	}

	if (!hpc) {
		seq_puts(m, "policy: other\n");
		return 0;
	}
	seq_puts(m, "policy: hpc\n");
	seq_printf(m, "iterations: %llu\n", t.nr_iter);
	seq_printf(m, "judgements: %llu\n", t.nr_judged);
	seq_printf(m, "last_run_ns: %llu\n", t.last_run);
	seq_printf(m, "last_wait_ns: %llu\n", t.last_wait);
	seq_printf(m, "last_util: %u\n", t.last_util);
	seq_printf(m, "global_util: %u\n", t.global_util);
	seq_printf(m, "heur_util: %u\n", t.heur_util);
	/* A fixed priority is the next one even before the task wakes up. */
	seq_printf(m, "prio: %u\n", fixed ? fixed : t.prio);
	seq_printf(m, "throttled_ns: %llu\n", throttled);
	seq_printf(m, "fixed_prio: %u\n", fixed);
	return 0;
}

/* sysfs: /sys/kernel/sched_hpc/ */

/* Apply @fn to a copy of the tunables; publish the copy if it is valid. */
static int hpc_conf_update(int (*fn)(struct hpc_conf *c, void *arg), void *arg)
{
	struct hpc_conf *old, *new;
	int ret;

	mutex_lock(&hpc_conf_mutex);
	old = rcu_dereference_protected(hpc_conf_ptr,
					lockdep_is_held(&hpc_conf_mutex));
	new = kmemdup(old, sizeof(*new), GFP_KERNEL);
	if (!new) {
		ret = -ENOMEM;
		goto unlock;
	}
	ret = fn(new, arg);
	if (!ret && hpc_params_check(&new->p, &hpc_backend->range))
		ret = -EINVAL;
	if (ret) {
		kfree(new);
		goto unlock;
	}
	rcu_assign_pointer(hpc_conf_ptr, new);
	if (old != &hpc_conf_boot)
		kfree_rcu(old, rcu);
unlock:
	mutex_unlock(&hpc_conf_mutex);
	return ret;
}

/* A copy of the current tunables, for the show methods. */
static void hpc_conf_read(struct hpc_conf *c)
{
	rcu_read_lock();
	*c = *rcu_dereference(hpc_conf_ptr);
	rcu_read_unlock();
}

/* One word of @buf (trailing newline allowed) into @word. */
static int hpc_parse_word(const char *buf, char *word, size_t size)
{
	if (strscpy(word, buf, size) < 0)
		return -EINVAL;
	strim(word);
	return 0;
}

/* The index of the word in @buf (blanks around it allowed) in @names. */
static int hpc_match_word(const char *buf, const char * const *names,
			  size_t n)
{
	char word[32];

	if (hpc_parse_word(buf, word, sizeof(word)))
		return -EINVAL;
	return match_string(names, n, word);
}

struct hpc_param_arg {
	int id;
	u32 val;
};

static int hpc_set_param(struct hpc_conf *c, void *arg)
{
	struct hpc_param_arg *a = arg;

	hpc_param_put(&c->p, a->id, a->val);
	return 0;
}

static ssize_t param_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	int id = hpc_param_lookup(attr->attr.name);
	struct hpc_conf c;
	u32 val;

	hpc_conf_read(&c);
	val = hpc_param_get(&c.p, id);
	if (id == HPC_P_HEURISTIC)
		return sysfs_emit(buf, "%s\n", val < HPC_HEUR_NR ?
				  hpc_heuristic_names[val] : "?");
	return sysfs_emit(buf, "%u\n", val);
}

static ssize_t param_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	struct hpc_param_arg a = { .id = hpc_param_lookup(attr->attr.name) };
	int ret;

	if (a.id < 0)
		return -EINVAL;
	if (a.id == HPC_P_HEURISTIC) {
		char word[16];
		int h;

		if (hpc_parse_word(buf, word, sizeof(word)))
			return -EINVAL;
		h = hpc_heuristic_lookup(word);
		if (h < 0)
			return -EINVAL;
		a.val = h;
	} else if (kstrtou32(buf, 10, &a.val)) {
		return -EINVAL;
	}
	ret = hpc_conf_update(hpc_set_param, &a);
	return ret ? ret : count;
}

static const char * const hpc_queue_names[] = {
	[HPC_QUEUE_RR]		= "rr",
	[HPC_QUEUE_FIFO]	= "fifo",
};

static ssize_t queue_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct hpc_conf c;

	hpc_conf_read(&c);
	return sysfs_emit(buf, "%s\n", hpc_queue_names[c.queue]);
}

static int hpc_set_queue(struct hpc_conf *c, void *arg)
{
	c->queue = *(u32 *)arg;
	return 0;
}

static ssize_t queue_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	int ret = hpc_match_word(buf, hpc_queue_names,
				 ARRAY_SIZE(hpc_queue_names));
	u32 q = ret;

	if (ret < 0)
		return ret;
	ret = hpc_conf_update(hpc_set_queue, &q);
	return ret ? ret : count;
}

/* The class's own numeric knobs: a field of struct hpc_conf and its range. */
struct hpc_u32_knob {
	const char *name;
	size_t offset;
	u32 min;
	u32 max;
};

static const struct hpc_u32_knob hpc_u32_knobs[] = {
	{ "timeslice_us", offsetof(struct hpc_conf, timeslice_us),
	  HPC_MIN_TIMESLICE_US, HPC_MAX_TIMESLICE_US },
	{ "emul_period_us", offsetof(struct hpc_conf, emul_period_us),
	  HPC_MIN_EMUL_PERIOD_US, HPC_MAX_EMUL_PERIOD_US },
};

struct hpc_u32_arg {
	const struct hpc_u32_knob *knob;
	u32 val;
};

static const struct hpc_u32_knob *hpc_u32_knob(const struct attribute *attr)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(hpc_u32_knobs); i++)
		if (!strcmp(hpc_u32_knobs[i].name, attr->name))
			return &hpc_u32_knobs[i];
	return NULL;
}

static int hpc_set_u32(struct hpc_conf *c, void *arg)
{
	struct hpc_u32_arg *a = arg;

	*(u32 *)((char *)c + a->knob->offset) = a->val;
	return 0;
}

static ssize_t u32_knob_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	const struct hpc_u32_knob *k = hpc_u32_knob(&attr->attr);
	struct hpc_conf c;

	if (!k)
		return -EINVAL;
	hpc_conf_read(&c);
	return sysfs_emit(buf, "%u\n", *(u32 *)((char *)&c + k->offset));
}

static ssize_t u32_knob_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	struct hpc_u32_arg a = { .knob = hpc_u32_knob(&attr->attr) };
	int ret;

	if (!a.knob || kstrtou32(buf, 10, &a.val) || a.val < a.knob->min ||
	    a.val > a.knob->max)
		return -EINVAL;
	ret = hpc_conf_update(hpc_set_u32, &a);
	return ret ? ret : count;
}

static ssize_t backend_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct hpc_conf c;

	hpc_conf_read(&c);
	return sysfs_emit(buf, "%s\n", c.mech ? hpc_backend->name : "none");
}

/*
 * Apply the priorities of this CPU's SCHED_HPC tasks again, after the
 * mechanism was switched (on_each_cpu(): interrupts are off). The running
 * task goes last: its priority is the CPU's. Switched off, every priority
 * is HPC_PRIO_OFF, which releases whatever the backend held (the x86
 * emulation's budgets and throttles).
 */
static void hpc_mech_reapply(void *unused)
{
	struct rq *rq = this_rq();
	struct sched_hpc_entity *hse;
	const struct hpc_conf *c;
	struct task_struct *p;
	struct rq_flags rf;

	rq_lock(rq, &rf);
	update_rq_clock(rq);
	c = hpc_conf();
	for (hse = hpc_queue_first(rq); hse; hse = hpc_queue_next(hse)) {
		p = hpc_task_of(hse);
		if (task_current(rq, p))
			continue;
		hse->applied_prio = hpc_mech_prio(p, c);
		hpc_backend->apply(rq, p, hse->applied_prio);
	}
	p = rq->curr;
	if (p->sched_class == &hpc_sched_class) {
		p->hpc.applied_prio = hpc_mech_prio(p, c);
		hpc_backend->apply(rq, p, p->hpc.applied_prio);
	} else if (rq->hpc.online) {
		hpc_backend->reset(rq, NULL);
	}
	rq_unlock(rq, &rf);
}

static int hpc_set_mech(struct hpc_conf *c, void *arg)
{
	c->mech = *(u32 *)arg;
	return 0;
}

/* The backend's name switches it on, "none" off; effective at once. */
static ssize_t backend_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	const char * const names[] = { "none", hpc_backend->name };
	int ret = hpc_match_word(buf, names, ARRAY_SIZE(names));
	u32 mech = ret;

	if (ret < 0)
		return ret;
	ret = hpc_conf_update(hpc_set_mech, &mech);
	if (ret)
		return ret;
	on_each_cpu(hpc_mech_reapply, NULL, 1);
	return count;
}

static ssize_t prio_range_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u %u\n", hpc_backend->range.min,
			  hpc_backend->range.max);
}

static ssize_t smt_pairs_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	int cpu, sib, len = 0;

	for_each_possible_cpu(cpu) {
		sib = hpc_cpu_sibling(cpu);
		if (sib > cpu)
			len += sysfs_emit_at(buf, len, "%d %d\n", cpu, sib);
	}
	return len;
}

#define HPC_PARAM_ATTR(_name) \
	static struct kobj_attribute hpc_attr_##_name = \
		__ATTR(_name, 0644, param_show, param_store)

HPC_PARAM_ATTR(low_util);
HPC_PARAM_ATTR(high_util);
HPC_PARAM_ATTR(min_prio);
HPC_PARAM_ATTR(max_prio);
HPC_PARAM_ATTR(global_weight);
HPC_PARAM_ATTR(last_weight);
HPC_PARAM_ATTR(heuristic);
HPC_PARAM_ATTR(min_wait_us);

static struct kobj_attribute hpc_attr_queue = __ATTR_RW(queue);
static struct kobj_attribute hpc_attr_timeslice_us =
	__ATTR(timeslice_us, 0644, u32_knob_show, u32_knob_store);
static struct kobj_attribute hpc_attr_emul_period_us =
	__ATTR(emul_period_us, 0644, u32_knob_show, u32_knob_store);
static struct kobj_attribute hpc_attr_backend = __ATTR_RW(backend);
static struct kobj_attribute hpc_attr_prio_range = __ATTR_RO(prio_range);
static struct kobj_attribute hpc_attr_smt_pairs = __ATTR_RO(smt_pairs);

static struct attribute *hpc_attrs[] = {
	&hpc_attr_low_util.attr,
	&hpc_attr_high_util.attr,
	&hpc_attr_min_prio.attr,
	&hpc_attr_max_prio.attr,
	&hpc_attr_global_weight.attr,
	&hpc_attr_last_weight.attr,
	&hpc_attr_heuristic.attr,
	&hpc_attr_min_wait_us.attr,
	&hpc_attr_queue.attr,
	&hpc_attr_timeslice_us.attr,
	&hpc_attr_emul_period_us.attr,
	&hpc_attr_backend.attr,
	&hpc_attr_prio_range.attr,
	&hpc_attr_smt_pairs.attr,
	NULL,
};

static const struct attribute_group hpc_attr_group = {
	.name	= "sched_hpc",
	.attrs	= hpc_attrs,
};

static int __init hpc_sysfs_init(void)
{
	return sysfs_create_group(kernel_kobj, &hpc_attr_group);
}
late_initcall(hpc_sysfs_init);
