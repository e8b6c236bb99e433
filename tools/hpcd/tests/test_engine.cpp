// The engine: SMT quotas through the core's model, pairing, iteration events
// from monitor records, and the weight-mode rule on hand-computed windows.
#include "engine.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace hpcd;

using hpcd_test::ms;
using hpcd_test::rec;

TEST(SmtQuota, BothBusyFollowsTheModel)
{
	// (4,6): the table of sched-hpc-policy.rst gives 174 and 961 permille.
	ASSERT_EQ(hpc_smt_speed(4, 6, true), 174u);
	ASSERT_EQ(hpc_smt_speed(6, 4, true), 961u);
	EXPECT_EQ(smt_quota(4, 6, HPC_SMT_SIB_BUSY, 10000, 1), (Quota{1740, 10000}));
	EXPECT_EQ(smt_quota(6, 4, HPC_SMT_SIB_BUSY, 10000, 1), (Quota{9610, 10000}));
	EXPECT_EQ(smt_quota(4, 4, HPC_SMT_SIB_BUSY, 10000, 1), (Quota{6000, 10000}));
	for (uint32_t a = 1; a <= 6; a++)
		for (uint32_t b = 1; b <= 6; b++) {
			auto q = smt_quota(a, b, HPC_SMT_SIB_BUSY, 100000, 1);
			int64_t want = std::max<int64_t>(1000, 100 * hpc_smt_speed(a, b, true));
			EXPECT_EQ(q.quota_us, want) << a << "," << b;
		}
}

TEST(SmtQuota, UnthrottledWhenAlone)
{
	EXPECT_EQ(smt_quota(4, 6, HPC_SMT_SIB_NONE, 10000, 1).quota_us, -1);
	EXPECT_EQ(smt_quota(4, 0, HPC_SMT_SIB_NONE, 10000, 1).quota_us, -1);
}

TEST(SmtQuota, WaitingSiblingFollowsTheModel)
{
	// (4, waiting): 708 permille alone + 292 at (4,4)'s 600 = 883; the
	// waiting sibling's own priority does not count.
	EXPECT_EQ(smt_quota(4, 4, HPC_SMT_SIB_WAITS, 10000, 1), (Quota{8830, 10000}));
	EXPECT_EQ(smt_quota(4, 6, HPC_SMT_SIB_WAITS, 10000, 1), (Quota{8830, 10000}));
	EXPECT_EQ(smt_quota(6, 4, HPC_SMT_SIB_WAITS, 10000, 2),
		  (Quota{static_cast<int64_t>(10 * hpc_smt_speed(6, 4, false)), 20000}));
}

TEST(Engine, WaitsSayWhatASleepingSiblingDoes)
{
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.cpus = {0, 1};
	e.add(10, "light", "d", -1, 0);
	e.add(20, "heavy", "d", -1, 0);
	e.live(10, false); // the light context waits, asleep
	ASSERT_EQ(e.s.waits, Waits::Sleep);
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, -1);   // single-thread mode
	EXPECT_EQ(e.find(10)->quota.quota_us, 6000); // beside a busy one: (4,4)
	e.s.waits = Waits::Poll;                     // the emulated context polls while it waits
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, 6000); // (4,4): 600 permille
	EXPECT_EQ(e.find(10)->quota.quota_us, 6000);
	e.s.waits = Waits::Model; // the model's waiting context
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, 8830);
	EXPECT_EQ(e.find(10)->quota.quota_us, 6000);
	e.remove(10); // no sibling at all: alone on the core, whatever the waits
	for (Waits w : {Waits::Poll, Waits::Model, Waits::Sleep}) {
		e.s.waits = w;
		e.plan();
		EXPECT_EQ(e.find(20)->quota.quota_us, -1) << waits_name(w);
	}
}

TEST(SmtQuota, DilationPastTheLongestPeriod)
{
	// 128 contexts per CPU of 10 ms: 1.28 s, past CFS's 1 s. The same
	// share of 1 s: 600 permille / 128 (CFS refuses 1.28 s: EINVAL).
	EXPECT_EQ(smt_quota(4, 4, HPC_SMT_SIB_BUSY, 10000, 128), (Quota{4687, 1000000}));
	EXPECT_EQ(smt_quota(4, 4, HPC_SMT_SIB_BUSY, 10000, 100), (Quota{6000, 1000000}));
	// Alone on the core: 1/128 of a CPU; never below CFS's 1 ms quota.
	EXPECT_EQ(smt_quota(4, 0, HPC_SMT_SIB_NONE, 10000, 128), (Quota{7812, 1000000}));
	EXPECT_EQ(smt_quota(4, 6, HPC_SMT_SIB_BUSY, 10000, 1000), (Quota{1000, 1000000}));
}

TEST(SmtQuota, DilationKeepsRatios)
{
	// Two contexts per CPU: period doubles, quotas stay, alone = 1/2 CPU.
	EXPECT_EQ(smt_quota(4, 6, HPC_SMT_SIB_BUSY, 10000, 2), (Quota{1740, 20000}));
	EXPECT_EQ(smt_quota(6, 4, HPC_SMT_SIB_BUSY, 10000, 2), (Quota{9610, 20000}));
	EXPECT_EQ(smt_quota(6, 4, HPC_SMT_SIB_NONE, 10000, 2), (Quota{10000, 20000}));
}

TEST(SmtQuota, KernelMinimumQuota)
{
	// d = 5: 21 permille of 10 ms is below CFS's 1 ms minimum.
	EXPECT_EQ(smt_quota(1, 6, HPC_SMT_SIB_BUSY, 10000, 1).quota_us, 1000);
	EXPECT_EQ(smt_quota(1, 6, HPC_SMT_SIB_BUSY, 100000, 1).quota_us, 2100);
}

TEST(Engine, PairsInOrderAndPlacesOnCpus)
{
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.cpus = {0, 1, 2, 3};
	e.add(10, "a", "d", -1, 0);
	e.add(20, "b", "d", -1, 0);
	e.add(30, "c", "d", -1, 0);
	EXPECT_EQ(e.sibling(*e.find(10))->pid, 20);
	EXPECT_EQ(e.sibling(*e.find(20))->pid, 10);
	EXPECT_EQ(e.sibling(*e.find(30)), nullptr);
	EXPECT_EQ(e.find(30)->cpu, 2);
	EXPECT_EQ(e.dilation(), 1u);
	e.remove(10);
	EXPECT_EQ(e.sibling(*e.find(20))->pid, 30);
}

TEST(Engine, RanksOrderedByRankAndLaunchersSkipped)
{
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.cpus = {0, 1};
	e.add(5, "mpirun", "d", -1, 0);
	e.add(13, "r3", "j", 3, 0);
	e.add(11, "r1", "j", 1, 0);
	e.add(10, "r0", "j", 0, 0);
	e.add(12, "r2", "j", 2, 0);
	e.find(5)->launcher = true;
	e.place();
	EXPECT_EQ(e.find(10)->ctx, 0);
	EXPECT_EQ(e.find(11)->ctx, 1);
	EXPECT_EQ(e.find(12)->ctx, 2);
	EXPECT_EQ(e.find(13)->ctx, 3);
	EXPECT_EQ(e.find(5)->ctx, -1);
	// 4 contexts on 2 CPUs: two per CPU, a core's two contexts together.
	EXPECT_EQ(e.find(10)->cpu, 0);
	EXPECT_EQ(e.find(11)->cpu, 0);
	EXPECT_EQ(e.find(12)->cpu, 1);
	EXPECT_EQ(e.find(13)->cpu, 1);
	EXPECT_EQ(e.dilation(), 2u);
	e.plan();
	EXPECT_EQ(e.find(5)->quota.quota_us, -1);
	EXPECT_EQ(e.find(10)->quota, (Quota{6000, 20000}));
}

TEST(Engine, RecordsDriveThePolicyCore)
{
	// Heavy rank 0 (waits the monitor's minimum), light rank 1 (waits
	// 75 %): the core raises the heavy one, step by step, to max_prio 6.
	// Records of one barrier arrive in either order.
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.cpus = {0, 1};
	e.add(100, "heavy", "j", 0, 0);
	e.add(101, "light", "j", 1, 0);
	uint64_t now = 0;
	for (int i = 0; i < 4; i++) {
		now += 1000 * ms;
		auto heavy = rec(100, 0, i, 1000 * ms - 200000, 200000, now);
		auto light = rec(101, 1, i, 250 * ms, 750 * ms, now);
		if (i % 2) {
			e.record(heavy);
			e.record(light);
		} else {
			e.record(light);
			e.record(heavy);
		}
	}
	Task &h = *e.find(100), &l = *e.find(101);
	EXPECT_TRUE(h.monitored);
	// Each record is one closed iteration: none closed twice.
	EXPECT_EQ(l.t.nr_iter, 4u);
	EXPECT_EQ(h.t.nr_iter, 4u);
	EXPECT_EQ(h.t.last_util, 9998u);
	EXPECT_EQ(l.t.last_util, 2500u);
	EXPECT_EQ(h.t.prio, 6u);
	EXPECT_EQ(l.t.prio, 4u);
	e.plan();
	EXPECT_EQ(h.quota.quota_us, 9610);
	EXPECT_EQ(l.quota.quota_us, 1740);
	// The light rank waits (sleeping): the heavy one runs unthrottled.
	e.live(101, false);
	e.plan();
	EXPECT_EQ(h.quota.quota_us, -1);
	// Baseline: balancing off, both at the normal priority.
	e.live(101, true);
	e.s.balance = false;
	e.plan();
	EXPECT_EQ(h.quota.quota_us, 6000);
	EXPECT_EQ(l.quota.quota_us, 6000);
}

TEST(Engine, SilentCriticalPathJudgedBySibling)
{
	// A task without the monitor (/proc events) that never sleeps is
	// judged at the tick after its sibling closed an iteration
	// (hpc_on_tick): busy (100 %) next to a low sibling, one step up;
	// nothing closes.
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.add(1, "busy", "d", -1, 0);
	e.add(2, "light", "d", -1, 0);
	e.sleep(2, 250 * ms);
	EXPECT_FALSE(e.tick(500 * ms)); // nothing closed yet
	EXPECT_TRUE(e.wakeup(2, 1000 * ms));
	EXPECT_EQ(e.find(1)->t.nr_judged, 0u); // at the tick, not the wake-up
	EXPECT_TRUE(e.tick(1002 * ms));
	EXPECT_FALSE(e.tick(1004 * ms)); // once per sibling iteration
	EXPECT_EQ(e.find(1)->t.nr_iter, 0u);
	EXPECT_EQ(e.find(1)->t.nr_judged, 1u);
	EXPECT_EQ(e.find(1)->t.heur_util, 10000u);
	EXPECT_EQ(e.find(1)->t.prio, 5u);
	// A monitored rank silent for more than two sibling iterations too.
	Engine m;
	m.s.mode = Mode::SmtEmul;
	m.add(1, "r0", "j", 0, 0);
	m.add(2, "r1", "j", 1, 0);
	m.record(rec(2, 1, 0, 250 * ms, 750 * ms, 1000 * ms));
	EXPECT_TRUE(m.find(2)->pending); // r0 may still report this barrier
	m.flush(30 * ms, 20 * ms);       // it did not
	EXPECT_FALSE(m.find(2)->pending);
	EXPECT_EQ(m.find(2)->t.nr_iter, 1u);
	EXPECT_FALSE(m.tick(1002 * ms)); // r0 may still report
	EXPECT_EQ(m.find(1)->t.nr_judged, 0u);
	m.record(rec(2, 1, 1, 250 * ms, 750 * ms, 2000 * ms));
	m.record(rec(2, 1, 2, 250 * ms, 750 * ms, 3000 * ms)); // applies the held one
	m.flush(100 * ms, 20 * ms);
	EXPECT_TRUE(m.tick(3002 * ms)); // silent for 3 of r1's iterations
	EXPECT_EQ(m.find(2)->t.nr_iter, 3u);
	EXPECT_EQ(m.find(1)->t.nr_iter, 0u);
	EXPECT_EQ(m.find(1)->t.nr_judged, 1u);
}

TEST(Engine, ProcEventsCloseIterations)
{
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.add(1, "a", "d", -1, 0);
	e.sleep(1, 100 * ms);
	EXPECT_TRUE(e.wakeup(1, 400 * ms));
	EXPECT_EQ(e.find(1)->t.last_util, 2500u);
	// A wait shorter than min_wait_us (100 us) is compute.
	e.sleep(1, 500 * ms);
	EXPECT_FALSE(e.wakeup(1, 500 * ms + 50000));
}

TEST(Engine, RecordOrderDoesNotMatter)
{
	// Heavy first or light first: the same decisions (records are paired).
	for (bool heavy_first : {true, false}) {
		Engine e;
		e.s.mode = Mode::SmtEmul;
		e.add(100, "heavy", "j", 0, 0);
		e.add(101, "light", "j", 1, 0);
		for (int i = 0; i < 3; i++) {
			uint64_t end = (i + 1) * 1000 * ms;
			auto h = rec(100, 0, i, 1000 * ms - 200000, 200000, end + 5000);
			auto l = rec(101, 1, i, 250 * ms, 750 * ms, end);
			e.record(heavy_first ? h : l);
			e.record(heavy_first ? l : h);
		}
		EXPECT_EQ(e.find(100)->t.prio, 6u) << heavy_first;
		EXPECT_EQ(e.find(101)->t.prio, 4u) << heavy_first;
		EXPECT_EQ(e.find(100)->t.nr_iter, 3u) << heavy_first;
	}
}

TEST(Engine, SettleClosesTheHeldRecordOfALeavingRank)
{
	// The last record of a rank is held for its sibling's, which never
	// comes: the rank exits. settle() closes that last iteration.
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.add(100, "heavy", "j", 0, 0);
	e.add(101, "light", "j", 1, 0);
	EXPECT_FALSE(e.record(rec(100, 0, 0, 900 * ms, 100 * ms, 1000 * ms)));
	EXPECT_EQ(e.find(100)->t.nr_iter, 0u);
	e.settle(101); // nothing held for it: nothing happens
	EXPECT_EQ(e.find(100)->t.nr_iter, 0u);
	e.settle(100);
	EXPECT_EQ(e.find(100)->t.nr_iter, 1u);
	EXPECT_FALSE(e.find(100)->pending.has_value());
	e.settle(999); // an unknown pid is ignored
}

TEST(Engine, BadRecordsIgnored)
{
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.add(1, "a", "d", -1, 0);
	auto r = rec(1, 0, 0, 10 * ms, 10 * ms, 20 * ms);
	r.magic = 0;
	EXPECT_FALSE(e.record(r));
	r = rec(2, 0, 0, 10 * ms, 10 * ms, 20 * ms); // unknown pid
	EXPECT_FALSE(e.record(r));
	EXPECT_FALSE(e.find(1)->monitored);
}

TEST(WindowWeights, HandComputed)
{
	// exeT = 100, 300, 400, 200 ms: sum 1000, 4 tasks x 100 units = 400.
	EXPECT_EQ(window_weights({100, 300, 400, 200}, 100),
		  (std::vector<uint32_t>{40, 120, 160, 80}));
	EXPECT_EQ(window_weights({0, 0}, 100), (std::vector<uint32_t>{100, 100}));
	EXPECT_EQ(window_weights({1, 1000000}, 100), (std::vector<uint32_t>{1, 200}));
}

TEST(Modes, NamesAndDefault)
{
	EXPECT_EQ(Settings{}.mode, Mode::Weight);
	EXPECT_EQ(parse_mode("weight"), Mode::Weight);
	EXPECT_EQ(parse_mode("smt-emul"), Mode::SmtEmul);
	EXPECT_EQ(parse_mode("quota"), Mode::SmtEmul); // the emulation's former name
	EXPECT_EQ(parse_mode("turbo"), std::nullopt);
	EXPECT_STREQ(mode_name(Mode::Weight), "weight");
	EXPECT_STREQ(mode_name(Mode::SmtEmul), "smt-emul");
}

TEST(PlaceByLoad, HeavyRanksOnDifferentCpus)
{
	// MetBench's shape in rank order and with both heavy ranks first: each
	// CPU gets one heavy and one light rank.
	EXPECT_EQ(place_by_load({500, 2000, 500, 2000}, 2), (std::vector<int>{0, 0, 1, 1}));
	EXPECT_EQ(place_by_load({2000, 2000, 500, 500}, 2), (std::vector<int>{0, 1, 0, 1}));
	// A master with no work goes last, to the CPU with fewer tasks (the
	// first among equals).
	EXPECT_EQ(place_by_load({0, 500, 2000, 500, 2000}, 2), (std::vector<int>{0, 0, 0, 1, 1}));
	EXPECT_EQ(busiest_cpu_load({500, 2000, 500, 2000}, {0, 0, 1, 1}, 2), 2500u);
	EXPECT_EQ(busiest_cpu_load({500, 2000, 500, 2000}, {0, 1, 0, 1}, 2), 4000u);
	// Equal loads: spread by count. No CPU: everything on index 0.
	EXPECT_EQ(place_by_load({7, 7, 7, 7}, 2), (std::vector<int>{0, 1, 0, 1}));
	EXPECT_EQ(place_by_load({1, 2}, 0), (std::vector<int>{0, 0}));
}

namespace
{
// A weight-mode engine with `n` ranks of one job on `cpus`.
Engine weight_engine(int n, std::vector<int> cpus)
{
	Engine e;
	e.s.mode = Mode::Weight;
	e.s.window = 2;
	e.s.hold_ms = 0; // the thresholds alone (WeightMode.StartsAndStopsOnlyOnLoadsThatHold)
	e.cpus = std::move(cpus);
	for (int k = 0; k < n; k++)
		e.add(k + 1, "r", "j", k, 0);
	return e;
}

// One barrier: every rank's record for iteration `i` ending at `end` ms,
// compute wall time `run` ms and CPU time `cpu` ms.
void barrier(Engine &e, uint64_t i, const std::vector<uint64_t> &run,
	     const std::vector<uint64_t> &cpu, uint64_t end)
{
	for (size_t k = 0; k < run.size(); k++) {
		auto r = rec(static_cast<int>(k + 1), static_cast<int>(k), i, run[k] * ms,
			     (400 - run[k]) * ms, end * ms);
		r.cpu_ns = cpu[k] * ms;
		e.record(r);
	}
}
} // namespace

TEST(WeightMode, TheKernelPlacesAsManyRanksAsCpus)
{
	Engine e = weight_engine(2, {0, 1});
	EXPECT_FALSE(e.needs_cgroups()); // nothing to share: hpcd only watches
	EXPECT_EQ(e.find(1)->cpu, -1);
	EXPECT_EQ(e.find(2)->cpu, -1);
	barrier(e, 0, {100, 399}, {100, 399}, 400);
	EXPECT_EQ(e.find(1)->cpu, -1); // pinning gains nothing
	EXPECT_EQ(e.find(2)->cpu, -1);
	EXPECT_EQ(e.find(1)->weight, 40u); // 100 / 499 of 200 units
	EXPECT_EQ(e.find(2)->weight, 160u);
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1); // never throttled
	e.add(3, "r", "j", 2, 0);                 // more ranks than CPUs: weights may matter,
	EXPECT_FALSE(e.needs_cgroups());          // once loads are known
	barrier(e, 1, {100, 399, 200}, {100, 399, 200}, 800);
	EXPECT_FALSE(e.needs_cgroups()); // (a full window of each)
	barrier(e, 2, {100, 399, 200}, {100, 399, 200}, 1200);
	EXPECT_TRUE(e.needs_cgroups()); // and differ
	e.remove(3);
	EXPECT_FALSE(e.needs_cgroups());
	e.real_smt = true; // real SMT threads: the lighter one may be held back
	EXPECT_TRUE(e.needs_cgroups());
	e.real_smt = false;
	e.s.mode = Mode::SmtEmul; // the emulation always throttles
	EXPECT_TRUE(e.needs_cgroups());
}

TEST(WeightMode, MoreRanksThanCpusPlacedByMeasuredLoad)
{
	// Ranks 0 and 1 heavy, 2 and 3 light: rank order alone would put both
	// heavy ranks on one CPU.
	Engine e = weight_engine(4, {0, 1});
	for (int p = 1; p <= 4; p++)
		EXPECT_EQ(e.find(p)->cpu, -1); // loads unknown: the kernel places them
	EXPECT_FALSE(e.needs_cgroups());       // and no weights yet
	barrier(e, 0, {399, 399, 100, 100}, {399, 399, 100, 100}, 400);
	EXPECT_FALSE(e.needs_cgroups()) << "one iteration is not a window";
	barrier(e, 1, {399, 399, 100, 100}, {399, 399, 100, 100}, 800);
	EXPECT_TRUE(e.needs_cgroups());
	EXPECT_NE(e.find(1)->cpu, e.find(2)->cpu);
	EXPECT_NE(e.find(3)->cpu, e.find(4)->cpu);
	EXPECT_GE(e.find(1)->cpu, 0);
	const int cpu1 = e.find(1)->cpu;
	// Noise does not move anybody: placement changes only when it gains >10 %.
	barrier(e, 2, {399, 380, 110, 100}, {399, 380, 110, 100}, 1200);
	EXPECT_EQ(e.find(1)->cpu, cpu1);
	// The loads move (ranks 0 and 2 heavy, both on one CPU now): once the
	// window says so, they go to different CPUs.
	barrier(e, 3, {399, 100, 399, 100}, {399, 100, 399, 100}, 1600);
	barrier(e, 4, {399, 100, 399, 100}, {399, 100, 399, 100}, 2000);
	EXPECT_NE(e.find(1)->cpu, e.find(3)->cpu);
	EXPECT_NE(e.find(2)->cpu, e.find(4)->cpu);
	// Loads within 50 % of each other, and once weighing within 25 %:
	// nothing to gain, the kernel places them, without weights.
	barrier(e, 5, {300, 400, 310, 300}, {300, 400, 310, 300}, 2400);
	barrier(e, 6, {300, 400, 310, 300}, {300, 400, 310, 300}, 2800);
	EXPECT_TRUE(e.needs_cgroups()) << "a third apart: still weighing";
	barrier(e, 7, {300, 360, 310, 300}, {300, 360, 310, 300}, 3200);
	barrier(e, 8, {300, 360, 310, 300}, {300, 360, 310, 300}, 3600);
	for (int p = 1; p <= 4; p++)
		EXPECT_EQ(e.find(p)->cpu, -1) << p;
	EXPECT_FALSE(e.needs_cgroups());
	// A third apart again: not enough to start weighing.
	barrier(e, 9, {300, 400, 310, 300}, {300, 400, 310, 300}, 4000);
	barrier(e, 10, {300, 400, 310, 300}, {300, 400, 310, 300}, 4400);
	EXPECT_FALSE(e.needs_cgroups());
	// A new rank: loads unknown again, the kernel places everyone.
	e.add(5, "r", "j", 4, 0);
	EXPECT_EQ(e.find(1)->cpu, -1);
}

TEST(WeightMode, StartsAndStopsOnlyOnLoadsThatHold)
{
	// Four balanced ranks on two CPUs, 400 ms iterations, a window of 5.
	Engine e = weight_engine(4, {0, 1});
	e.s.window = 5;
	e.s.hold_ms = 1000;
	uint64_t i = 0;
	auto step = [&](std::vector<uint64_t> cpu) {
		barrier(e, i, {200, 200, 200, 200}, cpu, 400 * (i + 1));
		i++;
	};
	while (i < 5)
		step({100, 100, 100, 100});
	EXPECT_FALSE(e.needs_cgroups());
	// Ranks 0 and 1 on a vCPU that runs slower for 5 iterations: a whole
	// window, but not for the hold. Nobody is weighed.
	while (i < 10) {
		step({180, 180, 100, 100});
		EXPECT_FALSE(e.needs_cgroups()) << "iteration " << i;
	}
	EXPECT_EQ(e.loads, (std::vector<uint64_t>{180 * ms, 180 * ms, 100 * ms, 100 * ms}));
	// One iteration cut short is not a rank's load.
	step({100, 100, 1, 100});
	EXPECT_EQ(e.loads[2], 100 * ms);
	while (i < 16) {
		step({100, 100, 100, 100});
		EXPECT_FALSE(e.needs_cgroups()) << "iteration " << i;
	}
	// Ranks 0 and 1 three times as heavy from now on: once the lower
	// quartile of their windows says so (4 iterations), and the hold has
	// passed (3 more), weighed.
	for (int k = 0; k < 6; k++) {
		step({300, 300, 100, 100});
		EXPECT_FALSE(e.needs_cgroups()) << "iteration " << i;
	}
	step({300, 300, 100, 100});
	EXPECT_TRUE(e.needs_cgroups());
	EXPECT_NE(e.find(1)->cpu, e.find(2)->cpu);
	// Balanced again: weighed until that has held for the hold too.
	for (int k = 0; k < 4; k++) {
		step({100, 100, 100, 100});
		EXPECT_TRUE(e.needs_cgroups()) << "iteration " << i;
	}
	step({100, 100, 100, 100});
	EXPECT_FALSE(e.needs_cgroups());
	for (int p = 1; p <= 4; p++)
		EXPECT_EQ(e.find(p)->cpu, -1) << p;
	// After a stop, the next start holds twice as long (4 + 5 iterations).
	for (int k = 0; k < 8; k++) {
		step({300, 300, 100, 100});
		EXPECT_FALSE(e.needs_cgroups()) << "iteration " << i;
	}
	step({300, 300, 100, 100});
	EXPECT_TRUE(e.needs_cgroups());
}

TEST(WeightMode, RanksSampledFromProcAreNeverWeighed)
{
	// Four ranks on two CPUs adopted without the monitor (iterations from
	// /proc, where a polling wait looks like work): loads that seem to
	// differ 4x move nobody.
	Engine e;
	e.s.mode = Mode::Weight;
	e.s.window = 2;
	e.s.hold_ms = 0;
	e.cpus = {0, 1};
	for (int p = 1; p <= 4; p++)
		e.add(p, "r", "j", -1, 0);
	const std::vector<uint64_t> run{400, 400, 100, 100};
	for (uint64_t i = 0; i < 4; i++)
		for (int p = 1; p <= 4; p++) {
			const uint64_t start = i * 1000 * ms;
			e.sleep(p, start + run[p - 1] * ms);
			EXPECT_TRUE(e.wakeup(p, start + 1000 * ms)) << p;
		}
	EXPECT_EQ(e.find(1)->win.size(), 2u);
	EXPECT_FALSE(e.needs_cgroups());
	for (int p = 1; p <= 4; p++)
		EXPECT_EQ(e.find(p)->cpu, -1) << p;
	// The monitor says hello: what /proc showed is forgotten, and the
	// monitored iterations alone weigh the ranks.
	for (int p = 1; p <= 4; p++) {
		e.start_monitored(*e.find(p), 4000 * ms);
		EXPECT_TRUE(e.find(p)->monitored);
		EXPECT_TRUE(e.find(p)->win.empty()) << p;
	}
	barrier(e, 0, {399, 399, 100, 100}, {399, 399, 100, 100}, 4400);
	EXPECT_FALSE(e.needs_cgroups()) << "one monitored iteration is not a window";
	barrier(e, 1, {399, 399, 100, 100}, {399, 399, 100, 100}, 4800);
	EXPECT_TRUE(e.needs_cgroups());
	EXPECT_NE(e.find(1)->cpu, e.find(2)->cpu);
}

TEST(WeightMode, AnIterationClosedLateIsNotALoad)
{
	// Four balanced ranks on two CPUs. The last at a barrier may wait too
	// little to end its iteration: its next record closes two, twice the
	// work. Its load is the same; nobody is weighed or pinned.
	Engine e = weight_engine(4, {0, 1});
	e.s.window = 5;
	for (uint64_t i = 0; i < 4; i++)
		barrier(e, i, {200, 200, 200, 200}, {100, 100, 100, 100}, 400 * (i + 1));
	EXPECT_FALSE(e.needs_cgroups());
	auto r = rec(1, 0, 4, 600 * ms, 200 * ms, 2400 * ms); // iterations 4 and 5
	r.cpu_ns = 200 * ms;
	e.record(r);
	for (int p = 2; p <= 4; p++) {
		r = rec(p, p - 1, 4, 200 * ms, 200 * ms, 2000 * ms);
		r.cpu_ns = 100 * ms;
		e.record(r);
	}
	EXPECT_FALSE(e.needs_cgroups());
	for (int p = 1; p <= 4; p++) {
		EXPECT_EQ(e.find(p)->cpu, -1) << p;
		EXPECT_EQ(e.find(p)->weight, 100u) << p;
	}
	// Two records that hpcd joins (the first one's wait, 50 us, is below
	// min_wait): one iteration of the core, two of the program, the work
	// of one each.
	const uint64_t us = 1000;
	for (uint64_t i = 5; i < 10; i++) {
		const uint64_t t0 = 2400 * ms + (i - 5) * 400 * ms;
		r = rec(1, 0, 2 * i, 200 * ms - 50 * us, 50 * us, t0 + 200 * ms);
		r.cpu_ns = 100 * ms;
		e.record(r);
		r = rec(1, 0, 2 * i + 1, 100 * ms, 100 * ms, t0 + 400 * ms);
		r.cpu_ns = 100 * ms;
		e.record(r);
		for (int p = 2; p <= 4; p++) {
			r = rec(p, p - 1, i, 200 * ms, 200 * ms, t0 + 400 * ms);
			r.cpu_ns = 100 * ms;
			e.record(r);
		}
	}
	EXPECT_EQ(e.find(1)->t.nr_iter, 10u) << "the 50 us waits ended no iteration";
	EXPECT_EQ(e.find(1)->weight, 100u);
	EXPECT_FALSE(e.needs_cgroups());
}

// Four balanced ranks on two CPUs, rank 1's records each hold @phases of
// the program's iterations (its waits were shorter than the monitor's min
// wait): twice the CPU time of the others' per record.
static bool weighed_with_phases(uint32_t phases)
{
	Engine e = weight_engine(4, {0, 1});
	e.s.window = 5;
	for (uint64_t i = 0; i < 6; i++) {
		const uint64_t end = 400 * (i + 1) * ms;
		auto r = rec(1, 0, i, 399 * ms, 1 * ms, end);
		r.cpu_ns = 200 * ms;
		r.phases = phases;
		e.record(r);
		for (int p = 2; p <= 4; p++) {
			r = rec(p, p - 1, i, 200 * ms, 200 * ms, end);
			r.cpu_ns = 100 * ms;
			e.record(r);
		}
	}
	return e.needs_cgroups();
}

TEST(WeightMode, PhasesTheMonitorJoinedAreNotALoad)
{
	EXPECT_FALSE(weighed_with_phases(2)) << "two phases of 100 ms: the others' load";
	EXPECT_TRUE(weighed_with_phases(1)) << "one phase of 200 ms: twice the others' load";
	EXPECT_TRUE(weighed_with_phases(0)) << "0 (an older monitor) is one phase";
}

TEST(WeightMode, WeightsFollowCpuWorkNotTheirOwnEffect)
{
	// Heavy and light rank on one CPU. With equal weights the light rank
	// computes 500 ms of CPU in 1000 ms, the heavy one 2000 in 3500; with
	// weights 1:4 both compute for 2500 ms. Weights from wall time would
	// then fall back to 1:1 (and the imbalance return); from CPU time they
	// stay.
	Engine e = weight_engine(2, {0});
	auto w = [&](int pid) { return e.find(pid)->weight; };
	barrier(e, 0, {100, 350}, {50, 200}, 400); // (times in tens of ms)
	EXPECT_EQ(w(1), 40u);
	EXPECT_EQ(w(2), 160u);
	for (uint64_t i = 1; i < 6; i++) {
		barrier(e, i, {250, 250}, {50, 200}, 400 * (i + 1));
		EXPECT_EQ(w(1), 40u) << i;
		EXPECT_EQ(w(2), 160u) << i;
	}
	// Without the CPU time (an older monitor, /proc sampling) the compute
	// time stands in.
	auto r = rec(1, 0, 6, 300 * ms, 100 * ms, 2800 * ms);
	e.record(r);
	r = rec(2, 1, 6, 100 * ms, 300 * ms, 2800 * ms);
	e.record(r);
	// windows: rank 1 {50, 300} mean 175, rank 2 {200, 100} mean 150.
	EXPECT_EQ(w(1), 108u);
	EXPECT_EQ(w(2), 92u);
}

TEST(WeightMode, Algorithm1SlidingWindow)
{
	// Two CPUs, four ranks, barrier-synchronised, every rank reporting its
	// own iterations (the rank on the critical path waits 1 ms).
	Engine e = weight_engine(4, {0, 1});
	auto w = [&](int pid) { return e.find(pid)->weight; };
	auto it = [&](uint64_t i, const std::vector<uint64_t> &run, uint64_t end) {
		barrier(e, i, run, run, end);
	};
	// Iteration 0: until every rank has reported, weights stay.
	e.record(rec(1, 0, 0, 100 * ms, 300 * ms, 400 * ms));
	e.record(rec(2, 1, 0, 399 * ms, 1 * ms, 400 * ms));
	e.record(rec(3, 2, 0, 200 * ms, 200 * ms, 400 * ms));
	EXPECT_EQ(w(1), 100u);
	EXPECT_EQ(w(4), 100u);
	e.record(rec(4, 3, 0, 399 * ms, 1 * ms, 400 * ms));
	// All reported: exeT 100, 399, 200, 399 of 1098; 4 x 100 units.
	EXPECT_EQ(w(1), 36u);
	EXPECT_EQ(w(2), 145u);
	EXPECT_EQ(w(3), 73u);
	EXPECT_EQ(w(4), 145u);
	// Iteration 1: a 300, b 399, c 100, d 399: window means 200, 399, 150, 399.
	it(1, {300, 399, 100, 399}, 800);
	EXPECT_EQ(w(1), 70u);
	EXPECT_EQ(w(2), 139u);
	EXPECT_EQ(w(3), 52u);
	EXPECT_EQ(w(4), 139u);
	// Iteration 2: iteration 0 leaves the window (a 399, b 100, c 200, d 399).
	it(2, {399, 100, 200, 399}, 1200);
	EXPECT_EQ(w(1), 122u);
	EXPECT_EQ(w(2), 87u);
	EXPECT_EQ(w(3), 52u);
	EXPECT_EQ(w(4), 139u);
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1); // no quotas in weight mode
}

TEST(RealSmt, OnlyTheLighterThreadIsHeldBack)
{
	// The core's model (hpc_smt_real_duty): equal priorities, no throttle.
	EXPECT_EQ(real_smt_quota(4, 4, true, 10000), (Quota{-1, 10000}));
	EXPECT_EQ(real_smt_quota(6, 4, true, 10000), (Quota{-1, 10000}));
	EXPECT_EQ(real_smt_quota(4, 6, true, 10000),
		  (Quota{10 * static_cast<int64_t>(hpc_smt_real_duty(4, 6)), 10000}));
	EXPECT_EQ(real_smt_quota(4, 6, false, 10000), (Quota{-1, 10000})); // sibling idle
	// Below CFS's 1 ms: clamped; a longer period keeps the duty exact.
	EXPECT_EQ(real_smt_quota(1, 6, true, 10000).quota_us, 1000);
	EXPECT_EQ(real_smt_quota(1, 6, true, 100000).quota_us,
		  100 * static_cast<int64_t>(hpc_smt_real_duty(1, 6)));
}

TEST(RealSmt, WeightModeOnHardwareThreads)
{
	Engine e = weight_engine(2, {0, 4}); // CPUs 0 and 4: threads of one core
	e.real_smt = true;
	e.place();
	e.find(1)->static_prio = 4;
	e.find(2)->static_prio = 6;
	e.plan();
	EXPECT_EQ(e.find(1)->cpu, 0);
	EXPECT_EQ(e.find(2)->cpu, 4);
	EXPECT_EQ(e.thread_sibling(*e.find(1))->pid, 2);
	EXPECT_EQ(e.find(1)->quota, real_smt_quota(4, 6, true, e.s.period_us));
	EXPECT_GT(e.find(1)->quota.quota_us, 0);
	EXPECT_EQ(e.find(2)->quota.quota_us, -1); // the heavier thread: never
	e.live(2, false); // the heavy thread waits: the light one runs alone
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1);
	// Not real SMT (or more ranks than threads): no quota at all.
	e.live(2, true);
	e.real_smt = false;
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1);
	e.real_smt = true;
	e.add(3, "r", "j", 2, 0);
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1);
}

TEST(Engine, FixedPriorityHeldInTheBaseline)
{
	// The baseline (balance=off) holds every task at normal, but a fixed
	// priority stays fixed: the static way of the reproductions.
	Engine e;
	e.s.mode = Mode::SmtEmul;
	e.s.balance = false;
	e.cpus = {0, 1};
	e.add(1, "a", "d", -1, 0).static_prio = 6;
	e.add(2, "b", "d", -1, 0);
	e.live(1, true);
	e.live(2, true);
	e.plan();
	EXPECT_EQ(e.applied_prio(*e.find(1)), 6u);
	EXPECT_EQ(e.applied_prio(*e.find(2)), 4u);
	EXPECT_EQ(e.find(1)->t.prio, 6u); // where its sibling sees it
	EXPECT_EQ(e.find(1)->quota, smt_quota(6, 4, HPC_SMT_SIB_BUSY, e.s.period_us, e.dilation()));
}
