#include "bpfsource.hpp"

#include "cgroup.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#ifdef HPCD_HAVE_BPF
#include <bpf/libbpf.h>

extern "C" {
#include "sched_events.h"
#include "sched_events.skel.h"
}
#endif

namespace hpcd
{

namespace
{
// hpcd and the kernel must count process ids alike: in a PID namespace of
// its own, hpcd's ids are not the kernel's (task->tgid).
void check_pid_namespace()
{
	auto st = read_file("/proc/self/status");
	if (!st)
		return;
	std::istringstream in(*st);
	for (std::string line; std::getline(in, line);)
		if (line.rfind("NSpid:", 0) == 0) {
			std::istringstream f(line.substr(6));
			int n = 0;
			for (std::string x; f >> x;)
				n++;
			if (n > 1)
				throw std::runtime_error(
					"hpcd runs in a PID namespace of its own: its "
					"process ids are not the kernel's");
		}
}
} // namespace

#ifdef HPCD_HAVE_BPF

struct BpfSource::Impl {
	sched_events *skel = nullptr;
	ring_buffer *rb = nullptr;
	unsigned gen = 0;
	std::vector<SchedEvent> batch;
	~Impl()
	{
		ring_buffer__free(rb);
		sched_events__destroy(skel);
	}
};

namespace
{
// libbpf's messages: kept (the last ones say why a load failed), not printed.
std::string g_libbpf_log;

int keep_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char buf[512];
	std::vsnprintf(buf, sizeof buf, fmt, ap);
	g_libbpf_log += buf;
	if (g_libbpf_log.size() > 4096)
		g_libbpf_log.erase(0, g_libbpf_log.size() - 4096);
	return 0;
}

// The first two things libbpf said (a failed load's cause, not its echo),
// or strerror of `err`.
std::string why(const char *what, int err)
{
	std::vector<std::string> said;
	std::istringstream in(g_libbpf_log);
	for (std::string l; std::getline(in, l) && said.size() < 2;) {
		if (l.rfind("libbpf: ", 0) == 0)
			l.erase(0, 8);
		if (!l.empty() && l.rfind("--", 0) != 0 &&
		    l.rfind("failed to load object", 0) != 0 &&
		    l.rfind("failed to load BPF skeleton", 0) != 0)
			said.push_back(l);
	}
	std::string r = std::string(what) + ": ";
	if (said.empty())
		return r + std::strerror(err);
	for (size_t i = 0; i < said.size(); i++)
		r += (i ? "; " : "") + said[i];
	return r;
}

int on_event(void *ctx, void *data, size_t size)
{
	if (size < sizeof(hpcd_event))
		return 0;
	const auto *e = static_cast<const hpcd_event *>(data);
	static_cast<std::vector<SchedEvent> *>(ctx)->push_back({e->ts, static_cast<int>(e->tgid),
								static_cast<int>(e->tid),
								e->kind == HPCD_EV_WAKE});
	return 0;
}
} // namespace

BpfSource::BpfSource(const std::string &btf) : p_(std::make_unique<Impl>())
{
	check_pid_namespace();
	g_libbpf_log.clear();
	libbpf_set_print(keep_libbpf_log);
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .btf_custom_path = btf.empty() ? nullptr : btf.c_str());
	p_->skel = sched_events__open_opts(&opts);
	if (!p_->skel)
		throw std::runtime_error(why("cannot open the BPF program", errno));
	if (int err = sched_events__load(p_->skel))
		throw std::runtime_error(why("cannot load the BPF program", -err));
	if (int err = sched_events__attach(p_->skel))
		throw std::runtime_error(why("cannot attach to the scheduler's tracepoints", -err));
	p_->rb =
		ring_buffer__new(bpf_map__fd(p_->skel->maps.events), on_event, &p_->batch, nullptr);
	if (!p_->rb)
		throw std::runtime_error(why("cannot map the BPF ring buffer", errno));
}

BpfSource::~BpfSource() = default;

void BpfSource::add(int pid)
{
	const unsigned key = static_cast<unsigned>(pid);
	const hpcd_proc v{++p_->gen, 0};
	if (bpf_map__update_elem(p_->skel->maps.procs, &key, sizeof key, &v, sizeof v, BPF_ANY))
		throw std::runtime_error("cannot follow pid " + std::to_string(pid) +
					 " by BPF: " + std::strerror(errno));
}

void BpfSource::remove(int pid)
{
	const unsigned key = static_cast<unsigned>(pid);
	bpf_map__delete_elem(p_->skel->maps.procs, &key, sizeof key, 0);
}

std::vector<SchedEvent> BpfSource::read()
{
	p_->batch.clear();
	ring_buffer__consume(p_->rb);
	// Events of one process come in order (the runqueue lock orders them);
	// across CPUs the ring buffer may interleave them.
	std::stable_sort(p_->batch.begin(), p_->batch.end(),
			 [](const SchedEvent &a, const SchedEvent &b) { return a.at < b.at; });
	events_ += p_->batch.size();
	return std::move(p_->batch);
}

uint64_t BpfSource::lost() const
{
	return p_->skel->bss->nr_lost;
}

uint64_t BpfSource::unmarked() const
{
	return p_->skel->bss->nr_nomark;
}

uint64_t BpfSource::unseen() const
{
	return p_->skel->bss->nr_unseen;
}

#else

struct BpfSource::Impl {
};

BpfSource::BpfSource(const std::string &)
{
	check_pid_namespace();
	throw std::runtime_error("this hpcd was built without it (clang, bpftool or libbpf-dev "
				 "were missing: see tools/hpcd/README.md)");
}

BpfSource::~BpfSource() = default;
void BpfSource::add(int) {}
void BpfSource::remove(int) {}
std::vector<SchedEvent> BpfSource::read()
{
	return {};
}
uint64_t BpfSource::lost() const
{
	return 0;
}
uint64_t BpfSource::unmarked() const
{
	return 0;
}
uint64_t BpfSource::unseen() const
{
	return 0;
}

#endif

} // namespace hpcd
