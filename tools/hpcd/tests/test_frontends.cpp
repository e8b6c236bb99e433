// One sequence of events through each front end's adapter, the same
// decisions out. The kernel class and scx_hpc hook the policy core's events
// directly: at a sleep hpc_task_sleep(), at a wake-up hpc_on_wakeup() and at
// a tick hpc_on_tick() of the running task, each with a snapshot of the task
// on the sibling context and the task's fixed priority (CoreHooks, their
// hooks built against the same core). hpcd's Engine gets the same events
// through sleep(), wakeup() and tick().
#include "engine.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

using namespace hpcd;

using hpcd_test::ms;

namespace
{

enum class Kind { Sleep, Wake, Tick };

struct Event {
	uint64_t at;
	Kind kind;
	int task; // 0 or 1 (Tick: every task)
};

// Two tasks on the two contexts of one core, as the kernel and scx_hpc
// drive the core.
struct CoreHooks {
	hpc_params p{};
	std::array<hpc_task, 2> t{};
	std::array<uint32_t, 2> fixed{};

	CoreHooks(const hpc_params &params, std::array<uint32_t, 2> fix) : p(params), fixed(fix)
	{
		for (auto &x : t)
			hpc_task_init(&x, 0, &p);
		for (int i = 0; i < 2; i++)
			hpc_task_next_prio(&t[i], &p, fixed[i]);
	}
	void on(const Event &e)
	{
		switch (e.kind) {
		case Kind::Sleep: hpc_task_sleep(&t[e.task], e.at); break;
		case Kind::Wake:
			hpc_on_wakeup(&t[e.task], e.at, &p, &t[e.task ^ 1], fixed[e.task]);
			break;
		case Kind::Tick:
			for (int i = 0; i < 2; i++)
				if (t[i].state == HPC_TASK_RUNNABLE)
					hpc_on_tick(&t[i], e.at, &p, &t[i ^ 1], fixed[i]);
			break;
		}
	}
};

// Task i computes run[i] then waits wait[i], `iters` times; a tick every
// 4 ms throughout, as the scheduler's.
std::vector<Event> iterations(std::array<uint64_t, 2> run, std::array<uint64_t, 2> wait, int iters)
{
	std::vector<Event> ev;
	uint64_t end = 0;
	for (int i = 0; i < 2; i++) {
		uint64_t now = 0;
		for (int k = 0; k < iters; k++) {
			now += run[i];
			if (!wait[i])
				continue;
			ev.push_back({now, Kind::Sleep, i});
			now += wait[i];
			ev.push_back({now, Kind::Wake, i});
		}
		end = std::max(end, now);
	}
	for (uint64_t at = 4 * ms; at <= end; at += 4 * ms)
		ev.push_back({at, Kind::Tick, 0});
	std::stable_sort(ev.begin(), ev.end(),
			 [](const Event &a, const Event &b) { return a.at < b.at; });
	return ev;
}

// Feeds `ev` to both; after every event the decisions agree.
void same_decisions(const std::vector<Event> &ev, const hpc_params &p,
		    std::array<uint32_t, 2> fixed, int *changes)
{
	CoreHooks k(p, fixed);
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.s.params = p;
	e.cpus = {0, 1};
	for (int i = 0; i < 2; i++) {
		e.add(10 + i, "t", "d", -1, 0).static_prio = fixed[i];
		hpc_task_next_prio(&e.find(10 + i)->t, &p, fixed[i]);
	}
	ASSERT_EQ(Engine::sibling_ctx(e.find(10)->ctx), e.find(11)->ctx);
	uint32_t last = k.t[0].prio * 10 + k.t[1].prio;
	for (const Event &x : ev) {
		k.on(x);
		switch (x.kind) {
		case Kind::Sleep: e.sleep(10 + x.task, x.at); break;
		case Kind::Wake: e.wakeup(10 + x.task, x.at); break;
		case Kind::Tick: e.tick(x.at); break;
		}
		for (int i = 0; i < 2; i++) {
			const hpc_task &h = e.find(10 + i)->t;
			ASSERT_EQ(h.prio, k.t[i].prio)
				<< "task " << i << " at " << x.at / ms << " ms";
			ASSERT_EQ(h.nr_iter, k.t[i].nr_iter) << "task " << i << " at " << x.at;
			ASSERT_EQ(h.nr_judged, k.t[i].nr_judged) << "task " << i << " at " << x.at;
			ASSERT_EQ(h.heur_util, k.t[i].heur_util) << "task " << i << " at " << x.at;
		}
		const uint32_t now = k.t[0].prio * 10 + k.t[1].prio;
		*changes += now != last;
		last = now;
	}
}

hpc_params defaults(uint32_t heuristic)
{
	hpc_params p;
	hpc_params_default(&p);
	p.heuristic = heuristic;
	return p;
}

} // namespace

TEST(FrontEnds, SameDecisionsOnMetBench)
{
	// MetBench's pair: the heavy task raised, the light one kept.
	for (uint32_t h = 0; h < HPC_HEUR_NR; h++) {
		int changes = 0;
		same_decisions(iterations({900 * ms, 250 * ms}, {100 * ms, 750 * ms}, 8),
			       defaults(h), {0, 0}, &changes);
		EXPECT_GT(changes, 0) << hpc_heuristic_names[h];
	}
}

TEST(FrontEnds, SameDecisionsOnTheCriticalPath)
{
	// The heavy task never waits: judged at the ticks after its
	// sibling's closes.
	for (uint32_t h = 0; h < HPC_HEUR_NR; h++) {
		int changes = 0;
		same_decisions(iterations({1000 * ms, 250 * ms}, {0, 750 * ms}, 6), defaults(h),
			       {0, 0}, &changes);
		EXPECT_GT(changes, 0) << hpc_heuristic_names[h];
	}
}

TEST(FrontEnds, SameDecisionsWithAFixedPriority)
{
	// The light task fixed at 6: kept whatever the core decides, and
	// the heavy one judged against it.
	int changes = 0;
	same_decisions(iterations({900 * ms, 250 * ms}, {100 * ms, 750 * ms}, 8),
		       defaults(HPC_HEUR_UNIFORM), {0, 6}, &changes);
	changes = 0;
	same_decisions(iterations({1000 * ms, 250 * ms}, {0, 750 * ms}, 6),
		       defaults(HPC_HEUR_ADAPTIVE), {5, 0}, &changes);
}

TEST(FrontEnds, SameDecisionsOnABalancedPair)
{
	int changes = 0;
	same_decisions(iterations({500 * ms, 500 * ms}, {100 * ms, 100 * ms}, 10),
		       defaults(HPC_HEUR_UNIFORM), {0, 0}, &changes);
	EXPECT_EQ(changes, 0);
}
