#include "system.hpp"

#include "cgroup.hpp"
#include "procstat.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <memory>
#include <sched.h>
#include <set>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <system_error>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

namespace hpcd
{

std::optional<std::vector<int>> parse_cpulist(std::string_view s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.remove_suffix(1);
	std::vector<int> out;
	if (s.empty())
		return std::nullopt;
	size_t pos = 0;
	while (pos <= s.size()) {
		size_t e = s.find(',', pos);
		if (e == std::string_view::npos)
			e = s.size();
		std::string_view item = s.substr(pos, e - pos);
		int a = 0, b = 0;
		auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), a);
		if (ec != std::errc() || a < 0)
			return std::nullopt;
		b = a;
		if (p < item.data() + item.size()) {
			if (*p != '-')
				return std::nullopt;
			auto [p2, ec2] = std::from_chars(p + 1, item.data() + item.size(), b);
			if (ec2 != std::errc() || p2 != item.data() + item.size() || b < a)
				return std::nullopt;
		}
		if (b >= CPU_SETSIZE)
			return std::nullopt;
		for (int c = a; c <= b; c++)
			if (std::find(out.begin(), out.end(), c) == out.end())
				out.push_back(c);
		pos = e + 1;
	}
	return out;
}

std::string format_cpulist(const std::vector<int> &cpus)
{
	std::string s;
	for (int c : cpus)
		s.append(s.empty() ? "" : ",").append(std::to_string(c));
	return s;
}

std::vector<int> allowed_cpus()
{
	return get_affinity(0);
}

const CpuPlace *Topology::find(int cpu) const
{
	for (const auto &c : cpus)
		if (c.cpu == cpu)
			return &c;
	return nullptr;
}

std::vector<int> Topology::siblings(int cpu) const
{
	std::vector<int> out;
	const CpuPlace *me = find(cpu);
	if (!me || me->core < 0)
		return me ? std::vector<int>{cpu} : out;
	for (const auto &c : cpus)
		if (c.core == me->core)
			out.push_back(c.cpu);
	return out;
}

bool Topology::smt() const
{
	for (const auto &c : cpus)
		if (siblings(c.cpu).size() > 1)
			return true;
	return false;
}

std::optional<Topology> load_topology(std::string &err, const std::string &synthetic)
{
	// CPUs, cores, packages and NUMA nodes are all hpcd reads: hwloc's
	// I/O, GPU and XML plugins (OpenCL, X11 ...) took a third of its start,
	// which every `hpcctl run` waits for. A user's own setting wins.
	::setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_xml_libxml", 0);
	hwloc_topology_t t;
	if (hwloc_topology_init(&t) < 0) {
		err = "hwloc: cannot initialise a topology";
		return std::nullopt;
	}
	std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> guard(t,
									  hwloc_topology_destroy);
	if (!synthetic.empty() && hwloc_topology_set_synthetic(t, synthetic.c_str()) < 0) {
		err = "hwloc: invalid synthetic topology '" + synthetic + "'";
		return std::nullopt;
	}
	if (hwloc_topology_load(t) < 0) {
		err = std::string("hwloc: cannot load the topology: ") + std::strerror(errno);
		return std::nullopt;
	}
	Topology topo;
	topo.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
	topo.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
	const int nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
	for (int i = 0; i < nnuma; i++)
		topo.numa_nodes.push_back(static_cast<int>(
			hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i))
				->os_index));
	const int npu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	for (int i = 0; i < npu; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, static_cast<unsigned>(i));
		CpuPlace c;
		c.cpu = static_cast<int>(pu->os_index);
		if (hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu))
			c.core = static_cast<int>(core->logical_index);
		if (hwloc_obj_t pk = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu))
			c.package = static_cast<int>(pk->os_index);
		// NUMA nodes hang off the tree as memory children: the one whose
		// CPU set holds this PU.
		for (int n = 0; n < nnuma; n++) {
			hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE,
								 static_cast<unsigned>(n));
			if (node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
				c.numa = static_cast<int>(node->os_index);
				break;
			}
		}
		topo.cpus.push_back(c);
	}
	return topo;
}

// Every pair cpus[2k], cpus[2k+1] is two hardware threads of one core.
bool pairs_are_threads(const std::vector<int> &cpus, const Topology &topo)
{
	if (cpus.size() < 2 || !topo.smt())
		return false;
	for (size_t k = 0; k + 1 < cpus.size(); k += 2) {
		auto sib = topo.siblings(cpus[k]);
		if (std::find(sib.begin(), sib.end(), cpus[k + 1]) == sib.end())
			return false;
	}
	return true;
}

std::vector<int> smt_order(const std::vector<int> &cpus, const Topology &topo)
{
	std::vector<int> out;
	for (int c : cpus) {
		if (std::find(out.begin(), out.end(), c) != out.end())
			continue;
		out.push_back(c);
		for (int s : topo.siblings(c))
			if (s != c && std::find(cpus.begin(), cpus.end(), s) != cpus.end() &&
			    std::find(out.begin(), out.end(), s) == out.end()) {
				out.push_back(s);
				break;
			}
	}
	return out;
}

std::vector<int> get_affinity(int pid)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	std::vector<int> out;
	if (sched_getaffinity(pid, sizeof set, &set) < 0)
		return out;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			out.push_back(c);
	return out;
}

bool set_affinity(int pid, const std::vector<int> &cpus)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int c : cpus)
		CPU_SET(c, &set);
	bool any = false;
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	if (DIR *d = opendir(dir.c_str())) {
		while (auto *e = readdir(d)) {
			int tid = 0;
			auto n = std::string_view(e->d_name);
			if (std::from_chars(n.data(), n.data() + n.size(), tid).ec != std::errc())
				continue;
			if (sched_setaffinity(tid, sizeof set, &set) == 0)
				any = true;
		}
		closedir(d);
	}
	return any;
}

uint64_t mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// $name if set and not empty, else @def.
std::string env_or(const char *name, const char *def)
{
	const char *v = std::getenv(name);
	return v && *v ? v : def;
}

std::string proc_comm(int pid)
{
	auto t = read_file("/proc/" + std::to_string(pid) + "/comm");
	if (!t)
		return "";
	while (!t->empty() && t->back() == '\n')
		t->pop_back();
	return *t;
}

std::optional<ProcStat> proc_stat(int pid)
{
	auto t = read_file("/proc/" + (pid ? std::to_string(pid) : std::string("self")) + "/stat");
	return t ? parse_proc_stat(*t) : std::nullopt;
}

bool proc_alive(int pid)
{
	auto s = proc_stat(pid);
	return s && s->state != 'Z' && s->state != 'X';
}

bool exec_done(int pid)
{
	auto s = proc_stat(pid);
	return s && s->env_end != 0;
}

int open_pidfd(int pid)
{
	// glibc's pidfd_open() wrapper is 2.36+: the system call itself.
	// pidfds are close-on-exec.
	return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

bool is_descendant(int pid, int ancestor)
{
	for (int i = 0; i < 64 && pid > 1; i++) {
		auto s = proc_stat(pid);
		if (!s)
			return false;
		if (s->ppid == ancestor)
			return true;
		pid = s->ppid;
	}
	return false;
}

namespace
{
std::string_view base_name(std::string_view p)
{
	auto s = p.rfind('/');
	return s == std::string_view::npos ? p : p.substr(s + 1);
}
} // namespace

bool is_launcher_name(std::string_view cmd)
{
	static const std::set<std::string_view> names{
		"mpirun",         "mpiexec",         "orterun",        "prterun",
		"mpirun.openmpi", "mpiexec.openmpi", "mpirun.mpich",   "mpiexec.mpich",
		"mpiexec.hydra",  "srun",            "mpirun.hydra"};
	return names.count(base_name(cmd)) > 0;
}

bool is_launcher_helper(std::string_view comm)
{
	static const std::set<std::string_view> helpers{
		"orted", "prted", "prte", "hydra_pmi_proxy", "pmi_proxy", "slurmstepd"};
	return helpers.count(comm) > 0 || is_launcher_name(comm);
}

std::optional<int> rank_from_environ(std::string_view environ)
{
	std::map<std::string_view, std::string_view> vars;
	while (!environ.empty()) {
		auto end = environ.find('\0');
		std::string_view kv = environ.substr(0, end);
		environ = end == std::string_view::npos ? "" : environ.substr(end + 1);
		auto eq = kv.find('=');
		if (eq != std::string_view::npos)
			vars.emplace(kv.substr(0, eq), kv.substr(eq + 1));
	}
	for (auto name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
		auto it = vars.find(name);
		if (it == vars.end())
			continue;
		int r = -1;
		auto [p, ec] = std::from_chars(it->second.data(),
					       it->second.data() + it->second.size(), r);
		if (ec == std::errc() && p == it->second.data() + it->second.size() && r >= 0)
			return r;
	}
	return std::nullopt;
}

sockaddr_un unix_address(const std::string &path)
{
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	if (path.size() >= sizeof a.sun_path)
		throw std::runtime_error("socket path too long: " + path);
	std::strcpy(a.sun_path, path.c_str());
	return a;
}

int listen_unix(int type, const std::string &path, unsigned mode, int backlog)
{
	const sockaddr_un a = unix_address(path);
	int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		throw std::system_error(errno, std::generic_category(), "socket");
	::unlink(path.c_str());
	if (::bind(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) < 0) {
		const int err = errno;
		::close(fd);
		throw std::system_error(err, std::generic_category(), "bind " + path);
	}
	::chmod(path.c_str(), mode);
	if (::listen(fd, backlog) < 0) {
		const int err = errno;
		::close(fd);
		throw std::system_error(err, std::generic_category(), "listen " + path);
	}
	return fd;
}

} // namespace hpcd
