#include "runtime/comm/exit_deadline.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

// A process stuck after asking for its end (here: sleeping) exits with the
// code and the sentence once the deadline passes.
TEST(ExitDeadlineDeathTest, AStuckProcessExitsWithTheSentence) {
  EXPECT_EXIT(
      {
        ExitAfter(0.2, 3, "stuck: exiting");
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(3), "stuck: exiting");
}

// Before the deadline nothing happens.
TEST(ExitDeadlineDeathTest, NothingHappensBeforeTheDeadline) {
  EXPECT_EXIT(
      {
        ExitAfter(30, 3, "too early");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace lemrt::runtime
