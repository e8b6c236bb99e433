// scx_hpc's maps as user space sees them (scx_hpc_user.hpp).
#include "scx_hpc_user.hpp"

#include <algorithm>
#include <cstring>

#include <bpf/bpf.h>

#include "params_text.hpp"

namespace scxhpc
{

scx_hpc_params default_params()
{
	scx_hpc_params sp;
	std::memset(&sp, 0, sizeof(sp));
	hpc_params_default(&sp.core);
	sp.slice_us = HPC_DEF_TIMESLICE_US;
	sp.period_us = HPC_DEF_EMUL_PERIOD_US;
	return sp;
}

namespace
{

// One of the scheduler's own knobs (not the core's) into `sp`.
bool apply_own(scx_hpc_params &sp, const std::string &key, const std::string &val, std::string &err)
{
	uint32_t v;
	if (key == "backend") {
		// the SMT emulation by bandwidth, or none (priorities not applied)
		if (!hpc::parse_emul_backend(val, v, err))
			return false;
		sp.no_emul = !v;
		return true;
	}
	if (!hpc::parse_sched_knob(key, val, v, err))
		return false;
	(key == "queue" ? sp.fifo : key == "timeslice_us" ? sp.slice_us : sp.period_us) = v;
	return true;
}

} // namespace

bool apply_knobs(scx_hpc_params &sp, const std::map<std::string, std::string> &knobs, bool whole,
		 std::string &err)
{
	scx_hpc_params next = sp;
	std::map<std::string, std::string> core;
	for (auto &[k, v] : knobs) {
		if (k != "backend" && !hpc::is_sched_knob(k)) {
			core[k] = v;
		} else if (!apply_own(next, k, v, err)) {
			err = "invalid value: " + err;
			return false;
		}
	}
	if (!hpc::apply_values(next.core, core, err)) {
		err = "invalid value: " + err;
		return false;
	}
	if (int e = whole ? hpc_params_check(&next.core, &kPrioRange) : 0) {
		err = std::string("invalid parameters: ") + hpc_param_err_str(e);
		return false;
	}
	sp = next;
	return true;
}

std::vector<scx_hpc_task_info> read_tasks(int tasks_fd)
{
	std::vector<scx_hpc_task_info> v;
	uint32_t key, next;
	uint32_t *prev = nullptr;
	while (!bpf_map_get_next_key(tasks_fd, prev, &next)) {
		scx_hpc_task_info ti{};
		if (!bpf_map_lookup_elem(tasks_fd, &next, &ti))
			v.push_back(ti);
		key = next;
		prev = &key;
	}
	std::sort(v.begin(), v.end(), [](auto &a, auto &b) { return a.pid < b.pid; });
	return v;
}

Stats read_stats(int params_fd, int cpus_fd, int tasks_fd, unsigned ncpus)
{
	Stats s;
	uint32_t zero = 0;
	bpf_map_lookup_elem(params_fd, &zero, &s.params);
	for (uint32_t c = 0; c < ncpus && c < SCX_HPC_MAX_CPUS; c++) {
		scx_hpc_cpu v{};
		if (bpf_map_lookup_elem(cpus_fd, &c, &v))
			break;
		s.cpus.push_back(v);
		scx_hpc_cpu &t = s.total;
		t.nr_running += v.nr_running;
		t.nr_iter += v.nr_iter;
		t.nr_sib_judged += v.nr_sib_judged;
		t.nr_throttle += v.nr_throttle;
		t.throttled_ns += v.throttled_ns;
		t.nr_steal += v.nr_steal;
		t.nr_direct += v.nr_direct;
		t.nr_kick += v.nr_kick;
		t.run_ns += v.run_ns;
		t.nr_move += v.nr_move;
		t.nr_wake_preempt += v.nr_wake_preempt;
	}
	for (auto &t : read_tasks(tasks_fd)) {
		s.nr_tasks++;
		s.nr_live += !t.exited;
	}
	return s;
}

} // namespace scxhpc
