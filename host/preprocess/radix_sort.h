// Sorting of plain 64-bit keys for the host's per-partition statistics
// (host/preprocess/minibatch.h): a least-significant-digit radix sort over only the key
// bits that vary in the input, in 8-bit digits (fewer than 2048 keys) or
// 11-bit digits. The partition keys (base/row_key.h: table << 48 | row, all
// rows of one partition congruent mod N) vary in about 25 bits, a sample's
// ids in about 27 (vocabulary 1e8), so a sort is 3-4 linear passes instead of
// std::sort's n log n mispredicted comparisons. Thread-safe (no state).
#ifndef LEMRT_HOST_PREPROCESS_RADIX_SORT_H_
#define LEMRT_HOST_PREPROCESS_RADIX_SORT_H_

#include <cstdint>
#include <span>

namespace lemrt::host {

// Sorts `keys` ascending. `scratch` must hold at least keys.size() values (its
// contents are overwritten). Small inputs (< 64 keys) use std::sort.
void RadixSortKeys(std::span<uint64_t> keys, std::span<uint64_t> scratch);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_RADIX_SORT_H_
