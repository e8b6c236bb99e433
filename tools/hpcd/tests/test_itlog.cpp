// hpcd's iteration log (what `hpcctl trace` reads) and its control requests.
#include "control.hpp"
#include "itlog.hpp"
#include "trace.hpp"

#include <sstream>

#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace hpcd;
using nlohmann::json;
namespace tr = hpcd::trace;

namespace
{
using hpcd_test::ms;
using hpcd_test::rec;

// Two monitored ranks on one emulated core: 10 computes 95 ms and waits
// 5 ms, 20 computes 25 ms and waits 75 ms, every 100 ms.
struct Pair {
	Engine e;
	IterationLog log;
	Pair()
	{
		e.cpus = {0, 1};
		e.add(10, "heavy", "j1", 1, 0);
		e.add(20, "light", "j1", 2, 0);
		EXPECT_TRUE(log.scan(e, 0).empty()); // first sight: remembered only
	}
	std::vector<IterEvent> barrier(uint64_t i)
	{
		const uint64_t end = (i + 1) * 100 * ms;
		std::vector<IterEvent> out;
		e.record(rec(20, 2, i, 25 * ms, 75 * ms, end), end);
		for (auto &ev : log.scan(e, end))
			out.push_back(ev);
		e.record(rec(10, 1, i, 95 * ms, 5 * ms, end + 1000), end + 1000);
		for (auto &ev : log.scan(e, end + 1000))
			out.push_back(ev);
		return out;
	}
};
} // namespace

TEST(IterationLog, OneEventPerClosedIterationWithTheCoresNumbers)
{
	Pair p;
	std::map<int, std::vector<IterEvent>> by;
	for (uint64_t i = 0; i < 4; i++)
		for (auto &ev : p.barrier(i))
			by[ev.pid].push_back(ev);
	ASSERT_EQ(by[10].size(), 4u);
	ASSERT_EQ(by[20].size(), 4u);
	for (size_t k = 0; k < 4; k++) {
		const IterEvent &h = by[10][k], &l = by[20][k];
		EXPECT_EQ(h.kind, IterEvent::Iteration);
		EXPECT_EQ(h.iteration, k + 1);
		EXPECT_EQ(h.missed, 0u);
		EXPECT_EQ(l.run_ns, 25 * ms) << k;
		EXPECT_EQ(l.wait_ns, 75 * ms) << k;
		EXPECT_EQ(l.at_ns, (k + 1) * 100 * ms) << k;
		EXPECT_EQ(l.util, 2500u) << k;
		EXPECT_EQ(h.rank, 1);
		EXPECT_TRUE(h.monitored());
		EXPECT_EQ(h.ctx, 0);
		EXPECT_EQ(l.ctx, 1);
		// The priorities chain: each event starts where the last ended.
		if (k) {
			EXPECT_EQ(h.old_prio, by[10][k - 1].prio);
			EXPECT_EQ(l.old_prio, by[20][k - 1].prio);
		}
	}
	// The heavy rank rose; the events say so and agree with the engine.
	EXPECT_EQ(by[10].front().old_prio, 4u);
	EXPECT_GT(by[10].back().prio, 4u);
	EXPECT_EQ(by[10].back().prio, p.e.applied_prio(*p.e.find(10)));
	EXPECT_EQ(by[20].back().prio, p.e.applied_prio(*p.e.find(20)));
	// Sequence numbers are consecutive from 1.
	uint64_t dropped = 9;
	auto all = p.log.since(1, 100, dropped);
	EXPECT_EQ(dropped, 0u);
	ASSERT_EQ(all.size(), 8u);
	for (size_t k = 0; k < all.size(); k++)
		EXPECT_EQ(all[k].seq, k + 1);
	EXPECT_EQ(p.log.next(), 9u);
}

TEST(IterationLog, PriorityChangeWithoutAnIteration)
{
	Pair p;
	for (uint64_t i = 0; i < 4; i++)
		p.barrier(i);
	const uint32_t before = p.e.applied_prio(*p.e.find(10));
	ASSERT_NE(before, 4u);
	p.e.s.balance = false; // the baseline: every task at 4
	auto evs = p.log.scan(p.e, 12345);
	ASSERT_EQ(evs.size(), 1u) << "only the task whose applied priority changed";
	EXPECT_EQ(evs[0].kind, IterEvent::Priority);
	EXPECT_EQ(evs[0].pid, 10);
	EXPECT_EQ(evs[0].at_ns, 12345u);
	EXPECT_EQ(evs[0].old_prio, before);
	EXPECT_EQ(evs[0].prio, 4u);
	EXPECT_TRUE(p.log.scan(p.e, 12346).empty()) << "nothing changed since";
	EXPECT_EQ(event_json(evs[0])["event"], "priority");
	EXPECT_FALSE(event_json(evs[0]).contains("run_ns"));
}

TEST(IterationLog, IterationsClosedBetweenTwoLooksAreCounted)
{
	Engine e;
	IterationLog log;
	e.add(10, "a", "d", -1, 0);
	log.scan(e, 0);
	for (uint64_t i = 0; i < 3; i++) {
		e.sleep(10, i * 100 * ms + 60 * ms);
		e.wakeup(10, (i + 1) * 100 * ms);
	}
	auto evs = log.scan(e, 300 * ms);
	ASSERT_EQ(evs.size(), 1u);
	EXPECT_EQ(evs[0].iteration, 3u);
	EXPECT_EQ(evs[0].missed, 2u);
	EXPECT_EQ(evs[0].run_ns, 60 * ms);
	EXPECT_EQ(evs[0].wait_ns, 40 * ms);
	EXPECT_FALSE(evs[0].monitored());
	EXPECT_EQ(event_json(evs[0])["missed"], 2);
	// A forgotten task is new again: its iterations count from none.
	log.forget(10);
	e.sleep(10, 360 * ms);
	e.wakeup(10, 400 * ms);
	evs = log.scan(e, 400 * ms);
	ASSERT_EQ(evs.size(), 1u);
	EXPECT_EQ(evs[0].iteration, 4u);
	EXPECT_EQ(evs[0].missed, 3u);
}

namespace
{
// The events of one scan: one, the task's first iteration.
void expect_first_iteration(const std::vector<IterEvent> &evs)
{
	ASSERT_EQ(evs.size(), 1u);
	EXPECT_EQ(evs[0].kind, IterEvent::Iteration);
	EXPECT_EQ(evs[0].iteration, 1u);
	EXPECT_EQ(evs[0].missed, 0u);
	EXPECT_TRUE(evs[0].monitored());
}
} // namespace

// The monitor's hello and first record can both arrive before hpcd looks:
// that first iteration is an event, not the baseline of a new task.
TEST(IterationLog, AFirstIterationBeforeTheFirstLookIsAnEvent)
{
	Engine e;
	IterationLog log;
	e.cpus = {0, 1};
	e.add(10, "a", "j1", 0, 0);
	e.record(rec(10, 0, 0, 30 * ms, 70 * ms, 100 * ms), 100 * ms);
	auto evs = log.scan(e, 100 * ms);
	expect_first_iteration(evs);
	EXPECT_EQ(evs.at(0).run_ns, 30 * ms);
	EXPECT_TRUE(log.scan(e, 100 * ms).empty()) << "nothing changed since";
}

// /proc sampling counted iterations, then the monitor said hello and the
// core started over: the monitor's first iteration is iteration 1, not a
// priority change (its number is below what the log saw).
TEST(IterationLog, TheMonitorTakingOverCountsFromNone)
{
	Engine e;
	IterationLog log;
	e.add(10, "a", "d", -1, 0);
	for (uint64_t i = 0; i < 5; i++) {
		e.sleep(10, i * 100 * ms + 60 * ms);
		e.wakeup(10, (i + 1) * 100 * ms);
	}
	ASSERT_EQ(log.scan(e, 500 * ms).size(), 1u);
	Task *t = e.find(10);
	hpc_task_init(&t->t, 500 * ms, &e.s.params);
	t->monitored = true;
	log.restart(10);
	e.record(rec(10, 0, 0, 30 * ms, 70 * ms, 600 * ms), 600 * ms);
	expect_first_iteration(log.scan(e, 600 * ms));
}

TEST(IterationLog, RingKeepsTheNewestAndCountsTheDropped)
{
	Engine e;
	IterationLog log(3);
	e.add(10, "a", "d", -1, 0);
	log.scan(e, 0);
	for (uint64_t i = 0; i < 5; i++) {
		e.sleep(10, i * 100 * ms + 60 * ms);
		e.wakeup(10, (i + 1) * 100 * ms);
		ASSERT_EQ(log.scan(e, (i + 1) * 100 * ms).size(), 1u);
	}
	uint64_t dropped = 0;
	auto evs = log.since(1, 100, dropped);
	EXPECT_EQ(dropped, 2u);
	ASSERT_EQ(evs.size(), 3u);
	EXPECT_EQ(evs.front().seq, 3u);
	EXPECT_EQ(evs.back().seq, 5u);
	evs = log.since(4, 1, dropped);
	EXPECT_EQ(dropped, 0u);
	ASSERT_EQ(evs.size(), 1u);
	EXPECT_EQ(evs[0].seq, 4u);
	EXPECT_TRUE(log.since(log.next(), 100, dropped).empty());
}

TEST(IterationLog, ControlRequests)
{
	Pair p;
	p.barrier(0);
	ControlHooks h;
	h.events = [&](uint64_t since, size_t max) {
		uint64_t dropped = 0;
		json evs = json::array();
		for (auto &ev : p.log.since(since, max, dropped))
			evs.push_back(event_json(ev));
		return json{{"next", p.log.next()}, {"dropped", dropped}, {"events", evs}};
	};
	auto r = json::parse(handle_line(p.e, h, R"({"cmd":"iterations","since":1})"));
	ASSERT_TRUE(r["ok"]) << r.dump();
	ASSERT_EQ(r["events"].size(), 2u);
	// Both siblings' records of one barrier: both iterations, one scan.
	for (auto &ev : r["events"]) {
		EXPECT_EQ(ev["event"], "iteration");
		EXPECT_EQ(ev["run_ns"], ev["pid"] == 20 ? 25 * ms : 95 * ms + 1000);
	}
	EXPECT_NE(r["events"][0]["pid"], r["events"][1]["pid"]);
	r = json::parse(handle_line(p.e, h, R"({"cmd":"iterations","since":1,"max":1})"));
	EXPECT_EQ(r["events"].size(), 1u);
	for (auto bad :
	     {R"({"cmd":"iterations","since":-1})", R"({"cmd":"iterations","since":"x"})",
	      R"({"cmd":"iterations","max":0})", R"({"cmd":"watch","since":1.5})"}) {
		r = json::parse(handle_line(p.e, h, bad));
		EXPECT_FALSE(r["ok"]) << bad;
		EXPECT_EQ(r["kind"], "bad_request") << bad;
	}
	// Without a watch hook (no daemon behind): a clear failure.
	r = json::parse(handle_line(p.e, h, R"({"cmd":"watch"})"));
	EXPECT_FALSE(r["ok"]);
	EXPECT_EQ(r["kind"], "failed");
	// The watch reply comes first, then the backlog, one event per line.
	bool from_now = true;
	h.watch = [&](uint64_t, bool now, json &reply) {
		from_now = now;
		reply["next"] = 3;
		reply["dropped"] = 0;
		return std::string("{\"event\":\"iteration\",\"seq\":1}\n"
				   "{\"event\":\"iteration\",\"seq\":2}\n");
	};
	std::string out = handle_line(p.e, h, R"({"cmd":"watch","since":1})");
	EXPECT_FALSE(from_now);
	auto nl = out.find('\n');
	ASSERT_NE(nl, std::string::npos);
	EXPECT_EQ(json::parse(out.substr(0, nl))["watch"], true);
	EXPECT_EQ(out.substr(nl + 1),
		  "{\"event\":\"iteration\",\"seq\":1}\n{\"event\":\"iteration\",\"seq\":2}");
	handle_line(p.e, h, R"({"cmd":"watch"})");
	EXPECT_TRUE(from_now);
}

// What hpcctl trace writes of hpcd's events (hpcd_event in hpcctl.cpp), in
// the order hpcd sends them, read back as `hpcctl report` does.

TEST(IterationLog, PriorityBeforeAnEarlierIterationIsARecordReportReads)
{
	// The light rank reports every 100 ms; the heavy one computes through
	// three of them. The tick judges the heavy rank once it has been
	// silent for two of the light one's iterations: at 225 ms, and at
	// 325 ms, after the light one's third record, held 20 ms for the heavy
	// one's, closed its iteration alone (Adaptive raises it each time): a
	// priority change stamped 325 ms. The heavy rank's record then arrives:
	// its iteration ended at 310 ms, before that stamp; it is held for the
	// sibling's next record and applied 20 ms later.
	Engine e;
	IterationLog log;
	e.cpus = {0, 1};
	std::string err;
	ASSERT_EQ(apply_settings(e.s, {"heuristic=adaptive"}, err), SetErr::None) << err;
	e.add(10, "heavy", "j1", 1, 0);
	e.add(20, "light", "j1", 2, 0);
	log.scan(e, 0);
	std::vector<IterEvent> evs;
	auto take = [&](uint64_t now) {
		for (auto &ev : log.scan(e, now))
			evs.push_back(ev);
	};
	// hpcd's loop: records as they arrive, held ones applied after 20 ms,
	// then the period's tick.
	for (uint64_t i = 0; i < 3; i++) {
		const uint64_t end = (i + 1) * 100 * ms;
		e.record(rec(20, 2, i, 25 * ms, 75 * ms, end), end + 2 * ms);
		take(end + 2 * ms);
		e.flush(end + 25 * ms, 20 * ms);
		e.tick(end + 25 * ms);
		take(end + 25 * ms);
	}
	e.record(rec(10, 1, 0, 309800000, 200000, 310 * ms), 330 * ms);
	take(330 * ms);
	e.flush(351 * ms, 20 * ms);
	take(351 * ms);

	std::ostringstream out;
	tr::Trace t;
	t.source = "hpcd";
	out << tr::header_line(t) << "\n";
	for (int pid : {10, 20}) {
		tr::TaskInfo ti;
		ti.pid = pid;
		ti.prio = 4;
		out << tr::task_line(ti) << "\n";
	}
	bool disorder = false;
	std::map<int, uint64_t> last;
	for (const auto &ev : evs) {
		const json j = event_json(ev);
		if (ev.kind == IterEvent::Iteration) {
			tr::Iter i;
			i.pid = ev.pid;
			i.iteration = ev.iteration;
			i.end_ns = ev.at_ns;
			i.run_ns = ev.run_ns;
			i.wait_ns = ev.wait_ns;
			i.old_prio = ev.old_prio;
			i.prio = ev.prio;
			disorder |= ev.at_ns < last[ev.pid];
			out << tr::iter_line(i) << "\n";
		} else {
			out << tr::prio_line(tr::PrioChange{ev.pid, ev.at_ns, ev.old_prio, ev.prio})
			    << "\n";
		}
		last[ev.pid] = std::max(last[ev.pid], ev.at_ns);
	}
	ASSERT_TRUE(disorder) << "the scenario did not happen: " << out.str();
	std::istringstream in(out.str());
	auto read = tr::read(in, err);
	ASSERT_TRUE(read) << err << "\n" << out.str();
	// Every event is there, and the table shows the heavy rank's rise once.
	EXPECT_EQ(read->iters.size() + read->prios.size(), evs.size());
	const std::string table = tr::report_table(*read);
	EXPECT_NE(table.find("4>5"), std::string::npos) << table;
}
