// SPDX-License-Identifier: GPL-2.0
// metbench-shm: MetBench without MPI (forked workers, shared-memory barrier).
#include "shm.hpp"

int main(int argc, char **argv)
{
	metbench::Options opt;
	int rc = metbench::handle_args(argc, argv, opt, true, true);
	if (rc >= 0)
		return rc;
	return metbench::run_shm(opt);
}
