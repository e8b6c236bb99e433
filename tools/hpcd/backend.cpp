// The backend hpcctl's options name.
#include "backend.hpp"

#include <iostream>
#include <sys/stat.h>

namespace hpcctl
{

void Backend::check_settings(const std::vector<std::string> &kv)
{
	check_keys(kv);
}

void Backend::check_trace() const
{
	if (o_.sample_ms)
		fail(kUsage, "trace: --sample-ms is for --backend scx (the other backends "
			     "report every iteration as it closes)");
}

void Backend::print_status(bool one_line)
{
	if (o_.status_tasks || o_.status_progs)
		fail(kUsage,
		     "status: --tasks and --progs are for --backend scx (scx_hpc's task map "
		     "and BPF programs)");
	const nlohmann::json j = status();
	std::cout << (one_line ? j.dump() : j.dump(2)) << "\n";
}

std::unique_ptr<Backend> make_backend(const Opts &o)
{
	if (o.backend == "scx")
		return scx_backend(o);
	if (o.backend == "hpcd")
		return hpcd_backend(o);
	if (o.backend == "kernel")
		return kernel_backend(o); // each use fails without the class
	struct stat st;
	const bool has = ::stat(o.sysfs.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
	return has ? kernel_backend(o) : hpcd_backend(o);
}

} // namespace hpcctl
