#pragma once

#include "cgroup.hpp"
#include "hpcmon_proto.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace hpcd_test
{

constexpr uint64_t ms = 1000000;

// An iteration record of the MPI monitor, as libhpcmon sends it.
inline hpcmon_record rec(int pid, int rank, uint64_t iter, uint64_t run, uint64_t wait,
			 uint64_t end)
{
	hpcmon_record r{};
	r.magic = HPCMON_MAGIC;
	r.version = HPCMON_VERSION;
	r.kind = HPCMON_ITERATION;
	r.pid = pid;
	r.rank = rank;
	r.size = 2;
	r.iteration = iter;
	r.run_ns = run;
	r.wait_ns = wait;
	r.end_ns = end;
	return r;
}

inline std::string data(const std::string &name)
{
	auto t = hpcd::read_file(std::string(HPCD_TEST_DATA) + "/" + name);
	EXPECT_TRUE(t.has_value()) << name;
	return t.value_or("");
}

// A temporary directory, removed with its contents.
struct TempDir {
	std::string path;
	TempDir()
	{
		char tmpl[] = "/tmp/hpcd-test-XXXXXX";
		path = mkdtemp(tmpl);
	}
	~TempDir() { std::filesystem::remove_all(path); }
};

inline std::string slurp(const std::string &p)
{
	auto t = hpcd::read_file(p);
	return t.value_or("<missing>");
}

inline bool exists(const std::string &p)
{
	return std::filesystem::exists(p);
}

} // namespace hpcd_test
