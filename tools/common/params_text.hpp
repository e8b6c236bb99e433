// Text form of the policy core's tunables: the one parser every user-space
// front end (simulator, hpcctl, hpcd, scx_hpc loader) uses. Names and
// validation come from the core (hpc_param_names, hpc_params_check).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include "hpc_policy.h"
}

namespace hpc
{

// Parse "KEY=VALUE" (KEY as in sysfs: low_util, heuristic, ...) and apply it
// to a copy of `p`; the result is checked as a whole against `allowed`
// (nullptr: the full hardware range). On error, returns false, leaves `p`
// unchanged and says why in `err`.
bool apply_setting(hpc_params &p, std::string_view setting, const hpc_prio_range *allowed,
		   std::string &err);

// Apply several tunables (KEY -> VALUE, KEY as in sysfs) to `p` together,
// whatever their order, as a command line gives them: one Adaptive weight
// sets the other (G + L = 100), both are taken as given. The whole set is not
// checked here (hpc_params_check() is the caller's, against its range). On a
// malformed value or an unknown key returns false, leaves `p` unchanged and
// says why in `err`.
bool apply_values(hpc_params &p, const std::map<std::string, std::string> &kv, std::string &err);

// Value of one tunable as text (heuristic by name).
std::string format_param(const hpc_params &p, int id);

// The heuristics' names (hpc_heuristic_names), in the core's order.
std::vector<std::string> heuristic_names();

// The same as a choice in prose: "uniform, adaptive or phase".
std::string heuristic_choice();

// Parse the text form of one tunable's value (a decimal number, or a
// heuristic name for "heuristic"). Returns false on malformed input.
bool parse_param_value(int id, std::string_view text, uint32_t &out);

// A whole decimal number; one trailing newline is tolerated, as `echo` into
// sysfs writes it. Returns false on anything else (sign, blank, overflow).
bool parse_u32(std::string_view text, uint32_t &out);

// The schedulers' own knobs (not policy), with the same names and ranges in
// the kernel class's sysfs, scx_hpc and hpcd: timeslice_us and
// emul_period_us (microseconds, the core's HPC_{MIN,MAX}_* ranges) and
// queue (rr or fifo).
bool is_sched_knob(std::string_view key);

// Parse the value of a scheduler knob: microseconds, or for queue 0 (rr) or
// 1 (fifo). On error, returns false and says why in `err`.
bool parse_sched_knob(std::string_view key, std::string_view val, uint32_t &out, std::string &err);

// The SMT emulation's mechanism name, as the kernel class's backend knob
// and scx_hpc's name it.
inline constexpr const char *kBackendEmul = "x86-smt-emul";

// Parse an emulating scheduler's backend knob (scx_hpc, hpcctl's check of
// it): x86-smt-emul (out = 1) or none (out = 0). On error, returns false and
// says why in `err`.
bool parse_emul_backend(std::string_view val, uint32_t &out, std::string &err);

} // namespace hpc
