#include "base/random.h"

#include <cmath>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

TEST(CounterRngTest, SameKeySameStream) {
  CounterRng a(HashKeys({1, 2, 3}));
  CounterRng b(HashKeys({1, 2, 3}));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
}

TEST(CounterRngTest, KeyOrderMatters) {
  EXPECT_NE(HashKeys({1, 2}), HashKeys({2, 1}));
}

TEST(CounterRngTest, UniformMomentsAndRange) {
  CounterRng rng(7);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double u = rng.NextDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_sq += u * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  EXPECT_NEAR(sum_sq / n - 0.25, 1.0 / 12, 0.01);
}

TEST(CounterRngTest, NextBelowCoversRange) {
  CounterRng rng(9);
  int hits[5] = {0};
  for (int i = 0; i < 5000; ++i) ++hits[rng.NextBelow(5)];
  for (int h : hits) EXPECT_GT(h, 800);
}

TEST(CounterRngTest, NormalMoments) {
  CounterRng rng(11);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = rng.NextNormal();
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
}

}  // namespace
}  // namespace lemrt::base
