#pragma once

#include "cgroup.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace hpcd_test
{

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
