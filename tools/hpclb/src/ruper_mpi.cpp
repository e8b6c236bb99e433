// RUPER-LB at thread and MPI level (RUPER-LB §2.1, §2.2): worker threads
// report to their rank's task; each rank's monitor (the calling thread)
// reports its predicted iterations done to rank 0, whose task of guess
// workers (one per rank) re-assigns the remaining iterations by speed at its
// checkpoints; finish requests; the MPI balance ends (the assignment is
// frozen) when the predicted remaining time is below the threshold.
//
// Here ranks send their reports at the interval rank 0 suggested in its last
// answer (rank 0's timers, carried by the answers), and rank 0 timestamps a
// report when it arrives, so no clock is shared between nodes.
#include "hpclb/hpclb.hpp"
#include "hpclb/hpclb_mpi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace hpclb
{
void set_last_error(const std::string &what); // capi.cpp
}

namespace
{
enum Tag { kStart = 11, kReport = 12, kFinish = 13, kReply = 14 };
struct Reply {
	uint64_t assigned;
	double next;
	int32_t frozen;
	int32_t pad;
};

struct Local {
	std::mutex m;
	std::condition_variable cv;
	std::optional<hpclb::RuperTask> task;
	std::vector<uint64_t> done;
	std::vector<double> next_report;
	bool frozen = false, want_finish = false;
};

double now_s()
{
	return MPI_Wtime();
}

void worker(Local &L, int t, uint64_t chunk, hpclb_iter_fn fn, void *arg)
{
	std::unique_lock lk(L.m);
	L.task->start(static_cast<size_t>(t), now_s());
	// The first measure over a whole report interval, not one chunk.
	L.next_report[t] = now_s() + L.task->workers()[static_cast<size_t>(t)].interval;
	for (;;) {
		const uint64_t a = L.task->assigned(static_cast<size_t>(t)), d = L.done[t];
		if (d < a) {
			const uint64_t k = std::min(chunk, a - d);
			lk.unlock();
			fn(k, t, arg);
			lk.lock();
			L.done[t] += k;
			const double now = now_s();
			if (now >= L.next_report[t] &&
			    now > L.task->workers()[static_cast<size_t>(t)].last_report)
				L.next_report[t] = now + L.task->report(static_cast<size_t>(t),
									L.done[t], now);
			continue;
		}
		const double now = now_s();
		if (L.frozen) {
			// The MPI balance is over: the local task decides (§2.1).
			auto &w = L.task->workers()[static_cast<size_t>(t)];
			if (w.done < L.done[t] && now > w.last_report)
				L.task->report(static_cast<size_t>(t), L.done[t], now);
			auto ans = L.task->request_finish(static_cast<size_t>(t), now);
			if (ans == hpclb::FinishAnswer::Finish)
				return;
			if (ans == hpclb::FinishAnswer::Continue)
				continue;
			if (!(now > w.last_report)) {
				L.cv.wait_for(lk, std::chrono::milliseconds(1));
				continue;
			}
			L.task->report(static_cast<size_t>(t), L.done[t], now);
			continue;
		}
		// Out of work while the MPI balance goes on: ask the monitor.
		L.want_finish = true;
		L.cv.wait_for(lk, std::chrono::milliseconds(2));
	}
}

// Predicted iterations done by this rank (the base of its report).
double predicted(Local &L, double now)
{
	double d = 0;
	for (size_t t = 0; t < L.done.size(); t++)
		// A thread does not run past its assignment.
		d += std::max(static_cast<double>(L.done[t]),
			      std::min(L.task->workers()[t].pred_done(now),
				       static_cast<double>(L.task->assigned(t))));
	return d;
}

// Apply rank 0's answer to this rank's task.
void apply(Local &L, const Reply &r)
{
	std::lock_guard lk(L.m);
	if (r.assigned != L.task->iterations()) {
		L.task->set_iterations(r.assigned);
		L.task->checkpoint(now_s(), true);
	}
	L.want_finish = false;
	if (r.frozen)
		L.frozen = true;
	L.cv.notify_all();
}
} // namespace

extern "C" int hpclb_ruper_mpi_run(MPI_Comm comm_in, uint64_t iterations, int threads,
				   uint64_t chunk, const hpclb_ruper_params *pp, hpclb_iter_fn fn,
				   void *arg, uint64_t *done_here, uint64_t *done_total)
{
	hpclb::RuperParams p;
	if (pp)
		p = {pp->checkpoint_interval, pp->threshold, pp->max_deviation, pp->min_report,
		     pp->max_report};
	int ok = threads >= 1 && threads <= 1024 && chunk >= 1 && fn && iterations > 0, all = 0;
	if (ok) {
		try {
			hpclb::RuperTask probe(1, 1, p, 0); // validates the parameters
		} catch (const std::exception &) {
			ok = 0;
		}
	}
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm_in);
	if (!all) {
		hpclb::set_last_error(
			"RUPER-LB over MPI: iterations, threads (1..1024), chunk must "
			"be > 0, fn given, and parameters valid, on every rank");
		return -1;
	}
	MPI_Comm comm;
	MPI_Comm_dup(comm_in, &comm);
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	Local L;
	L.done.assign(static_cast<size_t>(threads), 0);
	L.next_report.assign(static_cast<size_t>(threads), 0);
	std::optional<hpclb::RuperTask> G; // rank 0: one guess worker per rank
	bool frozen = false;
	std::vector<char> told(static_cast<size_t>(size), 0);
	// Rank 0's answer to rank r (kind: start, report or finish request).
	auto answer = [&](int r, int kind, double d) {
		const double now = now_s();
		auto &w = G->workers()[static_cast<size_t>(r)];
		double next = p.min_report;
		if (kind == kStart) {
			G->start(static_cast<size_t>(r), now);
		} else if (!frozen && now > w.last_report) {
			next = G->report(static_cast<size_t>(r), static_cast<uint64_t>(d), now,
					 true, kind == kFinish);
			if (kind == kFinish)
				G->checkpoint(now);
		}
		if (!frozen && G->checkpoints() > 0 && G->remaining() <= p.threshold) {
			// The remaining time is below the threshold *if* the rest is
			// split by speed: split it so, once more, and freeze it.
			G->checkpoint(now, true);
			frozen = true;
		}
		Reply rep{G->assigned(static_cast<size_t>(r)), next, frozen ? 1 : 0, 0};
		if (std::getenv("HPCLB_DEBUG"))
			std::fprintf(stderr,
				     "hpclb ruper: t %.3f rank %d kind %d done %.0f speed %.0f -> "
				     "assigned %llu remaining %.3f frozen %d\n",
				     now, r, kind, d, w.speed(),
				     static_cast<unsigned long long>(rep.assigned), G->remaining(),
				     rep.frozen);
		if (frozen)
			told[static_cast<size_t>(r)] = 1;
		return rep;
	};
	Reply mine{};
	if (rank == 0) {
		G.emplace(iterations, static_cast<size_t>(size), p, now_s());
		mine = answer(0, kStart, 0);
	} else {
		char c = 0;
		MPI_Send(&c, 1, MPI_CHAR, 0, kStart, comm);
		MPI_Recv(&mine, sizeof mine, MPI_BYTE, 0, kReply, comm, MPI_STATUS_IGNORE);
	}
	L.task.emplace(mine.assigned, static_cast<size_t>(threads), p, now_s());
	L.frozen = mine.frozen;
	std::vector<std::thread> pool;
	for (int t = 0; t < threads; t++)
		pool.emplace_back(worker, std::ref(L), t, chunk, fn, arg);
	double next_t = now_s() + mine.next;
	bool done_mon = L.frozen;
	while (rank == 0 ? !(frozen &&
			     std::all_of(told.begin(), told.end(), [](char x) { return x; }))
			 : !done_mon) {
		if (rank == 0) {
			int flag = 0;
			MPI_Status st;
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
			if (flag) {
				double d = 0;
				if (st.MPI_TAG == kStart) {
					char c;
					MPI_Recv(&c, 1, MPI_CHAR, st.MPI_SOURCE, kStart, comm,
						 MPI_STATUS_IGNORE);
				} else {
					MPI_Recv(&d, 1, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, comm,
						 MPI_STATUS_IGNORE);
				}
				Reply rep = answer(st.MPI_SOURCE, st.MPI_TAG, d);
				MPI_Send(&rep, sizeof rep, MPI_BYTE, st.MPI_SOURCE, kReply, comm);
				continue;
			}
		}
		bool want;
		{
			std::lock_guard lk(L.m);
			want = L.want_finish;
		}
		const double now = now_s();
		if (!L.frozen && (now >= next_t || want)) {
			double d;
			{
				std::lock_guard lk(L.m);
				d = predicted(L, now);
			}
			const int kind = want ? kFinish : kReport;
			Reply rep;
			if (rank == 0) {
				rep = answer(0, kind, d);
			} else {
				MPI_Send(&d, 1, MPI_DOUBLE, 0, kind, comm);
				MPI_Recv(&rep, sizeof rep, MPI_BYTE, 0, kReply, comm,
					 MPI_STATUS_IGNORE);
			}
			apply(L, rep);
			next_t = now_s() + rep.next;
			done_mon = rep.frozen;
			continue;
		}
		if (rank == 0 && frozen && !L.frozen)
			apply(L, answer(0, kReport, 0));
		std::this_thread::sleep_for(std::chrono::microseconds(500));
	}
	for (auto &t : pool)
		t.join();
	uint64_t here = 0, total = 0;
	for (auto d : L.done)
		here += d;
	MPI_Allreduce(&here, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
	MPI_Comm_free(&comm);
	if (done_here)
		*done_here = here;
	if (done_total)
		*done_total = total;
	return 0;
}
