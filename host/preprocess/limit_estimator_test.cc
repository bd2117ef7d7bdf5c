#include "host/preprocess/limit_estimator.h"

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

TEST(LimitEstimatorTest, P99IsNearestRank) {
  std::vector<float> v;
  for (int i = 1; i <= 200; ++i) v.push_back(static_cast<float>(i));
  TableLimitReport r = LimitEstimator::Summarise(v, v, {1});
  EXPECT_DOUBLE_EQ(r.p99_ids, 198);  // ceil(0.99 * 200) = 198th smallest
  EXPECT_EQ(r.max_ids, 200);
}

}  // namespace
}  // namespace lemrt::host
