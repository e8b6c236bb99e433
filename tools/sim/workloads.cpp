// Built-in workloads, derived from the paper's tables, and JSON workload specs.
#include "sim.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace hpcsim
{

using nlohmann::json;

namespace
{

const json &table(const json &paper, const char *key)
{
	if (!paper.contains(key))
		throw std::invalid_argument(std::string("paper tables: no '") + key + "' entry");
	return paper.at(key);
}

// Single-thread work that takes `seconds` for a context co-running with a
// busy sibling at equal priority, per the SMT model.
double co_run_work_ms(double seconds)
{
	return seconds * 1e3 * hpc_smt_speed(HPC_PRIO_NORMAL, HPC_PRIO_NORMAL, true) /
	       double(HPC_SMT_SCALE);
}

} // namespace

// MetBench as in Table III: two pairs (light, heavy); with polling waits the
// baseline % compute of a light task is its load relative to its heavy
// sibling, and the baseline time fixes the heavy load.
Workload metbench(const json &paper, int iterations)
{
	const json &t = table(paper, "metbench");
	const auto comp = t.at("baseline").at("comp").get<std::vector<double>>();
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4 || iterations <= 0)
		throw std::invalid_argument("metbench: need 4 baseline ranks and iterations > 0");
	const double heavy = co_run_work_ms(time_s / iterations);
	Workload w;
	w.name = "metbench";
	w.description = "MetBench (Table III): P1,P3 light, P2,P4 heavy; P1,P2 share core 0, "
			"P3,P4 core 1; polling waits";
	w.iterations = iterations;
	w.wait = WaitMode::Spin;
	w.phases = {Phase{0, {heavy * comp[0] / comp[1], heavy, heavy * comp[2] / comp[3], heavy}}};
	return w;
}

// MetBenchVar as in Table IV: the loads of the pairs swap every k iterations
// (three periods). With polling waits a task's baseline % compute is the
// mean of its relative loads over the periods: (2r + 1) / 3 for a task that
// starts light, (2 + r) / 3 for one that starts heavy.
Workload metbenchvar(const json &paper, int k)
{
	const json &t = table(paper, "metbenchvar");
	const auto comp = t.at("baseline").at("comp").get<std::vector<double>>();
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4 || k <= 0)
		throw std::invalid_argument("metbenchvar: need 4 baseline ranks and k > 0");
	const int iterations = 3 * k;
	const double heavy = co_run_work_ms(time_s / iterations);
	std::vector<double> r(4);
	for (int i = 0; i < 4; i++) {
		double c = comp[i] / 100;
		r[i] = i % 2 == 0 ? (3 * c - 1) / 2 : 3 * c - 2;
		if (!(r[i] > 0 && r[i] < 1))
			throw std::invalid_argument("metbenchvar: baseline % compute out of range");
	}
	std::vector<double> a = {heavy * r[0], heavy, heavy * r[2], heavy};
	std::vector<double> b = {heavy, heavy * r[1], heavy, heavy * r[3]};
	Workload w;
	w.name = "metbenchvar";
	w.description = "MetBenchVar (Table IV): loads of P1,P3 and P2,P4 swap every " +
			std::to_string(k) + " iterations; polling waits";
	w.iterations = iterations;
	w.wait = WaitMode::Spin;
	w.phases = {Phase{0, a}, Phase{k, b}, Phase{2 * k, a}};
	return w;
}

Workload workload_from_json(const json &spec)
{
	static const char *known[] = {"name",   "description", "iterations", "wait",
				      "phases", "loads_ms",    "noise_pct",  "seed"};
	if (!spec.is_object())
		throw std::invalid_argument("workload spec: must be a JSON object");
	for (auto it = spec.begin(); it != spec.end(); ++it) {
		bool ok = false;
		for (const char *k : known)
			ok |= it.key() == k;
		if (!ok)
			throw std::invalid_argument("workload spec: unknown key '" + it.key() +
						    "'");
	}
	Workload w;
	try {
		w.name = spec.value("name", "spec");
		w.description = spec.value("description", "");
		w.iterations = spec.at("iterations").get<int>();
		std::string wait = spec.value("wait", "spin");
		if (wait == "spin")
			w.wait = WaitMode::Spin;
		else if (wait == "block")
			w.wait = WaitMode::Block;
		else
			throw std::invalid_argument("workload spec: wait must be spin or block");
		w.noise_pct = spec.value("noise_pct", 0.0);
		if (spec.contains("seed") && !spec.at("seed").is_number_unsigned() &&
		    !(spec.at("seed").is_number_integer() && spec.at("seed").get<int64_t>() >= 0))
			throw std::invalid_argument(
				"workload spec: seed must be a whole number >= 0");
		w.seed = spec.value("seed", uint64_t{1});
		if (spec.contains("phases") == spec.contains("loads_ms"))
			throw std::invalid_argument(
				"workload spec: give either loads_ms or phases (not both)");
		if (spec.contains("loads_ms")) {
			w.phases = {Phase{0, spec.at("loads_ms").get<std::vector<double>>()}};
		} else {
			for (const auto &ph : spec.at("phases")) {
				for (auto it = ph.begin(); it != ph.end(); ++it)
					if (it.key() != "from" && it.key() != "loads_ms")
						throw std::invalid_argument(
							"workload spec: unknown phase key '" +
							it.key() + "'");
				w.phases.push_back(
					Phase{ph.at("from").get<int>(),
					      ph.at("loads_ms").get<std::vector<double>>()});
			}
		}
	} catch (const json::exception &e) {
		throw std::invalid_argument(std::string("workload spec: ") + e.what());
	}
	w.validate();
	return w;
}

} // namespace hpcsim
