// SPDX-License-Identifier: GPL-2.0
// btmz: a BT-MZ proxy. NPB-MZ's BT-MZ zone layout (uneven zones) for
// classes S, W, A and B, zones mapped to MPI ranks, per zone per time step
// a block-tridiagonal (5x5 blocks) ADI solve, and each step the zones'
// boundary faces exchanged with the neighbouring ranks through MPI_Isend,
// MPI_Irecv and MPI_Waitall; a verification value at the end.
//
// Every rank is a worker (no master): rank r is P<r+1>. The JSON result and
// the per-step trace have the form of metbench's (--json, --trace), so
// bench/metbench/report.py and tools/hpcd/metbench-3ways.sh read them.
#include "adi.hpp"
#include "zones.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mpi.h>

#include "launch.hpp"
#include "steptrace.hpp"

using namespace btmz;
using json = nlohmann::json;

namespace
{

using hpcbench::launcher_rank_is_zero;
using hpcbench::now_ns;
using hpcbench::StepTrace;

// The ids of the zones rank @r owns, as a JSON array.
json zones_of(const std::vector<Zone> &zones, const std::vector<int> &owner, int r)
{
	json zs = json::array();
	for (const Zone &z : zones)
		if (owner[z.id] == r)
			zs.push_back(z.id);
	return zs;
}

// Verification values: per variable, the root mean square of u over the
// whole grid after `steps` steps. They do not depend on the number of
// ranks or on the mapping (each zone's arithmetic is the same wherever it
// runs); they do depend on every boundary exchange being right.
struct Reference {
	char cls;
	int steps;
	Vec5 rms;
};
const Reference kReferences[] = {
#include "reference.inc"
};

const Reference *find_reference(char cls, int steps)
{
	for (const Reference &r : kReferences)
		if (r.cls == cls && r.steps == steps)
			return &r;
	return nullptr;
}

struct Options {
	std::string cls = "W";
	int steps = 0; // 0: the class's default
	std::string mapping = "binpack";
	int np = 0; // --layout only
	bool layout = false, json = false;
	std::string trace;
};

json layout_json(const ClassParams &p, const std::vector<Zone> &zones,
		 const std::vector<int> &owner, int nranks, Mapping m)
{
	json j;
	j["class"] = std::string(1, p.name);
	j["grid"] = {p.gx, p.gy, p.gz};
	j["zones_xy"] = {p.x_zones, p.y_zones};
	j["mapping"] = mapping_name(m);
	j["ranks_n"] = nranks;
	j["x_widths"] = zone_widths(p.gx, p.x_zones, p.ratio);
	j["y_widths"] = zone_widths(p.gy, p.y_zones, p.ratio);
	for (const Zone &z : zones)
		j["zones"].push_back({{"zone", z.id},
				      {"ix", z.ix},
				      {"iy", z.iy},
				      {"nx", z.nx},
				      {"ny", z.ny},
				      {"nz", z.nz},
				      {"cells", z.cells()},
				      {"rank", owner[z.id]}});
	auto cells = rank_cells(zones, owner, nranks);
	for (int r = 0; r < nranks; r++) {
		j["ranks"].push_back({{"rank", r},
				      {"proc", "P" + std::to_string(r + 1)},
				      {"zones", zones_of(zones, owner, r)},
				      {"cells", cells[r]}});
	}
	j["messages_per_step"] = json::array();
	for (const Message &msg : exchange_plan(p, zones, owner))
		j["messages_per_step"].push_back({{"src", msg.src},
						  {"dst", msg.dst},
						  {"faces", msg.faces.size()},
						  {"doubles", msg.doubles()}});
	j["local_faces_per_step"] = local_faces(p, zones, owner).size();
	return j;
}

int run(const Options &o, const ClassParams &p, Mapping m)
{
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	auto zones = make_zones(p);
	std::string err;
	auto owner = map_zones(p, zones, size, m, err);
	if (!err.empty()) {
		if (rank == 0)
			fprintf(stderr, "btmz: %s\n", err.c_str());
		return 2;
	}
	const int steps = o.steps ? o.steps : p.steps;

	// Global offsets of each zone (for the forcing term).
	auto xs = zone_widths(p.gx, p.x_zones, p.ratio), ys = zone_widths(p.gy, p.y_zones, p.ratio);
	std::vector<int> x0(p.x_zones, 0), y0(p.y_zones, 0);
	for (int i = 1; i < p.x_zones; i++)
		x0[i] = x0[i - 1] + xs[i - 1];
	for (int j = 1; j < p.y_zones; j++)
		y0[j] = y0[j - 1] + ys[j - 1];
	std::map<int, std::unique_ptr<ZoneSolver>> mine;
	long my_cells = 0;
	for (const Zone &z : zones)
		if (owner[z.id] == rank) {
			mine[z.id] = std::make_unique<ZoneSolver>(z, p, x0[z.ix], y0[z.iy]);
			my_cells += z.cells();
		}

	auto plan = exchange_plan(p, zones, owner);
	std::vector<Face> local;
	for (const Face &f : local_faces(p, zones, owner))
		if (owner[f.to] == rank)
			local.push_back(f);
	std::vector<const Message *> sends, recvs;
	for (const Message &msg : plan) {
		if (msg.src == rank)
			sends.push_back(&msg);
		if (msg.dst == rank)
			recvs.push_back(&msg);
	}
	std::vector<std::vector<double>> sbuf(sends.size()), rbuf(recvs.size());
	for (size_t i = 0; i < sends.size(); i++)
		sbuf[i].resize(sends[i]->doubles());
	for (size_t i = 0; i < recvs.size(); i++)
		rbuf[i].resize(recvs[i]->doubles());
	std::vector<double> tmp;
	std::vector<MPI_Request> req(sends.size() + recvs.size());
	long msgs_sent = 0, doubles_sent = 0;

	// The exchange: every face whose zones are both ours is copied; the
	// others travel in one message per pair of ranks.
	auto exchange = [&]() {
		for (size_t i = 0; i < recvs.size(); i++)
			MPI_Irecv(rbuf[i].data(), static_cast<int>(rbuf[i].size()), MPI_DOUBLE,
				  recvs[i]->src, 0, MPI_COMM_WORLD, &req[i]);
		for (size_t i = 0; i < sends.size(); i++) {
			double *out = sbuf[i].data();
			for (const Face &f : sends[i]->faces) {
				mine[f.from]->pack(f.side, out);
				out += f.doubles;
			}
			MPI_Isend(sbuf[i].data(), static_cast<int>(sbuf[i].size()), MPI_DOUBLE,
				  sends[i]->dst, 0, MPI_COMM_WORLD, &req[recvs.size() + i]);
			msgs_sent++;
			doubles_sent += static_cast<long>(sbuf[i].size());
		}
		for (const Face &f : local) {
			tmp.resize(f.doubles);
			mine[f.from]->pack(f.side, tmp.data());
			mine[f.to]->unpack(f.side, tmp.data());
		}
		MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
		for (size_t i = 0; i < recvs.size(); i++) {
			const double *in = rbuf[i].data();
			for (const Face &f : recvs[i]->faces) {
				mine[f.to]->unpack(f.side, in);
				in += f.doubles;
			}
		}
	};

	// Trace: start, end of compute, end of the exchange, per step.
	StepTrace tr(static_cast<size_t>(steps));
	exchange(); // initial ghost layers
	MPI_Barrier(MPI_COMM_WORLD);
	uint64_t t0 = now_ns();
	for (int s = 0; s < steps; s++) {
		uint64_t a = now_ns();
		for (auto &[id, zs] : mine)
			zs->step();
		uint64_t b = now_ns();
		exchange();
		tr.record(static_cast<size_t>(s), a, b, now_ns());
	}
	uint64_t t1 = now_ns();

	// Verification: per-zone sums of squares, added in zone order on rank 0.
	std::vector<double> ss(zones.size() * kVars, 0.0), all(zones.size() * kVars, 0.0);
	for (auto &[id, zs] : mine) {
		Vec5 v = zs->sum_squares();
		for (int m2 = 0; m2 < kVars; m2++)
			ss[id * kVars + m2] = v[m2];
	}
	MPI_Reduce(ss.data(), all.data(), static_cast<int>(ss.size()), MPI_DOUBLE, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	// Per-rank figures and traces to rank 0.
	double mine_stats[6] = {static_cast<double>(tr.comp_ns),   static_cast<double>(tr.wait_ns),
				static_cast<double>(my_cells),     static_cast<double>(msgs_sent),
				static_cast<double>(doubles_sent), static_cast<double>(t1 - t0)};
	std::vector<double> stats(rank == 0 ? 6 * size : 0);
	MPI_Gather(mine_stats, 6, MPI_DOUBLE, stats.data(), 6, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	std::vector<uint64_t> traces = tr.gather(rank, size);
	if (rank != 0)
		return 0;

	Vec5 rms{};
	long total = 0;
	for (const Zone &z : zones)
		total += z.cells();
	for (int m2 = 0; m2 < kVars; m2++) {
		double s = 0;
		for (size_t z = 0; z < zones.size(); z++)
			s += all[z * kVars + m2];
		rms[m2] = std::sqrt(s / static_cast<double>(total));
	}
	const Reference *ref = find_reference(p.name, steps);
	bool verified = ref != nullptr;
	if (ref)
		for (int m2 = 0; m2 < kVars; m2++)
			verified = verified && std::fabs(rms[m2] - ref->rms[m2]) <=
						       1e-10 * std::fabs(ref->rms[m2]);
	double total_s = 0;
	for (int r = 0; r < size; r++)
		total_s = std::max(total_s, stats[6 * r + 5] / 1e9);

	json j;
	j["program"] = "btmz";
	j["class"] = std::string(1, p.name);
	j["mapping"] = mapping_name(m);
	j["steps"] = steps;
	j["ranks_n"] = size;
	j["total_time_s"] = total_s;
	j["verification"] = {{"rms", rms},
			     {"reference", ref ? json(ref->rms) : json(nullptr)},
			     {"verified", ref ? json(verified) : json(nullptr)}};
	for (int r = 0; r < size; r++) {
		const double *st = &stats[6 * r];
		double sum = st[0] + st[1];
		j["ranks"].push_back({{"rank", r},
				      {"proc", "P" + std::to_string(r + 1)},
				      {"zones", zones_of(zones, owner, r)},
				      {"cells", static_cast<long>(st[2])},
				      {"compute_s", st[0] / 1e9},
				      {"wait_s", st[1] / 1e9},
				      {"compute_pct", sum > 0 ? 100.0 * st[0] / sum : 0.0},
				      {"wait_pct", sum > 0 ? 100.0 * st[1] / sum : 0.0},
				      {"messages_sent", static_cast<long>(st[3])},
				      {"doubles_sent", static_cast<long>(st[4])}});
	}
	if (o.json) {
		printf("%s\n", j.dump().c_str());
	} else {
		printf("btmz: class %c, %d zones, %d ranks, mapping %s, %d steps: %.3f s\n", p.name,
		       static_cast<int>(zones.size()), size, mapping_name(m), steps, total_s);
		printf("%-5s %6s %10s %8s %8s %9s\n", "Proc", "zones", "cells", "% Comp", "% Wait",
		       "messages");
		for (auto &r : j["ranks"])
			printf("%-5s %6zu %10ld %8.2f %8.2f %9ld\n",
			       r["proc"].get<std::string>().c_str(), r["zones"].size(),
			       r["cells"].get<long>(), r["compute_pct"].get<double>(),
			       r["wait_pct"].get<double>(), r["messages_sent"].get<long>());
		printf("verification (rms of u per variable):");
		for (double v : rms)
			printf(" %.15e", v);
		printf("\nverification: %s\n",
		       ref ? (verified ? "SUCCESSFUL" : "FAILED")
			   : "no reference value for this class and number of steps");
	}
	int rc = ref && !verified ? 1 : 0;
	if (!o.trace.empty()) {
		std::ofstream f(o.trace);
		if (!f) {
			fprintf(stderr, "btmz: cannot write trace '%s'\n", o.trace.c_str());
			return 1;
		}
		f << "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns\n";
		for (int r = 0; r < size; r++)
			for (int s = 0; s < steps; s++) {
				const uint64_t *t =
					&traces[(static_cast<size_t>(r) * steps + s) * 3];
				f << r << ",P" << r + 1 << "," << s << ","
				  << static_cast<long>(stats[6 * r + 2]) << "," << t[0] << ","
				  << t[1] << "," << t[2] << "\n";
			}
	}
	fflush(stdout);
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	CLI::App app{"btmz: BT-MZ proxy (NPB-MZ zone layout, 5x5 block-tridiagonal ADI, "
		     "MPI boundary exchange)"};
	app.add_option("--class", o.cls, "problem class: S, W, A or B")
		->check(CLI::IsMember({"S", "W", "A", "B"}));
	app.add_option("--steps", o.steps, "time steps (default: the class's: S 60, else 200)")
		->check(CLI::Range(1, 100000));
	app.add_option("--mapping", o.mapping,
		       "zones to ranks: binpack (NPB-MZ's rule) or rows (y strips of zones)")
		->check(CLI::IsMember({"binpack", "rows"}));
	app.add_flag("--layout", o.layout,
		     "print the zone layout, mapping and message plan as JSON (no MPI)");
	app.add_option("--np", o.np, "ranks, with --layout")->check(CLI::Range(1, 4096));
	app.add_flag("--json", o.json, "print the result as JSON");
	app.add_option("--trace", o.trace, "write a per-step trace (CSV) here");
	try {
		app.parse(argc, argv);
		if (o.layout && o.np == 0)
			throw CLI::ValidationError("--layout needs --np");
		if (!o.layout && o.np)
			throw CLI::ValidationError(
				"--np goes with --layout (mpirun sets the ranks)");
	} catch (const CLI::ParseError &e) {
		if (!launcher_rank_is_zero())
			return e.get_exit_code() ? 2 : 0;
		int rc = app.exit(e);
		return rc ? 2 : 0;
	}
	const ClassParams p = *class_params(o.cls[0]);
	const Mapping m = *parse_mapping(o.mapping);
	if (o.layout) {
		auto zones = make_zones(p);
		std::string err;
		auto owner = map_zones(p, zones, o.np, m, err);
		if (!err.empty()) {
			fprintf(stderr, "btmz: %s\n", err.c_str());
			return 2;
		}
		printf("%s\n", layout_json(p, zones, owner, o.np, m).dump(1).c_str());
		return 0;
	}
	MPI_Init(&argc, &argv);
	int rc = run(o, p, m);
	MPI_Finalize();
	return rc;
}
