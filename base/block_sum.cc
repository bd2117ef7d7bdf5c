#include "base/block_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "glog/logging.h"

namespace lemrt::base {
namespace {

// 2^e as a double; e within [-1022, 1023].
double Pow2(int64_t e) { return std::ldexp(1.0, static_cast<int>(e)); }

bool Special(std::span<const int64_t> exps) { return exps.back() == kBlockSumSpecial; }

// The largest magnitude bits of values[begin, end) (magnitude bits order
// like the magnitudes, NaN and infinity on top).
uint32_t LargestBits(std::span<const float> values, size_t begin, size_t end) {
  uint32_t largest = 0;
  for (size_t i = begin; i < end; ++i) {
    largest = std::max(largest, std::bit_cast<uint32_t>(values[i]) & 0x7fffffffu);
  }
  return largest;
}

// The smallest E with every magnitude of bits <= `largest` below 2^E
// (largest > 0 and finite): a normal float with biased exponent b lies in
// [2^(b-127), 2^(b-126)); subnormals (b = 0) below 2^-126.
int64_t BoundExponent(uint32_t largest) {
  const int64_t biased = std::max<int64_t>(largest >> 23, 1);
  return std::min<int64_t>(biased - 126, 128);
}

// The magnitude bits of 2^e (every finite float is below 2^128); e >= -125.
uint32_t Pow2Bits(int64_t e) {
  if (e >= 128) return 0x7f800000u;
  return static_cast<uint32_t>(e + 127) << 23;
}

}  // namespace

int BlockSumHeadroomBits(int64_t terms) {
  CHECK_GE(terms, 1);
  int bits = 0;
  while ((int64_t{1} << bits) < terms) ++bits;
  return bits;
}

void BlockSumExponents(std::span<const float> values, std::span<int64_t> exps) {
  CHECK_EQ(exps.size(), BlockSumExponentSlots(values.size()));
  for (size_t c = 0; c * kBlockSumChunk < values.size(); ++c) {
    const size_t end = std::min(values.size(), (c + 1) * kBlockSumChunk);
    const uint32_t largest = LargestBits(values, c * kBlockSumChunk, end);
    if (largest >= 0x7f800000u) exps.back() = kBlockSumSpecial;
    if (largest == 0) continue;
    exps[c] = std::max(exps[c], BoundExponent(largest));
  }
}

void BlockSumNextExponents(std::span<const float> sum, std::span<int64_t> exps) {
  CHECK_EQ(exps.size(), BlockSumExponentSlots(sum.size()));
  exps.back() = 0;
  int64_t top = kBlockSumNoExponent;
  for (size_t c = 0; c * kBlockSumChunk < sum.size(); ++c) {
    const size_t end = std::min(sum.size(), (c + 1) * kBlockSumChunk);
    const uint32_t largest = LargestBits(sum, c * kBlockSumChunk, end);
    if (largest >= 0x7f800000u) exps.back() = kBlockSumSpecial;
    exps[c] = largest == 0 || largest >= 0x7f800000u ? kBlockSumNoExponent : BoundExponent(largest);
    top = std::max(top, exps[c]);
  }
  if (top == kBlockSumNoExponent) return;  // all zero: every chunk measures
  const int64_t floor = std::max<int64_t>(top - kBlockSumFloorBits, -125);
  for (size_t c = 0; c + 1 < exps.size(); ++c) {
    exps[c] = std::max(exps[c], floor) + kBlockSumMarginBits;
  }
}

bool BlockSumExponentsValid(std::span<const int64_t> exps) {
  if (exps.empty() || (exps.back() != 0 && exps.back() != kBlockSumSpecial)) return false;
  return std::all_of(exps.begin(), exps.end() - 1, [](int64_t e) {
    return e == kBlockSumNoExponent || (e >= -125 && e <= 128 + kBlockSumMarginBits);
  });
}

bool AddBlockSum(std::span<const float> values, std::span<const int64_t> exps, int headroom_bits,
                 std::span<int64_t> acc) {
  CHECK_EQ(exps.size(), BlockSumExponentSlots(values.size()));
  CHECK_EQ(acc.size(), values.size());
  CHECK(headroom_bits >= 0 && headroom_bits <= 30) << headroom_bits;
  if (Special(exps)) return false;
  for (size_t c = 0; c * kBlockSumChunk < values.size(); ++c) {
    const size_t begin = c * kBlockSumChunk, end = std::min(values.size(), begin + kBlockSumChunk);
    const uint32_t largest = LargestBits(values, begin, end);
    if (exps[c] == kBlockSumNoExponent) {
      if (largest != 0) return false;  // a nonzero value where none was bounded
      continue;
    }
    if (largest >= Pow2Bits(exps[c])) return false;  // at or above 2^E, or not finite
    // |v| < 2^E, so |v| x 2^(63 - H - E) < 2^(63 - H): the product of a
    // float and a power of two is exact, and it fits an int64.
    const double scale = Pow2(63 - headroom_bits - exps[c]);
    for (size_t i = begin; i < end; ++i) {
      acc[i] += static_cast<int64_t>(static_cast<double>(values[i]) * scale);
    }
  }
  return true;
}

void BlockSumValues(std::span<const int64_t> acc, std::span<const int64_t> exps, int headroom_bits,
                    std::span<float> out) {
  CHECK_EQ(exps.size(), BlockSumExponentSlots(out.size()));
  CHECK_EQ(acc.size(), out.size());
  if (Special(exps)) {
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return;
  }
  for (size_t c = 0; c * kBlockSumChunk < out.size(); ++c) {
    const size_t end = std::min(out.size(), (c + 1) * kBlockSumChunk);
    if (exps[c] == kBlockSumNoExponent) {
      std::fill(out.begin() + c * kBlockSumChunk, out.begin() + end, 0.0f);
      continue;
    }
    const double unit = Pow2(exps[c] + headroom_bits - 63);
    for (size_t i = c * kBlockSumChunk; i < end; ++i) {
      out[i] = static_cast<float>(static_cast<double>(acc[i]) * unit);
    }
  }
}

}  // namespace lemrt::base
