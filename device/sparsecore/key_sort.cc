#include "device/sparsecore/key_sort.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>

namespace lemrt::device {
namespace {

constexpr int kDigitBits = 11;
constexpr size_t kBuckets = size_t{1} << kDigitBits;

}  // namespace

void SortByKey(std::vector<KeyIndex>* pairs, std::vector<KeyIndex>* scratch) {
  std::vector<KeyIndex>& a = *pairs;
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
  if (scratch->size() < n) scratch->resize(n);
  KeyIndex* src = a.data();
  KeyIndex* dst = scratch->data();
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
  if (src != a.data()) std::copy(src, src + n, a.data());
}

}  // namespace lemrt::device
