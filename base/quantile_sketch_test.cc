#include "base/quantile_sketch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

constexpr double kPs[] = {0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1};

// The reference: nearest rank of a plain sort.
double SortedQuantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Within the documented accuracy of the sorted reference.
void ExpectClose(double got, double exact, const char* what, double p) {
  const double tol = std::max(exact * QuantileSketch::kRelativeError,
                              std::ldexp(1.0, QuantileSketch::kMinExponent));
  EXPECT_NEAR(got, exact, tol) << what << " p=" << p;
}

std::vector<double> Values(int n, uint32_t seed) {
  // Log-uniform over 12 decades, some zeros and repeated values: stage times
  // from sub-microsecond to minutes, host_wait often exactly 0.
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) {
    const uint32_t kind = rng() % 10;
    if (kind == 0) {
      x = 0;
    } else if (kind == 1) {
      x = 2.5;
    } else {
      x = std::pow(10.0, std::uniform_real_distribution<double>(-6, 6)(rng));
    }
  }
  return v;
}

TEST(QuantileSketchTest, EmptyIsZero) {
  QuantileSketch s;
  EXPECT_EQ(s.count(), 0);
  EXPECT_EQ(s.mean(), 0);
  EXPECT_EQ(s.Quantile(0.5), 0);
  EXPECT_EQ(s.Quantile(1), 0);
}

TEST(QuantileSketchTest, MatchesSortWithinStatedError) {
  for (int n : {1, 2, 3, 10, 101, 1000, 20000}) {
    const std::vector<double> v = Values(n, n);
    QuantileSketch s;
    double sum = 0;
    for (double x : v) {
      s.Add(x);
      sum += x;
    }
    ASSERT_EQ(s.count(), n);
    EXPECT_DOUBLE_EQ(s.mean(), sum / n);
    for (double p : kPs) ExpectClose(s.Quantile(p), SortedQuantile(v, p), "log-uniform", p);
    // The extremes are exact.
    EXPECT_EQ(s.Quantile(0), *std::min_element(v.begin(), v.end()));
    EXPECT_EQ(s.Quantile(1), *std::max_element(v.begin(), v.end()));
  }
}

TEST(QuantileSketchTest, NarrowDistributionWithinStatedError) {
  // Step times of a steady run: 9.5-10.5 ms, where a coarse histogram would
  // put every value in one bucket.
  std::mt19937 rng(7);
  std::vector<double> v(5000);
  for (double& x : v) x = std::uniform_real_distribution<double>(9.5, 10.5)(rng);
  QuantileSketch s;
  for (double x : v) s.Add(x);
  for (double p : kPs) ExpectClose(s.Quantile(p), SortedQuantile(v, p), "narrow", p);
  // 2^-8 of 10 ms is 0.04 ms: p50 and p99 stay apart.
  EXPECT_GT(s.Quantile(0.99) - s.Quantile(0.5), 0.4);
}

TEST(QuantileSketchTest, SameAnswerInAnyOrder) {
  std::vector<double> v = Values(3000, 11);
  QuantileSketch a;
  for (double x : v) a.Add(x);
  std::mt19937 rng(5);
  std::shuffle(v.begin(), v.end(), rng);
  QuantileSketch b;
  for (double x : v) b.Add(x);
  for (double p : kPs) EXPECT_EQ(a.Quantile(p), b.Quantile(p)) << p;
}

TEST(QuantileSketchTest, MergeEqualsOneSketchOfAll) {
  const std::vector<double> v = Values(4000, 3);
  QuantileSketch all, first, second;
  for (size_t i = 0; i < v.size(); ++i) {
    all.Add(v[i]);
    (i % 3 == 0 ? first : second).Add(v[i]);
  }
  QuantileSketch merged;
  merged.Merge(first);
  merged.Merge(second);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  for (double p : kPs) EXPECT_EQ(merged.Quantile(p), all.Quantile(p)) << p;
  // As ranks merge it: summed counts and sums, maximised max and -min.
  const QuantileSketch parts = QuantileSketch::FromParts(all.counts(), all.sum(), all.max(), all.min());
  EXPECT_EQ(parts.count(), all.count());
  for (double p : kPs) EXPECT_EQ(parts.Quantile(p), all.Quantile(p)) << p;
}

TEST(QuantileSketchTest, BucketsTileTheRange) {
  // Each bucket's value lies inside it, and every value lies within
  // kRelativeError of its bucket's value.
  EXPECT_EQ(QuantileSketch::BucketOf(0), 0);
  EXPECT_EQ(QuantileSketch::BucketOf(-1), 0);
  EXPECT_EQ(QuantileSketch::BucketOf(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(QuantileSketch::BucketOf(std::ldexp(1.0, QuantileSketch::kMinExponent)), 1);
  EXPECT_EQ(QuantileSketch::BucketOf(std::ldexp(1.0, QuantileSketch::kMaxExponent)),
            QuantileSketch::kBuckets - 1);
  EXPECT_EQ(QuantileSketch::BucketOf(std::numeric_limits<double>::infinity()),
            QuantileSketch::kBuckets - 1);
  for (int b = 1; b < QuantileSketch::kBuckets - 1; ++b) {
    const double mid = QuantileSketch::BucketValue(b);
    ASSERT_EQ(QuantileSketch::BucketOf(mid), b) << b;
  }
  for (double x = 1e-6; x < 1e9; x *= 1.0007) {
    const int b = QuantileSketch::BucketOf(x);
    ASSERT_GE(b, 1);
    ASSERT_LE(std::abs(QuantileSketch::BucketValue(b) - x), x * QuantileSketch::kRelativeError)
        << x;
  }
}

TEST(QuantileSketchTest, HugeValuesReportTheMaximum) {
  QuantileSketch s;
  s.Add(1);
  s.Add(3e9);
  s.Add(5e9);
  EXPECT_EQ(s.Quantile(1), 5e9);
  EXPECT_EQ(s.Quantile(0.5), 5e9);  // beyond the range: the maximum
  EXPECT_EQ(s.Quantile(0), 1);
}

}  // namespace
}  // namespace lemrt::base
