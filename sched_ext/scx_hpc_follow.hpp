// scx_hpc's loader: following process trees and cgroups (--take-pid,
// --take-cgroup) for as long as the scheduler runs. The BPF side sees the
// forks and cgroup moves and queues the tasks that are not SCHED_EXT yet;
// the Follower switches them (a BPF program cannot change a task's policy),
// and the threads already there at load time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scxhpc
{

class Follower
{
public:
	std::vector<long> pids;           // --take-pid: process trees
	std::vector<std::string> cgroups; // --take-cgroup: cgroup v2 directories

	bool any() const { return !pids.empty() || !cgroups.empty(); }
	// Before anything is loaded: every process exists, every cgroup is a
	// cgroup v2 directory (at most SCX_HPC_MAX_TAKE_CGROUPS). False, said
	// why, if not.
	bool check();
	// Once the scheduler runs and the BPF side's programs are attached:
	// the cgroup ids into `cgroups_fd`, each tree's processes into
	// `tgids_fd`, every thread of them switched. False if the cgroup ids
	// cannot be written.
	bool start(int cgroups_fd, int tgids_fd);
	// Switch what the BPF side queued in `events_fd` (every 100 ms).
	void drain(int events_fd);
	// The followed cgroups again (once a second: a queue that was full, a
	// task put back into the fair class).
	void rescan();
	// Threads switched (and failed) so far.
	int switched() const { return switched_; }
	int failed() const { return failed_; }
	// What the BPF side reported, by enum scx_hpc_take_why, as one line.
	std::string events() const;

private:
	void take_tid(long tid);
	void take_threads(long pid);
	void take_tree(long pid, int tgids_fd, int depth);

	std::vector<uint64_t> cg_ids_;
	int switched_ = 0, failed_ = 0;
	int events_[4] = {};
};

} // namespace scxhpc
