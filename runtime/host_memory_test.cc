#include "runtime/host_memory.h"

#include <new>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

using ::testing::HasSubstr;

TEST(HostMemoryTest, ReadsALimitOfThisMachine) {
  const HostMemory m = AvailableHostMemory();
  EXPECT_GT(m.host_bytes, 0);  // /proc/meminfo has MemAvailable on Linux
}

TEST(HostMemoryTest, RefusesAModelLargerThanWhatARankMayAllocate) {
  const HostMemory m{.rank_bytes = 1 << 20, .rank_limited_by = "the address-space limit"};
  EXPECT_TRUE(CheckHostMemory(1 << 20, 4, m).ok());
  const absl::Status st = CheckHostMemory((1 << 20) + 1, 1, m);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("needs 1048577 bytes (1.0 MiB) of host memory per rank"));
  EXPECT_THAT(st.message(), HasSubstr("can allocate 1048576 bytes (1.0 MiB), bounded by the "
                                      "address-space limit"));
  EXPECT_TRUE(CheckHostMemory(int64_t{1} << 60, 8, HostMemory{}).ok());  // unknown: passes
}

// MemAvailable is the host's, shared by its ranks: each rank's share fits,
// all of them together do not.
TEST(HostMemoryTest, ComparesTheSharesOfEveryRankOnTheHostWithTheHostsMemory) {
  const HostMemory m{.host_bytes = 3 << 20, .rank_bytes = -1, .rank_limited_by = ""};
  EXPECT_TRUE(CheckHostMemory(1 << 20, 3, m).ok());
  const absl::Status st = CheckHostMemory(1 << 20, 4, m);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("needs 1048576 bytes (1.0 MiB) of host memory per rank"));
  EXPECT_THAT(st.message(), HasSubstr("4194304 bytes (4.0 MiB) for the 4 ranks on this host, but "
                                      "the host has 3145728 bytes (3.0 MiB) available "
                                      "(MemAvailable in /proc/meminfo)"));
  EXPECT_TRUE(CheckHostMemory(3 << 20, 1, m).ok());
  EXPECT_THAT(CheckHostMemory((3 << 20) + 1, 1, m).message(),
              HasSubstr("per rank (its emulated HBM: tables, optimizer slots and buffers, from "
                        "the memory plan), but the host has 3145728 bytes (3.0 MiB) available"));
}

TEST(HostMemoryDeathTest, AnUncaughtBadAllocEndsWithOneSentence) {
  EXPECT_EXIT(
      {
        InstallOutOfMemoryHandler("lemrt_test");
        std::thread([] { throw std::bad_alloc(); }).join();
      },
      ::testing::ExitedWithCode(1),
      "lemrt_test: error: out of host memory: an allocation failed \\(std::bad_alloc\\)");
}

}  // namespace
}  // namespace lemrt::runtime
