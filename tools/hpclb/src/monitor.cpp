// DRUM's monitoring agents (§3.2): CPU idle and utilisation from /proc/stat
// (also the refinement paper's t_idle, Eq. 2), packets per interface from
// /proc/net/dev (CAF = lambda + mu), available memory from /proc/meminfo, and
// the static capability from a LINPACK-like dense kernel (MFLOPS).
#include "hpclb/hpclb.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

namespace hpclb
{

namespace
{
std::string slurp(const char *path)
{
	std::ifstream f(path);
	if (!f)
		throw Error(std::string(path) + ": cannot be read");
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}
} // namespace

CpuTimes read_cpu_times(const std::vector<int> &cpus, const std::string &text)
{
	std::istringstream in(text.empty() ? slurp("/proc/stat") : text);
	std::set<int> want(cpus.begin(), cpus.end()), seen;
	CpuTimes t;
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !isdigit(line[3]))
			continue;
		std::istringstream ls(line.substr(3));
		int cpu;
		ls >> cpu;
		if (!want.empty() && !want.count(cpu))
			continue;
		uint64_t v[8] = {};
		for (auto &x : v)
			ls >> x;
		if (!ls)
			throw Error("/proc/stat: malformed line \"" + line + "\"");
		// user nice system idle iowait irq softirq steal
		t.idle_ticks += v[3] + v[4];
		for (auto x : v)
			t.total_ticks += x;
		seen.insert(cpu);
	}
	for (int c : want)
		if (!seen.count(c))
			throw Error("/proc/stat: no CPU " + std::to_string(c));
	return t;
}

std::vector<NetDev> read_net_dev(const std::string &text)
{
	std::istringstream in(text.empty() ? slurp("/proc/net/dev") : text);
	std::vector<NetDev> out;
	std::string line;
	while (std::getline(in, line)) {
		auto colon = line.find(':');
		if (colon == std::string::npos || line.find('|') != std::string::npos)
			continue;
		NetDev d;
		d.name = line.substr(0, colon);
		d.name.erase(0, d.name.find_first_not_of(' '));
		std::istringstream ls(line.substr(colon + 1));
		uint64_t v[10] = {};
		for (auto &x : v)
			ls >> x;
		if (!ls)
			throw Error("/proc/net/dev: malformed line \"" + line + "\"");
		// rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets
		d.rx_packets = v[1];
		d.tx_packets = v[9];
		out.push_back(d);
	}
	return out;
}

uint64_t read_mem_available(const std::string &text)
{
	std::istringstream in(text.empty() ? slurp("/proc/meminfo") : text);
	std::string key;
	uint64_t kb;
	std::string unit;
	while (in >> key >> kb) {
		std::getline(in, unit);
		if (key == "MemAvailable:")
			return kb * 1024;
	}
	throw Error("/proc/meminfo: no MemAvailable");
}

double dense_mflops(int n)
{
	if (n < 8 || n > 4000)
		throw Error("dense kernel: n must be in 8..4000");
	std::vector<double> a(static_cast<size_t>(n) * n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			a[static_cast<size_t>(i) * n + j] = i == j ? n : 1.0 / (1 + i + j);
	auto t0 = std::chrono::steady_clock::now();
	// LU factorisation (diagonally dominant: no pivoting needed), 2n^3/3 flops.
	for (int k = 0; k < n; k++)
		for (int i = k + 1; i < n; i++) {
			double l = a[static_cast<size_t>(i) * n + k] /=
				a[static_cast<size_t>(k) * n + k];
			double *ri = &a[static_cast<size_t>(i) * n],
			       *rk = &a[static_cast<size_t>(k) * n];
			for (int j = k + 1; j < n; j++)
				ri[j] -= l * rk[j];
		}
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	volatile double sink = a[static_cast<size_t>(n) * n - 1];
	(void)sink;
	return 2.0 * n * n * n / 3.0 / std::max(s, 1e-9) / 1e6;
}

} // namespace hpclb
