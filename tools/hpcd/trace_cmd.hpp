// hpcctl trace: where a recording writes (the backends' recordings fill it).
#pragma once

#include "hpcctl.hpp"
#include "trace.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

namespace hpcctl
{

// Where the recorder writes: the native file, line by line, and the same
// trace in memory for the exports.
struct Recorder {
	hpcd::trace::Trace t;
	std::ofstream f;
	std::set<int> known;
	uint64_t missed = 0;
	void line(const std::string &l)
	{
		f << l << '\n';
		if (!f)
			fail(kFail, "trace: cannot write the record: " +
					    std::string(std::strerror(errno)));
	}
	void task(const hpcd::trace::TaskInfo &ti)
	{
		known.insert(ti.pid);
		t.tasks.push_back(ti);
		line(hpcd::trace::task_line(ti));
	}
	void iter(const hpcd::trace::Iter &i)
	{
		t.iters.push_back(i);
		line(hpcd::trace::iter_line(i));
	}
	void prio(const hpcd::trace::PrioChange &p)
	{
		t.prios.push_back(p);
		line(hpcd::trace::prio_line(p));
	}
};

} // namespace hpcctl
