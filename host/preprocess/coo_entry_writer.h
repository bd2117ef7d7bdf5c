// How CooBuilder's expansion (host/preprocess/coo.cc) writes its entries,
// internal to it: EntryWriter puts entries one after another at out[0, ...),
// with plain stores or, for an output far larger than the caches, through a
// small line-aligned buffer that leaves as whole lines with non-temporal
// stores (no read of each line before its write); WriteSumRun expands a
// run of sorted packed records of an unweighted SUM feature, 8 records at a
// time with AVX-512 where the build targets it (the scalar loop otherwise
// and for the records next to a duplicate). Both write the same bytes as
// the plain scalar loop. Plain values; thread-compatible.
#ifndef LEMRT_HOST_PREPROCESS_COO_ENTRY_WRITER_H_
#define LEMRT_HOST_PREPROCESS_COO_ENTRY_WRITER_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "host/preprocess/coo_records.h"
#include "layout/coo_format.h"

namespace lemrt::host::coo_internal {

// Entries go to out[k] for the k-th put. Streaming off: plain stores.
// Streaming on: plain stores up to the first 64-byte boundary of the output,
// then through `buffer` (kBuffered entries, 64-byte aligned, 24 whole lines)
// that leaves with StreamLine each time it fills; Finish writes the partial
// buffer with plain stores and fences the streamed ones. A small value meant
// to be copied into a local for a loop and back (its fields then stay in
// registers).
class EntryWriter {
 public:
  static constexpr int kBuffered = 64;  // 1,536 bytes = 24 lines
  // The buffer's size in entries: kBuffered plus room for one Put8 past it.
  static constexpr int kBufferEntries = kBuffered + 8;
  static_assert(kBuffered * sizeof(layout::CooEntry) % 64 == 0);

  // `buffer`: null (plain stores) or kBufferEntries entries, 64-byte
  // aligned, for this writer alone.
  EntryWriter(layout::CooEntry* out, layout::CooEntry* buffer) : next_(out), buffer_(buffer) {
    if (buffer_ == nullptr) return;
    // Entries start on multiples of 8 bytes, so one of the first 8 starts a
    // line (24 k covers every residue of 8 modulo 64).
    while (head_ < 8 && reinterpret_cast<uintptr_t>(out + head_) % 64 != 0) ++head_;
  }

  void Put(const layout::CooEntry& e) {
    if (buffer_ == nullptr || head_ > 0) {
      *next_++ = e;
      if (buffer_ != nullptr) --head_;
      return;
    }
    buffer_[fill_++] = e;
    if (fill_ == kBuffered) Flush();
  }

#if defined(__AVX512F__)
  // Puts 8 entries held in a, b, c (192 bytes: layout::CooEntry[8]).
  void Put8(__m512i a, __m512i b, __m512i c) {
    layout::CooEntry* dst = next_;
    if (buffer_ != nullptr) {
      if (head_ > 0) {  // only before the first line boundary
        alignas(64) layout::CooEntry eight[8];
        char* const bytes = reinterpret_cast<char*>(eight);
        _mm512_store_si512(bytes, a);
        _mm512_store_si512(bytes + 64, b);
        _mm512_store_si512(bytes + 128, c);
        for (const layout::CooEntry& e : eight) Put(e);
        return;
      }
      dst = buffer_ + fill_;
    }
    char* const bytes = reinterpret_cast<char*>(dst);
    _mm512_storeu_si512(bytes, a);
    _mm512_storeu_si512(bytes + 64, b);
    _mm512_storeu_si512(bytes + 128, c);
    if (buffer_ == nullptr) {
      next_ += 8;
      return;
    }
    fill_ += 8;
    if (fill_ >= kBuffered) Flush();
  }
#endif

  // Entries put so far.
  int64_t written(const layout::CooEntry* out) const { return next_ - out + fill_; }

  // Writes what the buffer holds and orders the streamed stores before what
  // follows.
  void Finish() {
    if (buffer_ == nullptr) return;
    std::memcpy(next_, buffer_, fill_ * sizeof(layout::CooEntry));
    next_ += fill_;
    fill_ = 0;
    StreamFence();
  }

 private:
  // The first kBuffered entries of the buffer leave as 24 whole lines; the
  // ones past them (a Put8 that crossed) move to its start.
  void Flush() {
    char* const dst = reinterpret_cast<char*>(next_);
    const char* const src = reinterpret_cast<const char*>(buffer_);
    for (size_t k = 0; k < kBuffered * sizeof(layout::CooEntry); k += 64) {
      StreamLine(dst + k, src + k);
    }
    next_ += kBuffered;
    fill_ -= kBuffered;
    std::memcpy(buffer_, buffer_ + kBuffered, fill_ * sizeof(layout::CooEntry));
  }

  layout::CooEntry* next_;
  layout::CooEntry* buffer_;
  int head_ = 0;
  int fill_ = 0;
};

// Where one feature's run of a segment goes: its feature and table, the
// packed records' field widths, and the first sample row of the segment's
// source SparseCore.
struct SumRunShape {
  int32_t feature;
  int32_t table;
  int col_bits;
  int row_bits;
  int64_t row_base;
};

// Sets col / N's bit in `bitmap` and returns 1 when it was clear.
template <class Div>
inline int32_t MarkRow(const Div& div, int64_t col, uint64_t* bitmap) {
  const int64_t q = div.Quotient(col);
  const uint64_t bit = uint64_t{1} << (q & 63);
  uint64_t& word = bitmap[q >> 6];
  const int32_t fresh = (word & bit) == 0;
  word |= bit;
  return fresh;
}

// The entries of records r[0, n) of one unweighted SUM feature (sorted by
// (group, col), PackedCodec): each run of equal records (one id's
// duplicates in one sample) becomes one entry {col, row_base + row, feature,
// table, gain = the run's length}, put to `out`. With kCount, each entry's
// bit col / N in `bitmap` is set and the ones not set before are added to
// *unique. The scalar loop, the reference the vector one must match.
template <bool kCount, class Div>
void WriteSumRunScalar(const Div& div, const SumRunShape& shape, const uint64_t* r, int64_t n,
                       uint64_t* bitmap, int32_t* unique, EntryWriter* out) {
  const uint64_t row_mask = (uint64_t{1} << shape.row_bits) - 1;
  const uint64_t col_mask = (uint64_t{1} << shape.col_bits) - 1;
  EntryWriter w = *out;
  int32_t fresh = 0;
  for (int64_t i = 0; i < n;) {
    const uint64_t rec = r[i];
    int64_t j = i + 1;
    while (j < n && r[j] == rec) ++j;
    const int64_t col = static_cast<int64_t>(rec & col_mask);
    const int32_t row = static_cast<int32_t>(
        shape.row_base + static_cast<int64_t>((rec >> shape.col_bits) & row_mask));
    w.Put({col, row, shape.feature, shape.table, static_cast<float>(static_cast<double>(j - i))});
    if constexpr (kCount) fresh += MarkRow(div, col, bitmap);
    i = j;
  }
  if constexpr (kCount) *unique += fresh;
  *out = w;
}

#if defined(__AVX512F__)
// WriteSumRun's vector loop: 8 records at a time while none of them equals
// the next record (no duplicates: every gain is 1); a block with a
// duplicate goes through the scalar loop up to the end of its first run of
// equal records.
template <bool kCount, class Div>
void WriteSumRunAvx512(const Div& div, const SumRunShape& shape, const uint64_t* r, int64_t n,
                       uint64_t* bitmap, int32_t* unique, EntryWriter* out) {
  const __m512i col_mask =
      _mm512_set1_epi64(static_cast<int64_t>((uint64_t{1} << shape.col_bits) - 1));
  const __m512i row_mask =
      _mm512_set1_epi64(static_cast<int64_t>((uint64_t{1} << shape.row_bits) - 1));
  const __m512i row_base = _mm512_set1_epi64(shape.row_base);
  const __m512i feature_hi =
      _mm512_set1_epi64(static_cast<int64_t>(static_cast<uint64_t>(shape.feature) << 32));
  // {table, gain 1.0f} of every entry without duplicates.
  const __m512i table_gain = _mm512_set1_epi64(
      static_cast<int64_t>(static_cast<uint64_t>(static_cast<uint32_t>(shape.table)) |
                           static_cast<uint64_t>(std::bit_cast<uint32_t>(1.0f)) << 32));
  // (The shift in its zero-masking form with every lane selected, the same
  // instruction: GCC 12's unmasked form starts from an "undefined" register
  // that -Wmaybe-uninitialized reports.)
  const __m512i col_shift = _mm512_set1_epi64(shape.col_bits);
  // Entries k = 0..7 as 24 qwords {col_k, row_k | feature, table | gain}:
  // lines 0..2 take qwords 0-7, 8-15, 16-23 (index < 8: col, >= 8: row
  // word; the table_gain lanes are blended in).
  const __m512i line0 = _mm512_set_epi64(10, 2, 0, 9, 1, 0, 8, 0);
  const __m512i line1 = _mm512_set_epi64(5, 0, 12, 4, 0, 11, 3, 0);
  const __m512i line2 = _mm512_set_epi64(0, 15, 7, 0, 14, 6, 0, 13);
  // Pow2Divider: a record's bitmap word is col >> (shift + 6).
  [[maybe_unused]] __m512i word_shift = _mm512_setzero_si512();
  if constexpr (std::is_same_v<Div, Pow2Divider>) word_shift = _mm512_set1_epi64(div.shift + 6);
  EntryWriter w = *out;
  int32_t fresh = 0;
  alignas(64) int64_t cols[8];
  int64_t i = 0;
  while (i + 8 <= n) {
    if constexpr (kCount && std::is_same_v<Div, Pow2Divider>) {
      // The bitmap words of the next 8 records, asked for one block ahead
      // (they are read at random; waiting on them took half this loop).
      if (i + 16 <= n) {
        _mm512_store_si512(
            cols, _mm512_maskz_srlv_epi64(
                      0xff, _mm512_and_si512(_mm512_loadu_si512(r + i + 8), col_mask), word_shift));
        for (int k = 0; k < 8; ++k)
          _mm_prefetch(reinterpret_cast<const char*>(bitmap + cols[k]), _MM_HINT_T0);
      }
    }
    const __m512i v = _mm512_loadu_si512(r + i);
    const __mmask8 valid = i + 9 <= n ? 0xff : 0x7f;  // lanes with a next record
    const __m512i next = _mm512_maskz_loadu_epi64(valid, r + i + 1);
    const __mmask8 equal = _mm512_mask_cmpeq_epi64_mask(valid, v, next);
    if (equal != 0) {
      // Records up to the first duplicate run's first record, then that
      // whole run, through the scalar loop.
      int64_t stop = i + std::countr_zero(static_cast<unsigned>(equal)) + 1;
      while (stop < n && r[stop] == r[stop - 1]) ++stop;
      *out = w;
      WriteSumRunScalar<kCount>(div, shape, r + i, stop - i, bitmap, unique, out);
      w = *out;
      i = stop;
      continue;
    }
    const __m512i col = _mm512_and_si512(v, col_mask);
    const __m512i row = _mm512_add_epi64(
        _mm512_and_si512(_mm512_maskz_srlv_epi64(0xff, v, col_shift), row_mask), row_base);
    const __m512i row_feature = _mm512_or_si512(row, feature_hi);
    w.Put8(
        _mm512_mask_mov_epi64(_mm512_permutex2var_epi64(col, line0, row_feature), 0x24, table_gain),
        _mm512_mask_mov_epi64(_mm512_permutex2var_epi64(col, line1, row_feature), 0x49, table_gain),
        _mm512_mask_mov_epi64(_mm512_permutex2var_epi64(col, line2, row_feature), 0x92,
                              table_gain));
    if constexpr (kCount) {
      _mm512_store_si512(cols, col);
      for (int k = 0; k < 8; ++k) fresh += MarkRow(div, cols[k], bitmap);
    }
    i += 8;
  }
  *out = w;
  if constexpr (kCount) *unique += fresh;
  WriteSumRunScalar<kCount>(div, shape, r + i, n - i, bitmap, unique, out);
}
#endif

// WriteSumRunScalar's entries, from the vector loop where the build has
// AVX-512 (the same bytes: coo_entry_writer_test).
template <bool kCount, class Div>
void WriteSumRun(const Div& div, const SumRunShape& shape, const uint64_t* r, int64_t n,
                 uint64_t* bitmap, int32_t* unique, EntryWriter* out) {
#if defined(__AVX512F__)
  WriteSumRunAvx512<kCount>(div, shape, r, n, bitmap, unique, out);
#else
  WriteSumRunScalar<kCount>(div, shape, r, n, bitmap, unique, out);
#endif
}

}  // namespace lemrt::host::coo_internal

#endif  // LEMRT_HOST_PREPROCESS_COO_ENTRY_WRITER_H_
