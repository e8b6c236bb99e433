/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wakemix: three measurements of a scheduling policy (not a test case).
 *
 * Used by the guest case 32-wakeup-mix (SCHED_HPC) and by the CLI
 * sched_ext/tests/scx_wakemix.c (the scx guest case 61-scx-wakeup-mix, and
 * by hand on any host with policy 0). libc only: it includes neither
 * hpctest.h nor tap.h, and every name is prefixed wm_ / WM_ so that a case
 * may include both.
 *
 *   wm_probe()      NBUSY busy loops (+ a continuous hackbench load of G
 *                   groups) and one probe task that sleeps 1 ms in a loop;
 *                   the probe's lateness (actual - requested wake time).
 *   wm_hackbench()  hackbench-like messaging: G groups of 10 senders and 10
 *                   receivers (processes, AF_UNIX stream socketpairs), each
 *                   sender sends L 100-byte messages to each receiver of its
 *                   group; the wall time from the release to the last exit.
 *   wm_shares()     N identical busy loops: the CPU time (and the loop
 *                   count) each got over the same interval; optionally
 *                   N-1 on CPU 0 and 1 on CPU 1 for 100 ms, then unpinned.
 *
 * Every measured task is a process of its own and sets itself to the policy
 * (sched_setscheduler, priority 0) before a common release: the tasks of a
 * run are forked, set up, report through a "ready" pipe, and block on a
 * "go" pipe that the caller closes once all of them sleep there (EOF
 * releases all of them at once).
 * The tasks of a timed run stop by themselves at an absolute deadline, and
 * sample their own CPU time, so that a caller starved by the policy under
 * test cannot skew what is measured.
 *
 * Clean-up: every child dies with its parent (PR_SET_PDEATHSIG) and has
 * its own time limit; the caller reaps every child on every path, kills
 * what is left at a deadline, and wm_kill_kids() (async-signal-safe, for a
 * signal handler or a watchdog) kills and reaps the current run's children.
 * The hackbench load of wm_probe() runs under a driver process that leads
 * its own process group, so that killing the group ends the whole load.
 *
 * Return values of the wm_* runs: WM_OK, WM_FAIL (a child failed or timed
 * out), WM_EPOLICY (the policy or the affinity could not be set); @err then
 * says why.
 */
#ifndef HPCSCHED_WAKEMIX_H
#define HPCSCHED_WAKEMIX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_EXT
#define SCHED_EXT		7
#endif

#define WM_OK			0
#define WM_FAIL			1
#define WM_EPOLICY		2

#define WM_MAX_GROUPS		32	/* hackbench groups */
#define WM_MAX_BUSY		64	/* busy loops of probe and shares */
#define WM_SKEW_MS		100	/* shares: pinned so long after a skewed start */
#define WM_GROUP_FDS		10	/* senders and receivers per group */
#define WM_MSG_SIZE		100	/* bytes per message */
#define WM_MAX_POOL		(WM_MAX_GROUPS * 2 * WM_GROUP_FDS + WM_MAX_BUSY + 2)
#define WM_MAX_SECS		3600
#define WM_SETUP_MS		30000	/* fork + set-up of a run, at most */
#define WM_GRACE_MS		30000	/* a timed task's exit after its deadline */
#define WM_SETTLE_MS		2000	/* reported children: until all sleep */

/* Exit statuses of the children. */
#define WM_EXIT_SETUP		3	/* policy or affinity failed (reported) */
#define WM_EXIT_ORPHAN		4	/* parent gone before the set-up */
#define WM_EXIT_IO		5	/* a hackbench read/write failed */

/* ------------------------------------------------------------------ time */

static inline uint64_t wm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t wm_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline struct timespec wm_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	return ts;
}

static inline void wm_sleep_until(uint64_t t)
{
	struct timespec ts = wm_ts(t);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ------------------------------------------------------------------ work */

/* The fixed work unit of the busy loops: 256 xorshift steps (~0.3 us). */
static inline uint64_t wm_work(uint64_t x)
{
	int i;

	for (i = 0; i < 256; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/* ------------------------------------------------------------- processes */

/*
 * The children of one run. @ready: each child writes 2 bytes (a code and
 * its errno) once set up; @go: closed by the parent to release them.
 */
struct wm_pool {
	pid_t pid[WM_MAX_POOL];
	unsigned char lead[WM_MAX_POOL];	/* leads a process group */
	int n;
	int ready[2];
	int go[2];
	sigset_t oldmask;
};

/* The run in progress in this process, for wm_kill_kids(). */
static struct wm_pool *volatile wm_cur_pool;

/* SIGKILL (with its process group, if it leads one) and reap child @i. */
static inline void wm_pool_kill_one(struct wm_pool *p, int i)
{
	pid_t pid = p->pid[i];

	if (pid <= 0)
		return;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->pid[i] = 0;
}

/*
 * Kill and reap every child of the current run. Async-signal-safe. A child
 * that leads a process group (the hackbench driver) gets SIGTERM first, so
 * that it kills and reaps its own children; SIGKILL after 2 s.
 */
static inline void wm_kill_kids(void)
{
	struct wm_pool *p = wm_cur_pool;
	struct timespec ts = { 0, 10000000 };
	int i, n, left;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		if (p->pid[i] > 0)
			kill(p->pid[i], p->lead[i] ? SIGTERM : SIGKILL);
	for (n = 0; n < 200; n++) {
		left = 0;
		for (i = 0; i < p->n; i++)
			if (p->pid[i] > 0 && p->lead[i]) {
				if (waitpid(p->pid[i], NULL, WNOHANG) == 0)
					left++;
				else
					p->pid[i] = 0;
			}
		if (!left)
			break;
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < p->n; i++)
		wm_pool_kill_one(p, i);
}

/* --------------------------------------------------------------- signals */

/* A fatal signal: kill and reap the run's children, then die of it. */
static inline void wm_fatal_signal(int sig)
{
	sigset_t s;

	wm_kill_kids();
	signal(sig, SIG_DFL);
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* For a program of its own (the CLI): clean up on SIGTERM, INT, HUP, ALRM. */
static inline void wm_catch_signals(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGALRM };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wm_fatal_signal;
	sigfillset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static inline int wm_pool_init(struct wm_pool *p)
{
	sigset_t chld;

	memset(p, 0, sizeof(*p));
	p->ready[0] = p->ready[1] = p->go[0] = p->go[1] = -1;
	if (pipe(p->ready) || pipe(p->go))
		return -errno;
	/* SIGCHLD: blocked and caught by sigtimedwait() in wm_pool_wait() */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &p->oldmask);
	wm_cur_pool = p;
	return 0;
}

static inline void wm_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Kill and reap what is left, close the pipes, restore the signal mask. */
static inline void wm_pool_end(struct wm_pool *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		wm_pool_kill_one(p, i);
	wm_close(&p->ready[0]);
	wm_close(&p->ready[1]);
	wm_close(&p->go[0]);
	wm_close(&p->go[1]);
	if (wm_cur_pool == p)
		wm_cur_pool = NULL;
	sigprocmask(SIG_SETMASK, &p->oldmask, NULL);
}

/*
 * Fork a child of @p: it sets itself to @policy (priority 0) and, if @cpu
 * >= 0, pins itself to @cpu; with @group it leads a process group of its
 * own. Returns 0 in the child, after the release; the pid (> 0) or -errno
 * in the parent.
 */
static inline pid_t wm_spawn(struct wm_pool *p, int policy, int cpu, int group)
{
	struct sched_param sp = { .sched_priority = 0 };
	unsigned char msg[2] = { 'r', 0 };
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	char c;

	if (p->n >= WM_MAX_POOL)
		return -EMFILE;
	fflush(stdout);
	fflush(stderr);
	/* no signal handler between the fork and the registration of the child */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid < 0) {
		pid = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return pid;
	}
	if (pid > 0) {
		if (group)
			setpgid(pid, pid);
		p->lead[p->n] = (unsigned char)!!group;
		p->pid[p->n++] = pid;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return pid;
	}
	wm_cur_pool = NULL;
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	alarm(0);
	if (group) {
		/* a leader cleans up its own children, also when its parent dies */
		setpgid(0, 0);
		wm_catch_signals();
	}
	prctl(PR_SET_PDEATHSIG, group ? SIGTERM : SIGKILL);
	if (getppid() != parent)
		_exit(WM_EXIT_ORPHAN);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	close(p->ready[0]);
	close(p->go[1]);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			msg[0] = 'c';
			msg[1] = (unsigned char)errno;
		}
	}
	if (msg[0] == 'r' && sched_setscheduler(0, policy, &sp)) {
		msg[0] = 'p';
		msg[1] = (unsigned char)errno;
	}
	if (write(p->ready[1], msg, 2) != 2 || msg[0] != 'r')
		_exit(WM_EXIT_SETUP);
	close(p->ready[1]);
	while (read(p->go[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p->go[0]);
	return 0;
}

/* The state letter of task @pid (/proc/<pid>/stat), or 0 if unknown. */
static inline char wm_task_state(pid_t pid)
{
	char path[48], buf[512], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

/*
 * Wait (@ms at most) until every child of @p has been seen asleep twice in
 * a row: after its report it only blocks reading the go pipe. Released
 * then, every task wakes from the same wait, as ranks do from a barrier. A
 * child still busy with its set-up at the release would start with a
 * compute phase its siblings spent waiting, which the policy rightly takes
 * for an imbalance.
 */
static inline void wm_pool_settle(const struct wm_pool *p, unsigned int ms)
{
	uint64_t end = wm_now() + (uint64_t)ms * 1000000ULL;
	int calm = 0, i, all;

	while (calm < 2 && wm_now() < end) {
		for (i = 0, all = 1; i < p->n && all; i++)
			all = wm_task_state(p->pid[i]) == 'S';
		calm = all ? calm + 1 : 0;
		if (calm < 2)
			usleep(1000);
	}
}

/*
 * Wait until every child of @p reported its set-up (@ms at most), and
 * sleeps at the go pipe (wm_pool_settle(), WM_SETTLE_MS at most). WM_OK,
 * WM_EPOLICY (a child could not set the policy or the affinity) or WM_FAIL.
 */
static inline int wm_pool_ready(struct wm_pool *p, int policy, unsigned int ms,
				char *err, size_t len)
{
	uint64_t end = wm_now() + (uint64_t)ms * 1000000ULL;
	unsigned char msg[2];
	size_t want = (size_t)p->n * 2, got = 0;
	struct pollfd pfd;
	ssize_t r;
	int to;

	wm_close(&p->ready[1]);
	while (got < want) {
		uint64_t now = wm_now();

		if (now >= end) {
			snprintf(err, len, "%zu of %d children set up in %u ms", got / 2, p->n, ms);
			return WM_FAIL;
		}
		to = (int)((end - now) / 1000000ULL) + 1;
		pfd.fd = p->ready[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, to) < 0 && errno != EINTR) {
			snprintf(err, len, "poll: %s", strerror(errno));
			return WM_FAIL;
		}
		r = read(p->ready[0], msg, 2);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r == 1)	/* 2 bytes < PIPE_BUF: written at once, read at once */
			r = -1;
		if (r <= 0) {
			snprintf(err, len, "a child died during its set-up (%zu of %d ready)",
				 got / 2, p->n);
			return WM_FAIL;
		}
		if (msg[0] == 'p') {
			snprintf(err, len, "sched_setscheduler(policy %d, priority 0): %s%s",
				 policy, strerror(msg[1]), msg[1] == EINVAL ?
				 " (policy not in this kernel, or it takes no priority 0?)" : "");
			return WM_EPOLICY;
		}
		if (msg[0] == 'c') {
			snprintf(err, len, "sched_setaffinity: %s", strerror(msg[1]));
			return WM_EPOLICY;
		}
		got += 2;
	}
	wm_pool_settle(p, WM_SETTLE_MS);
	return WM_OK;
}

/* Release every child of @p (they block reading the go pipe). */
static inline void wm_pool_go(struct wm_pool *p)
{
	wm_close(&p->go[1]);
}

/*
 * Reap the children of @p until all exited or @deadline (CLOCK_MONOTONIC
 * ns); then kill the rest. Returns how many exited with a non-zero status
 * or by a signal of their own; *@killed: how many were killed at the
 * deadline.
 */
static inline int wm_pool_wait(struct wm_pool *p, uint64_t deadline, int *killed)
{
	int i, st, left, bad = 0;
	struct timespec ts;
	uint64_t now;
	sigset_t chld;
	pid_t r;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		left = 0;
		for (i = 0; i < p->n; i++) {
			if (p->pid[i] <= 0)
				continue;
			r = waitpid(p->pid[i], &st, WNOHANG);
			if (r == 0 || (r < 0 && errno == EINTR)) {
				left++;
				continue;
			}
			if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad++;
			p->pid[i] = 0;
		}
		now = wm_now();
		if (!left || now >= deadline)
			break;
		/* at most 1 s: a lost wake-up only delays */
		ts = wm_ts(deadline - now < 1000000000ULL ? deadline - now : 1000000000ULL);
		sigtimedwait(&chld, NULL, &ts);
	}
	*killed = left;
	for (i = 0; i < p->n; i++)
		wm_pool_kill_one(p, i);
	return bad;
}

static inline void *wm_shared(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static inline int wm_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/* ------------------------------------------------------------- hackbench */

static inline int wm_write_all(int fd, const char *b, size_t len)
{
	ssize_t r;

	while (len) {
		r = write(fd, b, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		len -= (size_t)r;
	}
	return 0;
}

/* A receiver: reads @bytes from @fd, then exits. */
static inline void wm_receiver(int fd, size_t bytes)
{
	char buf[WM_MSG_SIZE * 10];
	ssize_t r;

	while (bytes) {
		r = read(fd, buf, bytes < sizeof(buf) ? bytes : sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(WM_EXIT_IO);
		bytes -= (size_t)r;
	}
	_exit(0);
}

/* A sender: @loops times, one message to each of the group's receivers. */
static inline void wm_sender(const int *out, int loops)
{
	char msg[WM_MSG_SIZE];
	int i, j;

	memset(msg, 'm', sizeof(msg));
	for (i = 0; i < loops; i++)
		for (j = 0; j < WM_GROUP_FDS; j++)
			if (wm_write_all(out[j], msg, sizeof(msg)))
				_exit(WM_EXIT_IO);
	_exit(0);
}

/*
 * One hackbench round: @groups groups at @policy, @loops messages per
 * sender and receiver pair. *@secs: the wall time from the release to the
 * last exit. At @deadline the round is killed: *@timed_out = 1 and WM_FAIL.
 */
static inline int wm_hb_round(int policy, int groups, int loops, uint64_t deadline,
			      double *secs, int *timed_out, char *err, size_t len)
{
	int fds[WM_GROUP_FDS][2], out[WM_GROUP_FDS];
	int g, i, j, rc, bad, killed;
	struct wm_pool p;
	uint64_t t0, t1;
	pid_t pid;

	*secs = 0;
	*timed_out = 0;
	if (wm_pool_init(&p)) {
		snprintf(err, len, "pipe: %s", strerror(errno));
		wm_pool_end(&p);
		return WM_FAIL;
	}
	for (g = 0; g < groups; g++) {
		for (i = 0; i < WM_GROUP_FDS; i++)
			fds[i][0] = fds[i][1] = -1;
		for (i = 0; i < WM_GROUP_FDS; i++)
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]))
				goto fail_fds;
		for (i = 0; i < WM_GROUP_FDS; i++) {
			pid = wm_spawn(&p, policy, -1, 0);
			if (pid < 0)
				goto fail_fds;
			if (pid == 0) {
				for (j = 0; j < WM_GROUP_FDS; j++) {
					close(fds[j][1]);
					if (j != i)
						close(fds[j][0]);
				}
				wm_receiver(fds[i][0],
					    (size_t)loops * WM_GROUP_FDS * WM_MSG_SIZE);
			}
		}
		for (i = 0; i < WM_GROUP_FDS; i++) {
			pid = wm_spawn(&p, policy, -1, 0);
			if (pid < 0)
				goto fail_fds;
			if (pid == 0) {
				for (j = 0; j < WM_GROUP_FDS; j++) {
					close(fds[j][0]);
					out[j] = fds[j][1];
				}
				wm_sender(out, loops);
			}
		}
		for (i = 0; i < WM_GROUP_FDS; i++) {
			wm_close(&fds[i][0]);
			wm_close(&fds[i][1]);
		}
	}
	rc = wm_pool_ready(&p, policy, WM_SETUP_MS, err, len);
	if (rc) {
		wm_pool_end(&p);
		return rc;
	}
	t0 = wm_now();
	wm_pool_go(&p);
	bad = wm_pool_wait(&p, deadline, &killed);
	t1 = wm_now();
	wm_pool_end(&p);
	*secs = (double)(t1 - t0) / 1e9;
	if (killed) {
		*timed_out = 1;
		snprintf(err, len, "hackbench round killed at its deadline after %.3f s (%d left)",
			 *secs, killed);
		return WM_FAIL;
	}
	if (bad) {
		snprintf(err, len, "%d hackbench task(s) failed", bad);
		return WM_FAIL;
	}
	return WM_OK;

fail_fds:
	snprintf(err, len, "hackbench set-up: %s", strerror(errno));
	for (i = 0; i < WM_GROUP_FDS; i++) {
		wm_close(&fds[i][0]);
		wm_close(&fds[i][1]);
	}
	wm_pool_end(&p);
	return WM_FAIL;
}

static inline int wm_check_hb_args(int groups, int loops, char *err, size_t len)
{
	if (groups < 1 || groups > WM_MAX_GROUPS || loops < 1 || loops > 1000000) {
		snprintf(err, len, "groups must be 1..%d, loops 1..1000000", WM_MAX_GROUPS);
		return WM_EPOLICY;
	}
	return WM_OK;
}

/*
 * The deadline of a measured hackbench run, killed after it as hung, from
 * the slowest SCHED_OTHER run of the measurement so far (@ref_ms, 0 before
 * the first): 10 x that, at least 60 s; the first run's 120 s. A host's
 * load slows every way alike, and changes within a block of runs
 * (SCHED_OTHER 38.8 s then 7.1 s, the emulation 25.3 s then over 40 s).
 */
#define WM_HB_FIRST_MS		120000U
#define WM_HB_MIN_MS		60000U
#define WM_HB_REF_X		10U

static inline unsigned int wm_hb_timeout_ms(unsigned int ref_ms)
{
	if (!ref_ms)
		return WM_HB_FIRST_MS;
	if (ref_ms > WM_MAX_SECS * 1000U / WM_HB_REF_X)
		return WM_MAX_SECS * 1000U;
	return ref_ms * WM_HB_REF_X > WM_HB_MIN_MS ? ref_ms * WM_HB_REF_X : WM_HB_MIN_MS;
}

/*
 * The hackbench measurement: one round of @groups groups, @loops loops, at
 * @policy, killed after @timeout_ms. *@secs: its wall time.
 */
static inline int wm_hackbench(int policy, int groups, int loops, unsigned int timeout_ms,
			       double *secs, char *err, size_t len)
{
	int to;

	*secs = 0;
	if (wm_check_hb_args(groups, loops, err, len))
		return WM_EPOLICY;
	return wm_hb_round(policy, groups, loops, wm_now() + (uint64_t)timeout_ms * 1000000ULL,
			   secs, &to, err, len);
}

/* ------------------------------------------------------------------ probe */

/* State shared with the children of wm_probe() and wm_shares(). */
struct wm_ctl {
	volatile uint64_t t_end;	/* CLOCK_MONOTONIC ns: the timed tasks stop */
	volatile int stop;		/* stop now */
	volatile int hb_fail;		/* the hackbench driver: a round failed */
	volatile uint64_t hb_rounds;	/* the hackbench driver: rounds completed */
	uint64_t nlate;			/* probe: samples */
	uint64_t cap;			/* probe: room for samples */
	struct {
		volatile uint64_t count;	/* work units done */
		volatile uint64_t cpu_ns;	/* CPU time over the interval */
		volatile int unpin_err;		/* errno of its unpinning (skewed start) */
		char pad[44];
	} task[WM_MAX_BUSY];
	uint64_t late[];		/* probe: lateness of each wake-up, ns */
};

struct wm_probe_cfg {
	int policy;
	int secs;
	int nbusy;	/* busy loops */
	int groups;	/* hackbench groups of the continuous load (0: none) */
	int loops;	/* hackbench loops of each round */
	int pin;	/* pin busy loop i to CPU i % ncpus */
};

struct wm_probe_res {
	uint64_t loops;		/* probe wake-ups */
	uint64_t med_ns, p99_ns, p999_ns, max_ns;
	uint64_t hb_rounds;	/* hackbench rounds completed meanwhile */
};

/* Let the calling task run on every online CPU again; 0 or -errno. */
static inline int wm_unpin(void)
{
	int i, ncpu = wm_ncpus();
	cpu_set_t set;

	CPU_ZERO(&set);
	for (i = 0; i < ncpu && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * A busy loop until the deadline or the stop flag. @unpin_ms > 0: it started
 * pinned, and lets itself run on every CPU after that long.
 */
static inline void wm_busy(struct wm_ctl *c, int i, int unpin_ms)
{
	uint64_t x = 88172645463325252ULL + (uint64_t)i, n = 0, now;
	uint64_t c0 = wm_thread_cpu();
	uint64_t unpin_at = unpin_ms > 0 ? wm_now() + (uint64_t)unpin_ms * 1000000ULL : 0;

	for (;;) {
		x = wm_work(x);
		n++;
		if (n & 255)
			continue;
		now = wm_now();
		if (c->stop || now >= c->t_end)
			break;
		if (unpin_at && now >= unpin_at) {
			unpin_at = 0;
			c->task[i].unpin_err = -wm_unpin();
		}
	}
	c->task[i].count = n;
	c->task[i].cpu_ns = wm_thread_cpu() - c0;
	_exit(x == 0);	/* x never becomes 0: the work is consumed */
}

/* The probe: sleep 1 ms (absolute target), record the lateness of each wake-up. */
static inline void wm_probe_task(struct wm_ctl *c)
{
	uint64_t target, now;

	prctl(PR_SET_TIMERSLACK, 1UL);	/* no timer slack in the lateness */
	now = wm_now();
	while (!c->stop && now < c->t_end && c->nlate < c->cap) {
		target = now + 1000000ULL;
		wm_sleep_until(target);
		now = wm_now();
		c->late[c->nlate++] = now - target;
	}
	_exit(0);
}

/* The continuous hackbench load: rounds until the deadline. */
static inline void wm_hb_driver(struct wm_ctl *c, int policy, int groups, int loops)
{
	char err[256];
	double s;
	int to;

	while (!c->stop && wm_now() < c->t_end) {
		if (wm_hb_round(policy, groups, loops, c->t_end, &s, &to, err, sizeof(err))) {
			if (to)
				break;
			c->hb_fail = 1;
			fprintf(stderr, "wakemix: %s\n", err);
			_exit(1);
		}
		c->hb_rounds++;
	}
	_exit(0);
}

static inline int wm_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Start the children of a timed run and release them; WM_OK or an error. */
static inline int wm_timed_start(struct wm_pool *p, struct wm_ctl *c, int policy, int secs,
				 char *err, size_t len)
{
	int rc = wm_pool_ready(p, policy, WM_SETUP_MS, err, len);

	if (rc)
		return rc;
	c->t_end = wm_now() + (uint64_t)secs * 1000000000ULL;
	__sync_synchronize();
	wm_pool_go(p);
	return WM_OK;
}

/* Reap a timed run (its tasks stop at t_end): WM_OK or WM_FAIL. */
static inline int wm_timed_end(struct wm_pool *p, struct wm_ctl *c, char *err, size_t len)
{
	int bad, killed;

	bad = wm_pool_wait(p, c->t_end + WM_GRACE_MS * 1000000ULL, &killed);
	c->stop = 1;
	if (killed) {
		snprintf(err, len, "%d task(s) still running %d s after the end: killed", killed,
			 WM_GRACE_MS / 1000);
		return WM_FAIL;
	}
	if (bad) {
		snprintf(err, len, "%d task(s) failed", bad);
		return WM_FAIL;
	}
	return WM_OK;
}

/*
 * The probe measurement: @cfg->nbusy busy loops and @cfg->groups hackbench
 * groups (rounds restarted until the end) at @cfg->policy for @cfg->secs,
 * beside a probe task at the policy that sleeps 1 ms in a loop.
 */
static inline int wm_probe(const struct wm_probe_cfg *cfg, struct wm_probe_res *res,
			   char *err, size_t len)
{
	struct wm_pool p;
	struct wm_ctl *c;
	size_t sz;
	uint64_t cap;
	int i, rc, ncpu = wm_ncpus();
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (cfg->secs < 1 || cfg->secs > WM_MAX_SECS || cfg->nbusy < 0 ||
	    cfg->nbusy > WM_MAX_BUSY || cfg->groups < 0 ||
	    (cfg->groups && wm_check_hb_args(cfg->groups, cfg->loops, err, len))) {
		snprintf(err, len, "bad arguments: seconds 1..%d, busy 0..%d, groups 0..%d",
			 WM_MAX_SECS, WM_MAX_BUSY, WM_MAX_GROUPS);
		return WM_EPOLICY;
	}
	cap = (uint64_t)cfg->secs * 1000 + 1000;	/* 1 ms sleeps: fewer wake-ups */
	sz = sizeof(*c) + cap * sizeof(c->late[0]);
	c = wm_shared(sz);
	if (!c) {
		snprintf(err, len, "mmap: %s", strerror(errno));
		return WM_FAIL;
	}
	c->cap = cap;
	c->t_end = UINT64_MAX;
	if (wm_pool_init(&p)) {
		snprintf(err, len, "pipe: %s", strerror(errno));
		rc = WM_FAIL;
		goto out;
	}
	for (i = 0; i < cfg->nbusy; i++) {
		pid = wm_spawn(&p, cfg->policy, cfg->pin ? i % ncpu : -1, 0);
		if (pid == 0)
			wm_busy(c, i, 0);
		if (pid < 0)
			goto fail_fork;
	}
	if (cfg->groups) {
		pid = wm_spawn(&p, cfg->policy, -1, 1);
		if (pid == 0)
			wm_hb_driver(c, cfg->policy, cfg->groups, cfg->loops);
		if (pid < 0)
			goto fail_fork;
	}
	pid = wm_spawn(&p, cfg->policy, -1, 0);
	if (pid == 0)
		wm_probe_task(c);
	if (pid < 0)
		goto fail_fork;
	rc = wm_timed_start(&p, c, cfg->policy, cfg->secs, err, len);
	if (!rc)
		rc = wm_timed_end(&p, c, err, len);
	wm_pool_end(&p);
	res->hb_rounds = c->hb_rounds;
	if (!rc && !c->nlate) {
		snprintf(err, len, "the probe never woke up");
		rc = WM_FAIL;
	}
	if (!rc) {
		qsort(c->late, c->nlate, sizeof(c->late[0]), wm_cmp_u64);
		res->loops = c->nlate;
		res->med_ns = c->late[c->nlate / 2];
		res->p99_ns = c->late[c->nlate * 99 / 100];
		res->p999_ns = c->late[c->nlate * 999 / 1000];
		res->max_ns = c->late[c->nlate - 1];
	}
	goto out;

fail_fork:
	snprintf(err, len, "fork: %s", strerror(-pid));
	wm_pool_end(&p);
	rc = WM_FAIL;
out:
	munmap(c, sz);
	return rc;
}

static inline void wm_probe_print(FILE *f, const struct wm_probe_res *r)
{
	fprintf(f, "probe_loops=%llu\nprobe_late_med_us=%llu\nprobe_late_p99_us=%llu\n"
		"probe_late_p999_us=%llu\nprobe_late_max_us=%llu\nprobe_hackbench_rounds=%llu\n",
		(unsigned long long)r->loops, (unsigned long long)(r->med_ns / 1000),
		(unsigned long long)(r->p99_ns / 1000), (unsigned long long)(r->p999_ns / 1000),
		(unsigned long long)(r->max_ns / 1000),
		(unsigned long long)r->hb_rounds);
}

/* ----------------------------------------------------------------- shares */

struct wm_shares_res {
	int n;
	pid_t pid[WM_MAX_BUSY];		/* of each busy loop */
	uint64_t count[WM_MAX_BUSY];	/* work units done */
	uint64_t cpu_ns[WM_MAX_BUSY];	/* CPU time (CLOCK_THREAD_CPUTIME_ID) */
	uint64_t wall_ns;		/* the interval */
	uint64_t cpu_min, cpu_max, count_min, count_max;
	double ratio;			/* cpu_max / cpu_min (1e6 if cpu_min is 0) */
	double count_ratio;		/* count_max / count_min (likewise) */
};

static inline double wm_ratio(uint64_t max, uint64_t min)
{
	return min ? (double)max / (double)min : 1e6;
}

/*
 * The shares measurement: @n identical busy loops at @policy for @secs.
 * Each samples its own CPU time from its release to its first run after
 * the deadline. @skew: all but the last run on CPU 0 and the last on CPU 1
 * (3 : 1 for 4 tasks) for the first WM_SKEW_MS, then each unpins itself:
 * tasks that never sleep wake nowhere, so only the scheduler's balancing of
 * the task counts can even them out. Otherwise unpinned from the start.
 */
static inline int wm_shares(int policy, int secs, int n, int skew, struct wm_shares_res *res,
			    char *err, size_t len)
{
	struct wm_pool p;
	struct wm_ctl *c;
	uint64_t t0;
	int i, rc;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (secs < 1 || secs > WM_MAX_SECS || n < 1 || n > WM_MAX_BUSY) {
		snprintf(err, len, "bad arguments: seconds 1..%d, tasks 1..%d", WM_MAX_SECS,
			 WM_MAX_BUSY);
		return WM_EPOLICY;
	}
	if (skew && (n < 2 || wm_ncpus() < 2)) {
		snprintf(err, len, "a skewed start needs 2 tasks and 2 CPUs (%d tasks, %d CPUs)",
			 n, wm_ncpus());
		return WM_EPOLICY;
	}
	c = wm_shared(sizeof(*c));
	if (!c) {
		snprintf(err, len, "mmap: %s", strerror(errno));
		return WM_FAIL;
	}
	c->t_end = UINT64_MAX;
	if (wm_pool_init(&p)) {
		snprintf(err, len, "pipe: %s", strerror(errno));
		rc = WM_FAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		pid = wm_spawn(&p, policy, skew ? i == n - 1 : -1, 0);
		if (pid == 0)
			wm_busy(c, i, skew ? WM_SKEW_MS : 0);
		res->pid[i] = pid;
		if (pid < 0) {
			snprintf(err, len, "fork: %s", strerror(-pid));
			wm_pool_end(&p);
			rc = WM_FAIL;
			goto out;
		}
	}
	t0 = wm_now();
	rc = wm_timed_start(&p, c, policy, secs, err, len);
	if (!rc) {
		t0 = c->t_end - (uint64_t)secs * 1000000000ULL;
		rc = wm_timed_end(&p, c, err, len);
	}
	wm_pool_end(&p);
	if (rc)
		goto out;
	for (i = 0; i < n; i++) {
		if (c->task[i].unpin_err) {
			snprintf(err, len, "task %d: sched_setaffinity: %s", i,
				 strerror(c->task[i].unpin_err));
			rc = WM_FAIL;
			goto out;
		}
	}
	res->n = n;
	res->wall_ns = c->t_end - t0;
	res->cpu_min = res->count_min = UINT64_MAX;
	for (i = 0; i < n; i++) {
		res->count[i] = c->task[i].count;
		res->cpu_ns[i] = c->task[i].cpu_ns;
		if (res->cpu_ns[i] < res->cpu_min)
			res->cpu_min = res->cpu_ns[i];
		if (res->cpu_ns[i] > res->cpu_max)
			res->cpu_max = res->cpu_ns[i];
		if (res->count[i] < res->count_min)
			res->count_min = res->count[i];
		if (res->count[i] > res->count_max)
			res->count_max = res->count[i];
	}
	res->ratio = wm_ratio(res->cpu_max, res->cpu_min);
	res->count_ratio = wm_ratio(res->count_max, res->count_min);
out:
	munmap(c, sizeof(*c));
	return rc;
}

/* shares_min/max: CPU ms; shares_ratio: of the CPU times (the scheduler's doing). */
static inline void wm_shares_print(FILE *f, const struct wm_shares_res *r)
{
	int i;

	fprintf(f, "shares_min=%.1f\nshares_max=%.1f\nshares_ratio=%.3f\n"
		"count_min=%llu\ncount_max=%llu\ncount_ratio=%.3f\nwall_ms=%.1f\n",
		r->cpu_min / 1e6, r->cpu_max / 1e6, r->ratio, (unsigned long long)r->count_min,
		(unsigned long long)r->count_max, r->count_ratio, r->wall_ns / 1e6);
	for (i = 0; i < r->n; i++)
		fprintf(f, "share_%d=%llu\ncpu_ms_%d=%.1f\npid_%d=%d\n", i,
			(unsigned long long)r->count[i], i, r->cpu_ns[i] / 1e6, i, (int)r->pid[i]);
}

#endif /* HPCSCHED_WAKEMIX_H */
