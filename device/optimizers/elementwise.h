// The element loop of the optimizers' Apply: body(i) for i in [0, n), in
// blocks of kElementBlock with a constant trip count, then one at a time.
// GCC at -O2 vectorises only loops that need no scalar epilogue, so a plain
// `for (i < n)` over a row stays scalar; its one store per float then fills
// the store buffer with stores to rows still in flight from DRAM, and the
// SparseCore update ran 4-5x slower than the same loop vectorised
// (bench_sparsecore). The blocks vectorise (a 16-float block is one 512-bit
// or two 256-bit operations) and the tail stays scalar; every element sees
// the same operations as in the plain loop (the compiler contracts a * b + c
// into FMA alike in both), so results are bit-identical to it. Bodies must
// touch element i only, through pointers that the caller declares
// __restrict: parameters of a function kept out of line
// (__attribute__((noinline)); GCC drops restrict on locals and on inlined
// parameters), or the blocks are not vectorised (still correct).
#ifndef LEMRT_DEVICE_OPTIMIZERS_ELEMENTWISE_H_
#define LEMRT_DEVICE_OPTIMIZERS_ELEMENTWISE_H_

#include <cstddef>

namespace lemrt::device {

inline constexpr size_t kElementBlock = 16;

template <typename Body>
__attribute__((always_inline)) inline void ForEachElement(size_t n, Body&& body) {
  size_t i = 0;
  for (; i + kElementBlock <= n; i += kElementBlock) {
    for (size_t k = 0; k < kElementBlock; ++k) body(i + k);
  }
  for (; i < n; ++i) body(i);
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_ELEMENTWISE_H_
