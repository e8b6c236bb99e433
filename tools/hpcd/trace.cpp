#include "trace.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

using nlohmann::json;

namespace hpcd::trace
{

const TaskInfo *Trace::task(int pid) const
{
	for (const auto &t : tasks)
		if (t.pid == pid)
			return &t;
	return nullptr;
}

uint64_t Trace::last_ns() const
{
	uint64_t last = std::max(start_ns, end_ns);
	for (const auto &i : iters)
		last = std::max(last, i.end_ns);
	for (const auto &p : prios)
		last = std::max(last, p.at_ns);
	return last;
}

// ---- the native record -------------------------------------------------------

std::string header_line(const Trace &t)
{
	nlohmann::ordered_json j{{"format", kFormat},      {"version", kVersion},
				 {"source", t.source},     {"clock", "CLOCK_MONOTONIC"},
				 {"start_ns", t.start_ns}, {"start_unix_s", t.start_unix_s},
				 {"host", t.host},         {"command", t.command},
				 {"settings", t.settings}};
	return j.dump();
}

std::string task_line(const TaskInfo &t)
{
	nlohmann::ordered_json j{{"type", "task"}, {"pid", t.pid},         {"name", t.name},
				 {"job", t.job},   {"rank", t.rank},       {"ctx", t.ctx},
				 {"cpu", t.cpu},   {"sibling", t.sibling}, {"source", t.source},
				 {"role", t.role}, {"prio", t.prio}};
	return j.dump();
}

std::string iter_line(const Iter &i)
{
	nlohmann::ordered_json j{{"type", "iteration"},
				 {"pid", i.pid},
				 {"iteration", i.iteration},
				 {"end_ns", i.end_ns},
				 {"run_ns", i.run_ns},
				 {"wait_ns", i.wait_ns},
				 {"util", i.util},
				 {"heur_util", i.heur_util},
				 {"old_prio", i.old_prio},
				 {"prio", i.prio},
				 {"cpu", i.cpu}};
	if (i.weight)
		j["weight"] = i.weight;
	return j.dump();
}

std::string prio_line(const PrioChange &p)
{
	nlohmann::ordered_json j{{"type", "priority"},
				 {"pid", p.pid},
				 {"at_ns", p.at_ns},
				 {"old_prio", p.old_prio},
				 {"prio", p.prio}};
	return j.dump();
}

std::string end_line(const Trace &t)
{
	nlohmann::ordered_json j{{"type", "end"},
				 {"end_ns", t.end_ns},
				 {"reason", t.reason},
				 {"dropped", t.dropped},
				 {"missed", t.missed}};
	if (!t.warnings.empty())
		j["warnings"] = t.warnings;
	return j.dump();
}

namespace
{

struct Bad {
	std::string msg;
};

const json *field(const json &j, const char *k, bool required)
{
	if (j.contains(k))
		return &j[k];
	if (required)
		throw Bad{std::string("no \"") + k + "\""};
	return nullptr;
}

void get(const json &j, const char *k, uint64_t &out, bool required = true)
{
	if (auto *v = field(j, k, required)) {
		if (!v->is_number_unsigned())
			throw Bad{std::string("\"") + k + "\" must be a whole number >= 0"};
		out = v->get<uint64_t>();
	}
}

void get(const json &j, const char *k, uint32_t &out, bool required = true)
{
	uint64_t v = out;
	get(j, k, v, required);
	if (v > UINT32_MAX)
		throw Bad{std::string("\"") + k + "\" is out of range"};
	out = static_cast<uint32_t>(v);
}

void get(const json &j, const char *k, int &out, bool required = true, int min = -1)
{
	if (auto *v = field(j, k, required)) {
		if (!v->is_number_integer() || v->get<int64_t>() < min ||
		    v->get<int64_t>() > INT32_MAX)
			throw Bad{std::string("\"") + k +
				  "\" must be a whole number >= " + std::to_string(min)};
		out = v->get<int>();
	}
}

void get(const json &j, const char *k, std::string &out, bool required = true)
{
	if (auto *v = field(j, k, required)) {
		if (!v->is_string())
			throw Bad{std::string("\"") + k + "\" must be a string"};
		out = v->get<std::string>();
	}
}

void get(const json &j, const char *k, std::vector<std::string> &out)
{
	if (auto *v = field(j, k, false)) {
		if (!v->is_array() ||
		    !std::all_of(v->begin(), v->end(), [](const json &x) { return x.is_string(); }))
			throw Bad{std::string("\"") + k + "\" must be an array of strings"};
		out = v->get<std::vector<std::string>>();
	}
}

void read_header(const json &j, Trace &t)
{
	std::string fmt;
	if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
	    j["format"] != kFormat)
		throw Bad{
			std::string("not an hpcsched trace (the first line has no \"format\":\"") +
			kFormat + "\")"};
	int version = 0;
	get(j, "version", version, true, 1);
	if (version > kVersion)
		throw Bad{fmt::format("trace format version {} is newer than this hpcctl's ({})",
				      version, kVersion)};
	get(j, "source", t.source);
	if (t.source != "hpcd" && t.source != "kernel" && t.source != "scx")
		throw Bad{"\"source\" must be hpcd, kernel or scx"};
	get(j, "start_ns", t.start_ns);
	if (auto *v = field(j, "start_unix_s", false)) {
		if (!v->is_number_integer())
			throw Bad{"\"start_unix_s\" must be a whole number"};
		t.start_unix_s = v->get<int64_t>();
	}
	get(j, "host", t.host, false);
	get(j, "command", t.command);
	if (auto *v = field(j, "settings", false)) {
		if (!v->is_object())
			throw Bad{"\"settings\" must be an object"};
		t.settings = *v;
	}
}

// A task sampled from /proc that the monitor now reports (a launcher's rank
// that said hello once MPI_Init ran): hpcd starts its history again, and so
// does the trace. Its sampled iterations (the MPI start-up) are dropped.
void drop_sampled(Trace &t, int pid)
{
	std::erase_if(t.iters, [pid](const Iter &i) { return i.pid == pid; });
}

// The lines of a record after its header, into `t`.
class Reader
{
public:
	explicit Reader(Trace &t) : t_(t) {}
	void line(const json &j);

private:
	void task(const json &j);
	void iteration(const json &j);
	void priority(const json &j);
	void end(const json &j);

	Trace &t_;
	bool ended_ = false;
	// Per task: the end of its last iteration, and the time of its last
	// event of either kind (see trace.hpp for why they differ).
	std::map<int, uint64_t> last_iter_, last_end_;
};

void Reader::line(const json &j)
{
	if (!j.is_object())
		throw Bad{"not a JSON object"};
	if (ended_)
		throw Bad{"an event after the end line"};
	std::string type;
	get(j, "type", type);
	if (type == "task")
		task(j);
	else if (type == "iteration")
		iteration(j);
	else if (type == "priority")
		priority(j);
	else if (type == "end")
		end(j);
	else
		throw Bad{"unknown type \"" + type + "\" (task, iteration, priority, end)"};
}

void Reader::task(const json &j)
{
	TaskInfo ti;
	get(j, "pid", ti.pid, true, 1);
	get(j, "name", ti.name, false);
	get(j, "job", ti.job, false);
	get(j, "source", ti.source, false);
	get(j, "role", ti.role, false);
	if (ti.role != "task" && ti.role != "launcher")
		throw Bad{"\"role\" must be task or launcher"};
	get(j, "rank", ti.rank, false);
	get(j, "ctx", ti.ctx, false);
	get(j, "cpu", ti.cpu, false);
	get(j, "sibling", ti.sibling, false, 0);
	get(j, "prio", ti.prio, false);
	auto it = std::find_if(t_.tasks.begin(), t_.tasks.end(),
			       [&](const TaskInfo &x) { return x.pid == ti.pid; });
	if (it == t_.tasks.end()) {
		t_.tasks.push_back(ti);
		return;
	}
	if (it->source != "monitor" && ti.source == "monitor") {
		drop_sampled(t_, ti.pid);
		last_iter_.erase(ti.pid);
	}
	// Listed again (re-paired, turned out a rank): the newest description,
	// the first priority.
	ti.prio = it->prio ? it->prio : ti.prio;
	*it = ti;
}

void Reader::iteration(const json &j)
{
	Iter i;
	get(j, "pid", i.pid, true, 1);
	if (!t_.task(i.pid))
		throw Bad{fmt::format("iteration of pid {} before its task line", i.pid)};
	get(j, "iteration", i.iteration, false);
	get(j, "end_ns", i.end_ns);
	get(j, "run_ns", i.run_ns);
	get(j, "wait_ns", i.wait_ns);
	get(j, "util", i.util, false);
	get(j, "heur_util", i.heur_util, false);
	get(j, "old_prio", i.old_prio);
	get(j, "prio", i.prio);
	get(j, "cpu", i.cpu, false);
	get(j, "weight", i.weight, false);
	if (i.run_ns > i.end_ns || i.wait_ns > i.end_ns - i.run_ns)
		throw Bad{"run_ns + wait_ns is more than end_ns"};
	if (i.util > 10000 || i.heur_util > 10000)
		throw Bad{"util and heur_util are in 0.01 %: at most 10000"};
	if (i.end_ns < last_iter_[i.pid])
		throw Bad{fmt::format("pid {}: an iteration ends before the task's previous "
				      "iteration",
				      i.pid)};
	last_iter_[i.pid] = i.end_ns;
	last_end_[i.pid] = std::max(last_end_[i.pid], i.end_ns);
	t_.iters.push_back(i);
}

void Reader::priority(const json &j)
{
	PrioChange p;
	get(j, "pid", p.pid, true, 1);
	if (!t_.task(p.pid))
		throw Bad{fmt::format("priority change of pid {} before its task line", p.pid)};
	get(j, "at_ns", p.at_ns);
	get(j, "old_prio", p.old_prio);
	get(j, "prio", p.prio);
	if (p.at_ns < last_end_[p.pid])
		throw Bad{fmt::format("pid {}: a priority change before the task's previous "
				      "event",
				      p.pid)};
	last_end_[p.pid] = p.at_ns;
	t_.prios.push_back(p);
}

void Reader::end(const json &j)
{
	get(j, "end_ns", t_.end_ns);
	get(j, "reason", t_.reason, false);
	get(j, "dropped", t_.dropped, false);
	get(j, "missed", t_.missed, false);
	get(j, "warnings", t_.warnings);
	ended_ = true;
}

} // namespace

std::optional<Trace> read(std::istream &in, std::string &err)
{
	Trace t;
	Reader reader(t);
	std::string line;
	size_t n = 0;
	bool header = false;
	try {
		while (std::getline(in, line)) {
			n++;
			if (line.find_first_not_of(" \t\r") == std::string::npos)
				continue;
			json j;
			try {
				j = json::parse(line);
			} catch (const json::exception &) {
				throw Bad{"not JSON"};
			}
			if (header)
				reader.line(j);
			else
				read_header(j, t);
			header = true;
		}
	} catch (const Bad &b) {
		err = fmt::format("line {}: {}", n, b.msg);
		return std::nullopt;
	}
	if (!header) {
		err = "empty: not an hpcsched trace";
		return std::nullopt;
	}
	if (in.bad()) {
		err = "read error";
		return std::nullopt;
	}
	std::stable_sort(t.iters.begin(), t.iters.end(),
			 [](const Iter &a, const Iter &b) { return a.end_ns < b.end_ns; });
	std::stable_sort(
		t.prios.begin(), t.prios.end(),
		[](const PrioChange &a, const PrioChange &b) { return a.at_ns < b.at_ns; });
	return t;
}

// ---- the kernel's tracepoint ------------------------------------------------------

namespace
{

bool to_u64(std::string_view s, uint64_t &out)
{
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
	return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// "123.000500" (seconds) -> ns
bool seconds_ns(std::string_view s, uint64_t &ns)
{
	auto dot = s.find('.');
	uint64_t sec = 0, frac = 0;
	if (dot == std::string_view::npos || dot == 0 || dot + 1 >= s.size() ||
	    s.size() - dot - 1 > 9)
		return false;
	if (!to_u64(s.substr(0, dot), sec) || !to_u64(s.substr(dot + 1), frac))
		return false;
	for (size_t d = s.size() - dot - 1; d < 9; d++)
		frac *= 10;
	ns = sec * 1000000000ull + frac;
	return true;
}

// The value of " key=" in `s` after position `from`, up to the next blank.
bool kv(std::string_view s, std::string_view key, uint64_t &out, size_t from = 0)
{
	std::string pat = " " + std::string(key) + "=";
	size_t p = s.find(pat, from);
	if (p == std::string_view::npos)
		return false;
	p += pat.size();
	size_t e = s.find(' ', p);
	return to_u64(s.substr(p, e == std::string_view::npos ? s.size() - p : e - p), out);
}

} // namespace

namespace
{

// A tracefs line of event `tag` (": name:"): its timestamp (ns), the CPU it
// was logged on, its fields after the tag, the pid and comm fields (the
// comm may hold blanks: it runs up to " `after`="). False for other lines.
struct Line {
	uint64_t at = 0;
	int cpu = -1, pid = 0;
	std::string_view fields;
	std::string comm;
	size_t rest = 0; // where the fields after comm start
};

bool event_line(std::string_view line, std::string_view tag, std::string_view after, Line &l)
{
	while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
		line.remove_suffix(1);
	if (line.empty() || line.front() == '#')
		return false;
	size_t at = line.find(tag);
	if (at == std::string_view::npos)
		return false;
	// The prefix: "comm-pid [cpu] flags timestamp"; the timestamp is its
	// last word, the CPU the last word in brackets.
	std::string_view pre = line.substr(0, at);
	size_t sp = pre.find_last_of(' ');
	std::string_view ts = sp == std::string_view::npos ? pre : pre.substr(sp + 1);
	if (!seconds_ns(ts, l.at))
		return false;
	for (size_t e = pre.rfind(']'); e != std::string_view::npos && e > 0;
	     e = pre.rfind(']', e - 1)) {
		size_t b = pre.rfind('[', e);
		uint64_t cpu;
		if (b != std::string_view::npos && to_u64(pre.substr(b + 1, e - b - 1), cpu)) {
			l.cpu = static_cast<int>(cpu);
			break;
		}
		if (b == std::string_view::npos || b == 0)
			break;
	}
	l.fields = line.substr(at + tag.size());
	uint64_t pid = 0;
	if (!kv(l.fields, "pid", pid) || pid == 0 || pid > INT32_MAX)
		return false;
	l.pid = static_cast<int>(pid);
	const std::string next = " " + std::string(after) + "=";
	size_t c = l.fields.find(" comm="), r = l.fields.find(next);
	if (c == std::string_view::npos || r == std::string_view::npos || r < c)
		return false;
	l.comm = std::string(l.fields.substr(c + 6, r - c - 6));
	l.rest = r;
	return true;
}

bool u32_fields(const Line &l, std::initializer_list<std::pair<const char *, uint32_t *>> want)
{
	for (auto [k, dst] : want) {
		uint64_t v = 0;
		if (!kv(l.fields, k, v, l.rest) || v > UINT32_MAX)
			return false;
		*dst = static_cast<uint32_t>(v);
	}
	return true;
}

} // namespace

std::optional<KernelEvent> parse_ftrace_line(std::string_view line)
{
	Line l;
	if (!event_line(line, ": sched_hpc_iteration:", "run_ns", l))
		return std::nullopt;
	KernelEvent ev;
	ev.it.end_ns = l.at;
	ev.it.cpu = l.cpu;
	ev.it.pid = l.pid;
	ev.comm = l.comm;
	if (!kv(l.fields, "run_ns", ev.it.run_ns, l.rest) ||
	    !kv(l.fields, "wait_ns", ev.it.wait_ns, l.rest) ||
	    !u32_fields(l, {{"util", &ev.it.util},
			    {"heur_util", &ev.it.heur_util},
			    {"old_prio", &ev.it.old_prio},
			    {"new_prio", &ev.it.prio}}))
		return std::nullopt;
	// The timestamp is when the iteration closed; a clock that does not
	// fit (not mono) would put its start before 0.
	if (ev.it.run_ns > ev.it.end_ns || ev.it.wait_ns > ev.it.end_ns - ev.it.run_ns)
		return std::nullopt;
	return ev;
}

std::optional<KernelJudge> parse_ftrace_judge(std::string_view line)
{
	Line l;
	if (!event_line(line, ": sched_hpc_judge:", "heur_util", l))
		return std::nullopt;
	KernelJudge j;
	j.change.pid = l.pid;
	j.change.at_ns = l.at;
	j.comm = l.comm;
	j.cpu = l.cpu;
	if (!u32_fields(l, {{"heur_util", &j.heur_util},
			    {"old_prio", &j.change.old_prio},
			    {"new_prio", &j.change.prio}}))
		return std::nullopt;
	return j;
}

uint64_t ftrace_lost(std::string_view line)
{
	size_t p = line.find("[LOST ");
	if (line.rfind("CPU:", 0) != 0 || p == std::string_view::npos)
		return 0;
	size_t e = line.find(' ', p + 6);
	uint64_t n = 0;
	if (e == std::string_view::npos || !to_u64(line.substr(p + 6, e - p - 6), n))
		return 0;
	return n;
}

// ---- scx_hpc's per-task map, sampled -------------------------------------------

std::vector<ScxTask> parse_scx_tasks(const json &dump)
{
	if (!dump.is_array())
		throw std::runtime_error("scx_hpc's task map: not a JSON array");
	std::vector<ScxTask> out;
	size_t n = 0;
	for (const auto &e : dump) {
		n++;
		auto num = [&](const char *k, auto &dst, uint64_t max) {
			const bool whole =
				e.is_object() && e.contains(k) &&
				(e[k].is_number_unsigned() ||
				 (e[k].is_number_integer() && e[k].template get<int64_t>() >= 0));
			if (!whole || e[k].template get<uint64_t>() > max)
				throw std::runtime_error(fmt::format(
					"scx_hpc's task map: entry {}: \"{}\" missing or not a "
					"whole number up to {}",
					n, k, max));
			dst = static_cast<std::remove_reference_t<decltype(dst)>>(
				e[k].template get<uint64_t>());
		};
		ScxTask t;
		uint32_t cpu = 0, exited = 0;
		num("pid", t.pid, INT32_MAX);
		num("tgid", t.tgid, INT32_MAX);
		num("cpu", cpu, UINT32_MAX);
		num("prio", t.prio, UINT32_MAX);
		num("prev_prio", t.prev_prio, UINT32_MAX);
		num("last_util", t.last_util, 10000);
		num("heur_util", t.heur_util, 10000);
		num("exited", exited, 1);
		num("iterations", t.nr_iter, UINT64_MAX);
		num("last_run_ns", t.last_run_ns, UINT64_MAX);
		num("last_wait_ns", t.last_wait_ns, UINT64_MAX);
		if (t.pid == 0)
			throw std::runtime_error(
				fmt::format("scx_hpc's task map: entry {}: pid 0", n));
		t.cpu = cpu > INT32_MAX ? -1 : static_cast<int>(cpu);
		t.exited = exited != 0;
		if (e.contains("comm") && e["comm"].is_string())
			t.comm = e["comm"].get<std::string>();
		out.push_back(std::move(t));
	}
	return out;
}

ScxSampler::Out ScxSampler::sample(const std::vector<ScxTask> &tasks, uint64_t now_ns)
{
	Out out;
	const bool baseline = baseline_;
	baseline_ = false;
	for (const auto &t : tasks) {
		auto it = seen_.find(t.pid);
		if (baseline) {
			seen_[t.pid] = Seen{t.nr_iter, t.prio, false};
			continue;
		}
		if (it == seen_.end() || t.nr_iter < it->second.nr_iter)
			it = seen_.insert_or_assign(
					  t.pid, Seen{0, t.prev_prio ? t.prev_prio : t.prio, false})
				     .first;
		Seen &s = it->second;
		const bool iter = t.nr_iter > s.nr_iter;
		if (!iter && t.prio == s.prio)
			continue;
		if (!s.described) {
			TaskInfo ti;
			ti.pid = t.pid;
			ti.name = t.comm;
			ti.source = "scx";
			ti.cpu = t.cpu;
			ti.prio = s.prio;
			out.tasks.push_back(ti);
			s.described = true;
		}
		if (iter) {
			Iter i;
			i.pid = t.pid;
			i.iteration = t.nr_iter;
			i.end_ns = now_ns;
			// Never before the clock's zero (a record that could not be read).
			i.run_ns = std::min(t.last_run_ns, now_ns);
			i.wait_ns = std::min(t.last_wait_ns, now_ns - i.run_ns);
			i.util = t.last_util;
			i.heur_util = t.heur_util;
			i.old_prio = s.prio;
			i.prio = t.prio;
			i.cpu = t.cpu;
			out.missed += t.nr_iter - s.nr_iter - 1;
			out.iters.push_back(i);
		} else {
			out.prios.push_back(PrioChange{t.pid, now_ns, s.prio, t.prio});
		}
		s.nr_iter = t.nr_iter;
		s.prio = t.prio;
	}
	return out;
}

// ---- the paper's table -----------------------------------------------------------

std::vector<TaskSummary> summarize(const Trace &t)
{
	std::map<int, TaskSummary> by;
	std::set<int> seen;
	auto span = [&](TaskSummary &s, int pid, uint64_t from, uint64_t to) {
		if (seen.insert(pid).second)
			s.first_ns = from, s.last_ns = to;
		s.first_ns = std::min(s.first_ns, from);
		s.last_ns = std::max(s.last_ns, to);
	};
	struct Ev {
		uint64_t at;
		uint32_t old_prio, prio;
	};
	std::map<int, std::vector<Ev>> evs;
	for (const auto &i : t.iters) {
		auto &s = by[i.pid];
		s.iterations++;
		s.run_ns += i.run_ns;
		s.wait_ns += i.wait_ns;
		span(s, i.pid, i.start_ns(), i.end_ns);
		evs[i.pid].push_back({i.end_ns, i.old_prio, i.prio});
	}
	for (const auto &p : t.prios) {
		span(by[p.pid], p.pid, p.at_ns, p.at_ns);
		evs[p.pid].push_back({p.at_ns, p.old_prio, p.prio});
	}
	// A rank that never closed an iteration (the one on the critical path
	// may never wait long enough) is listed too, with none.
	for (const auto &ti : t.tasks)
		if (ti.role == "task")
			by.try_emplace(ti.pid);
	std::vector<TaskSummary> out;
	for (auto &[pid, s] : by) {
		s.task = t.task(pid);
		if (s.task && s.task->role == "launcher")
			continue;
		auto &e = evs[pid];
		std::stable_sort(e.begin(), e.end(),
				 [](const Ev &a, const Ev &b) { return a.at < b.at; });
		uint32_t first = s.task && s.task->prio ? s.task->prio
				 : e.empty()            ? 0
							: e.front().old_prio;
		s.prios.push_back(first);
		for (const auto &x : e)
			if (x.prio != s.prios.back())
				s.prios.push_back(x.prio);
		const uint64_t tot = s.run_ns + s.wait_ns;
		s.comp_pct =
			tot ? 100.0 * static_cast<double>(s.run_ns) / static_cast<double>(tot) : 0;
		out.push_back(s);
	}
	// Labels: P<rank> when every task is a distinct MPI rank (MetBench's
	// workers are P1..Pn), else P1.. in pairing order (context, then pid).
	std::set<int> ranks;
	bool by_rank = true;
	for (const auto &s : out)
		if (!s.task || s.task->rank < 0 || !ranks.insert(s.task->rank).second)
			by_rank = false;
	auto key = [](const TaskSummary &s) {
		int ctx = s.task && s.task->ctx >= 0 ? s.task->ctx : INT32_MAX;
		int pid = s.task ? s.task->pid : 0;
		return std::pair{ctx, pid};
	};
	if (by_rank)
		std::sort(out.begin(), out.end(), [](const TaskSummary &a, const TaskSummary &b) {
			return a.task->rank < b.task->rank;
		});
	else
		std::sort(out.begin(), out.end(), [&](const TaskSummary &a, const TaskSummary &b) {
			return key(a) < key(b);
		});
	for (size_t k = 0; k < out.size(); k++)
		out[k].label = fmt::format("P{}", by_rank ? out[k].task->rank : static_cast<int>(k) + 1);
	return out;
}

std::string prio_path(const std::vector<uint32_t> &prios)
{
	auto join = [](auto b, auto e) {
		std::string s;
		for (auto it = b; it != e; ++it)
			s.append(s.empty() ? "" : ">").append(*it ? std::to_string(*it) : "?");
		return s;
	};
	if (prios.size() <= 7)
		return join(prios.begin(), prios.end());
	return join(prios.begin(), prios.begin() + 3) + ">..>" + join(prios.end() - 3, prios.end());
}

std::string report_table(const Trace &t)
{
	auto rows = summarize(t);
	std::string out;
	uint64_t n = 0, first = UINT64_MAX, last = 0;
	for (const auto &r : rows) {
		n += r.iterations;
		first = std::min(first, r.first_ns);
		last = std::max(last, r.last_ns);
	}
	std::string what = t.source == "kernel" ? "SCHED_HPC (kernel tracepoint)"
			   : t.source == "scx"  ? "scx_hpc (sched_ext, sampled)"
						: "hpcd";
	if (t.settings.contains("heuristic") && t.settings["heuristic"].is_string())
		what += ", " + t.settings["heuristic"].get<std::string>();
	if (t.settings.contains("balance") && t.settings["balance"] == "off")
		what += ", balance off (baseline)";
	if (t.settings.contains("mode") && t.settings["mode"].is_string())
		what += ", mode " + t.settings["mode"].get<std::string>();
	out += fmt::format("Trace of {}: {} task(s), {} iteration(s)\n", what, rows.size(), n);
	out += fmt::format("{:<5} {:>7}  {:<12} {:>6} {:>8}  {:<16} {:>9}\n", "Proc", "PID", "Name",
			   "Iter", "% Comp", "Priority", "Time");
	for (const auto &r : rows)
		out += fmt::format("{:<5} {:>7}  {:<12} {:>6} {:>8.2f}  {:<16} {:>7.3f} s\n",
				   r.label, r.task ? r.task->pid : 0,
				   (r.task ? r.task->name : std::string()).substr(0, 12),
				   r.iterations, r.comp_pct, prio_path(r.prios),
				   static_cast<double>(r.last_ns - r.first_ns) / 1e9);
	if (!rows.empty())
		out += fmt::format("Time: {:.3f} s from the first iteration's start to the last "
				   "one's end\n",
				   static_cast<double>(last - first) / 1e9);
	if (t.end_ns)
		out += fmt::format("Recorded {:.3f} s{}\n",
				   static_cast<double>(t.end_ns - t.start_ns) / 1e9,
				   t.reason.empty() ? "" : " (" + t.reason + ")");
	else
		out += "The record has no end line (the recorder was stopped): it may miss the "
		       "last events\n";
	if (t.dropped || t.missed)
		out += fmt::format("Incomplete: {} event(s) lost by the recorder, {} iteration(s) "
				   "closed unseen\n",
				   t.dropped, t.missed);
	for (const auto &w : t.warnings)
		out += "Warning: " + w + "\n";
	return out;
}

std::string timeline_csv(const Trace &t)
{
	std::string out = "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns\n";
	std::map<int, std::pair<std::string, int>> label;
	for (const auto &s : summarize(t))
		label[s.task ? s.task->pid : 0] = {s.label, std::stoi(s.label.substr(1))};
	std::map<int, uint64_t> k;
	for (const auto &i : t.iters) {
		if (!label.count(i.pid))
			continue;
		auto &[name, num] = label[i.pid];
		out += fmt::format("{},{},{},0,{},{},{}\n", num, name,
				   i.iteration ? i.iteration : ++k[i.pid], i.start_ns(),
				   i.compute_end_ns(), i.end_ns);
	}
	return out;
}

// ---- exports -------------------------------------------------------------------

namespace
{

// Times of the exports count from here: the trace's start, or the start of
// an iteration that began before it.
uint64_t origin(const Trace &t)
{
	uint64_t o = t.start_ns;
	for (const auto &i : t.iters)
		o = std::min(o, i.start_ns());
	for (const auto &p : t.prios)
		o = std::min(o, p.at_ns);
	return o;
}

double us(uint64_t ns, uint64_t o)
{
	return static_cast<double>(ns - o) / 1000.0;
}

std::string task_title(const TaskSummary &s)
{
	if (!s.task)
		return s.label;
	std::string t = s.label + " " + s.task->name + " (pid " + std::to_string(s.task->pid);
	if (s.task->rank >= 0)
		t += ", rank " + std::to_string(s.task->rank);
	if (s.task->cpu >= 0)
		t += ", CPU " + std::to_string(s.task->cpu);
	return t + ")";
}

} // namespace

namespace
{

// One Perfetto event of task `pid`: metadata ("M"), a counter ("C") at
// `ts`, a slice ("X").
json meta(int pid, const char *name, json args)
{
	return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", pid}, {"args", std::move(args)}};
}

json counter(int pid, const char *name, double ts, json args)
{
	return {{"ph", "C"},  {"name", name}, {"pid", pid},
		{"tid", pid}, {"ts", ts},     {"args", std::move(args)}};
}

json slice(int pid, const char *name, double ts, uint64_t dur_ns, const json &args)
{
	return {{"ph", "X"},
		{"name", name},
		{"cat", "iteration"},
		{"pid", pid},
		{"tid", pid},
		{"ts", ts},
		{"dur", static_cast<double>(dur_ns) / 1000.0},
		{"args", args}};
}

// A task's track: its name, its place, and the priority it started with.
void perfetto_track(const Trace &t, const TaskSummary &s, size_t k, uint64_t o, json &ev)
{
	const int pid = s.task ? s.task->pid : 0;
	ev.push_back(meta(pid, "process_name", {{"name", task_title(s)}}));
	ev.push_back(meta(pid, "process_sort_index", {{"sort_index", k}}));
	ev.push_back(meta(pid, "thread_name", {{"name", "iterations"}}));
	uint64_t first = UINT64_MAX;
	for (const auto &i : t.iters)
		if (i.pid == pid)
			first = std::min(first, i.start_ns());
	for (const auto &p : t.prios)
		if (p.pid == pid)
			first = std::min(first, p.at_ns);
	if (first != UINT64_MAX && !s.prios.empty() && s.prios.front())
		ev.push_back(
			counter(pid, "priority", us(first, o), {{"priority", s.prios.front()}}));
}

// An iteration's slices and counters (`weight`: mode weight's CPU weight too).
void perfetto_iteration(const Iter &i, uint64_t o, bool weight, json &ev)
{
	json args{
		{"iteration", i.iteration}, {"priority", i.old_prio}, {"util_pct", i.util / 100.0}};
	if (i.run_ns)
		ev.push_back(slice(i.pid, "compute", us(i.start_ns(), o), i.run_ns, args));
	if (i.wait_ns)
		ev.push_back(slice(i.pid, "wait", us(i.compute_end_ns(), o), i.wait_ns, args));
	const double end = us(i.end_ns, o);
	ev.push_back(counter(i.pid, "priority", end, {{"priority", i.prio}}));
	ev.push_back(counter(i.pid, "utilisation %", end,
			     {{"last", i.util / 100.0}, {"heuristic", i.heur_util / 100.0}}));
	if (weight && i.weight)
		ev.push_back(counter(i.pid, "cpu weight", end, {{"weight", i.weight}}));
}

} // namespace

json to_perfetto(const Trace &t)
{
	const uint64_t o = origin(t);
	json ev = json::array();
	auto rows = summarize(t);
	const bool weight = t.settings.contains("mode") && t.settings["mode"] == "weight";
	for (size_t k = 0; k < rows.size(); k++)
		perfetto_track(t, rows[k], k, o, ev);
	std::set<int> shown;
	for (const auto &s : rows)
		shown.insert(s.task ? s.task->pid : 0);
	for (const auto &i : t.iters)
		if (shown.count(i.pid))
			perfetto_iteration(i, o, weight, ev);
	for (const auto &p : t.prios)
		if (shown.count(p.pid))
			ev.push_back(
				counter(p.pid, "priority", us(p.at_ns, o), {{"priority", p.prio}}));
	json other{{"format", kFormat},      {"source", t.source}, {"host", t.host},
		   {"start_ns", t.start_ns}, {"origin_ns", o},     {"command", t.command},
		   {"settings", t.settings}};
	return json{{"displayTimeUnit", "ms"}, {"traceEvents", ev}, {"otherData", other}};
}

namespace
{

// The .prv's records: one Paraver task per row, CPUs counted from 1.
class PrvRecords
{
public:
	PrvRecords(const Trace &t, const std::vector<TaskSummary> &rows, uint64_t o);
	int ncpu() const { return ncpu_; }
	bool has(int pid) const { return task_no_.count(pid) != 0; }
	// A state from `b` to `e` (1 running, 3 waiting).
	void state(int pid, int cpu, uint64_t b, uint64_t e, int st);
	void event(int pid, int cpu, uint64_t at, uint64_t type, uint64_t v);
	// The records in time order, one a line.
	std::string text();

private:
	int cpu_of(int pid, int cpu) const;

	struct Rec {
		uint64_t at;
		std::string line;
	};
	const Trace &t_;
	const uint64_t o_;
	std::map<int, size_t> task_no_; // pid -> 1-based Paraver task
	int ncpu_ = 1;
	std::vector<Rec> recs_;
};

PrvRecords::PrvRecords(const Trace &t, const std::vector<TaskSummary> &rows, uint64_t o)
    : t_(t), o_(o)
{
	int max_cpu = -1;
	for (size_t k = 0; k < rows.size(); k++) {
		task_no_[rows[k].task ? rows[k].task->pid : 0] = k + 1;
		if (rows[k].task)
			max_cpu = std::max(max_cpu, rows[k].task->cpu);
	}
	for (const auto &i : t.iters)
		if (task_no_.count(i.pid))
			max_cpu = std::max(max_cpu, i.cpu);
	ncpu_ = std::max(1, max_cpu + 1);
}

int PrvRecords::cpu_of(int pid, int cpu) const
{
	if (cpu < 0)
		if (const TaskInfo *ti = t_.task(pid))
			cpu = ti->cpu;
	return cpu < 0 ? 0 : cpu + 1; // Paraver CPUs count from 1, 0: unknown
}

void PrvRecords::state(int pid, int cpu, uint64_t b, uint64_t e, int st)
{
	if (e > b)
		recs_.push_back({b - o_, fmt::format("1:{}:1:{}:1:{}:{}:{}", cpu_of(pid, cpu),
						     task_no_[pid], b - o_, e - o_, st)});
}

void PrvRecords::event(int pid, int cpu, uint64_t at, uint64_t type, uint64_t v)
{
	recs_.push_back({at - o_, fmt::format("2:{}:1:{}:1:{}:{}:{}", cpu_of(pid, cpu),
					      task_no_[pid], at - o_, type, v)});
}

std::string PrvRecords::text()
{
	std::stable_sort(recs_.begin(), recs_.end(),
			 [](const Rec &a, const Rec &b) { return a.at < b.at; });
	std::string s;
	for (const auto &r : recs_)
		s += r.line + "\n";
	return s;
}

// The .prv's header: the date, the span, the CPUs and the tasks.
std::string prv_header(const Trace &t, size_t ntasks, int ncpu, uint64_t o)
{
	std::time_t wall = static_cast<std::time_t>(t.start_unix_s);
	std::tm tm{};
	gmtime_r(&wall, &tm);
	char date[32];
	std::strftime(date, sizeof date, "%d/%m/%y at %H:%M", &tm);
	std::string appl;
	for (size_t k = 0; k < ntasks; k++)
		appl += k ? ",1:1" : "1:1";
	return fmt::format("#Paraver ({}):{}_ns:1({}):1:{}({})\n", date, t.last_ns() - o, ncpu,
			   ntasks, appl);
}

// The .pcf: the states' and events' names.
std::string prv_pcf()
{
	std::string pcf = "DEFAULT_OPTIONS\n\n"
			  "LEVEL               THREAD\n"
			  "UNITS               NANOSEC\n"
			  "LOOK_BACK           100\n"
			  "SPEED               1\n"
			  "FLAG_ICONS          ENABLED\n"
			  "NUM_OF_STATE_COLORS 1000\n"
			  "YMAX_SCALE          37\n\n\n"
			  "DEFAULT_SEMANTIC\n\n"
			  "THREAD_FUNC          State As Is\n\n\n"
			  "STATES\n"
			  "0    Idle\n"
			  "1    Running (compute phase)\n"
			  "2    Not created\n"
			  "3    Waiting a message (wait phase)\n\n\n"
			  "STATES_COLOR\n"
			  "0    {117,195,255}\n"
			  "1    {48,48,48}\n"
			  "2    {255,255,255}\n"
			  "3    {208,208,208}\n\n\n";
	pcf += fmt::format("EVENT_TYPE\n0    {}    SCHED_HPC priority (applied)\nVALUES\n",
			   kPrvPriority);
	static const char *const kPrioName[] = {
		"", "1 (background)", "2 (low)", "3 (low)", "4 (normal)", "5 (high)", "6 (high)"};
	for (int p = 1; p <= 6; p++)
		pcf += fmt::format("{}      {}\n", p, kPrioName[p]);
	pcf += fmt::format("\n\nEVENT_TYPE\n0    {}    Utilisation of the last iteration "
			   "(0.01 %)\n\n\n",
			   kPrvUtilisation);
	pcf += fmt::format("EVENT_TYPE\n0    {}    Iterations closed\n", kPrvIteration);
	return pcf;
}

// The .row: the names of the CPUs, the node and the tasks.
std::string prv_row(const Trace &t, const std::vector<TaskSummary> &rows, int ncpu)
{
	std::string row = fmt::format("LEVEL CPU SIZE {}\n", ncpu);
	for (int c = 0; c < ncpu; c++)
		row += fmt::format("CPU {}\n", c);
	row += fmt::format("\nLEVEL NODE SIZE 1\n{}\n", t.host.empty() ? "node" : t.host);
	row += fmt::format("\nLEVEL THREAD SIZE {}\n", rows.size());
	for (const auto &s : rows)
		row += task_title(s) + "\n";
	return row;
}

} // namespace

Paraver to_paraver(const Trace &t)
{
	const uint64_t o = origin(t);
	auto rows = summarize(t);
	PrvRecords recs(t, rows, o);
	for (const auto &s : rows) {
		// The priority each task starts with, at its first event.
		if (!s.task || s.prios.empty() || !s.prios.front())
			continue;
		recs.event(s.task->pid, -1, s.first_ns, kPrvPriority, s.prios.front());
	}
	for (const auto &i : t.iters) {
		if (!recs.has(i.pid))
			continue;
		recs.state(i.pid, i.cpu, i.start_ns(), i.compute_end_ns(), 1);
		recs.state(i.pid, i.cpu, i.compute_end_ns(), i.end_ns, 3);
		recs.event(i.pid, i.cpu, i.end_ns, kPrvPriority, i.prio);
		recs.event(i.pid, i.cpu, i.end_ns, kPrvUtilisation, i.util);
		recs.event(i.pid, i.cpu, i.end_ns, kPrvIteration,
			   i.iteration ? i.iteration : static_cast<uint64_t>(0));
	}
	for (const auto &p : t.prios)
		if (recs.has(p.pid))
			recs.event(p.pid, -1, p.at_ns, kPrvPriority, p.prio);
	Paraver out;
	out.prv = prv_header(t, rows.size(), recs.ncpu(), o) + recs.text();
	out.pcf = prv_pcf();
	out.row = prv_row(t, rows, recs.ncpu());
	return out;
}

} // namespace hpcd::trace
