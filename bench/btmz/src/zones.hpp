// SPDX-License-Identifier: GPL-2.0
// BT-MZ proxy: the NPB-MZ zone layout, the zone-to-rank mapping and the
// boundary exchange plan. No MPI here: the layout is pure arithmetic, shared
// by the MPI program and its tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace btmz
{

// One NPB-MZ problem class: the global grid, split into x_zones x y_zones
// zones whose widths grow geometrically (BT-MZ's uneven zones).
struct ClassParams {
	char name;
	int x_zones, y_zones;
	int gx, gy, gz;
	int steps;    // NPB's default number of time steps
	double dt;    // time step
	double ratio; // width ratio of the largest to the smallest zone, per direction
};

// S, W, A, B as in NPB-MZ's BT-MZ; nullopt for an unknown class.
std::optional<ClassParams> class_params(char c);

struct Zone {
	int id;     // 0-based, x fastest: id = i + j * x_zones
	int ix, iy; // position in the zone grid
	int nx, ny, nz;
	long cells() const { return static_cast<long>(nx) * ny * nz; }
};

// Zone widths along one direction: NPB-MZ's stretching, widths growing
// by a constant factor so that the last is about `ratio` times the first.
std::vector<int> zone_widths(int global, int zones, double ratio);

std::vector<Zone> make_zones(const ClassParams &p);

enum class Mapping {
	BinPack, // NPB-MZ's rule: largest zone first to the least loaded rank
	Rows,    // whole rows of zones (y strips), contiguous, to each rank
};
std::optional<Mapping> parse_mapping(const std::string &s);
const char *mapping_name(Mapping m);

// owner[zone] = rank. Errors (more ranks than zones, or than rows for
// Rows) come back as a message and an empty vector.
std::vector<int> map_zones(const ClassParams &p, const std::vector<Zone> &zones, int nranks,
			   Mapping m, std::string &err);

// The four neighbours of a zone (periodic in x and y, as in BT-MZ).
enum Dir { West = 0, East = 1, South = 2, North = 3 };
int neighbour(const ClassParams &p, int zone, Dir d);

// A face of zone `from` that zone `to` needs as its ghost layer on side
// `side` (the side of `to`).
struct Face {
	int from, to;
	Dir side;
	long doubles; // 5 values per face cell
};

// Per step, what each rank sends to and receives from each other rank:
// every face whose two zones have different owners, in one message per
// ordered pair of ranks (faces in zone order), as NPB-MZ packs them.
struct Message {
	int src, dst;
	std::vector<Face> faces;
	long doubles() const;
};
std::vector<Message> exchange_plan(const ClassParams &p, const std::vector<Zone> &zones,
				   const std::vector<int> &owner);

// Faces whose two zones share an owner: copied in memory, no message.
std::vector<Face> local_faces(const ClassParams &p, const std::vector<Zone> &zones,
			      const std::vector<int> &owner);

// Cells per rank under a mapping.
std::vector<long> rank_cells(const std::vector<Zone> &zones, const std::vector<int> &owner,
			     int nranks);

} // namespace btmz
