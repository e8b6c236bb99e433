// The comparison a table run produces, and its text and JSON forms.
#pragma once

#include "sim.hpp"

#include <nlohmann/json.hpp>

namespace hpcsim
{

struct Comparison {
	Workload workload;
	hpc_params params{};
	RunResult baseline, stat, uniform, adaptive, phase;
	std::vector<uint32_t> static_prio;
	double ideal_s = 0;
	// Per dynamic run and phase: iterations to settle (-1: never).
	std::vector<int> settle_uniform, settle_adaptive, settle_phase;
	// Per dynamic run and phase: iterations until the priorities settle
	// (prio_settle_iterations()).
	std::vector<int> prio_settle_uniform, prio_settle_adaptive, prio_settle_phase;
	// Priority changes after the run first settled in its last phase.
	int late_changes_uniform = 0, late_changes_adaptive = 0, late_changes_phase = 0;
};

Comparison compare(const Workload &w, const hpc_params &p);
std::string render_table(const Comparison &c, const nlohmann::json *paper_entry);
nlohmann::json to_json(const Comparison &c);

} // namespace hpcsim
