// SPDX-License-Identifier: GPL-2.0
/*
 * 26-sysfs-emul: the sysfs side of the x86 SMT emulation backend.
 *
 * On x86 the mechanism is off at boot ("none", recorded by the guest's
 * init before any case ran) and the suite selects "x86-smt-emul"
 * (knobs_restore()); its knob emul_period_us exists
 * (mode 0644), defaults to 10000, rejects bad input with EINVAL leaving it
 * unchanged (below 1000, above 1000000, zero, not a number, trailing
 * garbage) and takes valid values (1000, 1000000), restored at the end.
 *
 * The mechanism switch: backend (mode 0644) takes "none" and the build's
 * backend, rejects anything else with EINVAL, unchanged; and a switch
 * while two busy HPC tasks run on the two CPUs of an emulated core takes
 * effect at once: with the emulation both are held back (throttled_ns
 * grows, 600 permille each), with "none" neither is (no throttled time in
 * a whole second, the CPU time of a whole second each), and back on they
 * are held back again.
 */
#include "hpctest.h"

static void bad(const char *val, const char *what)
{
	long long before = knob_get("emul_period_us"), after;
	int r = knob_write("emul_period_us", val);

	after = knob_get("emul_period_us");
	tap_check(r == -EINVAL, r ? strerror(-r) : "accepted",
		  "emul_period_us <- %s: EINVAL", what);
	tap_ok(after == before, "emul_period_us <- %s: unchanged (%lld -> %lld)", what,
	       before, after);
}

static void good(long long v)
{
	int r = knob_set("emul_period_us", v);

	tap_check(r == 0, strerror(-r), "emul_period_us <- %lld accepted", v);
	tap_ok(knob_get("emul_period_us") == v, "emul_period_us reads back %lld", v);
}

static void bad_backend(const char *val, const char *what)
{
	char before[64], after[64];
	int r;

	knob_read("backend", before, sizeof(before));
	r = knob_write("backend", val);
	knob_read("backend", after, sizeof(after));
	tap_check(r == -EINVAL, r ? strerror(-r) : "accepted",
		  "backend <- %s: EINVAL", what);
	tap_ok(!strcmp(before, after), "backend <- %s: unchanged (%s -> %s)",
	       what, before, after);
}

/*
 * Wait (at most 3 s) until both spinners run at priority 4. Two spinners
 * started one after the other may start with a lead: the first is judged
 * busy against the second's start-up wait (its release from the pipe), and
 * the busy pair gives that lead back after HPC_BUSY_PAIR_NS (1 s). The
 * backend's shares are those of (4, 4) only after that.
 */
static int both_at_normal(const struct spin *s)
{
	struct hpc_stat st[2];
	int i, ms;

	for (ms = 0; ms < 3000; ms += 20) {
		for (i = 0; i < 2; i++)
			if (hpc_stat_read(s[i].pid, &st[i]))
				return 0;
		if (st[0].v[HS_PRIO] == 4 && st[1].v[HS_PRIO] == 4) {
			if (ms)
				tap_diag("both at priority 4 after %d ms more", ms);
			return 1;
		}
		sleep_ms(20);
	}
	tap_diag("priorities still %lld / %lld", st[0].v[HS_PRIO], st[1].v[HS_PRIO]);
	return 0;
}

/* Throttled and CPU time (ns) of @pid's next second. */
static void one_second(const struct spin *s, long long thr[2], long long cpu[2])
{
	struct hpc_stat a[2], b[2];
	long long c0[2];
	int i;

	for (i = 0; i < 2; i++) {
		hpc_stat_read(s[i].pid, &a[i]);
		c0[i] = cpu_ns_of(s[i].pid);
	}
	sleep_ms(1000);
	for (i = 0; i < 2; i++) {
		hpc_stat_read(s[i].pid, &b[i]);
		thr[i] = b[i].v[HS_THROTTLED_NS] - a[i].v[HS_THROTTLED_NS];
		cpu[i] = cpu_ns_of(s[i].pid) - c0[i];
	}
}

static void test_switch(void)
{
	struct spin *s = shared_alloc(2 * sizeof(*s));
	long long thr[2], cpu[2];
	char buf[64];
	int i, r, up = 1;

	for (i = 0; i < 2; i++)
		if (spin_start(&s[i], i, SCHED_HPC, 0, 20) < 0 ||
		    !spin_wait_started(&s[i], 2000))
			up = 0;
	if (!tap_ok(up, "two busy HPC tasks on CPUs 0 and 1"))
		goto out;
	sleep_ms(200);
	tap_ok(both_at_normal(s), "both at priority 4 (a lead taken at start given back)");
	one_second(s, thr, cpu);
	tap_diag("emulation: throttled %lld / %lld ms, CPU %lld / %lld ms",
		 thr[0] / 1000000, thr[1] / 1000000, cpu[0] / 1000000, cpu[1] / 1000000);
	tap_ok(thr[0] > 200000000 && thr[1] > 200000000,
	       "emulation: both held back (throttled %lld, %lld ms of 1 s)",
	       thr[0] / 1000000, thr[1] / 1000000);
	r = knob_write("backend", "none\n");
	knob_read("backend", buf, sizeof(buf));
	tap_ok(r == 0 && !strcmp(buf, "none"), "backend <- none: reads \"%s\"", buf);
	one_second(s, thr, cpu);
	tap_diag("none: throttled %lld / %lld ms, CPU %lld / %lld ms",
		 thr[0] / 1000000, thr[1] / 1000000, cpu[0] / 1000000, cpu[1] / 1000000);
	tap_ok(thr[0] == 0 && thr[1] == 0,
	       "none: nothing held back (throttled %lld, %lld ns)", thr[0], thr[1]);
	tap_ok(cpu[0] > 900000000 && cpu[1] > 900000000,
	       "none: each task has its CPU (%lld, %lld ms of 1 s)",
	       cpu[0] / 1000000, cpu[1] / 1000000);
	r = knob_write("backend", "x86-smt-emul\n");
	knob_read("backend", buf, sizeof(buf));
	tap_ok(r == 0 && !strcmp(buf, "x86-smt-emul"), "backend <- x86-smt-emul: reads \"%s\"",
	       buf);
	one_second(s, thr, cpu);
	tap_ok(thr[0] > 200000000 && thr[1] > 200000000,
	       "emulation again: both held back (throttled %lld, %lld ms of 1 s)",
	       thr[0] / 1000000, thr[1] / 1000000);
out:
	spin_stop(&s[0]);
	spin_stop(&s[1]);
}

int main(void)
{
	char buf[64], p[128];
	struct stat st;
	int r;

	tap_init("26-sysfs-emul");
	watchdog(60);
	if (!require_hpc())
		return tap_done();
#if defined(__x86_64__) || defined(__i386__)
	/* The init recorded it before any case selected a mechanism. */
	r = read_file("/tmp/hpc-boot-backend", buf, sizeof(buf));
	if (r > 0 && buf[r - 1] == '\n')
		buf[r - 1] = 0;
	tap_ok(r > 0 && !strcmp(buf, "none"),
	       "x86: the mechanism is off at boot (backend \"%s\"): the emulation is chosen, never a default",
	       r > 0 ? buf : strerror(-r));
	knobs_restore();
	r = knob_read("backend", buf, sizeof(buf));
	tap_ok(r > 0 && !strcmp(buf, "x86-smt-emul"),
	       "x86: the suite selects x86-smt-emul (got \"%s\")", r > 0 ? buf : strerror(-r));
#endif
	knob_path(p, sizeof(p), "emul_period_us");
	r = stat(p, &st);
	if (!tap_ok(r == 0 && (st.st_mode & 0777) == 0644, "emul_period_us exists, mode 0644"))
		return tap_done();
	knob_read("emul_period_us", buf, sizeof(buf));
	tap_ok(!strcmp(buf, "10000"), "default emul_period_us = 10000 (got \"%s\")", buf);
	bad("999\n", "999 (below 1000)");
	bad("1000001\n", "1000001 (above 1000000)");
	bad("0\n", "0");
	bad("abc\n", "abc");
	bad("5000x\n", "5000x");
	bad("-1000\n", "-1000");
	bad("\n", "an empty line");
	good(1000);
	good(1000000);
	good(10000);
#if defined(__x86_64__) || defined(__i386__)
	knob_path(p, sizeof(p), "backend");
	r = stat(p, &st);
	tap_ok(r == 0 && (st.st_mode & 0777) == 0644, "backend mode 0644");
	bad_backend("power-smt\n", "power-smt (not this build's)");
	bad_backend("abc\n", "abc");
	bad_backend("\n", "an empty line");
	bad_backend("none x\n", "none x");
	if (online_cpus() >= 2)
		test_switch();
#endif
	tap_ok(knobs_restore() == 0, "knobs restored");
	return tap_done();
}
