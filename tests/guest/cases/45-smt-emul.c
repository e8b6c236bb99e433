// SPDX-License-Identifier: GPL-2.0
/*
 * 45-smt-emul: the x86 SMT emulation backend's throttling.
 *
 * CPUs (0, 1) form an emulated core. An HPC spinner on CPU 0 runs at full
 * speed (CPU share >= 90 %, throttled_ns unchanged) when CPU 1 is idle or
 * runs a fair task; with an HPC spinner on each context, both at priority 4,
 * each runs at the modelled speed hpc_smt_speed(4, 4, busy) (600 permille,
 * accepted 450..750), throttled_ns grows by the rest and a fair task on the
 * same CPU runs meanwhile; the same with a longer emul_period_us. With 4
 * CPUs, HPC spinners on CPUs 1 and 2 (two different cores) are not
 * throttled (throttled_ns unchanged; each above 75 % of a CPU). An HPC
 * task on CPU 1 that computes, then sleeps in a wait makes CPU 1 a waiting
 * context: the spinner on CPU 0 runs at hpc_smt_emul_share_of(4, 4,
 * HPC_SMT_SIB_WAITS) (883 permille, with 10 ms and 50 ms periods), its
 * throttled_ns grows; once that task has exited the spinner runs
 * unthrottled again.
 * Expected speeds come from the policy core (kernel/hpc-core/hpc_smt.c).
 * The paired rates are medians of WINDOWS windows (measure_median()).
 *
 * Priority 4/4 is enforced with max_prio 4 while both spinners run.
 * Without it the heuristic is free to act, and it does: one spinner ends
 * up at priority 5 (the start-up wake-up of one closes an iteration that
 * the other computed through, which makes the other the critical path),
 * and the pair runs at hpc_smt_speed(5, 4) / (4, 5) (688 / 317 permille
 * in the SMT model of the time; 913 / 495 in the fitted one). That is what
 * was measured then (690/315 and 690/316, at 10 ms and 50 ms periods; read
 * back once: priorities 5 / 4, 712/320), not late refills. The fair fillers keep both vCPUs busy while their contexts are
 * throttled, so that a refill never waits for a halted vCPU to be woken
 * on a loaded TCG host.
 */
/* guest-timeout: 100 */
/* guest-cflags: -I@TOP@/kernel/hpc-core */
#include "hpctest.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#include "hpc_smt.c"

static struct spin *S;

struct meas {
	double share[2];
	long long thr[2];	/* throttled_ns delta */
	uint64_t wall;
};

static long long thr_of(pid_t pid)
{
	struct hpc_stat st;

	if (!pid || hpc_stat_read(pid, &st) || !st.hpc)
		return 0;
	return st.v[HS_THROTTLED_NS];
}

static void measure(pid_t a, pid_t b, unsigned int ms, struct meas *m)
{
	long long ca = cpu_ns_of(a), cb = b ? cpu_ns_of(b) : 0;
	long long ta = thr_of(a), tb = thr_of(b);
	uint64_t t0 = now_ns();

	sleep_ms(ms);
	m->wall = now_ns() - t0;
	m->share[0] = (double)(cpu_ns_of(a) - ca) / (double)m->wall;
	m->share[1] = b ? (double)(cpu_ns_of(b) - cb) / (double)m->wall : 0;
	m->thr[0] = thr_of(a) - ta;
	m->thr[1] = thr_of(b) - tb;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define WINDOWS 5	/* odd: the median is one window's */

static double median_of(double *v)
{
	qsort(v, WINDOWS, sizeof(*v), cmp_double);
	return v[WINDOWS / 2];
}

/*
 * The rates of @ms as the medians of WINDOWS windows: a window in which
 * the host stalled the guest (TCG, 16 vCPUs on 2 host CPUs) does not move
 * the median. @m->thr is the median throttled fraction over @m->wall.
 */
static void measure_median(pid_t a, pid_t b, unsigned int ms, struct meas *m)
{
	double v[4][WINDOWS];
	struct meas w;
	int i, k;

	m->wall = 0;
	for (i = 0; i < WINDOWS; i++) {
		measure(a, b, ms / WINDOWS, &w);
		m->wall += w.wall;
		for (k = 0; k < 2; k++) {
			v[k][i] = w.share[k];
			v[2 + k][i] = (double)w.thr[k] / (double)w.wall;
		}
	}
	for (k = 0; k < 2; k++) {
		m->share[k] = median_of(v[k]);
		m->thr[k] = (long long)(median_of(v[2 + k]) * (double)m->wall);
	}
}

static void alone(const char *what, int other_policy)
{
	struct meas m;
	pid_t a, b = 0;

	a = spin_start(&S[0], 0, SCHED_HPC, 0, 30);
	if (other_policy >= 0)
		b = spin_start(&S[1], 1, other_policy, 0, 30);
	if (!tap_ok(a > 0 && (other_policy < 0 || b > 0), "%s: spinners started", what))
		goto out;
	sleep_ms(300);
	measure(a, 0, 2000, &m);
	tap_diag("%s: HPC on CPU 0: %.1f %% CPU, throttled %lld ns", what, 100 * m.share[0], m.thr[0]);
	tap_ok(m.share[0] > 0.9, "%s: HPC spinner on CPU 0 runs unthrottled (%.1f %% > 90 %%)",
	       what, 100 * m.share[0]);
	tap_ok(m.thr[0] == 0, "%s: throttled_ns does not grow (+%lld)", what, m.thr[0]);
out:
	spin_stop(&S[0]);
	spin_stop(&S[1]);
}

/* A SCHED_HPC child on @cpu: computes 30 ms, waits (sleeps) @ms, exits. */
static pid_t waiter_start(int cpu, unsigned int ms)
{
	pid_t pid = fork_kid();

	if (pid == 0) {
		if (pin_cpu(0, cpu) || set_hpc(0))
			_exit(1);
		spin_cpu_ms(30);
		sleep_ms(ms);
		_exit(0);
	}
	return pid;
}

/*
 * The sibling context holds a task that waits: the spinner beside it runs
 * at the model's speed beside a waiting context, not in single-thread
 * mode; when that task is gone, in single-thread mode again. With @period_us
 * periods.
 *
 * At 883 permille a 10 ms period throttles for 1.2 ms, less than a loaded
 * TCG host delays a vCPU's timers: a period timer that fires late while
 * the CPU is throttled holds the spinner back into the new period, and
 * what that costs it is owed to the next one (hpc_smt_owed(), sched-hpc.rst,
 * the x86 emulation's budget). Without that, with two busy host processes
 * beside the 16-vCPU guest, the spinner ran at 605-850 permille at 10 ms
 * periods (at 878-894 with 50 ms periods on the same host); with it, at
 * 804-886 (10 ms) on the same host.
 *
 * Once the waiter is gone the spinner is unthrottled: throttled_ns stays,
 * and it runs above 75 % of the CPU, as in other_cores() (on a loaded
 * host the fair server and the fair filler take more of a TCG vCPU: 84 %
 * was seen).
 */
static void sibling_waits(unsigned int period_us)
{
	double want = hpc_smt_emul_share_of(4, 4, HPC_SMT_SIB_WAITS) / 1000.0;
	char max_prio[32] = "";
	pid_t a, f, w;
	struct meas m;
	int r;

	/* Priority 4: the spinner is judged beside the waiter otherwise. */
	r = knob_read("max_prio", max_prio, sizeof(max_prio));
	if (r >= 0)
		r = knob_set("max_prio", 4);
	if (r >= 0)
		r = knob_set("emul_period_us", period_us);
	if (!tap_check(r >= 0, strerror(-r), "sibling waits (%u us): max_prio 4, emul_period_us %u",
		       period_us, period_us))
		return;
	/* A fair filler keeps CPU 0's vCPU busy while the context is throttled. */
	f = spin_start(&S[2], 0, SCHED_OTHER, 0, 30);
	w = waiter_start(1, 5000);
	for (r = 0; r < 100 && w > 0 && task_state_of(w) != 'S'; r++)
		sleep_ms(10);
	a = spin_start(&S[0], 0, SCHED_HPC, 0, 30);
	if (!tap_ok(a > 0 && f > 0 && w > 0 && task_state_of(w) == 'S',
		    "sibling waits (%u us): HPC task asleep in a wait on CPU 1 (state %c), spinner on CPU 0",
		    period_us, w > 0 ? task_state_of(w) : '-'))
		goto out;
	sleep_ms(300);
	measure_median(a, 0, 2500, &m);
	tap_diag("sibling waits (%u us): CPU 0 %.1f %% (model %.1f %%), throttled +%lld ns in %.2f s "
		 "(medians of %d windows)",
		 period_us, 100 * m.share[0], 100 * want, m.thr[0], m.wall / 1e9, WINDOWS);
	tap_ok(m.thr[0] > (long long)(m.wall * (1 - want) / 2) &&
	       m.thr[0] < (long long)(m.wall * (1 - want) * 2),
	       "sibling waits (%u us): the spinner is held back ~%.1f %% of the time, as beside a waiting "
	       "context (got %.1f %%)", period_us, 100 * (1 - want), 100.0 * m.thr[0] / m.wall);
	tap_ok(m.share[0] > want - 0.12 && m.share[0] < want + 0.06,
	       "sibling waits (%u us): the spinner runs at the modelled %.0f permille (got %.0f)",
	       period_us, 1000 * want, 1000 * m.share[0]);
	tap_ok(reap_kid(w, 8000) == 0, "sibling waits (%u us): the waiting task exits", period_us);
	w = 0;
	sleep_ms(300);
	measure(a, 0, 1000, &m);
	tap_diag("sibling gone (%u us): CPU 0 %.1f %%, throttled +%lld ns", period_us,
		 100 * m.share[0], m.thr[0]);
	tap_ok(m.thr[0] == 0 && m.share[0] > 0.75,
	       "sibling gone (%u us): the spinner runs unthrottled again (+%lld ns, %.1f %%)",
	       period_us, m.thr[0], 100 * m.share[0]);
out:
	if (w > 0)
		reap_kid(w, 8000);
	spin_stop(&S[0]);
	spin_stop(&S[2]);
	knob_set("emul_period_us", 10000);
	if (max_prio[0])
		knob_write("max_prio", max_prio);
}

static long long prio_of(pid_t pid)
{
	struct hpc_stat st;

	if (!pid || hpc_stat_read(pid, &st) || !st.hpc)
		return -1;
	return st.v[HS_PRIO];
}

static void both(const char *what)
{
	double want = hpc_smt_speed(4, 4, true) / 1000.0, fill[2];
	long long cf[2], prio[2];
	char max_prio[32] = "";
	pid_t a, b, f[2];
	struct meas m;
	int i, r;

	/* Priority 4 for both: the heuristic may not raise either one. */
	r = knob_read("max_prio", max_prio, sizeof(max_prio));
	if (r >= 0)
		r = knob_set("max_prio", 4);
	if (!tap_check(r >= 0, strerror(-r), "%s: max_prio 4", what))
		return;
	/* Fair fillers keep each vCPU busy (not halted) while its context is throttled. */
	f[0] = spin_start(&S[2], 0, SCHED_OTHER, 0, 30);
	f[1] = spin_start(&S[3], 1, SCHED_OTHER, 0, 30);
	a = spin_start(&S[0], 0, SCHED_HPC, 0, 30);
	b = spin_start(&S[1], 1, SCHED_HPC, 0, 30);
	if (!tap_ok(a > 0 && b > 0 && f[0] > 0 && f[1] > 0,
		    "%s: HPC and fair spinners on CPUs 0 and 1", what))
		goto out;
	sleep_ms(500);
	for (i = 0; i < 2; i++)
		cf[i] = cpu_ns_of(f[i]);
	measure_median(a, b, 3000, &m);
	for (i = 0; i < 2; i++)
		fill[i] = (double)(cpu_ns_of(f[i]) - cf[i]) / (double)m.wall;
	prio[0] = prio_of(a);
	prio[1] = prio_of(b);
	tap_diag("%s: CPU 0 %.1f %%, CPU 1 %.1f %% (model %.1f %%), throttled +%lld / +%lld ns in %.2f s "
		 "(medians of %d windows), priorities %lld / %lld, fair fillers %.1f %% / %.1f %%",
		 what, 100 * m.share[0], 100 * m.share[1], 100 * want, m.thr[0], m.thr[1],
		 m.wall / 1e9, WINDOWS, prio[0], prio[1], 100 * fill[0], 100 * fill[1]);
	tap_ok(prio[0] == 4 && prio[1] == 4, "%s: both contexts at priority 4 (%lld, %lld)", what,
	       prio[0], prio[1]);
	for (i = 0; i < 2; i++) {
		tap_ok(m.share[i] > want - 0.15 && m.share[i] < want + 0.15,
		       "%s: context %d runs at the modelled speed %.0f permille (got %.0f)",
		       what, i, 1000 * want, 1000 * m.share[i]);
		tap_ok(m.thr[i] > (long long)(m.wall * (1 - want) / 2) &&
		       m.thr[i] < (long long)(m.wall * (1 - want) * 1.6),
		       "%s: context %d throttled_ns grows by ~%.0f %% of the time (got %.1f %%)",
		       what, i, 100 * (1 - want), 100.0 * m.thr[i] / m.wall);
		tap_ok(fill[i] > (1 - want) / 4,
		       "%s: the fair task on CPU %d runs while the context is throttled (%.1f %%)",
		       what, i, 100 * fill[i]);
	}
out:
	for (i = 0; i < 4; i++)
		spin_stop(&S[i]);
	if (max_prio[0])
		knob_write("max_prio", max_prio);
}

static void other_cores(void)
{
	struct meas m;
	pid_t a, b;

	a = spin_start(&S[0], 1, SCHED_HPC, 0, 30);
	b = spin_start(&S[1], 2, SCHED_HPC, 0, 30);
	if (!tap_ok(a > 0 && b > 0, "HPC spinners on CPUs 1 and 2 (different cores)"))
		goto out;
	sleep_ms(300);
	measure(a, b, 2000, &m);
	tap_diag("CPUs 1+2: %.1f %% / %.1f %%, throttled +%lld / +%lld", 100 * m.share[0],
		 100 * m.share[1], m.thr[0], m.thr[1]);
	/*
	 * Unpaired: neither is ever throttled. The shares only confirm that
	 * both ran well above the paired speed at 4/4 (600 permille): a vCPU
	 * of the 16-vCPU guest on a 2-CPU host got 88 % of the time once.
	 */
	tap_ok(m.share[0] > 0.75 && m.share[1] > 0.75 && m.thr[0] == 0 && m.thr[1] == 0,
	       "HPC spinners on CPUs 1 and 2 are not paired: both unthrottled (+%lld / +%lld ns), "
	       "each above 75 %% (%.1f %% / %.1f %%)",
	       m.thr[0], m.thr[1], 100 * m.share[0], 100 * m.share[1]);
out:
	spin_stop(&S[0]);
	spin_stop(&S[1]);
}

int main(void)
{
	char pairs[256];
	int r;

	tap_init("45-smt-emul");
	watchdog(95);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("smt emulation", "needs 2 CPUs");
		return tap_done();
	}
	knob_read("smt_pairs", pairs, sizeof(pairs));
	if (strncmp(pairs, "0 1", 3) || (pairs[3] && pairs[3] != '\n')) {
		tap_fail("CPUs 0 and 1 form the first emulated core", "smt_pairs: %s", pairs);
		return tap_done();
	}
	/* Keep the test itself off CPUs 0 and 1 where possible. */
	if (online_cpus() >= 4)
		pin_cpu(0, 3);
	S = shared_alloc(4 * sizeof(*S));
	alone("sibling idle", -1);
	alone("sibling runs a fair spinner", SCHED_OTHER);
	sibling_waits(10000);
	sibling_waits(50000);
	both("both HPC, prio 4/4, period 10 ms");
	r = knob_set("emul_period_us", 50000);
	if (tap_check(r == 0, strerror(-r), "emul_period_us 50000"))
		both("both HPC, prio 4/4, period 50 ms");
	knob_set("emul_period_us", 10000);
	if (online_cpus() >= 4)
		other_cores();
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
