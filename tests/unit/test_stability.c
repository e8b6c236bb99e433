// SPDX-License-Identifier: GPL-2.0
/*
 * Stability of the rule on two tasks sharing an SMT core, driven at the core
 * level: sleep/wake-up sequences of a barrier-synchronised pair, each task
 * judging its sibling with hpc_peer_class() on a snapshot of its state.
 * The timings are fixed (the priorities do not feed back into them here;
 * that is the simulator's job).
 */
#include "hpc_test.h"

/*
 * One iteration of a pair synchronised by a barrier: both start computing at
 * *now; task i computes run[i], then sleeps until the barrier releases both
 * at *now + period. @first is woken first. Each wake-up judges the other
 * task from a snapshot, as the kernel class does from the sibling runqueue.
 * Every 1 ms (half-way into the ms) the scheduler tick of a running task
 * folds its time and offers hpc_task_sibling_judge(): tasks that wait at
 * the barrier close their own iterations, so that must never judge them.
 */
static void pair_iter(struct hpc_task t[2], u64 *now, const u64 run[2],
		      u64 period, int first, const struct hpc_params *p)
{
	u64 start = *now, end = *now + period, tick;
	struct hpc_task snap;
	int i, k;

	for (tick = start + US(500); tick < end; tick += MS(1)) {
		for (i = 0; i < 2; i++)
			if (start + run[i] <= tick)
				hpc_task_sleep(&t[i], start + run[i]);
		for (i = 0; i < 2; i++) {
			if (t[i].state != HPC_TASK_RUNNABLE)
				continue;
			snap = t[1 - i];
			hpc_task_tick(&t[i], tick);
			assert_int_equal(hpc_task_sibling_judge(&t[i], tick, p,
								&snap), 0);
		}
	}
	hpc_task_sleep(&t[0], start + run[0]);
	hpc_task_sleep(&t[1], start + run[1]);
	for (k = 0; k < 2; k++) {
		int peer;

		i = k ? 1 - first : first;
		snap = t[1 - i];
		peer = hpc_peer_class(&snap, end, start + run[i], p);
		assert_int_equal(hpc_task_wakeup(&t[i], end, p, peer), 1);
	}
	*now = end;
}

static void balanced_pair(int heuristic)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	int i;

	hpc_params_default(&p);
	p.heuristic = heuristic;
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);
	for (i = 0; i < 100; i++) {
		/* Both high: 86..99 % of a 10 ms iteration, a little noise. */
		u64 run[2] = {
			US(8600) + US(1300) * (u64)((i * 7) % 11) / 10,
			US(8600) + US(1300) * (u64)((i * 5 + 3) % 11) / 10,
		};

		pair_iter(t, &now, run, MS(10), i & 1, &p);
		assert_int_equal(t[0].prio, 4);
		assert_int_equal(t[1].prio, 4);
		assert_int_equal(t[0].prev_prio, 4);
		assert_int_equal(t[1].prev_prio, 4);
	}
	assert_int_equal(t[0].nr_iter, 100);
	assert_int_equal(t[1].nr_iter, 100);
	assert_true(t[0].global_util > 8500 && t[1].global_util > 8500);
}

static void balanced_pair_uniform(void **state)
{
	balanced_pair(HPC_HEUR_UNIFORM);
	(void)state;
}

static void balanced_pair_adaptive(void **state)
{
	balanced_pair(HPC_HEUR_ADAPTIVE);
	(void)state;
}

/* A busy pair already at unequal priorities stays where it is as well. */
static void balanced_pair_unequal_prios(void **state)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	u64 run[2] = { US(9000), US(9500) };
	int i;

	hpc_params_default(&p);
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);
	t[1].prio = 6;
	for (i = 0; i < 100; i++) {
		pair_iter(t, &now, run, MS(10), i & 1, &p);
		assert_int_equal(t[0].prio, 4);
		assert_int_equal(t[1].prio, 6);
	}
	(void)state;
}

/*
 * A balanced pair with heavy per-iteration noise: each task computes 70..99 %
 * of a 10 ms iteration, and in isolated iterations one of them only 50..64 %
 * (a noisy iteration of a balanced application: below low_util, not below
 * half of it). No single low iteration is a wait for the sibling: nobody is
 * ever raised, the pair never has unequal priorities.
 */
static void balanced_noisy_pair(int heuristic)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	int i, lows = 0;

	hpc_params_default(&p);
	p.heuristic = heuristic;
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);
	for (i = 0; i < 200; i++) {
		u64 run[2] = {
			US(7000) + US(2900) * (u64)((i * 7) % 11) / 10,
			US(7000) + US(2900) * (u64)((i * 5 + 3) % 11) / 10,
		};

		/* Every third iteration one task dips low, never twice running. */
		if (i % 3 == 1) {
			run[i % 2] = US(5000) + US(1400) * (u64)(i % 5) / 4;
			lows++;
		}
		pair_iter(t, &now, run, MS(10), i & 1, &p);
		assert_int_equal(t[0].prio, t[1].prio);
		assert_int_equal(t[0].prio, 4);
	}
	assert_true(lows > 60);
}

static void balanced_noisy_pair_uniform(void **state)
{
	balanced_noisy_pair(HPC_HEUR_UNIFORM);
	(void)state;
}

static void balanced_noisy_pair_adaptive(void **state)
{
	balanced_noisy_pair(HPC_HEUR_ADAPTIVE);
	(void)state;
}

/*
 * Two raised contexts of one core, e.g. (5, 5) or (6, 6) after the knobs
 * changed: only the difference matters, so the pair is brought back down to
 * (4, 4), never kept raised, never left unequal; balanced loads.
 */
static void raised_pair_comes_down(void **state)
{
	static const u32 start[] = { 5, 6 };
	struct hpc_params p;
	struct hpc_task t[2];
	const u64 run[2] = { US(9000), US(9200) };
	u64 now = 0;
	int h, k, i;

	for (h = 0; h < HPC_HEUR_NR; h++)
		for (k = 0; k < 2; k++) {
			hpc_params_default(&p);
			p.heuristic = h;
			hpc_task_init(&t[0], now, &p);
			hpc_task_init(&t[1], now, &p);
			t[0].prio = start[k];
			t[1].prio = start[k];
			for (i = 0; i < 20; i++) {
				pair_iter(t, &now, run, MS(10), i & 1, &p);
				/* One step per decision: two at most from 6. */
				if (i >= (int)start[k] - 4) {
					assert_int_equal(t[0].prio, 4);
					assert_int_equal(t[1].prio, 4);
				}
			}
		}
	(void)state;
}

/*
 * A wrong lead on a balanced pair (a context raised on noise): the raised
 * task now waits for its busy sibling and drops back at once; its wait, run
 * raised, does not raise the sibling: no flip to (5, 4), no oscillation.
 */
static void wrong_lead_dropped_without_flip(void **state)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	int h, i;

	for (h = 0; h < HPC_HEUR_NR; h++) {
		/* At (5, 4) the balanced pair runs 4.6 / 10 ms and 10 ms. */
		const u64 lead[2] = { US(4600), MS(10) - US(200) };
		const u64 even[2] = { US(9300), US(9500) };

		hpc_params_default(&p);
		p.heuristic = h;
		hpc_task_init(&t[0], 0, &p);
		hpc_task_init(&t[1], 0, &p);
		for (i = 0; i < 10; i++)
			pair_iter(t, &now, even, MS(10), i & 1, &p);
		t[0].prio = 5;
		pair_iter(t, &now, lead, MS(10), 0, &p);
		assert_int_equal(t[0].prio, 4);
		assert_int_equal(t[1].prio, 4);
		for (i = 0; i < 10; i++) {
			pair_iter(t, &now, even, MS(10), i & 1, &p);
			assert_int_equal(t[0].prio, 4);
			assert_int_equal(t[1].prio, 4);
		}
	}
	(void)state;
}

/*
 * MetBench: the light task computes 25 % of each 1 s iteration and waits
 * 75 %; its sibling computes all but 200 us (the barrier; the paper's
 * baseline has 25.34 % and 99.98 %). The heavy task goes 4 -> 5 -> 6 in two
 * iterations and stays; the light one stays at 4.
 */
static void metbench_pair(int heuristic, int first)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	const u64 run[2] = { MS(250), MS(1000) - US(200) };	/* light, heavy */
	int i;

	hpc_params_default(&p);
	p.heuristic = heuristic;
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);

	/* The first iteration confirms nothing (start-up): no lead yet. */
	pair_iter(t, &now, run, MS(1000), first, &p);
	assert_int_equal(t[0].last_util, 2500);
	assert_int_equal(t[1].last_util, 9998);
	assert_int_equal(t[1].prio, 4);
	assert_int_equal(t[0].prio, 4);

	pair_iter(t, &now, run, MS(1000), first, &p);
	assert_int_equal(t[1].prio, 5);
	assert_int_equal(t[0].prio, 4);

	pair_iter(t, &now, run, MS(1000), first, &p);
	assert_int_equal(t[1].prio, 6);
	assert_int_equal(t[1].prev_prio, 5);
	assert_int_equal(t[0].prio, 4);

	for (i = 0; i < 50; i++) {
		pair_iter(t, &now, run, MS(1000), (first + i) & 1, &p);
		assert_int_equal(t[1].prio, 6);
		assert_int_equal(t[1].prev_prio, 6);
		assert_int_equal(t[0].prio, 4);
	}
}

static void metbench_uniform(void **state)
{
	metbench_pair(HPC_HEUR_UNIFORM, 0);
	metbench_pair(HPC_HEUR_UNIFORM, 1);
	(void)state;
}

static void metbench_adaptive(void **state)
{
	metbench_pair(HPC_HEUR_ADAPTIVE, 0);
	metbench_pair(HPC_HEUR_ADAPTIVE, 1);
	(void)state;
}

/*
 * MetBenchVar with Adaptive (G = 10, L = 90): the loads swap after the pair
 * settled at (4, 6). The raised task now waits for its busy sibling most of
 * the iteration (a deep wait): it drops its lead at once, (4, 4) (rule 2); its wait, run at priority 6, does not
 * raise the sibling. From the next iteration on the sibling climbs one step
 * per iteration to (6, 4), and stays. No pair is ever at (5, 5).
 */
static void metbenchvar_adaptive_swap(void **state)
{
	struct hpc_params p;
	struct hpc_task t[2];
	u64 now = 0;
	const u64 a[2] = { MS(250), MS(1000) - US(200) };
	const u64 b[2] = { MS(1000) - US(200), MS(250) };
	static const u32 exp0[] = { 4, 5, 6, 6, 6 };
	static const u32 exp1[] = { 4, 4, 4, 4, 4 };
	int i;

	hpc_params_default(&p);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);
	for (i = 0; i < 15; i++)
		pair_iter(t, &now, a, MS(1000), i & 1, &p);
	assert_int_equal(t[0].prio, 4);
	assert_int_equal(t[1].prio, 6);
	for (i = 0; i < 5; i++) {
		pair_iter(t, &now, b, MS(1000), i & 1, &p);
		assert_int_equal(t[0].prio, exp0[i]);
		assert_int_equal(t[1].prio, exp1[i]);
	}
	(void)state;
}

/*
 * The critical path never waits: MetBench's heavy task computes 100 % and
 * the light one 25 % of each 1 s cycle. The heavy task never closes an
 * iteration; it is judged by hpc_task_sibling_judge(), called from its tick
 * (every 1 ms, at @phase into the ms), after the light task closed one:
 * once every cycle (hpc_policy.h), going 4 -> 5 -> 6 in two cycles and
 * staying; the light task stays at 4.
 */
static void critical_path(u64 phase)
{
	struct hpc_params p;
	struct hpc_task light, heavy, snap;
	u64 c, k, T;

	hpc_params_default(&p);
	hpc_task_init(&light, 0, &p);
	hpc_task_init(&heavy, 0, &p);
	for (c = 0; c < 20; c++) {
		T = c * MS(1000);
		for (k = 0; k < 1000; k++) {
			u64 tick = T + MS(k) + phase;

			if (tick >= T + MS(250) && light.state == HPC_TASK_RUNNABLE)
				hpc_task_sleep(&light, T + MS(250));
			snap = light;
			hpc_task_tick(&heavy, tick);
			hpc_task_sibling_judge(&heavy, tick, &p, &snap);
			if (k == 1 && c > 0) {
				/* The cycle the light task just closed. */
				if (heavy.nr_judged != c)
					fail_msg("phase %llu ns: after cycle %llu the heavy task was judged %llu times, expected %llu (prio %u)",
						 (unsigned long long)phase,
						 (unsigned long long)c,
						 (unsigned long long)heavy.nr_judged,
						 (unsigned long long)c,
						 heavy.prio);
				assert_int_equal(heavy.nr_iter, 0);
				assert_int_equal(heavy.heur_util, 10000);
				assert_int_equal(heavy.prio, c < 2 ? 4 + c : 6);
				assert_int_equal(light.prio, 4);
			}
		}
		/* The barrier releases the light task. */
		snap = heavy;
		assert_int_equal(hpc_task_wakeup(&light, T + MS(1000), &p,
				 hpc_peer_class(&snap, T + MS(1000), T + MS(250),
						&p)), 1);
		assert_int_equal(light.last_util, 2500);
	}
}

/*
 * Tasks released together start equal. Task 0 enters the policy and waits at
 * a common release while task 1, entering with it, is still busy setting up
 * (its start-up computes 95 %). After the release both compute and never
 * wait (ticks every 1 ms, each judging the other's snapshot). The start-up
 * iteration confirms no busy task, so nobody takes a lead: both stay at
 * min_prio, whichever wakes first.
 */
static void released_together(int first)
{
	struct hpc_params p;
	struct hpc_task t[2], snap;
	const u64 go = MS(200);
	u64 tick;
	int i, k;

	hpc_params_default(&p);
	hpc_task_init(&t[0], 0, &p);
	hpc_task_init(&t[1], 0, &p);
	hpc_task_sleep(&t[0], MS(5));
	hpc_task_sleep(&t[1], MS(190));
	for (k = 0; k < 2; k++) {
		i = k ? 1 - first : first;
		snap = t[1 - i];
		hpc_task_wakeup(&t[i], go, &p, hpc_peer_class(&snap, go, i ? MS(190) : MS(5), &p));
	}
	assert_int_equal(t[1].nr_iter, 1);
	assert_in_range(t[1].last_util, 9000, 10000);
	for (tick = go + US(500); tick < go + MS(10000); tick += MS(1)) {
		for (i = 0; i < 2; i++) {
			snap = t[1 - i];
			hpc_task_tick(&t[i], tick);
			hpc_task_sibling_judge(&t[i], tick, &p, &snap);
			assert_int_equal(t[i].prio, 4);
		}
	}
}

static void released_together_start_equal(void **state)
{
	released_together(0);
	released_together(1);
	(void)state;
}

/* The heavy task's tick comes exactly when the light task wakes. */
static void critical_path_tick_at_wakeup(void **state)
{
	critical_path(0);
	(void)state;
}

/* The tick comes half a tick after the wake-up, as it does in practice. */
static void critical_path_tick_after_wakeup(void **state)
{
	critical_path(US(500));
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(balanced_pair_uniform),
		cmocka_unit_test(balanced_pair_adaptive),
		cmocka_unit_test(balanced_pair_unequal_prios),
		cmocka_unit_test(balanced_noisy_pair_uniform),
		cmocka_unit_test(balanced_noisy_pair_adaptive),
		cmocka_unit_test(raised_pair_comes_down),
		cmocka_unit_test(wrong_lead_dropped_without_flip),
		cmocka_unit_test(metbench_uniform),
		cmocka_unit_test(metbench_adaptive),
		cmocka_unit_test(metbenchvar_adaptive_swap),
		cmocka_unit_test(released_together_start_equal),
		cmocka_unit_test(critical_path_tick_at_wakeup),
		cmocka_unit_test(critical_path_tick_after_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
