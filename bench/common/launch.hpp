// Small helpers shared by the MPI benchmark programs (MetBench, the BT-MZ and
// SIESTA proxies).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace hpcbench
{

// Whether this process is rank 0 as the launcher tells it, before MPI_Init
// (Open MPI, MPICH/PMI, PMIx); a process started without a launcher is.
inline bool launcher_rank_is_zero()
{
	for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
		const char *s = std::getenv(v);
		if (s)
			return std::atoi(s) == 0;
	}
	return true;
}

// CLOCK_MONOTONIC in nanoseconds.
inline uint64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

} // namespace hpcbench
