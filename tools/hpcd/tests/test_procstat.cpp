// /proc parsing and the sampler's state machine.
#include "procstat.hpp"
#include "system.hpp"
#include "test_util.hpp"

using namespace hpcd;
using namespace hpcd_test;

TEST(ProcStat, NameWithBlanksAndParens)
{
	auto s = parse_proc_stat(data("stat_sleeping"));
	ASSERT_TRUE(s);
	EXPECT_EQ(s->state, 'S');
	EXPECT_EQ(s->ppid, 1);
	EXPECT_EQ(s->processor, 1);
	auto r = parse_proc_stat(data("stat_running"));
	ASSERT_TRUE(r);
	EXPECT_EQ(r->state, 'R');
	EXPECT_EQ(r->processor, 0);
}

TEST(ProcStat, Malformed)
{
	EXPECT_FALSE(parse_proc_stat(""));
	EXPECT_FALSE(parse_proc_stat("12 prog S 1"));
	EXPECT_FALSE(parse_proc_stat("12 (prog)"));
	EXPECT_FALSE(parse_proc_stat("12 (prog) SS 1 2"));
}

TEST(SchedStat, RunTime)
{
	EXPECT_EQ(parse_schedstat(data("schedstat")).value_or(0), 6338765u);
	EXPECT_FALSE(parse_schedstat(""));
	EXPECT_FALSE(parse_schedstat("x 1 2"));
	EXPECT_FALSE(parse_schedstat("12x 1 2"));
}

TEST(Tracker, FirstSampleIsBaseline)
{
	ProcTracker t;
	EXPECT_TRUE(t.sample(1000, 'S', 50).empty());
	EXPECT_FALSE(t.runnable());
}

TEST(Tracker, SleepPlacedAfterRunDelta)
{
	ProcTracker t;
	t.sample(0, 'R', 0);
	// ran 1.5 ms of the 2 ms interval, then slept
	auto ev = t.sample(2000000, 'S', 1500000);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].kind, ProcEvent::Sleep);
	EXPECT_EQ(ev[0].at, 1500000u);
}

TEST(Tracker, WakeupPlacedBeforeSample)
{
	ProcTracker t;
	t.sample(0, 'S', 0);
	auto ev = t.sample(2000000, 'R', 500000);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].kind, ProcEvent::Wakeup);
	EXPECT_EQ(ev[0].at, 1500000u);
}

TEST(Tracker, BurstBetweenTwoSleepingSamples)
{
	ProcTracker t;
	t.sample(0, 'S', 0);
	auto ev = t.sample(2000000, 'D', 1000000);
	ASSERT_EQ(ev.size(), 2u);
	EXPECT_EQ(ev[0].kind, ProcEvent::Wakeup);
	EXPECT_EQ(ev[0].at, 500000u);
	EXPECT_EQ(ev[1].kind, ProcEvent::Sleep);
	EXPECT_EQ(ev[1].at, 1500000u);
}

TEST(Tracker, PollingWaitStaysOneWait)
{
	// MPI_Test + nanosleep back-off: 60 us of run in each 2 ms sample.
	ProcTracker t(200000);
	t.sample(0, 'S', 0);
	EXPECT_TRUE(t.sample(2000000, 'S', 60000).empty());
	EXPECT_TRUE(t.sample(4000000, 'S', 120000).empty());
	auto ev = t.sample(6000000, 'S', 1120000); // a real 1 ms burst
	ASSERT_EQ(ev.size(), 2u);
	EXPECT_EQ(ev[1].at - ev[0].at, 1000000u);
}

TEST(Tracker, RunnableThroughoutAndSleepingThroughout)
{
	ProcTracker t;
	t.sample(0, 'R', 0);
	EXPECT_TRUE(t.sample(2000000, 'R', 300000).empty()); // throttled or preempted: compute
	ProcTracker u;
	u.sample(0, 'S', 0);
	EXPECT_TRUE(u.sample(2000000, 'S', 0).empty());
	// A run-time delta larger than the interval is clipped to it.
	ProcTracker v;
	v.sample(0, 'R', 0);
	auto ev = v.sample(1000, 'S', 999999);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].at, 1000u);
}

TEST(CpuList, ParseAndFormat)
{
	EXPECT_EQ(parse_cpulist("0-3,5\n").value(), (std::vector<int>{0, 1, 2, 3, 5}));
	EXPECT_EQ(parse_cpulist("2").value(), std::vector<int>{2});
	EXPECT_FALSE(parse_cpulist(""));
	EXPECT_FALSE(parse_cpulist("3-1"));
	EXPECT_FALSE(parse_cpulist("a"));
	EXPECT_FALSE(parse_cpulist("1,"));
	EXPECT_EQ(format_cpulist({0, 2, 4}), "0,2,4");
}

TEST(CpuList, SmtOrderPairsRealSiblings)
{
	TempDir d;
	// 4 CPUs, siblings (0,2) and (1,3)
	for (auto [c, s] : std::vector<std::pair<int, const char *>>{
		     {0, "0,2"}, {1, "1,3"}, {2, "0,2"}, {3, "1,3"}}) {
		std::string dir = d.path + "/cpu" + std::to_string(c) + "/topology";
		std::filesystem::create_directories(dir);
		write_file(dir + "/thread_siblings_list", std::string(s) + "\n");
	}
	EXPECT_EQ(smt_order({0, 1, 2, 3}, d.path), (std::vector<int>{0, 2, 1, 3}));
	// No SMT information: kept as given.
	EXPECT_EQ(smt_order({3, 1}, "/nonexistent"), (std::vector<int>{3, 1}));
}
