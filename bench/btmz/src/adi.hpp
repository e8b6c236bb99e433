// SPDX-License-Identifier: GPL-2.0
// BT-MZ proxy: the compute kernel of one zone. Per time step, an
// approximately factored implicit scheme in delta form, as NPB's BT:
//   (I + tau Ax)(I + tau Ay)(I + tau Az) du = tau R(u),   u += du
// with 5 unknowns per cell, so that each factor is a block-tridiagonal
// system of 5x5 blocks along grid lines, solved by block Gaussian
// elimination (the block Thomas algorithm) line by line.
#pragma once

#include "zones.hpp"

#include <array>
#include <vector>

namespace btmz
{

constexpr int kVars = 5;
using Block = std::array<double, kVars * kVars>; // row-major 5x5
using Vec5 = std::array<double, kVars>;

// Small dense kernels, exposed for the tests.
void block_mul(const Block &a, const Block &b, Block &out); // out = a b
void block_solve(Block lu, Block &rhs_cols, Vec5 &rhs);     // in place: a^-1 [cols|v]
// Solve the block-tridiagonal system with sub-diagonal a, diagonal b,
// super-diagonal c (n blocks each) for x in place of r.
void block_tridiag_solve(std::vector<Block> a, std::vector<Block> b, std::vector<Block> c,
			 std::vector<Vec5> &r);

class ZoneSolver
{
public:
	// x0, y0: the zone's first cell in the global grid (forcing term).
	ZoneSolver(const Zone &z, const ClassParams &p, int x0, int y0);

	// One time step (ghost layers must be current).
	void step();

	// Face of this zone that its neighbour on side `side` of the
	// neighbour needs: `side` is the neighbour's side (West: our east
	// column), packed k, then j or i, then the 5 variables.
	void pack(Dir side, double *out) const;
	// Fill our ghost layer on `side` from a packed face.
	void unpack(Dir side, const double *in);

	// Sum over the zone's cells of u_m^2, per variable.
	Vec5 sum_squares() const;
	const Zone &zone() const { return z_; }

private:
	size_t idx(int i, int j, int k) const
	{
		return ((static_cast<size_t>(k) * (z_.ny + 2) + (j + 1)) * (z_.nx + 2) + (i + 1)) *
		       kVars;
	}
	void rhs();
	void sweep(int dir);
	Block coupling(const double *u) const;

	Zone z_;
	double tau_;
	std::vector<double> u_, du_, f_;
};

} // namespace btmz
