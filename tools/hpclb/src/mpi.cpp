// The MPI step function: gather on rank 0 of a duplicate communicator, one
// deterministic plan, broadcast (see hpclb_mpi.h for why one decider).
#include "hpclb/hpclb.hpp"
#include "hpclb/hpclb_mpi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>

namespace hpclb
{
void set_last_error(const std::string &what); // capi.cpp
DampingParams damping_from_c(const hpclb_damping *d);
void damping_to_c(const DampingParams &p, hpclb_damping *d);
} // namespace hpclb

namespace
{
struct ErrorSink {
	void operator=(const std::string &s) { hpclb::set_last_error(s); }
} mpi_error;

struct UnitRec {
	int64_t id;
	double load;
	uint64_t bytes;
};
struct RankRec {
	double freq, background, cpu;
	// DRUM (§3.2-3.3): b_n, u_n and i_n (CPUs), CAF (packets/s), s (MB/s).
	double mflops, util, idle, caf, ifspeed;
	double mem;   // MemAvailable (bytes) from the monitor, 0 without one
	int cores;    // cores of its node (hwloc)
	int samples;  // monitor samples in this period (0: step counters used)
	double share; // the CPU share it had over the period (cpu_share), 1 when f_p was
		      // re-measured
};

// f_p: the refinement paper's loop (Figure 2) for `seconds` of wall time,
// iterations / wall time, so a CPU quota's throttling and what other
// processes take count, as they do for the tasks.
double measure_speed(double seconds)
{
	uint64_t iters = 0;
	const double t0 = MPI_Wtime();
	double t = t0;
	while (t - t0 < seconds) {
		(void)hpclb::speed_loop(100000);
		iters += 100000;
		t = MPI_Wtime();
	}
	return static_cast<double>(iters) / (t - t0);
}

double thread_cpu_seconds()
{
	return hpclb::clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

// f_p as the CPU's own speed: the same loop for `seconds` of this thread's
// CPU time, iterations / CPU second (at most 10 x `seconds` of wall time).
// What a quota, a busy neighbour or other processes take is not in it: it
// is the CPU share of each period (hpclb::cpu_share), measured again at
// every step. A wall-time f_p measured once keeps the interference of the
// moment it was measured for the whole run (and the share would count it a
// second time).
double measure_cpu_speed(double seconds)
{
	uint64_t iters = 0;
	const double c0 = thread_cpu_seconds(), w0 = MPI_Wtime();
	double c = c0;
	while (c - c0 < seconds && MPI_Wtime() - w0 < 10 * seconds) {
		(void)hpclb::speed_loop(20000);
		iters += 20000;
		c = thread_cpu_seconds();
	}
	return static_cast<double>(iters) / std::max(c - c0, 1e-9);
}

// The name of this rank's computing node: $HPCLB_HOST when set (emulated
// nodes that share one kernel, e.g. the namespace cluster), else the
// processor name of the first rank of its shared-memory group
// (MPI_COMM_TYPE_SHARED), so ranks that share a node share a name.
std::string host_name(MPI_Comm local)
{
	char name[MPI_MAX_PROCESSOR_NAME + 1] = {};
	if (const char *h = std::getenv("HPCLB_HOST"); h && *h)
		std::snprintf(name, sizeof name, "%s", h);
	else {
		int len = 0;
		MPI_Get_processor_name(name, &len);
		MPI_Bcast(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, local);
	}
	return name;
}

// Packets in + out on this namespace's interfaces but lo, and the speed of
// the first one (/sys/class/net/IF/speed, Mb/s; 1000 when unknown), MB/s.
std::pair<uint64_t, double> net_counters()
{
	uint64_t pk = 0;
	double speed = 0;
	for (const auto &d : hpclb::read_net_dev()) {
		if (d.name == "lo")
			continue;
		pk += d.rx_packets + d.tx_packets;
		if (speed == 0) {
			std::FILE *f =
				std::fopen(("/sys/class/net/" + d.name + "/speed").c_str(), "r");
			long mbit = -1;
			if (f) {
				if (std::fscanf(f, "%ld", &mbit) != 1)
					mbit = -1;
				std::fclose(f);
			}
			speed = (mbit > 0 ? static_cast<double>(mbit) : 1000.0) / 8;
		}
	}
	return {pk, speed > 0 ? speed : 125.0};
}

double cpu_seconds()
{
	return hpclb::clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

std::vector<int> my_cpus()
{
	cpu_set_t set;
	std::vector<int> out;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				out.push_back(i);
	return out;
}
} // namespace

struct hpclb_ctx {
	MPI_Comm comm = MPI_COMM_NULL;
	int rank = 0, size = 1, mode = 0, local_ranks = 1;
	double epsilon = 0.02, dump_rate = 100e6, freq = 1;
	// Rank 0: the damping every plan goes through (hpclb::Damper).
	hpclb::Damper damper;
	hpclb::ShareEstimator share; // the CPU share, measured over the periods
	std::vector<UnitRec> units;
	std::vector<int64_t> peers; // this period's graph: id, n, then n peer ids, ...
	std::vector<hpclb_move> moves;
	std::vector<double> psi_acc; // rank 0: accumulated psi per rank
	std::vector<int> cpus;
	double t_last = 0, cpu_last = 0, wait = 0, mflops = 0;
	uint64_t net_last = 0;
	int steps = 0;
	bool wait_known = false;
	hpclb::CpuTimes idle_last;
	// DRUM over the ranks (rank 0 holds the tree and the mapping).
	std::string host;
	int cores = 1;
	std::unique_ptr<hpclb::MachineTree> tree;
	std::vector<int> leaf_of_rank;
	std::unique_ptr<hpclb::Monitor> monitor;
	double remeasure = 0, speed_scale = 1;
};

namespace
{
// Rank 0 ran `what` (it may throw); every rank learns whether it failed and
// why. Returns true on success.
template <class F> bool decided_on_root(hpclb_ctx *c, F what)
{
	std::string err;
	int ok = 1;
	if (!c->rank) {
		try {
			what();
		} catch (const std::exception &e) {
			ok = 0;
			err = e.what();
		}
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, c->comm);
	if (ok)
		return true;
	int len = static_cast<int>(err.size());
	MPI_Bcast(&len, 1, MPI_INT, 0, c->comm);
	err.resize(static_cast<size_t>(len));
	MPI_Bcast(err.data(), len, MPI_CHAR, 0, c->comm);
	mpi_error = err;
	return false;
}

// Every rank's `mine` on rank 0, in rank order, and how many elements each
// rank gave (both empty on the other ranks). Collective.
template <class T>
std::pair<std::vector<T>, std::vector<int>> gather_on_root(hpclb_ctx *c, const std::vector<T> &mine)
{
	static_assert(std::is_trivially_copyable_v<T>);
	const int n = static_cast<int>(mine.size() * sizeof(T));
	std::vector<int> counts(c->rank ? 0 : c->size), displs(c->rank ? 0 : c->size);
	MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, c->comm);
	std::vector<T> all;
	if (!c->rank) {
		size_t tot = 0;
		for (int p = 0; p < c->size; p++) {
			displs[p] = static_cast<int>(tot);
			tot += static_cast<size_t>(counts[p]);
		}
		all.resize(tot / sizeof(T));
	}
	MPI_Gatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0,
		    c->comm);
	for (auto &k : counts)
		k /= static_cast<int>(sizeof(T));
	return {std::move(all), std::move(counts)};
}

std::vector<std::string> gather_hosts(hpclb_ctx *c)
{
	std::vector<char> mine(MPI_MAX_PROCESSOR_NAME + 1, 0), all;
	std::snprintf(mine.data(), mine.size(), "%s", c->host.c_str());
	if (!c->rank)
		all.resize(mine.size() * static_cast<size_t>(c->size));
	MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
		   static_cast<int>(mine.size()), MPI_CHAR, 0, c->comm);
	std::vector<std::string> out;
	for (int p = 0; c->rank == 0 && p < c->size; p++)
		out.emplace_back(&all[mine.size() * static_cast<size_t>(p)]);
	return out;
}
} // namespace

extern "C" {

hpclb_ctx *hpclb_mpi_new(MPI_Comm comm, int mode)
{
	auto *c = new hpclb_ctx;
	MPI_Comm_dup(comm, &c->comm);
	MPI_Comm_rank(c->comm, &c->rank);
	MPI_Comm_size(c->comm, &c->size);
	c->mode = mode;
	int ok = mode >= HPCLB_MODE_NONE && mode <= HPCLB_MODE_DRUM, all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm);
	if (!all) {
		mpi_error = "hpclb_mpi_new: unknown mode " + std::to_string(mode);
		MPI_Comm_free(&c->comm);
		delete c;
		return nullptr;
	}
	// Ranks sharing this node's CPUs (for the per-rank share of idle time).
	MPI_Comm local;
	MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
	MPI_Comm_size(local, &c->local_ranks);
	c->host = host_name(local);
	MPI_Comm_free(&local);
	// f_p from the refinement paper's loop (Figure 2), one rank at a time
	// (ranks sharing CPUs must not slow each other's measure), over 0.25 s of
	// CPU time: iterations / CPU second, the CPU's own speed. A quota's
	// throttling and what other processes take are in the CPU share of each
	// LB period instead (they change while the application runs).
	for (int p = 0; p < c->size; p++) {
		if (p == c->rank) {
			c->freq = measure_cpu_speed(0.25);
			// DRUM's static capability: the dense kernel's MFLOPS (§3.2).
			if (c->mode == HPCLB_MODE_DRUM)
				c->mflops = hpclb::dense_mflops(160);
		}
		MPI_Barrier(c->comm);
	}
	c->psi_acc.assign(static_cast<size_t>(c->size), 0);
	c->cpus = my_cpus();
	if (c->mode == HPCLB_MODE_DRUM) {
		// The discovered tree: one computing node per host name, hwloc
		// for the cores inside; the monitors start as a thread.
		std::string err;
		try {
			c->cores = hpclb::node_cores();
			c->monitor = std::make_unique<hpclb::Monitor>(0.1, c->cpus);
		} catch (const std::exception &e) {
			err = e.what();
		}
		int ok = err.empty(), all_ok = 0;
		MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c->comm);
		auto hosts = gather_hosts(c);
		if (!all_ok || !decided_on_root(c, [&] {
			    c->tree = std::make_unique<hpclb::MachineTree>(
				    hpclb::tree_from_hosts(hosts));
			    c->leaf_of_rank = hpclb::map_ranks(*c->tree, hosts);
		    })) {
			mpi_error = "hpclb_mpi_new: " +
				    (all_ok        ? std::string(hpclb_last_error())
				     : err.empty() ? "a rank could not start its monitors"
						   : err);
			c->monitor.reset();
			MPI_Comm_free(&c->comm);
			delete c;
			return nullptr;
		}
	}
	MPI_Barrier(c->comm);
	c->t_last = MPI_Wtime();
	c->cpu_last = cpu_seconds();
	c->idle_last = hpclb::read_cpu_times(c->cpus);
	c->net_last = net_counters().first;
	return c;
}

void hpclb_mpi_free(hpclb_ctx *c)
{
	if (!c)
		return;
	c->monitor.reset(); // stops and joins the monitor thread
	MPI_Comm_free(&c->comm);
	delete c;
}

int hpclb_mpi_set_epsilon(hpclb_ctx *c, double f)
{
	if (!(f >= 0 && f < 10)) {
		mpi_error = "epsilon must be a fraction of Tk_avg in [0, 10)";
		return -1;
	}
	c->epsilon = f;
	return 0;
}

double hpclb_mpi_speed(const hpclb_ctx *c)
{
	return c->freq;
}

int hpclb_mpi_set_speed(hpclb_ctx *c, double f)
{
	if (!(f > 0)) {
		mpi_error = "speed must be > 0";
		return -1;
	}
	// A later measure (hpclb_mpi_set_remeasure) keeps the same ratio.
	c->speed_scale *= f / c->freq;
	c->freq = f;
	return 0;
}

int hpclb_mpi_set_min_gain(hpclb_ctx *c, double fraction)
{
	auto p = c->damper.params();
	p.min_gain = fraction;
	try {
		c->damper.set_params(p);
	} catch (const std::exception &e) {
		mpi_error = e.what();
		return -1;
	}
	return 0;
}

int hpclb_mpi_set_damping(hpclb_ctx *c, const hpclb_damping *d)
{
	try {
		c->damper.set_params(hpclb::damping_from_c(d));
	} catch (const std::exception &e) {
		mpi_error = std::string("hpclb_mpi_set_damping: ") + e.what();
		return -1;
	}
	return 0;
}

int hpclb_mpi_damping(const hpclb_ctx *c, hpclb_damping *d)
{
	if (!d) {
		mpi_error = "hpclb_mpi_damping: no place for the parameters";
		return -1;
	}
	hpclb::damping_to_c(c->damper.params(), d);
	return 0;
}

int hpclb_mpi_set_remeasure(hpclb_ctx *c, double seconds)
{
	if (!(seconds == 0 || (seconds >= 0.001 && seconds <= 10))) {
		mpi_error = "re-measure time must be 0 (off) or in [0.001, 10] s";
		return -1;
	}
	c->remeasure = seconds;
	return 0;
}

int hpclb_mpi_set_monitor_period(hpclb_ctx *c, double seconds)
{
	try {
		auto m = std::make_unique<hpclb::Monitor>(seconds, c->cpus);
		c->monitor = std::move(m); // the old thread (if any) stops and joins
	} catch (const std::exception &e) {
		mpi_error = std::string("hpclb_mpi_set_monitor_period: ") + e.what();
		return -1;
	}
	return 0;
}

size_t hpclb_mpi_monitor_samples(const hpclb_ctx *c)
{
	return c->monitor ? c->monitor->samples() : 0;
}

int hpclb_mpi_set_machine(hpclb_ctx *c, const char *xml_path)
{
	int ok = c->mode == HPCLB_MODE_DRUM && xml_path && *xml_path, all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm);
	if (!all) {
		mpi_error = "hpclb_mpi_set_machine: needs DRUM mode and an XML file on every rank";
		return -1;
	}
	auto hosts = gather_hosts(c);
	std::unique_ptr<hpclb::MachineTree> tree;
	std::vector<int> leaf;
	if (!decided_on_root(c, [&] {
		    tree = std::make_unique<hpclb::MachineTree>(
			    hpclb::MachineTree::load_xml(xml_path));
		    leaf = hpclb::map_ranks(*tree, hosts);
	    })) {
		mpi_error = std::string("hpclb_mpi_set_machine: ") + hpclb_last_error();
		return -1;
	}
	c->tree = std::move(tree);
	c->leaf_of_rank = std::move(leaf);
	return 0;
}

int hpclb_mpi_set_dump_rate(hpclb_ctx *c, double r)
{
	if (!(r > 0) || !std::isfinite(r)) {
		mpi_error = "dump rate must be > 0 bytes/s";
		return -1;
	}
	auto p = c->damper.params();
	p.move_rate = r; // the damping weighs the moves at the same rate
	c->damper.set_params(p);
	c->dump_rate = r;
	return 0;
}

int hpclb_mpi_unit(hpclb_ctx *c, int64_t id, double load, uint64_t bytes)
{
	if (!(load >= 0)) {
		mpi_error = "unit " + std::to_string(id) + ": load must be >= 0";
		return -1;
	}
	c->units.push_back({id, load, bytes});
	return 0;
}

int hpclb_mpi_unit_peers(hpclb_ctx *c, int64_t id, const int64_t *peers, size_t n)
{
	if (n && !peers) {
		mpi_error = "unit " + std::to_string(id) + ": " + std::to_string(n) +
			    " peers and no array";
		return -1;
	}
	c->peers.push_back(id);
	c->peers.push_back(static_cast<int64_t>(n));
	c->peers.insert(c->peers.end(), peers, peers + n);
	return 0;
}

int hpclb_mpi_wait(hpclb_ctx *c, double s)
{
	if (!(s >= 0)) {
		mpi_error = "wait time must be >= 0";
		return -1;
	}
	c->wait += s;
	c->wait_known = true;
	return 0;
}

MPI_Comm hpclb_mpi_comm(const hpclb_ctx *c)
{
	return c->comm;
}

size_t hpclb_mpi_moves(const hpclb_ctx *c, const hpclb_move **m)
{
	if (m)
		*m = c->moves.data();
	return c->moves.size();
}

int hpclb_mpi_busy(hpclb_ctx *c, double wall, double cpu)
{
	try {
		c->share.busy(wall, cpu);
	} catch (const std::exception &e) {
		mpi_error = e.what();
		return -1;
	}
	return 0;
}

double hpclb_thread_seconds(void)
{
	return hpclb::clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

int hpclb_mpi_step(hpclb_ctx *c, double *before, double *after)
{
	// This rank's measures over the period: T_lb, its own CPU time (an MPI
	// rank busy-waits inside MPI, so its whole CPU time is its own, not
	// background) and its share of the idle time of its CPUs (/proc/stat).
	const double now = MPI_Wtime(), cpu = cpu_seconds();
	auto idle = hpclb::read_cpu_times(c->cpus);
	const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
	const double t_lb = now - c->t_last;
	const double ncpu = static_cast<double>(std::max<size_t>(1, c->cpus.size()));
	const double t_idle = static_cast<double>(idle.idle_ticks - c->idle_last.idle_ticks) / hz /
			      static_cast<double>(c->local_ranks);
	// Eq. 2 with the CPU time this rank could have had (its CPUs' time over
	// the ranks that share them).
	const double avail = t_lb * std::min(1.0, ncpu / c->local_ranks);
	double task_time = 0;
	for (const auto &u : c->units)
		task_time += u.load;
	const auto net = net_counters();
	const double per = std::max(t_lb, 1e-6);
	// f_p again at every LB period (off by default): every rank at once, as
	// the application runs.
	if (c->remeasure > 0)
		c->freq = measure_speed(c->remeasure) * c->speed_scale;
	RankRec me{c->freq,
		   std::max(0.0, avail - (cpu - c->cpu_last) - t_idle),
		   cpu - c->cpu_last,
		   c->mflops,
		   (cpu - c->cpu_last) / per,
		   t_idle / per,
		   static_cast<double>(net.first - c->net_last) / per,
		   net.second,
		   0,
		   c->cores,
		   0,
		   1};
	// The monitor thread's aggregates over the period, when it runs: CPU
	// used by this rank, idle CPUs of its node (this rank's share), memory,
	// packets of the interfaces but lo.
	if (c->monitor) {
		try {
			auto a = c->monitor->take();
			if (a.samples >= 2) {
				me.util = a.cpu_util;
				me.idle = a.cpu_idle / c->local_ranks;
				double caf = 0;
				for (const auto &i : a.interfaces)
					if (i.name != "lo")
						caf += i.caf;
				me.caf = caf;
				me.mem = static_cast<double>(a.mem_available);
				me.samples = static_cast<int>(a.samples);
			}
		} catch (const std::exception &e) {
			std::fprintf(stderr, "hpclb: rank %d: %s; step counters used\n", c->rank,
				     e.what());
			c->monitor.reset();
		}
	}
	c->net_last = net.first;
	// f_p is the speed of the CPU when the rank has it to itself; what the
	// rank had of it over the period (a quota, a busy neighbour, other
	// processes) scales it: from the busy time the application reported
	// (hpclb_mpi_busy), else from the period's CPU time, smoothed over the
	// periods (hpclb::ShareEstimator). A re-measured f_p has it already.
	c->share.period(cpu - c->cpu_last, avail, c->wait_known ? c->wait : -1, task_time, t_lb);
	if (c->remeasure <= 0)
		me.share = c->share.share();
	if (c->wait_known)
		me.background = hpclb::background_load(t_lb, task_time, c->wait);
	c->wait = 0;
	c->wait_known = false;

	std::vector<RankRec> ranks(c->rank ? 0 : c->size);
	MPI_Gather(&me, sizeof me, MPI_BYTE, ranks.data(), sizeof me, MPI_BYTE, 0, c->comm);
	auto [all, counts] = gather_on_root(c, c->units);
	c->units.clear();
	// The communication graph, when the application gives one
	// (hpclb_mpi_unit_peers): 8 bytes per edge.
	auto allpeers = gather_on_root(c, c->peers).first;
	c->peers.clear();

	// Rank 0 decides: [status, n moves, imbalance before/after] then moves.
	double head[4] = {0, 0, 1, 1};
	std::string err;
	c->moves.clear();
	if (!c->rank) {
		try {
			hpclb::Peers graph;
			for (size_t at = 0; at + 1 < allpeers.size();) {
				const int64_t id = allpeers[at], cnt = allpeers[at + 1];
				if (cnt < 0 || at + 2 + static_cast<size_t>(cnt) > allpeers.size())
					throw hpclb::Error("unit " + std::to_string(id) +
							   ": bad peer list");
				auto &g = graph[id];
				g.insert(g.end(),
					 allpeers.begin() + static_cast<std::ptrdiff_t>(at + 2),
					 allpeers.begin() +
						 static_cast<std::ptrdiff_t>(
							 at + 2 + static_cast<size_t>(cnt)));
				at += 2 + static_cast<size_t>(cnt);
			}
			const hpclb::Peers *peers = graph.empty() ? nullptr : &graph;
			std::vector<hpclb::Task> tasks;
			size_t k = 0;
			for (int p = 0; p < c->size; p++)
				for (int j = 0; j < counts[p]; j++, k++)
					tasks.push_back({all[k].id, all[k].load, p, all[k].bytes});
			std::vector<hpclb::Vcpu> v;
			std::vector<double> interval(static_cast<size_t>(c->size), 0);
			for (const auto &t : tasks)
				interval[static_cast<size_t>(t.proc)] += t.cpu_time;
			double fmax = 0;
			// The refinement's speeds are the effective ones over the period
			// (f_p times the CPU share the rank had): a t_i measured while a
			// neighbour took half the CPU then counts the work it did, not
			// twice that, and the node's share of the next period is what it
			// can do at its present speed.
			for (const auto &r : ranks) {
				v.push_back({r.freq * r.share, r.background});
				fmax = std::max(fmax, r.freq * r.share);
			}
			if (std::getenv("HPCLB_DEBUG"))
				for (int p = 0; p < c->size; p++)
					std::fprintf(stderr,
						     "hpclb: rank %d freq %.4g share %.3f "
						     "background %.4g s "
						     "cpu %.4g s tasks %.4g s\n",
						     p, ranks[p].freq, ranks[p].share,
						     ranks[p].background, ranks[p].cpu,
						     interval[p]);
			// Imbalance of the measured loads (max/avg), before.
			auto ps = hpclb::psi(interval);
			double avg = 0, mx = 0;
			for (double x : interval) {
				avg += x;
				mx = std::max(mx, x);
			}
			avg /= c->size;
			head[2] = avg > 0 ? mx / avg : 1;
			head[3] = head[2];
			// Every method's plan goes through one damping: a plan only
			// when the same rank was overloaded over several periods, made
			// from the loads averaged over them, cut to a move budget, not
			// undoing the last plan unless the imbalance reversed, and
			// only when its saving is worth its moves (hpclb::Damper). The
			// speeds it predicts the moved loads with are the effective
			// ones, as the refinement's.
			bool go = false;
			std::vector<hpclb::Task> sm;
			if (c->mode != HPCLB_MODE_NONE) {
				std::vector<double> eff;
				for (const auto &r : ranks)
					eff.push_back(r.freq * r.share);
				go = c->damper.observe(tasks, eff);
				if (go)
					sm = c->damper.smoothed();
			}
			std::vector<hpclb::Move> plan;
			// Algorithm 1 with tolerance epsilon of the average load, on the
			// smoothed loads; its moves are the plan.
			auto refine_plan = [&](const std::vector<hpclb::Vcpu> &speeds) {
				auto probe = hpclb::refine(speeds, sm, 0);
				auto r = hpclb::refine(speeds, sm, c->epsilon * probe.avg, peers);
				for (size_t i = 0; i < sm.size(); i++)
					if (r.proc[i] != sm[i].proc)
						plan.push_back({sm[i].id, sm[i].proc, r.proc[i]});
			};
			if (c->mode == HPCLB_MODE_REFINE && go) {
				refine_plan(v);
			} else if (c->mode == HPCLB_MODE_DRUM) {
				// DRUM's shares (one computing node per rank), turned into
				// a placement by the refinement: speeds proportional to the
				// shares and no background (the model already has u + i).
				// The machine tree (XML or discovered), its computing
				// nodes filled from their ranks, at every step (the
				// monitors' view); placed only when the damping allows.
				auto tree = *c->tree;
				std::vector<hpclb::RankMeasure> rm;
				std::vector<int> cores;
				for (const auto &r : ranks) {
					rm.push_back({r.mflops, r.util, r.idle, r.caf, r.ifspeed});
					cores.push_back(r.cores);
				}
				hpclb::fill_from_ranks(tree, c->leaf_of_rank, rm, cores);
				// w_dynamic: 0 before any monitoring, then up by 0.1 per
				// step, bounded at 0.5 so the benchmark always counts (§3.3.1).
				tree.compute({std::min(0.5, 0.1 * c->steps)});
				auto shares = hpclb::rank_shares(tree, c->leaf_of_rank);
				if (std::getenv("HPCLB_DEBUG"))
					for (int p = 0; p < c->size; p++)
						std::fprintf(stderr,
							     "hpclb: drum rank %d node %d (%s) "
							     "share %.4g "
							     "u %.3g i %.3g caf %.3g mem %.3g MB "
							     "samples "
							     "%d\n",
							     p, c->leaf_of_rank[p],
							     tree.node(c->leaf_of_rank[p])
								     .description.c_str(),
							     shares[p], ranks[p].util,
							     ranks[p].idle, ranks[p].caf,
							     ranks[p].mem / 1e6, ranks[p].samples);
				if (go) {
					std::vector<hpclb::Vcpu> dv;
					for (int p = 0; p < c->size; p++)
						dv.push_back(
							{std::max(1e-9, shares[p] * c->size), 0});
					refine_plan(dv);
				}
			} else if (c->mode == HPCLB_MODE_CONTAINER) {
				for (int p = 0; p < c->size; p++)
					c->psi_acc[p] += ps[p]; // accumulated imbalance
				if (go) {
					std::vector<double> smi(static_cast<size_t>(c->size), 0);
					for (const auto &t : sm)
						smi[static_cast<size_t>(t.proc)] += t.cpu_time;
					std::vector<hpclb::Host> h;
					for (int p = 0; p < c->size; p++)
						h.push_back({ranks[p].freq * ranks[p].share / fmax,
							     smi[p], c->psi_acc[p]});
					std::vector<hpclb::Container> ct;
					for (const auto &t : sm)
						ct.push_back({t.id, t.proc, t.cpu_time, t.bytes});
					for (const auto &m :
					     hpclb::migration_plan(h, ct, {c->dump_rate}).moves)
						plan.push_back(m);
				}
			}
			if (go) {
				for (const auto &m : c->damper.admit(plan))
					c->moves.push_back({m.id, m.from, m.to});
				if (!c->moves.empty()) {
					head[3] = c->damper.predicted();
					if (c->mode == HPCLB_MODE_CONTAINER)
						std::fill(c->psi_acc.begin(), c->psi_acc.end(), 0);
				}
			}
			if (std::getenv("HPCLB_DEBUG") && c->mode != HPCLB_MODE_NONE)
				std::fprintf(
					stderr,
					"hpclb: damping: max/avg %.3f, rank %d overloaded %d "
					"period(s) in a row (a plan needs %d), plan %zu move(s), "
					"kept %zu\n",
					c->damper.imbalance(), c->damper.overloaded(),
					c->damper.streak(), c->damper.required(), plan.size(),
					c->moves.size());
			head[1] = static_cast<double>(c->moves.size());
		} catch (const std::exception &e) {
			head[0] = 1;
			err = e.what();
			c->moves.clear();
		}
	}
	MPI_Bcast(head, 4, MPI_DOUBLE, 0, c->comm);
	if (head[0] != 0) {
		// Everyone learns why the step failed.
		int len = static_cast<int>(err.size());
		MPI_Bcast(&len, 1, MPI_INT, 0, c->comm);
		err.resize(static_cast<size_t>(len));
		MPI_Bcast(err.data(), len, MPI_CHAR, 0, c->comm);
		mpi_error = "hpclb_mpi_step: " + err;
		return -1;
	}
	c->steps++;
	c->moves.resize(static_cast<size_t>(head[1]));
	MPI_Bcast(c->moves.data(), static_cast<int>(c->moves.size() * sizeof(hpclb_move)), MPI_BYTE,
		  0, c->comm);
	// The next period starts when this step ends: the time ranks wait for
	// each other inside the step is in no period (it is not background).
	c->t_last = MPI_Wtime();
	c->cpu_last = cpu_seconds();
	c->idle_last = hpclb::read_cpu_times(c->cpus);
	if (before)
		*before = head[2];
	if (after)
		*after = head[3];
	return 0;
}

// All the moves from one rank to another travel as one message (tag 1),
// announced by its length (tag 0): each unit's length then its bytes, in the
// plan's order. One message per pair of ranks instead of two per unit: a
// rank on a CPU quota answers MPI's handshake only when it runs again (up to
// the quota's period later), so a handshake per unit made a step's moves
// cost tens of milliseconds each.
int hpclb_mpi_exchange(hpclb_ctx *c, hpclb_get_fn get, hpclb_put_fn put, void *arg)
{
	std::map<int, std::vector<char>> out; // destination -> packed units
	for (const auto &m : c->moves) {
		if (m.from != c->rank)
			continue;
		size_t len = 0;
		const void *buf = get(m.id, &len, arg);
		auto &o = out[m.to];
		const uint64_t l = len;
		const size_t at = o.size();
		o.resize(at + sizeof l + len);
		std::memcpy(o.data() + at, &l, sizeof l);
		if (len)
			std::memcpy(o.data() + at + sizeof l, buf, len);
	}
	std::vector<MPI_Request> reqs;
	std::vector<uint64_t> totals;
	totals.reserve(out.size());
	for (auto &[to, o] : out) {
		totals.push_back(o.size());
		reqs.emplace_back();
		MPI_Isend(&totals.back(), 1, MPI_UINT64_T, to, 0, c->comm, &reqs.back());
		reqs.emplace_back();
		MPI_Isend(o.data(), static_cast<int>(o.size()), MPI_BYTE, to, 1, c->comm,
			  &reqs.back());
	}
	// The sources, in the order of their first move to this rank.
	std::vector<int> from;
	for (const auto &m : c->moves)
		if (m.to == c->rank && std::find(from.begin(), from.end(), m.from) == from.end())
			from.push_back(m.from);
	std::vector<char> in;
	for (int src : from) {
		uint64_t total = 0;
		MPI_Recv(&total, 1, MPI_UINT64_T, src, 0, c->comm, MPI_STATUS_IGNORE);
		in.resize(total);
		MPI_Recv(in.data(), static_cast<int>(total), MPI_BYTE, src, 1, c->comm,
			 MPI_STATUS_IGNORE);
		size_t at = 0;
		for (const auto &m : c->moves) {
			if (m.to != c->rank || m.from != src)
				continue;
			uint64_t l = 0;
			if (at + sizeof l > total)
				break;
			std::memcpy(&l, in.data() + at, sizeof l);
			at += sizeof l;
			if (at + l > total)
				break;
			put(m.id, in.data() + at, l, arg);
			at += l;
		}
	}
	MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
	// Moving is the plan's cost, not background load: the period starts now.
	c->t_last = MPI_Wtime();
	c->cpu_last = cpu_seconds();
	c->idle_last = hpclb::read_cpu_times(c->cpus);
	return 0;
}
}
