// SPDX-License-Identifier: GPL-2.0
/*
 * Heuristics (Uniform, Adaptive, Phase), classification, the decision rule
 * (hpc_decide) and the judgement of the sibling task (hpc_peer_class).
 * Paper section IV.B: Uniform decides on U = sum(t_R) / sum(t_i); Adaptive
 * on G * U_g(i - 1) + L * U_l(i).
 */
#include "hpc_test.h"

static struct hpc_params defaults(void)
{
	struct hpc_params p;

	hpc_params_default(&p);
	return p;
}

/*
 * The sequence the heuristic tests run (us):
 *   i  t_R   t_W   U_i     U (global after i)
 *   1  3000  1000  7500    7500
 *   2  1000  3000  2500    5000
 *   3  1500   500  7500    5500
 *   4  1000  3000  2500    4642   (6500 / 14000)
 */
#define NR_SEQ	4
static const u64 seq_run[NR_SEQ] = { US(3000), US(1000), US(1500), US(1000) };
static const u64 seq_wait[NR_SEQ] = { US(1000), US(3000), US(500), US(3000) };
static const u32 seq_last[NR_SEQ] = { 7500, 2500, 7500, 2500 };
static const u32 seq_global[NR_SEQ] = { 7500, 5000, 5500, 4642 };

/* Run the sequence; heur[i] gets heur_util after iteration i + 1. */
static void run_seq(const struct hpc_params *p, u32 heur[NR_SEQ])
{
	struct hpc_task t;
	u64 now = 0;
	int i;

	hpc_task_init(&t, 0, p);
	for (i = 0; i < NR_SEQ; i++) {
		assert_int_equal(run_iter(&t, &now, seq_run[i], seq_wait[i], p,
					  HPC_CLASS_NONE), 1);
		assert_int_equal(t.last_util, seq_last[i]);
		assert_int_equal(t.global_util, seq_global[i]);
		heur[i] = t.heur_util;
	}
}

static void uniform_uses_global(void **state)
{
	struct hpc_params p = defaults();
	u32 h[NR_SEQ];
	int i;

	p.heuristic = HPC_HEUR_UNIFORM;
	run_seq(&p, h);
	for (i = 0; i < NR_SEQ; i++)
		assert_int_equal(h[i], seq_global[i]);
	/* The weights do not matter to Uniform. */
	p.global_weight = 70;
	p.last_weight = 30;
	run_seq(&p, h);
	for (i = 0; i < NR_SEQ; i++)
		assert_int_equal(h[i], seq_global[i]);
	(void)state;
}

/* Adaptive, G = 10, L = 90 (the paper's setting). */
static void adaptive_default_weights(void **state)
{
	struct hpc_params p = defaults();
	u32 h[NR_SEQ];

	p.heuristic = HPC_HEUR_ADAPTIVE;
	assert_int_equal(p.global_weight, 10);
	assert_int_equal(p.last_weight, 90);
	run_seq(&p, h);
	assert_int_equal(h[0], 7500);	/* first iteration: U_last */
	assert_int_equal(h[1], 3000);	/* (10 * 7500 + 90 * 2500) / 100 */
	assert_int_equal(h[2], 7250);	/* (10 * 5000 + 90 * 7500) / 100 */
	assert_int_equal(h[3], 2800);	/* (10 * 5500 + 90 * 2500) / 100 */
	(void)state;
}

static void adaptive_other_weights(void **state)
{
	struct hpc_params p = defaults();
	u32 h[NR_SEQ];
	int i;

	p.heuristic = HPC_HEUR_ADAPTIVE;

	p.global_weight = 50;
	p.last_weight = 50;
	run_seq(&p, h);
	assert_int_equal(h[0], 7500);
	assert_int_equal(h[1], 5000);	/* (7500 + 2500) / 2 */
	assert_int_equal(h[2], 6250);	/* (5000 + 7500) / 2 */
	assert_int_equal(h[3], 4000);	/* (5500 + 2500) / 2 */

	/* G = 30: (30 * 7500 + 70 * 2500) / 100 = 4000, ... */
	p.global_weight = 30;
	p.last_weight = 70;
	run_seq(&p, h);
	assert_int_equal(h[1], 4000);
	assert_int_equal(h[2], 6750);
	assert_int_equal(h[3], 3400);

	/* G = 100: the global utilisation up to the previous iteration. */
	p.global_weight = 100;
	p.last_weight = 0;
	run_seq(&p, h);
	assert_int_equal(h[0], seq_last[0]);
	for (i = 1; i < NR_SEQ; i++)
		assert_int_equal(h[i], seq_global[i - 1]);

	/* L = 100: the last iteration only. */
	p.global_weight = 0;
	p.last_weight = 100;
	run_seq(&p, h);
	for (i = 0; i < NR_SEQ; i++)
		assert_int_equal(h[i], seq_last[i]);
	(void)state;
}

/*
 * After a low history, busy iterations: Uniform's global stays low and the
 * task holds; Adaptive sees high and, its sibling waiting, steps up once the
 * task has been busy in two iterations running (one busy iteration is not
 * yet a present: hpc_own_now()).
 *   i  t_R   t_W   U_i   U                        Adaptive
 *   1  1000  3000  2500  2500                     2500
 *   2  1000  3000  2500  2500                     2500
 *   3  9500   500  9500  11500 / 18000 = 6388     (10 * 2500 + 90 * 9500) / 100 = 8800
 *   4  9500   500  9500  21000 / 28000 = 7500     (10 * 6388 + 90 * 9500) / 100 = 9188
 */
static void adaptive_reacts_uniform_holds(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task u, a;
	u64 nu = 0, na = 0;
	int i;

	p.min_prio = 4;
	hpc_task_init(&u, 0, &p);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	hpc_task_init(&a, 0, &p);
	for (i = 0; i < 2; i++) {
		p.heuristic = HPC_HEUR_UNIFORM;
		run_iter(&u, &nu, US(1000), US(3000), &p, HPC_CLASS_LOW);
		p.heuristic = HPC_HEUR_ADAPTIVE;
		run_iter(&a, &na, US(1000), US(3000), &p, HPC_CLASS_LOW);
	}
	assert_int_equal(u.prio, 4);
	assert_int_equal(a.prio, 4);

	p.heuristic = HPC_HEUR_UNIFORM;
	run_iter(&u, &nu, US(9500), US(500), &p, HPC_CLASS_LOW);
	assert_int_equal(u.heur_util, 6388);
	assert_int_equal(u.prio, 4);

	p.heuristic = HPC_HEUR_ADAPTIVE;
	run_iter(&a, &na, US(9500), US(500), &p, HPC_CLASS_LOW);
	assert_int_equal(a.heur_util, 8800);
	assert_int_equal(a.prio, 4);

	p.heuristic = HPC_HEUR_UNIFORM;
	run_iter(&u, &nu, US(9500), US(500), &p, HPC_CLASS_LOW);
	assert_int_equal(u.heur_util, 7500);
	assert_int_equal(u.prio, 4);

	p.heuristic = HPC_HEUR_ADAPTIVE;
	run_iter(&a, &na, US(9500), US(500), &p, HPC_CLASS_LOW);
	assert_int_equal(a.heur_util, 9188);
	assert_int_equal(a.prio, 5);
	assert_int_equal(a.prev_prio, 4);
	(void)state;
}

/*
 * Phase: the mean of the iterations since the loads last changed. In the
 * sequence, 2500 is a deep wait of the task's own (below half of
 * LOW_UTIL): the loads changed, the history restarts with it.
 *   i  U_i   Phase
 *   1  7500  7500
 *   2  2500  2500                 (deep: restart)
 *   3  7500  (2500 + 7500) / 2 = 5000
 *   4  2500  2500                 (deep: restart)
 */
static void phase_mean_since_change(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u32 h[NR_SEQ];
	u64 now = 0;

	p.heuristic = HPC_HEUR_PHASE;
	run_seq(&p, h);
	assert_int_equal(h[0], 7500);
	assert_int_equal(h[1], 2500);
	assert_int_equal(h[2], 5000);
	assert_int_equal(h[3], 2500);

	/* No deep wait: the mean of every iteration, rounded. */
	hpc_task_init(&t, 0, &p);
	run_iter(&t, &now, US(7500), US(2500), &p, HPC_CLASS_NONE);
	run_iter(&t, &now, US(4000), US(6000), &p, HPC_CLASS_NONE);
	assert_int_equal(t.heur_util, 5750);
	run_iter(&t, &now, US(9000), US(1000), &p, HPC_CLASS_NONE);
	assert_int_equal(t.heur_util, 6833);	/* 20500 / 3 */
	assert_int_equal(t.ph_nr, 3);
	(void)state;
}

/*
 * A sibling's deep wait restarts the history too: after four iterations at
 * 50 % (medium), a busy one against a sibling that waited deep is the
 * phase (95 %: high, and the task steps up once busy twice, as Adaptive
 * does); against a shallow wait (40 %) it is one iteration of five (59 %,
 * medium), as Uniform has it.
 */
static void phase_restarts_on_sibling_deep_wait(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	int i;

	p.heuristic = HPC_HEUR_PHASE;
	hpc_task_init(&t, 0, &p);
	for (i = 0; i < 4; i++)
		run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_NONE);
	assert_int_equal(t.heur_util, 5000);
	run_iter(&t, &now, US(9500), US(500), &p, HPC_CLASS_LOW);
	assert_int_equal(t.heur_util, 5900);	/* (4 * 5000 + 9500) / 5 */
	assert_int_equal(t.ph_nr, 5);

	hpc_task_init(&t, 0, &p);
	now = 0;
	for (i = 0; i < 4; i++)
		run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_NONE);
	run_iter(&t, &now, US(9500), US(500), &p,
		 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	assert_int_equal(t.heur_util, 9500);
	assert_int_equal(t.ph_nr, 1);
	assert_int_equal(t.prio, 4);	/* busy once: not yet a present */
	run_iter(&t, &now, US(9500), US(500), &p,
		 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	assert_int_equal(t.heur_util, 9500);
	assert_int_equal(t.prio, 5);
	/* Uniform, the same iterations: 65 % overall, medium, holds. */
	assert_int_equal(t.global_util, 6500);
	p.heuristic = HPC_HEUR_UNIFORM;
	hpc_task_init(&t, 0, &p);
	now = 0;
	for (i = 0; i < 4; i++)
		run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_NONE);
	for (i = 0; i < 2; i++)
		run_iter(&t, &now, US(9500), US(500), &p,
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	assert_int_equal(t.prio, 4);
	(void)state;
}

/* Low below LOW_UTIL, high above HIGH_UTIL, the bounds themselves medium. */
static void classify_bounds(void **state)
{
	struct hpc_params p = defaults();

	assert_int_equal(hpc_classify(0, &p), HPC_CLASS_LOW);
	assert_int_equal(hpc_classify(6499, &p), HPC_CLASS_LOW);
	assert_int_equal(hpc_classify(6500, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(7500, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(8500, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(8501, &p), HPC_CLASS_HIGH);
	assert_int_equal(hpc_classify(10000, &p), HPC_CLASS_HIGH);

	p.low_util = 0;
	p.high_util = 100;
	assert_int_equal(hpc_classify(0, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(10000, &p), HPC_CLASS_MEDIUM);

	p.low_util = 30;
	p.high_util = 31;
	assert_int_equal(hpc_classify(2999, &p), HPC_CLASS_LOW);
	assert_int_equal(hpc_classify(3000, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(3100, &p), HPC_CLASS_MEDIUM);
	assert_int_equal(hpc_classify(3101, &p), HPC_CLASS_HIGH);
	(void)state;
}

static const int all_classes[] = {
	HPC_CLASS_NONE, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, HPC_CLASS_HIGH,
};
#define NR_CLASSES	4

/*
 * Low: one step down, never below min_prio, unless the sibling waits too:
 * then both wait for a task elsewhere, which the pair's lead does not slow
 * (a raised task that gave it up would only be raised again).
 */
static void decide_low_steps_down(void **state)
{
	struct hpc_params p = defaults();	/* 4..6 */
	int i;

	for (i = 0; i < NR_CLASSES; i++) {
		u32 held = all_classes[i] == HPC_CLASS_LOW;

		assert_int_equal(hpc_decide(6, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p),
				 5 + held);
		assert_int_equal(hpc_decide(5, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p),
				 4 + held);
		assert_int_equal(hpc_decide(4, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p), 4);
	}
	/* Whether the sibling's wait is sure or not. */
	assert_int_equal(hpc_decide(5, HPC_CLASS_LOW, HPC_CLASS_LOW,
				    HPC_CLASS_LOW | HPC_PEER_UNSURE, &p), 5);
	p.min_prio = 1;
	assert_int_equal(hpc_decide(2, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM, &p), 1);
	assert_int_equal(hpc_decide(1, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM, &p), 1);
	(void)state;
}

/* High: one step up only while the sibling is low, never above max_prio. */
static void decide_high(void **state)
{
	struct hpc_params p = defaults();
	u32 prio;
	int i;

	assert_int_equal(hpc_decide(4, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 5);
	assert_int_equal(hpc_decide(5, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 6);
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 6);
	for (prio = 4; prio <= 6; prio++) {
		assert_int_equal(hpc_decide(prio, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
					    HPC_CLASS_MEDIUM, &p), prio);
		assert_int_equal(hpc_decide(prio, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
					    HPC_CLASS_HIGH, &p), prio);
		assert_int_equal(hpc_decide(prio, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
					    HPC_CLASS_NONE, &p), prio);
		/* Medium holds, whatever the sibling. */
		for (i = 0; i < NR_CLASSES; i++)
			assert_int_equal(hpc_decide(prio, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM,
						    all_classes[i], &p), prio);
	}
	p.max_prio = 7;
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 7);
	assert_int_equal(hpc_decide(7, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 7);
	(void)state;
}

/*
 * The pair rules. Both contexts raised: one step down. Raised and waiting
 * for a busy sibling: one step down, back to min_prio when the wait was
 * deep, whether the sibling is raised or not. A raised sibling's wait never raises us, and neither does a wait of
 * ours or of the sibling that is not busy.
 */
static void decide_pair_rules(void **state)
{
	struct hpc_params p = defaults();	/* 4..6 */
	const int low_deep = HPC_CLASS_LOW | HPC_CLASS_DEEP;
	int i;

	for (i = 0; i < NR_CLASSES; i++) {
		if (all_classes[i] < 0)
			continue;
		assert_int_equal(hpc_decide(5, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
					    all_classes[i] | HPC_PEER_RAISED, &p), 4);
		assert_int_equal(hpc_decide(6, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM,
					    all_classes[i] | HPC_PEER_RAISED, &p), 5);
		/* At min_prio the sibling's lead is its own business. */
		assert_int_equal(hpc_decide(4, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
					    all_classes[i] | HPC_PEER_RAISED, &p), 4);
	}
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, HPC_CLASS_LOW,
				    HPC_CLASS_HIGH, &p), 5);
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, low_deep,
				    HPC_CLASS_HIGH, &p), 4);
	assert_int_equal(hpc_decide(5, HPC_CLASS_MEDIUM, low_deep,
				    HPC_CLASS_HIGH, &p), 4);
	/* A deep wait drops the lead also when the sibling has taken it
	 * (the loads were reversed): no (5, 5) on the way. */
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, low_deep,
				    HPC_CLASS_HIGH | HPC_PEER_RAISED, &p), 4);
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, HPC_CLASS_LOW,
				    HPC_CLASS_HIGH | HPC_PEER_RAISED, &p), 5);
	/* The sibling is not busy: it waits too (for another core). */
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, low_deep,
				    HPC_CLASS_MEDIUM, &p), 6);
	assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, low_deep,
				    HPC_CLASS_LOW, &p), 6);
	/* Busy by history but not now: no lead started. */
	assert_int_equal(hpc_decide(4, HPC_CLASS_HIGH, HPC_CLASS_MEDIUM,
				    HPC_CLASS_LOW, &p), 4);
	/* An unsure wait starts no lead, but grows one already taken. */
	assert_int_equal(hpc_decide(4, HPC_CLASS_HIGH, HPC_CLASS_HIGH,
				    HPC_CLASS_LOW | HPC_PEER_UNSURE, &p), 4);
	assert_int_equal(hpc_decide(5, HPC_CLASS_HIGH, HPC_CLASS_MEDIUM,
				    HPC_CLASS_LOW | HPC_PEER_UNSURE, &p), 6);
	/* Not if the task waited itself. */
	assert_int_equal(hpc_decide(5, HPC_CLASS_HIGH, HPC_CLASS_LOW,
				    HPC_CLASS_LOW, &p), 5);
	(void)state;
}

/* A priority outside [min, max] (the knobs changed) is clamped first. */
static void decide_clamps_first(void **state)
{
	struct hpc_params p = defaults();
	int i;

	for (i = 0; i < NR_CLASSES; i++) {
		assert_int_equal(hpc_decide(7, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM, all_classes[i], &p), 6);
		assert_int_equal(hpc_decide(0, HPC_CLASS_MEDIUM, HPC_CLASS_MEDIUM, all_classes[i], &p), 4);
		assert_int_equal(hpc_decide(2, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p), 4);
		assert_int_equal(hpc_decide(7, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p),
				 all_classes[i] == HPC_CLASS_LOW ? 6 : 5);
	}
	assert_int_equal(hpc_decide(0, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 5);
	assert_int_equal(hpc_decide(7, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_LOW, &p), 6);
	assert_int_equal(hpc_decide(7, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_HIGH, &p), 6);
	assert_int_equal(hpc_decide(UINT32_MAX, HPC_CLASS_HIGH, HPC_CLASS_HIGH, HPC_CLASS_HIGH, &p), 6);

	/* min = max: nothing moves. */
	p.min_prio = 5;
	p.max_prio = 5;
	for (i = 0; i < NR_CLASSES; i++) {
		assert_int_equal(hpc_decide(4, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p), 5);
		assert_int_equal(hpc_decide(6, HPC_CLASS_HIGH, HPC_CLASS_HIGH, all_classes[i], &p), 5);
		assert_int_equal(hpc_decide(5, HPC_CLASS_HIGH, HPC_CLASS_HIGH, all_classes[i], &p), 5);
		assert_int_equal(hpc_decide(5, HPC_CLASS_LOW, HPC_CLASS_MEDIUM, all_classes[i], &p), 5);
	}
	(void)state;
}

static void task_clamp_prio(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;

	hpc_task_init(&t, 0, &p);
	assert_int_equal(t.prio, 4);
	t.prio = 6;
	assert_int_equal(hpc_task_clamp_prio(&t, &p), 6);
	assert_int_equal(t.prio, 6);
	p.max_prio = 5;
	assert_int_equal(hpc_task_clamp_prio(&t, &p), 5);
	assert_int_equal(t.prio, 5);
	p.min_prio = 2;
	p.max_prio = 3;
	assert_int_equal(hpc_task_clamp_prio(&t, &p), 3);
	t.prio = 1;
	assert_int_equal(hpc_task_clamp_prio(&t, &p), 2);
	assert_int_equal(t.prio, 2);

	/* A new task starts at normal priority, within the knobs. */
	p.min_prio = 5;
	p.max_prio = 6;
	hpc_task_init(&t, 0, &p);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 5);
	p.min_prio = 1;
	p.max_prio = 3;
	hpc_task_init(&t, 0, &p);
	assert_int_equal(t.prio, 3);
	(void)state;
}

/* The wake-up applies the rule with the peer class it is given, once. */
static void wakeup_applies_rule(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;

	hpc_task_init(&t, 0, &p);
	/* High (90 %) with no sibling: holds. */
	run_iter(&t, &now, US(9000), US(1000), &p, HPC_CLASS_NONE);
	assert_int_equal(t.prio, 4);
	/* High with a waiting sibling: up, and prev_prio remembers. */
	run_iter(&t, &now, US(9000), US(1000), &p, HPC_CLASS_LOW);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 4);
	/* A short wait decides nothing, whatever the sibling. */
	run_iter(&t, &now, US(9000), US(10), &p, HPC_CLASS_LOW);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 4);
	run_iter(&t, &now, US(0), US(1000), &p, HPC_CLASS_LOW);
	assert_int_equal(t.prio, 6);
	assert_int_equal(t.prev_prio, 5);
	/* Knobs lowered under the task: clamped, then decided. */
	p.max_prio = 5;
	run_iter(&t, &now, US(9000), US(1000), &p, HPC_CLASS_HIGH);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.prev_prio, 6);
	(void)state;
}

/* Raised 4 -> 5 -> 6 beside a waiting sibling. */
static void lid_raise_to_6(struct hpc_task *t, u64 *now, const struct hpc_params *p)
{
	hpc_task_init(t, *now, p);
	run_iter(t, now, US(9900), US(100), p, HPC_CLASS_LOW);
	run_iter(t, now, US(9900), US(100), p, HPC_CLASS_LOW);
	run_iter(t, now, US(9900), US(100), p, HPC_CLASS_LOW);
	assert_int_equal(t->prio, 6);
}

/*
 * The lid: a pair whose balance point lies between two priorities. At 5
 * the task is busy and its sibling waits (rule 4: up); at 6 it waits for
 * its busy sibling (rule 1: down). Without the lid it alternates 5, 6, 5,
 * ...; with it, it stays at 5 for HPC_LID_DECISIONS decisions, then tries
 * 6 once more. A deep wait of its own (the loads changed) lifts the lid at
 * once.
 */
static void lid_stops_limit_cycle(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	int i, ups = 0;

	lid_raise_to_6(&t, &now, &p);
	assert_int_equal(t.lid, 0);
	/* 6 is too much: a shallow wait for a busy sibling. */
	run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_HIGH);
	assert_int_equal(t.prio, 5);
	assert_int_equal(t.lid, 5);
	/*
	 * 5 is too little, for the lid's whole life: held at 5, also when
	 * the sibling's waits are deep (MetBench's light task computes 25 %).
	 */
	for (i = 0; i < HPC_LID_DECISIONS - 1; i++) {
		run_iter(&t, &now, US(9900), US(100), &p,
			 i % 2 ? HPC_CLASS_LOW : HPC_CLASS_LOW | HPC_CLASS_DEEP);
		assert_int_equal(t.prio, 5);
		assert_int_equal(t.lid, 5);
	}
	/* Lifted: 6 is tried again, and the cycle repeats at that pace. */
	for (i = 0; i < 4 * HPC_LID_DECISIONS; i++) {
		u32 before = t.prio;

		if (t.prio == 6)
			run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_HIGH);
		else
			run_iter(&t, &now, US(9900), US(100), &p, HPC_CLASS_LOW);
		ups += t.prio > before;
	}
	assert_int_equal(ups, 4);
	/* A deep wait lifts the lid at once: the loads changed. */
	while (t.prio != 6)
		run_iter(&t, &now, US(9900), US(100), &p, HPC_CLASS_LOW);
	run_iter(&t, &now, US(5000), US(5000), &p, HPC_CLASS_HIGH);
	assert_int_equal(t.lid, 5);
	run_iter(&t, &now, US(1000), US(9000), &p, HPC_CLASS_HIGH);
	assert_int_equal(t.prio, 4);
	assert_int_equal(t.lid, 0);
	(void)state;
}

/*
 * A lid is set by a step down beside a sibling that computes, not raised
 * (rule 1, or rule 3 beside a sibling of medium class), and by nothing
 * else: a step down beside a raised sibling (rule 2), with no sibling, or
 * at a deep wait.
 */
static void lid_only_on_overshoot(void **state)
{
	static const struct {
		u64 run_us, wait_us;	/* the iteration after 4 -> 5 -> 6 */
		int peer;
		u32 prio, lid;		/* after it */
		u32 next;		/* after a busy one beside a waiting sibling */
	} cases[] = {
		/* Rule 3 beside a sibling that computes some: a lid. */
		{ 4000, 6000, HPC_CLASS_MEDIUM, 5, 5, 5 },
		/* Rule 1 (a busy sibling): a lid. */
		{ 5000, 5000, HPC_CLASS_HIGH, 5, 5, 5 },
		/* No sibling: no lid, back up at once beside a waiting one. */
		{ 4000, 6000, HPC_CLASS_NONE, 5, 0, 6 },
		/* The sibling raised (rule 2): no lid. */
		{ 9900, 100, HPC_CLASS_MEDIUM | HPC_PEER_RAISED, 5, 0, 6 },
		/* A deep wait: back to min_prio, no lid (a new lead needs two busy iterations). */
		{ 1000, 9000, HPC_CLASS_HIGH, 4, 0, 4 },
	};
	struct hpc_params p = defaults();
	struct hpc_task t;
	u64 now = 0;
	size_t i;

	p.heuristic = HPC_HEUR_ADAPTIVE;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lid_raise_to_6(&t, &now, &p);
		run_iter(&t, &now, US(cases[i].run_us), US(cases[i].wait_us), &p,
			 cases[i].peer);
		assert_int_equal(t.prio, cases[i].prio);
		assert_int_equal(t.lid, cases[i].lid);
		run_iter(&t, &now, US(9900), US(100), &p, HPC_CLASS_LOW);
		assert_int_equal(t.prio, cases[i].next);
	}
	(void)state;
}

/*
 * hpc_peer_class(): the load-imbalance detector. The waiter went to sleep at
 * @since and wakes at @now. It judges the sibling's last iteration only,
 * never its history (the heuristics judge the task's own utilisation).
 */

/* A sibling that closed an iteration while we waited: that iteration. */
static void peer_woke_during_wait(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;
	u64 now = 0;

	hpc_task_init(&peer, 0, &p);
	/* The peer waited 75 % (U_last 2500: low), woke at 4000 us. */
	run_iter(&peer, &now, US(1000), US(3000), &p, HPC_CLASS_NONE);
	assert_int_equal(peer.last_util, 2500);
	/* We slept at 3900 us (or exactly at 4000): the peer's last iteration
	 * counts, though it has been computing since. */
	hpc_task_tick(&peer, US(4100));
	assert_int_equal(hpc_peer_class(&peer, US(4100), US(3900), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	assert_int_equal(hpc_peer_class(&peer, US(4100), US(4000), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	/* We slept after it woke: its open iteration (100 us, all compute). */
	assert_int_equal(hpc_peer_class(&peer, US(4100), US(4001), &p),
			 HPC_CLASS_HIGH);

	/* A busy iteration (95 %) after a lazy one: global 75 % (medium),
	 * last 95 %: the sibling is high, whatever the heuristic. */
	run_iter(&peer, &now, US(9500), US(500), &p, HPC_CLASS_NONE);
	assert_int_equal(peer.last_util, 9500);
	assert_int_equal(peer.global_util, 7500);
	assert_int_equal(hpc_peer_class(&peer, now, now - US(200), &p),
			 HPC_CLASS_HIGH);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	assert_int_equal(hpc_peer_class(&peer, now, now - US(200), &p),
			 HPC_CLASS_HIGH);

	/* A lazy iteration (40 %) after busy ones may be one noisy iteration:
	 * low but unsure (it starts no lead); a second one confirms it. */
	p.heuristic = HPC_HEUR_UNIFORM;
	hpc_task_init(&peer, 0, &p);
	now = 0;
	run_iter(&peer, &now, US(9500), US(500), &p, HPC_CLASS_NONE);
	run_iter(&peer, &now, US(9500), US(500), &p, HPC_CLASS_NONE);
	run_iter(&peer, &now, US(4000), US(6000), &p, HPC_CLASS_NONE);
	assert_int_equal(peer.global_util, 7666);
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_LOW | HPC_PEER_UNSURE);
	run_iter(&peer, &now, US(4000), US(6000), &p, HPC_CLASS_NONE);
	assert_int_equal(peer.prev_util, 4000);
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_LOW);

	/* A deep wait (30 %: below half of low_util) needs no confirmation;
	 * it is flagged deep (the loads changed: Phase's history restarts). */
	hpc_task_init(&peer, 0, &p);
	now = 0;
	run_iter(&peer, &now, US(9500), US(500), &p, HPC_CLASS_NONE);
	run_iter(&peer, &now, US(3000), US(7000), &p, HPC_CLASS_NONE);
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	/* Nor does it were the sibling raised: a deep wait means the loads
	 * changed; the raised sibling drops its lead (hpc_decide() rule 1) and
	 * we are the heavy task now. */
	peer.prio = 5;
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	/* A shallow wait (40 %) of a raised sibling is its lead's. */
	run_iter(&peer, &now, US(4000), US(6000), &p, HPC_CLASS_NONE);
	peer.prio = 5;
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_MEDIUM | HPC_PEER_RAISED);
	/* Its closed iteration ran raised (prev_prio): raised, even if it is
	 * back at min_prio now ... */
	peer.prio = 4;
	peer.prev_prio = 5;
	assert_int_equal(hpc_peer_class(&peer, now + US(10), now - US(5000), &p),
			 HPC_CLASS_MEDIUM | HPC_PEER_RAISED);
	/* ... but its open iteration, run at min_prio after that decision,
	 * is not: a wait for us (40 %, after a 40 % one: confirmed). */
	hpc_task_sleep(&peer, now + US(4000));
	assert_int_equal(hpc_peer_class(&peer, now + US(10000), now + US(5000), &p),
			 HPC_CLASS_LOW);
	(void)state;
}

/*
 * A sibling that closed an iteration while we waited, then computed and went
 * back to sleep before our wake-up was handled (a late wake-up of ours): that
 * closed iteration still answers, not the compute it did since.
 */
static void peer_woke_and_slept_again(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;
	u64 now = 0;

	hpc_task_init(&peer, 0, &p);
	/* U_last 25 % (low), woke at 4000 us; we slept at 3900 us. */
	run_iter(&peer, &now, US(1000), US(3000), &p, HPC_CLASS_NONE);
	/* It computes 5 ms and sleeps at 9000 us; we wake at 9050 us. */
	hpc_task_sleep(&peer, US(9000));
	assert_int_equal(hpc_peer_class(&peer, US(9050), US(3900), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	/* Had we slept after it woke, its open iteration (5 ms of 5.05) */
	assert_int_equal(hpc_peer_class(&peer, US(9050), US(4001), &p),
			 HPC_CLASS_HIGH);
	(void)state;
}

/* A sibling that has been computing since before we slept: high. */
static void peer_computing_all_along(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;

	hpc_task_init(&peer, 0, &p);
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(2), &p),
			 HPC_CLASS_HIGH);
	/* With ticks folding its running time, the same. */
	hpc_task_tick(&peer, MS(5));
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(2), &p),
			 HPC_CLASS_HIGH);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(2), &p),
			 HPC_CLASS_HIGH);
	(void)state;
}

/* A sibling that has been asleep most of the time: low. */
static void peer_sleeping_long(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;

	hpc_task_init(&peer, 0, &p);
	hpc_task_sleep(&peer, MS(1));
	/* 1 ms of compute in 10 ms: deep. */
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(5), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	/* 7 ms in 10 ms: medium; 9 ms in 10 ms: high. */
	hpc_task_init(&peer, 0, &p);
	hpc_task_sleep(&peer, MS(7));
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(8), &p),
			 HPC_CLASS_MEDIUM);
	hpc_task_init(&peer, 0, &p);
	hpc_task_sleep(&peer, MS(9));
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(8), &p),
			 HPC_CLASS_HIGH);
	(void)state;
}

/* No time elapsed in the peer's iteration: no information. */
static void peer_no_elapsed_time(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;

	hpc_task_init(&peer, MS(10), &p);
	assert_int_equal(hpc_peer_class(&peer, MS(10), MS(9), &p),
			 HPC_CLASS_NONE);
	/* Clock skew: "now" before the peer's iteration start. */
	assert_int_equal(hpc_peer_class(&peer, MS(8), MS(7), &p),
			 HPC_CLASS_NONE);
	(void)state;
}

/*
 * A sibling judged on its open iteration ignores its history: history low
 * (25 %), computing for 1 ms since 4 ms -> high, for both heuristics (a
 * heuristic blend would say 40 % for Uniform).
 */
static void peer_open_iteration_ignores_history(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer;
	u64 now = 0;

	hpc_task_init(&peer, 0, &p);
	run_iter(&peer, &now, US(1000), US(3000), &p, HPC_CLASS_NONE);
	assert_int_equal(now, US(4000));
	/* We slept at 4500 us, after the peer's iteration started. */
	assert_int_equal(hpc_peer_class(&peer, US(5000), US(4500), &p),
			 HPC_CLASS_HIGH);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	assert_int_equal(hpc_peer_class(&peer, US(5000), US(4500), &p),
			 HPC_CLASS_HIGH);
	/* Asleep since 4200 us: 200 us of 1000 us -> low (deep). */
	hpc_task_sleep(&peer, US(4200));
	assert_int_equal(hpc_peer_class(&peer, US(5000), US(4500), &p),
			 HPC_CLASS_LOW | HPC_CLASS_DEEP);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uniform_uses_global),
		cmocka_unit_test(adaptive_default_weights),
		cmocka_unit_test(adaptive_other_weights),
		cmocka_unit_test(adaptive_reacts_uniform_holds),
		cmocka_unit_test(phase_mean_since_change),
		cmocka_unit_test(phase_restarts_on_sibling_deep_wait),
		cmocka_unit_test(decide_pair_rules),
		cmocka_unit_test(classify_bounds),
		cmocka_unit_test(decide_low_steps_down),
		cmocka_unit_test(decide_high),
		cmocka_unit_test(decide_clamps_first),
		cmocka_unit_test(task_clamp_prio),
		cmocka_unit_test(wakeup_applies_rule),
		cmocka_unit_test(lid_stops_limit_cycle),
		cmocka_unit_test(lid_only_on_overshoot),
		cmocka_unit_test(peer_woke_during_wait),
		cmocka_unit_test(peer_woke_and_slept_again),
		cmocka_unit_test(peer_computing_all_along),
		cmocka_unit_test(peer_sleeping_long),
		cmocka_unit_test(peer_no_elapsed_time),
		cmocka_unit_test(peer_open_iteration_ignores_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
