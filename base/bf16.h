// bfloat16 (bf16) numbers as embedding tables store them: the top 16 bits of
// an IEEE fp32 value (sign, 8 exponent bits, 7 mantissa bits), held in a
// uint16_t. Widening to fp32 is exact (the low 16 bits become zero); narrowing
// rounds, either to nearest-even (initialisation, checkpoint conversion) or
// stochastically (optimizer updates: rounded up with probability equal to the
// dropped fraction, so the rounding is unbiased and small updates are not
// lost). Plain integer code: the same bits on every x86 target (AVX2 or
// AVX-512, with or without avx512_bf16) and on other architectures; the
// compiler vectorises the loops. Stateless; thread-safe.
//
//   fp32 bits:  [s | eeeeeeee | mmmmmmm | dddddddd dddddddd]
//   bf16 bits:  [s | eeeeeeee | mmmmmmm]          d = dropped by rounding
#ifndef LEMRT_BASE_BF16_H_
#define LEMRT_BASE_BF16_H_

#include <cstdint>
#include <cstring>
#include <span>

#include "base/random.h"

namespace lemrt::base {

// The fp32 value of bf16 bits `b` (exact).
inline float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// NaN inputs keep their sign and become a quiet NaN (a NaN whose payload
// sits only in the dropped bits would otherwise turn into an infinity).
inline bool IsNanBits(uint32_t bits) { return (bits & 0x7fffffffu) > 0x7f800000u; }
inline uint16_t QuietNanBf16(uint32_t bits) { return static_cast<uint16_t>((bits >> 16) | 0x40); }

// `f` rounded to the nearest bf16, ties to even (the IEEE default; finite
// values beyond the largest bf16 round to infinity).
inline uint16_t FloatToBf16Nearest(float f) {
  const uint32_t bits = FloatBits(f);
  if (IsNanBits(bits)) return QuietNanBf16(bits);
  const uint32_t round = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + round) >> 16);
}

// `f` rounded stochastically with `random16` (16 uniform random bits): the
// magnitude is rounded up when random16 + the dropped 16 bits >= 2^16 (the
// sum carries into the kept bits), so up with probability dropped / 2^16
// (exactly unbiased over the random bits);
// values that are bf16 already stay unchanged. Infinities stay; NaNs as in
// FloatToBf16Nearest.
inline uint16_t FloatToBf16Stochastic(float f, uint16_t random16) {
  const uint32_t bits = FloatBits(f);
  if (IsNanBits(bits)) return QuietNanBf16(bits);
  if ((bits & 0x7fffffffu) == 0x7f800000u) return static_cast<uint16_t>(bits >> 16);
  return static_cast<uint16_t>((bits + random16) >> 16);
}

namespace bf16_internal {

// Sixteen lanes (GCC/Clang vector extensions: one AVX-512 register, two AVX2
// ones, or narrower; the same results on every target). The row loops below
// compute exactly the scalar functions above, branch-free.
typedef uint32_t U32x16 __attribute__((vector_size(64)));
typedef uint16_t U16x16 __attribute__((vector_size(32)));

inline U32x16 Load32(const float* p) {
  U32x16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline void Store16(U32x16 v, uint16_t* p) {
  const U16x16 n = __builtin_convertvector(v, U16x16);
  std::memcpy(p, &n, sizeof(n));
}

// FloatToBf16Nearest of each lane.
inline U32x16 NearestX16(U32x16 bits) {
  const U32x16 nan = (U32x16)((bits & 0x7fffffffu) > 0x7f800000u);
  const U32x16 round = (0x7fffu + ((bits >> 16) & 1u)) & ~nan;
  return ((bits + round) >> 16) | (nan & 0x40u);
}

}  // namespace bf16_internal

// out[i] = Bf16ToFloat(in[i]); the spans have equal sizes.
inline void WidenBf16(std::span<const uint16_t> in, float* out) {
  using namespace bf16_internal;
  const size_t n = in.size();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    U16x16 b;
    std::memcpy(&b, in.data() + i, sizeof(b));
    const U32x16 w = __builtin_convertvector(b, U32x16) << 16;
    std::memcpy(out + i, &w, sizeof(w));
  }
  for (; i < n; ++i) out[i] = Bf16ToFloat(in[i]);
}

// out[i] = FloatToBf16Nearest(in[i]).
inline void NarrowBf16Nearest(std::span<const float> in, uint16_t* out) {
  using namespace bf16_internal;
  const size_t n = in.size();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) Store16(NearestX16(Load32(in.data() + i)), out + i);
  for (; i < n; ++i) out[i] = FloatToBf16Nearest(in[i]);
}

// The keys of the stochastic rounding of updates: a counter-based hash of
// (seed, table, update step) once per table and step, then of that and the
// original row once per row, so the rounding bits depend on neither the
// world size, the placement nor thread timing, and a row costs one Mix64.
inline uint64_t Bf16StepKey(uint64_t seed, int table, int64_t step) {
  return HashKeys({seed, 0x5b16b16bULL, static_cast<uint64_t>(table), static_cast<uint64_t>(step)});
}
inline uint64_t Bf16RowKey(uint64_t step_key, int64_t row) {
  return Mix64(step_key ^ (static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ULL));
}
inline uint64_t Bf16RoundingKey(uint64_t seed, int table, int64_t row, int64_t step) {
  return Bf16RowKey(Bf16StepKey(seed, table, step), row);
}

// A 32-bit integer hash (xorshift-multiply, two rounds: [16 21f0aaad 15
// 735a2d97 15] in the notation of C. Wellons' hash-prospector, the form of
// its "lowbias32" with the lower-bias constants found later by that search;
// lowbias32 itself is [16 7feb352d 15 846ca68b 16]): cheap in vector lanes
// (one 32-bit multiply per round, where 64-bit lanes need three
// instructions).
inline uint32_t Hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x21f0aaadu;
  x ^= x >> 15;
  x *= 0x735a2d97u;
  return x ^ (x >> 15);
}

// The 16 random bits of column `col` under `key`: half (col % 2) of
// Hash32(fold(key) + 0x9e3779b9 x (col / 2 + 1)), fold(key) = the key's two
// 32-bit halves xor-ed, so two columns share one 32-bit hash (16 vector
// lanes cover 32 columns: device/sparsecore/row_kernels_bf16.h).
inline uint32_t Bf16LaneSeed(uint64_t key) {
  return static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32);
}
inline uint16_t Bf16RoundingBits(uint64_t key, int64_t col) {
  const uint32_t h = Hash32(Bf16LaneSeed(key) + 0x9e3779b9u * static_cast<uint32_t>(col / 2 + 1));
  return static_cast<uint16_t>(h >> (16 * (col % 2)));
}

// out[i] = FloatToBf16Stochastic(in[i], Bf16RoundingBits(key, i)): the plain
// reference of the row kernels' vector paths (row_kernels_bf16.h).
inline void NarrowBf16Stochastic(std::span<const float> in, uint64_t key, uint16_t* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = FloatToBf16Stochastic(in[i], Bf16RoundingBits(key, static_cast<int64_t>(i)));
  }
}

}  // namespace lemrt::base

#endif  // LEMRT_BASE_BF16_H_
