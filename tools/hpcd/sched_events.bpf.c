// SPDX-License-Identifier: GPL-2.0
/*
 * hpcd's event source: when a managed process starts and stops computing,
 * from the scheduler's own tracepoints, for the processes hpcd put in the
 * `procs` map only (every thread of each). A thread is marked runnable when
 * it is woken or switched in, and unmarked when it blocks or dies; the
 * process's count of marked threads going 0 -> 1 is a wake-up event, 1 -> 0
 * a sleep event, sent through the ring buffer without waking hpcd (it reads
 * the buffer on its own timer). No policy here: the events go to hpcd's
 * Engine, i.e. the policy core, as the /proc samples did.
 *
 * CO-RE: the three fields of task_struct read here are relocated against
 * the running kernel's BTF, so no vmlinux.h is needed to build it.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sched_events.h"

/*
 * The policy core's rule of which block is a wait (hpc_block_is_wait(),
 * kernel/hpc-core/hpc_policy.h): on PREEMPT_RT a thread that blocks for a
 * contended spinlock_t is still computing. The core's BPF build takes the
 * kernel's type names from vmlinux.h; this program has no vmlinux.h, and
 * calls none of the core's functions (declared, not compiled in, here).
 */
#define HPC_API extern
#include "hpc_bpf_types.h"
#include "hpc_policy.h"

char LICENSE[] SEC("license") = "GPL";

struct sched_entity {
	unsigned long long sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int __state;
	int pid;
	int tgid;
	struct sched_entity se;
} __attribute__((preserve_access_index));

struct thread_mark {
	__u32 gen;
	__u32 runnable;
	__u64 ran; /* its run time (se.sum_exec_runtime) when it last blocked */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct hpcd_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_mark);
} marks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/*
 * Events the ring buffer had no room for; threads the kernel had no memory
 * (or, nested in another task storage access, no lock) to mark at once;
 * runs of a thread that blocked without a wake-up or switch-in seen first.
 */
__u64 nr_lost = 0, nr_nomark = 0, nr_unseen = 0;

static void send(struct task_struct *p, __u32 tgid, __u32 kind, __u64 ts)
{
	struct hpcd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&nr_lost, 1);
		return;
	}
	e->ts = ts;
	e->tgid = tgid;
	e->tid = p->pid;
	e->kind = kind;
	e->cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * A marked thread blocks without having been seen to become runnable (the
 * tracepoints did not show its wake-up nor its switch-in): it ran for the
 * run time it gained since it last blocked, so, if no other thread of its
 * process ran, the process woke that long before now.
 */
static void unseen_run(struct task_struct *p, struct hpcd_proc *proc, __u32 tgid,
		       struct thread_mark *m)
{
	__u64 now = bpf_ktime_get_ns(), ran = p->se.sum_exec_runtime - m->ran;

	__sync_fetch_and_add(&nr_unseen, 1);
	if (ran >= now || proc->nr_runnable != 0)
		return;
	send(p, tgid, HPCD_EV_WAKE, now - ran);
	send(p, tgid, HPCD_EV_SLEEP, now);
}

static void mark(struct task_struct *p, bool runnable)
{
	__u32 tgid = p->tgid;
	struct hpcd_proc *proc = bpf_map_lookup_elem(&procs, &tgid);
	struct thread_mark *m;
	bool was;
	int old;

	if (!proc)
		return;
	m = bpf_task_storage_get(&marks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!m) {
		__sync_fetch_and_add(&nr_nomark, 1);
		return;
	}
	was = m->gen == proc->gen && m->runnable;
	if (!runnable && m->gen == proc->gen) {
		if (!was && m->ran)
			unseen_run(p, proc, tgid, m);
		m->ran = p->se.sum_exec_runtime;
	}
	if (was == runnable)
		return;
	if (m->gen != proc->gen)
		m->ran = p->se.sum_exec_runtime;
	m->gen = proc->gen;
	m->runnable = runnable;
	old = __sync_fetch_and_add(&proc->nr_runnable, runnable ? 1 : -1);
	if (old == (runnable ? 0 : 1))
		send(p, tgid, runnable ? HPCD_EV_WAKE : HPCD_EV_SLEEP, bpf_ktime_get_ns());
}

/*
 * prev blocked if it left the CPU neither preempted nor still TASK_RUNNING
 * (a pending signal puts it back to running before the switch) nor blocked
 * for a lock that spins without PREEMPT_RT (the core's rule); dying threads
 * leave as TASK_DEAD. next runs, so it is runnable.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(hpcd_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	mark(prev, preempt || !prev_state || !prev->__state || !hpc_block_is_wait(prev_state));
	mark(next, true);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(hpcd_wakeup, struct task_struct *p)
{
	mark(p, true);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(hpcd_wakeup_new, struct task_struct *p)
{
	mark(p, true);
	return 0;
}
