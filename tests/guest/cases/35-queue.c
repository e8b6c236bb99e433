// SPDX-License-Identifier: GPL-2.0
/*
 * 35-queue: the HPC run queue disciplines (sysfs "queue", "timeslice_us").
 *
 * Two HPC spinners A and B pinned to CPU 0 (the test runs on CPU 1):
 *  rr:   both progress over 2 s; a smaller timeslice_us gives many more
 *        involuntary context switches than a larger one;
 *  fifo: B, woken behind a running A, gets nothing while A spins; once A
 *        calls sched_yield() B runs and A gets nothing; once B yields A
 *        runs again.
 * Progress = work units counted in shared memory.
 */
/* guest-timeout: 90 */
#include "hpctest.h"

static struct spin *S;

static long long nvcsw(pid_t pid)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "nonvoluntary_ctxt_switches:");
	return p ? strtoll(p + 27, NULL, 10) : -1;
}

static int start_pair(void)
{
	pid_t a, b;

	a = spin_start(&S[0], 0, SCHED_HPC, 0, 30);
	if (a <= 0)
		return 0;
	if (!spin_wait_started(&S[0], 3000))
		return 0;
	b = spin_start(&S[1], 0, SCHED_HPC, 0, 30);
	return b > 0;
}

static void stop_pair(void)
{
	spin_stop(&S[0]);
	spin_stop(&S[1]);
}

/* Run A and B under rr with @slice_us; returns A's involuntary switches in 2 s. */
static long long rr(unsigned int slice_us, int check)
{
	uint64_t a0, b0, da, db;
	long long s0, s1;
	int r;

	r = knob_set("timeslice_us", slice_us);
	if (!tap_check(r == 0, strerror(-r), "rr: timeslice_us %u", slice_us))
		return -1;
	if (!tap_ok(start_pair(), "rr(%u us): two HPC spinners on CPU 0", slice_us)) {
		stop_pair();
		return -1;
	}
	sleep_ms(300);
	a0 = S[0].count;
	b0 = S[1].count;
	s0 = nvcsw(S[0].pid);
	sleep_ms(2000);
	da = S[0].count - a0;
	db = S[1].count - b0;
	s1 = nvcsw(S[0].pid);
	stop_pair();
	tap_diag("rr(%u us): 2 s progress A %" PRIu64 ", B %" PRIu64 ", A involuntary switches %lld",
		 slice_us, da, db, s1 - s0);
	if (check) {
		tap_ok(da > 0 && db > 0, "rr(%u us): both spinners progress", slice_us);
		tap_ok(da * 4 > db && db * 4 > da,
		       "rr(%u us): neither gets more than 80 %% (A %" PRIu64 ", B %" PRIu64 ")",
		       slice_us, da, db);
	}
	return s1 - s0;
}

static void fifo(void)
{
	uint64_t a0, b0, da, db;
	int r;

	r = knob_write("queue", "fifo\n");
	if (!tap_check(r == 0, strerror(-r), "queue fifo"))
		return;
	if (!tap_ok(start_pair(), "fifo: A spinning, B woken behind it on CPU 0")) {
		stop_pair();
		return;
	}
	a0 = S[0].count;
	b0 = S[1].count;
	sleep_ms(1500);
	da = S[0].count - a0;
	db = S[1].count - b0;
	tap_diag("fifo: 1.5 s: A %" PRIu64 ", B %" PRIu64 " (B started: %d)", da, db, S[1].started);
	tap_ok(da > 0, "fifo: A runs");
	tap_ok(db * 100 <= da, "fifo: B gets ~nothing while A spins (%" PRIu64 " vs %" PRIu64 ")",
	       db, da);

	S[0].yield_req = 1;
	sleep_ms(300);
	tap_ok(S[0].yields == 1, "fifo: A yielded (%d)", S[0].yields);
	a0 = S[0].count;
	b0 = S[1].count;
	sleep_ms(1500);
	da = S[0].count - a0;
	db = S[1].count - b0;
	tap_diag("fifo: after A's yield: A %" PRIu64 ", B %" PRIu64, da, db);
	tap_ok(db > 0, "fifo: after A's sched_yield() B runs");
	tap_ok(da * 100 <= db, "fifo: and A gets ~nothing (%" PRIu64 " vs %" PRIu64 ")", da, db);

	S[1].yield_req = 1;
	sleep_ms(300);
	a0 = S[0].count;
	b0 = S[1].count;
	sleep_ms(1000);
	da = S[0].count - a0;
	db = S[1].count - b0;
	tap_ok(S[1].yields == 1 && da > 0 && db * 100 <= da,
	       "fifo: after B's sched_yield() A runs again, B waits (A %" PRIu64 ", B %" PRIu64 ")",
	       da, db);
	stop_pair();
	knob_write("queue", "rr\n");
}

int main(void)
{
	long long small, big;
	int r;

	tap_init("35-queue");
	watchdog(80);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	if (online_cpus() < 2) {
		tap_skip("queue", "needs 2 CPUs");
		return tap_done();
	}
	r = pin_cpu(0, 1);
	tap_check(r == 0, strerror(-r), "test process on CPU 1");
	S = shared_alloc(2 * sizeof(*S));

	big = rr(100000, 1);
	small = rr(5000, 1);
	if (big >= 0 && small >= 0)
		tap_ok(small > 3 * big + 3,
		       "rr: timeslice_us 5000 switches much more often than 100000 (%lld vs %lld)",
		       small, big);
	knob_set("timeslice_us", 100000);
	fifo();
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
