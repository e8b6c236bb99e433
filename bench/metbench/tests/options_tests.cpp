// SPDX-License-Identifier: GPL-2.0
// Unit tests of the MetBench load parser and command line.
#include "options.hpp"

#include <cstdio>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace metbench;

namespace
{

std::optional<std::string> parse(std::vector<std::string> args, Options &opt, bool shm = false)
{
	std::vector<const char *> argv{"metbench"};
	for (auto &a : args)
		argv.push_back(a.c_str());
	return parse_options(static_cast<int>(argv.size()), argv.data(), opt, shm);
}

// The error for @args, "" if they are accepted.
std::string error_of(std::vector<std::string> args, bool shm = false)
{
	Options opt;
	auto e = parse(std::move(args), opt, shm);
	return e ? *e : "";
}

} // namespace

TEST(Loads, CommaList)
{
	std::vector<uint64_t> v;
	ASSERT_FALSE(parse_loads("250,1000,250,1000", v));
	EXPECT_EQ(v, (std::vector<uint64_t>{250, 1000, 250, 1000}));
}

TEST(Loads, BlanksNewlinesAndComments)
{
	std::vector<uint64_t> v;
	ASSERT_FALSE(parse_loads("# MetBench loads\n250 1000\n 250,\t1000 # heavy\n", v));
	EXPECT_EQ(v, (std::vector<uint64_t>{250, 1000, 250, 1000}));
}

TEST(Loads, ZeroIsALoad)
{
	std::vector<uint64_t> v;
	ASSERT_FALSE(parse_loads("0,5", v));
	EXPECT_EQ(v, (std::vector<uint64_t>{0, 5}));
}

TEST(Loads, Rejects)
{
	std::vector<uint64_t> v{7};
	for (const char *bad : {"", ",", "# only a comment", "1,x", "-1", "1.5", "12abc",
				"99999999999999999999999", "2000000000"}) {
		auto e = parse_loads(bad, v);
		ASSERT_TRUE(e) << "accepted '" << bad << "'";
		EXPECT_FALSE(e->empty());
	}
	EXPECT_EQ(v, (std::vector<uint64_t>{7})) << "a rejected list must not change the loads";
}

TEST(Loads, MessageNamesTheBadToken)
{
	std::vector<uint64_t> v;
	auto e = parse_loads("10,abc", v);
	ASSERT_TRUE(e);
	EXPECT_NE(e->find("'abc'"), std::string::npos) << *e;
}

TEST(Options, Defaults)
{
	Options opt;
	ASSERT_FALSE(parse({}, opt));
	EXPECT_EQ(opt.loads, (std::vector<uint64_t>{250, 1000, 250, 1000}));
	EXPECT_EQ(opt.iterations, 10u);
	EXPECT_EQ(opt.wait, WaitMode::Spin);
	EXPECT_EQ(opt.sync, SyncMode::Mpi);
	EXPECT_FALSE(opt.json);
}

TEST(Options, AllGood)
{
	Options opt;
	ASSERT_FALSE(parse({"--loads", "1,2,3,4", "--iterations=7", "--swap-every", "3", "--wait",
			    "block", "--sync=shm", "--json", "--trace", "t.csv", "--pin", "0,1,0,1",
			    "--calibrate-ms", "0", "--hold", "30"},
			   opt));
	EXPECT_EQ(opt.loads.size(), 4u);
	EXPECT_EQ(opt.iterations, 7u);
	EXPECT_EQ(opt.swap_every, 3u);
	EXPECT_EQ(opt.wait, WaitMode::Block);
	EXPECT_EQ(opt.sync, SyncMode::Shm);
	EXPECT_TRUE(opt.json);
	EXPECT_EQ(opt.trace, "t.csv");
	EXPECT_EQ(opt.pin, (std::vector<int>{0, 1, 0, 1}));
	EXPECT_EQ(opt.calibrate_ms, 0u);
	EXPECT_EQ(opt.hold_s, 30u);
}

TEST(Options, ShmOnlyBuildDefaultsToShm)
{
	Options opt;
	ASSERT_FALSE(parse({}, opt, true));
	EXPECT_EQ(opt.sync, SyncMode::Shm);
	EXPECT_NE(error_of({"--sync", "mpi"}, true).find("no MPI"), std::string::npos);
}

TEST(Options, LoadsFile)
{
	char path[] = "/tmp/metbench-loads-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	const char text[] = "# light heavy\n100 400\n100 400\n";
	ASSERT_EQ(write(fd, text, sizeof(text) - 1), static_cast<ssize_t>(sizeof(text) - 1));
	close(fd);
	Options opt;
	ASSERT_FALSE(parse({"--loads-file", path}, opt));
	EXPECT_EQ(opt.loads, (std::vector<uint64_t>{100, 400, 100, 400}));
	unlink(path);
	EXPECT_NE(error_of({"--loads-file", path}).find("cannot open"), std::string::npos);
}

// Every bad argument gives a message that names the culprit.
TEST(Options, Errors)
{
	struct Case {
		std::vector<std::string> args;
		const char *expect;
	} cases[] = {
		{{"--bogus"}, "unknown argument '--bogus'"},
		{{"extra"}, "unknown argument 'extra'"},
		{{"--loads"}, "--loads needs a value"},
		{{"--loads", "1,x"}, "'x'"},
		{{"--loads", ""}, "no load"},
		{{"--loads", "1", "--loads", "2"}, "twice"},
		{{"--loads", "1,2", "--loads-file", "/dev/null"}, "mutually exclusive"},
		{{"--iterations", "0"}, "at least 1"},
		{{"--iterations", "-3"}, "'-3'"},
		{{"--iterations", "99999999999"}, "out of range"},
		{{"-n"}, "needs a value"},
		{{"--swap-every", "2", "--loads", "1,2,3"}, "even number of workers"},
		{{"--swap-every", "x"}, "--swap-every"},
		{{"--wait", "poll"}, "'poll' is not spin or block"},
		{{"--wait"}, "--wait needs a value"},
		{{"--sync", "tcp"}, "'tcp' is not mpi or shm"},
		{{"--pin", "0,1"}, "2 CPUs for 4 workers"},
		{{"--pin", "0,1,2,a"}, "'a'"},
		{{"--pin", "0,1,2,99999"}, "out of range"},
		{{"--pin", ""}, "--pin"},
		{{"--json=1"}, "takes no value"},
		{{"--trace="}, "empty file name"},
		{{"--calibrate-ms", "100000"}, "out of range"},
		{{"--hold"}, "--hold needs a value"},
		{{"--hold", "0"}, "--hold: must be at least 1 second"},
		{{"--hold", "3601"}, "out of range"},
	};
	for (auto &c : cases) {
		std::string e = error_of(c.args);
		std::string joined;
		for (auto &a : c.args)
			joined += a + " ";
		EXPECT_NE(e.find(c.expect), std::string::npos)
			<< "args: " << joined << "\n error: '" << e << "'\n expected: " << c.expect;
	}
}

TEST(Options, HelpAndUsage)
{
	Options opt;
	ASSERT_FALSE(parse({"--help"}, opt));
	EXPECT_TRUE(opt.help);
	EXPECT_NE(usage("metbench", false).find("--sync"), std::string::npos);
	EXPECT_EQ(usage("metbench-shm", true).find("--sync"), std::string::npos);
}

TEST(LoadOf, MetBenchVarSwapsPairs)
{
	Options opt;
	ASSERT_FALSE(parse({"--loads", "1,2,3,4", "--swap-every", "2"}, opt));
	// Iterations 0,1: own loads; 2,3: P1<->P2, P3<->P4; 4: back again.
	std::vector<std::vector<uint64_t>> want = {
		{1, 2, 3, 4}, {1, 2, 3, 4}, {2, 1, 4, 3}, {2, 1, 4, 3}, {1, 2, 3, 4}};
	for (uint64_t i = 0; i < want.size(); i++)
		for (size_t w = 0; w < 4; w++)
			EXPECT_EQ(load_of(opt, w, i), want[i][w])
				<< "iteration " << i << " P" << w + 1;
	Options plain;
	ASSERT_FALSE(parse({"--loads", "1,2"}, plain));
	EXPECT_EQ(load_of(plain, 1, 1000), 2u);
}
