// hpcd, step 3 of 3: the mechanism, hpcd's equivalent of the kernel's
// bandwidth backend (kernel/kernel/sched/hpc_emul.c). It turns the policy
// core's decisions (step 2: kernel/hpc-core/hpc_policy.c, through the hooks
// of step 1, hooks.cpp) into the machine's state: Engine::plan() computes each
// task's quota from the SMT model (hpc_smt.c), its weight and its CPU, with
// no I/O; Daemon::apply() writes them, through the Cgroups class
// (cgroup.cpp, a library as the kernel's bandwidth code is) and
// sched_setaffinity.
//
// Built twice: into hpcdlib the Engine's half (the unit tests drive it), into
// hpcd (HPCD_DAEMON) the Daemon's half, which calls hpcd.cpp.

#ifdef HPCD_DAEMON

#include "hpcd.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace hpcd
{

// Bring cgroups and affinities in line with the engine's plan (Engine::plan(),
// below); then release the tasks found gone and set the timer to what the
// plan needs (hpcd.cpp).
void Daemon::apply()
{
	changed_ = false;
	last_apply_ = mono_ns();
	say_costs();
	note();
	weigh_group();
	e.plan();
	std::vector<int> gone;
	const bool own_cg = e.needs_cgroups();
	say_weighing();
	for (auto &[pid, t] : e.tasks) {
		try {
			if (!apply_task(t, own_cg))
				gone.push_back(pid);
		} catch (const std::exception &ex) {
			log(fmt::format("pid {}: {}", pid, ex.what()));
		}
	}
	drop_all(gone, "exited");
	arm_timer();
}

// One task's part of the plan: its cgroup, its CPUs, its quota and weight.
// False: the task is gone (its affinity could not be set).
bool Daemon::apply_task(Task &t, bool own_cg)
{
	const int pid = t.pid;
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
		if (!set_affinity(pid, orig_cpus_[pid]))
			return false;
		applied_cpu_[pid] = 0;
	}
	if (!t.launcher && t.cpu >= 0 && applied_cpu_[pid] != t.cpu + 1) {
		if (!set_affinity(pid, {t.cpu}))
			return false;
		applied_cpu_[pid] = t.cpu + 1;
	}
	// Outside its cgroup a task's quota and weight do nothing:
	// they are written when it moves in (a write of cpu.shares
	// locks every CPU's runqueue, and weights change with every
	// barrier).
	if (!want)
		return true;
	auto &q = applied_q_[pid];
	if (!(q == t.quota)) {
		cg_.set_quota(t.cg, t.quota.quota_us, t.quota.period_us,
			      q.period_us != t.quota.period_us);
		q = t.quota;
	}
	uint32_t w = e.s.mode == Mode::Weight && !t.launcher ? t.weight : kWeightUnit;
	if (applied_w_[pid] != w) {
		cg_.set_weight(t.cg, w);
		applied_w_[pid] = w;
	}
	return true;
}

// What the mode costs, once it is chosen; more contexts than CPUs (from
// --pid, hpcctl run or the monitor's hellos): said once for every new high.
void Daemon::say_costs()
{
	if (size_t n = e.active().size();
	    e.s.mode == Mode::SmtEmul && n > e.cpus.size() && n > said_contexts_) {
		said_contexts_ = n;
		log(too_few_cpus(n, e.cpus.size()) + emulating(e.dilation()));
	}
	if (e.s.mode != said_mode_) {
		said_mode_ = e.s.mode;
		log(mode_cost(e.s.mode));
	}
}

// Weight mode: whether the ranks are weighed now, said when it changes.
void Daemon::say_weighing()
{
	if (e.s.mode != Mode::Weight || e.weighing == said_weighing_)
		return;
	said_weighing_ = e.weighing;
	std::string us;
	for (uint64_t l : e.loads)
		us += fmt::format("{}{}", us.empty() ? "" : " ", l / 1000);
	log(fmt::format("{} (CPU us per iteration: {})",
			e.weighing
				? "the ranks' loads differ (the heaviest > 1.5 times the "
				  "lightest): each rank in its cgroup, weighed and placed by load"
				: "the ranks' loads are even again (within 1.25 times): back in "
				  "their own cgroups, unpinned, as under plain mpirun",
			us));
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

} // namespace hpcd

#else // the Engine's half

#include "engine.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace hpcd
{

// Each task's quota from the core's priorities: the SMT model (smt_quota(),
// real_smt_quota()), or unthrottled; weights and CPUs are set as iterations
// close (reweigh(), place()).
void Engine::plan()
{
	const unsigned dil = dilation();
	const bool threads = s.mode == Mode::Weight && one_per_thread();
	// Each task's sibling, found through an index built once: the same
	// tasks as sibling() and thread_sibling() find (the first in pid
	// order), without a search per task.
	const auto ctxs = by_ctx();
	std::unordered_map<int, Task *> by_cpu;
	for (auto &[pid, t] : tasks) {
		hpc_task_next_prio(&t.t, &s.params, t.static_prio);
		if (!t.launcher && t.cpu >= 0)
			by_cpu.try_emplace(t.cpu, &t);
	}
	auto find = [](const std::unordered_map<int, Task *> &m, int k) -> Task * {
		auto it = m.find(k);
		return it == m.end() ? nullptr : it->second;
	};
	for (auto &[pid, t] : tasks) {
		if (t.launcher) {
			t.quota = Quota{-1, s.period_us};
			continue;
		}
		if (s.mode == Mode::Weight) {
			Task *sib = threads ? find(by_cpu, other_thread(t.cpu)) : nullptr;
			t.quota = sib ? real_smt_quota(applied_prio(t), applied_prio(*sib),
						       sib->live_runnable, s.period_us)
				      : Quota{-1, s.period_us};
			continue;
		}
		Task *sib = at_ctx(ctxs, sibling_ctx(t.ctx));
		t.quota = smt_quota(applied_prio(t), sib ? applied_prio(*sib) : 0,
				    sibling_holds(sib), s.period_us, dil);
	}
}

// What the sibling context `sib` (nullptr: none) holds, as Waits says a
// sleeping task's context does.
uint32_t Engine::sibling_holds(const Task *sib) const
{
	if (!sib)
		return HPC_SMT_SIB_NONE;
	if (sib->live_runnable || s.waits == Waits::Poll)
		return HPC_SMT_SIB_BUSY;
	return s.waits == Waits::Model ? HPC_SMT_SIB_WAITS : HPC_SMT_SIB_NONE;
}

// The priority to apply: a fixed one (hpc_task_next_prio(), called by plan()
// and the events, keeps it in t.t.prio too, where the sibling sees it), in
// the baseline too; else the core's, or normal in the baseline.
uint32_t Engine::applied_prio(const Task &t) const
{
	if (t.static_prio)
		return t.static_prio;
	return s.balance ? t.t.prio : hpc_clamp_normal(s.params);
}

uint32_t hpc_clamp_normal(const hpc_params &p)
{
	return std::clamp<uint32_t>(HPC_PRIO_NORMAL, p.min_prio, p.max_prio);
}

// `permille` of `period_us`, at least CFS's smallest quota.
static int64_t share_of(uint32_t period_us, uint32_t permille)
{
	const auto quota = static_cast<int64_t>(hpc_smt_budget(period_us, permille));
	return std::max(quota, kMinQuotaUs);
}

Quota smt_quota(uint32_t own_prio, uint32_t sib_prio, uint32_t what, uint32_t period_us,
		unsigned dilation)
{
	dilation = std::max(1u, dilation);
	Quota q;
	const uint64_t period = static_cast<uint64_t>(period_us) * dilation;
	const uint32_t speed = hpc_smt_emul_share_of(own_prio, sib_prio, what);
	if (speed >= HPC_SMT_SCALE && dilation == 1) {
		q.period_us = period_us;
		q.quota_us = -1;
		return q;
	}
	// Past CFS's longest period: the same share of the longest one.
	const bool capped = period > kMaxPeriodUs;
	q.period_us = capped ? kMaxPeriodUs : static_cast<uint32_t>(period);
	q.quota_us = share_of(capped ? kMaxPeriodUs / dilation : period_us, speed);
	return q;
}

Quota real_smt_quota(uint32_t own_prio, uint32_t sib_prio, bool sib_busy, uint32_t period_us)
{
	const uint32_t duty = sib_busy ? hpc_smt_real_duty(own_prio, sib_prio) : HPC_SMT_SCALE;
	if (duty >= HPC_SMT_SCALE)
		return Quota{-1, period_us};
	return Quota{share_of(period_us, duty), period_us};
}

std::vector<uint32_t> window_weights(const std::vector<uint64_t> &exe_t, uint32_t units)
{
	std::vector<uint32_t> w(exe_t.size(), units);
	const unsigned __int128 sum =
		std::accumulate(exe_t.begin(), exe_t.end(), static_cast<unsigned __int128>(0));
	if (!sum)
		return w;
	for (size_t k = 0; k < exe_t.size(); k++) {
		unsigned __int128 v =
			(static_cast<unsigned __int128>(exe_t[k]) * units * exe_t.size() +
			 sum / 2) /
			sum;
		w[k] = static_cast<uint32_t>(std::clamp<unsigned __int128>(v, 1, 10000));
	}
	return w;
}

std::vector<int> place_by_load(const std::vector<uint64_t> &load, size_t ncpu)
{
	std::vector<int> cpu_of(load.size(), 0);
	if (!ncpu)
		return cpu_of;
	std::vector<size_t> order(load.size());
	std::iota(order.begin(), order.end(), size_t{0});
	std::stable_sort(order.begin(), order.end(),
			 [&](size_t x, size_t y) { return load[x] > load[y]; });
	std::vector<uint64_t> sum(ncpu, 0);
	std::vector<size_t> count(ncpu, 0);
	for (size_t k : order) {
		// The least loaded CPU; among equals the one with fewer tasks.
		size_t best = 0;
		for (size_t c = 1; c < ncpu; c++)
			if (sum[c] < sum[best] || (sum[c] == sum[best] && count[c] < count[best]))
				best = c;
		cpu_of[k] = static_cast<int>(best);
		sum[best] += load[k];
		count[best]++;
	}
	return cpu_of;
}

uint64_t busiest_cpu_load(const std::vector<uint64_t> &load, const std::vector<int> &cpu_of,
			  size_t ncpu)
{
	std::vector<uint64_t> sum(ncpu, 0);
	for (size_t k = 0; k < load.size() && k < cpu_of.size(); k++)
		if (cpu_of[k] >= 0 && static_cast<size_t>(cpu_of[k]) < ncpu)
			sum[cpu_of[k]] += load[k];
	return sum.empty() ? 0 : *std::max_element(sum.begin(), sum.end());
}

bool Engine::needs_cgroups()
{
	return s.mode == Mode::SmtEmul || real_smt || (s.mode == Mode::Weight && weighing);
}

unsigned Engine::dilation() const
{
	size_t n = 0;
	for (auto &[pid, t] : tasks)
		n += !t.launcher;
	size_t ncpu = std::max<size_t>(1, cpus.size());
	size_t per = s.mode == Mode::SmtEmul ? n : (n + 1) / 2;
	return static_cast<unsigned>(std::max<size_t>(1, (per + ncpu - 1) / ncpu));
}

void Engine::place()
{
	auto a = active();
	for (auto &[pid, t] : tasks)
		t.ctx = -1;
	for (size_t i = 0; i < a.size(); i++)
		a[i]->ctx = static_cast<int>(i);
	if (s.mode == Mode::Weight) {
		for (auto &[pid, t] : tasks)
			if (t.launcher)
				t.cpu = -1;
		place_weight(a);
		return;
	}
	// Consecutive contexts share a CPU, m = dilation() of them: the two
	// contexts of a core together where m is even. Their shares add up to
	// at most 1408 permille of the 2000 of their CPU's period ((5,4) both
	// busy). Context i on cpus[i % n] put every heavy rank of a job on one
	// CPU at up to 961 each, 96 % of it: nothing left for the job's own
	// progress or for hpcd (tools/hpcd/README.md, "Fewer CPUs").
	const unsigned m = dilation();
	for (auto &[pid, t] : tasks)
		t.cpu = -1;
	for (size_t i = 0; i < a.size(); i++)
		a[i]->cpu = cpus.empty() ? -1 : cpus[std::min(i / m, cpus.size() - 1)];
}

// A task's window of work, sorted.
static std::vector<uint64_t> sorted_window(const Task &t)
{
	std::vector<uint64_t> w(t.win.begin(), t.win.end());
	std::sort(w.begin(), w.end());
	return w;
}

// A task's load over its window: the median of its iterations' work (the
// mean of the middle two in an even window), not the mean. A rank that
// every other waited for while the kernel ran something else, or an
// iteration that holds two the monitor saw as one, would make a balanced
// rank look heavier for a whole window: balanced ranks were weighed and
// pinned, back and forth.
static uint64_t window_load(const Task &t)
{
	const auto w = sorted_window(t);
	const size_t n = w.size();
	if (!n)
		return 0;
	return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

// A task's work by the lower quartile of its window. Whatever shares the CPU
// with a task (another rank's use of the caches, the hypervisor's other
// threads on a cloud VM's core) only adds to the CPU time of its compute
// phase: its cheaper iterations are the nearer to its own work, and one
// iteration cut short (the last before MPI_Finalize) is not its work either.
static uint64_t window_floor(const Task &t)
{
	const auto w = sorted_window(t);
	return w.empty() ? 0 : w[w.size() / 4];
}

// Weight mode. No more tasks than CPUs: the kernel places them (there is
// nothing to share), except on real SMT threads, where ranks 2k and 2k+1 are
// the two threads of core k. More tasks than CPUs: until every rank has a
// full window of monitored iterations the kernel places them; then by measured load,
// a new placement only when it is more than 10 % better than the present
// one (so that noise moves nobody). Loads within half of each other are
// left to the kernel (once weighed, until within a quarter), with no weights
// either: the ranks stay in their own cgroups, as under plain mpirun, and
// the kernel shares the CPUs as evenly as equal weights would.
void Engine::place_weight(const std::vector<Task *> &a)
{
	const size_t ncpu = cpus.size();
	if (ncpu && a.size() <= ncpu) {
		weighing = false;
		turn_since.reset();
		for (size_t k = 0; k < a.size(); k++)
			a[k]->cpu = real_smt ? cpus[k] : -1;
		return;
	}
	// Loads known: a full window of each rank's monitored iterations. A rank
	// sampled from /proc (no monitor) shows a polling wait as work, and its
	// iterations are the sampler's, not the program's: weights and pins by
	// those made balanced programs up to 2x slower than plain mpirun.
	const size_t full = std::max(1u, s.window);
	const bool known = std::all_of(
		a.begin(), a.end(), [&](Task *x) { return x->monitored && x->win.size() >= full; });
	if (!ncpu || !known) {
		weighing = false;
		turn_since.reset();
		stops = 0;
		for (Task *x : a)
			x->cpu = -1;
		return;
	}
	std::vector<uint64_t> load;
	std::vector<int> now;
	for (Task *x : a) {
		load.push_back(window_load(*x));
		auto it = std::find(cpus.begin(), cpus.end(), x->cpu);
		now.push_back(it == cpus.end() ? -1 : static_cast<int>(it - cpus.begin()));
	}
	// Nearly equal loads: any spread is as good as another and the kernel
	// spreads them itself; pinning would only take its freedom away.
	std::vector<uint64_t> floors;
	for (Task *x : a)
		floors.push_back(window_floor(*x));
	decide_weighing(floors, reweighed_at_);
	if (!weighing) {
		for (Task *x : a)
			x->cpu = -1;
		return;
	}
	const auto best = place_by_load(load, ncpu);
	const bool pinned = std::none_of(now.begin(), now.end(), [](int c) { return c < 0; });
	if (pinned &&
	    busiest_cpu_load(load, now, ncpu) * 10 <= busiest_cpu_load(load, best, ncpu) * 11)
		return;
	for (size_t k = 0; k < a.size(); k++)
		a[k]->cpu = cpus[best[k]];
}

// Start weighing when the heaviest rank's load (the lower quartile of its
// window) passes 1.5 times the lightest's, stop when it is back within 1.25
// times; either only once the loads have said so at every iteration for
// s.hold_ms. Every start and stop moves every rank between cgroups and CPUs;
// CPU time that differs for a while must not (on a 2-vCPU VM, two of four
// balanced ranks took 9.3 ms of CPU per iteration, the others 5.8 ms, for 5
// and more iterations at a time). Each stop doubles the hold of the next
// start (up to 64 times): balanced ranks whose CPU time differed while the
// kernel placed them, and not once they were pinned, started and stopped
// over and over.
void Engine::decide_weighing(const std::vector<uint64_t> &floors, uint64_t now)
{
	loads = floors;
	const auto [lo, hi] = std::minmax_element(floors.begin(), floors.end());
	const bool want = weighing ? *hi * 4 > *lo * 5 : *hi * 2 > *lo * 3;
	if (want == weighing) {
		turn_since.reset();
		return;
	}
	if (!turn_since)
		turn_since = now;
	const uint64_t hold = uint64_t{s.hold_ms} * 1000000 << (want ? std::min(stops, 6u) : 0);
	if (now >= *turn_since + hold) {
		weighing = want;
		stops += !want;
		turn_since.reset();
	}
}

// Every rank reported an iteration since the last weights (Engine::closed()):
// Algorithm 1 of the container paper, cpuUnits from each rank's load over its
// window, then the placement by those loads.
void Engine::reweigh(const std::vector<Task *> &a, uint64_t now)
{
	reweighed_at_ = std::max(reweighed_at_, now);
	std::vector<uint64_t> exe;
	for (Task *x : a)
		exe.push_back(window_load(*x));
	auto w = window_weights(exe, kWeightUnit);
	for (size_t k = 0; k < a.size(); k++) {
		a[k]->weight = w[k];
		a[k]->reported = false;
	}
	place_weight(a);
}

Task *Engine::thread_sibling(const Task &t)
{
	return thread_sibling(t, one_per_thread());
}

// One task per hardware thread only: ranks that share threads are balanced
// by their weights.
bool Engine::one_per_thread()
{
	return real_smt && active().size() <= cpus.size();
}

// The other hardware thread of `cpu`'s core: cpus[2k] and cpus[2k+1] (hwloc
// lists a core's threads together; hpc_ctx_sibling() on their indices); -1:
// none, or not one of ours.
int Engine::other_thread(int cpu) const
{
	auto it = std::find(cpus.begin(), cpus.end(), cpu);
	if (cpu < 0 || it == cpus.end())
		return -1;
	const int k = static_cast<int>(it - cpus.begin());
	const int other = hpc_ctx_sibling(k, -1, static_cast<size_t>(k ^ 1) < cpus.size());
	return other < 0 ? -1 : cpus[static_cast<size_t>(other)];
}

Task *Engine::thread_sibling(const Task &t, bool one_per_thread)
{
	const int cpu = one_per_thread ? other_thread(t.cpu) : -1;
	if (cpu < 0)
		return nullptr;
	for (auto &[pid, o] : tasks)
		if (!o.launcher && o.cpu == cpu)
			return &o;
	return nullptr;
}

} // namespace hpcd

#endif // HPCD_DAEMON
