// hpcctl report: the paper's per-task table of a record of hpcctl trace,
// its timeline drawn by bench/metbench/report.py, and its exports.
#include "hpcctl.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace trace = hpcd::trace;

namespace hpcctl
{

namespace
{

bool same_file(const std::string &a, const std::string &b)
{
	struct stat x, y;
	return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

// bench/metbench/report.py: installed beside hpcctl (PREFIX/share/hpcsched,
// make install), else the source tree's.
std::string report_py()
{
	const std::string installed = self_dir() + "/../share/hpcsched/report.py";
	return ::access(installed.c_str(), R_OK) == 0 ? installed : HPCSCHED_REPORT_PY;
}

// The timeline's label in the plot: the backend and the way it balanced.
std::string plot_label(const trace::Trace &t)
{
	std::string label = t.source == "kernel" ? "SCHED_HPC" : "hpcd";
	if (t.settings.contains("balance") && t.settings["balance"] == "off")
		label += ", baseline";
	else if (t.settings.contains("heuristic") && t.settings["heuristic"].is_string())
		label += ", " + t.settings["heuristic"].get<std::string>();
	return label;
}

std::string plot_title(const trace::Trace &t, const Opts &o)
{
	if (!o.title.empty())
		return o.title;
	std::string title = "hpcctl trace";
	if (!t.command.empty())
		title += " of " + base_name(t.command[0]);
	return title;
}

// Run `argv` (the plotting interpreter), its stdout to /dev/null: its status.
int run_plotter(const std::vector<std::string> &argv)
{
	pid_t pid = ::fork();
	if (pid < 0)
		fail(kFail, std::string("report: fork: ") + std::strerror(errno));
	if (pid == 0) {
		int nul = ::open("/dev/null", O_WRONLY);
		::dup2(nul, 1);
		auto a = argv_of(argv);
		::execv(a[0], a.data());
		std::cerr << "hpcctl: report: cannot run " << argv[0] << ": "
			  << std::strerror(errno) << "\n";
		::_exit(127);
	}
	return wait_child(pid);
}

// The timeline, drawn by bench/metbench/report.py (matplotlib).
void plot(const trace::Trace &t, const Opts &o, TmpOut &png)
{
	const std::string py = env_or("HPCCTL_PYTHON", "/usr/bin/python3");
	const std::string script = env_or("HPCCTL_REPORT_PY", report_py().c_str());
	if (::access(script.c_str(), R_OK) != 0)
		fail(kFail, "report: --plot draws with " + script + ": " + std::strerror(errno) +
				    " ($HPCCTL_REPORT_PY)");
	char tmpl[] = "/tmp/hpcctl-report.XXXXXX";
	if (!::mkdtemp(tmpl))
		fail(kFail, std::string("report: mkdtemp: ") + std::strerror(errno));
	const std::string dir = tmpl, csv = dir + "/timeline.csv";
	struct Cleanup {
		std::string d;
		~Cleanup() { std::filesystem::remove_all(d); }
	} cleanup{dir};
	TmpOut c(csv);
	c.write_all(trace::timeline_csv(t));
	c.commit();
	int st = run_plotter({py, script, "--timeline", plot_label(t) + "=" + csv, "--png",
			      png.tmp(), "--title", plot_title(t, o)});
	struct stat sb;
	if (st != 0 || ::stat(png.tmp().c_str(), &sb) != 0 || sb.st_size == 0)
		fail(kFail, fmt::format("report: the plot failed ({} {} exited with {}; it needs "
					"python3-matplotlib; $HPCCTL_PYTHON picks the interpreter)",
					py, script, st));
}

// The record `input`, read (fails if it is not one, or holds nothing).
trace::Trace read_record(const std::string &input)
{
	std::ifstream in(input);
	if (!in)
		fail(kFail, "report: cannot read " + input + ": " + std::strerror(errno));
	struct stat sb;
	if (::stat(input.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode))
		fail(kFail, "report: " + input + " is a directory");
	std::string err;
	auto t = trace::read(in, err);
	if (!t)
		fail(kFail, "report: " + input + ": " + err);
	if (t->iters.empty() && t->prios.empty())
		fail(kFail, "report: " + input + " holds no iteration: nothing to report");
	return std::move(*t);
}

} // namespace

int report_cmd(const Opts &o)
{
	std::vector<std::string> outs;
	if (!o.plot.empty())
		outs.push_back(o.plot);
	for (auto &p : export_paths(o))
		outs.push_back(p);
	check_outputs(outs, o.force, "report");
	for (auto &p : outs)
		if (same_file(p, o.input))
			fail(kUsage, "report: " + p + " is the trace being read");
	const trace::Trace t = read_record(o.input);
	std::vector<std::unique_ptr<TmpOut>> files;
	if (!o.plot.empty()) {
		files.push_back(std::make_unique<TmpOut>(o.plot));
		plot(t, o, *files.back());
	}
	write_exports(t, o, files);
	for (auto &f : files)
		f->commit();
	std::cout << trace::report_table(t);
	for (auto &f : files)
		std::cout << "wrote " << f->path() << "\n";
	return kOk;
}

} // namespace hpcctl
