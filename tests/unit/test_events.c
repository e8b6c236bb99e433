// SPDX-License-Identifier: GPL-2.0
/*
 * The events every front end reports (hpc_on_wakeup(), hpc_on_tick()) and
 * the priority it applies (hpc_task_next_prio()): the same decisions as the
 * accounting calls they are made of, a fixed priority kept in t->prio (what
 * the sibling sees), and nothing changed by an event that does not apply.
 */
#include "hpc_test.h"

static struct hpc_params defaults(void)
{
	struct hpc_params p;

	hpc_params_default(&p);
	return p;
}

/* A fixed priority wins; without one, the core's priority within the knobs. */
static void next_prio_fixed_or_clamped(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;

	hpc_task_init(&t, 0, &p);
	t.prio = 6;
	assert_int_equal(hpc_task_next_prio(&t, &p, 0), 6);
	p.max_prio = 5;
	assert_int_equal(hpc_task_next_prio(&t, &p, 0), 5);
	assert_int_equal(t.prio, 5);
	/* Fixed: outside the knobs' window too, and stored. */
	assert_int_equal(hpc_task_next_prio(&t, &p, 2), 2);
	assert_int_equal(t.prio, 2);
	(void)state;
}

/* A task that is not sleeping: a wake-up changes nothing. */
static void wakeup_of_a_runnable_task(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, snap;

	hpc_task_init(&t, 0, &p);
	snap = t;
	assert_int_equal(hpc_on_wakeup(&t, MS(10), &p, NULL, 6), 0);
	assert_task_equal(&t, &snap);
	(void)state;
}

/*
 * hpc_on_wakeup() decides as hpc_task_wakeup() with hpc_peer_class() of the
 * snapshot (HPC_CLASS_NONE without one), then applies the fixed priority.
 */
static void wakeup_is_wakeup_with_peer_class(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task peer, a, b;
	u64 now = 0;
	int i;

	hpc_task_init(&peer, 0, &p);
	hpc_task_init(&a, 0, &p);
	b = a;
	for (i = 0; i < 6; i++) {
		/* The sibling computes 30 % of each iteration, we 90 %. */
		run_iter(&peer, &now, MS(30), MS(70), &p, HPC_CLASS_NONE);
		hpc_task_sleep(&a, now - MS(10));
		hpc_task_sleep(&b, now - MS(10));
		assert_int_equal(hpc_on_wakeup(&a, now + MS(1), &p, &peer, 0),
				 hpc_task_wakeup(&b, now + MS(1), &p,
						 hpc_peer_class(&peer, now + MS(1),
								b.seg_start,
								&p)));
		assert_task_equal(&a, &b);
	}
	assert_int_equal(a.prio, 6);

	/* Without a snapshot: HPC_CLASS_NONE. */
	hpc_task_sleep(&a, now + MS(50));
	hpc_task_sleep(&b, now + MS(50));
	assert_int_equal(hpc_on_wakeup(&a, now + MS(60), &p, NULL, 0),
			 hpc_task_wakeup(&b, now + MS(60), &p, HPC_CLASS_NONE));
	assert_task_equal(&a, &b);
	(void)state;
}

/* A short wait closes nothing: 0, and a fixed priority is not applied. */
static void wakeup_after_a_short_wait(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t;

	hpc_task_init(&t, 0, &p);
	hpc_task_sleep(&t, MS(5));
	assert_int_equal(hpc_on_wakeup(&t, MS(5) + US(50), &p, NULL, 6), 0);
	assert_int_equal(t.nr_iter, 0);
	assert_int_equal(t.cur_run, MS(5) + US(50));
	assert_int_equal(t.prio, HPC_PRIO_NORMAL);
	(void)state;
}

/*
 * A fixed priority is kept whatever the core decides, and the sibling
 * judges against it: the core still accounts every iteration.
 */
static void wakeup_keeps_a_fixed_priority(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, free;
	u64 now = 0, now2 = 0;
	int i;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&free, 0, &p);
	for (i = 0; i < 5; i++) {
		now += MS(95);
		hpc_task_sleep(&t, now);
		now += MS(5);
		assert_int_equal(hpc_on_wakeup(&t, now, &p, NULL, 4), 1);
		assert_int_equal(t.prio, 4);
		now2 += MS(95);
		hpc_task_sleep(&free, now2);
		now2 += MS(5);
		hpc_on_wakeup(&free, now2, &p, NULL, 0);
	}
	assert_int_equal(t.nr_iter, 5);
	assert_int_equal(t.global_util, free.global_util);
	assert_int_equal(t.last_util, 9500);
	(void)state;
}

/* Without a sibling, a tick only folds the run time. */
static void tick_without_a_sibling(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, b;

	hpc_task_init(&t, 0, &p);
	b = t;
	assert_int_equal(hpc_on_tick(&t, MS(3), &p, NULL, 6), 0);
	hpc_task_tick(&b, MS(3));
	assert_task_equal(&t, &b);
	assert_int_equal(t.cur_run, MS(3));
	(void)state;
}

/*
 * The task that never waits is judged at the first tick after its sibling
 * closed an iteration it computed through, once per sibling iteration; a
 * fixed priority is kept.
 */
static void tick_judges_the_critical_path(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, b, peer, fixed;
	u64 now = 0;

	hpc_task_init(&t, 0, &p);
	hpc_task_init(&peer, 0, &p);
	fixed = t;
	run_iter(&peer, &now, MS(250), MS(750), &p, HPC_CLASS_HIGH);
	b = t;
	assert_int_equal(hpc_on_tick(&t, MS(1000), &p, &peer, 0), 1);
	hpc_task_tick(&b, MS(1000));
	assert_int_equal(hpc_task_sibling_judge(&b, MS(1000), &p, &peer), 1);
	assert_task_equal(&t, &b);
	assert_int_equal(t.prio, 5);
	/* Once per sibling iteration. */
	assert_int_equal(hpc_on_tick(&t, MS(1004), &p, &peer, 0), 0);
	assert_int_equal(t.prio, 5);

	assert_int_equal(hpc_on_tick(&fixed, MS(1000), &p, &peer, 4), 1);
	assert_int_equal(fixed.prio, 4);
	assert_int_equal(fixed.nr_judged, 1);
	(void)state;
}

/*
 * A front end that learns of a sleep late (from a record) reports it before
 * its last tick: the run folded after the sleep is taken back, and the
 * iteration closes as if the tick had not been.
 */
static void late_sleep_takes_back_the_fold(void **state)
{
	struct hpc_params p = defaults();
	struct hpc_task t, b;

	hpc_task_init(&t, 0, &p);
	b = t;
	hpc_on_tick(&t, MS(325), &p, NULL, 0);
	hpc_task_sleep(&t, MS(310));
	hpc_task_sleep(&b, MS(310));
	assert_int_equal(t.cur_run, MS(310));
	assert_int_equal(hpc_on_wakeup(&t, MS(330), &p, NULL, 0), 1);
	assert_int_equal(hpc_on_wakeup(&b, MS(330), &p, NULL, 0), 1);
	assert_task_equal(&t, &b);
	assert_int_equal(t.last_run, MS(310));
	assert_int_equal(t.last_wait, MS(20));
	(void)state;
}

/* A block for a lock (PREEMPT_RT's TASK_RTLOCK_WAIT) is not a wait phase. */
static void block_for_a_lock_is_no_wait(void **state)
{
	(void)state;
	assert_true(hpc_block_is_wait(0x0001));		/* TASK_INTERRUPTIBLE */
	assert_true(hpc_block_is_wait(0x0002));		/* TASK_UNINTERRUPTIBLE */
	assert_true(hpc_block_is_wait(0x0402));		/* TASK_IDLE */
	assert_false(hpc_block_is_wait(HPC_STATE_RTLOCK_WAIT));
	assert_int_equal(HPC_STATE_RTLOCK_WAIT, 0x1000);	/* Linux 6.12's value */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(next_prio_fixed_or_clamped),
		cmocka_unit_test(wakeup_of_a_runnable_task),
		cmocka_unit_test(wakeup_is_wakeup_with_peer_class),
		cmocka_unit_test(wakeup_after_a_short_wait),
		cmocka_unit_test(wakeup_keeps_a_fixed_priority),
		cmocka_unit_test(tick_without_a_sibling),
		cmocka_unit_test(tick_judges_the_critical_path),
		cmocka_unit_test(late_sleep_takes_back_the_fold),
		cmocka_unit_test(block_for_a_lock_is_no_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
