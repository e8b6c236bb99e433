// SPDX-License-Identifier: GPL-2.0
/*
 * 25-sysfs: /sys/kernel/sched_hpc/ knobs of the class (the SMT emulation
 * backend's own, emul_period_us, and the backend switch are in
 * 26-sysfs-emul).
 *
 * Every file readable (also by an unprivileged user), modes per the ABI,
 * defaults per the ABI, read-only files reject writes, each kind of bad
 * input rejected with EINVAL and the value unchanged (non-number, negative,
 * out of range, overflow, low_util >= high_util, min_prio > max_prio,
 * outside prio_range, unknown words, empty, trailing garbage), valid writes
 * take effect and read back, the weights stay complementary, and the
 * defaults are restored at the end.
 */
#include "hpctest.h"

static const char *const rw_knobs[] = {
	"low_util", "high_util", "min_prio", "max_prio", "global_weight",
	"last_weight", "heuristic", "min_wait_us", "queue", "timeslice_us",
};
static const char *const ro_knobs[] = { "prio_range", "smt_pairs" };
#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

/* A snapshot of every knob, to prove that a rejected write changed nothing. */
struct snap {
	char v[N(rw_knobs)][64];
};

static void take(struct snap *s)
{
	int i;

	for (i = 0; i < N(rw_knobs); i++)
		if (knob_read(rw_knobs[i], s->v[i], sizeof(s->v[i])) < 0)
			strcpy(s->v[i], "<unreadable>");
}

static int same(const struct snap *a, const struct snap *b, char *diff, size_t len)
{
	int i, ok = 1;

	diff[0] = 0;
	for (i = 0; i < N(rw_knobs); i++)
		if (strcmp(a->v[i], b->v[i])) {
			ok = 0;
			snprintf(diff + strlen(diff), len - strlen(diff), "%s %s->%s ",
				 rw_knobs[i], a->v[i], b->v[i]);
		}
	return ok;
}

/* Writing @val to @knob must fail with EINVAL and change no knob. */
static void bad(const char *knob, const char *val, const char *what)
{
	struct snap before, after;
	char diff[512], shown[64];
	size_t i, j = 0;
	int r;

	for (i = 0; val[i] && j < sizeof(shown) - 3; i++) {
		if (val[i] == '\n') {
			shown[j++] = '\\';
			shown[j++] = 'n';
		} else {
			shown[j++] = val[i];
		}
	}
	shown[j] = 0;
	take(&before);
	r = knob_write(knob, val);
	take(&after);
	tap_check(r == -EINVAL, r ? strerror(-r) : "write succeeded",
		  "%s <- \"%s\" (%s): EINVAL", knob, shown, what);
	if (!tap_check(same(&before, &after, diff, sizeof(diff)), diff,
		       "%s <- \"%s\": nothing changed", knob, shown))
		knobs_restore();
}

/* Writing @val must succeed and @knob must then read @expect. */
static int good(const char *knob, const char *val, const char *expect)
{
	char buf[64];
	int r;

	r = knob_write(knob, val);
	if (!tap_check(r == 0, strerror(-r), "%s <- %s accepted", knob, expect))
		return 0;
	knob_read(knob, buf, sizeof(buf));
	return tap_ok(!strcmp(buf, expect), "%s reads back %s (got \"%s\")", knob, expect, buf);
}

static void test_read_and_modes(void)
{
	char p[128], buf[256];
	struct stat st;
	int i, r;

	for (i = 0; i < N(rw_knobs); i++) {
		knob_path(p, sizeof(p), rw_knobs[i]);
		r = stat(p, &st);
		tap_ok(r == 0 && (st.st_mode & 0777) == 0644,
		       "%s exists, mode 0644 (got %o)", rw_knobs[i],
		       r ? 0 : (unsigned int)(st.st_mode & 0777));
		r = knob_read(rw_knobs[i], buf, sizeof(buf));
		tap_ok(r > 0, "%s readable, non-empty (\"%s\")", rw_knobs[i], r > 0 ? buf : "");
	}
	for (i = 0; i < N(ro_knobs); i++) {
		knob_path(p, sizeof(p), ro_knobs[i]);
		r = stat(p, &st);
		tap_ok(r == 0 && (st.st_mode & 0777) == 0444,
		       "%s exists, mode 0444 (got %o)", ro_knobs[i],
		       r ? 0 : (unsigned int)(st.st_mode & 0777));
		r = knob_read(ro_knobs[i], buf, sizeof(buf));
		tap_ok(r > 0, "%s readable, non-empty", ro_knobs[i]);
	}
}

static void test_defaults(void)
{
	char buf[64];
	int i;

	for (i = 0; i < NR_KNOB_DEFAULTS; i++) {
		if (!strcmp(knob_defaults[i].name, "emul_period_us"))
			continue;	/* 26-sysfs-emul */
		knob_read(knob_defaults[i].name, buf, sizeof(buf));
		tap_ok(!strcmp(buf, knob_defaults[i].val), "default %s = %s (got \"%s\")",
		       knob_defaults[i].name, knob_defaults[i].val, buf);
	}
}

/* prio_range, smt_pairs; returns the backend's range. */
static void test_readonly(int *pmin, int *pmax)
{
	char buf[256], want[256];
	struct snap before, after;
	char diff[512];
	int n, a, b, i, r, ncpu = online_cpus();

	*pmin = 1;
	*pmax = 6;
	knob_read("backend", buf, sizeof(buf));
	tap_diag("backend: %s", buf);
	knob_read("prio_range", buf, sizeof(buf));
	r = sscanf(buf, "%d %d%n", &a, &b, &n);
	if (tap_ok(r == 2 && !buf[n] && a >= 0 && a <= 4 && b >= 6 && b <= 7,
		   "prio_range \"MIN MAX\" covers the default 4..6 (got \"%s\")", buf)) {
		*pmin = a;
		*pmax = b;
	}
	knob_read("smt_pairs", buf, sizeof(buf));
	want[0] = 0;
	for (i = 0; i + 1 < ncpu; i += 2)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%d %d",
			 i ? "\n" : "", i, i + 1);
	tap_check(!strcmp(buf, want), buf,
		  "smt_pairs lists the emulated cores (2k, 2k+1) of %d CPUs", ncpu);

	for (i = 0; i < N(ro_knobs); i++) {
		char p[128];

		knob_path(p, sizeof(p), ro_knobs[i]);
		take(&before);
		r = write_file(p, "1 2\n");
		take(&after);
		tap_ok(r < 0, "%s is read-only: write rejected (%s)", ro_knobs[i],
		       r < 0 ? strerror(-r) : "accepted");
		tap_check(same(&before, &after, diff, sizeof(diff)), diff,
			  "write to %s changed no knob", ro_knobs[i]);
	}
}

static void test_unprivileged(void)
{
	struct snap before, after;
	char diff[512];
	pid_t pid;
	int st = -1;

	int *res = shared_alloc(2 * sizeof(int));

	take(&before);
	pid = fork_kid();
	if (pid == 0) {
		/*
		 * Open the directory first and go on relative to it: the
		 * check is about the knob's own permissions, not about the
		 * paths above it (the initramfs root may be mode 0700).
		 */
		int dfd = open(HPC_SYSFS, O_RDONLY | O_DIRECTORY), fd;
		char buf[64];
		ssize_t n;

		if (dfd < 0 || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		fd = openat(dfd, "low_util", O_RDONLY);
		n = fd < 0 ? -errno : read(fd, buf, sizeof(buf));
		res[0] = n < 0 ? (int)(fd < 0 ? n : -errno) : (int)n;
		fd = openat(dfd, "low_util", O_WRONLY);
		if (fd < 0)
			res[1] = -errno;
		else
			res[1] = write(fd, "50\n", 3) < 0 ? -errno : 0;
		_exit(0);
	}
	wait_timeout(pid, &st, 5000);
	take(&after);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && res[0] > 0,
	       "uid 65534 can read a knob (status %#x, read: %s)", st,
	       res[0] > 0 ? "ok" : strerror(-res[0]));
	tap_ok(res[1] == -EACCES, "uid 65534: write refused with EACCES (got %s)",
	       res[1] ? strerror(-res[1]) : "success");
	tap_check(same(&before, &after, diff, sizeof(diff)), diff,
		  "unprivileged write changed nothing");
}

static void test_invalid(int pmin, int pmax)
{
	char v[32];

	/* generic number syntax, on a plain 0..100 knob */
	bad("low_util", "abc\n", "not a number");
	bad("low_util", "-1\n", "negative");
	bad("low_util", "60x\n", "trailing garbage");
	bad("low_util", "60 61\n", "two numbers");
	bad("low_util", "6.5\n", "not an integer");
	bad("low_util", "\n", "empty line");
	bad("low_util", " \n", "blank");
	bad("low_util", "4294967356\n", "overflows u32 (2^32 + 60)");
	bad("low_util", "99999999999999999999\n", "overflows u64");
	{
		/* A zero-byte write(2) never reaches the store: no change. */
		struct snap before, after;
		char diff[512], p[128];

		knob_path(p, sizeof(p), "low_util");
		take(&before);
		write_file_len(p, "", 0);
		take(&after);
		tap_check(same(&before, &after, diff, sizeof(diff)), diff,
			  "zero-byte write to low_util changes nothing");
	}

	/* ranges */
	bad("low_util", "101\n", "above 100");
	bad("high_util", "101\n", "above 100");
	bad("high_util", "1000\n", "above 100");
	bad("global_weight", "101\n", "above 100");
	bad("last_weight", "101\n", "above 100");
	bad("global_weight", "-5\n", "negative");
	bad("min_wait_us", "1000001\n", "above 1000000");
	bad("timeslice_us", "999\n", "below 1000");
	bad("timeslice_us", "1000001\n", "above 1000000");
	bad("timeslice_us", "0\n", "zero");

	/* invariants (defaults: low 65, high 85, min 4, max 6) */
	bad("low_util", "85\n", "low_util == high_util");
	bad("low_util", "90\n", "low_util > high_util");
	bad("high_util", "65\n", "high_util == low_util");
	bad("high_util", "10\n", "high_util < low_util");
	bad("min_prio", "7\n", "min_prio > max_prio");
	bad("max_prio", "3\n", "max_prio < min_prio");
	snprintf(v, sizeof(v), "%d\n", pmax + 1);
	bad("max_prio", v, "above prio_range");
	bad("max_prio", "8\n", "above the hardware range");
	if (pmin > 0) {
		snprintf(v, sizeof(v), "%d\n", pmin - 1);
		bad("min_prio", v, "below prio_range");
	} else {
		tap_skip("min_prio below prio_range", "prio_range starts at 0");
	}
	bad("min_prio", "-1\n", "negative");

	/* words */
	bad("heuristic", "unif\n", "prefix of a word");
	bad("heuristic", "uniformx\n", "word with trailing garbage");
	bad("heuristic", "uniform adaptive\n", "two words");
	bad("heuristic", "static\n", "unknown word");
	bad("heuristic", "1\n", "number for a word");
	bad("heuristic", "phases\n", "word with trailing garbage");
	bad("heuristic", "\n", "empty line");
	bad("queue", "round-robin\n", "unknown word");
	bad("queue", "rrr\n", "word with trailing garbage");
	bad("queue", "fifo rr\n", "two words");
	bad("queue", "\n", "empty line");
}

static void test_valid(int pmin, int pmax)
{
	char v[16], e[16];

	good("low_util", "50\n", "50");
	good("low_util", "51", "51");		/* no newline */
	good("high_util", "90\n", "90");
	good("low_util", "0\n", "0");
	good("high_util", "100\n", "100");
	good("high_util", "1\n", "1");		/* 0 < 1 */
	bad("low_util", "1\n", "low_util == high_util after a move");
	good("high_util", "85\n", "85");
	good("low_util", "65\n", "65");

	good("max_prio", "5\n", "5");
	good("min_prio", "5\n", "5");		/* min == max is fine */
	good("max_prio", "6\n", "6");
	good("min_prio", "4\n", "4");
	snprintf(v, sizeof(v), "%d\n", pmin);
	snprintf(e, sizeof(e), "%d", pmin);
	good("min_prio", v, e);
	snprintf(v, sizeof(v), "%d\n", pmax);
	snprintf(e, sizeof(e), "%d", pmax);
	good("max_prio", v, e);
	good("max_prio", "6\n", "6");
	good("min_prio", "4\n", "4");

	good("global_weight", "30\n", "30");
	tap_ok(knob_get("last_weight") == 70, "global_weight 30 sets last_weight 70 (got %lld)",
	       knob_get("last_weight"));
	good("last_weight", "25\n", "25");
	tap_ok(knob_get("global_weight") == 75, "last_weight 25 sets global_weight 75 (got %lld)",
	       knob_get("global_weight"));
	good("global_weight", "0\n", "0");
	tap_ok(knob_get("last_weight") == 100, "global_weight 0 sets last_weight 100 (got %lld)",
	       knob_get("last_weight"));
	good("global_weight", "100\n", "100");
	tap_ok(knob_get("last_weight") == 0, "global_weight 100 sets last_weight 0 (got %lld)",
	       knob_get("last_weight"));
	bad("last_weight", "101\n", "above 100 with weights 100/0");
	tap_ok(knob_get("global_weight") == 100, "rejected last_weight left global_weight 100");
	good("global_weight", "10\n", "10");

	good("heuristic", "adaptive\n", "adaptive");
	good("heuristic", "uniform\n", "uniform");
	good("heuristic", "adaptive", "adaptive");
	good("heuristic", "phase\n", "phase");
	good("heuristic", "uniform", "uniform");
	good("queue", "fifo\n", "fifo");
	good("queue", "rr\n", "rr");

	good("min_wait_us", "0\n", "0");
	good("min_wait_us", "1000000\n", "1000000");
	good("min_wait_us", "100\n", "100");
	good("timeslice_us", "1000\n", "1000");
	good("timeslice_us", "1000000\n", "1000000");
	good("timeslice_us", "100000\n", "100000");
}

int main(void)
{
	int pmin, pmax;
	char which[256];

	tap_init("25-sysfs");
	watchdog(60);
	if (!require_hpc())
		return tap_done();
	test_read_and_modes();
	test_defaults();
	knobs_restore();
	test_readonly(&pmin, &pmax);
	test_unprivileged();
	test_invalid(pmin, pmax);
	test_valid(pmin, pmax);
	tap_ok(knobs_restore() == 0, "defaults restored");
	tap_check(knobs_at_defaults(which, sizeof(which)), which, "every knob reads its default");
	return tap_done();
}
