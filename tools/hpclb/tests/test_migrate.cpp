// Container migration plan (Zhao et al. §IV, Algorithm 2): psi/LIP, hand
// cases, the cost rule, determinism, bad input.
#include "hpclb/hpclb.hpp"

#include <gtest/gtest.h>

using namespace hpclb;

TEST(Migrate, PsiAndLip)
{
	auto p = psi({2, 4, 6}); // ALM = 4
	EXPECT_EQ(p, (std::vector<double>{2, 0, 2}));
	EXPECT_DOUBLE_EQ(lip({2, 4, 6}), 1); // 2/2
	EXPECT_DOUBLE_EQ(lip({3, 3}), 0);
	EXPECT_THROW(psi({}), Error);
	EXPECT_THROW(psi({1, -1}), Error);
}

TEST(Migrate, HandCase)
{
	// Host 0: four containers of 1 s; host 1: one; host 2: none. The window
	// is the longest host's time, 4 s: vmload 1/4 each; usage 1, 1/4, 0;
	// average 5/12. Host 0 offers a, b, c (the smallest, ties by id) until
	// it is down to 1/4 <= 5/12. rest = 0, 3/4, 1 (avg 7/12).
	// a -> host 1: 3/4 - 1/4 = 1/2 > 7/12? no. a -> host 2: 3/4 > 7/12: yes.
	// Then avg rest = 1/2: b, c fit nowhere (1/2 > 1/2 is false): kept.
	std::vector<Host> h{{1, 4, 1}, {1, 1, 1}, {1, 0, 1}};
	std::vector<Container> c{
		{10, 0, 1, 0}, {11, 0, 1, 0}, {12, 0, 1, 0}, {13, 0, 1, 0}, {20, 1, 1, 0}};
	auto plan = migration_plan(h, c);
	EXPECT_EQ(plan.usage, (std::vector<double>{1, 0.25, 0}));
	EXPECT_DOUBLE_EQ(plan.average_usage, 5.0 / 12);
	ASSERT_EQ(plan.moves.size(), 1u);
	EXPECT_EQ(plan.moves[0], (Move{10, 0, 2}));
	EXPECT_EQ(plan.kept, (std::vector<int64_t>{11, 12}));
	// Deterministic: the same plan for the same input.
	auto again = migration_plan(h, c);
	EXPECT_EQ(again.moves, plan.moves);
}

TEST(Migrate, EcuNormalisesExecutionTime)
{
	// Host 1 is half as fast (0.5 ECU): its container took twice as long,
	// vmload = 2 * 0.5 / 2 = 0.5, the same as host 0's 1 * 1 / 2.
	std::vector<Host> h{{1, 1, 0}, {0.5, 2, 0}};
	auto plan = migration_plan(h, {{1, 0, 1, 0}, {2, 1, 2, 0}});
	EXPECT_DOUBLE_EQ(plan.usage[0], 0.5);
	EXPECT_DOUBLE_EQ(plan.usage[1], 1.0);
}

TEST(Migrate, MovesOnlyWhenImbalanceExceedsCost)
{
	std::vector<Container> c{
		{10, 0, 1, 1000000}, {11, 0, 1, 0}, {12, 0, 1, 0}, {13, 0, 1, 0}, {20, 1, 1, 0}};
	// Container 10 has 1 MB: lambda = 0.1 s at 10 MB/s.
	std::vector<Host> h{{1, 4, 1}, {1, 1, 1}, {1, 0, 0.05}};
	auto plan = migration_plan(h, c);
	// psi_2 = 0.05 s < 0.1 s: container 10 stays, the free 11 goes instead.
	ASSERT_EQ(plan.moves.size(), 1u);
	EXPECT_EQ(plan.moves[0], (Move{11, 0, 2}));
	h[2].psi = 0.2; // the imbalance has accumulated
	// vmload 1/4, norm(0.1 s) = 0.1 / 4: 10 -> 2 (rest 0.725 > 7/12), then
	// the average rest has dropped (the source's rest is not updated, line
	// 30): 11 -> 1 (0.5 > 1.475/3) and 12 -> 2 (0.475 > 1.225/3).
	const std::vector<Move> all{{10, 0, 2}, {11, 0, 1}, {12, 0, 2}};
	plan = migration_plan(h, c);
	EXPECT_EQ(plan.moves, all);
	// A faster dump makes container 10 cheap enough again (0.01 s < 0.05 s).
	h[2].psi = 0.05;
	plan = migration_plan(h, c, {100e6});
	EXPECT_EQ(plan.moves, all);
	// psi 0 everywhere: no move is worth its cost.
	for (auto &x : h)
		x.psi = 0;
	EXPECT_TRUE(migration_plan(h, c).moves.empty());
}

TEST(Migrate, ManyContainersPerHost)
{
	// 128 containers per host (an over-decomposed job): host 1 has half the
	// ECUs, so its containers take 2 s against host 0's 1 s. The window is
	// the longest host's time, 256 s: every container's vmload is 1/256
	// (the same work), the hosts' loads 0.5 and 0.5 ECU, usage 0.5 and 1,
	// average 0.75. Host 1 offers its containers until it is down to 0.75:
	// 32 of them, and host 0's rest capacity (0.5) takes them all. The
	// literal max(exeT[]) (2 s, one container) would put each host at 64
	// ECUs and move nothing.
	std::vector<Host> h{{1, 128, 1}, {0.5, 256, 1}};
	std::vector<Container> c;
	for (int k = 0; k < 128; k++) {
		c.push_back({k, 0, 1, 0});
		c.push_back({1000 + k, 1, 2, 0});
	}
	auto plan = migration_plan(h, c);
	EXPECT_DOUBLE_EQ(plan.usage[0], 0.5);
	EXPECT_DOUBLE_EQ(plan.usage[1], 1.0);
	ASSERT_EQ(plan.moves.size(), 32u);
	for (size_t k = 0; k < plan.moves.size(); k++)
		EXPECT_EQ(plan.moves[k], (Move{1000 + static_cast<int64_t>(k), 1, 0}));
	EXPECT_TRUE(plan.kept.empty());
	// The slower host's time falls from 256 s to 96 x 2 = 192 s; host 0's
	// rises to 160 s.
}

TEST(Migrate, BalancedMovesNothing)
{
	auto plan = migration_plan({{1, 1, 1}, {1, 1, 1}}, {{1, 0, 1, 0}, {2, 1, 1, 0}});
	EXPECT_TRUE(plan.moves.empty());
	EXPECT_TRUE(plan.kept.empty());
}

TEST(Migrate, BadInput)
{
	EXPECT_THROW(migration_plan({}, {}), Error);
	EXPECT_THROW(migration_plan({{0, 0, 0}}, {}), Error);              // no capacity
	EXPECT_THROW(migration_plan({{1, 0, -1}}, {}), Error);             // negative psi
	EXPECT_THROW(migration_plan({{1, 0, 0}}, {{1, 1, 1, 0}}), Error);  // unknown host
	EXPECT_THROW(migration_plan({{1, 0, 0}}, {{1, 0, -1, 0}}), Error); // negative time
	EXPECT_THROW(migration_plan({{1, 0, 0}}, {{1, 0, 1, 0}, {1, 0, 1, 0}}), Error);
	EXPECT_THROW(migration_plan({{1, 0, 0}}, {}, {0}), Error);
}
