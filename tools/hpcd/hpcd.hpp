// hpcd's daemon: one class whose members are defined in three files, one per
// step of an event, as in the kernel class:
//   hpcd.cpp       the plumbing: start-up, sockets, control, status, watchers,
//                  the timer, and the event sources read there (hpcd's
//                  scheduler core), which call the hooks
//   hooks.cpp      the hooks: each task's events to the policy core
//   mechanism.cpp  the core's decisions into cgroups, weights and affinities
// (The Engine's members are split the same way: engine.cpp, hooks.cpp,
// mechanism.cpp.)
#pragma once

#include "bpfsource.hpp"
#include "cgroup.hpp"
#include "control.hpp"
#include "engine.hpp"
#include "guardian.hpp"
#include "itlog.hpp"
#include "monitor.hpp"
#include "procstat.hpp"
#include "system.hpp"

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcd
{

struct Opts {
	std::vector<int> pids;
	std::vector<uint32_t> prios;
	std::string cpus, control, monitor, mode = "weight", heuristic, balance = "on";
	std::vector<std::string> settings;
	uint32_t period_us = HPC_DEF_EMUL_PERIOD_US;
	double sample_ms = 2.0;
	uint32_t min_burst_us = 200;
	std::string source = "auto", bpf_btf;
	bool no_adopt = false, exit_when_idle = false, cleanup = false, strict_cpus = false;
	bool verbose = false;
	uint32_t group_weight = 0;
};

inline void log(const std::string &s)
{
	std::cerr << "hpcd: " << s << std::endl;
}

// What a mode does to the programs it manages, said when it is chosen; quota
// mode with fewer CPUs than SMT contexts: what is missing, and what hpcd does
// about it (mechanism.cpp).
std::string mode_cost(Mode m);
std::string too_few_cpus(size_t contexts, size_t cpus);
std::string emulating(unsigned per_cpu);

struct Client {
	std::string in, out;
};

// How a task came to hpcd: --pid or hpcctl's add (a launcher if hpcctl says
// so), the monitor's hello, or found under a managed launcher (adopt_launched).
enum class Via { Control, Launcher, Monitor, Scan };

class Daemon
{
public:
	Daemon(Opts o, Cgroups cg) : o_(std::move(o)), cg_(std::move(cg)) {}
	int run();

	Engine e;

private:
	// hpcd.cpp. Before anything changes: the options taken (0), else the
	// exit status.
	int configure();
	bool take_settings();
	bool take_cpus(std::vector<int> &cpus);
	void pair_cpus(const std::vector<int> &cpus);
	int check_pids();
	// Set up, then one wait (and what it brings) after another.
	void block_signals();
	void open_fds();
	void install_hooks();
	void add_pids();
	void say_ready();
	void poll_once();
	// `since`: when the task's history starts (the monitor's hello: when
	// MPI_Init returned; 0: now). `settle`: place every task and apply the
	// plan now (false: the caller does, once for a batch of adds).
	std::string add(int pid, const std::string &name, const std::string &job, int rank, Via via,
			uint64_t since = 0, bool settle = true);
	// Place every task, say who moved, and apply the plan.
	void settle();
	std::string origin_of(int pid, bool &inside) const;
	void watch_exit(int pid);
	std::string join_existing(Task &t, const std::string &job, int rank, Via via,
				  uint64_t since);
	int launcher_above(int pid, bool mark);
	void adopt_launched();
	void announce(const Task &t);
	void released(int pid);
	void to_watchers(const std::string &lines);
	void announce_moved();
	void drop(int pid, const char *why);
	void drop_all(std::vector<int> pids, const char *why);
	// The event sources (hpcd's scheduler core): what they tell goes to
	// the hooks.
	void sample();
	void start_source();
	void follow(int pid);
	void sample_proc(std::vector<int> &gone);
	void read_bpf();
	void arm_timer();
	void on_record(const hpcmon_record &r);
	void on_monitor_read(int fd);
	void on_monitor_hangup(int pid);
	void read_monitor();
	void on_control_accept();
	void on_client(int fd, short rev);
	void on_signal();
	nlohmann::json status();
	void shutdown_all();
	void release_sockets();
	// Record what changed since the last look (itlog.hpp) and send it to
	// the watchers: of every task, or of `only` and its sibling (an
	// iteration of `only` closed: one look per event, not at every task).
	void note(const Task *only = nullptr);
	std::string watch(uint64_t since, bool from_now, nlohmann::json &reply);
	void end_watchers(const std::string &reason);
	std::vector<int> exited();

	// hooks.cpp: each task's events to the policy core (through the Engine).
	void on_events(Task &t, const std::vector<ProcEvent> &ev);
	void on_runnable(Task &t, bool runnable);
	void on_iteration(const hpcmon_record &r);
	void on_tick();
	void log_records();

	// mechanism.cpp: the Engine's plan into cgroups, weights and affinities.
	void apply();
	void say_costs();
	void say_weighing();
	bool apply_task(Task &t, bool own_cg);
	void weigh_group();

	Opts o_;
	Cgroups cg_;
	Guardian g_;
	int ctl_ = -1, timer_ = -1, sig_ = -1;
	MonitorSocket mon_;
	std::map<int, Client> clients_;
	IterationLog log_;
	std::set<int> watchers_;
	int cur_client_ = -1;
	std::string end_reason_ = "hpcd exits";
	std::map<int, ProcTracker> trackers_;
	// The BPF source (null: /proc sampling); the tasks it follows have
	// their Task::traced.
	std::unique_ptr<BpfSource> bpf_;
	uint64_t said_lost_ = 0;
	// Something the plan depends on changed since the last apply().
	bool changed_ = true;
	uint64_t last_apply_ = 0;
	// pid -> its pidfd: a task's exit ends it at once, not at the next
	// sample (hpcctl run returns when its command's last task has gone).
	// They wait in one epoll set (pidfd_ep_), so that a wake-up of hpcd
	// costs the same with 4 tasks or 256.
	std::map<int, int> pidfds_;
	int pidfd_ep_ = -1;
	std::map<int, std::vector<int>> orig_cpus_;
	std::map<int, Quota> applied_q_;
	std::map<int, uint32_t> applied_w_;
	std::map<int, int> applied_cpu_;
	std::map<int, int> announced_ctx_; // the context each task was last announced on
	// Where a task is: 1 its own cgroup, 0 its original one, -1 another of
	// hpcd's (its launcher's, which it inherited).
	std::map<int, int> in_cg_;
	long timer_ns_ = 0;    // the sampling timer's present period
	std::set<int> passed_; // under a launcher, not adopted (ignore_ranks, failed)
	uint64_t last_scan_ = 0;
	uint32_t group_w_ = 0;
	Topology topo_;
	ControlHooks hooks_;
	bool running_ = true, had_task_ = false;
	size_t max_tasks_ = 0;
	bool said_weighing_ = false;    // weight mode: whether hpcd last said it weighs the ranks
	size_t said_contexts_ = 0;      // the most SMT contexts hpcd said it emulates
	std::optional<Mode> said_mode_; // the mode hpcd last said what it costs
	uint64_t started_ = mono_ns(), samples_ = 0, records_ = 0;
};

} // namespace hpcd
