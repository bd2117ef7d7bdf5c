// Sorting of (key, entry index) pairs for the SparseCore's per-step id dedup:
// a least-significant-digit radix sort over only the key bits that vary in
// the input, which beats std::sort by several times on the step's pairs
// (keys are base/row_key.h's table << 48 | row). Where pext is fast (BMI2,
// but not AMD Zen 1-2, which microcode it) the varying bits are gathered
// with it and sorted in as few digits of up to 12 bits as cover them
// (typically 2 passes); otherwise in 11-bit digits, skipping bits no key
// varies in (typically 2-3 passes). Up to 32 pairs are sorted by insertion.
#ifndef LEMRT_DEVICE_SPARSECORE_KEY_SORT_H_
#define LEMRT_DEVICE_SPARSECORE_KEY_SORT_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace lemrt::device {

using KeyIndex = std::pair<uint64_t, int32_t>;

// Sorts `pairs` by key, stably: pairs with equal keys keep their order, so
// pairs whose indices ascend on input come out exactly as std::sort orders
// them. `scratch` is a buffer reused between calls (resized to pairs.size()
// the first time; no allocation once large enough). O(n) per pass; returns
// at once for input already sorted.
void SortByKey(std::span<KeyIndex> pairs, std::vector<KeyIndex>* scratch);
inline void SortByKey(std::vector<KeyIndex>* pairs, std::vector<KeyIndex>* scratch) {
  SortByKey(std::span<KeyIndex>(*pairs), scratch);
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_KEY_SORT_H_
