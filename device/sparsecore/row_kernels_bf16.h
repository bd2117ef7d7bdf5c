// The row kernels of bf16 tables (TableConfig.dtype BF16; base/bf16.h holds
// the number format, the rounding rule and the plain references):
//   WidenBf16Row:           a bf16 row to fp32 (exact);
//   GatherRowsBf16:         rows of a table widened into a staging buffer;
//   PoolGroupBf16:          one group's partial pooled straight from bf16
//                           rows: out[d] = sum over entries in order of
//                           gain x row[d], each step MulAdd (row_kernels.h),
//                           so the same bits as pooling the widened rows;
//   NarrowBf16RowStochastic: an updated fp32 row back to bf16 with the
//                           stochastic rounding of base::Bf16RoundingBits.
// Each has three paths: AVX-512 (F, BW, VL, with FMA), AVX2 (with FMA) and
// scalar, with the same results bit for bit (the integer parts are exact;
// the vector pooling fuses its multiply-adds, as MulAdd does on every target
// with FMA; the scalar path is MulAdd itself). The template argument picks
// the path; its default, kBestBf16Isa, is the best the build's target has
// (compile time, so the loops inline); the tests run every path the CPU can
// (CpuRunsBf16Isa) against the plain references. Stateless; thread-safe.
#ifndef LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_BF16_H_
#define LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_BF16_H_

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/bf16.h"
#include "device/sparsecore/row_kernels.h"
#include "layout/coo_format.h"

namespace lemrt::device {

enum class Bf16Isa { kScalar, kAvx2, kAvx512 };

constexpr Bf16Isa kBestBf16Isa =
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__FMA__)
    Bf16Isa::kAvx512;
#elif defined(__AVX2__) && defined(__FMA__)
    Bf16Isa::kAvx2;
#else
    Bf16Isa::kScalar;
#endif

// Whether this CPU runs the path `isa` (the scalar path runs everywhere).
inline bool CpuRunsBf16Isa(Bf16Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Bf16Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    case Bf16Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Bf16Isa::kScalar:
      return true;
  }
  return false;
#else
  return isa == Bf16Isa::kScalar;
#endif
}

namespace bf16_kernels {

constexpr uint32_t kGolden32 = 0x9e3779b9u;

// ---- Scalar: the references' own loops (MulAdd rounds as row_kernels.h).

inline void WidenScalar(const uint16_t* in, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = base::Bf16ToFloat(in[i]);
}

// Columns [begin, n) of the row (begin even): one Hash32 per column pair.
inline void NarrowScalar(const float* in, int64_t begin, int64_t n, uint64_t key, uint16_t* out) {
  const uint32_t seed = base::Bf16LaneSeed(key);
  for (int64_t i = begin; i < n; i += 2) {
    const uint32_t h = base::Hash32(seed + kGolden32 * static_cast<uint32_t>(i / 2 + 1));
    out[i] = base::FloatToBf16Stochastic(in[i], static_cast<uint16_t>(h));
    if (i + 1 < n)
      out[i + 1] = base::FloatToBf16Stochastic(in[i + 1], static_cast<uint16_t>(h >> 16));
  }
}

inline void PoolScalar(int dim, const layout::CooEntry* entries, const int32_t* entry_unique,
                       int64_t n, const uint16_t* table, const int64_t* rows, float* out) {
  std::memset(out, 0, sizeof(float) * dim);
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* row = table + rows[entry_unique[j]] * dim;
    const float gain = entries[j].gain;
    for (int d = 0; d < dim; ++d) {
      out[d] = row_kernels_internal::MulAdd(gain, base::Bf16ToFloat(row[d]), out[d]);
    }
  }
}

#if defined(__x86_64__)

// ---- AVX2 (eight fp32 lanes).
#define LEMRT_AVX2 __attribute__((target("avx2,fma")))

LEMRT_AVX2 inline __m256 Widen8(const uint16_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}

LEMRT_AVX2 inline void WidenAvx2(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, Widen8(in + i));
  for (; i < n; ++i) out[i] = base::Bf16ToFloat(in[i]);
}

LEMRT_AVX2 inline __m256i Hash32x8(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x21f0aaad));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x735a2d97));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
}

// base::FloatToBf16Stochastic of eight lanes (results in the low 16 bits).
LEMRT_AVX2 inline __m256i Stochastic8(__m256i bits, __m256i random16) {
  const __m256i expo = _mm256_set1_epi32(0x7f800000);
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(bits, expo), expo);
  const __m256i zero_mantissa = _mm256_cmpeq_epi32(
      _mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_setzero_si256());
  const __m256i nan = _mm256_andnot_si256(zero_mantissa, special);
  const __m256i sum = _mm256_add_epi32(bits, _mm256_andnot_si256(special, random16));
  return _mm256_or_si256(_mm256_srli_epi32(sum, 16),
                         _mm256_and_si256(nan, _mm256_set1_epi32(0x40)));
}

LEMRT_AVX2 inline void NarrowAvx2(const float* in, int64_t n, uint64_t key, uint16_t* out) {
  // Lane k of ctr: the hash input of column pair i / 2 + k.
  const __m256i golden = _mm256_set1_epi32(static_cast<int>(kGolden32));
  __m256i ctr =
      _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base::Bf16LaneSeed(key))),
                       _mm256_mullo_epi32(_mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8), golden));
  const __m256i step = _mm256_mullo_epi32(_mm256_set1_epi32(8), golden);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16, ctr = _mm256_add_epi32(ctr, step)) {
    // The hashes as 16-bit words are the columns' random bits in order.
    const __m256i h = Hash32x8(ctr);
    const __m256i r0 = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(h));
    const __m256i r1 = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1));
    const __m256i a = Stochastic8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)), r0);
    const __m256i b =
        Stochastic8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8)), r1);
    // packus interleaves 128-bit halves: a0-3 b0-3 a4-7 b4-7 -> a b.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  NarrowScalar(in, i, n, key, out);
}

template <int kChunks>
LEMRT_AVX2 inline void PoolFixedAvx2(const layout::CooEntry* entries, const int32_t* entry_unique,
                                     int64_t n, const uint16_t* table, const int64_t* rows,
                                     float* out) {
  constexpr int kDim = 8 * kChunks;
  __m256 acc[kChunks];
  for (int c = 0; c < kChunks; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* row = table + rows[entry_unique[j]] * kDim;
    const __m256 g = _mm256_set1_ps(entries[j].gain);
    for (int c = 0; c < kChunks; ++c) acc[c] = _mm256_fmadd_ps(g, Widen8(row + 8 * c), acc[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

LEMRT_AVX2 inline void PoolAvx2(int dim, const layout::CooEntry* entries,
                                const int32_t* entry_unique, int64_t n, const uint16_t* table,
                                const int64_t* rows, float* out) {
  switch (dim) {
    case 16:
      return PoolFixedAvx2<2>(entries, entry_unique, n, table, rows, out);
    case 32:
      return PoolFixedAvx2<4>(entries, entry_unique, n, table, rows, out);
    case 64:
      return PoolFixedAvx2<8>(entries, entry_unique, n, table, rows, out);
    default:
      break;
  }
  // Eight columns at a time over all entries, then the columns left.
  int d = 0;
  for (; d + 8 <= dim; d += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
      const __m256 g = _mm256_set1_ps(entries[j].gain);
      acc = _mm256_fmadd_ps(g, Widen8(table + rows[entry_unique[j]] * dim + d), acc);
    }
    _mm256_storeu_ps(out + d, acc);
  }
  for (; d < dim; ++d) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      acc = __builtin_fmaf(entries[j].gain,
                           base::Bf16ToFloat(table[rows[entry_unique[j]] * dim + d]), acc);
    }
    out[d] = acc;
  }
}

#undef LEMRT_AVX2

// ---- AVX-512 (sixteen fp32 lanes; masks for the columns left over). The
// shifts and conversions are spelled as their zero-masking forms with every
// lane selected (the same instructions): GCC 12's unmasked forms start from
// an "undefined" register that -Wmaybe-uninitialized reports.
#define LEMRT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
constexpr __mmask16 kAll16 = 0xffff;

LEMRT_AVX512 inline __m512 Widen16(const uint16_t* p) {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll16, _mm512_maskz_cvtepu16_epi32(kAll16, b), 16));
}

// The first `m`-masked columns of 16 at p (the others 0).
LEMRT_AVX512 inline __m512 Widen16Masked(const uint16_t* p, __mmask16 m) {
  const __m256i b = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll16, _mm512_maskz_cvtepu16_epi32(kAll16, b), 16));
}

LEMRT_AVX512 inline __mmask16 TailMask(int64_t left) {
  return static_cast<__mmask16>((1u << left) - 1u);
}

LEMRT_AVX512 inline void WidenAvx512(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, Widen16(in + i));
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m, Widen16Masked(in + i, m));
  }
}

LEMRT_AVX512 inline __m512i Hash32x16(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_maskz_srli_epi32(kAll16, x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x21f0aaad));
  x = _mm512_xor_si512(x, _mm512_maskz_srli_epi32(kAll16, x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x735a2d97));
  return _mm512_xor_si512(x, _mm512_maskz_srli_epi32(kAll16, x, 15));
}

// base::FloatToBf16Stochastic of sixteen lanes, narrowed to 16 bits each.
LEMRT_AVX512 inline __m256i Stochastic16(__m512i bits, __m512i random16) {
  const __m512i expo = _mm512_set1_epi32(0x7f800000);
  const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, expo), expo);
  const __mmask16 nan = _mm512_mask_test_epi32_mask(special, bits, _mm512_set1_epi32(0x007fffff));
  const __m512i sum = _mm512_mask_add_epi32(bits, static_cast<__mmask16>(~special), bits, random16);
  __m512i r = _mm512_maskz_srli_epi32(kAll16, sum, 16);
  r = _mm512_mask_or_epi32(r, nan, r, _mm512_set1_epi32(0x40));
  return _mm512_maskz_cvtepi32_epi16(kAll16, r);
}

// Columns [0, 16) of `in` rounded with `random16` into out.
LEMRT_AVX512 inline void NarrowStore16(const float* in, __m512i random16, uint16_t* out) {
  const __m256i r = Stochastic16(_mm512_loadu_si512(in), random16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), r);
}

LEMRT_AVX512 inline void NarrowAvx512(const float* in, int64_t n, uint64_t key, uint16_t* out) {
  const __m512i golden = _mm512_set1_epi32(static_cast<int>(kGolden32));
  __m512i ctr = _mm512_add_epi32(
      _mm512_set1_epi32(static_cast<int>(base::Bf16LaneSeed(key))),
      _mm512_mullo_epi32(_mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                         golden));
  const __m512i step = _mm512_mullo_epi32(_mm512_set1_epi32(16), golden);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32, ctr = _mm512_add_epi32(ctr, step)) {
    // The hashes as 16-bit words are the columns' random bits in order.
    const __m512i h = Hash32x16(ctr);
    NarrowStore16(in + i,
                  _mm512_maskz_cvtepu16_epi32(kAll16, _mm512_maskz_extracti64x4_epi64(0xff, h, 0)),
                  out + i);
    NarrowStore16(in + i + 16,
                  _mm512_maskz_cvtepu16_epi32(kAll16, _mm512_maskz_extracti64x4_epi64(0xff, h, 1)),
                  out + i + 16);
  }
  if (i + 16 <= n) {
    NarrowStore16(in + i,
                  _mm512_maskz_cvtepu16_epi32(
                      kAll16, _mm512_maskz_extracti64x4_epi64(0xff, Hash32x16(ctr), 0)),
                  out + i);
    i += 16;
  }
  NarrowScalar(in, i, n, key, out);
}

template <int kChunks>
LEMRT_AVX512 inline void PoolFixedAvx512(const layout::CooEntry* entries,
                                         const int32_t* entry_unique, int64_t n,
                                         const uint16_t* table, const int64_t* rows, float* out) {
  constexpr int kDim = 16 * kChunks;
  __m512 acc[kChunks];
  for (int c = 0; c < kChunks; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* row = table + rows[entry_unique[j]] * kDim;
    const __m512 g = _mm512_set1_ps(entries[j].gain);
    for (int c = 0; c < kChunks; ++c) acc[c] = _mm512_fmadd_ps(g, Widen16(row + 16 * c), acc[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm512_storeu_ps(out + 16 * c, acc[c]);
}

LEMRT_AVX512 inline void PoolAvx512(int dim, const layout::CooEntry* entries,
                                    const int32_t* entry_unique, int64_t n, const uint16_t* table,
                                    const int64_t* rows, float* out) {
  switch (dim) {
    case 16:
      return PoolFixedAvx512<1>(entries, entry_unique, n, table, rows, out);
    case 32:
      return PoolFixedAvx512<2>(entries, entry_unique, n, table, rows, out);
    case 64:
      return PoolFixedAvx512<4>(entries, entry_unique, n, table, rows, out);
    case 128:
      return PoolFixedAvx512<8>(entries, entry_unique, n, table, rows, out);
    default:
      break;
  }
  // Sixteen columns at a time over all entries (the last ones masked).
  for (int d = 0; d < dim; d += 16) {
    const __mmask16 m = TailMask(dim - d < 16 ? dim - d : 16);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
      const __m512 g = _mm512_set1_ps(entries[j].gain);
      acc = _mm512_fmadd_ps(g, Widen16Masked(table + rows[entry_unique[j]] * dim + d, m), acc);
    }
    _mm512_mask_storeu_ps(out + d, m, acc);
  }
}

#undef LEMRT_AVX512

#endif  // defined(__x86_64__)

}  // namespace bf16_kernels

// out[0..n) = base::Bf16ToFloat(in[i]).
template <Bf16Isa kIsa = kBestBf16Isa>
inline void WidenBf16Row(const uint16_t* in, int64_t n, float* out) {
#if defined(__x86_64__)
  if constexpr (kIsa == Bf16Isa::kAvx512) return bf16_kernels::WidenAvx512(in, n, out);
  if constexpr (kIsa == Bf16Isa::kAvx2) return bf16_kernels::WidenAvx2(in, n, out);
#endif
  bf16_kernels::WidenScalar(in, n, out);
}

// out[0..n) = base::NarrowBf16Stochastic of in[0..n) under `key`.
template <Bf16Isa kIsa = kBestBf16Isa>
inline void NarrowBf16RowStochastic(const float* in, int64_t n, uint64_t key, uint16_t* out) {
#if defined(__x86_64__)
  if constexpr (kIsa == Bf16Isa::kAvx512) return bf16_kernels::NarrowAvx512(in, n, key, out);
  if constexpr (kIsa == Bf16Isa::kAvx2) return bf16_kernels::NarrowAvx2(in, n, key, out);
#endif
  bf16_kernels::NarrowScalar(in, 0, n, key, out);
}

// PoolGroup (row_kernels.h) over bf16 rows: out[0..dim) = sum over j in
// [0, n) in order of entries[j].gain x (widened row rows[entry_unique[j]]
// of `table`, dim elements a row), the same bits as PoolGroup over the
// widened rows.
template <Bf16Isa kIsa = kBestBf16Isa>
inline void PoolGroupBf16(int dim, const layout::CooEntry* entries, const int32_t* entry_unique,
                          int64_t n, const uint16_t* table, const int64_t* rows, float* out) {
#if defined(__x86_64__) && defined(__FMA__)
  if constexpr (kIsa == Bf16Isa::kAvx512) {
    return bf16_kernels::PoolAvx512(dim, entries, entry_unique, n, table, rows, out);
  }
  if constexpr (kIsa == Bf16Isa::kAvx2) {
    return bf16_kernels::PoolAvx2(dim, entries, entry_unique, n, table, rows, out);
  }
#endif
  bf16_kernels::PoolScalar(dim, entries, entry_unique, n, table, rows, out);
}

// GatherRows (row_kernels.h) for a bf16 table (dim uint16 a row): each row
// widened to fp32 (exact) into out, out + dim, ...; prefetches as many rows
// ahead as an fp32 row of twice the dim would.
inline void GatherRowsBf16(int dim, const uint16_t* table, const int64_t* local_rows, int64_t n,
                           float* out) {
  const int ahead = PrefetchRows((dim + 1) / 2);
  const int64_t row_bytes = int64_t{dim} * 2;
  for (int64_t i = 0; i < n; ++i) {
    if (i + ahead < n) PrefetchBytes(table + local_rows[i + ahead] * dim, row_bytes);
    WidenBf16Row(table + local_rows[i] * dim, dim, out + i * dim);
  }
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_BF16_H_
