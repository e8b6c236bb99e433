// SPDX-License-Identifier: GPL-2.0
/*
 * 63-dl-server-stop: stopping a fair server that already stopped changes
 * nothing (patches/stable/0001, a fix to 6.12.y itself).
 *
 * An HPC spinner pinned to the last CPU starves the fair class there, so a
 * fair task pinned to that CPU only runs through the CPU's fair server (a
 * dl_server). The fair task spins until 1.2 s have passed and exits while
 * the server runs it; the server then finds no fair task and stops itself.
 * Writing the server's runtime back unchanged through debugfs
 * (sched/fair_server/cpuN/runtime) stops it once more, the same call
 * sched_cpu_dying() makes on CPU offline. Without the fix that second stop
 * removed the server's bandwidth from the CPU's running_bw twice: a
 * WARNING in task_non_contending() or sub_running_bw(). The kernel log
 * must gain no WARNING; the fair task must have run (through the server),
 * and every write must succeed.
 */
/* guest-timeout: 60 */
#include "hpctest.h"
#include <sys/klog.h>

#define ROUNDS 3

/* Number of "WARNING:" lines in the kernel log buffer, -1 if unreadable. */
static int klog_warnings(void)
{
	static char buf[1 << 20];
	int n = klogctl(3, buf, sizeof(buf) - 1), c = 0;
	char *p;

	if (n < 0)
		return -1;
	buf[n] = 0;
	for (p = buf; (p = strstr(p, "WARNING:")); p++)
		c++;
	return c;
}

int main(void)
{
	struct spin *s;
	char path[96], val[32];
	int cpu, round, st, w0, w1, ran = 0, wrote = 0, r;
	pid_t kid;

	tap_init("63-dl-server-stop");
	watchdog(55);
	if (!require_hpc())
		return tap_done();
	cpu = online_cpus() - 1;
	snprintf(path, sizeof(path), "/sys/kernel/debug/sched/fair_server/cpu%d/runtime", cpu);
	if (cpu < 1 || read_file(path, val, sizeof(val)) <= 0) {
		tap_skip("fair server", "needs >= 2 CPUs and %s", path);
		return tap_done();
	}
	w0 = klog_warnings();
	s = shared_alloc(sizeof(*s));
	s->pid = spin_start(s, cpu, SCHED_HPC, 0, 40);
	tap_ok(s->pid > 0 && spin_wait_started(s, 2000), "HPC spinner on cpu%d", cpu);

	for (round = 0; round < ROUNDS && s->pid > 0; round++) {
		kid = fork_kid();
		if (kid == 0) {
			uint64_t end = now_ns() + 1200000000ULL;

			if (pin_cpu(0, cpu))
				_exit(1);
			while (now_ns() < end)
				;
			_exit(0);
		}
		/* the server runs it within two of its 1 s periods */
		ran += kid > 0 && wait_timeout(kid, &st, 8000) == kid && WIFEXITED(st) &&
		       WEXITSTATUS(st) == 0;
		r = write_file(path, val);
		wrote += r == 0;
		if (r)
			tap_diag("round %d: write %s: %s", round, path, strerror(-r));
	}
	spin_stop(s);
	tap_ok(ran == ROUNDS, "the starved fair task ran through the fair server (%d/%d)", ran,
	       ROUNDS);
	tap_ok(wrote == ROUNDS, "fair server runtime written back unchanged (%d/%d)", wrote,
	       ROUNDS);
	w1 = klog_warnings();
	tap_ok(w0 >= 0 && w1 == w0, "no kernel WARNING from stopping a stopped fair server (%d -> %d)",
	       w0, w1);
	kill_children();
	return tap_done();
}
