// SPDX-License-Identifier: GPL-2.0
#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace siesta
{

std::vector<double> default_shares(int n)
{
	// The shape of the paper's Table VI baseline (98.9, 52.8, 28.5, 20.0 %
	// compute): one rank does about twice the next, and so on.
	static const double shape[] = {1.0, 0.55, 0.3, 0.2};
	std::vector<double> s(n);
	for (int r = 0; r < n; r++)
		s[r] = shape[r % 4];
	return s;
}

std::string validate(const Params &p)
{
	if (p.ranks < 1)
		return "ranks must be at least 1";
	if (p.iterations < 1)
		return "iterations must be at least 1";
	if (p.phases < 1)
		return "phases must be at least 1";
	if (!(p.phase_units >= 1))
		return "phase units must be at least 1";
	if (!p.shares.empty() && static_cast<int>(p.shares.size()) != p.ranks)
		return "give one share per rank (" + std::to_string(p.ranks) + "), got " +
		       std::to_string(p.shares.size());
	for (double s : p.shares)
		if (!(s > 0 && s <= 100))
			return "shares must be in (0, 100]";
	if (!(p.phase_sigma >= 0 && p.phase_sigma <= 2))
		return "phase sigma must be in [0, 2]";
	if (!(p.drift_sigma >= 0 && p.drift_sigma <= 2))
		return "drift sigma must be in [0, 2]";
	if (!(p.drift_pull >= 0 && p.drift_pull <= 1))
		return "drift pull must be in [0, 1]";
	if (p.msg_min < 8 || p.msg_max < p.msg_min || p.msg_max > (1 << 20))
		return "message sizes must satisfy 8 <= min <= max <= 1 MiB";
	return "";
}

Schedule::Schedule(const Params &p) : p_(p)
{
	if (p_.shares.empty())
		p_.shares = default_shares(p_.ranks);
	size_t n = static_cast<size_t>(p_.iterations) * p_.phases * p_.ranks;
	units_.resize(n);
	bytes_.resize(n);
	drift_.resize(static_cast<size_t>(p_.iterations) * p_.ranks);
	// One generator, drawn in a fixed order: the same schedule everywhere.
	std::mt19937_64 g(p_.seed);
	std::normal_distribution<double> normal(0.0, 1.0);
	int lo = static_cast<int>(std::ceil(std::log2(p_.msg_min)));
	int hi = static_cast<int>(std::floor(std::log2(p_.msg_max)));
	if (hi < lo)
		hi = lo;
	std::uniform_int_distribution<int> expo(lo, hi);
	std::vector<double> logd(p_.ranks, 0.0);
	// Log-normal with mean 1: exp(sigma z - sigma^2 / 2).
	const double corr = p_.phase_sigma * p_.phase_sigma / 2;
	for (int i = 0; i < p_.iterations; i++) {
		for (int r = 0; r < p_.ranks; r++) {
			if (i > 0)
				logd[r] =
					(1 - p_.drift_pull) * logd[r] + p_.drift_sigma * normal(g);
			drift_[static_cast<size_t>(i) * p_.ranks + r] = std::exp(logd[r]);
		}
		for (int f = 0; f < p_.phases; f++)
			for (int r = 0; r < p_.ranks; r++) {
				double len = std::exp(p_.phase_sigma * normal(g) - corr);
				double u = p_.phase_units * p_.shares[r] * drift(i, r) * len;
				units_[idx(i, f, r)] = std::max<uint64_t>(1, std::llround(u));
				int b = 1 << expo(g);
				bytes_[idx(i, f, r)] =
					std::clamp(b, p_.msg_min, p_.msg_max) / 8 * 8;
			}
	}
}

std::vector<int> Schedule::neighbours(int r) const
{
	int n = p_.ranks;
	if (n == 1)
		return {};
	if (n == 2)
		return {1 - r};
	return {(r + n - 1) % n, (r + 1) % n};
}

uint64_t Schedule::messages_sent(int r) const
{
	return static_cast<uint64_t>(p_.iterations) * p_.phases * neighbours(r).size();
}

uint64_t Schedule::bytes_sent(int r) const
{
	uint64_t b = 0;
	for (int i = 0; i < p_.iterations; i++)
		for (int f = 0; f < p_.phases; f++)
			b += static_cast<uint64_t>(msg_bytes(i, f, r)) * neighbours(r).size();
	return b;
}

uint64_t Schedule::iteration_units(int i, int r) const
{
	uint64_t u = 0;
	for (int f = 0; f < p_.phases; f++)
		u += units(i, f, r);
	return u;
}

double payload(int src, int i, int f, int k)
{
	return src * 1e6 + i * 1e3 + f + k * 1e-3;
}

} // namespace siesta
