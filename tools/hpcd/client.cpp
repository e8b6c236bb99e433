#include "client.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace hpcd
{

ControlClient::~ControlClient()
{
	if (fd_ >= 0)
		::close(fd_);
}

void ControlClient::close()
{
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
	buf_.clear();
}

bool ControlClient::connect(const std::string &path)
{
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	if (path.size() >= sizeof a.sun_path) {
		errno = ENAMETOOLONG;
		return false;
	}
	std::strcpy(a.sun_path, path.c_str());
	fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd_ < 0)
		return false;
	if (::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
		int e = errno;
		::close(fd_);
		fd_ = -1;
		errno = e;
		return false;
	}
	timeval tv{10, 0};
	::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return true;
}

nlohmann::json ControlClient::call(const nlohmann::json &req)
{
	std::string line = req.dump() + "\n";
	if (::send(fd_, line.data(), line.size(), MSG_NOSIGNAL) !=
	    static_cast<ssize_t>(line.size()))
		throw std::runtime_error(std::string("hpcd control socket: ") +
					 std::strerror(errno));
	size_t nl;
	while ((nl = buf_.find('\n')) == std::string::npos) {
		char b[65536];
		ssize_t n = ::recv(fd_, b, sizeof b, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw std::runtime_error(
				"hpcd closed the control connection without a reply");
		buf_.append(b, static_cast<size_t>(n));
	}
	std::string reply = buf_.substr(0, nl);
	buf_.erase(0, nl + 1);
	try {
		return nlohmann::json::parse(reply);
	} catch (const nlohmann::json::exception &e) {
		throw std::runtime_error(std::string("hpcd sent a malformed reply: ") + e.what());
	}
}

int ControlClient::read_line(std::string &line, int timeout_ms, int wake_fd)
{
	for (;;) {
		size_t nl = buf_.find('\n');
		if (nl != std::string::npos) {
			line = buf_.substr(0, nl);
			buf_.erase(0, nl + 1);
			return 1;
		}
		if (fd_ < 0)
			return -1;
		pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
		int r = ::poll(p, wake_fd >= 0 ? 2 : 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			return 0;
		if (r == 0 || !p[0].revents)
			return 0;
		char b[65536];
		ssize_t n = ::recv(fd_, b, sizeof b, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0)
			return -1;
		buf_.append(b, static_cast<size_t>(n));
		timeout_ms = 0;
	}
}

} // namespace hpcd
