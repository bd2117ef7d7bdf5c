// Allocator for the SparseCores' large arrays that are read at random rows
// (table shards and their optimizer slots): 64-byte aligned, so that a row
// of 16k floats spans exactly k cache lines (std::vector's malloc puts large
// arrays 16 bytes past a page start, and every 256-byte row then touches 5
// lines), and, from 2 MiB up, 2 MiB aligned with transparent huge pages
// requested (madvise; a hint: where the kernel declines, plain pages are
// used), so that random rows cost far fewer TLB misses. Stateless.
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_

#include <cstddef>
#include <cstdlib>
#include <new>

#include "base/huge_pages.h"

namespace lemrt::device {

template <typename T>
class TableAllocator {
 public:
  using value_type = T;
  TableAllocator() = default;
  template <typename U>
  TableAllocator(const TableAllocator<U>&) {}  // NOLINT: allocator rebinding

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T) / 2) throw std::bad_alloc();
    return static_cast<T*>(base::AllocateLineAligned(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) { std::free(p); }

  friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_
