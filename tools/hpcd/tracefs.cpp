#include "tracefs.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace hpcd
{

namespace
{

constexpr const char *kEvent = "events/sched/sched_hpc_iteration";
// Judgements of tasks that never wait; older kernels of the series lack it.
constexpr const char *kJudge = "events/sched/sched_hpc_judge";

bool is_dir(const std::string &p)
{
	struct stat st;
	return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void put(const std::string &path, const std::string &v)
{
	int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
	ssize_t n = ::write(fd, v.data(), v.size());
	int e = errno;
	::close(fd);
	if (n != static_cast<ssize_t>(v.size()))
		throw std::runtime_error("cannot write '" + v.substr(0, v.find('\n')) + "' to " +
					 path + ": " + std::strerror(e));
}

} // namespace

std::string find_tracefs(const std::string &want)
{
	if (!want.empty())
		return want;
	for (const char *d : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
		if (is_dir(std::string(d) + "/instances"))
			return d;
	return "/sys/kernel/tracing";
}

void TracefsSession::open(const std::string &root, const std::string &name)
{
	close();
	if (!is_dir(root + "/instances"))
		throw std::runtime_error("tracefs is not mounted at " + root +
					 " (mount -t tracefs nodev " + root + ")");
	if (!is_dir(root + "/" + kEvent))
		throw std::runtime_error("this kernel has no sched_hpc_iteration tracepoint (" +
					 root + "/" + kEvent + " does not exist)");
	const std::string dir = root + "/instances/" + name;
	if (::mkdir(dir.c_str(), 0700) < 0)
		throw std::runtime_error("cannot create the tracefs instance " + dir + ": " +
					 std::strerror(errno));
	dir_ = dir;
	try {
		put(dir_ + "/trace_clock", "mono\n");
		put(dir_ + "/" + kEvent + "/enable", "1\n");
		if (is_dir(dir_ + "/" + kJudge))
			put(dir_ + "/" + kJudge + "/enable", "1\n");
		fd_ = ::open((dir_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd_ < 0)
			throw std::runtime_error("cannot open " + dir_ +
						 "/trace_pipe: " + std::strerror(errno));
	} catch (...) {
		close();
		throw;
	}
}

std::vector<std::string> TracefsSession::read(int timeout_ms)
{
	std::vector<std::string> lines;
	if (fd_ < 0)
		return lines;
	pollfd p{fd_, POLLIN, 0};
	if (::poll(&p, 1, timeout_ms) < 0 && errno != EINTR)
		throw std::runtime_error(std::string("poll trace_pipe: ") + std::strerror(errno));
	for (;;) {
		char buf[65536];
		ssize_t n = ::read(fd_, buf, sizeof buf);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0)
			throw std::runtime_error(std::string("read trace_pipe: ") +
						 std::strerror(errno));
		if (n == 0)
			break;
		partial_.append(buf, static_cast<size_t>(n));
	}
	size_t pos = 0, nl;
	while ((nl = partial_.find('\n', pos)) != std::string::npos) {
		lines.push_back(partial_.substr(pos, nl - pos));
		pos = nl + 1;
	}
	partial_.erase(0, pos);
	return lines;
}

void TracefsSession::close()
{
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
	if (dir_.empty())
		return;
	// Removing an instance disables its events with it; disable first
	// anyway, in case the removal is refused (a reader still open).
	for (const char *ev : {kEvent, kJudge}) {
		int fd = ::open((dir_ + "/" + ev + "/enable").c_str(), O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)!::write(fd, "0\n", 2);
			::close(fd);
		}
	}
	::rmdir(dir_.c_str());
	dir_.clear();
}

} // namespace hpcd
