/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the unit tests of the SCHED_HPC policy core.
 *
 * Time is in ns; US() and MS() build timestamps. A task is driven through
 * its iterations with the same calls the kernel class and scx_hpc make:
 * hpc_task_sleep() when it blocks, hpc_task_wakeup() when it is woken.
 */
#ifndef HPC_TEST_H
#define HPC_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "hpc_policy.h"
#include "hpc_smt.h"
#include "paper_tables.h"

#define US(x)	((u64)(x) * 1000ULL)
#define MS(x)	((u64)(x) * 1000000ULL)

/* Fail (never skip) a test that needs Documentation/data/paper-tables.json. */
static inline void require_paper_tables(void)
{
#ifdef PAPER_TABLES_ERROR
	fail_msg("%s", PAPER_TABLES_ERROR);
#endif
}

/*
 * One iteration of @t starting at *now: compute for @run ns, then wait
 * @wait ns. Returns what hpc_task_wakeup() returns; *now ends at the wake-up.
 */
static inline int run_iter(struct hpc_task *t, u64 *now, u64 run, u64 wait,
			   const struct hpc_params *p, int peer_class)
{
	*now += run;
	hpc_task_sleep(t, *now);
	*now += wait;
	return hpc_task_wakeup(t, *now, p, peer_class);
}

/* Field-by-field equality of two task states (no padding compared). */
static inline void assert_task_equal(const struct hpc_task *a,
				     const struct hpc_task *b)
{
	assert_int_equal(a->iter_start, b->iter_start);
	assert_int_equal(a->seg_start, b->seg_start);
	assert_int_equal(a->cur_run, b->cur_run);
	assert_int_equal(a->sum_run, b->sum_run);
	assert_int_equal(a->sum_total, b->sum_total);
	assert_int_equal(a->last_run, b->last_run);
	assert_int_equal(a->last_wait, b->last_wait);
	assert_int_equal(a->nr_iter, b->nr_iter);
	assert_int_equal(a->judged_at, b->judged_at);
	assert_int_equal(a->nr_judged, b->nr_judged);
	assert_int_equal(a->last_util, b->last_util);
	assert_int_equal(a->global_util, b->global_util);
	assert_int_equal(a->heur_util, b->heur_util);
	assert_int_equal(a->prio, b->prio);
	assert_int_equal(a->prev_prio, b->prev_prio);
	assert_int_equal(a->ph_util, b->ph_util);
	assert_int_equal(a->ph_nr, b->ph_nr);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->lid, b->lid);
	assert_int_equal(a->lid_left, b->lid_left);
}

#endif /* HPC_TEST_H */
