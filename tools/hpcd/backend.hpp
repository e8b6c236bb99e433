// What hpcctl's commands ask of a backend: the kernel class SCHED_HPC
// (backend_kernel.cpp: /sys/kernel/sched_hpc, /proc, tracefs), the daemon
// hpcd (backend_hpcd.cpp: its control socket) or scx_hpc, the sched_ext
// scheduler (backend_scx.cpp: its loader and maps). make_backend() picks one from
// the options; the commands do not ask which.
#pragma once

#include "hpcctl.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hpcctl
{

struct Recorder; // trace_cmd.hpp

// A recording of the backend's per-task events (hpcctl trace), set up by
// Backend::record().
class Recording
{
public:
	virtual ~Recording() = default;
	// The command, forked under the backend and held until go().
	virtual Child spawn(const std::vector<int> &membind) = 0;
	// How long after the command's end its last events may still come.
	virtual uint64_t grace_ns() const = 0;
	// What the backend holds before the recording starts (scx_hpc: the
	// baseline of its map).
	virtual void begin(Recorder &, std::string &) {}
	// Wait up to `wait_ms` for events and record them; `reason` says why
	// the recording ends when the backend ends it.
	virtual void poll(Recorder &r, int wait_ms, std::string &reason) = 0;
	// The recording is over: what the end line says of the run as a whole.
	virtual void finish(Recorder &) {}
	// What `trace -- CMD` returns for the command's `status`.
	virtual int verdict(int status) { return status; }
	// Said when no iteration was recorded.
	virtual const char *no_iteration() const = 0;
};

class Backend
{
public:
	explicit Backend(const Opts &o) : o_(o) {}
	virtual ~Backend() = default;
	// "kernel", "hpcd", "scx": status's backend and the record's source.
	virtual const char *name() const = 0;

	// KEY=VALUE settings for `run` and `trace`, checked before anything
	// is contacted (exit 2); by default check_keys().
	virtual void check_settings(const std::vector<std::string> &kv);
	// `get`: one tunable's value, or all as KEY=VALUE, on stdout.
	virtual void get(const std::string &key) = 0;
	// `set`: check the settings, then set them, all or nothing.
	virtual void set(const std::vector<std::string> &kv) = 0;
	// `prio`: fix task `pid`'s priority (0: dynamic again; `prio` >= 0).
	virtual void prio(int pid, int prio) = 0;
	// `status`: the backend's state, with "backend".
	virtual nlohmann::json status() = 0;
	// `status`, printed: one JSON line or indented; by default status()
	// (scx_hpc's keeps its keys' order, and prints its task map or its
	// programs with --tasks or --progs, which the others refuse).
	virtual void print_status(bool one_line);

	// `top`: attach to the running backend, then its tasks and its title.
	virtual void attach() = 0;
	virtual nlohmann::json tasks() = 0;
	virtual std::string label() = 0;
	// The SOURCE column of a task that does not say.
	virtual const char *task_source() const = 0;

	// `run`: start the backend (or take the running one) with the settings
	// `kv`, then run the command under it: its status (the kernel class and
	// scx_hpc exec it: no return).
	virtual void start(const std::vector<std::string> &kv) = 0;
	virtual int run(const std::vector<int> &membind) = 0;

	// `trace`: refuse what the backend's recording cannot do (exit 64).
	virtual void check_trace() const;
	// Set up the recording (with a command: the backend started with the
	// settings `kv`): `t` gets the settings and what was dropped before.
	virtual std::unique_ptr<Recording> record(const std::vector<std::string> &kv,
						  hpcd::trace::Trace &t) = 0;

protected:
	const Opts &o_;
};

// The backend the options name (--backend auto: the kernel class where
// $HPC_SYSFS exists, else hpcd).
std::unique_ptr<Backend> make_backend(const Opts &o);

// The kernel's sysfs names, which hpcd takes too (backend_kernel.cpp).
const std::vector<std::string> &kernel_knobs();
// Unknown keys and malformed settings of the kernel class or hpcd are
// refused before anything is contacted; values are checked by the backend
// against its state.
void check_keys(const std::vector<std::string> &kv);

// The hpcd this hpcctl started, if any, ends with it (backend_hpcd.cpp).
void end_own_hpcd();

std::unique_ptr<Backend> kernel_backend(const Opts &o);
std::unique_ptr<Backend> hpcd_backend(const Opts &o);
std::unique_ptr<Backend> scx_backend(const Opts &o);

} // namespace hpcctl
