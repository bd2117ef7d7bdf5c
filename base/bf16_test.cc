#include "base/bf16.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

#include "base/bf16_reference_test_util.h"
#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

using test_util::NarrowReference;
using test_util::RoundingBitsReference;
using test_util::RoundingKeyReference;
using test_util::StochasticRoundReference;

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
  // Up exactly when the random bits and the dropped ones reach 2^16.
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

// The row (two columns per 32-bit hash) against the plain reference of the
// documented rule (bf16_reference_test_util.h), for odd and even lengths.
TEST(Bf16Test, StochasticRowMatchesPerColumnBits) {
  CounterRng rng(3);
  for (int n : {0, 1, 3, 4, 5, 8, 17, 64}) {
    std::vector<float> in(n);
    for (float& f : in) f = static_cast<float>(rng.NextNormal());
    std::vector<uint16_t> out(n);
    const uint64_t key = Bf16RoundingKey(9, 1, 12345, 77);
    NarrowBf16Stochastic(in, key, out.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], NarrowReference(in[i], key, i)) << n << " " << i;
  }
  // Different (seed, table, row, step) give different keys.
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 0, 5, 2));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 1, 5, 1));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(2, 0, 5, 1));
  EXPECT_NE(Bf16RoundingKey(1, 0, 5, 1), Bf16RoundingKey(1, 0, 6, 1));
}

// The 16-lane row loops equal the scalar function and the plain reference on
// special values too
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
    EXPECT_EQ(stochastic[i], NarrowReference(in[i], key, static_cast<int64_t>(i))) << i;
  }
}

// The scalar rule against the value-based reference: random bit patterns
// (every magnitude, subnormals, values next to the largest finite) with
// random and extreme rounding bits.
TEST(Bf16Test, StochasticMatchesTheValueRule) {
  CounterRng rng(17);
  for (int i = 0; i < 50000; ++i) {
    const uint64_t r = rng.NextU64();
    const float f = FromBits(static_cast<uint32_t>(r));
    for (const uint16_t random16 :
         {static_cast<uint16_t>(r >> 32), uint16_t{0}, uint16_t{1}, uint16_t{0xffff}}) {
      ASSERT_EQ(FloatToBf16Stochastic(f, random16), StochasticRoundReference(f, random16))
          << "bits " << std::hex << FloatBits(f) << " random " << random16;
    }
  }
  // Hand-picked: 1 + 2^-8 (dropped fraction one half) goes up exactly when
  // the random bits are at least 0x8000; the largest finite float may round
  // to infinity; a negative subnormal rounds its magnitude; a carry reaches
  // the exponent.
  EXPECT_EQ(StochasticRoundReference(FromBits(0x3f808000), 0x7fff), 0x3f80);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x3f808000), 0x8000), 0x3f81);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x7f7fffff), 0x0000), 0x7f7f);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x7f7fffff), 0x0001), 0x7f80);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x80000001), 0xfffe), 0x8000);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x80000001), 0xffff), 0x8001);
  EXPECT_EQ(StochasticRoundReference(FromBits(0x3fffffff), 0x0001), 0x4000);  // into 2.0
}

// Known answers. The references are checked against published values
// (SplitMix64 seeded with 0) and a few outputs of each function are pinned,
// so a change of the hashes, the keys or the bits (which would change every
// bf16 model's rounding) fails here, on every build and machine.
TEST(Bf16Test, HashesAndKeysHaveKnownValues) {
  EXPECT_EQ(test_util::SplitMix64Reference(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(test_util::SplitMix64Reference(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(test_util::SplitMix64Reference(2 * 0x9e3779b97f4a7c15ULL), 0x06c45d188009454fULL);
  EXPECT_EQ(Mix64(0), 0xe220a8397b1dcdafULL);

  // Hash32: pinned outputs, and the prospector recipe on many inputs.
  EXPECT_EQ(Hash32(0), 0u);
  EXPECT_EQ(Hash32(1), 0x86d2fa73u);
  EXPECT_EQ(Hash32(2), 0x0da7f4e7u);
  EXPECT_EQ(Hash32(12345), 0x869dae96u);
  EXPECT_EQ(Hash32(0x9e3779b9u), 0x64625032u);
  EXPECT_EQ(Hash32(0xdeadbeefu), 0x2a2acaf2u);
  EXPECT_EQ(Hash32(0xffffffffu), 0x99b5e683u);
  CounterRng rng(23);
  for (int i = 0; i < 10000; ++i) {
    const uint32_t x = static_cast<uint32_t>(rng.NextU64());
    ASSERT_EQ(Hash32(x), test_util::Hash32Reference(x)) << x;
  }

  // The keys: pinned, and the documented derivation for other arguments.
  EXPECT_EQ(Bf16StepKey(1, 2, 4), 0x134a2379d0d2c2ceULL);
  EXPECT_EQ(Bf16RoundingKey(1, 2, 3, 4), 0x2025e2b139ca0da8ULL);
  EXPECT_EQ(Bf16RoundingKey(5, 0, 7, 1 + (int64_t{1} << 62)), 0x35c37486061f6120ULL);
  for (uint64_t seed : {0ULL, 5ULL, ~0ULL}) {
    for (int table : {0, 1, 7}) {
      for (int64_t row : {int64_t{0}, int64_t{12345}, int64_t{1} << 47}) {
        for (int64_t step : {int64_t{1}, int64_t{1000}, int64_t{3} + (int64_t{1} << 62)}) {
          ASSERT_EQ(Bf16RoundingKey(seed, table, row, step),
                    RoundingKeyReference(seed, table, row, step));
        }
      }
    }
  }

  // The rounding bits: pinned, and the reference on many keys and columns.
  const uint64_t key = Bf16RoundingKey(1, 2, 3, 4);
  EXPECT_EQ(Bf16RoundingBits(key, 0), 0x69ce);
  EXPECT_EQ(Bf16RoundingBits(key, 1), 0xbff8);
  EXPECT_EQ(Bf16RoundingBits(key, 2), 0x4cbe);
  EXPECT_EQ(Bf16RoundingBits(key, 3), 0xb6a5);
  EXPECT_EQ(Bf16RoundingBits(key, 4), 0xf8ca);
  EXPECT_EQ(Bf16RoundingBits(0x0123456789abcdefULL, 0), 0xb6f8);
  EXPECT_EQ(Bf16RoundingBits(0x0123456789abcdefULL, 1), 0xa8c6);
  EXPECT_EQ(Bf16RoundingBits(0x0123456789abcdefULL, 2), 0xbfde);
  EXPECT_EQ(Bf16RoundingBits(0x0123456789abcdefULL, 3), 0xcbdc);
  for (int i = 0; i < 200; ++i) {
    const uint64_t k = rng.NextU64();
    for (int64_t col = 0; col < 70; ++col) {
      ASSERT_EQ(Bf16RoundingBits(k, col), RoundingBitsReference(k, col)) << k << " " << col;
    }
  }
}

}  // namespace
}  // namespace lemrt::base
