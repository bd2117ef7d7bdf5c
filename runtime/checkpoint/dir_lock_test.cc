#include "runtime/checkpoint/dir_lock.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::checkpoint {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempDir() {
  char tmpl[] = "/tmp/dir_lock_testXXXXXX";
  return mkdtemp(tmpl);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DirLockTest, SecondHolderIsRefusedWithTheFirstNamed) {
  const std::string dir = TempDir();
  std::string stale;
  auto first = DirLock::Acquire(dir, &stale);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(stale, "");
  EXPECT_THAT(ReadAll(dir + "/" + kLockName), StartsWith("pid " + std::to_string(getpid())));
  // flock locks belong to the open file description: a second open in the
  // same process conflicts like another job would.
  auto second = DirLock::Acquire(dir, &stale);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("is in use by another job (pid "));
  EXPECT_THAT(second.status().message(), HasSubstr(dir));
  first->reset();
  EXPECT_EQ(ReadAll(dir + "/" + kLockName), "");  // released cleanly
  auto third = DirLock::Acquire(dir, &stale);
  EXPECT_TRUE(third.ok());
  EXPECT_EQ(stale, "");
}

// A job that dies holding the lock: the kernel releases it, and the next job
// takes it over, told who left it.
TEST(DirLockTest, LockOfADeadProcessIsTakenOver) {
  const std::string dir = TempDir();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string stale;
    auto lock = DirLock::Acquire(dir, &stale);
    _exit(lock.ok() ? 0 : 1);  // dies without the destructor
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::string stale;
  auto lock = DirLock::Acquire(dir, &stale);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_THAT(stale, StartsWith("pid " + std::to_string(child) + " on host "));
}

TEST(DirLockTest, MissingDirectoryIsAnError) {
  std::string stale;
  auto lock = DirLock::Acquire("/nonexistent/dir", &stale);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr("/nonexistent/dir/lemrt.lock"));
}

}  // namespace
}  // namespace lemrt::checkpoint
