// SPDX-License-Identifier: GPL-2.0
/*
 * 40-balance: HPC load balancing and affinity.
 *
 * 2 x nCPU HPC spinners without affinity: after a settle time every CPU
 * runs exactly 2 of them (/proc/<pid>/stat field 39, several samples) and
 * every spinner progresses. Then one spinner is pinned to CPU 1: it goes
 * there and stays there in every sample, and the balancer evens the
 * counts out again around it. Then all of them are moved to CPU 0 and let
 * go: the push and the pull spread them to 2 per CPU again. With more CPUs
 * than the class's bounded scans read at once (8: the 16-vCPU boot), this
 * shows that successive scans reach every CPU.
 *
 * With two emulated cores or more (4+ CPUs, cores 2k and 2k + 1): two
 * spinners held on the two CPUs of core 0 by their affinity, then let go,
 * end on different cores (the core balance moves a running task to an idle
 * core: hpc_core_gives()) and stay there.
 */
/* guest-timeout: 120 */
#include "hpctest.h"

#define MAXT 32

static struct spin *S;
static int ncpu, nt;

/* Tasks per CPU; returns 1 if every CPU has exactly 2. */
static int sample(char *desc, size_t len)
{
	int per[MAXT] = { 0 }, i, c, ok = 1;

	for (i = 0; i < nt; i++) {
		c = task_cpu_of(S[i].pid);
		if (c < 0 || c >= ncpu)
			return 0;
		per[c]++;
	}
	desc[0] = 0;
	for (c = 0; c < ncpu; c++) {
		snprintf(desc + strlen(desc), len - strlen(desc), "%s%d", c ? " " : "", per[c]);
		ok &= per[c] == 2;
	}
	return ok;
}

/* Wait (up to @ms) for a balanced sample, then require @n balanced samples. */
static void settle_and_check(const char *what, unsigned int ms, int n)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;
	char desc[160] = "";
	int bal = 0, i, good = 0;

	while (now_ns() < end) {
		bal = sample(desc, sizeof(desc));
		if (bal)
			break;
		sleep_ms(250);
	}
	tap_check(bal, desc, "%s: every CPU gets exactly 2 HPC tasks within %u ms (per CPU: %s)",
		  what, ms, desc);
	for (i = 0; i < n; i++) {
		sleep_ms(200);
		good += sample(desc, sizeof(desc));
	}
	tap_check(good == n, desc, "%s: stays balanced in %d/%d samples 200 ms apart (last: %s)",
		  what, good, n, desc);
}

/* The emulated core of @cpu (CPUs 2k and 2k + 1; the guest has no SMT). */
static int core_of(int cpu)
{
	return cpu < 0 ? -1 : cpu / 2;
}

static void core_balance(void)
{
	char desc[64] = "";
	int i, moved = 0, good = 0, c0, c1;

	for (i = 0; i < 2; i++) {
		if (!tap_check(spin_start(&S[i], i, SCHED_HPC, 0, 20) > 0, "spawn",
			       "start HPC spinner %d on CPU %d", i, i))
			return;
	}
	sleep_ms(500);
	c0 = task_cpu_of(S[0].pid);
	c1 = task_cpu_of(S[1].pid);
	tap_ok(c0 == 0 && c1 == 1, "2 spinners held on core 0: on CPUs %d and %d", c0, c1);
	for (i = 0; i < 2; i++)
		unpin(S[i].pid);
	for (i = 0; i < 20 && !moved; i++) {
		sleep_ms(100);
		c0 = task_cpu_of(S[0].pid);
		c1 = task_cpu_of(S[1].pid);
		moved = core_of(c0) != core_of(c1);
	}
	snprintf(desc, sizeof(desc), "CPUs %d and %d", c0, c1);
	tap_check(moved, desc, "let go: the two spinners on different cores within 2 s (%s)", desc);
	for (i = 0; i < 10; i++) {
		sleep_ms(200);
		c0 = task_cpu_of(S[0].pid);
		c1 = task_cpu_of(S[1].pid);
		good += core_of(c0) != core_of(c1);
	}
	tap_check(good == 10, desc, "and stay on different cores in %d/10 samples (last: %d, %d)",
		  good, c0, c1);
	for (i = 0; i < 2; i++)
		spin_stop(&S[i]);
}

int main(void)
{
	uint64_t c0[2 * MAXT];
	int i, c, stayed = 1, last = -1;
	pid_t pid;

	tap_init("40-balance");
	watchdog(110);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	ncpu = online_cpus();
	if (ncpu < 2 || ncpu > MAXT / 2) {
		tap_skip("balance", "needs 2..%d CPUs (have %d)", MAXT / 2, ncpu);
		return tap_done();
	}
	nt = 2 * ncpu;
	S = shared_alloc((size_t)nt * sizeof(*S));
	for (i = 0; i < nt; i++) {
		pid = spin_start(&S[i], -1, SCHED_HPC, 0, 40);
		if (!tap_check(pid > 0, "spawn", "start HPC spinner %d", i)) {
			kill_children();
			return tap_done();
		}
	}
	tap_pass("%d HPC spinners started without affinity on %d CPUs", nt, ncpu);
	settle_and_check("unpinned", 5000, 5);

	for (i = 0; i < nt; i++)
		c0[i] = S[i].count;
	sleep_ms(2000);
	for (i = 0, c = 0; i < nt; i++)
		c += S[i].count > c0[i];
	tap_ok(c == nt, "every spinner progresses over 2 s (%d/%d)", c, nt);

	/* Pin spinner 0 to CPU 1 while everything runs. */
	c = pin_cpu(S[0].pid, 1);
	tap_check(c == 0, strerror(-c), "pin spinner 0 to CPU 1");
	sleep_ms(300);
	for (i = 0; i < 15; i++) {
		c = task_cpu_of(S[0].pid);
		if (c != 1)
			stayed = 0;
		last = c;
		sleep_ms(200);
	}
	tap_ok(stayed, "pinned spinner is on CPU 1 in all 15 samples (last on %d)", last);
	settle_and_check("one pinned to CPU 1", 5000, 5);
	tap_ok(task_cpu_of(S[0].pid) == 1, "pinned spinner still on CPU 1 after rebalancing");

	/* All to CPU 0, then let go. */
	for (i = 0, c = 0; i < nt; i++)
		c += pin_cpu(S[i].pid, 0) == 0;
	sleep_ms(500);
	for (i = 0, last = 0; i < nt; i++)
		last += task_cpu_of(S[i].pid) == 0;
	tap_ok(c == nt && last == nt, "all %d spinners moved to CPU 0 (%d pinned, %d there)", nt,
	       c, last);
	for (i = 0; i < nt; i++)
		unpin(S[i].pid);
	settle_and_check("all let go from CPU 0", 10000, 5);

	for (i = 0; i < nt; i++)
		spin_stop(&S[i]);
	if (ncpu >= 4)
		core_balance();
	else
		tap_skip("core balance", "needs two emulated cores (4 CPUs; have %d)", ncpu);
	kill_children();
	return tap_done();
}
