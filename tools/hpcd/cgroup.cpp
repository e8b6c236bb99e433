#include "cgroup.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace hpcd
{

namespace
{

std::vector<std::string_view> split(std::string_view s, char sep)
{
	std::vector<std::string_view> out;
	size_t pos = 0;
	while (pos <= s.size()) {
		size_t e = s.find(sep, pos);
		if (e == std::string_view::npos)
			e = s.size();
		out.push_back(s.substr(pos, e - pos));
		pos = e + 1;
	}
	return out;
}

bool has_token(std::string_view list, std::string_view tok, char sep)
{
	for (auto t : split(list, sep))
		if (t == tok)
			return true;
	return false;
}

// mountinfo escapes blanks in paths as octal (\040).
std::string unescape(std::string_view s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '\\' && i + 3 < s.size()) {
			int v = 0;
			bool ok = true;
			for (int k = 1; k <= 3; k++) {
				char c = s[i + k];
				if (c < '0' || c > '7') {
					ok = false;
					break;
				}
				v = v * 8 + (c - '0');
			}
			if (ok) {
				out += static_cast<char>(v);
				i += 3;
				continue;
			}
		}
		out += s[i];
	}
	return out;
}

std::string join(const std::string &a, const std::string &b)
{
	if (b.empty() || b == "/")
		return a;
	if (!a.empty() && a.back() == '/')
		return a + (b.front() == '/' ? b.substr(1) : b);
	return a + (b.front() == '/' ? b : "/" + b);
}

uint64_t to_u64(std::string_view s)
{
	uint64_t v = 0;
	std::from_chars(s.data(), s.data() + s.size(), v);
	return v;
}

} // namespace

std::optional<std::string> read_file(const std::string &path)
{
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return std::nullopt;
	std::string out;
	char buf[4096];
	for (;;) {
		ssize_t n = ::read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			::close(fd);
			return std::nullopt;
		}
		if (n == 0)
			break;
		out.append(buf, static_cast<size_t>(n));
	}
	::close(fd);
	return out;
}

namespace
{
// `val` at the start of the open file `fd` (`path`, for the message). A
// cgroup file takes each write as its whole value.
void write_at_start(int fd, const std::string &path, const std::string &val)
{
	const ssize_t n = ::pwrite(fd, val.data(), val.size(), 0);
	const int err = n < 0 ? errno : EIO;
	if (n != static_cast<ssize_t>(val.size()))
		throw std::system_error(err, std::generic_category(),
					"write '" + val + "' to " + path);
}
} // namespace

void write_file(const std::string &path, const std::string &val)
{
	int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		throw std::system_error(errno, std::generic_category(), "open " + path);
	try {
		write_at_start(fd, path, val);
	} catch (...) {
		::close(fd);
		throw;
	}
	::close(fd);
}

std::optional<CgLayout> find_cpu_cgroup(std::string_view mountinfo, const std::string &prefix,
					std::string &why)
{
	std::optional<CgLayout> v2;
	std::string v2_root;
	for (auto line : split(mountinfo, '\n')) {
		if (line.empty())
			continue;
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		auto f = split(line, ' ');
		auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
		if (f.size() < 5 || dash == f.end() || f.end() - dash < 4)
			continue;
		std::string_view fstype = dash[1], super = dash[3];
		std::string mnt = unescape(f[4]);
		if (fstype == "cgroup" && has_token(super, "cpu", ',')) {
			return CgLayout{CgVersion::V1, mnt};
		}
		if (fstype == "cgroup2" && !v2) {
			v2_root = mnt;
			auto ctl = read_file(prefix + mnt + "/cgroup.controllers");
			std::string c = ctl ? *ctl : "";
			while (!c.empty() && (c.back() == '\n' || c.back() == ' '))
				c.pop_back();
			if (has_token(c, "cpu", ' '))
				v2 = CgLayout{CgVersion::V2, mnt};
		}
	}
	if (v2)
		return v2;
	why = v2_root.empty() ? "no cgroup v1 'cpu' mount and no cgroup2 mount in mountinfo"
			      : "no cgroup v1 'cpu' mount, and the cgroup2 mount " + v2_root +
					" does not offer the cpu controller (cgroup.controllers)";
	return std::nullopt;
}

std::optional<std::string> task_cgroup(std::string_view proc_cgroup, CgVersion v)
{
	for (auto line : split(proc_cgroup, '\n')) {
		auto c1 = line.find(':');
		if (c1 == std::string_view::npos)
			continue;
		auto c2 = line.find(':', c1 + 1);
		if (c2 == std::string_view::npos)
			continue;
		auto hier = line.substr(0, c1);
		auto ctrl = line.substr(c1 + 1, c2 - c1 - 1);
		auto path = line.substr(c2 + 1);
		if (v == CgVersion::V2 && hier == "0" && ctrl.empty())
			return std::string(path);
		if (v == CgVersion::V1 && has_token(ctrl, "cpu", ','))
			return std::string(path);
	}
	return std::nullopt;
}

CgStat parse_cpu_stat(std::string_view text, CgVersion v)
{
	CgStat s;
	for (auto line : split(text, '\n')) {
		auto sp = line.find(' ');
		if (sp == std::string_view::npos)
			continue;
		auto k = line.substr(0, sp);
		uint64_t val = to_u64(line.substr(sp + 1));
		if (k == "nr_periods")
			s.nr_periods = val;
		else if (k == "nr_throttled")
			s.nr_throttled = val;
		else if (v == CgVersion::V1 && k == "throttled_time")
			s.throttled_ns = val;
		else if (v == CgVersion::V2 && k == "throttled_usec")
			s.throttled_ns = val * 1000;
	}
	return s;
}

uint64_t weight_to_shares(uint32_t weight)
{
	uint64_t s = static_cast<uint64_t>(weight) * 1024 / 100;
	return std::clamp<uint64_t>(s, 2, 262144);
}

Cgroups::Cgroups(CgLayout layout, std::string instance, std::string prefix, bool fake)
    : layout_(std::move(layout)), instance_(std::move(instance)), prefix_(std::move(prefix)),
      fake_(fake)
{
}

std::string Cgroups::abs(const std::string &rel) const
{
	return prefix_ + join(layout_.root, rel);
}

std::string Cgroups::instance_dir() const
{
	return abs("/hpcsched/" + instance_);
}

std::string Cgroups::rel_task_dir(const std::string &job, int pid) const
{
	return "/hpcsched/" + instance_ + "/" + job + "/" + std::to_string(pid);
}

void Cgroups::write(const std::string &rel, const char *file, const std::string &val) const
{
	write_file(abs(rel) + "/" + file, val);
}

Cgroups::KeptFiles::~KeptFiles()
{
	for (auto &[path, f] : fd)
		::close(f);
}

void Cgroups::write_kept(const std::string &rel, const char *file, const std::string &val)
{
	const std::string path = abs(rel) + "/" + file;
	auto it = kept_->fd.find(path);
	if (it == kept_->fd.end()) {
		const int f =
			::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fake_ ? O_CREAT : 0), 0644);
		if (f < 0)
			throw std::system_error(errno, std::generic_category(), "open " + path);
		it = kept_->fd.emplace(path, f).first;
	}
	// A plain file (the tests' tree) is rewritten whole.
	if (fake_ && ::ftruncate(it->second, 0) < 0)
		throw std::system_error(errno, std::generic_category(), "truncate " + path);
	write_at_start(it->second, path, val);
}

void Cgroups::close_kept(const std::string &rel)
{
	const std::string dir = abs(rel) + "/";
	auto &m = kept_->fd;
	for (auto it = m.lower_bound(dir); it != m.end() && it->first.rfind(dir, 0) == 0;) {
		::close(it->second);
		it = m.erase(it);
	}
}

static void make_dir(const std::string &path)
{
	if (::mkdir(path.c_str(), 0755) < 0 && errno != EEXIST)
		throw std::system_error(errno, std::generic_category(), "mkdir " + path);
}

void Cgroups::setup()
{
	try {
		if (layout_.version == CgVersion::V2) {
			// The cpu controller must be enabled on every level above a
			// task's cgroup. The root's subtree_control is the only file
			// hpcd writes outside its own tree, and only if cpu is off.
			auto sub = read_file(abs("/") + "/cgroup.subtree_control");
			std::string on = sub ? sub->substr(0, sub->find('\n')) : "";
			if (!has_token(on, "cpu", ' '))
				write("/", "cgroup.subtree_control", "+cpu");
		}
		make_dir(abs("/hpcsched"));
		if (layout_.version == CgVersion::V2)
			write("/hpcsched", "cgroup.subtree_control", "+cpu");
		make_dir(instance_dir());
		if (layout_.version == CgVersion::V2)
			write("/hpcsched/" + instance_, "cgroup.subtree_control", "+cpu");
	} catch (const std::system_error &e) {
		throw std::runtime_error(std::string("cannot create hpcd's cgroups under ") +
					 abs("/hpcsched") + ": " + e.what());
	}
}

std::string Cgroups::create(const std::string &job, int pid)
{
	std::string jobrel = "/hpcsched/" + instance_ + "/" + job;
	make_dir(abs(jobrel));
	if (layout_.version == CgVersion::V2)
		write(jobrel, "cgroup.subtree_control", "+cpu");
	std::string rel = rel_task_dir(job, pid);
	make_dir(abs(rel));
	return rel;
}

void Cgroups::set_quota(const std::string &rel, int64_t quota_us, uint32_t period_us,
			bool write_period)
{
	if (layout_.version == CgVersion::V2) {
		write_kept(rel, "cpu.max",
			   (quota_us < 0 ? std::string("max") : std::to_string(quota_us)) + " " +
				   std::to_string(period_us));
		return;
	}
	// Parents have no limit, so any order is accepted; the period first, so
	// the new quota is never enforced against the old period.
	if (write_period)
		write_kept(rel, "cpu.cfs_period_us", std::to_string(period_us));
	write_kept(rel, "cpu.cfs_quota_us", quota_us < 0 ? "-1" : std::to_string(quota_us));
}

void Cgroups::set_weight(const std::string &rel, uint32_t weight)
{
	if (layout_.version == CgVersion::V2)
		write_kept(rel, "cpu.weight", std::to_string(weight));
	else
		write_kept(rel, "cpu.shares", std::to_string(weight_to_shares(weight)));
}

void Cgroups::attach(const std::string &rel, int pid)
{
	write(rel, "cgroup.procs", std::to_string(pid));
}

std::vector<int> Cgroups::procs(const std::string &rel) const
{
	std::vector<int> out;
	auto t = read_file(abs(rel) + "/cgroup.procs");
	if (!t)
		return out;
	for (auto l : split(*t, '\n'))
		if (!l.empty())
			out.push_back(static_cast<int>(to_u64(l)));
	return out;
}

CgStat Cgroups::stat(const std::string &rel) const
{
	auto t = read_file(abs(rel) + "/cpu.stat");
	return t ? parse_cpu_stat(*t, layout_.version) : CgStat{};
}

bool Cgroups::remove_dir(const std::string &rel) const
{
	std::string p = abs(rel);
	if (fake_) {
		if (DIR *d = ::opendir(p.c_str())) {
			while (auto *e = ::readdir(d))
				if (e->d_type == DT_REG)
					::unlinkat(::dirfd(d), e->d_name, 0);
			::closedir(d);
		}
	}
	return ::rmdir(p.c_str()) == 0 || errno == ENOENT;
}

bool Cgroups::release(const std::string &rel, const std::string &origin)
{
	bool ok = true;
	struct stat st;
	close_kept(rel);
	if (::stat(abs(rel).c_str(), &st) < 0)
		return true;
	try {
		if (layout_.version == CgVersion::V2)
			write(rel, "cpu.max", "max");
		else
			write(rel, "cpu.cfs_quota_us", "-1");
	} catch (const std::exception &) {
		ok = false;
	}
	std::string to = origin;
	if (to.empty() || ::stat(abs(to).c_str(), &st) < 0)
		to = "/";
	for (int attempt = 0; attempt < 3; attempt++) {
		auto pids = procs(rel);
		if (pids.empty() || (fake_ && attempt > 0))
			break;
		for (int pid : pids) {
			try {
				attach(to, pid);
			} catch (const std::exception &) {
				// v2 forbids processes in inner cgroups: fall back to the root.
				try {
					attach("/", pid);
				} catch (const std::exception &) {
					ok = false;
				}
			}
		}
	}
	if (fake_) // the fake cgroup.procs is a plain file
		try {
			write(rel, "cgroup.procs", "");
		} catch (const std::exception &) {
		}
	ok = remove_dir(rel) && ok;
	// The job directory goes when its last task has gone.
	auto slash = rel.rfind('/');
	std::string job = rel.substr(0, slash);
	if (job.size() > ("/hpcsched/" + instance_).size())
		::rmdir(abs(job).c_str()); // fails harmlessly while not empty
	return ok;
}

static std::vector<std::string> subdirs(const std::string &path)
{
	std::vector<std::string> out;
	if (DIR *d = ::opendir(path.c_str())) {
		while (auto *e = ::readdir(d))
			if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") &&
			    std::strcmp(e->d_name, ".."))
				out.push_back(e->d_name);
		::closedir(d);
	}
	std::sort(out.begin(), out.end());
	return out;
}

bool Cgroups::teardown(const std::vector<std::pair<std::string, std::string>> &origins)
{
	bool ok = true;
	std::string base = "/hpcsched/" + instance_;
	close_kept(base);
	for (auto &[rel, origin] : origins)
		ok = release(rel, origin) && ok;
	for (auto &job : subdirs(abs(base))) {
		for (auto &task : subdirs(abs(base + "/" + job)))
			ok = release(base + "/" + job + "/" + task, "/") && ok;
		ok = remove_dir(base + "/" + job) && ok;
	}
	ok = remove_dir(base) && ok;
	::rmdir(abs("/hpcsched").c_str()); // only if no other instance is there
	if (fake_ && subdirs(abs("/hpcsched")).empty())
		remove_dir("/hpcsched");
	return ok;
}

int cleanup_stale(const CgLayout &layout, const std::string &prefix, std::string &log, bool fake)
{
	int n = 0;
	for (auto &inst : subdirs(prefix + join(layout.root, "/hpcsched"))) {
		if (inst.rfind("hpcd-", 0) != 0)
			continue;
		int pid = static_cast<int>(to_u64(std::string_view(inst).substr(5)));
		if (pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM)) {
			log += inst + ": daemon " + std::to_string(pid) + " alive, left alone\n";
			continue;
		}
		Cgroups cg(layout, inst, prefix, fake);
		bool ok = cg.teardown();
		log += inst + (ok ? ": removed\n" : ": partly removed\n");
		n++;
	}
	return n;
}

} // namespace hpcd
