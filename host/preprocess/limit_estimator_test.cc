#include "host/preprocess/limit_estimator.h"

#include <limits>

#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

// Hand-made counts: 1 table, S = 1, N = 2, two batches.
TEST(LimitEstimatorTest, MaxMeanP99AndSkew) {
  LimitEstimator est(1, 1, 2);
  est.AddBatch({{4, 3}, {2, 2}});
  est.AddBatch({{10, 5}, {0, 0}});
  ASSERT_EQ(est.ids(0).size(), 4u);
  EXPECT_EQ(est.ids_per_dest(0), (std::vector<int64_t>{14, 2}));
  TableLimitReport r = LimitEstimator::Summarise(est.ids(0), est.unique_ids(0), est.ids_per_dest(0));
  EXPECT_EQ(r.max_ids, 10);
  EXPECT_EQ(r.max_unique_ids, 5);
  EXPECT_DOUBLE_EQ(r.mean_ids, 4.0);
  EXPECT_DOUBLE_EQ(r.mean_unique_ids, 2.5);
  EXPECT_DOUBLE_EQ(r.p99_ids, 10);
  EXPECT_EQ(r.hottest_sc, 0);
  EXPECT_DOUBLE_EQ(r.hottest_share, 14.0 / 8.0);

  config::TableLimits exact = LimitEstimator::Limits("t", r, 1.0);
  EXPECT_EQ(exact.table(), "t");
  EXPECT_EQ(exact.max_ids_per_partition(), 10);
  EXPECT_EQ(exact.max_unique_ids_per_partition(), 5);
  config::TableLimits padded = LimitEstimator::Limits("t", r, 1.1);
  EXPECT_EQ(padded.max_ids_per_partition(), 11);
  EXPECT_EQ(padded.max_unique_ids_per_partition(), 6);  // ceil(5.5)
}

TEST(LimitEstimatorTest, EmptyTableGetsLimitOne) {
  LimitEstimator est(1, 1, 1);
  est.AddBatch({{0, 0}});
  TableLimitReport r = LimitEstimator::Summarise(est.ids(0), est.unique_ids(0), est.ids_per_dest(0));
  EXPECT_EQ(r.max_ids, 0);
  EXPECT_EQ(LimitEstimator::Limits("t", r, 1.1).max_ids_per_partition(), 1);
}

// A headroom that takes a limit past int32 saturates it (it wrapped to
// INT_MIN, and the floor of 1 made every limit 1).
TEST(LimitEstimatorTest, HugeHeadroomSaturatesAtInt32Max) {
  TableLimitReport r;
  r.max_ids = 1000;
  r.max_unique_ids = 10;
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  const config::TableLimits huge = LimitEstimator::Limits("t", r, 1e12);
  EXPECT_EQ(huge.max_ids_per_partition(), kMax);
  EXPECT_EQ(huge.max_unique_ids_per_partition(), kMax);
  const config::TableLimits past = LimitEstimator::Limits("t", r, 3e6);  // 3e9 ids, 3e7 unique
  EXPECT_EQ(past.max_ids_per_partition(), kMax);
  EXPECT_EQ(past.max_unique_ids_per_partition(), 30000000);
  r.max_ids = kMax;
  EXPECT_EQ(LimitEstimator::Limits("t", r, 1.0).max_ids_per_partition(), kMax);
}

TEST(LimitEstimatorTest, P99IsNearestRank) {
  std::vector<float> v;
  for (int i = 1; i <= 200; ++i) v.push_back(static_cast<float>(i));
  TableLimitReport r = LimitEstimator::Summarise(v, v, {1});
  EXPECT_DOUBLE_EQ(r.p99_ids, 198);  // ceil(0.99 * 200) = 198th smallest
  EXPECT_EQ(r.max_ids, 200);
}

}  // namespace
}  // namespace lemrt::host
