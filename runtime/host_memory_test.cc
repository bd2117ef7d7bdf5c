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
  EXPECT_GT(m.available_bytes, 0);  // /proc/meminfo has MemAvailable on Linux
  EXPECT_FALSE(m.limited_by.empty());
}

TEST(HostMemoryTest, RefusesAModelLargerThanWhatIsAvailable) {
  const HostMemory m{.available_bytes = 1 << 20, .limited_by = "the address-space limit"};
  EXPECT_TRUE(CheckHostMemory(1 << 20, m).ok());
  const absl::Status st = CheckHostMemory((1 << 20) + 1, m);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("needs 1048577 bytes (1.0 MiB) of host memory per rank"));
  EXPECT_THAT(st.message(), HasSubstr("can allocate 1048576 bytes (1.0 MiB), bounded by the "
                                      "address-space limit"));
  EXPECT_TRUE(CheckHostMemory(int64_t{1} << 60, HostMemory{}).ok());  // unknown: passes
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
