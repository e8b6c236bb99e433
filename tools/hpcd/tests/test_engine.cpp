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
	// (4,6): the table of sched-hpc-policy.rst gives 175 and 700 permille.
	ASSERT_EQ(hpc_smt_speed(4, 6, true), 175u);
	ASSERT_EQ(hpc_smt_speed(6, 4, true), 700u);
	EXPECT_EQ(smt_quota(4, 6, true, true, 10000, 1), (Quota{1750, 10000}));
	EXPECT_EQ(smt_quota(6, 4, true, true, 10000, 1), (Quota{7000, 10000}));
	EXPECT_EQ(smt_quota(4, 4, true, true, 10000, 1), (Quota{6000, 10000}));
	for (uint32_t a = 1; a <= 6; a++)
		for (uint32_t b = 1; b <= 6; b++) {
			auto q = smt_quota(a, b, true, true, 100000, 1);
			int64_t want = std::max<int64_t>(1000, 100 * hpc_smt_speed(a, b, true));
			EXPECT_EQ(q.quota_us, want) << a << "," << b;
		}
}

TEST(SmtQuota, UnthrottledWhenAloneOrSiblingWaits)
{
	EXPECT_EQ(smt_quota(4, 6, true, false, 10000, 1).quota_us, -1);
	EXPECT_EQ(smt_quota(4, 0, false, false, 10000, 1).quota_us, -1);
}

TEST(Engine, PollingWaitsKeepASleepingSiblingBusy)
{
	Engine e;
	e.cpus = {0, 1};
	e.add(10, "light", "d", -1, 0);
	e.add(20, "heavy", "d", -1, 0);
	e.live(10, false); // the light context waits, asleep
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, -1); // single-thread mode
	EXPECT_EQ(e.find(10)->quota.quota_us, 6000);
	e.s.waits = Waits::Poll; // the emulated context polls while it waits
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, 6000); // (4,4): 600 permille
	EXPECT_EQ(e.find(10)->quota.quota_us, 6000);
	e.remove(10); // no sibling at all: alone on the core, whatever the waits
	e.plan();
	EXPECT_EQ(e.find(20)->quota.quota_us, -1);
}

TEST(SmtQuota, DilationKeepsRatios)
{
	// Two contexts per CPU: period doubles, quotas stay, alone = 1/2 CPU.
	EXPECT_EQ(smt_quota(4, 6, true, true, 10000, 2), (Quota{1750, 20000}));
	EXPECT_EQ(smt_quota(6, 4, true, true, 10000, 2), (Quota{7000, 20000}));
	EXPECT_EQ(smt_quota(6, 4, true, false, 10000, 2), (Quota{10000, 20000}));
}

TEST(SmtQuota, KernelMinimumQuota)
{
	// d = 5: 21 permille of 10 ms is below CFS's 1 ms minimum.
	EXPECT_EQ(smt_quota(1, 6, true, true, 10000, 1).quota_us, 1000);
	EXPECT_EQ(smt_quota(1, 6, true, true, 100000, 1).quota_us, 2100);
}

TEST(Engine, PairsInOrderAndPlacesOnCpus)
{
	Engine e;
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
	// 4 contexts on 2 CPUs: ctx i on cpus[i % 2], two per CPU.
	EXPECT_EQ(e.find(12)->cpu, 0);
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
	EXPECT_EQ(h.quota.quota_us, 7000);
	EXPECT_EQ(l.quota.quota_us, 1750);
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
	// judged when its sibling closes an iteration (hpc_task_sibling_judge):
	// busy (100 %) next to a low sibling, one step up; nothing closes.
	Engine e;
	e.add(1, "busy", "d", -1, 0);
	e.add(2, "light", "d", -1, 0);
	e.sleep(2, 250 * ms);
	EXPECT_TRUE(e.wakeup(2, 1000 * ms));
	EXPECT_EQ(e.find(1)->t.nr_iter, 0u);
	EXPECT_EQ(e.find(1)->t.nr_judged, 1u);
	EXPECT_EQ(e.find(1)->t.heur_util, 10000u);
	EXPECT_EQ(e.find(1)->t.prio, 5u);
	// A monitored rank silent for more than two sibling iterations too.
	Engine m;
	m.add(1, "r0", "j", 0, 0);
	m.add(2, "r1", "j", 1, 0);
	m.record(rec(2, 1, 0, 250 * ms, 750 * ms, 1000 * ms));
	EXPECT_TRUE(m.find(2)->pending); // r0 may still report this barrier
	m.flush(30 * ms, 20 * ms);       // it did not
	EXPECT_FALSE(m.find(2)->pending);
	EXPECT_EQ(m.find(2)->t.nr_iter, 1u);
	EXPECT_EQ(m.find(1)->t.nr_judged, 0u); // it may still report
	m.record(rec(2, 1, 1, 250 * ms, 750 * ms, 2000 * ms));
	m.record(rec(2, 1, 2, 250 * ms, 750 * ms, 3000 * ms)); // applies the held one
	m.flush(100 * ms, 20 * ms);
	EXPECT_EQ(m.find(2)->t.nr_iter, 3u);
	EXPECT_EQ(m.find(1)->t.nr_iter, 0u);
	EXPECT_EQ(m.find(1)->t.nr_judged, 1u);
}

TEST(Engine, ProcEventsCloseIterations)
{
	Engine e;
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

TEST(WeightMode, Algorithm1SlidingWindow)
{
	// Two emulated cores, barrier-synchronised, every rank reporting its own
	// iterations (the rank on the critical path waits 1 ms at the barrier).
	Engine e;
	e.s.mode = Mode::Weight;
	e.s.window = 2;
	e.s.wait_weight = 10;
	e.cpus = {0, 1};
	e.add(1, "a", "j", 0, 0);
	e.add(2, "b", "j", 1, 0);
	e.add(3, "c", "j", 2, 0);
	e.add(4, "d", "j", 3, 0);
	// Both contexts of a core share one CPU in weight mode.
	EXPECT_EQ(e.find(1)->cpu, 0);
	EXPECT_EQ(e.find(2)->cpu, 0);
	EXPECT_EQ(e.find(3)->cpu, 1);
	auto w = [&](int pid) { return e.find(pid)->weight; };
	auto it = [&](int i, const int(&run)[4], uint64_t end) {
		for (int k = 0; k < 4; k++)
			e.record(rec(k + 1, k, i, run[k] * ms, (400 - run[k]) * ms, end * ms));
	};

	// Iteration 0 (0..400 ms): a 100, b 399, c 200, d 399 of compute.
	e.record(rec(1, 0, 0, 100 * ms, 300 * ms, 400 * ms));
	EXPECT_TRUE(e.find(1)->pending); // held until its sibling's record
	EXPECT_EQ(w(1), 100u);
	e.record(rec(2, 1, 0, 399 * ms, 1 * ms, 400 * ms));
	EXPECT_FALSE(e.find(1)->pending);
	EXPECT_EQ(w(1), 10u); // reported, the others have not: waitValue
	EXPECT_EQ(w(2), 10u);
	e.record(rec(3, 2, 0, 200 * ms, 200 * ms, 400 * ms));
	EXPECT_EQ(w(4), 100u);
	e.record(rec(4, 3, 0, 399 * ms, 1 * ms, 400 * ms));
	// All reported: exeT 100, 399, 200, 399 of 1098; 4 x 100 units.
	EXPECT_EQ(w(1), 36u);
	EXPECT_EQ(w(2), 145u);
	EXPECT_EQ(w(3), 73u);
	EXPECT_EQ(w(4), 145u);

	// Iteration 1 (400..800): a 300, b 399, c 100, d 399.
	it(1, {300, 399, 100, 399}, 800);
	// windows 400, 798, 300, 798 of 2296
	EXPECT_EQ(w(1), 70u);
	EXPECT_EQ(w(2), 139u);
	EXPECT_EQ(w(3), 52u);
	EXPECT_EQ(w(4), 139u);

	// Iteration 2 (800..1200): the load moves to a; iteration 0 leaves
	// the window. a 399, b 100, c 200, d 399.
	it(2, {399, 100, 200, 399}, 1200);
	// windows 699, 499, 300, 798 of 2296
	EXPECT_EQ(w(1), 122u);
	EXPECT_EQ(w(2), 87u);
	EXPECT_EQ(w(3), 52u);
	EXPECT_EQ(w(4), 139u);
	// No quotas in weight mode.
	e.plan();
	EXPECT_EQ(e.find(1)->quota.quota_us, -1);
}
