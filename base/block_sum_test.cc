#include "base/block_sum.h"

#include <cmath>
#include <limits>
#include <random>
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
    for (auto [b, e] = group(r); b < e; ++b) AddBlockSum(terms[b], exps, headroom, local);
    for (size_t i = 0; i < n; ++i) total[i] += local[i];
  }
  std::vector<float> out(n);
  BlockSumValues(total, exps, headroom, out);
  return out;
}

TEST(BlockSumTest, SameBitsOnAnyNumberOfRanks) {
  const auto terms = Terms(12, 3 * kBlockSumChunk + 17, 1);
  const std::vector<float> one = SumOnRanks(terms, 1);
  for (int ranks : {2, 3, 4, 6, 12}) {
    const std::vector<float> got = SumOnRanks(terms, ranks);
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(got[i], one[i]) << ranks << " ranks, " << i;
  }
}

TEST(BlockSumTest, IsTheSumToFloatPrecision) {
  const auto terms = Terms(8, 4 * kBlockSumChunk, 2);
  const std::vector<float> got = SumOnRanks(terms, 3);
  for (size_t i = 0; i < got.size(); ++i) {
    long double ref = 0, bound = 0;
    for (const auto& t : terms) {
      ref += t[i];
      bound = std::max<long double>(bound, std::fabs(t[i]));
    }
    // One float rounding of the result, and per term a truncation at
    // 2^(H - 63) = 2^-60 of a chunk bound below 2^40 x this value's bound.
    const long double tol = std::fabs(ref) * 0x1p-24L + 8 * bound * 0x1p40L * 0x1p-60L;
    EXPECT_NEAR(got[i], ref, tol) << i;
  }
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
