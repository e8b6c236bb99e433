// SPDX-License-Identifier: GPL-2.0
/*
 * Iteration accounting of the policy core (hpc_task_*, hpc_util): what
 * closes an iteration, and the exact t_R, t_W, U_i and U = sum(t_R)/sum(t_i)
 * of paper section IV.B.
 */
#include "hpc_test.h"

static struct hpc_params defaults(void)
{
	struct hpc_params p;

	hpc_params_default(&p);
	return p;
}

static void init_state(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;

	memset(&t, 0xa5, sizeof(t));
	hpc_task_init(&t, MS(7), &p);
	assert_int_equal(t.iter_start, MS(7));
	assert_int_equal(t.seg_start, MS(7));
	assert_int_equal(t.cur_run, 0);
	assert_int_equal(t.sum_run, 0);
	assert_int_equal(t.sum_total, 0);
	assert_int_equal(t.last_run, 0);
	assert_int_equal(t.last_wait, 0);
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.judged_at, 0);
	assert_int_equal(t.nr_judged, 0);
	assert_int_equal(t.last_util, 0);
	assert_int_equal(t.global_util, 0);
	assert_int_equal(t.heur_util, 0);
	assert_int_equal(t.prio, HPC_PRIO_NORMAL);
	assert_int_equal(t.prev_prio, HPC_PRIO_NORMAL);
	assert_int_equal(t.state, HPC_TASK_RUNNABLE);
	assert_false(hpc_task_waits(&t));
	(void)state;
}

/* Only a wait of at least min_wait_us closes an iteration. */
static void closes_only_after_min_wait(void **state)
{
	struct hpc_params p = defaults();	/* min_wait_us = 100 */
	struct hpc_task t;

	hpc_task_init(&t, 0, &p);
	hpc_task_sleep(&t, MS(1));
	assert_int_equal(t.state, HPC_TASK_SLEEPING);
	assert_true(hpc_task_waits(&t));
	/* 99.999 us: folded into compute. */
	assert_int_equal(hpc_task_wakeup(&t, MS(1) + US(100) - 1, &p,
					 HPC_CLASS_LOW), 0);
	assert_int_equal(t.state, HPC_TASK_RUNNABLE);
	assert_false(hpc_task_waits(&t));
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.cur_run, MS(1) + US(100) - 1);
	assert_int_equal(t.iter_start, 0);
	assert_int_equal(t.last_run, 0);
	assert_int_equal(t.last_wait, 0);
	assert_int_equal(t.prio, HPC_PRIO_NORMAL);

	/* Exactly 100 us: closes. t_R = 2 ms, t_W = 0.1 ms. */
	hpc_task_sleep(&t, MS(2));
	assert_int_equal(t.cur_run, MS(2));
	assert_int_equal(hpc_task_wakeup(&t, MS(2) + US(100), &p,
					 HPC_CLASS_NONE), 1);
	assert_int_equal(t.nr_iter, 1);
	assert_int_equal(t.last_run, MS(2));
	assert_int_equal(t.last_wait, US(100));
	assert_int_equal(t.last_util, 9523);	/* 2 / 2.1 = 95.238 % */
	assert_int_equal(t.global_util, 9523);
	assert_int_equal(t.sum_run, MS(2));
	assert_int_equal(t.sum_total, MS(2) + US(100));
	assert_int_equal(t.iter_start, MS(2) + US(100));
	assert_int_equal(t.seg_start, MS(2) + US(100));
	assert_int_equal(t.cur_run, 0);
	(void)state;
}

/* The threshold follows the knob: 0 closes on any wake-up, 1 s folds 999 ms. */
static void min_wait_knob(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;

	p.min_wait_us = 0;
	hpc_task_init(&t, 0, &p);
	assert_int_equal(run_iter(&t, &now, US(500), 0, &p, HPC_CLASS_NONE), 1);
	assert_int_equal(t.last_run, US(500));
	assert_int_equal(t.last_wait, 0);
	assert_int_equal(t.last_util, 10000);

	p.min_wait_us = HPC_MAX_MIN_WAIT_US;
	hpc_task_init(&t, 0, &p);
	now = 0;
	assert_int_equal(run_iter(&t, &now, MS(1), MS(999), &p,
				  HPC_CLASS_NONE), 0);
	assert_int_equal(t.cur_run, MS(1000));
	assert_int_equal(run_iter(&t, &now, MS(1000), MS(1000), &p,
				  HPC_CLASS_NONE), 1);
	assert_int_equal(t.last_run, MS(2000));
	assert_int_equal(t.last_wait, MS(1000));
	assert_int_equal(t.last_util, 6666);
	(void)state;
}

/* Short waits inside a compute phase count as compute: t_R grows by them. */
static void short_waits_fold_into_compute(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	int i;

	hpc_task_init(&t, 0, &p);
	/* 600 us + 50 us short wait + 350 us = t_R 1000 us. */
	assert_int_equal(run_iter(&t, &now, US(600), US(50), &p,
				  HPC_CLASS_NONE), 0);
	assert_int_equal(t.cur_run, US(650));
	/* Three page-fault-like 99 us waits. */
	for (i = 0; i < 3; i++)
		assert_int_equal(run_iter(&t, &now, US(1), US(99), &p,
					  HPC_CLASS_NONE), 0);
	assert_int_equal(t.cur_run, US(950));
	assert_int_equal(run_iter(&t, &now, US(50), US(3000), &p,
				  HPC_CLASS_NONE), 1);
	assert_int_equal(t.last_run, US(1000));
	assert_int_equal(t.last_wait, US(3000));
	assert_int_equal(t.last_util, 2500);
	assert_int_equal(t.global_util, 2500);
	assert_int_equal(t.nr_iter, 1);
	(void)state;
}

/*
 * Several iterations, hand-computed (us):
 *   i  t_R   t_W   U_i      sum t_R / sum t_i       U
 *   1  3000  1000  75.00 %   3000 /  4000          75.00 %
 *   2  1000  3000  25.00 %   4000 /  8000          50.00 %  (t_R has a 50 us wait)
 *   3  1500   500  75.00 %   5500 / 10000          55.00 %
 *   4  7000  1000  87.50 %  12500 / 18000          69.44 %
 *   5  1000  2000  33.33 %  13500 / 21000          64.28 %
 */
static void exact_values_over_iterations(void **state)
{
	static const struct {
		u64 run, wait, end;
		u32 last, global;
		u64 sum_run, sum_total;
	} exp[] = {
		{ US(3000), US(1000), US(4000),  7500, 7500, US(3000),  US(4000) },
		{ US(1000), US(3000), US(8000),  2500, 5000, US(4000),  US(8000) },
		{ US(1500),  US(500), US(10000), 7500, 5500, US(5500),  US(10000) },
		{ US(7000), US(1000), US(18000), 8750, 6944, US(12500), US(18000) },
		{ US(1000), US(2000), US(21000), 3333, 6428, US(13500), US(21000) },
	};
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	unsigned int i;

	hpc_task_init(&t, 0, &p);
	for (i = 0; i < sizeof(exp) / sizeof(exp[0]); i++) {
		if (i == 1) {
			/* 600 us, a 50 us wait, 350 us: t_R = 1000 us. */
			assert_int_equal(run_iter(&t, &now, US(600), US(50),
						  &p, HPC_CLASS_NONE), 0);
			assert_int_equal(run_iter(&t, &now, US(350), exp[i].wait,
						  &p, HPC_CLASS_NONE), 1);
		} else {
			assert_int_equal(run_iter(&t, &now, exp[i].run,
						  exp[i].wait, &p,
						  HPC_CLASS_NONE), 1);
		}
		assert_int_equal(now, exp[i].end);
		assert_int_equal(t.nr_iter, i + 1);
		assert_int_equal(t.last_run, exp[i].run);
		assert_int_equal(t.last_wait, exp[i].wait);
		assert_int_equal(t.last_util, exp[i].last);
		assert_int_equal(t.global_util, exp[i].global);
		assert_int_equal(t.heur_util, exp[i].global);	/* Uniform */
		assert_int_equal(t.sum_run, exp[i].sum_run);
		assert_int_equal(t.sum_total, exp[i].sum_total);
		assert_int_equal(t.iter_start, exp[i].end);
		assert_int_equal(t.cur_run, 0);
	}
	(void)state;
}

/* A tick folds running time; it neither closes nor changes closed values. */
static void tick_folds_running_time(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task a, b, snap;
	u64 now = 0, now_b = 0;

	hpc_task_init(&a, 0, &p);
	hpc_task_init(&b, 0, &p);
	run_iter(&a, &now, US(3000), US(1000), &p, HPC_CLASS_NONE);
	run_iter(&b, &now_b, US(3000), US(1000), &p, HPC_CLASS_NONE);

	/* Second iteration of a, ticked every ms while it computes. */
	snap = a;
	hpc_task_tick(&a, now + US(1000));
	assert_int_equal(a.cur_run, US(1000));
	assert_int_equal(a.seg_start, now + US(1000));
	hpc_task_tick(&a, now + US(2000));
	assert_int_equal(a.cur_run, US(2000));
	assert_int_equal(a.seg_start, now + US(2000));
	/* Closed-iteration values untouched. */
	assert_int_equal(a.nr_iter, snap.nr_iter);
	assert_int_equal(a.last_run, snap.last_run);
	assert_int_equal(a.last_wait, snap.last_wait);
	assert_int_equal(a.last_util, snap.last_util);
	assert_int_equal(a.global_util, snap.global_util);
	assert_int_equal(a.heur_util, snap.heur_util);
	assert_int_equal(a.sum_run, snap.sum_run);
	assert_int_equal(a.sum_total, snap.sum_total);
	assert_int_equal(a.iter_start, snap.iter_start);
	assert_int_equal(a.prio, snap.prio);

	hpc_task_sleep(&a, now + US(2500));
	assert_int_equal(a.cur_run, US(2500));
	/* A tick while asleep does nothing. */
	snap = a;
	hpc_task_tick(&a, now + US(3000));
	assert_task_equal(&a, &snap);
	assert_int_equal(hpc_task_wakeup(&a, now + US(4000), &p,
					 HPC_CLASS_NONE), 1);

	/* The same iteration without ticks gives the same state. */
	run_iter(&b, &now_b, US(2500), US(1500), &p, HPC_CLASS_NONE);
	assert_task_equal(&a, &b);
	assert_int_equal(a.last_run, US(2500));
	assert_int_equal(a.last_wait, US(1500));
	assert_int_equal(a.global_util, 6875);	/* 5500 / 8000 */
	(void)state;
}

/* A second sleep, and a wake-up of a task that is not asleep, are ignored. */
static void double_sleep_and_spurious_wakeup(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, snap;

	hpc_task_init(&t, 0, &p);
	/* Wake-up of a runnable task. */
	snap = t;
	assert_int_equal(hpc_task_wakeup(&t, MS(5), &p, HPC_CLASS_LOW), 0);
	assert_task_equal(&t, &snap);

	hpc_task_sleep(&t, MS(1));
	snap = t;
	hpc_task_sleep(&t, MS(2));
	assert_task_equal(&t, &snap);

	/* The wait counts from the first sleep. */
	assert_int_equal(hpc_task_wakeup(&t, MS(3), &p, HPC_CLASS_NONE), 1);
	assert_int_equal(t.last_run, MS(1));
	assert_int_equal(t.last_wait, MS(2));
	assert_int_equal(t.last_util, 3333);

	/* A second wake-up is ignored too. */
	snap = t;
	assert_int_equal(hpc_task_wakeup(&t, MS(9), &p, HPC_CLASS_LOW), 0);
	assert_task_equal(&t, &snap);
	(void)state;
}

/* Timestamps that go backwards (clock skew across CPUs) never underflow. */
static void time_going_backwards(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;

	hpc_task_init(&t, MS(10), &p);
	hpc_task_tick(&t, MS(9));
	assert_int_equal(t.cur_run, 0);
	hpc_task_sleep(&t, MS(8));
	assert_int_equal(t.cur_run, 0);
	assert_int_equal(t.state, HPC_TASK_SLEEPING);
	/* Woken "before" it slept: a zero wait, folded, no iteration. */
	assert_int_equal(hpc_task_wakeup(&t, MS(7), &p, HPC_CLASS_NONE), 0);
	assert_int_equal(t.cur_run, 0);
	assert_int_equal(t.nr_iter, 0);

	/* A real iteration afterwards: bounded values, util within 0..100 %. */
	hpc_task_sleep(&t, MS(11));
	assert_true(t.cur_run <= MS(11));
	assert_int_equal(hpc_task_wakeup(&t, MS(12), &p, HPC_CLASS_NONE), 1);
	assert_true(t.last_run <= MS(11));
	assert_int_equal(t.last_wait, MS(1));
	assert_true(t.last_util <= HPC_UTIL_SCALE);
	assert_true(t.global_util <= HPC_UTIL_SCALE);
	assert_true(t.sum_total >= t.sum_run);
	assert_true(t.sum_total <= MS(12));

	/* A long wait whose wake-up stamp is behind the sleep stamp. */
	hpc_task_sleep(&t, MS(20));
	assert_int_equal(hpc_task_wakeup(&t, MS(19), &p, HPC_CLASS_NONE), 0);
	assert_int_equal(t.nr_iter, 1);
	assert_true(t.cur_run <= MS(20));
	(void)state;
}

/* hpc_util(): exact, capped at 100 %, zero-safe, no overflow. */
static void util_exact_and_capped(void **state)
{
	assert_int_equal(hpc_util(0, 0), 0);
	assert_int_equal(hpc_util(7, 0), 0);
	assert_int_equal(hpc_util(0, 5), 0);
	assert_int_equal(hpc_util(1, 3), 3333);
	assert_int_equal(hpc_util(2, 3), 6666);
	assert_int_equal(hpc_util(3, 4), 7500);
	assert_int_equal(hpc_util(4, 4), 10000);
	/* More run than total (rounding elsewhere) is capped. */
	assert_int_equal(hpc_util(5, 3), 10000);
	assert_int_equal(hpc_util(UINT64_MAX, 1), 10000);
	(void)state;
}

#define WEEK	(7ULL * 24 * 3600 * 1000000000ULL)
#define DAY	(24ULL * 3600 * 1000000000ULL)

static void util_huge_sums(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	int i;

	/* Around the 2^50 switch to the shifted computation. */
	assert_int_equal(hpc_util((1ULL << 50) - 1, (1ULL << 50) - 1), 10000);
	assert_int_equal(hpc_util(1ULL << 50, 1ULL << 50), 10000);
	assert_int_equal(hpc_util(3ULL << 48, 1ULL << 50), 7500);
	assert_int_equal(hpc_util(((1ULL << 50) - 1) / 4 * 3,
				  (1ULL << 50) - 1), 7499);
	/* Where run * 10000 would overflow 64 bits. */
	assert_int_equal(hpc_util(1ULL << 61, 1ULL << 62), 5000);
	assert_int_equal(hpc_util(1ULL << 62, 1ULL << 62), 10000);
	assert_int_equal(hpc_util(UINT64_MAX, UINT64_MAX), 10000);
	/* Just below 1/2 and 1/4: the floor. */
	assert_int_equal(hpc_util(UINT64_MAX / 2, UINT64_MAX), 4999);
	assert_int_equal(hpc_util(UINT64_MAX / 4, UINT64_MAX), 2499);
	/* Weeks of ns: 20 weeks of compute in 21. */
	assert_int_equal(hpc_util(20 * WEEK, 21 * WEEK), 9523);

	/* Accounting over weeks: 5 days compute, 2 days wait, three times. */
	hpc_task_init(&t, 0, &p);
	for (i = 0; i < 3; i++) {
		assert_int_equal(run_iter(&t, &now, 5 * DAY, 2 * DAY, &p,
					  HPC_CLASS_NONE), 1);
		assert_int_equal(t.last_util, 7142);
		assert_int_equal(t.global_util, 7142);
	}
	assert_int_equal(t.sum_total, 3 * WEEK);
	assert_int_equal(t.sum_run, 15 * DAY);
	/* One more iteration of 19 weeks at 100 % (a 1 ms wait). */
	assert_int_equal(run_iter(&t, &now, 19 * WEEK, MS(1), &p,
				  HPC_CLASS_NONE), 1);
	assert_int_equal(t.last_util, 9999);
	/* (15 d + 19 w) / (22 w + 1 ms) = 148 / 154 = 96.10 % */
	assert_int_equal(t.global_util, 9610);
	(void)state;
}

/*
 * hpc_task_sibling_judge(): a task that computed through its sibling's
 * whole last iteration is judged on its live utilisation against that
 * sibling iteration (its U_last), and nothing of its accounting changes.
 */
static void sibling_judge_critical_path(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, peer, snap;
	u64 now = 0;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&peer, 0, &p);
	/* The peer has no closed iteration yet: nothing. */
	snap = t;
	assert_int_equal(hpc_task_sibling_judge(&t, MS(500), &p, &peer), 0);
	assert_task_equal(&t, &snap);

	/* The peer computes 250 ms, waits 750 ms. */
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_HIGH);
	assert_int_equal(peer.last_util, 2500);
	/* A "now" before the peer's close: nothing. */
	assert_int_equal(hpc_task_sibling_judge(&t, MS(999), &p, &peer), 0);
	assert_task_equal(&t, &snap);

	assert_int_equal(hpc_task_sibling_judge(&t, MS(1000), &p, &peer), 1);
	/* No iteration closed: the open one goes on, folded up to now. */
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.last_run, 0);
	assert_int_equal(t.sum_run, 0);
	assert_int_equal(t.sum_total, 0);
	assert_int_equal(t.global_util, 0);
	assert_int_equal(t.iter_start, 0);
	assert_int_equal(t.cur_run, MS(1000));
	assert_int_equal(t.seg_start, MS(1000));
	assert_int_equal(t.state, HPC_TASK_RUNNABLE);
	assert_int_equal(t.judged_at, MS(1000));
	assert_int_equal(t.nr_judged, 1);
	/* Live 100 %: high, the sibling low: one step up. */
	assert_int_equal(t.heur_util, 10000);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 4);

	/* Idempotent for the same sibling iteration. */
	snap = t;
	assert_int_equal(hpc_task_sibling_judge(&t, MS(1000), &p, &peer), 0);
	assert_int_equal(hpc_task_sibling_judge(&t, MS(1900), &p, &peer), 0);
	assert_task_equal(&t, &snap);

	/* The next sibling iteration (a medium one, 70 %) judges it again;
	 * a medium sibling holds it. */
	run_iter(&peer, &now, MS(700), MS(300), &p, HPC_CLASS_HIGH);
	assert_int_equal(hpc_task_sibling_judge(&t, MS(2000), &p, &peer), 1);
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.cur_run, MS(2000));
	assert_int_equal(t.nr_judged, 2);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 5);

	/* Its own wake-up still closes the whole iteration, once. */
	hpc_task_sleep(&t, MS(2100));
	assert_int_equal(hpc_task_wakeup(&t, MS(2200), &p, HPC_CLASS_NONE), 1);
	assert_int_equal(t.nr_iter, 1);
	assert_int_equal(t.last_run, MS(2100));
	assert_int_equal(t.last_wait, MS(100));
	assert_int_equal(t.sum_total, MS(2200));
	(void)state;
}

/* The utilisation a judgement decides on, per heuristic. */
static void sibling_judge_heuristic_util(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, peer;
	u64 now = 0, tn = 0;
	int h;

	for (h = HPC_HEUR_UNIFORM; h < HPC_HEUR_NR; h++) {
		p.heuristic = h;
		tn = 0;
		now = 0;
		hpc_task_init(&t, 0, &p);
		hpc_task_init(&peer, 0, &p);
		/* t: one iteration of 40 % (40 ms computing, 60 ms waiting). */
		run_iter(&t, &tn, MS(40), MS(60), &p, HPC_CLASS_NONE);
		assert_int_equal(t.global_util, 4000);
		/* Then it computes from 100 ms on without waiting; the peer
		 * closes iterations of 100 ms, the second one at 300 ms. */
		now = MS(100);
		hpc_task_init(&peer, now, &p);
		run_iter(&peer, &now, MS(10), MS(90), &p, HPC_CLASS_NONE);
		run_iter(&peer, &now, MS(10), MS(90), &p, HPC_CLASS_NONE);
		assert_int_equal(now, MS(300));
		assert_int_equal(hpc_task_sibling_judge(&t, MS(300), &p, &peer),
				 1);
		if (h == HPC_HEUR_UNIFORM)
			/* (40 + 200) / (100 + 200) */
			assert_int_equal(t.heur_util, 8000);
		else if (h == HPC_HEUR_ADAPTIVE)
			/* 0.1 * 40 % + 0.9 * 100 % */
			assert_int_equal(t.heur_util, 9400);
		else
			/* The peer's deep wait (10 %) restarts Phase's
			 * history: the open iteration alone, 100 %. */
			assert_int_equal(t.heur_util, 10000);
		/* Uniform: medium holds; Adaptive, Phase: high, sibling low:
		 * up. */
		assert_int_equal(t.prio, h == HPC_HEUR_UNIFORM ? 4 : 5);
	}
	(void)state;
}

/* Only a runnable task that computed through, and is overdue. */
static void sibling_judge_only_when_computing_through(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, peer, snap;
	u64 now = 0, tn = 0;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&peer, 0, &p);
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_HIGH);

	/* Asleep: its own wake-up will close the iteration. */
	hpc_task_sleep(&t, MS(990));
	snap = t;
	assert_int_equal(hpc_task_sibling_judge(&t, MS(1000), &p, &peer), 0);
	assert_task_equal(&t, &snap);

	/* Closed an iteration of its own during the sibling's: nothing. */
	hpc_task_init(&t, 0, &p);
	run_iter(&t, &tn, MS(100), MS(1), &p, HPC_CLASS_NONE);
	snap = t;
	assert_int_equal(hpc_task_sibling_judge(&t, MS(1000), &p, &peer), 0);
	assert_task_equal(&t, &snap);

	/*
	 * A task with a longer period than its sibling's: 3 s computing,
	 * 1 ms waiting. Mid-compute it is not judged (its live utilisation
	 * says nothing of its real one), only once overdue.
	 */
	hpc_task_init(&t, 0, &p);
	tn = 0;
	run_iter(&t, &tn, MS(3000), MS(1), &p, HPC_CLASS_NONE);
	assert_int_equal(tn, MS(3001));
	hpc_task_init(&peer, MS(3001), &p);
	now = MS(3001);
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_NONE);
	snap = t;
	assert_int_equal(hpc_task_sibling_judge(&t, now, &p, &peer), 0);
	snap.cur_run = t.cur_run;
	snap.seg_start = t.seg_start;
	assert_task_equal(&t, &snap);
	/* Three sibling iterations later it is overdue (3.001 s < 4 s). */
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_NONE);
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_NONE);
	assert_int_equal(hpc_task_sibling_judge(&t, now, &p, &peer), 0);
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_NONE);
	assert_int_equal(now, MS(7001));
	assert_int_equal(hpc_task_sibling_judge(&t, now, &p, &peer), 1);
	assert_int_equal(t.nr_iter, 1);
	(void)state;
}

/*
 * A pair neither task of which waits (hpc_pair_busy()): a lead taken on a
 * start-up wait is given back, one step per horizon (HPC_BUSY_PAIR_NS, or
 * twice the task's last iteration), down to min_prio and no further; a
 * sibling that waits, or a horizon not yet over, keeps it.
 */
static void busy_pair_gives_the_lead_back(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, peer, snap;
	u64 now = 0, h = HPC_BUSY_PAIR_NS;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&peer, 0, &p);
	/* Raised at start-up: 6 against 4, both busy from 0 on. */
	t.prio = 6;
	t.prev_prio = 6;
	snap = t;
	/* Within the horizon: nothing. */
	assert_int_equal(hpc_task_sibling_judge(&t, h - 1, &p, &peer), 0);
	assert_task_equal(&t, &snap);
	/* A sibling that sleeps waits for us: the lead stands. */
	peer.state = HPC_TASK_SLEEPING;
	assert_int_equal(hpc_task_sibling_judge(&t, h, &p, &peer), 0);
	assert_task_equal(&t, &snap);
	peer.state = HPC_TASK_RUNNABLE;
	/* One horizon of a busy pair: one step down, nothing accounted. */
	assert_int_equal(hpc_task_sibling_judge(&t, h, &p, &peer), 1);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 6);
	assert_int_equal(t.nr_judged, 1);
	assert_int_equal(t.judged_at, h);
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.sum_total, 0);
	/* Once per horizon. */
	assert_int_equal(hpc_task_sibling_judge(&t, 2 * h - 1, &p, &peer), 0);
	assert_int_equal(t.prio, 5);
	assert_int_equal(hpc_task_sibling_judge(&t, 2 * h, &p, &peer), 1);
	assert_int_equal(t.prio, 4);
	/* At min_prio it stays. */
	assert_int_equal(hpc_task_sibling_judge(&t, 5 * h, &p, &peer), 0);
	assert_int_equal(t.prio, 4);

	/*
	 * A task whose iterations last 2 s: its horizon is 4 s. And a sibling
	 * that closed an iteration within its own horizon keeps the lead.
	 */
	hpc_task_init(&t, 0, &p);
	run_iter(&t, &now, MS(1900), MS(100), &p, HPC_CLASS_NONE);
	t.prio = 5;
	hpc_task_init(&peer, now, &p);
	assert_int_equal(hpc_task_sibling_judge(&t, now + MS(3999), &p, &peer), 0);
	assert_int_equal(t.prio, 5);
	assert_int_equal(hpc_task_sibling_judge(&t, now + MS(4000), &p, &peer), 1);
	assert_int_equal(t.prio, 4);
	hpc_task_init(&t, 0, &p);
	t.prio = 5;
	hpc_task_init(&peer, 0, &p);
	now = 0;
	run_iter(&peer, &now, MS(1500), MS(10), &p, HPC_CLASS_NONE);
	/* judged on that iteration (a busy one: held), not as a busy pair */
	hpc_task_sibling_judge(&t, 2 * h, &p, &peer);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.judged_at, peer.iter_start);
	(void)state;
}

/*
 * A lead given back stays given back: once the sibling has computed for a
 * whole horizon since its last iteration, that iteration is no news, and
 * neither the next tick nor a new sibling whose last iteration is as old
 * (a migration) judges on it again. Only a new iteration of the sibling
 * does.
 */
static void busy_pair_stays_given_back(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, peer, other;
	u64 now = 0, h = HPC_BUSY_PAIR_NS, tick, nr;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&peer, 0, &p);
	/* The sibling waits deeply once (a start-up), then computes. */
	run_iter(&peer, &now, MS(1), MS(49), &p, HPC_CLASS_NONE);
	other = peer;
	assert_int_equal(hpc_task_sibling_judge(&t, MS(51), &p, &peer), 1);
	assert_int_equal(t.prio, 5);
	nr = t.nr_judged;
	/* A horizon of ticks: the lead stands, judged once. */
	for (tick = MS(52); tick < MS(50) + h; tick += MS(1))
		assert_int_equal(hpc_task_sibling_judge(&t, tick, &p, &peer), 0);
	assert_int_equal(t.prio, 5);
	/* The pair is busy: the lead goes, and no tick after takes it back. */
	assert_int_equal(hpc_task_sibling_judge(&t, MS(50) + h, &p, &peer), 1);
	assert_int_equal(t.prio, 4);
	assert_int_equal(t.nr_judged, nr + 1);
	for (tick = MS(51) + h; tick < MS(50) + 3 * h; tick += MS(1)) {
		hpc_task_sibling_judge(&t, tick, &p, &peer);
		assert_int_equal(t.prio, 4);
	}
	assert_int_equal(t.nr_judged, nr + 1);
	/* A new sibling (migrated here) with an old iteration: nothing. */
	other.iter_start -= MS(10);
	assert_int_equal(hpc_task_sibling_judge(&t, MS(50) + 3 * h, &p, &other), 0);
	assert_int_equal(t.prio, 4);
	/* The sibling's next iterations are news: a busy one holds... */
	now = MS(50) + 3 * h;
	hpc_task_sleep(&peer, now);
	now += MS(10);
	hpc_task_wakeup(&peer, now, &p, HPC_CLASS_HIGH);
	assert_int_equal(hpc_task_sibling_judge(&t, now + MS(1), &p, &peer), 1);
	assert_int_equal(t.prio, 4);
	/* ... and a deep wait raises @t again. */
	run_iter(&peer, &now, MS(1), MS(49), &p, HPC_CLASS_HIGH);
	assert_int_equal(hpc_task_sibling_judge(&t, now + MS(1), &p, &peer), 1);
	assert_int_equal(t.prio, 5);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_state),
		cmocka_unit_test(closes_only_after_min_wait),
		cmocka_unit_test(min_wait_knob),
		cmocka_unit_test(short_waits_fold_into_compute),
		cmocka_unit_test(exact_values_over_iterations),
		cmocka_unit_test(tick_folds_running_time),
		cmocka_unit_test(double_sleep_and_spurious_wakeup),
		cmocka_unit_test(time_going_backwards),
		cmocka_unit_test(util_exact_and_capped),
		cmocka_unit_test(util_huge_sums),
		cmocka_unit_test(sibling_judge_critical_path),
		cmocka_unit_test(sibling_judge_heuristic_util),
		cmocka_unit_test(sibling_judge_only_when_computing_through),
		cmocka_unit_test(busy_pair_gives_the_lead_back),
		cmocka_unit_test(busy_pair_stays_given_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
