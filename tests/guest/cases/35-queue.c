// SPDX-License-Identifier: GPL-2.0
/*
 * 35-queue: the HPC run queue disciplines (sysfs "queue", "timeslice_us").
 *
 * Two HPC spinners A and B pinned to CPU 0 (the test runs on CPU 1):
 *  rr:   both progress over 2 s; a smaller timeslice_us gives many more
 *        involuntary context switches than a larger one (not on
 *        PREEMPT_RT, where its per-CPU threads preempt the spinners about
 *        as often: reported as a SKIP);
 *  rr, a waking task W beside A and B on CPU 0, sleeping 6 ms between
 *        bursts of 2 ms of CPU for 4 s (a quarter of the CPU, less than
 *        its third): it gets more than 2 slices of CPU in all, and at most
 *        one of its iterations waits half a slice or more to run (its time
 *        less its sleep and its CPU time; one for a stall of the host's
 *        vCPU; over it, measured once more). A task that wakes up starts a
 *        new slice: its bursts never add up to a slice that sends it
 *        behind the spinners at a tick (every burst sees one), a wait of
 *        a spinner's slice or more at each slice's worth of bursts. A
 *        waking task that asks for more than its share (1 ms bursts
 *        between 1 ms sleeps) does wait: its virtual time runs ahead of
 *        the spinners', and it is placed behind them. On PREEMPT_RT the
 *        bound is half a slice plus the fair server's runtime (50 ms):
 *        softirqs run there in ksoftirqd, a fair task, which the spinners
 *        hold back until the fair server runs it, for its whole runtime
 *        under TCG (ksoftirqd/0 had ~200 ms in 4 s), at the server's
 *        deadline priority, above W;
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

#define WAKER_SECS	4
#define WAKER_SLEEP_US	6000
#define WAKER_BURST_US	2000
#define WAKER_SLICE_NS	100000000ULL	/* the default timeslice_us */
#define FAIR_SERVER_RUNTIME "/sys/kernel/debug/sched/fair_server/cpu0/runtime"

/* What the waking task W saw (shared memory). */
struct waker {
	uint64_t iters;		/* wake-ups */
	uint64_t cpu_ns;	/* its CPU time over the run */
	uint64_t max_ns;	/* its longest wait to run in one iteration */
	uint64_t bound_ns;	/* a long wait: at least half a slice (+ RT) */
	unsigned int long_waits; /* iterations that waited bound_ns or more */
	int err;		/* errno of a failed setup */
};

static struct waker *W;

/* W, in a child: on CPU 0 as SCHED_HPC, sleep 6 ms, compute 2 ms, ... */
static void waker_loop(void)
{
	uint64_t end, c0, w0, c, wait;
	int r = pin_cpu(0, 0);

	if (!r)
		r = set_hpc(0);
	if (r) {
		W->err = -r;
		_exit(1);
	}
	c0 = thread_cpu_ns();
	end = now_ns() + WAKER_SECS * 1000000000ULL;
	while ((w0 = now_ns()) < end) {
		c = thread_cpu_ns();
		sleep_ns(WAKER_SLEEP_US * 1000ULL);
		spin_cpu_us(WAKER_BURST_US);
		/* the iteration's time less its sleep and its CPU time */
		wait = now_ns() - w0 - WAKER_SLEEP_US * 1000ULL;
		c = thread_cpu_ns() - c;
		wait = wait > c ? wait - c : 0;
		W->iters++;
		if (wait > W->max_ns)
			W->max_ns = wait;
		if (wait >= W->bound_ns)
			W->long_waits++;
	}
	W->cpu_ns = thread_cpu_ns() - c0;
	_exit(0);
}

/* One run of W beside A and B; 1 if it kept its place, reports it. */
static int rr_waker_run(int last)
{
	uint64_t bound = WAKER_SLICE_NS / 2;
	char val[32];
	int r;

	memset(W, 0, sizeof(*W));
	if (kernel_preempt_rt()) {
		if (!tap_check(read_file(FAIR_SERVER_RUNTIME, val, sizeof(val)) > 0,
			       "unreadable", "rr: PREEMPT_RT: the fair server's runtime (%s)",
			       FAIR_SERVER_RUNTIME))
			return 1;
		bound += strtoull(val, NULL, 10);
	}
	W->bound_ns = bound;
	if (!tap_ok(start_pair(), "rr: A and B spinning on CPU 0 beside W")) {
		stop_pair();
		return 1;
	}
	sleep_ms(300);
	r = run_in_child(waker_loop, (WAKER_SECS + 20) * 1000);
	stop_pair();
	tap_diag("rr: W in %d s: %" PRIu64 " wake-ups, %.0f ms of CPU, longest wait %.1f ms, %u waits >= %.0f ms",
		 WAKER_SECS, W->iters, W->cpu_ns / 1e6, W->max_ns / 1e6,
		 W->long_waits, bound / 1e6);
	if (!tap_check(r == 0 && !W->err, strerror(W->err ? W->err : EIO),
		       "rr: W ran its %d s (exit %d)", WAKER_SECS, r))
		return 1;
	if (!last && W->long_waits > 1)
		return 0;
	tap_ok(W->cpu_ns > 2 * WAKER_SLICE_NS,
	       "rr: W got more than 2 slices of CPU in %d us bursts (%.0f ms)",
	       WAKER_BURST_US, W->cpu_ns / 1e6);
	tap_ok(W->long_waits <= 1,
	       "rr: W waited %.0f ms or more at most once (%u times, longest %.1f ms)",
	       bound / 1e6, W->long_waits, W->max_ns / 1e6);
	return 1;
}

static void rr_waker(void)
{
	if (!rr_waker_run(0)) {
		tap_diag("rr: W waited long %u times: measured once more", W->long_waits);
		rr_waker_run(1);
	}
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
	W = shared_alloc(sizeof(*W));

	big = rr(100000, 1);
	small = rr(5000, 1);
	if (big < 0 || small < 0)
		;
	else if (kernel_preempt_rt())
		tap_skip("rr: timeslice_us 5000 switches much more often than 100000",
			 "PREEMPT_RT: its per-CPU threads preempt the spinners as often "
			 "(%lld vs %lld)", small, big);
	else
		tap_ok(small > 3 * big + 3,
		       "rr: timeslice_us 5000 switches much more often than 100000 (%lld vs %lld)",
		       small, big);
	knob_set("timeslice_us", WAKER_SLICE_NS / 1000);
	rr_waker();
	fifo();
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
