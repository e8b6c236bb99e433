// hpcctl's backend for scx_hpc, the sched_ext scheduler, through its loader:
// `scx_hpc --exit-when-idle` started detached when no instance runs,
// `scx_hpc --set` to change a running one, `--prio` to fix a task's
// priority, `--dump-tasks --json` and `--stats-once --json` for top, status
// and trace (the loader reads the BPF maps). sched_ext's state is read from
// $HPC_SCX_SYSFS (/sys/kernel/sched_ext).
#include "backend.hpp"
#include "control.hpp"
extern "C" {
#include "hpc_smt.h"
}
#include "params_text.hpp"
#include "system.hpp"
#include "trace_cmd.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

using nlohmann::json;
namespace trace = hpcd::trace;

namespace hpcctl
{

namespace
{

// ---- the settings ------------------------------------------------------------------

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

// One KEY=VALUE's key, refused (exit 2) if scx_hpc has no such knob.
std::string scx_key(const std::string &s, const std::vector<std::string> &known)
{
	auto eq = s.find('=');
	if (eq == std::string::npos || eq == 0)
		fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
	std::string k = s.substr(0, eq);
	if (std::find(known.begin(), known.end(), k) != known.end())
		return k;
	if (std::find(hpcd::kDaemonKnobs.begin(), hpcd::kDaemonKnobs.end(), k) !=
		    hpcd::kDaemonKnobs.end() ||
	    k == "prio_range" || k == "smt_pairs")
		fail(kBadSetting, k + " is not a knob of scx_hpc (scx_hpc has: " +
					  fmt::format("{}", fmt::join(known, " ")) + ")");
	fail(kBadSetting, unknown_key(k, known));
}

// The loader's flags for checked settings.
std::vector<std::string> scx_flags(const std::map<std::string, std::string> &val)
{
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
		const std::string k = scx_key(s, known), v = s.substr(k.size() + 1);
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
	return scx_flags(val);
}

// ---- sched_ext and the loader --------------------------------------------------------

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
		*ops = trim(hpcd::read_file(dir + "/root/ops").value_or(""));
	return trim(hpcd::read_file(dir + "/state").value_or("?"));
}

bool is_loaded(const std::string &state, const std::string &ops)
{
	return state == "enabled" && ops == "hpc";
}

[[noreturn]] void another_scheduler(const std::string &ops)
{
	fail(kFail, "another sched_ext scheduler is active (" + ops + "), not scx_hpc");
}

// scx_hpc runs (fails with why if it does not, or if another sched_ext
// scheduler does).
void scx_need_loaded()
{
	std::string ops;
	std::string state = scx_state(&ops);
	if (is_loaded(state, ops))
		return;
	if (state == "enabled")
		another_scheduler(ops);
	fail(kFail, "scx_hpc is not loaded (sched_ext state " + state +
			    "); 'hpcctl --backend scx run -- CMD' starts it");
}

struct ScxOut {
	int status = 0;
	std::string out, err;
};

// Everything `out` and `err` carry until both close.
void read_both(int out, int err, ScxOut &r)
{
	pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
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
}

// Run the loader with `args`, collecting its output.
ScxOut scx_call(const Opts &o, const std::vector<std::string> &args)
{
	std::vector<std::string> argv{scx_bin(o)};
	argv.insert(argv.end(), args.begin(), args.end());
	int out[2], err[2];
	pipe_or_fail(out);
	pipe_or_fail(err);
	pid_t pid = fork_or_fail();
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
	read_both(out[0], err[0], r);
	r.status = wait_child(pid);
	r.err = trim(r.err);
	if (r.status == 127)
		fail(kFail, "cannot run scx_hpc (" + argv[0] + "): " + r.err +
				    "; give --scx-hpc BIN or $HPCCTL_SCX_HPC");
	return r;
}

// A loader that failed fails hpcctl: its status 2 (a refused value) as 2,
// anything else as 1, with what it said (without its "scx_hpc: ").
[[noreturn]] void loader_failed(const ScxOut &r, const std::string &msg)
{
	fail(r.status == kBadSetting ? kBadSetting : kFail, msg);
}

std::string loader_said(const ScxOut &r)
{
	return r.err.substr(r.err.find("scx_hpc: ") == 0 ? 9 : 0);
}

json scx_json(const Opts &o, const std::vector<std::string> &args)
{
	ScxOut r = scx_call(o, args);
	if (r.status != 0)
		loader_failed(r, r.err.empty()
					 ? fmt::format("scx_hpc exited with status {}", r.status)
					 : loader_said(r));
	try {
		return json::parse(r.out);
	} catch (const json::exception &e) {
		fail(kFail, std::string("scx_hpc printed no JSON: ") + e.what());
	}
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
		loader_failed(r, loader_said(r));
}

// ---- starting scx_hpc ---------------------------------------------------------------

// Wait for sched_ext to settle (not enabling or disabling): true if
// scx_hpc is loaded, false if sched_ext is disabled.
bool scx_settled()
{
	for (int attempt = 0;; attempt++) {
		std::string ops;
		std::string state = scx_state(&ops);
		if (is_loaded(state, ops))
			return true;
		if (state == "enabled")
			another_scheduler(ops);
		if (state == "disabled")
			return false;
		// enabling or disabling: wait for it to settle
		if (attempt == 100)
			fail(kFail, "sched_ext stays in state " + state);
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
}

// Start `argv` detached (double fork: the loader is nobody's child), its
// output to `logf`: its pid.
pid_t start_detached(const std::vector<std::string> &argv, const std::string &logf)
{
	int pp[2];
	pipe_or_fail(pp);
	pid_t pid = fork_or_fail();
	if (pid == 0) {
		::setsid();
		output_to_log(logf, false);
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
	return loader;
}

// Reuse the running scx_hpc (applying `kv`) or start one that unloads when
// its last task is gone.
void scx_start_or_reuse(const Opts &o, const std::vector<std::string> &kv)
{
	if (scx_settled()) {
		if (!kv.empty())
			scx_set(o, kv);
		return;
	}
	const auto flags = scx_check(kv, true);
	const std::string bin = scx_bin(o);
	const std::string logf = env_or("HPCCTL_SCX_LOG", "/run/scx_hpc.log");
	std::vector<std::string> argv{bin, "-q", "--exit-when-idle"};
	argv.insert(argv.end(), flags.begin(), flags.end());
	const pid_t loader = start_detached(argv, logf);
	// Loading verifies the BPF program: seconds on a slow machine.
	for (int i = 0; i < 600; i++) {
		std::string ops;
		if (is_loaded(scx_state(&ops), ops))
			return;
		if (loader <= 0 || ::kill(loader, 0) != 0)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	std::string log = trim(hpcd::read_file(logf).value_or(""));
	if (log.size() > 2000)
		log = "..." + log.substr(log.size() - 2000);
	if (loader > 0)
		::kill(loader, SIGTERM);
	fail(kFail,
	     "started " + bin + " but scx_hpc did not come up" +
		     (log.empty() ? std::string(" (its log " + logf + " is empty)") : ":\n" + log));
}

// ---- hpcctl trace: scx_hpc's per-task map, sampled -----------------------------------

// An unloading scx_hpc loses its maps before sched_ext's state leaves
// "enabled": give the state up to a second to follow. Why the recording
// ends ("" if scx_hpc is still loaded).
std::string scx_gone()
{
	std::string ops;
	std::string state = scx_state(&ops);
	for (int i = 0; i < 20 && is_loaded(state, ops); i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		state = scx_state(&ops);
	}
	if (is_loaded(state, ops))
		return "";
	return "scx_hpc unloaded (sched_ext state " + state +
	       (ops.empty() || ops == "none" ? "" : ", " + ops) + ")";
}

// One sample of scx_hpc's per-task map into the record. `now` 0: the
// baseline. When scx_hpc is gone (unloaded, or another scheduler took over)
// `reason` says so and the recording ends with what it has; a loader that
// fails or prints something else than its map is an error (no file is
// left, as for any failed trace).
void scx_sample(const Opts &o, trace::ScxSampler &sampler, Recorder &r, uint64_t now,
		std::string &reason)
{
	ScxOut out = scx_call(o, {"--dump-tasks", "--json"});
	if (out.status != 0) {
		reason = scx_gone();
		if (!reason.empty())
			return;
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
	auto got = sampler.sample(tasks, now ? now : hpcd::mono_ns());
	for (auto &ti : got.tasks)
		r.task(ti);
	for (auto &i : got.iters)
		r.iter(i);
	for (auto &p : got.prios)
		r.prio(p);
	r.missed += got.missed;
}

class ScxRecording : public Recording
{
public:
	ScxRecording(const Opts &o, int sample_ms) : o_(o), sample_ms_(sample_ms) {}
	Child spawn(const std::vector<int> &membind) override
	{
		return hpcctl::spawn(o_.cmd, membind, kSchedExt);
	}
	uint64_t grace_ns() const override
	{
		return (200 + 2 * static_cast<uint64_t>(sample_ms_)) * 1000000ull;
	}
	// The baseline: what scx_hpc's map holds before the recording starts.
	void begin(Recorder &r, std::string &reason) override
	{
		scx_sample(o_, sampler_, r, 0, reason);
	}
	void poll(Recorder &r, int wait_ms, std::string &reason) override
	{
		std::this_thread::sleep_for(
			std::chrono::milliseconds(std::min(wait_ms, sample_ms_)));
		scx_sample(o_, sampler_, r, hpcd::mono_ns(), reason);
	}
	const char *no_iteration() const override
	{
		return "hpcctl: trace: no iteration: did a SCHED_EXT task under scx_hpc close "
		       "one?\n";
	}

private:
	const Opts &o_;
	const int sample_ms_;
	trace::ScxSampler sampler_;
};

// ---- the backend -------------------------------------------------------------------

std::string value_text(const json &v)
{
	return v.is_string() ? v.get<std::string>() : v.dump();
}

class ScxBackend : public Backend
{
public:
	using Backend::Backend;
	const char *name() const override { return "scx"; }
	void check_settings(const std::vector<std::string> &kv) override { scx_check(kv, false); }
	void get(const std::string &key) override;
	void set(const std::vector<std::string> &kv) override
	{
		if (kv.empty())
			fail(kUsage, "set: give KEY=VALUE");
		scx_check(kv, false);
		scx_need_loaded();
		scx_set(o_, kv);
	}
	void prio(int pid, int prio) override;
	json status() override
	{
		scx_need_loaded();
		json j = scx_json(o_, {"--stats-once", "--json"});
		j["backend"] = "scx";
		j["sysfs"] = scx_sysfs();
		return j;
	}
	void attach() override { scx_need_loaded(); }
	json tasks() override;
	std::string label() override { return "scx_hpc (sched_ext)"; }
	const char *task_source() const override { return "kernel"; }
	// Like the kernel class: switch to SCHED_EXT and exec; scx_hpc
	// schedules the command and its children.
	void start(const std::vector<std::string> &kv) override { scx_start_or_reuse(o_, kv); }
	int run(const std::vector<int> &membind) override
	{
		exec_under(kSchedExt, o_.cmd, membind);
	}
	void check_trace() const override {}
	std::unique_ptr<Recording> record(const std::vector<std::string> &kv,
					  trace::Trace &t) override;
};

void ScxBackend::get(const std::string &key)
{
	const auto known = scx_knobs();
	if (!key.empty() && std::find(known.begin(), known.end(), key) == known.end())
		fail(kBadSetting, unknown_key(key, known));
	scx_need_loaded();
	json p = scx_json(o_, {"--stats-once", "--json"})["params"];
	if (!key.empty()) {
		std::cout << value_text(p[key]) << "\n";
		return;
	}
	for (auto &k : known)
		std::cout << k << "=" << value_text(p[k]) << "\n";
}

// Fix a task's priority in the running instance (scx_hpc --prio checks the
// value, status 2, and that the task is SCHED_EXT, status 1).
void ScxBackend::prio(int pid, int prio)
{
	if (prio != 0 && (prio < HPC_SMT_EMUL_PRIO_MIN || prio > HPC_SMT_EMUL_PRIO_MAX))
		fail(kBadSetting, fmt::format("prio: {} is outside {}..{} (0: dynamic)", prio,
					      HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX));
	scx_need_loaded();
	ScxOut r = scx_call(o_, {"--prio", fmt::format("{}={}", pid, prio)});
	if (r.status != 0)
		loader_failed(r, "prio: " + loader_said(r));
}

// scx_hpc's per-task map as hpcctl top shows it: live tasks only.
json ScxBackend::tasks()
{
	json out = json::array();
	for (auto &t : scx_json(o_, {"--dump-tasks", "--json"})) {
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

std::unique_ptr<Recording> ScxBackend::record(const std::vector<std::string> &kv, trace::Trace &t)
{
	if (o_.cmd.empty())
		scx_need_loaded();
	else
		scx_start_or_reuse(o_, kv);
	const int sample_ms = o_.sample_ms ? o_.sample_ms : 10;
	t.settings = scx_json(o_, {"--stats-once", "--json"}).value("params", json::object());
	t.settings["sample_ms"] = sample_ms;
	return std::make_unique<ScxRecording>(o_, sample_ms);
}

} // namespace

std::unique_ptr<Backend> scx_backend(const Opts &o)
{
	return std::make_unique<ScxBackend>(o);
}

} // namespace hpcctl
