// SPDX-License-Identifier: GPL-2.0
#include "adi.hpp"

#include <cmath>

namespace btmz
{

void block_mul(const Block &a, const Block &b, Block &out)
{
	for (int i = 0; i < kVars; i++)
		for (int j = 0; j < kVars; j++) {
			double s = 0;
			for (int k = 0; k < kVars; k++)
				s += a[i * kVars + k] * b[k * kVars + j];
			out[i * kVars + j] = s;
		}
}

// Gaussian elimination with partial pivoting on [a | cols | v].
void block_solve(Block a, Block &cols, Vec5 &v)
{
	for (int p = 0; p < kVars; p++) {
		int piv = p;
		for (int i = p + 1; i < kVars; i++)
			if (std::fabs(a[i * kVars + p]) > std::fabs(a[piv * kVars + p]))
				piv = i;
		if (piv != p) {
			for (int j = 0; j < kVars; j++) {
				std::swap(a[p * kVars + j], a[piv * kVars + j]);
				std::swap(cols[p * kVars + j], cols[piv * kVars + j]);
			}
			std::swap(v[p], v[piv]);
		}
		double inv = 1.0 / a[p * kVars + p];
		for (int i = p + 1; i < kVars; i++) {
			double m = a[i * kVars + p] * inv;
			if (m == 0.0)
				continue;
			for (int j = p; j < kVars; j++)
				a[i * kVars + j] -= m * a[p * kVars + j];
			for (int j = 0; j < kVars; j++)
				cols[i * kVars + j] -= m * cols[p * kVars + j];
			v[i] -= m * v[p];
		}
	}
	for (int p = kVars - 1; p >= 0; p--) {
		double inv = 1.0 / a[p * kVars + p];
		for (int j = 0; j < kVars; j++) {
			double s = cols[p * kVars + j];
			for (int k = p + 1; k < kVars; k++)
				s -= a[p * kVars + k] * cols[k * kVars + j];
			cols[p * kVars + j] = s * inv;
		}
		double s = v[p];
		for (int k = p + 1; k < kVars; k++)
			s -= a[p * kVars + k] * v[k];
		v[p] = s * inv;
	}
}

void block_tridiag_solve(std::vector<Block> a, std::vector<Block> b, std::vector<Block> c,
			 std::vector<Vec5> &r)
{
	size_t n = r.size();
	Block t;
	// Forward: b_i' = b_i - a_i c_{i-1}', r_i' = r_i - a_i r_{i-1}';
	// then c_i' = b_i'^-1 c_i, r_i' = b_i'^-1 r_i'.
	for (size_t i = 0; i < n; i++) {
		if (i > 0) {
			block_mul(a[i], c[i - 1], t);
			for (int k = 0; k < kVars * kVars; k++)
				b[i][k] -= t[k];
			for (int x = 0; x < kVars; x++) {
				double s = 0;
				for (int y = 0; y < kVars; y++)
					s += a[i][x * kVars + y] * r[i - 1][y];
				r[i][x] -= s;
			}
		}
		block_solve(b[i], c[i], r[i]);
	}
	// Back substitution: x_i = r_i' - c_i' x_{i+1}.
	for (size_t i = n - 1; i-- > 0;)
		for (int x = 0; x < kVars; x++) {
			double s = 0;
			for (int y = 0; y < kVars; y++)
				s += c[i][x * kVars + y] * r[i + 1][y];
			r[i][x] -= s;
		}
}

ZoneSolver::ZoneSolver(const Zone &z, const ClassParams &p, int x0, int y0)
    : z_(z), tau_(50.0 * p.dt)
{
	size_t n = static_cast<size_t>(z.nx + 2) * (z.ny + 2) * z.nz * kVars;
	u_.assign(n, 0.0);
	du_.assign(n, 0.0);
	f_.assign(n, 0.0);
	// Initial state and forcing: smooth functions of the global position,
	// so that every zone's values depend on where it is.
	const double pi = 3.14159265358979323846;
	for (int k = 0; k < z.nz; k++)
		for (int j = 0; j < z.ny; j++)
			for (int i = 0; i < z.nx; i++) {
				double x = (x0 + i + 0.5) / p.gx, y = (y0 + j + 0.5) / p.gy,
				       zz = (k + 0.5) / p.gz;
				for (int m = 0; m < kVars; m++) {
					u_[idx(i, j, k) + m] =
						1.0 + 0.1 * (m + 1) * std::sin(pi * (x + m * 0.1)) *
							      std::cos(pi * y) * zz;
					f_[idx(i, j, k) + m] = 0.5 *
							       std::cos(2 * pi * x * (m + 1)) *
							       std::sin(2 * pi * (y + zz));
				}
			}
}

// The 5x5 coupling of a cell with its neighbours along a line: a fixed
// matrix with a skew part, scaled by the cell's state (the non-linearity).
Block ZoneSolver::coupling(const double *u) const
{
	Block m;
	double s = 1.0 + 0.1 * u[0] * u[0];
	for (int i = 0; i < kVars; i++)
		for (int j = 0; j < kVars; j++)
			m[i * kVars + j] = s * (i == j ? 1.0 : 0.05 * (i - j) / kVars);
	return m;
}

void ZoneSolver::rhs()
{
	// R(u) = laplacian(u) + f - u (1 + u0^2 / 10) / 2: diffusion, forcing and
	// a non-linear damping; Dirichlet u = 1 above and below
	// the zone (no ghost layers in z), ghost layers in x and y.
	const int nx = z_.nx, ny = z_.ny, nz = z_.nz;
	const double one[kVars] = {1, 1, 1, 1, 1};
	for (int k = 0; k < nz; k++)
		for (int j = 0; j < ny; j++)
			for (int i = 0; i < nx; i++) {
				const double *c = &u_[idx(i, j, k)];
				const double *dn = k > 0 ? &u_[idx(i, j, k - 1)] : one;
				const double *up = k + 1 < nz ? &u_[idx(i, j, k + 1)] : one;
				const double *w = &u_[idx(i - 1, j, k)], *e = &u_[idx(i + 1, j, k)];
				const double *s = &u_[idx(i, j - 1, k)], *n = &u_[idx(i, j + 1, k)];
				double *d = &du_[idx(i, j, k)];
				const double *f = &f_[idx(i, j, k)];
				for (int m = 0; m < kVars; m++)
					d[m] = tau_ * (w[m] + e[m] + s[m] + n[m] + dn[m] + up[m] -
						       6.0 * c[m] + f[m] -
						       0.5 * c[m] * (1.0 + 0.1 * c[0] * c[0]));
			}
}

// One factor: along direction dir (0 x, 1 y, 2 z), for every line, solve
// (I + tau A_dir) x = du with du's line as the right-hand side.
void ZoneSolver::sweep(int dir)
{
	const int nx = z_.nx, ny = z_.ny, nz = z_.nz;
	const int len = dir == 0 ? nx : dir == 1 ? ny : nz;
	const int n1 = dir == 0 ? ny : nx, n2 = dir == 2 ? ny : nz;
	auto at = [&](int l, int a, int b) {
		return dir == 0 ? idx(l, a, b) : dir == 1 ? idx(a, l, b) : idx(a, b, l);
	};
	std::vector<Block> a(len), b(len), c(len);
	std::vector<Vec5> r(len);
	for (int q2 = 0; q2 < n2; q2++)
		for (int q1 = 0; q1 < n1; q1++) {
			for (int l = 0; l < len; l++) {
				size_t p = at(l, q1, q2);
				Block m = coupling(&u_[p]);
				for (int x = 0; x < kVars * kVars; x++) {
					a[l][x] = -tau_ * m[x];
					c[l][x] = -tau_ * m[x];
					b[l][x] = 2.0 * tau_ * m[x] + (x % (kVars + 1) == 0);
				}
				for (int x = 0; x < kVars; x++)
					r[l][x] = du_[p + x];
			}
			block_tridiag_solve(a, b, c, r);
			for (int l = 0; l < len; l++) {
				size_t p = at(l, q1, q2);
				for (int x = 0; x < kVars; x++)
					du_[p + x] = r[l][x];
			}
		}
}

void ZoneSolver::step()
{
	rhs();
	sweep(0);
	sweep(1);
	sweep(2);
	for (int k = 0; k < z_.nz; k++)
		for (int j = 0; j < z_.ny; j++)
			for (int i = 0; i < z_.nx; i++)
				for (int m = 0; m < kVars; m++)
					u_[idx(i, j, k) + m] += du_[idx(i, j, k) + m];
}

void ZoneSolver::pack(Dir side, double *out) const
{
	// The neighbour's west ghost is our east-most column, and so on.
	for (int k = 0; k < z_.nz; k++) {
		if (side == West || side == East) {
			int i = side == West ? z_.nx - 1 : 0;
			for (int j = 0; j < z_.ny; j++)
				for (int m = 0; m < kVars; m++)
					*out++ = u_[idx(i, j, k) + m];
		} else {
			int j = side == South ? z_.ny - 1 : 0;
			for (int i = 0; i < z_.nx; i++)
				for (int m = 0; m < kVars; m++)
					*out++ = u_[idx(i, j, k) + m];
		}
	}
}

void ZoneSolver::unpack(Dir side, const double *in)
{
	for (int k = 0; k < z_.nz; k++) {
		if (side == West || side == East) {
			int i = side == West ? -1 : z_.nx;
			for (int j = 0; j < z_.ny; j++)
				for (int m = 0; m < kVars; m++)
					u_[idx(i, j, k) + m] = *in++;
		} else {
			int j = side == South ? -1 : z_.ny;
			for (int i = 0; i < z_.nx; i++)
				for (int m = 0; m < kVars; m++)
					u_[idx(i, j, k) + m] = *in++;
		}
	}
}

Vec5 ZoneSolver::sum_squares() const
{
	Vec5 s{};
	for (int k = 0; k < z_.nz; k++)
		for (int j = 0; j < z_.ny; j++)
			for (int i = 0; i < z_.nx; i++)
				for (int m = 0; m < kVars; m++)
					s[m] += u_[idx(i, j, k) + m] * u_[idx(i, j, k) + m];
	return s;
}

} // namespace btmz
