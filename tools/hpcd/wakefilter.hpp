// Exact sleep and wake-up events of a task (the BPF source, bpfsource.hpp)
// turned into the policy core's events. A run burst of at most min_burst_ns
// between two sleeps (a polling wait's back-off, a helper thread's tick)
// does not split the wait: ProcTracker's rule for samples, applied to exact
// times. So a wake-up is held until the task has run min_burst_ns without
// sleeping again (flush), or until a sleep shows the burst was longer.
#pragma once

#include "procstat.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace hpcd
{

class WakeFilter
{
public:
	// `runnable`: the task's state when the source starts to follow it.
	WakeFilter(uint64_t min_burst_ns, bool runnable)
	    : min_burst_(min_burst_ns), asleep_(!runnable)
	{
	}
	// One event of the source (in time order); appends what it implies, 0
	// to 2 events, to `out`. A sleep while asleep or a wake-up while awake
	// repeats the state and implies nothing.
	void push(ProcEvent::Kind kind, uint64_t at, std::vector<ProcEvent> &out);
	// A wake-up held for more than min_burst_ns at `now` is one.
	void flush(uint64_t now, std::vector<ProcEvent> &out);
	// Computing (a held wake-up counts: the task is running).
	bool runnable() const { return !asleep_; }

private:
	uint64_t min_burst_;
	bool asleep_;
	std::optional<uint64_t> held_; // a wake-up not yet reported
};

} // namespace hpcd
