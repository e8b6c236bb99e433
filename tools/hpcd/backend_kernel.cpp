// hpcctl's backend for the kernel class SCHED_HPC: the tunables in sysfs
// ($HPC_SYSFS), the tasks in /proc/PID/sched_hpc, a task's fixed priority
// as its sched_priority, the iterations from the sched_hpc_iteration
// tracepoint (tracefs).
#include "backend.hpp"
#include "control.hpp"
#include "params_text.hpp"
#include "system.hpp"
#include "trace_cmd.hpp"
#include "tracefs.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <iostream>
#include <map>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

using nlohmann::json;
namespace trace = hpcd::trace;

namespace hpcctl
{

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

void check_keys(const std::vector<std::string> &kv)
{
	for (auto &s : kv) {
		auto eq = s.find('=');
		if (eq == std::string::npos || eq == 0)
			fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
		std::string k = s.substr(0, eq);
		auto &known = kernel_knobs();
		if (std::find(known.begin(), known.end(), k) == known.end() &&
		    std::find(hpcd::kDaemonKnobs.begin(), hpcd::kDaemonKnobs.end(), k) ==
			    hpcd::kDaemonKnobs.end()) {
			std::vector<std::string> all = known;
			all.insert(all.end(), hpcd::kDaemonKnobs.begin(), hpcd::kDaemonKnobs.end());
			fail(kBadSetting, unknown_key(k, all));
		}
	}
}

namespace
{

// A task's /proc/PID/sched_hpc ("key: value" lines) into `j`.
void sched_hpc_fields(const std::string &text, json &j)
{
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
			k == "policy" ? json(v) : json(std::strtoull(v.c_str(), 0, 10));
	}
}

// Every SCHED_HPC task, as /proc describes it.
json kernel_tasks()
{
	json out = json::array();
	if (DIR *d = ::opendir("/proc")) {
		while (auto *e = ::readdir(d)) {
			int pid = std::atoi(e->d_name);
			if (pid <= 0)
				continue;
			auto t = hpcd::read_file(std::string("/proc/") + e->d_name + "/sched_hpc");
			if (!t || t->find("policy: hpc") == std::string::npos)
				continue;
			json j{{"pid", pid}, {"name", hpcd::proc_comm(pid)}};
			sched_hpc_fields(*t, j);
			out.push_back(j);
		}
		::closedir(d);
	}
	return out;
}

// One task's line of the sched_hpc tracepoints, when it is new to the record.
void first_seen(Recorder &r, int pid, const std::string &comm, int cpu, uint32_t prio)
{
	if (r.known.count(pid))
		return;
	trace::TaskInfo ti;
	ti.pid = pid;
	ti.name = comm;
	ti.source = "kernel";
	ti.cpu = cpu;
	ti.prio = prio;
	r.task(ti);
}

// The tracepoints' lines (tracefs instance of hpcctl's own) into the record.
class KernelRecording : public Recording
{
public:
	explicit KernelRecording(const Opts &o) : cmd_(o.cmd)
	{
		try {
			tfs_.open(hpcd::find_tracefs(o.tracefs),
				  "hpcctl-" + std::to_string(::getpid()));
		} catch (const std::runtime_error &e) {
			fail(kFail, std::string("trace: ") + e.what());
		}
	}
	Child spawn(const std::vector<int> &membind) override
	{
		return hpcctl::spawn(cmd_, membind, kSchedHpc);
	}
	uint64_t grace_ns() const override { return 200 * 1000000ull; }
	void poll(Recorder &r, int wait_ms, std::string &) override
	{
		std::vector<std::string> lines;
		try {
			lines = tfs_.read(wait_ms);
		} catch (const std::runtime_error &e) {
			fail(kFail, std::string("trace: ") + e.what());
		}
		for (const auto &l : lines)
			take(r, l);
	}
	void finish(Recorder &) override { tfs_.close(); }
	const char *no_iteration() const override
	{
		return "hpcctl: trace: no sched_hpc_iteration event: did a SCHED_HPC task close "
		       "an iteration?\n";
	}

private:
	void take(Recorder &r, const std::string &l)
	{
		r.t.dropped += trace::ftrace_lost(l);
		if (auto ev = trace::parse_ftrace_line(l)) {
			first_seen(r, ev->it.pid, ev->comm, ev->it.cpu, ev->it.old_prio);
			r.iter(ev->it);
		} else if (auto j = trace::parse_ftrace_judge(l)) {
			// Only a judgement that changes the priority is news.
			if (j->change.prio == j->change.old_prio)
				return;
			first_seen(r, j->change.pid, j->comm, j->cpu, j->change.old_prio);
			r.prio(j->change);
		}
	}

	const std::vector<std::string> cmd_;
	hpcd::TracefsSession tfs_;
};

class KernelBackend : public Backend
{
public:
	using Backend::Backend;
	const char *name() const override { return "kernel"; }
	void get(const std::string &key) override;
	void set(const std::vector<std::string> &kv) override
	{
		check_settings(kv);
		need_class();
		write_settings(kv);
	}
	void prio(int pid, int prio) override;
	json status() override;
	void attach() override { need_class(); }
	json tasks() override { return kernel_tasks(); }
	std::string label() override { return "kernel SCHED_HPC"; }
	const char *task_source() const override { return "kernel"; }
	void start(const std::vector<std::string> &kv) override
	{
		need_class();
		if (!kv.empty())
			write_settings(kv);
	}
	int run(const std::vector<int> &membind) override
	{
		exec_under(kSchedHpc, o_.cmd, membind);
	}
	std::unique_ptr<Recording> record(const std::vector<std::string> &kv,
					  trace::Trace &t) override;

private:
	// The class is there (--backend kernel without it: exit 1).
	void need_class() const;
	std::string sysfs_read(const std::string &key) const;
	hpc_prio_range prio_range() const;
	// The present values of the core's knobs.
	hpc_params present() const;
	// Check the whole set against the present values with the core's
	// parser, then write; the kernel checks every write again.
	void write_settings(const std::vector<std::string> &kv) const;
	// Every knob the kernel has a value of.
	std::map<std::string, std::string> values() const;
};

void KernelBackend::need_class() const
{
	struct stat st;
	if (::stat(o_.sysfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
		fail(kFail, "the kernel has no SCHED_HPC (" + o_.sysfs + " does not exist)");
}

std::string KernelBackend::sysfs_read(const std::string &key) const
{
	auto v = hpcd::read_file(o_.sysfs + "/" + key);
	if (!v)
		fail(kFail, "cannot read " + o_.sysfs + "/" + key + ": " + std::strerror(errno));
	return trim(*v);
}

hpc_prio_range KernelBackend::prio_range() const
{
	hpc_prio_range range{0, HPC_PRIO_LIMIT};
	if (sscanf(sysfs_read("prio_range").c_str(), "%u %u", &range.min, &range.max) != 2)
		fail(kFail, "unreadable prio_range in " + o_.sysfs);
	return range;
}

std::map<std::string, std::string> KernelBackend::values() const
{
	std::map<std::string, std::string> v;
	for (auto &k : kernel_knobs())
		if (auto x = hpcd::read_file(o_.sysfs + "/" + k))
			v[k] = *x;
	return v;
}

void KernelBackend::get(const std::string &key)
{
	need_class();
	auto &known = kernel_knobs();
	if (!key.empty()) {
		if (std::find(known.begin(), known.end(), key) == known.end())
			fail(kBadSetting, unknown_key(key, known));
		std::cout << sysfs_read(key) << "\n";
		return;
	}
	for (auto &k : known)
		if (auto v = hpcd::read_file(o_.sysfs + "/" + k))
			std::cout << k << "=" << one_line(*v) << "\n";
}

// sched_priority of a SCHED_HPC task is its fixed priority (0: dynamic).
// The value is checked against prio_range first (exit 2), the task must be
// SCHED_HPC (exit 1); its reset-on-fork flag is kept. The kernel checks
// again (EINVAL: exit 2, EPERM: exit 1).
void KernelBackend::prio(int pid, int prio)
{
	need_class();
	const hpc_prio_range range = prio_range();
	if (prio != 0 && (prio < static_cast<int>(range.min) || prio > static_cast<int>(range.max)))
		fail(kBadSetting, fmt::format("prio: {} is outside {}..{} (0: dynamic)", prio,
					      range.min, range.max));
	int pol = ::sched_getscheduler(pid);
	if (pol < 0)
		fail(kFail, fmt::format("prio: no task {} ({})", pid, std::strerror(errno)));
	if ((pol & ~SCHED_RESET_ON_FORK) != kSchedHpc)
		fail(kFail, fmt::format("prio: task {} is not SCHED_HPC (policy {}; hpcctl run "
					"puts a command under it)",
					pid, pol & ~SCHED_RESET_ON_FORK));
	sched_param sp{};
	sp.sched_priority = prio;
	if (::sched_setscheduler(pid, pol, &sp) < 0) {
		const int e = errno;
		if (e == EPERM)
			fail(kFail, fmt::format("prio: {} for task {}: not permitted (a fixed "
						"priority above 4 needs CAP_SYS_NICE; "
						"RLIMIT_RTPRIO grants none)",
						prio, pid));
		fail(e == EINVAL ? kBadSetting : kFail,
		     fmt::format("prio: {} for task {}: {}", prio, pid, std::strerror(e)));
	}
}

hpc_params KernelBackend::present() const
{
	hpc_params p{};
	for (int i = 0; i < HPC_P_NR; i++) {
		uint32_t v;
		if (!hpc::parse_param_value(i, sysfs_read(hpc_param_names[i]), v))
			fail(kFail,
			     std::string("unreadable ") + hpc_param_names[i] + " in " + o_.sysfs);
		hpc_param_put(&p, i, v);
	}
	return p;
}

// One KEY=VALUE of a kernel `set`, checked against `p` (which it changes).
void check_kernel_setting(hpc_params &p, const hpc_prio_range &range, const std::string &s,
			  const std::string &k, const std::string &v)
{
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
}

void KernelBackend::write_settings(const std::vector<std::string> &kv) const
{
	hpc_params p = present();
	const hpc_prio_range range = prio_range();
	std::vector<std::pair<std::string, std::string>> writes;
	for (auto &s : kv) {
		auto eq = s.find('=');
		if (eq == std::string::npos)
			fail(kBadSetting, "expected KEY=VALUE, got '" + s + "'");
		std::string k = s.substr(0, eq), v = s.substr(eq + 1);
		check_kernel_setting(p, range, s, k, v);
		writes.emplace_back(k, v);
	}
	for (auto &[k, v] : writes) {
		try {
			hpcd::write_file(o_.sysfs + "/" + k, v + "\n");
		} catch (const std::system_error &e) {
			fail(e.code().value() == EINVAL ? kBadSetting : kFail,
			     "the kernel refused " + k + "=" + v + ": " + e.code().message());
		}
	}
}

json KernelBackend::status()
{
	need_class();
	json j{{"backend", "kernel"}, {"sysfs", o_.sysfs}};
	for (auto &[k, v] : values())
		j[k] = trim(v);
	j["tasks"] = kernel_tasks().size();
	return j;
}

std::unique_ptr<Recording> KernelBackend::record(const std::vector<std::string> &kv,
						 trace::Trace &t)
{
	need_class();
	auto rec = std::make_unique<KernelRecording>(o_);
	if (!kv.empty())
		write_settings(kv);
	for (auto &[k, v] : values())
		t.settings[k] = trim(v);
	return rec;
}

} // namespace

std::unique_ptr<Backend> kernel_backend(const Opts &o)
{
	return std::make_unique<KernelBackend>(o);
}

} // namespace hpcctl
