// SPDX-License-Identifier: GPL-2.0
/*
 * 26-sysfs-emul: the sysfs side of the x86 SMT emulation backend.
 *
 * On x86 the backend is "x86-smt-emul"; its knob emul_period_us exists
 * (mode 0644), defaults to 10000, rejects bad input with EINVAL leaving it
 * unchanged (below 1000, above 1000000, zero, not a number, trailing
 * garbage) and takes valid values (1000, 1000000), restored at the end.
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

int main(void)
{
	char buf[64], p[128];
	struct stat st;
	int r;

	tap_init("26-sysfs-emul");
	watchdog(30);
	if (!require_hpc())
		return tap_done();
	r = knob_read("backend", buf, sizeof(buf));
#if defined(__x86_64__) || defined(__i386__)
	tap_ok(r > 0 && !strcmp(buf, "x86-smt-emul"), "x86: backend is x86-smt-emul (got \"%s\")",
	       r > 0 ? buf : strerror(-r));
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
	tap_ok(knobs_restore() == 0, "knobs restored");
	return tap_done();
}
