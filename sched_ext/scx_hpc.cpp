// SPDX-License-Identifier: GPL-2.0
// scx_hpc: loader and monitor of the scx_hpc sched_ext scheduler.
//
//   scx_hpc [knobs] [--duration S] [--json]   load, print statistics every
//                                            second, unload on SIGINT/SIGTERM
//   scx_hpc --stats-once [--json]            statistics of the running instance
//   scx_hpc --dump-tasks [--json]            per-task state of the running instance
//   scx_hpc --set KEY=VALUE ...              change knobs of the running instance
//   scx_hpc --prio PID=P ...                 fix a task's priority (0: dynamic again)
//   scx_hpc --prog-info [--json]             instruction counts of the loaded programs
//
// Knobs have the names and ranges of /sys/kernel/sched_hpc (see
// Documentation/scheduler/sched-hpc-abi.txt); the policy core's are checked
// with hpc_params_check() through tools/common/params_text. Invalid values:
// exit status 2 and nothing is loaded or changed. A fixed priority must be
// in the emulation's range (0: dynamic) and the task SCHED_EXT (exit 1).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <linux/magic.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "params_text.hpp"

extern "C" {
#include "hpc_smt.h"
#include "scx_hpc.h"
}
#include "scx_hpc.bpf.skel.h"

namespace
{

constexpr const char *SCX_SYSFS = "/sys/kernel/sched_ext";
constexpr int EXIT_USAGE = 2;
constexpr int kSchedExt = 7; // SCHED_EXT (include/uapi/linux/sched.h, 6.12+)
const hpc_prio_range prio_range = {HPC_SMT_EMUL_PRIO_MIN, HPC_SMT_EMUL_PRIO_MAX};

volatile sig_atomic_t exiting;

std::error_code &ec_sink()
{
	static std::error_code ec;
	return ec;
}
bool verbose;

void on_signal(int)
{
	exiting = 1;
}

int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level != LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	std::string s = ss.str();
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

// The CPU that shares an emulated core with each possible CPU, -1 for none:
// the policy core's rule (hpc_ctx_sibling()) on the topology, where a
// hardware sibling is another CPU of the same package and core id.
std::vector<int> cpu_siblings(int ncpus)
{
	const size_t n = static_cast<size_t>(ncpus);
	std::vector<std::pair<uint32_t, uint32_t>> id(n);
	std::vector<bool> known(n, false);
	for (size_t c = 0; c < n; c++) {
		const std::string d =
			"/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
		known[c] = hpc::parse_u32(read_file(d + "physical_package_id"), id[c].first) &&
			   hpc::parse_u32(read_file(d + "core_id"), id[c].second);
	}
	std::vector<int> hw(n, -1), sib(n, -1);
	for (size_t c = 0; c < n; c++)
		for (size_t o = 0; o < n && known[c]; o++)
			if (o != c && known[o] && id[o] == id[c]) {
				hw[c] = static_cast<int>(o);
				break;
			}
	for (size_t c = 0; c < n; c++) {
		const size_t other = c ^ 1;
		sib[c] = hpc_ctx_sibling(static_cast<int>(c), hw[c], other < n && hw[other] < 0);
	}
	return sib;
}

// ------------------------------------------------------------ knobs

// Apply KEY=VALUE (sysfs names) to @sp. Core knobs go through params_text;
// timeslice_us, emul_period_us, queue and backend are the scheduler's own.
bool apply_knob(scx_hpc_params &sp, const std::string &key, const std::string &val,
		std::string &err)
{
	if (key == "backend") {
		// the SMT emulation by bandwidth, or none (priorities not applied)
		uint32_t on;
		if (!hpc::parse_emul_backend(val, on, err))
			return false;
		sp.no_emul = !on;
		return true;
	}
	if (hpc::is_sched_knob(key)) {
		uint32_t v;
		if (!hpc::parse_sched_knob(key, val, v, err))
			return false;
		if (key == "queue")
			sp.fifo = v;
		else
			(key == "timeslice_us" ? sp.slice_us : sp.period_us) = v;
		return true;
	}
	return hpc::apply_setting(sp.core, key + "=" + val, &prio_range, err);
}

void default_params(scx_hpc_params &sp)
{
	std::memset(&sp, 0, sizeof(sp));
	hpc_params_default(&sp.core);
	sp.slice_us = HPC_DEF_TIMESLICE_US;
	sp.period_us = HPC_DEF_EMUL_PERIOD_US;
	sp.fifo = 0;
}

// ------------------------------------------------------------ maps of a running instance

struct Maps {
	int params = -1, cpus = -1, tasks = -1, fixed = -1;
	~Maps()
	{
		for (int fd : {params, cpus, tasks, fixed})
			if (fd >= 0)
				close(fd);
	}
};

// Find the maps of the loaded scx_hpc by name and value size (the newest
// one if several). Returns false if scx_hpc is not loaded.
bool find_maps(Maps &m)
{
	struct Want {
		const char *name;
		uint32_t vsize;
		int *fd;
		uint32_t id;
	} want[] = {
		{"params_map", sizeof(scx_hpc_params), &m.params, 0},
		{"cpu_ctx", sizeof(scx_hpc_cpu), &m.cpus, 0},
		{"task_info", sizeof(scx_hpc_task_info), &m.tasks, 0},
		{"fixed_prios", sizeof(uint32_t), &m.fixed, 0},
	};
	uint32_t id = 0;
	while (!bpf_map_get_next_id(id, &id)) {
		int fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			continue;
		bpf_map_info info{};
		uint32_t len = sizeof(info);
		bool kept = false;
		if (!bpf_map_get_info_by_fd(fd, &info, &len)) {
			for (auto &w : want) {
				if (!strcmp(info.name, w.name) && info.value_size == w.vsize &&
				    id > w.id) {
					if (*w.fd >= 0)
						close(*w.fd);
					*w.fd = fd;
					w.id = id;
					kept = true;
				}
			}
		}
		if (!kept)
			close(fd);
	}
	return m.params >= 0 && m.cpus >= 0 && m.tasks >= 0 && m.fixed >= 0;
}

// ------------------------------------------------------------ fixed priorities

struct FixedPrio {
	uint32_t pid, prio;
};

// Parse and check --prio PID=P (all before any is applied). Returns an exit
// status: 0, EXIT_USAGE (malformed, P outside the range) or 1 (no such task,
// or not a SCHED_EXT task).
int parse_prios(const std::vector<std::string> &args, std::vector<FixedPrio> &out)
{
	for (auto &a : args) {
		auto eq = a.find('=');
		auto num = [](const std::string &t, unsigned long &v) {
			if (t.empty() || t.size() > 9 ||
			    t.find_first_not_of("0123456789") != std::string::npos)
				return false;
			v = std::stoul(t);
			return true;
		};
		unsigned long pid = 0, prio = 0;
		if (eq == std::string::npos || !num(a.substr(0, eq), pid) || !pid ||
		    !num(a.substr(eq + 1), prio)) {
			std::fprintf(stderr, "scx_hpc: --prio %s: expected PID=PRIO (integers)\n",
				     a.c_str());
			return EXIT_USAGE;
		}
		if (prio && (prio < prio_range.min || prio > prio_range.max)) {
			std::fprintf(
				stderr,
				"scx_hpc: invalid value: prio %lu is outside %u..%u (0: dynamic)\n",
				prio, prio_range.min, prio_range.max);
			return EXIT_USAGE;
		}
		int pol = sched_getscheduler(static_cast<pid_t>(pid));
		if (pol < 0) {
			std::fprintf(stderr, "scx_hpc: --prio: no task %lu\n", pid);
			return 1;
		}
		if ((pol & ~SCHED_RESET_ON_FORK) != kSchedExt) {
			std::fprintf(stderr,
				     "scx_hpc: --prio: task %lu is not SCHED_EXT (policy %d): "
				     "scx_hpc does not schedule it\n",
				     pid, pol & ~SCHED_RESET_ON_FORK);
			return 1;
		}
		out.push_back({static_cast<uint32_t>(pid), static_cast<uint32_t>(prio)});
	}
	return 0;
}

// Write the checked fixed priorities; the task's shown state follows at once.
int apply_prios(const Maps &m, const std::vector<FixedPrio> &prios)
{
	for (auto &f : prios) {
		int r = f.prio ? bpf_map_update_elem(m.fixed, &f.pid, &f.prio, BPF_ANY)
			       : bpf_map_delete_elem(m.fixed, &f.pid);
		if (r && !(errno == ENOENT && !f.prio)) {
			std::fprintf(stderr, "scx_hpc: --prio %u=%u: %s\n", f.pid, f.prio,
				     std::strerror(errno));
			return 1;
		}
		scx_hpc_task_info ti{};
		if (!bpf_map_lookup_elem(m.tasks, &f.pid, &ti)) {
			ti.fixed_prio = f.prio;
			if (f.prio)
				ti.prio = f.prio;
			bpf_map_update_elem(m.tasks, &f.pid, &ti, BPF_EXIST);
		}
	}
	return 0;
}

// ------------------------------------------------------------ statistics

struct Stats {
	std::vector<scx_hpc_cpu> cpus;
	scx_hpc_params params{};
	uint64_t nr_tasks = 0, nr_live = 0;
};

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
	}
	uint32_t key, next;
	uint32_t *prev = nullptr;
	while (!bpf_map_get_next_key(tasks_fd, prev, &next)) {
		scx_hpc_task_info ti{};
		if (!bpf_map_lookup_elem(tasks_fd, &next, &ti)) {
			s.nr_tasks++;
			s.nr_live += !ti.exited;
		}
		key = next;
		prev = &key;
	}
	return s;
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

std::string json_str(const char *s, size_t max)
{
	std::string o = "\"";
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\')
			o += '\\', o += c;
		else if (c < 0x20)
			o += ' ';
		else
			o += c;
	}
	return o + "\"";
}

void print_stats(const Stats &s, bool json)
{
	uint64_t nr_running = 0, nr_iter = 0, nr_sib = 0, nr_thr = 0, thr_ns = 0, nr_steal = 0,
		 nr_direct = 0, nr_kick = 0, nr_move = 0, nr_wake = 0;
	for (auto &c : s.cpus) {
		nr_running += c.nr_running;
		nr_iter += c.nr_iter;
		nr_sib += c.nr_sib_judged;
		nr_thr += c.nr_throttle;
		thr_ns += c.throttled_ns;
		nr_steal += c.nr_steal;
		nr_direct += c.nr_direct;
		nr_kick += c.nr_kick;
		nr_move += c.nr_move;
		nr_wake += c.nr_wake_preempt;
	}
	std::string state = read_file(std::string(SCX_SYSFS) + "/state");
	if (json) {
		std::printf("{\"state\":\"%s\",\"ops\":\"%s\",\"tasks\":%llu,\"live_tasks\":%llu,"
			    "\"running\":%llu,\"iterations\":%llu,\"sibling_judged\":%llu,"
			    "\"throttles\":%llu,\"throttled_ns\":%llu,\"steals\":%llu,"
			    "\"moves\":%llu,\"direct\":%llu,\"kicks\":%llu,\"wake_preempts\":%llu,"
			    "\"params\":{\"low_util\":%u,\"high_util\":%u,\"min_prio\":%u,"
			    "\"max_prio\":%u,\"global_weight\":%u,\"last_weight\":%u,"
			    "\"heuristic\":\"%s\",\"min_wait_us\":%u,\"timeslice_us\":%u,"
			    "\"emul_period_us\":%u,\"queue\":\"%s\",\"backend\":\"%s\"},"
			    "\"cpus\":[",
			    state.c_str(), read_file(std::string(SCX_SYSFS) + "/root/ops").c_str(),
			    (unsigned long long)s.nr_tasks, (unsigned long long)s.nr_live,
			    (unsigned long long)nr_running, (unsigned long long)nr_iter,
			    (unsigned long long)nr_sib, (unsigned long long)nr_thr,
			    (unsigned long long)thr_ns, (unsigned long long)nr_steal,
			    (unsigned long long)nr_move, (unsigned long long)nr_direct,
			    (unsigned long long)nr_kick, (unsigned long long)nr_wake,
			    s.params.core.low_util, s.params.core.high_util, s.params.core.min_prio,
			    s.params.core.max_prio, s.params.core.global_weight,
			    s.params.core.last_weight,
			    s.params.core.heuristic < HPC_HEUR_NR
				    ? hpc_heuristic_names[s.params.core.heuristic]
				    : "?",
			    s.params.core.min_wait_us, s.params.slice_us, s.params.period_us,
			    s.params.fifo ? "fifo" : "rr",
			    s.params.no_emul ? "none" : hpc::kBackendEmul);
		for (size_t i = 0; i < s.cpus.size(); i++) {
			auto &c = s.cpus[i];
			std::printf(
				"%s{\"cpu\":%zu,\"online\":%u,\"running\":%u,\"throttled\":%u,"
				"\"prio\":%u,\"pid\":%u,\"throttles\":%llu,\"throttled_ns\":%llu,"
				"\"steals\":%llu,\"moves\":%llu,\"run_ns\":%llu}",
				i ? "," : "", i, c.online, c.running, c.throttled, c.cur_prio,
				c.cur_pid, (unsigned long long)c.nr_throttle,
				(unsigned long long)c.throttled_ns, (unsigned long long)c.nr_steal,
				(unsigned long long)c.nr_move, (unsigned long long)c.run_ns);
		}
		std::printf("]}\n");
	} else {
		std::printf("scx_hpc: state=%s tasks=%llu/%llu iter=%llu sib_judged=%llu "
			    "throttles=%llu throttled=%.1fms steals=%llu moves=%llu direct=%llu "
			    "kicks=%llu wake_preempts=%llu\n",
			    state.c_str(), (unsigned long long)s.nr_live,
			    (unsigned long long)s.nr_tasks, (unsigned long long)nr_iter,
			    (unsigned long long)nr_sib, (unsigned long long)nr_thr, thr_ns / 1e6,
			    (unsigned long long)nr_steal, (unsigned long long)nr_move,
			    (unsigned long long)nr_direct, (unsigned long long)nr_kick,
			    (unsigned long long)nr_wake);
		for (size_t i = 0; i < s.cpus.size(); i++) {
			auto &c = s.cpus[i];
			std::printf("  cpu%-2zu %s%s prio=%u pid=%u run=%.1fms throttles=%llu "
				    "throttled=%.1fms steals=%llu moves=%llu\n",
				    i, c.online ? "on " : "off", c.throttled ? " THR" : "    ",
				    c.cur_prio, c.cur_pid, c.run_ns / 1e6,
				    (unsigned long long)c.nr_throttle, c.throttled_ns / 1e6,
				    (unsigned long long)c.nr_steal, (unsigned long long)c.nr_move);
		}
	}
	std::fflush(stdout);
}

void print_tasks(const std::vector<scx_hpc_task_info> &tasks, bool json)
{
	if (json) {
		std::printf("[");
		for (size_t i = 0; i < tasks.size(); i++) {
			auto &t = tasks[i];
			std::printf("%s{\"pid\":%u,\"tgid\":%u,\"comm\":%s,\"cpu\":%u,\"prio\":%u,"
				    "\"prev_prio\":%u,\"iterations\":%llu,\"judgements\":%llu,"
				    "\"last_util\":%u,"
				    "\"global_util\":%u,\"heur_util\":%u,\"last_run_ns\":%llu,"
				    "\"last_wait_ns\":%llu,\"throttled_ns\":%llu,\"run_ns\":%llu,"
				    "\"fixed_prio\":%u,\"exited\":%u}",
				    i ? ",\n " : "", t.pid, t.tgid, json_str(t.comm, 16).c_str(),
				    t.cpu, t.prio, t.prev_prio, (unsigned long long)t.nr_iter,
				    (unsigned long long)t.nr_judged, t.last_util, t.global_util,
				    t.heur_util, (unsigned long long)t.last_run_ns,
				    (unsigned long long)t.last_wait_ns,
				    (unsigned long long)t.throttled_ns,
				    (unsigned long long)t.run_ns, t.fixed_prio, t.exited);
		}
		std::printf("]\n");
	} else {
		std::printf("%7s %7s %-16s %3s %4s %5s %5s %6s %6s %7s %7s %7s %11s %9s %s\n",
			    "pid", "tgid", "comm", "cpu", "prio", "prev", "fixed", "iter", "judged",
			    "U_last", "U_glob", "U_heur", "throttledms", "run_ms", "state");
		for (auto &t : tasks)
			std::printf("%7u %7u %-16.16s %3u %4u %5u %5s %6llu %6llu %6.2f%% %6.2f%% "
				    "%6.2f%% %11.1f %9.1f %s\n",
				    t.pid, t.tgid, t.comm, t.cpu, t.prio, t.prev_prio,
				    t.fixed_prio ? std::to_string(t.fixed_prio).c_str() : "-",
				    (unsigned long long)t.nr_iter, (unsigned long long)t.nr_judged,
				    t.last_util / 100.0, t.global_util / 100.0, t.heur_util / 100.0,
				    t.throttled_ns / 1e6, t.run_ns / 1e6,
				    t.exited ? "exited" : "live");
	}
	std::fflush(stdout);
}

// Instruction counts (and, with kernel.bpf_stats_enabled=1, run counts and
// times) of the loaded struct_ops and tracing programs named PREFIX*
// (scx_hpc's: "hpc_", its following programs "hpc_take_*" when loaded; the
// bench compares with scx_simple's, "simple_").
int prog_info(bool json, const std::string &prefix)
{
	uint32_t id = 0;
	int n = 0;
	uint64_t total_x = 0, total_v = 0;
	if (json)
		std::printf("[");
	while (!bpf_prog_get_next_id(id, &id)) {
		int fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		bpf_prog_info info{};
		uint32_t len = sizeof(info);
		if (!bpf_prog_get_info_by_fd(fd, &info, &len) &&
		    (info.type == BPF_PROG_TYPE_STRUCT_OPS || info.type == BPF_PROG_TYPE_TRACING) &&
		    !strncmp(info.name, prefix.c_str(), prefix.size())) {
			unsigned xl = info.xlated_prog_len / 8;
			// run_cnt/run_time_ns count only while kernel.bpf_stats_enabled=1
			unsigned long long cnt = info.run_cnt, ns = info.run_time_ns;
			if (json)
				std::printf("%s{\"id\":%u,\"name\":\"%s\",\"xlated_insns\":%u,"
					    "\"jited_bytes\":%u,\"verified_insns\":%u,"
					    "\"run_cnt\":%llu,\"run_time_ns\":%llu}",
					    n ? ",\n " : "", id, info.name, xl, info.jited_prog_len,
					    info.verified_insns, cnt, ns);
			else
				std::printf("%-20s id %-5u xlated %5u insns  jited %6u bytes  "
					    "verified %7u insns  runs %9llu  avg %6llu ns\n",
					    info.name, id, xl, info.jited_prog_len,
					    info.verified_insns, cnt, cnt ? ns / cnt : 0ULL);
			total_x += xl;
			total_v += info.verified_insns;
			n++;
		}
		close(fd);
	}
	if (json)
		std::printf("]\n");
	else if (n)
		std::printf("%-20s %d programs, xlated %llu insns, verified %llu insns\n", "total",
			    n, (unsigned long long)total_x, (unsigned long long)total_v);
	if (!n) {
		std::fprintf(stderr, "scx_hpc: no %s* program is loaded\n", prefix.c_str());
		return 1;
	}
	return 0;
}

// ------------------------------------------------------------ following

struct Taken {
	int switched = 0, failed = 0;
	int events[4] = {}; // by enum scx_hpc_take_why
};

// Switch a thread of the fair class to SCHED_EXT (it then runs under
// scx_hpc; children it forks afterwards inherit the policy). Threads that
// are SCHED_EXT already, real-time, deadline or gone are left as they are.
void take_tid(long tid, Taken &t)
{
	pid_t p = static_cast<pid_t>(tid);
	int pol = sched_getscheduler(p);
	if (pol < 0) {
		t.failed += errno != ESRCH;
		return;
	}
	pol &= ~SCHED_RESET_ON_FORK;
	if (pol != SCHED_OTHER && pol != SCHED_BATCH && pol != SCHED_IDLE)
		return;
	sched_param sp{};
	if (!sched_setscheduler(p, kSchedExt, &sp))
		t.switched++;
	else if (errno != ESRCH)
		t.failed++;
}

// Every thread of process @pid (/proc/PID/task).
void take_threads(long pid, Taken &t)
{
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	for (const auto &e : std::filesystem::directory_iterator(
		     dir, std::filesystem::directory_options::skip_permission_denied, ec_sink())) {
		long tid = std::strtol(e.path().filename().c_str(), nullptr, 10);
		if (tid > 0)
			take_tid(tid, t);
	}
}

// Every thread of process @pid and of its descendants. Each process is put
// in the BPF side's tree (@tgids_fd) before its threads are switched and its
// children listed: a process it forks after that is reported by the BPF
// side, one forked before is in /proc/PID/task/TID/children.
void take_tree(long pid, Taken &t, int tgids_fd, int depth = 0)
{
	if (depth > 64)
		return;
	uint32_t tgid = static_cast<uint32_t>(pid);
	uint8_t one = 1;
	if (tgids_fd >= 0)
		bpf_map_update_elem(tgids_fd, &tgid, &one, BPF_ANY);
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	for (const auto &e : std::filesystem::directory_iterator(
		     dir, std::filesystem::directory_options::skip_permission_denied, ec_sink())) {
		long tid = std::strtol(e.path().filename().c_str(), nullptr, 10);
		if (tid <= 0)
			continue;
		take_tid(tid, t);
		std::ifstream ch(e.path() / "children");
		long kid;
		while (ch >> kid)
			take_tree(kid, t, tgids_fd, depth + 1);
	}
}

// The threads in cgroup @dir (v2: cgroup.threads).
void take_cgroup(const std::string &dir, Taken &t)
{
	std::ifstream f(dir + "/cgroup.threads");
	long tid;
	while (f >> tid)
		take_tid(tid, t);
}

// Switch what the BPF side reported (its queue of struct scx_hpc_take_event).
void drain_take_events(int queue_fd, Taken &t)
{
	scx_hpc_take_event ev{};
	while (!bpf_map_lookup_and_delete_elem(queue_fd, nullptr, &ev)) {
		t.events[ev.why < 4 ? ev.why : 0]++;
		if (ev.threadgroup)
			take_threads(ev.pid, t);
		else
			take_tid(ev.pid, t);
	}
}

// --take-pid / --take-cgroup, checked before anything is loaded. A cgroup
// must be a cgroup v2 directory; its id is its inode number.
bool check_takes(const std::vector<long> &pids, const std::vector<std::string> &cgroups,
		 std::vector<uint64_t> &cg_ids)
{
	for (long pid : pids) {
		if (pid <= 0 || access(("/proc/" + std::to_string(pid)).c_str(), F_OK)) {
			std::fprintf(stderr, "scx_hpc: --take-pid %ld: no such process\n", pid);
			return false;
		}
	}
	if (cgroups.size() > SCX_HPC_MAX_TAKE_CGROUPS) {
		std::fprintf(stderr, "scx_hpc: at most %d --take-cgroup\n",
			     SCX_HPC_MAX_TAKE_CGROUPS);
		return false;
	}
	for (auto &cg : cgroups) {
		struct statfs fs {
		};
		struct stat st {
		};
		if (statfs(cg.c_str(), &fs) || stat(cg.c_str(), &st)) {
			std::fprintf(stderr, "scx_hpc: --take-cgroup %s: %s\n", cg.c_str(),
				     strerror(errno));
			return false;
		}
		if (fs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode)) {
			std::fprintf(stderr,
				     "scx_hpc: --take-cgroup %s: not a cgroup v2 directory\n",
				     cg.c_str());
			return false;
		}
		cg_ids.push_back(st.st_ino);
	}
	return true;
}

// The kernel side can run a sched_ext scheduler now? Message and false if not.
bool check_kernel()
{
	if (access(SCX_SYSFS, F_OK)) {
		std::fprintf(
			stderr,
			"scx_hpc: this kernel has no sched_ext (%s missing): it needs Linux "
			"6.12+ built with CONFIG_SCHED_CLASS_EXT=y and CONFIG_DEBUG_INFO_BTF=y\n",
			SCX_SYSFS);
		return false;
	}
	std::string state = read_file(std::string(SCX_SYSFS) + "/state");
	if (state != "disabled") {
		std::fprintf(
			stderr,
			"scx_hpc: a sched_ext scheduler is already active (state %s, ops %s)\n",
			state.c_str(), read_file(std::string(SCX_SYSFS) + "/root/ops").c_str());
		return false;
	}
	return true;
}

// What the command line asks for.
struct Cli {
	std::map<std::string, std::string> knobs; // sysfs name -> value text
	bool fifo = false, json = false, stats_once = false, dump = false, pinfo = false;
	bool quiet = false, when_idle = false;
	double duration = 0;
	std::vector<std::string> sets, prios;
	std::string prog_prefix = "hpc_";
	std::vector<long> take_pids;
	std::vector<std::string> take_cgroups;

	bool controls() const { return stats_once || dump || !sets.empty() || !prios.empty(); }
	bool follows() const { return !take_pids.empty() || !take_cgroups.empty(); }
};

// The possible CPUs, if the BPF program's maps can hold them; else 0.
int count_cpus()
{
	int ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		std::fprintf(stderr, "scx_hpc: cannot count the possible CPUs\n");
		return 0;
	}
	if (ncpus > SCX_HPC_MAX_CPUS) {
		std::fprintf(stderr, "scx_hpc: %d possible CPUs, at most %d supported\n", ncpus,
			     SCX_HPC_MAX_CPUS);
		return 0;
	}
	return ncpus;
}

// The BPF object, opened and set up for @ncpus CPUs (the core's pairing
// rule on the topology); the follow programs loaded only if @follow.
scx_hpc *open_bpf(int ncpus, bool follow)
{
	scx_hpc *skel = scx_hpc__open();
	if (!skel) {
		std::fprintf(stderr, "scx_hpc: cannot open the BPF object: %s\n", strerror(errno));
		return nullptr;
	}
	skel->rodata->nr_cpus = ncpus;
	const std::vector<int> sib = cpu_siblings(ncpus);
	for (int c = 0; c < ncpus; c++)
		skel->rodata->cpu_sibling[c] = sib[static_cast<size_t>(c)];
	std::string seq = read_file(std::string(SCX_SYSFS) + "/hotplug_seq");
	uint32_t hs = 0;
	if (!seq.empty() && hpc::parse_u32(seq, hs))
		skel->struct_ops.hpc_ops->hotplug_seq = hs;
	bpf_map__set_autoattach(skel->maps.hpc_ops, false);
	// The following programs run on every fork and cgroup move of the
	// system: loaded only when something is to be followed.
	for (bpf_program *p :
	     {skel->progs.hpc_take_attach, skel->progs.hpc_take_fork, skel->progs.hpc_take_exit})
		bpf_program__set_autoload(p, follow);
	return skel;
}

// Load @skel, write the parameters @sp and enable the scheduler: its link,
// or nullptr (said why; @skel destroyed).
bpf_link *enable(scx_hpc *skel, const scx_hpc_params &sp)
{
	const char *what = nullptr;
	int err = scx_hpc__load(skel);
	if (err) {
		std::fprintf(stderr,
			     "scx_hpc: the kernel rejected the BPF scheduler (%s); the verifier "
			     "log, if any, is above\n",
			     strerror(-err));
		scx_hpc__destroy(skel);
		return nullptr;
	}
	uint32_t zero = 0;
	bpf_link *link = nullptr;
	if (bpf_map__update_elem(skel->maps.params_map, &zero, sizeof(zero), &sp, sizeof(sp),
				 BPF_ANY))
		what = "cannot write the parameters";
	else if (!(link = bpf_map__attach_struct_ops(skel->maps.hpc_ops)))
		what = "cannot enable the scheduler";
	if (what) {
		std::fprintf(stderr, "scx_hpc: %s: %s\n", what, strerror(errno));
		scx_hpc__destroy(skel);
	}
	return link;
}

// Follow the process trees and cgroups of @c (their cgroup ids @cg_ids):
// false if the programs cannot attach.
bool start_follow(scx_hpc *skel, const Cli &c, const std::vector<uint64_t> &cg_ids, Taken &taken)
{
	bool ok = true;
	for (uint64_t id : cg_ids) {
		uint8_t one = 1;
		ok &= !bpf_map__update_elem(skel->maps.take_cgroups, &id, sizeof(id), &one,
					    sizeof(one), BPF_ANY);
	}
	skel->links.hpc_take_attach = bpf_program__attach(skel->progs.hpc_take_attach);
	skel->links.hpc_take_fork = bpf_program__attach(skel->progs.hpc_take_fork);
	skel->links.hpc_take_exit = bpf_program__attach(skel->progs.hpc_take_exit);
	ok &= skel->links.hpc_take_attach && skel->links.hpc_take_fork && skel->links.hpc_take_exit;
	if (!ok) {
		std::fprintf(stderr, "scx_hpc: cannot follow the cgroups/process trees: %s\n",
			     strerror(errno));
		return false;
	}
	int tfd = bpf_map__fd(skel->maps.take_tgids);
	for (long pid : c.take_pids)
		take_tree(pid, taken, tfd);
	for (auto &cg : c.take_cgroups)
		take_cgroup(cg, taken);
	std::printf("scx_hpc: switched %d threads to SCHED_EXT (%d failed); following "
		    "%zu process tree(s), %zu cgroup(s)\n",
		    taken.switched, taken.failed, c.take_pids.size(), c.take_cgroups.size());
	return true;
}

// One second of the loaded scheduler: the follow events, the followed
// cgroups again (a queue that was full, a task moved back to the fair
// class).
void one_second(scx_hpc *skel, const Cli &c, Taken &taken)
{
	const Taken before = taken;
	for (int i = 0; i < 10 && !exiting; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		if (c.follows())
			drain_take_events(bpf_map__fd(skel->maps.take_events), taken);
	}
	for (auto &cg : c.take_cgroups)
		take_cgroup(cg, taken);
	if (c.follows() && !c.quiet && taken.switched != before.switched)
		std::printf("scx_hpc: followed: %d more threads switched (%d in all, %d "
			    "failed)\n",
			    taken.switched - before.switched, taken.switched, taken.failed);
}

// --exit-when-idle: unload once the tasks it scheduled are gone (or if none
// came within the first 10 s), after @up seconds, by the statistics @st.
bool idle_now(const Stats &st, const Cli &c, double up)
{
	if (!c.when_idle || st.nr_live || (!st.nr_tasks && up < 10))
		return false;
	if (!c.quiet)
		std::printf("scx_hpc: no SCHED_EXT task left: unloading\n");
	return true;
}

// Until a signal, the scheduler's own exit, --duration or --exit-when-idle.
void serve(scx_hpc *skel, const Cli &c, Taken &taken, unsigned ncpus)
{
	const auto t0 = std::chrono::steady_clock::now();
	while (!exiting && !__sync_val_compare_and_swap(&skel->data->uei.kind, -1, -1)) {
		one_second(skel, c, taken);
		// The statistics, read once a second if shown or needed.
		Stats st{};
		if (!c.quiet || c.when_idle)
			st = read_stats(bpf_map__fd(skel->maps.params_map),
					bpf_map__fd(skel->maps.cpu_ctx),
					bpf_map__fd(skel->maps.task_info), ncpus);
		if (!c.quiet)
			print_stats(st, c.json);
		const double up =
			std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
				.count();
		if ((c.duration > 0 && up >= c.duration) || idle_now(st, c, up))
			break;
	}
	if (c.follows())
		std::printf("scx_hpc: followed: %d threads switched (%d failed); events: moved "
			    "into a followed cgroup: %d, forked inside one: %d, forked into a "
			    "followed tree: %d\n",
			    taken.switched, taken.failed, taken.events[SCX_HPC_TAKE_CGROUP_MOVE],
			    taken.events[SCX_HPC_TAKE_CGROUP_FORK],
			    taken.events[SCX_HPC_TAKE_TREE_FORK]);
}

// Why the scheduler left, if it did on its own: 1 if it was kicked out.
int exit_status(const scx_hpc_exit &ue)
{
	if (!ue.kind)
		return 0;
	std::fprintf(stderr, "scx_hpc: EXIT: %s", ue.reason);
	if (ue.msg[0])
		std::fprintf(stderr, " (%s)", ue.msg);
	std::fprintf(stderr, " [kind %d, code %lld]\n", ue.kind, (long long)ue.exit_code);
	/* SCX_EXIT_ERROR and above: the scheduler was kicked out */
	return ue.kind >= 1024 ? 1 : 0;
}

// Load, enable and serve until the end; unload.
int run(const scx_hpc_params &sp, const Cli &c)
{
	std::vector<uint64_t> cg_ids;
	if (!check_takes(c.take_pids, c.take_cgroups, cg_ids))
		return EXIT_USAGE;
	if (!check_kernel())
		return 1;
	const int ncpus = count_cpus();
	scx_hpc *skel = ncpus ? open_bpf(ncpus, c.follows()) : nullptr;
	bpf_link *link = skel ? enable(skel, sp) : nullptr;
	if (!link)
		return 1;
	if (!c.quiet)
		std::printf("scx_hpc: enabled on %d CPUs (partial: SCHED_EXT tasks only)\n", ncpus);
	Taken taken;
	if (c.follows() && !start_follow(skel, c, cg_ids, taken)) {
		bpf_link__destroy(link);
		scx_hpc__destroy(skel);
		return 1;
	}
	std::fflush(stdout);
	serve(skel, c, taken, static_cast<unsigned>(ncpus));
	bpf_link__destroy(link);
	const int rc = exit_status(skel->data->uei);
	scx_hpc__destroy(skel);
	return rc;
}

} // namespace

namespace
{

// The options, each into @c.
void add_options(CLI::App &app, Cli &c)
{
	auto knob = [&](const char *flag, const char *name, const std::string &help) {
		app.add_option_function<std::string>(
			   flag, [&c, name](const std::string &v) { c.knobs[name] = v; }, help)
			->type_name(std::string(name) == "heuristic" ||
						    std::string(name) == "backend"
					    ? "NAME"
					    : "N");
	};
	knob("--low-util", "low_util", "percent below which a task is low (default 65)");
	knob("--high-util", "high_util", "percent above which a task is high (default 85)");
	knob("--min-prio", "min_prio",
	     "lowest priority the heuristic gives (default 4, range 1..6)");
	knob("--max-prio", "max_prio",
	     "highest priority the heuristic gives (default 6, range 1..6)");
	knob("--global-weight", "global_weight", "Adaptive's G, percent (G + L = 100)");
	knob("--last-weight", "last_weight", "Adaptive's L, percent (G + L = 100)");
	knob("--heuristic", "heuristic", hpc::heuristic_choice() + " (default uniform)");
	knob("--min-wait-us", "min_wait_us",
	     "shorter waits do not close an iteration (default 100)");
	knob("--slice-us", "timeslice_us", "RR time slice, 1000..1000000 (default 100000)");
	knob("--period-us", "emul_period_us",
	     "bandwidth period of the SMT emulation, 1000..1000000 (default 10000)");
	knob("--backend", "backend",
	     std::string(hpc::kBackendEmul) +
		     " (default: the SMT emulation by bandwidth) or none (priorities decided, "
		     "not applied)");
	app.add_flag("--fifo", c.fifo, "FIFO queues (run until sleep) instead of RR");
	app.add_flag("--json", c.json, "JSON output");
	app.add_flag("--stats-once", c.stats_once, "print the running instance's statistics once");
	app.add_flag("--dump-tasks", c.dump, "print the running instance's per-task state");
	app.add_flag("--prog-info", c.pinfo, "print the loaded programs' instruction counts");
	app.add_option("--prog-prefix", c.prog_prefix,
		       "--prog-info: the struct_ops programs named so (default hpc_)");
	app.add_option("--set", c.sets, "KEY=VALUE (sysfs names): change the running instance")
		->type_name("KEY=VALUE");
	app.add_option("--prio", c.prios,
		       "PID=P: fix a task's priority in the running instance (P in 1..6; 0: "
		       "dynamic again); the task must be SCHED_EXT")
		->type_name("PID=P");
	app.add_option("--duration", c.duration, "unload after this many seconds (0: never)")
		->check(CLI::NonNegativeNumber);
	app.add_option("--take-pid", c.take_pids,
		       "after loading, switch this process tree's threads to SCHED_EXT, and "
		       "every process forked into it later")
		->type_name("PID");
	app.add_option("--take-cgroup", c.take_cgroups,
		       "after loading, switch the threads of this cgroup (v2 directory) to "
		       "SCHED_EXT, and every task that enters it later")
		->type_name("DIR");
	app.add_flag("--exit-when-idle", c.when_idle,
		     "unload when no SCHED_EXT task is left (hpcctl run --backend scx)");
	app.add_flag("-q,--quiet", c.quiet, "no periodic statistics");
	app.add_flag("-v,--verbose", verbose, "libbpf debug output");
}

// Every knob checked before the kernel is touched. Values are applied all
// together (so --low-util 90 --high-util 95 works whatever the order), then
// the whole set is checked: 0, or EXIT_USAGE (said why).
int params_of(Cli &c, scx_hpc_params &sp)
{
	default_params(sp);
	if (c.fifo)
		c.knobs["queue"] = "fifo";
	std::string err;
	std::map<std::string, std::string> core;
	for (auto &[k, v] : c.knobs) {
		if (hpc_param_lookup(k.c_str()) >= 0) {
			core[k] = v;
		} else if (!apply_knob(sp, k, v, err)) {
			std::fprintf(stderr, "scx_hpc: invalid value: %s\n", err.c_str());
			return EXIT_USAGE;
		}
	}
	if (!hpc::apply_values(sp.core, core, err)) {
		std::fprintf(stderr, "scx_hpc: invalid value: %s\n", err.c_str());
		return EXIT_USAGE;
	}
	if (int e = hpc_params_check(&sp.core, &prio_range)) {
		std::fprintf(stderr, "scx_hpc: invalid parameters: %s\n", hpc_param_err_str(e));
		return EXIT_USAGE;
	}
	return 0;
}

// --set KEY=VALUE... on the running instance, all or nothing.
int set_running(const Maps &m, const std::vector<std::string> &sets)
{
	uint32_t zero = 0;
	scx_hpc_params cur;
	if (bpf_map_lookup_elem(m.params, &zero, &cur)) {
		std::perror("scx_hpc: reading the parameters");
		return 1;
	}
	scx_hpc_params next = cur;
	std::string err;
	for (auto &s : sets) {
		auto eq = s.find('=');
		if (eq == std::string::npos) {
			std::fprintf(stderr, "scx_hpc: --set %s: expected KEY=VALUE\n", s.c_str());
			return EXIT_USAGE;
		}
		if (!apply_knob(next, s.substr(0, eq), s.substr(eq + 1), err)) {
			std::fprintf(stderr, "scx_hpc: invalid value: %s\n", err.c_str());
			return EXIT_USAGE;
		}
	}
	next.gen = cur.gen + 1;
	if (bpf_map_update_elem(m.params, &zero, &next, BPF_ANY)) {
		std::perror("scx_hpc: writing the parameters");
		return 1;
	}
	return 0;
}

// --stats-once, --dump-tasks, --set, --prio: the running instance.
int control_running(const Cli &c)
{
	std::vector<FixedPrio> fixed;
	if (int rc = parse_prios(c.prios, fixed))
		return rc;
	Maps m;
	if (!find_maps(m)) {
		std::fprintf(stderr, "scx_hpc: scx_hpc is not loaded%s\n",
			     geteuid() ? " (or not visible: run as root)" : "");
		return 1;
	}
	if (!c.sets.empty())
		if (int rc = set_running(m, c.sets))
			return rc;
	if (apply_prios(m, fixed))
		return 1;
	if (c.stats_once)
		print_stats(read_stats(m.params, m.cpus, m.tasks,
				       std::max(1, libbpf_num_possible_cpus())),
			    c.json);
	if (c.dump)
		print_tasks(read_tasks(m.tasks), c.json);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"scx_hpc: the SCHED_HPC policy as a sched_ext scheduler (partial mode: "
		     "tasks with policy SCHED_EXT = 7)"};
	app.set_help_flag("-h,--help", "show this help");
	Cli c;
	add_options(app, c);
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		int rc = app.exit(e);
		return rc ? EXIT_USAGE : 0;
	}
	libbpf_set_print(libbpf_print);

	scx_hpc_params sp;
	if (int rc = params_of(c, sp))
		return rc;
	if (c.pinfo)
		return prog_info(c.json, c.prog_prefix);
	if (c.controls())
		return control_running(c);
	std::signal(SIGINT, on_signal);
	std::signal(SIGTERM, on_signal);
	return run(sp, c);
}
