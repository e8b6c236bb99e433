#include "params_text.hpp"

#include <charconv>
#include <string>

namespace hpc
{

bool parse_param_value(int id, std::string_view text, uint32_t &out)
{
	// Tolerate one trailing newline, as `echo` into sysfs does.
	if (!text.empty() && text.back() == '\n')
		text.remove_suffix(1);
	if (text.empty())
		return false;
	if (id == HPC_P_HEURISTIC) {
		int h = hpc_heuristic_lookup(std::string(text).c_str());
		if (h < 0)
			return false;
		out = static_cast<uint32_t>(h);
		return true;
	}
	return parse_u32(text, out);
}

std::vector<std::string> heuristic_names()
{
	return std::vector<std::string>(hpc_heuristic_names, hpc_heuristic_names + HPC_HEUR_NR);
}

std::string heuristic_choice()
{
	std::string s;
	for (int i = 0; i < HPC_HEUR_NR; i++) {
		if (i)
			s += i + 1 < HPC_HEUR_NR ? ", " : " or ";
		s += hpc_heuristic_names[i];
	}
	return s;
}

bool parse_u32(std::string_view text, uint32_t &out)
{
	if (!text.empty() && text.back() == '\n')
		text.remove_suffix(1);
	uint32_t v = 0;
	auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
	if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
		return false;
	out = v;
	return true;
}

bool is_sched_knob(std::string_view key)
{
	return key == "timeslice_us" || key == "emul_period_us" || key == "queue";
}

bool parse_sched_knob(std::string_view key, std::string_view val, uint32_t &out, std::string &err)
{
	const std::string setting = std::string(key) + "=" + std::string(val);
	if (key == "queue") {
		if (val != "rr" && val != "fifo") {
			err = setting + ": must be rr or fifo";
			return false;
		}
		out = val == "fifo";
		return true;
	}
	const bool slice = key == "timeslice_us";
	const uint32_t lo = slice ? HPC_MIN_TIMESLICE_US : HPC_MIN_EMUL_PERIOD_US;
	const uint32_t hi = slice ? HPC_MAX_TIMESLICE_US : HPC_MAX_EMUL_PERIOD_US;
	uint32_t v;
	if (!parse_u32(val, v) || v < lo || v > hi) {
		err = setting + ": must be a whole number within " + std::to_string(lo) + ".." +
		      std::to_string(hi);
		return false;
	}
	out = v;
	return true;
}

bool apply_setting(hpc_params &p, std::string_view setting, const hpc_prio_range *allowed,
		   std::string &err)
{
	auto eq = setting.find('=');
	if (eq == std::string_view::npos) {
		err = "expected KEY=VALUE, got '" + std::string(setting) + "'";
		return false;
	}
	std::string key(setting.substr(0, eq));
	std::string_view val = setting.substr(eq + 1);
	int id = hpc_param_lookup(key.c_str());
	if (id < 0) {
		err = "unknown parameter '" + key + "' (known:";
		for (int i = 0; i < HPC_P_NR; i++)
			err += std::string(" ") + hpc_param_names[i];
		err += ")";
		return false;
	}
	uint32_t v;
	if (!parse_param_value(id, val, v)) {
		err = key + ": '" + std::string(val) + "' is not a valid value" +
		      (id == HPC_P_HEURISTIC ? " (" + heuristic_choice() + ")"
					     : std::string(" (a whole number)"));
		return false;
	}
	hpc_params next = p;
	hpc_param_put(&next, id, v);
	if (int e = hpc_params_check(&next, allowed)) {
		err = key + "=" + std::string(val) + ": " + hpc_param_err_str(e);
		return false;
	}
	p = next;
	return true;
}

bool apply_values(hpc_params &p, const std::map<std::string, std::string> &kv, std::string &err)
{
	hpc_params next = p;
	for (const auto &[key, val] : kv) {
		int id = hpc_param_lookup(key.c_str());
		uint32_t v;
		if (id < 0) {
			err = "unknown parameter '" + key + "'";
			return false;
		}
		if (!parse_param_value(id, val, v)) {
			err = key + ": '" + val + "' is not a valid value" +
			      (id == HPC_P_HEURISTIC ? " (" + heuristic_choice() + ")"
						     : std::string(" (a whole number)"));
			return false;
		}
		hpc_param_put(&next, id, v);
	}
	// Both weights given: as given (hpc_param_put made each the other's
	// complement); the caller's check then sees their sum.
	auto g = kv.find("global_weight"), l = kv.find("last_weight");
	if (g != kv.end() && l != kv.end()) {
		parse_param_value(HPC_P_GLOBAL_WEIGHT, g->second, next.global_weight);
		parse_param_value(HPC_P_LAST_WEIGHT, l->second, next.last_weight);
	}
	p = next;
	return true;
}

std::string format_param(const hpc_params &p, int id)
{
	uint32_t v = hpc_param_get(&p, id);
	if (id == HPC_P_HEURISTIC)
		return v < HPC_HEUR_NR ? hpc_heuristic_names[v] : std::to_string(v);
	return std::to_string(v);
}

bool parse_emul_backend(std::string_view val, uint32_t &out, std::string &err)
{
	if (val != kBackendEmul && val != "none") {
		err = "backend=" + std::string(val) + ": must be " + kBackendEmul + " or none";
		return false;
	}
	out = val == kBackendEmul;
	return true;
}

} // namespace hpc
