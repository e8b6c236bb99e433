// hpcctl --backend scx: the running scx_hpc's maps, found by name through
// the map id iteration (nothing is pinned) and read and written with
// libbpf; what `status` prints of them (the statistics and the task map as
// JSON and as text) and of the loaded BPF programs.
#pragma once

#include "scx_hpc_user.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcctl::scx
{

// The running instance's maps (of each name and value size, the newest).
class Maps
{
public:
	Maps() = default;
	Maps(const Maps &) = delete;
	Maps &operator=(const Maps &) = delete;
	~Maps();
	// Look them up: false if one is missing (scx_hpc not loaded, or not
	// visible without root).
	bool find();
	int params = -1, cpus = -1, tasks = -1, fixed = -1;
};

// JSON in scx_hpc's order of the keys (the scripts' stable format).
using ojson = nlohmann::ordered_json;
// One line (invalid UTF-8 replaced).
std::string dump(const ojson &j);

scx_hpc_params read_params(const Maps &m);
// Every CPU's statistics (as many as there are possible CPUs).
scxhpc::Stats read_stats(const Maps &m);

// A task's command name (control characters as blanks).
std::string comm_of(const scx_hpc_task_info &t);
// The parameters by their sysfs names.
ojson params_json(const scx_hpc_params &p);
// The statistics: sched_ext's `state` and `ops`, the task counts, the
// counters summed, the parameters, the counters per CPU.
ojson stats_json(const scxhpc::Stats &s, const std::string &state, const std::string &ops);
// One entry of the task map, every field.
ojson task_json(const scx_hpc_task_info &t);
// The task map: a JSON array with an entry a line, or a table.
std::string tasks_text(const std::vector<scx_hpc_task_info> &tasks, bool json);
// Instruction counts (and, while kernel.bpf_stats_enabled=1, runs and run
// time) of the loaded struct_ops and tracing programs named `prefix`*: a
// JSON array with a program a line, or a table with the total. Fails (exit
// 1) when there is none.
std::string progs_text(const std::string &prefix, bool json);

// Apply KEY -> VALUE (sysfs names) to the running instance, all or nothing:
// checked as a set with its present values (exit 2), then written.
void set_params(const Maps &m, const std::map<std::string, std::string> &knobs);
// Fix task `pid`'s priority (0: dynamic again); its shown state follows at
// once.
void fix_prio(const Maps &m, uint32_t pid, uint32_t prio);

} // namespace hpcctl::scx
