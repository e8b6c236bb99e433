// DRUM over MPI ranks: the machine tree (from the XML file or discovered from
// the ranks' host names) mapped onto the ranks, the computing nodes filled
// from their ranks' measures, and a node's share split among its ranks.
#include "hpclb/hpclb.hpp"

#include <hwloc.h>
#include <set>

namespace hpclb
{

MachineTree tree_from_hosts(const std::vector<std::string> &rank_hosts)
{
	std::vector<std::string> hosts;
	std::set<std::string> seen;
	for (const auto &h : rank_hosts) {
		if (h.empty())
			throw Error("a rank has an empty host name");
		if (seen.insert(h).second)
			hosts.push_back(h);
	}
	return MachineTree::flat(hosts);
}

std::vector<int> map_ranks(const MachineTree &tree, const std::vector<std::string> &rank_hosts)
{
	if (rank_hosts.empty())
		throw Error("no rank to map onto the machine tree");
	std::map<std::string, int> leaf_of_host;
	for (int id : tree.leaves()) {
		const auto &d = tree.node(id).description;
		if (!leaf_of_host.emplace(d, id).second)
			throw Error("computing nodes " + std::to_string(leaf_of_host[d]) + " and " +
				    std::to_string(id) + " both describe host \"" + d + "\"");
	}
	std::vector<int> out;
	std::set<int> used;
	for (size_t r = 0; r < rank_hosts.size(); r++) {
		auto it = leaf_of_host.find(rank_hosts[r]);
		if (it == leaf_of_host.end())
			throw Error("rank " + std::to_string(r) + " runs on host \"" +
				    rank_hosts[r] +
				    "\", which is no computing node of the machine tree");
		out.push_back(it->second);
		used.insert(it->second);
	}
	for (const auto &[h, id] : leaf_of_host)
		if (!used.count(id))
			throw Error("computing node " + std::to_string(id) + " (host \"" + h +
				    "\") has no rank: its share of the work would go nowhere");
	return out;
}

void fill_from_ranks(MachineTree &tree, const std::vector<int> &leaf_of_rank,
		     const std::vector<RankMeasure> &ranks, const std::vector<int> &cores)
{
	if (leaf_of_rank.size() != ranks.size() || cores.size() != ranks.size())
		throw Error("fill_from_ranks: one leaf, measure and core count per rank");
	struct Acc {
		double mflops = 0, util = 0, idle = 0;
		int n = 0, cores = 1, first = -1;
	};
	std::map<int, Acc> acc;
	for (size_t r = 0; r < ranks.size(); r++) {
		const auto &m = ranks[r];
		if (!(m.mflops >= 0 && m.util >= 0 && m.idle >= 0 && m.caf >= 0 && m.ifspeed >= 0))
			throw Error("rank " + std::to_string(r) + ": negative measure");
		if (cores[r] < 1)
			throw Error("rank " + std::to_string(r) + ": its node has no core");
		if (tree.node(leaf_of_rank[r]).type != NodeType::Computing)
			throw Error("rank " + std::to_string(r) + " is mapped to node " +
				    std::to_string(leaf_of_rank[r]) + ", not a computing node");
		auto &a = acc[leaf_of_rank[r]];
		a.mflops += m.mflops;
		a.util += m.util;
		a.idle += m.idle;
		if (a.n++ == 0) {
			a.first = static_cast<int>(r);
			a.cores = cores[r];
		}
	}
	for (const auto &[id, a] : acc) {
		auto &n = tree.node(id);
		if (n.mflops <= 0)
			n.mflops = a.mflops / a.n * std::min(a.cores, a.n);
		n.cpu_util = a.util;
		n.cpu_idle = a.idle;
		const auto &f = ranks[static_cast<size_t>(a.first)];
		if (f.ifspeed > 0)
			n.interfaces = {{"net", f.ifspeed, f.caf}};
	}
}

std::vector<double> rank_shares(const MachineTree &tree, const std::vector<int> &leaf_of_rank)
{
	std::map<int, int> per_leaf;
	for (int l : leaf_of_rank)
		per_leaf[l]++;
	std::vector<double> out;
	for (int l : leaf_of_rank)
		out.push_back(tree.node(l).share / per_leaf[l]);
	return out;
}

int node_cores()
{
	hwloc_topology_t topo;
	if (hwloc_topology_init(&topo) != 0)
		throw Error("hwloc: cannot initialise a topology");
	if (hwloc_topology_load(topo) != 0) {
		hwloc_topology_destroy(topo);
		throw Error("hwloc: cannot load this node's topology");
	}
	int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	if (n <= 0)
		n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	hwloc_topology_destroy(topo);
	return std::max(1, n);
}

} // namespace hpclb
