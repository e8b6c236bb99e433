/*
 * hpcsched.so: a Slurm SPANK plugin that runs a job step's tasks under the
 * SCHED_HPC policy (the kernel class, scx_hpc, or hpcd on any kernel).
 *
 *   srun --hpcsched=adaptive ./app          #SBATCH --hpcsched=adaptive
 *   srun --hpcsched=uniform --hpcsched-set low_util=60,high_util=90 ./app
 *   HPCSCHED=phase srun ./app              (or Slurm's own option variable)
 *
 * Per node and job step, in slurmstepd (root), as hpcctl chooses its backend:
 * the kernel class where <sysfs>/sched_hpc exists, scx_hpc where one is
 * loaded, else one hpcd for the step (its own control and monitor sockets
 * under rundir). Each task gets libhpcmon for its MPI in LD_PRELOAD (what
 * hpcmon-lib prints for the program) and the step's monitor socket; a task
 * without it is added to hpcd by pid. At the step's end hpcd is stopped (its
 * guardian undoes every cgroup and quota) and hpcctl report's table of the
 * step's trace is written to the job's working directory,
 * hpcsched-<job>.<step>.txt. Nothing here knows the knobs: hpcd and hpcctl
 * check every setting; a refused one fails the step with their message.
 *
 * Where the callbacks run (spank(7), Slurm 22.05): init and init_post_opt in
 * srun/sbatch/salloc (local, allocator: the options' checks) and in
 * slurmstepd (remote, root: the backend starts); user_init in slurmstepd
 * with the user's uid and working directory; task_init_privileged (root) and
 * task_init (the user) in each task before exec; task_post_fork in
 * slurmstepd after the tasks are forked; exit in slurmstepd once the tasks
 * have ended, also after scancel.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(hpcsched, 1);

#ifndef HPCSCHED_HPCCTL
#define HPCSCHED_HPCCTL "/usr/bin/hpcctl"
#endif
#ifndef HPCSCHED_HPCD
#define HPCSCHED_HPCD "/usr/sbin/hpcd"
#endif
#ifndef HPCSCHED_HPCMON_LIB
#define HPCSCHED_HPCMON_LIB "/usr/bin/hpcmon-lib"
#endif

/* Slurm 22.05 counts a callback as failed when it returns less than 0
 * (spank.c: rc < 0 and the plugin required); ESPANK_ERROR is positive. */
#define SPANK_FAIL (-1)
#define SCHED_HPC_POLICY 8 /* the kernel class (sched-hpc-abi.txt) */
#define SCHED_EXT_POLICY 7 /* sched_ext: scx_hpc */
#define TOOL_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum backend { B_NONE, B_HPCD, B_KERNEL, B_SCX };
static const char *const backend_name[] = {"none", "hpcd", "kernel", "scx"};

/* Plugin arguments (plugstack.conf). */
static char a_hpcctl[PATH_MAX] = HPCSCHED_HPCCTL;
static char a_hpcd[PATH_MAX] = HPCSCHED_HPCD;
static char a_hpcmon_lib[PATH_MAX] = HPCSCHED_HPCMON_LIB;
static char a_rundir[PATH_MAX] = "/run/hpcsched";
static char a_sysfs[PATH_MAX] = "/sys/kernel/sched_hpc";
static char a_scx_sysfs[PATH_MAX] = "/sys/kernel/sched_ext";

/* The options, as given (the callbacks keep them). */
static char o_mode[32];
static char o_set[1024];

/* The step's state in slurmstepd (task_init sees it through the fork). */
static struct {
	int active;
	enum backend be;
	uint32_t job, step;
	uid_t uid;
	gid_t gid;
	gid_t gids[64];
	int ngids;
	char mode[32];
	char set[1024];
	char dir[PATH_MAX];  /* rundir/<job>.<step>, root's */
	char udir[PATH_MAX]; /* dir/user, the user's: libhpcmon's report */
	char ctl[PATH_MAX];
	char sock[PATH_MAX];
	char trace[PATH_MAX];
	char cwd[PATH_MAX];
	char lib[PATH_MAX]; /* libhpcmon for the program, "" if none */
	char prog[256];
	pid_t hpcd, tracer;
	int tasks;
	char error[1200]; /* why the step cannot have it: said by its tasks */
} st;

/* ---- small helpers ------------------------------------------------------------- */

static int fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int fmt(char *buf, size_t n, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int r = vsnprintf(buf, n, f, ap);
	va_end(ap);
	return r >= 0 && (size_t)r < n ? 0 : -1;
}

/* The first line of `s`, trimmed, in place. */
static char *first_line(char *s)
{
	while (*s == ' ' || *s == '\n')
		s++;
	s[strcspn(s, "\n")] = '\0';
	return s;
}

/* The last non-empty line of `s`, in place. */
static char *last_line(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	char *p = strrchr(s, '\n');
	return p ? p + 1 : s;
}

static int read_text(const char *path, char *buf, size_t n)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	ssize_t r;
	while (got + 1 < n && (r = read(fd, buf + got, n - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
	close(fd);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Alive and not a zombie. */
static int alive(pid_t pid)
{
	char p[64], b[512];
	if (pid <= 0 || kill(pid, 0) != 0)
		return 0;
	fmt(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (read_text(p, b, sizeof(b)) != 0)
		return 0;
	char *c = strrchr(b, ')');
	return !(c && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X'));
}

/* Wait up to `ms` for `pid` to end. */
static int gone_within(pid_t pid, long ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (alive(pid)) {
		if (now_ms() >= end)
			return 0;
		sleep_ms(20);
	}
	return 1;
}

/* The end of a process we asked to leave: SIGTERM, then SIGKILL. */
static void stop_pid(pid_t pid, int sig, long grace_ms)
{
	if (pid <= 0 || gone_within(pid, 0))
		return;
	kill(pid, sig);
	if (!gone_within(pid, grace_ms)) {
		kill(pid, SIGKILL);
		gone_within(pid, 2000);
	}
}

/* In a child: become the job's user for good. */
static int drop_to_user(uid_t uid, gid_t gid)
{
	if (geteuid() != 0 && seteuid(0) != 0 && getuid() != uid)
		return -1;
	if (setgroups((size_t)st.ngids, st.gids) != 0 && uid != getuid())
		return -1;
	if (setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
		return -1;
	return 0;
}

struct run {
	char *const *argv;
	char *const *envp;
	const char *out;    /* stdout and stderr into this file (append), or */
	char *buf;          /* ... captured here (stdout; stderr too if both) */
	size_t len;
	int drop;           /* as the job's user, in cwd */
	int detach;         /* a daemon of its own (double fork): pid returned */
	const char *cwd;
};

/*
 * Run a program and wait for it; its status (exit code, 128+N for a signal,
 * -1 if it could not run). Detached: it is reparented away from slurmstepd
 * (whose proctrack must not kill it with the tasks) and its pid returned.
 */
static int run(struct run *r, pid_t *daemon_pid)
{
	int pfd[2] = {-1, -1}, idp[2] = {-1, -1};
	if (r->buf && pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	if (r->detach && pipe2(idp, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < 32; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		if (r->drop && drop_to_user(st.uid, st.gid) != 0)
			_exit(126);
		if (r->cwd && chdir(r->cwd) != 0)
			_exit(126);
		int in = open("/dev/null", O_RDONLY);
		if (in >= 0)
			dup2(in, 0);
		if (r->out) {
			int fd = open(r->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
			if (fd < 0)
				_exit(126);
			dup2(fd, 1);
			dup2(fd, 2);
		} else if (r->buf) {
			dup2(pfd[1], 1);
			dup2(pfd[1], 2);
		} else {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (r->detach) {
			setsid();
			pid_t d = fork();
			if (d < 0)
				_exit(1);
			if (d > 0) {
				(void)!write(idp[1], &d, sizeof(d));
				_exit(0);
			}
		}
		long max = sysconf(_SC_OPEN_MAX);
		for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
			if (!r->detach || fd != idp[1])
				close(fd);
		execve(r->argv[0], r->argv, r->envp);
		_exit(127);
	}
	if (r->buf) {
		close(pfd[1]);
		size_t got = 0;
		ssize_t n;
		while ((n = read(pfd[0], r->buf + got, r->len - 1 - got)) > 0 || (n < 0 && errno == EINTR))
			if (n > 0 && (got += (size_t)n) + 1 >= r->len)
				break;
		r->buf[got] = '\0';
		close(pfd[0]);
	}
	int status = 0, rc = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	if (r->detach) {
		close(idp[1]);
		pid_t d = -1;
		if (read(idp[0], &d, sizeof(d)) != sizeof(d))
			d = -1;
		close(idp[0]);
		*daemon_pid = d;
		return d > 0 ? 0 : -1;
	}
	return rc;
}

/*
 * One request on hpcd's control socket, one line back. 0 if it answered
 * {"ok":true...}, else -1 with the answer (or why none came) in `reply`.
 */
static int ctl_request(const char *path, const char *req, char *reply, size_t n, int timeout_ms)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	reply[0] = '\0';
	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fmt(reply, n, "cannot connect to %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	char line[4096];
	if (fmt(line, sizeof(line), "%s\n", req) != 0 ||
	    send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line)) {
		close(fd);
		return -1;
	}
	size_t got = 0;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	while (got + 1 < n && !memchr(reply, '\n', got)) {
		struct pollfd p = {fd, POLLIN, 0};
		uint64_t t = now_ms();
		if (t >= end || poll(&p, 1, (int)(end - t)) <= 0)
			break;
		ssize_t r = read(fd, reply + got, n - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		reply[got] = '\0';
	}
	close(fd);
	reply[strcspn(reply, "\n")] = '\0';
	return strstr(reply, "\"ok\":true") ? 0 : -1;
}

/* rm -r of the step's run directory (ours: no symlink is followed). */
static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char p[PATH_MAX];
			struct stat s;
			if (fmt(p, sizeof(p), "%s/%s", path, e->d_name) != 0)
				continue;
			if (lstat(p, &s) == 0 && S_ISDIR(s.st_mode))
				remove_tree(p);
			else
				unlink(p);
		}
		closedir(d);
	}
	rmdir(path);
}

/* ---- options --------------------------------------------------------------------- */

static int check_mode(const char *v, const char *from)
{
	static const char *const ok[] = {"uniform", "adaptive", "phase", "off"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(v, ok[i]))
			return 0;
	slurm_error("hpcsched: %s: '%s' is not a heuristic (uniform, adaptive, phase, or off)",
		    from, v);
	return -1;
}

/* KEY=VALUE[,KEY=VALUE...]: the form only; hpcd or hpcctl check the rest. */
static int check_set(const char *v, const char *from)
{
	const char *p = v;
	if (strlen(v) >= sizeof(o_set)) {
		slurm_error("hpcsched: %s: longer than %zu characters", from, sizeof(o_set) - 1);
		return -1;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		int bad = !n || !eq || eq == p || eq == p + n - 1;
		for (size_t i = 0; i < n && !bad; i++)
			bad = p[i] == ' ' || p[i] == '"' || p[i] == '\\' || p[i] == '\n';
		if (bad) {
			slurm_error("hpcsched: %s: '%.*s' is not KEY=VALUE (e.g. low_util=60,high_util=90)",
				    from, (int)n, p);
			return -1;
		}
		p += n;
		if (*p == ',' && !*++p) {
			slurm_error("hpcsched: %s: ends with a comma", from);
			return -1;
		}
	}
	return 0;
}

static int opt_cb(int val, const char *optarg, int remote)
{
	(void)remote;
	if (!optarg)
		optarg = "";
	if (val == 1) {
		if (check_mode(optarg, "--hpcsched") != 0)
			return -1;
		fmt(o_mode, sizeof(o_mode), "%s", optarg);
	} else {
		if (check_set(optarg, "--hpcsched-set") != 0)
			return -1;
		fmt(o_set, sizeof(o_set), "%s", optarg);
	}
	return 0;
}

static struct spank_option opt_mode = {
	"hpcsched", "uniform|adaptive|phase|off",
	"Balance this step's tasks with SCHED_HPC (the kernel class, scx_hpc or hpcd) "
	"and this heuristic; writes hpcsched-<job>.<step>.txt", 1, 1, opt_cb};
static struct spank_option opt_set = {
	"hpcsched-set", "KEY=VALUE[,KEY=VALUE...]",
	"SCHED_HPC tunables for --hpcsched (as hpcctl set: low_util, high_util, ...)", 1, 2,
	opt_cb};

/* Plugin arguments: hpcctl= hpcd= hpcmon_lib= rundir= sysfs= scx_sysfs= */
static int take_args(int ac, char **av)
{
	static const struct {
		const char *key;
		char *dst;
	} keys[] = {{"hpcctl=", a_hpcctl},     {"hpcd=", a_hpcd},   {"hpcmon_lib=", a_hpcmon_lib},
		    {"rundir=", a_rundir},     {"sysfs=", a_sysfs}, {"scx_sysfs=", a_scx_sysfs}};
	for (int i = 0; i < ac; i++) {
		size_t k = 0;
		for (; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t n = strlen(keys[k].key);
			if (!strncmp(av[i], keys[k].key, n)) {
				if (av[i][n] != '/' || strlen(av[i] + n) >= PATH_MAX) {
					slurm_error("hpcsched: plugstack.conf: %s: an absolute path, please",
						    av[i]);
					return -1;
				}
				strcpy(keys[k].dst, av[i] + n);
				break;
			}
		}
		if (k == sizeof(keys) / sizeof(keys[0])) {
			slurm_error("hpcsched: plugstack.conf: unknown argument '%s' (hpcctl=, hpcd=, "
				    "hpcmon_lib=, rundir=, sysfs=, scx_sysfs=)",
				    av[i]);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t c = spank_context();
	if (take_args(ac, av) != 0)
		return SPANK_FAIL;
	if (c == S_CTX_LOCAL || c == S_CTX_REMOTE || c == S_CTX_ALLOCATOR) {
		if (spank_option_register(sp, &opt_mode) != ESPANK_SUCCESS ||
		    spank_option_register(sp, &opt_set) != ESPANK_SUCCESS)
			return SPANK_FAIL;
	}
	return ESPANK_SUCCESS;
}

/* ---- slurmstepd: the step's backend ---------------------------------------------- */

/* The job environment's value of `var` ("" if unset). */
static void job_env(spank_t sp, const char *var, char *buf, int n)
{
	if (spank_getenv(sp, var, buf, n) != ESPANK_SUCCESS)
		buf[0] = '\0';
}

/* hpcctl's environment: the plugin's sysfs directories. */
static char **tool_env(void)
{
	static char sys[PATH_MAX + 16], scx[PATH_MAX + 16];
	static char *envp[] = {TOOL_PATH, sys, scx, NULL};
	fmt(sys, sizeof(sys), "HPC_SYSFS=%s", a_sysfs);
	fmt(scx, sizeof(scx), "HPC_SCX_SYSFS=%s", a_scx_sysfs);
	return envp;
}

/* hpcctl's choice: the kernel class when <sysfs> is a directory; scx_hpc
 * when one is loaded (hpcctl --backend scx status answers); else hpcd. */
static enum backend choose_backend(void)
{
	struct stat s;
	char p[PATH_MAX + 16], b[64];
	if (stat(a_sysfs, &s) == 0 && S_ISDIR(s.st_mode))
		return B_KERNEL;
	if (fmt(p, sizeof(p), "%s/state", a_scx_sysfs) == 0 && read_text(p, b, sizeof(b)) == 0 &&
	    !strncmp(b, "enabled", 7)) {
		char *argv[] = {a_hpcctl, "--backend", "scx", "status", NULL};
		char out[4096];
		struct run r = {.argv = argv, .envp = tool_env(), .buf = out, .len = sizeof(out)};
		if (run(&r, NULL) == 0)
			return B_SCX;
	}
	return B_HPCD;
}

/* argv for hpcctl B set heuristic=H KEY=VALUE...; `words` holds the copies. */
static int set_argv(char **argv, int max, char *words, const char *backend)
{
	int n = 0;
	argv[n++] = a_hpcctl;
	argv[n++] = "--backend";
	argv[n++] = (char *)backend;
	argv[n++] = "set";
	static char heur[48];
	fmt(heur, sizeof(heur), "heuristic=%s", st.mode);
	argv[n++] = heur;
	strcpy(words, st.set);
	for (char *tok = strtok(words, ","); tok && n < max - 1; tok = strtok(NULL, ","))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

/* Wait for hpcd's control socket to answer; "" if up, else why not. */
static int hpcd_up(char *why, size_t n)
{
	char log[PATH_MAX + 8], text[8192], reply[4096];
	uint64_t end = now_ms() + 20000;
	fmt(log, sizeof(log), "%s/hpcd.log", st.dir);
	while (now_ms() < end) {
		if (ctl_request(st.ctl, "{\"cmd\":\"status\"}", reply, sizeof(reply), 2000) == 0)
			return 0;
		if (!alive(st.hpcd)) {
			read_text(log, text, sizeof(text));
			fmt(why, n, "%s", text[0] ? last_line(text) : "hpcd ended at its start");
			return -1;
		}
		sleep_ms(20);
	}
	fmt(why, n, "hpcd (pid %d) did not answer on %s within 20 s", (int)st.hpcd, st.ctl);
	return -1;
}

/* hpcctl trace of the step, detached; on when its record file appears. */
static void start_trace(void)
{
	char log[PATH_MAX + 16], ctl_env[PATH_MAX + 16];
	fmt(log, sizeof(log), "%s/trace.log", st.dir);
	fmt(ctl_env, sizeof(ctl_env), "HPCD_CONTROL=%s", st.ctl);
	char *argv[] = {a_hpcctl,    "--backend",   (char *)backend_name[st.be],
			"trace",     "-o",          st.trace,
			"--duration", "9000000",   NULL};
	char **te = tool_env();
	char *envp[] = {te[0], te[1], te[2], ctl_env, NULL};
	struct run r = {.argv = argv, .envp = envp, .out = log, .detach = 1};
	if (run(&r, &st.tracer) != 0) {
		slurm_info("hpcsched: job %u.%u: hpcctl trace did not start: no report", st.job,
			   st.step);
		st.tracer = -1;
		return;
	}
	/* Its watch is on once it has opened its record (a temporary file). */
	uint64_t end = now_ms() + 5000;
	while (now_ms() < end && alive(st.tracer)) {
		DIR *d = opendir(st.dir);
		int seen = 0;
		struct dirent *e;
		while (d && (e = readdir(d)))
			seen |= strstr(e->d_name, "hpcctl") != NULL || !strcmp(e->d_name, "trace.jsonl");
		if (d)
			closedir(d);
		if (seen)
			return;
		sleep_ms(10);
	}
}

/*
 * The step asked for hpcsched and cannot have it. slurmstepd's own errors at
 * this point reach its log only, and srun would just say "Plugin
 * initialization failed": the tasks say why (task_init_privileged, on the
 * job's stderr) and fail, before their program runs.
 */
static int fail_step(const char *what)
{
	fmt(st.error, sizeof(st.error), "hpcsched: job %u.%u: %s", st.job, st.step, what);
	slurm_error("%s", st.error);
	if (st.hpcd > 0)
		stop_pid(st.hpcd, SIGTERM, 5000);
	if (st.dir[0])
		remove_tree(st.dir);
	st.active = 0;
	return ESPANK_SUCCESS;
}

static int start_backend(void)
{
	char err[8192], why[1024];
	st.be = choose_backend();
	if (st.be == B_KERNEL || st.be == B_SCX) {
		/* The node's one instance: the step's settings go to it (as
		 * hpcctl run sets them), checked by hpcctl. */
		char *argv[72], words[sizeof(st.set)];
		set_argv(argv, 72, words, backend_name[st.be]);
		struct run r = {.argv = argv, .envp = tool_env(), .buf = err, .len = sizeof(err)};
		int rc = run(&r, NULL);
		if (rc != 0) {
			fmt(why, sizeof(why), "%s", rc < 0 || rc == 127 ? "hpcctl cannot run" : first_line(err));
			return fail_step(why);
		}
		start_trace();
		return ESPANK_SUCCESS;
	}
	/* hpcd, one per step. */
	if (access(a_hpcd, X_OK) != 0) {
		fmt(why, sizeof(why), "no SCHED_HPC backend on this node: no kernel class (%s), no "
				      "scx_hpc loaded, and hpcd (%s) is not there",
		    a_sysfs, a_hpcd);
		return fail_step(why);
	}
	char log[PATH_MAX + 16];
	fmt(log, sizeof(log), "%s/hpcd.log", st.dir);
	char *argv[80], words[sizeof(st.set)];
	int n = 0;
	argv[n++] = a_hpcd;
	argv[n++] = "--exit-when-idle";
	argv[n++] = "--control";
	argv[n++] = st.ctl;
	argv[n++] = "--monitor";
	argv[n++] = st.sock;
	argv[n++] = "--heuristic";
	argv[n++] = st.mode;
	strcpy(words, st.set);
	for (char *tok = strtok(words, ","); tok && n < 76; tok = strtok(NULL, ",")) {
		argv[n++] = "--set";
		argv[n++] = tok;
	}
	argv[n] = NULL;
	char *envp[] = {TOOL_PATH, NULL};
	struct run r = {.argv = argv, .envp = envp, .out = log, .detach = 1};
	if (run(&r, &st.hpcd) != 0)
		return fail_step("cannot start hpcd");
	if (hpcd_up(why, sizeof(why)) != 0) {
		char *w = why;
		if (!strncmp(w, "hpcd: ", 6))
			w += 6;
		char msg[1200];
		fmt(msg, sizeof(msg), "hpcd refused to start: %s", w);
		return fail_step(msg);
	}
	start_trace();
	return ESPANK_SUCCESS;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	char mode[64] = "", set[sizeof(o_set)] = "";
	spank_context_t c = spank_context();
	if (c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR) {
		/* The short environment form, checked where the user sees it. */
		const char *m = getenv("HPCSCHED"), *s = getenv("HPCSCHED_SET");
		if (!o_mode[0] && m && *m && check_mode(m, "HPCSCHED") != 0)
			return SPANK_FAIL;
		if (!o_set[0] && s && *s && check_set(s, "HPCSCHED_SET") != 0)
			return SPANK_FAIL;
		return ESPANK_SUCCESS;
	}
	if (c != S_CTX_REMOTE)
		return ESPANK_SUCCESS;

	memset(&st, 0, sizeof(st));
	st.hpcd = st.tracer = -1;
	if (spank_get_item(sp, S_JOB_ID, &st.job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &st.step) != ESPANK_SUCCESS)
		return ESPANK_SUCCESS;
	/* The batch script, the extern and interactive steps are no tasks to
	 * balance: the sruns inside the job inherit the option. */
	if (st.step == SLURM_BATCH_SCRIPT || st.step == SLURM_EXTERN_CONT ||
	    st.step == SLURM_INTERACTIVE_STEP || st.step == SLURM_PENDING_STEP)
		return ESPANK_SUCCESS;

	if (o_mode[0])
		fmt(mode, sizeof(mode), "%s", o_mode);
	else
		job_env(sp, "HPCSCHED", mode, sizeof(mode));
	if (o_set[0])
		fmt(set, sizeof(set), "%s", o_set);
	else
		job_env(sp, "HPCSCHED_SET", set, sizeof(set));
	if (!mode[0] && set[0])
		return fail_step("--hpcsched-set without --hpcsched=HEURISTIC");
	if (!mode[0] || !strcmp(mode, "off"))
		return ESPANK_SUCCESS; /* not asked for: untouched */
	if (check_mode(mode, "HPCSCHED") != 0 || (set[0] && check_set(set, "HPCSCHED_SET") != 0))
		return fail_step("HPCSCHED or HPCSCHED_SET refused (see above)");
	fmt(st.mode, sizeof(st.mode), "%s", mode);
	fmt(st.set, sizeof(st.set), "%s", set);
	spank_get_item(sp, S_JOB_UID, &st.uid);
	spank_get_item(sp, S_JOB_GID, &st.gid);
	gid_t *gids = NULL;
	int ngids = 0;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) == ESPANK_SUCCESS && gids)
		for (int i = 0; i < ngids && st.ngids < 64; i++)
			st.gids[st.ngids++] = gids[i];

	/* rundir/<job>.<step>: root's, readable (the monitor's socket); its
	 * user/ directory the job user's (libhpcmon's report). */
	mkdir(a_rundir, 0755);
	if (fmt(st.dir, sizeof(st.dir), "%s/%u.%u", a_rundir, st.job, st.step) != 0 ||
	    fmt(st.udir, sizeof(st.udir), "%s/user", st.dir) != 0 ||
	    fmt(st.ctl, sizeof(st.ctl), "%s/hpcd.ctl", st.dir) != 0 ||
	    fmt(st.sock, sizeof(st.sock), "%s/hpcd.sock", st.dir) != 0 ||
	    fmt(st.trace, sizeof(st.trace), "%s/trace.jsonl", st.dir) != 0)
		return fail_step("rundir: path too long");
	remove_tree(st.dir); /* a leftover of a crashed slurmstepd */
	if (mkdir(st.dir, 0755) != 0 || chmod(st.dir, 0755) != 0 || mkdir(st.udir, 0700) != 0 ||
	    chown(st.udir, st.uid, st.gid) != 0) {
		char why[PATH_MAX + 64];
		fmt(why, sizeof(why), "cannot make %s: %s", st.dir, strerror(errno));
		st.dir[0] = '\0';
		return fail_step(why);
	}
	st.active = 1;
	int rc = start_backend();
	if (rc == ESPANK_SUCCESS)
		slurm_info("hpcsched: job %u.%u: heuristic %s, backend %s%s%s", st.job, st.step,
			   st.mode, backend_name[st.be], st.set[0] ? ", " : "", st.set);
	return rc;
}

/* As the user, in the job's working directory: the program's libhpcmon. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!st.active || spank_context() != S_CTX_REMOTE)
		return ESPANK_SUCCESS;
	if (!getcwd(st.cwd, sizeof(st.cwd)))
		st.cwd[0] = '\0';
	int argc = 0;
	char **argv = NULL;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv[0])
		return ESPANK_SUCCESS;
	const char *base = strrchr(argv[0], '/');
	fmt(st.prog, sizeof(st.prog), "%s", base ? base + 1 : argv[0]);
	if (st.be != B_HPCD)
		return ESPANK_SUCCESS;
	char path[4096] = "", penv[4200];
	job_env(sp, "PATH", path, sizeof(path));
	fmt(penv, sizeof(penv), "PATH=%s", path[0] ? path : "/usr/bin:/bin");
	char *args[] = {a_hpcmon_lib, argv[0], NULL};
	char *envp[] = {penv, "LC_ALL=C", NULL};
	/* hpcmon-lib prints the library on stdout, or why not on stderr: read
	 * as one stream (a library's path is one word). */
	char out[PATH_MAX + 512];
	struct run r = {.argv = args, .envp = envp, .buf = out, .len = sizeof(out), .drop = 1,
			.cwd = st.cwd[0] ? st.cwd : NULL};
	int rc = run(&r, NULL);
	char *line = first_line(out);
	if (rc == 0 && line[0] == '/' && !strchr(line, ' ') && strlen(line) < sizeof(st.lib))
		strcpy(st.lib, line);
	else
		slurm_info("hpcsched: job %u.%u: %s: no libhpcmon (%s): its tasks are followed by "
			   "the scheduler's events",
			   st.job, st.step, argv[0], line[0] ? line : "hpcmon-lib failed");
	return ESPANK_SUCCESS;
}

/* In each task, root, before exec: the kernel class or scx_hpc's policy. */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (st.error[0]) {
		int id = -1;
		if (spank_get_item(sp, S_TASK_ID, &id) == ESPANK_SUCCESS && id == 0)
			slurm_error("%s", st.error);
		return SPANK_FAIL;
	}
	if (!st.active || (st.be != B_KERNEL && st.be != B_SCX))
		return ESPANK_SUCCESS;
	struct sched_param p = {.sched_priority = 0};
	int pol = st.be == B_KERNEL ? SCHED_HPC_POLICY : SCHED_EXT_POLICY;
	if (sched_setscheduler(0, pol, &p) != 0) {
		int err = errno, id = -1;
		if (spank_get_item(sp, S_TASK_ID, &id) == ESPANK_SUCCESS && id == 0)
			slurm_error("hpcsched: job %u.%u: cannot switch the tasks to %s: %s", st.job,
				    st.step, st.be == B_KERNEL ? "SCHED_HPC" : "SCHED_EXT (scx_hpc)",
				    strerror(err));
		return SPANK_FAIL;
	}
	return ESPANK_SUCCESS;
}

/* In each task, as the user, before exec: the monitor for hpcd. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!st.active || st.be != B_HPCD || !st.lib[0])
		return ESPANK_SUCCESS;
	char old[4096] = "", pre[sizeof(old) + PATH_MAX + 2], rep[8];
	job_env(sp, "LD_PRELOAD", old, sizeof(old));
	if (fmt(pre, sizeof(pre), "%s%s%s", st.lib, old[0] ? ":" : "", old) != 0)
		return ESPANK_SUCCESS;
	spank_setenv(sp, "LD_PRELOAD", pre, 1);
	spank_setenv(sp, "HPCD_SOCKET", st.sock, 1);
	if (spank_getenv(sp, "HPCMON_REPORT", rep, sizeof(rep)) == ESPANK_ENV_NOEXIST) {
		char p[PATH_MAX + 16];
		fmt(p, sizeof(p), "%s/monitor.json", st.udir);
		spank_setenv(sp, "HPCMON_REPORT", p, 1);
	}
	return ESPANK_SUCCESS;
}

/* slurmstepd, root, each task forked (not yet exec'd): one without the
 * monitor is hpcd's by its pid (its sleeps and wake-ups followed). */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!st.active)
		return ESPANK_SUCCESS;
	st.tasks++;
	if (st.be != B_HPCD || st.lib[0])
		return ESPANK_SUCCESS;
	pid_t pid = 0;
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || pid <= 0)
		return ESPANK_SUCCESS;
	char req[512], reply[1024];
	fmt(req, sizeof(req), "{\"cmd\":\"add\",\"pid\":%d,\"name\":\"%.64s\"}", (int)pid,
	    st.prog[0] && !strpbrk(st.prog, "\"\\") ? st.prog : "task");
	if (ctl_request(st.ctl, req, reply, sizeof(reply), 5000) != 0)
		slurm_error("hpcsched: job %u.%u: hpcd did not take task %d: %s", st.job, st.step,
			    (int)pid, reply);
	return ESPANK_SUCCESS;
}

/* ---- the step's end: stop, report, clean up --------------------------------------- */

/* A JSON number after "key": in `s`, or -1. */
static double json_num(const char *s, const char *key)
{
	char k[64];
	fmt(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(s, k);
	if (!p || !strncmp(p + strlen(k), "null", 4))
		return -1;
	return strtod(p + strlen(k), NULL);
}

/* Copy `from` (root's) to `to` as the job's user, in the job's directory. */
static int write_as_user(const char *from, const char *to)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (drop_to_user(st.uid, st.gid) != 0)
			_exit(1);
		int in = open(from, O_RDONLY | O_CLOEXEC);
		int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (in < 0 || out < 0)
			_exit(1);
		char b[65536];
		ssize_t n;
		while ((n = read(in, b, sizeof(b))) > 0)
			if (write(out, b, (size_t)n) != n)
				_exit(1);
		_exit(close(out) == 0 && n == 0 ? 0 : 1);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void write_report(void)
{
	char path[PATH_MAX + 32], out[PATH_MAX + 64], host[256] = "";
	static char text[1 << 16], mon[1 << 16];
	fmt(path, sizeof(path), "%s/report.txt", st.dir);
	gethostname(host, sizeof(host) - 1);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "hpcsched: job %u step %u on %s: %s, heuristic %s%s%s, %d task(s)\n\n", st.job,
		st.step, host, backend_name[st.be], st.mode, st.set[0] ? ", " : "", st.set, st.tasks);
	struct stat s;
	if (stat(st.trace, &s) == 0) {
		char *argv[] = {a_hpcctl, "report", st.trace, NULL};
		char *envp[] = {TOOL_PATH, NULL};
		struct run r = {.argv = argv, .envp = envp, .buf = text, .len = sizeof(text)};
		int rc = run(&r, NULL);
		fputs(text, f);
		if (rc != 0)
			fprintf(f, "(hpcctl report exited with %d)\n", rc);
	} else {
		char log[PATH_MAX + 16];
		fmt(log, sizeof(log), "%s/trace.log", st.dir);
		read_text(log, text, sizeof(text));
		fprintf(f, "no trace was recorded%s%s\n", text[0] ? ": " : "",
			text[0] ? last_line(text) : "");
	}
	char mp[PATH_MAX + 16];
	fmt(mp, sizeof(mp), "%s/monitor.json", st.udir);
	if (read_text(mp, mon, sizeof(mon)) == 0 && mon[0]) {
		double lip = json_num(mon, "lip"), eff = json_num(mon, "efficiency");
		double im = json_num(mon, "iter_lip_mean"), ix = json_num(mon, "iter_lip_max");
		if (lip >= 0)
			fprintf(f, "\nLIP %.2f %%, load balance efficiency %.4f (libhpcmon, %d ranks)\n",
				100 * lip, eff, (int)json_num(mon, "size"));
		if (im >= 0)
			fprintf(f, "per-iteration LIP mean %.2f %%, max %.2f %%\n", 100 * im, 100 * ix);
	}
	fclose(f);
	if (!st.cwd[0])
		return;
	fmt(out, sizeof(out), "%s/hpcsched-%u.%u.txt", st.cwd, st.job, st.step);
	if (write_as_user(path, out) != 0)
		slurm_error("hpcsched: job %u.%u: cannot write %s", st.job, st.step, out);
	if (stat(st.trace, &s) == 0) {
		fmt(out, sizeof(out), "%s/hpcsched-%u.%u.jsonl", st.cwd, st.job, st.step);
		write_as_user(st.trace, out);
	}
}

/*
 * Run fn in a process of its own session, reparented away from slurmstepd,
 * and wait up to `ms` for it: at the step's end Slurm's process tracking
 * signals what slurmstepd still has below it (hpcctl report was killed by
 * SIGTERM half-way through).
 */
static void detached(void (*fn)(void), long ms)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int sig = 1; sig < 32; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		setsid();
		pid_t d = fork();
		if (d == 0) {
			close(p[1]);
			fn();
			_exit(0);
		}
		(void)!write(p[1], &d, sizeof(d));
		_exit(0);
	}
	close(p[1]);
	pid_t d = -1;
	if (read(p[0], &d, sizeof(d)) != sizeof(d))
		d = -1;
	close(p[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (d > 0 && !gone_within(d, ms))
		kill(d, SIGKILL);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (!st.active || spank_context() != S_CTX_REMOTE)
		return ESPANK_SUCCESS;
	st.active = 0;
	if (st.be == B_HPCD && st.hpcd > 0) {
		/* hpcd releases every task; its guardian removes what is left. */
		char reply[512];
		if (alive(st.hpcd))
			ctl_request(st.ctl, "{\"cmd\":\"shutdown\"}", reply, sizeof(reply), 2000);
		if (!gone_within(st.hpcd, 5000))
			stop_pid(st.hpcd, SIGTERM, 5000);
	}
	/* The trace ends with hpcd's end event; the other backends' at SIGINT. */
	if (st.tracer > 0) {
		if (st.be != B_HPCD || !gone_within(st.tracer, 3000))
			stop_pid(st.tracer, SIGINT, 5000);
	}
	detached(write_report, 60000);
	remove_tree(st.dir);
	return ESPANK_SUCCESS;
}
