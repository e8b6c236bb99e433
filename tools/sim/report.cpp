#include "report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hpcsim
{

using nlohmann::json;

namespace
{

// Priority changes in iterations after `from`.
int changes_after(const RunResult &r, int from)
{
	int n = 0;
	for (const auto &t : r.tasks)
		for (size_t i = std::max(from, 1); i < t.prio.size(); i++)
			n += t.prio[i] != t.prio[i - 1];
	return n;
}

std::vector<int> settle_all(const Workload &w, const RunResult &r, const hpc_params &p)
{
	std::vector<int> out;
	for (size_t ph = 0; ph < w.phases.size(); ph++) {
		auto s = settle_iterations(w, r, static_cast<int>(ph), p);
		out.push_back(s ? *s : -1);
	}
	return out;
}

std::vector<int> prio_settle_all(const Workload &w, const RunResult &r)
{
	std::vector<int> out;
	for (size_t ph = 0; ph < w.phases.size(); ph++)
		out.push_back(prio_settle_iterations(w, r, static_cast<int>(ph)));
	return out;
}

std::string prio_path(const TaskResult &t)
{
	std::string s = std::to_string(t.prio.front());
	for (size_t i = 1; i < t.prio.size(); i++)
		if (t.prio[i] != t.prio[i - 1])
			s += fmt::format(">{}", t.prio[i]);
	if (s.size() > 14)
		s = fmt::format("...{}", s.substr(s.size() - 11));
	return s;
}

} // namespace

Comparison compare(const Workload &w, const hpc_params &p)
{
	Comparison c;
	c.workload = w;
	c.params = p;
	RunConfig cfg;
	cfg.params = p;
	cfg.mode = Mode::Baseline;
	c.baseline = simulate(w, cfg);
	c.static_prio = best_static(w, p);
	cfg.mode = Mode::Static;
	cfg.static_prio = c.static_prio;
	c.stat = simulate(w, cfg);
	cfg.mode = Mode::Uniform;
	c.uniform = simulate(w, cfg);
	cfg.mode = Mode::Adaptive;
	c.adaptive = simulate(w, cfg);
	cfg.mode = Mode::Phase;
	c.phase = simulate(w, cfg);
	c.ideal_s = ideal_time_s(w);
	c.settle_uniform = settle_all(w, c.uniform, p);
	c.settle_adaptive = settle_all(w, c.adaptive, p);
	c.settle_phase = settle_all(w, c.phase, p);
	c.prio_settle_uniform = prio_settle_all(w, c.uniform);
	c.prio_settle_adaptive = prio_settle_all(w, c.adaptive);
	c.prio_settle_phase = prio_settle_all(w, c.phase);
	// Stability: priority changes in the second half of the last phase.
	const int last = w.phases.back().from;
	const int half = last + (w.iterations - last) / 2;
	auto late = [&](const RunResult &r, const std::vector<int> &) {
		return changes_after(r, half);
	};
	c.late_changes_uniform = late(c.uniform, c.settle_uniform);
	c.late_changes_adaptive = late(c.adaptive, c.settle_adaptive);
	c.late_changes_phase = late(c.phase, c.settle_phase);
	return c;
}

std::string render_table(const Comparison &c, const json *paper)
{
	const Workload &w = c.workload;
	const int n = w.ntasks();
	std::string o;
	o += fmt::format("{} (simulated)\n{}\n", w.name, w.description);
	o += fmt::format("{} tasks on {} emulated SMT cores, {} iterations, {} waits; "
			 "priorities {}..{}, LOW/HIGH_UTIL {}/{}, Adaptive G/L {}/{}\n",
			 n, (n + 1) / 2, w.iterations,
			 w.wait == WaitMode::Spin ? "polling" : "modelled", c.params.min_prio,
			 c.params.max_prio, c.params.low_util, c.params.high_util,
			 c.params.global_weight, c.params.last_weight);
	o += "Loads (ms of single-thread work per iteration):";
	for (size_t ph = 0; ph < w.phases.size(); ph++) {
		o += fmt::format("{}from iteration {}:", ph ? "; " : " ", w.phases[ph].from);
		for (double l : w.phases[ph].loads_ms)
			o += fmt::format(" {:.1f}", l);
	}
	o += "\n\n";

	const bool with_paper = paper != nullptr;
	o += fmt::format("{:<9} {:<4} {:>7} {:>14} {:>10} {:>7}", "Test", "Proc", "% Comp",
			 "Priority", "Time", "Gain");
	if (with_paper)
		o += fmt::format("   | paper: {:>7} {:>5} {:>9}", "% Comp", "Prio", "Time");
	o += "\n";

	struct Row {
		const char *key;
		const RunResult *r;
	};
	const Row rows[] = {{"baseline", &c.baseline},
			    {"static", &c.stat},
			    {"uniform", &c.uniform},
			    {"adaptive", &c.adaptive},
			    {"phase", &c.phase}};
	for (const auto &row : rows) {
		const RunResult &r = *row.r;
		const json *pe =
			with_paper && paper->contains(row.key) ? &paper->at(row.key) : nullptr;
		for (int i = 0; i < n; i++) {
			const bool dyn =
				row.r == &c.uniform || row.r == &c.adaptive || row.r == &c.phase;
			std::string prio =
				dyn ? prio_path(r.tasks[i]) : std::to_string(r.tasks[i].final_prio);
			std::string time = i == 0 ? fmt::format("{:.2f} s", r.time_s) : "";
			std::string gain =
				i == 0 && row.r != &c.baseline
					? fmt::format("{:.1f} %",
						      100 * (1 - r.time_s / c.baseline.time_s))
					: "";
			o += fmt::format("{:<9} P{:<3} {:>7.2f} {:>14} {:>10} {:>7}",
					 i == 0 ? r.label : "", i + 1, r.tasks[i].comp_pct, prio,
					 time, gain);
			if (pe) {
				auto comp = pe->value("comp", std::vector<double>{});
				auto pr = pe->value("priority", std::vector<int>{});
				o += fmt::format(
					"   |        {:>7} {:>5} {:>9}",
					i < (int)comp.size() ? fmt::format("{:.2f}", comp[i]) : "",
					i < (int)pr.size() ? std::to_string(pr[i]) : "-",
					i == 0 && pe->contains("time_s")
						? fmt::format("{:.2f} s",
							      pe->at("time_s").get<double>())
						: "");
			}
			o += "\n";
		}
	}
	o += fmt::format("{:<9} {:<4} {:>7} {:>14} {:>8.2f} s {:>5.1f} %\n", "Ideal", "-", "-", "-",
			 c.ideal_s, 100 * (1 - c.ideal_s / c.baseline.time_s));
	o += fmt::format("\nStatic = best constant priorities by exhaustive search: ({}).\n",
			 fmt::join(c.static_prio, ","));
	// The paper's own static row, where it ran other priorities than the
	// search finds.
	const json *ps = with_paper && paper->contains("static") ? &paper->at("static") : nullptr;
	const auto pprio =
		ps ? ps->value("priority", std::vector<uint32_t>{}) : std::vector<uint32_t>{};
	if (pprio.size() == static_cast<size_t>(n) && pprio != c.static_prio) {
		RunConfig cfg;
		cfg.mode = Mode::Static;
		cfg.params = c.params;
		cfg.static_prio = pprio;
		const RunResult r = simulate(w, cfg);
		const double d = r.time_s / c.stat.time_s - 1;
		o += fmt::format("The paper's static ({}): {:.2f} s, {:.1f} % ({}).\n",
				 fmt::join(pprio, ","), r.time_s,
				 100 * (1 - r.time_s / c.baseline.time_s),
				 d < 1e-9 ? std::string("as fast as the best")
					  : fmt::format("{:.2f} % slower than the best", 100 * d));
	}
	o += "Ideal = each core's decode share split continuously so both contexts finish "
	     "together.\n";
	const double ideal_gain = c.baseline.time_s - c.ideal_s;
	if (ideal_gain > 1e-6 * c.baseline.time_s) {
		o += fmt::format(
			"Gain as % of the ideal gain: Uniform {:.0f} %, Adaptive {:.0f} %, "
			"Phase {:.0f} %, Static {:.0f} %\n",
			100 * (c.baseline.time_s - c.uniform.time_s) / ideal_gain,
			100 * (c.baseline.time_s - c.adaptive.time_s) / ideal_gain,
			100 * (c.baseline.time_s - c.phase.time_s) / ideal_gain,
			100 * (c.baseline.time_s - c.stat.time_s) / ideal_gain);
	} else {
		// Nothing to gain (e.g. blocking waits: a sleeping sibling already
		// leaves its core to the other context): a ratio to zero says nothing.
		o += fmt::format("The ideal gains nothing here (the baseline is the best split); "
				 "against the baseline: Uniform {:+.1f} %, Adaptive {:+.1f} %, "
				 "Phase {:+.1f} %\n",
				 100 * (c.baseline.time_s - c.uniform.time_s) / c.baseline.time_s,
				 100 * (c.baseline.time_s - c.adaptive.time_s) / c.baseline.time_s,
				 100 * (c.baseline.time_s - c.phase.time_s) / c.baseline.time_s);
	}
	auto settle = [&](const std::vector<int> &s) {
		std::string out;
		for (size_t ph = 0; ph < s.size(); ph++)
			out += fmt::format("{}iter {}: {}", ph ? ", " : "", w.phases[ph].from,
					   s[ph] < 0 ? std::string("never")
						     : std::to_string(s[ph]));
		return out;
	};
	o += "Iterations to balance after each load change (within 2 % of the best static "
	     "iteration):\n";
	o += fmt::format(
		"  Uniform:  {}  (priority changes in the second half of the last phase: {})\n",
		settle(c.settle_uniform), c.late_changes_uniform);
	o += fmt::format(
		"  Adaptive: {}  (priority changes in the second half of the last phase: {})\n",
		settle(c.settle_adaptive), c.late_changes_adaptive);
	o += fmt::format(
		"  Phase:    {}  (priority changes in the second half of the last phase: {})\n",
		settle(c.settle_phase), c.late_changes_phase);
	o += "Iterations until every priority settles after each load change (the paper's "
	     "measure):\n";
	o += fmt::format("  Uniform:  {}\n", settle(c.prio_settle_uniform));
	o += fmt::format("  Adaptive: {}\n", settle(c.prio_settle_adaptive));
	o += fmt::format("  Phase:    {}\n", settle(c.prio_settle_phase));
	return o;
}

json to_json(const Comparison &c)
{
	auto run = [](const RunResult &r) {
		json t = json::array();
		for (const auto &x : r.tasks)
			t.push_back({{"comp_pct", x.comp_pct},
				     {"final_prio", x.final_prio},
				     {"prio", x.prio},
				     {"util_pct", x.util_pct}});
		return json{{"time_s", r.time_s},
			    {"iter_s", r.iter_s},
			    {"tasks", t},
			    {"prio_changes", r.prio_changes}};
	};
	json params;
	for (int i = 0; i < HPC_P_NR; i++)
		params[hpc_param_names[i]] = hpc_param_get(&c.params, i);
	return {{"workload", c.workload.name},
		{"iterations", c.workload.iterations},
		{"params", params},
		{"baseline", run(c.baseline)},
		{"static", run(c.stat)},
		{"static_prio", c.static_prio},
		{"uniform", run(c.uniform)},
		{"adaptive", run(c.adaptive)},
		{"phase", run(c.phase)},
		{"ideal_time_s", c.ideal_s},
		{"settle_uniform", c.settle_uniform},
		{"settle_adaptive", c.settle_adaptive},
		{"prio_settle_uniform", c.prio_settle_uniform},
		{"prio_settle_adaptive", c.prio_settle_adaptive},
		{"settle_phase", c.settle_phase},
		{"prio_settle_phase", c.prio_settle_phase},
		{"late_changes_phase", c.late_changes_phase},
		{"late_changes_uniform", c.late_changes_uniform},
		{"late_changes_adaptive", c.late_changes_adaptive}};
}

} // namespace hpcsim
