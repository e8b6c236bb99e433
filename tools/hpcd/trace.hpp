// Per-task iteration traces (`hpcctl trace`, `hpcctl report`): the model,
// the native JSON-lines record, the kernel tracepoint's text, the paper's
// per-task table and the exports (Perfetto/Chrome JSON, Paraver).
//
// The native record, one JSON object per line:
//   {"format":"hpcsched-trace","version":1,"source":"hpcd"|"kernel"|"scx",
//    "clock":"CLOCK_MONOTONIC","start_ns":N,"start_unix_s":N,"host":"..",
//    "command":[..],"settings":{..}}                           first line
//   {"type":"task","pid":N,"name":"..","job":"..","rank":R,"ctx":C,"cpu":C,
//    "sibling":PID,"source":"monitor"|"proc"|"kernel"|"scx","role":"task"|"launcher",
//    "prio":P}                  before its events; again when hpcd re-describes it
//   {"type":"iteration","pid":N,"iteration":I,"end_ns":N,"run_ns":N,
//    "wait_ns":N,"util":U,"heur_util":U,"old_prio":P,"prio":P,"cpu":C,
//    "weight":W}                        util in 0.01 %, prio = applied priority
//   {"type":"priority","pid":N,"at_ns":N,"old_prio":P,"prio":P}
//   {"type":"end","end_ns":N,"reason":"..","dropped":N,"missed":N,
//    "warnings":[".."]}                                          last line
// `warnings` (optional): what went wrong with the run as a whole, e.g. ranks
// a launcher started that ran unmonitored (sampled from /proc), or none
// adopted at all.
// A task's iterations are in order of their end, its priority changes in
// order of time and never before an iteration written earlier. A priority
// change may be written before an iteration that ended earlier: hpcd holds
// a rank's record until its sibling's arrives (at most 20 ms) and applies
// it then, so the iteration is accounted, and written, after a change hpcd
// made in the meantime.
// Times are CLOCK_MONOTONIC ns; an iteration is its compute phase
// [end - wait - run, end - wait) and its wait [end - wait, end). A launcher
// (mpirun whose ranks hpcd manages: not paired) is left out of the table
// and the exports.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcd::trace
{

constexpr int kVersion = 1;
constexpr const char *kFormat = "hpcsched-trace";

struct TaskInfo {
	int pid = 0;
	std::string name, job, source, role = "task";
	int rank = -1, ctx = -1, cpu = -1, sibling = 0;
	uint32_t prio = 0; // applied priority when the trace first saw it (0: unknown)
};

struct Iter {
	int pid = 0;
	uint64_t iteration = 0; // 0: unknown
	uint64_t end_ns = 0, run_ns = 0, wait_ns = 0;
	uint32_t util = 0, heur_util = 0; // 0.01 %
	uint32_t old_prio = 0, prio = 0;
	int cpu = -1;
	uint32_t weight = 0; // 0: not recorded
	uint64_t start_ns() const { return end_ns - wait_ns - run_ns; }
	uint64_t compute_end_ns() const { return end_ns - wait_ns; }
};

struct PrioChange {
	int pid = 0;
	uint64_t at_ns = 0;
	uint32_t old_prio = 0, prio = 0;
};

struct Trace {
	std::string source = "hpcd", host, reason;
	uint64_t start_ns = 0, end_ns = 0; // end_ns 0: the record has no end line
	int64_t start_unix_s = 0;
	std::vector<std::string> command;
	nlohmann::json settings = nlohmann::json::object();
	uint64_t dropped = 0, missed = 0;
	std::vector<std::string> warnings;
	std::vector<TaskInfo> tasks; // in order of appearance
	std::vector<Iter> iters;     // in order of their end
	std::vector<PrioChange> prios;

	const TaskInfo *task(int pid) const;
	// The last time anything in the trace happened (end line, or events).
	uint64_t last_ns() const;
};

// ---- the native record -------------------------------------------------------

std::string header_line(const Trace &t);
std::string task_line(const TaskInfo &t);
std::string iter_line(const Iter &i);
std::string prio_line(const PrioChange &p);
std::string end_line(const Trace &t);

// Read a native record. nullopt and `err` ("line N: what is wrong") if it
// is not one: no header, a malformed line, a missing or mistyped field, an
// event of a task not declared before, an iteration whose run and wait do
// not fit before its end, events out of time order.
std::optional<Trace> read(std::istream &in, std::string &err);

// ---- the kernel's tracepoints (tracefs text) -----------------------------------

// One line of a tracefs `trace`/`trace_pipe` with the sched_hpc_iteration
// event (trace_clock mono: the timestamp is the iteration's end):
//   "  app-123 [001] d..2. 10.000500: sched_hpc_iteration: pid=123 comm=app
//    run_ns=.. wait_ns=.. util=.. heur_util=.. old_prio=.. new_prio=.."
// nullopt for any other line (other events, comments, lost-event notes).
struct KernelEvent {
	Iter it;
	std::string comm;
};
std::optional<KernelEvent> parse_ftrace_line(std::string_view line);
// A sched_hpc_judge line: the kernel judged a task that never waits (its
// priority decided without an iteration closing):
//   "... 10.000500: sched_hpc_judge: pid=123 comm=app heur_util=.. old_prio=..
//    new_prio=.."
struct KernelJudge {
	PrioChange change;
	std::string comm;
	int cpu = -1;
	uint32_t heur_util = 0;
};
std::optional<KernelJudge> parse_ftrace_judge(std::string_view line);
// The count of a "CPU:N [LOST M EVENTS]" line (the buffer overflowed), else 0.
uint64_t ftrace_lost(std::string_view line);

// ---- scx_hpc's per-task map, sampled -------------------------------------------

// One entry of `hpcctl --backend scx status --tasks --json` (the BPF side's
// task_info map: counters and the values of the last decision, no time
// stamps).
struct ScxTask {
	int pid = 0, tgid = 0, cpu = -1;
	std::string comm;
	uint32_t prio = 0, prev_prio = 0, last_util = 0, heur_util = 0;
	bool exited = false;
	uint64_t nr_iter = 0, last_run_ns = 0, last_wait_ns = 0;
};
// That JSON array; std::runtime_error naming the entry and field if it is
// not one.
std::vector<ScxTask> parse_scx_tasks(const nlohmann::json &dump);

// Turns successive samples of that map into trace events. The first sample
// is the baseline (nothing before the trace is recorded). Afterwards, per
// task: nr_iter grew -> one iteration record ending at the sample's time
// with the last iteration's run/wait/util and the priority before (as last
// sampled) and after; growth by k > 1 adds k - 1 to `missed` (closed
// between two samples, only the last one's values are in the map). No
// iteration but another priority (a sibling's judgement, a knob) -> a
// priority record. A task first seen after the baseline starts from zero
// iterations at its prev_prio; a pid whose count went down is a new task
// with a reused pid. A task line (source "scx") precedes a task's first
// event.
class ScxSampler
{
public:
	struct Out {
		std::vector<TaskInfo> tasks; // tasks whose first event is in this sample
		std::vector<Iter> iters;
		std::vector<PrioChange> prios;
		uint64_t missed = 0;
	};
	Out sample(const std::vector<ScxTask> &tasks, uint64_t now_ns);

private:
	struct Seen {
		uint64_t nr_iter = 0;
		uint32_t prio = 0;
		bool described = false;
	};
	std::map<int, Seen> seen_;
	bool baseline_ = true;
};

// ---- the paper's table -----------------------------------------------------------

struct TaskSummary {
	const TaskInfo *task = nullptr;
	std::string label;       // P<rank>, or P<k> in pairing order
	uint64_t iterations = 0; // recorded iterations
	uint64_t run_ns = 0, wait_ns = 0;
	double comp_pct = 0;         // compute / (compute + wait)
	std::vector<uint32_t> prios; // applied priorities in turn, repeats folded
	uint64_t first_ns = 0, last_ns = 0;
};

// One row per task (launchers left out) that has iterations or priority
// changes, in the order of their labels.
std::vector<TaskSummary> summarize(const Trace &t);
// "4>5>6" (a long history keeps its first and last three).
std::string prio_path(const std::vector<uint32_t> &prios);
// Per task: iterations, % compute, priority, time; then the trace's span.
std::string report_table(const Trace &t);
// The timeline as bench/metbench/report.py draws it (metbench --trace CSV:
// rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns).
std::string timeline_csv(const Trace &t);

// ---- exports -------------------------------------------------------------------

// Chrome trace-event JSON (Perfetto's JSON importer): one process per task
// (one track), "compute" and "wait" slices per iteration, counters
// "priority" and "utilisation %" (last, heuristic); "cpu weight" in
// weight mode.
nlohmann::json to_perfetto(const Trace &t);

// Paraver: .prv (state records 1 = running for compute, 3 = waiting a
// message for waits; event records of type kPrvPriority and
// kPrvUtilisation), .pcf (state and event names) and .row (CPU, node and
// thread names). One application, one task of one thread per traced task;
// times in ns from the trace's start.
constexpr uint64_t kPrvPriority = 90000001, kPrvUtilisation = 90000002, kPrvIteration = 90000003;
struct Paraver {
	std::string prv, pcf, row;
};
Paraver to_paraver(const Trace &t);

} // namespace hpcd::trace
