#include "engine.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace hpcd
{

const char *mode_name(Mode m)
{
	return m == Mode::SmtEmul ? "smt-emul" : "weight";
}

std::optional<Mode> parse_mode(const std::string &name)
{
	if (name == "weight")
		return Mode::Weight;
	if (name == "smt-emul" || name == "quota")
		return Mode::SmtEmul;
	return std::nullopt;
}

// `permille` of `period_us`, at least CFS's smallest quota.
static int64_t share_of(uint32_t period_us, uint32_t permille)
{
	const auto quota = static_cast<int64_t>(hpc_smt_budget(period_us, permille));
	return std::max(quota, kMinQuotaUs);
}

Quota smt_quota(uint32_t own_prio, uint32_t sib_prio, bool has_sib, bool sib_busy,
		uint32_t period_us, unsigned dilation)
{
	dilation = std::max(1u, dilation);
	Quota q;
	const uint64_t period = static_cast<uint64_t>(period_us) * dilation;
	const uint32_t speed = hpc_smt_emul_share(own_prio, sib_prio, has_sib && sib_busy);
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

Task &Engine::add(int pid, const std::string &name, const std::string &job, int rank, uint64_t now)
{
	Task &t = tasks[pid];
	t.pid = pid;
	t.name = name;
	t.job = job;
	t.rank = rank;
	// Ranks of a job are ordered by rank, after what was there when the
	// job's first rank arrived; other tasks in order of arrival.
	if (rank >= 0) {
		auto [it, fresh] = job_seq_.try_emplace(job, seq_);
		if (fresh)
			seq_++;
		t.seq = it->second;
	} else {
		t.seq = seq_++;
	}
	hpc_task_init(&t.t, now, &s.params);
	// A rank adopted on the monitor's hello reports its own iterations.
	t.monitored = rank >= 0;
	t.last_record_ns = now;
	place();
	return t;
}

void Engine::remove(int pid)
{
	tasks.erase(pid);
	// Pairs change: held records go in alone.
	for (auto &[p, t] : tasks)
		if (t.pending)
			apply_records(&t, nullptr);
	place();
}

Task *Engine::find(int pid)
{
	auto it = tasks.find(pid);
	return it == tasks.end() ? nullptr : &it->second;
}

std::vector<Task *> Engine::active()
{
	std::vector<Task *> a;
	for (auto &[pid, t] : tasks)
		if (!t.launcher)
			a.push_back(&t);
	std::sort(a.begin(), a.end(), [](const Task *x, const Task *y) {
		if (x->seq != y->seq)
			return x->seq < y->seq;
		return x->rank < y->rank;
	});
	return a;
}

void Engine::start_monitored(Task &t, uint64_t since)
{
	t.monitored = true;
	t.last_record_ns = since;
	hpc_task_init(&t.t, since, &s.params);
	// What /proc showed was MPI's start-up, and a polling wait looks busy
	// there: not a load to weigh the rank by.
	t.win.clear();
	t.reported = false;
	t.work_ns = 0;
	t.work_records = 0;
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
	size_t ncpu = std::max<size_t>(1, cpus.size());
	for (auto &[pid, t] : tasks)
		t.cpu = -1;
	for (size_t i = 0; i < a.size(); i++)
		a[i]->cpu = cpus.empty() ? -1 : cpus[i % ncpu];
}

// A task's load over its window: the median of its iterations' work (the
// mean of the middle two in an even window), not the mean. A rank that
// every other waited for while the kernel ran something else, or an
// iteration that holds two the monitor saw as one, would make a balanced
// rank look heavier for a whole window: balanced ranks were weighed and
// pinned, back and forth.
static uint64_t window_load(const Task &t)
{
	std::vector<uint64_t> w(t.win.begin(), t.win.end());
	if (w.empty())
		return 0;
	std::sort(w.begin(), w.end());
	const size_t n = w.size();
	return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
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
	const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
	weighing = weighing ? *hi * 4 > *lo * 5 : *hi * 2 > *lo * 3;
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

// The context sharing an emulated core with `ctx` (the core's pairing rule,
// hpc_ctx_sibling(): contexts are never hardware threads here); -1: none.
int Engine::sibling_ctx(int ctx)
{
	return ctx < 0 ? -1 : hpc_ctx_sibling(ctx, -1, true);
}

Task *Engine::sibling(const Task &t)
{
	const int ctx = sibling_ctx(t.ctx);
	if (ctx < 0)
		return nullptr;
	for (auto &[pid, o] : tasks)
		if (o.ctx == ctx)
			return &o;
	return nullptr;
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

void Engine::sleep(int pid, uint64_t now)
{
	if (auto *t = find(pid))
		hpc_task_sleep(&t->t, now);
}

bool Engine::wakeup(int pid, uint64_t now)
{
	Task *t = find(pid);
	if (!t)
		return false;
	const Task *sib = sibling(*t);
	if (!hpc_on_wakeup(&t->t, now, &s.params, sib ? &sib->t : nullptr, t->static_prio))
		return false;
	closed(*t, now);
	return true;
}

// The period's tick, as the kernel's scheduler tick: the core judges a task
// on the critical path, which never waits, once its sibling closed an
// iteration it computed through (hpc_on_tick()). Not a task the monitor
// reports on: each of its records is a closed iteration (its waits are at
// least min_wait) that judges it, and a record arrives after the time it
// tells of. Only once it has been silent for two of its sibling's
// iterations (its waits stay below min_wait) is it judged here.
bool Engine::tick(uint64_t now)
{
	const auto ctxs = by_ctx();
	bool any = false;
	for (auto &[pid, t] : tasks) {
		const Task *o = at_ctx(ctxs, sibling_ctx(t.ctx));
		if (t.launcher || !o)
			continue;
		const hpc_task &sib = o->t;
		if (t.monitored && t.last_record_ns + 2 * (sib.last_run + sib.last_wait) >= now)
			continue;
		any |= hpc_on_tick(&t.t, now, &s.params, &sib, t.static_prio) != 0;
	}
	return any;
}

// Each context's task: the first in pid order, as sibling() finds it. The
// contexts are 0..n-1 (place()): a vector, cheap to build every period.
std::vector<Task *> Engine::by_ctx()
{
	std::vector<Task *> v(tasks.size(), nullptr);
	for (auto &[pid, t] : tasks)
		if (t.ctx >= 0 && static_cast<size_t>(t.ctx) < v.size() && !v[t.ctx])
			v[t.ctx] = &t;
	return v;
}

Task *Engine::at_ctx(const std::vector<Task *> &v, int ctx)
{
	return ctx >= 0 && static_cast<size_t>(ctx) < v.size() ? v[ctx] : nullptr;
}

static uint64_t sleep_of(const hpcmon_record &r)
{
	return r.end_ns >= r.wait_ns ? r.end_ns - r.wait_ns : 0;
}

bool Engine::record(const hpcmon_record &r, uint64_t now)
{
	if (r.magic != HPCMON_MAGIC || r.version != HPCMON_VERSION || r.kind != HPCMON_ITERATION)
		return false;
	Task *t = find(r.pid);
	if (!t)
		return false;
	if (t->pending) // a second record before the sibling's: apply the first
		apply_records(t, nullptr);
	t->monitored = true;
	t->pending = r;
	t->pending_since = now;
	Task *sib = sibling(*t);
	if (sib && sib->pending)
		return apply_records(t, sib);
	if (sib && sib->monitored && sib->last_record_ns < sleep_of(r))
		return false; // hold it: the sibling's record of this barrier is due
	return apply_records(t, nullptr);
}

// Apply the held records of x (and y): sleeps and wake-ups in time order.
bool Engine::apply_records(Task *x, Task *y)
{
	struct Ev {
		uint64_t at;
		bool wake;
		Task *t;
	};
	std::vector<Ev> ev;
	for (Task *t : {x, y}) {
		if (!t || !t->pending)
			continue;
		// A record tells of the past: its sleep may come before the
		// last tick, which takes back what it folded after it.
		const hpcmon_record &r = *t->pending;
		uint64_t s = std::max<uint64_t>(sleep_of(r), t->t.iter_start);
		ev.push_back({s, false, t});
		ev.push_back({std::max<uint64_t>(r.end_ns, s), true, t});
		// Until an iteration closes (a short wait ends none); a record
		// holds as many of the program's iterations as compute phases.
		t->work_ns += r.cpu_ns;
		t->work_records += std::max<uint32_t>(1, r.phases);
		t->last_record_ns = std::max<uint64_t>(t->last_record_ns, r.end_ns);
		t->pending.reset();
	}
	std::stable_sort(ev.begin(), ev.end(), [](const Ev &a, const Ev &b) {
		return a.at != b.at ? a.at < b.at : (!a.wake && b.wake);
	});
	bool closed_x = false;
	for (auto &e : ev) {
		if (!e.wake)
			hpc_task_sleep(&e.t->t, e.at);
		else if (wakeup(e.t->pid, e.at) && e.t == x)
			closed_x = true;
	}
	return closed_x;
}

bool Engine::flush(uint64_t now, uint64_t max_hold_ns)
{
	bool any = false;
	for (auto &[pid, t] : tasks)
		if (t.pending && now >= t.pending_since + max_hold_ns) {
			apply_records(&t, nullptr);
			any = true;
		}
	return any;
}

void Engine::settle(int pid)
{
	if (Task *t = find(pid); t && t->pending)
		apply_records(t, nullptr);
}

void Engine::closed(Task &t, uint64_t)
{
	t.closes++;
	// The work of the iteration: the CPU time of its compute phase when the
	// monitor measured it, else its compute time. CPU time does not depend
	// on the share the task got, so the weights it gives do not chase
	// their own effect (with equal shares the heavy rank computes longer,
	// with its fair share both finish together).
	// Records the core joined into one iteration (a wait it found too
	// short), and the compute phases the monitor joined into one record,
	// are as many iterations of the program: the work of one.
	const uint64_t work =
		t.work_ns ? t.work_ns / std::max<uint32_t>(1, t.work_records) : t.t.last_run;
	t.work_ns = 0;
	t.work_records = 0;
	if (s.mode != Mode::Weight)
		return;
	// Algorithm 1 of the container paper, on each reported interval.
	t.win.push_back(work);
	while (t.win.size() > std::max(1u, s.window))
		t.win.pop_front();
	t.reported = true;
	auto a = active();
	if (std::any_of(a.begin(), a.end(), [](Task *x) { return !x->reported; }))
		return;
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

void Engine::params_changed()
{
	for (auto &[pid, t] : tasks)
		hpc_task_next_prio(&t.t, &s.params, t.static_prio);
}

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
		t.quota = smt_quota(applied_prio(t), sib ? applied_prio(*sib) : 0, sib != nullptr,
				    sib && (sib->live_runnable || s.waits == Waits::Poll),
				    s.period_us, dil);
	}
}

} // namespace hpcd
