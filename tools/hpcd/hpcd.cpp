// hpcd: the user-space SCHED_HPC controller. Balances the tasks of SPMD
// (MPI) applications on emulated SMT cores with cgroup CPU bandwidth (mode
// quota) or CPU weights (mode weight), driving the policy core with iteration
// boundaries from the MPI monitor's records, or else from the scheduler's
// tracepoints (bpfsource.hpp) or /proc samples (procstat.hpp).
//
// See tools/hpcd/README.md and hpcd(8).
#include "bpfsource.hpp"
#include "cgroup.hpp"
#include "control.hpp"
#include "engine.hpp"
#include "guardian.hpp"
#include "itlog.hpp"
#include "monitor.hpp"
#include "params_text.hpp"
#include "procstat.hpp"
#include "system.hpp"
#include "wakefilter.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <poll.h>
#include <set>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

using nlohmann::json;
using namespace hpcd;

namespace
{

// Where the sleeps and wake-ups of tasks without the monitor come from
// (--source, $HPCD_SOURCE).
const std::vector<std::string> kSources{"auto", "bpf", "proc"};

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

// What a mode does to the programs it manages, said when it is chosen.
std::string mode_cost(Mode m)
{
	if (m == Mode::SmtEmul)
		return fmt::format(
			"mode smt-emul: POWER5 SMT cores emulated by CPU bandwidth: a context "
			"runs at most at the model's two-context speed ({} permille of a CPU at "
			"equal priorities) while its sibling computes, and several contexts "
			"share a CPU where there are fewer CPUs than contexts, so programs run "
			"up to about 2x slower than without hpcd; for reproducing the paper "
			"and for tests (mode=weight uses the real CPUs)",
			hpc_smt_speed(HPC_PRIO_NORMAL, HPC_PRIO_NORMAL, true));
	return "mode weight: ranks keep the real CPUs; where they share CPUs, CPU "
	       "weights follow each rank's measured work and ranks are placed by load";
}

void log(const std::string &s)
{
	std::cerr << "hpcd: " << s << std::endl;
}

// Quota mode with fewer CPUs than SMT contexts: what is missing, and (unless
// --strict-cpus refuses) what hpcd does about it.
std::string too_few_cpus(size_t contexts, size_t cpus)
{
	return fmt::format("{} tasks need {} CPUs (one per SMT context) but {} {} available",
			   contexts, contexts, cpus, cpus == 1 ? "is" : "are");
}

std::string emulating(unsigned per_cpu)
{
	return fmt::format(": emulating {} contexts per CPU, everything runs {}x slower (ratios "
			   "as modelled)",
			   per_cpu, per_cpu);
}

// The control socket, unless another hpcd answers on its path.
int make_control(const std::string &path)
{
	const sockaddr_un a = unix_address(path);
	int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (::connect(probe, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0) {
		::close(probe);
		throw std::runtime_error("another hpcd answers on " + path +
					 " (use --control for a second instance)");
	}
	::close(probe);
	return listen_unix(SOCK_STREAM, path, 0600, 16);
}

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
	// Before anything changes: the options taken (0), else the exit status.
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
	void apply();
	void weigh_group();
	void sample();
	void start_source();
	void follow(int pid);
	void sample_proc(std::vector<int> &gone);
	void read_bpf();
	void on_events(Task &t, const std::vector<ProcEvent> &ev);
	void arm_timer();
	void on_record(const hpcmon_record &r);
	void on_monitor_read(int fd);
	void on_monitor_hangup(int pid);
	void read_monitor();
	void on_control_accept();
	void on_client(int fd, short rev);
	void on_signal();
	json status();
	void shutdown_all();
	void release_sockets();
	// Record what changed since the last look (itlog.hpp) and send it to
	// the watchers: of every task, or of `only` and its sibling (an
	// iteration of `only` closed: one look per event, not at every task).
	void note(const Task *only = nullptr);
	void log_records();
	std::string watch(uint64_t since, bool from_now, json &reply);
	void end_watchers(const std::string &reason);

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
	std::vector<int> exited();
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
	bool said_weighing_ = false; // weight mode: whether hpcd last said it weighs the ranks
	size_t said_contexts_ = 0; // the most SMT contexts hpcd said it emulates
	std::optional<Mode> said_mode_; // the mode hpcd last said what it costs
	uint64_t started_ = mono_ns(), samples_ = 0, records_ = 0;
};

// A managed task the monitor says hello for is a rank now: its boundaries
// come from the monitor (it was sampled from /proc if found under a launcher).
// What was sampled until now is the MPI start-up, not the application's
// iterations: its history starts again, so that Uniform's global utilisation
// and the trace's per-task table hold the monitored iterations only. It
// starts when MPI_Init returned, not when hpcd reads the hello: the first
// record may be read with it, and its iteration began at that hello.
std::string Daemon::join_existing(Task &t, const std::string &job, int rank, Via via,
				  uint64_t since)
{
	if (via != Via::Monitor || t.monitored || t.launcher)
		return "";
	t.rank = rank;
	if (!t.launched_by)
		t.job = job;
	e.start_monitored(t, since);
	log_.restart(t.pid);
	log(fmt::format("{} ({}) rank {}: the monitor said hello", t.pid, t.name, rank));
	// Its rank places it among the others (by rank): say where each is.
	e.place();
	announce(t);
	announce_moved();
	apply();
	return "";
}

// The managed launcher `pid` descends from (0: none). With `mark`, a managed
// ancestor that is not a launcher yet (a wrapper, mpirun started without
// saying so) becomes one: it steps out of the pairing, gets its CPUs back
// and its other children are adopted too.
int Daemon::launcher_above(int pid, bool mark)
{
	int found = 0;
	for (auto &[p, l] : e.tasks) {
		if (p == pid || (!l.launcher && (!mark || l.rank >= 0)) || !is_descendant(pid, p))
			continue;
		if (!l.launcher) {
			l.launcher = true;
			set_affinity(p, orig_cpus_[p]);
			applied_cpu_.erase(p);
			log(fmt::format("{} ({}) launches ranks: not paired", p, l.name));
			announce(l);
		}
		if (!found || is_descendant(p, found))
			found = p; // the nearest
	}
	return found;
}

// The cgroup a task goes back to when hpcd lets it go (`inside`: it is in
// one of hpcd's now).
std::string Daemon::origin_of(int pid, bool &inside) const
{
	auto pc = read_file("/proc/" + std::to_string(pid) + "/cgroup");
	std::string origin = pc ? task_cgroup(*pc, cg_.layout().version).value_or("/") : "/";
	if (origin.find_first_of(" \t\n") != std::string::npos)
		origin = "/";
	// A rank forked by a managed launcher starts in the launcher's cgroup:
	// its way home is the launcher's.
	const std::string mine = "/hpcsched/hpcd-" + std::to_string(::getpid()) + "/";
	inside = origin.rfind(mine, 0) == 0;
	if (inside) {
		std::string o = "/";
		for (auto &[p, t] : e.tasks)
			if (t.cg == origin)
				o = t.origin;
		origin = o;
	}
	return origin;
}

// The task's pidfd into the epoll set: its exit ends it at once.
void Daemon::watch_exit(int pid)
{
	if (const int fd = open_pidfd(pid); fd >= 0) {
		pidfds_[pid] = fd;
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t(uint32_t(pid)) << 32) | uint32_t(fd);
		::epoll_ctl(pidfd_ep_, EPOLL_CTL_ADD, fd, &ev);
	}
}

std::string Daemon::add(int pid, const std::string &name, const std::string &job_in, int rank,
			Via via, uint64_t since, bool settle_now)
{
	const uint64_t now = mono_ns();
	since = since && since <= now ? since : now;
	if (pid == ::getpid() || pid == g_.pid())
		return "pid " + std::to_string(pid) + " is hpcd itself";
	if (!proc_alive(pid))
		return "no process " + std::to_string(pid);
	if (Task *t = e.find(pid))
		return join_existing(*t, job_in, rank, via, since);
	bool inside = false;
	const std::string origin = origin_of(pid, inside);
	std::vector<int> cpus = get_affinity(pid);
	// Ranks under a launcher are its job, however they were found.
	const int up = via == Via::Monitor || via == Via::Scan ? launcher_above(pid, false) : 0;
	const std::string job = up ? "l" + std::to_string(up) : job_in;
	Task &t = e.add(pid, name.empty() ? proc_comm(pid) : name, job, rank, since);
	t.origin = origin;
	t.monitored = via == Via::Monitor;
	t.launcher = via == Via::Launcher;
	t.launched_by = up;
	try {
		t.cg = cg_.create(job, pid);
		if (!g_.track(t.cg, origin, pid, cpus))
			throw std::runtime_error("the guardian process is gone");
		cg_.set_quota(t.cg, -1, e.s.period_us);
		cg_.set_weight(t.cg, kWeightUnit);
		// A launcher's children inherit its cgroup (that is how its ranks
		// are found); a rank moves in when apply() says it needs to.
		in_cg_[pid] = inside ? -1 : 0;
		if (t.launcher) {
			cg_.attach(t.cg, pid);
			in_cg_[pid] = 1;
		}
	} catch (const std::exception &ex) {
		std::string err =
			std::string("cannot manage pid ") + std::to_string(pid) + ": " + ex.what();
		std::string rel = t.cg;
		e.remove(pid);
		if (!rel.empty()) {
			cg_.release(rel, origin);
			g_.untrack(rel);
		}
		return err;
	}
	orig_cpus_[pid] = cpus;
	applied_q_[pid] = Quota{-1, e.s.period_us};
	applied_w_[pid] = kWeightUnit;
	had_task_ = true;
	watch_exit(pid);
	follow(pid);
	// A rank whose launcher (mpirun, a wrapper) is managed: the launcher
	// steps out of the pairing and gets its CPUs back.
	if (via == Via::Monitor && !up)
		t.launched_by = launcher_above(pid, true);
	log(fmt::format("managing {} ({}) job {} rank {} in {}{}", pid, t.name, job, rank, t.cg,
			t.launcher ? " (launcher)" : ""));
	if (settle_now)
		settle();
	return "";
}

void Daemon::settle()
{
	e.place();
	max_tasks_ = std::max(max_tasks_, e.active().size());
	for (auto &[p, t] : e.tasks)
		if (!announced_ctx_.count(p))
			announce(t);
	announce_moved();
	apply();
}

// A rank placed before those already announced (a lower rank said hello
// later) moves them: say where they are now.
void Daemon::announce_moved()
{
	for (auto &[p, o] : e.tasks)
		if (auto it = announced_ctx_.find(p);
		    it != announced_ctx_.end() && it->second != o.ctx)
			announce(o);
}

// Tell the watchers that hpcd no longer manages `pid` (hpcctl run: its
// command has gone, nothing more will be said about it).
void Daemon::released(int pid)
{
	if (watchers_.empty())
		return;
	to_watchers(json{{"event", "released"}, {"pid", pid}}.dump() + "\n");
}

// Tell the watchers (hpcctl run/trace) who a task is.
void Daemon::announce(const Task &t)
{
	announced_ctx_[t.pid] = t.ctx;
	if (watchers_.empty())
		return;
	to_watchers(task_event(e, t).dump() + "\n");
}

// The processes a managed launcher started that are not its helpers
// (orted, hydra_pmi_proxy): those still in its cgroup, which its
// descendants inherit. Each is adopted as a rank of the launcher's job
// (its rank from the launcher's environment variables; ignore_ranks
// applies), its iterations sampled from /proc until the monitor says hello.
void Daemon::adopt_launched()
{
	std::vector<std::pair<int, int>> found; // pid, launcher
	std::set<int> seen;
	for (auto &[lp, l] : e.tasks) {
		if (!l.launcher)
			continue;
		for (int p : cg_.procs(l.cg))
			if (p != lp && !e.find(p) && seen.insert(p).second && !passed_.count(p))
				found.emplace_back(p, lp);
	}
	std::erase_if(passed_, [&](int p) { return !seen.count(p); });
	for (auto [p, lp] : found) {
		const std::string comm = proc_comm(p);
		if (comm.empty() || is_launcher_helper(comm))
			continue; // a helper, or a child of mpirun that has not exec'd yet
		auto env = read_file("/proc/" + std::to_string(p) + "/environ");
		if (env && env->empty() && !exec_done(p))
			continue; // exec has named it, its environment comes next: look again
		const int rank = env ? rank_from_environ(*env).value_or(-1) : -1;
		const auto &ig = e.s.ignore_ranks;
		if (rank >= 0 && std::find(ig.begin(), ig.end(), rank) != ig.end()) {
			passed_.insert(p);
			log(fmt::format("rank {} (pid {}, {}) is in ignore_ranks: not adopted", rank,
					p, comm));
			continue;
		}
		if (std::string err = add(p, comm, "", rank, Via::Scan); !err.empty()) {
			passed_.insert(p);
			log(err);
			continue;
		}
		log(fmt::format("{} ({}) rank {} started by launcher {}: adopted without the "
				"monitor, iterations {}",
				p, comm, rank, lp,
				e.find(p)->traced ? "from the scheduler's sleeps and wake-ups"
						  : "sampled from /proc"));
	}
}

// Drop the tasks @pids, launchers after the others: a launcher's release
// ends hpcctl run or trace, which must have its ranks' ends first (tasks that
// ended together, found in one look, come in pid order, the launcher first).
void Daemon::drop_all(std::vector<int> pids, const char *why)
{
	std::stable_partition(pids.begin(), pids.end(), [this](int pid) {
		const Task *t = e.find(pid);
		return !t || !t->launcher;
	});
	for (int pid : pids)
		drop(pid, why);
}

void Daemon::drop(int pid, const char *why)
{
	Task *t = e.find(pid);
	if (!t)
		return;
	// A rank's last record may still be held for its sibling's: it closes
	// the rank's last iteration, which the watchers see before it goes.
	e.settle(pid);
	note();
	std::string rel = t->cg, origin = t->origin;
	cg_.release(rel, origin);
	g_.untrack(rel);
	if (proc_alive(pid) && !orig_cpus_[pid].empty())
		set_affinity(pid, orig_cpus_[pid]);
	log(fmt::format("released {} ({}): {}", pid, t->name, why));
	if (t->traced)
		bpf_->remove(pid);
	e.remove(pid);
	log_.forget(pid);
	note(); // the sibling's record that waited for this one went in alone
	trackers_.erase(pid);
	orig_cpus_.erase(pid);
	applied_q_.erase(pid);
	applied_w_.erase(pid);
	applied_cpu_.erase(pid);
	announced_ctx_.erase(pid);
	in_cg_.erase(pid);
	if (auto it = pidfds_.find(pid); it != pidfds_.end()) {
		::close(it->second);
		pidfds_.erase(it);
	}
	released(pid);
	apply();
	if (o_.exit_when_idle && had_task_ && e.tasks.empty() && running_) {
		log("no task left: exiting (--exit-when-idle)");
		end_reason_ = "no task left (--exit-when-idle)";
		running_ = false;
		release_sockets(); // a new client must not reach a daemon on its way out
	}
}

// Moving tasks into a child cgroup makes them one scheduling entity against
// the rest of the machine: give hpcd's tree the weight its tasks had (100 per
// task, cpu.weight units), or --group-weight.
void Daemon::weigh_group()
{
	// The most cgroups allow, unless --group-weight says otherwise: the
	// managed job runs ahead of other normal work, as SCHED_HPC ranks above
	// the fair class. (100 per task was measured to be less than the tasks
	// had outside: a root-level task against a nice-10 build kept 87 % of a
	// CPU, one two levels down in a tree of 100 per task 58 %.)
	uint32_t w = o_.group_weight ? o_.group_weight : 10000;
	if (w == group_w_)
		return;
	try {
		cg_.set_weight(cg_.rel_instance(), w);
		// hpcsched/ is shared by hpcd instances: never lower it.
		uint32_t parent = w;
		auto cur = read_file(cg_.abs("/hpcsched") + (cg_.layout().version == CgVersion::V1
								     ? "/cpu.shares"
								     : "/cpu.weight"));
		if (cur) {
			uint64_t c = std::strtoull(cur->c_str(), nullptr, 10);
			if (cg_.layout().version == CgVersion::V1)
				c = c * 100 / 1024;
			parent = std::max<uint32_t>(
				w, static_cast<uint32_t>(std::min<uint64_t>(c, 10000)));
		}
		cg_.set_weight("/hpcsched", parent);
		group_w_ = w;
	} catch (const std::exception &ex) {
		log(std::string("group weight: ") + ex.what());
	}
}

// Bring cgroups and affinities in line with the engine's plan.
void Daemon::apply()
{
	changed_ = false;
	last_apply_ = mono_ns();
	// More contexts than CPUs (from --pid, hpcctl run or the monitor's
	// hellos): say so once for every new high.
	if (size_t n = e.active().size();
	    e.s.mode == Mode::SmtEmul && n > e.cpus.size() && n > said_contexts_) {
		said_contexts_ = n;
		log(too_few_cpus(n, e.cpus.size()) + emulating(e.dilation()));
	}
	if (e.s.mode != said_mode_) {
		said_mode_ = e.s.mode;
		log(mode_cost(e.s.mode));
	}
	note();
	weigh_group();
	e.plan();
	std::vector<int> gone;
	const bool own_cg = e.needs_cgroups();
	if (e.s.mode == Mode::Weight && e.weighing != said_weighing_) {
		said_weighing_ = e.weighing;
		log(e.weighing
			    ? "the ranks' loads differ (the heaviest > 1.5 times the lightest): "
			      "each rank in its cgroup, weighed and placed by load"
			    : "the ranks' loads are even again (within 1.25 times): back in their "
			      "own cgroups, unpinned, as under plain mpirun");
	}
	for (auto &[pid, t] : e.tasks) {
		try {
			// Into its own cgroup when quotas or weights are needed, back
			// to where it was when not.
			const int want = t.launcher || own_cg;
			if (in_cg_[pid] != want) {
				cg_.attach(want ? t.cg : t.origin, pid);
				in_cg_[pid] = want;
			}
			// Not pinned (weight mode, the kernel places it): its own
			// CPUs again if hpcd pinned it before.
			if (!t.launcher && t.cpu < 0 && applied_cpu_[pid] != 0) {
				if (!set_affinity(pid, orig_cpus_[pid])) {
					gone.push_back(pid);
					continue;
				}
				applied_cpu_[pid] = 0;
			}
			if (!t.launcher && t.cpu >= 0 && applied_cpu_[pid] != t.cpu + 1) {
				if (!set_affinity(pid, {t.cpu})) {
					gone.push_back(pid);
					continue;
				}
				applied_cpu_[pid] = t.cpu + 1;
			}
			// Outside its cgroup a task's quota and weight do nothing:
			// they are written when it moves in (a write of cpu.shares
			// locks every CPU's runqueue, and weights change with every
			// barrier).
			if (!want)
				continue;
			auto &q = applied_q_[pid];
			if (!(q == t.quota)) {
				cg_.set_quota(t.cg, t.quota.quota_us, t.quota.period_us,
					      q.period_us != t.quota.period_us);
				q = t.quota;
			}
			uint32_t w =
				e.s.mode == Mode::Weight && !t.launcher ? t.weight : kWeightUnit;
			if (applied_w_[pid] != w) {
				cg_.set_weight(t.cg, w);
				applied_w_[pid] = w;
			}
		} catch (const std::exception &ex) {
			log(fmt::format("pid {}: {}", pid, ex.what()));
		}
	}
	drop_all(gone, "exited");
	arm_timer();
}

// Sample every --sample-ms while a decision needs the tasks' live state
// (quotas, weights); when hpcd only watches (weight mode, nobody weighed or
// held back), every 50 ms: a program hpcd cannot speed up pays next to
// nothing. A rank without the monitor is never weighed (Engine::place_weight),
// so it is watched at that rate too, its iterations as coarse.
void Daemon::arm_timer()
{
	if (timer_ < 0)
		return;
	long ns = static_cast<long>(o_.sample_ms * 1e6);
	const bool watch_only = e.s.mode == Mode::Weight && !e.needs_cgroups();
	if (watch_only && !e.tasks.empty())
		ns = std::max(ns, 50000000L);
	if (ns == timer_ns_)
		return;
	timer_ns_ = ns;
	itimerspec its{{ns / 1000000000, ns % 1000000000}, {ns / 1000000000, ns % 1000000000}};
	::timerfd_settime(timer_, 0, &its, nullptr);
}

// The ranks' records and hangups waiting on their connections, in time order.
void Daemon::read_monitor()
{
	mon_.read_batched([this](const hpcmon_record &r) { on_record(r); },
			  [this](int pid) { on_monitor_hangup(pid); });
}

// The BPF source where the kernel allows it (--source auto), else /proc
// sampling: say which, and why not the first.
void Daemon::start_source()
{
	if (o_.source == "proc") {
		log(fmt::format("event source: /proc, sampled every {} ms (--source proc)",
				o_.sample_ms));
		return;
	}
	try {
		bpf_ = std::make_unique<BpfSource>(o_.bpf_btf);
		log("event source: bpf (the scheduler's tracepoints, every thread of each task)");
	} catch (const std::exception &ex) {
		if (o_.source == "bpf")
			throw std::runtime_error(std::string("--source bpf: ") + ex.what());
		log(fmt::format("event source: /proc, sampled every {} ms (no BPF source: {})",
				o_.sample_ms, ex.what()));
	}
}

// A new task's sleeps and wake-ups come from the BPF source from now on (its
// present state from /proc); a task it cannot follow is sampled.
void Daemon::follow(int pid)
{
	// Without its pidfd only /proc would tell that it exited.
	if (!bpf_ || !pidfds_.count(pid))
		return;
	try {
		bpf_->add(pid);
		auto ps = proc_stat(pid);
		e.find(pid)->traced.emplace(uint64_t{o_.min_burst_us} * 1000,
					    !ps || ps->state == 'R');
	} catch (const std::exception &ex) {
		log(std::string(ex.what()) + ": sampled from /proc");
	}
}

void Daemon::sample()
{
	uint64_t exp;
	(void)!::read(timer_, &exp, sizeof exp);
	samples_++;
	read_monitor();
	std::vector<int> gone;
	if (bpf_)
		read_bpf();
	sample_proc(gone);
	drop_all(gone, "gone from /proc");
	if (const uint64_t now = mono_ns(); !o_.no_adopt && now - last_scan_ >= 50000000ull) {
		last_scan_ = now;
		adopt_launched();
	}
	// A held record whose sibling's never came (its wait stayed below
	// min_wait): apply it alone.
	changed_ |= e.flush(mono_ns(), 20 * 1000000ull);
	// The period's tick, after every event up to now: the core judges the
	// task on the critical path, which never waits (hpc_on_tick()).
	changed_ |= e.tick(mono_ns());
	log_records();
	// Nothing happened in this period (no event, no record, no state
	// change): nothing to plan, unless the last plan is 50 ms old.
	if (const uint64_t now = mono_ns(); changed_ || now - last_apply_ >= 50000000ull)
		apply();
}

// The tasks the BPF source does not follow: their state and run time now.
void Daemon::sample_proc(std::vector<int> &gone)
{
	for (auto &[pid, t] : e.tasks) {
		if (t.traced)
			continue;
		auto ps = proc_stat(pid);
		if (!ps || ps->state == 'Z' || ps->state == 'X') {
			gone.push_back(pid);
			continue;
		}
		auto ss = read_file("/proc/" + std::to_string(pid) + "/schedstat");
		uint64_t run = ss ? parse_schedstat(*ss).value_or(0) : 0;
		auto tr = trackers_.try_emplace(pid, uint64_t{o_.min_burst_us} * 1000).first;
		auto ev = tr->second.sample(mono_ns(), ps->state, run);
		changed_ |= t.live_runnable != tr->second.runnable();
		t.live_runnable = tr->second.runnable();
		on_events(t, ev);
	}
}

// What the BPF source sent since the last period, then the wake-ups it held
// long enough (WakeFilter).
void Daemon::read_bpf()
{
	std::vector<ProcEvent> ev;
	for (const SchedEvent &x : bpf_->read()) {
		Task *t = e.find(x.pid);
		if (!t || !t->traced)
			continue;
		ev.clear();
		t->traced->push(x.wake ? ProcEvent::Wakeup : ProcEvent::Sleep, x.at, ev);
		on_events(*t, ev);
	}
	const uint64_t now = mono_ns();
	for (auto &[pid, t] : e.tasks) {
		if (!t.traced)
			continue;
		ev.clear();
		t.traced->flush(now, ev);
		on_events(t, ev);
		changed_ |= t.live_runnable != t.traced->runnable();
		t.live_runnable = t.traced->runnable();
	}
	if (const uint64_t lost = bpf_->lost(); lost > said_lost_) {
		log(fmt::format("BPF source: {} event(s) lost so far (ring buffer full): a "
				"task's state may lag until its next event",
				lost));
		said_lost_ = lost;
	}
}

// A sampled or traced task's sleeps and wake-ups, to the policy core (a rank
// with the monitor, or a launcher, has its boundaries from elsewhere).
void Daemon::on_events(Task &t, const std::vector<ProcEvent> &ev)
{
	if (t.monitored || t.launcher)
		return;
	changed_ |= !ev.empty();
	for (auto &x : ev) {
		if (x.kind == ProcEvent::Sleep) {
			e.sleep(t.pid, x.at);
		} else if (e.wakeup(t.pid, x.at)) {
			if (o_.verbose)
				log(fmt::format("{} iteration {} U {} prio {}", t.pid, t.t.nr_iter,
						t.t.last_util, e.applied_prio(t)));
			note(&t);
		}
	}
}

// The managed tasks whose pidfd says they exited. One look: the set is
// level-triggered, so a pidfd not reported now (or whose task is not reaped
// yet) is reported again at the next poll.
std::vector<int> Daemon::exited()
{
	std::vector<int> gone;
	std::vector<epoll_event> evs(std::max<size_t>(1, pidfds_.size()));
	const int n = ::epoll_wait(pidfd_ep_, evs.data(), static_cast<int>(evs.size()), 0);
	for (int i = 0; i < n; i++) {
		const int pid = static_cast<int>(evs[i].data.u64 >> 32);
		const int fd = static_cast<int>(evs[i].data.u64 & 0xffffffffu);
		auto it = pidfds_.find(pid);
		if (it != pidfds_.end() && it->second == fd && !proc_alive(pid))
			gone.push_back(pid);
	}
	return gone;
}

// One record of a rank's monitor.
void Daemon::on_record(const hpcmon_record &r)
{
	records_++;
	changed_ = true;
	const std::string job = fmt::format("j{:08x}", r.job);
	if (r.kind == HPCMON_HELLO) {
		auto &ig = e.s.ignore_ranks;
		if (std::find(ig.begin(), ig.end(), r.rank) != ig.end()) {
			log(fmt::format("rank {} (pid {}) is in ignore_ranks: not adopted", r.rank,
					r.pid));
		} else if (!o_.no_adopt) {
			std::string err = add(r.pid, "", job, r.rank, Via::Monitor, r.end_ns);
			if (!err.empty())
				log(err);
		}
	} else if (r.kind == HPCMON_BYE) {
		drop(r.pid, "the monitor said bye");
	} else if (r.kind == HPCMON_ITERATION) {
		e.record(r, mono_ns());
		log_records();
		// Records of one barrier close iterations of both siblings:
		// look after each, so that no iteration goes unseen.
		note(e.find(r.pid));
	}
}

// A rank's monitor that hung up without its bye: the rank is gone (or
// cannot speak any more); /proc would say so only at the next look.
void Daemon::on_monitor_hangup(int pid)
{
	if (const Task *t = e.find(pid); t && t->monitored)
		drop(pid, "its monitor hung up");
}

// A new connection's first records (its hello: the rank is adopted now).
void Daemon::on_monitor_read(int fd)
{
	mon_.read(
		fd, [this](const hpcmon_record &r) { on_record(r); },
		[this](int pid) { on_monitor_hangup(pid); });
	apply();
}

// -v: one line per iteration the monitor's records closed, for every rank
// (a held record is applied with its sibling's, or alone by flush()).
void Daemon::log_records()
{
	if (!o_.verbose)
		return;
	for (auto &[pid, t] : e.tasks) {
		if (!t.monitored || t.closes == t.logged_closes)
			continue;
		t.logged_closes = t.closes;
		log(fmt::format("{} rank {} iteration {} U {} heur {} run {} wait {} prio {}", pid,
				t.rank, t.t.nr_iter, t.t.last_util, t.t.heur_util,
				t.t.last_run / 1000, t.t.last_wait / 1000, e.applied_prio(t)));
	}
}

// hpcd's own CPU time so far (utime + stime of /proc/self/stat), in ms.
uint64_t own_cpu_ms()
{
	auto s = proc_stat(0);
	long hz = ::sysconf(_SC_CLK_TCK);
	return s && hz > 0 ? (s->utime + s->stime) * 1000 / static_cast<uint64_t>(hz) : 0;
}

json Daemon::status()
{
	const auto &l = cg_.layout();
	return json{{"pid", ::getpid()},
		    {"guardian", g_.pid()},
		    {"cgroup", l.version == CgVersion::V1 ? "v1" : "v2"},
		    {"cgroup_root", l.root},
		    {"instance", cg_.instance_dir()},
		    {"mode", mode_name(e.s.mode)},
		    {"balance", e.s.balance},
		    {"waits", e.s.waits == Waits::Poll ? "poll" : "sleep"},
		    {"heuristic", hpc::format_param(e.s.params, HPC_P_HEURISTIC)},
		    {"emul_period_us", e.s.period_us},
		    {"sample_ms", o_.sample_ms},
		    {"source", bpf_ ? "bpf" : "proc"},
		    {"period_ms", timer_ns_ / 1e6},
		    {"bpf_events", bpf_ ? bpf_->events() : 0},
		    {"bpf_lost", bpf_ ? bpf_->lost() : 0},
		    {"bpf_unmarked", bpf_ ? bpf_->unmarked() : 0},
		    {"bpf_unseen", bpf_ ? bpf_->unseen() : 0},
		    {"cpus", e.cpus},
		    {"topology",
		     {{"cpus", topo_.cpus.size()},
		      {"cores", topo_.cores},
		      {"packages", topo_.packages},
		      {"numa_nodes", topo_.numa_nodes},
		      {"smt", topo_.smt()}}},
		    {"dilation", e.dilation()},
		    {"tasks", e.tasks.size()},
		    {"control", o_.control},
		    {"monitor", o_.monitor},
		    {"adopt", !o_.no_adopt},
		    {"uptime_s", (mono_ns() - started_) / 1e9},
		    {"cpu_ms", own_cpu_ms()},
		    {"samples", samples_},
		    {"records", records_},
		    {"records_rejected", mon_.rejected()},
		    {"monitor_connections", mon_.connections()}};
}

void Daemon::on_control_accept()
{
	for (;;) {
		int fd = ::accept4(ctl_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		clients_[fd] = Client{};
	}
}

void Daemon::on_client(int fd, short rev)
{
	Client &c = clients_[fd];
	bool close_it = rev & (POLLHUP | POLLERR);
	if (rev & POLLIN) {
		char buf[4096];
		ssize_t n = ::read(fd, buf, sizeof buf);
		if (n <= 0)
			close_it = true;
		else
			c.in.append(buf, static_cast<size_t>(n));
		size_t nl;
		while ((nl = c.in.find('\n')) != std::string::npos) {
			std::string line = c.in.substr(0, nl);
			c.in.erase(0, nl + 1);
			if (watchers_.count(fd))
				continue; // a watcher's connection only streams events
			cur_client_ = fd;
			c.out += handle_line(e, hooks_, line) + "\n";
			cur_client_ = -1;
		}
		if (c.in.size() > 65536) {
			c.out += R"({"ok":false,"kind":"bad_request","error":"line too long"})"
				 "\n";
			close_it = true;
		}
	}
	while (!c.out.empty()) {
		ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
		if (n <= 0)
			break;
		c.out.erase(0, static_cast<size_t>(n));
	}
	// A watcher that does not read: let it go rather than grow without bound.
	if (c.out.size() > (8u << 20))
		close_it = true, c.out.clear();
	if (close_it && c.out.empty()) {
		::close(fd);
		clients_.erase(fd);
		watchers_.erase(fd);
	}
}

void Daemon::note(const Task *only)
{
	auto evs =
		only ? log_.scan(e, mono_ns(), {only, e.sibling(*only)}) : log_.scan(e, mono_ns());
	if (evs.empty() || watchers_.empty())
		return;
	std::string lines;
	for (const auto &ev : evs)
		lines += event_json(ev).dump() + "\n";
	to_watchers(lines);
}

// Queue `lines` for every watcher (sent as its socket takes them).
void Daemon::to_watchers(const std::string &lines)
{
	for (int fd : watchers_)
		clients_[fd].out += lines;
}

std::string Daemon::watch(uint64_t since, bool from_now, json &reply)
{
	if (cur_client_ < 0)
		return "";
	watchers_.insert(cur_client_);
	if (from_now)
		since = log_.next();
	uint64_t dropped = 0;
	std::string backlog;
	for (const auto &ev : log_.since(since, SIZE_MAX, dropped))
		backlog += event_json(ev).dump() + "\n";
	reply["next"] = log_.next();
	reply["dropped"] = dropped;
	return backlog;
}

// hpcd is exiting: tell every watcher why and hand it what is still queued
// (blocking, at most a second per watcher), so that a trace has the last
// iterations.
void Daemon::end_watchers(const std::string &reason)
{
	const std::string line = json{{"event", "end"}, {"reason", reason}}.dump() + "\n";
	for (int fd : watchers_) {
		std::string &out = clients_[fd].out;
		out += line;
		::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		timeval tv{1, 0};
		::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		while (!out.empty()) {
			ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
			if (n <= 0)
				break;
			out.erase(0, static_cast<size_t>(n));
		}
	}
	watchers_.clear();
}

void Daemon::on_signal()
{
	signalfd_siginfo si;
	while (::read(sig_, &si, sizeof si) == sizeof si) {
		if (si.ssi_signo == SIGCHLD) {
			int st;
			pid_t p;
			while ((p = ::waitpid(-1, &st, WNOHANG)) > 0)
				if (g_.reap(p)) {
					// Never run without a guardian: start another and
					// tell it everything again.
					log("the guardian died: starting a new one");
					g_.start(cg_);
					for (auto &[pid, t] : e.tasks)
						g_.track(t.cg, t.origin, pid, orig_cpus_[pid]);
				}
			continue;
		}
		log(fmt::format("signal {}: releasing every task", strsignal(si.ssi_signo)));
		end_reason_ = std::string("signal ") + strsignal(si.ssi_signo);
		running_ = false;
	}
}

void Daemon::shutdown_all()
{
	std::vector<int> pids;
	for (auto &[pid, t] : e.tasks)
		pids.push_back(pid);
	for (int pid : pids)
		drop(pid, "hpcd exits");
	cg_.teardown();
	g_.finish();
	end_watchers(end_reason_);
	for (auto &[fd, c] : clients_)
		::close(fd);
	release_sockets();
}

void Daemon::release_sockets()
{
	if (ctl_ >= 0) {
		::close(ctl_);
		ctl_ = -1;
		::unlink(o_.control.c_str());
	}
	if (mon_.listen_fd() >= 0) {
		mon_.close();
		::unlink(o_.monitor.c_str());
	}
}

// The settings (options first, then --set, which wins, then --heuristic):
// a bad one must change nothing. False if one is refused.
bool Daemon::take_settings()
{
	std::string msg;
	std::vector<std::string> kv{"mode=" + o_.mode, "balance=" + o_.balance,
				    "emul_period_us=" + std::to_string(o_.period_us)};
	kv.insert(kv.end(), o_.settings.begin(), o_.settings.end());
	if (!o_.heuristic.empty())
		kv.push_back("heuristic=" + o_.heuristic);
	if (SetErr err = apply_settings(e.s, kv, msg); err != SetErr::None) {
		log(msg);
		return false;
	}
	return true;
}

// The CPUs: the allowed ones, or --cpus (which must be allowed). False if
// --cpus is refused.
bool Daemon::take_cpus(std::vector<int> &cpus)
{
	std::vector<int> allowed = allowed_cpus();
	cpus = allowed;
	if (o_.cpus.empty())
		return true;
	auto c = parse_cpulist(o_.cpus);
	if (!c) {
		log("--cpus: '" + o_.cpus + "' is not a CPU list (e.g. 0-3 or 0,2,4)");
		return false;
	}
	for (int x : *c)
		if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) {
			log(fmt::format("--cpus: CPU {} is not available (allowed: {})", x,
					format_cpulist(allowed)));
			return false;
		}
	cpus = *c;
	return true;
}

// Real SMT siblings (hwloc) form the pairs; without SMT consecutive CPUs
// emulate a core.
void Daemon::pair_cpus(const std::vector<int> &cpus)
{
	std::string terr;
	if (auto t = load_topology(terr))
		topo_ = *t;
	else
		log(terr + ": no SMT information, consecutive CPUs are paired");
	e.cpus = smt_order(cpus, topo_);
	e.real_smt = pairs_are_threads(e.cpus, topo_);
	if (e.real_smt)
		log(fmt::format(
			"real SMT: CPUs {} pair as hardware threads of one core; in mode "
			"weight the lighter thread of a busy core runs hpc_smt_real_duty() of "
			"each period (e.g. {} permille at priorities 4 beside 6)",
			format_cpulist(e.cpus), hpc_smt_real_duty(4, 6)));
}

// The --pid tasks and their --prio: 0 if hpcd can take them, else its exit
// status.
int Daemon::check_pids()
{
	if (o_.prios.size() > o_.pids.size()) {
		log("--prio: more priorities than --pid");
		return 2;
	}
	for (uint32_t p : o_.prios)
		if (p != 0 && p < kBackendRange.min) {
			log(fmt::format("--prio: {} is outside {}..{} (0: dynamic)", p,
					kBackendRange.min, kBackendRange.max));
			return 2;
		}
	size_t need = o_.pids.size();
	if (e.s.mode == Mode::SmtEmul && need > e.cpus.size() && o_.strict_cpus) {
		log(too_few_cpus(need, e.cpus.size()) + " (--strict-cpus)");
		return 3;
	}
	return 0;
}

// The options taken: 0, else hpcd's exit status (nothing changed).
int Daemon::configure()
{
	std::vector<int> cpus;
	if (!take_settings() || !take_cpus(cpus))
		return 2;
	pair_cpus(cpus);
	return check_pids();
}

// Signals come through signalfd (sig_), not handlers.
void Daemon::block_signals()
{
	sigset_t mask;
	sigemptyset(&mask);
	for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT})
		sigaddset(&mask, s);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	std::signal(SIGPIPE, SIG_IGN);
	sig_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

// The sockets, the sampling timer, the pidfds' epoll set and the event source.
void Daemon::open_fds()
{
	ctl_ = make_control(o_.control);
	mon_.open(o_.monitor, 0666);
	timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pidfd_ep_ = ::epoll_create1(EPOLL_CLOEXEC);
	if (pidfd_ep_ < 0)
		throw std::system_error(errno, std::generic_category(), "epoll_create1");
	arm_timer();
	start_source();
}

// What the control socket's requests do (control.hpp).
void Daemon::install_hooks()
{
	hooks_.add = [this](int pid, const std::string &name, bool launcher) {
		return add(pid, name, "d" + std::to_string(::getpid()), -1,
			   launcher ? Via::Launcher : Via::Control);
	};
	hooks_.remove = [this](int pid) { drop(pid, "hpcctl asked"); };
	hooks_.status = [this] { return status(); };
	hooks_.stat = [this](const Task &t) { return cg_.stat(t.cg); };
	hooks_.changed = [this] {
		// Mode changes move tasks: pin again, or give their CPUs back.
		for (auto &[pid, c] : applied_cpu_)
			c = -1;
		apply();
	};
	hooks_.shutdown = [this] {
		end_reason_ = "shutdown requested";
		running_ = false;
	};
	hooks_.events = [this](uint64_t since, size_t max) {
		uint64_t dropped = 0;
		json evs = json::array();
		for (const auto &ev : log_.since(since, max, dropped))
			evs.push_back(event_json(ev));
		return json{{"next", evs.empty() ? std::max(since, log_.next())
						 : evs.back()["seq"].get<uint64_t>() + 1},
			    {"dropped", dropped},
			    {"events", evs}};
	};
	hooks_.watch = [this](uint64_t since, bool from_now, json &reply) {
		return watch(since, from_now, reply);
	};
}

// The --pid tasks are placed once, together: one by one, each add would
// re-plan (and, emulating, re-write) every task before it.
void Daemon::add_pids()
{
	for (size_t i = 0; i < o_.pids.size(); i++) {
		int pid = o_.pids[i];
		std::string err =
			add(pid, "", "d" + std::to_string(::getpid()), -1, Via::Control, 0, false);
		if (!err.empty())
			throw std::runtime_error(err);
		if (i < o_.prios.size())
			e.find(pid)->static_prio = o_.prios[i];
	}
	settle();
}

void Daemon::say_ready()
{
	log(fmt::format("ready: control {}, monitor {}, cgroup {} {}, mode {}, CPUs {} "
			"(hwloc: {} package(s), {} core(s), {} CPU(s), {}, {} NUMA "
			"node(s))",
			o_.control, o_.monitor, cg_.layout().version == CgVersion::V1 ? "v1" : "v2",
			cg_.instance_dir(), mode_name(e.s.mode), format_cpulist(e.cpus),
			topo_.packages, topo_.cores, topo_.cpus.size(),
			topo_.smt() ? "SMT" : "no SMT", topo_.numa_nodes.size()));
}

// One wait for whatever comes first, and what it brings.
void Daemon::poll_once()
{
	std::vector<pollfd> fds{{sig_, POLLIN, 0},
				{timer_, POLLIN, 0},
				{mon_.listen_fd(), POLLIN, 0},
				{ctl_, POLLIN, 0}};
	// A rank's connection until its hello; then read on the timer
	// (MonitorSocket::read_batched, in sample()).
	for (int fd : mon_.eager_fds())
		fds.push_back({fd, POLLIN, 0});
	for (auto &[fd, c] : clients_)
		fds.push_back({fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
	const size_t first_pidfd = fds.size();
	fds.push_back({pidfd_ep_, POLLIN, 0});
	if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
		throw std::system_error(errno, std::generic_category(), "poll");
	if (fds[0].revents)
		on_signal();
	if (fds[2].revents)
		mon_.accept_all();
	for (size_t i = 4; i < fds.size(); i++)
		if (fds[i].revents && mon_.is_eager(fds[i].fd))
			on_monitor_read(fds[i].fd);
	if (fds[1].revents)
		sample();
	if (fds[3].revents)
		on_control_accept();
	for (size_t i = 4; i < first_pidfd; i++)
		if (fds[i].revents && clients_.count(fds[i].fd))
			on_client(fds[i].fd, fds[i].revents);
	// Last: tasks that exited, once what the monitor sent before the exit
	// (a rank's last records, its bye) is in.
	if (fds[first_pidfd].revents) {
		std::vector<int> gone = exited();
		if (!gone.empty())
			read_monitor();
		drop_all(gone, "exited");
	}
}

int Daemon::run()
{
	if (int rc = configure())
		return rc;
	cg_.setup();
	g_.start(cg_);
	block_signals();
	int rc = 0;
	try {
		open_fds();
		install_hooks();
		add_pids();
		say_ready();
		while (running_)
			poll_once();
	} catch (const std::exception &ex) {
		log(ex.what());
		rc = 1;
	}
	shutdown_all();
	// What managing cost (make bench reads this line).
	log(fmt::format("ran {:.3f} s, CPU {} ms (/proc/self/stat utime+stime), at most {} "
			"managed task(s), {} event(s) logged",
			(mono_ns() - started_) / 1e9, own_cpu_ms(), max_tasks_, log_.next() - 1));
	return rc;
}

// hpcd's options, into `o`.
void add_options(CLI::App &app, Opts &o)
{
	app.set_version_flag("--version", "hpcd (hpcsched) " HPCSCHED_VERSION);
	app.add_option("--pid", o.pids, "manage this process (repeatable; paired in order)")
		->check(CLI::PositiveNumber);
	app.add_option("--prio", o.prios,
		       "fixed priority of the --pid of the same position (0: dynamic), repeatable")
		->check(CLI::Range(0u, kBackendRange.max));
	app.add_option("--group-weight", o.group_weight,
		       "cpu.weight of hpcd's tree against the rest (default 10000, the most)")
		->check(CLI::Range(1u, 10000u));
	app.add_option("--cpus", o.cpus, "CPUs to use, e.g. 0-3 (default: all allowed)");
	app.add_option("--mode", o.mode,
		       "weight (default): CPU weights by measured work on the real CPUs; "
		       "smt-emul (or quota): POWER5 SMT emulation by CPU bandwidth, for "
		       "reproductions and tests (slows every program down)")
		->check(CLI::IsMember({"weight", "smt-emul", "quota"}));
	app.add_option("--heuristic", o.heuristic, hpc::heuristic_choice())
		->check(CLI::IsMember(hpc::heuristic_names()));
	app.add_option("--balance", o.balance, "off: baseline (every task at priority 4)")
		->check(CLI::IsMember({"on", "off"}));
	app.add_option("--set", o.settings, "tunable KEY=VALUE (sysfs names), repeatable");
	app.add_option("--period-us", o.period_us, "bandwidth period (emul_period_us)")
		->check(CLI::Range(HPC_MIN_EMUL_PERIOD_US, HPC_MAX_EMUL_PERIOD_US));
	app.add_option("--sample-ms", o.sample_ms,
		       "how often hpcd looks at its tasks (BPF events or /proc samples) and "
		       "applies its plan (50 ms while it only watches)")
		->check(CLI::Range(0.1, 1000.0));
	app.add_option("--min-burst-us", o.min_burst_us,
		       "run bursts up to this long inside a wait do not split it")
		->check(CLI::Range(0u, 1000000u));
	app.add_option("--source", o.source,
		       "where the sleeps and wake-ups of tasks without the MPI monitor come from: "
		       "bpf (the scheduler's tracepoints, exact), proc (/proc sampled every "
		       "--sample-ms), auto (default: bpf where the kernel allows it; $HPCD_SOURCE)")
		->check(CLI::IsMember(kSources));
	app.add_option("--bpf-btf", o.bpf_btf,
		       "the running kernel's BTF for the BPF source (default: "
		       "/sys/kernel/btf/vmlinux)")
		->check(CLI::ExistingFile);
	app.add_option("--control", o.control, "control socket ($HPCD_CONTROL)");
	app.add_option("--monitor", o.monitor,
		       "the MPI monitor's socket: one connection per rank ($HPCD_SOCKET)");
	app.add_flag("--no-adopt", o.no_adopt,
		     "adopt no rank (neither on the monitor's hello nor under a launcher)");
	app.add_flag("--exit-when-idle", o.exit_when_idle, "exit when the last task has gone");
	app.add_flag("--strict-cpus", o.strict_cpus,
		     "refuse to emulate more contexts than there are CPUs");
	app.add_flag("--cleanup", o.cleanup, "remove cgroups of dead hpcd instances and exit");
	app.add_flag("-v,--verbose", o.verbose, "log every iteration");
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	o.control = env_or("HPCD_CONTROL", "/run/hpcd.ctl");
	o.monitor = env_or("HPCD_SOCKET", HPCMON_DEFAULT_SOCKET);
	o.source = env_or("HPCD_SOURCE", "auto");
	if (std::find(kSources.begin(), kSources.end(), o.source) == kSources.end()) {
		log("HPCD_SOURCE: '" + o.source + "' is not auto, bpf or proc");
		return 64;
	}
	CLI::App app{"hpcd: user-space SCHED_HPC controller (cgroup CPU weights, or SMT emulation)",
		     "hpcd"};
	add_options(app, o);
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		int rc = app.exit(e);
		return rc ? 64 : 0;
	}

	auto mi = read_file("/proc/self/mountinfo");
	std::string why;
	auto layout = mi ? find_cpu_cgroup(*mi, "", why) : std::nullopt;
	if (!layout) {
		log("no usable cgroup cpu controller: " + (mi ? why : "cannot read mountinfo"));
		return 1;
	}
	if (o.cleanup) {
		std::string l;
		int n = cleanup_stale(*layout, "", l);
		std::cerr << l;
		log(fmt::format("removed {} stale instance tree(s)", n));
		return 0;
	}
	// Two descriptors per rank (its monitor connection, its pidfd): a node's
	// 512 ranks pass the usual soft limit of 1024. Up to the hard limit.
	if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		::setrlimit(RLIMIT_NOFILE, &rl);
	}
	Cgroups cg(*layout, "hpcd-" + std::to_string(::getpid()));
	try {
		Daemon d(o, cg);
		return d.run();
	} catch (const std::exception &ex) {
		log(ex.what());
		cg.teardown();
		return 1;
	}
}
