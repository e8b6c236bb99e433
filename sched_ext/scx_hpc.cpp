// SPDX-License-Identifier: GPL-2.0
// scx_hpc: the loader of the scx_hpc sched_ext scheduler.
//
//   scx_hpc [knobs] [--take-pid PID] [--take-cgroup DIR] [--duration S]
//           [--exit-when-idle] [-q]
//
// Loads the BPF scheduler, writes its parameters, enables it, switches and
// follows the tasks it was told to take (scx_hpc_follow.cpp), prints a
// status line every second and unloads on SIGINT/SIGTERM, --duration or,
// with --exit-when-idle, when its tasks are gone. The running instance is
// inspected and changed with `hpcctl --backend scx` (status, top, get, set,
// prio, trace), which reads and writes its maps.
//
// Knobs have the names and ranges of /sys/kernel/sched_hpc (see
// Documentation/scheduler/sched-hpc-abi.txt); they are checked as a set
// (scx_hpc_user.cpp) before anything is loaded: exit status 2 if invalid.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "params_text.hpp"
#include "scx_hpc_follow.hpp"
#include "scx_hpc_user.hpp"

#include "scx_hpc.bpf.skel.h"

namespace
{

constexpr const char *SCX_SYSFS = "/sys/kernel/sched_ext";
constexpr int EXIT_USAGE = 2;

volatile sig_atomic_t exiting;
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

// A sysfs file's first line, without trailing blanks.
std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	std::getline(f, s);
	return s.substr(0, s.find_last_not_of(' ') + 1);
}

std::string sysfs(const char *name)
{
	return read_file(std::string(SCX_SYSFS) + "/" + name);
}

// What the command line asks for.
struct Cli {
	std::map<std::string, std::string> knobs; // sysfs name -> value text
	bool fifo = false, quiet = false, when_idle = false;
	double duration = 0;
	scxhpc::Follower follow; // --take-pid, --take-cgroup
};

// The knobs: flag, sysfs name, help.
const struct {
	const char *flag, *name;
	std::string help;
} kKnobs[] = {
	{"--low-util", "low_util", "percent below which a task is low (default 65)"},
	{"--high-util", "high_util", "percent above which a task is high (default 85)"},
	{"--min-prio", "min_prio", "lowest priority the heuristic gives (default 4, range 1..6)"},
	{"--max-prio", "max_prio", "highest priority the heuristic gives (default 6, range 1..6)"},
	{"--global-weight", "global_weight", "Adaptive's G, percent (G + L = 100)"},
	{"--last-weight", "last_weight", "Adaptive's L, percent (G + L = 100)"},
	{"--heuristic", "heuristic", hpc::heuristic_choice() + " (default uniform)"},
	{"--min-wait-us", "min_wait_us", "shorter waits do not close an iteration (default 100)"},
	{"--slice-us", "timeslice_us", "RR time slice, 1000..1000000 (default 100000)"},
	{"--period-us", "emul_period_us",
	 "bandwidth period of the SMT emulation, 1000..1000000 (default 10000)"},
	{"--backend", "backend",
	 std::string(hpc::kBackendEmul) + " (default: the SMT emulation by bandwidth) or none "
					  "(priorities decided, not applied)"},
};

void add_options(CLI::App &app, Cli &c)
{
	for (auto &k : kKnobs) {
		const std::string name = k.name;
		app.add_option_function<std::string>(
			   k.flag, [&c, name](const std::string &v) { c.knobs[name] = v; }, k.help)
			->type_name(name == "heuristic" || name == "backend" ? "NAME" : "N");
	}
	app.add_flag("--fifo", c.fifo, "FIFO queues (run until sleep) instead of RR");
	app.add_option("--duration", c.duration, "unload after this many seconds (0: never)")
		->check(CLI::NonNegativeNumber);
	app.add_option("--take-pid", c.follow.pids,
		       "after loading, switch this process tree's threads to SCHED_EXT, and "
		       "every process forked into it later")
		->type_name("PID");
	app.add_option("--take-cgroup", c.follow.cgroups,
		       "after loading, switch the threads of this cgroup (v2 directory) to "
		       "SCHED_EXT, and every task that enters it later")
		->type_name("DIR");
	app.add_flag("--exit-when-idle", c.when_idle,
		     "unload when no SCHED_EXT task is left (hpcctl run --backend scx)");
	app.add_flag("-q,--quiet", c.quiet, "no status line every second");
	app.add_flag("-v,--verbose", verbose, "libbpf debug output");
	app.footer("The running instance: hpcctl --backend scx status|top|get|set|prio|trace.");
}

// Every knob checked before the kernel is touched: 0, or EXIT_USAGE (said
// why).
int params_of(Cli &c, scx_hpc_params &sp)
{
	sp = scxhpc::default_params();
	if (c.fifo)
		c.knobs["queue"] = "fifo";
	std::string err;
	if (scxhpc::apply_knobs(sp, c.knobs, true, err))
		return 0;
	std::fprintf(stderr, "scx_hpc: %s\n", err.c_str());
	return EXIT_USAGE;
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
	std::string state = sysfs("state");
	if (state != "disabled") {
		std::fprintf(
			stderr,
			"scx_hpc: a sched_ext scheduler is already active (state %s, ops %s)\n",
			state.c_str(), sysfs("root/ops").c_str());
		return false;
	}
	return true;
}

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

// The CPU that shares an emulated core with each possible CPU, -1 for none:
// the policy core's rule (hpc_thread_sibling(), hpc_ctx_sibling()) on the
// topology of the online CPUs, where a core's threads are the CPUs of the
// same package and core id in ascending order (the kernel's sibling mask),
// paired two by two.
std::vector<int> cpu_siblings(int ncpus)
{
	const size_t n = static_cast<size_t>(ncpus);
	std::vector<std::pair<uint32_t, uint32_t>> id(n);
	std::vector<bool> known(n, false), online(n, true);
	for (size_t c = 0; c < n; c++) {
		const std::string d = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/";
		online[c] = read_file(d + "online").rfind('0', 0) != 0;
		known[c] = online[c] &&
			   hpc::parse_u32(read_file(d + "topology/physical_package_id"),
					  id[c].first) &&
			   hpc::parse_u32(read_file(d + "topology/core_id"), id[c].second);
	}
	std::vector<int> hw(n, -1), threads(n, 1), sib(n, -1);
	for (size_t c = 0; c < n; c++) {
		std::vector<int> core;
		int k = 0;
		for (size_t o = 0; o < n && known[c]; o++)
			if (known[o] && id[o] == id[c]) {
				if (o == c)
					k = static_cast<int>(core.size());
				core.push_back(static_cast<int>(o));
			}
		threads[c] = std::max(1, static_cast<int>(core.size()));
		const int t = hpc_thread_sibling(k, static_cast<int>(core.size()));
		hw[c] = t < 0 ? -1 : core[static_cast<size_t>(t)];
	}
	for (size_t c = 0; c < n; c++) {
		const size_t other = c ^ 1;
		if (online[c])
			sib[c] = hpc_ctx_sibling(static_cast<int>(c), hw[c],
						 other < n && online[other] && threads[c] == 1 &&
							 threads[other] == 1);
	}
	return sib;
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
	uint32_t hs = 0;
	if (hpc::parse_u32(sysfs("hotplug_seq"), hs))
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

// Attach the follow programs, then switch what @f follows: false if that
// fails.
bool start_follow(scx_hpc *skel, scxhpc::Follower &f)
{
	skel->links.hpc_take_attach = bpf_program__attach(skel->progs.hpc_take_attach);
	skel->links.hpc_take_fork = bpf_program__attach(skel->progs.hpc_take_fork);
	skel->links.hpc_take_exit = bpf_program__attach(skel->progs.hpc_take_exit);
	if (!skel->links.hpc_take_attach || !skel->links.hpc_take_fork ||
	    !skel->links.hpc_take_exit ||
	    !f.start(bpf_map__fd(skel->maps.take_cgroups), bpf_map__fd(skel->maps.take_tgids))) {
		std::fprintf(stderr, "scx_hpc: cannot follow the cgroups/process trees: %s\n",
			     strerror(errno));
		return false;
	}
	std::printf("scx_hpc: switched %d threads to SCHED_EXT (%d failed); following "
		    "%zu process tree(s), %zu cgroup(s)\n",
		    f.switched(), f.failed(), f.pids.size(), f.cgroups.size());
	return true;
}

// One second of the loaded scheduler: the follow events every 100 ms, the
// followed cgroups again.
void one_second(scx_hpc *skel, Cli &c)
{
	const int before = c.follow.switched();
	for (int i = 0; i < 10 && !exiting; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		if (c.follow.any())
			c.follow.drain(bpf_map__fd(skel->maps.take_events));
	}
	c.follow.rescan();
	if (!c.quiet && c.follow.switched() != before)
		std::printf("scx_hpc: followed: %d more threads switched (%d in all, %d failed)\n",
			    c.follow.switched() - before, c.follow.switched(), c.follow.failed());
}

// The status line: tasks (live/all), the counters summed over the CPUs.
void print_status(const scxhpc::Stats &s)
{
	const scx_hpc_cpu &t = s.total;
	std::printf("scx_hpc: state=%s tasks=%llu/%llu iter=%llu sib_judged=%llu "
		    "throttles=%llu throttled=%.1fms steals=%llu moves=%llu direct=%llu "
		    "kicks=%llu wake_preempts=%llu\n",
		    sysfs("state").c_str(), (unsigned long long)s.nr_live,
		    (unsigned long long)s.nr_tasks, (unsigned long long)t.nr_iter,
		    (unsigned long long)t.nr_sib_judged, (unsigned long long)t.nr_throttle,
		    t.throttled_ns / 1e6, (unsigned long long)t.nr_steal,
		    (unsigned long long)t.nr_move, (unsigned long long)t.nr_direct,
		    (unsigned long long)t.nr_kick, (unsigned long long)t.nr_wake_preempt);
	std::fflush(stdout);
}

// --exit-when-idle: unload once the tasks it scheduled are gone (or if none
// came within the first 10 s), after @up seconds, by the statistics @st.
bool idle_now(const scxhpc::Stats &st, const Cli &c, double up)
{
	if (!c.when_idle || st.nr_live || (!st.nr_tasks && up < 10))
		return false;
	if (!c.quiet)
		std::printf("scx_hpc: no SCHED_EXT task left: unloading\n");
	return true;
}

// Until a signal, the scheduler's own exit, --duration or --exit-when-idle.
void serve(scx_hpc *skel, Cli &c, unsigned ncpus)
{
	const auto t0 = std::chrono::steady_clock::now();
	while (!exiting && !__sync_val_compare_and_swap(&skel->data->uei.kind, -1, -1)) {
		one_second(skel, c);
		scxhpc::Stats st{};
		if (!c.quiet || c.when_idle)
			st = scxhpc::read_stats(bpf_map__fd(skel->maps.params_map),
						bpf_map__fd(skel->maps.cpu_ctx),
						bpf_map__fd(skel->maps.task_info), ncpus);
		if (!c.quiet)
			print_status(st);
		const double up =
			std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
				.count();
		if ((c.duration > 0 && up >= c.duration) || idle_now(st, c, up))
			break;
	}
	if (c.follow.any())
		std::printf("scx_hpc: followed: %d threads switched (%d failed); events: %s\n",
			    c.follow.switched(), c.follow.failed(), c.follow.events().c_str());
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
int run(const scx_hpc_params &sp, Cli &c)
{
	if (!c.follow.check())
		return EXIT_USAGE;
	if (!check_kernel())
		return 1;
	const int ncpus = count_cpus();
	scx_hpc *skel = ncpus ? open_bpf(ncpus, c.follow.any()) : nullptr;
	bpf_link *link = skel ? enable(skel, sp) : nullptr;
	if (!link)
		return 1;
	if (!c.quiet)
		std::printf("scx_hpc: enabled on %d CPUs (partial: SCHED_EXT tasks only)\n", ncpus);
	int rc = 1;
	if (!c.follow.any() || start_follow(skel, c.follow)) {
		std::fflush(stdout);
		serve(skel, c, static_cast<unsigned>(ncpus));
		rc = 0;
	}
	bpf_link__destroy(link);
	if (!rc)
		rc = exit_status(skel->data->uei);
	scx_hpc__destroy(skel);
	return rc;
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
	std::signal(SIGINT, on_signal);
	std::signal(SIGTERM, on_signal);
	return run(sp, c);
}
