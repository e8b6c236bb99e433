// The control protocol: requests, knob validation (through the core), replies.
#include "control.hpp"

#include <gtest/gtest.h>

using namespace hpcd;
using nlohmann::json;

namespace
{
json call(Engine &e, ControlHooks &h, const std::string &line)
{
	return json::parse(handle_line(e, h, line));
}
} // namespace

TEST(Control, GetAllAndOne)
{
	Engine e;
	ControlHooks h;
	auto r = call(e, h, R"({"cmd":"get"})");
	ASSERT_TRUE(r["ok"]);
	EXPECT_EQ(r["values"]["low_util"], "65");
	EXPECT_EQ(r["values"]["heuristic"], "uniform");
	EXPECT_EQ(r["values"]["emul_period_us"], "10000");
	EXPECT_EQ(r["values"]["prio_range"], "1 6");
	EXPECT_EQ(r["values"]["backend"], "cgroup-weight"); // the default mode
	EXPECT_EQ(r["values"]["mode"], "weight");
	r = call(e, h, R"({"cmd":"get","key":"min_wait_us"})");
	ASSERT_TRUE(r["ok"]);
	EXPECT_EQ(r["values"].size(), 1u);
	EXPECT_EQ(r["values"]["min_wait_us"], "100");
}

TEST(Control, GetBadKey)
{
	Engine e;
	ControlHooks h;
	auto r = call(e, h, R"({"cmd":"get","key":"lo_util"})");
	EXPECT_FALSE(r["ok"]);
	EXPECT_EQ(r["kind"], "bad_key");
	EXPECT_NE(r["error"].get<std::string>().find("low_util"), std::string::npos);
	r = call(e, h, R"({"cmd":"get","key":"queue"})");
	EXPECT_EQ(r["kind"], "kernel_only");
}

TEST(Control, SetIsAtomicAndValidatedByTheCore)
{
	Engine e;
	int changed = 0;
	ControlHooks h;
	h.changed = [&] { changed++; };
	auto r = call(e, h, R"({"cmd":"set","settings":["heuristic=adaptive","low_util=50"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.params.heuristic, static_cast<uint32_t>(HPC_HEUR_ADAPTIVE));
	EXPECT_EQ(e.s.params.low_util, 50u);
	EXPECT_EQ(changed, 1);
	// low_util >= high_util breaks hpc_params_check: nothing changes.
	r = call(e, h, R"({"cmd":"set","settings":["min_wait_us=200","low_util=90"]})");
	EXPECT_FALSE(r["ok"]);
	EXPECT_EQ(r["kind"], "bad_value");
	EXPECT_EQ(e.s.params.min_wait_us, 100u);
	EXPECT_EQ(e.s.params.low_util, 50u);
	EXPECT_EQ(changed, 1);
	// Writing one Adaptive weight sets the other (the core's rule).
	r = call(e, h, R"({"cmd":"set","settings":["global_weight=30"]})");
	ASSERT_TRUE(r["ok"]);
	EXPECT_EQ(e.s.params.last_weight, 70u);
	// The third heuristic by name; an unknown one names the choice.
	r = call(e, h, R"({"cmd":"set","settings":["heuristic=phase"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.params.heuristic, static_cast<uint32_t>(HPC_HEUR_PHASE));
	r = call(e, h, R"({"cmd":"get","key":"heuristic"})");
	EXPECT_EQ(r["values"]["heuristic"], "phase") << r.dump();
	r = call(e, h, R"({"cmd":"set","settings":["heuristic=trend"]})");
	EXPECT_FALSE(r["ok"]);
	EXPECT_NE(r["error"].get<std::string>().find("uniform, adaptive or phase"),
		  std::string::npos)
		<< r.dump();
}

TEST(Control, SetErrors)
{
	Engine e;
	ControlHooks h;
	struct Case {
		const char *setting, *kind;
	} cases[] = {
		{"bogus=1", "bad_key"},          {"low_util=abc", "bad_value"},
		{"low_util=", "bad_value"},      {"heuristic=fast", "bad_value"},
		{"max_prio=7", "bad_value"},     {"emul_period_us=999", "bad_value"},
		{"mode=turbo", "bad_value"},     {"backend=x", "read_only"},
		{"queue=rr", "kernel_only"},     {"noequals", "bad_value"},
		{"min_wait_us=-1", "bad_value"},
	};
	Settings before = e.s;
	for (auto &c : cases) {
		auto r = call(e, h, json{{"cmd", "set"}, {"settings", {c.setting}}}.dump());
		EXPECT_FALSE(r["ok"]) << c.setting;
		EXPECT_EQ(r["kind"], c.kind) << c.setting << ": " << r.dump();
		EXPECT_FALSE(r["error"].get<std::string>().empty());
	}
	EXPECT_EQ(e.s.params.low_util, before.params.low_util);
	EXPECT_EQ(e.s.period_us, before.period_us);
}

TEST(Control, DaemonKnobs)
{
	Engine e;
	ControlHooks h;
	auto r = call(
		e, h,
		R"({"cmd":"set","settings":["mode=smt-emul","balance=off","emul_period_us=20000","window=3"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.mode, Mode::SmtEmul);
	EXPECT_EQ(r["values"]["backend"], "cgroup-quota");
	EXPECT_EQ(r["values"]["mode"], "smt-emul");
	r = call(e, h, R"({"cmd":"set","settings":["mode=quota"]})"); // its former name
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(r["values"]["mode"], "smt-emul");
	EXPECT_EQ(call(e, h, R"({"cmd":"set","settings":["wait_weight=5"]})")["kind"], "bad_key");
	r = call(e, h, R"({"cmd":"set","settings":["mode=weight"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.mode, Mode::Weight);
	EXPECT_FALSE(e.s.balance);
	EXPECT_EQ(e.s.period_us, 20000u);
	EXPECT_EQ(r["values"]["backend"], "cgroup-weight");
	r = call(e, h, R"({"cmd":"set","settings":["ignore_ranks=0,4-5"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.ignore_ranks, (std::vector<int>{0, 4, 5}));
	EXPECT_EQ(r["values"]["ignore_ranks"], "0,4,5");
	EXPECT_EQ(call(e, h, R"({"cmd":"set","settings":["ignore_ranks=x"]})")["kind"],
		  "bad_value");
	EXPECT_TRUE(call(e, h, R"({"cmd":"set","settings":["ignore_ranks=none"]})")["ok"]);
	EXPECT_TRUE(e.s.ignore_ranks.empty());
	EXPECT_EQ(e.s.hold_ms, 250u);
	r = call(e, h, R"({"cmd":"set","settings":["hold_ms=0"]})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(e.s.hold_ms, 0u);
	EXPECT_EQ(r["values"]["hold_ms"], "0");
	// A bad value changes nothing, also in the same request.
	for (const char *bad : {"hold_ms=-1", "hold_ms=60001", "hold_ms=1s", "hold_ms="}) {
		r = call(e, h,
			 std::string(R"({"cmd":"set","settings":["hold_ms=500",")") + bad +
				 R"("]})");
		EXPECT_EQ(r["kind"], "bad_value") << bad << ": " << r.dump();
		EXPECT_EQ(e.s.hold_ms, 0u) << bad;
	}
}

TEST(Control, WaitsKnob)
{
	Engine e;
	ControlHooks h;
	auto r = call(e, h, R"({"cmd":"get","key":"waits"})");
	ASSERT_TRUE(r["ok"]) << r.dump();
	EXPECT_EQ(r["values"]["waits"], "sleep");
	for (auto [val, want] :
	     {std::pair{"poll", Waits::Poll}, std::pair{"model", Waits::Model},
	      std::pair{"sleep", Waits::Sleep}, std::pair{"poll", Waits::Poll}}) {
		r = call(e, h, std::string(R"({"cmd":"set","settings":["waits=)") + val + R"("]})");
		ASSERT_TRUE(r["ok"]) << r.dump();
		EXPECT_EQ(e.s.waits, want) << val;
		EXPECT_EQ(r["values"]["waits"], val);
	}
	// A bad value changes nothing, also in the same request.
	r = call(e, h, R"({"cmd":"set","settings":["waits=model","waits=spin"]})");
	EXPECT_FALSE(r["ok"]);
	EXPECT_EQ(r["kind"], "bad_value");
	EXPECT_NE(r["error"].get<std::string>().find("not poll, model or sleep"),
		  std::string::npos);
	EXPECT_EQ(e.s.waits, Waits::Poll);
}

TEST(Control, MalformedRequests)
{
	Engine e;
	ControlHooks h;
	for (const char *line :
	     {"", "{", "[]", R"({"cmd":1})", R"({"nocmd":"get"})", R"({"cmd":"set"})",
	      R"({"cmd":"set","settings":[1]})", R"({"cmd":"get","key":3})", R"({"cmd":"add"})",
	      R"({"cmd":"add","pid":-4})", R"({"cmd":"add","pid":"12"})"}) {
		auto r = call(e, h, line);
		EXPECT_FALSE(r["ok"]) << line;
		EXPECT_EQ(r["kind"], "bad_request") << line;
	}
	auto r = call(e, h, R"({"cmd":"frob"})");
	EXPECT_EQ(r["kind"], "bad_request");
	EXPECT_NE(r["error"].get<std::string>().find("unknown cmd"), std::string::npos);
}

TEST(Control, ListAddRemoveStatus)
{
	Engine e;
	e.s.mode = Mode::SmtEmul; // emulated cores: pairs of CPUs
	e.cpus = {0, 1};
	ControlHooks h;
	h.add = [&](int pid, const std::string &name, bool launcher) {
		if (pid == 666)
			return std::string("no process 666");
		e.add(pid, name, "d", -1, 0).launcher = launcher;
		e.place();
		return std::string();
	};
	h.remove = [&](int pid) { e.remove(pid); };
	h.stat = [](const Task &) { return CgStat{10, 3, 4500000}; };
	h.status = [] { return json{{"pid", 1}}; };
	EXPECT_TRUE(call(e, h, R"({"cmd":"add","pid":42,"name":"x"})")["ok"]);
	EXPECT_TRUE(call(e, h, R"({"cmd":"add","pid":43})")["ok"]);
	auto bad = call(e, h, R"({"cmd":"add","pid":666})");
	EXPECT_EQ(bad["kind"], "failed");
	auto r = call(e, h, R"({"cmd":"list"})");
	ASSERT_EQ(r["tasks"].size(), 2u);
	EXPECT_EQ(r["tasks"][0]["pid"], 42);
	EXPECT_EQ(r["tasks"][0]["sibling"], 43);
	EXPECT_EQ(r["tasks"][0]["throttled_ns"], 4500000);
	EXPECT_EQ(r["tasks"][0]["nr_throttled"], 3);
	EXPECT_EQ(r["tasks"][0]["prio"], 4);
	EXPECT_EQ(r["tasks"][0]["iterations"], 0);
	EXPECT_EQ(call(e, h, R"({"cmd":"status"})")["status"]["pid"], 1);
	EXPECT_TRUE(call(e, h, R"({"cmd":"remove","pid":42})")["ok"]);
	EXPECT_EQ(call(e, h, R"({"cmd":"remove","pid":42})")["kind"], "failed");
	EXPECT_EQ(call(e, h, R"({"cmd":"list"})")["tasks"].size(), 1u);
	auto g = call(e, h, R"({"cmd":"get","key":"smt_pairs"})");
	EXPECT_EQ(g["values"]["smt_pairs"], "0 -\n");
	e.s.mode = Mode::Weight; // no emulated cores: no pairs
	e.place();
	g = call(e, h, R"({"cmd":"get","key":"smt_pairs"})");
	EXPECT_EQ(g["values"]["smt_pairs"], "");
	e.s.mode = Mode::SmtEmul;
	e.place();
	// A launcher: not paired, not placed.
	EXPECT_EQ(call(e, h, R"({"cmd":"add","pid":50,"launcher":"yes"})")["kind"], "bad_request");
	EXPECT_TRUE(call(e, h, R"({"cmd":"add","pid":50,"name":"mpirun","launcher":true})")["ok"]);
	auto l = call(e, h, R"({"cmd":"list"})")["tasks"];
	ASSERT_EQ(l.size(), 2u);
	EXPECT_EQ(l[1]["pid"], 50);
	EXPECT_EQ(l[1]["role"], "launcher");
	EXPECT_EQ(l[1]["ctx"], -1);
	EXPECT_EQ(l[1]["cpu"], -1);
	EXPECT_EQ(l[0]["sibling"], 0);
	auto ev = task_event(e, *e.find(50));
	EXPECT_EQ(ev["event"], "task");
	EXPECT_EQ(ev["role"], "launcher");
	EXPECT_EQ(ev["launched_by"], 0);
}
