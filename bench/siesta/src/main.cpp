// SPDX-License-Identifier: GPL-2.0
// siesta-proxy: the load shape the paper measured on SIESTA — short,
// irregular compute phases, many small messages between neighbours, an
// imbalance that changes from iteration to iteration — over MPI. See
// model.hpp for the schedule and Documentation/reproduction.rst for why.
//
// Every rank is a worker: rank r is P<r+1>. --json and --trace give
// metbench's forms (one trace row per phase), which
// bench/metbench/report.py and tools/hpcd/metbench-3ways.sh read.
#include "model.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mpi.h>

#include "launch.hpp"
#include "steptrace.hpp"

using namespace siesta;
using json = nlohmann::json;

namespace
{

using hpcbench::launcher_rank_is_zero;
using hpcbench::now_ns;
using hpcbench::StepTrace;

// One work unit: a 32x32 matrix times a vector (1024 multiply-adds), the
// vector fed back so the compiler cannot skip it.
struct Kernel {
	double m[32][32], v[32];
	Kernel()
	{
		for (int i = 0; i < 32; i++) {
			v[i] = 1.0 / (i + 1);
			for (int j = 0; j < 32; j++)
				m[i][j] = (i == j ? 0.5 : 0.01) / (1 + ((i * 7 + j * 3) % 5));
		}
	}
	double run(uint64_t units)
	{
		double w[32];
		for (uint64_t u = 0; u < units; u++) {
			for (int i = 0; i < 32; i++) {
				double s = 0;
				for (int j = 0; j < 32; j++)
					s += m[i][j] * v[j];
				w[i] = s;
			}
			double norm = 0;
			for (int i = 0; i < 32; i++)
				norm += w[i] * w[i];
			norm = 1.0 / std::sqrt(norm);
			for (int i = 0; i < 32; i++)
				v[i] = w[i] * norm;
		}
		return v[0];
	}
};

std::vector<double> parse_list(const std::string &s)
{
	std::vector<double> out;
	size_t pos = 0;
	while (pos <= s.size()) {
		size_t c = s.find(',', pos);
		std::string t = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
		size_t used = 0;
		double v = 0;
		try {
			v = std::stod(t, &used);
		} catch (const std::exception &) {
			used = 0;
		}
		if (t.empty() || used != t.size())
			throw CLI::ValidationError("--shares", "'" + t + "' is not a number");
		out.push_back(v);
		if (c == std::string::npos)
			break;
		pos = c + 1;
	}
	return out;
}

json schedule_json(const Schedule &s)
{
	const Params &p = s.params();
	json j;
	j["ranks_n"] = p.ranks;
	j["iterations"] = p.iterations;
	j["phases"] = p.phases;
	j["phase_units"] = p.phase_units;
	j["seed"] = p.seed;
	for (int r = 0; r < p.ranks; r++) {
		json it = json::array(), dr = json::array();
		for (int i = 0; i < p.iterations; i++) {
			it.push_back(s.iteration_units(i, r));
			dr.push_back(s.drift(i, r));
		}
		json ph = json::array();
		for (int i = 0; i < p.iterations; i++)
			for (int f = 0; f < p.phases; f++)
				ph.push_back(s.units(i, f, r));
		j["ranks"].push_back(
			{{"rank", r},
			 {"proc", "P" + std::to_string(r + 1)},
			 {"share", s.params().shares.empty() ? default_shares(p.ranks)[r]
							     : s.params().shares[r]},
			 {"neighbours", s.neighbours(r)},
			 {"iteration_units", it},
			 {"drift", dr},
			 {"phase_units", ph},
			 {"messages_sent", s.messages_sent(r)},
			 {"bytes_sent", s.bytes_sent(r)}});
	}
	return j;
}

int run(const Params &base, bool as_json, const std::string &trace_path)
{
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	Params p = base;
	p.ranks = size;
	std::string err = validate(p);
	if (!err.empty()) {
		if (rank == 0)
			fprintf(stderr, "siesta-proxy: %s\n", err.c_str());
		return 2;
	}
	Schedule s(p);
	Kernel k;
	double sink = 0;
	auto nb = s.neighbours(rank);
	std::vector<std::vector<double>> in(nb.size()), out(nb.size());
	std::vector<MPI_Request> req(2 * nb.size());
	uint64_t sent = 0, bytes = 0, bad_payload = 0, bad_energy = 0;
	size_t rows = static_cast<size_t>(p.iterations) * p.phases;
	StepTrace tr(rows);
	MPI_Barrier(MPI_COMM_WORLD);
	uint64_t t0 = now_ns();
	for (int i = 0; i < p.iterations; i++) {
		for (int f = 0; f < p.phases; f++) {
			uint64_t a = now_ns();
			sink += k.run(s.units(i, f, rank));
			uint64_t b = now_ns();
			for (size_t n = 0; n < nb.size(); n++) {
				in[n].resize(s.msg_bytes(i, f, nb[n]) / 8);
				MPI_Irecv(in[n].data(), static_cast<int>(in[n].size()), MPI_DOUBLE,
					  nb[n], f, MPI_COMM_WORLD, &req[n]);
			}
			for (size_t n = 0; n < nb.size(); n++) {
				out[n].resize(s.msg_bytes(i, f, rank) / 8);
				for (size_t x = 0; x < out[n].size(); x++)
					out[n][x] = payload(rank, i, f, static_cast<int>(x));
				MPI_Isend(out[n].data(), static_cast<int>(out[n].size()),
					  MPI_DOUBLE, nb[n], f, MPI_COMM_WORLD,
					  &req[nb.size() + n]);
				sent++;
				bytes += out[n].size() * 8;
			}
			MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
			for (size_t n = 0; n < nb.size(); n++)
				for (size_t x = 0; x < in[n].size(); x++)
					bad_payload += in[n][x] !=
						       payload(nb[n], i, f, static_cast<int>(x));
			if (f == p.phases - 1) {
				// The SCF convergence test: everybody's work this iteration.
				double mine = static_cast<double>(s.iteration_units(i, rank)),
				       all = 0;
				MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
				double want = 0;
				for (int r = 0; r < size; r++)
					want += static_cast<double>(s.iteration_units(i, r));
				bad_energy += all != want;
			}
			tr.record(static_cast<size_t>(i) * p.phases + f, a, b, now_ns());
		}
	}
	uint64_t t1 = now_ns();
	double st[7] = {static_cast<double>(tr.comp_ns),  static_cast<double>(tr.wait_ns),
			static_cast<double>(sent),        static_cast<double>(bytes),
			static_cast<double>(bad_payload), static_cast<double>(bad_energy),
			static_cast<double>(t1 - t0)};
	std::vector<double> stats(rank == 0 ? 7 * size : 0);
	MPI_Gather(st, 7, MPI_DOUBLE, stats.data(), 7, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	std::vector<uint64_t> traces = tr.gather(rank, size);
	if (sink == 12345.678) // keep the kernel's result alive
		fprintf(stderr, "#");
	if (rank != 0)
		return 0;
	json j;
	j["program"] = "siesta-proxy";
	j["iterations"] = p.iterations;
	j["phases"] = p.phases;
	j["phase_units"] = p.phase_units;
	j["seed"] = p.seed;
	j["ranks_n"] = size;
	double total_s = 0;
	uint64_t bad = 0;
	for (int r = 0; r < size; r++) {
		const double *x = &stats[7 * r];
		total_s = std::max(total_s, x[6] / 1e9);
		bad += static_cast<uint64_t>(x[4] + x[5]);
		double sum = x[0] + x[1];
		j["ranks"].push_back({{"rank", r},
				      {"proc", "P" + std::to_string(r + 1)},
				      {"compute_s", x[0] / 1e9},
				      {"wait_s", x[1] / 1e9},
				      {"compute_pct", sum > 0 ? 100.0 * x[0] / sum : 0.0},
				      {"wait_pct", sum > 0 ? 100.0 * x[1] / sum : 0.0},
				      {"messages_sent", static_cast<uint64_t>(x[2])},
				      {"bytes_sent", static_cast<uint64_t>(x[3])},
				      {"messages_expected", s.messages_sent(r)},
				      {"bytes_expected", s.bytes_sent(r)},
				      {"bad_payload", static_cast<uint64_t>(x[4])},
				      {"bad_reductions", static_cast<uint64_t>(x[5])}});
	}
	j["total_time_s"] = total_s;
	j["verified"] = bad == 0;
	if (as_json) {
		printf("%s\n", j.dump().c_str());
	} else {
		printf("siesta-proxy: %d ranks, %d iterations x %d phases: %.3f s\n", size,
		       p.iterations, p.phases, total_s);
		printf("%-5s %8s %8s %9s %10s\n", "Proc", "% Comp", "% Wait", "messages", "bytes");
		for (auto &r : j["ranks"])
			printf("%-5s %8.2f %8.2f %9llu %10llu\n",
			       r["proc"].get<std::string>().c_str(), r["compute_pct"].get<double>(),
			       r["wait_pct"].get<double>(),
			       static_cast<unsigned long long>(r["messages_sent"].get<uint64_t>()),
			       static_cast<unsigned long long>(r["bytes_sent"].get<uint64_t>()));
		printf("verification: %s\n", bad == 0 ? "SUCCESSFUL" : "FAILED");
	}
	if (!trace_path.empty()) {
		std::ofstream f(trace_path);
		if (!f) {
			fprintf(stderr, "siesta-proxy: cannot write trace '%s'\n",
				trace_path.c_str());
			return 1;
		}
		f << "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns\n";
		for (int r = 0; r < size; r++)
			for (size_t row = 0; row < rows; row++) {
				const uint64_t *t =
					&traces[(static_cast<size_t>(r) * rows + row) * 3];
				int i = static_cast<int>(row) / p.phases,
				    f2 = static_cast<int>(row) % p.phases;
				f << r << ",P" << r + 1 << "," << row << "," << s.units(i, f2, r)
				  << "," << t[0] << "," << t[1] << "," << t[2] << "\n";
			}
	}
	fflush(stdout);
	return bad == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv)
{
	Params p;
	std::string shares;
	bool schedule = false, as_json = false;
	int np = 0;
	std::string trace;
	CLI::App app{"siesta-proxy: short irregular phases, small messages, drifting imbalance"};
	app.add_option("--iterations", p.iterations, "SCF iterations")
		->check(CLI::Range(1, 100000));
	app.add_option("--phases", p.phases, "compute phases per iteration")
		->check(CLI::Range(1, 10000));
	app.add_option("--phase-units", p.phase_units,
		       "mean work units (32x32 mat-vec) of a phase at share 1")
		->check(CLI::Range(1.0, 1e9));
	app.add_option("--shares", shares, "mean share per rank, e.g. 1,0.55,0.3,0.2");
	app.add_option("--phase-sigma", p.phase_sigma, "log-normal sigma of phase lengths")
		->check(CLI::Range(0.0, 2.0));
	app.add_option("--drift-sigma", p.drift_sigma, "per-iteration log step of the shares")
		->check(CLI::Range(0.0, 2.0));
	app.add_option("--drift-pull", p.drift_pull, "pull of a share back to its mean (0..1)")
		->check(CLI::Range(0.0, 1.0));
	app.add_option("--msg-min", p.msg_min, "smallest message, bytes")
		->check(CLI::Range(8, 1 << 20));
	app.add_option("--msg-max", p.msg_max, "largest message, bytes")
		->check(CLI::Range(8, 1 << 20));
	app.add_option("--seed", p.seed, "seed of the schedule");
	app.add_flag("--schedule", schedule, "print the schedule as JSON for --np ranks (no MPI)");
	app.add_option("--np", np, "ranks, with --schedule")->check(CLI::Range(1, 4096));
	app.add_flag("--json", as_json, "print the result as JSON");
	app.add_option("--trace", trace, "write a per-phase trace (CSV) here");
	try {
		app.parse(argc, argv);
		if (!shares.empty())
			p.shares = parse_list(shares);
		if (schedule && np == 0)
			throw CLI::ValidationError("--schedule needs --np");
		if (!schedule && np)
			throw CLI::ValidationError(
				"--np goes with --schedule (mpirun sets the ranks)");
		if (p.msg_max < p.msg_min)
			throw CLI::ValidationError("--msg-max is below --msg-min");
	} catch (const CLI::ParseError &e) {
		if (!launcher_rank_is_zero())
			return e.get_exit_code() ? 2 : 0;
		return app.exit(e) ? 2 : 0;
	}
	if (schedule) {
		p.ranks = np;
		std::string err = validate(p);
		if (!err.empty()) {
			fprintf(stderr, "siesta-proxy: %s\n", err.c_str());
			return 2;
		}
		printf("%s\n", schedule_json(Schedule(p)).dump().c_str());
		return 0;
	}
	MPI_Init(&argc, &argv);
	int rc = run(p, as_json, trace);
	MPI_Finalize();
	return rc;
}
