#include "base/block_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

// `terms` vectors of n values; chunk c's magnitudes spread over 2^(-30..10)
// around a chunk scale of 2^(3c - 60) (so chunks span 2^-90 .. 2^60).
std::vector<std::vector<float>> Terms(int terms, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 10);
  std::vector<std::vector<float>> t(terms, std::vector<float>(n));
  for (auto& v : t) {
    for (size_t i = 0; i < n; ++i) {
      const int chunk_scale = 3 * static_cast<int>(i / kBlockSumChunk) - 60;
      v[i] = std::ldexp(mantissa(gen), exponent(gen) + chunk_scale);
    }
  }
  return t;
}

// The terms split into `ranks` contiguous groups, each with its own
// exponents and integers; the groups' exponents max-reduced and integers
// summed in reverse group order (as an all-reduce might), then decoded.
std::vector<float> SumOnRanks(const std::vector<std::vector<float>>& terms, int ranks) {
  const size_t n = terms[0].size();
  const int headroom = BlockSumHeadroomBits(static_cast<int64_t>(terms.size()));
  auto group = [&](int r) {
    return std::make_pair(terms.size() * r / ranks, terms.size() * (r + 1) / ranks);
  };
  std::vector<int64_t> exps(BlockSumExponentSlots(n), kBlockSumNoExponent);
  for (int r = 0; r < ranks; ++r) {
    std::vector<int64_t> local(exps.size(), kBlockSumNoExponent);
    for (auto [b, e] = group(r); b < e; ++b) BlockSumExponents(terms[b], local);
    for (size_t i = 0; i < exps.size(); ++i) exps[i] = std::max(exps[i], local[i]);
  }
  std::vector<int64_t> total(n, 0);
  for (int r = ranks - 1; r >= 0; --r) {
    std::vector<int64_t> local(n, 0);
    for (auto [b, e] = group(r); b < e; ++b) {
      // Measured exponents bound every term; a special value fails them all.
      EXPECT_EQ(AddBlockSum(terms[b], exps, headroom, local), exps.back() != kBlockSumSpecial);
    }
    for (size_t i = 0; i < n; ++i) total[i] += local[i];
  }
  std::vector<float> out(n);
  BlockSumValues(total, exps, headroom, out);
  return out;
}

// As the TensorCore stage sums with predicted exponents `pred`: each rank
// adds its terms and counts the terms that failed; the counts travel with the
// integers; when the total is nonzero (*redone) the sum is taken again with
// measured exponents (SumOnRanks).
std::vector<float> PredictedSumOnRanks(const std::vector<std::vector<float>>& terms, int ranks,
                                       const std::vector<int64_t>& pred, bool* redone) {
  const size_t n = terms[0].size();
  const int headroom = BlockSumHeadroomBits(static_cast<int64_t>(terms.size()));
  std::vector<int64_t> total(n + 1, 0);  // the integers, then the failures
  for (int r = ranks - 1; r >= 0; --r) {
    std::vector<int64_t> local(n + 1, 0);
    for (size_t b = terms.size() * r / ranks; b < terms.size() * (r + 1) / ranks; ++b) {
      if (!AddBlockSum(terms[b], pred, headroom, std::span<int64_t>(local.data(), n))) ++local[n];
    }
    for (size_t i = 0; i <= n; ++i) total[i] += local[i];
  }
  *redone = total[n] > 0;
  if (*redone) return SumOnRanks(terms, ranks);
  std::vector<float> out(n);
  BlockSumValues(std::span<const int64_t>(total.data(), n), pred, headroom, out);
  return out;
}

// The predicted exponents after a sum of `terms` (as after a previous step).
std::vector<int64_t> Predicted(const std::vector<std::vector<float>>& terms) {
  const std::vector<float> sum = SumOnRanks(terms, 1);
  std::vector<int64_t> pred(BlockSumExponentSlots(sum.size()));
  BlockSumNextExponents(sum, pred);
  return pred;
}

TEST(BlockSumTest, SameBitsOnAnyNumberOfRanks) {
  const auto terms = Terms(12, 3 * kBlockSumChunk + 17, 1);
  const std::vector<float> one = SumOnRanks(terms, 1);
  for (int ranks : {2, 3, 4, 6, 12}) {
    const std::vector<float> got = SumOnRanks(terms, ranks);
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(got[i], one[i]) << ranks << " ranks, " << i;
  }
}

// `terms` vectors of n values whose magnitudes fall with the position in
// their chunk: value j of chunk c lies in [2^-(j+1), 2^-j) x 2^(3c - 20), so
// a chunk spans 2^64 below its largest value, far past where the
// truncations show (2^(39 - H) below the bound). Each value keeps one sign
// over the terms, so their truncations (toward zero) add up.
std::vector<std::vector<float>> GradedTerms(int terms, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(0.5f, 1.0f);
  std::vector<std::vector<float>> t(terms, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    const int exponent =
        3 * static_cast<int>(i / kBlockSumChunk) - 20 - static_cast<int>(i % kBlockSumChunk);
    const float sign = gen() % 2 == 0 ? 1.0f : -1.0f;
    for (auto& v : t) v[i] = sign * std::ldexp(mantissa(gen), exponent);
  }
  return t;
}

// The sum of `terms` on 3 ranks is the exact sum within the documented
// error: per term a truncation below one unit of its chunk, 2^(E + H - 63)
// with E the measured exponent (the smallest with every |term value| of the
// chunk below 2^E) and H = BlockSumHeadroomBits(terms), then the decoding's
// roundings to double and to float.
void ExpectTheSumWithinTheBound(const std::vector<std::vector<float>>& terms) {
  const int headroom = BlockSumHeadroomBits(static_cast<int64_t>(terms.size()));
  const std::vector<float> got = SumOnRanks(terms, 3);
  const long double count = static_cast<long double>(terms.size());
  for (size_t begin = 0; begin < got.size(); begin += kBlockSumChunk) {
    const size_t end = std::min(got.size(), begin + kBlockSumChunk);
    float chunk_max = 0;
    for (const auto& t : terms) {
      for (size_t i = begin; i < end; ++i) chunk_max = std::max(chunk_max, std::fabs(t[i]));
    }
    int e = 0;
    std::frexp(chunk_max, &e);  // chunk_max = m x 2^e with m in [0.5, 1): E = e
    const long double truncation = count * std::ldexp(1.0L, e + headroom - 63);
    for (size_t i = begin; i < end; ++i) {
      long double ref = 0, bound = 0;
      for (const auto& t : terms) {
        ref += t[i];
        bound = std::max<long double>(bound, std::fabs(t[i]));
      }
      // The long double reference rounds too (2^-64 of this value's bound a
      // term) when the terms span more than its 64 bits.
      const long double tol = (std::fabs(ref) + truncation) * (0x1p-24L + 0x1p-52L) + truncation +
                              count * bound * 0x1p-64L;
      EXPECT_NEAR(got[i], ref, tol) << i;
    }
  }
}

TEST(BlockSumTest, IsTheSumToFloatPrecision) {
  ExpectTheSumWithinTheBound(Terms(8, 4 * kBlockSumChunk, 2));
  // Where the truncations dominate: one more bit of headroom (units twice
  // as coarse) exceeds the bound.
  ExpectTheSumWithinTheBound(GradedTerms(8, 4 * kBlockSumChunk, 3));
  ExpectTheSumWithinTheBound(GradedTerms(5, 3 * kBlockSumChunk + 7, 4));
}

TEST(BlockSumTest, NextExponentsBoundThePreviousSumWithAMargin) {
  std::vector<float> sum(2 * kBlockSumChunk + 3, 0.0f);
  sum[1] = 1.5f;    // below 2^1
  sum[2] = -0.25f;  // smaller: chunk 0's bound stays 2^1
  sum[kBlockSumChunk + 2] = -std::numeric_limits<float>::denorm_min();  // below 2^-125
  sum[2 * kBlockSumChunk] = 0x1p-14f;                                   // below 2^-13
  std::vector<int64_t> pred(BlockSumExponentSlots(sum.size()), 77);
  BlockSumNextExponents(sum, pred);
  // Chunk 1 is lifted to 16 bits below chunk 0 (the floor); chunk 2 is above it.
  EXPECT_EQ(pred, (std::vector<int64_t>{1 + kBlockSumMarginBits,
                                        1 - kBlockSumFloorBits + kBlockSumMarginBits,
                                        -13 + kBlockSumMarginBits, 0}));
  sum[kBlockSumChunk + 2] = 0.0f;  // an all-zero chunk: the floor too
  BlockSumNextExponents(sum, pred);
  EXPECT_EQ(pred[1], 1 - kBlockSumFloorBits + kBlockSumMarginBits);
  std::fill(sum.begin(), sum.end(), 0.0f);
  BlockSumNextExponents(sum, pred);
  EXPECT_EQ(pred, (std::vector<int64_t>{kBlockSumNoExponent, kBlockSumNoExponent,
                                        kBlockSumNoExponent, 0}));
  sum[3] = std::numeric_limits<float>::infinity();
  BlockSumNextExponents(sum, pred);
  EXPECT_EQ(pred.back(), kBlockSumSpecial);
  EXPECT_TRUE(BlockSumExponentsValid(pred));
  EXPECT_TRUE(BlockSumExponentsValid(std::vector<int64_t>{-125, 128 + kBlockSumMarginBits, 0}));
  EXPECT_FALSE(BlockSumExponentsValid(std::vector<int64_t>{-126, 0}));
  EXPECT_FALSE(BlockSumExponentsValid(std::vector<int64_t>{129 + kBlockSumMarginBits, 0}));
  EXPECT_FALSE(BlockSumExponentsValid(std::vector<int64_t>{3, 1}));
  EXPECT_FALSE(BlockSumExponentsValid(std::vector<int64_t>{}));
}

TEST(BlockSumTest, PredictedExponentsSumToFloatPrecisionOnAnyNumberOfRanks) {
  // The previous step's terms, and this step's: the same magnitudes, so no
  // term reaches the margin.
  const auto pred = Predicted(Terms(8, 3 * kBlockSumChunk + 5, 4));
  const auto terms = Terms(8, 3 * kBlockSumChunk + 5, 5);
  bool redone = true;
  const std::vector<float> one = PredictedSumOnRanks(terms, 1, pred, &redone);
  EXPECT_FALSE(redone);
  for (size_t i = 0; i < one.size(); ++i) {
    long double ref = 0;
    for (const auto& t : terms) ref += t[i];
    // A chunk's values span 2^40 below its largest (Terms), the bound is
    // 2^(H + margin) = 2^11 above that: the truncations (2^-60 of the bound
    // a term) reach 2^-9 of the chunk's smallest values.
    const long double bound = std::ldexp(1.0L, pred[i / kBlockSumChunk]);
    const long double tol = std::fabs(ref) * 0x1p-24L + 8 * bound * 0x1p-60L;
    EXPECT_NEAR(one[i], ref, tol) << i;
  }
  // The sum is taken in the predicted units: units 2^30 coarser lie above
  // most results' last bits and change them. (The measured units, 9 bits
  // finer here, mostly truncate below the last bits: no test of the units.)
  std::vector<int64_t> coarse = pred;
  for (size_t c = 0; c + 1 < coarse.size(); ++c) coarse[c] += 30;
  ASSERT_TRUE(BlockSumExponentsValid(coarse));
  const std::vector<float> coarser = PredictedSumOnRanks(terms, 1, coarse, &redone);
  EXPECT_FALSE(redone);
  size_t differ = 0;
  for (size_t i = 0; i < one.size(); ++i) differ += one[i] != coarser[i] ? 1 : 0;
  EXPECT_GT(differ, one.size() / 4);
  for (int ranks : {2, 3, 4, 8}) {
    const std::vector<float> got = PredictedSumOnRanks(terms, ranks, pred, &redone);
    EXPECT_FALSE(redone);
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(got[i], one[i]) << ranks << " ranks, " << i;
  }
}

TEST(BlockSumTest, ATermAtItsPredictedBoundForcesTheMeasuredSum) {
  const size_t n = 2 * kBlockSumChunk;
  std::vector<std::vector<float>> previous(4, std::vector<float>(n, 0.0f));
  for (auto& t : previous) t[3] = t[kBlockSumChunk + 1] = 0.75f;  // sums 3: bound 2^2
  const auto pred = Predicted(previous);
  ASSERT_EQ(pred[0], 2 + kBlockSumMarginBits);
  const float bound = std::ldexp(1.0f, 2 + kBlockSumMarginBits);
  auto terms = previous;
  std::vector<int64_t> acc(n, 0);
  terms[2][5] = std::nextafter(bound, 0.0f);  // just below: fits
  EXPECT_TRUE(AddBlockSum(terms[2], pred, 2, acc));
  bool redone = true;
  PredictedSumOnRanks(terms, 3, pred, &redone);
  EXPECT_FALSE(redone);
  for (float over : {bound, -bound, std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::infinity()}) {
    terms[2][5] = over;
    EXPECT_FALSE(AddBlockSum(terms[2], pred, 2, acc)) << over;
    for (int ranks : {1, 2, 4}) {
      const std::vector<float> got = PredictedSumOnRanks(terms, ranks, pred, &redone);
      EXPECT_TRUE(redone) << over;
      const std::vector<float> want = SumOnRanks(terms, 1);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
      }
    }
  }
  // A chunk whose previous sum was zero is bounded by the floor: 2^-6 here.
  terms = previous;
  for (auto& t : terms) t[kBlockSumChunk + 1] = 0.0f;
  const auto floored = Predicted(terms);
  ASSERT_EQ(floored[1], 2 - kBlockSumFloorBits + kBlockSumMarginBits);
  terms[1][kBlockSumChunk + 9] = 0x1p-7f;
  EXPECT_TRUE(AddBlockSum(terms[1], floored, 2, acc));
  terms[1][kBlockSumChunk + 9] = 0x1p-6f;
  EXPECT_FALSE(AddBlockSum(terms[1], floored, 2, acc));
  // Any nonzero value after an all-zero sum.
  std::vector<std::vector<float>> zeros(4, std::vector<float>(n, 0.0f));
  const auto none = Predicted(zeros);
  zeros[1][kBlockSumChunk + 9] = 1e-30f;
  EXPECT_FALSE(AddBlockSum(zeros[1], none, 2, acc));
  EXPECT_TRUE(AddBlockSum(zeros[0], none, 2, acc));  // zeros: fit
  const std::vector<float> got = PredictedSumOnRanks(zeros, 2, none, &redone);
  EXPECT_TRUE(redone);
  EXPECT_EQ(got[kBlockSumChunk + 9], 1e-30f);
}

TEST(BlockSumTest, ZerosExtremesAndSpecials) {
  const size_t n = 2 * kBlockSumChunk;
  std::vector<std::vector<float>> terms(4, std::vector<float>(n, 0.0f));
  // Chunk 0 all zero; chunk 1: the largest float over 4 terms, a subnormal.
  const float big = std::numeric_limits<float>::max() / 4;
  for (auto& t : terms) {
    t[kBlockSumChunk] = big;
    t[kBlockSumChunk + 1] = -big;
  }
  terms[0][kBlockSumChunk + 2] = std::numeric_limits<float>::denorm_min();
  std::vector<float> sum = SumOnRanks(terms, 2);
  for (size_t i = 0; i < kBlockSumChunk; ++i) EXPECT_EQ(sum[i], 0.0f);
  EXPECT_EQ(sum[kBlockSumChunk], 4 * big);
  EXPECT_EQ(sum[kBlockSumChunk + 1], -4 * big);
  EXPECT_EQ(sum[kBlockSumChunk + 2], 0.0f);  // far below the chunk's bound
  // A chunk of subnormals alone keeps them exactly.
  std::vector<std::vector<float>> tiny(3, std::vector<float>(5, 0.0f));
  for (auto& t : tiny) t[1] = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(SumOnRanks(tiny, 3)[1], 3 * std::numeric_limits<float>::denorm_min());
  // A NaN or an infinity in any term makes every value NaN.
  for (float special :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    terms[3][5] = special;
    sum = SumOnRanks(terms, 4);
    for (float v : sum) EXPECT_TRUE(std::isnan(v));
    terms[3][5] = 0.0f;
  }
}

TEST(BlockSumTest, HeadroomBits) {
  EXPECT_EQ(BlockSumHeadroomBits(1), 0);
  EXPECT_EQ(BlockSumHeadroomBits(2), 1);
  EXPECT_EQ(BlockSumHeadroomBits(3), 2);
  EXPECT_EQ(BlockSumHeadroomBits(4), 2);
  EXPECT_EQ(BlockSumHeadroomBits(5), 3);
  EXPECT_EQ(BlockSumHeadroomBits(int64_t{1} << 20), 20);
  EXPECT_EQ(BlockSumExponentSlots(0), 1u);
  EXPECT_EQ(BlockSumExponentSlots(kBlockSumChunk), 2u);
  EXPECT_EQ(BlockSumExponentSlots(kBlockSumChunk + 1), 3u);
}

}  // namespace
}  // namespace lemrt::base
