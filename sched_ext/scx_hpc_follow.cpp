// scx_hpc's loader: following process trees and cgroups (scx_hpc_follow.hpp).
#include "scx_hpc_follow.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <linux/magic.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>

extern "C" {
#include "scx_hpc.h"
}

namespace scxhpc
{

namespace
{

constexpr int kSchedExt = 7; // SCHED_EXT (include/uapi/linux/sched.h, 6.12+)

// The thread ids of process `pid` (/proc/PID/task), as directory entries.
std::vector<std::filesystem::path> threads_of(long pid)
{
	std::vector<std::filesystem::path> v;
	std::error_code ec;
	const std::string dir = "/proc/" + std::to_string(pid) + "/task";
	for (const auto &e : std::filesystem::directory_iterator(
		     dir, std::filesystem::directory_options::skip_permission_denied, ec))
		if (std::strtol(e.path().filename().c_str(), nullptr, 10) > 0)
			v.push_back(e.path());
	return v;
}

long tid_of(const std::filesystem::path &p)
{
	return std::strtol(p.filename().c_str(), nullptr, 10);
}

// A cgroup v2 directory's id (its inode number); 0, said why, if `dir` is
// none.
uint64_t cgroup_id(const std::string &dir)
{
	struct statfs fs {
	};
	struct stat st {
	};
	if (statfs(dir.c_str(), &fs) || stat(dir.c_str(), &st)) {
		std::fprintf(stderr, "scx_hpc: --take-cgroup %s: %s\n", dir.c_str(),
			     std::strerror(errno));
		return 0;
	}
	if (fs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode)) {
		std::fprintf(stderr, "scx_hpc: --take-cgroup %s: not a cgroup v2 directory\n",
			     dir.c_str());
		return 0;
	}
	return st.st_ino;
}

} // namespace

bool Follower::check()
{
	for (long pid : pids) {
		if (pid <= 0 || access(("/proc/" + std::to_string(pid)).c_str(), F_OK)) {
			std::fprintf(stderr, "scx_hpc: --take-pid %ld: no such process\n", pid);
			return false;
		}
	}
	if (cgroups.size() > SCX_HPC_MAX_TAKE_CGROUPS) {
		std::fprintf(stderr, "scx_hpc: at most %d --take-cgroup\n",
			     SCX_HPC_MAX_TAKE_CGROUPS);
		return false;
	}
	for (auto &cg : cgroups) {
		const uint64_t id = cgroup_id(cg);
		if (!id)
			return false;
		cg_ids_.push_back(id);
	}
	return true;
}

// Switch a thread of the fair class to SCHED_EXT (it then runs under
// scx_hpc; children it forks afterwards inherit the policy). Threads that
// are SCHED_EXT already, real-time, deadline or gone are left as they are.
void Follower::take_tid(long tid)
{
	pid_t p = static_cast<pid_t>(tid);
	int pol = sched_getscheduler(p);
	if (pol < 0) {
		failed_ += errno != ESRCH;
		return;
	}
	pol &= ~SCHED_RESET_ON_FORK;
	if (pol != SCHED_OTHER && pol != SCHED_BATCH && pol != SCHED_IDLE)
		return;
	sched_param sp{};
	if (!sched_setscheduler(p, kSchedExt, &sp))
		switched_++;
	else if (errno != ESRCH)
		failed_++;
}

void Follower::take_threads(long pid)
{
	for (auto &t : threads_of(pid))
		take_tid(tid_of(t));
}

// Every thread of process `pid` and of its descendants. Each process is put
// in the BPF side's tree (`tgids_fd`) before its threads are switched and
// its children listed: a process it forks after that is reported by the
// BPF side, one forked before is in /proc/PID/task/TID/children.
void Follower::take_tree(long pid, int tgids_fd, int depth)
{
	if (depth > 64)
		return;
	uint32_t tgid = static_cast<uint32_t>(pid);
	uint8_t one = 1;
	bpf_map_update_elem(tgids_fd, &tgid, &one, BPF_ANY);
	for (auto &t : threads_of(pid)) {
		take_tid(tid_of(t));
		std::ifstream ch(t / "children");
		long kid;
		while (ch >> kid)
			take_tree(kid, tgids_fd, depth + 1);
	}
}

bool Follower::start(int cgroups_fd, int tgids_fd)
{
	for (uint64_t id : cg_ids_) {
		uint8_t one = 1;
		if (bpf_map_update_elem(cgroups_fd, &id, &one, BPF_ANY))
			return false;
	}
	for (long pid : pids)
		take_tree(pid, tgids_fd, 0);
	rescan();
	return true;
}

void Follower::rescan()
{
	for (auto &cg : cgroups) {
		std::ifstream f(cg + "/cgroup.threads");
		long tid;
		while (f >> tid)
			take_tid(tid);
	}
}

void Follower::drain(int events_fd)
{
	scx_hpc_take_event ev{};
	while (!bpf_map_lookup_and_delete_elem(events_fd, nullptr, &ev)) {
		events_[ev.why < 4 ? ev.why : 0]++;
		if (ev.threadgroup)
			take_threads(ev.pid);
		else
			take_tid(ev.pid);
	}
}

std::string Follower::events() const
{
	return "moved into a followed cgroup: " +
	       std::to_string(events_[SCX_HPC_TAKE_CGROUP_MOVE]) +
	       ", forked inside one: " + std::to_string(events_[SCX_HPC_TAKE_CGROUP_FORK]) +
	       ", forked into a followed tree: " + std::to_string(events_[SCX_HPC_TAKE_TREE_FORK]);
}

} // namespace scxhpc
