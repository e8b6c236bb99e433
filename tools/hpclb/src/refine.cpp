// Cloud-aware refinement load balancing: "Improving HPC Application
// Performance in Cloud through Dynamic Load Balancing" (Gupta et al.),
// §IV: Eq. 1-3, Algorithm 1 and the speed loop of Figure 2.
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace hpclb
{

double background_load(double t_lb, double task_time, double t_idle)
{
	if (!(t_lb >= 0) || !(task_time >= 0) || !(t_idle >= 0))
		throw Error("background load: times must be >= 0");
	// Eq. 2. Clock granularity can make it slightly negative: no background.
	return std::max(0.0, t_lb - task_time - t_idle);
}

double cpu_share(double cpu, double avail, double wait)
{
	if (!(cpu >= 0) || !(avail >= 0) || !(wait >= 0) || !std::isfinite(cpu) ||
	    !std::isfinite(avail) || !std::isfinite(wait))
		throw Error("cpu share: times must be finite and >= 0");
	const double ran = avail - wait;
	if (ran <= 1e-6)
		return 1; // no time to judge by: the speed stays f_p
	// Never 0: a rank that got nothing still gets the least share.
	return std::clamp(cpu / ran, 0.01, 1.0);
}

void ShareEstimator::busy(double wall, double cpu)
{
	if (!(wall >= 0) || !(cpu >= 0) || !std::isfinite(wall) || !std::isfinite(cpu))
		throw Error("busy time: wall and CPU seconds must be finite and >= 0");
	// Clock granularity may put a thread's CPU time a little above the wall
	// time; much more is a process's CPU time over several threads.
	if (cpu > 1.05 * wall + 1e-3)
		throw Error("busy time: " + std::to_string(cpu) + " s of CPU in " +
			    std::to_string(wall) +
			    " s of wall time: give the CPU time of the thread that ran the "
			    "units");
	wall_ += wall;
	cpu_ += cpu;
	busy_mode_ = true;
}

double ShareEstimator::period(double cpu, double avail, double wait, double task_time, double t_lb)
{
	if (wall_ > 0) {
		num_ = 0.5 * num_ + cpu_;
		den_ = 0.5 * den_ + wall_;
		share_ = std::clamp(num_ / den_, 0.01, 1.0);
	} else if (!busy_mode_ && periods_ > 0 && task_time >= 0.2 * t_lb) {
		const double sh = cpu_share(cpu, avail, std::max(0.0, wait));
		share_ = share_ > 0 ? 0.5 * (share_ + sh) : sh;
	}
	wall_ = cpu_ = 0;
	periods_++;
	return share();
}

bool worth_moving(double before, double after, double min_gain)
{
	if (!(min_gain >= 0 && min_gain < 1))
		throw Error("min gain must be a fraction in [0, 1)");
	return before - after >= min_gain * before && after < before;
}

RefineResult refine(const std::vector<Vcpu> &vcpus, const std::vector<Task> &tasks, double epsilon,
		    const Peers *peers)
{
	const size_t P = vcpus.size();
	if (!P)
		throw Error("refine: no VCPU");
	if (!(epsilon >= 0) || !std::isfinite(epsilon))
		throw Error("refine: epsilon must be >= 0");
	for (size_t p = 0; p < P; p++)
		if (!(vcpus[p].freq > 0) || !std::isfinite(vcpus[p].freq) ||
		    !(vcpus[p].background >= 0) || !std::isfinite(vcpus[p].background))
			throw Error("refine: VCPU " + std::to_string(p) +
				    ": frequency must be > 0 and background load >= 0");
	std::set<int64_t> ids;
	for (const auto &t : tasks) {
		if (t.proc < 0 || static_cast<size_t>(t.proc) >= P)
			throw Error("refine: task " + std::to_string(t.id) + " is on VCPU " +
				    std::to_string(t.proc) + ", outside 0.." +
				    std::to_string(P - 1));
		if (!(t.cpu_time >= 0) || !std::isfinite(t.cpu_time))
			throw Error("refine: task " + std::to_string(t.id) +
				    ": CPU time must be >= 0");
		if (!ids.insert(t.id).second)
			throw Error("refine: task id " + std::to_string(t.id) + " appears twice");
	}

	// The graph as task indices (an edge to an unknown unit is an error: a
	// peer that is not registered cannot be placed).
	std::vector<std::vector<size_t>> nbr;
	if (peers && !peers->empty()) {
		std::map<int64_t, size_t> index;
		for (size_t i = 0; i < tasks.size(); i++)
			index[tasks[i].id] = i;
		nbr.resize(tasks.size());
		for (const auto &[id, list] : *peers) {
			auto it = index.find(id);
			if (it == index.end())
				throw Error("refine: peers given for unit " + std::to_string(id) +
					    ", which is no task");
			for (int64_t q : list) {
				auto jt = index.find(q);
				if (jt == index.end())
					throw Error("refine: unit " + std::to_string(id) +
						    " has peer " + std::to_string(q) +
						    ", which is no task");
				if (q != id)
					nbr[it->second].push_back(jt->second);
			}
		}
	}

	RefineResult r;
	r.proc.resize(tasks.size());
	r.load.assign(P, 0);
	// Ticks: t_i * f_{m_i^{k-1}}, processor-independent (Eq. 3); the
	// background load in ticks of its own VCPU, O_p * f_p.
	std::vector<double> ticks(tasks.size());
	// Tasks per VCPU by (ticks, id): ties broken by id, not by input order.
	using Key = std::tuple<double, int64_t, size_t>;
	std::vector<std::set<Key>> on(P);
	// Summed in id order, so that the input's order cannot change a load
	// by a rounding error (and with it a tie).
	std::vector<size_t> order(tasks.size());
	for (size_t i = 0; i < order.size(); i++)
		order[i] = i;
	std::sort(order.begin(), order.end(),
		  [&](size_t a, size_t b) { return tasks[a].id < tasks[b].id; });
	for (size_t i : order) {
		const auto &t = tasks[i];
		ticks[i] = t.cpu_time * vcpus[t.proc].freq;
		r.proc[i] = t.proc;
		r.load[t.proc] += ticks[i];
		on[t.proc].insert({ticks[i], t.id, i});
	}
	for (size_t p = 0; p < P; p++)
		r.load[p] += vcpus[p].background * vcpus[p].freq;
	double sum = 0, fsum = 0;
	for (size_t p = 0; p < P; p++) {
		sum += r.load[p];
		fsum += vcpus[p].freq;
	}
	r.avg = sum / static_cast<double>(P); // Eq. 1
	// Each VCPU's share of the ticks: Tk_avg scaled by its speed,
	// Tk_avg * f_p / mean(f). With equal speeds this is Tk_avg, the paper's
	// test; with different speeds, equal ticks would take a slow VCPU longer,
	// so the share that takes every VCPU the same time is the one balanced
	// ("balancing load across heterogeneous configuration", §IV).
	std::vector<double> target(P);
	for (size_t p = 0; p < P; p++)
		target[p] = sum * vcpus[p].freq / fsum;
	// max/avg of the time each VCPU needs for its ticks.
	auto imbalance = [&] {
		double mx = 0;
		for (size_t p = 0; p < P; p++)
			mx = std::max(mx, r.load[p] / vcpus[p].freq);
		return sum > 0 ? mx / (sum / fsum) : 1.0;
	};
	r.imbalance_before = imbalance();
	const double slack = 1e-12 * std::max(1.0, r.avg);

	// Lines 2-9: overHeap (most above its share first; ties: lower VCPU
	// first) and underSet (most room below its share first).
	auto heavy = [&](size_t p) { return r.load[p] - target[p] > epsilon; };
	auto light = [&](size_t p) { return target[p] - r.load[p] > epsilon; };
	std::set<std::pair<double, size_t>> over, under;
	for (size_t p = 0; p < P; p++) {
		if (heavy(p))
			over.insert({target[p] - r.load[p], p});
		else if (light(p))
			under.insert({r.load[p] - target[p], p});
	}
	// Lines 10-15.
	while (!over.empty() && !under.empty()) {
		size_t donor = over.begin()->second; // deleteMaxHeap
		over.erase(over.begin());
		// getBestCoreAndTask: the largest task on the donor that the
		// underloaded VCPU with the most room takes without going above its
		// share (so no receiver is ever overloaded); that VCPU is bestCore.
		auto [neg_room, core] = *under.begin();
		double room = -neg_room + slack;
		auto &set = on[donor];
		auto it = set.upper_bound({room, INT64_MAX, SIZE_MAX});
		if (it == set.begin())
			continue; // nothing fits anywhere: the donor stays as it is
		--it;
		if (!nbr.empty()) {
			// Among the tasks that fit, the one with the most peers on the
			// receiver less those on the donor; ties: the largest (the
			// first met going down the set's order).
			auto gain = [&](size_t i) {
				long g = 0;
				for (size_t q : nbr[i])
					g += r.proc[q] == static_cast<int>(core)    ? 1
					     : r.proc[q] == static_cast<int>(donor) ? -1
										    : 0;
				return g;
			};
			auto best = it;
			long best_gain = gain(std::get<2>(*it));
			for (auto j = it; j != set.begin();)
				if (long g = gain(std::get<2>(*--j)); g > best_gain) {
					best = j;
					best_gain = g;
				}
			it = best;
		}
		size_t task = std::get<2>(*it);
		on[core].insert(*it);
		set.erase(it);
		r.proc[task] = static_cast<int>(core); // line 13
		r.moves++;
		// updateHeapAndSet (line 14).
		under.erase(under.begin());
		r.load[donor] -= ticks[task];
		r.load[core] += ticks[task];
		if (heavy(donor))
			over.insert({target[donor] - r.load[donor], donor});
		if (light(core))
			under.insert({r.load[core] - target[core], core});
	}
	r.target = target;
	r.imbalance_after = imbalance();
	return r;
}

double speed_loop(uint64_t iter_block)
{
	if (!iter_block)
		throw Error("speed loop: iter_block must be > 0");
	volatile double result = 0; // Figure 2, kept from being optimised away
	auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < iter_block; i++) {
		double b = 0.1 + 0.1 * result;
		result = static_cast<int>(std::sqrt(1 + std::cos(b * 1.57)));
	}
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	return static_cast<double>(iter_block) / std::max(s, 1e-9);
}

} // namespace hpclb
