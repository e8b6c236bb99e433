// hpcctl's backend for hpcd, the user-space daemon: requests on its control
// socket (ControlClient), an hpcd of hpcctl's own started when none answers,
// the command added to it, its watch stream for `run` and `trace`.
#include "backend.hpp"
#include "client.hpp"
#include "system.hpp"
#include "trace_cmd.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

using hpcd::ControlClient;
using nlohmann::json;
namespace trace = hpcd::trace;

namespace hpcctl
{

namespace
{

// ---- hpcd's control socket -------------------------------------------------------

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

void connect_or_fail(const Opts &o, ControlClient &c)
{
	if (!c.connect(o.socket))
		fail(kNoDaemon, fmt::format("hpcd is not running (control socket {}: {}); start "
					    "it with 'hpcd &' or use 'hpcctl run'",
					    o.socket, std::strerror(errno)));
}

// The hpcd this hpcctl started (-1: none): its child, ended with it.
pid_t g_hpcd = -1;

// --hpcd, else next to hpcctl (the build tree), in ../sbin (make install),
// else hpcd from $PATH.
std::string hpcd_bin(const Opts &o)
{
	std::string bin = o.hpcd_bin;
	for (auto d : {self_dir() + "/hpcd", self_dir() + "/../sbin/hpcd"})
		if (bin.empty() && ::access(d.c_str(), X_OK) == 0)
			bin = d;
	return bin.empty() ? "hpcd" : bin;
}

// Start `bin` (hpcd --exit-when-idle on `socket`), logging to `logf`.
void fork_hpcd(const std::string &bin, const std::string &socket, const std::string &logf)
{
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
		output_to_log(logf, true);
		::execlp(bin.c_str(), bin.c_str(), "--exit-when-idle", "--control", socket.c_str(),
			 nullptr);
		::_exit(127);
	}
	g_hpcd = pid;
}

void connect_or_start_once(const Opts &o, ControlClient &c)
{
	if (c.connect(o.socket))
		return;
	const std::string bin = hpcd_bin(o);
	const std::string logf = o.socket + ".log";
	fork_hpcd(bin, o.socket, logf);
	// Up to 5 s, looking every 5 ms: the command waits for it (hpcd is up
	// in some tens of ms; every ms here is a ms on the command's time).
	for (int i = 0; i < 1000; i++) {
		if (c.connect(o.socket))
			return;
		if (::waitpid(g_hpcd, nullptr, WNOHANG) == g_hpcd) {
			g_hpcd = -1;
			break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	fail(kNoDaemon,
	     "started " + bin + " but it does not answer on " + o.socket + " (see " + logf + ")");
}

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

// hpcd's watch stream on a connection of its own (`cmd`: who asks); what
// hpcd says it dropped before.
uint64_t watch_on(const Opts &o, ControlClient &watch, const char *cmd)
{
	if (!watch.connect(o.socket))
		fail(kNoDaemon, std::string(cmd) + ": hpcd does not answer on " + o.socket);
	return checked(watch.call(json{{"cmd", "watch"}})).value("dropped", uint64_t{0});
}

// ---- the command, and the ranks hpcd adopted for it --------------------------------

// An MPI launcher (mpirun, mpiexec, srun ...; --launcher for a wrapper):
// hpcd adopts the processes it starts as the job's ranks, not the launcher.
bool launches_ranks(const Opts &o)
{
	return o.launcher || (!o.cmd.empty() && hpcd::is_launcher_name(o.cmd[0]));
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
				{"name", base_name(o.cmd[0])},
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
	static bool is_rank(const json &t) { return t.value("role", std::string()) == "task"; }
	size_t ranks() const
	{
		return static_cast<size_t>(std::count_if(
			tasks.begin(), tasks.end(), [](auto &kv) { return is_rank(kv.second); }));
	}
	// The warnings about this run, for the screen and the trace.
	std::vector<std::string> warnings(const Opts &o) const;
	std::string unmonitored(const std::string &cmd) const;
};

std::vector<std::string> Adoption::warnings(const Opts &o) const
{
	std::vector<std::string> w;
	if (!launches_ranks(o))
		return w;
	const std::string cmd = base_name(o.cmd[0]);
	if (!ranks()) {
		w.push_back(fmt::format("{} started no process hpcd could adopt as a rank: "
					"nothing was balanced (ranks in ignore_ranks are "
					"not adopted; hpcd's log says what it saw)",
					cmd));
		return w;
	}
	if (std::string u = unmonitored(cmd); !u.empty())
		w.push_back(u);
	return w;
}

// The ranks that ran without the monitor ("" if none).
std::string Adoption::unmonitored(const std::string &cmd) const
{
	std::vector<std::string> unmon;
	bool sampled = false;
	for (auto &[pid, t] : tasks)
		if (is_rank(t) && t.value("source", std::string()) != "monitor") {
			unmon.push_back(fmt::format("pid {} ({}) rank {}", pid,
						    t.value("name", std::string("?")),
						    t.value("rank", -1)));
			sampled |= t.value("source", std::string()) != "bpf";
		}
	if (unmon.empty())
		return "";
	return fmt::format("{} of {} rank(s) ran unmonitored (no libhpcmon hello: adopted "
			   "under {}, iterations {}, a polling wait looks busy): {}; preload "
			   "libhpcmon (hpcmon-lib PROGRAM) to see MPI's waits",
			   unmon.size(), ranks(), cmd,
			   sampled ? "sampled from /proc"
				   : "from the scheduler's sleeps and wake-ups",
			   fmt::join(unmon, ", "));
}

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
	const int pfd = hpcd::open_pidfd(pid);
	const auto grace = [&] { return a.tasks.count(pid) ? 10000000000ull : 200000000ull; };
	while (!done_at || (open && !released && hpcd::mono_ns() < done_at + grace())) {
		int st;
		if (!done_at && ::waitpid(pid, &st, WNOHANG) == pid) {
			status = exec_status(st);
			done_at = hpcd::mono_ns();
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

// ---- hpcctl trace: hpcd's watch stream into the record -------------------------------

// What hpcd's task list (or an event) says of a task.
void describe(trace::TaskInfo &t, const json &x)
{
	t.name = x.value("name", t.name);
	t.job = x.value("job", t.job);
	t.sibling = x.value("sibling", t.sibling);
	t.role = x.value("role", t.role);
	t.rank = x.value("rank", t.rank);
	t.ctx = x.value("ctx", t.ctx);
	t.cpu = x.value("cpu", t.cpu);
}

// hpcd's task list, if hpcd still answers.
json task_list(ControlClient *ctl)
{
	if (ctl) {
		try {
			return ctl->call(json{{"cmd", "list"}}).value("tasks", json::array());
		} catch (const std::exception &) {
			// hpcd is on its way out: what the event says will do.
		}
	}
	return json::array();
}

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
	ti.name = hpcd::proc_comm(ti.pid);
	for (auto &x : task_list(ctl)) {
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

trace::Iter iter_of(const json &ev)
{
	trace::Iter i;
	i.pid = ev.value("pid", 0);
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
	return i;
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
		r.missed += ev.value("missed", uint64_t{0});
		r.iter(iter_of(ev));
	} else {
		r.prio(trace::PrioChange{pid, ev.value("at_ns", uint64_t{0}),
					 ev.value("old_prio", 0u), ev.value("prio", 0u)});
	}
	return true;
}

class HpcdRecording : public Recording
{
public:
	HpcdRecording(const Opts &o, ControlClient &ctl) : o_(o), ctl_(ctl) {}
	Child spawn(const std::vector<int> &membind) override
	{
		return start_managed(o_, ctl_, membind);
	}
	// hpcd ends the stream itself when it exits with its last task.
	uint64_t grace_ns() const override { return 500 * 1000000ull; }
	void poll(Recorder &r, int wait_ms, std::string &reason) override
	{
		std::string line;
		int got;
		while ((got = watch_.read_line(line, wait_ms)) > 0) {
			if (!hpcd_event(r, adopted_, line, &ctl_, reason))
				break;
		}
		if (got < 0 && reason.empty())
			reason = "hpcd closed the connection";
	}
	void finish(Recorder &r) override
	{
		if (!o_.cmd.empty())
			r.t.warnings = adopted_.warnings(o_);
		warnings_ = r.t.warnings;
	}
	int verdict(int status) override
	{
		return adoption_verdict(o_, adopted_, warnings_, status);
	}
	const char *no_iteration() const override
	{
		return "hpcctl: trace: no iteration: did hpcd manage a task that waits (or a rank "
		       "with libhpcmon)?\n";
	}

	ControlClient watch_;

private:
	const Opts &o_;
	ControlClient &ctl_;
	Adoption adopted_;
	std::vector<std::string> warnings_;
};

// ---- the backend -------------------------------------------------------------------

class HpcdBackend : public Backend
{
public:
	using Backend::Backend;
	const char *name() const override { return "hpcd"; }
	void get(const std::string &key) override;
	void set(const std::vector<std::string> &kv) override
	{
		check_settings(kv);
		attach();
		checked(c_.call(json{{"cmd", "set"}, {"settings", kv}}));
	}
	void prio(int pid, int prio) override
	{
		attach();
		checked(c_.call(json{{"cmd", "prio"}, {"pid", pid}, {"prio", prio}}));
	}
	json status() override
	{
		attach();
		json s = checked(c_.call(json{{"cmd", "status"}}))["status"];
		s["backend"] = "hpcd";
		return s;
	}
	void attach() override { connect_or_fail(o_, c_); }
	json tasks() override { return checked(c_.call(json{{"cmd", "list"}}))["tasks"]; }
	std::string label() override;
	const char *task_source() const override { return "-"; }
	void start(const std::vector<std::string> &kv) override
	{
		connect_or_start(o_, c_);
		if (!kv.empty())
			checked(c_.call(json{{"cmd", "set"}, {"settings", kv}}));
	}
	int run(const std::vector<int> &membind) override;
	std::unique_ptr<Recording> record(const std::vector<std::string> &kv,
					  trace::Trace &t) override;

private:
	ControlClient c_;
};

void HpcdBackend::get(const std::string &key)
{
	attach();
	json req{{"cmd", "get"}};
	if (!key.empty())
		req["key"] = key;
	json r = checked(c_.call(req));
	if (!key.empty()) {
		std::cout << trim(r["values"][key].get<std::string>()) << "\n";
		return;
	}
	for (auto &[k, v] : r["values"].items())
		std::cout << k << "=" << one_line(v.get<std::string>()) << "\n";
}

// hpcd and where it has the sleeps and wake-ups of tasks without the monitor.
std::string HpcdBackend::label()
{
	json st = checked(c_.call(json{{"cmd", "status"}}))["status"];
	std::string src = st.value("source", std::string());
	return src == "bpf"    ? "hpcd, events from BPF"
	       : src == "proc" ? fmt::format("hpcd, events sampled from /proc every {} ms",
					     st.value("period_ms", 0.0))
			       : "hpcd";
}

int HpcdBackend::run(const std::vector<int> &membind)
{
	ControlClient watch;
	watch_on(o_, watch, "run");
	// The child waits until hpcd manages it, then becomes the command.
	catch_signals();
	Child ch = start_managed(o_, c_, membind);
	int code = 0;
	std::string why = go(ch, code);
	if (!why.empty()) {
		std::cerr << "hpcctl: " << why << "\n";
		return code;
	}
	Adoption a;
	const int status = follow(watch, ch.pid, a);
	return adoption_verdict(o_, a, a.warnings(o_), status);
}

std::unique_ptr<Recording> HpcdBackend::record(const std::vector<std::string> &kv, trace::Trace &t)
{
	if (o_.cmd.empty())
		attach();
	else
		start(kv);
	t.settings = checked(c_.call(json{{"cmd", "get"}}))["values"];
	auto rec = std::make_unique<HpcdRecording>(o_, c_);
	t.dropped = watch_on(o_, rec->watch_, "trace");
	return rec;
}

} // namespace

// Given a moment to leave on its own (--exit-when-idle, after its last task),
// then told to (SIGTERM; its guardian undoes what it did either way). Waited
// for, so that its cgroups are gone when hpcctl returns.
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

std::unique_ptr<Backend> hpcd_backend(const Opts &o)
{
	return std::make_unique<HpcdBackend>(o);
}

} // namespace hpcctl
