// DRUM over MPI ranks: the tree discovered from host names or read from the
// XML, mapped onto ranks; computing nodes filled from their ranks; a node's
// share split among its ranks. Hand-computed cases and every error.
#include "hpclb/hpclb.hpp"

#include <cmath>
#include <gtest/gtest.h>

using namespace hpclb;

namespace
{
MachineTree netfinity()
{
	return MachineTree::load_xml(std::string(HPCLB_TEST_DATA) + "/netfinity.xml");
}
std::string error_of(auto f)
{
	try {
		f();
	} catch (const Error &e) {
		return e.what();
	}
	return "(no error)";
}
const std::vector<std::string> five = {"n11.ns.cs.rpi.edu", "n11.ns.cs.rpi.edu",
				       "n12.ns.cs.rpi.edu", "n13.ns.cs.rpi.edu",
				       "n14.ns.cs.rpi.edu"};
} // namespace

TEST(DrumRanks, TreeFromHostsGroupsRanksByHost)
{
	auto t = tree_from_hosts({"b", "a", "b", "c", "a"});
	ASSERT_EQ(t.leaves(), (std::vector<int>{1, 2, 3}));
	EXPECT_EQ(t.node(1).description, "b");
	EXPECT_EQ(t.node(2).description, "a");
	EXPECT_EQ(t.node(3).description, "c");
	EXPECT_EQ(map_ranks(t, {"b", "a", "b", "c", "a"}), (std::vector<int>{1, 2, 1, 3, 2}));
	EXPECT_NE(error_of([] {
			  tree_from_hosts({"a", ""});
		  }).find("empty host name"),
		  std::string::npos);
	EXPECT_THROW(tree_from_hosts({}), Error);
}

TEST(DrumRanks, XmlTreeMapsRanksByDescription)
{
	auto t = netfinity();
	EXPECT_EQ(map_ranks(t, five), (std::vector<int>{3, 3, 4, 5, 6}));
}

TEST(DrumRanks, UnknownOrMissingHostsAreClearErrors)
{
	auto t = netfinity();
	auto bad = five;
	bad[4] = "n99.example";
	EXPECT_EQ(error_of([&] { map_ranks(t, bad); }),
		  "rank 4 runs on host \"n99.example\", which is no computing node of the "
		  "machine tree");
	// n14 has no rank: its share would be lost.
	auto missing = std::vector<std::string>(five.begin(), five.end() - 1);
	EXPECT_EQ(error_of([&] { map_ranks(t, missing); }),
		  "computing node 6 (host \"n14.ns.cs.rpi.edu\") has no rank: its share of the "
		  "work would go nowhere");
	EXPECT_THROW(map_ranks(t, {}), Error);
	// Two computing nodes describing the same host cannot be told apart.
	auto dup = MachineTree::parse_xml(R"(<machinemodel numnode="3">
<node type="NETWORK_NODE" name="0" description="r" childrenNum="2" children="1;2;" IsMonitorable="1"/>
<node type="COMPUTING_NODE" name="1" description="h" childrenNum="0" children=";" IsMonitorable="1"/>
<node type="COMPUTING_NODE" name="2" description="h" childrenNum="0" children=";" IsMonitorable="1"/>
</machinemodel>)");
	EXPECT_NE(error_of([&] { map_ranks(dup, {"h"}); }).find("both describe host \"h\""),
		  std::string::npos);
}

// Hand-computed (w_dynamic = 0, no interface): every rank measures 100 MFLOPS
// on one core. n11 has 2 ranks but 1 core: b = 100 * min(1, 2) = 100; n12,
// n13, n14: 100. Level 1: network 1 (n11 + n12) 200, network 2 200 -> 1/2
// each; level 2: 1/2 each. Node shares 1/4; n11's two ranks get 1/8 each.
TEST(DrumRanks, PowerPerLevelAndShareSplitAmongRanks)
{
	auto t = netfinity();
	auto leaf = map_ranks(t, five);
	std::vector<RankMeasure> m(5, RankMeasure{100, 0, 0, 0, 0});
	fill_from_ranks(t, leaf, m, {1, 1, 4, 4, 4});
	EXPECT_DOUBLE_EQ(t.node(3).mflops, 100);
	EXPECT_DOUBLE_EQ(t.node(4).mflops, 100);
	t.compute({0});
	auto s = rank_shares(t, leaf);
	ASSERT_EQ(s.size(), 5u);
	EXPECT_DOUBLE_EQ(s[0], 0.125);
	EXPECT_DOUBLE_EQ(s[1], 0.125);
	EXPECT_DOUBLE_EQ(s[2], 0.25);
	EXPECT_DOUBLE_EQ(s[3], 0.25);
	EXPECT_DOUBLE_EQ(s[4], 0.25);
	// With 2 cores n11 has b = 200: level 1 is 300 : 200 -> 0.6 : 0.4,
	// under network 1 200 : 100 -> n11 0.4 (0.2 per rank), n12 0.2; n13 and
	// n14 0.2 each.
	auto t2 = netfinity();
	fill_from_ranks(t2, leaf, m, {2, 2, 4, 4, 4});
	t2.compute({0});
	auto s2 = rank_shares(t2, leaf);
	EXPECT_DOUBLE_EQ(t2.node(1).power, 0.6);
	EXPECT_DOUBLE_EQ(t2.node(3).share, 0.4);
	for (double x : s2)
		EXPECT_DOUBLE_EQ(x, 0.2);
}

// Dynamic terms are the sums of the node's ranks; the interface is the
// node's (its first rank's); the XML's mflops is kept.
TEST(DrumRanks, FillSumsRanksAndKeepsXmlMflops)
{
	auto t = MachineTree::parse_xml(R"(<machinemodel numnode="3">
<node type="NETWORK_NODE" name="0" description="r" childrenNum="2" children="1;2;" IsMonitorable="1"/>
<node type="COMPUTING_NODE" name="1" description="a" childrenNum="0" children=";" IsMonitorable="1" mflops="500"/>
<node type="COMPUTING_NODE" name="2" description="b" childrenNum="0" children=";" IsMonitorable="1"/>
</machinemodel>)");
	auto leaf = map_ranks(t, {"a", "b", "a"});
	std::vector<RankMeasure> m = {
		{100, 1.0, 0.25, 10, 125}, {100, 0.5, 0.5, 99, 12.5}, {100, 0.5, 0.25, 20, 125}};
	fill_from_ranks(t, leaf, m, {4, 4, 4});
	EXPECT_DOUBLE_EQ(t.node(1).mflops, 500); // from the XML
	EXPECT_DOUBLE_EQ(t.node(2).mflops, 100);
	EXPECT_DOUBLE_EQ(t.node(1).cpu_util, 1.5);
	EXPECT_DOUBLE_EQ(t.node(1).cpu_idle, 0.5);
	ASSERT_EQ(t.node(1).interfaces.size(), 1u);
	EXPECT_DOUBLE_EQ(t.node(1).interfaces[0].caf, 10);
	EXPECT_DOUBLE_EQ(t.node(2).interfaces[0].speed_mbs, 12.5);
	// w_dynamic = 1: u + i is 2 : 1 -> p = 2/3 : 1/3. With the interfaces,
	// power_n = w_comm c_n + (1 - w_comm) p_n, normalised.
	t.compute({1});
	const double c1 = std::log(125.0) / 11, c2 = std::log(12.5) / 100;
	const double w1 = 1 - 1.0 / 11, w2 = 1 - 1.0 / 100;
	const double p1 = w1 * c1 / (c1 + c2) + (1 - w1) * 2.0 / 3,
		     p2 = w2 * c2 / (c1 + c2) + (1 - w2) * 1.0 / 3;
	auto s = rank_shares(t, leaf);
	EXPECT_NEAR(s[1], p2 / (p1 + p2), 1e-12);
	EXPECT_NEAR(s[0], p1 / (p1 + p2) / 2, 1e-12);
	EXPECT_DOUBLE_EQ(s[0], s[2]);
	EXPECT_NEAR(s[0] + s[1] + s[2], 1, 1e-12);
}

TEST(DrumRanks, FillRejectsBadInputAndChangesNothing)
{
	auto t = netfinity();
	auto leaf = map_ranks(t, five);
	std::vector<RankMeasure> m(5, RankMeasure{100, 0, 0, 0, 0});
	m[3].util = -1;
	EXPECT_NE(error_of([&] {
			  fill_from_ranks(t, leaf, m, {1, 1, 1, 1, 1});
		  }).find("rank 3: negative measure"),
		  std::string::npos);
	EXPECT_EQ(t.node(3).mflops, 0); // unchanged
	m[3].util = 0;
	EXPECT_NE(error_of([&] {
			  fill_from_ranks(t, leaf, m, {1, 0, 1, 1, 1});
		  }).find("rank 1: its node has no core"),
		  std::string::npos);
	EXPECT_THROW(fill_from_ranks(t, leaf, m, {1, 1}), Error);
	auto to_net = leaf;
	to_net[0] = 1; // a network node
	EXPECT_NE(error_of([&] {
			  fill_from_ranks(t, to_net, m, {1, 1, 1, 1, 1});
		  }).find("not a computing node"),
		  std::string::npos);
	EXPECT_EQ(t.node(3).mflops, 0);
}

TEST(DrumRanks, HwlocFindsCores)
{
	EXPECT_GE(node_cores(), 1);
}
