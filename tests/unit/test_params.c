// SPDX-License-Identifier: GPL-2.0
/*
 * Parameters: defaults (paper-tables.json heuristic_defaults), validation by
 * hpc_params_check(), error strings, and the name <-> id <-> field mapping
 * the sysfs files, the BPF scheduler and the tools use (see
 * Documentation/scheduler/sched-hpc-abi.txt).
 */
#include "hpc_test.h"

static struct hpc_params defaults(void)
{
	struct hpc_params p;

	memset(&p, 0xa5, sizeof(p));
	hpc_params_default(&p);
	return p;
}

static void defaults_match_paper(void **state)
{
	struct hpc_params p = defaults();

	require_paper_tables();
	assert_int_equal(p.low_util, PAPER_DEF_LOW_UTIL);
	assert_int_equal(p.high_util, PAPER_DEF_HIGH_UTIL);
	assert_int_equal(p.min_prio, PAPER_DEF_MIN_PRIO);
	assert_int_equal(p.max_prio, PAPER_DEF_MAX_PRIO);
	assert_int_equal(p.global_weight, PAPER_DEF_GLOBAL_WEIGHT);
	assert_int_equal(p.last_weight, PAPER_DEF_LAST_WEIGHT);
	/* Not in the paper's table: the ABI's defaults. */
	assert_int_equal(p.heuristic, HPC_HEUR_UNIFORM);
	assert_int_equal(p.min_wait_us, 100);
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	(void)state;
}

/* The emulation backend's range, e.g. "1 6" in prio_range. */
static const struct hpc_prio_range emul = { 1, 6 };

static void check_rejects(void **state)
{
	static const struct {
		const char *what;
		int id;
		u32 val;
		const struct hpc_prio_range *allowed;
		int err;
	} cases[] = {
		{ "low_util 101", HPC_P_LOW_UTIL, 101, NULL, HPC_PARAM_ERR_UTIL_RANGE },
		{ "high_util 101", HPC_P_HIGH_UTIL, 101, NULL, HPC_PARAM_ERR_UTIL_RANGE },
		{ "high_util 2^32-1", HPC_P_HIGH_UTIL, UINT32_MAX, NULL, HPC_PARAM_ERR_UTIL_RANGE },
		{ "low_util = high_util", HPC_P_LOW_UTIL, 85, NULL, HPC_PARAM_ERR_UTIL_ORDER },
		{ "low_util > high_util", HPC_P_LOW_UTIL, 90, NULL, HPC_PARAM_ERR_UTIL_ORDER },
		{ "high_util < low_util", HPC_P_HIGH_UTIL, 10, NULL, HPC_PARAM_ERR_UTIL_ORDER },
		{ "min_prio 0 in {1,6}", HPC_P_MIN_PRIO, 0, &emul, HPC_PARAM_ERR_PRIO_RANGE },
		{ "max_prio 7 in {1,6}", HPC_P_MAX_PRIO, 7, &emul, HPC_PARAM_ERR_PRIO_RANGE },
		{ "max_prio 8 in {0,7}", HPC_P_MAX_PRIO, 8, NULL, HPC_PARAM_ERR_PRIO_RANGE },
		{ "min_prio 8 in {0,7}", HPC_P_MIN_PRIO, 8, NULL, HPC_PARAM_ERR_PRIO_RANGE },
		{ "min_prio > max_prio", HPC_P_MIN_PRIO, 7, NULL, HPC_PARAM_ERR_PRIO_ORDER },
		{ "max_prio < min_prio", HPC_P_MAX_PRIO, 3, &emul, HPC_PARAM_ERR_PRIO_ORDER },
		{ "global_weight 101", HPC_P_GLOBAL_WEIGHT, 101, NULL, HPC_PARAM_ERR_WEIGHT_RANGE },
		{ "last_weight 2^32-1", HPC_P_LAST_WEIGHT, UINT32_MAX, NULL, HPC_PARAM_ERR_WEIGHT_RANGE },
		{ "heuristic 3", HPC_P_HEURISTIC, 3, NULL, HPC_PARAM_ERR_HEURISTIC },
		{ "heuristic 2^32-1", HPC_P_HEURISTIC, UINT32_MAX, NULL, HPC_PARAM_ERR_HEURISTIC },
		{ "min_wait_us 1000001", HPC_P_MIN_WAIT_US,
		  HPC_MAX_MIN_WAIT_US + 1, NULL, HPC_PARAM_ERR_MIN_WAIT },
		{ "min_wait_us 2^32-1", HPC_P_MIN_WAIT_US, UINT32_MAX, NULL, HPC_PARAM_ERR_MIN_WAIT },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hpc_params p = defaults();
		int err;

		hpc_param_put(&p, cases[i].id, cases[i].val);
		err = hpc_params_check(&p, cases[i].allowed);
		if (err != cases[i].err)
			fail_msg("%s: hpc_params_check() = %d, expected %d",
				 cases[i].what, err, cases[i].err);
	}
	(void)state;
}

/* Weights set directly (hpc_param_put() would keep them complementary). */
static void check_rejects_weights(void **state)
{
	struct hpc_params p = defaults();

	p.global_weight = 50;
	p.last_weight = 60;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_SUM);
	p.global_weight = 0;
	p.last_weight = 0;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_SUM);
	p.global_weight = 40;
	p.last_weight = 59;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_SUM);
	/* Wrapping to 100 in 32 bits is still out of range. */
	p.global_weight = UINT32_MAX;
	p.last_weight = 101;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_RANGE);
	p.global_weight = 101;
	p.last_weight = 0;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_RANGE);
	(void)state;
}

/* The backend's range is honoured on both sides; max above 7 is cut to 7. */
static void check_backend_ranges(void **state)
{
	static const struct hpc_prio_range wide = { 2, 9 };
	static const struct hpc_prio_range narrow = { 5, 5 };
	struct hpc_params p = defaults();

	p.min_prio = 0;
	p.max_prio = 7;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	assert_int_equal(hpc_params_check(&p, &emul), HPC_PARAM_ERR_PRIO_RANGE);
	p.min_prio = 1;
	p.max_prio = 6;
	assert_int_equal(hpc_params_check(&p, &emul), HPC_PARAM_OK);

	p.min_prio = 2;
	p.max_prio = 7;
	assert_int_equal(hpc_params_check(&p, &wide), HPC_PARAM_OK);
	p.max_prio = 8;
	assert_int_equal(hpc_params_check(&p, &wide), HPC_PARAM_ERR_PRIO_RANGE);
	p.min_prio = 1;
	p.max_prio = 7;
	assert_int_equal(hpc_params_check(&p, &wide), HPC_PARAM_ERR_PRIO_RANGE);

	p.min_prio = 5;
	p.max_prio = 5;
	assert_int_equal(hpc_params_check(&p, &narrow), HPC_PARAM_OK);
	p.max_prio = 6;
	assert_int_equal(hpc_params_check(&p, &narrow), HPC_PARAM_ERR_PRIO_RANGE);
	(void)state;
}

/* With several errors, the first in enum order is reported. */
static void check_reports_first_error(void **state)
{
	struct hpc_params p = defaults();

	p.heuristic = 9;
	p.min_wait_us = UINT32_MAX;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_HEURISTIC);
	p.global_weight = 7;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_SUM);
	p.min_prio = 6;
	p.max_prio = 5;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_PRIO_ORDER);
	p.max_prio = 8;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_PRIO_RANGE);
	p.low_util = 90;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_UTIL_ORDER);
	p.high_util = 200;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_UTIL_RANGE);
	(void)state;
}

static void check_accepts_edges(void **state)
{
	struct hpc_params p = defaults();

	p.low_util = 0;
	p.high_util = 100;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p.low_util = 99;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p = defaults();
	p.min_prio = 6;
	p.max_prio = 6;
	assert_int_equal(hpc_params_check(&p, &emul), HPC_PARAM_OK);
	p.min_prio = 1;
	p.max_prio = 1;
	assert_int_equal(hpc_params_check(&p, &emul), HPC_PARAM_OK);
	p = defaults();
	p.global_weight = 0;
	p.last_weight = 100;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p.global_weight = 100;
	p.last_weight = 0;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p.heuristic = HPC_HEUR_ADAPTIVE;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p.min_wait_us = 0;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	p.min_wait_us = HPC_MAX_MIN_WAIT_US;
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	(void)state;
}

static void err_strings(void **state)
{
	const char *s[HPC_PARAM_ERR_NR + 1];
	int i, j;

	for (i = 0; i < HPC_PARAM_ERR_NR; i++) {
		s[i] = hpc_param_err_str(i);
		assert_non_null(s[i]);
		assert_true(s[i][0] != '\0');
	}
	s[HPC_PARAM_ERR_NR] = hpc_param_err_str(HPC_PARAM_ERR_NR);
	assert_non_null(s[HPC_PARAM_ERR_NR]);
	assert_true(s[HPC_PARAM_ERR_NR][0] != '\0');
	for (i = 0; i <= HPC_PARAM_ERR_NR; i++)
		for (j = i + 1; j <= HPC_PARAM_ERR_NR; j++)
			if (!strcmp(s[i], s[j]))
				fail_msg("errors %d and %d share \"%s\"", i, j, s[i]);
	/* Every out-of-range code gets the same "unknown" string. */
	assert_string_equal(hpc_param_err_str(-1), s[HPC_PARAM_ERR_NR]);
	assert_string_equal(hpc_param_err_str(1000), s[HPC_PARAM_ERR_NR]);
	(void)state;
}

/* The names are ABI (sysfs file names): pinned here. */
static const char * const abi_names[HPC_P_NR] = {
	"low_util", "high_util", "min_prio", "max_prio",
	"global_weight", "last_weight", "heuristic", "min_wait_us",
};

static void names_round_trip(void **state)
{
	int i;

	for (i = 0; i < HPC_P_NR; i++) {
		assert_string_equal(hpc_param_names[i], abi_names[i]);
		assert_int_equal(hpc_param_lookup(abi_names[i]), i);
		assert_int_equal(hpc_param_lookup(hpc_param_names[i]), i);
	}
	(void)state;
}

static void unknown_names(void **state)
{
	static const char * const bad[] = {
		"", "low", "low_util ", " low_util", "LOW_UTIL", "low_utilx",
		"min_wait", "min_wait_us_", "uniform", "queue", "backend",
		"low_util\nhigh_util",
		"a_name_that_is_much_longer_than_thirty_two_characters",
		"min_wait_usmin_wait_usmin_wait_usmin_wait_us",
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hpc_param_lookup(bad[i]) != -1)
			fail_msg("hpc_param_lookup(\"%s\") = %d, expected -1",
				 bad[i], hpc_param_lookup(bad[i]));
	(void)state;
}

/* get/put reach exactly the named field. */
static void get_put_fields(void **state)
{
	struct hpc_params p = defaults();
	u32 *field[HPC_P_NR] = {
		&p.low_util, &p.high_util, &p.min_prio, &p.max_prio,
		&p.global_weight, &p.last_weight, &p.heuristic, &p.min_wait_us,
	};
	int i, j;

	for (i = 0; i < HPC_P_NR; i++)
		assert_int_equal(hpc_param_get(&p, i), *field[i]);
	for (i = 0; i < HPC_P_NR; i++) {
		struct hpc_params before;
		u32 val = 1000 + i;	/* > 100: no complement for weights */

		p = defaults();
		before = p;
		hpc_param_put(&p, i, val);
		assert_int_equal(*field[i], val);
		assert_int_equal(hpc_param_get(&p, i), val);
		for (j = 0; j < HPC_P_NR; j++)
			if (j != i)
				assert_int_equal(hpc_param_get(&p, j),
						 hpc_param_get(&before, j));
	}
	/* Unknown ids: get gives 0, put changes nothing. */
	p = defaults();
	assert_int_equal(hpc_param_get(&p, -1), 0);
	assert_int_equal(hpc_param_get(&p, HPC_P_NR), 0);
	hpc_param_put(&p, -1, 3);
	hpc_param_put(&p, HPC_P_NR, 3);
	hpc_param_put(&p, 1 << 20, 3);
	{
		struct hpc_params d = defaults();

		for (j = 0; j < HPC_P_NR; j++)
			assert_int_equal(hpc_param_get(&p, j),
					 hpc_param_get(&d, j));
	}
	(void)state;
}

/* Writing one weight sets the other to the complement. */
static void put_weight_sets_complement(void **state)
{
	struct hpc_params p = defaults();

	hpc_param_put(&p, HPC_P_GLOBAL_WEIGHT, 30);
	assert_int_equal(p.global_weight, 30);
	assert_int_equal(p.last_weight, 70);
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	hpc_param_put(&p, HPC_P_LAST_WEIGHT, 25);
	assert_int_equal(p.last_weight, 25);
	assert_int_equal(p.global_weight, 75);
	hpc_param_put(&p, HPC_P_GLOBAL_WEIGHT, 100);
	assert_int_equal(p.last_weight, 0);
	hpc_param_put(&p, HPC_P_LAST_WEIGHT, 100);
	assert_int_equal(p.global_weight, 0);
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_OK);
	hpc_param_put(&p, HPC_P_GLOBAL_WEIGHT, 0);
	assert_int_equal(p.last_weight, 100);
	/* Other knobs have no complement. */
	hpc_param_put(&p, HPC_P_LOW_UTIL, 40);
	assert_int_equal(p.high_util, 85);
	assert_int_equal(p.global_weight, 0);
	assert_int_equal(p.last_weight, 100);
	(void)state;
}

/* An invalid weight leaves the other alone, and the set is rejected. */
static void put_invalid_weight(void **state)
{
	struct hpc_params p = defaults();

	hpc_param_put(&p, HPC_P_GLOBAL_WEIGHT, 101);
	assert_int_equal(p.global_weight, 101);
	assert_int_equal(p.last_weight, 90);
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_RANGE);

	p = defaults();
	hpc_param_put(&p, HPC_P_LAST_WEIGHT, UINT32_MAX);
	assert_int_equal(p.last_weight, UINT32_MAX);
	assert_int_equal(p.global_weight, 10);
	assert_int_equal(hpc_params_check(&p, NULL), HPC_PARAM_ERR_WEIGHT_RANGE);
	(void)state;
}

static void heuristic_lookup(void **state)
{
	assert_int_equal(hpc_heuristic_lookup("uniform"), HPC_HEUR_UNIFORM);
	assert_int_equal(hpc_heuristic_lookup("adaptive"), HPC_HEUR_ADAPTIVE);
	assert_int_equal(hpc_heuristic_lookup("phase"), HPC_HEUR_PHASE);
	assert_string_equal(hpc_heuristic_names[HPC_HEUR_UNIFORM], "uniform");
	assert_string_equal(hpc_heuristic_names[HPC_HEUR_ADAPTIVE], "adaptive");
	assert_string_equal(hpc_heuristic_names[HPC_HEUR_PHASE], "phase");
	assert_int_equal(HPC_HEUR_NR, 3);
	assert_int_equal(hpc_heuristic_lookup("Phase"), -1);
	assert_int_equal(hpc_heuristic_lookup("phases"), -1);
	assert_int_equal(hpc_heuristic_lookup(""), -1);
	assert_int_equal(hpc_heuristic_lookup("Uniform"), -1);
	assert_int_equal(hpc_heuristic_lookup("adapt"), -1);
	assert_int_equal(hpc_heuristic_lookup("adaptive\n"), -1);
	assert_int_equal(hpc_heuristic_lookup("low_util"), -1);
	assert_int_equal(hpc_heuristic_lookup("adaptiveadaptiveadaptiveadaptiveadaptive"), -1);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_match_paper),
		cmocka_unit_test(check_rejects),
		cmocka_unit_test(check_rejects_weights),
		cmocka_unit_test(check_backend_ranges),
		cmocka_unit_test(check_reports_first_error),
		cmocka_unit_test(check_accepts_edges),
		cmocka_unit_test(err_strings),
		cmocka_unit_test(names_round_trip),
		cmocka_unit_test(unknown_names),
		cmocka_unit_test(get_put_fields),
		cmocka_unit_test(put_weight_sets_complement),
		cmocka_unit_test(put_invalid_weight),
		cmocka_unit_test(heuristic_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
