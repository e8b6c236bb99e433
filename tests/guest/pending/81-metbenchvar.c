// SPDX-License-Identifier: GPL-2.0
/*
 * PENDING: smp2 followed the first two swaps within 2-3 iterations but not
 * the third (heavy w0 stayed at 4 in phase 2); smp4 missed phase 1 on the
 * second core, where, as in 80-metbench, the 4-worker barrier makes the
 * heavy worker of the faster core medium. Move back when it passes reliably.
 *
 * Re-measured 2026-11-23 (series = patches/0001-0006, loaded host): smp2
 * passed once (every swap balanced within 1-2 iterations). smp4 failed
 * twice: on core 1 (CPUs 2, 3) the heavy worker never stepped up, e.g.
 * phase 2, w3 heur_util 86-89 % (high) next to w2 at U 5-18 % (low). vCPU 3
 * ran 2-4x slower than vCPU 2 per unit of work (60 ms of work in 212-479
 * ms against 15 ms in 16-62 ms). Timestamps in a third run confirm why:
 * in phase 0 (iterations 2-10) w3 returned from the barrier 18-95 ms after
 * w2, each time just after w2 had computed its light load and was back at
 * the next barrier (17-77 ms). At w3's wake-up the sibling is asleep again
 * in a fresh iteration of ~100 % compute, so hpc_peer_class() classes it
 * high, not low, and the rule (step up only while the sibling is low)
 * holds. hpc_peer_class() takes the sibling's last closed iteration only
 * while the sibling is runnable; taking it whenever that iteration closed
 * after we went to sleep would judge this case right (the policy core does
 * so now). Core 0 also
 * missed phase 2 in that run (w1 woke 269 ms before w0 once).
 *
 * With the policy core's fix (a sibling's closed iteration answers even if
 * it slept again), 2 of 5 runs passed (smp4 2 of 3, smp2 0 of 2). The
 * failures: a core whose heavy worker held 4 for a whole phase (w0/w1 or
 * w2/w3 both at 4), i.e. neither worker read as low while the other was
 * high; not analysed further.
 */
/*
 * 81-metbenchvar: MetBenchVar, the MetBench shape of metbench.h whose loads
 * swap every 10 iterations (3 phases, 30 iterations), with the adaptive
 * heuristic. Per emulated core:
 *  - after each swap the priorities follow within 5 iterations (the new
 *    heavy worker at 5 or 6, the new light one at 4);
 *  - at the end of every phase the heavy worker is at 5 or 6, the light at 4;
 *  - each worker's priority changed at least twice;
 *  - one iteration per barrier (+-2), both workers throttled.
 * A per-iteration table goes to the log.
 */
/* guest-timeout: 120 */
/* guest-cflags: -I@TOP@/kernel/hpc-core */
#include "metbench.h"

#define ITERS	30
#define SWAP	10

/* At barrier @k: is the heavy worker of compute phase k at 5/6, the light at 4? */
static int balanced(const struct mb_shared *sh, int p, int k)
{
	int a = 2 * p, b = 2 * p + 1;
	int h = mb_heavy(sh, a, k) ? a : b, l = h == a ? b : a;

	return sh->rec[h][k].prio >= 5 && sh->rec[l][k].prio == 4;
}

int main(void)
{
	struct mb_shared *sh;
	const char *tag = "var-adaptive";
	int p, s, k, w, ch;

	tap_init("81-metbenchvar");
	watchdog(110);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("metbenchvar", "needs 2 CPUs");
		return tap_done();
	}
	sh = shared_alloc(sizeof(*sh));
	if (mb_run(sh, tag, "adaptive\n", ITERS, SWAP) == 0) {
		mb_table(sh, tag);
		mb_check_common(sh, tag);
		for (p = 0; p < sh->nw / 2; p++) {
			for (s = 0; s < ITERS; s += SWAP) {
				for (k = s; k < s + SWAP && !balanced(sh, p, k); k++)
					;
				tap_ok(k - s <= 5,
				       "%s: core %d: phase from iteration %d balanced after %d iteration(s) (<= 5)",
				       tag, p, s, k - s);
				tap_ok(balanced(sh, p, s + SWAP - 1),
				       "%s: core %d: end of phase %d: heavy at 5/6, light at 4 (w%d %lld, w%d %lld)",
				       tag, p, s / SWAP, 2 * p, sh->rec[2 * p][s + SWAP - 1].prio,
				       2 * p + 1, sh->rec[2 * p + 1][s + SWAP - 1].prio);
			}
			for (w = 2 * p; w <= 2 * p + 1; w++) {
				for (k = 1, ch = 0; k <= ITERS; k++)
					ch += sh->rec[w][k].prio != sh->rec[w][k - 1].prio;
				tap_ok(ch >= 2, "%s: w%d's priority changed %d times (>= 2)", tag, w, ch);
			}
		}
	}
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
