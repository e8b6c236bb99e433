// SPDX-License-Identifier: GPL-2.0
/*
 * PENDING (moved out of tests/guest/cases at 21:00 UTC, 2026-11-22, by the test engineer).
 * Fails on the series patches/0001-0005 (tested on the identical kdev build):
 *   "median wake-up latency HPC < half of fair-vs-fair": smp2 HPC 506 us vs
 *   fair 615 us, smp4 HPC 1297 us vs fair 723 us (earlier runs: 1038/1813,
 *   4250/10389). A woken SCHED_HPC task does not run measurably sooner than
 *   a woken fair task next to a fair spinner; ~1 ms (one tick at HZ=1000)
 *   suggests it waits for the next tick instead of preempting at wake-up.
 *   Caveat: the host was heavily loaded (2 kernel builds + other guests on
 *   2 cores) during every run; re-check on a quiet machine before blaming
 *   the kernel. Latest series build (20:41, = patches/0001-0005): smp2 726 us vs 719 us
 *   (fail), smp4 passed. Move back to cases/ when it passes reliably.
 */
/*
 * 31-wakeup-preempt: wake-up preemption of a fair task by SCHED_HPC.
 *
 * A task woken (through a pipe, from CPU 1) while a fair task (20 ms
 * slice) spins on CPU 0 runs promptly when it is SCHED_HPC: its median
 * wake-up latency is < half of the fair-vs-fair one (a fair sleeper with the
 * same 20 ms slice), measured in the same run. The test runs on CPU 1.
 */
/* guest-timeout: 60 */
#include "hpctest.h"

static struct spin *S;

/* Shared state of the wake-up latency ping-pong. */
struct pingpong {
	volatile uint64_t t_wake;	/* waker: before write() */
	uint64_t lat[256];
	int n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The fair tasks of the ping-pong get a 20 ms slice (sched_attr.sched_runtime,
 * 6.12 custom slices): a woken fair task then waits for the spinner's
 * protected slice (EEVDF RUN_TO_PARITY), ~10 ms on average, which keeps the
 * comparison clear of TCG/host noise of ~1 ms. A woken HPC task must not
 * wait for it.
 */
#define SLICE_NS 20000000ULL

static int set_slice(pid_t pid, uint64_t ns)
{
	struct hpc_sched_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_OTHER;
	a.sched_runtime = ns;
	return sys_sched_setattr(pid, &a, 0) ? -errno : 0;
}

/* Median wake-up latency (ns) of a sleeper of @policy on CPU 0 next to a fair spinner. */
static uint64_t latency(int policy, int rounds, uint64_t *p90)
{
	struct pingpong *pp = shared_alloc(sizeof(*pp));
	int ping[2], pong[2], i, st;
	uint64_t med;
	pid_t t, f;
	char c = 'x';

	*p90 = 0;
	if (pipe(ping) || pipe(pong))
		return 0;
	f = spin_start(&S[0], 0, SCHED_OTHER, 0, 30);
	if (f <= 0)
		return 0;
	spin_wait_started(&S[0], 3000);
	if (set_slice(f, SLICE_NS))
		return 0;
	t = fork_kid();
	if (t == 0) {
		if (pin_cpu(0, 0) || set_policy(0, policy, 0))
			_exit(1);
		if (policy == SCHED_OTHER && set_slice(0, SLICE_NS))
			_exit(1);
		close(ping[1]);
		close(pong[0]);
		for (i = 0; i < rounds; i++) {
			if (read(ping[0], &c, 1) != 1)
				_exit(2);
			pp->lat[i] = now_ns() - pp->t_wake;
			pp->n = i + 1;
			if (write(pong[1], &c, 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	sleep_ms(100);
	for (i = 0; i < rounds; i++) {
		sleep_ns(2000000 + (uint64_t)((i * 7919) % 5000) * 1000);	/* 2..7 ms */
		pp->t_wake = now_ns();
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
	}
	close(ping[1]);
	close(pong[0]);
	wait_timeout(t, &st, 5000);
	spin_stop(&S[0]);
	if (pp->n < rounds / 2) {
		munmap(pp, sizeof(*pp));
		return 0;
	}
	qsort(pp->lat, (size_t)pp->n, sizeof(pp->lat[0]), cmp_u64);
	med = pp->lat[pp->n / 2];
	*p90 = pp->lat[pp->n * 9 / 10];
	munmap(pp, sizeof(*pp));
	return med;
}

static void part_c(void)
{
	uint64_t mh, mf, ph, pf;

	mh = latency(SCHED_HPC, 60, &ph);
	mf = latency(SCHED_OTHER, 60, &pf);
	tap_diag("C: wake-up latency next to a fair spinner: HPC median %.0f us (p90 %.0f), "
		 "fair median %.0f us (p90 %.0f)", mh / 1e3, ph / 1e3, mf / 1e3, pf / 1e3);
	if (!tap_ok(mh > 0 && mf > 0, "C: both ping-pong runs completed"))
		return;
	tap_ok(mh * 2 < mf,
	       "C: woken HPC task preempts the fair spinner: median %.0f us < half of fair-vs-fair %.0f us",
	       mh / 1e3, mf / 1e3);
}

int main(void)
{
	int r;

	tap_init("31-wakeup-preempt");
	watchdog(55);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("wake-up preemption", "needs 2 CPUs");
		return tap_done();
	}
	r = pin_cpu(0, 1);
	tap_check(r == 0, strerror(-r), "test process on CPU 1");
	S = shared_alloc(2 * sizeof(*S));
	part_c();
	kill_children();
	return tap_done();
}
