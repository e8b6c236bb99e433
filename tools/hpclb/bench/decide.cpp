// Decision time of libhpclb's plans: N work units on P simulated ranks
// (default 1e5 on 1e3), heterogeneous speeds and a background load on some
// ranks; median of R runs of each method. Prints one line per method.
//
// usage: hpclb-decide [UNITS] [RANKS] [REPEAT]
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace hpclb;
using clk = std::chrono::steady_clock;

template <typename F> double median_ms(int reps, F &&f)
{
	std::vector<double> t;
	for (int r = 0; r < reps; r++) {
		auto t0 = clk::now();
		f();
		t.push_back(std::chrono::duration<double, std::milli>(clk::now() - t0).count());
	}
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

int main(int argc, char **argv)
{
	const size_t N = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
	const size_t P = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000;
	const int R = argc > 3 ? std::atoi(argv[3]) : 5;
	if (!N || !P || R < 1) {
		std::fprintf(stderr, "usage: hpclb-decide [UNITS>0] [RANKS>0] [REPEAT>0]\n");
		return 2;
	}
	std::mt19937_64 rng(42);
	std::vector<Vcpu> v(P);
	std::vector<std::string> names;
	for (size_t p = 0; p < P; p++) {
		v[p].freq = (p % 4 == 0) ? 0.5 : 1.0;         // a quarter of slow nodes
		v[p].background = (p % 10 == 3) ? 0.02 : 0.0; // some interference
		names.push_back(std::string("n").append(std::to_string(p)));
	}
	std::vector<Task> t(N);
	std::vector<Container> c(N);
	for (size_t i = 0; i < N; i++) {
		int p = static_cast<int>(i % P);
		double work = 0.001 * (1 + rng() % 100) / 50.0; // 0.02..2 ms of work
		t[i] = {static_cast<int64_t>(i), work / v[p].freq, p, 4096};
		c[i] = {static_cast<int64_t>(i), p, work / v[p].freq, 4096};
	}
	std::vector<double> interval(P, 0);
	for (const auto &x : t)
		interval[x.proc] += x.cpu_time;
	auto ps = psi(interval);
	std::vector<Host> h(P);
	for (size_t p = 0; p < P; p++)
		h[p] = {v[p].freq, interval[p], ps[p]};

	RefineResult rr;
	double ms_refine = median_ms(R, [&] { rr = refine(v, t, 0.002); });
	MigrationPlan mp;
	double ms_plan = median_ms(R, [&] { mp = migration_plan(h, c, {1e9}); });
	auto tree = MachineTree::flat(names);
	for (size_t p = 0; p < P; p++)
		tree.node(static_cast<int>(p + 1)).mflops = 1000 * v[p].freq;
	std::vector<uint64_t> counts;
	double ms_drum = median_ms(R, [&] {
		tree.compute({0});
		std::vector<double> sh;
		for (int id : tree.leaves())
			sh.push_back(tree.node(id).share);
		counts = split(N, sh);
	});
	RuperParams rp;
	double ms_ruper = median_ms(R, [&] {
		RuperTask task(N * 1000, P, rp, 0);
		for (size_t p = 0; p < P; p++)
			task.start(p, 0);
		for (size_t p = 0; p < P; p++)
			task.report(p, static_cast<uint64_t>(100 * v[p].freq), 1.0);
		task.checkpoint(1.0);
	});
	std::printf("decide: %zu units on %zu ranks, median of %d\n", N, P, R);
	std::printf("decide refine    %8.2f ms  moves %zu  imbalance %.3f -> %.3f\n", ms_refine,
		    rr.moves, rr.imbalance_before, rr.imbalance_after);
	std::printf("decide container %8.2f ms  moves %zu  kept %zu\n", ms_plan, mp.moves.size(),
		    mp.kept.size());
	std::printf("decide drum      %8.2f ms  (tree power + split of %zu units)\n", ms_drum, N);
	std::printf("decide ruper     %8.2f ms  (%zu reports + 1 checkpoint)\n", ms_ruper, P);
	return 0;
}
