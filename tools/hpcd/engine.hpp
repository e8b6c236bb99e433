// hpcd's policy engine: the managed tasks, their pairing on emulated SMT
// cores, the policy core's events, and what each task's cgroup should be set
// to. No I/O: hpcd.cpp feeds it samples and datagrams and applies its plan.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include "hpc_policy.h"
#include "hpc_smt.h"
#include "hpcmon_proto.h"
}

namespace hpcd
{

// A: SMT emulation by CPU bandwidth (each context its own CPU, quotas).
// B: the container paper's intra-host algorithm (both contexts of a core share
//    one CPU, cpu.weight/cpu.shares from sliding-window execution times).
enum class Mode { Quota, Weight };

// How a waiting context behaves on the emulated SMT core (quota mode). Sleep:
// it leaves the core to its sibling, which runs in single-thread mode. Poll:
// it keeps issuing instructions, as MPI's polling waits do on real SMT
// hardware, so its sibling stays at the two-context speed of the model. With
// Poll the ranks may really sleep (libhpcmon's HPCMON_BLOCKING_WAIT=1): the
// emulated machine still polls, but the host's CPU is not spent on it and a
// waiting rank is never held back by its own quota, so it sees a message as
// soon as it comes, as a low-priority polling context does.
enum class Waits { Sleep, Poll };

// The priorities the quota emulation can represent, as every emulation.
constexpr hpc_prio_range kBackendRange{HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX};
// Smallest quota CFS accepts (v1 cfs_quota_us and v2 cpu.max).
constexpr int64_t kMinQuotaUs = 1000;
// cpu.weight units of an average task in weight mode (the v2 default).
constexpr uint32_t kWeightUnit = 100;

struct Settings {
	hpc_params params{};
	Mode mode = Mode::Quota;
	bool balance = true; // false: the baseline, every task at HPC_PRIO_NORMAL
	Waits waits = Waits::Sleep;
	uint32_t period_us = HPC_DEF_EMUL_PERIOD_US;
	uint32_t window = 5;           // weight mode: sliding window (iterations)
	uint32_t wait_weight = 10;     // weight mode: waitValue, for ranks waiting
	std::vector<int> ignore_ranks; // MPI ranks not adopted (e.g. a master, rank 0)
	Settings() { hpc_params_default(&params); }
};

// What a task's cgroup should hold.
struct Quota {
	int64_t quota_us = -1; // < 0: no limit
	uint32_t period_us = HPC_DEF_EMUL_PERIOD_US;
	bool operator==(const Quota &) const = default;
};

// Mechanism A for one context: its speed while both contexts compute is
// hpc_smt_speed(own, sib, busy) permille of a CPU; alone or beside a sibling
// that is not busy (asleep, and Waits::Sleep) it runs unthrottled. `dilation` > 1 when several
// contexts share a CPU: every context then runs 1/dilation as fast (period x dilation, same quota),
// so ratios between contexts stay those of the model.
Quota smt_quota(uint32_t own_prio, uint32_t sib_prio, bool has_sib, bool sib_busy,
		uint32_t period_us, unsigned dilation);

// Mechanism B: cpuUnits_k = exeT_k / sum(exeT), as cpu.weight with
// `units` per task on average (clamped to 1..10000). All-zero: all `units`.
std::vector<uint32_t> window_weights(const std::vector<uint64_t> &exe_t, uint32_t units);

struct Task {
	int pid = 0;
	std::string name, job;
	int rank = -1;                        // MPI rank when the monitor said hello
	uint64_t seq = 0;                     // order of arrival (ranks: of the job's first rank)
	bool launcher = false;                // e.g. mpirun whose ranks are managed: not paired
	int launched_by = 0;                  // the managed launcher it descends from (0: none)
	uint32_t static_prio = 0;             // > 0: fixed priority (the core still accounts)
	bool monitored = false;               // iteration boundaries come from datagrams
	uint64_t last_record_ns = 0;          // end of its last record (or its adoption)
	std::optional<hpcmon_record> pending; // waits for the sibling's record
	uint64_t pending_since = 0;
	hpc_task t{};
	bool live_runnable = true; // last /proc sample
	// weight mode
	std::deque<uint64_t> win;
	bool reported = false;
	uint32_t weight = kWeightUnit;
	// placement and plan
	int ctx = -1; // context index: core ctx/2, sibling ctx^1
	int cpu = -1;
	Quota quota;
	// cgroup bookkeeping (hpcd.cpp)
	std::string cg, origin;
	uint64_t closes = 0;
	uint64_t logged_closes = 0; // hpcd.cpp: closes already logged (-v)
};

uint32_t hpc_clamp_normal(const hpc_params &p);

class Engine
{
public:
	Settings s;
	std::vector<int> cpus{0, 1};
	std::map<int, Task> tasks;

	Task &add(int pid, const std::string &name, const std::string &job, int rank, uint64_t now);
	void remove(int pid);
	// Recompute pairing and CPUs (after adds, removes, launcher marks).
	void place();
	Task *find(int pid);
	Task *sibling(const Task &t);
	// Contexts per CPU (quota mode), >= 1.
	unsigned dilation() const;
	uint32_t applied_prio(const Task &t) const;

	// Policy core events. wakeup/record return true if an iteration closed.
	void sleep(int pid, uint64_t now);
	bool wakeup(int pid, uint64_t now);
	// A record of a rank whose sibling has not reported the same barrier yet
	// is held (until the sibling's arrives, or flush()): the two are then
	// applied in time order, so each side sees the other's wait, as the
	// kernel does. `now` is the arrival time.
	bool record(const hpcmon_record &r, uint64_t now = 0);
	// Apply records held for longer than `max_hold_ns`.
	void flush(uint64_t now, uint64_t max_hold_ns);
	// Apply the record held for `pid` now: it is leaving, and its last
	// iteration still counts.
	void settle(int pid);
	void live(int pid, bool runnable)
	{
		if (auto *t = find(pid))
			t->live_runnable = runnable;
	}
	// New knobs: bring priorities back into range.
	void params_changed();
	// Compute every task's quota and weight from the present state.
	void plan();
	std::vector<Task *> active();

private:
	void closed(Task &t, uint64_t now);
	bool apply_records(Task *x, Task *y);
	uint64_t seq_ = 0;
	std::map<std::string, uint64_t> job_seq_;
};

} // namespace hpcd
