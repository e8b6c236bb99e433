// SPDX-License-Identifier: GPL-2.0
/*
 * libhpcmon: PMPI monitor, LD_PRELOAD-able into unmodified MPI programs.
 *
 * Wrapped blocking calls (the "wait" of an iteration): MPI_Barrier, MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Recv, MPI_Probe, MPI_Sendrecv, MPI_Bcast,
 * MPI_Reduce, MPI_Allreduce, MPI_Gather, MPI_Scatter, MPI_Allgather,
 * MPI_Alltoall. Also MPI_Init, MPI_Init_thread and MPI_Finalize. Each also
 * from Fortran (mpif.h, 'use mpi', 'use mpi_f08'): fortran_calls.h.
 *
 * Iterations: compute runs between wrapped calls. Consecutive blocking calls
 * separated by less than min_wait of compute form one wait phase; when a wait
 * phase reaches min_wait (HPCMON_MIN_WAIT_US, default 100 us) the iteration
 * closes at the exit of that call (compute resumes) and is published as an
 * hpcmon_record. A wait phase that stays shorter is counted as
 * compute, like the policy core does with short sleeps.
 *
 * Per wrapped call: two clock_gettime (vDSO) and no syscall, except the
 * first call of a wait phase (after at least min_wait of compute, or after
 * an iteration closed), which also reads the thread's CPU clock (one system
 * call: the compute phase's CPU time, record field cpu_ns); one more CPU
 * clock read and one send per closed iteration (MSG_DONTWAIT on the rank's
 * own connection to hpcd, dropped when nobody listens; without a connection,
 * one connect attempt a second at most).
 *
 * One source, one library per MPI implementation (their ABIs differ):
 * libhpcmon.so (libhpcmon-openmpi.so) for Open MPI, libhpcmon-mpich.so for
 * MPICH. At load time the library asks the program's MPI for its name
 * (MPI_Get_library_version, callable before MPI_Init); if it is not the one
 * the library was built for, it prints one error line (rank 0) and runs the
 * program again without itself in LD_PRELOAD (same pid, arguments and
 * environment), so the program runs unmonitored instead of passing handles of
 * one ABI to the other. If that exec is impossible it stays loaded but inert.
 */
#include "hpcmon_proto.h"

extern "C" {
#include "hpc_policy.h"
}

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <initializer_list>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

#include "launch.hpp"

// The MPI this library is built for, as MPI_Get_library_version starts.
#if defined(OPEN_MPI)
#define HPCMON_MPI "Open MPI"
#define HPCMON_OTHER_LIB "libhpcmon-mpich.so"
#elif defined(MPICH_VERSION)
#define HPCMON_MPI "MPICH"
#define HPCMON_OTHER_LIB "libhpcmon-openmpi.so"
#else
#error "libhpcmon is built for Open MPI or MPICH"
#endif
#ifndef HPCMON_LIB_NAME
#define HPCMON_LIB_NAME "libhpcmon.so"
#endif

namespace
{

struct Config {
	hpc_params policy{}; // min_wait_us: the iteration boundary (hpc_wait_closes())
	bool blocking = false;
	bool blocking_auto = true; // HPCMON_BLOCKING_WAIT=auto (the default)
	long max_sleep_ns = 200000;
	bool quiet = false;
	std::string report_path;
	std::vector<int> ignore;
	size_t max_iters = 100000;
};

struct State {
	bool active = false; // between MPI_Init and MPI_Finalize
	int depth = 0;       // wrapped calls in progress (PMPI may re-enter)
	pthread_t main_thread{};
	int rank = 0, size = 1;
	int32_t pid = 0;
	uint32_t job = 0;
	uint64_t t_init = 0;
	uint64_t last_exit = 0; // exit of the last wrapped call (or init)
	uint64_t run = 0;       // compute of the current iteration
	uint64_t wait = 0;      // current wait phase (not yet closed)
	uint32_t phases = 0;    // wait phases begun in the current iteration
	uint64_t nr_iter = 0, sum_run = 0, sum_wait = 0;
	uint64_t blocked = 0, calls = 0;
	std::vector<uint64_t> iter_run; // per closed iteration, up to max_iters
	int sock = -1;
	sockaddr_un addr{};
	socklen_t addrlen = 0;
	uint64_t sent = 0, dropped = 0;
	uint64_t next_connect = 0;                  // no connection: when to try again
	uint64_t cpu0 = 0, nvcsw0 = 0, nivcsw0 = 0; // at MPI_Init: reported as deltas
	// The main thread's CPU time when the last iteration closed, and when the
	// present wait phase began (its first call): the compute phase's CPU
	// time is their difference. Two reads per iteration.
	uint64_t cpu_closed = 0, cpu_wait_began = 0;
};

Config cfg;
State st;
// Built for another MPI than the program's: pass every call through. Apart
// from st: constant-initialised, so set safely by the load-time constructor
// whatever the order of the dynamic initialisers.
bool inert = false;

inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + ts.tv_nsec;
}

inline uint64_t now_ns()
{
	return clock_ns(CLOCK_MONOTONIC);
}

void warn(const char *fmt, const char *what)
{
	fprintf(stderr, "hpcmon: ");
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
}

uint64_t env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max || s[0] == '-') {
		warn("ignoring bad %s", name);
		return def;
	}
	return v;
}

uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
	return h;
}

uint32_t job_id()
{
	for (const char *v : {"HPCMON_JOB", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
			      "PMI_KVSNAME", "SLURM_JOB_ID"}) {
		const char *s = getenv(v);
		if (s && *s)
			return fnv1a(s);
	}
	char buf[32];
	snprintf(buf, sizeof(buf), "ppid:%d", static_cast<int>(getppid()));
	return fnv1a(buf);
}

// The first line (up to a comma) of the program's MPI_Get_library_version (whatever MPI the
// PMPI symbols resolve to: the program's own), "" if it fails.
std::string program_mpi()
{
	// Large enough for any implementation's MPI_MAX_LIBRARY_VERSION_STRING
	// (Open MPI 256, MPICH 8192), whichever mpi.h this file saw.
	static char buf[16384];
	int len = 0;
	if (PMPI_Get_library_version(buf, &len) != MPI_SUCCESS)
		return {};
	buf[len >= 0 && static_cast<size_t>(len) < sizeof(buf) ? len : sizeof(buf) - 1] = 0;
	std::string v(buf);
	size_t nl = v.find_first_of(",\r\n");
	if (nl != std::string::npos)
		v.resize(nl);
	for (char &c : v)
		if (c == '\t')
			c = ' ';
	return v;
}

// LD_PRELOAD without this library (entries separated by spaces or colons).
std::string preload_without_self(const char *preload)
{
	Dl_info info{};
	char self[PATH_MAX], entry[PATH_MAX];
	if (!dladdr(reinterpret_cast<void *>(&program_mpi), &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, self))
		return preload;
	std::string out, s(preload);
	size_t pos = 0;
	while (pos < s.size()) {
		size_t end = s.find_first_of(" :", pos);
		if (end == std::string::npos)
			end = s.size();
		std::string tok = s.substr(pos, end - pos);
		pos = end + 1;
		if (tok.empty() || (realpath(tok.c_str(), entry) && !strcmp(entry, self)))
			continue;
		out += (out.empty() ? "" : " ") + tok;
	}
	return out;
}

// Run the program again without this library in LD_PRELOAD (same pid, arguments
// and environment otherwise). Returns only if that is impossible.
void reexec_without_self(char **argv)
{
	const char *preload = getenv("LD_PRELOAD");
	if (!argv || !preload || getenv("HPCMON_REEXEC"))
		return;
	std::string saved(preload), rest = preload_without_self(preload);
	if (rest == saved)
		return; // not loaded through LD_PRELOAD
	if (rest.empty())
		unsetenv("LD_PRELOAD");
	else
		setenv("LD_PRELOAD", rest.c_str(), 1);
	setenv("HPCMON_REEXEC", "1", 1); // never twice
	fflush(stderr);
	execv("/proc/self/exe", argv);
	setenv("LD_PRELOAD", saved.c_str(), 1);
}

// At load time (glibc passes the program's arguments to constructors): is the
// program's MPI the one this library is built for?
__attribute__((constructor)) void check_mpi(int, char **argv, char **)
{
	std::string mpi = program_mpi();
	if (mpi.rfind(HPCMON_MPI, 0) == 0)
		return;
	inert = true;
	if (hpcbench::launcher_rank_is_zero())
		fprintf(stderr,
			"hpcmon: error: " HPCMON_LIB_NAME " is built for " HPCMON_MPI
			" but this program uses %s; monitor off (preload " HPCMON_OTHER_LIB
			" instead)\n",
			mpi.empty() ? "an MPI whose library version is unknown" : mpi.c_str());
	reexec_without_self(argv);
	// Still loaded: the wrappers pass every call through. That is only safe if
	// this library's handles are as wide as any MPI's (Open MPI's are
	// pointers, MPICH's ints): an MPICH build would truncate Open MPI's.
	if (sizeof(MPI_Comm) < sizeof(void *)) {
		fprintf(stderr, "hpcmon: error: cannot run this program without " HPCMON_LIB_NAME
				" (not in LD_PRELOAD, or exec failed); exiting\n");
		_exit(127);
	}
}

void load_config()
{
	hpc_params_default(&cfg.policy);
	cfg.policy.min_wait_us = static_cast<uint32_t>(
		env_u64("HPCMON_MIN_WAIT_US", HPC_DEF_MIN_WAIT_US, HPC_MAX_MIN_WAIT_US));
	const char *bw = getenv("HPCMON_BLOCKING_WAIT");
	cfg.blocking_auto = !bw || !*bw || !strcmp(bw, "auto");
	cfg.blocking = !cfg.blocking_auto && env_u64("HPCMON_BLOCKING_WAIT", 0, 1) == 1;
	cfg.max_sleep_ns = static_cast<long>(env_u64("HPCMON_MAX_SLEEP_US", 200, 100000) * 1000);
	if (cfg.max_sleep_ns < 1000)
		cfg.max_sleep_ns = 1000;
	cfg.quiet = env_u64("HPCMON_QUIET", 0, 1) == 1;
	cfg.max_iters = env_u64("HPCMON_MAX_ITERS", 100000, 100000000);
	if (const char *r = getenv("HPCMON_REPORT"))
		cfg.report_path = r;
	if (const char *ig = getenv("HPCMON_IGNORE_RANKS")) {
		std::string s(ig);
		size_t pos = 0;
		while (pos <= s.size()) {
			size_t c = s.find(',', pos);
			std::string tok =
				s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
			if (!tok.empty()) {
				char *end;
				long v = strtol(tok.c_str(), &end, 10);
				if (*end || v < 0)
					warn("ignoring bad rank '%s' in HPCMON_IGNORE_RANKS",
					     tok.c_str());
				else
					cfg.ignore.push_back(static_cast<int>(v));
			}
			if (c == std::string::npos)
				break;
			pos = c + 1;
		}
	}
}

void open_socket()
{
	const char *path = getenv("HPCD_SOCKET");
	if (!path)
		path = HPCMON_DEFAULT_SOCKET;
	if (!*path)
		return; // HPCD_SOCKET="" : publishing off
	if (strlen(path) >= sizeof(st.addr.sun_path)) {
		warn("HPCD_SOCKET path too long: %s", path);
		return;
	}
	st.addr.sun_family = AF_UNIX;
	strcpy(st.addr.sun_path, path);
	st.addrlen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + strlen(path) + 1);
}

hpcmon_record make_record(uint16_t kind, uint64_t iteration, uint64_t run, uint64_t wait,
			  uint64_t end, uint64_t cpu, uint32_t phases)
{
	hpcmon_record r{};
	r.magic = HPCMON_MAGIC;
	r.version = HPCMON_VERSION;
	r.kind = kind;
	r.pid = st.pid;
	r.rank = st.rank;
	r.size = st.size;
	r.job = st.job;
	r.iteration = iteration;
	r.run_ns = run;
	r.wait_ns = wait;
	r.end_ns = end;
	r.cpu_ns = cpu;
	r.phases = phases;
	return r;
}

// Send @r on the rank's connection; a connection hpcd closed is dropped (the
// next record connects again), a full one keeps (hpcd is behind).
bool send_record(const hpcmon_record &r)
{
	if (send(st.sock, &r, sizeof r, MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof r)
		return true;
	if (errno != EAGAIN && errno != EWOULDBLOCK) {
		close(st.sock);
		st.sock = -1;
	}
	return false;
}

// The rank's own connection to hpcd (one queue per rank: a barrier's records
// of every rank of a node fit, where one shared datagram queue held 10), made
// at MPI_Init and, when hpcd was not there or went away, again at most once a
// second. A new connection starts with the rank's hello: at MPI_Init its
// time, later the time it connected (hpcd's history of the rank starts there).
bool connected(uint64_t now)
{
	if (st.sock >= 0)
		return true;
	if (!st.addrlen || now < st.next_connect)
		return false;
	st.next_connect = now + 1000000000ull;
	st.sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (st.sock < 0)
		return false;
	if (connect(st.sock, reinterpret_cast<const sockaddr *>(&st.addr), st.addrlen) != 0) {
		close(st.sock);
		st.sock = -1;
		return false;
	}
	const uint64_t since = st.sent || st.dropped ? now : st.t_init;
	if (send_record(make_record(HPCMON_HELLO, 0, 0, 0, since, 0, 0)))
		st.sent++;
	return st.sock >= 0;
}

void publish(uint16_t kind, uint64_t iteration, uint64_t run, uint64_t wait, uint64_t end,
	     uint64_t cpu = 0, uint32_t phases = 0)
{
	if (!st.addrlen)
		return;
	// The hello is the connection's first record; a bye needs no new one.
	if (kind == HPCMON_BYE ? st.sock < 0 : !connected(now_ns())) {
		st.dropped++;
		return;
	}
	if (kind != HPCMON_HELLO &&
	    send_record(make_record(kind, iteration, run, wait, end, cpu, phases)))
		st.sent++;
	else if (kind != HPCMON_HELLO)
		st.dropped++;
}

void usage_now(uint64_t &cpu, uint64_t &nvcsw, uint64_t &nivcsw)
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	nvcsw = static_cast<uint64_t>(ru.ru_nvcsw);
	nivcsw = static_cast<uint64_t>(ru.ru_nivcsw);
}

// Whether the ranks on this node outnumber the CPUs they may run on (the
// union of their affinities): a polling wait then takes the CPU from a rank
// that computes. Collective over MPI_COMM_WORLD (at MPI_Init).
bool node_oversubscribed()
{
	MPI_Comm node;
	if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
	    MPI_SUCCESS)
		return false;
	int local = 1;
	PMPI_Comm_size(node, &local);
	cpu_set_t mine, all;
	CPU_ZERO(&mine);
	CPU_ZERO(&all);
	if (sched_getaffinity(0, sizeof mine, &mine) != 0)
		CPU_ZERO(&mine);
	PMPI_Allreduce(&mine, &all, static_cast<int>(sizeof mine), MPI_BYTE, MPI_BOR, node);
	PMPI_Comm_free(&node);
	const int cpus = CPU_COUNT(&all);
	return cpus > 0 && local > cpus;
}

void after_init()
{
	load_config();
	// auto: wait by sleeping where ranks share CPUs, by polling otherwise.
	if (cfg.blocking_auto)
		cfg.blocking = node_oversubscribed();
	PMPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &st.size);
	st.pid = static_cast<int32_t>(getpid());
	st.job = job_id();
	st.main_thread = pthread_self();
	st.iter_run.reserve(cfg.max_iters < 4096 ? cfg.max_iters : 4096);
	open_socket();
	usage_now(st.cpu0, st.nvcsw0, st.nivcsw0);
	st.t_init = st.last_exit = now_ns();
	st.cpu_closed = st.cpu_wait_began = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	publish(HPCMON_HELLO, 0, 0, 0, st.t_init);
	st.active = true;
}

void close_iteration(uint64_t end)
{
	if (st.iter_run.size() < cfg.max_iters)
		st.iter_run.push_back(st.run);
	st.sum_run += st.run;
	st.sum_wait += st.wait;
	const uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	const uint64_t work =
		st.cpu_wait_began > st.cpu_closed ? st.cpu_wait_began - st.cpu_closed : 0;
	st.cpu_closed = cpu;
	publish(HPCMON_ITERATION, st.nr_iter, st.run, st.wait, end, work, st.phases);
	st.nr_iter++;
	st.run = 0;
	st.wait = 0;
	st.phases = 0;
}

// Compute ran from the last exit to @t: a gap of at least min_wait ends the
// wait phase; if that phase did not reach min_wait, it was compute after all.
inline void account_gap(uint64_t t)
{
	uint64_t gap = t > st.last_exit ? t - st.last_exit : 0;
	if (gap >= uint64_t{cfg.policy.min_wait_us} * 1000 && st.wait) {
		st.run += st.wait;
		st.wait = 0;
	}
	st.run += gap;
}

// RAII guard around one wrapped call.
class Phase
{
public:
	Phase()
	{
		on_ = st.active && st.depth == 0 && pthread_equal(pthread_self(), st.main_thread);
		if (!on_)
			return;
		st.depth++;
		t_in_ = now_ns();
		account_gap(t_in_);
		// The first call of a wait phase: the compute phase ends here.
		if (!st.wait) {
			st.cpu_wait_began = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			st.phases++;
		}
	}
	~Phase()
	{
		if (!on_)
			return;
		uint64_t t = now_ns();
		st.depth--;
		uint64_t d = t - t_in_;
		st.wait += d;
		st.blocked += d;
		st.calls++;
		st.last_exit = t;
		if (hpc_wait_closes(st.wait, &cfg.policy))
			close_iteration(t);
	}
	Phase(const Phase &) = delete;
	Phase &operator=(const Phase &) = delete;

private:
	bool on_;
	uint64_t t_in_ = 0;
};

// Blocking-wait mode: poll until done, sleeping with exponential back-off so
// that the OS (SCHED_HPC, scx_hpc) sees the wait as a sleep.
class Backoff
{
public:
	void sleep()
	{
		struct timespec ts = {0, ns_};
		nanosleep(&ts, nullptr);
		if (ns_ < cfg.max_sleep_ns)
			ns_ = ns_ * 2 < cfg.max_sleep_ns ? ns_ * 2 : cfg.max_sleep_ns;
	}

private:
	long ns_ = 5000;
};

int wait_req(MPI_Request *req, MPI_Status *status)
{
	Backoff b;
	for (;;) {
		int done = 0, rc = PMPI_Test(req, &done, status);
		if (rc != MPI_SUCCESS || done)
			return rc;
		b.sleep();
	}
}

template <class Start> int blocking_via(Start start, MPI_Status *status = MPI_STATUS_IGNORE)
{
	MPI_Request req;
	int rc = start(&req);
	if (rc != MPI_SUCCESS)
		return rc;
	return wait_req(&req, status);
}

inline bool use_blocking()
{
	return cfg.blocking && st.active && pthread_equal(pthread_self(), st.main_thread);
}

// Utilisation in percent, as the policy core computes it (0.01 % resolution).
double pct(uint64_t a, uint64_t b)
{
	return hpc_util(a, b) / (HPC_UTIL_SCALE / 100.0);
}

struct Totals {
	int32_t rank;
	int32_t ignored;
	uint64_t nr_iter, comp_ns, wait_ns, blocked_ns, wall_ns, cpu_ns, nvcsw, nivcsw, calls, sent,
		dropped, kept;
};

bool ignored(int rank)
{
	for (int r : cfg.ignore)
		if (r == rank)
			return true;
	return false;
}

// LIP, the load imbalance percentage of the container paper (section IV.A,
// "similar to the traditional load imbalance percentage"), of the compute
// times @c: (max - mean) / max, 0 when balanced, below 1. That is Eq. 3's
// psi_p / interval_p for the most loaded process; divided by each process's
// own time instead, a process that barely computes would dominate and the
// "percentage" would grow without bound. Negative if no rank computed.
double lip_of(const std::vector<double> &c)
{
	double mean = 0, max = 0;
	for (double x : c) {
		mean += x;
		max = std::fmax(max, x);
	}
	if (c.empty() || max <= 0)
		return -1;
	mean /= static_cast<double>(c.size());
	return (max - mean) / max;
}

void finalize_report()
{
	uint64_t t = now_ns();
	account_gap(t);
	st.active = false;
	// A pending wait phase shorter than min_wait is compute.
	uint64_t comp = st.sum_run + st.run + st.wait;
	publish(HPCMON_BYE, st.nr_iter, st.sum_run, st.sum_wait, t);

	Totals mine{};
	usage_now(mine.cpu_ns, mine.nvcsw, mine.nivcsw);
	mine.cpu_ns -= st.cpu0;
	mine.nvcsw -= st.nvcsw0;
	mine.nivcsw -= st.nivcsw0;
	mine.rank = st.rank;
	mine.ignored = ignored(st.rank);
	mine.nr_iter = st.nr_iter;
	mine.comp_ns = comp;
	mine.wait_ns = st.sum_wait;
	mine.blocked_ns = st.blocked;
	mine.wall_ns = t - st.t_init;
	mine.calls = st.calls;
	mine.sent = st.sent;
	mine.dropped = st.dropped;
	mine.kept = st.iter_run.size();

	std::vector<Totals> all(st.rank == 0 ? st.size : 0);
	PMPI_Gather(&mine, sizeof(Totals), MPI_BYTE, all.data(), sizeof(Totals), MPI_BYTE, 0,
		    MPI_COMM_WORLD);

	// Per-iteration LIP if every included rank closed the same number of
	// iterations: min and max (as min of -kept) in one signed reduction. Kept
	// <= max_iters < 2^63: unsigned MPI_MIN above 2^63 compares as signed in
	// MPICH 4.0 (MPI_UINT64_T) and Open MPI 4.1 (MPI_UNSIGNED_LONG).
	const int64_t kept = static_cast<int64_t>(mine.kept);
	int64_t mm[2] = {mine.ignored ? INT64_MAX : kept, mine.ignored ? INT64_MAX : -kept};
	int64_t red[2];
	PMPI_Allreduce(mm, red, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
	bool per_iter = red[0] != INT64_MAX && red[0] > 0 && red[0] == -red[1];
	uint64_t kmin = per_iter ? static_cast<uint64_t>(red[0]) : 0;
	std::vector<uint64_t> iters;
	if (per_iter) {
		std::vector<uint64_t> send(kmin, 0);
		if (!mine.ignored)
			std::copy(st.iter_run.begin(), st.iter_run.begin() + kmin, send.begin());
		iters.resize(st.rank == 0 ? kmin * st.size : 0);
		PMPI_Gather(send.data(), static_cast<int>(kmin), MPI_UINT64_T, iters.data(),
			    static_cast<int>(kmin), MPI_UINT64_T, 0, MPI_COMM_WORLD);
	}
	if (st.rank != 0)
		return;

	std::vector<double> comp_s;
	double cmax = 0, csum = 0;
	for (const Totals &r : all) {
		if (r.ignored)
			continue;
		double c = r.comp_ns / 1e9;
		comp_s.push_back(c);
		csum += c;
		cmax = std::fmax(cmax, c);
	}
	double lip = lip_of(comp_s);
	double eff = cmax > 0 ? csum / comp_s.size() / cmax : -1;
	double it_mean = -1, it_max = -1;
	uint64_t it_used = 0;
	if (per_iter) {
		double sum = 0;
		for (uint64_t i = 0; i < kmin; i++) {
			std::vector<double> c;
			for (int r = 0; r < st.size; r++)
				if (!all[r].ignored)
					c.push_back(static_cast<double>(iters[r * kmin + i]));
			double l = lip_of(c);
			if (l < 0)
				continue;
			sum += l;
			it_max = std::fmax(it_max, l);
			it_used++;
		}
		if (it_used)
			it_mean = sum / it_used;
	}

	if (!cfg.quiet) {
		fprintf(stderr,
			"hpcmon: %d ranks, min wait %" PRIu64 " us, blocking wait %s\n"
			"hpcmon: %4s %7s %10s %10s %7s %9s %9s %8s %7s\n",
			st.size, uint64_t{cfg.policy.min_wait_us}, cfg.blocking ? "on" : "off",
			"rank", "iters", "compute_s", "wait_s", "%comp", "cpu_s", "wall_s",
			"vol_cs", "calls");
		for (const Totals &r : all)
			fprintf(stderr,
				"hpcmon: %4d %7" PRIu64 " %10.4f %10.4f %7.2f %9.4f %9.4f %8" PRIu64
				" %7" PRIu64 "%s\n",
				r.rank, r.nr_iter, r.comp_ns / 1e9, r.wait_ns / 1e9,
				pct(r.comp_ns, r.comp_ns + r.wait_ns), r.cpu_ns / 1e9,
				r.wall_ns / 1e9, r.nvcsw, r.calls, r.ignored ? "  (ignored)" : "");
		char lips[64], effs[32];
		if (lip >= 0)
			snprintf(lips, sizeof(lips), "%.2f %%", 100 * lip);
		else
			snprintf(lips, sizeof(lips), "undefined (no rank computed)");
		if (eff >= 0)
			snprintf(effs, sizeof(effs), "%.4f", eff);
		else
			snprintf(effs, sizeof(effs), "undefined");
		fprintf(stderr, "hpcmon: LIP %s, load balance efficiency %s (over %zu ranks)\n",
			lips, effs, comp_s.size());
		if (it_used)
			fprintf(stderr,
				"hpcmon: per-iteration LIP mean %.2f %%, max %.2f %% (%" PRIu64
				" iterations)\n",
				100 * it_mean, 100 * it_max, it_used);
	}
	if (!cfg.report_path.empty()) {
		FILE *f = fopen(cfg.report_path.c_str(), "w");
		if (!f) {
			warn("cannot write HPCMON_REPORT %s", cfg.report_path.c_str());
			return;
		}
		auto num = [](double v) {
			char b[32];
			if (v < 0)
				return std::string("null");
			snprintf(b, sizeof(b), "%.6f", v);
			return std::string(b);
		};
		fprintf(f,
			"{\"size\":%d,\"min_wait_us\":%" PRIu64
			",\"blocking_wait\":%s,\"lip\":%s,\"efficiency\":%s,"
			"\"iter_lip_mean\":%s,\"iter_lip_max\":%s,\"iter_lip_count\":%" PRIu64
			",\"ranks\":[",
			st.size, uint64_t{cfg.policy.min_wait_us}, cfg.blocking ? "true" : "false",
			num(lip).c_str(), num(eff).c_str(), num(it_mean).c_str(),
			num(it_max).c_str(), it_used);
		for (size_t i = 0; i < all.size(); i++) {
			const Totals &r = all[i];
			fprintf(f,
				"%s{\"rank\":%d,\"ignored\":%s,\"iterations\":%" PRIu64
				",\"compute_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
				",\"blocked_ns\":%" PRIu64 ",\"wall_ns\":%" PRIu64
				",\"cpu_ns\":%" PRIu64 ",\"nvcsw\":%" PRIu64 ",\"nivcsw\":%" PRIu64
				",\"calls\":%" PRIu64 ",\"sent\":%" PRIu64 ",\"dropped\":%" PRIu64
				",\"compute_pct\":%.4f}",
				i ? "," : "", r.rank, r.ignored ? "true" : "false", r.nr_iter,
				r.comp_ns, r.wait_ns, r.blocked_ns, r.wall_ns, r.cpu_ns, r.nvcsw,
				r.nivcsw, r.calls, r.sent, r.dropped,
				pct(r.comp_ns, r.comp_ns + r.wait_ns));
		}
		fprintf(f, "]}\n");
		fclose(f);
	}
}

// After MPI_Init or MPI_Init_thread, from C or Fortran: register the rank once
// (a Fortran binding may call the C MPI_Init, wrapped too).
void init_done()
{
	int flag = 0;
	if (!inert && !st.active && PMPI_Initialized(&flag) == MPI_SUCCESS && flag)
		after_init();
}

// Before MPI_Finalize, from C or Fortran.
void before_finalize()
{
	if (st.active && pthread_equal(pthread_self(), st.main_thread))
		finalize_report();
	if (st.sock >= 0)
		close(st.sock);
	st.sock = -1;
}

// The next definition of the Fortran entry @name after this library: the MPI's
// own binding. Called only by a program that calls @name, so its MPI has it.
void *next_fortran(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "hpcmon: error: %s: no definition after " HPCMON_LIB_NAME "\n",
			name);
		abort();
	}
	return f;
}

} // namespace

extern "C" {

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		init_done();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		init_done();
	return rc;
}

int MPI_Finalize(void)
{
	before_finalize();
	return PMPI_Finalize();
}

int MPI_Barrier(MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) { return PMPI_Ibarrier(comm, r); });
	return PMPI_Barrier(comm);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	Phase p;
	if (use_blocking())
		return wait_req(request, status);
	return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status *statuses)
{
	Phase p;
	if (!use_blocking())
		return PMPI_Waitall(count, requests, statuses);
	Backoff b;
	for (;;) {
		int done = 0, rc = PMPI_Testall(count, requests, &done, statuses);
		if (rc != MPI_SUCCESS || done)
			return rc;
		b.sleep();
	}
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
	Phase p;
	if (!use_blocking())
		return PMPI_Waitany(count, requests, index, status);
	Backoff b;
	for (;;) {
		int done = 0, rc = PMPI_Testany(count, requests, index, &done, status);
		if (rc != MPI_SUCCESS || done)
			return rc;
		b.sleep();
	}
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
	     MPI_Status *status)
{
	Phase p;
	// From MPI_PROC_NULL: returns at once, nothing to wait for (and MPICH 4.0's
	// Irecv + Test would report source 0 instead of MPI_PROC_NULL).
	if (use_blocking() && source != MPI_PROC_NULL)
		return blocking_via(
			[&](MPI_Request *r) {
				return PMPI_Irecv(buf, count, type, source, tag, comm, r);
			},
			status);
	return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	Phase p;
	if (!use_blocking())
		return PMPI_Probe(source, tag, comm, status);
	Backoff b;
	for (;;) {
		int found = 0, rc = PMPI_Iprobe(source, tag, comm, &found, status);
		if (rc != MPI_SUCCESS || found)
			return rc;
		b.sleep();
	}
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
		 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
		 MPI_Comm comm, MPI_Status *status)
{
	Phase p;
	if (!use_blocking())
		return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
				     recvcount, recvtype, source, recvtag, comm, status);
	MPI_Request reqs[2];
	int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0]);
	if (rc != MPI_SUCCESS)
		return rc;
	rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[1]);
	if (rc != MPI_SUCCESS)
		return rc;
	MPI_Status sts[2];
	Backoff b;
	for (;;) {
		int done = 0;
		rc = PMPI_Testall(2, reqs, &done, sts);
		if (rc != MPI_SUCCESS)
			return rc;
		if (done)
			break;
		b.sleep();
	}
	if (status != MPI_STATUS_IGNORE) {
		*status = sts[0];
		if (source == MPI_PROC_NULL) { // as MPI_Sendrecv reports it
			status->MPI_SOURCE = MPI_PROC_NULL;
			status->MPI_TAG = MPI_ANY_TAG;
			PMPI_Status_set_elements(status, recvtype, 0);
		}
	}
	return MPI_SUCCESS;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Ibcast(buf, count, type, root, comm, r);
		});
	return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
	       int root, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm, r);
		});
	return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
		  MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, r);
		});
	return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					    recvtype, root, comm, r);
		});
	return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					     recvtype, root, comm, r);
		});
	return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					       recvtype, comm, r);
		});
	return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	Phase p;
	if (use_blocking())
		return blocking_via([&](MPI_Request *r) {
			return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					      recvtype, comm, r);
		});
	return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// The Fortran entry points (fortran_calls.h): the same monitoring, then the
// MPI's own Fortran binding with the same arguments.
#define HPCMON_FORTRAN_NEXT(name, ...)                                                             \
	static const auto next = reinterpret_cast<void (*)(__VA_ARGS__)>(next_fortran(name))
#define HPCMON_FORTRAN_WAIT(sym, name, n, params, args)                                            \
	void sym(params)                                                                           \
	{                                                                                          \
		HPCMON_FORTRAN_NEXT(name, params);                                                 \
		Phase p;                                                                           \
		next(args);                                                                        \
	}
#define HPCMON_FORTRAN_INIT(sym, name, n, params, args)                                            \
	void sym(params)                                                                           \
	{                                                                                          \
		HPCMON_FORTRAN_NEXT(name, params);                                                 \
		next(args);                                                                        \
		init_done();                                                                       \
	}
#define HPCMON_FORTRAN_FINALIZE(sym, name, n, params, args)                                        \
	void sym(params)                                                                           \
	{                                                                                          \
		HPCMON_FORTRAN_NEXT(name, params);                                                 \
		before_finalize();                                                                 \
		next(args);                                                                        \
	}
#include "fortran_calls.h"

} // extern "C"
