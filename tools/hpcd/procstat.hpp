// What hpcd reads of a task in /proc when it has no monitor: the scheduler
// state (/proc/<pid>/stat) and the run time (/proc/<pid>/schedstat), sampled
// at a fixed period, turned into the policy core's sleep/wake-up events.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace hpcd
{

struct ProcStat {
	char state = '?'; // R, S, D, T, Z, ...
	int ppid = 0;
	int processor = -1;            // CPU it last ran on
	uint64_t utime = 0, stime = 0; // CPU time in user and kernel mode (clock ticks)
	// Where the environment ends in the process's memory: 0 until exec has
	// set it up (comm already names the new program before), or not
	// readable (another user's process without root).
	uint64_t env_end = 0;
};

// Parse the text of /proc/<pid>/stat (the command name may hold blanks and
// parentheses: the state follows the last ')').
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// Parse /proc/<pid>/schedstat: "run_ns wait_ns timeslices"; returns run_ns.
std::optional<uint64_t> parse_schedstat(std::string_view text);

// Tracks one task from periodic samples. The state says whether the task was
// runnable at the sample (R: running, waiting for a CPU or held back by a
// bandwidth limit, i.e. computing); any other state is a sleep. The run-time
// delta since the previous sample places a boundary inside the interval:
//  - runnable -> sleeping: the sleep began after the task ran dRun of it;
//  - sleeping -> runnable: it woke dRun before the sample;
//  - sleeping -> sleeping with dRun > 0: a burst of dRun inside the interval
//    (centred: the wake-up and the sleep are both reported), unless dRun is
//    at most `min_burst_ns`: a wait that polls with sleeps (MPI_Test plus
//    nanosleep back-off) stays one wait;
//  - runnable -> runnable: a sleep inside the interval cannot be seen.
struct ProcEvent {
	enum Kind { Sleep, Wakeup } kind;
	uint64_t at; // ns, same clock as the samples
};

class ProcTracker
{
public:
	explicit ProcTracker(uint64_t min_burst_ns = 0) : min_burst_(min_burst_ns) {}
	// Returns the events the sample implies, in time order.
	std::vector<ProcEvent> sample(uint64_t now, char state, uint64_t run_ns);
	bool runnable() const { return runnable_; }
	bool started() const { return started_; }

private:
	bool started_ = false, runnable_ = true;
	uint64_t last_t_ = 0, last_run_ = 0, min_burst_ = 0;
};

} // namespace hpcd
