#include "host/preprocess/coo_entry_writer.h"

#include <bit>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "base/huge_pages.h"
#include "gtest/gtest.h"

namespace lemrt::host::coo_internal {
namespace {

std::tuple<int64_t, int32_t, int32_t, int32_t, uint32_t> Fields(const layout::CooEntry& e) {
  return {e.col, e.row, e.feature, e.table, std::bit_cast<uint32_t>(e.gain)};
}

layout::CooEntry Entry(int64_t k) {
  return {k * 7919, static_cast<int32_t>(k), static_cast<int32_t>(k % 5), 3,
          static_cast<float>(k) * 0.5f};
}

// A 64-byte aligned array of entries (8-byte steps of misalignment are
// taken from its start).
struct Aligned {
  explicit Aligned(size_t n)
      : p(static_cast<layout::CooEntry*>(base::AllocateLineAligned(n * sizeof(layout::CooEntry)))) {
  }
  ~Aligned() { std::free(p); }
  layout::CooEntry* p;
};

// Every start alignment (8-byte steps), count around the buffer's size and
// its line boundaries, plain and streamed, one entry at a time and (with
// AVX-512) 8 at a time mixed in: the entries land at out[k], nothing past
// them is written.
TEST(EntryWriterTest, WritesEveryEntryInPlaceStreamedOrNot) {
  std::mt19937_64 rng(5);
  Aligned buffer(EntryWriter::kBufferEntries);
  for (int shift = 0; shift < 8; ++shift) {
    for (int64_t n : {0, 1, 7, 8, 9, 63, 64, 65, 71, 72, 130, 1000}) {
      for (bool streamed : {false, true}) {
        Aligned space(n + 16);
        layout::CooEntry* const out =
            reinterpret_cast<layout::CooEntry*>(reinterpret_cast<char*>(space.p) + 8 * shift);
        std::memset(static_cast<void*>(space.p), 0xab, (n + 16) * sizeof(layout::CooEntry));
        EntryWriter w(out, streamed ? buffer.p : nullptr);
        int64_t k = 0;
        while (k < n) {
#if defined(__AVX512F__)
          if (k + 8 <= n && rng() % 2 == 0) {
            alignas(64) layout::CooEntry eight[8];
            for (int j = 0; j < 8; ++j) eight[j] = Entry(k + j);
            const char* const b = reinterpret_cast<const char*>(eight);
            w.Put8(_mm512_load_si512(b), _mm512_load_si512(b + 64), _mm512_load_si512(b + 128));
            k += 8;
            continue;
          }
#endif
          w.Put(Entry(k++));
          ASSERT_EQ(w.written(out), k);
        }
        w.Finish();
        ASSERT_EQ(w.written(out), n);
        const std::string where = "shift " + std::to_string(shift) + " n " + std::to_string(n) +
                                  (streamed ? " streamed" : " plain");
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(Fields(out[j]), Fields(Entry(j))) << where << " entry " << j;
        }
        const unsigned char* const past = reinterpret_cast<const unsigned char*>(out + n);
        for (size_t b = 0; b < 8 * sizeof(layout::CooEntry); ++b) {
          ASSERT_EQ(past[b], 0xab) << where << " byte " << b << " past the end";
        }
      }
    }
  }
}

// The plain reference: a map-free transcription of the contract.
struct Expected {
  std::vector<layout::CooEntry> entries;
  std::vector<uint64_t> bitmap;
  int32_t unique = 0;
};

template <class Div>
Expected Reference(const Div& div, const SumRunShape& shape, const std::vector<uint64_t>& r,
                   std::vector<uint64_t> bitmap) {
  Expected e;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j < r.size() && r[j] == r[i]) ++j;
    const int64_t col = static_cast<int64_t>(r[i] % (uint64_t{1} << shape.col_bits));
    const int64_t row =
        static_cast<int64_t>((r[i] >> shape.col_bits) % (uint64_t{1} << shape.row_bits));
    e.entries.push_back({col, static_cast<int32_t>(shape.row_base + row), shape.feature,
                         shape.table, static_cast<float>(j - i)});
    const int64_t q = col / div.n;
    if ((bitmap[q / 64] >> (q % 64) & 1) == 0) ++e.unique;
    bitmap[q / 64] |= uint64_t{1} << (q % 64);
    i = j;
  }
  e.bitmap = bitmap;
  return e;
}

// Sorted packed records of one feature: groups (rows) ascending, cols
// ascending within a group, duplicates at `dup_rate`, hot cols shared by
// many rows.
std::vector<uint64_t> Records(std::mt19937_64& rng, int n, double dup_rate, int col_bits,
                              int row_bits, int feature) {
  std::vector<uint64_t> r;
  uint64_t row = 0;
  while (static_cast<int>(r.size()) < n) {
    row += rng() % 3;
    if (row >= (uint64_t{1} << row_bits)) break;
    const int len = 1 + static_cast<int>(rng() % 12);
    std::vector<uint64_t> cols;
    for (int k = 0; k < len; ++k) {
      cols.push_back(rng() % 4 == 0 ? rng() % 5 : rng() % (uint64_t{1} << col_bits));
    }
    std::sort(cols.begin(), cols.end());
    const uint64_t group = static_cast<uint64_t>(feature) << row_bits | row;
    for (uint64_t c : cols) {
      r.push_back(group << col_bits | c);
      while (std::uniform_real_distribution<double>(0, 1)(rng) < dup_rate) {
        r.push_back(group << col_bits | c);
      }
    }
  }
  return r;
}

template <bool kCount, class Div>
void CheckRuns(const Div& div) {
  std::mt19937_64 rng(11);
  const int col_bits = 20, row_bits = 9;
  const SumRunShape shape{
      .feature = 6, .table = 2, .col_bits = col_bits, .row_bits = row_bits, .row_base = 1000};
  const int64_t words = ((int64_t{1} << col_bits) / div.n + 64) / 64 + 1;
  Aligned buffer(EntryWriter::kBufferEntries);
  for (double dup_rate : {0.0, 0.02, 0.3}) {
    for (int n : {0, 1, 7, 8, 9, 15, 16, 17, 100, 1000}) {
      for (bool streamed : {false, true}) {
        const std::vector<uint64_t> r =
            Records(rng, n, dup_rate, col_bits, row_bits, shape.feature);
        std::vector<uint64_t> start(words, 0);
        for (uint64_t& w : start) w = rng() % 4 == 0 ? rng() : 0;  // bits set by earlier runs
        const Expected want = Reference(div, shape, r, start);
        // Both loops, each against the reference; the records' storage
        // ends right after them (the vector loop reads no record past n).
        for (bool vector : {false, true}) {
          std::vector<uint64_t> bitmap = start;
          std::vector<layout::CooEntry> out(r.size());
          int32_t unique = 0;
          EntryWriter w(out.data(), streamed ? buffer.p : nullptr);
          if (vector) {
            WriteSumRun<kCount>(div, shape, r.data(), static_cast<int64_t>(r.size()), bitmap.data(),
                                &unique, &w);
          } else {
            WriteSumRunScalar<kCount>(div, shape, r.data(), static_cast<int64_t>(r.size()),
                                      bitmap.data(), &unique, &w);
          }
          w.Finish();
          const std::string where = "dup " + std::to_string(dup_rate) + " n " + std::to_string(n) +
                                    (vector ? " vector" : " scalar") +
                                    (streamed ? " streamed" : "");
          ASSERT_EQ(w.written(out.data()), static_cast<int64_t>(want.entries.size())) << where;
          for (size_t k = 0; k < want.entries.size(); ++k) {
            ASSERT_EQ(Fields(out[k]), Fields(want.entries[k])) << where << " entry " << k;
          }
          if (kCount) {
            EXPECT_EQ(unique, want.unique) << where;
            EXPECT_EQ(bitmap, want.bitmap) << where;
          } else {
            EXPECT_EQ(unique, 0) << where;
            EXPECT_EQ(bitmap, start) << where;
          }
        }
      }
    }
  }
}

// WriteSumRun (8 records at a time with AVX-512 where the build has it)
// and WriteSumRunScalar against the plain reference: entries, the bitmap's
// bits and the count of bits newly set, for powers of two and other N.
TEST(WriteSumRunTest, MatchesThePlainReference) {
  CheckRuns<true>(Pow2Divider{512, 9});
  CheckRuns<false>(Pow2Divider{512, 9});
  CheckRuns<true>(Pow2Divider{1, 0});
  CheckRuns<true>(ReciprocalDivider{12, 1.0 / 12});
  CheckRuns<true>(PlainDivider{7});
}

}  // namespace
}  // namespace lemrt::host::coo_internal
