// RUPER-LB task: reports, checkpoints by speed, finish requests (§2.1) and
// the guess worker (§2.2), hand-computed.
#include "hpclb/hpclb.hpp"

#include <gtest/gtest.h>

using namespace hpclb;

namespace
{
RuperParams params(double threshold)
{
	RuperParams p;
	p.checkpoint_interval = 1;
	p.threshold = threshold;
	return p;
}
uint64_t total(const RuperTask &t)
{
	uint64_t s = 0;
	for (const auto &w : t.workers())
		s += w.assigned;
	return s;
}
} // namespace

TEST(Ruper, CheckpointBySpeed)
{
	RuperTask t(100, 2, params(0), 0);
	EXPECT_EQ(t.start(0, 0), 50u);
	EXPECT_EQ(t.start(1, 0), 50u);
	t.report(0, 40,
		 1); // 40/s; the checkpoint it triggers keeps worker 1's share (no speed yet)
	EXPECT_EQ(t.assigned(0), 50u);
	EXPECT_EQ(t.assigned(1), 50u);
	t.report(1, 10, 1); // 10/s
	// Remaining (100 - 50) / 50 = 1 s > 0: 50 left split 40:10.
	EXPECT_DOUBLE_EQ(t.checkpoint(1), 1);
	EXPECT_EQ(t.assigned(0), 80u);
	EXPECT_EQ(t.assigned(1), 20u);
	EXPECT_EQ(total(t), 100u);
	// Worker 1 done at t = 2: worker 0 is predicted at 80, nothing left.
	t.report(1, 20, 2);
	EXPECT_EQ(t.request_finish(1, 2), FinishAnswer::Finish);
	// Worker 0 has not reported its 80: it must report first.
	EXPECT_EQ(t.request_finish(0, 2), FinishAnswer::Report);
	t.report(0, 80, 2);
	EXPECT_EQ(t.request_finish(0, 2), FinishAnswer::Finish);
	EXPECT_TRUE(t.finished());
}

TEST(Ruper, FinishRequestGetsMoreWork)
{
	RuperTask t(100, 2, params(0.1), 0);
	t.start(0, 0);
	t.start(1, 0);
	t.report(0, 25, 1);
	t.report(1, 25, 1);
	t.checkpoint(1); // 25/s each: stays 50, 50
	EXPECT_EQ(t.assigned(0), 50u);
	t.report(0, 50, 1.5); // worker 0 sped up to 50/s
	// Predicted done 50 + 37.5, remaining 12.5 / 75 s > 0.1: checkpoint;
	// 13 left (worker 1 at floor(37.5)) split 50:25 -> 9, 4.
	EXPECT_EQ(t.request_finish(0, 1.5), FinishAnswer::Continue);
	EXPECT_EQ(t.assigned(0), 59u);
	EXPECT_EQ(t.assigned(1), 41u);
	EXPECT_EQ(total(t), 100u);
	EXPECT_FALSE(t.finished());
}

TEST(Ruper, ReportIntervalFollowsSpeedDeviation)
{
	RuperParams p = params(0);
	p.checkpoint_interval = 100;
	p.min_report = 0.1;
	p.max_report = 0.8;
	RuperTask t(1000, 1, p, 0);
	t.start(0, 0);
	EXPECT_DOUBLE_EQ(t.report(0, 10, 1), 0.2); // first measure: doubled
	EXPECT_DOUBLE_EQ(t.report(0, 20, 2), 0.4); // same speed
	EXPECT_DOUBLE_EQ(t.report(0, 60, 3), 0.2); // 4x faster: halved
	EXPECT_DOUBLE_EQ(t.report(0, 100, 4), 0.4);
	EXPECT_DOUBLE_EQ(t.report(0, 140, 5), 0.8);
	EXPECT_DOUBLE_EQ(t.report(0, 180, 6), 0.8); // capped
}

TEST(Ruper, AllDoneStopsEveryone)
{
	RuperTask t(10, 2, params(0), 0);
	t.start(0, 0);
	t.start(1, 0);
	t.report(0, 6, 0.5);
	t.report(1, 4, 0.5);
	EXPECT_DOUBLE_EQ(t.checkpoint(0.5), 0);
	EXPECT_EQ(t.assigned(0), 6u);
	EXPECT_EQ(t.assigned(1), 4u);
}

TEST(Ruper, GuessWorkerCorrectsItsSpeed)
{
	RuperTask t(1000, 1, params(0), 0);
	t.start(0, 0);
	t.report(0, 100, 1, true); // first: 100/s
	// Expected 100 + 100*1 = 200 at t = 2; 250 reported: speed 100 + 50/1.
	t.report(0, 250, 2, true);
	EXPECT_DOUBLE_EQ(t.workers()[0].speed(), 150);
}

TEST(Ruper, NoIterationIsLeftUndone)
{
	// The task grew to 120 (a new MPI-level assignment) and the threshold is
	// generous: by prediction worker 0 could go (45 left / 150 per s < 1 s),
	// but the others' assignments cover 100 only: the rest is split again.
	RuperTask t(100, 2, params(1), 0);
	t.start(0, 0);
	t.start(1, 0);
	t.report(0, 50, 0.5); // 100/s
	t.report(1, 25, 0.5); // 50/s
	t.set_iterations(120);
	EXPECT_EQ(t.request_finish(0, 0.5), FinishAnswer::Continue);
	EXPECT_EQ(t.assigned(0), 80u); // 50 + 45 * 2/3
	EXPECT_EQ(t.assigned(1), 40u); // 25 + 45 * 1/3
	t.report(0, 80, 0.8);
	t.report(1, 40, 0.8);
	EXPECT_EQ(t.request_finish(1, 0.8), FinishAnswer::Finish);
	EXPECT_EQ(t.request_finish(0, 0.8), FinishAnswer::Finish);
	EXPECT_TRUE(t.finished());
}

TEST(Ruper, IdleReportKeepsTheSpeed)
{
	RuperTask t(1000, 1, params(0), 0);
	t.start(0, 0);
	t.report(0, 100, 1);              // 100/s
	t.report(0, 120, 2, false, true); // ran out of work: still 100/s
	EXPECT_DOUBLE_EQ(t.workers()[0].speed(), 100);
	EXPECT_EQ(t.workers()[0].done, 120u);
	t.report(0, 150, 3); // a real measure again: 30/s
	EXPECT_DOUBLE_EQ(t.workers()[0].speed(), 30);
}

TEST(Ruper, BadInput)
{
	EXPECT_THROW(RuperTask(10, 0, params(0), 0), Error);
	RuperParams p = params(0);
	p.checkpoint_interval = 0;
	EXPECT_THROW(RuperTask(10, 1, p, 0), Error);
	RuperTask t(10, 2, params(0), 0);
	EXPECT_THROW(t.report(0, 1, 1), Error); // not started
	t.start(0, 0);
	EXPECT_THROW(t.start(0, 0), Error);
	t.report(0, 5, 1);
	EXPECT_THROW(t.report(0, 4, 2), Error); // fewer than before
	EXPECT_THROW(t.report(0, 6, 1), Error); // not later
	EXPECT_THROW(t.report(5, 6, 3), std::out_of_range);
}
