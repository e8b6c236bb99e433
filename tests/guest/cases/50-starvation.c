// SPDX-License-Identifier: GPL-2.0
/*
 * 50-starvation: the guest stays usable under a full HPC load.
 *
 * One HPC busy loop pinned to every CPU (each ends by itself after 90 s at
 * the latest). Meanwhile, from this SCHED_OTHER process: 20 fork+exec of
 * the shell ("sh -c 'exit 7'") each complete with the right status within
 * 15 s (at least 5 of them, up to 20, in ~40 s), a fair spinner gets CPU time, 10 sleeps of 10 ms complete within
 * 20 s, and afterwards every HPC loop is still running (not exited: the
 * checks ran under full load), progressed, and is reaped cleanly.
 * Without SMT throttling only the fair server (~5 %) feeds the fair side:
 * a fork+exec can then take ~1 s, hence the generous bounds.
 */
/* guest-timeout: 120 */
#include "hpctest.h"

#define MAXC 16

int main(void)
{
	struct spin *S;
	uint64_t t0, c0[MAXC], el;
	long long f0;
	int ncpu, i, good, st, failed = 0;
	pid_t pid, f;

	tap_init("50-starvation");
	watchdog(115);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	ncpu = online_cpus();
	if (ncpu > MAXC - 1)
		ncpu = MAXC - 1;
	S = shared_alloc((size_t)(ncpu + 1) * sizeof(*S));
	for (i = 0; i < ncpu; i++) {
		pid = spin_start(&S[i], i, SCHED_HPC, 0, 90);
		if (!tap_check(pid > 0, "spawn", "HPC busy loop on CPU %d", i)) {
			kill_children();
			return tap_done();
		}
	}
	sleep_ms(200);
	for (i = 0; i < ncpu; i++)
		c0[i] = S[i].count;

	/* fork + exec of the shell, 20 times */
	t0 = now_ns();
	good = 0;
	for (i = 0; i < 20; i++) {
		pid = fork_kid();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
			_exit(127);
		}
		if (pid > 0 && wait_timeout(pid, &st, 15000) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 7) {
			good++;
		} else {
			failed = 1;
			break;
		}
		if (now_ns() - t0 > 40000000000ULL)
			break;
	}
	el = now_ns() - t0;
	tap_diag("%d fork+exec of sh in %.2f s under full HPC load", good + failed, el / 1e9);
	tap_ok(!failed,
	       "every fork+exec sh -c 'exit 7' under full HPC load completes (within 15 s) with status 7 (%d ok)",
	       good);
	tap_ok(good >= 5, "at least 5 of them complete within ~40 s (%d, %.2f s)", good, el / 1e9);

	/* a fair spinner gets CPU time */
	f = spin_start(&S[ncpu], -1, SCHED_OTHER, 0, 10);
	if (tap_ok(f > 0, "fair spinner started")) {
		f0 = cpu_ns_of(f);
		t0 = now_ns();
		sleep_ms(2000);
		el = now_ns() - t0;
		f0 = cpu_ns_of(f) - f0;
		tap_diag("fair spinner: %.1f ms CPU in %.2f s", f0 / 1e6, el / 1e9);
		tap_ok(f0 > 1000000, "fair spinner gets CPU time under full HPC load (%.1f ms > 1 ms)",
		       f0 / 1e6);
		spin_stop(&S[ncpu]);
	}

	/* sleeps of this fair process still return */
	t0 = now_ns();
	for (i = 0; i < 10; i++)
		sleep_ms(10);
	el = now_ns() - t0;
	tap_ok(el < 20000000000ULL, "10 x 10 ms sleeps of a fair task take < 20 s (%.2f s)", el / 1e9);

	good = 0;
	for (i = 0; i < ncpu; i++)
		good += task_state_of(S[i].pid) == 'R' && S[i].count > c0[i];
	tap_ok(good == ncpu, "every HPC busy loop is still running and progressed (%d/%d)", good, ncpu);
	good = 0;
	for (i = 0; i < ncpu; i++) {
		S[i].stop = 1;
		if (wait_timeout(S[i].pid, &st, 5000) == S[i].pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0)
			good++;
		S[i].pid = 0;
	}
	tap_ok(good == ncpu, "HPC busy loops stop and are reaped (%d/%d)", good, ncpu);
	kill_children();
	return tap_done();
}
