// Text form of the policy core's tunables: the one parser every user-space
// front end (simulator, hpcctl, hpcd, scx_hpc loader) uses. Names and
// validation come from the core (hpc_param_names, hpc_params_check).
#pragma once

#include <string>
#include <string_view>

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

// Value of one tunable as text (heuristic by name).
std::string format_param(const hpc_params &p, int id);

// Parse the text form of one tunable's value (a decimal number, or a
// heuristic name for "heuristic"). Returns false on malformed input.
bool parse_param_value(int id, std::string_view text, uint32_t &out);

} // namespace hpc
