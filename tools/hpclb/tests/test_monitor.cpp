// The /proc readers (DRUM's agents, Gupta's t_idle) on fixed text and on this
// machine, the dense kernel, and the C API (test_capi.c).
#include "hpclb/hpclb.hpp"

#include <gtest/gtest.h>

using namespace hpclb;

extern "C" int capi_tree(char *msg, size_t len);
extern "C" int capi_refine(char *msg, size_t len);
extern "C" int capi_plan(char *msg, size_t len);
extern "C" int capi_ruper(char *msg, size_t len);
extern "C" int capi_damping(char *msg, size_t len);

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
CAPI(damping)

// ------------------------------------------------- the monitor thread ----

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace
{
struct FakeProc {
	std::filesystem::path dir;
	MonitorPaths paths;
	FakeProc()
	{
		char tmpl[] = "/tmp/hpclb-mon-XXXXXX";
		dir = mkdtemp(tmpl);
		paths = {(dir / "stat").string(), (dir / "net_dev").string(),
			 (dir / "meminfo").string()};
		write(0, 0, 1000);
	}
	~FakeProc() { std::filesystem::remove_all(dir); }
	// Replaced atomically (rename), as the thread may read at any time.
	static void put(const std::string &path, const std::string &text)
	{
		std::ofstream(path + ".new") << text;
		std::filesystem::rename(path + ".new", path);
	}
	void write(uint64_t idle, uint64_t packets, uint64_t mem_kb)
	{
		put(paths.stat, "cpu  1 0 1 " + std::to_string(idle) + " 0 0 0 0\ncpu0 1 0 1 " +
					std::to_string(idle) + " 0 0 0 0\n");
		put(paths.net_dev,
		    "Inter-| Receive | Transmit\n face |bytes packets|bytes packets\n"
		    "  eth0: 0 " +
			    std::to_string(packets) + " 0 0 0 0 0 0 0 " + std::to_string(packets) +
			    " 0 0 0 0 0 0\n");
		put(paths.meminfo,
		    "MemTotal: 99999 kB\nMemAvailable: " + std::to_string(mem_kb) + " kB\n");
	}
};
} // namespace

TEST(MonitorThread, BadPeriodIsRefused)
{
	for (double p : {0.0, -1.0, 0.0005, 61.0, std::numeric_limits<double>::quiet_NaN()}) {
		try {
			Monitor m(p);
			ADD_FAILURE() << "period " << p << " accepted";
		} catch (const Error &e) {
			EXPECT_NE(
				std::string(e.what()).find("monitor period must be in [0.001, 60]"),
				std::string::npos);
		}
	}
	MonitorPaths bad;
	bad.net_dev = "/nonexistent/net_dev";
	EXPECT_THROW(Monitor(0.01, {}, bad), Error);
}

TEST(MonitorThread, StartsSamplesAndStops)
{
	Monitor m(0.002);
	EXPECT_TRUE(m.running());
	ASSERT_TRUE(m.wait_samples(5, 60)) << "the monitor thread took no samples";
	auto a = m.take();
	EXPECT_GE(a.samples, 2u);
	EXPECT_GT(a.mem_available, 0u);
	EXPECT_GE(a.cpu_util, 0);
	EXPECT_GE(a.cpu_idle, 0);
	bool lo = false;
	for (const auto &i : a.interfaces)
		lo |= i.name == "lo";
	EXPECT_TRUE(lo);
	m.stop();
	EXPECT_FALSE(m.running());
	const size_t n = m.samples();
	usleep(20000); // the thread is joined: nothing samples any more
	EXPECT_EQ(m.samples(), n);
	m.stop(); // idempotent
}

// Aggregates over a window are the differences of its first and last
// samples over its length: exact whatever the timing.
TEST(MonitorThread, AggregatesFromTheSources)
{
	FakeProc f;
	Monitor m(0.001, {0}, f.paths);
	ASSERT_TRUE(m.wait_samples(3, 60));
	auto a = m.take();
	ASSERT_EQ(a.interfaces.size(), 1u);
	EXPECT_EQ(a.interfaces[0].name, "eth0");
	EXPECT_EQ(a.interfaces[0].caf, 0);
	EXPECT_EQ(a.mem_available, 1000u * 1024);
	EXPECT_EQ(a.cpu_idle, 0);
	f.write(50, 300, 500); // idle +50 ticks, packets +600 (in + out), less memory
	size_t now = m.samples();
	ASSERT_TRUE(m.wait_samples(now + 3, 60));
	f.write(50, 300, 2000);
	now = m.samples();
	ASSERT_TRUE(m.wait_samples(now + 3, 60));
	auto b = m.take();
	ASSERT_GT(b.window, 0);
	EXPECT_NEAR(b.interfaces[0].caf * b.window, 600, 1e-6);
	EXPECT_NEAR(b.cpu_idle * b.window * static_cast<double>(sysconf(_SC_CLK_TCK)), 50, 1e-6);
	EXPECT_EQ(b.mem_available, 2000u * 1024);
	EXPECT_EQ(b.mem_available_min, 500u * 1024);
	m.stop();
	// No new sample: the previous aggregate again.
	auto c = m.take();
	EXPECT_EQ(c.samples, b.samples);
	EXPECT_EQ(c.window, b.window);
}

TEST(MonitorThread, FailedSamplingIsReportedAndStops)
{
	FakeProc f;
	Monitor m(0.001, {}, f.paths);
	ASSERT_TRUE(m.wait_samples(2, 60));
	std::filesystem::remove(f.paths.meminfo);
	EXPECT_FALSE(m.wait_samples(std::numeric_limits<size_t>::max(), 60));
	EXPECT_FALSE(m.running());
	try {
		m.take();
		ADD_FAILURE() << "a failed monitor gave aggregates";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("meminfo: cannot be read"), std::string::npos);
	}
}
