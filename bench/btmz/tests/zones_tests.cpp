// SPDX-License-Identifier: GPL-2.0
// BT-MZ proxy: zone layout, mapping, exchange plan and the block solver.
#include "adi.hpp"
#include "zones.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

using namespace btmz;

namespace
{

ClassParams cls(char c)
{
	auto p = class_params(c);
	EXPECT_TRUE(p.has_value());
	return *p;
}

long total_cells(const std::vector<Zone> &z)
{
	long t = 0;
	for (auto &x : z)
		t += x.cells();
	return t;
}

} // namespace

// NPB-MZ's stretching with ratio 4.5: the widths the formula gives.
TEST(Zones, WidthsOfClassesSWA)
{
	EXPECT_EQ(zone_widths(24, 2, 4.5), (std::vector<int>{4, 20}));
	EXPECT_EQ(zone_widths(64, 4, 4.5), (std::vector<int>{6, 11, 18, 29}));
	EXPECT_EQ(zone_widths(128, 4, 4.5), (std::vector<int>{13, 21, 36, 58}));
	// Ratio 1: equal widths.
	EXPECT_EQ(zone_widths(128, 4, 1.0), (std::vector<int>{32, 32, 32, 32}));
}

TEST(Zones, LayoutCoversTheGridWithGrowingZones)
{
	for (char c : {'S', 'W', 'A', 'B'}) {
		ClassParams p = cls(c);
		auto z = make_zones(p);
		ASSERT_EQ(z.size(), static_cast<size_t>(p.x_zones * p.y_zones)) << c;
		EXPECT_EQ(total_cells(z), static_cast<long>(p.gx) * p.gy * p.gz) << c;
		auto xs = zone_widths(p.gx, p.x_zones, p.ratio);
		EXPECT_TRUE(std::is_sorted(xs.begin(), xs.end())) << c;
		// The largest zone is far larger than the smallest (about 20x).
		auto [mn, mx] = std::minmax_element(
			z.begin(), z.end(), [](auto &a, auto &b) { return a.cells() < b.cells(); });
		EXPECT_GT(static_cast<double>(mx->cells()) / mn->cells(), 10.0) << c;
		for (auto &x : z)
			EXPECT_EQ(x.id, x.ix + x.iy * p.x_zones);
	}
	EXPECT_FALSE(class_params('C').has_value());
	EXPECT_FALSE(class_params('s').has_value());
}

TEST(Zones, NeighboursArePeriodic)
{
	ClassParams p = cls('W');
	EXPECT_EQ(neighbour(p, 0, West), 3);
	EXPECT_EQ(neighbour(p, 0, East), 1);
	EXPECT_EQ(neighbour(p, 0, South), 12);
	EXPECT_EQ(neighbour(p, 0, North), 4);
	EXPECT_EQ(neighbour(p, 15, East), 12);
	EXPECT_EQ(neighbour(p, 15, North), 3);
}

TEST(Mapping, BinPackClassSOneZonePerRankLargestFirst)
{
	ClassParams p = cls('S');
	auto z = make_zones(p);
	std::string err;
	auto own = map_zones(p, z, 4, Mapping::BinPack, err);
	ASSERT_TRUE(err.empty());
	// Zones 4x4, 20x4, 4x20, 20x20: the largest goes to rank 0, then in
	// size order (the two equal zones in zone order) to ranks 1, 2, 3.
	EXPECT_EQ(own, (std::vector<int>{3, 1, 2, 0}));
	auto cells = rank_cells(z, own, 4);
	EXPECT_EQ(cells, (std::vector<long>{2400, 480, 480, 96}));
}

TEST(Mapping, BinPackBalancesClassAOnFourRanks)
{
	ClassParams p = cls('A');
	auto z = make_zones(p);
	std::string err;
	auto own = map_zones(p, z, 4, Mapping::BinPack, err);
	ASSERT_TRUE(err.empty());
	ASSERT_EQ(own.size(), z.size());
	for (int r : own)
		EXPECT_TRUE(r >= 0 && r < 4);
	auto cells = rank_cells(z, own, 4);
	auto [mn, mx] = std::minmax_element(cells.begin(), cells.end());
	// Within 5 % of each other, while a row strip is 58/13 of the smallest.
	EXPECT_LT(static_cast<double>(*mx) / *mn, 1.05);
	// The largest zone (58x58) is the first placed: on rank 0.
	EXPECT_EQ(own[15], 0);
	// Every rank's load is what the greedy rule says: placing zones in
	// the order of the rule never gives a zone to a rank that was not the
	// least loaded by more than the 5 % window.
	EXPECT_EQ(std::accumulate(cells.begin(), cells.end(), 0L), total_cells(z));
}

TEST(Mapping, BinPackOneRankAndOneZoneEach)
{
	ClassParams p = cls('W');
	auto z = make_zones(p);
	std::string err;
	auto one = map_zones(p, z, 1, Mapping::BinPack, err);
	EXPECT_EQ(one, std::vector<int>(16, 0));
	auto each = map_zones(p, z, 16, Mapping::BinPack, err);
	std::set<int> used(each.begin(), each.end());
	EXPECT_EQ(used.size(), 16u);
	// More ranks than zones: an error, nothing mapped.
	auto bad = map_zones(p, z, 17, Mapping::BinPack, err);
	EXPECT_TRUE(bad.empty());
	EXPECT_NE(err.find("16 zones"), std::string::npos);
	bad = map_zones(p, z, 0, Mapping::BinPack, err);
	EXPECT_TRUE(bad.empty());
	EXPECT_FALSE(err.empty());
}

TEST(Mapping, RowsGivesEachRankAStripAndTheStripsImbalance)
{
	ClassParams p = cls('A');
	auto z = make_zones(p);
	std::string err;
	auto own = map_zones(p, z, 4, Mapping::Rows, err);
	ASSERT_TRUE(err.empty());
	for (auto &x : z)
		EXPECT_EQ(own[x.id], x.iy);
	auto cells = rank_cells(z, own, 4);
	EXPECT_EQ(cells, (std::vector<long>{13L * 128 * 16, 21L * 128 * 16, 36L * 128 * 16,
					    58L * 128 * 16}));
	auto two = map_zones(p, z, 2, Mapping::Rows, err);
	EXPECT_EQ(two[0], 0);
	EXPECT_EQ(two[15], 1);
	EXPECT_TRUE(map_zones(p, z, 3, Mapping::Rows, err).empty());
	EXPECT_NE(err.find("divides"), std::string::npos);
	EXPECT_EQ(parse_mapping("rows"), Mapping::Rows);
	EXPECT_EQ(parse_mapping("binpack"), Mapping::BinPack);
	EXPECT_FALSE(parse_mapping("round-robin").has_value());
}

// Every face of every zone is either copied locally or sent in exactly one
// message, and messages only go between ranks that own neighbouring zones.
TEST(Exchange, EveryFaceOnceEitherLocalOrInOneMessage)
{
	for (char c : {'S', 'W', 'A'})
		for (Mapping m : {Mapping::BinPack, Mapping::Rows})
			for (int np : {1, 2, 4}) {
				ClassParams p = cls(c);
				if (m == Mapping::Rows && np > p.y_zones)
					continue; // class S has 2 rows (an error, tested above)
				auto z = make_zones(p);
				std::string err;
				auto own = map_zones(p, z, np, m, err);
				ASSERT_TRUE(err.empty()) << c << np;
				auto plan = exchange_plan(p, z, own);
				auto local = local_faces(p, z, own);
				long want = 0;
				for (auto &x : z)
					want += 5L * x.nz * 2 * (x.nx + x.ny);
				long got = 0;
				size_t faces = local.size();
				std::set<std::pair<int, int>> pairs;
				for (auto &msg : plan) {
					EXPECT_NE(msg.src, msg.dst);
					EXPECT_TRUE(pairs.insert({msg.src, msg.dst}).second);
					got += msg.doubles();
					faces += msg.faces.size();
					for (auto &f : msg.faces) {
						EXPECT_EQ(own[f.from], msg.src);
						EXPECT_EQ(own[f.to], msg.dst);
						EXPECT_EQ(neighbour(p, f.to, f.side), f.from);
					}
				}
				for (auto &f : local)
					got += f.doubles;
				EXPECT_EQ(got, want) << c << np;
				EXPECT_EQ(faces, 4 * z.size());
				if (np == 1) {
					EXPECT_TRUE(plan.empty());
				}
			}
}

TEST(Exchange, RowsTalkOnlyToTheRowsAboveAndBelow)
{
	ClassParams p = cls('W');
	auto z = make_zones(p);
	std::string err;
	auto own = map_zones(p, z, 4, Mapping::Rows, err);
	auto plan = exchange_plan(p, z, own);
	ASSERT_EQ(plan.size(), 8u); // 4 ranks x 2 neighbours
	for (auto &msg : plan) {
		int d = (msg.dst - msg.src + 4) % 4;
		EXPECT_TRUE(d == 1 || d == 3);
		// A whole row of faces: 4 zones, 64 cells x 8 planes x 5 values.
		EXPECT_EQ(msg.faces.size(), 4u);
		EXPECT_EQ(msg.doubles(), 64L * 8 * 5);
	}
}

TEST(Solver, BlockTridiagonalSolveMatchesTheSystem)
{
	std::mt19937 g(7);
	std::uniform_real_distribution<double> d(-1, 1);
	const size_t n = 9;
	std::vector<Block> a(n), b(n), c(n);
	std::vector<Vec5> x(n), r(n);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 25; k++) {
			a[i][k] = d(g);
			b[i][k] = d(g) + (k % 6 == 0 ? 12.0 : 0.0);
			c[i][k] = d(g);
		}
		for (int k = 0; k < 5; k++)
			x[i][k] = d(g);
	}
	// r = A x, with A block tridiagonal.
	for (size_t i = 0; i < n; i++)
		for (int row = 0; row < 5; row++) {
			double s = 0;
			for (int col = 0; col < 5; col++) {
				s += b[i][row * 5 + col] * x[i][col];
				if (i > 0)
					s += a[i][row * 5 + col] * x[i - 1][col];
				if (i + 1 < n)
					s += c[i][row * 5 + col] * x[i + 1][col];
			}
			r[i][row] = s;
		}
	block_tridiag_solve(a, b, c, r);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 5; k++)
			EXPECT_NEAR(r[i][k], x[i][k], 1e-12);
}

TEST(Solver, BlockSolveNeedsPivoting)
{
	// A zero on the diagonal: only a pivoting elimination solves it.
	Block a{};
	a[0 * 5 + 1] = 1;
	a[1 * 5 + 0] = 1;
	for (int i = 2; i < 5; i++)
		a[i * 5 + i] = 2;
	Block cols{};
	Vec5 v{3, 4, 2, 4, 6};
	block_solve(a, cols, v);
	EXPECT_EQ(v, (Vec5{4, 3, 1, 2, 3}));
}

// What one zone sends is what its neighbour receives, cell for cell.
TEST(Solver, PackedFacesLandInTheNeighboursGhostLayer)
{
	ClassParams p = cls('S');
	auto z = make_zones(p);
	// Zones 0 and 1 share a row (same ny): 0's east face is 1's west ghost.
	ZoneSolver z0(z[0], p, 0, 0), z1(z[1], p, z[0].nx, 0);
	std::vector<double> face(5L * z[0].ny * z[0].nz), back(face.size());
	z0.pack(West, face.data()); // what 1 needs on its west side
	z1.unpack(West, face.data());
	// A step of zone 1 uses it: stepping twice from the same state with a
	// different ghost gives a different state.
	ZoneSolver z1b(z[1], p, z[0].nx, 0);
	std::vector<double> other(face.size(), 0.0);
	z1b.unpack(West, other.data());
	z1.step();
	z1b.step();
	EXPECT_NE(z1.sum_squares()[0], z1b.sum_squares()[0]);
	// Zone 0's packed face is its own east column: unpacking it as the
	// east ghost of a copy and packing that copy's west face (its first
	// column) are different data.
	z0.pack(East, back.data());
	EXPECT_NE(face, back);
}
