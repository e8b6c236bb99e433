// hpcd's policy engine: the managed tasks, their pairing on emulated SMT
// cores, the policy core's events, and what each task's cgroup should be set
// to. No I/O: the hooks (hooks.cpp) feed it events, the mechanism
// (mechanism.cpp) applies its plan. Its members are defined in engine.cpp
// (the tasks, their pairing), hooks.cpp (the events) and mechanism.cpp (the
// plan, the placement and their helpers below).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "wakefilter.hpp"

extern "C" {
#include "hpc_policy.h"
#include "hpc_smt.h"
#include "hpcmon_proto.h"
}

namespace hpcd
{

// Weight (the default): the machine's real CPUs. The container paper's
//    intra-host algorithm: cpu.weight/cpu.shares from each rank's CPU work
//    over a sliding window, so that ranks sharing a CPU finish together;
//    where ranks outnumber CPUs, they are placed by measured load (a heavy
//    rank beside light ones), else the kernel places them. Never throttled.
// SmtEmul: SMT emulation by CPU bandwidth (each context its own CPU, quotas
//    from the POWER5 model): reproductions and tests; it slows every program
//    down to the emulated core's speed.
enum class Mode { Weight, SmtEmul };
const char *mode_name(Mode m);
// "weight", "smt-emul", or "quota" (the emulation's former name).
std::optional<Mode> parse_mode(const std::string &name);

// What the context of a rank that sleeps in a wait does on the emulated SMT
// core (smt-emul mode); the ranks may sleep in their waits (libhpcmon's
// HPCMON_BLOCKING_WAIT=1), so that a waiting rank is never held back by its
// own quota and sees a message as soon as it comes. Poll: it keeps issuing
// instructions at its priority, as MPI's polling waits do, so its sibling
// keeps the two-context speed of the model: every quota stays as it is
// while the ranks wait. Model: the SMT model's waiting context,
// hpc_smt_speed(own, sib, false), as fitted to the paper's tables: it
// releases the core part of the time and competes at normal priority for
// the rest; the sibling's quota changes at every wait, and CFS gives a
// cgroup a whole new quota at every change, so the emulated core runs faster
// than the model (tools/hpcd/README.md, "Waits"). Sleep: it idles,
// single-thread mode for its sibling, as the kernel's backend and scx_hpc
// emulate it (they cannot tell a task's wait from no task).
enum class Waits { Poll, Model, Sleep };
const char *waits_name(Waits w);
// "poll", "model" or "sleep".
std::optional<Waits> parse_waits(const std::string &name);

// The priorities the quota emulation can represent, as every emulation.
constexpr hpc_prio_range kBackendRange{HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX};
// Smallest quota and longest period CFS accepts (v1 cfs_quota_us and
// cfs_period_us, v2 cpu.max).
constexpr int64_t kMinQuotaUs = 1000;
constexpr uint32_t kMaxPeriodUs = 1000000;
// cpu.weight units of an average task in weight mode (the v2 default).
constexpr uint32_t kWeightUnit = 100;

struct Settings {
	hpc_params params{};
	Mode mode = Mode::Weight;
	bool balance = true; // false: the baseline, every task at HPC_PRIO_NORMAL
	Waits waits = Waits::Sleep;
	uint32_t period_us = HPC_DEF_EMUL_PERIOD_US;
	uint32_t window = 5; // weight mode: sliding window (iterations)
	// Weight mode: how long the loads must say so, at every iteration,
	// before hpcd starts or stops weighing the ranks (ms).
	uint32_t hold_ms = 250;
	std::vector<int> ignore_ranks; // MPI ranks not adopted (e.g. a master, rank 0)
	Settings() { hpc_params_default(&params); }
};

// What a task's cgroup should hold.
struct Quota {
	int64_t quota_us = -1; // < 0: no limit
	uint32_t period_us = HPC_DEF_EMUL_PERIOD_US;
	bool operator==(const Quota &) const = default;
};

// Mechanism A for one context: hpc_smt_emul_share_of(own, sib, what) permille of a CPU, what the
// sibling context holds (a task that computes, a task that waits, none); alone it runs
// unthrottled. `dilation` > 1 when several
// contexts share a CPU: every context then runs 1/dilation as fast (period x dilation, same quota;
// past CFS's longest period, kMaxPeriodUs, the same share of that), so ratios between contexts
// stay those of the model.
Quota smt_quota(uint32_t own_prio, uint32_t sib_prio, uint32_t what, uint32_t period_us,
		unsigned dilation);

// Weight mode on real SMT threads: the lighter of two sibling threads (by the
// core's priorities) runs hpc_smt_real_duty() of every period while its
// sibling is busy, so that the heavier one has the core to itself for the
// rest; equal priorities, an idle sibling or none: unthrottled. CFS's 1 ms
// minimum quota bounds the smallest duty (period_us >= 22 ms for all of it).
Quota real_smt_quota(uint32_t own_prio, uint32_t sib_prio, bool sib_busy, uint32_t period_us);

// Mechanism B: cpuUnits_k = exeT_k / sum(exeT), as cpu.weight with
// `units` per task on average (clamped to 1..10000). All-zero: all `units`.
std::vector<uint32_t> window_weights(const std::vector<uint64_t> &exe_t, uint32_t units);

// Mechanism B's placement where tasks outnumber CPUs: the CPU (index into
// `ncpu`) of each task given its load, longest load first onto the least
// loaded CPU, so that a heavy task shares its CPU with light ones.
std::vector<int> place_by_load(const std::vector<uint64_t> &load, size_t ncpu);
// The largest sum of loads on one CPU under `cpu_of` (indices < ncpu).
uint64_t busiest_cpu_load(const std::vector<uint64_t> &load, const std::vector<int> &cpu_of,
			  size_t ncpu);

struct Task {
	int pid = 0;
	std::string name, job;
	int rank = -1;            // MPI rank when the monitor said hello
	uint64_t seq = 0;         // order of arrival (ranks: of the job's first rank)
	bool launcher = false;    // e.g. mpirun whose ranks are managed: not paired
	int launched_by = 0;      // the managed launcher it descends from (0: none)
	uint32_t static_prio = 0; // > 0: fixed priority (the core still accounts)
	bool monitored = false;   // iteration boundaries come from the monitor's records
	// Else its sleeps and wake-ups from the BPF source, through this (none:
	// from /proc samples).
	std::optional<WakeFilter> traced;
	uint64_t last_record_ns = 0;          // end of its last record (or its adoption)
	std::optional<hpcmon_record> pending; // waits for the sibling's record
	uint64_t pending_since = 0;
	hpc_task t{};
	bool live_runnable = true; // last /proc sample
	// weight mode
	uint64_t work_ns = 0; // CPU time of the compute phases being applied (monitor; 0: unknown)
	uint32_t work_records =
		0;                // compute phases whose work_ns that is (a short wait closes none)
	std::deque<uint64_t> win; // work per iteration, the last `window` closed
	bool reported = false;
	uint32_t weight = kWeightUnit;
	// placement and plan
	int ctx = -1; // context index: core ctx/2, sibling ctx^1
	int cpu = -1; // < 0: not pinned (the kernel places it)
	Quota quota;
	// cgroup bookkeeping (hpcd.cpp, mechanism.cpp)
	std::string cg, origin;
	uint64_t closes = 0;
	uint64_t logged_closes = 0; // hooks.cpp: closes already logged (-v)
};

uint32_t hpc_clamp_normal(const hpc_params &p);
// Where a task's iteration boundaries come from: "monitor", "bpf" or "proc".
inline const char *task_source(const Task &t)
{
	return t.monitored ? "monitor" : t.traced ? "bpf" : "proc";
}

class Engine
{
public:
	Settings s;
	std::vector<int> cpus{0, 1};
	// cpus[2k] and cpus[2k+1] are hardware threads of one real SMT core
	// (hwloc): weight mode holds the lighter sibling back.
	bool real_smt = false;
	std::map<int, Task> tasks;

	Task &add(int pid, const std::string &name, const std::string &job, int rank, uint64_t now);
	void remove(int pid);
	// The monitor said hello for a task sampled from /proc until now: its
	// iterations start again at `since`, its sampled loads forgotten.
	void start_monitored(Task &t, uint64_t since);
	// Recompute pairing and CPUs (after adds, removes, launcher marks, and
	// in weight mode new loads).
	void place();
	Task *find(int pid);
	Task *sibling(const Task &t);
	// The context sharing an emulated core with `ctx`; -1: none.
	static int sibling_ctx(int ctx);
	// Weight mode on real SMT: the task on the other hardware thread of
	// t's core (nullptr: none, or not pinned).
	Task *thread_sibling(const Task &t);
	// Whether the ranks need cgroups of their own: quotas (the emulation, or
	// real SMT threads) or weights (more ranks than CPUs, with loads that
	// differ: see `weighing`). Otherwise hpcd only watches them, and they stay
	// where they were, as under plain mpirun.
	bool needs_cgroups();
	// Weight mode, more ranks than CPUs: the measured loads differ enough
	// for weights and placement to gain something (the heaviest more than
	// 1.5 times the lightest; once weighing, until within 1.25 times), and
	// have for s.hold_ms.
	bool weighing = false;
	// Since when the loads have said the opposite of `weighing` (nullopt:
	// they agree with it).
	std::optional<uint64_t> turn_since;
	unsigned stops = 0; // times weighing stopped since the loads were known
	// Weight mode: each active rank's load (ns of CPU per iteration, the
	// lower quartile of its window) when they were last compared; for hpcd's log.
	std::vector<uint64_t> loads;
	// Contexts per CPU (quota mode), >= 1.
	unsigned dilation() const;
	uint32_t applied_prio(const Task &t) const;
	uint32_t sibling_holds(const Task *sib) const; // HPC_SMT_SIB_*

	// Policy core events (hooks.cpp). wakeup/record return true if an
	// iteration closed.
	void sleep(int pid, uint64_t now);
	bool wakeup(int pid, uint64_t now);
	// The period's tick: true if the core judged a task (hpc_on_tick()).
	bool tick(uint64_t now);
	// A record of a rank whose sibling has not reported the same barrier yet
	// is held (until the sibling's arrives, or flush()): the two are then
	// applied in time order, so each side sees the other's wait, as the
	// kernel does. `now` is the arrival time.
	bool record(const hpcmon_record &r, uint64_t now = 0);
	// Apply records held for longer than `max_hold_ns`; true if there was one.
	bool flush(uint64_t now, uint64_t max_hold_ns);
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
	// Compute every task's quota and weight from the present state
	// (mechanism.cpp).
	void plan();
	std::vector<Task *> active();

private:
	void closed(Task &t, uint64_t now);
	void reweigh(const std::vector<Task *> &a, uint64_t now);
	void place_weight(const std::vector<Task *> &a);
	// Whether to weigh by the ranks' loads `floors`, as of `now`: hold.
	void decide_weighing(const std::vector<uint64_t> &floors, uint64_t now);
	uint64_t reweighed_at_ = 0; // end of the last iteration that made every rank report
	bool one_per_thread();
	Task *thread_sibling(const Task &t, bool one_per_thread);
	int other_thread(int cpu) const;
	std::vector<Task *> by_ctx();
	static Task *at_ctx(const std::vector<Task *> &v, int ctx);
	bool apply_records(Task *x, Task *y);
	uint64_t seq_ = 0;
	std::map<std::string, uint64_t> job_seq_;
};

} // namespace hpcd
