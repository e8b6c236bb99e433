// SPDX-License-Identifier: GPL-2.0
// The synchronisation layer without MPI: forked workers, a barrier in shared memory.
#pragma once

#include "options.hpp"

namespace metbench
{

// Parses the command line; returns -1 to go on, else the exit status (help: 0,
// error: 2, message on stderr when @verbose).
int handle_args(int argc, const char *const *argv, Options &opt, bool shm_only, bool verbose);

// Runs the whole benchmark with --sync shm; returns the exit status.
int run_shm(const Options &opt);

} // namespace metbench
