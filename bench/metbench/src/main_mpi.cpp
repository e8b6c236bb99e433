// SPDX-License-Identifier: GPL-2.0
// metbench: MetBench / MetBenchVar over MPI (rank 0 = master, ranks 1..N = workers).
#include "shm.hpp"
#include "work.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mpi.h>

#include "launch.hpp"

using namespace metbench;

namespace
{

using hpcbench::launcher_rank_is_zero;

class MpiSync : public Sync
{
public:
	explicit MpiSync(WaitMode m) : mode_(m) {}
	void wait() override
	{
		if (mode_ == WaitMode::Spin) {
			MPI_Barrier(MPI_COMM_WORLD);
			return;
		}
		// Block: the OS must see a sleep. Poll with back-off nanosleeps.
		MPI_Request req;
		MPI_Ibarrier(MPI_COMM_WORLD, &req);
		long sleep_ns = 10000;
		for (;;) {
			int done = 0;
			MPI_Test(&req, &done, MPI_STATUS_IGNORE);
			if (done)
				return;
			struct timespec ts = {0, sleep_ns};
			nanosleep(&ts, nullptr);
			if (sleep_ns < 200000)
				sleep_ns *= 2;
		}
	}

private:
	WaitMode mode_;
};

} // namespace

int main(int argc, char **argv)
{
	Options opt;
	int rc = handle_args(argc, argv, opt, false, launcher_rank_is_zero());
	if (rc >= 0)
		return rc;
	if (opt.sync == SyncMode::Shm)
		return run_shm(opt);

	if (opt.hold_s)
		hold_arm(); // before MPI_Init: its threads inherit the mask
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t workers = opt.loads.size();
	std::string err;
	if (static_cast<size_t>(size) != workers + 1)
		err = std::to_string(workers) + " loads need " + std::to_string(workers + 1) +
		      " MPI processes (master + one per worker), got " + std::to_string(size);
	else
		err = check_pins(opt);
	if (!err.empty()) {
		if (rank == 0)
			fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
		MPI_Finalize();
		return 2;
	}
	if (rank > 0 && !opt.pin.empty()) {
		std::string e = pin_self(opt.pin[rank - 1]);
		if (!e.empty())
			fprintf(stderr, "%s: P%d: %s\n", argv[0], rank, e.c_str());
	}
	MpiSync sync(opt.wait);
	size_t per = sizeof(RankResult) + opt.iterations * sizeof(IterRec);
	std::vector<char> mine(per);
	auto *res = reinterpret_cast<RankResult *>(mine.data());
	auto *trace = reinterpret_cast<IterRec *>(mine.data() + sizeof(RankResult));
	if (opt.hold_s && rank == 0) {
		if (std::string e = hold_start(opt.hold_s); !e.empty()) {
			fprintf(stderr, "%s: %s\n", argv[0], e.c_str());
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	sync.wait(); // start
	run_rank(opt, rank, sync, trace, *res);

	std::vector<char> all(rank == 0 ? per * size : 0);
	MPI_Gather(mine.data(), static_cast<int>(per), MPI_BYTE, all.data(), static_cast<int>(per),
		   MPI_BYTE, 0, MPI_COMM_WORLD);
	// Rank 0 calibrates after the timed loop, while the workers wait in
	// MPI_Finalize: at the start they would wait for it at the first
	// barrier, a first iteration of nearly pure wait in every worker that
	// the Uniform heuristic (global utilisation) carries for many iterations.
	double ups = 0;
	if (rank == 0 && opt.calibrate_ms) {
		ups = calibrate_units_per_sec(opt.calibrate_ms);
		fprintf(opt.json ? stderr : stdout, "calibration: %.0f units/s (%.2f us/unit)\n",
			ups, 1e6 / ups);
		fflush(nullptr);
	}
	rc = 0;
	if (rank == 0) {
		std::vector<RankResult> results(size);
		std::vector<IterRec> traces(size * opt.iterations);
		for (int r = 0; r < size; r++) {
			memcpy(&results[r], all.data() + r * per, sizeof(RankResult));
			memcpy(&traces[r * opt.iterations],
			       all.data() + r * per + sizeof(RankResult),
			       opt.iterations * sizeof(IterRec));
		}
		RunInfo info{"mpi", ups, results[0].time_ns};
		print_report(opt, info, results, stdout);
		if (!opt.trace.empty()) {
			std::string e = write_trace(opt.trace, size, opt.iterations, traces.data());
			if (!e.empty()) {
				fprintf(stderr, "%s: %s\n", argv[0], e.c_str());
				rc = 1;
			}
		}
		fflush(stdout);
	}
	MPI_Finalize();
	return rc;
}
