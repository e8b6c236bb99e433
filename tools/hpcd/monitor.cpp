// SPDX-License-Identifier: GPL-2.0
#include "monitor.hpp"
#include "system.hpp"

#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace hpcd
{

MonitorSocket::~MonitorSocket()
{
	close();
}

void MonitorSocket::open(const std::string &path, unsigned mode)
{
	// Every rank of a node may connect at once (MPI_Init returns together):
	// the backlog as deep as the system allows (net.core.somaxconn).
	lfd_ = listen_unix(SOCK_SEQPACKET, path, mode, 4096);
	ep_ = ::epoll_create1(EPOLL_CLOEXEC);
	if (ep_ < 0)
		throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

void MonitorSocket::close()
{
	for (auto &[fd, c] : conns_)
		::close(fd);
	conns_.clear();
	for (int *fd : {&lfd_, &ep_})
		if (*fd >= 0) {
			::close(*fd);
			*fd = -1;
		}
}

std::vector<int> MonitorSocket::eager_fds() const
{
	std::vector<int> v;
	for (auto &[fd, c] : conns_)
		if (!c.batched)
			v.push_back(fd);
	return v;
}

bool MonitorSocket::is_eager(int fd) const
{
	auto it = conns_.find(fd);
	return it != conns_.end() && !it->second.batched;
}

void MonitorSocket::accept_all()
{
	for (;;) {
		int fd = ::accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		Conn c;
		socklen_t len = sizeof c.peer;
		if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c.peer, &len) < 0) {
			::close(fd);
			continue;
		}
		conns_[fd] = c;
	}
}

// Append what @fd holds to @out; false if the peer hung up (the connection
// is closed and its peer's pid appended to @hups).
bool MonitorSocket::drain(int fd, std::vector<hpcmon_record> &out, std::vector<int> &hups)
{
	auto it = conns_.find(fd);
	if (it == conns_.end())
		return false;
	const ucred peer = it->second.peer;
	bool spoke = false;
	for (;;) {
		hpcmon_record r{};
		ssize_t n = ::recv(fd, &r, sizeof r, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			if (it->second.batched)
				::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
			::close(fd);
			conns_.erase(it);
			hups.push_back(peer.pid);
			return false;
		}
		spoke = true;
		// A rank speaks only for itself (root may speak for anyone).
		if (n != sizeof r || r.magic != HPCMON_MAGIC || r.version != HPCMON_VERSION ||
		    (peer.uid != 0 && peer.pid != r.pid)) {
			rejected_++;
			continue;
		}
		out.push_back(r);
	}
	if (spoke && !it->second.batched) {
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.fd = fd;
		if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) == 0)
			it->second.batched = true;
	}
	return true;
}

void MonitorSocket::deliver(std::vector<hpcmon_record> &recs, const std::vector<int> &hups,
			    const Sink &sink, const HangUp &hup)
{
	// In time order across the ranks, as they happened (the records of a
	// barrier side by side), not connection after connection.
	std::stable_sort(
		recs.begin(), recs.end(),
		[](const hpcmon_record &x, const hpcmon_record &y) { return x.end_ns < y.end_ns; });
	for (const auto &r : recs)
		sink(r);
	for (int pid : hups)
		hup(pid);
}

void MonitorSocket::read(int fd, const Sink &sink, const HangUp &hup)
{
	std::vector<hpcmon_record> recs;
	std::vector<int> hups;
	drain(fd, recs, hups);
	deliver(recs, hups, sink, hup);
}

void MonitorSocket::read_batched(const Sink &sink, const HangUp &hup)
{
	std::vector<hpcmon_record> recs;
	std::vector<int> hups;
	epoll_event evs[64];
	for (;;) {
		int n = ::epoll_wait(ep_, evs, 64, 0);
		for (int i = 0; i < n; i++)
			drain(evs[i].data.fd, recs, hups);
		if (n < 64)
			break;
	}
	deliver(recs, hups, sink, hup);
}

} // namespace hpcd
