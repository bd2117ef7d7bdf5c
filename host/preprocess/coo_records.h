// Building blocks of CooBuilder's passes (host/preprocess/coo.cc), internal to it:
// division by the number of SparseCores N, the staging records that carry
// one id to its segment, and the per-destination cache-line buffers that
// write them out with non-temporal stores. Plain values; thread-compatible.
#ifndef LEMRT_HOST_PREPROCESS_COO_RECORDS_H_
#define LEMRT_HOST_PREPROCESS_COO_RECORDS_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/huge_pages.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lemrt::host::coo_internal {

// Division by N three ways. Quotient(col) is the id's row in its
// SparseCore's shard (col / N), Remainder(col) its SparseCore before the
// table's rotation (col % N).
struct Pow2Divider {  // N a power of two: shift and mask
  int64_t n;
  int shift;
  int64_t Quotient(int64_t col) const { return col >> shift; }
  int64_t Remainder(int64_t col) const { return col & (n - 1); }
};
struct ReciprocalDivider {  // ids below 2^52: a double reciprocal, corrected
  int64_t n;
  double inverse;
  int64_t Quotient(int64_t col) const {
    // col is exact in a double, so the estimate is off by at most one.
    int64_t q = static_cast<int64_t>(static_cast<double>(col) * inverse);
    const int64_t r = col - q * n;
    if (r < 0) --q;
    if (r >= n) ++q;
    return q;
  }
  int64_t Remainder(int64_t col) const { return col - Quotient(col) * n; }
};
struct PlainDivider {  // any ids: the division instruction
  int64_t n;
  int64_t Quotient(int64_t col) const { return col / n; }
  int64_t Remainder(int64_t col) const { return col % n; }
};

// Destination SparseCore of `col` for a table rotated by sc_shift in [0, N).
template <class Div>
int Destination(const Div& div, int64_t col, int32_t sc_shift) {
  const int64_t d = div.Remainder(col) + sc_shift;
  return static_cast<int>(d >= div.n ? d - div.n : d);
}

// A staging record: one id (col) of one group (the feature f and the row
// within the source SparseCore's samples, group = f << row_bits | row).
//
// PackedCodec: one 64-bit word, group in the high bits:
//   [ group (64 - col_bits bits) | col (col_bits = bit width of vocab - 1) ]
// so records order as (group, col); used when the bits fit.
// WideCodec: 16 bytes {col, group}, for everything else.
// WeightedCodec<either> (below) adds a weight.
struct PackedCodec {
  using Record = uint64_t;
  static constexpr int kPerLine = 8;  // records per 64-byte line
  int col_bits;
  Record Make(uint64_t group, int64_t col) const {
    return group << col_bits | static_cast<uint64_t>(col);
  }
  uint64_t Group(Record r) const { return r >> col_bits; }
  int64_t Col(Record r) const {
    return static_cast<int64_t>(r & ((uint64_t{1} << col_bits) - 1));
  }
  static bool Less(Record a, Record b) { return a < b; }  // by (group, col)
  static bool Equal(Record a, Record b) { return a == b; }
};
struct WideCodec {
  struct Record {
    int64_t col;
    uint64_t group;
  };
  static constexpr int kPerLine = 4;
  Record Make(uint64_t group, int64_t col) const { return {col, group}; }
  uint64_t Group(Record r) const { return r.group; }
  int64_t Col(Record r) const { return r.col; }
  static bool Less(Record a, Record b) {
    return a.group < b.group || (a.group == b.group && a.col < b.col);
  }
  static bool Equal(Record a, Record b) { return a.group == b.group && a.col == b.col; }
};

// A staging record of a build with weighted features: Base's record and the
// id's weight (1 for a feature without weights). Ordered and compared by
// Base's record alone; the sorts that order them are stable, so one id's
// duplicates in a sample keep their input order (host/preprocess/coo.cc sums their
// weights in it). 16 bytes over PackedCodec, 32 over WideCodec.
template <class Base>
struct WeightedCodec {
  struct Record {  // padded to divide a line, not over-aligned (std::stable_sort)
    typename Base::Record key;
    float weight;
    uint32_t padding[sizeof(typename Base::Record) == 8 ? 1 : 3];
  };
  static_assert(sizeof(Record) == 16 || sizeof(Record) == 32);
  static constexpr int kPerLine = 64 / static_cast<int>(sizeof(Record));
  Base base;
  Record Make(uint64_t group, int64_t col, float weight) const {
    return {base.Make(group, col), weight, {}};
  }
  uint64_t Group(Record r) const { return base.Group(r.key); }
  int64_t Col(Record r) const { return base.Col(r.key); }
  static float Weight(Record r) { return r.weight; }
  static bool Less(Record a, Record b) { return Base::Less(a.key, b.key); }
  static bool Equal(Record a, Record b) { return Base::Equal(a.key, b.key); }
};

// Whether a codec's records carry weights.
template <class Codec>
inline constexpr bool kWeighted = false;
template <class Base>
inline constexpr bool kWeighted<WeightedCodec<Base>> = true;

// Stores one 64-byte line at `dst` (64-byte aligned) without reading it into
// the caches first (non-temporal: AVX-512, AVX or SSE2 stores by what the
// build targets; a plain copy elsewhere).
inline void StreamLine(void* dst, const void* src) {
#if defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_load_si512(src));
#elif defined(__AVX__)
  const __m256i* s = static_cast<const __m256i*>(src);
  __m256i* d = static_cast<__m256i*>(dst);
  _mm256_stream_si256(d, _mm256_load_si256(s));
  _mm256_stream_si256(d + 1, _mm256_load_si256(s + 1));
#elif defined(__SSE2__)
  const __m128i* s = static_cast<const __m128i*>(src);
  __m128i* d = static_cast<__m128i*>(dst);
  for (int i = 0; i < 4; ++i) _mm_stream_si128(d + i, _mm_load_si128(s + i));
#else
  std::memcpy(dst, src, 64);
#endif
}

// Orders the non-temporal stores before what follows (they are weakly
// ordered); a no-op without them.
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// One destination's write-combining line: records gather here and leave a
// full, aligned line at a time.
template <class Codec>
struct alignas(64) LineBuffer {
  typename Codec::Record records[Codec::kPerLine];
};
static_assert(sizeof(LineBuffer<PackedCodec>) == 64 && sizeof(LineBuffer<WideCodec>) == 64);
static_assert(sizeof(LineBuffer<WeightedCodec<PackedCodec>>) == 64 &&
              sizeof(LineBuffer<WeightedCodec<WideCodec>>) == 64);

// A growable 64-byte aligned buffer of trivially copyable T (contents are not
// kept when it grows, by at least half); from 2 MiB up 2 MiB aligned with huge
// pages requested (base::AllocateLineAligned), as its records are written at
// many places at once.
template <typename T>
class AlignedScratch {
 public:
  T* Get(size_t n) {
    if (n > capacity_) {  // geometric growth: few reallocations as n creeps up
      const size_t grown = std::max(n, capacity_ + capacity_ / 2);
      data_.reset(static_cast<T*>(base::AllocateLineAligned(grown * sizeof(T))));
      capacity_ = grown;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t capacity_ = 0;
};

}  // namespace lemrt::host::coo_internal

#endif  // LEMRT_HOST_PREPROCESS_COO_RECORDS_H_
