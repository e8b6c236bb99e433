// Stencil2D: a 5-point Jacobi stencil over a grid over-decomposed into
// blocks; blocks are libhpclb's migratable work units (the refinement
// paper's benchmark, §V-VI). Every LB period the blocks' measured times go to
// hpclb_mpi_step() and the plan's blocks move with hpclb_mpi_exchange().
//
// The result does not depend on where blocks run: the checksum (block sums
// added in block order on rank 0) is the same with and without balancing.
//
// --kernel wave runs Wave2D instead (u' = 2u - u_prev + c^2 lap u, a bump
// at rest in the middle, edges at 0): a block then carries two time levels.
//
// usage: hpclb-stencil2d [--n N] [--blocks B] [--iters I] [--lb-every K] [--kernel jacobi|wave]
//        [--mode none|refine|container|drum] [--slow RANK:FACTOR] [--die-at ITER]
//        [--machine XML] [--monitor-period S] [--remeasure S]
//        [--persistence N] [--max-moves N] [--move-fraction F] [--no-peers] [--work K]
// --machine: DRUM's machine tree from the paper's XML (drum mode);
// --monitor-period: the monitor thread's period; --remeasure: f_p measured
// again at every LB step for S seconds.
// --slow makes one rank FACTOR times slower (it repeats its kernel), for
// runs without cgroups; --die-at makes rank 1 exit there (tests).
// --work K sweeps each block K times per iteration (more arithmetic per
// byte, as a higher-order stencil or more variables per cell: a block stays
// in cache, so an iteration lasts longer without touching more memory).
// --persistence, --max-moves, --move-fraction: the damping's (hpclb_damping).
// Each block's four neighbours are its peers (hpclb_mpi_unit_peers): moved
// blocks stay next to their neighbours. --no-peers leaves the graph out
// (the refinement's plain largest-that-fits choice).
#include "hpclb/hpclb_mpi.h"
#include "started.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace
{
struct Block {
	std::vector<double> a, b;   // (s+2) x (s+2), halo included
	std::vector<double> prev;   // wave: the previous time step
	std::vector<double> packed; // what a move sends (a, then prev for the wave)
	double load = 0;
};
int S = 32, B = 8; // block side, blocks per side
bool wave = false; // --kernel wave: Wave2D instead of the Jacobi stencil
int idx(int i, int j)
{
	return i * (S + 2) + j;
}

const void *get_block(int64_t id, size_t *len, void *arg)
{
	auto &blocks = *static_cast<std::map<int, Block> *>(arg);
	auto &bl = blocks.at(static_cast<int>(id));
	bl.packed = bl.a;
	bl.packed.insert(bl.packed.end(), bl.prev.begin(), bl.prev.end());
	*len = bl.packed.size() * sizeof(double);
	return bl.packed.data();
}
void put_block(int64_t id, const void *buf, size_t len, void *arg)
{
	auto &blocks = *static_cast<std::map<int, Block> *>(arg);
	Block bl;
	const size_t n = len / sizeof(double), cells = static_cast<size_t>((S + 2) * (S + 2));
	const auto *d = static_cast<const double *>(buf);
	bl.a.assign(d, d + cells);
	if (n == 2 * cells)
		bl.prev.assign(d + cells, d + n);
	bl.b = bl.a;
	blocks[static_cast<int>(id)] = std::move(bl);
}
} // namespace

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int n = 256, iters = 100, every = 10, mode = HPCLB_MODE_REFINE, slow_rank = -1, die_at = -1;
	double slow = 1, monitor_period = 0, remeasure = 0;
	std::string machine;
	bool bad_kernel = false, damping = false, comm_aware = true;
	int work = 1;
	hpclb_damping damp;
	hpclb_damping_defaults(&damp);
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc) {
				if (!rank)
					std::fprintf(stderr, "stencil2d: %s needs a value\n",
						     a.c_str());
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			return argv[++i];
		};
		if (a == "--n")
			n = std::atoi(val().c_str());
		else if (a == "--blocks")
			B = std::atoi(val().c_str());
		else if (a == "--iters")
			iters = std::atoi(val().c_str());
		else if (a == "--lb-every")
			every = std::atoi(val().c_str());
		else if (a == "--kernel") {
			std::string k = val();
			wave = k == "wave";
			if (k != "wave" && k != "jacobi")
				bad_kernel = true;
		} else if (a == "--die-at")
			die_at = std::atoi(val().c_str());
		else if (a == "--machine")
			machine = val();
		else if (a == "--monitor-period")
			monitor_period = std::atof(val().c_str());
		else if (a == "--remeasure")
			remeasure = std::atof(val().c_str());
		else if (a == "--work")
			work = std::atoi(val().c_str());
		else if (a == "--no-peers")
			comm_aware = false;
		else if (a == "--persistence")
			damp.persistence = std::atoi(val().c_str()), damping = true;
		else if (a == "--max-moves")
			damp.max_moves = std::atoll(val().c_str()), damping = true;
		else if (a == "--move-fraction")
			damp.max_move_fraction = std::atof(val().c_str()), damping = true;
		else if (a == "--slow") {
			std::string v = val();
			if (std::sscanf(v.c_str(), "%d:%lf", &slow_rank, &slow) != 2 || slow < 1)
				slow_rank = -2;
		} else if (a == "--mode") {
			std::string m = val();
			mode = m == "none"        ? HPCLB_MODE_NONE
			       : m == "refine"    ? HPCLB_MODE_REFINE
			       : m == "container" ? HPCLB_MODE_CONTAINER
			       : m == "drum"      ? HPCLB_MODE_DRUM
						  : -1;
		} else {
			mode = -2;
		}
	}
	if (n < 4 || B < 1 || n % B || iters < 1 || every < 1 || mode < 0 || slow_rank < -1 ||
	    bad_kernel || work < 1 || work > 1000) {
		if (!rank)
			std::fprintf(stderr,
				     "stencil2d: bad arguments (N divisible by B, kernel "
				     "jacobi|wave, mode "
				     "none|refine|container|drum, --slow RANK:FACTOR>=1, --work "
				     "1..1000)\n");
		MPI_Finalize();
		return 2;
	}
	S = n / B;
	hpclb_ctx *lb = hpclb_mpi_new(MPI_COMM_WORLD, mode);
	if (!lb) {
		std::fprintf(stderr, "stencil2d: %s\n", hpclb_last_error());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	// The options' errors are the library's (the same on every rank).
	if ((!machine.empty() && hpclb_mpi_set_machine(lb, machine.c_str())) ||
	    (monitor_period != 0 && hpclb_mpi_set_monitor_period(lb, monitor_period)) ||
	    (remeasure != 0 && hpclb_mpi_set_remeasure(lb, remeasure)) ||
	    (damping && hpclb_mpi_set_damping(lb, &damp))) {
		if (!rank)
			std::fprintf(stderr, "stencil2d: %s\n", hpclb_last_error());
		hpclb_mpi_free(lb);
		MPI_Finalize();
		return 1;
	}
	// The application's own messages stay on its communicator: the library
	// talks on its duplicate, so their tags never meet.
	MPI_Comm comm = MPI_COMM_WORLD;
	// An emulated slow CPU is a slower f_p for the refinement (Figure 2 loop
	// times the real CPU, the kernel repeats itself FACTOR times).
	if (rank == slow_rank)
		hpclb_mpi_set_speed(lb, hpclb_mpi_speed(lb) / slow);
	const int nb = B * B;
	std::vector<int> owner(nb);
	std::map<int, Block> blocks;
	for (int b = 0; b < nb; b++) {
		owner[b] = static_cast<int>(static_cast<long>(b) * size / nb);
		if (owner[b] == rank) {
			Block bl;
			bl.a.assign(static_cast<size_t>((S + 2) * (S + 2)), 0.0);
			if (wave) {
				// A bump in the middle of the grid, at rest; edges held at 0.
				for (int i = 1; i <= S; i++)
					for (int j = 1; j <= S; j++) {
						double x = ((b / B) * S + i - 0.5) / n - 0.5,
						       y = ((b % B) * S + j - 0.5) / n - 0.5;
						bl.a[idx(i, j)] = std::exp(-200 * (x * x + y * y));
					}
				bl.prev = bl.a;
			} else if (b / B == 0) { // the grid's top edge is held at 1
				for (int j = 0; j < S + 2; j++)
					bl.a[idx(0, j)] = 1.0;
			}
			bl.b = bl.a;
			blocks[b] = std::move(bl);
		}
	}
	const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
	double t0 = MPI_Wtime(), lb_time = 0;
	if (!rank)
		hpclb_apps::print_started();
	int step = 0;
	for (int it = 1; it <= iters; it++) {
		if (it == die_at && rank == 1) {
			std::fprintf(stderr, "stencil2d: rank 1 exits at iteration %d (--die-at)\n",
				     it);
			_exit(3);
		}
		// Halo exchange: for block b, neighbour d's edge arrives with tag b*4+d.
		std::vector<MPI_Request> req;
		std::vector<std::vector<double>> out, in;
		std::vector<std::pair<int, int>> in_for;
		out.reserve(blocks.size() * 4);
		in.reserve(blocks.size() * 4);
		const double p0 = MPI_Wtime(), pc0 = hpclb_thread_seconds();
		for (auto &[b, bl] : blocks) {
			int bi = b / B, bj = b % B;
			for (int d = 0; d < 4; d++) {
				int ni = bi + di[d], nj = bj + dj[d];
				if (ni < 0 || ni >= B || nj < 0 || nj >= B)
					continue;
				int nbk = ni * B + nj;
				// My edge facing the neighbour, for its halo on the opposite side.
				std::vector<double> e(static_cast<size_t>(S));
				for (int k = 0; k < S; k++)
					e[k] = d == 0   ? bl.a[idx(1, k + 1)]
					       : d == 1 ? bl.a[idx(S, k + 1)]
					       : d == 2 ? bl.a[idx(k + 1, 1)]
							: bl.a[idx(k + 1, S)];
				int opp = d ^ 1;
				if (owner[nbk] == rank) {
					// A neighbour on this rank: straight into its halo.
					auto &nb = blocks[nbk];
					for (int m = 0; m < S; m++) {
						int i = opp == 0 ? 0 : opp == 1 ? S + 1 : m + 1;
						int j = opp == 2 ? 0 : opp == 3 ? S + 1 : m + 1;
						nb.a[idx(i, j)] = e[m];
					}
					continue;
				}
				out.push_back(std::move(e));
				req.emplace_back();
				MPI_Isend(out.back().data(), S, MPI_DOUBLE, owner[nbk],
					  nbk * 4 + opp, comm, &req.back());
				in.emplace_back(static_cast<size_t>(S));
				in_for.push_back({b, d});
				req.emplace_back();
				MPI_Irecv(in.back().data(), S, MPI_DOUBLE, owner[nbk], b * 4 + d,
					  comm, &req.back());
			}
		}
		// The exchange's own work is the blocks' (shared equally): only
		// the wait for the others is idle time.
		double w0 = MPI_Wtime();
		for (auto &[b, bl] : blocks)
			bl.load += (w0 - p0) / static_cast<double>(blocks.size());
		hpclb_mpi_busy(lb, w0 - p0, hpclb_thread_seconds() - pc0);
		MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
		hpclb_mpi_wait(lb, MPI_Wtime() - w0);
		for (size_t k = 0; k < in.size(); k++) {
			auto &bl = blocks[in_for[k].first];
			int d = in_for[k].second;
			for (int m = 0; m < S; m++) {
				int i = d == 0 ? 0 : d == 1 ? S + 1 : m + 1;
				int j = d == 2 ? 0 : d == 3 ? S + 1 : m + 1;
				bl.a[idx(i, j)] = in[k][m];
			}
		}
		// The blocks' wall time and how much of it this rank had its CPU
		// (read once around the loop: a thread CPU clock read costs about
		// 0.5 us, a block tens of us): its CPU share while it computes.
		const double k0 = MPI_Wtime(), kc0 = hpclb_thread_seconds();
		for (auto &[b, bl] : blocks) {
			// t_i is the block's wall time: like the CPU time of a KVM guest
			// in the refinement paper (§IV), it includes what interference
			// takes; what is outside blocks and waits is background, O_p.
			const double c0 = MPI_Wtime();
			int reps = work *
				   (rank == slow_rank ? static_cast<int>(std::lround(slow)) : 1);
			for (int r = 0; r < reps; r++)
				for (int i = 1; i <= S; i++)
					for (int j = 1; j <= S; j++) {
						const double nb =
							bl.a[idx(i - 1, j)] + bl.a[idx(i + 1, j)] +
							bl.a[idx(i, j - 1)] + bl.a[idx(i, j + 1)];
						// Wave2D: u' = 2u - u_prev + c^2 (lap u), c^2 = 0.2
						bl.b[idx(i, j)] =
							wave ? 2 * bl.a[idx(i, j)] -
									bl.prev[idx(i, j)] +
									0.2 * (nb -
									       4 * bl.a[idx(i, j)])
							     : 0.25 * nb;
					}
			for (int i = 1; i <= S; i++)
				for (int j = 1; j <= S; j++) {
					if (wave)
						bl.prev[idx(i, j)] = bl.a[idx(i, j)];
					bl.a[idx(i, j)] = bl.b[idx(i, j)];
				}
			bl.load += MPI_Wtime() - c0;
		}
		hpclb_mpi_busy(lb, MPI_Wtime() - k0, hpclb_thread_seconds() - kc0);
		if (it % every == 0 && it < iters) {
			// The ranks meet first (the step would wait for the slowest
			// anyway): lb time is the decision and the moves, not the
			// imbalance of the period before.
			// The barrier's wait is reported like the halo's: not
			// counted as background load.
			const double b0 = MPI_Wtime();
			MPI_Barrier(comm);
			hpclb_mpi_wait(lb, MPI_Wtime() - b0);
			const double l0 = MPI_Wtime();
			for (auto &[b, bl] : blocks) {
				hpclb_mpi_unit(lb, b, bl.load,
					       (bl.a.size() + bl.prev.size()) * sizeof(double));
				bl.load = 0;
				if (comm_aware) { // the blocks it exchanges a halo with
					int64_t nb[4];
					size_t k = 0;
					for (int d = 0; d < 4; d++) {
						int ni = b / B + di[d], nj = b % B + dj[d];
						if (ni >= 0 && ni < B && nj >= 0 && nj < B)
							nb[k++] = ni * B + nj;
					}
					hpclb_mpi_unit_peers(lb, b, nb, k);
				}
			}
			double ib = 1, ia = 1;
			if (hpclb_mpi_step(lb, &ib, &ia) != 0) {
				std::fprintf(stderr, "stencil2d: %s\n", hpclb_last_error());
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			const hpclb_move *mv;
			size_t nm = hpclb_mpi_moves(lb, &mv);
			hpclb_mpi_exchange(lb, get_block, put_block, &blocks);
			for (size_t k = 0; k < nm; k++) {
				if (mv[k].from == rank)
					blocks.erase(static_cast<int>(mv[k].id));
				owner[mv[k].id] = mv[k].to;
			}
			// What balancing costs this rank: the decision and the moves.
			lb_time += MPI_Wtime() - l0;
			if (!rank) {
				timespec now{};
				clock_gettime(CLOCK_REALTIME, &now);
				std::printf(
					"lb step %d iter %d at %.3f: imbalance %.3f -> %.3f, %zu "
					"moves\n",
					++step, it,
					static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec, ib,
					ia, nm);
				std::fflush(stdout);
			}
		}
	}
	double elapsed = MPI_Wtime() - t0;
	std::vector<double> sums(nb, 0.0), total(nb, 0.0);
	for (auto &[b, bl] : blocks)
		for (int i = 1; i <= S; i++)
			for (int j = 1; j <= S; j++)
				sums[b] += bl.a[idx(i, j)];
	MPI_Reduce(sums.data(), total.data(), nb, MPI_DOUBLE, MPI_SUM, 0, comm);
	unsigned long samples = hpclb_mpi_monitor_samples(lb), min_samples = 0;
	MPI_Reduce(&samples, &min_samples, 1, MPI_UNSIGNED_LONG, MPI_MIN, 0, comm);
	std::vector<int> count(size, 0);
	for (int b = 0; b < nb; b++)
		count[owner[b]]++;
	if (!rank) {
		double cs = 0;
		for (double x : total)
			cs += x;
		std::printf("blocks per rank:");
		for (int c : count)
			std::printf(" %d", c);
		std::printf("\nchecksum %.12e\ntime %.3f s\n", cs, elapsed);
		std::printf("monitor samples (fewest on a rank): %lu\n", min_samples);
		std::printf("lb time %.3f s in %d steps\n", lb_time, step);
	}
	hpclb_mpi_free(lb);
	MPI_Finalize();
	return 0;
}
