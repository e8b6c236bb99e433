// A rank's step timeline, shared by the BT-MZ and SIESTA proxies: per step
// when its computation began, when it ended (its wait began) and when the
// wait ended, with the totals; gathered on rank 0 for the trace file.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpcbench
{

struct StepTrace {
	std::vector<uint64_t> stamps; // 3 per step
	uint64_t comp_ns = 0, wait_ns = 0;

	explicit StepTrace(size_t steps) : stamps(3 * steps) {}

	void record(size_t step, uint64_t begin, uint64_t computed, uint64_t waited)
	{
		stamps[3 * step] = begin;
		stamps[3 * step + 1] = computed;
		stamps[3 * step + 2] = waited;
		comp_ns += computed - begin;
		wait_ns += waited - computed;
	}

	// Every rank's stamps on rank 0, rank after rank (empty elsewhere).
	std::vector<uint64_t> gather(int rank, int size) const
	{
		std::vector<uint64_t> all(rank == 0 ? stamps.size() * size : 0);
		MPI_Gather(stamps.data(), static_cast<int>(stamps.size()), MPI_UINT64_T, all.data(),
			   static_cast<int>(stamps.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
		return all;
	}
};

} // namespace hpcbench
