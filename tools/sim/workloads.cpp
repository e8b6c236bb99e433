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

// Single-thread work (ms) of a pair at (4, 4) whose contexts start together
// and compute c_short <= c_long of an iteration of t_s seconds: the shorter
// computes beside a busy sibling all along; the longer as well, then beside
// a waiting one (the SMT model's hpc_smt_speed(4, 4, busy)).
std::pair<double, double> pair_loads(double c_short, double c_long, double t_s, WaitMode wait)
{
	const double busy =
		hpc_smt_speed(HPC_PRIO_NORMAL, HPC_PRIO_NORMAL, true) / double(HPC_SMT_SCALE);
	const double alone = wait == WaitMode::Spin
				     ? busy
				     : hpc_smt_speed(HPC_PRIO_NORMAL, HPC_PRIO_NORMAL, false) /
					       double(HPC_SMT_SCALE);
	const double s = busy * c_short * t_s * 1e3;
	return {s, s + alone * (c_long - c_short) * t_s * 1e3};
}

// The loads of ranks that share cores as @pairs say, from their baseline %
// compute @comp: each pair's shorter and longer as pair_loads gives them.
std::vector<double> core_loads(const std::vector<double> &comp,
			       const std::vector<std::pair<int, int>> &pairs, double t_s,
			       WaitMode wait)
{
	std::vector<double> l(comp.size());
	for (auto [x, y] : pairs) {
		const bool xs = comp[x] <= comp[y];
		const auto [s, g] =
			pair_loads(xs ? comp[x] : comp[y], xs ? comp[y] : comp[x], t_s, wait);
		l[x] = xs ? s : g;
		l[y] = xs ? g : s;
	}
	return l;
}

std::vector<double> percent(const json &row)
{
	auto v = row.at("comp").get<std::vector<double>>();
	for (double &c : v) {
		if (!(c > 0 && c <= 100))
			throw std::invalid_argument("paper tables: % compute out of range");
		c /= 100;
	}
	return v;
}

} // namespace

// MetBench as in Table III, 10 iterations (81.78 s / 10 = 368.17 s / 45: the
// per-iteration cost of MetBenchVar, the same benchmark and loads): two pairs
// (light, heavy); the loads give the baseline its time and the light ranks
// their % compute under the SMT model.
Workload metbench(const json &paper, int iterations)
{
	const json &t = table(paper, "metbench");
	const auto comp = percent(t.at("baseline"));
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4 || iterations <= 0)
		throw std::invalid_argument("metbench: need 4 baseline ranks and iterations > 0");
	Workload w;
	w.name = "metbench";
	w.description = "MetBench (Table III): P1,P3 light, P2,P4 heavy; P1,P2 share core 0, "
			"P3,P4 core 1";
	w.iterations = iterations;
	const double it_s = time_s / iterations;
	// The heavy ranks are the critical path: the iteration is theirs.
	const auto [l1, h1] = pair_loads(comp[0], 1, it_s, w.wait);
	const auto [l3, h3] = pair_loads(comp[2], 1, it_s, w.wait);
	w.phases = {Phase{0, {l1, h1, l3, h3}}};
	return w;
}

// MetBenchVar as in Table IV: the loads of the pairs swap every k iterations
// (three periods of equal iteration time). A rank's baseline % compute is the
// mean over the periods: (2c + 1) / 3 for one that starts light (c: its %
// compute when light), (2 + c) / 3 for one that starts heavy.
Workload metbenchvar(const json &paper, int k)
{
	const json &t = table(paper, "metbenchvar");
	const auto comp = percent(t.at("baseline"));
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4 || k <= 0)
		throw std::invalid_argument("metbenchvar: need 4 baseline ranks and k > 0");
	std::vector<double> c(4);
	for (int i = 0; i < 4; i++) {
		c[i] = i % 2 == 0 ? (3 * comp[i] - 1) / 2 : 3 * comp[i] - 2;
		if (!(c[i] > 0 && c[i] < 1))
			throw std::invalid_argument("metbenchvar: baseline % compute out of range");
	}
	Workload w;
	w.name = "metbenchvar";
	w.description = "MetBenchVar (Table IV): loads of P1,P3 and P2,P4 swap every " +
			std::to_string(k) + " iterations";
	w.iterations = 3 * k;
	const double it_s = time_s / w.iterations;
	std::vector<double> a(4), b(4);
	for (int i = 0; i < 4; i += 2) {
		const auto [light, heavy] = pair_loads(c[i], 1, it_s, w.wait);
		const auto [light2, heavy2] = pair_loads(c[i + 1], 1, it_s, w.wait);
		a[i] = light;
		a[i + 1] = heavy;
		b[i] = heavy2;
		b[i + 1] = light2;
	}
	w.phases = {Phase{0, a}, Phase{k, b}, Phase{2 * k, a}};
	return w;
}

// BT-MZ as in Table V (class A, 200 iterations): P1,P4 share core 0 and
// P2,P3 core 1 (in the static row P1 stays at priority 4 and computes 3.4x
// longer: its sibling is the rank raised to 6, P4); the loads give the
// baseline its time and % compute. Every rank meets the others at a barrier
// (BT-MZ synchronises with its neighbours: a model of it).
Workload btmz(const json &paper)
{
	const json &t = table(paper, "bt_mz");
	const auto comp = percent(t.at("baseline"));
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4)
		throw std::invalid_argument("bt_mz: need 4 baseline ranks");
	Workload w;
	w.name = "bt_mz";
	w.description = "BT-MZ (Table V): P1,P4 share core 0, P2,P3 core 1";
	w.iterations = 200;
	w.siblings = {3, 2, 1, 0};
	const double it_s = time_s / w.iterations;
	w.phases = {Phase{0, core_loads(comp, {{0, 3}, {1, 2}}, it_s, w.wait)}};
	return w;
}

// SIESTA as in Table VI (benzene): the loads give the baseline its time and
// % compute with P1,P2 and P3,P4 sharing a core (the paper does not say;
// the ranks' default placement). Its iterations are short and irregular
// ("an iteration is not necessarily representative of the next one"): each
// rank's load varies within +-noise_pct % from one iteration to the next.
Workload siesta(const json &paper, int iterations, double noise_pct, uint64_t seed)
{
	const json &t = table(paper, "siesta");
	const auto comp = percent(t.at("baseline"));
	const double time_s = t.at("baseline").at("time_s").get<double>();
	if (comp.size() != 4 || iterations <= 0)
		throw std::invalid_argument("siesta: need 4 baseline ranks and iterations > 0");
	Workload w;
	w.name = "siesta";
	w.description = "SIESTA (Table VI): P1,P2 share core 0, P3,P4 core 1; loads vary "
			"per iteration";
	w.iterations = iterations;
	w.noise_pct = noise_pct;
	w.seed = seed;
	const double it_s = time_s / w.iterations;
	w.phases = {Phase{0, core_loads(comp, {{0, 1}, {2, 3}}, it_s, w.wait)}};
	return w;
}

Workload workload_from_json(const json &spec)
{
	static const char *known[] = {"name",     "description", "iterations", "wait",    "phases",
				      "loads_ms", "noise_pct",   "seed",       "siblings"};
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
		std::string wait = spec.value("wait", "block");
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
		if (spec.contains("siblings"))
			w.siblings = spec.at("siblings").get<std::vector<int>>();
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
