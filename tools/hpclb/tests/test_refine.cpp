// Cloud-aware refinement (Gupta et al. §IV, Algorithm 1): hand cases, the
// receiver rule, determinism, bad input.
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>

using namespace hpclb;

TEST(Refine, HandCase)
{
	// VCPU 0 holds 4, 3, 2, 1 ticks; VCPU 1 nothing. Tk_avg = 5.
	std::vector<Task> t{{1, 4, 0, 0}, {2, 3, 0, 0}, {3, 2, 0, 0}, {4, 1, 0, 0}};
	auto r = refine({{1, 0}, {1, 0}}, t, 0.5);
	EXPECT_DOUBLE_EQ(r.avg, 5);
	EXPECT_DOUBLE_EQ(r.imbalance_before, 2);
	// First the largest task that fits (4 <= 5 - 0), then 1 <= 5 - 4.
	EXPECT_EQ(r.proc, (std::vector<int>{1, 0, 0, 1}));
	EXPECT_EQ(r.moves, 2u);
	EXPECT_DOUBLE_EQ(r.imbalance_after, 1);
}

TEST(Refine, TicksFollowFrequency)
{
	// VCPU 0 twice as fast: its 4 tasks of 1 s are 2 ticks each (8 ticks).
	// Shares by speed: 8 * 2/3 and 8 * 1/3 ticks. One task (2 <= 2.67)
	// moves; a second would overload VCPU 1 (4 > 2.67): 6 and 2 ticks,
	// 3 s and 2 s, against 4 s and 0 s before (8/3 s on average).
	std::vector<Task> t{{1, 1, 0, 0}, {2, 1, 0, 0}, {3, 1, 0, 0}, {4, 1, 0, 0}};
	auto r = refine({{2, 0}, {1, 0}}, t, 0);
	EXPECT_DOUBLE_EQ(r.avg, 4);
	EXPECT_NEAR(r.target[0], 16.0 / 3, 1e-12);
	EXPECT_NEAR(r.target[1], 8.0 / 3, 1e-12);
	EXPECT_EQ(std::count(r.proc.begin(), r.proc.end(), 1), 1);
	EXPECT_DOUBLE_EQ(r.load[0], 6);
	EXPECT_DOUBLE_EQ(r.load[1], 2);
	EXPECT_NEAR(r.imbalance_before, 4 / (8.0 / 3), 1e-12);
	EXPECT_NEAR(r.imbalance_after, 3 / (8.0 / 3), 1e-12);
	// Tasks measured on the slow VCPU keep their ticks (2 s there are 2
	// ticks): of 6 ticks the fast VCPU's share is 4, two tasks move.
	auto back = refine({{2, 0}, {1, 0}}, {{1, 2, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}}, 0);
	EXPECT_EQ(back.moves, 2u);
	EXPECT_DOUBLE_EQ(back.load[0], 4);
}

TEST(Refine, BackgroundLoad)
{
	EXPECT_DOUBLE_EQ(background_load(10, 6, 1), 3); // Eq. 2
	EXPECT_DOUBLE_EQ(background_load(10, 8, 3), 0); // never negative
	EXPECT_THROW(background_load(-1, 0, 0), Error);
	// VCPU 1 has 2 s of someone else's work: one of VCPU 0's tasks moves.
	std::vector<Task> t{{1, 1, 0, 0}, {2, 1, 0, 0}, {3, 1, 0, 0}, {4, 1, 0, 0}};
	auto r = refine({{1, 0}, {1, 2}}, t, 0);
	EXPECT_DOUBLE_EQ(r.avg, 3);
	EXPECT_EQ(r.moves, 1u);
	EXPECT_DOUBLE_EQ(r.load[1], 3);
}

TEST(Refine, WithinEpsilonNothingMoves)
{
	std::vector<Task> t{{1, 5.2, 0, 0}, {2, 4.8, 1, 0}};
	auto r = refine({{1, 0}, {1, 0}}, t, 0.5);
	EXPECT_EQ(r.moves, 0u);
	EXPECT_EQ(r.proc, (std::vector<int>{0, 1}));
}

TEST(Refine, TaskTooLargeStays)
{
	// One task of 10 ticks: moving it would overload the receiver.
	auto r = refine({{1, 0}, {1, 0}}, {{1, 10, 0, 0}}, 0);
	EXPECT_EQ(r.moves, 0u);
}

TEST(Refine, NeverOverloadsAReceiverAndIsDeterministic)
{
	std::mt19937_64 rng(7);
	for (int round = 0; round < 200; round++) {
		size_t P = 2 + rng() % 30, N = rng() % 400;
		double eps = (rng() % 100) / 50.0;
		std::vector<Vcpu> v(P);
		for (auto &x : v)
			x = {0.5 + (rng() % 100) / 40.0,
			     (rng() % 4 == 0) ? (rng() % 50) / 10.0 : 0};
		std::vector<Task> t(N);
		for (size_t i = 0; i < N; i++)
			t[i] = {static_cast<int64_t>(i * 3 + 1), (rng() % 1000) / 100.0,
				static_cast<int>(rng() % (P / 2 + 1)), 0};
		auto r = refine(v, t, eps);
		std::vector<double> before(P, 0);
		for (const auto &x : t)
			before[x.proc] += x.cpu_time * v[x.proc].freq;
		for (size_t p = 0; p < P; p++)
			before[p] += v[p].background * v[p].freq;
		std::vector<bool> received(P, false);
		for (size_t i = 0; i < N; i++)
			if (r.proc[i] != t[i].proc)
				received[r.proc[i]] = true;
		for (size_t p = 0; p < P; p++) {
			if (received[p]) {
				EXPECT_LE(r.load[p], r.target[p] + 1e-9)
					<< "receiver " << p << " overloaded";
			}
			// Load never grows on a VCPU that was above its share.
			if (before[p] > r.target[p]) {
				EXPECT_LE(r.load[p], before[p] + 1e-9);
			}
		}
		EXPECT_LE(r.imbalance_after, r.imbalance_before + 1e-12);
		auto again = refine(v, t, eps);
		EXPECT_EQ(again.proc, r.proc);
		// The input's order does not change the plan (ids are what count).
		auto shuffled = t;
		std::shuffle(shuffled.begin(), shuffled.end(), rng);
		auto s = refine(v, shuffled, eps);
		std::map<int64_t, int> a, b;
		for (size_t i = 0; i < N; i++) {
			a[t[i].id] = r.proc[i];
			b[shuffled[i].id] = s.proc[i];
		}
		EXPECT_EQ(a, b);
	}
}

TEST(Refine, BadInput)
{
	EXPECT_THROW(refine({}, {}, 0), Error);
	EXPECT_THROW(refine({{1, 0}}, {{1, 1, 3, 0}}, 0), Error);  // unknown VCPU
	EXPECT_THROW(refine({{0, 0}}, {}, 0), Error);              // frequency 0
	EXPECT_THROW(refine({{1, -1}}, {}, 0), Error);             // negative background
	EXPECT_THROW(refine({{1, 0}}, {{1, -1, 0, 0}}, 0), Error); // negative time
	EXPECT_THROW(refine({{1, 0}}, {{1, 1, 0, 0}, {1, 1, 0, 0}}, 0), Error); // same id
	EXPECT_THROW(refine({{1, 0}}, {}, -1), Error);
	EXPECT_THROW(speed_loop(0), Error);
	EXPECT_GT(speed_loop(1000), 0);
}
