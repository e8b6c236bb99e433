// SPDX-License-Identifier: GPL-2.0
/*
 * 24-fixed-prio: a fixed hardware priority per task (sched_priority 1..N of
 * SCHED_HPC, N = sched_get_priority_max(SCHED_HPC) = prio_range's max).
 *
 *  - range: 0 (dynamic) and prio_range's MIN..MAX are accepted; MAX + 1, 99
 *    and -1 are EINVAL through sched_setscheduler(), sched_setattr() and
 *    sched_setparam(), and nothing changes (policy, priority, /proc);
 *  - sched_getparam()/sched_getattr() and /proc's fixed_prio report it;
 *    sched_setparam() changes it; 0 makes the task dynamic again, starting
 *    from the fixed priority brought into [min_prio, max_prio];
 *  - a pair on one emulated core: a high task (U ~ 97 %) next to a low one
 *    (U ~ 10 %). Dynamic (the control), the rule raises the high one (to 6
 *    on a quiet host; 23-rule checks the climb).
 *    Fixed, the high one at 4 and the low one at 6, both stay there after
 *    every iteration, while their iterations are still accounted (counts;
 *    the low one's utilisation below low_util, on which the rule would
 *    lower it) and every sched_hpc_iteration event of each says 4 -> 4 or
 *    6 -> 6;
 *  - permissions: without CAP_SYS_NICE no fixed priority above 4, whatever
 *    RLIMIT_RTPRIO says (EPERM, nothing changes; 95 grants nothing); 1..4, lowering
 *    a fixed priority and going back to dynamic need nothing more;
 *  - fork: a child inherits the fixed priority with fresh iteration state;
 *    with SCHED_RESET_ON_FORK it starts as SCHED_OTHER, priority 0.
 */
#include "hpctest.h"


#define TR TRACEFS
#define EV TR "/events/sched/sched_hpc_iteration"
#define MAXIT 24

struct trace {
	int n;
	long long prio[MAXIT];
	long long util[MAXIT];
	long long fixed[MAXIT];
	long long iters;
	int rc;
};

/* What a child saw, in shared memory. */
struct res {
	int sched;
	int param;		/* sched_getparam() */
	int err[8];		/* 0 or errno of each step */
	int prio[8];		/* sched_getparam() after each step */
	struct hpc_stat st;
	int stat_rc;
};

static struct trace *T;
static struct res *R;
static pid_t pair_pid[2];
static int pmin, pmax;

static int read_range(void)
{
	char buf[32];

	return knob_read("prio_range", buf, sizeof(buf)) > 0 &&
	       sscanf(buf, "%d %d", &pmin, &pmax) == 2 && pmin >= 1 && pmax >= pmin;
}

static int getparam(pid_t pid)
{
	struct sched_param sp = { .sched_priority = -1 };

	return sched_getparam(pid, &sp) ? -errno : sp.sched_priority;
}

static int setparam(pid_t pid, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return sched_setparam(pid, &sp) ? -errno : 0;
}

static int setattr_hpc(pid_t pid, unsigned int prio)
{
	struct hpc_sched_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_HPC;
	a.sched_priority = prio;
	return sys_sched_setattr(pid, &a, 0) ? -errno : 0;
}

/* Policy, sched_getparam() and /proc of the calling task, all as expected? */
static int self_is(int policy, int prio, const char *what)
{
	struct hpc_stat st;
	int r = hpc_stat_read(0, &st), gp = getparam(0);
	int pol = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;

	if (policy == SCHED_HPC)
		return tap_ok(pol == SCHED_HPC && gp == prio && !r && st.hpc == 1 &&
			      st.v[HS_FIXED_PRIO] == prio && (!prio || st.v[HS_PRIO] == prio),
			      "%s: SCHED_HPC (%d), sched_getparam %d (%d), /proc fixed_prio %lld, prio %lld",
			      what, pol, gp, prio, st.v[HS_FIXED_PRIO], st.v[HS_PRIO]);
	return tap_ok(pol == policy && gp == 0 && !r && st.hpc == 0,
		      "%s: policy %d (want %d), sched_getparam %d, /proc policy: other", what,
		      pol, policy, gp);
}

static void test_range(void)
{
	struct hpc_sched_attr a;
	int r, p, ok = 1;

	r = sched_get_priority_max(SCHED_HPC);
	tap_ok(r == pmax, "sched_get_priority_max(SCHED_HPC) == %d (got %d)", pmax, r);
	r = sched_get_priority_min(SCHED_HPC);
	tap_ok(r == 0, "sched_get_priority_min(SCHED_HPC) == 0: dynamic (got %d)", r);

	for (p = pmin; p <= pmax; p++) {
		r = set_policy(0, SCHED_HPC, p);
		ok &= r == 0 && getparam(0) == p;
	}
	tap_ok(ok, "sched_setscheduler(SCHED_HPC, %d..%d) each accepted and reported", pmin,
	       pmax);
	r = set_other(0);
	self_is(SCHED_OTHER, 0, "back to SCHED_OTHER");

	/* Refused from SCHED_OTHER: nothing changes. */
	r = set_policy(0, SCHED_HPC, pmax + 1);
	tap_check(r == -EINVAL, strerror(-r), "sched_setscheduler(SCHED_HPC, %d): EINVAL",
		  pmax + 1);
	r = setattr_hpc(0, 99);
	tap_check(r == -EINVAL, strerror(-r), "sched_setattr(SCHED_HPC, 99): EINVAL");
	r = set_policy(0, SCHED_HPC, -1);
	tap_check(r == -EINVAL, strerror(-r), "sched_setscheduler(SCHED_HPC, -1): EINVAL");
	self_is(SCHED_OTHER, 0, "after the refused calls, unchanged");

	/* Refused from a fixed priority: it stays. */
	r = set_policy(0, SCHED_HPC, 5);
	tap_check(r == 0, strerror(-r), "sched_setscheduler(SCHED_HPC, 5)");
	self_is(SCHED_HPC, 5, "fixed 5");
	r = setattr_hpc(0, pmax + 1);
	tap_check(r == -EINVAL, strerror(-r), "fixed 5: sched_setattr(%d): EINVAL", pmax + 1);
	r = setparam(0, pmax + 1);
	tap_check(r == -EINVAL, strerror(-r), "fixed 5: sched_setparam(%d): EINVAL", pmax + 1);
	r = set_policy(0, SCHED_HPC, 1000);
	tap_check(r == -EINVAL, strerror(-r), "fixed 5: sched_setscheduler(1000): EINVAL");
	self_is(SCHED_HPC, 5, "after the refused calls, still fixed 5");

	memset(&a, 0xff, sizeof(a));
	r = sys_sched_getattr(0, &a, sizeof(a), 0) ? errno : 0;
	tap_check(r == 0 && a.sched_policy == SCHED_HPC && a.sched_priority == 5, strerror(r),
		  "sched_getattr(): policy %u, priority %u (want 8, 5)", a.sched_policy,
		  a.sched_priority);

	r = setparam(0, 3);
	tap_check(r == 0, strerror(-r), "sched_setparam(3) on a SCHED_HPC task");
	self_is(SCHED_HPC, 3, "fixed 3");
	r = setattr_hpc(0, 0);
	tap_check(r == 0, strerror(-r), "sched_setattr(SCHED_HPC, 0): dynamic again");
	self_is(SCHED_HPC, 0, "dynamic");
	{
		struct hpc_stat st;

		r = hpc_stat_read(0, &st);
		tap_ok(!r && st.v[HS_PRIO] == 4,
		       "dynamic again: the fixed 3 brought into min_prio..max_prio: prio 4 (got %lld)",
		       st.v[HS_PRIO]);
	}
	set_other(0);
}

/* A child on @cpu: @n iterations of @run ms compute and @sleep ms wait. */
static pid_t shape(struct trace *t, int cpu, int fixed, int n, unsigned int run,
		   unsigned int sleep)
{
	pid_t pid;
	int i;

	memset(t, 0, sizeof(*t));
	pid = fork_kid();
	if (pid)
		return pid;
	if (pin_cpu(0, cpu) || set_policy(0, SCHED_HPC, fixed))
		_exit(1);
	for (i = 0; i < n && i < MAXIT; i++) {
		struct hpc_stat st;

		iterate(run, sleep);
		if (hpc_stat_read(0, &st))
			_exit(2);
		t->prio[i] = st.v[HS_PRIO];
		t->util[i] = st.v[HS_HEUR_UTIL];
		t->fixed[i] = st.v[HS_FIXED_PRIO];
		t->iters = st.v[HS_ITERATIONS];
		t->n = i + 1;
	}
	_exit(0);
}

static void show(const char *who, const struct trace *t)
{
	char line[512] = "";
	int i;

	for (i = 0; i < t->n; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " %lld/%lld",
			 t->prio[i], t->util[i]);
	tap_diag("%s prio/heur_util after each sleep:%s (iterations %lld)", who, line,
		 t->iters);
}

/* The high/low pair of 23-rule, each task fixed at @fhi / @flo (0: dynamic). */
static int pair(int fhi, int flo)
{
	pid_t a, b;
	int ra, rb;

	b = shape(&T[1], 1, flo, 20, 2, 20);
	sleep_ms(50);
	a = shape(&T[0], 0, fhi, 8, 40, 1);
	pair_pid[0] = a;
	pair_pid[1] = b;
	ra = reap_kid(a, 20000);
	rb = reap_kid(b, 20000);
	return ra == 0 && rb == 0 && T[0].n == 8 && T[1].n == 20 ? 0 : -1;
}

static int all_at(const struct trace *t, long long prio)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->prio[i] != prio || t->fixed[i] != prio)
			return 0;
	return t->n > 0;
}

/* Events of @pid in the trace: how many, and how many not @prio -> @prio. */
static void events_of(pid_t pid, long long prio, int *n, int *other)
{
	static char buf[1 << 20];
	char *line, *save, pat[32];
	long long o, v;

	*n = *other = 0;
	if (read_file(TR "/trace", buf, sizeof(buf)) <= 0)
		return;
	snprintf(pat, sizeof(pat), "pid=%d ", (int)pid);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ev = strstr(line, "sched_hpc_iteration:"), *p;

		if (!ev || !strstr(ev, pat))
			continue;
		(*n)++;
		p = strstr(ev, " old_prio=");
		o = p ? strtoll(p + 10, NULL, 10) : -1;
		p = strstr(ev, " new_prio=");
		v = p ? strtoll(p + 10, NULL, 10) : -1;
		if (o != prio || v != prio)
			(*other)++;
	}
}

static void test_pair(void)
{
	int r, n[2] = { 0, 0 }, other[2] = { 0, 0 }, traced;

	if (online_cpus() < 2) {
		tap_skip("fixed pair", "needs 2 CPUs");
		return;
	}
	knobs_restore();
	/* Control: the rule moves the high task of this shape to 6. */
	r = pair(0, 0);
	show("dynamic high", &T[0]);
	show("dynamic low", &T[1]);
	if (tap_ok(r == 0, "dynamic pair ran"))
		tap_ok(T[0].prio[T[0].n - 1] > 4,
		       "control: dynamic, the rule raises the high task next to a low sibling (4 -> %lld)",
		       T[0].prio[T[0].n - 1]);

	tracefs_mount();
	write_file(TR "/trace", "");
	write_file(TR "/tracing_on", "1\n");
	traced = write_file(EV "/enable", "1\n") == 0;

	r = pair(4, 6);
	if (traced)
		write_file(EV "/enable", "0\n");
	show("fixed 4 high", &T[0]);
	show("fixed 6 low", &T[1]);
	if (!tap_ok(r == 0, "pair with the high task fixed at 4, the low one at 6 ran"))
		return;
	tap_ok(all_at(&T[0], 4), "high task fixed at 4: prio 4 after each of its 8 iterations");
	tap_ok(all_at(&T[1], 6), "low task fixed at 6: prio 6 after each of its 20 iterations");
	tap_ok(T[0].iters >= 8 && T[1].iters >= 18,
	       "fixed tasks still close iterations (high %lld of 8, low %lld of 20)", T[0].iters,
	       T[1].iters);
	/*
	 * Fixed at 6, the low task is low by its own accounting (below
	 * low_util): dynamic, the rule would step it down every iteration.
	 * The high one, held back at 4 beside it, computes most of the time.
	 */
	tap_ok(T[1].util[19] < 6500 && T[0].util[7] > 6500,
	       "their accounting goes on: heur_util low %lld (< 65 %%: the rule would lower it), high %lld (> 65 %%)",
	       T[1].util[19], T[0].util[7]);
	if (tap_check(traced, "cannot enable " EV, "sched_hpc_iteration enabled")) {
		events_of(pair_pid[0], 4, &n[0], &other[0]);
		events_of(pair_pid[1], 6, &n[1], &other[1]);
		tap_ok(n[0] >= 8 && other[0] == 0,
		       "tracepoint: %d events of the high task, %d not 4 -> 4", n[0], other[0]);
		tap_ok(n[1] >= 18 && other[1] == 0,
		       "tracepoint: %d events of the low task, %d not 6 -> 6", n[1], other[1]);
	}
	write_file(TR "/trace", "");
}

/* ---------------------------------------------------------- permissions */

static void drop_privileges(unsigned long rtprio)
{
	struct rlimit rl = { rtprio, rtprio };

	if (setrlimit(RLIMIT_RTPRIO, &rl))
		_exit(92);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(90);
	if (geteuid() != 65534)
		_exit(91);
}

static void step(int i, int r)
{
	R->err[i] = -r;
	R->prio[i] = getparam(0);
}

static void child_rlimit1(void)
{
	drop_privileges(1);
	step(0, set_policy(0, SCHED_HPC, 4));
	step(1, set_policy(0, SCHED_HPC, 5));
	step(2, setparam(0, 2));
	step(3, setattr_hpc(0, 6));
	step(4, setattr_hpc(0, 0));
	R->sched = sched_getscheduler(0);
}

/* A common "rtprio 95": a real-time limit, no hardware priority. */
static void child_rlimit95(void)
{
	drop_privileges(95);
	step(0, set_policy(0, SCHED_HPC, 5));
	step(1, set_policy(0, SCHED_HPC, 6));
	step(2, set_policy(0, SCHED_HPC, 4));
	R->sched = sched_getscheduler(0);
}

/* Root fixes 6, then drops everything: may lower, not raise again. */
static void child_lower(void)
{
	if (set_policy(0, SCHED_HPC, 6))
		_exit(93);
	drop_privileges(0);
	step(0, setparam(0, 5));
	step(1, setparam(0, 6));
	step(2, setparam(0, 0));
	R->sched = sched_getscheduler(0);
}

static int in_child(void (*fn)(void))
{
	memset(R, 0, sizeof(*R));
	return run_in_child(fn, 5000);
}

static void test_permissions(void)
{
	int r;

	r = in_child(child_rlimit1);
	tap_ok(r == 0 && R->err[0] == 0 && R->prio[0] == 4,
	       "unprivileged, RLIMIT_RTPRIO 1: fixed 4 accepted (%s, priority %d)",
	       strerror(R->err[0]), R->prio[0]);
	tap_ok(R->err[1] == EPERM && R->prio[1] == 4,
	       "unprivileged, RLIMIT_RTPRIO 1: fixed 5 EPERM (%s), still 4 (%d)",
	       strerror(R->err[1]), R->prio[1]);
	tap_ok(R->err[2] == 0 && R->prio[2] == 2,
	       "unprivileged: sched_setparam(2) lowers it (%s, priority %d)",
	       strerror(R->err[2]), R->prio[2]);
	tap_ok(R->err[3] == EPERM && R->prio[3] == 2,
	       "unprivileged, RLIMIT_RTPRIO 1: sched_setattr(6) EPERM (%s), still 2 (%d)",
	       strerror(R->err[3]), R->prio[3]);
	tap_ok(R->err[4] == 0 && R->prio[4] == 0 && R->sched == SCHED_HPC,
	       "unprivileged: back to dynamic (%s, priority %d, policy %d)",
	       strerror(R->err[4]), R->prio[4], R->sched);

	r = in_child(child_rlimit95);
	tap_ok(r == 0 && R->err[0] == EPERM && R->prio[0] == 0,
	       "unprivileged, RLIMIT_RTPRIO 95: fixed 5 EPERM (%s, priority %d): the limit is a "
	       "real-time one", strerror(R->err[0]), R->prio[0]);
	tap_ok(R->err[1] == EPERM && R->prio[1] == 0,
	       "unprivileged, RLIMIT_RTPRIO 95: fixed 6 EPERM (%s, priority %d)",
	       strerror(R->err[1]), R->prio[1]);
	tap_ok(R->err[2] == 0 && R->prio[2] == 4 && R->sched == SCHED_HPC,
	       "unprivileged, RLIMIT_RTPRIO 95: fixed 4 accepted (%s, priority %d, policy %d)",
	       strerror(R->err[2]), R->prio[2], R->sched);

	r = in_child(child_lower);
	tap_ok(r == 0 && R->err[0] == 0 && R->prio[0] == 5,
	       "fixed 6 by root, then unprivileged without RLIMIT_RTPRIO: lowering to 5 accepted (%s, %d)",
	       strerror(R->err[0]), R->prio[0]);
	tap_ok(R->err[1] == EPERM && R->prio[1] == 5,
	       "... raising back to 6 EPERM (%s), still 5 (%d)", strerror(R->err[1]),
	       R->prio[1]);
	tap_ok(R->err[2] == 0 && R->prio[2] == 0 && R->sched == SCHED_HPC,
	       "... dynamic again accepted (%s, priority %d)", strerror(R->err[2]), R->prio[2]);
}

/* --------------------------------------------------------------- fork */

static void child_report(void)
{
	R->sched = sched_getscheduler(0);
	R->param = getparam(0);
	R->stat_rc = hpc_stat_read(0, &R->st);
}

static void test_fork(void)
{
	int r, i;

	r = set_policy(0, SCHED_HPC, 5);
	if (!tap_check(r == 0, strerror(-r), "fork: parent fixed at 5"))
		return;
	for (i = 0; i < 3; i++)
		sleep_ms(3);
	r = in_child(child_report);
	tap_ok(r == 0 && R->sched == SCHED_HPC && R->param == 5,
	       "fork: child inherits SCHED_HPC (%d) and the fixed priority 5 (%d)", R->sched,
	       R->param);
	tap_check(R->stat_rc == 0 && R->st.hpc == 1 && R->st.v[HS_FIXED_PRIO] == 5 &&
			  R->st.v[HS_PRIO] == 5 && R->st.v[HS_ITERATIONS] == 0,
		  R->st.err,
		  "fork: child's /proc: fixed_prio %lld, prio %lld, iterations %lld (want 5, 5, 0)",
		  R->st.v[HS_FIXED_PRIO], R->st.v[HS_PRIO], R->st.v[HS_ITERATIONS]);

	r = set_policy(0, SCHED_HPC | SCHED_RESET_ON_FORK, 6);
	tap_check(r == 0, strerror(-r), "fork: parent fixed at 6 with SCHED_RESET_ON_FORK");
	r = in_child(child_report);
	tap_check(r == 0 && R->sched == SCHED_OTHER && R->param == 0 && R->stat_rc == 0 &&
			  R->st.hpc == 0,
		  R->st.err,
		  "reset-on-fork: child is SCHED_OTHER (%d), priority 0 (%d), /proc policy: other",
		  R->sched, R->param);
	self_is(SCHED_HPC, 6, "reset-on-fork: the parent keeps its fixed 6");
	set_other(0);
}

int main(void)
{
	tap_init("24-fixed-prio");
	watchdog(120);
	if (!require_hpc())
		return tap_done();
	if (!tap_ok(read_range(), "prio_range readable: %d %d", pmin, pmax))
		return tap_done();
	T = shared_alloc(2 * sizeof(*T));
	R = shared_alloc(sizeof(*R));
	test_range();
	test_pair();
	test_permissions();
	test_fork();
	set_other(0);
	tap_ok(knobs_restore() == 0, "knobs restored");
	kill_children();
	return tap_done();
}
