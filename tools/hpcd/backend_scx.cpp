// hpcctl's backend for scx_hpc, the sched_ext scheduler: its loader
// (`scx_hpc --exit-when-idle`) started detached when no instance runs; the
// running instance's maps read and written directly (scx_maps.cpp) for
// get, set, prio, status, top and trace. sched_ext's state is read from
// $HPC_SCX_SYSFS (/sys/kernel/sched_ext).
#include "backend.hpp"
#include "control.hpp"
#include "params_text.hpp"
#include "scx_maps.hpp"
#include "system.hpp"
#include "trace_cmd.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sched.h>
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

// KEY=VALUE settings by key (each refused, exit 2, if scx_hpc has no such
// knob).
std::map<std::string, std::string> knob_map(const std::vector<std::string> &kv)
{
	const auto known = scx_knobs();
	std::map<std::string, std::string> val;
	for (auto &s : kv) {
		const std::string k = scx_key(s, known);
		val[k] = s.substr(k.size() + 1);
	}
	return val;
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

// Check KEY=VALUE settings as scx_hpc applies them (scx_hpc_user.cpp: the
// values, and with `whole_set` the set over the defaults, within the
// emulation's priority range; a running instance checks them against its
// own values); exit 2 before anything happens. Returns the loader's flags
// for them.
std::vector<std::string> scx_check(const std::vector<std::string> &kv, bool whole_set)
{
	const auto val = knob_map(kv);
	scx_hpc_params p = scxhpc::default_params();
	if (std::string err; !scxhpc::apply_knobs(p, val, whole_set, err))
		fail(kBadSetting, err);
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

// The running instance's maps (fails, exit 1, if scx_hpc is not loaded).
std::unique_ptr<scx::Maps> open_maps()
{
	scx_need_loaded();
	auto m = std::make_unique<scx::Maps>();
	if (!m->find())
		fail(kFail, std::string("scx_hpc is loaded but its maps were not found") +
				    (geteuid() ? " (run as root)" : ""));
	return m;
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
			scx::set_params(*open_maps(), knob_map(kv));
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

// Why the recording ends: "" while scx_hpc is loaded; once it is not (it
// unloaded, or another scheduler took over), sched_ext's state.
std::string scx_gone()
{
	std::string ops;
	std::string state = scx_state(&ops);
	if (is_loaded(state, ops))
		return "";
	return "scx_hpc unloaded (sched_ext state " + state +
	       (ops.empty() || ops == "none" ? "" : ", " + ops) + ")";
}

// The task map as the sampler reads it (the status --tasks JSON's entries).
std::vector<trace::ScxTask> scx_tasks(const scx::Maps &m)
{
	json dump = json::array();
	for (auto &t : scxhpc::read_tasks(m.tasks))
		dump.push_back(json(scx::task_json(t)));
	return trace::parse_scx_tasks(dump);
}

class ScxRecording : public Recording
{
public:
	ScxRecording(const Opts &o, int sample_ms, std::unique_ptr<scx::Maps> maps)
	    : o_(o), sample_ms_(sample_ms), maps_(std::move(maps))
	{
	}
	Child spawn(const std::vector<int> &membind) override
	{
		return hpcctl::spawn(o_.cmd, membind, kSchedExt);
	}
	uint64_t grace_ns() const override
	{
		return (200 + 2 * static_cast<uint64_t>(sample_ms_)) * 1000000ull;
	}
	// The baseline: what scx_hpc's map holds before the recording starts.
	void begin(Recorder &r, std::string &reason) override { sample(r, 0, reason); }
	void poll(Recorder &r, int wait_ms, std::string &reason) override
	{
		std::this_thread::sleep_for(
			std::chrono::milliseconds(std::min(wait_ms, sample_ms_)));
		sample(r, hpcd::mono_ns(), reason);
	}
	const char *no_iteration() const override
	{
		return "hpcctl: trace: no iteration: did a SCHED_EXT task under scx_hpc close "
		       "one?\n";
	}

private:
	// One sample of the map into the record (`now` 0: the baseline), or
	// why the recording ends when scx_hpc is gone.
	void sample(Recorder &r, uint64_t now, std::string &reason)
	{
		reason = scx_gone();
		if (!reason.empty())
			return;
		auto got = sampler_.sample(scx_tasks(*maps_), now ? now : hpcd::mono_ns());
		for (auto &ti : got.tasks)
			r.task(ti);
		for (auto &i : got.iters)
			r.iter(i);
		for (auto &p : got.prios)
			r.prio(p);
		r.missed += got.missed;
	}

	const Opts &o_;
	const int sample_ms_;
	std::unique_ptr<scx::Maps> maps_;
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
		scx::set_params(*open_maps(), knob_map(kv));
	}
	void prio(int pid, int prio) override;
	json status() override { return json(stats()); }
	void print_status(bool one_line) override;
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

private:
	// The statistics with the backend and sched_ext's directory first.
	scx::ojson stats();
	// The maps, looked up at the first use; scx_hpc still loaded.
	const scx::Maps &maps()
	{
		if (!maps_)
			maps_ = open_maps();
		else
			scx_need_loaded();
		return *maps_;
	}

	std::unique_ptr<scx::Maps> maps_;
};

scx::ojson ScxBackend::stats()
{
	const scx::Maps &m = maps();
	std::string ops;
	const std::string state = scx_state(&ops);
	scx::ojson j = {{"backend", "scx"}, {"sysfs", scx_sysfs()}};
	j.update(scx::stats_json(scx::read_stats(m), state, ops));
	return j;
}

// status: the statistics; with --tasks the task map, with --progs the
// loaded programs (scx_hpc's, or any prefix's: loaded or not).
void ScxBackend::print_status(bool one_line)
{
	if (o_.status_progs)
		std::cout << scx::progs_text(o_.prog_prefix, one_line);
	else if (o_.status_tasks)
		std::cout << scx::tasks_text(scxhpc::read_tasks(maps().tasks), one_line);
	else
		std::cout << (one_line ? scx::dump(stats()) : stats().dump(2)) << "\n";
}

void ScxBackend::get(const std::string &key)
{
	const auto known = scx_knobs();
	if (!key.empty() && std::find(known.begin(), known.end(), key) == known.end())
		fail(kBadSetting, unknown_key(key, known));
	json p = scx::params_json(scx::read_params(maps()));
	if (!key.empty()) {
		std::cout << value_text(p[key]) << "\n";
		return;
	}
	for (auto &k : known)
		std::cout << k << "=" << value_text(p[k]) << "\n";
}

// Fix a task's priority in the running instance: the value is checked
// (exit 2), then that the task is SCHED_EXT (exit 1), before anything is
// written.
void ScxBackend::prio(int pid, int prio)
{
	const auto range = scxhpc::kPrioRange;
	if (prio != 0 && (prio < static_cast<int>(range.min) || prio > static_cast<int>(range.max)))
		fail(kBadSetting, fmt::format("prio: {} is outside {}..{} (0: dynamic)", prio,
					      range.min, range.max));
	scx_need_loaded();
	const int pol = ::sched_getscheduler(pid);
	if (pol < 0)
		fail(kFail, fmt::format("prio: no task {}", pid));
	if ((pol & ~SCHED_RESET_ON_FORK) != kSchedExt)
		fail(kFail, fmt::format("prio: task {} is not SCHED_EXT (policy {}): scx_hpc does "
					"not schedule it",
					pid, pol & ~SCHED_RESET_ON_FORK));
	scx::fix_prio(maps(), static_cast<uint32_t>(pid), static_cast<uint32_t>(prio));
}

// scx_hpc's per-task map as hpcctl top shows it: live tasks only.
json ScxBackend::tasks()
{
	json out = json::array();
	for (auto &t : scxhpc::read_tasks(maps().tasks)) {
		if (t.exited)
			continue;
		out.push_back({{"pid", t.pid},
			       {"name", scx::comm_of(t)},
			       {"tgid", t.tgid},
			       {"cpu", t.cpu},
			       {"iterations", t.nr_iter},
			       {"judgements", t.nr_judged},
			       {"last_util", t.last_util},
			       {"global_util", t.global_util},
			       {"prio", t.prio},
			       {"throttled_ns", t.throttled_ns},
			       {"run_ns", t.run_ns}});
	}
	return out;
}

std::unique_ptr<Recording> ScxBackend::record(const std::vector<std::string> &kv, trace::Trace &t)
{
	if (!o_.cmd.empty())
		scx_start_or_reuse(o_, kv);
	auto m = open_maps();
	const int sample_ms = o_.sample_ms ? o_.sample_ms : 10;
	t.settings = json(scx::params_json(scx::read_params(*m)));
	t.settings["sample_ms"] = sample_ms;
	return std::make_unique<ScxRecording>(o_, sample_ms, std::move(m));
}

} // namespace

std::unique_ptr<Backend> scx_backend(const Opts &o)
{
	return std::make_unique<ScxBackend>(o);
}

} // namespace hpcctl
