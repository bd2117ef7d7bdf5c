#include "runtime/output_paths.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/output_paths_testXXXXXX";
  return mkdtemp(tmpl);
}

TEST(OutputPathsTest, NewAndExistingFilesPassAndStayAsTheyWere) {
  const std::string dir = TempDir();
  EXPECT_TRUE(CheckOutputFile("", "--summary_json").ok());
  EXPECT_TRUE(CheckOutputFile(dir + "/new.json", "--summary_json").ok());
  EXPECT_NE(access((dir + "/new.json").c_str(), F_OK), 0);  // not left behind
  std::ofstream(dir + "/old.json") << "kept";
  EXPECT_TRUE(CheckOutputFile(dir + "/old.json", "--summary_json").ok());
  std::ifstream in(dir + "/old.json");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "kept");
}

TEST(OutputPathsTest, UnwritablePathsAreSentences) {
  const std::string dir = TempDir();
  absl::Status st = CheckOutputFile(dir, "--summary_json");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("--summary_json '" + dir + "' cannot be written: it is a directory"));
  st = CheckOutputFile(dir + "/no/such/s.json", "--trace_json");
  EXPECT_THAT(st.message(), HasSubstr("its directory '" + dir + "/no/such' does not exist"));
  std::ofstream(dir + "/file") << "x";
  st = CheckOutputFile(dir + "/file/s.json", "--metrics_csv");
  EXPECT_THAT(st.message(), HasSubstr("'" + dir + "/file' is not a directory"));
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  st = CheckOutputFile(dir + "/fifo", "--summary_json");
  EXPECT_THAT(st.message(), HasSubstr("it is not a regular file"));
  st = CheckOutputFile("/proc/lemrt_output_paths_test.json", "--summary_json");
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace lemrt::runtime
