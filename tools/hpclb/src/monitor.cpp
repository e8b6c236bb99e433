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
#include <time.h>
#include <unistd.h>

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

double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
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

Monitor::Monitor(double period, std::vector<int> cpus, MonitorPaths paths)
    : period_(period), cpus_(std::move(cpus)), paths_(std::move(paths))
{
	if (!(period >= 0.001 && period <= 60))
		throw Error("monitor period must be in [0.001, 60] s, not " +
			    std::to_string(period));
	first_ = last_ = sample(); // bad sources fail here, before any thread
	mem_min_ = last_.mem;
	count_ = 1;
	running_ = true;
	th_ = std::thread([this] { run(); });
}

Monitor::~Monitor()
{
	stop();
}

void Monitor::stop()
{
	{
		std::lock_guard l(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	if (th_.joinable())
		th_.join();
}

bool Monitor::running() const
{
	std::lock_guard l(mu_);
	return running_;
}

size_t Monitor::samples() const
{
	std::lock_guard l(mu_);
	return count_;
}

bool Monitor::wait_samples(size_t n, double timeout) const
{
	std::unique_lock l(mu_);
	return cv_.wait_for(l, std::chrono::duration<double>(timeout), [&] {
		return count_ >= n || !running_;
	}) && count_ >= n;
}

double clock_seconds(clockid_t clk)
{
	timespec ts{};
	clock_gettime(clk, &ts);
	return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Monitor::Sample Monitor::sample() const
{
	Sample s;
	s.t = now_s();
	s.cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
	s.idle = read_cpu_times(cpus_, slurp(paths_.stat.c_str())).idle_ticks;
	s.mem = read_mem_available(slurp(paths_.meminfo.c_str()));
	for (const auto &d : read_net_dev(slurp(paths_.net_dev.c_str())))
		s.packets[d.name] = d.rx_packets + d.tx_packets;
	return s;
}

void Monitor::run()
{
	std::unique_lock l(mu_);
	while (!cv_.wait_for(l, std::chrono::duration<double>(period_), [&] { return stop_; })) {
		l.unlock();
		Sample s;
		std::string err;
		try {
			s = sample();
		} catch (const std::exception &e) {
			err = e.what();
		}
		l.lock();
		if (!err.empty()) {
			error_ = "monitor: " + err;
			break;
		}
		last_ = std::move(s);
		mem_min_ = std::min(mem_min_, last_.mem);
		count_++;
		in_window_++;
		cv_.notify_all();
	}
	running_ = false;
	cv_.notify_all();
}

MonitorAggregate Monitor::take()
{
	std::lock_guard l(mu_);
	if (!error_.empty())
		throw Error(error_);
	if (in_window_ < 2)
		return prev_;
	MonitorAggregate a;
	a.samples = in_window_;
	a.window = last_.t - first_.t;
	const double w = std::max(a.window, 1e-9);
	const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
	a.cpu_util = std::max(0.0, last_.cpu - first_.cpu) / w;
	a.cpu_idle = static_cast<double>(last_.idle >= first_.idle ? last_.idle - first_.idle : 0) /
		     hz / w;
	a.mem_available = last_.mem;
	a.mem_available_min = mem_min_;
	for (const auto &[name, pk] : last_.packets) {
		auto it = first_.packets.find(name);
		uint64_t before = it == first_.packets.end() ? pk : it->second;
		a.interfaces.push_back(
			{name, 0, static_cast<double>(pk >= before ? pk - before : 0) / w});
	}
	first_ = last_;
	in_window_ = 1;
	mem_min_ = last_.mem;
	prev_ = a;
	return a;
}

} // namespace hpclb
