#include "runtime/eval/eval_tracker.h"

#include <cmath>

#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

TEST(EvalTrackerTest, KeepsTheBestAndStopsAfterKEvaluationsWithoutImprovement) {
  EvalTracker t(/*early_stop_evals=*/2);
  EXPECT_FALSE(t.best().has_value());
  EvalTracker::Verdict v = t.Record(10, 0.70, 0.60);
  EXPECT_TRUE(v.improved);
  EXPECT_FALSE(v.stop);
  v = t.Record(20, 0.72, 0.58);
  EXPECT_TRUE(v.improved);
  v = t.Record(30, 0.72, 0.57);  // equal AUC: no improvement
  EXPECT_FALSE(v.improved);
  EXPECT_FALSE(v.stop);
  EXPECT_EQ(t.evals_without_improvement(), 1);
  v = t.Record(40, 0.71, 0.59);
  EXPECT_FALSE(v.improved);
  EXPECT_TRUE(v.stop);
  ASSERT_TRUE(t.best().has_value());
  EXPECT_EQ(t.best()->step, 20);
  EXPECT_EQ(t.best()->auc, 0.72);
  EXPECT_EQ(t.best()->logloss, 0.58);
}

TEST(EvalTrackerTest, ImprovementResetsTheCountAndZeroNeverStops) {
  EvalTracker t(3);
  t.Record(1, 0.5, 1);
  t.Record(2, 0.4, 1);
  t.Record(3, 0.4, 1);
  EXPECT_TRUE(t.Record(4, 0.6, 1).improved);
  EXPECT_EQ(t.evals_without_improvement(), 0);
  EXPECT_FALSE(t.Record(5, 0.5, 1).stop);
  EXPECT_FALSE(t.Record(6, 0.5, 1).stop);
  EXPECT_TRUE(t.Record(7, 0.5, 1).stop);
  EvalTracker never(0);
  never.Record(1, 0.9, 0.1);
  for (int s = 2; s < 50; ++s) EXPECT_FALSE(never.Record(s, 0.5, 1).stop);
  EXPECT_FALSE(never.Record(50, std::nan(""), 1).improved);
}

}  // namespace
}  // namespace lemrt::runtime
