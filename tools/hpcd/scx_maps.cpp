// hpcctl --backend scx: the running scx_hpc's maps (scx_maps.hpp).
#include "scx_maps.hpp"
#include "hpcctl.hpp"
#include "params_text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

namespace hpcctl::scx
{

Maps::~Maps()
{
	for (int fd : {params, cpus, tasks, fixed})
		if (fd >= 0)
			::close(fd);
}

namespace
{

// Every BPF object of a kind (maps, programs), through the kernel's id
// iteration (`next`, `fd_of`): `f(id, fd, info)`, which returns true if it
// keeps the descriptor.
template <typename Info, typename F>
void each_object(int (*next)(uint32_t, uint32_t *), int (*fd_of)(uint32_t), F f)
{
	uint32_t id = 0;
	while (!next(id, &id)) {
		int fd = fd_of(id);
		if (fd < 0)
			continue;
		Info info{};
		uint32_t len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || !f(id, fd, info))
			::close(fd);
	}
}

} // namespace

bool Maps::find()
{
	struct Want {
		const char *name;
		uint32_t vsize;
		int *fd;
	} want[] = {
		{SCX_HPC_MAP_PARAMS, sizeof(scx_hpc_params), &params},
		{SCX_HPC_MAP_CPUS, sizeof(scx_hpc_cpu), &cpus},
		{SCX_HPC_MAP_TASKS, sizeof(scx_hpc_task_info), &tasks},
		{SCX_HPC_MAP_FIXED, sizeof(uint32_t), &fixed},
	};
	// Ids grow: of each name, the last one seen is the newest.
	each_object<bpf_map_info>(bpf_map_get_next_id, bpf_map_get_fd_by_id,
				  [&](uint32_t, int fd, const bpf_map_info &info) {
					  for (auto &w : want) {
						  if (std::strcmp(info.name, w.name) ||
						      info.value_size != w.vsize)
							  continue;
						  if (*w.fd >= 0)
							  ::close(*w.fd);
						  *w.fd = fd;
						  return true;
					  }
					  return false;
				  });
	return params >= 0 && cpus >= 0 && tasks >= 0 && fixed >= 0;
}

std::string dump(const ojson &j)
{
	return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

scx_hpc_params read_params(const Maps &m)
{
	uint32_t zero = 0;
	scx_hpc_params p;
	if (bpf_map_lookup_elem(m.params, &zero, &p))
		fail(kFail,
		     std::string("cannot read scx_hpc's parameters: ") + std::strerror(errno));
	return p;
}

scxhpc::Stats read_stats(const Maps &m)
{
	const int ncpus = std::max(1, libbpf_num_possible_cpus());
	return scxhpc::read_stats(m.params, m.cpus, m.tasks, static_cast<unsigned>(ncpus));
}

std::string comm_of(const scx_hpc_task_info &t)
{
	std::string s(t.comm, strnlen(t.comm, sizeof(t.comm)));
	std::replace_if(
		s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; },
		' ');
	return s;
}

ojson params_json(const scx_hpc_params &p)
{
	const hpc_params &c = p.core;
	return {{"low_util", c.low_util},
		{"high_util", c.high_util},
		{"min_prio", c.min_prio},
		{"max_prio", c.max_prio},
		{"global_weight", c.global_weight},
		{"last_weight", c.last_weight},
		{"heuristic", c.heuristic < HPC_HEUR_NR ? hpc_heuristic_names[c.heuristic] : "?"},
		{"min_wait_us", c.min_wait_us},
		{"timeslice_us", p.slice_us},
		{"emul_period_us", p.period_us},
		{"queue", p.fifo ? "fifo" : "rr"},
		{"backend", p.no_emul ? "none" : hpc::kBackendEmul}};
}

namespace
{

ojson cpu_json(size_t i, const scx_hpc_cpu &c)
{
	return {{"cpu", i},
		{"online", c.online},
		{"running", c.running},
		{"throttled", c.throttled},
		{"prio", c.cur_prio},
		{"pid", c.cur_pid},
		{"throttles", c.nr_throttle},
		{"throttled_ns", c.throttled_ns},
		{"steals", c.nr_steal},
		{"moves", c.nr_move},
		{"run_ns", c.run_ns}};
}

} // namespace

ojson stats_json(const scxhpc::Stats &s, const std::string &state, const std::string &ops)
{
	const scx_hpc_cpu &t = s.total;
	ojson j = {{"state", state},
		   {"ops", ops},
		   {"tasks", s.nr_tasks},
		   {"live_tasks", s.nr_live},
		   {"running", t.nr_running},
		   {"iterations", t.nr_iter},
		   {"sibling_judged", t.nr_sib_judged},
		   {"throttles", t.nr_throttle},
		   {"throttled_ns", t.throttled_ns},
		   {"steals", t.nr_steal},
		   {"moves", t.nr_move},
		   {"direct", t.nr_direct},
		   {"kicks", t.nr_kick},
		   {"wake_preempts", t.nr_wake_preempt},
		   {"params", params_json(s.params)}};
	ojson cpus = ojson::array();
	for (size_t i = 0; i < s.cpus.size(); i++)
		cpus.push_back(cpu_json(i, s.cpus[i]));
	j["cpus"] = cpus;
	return j;
}

ojson task_json(const scx_hpc_task_info &t)
{
	return {{"pid", t.pid},
		{"tgid", t.tgid},
		{"comm", comm_of(t)},
		{"cpu", t.cpu},
		{"prio", t.prio},
		{"prev_prio", t.prev_prio},
		{"iterations", t.nr_iter},
		{"judgements", t.nr_judged},
		{"last_util", t.last_util},
		{"global_util", t.global_util},
		{"heur_util", t.heur_util},
		{"last_run_ns", t.last_run_ns},
		{"last_wait_ns", t.last_wait_ns},
		{"throttled_ns", t.throttled_ns},
		{"run_ns", t.run_ns},
		{"fixed_prio", t.fixed_prio},
		{"exited", t.exited}};
}

std::string tasks_text(const std::vector<scx_hpc_task_info> &tasks, bool json)
{
	std::string out = json ? "[" : "";
	if (!json)
		out = fmt::format(
			"{:>7} {:>7} {:<16} {:>3} {:>4} {:>5} {:>5} {:>6} {:>6} {:>7} {:>7} "
			"{:>7} {:>11} {:>9} {}\n",
			"pid", "tgid", "comm", "cpu", "prio", "prev", "fixed", "iter", "judged",
			"U_last", "U_glob", "U_heur", "throttledms", "run_ms", "state");
	for (size_t i = 0; i < tasks.size(); i++) {
		const auto &t = tasks[i];
		if (json) {
			out += (i ? ",\n " : "") + dump(task_json(t));
			continue;
		}
		out += fmt::format("{:>7} {:>7} {:<16.16} {:>3} {:>4} {:>5} {:>5} {:>6} {:>6} "
				   "{:>6.2f}% {:>6.2f}% {:>6.2f}% {:>11.1f} {:>9.1f} {}\n",
				   t.pid, t.tgid, comm_of(t), t.cpu, t.prio, t.prev_prio,
				   t.fixed_prio ? std::to_string(t.fixed_prio) : "-", t.nr_iter,
				   t.nr_judged, t.last_util / 100.0, t.global_util / 100.0,
				   t.heur_util / 100.0, t.throttled_ns / 1e6, t.run_ns / 1e6,
				   t.exited ? "exited" : "live");
	}
	return json ? out + "]\n" : out;
}

namespace
{

// One program's line: JSON or the table's.
std::string prog_line(uint32_t id, const bpf_prog_info &info, bool json)
{
	const unsigned xl = info.xlated_prog_len / 8;
	// run_cnt/run_time_ns count only while kernel.bpf_stats_enabled=1
	const unsigned long long cnt = info.run_cnt, ns = info.run_time_ns;
	if (json)
		return dump({{"id", id},
			     {"name", info.name},
			     {"xlated_insns", xl},
			     {"jited_bytes", info.jited_prog_len},
			     {"verified_insns", info.verified_insns},
			     {"run_cnt", cnt},
			     {"run_time_ns", ns}});
	return fmt::format("{:<20} id {:<5} xlated {:>5} insns  jited {:>6} bytes  verified {:>7} "
			   "insns  runs {:>9}  avg {:>6} ns\n",
			   info.name, id, xl, info.jited_prog_len, info.verified_insns, cnt,
			   cnt ? ns / cnt : 0ULL);
}

} // namespace

std::string progs_text(const std::string &prefix, bool json)
{
	std::string out;
	int n = 0;
	unsigned long long total_x = 0, total_v = 0;
	each_object<bpf_prog_info>(
		bpf_prog_get_next_id, bpf_prog_get_fd_by_id,
		[&](uint32_t id, int, const bpf_prog_info &info) {
			if ((info.type == BPF_PROG_TYPE_STRUCT_OPS ||
			     info.type == BPF_PROG_TYPE_TRACING) &&
			    !std::strncmp(info.name, prefix.c_str(), prefix.size())) {
				out += (json && n ? ",\n " : "") + prog_line(id, info, json);
				total_x += info.xlated_prog_len / 8;
				total_v += info.verified_insns;
				n++;
			}
			return false;
		});
	if (!n)
		fail(kFail, "no " + prefix + "* program is loaded" +
				    (geteuid() ? " (or not visible: run as root)" : ""));
	if (json)
		return "[" + out + "]\n";
	return out + fmt::format("{:<20} {} programs, xlated {} insns, verified {} insns\n",
				 "total", n, total_x, total_v);
}

void set_params(const Maps &m, const std::map<std::string, std::string> &knobs)
{
	const scx_hpc_params cur = read_params(m);
	scx_hpc_params next = cur;
	std::string err;
	if (!scxhpc::apply_knobs(next, knobs, true, err))
		fail(kBadSetting, err);
	next.gen = cur.gen + 1;
	uint32_t zero = 0;
	if (bpf_map_update_elem(m.params, &zero, &next, BPF_ANY))
		fail(kFail,
		     std::string("cannot write scx_hpc's parameters: ") + std::strerror(errno));
}

void fix_prio(const Maps &m, uint32_t pid, uint32_t prio)
{
	int r = prio ? bpf_map_update_elem(m.fixed, &pid, &prio, BPF_ANY)
		     : bpf_map_delete_elem(m.fixed, &pid);
	if (r && !(errno == ENOENT && !prio))
		fail(kFail, fmt::format("prio: {} {}: {}", pid, prio, std::strerror(errno)));
	scx_hpc_task_info ti{};
	if (!bpf_map_lookup_elem(m.tasks, &pid, &ti)) {
		ti.fixed_prio = prio;
		if (prio)
			ti.prio = prio;
		bpf_map_update_elem(m.tasks, &pid, &ti, BPF_EXIST);
	}
}

} // namespace hpcctl::scx
