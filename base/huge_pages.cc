#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
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

}  // namespace lemrt::base
