// hpcd's event source from the kernel: the BPF program sched_events.bpf.c on
// the scheduler's tracepoints reports when each followed process starts and
// stops computing (every thread of it), with the kernel's own timestamps.
// hpcd reads the events once per period; /proc sampling (procstat.hpp) is
// the fallback where the program cannot be loaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hpcd
{

struct SchedEvent {
	uint64_t at = 0;   // ns, CLOCK_MONOTONIC
	int pid = 0;       // the process
	int tid = 0;       // the thread that changed it
	bool wake = false; // else: the process's last runnable thread blocked
};

class BpfSource
{
public:
	// Load and attach the program. `btf`: the running kernel's BTF (""
	// the kernel's own, /sys/kernel/btf/vmlinux). Throws
	// std::runtime_error saying why it cannot: hpcd built without it, no
	// BTF, no permission, a PID namespace.
	explicit BpfSource(const std::string &btf = "");
	~BpfSource();
	BpfSource(const BpfSource &) = delete;
	BpfSource &operator=(const BpfSource &) = delete;

	// Follow process `pid` (every thread) from now on; throws when it cannot
	// (the map is full).
	void add(int pid);
	void remove(int pid);
	// The events sent since the last call, in time order.
	std::vector<SchedEvent> read();
	uint64_t events() const { return events_; }
	// Events the ring buffer had no room for: a state may be stale until
	// the task's next event.
	uint64_t lost() const;
	// Thread marks not made at the first try (no memory, or nested in
	// another task storage access): made at the thread's next event.
	uint64_t unmarked() const;
	// Runs the tracepoints did not show the start of (the program sends
	// the wake-up from the thread's run time when it blocks).
	uint64_t unseen() const;

private:
	struct Impl;
	std::unique_ptr<Impl> p_;
	uint64_t events_ = 0;
};

} // namespace hpcd
