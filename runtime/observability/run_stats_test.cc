#include "runtime/observability/run_stats.h"

#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

TEST(RunStatsTest, EmptyReadsZero) {
  const RunStats stats;
  EXPECT_EQ(stats.steps_run(), 0);
  EXPECT_EQ(stats.loss_last(), 0);
  EXPECT_EQ(stats.loss_mean_tail(), 0);
  EXPECT_EQ(stats.samples(), 0);
  EXPECT_EQ(stats.step_ms().count(), 0);
  for (int s = 0; s < RunStats::kNumStages; ++s) {
    EXPECT_EQ(stats.stage_ms(static_cast<RunStats::Stage>(s)), 0);
  }
}

TEST(RunStatsTest, StagesAndIdsAccumulatePerEntry) {
  RunStats stats;
  stats.AddStageMs(RunStats::kHost, 1.5);
  stats.AddStageMs(RunStats::kHost, 2.5);
  stats.AddStageMs(RunStats::kTc, 7);
  stats.AddIds(10, 8, 5);
  stats.AddIds(20, 11, 6);
  EXPECT_EQ(stats.stage_ms(RunStats::kHost), 4);
  EXPECT_EQ(stats.stage_ms(RunStats::kScForward), 0);
  EXPECT_EQ(stats.stage_ms(RunStats::kTc), 7);
  EXPECT_EQ(stats.stage_ms(RunStats::kScBackward), 0);
  EXPECT_EQ(stats.ids_total(), 30);
  EXPECT_EQ(stats.ids_after_dedup(), 19);
  EXPECT_EQ(stats.unique_ids(), 11);
}

TEST(RunStatsTest, StepDoneSumsTimesSamplesAndWait) {
  RunStats stats;
  stats.StepDone({.ms = 100, .forward_wait_ms = 3, .samples = 64, .mean_loss = 0.7});
  stats.StepDone({.ms = 300, .forward_wait_ms = 1, .samples = 32, .mean_loss = 0.5});
  EXPECT_EQ(stats.steps_run(), 2);
  EXPECT_DOUBLE_EQ(stats.train_sec(), 0.4);
  EXPECT_EQ(stats.wait_ms(), 4);
  EXPECT_EQ(stats.samples(), 96);
  EXPECT_EQ(stats.step_ms().count(), 2);
  EXPECT_EQ(stats.step_ms().mean(), 200);
  EXPECT_EQ(stats.step_ms().max(), 300);
  EXPECT_EQ(stats.loss_last(), 0.5);
  EXPECT_DOUBLE_EQ(stats.loss_mean_tail(), 0.6);
}

// Over more than kKeptLosses steps the tail is the last kKeptLosses only,
// summed oldest first (the summary's loss_mean_last_10 before the sink).
TEST(RunStatsTest, LossTailKeepsTheLastTenOldestFirst) {
  RunStats stats;
  const int steps = RunStats::kKeptLosses + 7;
  for (int j = 0; j < steps; ++j) {
    stats.StepDone({.ms = 1, .samples = 1, .mean_loss = 1.0 / (j + 1)});
  }
  double tail = 0;
  for (int j = steps - RunStats::kKeptLosses; j < steps; ++j) tail += 1.0 / (j + 1);
  EXPECT_EQ(stats.loss_mean_tail(), tail / RunStats::kKeptLosses);  // same order, same bits
  EXPECT_EQ(stats.loss_last(), 1.0 / steps);
  EXPECT_EQ(stats.steps_run(), steps);
}

}  // namespace
}  // namespace lemrt::runtime
