// SPDX-License-Identifier: GPL-2.0
#include "options.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sched.h>
#include <sstream>

namespace metbench
{

namespace
{

std::optional<std::string> parse_u64(const std::string &s, uint64_t max, uint64_t &out)
{
	if (s.empty())
		return "empty number";
	const char *b = s.data(), *e = s.data() + s.size();
	auto [p, ec] = std::from_chars(b, e, out);
	if (ec == std::errc::result_out_of_range)
		return "'" + s + "' is out of range";
	if (ec != std::errc() || p != e)
		return "'" + s + "' is not a non-negative integer";
	if (out > max)
		return "'" + s + "' is out of range (max " + std::to_string(max) + ")";
	return std::nullopt;
}

std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\r\n");
	if (b == std::string::npos)
		return "";
	size_t e = s.find_last_not_of(" \t\r\n");
	return s.substr(b, e - b + 1);
}

} // namespace

std::optional<std::string> parse_loads(const std::string &text, std::vector<uint64_t> &out)
{
	std::vector<uint64_t> v;
	std::string cleaned;
	// Strip comments, turn separators into commas.
	bool comment = false;
	for (char c : text) {
		if (c == '#')
			comment = true;
		if (c == '\n') {
			comment = false;
			cleaned += ',';
			continue;
		}
		if (comment)
			continue;
		cleaned += (c == ' ' || c == '\t' || c == '\r') ? ',' : c;
	}
	std::stringstream ss(cleaned);
	std::string tok;
	bool any_sep_empty = false;
	while (std::getline(ss, tok, ',')) {
		tok = trim(tok);
		if (tok.empty()) {
			any_sep_empty = true;
			continue;
		}
		uint64_t x;
		if (auto err = parse_u64(tok, kMaxLoad, x))
			return "bad load " + *err;
		v.push_back(x);
	}
	(void)any_sep_empty;
	if (v.empty())
		return "no load given (expected e.g. 250,1000,250,1000)";
	if (v.size() > kMaxWorkers)
		return "too many workers (" + std::to_string(v.size()) + ", max " +
		       std::to_string(kMaxWorkers) + ")";
	out = std::move(v);
	return std::nullopt;
}

std::optional<std::string> parse_options(int argc, const char *const *argv, Options &opt,
					 bool shm_only)
{
	bool have_loads = false, have_file = false;
	std::string pin_text;
	if (shm_only)
		opt.sync = SyncMode::Shm;

	for (int i = 1; i < argc; i++) {
		std::string arg = argv[i], val;
		bool inline_val = false;
		if (arg.rfind("--", 0) == 0) {
			size_t eq = arg.find('=');
			if (eq != std::string::npos) {
				val = arg.substr(eq + 1);
				arg = arg.substr(0, eq);
				inline_val = true;
			}
		}
		auto flag = [&](bool &dst) -> std::optional<std::string> {
			if (inline_val)
				return "option " + arg + " takes no value";
			dst = true;
			return std::nullopt;
		};
		auto need = [&]() -> std::optional<std::string> {
			if (inline_val)
				return std::nullopt;
			if (i + 1 >= argc)
				return "option " + arg + " needs a value";
			val = argv[++i];
			return std::nullopt;
		};
		std::optional<std::string> err;
		if (arg == "-h" || arg == "--help") {
			err = flag(opt.help);
		} else if (arg == "--json") {
			err = flag(opt.json);
		} else if (arg == "--loads") {
			if (!(err = need())) {
				if (have_loads)
					return "--loads given twice";
				if (have_file)
					return "--loads and --loads-file are mutually exclusive "
					       "(give the loads once)";
				have_loads = true;
				if (auto e = parse_loads(val, opt.loads))
					return "--loads: " + *e;
			}
		} else if (arg == "--loads-file") {
			if (!(err = need())) {
				if (have_loads || have_file)
					return "--loads and --loads-file are mutually exclusive "
					       "(give the loads once)";
				have_file = true;
				std::ifstream f(val);
				if (!f)
					return "--loads-file: cannot open '" + val +
					       "': " + std::strerror(errno);
				std::stringstream ss;
				ss << f.rdbuf();
				if (auto e = parse_loads(ss.str(), opt.loads))
					return "--loads-file " + val + ": " + *e;
			}
		} else if (arg == "--iterations" || arg == "-n") {
			if (!(err = need())) {
				if (auto e = parse_u64(val, kMaxIterations, opt.iterations))
					return arg + ": " + *e;
				if (opt.iterations == 0)
					return arg + ": must be at least 1";
			}
		} else if (arg == "--swap-every") {
			if (!(err = need())) {
				if (auto e = parse_u64(val, kMaxIterations, opt.swap_every))
					return "--swap-every: " + *e;
			}
		} else if (arg == "--calibrate-ms") {
			if (!(err = need())) {
				if (auto e = parse_u64(val, 60000, opt.calibrate_ms))
					return "--calibrate-ms: " + *e;
			}
		} else if (arg == "--wait") {
			if (!(err = need())) {
				if (val == "spin")
					opt.wait = WaitMode::Spin;
				else if (val == "block")
					opt.wait = WaitMode::Block;
				else
					return "--wait: '" + val + "' is not spin or block";
			}
		} else if (arg == "--sync") {
			if (!(err = need())) {
				if (val == "shm")
					opt.sync = SyncMode::Shm;
				else if (val == "mpi" && !shm_only)
					opt.sync = SyncMode::Mpi;
				else if (val == "mpi")
					return "--sync mpi: this build has no MPI (use metbench)";
				else
					return "--sync: '" + val + "' is not mpi or shm";
			}
		} else if (arg == "--trace") {
			if (!(err = need())) {
				if (val.empty())
					return "--trace: empty file name";
				opt.trace = val;
			}
		} else if (arg == "--hold") {
			if (!(err = need())) {
				if (auto e = parse_u64(val, 3600, opt.hold_s))
					return "--hold: " + *e;
				if (opt.hold_s == 0)
					return "--hold: must be at least 1 second";
			}
		} else if (arg == "--pin") {
			if (!(err = need()))
				pin_text = val.empty() ? std::string(",") : val;
		} else {
			return "unknown argument '" + std::string(argv[i]) + "' (see --help)";
		}
		if (err)
			return err;
	}
	if (have_loads && have_file)
		return "--loads and --loads-file are mutually exclusive";
	if (opt.swap_every && opt.loads.size() % 2)
		return "--swap-every needs an even number of workers (P1,P3.. swap with "
		       "P2,P4..), got " +
		       std::to_string(opt.loads.size());
	if (!pin_text.empty()) {
		std::vector<uint64_t> cpus;
		if (auto e = parse_loads(pin_text, cpus))
			return "--pin: " + (e->rfind("bad load ", 0) == 0 ? e->substr(9) : *e);
		if (cpus.size() != opt.loads.size())
			return "--pin: " + std::to_string(cpus.size()) + " CPUs for " +
			       std::to_string(opt.loads.size()) + " workers (one CPU per worker)";
		opt.pin.clear();
		for (uint64_t c : cpus) {
			if (c >= CPU_SETSIZE)
				return "--pin: CPU " + std::to_string(c) + " is out of range";
			opt.pin.push_back(static_cast<int>(c));
		}
	}
	return std::nullopt;
}

uint64_t load_of(const Options &opt, size_t w, uint64_t i)
{
	if (opt.swap_every && (i / opt.swap_every) % 2 == 1)
		return opt.loads[w ^ 1];
	return opt.loads[w];
}

std::string usage(const char *prog, bool shm_only)
{
	std::string s = std::string("usage: ") + prog + " [options]\n";
	s += "MetBench: a master and N workers; each worker computes its load, then all\n"
	     "synchronise; MetBenchVar with --swap-every.\n"
	     "  --loads L1,L2,...     work units per worker (default 250,1000,250,1000)\n"
	     "  --loads-file FILE     the loads from a file (commas, blanks, '#' comments)\n"
	     "  --iterations N, -n N  iterations (default 10)\n"
	     "  --swap-every K        MetBenchVar: swap loads P1,P3 <-> P2,P4 every K "
	     "iterations\n"
	     "  --wait spin|block     spin: busy polling; block: sleep while waiting (default "
	     "spin)\n";
	if (!shm_only)
		s += "  --sync mpi|shm        MPI barrier (default) or forked processes + shared "
		     "pthread barrier\n";
	s += "  --pin C1,C2,...       pin worker i to CPU Ci (one CPU per worker)\n"
	     "  --json                JSON result on stdout (calibration line on stderr)\n"
	     "  --trace FILE          per rank and iteration: start, compute end, wait end\n"
	     "                        (CSV; JSON lines if FILE ends in .jsonl or .json)\n"
	     "  --calibrate-ms MS     time spent calibrating units/s (default 100, 0: skip)\n"
	     "  --hold S              start the run when the master gets SIGUSR1 (within S s,\n"
	     "                        else fail), the workers started, pinned and waiting:\n"
	     "                        time to set each one's scheduling (e.g. hpcctl prio)\n"
	     "  --help\n";
	return s;
}

} // namespace metbench
