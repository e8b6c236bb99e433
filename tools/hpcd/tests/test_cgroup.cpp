// The cgroup layer against fake v1 and v2 trees (plain directories).
#include "cgroup.hpp"
#include "guardian.hpp"
#include "test_util.hpp"

#include <filesystem>
#include <unistd.h>

using namespace hpcd;
using namespace hpcd_test;
namespace fs = std::filesystem;

TEST(Mountinfo, HybridPicksV1Cpu)
{
	std::string why;
	auto l = find_cpu_cgroup(data("mountinfo_hybrid"), "/nonexistent", why);
	ASSERT_TRUE(l) << why;
	EXPECT_EQ(l->version, CgVersion::V1);
	EXPECT_EQ(l->root, "/sys/fs/cgroup/cpu");
}

TEST(Mountinfo, V1CpuCpuacctComount)
{
	std::string why;
	auto l = find_cpu_cgroup(data("mountinfo_v1_cpuacct"), "/nonexistent", why);
	ASSERT_TRUE(l) << why;
	EXPECT_EQ(l->root, "/sys/fs/cgroup/cpu,cpuacct");
}

TEST(Mountinfo, V2NeedsCpuInControllers)
{
	TempDir d;
	fs::create_directories(d.path + "/sys/fs/cgroup");
	write_file(d.path + "/sys/fs/cgroup/cgroup.controllers", "cpuset io memory pids\n");
	std::string why;
	EXPECT_FALSE(find_cpu_cgroup(data("mountinfo_v2"), d.path, why));
	EXPECT_NE(why.find("does not offer the cpu controller"), std::string::npos) << why;
	write_file(d.path + "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	auto l = find_cpu_cgroup(data("mountinfo_v2"), d.path, why);
	ASSERT_TRUE(l);
	EXPECT_EQ(l->version, CgVersion::V2);
	EXPECT_EQ(l->root, "/sys/fs/cgroup");
}

TEST(Mountinfo, HybridWithoutV1CpuAndEmptyV2Fails)
{
	std::string mi = "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	std::string why;
	EXPECT_FALSE(find_cpu_cgroup(mi, "/nonexistent", why));
	EXPECT_FALSE(why.empty());
	EXPECT_FALSE(find_cpu_cgroup("", "/nonexistent", why));
	EXPECT_NE(why.find("no cgroup"), std::string::npos);
}

TEST(Mountinfo, EscapedBlank)
{
	std::string mi = "31 30 0:28 / /mnt/my\\040cg rw - cgroup cgroup rw,cpu\n";
	std::string why;
	auto l = find_cpu_cgroup(mi, "", why);
	ASSERT_TRUE(l);
	EXPECT_EQ(l->root, "/mnt/my cg");
}

TEST(ProcCgroup, V1AndV2Paths)
{
	auto t = data("proc_cgroup");
	EXPECT_EQ(task_cgroup(t, CgVersion::V1).value_or("?"), "/user.slice/job 1");
	EXPECT_EQ(task_cgroup(t, CgVersion::V2).value_or("?"), "/user.slice/session-1.scope");
	EXPECT_FALSE(task_cgroup("3:cpuset:/\n", CgVersion::V1));
}

TEST(CpuStat, V1AndV2)
{
	auto a = parse_cpu_stat(data("cpu_stat_v1"), CgVersion::V1);
	EXPECT_EQ(a.nr_periods, 120u);
	EXPECT_EQ(a.nr_throttled, 30u);
	EXPECT_EQ(a.throttled_ns, 450000000u);
	auto b = parse_cpu_stat(data("cpu_stat_v2"), CgVersion::V2);
	EXPECT_EQ(b.nr_throttled, 30u);
	EXPECT_EQ(b.throttled_ns, 450000000u);
}

TEST(Weight, SharesConversion)
{
	EXPECT_EQ(weight_to_shares(100), 1024u);
	EXPECT_EQ(weight_to_shares(1), 10u);
	EXPECT_EQ(weight_to_shares(10000), 102400u);
	EXPECT_EQ(weight_to_shares(0), 2u);
}

namespace
{
// A fake hierarchy: root with the files a real root has.
struct FakeTree {
	TempDir d;
	CgLayout layout;
	explicit FakeTree(CgVersion v)
	{
		layout = {v, "/cg"};
		fs::create_directories(d.path + "/cg/orig");
		write_file(d.path + "/cg/cgroup.procs", "");
		write_file(d.path + "/cg/orig/cgroup.procs", "");
		if (v == CgVersion::V2)
			write_file(d.path + "/cg/cgroup.subtree_control", "memory\n");
	}
	std::string p(const std::string &rel) { return d.path + "/cg" + rel; }
};
} // namespace

TEST(FakeV1, CreateQuotaWeightAttachRelease)
{
	FakeTree t(CgVersion::V1);
	Cgroups cg(t.layout, "hpcd-42", t.d.path, true);
	cg.setup();
	EXPECT_TRUE(exists(t.p("/hpcsched/hpcd-42")));
	std::string rel = cg.create("job", 1234);
	EXPECT_EQ(rel, "/hpcsched/hpcd-42/job/1234");
	cg.set_quota(rel, 1750, 10000);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_period_us")), "10000");
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_quota_us")), "1750");
	cg.set_quota(rel, 7000, 0, false); // period kept
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_period_us")), "10000");
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_quota_us")), "7000");
	cg.set_quota(rel, -1, 10000);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_quota_us")), "-1");
	cg.set_weight(rel, 250);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.shares")), "2560");
	cg.attach(rel, 1234);
	EXPECT_EQ(cg.procs(rel), std::vector<int>{1234});
	EXPECT_FALSE(exists(t.p(rel + "/cpu.max")));

	EXPECT_TRUE(cg.release(rel, "/orig"));
	EXPECT_EQ(slurp(t.p("/orig/cgroup.procs")), "1234");
	EXPECT_FALSE(exists(t.p(rel)));
	EXPECT_FALSE(exists(t.p("/hpcsched/hpcd-42/job"))); // last task gone
	EXPECT_TRUE(cg.teardown());
	EXPECT_FALSE(exists(t.p("/hpcsched")));
	EXPECT_TRUE(exists(t.p("/orig"))); // never touched what it did not create
}

// Quota files stay open while hpcd writes them; a cgroup released and made
// again (the same pid managed again) is written through its new files.
TEST(FakeV1, KeptFilesFollowARecreatedCgroup)
{
	FakeTree t(CgVersion::V1);
	Cgroups cg(t.layout, "hpcd-42", t.d.path, true);
	cg.setup();
	std::string rel = cg.create("job", 1234);
	cg.set_quota(rel, 1750, 10000);
	cg.set_weight(rel, 100);
	EXPECT_TRUE(cg.release(rel, "/orig"));
	EXPECT_FALSE(exists(t.p(rel)));
	EXPECT_EQ(cg.create("job", 1234), rel);
	cg.set_quota(rel, 6000, 20000);
	cg.set_weight(rel, 250);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_period_us")), "20000");
	EXPECT_EQ(slurp(t.p(rel + "/cpu.cfs_quota_us")), "6000");
	EXPECT_EQ(slurp(t.p(rel + "/cpu.shares")), "2560");
	EXPECT_TRUE(cg.teardown());
}

TEST(FakeV2, CpuMaxWeightSubtreeControl)
{
	FakeTree t(CgVersion::V2);
	Cgroups cg(t.layout, "hpcd-7", t.d.path, true);
	cg.setup();
	EXPECT_EQ(slurp(t.p("/cgroup.subtree_control")), "+cpu");
	EXPECT_EQ(slurp(t.p("/hpcsched/cgroup.subtree_control")), "+cpu");
	std::string rel = cg.create("j1", 99);
	EXPECT_EQ(slurp(t.p("/hpcsched/hpcd-7/j1/cgroup.subtree_control")), "+cpu");
	cg.set_quota(rel, 6000, 20000);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.max")), "6000 20000");
	cg.set_quota(rel, -1, 10000);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.max")), "max 10000");
	cg.set_weight(rel, 300);
	EXPECT_EQ(slurp(t.p(rel + "/cpu.weight")), "300");
	cg.attach(rel, 99);
	EXPECT_FALSE(exists(t.p(rel + "/cpu.cfs_quota_us")));
	// Origin gone: the task goes to the root.
	EXPECT_TRUE(cg.release(rel, "/vanished"));
	EXPECT_EQ(slurp(t.p("/cgroup.procs")), "99");
	EXPECT_TRUE(cg.teardown());
	EXPECT_FALSE(exists(t.p("/hpcsched")));
}

TEST(FakeV2, RootWithCpuEnabledIsLeftAlone)
{
	FakeTree t(CgVersion::V2);
	write_file(t.p("/cgroup.subtree_control"), "cpu memory\n");
	Cgroups cg(t.layout, "hpcd-8", t.d.path, true);
	cg.setup();
	EXPECT_EQ(slurp(t.p("/cgroup.subtree_control")), "cpu memory\n");
}

TEST(FakeV1, TeardownReleasesUnknownLeaves)
{
	FakeTree t(CgVersion::V1);
	Cgroups cg(t.layout, "hpcd-5", t.d.path, true);
	cg.setup();
	std::string a = cg.create("j", 11), b = cg.create("j", 12);
	cg.set_quota(a, 1000, 10000);
	cg.attach(a, 11);
	cg.attach(b, 12);
	EXPECT_TRUE(cg.teardown({{a, "/orig"}}));
	EXPECT_EQ(slurp(t.p("/orig/cgroup.procs")), "11");
	EXPECT_EQ(slurp(t.p("/cgroup.procs")), "12");
	EXPECT_FALSE(exists(t.p("/hpcsched")));
}

TEST(FakeV1, SetupFailsWithReason)
{
	CgLayout l{CgVersion::V1, "/does/not/exist"};
	Cgroups cg(l, "hpcd-1", "/nonexistent-prefix", true);
	try {
		cg.setup();
		FAIL() << "setup succeeded";
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("cannot create hpcd's cgroups"),
			  std::string::npos);
	}
}

TEST(FakeV1, CleanupStaleSparesLiveInstances)
{
	FakeTree t(CgVersion::V1);
	Cgroups live(t.layout, "hpcd-" + std::to_string(getpid()), t.d.path, true);
	live.setup();
	// pid 2^22+1 is above pid_max's default: no such process.
	Cgroups dead(t.layout, "hpcd-4194305", t.d.path, true);
	dead.setup();
	dead.attach(dead.create("j", 77), 77);
	std::string log;
	EXPECT_EQ(cleanup_stale(t.layout, t.d.path, log, true), 1) << log;
	EXPECT_FALSE(exists(dead.instance_dir()));
	EXPECT_EQ(slurp(t.p("/cgroup.procs")), "77");
	EXPECT_TRUE(exists(live.instance_dir()));
	EXPECT_NE(log.find("alive, left alone"), std::string::npos);
}

TEST(Guardian, EofRestoresEverything)
{
	FakeTree t(CgVersion::V1);
	Cgroups cg(t.layout, "hpcd-9", t.d.path, true);
	cg.setup();
	std::string a = cg.create("j", 21), b = cg.create("j", 22);
	cg.set_quota(a, 1750, 10000);
	cg.set_quota(b, 7000, 10000);
	cg.attach(a, 21);
	cg.attach(b, 22);
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	std::string msg = "T " + a + " /orig 21 -\nT " + b + " /orig 22 -\nU " + b + "\n";
	ASSERT_EQ(write(p[1], msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
	close(p[1]); // hpcd died
	EXPECT_EQ(guardian_main(p[0], cg), 1);
	EXPECT_EQ(slurp(t.p("/orig/cgroup.procs")), "21");
	EXPECT_EQ(slurp(t.p("/cgroup.procs")), "22"); // untracked: unknown origin, root
	EXPECT_FALSE(exists(t.p("/hpcsched")));
}
