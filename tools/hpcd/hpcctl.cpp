// hpcctl: run programs under SCHED_HPC and tune it, through the kernel class
// (/sys/kernel/sched_hpc) when the kernel has it, else through hpcd; with
// --backend scx through scx_hpc, the sched_ext BPF scheduler (sched_ext/).
//
//   hpcctl run [--heuristic uniform|adaptive|phase] [--set K=V]... -- CMD [ARGS...]
//   hpcctl get [KEY]        hpcctl set KEY=VALUE...
//   hpcctl top [--once]     hpcctl status
//   hpcctl trace -o FILE [--duration SEC] [--perfetto F] [--paraver BASE] [-- CMD...]
//   hpcctl report FILE [--plot PNG] [--perfetto F] [--paraver BASE]
//
// Exit codes: 0 ok, 1 failure, 2 invalid KEY=VALUE (nothing changed), 3 hpcd
// not reachable, 64 usage error, 65 `run` without `--` or without a command,
// 126 command not executable, 127 command not found; `run` (and `trace --
// CMD`) otherwise exits with the command's status (128+N if killed by
// signal N).
#include "backend.hpp"
#include "params_text.hpp"

#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

using namespace hpcctl;

namespace
{

// The subcommands, as parsed.
struct Commands {
	CLI::App *run, *get, *set, *top, *prio, *status, *trace, *report;
};

// The options of `run` and `trace` that start a command.
void add_command_options(CLI::App *c, Opts &o, const std::string &with)
{
	c->add_option("--heuristic", o.heuristic, with + hpc::heuristic_choice())
		->check(CLI::IsMember(hpc::heuristic_names()));
	c->add_option("--set", o.settings, with + "tunable KEY=VALUE, repeatable");
	c->add_option("--hpcd", o.hpcd_bin, "hpcd binary to start if none runs");
}

void add_launcher_flag(CLI::App *c, Opts &o)
{
	c->add_flag("--launcher", o.launcher,
		    "the command starts MPI ranks (mpirun, mpiexec, srun are known): adopt "
		    "them, not it");
}

void add_global_options(CLI::App &app, Opts &o)
{
	app.footer("Exit codes: 0 ok, 1 failure, 2 invalid KEY=VALUE (nothing changed), 3 hpcd "
		   "not reachable,\n64 usage error, 65 'run' without '--' or command, 126/127 "
		   "command not executable/found.");
	app.require_subcommand(1);
	app.set_version_flag("--version", "hpcctl (hpcsched) " HPCSCHED_VERSION);
	app.add_option("--socket", o.socket, "hpcd control socket ($HPCD_CONTROL)");
	app.add_option("--sysfs", o.sysfs, "kernel tunables directory ($HPC_SYSFS)");
	app.add_option("--backend", o.backend,
		       "auto: the kernel class if present, else hpcd; scx: scx_hpc (sched_ext)")
		->check(CLI::IsMember({"auto", "kernel", "hpcd", "scx"}));
	app.add_option("--scx-hpc", o.scx_bin,
		       "scx_hpc loader for --backend scx ($HPCCTL_SCX_HPC)");
}

CLI::App *add_run(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand("run", "run CMD under SCHED_HPC: hpcctl run [opts] -- CMD");
	add_command_options(c, o, "");
	c->add_option("--membind", o.membind,
		      "bind the command's memory to these NUMA nodes (e.g. 0 or 0-1)");
	add_launcher_flag(c, o);
	return c;
}

CLI::App *add_top(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand("top", "live per-task table");
	c->add_flag("--once", o.once, "print the table once and exit");
	c->add_flag("--json", o.json_out, "JSON lines instead of a table");
	c->add_option("--interval", o.interval, "seconds between refreshes")
		->check(CLI::Range(0.05, 3600.0));
	c->add_option("--count", o.count, "stop after N tables")->check(CLI::PositiveNumber);
	return c;
}

CLI::App *add_prio(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand("prio", "fix a task's priority (0: dynamic): hpcd, the "
					     "kernel class (sched_priority) or scx_hpc");
	c->add_option("PID", o.pid, "managed task")->required()->check(CLI::PositiveNumber);
	c->add_option("PRIO", o.prio, "priority in prio_range, 0 for dynamic")->required();
	return c;
}

CLI::App *add_status(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand("status", "backend, tunables and daemon state");
	c->add_flag("--json", o.json_out, "one JSON line");
	auto *t = c->add_flag("--tasks", o.status_tasks,
			      "--backend scx: scx_hpc's task map, every entry and field");
	c->add_flag("--progs", o.status_progs,
		    "--backend scx: the loaded BPF programs' instruction counts, runs and run "
		    "time (kernel.bpf_stats_enabled=1)")
		->excludes(t);
	c->add_option("--prefix", o.prog_prefix,
		      "--progs: the programs named so (default hpc_: scx_hpc's)");
	return c;
}

// The outputs of `trace` and `report` (`what`: "also " for trace's).
void add_exports(CLI::App *c, Opts &o, const std::string &what)
{
	c->add_option("--perfetto", o.perfetto, what + "write Perfetto/Chrome trace JSON");
	c->add_option("--paraver", o.paraver, what + "write BASE.prv, BASE.pcf, BASE.row");
	c->add_flag("--force", o.force, "overwrite existing output files");
}

CLI::App *add_trace(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand(
		"trace", "record per-task iterations for --duration SEC or until -- CMD ends");
	c->add_option("-o,--output", o.output, "the record (JSON lines; hpcctl report reads it)")
		->required();
	c->add_option("--duration", o.duration, "seconds to record")->check(CLI::Range(0.001, 1e7));
	add_exports(c, o, "also ");
	add_command_options(c, o, "with a command: ");
	c->add_option("--membind", o.membind,
		      "with a command: bind its memory to these NUMA nodes");
	add_launcher_flag(c, o);
	c->add_option("--tracefs", o.tracefs,
		      "kernel class: tracefs mount (default /sys/kernel/tracing)");
	c->add_option("--sample-ms", o.sample_ms,
		      "--backend scx: sample scx_hpc's per-task map every MS (default 10)")
		->check(CLI::Range(1, 1000));
	return c;
}

CLI::App *add_report(CLI::App &app, Opts &o)
{
	auto *c = app.add_subcommand("report",
				     "per-task table of a recorded trace; plot and exports");
	c->add_option("FILE", o.input, "a record of hpcctl trace")->required();
	c->add_option("--plot", o.plot, "draw the timeline into this PNG (matplotlib)");
	c->add_option("--title", o.title, "title of the plot");
	add_exports(c, o, "");
	return c;
}

Commands add_commands(CLI::App &app, Opts &o)
{
	Commands c;
	c.run = add_run(app, o);
	c.get = app.add_subcommand("get", "print one tunable, or all as KEY=VALUE");
	c.get->add_option("KEY", o.key, "tunable name (sysfs name)");
	c.set = app.add_subcommand("set", "set tunables: all or nothing");
	c.set->add_option("KEY=VALUE", o.settings, "settings")->required();
	c.top = add_top(app, o);
	c.prio = add_prio(app, o);
	c.status = add_status(app, o);
	c.trace = add_trace(app, o);
	c.report = add_report(app, o);
	for (auto *s : {c.run, c.get, c.set, c.top, c.prio, c.status, c.trace, c.report})
		s->footer("Exit codes: see hpcctl --help.");
	return c;
}

// What a command line CLI11 refused gets: a word on what is wrong, the exit
// code.
int parse_error(const CLI::App &app, const CLI::ParseError &e,
		const std::vector<std::string> &before, bool dashdash)
{
	if (!dashdash && std::find(before.begin(), before.end(), "run") != before.end()) {
		std::cerr << "hpcctl: run: put '--' before the command, e.g. hpcctl run -- "
			     "./app\n";
		return kNoDashDash;
	}
	// Name the command a stray word was taken for.
	std::string msg = e.what();
	if (app.get_subcommands().empty()) {
		for (auto &w : before)
			if (!w.empty() && w[0] != '-') {
				msg = "unknown command '" + w +
				      "' (commands: run, get, set, top, prio, status, trace, "
				      "report)";
				break;
			}
		if (before.empty())
			msg = "no command given (commands: run, get, set, top, prio, status, "
			      "trace, report)";
	}
	std::cerr << "hpcctl: " << msg << "\nRun 'hpcctl --help' for usage.\n";
	return kUsage;
}

// The parsed command, run.
int dispatch(const Opts &o, const Commands &c, bool dashdash)
{
	if (c.run->parsed()) {
		if (!dashdash)
			fail(kNoDashDash,
			     "run: put '--' before the command, e.g. hpcctl run -- ./app");
		if (o.cmd.empty())
			fail(kNoDashDash, "run: no command after '--'");
		return run_cmd(o);
	}
	if (c.trace->parsed()) {
		if (dashdash && o.cmd.empty())
			fail(kNoDashDash, "trace: no command after '--'");
		return trace_cmd(o);
	}
	if (dashdash)
		fail(kUsage, "'--' is only for 'hpcctl run' and 'hpcctl trace'");
	if (c.report->parsed())
		return report_cmd(o);
	if (c.get->parsed())
		make_backend(o)->get(o.key);
	else if (c.set->parsed())
		make_backend(o)->set(o.settings);
	else if (c.top->parsed())
		return top_cmd(o);
	else if (c.prio->parsed()) {
		if (o.prio < 0)
			fail(kBadSetting, fmt::format("prio: {} is negative (0: dynamic)", o.prio));
		make_backend(o)->prio(o.pid, o.prio);
	} else if (c.status->parsed())
		return status_cmd(o);
	else
		return kUsage;
	return kOk;
}

int hpcctl_main(int argc, char **argv)
{
	// Everything after the first "--" is the command of `run` or `trace`,
	// untouched.
	std::vector<std::string> before;
	Opts o;
	bool dashdash = false;
	for (int i = 1; i < argc; i++) {
		if (!dashdash && std::strcmp(argv[i], "--") == 0) {
			dashdash = true;
			continue;
		}
		(dashdash ? o.cmd : before).push_back(argv[i]);
	}
	o.socket = env_or("HPCD_CONTROL", "/run/hpcd.ctl");
	o.sysfs = env_or("HPC_SYSFS", "/sys/kernel/sched_hpc");

	CLI::App app{"hpcctl: run programs under SCHED_HPC and tune it (kernel class or hpcd)",
		     "hpcctl"};
	add_global_options(app, o);
	const Commands c = add_commands(app, o);
	std::vector<std::string> rev(before.rbegin(), before.rend());
	try {
		app.parse(rev);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForVersion &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		return parse_error(app, e, before, dashdash);
	}
	return dispatch(o, c, dashdash);
}

} // namespace

int main(int argc, char **argv)
{
	int code = kFail;
	try {
		code = hpcctl_main(argc, argv);
	} catch (const Failure &f) {
		std::cerr << "hpcctl: " << f.msg << "\n";
		code = f.code;
	} catch (const std::exception &e) {
		std::cerr << "hpcctl: " << e.what() << "\n";
	}
	end_own_hpcd();
	return code;
}
