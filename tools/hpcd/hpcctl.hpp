// hpcctl's parts (hpcctl.cpp parses the options and dispatches): the exit
// codes and failures, the options, and the helpers every command and backend
// shares (hpcctl_util.cpp): text, child processes, signals, output files.
#pragma once

#include "system.hpp"
#include "trace.hpp"

#include <csignal>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hpcctl
{

enum Exit {
	kOk = 0,
	kFail = 1,
	kBadSetting = 2,
	kNoDaemon = 3,
	kUsage = 64,
	kNoDashDash = 65,
	kNoExec = 126,
	kNotFound = 127,
};

constexpr int kSchedHpc = 8; // include/uapi/linux/sched.h
constexpr int kSchedExt = 7; // sched_ext (Linux 6.12+)

// What a command fails with: main() prints "hpcctl: msg" and exits `code`.
struct Failure {
	int code;
	std::string msg;
};

[[noreturn]] void fail(int code, const std::string &msg);

struct Opts {
	std::string socket, sysfs, backend = "auto", hpcd_bin, scx_bin, heuristic, key, membind;
	std::string output, perfetto, paraver, plot, title, input, tracefs;
	double duration = 0;
	bool force = false, launcher = false;
	std::vector<std::string> settings, cmd;
	bool once = false, json_out = false;
	double interval = 1.0;
	int count = 0, pid = 0, prio = 0;
	int sample_ms = 0; // trace --backend scx: sampling period (0: default)
	// status --backend scx: the task map, the programs named prog_prefix*
	bool status_tasks = false, status_progs = false;
	std::string prog_prefix = "hpc_";
};

// ---- the commands -------------------------------------------------------------

int run_cmd(const Opts &o);    // commands.cpp
int top_cmd(const Opts &o);    // commands.cpp
int status_cmd(const Opts &o); // commands.cpp
int trace_cmd(const Opts &o);  // trace_cmd.cpp
int report_cmd(const Opts &o); // report_cmd.cpp

// ---- text ----------------------------------------------------------------------

using hpcd::env_or; // system.hpp
// Without trailing newlines and blanks.
std::string trim(std::string s);
// A tunable's value on one line (a multi-line value's lines joined by ';').
std::string one_line(const std::string &value);
std::string unknown_key(const std::string &k, const std::vector<std::string> &known);
// The settings of `run` and `trace`: --set, then --heuristic.
std::vector<std::string> settings_of(const Opts &o);
// The command's name without its directory.
std::string base_name(const std::string &path);
// The directory hpcctl's executable is in ("" if unknown).
std::string self_dir();

// ---- processes -------------------------------------------------------------------

// The exit status of a command as hpcctl returns it (128+N for signal N).
int exec_status(int st);
int wait_child(pid_t pid);
// pipe2(O_CLOEXEC) and fork(), failing (exit 1) with why.
void pipe_or_fail(int fds[2]);
pid_t fork_or_fail();
// In a child that is to outlive hpcctl: stdin from /dev/null, stdout and
// stderr into `logf` (appended to, or truncated), else /dev/null too.
void output_to_log(const std::string &logf, bool append);
std::vector<char *> argv_of(const std::vector<std::string> &cmd);
[[noreturn]] void exec_cmd(const std::vector<std::string> &cmd);

// --membind NODES: every node must exist (libnuma); checked before anything
// starts.
std::vector<int> check_membind(const std::string &s);
// Bind the calling process's memory (and, inherited, its command's) to
// `nodes`. -1 and errno on failure.
int apply_membind(const std::vector<int> &nodes);
// Become the command under the scheduling `policy` (SCHED_HPC, SCHED_EXT),
// its memory bound to `membind`: what `run` does with the kernel class and
// scx_hpc. Fails (exit 1) if the policy cannot be set.
[[noreturn]] void exec_under(int policy, const std::vector<std::string> &cmd,
			     const std::vector<int> &membind);

// A command forked to run under SCHED_HPC: it waits until go(), then binds
// its memory (--membind), enters SCHED_HPC (kernel class) and execs. What
// fails in it comes back through `err` (close-on-exec: EOF = it execs).
struct Child {
	pid_t pid = -1;
	int gate = -1, err = -1;
};

// `policy`: the scheduling policy the child switches to before the exec
// (SCHED_HPC, SCHED_EXT), -1 to keep its own.
Child spawn(const std::vector<std::string> &cmd, const std::vector<int> &membind, int policy);
// Let the child go. "" once it has exec'd; else why it did not (and
// `code`, its exit status).
std::string go(Child &c, int &code);
void kill_child(Child &c);

// The command hpcctl runs (-1: none), which gets the signals hpcctl gets;
// the last of them (0: none).
extern pid_t g_child;
extern volatile sig_atomic_t g_stop;
void catch_signals();

// ---- output files ------------------------------------------------------------------

// Every file a command is to write, checked before anything happens: not
// there yet (unless --force), not a directory, in a directory that exists
// and may be written, no two the same.
void check_outputs(const std::vector<std::string> &paths, bool force, const std::string &cmd);

// An output written next to its final name and renamed there by commit();
// removed if never committed, so that a failure leaves no file.
class TmpOut
{
public:
	explicit TmpOut(std::string path);
	TmpOut(const TmpOut &) = delete;
	~TmpOut();
	const std::string &tmp() const { return tmp_; }
	const std::string &path() const { return path_; }
	void write_all(const std::string &content);
	void commit();

private:
	std::string path_, tmp_;
};

// The files of --perfetto and --paraver.
std::vector<std::string> export_paths(const Opts &o);
// Perfetto JSON and Paraver files of a trace, into temporary files
// (committed by the caller once everything is written).
void write_exports(const hpcd::trace::Trace &t, const Opts &o,
		   std::vector<std::unique_ptr<TmpOut>> &out);

} // namespace hpcctl
