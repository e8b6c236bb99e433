#include "sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace hpcsim
{

using u64 = std::uint64_t;

const char *mode_name(Mode m)
{
	switch (m) {
	case Mode::Baseline: return "Baseline";
	case Mode::Static: return "Static";
	case Mode::Uniform: return "Uniform";
	case Mode::Adaptive: return "Adaptive";
	case Mode::Phase: return "Phase";
	}
	return "?";
}

int Workload::phase_index(int iter) const
{
	int idx = 0;
	for (size_t i = 0; i < phases.size(); i++)
		if (phases[i].from <= iter)
			idx = static_cast<int>(i);
	return idx;
}

const Phase &Workload::phase_at(int iter) const
{
	return phases[phase_index(iter)];
}

// A 64-bit mix (splitmix64's finaliser): the same inputs give the same
// draw on every platform, unlike the standard library's distributions.
static u64 mix64(u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

double Workload::load_ms(int iter, int i) const
{
	const double base = phase_at(iter).loads_ms[i];
	if (noise_pct == 0)
		return base;
	const u64 h = mix64(mix64(mix64(seed) ^ static_cast<u64>(iter)) ^ static_cast<u64>(i));
	const double u = static_cast<double>(h >> 11) / static_cast<double>(1ULL << 53); // [0, 1)
	return base * (1 + noise_pct / 100 * (2 * u - 1));
}

int Workload::sibling(int i) const
{
	if (!siblings.empty())
		return siblings[i];
	return (i ^ 1) < ntasks() ? i ^ 1 : -1;
}

void Workload::validate() const
{
	auto bad = [&](const std::string &why) {
		throw std::invalid_argument("workload '" + name + "': " + why);
	};
	if (iterations <= 0)
		bad("iterations must be positive");
	if (phases.empty())
		bad("no phases");
	if (phases.front().from != 0)
		bad("the first phase must start at iteration 0");
	const size_t n = phases.front().loads_ms.size();
	if (n == 0)
		bad("no tasks");
	if (n > 64)
		bad("at most 64 tasks");
	if (!(noise_pct >= 0 && noise_pct < 100))
		bad("noise_pct must be within 0..100 (exclusive)");
	for (size_t i = 0; i < phases.size(); i++) {
		if (phases[i].loads_ms.size() != n)
			bad("every phase must give a load for each of the " + std::to_string(n) +
			    " tasks");
		if (i && phases[i].from <= phases[i - 1].from)
			bad("phases must start at increasing iterations");
		if (phases[i].from >= iterations)
			bad("phase " + std::to_string(i) + " starts after the last iteration");
		for (double l : phases[i].loads_ms)
			if (!(l > 0) || !std::isfinite(l) || l > 1e7)
				bad("loads must be positive numbers of ms (at most 1e7)");
	}
	if (!siblings.empty()) {
		if (siblings.size() != n)
			bad("siblings: one entry per task");
		for (size_t i = 0; i < n; i++) {
			const int s = siblings[i];
			if (s >= static_cast<int>(n) || s < -1 || s == static_cast<int>(i) ||
			    (s >= 0 && siblings[s] != static_cast<int>(i)))
				bad("siblings: each task's sibling must name it back");
		}
	}
}

namespace
{

constexpr u64 kNsPerMs = 1000000;

struct Ctx {
	hpc_task t{};
	u64 remaining = 0; // work left, in ns of single-thread time x HPC_SMT_SCALE
	bool computing = false;
	u64 comp_ns = 0;   // total compute time
	u64 iter_comp = 0; // compute time in this iteration
	uint32_t prio = HPC_PRIO_NORMAL;
};

} // namespace

RunResult simulate(const Workload &w, const RunConfig &cfg)
{
	w.validate();
	const int n = w.ntasks();
	if (cfg.mode == Mode::Static && cfg.static_prio.size() != static_cast<size_t>(n))
		throw std::invalid_argument("static priorities: need one per task");

	hpc_params p = cfg.params;
	if (cfg.mode == Mode::Uniform)
		p.heuristic = HPC_HEUR_UNIFORM;
	if (cfg.mode == Mode::Adaptive)
		p.heuristic = HPC_HEUR_ADAPTIVE;
	if (cfg.mode == Mode::Phase)
		p.heuristic = HPC_HEUR_PHASE;
	if (int err = hpc_params_check(&p, nullptr))
		throw std::invalid_argument(std::string("parameters: ") + hpc_param_err_str(err));
	const bool dynamic =
		cfg.mode == Mode::Uniform || cfg.mode == Mode::Adaptive || cfg.mode == Mode::Phase;

	std::vector<Ctx> c(n);
	for (int i = 0; i < n; i++) {
		hpc_task_init(&c[i].t, 0, &p);
		c[i].prio = cfg.mode == Mode::Static ? cfg.static_prio[i]
			    : dynamic                ? c[i].t.prio
						     : HPC_PRIO_NORMAL;
	}

	RunResult r;
	r.label = mode_name(cfg.mode);
	r.tasks.resize(n);
	u64 now = 0;
	// A closed iteration: the dynamic modes take the core's decision.
	auto adopt = [&](int i) {
		if (!dynamic)
			return;
		r.prio_changes += c[i].t.prio != c[i].prio;
		c[i].prio = c[i].t.prio;
	};

	for (int it = 0; it < w.iterations; it++) {
		const u64 start = now;
		// Barrier release: every task wakes (the first iteration starts
		// running). Each decides with what it sees of its sibling now,
		// in rank order, as wake-ups on different CPUs would.
		auto peer = [&](int i) -> const hpc_task * {
			const int sib = w.sibling(i);
			return sib >= 0 ? &c[sib].t : nullptr;
		};
		for (int i = 0; it > 0 && i < n; i++)
			if (hpc_on_wakeup(&c[i].t, now, &p, peer(i), 0))
				adopt(i);
		// A task that computed through its sibling's whole iteration (the
		// critical path never waits) is judged now, as the kernel does
		// at the tick that follows the sibling's wake-up.
		for (int i = 0; it > 0 && i < n; i++)
			if (hpc_on_tick(&c[i].t, now, &p, peer(i), 0))
				adopt(i);
		for (int i = 0; i < n; i++) {
			c[i].remaining =
				static_cast<u64>(std::llround(w.load_ms(it, i) * kNsPerMs)) *
				HPC_SMT_SCALE;
			c[i].computing = true;
			c[i].iter_comp = 0;
			r.tasks[i].prio.push_back(c[i].prio);
		}

		// Compute phase: piecewise-constant speeds between completions.
		for (;;) {
			std::vector<u64> speed(n, 0);
			u64 dt = std::numeric_limits<u64>::max();
			bool any = false;
			for (int i = 0; i < n; i++) {
				if (!c[i].computing)
					continue;
				any = true;
				int sib = w.sibling(i);
				bool sib_busy =
					sib >= 0 && (c[sib].computing || w.wait == WaitMode::Spin);
				uint32_t sib_prio = sib >= 0 ? c[sib].prio : 0;
				speed[i] = hpc_smt_speed(c[i].prio, sib_prio, sib_busy);
				if (speed[i])
					dt = std::min(dt,
						      (c[i].remaining + speed[i] - 1) / speed[i]);
			}
			if (!any)
				break;
			if (dt == std::numeric_limits<u64>::max())
				throw std::runtime_error(
					"no task can make progress (priority 0 or 7 pairs)");
			now += dt;
			for (int i = 0; i < n; i++) {
				if (!c[i].computing)
					continue;
				c[i].iter_comp += dt;
				u64 done = speed[i] * dt;
				if (done >= c[i].remaining) {
					c[i].remaining = 0;
					c[i].computing = false;
					hpc_task_sleep(&c[i].t, now);
				} else {
					c[i].remaining -= done;
				}
			}
		}

		const u64 len = now - start;
		r.iter_s.push_back(static_cast<double>(len) / 1e9);
		for (int i = 0; i < n; i++) {
			c[i].comp_ns += c[i].iter_comp;
			r.tasks[i].util_pct.push_back(len ? 100.0 * c[i].iter_comp / len : 0);
		}
	}

	r.time_s = static_cast<double>(now) / 1e9;
	for (int i = 0; i < n; i++) {
		r.tasks[i].comp_pct = now ? 100.0 * c[i].comp_ns / now : 0;
		r.tasks[i].final_prio = c[i].prio;
	}
	return r;
}

std::vector<uint32_t> best_static(const Workload &w, const hpc_params &p)
{
	const int n = w.ntasks();
	const uint32_t lo = p.min_prio, hi = p.max_prio, span = hi - lo + 1;
	double combos = std::pow(static_cast<double>(span), n);
	if (combos > 1e6)
		throw std::invalid_argument("static search space too large");
	std::vector<uint32_t> prio(n, lo), best;
	double best_t = std::numeric_limits<double>::infinity();
	RunConfig cfg;
	cfg.mode = Mode::Static;
	cfg.params = p;
	for (long k = 0; k < static_cast<long>(combos); k++) {
		long v = k;
		for (int i = 0; i < n; i++) {
			prio[i] = lo + static_cast<uint32_t>(v % span);
			v /= span;
		}
		bool two_raised = false;
		for (int i = 0; i < n; i++) {
			const int s = w.sibling(i);
			two_raised |= s >= 0 && prio[i] > lo && prio[s] > lo;
		}
		if (two_raised)
			continue;
		cfg.static_prio = prio;
		double t = simulate(w, cfg).time_s;
		if (t < best_t * (1 - 1e-12)) {
			best_t = t;
			best = prio;
		}
	}
	return best;
}

// Time for a pair with loads a, b (ns of single-thread work) when a gets
// decode share x (1/HPC_SHARE_SCALE) and b the rest; once one is done the
// other runs at `alone` (permille) beside the waiting one.
static double pair_time(double a, double b, uint32_t x, WaitMode wait, double alone)
{
	double sa = hpc_smt_share_speed(x) / double(HPC_SMT_SCALE);
	double sb = hpc_smt_share_speed(HPC_SHARE_SCALE - x) / double(HPC_SMT_SCALE);
	double ta = a / sa, tb = b / sb;
	if (wait == WaitMode::Spin)
		return std::max(ta, tb);
	if (ta <= tb)
		return ta + (b - ta * sb) / alone;
	return tb + (a - tb * sa) / alone;
}

double ideal_time_s(const Workload &w)
{
	const int n = w.ntasks();
	// The fastest a context can run beside a waiting sibling.
	double alone = 0;
	for (uint32_t p = HPC_SMT_EMUL_PRIO_MIN; p <= HPC_SMT_EMUL_PRIO_MAX; p++)
		alone = std::max(alone,
				 hpc_smt_speed(p, HPC_PRIO_NORMAL, false) / double(HPC_SMT_SCALE));
	double total = 0;
	for (int it = 0; it < w.iterations; it++) {
		double iter = 0;
		for (int i = 0; i < n; i++) {
			const int s = w.sibling(i);
			if (s >= 0 && s < i)
				continue;
			const double li = w.load_ms(it, i);
			double core;
			if (s < 0) {
				core = li; // alone: single-thread speed
			} else {
				const double ls = w.load_ms(it, s);
				core = std::numeric_limits<double>::infinity();
				for (uint32_t x = 1; x < HPC_SHARE_SCALE; x++)
					core = std::min(core, pair_time(li, ls, x, w.wait, alone));
			}
			iter = std::max(iter, core);
		}
		total += iter;
	}
	return total / 1e3;
}

std::optional<int> settle_iterations(const Workload &w, const RunResult &r, int phase,
				     const hpc_params &p, double tol)
{
	const int from = w.phases[phase].from;
	const int to = phase + 1 < static_cast<int>(w.phases.size()) ? w.phases[phase + 1].from
								     : w.iterations;
	// The best static iteration time for this phase's loads.
	Workload one = w;
	one.phases = {Phase{0, w.phases[phase].loads_ms}};
	one.iterations = 2;
	RunConfig cfg;
	cfg.mode = Mode::Static;
	cfg.params = p;
	cfg.static_prio = best_static(one, p);
	const double target = simulate(one, cfg).iter_s.back() * (1 + tol);

	int settled = to;
	for (int it = to - 1; it >= from && r.iter_s[it] <= target; it--)
		settled = it;
	if (settled == to)
		return std::nullopt;
	return settled - from;
}

int prio_settle_iterations(const Workload &w, const RunResult &r, int phase)
{
	const int from = w.phases[phase].from;
	const int to = phase + 1 < static_cast<int>(w.phases.size()) ? w.phases[phase + 1].from
								     : w.iterations;
	int first = from;
	for (const auto &t : r.tasks)
		for (int i = to - 1; i >= from; i--)
			if (t.prio[i] != t.prio[to - 1]) {
				first = std::max(first, i + 1);
				break;
			}
	return first - from;
}

} // namespace hpcsim
