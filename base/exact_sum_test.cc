#include "base/exact_sum.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

// Terms over a wide range of magnitudes and both signs.
std::vector<float> Terms(int n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 20);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// The terms split into `parts` contiguous groups, each summed on its own
// (as a rank would), then the groups' limbs added in reverse order.
float SumInParts(const std::vector<float>& terms, int parts) {
  std::vector<int64_t> total(ExactSlots(1), 0);
  for (int p = parts - 1; p >= 0; --p) {
    std::vector<int64_t> part(ExactSlots(1), 0);
    const size_t begin = terms.size() * p / parts, end = terms.size() * (p + 1) / parts;
    for (size_t i = begin; i < end; ++i) {
      AddExact(std::span<const float>(&terms[i], 1), part);
    }
    for (size_t i = 0; i < part.size(); ++i) total[i] += part[i];
  }
  float out;
  ExactValues(total, std::span<float>(&out, 1));
  return out;
}

TEST(ExactSumTest, SameBitsForAnyGroupingAndOrder) {
  std::vector<float> terms = Terms(1000, 1);
  const float one = SumInParts(terms, 1);
  for (int parts : {2, 3, 4, 7, 1000}) EXPECT_EQ(SumInParts(terms, parts), one) << parts;
  std::reverse(terms.begin(), terms.end());
  EXPECT_EQ(SumInParts(terms, 1), one);
  std::shuffle(terms.begin(), terms.end(), std::mt19937(5));
  EXPECT_EQ(SumInParts(terms, 3), one);
  // And it is the sum: within a float rounding of a long double reference.
  long double ref = 0;
  for (float t : terms) ref += t;
  EXPECT_NEAR(one, static_cast<double>(ref), std::fabs(static_cast<double>(ref)) * 1e-6 + 1e-12);
}

TEST(ExactSumTest, FloatSumOrderDiffersWhereExactDoesNot) {
  // The plain float sums of these terms depend on the order; the exact one
  // is the correctly rounded 1 + 2^-24 + 2^-24 = 1 + 2^-23.
  const std::vector<float> a = {1.0f, 0x1p-24f, 0x1p-24f};
  const std::vector<float> b = {0x1p-24f, 0x1p-24f, 1.0f};
  EXPECT_NE((a[0] + a[1]) + a[2], (b[0] + b[1]) + b[2]);
  EXPECT_EQ(SumInParts(a, 1), 1.0f + 0x1p-23f);
  EXPECT_EQ(SumInParts(b, 3), 1.0f + 0x1p-23f);
}

// Normalising carries between limbs and keeps the value: a sum normalised
// part-way equals the sum never normalised, and the lower limbs end in
// [0, 2^32).
TEST(ExactSumTest, NormalizeKeepsTheValue) {
  const std::vector<float> terms = Terms(500, 4);
  int64_t plain[kExactLimbs] = {}, normalized[kExactLimbs] = {};
  for (size_t i = 0; i < terms.size(); ++i) {
    AddExact(terms[i], plain);
    AddExact(terms[i], normalized);
    if (i % 7 == 0) NormalizeExact(normalized);
  }
  EXPECT_EQ(ExactValue(normalized), ExactValue(plain));
  NormalizeExact(normalized);
  for (int i = 0; i + 1 < kExactLimbs; ++i) {
    EXPECT_GE(normalized[i], 0);
    EXPECT_LT(normalized[i], int64_t{1} << kExactLimbBits);
  }
  int64_t renormalized[kExactLimbs];
  std::copy(normalized, normalized + kExactLimbs, renormalized);
  NormalizeExact(renormalized);
  EXPECT_TRUE(std::equal(normalized, normalized + kExactLimbs, renormalized));
}

TEST(ExactSumTest, CancellationIsExact) {
  const std::vector<float> t = {1e9f, 3e-7f, -1e9f};
  EXPECT_EQ(SumInParts(t, 1), 3e-7f);
  EXPECT_EQ(SumInParts(t, 2), 3e-7f);
}

TEST(ExactSumTest, DoublesAndLimits) {
  std::vector<int64_t> acc(ExactSlots(1), 0);
  EXPECT_TRUE(AddExact(0.1, acc.data()));
  EXPECT_TRUE(AddExact(-0.1, acc.data()));
  EXPECT_TRUE(AddExact(1234.5, acc.data()));
  EXPECT_TRUE(AddExact(0.0, acc.data()));
  EXPECT_EQ(ExactScalar(acc), 1234.5);
  // The largest magnitude below the limit, and values below the unit.
  std::vector<int64_t> big(ExactSlots(1), 0);
  EXPECT_TRUE(AddExact(-std::nextafter(0x1p32, 0.0), big.data()));
  EXPECT_EQ(ExactScalar(big), -std::nextafter(0x1p32, 0.0));
  std::vector<int64_t> tiny(ExactSlots(1), 0);
  EXPECT_TRUE(AddExact(0x1p-100, tiny.data()));
  EXPECT_TRUE(AddExact(std::numeric_limits<float>::denorm_min(), tiny.data()));
  EXPECT_EQ(ExactScalar(tiny), 0.0);
  EXPECT_TRUE(AddExact(0x1p-96f, tiny.data()));
  EXPECT_EQ(ExactScalar(tiny), 0x1p-96);
}

TEST(ExactSumTest, SpecialTermsMakeEveryValueNaN) {
  const std::vector<float> v = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  std::vector<int64_t> acc(ExactSlots(3), 0);
  AddExact(v, acc);
  EXPECT_EQ(acc.back(), 1);
  std::vector<float> out(3);
  ExactValues(acc, out);
  for (float x : out) EXPECT_TRUE(std::isnan(x));
  std::vector<int64_t> over(ExactSlots(1), 0);
  EXPECT_FALSE(AddExact(0x1p32, over.data()));
  EXPECT_FALSE(AddExact(std::nan(""), over.data()));
}

TEST(ExactSumTest, VectorsSumElementWise) {
  const std::vector<float> a = {1.5f, -2.0f, 0.25f}, b = {0.5f, 2.0f, -0.125f};
  std::vector<int64_t> acc(ExactSlots(3), 0);
  AddExact(a, acc);
  AddExact(b, acc);
  std::vector<float> out(3);
  ExactValues(acc, out);
  EXPECT_EQ(out, (std::vector<float>{2.0f, 0.0f, 0.125f}));
}

}  // namespace
}  // namespace lemrt::base
