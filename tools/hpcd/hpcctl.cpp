// hpcctl: run programs under SCHED_HPC and tune it, through the kernel class
// (/sys/kernel/sched_hpc) when the kernel has it, else through hpcd; with
// --backend scx through scx_hpc, the sched_ext BPF scheduler (sched_ext/).
//
//   hpcctl run [--heuristic uniform|adaptive|phase] [--set K=V]... -- CMD [ARGS...]
//   hpcctl get [KEY]        hpcctl set KEY=VALUE...
//   hpcctl top [--once]     hpcctl status
//   hpcctl trace -o FILE [--duration SEC] [--perfetto F] [--paraver BASE] [-- CMD...]
//   hpcctl report FILE [--plot PNG] [--perfetto F] [--paraver BASE]
//
// Exit codes: 0 ok, 1 failure, 2 invalid KEY=VALUE (nothing changed), 3 hpcd
// not reachable, 64 usage error, 65 `run` without `--` or without a command,
// 126 command not executable, 127 command not found; `run` (and `trace --
// CMD`) otherwise exits with the command's status (128+N if killed by
// signal N).
#include "client.hpp"
#include "control.hpp"
extern "C" {
#include "hpc_smt.h"
}
#include "params_text.hpp"
#include "system.hpp"
#include "trace.hpp"
#include "tracefs.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numa.h>
#include <numaif.h>
#include <poll.h>
#include <sched.h>
#include <set>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

using nlohmann::json;
using namespace hpcd;
namespace trace = hpcd::trace;

namespace
{

enum Exit {
	kOk = 0,
	kFail = 1,
	kBadSetting = 2,
	kNoDaemon = 3,
	kUsage = 64,
	kNoDashDash = 65,
	kNoExec = 126,
	kNotFound = 127,
};

constexpr int kSchedHpc = 8; // include/uapi/linux/sched.h
constexpr int kSchedExt = 7; // sched_ext (Linux 6.12+)

struct Failure {
	int code;
	std::string msg;
};

[[noreturn]] void fail(int code, const std::string &msg)
{
	throw Failure{code, msg};
}

struct Opts {
	std::string socket, sysfs, backend = "auto", hpcd_bin, scx_bin, heuristic, key, membind;
	std::string output, perfetto, paraver, plot, title, input, tracefs;
	double duration = 0;
	bool force = false, launcher = false;
	std::vector<std::string> settings, cmd;
	bool once = false, json_out = false;
	double interval = 1.0;
	int count = 0, pid = 0, prio = 0;
	int sample_ms = 0; // trace --backend scx: sampling period (0: default)
};

std::string env_or(const char *name, const char *def)
{
	const char *v = std::getenv(name);
	return v && *v ? v : def;
}

bool use_kernel(const Opts &o)
{
	if (o.backend == "hpcd" || o.backend == "scx")
		return false;
	struct stat st;
	bool has = ::stat(o.sysfs.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
	if (o.backend == "kernel" && !has)
		fail(kFail, "the kernel has no SCHED_HPC (" + o.sysfs + " does not exist)");
	return has;
}

// ---- the kernel class ------------------------------------------------------

const std::vector<std::string> &kernel_knobs()
{
	static std::vector<std::string> k = [] {
		std::vector<std::string> v;
		for (int i = 0; i < HPC_P_NR; i++)
			v.push_back(hpc_param_names[i]);
		for (auto s : {"queue", "timeslice_us", "emul_period_us", "backend", "prio_range",
			       "smt_pairs"})
			v.push_back(s);
		return v;
	}();
	return k;
}

std::string trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

std::string sysfs_read(const Opts &o, const std::string &key)
{
	auto v = read_file(o.sysfs + "/" + key);
	if (!v)
		fail(kFail, "cannot read " + o.sysfs + "/" + key + ": " + std::strerror(errno));
	return trim(*v);
}

std::string unknown_key(const std::string &k, const std::vector<std::string> &known)
{
	std::string s = "unknown parameter '" + k + "' (known:";
	for (auto &x : known)
		s += " " + x;
	return s + ")";
}

int kernel_get(const Opts &o)
{
	auto &known = kernel_knobs();
	if (!o.key.empty()) {
		if (std::find(known.begin(), known.end(), o.key) == known.end())
			fail(kBadSetting, unknown_key(o.key, known));
		std::cout << sysfs_read(o, o.key) << "\n";
		return kOk;
	}
	for (auto &k : known)
		if (auto v = read_file(o.sysfs + "/" + k)) {
			std::string t = trim(*v);
			for (auto &c : t)
				if (c == '\n')
					c = ';';
			std::cout << k << "=" << t << "\n";
		}
	return kOk;
}

// The kernel class: sched_priority of a SCHED_HPC task is its fixed
// priority (0: dynamic). The value is checked against prio_range first
// (exit 2), the task must be SCHED_HPC (exit 1); its reset-on-fork flag is
// kept. The kernel checks again (EINVAL: exit 2, EPERM: exit 1).
void kernel_prio(const Opts &o)
{
	hpc_prio_range range{0, 0};
	if (sscanf(sysfs_read(o, "prio_range").c_str(), "%u %u", &range.min, &range.max) != 2)
		fail(kFail, "unreadable prio_range in " + o.sysfs);
	if (o.prio != 0 &&
	    (o.prio < static_cast<int>(range.min) || o.prio > static_cast<int>(range.max)))
		fail(kBadSetting, fmt::format("prio: {} is outside {}..{} (0: dynamic)", o.prio,
					      range.min, range.max));
	int pol = ::sched_getscheduler(o.pid);
	if (pol < 0)
		fail(kFail, fmt::format("prio: no task {} ({})", o.pid, std::strerror(errno)));
	if ((pol & ~SCHED_RESET_ON_FORK) != kSchedHpc)
		fail(kFail, fmt::format("prio: task {} is not SCHED_HPC (policy {}; hpcctl run "
					"puts a command under it)",
					o.pid, pol & ~SCHED_RESET_ON_FORK));
	sched_param sp{};
	sp.sched_priority = o.prio;
	if (::sched_setscheduler(o.pid, pol, &sp) < 0) {
		const int e = errno;
		if (e == EPERM)
			fail(kFail, fmt::format("prio: {} for task {}: not permitted (a fixed "
						"priority above 4 needs CAP_SYS_NICE; "
						"RLIMIT_RTPRIO grants none)",
						o.prio, o.pid));
		fail(e == EINVAL ? kBadSetting : kFail,
		     fmt::format("prio: {} for task {}: {}", o.prio, o.pid, std::strerror(e)));
	}
}

void kernel_set(const Opts &o, const std::vector<std::string> &kv)
{
	// Validate the whole set against the present values with the core's
	// parser, then write; the kernel checks every write again.
	hpc_params p{};
	for (int i = 0; i < HPC_P_NR; i++) {
		uint32_t v;
		if (!hpc::parse_param_value(i, sysfs_read(o, hpc_param_names[i]), v))
			fail(kFail,
			     std::string("unreadable ") + hpc_param_names[i] + " in " + o.sysfs);
		hpc_param_put(&p, i, v);
	}
	hpc_prio_range range{0, HPC_PRIO_LIMIT};
	if (sscanf(sysfs_read(o, "prio_range").c_str(), "%u %u", &range.min, &range.max) != 2)
		fail(kFail, "unreadable prio_range in " + o.sysfs);
	std::vector<std::pair<std::string, std::string>> writes;
	for (auto &s : kv) {
		auto eq = s.find('=');
		if (eq == std::string::npos)
			fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
		std::string k = s.substr(0, eq), v = s.substr(eq + 1);
		std::string err;
		if (hpc_param_lookup(k.c_str()) >= 0) {
			if (!hpc::apply_setting(p, s, &range, err))
				fail(kBadSetting, err);
		} else if (hpc::is_sched_knob(k)) {
			uint32_t n;
			if (!hpc::parse_sched_knob(k, v, n, err))
				fail(kBadSetting, err);
		} else if (k == "backend") {
			if (v != "none" && v != "x86-smt-emul" && v != "power-smt")
				fail(kBadSetting, "backend=" + v +
							  ": must be none or the kernel's backend "
							  "(x86-smt-emul, power-smt)");
		} else if (k == "prio_range" || k == "smt_pairs") {
			fail(kBadSetting, k + " is read-only");
		} else {
			fail(kBadSetting, unknown_key(k, kernel_knobs()));
		}
		writes.emplace_back(k, v);
	}
	for (auto &[k, v] : writes) {
		try {
			write_file(o.sysfs + "/" + k, v + "\n");
		} catch (const std::system_error &e) {
			fail(e.code().value() == EINVAL ? kBadSetting : kFail,
			     "the kernel refused " + k + "=" + v + ": " + e.code().message());
		}
	}
}

// ---- hpcd ----------------------------------------------------------------

int code_of_kind(const std::string &kind)
{
	if (kind == "bad_key" || kind == "bad_value" || kind == "read_only" ||
	    kind == "kernel_only")
		return kBadSetting;
	return kFail;
}

json checked(const json &reply)
{
	if (!reply.value("ok", false))
		fail(code_of_kind(reply.value("kind", "")), reply.value("error", "hpcd failed"));
	return reply;
}

std::string self_dir()
{
	char buf[PATH_MAX];
	ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return "";
	std::string p(buf, static_cast<size_t>(n));
	return p.substr(0, p.rfind('/'));
}

void connect_or_fail(const Opts &o, ControlClient &c)
{
	if (!c.connect(o.socket))
		fail(kNoDaemon, fmt::format("hpcd is not running (control socket {}: {}); start "
					    "it with 'hpcd &' or use 'hpcctl run'",
					    o.socket, std::strerror(errno)));
}

void connect_or_start_once(const Opts &o, ControlClient &c);

// The hpcd this hpcctl started (-1: none): its child, ended with it.
pid_t g_hpcd = -1;

// Connect, starting an hpcd (that exits with its last task) if none answers;
// an hpcd that is just exiting (its last task gone) may still accept: ask it
// for its status, and try again if it does not answer.
void connect_or_start(const Opts &o, ControlClient &c)
{
	for (int attempt = 0;; attempt++) {
		connect_or_start_once(o, c);
		try {
			c.call(json{{"cmd", "status"}});
			return;
		} catch (const std::runtime_error &e) {
			c.close();
			if (attempt == 4)
				fail(kNoDaemon, std::string("hpcd does not answer: ") + e.what());
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
	}
}

void connect_or_start_once(const Opts &o, ControlClient &c)
{
	if (c.connect(o.socket))
		return;
	// --hpcd, else next to hpcctl (the build tree), in ../sbin (make
	// install), else hpcd from $PATH.
	std::string bin = o.hpcd_bin;
	for (auto d : {self_dir() + "/hpcd", self_dir() + "/../sbin/hpcd"})
		if (bin.empty() && ::access(d.c_str(), X_OK) == 0)
			bin = d;
	if (bin.empty())
		bin = "hpcd";
	std::string logf = o.socket + ".log";
	const pid_t me = ::getpid();
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kNoDaemon, std::string("fork: ") + std::strerror(errno));
	if (pid == 0) {
		// hpcd belongs to this command: it gets SIGTERM when hpcctl ends
		// however it ends (its guardian then undoes what it did). Its own
		// session keeps the terminal's signals away from it.
		::prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (::getppid() != me)
			::_exit(1);
		::setsid();
		int fd = ::open(logf.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int nul = ::open("/dev/null", O_RDWR);
		::dup2(nul, 0);
		::dup2(fd >= 0 ? fd : nul, 1);
		::dup2(fd >= 0 ? fd : nul, 2);
		::execlp(bin.c_str(), bin.c_str(), "--exit-when-idle", "--control",
			 o.socket.c_str(), nullptr);
		::_exit(127);
	}
	g_hpcd = pid;
	// Up to 5 s, looking every 5 ms: the command waits for it (hpcd is up
	// in some tens of ms; every ms here is a ms on the command's time).
	for (int i = 0; i < 1000; i++) {
		if (c.connect(o.socket))
			return;
		if (::waitpid(pid, nullptr, WNOHANG) == pid) {
			g_hpcd = -1;
			break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	fail(kNoDaemon,
	     "started " + bin + " but it does not answer on " + o.socket + " (see " + logf + ")");
}

// The hpcd this hpcctl started ends with it: given a moment to leave on its
// own (--exit-when-idle, after its last task), then told to (SIGTERM; its
// guardian undoes what it did either way). Waited for, so that its cgroups
// are gone when hpcctl returns.
void end_own_hpcd()
{
	if (g_hpcd <= 0)
		return;
	auto gone_within = [](int ms) {
		for (int i = 0; i < ms / 5; i++) {
			if (::waitpid(g_hpcd, nullptr, WNOHANG) != 0)
				return true;
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		}
		return false;
	};
	if (!gone_within(2000)) {
		::kill(g_hpcd, SIGTERM);
		if (!gone_within(10000)) {
			::kill(g_hpcd, SIGKILL);
			::waitpid(g_hpcd, nullptr, 0);
		}
	}
	g_hpcd = -1;
}

int hpcd_get(const Opts &o)
{
	ControlClient c;
	connect_or_fail(o, c);
	json req{{"cmd", "get"}};
	if (!o.key.empty())
		req["key"] = o.key;
	json r = checked(c.call(req));
	if (!o.key.empty()) {
		std::cout << trim(r["values"][o.key].get<std::string>()) << "\n";
		return kOk;
	}
	for (auto &[k, v] : r["values"].items()) {
		std::string t = trim(v.get<std::string>());
		for (auto &ch : t)
			if (ch == '\n')
				ch = ';';
		std::cout << k << "=" << t << "\n";
	}
	return kOk;
}

void check_keys(const std::vector<std::string> &kv)
{
	// Unknown keys and malformed settings are refused before anything is
	// contacted; values are checked by the backend against its state.
	for (auto &s : kv) {
		auto eq = s.find('=');
		if (eq == std::string::npos || eq == 0)
			fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
		std::string k = s.substr(0, eq);
		auto &known = kernel_knobs();
		if (std::find(known.begin(), known.end(), k) == known.end() &&
		    std::find(kDaemonKnobs.begin(), kDaemonKnobs.end(), k) == kDaemonKnobs.end()) {
			std::vector<std::string> all = known;
			all.insert(all.end(), kDaemonKnobs.begin(), kDaemonKnobs.end());
			fail(kBadSetting, unknown_key(k, all));
		}
	}
}

void hpcd_set(ControlClient &c, const std::vector<std::string> &kv)
{
	checked(c.call(json{{"cmd", "set"}, {"settings", kv}}));
}

// ---- run -----------------------------------------------------------------

int exec_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return kFail;
}

std::vector<char *> argv_of(const std::vector<std::string> &cmd)
{
	std::vector<char *> argv;
	for (auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	return argv;
}

[[noreturn]] void exec_cmd(const std::vector<std::string> &cmd)
{
	auto argv = argv_of(cmd);
	::execvp(argv[0], argv.data());
	int e = errno;
	std::cerr << "hpcctl: cannot run '" << cmd[0] << "': " << std::strerror(e) << "\n";
	::_exit(e == ENOENT ? kNotFound : kNoExec);
}

// --membind NODES: every node must exist (libnuma); checked before anything
// starts.
std::vector<int> check_membind(const std::string &s)
{
	if (s.empty())
		return {};
	auto nodes = parse_cpulist(s);
	if (!nodes)
		fail(kUsage, "--membind: '" + s + "' is not a list of NUMA nodes (e.g. 0 or 0-1)");
	if (numa_available() < 0)
		fail(kFail, "--membind: this kernel has no NUMA memory policy");
	std::vector<int> have;
	for (int n = 0; n <= numa_max_node(); n++)
		if (numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(n)))
			have.push_back(n);
	for (int n : *nodes)
		if (std::find(have.begin(), have.end(), n) == have.end())
			fail(kUsage,
			     fmt::format("--membind: NUMA node {} does not exist (nodes: {})", n,
					 format_cpulist(have)));
	return *nodes;
}

// Bind the calling process's memory (and, inherited, its command's) to
// `nodes`. -1 and errno on failure.
int apply_membind(const std::vector<int> &nodes)
{
	constexpr size_t kBits = 8 * sizeof(unsigned long);
	unsigned long mask[1024 / kBits] = {};
	for (int n : nodes)
		mask[static_cast<size_t>(n) / kBits] |= 1ul << (static_cast<size_t>(n) % kBits);
	return static_cast<int>(set_mempolicy(MPOL_BIND, mask, sizeof mask * 8));
}

// A command forked to run under SCHED_HPC: it waits until go(), then binds
// its memory (--membind), enters SCHED_HPC (kernel class) and execs. What
// fails in it comes back through `err` (close-on-exec: EOF = it execs).
struct Child {
	pid_t pid = -1;
	int gate = -1, err = -1;
};

// `policy`: the scheduling policy the child switches to before the exec
// (SCHED_HPC, SCHED_EXT), -1 to keep its own.
Child spawn(const std::vector<std::string> &cmd, const std::vector<int> &membind, int policy)
{
	int gate[2], err[2];
	if (::pipe2(gate, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0)
		fail(kFail, std::string("pipe: ") + std::strerror(errno));
	pid_t child = ::fork();
	if (child < 0)
		fail(kFail, std::string("fork: ") + std::strerror(errno));
	if (child == 0) {
		::close(gate[1]);
		::close(err[0]);
		char go = 0;
		if (::read(gate[0], &go, 1) != 1 || go != 'g')
			::_exit(kFail);
		auto report = [&](const std::string &what, int e, int code) {
			std::string m = what + ": " + std::strerror(e);
			(void)!::write(err[1], m.data(), m.size());
			::_exit(code);
		};
		if (!membind.empty() && apply_membind(membind) < 0)
			report("set_mempolicy(MPOL_BIND)", errno, kFail);
		sched_param sp{};
		if (policy >= 0 && ::sched_setscheduler(0, policy, &sp) < 0)
			report(policy == kSchedExt ? "sched_setscheduler(SCHED_EXT)"
						   : "sched_setscheduler(SCHED_HPC)",
			       errno, kFail);
		auto argv = argv_of(cmd);
		::execvp(argv[0], argv.data());
		int e = errno;
		report("cannot run '" + cmd[0] + "'", e, e == ENOENT ? kNotFound : kNoExec);
	}
	::close(gate[0]);
	::close(err[1]);
	return Child{child, gate[1], err[0]};
}

// Let the child go. "" once it has exec'd; else why it did not (and
// `code`, its exit status).
std::string go(Child &c, int &code)
{
	(void)!::write(c.gate, "g", 1);
	::close(c.gate);
	std::string msg;
	char b[512];
	ssize_t n;
	while ((n = ::read(c.err, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			msg.append(b, static_cast<size_t>(n));
	::close(c.err);
	if (!msg.empty()) {
		int st = 0;
		while (::waitpid(c.pid, &st, 0) < 0 && errno == EINTR)
			;
		code = exec_status(st);
	}
	return msg;
}

void kill_child(Child &c)
{
	::kill(c.pid, SIGKILL);
	::close(c.gate);
	::close(c.err);
	::waitpid(c.pid, nullptr, 0);
}

pid_t g_child = -1;
volatile sig_atomic_t g_stop = 0;
void forward(int sig)
{
	g_stop = sig;
	if (g_child > 0)
		::kill(g_child, sig);
}

void catch_signals()
{
	struct sigaction sa {
	};
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
		::sigaction(s, &sa, nullptr); // no SA_RESTART: waits end early
}

// An MPI launcher (mpirun, mpiexec, srun ...; --launcher for a wrapper):
// hpcd adopts the processes it starts as the job's ranks, not the launcher.
bool launches_ranks(const Opts &o)
{
	return o.launcher || (!o.cmd.empty() && is_launcher_name(o.cmd[0]));
}

// The command under hpcd: forked, added to hpcd, then let go.
Child start_managed(const Opts &o, ControlClient &c, const std::vector<int> &membind)
{
	Child ch = spawn(o.cmd, membind, -1);
	g_child = ch.pid;
	json r;
	try {
		r = c.call(json{{"cmd", "add"},
				{"pid", ch.pid},
				{"name", o.cmd[0].substr(o.cmd[0].rfind('/') + 1)},
				{"launcher", launches_ranks(o)}});
	} catch (...) {
		kill_child(ch);
		throw;
	}
	if (!r.value("ok", false)) {
		kill_child(ch);
		fail(kFail, "hpcd cannot manage the command: " + r.value("error", "?"));
	}
	return ch;
}

// Who hpcd adopted for the command, from its watch stream's task events:
// what `run` and `trace` say about a launcher's ranks at the end.
struct Adoption {
	std::map<int, json> tasks; // pid -> its latest task event

	void seen(const json &ev)
	{
		if (ev.value("event", std::string()) == "task")
			tasks[ev.value("pid", 0)] = ev;
	}
	static bool is_rank(const json &t)
	{
		return t.value("role", std::string()) == "task";
	}
	size_t ranks() const
	{
		return static_cast<size_t>(std::count_if(tasks.begin(), tasks.end(),
							 [](auto &kv) { return is_rank(kv.second); }));
	}
	// The warnings about this run, for the screen and the trace.
	std::vector<std::string> warnings(const Opts &o) const
	{
		std::vector<std::string> w;
		if (!launches_ranks(o))
			return w;
		const std::string cmd = o.cmd[0].substr(o.cmd[0].rfind('/') + 1);
		if (!ranks()) {
			w.push_back(fmt::format("{} started no process hpcd could adopt as a rank: "
						"nothing was balanced (ranks in ignore_ranks are "
						"not adopted; hpcd's log says what it saw)",
						cmd));
			return w;
		}
		std::vector<std::string> unmon;
		bool sampled = false;
		for (auto &[pid, t] : tasks)
			if (is_rank(t) && t.value("source", std::string()) != "monitor") {
				unmon.push_back(fmt::format("pid {} ({}) rank {}", pid,
							    t.value("name", std::string("?")),
							    t.value("rank", -1)));
				sampled |= t.value("source", std::string()) != "bpf";
			}
		if (!unmon.empty())
			w.push_back(fmt::format(
				"{} of {} rank(s) ran unmonitored (no libhpcmon hello: adopted "
				"under {}, iterations {}, a polling wait looks busy): {}; preload "
				"libhpcmon (hpcmon-lib PROGRAM) to see MPI's waits",
				unmon.size(), ranks(), cmd,
				sampled ? "sampled from /proc"
					: "from the scheduler's sleeps and wake-ups",
				fmt::join(unmon, ", ")));
		return w;
	}
};

// Say the warnings on stderr; a launcher run that adopted no rank fails
// (status 1) unless the command failed itself (its status then).
int adoption_verdict(const Opts &o, const Adoption &a, const std::vector<std::string> &w,
		     int status)
{
	for (auto &x : w)
		std::cerr << "hpcctl: warning: " << x << "\n";
	if (launches_ranks(o) && !a.ranks() && status == 0)
		return kFail;
	return status;
}

int wait_child(pid_t pid)
{
	int st = 0;
	while (::waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return exec_status(st);
}

// ---- scx_hpc (sched_ext) ---------------------------------------------------
//
// hpcctl drives scx_hpc through its loader: `scx_hpc --exit-when-idle`
// started detached when no instance runs, `scx_hpc --set` to change a
// running one, `--dump-tasks --json` and `--stats-once --json` for top and
// status (the loader reads the BPF maps).

bool use_scx(const Opts &o)
{
	return o.backend == "scx";
}

// The knobs scx_hpc has: the policy core's and timeslice_us,
// emul_period_us, queue (same names as the kernel's sysfs).
std::vector<std::string> scx_knobs()
{
	std::vector<std::string> v;
	for (int i = 0; i < HPC_P_NR; i++)
		v.push_back(hpc_param_names[i]);
	for (auto s : {"timeslice_us", "emul_period_us", "queue", "backend"})
		v.push_back(s);
	return v;
}

// Check KEY=VALUE settings as scx_hpc's loader does (params_text: the same
// parsers; with `whole_set`, hpc_params_check() over the defaults and them,
// within the emulation's priority range); exit 2 before anything happens.
// Returns the loader's flags for them.
std::vector<std::string> scx_check(const std::vector<std::string> &kv, bool whole_set)
{
	hpc_params p;
	hpc_params_default(&p);
	const hpc_prio_range range{HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX};
	const auto known = scx_knobs();
	std::map<std::string, std::string> val, core;
	for (auto &s : kv) {
		auto eq = s.find('=');
		if (eq == std::string::npos || eq == 0)
			fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
		std::string k = s.substr(0, eq), v = s.substr(eq + 1);
		if (std::find(known.begin(), known.end(), k) == known.end()) {
			if (std::find(kDaemonKnobs.begin(), kDaemonKnobs.end(), k) !=
				    kDaemonKnobs.end() ||
			    k == "prio_range" || k == "smt_pairs")
				fail(kBadSetting, k + " is not a knob of scx_hpc (scx_hpc has: " +
							  fmt::format("{}", fmt::join(known, " ")) +
							  ")");
			fail(kBadSetting, unknown_key(k, known));
		}
		std::string err;
		uint32_t n;
		if (k == "backend") {
			if (!hpc::parse_emul_backend(v, n, err))
				fail(kBadSetting, err);
		} else if (!hpc::is_sched_knob(k))
			core[k] = v;
		else if (!hpc::parse_sched_knob(k, v, n, err))
			fail(kBadSetting, err);
		val[k] = v;
	}
	// Together, as the loader applies them (params_text).
	if (std::string err; !hpc::apply_values(p, core, err))
		fail(kBadSetting, err);
	// Against the defaults when scx_hpc is to be started; a running
	// instance checks them against its own values (scx_hpc --set).
	if (int e = whole_set ? hpc_params_check(&p, &range) : 0)
		fail(kBadSetting, std::string("invalid parameters: ") + hpc_param_err_str(e));
	std::vector<std::string> flags;
	for (auto &[k, v] : val) {
		if (k == "queue") {
			if (v == "fifo")
				flags.push_back("--fifo");
			continue;
		}
		std::string f = k == "timeslice_us"     ? "slice-us"
				: k == "emul_period_us" ? "period-us"
							: k;
		std::replace(f.begin(), f.end(), '_', '-');
		flags.push_back("--" + f);
		flags.push_back(v);
	}
	return flags;
}

std::string scx_sysfs()
{
	return env_or("HPC_SCX_SYSFS", "/sys/kernel/sched_ext");
}

// The loader: --scx-hpc, $HPCCTL_SCX_HPC, next to hpcctl, in the build
// tree (build/scx/guest-root/usr/local/bin), else scx_hpc from $PATH.
std::string scx_bin(const Opts &o)
{
	if (!o.scx_bin.empty())
		return o.scx_bin;
	if (const char *e = std::getenv("HPCCTL_SCX_HPC"); e && *e)
		return e;
	const std::string d = self_dir();
	for (auto p : {d + "/scx_hpc", d + "/../../scx/guest-root/usr/local/bin/scx_hpc"})
		if (::access(p.c_str(), X_OK) == 0)
			return p;
	return "scx_hpc";
}

// sched_ext's state: "disabled", "enabled", ...; fails if the kernel has none.
std::string scx_state(std::string *ops = nullptr)
{
	const std::string dir = scx_sysfs();
	struct stat st;
	if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
		fail(kFail, "the kernel has no sched_ext (" + dir +
				    " does not exist): scx_hpc needs Linux 6.12 or later built "
				    "with CONFIG_SCHED_CLASS_EXT=y");
	if (ops)
		*ops = trim(read_file(dir + "/root/ops").value_or(""));
	return trim(read_file(dir + "/state").value_or("?"));
}

struct ScxOut {
	int status = 0;
	std::string out, err;
};

// Run the loader with `args`, collecting its output.
ScxOut scx_call(const Opts &o, const std::vector<std::string> &args)
{
	std::vector<std::string> argv{scx_bin(o)};
	argv.insert(argv.end(), args.begin(), args.end());
	int out[2], err[2];
	if (::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0)
		fail(kFail, std::string("pipe: ") + std::strerror(errno));
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kFail, std::string("fork: ") + std::strerror(errno));
	if (pid == 0) {
		::dup2(out[1], 1);
		::dup2(err[1], 2);
		auto a = argv_of(argv);
		::execvp(a[0], a.data());
		std::fprintf(stderr, "cannot run %s: %s", a[0], std::strerror(errno));
		::_exit(127);
	}
	::close(out[1]);
	::close(err[1]);
	ScxOut r;
	pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
	int open_fds = 2;
	while (open_fds > 0) {
		if (::poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			char b[4096];
			ssize_t n = ::read(fds[i].fd, b, sizeof b);
			if (n > 0) {
				(i ? r.err : r.out).append(b, static_cast<size_t>(n));
			} else if (n == 0 || errno != EINTR) {
				::close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
		}
	}
	r.status = wait_child(pid);
	r.err = trim(r.err);
	if (r.status == 127)
		fail(kFail, "cannot run scx_hpc (" + argv[0] + "): " + r.err +
				    "; give --scx-hpc BIN or $HPCCTL_SCX_HPC");
	return r;
}

// scx_hpc runs (fails with why if it does not, or if another sched_ext
// scheduler does).
void scx_need_loaded()
{
	std::string ops;
	std::string state = scx_state(&ops);
	if (state == "enabled" && ops == "hpc")
		return;
	if (state == "enabled")
		fail(kFail, "another sched_ext scheduler is active (" + ops + "), not scx_hpc");
	fail(kFail, "scx_hpc is not loaded (sched_ext state " + state +
			    "); 'hpcctl --backend scx run -- CMD' starts it");
}

json scx_json(const Opts &o, const std::vector<std::string> &args)
{
	ScxOut r = scx_call(o, args);
	if (r.status != 0)
		fail(r.status == kBadSetting ? kBadSetting : kFail,
		     r.err.empty() ? fmt::format("scx_hpc exited with status {}", r.status)
				   : r.err.substr(r.err.find("scx_hpc: ") == 0 ? 9 : 0));
	try {
		return json::parse(r.out);
	} catch (const json::exception &e) {
		fail(kFail, std::string("scx_hpc printed no JSON: ") + e.what());
	}
}

// Fix a task's priority in the running instance (scx_hpc --prio checks the
// value, status 2, and that the task is SCHED_EXT, status 1).
void scx_prio(const Opts &o)
{
	if (o.prio != 0 && (o.prio < HPC_SMT_EMUL_PRIO_MIN || o.prio > HPC_SMT_EMUL_PRIO_MAX))
		fail(kBadSetting, fmt::format("prio: {} is outside {}..{} (0: dynamic)", o.prio,
					      HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX));
	scx_need_loaded();
	ScxOut r = scx_call(o, {"--prio", fmt::format("{}={}", o.pid, o.prio)});
	if (r.status != 0)
		fail(r.status == kBadSetting ? kBadSetting : kFail,
		     "prio: " + r.err.substr(r.err.find("scx_hpc: ") == 0 ? 9 : 0));
}

// Change the running instance's knobs (scx_hpc checks them: status 2).
void scx_set(const Opts &o, const std::vector<std::string> &kv)
{
	std::vector<std::string> args;
	for (auto &s : kv) {
		args.push_back("--set");
		args.push_back(s);
	}
	ScxOut r = scx_call(o, args);
	if (r.status != 0)
		fail(r.status == kBadSetting ? kBadSetting : kFail,
		     r.err.substr(r.err.find("scx_hpc: ") == 0 ? 9 : 0));
}

// Reuse the running scx_hpc (applying `kv`) or start one that unloads when
// its last task is gone.
void scx_start_or_reuse(const Opts &o, const std::vector<std::string> &kv)
{
	for (int attempt = 0;; attempt++) {
		std::string ops;
		std::string state = scx_state(&ops);
		if (state == "enabled" && ops == "hpc") {
			if (!kv.empty())
				scx_set(o, kv);
			return;
		}
		if (state == "enabled")
			fail(kFail,
			     "another sched_ext scheduler is active (" + ops + "), not scx_hpc");
		if (state == "disabled")
			break;
		// enabling or disabling: wait for it to settle
		if (attempt == 100)
			fail(kFail, "sched_ext stays in state " + state);
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	const auto flags = scx_check(kv, true);
	const std::string bin = scx_bin(o);
	const std::string logf = env_or("HPCCTL_SCX_LOG", "/run/scx_hpc.log");
	std::vector<std::string> argv{bin, "-q", "--exit-when-idle"};
	argv.insert(argv.end(), flags.begin(), flags.end());
	int pp[2];
	if (::pipe2(pp, O_CLOEXEC) < 0)
		fail(kFail, std::string("pipe: ") + std::strerror(errno));
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kFail, std::string("fork: ") + std::strerror(errno));
	if (pid == 0) {
		// Double fork: the loader is nobody's child; its pid comes back.
		::setsid();
		int fd = ::open(logf.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int nul = ::open("/dev/null", O_RDWR);
		::dup2(nul, 0);
		::dup2(fd >= 0 ? fd : nul, 1);
		::dup2(fd >= 0 ? fd : nul, 2);
		pid_t g = ::fork();
		if (g != 0) {
			(void)!::write(pp[1], &g, sizeof g);
			::_exit(0);
		}
		auto a = argv_of(argv);
		::execvp(a[0], a.data());
		std::fprintf(stderr, "scx_hpc: cannot run %s: %s\n", a[0], std::strerror(errno));
		::_exit(127);
	}
	::close(pp[1]);
	pid_t loader = -1;
	(void)!::read(pp[0], &loader, sizeof loader);
	::close(pp[0]);
	::waitpid(pid, nullptr, 0);
	// Loading verifies the BPF program: seconds on a slow machine.
	for (int i = 0; i < 600; i++) {
		std::string ops;
		if (scx_state(&ops) == "enabled" && ops == "hpc")
			return;
		if (loader <= 0 || ::kill(loader, 0) != 0)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	std::string log = trim(read_file(logf).value_or(""));
	if (log.size() > 2000)
		log = "..." + log.substr(log.size() - 2000);
	if (loader > 0)
		::kill(loader, SIGTERM);
	fail(kFail,
	     "started " + bin + " but scx_hpc did not come up" +
		     (log.empty() ? std::string(" (its log " + logf + " is empty)") : ":\n" + log));
}

// scx_hpc's per-task map as hpcctl top shows it: live tasks only.
json scx_tasks(const Opts &o)
{
	json out = json::array();
	for (auto &t : scx_json(o, {"--dump-tasks", "--json"})) {
		if (t.value("exited", 0) != 0)
			continue;
		json j{{"pid", t["pid"]},
		       {"name", t.value("comm", std::string())},
		       {"tgid", t["tgid"]},
		       {"cpu", t["cpu"]},
		       {"iterations", t["iterations"]},
		       {"judgements", t["judgements"]},
		       {"last_util", t["last_util"]},
		       {"global_util", t["global_util"]},
		       {"prio", t["prio"]},
		       {"throttled_ns", t["throttled_ns"]},
		       {"run_ns", t["run_ns"]}};
		out.push_back(j);
	}
	return out;
}

int scx_get(const Opts &o)
{
	const auto known = scx_knobs();
	if (!o.key.empty() && std::find(known.begin(), known.end(), o.key) == known.end())
		fail(kBadSetting, unknown_key(o.key, known));
	scx_need_loaded();
	json p = scx_json(o, {"--stats-once", "--json"})["params"];
	if (!o.key.empty()) {
		const json &v = p[o.key];
		std::cout << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
		return kOk;
	}
	for (auto &k : known) {
		const json &v = p[k];
		std::cout << k << "=" << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
	}
	return kOk;
}

// Wait for the command, taking in hpcd's task events meanwhile, until hpcd
// says it released the command (its pidfd told it the command exited; hpcd
// releases a launcher after its ranks), its stream ends, or a grace time
// after the command ended: 200 ms for a command hpcd did not adopt (it says
// nothing of it), 10 s for one it did (a busy hpcd may take a while; it
// always says). The command's exit is seen at once (its pidfd), not at the
// next look. Its status.
int follow(ControlClient &watch, pid_t pid, Adoption &a)
{
	int status = -1;
	uint64_t done_at = 0;
	bool open = true, released = false;
	const int pfd = open_pidfd(pid);
	const auto grace = [&] { return a.tasks.count(pid) ? 10000000000ull : 200000000ull; };
	while (!done_at || (open && !released && mono_ns() < done_at + grace())) {
		int st;
		if (!done_at && ::waitpid(pid, &st, WNOHANG) == pid) {
			status = exec_status(st);
			done_at = mono_ns();
			g_child = -1;
			continue;
		}
		// Until the command ends, its pidfd wakes the wait (without one, a
		// look every 50 ms); then the stream alone, until the deadline.
		const int wake = done_at ? -1 : pfd;
		const int timeout = wake >= 0 ? -1 : 50;
		std::string line;
		const int got = open ? watch.read_line(line, timeout, wake) : 0;
		if (got < 0)
			open = false;
		if (got < 0 || (got == 0 && !open)) {
			// No stream: the command alone.
			pollfd p{wake, POLLIN, 0};
			::poll(&p, 1, timeout);
		}
		if (got <= 0)
			continue;
		try {
			json ev = json::parse(line);
			a.seen(ev);
			const std::string kind = ev.value("event", std::string());
			open = kind != "end";
			released = released || (kind == "released" && ev.value("pid", 0) == pid);
		} catch (const json::exception &) {
			fail(kFail, "run: hpcd sent a malformed event: " + line.substr(0, 80));
		}
	}
	if (pfd >= 0)
		::close(pfd);
	return status;
}

int run(const Opts &o)
{
	std::vector<std::string> kv = o.settings;
	if (!o.heuristic.empty())
		kv.push_back("heuristic=" + o.heuristic);
	if (use_scx(o)) {
		// Like the kernel class: switch to SCHED_EXT and exec; scx_hpc
		// schedules the command and its children.
		scx_check(kv, false);
		const auto membind = check_membind(o.membind);
		scx_start_or_reuse(o, kv);
		if (!membind.empty() && apply_membind(membind) < 0)
			fail(kFail,
			     std::string("set_mempolicy(MPOL_BIND): ") + std::strerror(errno));
		sched_param sp{};
		if (::sched_setscheduler(0, kSchedExt, &sp) < 0)
			fail(kFail,
			     std::string("sched_setscheduler(SCHED_EXT): ") + std::strerror(errno));
		exec_cmd(o.cmd);
	}
	check_keys(kv);
	const auto membind = check_membind(o.membind);
	if (use_kernel(o)) {
		if (!kv.empty())
			kernel_set(o, kv);
		if (!membind.empty() && apply_membind(membind) < 0)
			fail(kFail,
			     std::string("set_mempolicy(MPOL_BIND): ") + std::strerror(errno));
		sched_param sp{};
		sp.sched_priority = 0;
		if (::sched_setscheduler(0, kSchedHpc, &sp) < 0)
			fail(kFail,
			     std::string("sched_setscheduler(SCHED_HPC): ") + std::strerror(errno));
		exec_cmd(o.cmd);
	}
	ControlClient c, watch;
	connect_or_start(o, c);
	if (!kv.empty())
		hpcd_set(c, kv);
	if (!watch.connect(o.socket))
		fail(kNoDaemon, "run: hpcd does not answer on " + o.socket);
	checked(watch.call(json{{"cmd", "watch"}}));
	// The child waits until hpcd manages it, then becomes the command.
	catch_signals();
	Child ch = start_managed(o, c, membind);
	int code = 0;
	std::string why = go(ch, code);
	if (!why.empty()) {
		std::cerr << "hpcctl: " << why << "\n";
		return code;
	}
	Adoption a;
	const int status = follow(watch, ch.pid, a);
	return adoption_verdict(o, a, a.warnings(o), status);
}

// ---- top / status ----------------------------------------------------------

json kernel_tasks()
{
	json out = json::array();
	if (DIR *d = ::opendir("/proc")) {
		while (auto *e = ::readdir(d)) {
			int pid = std::atoi(e->d_name);
			if (pid <= 0)
				continue;
			auto t = read_file(std::string("/proc/") + e->d_name + "/sched_hpc");
			if (!t || t->find("policy: hpc") == std::string::npos)
				continue;
			json j{{"pid", pid}, {"name", proc_comm(pid)}};
			std::string text = *t;
			size_t pos = 0;
			while (pos < text.size()) {
				size_t nl = text.find('\n', pos);
				std::string line = text.substr(pos, nl - pos);
				pos = nl == std::string::npos ? text.size() : nl + 1;
				auto c = line.find(':');
				if (c == std::string::npos)
					continue;
				std::string k = line.substr(0, c), v = trim(line.substr(c + 1));
				while (!v.empty() && v[0] == ' ')
					v.erase(0, 1);
				j[k == "iterations" ? "iterations" : k] =
					k == "policy" ? json(v)
						      : json(std::strtoull(v.c_str(), 0, 10));
			}
			out.push_back(j);
		}
		::closedir(d);
	}
	return out;
}

std::string pct(const json &j, const char *k)
{
	if (!j.contains(k))
		return "-";
	return fmt::format("{:.2f}", j[k].get<double>() / 100.0);
}

// hpcd and where it has the sleeps and wake-ups of tasks without the monitor.
std::string hpcd_label(ControlClient &c)
{
	json st = checked(c.call(json{{"cmd", "status"}}))["status"];
	std::string src = st.value("source", std::string());
	return src == "bpf"    ? "hpcd, events from BPF"
	       : src == "proc" ? fmt::format("hpcd, events sampled from /proc every {} ms",
					     st.value("period_ms", 0.0))
			       : "hpcd";
}

void print_table(const json &tasks, bool kernel)
{
	fmt::print("{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} {:>10} "
		   "{:>7} {:<7}\n",
		   "PID", "NAME", "RANK", "CPU", "SIBLING", "ITER", "U_LAST%", "U_GLOB%", "PRIO",
		   "QUOTA/PERIOD", "WEIGHT", "THROTTLEDms", "NR_THR", "SOURCE");
	for (auto &t : tasks) {
		auto g = [&](const char *k) {
			return t.contains(k) ? t[k].dump() : std::string("-");
		};
		std::string q = "-";
		if (t.contains("quota_us"))
			q = t["quota_us"].get<long long>() < 0
				    ? "max"
				    : fmt::format("{}/{}", t["quota_us"].get<long long>(),
						  t["period_us"].get<long long>());
		double thr = t.value("throttled_ns", 0ull) / 1e6;
		std::string role = t.value("role", "task") == "launcher" ? "*" : "";
		fmt::print(
			"{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} "
			"{:>10} "
			"{:>7} {:<7}\n",
			t["pid"].get<int>(), (t.value("name", std::string()) + role).substr(0, 12),
			g("rank"), g("cpu"), g("sibling"), g("iterations"), pct(t, "last_util"),
			pct(t, "global_util"), g("prio"), q, g("weight"),
			kernel ? fmt::format("{:.1f}", t.value("throttled_ns", 0ull) / 1e6)
			       : fmt::format("{:.1f}", thr),
			g("nr_throttled"), t.value("source", std::string(kernel ? "kernel" : "-")));
	}
	if (tasks.empty())
		fmt::print("(no managed task)\n");
}

int top(const Opts &o)
{
	const bool scx = use_scx(o);
	bool kernel = !scx && use_kernel(o);
	ControlClient c;
	if (scx)
		scx_need_loaded();
	else if (!kernel)
		connect_or_fail(o, c);
	for (int n = 0;; n++) {
		json tasks = scx      ? scx_tasks(o)
			     : kernel ? kernel_tasks()
				      : checked(c.call(json{{"cmd", "list"}}))["tasks"];
		if (o.json_out) {
			std::cout << tasks.dump() << std::endl;
		} else {
			if (!o.once)
				fmt::print("\033[H\033[2J");
			fmt::print("hpcctl top — {} — {} task(s)\n",
				   scx      ? "scx_hpc (sched_ext)"
				   : kernel ? "kernel SCHED_HPC"
					    : hpcd_label(c),
				   tasks.size());
			print_table(tasks, kernel || scx);
			std::fflush(stdout);
		}
		if (o.once || (o.count && n + 1 >= o.count))
			return kOk;
		std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
	}
}

int status(const Opts &o)
{
	if (use_scx(o)) {
		scx_need_loaded();
		json j = scx_json(o, {"--stats-once", "--json"});
		j["backend"] = "scx";
		j["sysfs"] = scx_sysfs();
		std::cout << (o.json_out ? j.dump() : j.dump(2)) << "\n";
		return kOk;
	}
	if (use_kernel(o)) {
		json j{{"backend", "kernel"}, {"sysfs", o.sysfs}};
		for (auto &k : kernel_knobs())
			if (auto v = read_file(o.sysfs + "/" + k))
				j[k] = trim(*v);
		j["tasks"] = kernel_tasks().size();
		std::cout << (o.json_out ? j.dump() : j.dump(2)) << "\n";
		return kOk;
	}
	ControlClient c;
	connect_or_fail(o, c);
	json s = checked(c.call(json{{"cmd", "status"}}))["status"];
	s["backend"] = "hpcd";
	std::cout << (o.json_out ? s.dump() : s.dump(2)) << "\n";
	return kOk;
}

// ---- output files ------------------------------------------------------------

std::string dir_of(const std::string &p)
{
	auto s = p.rfind('/');
	if (s == std::string::npos)
		return ".";
	return s == 0 ? "/" : p.substr(0, s);
}

std::vector<std::string> paraver_files(std::string base)
{
	if (base.size() > 4 && base.compare(base.size() - 4, 4, ".prv") == 0)
		base.resize(base.size() - 4);
	return {base + ".prv", base + ".pcf", base + ".row"};
}

// Every file a command is to write, checked before anything happens: not
// there yet (unless --force), not a directory, in a directory that exists
// and may be written, no two the same.
void check_outputs(const std::vector<std::string> &paths, bool force, const std::string &cmd)
{
	std::set<std::string> seen;
	for (const auto &p : paths) {
		if (p.empty())
			fail(kUsage, cmd + ": an output file name is empty");
		if (!seen.insert(p).second)
			fail(kUsage, cmd + ": " + p + " is named twice as an output");
		struct stat st;
		if (::stat(p.c_str(), &st) == 0) {
			if (S_ISDIR(st.st_mode))
				fail(kFail, cmd + ": " + p + " is a directory");
			if (!force)
				fail(kFail, cmd + ": " + p + " exists (--force overwrites it)");
		}
		const std::string d = dir_of(p);
		if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
			fail(kFail,
			     cmd + ": cannot write " + p + ": directory " + d + " does not exist");
		if (::access(d.c_str(), W_OK) != 0)
			fail(kFail, cmd + ": cannot write " + p + ": " + std::strerror(errno));
	}
}

// An output written next to its final name and renamed there by commit();
// removed if never committed, so that a failure leaves no file.
class TmpOut
{
public:
	explicit TmpOut(std::string path) : path_(std::move(path))
	{
		const std::string d = dir_of(path_);
		const std::string base = path_.substr(path_.rfind('/') + 1);
		// Keep the extension (matplotlib picks the format from it).
		tmp_ = d + "/.hpcctl-" + std::to_string(::getpid()) + "-" + base;
	}
	TmpOut(const TmpOut &) = delete;
	~TmpOut()
	{
		if (!tmp_.empty())
			::unlink(tmp_.c_str());
	}
	const std::string &tmp() const { return tmp_; }
	const std::string &path() const { return path_; }
	void write_all(const std::string &content)
	{
		std::ofstream f(tmp_, std::ios::trunc);
		f << content;
		f.close();
		if (!f)
			fail(kFail, "cannot write " + path_ + ": " + std::strerror(errno));
	}
	void commit()
	{
		if (::rename(tmp_.c_str(), path_.c_str()) < 0)
			fail(kFail, "cannot write " + path_ + ": " + std::strerror(errno));
		tmp_.clear();
	}

private:
	std::string path_, tmp_;
};

// Perfetto JSON and Paraver files of a trace, into temporary files
// (committed by the caller once everything is written).
void write_exports(const trace::Trace &t, const Opts &o, std::vector<std::unique_ptr<TmpOut>> &out)
{
	if (!o.perfetto.empty()) {
		out.push_back(std::make_unique<TmpOut>(o.perfetto));
		out.back()->write_all(trace::to_perfetto(t).dump() + "\n");
	}
	if (!o.paraver.empty()) {
		auto files = paraver_files(o.paraver);
		auto pv = trace::to_paraver(t);
		for (size_t k = 0; k < 3; k++) {
			out.push_back(std::make_unique<TmpOut>(files[k]));
			out.back()->write_all(k == 0 ? pv.prv : k == 1 ? pv.pcf : pv.row);
		}
	}
}

std::vector<std::string> export_paths(const Opts &o)
{
	std::vector<std::string> v;
	if (!o.perfetto.empty())
		v.push_back(o.perfetto);
	if (!o.paraver.empty())
		for (auto &f : paraver_files(o.paraver))
			v.push_back(f);
	return v;
}

// ---- trace -----------------------------------------------------------------------

std::string hostname()
{
	char h[256] = {};
	::gethostname(h, sizeof h - 1);
	return h;
}

uint64_t unix_s()
{
	return static_cast<uint64_t>(std::time(nullptr));
}

// Where the recorder writes: the native file, line by line, and the same
// trace in memory for the exports.
struct Recorder {
	trace::Trace t;
	std::ofstream f;
	std::set<int> known;
	uint64_t missed = 0;
	void line(const std::string &l)
	{
		f << l << '\n';
		if (!f)
			fail(kFail, "trace: cannot write the record: " +
					    std::string(std::strerror(errno)));
	}
	void task(const trace::TaskInfo &ti)
	{
		known.insert(ti.pid);
		t.tasks.push_back(ti);
		line(trace::task_line(ti));
	}
	void iter(const trace::Iter &i)
	{
		t.iters.push_back(i);
		line(trace::iter_line(i));
	}
	void prio(const trace::PrioChange &p)
	{
		t.prios.push_back(p);
		line(trace::prio_line(p));
	}
};

// A task hpcd reports an event of, described by the event and, if hpcd
// still answers, by its task list; tasks recorded before that hpcd now
// describes otherwise (mpirun found to launch ranks) are recorded again.
void learn(Recorder &r, const json &ev, ControlClient *ctl)
{
	trace::TaskInfo ti;
	ti.pid = ev.value("pid", 0);
	ti.rank = ev.value("rank", -1);
	ti.ctx = ev.value("ctx", -1);
	ti.cpu = ev.value("cpu", -1);
	ti.source = ev.value("source", std::string("proc"));
	ti.prio = ev.value("old_prio", 0u);
	ti.name = proc_comm(ti.pid);
	json tasks = json::array();
	if (ctl) {
		try {
			tasks = ctl->call(json{{"cmd", "list"}}).value("tasks", json::array());
		} catch (const std::exception &) {
			// hpcd is on its way out: what the event says will do.
		}
	}
	auto describe = [](trace::TaskInfo &t, const json &x) {
		t.name = x.value("name", t.name);
		t.job = x.value("job", t.job);
		t.sibling = x.value("sibling", t.sibling);
		t.role = x.value("role", t.role);
		t.rank = x.value("rank", t.rank);
		t.ctx = x.value("ctx", t.ctx);
		t.cpu = x.value("cpu", t.cpu);
	};
	for (auto &x : tasks) {
		const int pid = x.value("pid", 0);
		if (pid == ti.pid) {
			describe(ti, x);
			continue;
		}
		for (auto &known : r.t.tasks)
			if (known.pid == pid && (x.value("role", known.role) != known.role ||
						 x.value("rank", known.rank) != known.rank)) {
				describe(known, x);
				r.line(trace::task_line(known));
			}
	}
	r.task(ti);
}

// hpcd adopted a task, or describes it otherwise: its task line.
void task_event(Recorder &r, const json &ev)
{
	trace::TaskInfo ti;
	ti.pid = ev.value("pid", 0);
	ti.name = ev.value("name", std::string());
	ti.job = ev.value("job", std::string());
	ti.rank = ev.value("rank", -1);
	ti.ctx = ev.value("ctx", -1);
	ti.cpu = ev.value("cpu", -1);
	ti.sibling = ev.value("sibling", 0);
	ti.role = ev.value("role", std::string("task"));
	ti.source = ev.value("source", std::string("proc"));
	ti.prio = ev.value("prio", 0u);
	if (ti.pid <= 0 || (ti.role != "task" && ti.role != "launcher"))
		fail(kFail, "trace: hpcd sent a malformed task event: " + ev.dump().substr(0, 80));
	for (auto &known : r.t.tasks)
		if (known.pid == ti.pid) {
			ti.prio = known.prio ? known.prio : ti.prio;
			known = ti;
			r.line(trace::task_line(known));
			return;
		}
	r.task(ti);
}

// One event line of hpcd's watch stream. False at its end event.
bool hpcd_event(Recorder &r, Adoption &a, const std::string &line, ControlClient *ctl,
		std::string &reason)
{
	json ev;
	try {
		ev = json::parse(line);
	} catch (const json::exception &) {
		fail(kFail, "trace: hpcd sent a malformed event: " + line.substr(0, 80));
	}
	const std::string kind = ev.value("event", std::string());
	if (kind == "end") {
		reason = "hpcd: " + ev.value("reason", std::string("exits"));
		return false;
	}
	if (kind == "task") {
		a.seen(ev);
		task_event(r, ev);
		return true;
	}
	if (kind != "iteration" && kind != "priority")
		return true;
	const int pid = ev.value("pid", 0);
	if (!r.known.count(pid))
		learn(r, ev, ctl);
	if (kind == "iteration") {
		trace::Iter i;
		i.pid = pid;
		i.iteration = ev.value("iteration", uint64_t{0});
		i.end_ns = ev.value("at_ns", uint64_t{0});
		i.run_ns = ev.value("run_ns", uint64_t{0});
		i.wait_ns = ev.value("wait_ns", uint64_t{0});
		i.util = ev.value("util", 0u);
		i.heur_util = ev.value("heur_util", 0u);
		i.old_prio = ev.value("old_prio", 0u);
		i.prio = ev.value("prio", 0u);
		i.cpu = ev.value("cpu", -1);
		i.weight = ev.value("weight", 0u);
		r.missed += ev.value("missed", uint64_t{0});
		r.iter(i);
	} else {
		r.prio(trace::PrioChange{pid, ev.value("at_ns", uint64_t{0}),
					 ev.value("old_prio", 0u), ev.value("prio", 0u)});
	}
	return true;
}

// One sample of scx_hpc's per-task map into the record (--backend scx).
// `now` 0: the baseline. When scx_hpc is gone (unloaded, or another
// scheduler took over) `reason` says so and the recording ends with what it
// has; a loader that fails or prints something else than its map is an
// error (no file is left, as for any failed trace).
void scx_sample(const Opts &o, trace::ScxSampler &sampler, Recorder &r, uint64_t now,
		std::string &reason)
{
	ScxOut out = scx_call(o, {"--dump-tasks", "--json"});
	if (out.status != 0) {
		// An unloading scx_hpc loses its maps before sched_ext's state
		// leaves "enabled": give the state up to a second to follow.
		std::string ops;
		std::string state = scx_state(&ops);
		for (int i = 0; i < 20 && state == "enabled" && ops == "hpc"; i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			state = scx_state(&ops);
		}
		if (state != "enabled" || ops != "hpc") {
			reason = "scx_hpc unloaded (sched_ext state " + state +
				 (ops.empty() || ops == "none" ? "" : ", " + ops) + ")";
			return;
		}
		fail(kFail,
		     "trace: scx_hpc --dump-tasks failed: " +
			     (out.err.empty() ? fmt::format("status {}", out.status) : out.err));
	}
	std::vector<trace::ScxTask> tasks;
	try {
		tasks = trace::parse_scx_tasks(json::parse(out.out));
	} catch (const json::exception &) {
		fail(kFail,
		     "trace: scx_hpc --dump-tasks printed no JSON: " + trim(out.out).substr(0, 80));
	} catch (const std::runtime_error &e) {
		fail(kFail, std::string("trace: ") + e.what());
	}
	auto got = sampler.sample(tasks, now ? now : mono_ns());
	for (auto &ti : got.tasks)
		r.task(ti);
	for (auto &i : got.iters)
		r.iter(i);
	for (auto &p : got.prios)
		r.prio(p);
	r.missed += got.missed;
}

int trace_cmd(const Opts &o)
{
	// Everything checked before anything starts or any file is made.
	if (o.duration <= 0 && o.cmd.empty())
		fail(kUsage, "trace: give --duration SEC, or a command after '--' (recorded "
			     "until it ends)");
	std::vector<std::string> kv = o.settings;
	if (!o.heuristic.empty())
		kv.push_back("heuristic=" + o.heuristic);
	if (o.cmd.empty() && (!kv.empty() || !o.membind.empty()))
		fail(kUsage,
		     "trace: --set, --heuristic and --membind go with a command after '--'");
	const bool scx = use_scx(o);
	if (o.sample_ms && !scx)
		fail(kUsage, "trace: --sample-ms is for --backend scx (the other backends "
			     "report every iteration as it closes)");
	if (scx)
		scx_check(kv, false);
	else
		check_keys(kv);
	std::vector<std::string> outs{o.output};
	for (auto &p : export_paths(o))
		outs.push_back(p);
	check_outputs(outs, o.force, "trace");
	const auto membind = check_membind(o.membind);
	const bool kernel = !scx && use_kernel(o);

	Recorder r;
	Adoption adopted;
	r.t.source = scx ? "scx" : kernel ? "kernel" : "hpcd";
	r.t.host = hostname();
	r.t.command = o.cmd;
	ControlClient ctl, watch;
	TracefsSession tfs;
	trace::ScxSampler sampler;
	const int sample_ms = o.sample_ms ? o.sample_ms : 10;
	if (scx) {
		if (o.cmd.empty())
			scx_need_loaded();
		else
			scx_start_or_reuse(o, kv);
		r.t.settings =
			scx_json(o, {"--stats-once", "--json"}).value("params", json::object());
		r.t.settings["sample_ms"] = sample_ms;
	} else if (kernel) {
		try {
			tfs.open(find_tracefs(o.tracefs), "hpcctl-" + std::to_string(::getpid()));
		} catch (const std::runtime_error &e) {
			fail(kFail, std::string("trace: ") + e.what());
		}
		if (!kv.empty())
			kernel_set(o, kv);
		for (auto &k : kernel_knobs())
			if (auto v = read_file(o.sysfs + "/" + k))
				r.t.settings[k] = trim(*v);
	} else {
		if (o.cmd.empty())
			connect_or_fail(o, ctl);
		else
			connect_or_start(o, ctl);
		if (!kv.empty())
			hpcd_set(ctl, kv);
		r.t.settings = checked(ctl.call(json{{"cmd", "get"}}))["values"];
		if (!watch.connect(o.socket))
			fail(kNoDaemon, "trace: hpcd does not answer on " + o.socket);
		json w = checked(watch.call(json{{"cmd", "watch"}}));
		r.t.dropped = w.value("dropped", uint64_t{0});
	}

	TmpOut out(o.output);
	r.f.open(out.tmp(), std::ios::trunc);
	if (!r.f)
		fail(kFail, "trace: cannot write " + o.output + ": " + std::strerror(errno));
	r.t.start_ns = mono_ns();
	r.t.start_unix_s = static_cast<int64_t>(unix_s());
	r.line(trace::header_line(r.t));

	catch_signals();
	Child ch;
	if (!o.cmd.empty()) {
		ch = scx      ? spawn(o.cmd, membind, kSchedExt)
		     : kernel ? spawn(o.cmd, membind, kSchedHpc)
			      : start_managed(o, ctl, membind);
		g_child = ch.pid;
		int code = 0;
		std::string why = go(ch, code);
		if (!why.empty()) {
			g_child = -1;
			std::cerr << "hpcctl: trace: " << why << "\n";
			return code;
		}
	}

	const uint64_t deadline = o.duration > 0
					  ? r.t.start_ns + static_cast<uint64_t>(o.duration * 1e9)
					  : UINT64_MAX;
	// After the command ends: what is still on its way (hpcd ends the
	// stream itself when it exits with its last task).
	const uint64_t grace = scx ? (200 + 2 * static_cast<uint64_t>(sample_ms)) * 1000000ull
				   : (kernel ? 200 : 500) * 1000000ull;
	uint64_t done_at = 0;
	int status = 0;
	std::string reason;
	// The baseline: what scx_hpc's map holds before the recording starts.
	if (scx)
		scx_sample(o, sampler, r, 0, reason);
	while (reason.empty()) {
		const uint64_t now = mono_ns();
		if (g_stop && o.cmd.empty()) {
			reason = std::string("interrupted (") + strsignal(g_stop) + ")";
			break;
		}
		if (now >= deadline) {
			reason = fmt::format("{:g} s elapsed (--duration)", o.duration);
			break;
		}
		if (ch.pid > 0 && !done_at) {
			int st;
			if (::waitpid(ch.pid, &st, WNOHANG) == ch.pid) {
				status = exec_status(st);
				done_at = now;
				g_child = -1;
			}
		}
		if (done_at && now >= done_at + grace) {
			reason = "the command ended";
			break;
		}
		const int wait_ms = static_cast<int>(std::clamp<uint64_t>(
			(std::min<uint64_t>(deadline, now + 100000000ull) - now) / 1000000, 1,
			100));
		if (scx) {
			std::this_thread::sleep_for(
				std::chrono::milliseconds(std::min(wait_ms, sample_ms)));
			scx_sample(o, sampler, r, mono_ns(), reason);
		} else if (kernel) {
			std::vector<std::string> lines;
			try {
				lines = tfs.read(wait_ms);
			} catch (const std::runtime_error &e) {
				fail(kFail, std::string("trace: ") + e.what());
			}
			for (const auto &l : lines) {
				r.t.dropped += trace::ftrace_lost(l);
				auto known = [&](int pid, const std::string &comm, int cpu,
						 uint32_t prio) {
					if (r.known.count(pid))
						return;
					trace::TaskInfo ti;
					ti.pid = pid;
					ti.name = comm;
					ti.source = "kernel";
					ti.cpu = cpu;
					ti.prio = prio;
					r.task(ti);
				};
				if (auto ev = trace::parse_ftrace_line(l)) {
					known(ev->it.pid, ev->comm, ev->it.cpu, ev->it.old_prio);
					r.iter(ev->it);
				} else if (auto j = trace::parse_ftrace_judge(l)) {
					// Only a judgement that changes the priority is news.
					if (j->change.prio == j->change.old_prio)
						continue;
					known(j->change.pid, j->comm, j->cpu, j->change.old_prio);
					r.prio(j->change);
				}
			}
		} else {
			std::string line;
			int got;
			while ((got = watch.read_line(line, wait_ms)) > 0) {
				if (!hpcd_event(r, adopted, line, &ctl, reason))
					break;
			}
			if (got < 0 && reason.empty())
				reason = "hpcd closed the connection";
		}
		r.f.flush();
	}
	tfs.close();
	r.t.end_ns = mono_ns();
	r.t.reason = reason;
	r.t.missed = r.missed;
	if (!scx && !kernel && !o.cmd.empty())
		r.t.warnings = adopted.warnings(o);
	r.line(trace::end_line(r.t));
	r.f.close();
	if (!r.f)
		fail(kFail, "trace: cannot write " + o.output + ": " + std::strerror(errno));
	std::vector<std::unique_ptr<TmpOut>> exports;
	write_exports(r.t, o, exports);
	out.commit();
	for (auto &x : exports)
		x->commit();
	std::cerr << fmt::format(
		"hpcctl: trace: {} iteration(s) of {} task(s) in {} ({:.1f} s; {})\n",
		r.t.iters.size(), r.t.tasks.size(), o.output,
		static_cast<double>(r.t.end_ns - r.t.start_ns) / 1e9, reason);
	if (r.t.iters.empty())
		std::cerr << (scx      ? "hpcctl: trace: no iteration: did a SCHED_EXT task under "
					 "scx_hpc close one?\n"
			      : kernel ? "hpcctl: trace: no sched_hpc_iteration event: did a "
					 "SCHED_HPC task close an iteration?\n"
				       : "hpcctl: trace: no iteration: did hpcd manage a task that "
					 "waits "
					 "(or a rank with libhpcmon)?\n");
	if (ch.pid > 0 && !done_at)
		status = wait_child(ch.pid); // --duration ended the recording first
	if (o.cmd.empty())
		return kOk;
	return scx || kernel ? status : adoption_verdict(o, adopted, r.t.warnings, status);
}

// ---- report --------------------------------------------------------------------------

bool same_file(const std::string &a, const std::string &b)
{
	struct stat x, y;
	return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

// bench/metbench/report.py: installed beside hpcctl (PREFIX/share/hpcsched,
// make install), else the source tree's.
std::string report_py()
{
	const std::string installed = self_dir() + "/../share/hpcsched/report.py";
	return ::access(installed.c_str(), R_OK) == 0 ? installed : HPCSCHED_REPORT_PY;
}

// The timeline, drawn by bench/metbench/report.py (matplotlib).
void plot(const trace::Trace &t, const Opts &o, TmpOut &png)
{
	const std::string py = env_or("HPCCTL_PYTHON", "/usr/bin/python3");
	const std::string script = env_or("HPCCTL_REPORT_PY", report_py().c_str());
	if (::access(script.c_str(), R_OK) != 0)
		fail(kFail, "report: --plot draws with " + script + ": " + std::strerror(errno) +
				    " ($HPCCTL_REPORT_PY)");
	char tmpl[] = "/tmp/hpcctl-report.XXXXXX";
	if (!::mkdtemp(tmpl))
		fail(kFail, std::string("report: mkdtemp: ") + std::strerror(errno));
	const std::string dir = tmpl, csv = dir + "/timeline.csv";
	struct Cleanup {
		std::string d;
		~Cleanup() { std::filesystem::remove_all(d); }
	} cleanup{dir};
	TmpOut c(csv);
	c.write_all(trace::timeline_csv(t));
	c.commit();
	std::string label = t.source == "kernel" ? "SCHED_HPC" : "hpcd";
	if (t.settings.contains("balance") && t.settings["balance"] == "off")
		label += ", baseline";
	else if (t.settings.contains("heuristic") && t.settings["heuristic"].is_string())
		label += ", " + t.settings["heuristic"].get<std::string>();
	std::string title = o.title;
	if (title.empty()) {
		title = "hpcctl trace";
		if (!t.command.empty())
			title += " of " + t.command[0].substr(t.command[0].rfind('/') + 1);
	}
	std::vector<std::string> argv{py,      script,    "--timeline", label + "=" + csv,
				      "--png", png.tmp(), "--title",    title};
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kFail, std::string("report: fork: ") + std::strerror(errno));
	if (pid == 0) {
		int nul = ::open("/dev/null", O_WRONLY);
		::dup2(nul, 1);
		auto a = argv_of(argv);
		::execv(a[0], a.data());
		std::cerr << "hpcctl: report: cannot run " << py << ": " << std::strerror(errno)
			  << "\n";
		::_exit(127);
	}
	int st = wait_child(pid);
	struct stat sb;
	if (st != 0 || ::stat(png.tmp().c_str(), &sb) != 0 || sb.st_size == 0)
		fail(kFail, fmt::format("report: the plot failed ({} {} exited with {}; it needs "
					"python3-matplotlib; $HPCCTL_PYTHON picks the interpreter)",
					py, script, st));
}

int report_cmd(const Opts &o)
{
	std::vector<std::string> outs;
	if (!o.plot.empty())
		outs.push_back(o.plot);
	for (auto &p : export_paths(o))
		outs.push_back(p);
	check_outputs(outs, o.force, "report");
	for (auto &p : outs)
		if (same_file(p, o.input))
			fail(kUsage, "report: " + p + " is the trace being read");
	std::ifstream in(o.input);
	if (!in)
		fail(kFail, "report: cannot read " + o.input + ": " + std::strerror(errno));
	struct stat sb;
	if (::stat(o.input.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode))
		fail(kFail, "report: " + o.input + " is a directory");
	std::string err;
	auto t = trace::read(in, err);
	if (!t)
		fail(kFail, "report: " + o.input + ": " + err);
	if (t->iters.empty() && t->prios.empty())
		fail(kFail, "report: " + o.input + " holds no iteration: nothing to report");
	std::vector<std::unique_ptr<TmpOut>> files;
	if (!o.plot.empty()) {
		files.push_back(std::make_unique<TmpOut>(o.plot));
		plot(*t, o, *files.back());
	}
	write_exports(*t, o, files);
	for (auto &f : files)
		f->commit();
	std::cout << trace::report_table(*t);
	for (auto &f : files)
		std::cout << "wrote " << f->path() << "\n";
	return kOk;
}

int dispatch(int argc, char **argv)
{
	// Everything after the first "--" is the command of `run` or `trace`,
	// untouched.
	std::vector<std::string> before;
	Opts o;
	bool dashdash = false;
	for (int i = 1; i < argc; i++) {
		if (!dashdash && std::strcmp(argv[i], "--") == 0) {
			dashdash = true;
			continue;
		}
		(dashdash ? o.cmd : before).push_back(argv[i]);
	}
	o.socket = env_or("HPCD_CONTROL", "/run/hpcd.ctl");
	o.sysfs = env_or("HPC_SYSFS", "/sys/kernel/sched_hpc");

	CLI::App app{"hpcctl: run programs under SCHED_HPC and tune it (kernel class or hpcd)",
		     "hpcctl"};
	app.footer("Exit codes: 0 ok, 1 failure, 2 invalid KEY=VALUE (nothing changed), 3 hpcd "
		   "not reachable,\n64 usage error, 65 'run' without '--' or command, 126/127 "
		   "command not executable/found.");
	app.require_subcommand(1);
	app.set_version_flag("--version", "hpcctl (hpcsched) " HPCSCHED_VERSION);
	app.add_option("--socket", o.socket, "hpcd control socket ($HPCD_CONTROL)");
	app.add_option("--sysfs", o.sysfs, "kernel tunables directory ($HPC_SYSFS)");
	app.add_option("--backend", o.backend,
		       "auto: the kernel class if present, else hpcd; scx: scx_hpc (sched_ext)")
		->check(CLI::IsMember({"auto", "kernel", "hpcd", "scx"}));
	app.add_option("--scx-hpc", o.scx_bin,
		       "scx_hpc loader for --backend scx ($HPCCTL_SCX_HPC)");

	auto *run_c =
		app.add_subcommand("run", "run CMD under SCHED_HPC: hpcctl run [opts] -- CMD");
	run_c->add_option("--heuristic", o.heuristic, hpc::heuristic_choice())
		->check(CLI::IsMember(hpc::heuristic_names()));
	run_c->add_option("--set", o.settings, "tunable KEY=VALUE, repeatable");
	run_c->add_option("--hpcd", o.hpcd_bin, "hpcd binary to start if none runs");
	run_c->add_option("--membind", o.membind,
			  "bind the command's memory to these NUMA nodes (e.g. 0 or 0-1)");
	run_c->add_flag("--launcher", o.launcher,
			"the command starts MPI ranks (mpirun, mpiexec, srun are known): adopt "
			"them, not it");
	auto *get_c = app.add_subcommand("get", "print one tunable, or all as KEY=VALUE");
	get_c->add_option("KEY", o.key, "tunable name (sysfs name)");
	auto *set_c = app.add_subcommand("set", "set tunables: all or nothing");
	set_c->add_option("KEY=VALUE", o.settings, "settings")->required();
	auto *top_c = app.add_subcommand("top", "live per-task table");
	top_c->add_flag("--once", o.once, "print the table once and exit");
	top_c->add_flag("--json", o.json_out, "JSON lines instead of a table");
	top_c->add_option("--interval", o.interval, "seconds between refreshes")
		->check(CLI::Range(0.05, 3600.0));
	top_c->add_option("--count", o.count, "stop after N tables")->check(CLI::PositiveNumber);
	auto *prio_c =
		app.add_subcommand("prio", "fix a task's priority (0: dynamic): hpcd, the kernel "
					   "class (sched_priority) or scx_hpc");
	prio_c->add_option("PID", o.pid, "managed task")->required()->check(CLI::PositiveNumber);
	prio_c->add_option("PRIO", o.prio, "priority in prio_range, 0 for dynamic")->required();
	auto *status_c = app.add_subcommand("status", "backend, tunables and daemon state");
	status_c->add_flag("--json", o.json_out, "one JSON line");
	auto *trace_c = app.add_subcommand(
		"trace", "record per-task iterations for --duration SEC or until -- CMD ends");
	trace_c->add_option("-o,--output", o.output,
			    "the record (JSON lines; hpcctl report reads it)")
		->required();
	trace_c->add_option("--duration", o.duration, "seconds to record")
		->check(CLI::Range(0.001, 1e7));
	trace_c->add_option("--perfetto", o.perfetto, "also write Perfetto/Chrome trace JSON");
	trace_c->add_option("--paraver", o.paraver, "also write BASE.prv, BASE.pcf, BASE.row");
	trace_c->add_flag("--force", o.force, "overwrite existing output files");
	trace_c->add_option("--heuristic", o.heuristic,
			    "with a command: " + hpc::heuristic_choice())
		->check(CLI::IsMember(hpc::heuristic_names()));
	trace_c->add_option("--set", o.settings, "with a command: tunable KEY=VALUE, repeatable");
	trace_c->add_option("--hpcd", o.hpcd_bin, "hpcd binary to start if none runs");
	trace_c->add_option("--membind", o.membind,
			    "with a command: bind its memory to these NUMA nodes");
	trace_c->add_flag("--launcher", o.launcher,
			  "the command starts MPI ranks (mpirun, mpiexec, srun are known): adopt "
			  "them, not it");
	trace_c->add_option("--tracefs", o.tracefs,
			    "kernel class: tracefs mount (default /sys/kernel/tracing)");
	trace_c->add_option("--sample-ms", o.sample_ms,
			    "--backend scx: sample scx_hpc's per-task map every MS (default 10)")
		->check(CLI::Range(1, 1000));
	auto *report_c = app.add_subcommand("report",
					    "per-task table of a recorded trace; plot and exports");
	report_c->add_option("FILE", o.input, "a record of hpcctl trace")->required();
	report_c->add_option("--plot", o.plot, "draw the timeline into this PNG (matplotlib)");
	report_c->add_option("--title", o.title, "title of the plot");
	report_c->add_option("--perfetto", o.perfetto, "write Perfetto/Chrome trace JSON");
	report_c->add_option("--paraver", o.paraver, "write BASE.prv, BASE.pcf, BASE.row");
	report_c->add_flag("--force", o.force, "overwrite existing output files");

	for (auto *s : {run_c, get_c, set_c, top_c, prio_c, status_c, trace_c, report_c})
		s->footer("Exit codes: see hpcctl --help.");

	std::vector<std::string> rev(before.rbegin(), before.rend());
	try {
		app.parse(rev);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForVersion &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		if (!dashdash && std::find(before.begin(), before.end(), "run") != before.end()) {
			std::cerr << "hpcctl: run: put '--' before the command, e.g. hpcctl run -- "
				     "./app\n";
			return kNoDashDash;
		}
		// Name the command a stray word was taken for.
		std::string msg = e.what();
		if (app.get_subcommands().empty()) {
			for (auto &w : before)
				if (!w.empty() && w[0] != '-') {
					msg = "unknown command '" + w +
					      "' (commands: run, get, set, top, prio, status, "
					      "trace, report)";
					break;
				}
			if (before.empty())
				msg = "no command given (commands: run, get, set, top, prio, "
				      "status, trace, report)";
		}
		std::cerr << "hpcctl: " << msg << "\nRun 'hpcctl --help' for usage.\n";
		return kUsage;
	}
	if (run_c->parsed()) {
		if (!dashdash)
			fail(kNoDashDash,
			     "run: put '--' before the command, e.g. hpcctl run -- ./app");
		if (o.cmd.empty())
			fail(kNoDashDash, "run: no command after '--'");
		return run(o);
	}
	if (trace_c->parsed()) {
		if (dashdash && o.cmd.empty())
			fail(kNoDashDash, "trace: no command after '--'");
		return trace_cmd(o);
	}
	if (dashdash)
		fail(kUsage, "'--' is only for 'hpcctl run' and 'hpcctl trace'");
	if (report_c->parsed())
		return report_cmd(o);
	if (get_c->parsed())
		return use_scx(o) ? scx_get(o) : use_kernel(o) ? kernel_get(o) : hpcd_get(o);
	if (set_c->parsed() && use_scx(o)) {
		if (o.settings.empty())
			fail(kUsage, "set: give KEY=VALUE");
		scx_check(o.settings, false);
		scx_need_loaded();
		scx_set(o, o.settings);
		return kOk;
	}
	if (set_c->parsed()) {
		check_keys(o.settings);
		if (use_kernel(o)) {
			kernel_set(o, o.settings);
			return kOk;
		}
		ControlClient c;
		connect_or_fail(o, c);
		hpcd_set(c, o.settings);
		return kOk;
	}
	if (top_c->parsed())
		return top(o);
	if (prio_c->parsed()) {
		if (o.prio < 0)
			fail(kBadSetting, fmt::format("prio: {} is negative (0: dynamic)", o.prio));
		if (use_scx(o)) {
			scx_prio(o);
			return kOk;
		}
		if (use_kernel(o)) {
			kernel_prio(o);
			return kOk;
		}
		ControlClient c;
		connect_or_fail(o, c);
		checked(c.call(json{{"cmd", "prio"}, {"pid", o.pid}, {"prio", o.prio}}));
		return kOk;
	}
	if (status_c->parsed())
		return status(o);
	return kUsage;
}

} // namespace

int main(int argc, char **argv)
{
	int code = kFail;
	try {
		code = dispatch(argc, argv);
	} catch (const Failure &f) {
		std::cerr << "hpcctl: " << f.msg << "\n";
		code = f.code;
	} catch (const std::exception &e) {
		std::cerr << "hpcctl: " << e.what() << "\n";
	}
	end_own_hpcd();
	return code;
}
