// SPDX-License-Identifier: GPL-2.0
#include "monitor.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace hpcd;
using hpcd_test::rec;

namespace
{
struct Peer {
	int fd = -1;
	explicit Peer(const std::string &path)
	{
		fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		sockaddr_un a{};
		a.sun_family = AF_UNIX;
		std::strcpy(a.sun_path, path.c_str());
		EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
	}
	~Peer() { close(); }
	void close()
	{
		if (fd >= 0)
			::close(fd);
		fd = -1;
	}
	void send(const hpcmon_record &r)
	{
		ASSERT_EQ(::send(fd, &r, sizeof r, 0), (ssize_t)sizeof r);
	}
};

bool readable(int fd)
{
	pollfd p{fd, POLLIN, 0};
	return ::poll(&p, 1, 1000) == 1;
}

struct Got {
	std::vector<hpcmon_record> recs;
	std::vector<int> hups;
	MonitorSocket::Sink sink()
	{
		return [this](const hpcmon_record &r) { recs.push_back(r); };
	}
	MonitorSocket::HangUp hup()
	{
		return [this](int pid) { hups.push_back(pid); };
	}
};
// hpcd's socket in a directory of its own, removed after the test.
class MonitorSocketTest : public ::testing::Test
{
protected:
	void SetUp() override
	{
		ASSERT_NE(::mkdtemp(dir), nullptr);
		path = std::string(dir) + "/mon";
		m.open(path, 0666);
	}
	void TearDown() override
	{
		m.close();
		::unlink(path.c_str());
		::rmdir(dir);
	}
	char dir[32] = "/tmp/hpcd-mon-XXXXXX";
	std::string path;
	MonitorSocket m;
	Got g;
};
} // namespace

TEST_F(MonitorSocketTest, HelloAtOnceThenBatchedThenHangUp)
{
	{
		Peer p(path);
		ASSERT_TRUE(readable(m.listen_fd()));
		m.accept_all();
		ASSERT_EQ(m.connections(), 1u);
		ASSERT_EQ(m.eager_fds().size(), 1u);
		const int fd = m.eager_fds()[0];
		auto hello = rec(::getpid(), 0, 0, 0, 0, 1);
		hello.kind = HPCMON_HELLO;
		p.send(hello);
		ASSERT_TRUE(readable(fd));
		m.read(fd, g.sink(), g.hup());
		ASSERT_EQ(g.recs.size(), 1u);
		EXPECT_EQ(g.recs[0].kind, HPCMON_HELLO);
		EXPECT_TRUE(m.eager_fds().empty()) << "after its hello, read on the timer";
		// A bad record is counted and skipped; the good ones around it pass.
		p.send(rec(::getpid(), 0, 0, 10, 10, 2));
		auto bad = rec(::getpid(), 0, 1, 10, 10, 3);
		bad.version = HPCMON_VERSION - 1;
		p.send(bad);
		p.send(rec(::getpid(), 0, 2, 10, 10, 4));
		ASSERT_TRUE(readable(fd));
		m.read_batched(g.sink(), g.hup());
		ASSERT_EQ(g.recs.size(), 3u);
		EXPECT_EQ(g.recs[2].iteration, 2u);
		EXPECT_EQ(m.rejected(), 1u);
		EXPECT_TRUE(g.hups.empty());
		m.read_batched(g.sink(), g.hup());
		EXPECT_EQ(g.recs.size(), 3u) << "nothing new: nothing read";
	}
	// The peer closed its end: its process is reported, the connection gone.
	m.read_batched(g.sink(), g.hup());
	ASSERT_EQ(g.hups.size(), 1u);
	EXPECT_EQ(g.hups[0], ::getpid());
	EXPECT_EQ(m.connections(), 0u);
}

TEST_F(MonitorSocketTest, RecordsOfManyRanksInTimeOrder)
{
	Peer a(path), b(path);
	ASSERT_TRUE(readable(m.listen_fd()));
	m.accept_all();
	ASSERT_EQ(m.connections(), 2u);
	auto hello = rec(::getpid(), 0, 0, 0, 0, 1);
	hello.kind = HPCMON_HELLO;
	a.send(hello);
	b.send(hello);
	for (int fd : m.eager_fds()) {
		ASSERT_TRUE(readable(fd));
		m.read(fd, g.sink(), g.hup());
	}
	ASSERT_EQ(g.recs.size(), 2u);
	// Each rank's records of two barriers, one rank after the other: read
	// together, they go to the core barrier by barrier.
	a.send(rec(::getpid(), 0, 0, 10, 10, 20));
	a.send(rec(::getpid(), 0, 1, 10, 10, 40));
	b.send(rec(::getpid(), 1, 0, 10, 10, 10));
	b.send(rec(::getpid(), 1, 1, 10, 10, 30));
	// (A Unix socket's send has queued the record when it returns.)
	m.read_batched(g.sink(), g.hup());
	ASSERT_EQ(g.recs.size(), 6u);
	std::vector<uint64_t> ends;
	for (size_t i = 2; i < g.recs.size(); i++)
		ends.push_back(g.recs[i].end_ns);
	EXPECT_EQ(ends, (std::vector<uint64_t>{10, 20, 30, 40}));
}
