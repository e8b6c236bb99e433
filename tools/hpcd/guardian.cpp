#include "guardian.hpp"

#include "system.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <map>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace hpcd
{

namespace
{
struct Tracked {
	std::string origin;
	int pid = 0;
	std::vector<int> cpus;
};
} // namespace

int guardian_main(int fd, Cgroups cg)
{
	std::map<std::string, Tracked> tasks;
	std::string buf;
	char chunk[4096];
	bool finished = false;
	for (;;) {
		ssize_t n = ::read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf.append(chunk, static_cast<size_t>(n));
		size_t nl;
		while ((nl = buf.find('\n')) != std::string::npos) {
			std::istringstream line(buf.substr(0, nl));
			buf.erase(0, nl + 1);
			std::string op, rel;
			line >> op;
			if (op == "T") {
				Tracked t;
				std::string cpus;
				line >> rel >> t.origin >> t.pid >> cpus;
				if (auto c = parse_cpulist(cpus))
					t.cpus = *c;
				tasks[rel] = t;
			} else if (op == "U") {
				line >> rel;
				tasks.erase(rel);
			} else if (op == "Q") {
				finished = true;
			}
		}
	}
	::close(fd);
	int restored = 0;
	std::vector<std::pair<std::string, std::string>> origins;
	for (auto &[rel, t] : tasks) {
		origins.emplace_back(rel, t.origin);
		if (!t.cpus.empty() && set_affinity(t.pid, t.cpus))
			restored++;
	}
	(void)finished; // teardown is idempotent: run it after an orderly exit too
	cg.teardown(origins);
	return static_cast<int>(tasks.size());
}

void Guardian::start(const Cgroups &cg)
{
	int p[2];
	if (::pipe2(p, O_CLOEXEC) < 0)
		throw std::system_error(errno, std::generic_category(), "pipe");
	pid_t pid = ::fork();
	if (pid < 0)
		throw std::system_error(errno, std::generic_category(), "fork");
	if (pid == 0) {
		::close(p[1]);
		::setsid();
		std::signal(SIGINT, SIG_IGN);
		std::signal(SIGTERM, SIG_IGN);
		std::signal(SIGHUP, SIG_IGN);
		std::signal(SIGPIPE, SIG_IGN);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		::prctl(PR_SET_NAME, "hpcd-guardian");
		// Everything else hpcd had open is not the guardian's business.
		const unsigned keep = static_cast<unsigned>(p[0]);
		if ((keep > 3 && ::close_range(3, keep - 1, 0) < 0) ||
		    ::close_range(keep + 1, ~0U, 0) < 0)
			for (int fd = 3; fd < 1024; fd++) // kernels before 5.9
				if (fd != p[0])
					::close(fd);
		guardian_main(p[0], cg);
		::_exit(0);
	}
	::close(p[0]);
	pid_ = pid;
	fd_ = p[1];
}

bool Guardian::send(const std::string &line)
{
	if (fd_ < 0)
		return false;
	size_t off = 0;
	while (off < line.size()) {
		ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += static_cast<size_t>(n);
	}
	return true;
}

bool Guardian::track(const std::string &rel, const std::string &origin, int pid,
		     const std::vector<int> &cpus)
{
	std::string c = cpus.empty() ? "-" : format_cpulist(cpus);
	return send("T " + rel + " " + (origin.empty() ? "/" : origin) + " " + std::to_string(pid) +
		    " " + c + "\n");
}

bool Guardian::untrack(const std::string &rel)
{
	return send("U " + rel + "\n");
}

void Guardian::finish()
{
	send("Q\n");
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
	if (pid_ > 0)
		::waitpid(pid_, nullptr, 0);
	pid_ = -1;
}

bool Guardian::reap(pid_t dead)
{
	if (dead != pid_)
		return false;
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
	pid_ = -1;
	return true;
}

} // namespace hpcd
