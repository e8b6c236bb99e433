// SPDX-License-Identifier: GPL-2.0
// SIESTA proxy: the documented properties of the schedule.
#include "model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace siesta;

namespace
{

Params defaults(int ranks)
{
	Params p;
	p.ranks = ranks;
	return p;
}

} // namespace

TEST(Schedule, SameSeedSameScheduleOtherSeedOther)
{
	Schedule a(defaults(4)), b(defaults(4));
	Params q = defaults(4);
	q.seed = 2;
	Schedule c(q);
	int differ = 0;
	for (int i = 0; i < 40; i++)
		for (int f = 0; f < 24; f++)
			for (int r = 0; r < 4; r++) {
				EXPECT_EQ(a.units(i, f, r), b.units(i, f, r));
				EXPECT_EQ(a.msg_bytes(i, f, r), b.msg_bytes(i, f, r));
				differ += a.units(i, f, r) != c.units(i, f, r);
			}
	EXPECT_GT(differ, 40 * 24 * 4 / 2);
}

// Phase lengths: log-normal with mean phase_units x share x drift, so the
// mean over the run is near phase_units x share, with a wide spread.
TEST(Schedule, PhaseLengthDistribution)
{
	Params p = defaults(4);
	p.iterations = 200;
	p.drift_sigma = 0; // the phase spread alone
	Schedule s(p);
	auto share = default_shares(4);
	for (int r = 0; r < 4; r++) {
		double sum = 0, sq = 0;
		uint64_t mn = UINT64_MAX, mx = 0;
		int n = 0;
		for (int i = 0; i < p.iterations; i++)
			for (int f = 0; f < p.phases; f++) {
				double u = static_cast<double>(s.units(i, f, r));
				sum += u;
				sq += u * u;
				mn = std::min<uint64_t>(mn, s.units(i, f, r));
				mx = std::max<uint64_t>(mx, s.units(i, f, r));
				n++;
			}
		double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
		double want = p.phase_units * share[r];
		EXPECT_NEAR(mean, want, 0.05 * want) << r;
		// Coefficient of variation of a log-normal: sqrt(exp(sigma^2) - 1)
		// (0.31 at the default sigma 0.3).
		double cv = std::sqrt(std::exp(p.phase_sigma * p.phase_sigma) - 1);
		EXPECT_NEAR(sd / mean, cv, 0.05) << r;
		EXPECT_GT(static_cast<double>(mx) / mn, 3.0) << r;
	}
	// Without spread every phase of a rank is the same.
	p.phase_sigma = 0;
	Schedule flat(p);
	for (int f = 0; f < p.phases; f++)
		EXPECT_EQ(flat.units(3, f, 1), flat.units(0, 0, 1));
}

// The imbalance drifts: the per-iteration load ratios change from one
// iteration to the next, and which rank is the second heaviest changes.
TEST(Schedule, ImbalanceDriftsFromIterationToIteration)
{
	Params p = defaults(4);
	p.iterations = 100;
	Schedule s(p);
	int changed_order = 0;
	double max_rel_change = 0;
	auto order = [&](int i) {
		std::vector<int> o{0, 1, 2, 3};
		std::sort(o.begin(), o.end(), [&](int a, int b) {
			return s.iteration_units(i, a) > s.iteration_units(i, b);
		});
		return o;
	};
	for (int i = 1; i < p.iterations; i++) {
		changed_order += order(i) != order(i - 1);
		for (int r = 0; r < 4; r++) {
			double a = static_cast<double>(s.iteration_units(i - 1, r)),
			       b = static_cast<double>(s.iteration_units(i, r));
			max_rel_change = std::max(max_rel_change, std::fabs(b - a) / a);
		}
	}
	EXPECT_GT(changed_order, 10);
	EXPECT_GT(max_rel_change, 0.3);
	// Mean-reverting: over the run rank 0 (share 1) still carries the
	// most and rank 3 (share 0.2) the least.
	std::vector<double> tot(4, 0);
	for (int i = 0; i < p.iterations; i++)
		for (int r = 0; r < 4; r++)
			tot[r] += static_cast<double>(s.iteration_units(i, r));
	EXPECT_GT(tot[0], tot[1]);
	EXPECT_GT(tot[1], tot[3]);
	// ... and rank 0 stays the heaviest in most iterations (the paper's
	// SIESTA: one rank computes ~99 % of the time, the others' loads move).
	int heaviest0 = 0;
	for (int i = 0; i < p.iterations; i++)
		heaviest0 += order(i)[0] == 0;
	EXPECT_GT(heaviest0, p.iterations * 8 / 10);
	// No drift: every drift factor is 1.
	p.drift_sigma = 0;
	Schedule still(p);
	for (int i = 0; i < p.iterations; i++)
		EXPECT_EQ(still.drift(i, 2), 1.0);
}

TEST(Schedule, MessagePatternRingOfSmallMessages)
{
	Params p = defaults(4);
	Schedule s(p);
	EXPECT_EQ(s.neighbours(0), (std::vector<int>{3, 1}));
	EXPECT_EQ(s.neighbours(3), (std::vector<int>{2, 0}));
	std::set<int> sizes;
	for (int i = 0; i < p.iterations; i++)
		for (int f = 0; f < p.phases; f++)
			for (int r = 0; r < 4; r++) {
				int b = s.msg_bytes(i, f, r);
				EXPECT_GE(b, p.msg_min);
				EXPECT_LE(b, p.msg_max);
				EXPECT_EQ(b % 8, 0);
				EXPECT_EQ(b & (b - 1), 0) << b; // powers of two
				sizes.insert(b);
			}
	EXPECT_EQ(sizes.size(), 7u); // 64 .. 4096
	// 2 messages per phase per rank.
	EXPECT_EQ(s.messages_sent(1), 2u * p.iterations * p.phases);
	uint64_t b = 0;
	for (int i = 0; i < p.iterations; i++)
		for (int f = 0; f < p.phases; f++)
			b += 2u * s.msg_bytes(i, f, 1);
	EXPECT_EQ(s.bytes_sent(1), b);
	// Two ranks: one neighbour; one rank: none.
	Schedule two(defaults(2)), one(defaults(1));
	EXPECT_EQ(two.neighbours(0), (std::vector<int>{1}));
	EXPECT_TRUE(one.neighbours(0).empty());
	EXPECT_EQ(one.messages_sent(0), 0u);
}

TEST(Schedule, PayloadsDifferPerSenderIterationPhaseAndSlot)
{
	std::set<double> v;
	for (int src = 0; src < 3; src++)
		for (int i = 0; i < 3; i++)
			for (int f = 0; f < 3; f++)
				for (int k = 0; k < 3; k++)
					v.insert(payload(src, i, f, k));
	EXPECT_EQ(v.size(), 81u);
}

TEST(Params, BadValuesAreNamed)
{
	Params p = defaults(4);
	EXPECT_EQ(validate(p), "");
	p.shares = {1, 2};
	EXPECT_NE(validate(p).find("one share per rank"), std::string::npos);
	p.shares = {1, 2, 0, 1};
	EXPECT_NE(validate(p).find("shares"), std::string::npos);
	p = defaults(4);
	p.msg_min = 4;
	EXPECT_NE(validate(p).find("message sizes"), std::string::npos);
	p = defaults(4);
	p.drift_pull = 1.5;
	EXPECT_NE(validate(p).find("drift pull"), std::string::npos);
	p = defaults(0);
	EXPECT_NE(validate(p).find("ranks"), std::string::npos);
}
