/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the SCHED_HPC in-guest test cases (not a test case).
 *
 * The ABI under test: Documentation/scheduler/sched-hpc-abi.txt.
 * Everything is static inline so that every case compiles warning-free
 * with -Wall -Wextra -Werror whichever helpers it uses.
 */
#ifndef HPCSCHED_HPCTEST_H
#define HPCSCHED_HPCTEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "tap.h"

#ifndef SCHED_HPC
#define SCHED_HPC		8
#endif
#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK	0x40000000
#endif
#define HPC_SCHED_FLAG_RESET_ON_FORK	0x01ULL

#define HPC_SYSFS	"/sys/kernel/sched_hpc"

/* ------------------------------------------------------------------ time */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline void sleep_ms(unsigned int ms)
{
	sleep_ns((uint64_t)ms * 1000000ULL);
}

/* ------------------------------------------------------------------ work */

/* One unit of pure-integer work. The result must be consumed (work_sink). */
static volatile uint64_t work_sink;

static inline uint64_t work_unit(uint64_t x)
{
	int i;

	for (i = 0; i < 1000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static inline void work_units(uint64_t n)
{
	uint64_t x = work_sink | 1;

	while (n--)
		x = work_unit(x);
	work_sink = x;
}

/* Compute for @us us of this thread's CPU time. */
static inline void spin_cpu_us(unsigned int us)
{
	uint64_t end = thread_cpu_ns() + (uint64_t)us * 1000ULL;
	uint64_t x = work_sink | 1;

	while (thread_cpu_ns() < end)
		x = work_unit(x);
	work_sink = x;
}

/* Compute for @ms ms of this thread's CPU time. */
static inline void spin_cpu_ms(unsigned int ms)
{
	spin_cpu_us(ms * 1000U);
}

/* One iteration: compute @run_ms of CPU time, then sleep @sleep ms. */
static inline void iterate(unsigned int run_ms, unsigned int sleep)
{
	spin_cpu_ms(run_ms);
	sleep_ms(sleep);
}

/*
 * Work units per millisecond of this CPU, measured over >= @ms ms of CPU time
 * of the calling thread (CPU time, so that preemption does not count).
 */
static inline double calibrate_units_per_ms(unsigned int ms)
{
	uint64_t n = 16, t0, t;
	double best = 0, r;
	int i;

	/*
	 * Under TCG a busy host deschedules vCPUs; the guest still counts that
	 * time as run time. Take the best of several short runs.
	 */
	for (;;) {
		t0 = thread_cpu_ns();
		work_units(n);
		t = thread_cpu_ns() - t0;
		if (t >= (uint64_t)ms * 1000000ULL / 4)
			break;
		n *= 2;
	}
	for (i = 0; i < 8; i++) {
		t0 = thread_cpu_ns();
		work_units(n);
		t = thread_cpu_ns() - t0;
		r = (double)n * 1e6 / (double)(t ? t : 1);
		if (r > best)
			best = r;
	}
	return best;
}

/* ------------------------------------------------------------- scheduling */

struct hpc_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;
	uint32_t sched_util_max;
};

static inline int sys_sched_setattr(pid_t pid, struct hpc_sched_attr *attr,
				    unsigned int flags)
{
	return (int)syscall(SYS_sched_setattr, pid, attr, flags);
}

static inline int sys_sched_getattr(pid_t pid, struct hpc_sched_attr *attr,
				    unsigned int size, unsigned int flags)
{
	return (int)syscall(SYS_sched_getattr, pid, attr, size, flags);
}

static inline pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* sched_setscheduler(@pid, @policy, {@prio}); 0 or -errno. */
static inline int set_policy(pid_t pid, int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return sched_setscheduler(pid, policy, &sp) ? -errno : 0;
}

static inline int set_hpc(pid_t pid)
{
	return set_policy(pid, SCHED_HPC, 0);
}

static inline int set_other(pid_t pid)
{
	return set_policy(pid, SCHED_OTHER, 0);
}

/* Pin @pid to @cpu; 0 or -errno. */
static inline int pin_cpu(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set) ? -errno : 0;
}

static inline int unpin(pid_t pid)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	return sched_setaffinity(pid, sizeof(set), &set) ? -errno : 0;
}

/* Is this a PREEMPT_RT kernel? (its version string says so) */
static inline int kernel_preempt_rt(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT") != NULL;
}

static inline int online_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* --------------------------------------------------------------- files */

/* Read a whole small file into @buf (NUL-terminated); bytes or -errno. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, tot = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)tot < len - 1) {
		n = read(fd, buf + tot, len - 1 - (size_t)tot);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		tot += n;
	}
	buf[tot] = 0;
	close(fd);
	return (int)tot;
}

/*
 * One write(2) of @len bytes of @s to @path, opened with O_WRONLY | @flags
 * (e.g. O_APPEND): 0 (all written) or -errno.
 */
static inline int write_file_flags(const char *path, const char *s, size_t len, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

static inline int write_file_len(const char *path, const char *s, size_t len)
{
	return write_file_flags(path, s, len, 0);
}

static inline int write_file(const char *path, const char *s)
{
	return write_file_len(path, s, strlen(s));
}

/* Append @s to @path (e.g. kprobe_events, keeping the probes already there). */
static inline int append_file(const char *path, const char *s)
{
	return write_file_flags(path, s, strlen(s), O_APPEND);
}

#define TRACEFS "/sys/kernel/tracing"

/* Mount tracefs at TRACEFS unless it is there. */
static inline void tracefs_mount(void)
{
	struct stat sb;

	if (stat(TRACEFS "/events", &sb))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
}

/* ------------------------------------------------------------ sysfs knobs */

static inline void knob_path(char *p, size_t len, const char *name)
{
	snprintf(p, len, HPC_SYSFS "/%s", name);
}

/* The knob's contents with the trailing newline removed; bytes or -errno. */
static inline int knob_read(const char *name, char *buf, size_t len)
{
	char p[128];
	int n;

	knob_path(p, sizeof(p), name);
	n = read_file(p, buf, len);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return n;
}

/* Integer value of a knob, or LLONG_MIN if unreadable / not "digits\n". */
static inline long long knob_get(const char *name)
{
	char buf[64], *end;
	long long v;
	int n;

	n = knob_read(name, buf, sizeof(buf));
	if (n <= 0 || !isdigit((unsigned char)buf[0]))
		return LLONG_MIN;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end)
		return LLONG_MIN;
	return v;
}

/* Write @val (as is, no newline added) to a knob: 0 or -errno. */
static inline int knob_write(const char *name, const char *val)
{
	char p[128];

	knob_path(p, sizeof(p), name);
	return write_file(p, val);
}

static inline int knob_set(const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld\n", v);
	return knob_write(name, buf);
}

struct knob_default {
	const char *name;
	const char *val;
};

static const struct knob_default knob_defaults[] = {
	{ "high_util", "85" },
	{ "low_util", "65" },
	{ "max_prio", "6" },
	{ "min_prio", "4" },
	{ "global_weight", "10" },
	{ "last_weight", "90" },
	{ "heuristic", "uniform" },
	{ "min_wait_us", "100" },
	{ "queue", "rr" },
	{ "timeslice_us", "100000" },
	{ "emul_period_us", "10000" },
#if defined(__x86_64__) || defined(__i386__)
	/* Not the boot default ("none"): the suite selects the emulation. */
	{ "backend", "x86-smt-emul" },
#elif defined(__powerpc64__)
	{ "backend", "power-smt" },
#endif
};
#define NR_KNOB_DEFAULTS (int)(sizeof(knob_defaults) / sizeof(knob_defaults[0]))

/*
 * Put every knob back to the suite's setting (the ABI defaults, and the
 * emulation selected on x86). Async-signal-safe (open/write
 * only). Several passes because the invariants (low < high, min <= max)
 * can reject a single value until its partner moved. Returns the number of
 * knobs that could not be restored.
 */
static inline int knobs_restore(void)
{
	char p[128], v[32];
	int pass, i, r, bad = 0;

	for (pass = 0; pass < 3; pass++) {
		bad = 0;
		for (i = 0; i < NR_KNOB_DEFAULTS; i++) {
			size_t l = strlen(knob_defaults[i].val);

			memcpy(v, knob_defaults[i].val, l);
			v[l] = '\n';
			/* no snprintf: keep this async-signal-safe */
			memcpy(p, HPC_SYSFS "/", sizeof(HPC_SYSFS));
			strcpy(p + sizeof(HPC_SYSFS), knob_defaults[i].name);
			r = write_file_len(p, v, l + 1);
			if (r && r != -ENOENT)	/* a missing knob is 25/26-sysfs' business */
				bad++;
		}
		if (!bad)
			break;
	}
	return bad;
}

/* 1 if every knob reads its ABI default. */
static inline int knobs_at_defaults(char *which, size_t len)
{
	char buf[64];
	int i, ok = 1;

	if (which && len)
		which[0] = 0;
	for (i = 0; i < NR_KNOB_DEFAULTS; i++) {
		int r = knob_read(knob_defaults[i].name, buf, sizeof(buf));

		if (r == -ENOENT)	/* checked by 25/26-sysfs */
			continue;
		if (r < 0 || strcmp(buf, knob_defaults[i].val)) {
			ok = 0;
			if (which && strlen(which) + 40 < len) {
				strcat(which, knob_defaults[i].name);
				strcat(which, " ");
			}
		}
	}
	return ok;
}

static inline int hpc_available(void)
{
	struct stat st;

	return stat(HPC_SYSFS, &st) == 0;
}

/* ---------------------------------------------------- /proc/<pid>/sched_hpc */

enum {
	HS_ITERATIONS,
	HS_JUDGEMENTS,
	HS_LAST_RUN_NS,
	HS_LAST_WAIT_NS,
	HS_LAST_UTIL,
	HS_GLOBAL_UTIL,
	HS_HEUR_UTIL,
	HS_PRIO,
	HS_THROTTLED_NS,
	HS_FIXED_PRIO,
	HS_NR,
};

static const char *const hs_names[HS_NR] = {
	"iterations", "judgements", "last_run_ns", "last_wait_ns", "last_util",
	"global_util", "heur_util", "prio", "throttled_ns", "fixed_prio",
};

struct hpc_stat {
	int hpc;		/* 1: "policy: hpc", 0: "policy: other" */
	long long v[HS_NR];
	char err[160];		/* why the parse failed */
};

/*
 * Parse a sched_hpc file strictly per the ABI: "name: value" lines, a policy
 * line, for hpc every field exactly once and nothing else, for other only
 * the policy line. Returns 0, -errno (cannot read) or -EPROTO (bad format,
 * st->err says why).
 */
static inline int hpc_stat_parse(const char *text, struct hpc_stat *st)
{
	const char *l = text;
	unsigned int seen = 0;
	int have_policy = 0, i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < HS_NR; i++)
		st->v[i] = -1;
	while (*l) {
		const char *nl = strchr(l, '\n'), *colon;
		char name[64], val[64], *end;
		size_t nlen, vlen;

		if (!nl) {
			snprintf(st->err, sizeof(st->err), "unterminated last line");
			return -EPROTO;
		}
		colon = memchr(l, ':', (size_t)(nl - l));
		if (!colon || colon[1] != ' ') {
			snprintf(st->err, sizeof(st->err), "line without \"name: \": %.*s",
				 (int)(nl - l), l);
			return -EPROTO;
		}
		nlen = (size_t)(colon - l);
		vlen = (size_t)(nl - colon - 2);
		if (nlen >= sizeof(name) || vlen >= sizeof(val) || !vlen) {
			snprintf(st->err, sizeof(st->err), "bad line: %.*s",
				 (int)(nl - l), l);
			return -EPROTO;
		}
		memcpy(name, l, nlen);
		name[nlen] = 0;
		memcpy(val, colon + 2, vlen);
		val[vlen] = 0;
		l = nl + 1;
		if (!strcmp(name, "policy")) {
			if (have_policy) {
				snprintf(st->err, sizeof(st->err), "policy twice");
				return -EPROTO;
			}
			have_policy = 1;
			if (!strcmp(val, "hpc"))
				st->hpc = 1;
			else if (!strcmp(val, "other"))
				st->hpc = 0;
			else {
				snprintf(st->err, sizeof(st->err), "policy \"%s\"", val);
				return -EPROTO;
			}
			continue;
		}
		for (i = 0; i < HS_NR; i++)
			if (!strcmp(name, hs_names[i]))
				break;
		if (i == HS_NR) {
			snprintf(st->err, sizeof(st->err), "unknown field \"%s\"", name);
			return -EPROTO;
		}
		if (seen & (1U << i)) {
			snprintf(st->err, sizeof(st->err), "field %s twice", name);
			return -EPROTO;
		}
		if (!isdigit((unsigned char)val[0])) {
			snprintf(st->err, sizeof(st->err), "%s: not a number: \"%s\"",
				 name, val);
			return -EPROTO;
		}
		errno = 0;
		st->v[i] = strtoll(val, &end, 10);
		if (errno || *end) {
			snprintf(st->err, sizeof(st->err), "%s: not a number: \"%s\"",
				 name, val);
			return -EPROTO;
		}
		seen |= 1U << i;
	}
	if (!have_policy) {
		snprintf(st->err, sizeof(st->err), "no policy line");
		return -EPROTO;
	}
	if (!st->hpc && seen) {
		snprintf(st->err, sizeof(st->err), "policy other with more lines");
		return -EPROTO;
	}
	if (st->hpc && seen != (1U << HS_NR) - 1) {
		for (i = 0; i < HS_NR; i++)
			if (!(seen & (1U << i)))
				break;
		snprintf(st->err, sizeof(st->err), "field %s missing", hs_names[i]);
		return -EPROTO;
	}
	return 0;
}

static inline int hpc_stat_read_path(const char *path, struct hpc_stat *st)
{
	char buf[1024];
	int n;

	n = read_file(path, buf, sizeof(buf));
	if (n < 0) {
		memset(st, 0, sizeof(*st));
		snprintf(st->err, sizeof(st->err), "%s: %s", path, strerror(-n));
		return n;
	}
	return hpc_stat_parse(buf, st);
}

static inline int hpc_stat_read(pid_t pid, struct hpc_stat *st)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/sched_hpc", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/sched_hpc");
	return hpc_stat_read_path(path, st);
}

/* ------------------------------------------------------ /proc/<pid>/stat */

/* Field @field (1-based, as in proc(5)) of /proc/<pid>/stat; LLONG_MIN on error. */
static inline long long proc_stat_field(pid_t pid, int field)
{
	char path[64], buf[1024], *p;
	int n, f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return LLONG_MIN;
	p = strrchr(buf, ')');	/* comm may contain spaces */
	if (!p)
		return LLONG_MIN;
	p++;
	for (f = 3; f <= field; f++) {
		while (*p == ' ')
			p++;
		if (f == field)
			return strtoll(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
		if (!*p)
			return LLONG_MIN;
	}
	return LLONG_MIN;
}

/* State letter of /proc/<pid>/stat (R, S, Z, ...), or 0. */
static inline char task_state_of(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static inline int task_cpu_of(pid_t pid)
{
	long long v = proc_stat_field(pid, 39);

	return v == LLONG_MIN ? -1 : (int)v;
}

/* CPU time of @pid (whole task for a process) in ns, or -1. */
static inline long long cpu_ns_of(pid_t pid)
{
	char path[64], buf[256];
	long long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) > 0 && isdigit((unsigned char)buf[0]))
		return strtoll(buf, NULL, 10);
	ut = proc_stat_field(pid, 14);
	st = proc_stat_field(pid, 15);
	if (ut == LLONG_MIN || st == LLONG_MIN)
		return -1;
	return (ut + st) * (1000000000LL / sysconf(_SC_CLK_TCK));
}

/* ------------------------------------------------------------ children */

/* Children of this process, killed by the watchdog and by kill_children(). */
#define MAX_KIDS 512
static pid_t kids[MAX_KIDS];
static int nr_kids;

static inline void kid_add(pid_t pid)
{
	int i;

	for (i = 0; i < nr_kids; i++)
		if (kids[i] <= 0) {
			kids[i] = pid;
			return;
		}
	if (nr_kids < MAX_KIDS)
		kids[nr_kids++] = pid;
}

static inline void kid_del(pid_t pid)
{
	int i;

	for (i = 0; i < nr_kids; i++)
		if (kids[i] == pid)
			kids[i] = 0;
}

/* SIGKILL and reap every registered child. */
static inline void kill_children(void)
{
	int i;

	for (i = 0; i < nr_kids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < nr_kids; i++)
		if (kids[i] > 0) {
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	nr_kids = 0;
}

/*
 * waitpid() with a timeout (ms). Returns the pid, 0 on timeout, -1 on
 * error; *status gets the wait status.
 */
static inline pid_t wait_timeout(pid_t pid, int *status, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r != 0) {
			if (r > 0)
				kid_del(r);
			return r;
		}
		if (now_ns() >= end)
			return 0;
		sleep_ms(5);
	}
}

/* Called in a freshly forked child: die with the parent. */
static inline void child_setup(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* fork() that flushes stdio first and registers the child. */
static inline pid_t fork_kid(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		nr_kids = 0;
		child_setup();
	} else if (pid > 0) {
		kid_add(pid);
	}
	return pid;
}

/*
 * Wait for child @pid, @ms at most (then it is killed): its exit status,
 * -1 if it timed out or did not exit normally.
 */
static inline int reap_kid(pid_t pid, unsigned int ms)
{
	int st = -1;

	if (wait_timeout(pid, &st, ms) != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		kid_del(pid);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Run @fn in a child and wait for it, @ms at most (then it is killed).
 * Returns its exit status (128 + N for signal N), -1 if it could not be
 * forked, -2 if it timed out.
 */
static inline int run_in_child(void (*fn)(void), unsigned int ms)
{
	int st = 0;
	pid_t pid = fork_kid();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (wait_timeout(pid, &st, ms) != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		kid_del(pid);
		return -2;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------ watchdog */

static unsigned int watchdog_secs;
/* Optional extra clean-up of a case, run by the watchdog (async-signal-safe). */
static void (*watchdog_hook)(void);

static inline void watchdog_handler(int sig)
{
	static const char msg1[] = "not ok 999 - watchdog: ";
	static const char msg2[] = " finished in time # no: children killed, knobs restored\n";
	int i;

	(void)sig;
	for (i = 0; i < nr_kids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	knobs_restore();
	if (watchdog_hook)
		watchdog_hook();
	if (write(1, msg1, sizeof(msg1) - 1) < 0 ||
	    write(1, tap_case, strlen(tap_case)) < 0 ||
	    write(1, msg2, sizeof(msg2) - 1) < 0)
		_exit(3);
	_exit(1);
}

/*
 * Arm the case's own watchdog: after @secs the case reports a failure, kills
 * its children, restores the knobs and exits 1.
 */
static inline void watchdog(unsigned int secs)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watchdog_handler;
	sigaction(SIGALRM, &sa, NULL);
	watchdog_secs = secs;
	alarm(secs);
}

/* ------------------------------------------------------------ spinners */

/* State shared with a spinner child (in MAP_SHARED memory). */
struct spin {
	volatile uint64_t count;	/* work units done */
	volatile int stop;		/* parent: please exit */
	volatile int yield_req;		/* parent: please sched_yield() once */
	volatile int yields;		/* child: sched_yield() calls (counted before the call) */
	volatile int started;		/* child: entered the loop */
	volatile int hpc_req;		/* parent: please become SCHED_HPC (cleared first) */
	pid_t pid;
	/*
	 * Optional (set before spin_start()): a word in shared memory that the
	 * spinners of a group write their pid to when they find another one
	 * there, and the count of those take-overs by this spinner: how often
	 * the CPU went from one of the group to this one, whatever ran between.
	 */
	volatile pid_t *turn;
	volatile uint64_t handoffs;
};

static inline void *shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(p, 0, len);
	return p;
}

static inline void spin_loop(struct spin *s, unsigned int max_s)
{
	uint64_t end = now_ns() + (uint64_t)max_s * 1000000000ULL;
	uint64_t x = 88172645463325252ULL;
	unsigned int i = 0;
	pid_t me = getpid();

	s->started = 1;
	while (!s->stop) {
		x = work_unit(x);
		s->count++;
		if (s->turn && *s->turn != me) {
			*s->turn = me;
			s->handoffs++;
		}
		if (s->yield_req) {
			s->yield_req = 0;
			s->yields++;	/* before: under fifo it may not run again soon */
			sched_yield();
		}
		if (s->hpc_req) {
			s->hpc_req = 0;	/* before: it may not run again soon */
			set_hpc(0);
		}
		if (!(++i & 63) && now_ns() > end)
			break;
	}
	work_sink = x;
	_exit(0);
}

/*
 * Start a busy-looping child. It is created blocked; the parent pins it to
 * @cpu (if >= 0) and gives it @policy/@prio (if @policy >= 0) while it
 * sleeps, then releases it. It spins at most @max_s seconds (so that a
 * broken kernel cannot keep the guest busy forever). Returns the pid, or
 * -errno (child killed) if pinning or the policy failed.
 */
static inline pid_t spin_start(struct spin *s, int cpu, int policy, int prio,
			       unsigned int max_s)
{
	int p[2], r;
	pid_t pid;
	char c = 'g';

	if (pipe(p))
		return -errno;
	s->count = 0;
	s->stop = 0;
	s->yield_req = 0;
	s->yields = 0;
	s->started = 0;
	s->handoffs = 0;
	s->hpc_req = 0;
	pid = fork_kid();
	if (pid < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		close(p[0]);
		if (c != 'g')
			_exit(0);
		spin_loop(s, max_s);
	}
	close(p[0]);
	s->pid = pid;
	r = 0;
	if (cpu >= 0)
		r = pin_cpu(pid, cpu);
	if (!r && policy >= 0)
		r = set_policy(pid, policy, prio);
	if (r) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		kid_del(pid);
		close(p[1]);
		s->pid = 0;
		return r;
	}
	if (write(p[1], &c, 1) != 1)
		r = -errno;
	close(p[1]);
	return r ? r : pid;
}

/* Wait until the spinner entered its loop (max @ms ms); 1 if it did. */
static inline int spin_wait_started(struct spin *s, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;

	while (!s->started) {
		if (now_ns() > end)
			return 0;
		sleep_ms(2);
	}
	return 1;
}

/* Stop and reap a spinner (SIGKILL if it does not exit within 2 s). */
static inline void spin_stop(struct spin *s)
{
	int st;

	if (s->pid <= 0)
		return;
	s->stop = 1;
	if (wait_timeout(s->pid, &st, 2000) == 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &st, 0);
		kid_del(s->pid);
	}
	s->pid = 0;
}

/* Start of a case that needs the class: 1 if present, else reports it. */
static inline int require_hpc(void)
{
	if (hpc_available())
		return 1;
	tap_fail("SCHED_HPC present", HPC_SYSFS " missing: kernel without SCHED_HPC?");
	return 0;
}

#endif /* HPCSCHED_HPCTEST_H */
