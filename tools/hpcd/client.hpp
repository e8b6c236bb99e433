// hpcctl's side of the control socket: one request, one reply.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hpcd
{

class ControlClient
{
public:
	~ControlClient();
	// Connect to hpcd's control socket; false (and errno) if nobody answers.
	bool connect(const std::string &path);
	// Send a request and wait for its reply; throws std::runtime_error.
	nlohmann::json call(const nlohmann::json &req);
	// The next line of a stream (after a "watch" request): 1 and the line,
	// 0 if none came within `timeout_ms` (< 0: no limit) or `wake_fd` (if
	// >= 0) became readable first, -1 when hpcd closed the connection.
	int read_line(std::string &line, int timeout_ms, int wake_fd = -1);
	void close();

private:
	int fd_ = -1;
	std::string buf_;
};

} // namespace hpcd
