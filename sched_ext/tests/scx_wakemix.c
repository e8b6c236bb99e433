// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wakemix: wake-up latency under load, hackbench time and CPU shares of
 * a scheduling policy (static, runs in the busybox guest; with -p 0 on any
 * host). The measurements are tests/guest/cases/wakemix.h's, shared with
 * the kernel guest case 32-wakeup-mix.
 *
 * usage: scx_wakemix probe     -p POL -t SECS [-b NBUSY] [-g GROUPS] [-l LOOPS] [-P]
 *        scx_wakemix hackbench -p POL [-g GROUPS] [-l LOOPS] [-T TIMEOUT | -R REF_MS]
 *        scx_wakemix shares    -p POL -t SECS [-n N] [-S]
 *
 * Prints key=value lines. Exit status: 0, 1 (a child failed or timed
 * out), 2 (usage, or the policy could not be set: the reason on stderr).
 */
#include "../../tests/guest/cases/wakemix.h"

#include <getopt.h>
#include <limits.h>

#define DEF_BUSY	4
#define DEF_GROUPS	4	/* hackbench mode */
#define DEF_LOOPS	1500
#define DEF_TIMEOUT	300	/* s, hackbench mode */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s probe     -p POL -t SECS [-b NBUSY] [-g GROUPS] [-l LOOPS] [-P]\n"
		"       %s hackbench -p POL [-g GROUPS] [-l LOOPS] [-T TIMEOUT_S | -R REF_MS]\n"
		"       %s shares    -p POL -t SECS [-n N] [-S]\n"
		"  -p POL    policy of every measured task (0 other, 3 batch, 7 ext, 8 hpc)\n"
		"  -t SECS   measured interval\n"
		"  -b NBUSY  probe: busy loops beside the probe (default %d)\n"
		"  -g GROUPS hackbench groups of 10 senders + 10 receivers (default: probe 0,\n"
		"            hackbench %d)\n"
		"  -l LOOPS  messages from each sender to each receiver (default %d)\n"
		"  -P        probe: pin busy loop i to CPU i %% ncpus (default: unpinned)\n"
		"  -T SECS   hackbench: kill the run after this (default %d)\n"
		"  -R MS     hackbench: kill the run after the deadline wm_hb_timeout_ms() gives\n"
		"            for this slowest SCHED_OTHER run so far (0: none yet)\n"
		"  -n N      shares: busy loops (default %d)\n"
		"  -S        shares: skewed start, N-1 loops on CPU 0 and one on CPU 1 for\n"
		"            100 ms, then unpinned (only the scheduler's balancing evens\n"
		"            them out)\n",
		prog, prog, prog, DEF_BUSY, DEF_GROUPS, DEF_LOOPS, DEF_TIMEOUT, DEF_BUSY);
}

/* A non-negative decimal int, or -1. */
static int num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

int main(int argc, char **argv)
{
	int policy = -1, secs = -1, nbusy = DEF_BUSY, groups = -1, loops = DEF_LOOPS;
	int timeout = DEF_TIMEOUT, ref = -1, pin = 0, skew = 0, opt, rc, *val;
	const char *mode;
	char err[256] = "";

	if (argc < 2) {
		usage(argv[0]);
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "probe") && strcmp(mode, "hackbench") && strcmp(mode, "shares")) {
		usage(argv[0]);
		return 2;
	}
	optind = 2;
	while ((opt = getopt(argc, argv, "p:t:b:g:l:n:T:R:PS")) != -1) {
		if (opt == 'P' || opt == 'S') {
			*(opt == 'P' ? &pin : &skew) = 1;
			continue;
		}
		val = opt == 'p' ? &policy : opt == 't' ? &secs :
		      opt == 'b' || opt == 'n' ? &nbusy : opt == 'g' ? &groups :
		      opt == 'l' ? &loops : opt == 'T' ? &timeout : opt == 'R' ? &ref : NULL;
		if (!val) {
			usage(argv[0]);
			return 2;
		}
		*val = num(optarg);
		if (*val < 0) {
			fprintf(stderr, "%s: -%c: not a number: %s\n", argv[0], opt, optarg);
			return 2;
		}
	}
	if (optind != argc || policy < 0 || (strcmp(mode, "hackbench") && secs < 0) ||
	    (pin && strcmp(mode, "probe")) || (skew && strcmp(mode, "shares"))) {
		usage(argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	wm_catch_signals();

	if (!strcmp(mode, "probe")) {
		struct wm_probe_cfg cfg = {
			.policy = policy, .secs = secs, .nbusy = nbusy,
			.groups = groups < 0 ? 0 : groups, .loops = loops, .pin = pin,
		};
		struct wm_probe_res res;

		rc = wm_probe(&cfg, &res, err, sizeof(err));
		if (!rc)
			wm_probe_print(stdout, &res);
	} else if (!strcmp(mode, "hackbench")) {
		double s;

		if (timeout < 1 || timeout > WM_MAX_SECS) {
			fprintf(stderr, "%s: -T: 1..%d\n", argv[0], WM_MAX_SECS);
			return 2;
		}
		rc = wm_hackbench(policy, groups < 0 ? DEF_GROUPS : groups, loops,
				  ref >= 0 ? wm_hb_timeout_ms((unsigned int)ref) :
					     (unsigned int)timeout * 1000U, &s, err, sizeof(err));
		if (!rc)
			printf("hackbench_s=%.3f\n", s);
	} else {
		struct wm_shares_res res;

		rc = wm_shares(policy, secs, nbusy, skew, &res, err, sizeof(err));
		if (!rc)
			wm_shares_print(stdout, &res);
	}
	if (rc)
		fprintf(stderr, "%s %s: %s\n", argv[0], mode, err);
	return rc;
}
