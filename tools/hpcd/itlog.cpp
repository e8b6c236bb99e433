#include "itlog.hpp"

#include <algorithm>

namespace hpcd
{

nlohmann::json event_json(const IterEvent &ev)
{
	nlohmann::json j{{"event", ev.kind == IterEvent::Iteration ? "iteration" : "priority"},
			 {"seq", ev.seq},
			 {"pid", ev.pid},
			 {"rank", ev.rank},
			 {"ctx", ev.ctx},
			 {"cpu", ev.cpu},
			 {"source", ev.source},
			 {"at_ns", ev.at_ns},
			 {"old_prio", ev.old_prio},
			 {"prio", ev.prio},
			 {"weight", ev.weight}};
	if (ev.kind == IterEvent::Iteration) {
		j["iteration"] = ev.iteration;
		j["run_ns"] = ev.run_ns;
		j["wait_ns"] = ev.wait_ns;
		j["util"] = ev.util;
		j["heur_util"] = ev.heur_util;
		if (ev.missed)
			j["missed"] = ev.missed;
	}
	return j;
}

void IterationLog::push(IterEvent ev, std::vector<IterEvent> &out)
{
	ev.seq = next_++;
	ring_.push_back(ev);
	while (ring_.size() > cap_)
		ring_.pop_front();
	out.push_back(ev);
}

std::vector<IterEvent> IterationLog::scan(Engine &e, uint64_t now)
{
	std::vector<IterEvent> out;
	for (auto &[pid, t] : e.tasks)
		scan_one(e, t, now, out);
	return out;
}

std::vector<IterEvent> IterationLog::scan(Engine &e, uint64_t now,
					  std::initializer_list<const Task *> only)
{
	std::vector<IterEvent> out;
	for (const Task *t : only)
		if (t)
			scan_one(e, *t, now, out);
	return out;
}

void IterationLog::scan_one(Engine &e, const Task &t, uint64_t now, std::vector<IterEvent> &out)
{
	const int pid = t.pid;
	const uint32_t prio = e.applied_prio(t);
	Seen &s = seen_.try_emplace(pid, Seen{0, prio}).first->second;
	if (t.t.nr_iter == s.iter && prio == s.prio)
		return;
	IterEvent ev;
	ev.pid = pid;
	ev.rank = t.rank;
	ev.ctx = t.ctx;
	ev.cpu = t.cpu;
	ev.source = task_source(t);
	ev.old_prio = s.prio;
	ev.prio = prio;
	ev.weight = t.weight;
	if (t.t.nr_iter > s.iter) {
		ev.kind = IterEvent::Iteration;
		// hpc_close() starts the next iteration where this one ended.
		ev.at_ns = t.t.iter_start;
		ev.iteration = t.t.nr_iter;
		ev.missed = t.t.nr_iter - s.iter - 1;
		ev.run_ns = t.t.last_run;
		ev.wait_ns = t.t.last_wait;
		ev.util = t.t.last_util;
		ev.heur_util = t.t.heur_util;
	} else {
		ev.kind = IterEvent::Priority;
		ev.at_ns = now;
		ev.iteration = t.t.nr_iter;
	}
	s = Seen{t.t.nr_iter, prio};
	push(ev, out);
}

std::vector<IterEvent> IterationLog::since(uint64_t since, size_t max, uint64_t &dropped) const
{
	std::vector<IterEvent> out;
	const uint64_t oldest = ring_.empty() ? next_ : ring_.front().seq;
	since = std::max<uint64_t>(since, 1);
	dropped = since < oldest ? oldest - since : 0;
	for (const auto &ev : ring_) {
		if (out.size() >= max)
			break;
		if (ev.seq >= since)
			out.push_back(ev);
	}
	return out;
}

} // namespace hpcd
