// DRUM: the XML parser (every error), node power and H_cpu against
// hand-computed cases (Faik et al. §3.1, §3.3, §4).
#include "hpclb/hpclb.hpp"

#include <cmath>
#include <gtest/gtest.h>

using namespace hpclb;

namespace
{
std::string comp(int id, const char *extra = "")
{
	return "<node type=\"COMPUTING_NODE\" name=\"" + std::to_string(id) +
	       "\" childrenNum=\"0\" children=\";\" " + extra + "/>";
}
std::string net(int id, const std::string &children, int n)
{
	return "<node type=\"NETWORK_NODE\" name=\"" + std::to_string(id) + "\" childrenNum=\"" +
	       std::to_string(n) + "\" children=\"" + children + "\"/>";
}
std::string model(const std::string &body)
{
	return "<machinemodel>" + body + "</machinemodel>";
}

void expect_error(const std::string &xml, const std::string &what)
{
	try {
		MachineTree::parse_xml(xml);
		ADD_FAILURE() << "accepted: " << xml;
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
			<< "message \"" << e.what() << "\" does not say \"" << what << "\"";
	}
}
} // namespace

TEST(DrumXml, PaperFigure2)
{
	auto t = MachineTree::load_xml(HPCLB_TEST_DATA "/netfinity.xml");
	EXPECT_EQ(t.root(), 0);
	EXPECT_EQ(t.nodes().size(), 7u);
	EXPECT_EQ(t.leaves(), (std::vector<int>{3, 4, 5, 6}));
	EXPECT_EQ(t.node(5).description, "n13.ns.cs.rpi.edu");
	// Round trip.
	auto u = MachineTree::parse_xml(t.to_xml());
	EXPECT_EQ(u.leaves(), t.leaves());
}

TEST(DrumXml, Errors)
{
	expect_error("<machinemodel><node", "malformed XML");
	expect_error("<other/>", "no <machinemodel>");
	expect_error("<machinemodel/>", "no nodes");
	expect_error(model("<host/>"), "unexpected element <host>");
	expect_error(model("<node type=\"COMPUTING_NODE\"/>"), "missing attribute name");
	expect_error(model("<node type=\"COMPUTING_NODE\" name=\"x1\"/>"), "is not an integer");
	expect_error(model("<node type=\"ROUTER\" name=\"1\"/>"), "neither NETWORK_NODE");
	expect_error(model(comp(1) + comp(1)), "duplicate node id 1");
	expect_error(model(net(0, "1;2;", 3) + comp(1) + comp(2)), "childrenNum=3 but 2");
	expect_error(model(net(0, "1;7;", 2) + comp(1)), "unknown child id 7");
	expect_error(model(net(0, "1;a;", 2) + comp(1)), "child \"a\" is not a node id");
	expect_error(model(net(0, "1;", 1) + comp(1, "mflops=\"-5\"")), "negative");
	expect_error(model(net(0, "1;", 1) + comp(1, "mflops=\"fast\"")), "not a number");
	expect_error(model(net(0, "1;", 1) + comp(1, "ifspeed=\"0\"")), "ifspeed must be > 0");
	expect_error(model(net(0, "1;", 1) + comp(1, "IsMonitorable=\"2\"")), "IsMonitorable");
	expect_error("<machinemodel numnode=\"3\">" + net(0, "1;", 1) + comp(1) + "</machinemodel>",
		     "numnode=3 but 2 nodes");
	expect_error(model(net(0, "1;", 1) +
			   "<node type=\"COMPUTING_NODE\" name=\"1\" childrenNum=\"1\" "
			   "children=\"2;\"/>" +
			   comp(2)),
		     "cannot have children");
	expect_error(model(net(0, "", 0)), "needs children");
	expect_error(model(comp(1) + comp(2)), "2 roots");
	// Cycles: a node its own child; a loop hanging off the tree (a node with
	// two parents); a loop apart from the tree; a tree that is all loop.
	expect_error(model(net(0, "0;", 1)), "cycle");
	expect_error(model(net(0, "1;", 1) + net(1, "2;", 1) + net(2, "1;", 1)), "two parents");
	expect_error(model(net(0, "3;", 1) + comp(3) + net(1, "2;", 1) + net(2, "1;", 1)),
		     "not reachable");
	expect_error(model(net(1, "2;", 1) + net(2, "1;", 1)), "no root");
	EXPECT_THROW(MachineTree::load_xml("/nonexistent/x.xml"), Error);
}

TEST(DrumPower, StaticOnly)
{
	auto t = MachineTree::parse_xml(
		model(net(0, "1;2;", 2) + comp(1, "mflops=\"100\"") + comp(2, "mflops=\"300\"")));
	t.compute({0});
	EXPECT_DOUBLE_EQ(t.node(1).share, 0.25);
	EXPECT_DOUBLE_EQ(t.node(2).share, 0.75);
	EXPECT_DOUBLE_EQ(t.node(1).w_comm, 0);
}

TEST(DrumPower, Dynamic)
{
	auto t = MachineTree::parse_xml(
		model(net(0, "1;2;", 2) + comp(1, "mflops=\"100\"") + comp(2, "mflops=\"300\"")));
	t.node(1).cpu_util = 1;   // u + i = 1 CPU
	t.node(2).cpu_util = 0.5; // another process takes half of node 2
	t.compute({0.5});
	// p1 = .5*(1/1.5) + .5*.25, p2 = .5*(.5/1.5) + .5*.75 (they add up to 1)
	EXPECT_NEAR(t.node(1).share, 0.5 / 1.5 + 0.125, 1e-12);
	EXPECT_NEAR(t.node(2).share, 0.25 / 1.5 + 0.375, 1e-12);
	EXPECT_THROW(t.compute({1.5}), Error);
}

TEST(DrumPower, Communication)
{
	auto t = MachineTree::parse_xml(
		model(net(0, "1;2;", 2) + comp(1, "mflops=\"100\"") + comp(2, "mflops=\"300\"")));
	const double s = std::exp(2.0);          // log(s) = 2
	t.node(1).interfaces = {{"eth0", s, 1}}; // c = 2/2 = 1,   w_comm = 1/2
	t.node(2).interfaces = {{"eth0", s, 3}}; // c = 2/4 = 0.5, w_comm = 3/4
	EXPECT_NEAR(comm_power(t.node(1).interfaces), 1, 1e-12);
	EXPECT_NEAR(comm_weight(t.node(2).interfaces), 0.75, 1e-12);
	t.compute({0});
	// power1 = .5*(2/3) + .5*.25 = .458333, power2 = .75*(1/3) + .25*.75 = .4375
	const double p1 = 0.5 * 2 / 3 + 0.5 * 0.25, p2 = 0.75 / 3 + 0.25 * 0.75;
	EXPECT_NEAR(t.node(1).share, p1 / (p1 + p2), 1e-12);
	EXPECT_NEAR(t.node(2).share, p2 / (p1 + p2), 1e-12);
	// Two interfaces: the average of their powers.
	EXPECT_NEAR(comm_power({{"a", s, 1}, {"b", s, 3}}), 0.75, 1e-12);
	EXPECT_THROW(comm_power({{"a", 0, 1}}), Error);
}

TEST(DrumPower, Hierarchy)
{
	// root 0 -> {net 1 -> {3: 100, 4: 200}, 2: 100}
	auto t = MachineTree::parse_xml(
		model(net(0, "1;2;", 2) + net(1, "3;4;", 2) + comp(2, "mflops=\"100\"") +
		      comp(3, "mflops=\"100\"") + comp(4, "mflops=\"200\"")));
	t.compute({0});
	EXPECT_EQ(t.leaves(), (std::vector<int>{3, 4, 2}));
	EXPECT_DOUBLE_EQ(t.node(1).share, 0.75);
	EXPECT_DOUBLE_EQ(t.node(3).share, 0.25);
	EXPECT_DOUBLE_EQ(t.node(4).share, 0.5);
	EXPECT_DOUBLE_EQ(t.node(2).share, 0.25);
}

TEST(DrumPower, NothingKnownSplitsEqually)
{
	auto t = MachineTree::flat({"a", "b", "c", "d"});
	t.compute({0});
	for (int id : t.leaves())
		EXPECT_DOUBLE_EQ(t.node(id).share, 0.25);
	t.node(2).mflops = -1;
	EXPECT_THROW(t.compute({0}), Error);
}

TEST(Drum, Hcpu)
{
	// W = .25, .5, 1; mean 7/12; variance (1/9 + 1/144 + 25/144)/3
	EXPECT_NEAR(h_cpu({1, 2, 4}), std::sqrt((1.0 / 9 + 1.0 / 144 + 25.0 / 144) / 3), 1e-12);
	EXPECT_DOUBLE_EQ(h_cpu({3, 3, 3}), 0);
	EXPECT_THROW(h_cpu({}), Error);
	EXPECT_THROW(h_cpu({1, 0}), Error);
}

TEST(Drum, Split)
{
	EXPECT_EQ(split(10, {0.25, 0.75}), (std::vector<uint64_t>{3, 7})); // 2.5, 7.5: tie -> lower
	EXPECT_EQ(split(7, {1, 1, 1}), (std::vector<uint64_t>{3, 2, 2}));
	EXPECT_EQ(split(0, {1, 2}), (std::vector<uint64_t>{0, 0}));
	EXPECT_THROW(split(5, {0, 0}), Error);
	EXPECT_THROW(split(5, {1, -1}), Error);
}
