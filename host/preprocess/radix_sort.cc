#include "host/preprocess/radix_sort.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>

namespace lemrt::host {
namespace {

// Below this, std::sort's comparisons beat the histograms.
constexpr size_t kRadixMinKeys = 64;
// From this size on, 11-bit digits (fewer passes) pay for their 2048-entry
// histograms; below it, 8-bit digits.
constexpr size_t kWideDigitMinKeys = 2048;

// LSD passes of kBits-bit digits over the bits set in `varying`; returns the
// buffer holding the result (src or dst).
template <int kBits>
uint64_t* SortByDigits(uint64_t* src, uint64_t* dst, size_t n, uint64_t varying) {
  constexpr size_t kDigits = size_t{1} << kBits;
  std::array<uint32_t, kDigits> count;
  int shift = std::countr_zero(varying);
  for (;;) {
    count.fill(0);
    for (size_t i = 0; i < n; ++i) ++count[(src[i] >> shift) & (kDigits - 1)];
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      const uint32_t k = c;
      c = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; ++i) dst[count[(src[i] >> shift) & (kDigits - 1)]++] = src[i];
    std::swap(src, dst);
    shift += kBits;
    const uint64_t rest = shift < 64 ? varying >> shift : 0;
    if (rest == 0) return src;  // no key differs in the remaining bits
    shift += std::countr_zero(rest);
  }
}

}  // namespace

void RadixSortKeys(std::span<uint64_t> keys, std::span<uint64_t> scratch) {
  const size_t n = keys.size();
  if (n < 2) return;
  if (n < kRadixMinKeys) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  uint64_t varying = 0;
  bool sorted = true;
  const uint64_t first = keys[0];
  for (size_t i = 1; i < n; ++i) {
    varying |= keys[i] ^ first;
    sorted &= keys[i - 1] <= keys[i];
  }
  if (sorted) return;
  const uint64_t* out = n < kWideDigitMinKeys
                            ? SortByDigits<8>(keys.data(), scratch.data(), n, varying)
                            : SortByDigits<11>(keys.data(), scratch.data(), n, varying);
  if (out != keys.data()) std::copy(out, out + n, keys.data());
}

}  // namespace lemrt::host
