#include "control.hpp"

#include "params_text.hpp"
#include "system.hpp"

#include <algorithm>

#include <fmt/format.h>

using nlohmann::json;

namespace hpcd
{

const std::vector<std::string> kKernelOnlyKnobs{"queue", "timeslice_us"};
const std::vector<std::string> kReadOnlyKnobs{"backend", "prio_range", "smt_pairs"};
const std::vector<std::string> kDaemonKnobs{"mode",   "balance", "waits",
					    "window", "hold_ms", "ignore_ranks"};

const char *set_err_kind(SetErr e)
{
	switch (e) {
	case SetErr::None: return "ok";
	case SetErr::BadKey: return "bad_key";
	case SetErr::BadValue: return "bad_value";
	case SetErr::ReadOnly: return "read_only";
	case SetErr::KernelOnly: return "kernel_only";
	}
	return "?";
}

namespace
{

bool contains(const std::vector<std::string> &v, const std::string &k)
{
	return std::find(v.begin(), v.end(), k) != v.end();
}

std::string known_keys()
{
	std::string s;
	for (int i = 0; i < HPC_P_NR; i++)
		s += std::string(" ") + hpc_param_names[i];
	s += " emul_period_us";
	for (auto &k : kDaemonKnobs)
		s += " " + k;
	return s;
}

} // namespace

SetErr apply_settings(Settings &s, const std::vector<std::string> &kv, std::string &msg)
{
	Settings next = s;
	for (const auto &setting : kv) {
		auto eq = setting.find('=');
		if (eq == std::string::npos) {
			msg = "expected KEY=VALUE, got '" + setting + "'";
			return SetErr::BadValue;
		}
		std::string key = setting.substr(0, eq), val = setting.substr(eq + 1);
		if (hpc_param_lookup(key.c_str()) >= 0) {
			// The policy core's knobs: the one parser and validator.
			if (!hpc::apply_setting(next.params, setting, &kBackendRange, msg))
				return SetErr::BadValue;
			continue;
		}
		uint32_t v = 0;
		if (key == "emul_period_us") {
			if (!hpc::parse_sched_knob(key, val, v, msg))
				return SetErr::BadValue;
			next.period_us = v;
		} else if (key == "mode") {
			auto m = parse_mode(val);
			if (!m) {
				msg = "mode: '" + val + "' is not weight or smt-emul";
				return SetErr::BadValue;
			}
			next.mode = *m;
		} else if (key == "balance") {
			if (val != "on" && val != "off") {
				msg = "balance: '" + val + "' is not on or off";
				return SetErr::BadValue;
			}
			next.balance = val == "on";
		} else if (key == "waits") {
			auto w = parse_waits(val);
			if (!w) {
				msg = "waits: '" + val + "' is not poll, model or sleep";
				return SetErr::BadValue;
			}
			next.waits = *w;
		} else if (key == "window") {
			if (!hpc::parse_u32(val, v) || v < 1 || v > 1000) {
				msg = "window: '" + val + "' is not a whole number in 1..1000";
				return SetErr::BadValue;
			}
			next.window = v;
		} else if (key == "hold_ms") {
			if (!hpc::parse_u32(val, v) || v > 60000) {
				msg = "hold_ms: '" + val + "' is not a whole number in 0..60000";
				return SetErr::BadValue;
			}
			next.hold_ms = v;
		} else if (key == "ignore_ranks") {
			if (val.empty() || val == "none") {
				next.ignore_ranks.clear();
			} else if (auto l = parse_cpulist(val)) {
				next.ignore_ranks = *l;
			} else {
				msg = "ignore_ranks: '" + val +
				      "' is not a list of ranks (e.g. 0 or 0,5-7, "
				      "or none)";
				return SetErr::BadValue;
			}
		} else if (contains(kReadOnlyKnobs, key)) {
			msg = key + " is read-only";
			return SetErr::ReadOnly;
		} else if (contains(kKernelOnlyKnobs, key)) {
			msg = key + " exists only in the SCHED_HPC kernel class, not in hpcd";
			return SetErr::KernelOnly;
		} else {
			msg = "unknown parameter '" + key + "' (known:" + known_keys() + ")";
			return SetErr::BadKey;
		}
	}
	s = next;
	return SetErr::None;
}

nlohmann::ordered_json knob_values(Engine &e)
{
	nlohmann::ordered_json v;
	for (int i = 0; i < HPC_P_NR; i++)
		v[hpc_param_names[i]] = hpc::format_param(e.s.params, i);
	v["emul_period_us"] = std::to_string(e.s.period_us);
	v["backend"] = e.s.mode == Mode::SmtEmul ? "cgroup-quota" : "cgroup-weight";
	v["prio_range"] =
		std::to_string(kBackendRange.min) + " " + std::to_string(kBackendRange.max);
	std::string pairs;
	for (Task *t : e.active()) {
		if (t->ctx % 2 || e.s.mode != Mode::SmtEmul)
			continue;
		Task *sib = e.sibling(*t);
		pairs += std::to_string(t->cpu) + " " + (sib ? std::to_string(sib->cpu) : "-") +
			 "\n";
	}
	v["smt_pairs"] = pairs;
	v["mode"] = mode_name(e.s.mode);
	v["balance"] = e.s.balance ? "on" : "off";
	v["waits"] = waits_name(e.s.waits);
	v["window"] = std::to_string(e.s.window);
	v["hold_ms"] = std::to_string(e.s.hold_ms);
	v["ignore_ranks"] = e.s.ignore_ranks.empty() ? "none" : format_cpulist(e.s.ignore_ranks);
	return v;
}

namespace
{
// Who a task is and where it runs: the task event's and the list's fields.
json task_identity(Engine &e, const Task &t)
{
	Task *sib = e.sibling(t);
	return json{{"pid", t.pid},
		    {"name", t.name},
		    {"job", t.job},
		    {"rank", t.rank},
		    {"role", t.launcher ? "launcher" : "task"},
		    {"source", task_source(t)},
		    {"launched_by", t.launched_by},
		    {"ctx", t.ctx},
		    {"cpu", t.cpu},
		    {"sibling", sib ? sib->pid : 0},
		    {"prio", e.applied_prio(t)}};
}
} // namespace

json task_event(Engine &e, const Task &t)
{
	json j = task_identity(e, t);
	j["event"] = "task";
	return j;
}

json task_json(Engine &e, const Task &t, const CgStat &st)
{
	json j = task_identity(e, t);
	j.update(json{{"iterations", t.t.nr_iter},
		      {"last_run_ns", t.t.last_run},
		      {"last_wait_ns", t.t.last_wait},
		      {"last_util", t.t.last_util},
		      {"global_util", t.t.global_util},
		      {"heur_util", t.t.heur_util},
		      {"static_prio", t.static_prio},
		      {"runnable", t.live_runnable},
		      {"quota_us", t.quota.quota_us},
		      {"period_us", t.quota.period_us},
		      {"weight", t.weight},
		      {"nr_throttled", st.nr_throttled},
		      {"throttled_ns", st.throttled_ns},
		      {"cgroup", t.cg}});
	return j;
}

static std::string reply_err(const char *kind, const std::string &why)
{
	return json{{"ok", false}, {"kind", kind}, {"error", why}}.dump();
}

namespace
{
using Request = const json &;

std::string ok(json j = json::object())
{
	j["ok"] = true;
	return j.dump();
}

std::string cmd_get(Engine &e, ControlHooks &, Request req)
{
	auto all = knob_values(e);
	if (!req.contains("key"))
		return ok({{"values", all}});
	if (!req["key"].is_string())
		return reply_err("bad_request", "\"key\" must be a string");
	std::string key = req["key"];
	if (all.contains(key))
		return ok({{"values", {{key, all[key]}}}});
	if (contains(kKernelOnlyKnobs, key))
		return reply_err("kernel_only",
				 key + " exists only in the SCHED_HPC kernel class, not in hpcd");
	return reply_err("bad_key", "unknown parameter '" + key + "' (known:" + known_keys() + ")");
}

std::string cmd_set(Engine &e, ControlHooks &h, Request req)
{
	if (!req.contains("settings") || !req["settings"].is_array())
		return reply_err("bad_request",
				 "\"settings\" must be an array of \"KEY=VALUE\" strings");
	std::vector<std::string> kv;
	for (auto &x : req["settings"]) {
		if (!x.is_string())
			return reply_err("bad_request", "\"settings\" must hold strings");
		kv.push_back(x);
	}
	std::string msg;
	Mode old = e.s.mode;
	SetErr err = apply_settings(e.s, kv, msg);
	if (err != SetErr::None)
		return reply_err(set_err_kind(err), msg);
	e.params_changed();
	if (old != e.s.mode)
		e.place();
	if (h.changed)
		h.changed();
	return ok({{"values", knob_values(e)}});
}

std::string cmd_list(Engine &e, ControlHooks &h, Request)
{
	json tasks = json::array();
	for (auto &[pid, t] : e.tasks)
		tasks.push_back(task_json(e, t, h.stat ? h.stat(t) : CgStat{}));
	return ok({{"tasks", tasks}});
}

std::string cmd_status(Engine &, ControlHooks &h, Request)
{
	return ok({{"status", h.status ? h.status() : json::object()}});
}

// The request's "pid": a positive integer, else 0.
int pid_of(Request req)
{
	if (!req.contains("pid") || !req["pid"].is_number_integer() ||
	    req["pid"].get<long long>() <= 0 || req["pid"].get<long long>() > 1 << 30)
		return 0;
	return req["pid"].get<int>();
}

std::string not_managed(int pid)
{
	return reply_err("failed", "pid " + std::to_string(pid) + " is not managed");
}

std::string cmd_add(Engine &, ControlHooks &h, Request req)
{
	const int pid = pid_of(req);
	if (!pid)
		return reply_err("bad_request", "\"pid\" must be a positive integer");
	std::string name = req.value("name", std::string());
	if (req.contains("launcher") && !req["launcher"].is_boolean())
		return reply_err("bad_request", "\"launcher\" must be true or false");
	const bool launcher = req.value("launcher", false);
	std::string err = h.add ? h.add(pid, name, launcher) : "adding is not supported";
	return err.empty() ? ok() : reply_err("failed", err);
}

std::string cmd_remove(Engine &e, ControlHooks &h, Request req)
{
	const int pid = pid_of(req);
	if (!pid)
		return reply_err("bad_request", "\"pid\" must be a positive integer");
	if (!e.find(pid))
		return not_managed(pid);
	if (h.remove)
		h.remove(pid);
	return ok();
}

std::string cmd_prio(Engine &e, ControlHooks &h, Request req)
{
	if (!req.contains("pid") || !req["pid"].is_number_integer() || !req.contains("prio") ||
	    !req["prio"].is_number_integer())
		return reply_err("bad_request", "\"pid\" and \"prio\" must be integers");
	Task *t = e.find(req["pid"].get<int>());
	if (!t)
		return not_managed(req["pid"].get<int>());
	long long p = req["prio"].get<long long>();
	if (p != 0 && (p < kBackendRange.min || p > kBackendRange.max))
		return reply_err("bad_value", fmt::format("prio: {} is outside {}..{} (0: dynamic)",
							  p, kBackendRange.min, kBackendRange.max));
	t->static_prio = static_cast<uint32_t>(p);
	if (h.changed)
		h.changed();
	return ok();
}

// "since" and "max" of iterations and watch: unsigned, max > 0.
const char *bad_window(Request req)
{
	for (const char *k : {"since", "max"})
		if (req.contains(k) &&
		    (!req[k].is_number_unsigned() || (std::string(k) == "max" && req[k] == 0)))
			return k;
	return nullptr;
}

std::string window_err(const char *k)
{
	return reply_err("bad_request", fmt::format("\"{}\" must be a positive integer", k));
}

std::string cmd_iterations(Engine &, ControlHooks &h, Request req)
{
	if (const char *k = bad_window(req))
		return window_err(k);
	if (!h.events)
		return reply_err("failed", "no iteration log");
	json r = h.events(req.value("since", uint64_t{0}),
			  static_cast<size_t>(req.value("max", uint64_t{4096})));
	return ok(std::move(r));
}

std::string cmd_watch(Engine &, ControlHooks &h, Request req)
{
	if (const char *k = bad_window(req))
		return window_err(k);
	if (!h.watch)
		return reply_err("failed", "watching is not supported");
	json r{{"ok", true}, {"watch", true}};
	std::string backlog = h.watch(req.value("since", uint64_t{0}), !req.contains("since"), r);
	std::string out = r.dump();
	if (!backlog.empty()) {
		// append(), not "\n" + substr(): GCC 12 at -O3 warns (-Wrestrict)
		// on the temporary string.
		out += '\n';
		out.append(backlog, 0, backlog.size() - 1);
	}
	return out;
}

std::string cmd_shutdown(Engine &, ControlHooks &h, Request)
{
	if (h.shutdown)
		h.shutdown();
	return ok();
}

struct Command {
	const char *name;
	std::string (*fn)(Engine &, ControlHooks &, Request);
};

constexpr Command kCommands[] = {
	{"get", cmd_get},     {"set", cmd_set},
	{"list", cmd_list},   {"status", cmd_status},
	{"add", cmd_add},     {"remove", cmd_remove},
	{"prio", cmd_prio},   {"iterations", cmd_iterations},
	{"watch", cmd_watch}, {"shutdown", cmd_shutdown},
};

std::string unknown_cmd(const std::string &cmd)
{
	std::string names;
	for (const Command &c : kCommands)
		names += std::string(names.empty() ? "" : ", ") + c.name;
	return reply_err("bad_request", "unknown cmd '" + cmd + "' (" + names + ")");
}
} // namespace

std::string handle_line(Engine &e, ControlHooks &h, std::string_view line)
{
	json req;
	try {
		req = json::parse(line);
	} catch (const json::exception &ex) {
		return reply_err("bad_request", std::string("not JSON: ") + ex.what());
	}
	if (!req.is_object() || !req.contains("cmd") || !req["cmd"].is_string())
		return reply_err("bad_request", "expected an object with a string \"cmd\"");
	const std::string cmd = req["cmd"];
	for (const Command &c : kCommands) {
		if (cmd != c.name)
			continue;
		try {
			return c.fn(e, h, req);
		} catch (const json::exception &ex) {
			return reply_err("bad_request", ex.what());
		}
	}
	return unknown_cmd(cmd);
}

} // namespace hpcd
