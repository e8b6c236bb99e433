// SPDX-License-Identifier: GPL-2.0
/*
 * 61-stress-fork: fork/exit storms of HPC tasks.
 *
 * An HPC parent keeps up to 4 x nCPU children in flight for ~4 s (at most
 * 2000 children), or longer, up to 30 s, until 50 have ended: a guest
 * whose vCPUs a loaded host runs a fraction of the time makes fewer in 4 s.
 * Each child checks it inherited SCHED_HPC with fresh iteration state (or
 * SCHED_OTHER when the parent set SCHED_RESET_ON_FORK, every other round),
 * computes a little, sleeps (closing an iteration), starts two short-lived
 * HPC threads and a grandchild, and exits.
 * Asserts: every child exits 0, progress, no child left behind, the parent
 * is still SCHED_HPC and its own accounting still works.
 *
 * A child's 1 ms sleep must really block for its iteration to close. Under
 * TCG on a loaded host it sometimes does not: the vCPU stops right after
 * nanosleep() armed its timer, and when it runs again the overdue timer
 * interrupt wakes the task before it reached schedule(). The task never
 * slept, so no iteration closes, rightly (traced: timer armed, then no
 * event at all on that CPU for 1.9 to 72 ms, then the wake-up in hard-irq
 * context of the still-running task; 1 to 5 children of 300 to 1300 per
 * storm on smp4). So a child checks, with its voluntary context switches,
 * that the sleep blocked, sleeps again if it did not (at most 5 times), and
 * only then requires a closed iteration.
 */
/* guest-timeout: 90 */
#include "hpctest.h"

static void *thr(void *arg)
{
	(void)arg;
	work_units(30);
	return sched_getscheduler(0) == SCHED_HPC ? NULL : (void *)1;
}

/* Sleep @ms; 1 if the calling thread blocked meanwhile. */
static int sleep_blocked(unsigned int ms)
{
	struct rusage a, b;

	if (getrusage(RUSAGE_THREAD, &a))
		return 0;
	sleep_ms(ms);
	if (getrusage(RUSAGE_THREAD, &b))
		return 0;
	return b.ru_nvcsw > a.ru_nvcsw;
}

static int child(int reset)
{
	struct hpc_stat st;
	pthread_t t[2];
	void *ret;
	pid_t g;
	int i, s;

	if (reset)
		return sched_getscheduler(0) == SCHED_OTHER && hpc_stat_read(0, &st) == 0 &&
		       !st.hpc ? 0 : 20;
	if (sched_getscheduler(0) != SCHED_HPC)
		return 21;
	/*
	 * Fresh state, not the parent's (which closes an iteration at every
	 * waitpid): 0, or 1-2 if an involuntary sleep (fork-time page-fault
	 * lock contention) already closed one. 20-syscall checks exactly 0.
	 */
	if (hpc_stat_read(0, &st) || !st.hpc || st.v[HS_ITERATIONS] > 2)
		return 22;
	work_units(20);
	for (i = 0; i < 5 && !sleep_blocked(1); i++)
		;
	if (i == 5)
		return 27;
	/* >= 1: an involuntary sleep (lock contention) may close one too. */
	if (hpc_stat_read(0, &st) || st.v[HS_ITERATIONS] < 1)
		return 23;
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, thr, NULL))
			return 24;
	g = fork();
	if (g == 0)
		_exit(sched_getscheduler(0) == SCHED_HPC ? 0 : 1);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], &ret);
		if (ret)
			return 25;
	}
	if (g < 0 || waitpid(g, &s, 0) != g || !WIFEXITED(s) || WEXITSTATUS(s))
		return 26;
	return 0;
}

int main(void)
{
	int inflight = 0, maxin, st, bad = 0, firstbad = 0, done = 0, r, reset = 0;
	uint64_t start, end, hard_end;
	struct hpc_stat hs;
	pid_t pid;

	tap_init("61-stress-fork");
	watchdog(80);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	maxin = 4 * online_cpus();
	r = set_hpc(0);
	if (!tap_check(r == 0, strerror(-r), "parent is SCHED_HPC"))
		return tap_done();
	start = now_ns();
	end = start + 4000000000ULL;
	hard_end = start + 30000000000ULL;
	while (done + inflight < 2000 &&
	       (now_ns() < end || (done < 50 && now_ns() < hard_end))) {
		while (inflight < maxin && done + inflight < 2000) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				child_setup();
				_exit(child(reset));
			}
			if (pid < 0) {
				bad++;
				break;
			}
			inflight++;
		}
		pid = waitpid(-1, &st, 0);
		if (pid > 0) {
			inflight--;
			done++;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				if (!bad)
					firstbad = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
				bad++;
			}
			/* flip SCHED_RESET_ON_FORK every 50 children */
			if (done % 50 == 0) {
				reset = !reset;
				set_policy(0, SCHED_HPC | (reset ? SCHED_RESET_ON_FORK : 0), 0);
			}
		}
	}
	while (inflight > 0) {
		pid = wait_timeout(-1, &st, 10000);
		if (pid <= 0)
			break;
		inflight--;
		done++;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	tap_diag("%d children in %.1f s, %d failed (first failure code %d)", done,
		 (double)(now_ns() - start) / 1e9, bad, firstbad);
	tap_ok(inflight == 0, "every child exited within the timeout (%d left)", inflight);
	tap_ok(bad == 0, "every child saw the expected policy and fresh state (%d failed, first code %d)",
	       bad, firstbad);
	tap_ok(done >= 50, "storm made progress (%d children, at least 50 within 30 s)", done);
	errno = 0;
	tap_ok(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD, "no child left behind");
	r = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
	tap_ok(r == SCHED_HPC, "parent still SCHED_HPC (%d)", r);
	r = hpc_stat_read(0, &hs);
	if (tap_check(r == 0, hs.err, "parent's /proc/self/sched_hpc readable")) {
		long long it = hs.v[HS_ITERATIONS];

		sleep_ms(5);
		r = hpc_stat_read(0, &hs);
		tap_ok(r == 0 && hs.v[HS_ITERATIONS] == it + 1,
		       "parent's accounting still works: a 5 ms sleep closes an iteration (%lld -> %lld)",
		       it, hs.v[HS_ITERATIONS]);
	}
	set_other(0);
	return tap_done();
}
