// SPDX-License-Identifier: GPL-2.0
/*
 * MetBench-shaped smoke test of the SCHED_HPC class (kernel engineer's):
 * two SCHED_HPC workers pinned to CPUs 0 and 1 (an emulated SMT core), one
 * with 4x the load of the other, synchronised every iteration through a
 * process-shared pthread barrier. The heavy worker must end at priority 5
 * or 6, the light one at 4. The heavy worker arrives last at the barrier
 * and never sleeps: it is judged when its sibling closes an iteration
 * (hpc_task_sibling_judge() on the tick).
 */
#include "hpctest.h"

#include <pthread.h>

#define CASE "11-kernel-metbench"
#define ITERS 30

struct shared {
	pthread_barrier_t bar;
	double units_per_ms;
	struct hpc_stat st[2];
};

static void worker(struct shared *sh, int idx, unsigned int load_ms)
{
	uint64_t n = (uint64_t)(sh->units_per_ms * load_ms);
	int i;

	for (i = 0; i < ITERS; i++) {
		work_units(n);
		pthread_barrier_wait(&sh->bar);
	}
	hpc_stat_read(getpid(), &sh->st[idx]);
	_exit(0);
}

int main(void)
{
	pthread_barrierattr_t ba;
	struct shared *sh;
	struct hpc_stat *hh, *hl;
	pid_t heavy, light;
	int st;

	tap_init(CASE);
	watchdog(120);
	if (!require_hpc())
		return tap_done();
	if (online_cpus() < 2) {
		tap_skip("metbench", "needs 2 CPUs");
		return tap_done();
	}

	sh = shared_alloc(sizeof(*sh));
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, 2);
	pin_cpu(0, 0);
	sh->units_per_ms = calibrate_units_per_ms(50);
	unpin(0);
	tap_diag("%.1f work units per ms", sh->units_per_ms);

	heavy = fork_kid();
	if (heavy == 0) {
		if (pin_cpu(0, 0) || set_hpc(0))
			_exit(2);
		worker(sh, 0, 40);
	}
	light = fork_kid();
	if (light == 0) {
		if (pin_cpu(0, 1) || set_hpc(0))
			_exit(2);
		worker(sh, 1, 10);
	}
	wait_timeout(heavy, &st, 60000);
	wait_timeout(light, &st, 60000);
	hh = &sh->st[0];
	hl = &sh->st[1];

	tap_diag("heavy: iterations %lld judgements %lld last_util %lld global_util %lld heur_util %lld prio %lld throttled_ns %lld",
		 hh->v[HS_ITERATIONS], hh->v[HS_JUDGEMENTS], hh->v[HS_LAST_UTIL],
		 hh->v[HS_GLOBAL_UTIL], hh->v[HS_HEUR_UTIL], hh->v[HS_PRIO],
		 hh->v[HS_THROTTLED_NS]);
	tap_diag("light: iterations %lld judgements %lld last_util %lld global_util %lld heur_util %lld prio %lld throttled_ns %lld",
		 hl->v[HS_ITERATIONS], hl->v[HS_JUDGEMENTS], hl->v[HS_LAST_UTIL],
		 hl->v[HS_GLOBAL_UTIL], hl->v[HS_HEUR_UTIL], hl->v[HS_PRIO],
		 hl->v[HS_THROTTLED_NS]);
	/* It never waits: decided on at its sibling's closes, mostly. */
	tap_ok(hh->hpc && hh->v[HS_ITERATIONS] + hh->v[HS_JUDGEMENTS] >= ITERS / 2,
	       "heavy decided on every cycle (%lld iterations + %lld judgements)",
	       hh->v[HS_ITERATIONS], hh->v[HS_JUDGEMENTS]);
	/*
	 * Once balanced, the light one hardly waits either. It is judged at
	 * its sibling's closes only when overdue (its open iteration longer
	 * than its last closed one, which may span several cycles): 13 to 29
	 * decisions in 30 cycles were seen. At least one every third cycle.
	 */
	tap_ok(hl->hpc && hl->v[HS_ITERATIONS] + hl->v[HS_JUDGEMENTS] >= ITERS / 3,
	       "light decided on at least every third cycle (%lld iterations + %lld judgements)",
	       hl->v[HS_ITERATIONS], hl->v[HS_JUDGEMENTS]);
	tap_ok(hh->v[HS_PRIO] >= 5 && hh->v[HS_PRIO] <= 6, "heavy raised to 5..6 (prio %lld)",
	       hh->v[HS_PRIO]);
	tap_ok(hl->v[HS_PRIO] == 4, "light kept at 4 (prio %lld)", hl->v[HS_PRIO]);
	return tap_done();
}
