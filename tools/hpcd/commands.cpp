// hpcctl run, top and status, on whichever backend the options name.
#include "backend.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include <fmt/format.h>

using nlohmann::json;

namespace hpcctl
{

int run_cmd(const Opts &o)
{
	const auto kv = settings_of(o);
	auto b = make_backend(o);
	b->check_settings(kv);
	const auto membind = check_membind(o.membind);
	b->start(kv);
	return b->run(membind);
}

namespace
{

std::string pct(const json &j, const char *k)
{
	if (!j.contains(k))
		return "-";
	return fmt::format("{:.2f}", j[k].get<double>() / 100.0);
}

// The quota of a task hpcd throttles: QUOTA/PERIOD, "max" or "-".
std::string quota(const json &t)
{
	if (!t.contains("quota_us"))
		return "-";
	return t["quota_us"].get<long long>() < 0
		       ? "max"
		       : fmt::format("{}/{}", t["quota_us"].get<long long>(),
				     t["period_us"].get<long long>());
}

// `source`: the SOURCE column of a task that does not say.
void print_table(const json &tasks, const char *source)
{
	fmt::print("{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} {:>10} "
		   "{:>7} {:<7}\n",
		   "PID", "NAME", "RANK", "CPU", "SIBLING", "ITER", "U_LAST%", "U_GLOB%", "PRIO",
		   "QUOTA/PERIOD", "WEIGHT", "THROTTLEDms", "NR_THR", "SOURCE");
	for (auto &t : tasks) {
		auto g = [&](const char *k) {
			return t.contains(k) ? t[k].dump() : std::string("-");
		};
		std::string role = t.value("role", "task") == "launcher" ? "*" : "";
		fmt::print("{:>7} {:<12} {:>4} {:>3} {:>7} {:>6} {:>7} {:>7} {:>4} {:>13} {:>6} "
			   "{:>10} {:>7} {:<7}\n",
			   t["pid"].get<int>(),
			   (t.value("name", std::string()) + role).substr(0, 12), g("rank"),
			   g("cpu"), g("sibling"), g("iterations"), pct(t, "last_util"),
			   pct(t, "global_util"), g("prio"), quota(t), g("weight"),
			   fmt::format("{:.1f}", t.value("throttled_ns", 0ull) / 1e6),
			   g("nr_throttled"), t.value("source", std::string(source)));
	}
	if (tasks.empty())
		fmt::print("(no managed task)\n");
}

} // namespace

int top_cmd(const Opts &o)
{
	auto b = make_backend(o);
	b->attach();
	for (int n = 0;; n++) {
		json tasks = b->tasks();
		if (o.json_out) {
			std::cout << tasks.dump() << std::endl;
		} else {
			if (!o.once)
				fmt::print("\033[H\033[2J");
			fmt::print("hpcctl top — {} — {} task(s)\n", b->label(), tasks.size());
			print_table(tasks, b->task_source());
			std::fflush(stdout);
		}
		if (o.once || (o.count && n + 1 >= o.count))
			return kOk;
		std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
	}
}

int status_cmd(const Opts &o)
{
	make_backend(o)->print_status(o.json_out);
	return kOk;
}

} // namespace hpcctl
