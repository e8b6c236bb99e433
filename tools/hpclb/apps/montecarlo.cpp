// Monte-Carlo: a loosely coupled job for RUPER-LB (its target, §2): N
// samples of pi (one sample = one iteration) over T threads on every rank,
// redistributed by measured speed at thread and MPI level
// (hpclb_ruper_mpi_run). --slow RANK:F makes every sample on that rank cost
// F times more; --no-lb gives every thread its static share instead.
//
// usage: hpclb-montecarlo [--samples N] [--threads T] [--slow RANK:F] [--no-lb]
#include "hpclb/hpclb_mpi.h"
#include "started.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace
{
struct State {
	int reps = 1;
	std::vector<std::mt19937_64> rng;
	std::vector<uint64_t> hits;
};

void samples(uint64_t count, int t, void *arg)
{
	auto &s = *static_cast<State *>(arg);
	std::uniform_real_distribution<double> u(0, 1);
	for (uint64_t i = 0; i < count; i++) {
		bool in = false;
		for (int r = 0; r < s.reps; r++) { // a slower node: the same sample, F times
			double x = u(s.rng[t]), y = u(s.rng[t]);
			in = x * x + y * y <= 1;
		}
		s.hits[t] += in;
	}
}
} // namespace

int main(int argc, char **argv)
{
	int provided = 0;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t n = 20000000;
	int threads = 2, slow_rank = -1, bad = provided < MPI_THREAD_FUNNELED;
	double slow = 1;
	bool lb = true;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--samples" && i + 1 < argc)
			n = std::strtoull(argv[++i], nullptr, 10);
		else if (a == "--threads" && i + 1 < argc)
			threads = std::atoi(argv[++i]);
		else if (a == "--slow" && i + 1 < argc)
			bad |= std::sscanf(argv[++i], "%d:%lf", &slow_rank, &slow) != 2 || slow < 1;
		else if (a == "--no-lb")
			lb = false;
		else
			bad = 1;
	}
	if (bad || !n || threads < 1 || threads > 256) {
		if (!rank)
			std::fprintf(
				stderr,
				"montecarlo: bad arguments (--samples N>0 --threads "
				"1..256 --slow RANK:F>=1 --no-lb), or no MPI thread support\n");
		MPI_Finalize();
		return 2;
	}
	State s;
	s.reps = rank == slow_rank ? static_cast<int>(slow) : 1;
	for (int t = 0; t < threads; t++)
		s.rng.emplace_back(1000003ULL * static_cast<uint64_t>(rank) +
				   static_cast<uint64_t>(t));
	s.hits.assign(static_cast<size_t>(threads), 0);
	MPI_Barrier(MPI_COMM_WORLD);
	const double t0 = MPI_Wtime();
	if (!rank)
		hpclb_apps::print_started();
	uint64_t here = 0, total = 0;
	if (lb) {
		hpclb_ruper_params p;
		hpclb_ruper_defaults(&p);
		p.checkpoint_interval = 0.5;
		p.threshold = 0.1;
		p.min_report = 0.1;
		p.max_report = 0.4;
		if (hpclb_ruper_mpi_run(MPI_COMM_WORLD, n, threads, 2000, &p, samples, &s, &here,
					&total) != 0) {
			std::fprintf(stderr, "montecarlo: %s\n", hpclb_last_error());
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	} else {
		// Static: an equal share per rank and per thread.
		const uint64_t mine = n / size + (static_cast<uint64_t>(rank) < n % size);
		std::vector<std::thread> pool;
		for (int t = 0; t < threads; t++)
			pool.emplace_back([&, t] {
				samples(mine / threads +
						(static_cast<uint64_t>(t) < mine % threads),
					t, &s);
			});
		for (auto &th : pool)
			th.join();
		here = mine;
		MPI_Allreduce(&here, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	}
	const double mine_time = MPI_Wtime() - t0;
	uint64_t hits = 0, all_hits = 0;
	for (auto h : s.hits)
		hits += h;
	MPI_Reduce(&hits, &all_hits, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	double tmax = 0;
	MPI_Reduce(&mine_time, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	std::printf("rank %d: %llu samples in %.3f s\n", rank,
		    static_cast<unsigned long long>(here), mine_time);
	std::fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
	if (!rank)
		std::printf("samples %llu of %llu\npi %.6f\ntime %.3f s\n",
			    static_cast<unsigned long long>(total),
			    static_cast<unsigned long long>(n),
			    4.0 * static_cast<double>(all_hits) / static_cast<double>(total), tmax);
	MPI_Finalize();
	return 0;
}
