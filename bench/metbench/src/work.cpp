// SPDX-License-Identifier: GPL-2.0
#include "work.hpp"

#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sched.h>

namespace metbench
{

namespace
{
volatile double g_sink;
volatile uint64_t g_isink;

const char *proc_name(int rank, char *buf, size_t len)
{
	if (rank == 0)
		snprintf(buf, len, "M");
	else
		snprintf(buf, len, "P%d", rank);
	return buf;
}
} // namespace

void work_units(uint64_t units)
{
	constexpr int n = 32;
	double a[n][n], x[n], y[n];
	for (int i = 0; i < n; i++) {
		x[i] = 1.0 + i * 0.01;
		for (int j = 0; j < n; j++)
			a[i][j] = ((i * 7 + j * 3) % 32) / 32.0;
	}
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ units;
	for (uint64_t u = 0; u < units; u++) {
		for (int pass = 0; pass < 64; pass++) {
			for (int i = 0; i < n; i++) {
				double s = 0;
				for (int j = 0; j < n; j++)
					s += a[i][j] * x[j];
				y[i] = s * 0.03125 + 0.5;
			}
			for (int i = 0; i < n; i++)
				x[i] = y[i];
			h ^= h << 13;
			h ^= h >> 7;
			h ^= h << 17;
		}
		g_sink = x[u % n];
	}
	g_isink = h;
}

uint64_t now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + ts.tv_nsec;
}

double calibrate_units_per_sec(uint64_t ms)
{
	if (ms == 0)
		return 0;
	work_units(10); // warm up
	uint64_t t0 = now_ns(), units = 0, chunk = 16, deadline = t0 + ms * 1000000ULL, t;
	do {
		work_units(chunk);
		units += chunk;
		t = now_ns();
	} while (t < deadline);
	return units * 1e9 / static_cast<double>(t - t0);
}

int read_hpc_prio()
{
	FILE *f = fopen("/proc/self/sched_hpc", "r");
	if (!f)
		return -1;
	char line[128];
	bool hpc = false;
	int prio = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "policy: hpc", 11))
			hpc = true;
		else if (sscanf(line, "prio: %d", &prio) == 1)
			continue;
	}
	fclose(f);
	return hpc ? prio : -1;
}

std::string check_pins(const Options &opt)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (opt.pin.empty() || sched_getaffinity(0, sizeof(set), &set))
		return "";
	for (int c : opt.pin)
		if (!CPU_ISSET(c, &set))
			return "--pin: CPU " + std::to_string(c) + " is not available (have " +
			       std::to_string(CPU_COUNT(&set)) + " CPUs)";
	return "";
}

std::string pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return "cannot pin to CPU " + std::to_string(cpu) + ": " + strerror(errno);
	return "";
}

void hold_arm()
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, nullptr);
}

std::string hold_start(uint64_t timeout_s)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	struct timespec ts = {static_cast<time_t>(timeout_s), 0};
	int sig;
	while ((sig = sigtimedwait(&set, nullptr, &ts)) < 0 && errno == EINTR)
		;
	if (sig == SIGUSR1)
		return "";
	return "--hold: no SIGUSR1 within " + std::to_string(timeout_s) + " s";
}

void run_rank(const Options &opt, int rank, Sync &sync, IterRec *trace, RankResult &res)
{
	res = RankResult{};
	res.rank = rank;
	for (uint64_t i = 0; i < opt.iterations; i++) {
		uint64_t load = rank ? load_of(opt, rank - 1, i) : 0;
		IterRec &r = trace[i];
		r.load = load;
		r.start_ns = now_ns();
		if (load)
			work_units(load);
		r.compute_end_ns = now_ns();
		sync.wait();
		r.wait_end_ns = now_ns();
		res.load_total += load;
		res.compute_ns += r.compute_end_ns - r.start_ns;
		res.wait_ns += r.wait_end_ns - r.compute_end_ns;
	}
	res.time_ns = trace[opt.iterations - 1].wait_end_ns - trace[0].start_ns;
	res.prio = read_hpc_prio();
}

// A rank's priority as text, @none if it has none.
static void prio_text(int prio, const char *none, char *buf, size_t len)
{
	if (prio >= 0)
		snprintf(buf, len, "%d", prio);
	else
		snprintf(buf, len, "%s", none);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

void print_report(const Options &opt, const RunInfo &info, const std::vector<RankResult> &results,
		  FILE *out)
{
	const char *name = opt.swap_every ? "MetBenchVar" : "MetBench";
	const char *wait = opt.wait == WaitMode::Spin ? "spin" : "block";
	char pn[16];
	if (opt.json) {
		fprintf(out,
			"{\"benchmark\":\"%s\",\"sync\":\"%s\",\"wait\":\"%s\",\"workers\":%zu,"
			"\"iterations\":%" PRIu64 ",\"swap_every\":%" PRIu64 ",\"loads\":[",
			name, info.sync, wait, opt.loads.size(), opt.iterations, opt.swap_every);
		for (size_t i = 0; i < opt.loads.size(); i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", opt.loads[i]);
		fprintf(out, "],\"units_per_sec\":%.1f,\"total_time_s\":%.6f,\"ranks\":[",
			info.units_per_sec, info.total_ns / 1e9);
		for (size_t i = 0; i < results.size(); i++) {
			const RankResult &r = results[i];
			uint64_t tot = r.compute_ns + r.wait_ns;
			char prio[16];
			prio_text(r.prio, "null", prio, sizeof(prio));
			fprintf(out,
				"%s{\"rank\":%d,\"proc\":\"%s\",\"load_units\":%" PRIu64
				",\"compute_s\":%.6f,\"wait_s\":%.6f,\"compute_pct\":%.2f,"
				"\"wait_pct\":%.2f,\"priority\":%s,\"time_s\":%.6f}",
				i ? "," : "", r.rank, proc_name(r.rank, pn, sizeof(pn)),
				r.load_total, r.compute_ns / 1e9, r.wait_ns / 1e9,
				pct(r.compute_ns, tot), pct(r.wait_ns, tot), prio, r.time_ns / 1e9);
		}
		fprintf(out, "]}\n");
		return;
	}
	fprintf(out, "%s: %zu workers, %" PRIu64 " iterations, sync %s, wait %s", name,
		opt.loads.size(), opt.iterations, info.sync, wait);
	if (opt.swap_every)
		fprintf(out, ", swap every %" PRIu64, opt.swap_every);
	fprintf(out, "\n%-6s %8s %8s %9s %10s %12s\n", "Proc", "% Comp", "% Wait", "Priority",
		"Load", "Time (s)");
	for (const RankResult &r : results) {
		if (r.rank == 0)
			continue;
		uint64_t tot = r.compute_ns + r.wait_ns;
		char prio[16];
		prio_text(r.prio, "-", prio, sizeof(prio));
		fprintf(out, "%-6s %8.2f %8.2f %9s %10" PRIu64 " %12.3f\n",
			proc_name(r.rank, pn, sizeof(pn)), pct(r.compute_ns, tot),
			pct(r.wait_ns, tot), prio, r.load_total, r.time_ns / 1e9);
	}
	fprintf(out, "Exec. time: %.3f s\n", info.total_ns / 1e9);
}

std::string write_trace(const std::string &path, size_t ranks, uint64_t iterations,
			const IterRec *trace)
{
	FILE *f = fopen(path.c_str(), "w");
	if (!f)
		return "cannot write trace '" + path + "': " + strerror(errno);
	auto ends = [&](const char *suf) {
		size_t n = strlen(suf);
		return path.size() >= n && path.compare(path.size() - n, n, suf) == 0;
	};
	bool jsonl = ends(".jsonl") || ends(".json");
	char pn[16];
	if (!jsonl)
		fprintf(f, "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns\n");
	for (size_t r = 0; r < ranks; r++) {
		for (uint64_t i = 0; i < iterations; i++) {
			const IterRec &t = trace[r * iterations + i];
			if (jsonl)
				fprintf(f,
					"{\"rank\":%zu,\"proc\":\"%s\",\"iteration\":%" PRIu64
					",\"load\":%" PRIu64 ",\"start_ns\":%" PRIu64
					",\"compute_end_ns\":%" PRIu64 ",\"wait_end_ns\":%" PRIu64
					"}\n",
					r, proc_name(static_cast<int>(r), pn, sizeof(pn)), i,
					t.load, t.start_ns, t.compute_end_ns, t.wait_end_ns);
			else
				fprintf(f,
					"%zu,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRIu64 "\n",
					r, proc_name(static_cast<int>(r), pn, sizeof(pn)), i,
					t.load, t.start_ns, t.compute_end_ns, t.wait_end_ns);
		}
	}
	if (fclose(f))
		return "cannot write trace '" + path + "': " + strerror(errno);
	return "";
}

} // namespace metbench
