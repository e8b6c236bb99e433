// /proc parsing and the sampler's state machine.
#include "procstat.hpp"
#include "system.hpp"
#include "test_util.hpp"
#include "wakefilter.hpp"

using namespace hpcd;
using namespace hpcd_test;

TEST(ProcStat, NameWithBlanksAndParens)
{
	auto s = parse_proc_stat(data("stat_sleeping"));
	ASSERT_TRUE(s);
	EXPECT_EQ(s->state, 'S');
	EXPECT_EQ(s->ppid, 1);
	EXPECT_EQ(s->processor, 1);
	EXPECT_EQ(s->utime, 3u);
	EXPECT_EQ(s->stime, 1u);
	auto r = parse_proc_stat(data("stat_running"));
	ASSERT_TRUE(r);
	EXPECT_EQ(r->state, 'R');
	EXPECT_EQ(r->processor, 0);
	EXPECT_EQ(r->utime, 500u);
	EXPECT_EQ(r->stime, 0u);
}

// Field 51 of proc(5): 0 in the fixture, as while exec sets up a process.
TEST(ProcStat, EnvEnd)
{
	auto s = parse_proc_stat(data("stat_sleeping"));
	ASSERT_TRUE(s);
	EXPECT_EQ(s->env_end, 0u);
	auto r = parse_proc_stat(
		"7 (a b) S 1 7 7 0 -1 0 0 0 0 0 3 1 0 0 20 0 1 0 9 9 9 1 1 1 0 0 0 0 0 0 "
		"0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 140737488350000 140737488351000 0\n");
	ASSERT_TRUE(r);
	EXPECT_EQ(r->env_end, 140737488351000u);
	EXPECT_TRUE(exec_done(getpid()));
	EXPECT_FALSE(exec_done(-1));
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

TEST(Topology, HwlocSyntheticSiblingsCoresPackagesNuma)
{
	std::string err;
	// Two packages, each its own NUMA node, two cores of two threads.
	auto t = load_topology(err, "pack:2 numa:1 core:2 pu:2");
	ASSERT_TRUE(t) << err;
	EXPECT_EQ(t->packages, 2);
	EXPECT_EQ(t->cores, 4);
	EXPECT_EQ(t->cpus.size(), 8u);
	EXPECT_EQ(t->numa_nodes, (std::vector<int>{0, 1}));
	EXPECT_TRUE(t->smt());
	EXPECT_EQ(t->siblings(5), (std::vector<int>{4, 5}));
	ASSERT_NE(t->find(6), nullptr);
	EXPECT_EQ(t->find(6)->package, 1);
	EXPECT_EQ(t->find(6)->numa, 1);
	EXPECT_EQ(t->find(1)->numa, 0);
	EXPECT_EQ(t->find(99), nullptr);
	EXPECT_TRUE(t->siblings(99).empty());
}

TEST(Topology, HwlocRejectsABadDescription)
{
	std::string err;
	EXPECT_FALSE(load_topology(err, "pack:two"));
	EXPECT_NE(err.find("pack:two"), std::string::npos) << err;
}

TEST(Topology, ThisMachineHasEveryAllowedCpu)
{
	std::string err;
	auto t = load_topology(err);
	ASSERT_TRUE(t) << err;
	EXPECT_GE(t->cores, 1);
	EXPECT_GE(t->packages, 1);
	EXPECT_FALSE(t->numa_nodes.empty());
	for (int c : allowed_cpus())
		EXPECT_NE(t->find(c), nullptr) << "CPU " << c;
}

TEST(CpuList, SmtOrderPairsRealSiblings)
{
	std::string err;
	// Linux-style numbering: CPU c and c+4 share a core.
	auto t = load_topology(err, "pack:1 core:4 pu:2(indexes=0,4,1,5,2,6,3,7)");
	ASSERT_TRUE(t) << err;
	EXPECT_EQ(t->siblings(1), (std::vector<int>{1, 5}));
	EXPECT_EQ(smt_order({0, 1, 2, 3, 4, 5, 6, 7}, *t),
		  (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
	// A sibling outside the list is not taken; the order of the rest is kept.
	EXPECT_EQ(smt_order({3, 1, 5}, *t), (std::vector<int>{3, 1, 5}));
	// No SMT: the order is kept (consecutive CPUs emulate a core).
	auto flat = load_topology(err, "pack:1 core:4 pu:1");
	ASSERT_TRUE(flat) << err;
	EXPECT_FALSE(flat->smt());
	EXPECT_EQ(smt_order({3, 1, 0, 2}, *flat), (std::vector<int>{3, 1, 0, 2}));
	// No topology at all: kept as given.
	EXPECT_EQ(smt_order({3, 1}, Topology{}), (std::vector<int>{3, 1}));
}

TEST(Launcher, NamesAndHelpers)
{
	for (auto n : {"mpirun", "/usr/bin/mpiexec", "srun", "mpiexec.hydra", "orterun",
		       "mpirun.openmpi", "mpiexec.mpich", "prterun"})
		EXPECT_TRUE(hpcd::is_launcher_name(n)) << n;
	for (auto n : {"./app", "bt-mz.W.x", "mpirunner", "/usr/bin/", "", "srun/x"})
		EXPECT_FALSE(hpcd::is_launcher_name(n)) << n;
	for (auto n : {"orted", "hydra_pmi_proxy", "prted", "mpirun", "mpiexec.hydra"})
		EXPECT_TRUE(hpcd::is_launcher_helper(n)) << n;
	for (auto n : {"bt-mz.W.x", "metbench", "sh", "orted2"})
		EXPECT_FALSE(hpcd::is_launcher_helper(n)) << n;
}

TEST(Launcher, RankFromEnviron)
{
	using namespace std::string_literals;
	EXPECT_EQ(hpcd::rank_from_environ("PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0X=1"s), 3);
	EXPECT_EQ(hpcd::rank_from_environ("PMI_RANK=2\0PMIX_RANK=5\0"s), 5); // PMIX first
	EXPECT_EQ(hpcd::rank_from_environ("SLURM_PROCID=0"s), 0);
	EXPECT_EQ(hpcd::rank_from_environ("PMI_RANK=x\0SLURM_PROCID=7"s), 7);
	EXPECT_FALSE(hpcd::rank_from_environ("PATH=/bin\0HOME=/root"s));
	EXPECT_FALSE(hpcd::rank_from_environ("OMPI_COMM_WORLD_RANK=-1\0PMI_RANK=1x"s));
	EXPECT_FALSE(hpcd::rank_from_environ(""));
}

// The BPF source's exact events through WakeFilter (min_burst 200 us).
namespace
{
std::vector<hpcd::ProcEvent> feed(hpcd::WakeFilter &f,
				  std::initializer_list<std::pair<bool, uint64_t>> evs)
{
	std::vector<hpcd::ProcEvent> out;
	for (auto [wake, at] : evs)
		f.push(wake ? hpcd::ProcEvent::Wakeup : hpcd::ProcEvent::Sleep, at, out);
	return out;
}
std::string text(const std::vector<hpcd::ProcEvent> &ev)
{
	std::string s;
	for (auto &e : ev) {
		s += e.kind == hpcd::ProcEvent::Wakeup ? 'W' : 'S';
		s += std::to_string(e.at);
		s += ' ';
	}
	return s;
}
} // namespace

TEST(WakeFilter, ExactBoundariesPassThrough)
{
	hpcd::WakeFilter f(200000, true);
	// computes, sleeps 30 ms, wakes, sleeps again after 20 ms
	auto ev = feed(f, {{false, 1000000}, {true, 31000000}, {false, 51000000}});
	EXPECT_EQ(text(ev), "S1000000 W31000000 S51000000 ");
	EXPECT_FALSE(f.runnable());
}

TEST(WakeFilter, ShortBurstInsideAWaitDoesNotSplitIt)
{
	hpcd::WakeFilter f(200000, false);
	// a 150 us burst (a polling wait's back-off), then the real wake-up
	auto ev = feed(f, {{true, 1000000}, {false, 1150000}, {true, 9000000}});
	EXPECT_EQ(text(ev), "");
	EXPECT_TRUE(f.runnable()); // held, but running
	std::vector<hpcd::ProcEvent> out;
	f.flush(9100000, out); // 100 us after it: still a possible burst
	EXPECT_TRUE(out.empty());
	f.flush(9300000, out); // 300 us: a compute phase
	EXPECT_EQ(text(out), "W9000000 ");
	out.clear();
	f.flush(9400000, out); // said once
	EXPECT_TRUE(out.empty());
	// a burst longer than min_burst is one
	ev = feed(f, {{false, 20000000}, {true, 30000000}, {false, 30300000}});
	EXPECT_EQ(text(ev), "S20000000 W30000000 S30300000 ");
}

TEST(WakeFilter, RepeatedStatesAndDisorder)
{
	hpcd::WakeFilter f(200000, true);
	// a wake-up while running, a sleep while asleep: nothing
	auto ev = feed(f, {{true, 500}, {false, 1000000}, {false, 1000500}});
	EXPECT_EQ(text(ev), "S1000000 ");
	// two CPUs' events a few ns out of order: a sleep stamped before the
	// wake-up it follows is a burst of no length, not a huge one
	ev = feed(f, {{true, 5000000}, {false, 4999990}});
	EXPECT_EQ(text(ev), "");
	EXPECT_FALSE(f.runnable());
	// zero min_burst: every burst counts
	hpcd::WakeFilter z(0, false);
	ev = feed(z, {{true, 100}, {false, 150}});
	EXPECT_EQ(text(ev), "W100 S150 ");
}
