// DRUM: the machine tree, its XML format and the node power.
// Faik, Teresco, Devine, Flaherty, Gervasio, "A model for resource-aware load
// balancing on heterogeneous clusters": §3 (tree), §3.1 (XML, Figure 2),
// §3.3 (power), §4 (H_cpu).
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <pugixml.hpp>
#include <set>
#include <sstream>

namespace hpclb
{

namespace
{

std::string where(const pugi::xml_node &n)
{
	std::string s = "<node";
	if (auto a = n.attribute("name"))
		s += std::string(" name=\"") + a.value() + "\"";
	return s + ">";
}

long parse_int(const pugi::xml_node &n, const char *attr, bool required, long dflt)
{
	auto a = n.attribute(attr);
	if (!a) {
		if (required)
			throw Error(where(n) + ": missing attribute " + attr);
		return dflt;
	}
	std::string_view v = a.value();
	long out = 0;
	auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
	if (ec != std::errc() || p != v.data() + v.size() || v.empty())
		throw Error(where(n) + ": " + attr + "=\"" + std::string(v) +
			    "\" is not an integer");
	return out;
}

double parse_nonneg(const pugi::xml_node &n, const char *attr, double dflt)
{
	auto a = n.attribute(attr);
	if (!a)
		return dflt;
	std::string v = a.value();
	size_t used = 0;
	double d = 0;
	try {
		d = std::stod(v, &used);
	} catch (const std::exception &) {
		used = 0;
	}
	if (v.empty() || used != v.size() || !std::isfinite(d))
		throw Error(where(n) + ": " + attr + "=\"" + v + "\" is not a number");
	if (d < 0)
		throw Error(where(n) + ": " + attr + "=\"" + v + "\" is negative");
	return d;
}

} // namespace

MachineNode &MachineTree::node(int id)
{
	auto it = nodes_.find(id);
	if (it == nodes_.end())
		throw Error("unknown node id " + std::to_string(id));
	return it->second;
}

const MachineNode &MachineTree::node(int id) const
{
	auto it = nodes_.find(id);
	if (it == nodes_.end())
		throw Error("unknown node id " + std::to_string(id));
	return it->second;
}

MachineTree MachineTree::parse_xml(std::string_view text)
{
	pugi::xml_document doc;
	auto r = doc.load_buffer(text.data(), text.size());
	if (!r)
		throw Error(std::string("malformed XML at offset ") + std::to_string(r.offset) +
			    ": " + r.description());
	auto mm = doc.child("machinemodel");
	if (!mm)
		throw Error("no <machinemodel> element");
	MachineTree t;
	long numnode = parse_int(mm, "numnode", false, -1);
	for (auto n : mm.children()) {
		if (n.type() != pugi::node_element)
			continue;
		if (std::string_view(n.name()) != "node")
			throw Error(std::string("unexpected element <") + n.name() +
				    "> in <machinemodel>");
		MachineNode m;
		long id = parse_int(n, "name", true, 0);
		if (id < 0 || id > 1000000000)
			throw Error(where(n) + ": node id out of range");
		m.id = static_cast<int>(id);
		std::string type = n.attribute("type").value();
		if (type == "NETWORK_NODE")
			m.type = NodeType::Network;
		else if (type == "COMPUTING_NODE")
			m.type = NodeType::Computing;
		else
			throw Error(where(n) + ": type=\"" + type +
				    "\" is neither NETWORK_NODE nor COMPUTING_NODE");
		m.description = n.attribute("description").value();
		long mon = parse_int(n, "IsMonitorable", false, 1);
		if (mon != 0 && mon != 1)
			throw Error(where(n) + ": IsMonitorable must be 0 or 1");
		m.monitorable = mon == 1;
		// children="1;2;" (the trailing ';' of the paper's files, or none).
		std::string ch = n.attribute("children").value();
		std::stringstream ss(ch);
		std::string item;
		while (std::getline(ss, item, ';')) {
			if (item.empty())
				continue;
			int c = 0;
			auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), c);
			if (ec != std::errc() || p != item.data() + item.size() || c < 0)
				throw Error(where(n) + ": child \"" + item + "\" is not a node id");
			m.children.push_back(c);
		}
		long k = parse_int(n, "childrenNum", false, static_cast<long>(m.children.size()));
		if (k != static_cast<long>(m.children.size()))
			throw Error(where(n) + ": childrenNum=" + std::to_string(k) + " but " +
				    std::to_string(m.children.size()) + " children listed");
		m.mflops = parse_nonneg(n, "mflops", 0);
		if (auto a = n.attribute("ifspeed")) {
			double s = parse_nonneg(n, "ifspeed", 0);
			if (s <= 0)
				throw Error(where(n) + ": ifspeed must be > 0 MB/s");
			m.interfaces.push_back({"if0", s, 0});
		}
		if (m.type == NodeType::Computing && !m.children.empty())
			throw Error(where(n) + ": a COMPUTING_NODE cannot have children");
		if (m.type == NodeType::Network && m.children.empty())
			throw Error(where(n) + ": a NETWORK_NODE needs children");
		if (!t.nodes_.emplace(m.id, m).second)
			throw Error(where(n) + ": duplicate node id " + std::to_string(m.id));
	}
	if (t.nodes_.empty())
		throw Error("<machinemodel> has no nodes");
	if (numnode >= 0 && numnode != static_cast<long>(t.nodes_.size()))
		throw Error("numnode=" + std::to_string(numnode) + " but " +
			    std::to_string(t.nodes_.size()) + " nodes");
	t.check();
	return t;
}

// Every child exists, has one parent, no cycle, one root reaching all.
void MachineTree::check() const
{
	std::map<int, int> parent;
	for (const auto &[id, n] : nodes_)
		for (int c : n.children) {
			if (!nodes_.count(c))
				throw Error("node " + std::to_string(id) + ": unknown child id " +
					    std::to_string(c));
			if (c == id)
				throw Error("cycle: node " + std::to_string(id) +
					    " is its own child");
			if (auto [it, fresh] = parent.emplace(c, id); !fresh)
				throw Error("node " + std::to_string(c) + " has two parents (" +
					    std::to_string(it->second) + " and " +
					    std::to_string(id) + ")");
		}
	std::vector<int> roots;
	for (const auto &[id, n] : nodes_)
		if (!parent.count(id))
			roots.push_back(id);
	if (roots.empty())
		throw Error("cycle: every node is some node's child (no root)");
	if (roots.size() > 1)
		throw Error("the tree has " + std::to_string(roots.size()) + " roots (nodes " +
			    std::to_string(roots[0]) + " and " + std::to_string(roots[1]) +
			    " have no parent)");
	// From the root, every node once; what is left is on a cycle.
	std::set<int> seen;
	std::vector<int> stack{roots[0]};
	while (!stack.empty()) {
		int id = stack.back();
		stack.pop_back();
		seen.insert(id);
		for (int c : nodes_.at(id).children)
			stack.push_back(c);
	}
	for (const auto &[id, n] : nodes_)
		if (!seen.count(id))
			throw Error("cycle: node " + std::to_string(id) +
				    " is not reachable from the root " + std::to_string(roots[0]));
	const_cast<MachineTree *>(this)->root_ = roots[0];
}

MachineTree MachineTree::load_xml(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw Error(path + ": cannot be read");
	std::stringstream ss;
	ss << f.rdbuf();
	try {
		return parse_xml(ss.str());
	} catch (const Error &e) {
		throw Error(path + ": " + e.what());
	}
}

MachineTree MachineTree::flat(const std::vector<std::string> &hosts)
{
	if (hosts.empty())
		throw Error("a machine needs at least one node");
	MachineTree t;
	MachineNode r;
	r.id = 0;
	r.type = NodeType::Network;
	r.description = "root";
	for (size_t i = 0; i < hosts.size(); i++) {
		MachineNode c;
		c.id = static_cast<int>(i + 1);
		c.description = hosts[i];
		r.children.push_back(c.id);
		t.nodes_.emplace(c.id, c);
	}
	t.nodes_.emplace(0, r);
	t.check();
	return t;
}

std::string MachineTree::to_xml() const
{
	pugi::xml_document doc;
	auto mm = doc.append_child("machinemodel");
	mm.append_attribute("numnode") = static_cast<unsigned>(nodes_.size());
	std::function<void(int)> put = [&](int id) {
		const auto &n = nodes_.at(id);
		auto x = mm.append_child("node");
		x.append_attribute("type") =
			n.type == NodeType::Network ? "NETWORK_NODE" : "COMPUTING_NODE";
		x.append_attribute("name") = n.id;
		x.append_attribute("description") = n.description.c_str();
		x.append_attribute("childrenNum") = static_cast<unsigned>(n.children.size());
		std::string ch;
		for (int c : n.children)
			ch += std::to_string(c) + ";";
		x.append_attribute("children") = ch.empty() ? ";" : ch.c_str();
		x.append_attribute("IsMonitorable") = n.monitorable ? 1 : 0;
		if (n.mflops > 0)
			x.append_attribute("mflops") = n.mflops;
		for (int c : n.children)
			put(c);
	};
	put(root_);
	std::ostringstream os;
	doc.save(os, "  ");
	return os.str();
}

std::vector<int> MachineTree::leaves() const
{
	std::vector<int> out;
	std::function<void(int)> walk = [&](int id) {
		const auto &n = nodes_.at(id);
		if (n.type == NodeType::Computing)
			out.push_back(id);
		for (int c : n.children)
			walk(c);
	};
	if (root_ >= 0)
		walk(root_);
	return out;
}

double comm_power(const std::vector<Interface> &ifs)
{
	if (ifs.empty())
		return 0;
	double s = 0;
	for (const auto &i : ifs) {
		if (!(i.speed_mbs > 0) || i.caf < 0)
			throw Error("interface " + i.name + ": speed must be > 0 and CAF >= 0");
		s += std::log(i.speed_mbs) / (1 + i.caf);
	}
	return s / static_cast<double>(ifs.size());
}

double comm_weight(const std::vector<Interface> &ifs)
{
	if (ifs.empty())
		return 0;
	double caf = 0;
	for (const auto &i : ifs)
		caf += i.caf;
	caf /= static_cast<double>(ifs.size());
	return 1 - 1 / (1 + caf);
}

double h_cpu(const std::vector<double> &v)
{
	if (v.empty())
		throw Error("H_cpu of no CPU");
	double mx = 0;
	for (double x : v) {
		if (!(x > 0) || !std::isfinite(x))
			throw Error("H_cpu: every CPU speed must be > 0");
		mx = std::max(mx, x);
	}
	const double p = static_cast<double>(v.size());
	double mean = 0;
	for (double x : v)
		mean += x / mx;
	mean /= p;
	double ss = 0;
	for (double x : v)
		ss += (mean - x / mx) * (mean - x / mx);
	return std::sqrt(ss / p);
}

// Per node, in a group of siblings S (DRUM §3.3):
//   p_n = w_dynamic * (u+i)_n / sum_S (u+i) + w_static * b_n / sum_S b
// (the two terms have different units, so each is normalised across the
// level before they are weighted; an internal node's u+i and b are the sums
// of its children's, "the processing power of internal nodes is the sum of
// the powers of the node's immediate children"),
//   c_n = comm_power normalised across S,
//   power_n = w_comm c_n + (1 - w_comm) p_n, normalised across S.
// A leaf's share of the whole work is the product of the normalised powers
// on its path from the root.
void MachineTree::compute(const PowerParams &pp)
{
	if (!(pp.w_dynamic >= 0 && pp.w_dynamic <= 1))
		throw Error("w_dynamic must be in [0, 1]");
	for (const auto &[id, n] : nodes_) {
		if (n.mflops < 0 || n.cpu_util < 0 || n.cpu_idle < 0)
			throw Error("node " + std::to_string(id) + ": negative capacity");
		comm_power(n.interfaces); // validates
	}
	std::map<int, double> b, ui;
	std::function<void(int)> agg = [&](int id) {
		auto &n = nodes_.at(id);
		if (n.type == NodeType::Computing) {
			b[id] = n.mflops;
			ui[id] = n.cpu_util + n.cpu_idle;
			return;
		}
		b[id] = ui[id] = 0;
		for (int c : n.children) {
			agg(c);
			b[id] += b[c];
			ui[id] += ui[c];
		}
	};
	agg(root_);
	auto norm = [](double x, double sum) { return sum > 0 ? x / sum : 0.0; };
	std::function<void(int, double)> level = [&](int id, double share) {
		auto &n = nodes_.at(id);
		n.share = share;
		if (n.children.empty())
			return;
		double sb = 0, sui = 0, sc = 0;
		for (int c : n.children) {
			sb += b[c];
			sui += ui[c];
			sc += comm_power(nodes_.at(c).interfaces);
		}
		double sp = 0;
		for (int c : n.children) {
			auto &k = nodes_.at(c);
			k.p = pp.w_dynamic * norm(ui[c], sui) + (1 - pp.w_dynamic) * norm(b[c], sb);
			k.c = norm(comm_power(k.interfaces), sc);
			k.w_comm = comm_weight(k.interfaces);
			k.power = k.w_comm * k.c + (1 - k.w_comm) * k.p;
			sp += k.power;
		}
		for (int c : n.children) {
			auto &k = nodes_.at(c);
			// Nothing known about any sibling: an equal split.
			k.power = sp > 0 ? k.power / sp
					 : 1.0 / static_cast<double>(n.children.size());
			level(c, share * k.power);
		}
	};
	nodes_.at(root_).power = 1;
	level(root_, 1);
}

std::vector<uint64_t> split(uint64_t n, const std::vector<double> &shares)
{
	if (shares.empty())
		throw Error("split over no node");
	double sum = 0;
	for (double s : shares) {
		if (!(s >= 0) || !std::isfinite(s))
			throw Error("shares must be finite and >= 0");
		sum += s;
	}
	std::vector<uint64_t> out(shares.size(), 0);
	if (!(sum > 0))
		throw Error("shares add up to 0");
	std::vector<std::pair<double, size_t>> rem;
	uint64_t given = 0;
	for (size_t i = 0; i < shares.size(); i++) {
		long double x = static_cast<long double>(n) * shares[i] / sum;
		out[i] = static_cast<uint64_t>(std::floor(x));
		given += out[i];
		rem.push_back({static_cast<double>(x - std::floor(x)), i});
	}
	std::stable_sort(rem.begin(), rem.end(),
			 [](const auto &a, const auto &b) { return a.first > b.first; });
	for (size_t k = 0; given < n; k = (k + 1) % rem.size(), given++)
		out[rem[k].second]++;
	return out;
}

} // namespace hpclb
