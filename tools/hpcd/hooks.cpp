// hpcd, step 1 of 3: the hooks, hpcd's equivalent of the kernel class
// (kernel/kernel/sched/hpc.c). Each managed task's events (a sleep, a
// wake-up, a monitor's record, the period's tick, the flush of records held
// for a sibling's) go to the policy core, step 2 (kernel/hpc-core/
// hpc_policy.c: hpc_task_sleep(), hpc_on_wakeup(), hpc_on_tick()), with the
// task on the sibling context and its fixed priority, as hpc.c's hooks pass
// them; step 3, the mechanism (mechanism.cpp: Daemon::apply(), Engine::plan()),
// turns the core's decisions into cgroups, weights and affinities.
//
// The event sources (bpfsource.cpp, monitor.cpp, procstat.cpp and
// wakefilter.cpp, read by hpcd.cpp's Daemon::sample()) stay outside: they are
// hpcd's equivalent of the kernel's scheduler core, which calls the class's
// hooks.
//
// Built twice: into hpcdlib the Engine's half (no I/O; the unit tests drive
// it), into hpcd (HPCD_DAEMON) the Daemon's half, which calls hpcd.cpp.

#ifdef HPCD_DAEMON

#include "hpcd.hpp"

#include <fmt/format.h>

namespace hpcd
{

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

// Whether a sampled or traced task is runnable now: its sibling's quota
// depends on it (Engine::plan()).
void Daemon::on_runnable(Task &t, bool runnable)
{
	changed_ |= t.live_runnable != runnable;
	t.live_runnable = runnable;
}

// A rank's ITERATION record: held until its sibling's, or applied now
// (Engine::record()).
void Daemon::on_iteration(const hpcmon_record &r)
{
	e.record(r, mono_ns());
	log_records();
	// Records of one barrier close iterations of both siblings:
	// look after each, so that no iteration goes unseen.
	note(e.find(r.pid));
}

// The end of a period, after its events (Daemon::sample()): the records
// held too long, the tick, then the mechanism if anything changed.
void Daemon::on_tick()
{
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

} // namespace hpcd

#else // the Engine's half

#include "engine.hpp"

#include <algorithm>

namespace hpcd
{

// The Engine's side of each hook: the task's hpc_task, its sibling's and its
// fixed priority to the core, as hpc.c's hpc_account_wakeup() and
// hpc_account_tick() pass them.
void Engine::sleep(int pid, uint64_t now)
{
	if (auto *t = find(pid))
		hpc_task_sleep(&t->t, now);
}

// A wake-up: the core closes the task's iteration if it waited long enough
// (hpc_on_wakeup()).
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

void Engine::closed(Task &t, uint64_t now)
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
	reweigh(a, now); // every rank reported: new weights (mechanism.cpp)
}

} // namespace hpcd

#endif // HPCD_DAEMON
