// hpcd's policy engine: the managed tasks, their order and pairing on
// emulated SMT cores (hpc_ctx_sibling()), the mode's names. Its members are
// split like the Daemon's (hpcd.hpp): the events to the policy core in
// hooks.cpp, the plan and placement in mechanism.cpp; none does I/O.
#include "engine.hpp"

#include <algorithm>

namespace hpcd
{

const char *mode_name(Mode m)
{
	return m == Mode::SmtEmul ? "smt-emul" : "weight";
}

const char *waits_name(Waits w)
{
	switch (w) {
	case Waits::Poll: return "poll";
	case Waits::Model: return "model";
	default: return "sleep";
	}
}

std::optional<Waits> parse_waits(const std::string &name)
{
	for (Waits w : {Waits::Poll, Waits::Model, Waits::Sleep})
		if (name == waits_name(w))
			return w;
	return std::nullopt;
}

std::optional<Mode> parse_mode(const std::string &name)
{
	if (name == "weight")
		return Mode::Weight;
	if (name == "smt-emul" || name == "quota")
		return Mode::SmtEmul;
	return std::nullopt;
}

Task &Engine::add(int pid, const std::string &name, const std::string &job, int rank, uint64_t now)
{
	Task &t = tasks[pid];
	t.pid = pid;
	t.name = name;
	t.job = job;
	t.rank = rank;
	// Ranks of a job are ordered by rank, after what was there when the
	// job's first rank arrived; other tasks in order of arrival.
	if (rank >= 0) {
		auto [it, fresh] = job_seq_.try_emplace(job, seq_);
		if (fresh)
			seq_++;
		t.seq = it->second;
	} else {
		t.seq = seq_++;
	}
	hpc_task_init(&t.t, now, &s.params);
	// A rank adopted on the monitor's hello reports its own iterations.
	t.monitored = rank >= 0;
	t.last_record_ns = now;
	place();
	return t;
}

void Engine::remove(int pid)
{
	tasks.erase(pid);
	// Pairs change: held records go in alone.
	for (auto &[p, t] : tasks)
		if (t.pending)
			apply_records(&t, nullptr);
	place();
}

Task *Engine::find(int pid)
{
	auto it = tasks.find(pid);
	return it == tasks.end() ? nullptr : &it->second;
}

std::vector<Task *> Engine::active()
{
	std::vector<Task *> a;
	for (auto &[pid, t] : tasks)
		if (!t.launcher)
			a.push_back(&t);
	std::sort(a.begin(), a.end(), [](const Task *x, const Task *y) {
		if (x->seq != y->seq)
			return x->seq < y->seq;
		return x->rank < y->rank;
	});
	return a;
}

void Engine::start_monitored(Task &t, uint64_t since)
{
	t.monitored = true;
	t.last_record_ns = since;
	hpc_task_init(&t.t, since, &s.params);
	// What /proc showed was MPI's start-up, and a polling wait looks busy
	// there: not a load to weigh the rank by.
	t.win.clear();
	t.reported = false;
	t.work_ns = 0;
	t.work_records = 0;
}

// The context sharing an emulated core with `ctx` (the core's pairing rule,
// hpc_ctx_sibling(): contexts are never hardware threads here); -1: none.
int Engine::sibling_ctx(int ctx)
{
	return ctx < 0 ? -1 : hpc_ctx_sibling(ctx, -1, true);
}

Task *Engine::sibling(const Task &t)
{
	const int ctx = sibling_ctx(t.ctx);
	if (ctx < 0)
		return nullptr;
	for (auto &[pid, o] : tasks)
		if (o.ctx == ctx)
			return &o;
	return nullptr;
}

// Each context's task: the first in pid order, as sibling() finds it. The
// contexts are 0..n-1 (place()): a vector, cheap to build every period.
std::vector<Task *> Engine::by_ctx()
{
	std::vector<Task *> v(tasks.size(), nullptr);
	for (auto &[pid, t] : tasks)
		if (t.ctx >= 0 && static_cast<size_t>(t.ctx) < v.size() && !v[t.ctx])
			v[t.ctx] = &t;
	return v;
}

Task *Engine::at_ctx(const std::vector<Task *> &v, int ctx)
{
	return ctx >= 0 && static_cast<size_t>(ctx) < v.size() ? v[ctx] : nullptr;
}

void Engine::params_changed()
{
	for (auto &[pid, t] : tasks)
		hpc_task_next_prio(&t.t, &s.params, t.static_prio);
}

} // namespace hpcd
