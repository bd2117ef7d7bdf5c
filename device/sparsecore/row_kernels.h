// The SparseCore's per-row inner loops: gathering table rows into the tile
// staging buffer (with software prefetch a few rows ahead), pooling gathered
// rows into a group's partial vector and scattering a group's gradient into
// the per-id accumulators. Each has fixed-dim instantiations (8, 16, 32, 64
// and 128 floats) that the compiler unrolls and vectorises, and a generic
// loop for other dims; every variant performs the same floating-point
// operations in the same order as the plain loop
//   out[d] = 0; for each entry: out[d] += gain * row[d]
// with the multiply-add fused where the target has FMA (as the compiler
// contracts that loop there), so results are bit-identical whichever runs.
// Stateless; thread-safe.
#ifndef LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_H_
#define LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_H_

#include <cstdint>
#include <cstring>

#if defined(__SSE__)
#include <immintrin.h>
#endif

#include "layout/coo_format.h"

namespace lemrt::device {

// Rows prefetched ahead of the one being read: about 4 KiB in flight, enough
// misses to cover DRAM latency at full bandwidth, few enough that the lines
// are still in L1/L2 when read (4 to 64 rows).
constexpr int PrefetchRows(int dim) {
  const int rows = 4096 / (dim * static_cast<int>(sizeof(float)));
  return rows < 4 ? 4 : (rows > 64 ? 64 : rows);
}

// Issues a read (or, with `for_write`, a write) prefetch for each 64-byte
// line of the `dim`-float row at `row`.
inline void PrefetchRow(const float* row, int dim, bool for_write = false) {
  const char* p = reinterpret_cast<const char*>(row);
  const int bytes = dim * static_cast<int>(sizeof(float));
  for (int b = 0; b < bytes; b += 64) {
    if (for_write) {
      __builtin_prefetch(p + b, 1, 3);
    } else {
      __builtin_prefetch(p + b, 0, 3);
    }
  }
}

// Issues a prefetch for each 64-byte line of the `bytes` bytes at `p`.
inline void PrefetchBytes(const void* p, int64_t bytes, bool for_write = false) {
  const char* c = static_cast<const char*>(p);
  for (int64_t b = 0; b < bytes; b += 64) {
    if (for_write) {
      __builtin_prefetch(c + b, 1, 3);
    } else {
      __builtin_prefetch(c + b, 0, 3);
    }
  }
}

// An entry's part in its id's gradient accumulator (ScatterGroup): it adds
// to the accumulator, starts it (the id's first entry in entry order), or
// is the id's only entry (the accumulator is then not used at all: the id's
// gradient is ScaleRow of the entry's group gradient).
enum EntryRole : uint8_t { kAddEntry = 0, kFirstEntry = 1, kOnlyEntry = 2 };

namespace row_kernels_internal {

// acc + gain * x, fused (one rounding) where the target has FMA: what the
// compiler's contraction makes of the plain loop there, spelled out so that
// every variant rounds alike however it is unrolled or vectorised.
inline float MulAdd(float gain, float x, float acc) {
#ifdef __FMA__
  return __builtin_fmaf(gain, x, acc);
#else
  return acc + gain * x;
#endif
}

template <int kDim>
void GatherRowsFixed(const float* table, const int64_t* local_rows, int64_t n, float* out) {
  constexpr int kAhead = PrefetchRows(kDim);
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchRow(table + local_rows[i + kAhead] * kDim, kDim);
    std::memcpy(out + i * kDim, table + local_rows[i] * kDim, sizeof(float) * kDim);
  }
}

template <int kDim>
void PoolGroupFixed(const layout::CooEntry* entries, const int32_t* entry_unique, int64_t n,
                    const float* rows, const int64_t* row_offsets, int64_t stride, float* out) {
  float acc[kDim] = {};
  for (int64_t j = 0; j < n; ++j) {
    const float* row = rows + row_offsets[entry_unique[j]] * stride;
    const float gain = entries[j].gain;
    for (int d = 0; d < kDim; ++d) acc[d] = MulAdd(gain, row[d], acc[d]);
  }
  std::memcpy(out, acc, sizeof(acc));
}

template <int kDim>
void ScatterGroupFixed(const layout::CooEntry* entries, const int32_t* entry_unique,
                       const uint8_t* role, int64_t n, const int64_t* unique_offsets,
                       const float* grad, float* acc) {
  float g[kDim];
  std::memcpy(g, grad, sizeof(g));
  for (int64_t j = 0; j < n; ++j) {
    if (role[j] == kOnlyEntry) continue;
    float* a = acc + unique_offsets[entry_unique[j]];
    const float gain = entries[j].gain;
    if (role[j] == kFirstEntry) {
      for (int d = 0; d < kDim; ++d) a[d] = MulAdd(gain, g[d], 0.0f);
    } else {
      for (int d = 0; d < kDim; ++d) a[d] = MulAdd(gain, g[d], a[d]);
    }
  }
}

// out[0..kDim) = MulAdd(gain, src[d], 0.0f), stored as vectors straight
// from registers (non-temporal stores with kStream; `out` then 64-byte
// aligned, see CanStreamRow). Where MulAdd does not fuse, or kDim is not a
// multiple of the vector width, through a local array instead: `out` may
// alias `src` for all the compiler knows, and the loop straight into `out`
// stays scalar (64 stores a row). The local array is the slower path
// (docs/performance.md, "SparseCore kernels").
template <int kDim, bool kStream = false>
inline void ScaleRowFixed(float gain, const float* src, float* out) {
#if defined(__AVX512F__) && defined(__FMA__)
  if constexpr (kDim % 16 == 0) {
    const __m512 g = _mm512_set1_ps(gain);
    const __m512 zero = _mm512_setzero_ps();
    for (int d = 0; d < kDim; d += 16) {
      const __m512 v = _mm512_fmadd_ps(g, _mm512_loadu_ps(src + d), zero);
      if constexpr (kStream) {
        _mm512_stream_ps(out + d, v);
      } else {
        _mm512_storeu_ps(out + d, v);
      }
    }
    return;
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (kDim % 8 == 0) {
    const __m256 g = _mm256_set1_ps(gain);
    const __m256 zero = _mm256_setzero_ps();
    for (int d = 0; d < kDim; d += 8) {
      const __m256 v = _mm256_fmadd_ps(g, _mm256_loadu_ps(src + d), zero);
      if constexpr (kStream) {
        _mm256_stream_ps(out + d, v);
      } else {
        _mm256_storeu_ps(out + d, v);
      }
    }
    return;
  }
#endif
  float o[kDim];
  for (int d = 0; d < kDim; ++d) o[d] = MulAdd(gain, src[d], 0.0f);
  std::memcpy(out, o, sizeof(o));
}

// A run of one-entry groups of one table, from entries[0] (which starts a
// one-entry group) up to the first entry of another table or of a group with
// several entries, or to n: writes gain x row to out, out + kDim, ... and
// returns the entries consumed. Rows are table + rows[entry_unique[j]] x kDim;
// the rows PrefetchRows(kDim) entries ahead are prefetched when they are of
// the same table.
template <int kDim, bool kStream>
int64_t PoolSingleRunFixed(const layout::CooEntry* entries, int64_t n, const int32_t* entry_unique,
                           const int64_t* rows, const float* table, float* out) {
  constexpr int kAhead = PrefetchRows(kDim);
  const int32_t t = entries[0].table;
  int64_t i = 0;
  while (true) {
    if (i + kAhead < n && entries[i + kAhead].table == t) {
      PrefetchRow(table + rows[entry_unique[i + kAhead]] * kDim, kDim);
    }
    ScaleRowFixed<kDim, kStream>(entries[i].gain, table + rows[entry_unique[i]] * kDim, out);
    out += kDim;
    ++i;
    if (i == n || entries[i].table != t) break;
    if (i + 1 < n && layout::SameGroup(entries[i], entries[i + 1])) break;
  }
  return i;
}

}  // namespace row_kernels_internal

// Copies rows local_rows[0..n) of `table` (dim floats a row, row-major) to
// out, out + dim, ...; prefetches PrefetchRows(dim) rows ahead.
inline void GatherRows(int dim, const float* table, const int64_t* local_rows, int64_t n,
                       float* out) {
  using namespace row_kernels_internal;
  switch (dim) {
    case 8: return GatherRowsFixed<8>(table, local_rows, n, out);
    case 16: return GatherRowsFixed<16>(table, local_rows, n, out);
    case 32: return GatherRowsFixed<32>(table, local_rows, n, out);
    case 64: return GatherRowsFixed<64>(table, local_rows, n, out);
    case 128: return GatherRowsFixed<128>(table, local_rows, n, out);
    default: break;
  }
  const int ahead = PrefetchRows(dim);
  for (int64_t i = 0; i < n; ++i) {
    if (i + ahead < n) PrefetchRow(table + local_rows[i + ahead] * dim, dim);
    std::memcpy(out + i * dim, table + local_rows[i] * dim, sizeof(float) * dim);
  }
}

// One group's partial: out[0..dim) = sum over j in [0, n) in order of
// entries[j].gain * (entry j's row), where entry j's row starts at
// rows + row_offsets[entry_unique[j]] * stride: the staging buffer with its
// float offsets (stride 1), or a table with local row numbers (stride dim).
__attribute__((always_inline)) inline void PoolGroup(int dim, const layout::CooEntry* entries,
                                                     const int32_t* entry_unique, int64_t n,
                                                     const float* rows, const int64_t* row_offsets,
                                                     int64_t stride, float* out) {
  using namespace row_kernels_internal;
  const auto* e = entries;
  const auto* u = entry_unique;
  switch (dim) {
    case 8: return PoolGroupFixed<8>(e, u, n, rows, row_offsets, stride, out);
    case 16: return PoolGroupFixed<16>(e, u, n, rows, row_offsets, stride, out);
    case 32: return PoolGroupFixed<32>(e, u, n, rows, row_offsets, stride, out);
    case 64: return PoolGroupFixed<64>(e, u, n, rows, row_offsets, stride, out);
    case 128: return PoolGroupFixed<128>(e, u, n, rows, row_offsets, stride, out);
    default: break;
  }
  std::memset(out, 0, sizeof(float) * dim);
  for (int64_t j = 0; j < n; ++j) {
    const float* row = rows + row_offsets[entry_unique[j]] * stride;
    const float gain = entries[j].gain;
    for (int d = 0; d < dim; ++d) out[d] = MulAdd(gain, row[d], out[d]);
  }
}

// The transpose of PoolGroup: for j in [0, n) in order,
// acc[unique_offsets[entry_unique[j]] + d] += entries[j].gain * grad[d],
// by role[j] (EntryRole): a kFirstEntry starts its accumulator (adds to 0
// instead of the old value, which need not be initialised: the result is
// that of clearing it first, bit for bit), a kOnlyEntry is skipped.
inline void ScatterGroup(int dim, const layout::CooEntry* entries, const int32_t* entry_unique,
                         const uint8_t* role, int64_t n, const int64_t* unique_offsets,
                         const float* grad, float* acc) {
  using namespace row_kernels_internal;
  const auto* e = entries;
  const auto* u = entry_unique;
  switch (dim) {
    case 8: return ScatterGroupFixed<8>(e, u, role, n, unique_offsets, grad, acc);
    case 16: return ScatterGroupFixed<16>(e, u, role, n, unique_offsets, grad, acc);
    case 32: return ScatterGroupFixed<32>(e, u, role, n, unique_offsets, grad, acc);
    case 64: return ScatterGroupFixed<64>(e, u, role, n, unique_offsets, grad, acc);
    case 128: return ScatterGroupFixed<128>(e, u, role, n, unique_offsets, grad, acc);
    default: break;
  }
  for (int64_t j = 0; j < n; ++j) {
    if (role[j] == kOnlyEntry) continue;
    float* a = acc + unique_offsets[entry_unique[j]];
    const float gain = entries[j].gain;
    const bool start = role[j] == kFirstEntry;
    for (int d = 0; d < dim; ++d) a[d] = MulAdd(gain, grad[d], start ? 0.0f : a[d]);
  }
}

// out[0..dim) = gain * src[d] added to 0: the accumulator ScatterGroup would
// build for an id whose only entry has this gain and group gradient `src`.
inline void ScaleRow(int dim, float gain, const float* src, float* out) {
  using namespace row_kernels_internal;
  switch (dim) {
    case 8: return ScaleRowFixed<8>(gain, src, out);
    case 16: return ScaleRowFixed<16>(gain, src, out);
    case 32: return ScaleRowFixed<32>(gain, src, out);
    case 64: return ScaleRowFixed<64>(gain, src, out);
    case 128: return ScaleRowFixed<128>(gain, src, out);
    default: break;
  }
  for (int d = 0; d < dim; ++d) out[d] = MulAdd(gain, src[d], 0.0f);
}

// Whether PoolSingleRun may write a dim-float row at `out` with
// non-temporal stores: the fixed dims 16, 32, 64 and 128 (whole 64-byte
// lines) into 64-byte aligned memory on a target with 256- or 512-bit FMA
// (not narrower: docs/performance.md, "SparseCore kernels").
inline bool CanStreamRow(const float* out, int dim) {
#if (defined(__AVX512F__) || defined(__AVX2__)) && defined(__FMA__)
  return (reinterpret_cast<uintptr_t>(out) & 63) == 0 &&
         (dim == 16 || dim == 32 || dim == 64 || dim == 128);
#else
  return false;
#endif
}

// Pools a run of one-entry groups (PoolSingleRunFixed: entries[0] starts a
// one-entry group of the table at `table`, whose local rows are
// rows[entry_unique[j]]) for the fixed dims; with `stream` and
// CanStreamRow(out, dim), with non-temporal stores: for outputs far larger
// than the caches, which a normal store would first read from memory (a
// third more traffic); they are weakly ordered: call StreamFence() before
// another thread reads `out`.
// Returns the entries consumed, 0 for other dims (nothing written: pool
// them one group at a time).
inline int64_t PoolSingleRun(int dim, bool stream, const layout::CooEntry* entries, int64_t n,
                             const int32_t* entry_unique, const int64_t* rows, const float* table,
                             float* out) {
  using namespace row_kernels_internal;
  const bool nt = stream && CanStreamRow(out, dim);
  const auto* e = entries;
  const auto* u = entry_unique;
  switch (dim) {
    case 8: return PoolSingleRunFixed<8, false>(e, n, u, rows, table, out);
    case 16:
      return nt ? PoolSingleRunFixed<16, true>(e, n, u, rows, table, out)
                : PoolSingleRunFixed<16, false>(e, n, u, rows, table, out);
    case 32:
      return nt ? PoolSingleRunFixed<32, true>(e, n, u, rows, table, out)
                : PoolSingleRunFixed<32, false>(e, n, u, rows, table, out);
    case 64:
      return nt ? PoolSingleRunFixed<64, true>(e, n, u, rows, table, out)
                : PoolSingleRunFixed<64, false>(e, n, u, rows, table, out);
    case 128:
      return nt ? PoolSingleRunFixed<128, true>(e, n, u, rows, table, out)
                : PoolSingleRunFixed<128, false>(e, n, u, rows, table, out);
    default: return 0;
  }
}

// Orders the non-temporal stores issued so far before later stores.
inline void StreamFence() {
#ifdef __SSE__
  _mm_sfence();
#endif
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_ROW_KERNELS_H_
