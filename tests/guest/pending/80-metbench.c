// SPDX-License-Identifier: GPL-2.0
/*
 * PENDING: since the sibling judgement no longer splits iterations (heavy
 * workers' U is 85-97 %), smp2 balances core 0 (heavy 4 -> 5 -> 6, light 4)
 * but the "% compute rises" check failed once (66.5 % -> 44.6 %). On smp4
 * the two emulated cores run at different speeds (4 vCPUs on a 2-core
 * host): the heavy worker of the faster core waits for the slower core at
 * the 4-worker barrier (U 55-85 %, medium) and correctly holds 4, which the
 * per-core check "heavy ends at 5 or 6" does not allow for. Move back when
 * the expectations account for the slowest core.
 *
 * Re-measured 2026-11-23 (series = patches/0001-0006, loaded host):
 * - smp4: both cores balanced in both heuristics (heavy 6, light 4); one
 *   failure: uniform, core 1, light w2's % compute 38.4 -> 52.5 (needs
 *   +15). A light worker's U is bounded by the other core (one barrier for
 *   4 workers); the light/heavy compute-time ratio of the same iteration
 *   on one core is not: 0.38-0.48 in the first iterations, medians
 *   0.66-0.83 over the last ten (model: 0.36 at 4/4, 0.63 at 5/4, 1.0 at
 *   6/4). A per-core check on that ratio is the candidate.
 * - smp2: uniform: the heavy worker held 4 all run with U 68-99 %, global
 *   83.8 % < high_util 85: medium, held, as the rule says. The light
 *   worker did its "15 ms" in 7-12 ms (calibrated at 245 units/ms under
 *   load, ran ~2x faster), so the pair was rarely busy together: throttled
 *   46 and 59 ms in total, the emulation barely engaged. Adaptive: heavy
 *   4 -> 5 -> 6 and back to 4 from iteration 3, when its U fell to 22-50 %
 *   while the light one's rose to 63-89 %: the loads looked swapped (the
 *   heavy did its 4x load in 39-44 ms, the light its 1x in 73-120 ms: the
 *   light worker's vCPU ran up to 8x slower per unit of work).
 * Calibration and per-vCPU speed under TCG on a loaded 2-core host vary
 * too much for these checks; the workload would have to calibrate per CPU
 * and judge ratios, not absolute U.
 *
 * The check is now that ratio (first phase vs median of the last 5, rise
 * by more than half). With the policy core's fix for a sibling that slept
 * again (81 passes on smp4): priorities right on every core in every run;
 * ratios smp4 uniform 0.49 -> 0.61 (core 0, fail) and 0.28 -> 0.78, adaptive
 * 0.53 -> 0.94 and 0.28 -> 0.58; smp2 uniform 0.40 -> 0.49 (fail), adaptive
 * 0.26 -> 0.70. Core 0's first phase already reads 0.4-0.5 (its vCPUs ran
 * at different host speeds), so a rise from it is not reliable there.
 */
/*
 * 80-metbench: the behaviour that matters. A MetBench-shaped application
 * (see metbench.h: master + 2 or 4 workers pinned pairwise to the emulated
 * SMT cores, light and heavy (4x) loads, a process-shared barrier each
 * iteration), 30 iterations, once with the uniform and once with the
 * adaptive heuristic. Per run and emulated core:
 *  - the heavy worker ends at priority 5 or 6, the light one at 4;
 *  - every worker closed one iteration per barrier (+-2);
 *  - the light worker's compute time over the heavy one's rises from the
 *    first phase (both at 4: the load ratio) to the median of the last 5
 *    by more than half (balancing inside the core);
 *  - both workers were throttled (throttled_ns > 0).
 * A per-iteration table of prio / last_util / compute ms and the light
 * worker's measured speeds against the SMT model go to the log.
 */
/* guest-timeout: 150 */
/* guest-cflags: -I@TOP@/kernel/hpc-core */
#include "metbench.h"

#define ITERS 30

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void check(const struct mb_shared *sh, const char *tag)
{
	int p, k;

	mb_check_common(sh, tag);
	for (p = 0; p < sh->nw / 2; p++) {
		int lo = 2 * p, hi = 2 * p + 1, n = 0;
		const struct mb_rec *L = sh->rec[lo], *H = sh->rec[hi];
		double early, late = 0, want, got, ratio[8];

		tap_ok(H[ITERS].prio == 5 || H[ITERS].prio == 6,
		       "%s: core %d: heavy w%d ends at prio 5 or 6 (got %lld)", tag, p, hi,
		       H[ITERS].prio);
		tap_ok(L[ITERS].prio == 4, "%s: core %d: light w%d ends at prio 4 (got %lld)", tag,
		       p, lo, L[ITERS].prio);

		/*
		 * Balance inside the core: the light worker's compute time over
		 * the heavy one's, for the same phase. At 4/4 it is the load
		 * ratio (1/4); balanced (light slowed, heavy sped up) it nears
		 * 1. Unlike % compute it does not depend on the other core,
		 * whose speed sets how long both wait at the 4-worker barrier.
		 */
		early = (double)L[0].compute_ns / (double)H[0].compute_ns;
		for (k = ITERS - 5; k < ITERS; k++)
			ratio[n++] = (double)L[k].compute_ns / (double)H[k].compute_ns;
		qsort(ratio, (size_t)n, sizeof(ratio[0]), cmp_d);
		late = ratio[n / 2];
		n = 0;
		tap_ok(late > 1.5 * early,
		       "%s: core %d: light w%d's compute time over heavy w%d's rises with balancing "
		       "(%.2f -> median %.2f)",
		       tag, p, lo, hi, early, late);

		/*
		 * Speeds for the log only: under TCG the vCPUs share host
		 * cores (4 vCPUs on 2 cores, other load), so an absolute
		 * speed against a calibration is not a reliable check.
		 */
		want = hpc_smt_speed(4, 4, true);
		got = mb_speed(sh, lo, 0);
		for (k = ITERS - 5; k < ITERS; k++) {
			want = hpc_smt_speed((u32)L[k].prio, (u32)H[k].prio, true);
			ratio[n++] = mb_speed(sh, lo, k) / want;
		}
		qsort(ratio, (size_t)n, sizeof(ratio[0]), cmp_d);
		tap_diag("%s: core %d: light w%d speed: first compute %.0f permille (model 4/4 %u), "
			 "last computes median measured/model %.2f", tag, p, lo, got,
			 hpc_smt_speed(4, 4, true), ratio[n / 2]);
	}
}

int main(void)
{
	struct mb_shared *sh;

	tap_init("80-metbench");
	watchdog(140);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("metbench", "needs 2 CPUs");
		return tap_done();
	}
	sh = shared_alloc(sizeof(*sh));
	if (mb_run(sh, "uniform", "uniform\n", ITERS, 0) == 0) {
		mb_table(sh, "uniform");
		check(sh, "uniform");
	}
	knobs_restore();
	if (mb_run(sh, "adaptive", "adaptive\n", ITERS, 0) == 0) {
		mb_table(sh, "adaptive");
		check(sh, "adaptive");
	}
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
