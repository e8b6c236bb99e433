// Inter-host plan of "Auto-tuning Performance of MPI Parallel Programs Using
// Resource Management in Container-based Virtual Cloud": §IV.A (psi, ALM,
// LIP, Eq. 1-3), §IV.B (expressions 1-8), §IV.C and Algorithm 2.
//
// Here a "host" is a rank's node and a "container" a migratable work unit:
// the plan is applied by moving units between ranks, not by moving
// processes. The intra-host part (Algorithm 1, CPU weight per process from
// sliding-window execution times) is hpcd's weight mode (tools/hpcd).
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace hpclb
{

std::vector<double> psi(const std::vector<double> &intervals)
{
	if (intervals.empty())
		throw Error("psi of no process");
	double alm = 0; // Eq. 2
	for (double x : intervals) {
		if (!(x >= 0) || !std::isfinite(x))
			throw Error("intervals must be finite and >= 0");
		alm += x;
	}
	alm /= static_cast<double>(intervals.size());
	std::vector<double> out;
	for (double x : intervals)
		out.push_back(std::fabs(x - alm)); // Eq. 1
	return out;
}

double lip(const std::vector<double> &intervals)
{
	auto ps = psi(intervals);
	double m = 0; // Eq. 3
	for (size_t p = 0; p < ps.size(); p++)
		if (intervals[p] > 0)
			m = std::max(m, ps[p] / intervals[p]);
	return m;
}

MigrationPlan migration_plan(const std::vector<Host> &hosts,
			     const std::vector<Container> &containers, const PlanParams &pp)
{
	const size_t P = hosts.size();
	if (!P)
		throw Error("migration plan: no host");
	if (!(pp.dump_rate > 0))
		throw Error("migration plan: dump rate must be > 0 bytes/s");
	for (size_t k = 0; k < P; k++)
		if (!(hosts[k].ecu > 0) || !std::isfinite(hosts[k].ecu) || !(hosts[k].psi >= 0) ||
		    !(hosts[k].interval >= 0))
			throw Error("migration plan: host " + std::to_string(k) +
				    ": NumECU must be > 0, psi and interval >= 0");
	std::set<int64_t> ids;
	// max(exeT[]) of expressions (2) and norm(): the length of the window
	// the execution times were accumulated over, so that a container's
	// vmload is the part of its host's ECUs it took and constraint (5),
	// sum of vmload <= capacity, holds. With one container per host (the
	// paper's setting) that is the largest container's time; with several,
	// a host's containers share its time and the window is the longest
	// host's total (the largest container alone would put a host of 100
	// containers at 100 times its capacity, and no destination's rest
	// capacity would ever stay above the average).
	std::vector<double> host_time(P, 0);
	for (const auto &c : containers) {
		if (c.host < 0 || static_cast<size_t>(c.host) >= P)
			throw Error("migration plan: container " + std::to_string(c.id) +
				    " is on unknown host " + std::to_string(c.host));
		if (!(c.exe_t >= 0) || !std::isfinite(c.exe_t))
			throw Error("migration plan: container " + std::to_string(c.id) +
				    ": execution time must be >= 0");
		if (!ids.insert(c.id).second)
			throw Error("migration plan: container id " + std::to_string(c.id) +
				    " appears twice");
		host_time[static_cast<size_t>(c.host)] += c.exe_t;
	}
	const double max_exe = *std::max_element(host_time.begin(), host_time.end());
	MigrationPlan plan;
	plan.usage.assign(P, 0);
	if (!(max_exe > 0))
		return plan; // nothing measured: no load, nothing to move

	// Expressions (1), (2), (3), (4), (6), (7).
	std::vector<double> vmload(containers.size()), load(P, 0);
	for (size_t j = 0; j < containers.size(); j++) {
		const auto &c = containers[j];
		vmload[j] = c.exe_t * hosts[c.host].ecu / max_exe;
		load[c.host] += vmload[j];
	}
	for (size_t i = 0; i < P; i++) {
		plan.usage[i] = load[i] / hosts[i].ecu;
		plan.average_usage += plan.usage[i];
	}
	plan.average_usage /= static_cast<double>(P);
	const double avg = plan.average_usage, slack = 1e-12 * std::max(1.0, avg);

	// migrationCandidates (lines 3-20): hosts at or below the average are
	// destinations; a host above it gives its smallest containers (ascending
	// load, ties by id) until its usage is down to the average level.
	std::vector<size_t> migration;
	std::vector<int> destinations;
	for (size_t i = 0; i < P; i++) {
		if (plan.usage[i] <= avg + slack) {
			destinations.push_back(static_cast<int>(i));
			continue;
		}
		std::vector<size_t> tmp;
		for (size_t j = 0; j < containers.size(); j++)
			if (containers[j].host == static_cast<int>(i))
				tmp.push_back(j);
		std::sort(tmp.begin(), tmp.end(), [&](size_t a, size_t b) {
			if (vmload[a] != vmload[b])
				return vmload[a] < vmload[b];
			return containers[a].id < containers[b].id;
		});
		double left = load[i];
		for (size_t j : tmp) {
			if (left / hosts[i].ecu <= avg + slack)
				break;
			migration.push_back(j);
			left -= vmload[j];
		}
	}
	// Lines 22-34: the first destination (in host order) whose rest capacity
	// stays above the average rest after taking the container and the
	// normalised cost of moving it, and whose imbalance psi_k exceeds
	// that cost, lambda(dump) < psi_k.
	std::vector<double> rest(P);
	double rest_sum = 0; // kept up to date: avgRestCapacity in O(1)
	for (size_t k = 0; k < P; k++)
		rest_sum += rest[k] = hosts[k].ecu - load[k]; // expression (7)
	for (size_t j : migration) {
		const auto &y = containers[j];
		const double lambda = static_cast<double>(y.bytes) / pp.dump_rate;
		bool placed = false;
		for (int k : destinations) {
			double norm = lambda / max_exe * hosts[k].ecu;
			double tmp_rest = rest[k] - vmload[j] - norm;
			const double avg_rest = rest_sum / static_cast<double>(P);
			if (tmp_rest > avg_rest && lambda < hosts[k].psi) {
				plan.moves.push_back({y.id, y.host, k});
				rest_sum += tmp_rest - rest[k];
				rest[k] = tmp_rest; // line 30 (the source's rest is left as is)
				placed = true;
				break;
			}
		}
		if (!placed)
			plan.kept.push_back(y.id);
	}
	return plan;
}

} // namespace hpclb
