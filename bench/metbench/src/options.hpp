// SPDX-License-Identifier: GPL-2.0
// MetBench / MetBenchVar command line: parsing and validation (no MPI here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace metbench
{

enum class WaitMode { Spin, Block };
enum class SyncMode { Mpi, Shm };

struct Options {
	std::vector<uint64_t> loads{250, 1000, 250, 1000}; // work units per worker
	uint64_t iterations = 10;
	uint64_t swap_every = 0; // MetBenchVar: swap P1,P3 <-> P2,P4 every k iterations
	WaitMode wait = WaitMode::Spin;
	SyncMode sync = SyncMode::Mpi;
	bool json = false;
	std::string trace;    // empty: no trace
	std::vector<int> pin; // one CPU per worker, empty: no pinning
	uint64_t calibrate_ms = 100;
	uint64_t hold_s = 0; // --hold: wait up to this long for SIGUSR1 to start (0: no)
	bool help = false;
};

constexpr uint64_t kMaxLoad = 1000000000ULL;
constexpr uint64_t kMaxIterations = 10000000ULL;
constexpr size_t kMaxWorkers = 4096;

// Parses a comma (or blank/newline) separated list of load units; '#' starts a
// comment to the end of the line. Returns an error message or nothing.
std::optional<std::string> parse_loads(const std::string &text, std::vector<uint64_t> &out);

// Parses argv[1..]. @shm_only: the build has no MPI (metbench-shm). Returns an
// error message (what is wrong and with which argument) or nothing.
std::optional<std::string> parse_options(int argc, const char *const *argv, Options &opt,
					 bool shm_only);

// The load of worker @w (0-based) in iteration @i (0-based), MetBenchVar swap applied.
uint64_t load_of(const Options &opt, size_t w, uint64_t i);

std::string usage(const char *prog, bool shm_only);

} // namespace metbench
