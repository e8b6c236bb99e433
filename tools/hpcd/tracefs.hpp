// The kernel's sched_hpc_iteration tracepoint, read through a tracefs
// instance of hpcctl's own (its own buffer, trace_clock mono): the global
// trace buffer and whatever else traces on the machine are left alone.
#pragma once

#include <string>
#include <vector>

namespace hpcd
{

// Where tracefs is: `want` if given, else /sys/kernel/tracing, else
// /sys/kernel/debug/tracing (the first that has an `instances` directory;
// `want` itself when none has).
std::string find_tracefs(const std::string &want = "");

class TracefsSession
{
public:
	TracefsSession() = default;
	TracefsSession(const TracefsSession &) = delete;
	TracefsSession &operator=(const TracefsSession &) = delete;
	~TracefsSession() { close(); }

	// Create instance `name` under `root`/instances, set its clock to mono
	// and enable events/sched/sched_hpc_iteration in it (and
	// sched_hpc_judge, when the kernel has it). Throws
	// std::runtime_error saying what is missing; leaves nothing behind then.
	void open(const std::string &root, const std::string &name);
	// The complete lines that arrived, waiting up to `timeout_ms` for the
	// first. Throws std::runtime_error if the pipe fails.
	std::vector<std::string> read(int timeout_ms);
	// Disable the event and remove the instance (idempotent).
	void close();

private:
	std::string dir_, partial_;
	int fd_ = -1;
};

} // namespace hpcd
