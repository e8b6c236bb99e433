// hpcctl trace: record per-task iterations of the backend (Recording) for
// --duration SEC or until the command ends, into the native record
// (trace.hpp) and its exports.
#include "trace_cmd.hpp"
#include "backend.hpp"
#include "system.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

namespace trace = hpcd::trace;

namespace hpcctl
{

namespace
{

std::string hostname()
{
	char h[256] = {};
	::gethostname(h, sizeof h - 1);
	return h;
}

// Everything checked before anything starts or any file is made. The
// settings the command is to run with.
std::vector<std::string> check_args(const Opts &o, Backend &b)
{
	if (o.duration <= 0 && o.cmd.empty())
		fail(kUsage, "trace: give --duration SEC, or a command after '--' (recorded "
			     "until it ends)");
	const std::vector<std::string> kv = settings_of(o);
	if (o.cmd.empty() && (!kv.empty() || !o.membind.empty()))
		fail(kUsage,
		     "trace: --set, --heuristic and --membind go with a command after '--'");
	b.check_trace();
	b.check_settings(kv);
	std::vector<std::string> outs{o.output};
	for (auto &p : export_paths(o))
		outs.push_back(p);
	check_outputs(outs, o.force, "trace");
	return kv;
}

// The record's file (a temporary one until the end) and its header line.
void open_record(const Opts &o, Recorder &r, const TmpOut &out)
{
	r.f.open(out.tmp(), std::ios::trunc);
	if (!r.f)
		fail(kFail, "trace: cannot write " + o.output + ": " + std::strerror(errno));
	r.t.start_ns = hpcd::mono_ns();
	r.t.start_unix_s = static_cast<int64_t>(std::time(nullptr));
	r.line(trace::header_line(r.t));
}

// Start the command under the backend. False (and `code`, its status) if
// it could not.
bool start_command(Recording &rec, const std::vector<int> &membind, Child &ch, int &code)
{
	ch = rec.spawn(membind);
	g_child = ch.pid;
	std::string why = go(ch, code);
	if (why.empty())
		return true;
	g_child = -1;
	std::cerr << "hpcctl: trace: " << why << "\n";
	return false;
}

// How the recording went: when the command ended (0: not yet), its status,
// why the recording ended.
struct Ending {
	uint64_t done_at = 0;
	int status = 0;
	std::string reason;
};

// Why the recording stops at `now` ("" to go on): a signal (without a
// command), --duration, the command's end and the grace after it.
std::string stop_now(const Opts &o, uint64_t now, uint64_t deadline, uint64_t grace, pid_t pid,
		     Ending &e)
{
	if (g_stop && o.cmd.empty())
		return std::string("interrupted (") + strsignal(g_stop) + ")";
	if (now >= deadline)
		return fmt::format("{:g} s elapsed (--duration)", o.duration);
	if (pid > 0 && !e.done_at) {
		int st;
		if (::waitpid(pid, &st, WNOHANG) == pid) {
			e.status = exec_status(st);
			e.done_at = now;
			g_child = -1;
		}
	}
	if (e.done_at && now >= e.done_at + grace)
		return "the command ended";
	return "";
}

// Record until something ends the recording.
void record_loop(const Opts &o, Recording &rec, Recorder &r, pid_t pid, Ending &e)
{
	const uint64_t deadline = o.duration > 0
					  ? r.t.start_ns + static_cast<uint64_t>(o.duration * 1e9)
					  : UINT64_MAX;
	const uint64_t grace = rec.grace_ns();
	rec.begin(r, e.reason);
	while (e.reason.empty()) {
		const uint64_t now = hpcd::mono_ns();
		e.reason = stop_now(o, now, deadline, grace, pid, e);
		if (!e.reason.empty())
			break;
		const int wait_ms = static_cast<int>(std::clamp<uint64_t>(
			(std::min<uint64_t>(deadline, now + 100000000ull) - now) / 1000000, 1,
			100));
		rec.poll(r, wait_ms, e.reason);
		r.f.flush();
	}
}

// The end line, the exports, every file in place; what was recorded, on
// stderr.
void finish_record(const Opts &o, Recording &rec, Recorder &r, TmpOut &out,
		   const std::string &reason)
{
	rec.finish(r);
	r.t.end_ns = hpcd::mono_ns();
	r.t.reason = reason;
	r.t.missed = r.missed;
	r.line(trace::end_line(r.t));
	r.f.close();
	if (!r.f)
		fail(kFail, "trace: cannot write " + o.output + ": " + std::strerror(errno));
	std::vector<std::unique_ptr<TmpOut>> exports;
	write_exports(r.t, o, exports);
	out.commit();
	for (auto &x : exports)
		x->commit();
	std::cerr << fmt::format(
		"hpcctl: trace: {} iteration(s) of {} task(s) in {} ({:.1f} s; {})\n",
		r.t.iters.size(), r.t.tasks.size(), o.output,
		static_cast<double>(r.t.end_ns - r.t.start_ns) / 1e9, reason);
	if (r.t.iters.empty())
		std::cerr << rec.no_iteration();
}

} // namespace

int trace_cmd(const Opts &o)
{
	auto b = make_backend(o);
	const auto kv = check_args(o, *b);
	const auto membind = check_membind(o.membind);

	Recorder r;
	r.t.source = b->name();
	r.t.host = hostname();
	r.t.command = o.cmd;
	auto rec = b->record(kv, r.t);
	TmpOut out(o.output);
	open_record(o, r, out);

	catch_signals();
	Child ch;
	int code = 0;
	if (!o.cmd.empty() && !start_command(*rec, membind, ch, code))
		return code;
	Ending e;
	record_loop(o, *rec, r, ch.pid, e);
	finish_record(o, *rec, r, out, e.reason);
	if (ch.pid > 0 && !e.done_at)
		e.status = wait_child(ch.pid); // --duration ended the recording first
	if (o.cmd.empty())
		return kOk;
	return rec->verdict(e.status);
}

} // namespace hpcctl
