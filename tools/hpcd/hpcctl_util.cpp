// hpcctl's shared helpers: text, child processes, signals, output files.
#include "hpcctl.hpp"
#include "system.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

namespace trace = hpcd::trace;

namespace hpcctl
{

void fail(int code, const std::string &msg)
{
	throw Failure{code, msg};
}

// ---- text ----------------------------------------------------------------------

std::string trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

std::string one_line(const std::string &value)
{
	std::string t = trim(value);
	for (auto &c : t)
		if (c == '\n')
			c = ';';
	return t;
}

std::string unknown_key(const std::string &k, const std::vector<std::string> &known)
{
	std::string s = "unknown parameter '" + k + "' (known:";
	for (auto &x : known)
		s += " " + x;
	return s + ")";
}

std::vector<std::string> settings_of(const Opts &o)
{
	std::vector<std::string> kv = o.settings;
	if (!o.heuristic.empty())
		kv.push_back("heuristic=" + o.heuristic);
	return kv;
}

std::string base_name(const std::string &path)
{
	return path.substr(path.rfind('/') + 1);
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

// ---- processes -------------------------------------------------------------------

int exec_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return kFail;
}

int wait_child(pid_t pid)
{
	int st = 0;
	while (::waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return exec_status(st);
}

void pipe_or_fail(int fds[2])
{
	if (::pipe2(fds, O_CLOEXEC) < 0)
		fail(kFail, std::string("pipe: ") + std::strerror(errno));
}

pid_t fork_or_fail()
{
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kFail, std::string("fork: ") + std::strerror(errno));
	return pid;
}

void output_to_log(const std::string &logf, bool append)
{
	int fd = ::open(logf.c_str(),
			O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_CLOEXEC, 0644);
	int nul = ::open("/dev/null", O_RDWR);
	::dup2(nul, 0);
	::dup2(fd >= 0 ? fd : nul, 1);
	::dup2(fd >= 0 ? fd : nul, 2);
}

std::vector<char *> argv_of(const std::vector<std::string> &cmd)
{
	std::vector<char *> argv;
	for (auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	return argv;
}

void exec_cmd(const std::vector<std::string> &cmd)
{
	auto argv = argv_of(cmd);
	::execvp(argv[0], argv.data());
	int e = errno;
	std::cerr << "hpcctl: cannot run '" << cmd[0] << "': " << std::strerror(e) << "\n";
	::_exit(e == ENOENT ? kNotFound : kNoExec);
}

std::vector<int> check_membind(const std::string &s)
{
	if (s.empty())
		return {};
	auto nodes = hpcd::parse_cpulist(s);
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
					 hpcd::format_cpulist(have)));
	return *nodes;
}

int apply_membind(const std::vector<int> &nodes)
{
	constexpr size_t kBits = 8 * sizeof(unsigned long);
	unsigned long mask[1024 / kBits] = {};
	for (int n : nodes)
		mask[static_cast<size_t>(n) / kBits] |= 1ul << (static_cast<size_t>(n) % kBits);
	return static_cast<int>(set_mempolicy(MPOL_BIND, mask, sizeof mask * 8));
}

namespace
{

const char *policy_call(int policy)
{
	return policy == kSchedExt ? "sched_setscheduler(SCHED_EXT)"
				   : "sched_setscheduler(SCHED_HPC)";
}

} // namespace

void exec_under(int policy, const std::vector<std::string> &cmd, const std::vector<int> &membind)
{
	if (!membind.empty() && apply_membind(membind) < 0)
		fail(kFail, std::string("set_mempolicy(MPOL_BIND): ") + std::strerror(errno));
	sched_param sp{};
	if (::sched_setscheduler(0, policy, &sp) < 0)
		fail(kFail, std::string(policy_call(policy)) + ": " + std::strerror(errno));
	exec_cmd(cmd);
}

Child spawn(const std::vector<std::string> &cmd, const std::vector<int> &membind, int policy)
{
	int gate[2], err[2];
	pipe_or_fail(gate);
	pipe_or_fail(err);
	pid_t child = fork_or_fail();
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
			report(policy_call(policy), errno, kFail);
		auto argv = argv_of(cmd);
		::execvp(argv[0], argv.data());
		int e = errno;
		report("cannot run '" + cmd[0] + "'", e, e == ENOENT ? kNotFound : kNoExec);
	}
	::close(gate[0]);
	::close(err[1]);
	return Child{child, gate[1], err[0]};
}

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
	if (!msg.empty())
		code = wait_child(c.pid);
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

namespace
{

void forward(int sig)
{
	g_stop = sig;
	if (g_child > 0)
		::kill(g_child, sig);
}

} // namespace

void catch_signals()
{
	struct sigaction sa {
	};
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
		::sigaction(s, &sa, nullptr); // no SA_RESTART: waits end early
}

// ---- output files ------------------------------------------------------------------

namespace
{

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

} // namespace

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

TmpOut::TmpOut(std::string path) : path_(std::move(path))
{
	const std::string d = dir_of(path_);
	// Keep the extension (matplotlib picks the format from it).
	tmp_ = d + "/.hpcctl-" + std::to_string(::getpid()) + "-" + base_name(path_);
}

TmpOut::~TmpOut()
{
	if (!tmp_.empty())
		::unlink(tmp_.c_str());
}

void TmpOut::write_all(const std::string &content)
{
	std::ofstream f(tmp_, std::ios::trunc);
	f << content;
	f.close();
	if (!f)
		fail(kFail, "cannot write " + path_ + ": " + std::strerror(errno));
}

void TmpOut::commit()
{
	if (::rename(tmp_.c_str(), path_.c_str()) < 0)
		fail(kFail, "cannot write " + path_ + ": " + std::strerror(errno));
	tmp_.clear();
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

} // namespace hpcctl
