// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the SCHED_HPC queue order (hpc_queue.h): where a task that
 * becomes runnable is queued, and when a woken task preempts.
 */
#include "hpc_test.h"
#include "hpc_queue.h"

/* Virtual times compare by their difference, across the wrap. */
static void vtime_order_wraps(void **state)
{
	assert_true(hpc_vtime_before(1, 2));
	assert_false(hpc_vtime_before(2, 2));
	assert_false(hpc_vtime_before(3, 2));
	assert_true(hpc_vtime_before(~0ULL - 5, 3));
	assert_false(hpc_vtime_before(3, ~0ULL - 5));
	(void)state;
}

/* The credit: half the slice, at most HPC_WAKE_CREDIT_NS. */
static void wake_credit(void **state)
{
	assert_int_equal(hpc_wake_credit(MS(100)), HPC_WAKE_CREDIT_NS);
	assert_int_equal(hpc_wake_credit(MS(1)), US(500));
	assert_int_equal(hpc_wake_credit(0), 0);
	(void)state;
}

/*
 * A task that becomes runnable goes within [queue - credit, queue + slice]:
 * a long sleeper gets the credit and no more, a task from a busier queue
 * at most one slice behind, anything between keeps its virtual time.
 */
static void queue_vtime_clamps(void **state)
{
	u64 q = MS(1000), slice = MS(100), credit = HPC_WAKE_CREDIT_NS;

	assert_int_equal(hpc_queue_vtime(0, q, slice, 0), q - credit);
	assert_int_equal(hpc_queue_vtime(q - credit - 1, q, slice, 0), q - credit);
	assert_int_equal(hpc_queue_vtime(q - 1, q, slice, 0), q - 1);
	assert_int_equal(hpc_queue_vtime(q + MS(50), q, slice, 0), q + MS(50));
	assert_int_equal(hpc_queue_vtime(q + slice + 1, q, slice, 0), q + slice);
	assert_int_equal(hpc_queue_vtime(~0ULL, q, slice, 0), q - credit);
	/* The shorter the burst (CPU time) before the wake-up, the earlier. */
	assert_int_equal(hpc_queue_vtime(0, q, slice, US(20)), q - credit + US(20));
	assert_int_equal(hpc_queue_vtime(0, q, slice, MS(1)), q - credit + MS(1));
	assert_int_equal(hpc_queue_vtime(0, q, slice, MS(50)), q);

	/* Near 0 the bounds wrap and still order right. */
	assert_int_equal(hpc_queue_vtime(0 - MS(10), 0, slice, 0), 0 - credit);
	assert_int_equal(hpc_queue_vtime(5, 0, slice, 0), 5);
	assert_int_equal(hpc_queue_vtime(MS(200), 0, slice, 0), slice);
	(void)state;
}

/*
 * A sync wake-up gives the credit back: a task placed before the queue
 * goes to the queue, one at or after it keeps its virtual time, also where
 * the times wrap. A task woken by its timer then stays before the ones
 * that pass messages.
 */
static void sync_wake_vtime(void **state)
{
	u64 q = MS(1000), slice = MS(100);
	u64 timer = hpc_queue_vtime(0, q, slice, US(20));
	u64 msg = hpc_sync_wake_vtime(hpc_queue_vtime(0, q, slice, 0), q);

	assert_int_equal(hpc_sync_wake_vtime(q - HPC_WAKE_CREDIT_NS, q), q);
	assert_int_equal(hpc_sync_wake_vtime(q - 1, q), q);
	assert_int_equal(hpc_sync_wake_vtime(q, q), q);
	assert_int_equal(hpc_sync_wake_vtime(q + MS(5), q), q + MS(5));
	assert_int_equal(hpc_sync_wake_vtime(0 - MS(1), MS(1)), MS(1));
	assert_int_equal(hpc_sync_wake_vtime(MS(1), 0 - MS(1)), MS(1));
	assert_true(hpc_vtime_before(timer, msg));
	(void)state;
}

/*
 * hpc_wake_burst(): the CPU time used since the previous wake-up; the mark
 * moves on, so the next burst counts from here.
 */
static void wake_burst(void **state)
{
	u64 mark = 0;

	assert_int_equal(hpc_wake_burst(&mark, US(20)), US(20));
	assert_int_equal(mark, US(20));
	assert_int_equal(hpc_wake_burst(&mark, MS(2)), MS(2) - US(20));
	assert_int_equal(hpc_wake_burst(&mark, MS(2)), 0);
	(void)state;
}

/*
 * A woken task preempts only when ahead by more than half its credit, and
 * once the running task has run for half the credit since it was picked;
 * a sync wake-up (the waker sleeps next) never does.
 */
static void wake_preempts(void **state)
{
	u64 slice = MS(100), half = HPC_WAKE_CREDIT_NS / 2;

	assert_true(hpc_wake_preempts(MS(10), MS(10) + half + 1, half, slice,
				      false));
	assert_false(hpc_wake_preempts(MS(10), MS(10) + half, half, slice,
				       false));
	assert_false(hpc_wake_preempts(MS(10), MS(10), half, slice, false));
	assert_false(hpc_wake_preempts(MS(11), MS(10), half, slice, false));
	/* Far ahead, but the running task has only just started. */
	assert_false(hpc_wake_preempts(MS(10), MS(50), half - 1, slice,
				       false));
	/* A woken long sleeper beside a task that is a slice ahead. */
	assert_true(hpc_wake_preempts(hpc_queue_vtime(0, MS(10), slice, US(100)),
				      MS(10), MS(2), slice, false));
	/* The same, woken by a task that sleeps next: it waits for that. */
	assert_false(hpc_wake_preempts(hpc_queue_vtime(0, MS(10), slice, US(100)),
				       MS(10), MS(2), slice, true));
	assert_false(hpc_wake_preempts(MS(10), MS(50), slice, slice, true));
	(void)state;
}

/* The queue's virtual time never goes back. */
static void queue_advance(void **state)
{
	assert_int_equal(hpc_queue_advance(MS(5), MS(7)), MS(7));
	assert_int_equal(hpc_queue_advance(MS(7), MS(5)), MS(7));
	assert_int_equal(hpc_queue_advance(~0ULL - 1, 2), 2);
	(void)state;
}

/*
 * The rule bounds a waking task's advantage. Two tasks on one queue: one
 * busy, one that sleeps (for no time) after every 100 us of run and wakes
 * again at once, the queue run as the kernel class runs it: the least
 * virtual time is picked, the running task keeps the CPU until its slice
 * ends or a woken task preempts it. Each gets half the CPU, within 10 %.
 */
static void frequent_waker_gets_its_share(void **state)
{
	u64 slice = MS(100), step = US(100), q = 0, ran = 0, t;
	u64 vt[2] = { 0, 0 }, got[2] = { 0, 0 };
	int cur = 0;	/* 0: the busy task, 1: the waker */

	for (t = 0; t < MS(1000); t += step) {
		vt[cur] += step;
		got[cur] += step;
		ran += step;
		if (cur == 1) {
			/* it sleeps and wakes: queued against the queue */
			vt[1] = hpc_queue_vtime(vt[1], q, slice, step);
			cur = hpc_vtime_before(vt[0], vt[1]) ? 0 : 1;
			ran = 0;
		} else if (ran >= slice ||
			   hpc_wake_preempts(vt[1], vt[0], ran, slice, false)) {
			cur = hpc_vtime_before(vt[0], vt[1]) ? 0 : 1;
			ran = 0;
		}
		q = hpc_queue_advance(q, hpc_vtime_before(vt[0], vt[1]) ? vt[0] :
									  vt[1]);
	}
	assert_true(got[0] > MS(450) && got[0] < MS(550));
	assert_true(got[1] > MS(450) && got[1] < MS(550));
	(void)state;
}

/*
 * Placement: the CPU's own count first, then its core's; a tie is no
 * improvement (the task stays where it was). A waking task stays on an
 * empty CPU, and on a busy one unless another has two fewer tasks.
 */
static void placement_rule(void **state)
{
	assert_true(hpc_place_better(1, 5, 2, 2));
	assert_true(hpc_place_better(1, 1, 1, 2));
	assert_false(hpc_place_better(1, 2, 1, 2));
	assert_false(hpc_place_better(2, 2, 1, 9));

	assert_true(hpc_wake_stays(0, 0));
	assert_true(hpc_wake_stays(2, 1));	/* one fewer: stay */
	assert_false(hpc_wake_stays(3, 1));	/* two fewer: go */
	assert_false(hpc_wake_stays(2, 0));	/* an empty CPU: go */
	(void)state;
}

/*
 * The balance rules. Pull: only from a CPU where another task runs (load
 * 2+), the most waiting first, then the most load. Push: to two fewer.
 * Core balance: a core busy on both contexts gives to an idle one, from
 * its higher-numbered context.
 */
static void balance_rules(void **state)
{
	assert_false(hpc_pull_better(0, 3, 0, 0)); /* nothing waits */
	assert_false(hpc_pull_better(1, 1, 0, 0)); /* a lone waiter */
	assert_true(hpc_pull_better(1, 2, 0, 0));
	assert_true(hpc_pull_better(2, 3, 1, 9));  /* more waiting wins */
	assert_true(hpc_pull_better(1, 3, 1, 2));  /* then more load */
	assert_false(hpc_pull_better(1, 2, 1, 2)); /* a tie is no better */

	assert_true(hpc_push_worth(2, 0));
	assert_true(hpc_push_worth(5, 3));
	assert_false(hpc_push_worth(2, 1)); /* would only swap */
	assert_false(hpc_push_worth(0, 0));

	assert_true(hpc_core_gives(1, 1, 0));
	assert_false(hpc_core_gives(1, 0, 0)); /* one context idle */
	assert_false(hpc_core_gives(2, 1, 1)); /* no idle core */

	assert_true(hpc_core_giver(3, 2));
	assert_false(hpc_core_giver(2, 3));
	(void)state;
}

/*
 * The rules together on a machine of @ncpu CPUs (cores 2k, 2k + 1) with
 * @load[] tasks each, every task free to move: each round, every CPU
 * without tasks pulls, every CPU pushes, every core gives, as the kernel
 * class and scx_hpc apply them. Returns the number of moves until nothing
 * moves (-1 if that takes more than 64 rounds: tasks moving back and
 * forth).
 */
static int balance_rounds(u32 *load, int ncpu)
{
	int moves = 0, round, cpu, i, best;
	u32 bw, bl;
	bool moved;

	for (round = 0; round < 64; round++) {
		moved = false;
		for (cpu = 0; cpu < ncpu; cpu++) {
			if (load[cpu])
				continue;
			best = -1;
			bw = bl = 0;
			for (i = 0; i < ncpu; i++) {
				/* one of the load runs, the rest waits */
				u32 w = load[i] ? load[i] - 1 : 0;

				if (i != cpu && hpc_pull_better(w, load[i], bw, bl)) {
					best = i;
					bw = w;
					bl = load[i];
				}
			}
			if (best >= 0) {
				load[best]--;
				load[cpu]++;
				moves++;
				moved = true;
			}
		}
		for (cpu = 0; cpu < ncpu; cpu++)
			for (i = 0; i < ncpu; i++)
				if (i != cpu && hpc_push_worth(load[cpu], load[i])) {
					load[cpu]--;
					load[i]++;
					moves++;
					moved = true;
				}
		for (cpu = 0; cpu < ncpu; cpu++) {
			int sib = cpu ^ 1;

			if (sib >= ncpu || !hpc_core_giver(cpu, sib))
				continue;
			for (i = 0; i < ncpu; i += 2) {
				u32 dst = load[i] + (i + 1 < ncpu ? load[i + 1] : 0);

				if (i / 2 != cpu / 2 && hpc_core_gives(load[cpu], load[sib], dst)) {
					load[cpu]--;
					load[i]++;
					moves++;
					moved = true;
					break;
				}
			}
		}
		if (!moved)
			return moves;
	}
	return -1;
}

/*
 * Every start ends balanced (CPUs within one task of each other, cores
 * within one where CPUs allow) in few moves, and nothing moves once it is.
 */
static void balance_converges(void **state)
{
	static const struct {
		int ncpu;
		u32 load[8];
		int max_moves;
	} cases[] = {
		{4, {1, 1, 0, 0}, 1}, /* two on core 0, core 1 idle */
		{4, {4, 0, 0, 0}, 3},
		{4, {2, 2, 0, 0}, 2},
		{4, {3, 1, 0, 0}, 2},
		{4, {1, 0, 1, 0}, 0}, /* already one per core */
		{8, {2, 2, 2, 2, 0, 0, 0, 0}, 4},
		{8, {8, 0, 0, 0, 0, 0, 0, 0}, 7},
		{8, {2, 1, 1, 1, 1, 1, 1, 0}, 1},
		{6, {1, 1, 1, 1, 0, 0}, 1},
	};
	unsigned int k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		u32 load[8], lo = ~0u, hi = 0, clo = ~0u, chi = 0, total = 0;
		int n = cases[k].ncpu, moves, i;

		memcpy(load, cases[k].load, sizeof(load));
		for (i = 0; i < n; i++)
			total += load[i];
		moves = balance_rounds(load, n);
		assert_in_range(moves, 0, cases[k].max_moves);
		for (i = 0; i < n; i++) {
			total -= load[i];
			lo = load[i] < lo ? load[i] : lo;
			hi = load[i] > hi ? load[i] : hi;
		}
		assert_int_equal(total, 0); /* no task lost or made */
		for (i = 0; i < n; i++)
			total += load[i];
		assert_in_range(hi - lo, 0, 1);
		for (i = 0; i + 1 < n; i += 2) {
			u32 c = load[i] + load[i + 1];

			clo = c < clo ? c : clo;
			chi = c > chi ? c : chi;
		}
		/* a core with two while one has none only if tasks > cores */
		if (total <= (u32)n / 2)
			assert_in_range(chi, 0, 1);
		assert_in_range(chi - clo, 0, 2);
		/* balanced: nothing moves any more */
		assert_int_equal(balance_rounds(load, n), 0);
	}
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vtime_order_wraps),
		cmocka_unit_test(wake_credit),
		cmocka_unit_test(queue_vtime_clamps),
		cmocka_unit_test(sync_wake_vtime),
		cmocka_unit_test(wake_burst),
		cmocka_unit_test(wake_preempts),
		cmocka_unit_test(queue_advance),
		cmocka_unit_test(frequent_waker_gets_its_share),
		cmocka_unit_test(placement_rule),
		cmocka_unit_test(balance_rules),
		cmocka_unit_test(balance_converges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
