// cgroup layer of hpcd: find the cpu controller (v1 or v2), create one child
// cgroup per managed task under a parent hpcd owns, set CPU bandwidth and
// weight, move tasks in and back out, tidy up.
//
// Layout: <cpu-root>/hpcsched/<instance>/<job>/<pid>, <instance> is
// "hpcd-<daemon pid>". hpcd only ever writes below <cpu-root>/hpcsched/ and to
// cgroup.procs of a task's original cgroup (to give the task back). All paths
// go through `prefix`, so the whole layer runs against a fake tree in tests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpcd
{

enum class CgVersion { V1, V2 };

struct CgLayout {
	CgVersion version = CgVersion::V1;
	std::string root; // mount point of the hierarchy holding the cpu controller
};

// Find the cpu controller from the text of /proc/self/mountinfo. A v1
// "cgroup" mount whose options name "cpu" wins; else a "cgroup2" mount whose
// cgroup.controllers (read below `prefix`) lists "cpu". nullopt: `why` says
// what was found instead.
std::optional<CgLayout> find_cpu_cgroup(std::string_view mountinfo, const std::string &prefix,
					std::string &why);

// Path of a task's cgroup in the hierarchy of `v`, from the text of
// /proc/<pid>/cgroup ("N:cpu,cpuacct:/a/b" for v1, "0::/a/b" for v2).
std::optional<std::string> task_cgroup(std::string_view proc_cgroup, CgVersion v);

// Throttling statistics of a cgroup (cpu.stat).
struct CgStat {
	uint64_t nr_periods = 0;
	uint64_t nr_throttled = 0;
	uint64_t throttled_ns = 0;
};
CgStat parse_cpu_stat(std::string_view text, CgVersion v);

// v2 cpu.weight (1..10000, default 100) to v1 cpu.shares (2..262144, default 1024).
uint64_t weight_to_shares(uint32_t weight);

class Cgroups
{
public:
	// `prefix` is prepended to every path (empty on a real system); `fake`
	// means the tree is a plain directory tree (files are removed before
	// rmdir, which real cgroupfs forbids and never needs).
	Cgroups(CgLayout layout, std::string instance, std::string prefix = "", bool fake = false);

	const CgLayout &layout() const { return layout_; }
	// Absolute (prefixed) path of the instance directory.
	std::string instance_dir() const;
	// Paths relative to the hierarchy root, as /proc/<pid>/cgroup shows them.
	std::string rel_task_dir(const std::string &job, int pid) const;

	// mkdir hpcsched/ and hpcsched/<instance>/ (v2: enable +cpu down the
	// path). Throws std::runtime_error with the reason on failure.
	void setup();
	std::string rel_instance() const { return "/hpcsched/" + instance_; }
	// mkdir <job>/<pid>; returns the path relative to the hierarchy root.
	std::string create(const std::string &job, int pid);
	// Quota: quota_us < 0 means no limit. v1 writes the period only when
	// `write_period` (it is a separate file there).
	void set_quota(const std::string &rel, int64_t quota_us, uint32_t period_us,
		       bool write_period = true);
	void set_weight(const std::string &rel, uint32_t weight);
	void attach(const std::string &rel, int pid);
	std::vector<int> procs(const std::string &rel) const;
	CgStat stat(const std::string &rel) const;
	// Clear the quota, reset the weight, move every process of `rel` to
	// `origin` (relative path; the hierarchy root if that is gone) and rmdir
	// `rel` and its job directory if empty. Never throws; returns false if
	// something was left behind.
	bool release(const std::string &rel, const std::string &origin);
	// Release everything below the instance directory (processes whose
	// origin is unknown go to the hierarchy root) and remove it, and
	// hpcsched/ if it is then empty.
	bool teardown(const std::vector<std::pair<std::string, std::string>> &origins = {});

	// Absolute path of a relative cgroup path.
	std::string abs(const std::string &rel) const;

private:
	void write(const std::string &rel, const char *file, const std::string &val) const;
	// The quota and weight files hpcd writes while it runs stay open (an
	// open is a path walk, and emulating, a quota changes at every sleep and
	// wake-up of a sibling); copies of a Cgroups share them.
	struct KeptFiles {
		std::map<std::string, int> fd; // absolute path -> descriptor
		KeptFiles() = default;
		KeptFiles(const KeptFiles &) = delete;
		KeptFiles &operator=(const KeptFiles &) = delete;
		~KeptFiles();
	};
	void write_kept(const std::string &rel, const char *file, const std::string &val);
	// Close the kept files of `rel` and of the cgroups below it.
	void close_kept(const std::string &rel);
	bool remove_dir(const std::string &rel) const;
	CgLayout layout_;
	std::string instance_, prefix_;
	bool fake_;
	std::shared_ptr<KeptFiles> kept_ = std::make_shared<KeptFiles>();
};

// Reads and writes of small files; write_file throws std::system_error.
std::optional<std::string> read_file(const std::string &path);
void write_file(const std::string &path, const std::string &val);

// Remove the trees of hpcd instances whose daemon is dead (hpcd --cleanup).
// Returns the number of instance trees removed.
int cleanup_stale(const CgLayout &layout, const std::string &prefix, std::string &log,
		  bool fake = false);

} // namespace hpcd
