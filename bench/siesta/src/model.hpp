// SPDX-License-Identifier: GPL-2.0
// SIESTA proxy: the schedule of work and messages. Every rank derives the
// same schedule from the seed, so each knows what the others compute and
// send; nothing here uses MPI.
//
// An SCF iteration is `phases` short compute phases. After each phase every
// rank sends a small message to each of its ring neighbours (rank +-1) and
// waits for theirs; each iteration ends with an all-reduce (the SCF
// convergence test). Phase lengths are log-normal around the rank's share;
// each rank's share drifts from iteration to iteration (a mean-reverting
// multiplicative random walk), so that the imbalance changes all the time
// and no iteration is representative of the next.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace siesta
{

struct Params {
	int ranks = 4;
	int iterations = 100;
	int phases = 24;
	// Mean work units of one phase of a rank whose share is 1.
	double phase_units = 3000;
	// Mean share per rank (the static part of the imbalance); empty: the
	// default shape 1, 0.55, 0.3, 0.2 (repeated for more ranks).
	std::vector<double> shares;
	double phase_sigma = 0.3;         // log-normal sigma of one phase's length
	double drift_sigma = 0.15;        // per-iteration log step of a rank's share
	double drift_pull = 0.3;          // pull of the share back to its mean (0..1)
	int msg_min = 64, msg_max = 4096; // bytes, uniform in log2 steps
	uint64_t seed = 1;
};

// The default static shares for n ranks.
std::vector<double> default_shares(int n);

// Check parameters; "" when fine, else a message naming the bad one.
std::string validate(const Params &p);

class Schedule
{
public:
	explicit Schedule(const Params &p);
	const Params &params() const { return p_; }
	// Work units rank r computes in phase f of iteration i.
	uint64_t units(int i, int f, int r) const { return units_[idx(i, f, r)]; }
	// Bytes rank r sends to each neighbour after phase f of iteration i.
	int msg_bytes(int i, int f, int r) const { return bytes_[idx(i, f, r)]; }
	// Rank r's drift factor in iteration i (its share x this = its load).
	double drift(int i, int r) const { return drift_[static_cast<size_t>(i) * p_.ranks + r]; }
	// Ring neighbours of r (one when ranks == 2, none when 1).
	std::vector<int> neighbours(int r) const;
	// Messages and bytes rank r sends over the whole run.
	uint64_t messages_sent(int r) const;
	uint64_t bytes_sent(int r) const;
	uint64_t iteration_units(int i, int r) const;

private:
	size_t idx(int i, int f, int r) const
	{
		return (static_cast<size_t>(i) * p_.phases + f) * p_.ranks + r;
	}
	Params p_;
	std::vector<uint64_t> units_;
	std::vector<int> bytes_;
	std::vector<double> drift_;
};

// The payload rank src sends after phase f of iteration i: `bytes`/8
// doubles that the receiver can check.
double payload(int src, int i, int f, int k);

} // namespace siesta
