#include "base/huge_pages.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The VmFlags of the mapping of this process that holds `address`
// (/proc/self/smaps), or "" when none does.
std::string VmFlagsAt(const void* address) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = a >= begin && a < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8);
    }
  }
  return "";
}

// Whether the mapping that holds `address` is advised onto huge pages.
bool Advised(const void* address) {
  std::istringstream flags(VmFlagsAt(address));
  std::string flag;
  while (flags >> flag) {
    if (flag == "hg") return true;
  }
  return false;
}

bool KernelHasTransparentHugePages() {
  struct stat s;
  return stat("/sys/kernel/mm/transparent_hugepage/enabled", &s) == 0;
}

TEST(HugePagesTest, ReserveKeepsTheElementsAndReachesTheSize) {
  std::vector<int64_t> v(1000);
  std::iota(v.begin(), v.end(), 7);
  ReserveOnHugePages(&v, 3 * kMiB);
  ASSERT_EQ(v.size(), 1000u);
  EXPECT_GE(v.capacity(), 3 * kMiB);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], static_cast<int64_t>(i) + 7);
}

TEST(HugePagesTest, GrowthIsGeometric) {
  std::vector<int64_t> v;
  ReserveOnHugePages(&v, 1000);
  EXPECT_EQ(v.capacity(), 1000u);
  ReserveOnHugePages(&v, 1001);
  EXPECT_EQ(v.capacity(), 1500u);
  ReserveOnHugePages(&v, 4000);
  EXPECT_EQ(v.capacity(), 4000u);
}

TEST(HugePagesTest, ReserveWithinTheCapacityKeepsTheStorage) {
  std::vector<int64_t> v;
  v.reserve(4096);
  v.resize(10, 3);
  const int64_t* before = v.data();
  ReserveOnHugePages(&v, 4096);
  ReserveOnHugePages(&v, 5);
  EXPECT_EQ(v.data(), before);
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v.capacity(), 4096u);
}

// MADV_HUGEPAGE marks the advised mapping "hg" in /proc/self/smaps whether or
// not the kernel then finds huge pages to back it, so this checks the advice
// itself.
TEST(HugePagesTest, TheReservedStorageIsAdvised) {
  if (!KernelHasTransparentHugePages()) GTEST_SKIP() << "kernel without transparent huge pages";
  std::vector<int64_t> v;
  ReserveOnHugePages(&v, 16 * kMiB / sizeof(int64_t));
  const char* middle = reinterpret_cast<const char*>(v.data()) + 8 * kMiB;
  EXPECT_TRUE(Advised(middle)) << "VmFlags:" << VmFlagsAt(middle);
}

TEST(HugePagesTest, LineAlignedStorage) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, 2 * kMiB - 1}) {
    void* p = AllocateLineAligned(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::free(p);
  }
  void* p = AllocateLineAligned(6 * kMiB + 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2 * kMiB), 0u);
  if (KernelHasTransparentHugePages()) {
    EXPECT_TRUE(Advised(static_cast<char*>(p) + 6 * kMiB));  // the rounded-up tail too
  }
  std::free(p);
}

// Pages of [p, p + bytes) (p page aligned) that are in memory (mincore).
size_t ResidentPages(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

TEST(HugePagesTest, ZeroedStorageIsZeroAndAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, 2 * kMiB - 1, 2 * kMiB, 6 * kMiB + 3}) {
    auto* p = static_cast<unsigned char*>(AllocateZeroed(bytes));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (bytes >= 2 * kMiB ? 2 * kMiB : 64), 0u) << bytes;
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes;
    if (bytes > 0) p[bytes - 1] = 1;  // the whole size is writable
    FreeZeroed(p, bytes);
  }
}

// From 2 MiB on, allocating touches no page: the first write faults each in.
TEST(HugePagesTest, LargeZeroedStorageIsNotTouchedUntilWritten) {
  const size_t bytes = 16 * kMiB;
  auto* p = static_cast<char*>(AllocateZeroed(bytes));
  EXPECT_EQ(ResidentPages(p, bytes), 0u);
  p[5 * kMiB] = 1;
  const size_t resident = ResidentPages(p, bytes);
  EXPECT_GE(resident, 1u);
  EXPECT_LT(resident, bytes / 4096);
  if (KernelHasTransparentHugePages()) {
    EXPECT_TRUE(Advised(p + 8 * kMiB));
  }
  FreeZeroed(p, bytes);
}

// A fresh mapping is not marked until advised; only its whole 2 MiB pages
// are.
TEST(HugePagesTest, AdviceMarksTheMappingItCovers) {
  if (!KernelHasTransparentHugePages()) GTEST_SKIP() << "kernel without transparent huge pages";
  const size_t bytes = 16 * kMiB;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const char* base = static_cast<const char*>(p);  // page aligned
  const char* huge = reinterpret_cast<const char*>(
      (reinterpret_cast<uintptr_t>(base) + 2 * kMiB - 1) & ~(2 * kMiB - 1));  // 2 MiB aligned
  EXPECT_FALSE(Advised(huge + 4 * kMiB));
  AdviseHugePages(huge + 2 * kMiB + 1, 4 * kMiB);  // whole 2 MiB pages: [4, 6) MiB
  EXPECT_FALSE(Advised(huge + 4 * kMiB - 1));
  EXPECT_TRUE(Advised(huge + 4 * kMiB));
  EXPECT_TRUE(Advised(huge + 6 * kMiB - 1));
  EXPECT_FALSE(Advised(huge + 6 * kMiB));
  munmap(p, bytes);
}

}  // namespace
}  // namespace lemrt::base
