#include "device/sparsecore/key_sort.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>

// pext is one fast instruction on Intel since Haswell and AMD since Zen 3;
// Zen 1 and 2 microcode it (hundreds of cycles), so they take the shift path.
#if defined(__BMI2__) && !defined(__znver1__) && !defined(__znver2__)
#define LEMRT_KEY_SORT_PEXT 1
#include <immintrin.h>
#endif

namespace lemrt::device {
namespace {

// Pairs up to this many are sorted by insertion (stable: a pair moves only
// past larger keys).
constexpr size_t kInsertionSortMax = 32;

#ifdef LEMRT_KEY_SORT_PEXT
// Widest digit of the pext path (4096 counters: 32 KiB, in L1).
constexpr int kMaxDigitBits = 12;
#else
// The portable path's digit.
constexpr int kDigitBits = 11;
constexpr size_t kBuckets = size_t{1} << kDigitBits;
#endif

}  // namespace

void SortByKey(std::span<KeyIndex> a, std::vector<KeyIndex>* scratch) {
  const size_t n = a.size();
  if (n < 2) return;
  // Bits where some key differs from the first; stop early when sorted.
  uint64_t varying = 0;
  bool sorted = true;
  for (size_t i = 1; i < n; ++i) {
    varying |= a[i].first ^ a[0].first;
    sorted &= a[i - 1].first <= a[i].first;
  }
  if (sorted) return;
  if (n <= kInsertionSortMax) {
    // Few pairs (a table with few ids in the partition): the radix passes'
    // counters would cost more than the pairs.
    for (size_t i = 1; i < n; ++i) {
      const KeyIndex p = a[i];
      size_t j = i;
      for (; j > 0 && a[j - 1].first > p.first; --j) a[j] = a[j - 1];
      a[j] = p;
    }
    return;
  }
  if (scratch->size() < n) scratch->resize(n);
  KeyIndex* src = a.data();
  KeyIndex* dst = scratch->data();
#ifdef LEMRT_KEY_SORT_PEXT
  // The varying bits gathered into a dense value (pext keeps their order,
  // and the other bits are the same in every key, so dense values order
  // like the keys), sorted in as few digits of up to kMaxDigitBits as cover
  // them: keys table << 48 | col with 20-bit columns and 8 tables take 2
  // passes instead of 3 (the table bits are a digit of their own otherwise).
  const int bits = std::popcount(varying);
  const int passes = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit_bits = (bits + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  std::array<size_t, size_t{1} << kMaxDigitBits> count;
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * digit_bits;
    auto digit = [&](const KeyIndex& p) { return (_pext_u64(p.first, varying) >> shift) & mask; };
    std::fill_n(count.begin(), mask + 1, 0);
    for (size_t i = 0; i < n; ++i) ++count[digit(src[i])];
    size_t sum = 0;
    for (size_t b = 0; b <= mask; ++b) {
      const size_t k = count[b];
      count[b] = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; ++i) dst[count[digit(src[i])]++] = src[i];
    std::swap(src, dst);
  }
#else
  std::array<size_t, kBuckets> count;
  int shift = std::countr_zero(varying);
  while (shift < 64) {
    count.fill(0);
    for (size_t i = 0; i < n; ++i) ++count[(src[i].first >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t k = c;
      c = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; ++i) dst[count[(src[i].first >> shift) & (kBuckets - 1)]++] = src[i];
    std::swap(src, dst);
    shift += kDigitBits;
    // Skip runs of bits that no key varies in.
    const uint64_t rest = shift < 64 ? varying >> shift : 0;
    if (rest == 0) break;
    shift += std::countr_zero(rest);
  }
#endif
  if (src != a.data()) std::copy(src, src + n, a.data());
}

}  // namespace lemrt::device
