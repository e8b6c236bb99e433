// The damping shared by every method's plan (see hpclb.hpp, Damper): a plan
// only for an imbalance that persists, from loads averaged over the periods
// it persisted, cut to a move budget, never undoing the last plan unless the
// imbalance reversed, and only when the saving is worth the moves.
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace hpclb
{

void validate(const DampingParams &p)
{
	if (p.persistence < 1)
		throw Error("damping: persistence must be >= 1 period, not " +
			    std::to_string(p.persistence));
	if (!(p.threshold >= 0) || !std::isfinite(p.threshold))
		throw Error("damping: threshold must be a finite fraction >= 0");
	if (!(p.min_gain >= 0 && p.min_gain < 1))
		throw Error("damping: min gain must be a fraction in [0, 1)");
	if (!(p.max_move_fraction > 0 && p.max_move_fraction <= 1))
		throw Error("damping: move budget fraction must be in (0, 1]");
	if (p.max_moves < 1)
		throw Error("damping: move budget must be >= 1 move, not " +
			    std::to_string(p.max_moves));
	if (!(p.move_rate > 0) || !std::isfinite(p.move_rate))
		throw Error("damping: move rate must be > 0 bytes/s");
	if (p.max_backoff < 1)
		throw Error("damping: max backoff must be >= 1, not " +
			    std::to_string(p.max_backoff));
	if (p.horizon < 1)
		throw Error("damping: horizon must be >= 1 period, not " +
			    std::to_string(p.horizon));
}

Damper::Damper(const DampingParams &p) : p_(p)
{
	validate(p);
	required_ = p.persistence;
}

size_t Damper::cap() const
{
	return static_cast<size_t>(p_.persistence) * static_cast<size_t>(p_.max_backoff);
}

void Damper::set_params(const DampingParams &p)
{
	validate(p);
	p_ = p;
	required_ = p_.persistence;
	if (window_.size() > cap())
		window_.erase(window_.begin(), window_.end() - static_cast<std::ptrdiff_t>(cap()));
}

void Damper::reset()
{
	window_.clear();
	last_from_.clear();
	restart_ = false;
	required_ = p_.persistence;
	judging_ = false;
	imbalance_ = predicted_ = 1;
	streak_ = 0;
	heavy_ = -1;
	go_ = false;
}

namespace
{
double max_over_avg(const std::vector<double> &t)
{
	double mx = 0, sum = 0;
	for (double x : t) {
		mx = std::max(mx, x);
		sum += x;
	}
	return sum > 0 ? mx / (sum / static_cast<double>(t.size())) : 1.0;
}

double mean(const std::vector<double> &t)
{
	double sum = 0;
	for (double x : t)
		sum += x;
	return sum / static_cast<double>(t.size());
}
} // namespace

bool Damper::observe(const std::vector<Task> &tasks, const std::vector<double> &speeds)
{
	const size_t P = speeds.size();
	if (!P)
		throw Error("damping: no rank");
	for (size_t p = 0; p < P; p++)
		if (!(speeds[p] > 0) || !std::isfinite(speeds[p]))
			throw Error("damping: rank " + std::to_string(p) +
				    ": speed must be finite and > 0");
	Period per{tasks, std::vector<double>(P, 0), speeds};
	std::set<int64_t> ids;
	for (const auto &t : tasks) {
		if (t.proc < 0 || static_cast<size_t>(t.proc) >= P)
			throw Error("damping: unit " + std::to_string(t.id) + " is on rank " +
				    std::to_string(t.proc) + ", outside 0.." +
				    std::to_string(P - 1));
		if (!(t.cpu_time >= 0) || !std::isfinite(t.cpu_time))
			throw Error("damping: unit " + std::to_string(t.id) +
				    ": load must be finite and >= 0");
		if (!ids.insert(t.id).second)
			throw Error("damping: unit id " + std::to_string(t.id) + " appears twice");
		per.times[static_cast<size_t>(t.proc)] += t.cpu_time;
	}
	// Another number of ranks: the history says nothing about this one.
	if (!window_.empty() && window_.back().speeds.size() != P)
		reset();
	if (restart_)
		window_.clear();
	restart_ = false;
	window_.push_back(std::move(per));
	if (window_.size() > cap())
		window_.erase(window_.begin());
	imbalance_ = predicted_ = max_over_avg(window_.back().times);

	// The last plan, judged over the `persistence` periods after it: did
	// the max/avg fall by at least half of what it predicted? If not, the
	// load changes faster than the plans follow it: the next plan waits
	// twice as long (up to max_backoff x persistence).
	const auto base = static_cast<size_t>(p_.persistence);
	if (judging_ && window_.size() >= base) {
		double after = 0;
		for (size_t k = window_.size() - base; k < window_.size(); k++)
			after += max_over_avg(window_[k].times);
		after /= static_cast<double>(base);
		const bool delivered =
			judge_before_ - after >= 0.5 * (judge_before_ - judge_predicted_);
		required_ = delivered ? p_.persistence
				      : std::min(2 * required_, p_.persistence * p_.max_backoff);
		judging_ = false;
	}

	// The rank with the largest mean time over the last `required()`
	// periods (ties: the lower one), and for how many of the latest periods
	// in a row it was overloaded.
	const size_t n = std::min(window_.size(), static_cast<size_t>(required_));
	std::vector<double> sum(P, 0);
	for (size_t k = window_.size() - n; k < window_.size(); k++)
		for (size_t p = 0; p < P; p++)
			sum[p] += window_[k].times[p];
	const size_t r =
		static_cast<size_t>(std::max_element(sum.begin(), sum.end()) - sum.begin());
	streak_ = 0;
	for (auto w = window_.rbegin(); w != window_.rbegin() + static_cast<std::ptrdiff_t>(n);
	     ++w) {
		const double avg = mean(w->times);
		if (!(avg > 0) || w->times[r] < (1 + p_.threshold) * avg)
			break;
		streak_++;
	}
	heavy_ = streak_ ? static_cast<int>(r) : -1;
	go_ = streak_ >= required_;
	return go_;
}

std::vector<Task> Damper::smoothed() const
{
	if (window_.empty())
		return {};
	std::vector<Task> out = window_.back().tasks;
	// A rank's time is the sum of many units' loads and is a good measure;
	// one unit's wall time is not: a rank that is time-sliced (a CPU
	// quota, a neighbour on its CPU) is stopped for milliseconds at a time,
	// and a unit that runs across such a stop measures that stop too. A few
	// units of each period then look many times heavier than they are, and
	// a plan that moves the largest units first moves exactly those, to no
	// effect. Being stopped only ever adds time, so a unit's weight is the
	// least load it had on its present rank over the last periods (at least
	// kWeightPeriods when the window has them), and each rank's mean time
	// over the last required() periods is shared among its units by these
	// weights: the ranks' times are the measured ones, the units' split of
	// them is robust.
	const size_t n = std::min(window_.size(), static_cast<size_t>(required_));
	const size_t m = std::min(window_.size(), std::max(n, kWeightPeriods));
	struct Acc {
		double sum = 0, least = 0;
		int periods = 0, weighed = 0;
	};
	std::map<int64_t, Acc> acc;
	std::map<int64_t, int> where;
	for (const auto &t : out)
		where[t.id] = t.proc;
	for (size_t k = window_.size() - m; k < window_.size(); k++) {
		const bool recent = k >= window_.size() - n;
		for (const auto &t : window_[k].tasks) {
			auto it = where.find(t.id);
			if (it == where.end() || it->second != t.proc)
				continue;
			auto &a = acc[t.id];
			a.least = a.weighed++ ? std::min(a.least, t.cpu_time) : t.cpu_time;
			if (recent) {
				a.sum += t.cpu_time;
				a.periods++;
			}
		}
	}
	const size_t P = window_.back().speeds.size();
	std::vector<double> mean_time(P, 0), weight(P, 0);
	for (auto &t : out) {
		const auto &a = acc[t.id];
		t.cpu_time = a.sum / a.periods;
		mean_time[static_cast<size_t>(t.proc)] += t.cpu_time;
		weight[static_cast<size_t>(t.proc)] += a.least;
	}
	for (auto &t : out) {
		const auto p = static_cast<size_t>(t.proc);
		if (weight[p] > 0)
			t.cpu_time = acc[t.id].least * mean_time[p] / weight[p];
	}
	return out;
}

std::vector<Move> Damper::admit(const std::vector<Move> &plan)
{
	if (window_.empty())
		throw Error("damping: a plan before any period was observed");
	const auto &last = window_.back();
	const size_t P = last.speeds.size();
	const auto units = smoothed();
	std::map<int64_t, size_t> index;
	for (size_t i = 0; i < units.size(); i++)
		index[units[i].id] = i;
	std::set<int64_t> seen;
	for (const auto &m : plan) {
		auto it = index.find(m.id);
		if (it == index.end())
			throw Error("damping: the plan moves unknown unit " + std::to_string(m.id));
		if (units[it->second].proc != m.from)
			throw Error("damping: the plan moves unit " + std::to_string(m.id) +
				    " from rank " + std::to_string(m.from) + ", where it is not");
		if (m.to < 0 || static_cast<size_t>(m.to) >= P || m.to == m.from)
			throw Error("damping: the plan moves unit " + std::to_string(m.id) +
				    " to rank " + std::to_string(m.to));
		if (!seen.insert(m.id).second)
			throw Error("damping: the plan moves unit " + std::to_string(m.id) +
				    " twice");
	}
	if (!go_ || plan.empty())
		return {};

	std::vector<double> t(P, 0);
	for (const auto &u : units)
		t[static_cast<size_t>(u.proc)] += u.cpu_time;
	const std::vector<double> t0 = t;
	const double avg = mean(t);
	const double max_before = *std::max_element(t.begin(), t.end());
	// Largest first, ties by id: the budget goes to the moves that do most.
	std::vector<size_t> order(plan.size());
	for (size_t i = 0; i < order.size(); i++)
		order[i] = i;
	std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
		const double la = units[index[plan[a].id]].cpu_time,
			     lb = units[index[plan[b].id]].cpu_time;
		if (la != lb)
			return la > lb;
		return plan[a].id < plan[b].id;
	});
	const auto budget = static_cast<size_t>(std::min<double>(
		static_cast<double>(p_.max_moves),
		std::max(1.0,
			 std::floor(p_.max_move_fraction * static_cast<double>(units.size())))));
	std::vector<bool> keep(plan.size(), false);
	size_t kept = 0;
	double bytes = 0;
	for (size_t i : order) {
		if (kept >= budget)
			break;
		const auto &m = plan[i];
		const auto &u = units[index[m.id]];
		const auto f = static_cast<size_t>(m.from), d = static_cast<size_t>(m.to);
		// Back to where the last plan took it from: only when the
		// imbalance clearly reversed.
		if (auto lf = last_from_.find(m.id);
		    lf != last_from_.end() && lf->second == m.to &&
		    !(t0[f] >= (1 + p_.threshold) * avg && t0[d] < avg))
			continue;
		const double there = u.cpu_time * last.speeds[f] / last.speeds[d];
		if (std::max(t[f] - u.cpu_time, t[d] + there) >= std::max(t[f], t[d]))
			continue; // it would not shorten the longer of the two
		t[f] -= u.cpu_time;
		t[d] += there;
		bytes += static_cast<double>(u.bytes);
		keep[i] = true;
		kept++;
	}
	const double max_after = *std::max_element(t.begin(), t.end());
	const double saving = max_before - max_after;
	if (!kept || saving < p_.min_gain * max_before || saving <= 0 ||
	    saving * p_.horizon <= bytes / p_.move_rate)
		return {};
	std::vector<Move> out;
	last_from_.clear();
	for (size_t i = 0; i < plan.size(); i++)
		if (keep[i]) {
			out.push_back(plan[i]);
			last_from_[plan[i].id] = plan[i].from;
		}
	predicted_ = max_over_avg(t);
	judging_ = true;
	judge_before_ = max_over_avg(t0);
	judge_predicted_ = predicted_;
	// The next plan needs `persistence` periods measured after these moves.
	restart_ = true;
	streak_ = 0;
	heavy_ = -1;
	go_ = false;
	return out;
}

} // namespace hpclb
