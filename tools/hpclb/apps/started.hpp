// Shared by the libhpclb demo applications.
#pragma once

#include <cstdio>
#include <ctime>

namespace hpclb_apps
{

// Print when the timed part starts (epoch seconds), so that a bench starts
// its interference relative to it, not to the launch.
inline void print_started()
{
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	std::printf("started at %.3f\n", static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec);
	std::fflush(stdout);
}

} // namespace hpclb_apps
