// SPDX-License-Identifier: GPL-2.0
#include "zones.hpp"

#include <cmath>

namespace btmz
{

std::optional<ClassParams> class_params(char c)
{
	// NPB-MZ BT-MZ: zones, grid, default steps and dt per class; zone
	// widths stretched by the ratio 4.5 in each direction.
	switch (c) {
	case 'S': return ClassParams{'S', 2, 2, 24, 24, 6, 60, 0.010, 4.5};
	case 'W': return ClassParams{'W', 4, 4, 64, 64, 8, 200, 0.0008, 4.5};
	case 'A': return ClassParams{'A', 4, 4, 128, 128, 16, 200, 0.0008, 4.5};
	case 'B': return ClassParams{'B', 8, 8, 304, 208, 17, 200, 0.0003, 4.5};
	default: return std::nullopt;
	}
}

std::vector<int> zone_widths(int global, int zones, double ratio)
{
	std::vector<int> end(zones);
	if (zones > 1 && std::fabs(ratio - 1.0) > 1e-10) {
		// Widths w, w r, w r^2 ... summing to `global`; the tops of the
		// intervals are rounded with +0.45 (not +0.5) so that the widths
		// never decrease.
		double r = std::exp(std::log(ratio) / (zones - 1));
		double smallest = global * (r - 1.0) / (std::pow(r, zones) - 1.0);
		for (int i = 0; i < zones; i++)
			end[i] = static_cast<int>(
				smallest * (std::pow(r, i + 1) - 1.0) / (r - 1.0) + 0.45);
	} else {
		for (int i = 0; i < zones; i++)
			end[i] = (i + 1) * global / zones;
	}
	std::vector<int> w(zones);
	int start = 0;
	for (int i = 0; i < zones; i++) {
		w[i] = end[i] - start;
		start = end[i];
	}
	return w;
}

std::vector<Zone> make_zones(const ClassParams &p)
{
	auto xs = zone_widths(p.gx, p.x_zones, p.ratio);
	auto ys = zone_widths(p.gy, p.y_zones, p.ratio);
	std::vector<Zone> z;
	for (int j = 0; j < p.y_zones; j++)
		for (int i = 0; i < p.x_zones; i++)
			z.push_back({i + j * p.x_zones, i, j, xs[i], ys[j], p.gz});
	return z;
}

std::optional<Mapping> parse_mapping(const std::string &s)
{
	if (s == "binpack")
		return Mapping::BinPack;
	if (s == "rows")
		return Mapping::Rows;
	return std::nullopt;
}

const char *mapping_name(Mapping m)
{
	return m == Mapping::BinPack ? "binpack" : "rows";
}

int neighbour(const ClassParams &p, int zone, Dir d)
{
	int i = zone % p.x_zones, j = zone / p.x_zones;
	switch (d) {
	case West: i = (i + p.x_zones - 1) % p.x_zones; break;
	case East: i = (i + 1) % p.x_zones; break;
	case South: j = (j + p.y_zones - 1) % p.y_zones; break;
	case North: j = (j + 1) % p.y_zones; break;
	}
	return i + j * p.x_zones;
}

namespace
{

// NPB-MZ's communication index of a zone with a rank: the face lengths
// it shares with zones that rank already owns.
long comm_index(const ClassParams &p, const std::vector<Zone> &zones, const std::vector<int> &owner,
		int zone, int rank)
{
	long c = 0;
	const Zone &z = zones[zone];
	for (Dir d : {West, East})
		if (owner[neighbour(p, zone, d)] == rank)
			c += z.ny;
	for (Dir d : {South, North})
		if (owner[neighbour(p, zone, d)] == rank)
			c += z.nx;
	return c;
}

std::vector<int> binpack(const ClassParams &p, const std::vector<Zone> &zones, int nranks)
{
	size_t n = zones.size();
	// Zones by size, largest first (a selection sort: among equal sizes
	// the lower zone number comes first).
	std::vector<int> order(n);
	for (size_t i = 0; i < n; i++)
		order[i] = static_cast<int>(i);
	for (size_t i = 0; i + 1 < n; i++) {
		size_t m = i;
		for (size_t k = i + 1; k < n; k++)
			if (zones[order[m]].cells() < zones[order[k]].cells())
				m = k;
		std::swap(order[i], order[m]);
	}
	std::vector<int> owner(n, -1);
	std::vector<long> load(nranks, 0);
	size_t iz = 0;
	while (iz < n) {
		// The least loaded rank (the first of equals) ...
		int r = 0;
		for (int k = 1; k < nranks; k++)
			if (load[k] < load[r])
				r = k;
		// ... takes the next largest zone or, among the zones within 5 %
		// of its size, the one that shares the most boundary with it.
		int best = order[iz];
		long best_comm = comm_index(p, zones, owner, best, r);
		for (size_t k = iz + 1; k < n; k++) {
			int z = order[k];
			double diff =
				static_cast<double>(zones[order[iz]].cells() - zones[z].cells()) /
				static_cast<double>(zones[order[iz]].cells());
			if (diff > 0.05)
				break;
			if (owner[z] < 0) {
				long c = comm_index(p, zones, owner, z, r);
				if (c > best_comm) {
					best = z;
					best_comm = c;
				}
			}
		}
		owner[best] = r;
		load[r] += zones[best].cells();
		while (iz < n && owner[order[iz]] >= 0)
			iz++;
	}
	return owner;
}

} // namespace

std::vector<int> map_zones(const ClassParams &p, const std::vector<Zone> &zones, int nranks,
			   Mapping m, std::string &err)
{
	err.clear();
	if (nranks < 1) {
		err = "the number of ranks must be at least 1";
		return {};
	}
	if (static_cast<size_t>(nranks) > zones.size()) {
		err = "class " + std::string(1, p.name) + " has " + std::to_string(zones.size()) +
		      " zones: it cannot keep " + std::to_string(nranks) + " ranks busy";
		return {};
	}
	if (m == Mapping::BinPack)
		return binpack(p, zones, nranks);
	if (nranks > p.y_zones || p.y_zones % nranks) {
		err = "mapping rows needs a number of ranks that divides the " +
		      std::to_string(p.y_zones) + " rows of zones of class " +
		      std::string(1, p.name);
		return {};
	}
	std::vector<int> owner(zones.size());
	int per = p.y_zones / nranks;
	for (const Zone &z : zones)
		owner[z.id] = z.iy / per;
	return owner;
}

long Message::doubles() const
{
	long d = 0;
	for (const Face &f : faces)
		d += f.doubles;
	return d;
}

namespace
{

// Every face any zone needs, in zone order, then side order.
std::vector<Face> all_faces(const ClassParams &p, const std::vector<Zone> &zones)
{
	std::vector<Face> f;
	for (const Zone &z : zones)
		for (Dir d : {West, East, South, North}) {
			long len = (d == West || d == East) ? static_cast<long>(z.ny) * z.nz
							    : static_cast<long>(z.nx) * z.nz;
			f.push_back({neighbour(p, z.id, d), z.id, d, 5 * len});
		}
	return f;
}

} // namespace

std::vector<Message> exchange_plan(const ClassParams &p, const std::vector<Zone> &zones,
				   const std::vector<int> &owner)
{
	std::vector<Message> msgs;
	for (const Face &f : all_faces(p, zones)) {
		int s = owner[f.from], d = owner[f.to];
		if (s == d)
			continue;
		Message *m = nullptr;
		for (auto &x : msgs)
			if (x.src == s && x.dst == d)
				m = &x;
		if (!m) {
			msgs.push_back({s, d, {}});
			m = &msgs.back();
		}
		m->faces.push_back(f);
	}
	return msgs;
}

std::vector<Face> local_faces(const ClassParams &p, const std::vector<Zone> &zones,
			      const std::vector<int> &owner)
{
	std::vector<Face> out;
	for (const Face &f : all_faces(p, zones))
		if (owner[f.from] == owner[f.to])
			out.push_back(f);
	return out;
}

std::vector<long> rank_cells(const std::vector<Zone> &zones, const std::vector<int> &owner,
			     int nranks)
{
	std::vector<long> c(nranks, 0);
	for (const Zone &z : zones)
		c[owner[z.id]] += z.cells();
	return c;
}

} // namespace btmz
