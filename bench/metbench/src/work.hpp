// SPDX-License-Identifier: GPL-2.0
// The work unit, the clock, and the per-rank iteration loop shared by the MPI
// and the shared-memory synchronisation layers.
#pragma once

#include "options.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace metbench
{

// One work unit: 64 passes of a 32x32 double matrix-vector product with a
// damped feedback (65536 multiply-adds) plus 64 xorshift64 steps. Fixed work,
// no memory traffic beyond L1, no syscalls.
void work_units(uint64_t units);

uint64_t now_ns(); // CLOCK_MONOTONIC (same clock as hpcmon's end_ns)

// Runs units for about @ms milliseconds; returns units per second (0 if ms == 0).
double calibrate_units_per_sec(uint64_t ms);

struct IterRec {
	uint64_t start_ns;
	uint64_t compute_end_ns;
	uint64_t wait_end_ns;
	uint64_t load;
};

struct RankResult {
	int32_t rank; // 0 = master, 1..N = worker P1..PN
	int32_t prio; // from /proc/self/sched_hpc, -1 unknown
	uint64_t load_total;
	uint64_t compute_ns;
	uint64_t wait_ns;
	uint64_t time_ns; // first iteration start to last wait end
};

class Sync
{
public:
	virtual ~Sync() = default;
	virtual void wait() = 0; // the synchronisation point of an iteration
};

// /proc/self/sched_hpc "prio:" if the task is SCHED_HPC, else -1.
int read_hpc_prio();

// Checks that every --pin CPU is one this process may run on; error message or "".
std::string check_pins(const Options &opt);

// Pins the calling process to @cpu; returns an error message or "".
std::string pin_self(int cpu);

// --hold: block SIGUSR1 (before the workers start), then wait for it before
// the start barrier (at most @timeout_s seconds; an error message or "").
void hold_arm();
std::string hold_start(uint64_t timeout_s);

// The iteration loop of one rank (0 = master: no load). Fills @trace
// (opt.iterations entries) and @res.
void run_rank(const Options &opt, int rank, Sync &sync, IterRec *trace, RankResult &res);

struct RunInfo {
	const char *sync;
	double units_per_sec;
	uint64_t total_ns; // master: first iteration start to last wait end
};

// The paper's table (or JSON with opt.json) to @out; results[r] for rank r.
void print_report(const Options &opt, const RunInfo &info, const std::vector<RankResult> &results,
		  FILE *out);

// Writes the trace (ranks x iterations, rank-major). Returns an error message or "".
std::string write_trace(const std::string &path, size_t ranks, uint64_t iterations,
			const IterRec *trace);

} // namespace metbench
