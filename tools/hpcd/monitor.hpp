// SPDX-License-Identifier: GPL-2.0
// hpcd's end of the MPI monitor's socket (tools/common/hpcmon_proto.h): one
// connection per rank, each with its own queue, so that the records of a
// barrier of hundreds of ranks all arrive (one shared datagram queue held
// net.unix.max_dgram_qlen, 10 by default). A new connection is read as soon
// as it speaks (its hello: the rank is adopted at once); after that its
// records are read in batches, when hpcd's timer asks (read_batched), so that
// hpcd wakes once per period and not once per rank and iteration.
#pragma once

#include <sys/socket.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hpcmon_proto.h"

namespace hpcd
{

class MonitorSocket
{
public:
	// A valid record, from a peer allowed to speak for r.pid (itself, or
	// root for anyone).
	using Sink = std::function<void(const hpcmon_record &r)>;
	// The peer process of a connection that hung up (it exited, or its
	// monitor closed the connection).
	using HangUp = std::function<void(int pid)>;

	MonitorSocket() = default;
	MonitorSocket(const MonitorSocket &) = delete;
	MonitorSocket &operator=(const MonitorSocket &) = delete;
	~MonitorSocket();

	// Bind and listen on @path (mode @mode); throws on failure.
	void open(const std::string &path, unsigned mode);
	void close();
	int listen_fd() const { return lfd_; }
	// Connections not yet batched: poll these for input.
	std::vector<int> eager_fds() const;
	bool is_eager(int fd) const;
	void accept_all();
	// Read what @fd holds; an eager connection that said something is
	// batched from now on.
	void read(int fd, const Sink &sink, const HangUp &hup);
	// Read every batched connection that has input (none: one system call);
	// the records go to @sink in time order (end_ns) across connections.
	void read_batched(const Sink &sink, const HangUp &hup);
	size_t connections() const { return conns_.size(); }
	uint64_t rejected() const { return rejected_; }

private:
	struct Conn {
		ucred peer{};
		bool batched = false;
	};
	bool drain(int fd, std::vector<hpcmon_record> &out, std::vector<int> &hups);
	static void deliver(std::vector<hpcmon_record> &recs, const std::vector<int> &hups,
			    const Sink &sink, const HangUp &hup);

	int lfd_ = -1, ep_ = -1;
	std::map<int, Conn> conns_;
	uint64_t rejected_ = 0;
};

} // namespace hpcd
