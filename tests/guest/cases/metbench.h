/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MetBench-shaped workload for the in-guest cases 80-metbench and
 * 81-metbenchvar (not a test case).
 *
 * A master and 2 or 4 worker processes. Workers 2p and 2p+1 are pinned to
 * the two CPUs of emulated core p (smt_pairs). Each iteration a worker
 * computes its load (a calibrated number of pure-integer work units; heavy
 * = 4 x light), then waits at a process-shared pthread barrier in MAP_SHARED
 * memory (glibc sleeps in futex: a real wait). The master (SCHED_OTHER)
 * joins the barrier last, 1 ms after every worker arrived, so that every
 * worker, the heavy ones included, sleeps once per barrier: one barrier =
 * one iteration for the class. Right after each barrier a worker records
 * its own /proc/self/sched_hpc (the state decided at that wake-up, i.e. the
 * priority of the compute phase that follows) and the wall time of each
 * compute phase.
 */
#ifndef HPCSCHED_METBENCH_H
#define HPCSCHED_METBENCH_H

#include "hpctest.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#include "hpc_smt.c"	/* the model: expected SMT speeds */

#define MB_MAXW		4
#define MB_MAXIT	64
#define MB_LIGHT_MS	15	/* light load, ms of single-thread CPU time */

struct mb_rec {
	long long prio, last_util, global_util, heur_util, iterations, throttled;
	uint64_t compute_ns;	/* wall time of the compute phase after it */
	int ok;
};

struct mb_shared {
	pthread_barrier_t bar;
	volatile int arrived;
	volatile int abort;
	int nw, iters, swap_every;
	uint64_t light_units;
	double upms;		/* calibrated work units per ms */
	int cpu[MB_MAXW];
	struct mb_rec rec[MB_MAXW][MB_MAXIT + 1];
	volatile int done[MB_MAXW];
};

/* Worker 2p+1 is heavy first; every @swap_every iterations the roles swap. */
static inline int mb_heavy(const struct mb_shared *sh, int w, int k)
{
	int phase = sh->swap_every ? k / sh->swap_every : 0;

	return ((w & 1) ^ (phase & 1)) == 1;
}

static inline void mb_worker(struct mb_shared *sh, int w)
{
	struct hpc_stat st;
	uint64_t t0;
	int k;

	if (pin_cpu(0, sh->cpu[w]) || set_hpc(0))
		_exit(10);
	for (k = 0; k <= sh->iters; k++) {
		__sync_fetch_and_add(&sh->arrived, 1);
		pthread_barrier_wait(&sh->bar);
		if (sh->abort)
			_exit(11);
		if (hpc_stat_read(0, &st) == 0) {
			struct mb_rec *r = &sh->rec[w][k];

			r->prio = st.v[HS_PRIO];
			r->last_util = st.v[HS_LAST_UTIL];
			r->global_util = st.v[HS_GLOBAL_UTIL];
			r->heur_util = st.v[HS_HEUR_UTIL];
			r->iterations = st.v[HS_ITERATIONS];
			r->throttled = st.v[HS_THROTTLED_NS];
			r->ok = 1;
		}
		if (k == sh->iters)
			break;
		t0 = now_ns();
		work_units(mb_heavy(sh, w, k) ? 4 * sh->light_units : sh->light_units);
		sh->rec[w][k].compute_ns = now_ns() - t0;
	}
	sh->done[w] = 1;
	_exit(0);
}

/*
 * Run @iters iterations with @heur ("uniform"/"adaptive"). Returns 0 if the
 * run completed (every barrier passed, every worker exited 0), else -1 with
 * a failure already reported.
 */
static inline int mb_run(struct mb_shared *sh, const char *tag, const char *heur,
			 int iters, int swap_every)
{
	pthread_barrierattr_t ba;
	char pairs[256], *p;
	int w, k, r, st, a, b, n = 0;
	pid_t pid[MB_MAXW];
	uint64_t deadline;
	double upms;

	memset(sh, 0, sizeof(*sh));
	r = knob_write("heuristic", heur);
	if (!tap_check(r == 0, strerror(-r), "%s: heuristic %s", tag, heur))
		return -1;

	/* Emulated cores from smt_pairs: up to 2 of them. */
	knob_read("smt_pairs", pairs, sizeof(pairs));
	for (p = pairs; n < MB_MAXW && sscanf(p, "%d %d", &a, &b) == 2;) {
		sh->cpu[n++] = a;
		sh->cpu[n++] = b;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	if (!tap_check(n >= 2, pairs, "%s: at least one emulated core in smt_pairs", tag))
		return -1;
	sh->nw = n;
	sh->iters = iters;
	sh->swap_every = swap_every;

	upms = calibrate_units_per_ms(20);
	sh->upms = upms;
	sh->light_units = (uint64_t)(upms * MB_LIGHT_MS);
	if (sh->light_units < 1)
		sh->light_units = 1;
	tap_diag("%s: %d workers on CPUs %d..%d, %.1f units/ms, light %" PRIu64
		 " units (%d ms), heavy 4x, %d iterations%s", tag, n, sh->cpu[0], sh->cpu[n - 1],
		 upms, sh->light_units, MB_LIGHT_MS, iters, swap_every ? ", loads swap" : "");

	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, (unsigned int)n + 1);

	for (w = 0; w < n; w++) {
		pid[w] = fork_kid();
		if (pid[w] == 0)
			mb_worker(sh, w);
	}
	/* Each iteration of a balanced pair takes ~6 light loads: allow 10x. */
	deadline = now_ns() + (uint64_t)(iters + 2) * 10 * 6 * MB_LIGHT_MS * 1000000ULL +
		   10000000000ULL;
	for (k = 0; k <= iters; k++) {
		while (sh->arrived < n * (k + 1)) {
			if (now_ns() > deadline) {
				tap_fail("MetBench run completes",
					 "%s: stuck at barrier %d (%d of %d arrived)", tag, k,
					 sh->arrived - n * k, n);
				sh->abort = 1;
				kill_children();
				return -1;
			}
			sleep_ns(200000);
		}
		sleep_ms(1);	/* every worker now waits >= 1 ms */
		pthread_barrier_wait(&sh->bar);
	}
	r = 0;
	for (w = 0; w < n; w++) {
		if (wait_timeout(pid[w], &st, 10000) != pid[w] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			r = -1;
	}
	if (!tap_ok(r == 0, "%s: %d workers passed %d barriers and exited cleanly", tag, n,
		    iters + 1)) {
		kill_children();
		return -1;
	}
	return 0;
}

/* The per-iteration table: prio/last_util(%) of every worker, H = heavy. */
static inline void mb_table(const struct mb_shared *sh, const char *tag)
{
	char line[256];
	int w, k;

	snprintf(line, sizeof(line), "%s:  k", tag);
	for (w = 0; w < sh->nw; w++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "   w%d(cpu%d) p/U%%/ms", w, sh->cpu[w]);
	tap_diag("%s", line);
	for (k = 0; k <= sh->iters; k++) {
		snprintf(line, sizeof(line), "%s: %2d", tag, k);
		for (w = 0; w < sh->nw; w++) {
			const struct mb_rec *r = &sh->rec[w][k];

			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "   %c %lld/%3lld/%4.0f", k < sh->iters && mb_heavy(sh, w, k) ? 'H' : 'l',
				 r->prio, r->last_util / 100, r->compute_ns / 1e6);
		}
		tap_diag("%s", line);
	}
	snprintf(line, sizeof(line), "%s: end", tag);
	for (w = 0; w < sh->nw; w++) {
		const struct mb_rec *r = &sh->rec[w][sh->iters];

		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "  w%d: iter %lld glob %lld.%02lld%% thr %.0f ms", w, r->iterations,
			 r->global_util / 100, r->global_util % 100, r->throttled / 1e6);
	}
	tap_diag("%s", line);
}

/* Permille of single-thread speed of worker @w's compute phase @k. */
static inline double mb_speed(const struct mb_shared *sh, int w, int k)
{
	double upms = sh->upms;
	double units = (double)(mb_heavy(sh, w, k) ? 4 : 1) * (double)sh->light_units;
	double ms = sh->rec[w][k].compute_ns / 1e6;

	return ms > 0 ? 1000.0 * units / upms / ms : 0;
}

/* Iteration count and throttling checks common to both cases. */
static inline void mb_check_common(const struct mb_shared *sh, const char *tag)
{
	int w, all = 1;

	for (w = 0; w < sh->nw; w++) {
		const struct mb_rec *r = &sh->rec[w][sh->iters];
		int k;

		for (k = 0; k <= sh->iters; k++)
			all &= sh->rec[w][k].ok;
		tap_ok(llabs(r->iterations - (sh->iters + 1)) <= 2,
		       "%s: w%d closed %lld iterations for %d barriers (+-2)", tag, w,
		       r->iterations, sh->iters + 1);
		tap_ok(r->throttled > 0, "%s: w%d was throttled by the SMT emulation (%lld ns)",
		       tag, w, r->throttled);
	}
	tap_ok(all, "%s: every worker read its /proc/self/sched_hpc after every barrier", tag);
}

#endif /* HPCSCHED_METBENCH_H */
