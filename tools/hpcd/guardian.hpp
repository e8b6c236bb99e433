// The guardian: a small process hpcd forks at start-up that undoes hpcd's
// cgroup changes when hpcd goes away, however it goes (exit, crash, SIGKILL).
//
// hpcd keeps the write end of a pipe; the guardian reads what hpcd tells it
// (each task's cgroup, original cgroup and CPU affinity) before hpcd
// changes anything, and blocks. When hpcd dies the kernel closes the write
// end, the guardian reads EOF, and then: lifts every quota, moves every task
// back to its original cgroup, restores its affinity and removes hpcd's
// cgroups. It runs in its own session, ignoring SIGINT/SIGTERM/SIGHUP, so a
// Ctrl-C or a kill of hpcd's process group leaves it to do its job.
#pragma once

#include "cgroup.hpp"

#include <string>
#include <sys/types.h>
#include <vector>

namespace hpcd
{

class Guardian
{
public:
	// Fork the guardian. Throws std::system_error.
	void start(const Cgroups &cg);
	pid_t pid() const { return pid_; }
	// Tell it about a task before moving it (false if the guardian is gone).
	bool track(const std::string &rel, const std::string &origin, int pid,
		   const std::vector<int> &cpus);
	bool untrack(const std::string &rel);
	// hpcd cleaned up itself: let the guardian go.
	void finish();
	// After the guardian died (SIGCHLD): reap it; true if it was ours.
	bool reap(pid_t dead);

private:
	bool send(const std::string &line);
	pid_t pid_ = -1;
	int fd_ = -1;
};

// The guardian's loop (also the unit under test): read records from `fd`
// until EOF, then undo everything. Returns the number of tasks restored.
int guardian_main(int fd, Cgroups cg);

} // namespace hpcd
