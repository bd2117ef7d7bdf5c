#include "base/bf16.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The nearest bf16 by a plain reference: of the two bf16 values around `f`
// (truncation and the next one away from zero), the closer in double
// arithmetic, ties to the even one.
uint16_t NearestReference(float f) {
  const uint32_t bits = FloatBits(f);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double d_down = std::fabs(double{f} - Bf16ToFloat(down));
  // Past the largest bf16 the next value is 2^128 (rounding to infinity).
  const double v_up =
      (up & 0x7fff) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), f) : Bf16ToFloat(up);
  const double d_up = std::fabs(double{f} - v_up);
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1) == 0 ? down : up;
}

TEST(Bf16Test, WidenIsExactTopHalf) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc020), -2.5f);
  EXPECT_EQ(Bf16ToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(Bf16ToFloat(0x8000)));
  EXPECT_EQ(Bf16ToFloat(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(0x7fc0)));
}

TEST(Bf16Test, NearestRoundsHalfToEven) {
  EXPECT_EQ(FloatToBf16Nearest(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16Nearest(FromBits(0x3f808000)), 0x3f80);  // tie, 0x3f80 is even
  EXPECT_EQ(FloatToBf16Nearest(FromBits(0x3f818000)), 0x3f82);  // tie, up to even
  EXPECT_EQ(FloatToBf16Nearest(FromBits(0x3f808001)), 0x3f81);  // just above the tie
  EXPECT_EQ(FloatToBf16Nearest(FromBits(0xbf807fff)), 0xbf80);  // negative, below the tie
  // The largest finite float rounds to infinity; infinities stay.
  EXPECT_EQ(FloatToBf16Nearest(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16Nearest(-std::numeric_limits<float>::infinity()), 0xff80);
  // A NaN whose payload is only in the dropped bits stays a NaN.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16Nearest(FromBits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16Nearest(FromBits(0xffc00000)))));
}

TEST(Bf16Test, NearestMatchesReferenceOnRandomBits) {
  CounterRng rng(7);
  std::vector<float> in;
  for (int i = 0; i < 20000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng.NextU64());
    if ((bits & 0x7f800000u) == 0x7f800000u) continue;  // infinities and NaNs: above
    in.push_back(FromBits(bits));
  }
  std::vector<uint16_t> out(in.size());
  NarrowBf16Nearest(in, out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i], NearestReference(in[i])) << "bits " << std::hex << FloatBits(in[i]);
  }
  std::vector<float> back(in.size());
  WidenBf16(out, back.data());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(back[i], Bf16ToFloat(out[i]));
}

#if defined(__AVX512BF16__)
// Where the CPU converts natively, the portable rounding agrees with the
// instruction on normal values (the instruction flushes subnormals to zero,
// which the portable path does not, so they are left out).
TEST(Bf16Test, NearestMatchesAvx512Bf16OnNormals) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "no avx512_bf16 on this CPU";
  CounterRng rng(11);
  for (int i = 0; i < 2000; ++i) {
    alignas(64) float in[16];
    for (float& f : in) {
      uint32_t bits;
      do {
        bits = static_cast<uint32_t>(rng.NextU64());
      } while ((bits & 0x7f800000u) == 0 || (bits & 0x7f800000u) == 0x7f800000u);
      f = FromBits(bits);
    }
    alignas(32) uint16_t hw[16];
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_load_ps(in));
    std::memcpy(hw, &v, sizeof(hw));
    for (int k = 0; k < 16; ++k) ASSERT_EQ(FloatToBf16Nearest(in[k]), hw[k]);
  }
}
#endif

TEST(Bf16Test, StochasticKeepsBf16ValuesAndSpecials) {
  for (uint16_t r : {uint16_t{0}, uint16_t{1}, uint16_t{0x8000}, uint16_t{0xffff}}) {
    EXPECT_EQ(FloatToBf16Stochastic(1.0f, r), 0x3f80);
    EXPECT_EQ(FloatToBf16Stochastic(-2.5f, r), 0xc020);
    EXPECT_EQ(FloatToBf16Stochastic(std::numeric_limits<float>::infinity(), r), 0x7f80);
    EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16Stochastic(FromBits(0x7f800001), r))));
  }
  // Up exactly when the random bits are below the dropped ones.
  EXPECT_EQ(FloatToBf16Stochastic(FromBits(0x3f804000), 0x3fff), 0x3f80);
  EXPECT_EQ(FloatToBf16Stochastic(FromBits(0x3f804000), 0xc000), 0x3f81);
  EXPECT_EQ(FloatToBf16Stochastic(FromBits(0xbf804000), 0xc000), 0xbf81);  // magnitude up
}

// Over many keys the mean of the rounded values is the fp32 value (within
// 5 standard errors), each result is one of its two neighbours, and the same
// key gives the same bits.
TEST(Bf16Test, StochasticIsUnbiasedAndDeterministic) {
  const std::vector<float> values = {FromBits(0x3f801234), FromBits(0xc1234567), 0.1f, -3.3e-5f,
                                     FromBits(0x3f80ffff)};
  constexpr int kDraws = 40000;
  for (float v : values) {
    const uint16_t down = static_cast<uint16_t>(FloatBits(v) >> 16);
    const double lo = Bf16ToFloat(down), hi = Bf16ToFloat(static_cast<uint16_t>(down + 1));
    double sum = 0;
    for (int k = 0; k < kDraws; ++k) {
      const uint64_t key = Bf16RoundingKey(1, 2, k, 3);
      uint16_t out;
      NarrowBf16Stochastic(std::span<const float>(&v, 1), key, &out);
      ASSERT_TRUE(out == down || out == down + 1);
      uint16_t again;
      NarrowBf16Stochastic(std::span<const float>(&v, 1), key, &again);
      ASSERT_EQ(out, again);
      sum += Bf16ToFloat(out);
    }
    const double p = (double{v} - lo) / (hi - lo);
    const double stderr_mean = std::fabs(hi - lo) * std::sqrt(p * (1 - p) / kDraws);
    EXPECT_NEAR(sum / kDraws, double{v}, 5 * stderr_mean + 1e-12 * std::fabs(v)) << v;
  }
}

// The row (two columns per 32-bit hash) and the per-column bits agree, for
// odd and even lengths.
TEST(Bf16Test, StochasticRowMatchesPerColumnBits) {
  CounterRng rng(3);
  for (int n : {0, 1, 3, 4, 5, 8, 17, 64}) {
    std::vector<float> in(n);
    for (float& f : in) f = static_cast<float>(rng.NextNormal());
    std::vector<uint16_t> out(n);
    const uint64_t key = Bf16RoundingKey(9, 1, 12345, 77);
    NarrowBf16Stochastic(in, key, out.data());
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], FloatToBf16Stochastic(in[i], Bf16RoundingBits(key, i))) << n << " " << i;
    }
  }
  // Different (seed, table, row, step) give different keys.
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 0, 5, 2));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 1, 5, 1));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(2, 0, 5, 1));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 0, 6, 1));
}

// The 16-lane row loops equal the scalar functions on special values too
// (infinities, NaNs with payload only in the dropped bits, zeros, the largest
// finite float, subnormals), in every lane position.
TEST(Bf16Test, RowLoopsMatchScalarOnSpecials) {
  const std::vector<uint32_t> specials = {0x7f800000, 0xff800000, 0x7f800001, 0xffc00000,
                                          0x00000000, 0x80000000, 0x7f7fffff, 0x00000001,
                                          0x807fffff, 0x3f808000, 0x3f818000, 0x7f7f8000,
                                          0x7fffffff, 0x0000ffff, 0x3f80ffff};
  std::vector<float> in;
  for (int rep = 0; rep < 3; ++rep) {
    for (uint32_t b : specials) in.push_back(FromBits(b));
  }
  std::vector<uint16_t> nearest(in.size()), stochastic(in.size());
  NarrowBf16Nearest(in, nearest.data());
  const uint64_t key = Bf16RoundingKey(4, 0, 1, 2);
  NarrowBf16Stochastic(in, key, stochastic.data());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(nearest[i], FloatToBf16Nearest(in[i])) << i;
    EXPECT_EQ(stochastic[i], FloatToBf16Stochastic(in[i], Bf16RoundingBits(key, i))) << i;
  }
}

}  // namespace
}  // namespace lemrt::base
