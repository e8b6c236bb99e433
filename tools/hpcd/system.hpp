// Small Linux helpers of hpcd: CPU lists, affinity, topology (hwloc), clocks.
#pragma once

#include "procstat.hpp"

#include <sys/un.h>

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

// Where a CPU (hwloc PU, by its OS index) sits: its core (hwloc logical
// index, unique on the machine), package and NUMA node (OS indexes; -1 when
// hwloc does not know).
struct CpuPlace {
	int cpu = -1, core = -1, package = -1, numa = -1;
};

// The machine's topology as hwloc discovers it: SMT siblings, cores,
// packages, NUMA nodes.
struct Topology {
	std::vector<CpuPlace> cpus; // in hwloc's logical order
	int cores = 0, packages = 0;
	std::vector<int> numa_nodes; // OS indexes
	const CpuPlace *find(int cpu) const;
	// The SMT siblings of `cpu` (itself included, in logical order).
	std::vector<int> siblings(int cpu) const;
	// Some core has more than one hardware thread.
	bool smt() const;
};

// Discover the topology with hwloc; with `synthetic`, build hwloc's
// synthetic topology of that description instead (e.g. "pack:2 core:2
// pu:2"; tests). nullopt and `err` if hwloc fails.
std::optional<Topology> load_topology(std::string &err, const std::string &synthetic = "");

// Order `cpus` so that real SMT siblings are adjacent and form the pairs
// 2k/2k+1; without SMT the order is kept (pairs of consecutive CPUs emulate
// a core). CPUs the topology does not know keep their place.
std::vector<int> smt_order(const std::vector<int> &cpus, const Topology &topo);
// Every pair cpus[2k], cpus[2k+1] is two hardware threads of one core.
bool pairs_are_threads(const std::vector<int> &cpus, const Topology &topo);

std::vector<int> get_affinity(int pid);
// Pin every thread of process `pid`. False if the process is gone.
bool set_affinity(int pid, const std::vector<int> &cpus);

uint64_t mono_ns();
// The process's command name (/proc/<pid>/comm), "" if gone.
// $name if set and not empty, else def.
std::string env_or(const char *name, const char *def);
std::string proc_comm(int pid);
// /proc/<pid>/stat parsed (pid 0: hpcd itself), nullopt if gone.
std::optional<ProcStat> proc_stat(int pid);
bool proc_alive(int pid);
// False while exec is still setting up the process's environment (or it is
// gone): its /proc/<pid>/environ is empty then, whatever it will hold.
bool exec_done(int pid);
// A pidfd for `pid` (close-on-exec), readable once the process has exited;
// -1 (errno) where the kernel has none (before 5.3) or the pid is gone.
int open_pidfd(int pid);
// True if `ancestor` is a (grand)parent of `pid`.
bool is_descendant(int pid, int ancestor);

// MPI launchers: a command of this name (its base name) starts the ranks of
// a job (mpirun, mpiexec, srun, and their implementation-specific names).
bool is_launcher_name(std::string_view cmd);
// The launchers' own helper processes (orted, hydra_pmi_proxy, ...) and the
// launchers themselves, by command name (/proc/<pid>/comm, at most 15
// characters): never ranks.
bool is_launcher_helper(std::string_view comm);
// The MPI rank a launcher gave a process, from its environment
// (/proc/<pid>/environ: NUL-separated VAR=VALUE): OMPI_COMM_WORLD_RANK,
// PMIX_RANK, PMI_RANK, SLURM_PROCID, in that order; nullopt if none is a
// whole number.
std::optional<int> rank_from_environ(std::string_view environ);

// A Unix socket address for @path; throws if the path is too long.
sockaddr_un unix_address(const std::string &path);
// A non-blocking socket of @type (SOCK_STREAM, SOCK_SEQPACKET) listening on
// @path (an old socket file there replaced) with @mode and @backlog; throws.
int listen_unix(int type, const std::string &path, unsigned mode, int backlog);

} // namespace hpcd
