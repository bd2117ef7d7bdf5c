#include "host/input/epoch_schedule.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

TEST(EpochScheduleTest, PartialLastBatchTrainedOrDropped) {
  const EpochSchedule keep(37, 16, /*drop_last=*/false);
  EXPECT_EQ(keep.steps_per_epoch(), 3);
  EXPECT_EQ(keep.rows_per_epoch(), 37);
  EXPECT_EQ(keep.At(2).count, 5);
  EXPECT_EQ(keep.At(2).first, 32);
  EXPECT_EQ(keep.At(4).epoch, 1);
  EXPECT_EQ(keep.At(4).first, 16);
  const EpochSchedule drop(37, 16, /*drop_last=*/true);
  EXPECT_EQ(drop.steps_per_epoch(), 2);
  EXPECT_EQ(drop.rows_per_epoch(), 32);
  EXPECT_EQ(drop.At(2).epoch, 1);
  EXPECT_EQ(drop.At(2).first, 0);
  EXPECT_EQ(drop.At(2).count, 16);
  const EpochSchedule exact(32, 16, false);
  EXPECT_EQ(exact.steps_per_epoch(), 2);
  EXPECT_EQ(exact.At(1).count, 16);
}

TEST(EpochScheduleTest, StepsFromEpochsAndSteps) {
  const EpochSchedule s(37, 16, false);
  config::TrainingConfig t;
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), 100);  // the default steps
  t.set_epochs(2);
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), 6);
  t.set_steps(4);
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), 4);  // whichever comes first
  t.set_steps(40);
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), 6);
  t.clear_epochs();
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), 40);
  EXPECT_EQ(*ResolveTrainingSteps(t, nullptr), 40);
  const EpochSchedule tiny(10, 16, true);
  EXPECT_THAT(ResolveTrainingSteps(t, &tiny).status().message(),
              ::testing::HasSubstr("fewer than one global batch of 16"));
  // 2^62 epochs of 3 steps overflow a 64-bit step count: an error, not 0 steps.
  t.clear_steps();
  t.set_epochs(int64_t{1} << 62);
  EXPECT_THAT(ResolveTrainingSteps(t, &s).status().message(),
              ::testing::HasSubstr("training.epochs: 4611686018427387904 epochs of 3 steps"));
  t.set_epochs((int64_t{1} << 62) / 3);
  EXPECT_EQ(*ResolveTrainingSteps(t, &s), (int64_t{1} << 62) / 3 * 3);
}

TEST(SampleOrderTest, PermutesEachWindowFromSeedAndEpochOnly) {
  for (const int64_t window : {0, 1, 4, 10, 50}) {
    SampleOrder order(23, window, 9);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<int64_t> rows;
      for (int64_t p = 0; p < 23; ++p) rows.push_back(order.Row(epoch, p));
      std::vector<int64_t> sorted = rows;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> all(23);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(sorted, all) << window;
      for (int64_t p = 0; p < 23; ++p) {
        if (window > 0) EXPECT_EQ(rows[p] / window, p / window);
        else EXPECT_EQ(rows[p], p);
      }
      // Asked in another order, the same rows.
      SampleOrder again(23, window, 9);
      for (int64_t p = 22; p >= 0; --p) EXPECT_EQ(again.Row(epoch, p), rows[p]);
    }
  }
  SampleOrder a(100, 100, 1), b(100, 100, 2);
  std::vector<int64_t> e0, e1, other_seed;
  for (int64_t p = 0; p < 100; ++p) {
    e0.push_back(a.Row(0, p));
    other_seed.push_back(b.Row(0, p));
  }
  for (int64_t p = 0; p < 100; ++p) e1.push_back(a.Row(1, p));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, other_seed);
}

}  // namespace
}  // namespace lemrt::host
