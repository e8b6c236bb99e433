// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test of SCHED_HPC task-count balancing (kernel engineer's): one
 * SCHED_HPC spinner per CPU ends on distinct CPUs, whether the spinners
 * start unpinned or all on CPU 0 and are then released.
 */
#include "hpctest.h"

#define CASE "13-kernel-balance"

static int distinct(struct spin *s, int n, char *desc, size_t len)
{
	int seen[64] = { 0 }, i, c, ok = 1;

	desc[0] = 0;
	for (i = 0; i < n; i++) {
		c = task_cpu_of(s[i].pid);
		snprintf(desc + strlen(desc), len - strlen(desc), "%d ", c);
		if (c < 0 || c >= 64 || seen[c]++)
			ok = 0;
	}
	return ok;
}

int main(void)
{
	int n = online_cpus(), i, ok = 0, t;
	struct spin *s;
	char desc[256];

	tap_init(CASE);
	watchdog(60);
	if (!require_hpc())
		return tap_done();
	if (n > 16)
		n = 16;
	s = shared_alloc(n * sizeof(*s));

	/* forked unpinned: fork/wake placement */
	for (i = 0; i < n; i++)
		spin_start(&s[i], -1, SCHED_HPC, 0, 20);
	for (t = 0; t < 20 && !ok; t++) {
		sleep_ms(100);
		ok = distinct(s, n, desc, sizeof(desc));
	}
	tap_ok(ok, "unpinned spinners on distinct CPUs (%s)", desc);
	for (i = 0; i < n; i++)
		spin_stop(&s[i]);

	/* all on CPU 0, then released: push/pull */
	for (i = 0; i < n; i++)
		spin_start(&s[i], 0, SCHED_HPC, 0, 20);
	sleep_ms(300);
	for (i = 0; i < n; i++)
		unpin(s[i].pid);
	ok = 0;
	for (t = 0; t < 30 && !ok; t++) {
		sleep_ms(100);
		ok = distinct(s, n, desc, sizeof(desc));
	}
	tap_ok(ok, "spinners released from CPU 0 spread out (%s)", desc);
	for (i = 0; i < n; i++)
		spin_stop(&s[i]);
	return tap_done();
}
