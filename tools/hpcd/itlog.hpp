// What hpcd keeps for `hpcctl trace`: every closed iteration of a managed
// task and every change of a task's applied priority outside one, in a
// bounded ring that clients read by sequence number (control requests
// `iterations` and `watch`).
#pragma once

#include "engine.hpp"

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcd
{

struct IterEvent {
	enum Kind { Iteration, Priority };
	uint64_t seq = 0;
	Kind kind = Iteration;
	int pid = 0, rank = -1, ctx = -1, cpu = -1;
	const char *source = "proc"; // task_source(): "monitor", "bpf" or "proc"
	uint64_t at_ns = 0;     // end of the iteration, or time of the change (CLOCK_MONOTONIC)
	uint64_t iteration = 0; // closed iterations of the task so far
	uint64_t missed = 0;    // iterations that closed unseen before this one
	uint64_t run_ns = 0, wait_ns = 0;
	uint32_t util = 0, heur_util = 0; // 0.01 %
	uint32_t old_prio = 0, prio = 0;  // applied priority before and after
	uint32_t weight = 0;              // cpu.weight units (weight mode)
	// Boundaries from the monitor.
	bool monitored() const { return std::string_view(source) == "monitor"; }
};

// {"event":"iteration"|"priority","seq":..,"pid":..,...}
nlohmann::json event_json(const IterEvent &ev);

class IterationLog
{
public:
	explicit IterationLog(size_t capacity = 16384) : cap_(capacity ? capacity : 1) {}

	// Compare every task of `e` with what the last scan saw: an iteration
	// that closed since (the core's nr_iter grew) becomes an Iteration
	// event with the core's numbers for it; a change of the applied
	// priority without one (a sibling's judgement, a knob, hpcctl prio)
	// a Priority event stamped `now`. A task seen for the first time is
	// compared with a task of no iteration at its applied priority (its
	// first iterations may close before the first scan). Returns the new
	// events.
	std::vector<IterEvent> scan(Engine &e, uint64_t now);
	// The same for these tasks only (null: none): a task whose iteration
	// closed and its sibling, which its judgement may have moved.
	std::vector<IterEvent> scan(Engine &e, uint64_t now,
				    std::initializer_list<const Task *> only);
	// A task left hpcd.
	void forget(int pid) { seen_.erase(pid); }
	// The task's core state started over (the monitor took over from
	// /proc sampling): its iterations count from none again.
	void restart(int pid)
	{
		if (auto it = seen_.find(pid); it != seen_.end())
			it->second.iter = 0;
	}

	// Events with seq >= `since`, at most `max`; `dropped` is how many of
	// those the ring no longer holds.
	std::vector<IterEvent> since(uint64_t since, size_t max, uint64_t &dropped) const;
	// The sequence number the next event will get.
	uint64_t next() const { return next_; }

private:
	struct Seen {
		uint64_t iter = 0;
		uint32_t prio = 0;
	};
	void push(IterEvent ev, std::vector<IterEvent> &out);
	void scan_one(Engine &e, const Task &t, uint64_t now, std::vector<IterEvent> &out);
	std::map<int, Seen> seen_;
	std::deque<IterEvent> ring_;
	size_t cap_;
	uint64_t next_ = 1;
};

} // namespace hpcd
