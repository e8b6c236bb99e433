// SPDX-License-Identifier: GPL-2.0
/*
 * 30-class-order: SCHED_HPC sits between RT and fair, on one CPU.
 *
 * Everything that competes is pinned to CPU 0; the test itself runs on
 * CPU 1 (SCHED_OTHER, so CPU 0's emulated sibling never runs an HPC task
 * and nothing is throttled by the SMT emulation).
 *  A. an HPC spinner starves a fair spinner except for the fair server's
 *     share: fair gets > 0 and well under 50 %;
 *  B. a SCHED_FIFO spinner preempts the HPC spinner: HPC gets ~0 while it
 *     spins (RT throttling aside) and ~all once it stopped;
 *  C. a running SCHED_FIFO task that enters SCHED_HPC (setscheduler; a
 *     PI de-boost takes the same path) lets the RT task queued behind it
 *     run at once: before its sched_setscheduler() call returns, not at
 *     whatever next reschedules CPU 0 (with queue=fifo, no HPC slice).
 * (Wake-up preemption of a fair task: 31-wakeup-preempt.)
 * CPU time from /proc/<pid>/schedstat.
 */
/* guest-timeout: 120 */
#include "hpctest.h"

static struct spin *S;

static double share(pid_t pid, long long c0, uint64_t t0)
{
	long long c = cpu_ns_of(pid);

	return (double)(c - c0) / (double)(now_ns() - t0);
}

static void part_a(void)
{
	long long cf, ch;
	double sf, sh;
	uint64_t t0;
	pid_t f, h;

	f = spin_start(&S[0], 0, SCHED_OTHER, 0, 30);
	if (!tap_check(f > 0, "spawn", "A: fair spinner on CPU 0"))
		return;
	spin_wait_started(&S[0], 3000);
	t0 = now_ns();
	cf = cpu_ns_of(f);
	sleep_ms(1000);
	sf = share(f, cf, t0);
	tap_ok(sf > 0.8, "A: fair spinner alone gets CPU 0 (%.1f %%)", 100 * sf);

	h = spin_start(&S[1], 0, SCHED_HPC, 0, 30);
	if (!tap_check(h > 0, "spawn", "A: HPC spinner on CPU 0")) {
		spin_stop(&S[0]);
		return;
	}
	sleep_ms(300);
	t0 = now_ns();
	cf = cpu_ns_of(f);
	ch = cpu_ns_of(h);
	sleep_ms(3000);
	sf = share(f, cf, t0);
	sh = share(h, ch, t0);
	tap_diag("A: 3 s with HPC + fair spinner on CPU 0: HPC %.1f %%, fair %.1f %%",
		 100 * sh, 100 * sf);
	tap_ok(sh > 0.7, "A: HPC spinner gets most of CPU 0 (%.1f %% > 70 %%)", 100 * sh);
	tap_ok(sf > 0.002, "A: fair spinner is not starved completely: fair server (%.2f %% > 0.2 %%)",
	       100 * sf);
	tap_ok(sf < 0.25, "A: fair spinner gets well under half (%.1f %% < 25 %%)", 100 * sf);
	spin_stop(&S[0]);
	spin_stop(&S[1]);
}

static void part_b(void)
{
	long long ch, cr;
	double sh, sr;
	uint64_t t0;
	pid_t h, r;

	h = spin_start(&S[1], 0, SCHED_HPC, 0, 30);
	if (!tap_check(h > 0, "spawn", "B: HPC spinner on CPU 0"))
		return;
	spin_wait_started(&S[1], 3000);
	r = spin_start(&S[2], 0, SCHED_FIFO, 10, 30);
	if (!tap_check(r > 0, "spawn", "B: SCHED_FIFO spinner on CPU 0")) {
		spin_stop(&S[1]);
		return;
	}
	sleep_ms(200);
	t0 = now_ns();
	ch = cpu_ns_of(h);
	cr = cpu_ns_of(r);
	sleep_ms(2000);
	sh = share(h, ch, t0);
	sr = share(r, cr, t0);
	tap_diag("B: 2 s with FIFO + HPC spinner on CPU 0: FIFO %.1f %%, HPC %.1f %%",
		 100 * sr, 100 * sh);
	tap_ok(sr > 0.75, "B: SCHED_FIFO spinner preempts HPC (%.1f %% > 75 %%)", 100 * sr);
	tap_ok(sh < 0.15, "B: HPC spinner gets ~nothing under RT (%.1f %% < 15 %%)", 100 * sh);
	spin_stop(&S[2]);
	t0 = now_ns();
	ch = cpu_ns_of(h);
	sleep_ms(1000);
	sh = share(h, ch, t0);
	tap_ok(sh > 0.8, "B: HPC spinner runs again once RT stopped (%.1f %%)", 100 * sh);
	spin_stop(&S[1]);
}

/* Part C's shared flags: who got how far. */
struct part_c {
	volatile int a_ready, a_switch, a_done, b_queued, b_ran;
	volatile int b_ran_at_switch, b_ran_at_end, a_err;
};

static void part_c(void)
{
	struct part_c *c = shared_alloc(sizeof(*c));
	uint64_t end;
	pid_t a, b;
	int r;

	r = knob_write("queue", "fifo");
	if (!tap_check(r == 0, strerror(-r), "C: queue=fifo"))
		return;
	a = fork_kid();
	if (a == 0) {
		/* FIFO 50 on CPU 0, then SCHED_HPC while running. */
		if (pin_cpu(0, 0) || set_policy(0, SCHED_FIFO, 50))
			_exit(2);
		c->a_ready = 1;
		while (!c->a_switch)
			;
		c->a_err = set_hpc(0);
		c->b_ran_at_switch = c->b_ran;
		end = now_ns() + 1000000000ull;
		while (now_ns() < end)
			;
		c->b_ran_at_end = c->b_ran;
		c->a_done = 1;
		_exit(0);
	}
	end = now_ns() + 5000000000ull;
	while (a > 0 && !c->a_ready && now_ns() < end)
		sleep_ms(5);
	b = fork_kid();
	if (b == 0) {
		/* FIFO 10, queued on CPU 0 behind A; runs 20 ms, then leaves. */
		if (set_policy(0, SCHED_FIFO, 10))
			_exit(2);
		c->b_queued = 1;
		if (pin_cpu(0, 0))
			_exit(2);
		c->b_ran = 1;
		spin_cpu_ms(20);
		_exit(0);
	}
	if (tap_check(a > 0 && b > 0 && c->a_ready, "fork", "C: FIFO task on CPU 0")) {
		while (!c->b_queued && now_ns() < end)
			sleep_ms(5);
		sleep_ms(100);
		tap_ok(c->b_queued && !c->b_ran, "C: FIFO 10 queued behind FIFO 50 (not run yet)");
	}
	c->a_switch = 1;
	if (a > 0)
		reap_kid(a, 10000);
	if (b > 0)
		reap_kid(b, 5000);
	if (a > 0 && b > 0 && c->a_ready) {
		tap_ok(c->a_done && !c->a_err, "C: the running FIFO task entered SCHED_HPC (%s)",
		       c->a_err ? strerror(-c->a_err) : "ok");
		tap_ok(c->b_ran_at_switch,
		       "C: the queued RT task ran before the switch to SCHED_HPC returned "
		       "(ran by the end of the 1 s spin: %d)",
		       c->b_ran_at_end);
	}
	knobs_restore();
}

int main(void)
{
	int r;

	tap_init("30-class-order");
	watchdog(110);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("class order", "needs 2 CPUs");
		return tap_done();
	}
	r = pin_cpu(0, 1);
	tap_check(r == 0, strerror(-r), "test process on CPU 1");
	S = shared_alloc(4 * sizeof(*S));
	part_a();
	part_b();
	part_c();
	kill_children();
	return tap_done();
}
