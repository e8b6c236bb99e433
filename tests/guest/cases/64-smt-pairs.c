// SPDX-License-Identifier: GPL-2.0
/*
 * 64-smt-pairs: the class's SMT pairs (/sys/kernel/sched_hpc/smt_pairs)
 * follow the topology, at boot and after every CPU hotplug step.
 *
 * The expected pairs are worked out here from sysfs, independently of the
 * policy core: the online threads of a hardware core (its
 * thread_siblings_list, in that order) pair two by two, 0-1, 2-3, 4-5, 6-7,
 * the last of an odd number with none; an online CPU alone in its core
 * pairs with CPU ^ 1 if that one is online and alone in its core too
 * (the emulated 2-way cores of a machine without SMT).
 *
 * With HPC spinners running (one per CPU, unpinned): every CPU but 0 taken
 * offline one at a time, then back online in reverse order, and, if the
 * kernel can (smt/control "on"), SMT switched off and on again. After every
 * step the pairs must match and every spinner progress (a CPU kept
 * throttled for a sibling it no longer has would stop its spinner).
 */
/* guest-timeout: 240 */
#include "hpctest.h"

#define MAXC 64
#define CPU_DIR "/sys/devices/system/cpu/"

static struct spin *S;
static int ns;

static int cpu_online(int cpu)
{
	char p[96], b[8];

	if (cpu == 0)
		return 1;
	snprintf(p, sizeof(p), CPU_DIR "cpu%d/online", cpu);
	return read_file(p, b, sizeof(b)) > 0 && b[0] == '1';
}

/* @cpu's online hardware threads, in the order of its sibling list. */
static int threads_of(int cpu, int *t)
{
	char p[96], b[256], *s = b, *end;
	int n = 0, lo, hi;

	snprintf(p, sizeof(p), CPU_DIR "cpu%d/topology/thread_siblings_list", cpu);
	if (read_file(p, b, sizeof(b)) <= 0) {
		t[0] = cpu;
		return 1;
	}
	while (*s >= '0' && *s <= '9') {
		lo = hi = (int)strtol(s, &end, 10);
		if (*end == '-')
			hi = (int)strtol(end + 1, &end, 10);
		for (; lo <= hi && n < MAXC; lo++)
			if (cpu_online(lo))
				t[n++] = lo;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static int expected_sibling(int cpu, int ncpu)
{
	int t[MAXC], u[MAXC], n, k, other = cpu ^ 1;

	if (!cpu_online(cpu))
		return -1;
	n = threads_of(cpu, t);
	if (n > 1) {
		for (k = 0; k < n && t[k] != cpu; k++)
			;
		return k < n && (k ^ 1) < n ? t[k ^ 1] : -1;
	}
	if (other >= ncpu || !cpu_online(other) || threads_of(other, u) > 1)
		return -1;
	return other;
}

static void expected_pairs(int ncpu, char *buf, size_t len)
{
	size_t o = 0;
	int c, s;

	buf[0] = 0;
	for (c = 0; c < ncpu; c++) {
		s = expected_sibling(c, ncpu);
		if (s > c && o < len)
			o += (size_t)snprintf(buf + o, len - o, "%d %d\n", c, s);
	}
}

/* The pairs match the topology; reports the check as @what. */
static int pairs_match(int ncpu, const char *what)
{
	char want[1024], got[1024];

	expected_pairs(ncpu, want, sizeof(want));
	if (*want && want[strlen(want) - 1] == '\n')
		want[strlen(want) - 1] = 0;	/* as knob_read() strips it */
	if (knob_read("smt_pairs", got, sizeof(got)) < 0)
		got[0] = 0;
	if (strcmp(want, got) == 0)
		return 1;
	for (char *c = want; *c; c++)
		*c = *c == '\n' ? ',' : *c;
	for (char *c = got; *c; c++)
		*c = *c == '\n' ? ',' : *c;
	tap_diag("%s: got      %s", what, got);
	tap_diag("%s: expected %s", what, want);
	return 0;
}

/* Every spinner progresses within @ms; returns the laggards. */
static int progress(unsigned int ms)
{
	uint64_t c0[MAXC], end = now_ns() + (uint64_t)ms * 1000000ULL;
	int i, lag;

	for (i = 0; i < ns; i++)
		c0[i] = S[i].count;
	do {
		sleep_ms(50);
		for (i = 0, lag = 0; i < ns; i++)
			lag += S[i].count == c0[i];
	} while (lag && now_ns() < end);
	return lag;
}

static int bad_steps, lag_steps, steps;

/* Write @val to @path, then check the pairs and the spinners. */
static void step(int ncpu, const char *path, const char *val, const char *what)
{
	int r = write_file(path, val), lag;

	steps++;
	if (r) {
		tap_diag("%s: %s", what, strerror(-r));
		bad_steps++;
		return;
	}
	if (!pairs_match(ncpu, what))
		bad_steps++;
	lag = progress(3000);
	if (lag) {
		tap_diag("%s: %d spinner(s) made no progress in 3 s", what, lag);
		lag_steps++;
	}
}

/* Watchdog clean-up: SMT and every CPU back (async-signal-safe). */
static void all_online(void)
{
	char p[] = CPU_DIR "cpuNN/online";
	int c, at = (int)sizeof(CPU_DIR "cpu") - 1;

	write_file_len(CPU_DIR "smt/control", "on\n", 3);
	for (c = 1; c < 64; c++) {
		if (c < 10) {
			p[at] = (char)('0' + c);
			memcpy(p + at + 1, "/online", 8);
		} else {
			p[at] = (char)('0' + c / 10);
			p[at + 1] = (char)('0' + c % 10);
			memcpy(p + at + 2, "/online", 8);
		}
		write_file_len(p, "1\n", 2);
	}
}

static void hotplug_rounds(int ncpu)
{
	char p[96], what[64];
	int c;

	for (c = 1; c < ncpu; c++) {
		snprintf(p, sizeof(p), CPU_DIR "cpu%d/online", c);
		snprintf(what, sizeof(what), "cpu%d offline", c);
		step(ncpu, p, "0\n", what);
	}
	for (c = ncpu - 1; c >= 1; c--) {
		snprintf(p, sizeof(p), CPU_DIR "cpu%d/online", c);
		snprintf(what, sizeof(what), "cpu%d online", c);
		step(ncpu, p, "1\n", what);
	}
	/* An odd number of threads in a core: every other one offline. */
	for (c = 1; c < ncpu; c += 2) {
		snprintf(p, sizeof(p), CPU_DIR "cpu%d/online", c);
		snprintf(what, sizeof(what), "cpu%d offline (odd)", c);
		step(ncpu, p, "0\n", what);
	}
	for (c = 1; c < ncpu; c += 2) {
		snprintf(p, sizeof(p), CPU_DIR "cpu%d/online", c);
		snprintf(what, sizeof(what), "cpu%d online (odd)", c);
		step(ncpu, p, "1\n", what);
	}
}

int main(void)
{
	char p[96], ctl[32] = "";
	int ncpu, c, st, ok, smt = 0;

	tap_init("64-smt-pairs");
	watchdog(230);
	watchdog_hook = all_online;
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	ncpu = online_cpus();
	if (ncpu > MAXC)
		ncpu = MAXC;
	for (c = 0; c < ncpu; c++)
		smt |= threads_of(c, (int[MAXC]){ 0 }) > 1;
	tap_diag("%d CPUs, %s", ncpu, smt ? "SMT topology" : "no SMT topology");
	tap_ok(pairs_match(ncpu, "boot"), "smt_pairs match the topology at boot");

	S = shared_alloc((size_t)ncpu * sizeof(*S));
	for (c = 0; c < ncpu; c++) {
		S[ns].pid = spin_start(&S[ns], -1, SCHED_HPC, 0, 200);
		ns += S[ns].pid > 0;
	}
	tap_ok(ns == ncpu, "%d HPC spinners started", ns);

	snprintf(p, sizeof(p), CPU_DIR "cpu1/online");
	if (ncpu < 2 || access(p, W_OK)) {
		tap_skip("pairs after hotplug", "needs >= 2 CPUs and a writable cpu1/online");
	} else {
		hotplug_rounds(ncpu);
		tap_ok(bad_steps == 0, "smt_pairs match the topology after each of %d hotplug steps (%d did not)",
		       steps, bad_steps);
	}

	if (read_file(CPU_DIR "smt/control", ctl, sizeof(ctl)) <= 0 ||
	    strncmp(ctl, "on", 2) || !smt) {
		ctl[strcspn(ctl, "\n")] = 0;
		tap_skip("pairs after SMT off/on", "no SMT or smt/control not \"on\" (%s)", ctl);
	} else {
		bad_steps = 0;
		step(ncpu, CPU_DIR "smt/control", "off\n", "smt off");
		step(ncpu, CPU_DIR "smt/control", "on\n", "smt on");
		tap_ok(bad_steps == 0, "smt_pairs match the topology after SMT off and on");
	}
	tap_ok(online_cpus() == ncpu, "all %d CPUs online again (%d)", ncpu, online_cpus());
	tap_ok(lag_steps == 0, "every HPC spinner progressed after every step (%d steps lagged)",
	       lag_steps);

	for (c = 0, ok = 0; c < ns; c++) {
		S[c].stop = 1;
		ok += wait_timeout(S[c].pid, &st, 5000) == S[c].pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0;
		S[c].pid = 0;
	}
	tap_ok(ok == ns, "all HPC spinners end cleanly (%d/%d)", ok, ns);
	kill_children();
	return tap_done();
}
