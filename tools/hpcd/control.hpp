// hpcd's control protocol and its knobs.
//
// Unix stream socket, one JSON object per line each way:
//   {"cmd":"get"}                      -> {"ok":true,"values":{KEY:"VALUE",...}}
//   {"cmd":"get","key":"low_util"}     -> {"ok":true,"values":{"low_util":"65"}}
//   {"cmd":"set","settings":["K=V",..]} -> {"ok":true,"values":{...}}   (all or nothing)
//   {"cmd":"list"}                     -> {"ok":true,"tasks":[{pid,name,...},...]}
//   {"cmd":"status"}                   -> {"ok":true,"status":{...}}
//   {"cmd":"add","pid":N,"name":"x"}   -> {"ok":true} once the task is managed
//   {"cmd":"add","pid":N,"launcher":true} -> the same for an MPI launcher
//           (mpirun, srun): not paired, not pinned, not throttled; the
//           processes it starts are adopted as its ranks
//   {"cmd":"remove","pid":N}           -> {"ok":true}
//   {"cmd":"prio","pid":N,"prio":P}    -> {"ok":true}  fixed priority P in prio_range, 0: dynamic
//   {"cmd":"shutdown"}                 -> {"ok":true}
//   {"cmd":"iterations","since":S,"max":M}
//        -> {"ok":true,"next":N,"dropped":D,"events":[{"event":"iteration",..},..]}
//           events with seq >= S (itlog.hpp; at most M, default 4096); N is
//           the seq to ask for next, D how many the ring no longer holds
//   {"cmd":"watch","since":S}          -> {"ok":true,"watch":true,"next":N,"dropped":D}
//           then the events with seq >= S (default: from now on), one per
//           line, as they happen, until the connection closes; also
//           {"event":"task",..} (task_event) when a task is adopted or
//           described otherwise (a launcher's rank, now monitored);
//           {"event":"released","pid":P} when hpcd lets a task go (it
//           exited, or was removed); when hpcd exits:
//           {"event":"end","reason":"..."}. The connection then
//           answers no further request.
// Errors: {"ok":false,"kind":"bad_key|bad_value|read_only|kernel_only|
//          bad_request|failed","error":"why"}.
//
// Knob names are the kernel's sysfs names (sched-hpc-abi.txt), validated by
// the policy core through params_text; hpcd adds its own (mode, balance,
// waits, window, wait_weight).
#pragma once

#include "cgroup.hpp"
#include "engine.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcd
{

enum class SetErr { None, BadKey, BadValue, ReadOnly, KernelOnly };
const char *set_err_kind(SetErr e);

// Knobs only the kernel class has, and the read-only ones.
extern const std::vector<std::string> kKernelOnlyKnobs; // queue, timeslice_us
extern const std::vector<std::string> kReadOnlyKnobs;   // backend, prio_range, smt_pairs
extern const std::vector<std::string> kDaemonKnobs;     // mode, balance, waits, window, wait_weight

// Apply KEY=VALUE settings to a copy of `s`; on success replace `s`. On
// failure `s` is unchanged and `msg` says which setting is wrong and why.
SetErr apply_settings(Settings &s, const std::vector<std::string> &kv, std::string &msg);

// Every knob hpcd has, as text.
nlohmann::ordered_json knob_values(Engine &e);

struct ControlHooks {
	// "" or error
	std::function<std::string(int pid, const std::string &name, bool launcher)> add;
	std::function<void(int pid)> remove;
	std::function<nlohmann::json()> status;
	std::function<CgStat(const Task &)> stat;
	std::function<void()> changed; // knobs changed: re-place and re-plan
	std::function<void()> shutdown;
	// Recorded events (itlog.hpp): {"next","dropped","events"}.
	std::function<nlohmann::json(uint64_t since, size_t max)> events;
	// Make the requesting connection a watcher; returns its backlog
	// (event lines, each ending in a newline) and fills next/dropped.
	std::function<std::string(uint64_t since, bool from_now, nlohmann::json &reply)> watch;
};

nlohmann::json task_json(Engine &e, const Task &t, const CgStat &st);
// {"event":"task","pid":..,"name":..,"job":..,"rank":..,"role":"task"|"launcher",
//  "source":"monitor"|"bpf"|"proc","launched_by":PID,"ctx":..,"cpu":..,"sibling":..,"prio":..}
nlohmann::json task_event(Engine &e, const Task &t);
// Handle one request line; returns the reply (one line, no newline).
std::string handle_line(Engine &e, ControlHooks &h, std::string_view line);

} // namespace hpcd
