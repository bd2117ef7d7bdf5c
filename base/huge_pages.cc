#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace lemrt::base {
namespace {

constexpr size_t kHuge = size_t{2} << 20;  // one transparent huge page
constexpr size_t kLine = 64;

}  // namespace

void AdviseHugePages(const void* data, size_t bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (at + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void* AllocateLineAligned(size_t bytes) {
  const size_t align = bytes >= kHuge ? kHuge : kLine;
  const size_t rounded = bytes == 0 ? align : (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (align == kHuge) AdviseHugePages(p, rounded);
  return p;
}

void* AllocateZeroed(size_t bytes) {
  if (bytes < kHuge) {
    void* p = AllocateLineAligned(bytes);
    std::memset(p, 0, bytes);
    return p;
  }
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  // One huge page more than needed, so that a 2 MiB aligned start lies
  // inside; the unaligned head and the tail past it are unmapped again.
  const size_t mapped = rounded + kHuge;
  void* m = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t at = reinterpret_cast<uintptr_t>(m);
  const uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1);
  if (begin > at) munmap(m, begin - at);
  const uintptr_t tail = begin + rounded;
  if (at + mapped > tail) munmap(reinterpret_cast<void*>(tail), at + mapped - tail);
  void* p = reinterpret_cast<void*>(begin);
  AdviseHugePages(p, rounded);
  return p;
}

void FreeZeroed(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes < kHuge) {
    std::free(p);
    return;
  }
  munmap(p, (bytes + kHuge - 1) / kHuge * kHuge);
}

}  // namespace lemrt::base
