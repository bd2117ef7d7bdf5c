#include "base/normal_floats.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

float Reference(uint64_t key, double scale) {
  return static_cast<float>(CounterRng(key).NextNormal() * scale);
}

std::vector<uint64_t> Keys(int n, uint64_t salt) {
  std::vector<uint64_t> keys(n);
  for (int i = 0; i < n; ++i) keys[i] = HashKeys({salt, uint64_t(i)});
  return keys;
}

// Random keys, scales as the synthetic teacher's 1 / sqrt(1 + id / 100):
// every float is libm's.
TEST(NormalFloatsTest, MatchesLibmOnRandomKeys) {
  const NormalFloats normals;
  const int n = 1000003;  // not a multiple of the chunk
  const std::vector<uint64_t> keys = Keys(n, 1);
  std::vector<double> scales(n);
  for (int i = 0; i < n; ++i) scales[i] = 1.0 / std::sqrt(1.0 + (i % 100000) / 100.0);
  std::vector<float> out(n);
  normals(keys.data(), scales.data(), out.data(), n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], Reference(keys[i], scales[i])) << i;
}

// The hard cases: scales that put the product on the midpoint between two
// floats (and a few ulps either side), where the band straddles it and libm
// decides.
TEST(NormalFloatsTest, MatchesLibmAtFloatMidpoints) {
  const NormalFloats normals;
  const int n = 20000;
  const std::vector<uint64_t> keys = Keys(n, 2);
  std::vector<uint64_t> all_keys;
  std::vector<double> scales;
  for (int i = 0; i < n; ++i) {
    const double normal = CounterRng(keys[i]).NextNormal();
    const float f = static_cast<float>(normal * 0.37);
    const double midpoint = (static_cast<double>(f) + std::nextafter(f, 2 * f)) / 2;
    double scale = midpoint / normal;
    for (int step = 0; step < 3; ++step) scale = std::nextafter(scale, 0.0);
    for (int step = 0; step < 7; ++step, scale = std::nextafter(scale, 1.0)) {
      all_keys.push_back(keys[i]);
      scales.push_back(scale);
    }
  }
  std::vector<float> out(all_keys.size());
  normals(all_keys.data(), scales.data(), out.data(), static_cast<int>(out.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i], Reference(all_keys[i], scales[i])) << i;
  }
}

// The approximation holds its bound with room where it is trusted, and is
// not trusted at u1 near 1 or the cosine near a zero.
TEST(NormalFloatsTest, ApproximationStaysWellInsideItsBound) {
  const NormalFloats normals;
  CounterRng rng(3);
  double worst = 0;
  int trusted = 0;
  for (int i = 0; i < 1000000; ++i) {
    const double u1 = rng.NextDouble();
    const double u2 = rng.NextDouble();
    const double x = normals.Approximate(u1, u2);
    if (std::isnan(x)) continue;
    ++trusted;
    const double exact = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    worst = std::max(worst, std::abs(x - exact) / std::abs(exact));
  }
  EXPECT_GT(trusted, 985000);
  EXPECT_GT(worst, 0);
  EXPECT_LT(worst, NormalFloats::kBound / 8);
  EXPECT_TRUE(std::isnan(normals.Approximate(0.995, 0.1)));
  EXPECT_TRUE(std::isnan(normals.Approximate(0.3, 0.25)));  // cos(pi / 2)
  EXPECT_TRUE(std::isnan(normals.Approximate(0.3, 0.75)));
  EXPECT_FALSE(std::isnan(normals.Approximate(0.0, 0.5)));  // u1 clamped as NextNormal
}

}  // namespace
}  // namespace lemrt::base
