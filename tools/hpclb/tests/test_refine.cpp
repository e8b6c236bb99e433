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

// Real times of a placement: task i's work is t_i times the effective speed
// of the VCPU it was timed on; VCPU p needs work / its effective speed.
static double real_max(const std::vector<Task> &t, const std::vector<int> &proc,
		       const std::vector<double> &eff)
{
	std::vector<double> time(eff.size(), 0);
	for (size_t i = 0; i < t.size(); i++)
		time[static_cast<size_t>(proc[i])] += t[i].cpu_time *
						      eff[static_cast<size_t>(t[i].proc)] /
						      eff[static_cast<size_t>(proc[i])];
	return *std::max_element(time.begin(), time.end());
}

TEST(Refine, InterferedVcpuWithEffectiveSpeed)
{
	// Two equal CPUs; a busy neighbour takes half of VCPU 1's, so its 32
	// tasks of 0.25 units of work take 0.5 s each (wall time): 8 s and 16 s.
	// With the nominal f_p a task timed there counts twice its work, and on
	// the receiver too: the plan moves 8 tasks (2 units), 10 s and 12 s, and
	// needs more steps to recover (under-correction). With the effective
	// speed (f_p x share 0.5) it moves 10 (2.5 units): 10.5 s and 11 s, the
	// best of whole tasks (16 units at speed 1.5 need 10.67 s).
	std::vector<Task> t;
	for (int i = 0; i < 64; i++)
		t.push_back({i, i < 32 ? 0.25 : 0.5, i < 32 ? 0 : 1, 0});
	const std::vector<double> eff{1, 0.5};
	auto nominal = refine({{1, 0}, {1, 0}}, t, 0);
	auto effective = refine({{eff[0], 0}, {eff[1], 0}}, t, 0);
	// Either way, work only leaves the interfered VCPU.
	for (const auto *r : {&nominal, &effective})
		for (size_t i = 0; i < t.size(); i++)
			if (r->proc[i] != t[i].proc) {
				EXPECT_EQ(t[i].proc, 1)
					<< "task " << i << " moved to the slow VCPU";
			}
	EXPECT_EQ(nominal.moves, 8u);
	EXPECT_DOUBLE_EQ(real_max(t, nominal.proc, eff), 12);
	EXPECT_EQ(effective.moves, 10u);
	EXPECT_DOUBLE_EQ(real_max(t, effective.proc, eff), 11);
	EXPECT_LE(real_max(t, effective.proc, eff), real_max(t, nominal.proc, eff));
	// Started again from the effective plan, the next step moves nothing
	// back to VCPU 1 (no oscillation).
	std::vector<Task> t2 = t;
	for (size_t i = 0; i < t2.size(); i++) {
		t2[i].cpu_time = t[i].cpu_time * eff[static_cast<size_t>(t[i].proc)] /
				 eff[static_cast<size_t>(effective.proc[i])];
		t2[i].proc = effective.proc[i];
	}
	auto again = refine({{eff[0], 0}, {eff[1], 0}}, t2, 0);
	for (size_t i = 0; i < t2.size(); i++)
		if (again.proc[i] != t2[i].proc) {
			EXPECT_EQ(t2[i].proc, 1) << "step 2 moved task " << i << " back to VCPU 1";
		}
}

TEST(Refine, NeverMovesWorkToTheVcpuWhoseBackgroundRose)
{
	// Random loads on 4 VCPUs; VCPU 2's background load rises step by step:
	// no plan ever gives it a task, and its share of the work only shrinks.
	std::mt19937 rng(7);
	std::uniform_real_distribution<double> u(0.5, 1.5);
	std::vector<Task> t;
	for (int i = 0; i < 40; i++)
		t.push_back({i, u(rng), i % 4, 0});
	double prev_on2 = 1e9;
	for (double bg : {0.0, 2.0, 4.0, 8.0, 16.0}) {
		std::vector<Vcpu> v{{1, 0}, {1, 0}, {1, bg}, {1, 0}};
		auto r = refine(v, t, 0);
		double on2 = 0;
		for (size_t i = 0; i < t.size(); i++) {
			if (r.proc[i] == 2 && t[i].proc != 2)
				ADD_FAILURE() << "background " << bg << ": task " << i
					      << " moved to VCPU 2";
			if (r.proc[i] == 2)
				on2 += t[i].cpu_time;
		}
		if (bg > 0) {
			EXPECT_LE(on2, prev_on2) << "background " << bg;
		}
		prev_on2 = on2;
	}
}

namespace
{
// A B x B grid of blocks of equal work, the top half on VCPU 0 and the
// bottom half on VCPU 1, half as fast (its blocks take 2 s, VCPU 0's 1 s);
// peers: the four neighbours.
struct Grid {
	int B;
	std::vector<Task> tasks;
	Peers peers;
	explicit Grid(int b) : B(b)
	{
		for (int i = 0; i < B; i++)
			for (int j = 0; j < B; j++) {
				const int64_t id = i * B + j;
				tasks.push_back({id, i < B / 2 ? 1.0 : 2.0, i < B / 2 ? 0 : 1, 0});
				const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
				for (int d = 0; d < 4; d++) {
					int ni = i + di[d], nj = j + dj[d];
					if (ni >= 0 && ni < B && nj >= 0 && nj < B)
						peers[id].push_back(ni * B + nj);
				}
			}
	}
	// Edges between blocks on different VCPUs.
	int cut(const std::vector<int> &proc) const
	{
		int c = 0;
		for (const auto &[id, list] : peers)
			for (int64_t q : list)
				c += proc[static_cast<size_t>(id)] != proc[static_cast<size_t>(q)];
		return c / 2;
	}
};
} // namespace

TEST(Refine, PeersKeepMovedWorkNextToItsNeighbours)
{
	// VCPU 1 half as fast: a third of its 128 blocks go to VCPU 0. Without
	// the graph the largest ids go (all equal): the bottom rows, at the far
	// side of VCPU 1, a second boundary as long as the first. With it the
	// blocks next to VCPU 0 go first, row after row: one boundary.
	Grid g(16);
	std::vector<Vcpu> v{{1, 0}, {0.5, 0}};
	std::vector<int> before;
	for (const auto &t : g.tasks)
		before.push_back(t.proc);
	ASSERT_EQ(g.cut(before), 16);
	auto plain = refine(v, g.tasks, 0.5);
	auto comm = refine(v, g.tasks, 0.5, &g.peers);
	EXPECT_EQ(comm.moves, plain.moves);
	EXPECT_GE(comm.moves, 40u);
	EXPECT_LT(comm.imbalance_after, 1.02);
	EXPECT_DOUBLE_EQ(comm.imbalance_after, plain.imbalance_after);
	EXPECT_GE(g.cut(plain.proc), 2 * 16) << "two boundaries";
	EXPECT_LE(g.cut(comm.proc), 16 + 2) << "a moved strip: the cut stays one row long";
	// The same plan whatever the order of the tasks and of the peer lists.
	auto shuffled = g.tasks;
	std::reverse(shuffled.begin(), shuffled.end());
	auto rev = g.peers;
	for (auto &[id, list] : rev)
		std::reverse(list.begin(), list.end());
	auto again = refine(v, shuffled, 0.5, &rev);
	for (size_t i = 0; i < g.tasks.size(); i++)
		EXPECT_EQ(again.proc[g.tasks.size() - 1 - i], comm.proc[i]);
	// An empty graph is no graph.
	Peers none;
	EXPECT_EQ(refine(v, g.tasks, 0.5, &none).proc, plain.proc);
}

TEST(Refine, PeersOfUnknownUnitsAreRefused)
{
	Grid g(4);
	std::vector<Vcpu> v{{1, 0}, {0.5, 0}};
	auto bad = g.peers;
	bad[99] = {1};
	EXPECT_THROW(refine(v, g.tasks, 0.1, &bad), Error);
	bad = g.peers;
	bad[1].push_back(77);
	try {
		refine(v, g.tasks, 0.1, &bad);
		ADD_FAILURE() << "an unknown peer accepted";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("peer 77"), std::string::npos) << e.what();
	}
	// A unit listing itself is no edge.
	auto self = g.peers;
	self[5].push_back(5);
	EXPECT_EQ(refine(v, g.tasks, 0.1, &self).proc, refine(v, g.tasks, 0.1, &g.peers).proc);
}

TEST(Refine, CpuShare)
{
	// Busy-polling rank alone on its CPU: all of it (capped at 1).
	EXPECT_DOUBLE_EQ(cpu_share(1.0, 1.0, 0.3), 1);
	// Half its CPU to a neighbour, no wait: 0.5.
	EXPECT_DOUBLE_EQ(cpu_share(0.5, 1.0, 0), 0.5);
	// A rank that sleeps in MPI while it waits is not slow for it.
	EXPECT_DOUBLE_EQ(cpu_share(0.6, 1.0, 0.4), 1);
	EXPECT_DOUBLE_EQ(cpu_share(0.3, 1.0, 0.4), 0.5);
	// No period: f_p unchanged; nothing at all: the least share, never 0.
	EXPECT_DOUBLE_EQ(cpu_share(0, 0, 0), 1);
	EXPECT_DOUBLE_EQ(cpu_share(0, 1, 0), 0.01);
	EXPECT_THROW(cpu_share(-1, 1, 0), Error);
	EXPECT_THROW(cpu_share(1, NAN, 0), Error);
	EXPECT_THROW(cpu_share(1, 1, -0.1), Error);
}

TEST(Refine, ShareOfABusyPollingRankUnderAQuota)
{
	// A rank held to half its CPU by a quota, busy-polling in MPI while it
	// waits for the others, 40 % of each 1 s period. Over the period it
	// has 0.5 s of CPU; its units ran 0.6 s, 0.3 s of it on the CPU. The
	// period's measure takes the polling for work: 0.5 / (1 - 0.4) = 0.83.
	// Its units' busy time says 0.5, what the quota gives.
	ShareEstimator period_only, busy;
	for (int k = 0; k < 6; k++) {
		period_only.period(0.5, 1, 0.4, 0.6, 1);
		busy.busy(0.2, 0.1); // reported in pieces: the sums count
		busy.busy(0.4, 0.2);
		busy.period(0.5, 1, 0.4, 0.6, 1);
	}
	EXPECT_NEAR(period_only.share(), 0.5 / 0.6, 1e-12);
	EXPECT_FALSE(period_only.from_busy());
	EXPECT_NEAR(busy.share(), 0.5, 1e-12);
	EXPECT_TRUE(busy.from_busy());
}

TEST(Refine, ShareWeightsPeriodsByTheirBusyTime)
{
	ShareEstimator s;
	EXPECT_DOUBLE_EQ(s.share(), 1); // nothing measured yet
	for (int k = 0; k < 20; k++) {
		s.busy(0.6, 0.3);
		s.period(0.5, 1, 0.4, 0.6, 1);
	}
	// A rank left with almost no work: 10 ms at full speed barely counts.
	s.busy(0.01, 0.01);
	s.period(0.02, 1, 0.99, 0.01, 1);
	EXPECT_LT(s.share(), 0.52);
	// No busy time reported in a period: the share stands.
	const double before = s.share();
	s.period(0.9, 1, 0, 0.9, 1);
	EXPECT_DOUBLE_EQ(s.share(), before);
	// Interference from now on: the rank has 0.25 of its CPU. Each period
	// counts half at the next: the share is below 0.3 after four periods.
	for (int k = 0; k < 4; k++) {
		s.busy(0.8, 0.2);
		s.period(0.2, 1, 0.2, 0.8, 1);
	}
	EXPECT_LT(s.share(), 0.3);
	EXPECT_GT(s.share(), 0.25);
}

TEST(Refine, ShareFromPeriodsSkipsTheFirstAndMostlyWaitingOnes)
{
	ShareEstimator s;
	s.period(0.1, 1, -1, 0.9, 1); // the first period: start-up
	EXPECT_DOUBLE_EQ(s.share(), 1);
	s.period(0.5, 1, -1, 0.9, 1); // no wait reported: cpu / avail
	EXPECT_DOUBLE_EQ(s.share(), 0.5);
	s.period(0.05, 1, 0.9, 0.1, 1); // units under a fifth of the period
	EXPECT_DOUBLE_EQ(s.share(), 0.5);
	s.period(1, 1, 0, 0.9, 1); // half the last, half the ones before
	EXPECT_DOUBLE_EQ(s.share(), 0.75);
}

TEST(Refine, BadBusyTimeIsRefusedAndChangesNothing)
{
	ShareEstimator s;
	s.busy(1, 0.5);
	s.period(0.5, 1, 0, 1, 1);
	ASSERT_DOUBLE_EQ(s.share(), 0.5);
	EXPECT_THROW(s.busy(-1, 0), Error);
	EXPECT_THROW(s.busy(1, NAN), Error);
	EXPECT_THROW(s.busy(INFINITY, 1), Error);
	try {
		s.busy(1, 2); // a process's CPU time over two threads
		ADD_FAILURE() << "CPU time above the wall time accepted";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("CPU time of the thread"), std::string::npos)
			<< e.what();
	}
	s.busy(1, 1.0004); // clock granularity: accepted
	s.period(1, 1, 0, 1, 1);
	// The refused ones counted nothing: (0.5 * 0.5 + 1.0004) / (0.5 + 1).
	EXPECT_NEAR(s.share(), 1.2504 / 1.5, 1e-12);
}

TEST(Refine, WorthMoving)
{
	EXPECT_TRUE(worth_moving(1.5, 1.0, 0.05));
	EXPECT_FALSE(worth_moving(1.04, 1.0, 0.05)); // 3.8 % of 1.04: noise
	EXPECT_FALSE(worth_moving(1.2, 1.2, 0));     // nothing gained, nothing moved
	EXPECT_TRUE(worth_moving(1.2, 1.1, 0));
	EXPECT_THROW(worth_moving(1.2, 1.0, 1), Error);
	EXPECT_THROW(worth_moving(1.2, 1.0, -0.1), Error);
}
