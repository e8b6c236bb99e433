// RUPER-LB: "RUPER-LB: Load balancing embarrasingly parallel applications in
// unpredictable cloud environments", §2.1 (workers and tasks, Table 1,
// report/addMeasure of Figure 2, checkPoint of Figure 3, finish requests) and
// §2.2 (the guess worker's addMeasure for the MPI level).
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace hpclb
{

double RuperWorker::pred_done(double t) const
{
	if (finished || !started)
		return static_cast<double>(done);
	return static_cast<double>(done) + speed() * std::max(0.0, t - last_report);
}

RuperTask::RuperTask(uint64_t iterations, size_t workers, const RuperParams &p, double now)
    : to_do_(iterations), w_(workers), p_(p), start_(now), last_checkpoint_(now)
{
	if (!workers)
		throw Error("RUPER-LB: a task needs at least one worker");
	if (!(p.checkpoint_interval > 0) || !(p.threshold >= 0) || !(p.max_deviation > 0) ||
	    !(p.min_report > 0) || !(p.max_report >= p.min_report))
		throw Error("RUPER-LB: checkpoint interval, max deviation and report bounds must "
			    "be > 0 (min_report <= max_report), threshold >= 0");
	auto share = split(iterations, std::vector<double>(workers, 1.0));
	for (size_t i = 0; i < workers; i++) {
		w_[i].assigned = share[i];
		w_[i].interval = p.min_report;
	}
}

uint64_t RuperTask::start(size_t w, double now)
{
	auto &k = w_.at(w);
	if (k.started)
		throw Error("RUPER-LB: worker " + std::to_string(w) + " started twice");
	k.started = true;
	k.start = k.last_report = now;
	return k.assigned;
}

// Report (Figure 2, left) with addMeasure (Figure 2, right; Figure 3, right
// for a guess worker).
double RuperTask::report(size_t w, uint64_t done, double now, bool guess, bool idle)
{
	auto &k = w_.at(w);
	if (!k.started || k.finished)
		throw Error("RUPER-LB: worker " + std::to_string(w) +
			    (k.finished ? " has finished" : " has not started"));
	const double dt = now - k.last_report;
	if (!(dt > 0))
		throw Error("RUPER-LB: report of worker " + std::to_string(w) +
			    " is not later than its last one");
	if (done < k.done && !guess)
		throw Error("RUPER-LB: worker " + std::to_string(w) + " reports " +
			    std::to_string(done) + " iterations done after " +
			    std::to_string(k.done));
	const double prev = k.speed();
	double v;
	if (guess && prev > 0)
		// The guess worker corrects its last speed by how far the
		// reported (predicted) count is from what it expected.
		v = std::max(0.0, prev + (static_cast<double>(done) - k.pred_done(now)) / dt);
	else
		v = (static_cast<double>(done) - static_cast<double>(k.done)) / dt;
	v = std::max(0.0, v);
	if (idle && prev > 0)
		v = prev;
	k.speeds.push_back(v);
	k.done = done;
	k.last_report = now;
	// Speed deviation v/v': shorter report interval when the speed moves.
	const double dev = prev > 0 ? v / prev : 1;
	if (std::fabs(dev - 1) > p_.max_deviation)
		k.interval = std::max(p_.min_report, k.interval / 2);
	else
		k.interval = std::min(p_.max_report, k.interval * 2);
	if (now - last_checkpoint_ >= p_.checkpoint_interval)
		checkpoint(now);
	return k.interval;
}

// checkPoint (Figure 3, left).
double RuperTask::checkpoint(double now, bool force)
{
	last_checkpoint_ = now;
	checkpoints_++;
	double speed = 0, pred = 0;
	uint64_t done = 0;
	for (const auto &k : w_) {
		done += k.done;
		if (k.started && !k.finished) {
			speed += k.speed();
			pred += k.pred_done(now);
		} else if (k.finished) {
			pred += static_cast<double>(k.done);
		} else {
			pred += 0;
		}
	}
	if (done >= to_do_) {
		// Everything is done: every worker stops where it is.
		for (auto &k : w_)
			k.assigned = k.done;
		return remaining_ = 0;
	}
	if (!(speed > 0))
		return remaining_ = INFINITY; // nothing measured yet: no basis to move work
	remaining_ = std::max(0.0, (static_cast<double>(to_do_) - pred) / speed);
	if (remaining_ <= p_.threshold && !force)
		return remaining_;
	// Re-assign what is left to the active workers by speed factor.
	uint64_t fixed = 0;
	std::vector<size_t> active;
	std::vector<uint64_t> base(w_.size(), 0);
	for (size_t i = 0; i < w_.size(); i++) {
		const auto &k = w_[i];
		if (k.finished)
			fixed += k.done;
		else if (!k.started || k.speeds.empty())
			fixed += k.assigned; // no speed measured yet: keeps its share
		else {
			active.push_back(i);
			base[i] = std::max<uint64_t>(
				k.done, static_cast<uint64_t>(std::floor(k.pred_done(now))));
		}
	}
	uint64_t base_sum = 0;
	for (size_t i : active)
		base_sum += base[i];
	if (fixed + base_sum >= to_do_) {
		// The predictions already cover the rest: cap at the reports.
		for (size_t i : active)
			base[i] = w_[i].done;
		base_sum = 0;
		for (size_t i : active)
			base_sum += base[i];
	}
	const uint64_t left = to_do_ > fixed + base_sum ? to_do_ - fixed - base_sum : 0;
	std::vector<double> sp;
	for (size_t i : active)
		sp.push_back(w_[i].speed());
	auto add = split(left, sp);
	for (size_t a = 0; a < active.size(); a++)
		w_[active[a]].assigned = base[active[a]] + add[a];
	return remaining_;
}

FinishAnswer RuperTask::request_finish(size_t w, double now)
{
	auto &k = w_.at(w);
	if (!k.started)
		throw Error("RUPER-LB: worker " + std::to_string(w) + " has not started");
	if (k.finished)
		return FinishAnswer::Finish;
	if (k.done < k.assigned)
		return FinishAnswer::Report; // the task knows fewer done than assigned
	double speed = 0, pred = 0;
	for (const auto &o : w_) {
		pred += o.pred_done(now);
		if (o.started && !o.finished)
			speed += o.speed();
	}
	double remaining = speed > 0 ? (static_cast<double>(to_do_) - pred) / speed : 0;
	if (remaining > p_.threshold) {
		checkpoint(now);
		if (k.assigned > k.done)
			return FinishAnswer::Continue;
	}
	// Whatever the prediction, the worker leaves only if what the others
	// still have to do covers the task: otherwise the rest is split again
	// (it gets its share) so that no iteration is left undone.
	uint64_t covered = k.done;
	for (size_t i = 0; i < w_.size(); i++)
		if (i != w)
			covered +=
				w_[i].finished ? w_[i].done : std::max(w_[i].assigned, w_[i].done);
	if (covered < to_do_) {
		checkpoint(now, true);
		if (k.assigned <= k.done) // nobody else measured: it takes the rest itself
			k.assigned = k.done + (to_do_ - covered);
		return FinishAnswer::Continue;
	}
	k.finished = true;
	k.assigned = k.done;
	return FinishAnswer::Finish;
}

bool RuperTask::finished() const
{
	return std::all_of(w_.begin(), w_.end(), [](const auto &k) { return k.finished; });
}

} // namespace hpclb
