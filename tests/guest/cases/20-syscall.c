// SPDX-License-Identifier: GPL-2.0
/*
 * 20-syscall: the SCHED_HPC system-call ABI.
 *
 * sched_setscheduler / sched_getscheduler / sched_setattr / sched_getattr
 * with SCHED_HPC (8), sched_get_priority_min/max (0 .. the backend's highest
 * priority), EINVAL for a priority outside it and bad attributes, EPERM for an unprivileged user without
 * RLIMIT_RTPRIO and success with it, SCHED_RESET_ON_FORK, inheritance over
 * fork with fresh iteration state, leaving the class, exit of HPC tasks.
 * Fixed priorities (sched_priority 1..N) are 24-fixed-prio's.
 */
#include "hpctest.h"

/* What the children saw, in shared memory. */
struct res {
	int sched;		/* sched_getscheduler(0) */
	int nice;		/* getpriority() */
	int hpc_line;		/* /proc/self/sched_hpc: 1 hpc, 0 other, -1 bad */
	long long iterations;
	int err[8];		/* return values (0 or errno) of the steps */
	char why[160];
};

static struct res *R;

static int proc_policy_line(pid_t pid, struct hpc_stat *st)
{
	int r = hpc_stat_read(pid, st);

	if (r)
		return -1;
	return st->hpc;
}

/* Run @fn in a child, wait for it (5 s max); returns its exit status. */
static int in_child(void (*fn)(void))
{
	memset(R, 0, sizeof(*R));
	return run_in_child(fn, 5000);
}

static void child_report_self(void)
{
	struct hpc_stat st;

	R->sched = sched_getscheduler(0);
	errno = 0;
	R->nice = getpriority(PRIO_PROCESS, 0);
	R->hpc_line = proc_policy_line(0, &st);
	R->iterations = st.v[HS_ITERATIONS];
	snprintf(R->why, sizeof(R->why), "%s", st.err);
}

static void drop_privileges(void)
{
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(90);
	if (geteuid() != 65534)
		_exit(91);
}

static void child_unpriv_norlimit(void)
{
	struct rlimit rl = { 0, 0 };
	struct hpc_sched_attr a;

	if (setrlimit(RLIMIT_RTPRIO, &rl))
		_exit(92);
	drop_privileges();
	R->err[0] = -set_hpc(0);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_HPC;
	R->err[1] = sys_sched_setattr(0, &a, 0) ? errno : 0;
	R->err[2] = -set_hpc(getppid());	/* a root-owned task */
	R->sched = sched_getscheduler(0);
}

static void child_unpriv_rlimit(void)
{
	struct rlimit rl = { 1, 1 };

	if (setrlimit(RLIMIT_RTPRIO, &rl))
		_exit(92);
	drop_privileges();
	R->err[0] = -set_hpc(0);
	R->sched = sched_getscheduler(0);
	R->err[1] = -set_other(0);
	R->err[2] = sched_getscheduler(0);
}

/* Root makes itself HPC, then drops everything and leaves the class. */
static void child_unpriv_leave(void)
{
	struct rlimit rl = { 0, 0 };

	if (set_hpc(0))
		_exit(93);
	if (setrlimit(RLIMIT_RTPRIO, &rl))
		_exit(92);
	drop_privileges();
	R->err[0] = -set_other(0);
	R->sched = sched_getscheduler(0);
	R->err[1] = -set_hpc(0);
}

static void child_inherit(void)
{
	child_report_self();
}

static void *thread_spin(void *arg)
{
	(void)arg;
	for (;;)
		work_units(1);
	return NULL;
}

/* An HPC process with spinning HPC threads that exits from main. */
static void child_threads_exit(void)
{
	pthread_t t[3];
	int i;

	if (set_hpc(0))
		_exit(93);
	for (i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, thread_spin, NULL))
			_exit(94);
	sleep_ms(100);
	exit(0);
}

/* The highest priority of the backend: "MIN MAX" of prio_range. */
static int prio_max(void)
{
	char buf[32];
	int lo, hi;

	if (knob_read("prio_range", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%d %d", &lo, &hi) != 2)
		return -1;
	return hi;
}

static void test_prio_range(void)
{
	int r, max = prio_max();

	errno = 0;
	r = sched_get_priority_min(SCHED_HPC);
	tap_check(r == 0, strerror(errno), "sched_get_priority_min(SCHED_HPC) == 0 (got %d)", r);
	errno = 0;
	r = sched_get_priority_max(SCHED_HPC);
	tap_check(r == max && max > 0, strerror(errno),
		  "sched_get_priority_max(SCHED_HPC) == prio_range's max %d (got %d)", max, r);
	errno = 0;
	r = sched_get_priority_max(9);
	tap_ok(r == -1 && errno == EINVAL,
	       "sched_get_priority_max(9) fails with EINVAL (policy 9 does not exist)");
}

static void test_einval(void)
{
	struct hpc_sched_attr a;
	int r, max = prio_max();

	r = set_policy(0, SCHED_HPC, max + 1);
	tap_check(r == -EINVAL, strerror(-r), "sched_setscheduler(SCHED_HPC, prio %d): EINVAL",
		  max + 1);
	r = set_policy(0, SCHED_HPC, 99);
	tap_check(r == -EINVAL, strerror(-r), "sched_setscheduler(SCHED_HPC, prio 99): EINVAL");
	r = set_policy(0, SCHED_HPC, -1);
	tap_check(r == -EINVAL, strerror(-r), "sched_setscheduler(SCHED_HPC, prio -1): EINVAL");

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_HPC;
	a.sched_priority = max + 1;
	r = sys_sched_setattr(0, &a, 0) ? errno : 0;
	tap_check(r == EINVAL, strerror(r), "sched_setattr(SCHED_HPC, sched_priority %d): EINVAL",
		  max + 1);

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_HPC;
	a.sched_flags = 1ULL << 40;	/* no such flag */
	r = sys_sched_setattr(0, &a, 0) ? errno : 0;
	tap_check(r == EINVAL, strerror(r), "sched_setattr(SCHED_HPC, unknown sched_flags): EINVAL");

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_HPC;
	r = sys_sched_setattr(0, &a, 1) ? errno : 0;	/* flags must be 0 */
	tap_check(r == EINVAL, strerror(r), "sched_setattr(SCHED_HPC, syscall flags 1): EINVAL");

	r = sched_getscheduler(0);
	tap_ok(r == SCHED_OTHER, "policy unchanged (SCHED_OTHER) after the rejected calls (got %d)", r);
}

static void test_set_get(void)
{
	struct hpc_sched_attr a;
	struct sched_param sp;
	struct hpc_stat st;
	int r;

	r = set_hpc(0);
	tap_check(r == 0, strerror(-r), "sched_setscheduler(0, SCHED_HPC, 0) succeeds");
	r = sched_getscheduler(0);
	tap_ok(r == SCHED_HPC, "sched_getscheduler() == SCHED_HPC (got %d)", r);
	sp.sched_priority = -1;
	r = sched_getparam(0, &sp);
	tap_ok(r == 0 && sp.sched_priority == 0, "sched_getparam(): priority 0 (got %d)",
	       sp.sched_priority);

	memset(&a, 0xff, sizeof(a));
	r = sys_sched_getattr(0, &a, sizeof(a), 0) ? errno : 0;
	tap_check(r == 0 && a.sched_policy == SCHED_HPC && a.sched_priority == 0 &&
		  a.sched_flags == 0, strerror(r),
		  "sched_getattr(): policy %u (want 8), priority %u, flags %#llx",
		  a.sched_policy, a.sched_priority, (unsigned long long)a.sched_flags);

	r = hpc_stat_read(0, &st);
	tap_check(r == 0 && st.hpc == 1, st.err, "/proc/self/sched_hpc says policy: hpc");
	if (r == 0)
		tap_ok(st.v[HS_ITERATIONS] == 0 && st.v[HS_PRIO] == 4,
		       "fresh HPC task: iterations 0 (got %lld), prio 4 (got %lld)",
		       st.v[HS_ITERATIONS], st.v[HS_PRIO]);

	/* Leave through sched_setattr(), come back through it. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = SCHED_OTHER;
	r = sys_sched_setattr(0, &a, 0) ? errno : 0;
	tap_check(r == 0 && sched_getscheduler(0) == SCHED_OTHER, strerror(r),
		  "sched_setattr(SCHED_OTHER) leaves the class");
	r = hpc_stat_read(0, &st);
	tap_check(r == 0 && st.hpc == 0, st.err,
		  "/proc/self/sched_hpc: only \"policy: other\" after leaving");
	a.sched_policy = SCHED_HPC;
	r = sys_sched_setattr(0, &a, 0) ? errno : 0;
	tap_check(r == 0 && sched_getscheduler(0) == SCHED_HPC, strerror(r),
		  "sched_setattr(SCHED_HPC) enters the class");
	r = set_other(0);
	tap_check(r == 0 && sched_getscheduler(0) == SCHED_OTHER, strerror(-r),
		  "sched_setscheduler(SCHED_OTHER) leaves the class");
	r = hpc_stat_read(0, &st);
	tap_check(r == 0 && st.hpc == 0, st.err, "/proc/self/sched_hpc: policy: other again");
}

static void test_fork(void)
{
	struct hpc_stat st;
	int r, i;

	/* Inheritance: the parent has history, the child starts fresh. */
	r = set_hpc(0);
	if (!tap_check(r == 0, strerror(-r), "fork: parent becomes SCHED_HPC"))
		return;
	for (i = 0; i < 3; i++)
		sleep_ms(3);
	r = hpc_stat_read(0, &st);
	tap_check(r == 0 && st.v[HS_ITERATIONS] >= 2, st.err,
		  "fork: parent closed iterations by sleeping (%lld, want 3)",
		  st.v[HS_ITERATIONS]);
	r = in_child(child_inherit);
	tap_ok(r == 0 && R->sched == SCHED_HPC,
	       "fork: child inherits SCHED_HPC (got policy %d, status %d)", R->sched, r);
	tap_check(R->hpc_line == 1 && R->iterations == 0, R->why,
		  "fork: child has fresh state (policy hpc, iterations %lld, want 0)",
		  R->iterations);

	/* SCHED_RESET_ON_FORK through sched_setscheduler(), from nice -5. */
	set_other(0);
	r = setpriority(PRIO_PROCESS, 0, -5) ? -errno : 0;
	tap_check(r == 0, strerror(-r), "reset-on-fork: parent at nice -5 first");
	r = set_policy(0, SCHED_HPC | SCHED_RESET_ON_FORK, 0);
	tap_check(r == 0, strerror(-r), "sched_setscheduler(SCHED_HPC | SCHED_RESET_ON_FORK)");
	r = sched_getscheduler(0);
	tap_ok(r == (SCHED_HPC | SCHED_RESET_ON_FORK),
	       "sched_getscheduler() == SCHED_HPC | SCHED_RESET_ON_FORK (got %#x)", r);
	r = in_child(child_inherit);
	tap_ok(r == 0 && R->sched == SCHED_OTHER && R->nice == 0,
	       "reset-on-fork: child is SCHED_OTHER (got %d) at nice 0 (got %d)",
	       R->sched, R->nice);
	tap_check(R->hpc_line == 0, R->why, "reset-on-fork: child's /proc says policy: other");

	/* Same through sched_setattr(SCHED_FLAG_RESET_ON_FORK). */
	set_other(0);
	setpriority(PRIO_PROCESS, 0, 0);
	{
		struct hpc_sched_attr a;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.sched_policy = SCHED_HPC;
		a.sched_flags = HPC_SCHED_FLAG_RESET_ON_FORK;
		r = sys_sched_setattr(0, &a, 0) ? errno : 0;
		tap_check(r == 0, strerror(r), "sched_setattr(SCHED_HPC, SCHED_FLAG_RESET_ON_FORK)");
		memset(&a, 0, sizeof(a));
		r = sys_sched_getattr(0, &a, sizeof(a), 0) ? errno : 0;
		tap_ok(r == 0 && a.sched_policy == SCHED_HPC &&
		       (a.sched_flags & HPC_SCHED_FLAG_RESET_ON_FORK),
		       "sched_getattr(): SCHED_HPC with the reset-on-fork flag (flags %#llx)",
		       (unsigned long long)a.sched_flags);
	}
	r = in_child(child_inherit);
	tap_ok(r == 0 && R->sched == SCHED_OTHER,
	       "setattr reset-on-fork: child is SCHED_OTHER (got %d)", R->sched);
	set_other(0);
	setpriority(PRIO_PROCESS, 0, 0);
}

static void test_other_task_and_exit(void)
{
	struct hpc_stat st;
	int p[2], r, status = 0;
	pid_t pid;
	char c;

	/* Set another (sleeping) process to SCHED_HPC, let it run and exit. */
	if (pipe(p))
		return;
	pid = fork_kid();
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(5);
		work_units(100);
		_exit(sched_getscheduler(0) == SCHED_HPC ? 0 : 6);
	}
	close(p[0]);
	r = set_hpc(pid);
	tap_check(r == 0, strerror(-r), "sched_setscheduler(child pid, SCHED_HPC)");
	r = sched_getscheduler(pid);
	tap_ok(r == SCHED_HPC, "sched_getscheduler(child pid) == SCHED_HPC (got %d)", r);
	r = hpc_stat_read(pid, &st);
	tap_check(r == 0 && st.hpc == 1, st.err, "/proc/<child>/sched_hpc says policy: hpc");
	if (write(p[1], "g", 1) != 1)
		tap_diag("write: %s", strerror(errno));
	close(p[1]);
	r = wait_timeout(pid, &status, 5000) == pid;
	tap_ok(r && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "HPC child runs, sees SCHED_HPC and exits normally (status %#x)", status);

	/* An HPC process whose HPC threads spin exits cleanly. */
	r = in_child(child_threads_exit);
	tap_ok(r == 0, "multi-threaded HPC process exits while its threads spin (status %d)", r);

	/* An HPC task killed by a signal while it spins. */
	{
		struct spin *s = shared_alloc(sizeof(*s));

		pid = spin_start(s, -1, SCHED_HPC, 0, 10);
		if (tap_check(pid > 0, strerror(pid > 0 ? 0 : (int)-pid),
			      "start a spinning HPC task")) {
			spin_wait_started(s, 3000);
			kill(pid, SIGKILL);
			r = wait_timeout(pid, &status, 5000) == pid;
			tap_ok(r && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			       "spinning HPC task killed by SIGKILL is reaped");
		}
	}
}

static void test_permissions(void)
{
	int r;

	r = in_child(child_unpriv_norlimit);
	tap_check(r == 0, "child setup failed", "unprivileged child ran (status %d)", r);
	tap_ok(R->err[0] == EPERM,
	       "unprivileged, RLIMIT_RTPRIO 0: sched_setscheduler(SCHED_HPC) EPERM (got %s)",
	       strerror(R->err[0]));
	tap_ok(R->err[1] == EPERM,
	       "unprivileged, RLIMIT_RTPRIO 0: sched_setattr(SCHED_HPC) EPERM (got %s)",
	       strerror(R->err[1]));
	tap_ok(R->err[2] == EPERM,
	       "unprivileged: SCHED_HPC on a root-owned task EPERM (got %s)",
	       strerror(R->err[2]));
	tap_ok(R->sched == SCHED_OTHER, "unprivileged: still SCHED_OTHER after EPERM (got %d)",
	       R->sched);

	r = in_child(child_unpriv_rlimit);
	tap_ok(r == 0 && R->err[0] == 0 && R->sched == SCHED_HPC,
	       "unprivileged, RLIMIT_RTPRIO 1: sched_setscheduler(SCHED_HPC) succeeds (%s, policy %d)",
	       strerror(R->err[0]), R->sched);
	tap_ok(R->err[1] == 0 && R->err[2] == SCHED_OTHER,
	       "unprivileged, RLIMIT_RTPRIO 1: can leave to SCHED_OTHER (%s, policy %d)",
	       strerror(R->err[1]), R->err[2]);

	r = in_child(child_unpriv_leave);
	tap_ok(r == 0 && R->err[0] == 0 && R->sched == SCHED_OTHER,
	       "unprivileged HPC task without RLIMIT_RTPRIO can leave to SCHED_OTHER (%s, status %d)",
	       strerror(R->err[0]), r);
	tap_ok(R->err[1] == EPERM, "... and cannot come back (got %s)", strerror(R->err[1]));
}

int main(void)
{
	tap_init("20-syscall");
	watchdog(60);
	if (!require_hpc())
		return tap_done();
	R = shared_alloc(sizeof(*R));
	test_prio_range();
	test_einval();
	test_set_get();
	test_fork();
	test_other_task_and_exit();
	test_permissions();
	set_other(0);
	kill_children();
	return tap_done();
}
