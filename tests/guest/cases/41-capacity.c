// SPDX-License-Identifier: GPL-2.0
/*
 * 41-capacity: the time SCHED_HPC tasks take is capacity the fair class
 * cannot use.
 *
 * A  An HPC spinner holds CPU 0; a normal (SCHED_OTHER) spinner started on
 *    CPU 0 runs only in the fair server's share there; allowed on every
 *    CPU while the others are idle, it leaves CPU 0 within 6 s (on the
 *    PREEMPT_RT kernel it once took more than 3 s) and gets at least 1.5 s
 *    of CPU in the next 2 s (the fair balancer counts every runnable task
 *    of a CPU).
 * B  The same HPC spinner beside 2 normal spinners per CPU, started 2 on
 *    each CPU and then allowed on every CPU: every CPU looks equally loaded
 *    to the fair balancer unless the HPC task's running time is taken from
 *    CPU 0's capacity (rq->avg_hpc, scale_rt_capacity()). Without it the
 *    two normal spinners of CPU 0 stay behind the HPC spinner with a few
 *    per cent of a CPU while the others share the other CPUs; with it they
 *    move. Over 3 s, the normal spinner that got the least CPU time got at
 *    least half of what the one that got the most got.
 */
/* guest-timeout: 90 */
#include "hpctest.h"

#define MAXC 8

static struct spin *S;

/* B: 2 normal spinners per CPU beside the HPC spinner of CPU 0 (S[0]). */
static void shares(void)
{
	long long t0[2 * MAXC], t1, got, lo = -1, hi = 0;
	int ncpu = online_cpus(), n = 2 * ncpu, i, c;
	char desc[64] = "";

	if (ncpu > MAXC) {
		tap_skip("shares", "needs at most %d CPUs (have %d)", MAXC, ncpu);
		return;
	}
	for (i = 0; i < n; i++) {
		if (!tap_check(spin_start(&S[1 + i], i / 2, SCHED_OTHER, 0, 30) > 0, "spawn",
			       "B: start normal spinner %d on CPU %d", i, i / 2))
			return;
	}
	sleep_ms(300);
	for (i = 0; i < n; i++)
		unpin(S[1 + i].pid);
	sleep_ms(2000);
	for (i = 0; i < n; i++)
		t0[i] = cpu_ns_of(S[1 + i].pid);
	sleep_ms(3000);
	for (i = 0; i < n; i++) {
		t1 = cpu_ns_of(S[1 + i].pid);
		got = t0[i] >= 0 && t1 >= 0 ? (t1 - t0[i]) / 1000000 : -1;
		if (lo < 0 || got < lo)
			lo = got;
		if (got > hi)
			hi = got;
		c = task_cpu_of(S[1 + i].pid);
		tap_diag("B: normal spinner %d: %lld ms in 3 s, on CPU %d", i, got, c);
		snprintf(desc, sizeof(desc), "%lld..%lld ms", lo, hi);
	}
	tap_check(lo >= 0 && 2 * lo >= hi, desc,
		  "B: %d normal spinners beside an HPC spinner on CPU 0 share the CPUs: the least "
		  "CPU time over 3 s is at least half the most (%lld..%lld ms)", n, lo, hi);
	tap_ok(task_cpu_of(S[0].pid) == 0, "B: the HPC spinner stays on CPU 0");
	for (i = 0; i < n; i++)
		spin_stop(&S[1 + i]);
}

int main(void)
{
	long long t0, t1, got_ms;
	int i, cpu = 0, moved = 0, hpc_cpu;

	tap_init("41-capacity");
	watchdog(70);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("capacity", "needs 2 CPUs (have %d)", online_cpus());
		return tap_done();
	}
	S = shared_alloc((1 + 2 * MAXC) * sizeof(*S));
	if (!tap_check(spin_start(&S[0], 0, SCHED_HPC, 0, 30) > 0, "spawn",
		       "start an HPC spinner on CPU 0") ||
	    !tap_check(spin_start(&S[1], 0, SCHED_OTHER, 0, 30) > 0, "spawn",
		       "start a normal spinner on CPU 0")) {
		kill_children();
		return tap_done();
	}
	sleep_ms(500);
	t0 = cpu_ns_of(S[1].pid);
	sleep_ms(500);
	t1 = cpu_ns_of(S[1].pid);
	tap_diag("A: behind the HPC spinner on CPU 0: the normal spinner ran %lld ms in 500 ms",
	     (t1 - t0) / 1000000);

	unpin(S[1].pid);
	for (i = 0; i < 60 && !moved; i++) {
		sleep_ms(100);
		cpu = task_cpu_of(S[1].pid);
		moved = cpu > 0;
	}
	tap_ok(moved, "A: allowed on every CPU, the normal spinner leaves the HPC spinner's CPU "
	       "within 6 s (on CPU %d after %d ms)", cpu, i * 100);

	t0 = cpu_ns_of(S[1].pid);
	sleep_ms(2000);
	t1 = cpu_ns_of(S[1].pid);
	got_ms = (t1 - t0) / 1000000;
	tap_ok(t0 >= 0 && got_ms >= 1500,
	       "A: and runs there: %lld ms of CPU in 2 s (at least 1500)", got_ms);
	hpc_cpu = task_cpu_of(S[0].pid);
	tap_ok(hpc_cpu == 0, "A: the HPC spinner stays on CPU 0 (on %d)", hpc_cpu);

	spin_stop(&S[1]);
	shares();
	spin_stop(&S[0]);
	kill_children();
	return tap_done();
}
