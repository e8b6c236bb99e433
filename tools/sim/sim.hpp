// hpcsim: a deterministic discrete-event simulator of tasks on emulated SMT
// cores, driving the SCHED_HPC policy core through the same event interface
// the kernel class uses (sleep / wakeup with the sibling's class).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

extern "C" {
#include "hpc_policy.h"
#include "hpc_smt.h"
}

namespace hpcsim
{

// How a task waits at the synchronisation point. Block (the default): it
// waits as the SMT model says a waiting context does, hpc_smt_speed(own, sib,
// false): its context releases the core part of the time and competes at
// normal priority for the rest (the fit to the paper's Tables III-V). Spin:
// it keeps computing at its own priority (a busy-polling loop counted as
// work; the model before the fit, which the paper's tables reject).
enum class WaitMode { Spin, Block };

enum class Mode { Baseline, Static, Uniform, Adaptive, Phase };

// From iteration `from` on, task i computes loads_ms[i] ms of single-thread
// work per iteration.
struct Phase {
	int from = 0;
	std::vector<double> loads_ms;
};

// Tasks 2k and 2k+1 share emulated SMT core k unless `siblings` says
// otherwise; all meet at a barrier at the end of every iteration.
struct Workload {
	std::string name;
	std::string description;
	int iterations = 0;
	WaitMode wait = WaitMode::Block;
	// siblings[i]: the task on i's SMT sibling context, -1 for none; empty:
	// i ^ 1 (tasks 2k, 2k+1 share core k).
	std::vector<int> siblings;
	std::vector<Phase> phases;
	// Per-iteration noise: each task's load in each iteration is scaled by
	// 1 + u, u uniform in [-noise_pct, +noise_pct] %, drawn from `seed`
	// (deterministic: the same spec gives the same run).
	double noise_pct = 0;
	uint64_t seed = 1;

	int ntasks() const { return static_cast<int>(phases.front().loads_ms.size()); }
	// The task on i's sibling context, or -1.
	int sibling(int i) const;
	const Phase &phase_at(int iter) const;
	int phase_index(int iter) const;
	// Task i's load in iteration iter, in ms, noise included.
	double load_ms(int iter, int i) const;
	// Throws std::invalid_argument with a clear message on a bad workload.
	void validate() const;
};

struct RunConfig {
	Mode mode = Mode::Baseline;
	std::vector<uint32_t> static_prio; // Mode::Static only
	hpc_params params{};
};

struct TaskResult {
	double comp_pct = 0; // time computing / total time
	uint32_t final_prio = 0;
	std::vector<uint32_t> prio;   // priority used in each iteration
	std::vector<double> util_pct; // compute share of each iteration
};

struct RunResult {
	std::string label;
	double time_s = 0;
	std::vector<double> iter_s; // length of each iteration
	std::vector<TaskResult> tasks;
	int prio_changes = 0; // over the whole run, all tasks
};

RunResult simulate(const Workload &w, const RunConfig &cfg);

// The constant priority vector within [min_prio, max_prio] that gives the
// shortest run (exhaustive search; ties go to the lowest priorities), with at
// most one context of a core above min_prio, as the rule keeps it.
std::vector<uint32_t> best_static(const Workload &w, const hpc_params &p);

// Lower bound: each core's contexts split decode share continuously so that
// both finish together (the best any priority scheme could do).
double ideal_time_s(const Workload &w);

// Iterations after the start of phase `phase` until every following
// iteration of that phase is within `tol` of the phase's best static
// iteration time; nullopt if it never settles.
std::optional<int> settle_iterations(const Workload &w, const RunResult &r, int phase,
				     const hpc_params &p, double tol = 0.02);

// Iterations after the start of phase `phase` until every task runs with the
// priority it ends the phase with, and keeps it: the paper's "iterations to
// detect and correct the new load imbalance" (MetBenchVar: Uniform 2 after
// the first reversal, 3 after the second).
int prio_settle_iterations(const Workload &w, const RunResult &r, int phase);

// Built-in workloads derived from the paper's tables (paper-tables.json).
Workload metbench(const nlohmann::json &paper, int iterations = 10);
Workload metbenchvar(const nlohmann::json &paper, int k = 15);
// BT-MZ as in Table V: P1,P4 share a core, P2,P3 the other.
Workload btmz(const nlohmann::json &paper);
// SIESTA as in Table VI: P1,P2 and P3,P4 share a core, loads varying by
// +-noise_pct % per iteration.
Workload siesta(const nlohmann::json &paper, int iterations = 200, double noise_pct = 30,
		uint64_t seed = 1);
// A workload from a JSON spec (see tools/sim/README.md).
Workload workload_from_json(const nlohmann::json &spec);

const char *mode_name(Mode m);

} // namespace hpcsim
