#include "base/exact_sum.h"

#include <bit>
#include <cmath>
#include <limits>

#include "glog/logging.h"

namespace lemrt::base {
namespace {

constexpr uint64_t kLimbMask = (uint64_t{1} << kExactLimbBits) - 1;

// Adds sign x (magnitude << shift) to the limbs; magnitude < 2^53 and the
// shifted value < 2^128 (shift may be negative: the bits below 2^-96 go).
void AddShifted(uint64_t magnitude, int shift, bool negative, int64_t* limbs) {
  if (shift < 0) {
    if (shift <= -64) return;
    magnitude >>= -shift;
    shift = 0;
  }
  const unsigned __int128 fixed = static_cast<unsigned __int128>(magnitude) << shift;
  for (int i = 0; i < kExactLimbs; ++i) {
    const int64_t part =
        static_cast<int64_t>(static_cast<uint64_t>(fixed >> (kExactLimbBits * i)) & kLimbMask);
    limbs[i] += negative ? -part : part;
  }
}

}  // namespace

bool AddExact(double v, int64_t* limbs) {
  if (!(std::fabs(v) < 0x1p32)) return false;  // NaN, infinities, too large
  if (v == 0.0) return true;
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  int exponent = -1074;  // of the mantissa's unit, subnormals
  if (biased != 0) {
    mantissa |= uint64_t{1} << 52;
    exponent = biased - 1075;
  }
  AddShifted(mantissa, exponent - kExactUnitExponent, (bits >> 63) != 0, limbs);
  return true;
}

bool AddExact(float v, int64_t* limbs) {
  if (!(std::fabs(v) < 0x1p32f)) return false;
  if (v == 0.0f) return true;
  // A float's 24 bits land in at most two limbs.
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const int biased = static_cast<int>((bits >> 23) & 0xff);
  uint64_t mantissa = bits & ((uint32_t{1} << 23) - 1);
  int exponent = -149;
  if (biased != 0) {
    mantissa |= uint32_t{1} << 23;
    exponent = biased - 150;
  }
  int shift = exponent - kExactUnitExponent;
  if (shift < 0) {
    mantissa >>= -shift;  // -shift < 64: exponent >= -149
    shift = 0;
  }
  const int limb = shift / kExactLimbBits;
  const uint64_t placed = mantissa << (shift % kExactLimbBits);  // < 2^55
  const int64_t low = static_cast<int64_t>(placed & kLimbMask);
  const int64_t high = static_cast<int64_t>(placed >> kExactLimbBits);
  const bool negative = (bits >> 31) != 0;
  limbs[limb] += negative ? -low : low;
  if (high != 0) limbs[limb + 1] += negative ? -high : high;  // limb + 1 < 4: |v| < 2^32
  return true;
}

void NormalizeExact(int64_t* limbs) {
  // Every limb but the top in [0, 2^32), the top signed.
  for (int i = 0; i + 1 < kExactLimbs; ++i) {
    const int64_t carry = limbs[i] >> kExactLimbBits;  // floor division
    limbs[i] -= carry * (int64_t{1} << kExactLimbBits);
    limbs[i + 1] += carry;
  }
}

double ExactValue(const int64_t* limbs) {
  int64_t l[kExactLimbs];
  for (int i = 0; i < kExactLimbs; ++i) l[i] = limbs[i];
  NormalizeExact(l);
  // Each limb's unit, 2^(32 i - 96): exact power-of-two scalings.
  constexpr double kUnit[kExactLimbs] = {0x1p-96, 0x1p-64, 0x1p-32, 0x1p0};
  static_assert(kExactLimbs == 4 && kExactLimbBits == 32 && kExactUnitExponent == -96);
  double value = 0.0;
  for (int i = 0; i < kExactLimbs; ++i) value += static_cast<double>(l[i]) * kUnit[i];
  return value;
}

void AddExact(std::span<const float> values, std::span<int64_t> acc) {
  CHECK_EQ(acc.size(), ExactSlots(values.size()));
  int64_t* limbs = acc.data();
  int64_t specials = 0;
  for (float v : values) {
    specials += AddExact(v, limbs) ? 0 : 1;
    limbs += kExactLimbs;
  }
  acc.back() += specials;
}

void ExactValues(std::span<const int64_t> acc, std::span<float> out) {
  CHECK_EQ(acc.size(), ExactSlots(out.size()));
  if (acc.back() != 0) {
    for (float& v : out) v = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<float>(ExactValue(acc.data() + i * kExactLimbs));
  }
}

double ExactScalar(std::span<const int64_t> acc) {
  CHECK_EQ(acc.size(), ExactSlots(1));
  return acc.back() != 0 ? std::numeric_limits<double>::quiet_NaN() : ExactValue(acc.data());
}

}  // namespace lemrt::base
