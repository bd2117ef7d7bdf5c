#include "runtime/observability/startup_clock.h"

#include <chrono>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/comm/local_communicator.h"

namespace lemrt::runtime {
namespace {

using std::chrono::milliseconds;
using Clock = StartupClock::Clock;

TEST(StartupClockTest, PhasesAreTheTimesBetweenMarksAndAddUpToTheTotal) {
  const Clock::time_point t0 = Clock::now();
  StartupClock clock(t0);
  clock.Mark(StartupPhase::kLaunch, t0 + milliseconds(40));
  clock.Mark(StartupPhase::kPlan, t0 + milliseconds(50));
  clock.Mark(StartupPhase::kTableFill, t0 + milliseconds(350));
  clock.Mark(StartupPhase::kTableFill, t0 + milliseconds(360));    // a phase marked twice adds up
  clock.Mark(StartupPhase::kStepBuffers, t0 + milliseconds(355));  // before the last mark: 0
  clock.Mark(StartupPhase::kRunStart, t0 + milliseconds(400));
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kLaunch), 40);
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kPlan), 10);
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kDataSource), 0);
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kTableFill), 310);
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kStepBuffers), 0);
  EXPECT_DOUBLE_EQ(clock.ms(StartupPhase::kRunStart), 40);
  EXPECT_DOUBLE_EQ(clock.total_ms(), 400);
}

TEST(StartupClockTest, TheProcessStartedBeforeNowAndNotLongAgo) {
  const Clock::time_point now = Clock::now();
  const Clock::time_point start = ProcessStart();
  EXPECT_LE(start, now);
  // This test binary started well within the test's own time limit.
  EXPECT_GT(start, now - std::chrono::seconds(300));
}

// Each rank r spends 100 + 10 r ms in its table fill and rank 1 another
// 500 ms in its launch: rank 1 is the slowest, and every rank reports its
// phases.
TEST(StartupClockTest, EveryRankGetsTheSlowestRanksBreakdown) {
  for (int size : {1, 2, 3}) {
    std::vector<StartupBreakdown> got(size);
    const std::vector<absl::Status> statuses = RunLocalRanks(size, [&](Communicator& comm) {
      const Clock::time_point t0 = Clock::now();
      const int r = comm.rank();
      StartupClock clock(t0);
      clock.Mark(StartupPhase::kLaunch, t0 + milliseconds(r == 1 ? 500 : 0));
      clock.Mark(StartupPhase::kTableFill, t0 + milliseconds((r == 1 ? 500 : 0) + 100 + 10 * r));
      absl::StatusOr<StartupBreakdown> b = SlowestStartup(comm, clock);
      if (!b.ok()) return b.status();
      got[r] = *b;
      return absl::OkStatus();
    });
    for (const absl::Status& st : statuses) ASSERT_TRUE(st.ok()) << st;
    const int slowest = size == 1 ? 0 : 1;
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(got[r].rank, slowest) << size << " ranks, rank " << r;
      EXPECT_DOUBLE_EQ(got[r].total_ms, slowest == 1 ? 610 : 100);
      EXPECT_DOUBLE_EQ(got[r].ms[static_cast<int>(StartupPhase::kLaunch)], slowest == 1 ? 500 : 0);
      EXPECT_DOUBLE_EQ(got[r].ms[static_cast<int>(StartupPhase::kTableFill)],
                       slowest == 1 ? 110 : 100);
    }
  }
}

TEST(StartupClockTest, TheSummaryAndTheLogLineNameEveryPhase) {
  StartupBreakdown b;
  b.rank = 2;
  for (int p = 0; p < kStartupPhases; ++p) b.ms[p] = 1000.0 * (p + 1);
  b.total_ms = 28000;
  summary::StartupStats s;
  s.set_table_init_mode("host");
  FillStartupStats(b, &s);
  EXPECT_EQ(s.table_init_mode(), "host");
  EXPECT_EQ(s.slowest_rank(), 2);
  EXPECT_DOUBLE_EQ(s.total_ms(), 28000);
  EXPECT_DOUBLE_EQ(s.launch_ms(), 1000);
  EXPECT_DOUBLE_EQ(s.plan_ms(), 2000);
  EXPECT_DOUBLE_EQ(s.data_source_ms(), 3000);
  EXPECT_DOUBLE_EQ(s.allocation_ms(), 4000);
  EXPECT_DOUBLE_EQ(s.table_fill_ms(), 5000);
  EXPECT_DOUBLE_EQ(s.step_buffers_ms(), 6000);
  EXPECT_DOUBLE_EQ(s.run_start_ms(), 7000);
  EXPECT_EQ(DescribeStartup(b),
            "start-up 28.00 s to the first step (slowest rank 2): launch 1.00 s, plan 2.00 s, "
            "data_source 3.00 s, allocation 4.00 s, table_fill 5.00 s, step_buffers 6.00 s, "
            "run_start 7.00 s");
}

}  // namespace
}  // namespace lemrt::runtime
