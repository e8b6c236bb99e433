// hpcctl-scx-maps: stand-in maps of a running scx_hpc for hpcctl's host
// tests (hpcctl-scx.sh): the maps hpcctl --backend scx looks for, by the
// names and sizes of sched_ext/scx_hpc.h, created with libbpf (root), the
// parameters at their defaults. Then one command a line on stdin, each
// answered by one line on stdout:
//
//   task PID ITER PRIO PREV RUN_NS WAIT_NS UTIL   a live task's entry
//   exited PID                                    the entry marked exited
//   params                                        gen, low_util, queue
//   fixed PID                                     its fixed_prios entry, or -
//
// The maps go when stdin closes. Exit status 1 (said why) if they cannot be
// created.
#include "scx_hpc_user.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

namespace
{

int create(bpf_map_type type, const char *name, uint32_t vsize, uint32_t entries)
{
	int fd = bpf_map_create(type, name, sizeof(uint32_t), vsize, entries, nullptr);
	if (fd < 0) {
		std::fprintf(stderr, "hpcctl-scx-maps: cannot create %s: %s\n", name,
			     std::strerror(errno));
		std::exit(1);
	}
	return fd;
}

// One command: its answer.
std::string command(const std::string &line, int params, int tasks, int fixed)
{
	std::istringstream in(line);
	std::string cmd;
	uint32_t pid = 0;
	in >> cmd;
	if (cmd == "task") {
		scx_hpc_task_info t{};
		uint32_t util = 0;
		in >> t.pid >> t.nr_iter >> t.prio >> t.prev_prio >> t.last_run_ns >>
			t.last_wait_ns >> util;
		t.tgid = t.pid;
		t.cpu = 1;
		t.last_util = t.global_util = t.heur_util = util;
		std::snprintf(t.comm, sizeof(t.comm), "app%u", t.pid);
		return bpf_map_update_elem(tasks, &t.pid, &t, BPF_ANY) ? "error" : "ok";
	}
	if (cmd == "exited" && in >> pid) {
		scx_hpc_task_info t{};
		if (bpf_map_lookup_elem(tasks, &pid, &t))
			return "error";
		t.exited = 1;
		return bpf_map_update_elem(tasks, &pid, &t, BPF_EXIST) ? "error" : "ok";
	}
	if (cmd == "params") {
		uint32_t zero = 0;
		scx_hpc_params p{};
		bpf_map_lookup_elem(params, &zero, &p);
		return "gen=" + std::to_string(p.gen) +
		       " low_util=" + std::to_string(p.core.low_util) +
		       " fifo=" + std::to_string(p.fifo);
	}
	if (cmd == "fixed" && in >> pid) {
		uint32_t prio;
		return bpf_map_lookup_elem(fixed, &pid, &prio) ? "-" : std::to_string(prio);
	}
	return "unknown command: " + line;
}

} // namespace

int main()
{
	const int params =
		create(BPF_MAP_TYPE_ARRAY, SCX_HPC_MAP_PARAMS, sizeof(scx_hpc_params), 1);
	const int cpus =
		create(BPF_MAP_TYPE_ARRAY, SCX_HPC_MAP_CPUS, sizeof(scx_hpc_cpu), SCX_HPC_MAX_CPUS);
	const int tasks = create(BPF_MAP_TYPE_HASH, SCX_HPC_MAP_TASKS, sizeof(scx_hpc_task_info),
				 SCX_HPC_MAX_TASKS);
	const int fixed =
		create(BPF_MAP_TYPE_HASH, SCX_HPC_MAP_FIXED, sizeof(uint32_t), SCX_HPC_MAX_TASKS);
	uint32_t zero = 0;
	const scx_hpc_params p = scxhpc::default_params();
	bpf_map_update_elem(params, &zero, &p, BPF_ANY);
	for (uint32_t c = 0; c < SCX_HPC_MAX_CPUS; c++) {
		scx_hpc_cpu v{};
		v.online = 1;
		v.run_ns = 1000000ull * (c + 1);
		bpf_map_update_elem(cpus, &c, &v, BPF_ANY);
	}
	std::cout << "ready" << std::endl;
	for (std::string line; std::getline(std::cin, line);)
		std::cout << command(line, params, tasks, fixed) << std::endl;
	(void)cpus;
	return 0;
}
