// Regression tests of the policy core as the simulator drives it: the
// calibration of the SMT model, convergence and stability of the heuristics,
// and the error paths of specs, settings and the command line.
#include "params_text.hpp"
#include "report.hpp"
#include "sim.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

using namespace hpcsim;
using nlohmann::json;

namespace
{

json paper()
{
	std::ifstream in(HPCSIM_PAPER_TABLES);
	if (!in)
		throw std::runtime_error("paper tables not found at " HPCSIM_PAPER_TABLES);
	return json::parse(in);
}

hpc_params defaults()
{
	hpc_params p;
	hpc_params_default(&p);
	return p;
}

double gain(const RunResult &base, const RunResult &r)
{
	return 1 - r.time_s / base.time_s;
}

std::vector<uint32_t> final_prios(const RunResult &r)
{
	std::vector<uint32_t> v;
	for (const auto &t : r.tasks)
		v.push_back(t.final_prio);
	return v;
}

// Runs `cmd` and returns its exit status and combined output.
int run(const std::string &cmd, std::string &out)
{
	out.clear();
	FILE *f = popen((cmd + " 2>&1").c_str(), "r");
	if (!f)
		return -1;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		out.append(buf, n);
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

double paper_gain(const json &pt, const char *workload, const char *row)
{
	return 1 - pt[workload][row]["time_s"].get<double>() /
			   pt[workload]["baseline"]["time_s"].get<double>();
}

RunResult run_static(const Workload &w, std::vector<uint32_t> prio)
{
	RunConfig cfg;
	cfg.mode = Mode::Static;
	cfg.params = defaults();
	cfg.static_prio = std::move(prio);
	return simulate(w, cfg);
}

} // namespace

// The SMT model's fit (tools/sim/fit/fit_smt.py): MetBench's static best
// priorities are the paper's (4,6,4,6), with its gain (Table III, 81.78 s ->
// 70.90 s, -13.3 %) within 2 points, and the baseline reproduces the paper's
// per-rank % compute.
TEST(Targets, MetBenchStaticBestIsThePapers)
{
	const json pt = paper();
	Comparison c = compare(metbench(pt), defaults());
	const auto paper_static = pt["metbench"]["static"]["priority"].get<std::vector<uint32_t>>();
	EXPECT_EQ(c.static_prio, paper_static);
	EXPECT_NEAR(gain(c.baseline, c.stat), paper_gain(pt, "metbench", "static"), 0.02);
	EXPECT_NEAR(c.baseline.time_s, pt["metbench"]["baseline"]["time_s"].get<double>(), 0.01);
	const auto comp = pt["metbench"]["baseline"]["comp"].get<std::vector<double>>();
	for (size_t i = 0; i < comp.size(); i++)
		EXPECT_NEAR(c.baseline.tasks[i].comp_pct, comp[i], 0.1) << "P" << i + 1;
	// The paper's static run has the light ranks on the critical path.
	EXPECT_GT(c.stat.tasks[0].comp_pct, 99.5);
	EXPECT_GT(c.stat.tasks[1].comp_pct, 98.5);
}

// Table III's Uniform (-12.3 %) and Adaptive (-12.4 %), each within 2 points.
TEST(Targets, MetBenchHeuristicsWithinTwoPoints)
{
	const json pt = paper();
	Comparison c = compare(metbench(pt), defaults());
	EXPECT_NEAR(gain(c.baseline, c.uniform), paper_gain(pt, "metbench", "uniform"), 0.02);
	EXPECT_NEAR(gain(c.baseline, c.adaptive), paper_gain(pt, "metbench", "adaptive"), 0.02);
}

// Table IV's static run (4,6,4,6): -8.1 % within 2 points. Its reversed
// period costs the paper 8.38 s an iteration against the baseline's 8.18 s
// (1.02x); the fitted model pays about as little, where polling waits
// (a waiting task competing at its raised priority) pay 3.4x.
TEST(Targets, MetBenchVarStaticWithinTwoPoints)
{
	const json pt = paper();
	const Workload w = metbenchvar(pt, 15);
	const auto prio = pt["metbenchvar"]["static"]["priority"].get<std::vector<uint32_t>>();
	RunConfig base;
	base.params = defaults();
	const RunResult b = simulate(w, base), s = run_static(w, prio);
	EXPECT_NEAR(b.time_s, pt["metbenchvar"]["baseline"]["time_s"].get<double>(), 0.01);
	EXPECT_NEAR(gain(b, s), paper_gain(pt, "metbenchvar", "static"), 0.02);
	const double reversed = s.iter_s[20] / b.iter_s[20];
	EXPECT_GT(reversed, 1.0);
	EXPECT_LT(reversed, 1.08);
	Workload spin = w;
	spin.wait = WaitMode::Spin;
	EXPECT_GT(run_static(spin, prio).iter_s[20] / b.iter_s[20], 3.0);
}

// Table IV's Uniform (-11.1 %) and Adaptive (-11.3 %): each gains at least
// 9 %, and re-balances within 3 iterations of each reversal. Exact counts:
// every task runs with its final priority of the period 3 iterations after
// each reversal (the reversed iteration; the new heavy tasks step up twice,
// one core an iteration after the other, as the critical rank of the first
// is judged only when overdue); the paper: Uniform 2 then 3, Adaptive 2.
TEST(Targets, MetBenchVarHeuristicsRebalanceInThreeIterations)
{
	const json pt = paper();
	const Workload w = metbenchvar(pt, 15);
	const auto prio = pt["metbenchvar"]["static"]["priority"].get<std::vector<uint32_t>>();
	Comparison c = compare(w, defaults());
	for (const RunResult *r : {&c.uniform, &c.adaptive, &c.phase}) {
		SCOPED_TRACE(r->label);
		EXPECT_GE(gain(c.baseline, *r), 0.09);
		EXPECT_EQ(prio_settle_iterations(w, *r, 0), 2);
		EXPECT_EQ(prio_settle_iterations(w, *r, 1), 3);
		EXPECT_EQ(prio_settle_iterations(w, *r, 2), 3);
		// Balanced at the paper's priorities in each period (reversed in
		// the second).
		for (int ph = 0; ph < 3; ph++)
			for (size_t i = 0; i < 4; i++)
				EXPECT_EQ(r->tasks[i].prio[w.phases[ph].from + 5],
					  ph == 1 ? 2 * HPC_PRIO_NORMAL + 2 - prio[i] : prio[i])
					<< "P" << i + 1 << " period " << ph;
	}
	for (size_t ph = 0; ph < 3; ph++) {
		EXPECT_LE(c.settle_uniform[ph], 3) << "phase " << ph;
		EXPECT_LE(c.settle_adaptive[ph], 3) << "phase " << ph;
		EXPECT_LE(c.settle_phase[ph], 3) << "phase " << ph;
	}
}

// Table V: the paper's static (4,4,5,6) is a best static setting, within 3
// points of its -16.2 %; Uniform and Adaptive within 3 points of -16.0 % /
// -15.8 %. It ties with (4,4,4,6), which the search reports (ties go to the
// lowest priorities): P4 computes 99.85 % of both of the paper's runs, so
// the run lasts as long as P4 computes, and P4's speed depends on its own
// core (P1, P4) only; P3's priority, on the other core, cannot change the
// time in any model of independent cores (sched-hpc-policy.rst).
TEST(Targets, BtMzWithinThreePoints)
{
	const json pt = paper();
	const Workload w = btmz(pt);
	Comparison c = compare(w, defaults());
	EXPECT_NEAR(c.baseline.time_s, pt["bt_mz"]["baseline"]["time_s"].get<double>(), 0.2);
	const auto prio = pt["bt_mz"]["static"]["priority"].get<std::vector<uint32_t>>();
	const RunResult s = run_static(w, prio);
	EXPECT_LE(s.time_s, c.stat.time_s * (1 + 1e-9));
	// The best raises P4 beside P1, as the paper's static row does.
	EXPECT_EQ(c.stat.tasks[0].final_prio, 4u);
	EXPECT_EQ(c.stat.tasks[3].final_prio, 6u);
	EXPECT_NEAR(gain(c.baseline, s), paper_gain(pt, "bt_mz", "static"), 0.03);
	EXPECT_NEAR(gain(c.baseline, c.uniform), paper_gain(pt, "bt_mz", "uniform"), 0.03);
	EXPECT_NEAR(gain(c.baseline, c.adaptive), paper_gain(pt, "bt_mz", "adaptive"), 0.03);
	// P1 stays at 4 and computes about 4x longer beside the raised P4.
	EXPECT_NEAR(s.tasks[0].comp_pct, pt["bt_mz"]["static"]["comp"][0].get<double>(), 1.0);
}

TEST(Calibration, IdealBoundsEveryScheme)
{
	for (const Workload &w : {metbench(paper()), metbenchvar(paper(), 15), btmz(paper())}) {
		Comparison c = compare(w, defaults());
		EXPECT_LE(c.ideal_s, c.stat.time_s) << w.name;
		EXPECT_LE(c.stat.time_s, c.baseline.time_s) << w.name;
		EXPECT_LE(c.ideal_s, c.uniform.time_s) << w.name;
		EXPECT_LE(c.ideal_s, c.adaptive.time_s) << w.name;
		EXPECT_LE(c.ideal_s, c.phase.time_s) << w.name;
	}
}

TEST(Heuristics, MetBenchBalancesAfterOneIterationAndStaysStable)
{
	const Workload w = metbench(paper());
	Comparison c = compare(w, defaults());
	for (const RunResult *r : {&c.uniform, &c.adaptive, &c.phase}) {
		SCOPED_TRACE(r->label);
		auto s = settle_iterations(w, *r, 0, defaults());
		ASSERT_TRUE(s.has_value());
		EXPECT_EQ(*s, 1);
		EXPECT_EQ(final_prios(*r), c.static_prio);
		// No change at all once the priorities have reached the target.
		for (const auto &t : r->tasks)
			for (size_t i = 3; i < t.prio.size(); i++)
				EXPECT_EQ(t.prio[i], t.prio[2]) << "iteration " << i;
		// One unbalanced iteration of ten (the paper: 71.74 s against the
		// static 70.90 s).
		EXPECT_GT(gain(c.baseline, *r), gain(c.baseline, c.stat) - 0.02);
	}
}

TEST(Heuristics, BalancedPairsNeverChangePriority)
{
	json spec = {{"name", "balanced"}, {"iterations", 200}, {"loads_ms", {100, 100, 100, 100}}};
	Workload w = workload_from_json(spec);
	for (Mode m : {Mode::Uniform, Mode::Adaptive, Mode::Phase}) {
		RunConfig cfg;
		cfg.mode = m;
		cfg.params = defaults();
		RunResult r = simulate(w, cfg);
		EXPECT_EQ(r.prio_changes, 0) << mode_name(m);
		EXPECT_EQ(final_prios(r), std::vector<uint32_t>(4, HPC_PRIO_NORMAL));
	}
}

// Four equal loads of 100 ms with +-noise % per iteration, 200 iterations.
Comparison balanced_noisy(double noise, uint64_t seed)
{
	json spec = {{"iterations", 200},
		     {"loads_ms", {100, 100, 100, 100}},
		     {"noise_pct", noise},
		     {"seed", seed}};
	return compare(workload_from_json(spec), defaults());
}

// Tasks 2k, 2k+1 share core k: never both above min_prio (a raised pair is
// an equal pair with less room).
void expect_one_raised_per_core(const RunResult &r, uint32_t min_prio, const std::string &what)
{
	for (size_t k = 0; k + 1 < r.tasks.size(); k += 2)
		for (size_t i = 0; i < r.tasks[k].prio.size(); i++)
			EXPECT_FALSE(r.tasks[k].prio[i] > min_prio &&
				     r.tasks[k + 1].prio[i] > min_prio)
				<< what << ": core " << k / 2 << " iteration " << i << " at ("
				<< r.tasks[k].prio[i] << "," << r.tasks[k + 1].prio[i] << ")";
}

// A balanced application with per-iteration noise (every task's load drawn
// each iteration within +-10 % and +-25 % of the same mean; at +-25 % one
// iteration in eight leaves a task below low_util): no heuristic changes any
// priority, so every one runs in the baseline's time. The rule before the
// dead band raised a context on one noisy iteration and oscillated (Adaptive
// 1.4-1.65x the baseline's time at +-25 %).
TEST(Heuristics, BalancedNoisyWorkloadKeepsEqualPriorities)
{
	for (double noise : {10.0, 25.0})
		for (uint64_t seed = 1; seed <= 5; seed++) {
			const Comparison c = balanced_noisy(noise, seed);
			const std::string what = "noise " + std::to_string(noise) + " % seed " +
						 std::to_string(seed);
			// The noise is real: some iteration leaves a task low.
			if (noise > 20) {
				double least = 100;
				for (const auto &t : c.baseline.tasks)
					for (double u : t.util_pct)
						least = std::min(least, u);
				EXPECT_LT(least, 65.0) << what;
			}
			for (const RunResult *r : {&c.uniform, &c.adaptive, &c.phase}) {
				EXPECT_EQ(r->prio_changes, 0) << r->label << " " << what;
				EXPECT_LE(r->time_s, c.baseline.time_s * 1.01)
					<< r->label << " " << what;
			}
		}
}

// Heavier noise (+-30 %, +-40 %: two low iterations in a row happen, and a
// task's load varies 2.3x) may raise a context now and then, but never both
// of a core; at +-30 % it costs at most 3 % (the rule before the dead band:
// Uniform up to 1.3x, Adaptive 1.45-1.6x).
TEST(Heuristics, HeavyNoiseNeverRaisesBothContexts)
{
	for (double noise : {30.0, 40.0})
		for (uint64_t seed = 1; seed <= 5; seed++) {
			const Comparison c = balanced_noisy(noise, seed);
			const std::string what = "noise " + std::to_string(noise) + " % seed " +
						 std::to_string(seed);
			for (const RunResult *r : {&c.uniform, &c.adaptive, &c.phase}) {
				expect_one_raised_per_core(*r, defaults().min_prio,
							   r->label + " " + what);
				if (noise < 35) {
					EXPECT_LE(r->time_s, c.baseline.time_s * 1.03)
						<< r->label << " " << what;
				}
			}
		}
}

// Polling waits (a waiting task keeps competing at its priority: the model
// before the fit) against the fitted waiting context: with polling a light
// task raised beside a heavy one slows it for the whole iteration, so
// MetBenchVar's reversed period costs 3.4x; and the same loads under
// polling gain more from MetBench's static priorities than the paper's 13 %.
TEST(Heuristics, PollingWaitsMissThePapersTables)
{
	const json pt = paper();
	Workload spin = metbench(pt);
	spin.wait = WaitMode::Spin;
	Comparison cs = compare(spin, defaults());
	EXPECT_GT(gain(cs.baseline, cs.stat), paper_gain(pt, "metbench", "static") + 0.05);
	const std::string t = render_table(cs, nullptr);
	EXPECT_NE(t.find("polling waits"), std::string::npos) << t;
	EXPECT_NE(render_table(compare(metbench(pt), defaults()), nullptr).find("modelled waits"),
		  std::string::npos);
}

// The third heuristic, Phase (Uniform's history restarted at every load
// change), on the suite the paper's open problem asks for ("it is hard to
// find an heuristic that works well in all the cases"): within 1 point of
// the better of Uniform and Adaptive on each workload. Uniform is far
// behind on MetBenchVar with short periods (k = 5: its history never lets
// a task read high in time), Adaptive on SIESTA's irregular iterations (one
// iteration's noise raises the lead past the best); Phase keeps up with
// both.
struct SuiteCase {
	std::string name;
	Workload w;
};

std::vector<SuiteCase> heuristic_suite()
{
	const json pt = paper();
	std::vector<SuiteCase> v = {{"metbench", metbench(pt)},
				    {"metbenchvar k=5", metbenchvar(pt, 5)},
				    {"metbenchvar k=15", metbenchvar(pt, 15)},
				    {"metbenchvar k=30", metbenchvar(pt, 30)},
				    {"bt_mz", btmz(pt)}};
	for (uint64_t seed = 1; seed <= 5; seed++) {
		const std::string s = " seed " + std::to_string(seed);
		v.push_back({"siesta" + s, siesta(pt, 200, 30, seed)});
		// A noisy constant load: MetBench's, +-10 % per iteration.
		Workload mb = metbench(pt, 50);
		mb.noise_pct = 10;
		mb.seed = seed;
		v.push_back({"metbench +-10 %" + s, mb});
		// And a balanced one.
		json spec = {{"iterations", 200},
			     {"loads_ms", {100, 100, 100, 100}},
			     {"noise_pct", 10},
			     {"seed", seed}};
		v.push_back({"balanced +-10 %" + s, workload_from_json(spec)});
	}
	return v;
}

TEST(Phase, WithinOnePointOfTheBetterHeuristic)
{
	double worst = 1;
	for (const auto &sc : heuristic_suite()) {
		const Comparison c = compare(sc.w, defaults());
		const double u = gain(c.baseline, c.uniform), a = gain(c.baseline, c.adaptive);
		const double ph = gain(c.baseline, c.phase);
		EXPECT_GE(ph, std::max(u, a) - 0.01)
			<< sc.name << ": Uniform " << 100 * u << " %, Adaptive " << 100 * a
			<< " %, Phase " << 100 * ph << " %";
		worst = std::min(worst, ph - std::max(u, a));
	}
	std::printf("# Phase against the better of Uniform and Adaptive: at worst %+.2f points\n",
		    100 * worst);
}

// Where the two differ, Phase is with the better one: MetBenchVar k = 5
// (Adaptive's 11.3 % against Uniform's 3.8 %). On SIESTA (+-30 %) it is
// at least as good as both for every seed, and ahead of both on most.
TEST(Phase, KeepsUpWhereUniformOrAdaptiveFalls)
{
	const json pt = paper();
	const Comparison k5 = compare(metbenchvar(pt, 5), defaults());
	EXPECT_GT(gain(k5.baseline, k5.adaptive), gain(k5.baseline, k5.uniform) + 0.05);
	EXPECT_NEAR(gain(k5.baseline, k5.phase), gain(k5.baseline, k5.adaptive), 0.005);
	int phase_ahead = 0;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		const Comparison c = compare(siesta(pt, 200, 30, seed), defaults());
		const double better =
			std::max(gain(c.baseline, c.uniform), gain(c.baseline, c.adaptive));
		phase_ahead += gain(c.baseline, c.phase) > better + 0.01;
		EXPECT_GE(gain(c.baseline, c.phase), better) << "seed " << seed;
	}
	EXPECT_GE(phase_ahead, 3);
}

// A pair whose balance point lies between two priorities (loads 650:2000
// with polling waits: 5 is too little, 6 too much): the lid keeps the heavy
// tasks from alternating between the two (without it, in the last 29
// iterations: 12 changes under Uniform, 30 under Adaptive, which ran 25 %
// slower), trying the higher one again once per HPC_LID_DECISIONS
// decisions.
TEST(Rule, NoLimitCycleBetweenTwoPriorities)
{
	Workload w;
	w.name = "650:2000";
	w.iterations = 60;
	w.wait = WaitMode::Spin;
	w.phases = {Phase{0, {650, 2000, 650, 2000}}};
	for (Mode m : {Mode::Uniform, Mode::Adaptive, Mode::Phase}) {
		RunConfig cfg;
		cfg.mode = m;
		cfg.params = defaults();
		const RunResult r = simulate(w, cfg);
		int changes = 0;
		for (const TaskResult &t : r.tasks)
			for (int i = 31; i < w.iterations; i++)
				changes += t.prio[i] != t.prio[i - 1];
		EXPECT_LE(changes, 8) << r.label;
	}
}

// Constant loads: once balanced, Phase changes no priority (no
// oscillation), as the other two.
TEST(Phase, ConstantLoadsNeverOscillate)
{
	const json pt = paper();
	json spec = {{"name", "balanced"}, {"iterations", 200}, {"loads_ms", {100, 100, 100, 100}}};
	for (const Workload &w : {metbench(pt, 200), btmz(pt), workload_from_json(spec)}) {
		const Comparison c = compare(w, defaults());
		EXPECT_EQ(c.late_changes_phase, 0) << w.name;
		EXPECT_LE(c.phase.prio_changes, 4) << w.name;
		EXPECT_EQ(final_prios(c.phase), final_prios(c.uniform)) << w.name;
	}
	// And in every period of MetBenchVar: nothing moves once settled.
	const Workload v = metbenchvar(pt, 15);
	const Comparison c = compare(v, defaults());
	for (int ph = 0; ph < 3; ph++)
		EXPECT_LE(prio_settle_iterations(v, c.phase, ph), 3) << "period " << ph;
}

TEST(Simulator, Deterministic)
{
	const Workload w = metbenchvar(paper(), 15);
	RunConfig cfg;
	cfg.mode = Mode::Adaptive;
	cfg.params = defaults();
	RunResult a = simulate(w, cfg), b = simulate(w, cfg);
	EXPECT_EQ(a.iter_s, b.iter_s);
	EXPECT_EQ(a.time_s, b.time_s);
}

TEST(Simulator, NoiseIsDeterministicAndBounded)
{
	json spec = {{"iterations", 50}, {"loads_ms", {100, 100}}, {"noise_pct", 10}};
	const Workload w = workload_from_json(spec);
	double lo = 1e9, hi = 0;
	for (int it = 0; it < w.iterations; it++)
		for (int i = 0; i < 2; i++) {
			lo = std::min(lo, w.load_ms(it, i));
			hi = std::max(hi, w.load_ms(it, i));
		}
	EXPECT_GE(lo, 90.0);
	EXPECT_LE(hi, 110.0);
	EXPECT_LT(lo, 95.0); // it does vary
	EXPECT_GT(hi, 105.0);
	EXPECT_NE(w.load_ms(0, 0), w.load_ms(0, 1));
	const Workload same = workload_from_json(spec);
	spec["seed"] = 2;
	const Workload other = workload_from_json(spec);
	EXPECT_EQ(w.load_ms(7, 1), same.load_ms(7, 1));
	EXPECT_NE(w.load_ms(7, 1), other.load_ms(7, 1));
}

TEST(Simulator, OddTaskRunsAloneAtSingleThreadSpeed)
{
	json spec = {{"iterations", 3}, {"loads_ms", {10, 10, 30}}};
	RunConfig cfg;
	cfg.params = defaults();
	RunResult r = simulate(workload_from_json(spec), cfg);
	// Task 3 has no sibling: 30 ms at full speed; the pair: 10 ms at 60 %.
	EXPECT_NEAR(r.iter_s[0], 0.030, 1e-9);
	EXPECT_NEAR(r.tasks[0].util_pct[0], 100.0 * (10 / 0.6) / 30, 0.01);
}

TEST(Spec, RejectsBadWorkloads)
{
	const json bad[] = {
		json::array(),
		{{"iterations", 5}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"bogus", 1}},
		{{"iterations", 0}, {"loads_ms", {1, 2}}},
		{{"iterations", 5}, {"loads_ms", {1, -2}}},
		{{"iterations", 5}, {"loads_ms", json::array()}},
		{{"iterations", 5}, {"wait", "sometimes"}, {"loads_ms", {1, 2}}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"phases", json::array()}},
		{{"iterations", 5}, {"phases", {{{"from", 1}, {"loads_ms", {1, 2}}}}}},
		{{"iterations", 5},
		 {"phases",
		  {{{"from", 0}, {"loads_ms", {1, 2}}}, {{"from", 2}, {"loads_ms", {1}}}}}},
		{{"iterations", 5},
		 {"phases",
		  {{{"from", 0}, {"loads_ms", {1, 2}}}, {{"from", 9}, {"loads_ms", {1, 2}}}}}},
		{{"iterations", "five"}, {"loads_ms", {1, 2}}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"noise_pct", -1}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"noise_pct", 100}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"noise_pct", "some"}},
		{{"iterations", 5}, {"loads_ms", {1, 2}}, {"seed", -3}},
	};
	for (const auto &spec : bad)
		EXPECT_THROW(workload_from_json(spec), std::invalid_argument) << spec.dump();
}

TEST(Settings, InvalidSettingChangesNothing)
{
	hpc_params p = defaults(), before = p;
	std::string err;
	const char *bad[] = {"low_util",    "low_util=",         "low_util=abc",
			     "low_util=-1", "low_util=90",       "high_util=101",
			     "min_prio=7",  "max_prio=3",        "heuristic=greedy",
			     "nonsense=1",  "global_weight=101", "low_util=1x"};
	for (const char *s : bad) {
		err.clear();
		EXPECT_FALSE(hpc::apply_setting(p, s, nullptr, err)) << s;
		EXPECT_FALSE(err.empty()) << s;
		EXPECT_EQ(0, memcmp(&p, &before, sizeof p)) << s;
	}
	hpc_prio_range power{1, 6};
	EXPECT_FALSE(hpc::apply_setting(p, "max_prio=7", &power, err));
	EXPECT_TRUE(hpc::apply_setting(p, "heuristic=phase", nullptr, err)) << err;
	EXPECT_EQ(p.heuristic, (uint32_t)HPC_HEUR_PHASE);
	EXPECT_EQ(hpc::format_param(p, HPC_P_HEURISTIC), "phase");
	EXPECT_FALSE(hpc::apply_setting(p, "heuristic=trend", nullptr, err));
	EXPECT_NE(err.find("(uniform, adaptive or phase)"), std::string::npos) << err;
	EXPECT_TRUE(hpc::apply_setting(p, "heuristic=adaptive", nullptr, err)) << err;
	EXPECT_EQ(p.heuristic, (uint32_t)HPC_HEUR_ADAPTIVE);
	EXPECT_TRUE(hpc::apply_setting(p, "last_weight=70", nullptr, err)) << err;
	EXPECT_EQ(p.global_weight, 30u);
	EXPECT_EQ(hpc::format_param(p, HPC_P_HEURISTIC), "adaptive");
}

TEST(Cli, TableRunsAndErrorsAreClear)
{
	std::string out;
	const std::string bin = HPCSIM_BIN;
	const std::string paper_opt = std::string(" --paper ") + HPCSIM_PAPER_TABLES;
	EXPECT_EQ(run(bin + " table --workload metbench" + paper_opt, out), 0) << out;
	EXPECT_NE(out.find("Uniform"), std::string::npos);
	EXPECT_NE(out.find("Phase"), std::string::npos);
	EXPECT_EQ(run(bin + " table --workload metbench --json" + paper_opt, out), 0) << out;
	json j = json::parse(out);
	EXPECT_EQ(j["static_prio"].get<std::vector<int>>(), (std::vector<int>{4, 6, 4, 6}));
	EXPECT_TRUE(j.contains("phase"));
	EXPECT_EQ(run(bin + " run --workload siesta --mode phase --iterations 20" + paper_opt, out),
		  0)
		<< out;
	EXPECT_NE(out.find("siesta Phase"), std::string::npos) << out;

	EXPECT_EQ(run(bin + " table --workload metbench --set low_util=95" + paper_opt, out), 2);
	EXPECT_NE(out.find("low_util must be below high_util"), std::string::npos) << out;
	EXPECT_NE(run(bin + " table --workload nosuch", out), 0);
	EXPECT_EQ(run(bin + " table --workload metbench --paper /nonexistent", out), 2);
	EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
	EXPECT_EQ(run(bin + " table --spec /nonexistent.json", out), 2);
	EXPECT_EQ(run(bin + " run --workload metbench --mode static --static 4,9,4,6" + paper_opt,
		      out),
		  2);
	EXPECT_NE(out.find("priorities are 0..7"), std::string::npos) << out;
	EXPECT_NE(run(bin, out), 0);
}
