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
    // Magnitude bits order like the magnitudes (NaN and infinity on top).
    uint32_t largest = 0;
    for (size_t i = c * kBlockSumChunk; i < end; ++i) {
      largest = std::max(largest, std::bit_cast<uint32_t>(values[i]) & 0x7fffffffu);
    }
    if (largest >= 0x7f800000u) exps.back() = kBlockSumSpecial;
    if (largest == 0) continue;
    // A normal float with biased exponent b lies in [2^(b-127), 2^(b-126));
    // subnormals (b = 0) below 2^-126.
    const int64_t biased = std::max<int64_t>(largest >> 23, 1);
    exps[c] = std::max(exps[c], std::min<int64_t>(biased - 126, 128));
  }
}

void AddBlockSum(std::span<const float> values, std::span<const int64_t> exps, int headroom_bits,
                 std::span<int64_t> acc) {
  CHECK_EQ(exps.size(), BlockSumExponentSlots(values.size()));
  CHECK_EQ(acc.size(), values.size());
  CHECK(headroom_bits >= 0 && headroom_bits <= 30) << headroom_bits;
  if (Special(exps)) return;
  for (size_t c = 0; c * kBlockSumChunk < values.size(); ++c) {
    if (exps[c] == kBlockSumNoExponent) continue;  // zeros in every term
    // |v| < 2^E, so |v| x 2^(63 - H - E) < 2^(63 - H): the product of a
    // float and a power of two is exact, and it fits an int64.
    const double scale = Pow2(63 - headroom_bits - exps[c]);
    const size_t end = std::min(values.size(), (c + 1) * kBlockSumChunk);
    for (size_t i = c * kBlockSumChunk; i < end; ++i) {
      acc[i] += static_cast<int64_t>(static_cast<double>(values[i]) * scale);
    }
  }
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
