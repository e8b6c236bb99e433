// scx_hpc's maps as user space sees them, shared by the loader (scx_hpc.cpp:
// the instance it runs) and hpcctl's scx backend (tools/hpcd/scx_maps.cpp:
// the running instance): the parameters from KEY=VALUE knobs, checked as the
// policy core checks them, and the statistics and tasks read from the maps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "hpc_smt.h"
#include "scx_hpc.h"
}

namespace scxhpc
{

// Priorities range over the SMT emulation's (1..6).
inline constexpr hpc_prio_range kPrioRange = {HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX};

// The defaults: the policy core's, its time slice and emulation period, RR
// queues, the SMT emulation on.
scx_hpc_params default_params();

// Apply KEY -> VALUE (the sysfs names: the core's knobs, timeslice_us,
// emul_period_us, queue=rr|fifo, backend=x86-smt-emul|none) to `sp`
// together, whatever their order; with `whole`, the result is checked as a
// set (hpc_params_check() within kPrioRange). On a malformed value or an
// invalid set: false, `sp` unchanged, and why in `err` ("invalid value: ...",
// "invalid parameters: ...").
bool apply_knobs(scx_hpc_params &sp, const std::map<std::string, std::string> &knobs, bool whole,
		 std::string &err);

// What the maps hold.
struct Stats {
	scx_hpc_params params{};
	std::vector<scx_hpc_cpu> cpus;
	scx_hpc_cpu total{};                // the counters summed over the CPUs
	uint64_t nr_tasks = 0, nr_live = 0; // task map entries, those not exited
};

// The parameters, the first `ncpus` CPUs and the task count, from the maps
// params_fd, cpus_fd and tasks_fd.
Stats read_stats(int params_fd, int cpus_fd, int tasks_fd, unsigned ncpus);

// Every entry of the task map, by pid.
std::vector<scx_hpc_task_info> read_tasks(int tasks_fd);

} // namespace scxhpc
