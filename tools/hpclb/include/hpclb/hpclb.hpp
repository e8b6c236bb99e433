// libhpclb: cross-node rebalancing (C++ API).
//
// Four methods, each a pure decision function over plain data, so a plan
// depends only on its inputs (deterministic: ties are broken by ids):
//
//  * DRUM resource model (Faik et al., "A model for resource-aware load
//    balancing on heterogeneous clusters"): MachineTree, node power, H_cpu.
//  * Cloud-aware refinement (Gupta et al., "Improving HPC application
//    performance in cloud through dynamic load balancing", Algorithm 1):
//    refine().
//  * Container migration plan (Zhao et al., "Auto-tuning performance of MPI
//    parallel programs using resource management in container-based virtual
//    cloud", Algorithm 2): migration_plan(). Its Algorithm 1 (CPU weight per
//    container inside a host) is hpcd's weight mode (tools/hpcd).
//  * RUPER-LB (speed-based redistribution of iterations): RuperTask.
//
// Every input is validated; bad input throws hpclb::Error with a message
// that names the offending value, and changes nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace hpclb
{

struct Error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- DRUM ----

enum class NodeType { Network, Computing };

// One communication interface of a node (DRUM §3.2): speed s in MB/s and its
// communication activity factor CAF = lambda + mu (packets/s in + out).
struct Interface {
	std::string name;
	double speed_mbs = 0;
	double caf = 0;
};

struct MachineNode {
	int id = 0; // the XML "name"
	NodeType type = NodeType::Computing;
	std::string description;
	std::vector<int> children; // ids, in the file's order
	bool monitorable = true;
	// Capabilities of a computing node (DRUM §3.3.1): b_n, the benchmark's
	// MFLOPS; u_n, the CPU used by the job's processes and i_n, the idle
	// CPU, both in CPUs (1.0 = one whole CPU).
	double mflops = 0;
	double cpu_util = 0;
	double cpu_idle = 0;
	std::vector<Interface> interfaces;
	// Results of MachineTree::compute() (all normalised among siblings).
	double p = 0, c = 0, w_comm = 0, power = 0, share = 0;
};

// Weights of the processing power (DRUM §3.3.1): w_dynamic + w_static = 1.
struct PowerParams {
	double w_dynamic = 0; // 0 before any monitoring (the paper's rule)
};

// The machine tree: root -> network nodes -> computing nodes (DRUM §3).
class MachineTree
{
public:
	// The paper's XML format (Figure 2):
	//   <machinemodel numnode="N"><node type="NETWORK_NODE|COMPUTING_NODE"
	//   name="ID" description=".." childrenNum="K" children="a;b;"
	//   IsMonitorable="0|1" [mflops="B"] [ifspeed="MB/s"]/>...</machinemodel>
	// mflops and ifspeed are optional extensions (static capability and
	// interface speed). Throws Error on malformed XML, bad numbers, negative
	// capacities, unknown child ids, cycles, several parents or roots.
	static MachineTree parse_xml(std::string_view text);
	static MachineTree load_xml(const std::string &path);
	// A discovered tree: one network root, one computing node per name.
	static MachineTree flat(const std::vector<std::string> &hosts);

	std::string to_xml() const;
	int root() const { return root_; }
	const std::map<int, MachineNode> &nodes() const { return nodes_; }
	MachineNode &node(int id);
	const MachineNode &node(int id) const;
	// Computing nodes in depth-first order (children in file order).
	std::vector<int> leaves() const;
	// DRUM §3.3: power_n = w_comm*c_n + w_cpu*p_n per node, normalised among
	// siblings; share = product of the normalised powers from the root, so
	// the leaves' shares add up to 1.
	void compute(const PowerParams &pp);

private:
	void check() const;
	std::map<int, MachineNode> nodes_;
	int root_ = -1;
};

// c_n = (1/k) sum_i log(s_i) / (1 + CAF_i)      (DRUM §3.3.2)
double comm_power(const std::vector<Interface> &ifs);
// w_comm = 1 - 1/(1 + CAF_n), CAF_n the mean CAF of the interfaces (§3.3.2)
double comm_weight(const std::vector<Interface> &ifs);
// H_cpu = sqrt(sum_j (mean W - W_j)^2 / P), W_j = V_j / max V  (DRUM §4)
double h_cpu(const std::vector<double> &speeds);

// Work split: n units of work over nodes with the given shares, largest
// remainder rounding (the sum is exactly n; ties go to the lower index).
std::vector<uint64_t> split(uint64_t n, const std::vector<double> &shares);

// ------------------------------------------------ DRUM over MPI ranks ----

// What one rank measured (gathered on the deciding rank): b (MFLOPS of the
// dense kernel on one core), u (CPUs this rank used), i (its share of the
// idle CPUs of its node), CAF (packets/s in + out of its node's
// interfaces) and s (interface speed, MB/s).
struct RankMeasure {
	double mflops = 0, util = 0, idle = 0, caf = 0, ifspeed = 0;
};
// A tree discovered from the ranks' host names: one network root and one
// computing node per distinct host, in the order of the hosts' first rank.
MachineTree tree_from_hosts(const std::vector<std::string> &rank_hosts);
// The computing node of each rank: the leaf whose description is the
// rank's host name. Throws Error naming the host when a rank's host is no
// computing node of the tree, when two computing nodes have the same
// description, or when a computing node has no rank (its share of the
// work would go nowhere).
std::vector<int> map_ranks(const MachineTree &tree, const std::vector<std::string> &rank_hosts);
// Fills the computing nodes from their ranks' measures (DRUM §3.2): u_n is
// the sum of the ranks' u, i_n the sum of their shares of the idle CPU, b_n
// (unless the tree already gives one, e.g. from the XML's mflops) the mean
// of the ranks' MFLOPS times the cores the job can use there,
// min(cores, ranks) (cores from hwloc on that node), and the interface is
// the node's (its first rank's CAF and speed: all its ranks read the same
// counters).
void fill_from_ranks(MachineTree &tree, const std::vector<int> &leaf_of_rank,
		     const std::vector<RankMeasure> &ranks, const std::vector<int> &cores);
// Each rank's share of the work after compute(): its node's share split
// equally among the node's ranks (they share its cores). Adds up to 1.
std::vector<double> rank_shares(const MachineTree &tree, const std::vector<int> &leaf_of_rank);

// -------------------------------------------------------- refinement ----

// One VCPU (a rank) of the cloud-aware refinement (Gupta et al. §IV).
struct Vcpu {
	double freq = 1;       // f_p: speed from the Figure 2 loop (iterations/s)
	double background = 0; // O_p = T_lb - sum t_i - t_idle (seconds, >= 0)
};

struct Task {
	int64_t id = 0;
	double cpu_time = 0; // t_i, seconds during the last LB period
	int proc = 0;        // m_i^{k-1}: where it ran
	uint64_t bytes = 0;  // state size (for the migration plan)
};

struct RefineResult {
	std::vector<int> proc;       // m_i^k, index-aligned with the tasks
	std::vector<double> load;    // ticks per VCPU after the plan
	double avg = 0;              // Tk_avg (Eq. 1)
	std::vector<double> target;  // each VCPU's share: Tk_avg * f_p / mean(f)
	double imbalance_before = 0; // max/avg of the VCPUs' times (ticks / f_p) before
	double imbalance_after = 0;  // max/avg after
	size_t moves = 0;
};

// Eq. 2: background load of one VCPU over one LB period.
double background_load(double t_lb, double task_time, double t_idle);

// The share of its CPU a rank had over an LB period: its CPU time `cpu` over
// the time it could have run, `avail` less the time it waited in MPI `wait`
// (a rank that sleeps while it waits is not slow for it; one that busy-polls
// has its wait in `cpu` and is capped at 1). In (0, 1]; 1 without a period.
// f_p times this share is the rank's effective speed over the period.
double cpu_share(double cpu, double avail, double wait);

// The share of its CPU a rank has, measured period after period: f_p times
// share() is its effective speed. Two measures, the better one when it is
// reported:
//  * busy(wall, cpu): the rank ran its units for `wall` seconds and had its
//    CPU for `cpu` of them (its thread's CPU time). Over the units alone, so
//    it does not depend on what the rank does while it waits: a rank that
//    busy-polls in MPI under a CPU quota spends its quota polling, and the
//    period measure below then takes it for faster than it is. The periods
//    are weighted by their busy time (each period's sums count half at the
//    next), so a rank left with little work barely moves its share.
//  * otherwise cpu_share() of each period (process CPU time over the time it
//    could have run less its reported waits), half the last period and half
//    the ones before; not over the first period (start-up) nor over one whose
//    units took under a fifth of it (a few ms of CPU say nothing of the
//    speed, and a tiny share would keep an emptied rank empty for good).
// Once a rank has reported busy time, periods without it leave the share as
// it is. Bad input throws Error and changes nothing.
class ShareEstimator
{
public:
	void busy(double wall, double cpu);
	// The end of a period of t_lb seconds: the process's CPU time over it,
	// the time it could have run, its reported waits (< 0: none reported)
	// and its units' summed loads. Returns share().
	double period(double cpu, double avail, double wait, double task_time, double t_lb);
	double share() const { return share_ > 0 ? share_ : 1; } // in (0, 1]; 1 before any measure
	bool from_busy() const { return busy_mode_; }

private:
	double wall_ = 0, cpu_ = 0; // busy time of the present period
	double num_ = 0, den_ = 0;  // weighted sums of the past periods
	double share_ = 0;
	long periods_ = 0;
	bool busy_mode_ = false;
};

// Whether a refinement plan is worth its moves: it lowers max/avg from
// `before` to `after` by at least `min_gain` of `before`.
bool worth_moving(double before, double after, double min_gain);

// The application's communication graph, when it gives one: for a unit id,
// the units it exchanges data with (e.g. a stencil block's neighbours).
using Peers = std::map<int64_t, std::vector<int64_t>>;

// Algorithm 1. epsilon: permissible deviation from Tk_avg, in ticks (>= 0).
// With `peers`, the task a donor gives is, among those the receiver takes
// without going above its share, the one with the most peers on the
// receiver less those left on the donor (then the largest, then the
// highest id): the moved work stays next to its peers instead of becoming
// islands that each send their halo across (Charm++'s RefineCommLB does the
// same). Without, the largest that fits (the paper's getBestCoreAndTask).
// A peer or a unit of `peers` that is no task throws Error.
RefineResult refine(const std::vector<Vcpu> &vcpus, const std::vector<Task> &tasks, double epsilon,
		    const Peers *peers = nullptr);

// The paper's compute loop (Figure 2), `iter_block` iterations: the VCPU's
// "frequency" f_p in loop iterations per second.
double speed_loop(uint64_t iter_block);

// Seconds of clock `clk` (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, ...).
double clock_seconds(clockid_t clk);

// -------------------------------------------------- migration plan ----

struct Host {
	double ecu = 1;      // NumECU[k] = capacity[k]  (Eq. 1)
	double interval = 0; // interval_k: the host's execution time this period
	double psi = 0;      // psi_k: imbalance indicator, possibly accumulated
};

struct Container {
	int64_t id = 0;
	int host = 0;       // x_{i,j}: where it is
	double exe_t = 0;   // exeT[k,i]: execution time in the sliding window
	uint64_t bytes = 0; // memory to dump
};

struct Move {
	int64_t id;
	int from, to;
	bool operator==(const Move &) const = default;
};

struct MigrationPlan {
	std::vector<Move> moves;
	std::vector<double> usage; // u_i before (Eq. 3)
	double average_usage = 0;  // Eq. 4
	std::vector<int64_t> kept; // candidates that found no destination
};

struct PlanParams {
	double dump_rate = 10e6; // bytes/s: lambda(dump) = bytes / dump_rate (~1 s per 10 MB)
};

// psi_p = |interval_p - ALM| (Eq. 1), ALM the mean (Eq. 2).
std::vector<double> psi(const std::vector<double> &intervals);
// LIP = max_p psi_p / interval_p (Eq. 3).
double lip(const std::vector<double> &intervals);

// Algorithm 2 (migrationCandidates): sources, candidates, destinations.
MigrationPlan migration_plan(const std::vector<Host> &hosts,
			     const std::vector<Container> &containers, const PlanParams &pp = {});

// ------------------------------------------------------------- damping ----

// The damping every method's plan goes through over MPI (Damper): a plan is
// made only when the same rank was overloaded in `persistence` LB periods in
// a row, from the units' loads averaged over those periods; it is cut to a
// move budget, a unit is not sent back to where the last plan took it from
// unless the imbalance clearly reversed, and the plan is kept only when it
// shortens the slowest rank's time by `min_gain` and that saving over
// `horizon` periods exceeds the cost of the moves. On a balanced or noisy
// system it converges to doing nothing; a persistent imbalance is corrected
// within `persistence` periods per plan, at most a budget per plan. A plan
// that did not deliver what it predicted (the load changes faster than the
// plans follow it) makes the next one wait twice as long (backoff).
struct DampingParams {
	int persistence = 3;     // periods in a row a rank must be overloaded (>= 1)
	double threshold = 0.10; // overloaded: its time >= (1 + threshold) x the mean (>= 0)
	double min_gain = 0.05;  // the slowest rank's time must fall by this fraction, [0, 1)
	double max_move_fraction = 0.25; // at most this fraction of the units per plan, (0, 1]
	int64_t max_moves = std::numeric_limits<int64_t>::max(); // and at most this many (>= 1)
	double move_rate = 100e6; // bytes/s: a move costs bytes / move_rate seconds (> 0)
	int horizon = 10; // periods the saving of a plan is counted over against its cost (>= 1)
	// A plan that did not deliver (over the `persistence` periods after it,
	// the max/avg fell by less than half of what it predicted) doubles the
	// periods the next one needs, up to max_backoff x persistence (>= 1; 1:
	// never); a plan that delivered brings it back to `persistence`.
	int max_backoff = 8;
};
// Throws Error naming the bad field (e.g. a negative persistence, a zero budget).
void validate(const DampingParams &p);

class Damper
{
public:
	explicit Damper(const DampingParams &p = {}); // validated
	// New parameters (validated; nothing changes on error). The history is kept.
	void set_params(const DampingParams &p);
	const DampingParams &params() const { return p_; }
	// One LB period: the units where they ran, with their loads (seconds of
	// the period), and each rank's effective speed (> 0, any unit; only the
	// ratios count: a unit of load t moved from p to q is predicted to take
	// t * speed[p] / speed[q]). A rank's time is the sum of its units'
	// loads. Returns whether a plan may be made now: the rank with the
	// largest mean time over the last `persistence` periods was overloaded
	// in each of them (`required()` periods after a plan that did not
	// deliver). Bad input throws Error and changes nothing.
	bool observe(const std::vector<Task> &tasks, const std::vector<double> &speeds);
	// The last period's units (same order) with their loads as a plan should
	// see them. A rank's time is its units' mean time over the last
	// `required()` periods (those in which they ran on it); it is shared
	// among its units by their weights, each unit's weight being the least
	// load it had on that rank over the last max(required(), kWeightPeriods)
	// periods. A time-sliced rank (CPU quota, busy neighbour) is stopped
	// for milliseconds at a time, which only ever adds to the wall time of
	// the unit that runs across the stop: the rank's sum is right, the
	// single units' loads are not, and the least load removes those stops.
	std::vector<Task> smoothed() const;
	// Periods a unit's weight is taken over at least (when the window has them).
	static constexpr size_t kWeightPeriods = 3;
	// A method's plan (made from smoothed()) through the damping: empty unless
	// observe() just returned true; moves that send a unit back to where the
	// last admitted plan took it from are dropped unless that rank is now
	// below the mean and the unit's present rank overloaded; the rest, largest
	// first (ties by id), are kept while each shortens the longer of its two
	// ranks' times, up to the budget min(max_moves, max(1, max_move_fraction
	// x units)); the whole is kept only if the slowest rank's predicted time
	// falls by min_gain of it and the saving times `horizon` periods is
	// more than the moves' bytes / move_rate. Kept moves are returned in the
	// plan's order; then the window starts again (the next plan needs
	// `required()` new periods; the plan is judged over the first
	// `persistence` of them). A move of an unknown unit, from a rank
	// where it is not or to an unknown rank throws Error.
	std::vector<Move> admit(const std::vector<Move> &plan);
	// The max/avg of the last period's times.
	double imbalance() const { return imbalance_; }
	// The predicted max/avg after the last admitted plan (else imbalance()).
	double predicted() const { return predicted_; }
	// For how many periods in a row overloaded() was, the rank (-1: none),
	// and how many a plan needs now (persistence, times the backoff).
	int streak() const { return streak_; }
	int overloaded() const { return heavy_; }
	int required() const { return required_; }
	// Forgets every period, the last plan and the backoff.
	void reset();

private:
	size_t cap() const; // periods kept: persistence x max_backoff
	struct Period {
		std::vector<Task> tasks;
		std::vector<double> times, speeds;
	};
	DampingParams p_;
	std::vector<Period> window_; // oldest first, at most cap()
	std::map<int64_t, int> last_from_;
	double imbalance_ = 1, predicted_ = 1;
	int streak_ = 0, heavy_ = -1;
	bool go_ = false;
	bool restart_ = false; // a plan was admitted: the window starts again
	int required_ = 3;
	bool judging_ = false; // the last plan is judged after `persistence` periods
	double judge_before_ = 1, judge_predicted_ = 1;
};

// ------------------------------------------------------------ RUPER-LB ----

// One worker (a thread, or at MPI level a "guess worker" for a whole rank).
struct RuperWorker {
	uint64_t assigned = 0; // iterations to do
	bool started = false, finished = false;
	uint64_t done = 0;          // reported iterations done
	double last_report = 0;     // timestamp of the last report (s)
	double start = 0;           // timestamp of the start
	std::vector<double> speeds; // measured speeds (iterations/s)
	double interval = 0;        // the suggested time until the next report
	double speed() const { return speeds.empty() ? 0 : speeds.back(); }
	// Iterations done at `t` if its speed did not change since the report.
	double pred_done(double t) const;
};

struct RuperParams {
	double checkpoint_interval = 1;           // dt: minimum time between checkpoints (s)
	double threshold = 0.5;                   // balance time threshold (s)
	double max_deviation = 0.2;               // maximum speed deviation |v/v' - 1|
	double min_report = 0.05, max_report = 1; // bounds of the report interval (s)
};

enum class FinishAnswer { Finish, Report, Continue };

// The task object (RUPER-LB §2.1, Table 1): workers report asynchronously,
// checkpoints re-assign the remaining iterations by measured speed.
class RuperTask
{
public:
	RuperTask(uint64_t iterations, size_t workers, const RuperParams &p, double now);
	// Worker w starts: its preliminary assignment (an equal share of what no
	// started worker has been given yet).
	uint64_t start(size_t w, double now);
	// report(): stores the speed measure and returns the suggested time until
	// the next report (shorter when the speed changed by more than
	// max_deviation). `guess`: the value is a prediction (MPI level, §2.2).
	// `idle`: the worker ran out of work before `now` (a finish request):
	// the count is stored but the speed measured while it worked is kept.
	double report(size_t w, uint64_t done, double now, bool guess = false, bool idle = false);
	// checkPoint: redistribute the remaining iterations by speed; returns
	// the predicted remaining time (s). `force`: redistribute even below the
	// threshold (after the task's iteration count changed).
	double checkpoint(double now, bool force = false);
	// The remaining time predicted by the last checkpoint (infinite before
	// any, or while no speed is known).
	double remaining() const { return remaining_; }
	// A worker asks to finish.
	FinishAnswer request_finish(size_t w, double now);
	bool finished() const;
	uint64_t iterations() const { return to_do_; }
	void set_iterations(uint64_t n) { to_do_ = n; }
	const std::vector<RuperWorker> &workers() const { return w_; }
	uint64_t assigned(size_t w) const { return w_.at(w).assigned; }
	size_t checkpoints() const { return checkpoints_; }

private:
	uint64_t to_do_;
	std::vector<RuperWorker> w_;
	RuperParams p_;
	double start_, last_checkpoint_;
	size_t checkpoints_ = 0;
	double remaining_ = std::numeric_limits<double>::infinity();
};

// --------------------------------------------------------------- monitors ----

// Counters read from /proc (DRUM's agents, Gupta's t_idle).
struct CpuTimes {
	uint64_t idle_ticks = 0, total_ticks = 0; // summed over the CPUs asked for
};
// /proc/stat (or `text`): the idle (idle + iowait) and total jiffies of the
// listed CPUs (all CPUs when empty).
CpuTimes read_cpu_times(const std::vector<int> &cpus, const std::string &text = {});
struct NetDev {
	std::string name;
	uint64_t rx_packets = 0, tx_packets = 0;
};
// /proc/net/dev (or `text`).
std::vector<NetDev> read_net_dev(const std::string &text = {});
// MemAvailable from /proc/meminfo (or `text`), bytes.
uint64_t read_mem_available(const std::string &text = {});
// A LINPACK-like dense kernel (n x n LU without pivoting on a diagonally
// dominant matrix): MFLOPS.
double dense_mflops(int n = 200);
// Cores of this node visible to the process (hwloc; restricted to the
// CPUs the process may use), at least 1.
int node_cores();

// DRUM's dynamic monitors (§3.2) as a thread beside the application: every
// `period` seconds it samples this process's CPU time (the rank's CPU
// utilisation), the idle time of the given CPUs (/proc/stat; all when
// empty), MemAvailable (/proc/meminfo) and the packets of every interface
// (/proc/net/dev). take() returns the aggregates over the samples since the
// previous take(); it is thread-safe. The paths can point elsewhere (tests).
struct MonitorPaths {
	std::string stat = "/proc/stat", net_dev = "/proc/net/dev", meminfo = "/proc/meminfo";
};
struct MonitorAggregate {
	size_t samples = 0;                // samples in the window (2 or more), 0 if none yet
	double window = 0;                 // seconds between the window's first and last sample
	double cpu_util = 0;               // CPUs used by this process (1.0 = one CPU)
	double cpu_idle = 0;               // idle CPUs among the monitored ones
	uint64_t mem_available = 0;        // bytes, the last sample
	uint64_t mem_available_min = 0;    // bytes, the lowest in the window
	std::vector<Interface> interfaces; // per interface: CAF (packets/s in + out); speed 0
};
class Monitor
{
public:
	// Throws Error for a period outside [0.001, 60] s or unreadable
	// sources (the first sample is taken before the thread starts).
	explicit Monitor(double period, std::vector<int> cpus = {}, MonitorPaths paths = {});
	~Monitor();
	Monitor(const Monitor &) = delete;
	Monitor &operator=(const Monitor &) = delete;
	// Stops and joins the thread (idempotent). No sample is taken after.
	void stop();
	bool running() const;
	double period() const { return period_; }
	size_t samples() const; // taken since the start
	// Waits until `n` samples were taken or `timeout` s passed; true if taken.
	bool wait_samples(size_t n, double timeout) const;
	// Aggregates since the previous take() (the window starts again at the
	// last sample). With fewer than 2 new samples, the previous aggregate.
	// Throws Error if sampling failed (the thread has then stopped).
	MonitorAggregate take();

	struct Sample {
		double t = 0, cpu = 0;
		uint64_t idle = 0, mem = 0;
		std::map<std::string, uint64_t> packets;
	};

private:
	Sample sample() const;
	void run();
	double period_;
	std::vector<int> cpus_;
	MonitorPaths paths_;
	mutable std::mutex mu_;
	mutable std::condition_variable cv_;
	bool stop_ = false, running_ = false;
	std::string error_;
	size_t count_ = 0;
	Sample first_, last_;
	size_t in_window_ = 1;
	uint64_t mem_min_ = 0;
	MonitorAggregate prev_;
	std::thread th_;
};

} // namespace hpclb
