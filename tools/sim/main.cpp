// hpcsim: the SCHED_HPC policy in a deterministic simulator.
//
//   hpcsim table --workload metbench            Table-III-style comparison
//   hpcsim run --workload metbenchvar --mode adaptive --trace
//   hpcsim table --spec my.json --set heuristic=adaptive --json
#include "params_text.hpp"
#include "report.hpp"
#include "sim.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

using nlohmann::json;
using namespace hpcsim;

#ifndef HPCSIM_PAPER_TABLES
#define HPCSIM_PAPER_TABLES ""
#endif

namespace
{

json load_json(const std::string &path, const char *what)
{
	std::ifstream in(path);
	if (!in)
		throw std::invalid_argument(std::string("cannot open ") + what + " '" + path + "'");
	try {
		return json::parse(in);
	} catch (const json::exception &e) {
		throw std::invalid_argument(std::string(what) + " '" + path + "': " + e.what());
	}
}

struct Opts {
	std::string workload, spec, paper, mode = "uniform", static_prio;
	std::vector<std::string> settings;
	int iterations = 0, k = 15; // iterations 0: the workload's own
	double noise = 30;
	uint64_t seed = 1;
	bool json = false, trace = false;
};

void add_common(CLI::App *c, Opts &o)
{
	auto *w = c->add_option("--workload", o.workload, "built-in workload")
			  ->check(CLI::IsMember({"metbench", "metbenchvar", "bt_mz", "siesta"}));
	c->add_option("--spec", o.spec, "workload spec (JSON file)")->excludes(w);
	c->add_option("--paper", o.paper, "paper-tables.json (for built-in workloads)");
	c->add_option("--set", o.settings, "tunable KEY=VALUE (sysfs names), repeatable");
	c->add_option("--iterations", o.iterations, "MetBench (10) or SIESTA (200) iterations")
		->check(CLI::Range(1, 100000));
	c->add_option("-k", o.k, "MetBenchVar: iterations between load swaps")
		->check(CLI::Range(1, 10000));
	c->add_option("--noise", o.noise, "SIESTA: per-iteration load variation, +-%")
		->check(CLI::Range(0.0, 99.0));
	c->add_option("--seed", o.seed, "SIESTA: seed of the load variation");
	c->add_flag("--json", o.json, "JSON output");
}

Workload pick_workload(const Opts &o, json &paper, std::string &key)
{
	if (!o.spec.empty()) {
		key.clear();
		return workload_from_json(load_json(o.spec, "workload spec"));
	}
	if (o.workload.empty())
		throw std::invalid_argument("give --workload or --spec");
	std::string path = o.paper;
	if (path.empty())
		if (const char *env = std::getenv("HPCSCHED_PAPER_TABLES"))
			path = env;
	if (path.empty())
		path = HPCSIM_PAPER_TABLES;
	paper = load_json(path, "paper tables");
	key = o.workload;
	if (o.workload == "bt_mz")
		return btmz(paper);
	if (o.workload == "siesta")
		return siesta(paper, o.iterations ? o.iterations : 200, o.noise, o.seed);
	return o.workload == "metbench" ? metbench(paper, o.iterations ? o.iterations : 10)
					: metbenchvar(paper, o.k);
}

hpc_params pick_params(const Opts &o)
{
	hpc_params p;
	hpc_params_default(&p);
	for (const auto &s : o.settings) {
		std::string err;
		if (!hpc::apply_setting(p, s, nullptr, err))
			throw std::invalid_argument("--set " + err);
	}
	return p;
}

std::vector<uint32_t> parse_prio_list(const std::string &s, int n)
{
	std::vector<uint32_t> v;
	size_t pos = 0;
	while (pos <= s.size()) {
		size_t end = s.find(',', pos);
		if (end == std::string::npos)
			end = s.size();
		std::string tok = s.substr(pos, end - pos);
		if (tok.size() != 1 || tok[0] < '0' || tok[0] > '7')
			throw std::invalid_argument(
				"--static: priorities are 0..7, comma-separated");
		v.push_back(static_cast<uint32_t>(tok[0] - '0'));
		pos = end + 1;
	}
	if (static_cast<int>(v.size()) != n)
		throw std::invalid_argument(fmt::format("--static: need {} priorities", n));
	return v;
}

int cmd_table(const Opts &o)
{
	json paper;
	std::string key;
	Workload w = pick_workload(o, paper, key);
	Comparison c = compare(w, pick_params(o));
	if (o.json) {
		std::cout << to_json(c).dump(1) << "\n";
		return 0;
	}
	const json *entry = !key.empty() && paper.contains(key) ? &paper.at(key) : nullptr;
	std::cout << render_table(c, entry) << "\n";
	return 0;
}

int cmd_run(const Opts &o)
{
	json paper;
	std::string key;
	Workload w = pick_workload(o, paper, key);
	RunConfig cfg;
	cfg.params = pick_params(o);
	if (o.mode == "baseline")
		cfg.mode = Mode::Baseline;
	else if (o.mode == "uniform")
		cfg.mode = Mode::Uniform;
	else if (o.mode == "adaptive")
		cfg.mode = Mode::Adaptive;
	else if (o.mode == "phase")
		cfg.mode = Mode::Phase;
	else {
		cfg.mode = Mode::Static;
		cfg.static_prio = o.static_prio.empty()
					  ? best_static(w, cfg.params)
					  : parse_prio_list(o.static_prio, w.ntasks());
	}
	RunResult r = simulate(w, cfg);
	if (o.json) {
		json j = {{"mode", r.label}, {"time_s", r.time_s}, {"iter_s", r.iter_s}};
		for (const auto &t : r.tasks)
			j["tasks"].push_back({{"comp_pct", t.comp_pct},
					      {"prio", t.prio},
					      {"util_pct", t.util_pct}});
		std::cout << j.dump(1) << "\n";
		return 0;
	}
	std::cout << fmt::format("{} {}: {:.2f} s\n", w.name, r.label, r.time_s);
	for (size_t i = 0; i < r.tasks.size(); i++)
		std::cout << fmt::format("  P{} % comp {:6.2f}  final priority {}\n", i + 1,
					 r.tasks[i].comp_pct, r.tasks[i].final_prio);
	if (o.trace) {
		std::cout << "iter   time(s)";
		for (size_t i = 0; i < r.tasks.size(); i++)
			std::cout << fmt::format("   P{} prio  util", i + 1);
		std::cout << "\n";
		for (size_t it = 0; it < r.iter_s.size(); it++) {
			std::cout << fmt::format("{:4} {:9.3f}", it, r.iter_s[it]);
			for (const auto &t : r.tasks)
				std::cout << fmt::format("   {:7} {:5.1f}", t.prio[it],
							 t.util_pct[it]);
			std::cout << "\n";
		}
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"hpcsim: the SCHED_HPC policy core on emulated SMT cores"};
	app.require_subcommand(1);
	Opts o;
	auto *table = app.add_subcommand("table",
					 "baseline / static / Uniform / Adaptive / Phase / ideal");
	add_common(table, o);
	auto *run = app.add_subcommand("run", "one run, optionally with a per-iteration trace");
	add_common(run, o);
	run->add_option("--mode", o.mode, "baseline|static|uniform|adaptive|phase")
		->check(CLI::IsMember({"baseline", "static", "uniform", "adaptive", "phase"}));
	run->add_option("--static", o.static_prio,
			"static priorities, e.g. 4,6,4,6 (default: best)");
	run->add_flag("--trace", o.trace, "per-iteration priorities and utilisation");
	CLI11_PARSE(app, argc, argv);
	try {
		return table->parsed() ? cmd_table(o) : cmd_run(o);
	} catch (const std::exception &e) {
		std::cerr << "hpcsim: " << e.what() << "\n";
		return 2;
	}
}
