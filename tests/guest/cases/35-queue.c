// SPDX-License-Identifier: GPL-2.0
/*
 * 35-queue: the HPC run queue disciplines (sysfs "queue", "timeslice_us").
 *
 * Two HPC spinners A and B pinned to CPU 0 (the test runs on CPU 1):
 *  rr:   both progress over 2 s; a smaller timeslice_us makes the CPU go
 *        from one spinner to the other many more times than a larger one
 *        (counted by the spinners: a task of another class that preempts
 *        one and gives the CPU back to it, as PREEMPT_RT's interrupt and
 *        timer threads do at every tick, is not a switch between them);
 *  fifo: B, woken behind a running A, gets nothing while A spins; once A
 *        calls sched_yield() B runs and A gets nothing; once B yields A
 *        runs again. A real-time spinner R that took the CPU from A and
 *        then enters the class while it runs (sched_setscheduler() to
 *        SCHED_HPC, as a PI or RCU de-boost does) goes behind A: A, which
 *        another class took the CPU from, runs first, and R gets nothing
 *        while A spins.
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

/* The work spinners @i and @j do in the next @ms, into *@di and *@dj. */
static void progress(int i, int j, unsigned int ms, uint64_t *di, uint64_t *dj)
{
	uint64_t i0 = S[i].count, j0 = S[j].count;

	sleep_ms(ms);
	*di = S[i].count - i0;
	*dj = S[j].count - j0;
}

/*
 * Run A and B under rr with @slice_us; returns how often the CPU went from
 * B to A in 2 s.
 */
static long long rr(unsigned int slice_us, int check)
{
	uint64_t a0, b0, da, db, h0, h1;
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
	h0 = S[0].handoffs;
	s0 = nvcsw(S[0].pid);
	sleep_ms(2000);
	da = S[0].count - a0;
	db = S[1].count - b0;
	h1 = S[0].handoffs;
	s1 = nvcsw(S[0].pid);
	stop_pair();
	tap_diag("rr(%u us): 2 s progress A %" PRIu64 ", B %" PRIu64 ", B to A %" PRIu64
		 " times, A's involuntary switches %lld", slice_us, da, db, h1 - h0, s1 - s0);
	if (check) {
		tap_ok(da > 0 && db > 0, "rr(%u us): both spinners progress", slice_us);
		tap_ok(da * 4 > db && db * 4 > da,
		       "rr(%u us): neither gets more than 80 %% (A %" PRIu64 ", B %" PRIu64 ")",
		       slice_us, da, db);
	}
	return (long long)(h1 - h0);
}

/*
 * Each line of @path as a diagnostic; with @cpu (e.g. "cpu#0"), only the
 * lines of that CPU's section (sched/debug's "cpu#N" headings).
 */
static void diag_file(const char *path, const char *cpu)
{
	static char buf[1 << 18];
	size_t n = cpu ? strlen(cpu) : 0;
	char *line, *save;
	int on = !cpu;

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (cpu && !strncmp(line, "cpu#", 4))
			on = !strncmp(line, cpu, n) && !isdigit((unsigned char)line[n]);
		if (on)
			tap_diag("  %s", line);
	}
}

/* The spinners' state, for a FIFO check that failed. */
static void fifo_state(const char *when)
{
	static const char *const files[] = { "stack", "sched", "sched_hpc" };
	char path[64];
	int i, f;

	for (i = 0; i < 2; i++) {
		tap_diag("fifo %s: %c pid %d: state %c, CPU %d, count %" PRIu64 ", yields %d",
			 when, 'A' + i, (int)S[i].pid, task_state_of(S[i].pid) ?: '?',
			 task_cpu_of(S[i].pid), S[i].count, S[i].yields);
		for (f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), "/proc/%d/%s", (int)S[i].pid, files[f]);
			diag_file(path, NULL);
		}
	}
	diag_file("/sys/kernel/debug/sched/debug", "cpu#0");
}

/*
 * FIFO: R, a SCHED_FIFO spinner that took CPU 0 from the spinner A, becomes
 * SCHED_HPC while it runs. A runs first again (the task another class took
 * the CPU from), R waits behind it.
 */
static void fifo_enter(void)
{
	uint64_t da, dr;
	pid_t r;
	int n;

	if (!tap_ok(spin_start(&S[0], 0, SCHED_HPC, 0, 30) > 0 && spin_wait_started(&S[0], 3000),
		    "fifo: A spinning on CPU 0")) {
		spin_stop(&S[0]);
		return;
	}
	r = spin_start(&S[2], 0, SCHED_FIFO, 1, 30);
	if (!tap_ok(r > 0 && spin_wait_started(&S[2], 3000),
		    "fifo: R (SCHED_FIFO 1) spinning on CPU 0, A preempted")) {
		spin_stop(&S[0]);
		spin_stop(&S[2]);
		return;
	}
	sleep_ms(100);
	S[2].hpc_req = 1;
	for (n = 0; n < 300 && sched_getscheduler(r) != SCHED_HPC; n++)
		sleep_ms(10);
	tap_ok(sched_getscheduler(r) == SCHED_HPC,
	       "fifo: R became SCHED_HPC while it ran (policy %d)", sched_getscheduler(r));
	sleep_ms(200);
	progress(0, 2, 1000, &da, &dr);
	tap_diag("fifo: 1 s after R entered the class: A %" PRIu64 ", R %" PRIu64, da, dr);
	tap_ok(da > 0 && dr * 100 <= da,
	       "fifo: A, which R took the CPU from, runs first again; R waits behind it "
	       "(A %" PRIu64 ", R %" PRIu64 ")", da, dr);
	spin_stop(&S[0]);
	spin_stop(&S[2]);
}

static void fifo(void)
{
	uint64_t da, db;
	int r;

	r = knob_write("queue", "fifo\n");
	if (!tap_check(r == 0, strerror(-r), "queue fifo"))
		return;
	if (!tap_ok(start_pair(), "fifo: A spinning, B woken behind it on CPU 0")) {
		stop_pair();
		return;
	}
	progress(0, 1, 1500, &da, &db);
	tap_diag("fifo: 1.5 s: A %" PRIu64 ", B %" PRIu64 " (B started: %d)", da, db, S[1].started);
	tap_ok(da > 0, "fifo: A runs");
	if (!tap_ok(db * 100 <= da, "fifo: B gets ~nothing while A spins (%" PRIu64 " vs %"
		    PRIu64 ")", db, da))
		fifo_state("B ran");

	S[0].yield_req = 1;
	sleep_ms(300);
	if (!tap_ok(S[0].yields == 1, "fifo: A yielded (%d)", S[0].yields)) {
		fifo_state("A did not yield");
		S[0].yield_req = 0;	/* not later, in B's turn */
	}
	progress(0, 1, 1500, &da, &db);
	tap_diag("fifo: after A's yield: A %" PRIu64 ", B %" PRIu64, da, db);
	tap_ok(db > 0, "fifo: after A's sched_yield() B runs");
	tap_ok(da * 100 <= db, "fifo: and A gets ~nothing (%" PRIu64 " vs %" PRIu64 ")", da, db);

	S[1].yield_req = 1;
	sleep_ms(300);
	progress(0, 1, 1000, &da, &db);
	if (!tap_ok(S[1].yields == 1 && da > 0 && db * 100 <= da,
		    "fifo: after B's sched_yield() A runs again, B waits (A %" PRIu64 ", B %"
		    PRIu64 ")", da, db))
		fifo_state("after B's yield");
	stop_pair();
	fifo_enter();
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
	S = shared_alloc(3 * sizeof(*S) + sizeof(pid_t));
	S[0].turn = S[1].turn = (volatile pid_t *)&S[3];

	big = rr(100000, 1);
	small = rr(5000, 1);
	if (big >= 0 && small >= 0)
		tap_ok(small > 3 * big + 3,
		       "rr: timeslice_us 5000 switches between the spinners much more often than "
		       "100000 (B to A %lld vs %lld times)", small, big);
	knob_set("timeslice_us", 100000);
	fifo();
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
