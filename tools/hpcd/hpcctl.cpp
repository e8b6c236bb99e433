// hpcctl: run programs under SCHED_HPC and tune it, through the kernel class
// (/sys/kernel/sched_hpc) when the kernel has it, else through hpcd.
//
//   hpcctl run [--heuristic uniform|adaptive] [--set K=V]... -- CMD [ARGS...]
//   hpcctl get [KEY]        hpcctl set KEY=VALUE...
//   hpcctl top [--once]     hpcctl status
//
// Exit codes: 0 ok, 1 failure, 2 invalid KEY=VALUE (nothing changed), 3 hpcd
// not reachable, 64 usage error, 65 `run` without `--` or without a command,
// 126 command not executable, 127 command not found; `run` otherwise exits
// with the command's status (128+N if killed by signal N).
#include "client.hpp"
#include "control.hpp"
#include "params_text.hpp"
#include "system.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

using nlohmann::json;
using namespace hpcd;

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

struct Failure {
	int code;
	std::string msg;
};

[[noreturn]] void fail(int code, const std::string &msg)
{
	throw Failure{code, msg};
}

struct Opts {
	std::string socket, sysfs, backend = "auto", hpcd_bin, heuristic, key;
	std::vector<std::string> settings, cmd;
	bool once = false, json_out = false;
	double interval = 1.0;
	int count = 0, pid = 0, prio = 0;
};

std::string env_or(const char *name, const char *def)
{
	const char *v = std::getenv(name);
	return v && *v ? v : def;
}

bool use_kernel(const Opts &o)
{
	if (o.backend == "hpcd")
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
		} else if (k == "queue") {
			if (v != "rr" && v != "fifo")
				fail(kBadSetting, "queue: '" + v + "' is not rr or fifo");
		} else if (k == "timeslice_us" || k == "emul_period_us") {
			char *end;
			errno = 0;
			unsigned long n = std::strtoul(v.c_str(), &end, 10);
			unsigned long lo = 1000, hi = 1000000;
			if (v.empty() || *end || errno || n < lo || n > hi || v[0] == '-')
				fail(kBadSetting,
				     fmt::format("{}: '{}' is not a whole number in {}..{}", k, v,
						 lo, hi));
		} else if (k == "backend" || k == "prio_range" || k == "smt_pairs") {
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
	std::string bin = o.hpcd_bin;
	if (bin.empty()) {
		std::string d = self_dir() + "/hpcd";
		bin = ::access(d.c_str(), X_OK) == 0 ? d : "hpcd";
	}
	std::string logf = o.socket + ".log";
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kNoDaemon, std::string("fork: ") + std::strerror(errno));
	if (pid == 0) {
		::setsid();
		int fd = ::open(logf.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int nul = ::open("/dev/null", O_RDWR);
		::dup2(nul, 0);
		::dup2(fd >= 0 ? fd : nul, 1);
		::dup2(fd >= 0 ? fd : nul, 2);
		// Double fork: hpcd is nobody's child here.
		if (::fork() != 0)
			::_exit(0);
		::execlp(bin.c_str(), bin.c_str(), "--exit-when-idle", "--control",
			 o.socket.c_str(), nullptr);
		::_exit(127);
	}
	::waitpid(pid, nullptr, 0);
	for (int i = 0; i < 100; i++) {
		if (c.connect(o.socket))
			return;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	fail(kNoDaemon,
	     "started " + bin + " but it does not answer on " + o.socket + " (see " + logf + ")");
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

[[noreturn]] void exec_cmd(const std::vector<std::string> &cmd)
{
	std::vector<char *> argv;
	for (auto &a : cmd)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	::execvp(argv[0], argv.data());
	int e = errno;
	std::cerr << "hpcctl: cannot run '" << cmd[0] << "': " << std::strerror(e) << "\n";
	::_exit(e == ENOENT ? kNotFound : kNoExec);
}

pid_t g_child = -1;
void forward(int sig)
{
	if (g_child > 0)
		::kill(g_child, sig);
}

int run(const Opts &o)
{
	std::vector<std::string> kv = o.settings;
	if (!o.heuristic.empty())
		kv.push_back("heuristic=" + o.heuristic);
	check_keys(kv);
	if (use_kernel(o)) {
		if (!kv.empty())
			kernel_set(o, kv);
		sched_param sp{};
		sp.sched_priority = 0;
		if (::sched_setscheduler(0, kSchedHpc, &sp) < 0)
			fail(kFail,
			     std::string("sched_setscheduler(SCHED_HPC): ") + std::strerror(errno));
		exec_cmd(o.cmd);
	}
	ControlClient c;
	connect_or_start(o, c);
	if (!kv.empty())
		hpcd_set(c, kv);
	// The child waits until hpcd manages it, then becomes the command.
	int gate[2];
	if (::pipe2(gate, O_CLOEXEC) < 0)
		fail(kFail, std::string("pipe: ") + std::strerror(errno));
	pid_t child = ::fork();
	if (child < 0)
		fail(kFail, std::string("fork: ") + std::strerror(errno));
	if (child == 0) {
		::close(gate[1]);
		char go = 0;
		if (::read(gate[0], &go, 1) != 1 || go != 'g')
			::_exit(kFail);
		exec_cmd(o.cmd);
	}
	::close(gate[0]);
	g_child = child;
	for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
		std::signal(s, forward);
	json r;
	try {
		r = c.call(json{{"cmd", "add"}, {"pid", child}, {"name", o.cmd[0]}});
	} catch (...) {
		::kill(child, SIGKILL);
		::waitpid(child, nullptr, 0);
		throw;
	}
	if (!r.value("ok", false)) {
		::kill(child, SIGKILL);
		::waitpid(child, nullptr, 0);
		fail(kFail, "hpcd cannot manage the command: " + r.value("error", "?"));
	}
	(void)!::write(gate[1], "g", 1);
	::close(gate[1]);
	int st = 0;
	while (::waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	return exec_status(st);
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

void print_table(const json &tasks, bool kernel)
{
	fmt::print("{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} {:>10} "
		   "{:>7}\n",
		   "PID", "NAME", "RANK", "CPU", "SIBLING", "ITER", "U_LAST%", "U_GLOB%", "PRIO",
		   "QUOTA/PERIOD", "WEIGHT", "THROTTLEDms", "NR_THR");
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
		fmt::print("{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} "
			   "{:>10} "
			   "{:>7}\n",
			   t["pid"].get<int>(),
			   (t.value("name", std::string()) + role).substr(0, 12), g("rank"),
			   g("cpu"), g("sibling"), g("iterations"), pct(t, "last_util"),
			   pct(t, "global_util"), g("prio"), q, g("weight"),
			   kernel ? fmt::format("{:.1f}", t.value("throttled_ns", 0ull) / 1e6)
				  : fmt::format("{:.1f}", thr),
			   g("nr_throttled"));
	}
	if (tasks.empty())
		fmt::print("(no managed task)\n");
}

int top(const Opts &o)
{
	bool kernel = use_kernel(o);
	ControlClient c;
	if (!kernel)
		connect_or_fail(o, c);
	for (int n = 0;; n++) {
		json tasks =
			kernel ? kernel_tasks() : checked(c.call(json{{"cmd", "list"}}))["tasks"];
		if (o.json_out) {
			std::cout << tasks.dump() << std::endl;
		} else {
			if (!o.once)
				fmt::print("\033[H\033[2J");
			fmt::print("hpcctl top — {} — {} task(s)\n",
				   kernel ? "kernel SCHED_HPC" : "hpcd", tasks.size());
			print_table(tasks, kernel);
			std::fflush(stdout);
		}
		if (o.once || (o.count && n + 1 >= o.count))
			return kOk;
		std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
	}
}

int status(const Opts &o)
{
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

int dispatch(int argc, char **argv)
{
	// Everything after the first "--" is the command of `run`, untouched.
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
	app.add_option("--socket", o.socket, "hpcd control socket ($HPCD_CONTROL)");
	app.add_option("--sysfs", o.sysfs, "kernel tunables directory ($HPC_SYSFS)");
	app.add_option("--backend", o.backend, "auto: the kernel class if present, else hpcd")
		->check(CLI::IsMember({"auto", "kernel", "hpcd"}));

	auto *run_c =
		app.add_subcommand("run", "run CMD under SCHED_HPC: hpcctl run [opts] -- CMD");
	run_c->add_option("--heuristic", o.heuristic, "uniform or adaptive")
		->check(CLI::IsMember({"uniform", "adaptive"}));
	run_c->add_option("--set", o.settings, "tunable KEY=VALUE, repeatable");
	run_c->add_option("--hpcd", o.hpcd_bin, "hpcd binary to start if none runs");
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
		app.add_subcommand("prio", "hpcd: fix a managed task's priority (0: dynamic)");
	prio_c->add_option("PID", o.pid, "managed task")->required()->check(CLI::PositiveNumber);
	prio_c->add_option("PRIO", o.prio, "priority in prio_range, 0 for dynamic")->required();
	auto *status_c = app.add_subcommand("status", "backend, tunables and daemon state");
	status_c->add_flag("--json", o.json_out, "one JSON line");

	for (auto *s : {run_c, get_c, set_c, top_c, prio_c, status_c})
		s->footer("Exit codes: see hpcctl --help.");

	std::vector<std::string> rev(before.rbegin(), before.rend());
	try {
		app.parse(rev);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
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
					      "' (commands: run, get, set, top, prio, status)";
					break;
				}
			if (before.empty())
				msg = "no command given (commands: run, get, set, top, prio, "
				      "status)";
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
	if (dashdash)
		fail(kUsage, "'--' is only for 'hpcctl run'");
	if (get_c->parsed())
		return use_kernel(o) ? kernel_get(o) : hpcd_get(o);
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
		if (use_kernel(o))
			fail(kFail, "prio: the kernel class decides priorities itself (hpcd only)");
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
	try {
		return dispatch(argc, argv);
	} catch (const Failure &f) {
		std::cerr << "hpcctl: " << f.msg << "\n";
		return f.code;
	} catch (const std::exception &e) {
		std::cerr << "hpcctl: " << e.what() << "\n";
		return kFail;
	}
}
