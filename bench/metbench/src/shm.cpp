// SPDX-License-Identifier: GPL-2.0
#include "shm.hpp"
#include "work.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace metbench
{

int handle_args(int argc, const char *const *argv, Options &opt, bool shm_only, bool verbose)
{
	if (auto err = parse_options(argc, argv, opt, shm_only)) {
		if (verbose)
			fprintf(stderr, "%s: %s\n", argv[0], err->c_str());
		return 2;
	}
	if (opt.help) {
		if (verbose)
			fputs(usage(argv[0], shm_only).c_str(), stdout);
		return 0;
	}
	return -1;
}

namespace
{

// Sense-reversing spin barrier: waiters busy-poll a generation counter.
struct SpinBarrier {
	alignas(64) std::atomic<uint32_t> count{0};
	alignas(64) std::atomic<uint32_t> gen{0};
	uint32_t n = 0;
};

struct Shared {
	SpinBarrier spin;
	pthread_barrier_t block;
};

class ShmSync : public Sync
{
public:
	ShmSync(Shared *s, WaitMode m) : s_(s), mode_(m) {}
	void wait() override
	{
		if (mode_ == WaitMode::Block) {
			pthread_barrier_wait(&s_->block);
			return;
		}
		SpinBarrier &b = s_->spin;
		uint32_t g = b.gen.load(std::memory_order_acquire);
		if (b.count.fetch_add(1, std::memory_order_acq_rel) + 1 == b.n) {
			b.count.store(0, std::memory_order_relaxed);
			b.gen.fetch_add(1, std::memory_order_release);
			return;
		}
		while (b.gen.load(std::memory_order_acquire) == g)
			__builtin_ia32_pause();
	}

private:
	Shared *s_;
	WaitMode mode_;
};

} // namespace

int run_shm(const Options &opt)
{
	size_t workers = opt.loads.size(), ranks = workers + 1;
	size_t hdr = (sizeof(Shared) + 63) & ~size_t(63);
	size_t res_sz = sizeof(RankResult) * ranks;
	size_t trace_sz = sizeof(IterRec) * ranks * opt.iterations;
	size_t len = hdr + res_sz + trace_sz;
	void *mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "metbench: cannot map %zu bytes of shared memory: %s\n", len,
			strerror(errno));
		return 1;
	}
	auto *sh = new (mem) Shared;
	auto *results = reinterpret_cast<RankResult *>(static_cast<char *>(mem) + hdr);
	auto *trace = reinterpret_cast<IterRec *>(static_cast<char *>(mem) + hdr + res_sz);
	sh->spin.n = static_cast<uint32_t>(ranks);
	pthread_barrierattr_t attr;
	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (pthread_barrier_init(&sh->block, &attr, static_cast<unsigned>(ranks))) {
		fprintf(stderr, "metbench: cannot create the process-shared barrier\n");
		return 1;
	}

	if (std::string e = check_pins(opt); !e.empty()) {
		fprintf(stderr, "metbench: %s\n", e.c_str());
		return 2;
	}
	double ups = calibrate_units_per_sec(opt.calibrate_ms);
	if (opt.calibrate_ms)
		fprintf(opt.json ? stderr : stdout, "calibration: %.0f units/s (%.2f us/unit)\n",
			ups, 1e6 / ups);
	fflush(nullptr);

	ShmSync sync(sh, opt.wait);
	if (opt.hold_s)
		hold_arm();
	std::vector<pid_t> pids;
	for (size_t w = 0; w < workers; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "metbench: fork: %s\n", strerror(errno));
			for (pid_t p : pids)
				kill(p, SIGKILL);
			return 1;
		}
		if (pid == 0) {
			int rank = static_cast<int>(w) + 1;
			if (!opt.pin.empty()) {
				std::string e = pin_self(opt.pin[w]);
				if (!e.empty()) {
					// Still take part in the barriers, or the others hang.
					fprintf(stderr, "metbench: P%d: %s\n", rank, e.c_str());
				}
			}
			sync.wait(); // start
			run_rank(opt, rank, sync, trace + rank * opt.iterations, results[rank]);
			_exit(0);
		}
		pids.push_back(pid);
	}
	if (opt.hold_s) {
		if (std::string e = hold_start(opt.hold_s); !e.empty()) {
			fprintf(stderr, "metbench: %s\n", e.c_str());
			for (pid_t p : pids)
				kill(p, SIGKILL);
			for (pid_t p : pids)
				waitpid(p, nullptr, 0);
			return 1;
		}
	}
	sync.wait(); // start
	run_rank(opt, 0, sync, trace, results[0]);
	int rc = 0;
	for (pid_t p : pids) {
		int st;
		if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "metbench: worker %d failed\n", static_cast<int>(p));
			rc = 1;
		}
	}
	if (rc)
		return rc;
	std::vector<RankResult> res(results, results + ranks);
	RunInfo info{"shm", ups, results[0].time_ns};
	print_report(opt, info, res, stdout);
	if (!opt.trace.empty()) {
		std::string e = write_trace(opt.trace, ranks, opt.iterations, trace);
		if (!e.empty()) {
			fprintf(stderr, "metbench: %s\n", e.c_str());
			rc = 1;
		}
	}
	munmap(mem, len);
	return rc;
}

} // namespace metbench
