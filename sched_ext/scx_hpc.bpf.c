/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_hpc: the SCHED_HPC policy as a sched_ext scheduler (Linux 6.12 API).
 *
 * Partial mode: only tasks whose policy is SCHED_EXT (7) are scheduled here;
 * everything else stays in the fair class.
 *
 * Policy: the policy core (kernel/hpc-core/hpc_policy.c, hpc_smt.c) is
 * compiled into this program unchanged and does all iteration accounting,
 * the heuristics and the rule. This file only feeds it events:
 *   ops.runnable   wake-up          -> hpc_on_wakeup(t, now, params,
 *                                      sibling snapshot, fixed priority)
 *   ops.quiescent  SCX_DEQ_SLEEP    -> hpc_task_sleep() (not for a lock: hpc_block_is_wait())
 *   ops.tick       running task     -> hpc_on_tick(t, now, params,
 *                                      sibling snapshot, fixed priority)
 * A task hpcctl fixed a priority for (the fixed_prios map, hpcctl --backend
 * scx prio PID P) is accounted the same way, but keeps P whatever the core
 * decides (hpc_task_next_prio()).
 * Each CPU publishes a snapshot of the HPC task that last ran or woke there
 * (struct snap, copied under a bpf_spin_lock: the writers of one slot are
 * the events of tasks on that CPU, which can run on another CPU for a remote
 * wake-up, so a plain copy could be torn; the lock costs two atomics per
 * event and keeps the core's view of the sibling consistent).
 *
 * Queueing: one DSQ per CPU (id = CPU), in the core's queue order
 * (hpc_queue.h): RR with a tunable slice (slice_us), by virtual time, a
 * waking task placed at most a small credit before the queue and
 * preempting the running task (SCX_KICK_PREEMPT) when it is ahead by more
 * than half of it, unless its waker said it sleeps next (a sync wake-up:
 * no credit, no preemption; hpc_sync_wake_vtime(), hpc_wake_preempts());
 * or FIFO (infinite slice, in the order the tasks
 * became runnable, a task runs until it sleeps or its CPU is throttled).
 * ops.select_cpu places an unpinned waking task on the
 * allowed CPU with the fewest queued + running HPC tasks, among those on
 * the emulated core with the fewest (prev CPU on a tie), keeping it where
 * it was while no CPU has two fewer, as the kernel class does (which, in
 * addition, pushes at its tick to a CPU with two fewer: scx_hpc has no such
 * push); ops.dispatch pulls from the busiest other CPU's queue when its own
 * is empty; once per period, a task of a core whose two contexts are both
 * busy moves to an idle core (core_balance()). The rules are the policy
 * core's (hpc_queue.h), shared with the kernel class.
 *
 * Mechanism: x86 SMT emulation by bandwidth. CPUs 2k and 2k+1 form an
 * emulated core. In every period (period_us, aligned on the monotonic
 * clock) a CPU whose sibling is busy may run HPC tasks for
 * hpc_smt_speed(own prio, sibling prio, true) / 1000 of the period; the
 * sibling is busy while it runs an HPC task, has some queued or is
 * throttled. An idle sibling whose last task sleeps there in a wait is a
 * waiting context: hpc_smt_speed(own prio, sibling prio, false). Beside an
 * idle sibling that holds no task a CPU runs unthrottled (single-thread
 * mode), as in the kernel class. A CPU
 * that used its budget is throttled: ops.tick ends the running task's
 * slice, ops.dispatch stops handing out HPC tasks and a task that would
 * keep running (SCX_ENQ_LAST) is queued instead, until the next period; a
 * BPF timer at each period boundary kicks the throttled CPUs so that they
 * dispatch again.
 */
#include <scx/common.bpf.h>

/*
 * The policy core (kernel/hpc-core/, on the include path), compiled in. Its
 * functions have internal linkage here (HPC_API, hpc_types.h), so that the
 * verifier checks them inline with their callers. BPF calls take at most
 * five arguments and the core's static hpc_close() has six: inline the
 * whole core into its callers (it is small); the parts this program does
 * not call are dropped without a warning.
 */
#pragma clang attribute push(__attribute__((always_inline)), apply_to = function)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "hpc_policy.c"
#include "hpc_smt.c"
#pragma clang diagnostic pop
#pragma clang attribute pop
#include "hpc_queue.h"
#include "scx_hpc.h"


char _license[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile u32 nr_cpus = 1;		/* possible CPUs, <= SCX_HPC_MAX_CPUS */
/* The CPU sharing an emulated core with each CPU, -1 for none: the policy
 * core's pairing rule (hpc_ctx_sibling()), applied by the loader to the
 * topology. */
const volatile s32 cpu_sibling[SCX_HPC_MAX_CPUS];

struct scx_hpc_exit uei SEC(".data");

#define MIN_SLICE_NS	(100 * 1000ULL)

/* ------------------------------------------------------------------ maps */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct scx_hpc_params);
} params_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCX_HPC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct scx_hpc_cpu);
} cpu_ctx SEC(".maps");

/* Published snapshot of the HPC task of each CPU (see the top comment). */
struct snap {
	struct bpf_spin_lock lock;
	u32 pid;		/* 0: none */
	struct hpc_task t;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCX_HPC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct snap);
} snaps SEC(".maps");

struct task_ctx {
	struct hpc_task t;
	u64 sleep_start;	/* when the task last went to sleep */
	u64 throttled_at;	/* when it was held back by its CPU's budget, 0: not */
	u64 throttled_ns;
	u64 run_start;
	u64 run_ns;
	u64 wake_run_ns;	/* run_ns when it last woke up */
	u64 vtime;		/* queue order (hpc_queue.h) */
	s32 vtime_cpu;		/* the CPU whose queue vtime is relative to */
	u32 preempted;		/* held back by the budget: keeps its place */
	u32 wake_sync;		/* placed by a sync wake-up, not queued yet */
	s32 snap_cpu;		/* the CPU whose snapshot it last published */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SCX_HPC_MAX_TASKS);
	__type(key, u32);
	__type(value, struct scx_hpc_task_info);
} task_info SEC(".maps");

struct period_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct period_timer);
} timers SEC(".maps");

/* Fixed priorities (hpcctl --backend scx prio PID P): pid -> P in the
 * emulation's range, checked by hpcctl. Absent: the core decides. A task's
 * entry goes when it leaves scx_hpc; a child forked by a fixed task gets
 * one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SCX_HPC_MAX_TASKS);
	__type(key, u32);	/* pid (thread id) */
	__type(value, u32);	/* fixed priority */
} fixed_prios SEC(".maps");

/* Following cgroups and process trees: see scx_hpc.h. Written by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SCX_HPC_MAX_TAKE_CGROUPS);
	__type(key, u64);	/* cgroup id (cgroup v2 inode number) */
	__type(value, u8);
} take_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SCX_HPC_MAX_TAKE_TGIDS);
	__type(key, u32);	/* tgid */
	__type(value, u8);
} take_tgids SEC(".maps");

/* Not a ring buffer: libbpf's consumer needs epoll, which small kernels
 * (the test guest's) leave out. The loader drains the queue every 100 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 4096);
	__type(value, struct scx_hpc_take_event);
} take_events SEC(".maps");

/* --------------------------------------------------------------- helpers */

static struct scx_hpc_params *get_params(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&params_map, &zero);
}

static struct scx_hpc_cpu *get_cpu(s32 cpu)
{
	u32 key = cpu;

	if (cpu < 0 || key >= nr_cpus || key >= SCX_HPC_MAX_CPUS)
		return NULL;
	return bpf_map_lookup_elem(&cpu_ctx, &key);
}

static struct task_ctx *get_task(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* The fixed priority of @pid, 0 if the policy core decides. */
static u32 fixed_prio(u32 pid)
{
	u32 *f = bpf_map_lookup_elem(&fixed_prios, &pid);

	return f ? *f : 0;
}

/* The priority @p computes with (hpc_task_next_prio(): a fixed one, else
 * the core's within the knobs). */
static u32 task_prio(const struct scx_hpc_params *P, struct task_struct *p,
		     struct task_ctx *tc)
{
	return hpc_task_next_prio(&tc->t, &P->core, fixed_prio(p->pid));
}

static u64 period_ns(const struct scx_hpc_params *P)
{
	u64 per = (u64)P->period_us * 1000;

	return per ? per : HPC_DEF_EMUL_PERIOD_US * 1000ULL;
}

static u64 slice_ns(const struct scx_hpc_params *P)
{
	if (P->fifo)
		return SCX_SLICE_INF;
	return P->slice_us ? (u64)P->slice_us * 1000 : SCX_SLICE_DFL;
}

/* @cpu's snapshot slot, NULL for a CPU out of range. */
static struct snap *snap_of(s32 cpu)
{
	u32 key = cpu;

	if (key >= nr_cpus || key >= SCX_HPC_MAX_CPUS)
		return NULL;
	return bpf_map_lookup_elem(&snaps, &key);
}

static void snap_clear(s32 cpu, u32 pid);

/*
 * Publish @p's state as the snapshot of @cpu: always when @p runs there
 * (@own), else only if the snapshot shows @p or nothing (the snapshot is
 * the task that ran there last, as in the kernel class). A task that moved
 * leaves the CPU it was published on.
 */
static void snap_publish(s32 cpu, struct task_struct *p, struct task_ctx *tc,
			 bool own)
{
	struct snap *s = snap_of(cpu);

	if (!s)
		return;
	if (tc->snap_cpu != cpu)
		snap_clear(tc->snap_cpu, p->pid);
	tc->snap_cpu = cpu;
	bpf_spin_lock(&s->lock);
	if (own || !s->pid || s->pid == p->pid) {
		s->pid = p->pid;
		s->t = tc->t;
	}
	bpf_spin_unlock(&s->lock);
}

_Static_assert(!(SCX_HPC_MAX_CPUS & (SCX_HPC_MAX_CPUS - 1)),
	       "SCX_HPC_MAX_CPUS masks an index: a power of two");

/* The CPU sharing @cpu's emulated core, -1 if none. */
static s32 sibling_of(s32 cpu)
{
	u32 i = cpu;

	if (i >= nr_cpus || i >= SCX_HPC_MAX_CPUS)
		return -1;
	/* the compiler must not drop the mask (it knows i < 64) nor move
	 * the access above the check: the verifier needs the bound here */
	barrier_var(i);
	return cpu_sibling[i & (SCX_HPC_MAX_CPUS - 1)];
}

/* Copy the sibling's snapshot into @out; false if it has none (or is @self). */
static bool snap_read(s32 cpu, u32 self, struct hpc_task *out)
{
	s32 sib = sibling_of(cpu);
	struct snap *s = sib < 0 ? NULL : snap_of(sib);
	u32 pid;

	if (!s)
		return false;
	bpf_spin_lock(&s->lock);
	pid = s->pid;
	*out = s->t;
	bpf_spin_unlock(&s->lock);
	return pid && pid != self;
}

/* Does the task that ran last on @cpu sleep there in a wait? */
static bool snap_waits(s32 cpu)
{
	struct snap *s = snap_of(cpu);
	bool waits;

	if (!s)
		return false;
	bpf_spin_lock(&s->lock);
	waits = s->pid && hpc_task_waits(&s->t);
	bpf_spin_unlock(&s->lock);
	return waits;
}

static void snap_clear(s32 cpu, u32 pid)
{
	struct snap *s = snap_of(cpu);

	if (!s)
		return;
	bpf_spin_lock(&s->lock);
	if (s->pid == pid)
		s->pid = 0;
	bpf_spin_unlock(&s->lock);
}

static void publish_info(struct task_struct *p, struct task_ctx *tc, s32 cpu,
			 u32 exited)
{
	struct scx_hpc_task_info ti = {};
	u32 pid = p->pid;

	ti.pid = pid;
	ti.tgid = p->tgid;
	bpf_probe_read_kernel_str(ti.comm, sizeof(ti.comm), p->comm);
	ti.prio = tc->t.prio;
	ti.prev_prio = tc->t.prev_prio;
	ti.fixed_prio = fixed_prio(pid);
	ti.last_util = tc->t.last_util;
	ti.global_util = tc->t.global_util;
	ti.heur_util = tc->t.heur_util;
	ti.cpu = cpu;
	ti.exited = exited;
	ti.nr_iter = tc->t.nr_iter;
	ti.nr_judged = tc->t.nr_judged;
	ti.last_run_ns = tc->t.last_run;
	ti.last_wait_ns = tc->t.last_wait;
	ti.throttled_ns = tc->throttled_ns;
	ti.run_ns = tc->run_ns;
	bpf_map_update_elem(&task_info, &pid, &ti, BPF_ANY);
}

/* Budget (ns of HPC run time) of @cpu in the current period. */
static u64 cpu_budget(s32 cpu, struct scx_hpc_cpu *c, u64 per)
{
	s32 sib = sibling_of(cpu);
	struct scx_hpc_cpu *sc = sib >= 0 ? get_cpu(sib) : NULL;
	struct scx_hpc_params *P = get_params();
	bool sib_busy;
	u32 holds;

	/* backend none: the priorities are not applied, nothing held back */
	if (!sc || !sc->online || !P || P->no_emul) {
		c->budget_ns = per;
		return per;
	}
	/* Busy: it has HPC work, running or held back. Counting a throttled
	 * sibling whatever its queue covers the window in which its task has
	 * stopped but is not queued yet. */
	sib_busy = sc->running || sc->throttled ||
		   scx_bpf_dsq_nr_queued(sib) > 0;
	/*
	 * An idle sibling whose last task sleeps there in a wait is the
	 * model's waiting context; one that holds no task leaves this one in
	 * single-thread mode (hpc_smt_sib_holds()).
	 */
	holds = hpc_smt_sib_holds(sib_busy, !sib_busy && snap_waits(sib));
	c->budget_ns = hpc_smt_budget(per, hpc_smt_emul_share_of(c->cur_prio,
								  sc->cur_prio,
								  holds)) +
		       c->owed_ns;
	return c->budget_ns;
}

/*
 * Start a new budget if the period changed since the CPU last looked. The
 * budget is enforced at ticks (and slice ends), so a CPU can overrun it: the
 * overrun of the period just ended is paid back in the new one, which keeps
 * the long-run share at the model's whatever the tick spacing. A throttled
 * CPU that looks late (its kick or tick came late) has lost the time since
 * the period began: what that cost its tasks is owed to the next period
 * (hpc_smt_owed()).
 */
static void refill(struct scx_hpc_cpu *c, u64 now, u64 per)
{
	u64 idx = now / per, start = idx * per, carry = 0, owed = 0;
	bool next = idx == c->period_idx + 1;

	if (idx == c->period_idx)
		return;
	if (c->running && c->run_start < start) {
		/* the run up to the boundary belongs to the old period */
		if (next)
			c->consumed_ns += start - c->run_start;
		c->run_start = start;
	}
	if (next && c->budget_ns) {
		carry = hpc_smt_carry(c->consumed_ns, c->budget_ns, per);
		owed = hpc_smt_owed(c->consumed_ns, c->budget_ns, c->late_ns,
				    per);
	}
	c->late_ns = c->throttled ? now - start : 0;
	if (c->throttled && carry < c->budget_ns) {
		c->throttled_ns += now - c->throttle_start;
		c->throttled = 0;
	}
	c->period_idx = idx;
	c->consumed_ns = carry;
	c->owed_ns = owed;
}

static void charge(struct scx_hpc_cpu *c, u64 now)
{
	if (c->running && now > c->run_start) {
		c->consumed_ns += now - c->run_start;
		c->run_start = now;
	}
}

/* --------------------------------------------------------------- queue */

/*
 * Queue @p on @cpu's DSQ in the order of hpc_queue.h. Round-robin: by
 * virtual time, placed against @cpu's queue, with no credit after a @sync
 * wake-up. FIFO: by the time it became runnable. A task its CPU's budget
 * held back keeps its place.
 */
static __always_inline void queue_task(struct task_struct *p,
				       struct task_ctx *tc,
				       const struct scx_hpc_params *P,
				       s32 cpu, u64 slice, u64 flags, bool sync)
{
	struct scx_hpc_cpu *c = get_cpu(cpu);

	if (!c || !tc) {
		/* cannot happen; never lose a task */
		scx_bpf_dispatch(p, SCX_DSQ_GLOBAL, slice, flags);
		return;
	}
	if (tc->preempted) {
		tc->preempted = 0;
	} else if (P->fifo) {
		tc->vtime = bpf_ktime_get_ns();
	} else {
		struct scx_hpc_cpu *from = get_cpu(tc->vtime_cpu);

		/* its place relative to the queue moves with it */
		if (from && tc->vtime_cpu != cpu)
			tc->vtime += c->vtime - from->vtime;
		tc->vtime = hpc_queue_vtime(tc->vtime, c->vtime, slice,
					    flags & SCX_ENQ_WAKEUP ?
					    hpc_wake_burst(&tc->wake_run_ns,
							   tc->run_ns) : 0);
		if (sync)
			tc->vtime = hpc_sync_wake_vtime(tc->vtime, c->vtime);
	}
	tc->vtime_cpu = cpu;
	scx_bpf_dispatch_vtime(p, cpu, slice, tc->vtime, flags);
}

/*
 * A task woke up onto @cpu's queue at @vtime (@sync: by a sync wake-up):
 * preempt the HPC task running there if hpc_wake_preempts() says so
 * (round-robin only). Unlike the kernel class, no tick checks again later:
 * a tick that ends the running task's slice for a woken task cut
 * hackbench's slices to one tick and made it up to 4.6 times slower here
 * (the woken task then runs at the running one's slice end, or when it
 * sleeps).
 */
static void wake_preempt(s32 cpu, struct scx_hpc_cpu *c, u64 vtime, u64 slice,
			 bool sync)
{
	u64 now = bpf_ktime_get_ns();
	u64 curr = c->cur_vtime + (now > c->cur_start ? now - c->cur_start : 0);

	if (!c->running || c->throttled ||
	    !hpc_wake_preempts(vtime, curr, now - c->cur_start, slice, sync))
		return;
	__sync_fetch_and_add(&c->nr_wake_preempt, 1);
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
}

/* --------------------------------------------------------------- ops */

/*
 * HPC tasks on @cpu: queued + running, a throttled CPU counts one more; 0
 * for a CPU that does not exist or is offline.
 */
static u64 cpu_load(s32 cpu, struct scx_hpc_cpu *c)
{
	if (!c || !c->online || cpu >= nr_cpus)
		return 0;
	return (u64)scx_bpf_dsq_nr_queued(cpu) + c->running + c->throttled;
}

/* HPC tasks on the emulated core of @cpu (both contexts). */
static u64 core_load(s32 cpu)
{
	s32 sib = sibling_of(cpu);

	return cpu_load(cpu, get_cpu(cpu)) +
	       (sib >= 0 ? cpu_load(sib, get_cpu(sib)) : 0);
}

/* Is @cpu a CPU @p may be placed on now? */
static struct scx_hpc_cpu *place_ok(struct task_struct *p, s32 cpu)
{
	struct scx_hpc_cpu *c;

	if (cpu < 0 || cpu >= nr_cpus || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return NULL;
	c = get_cpu(cpu);
	return c && c->online ? c : NULL;
}

/* The policy core's placement (hpc_place_better(), hpc_wake_stays()). */
s32 BPF_STRUCT_OPS(hpc_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	bool ttwu = wake_flags & SCX_WAKE_TTWU;
	u32 bn = -1U, bc = -1U, prev_n = 0, n, c;
	struct task_ctx *tc = get_task(p);
	struct scx_hpc_cpu *sc;
	s32 best = -1, cpu;

	/* read by hpc_enqueue() (a pinned task wakes without ops.select_cpu) */
	if (tc)
		tc->wake_sync = ttwu && (wake_flags & SCX_WAKE_SYNC);
	if (p->nr_cpus_allowed == 1)
		return prev_cpu;
	sc = place_ok(p, prev_cpu);
	if (sc) {
		best = prev_cpu;
		bn = prev_n = cpu_load(prev_cpu, sc);
		bc = core_load(prev_cpu);
		if (ttwu && !prev_n)
			return prev_cpu;
	}
	bpf_for(cpu, 0, SCX_HPC_MAX_CPUS) {
		if (cpu >= nr_cpus)
			break;
		sc = cpu == prev_cpu ? NULL : place_ok(p, cpu);
		if (!sc)
			continue;
		n = cpu_load(cpu, sc);
		c = core_load(cpu);
		if (hpc_place_better(n, c, bn, bc)) {
			best = cpu;
			bn = n;
			bc = c;
		}
	}
	if (best < 0 || (ttwu && best != prev_cpu && prev_n &&
			 hpc_wake_stays(prev_n, bn)))
		return prev_cpu;
	return best;
}

void BPF_STRUCT_OPS(hpc_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct scx_hpc_params *P = get_params();
	struct scx_hpc_cpu *c = get_cpu(cpu);
	struct task_ctx *tc = get_task(p);
	bool sync = false;
	u64 slice;

	if (tc) {
		/* this enqueue's wake-up was a sync one (hpc_select_cpu()) */
		sync = tc->wake_sync;
		tc->wake_sync = 0;
	}
	if (!P || !c) {
		/* cannot happen; never lose a task */
		scx_bpf_dispatch(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
		return;
	}
	slice = slice_ns(P);
	if (c->shed_to) {
		s32 to = c->shed_to - 1;

		/* the core balance asked this CPU to give its task away */
		c->shed_to = 0;
		if (!bpf_cpumask_test_cpu(to, p->cpus_ptr)) {
			/* do not ask again while this task runs here */
			c->shed_skip = p->pid;
		} else if (to != cpu && !core_load(to)) {
			__sync_fetch_and_add(&c->nr_move, 1);
			queue_task(p, tc, P, to, slice, enq_flags & ~SCX_ENQ_LAST,
				   sync);
			scx_bpf_kick_cpu(to, SCX_KICK_IDLE);
			return;
		}
	}
	if (enq_flags & SCX_ENQ_LAST) {
		refill(c, bpf_ktime_get_ns(), period_ns(P));
		if (!c->throttled) {
			__sync_fetch_and_add(&c->nr_direct, 1);
			scx_bpf_dispatch(p, SCX_DSQ_LOCAL, slice, enq_flags);
			return;
		}
	}
	queue_task(p, tc, P, cpu, slice, enq_flags, sync);
	if ((enq_flags & SCX_ENQ_WAKEUP) && !P->fifo && tc)
		wake_preempt(cpu, c, tc->vtime, slice, sync);
}

void BPF_STRUCT_OPS(hpc_dispatch, s32 cpu, struct task_struct *prev)
{
	struct scx_hpc_params *P = get_params();
	struct scx_hpc_cpu *c = get_cpu(cpu);
	s32 i, best = -1, sib = sibling_of(cpu);
	u32 bw = 0, bl = 0;

	if (!P || !c)
		return;
	refill(c, bpf_ktime_get_ns(), period_ns(P));
	if (c->throttled)
		return;
	if (scx_bpf_consume(cpu))
		return;

	/* Nothing of our own: pull by the core's rule (hpc_pull_better()). */
	bpf_for(i, 0, SCX_HPC_MAX_CPUS) {
		struct scx_hpc_cpu *o;
		u32 w, l;

		if (i >= nr_cpus)
			break;
		if (i == cpu)
			continue;
		o = get_cpu(i);
		/* the sibling's held-back tasks wait for the core's budget */
		if (!o || (o->throttled && i == sib))
			continue;
		w = scx_bpf_dsq_nr_queued(i);
		/* an offline CPU's queue runs nowhere: it counts one more */
		l = o->online ? cpu_load(i, o) : w + 1;
		if (hpc_pull_better(w, l, bw, bl)) {
			bw = w;
			bl = l;
			best = i;
		}
	}
	if (best >= 0 && scx_bpf_consume(best))
		__sync_fetch_and_add(&c->nr_steal, 1);
}

void BPF_STRUCT_OPS(hpc_runnable, struct task_struct *p, u64 enq_flags)
{
	struct scx_hpc_params *P = get_params();
	struct task_ctx *tc = get_task(p);
	s32 cpu = scx_bpf_task_cpu(p);
	struct scx_hpc_cpu *c = get_cpu(cpu);
	struct hpc_task peer;
	u64 now = bpf_ktime_get_ns();
	bool sib;

	if (!P || !tc)
		return;
	if (tc->t.state == HPC_TASK_SLEEPING) {
		sib = snap_read(cpu, p->pid, &peer);
		if (hpc_on_wakeup(&tc->t, now, &P->core, sib ? &peer : NULL,
				  fixed_prio(p->pid))) {
			if (c)
				__sync_fetch_and_add(&c->nr_iter, 1);
			publish_info(p, tc, cpu, 0);
		}
	}
	snap_publish(cpu, p, tc, false);
}

void BPF_STRUCT_OPS(hpc_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tc;
	u64 now;

	if (!(deq_flags & SCX_DEQ_SLEEP) || !hpc_block_is_wait(p->__state))
		return;
	tc = get_task(p);
	if (!tc)
		return;
	now = bpf_ktime_get_ns();
	hpc_task_sleep(&tc->t, now);
	tc->sleep_start = now;
	snap_publish(scx_bpf_task_cpu(p), p, tc, false);
}

void BPF_STRUCT_OPS(hpc_running, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct scx_hpc_params *P = get_params();
	struct scx_hpc_cpu *c = get_cpu(cpu);
	struct task_ctx *tc = get_task(p);
	u64 now = bpf_ktime_get_ns();
	u64 per, budget, rem;

	if (!P || !c || !tc)
		return;
	per = period_ns(P);
	refill(c, now, per);
	c->running = 1;
	c->run_start = now;
	c->cur_prio = task_prio(P, p, tc);
	c->cur_pid = p->pid;
	c->nr_running++;
	if (tc->vtime_cpu != cpu) {
		/* pulled from another CPU's queue: relative to this one now */
		struct scx_hpc_cpu *from = get_cpu(tc->vtime_cpu);

		if (from)
			tc->vtime += c->vtime - from->vtime;
		tc->vtime_cpu = cpu;
	}
	c->vtime = hpc_queue_advance(c->vtime, tc->vtime);
	c->cur_vtime = tc->vtime;
	c->cur_start = now;
	if (tc->throttled_at) {
		tc->throttled_ns += now - tc->throttled_at;
		tc->throttled_at = 0;
	}
	tc->run_start = now;

	/* Run no longer than the budget left in this period. */
	budget = cpu_budget(cpu, c, per);
	rem = budget > c->consumed_ns ? budget - c->consumed_ns : 0;
	if (rem < MIN_SLICE_NS)
		rem = MIN_SLICE_NS;
	if (rem < p->scx.slice)
		p->scx.slice = rem;
	snap_publish(cpu, p, tc, true);
}

void BPF_STRUCT_OPS(hpc_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct scx_hpc_params *P = get_params();
	struct scx_hpc_cpu *c = get_cpu(cpu);
	struct task_ctx *tc = get_task(p);
	u64 now = bpf_ktime_get_ns();
	u64 per;

	if (!P || !c)
		return;
	per = period_ns(P);
	refill(c, now, per);
	charge(c, now);
	/* throttled is set before running drops: the sibling always sees one */
	if (!c->throttled && c->consumed_ns >= cpu_budget(cpu, c, per)) {
		c->throttled = 1;
		c->throttle_start = now;
		c->nr_throttle++;
	}
	c->running = 0;
	if (!tc)
		return;
	if (now > tc->run_start) {
		tc->run_ns += now - tc->run_start;
		c->run_ns += now - tc->run_start;
		if (!P->fifo)
			tc->vtime += now - tc->run_start;
	}
	if (c->throttled && runnable) {
		tc->throttled_at = now;
		tc->preempted = 1;
	}
}

void BPF_STRUCT_OPS(hpc_tick, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct scx_hpc_params *P = get_params();
	struct scx_hpc_cpu *c = get_cpu(cpu);
	struct task_ctx *tc = get_task(p);
	struct hpc_task peer;
	u64 now = bpf_ktime_get_ns();
	u64 per;
	bool sib;

	if (!P || !c || !tc)
		return;
	per = period_ns(P);
	refill(c, now, per);
	charge(c, now);

	sib = snap_read(cpu, p->pid, &peer);
	if (hpc_on_tick(&tc->t, now, &P->core, sib ? &peer : NULL,
			fixed_prio(p->pid))) {
		c->nr_sib_judged++;
		publish_info(p, tc, cpu, 0);
	}
	c->cur_prio = task_prio(P, p, tc);
	snap_publish(cpu, p, tc, true);

	if (c->consumed_ns >= cpu_budget(cpu, c, per))
		p->scx.slice = 0;
}

void BPF_STRUCT_OPS(hpc_set_cpumask, struct task_struct *p,
		    const struct cpumask *cpumask)
{
	struct scx_hpc_cpu *c = get_cpu(scx_bpf_task_cpu(p));

	/* the new affinity may allow the move the old one refused */
	if (c && c->shed_skip == p->pid)
		c->shed_skip = 0;
}

s32 BPF_STRUCT_OPS(hpc_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_struct *parent;
	u32 pid, f;

	if (!bpf_task_storage_get(&task_ctxs, p, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE))
		return -ENOMEM;
	/* Forked by a fixed task (in its context): the child inherits its
	 * fixed priority, unless the parent asked for SCHED_RESET_ON_FORK. */
	if (!args->fork)
		return 0;
	parent = bpf_get_current_task_btf();
	f = fixed_prio(parent->pid);
	if (f && !BPF_CORE_READ_BITFIELD_PROBED(parent, sched_reset_on_fork)) {
		pid = p->pid;
		bpf_map_update_elem(&fixed_prios, &pid, &f, BPF_ANY);
	}
	return 0;
}

void BPF_STRUCT_OPS(hpc_enable, struct task_struct *p)
{
	struct scx_hpc_params *P = get_params();
	struct task_ctx *tc = get_task(p);

	if (!P || !tc)
		return;
	hpc_task_init(&tc->t, bpf_ktime_get_ns(), &P->core);
	task_prio(P, p, tc);
	tc->snap_cpu = -1;
	tc->throttled_at = 0;
	tc->throttled_ns = 0;
	tc->run_ns = 0;
	tc->wake_run_ns = 0;
	tc->preempted = 0;
	publish_info(p, tc, scx_bpf_task_cpu(p), 0);
}

void BPF_STRUCT_OPS(hpc_disable, struct task_struct *p)
{
	struct task_ctx *tc = get_task(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u32 pid = p->pid;

	if (tc)
		publish_info(p, tc, cpu, 1);
	/* its snapshot is only ever on the CPU it last published on */
	snap_clear(tc ? tc->snap_cpu : cpu, pid);
	/* a fixed priority belongs to the task while it is under scx_hpc */
	bpf_map_delete_elem(&fixed_prios, &pid);
}

void BPF_STRUCT_OPS(hpc_cpu_online, s32 cpu)
{
	struct scx_hpc_cpu *c = get_cpu(cpu);

	if (c)
		c->online = 1;
}

void BPF_STRUCT_OPS(hpc_cpu_offline, s32 cpu)
{
	struct scx_hpc_cpu *c = get_cpu(cpu);

	if (c) {
		c->online = 0;
		c->running = 0;
		c->throttled = 0;
	}
}

/*
 * Core balance, once per period, by the core's rules (hpc_core_gives(),
 * hpc_core_giver(), as the kernel class). Placement (select_cpu) and pulling
 * (dispatch) move only tasks that wake up or that an idle CPU looks for; two
 * tasks that never sleep can stay on the two contexts of one emulated core,
 * each at the model's shared speed, while another core idles (a forking
 * parent that then waits counted as load when they were placed). When a core
 * has HPC work on both contexts and another core has none: if a task of the
 * busy core waits in a queue (held back by the budget, or behind another),
 * kick an idle CPU, whose ops.dispatch pulls it; else ask a running task to
 * move: its CPU is kicked and ops.enqueue hands the task to the idle CPU.
 * Only a core with work on each context gives to a core with none, so a move
 * never makes the count worse and no task moves back and forth.
 */
static void core_balance(void)
{
	s32 cpu, idle = -1, from = -1;
	bool waiting = false;

	bpf_for(cpu, 0, SCX_HPC_MAX_CPUS) {
		struct scx_hpc_cpu *c, *sc;
		s32 sib;

		if (cpu >= nr_cpus)
			break;
		c = get_cpu(cpu);
		/* a request of the last period not taken up is dropped */
		if (c)
			c->shed_to = 0;
		/* each core once, from its first CPU */
		sib = sibling_of(cpu);
		if (sib < cpu)
			continue;
		sc = get_cpu(sib);
		if (!c || !sc || !c->online || !sc->online)
			continue;
		if (!core_load(cpu)) {
			if (idle < 0)
				idle = cpu;
			continue;
		}
		/* to an idle core, if one is found (hpc_core_gives()) */
		if (!hpc_core_gives(cpu_load(cpu, c), cpu_load(sib, sc), 0))
			continue;
		if (scx_bpf_dsq_nr_queued(cpu) || scx_bpf_dsq_nr_queued(sib)) {
			waiting = true;
		} else if (from < 0) {
			s32 g = hpc_core_giver(sib, cpu) ? sib : cpu;
			struct scx_hpc_cpu *gc = g == sib ? sc : c;

			if (gc->running && gc->cur_pid != gc->shed_skip)
				from = g;
		}
	}
	if (idle < 0)
		return;
	if (waiting) {
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	} else if (from >= 0) {
		struct scx_hpc_cpu *c = get_cpu(from);

		if (c) {
			c->shed_to = idle + 1;
			scx_bpf_kick_cpu(from, SCX_KICK_PREEMPT);
		}
	}
}

/* At each period boundary: wake the throttled CPUs so that they refill. */
static int period_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	struct scx_hpc_params *P = get_params();
	u64 now = bpf_ktime_get_ns();
	u64 per = P ? period_ns(P) : HPC_DEF_EMUL_PERIOD_US * 1000ULL;
	s32 cpu;

	bpf_for(cpu, 0, SCX_HPC_MAX_CPUS) {
		struct scx_hpc_cpu *c;

		if (cpu >= nr_cpus)
			break;
		c = get_cpu(cpu);
		if (c && c->throttled && c->online) {
			c->nr_kick++;
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		}
	}
	core_balance();
	bpf_timer_start(timer, per - now % per + 1000, 0);
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(hpc_init)
{
	const struct cpumask *online;
	struct bpf_timer *timer;
	u32 zero = 0;
	s32 cpu, ret;

	online = scx_bpf_get_online_cpumask();
	bpf_for(cpu, 0, SCX_HPC_MAX_CPUS) {
		struct scx_hpc_cpu *c;

		if (cpu >= nr_cpus)
			break;
		ret = scx_bpf_create_dsq(cpu, -1);
		if (ret) {
			scx_bpf_put_cpumask(online);
			scx_bpf_error("failed to create DSQ %d (%d)", cpu, ret);
			return ret;
		}
		c = get_cpu(cpu);
		if (c)
			c->online = bpf_cpumask_test_cpu(cpu, online);
	}
	scx_bpf_put_cpumask(online);

	timer = bpf_map_lookup_elem(&timers, &zero);
	if (!timer)
		return -ESRCH;
	bpf_timer_init(timer, &timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(timer, period_timerfn);
	return bpf_timer_start(timer, HPC_DEF_EMUL_PERIOD_US * 1000ULL, 0);
}

void BPF_STRUCT_OPS(hpc_exit, struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(uei.reason, sizeof(uei.reason), ei->reason);
	bpf_probe_read_kernel_str(uei.msg, sizeof(uei.msg), ei->msg);
	uei.exit_code = ei->exit_code;
	__sync_val_compare_and_swap(&uei.kind, uei.kind, ei->kind);
}

/* ------------------------------------------------ following (--take-*) */

#define SCHED_EXT_POLICY 7

static void take_emit(u32 pid, u32 threadgroup, u32 why)
{
	struct scx_hpc_take_event ev = {
		.pid = pid, .threadgroup = threadgroup, .why = why,
	};

	/* full: the loader's periodic rescan of the cgroups catches it */
	bpf_map_push_elem(&take_events, &ev, 0);
}

/* A task (with its thread group if @threadgroup) entered a cgroup. */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(hpc_take_attach, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	u64 id = BPF_CORE_READ(dst, kn, id);

	if (bpf_map_lookup_elem(&take_cgroups, &id))
		take_emit(BPF_CORE_READ(task, pid), threadgroup,
			  SCX_HPC_TAKE_CGROUP_MOVE);
	return 0;
}

/* A task was forked: into a followed tree, or inside a followed cgroup. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(hpc_take_fork, struct task_struct *parent,
	     struct task_struct *child)
{
	u32 ptgid = BPF_CORE_READ(parent, tgid);
	u32 ctgid = BPF_CORE_READ(child, tgid);
	u32 why = 0;
	u8 one = 1;

	if (bpf_map_lookup_elem(&take_tgids, &ptgid)) {
		if (ctgid != ptgid)
			bpf_map_update_elem(&take_tgids, &ctgid, &one, BPF_ANY);
		why = SCX_HPC_TAKE_TREE_FORK;
	} else {
		u64 id = BPF_CORE_READ(child, cgroups, dfl_cgrp, kn, id);

		if (bpf_map_lookup_elem(&take_cgroups, &id))
			why = SCX_HPC_TAKE_CGROUP_FORK;
	}
	/* children of SCHED_EXT tasks inherit it unless reset_on_fork */
	if (why && BPF_CORE_READ(child, policy) != SCHED_EXT_POLICY)
		take_emit(BPF_CORE_READ(child, pid), 0, why);
	return 0;
}

/* The last thread of a followed process exited: forget its tgid. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(hpc_take_exit, struct task_struct *p)
{
	u32 tgid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&take_tgids, &tgid);
	return 0;
}

SCX_OPS_DEFINE(hpc_ops,
	       .select_cpu		= (void *)hpc_select_cpu,
	       .enqueue			= (void *)hpc_enqueue,
	       .dispatch		= (void *)hpc_dispatch,
	       .runnable		= (void *)hpc_runnable,
	       .running			= (void *)hpc_running,
	       .stopping		= (void *)hpc_stopping,
	       .quiescent		= (void *)hpc_quiescent,
	       .tick			= (void *)hpc_tick,
	       .set_cpumask		= (void *)hpc_set_cpumask,
	       .init_task		= (void *)hpc_init_task,
	       .enable			= (void *)hpc_enable,
	       .disable			= (void *)hpc_disable,
	       .cpu_online		= (void *)hpc_cpu_online,
	       .cpu_offline		= (void *)hpc_cpu_offline,
	       .init			= (void *)hpc_init,
	       .exit			= (void *)hpc_exit,
	       .flags			= SCX_OPS_SWITCH_PARTIAL |
					  SCX_OPS_ENQ_LAST,
	       .name			= "hpc");
