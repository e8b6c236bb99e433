// The /proc readers (DRUM's agents, Gupta's t_idle) on fixed text and on this
// machine, the dense kernel, and the C API (test_capi.c).
#include "hpclb/hpclb.hpp"

#include <gtest/gtest.h>

using namespace hpclb;

extern "C" int capi_tree(char *msg, size_t len);
extern "C" int capi_refine(char *msg, size_t len);
extern "C" int capi_plan(char *msg, size_t len);
extern "C" int capi_ruper(char *msg, size_t len);

TEST(Monitor, ProcStat)
{
	const std::string s = "cpu  10 0 10 100 5 0 0 0 0 0\n"
			      "cpu0 1 2 3 40 5 6 7 8 0 0\n"
			      "cpu1 10 0 0 60 0 0 0 0 0 0\n"
			      "intr 1 2 3\n";
	auto a = read_cpu_times({}, s);
	EXPECT_EQ(a.idle_ticks, 45u + 60u);
	EXPECT_EQ(a.total_ticks, 72u + 70u);
	auto b = read_cpu_times({1}, s);
	EXPECT_EQ(b.idle_ticks, 60u);
	EXPECT_THROW(read_cpu_times({4}, s), Error);
	EXPECT_THROW(read_cpu_times({}, "cpu0 1 2\n"), Error);
	auto live = read_cpu_times({0});
	EXPECT_GT(live.total_ticks, 0u);
}

TEST(Monitor, NetDev)
{
	const std::string s =
		"Inter-|   Receive                                                |  Transmit\n"
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    "
		"packets errs drop fifo colls carrier compressed\n"
		"    lo:  1000      10    0    0    0     0          0         0     1000      "
		"10    0    0    0     0       0          0\n"
		"  eth0: 99999     321    0    0    0     0          0         0     5555      "
		"123    0    0    0     0       0          0\n";
	auto d = read_net_dev(s);
	ASSERT_EQ(d.size(), 2u);
	EXPECT_EQ(d[1].name, "eth0");
	EXPECT_EQ(d[1].rx_packets, 321u);
	EXPECT_EQ(d[1].tx_packets, 123u);
	EXPECT_THROW(read_net_dev("eth0: 1 2\n"), Error);
	EXPECT_FALSE(read_net_dev().empty()); // lo at least
}

TEST(Monitor, MemInfo)
{
	EXPECT_EQ(read_mem_available("MemTotal: 100 kB\nMemAvailable: 42 kB\n"), 42u * 1024);
	EXPECT_THROW(read_mem_available("MemTotal: 100 kB\n"), Error);
	EXPECT_GT(read_mem_available(), 0u);
}

TEST(Monitor, DenseKernel)
{
	EXPECT_GT(dense_mflops(64), 0);
	EXPECT_THROW(dense_mflops(2), Error);
}

#define CAPI(name)                                                                                 \
	TEST(CApi, name)                                                                           \
	{                                                                                          \
		char msg[512] = "";                                                                \
		EXPECT_EQ(capi_##name(msg, sizeof msg), 0) << msg;                                 \
	}
CAPI(tree)
CAPI(refine)
CAPI(plan)
CAPI(ruper)
