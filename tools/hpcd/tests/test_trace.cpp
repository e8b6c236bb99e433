// Traces: the native record (read, write, refuse), the tracepoint's text,
// the paper's table and the Perfetto and Paraver exports, from fixtures.
#include "test_util.hpp"
#include "trace.hpp"

#include <fmt/format.h>
#include <regex>
#include <sstream>

using namespace hpcd;
using namespace hpcd_test;
using nlohmann::json;
namespace tr = hpcd::trace;

namespace
{

// tests/data/trace_pair.jsonl: an emulated core of two ranks from 1.0 s,
// iterations of 100 ms ending at 1.1, 1.2 and 1.3 s. Rank 1 (pid 201)
// computes 90 ms and rises 4 > 5 > 6; rank 2 (pid 202) computes 30 ms, stays
// at 4 and is set to 5 at 1.35 s. mpirun (pid 100) closed one iteration
// before it turned out to be a launcher. The record ends at 1.4 s.
tr::Trace fixture()
{
	std::istringstream in(data("trace_pair.jsonl"));
	std::string err;
	auto t = tr::read(in, err);
	EXPECT_TRUE(t) << err;
	return t.value_or(tr::Trace{});
}

std::optional<tr::Trace> parse(const std::string &text, std::string &err)
{
	std::istringstream in(text);
	return tr::read(in, err);
}

size_t count_lines(const std::string &text, const std::string &prefix)
{
	std::istringstream in(text);
	size_t n = 0;
	for (std::string l; std::getline(in, l);)
		n += l.rfind(prefix, 0) == 0;
	return n;
}

const char *kHeader = R"({"format":"hpcsched-trace","version":1,"source":"hpcd","start_ns":0})";
const char *kTask = R"({"type":"task","pid":7,"name":"x"})";

} // namespace

TEST(TraceRecord, ReadsTheFixture)
{
	auto t = fixture();
	EXPECT_EQ(t.source, "hpcd");
	EXPECT_EQ(t.host, "testhost");
	EXPECT_EQ(t.start_ns, 1000000000u);
	EXPECT_EQ(t.end_ns, 1400000000u);
	EXPECT_EQ(t.reason, "test");
	EXPECT_EQ(t.command, (std::vector<std::string>{"mpirun", "-np", "3", "./app"}));
	EXPECT_EQ(t.settings["heuristic"], "adaptive");
	ASSERT_EQ(t.tasks.size(), 3u) << "a task listed twice is one task";
	EXPECT_EQ(t.task(100)->role, "launcher") << "the newest description wins";
	EXPECT_EQ(t.task(201)->rank, 1);
	EXPECT_EQ(t.task(202)->sibling, 201);
	EXPECT_EQ(t.iters.size(), 7u);
	EXPECT_EQ(t.prios.size(), 1u);
	// In time order, whatever order the lines came in.
	for (size_t k = 1; k < t.iters.size(); k++)
		EXPECT_LE(t.iters[k - 1].end_ns, t.iters[k].end_ns);
	EXPECT_EQ(t.last_ns(), 1400000000u);
}

TEST(TraceRecord, WriteThenReadGivesTheSameTrace)
{
	tr::Trace t;
	t.source = "kernel";
	t.start_ns = 5000;
	t.start_unix_s = 1700000000;
	t.host = "h";
	t.command = {"./a b", "c"};
	t.settings = {{"low_util", "65"}};
	tr::TaskInfo ti;
	ti.pid = 42;
	ti.name = "a \"quoted\" name";
	ti.rank = 3;
	ti.cpu = 1;
	ti.source = "kernel";
	ti.prio = 4;
	tr::Iter i;
	i.pid = 42;
	i.iteration = 9;
	i.end_ns = 90000;
	i.run_ns = 60000;
	i.wait_ns = 20000;
	i.util = 7500;
	i.heur_util = 7000;
	i.old_prio = 4;
	i.prio = 5;
	i.cpu = 1;
	i.weight = 250;
	tr::PrioChange p{42, 95000, 5, 6};
	t.end_ns = 100000;
	t.reason = "done";
	t.dropped = 2;
	t.missed = 1;
	t.warnings = {"2 of 2 rank(s) ran unmonitored", "b"};
	std::string text = tr::header_line(t) + "\n" + tr::task_line(ti) + "\n" + tr::iter_line(i) +
			   "\n" + tr::prio_line(p) + "\n" + tr::end_line(t) + "\n";
	std::string err;
	auto back = parse(text, err);
	ASSERT_TRUE(back) << err;
	EXPECT_EQ(back->source, "kernel");
	EXPECT_EQ(back->start_unix_s, 1700000000);
	EXPECT_EQ(back->command, t.command);
	EXPECT_EQ(back->settings, t.settings);
	ASSERT_EQ(back->tasks.size(), 1u);
	EXPECT_EQ(back->tasks[0].name, ti.name);
	EXPECT_EQ(back->tasks[0].rank, 3);
	EXPECT_EQ(back->tasks[0].prio, 4u);
	ASSERT_EQ(back->iters.size(), 1u);
	const auto &b = back->iters[0];
	EXPECT_EQ(std::tie(b.pid, b.iteration, b.end_ns, b.run_ns, b.wait_ns, b.util, b.heur_util,
			   b.old_prio, b.prio, b.cpu, b.weight),
		  std::tie(i.pid, i.iteration, i.end_ns, i.run_ns, i.wait_ns, i.util, i.heur_util,
			   i.old_prio, i.prio, i.cpu, i.weight));
	ASSERT_EQ(back->prios.size(), 1u);
	EXPECT_EQ(back->prios[0].at_ns, 95000u);
	EXPECT_EQ(back->end_ns, 100000u);
	EXPECT_EQ(back->reason, "done");
	EXPECT_EQ(back->dropped, 2u);
	EXPECT_EQ(back->missed, 1u);
	EXPECT_EQ(back->warnings, t.warnings);
	EXPECT_NE(tr::report_table(*back).find("Warning: 2 of 2 rank(s) ran unmonitored\n"),
		  std::string::npos);
}

TEST(TraceRecord, RefusesWhatIsNotARecordSayingWhere)
{
	const std::string h = std::string(kHeader) + "\n", task = std::string(kTask) + "\n";
	const std::string it = R"({"type":"iteration","pid":7,"end_ns":100,"run_ns":50,)"
			       R"("wait_ns":50,"old_prio":4,"prio":4})";
	struct Case {
		std::string text, want;
	} cases[] = {
		{"", "empty"},
		{"\n\n", "empty"},
		{"hello\n", "line 1: not JSON"},
		{R"({"format":"other","version":1})"
		 "\n",
		 "line 1: not an hpcsched trace"},
		{R"({"format":"hpcsched-trace","version":2,"source":"hpcd","start_ns":0})"
		 "\n",
		 "line 1: trace format version 2 is newer"},
		{R"({"format":"hpcsched-trace","version":1,"source":"bpf","start_ns":0})"
		 "\n",
		 "line 1: \"source\" must be hpcd, kernel or scx"},
		{R"({"format":"hpcsched-trace","version":1,"source":"hpcd"})"
		 "\n",
		 "line 1: no \"start_ns\""},
		{h + it + "\n", "line 2: iteration of pid 7 before its task line"},
		{h + R"({"type":"task","pid":0})"
		     "\n",
		 "line 2: \"pid\" must be a whole number >= 1"},
		{h + R"({"type":"task","pid":7,"role":"boss"})"
		     "\n",
		 "line 2: \"role\" must be"},
		{h + R"({"type":"task","pid":"7"})"
		     "\n",
		 "line 2: \"pid\" must be"},
		{h + task +
			 R"({"type":"iteration","pid":7,"end_ns":100,"run_ns":60,"wait_ns":50,)"
			 R"("old_prio":4,"prio":4})"
			 "\n",
		 "line 3: run_ns + wait_ns is more than end_ns"},
		{h + task +
			 R"({"type":"iteration","pid":7,"end_ns":100,"run_ns":-1,"wait_ns":50,)"
			 R"("old_prio":4,"prio":4})"
			 "\n",
		 "line 3: \"run_ns\" must be a whole number >= 0"},
		{h + task +
			 R"({"type":"iteration","pid":7,"end_ns":100,"run_ns":10,"wait_ns":50})"
			 "\n",
		 "line 3: no \"old_prio\""},
		{h + task +
			 R"({"type":"iteration","pid":7,"end_ns":100,"run_ns":10,"wait_ns":50,)"
			 R"("util":10001,"old_prio":4,"prio":4})"
			 "\n",
		 "line 3: util and heur_util are in 0.01 %"},
		{h + task + it + "\n" +
			 R"({"type":"iteration","pid":7,"end_ns":99,"run_ns":0,"wait_ns":0,)"
			 R"("old_prio":4,"prio":4})"
			 "\n",
		 "line 4: pid 7: an iteration ends before"},
		{h + task +
			 R"({"type":"priority","pid":7,"at_ns":5,"old_prio":4})"
			 "\n",
		 "line 3: no \"prio\""},
		{h + task + it + "\n" +
			 R"({"type":"priority","pid":7,"at_ns":99,"old_prio":4,"prio":5})"
			 "\n",
		 "line 4: pid 7: a priority change before the task's previous event"},
		{h + task +
			 R"({"type":"priority","pid":7,"at_ns":200,"old_prio":4,"prio":5})"
			 "\n" +
			 R"({"type":"iteration","pid":7,"end_ns":150,"run_ns":50,"wait_ns":50,)"
			 R"("old_prio":5,"prio":5})"
			 "\n" +
			 R"({"type":"iteration","pid":7,"end_ns":140,"run_ns":50,"wait_ns":50,)"
			 R"("old_prio":5,"prio":5})"
			 "\n",
		 "line 5: pid 7: an iteration ends before the task's previous iteration"},
		{h + R"({"type":"end","end_ns":5,"warnings":"x"})"
		     "\n",
		 "line 2: \"warnings\" must be an array of strings"},
		{h + task +
			 R"({"type":"wobble"})"
			 "\n",
		 "line 3: unknown type \"wobble\""},
		{h + task + "[1,2]\n", "line 3: not a JSON object"},
		{h +
			 R"({"type":"end","end_ns":5})"
			 "\n" +
			 task,
		 "line 3: an event after the end line"},
	};
	for (const auto &c : cases) {
		std::string err;
		EXPECT_FALSE(parse(c.text, err)) << c.text;
		EXPECT_EQ(err.rfind(c.want, 0), 0u) << "got: " << err << "\nfor: " << c.text;
	}
	// A record cut short (no end line) is still a record.
	std::string err;
	auto t = parse(h + task + it + "\n", err);
	ASSERT_TRUE(t) << err;
	EXPECT_EQ(t->end_ns, 0u);
	EXPECT_NE(tr::report_table(*t).find("no end line"), std::string::npos);
}

TEST(Ftrace, ParsesTheTracepointLines)
{
	std::istringstream in(data("ftrace_sched_hpc.txt"));
	std::vector<tr::KernelEvent> evs;
	std::vector<tr::KernelJudge> judged;
	uint64_t lost = 0;
	for (std::string l; std::getline(in, l);) {
		lost += tr::ftrace_lost(l);
		if (auto e = tr::parse_ftrace_line(l))
			evs.push_back(*e);
		if (auto j = tr::parse_ftrace_judge(l))
			judged.push_back(*j);
	}
	EXPECT_EQ(lost, 3u);
	ASSERT_EQ(evs.size(), 3u) << "comments, sched_switch, the LOST note and the judgement are "
				     "not iterations";
	ASSERT_EQ(judged.size(), 1u);
	EXPECT_EQ(judged[0].change.pid, 814);
	EXPECT_EQ(judged[0].comm, "busy one");
	EXPECT_EQ(judged[0].cpu, 1);
	EXPECT_EQ(judged[0].change.at_ns, 103360000000u);
	EXPECT_EQ(judged[0].heur_util, 9950u);
	EXPECT_EQ(judged[0].change.old_prio, 4u);
	EXPECT_EQ(judged[0].change.prio, 5u);
	EXPECT_FALSE(tr::parse_ftrace_judge("x-1 [000] 1.000000: sched_hpc_judge: pid=1 comm=x "
					    "heur_util=1 old_prio=4"));
	EXPECT_EQ(evs[0].it.pid, 812);
	EXPECT_EQ(evs[0].comm, "metbench");
	EXPECT_EQ(evs[0].it.cpu, 1);
	EXPECT_EQ(evs[0].it.end_ns, 103250000000u);
	EXPECT_EQ(evs[0].it.run_ns, 90000000u);
	EXPECT_EQ(evs[0].it.wait_ns, 10000000u);
	EXPECT_EQ(evs[0].it.util, 9000u);
	EXPECT_EQ(evs[0].it.heur_util, 8800u);
	EXPECT_EQ(evs[0].it.old_prio, 4u);
	EXPECT_EQ(evs[0].it.prio, 5u);
	// A command name with a blank, on another CPU, microseconds kept.
	EXPECT_EQ(evs[1].comm, "my worker");
	EXPECT_EQ(evs[1].it.pid, 813);
	EXPECT_EQ(evs[1].it.cpu, 0);
	EXPECT_EQ(evs[1].it.end_ns, 103250010000u);
	EXPECT_EQ(evs[1].it.wait_ns, 70000010u);
	EXPECT_EQ(evs[2].it.old_prio, 5u);
	EXPECT_EQ(evs[2].it.prio, 6u);
	// Without the irq-info column, and not an event of ours.
	auto e = tr::parse_ftrace_line(
		" app-5 [003] 7.000001: sched_hpc_iteration: pid=5 comm=app "
		"run_ns=1000 wait_ns=2000 util=3333 heur_util=3333 old_prio=4 "
		"new_prio=4\n");
	ASSERT_TRUE(e);
	EXPECT_EQ(e->it.cpu, 3);
	EXPECT_EQ(e->it.end_ns, 7000001000u);
	for (const char *bad :
	     {"", "# comment", "app-5 [003] 7.0: sched_hpc_iterations: pid=5",
	      "app-5 [003] x.y: sched_hpc_iteration: pid=5 comm=a run_ns=1 wait_ns=1 util=1 "
	      "heur_util=1 old_prio=4 new_prio=4",
	      "app-5 [003] 7.000001: sched_hpc_iteration: pid=5 comm=a run_ns=1 wait_ns=1",
	      "app-5 [003] 0.000001: sched_hpc_iteration: pid=5 comm=a run_ns=1000 wait_ns=1 "
	      "util=1 heur_util=1 old_prio=4 new_prio=4",
	      "app-5 [003] 7.000001: sched_hpc_iteration: pid=0 comm=a run_ns=1 wait_ns=1 "
	      "util=1 heur_util=1 old_prio=4 new_prio=4"})
		EXPECT_FALSE(tr::parse_ftrace_line(bad)) << bad;
	EXPECT_EQ(tr::ftrace_lost("CPU:0 [LOST x EVENTS]"), 0u);
	EXPECT_EQ(tr::ftrace_lost("app [LOST 3 EVENTS]"), 0u);
}

TEST(TraceReport, PerTaskTableLikeThePaper)
{
	auto t = fixture();
	auto rows = tr::summarize(t);
	ASSERT_EQ(rows.size(), 2u) << "the launcher is left out";
	EXPECT_EQ(rows[0].label, "P1");
	EXPECT_EQ(rows[0].task->pid, 201);
	EXPECT_EQ(rows[0].iterations, 3u);
	EXPECT_DOUBLE_EQ(rows[0].comp_pct, 90.0);
	EXPECT_EQ(rows[0].prios, (std::vector<uint32_t>{4, 5, 6}));
	EXPECT_EQ(rows[0].first_ns, 1000000000u);
	EXPECT_EQ(rows[0].last_ns, 1300000000u);
	EXPECT_EQ(rows[1].label, "P2");
	EXPECT_DOUBLE_EQ(rows[1].comp_pct, 30.0);
	EXPECT_EQ(rows[1].prios, (std::vector<uint32_t>{4, 5})) << "the change after the last "
								   "iteration counts";
	EXPECT_EQ(rows[1].last_ns, 1350000000u);
	std::string table = tr::report_table(t);
	EXPECT_NE(table.find("2 task(s), 6 iteration(s)"), std::string::npos) << table;
	EXPECT_TRUE(
		std::regex_search(table, std::regex(R"(P1 +201 +app +3 +90\.00 +4>5>6 +0\.300 s)")))
		<< table;
	EXPECT_TRUE(
		std::regex_search(table, std::regex(R"(P2 +202 +app +3 +30\.00 +4>5 +0\.350 s)")))
		<< table;
	EXPECT_NE(table.find("adaptive"), std::string::npos);
	EXPECT_NE(table.find("Recorded 0.400 s (test)"), std::string::npos) << table;
	EXPECT_EQ(table.find("Incomplete"), std::string::npos);

	EXPECT_EQ(tr::prio_path({4, 5, 6, 5, 4, 5, 6}), "4>5>6>5>4>5>6");
	EXPECT_EQ(tr::prio_path({4, 5, 6, 5, 4, 5, 6, 5}), "4>5>6>..>5>6>5");
	EXPECT_EQ(tr::prio_path({0, 4}), "?>4");
}

TEST(TraceReport, ARankSampledUntilItsHelloCountsItsMonitoredIterationsOnly)
{
	// A launcher's rank, sampled from /proc during MPI_Init (two start-up
	// "iterations"), then monitored: the table holds what the monitor said.
	const std::string head =
		R"({"format":"hpcsched-trace","version":1,"source":"hpcd","clock":"CLOCK_MONOTONIC",)"
		R"("start_ns":1000000000,"host":"h","command":["mpirun"]})"
		"\n";
	auto task = [](const char *source) {
		return std::string(R"({"type":"task","pid":7,"name":"app","rank":0,"source":")") +
		       source + "\"}\n";
	};
	auto iter = [](int n, long end_ms, long run_ms, long wait_ms) {
		return fmt::format(R"({{"type":"iteration","pid":7,"iteration":{},"end_ns":{},)"
				   R"("run_ns":{},"wait_ns":{},"old_prio":4,"prio":4}})"
				   "\n",
				   n, end_ms * 1000000, run_ms * 1000000, wait_ms * 1000000);
	};
	std::string text = head + task("proc") + iter(1, 1100, 5, 95) + iter(2, 1200, 5, 95) +
			   task("monitor") + iter(1, 1250, 40, 10) + iter(2, 1300, 40, 10);
	std::string err;
	auto t = parse(text, err);
	ASSERT_TRUE(t) << err;
	auto rows = tr::summarize(*t);
	ASSERT_EQ(rows.size(), 1u);
	EXPECT_EQ(rows[0].iterations, 2u);
	EXPECT_DOUBLE_EQ(rows[0].comp_pct, 80.0);
	EXPECT_EQ(rows[0].first_ns, 1200000000u);
	// Monitored from the start: nothing is dropped.
	t = parse(head + task("monitor") + iter(1, 1100, 5, 95) + iter(2, 1200, 5, 95), err);
	ASSERT_TRUE(t) << err;
	EXPECT_EQ(tr::summarize(*t)[0].iterations, 2u);
	// Sampled, then monitored, and never waited long enough to close an
	// iteration (the rank the others wait for): listed, with none.
	t = parse(head + task("proc") + iter(1, 1100, 5, 95) + task("monitor"), err);
	ASSERT_TRUE(t) << err;
	rows = tr::summarize(*t);
	ASSERT_EQ(rows.size(), 1u);
	EXPECT_EQ(rows[0].label, "P0");
	EXPECT_EQ(rows[0].iterations, 0u);
	EXPECT_DOUBLE_EQ(rows[0].comp_pct, 0.0);
}

TEST(TraceReport, LabelsInPairingOrderWithoutRanks)
{
	std::string err;
	auto t = parse(std::string(kHeader) + "\n" +
			       R"({"type":"task","pid":9,"ctx":1})"
			       "\n"
			       R"({"type":"task","pid":8,"ctx":0})"
			       "\n"
			       R"({"type":"iteration","pid":9,"end_ns":10,"run_ns":5,"wait_ns":5,)"
			       R"("old_prio":4,"prio":4})"
			       "\n"
			       R"({"type":"iteration","pid":8,"end_ns":10,"run_ns":5,"wait_ns":5,)"
			       R"("old_prio":4,"prio":4})"
			       "\n",
		       err);
	ASSERT_TRUE(t) << err;
	auto rows = tr::summarize(*t);
	ASSERT_EQ(rows.size(), 2u);
	EXPECT_EQ(rows[0].task->pid, 8);
	EXPECT_EQ(rows[0].label, "P1");
	EXPECT_EQ(rows[1].label, "P2");
}

TEST(TraceReport, TimelineCsvForReportPy)
{
	std::string csv = tr::timeline_csv(fixture());
	std::istringstream in(csv);
	std::string first, line;
	std::getline(in, first);
	EXPECT_EQ(first, "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns");
	EXPECT_EQ(count_lines(csv, "1,P1,"), 3u);
	EXPECT_EQ(count_lines(csv, "2,P2,"), 3u);
	EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7) << "no row for the launcher";
	EXPECT_NE(csv.find("\n2,P2,1,0,1000000000,1030000000,1100000000\n"), std::string::npos)
		<< csv;
	EXPECT_NE(csv.find("\n1,P1,3,0,1200000000,1290000000,1300000000\n"), std::string::npos)
		<< csv;
}

TEST(TraceExport, PerfettoHasATrackPerTaskSlicesAndCounters)
{
	json j = tr::to_perfetto(fixture());
	// It survives a round trip through text (what the file holds).
	j = json::parse(j.dump());
	ASSERT_TRUE(j["traceEvents"].is_array());
	std::map<std::string, int> n;
	std::map<int, std::vector<json>> slices;
	for (auto &e : j["traceEvents"]) {
		n[e["ph"].get<std::string>() + ":" + e["name"].get<std::string>()]++;
		if (e["ph"] == "X")
			slices[e["pid"].get<int>()].push_back(e);
		EXPECT_NE(e["pid"], 100) << "the launcher has no track: " << e.dump();
	}
	EXPECT_EQ(n["M:process_name"], 2);
	EXPECT_EQ(n["M:thread_name"], 2);
	EXPECT_EQ(n["M:process_sort_index"], 2);
	EXPECT_EQ(n["X:compute"], 6);
	EXPECT_EQ(n["X:wait"], 6);
	EXPECT_EQ(n["C:priority"], 2 + 6 + 1) << "start, each iteration, the change";
	EXPECT_EQ(n["C:utilisation %"], 6);
	EXPECT_EQ(n["C:cpu weight"], 0) << "quota mode";
	// Times in microseconds from the start (1.0 s): rank 1's first compute
	// phase is [0, 90 ms), its wait [90, 100 ms).
	ASSERT_EQ(slices[201].size(), 6u);
	auto &c = slices[201][0], &w = slices[201][1];
	EXPECT_EQ(c["name"], "compute");
	EXPECT_DOUBLE_EQ(c["ts"].get<double>(), 0.0);
	EXPECT_DOUBLE_EQ(c["dur"].get<double>(), 90000.0);
	EXPECT_EQ(c["args"]["priority"], 4);
	EXPECT_EQ(w["name"], "wait");
	EXPECT_DOUBLE_EQ(w["ts"].get<double>(), 90000.0);
	EXPECT_DOUBLE_EQ(w["dur"].get<double>(), 10000.0);
	EXPECT_EQ(slices[201][4]["args"]["priority"], 6) << "third iteration runs at 6";
	int named = 0;
	for (auto &e : j["traceEvents"]) {
		if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 201) {
			EXPECT_EQ(e["args"]["name"], "P1 app (pid 201, rank 1, CPU 0)");
			named++;
		}
	}
	EXPECT_EQ(named, 1);
	EXPECT_EQ(j["otherData"]["host"], "testhost");
	EXPECT_EQ(j["displayTimeUnit"], "ms");
}

TEST(TraceExport, PerfettoWeightCounterInWeightMode)
{
	std::string err;
	auto t = parse(R"({"format":"hpcsched-trace","version":1,"source":"hpcd","start_ns":0,)"
		       R"("settings":{"mode":"weight"}})"
		       "\n" + std::string(kTask) +
			       "\n" +
			       R"({"type":"iteration","pid":7,"end_ns":10,"run_ns":5,"wait_ns":5,)"
			       R"("old_prio":4,"prio":4,"weight":180})"
			       "\n",
		       err);
	ASSERT_TRUE(t) << err;
	int weights = 0;
	const json j = tr::to_perfetto(*t);
	for (auto &e : j["traceEvents"])
		if (e["name"] == "cpu weight") {
			weights++;
			EXPECT_EQ(e["args"]["weight"], 180);
		}
	EXPECT_EQ(weights, 1);
}

TEST(TraceExport, ParaverHeaderRecordsAndNames)
{
	auto pv = tr::to_paraver(fixture());
	std::istringstream in(pv.prv);
	std::string header;
	std::getline(in, header);
	// 0.4 s from the start, 2 CPUs on one node, one application of two
	// tasks of one thread each; the date is the start's (UTC).
	EXPECT_EQ(header, "#Paraver (01/01/70 at 00:00):400000000_ns:1(2):1:2(1:1,1:1)");
	EXPECT_EQ(count_lines(pv.prv, "1:"), 12u) << "compute and wait of 6 iterations";
	EXPECT_EQ(count_lines(pv.prv, "2:"), 2u + 6u * 3u + 1u)
		<< "start priority, per iteration priority/utilisation/count, the change";
	EXPECT_EQ(count_lines(pv.prv, "1:1:1:1:1:"), 6u) << "rank 1 on CPU 0 (1)";
	EXPECT_EQ(count_lines(pv.prv, "1:2:1:2:1:"), 6u) << "rank 2 on CPU 1 (2)";
	EXPECT_NE(pv.prv.find("\n1:1:1:1:1:0:90000000:1\n"), std::string::npos) << pv.prv;
	EXPECT_NE(pv.prv.find("\n1:2:1:2:1:30000000:100000000:3\n"), std::string::npos);
	EXPECT_NE(pv.prv.find("\n2:1:1:1:1:200000000:90000001:6\n"), std::string::npos);
	EXPECT_NE(pv.prv.find("\n2:2:1:2:1:350000000:90000001:5\n"), std::string::npos);
	EXPECT_NE(pv.prv.find("\n2:2:1:2:1:100000000:90000002:3000\n"), std::string::npos);
	// Records in time order.
	uint64_t last = 0;
	std::string line;
	while (std::getline(in, line)) {
		std::vector<std::string> f;
		std::stringstream ss(line);
		for (std::string x; std::getline(ss, x, ':');)
			f.push_back(x);
		ASSERT_GE(f.size(), 8u) << line;
		uint64_t at = std::stoull(f[5]);
		EXPECT_GE(at, last) << line;
		last = at;
		if (f[0] == "1") {
			EXPECT_LT(std::stoull(f[5]), std::stoull(f[6])) << line;
			EXPECT_TRUE(f[7] == "1" || f[7] == "3") << line;
		}
	}
	EXPECT_NE(pv.pcf.find("STATES\n0    Idle\n1    Running"), std::string::npos);
	EXPECT_NE(pv.pcf.find("3    Waiting a message"), std::string::npos);
	EXPECT_NE(pv.pcf.find("0    90000001    SCHED_HPC priority"), std::string::npos);
	EXPECT_NE(pv.pcf.find("6      6 (high)"), std::string::npos);
	EXPECT_NE(pv.pcf.find("90000002"), std::string::npos);
	EXPECT_EQ(pv.row, "LEVEL CPU SIZE 2\nCPU 0\nCPU 1\n\nLEVEL NODE SIZE 1\ntesthost\n\n"
			  "LEVEL THREAD SIZE 2\nP1 app (pid 201, rank 1, CPU 0)\n"
			  "P2 app (pid 202, rank 2, CPU 1)\n");
}

TEST(TraceExport, AnIterationBeforeTheStartMovesTheOrigin)
{
	std::string err;
	// The trace starts at 100 ns, the first iteration began at 40.
	auto t = parse(
		R"({"format":"hpcsched-trace","version":1,"source":"kernel","start_ns":100})"
		"\n" + std::string(kTask) +
			"\n" +
			R"({"type":"iteration","pid":7,"end_ns":150,"run_ns":80,"wait_ns":30,)"
			R"("old_prio":4,"prio":4})"
			"\n",
		err);
	ASSERT_TRUE(t) << err;
	auto pv = tr::to_paraver(*t);
	EXPECT_NE(pv.prv.find("\n1:0:1:1:1:0:80:1\n"), std::string::npos) << pv.prv;
	EXPECT_NE(pv.prv.find("\n1:0:1:1:1:80:110:3\n"), std::string::npos) << pv.prv;
	EXPECT_EQ(pv.prv.rfind("#Paraver (01/01/70 at 00:00):110_ns:1(1):1:1(1:1)\n", 0), 0u);
}

// ---- scx_hpc's per-task map, sampled ---------------------------------------------

namespace
{

json scx_entry(int pid, uint64_t iters, uint32_t prio, uint32_t prev, uint64_t run = 0,
	       uint64_t wait = 0, uint32_t util = 0, int exited = 0)
{
	return json{{"pid", pid},           {"tgid", pid},
		    {"comm", "app"},        {"cpu", 1},
		    {"prio", prio},         {"prev_prio", prev},
		    {"iterations", iters},  {"judgements", 0},
		    {"last_util", util},    {"global_util", util},
		    {"heur_util", util},    {"last_run_ns", run},
		    {"last_wait_ns", wait}, {"throttled_ns", 0},
		    {"run_ns", run},        {"exited", exited}};
}

std::vector<tr::ScxTask> scx(std::initializer_list<json> entries)
{
	return tr::parse_scx_tasks(json(entries));
}

} // namespace

TEST(ScxSampler, TheLoadersDumpIsParsedAndBadEntriesNamed)
{
	auto t = scx({scx_entry(7, 3, 5, 4, 900, 100, 9000)});
	ASSERT_EQ(t.size(), 1u);
	EXPECT_EQ(t[0].pid, 7);
	EXPECT_EQ(t[0].comm, "app");
	EXPECT_EQ(t[0].nr_iter, 3u);
	EXPECT_EQ(t[0].prio, 5u);
	EXPECT_EQ(t[0].prev_prio, 4u);
	EXPECT_EQ(t[0].last_run_ns, 900u);
	EXPECT_EQ(t[0].last_wait_ns, 100u);
	EXPECT_EQ(t[0].last_util, 9000u);
	EXPECT_EQ(t[0].cpu, 1);
	EXPECT_FALSE(t[0].exited);

	auto refuses = [](json dump, const std::string &what) {
		try {
			tr::parse_scx_tasks(dump);
			ADD_FAILURE() << "accepted " << dump.dump();
		} catch (const std::runtime_error &e) {
			EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
		}
	};
	refuses(json::object(), "not a JSON array");
	json e = scx_entry(7, 3, 5, 4);
	e.erase("iterations");
	refuses(json::array({scx_entry(8, 1, 4, 4), e}), "entry 2: \"iterations\"");
	e = scx_entry(7, 3, 5, 4, 0, 0, 10001); // util above 100 %
	refuses(json::array({e}), "\"last_util\"");
	e = scx_entry(7, 3, 5, 4);
	e["prio"] = -1;
	refuses(json::array({e}), "\"prio\"");
	refuses(json::array({scx_entry(0, 1, 4, 4)}), "pid 0");
}

TEST(ScxSampler, BaselineThenIterationsPriorityChangesAndMissed)
{
	tr::ScxSampler s;
	// Baseline: pid 7 has closed 3 iterations before the trace, pid 8 none.
	auto out = s.sample(scx({scx_entry(7, 3, 4, 4), scx_entry(8, 0, 4, 4)}), 1000);
	EXPECT_TRUE(out.tasks.empty());
	EXPECT_TRUE(out.iters.empty());
	EXPECT_TRUE(out.prios.empty());

	// Nothing changed: nothing recorded.
	out = s.sample(scx({scx_entry(7, 3, 4, 4), scx_entry(8, 0, 4, 4)}), 2000);
	EXPECT_TRUE(out.tasks.empty() && out.iters.empty() && out.prios.empty());

	// pid 7 closes one iteration and rises to 5; pid 8 is judged down to 3.
	out = s.sample(scx({scx_entry(7, 4, 5, 4, 900, 100, 9000), scx_entry(8, 0, 3, 4)}), 3000);
	ASSERT_EQ(out.tasks.size(), 2u);
	EXPECT_EQ(out.tasks[0].pid, 7);
	EXPECT_EQ(out.tasks[0].source, "scx");
	EXPECT_EQ(out.tasks[0].prio, 4u);
	EXPECT_EQ(out.tasks[0].name, "app");
	ASSERT_EQ(out.iters.size(), 1u);
	const auto &i = out.iters[0];
	EXPECT_EQ(i.pid, 7);
	EXPECT_EQ(i.iteration, 4u);
	EXPECT_EQ(i.end_ns, 3000u);
	EXPECT_EQ(i.run_ns, 900u);
	EXPECT_EQ(i.wait_ns, 100u);
	EXPECT_EQ(i.start_ns(), 2000u);
	EXPECT_EQ(i.util, 9000u);
	EXPECT_EQ(i.old_prio, 4u);
	EXPECT_EQ(i.prio, 5u);
	ASSERT_EQ(out.prios.size(), 1u);
	EXPECT_EQ(out.prios[0].pid, 8);
	EXPECT_EQ(out.prios[0].at_ns, 3000u);
	EXPECT_EQ(out.prios[0].old_prio, 4u);
	EXPECT_EQ(out.prios[0].prio, 3u);
	EXPECT_EQ(out.missed, 0u);

	// Three more iterations of pid 7 between two samples: one record, two
	// missed; its old priority is the last sampled one. Task lines only once.
	out = s.sample(scx({scx_entry(7, 7, 6, 5, 950, 50, 9500), scx_entry(8, 0, 3, 4)}), 4000);
	EXPECT_TRUE(out.tasks.empty());
	ASSERT_EQ(out.iters.size(), 1u);
	EXPECT_EQ(out.iters[0].iteration, 7u);
	EXPECT_EQ(out.iters[0].old_prio, 5u);
	EXPECT_EQ(out.iters[0].prio, 6u);
	EXPECT_EQ(out.missed, 2u);
	EXPECT_TRUE(out.prios.empty());
}

TEST(ScxSampler, NewTasksCountFromZeroAndAReusedPidStartsOver)
{
	tr::ScxSampler s;
	s.sample({}, 1000);
	// A task that started after the baseline and has closed two iterations.
	auto out = s.sample(scx({scx_entry(9, 2, 5, 4, 10, 20)}), 2000);
	ASSERT_EQ(out.tasks.size(), 1u);
	EXPECT_EQ(out.tasks[0].prio, 4u); // its prev_prio
	ASSERT_EQ(out.iters.size(), 1u);
	EXPECT_EQ(out.iters[0].old_prio, 4u);
	EXPECT_EQ(out.missed, 1u);
	// pid 9 again with fewer iterations: another task with the same pid.
	out = s.sample(scx({scx_entry(9, 1, 4, 4, 10, 20)}), 3000);
	ASSERT_EQ(out.tasks.size(), 1u); // described again: another task
	EXPECT_EQ(out.tasks[0].pid, 9);
	ASSERT_EQ(out.iters.size(), 1u);
	EXPECT_EQ(out.iters[0].iteration, 1u);
	EXPECT_EQ(out.missed, 0u);
	// run + wait longer than the clock: clamped, never before zero.
	out = s.sample(scx({scx_entry(9, 2, 4, 4, 5000, 5000)}), 4000);
	ASSERT_EQ(out.iters.size(), 1u);
	EXPECT_EQ(out.iters[0].start_ns(), 0u);
}

TEST(ScxSampler, ItsRecordReadsBackAndReportsAsSampled)
{
	tr::ScxSampler s;
	tr::Trace t;
	t.source = "scx";
	t.start_ns = 1000;
	std::string rec = tr::header_line(t) + "\n";
	s.sample(scx({scx_entry(7, 0, 4, 4), scx_entry(8, 0, 4, 4)}), 1000);
	for (uint64_t k = 1; k <= 3; k++) {
		auto out = s.sample(
			scx({scx_entry(7, k, 4 + static_cast<uint32_t>(k) / 2, 4, 80, 20, 8000),
			     scx_entry(8, k, 4, 4, 20, 80, 2000)}),
			1000 + 100 * k);
		for (auto &x : out.tasks)
			rec += tr::task_line(x) + "\n";
		for (auto &x : out.iters)
			rec += tr::iter_line(x) + "\n";
	}
	t.end_ns = 1400;
	t.reason = "scx_hpc unloaded (sched_ext state disabled)";
	rec += tr::end_line(t) + "\n";
	std::string err;
	auto back = parse(rec, err);
	ASSERT_TRUE(back) << err << "\n" << rec;
	EXPECT_EQ(back->source, "scx");
	EXPECT_EQ(back->iters.size(), 6u);
	const std::string table = tr::report_table(*back);
	EXPECT_NE(table.find("scx_hpc (sched_ext, sampled)"), std::string::npos) << table;
	EXPECT_NE(table.find("4>5"), std::string::npos) << table;
	EXPECT_FALSE(tr::to_perfetto(*back).dump().empty());
}
