#include "wakefilter.hpp"

namespace hpcd
{

void WakeFilter::push(ProcEvent::Kind kind, uint64_t at, std::vector<ProcEvent> &out)
{
	if ((kind == ProcEvent::Sleep) == asleep_)
		return;
	if (kind == ProcEvent::Wakeup) {
		asleep_ = false;
		held_ = at;
		return;
	}
	asleep_ = true;
	if (held_ && at <= *held_ + min_burst_) {
		held_.reset(); // a burst inside the wait: the wait goes on
		return;
	}
	if (held_)
		out.push_back({ProcEvent::Wakeup, *held_});
	held_.reset();
	out.push_back({ProcEvent::Sleep, at});
}

void WakeFilter::flush(uint64_t now, std::vector<ProcEvent> &out)
{
	if (held_ && now > *held_ + min_burst_) {
		out.push_back({ProcEvent::Wakeup, *held_});
		held_.reset();
	}
}

} // namespace hpcd
