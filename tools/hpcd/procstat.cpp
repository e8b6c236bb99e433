#include "procstat.hpp"

#include <algorithm>
#include <charconv>

namespace hpcd
{

std::optional<ProcStat> parse_proc_stat(std::string_view text)
{
	auto rp = text.rfind(')');
	if (rp == std::string_view::npos || text.find('(') == std::string_view::npos)
		return std::nullopt;
	std::string_view rest = text.substr(rp + 1);
	// Fields after the name, 1-based from the state: 1 state, 2 ppid, ...
	// 12 utime, 13 stime (fields 14 and 15 of proc(5)), 37 processor (39),
	// 49 env_end (51).
	ProcStat s;
	int field = 0;
	size_t i = 0;
	while (i < rest.size()) {
		while (i < rest.size() && rest[i] == ' ')
			i++;
		if (i >= rest.size() || rest[i] == '\n')
			break;
		size_t e = i;
		while (e < rest.size() && rest[e] != ' ' && rest[e] != '\n')
			e++;
		field++;
		std::string_view tok = rest.substr(i, e - i);
		if (field == 1) {
			if (tok.size() != 1)
				return std::nullopt;
			s.state = tok[0];
		} else if (field == 2) {
			std::from_chars(tok.data(), tok.data() + tok.size(), s.ppid);
		} else if (field == 12) {
			std::from_chars(tok.data(), tok.data() + tok.size(), s.utime);
		} else if (field == 13) {
			std::from_chars(tok.data(), tok.data() + tok.size(), s.stime);
		} else if (field == 49) {
			std::from_chars(tok.data(), tok.data() + tok.size(), s.env_end);
		} else if (field == 37) {
			std::from_chars(tok.data(), tok.data() + tok.size(), s.processor);
		}
		i = e;
	}
	if (field < 2)
		return std::nullopt;
	return s;
}

std::optional<uint64_t> parse_schedstat(std::string_view text)
{
	uint64_t v = 0;
	auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (ec != std::errc() || p == text.data() || (p < text.data() + text.size() && *p != ' '))
		return std::nullopt;
	return v;
}

std::vector<ProcEvent> ProcTracker::sample(uint64_t now, char state, uint64_t run_ns)
{
	std::vector<ProcEvent> ev;
	const bool run = state == 'R';
	if (!started_ || now <= last_t_) {
		// The first sample only sets the baseline: the task is taken to
		// have been in its present state since.
		if (!started_)
			runnable_ = run;
		started_ = true;
		last_t_ = std::max(last_t_, now);
		last_run_ = run_ns;
		return ev;
	}
	const uint64_t span = now - last_t_;
	const uint64_t d = std::min(run_ns >= last_run_ ? run_ns - last_run_ : 0, span);
	if (runnable_ && !run) {
		ev.push_back({ProcEvent::Sleep, last_t_ + d});
	} else if (!runnable_ && run) {
		ev.push_back({ProcEvent::Wakeup, now - d});
	} else if (!runnable_ && !run && d > min_burst_) {
		uint64_t wake = last_t_ + (span - d) / 2;
		ev.push_back({ProcEvent::Wakeup, wake});
		ev.push_back({ProcEvent::Sleep, wake + d});
	}
	runnable_ = run;
	last_t_ = now;
	last_run_ = run_ns;
	return ev;
}

} // namespace hpcd
