// Test-only references for the stochastic bf16 rounding of base/bf16.h,
// written from its documentation and the published algorithms rather than
// from its code: the keys (SplitMix64 and the HashKeys chain of
// base/random.h), the 16 random bits of a column (a two-round
// xorshift-multiply hash written as a hash-prospector recipe) and the
// rounding rule in terms of values (round the magnitude up to the next bf16
// with probability equal to the dropped fraction of the bf16 spacing).
// Header-only; stateless; thread-safe.
#ifndef LEMRT_BASE_BF16_REFERENCE_TEST_UTIL_H_
#define LEMRT_BASE_BF16_REFERENCE_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>

namespace lemrt::base::test_util {

// SplitMix64 (S. Vigna): the output for the state before the step, that is
// mix(state + golden). Seeded with 0 its first outputs are
// 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f.
inline uint64_t SplitMix64Reference(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// base/random.h's HashKeys: h = 0x6a09e667f3bcc909, then for each key
// h = mix(h ^ mix(key)).
inline uint64_t HashKeysReference(std::initializer_list<uint64_t> keys) {
  uint64_t h = 0x6a09e667f3bcc909ULL;
  for (const uint64_t k : keys) h = SplitMix64Reference(h ^ SplitMix64Reference(k));
  return h;
}

// The rounding key of (seed, table, row, step) as base/bf16.h documents it:
// a step key HashKeys(seed, 0x5b16b16b, table, step), then
// mix(step key ^ row x 0x9e3779b97f4a7c15).
inline uint64_t RoundingKeyReference(uint64_t seed, int table, int64_t row, int64_t step) {
  const uint64_t step_key = HashKeysReference(
      {seed, 0x5b16b16bULL, static_cast<uint64_t>(table), static_cast<uint64_t>(step)});
  return SplitMix64Reference(step_key ^ (static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ULL));
}

// A 32-bit xorshift-multiply hash in C. Wellons' hash-prospector notation:
// even entries are right shifts (x ^= x >> s), odd ones multipliers
// (x *= m).
inline uint32_t ProspectorHash32(uint32_t x, std::span<const uint32_t> recipe) {
  for (size_t i = 0; i < recipe.size(); ++i) {
    if (i % 2 == 0) {
      x ^= x >> recipe[i];
    } else {
      x *= recipe[i];
    }
  }
  return x;
}

// base::Hash32's recipe: lowbias32's form with the lower-bias constants
// found later with the prospector (lowbias32 itself is
// [16 7feb352d 15 846ca68b 16]).
inline constexpr uint32_t kHash32Recipe[] = {16, 0x21f0aaadu, 15, 0x735a2d97u, 15};

inline uint32_t Hash32Reference(uint32_t x) { return ProspectorHash32(x, kHash32Recipe); }

// The 16 random bits of column `col` under `key`: the key's 32-bit halves
// xor-ed, plus 0x9e3779b9 x (col / 2 + 1), hashed; even columns take the low
// 16 bits of the hash, odd ones the high 16.
inline uint16_t RoundingBitsReference(uint64_t key, int64_t col) {
  const uint32_t folded =
      static_cast<uint32_t>(key & 0xffffffffu) ^ static_cast<uint32_t>(key >> 32);
  const uint32_t h = Hash32Reference(folded + 0x9e3779b9u * static_cast<uint32_t>(col / 2 + 1));
  return col % 2 == 0 ? static_cast<uint16_t>(h & 0xffffu) : static_cast<uint16_t>(h >> 16);
}

// `f` rounded stochastically to bf16 with the random value `random16`,
// computed on values: lo is the largest bf16 magnitude <= |f|, hi the next
// one (2^128, infinity, past the largest finite bf16), and the magnitude
// becomes hi exactly when random16 + 2^16 (|f| - lo) / (hi - lo) >= 2^16 (the
// random bits and the dropped ones carry into the kept ones), so with
// probability (|f| - lo) / (hi - lo). Infinities stay; a NaN keeps its sign
// and top bits and becomes quiet (top bits | 0x40).
inline uint16_t StochasticRoundReference(float f, uint16_t random16) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  if (std::isinf(f)) return static_cast<uint16_t>(bits >> 16);
  const double mag = std::fabs(double{f});
  // The spacing of bf16 values around mag: 2^(e - 7) for mag in
  // [2^e, 2^(e+1)), and 2^-133 below 2^-126 (subnormals, zero).
  double spacing = std::ldexp(1.0, -133);
  if (mag >= std::ldexp(1.0, -126)) {
    int exp2 = 0;
    std::frexp(mag, &exp2);  // mag = m 2^exp2, m in [0.5, 1)
    spacing = std::ldexp(1.0, exp2 - 1 - 7);
  }
  const double lo = std::floor(mag / spacing) * spacing;
  const double dropped = (mag - lo) / spacing * 65536.0;  // an integer in [0, 2^16)
  const double out = random16 + dropped >= 65536.0 ? lo + spacing : lo;
  float out_f = out >= std::ldexp(1.0, 128) ? std::numeric_limits<float>::infinity()
                                            : static_cast<float>(out);
  if (std::signbit(f)) out_f = -out_f;
  uint32_t out_bits;
  std::memcpy(&out_bits, &out_f, sizeof(out_bits));
  return static_cast<uint16_t>(out_bits >> 16);
}

// The stochastic rounding of element `col` of a row rounded under `key`.
inline uint16_t NarrowReference(float f, uint64_t key, int64_t col) {
  return StochasticRoundReference(f, RoundingBitsReference(key, col));
}

}  // namespace lemrt::base::test_util

#endif  // LEMRT_BASE_BF16_REFERENCE_TEST_UTIL_H_
