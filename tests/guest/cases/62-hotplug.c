// SPDX-License-Identifier: GPL-2.0
/*
 * 62-hotplug: CPU offline/online while HPC tasks run (needs >= 2 CPUs).
 *
 * Per CPU one HPC spinner pinned to it and one unpinned, plus an unpinned
 * HPC task that keeps sleeping and waking (closing iterations). Three
 * rounds of taking every CPU but 0 offline (one at a time, through
 * /sys/devices/system/cpu/cpuN/online) and back online. After every step
 * every task is alive and progressing (the pinned ones on offline CPUs are
 * moved elsewhere by the kernel); at the end all CPUs are online, the
 * sleeper's iterations kept counting, and everything ends cleanly.
 */
/* guest-timeout: 120 */
#include "hpctest.h"

#define MAXC 8

static struct spin *S;
static int ns;

struct sleeper {
	volatile int stop;
	volatile long long iters;
	volatile uint64_t rounds;
};

static int online_path(int cpu, char *p, size_t len)
{
	snprintf(p, len, "/sys/devices/system/cpu/cpu%d/online", cpu);
	return access(p, W_OK) == 0;
}

/* All spinners and the sleeper progress within @ms; returns the laggards. */
static int progress(struct sleeper *z, unsigned int ms)
{
	uint64_t c0[4 * MAXC], r0 = z->rounds, end = now_ns() + (uint64_t)ms * 1000000ULL;
	int i, lag;

	for (i = 0; i < ns; i++)
		c0[i] = S[i].count;
	do {
		sleep_ms(50);
		lag = z->rounds == r0;
		for (i = 0; i < ns; i++)
			lag += S[i].count == c0[i];
	} while (lag && now_ns() < end);
	return lag;
}

/* Watchdog clean-up: bring every CPU back (async-signal-safe). */
static void all_online(void)
{
	char p[] = "/sys/devices/system/cpu/cpuN/online";
	int c;

	for (c = 1; c < 10; c++) {
		p[sizeof("/sys/devices/system/cpu/cpu") - 1] = (char)('0' + c);
		write_file_len(p, "1\n", 2);
	}
}

int main(void)
{
	struct sleeper *z;
	char p[96], buf[16];
	int ncpu, i, c, round, r, st, laggards = 0, fails = 0, steps = 0;
	long long it0, r0;
	pid_t zp;

	tap_init("62-hotplug");
	watchdog(110);
	watchdog_hook = all_online;
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	ncpu = online_cpus();
	if (ncpu < 2 || !online_path(1, p, sizeof(p))) {
		tap_skip("hotplug", "needs >= 2 CPUs and a writable cpu1/online (%d CPUs)", ncpu);
		return tap_done();
	}
	if (ncpu > MAXC)
		ncpu = MAXC;
	S = shared_alloc((size_t)(2 * ncpu) * sizeof(*S));
	z = shared_alloc(sizeof(*z));
	for (c = 0; c < ncpu; c++) {
		S[ns].pid = spin_start(&S[ns], c, SCHED_HPC, 0, 60);
		ns += S[ns].pid > 0;
		S[ns].pid = spin_start(&S[ns], -1, SCHED_HPC, 0, 60);
		ns += S[ns].pid > 0;
	}
	tap_ok(ns == 2 * ncpu, "%d HPC spinners started (pinned + unpinned per CPU)", ns);
	zp = fork_kid();
	if (zp == 0) {
		struct hpc_stat hs;
		uint64_t end = now_ns() + 60000000000ULL;

		if (set_hpc(0))
			_exit(1);
		while (!z->stop && now_ns() < end) {
			work_units(5);
			sleep_ms(2);
			if (hpc_stat_read(0, &hs) == 0)
				z->iters = hs.v[HS_ITERATIONS];
			z->rounds++;
		}
		_exit(0);
	}
	sleep_ms(300);
	it0 = z->iters;
	r0 = (long long)z->rounds;
	tap_ok(progress(z, 3000) == 0, "everything progresses before hotplug");

	for (round = 0; round < 3; round++) {
		for (c = 1; c < ncpu; c++) {
			if (!online_path(c, p, sizeof(p)))
				continue;
			r = write_file(p, "0\n");
			steps++;
			if (r) {
				fails++;
				tap_diag("round %d: cpu%d offline: %s", round, c, strerror(-r));
				continue;
			}
			i = progress(z, 3000);
			if (i) {
				laggards++;
				tap_diag("round %d: cpu%d offline: %d task(s) made no progress in 3 s",
					 round, c, i);
			}
		}
		for (c = 1; c < ncpu; c++) {
			if (!online_path(c, p, sizeof(p)))
				continue;
			r = write_file(p, "1\n");
			steps++;
			if (r) {
				fails++;
				tap_diag("round %d: cpu%d online: %s", round, c, strerror(-r));
				continue;
			}
			i = progress(z, 3000);
			if (i) {
				laggards++;
				tap_diag("round %d: cpu%d online: %d task(s) made no progress in 3 s",
					 round, c, i);
			}
		}
	}
	tap_ok(fails == 0, "%d offline/online writes all succeeded (%d failed)", steps, fails);
	tap_ok(laggards == 0, "every HPC task progressed after every hotplug step (%d steps lagged)",
	       laggards);
	for (c = 1, i = 0; c < ncpu; c++) {
		online_path(c, p, sizeof(p));
		if (read_file(p, buf, sizeof(buf)) <= 0 || buf[0] != '1') {
			write_file(p, "1\n");
			i++;
		}
	}
	tap_ok(i == 0 && online_cpus() >= ncpu, "all %d CPUs online again (%d were not)", ncpu, i);
	/*
	 * Every round of the sleeper ends in a 2 ms sleep, longer than
	 * min_wait_us: each closes an iteration, whatever the CPUs did. How many
	 * rounds it ran depends on the host (TCG) and on the other HPC tasks.
	 */
	r0 = (long long)z->rounds - r0;
	tap_ok(r0 >= 10 && (z->iters - it0) * 10 >= r0 * 9,
	       "the sleeping HPC task closed an iteration in every round (%lld iterations in %lld rounds)",
	       z->iters - it0, r0);

	z->stop = 1;
	r = wait_timeout(zp, &st, 5000) == zp && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	for (i = 0, c = 0; i < ns; i++) {
		S[i].stop = 1;
		c += wait_timeout(S[i].pid, &st, 5000) == S[i].pid && WIFEXITED(st) &&
		     WEXITSTATUS(st) == 0;
		S[i].pid = 0;
	}
	tap_ok(r && c == ns, "all HPC tasks end cleanly (%d/%d spinners, sleeper %s)", c, ns,
	       r ? "ok" : "not ok");
	kill_children();
	return tap_done();
}
