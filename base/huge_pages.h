// Transparent huge pages for large buffers that live across steps. Each TLB
// miss on a 4 KiB page walks the page tables, and in a virtual machine the
// host's tables too; a buffer of hundreds of MB streamed every step misses
// on every page. Measured on a 2-vCPU VM (docs/performance.md, "Host
// preprocessing"): the COO's entries written on 4 KiB pages cost 2-3x the
// same writes on 2 MiB pages, and their cost swung with whatever memory was
// touched before. Advice only: where the kernel has no transparent huge
// pages or declines, the buffer keeps 4 KiB pages and works the same.
#ifndef LEMRT_BASE_HUGE_PAGES_H_
#define LEMRT_BASE_HUGE_PAGES_H_

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace lemrt::base {

// Asks for transparent huge pages on the whole 2 MiB pages inside
// [data, data + bytes) (madvise MADV_HUGEPAGE). Pages already touched keep
// their mapping until the kernel collapses them; new ones fault in 2 MiB at a
// time.
void AdviseHugePages(const void* data, size_t bytes);

// `bytes` (at least one) 64-byte aligned, so that arrays of rows start on a
// cache line; from 2 MiB on, 2 MiB aligned and advised (AdviseHugePages).
// Throws std::bad_alloc; the caller frees it with std::free.
void* AllocateLineAligned(size_t bytes);

// `bytes` (at least one) of zeros, 64-byte aligned, for arrays that are
// written whole once and live long (table shards). From 2 MiB on, the
// storage is a fresh anonymous mapping, 2 MiB aligned and advised
// (AdviseHugePages), that nothing has written: its pages are zero by the
// kernel's guarantee and are faulted in by their first write, so a caller
// that fills the array touches each page once, from the threads that fill it
// (the allocation itself takes microseconds, whatever the size). Below 2 MiB
// it is zeroed heap storage. Throws std::bad_alloc; the caller frees it with
// FreeZeroed(p, bytes) (the same `bytes`).
void* AllocateZeroed(size_t bytes);
void FreeZeroed(void* p, size_t bytes);

// When n exceeds v's capacity, reserves max(n, 1.5 x the capacity) (growth
// is geometric, as with push_back, so a slowly growing size reallocates a
// logarithmic number of times) and advises the new storage before anything
// is written to it (its first touch then gets huge pages); the elements move
// as with reserve. Otherwise does nothing: v keeps its storage, pointers into
// it stay valid.
template <typename T>
void ReserveOnHugePages(std::vector<T>* v, size_t n) {
  if (n <= v->capacity()) return;
  std::vector<T> fresh;
  fresh.reserve(std::max(n, v->capacity() + v->capacity() / 2));
  AdviseHugePages(fresh.data(), fresh.capacity() * sizeof(T));
  fresh.insert(fresh.end(), std::make_move_iterator(v->begin()),
               std::make_move_iterator(v->end()));
  v->swap(fresh);
}

}  // namespace lemrt::base

#endif  // LEMRT_BASE_HUGE_PAGES_H_
