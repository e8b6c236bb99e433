// Small Linux helpers of hpcd: CPU lists, affinity, topology, clocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpcd
{

// "0-3,5" <-> {0,1,2,3,5}. nullopt on malformed input.
std::optional<std::vector<int>> parse_cpulist(std::string_view s);
std::string format_cpulist(const std::vector<int> &cpus);

// The CPUs this process may run on.
std::vector<int> allowed_cpus();
// Order `cpus` so that real SMT siblings (sysfs thread_siblings_list under
// `sysfs`) are adjacent and form the pairs 2k/2k+1; without SMT the order is
// kept (pairs of consecutive CPUs emulate a core).
std::vector<int> smt_order(const std::vector<int> &cpus,
			   const std::string &sysfs = "/sys/devices/system/cpu");

std::vector<int> get_affinity(int pid);
// Pin every thread of process `pid`. False if the process is gone.
bool set_affinity(int pid, const std::vector<int> &cpus);

uint64_t mono_ns();
// The process's command name (/proc/<pid>/comm), "" if gone.
std::string proc_comm(int pid);
bool proc_alive(int pid);
// True if `ancestor` is a (grand)parent of `pid`.
bool is_descendant(int pid, int ancestor);

} // namespace hpcd
