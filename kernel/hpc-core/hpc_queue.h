/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SCHED_HPC queue order, for the front ends that queue tasks: the kernel
 * class and scx_hpc. Portable like the policy core (see hpc_types.h).
 *
 * Round-robin: a task's virtual time is the CPU time it has received, and a
 * CPU runs its least first. A task that computes for a whole time slice has
 * the most and goes behind the others: plain round-robin among busy tasks.
 * The slice is CPU time since the task woke up or last went behind: a task
 * that sleeps before it used a whole slice starts a new one when it wakes,
 * so short bursts never add up to a slice that sends it behind every busy
 * task (its virtual time alone keeps its share fair).
 * A task that wakes up is placed at most hpc_wake_credit() before the
 * CPU's queue (its virtual time, the least of its tasks; it never goes
 * back): an HPC task wakes up when the message it waited for arrived, and
 * is the task the others wait for, so it runs first, and preempts the task
 * running there if that one is more than half the credit ahead and has run
 * for half the credit since it was picked. Among the tasks that woke, the
 * one whose last burst (hpc_wake_burst(): the CPU time it used between its
 * last two wake-ups, not the time it waited to run) was the shortest goes
 * first: a short wait-compute cycle is not held up by longer ones. The
 * credit is bounded, so a task that wakes up often cannot starve the busy
 * ones: it gets its fair share of the CPU, not more. A task that moves to
 * another CPU keeps its place relative to the queue (its virtual time
 * minus the old queue's, plus the new one's).
 *
 * FIFO: no virtual time; tasks run in the order they became runnable and a
 * waking task never preempts one of its class (SCHED_FIFO's rule).
 */
#ifndef _KERNEL_SCHED_HPC_QUEUE_H
#define _KERNEL_SCHED_HPC_QUEUE_H

#include "hpc_policy.h"

/* The most a waking task is placed before its queue. */
#define HPC_WAKE_CREDIT_NS	3000000ULL

/* Virtual times wrap: compare them by their difference. */
static inline bool hpc_vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/* The credit of a waking task with time slice @slice_ns: at most half of it. */
static inline u64 hpc_wake_credit(u64 slice_ns)
{
	return slice_ns / 2 < HPC_WAKE_CREDIT_NS ? slice_ns / 2 :
						   HPC_WAKE_CREDIT_NS;
}

/*
 * The burst of a task that wakes up: the CPU time it has used since its
 * previous wake-up, from @run_ns, all the CPU time it has used as the front
 * end counts it, and *@mark, what that was at the previous wake-up (moved
 * on to @run_ns). The time it waited to run is not in it: a task kept
 * waiting does not lose its place at its next wake-up.
 */
static inline u64 hpc_wake_burst(u64 *mark, u64 run_ns)
{
	u64 burst = run_ns - *mark;

	*mark = run_ns;
	return burst;
}

/*
 * The virtual time to queue a task at that becomes runnable with @vtime on
 * a queue at @queue_vtime, having woken up after a burst of @burst_ns of
 * CPU time (0 if it did not wake up): within
 * [queue - credit + min(burst, credit), queue + slice].
 */
static inline u64 hpc_queue_vtime(u64 vtime, u64 queue_vtime, u64 slice_ns,
				  u64 burst_ns)
{
	u64 credit = hpc_wake_credit(slice_ns);
	u64 lo = queue_vtime - credit + (burst_ns < credit ? burst_ns : credit);
	u64 hi = queue_vtime + slice_ns;

	if (hpc_vtime_before(vtime, lo))
		return lo;
	if (hpc_vtime_before(hi, vtime))
		return hi;
	return vtime;
}

/*
 * Does a task queued at @woken preempt the running one, now at @curr and
 * that has run @ran_ns since it was picked? Only if it is ahead by more
 * than half the credit, and the running task has had half the credit: two
 * tasks that wake each other (a sender and its receiver) do not switch at
 * every message. Nor does a @sync wake-up (WF_SYNC: a socket's or pipe's
 * writer waking its reader, or the reader a blocked writer): tasks that
 * pass messages wake each other in turn and each soon sleeps again, so
 * the woken task, placed at the head of its queue, runs when the running
 * task sleeps or ends its slice; preempting would switch away from a
 * batch of messages after each one (hackbench as SCHED_EXT under scx_hpc
 * made 1.1-1.7 times the context switches, and took a median 1.2 times
 * as long, in the QEMU guest). A caller whose tick preempts for a woken
 * task within the margin anyway passes false (the kernel class).
 */
static inline bool hpc_wake_preempts(u64 woken, u64 curr, u64 ran_ns,
				     u64 slice_ns, bool sync)
{
	u64 gran = hpc_wake_credit(slice_ns) / 2;

	return !sync && ran_ns >= gran && hpc_vtime_before(woken + gran, curr);
}

/*
 * Placement of a task that wakes, forks or execs: the allowed CPU with the
 * fewest SCHED_HPC tasks, then the emulated core with the fewest; where the
 * task was on a tie. Is a CPU with @n tasks, @c on its core, a better place
 * than the best so far, with @best_n and @best_c?
 */
static inline bool hpc_place_better(u32 n, u32 c, u32 best_n, u32 best_c)
{
	return n < best_n || (n == best_n && c < best_c);
}

/*
 * Push, at the tick: a waiting task goes from a CPU with @load SCHED_HPC
 * tasks to one with two fewer (one fewer would only swap the two).
 */
static inline bool hpc_push_worth(u32 load, u32 dst_load)
{
	return dst_load + 2 <= load;
}

/*
 * A waking task stays on the CPU it ran on, with @prev_n tasks, if none is
 * there (no CPU has fewer), or if the best other CPU has tasks too
 * (@best_n) and not two fewer: tasks that wake each other at every message
 * (a pipe's writer and reader) keep their CPU and cache, and the periodic
 * balance evens out what is left.
 */
static inline bool hpc_wake_stays(u32 prev_n, u32 best_n)
{
	return !prev_n || (best_n && !hpc_push_worth(prev_n, best_n));
}

/*
 * Periodic balance, the same rules in every front end that queues tasks.
 * Counts are per CPU: @load, the SCHED_HPC tasks there (queued, running,
 * and one more while the CPU cannot run them: throttled or offline), and
 * @waiting, those of them waiting to run.
 *
 * Pull: a CPU without SCHED_HPC work takes a waiting task from the CPU with
 * the most waiting (then the most load), and only from one where another
 * task runs or is due to run (a lone waiter of an idle CPU is about to run
 * there). Is (@waiting, @load) a better source than the best so far?
 */
static inline bool hpc_pull_better(u32 waiting, u32 load, u32 best_waiting,
				   u32 best_load)
{
	if (!waiting || load < 2)
		return false;
	return waiting > best_waiting ||
	       (waiting == best_waiting && load > best_load);
}

/*
 * Core balance: a core with work on both contexts (@load and @sib_load)
 * gives a task, running or not, to an allowed core with none
 * (@dst_core_load): each then runs at single-context speed. Only a core
 * with work on each context gives to a core with none, so a move never
 * makes the count worse and no task moves back and forth.
 */
static inline bool hpc_core_gives(u32 load, u32 sib_load, u32 dst_core_load)
{
	return load && sib_load && !dst_core_load;
}

/*
 * Of the two contexts of a busy core, the one that gives its running task:
 * the higher-numbered one (@cpu against its sibling @sib), so that the two
 * never both give at once.
 */
static inline bool hpc_core_giver(s32 cpu, s32 sib)
{
	return cpu > sib;
}

/* The queue's virtual time never goes back: @least if that is later. */
static inline u64 hpc_queue_advance(u64 queue_vtime, u64 least)
{
	return hpc_vtime_before(queue_vtime, least) ? least : queue_vtime;
}

/*
 * Where a task queued at @vtime (hpc_queue_vtime()) goes when its wake-up
 * turns out a sync one (WF_SYNC, see hpc_wake_preempts()): no credit, no
 * earlier than the queue at @queue_vtime. Its waker soon sleeps or passes
 * more messages on; with the credit, tasks that pass messages went before
 * the running one at every wake-up and preempted it at nearly every tick
 * (the kernel class: hackbench took 1.4 times as long as normal tasks in
 * the QEMU guest, 1.1 times without the credit).
 */
static inline u64 hpc_sync_wake_vtime(u64 vtime, u64 queue_vtime)
{
	return hpc_queue_advance(vtime, queue_vtime);
}

#endif /* _KERNEL_SCHED_HPC_QUEUE_H */
