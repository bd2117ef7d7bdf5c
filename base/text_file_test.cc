#include "base/text_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/text_file_testXXXXXX";
  return mkdtemp(tmpl);
}

TEST(TextFileTest, ReadsARegularFileWhole) {
  const std::string path = TempDir() + "/c.pbtxt";
  std::ofstream(path) << "training { steps: 3 }\n";
  auto text = ReadTextFile(path, 100, "config file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "training { steps: 3 }\n");
  // Exactly at the cap is fine, one byte over is not.
  EXPECT_TRUE(ReadTextFile(path, 22, "config file").ok());
  auto big = ReadTextFile(path, 21, "config file");
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(),
              HasSubstr("config file '" + path + "' has 22 bytes, more than the 21 bytes"));
}

TEST(TextFileTest, RefusesDirectoriesFifosAndMissingFiles) {
  const std::string dir = TempDir();
  auto st = ReadTextFile(dir, 100, "config file").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("is a directory, not a regular file"));
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  st = ReadTextFile(fifo, 100, "config file").status();  // returns, never blocks
  EXPECT_THAT(st.message(), HasSubstr("is a FIFO, not a regular file"));
  st = ReadTextFile(dir + "/none", 100, "config file").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("cannot read config file '" + dir + "/none'"));
  EXPECT_THAT(ReadTextFile("/dev/null", 100, "limits file").status().message(),
              HasSubstr("is a character device"));
}

}  // namespace
}  // namespace lemrt::base
