// hpcd: the user-space SCHED_HPC controller. Balances the tasks of SPMD
// (MPI) applications on emulated SMT cores with cgroup CPU bandwidth (mode
// quota) or CPU weights (mode weight), driving the policy core with iteration
// boundaries from the MPI monitor's records, or else from the scheduler's
// tracepoints (bpfsource.hpp) or /proc samples (procstat.hpp).
//
// This file is the daemon's plumbing: start-up, the sockets, the control
// requests, status, the watchers and the sampling timer. It reads the event
// sources (bpfsource.cpp, monitor.cpp, procstat.cpp with wakefilter.cpp),
// which are hpcd's equivalent of the kernel's scheduler core: what they tell
// goes to the hooks (hooks.cpp), as the kernel's core calls the class's hooks
// (kernel/kernel/sched/hpc.c); the hooks hand each event to the policy core
// (kernel/hpc-core/hpc_policy.c), whose decisions the mechanism
// (mechanism.cpp) applies. README.md, "One event, three files".
//
// See tools/hpcd/README.md and hpcd(8).
#include "hpcd.hpp"
#include "params_text.hpp"

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

// hpcd's own CPU time so far (utime + stime of /proc/self/stat), in ms.
uint64_t own_cpu_ms()
{
	auto s = proc_stat(0);
	long hz = ::sysconf(_SC_CLK_TCK);
	return s && hz > 0 ? (s->utime + s->stime) * 1000 / static_cast<uint64_t>(hz) : 0;
}

} // namespace

namespace hpcd
{

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

// One period of the sampling timer: what the event sources tell goes to the
// hooks (hooks.cpp: the monitor's records, the BPF source's and /proc's
// sleeps and wake-ups), then the period's tick (Daemon::on_tick), which
// applies the plan if anything changed.
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
	on_tick();
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
		on_runnable(t, tr->second.runnable());
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
		on_runnable(t, t.traced->runnable());
	}
	if (const uint64_t lost = bpf_->lost(); lost > said_lost_) {
		log(fmt::format("BPF source: {} event(s) lost so far (ring buffer full): a "
				"task's state may lag until its next event",
				lost));
		said_lost_ = lost;
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

// One record of a rank's monitor: a hello adopts the rank, a bye releases
// it, an iteration goes to its hook (Daemon::on_iteration).
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
		on_iteration(r);
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
		    {"waits", waits_name(e.s.waits)},
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

} // namespace hpcd

namespace
{

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
