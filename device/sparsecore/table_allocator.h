// Allocator for the SparseCores' large arrays that are read at random rows
// (table shards and their optimizer slots): 64-byte aligned, so that a row
// of 16k floats spans exactly k cache lines (std::vector's malloc puts large
// arrays 16 bytes past a page start, and every 256-byte row then touches 5
// lines), and, from 2 MiB up, 2 MiB aligned with transparent huge pages
// requested (madvise; a hint: where the kernel declines, plain pages are
// used), so that random rows cost far fewer TLB misses.
//
// The storage is zero when allocated (base::AllocateZeroed: from 2 MiB up,
// fresh pages no one has written), and constructing an element without a
// value (resize(n), vector(n)) writes nothing: it is zero already. So sizing
// a table touches none of its pages, and the pages are faulted in by the
// table's initialisation, once, on the threads that initialise it
// (device/sparsecore/table_init.h) instead of by a zeroing pass first. The
// one difference from std::allocator: a vector shrunk and grown again within
// its capacity keeps the old bits of the regrown elements instead of zeros;
// the users here size their vectors once. Stateless.
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "base/huge_pages.h"

namespace lemrt::device {

template <typename T>
class TableAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>,
                "TableAllocator holds plain numbers (default construction writes nothing)");

 public:
  using value_type = T;
  TableAllocator() = default;
  template <typename U>
  TableAllocator(const TableAllocator<U>&) {}  // NOLINT: allocator rebinding

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T) / 2) throw std::bad_alloc();
    return static_cast<T*>(base::AllocateZeroed(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { base::FreeZeroed(p, n * sizeof(T)); }

  // Default-initialises (no write: the storage is zero); with arguments, as
  // std::allocator.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TABLE_ALLOCATOR_H_
