#include "runtime/checkpoint/npy.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::checkpoint {
namespace {

TEST(NpyTest, HeaderIsAlignedAndDescribesTheArray) {
  for (int64_t rows : {0, 1, 7, 123456789}) {
    const std::string h = NpyHeader(rows, 16);
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t len = static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8);
    EXPECT_EQ(len + 10, h.size());
    EXPECT_EQ(h.back(), '\n');
    EXPECT_NE(h.find("'shape': (" + std::to_string(rows) + ", 16)"), std::string::npos) << h;
    EXPECT_NE(h.find("'descr': '<f4'"), std::string::npos);
  }
}

// An output, not a checkpoint: the error names the file and the OS error
// as other outputs' do, without the "checkpoint: " of checkpoint files.
TEST(NpyTest, AnUnwritableFileIsNamedWithTheOsError) {
  char tmpl[] = "/tmp/npy_testXXXXXX";
  const std::string path = std::string(mkdtemp(tmpl)) + "/no/such/p.npy";
  const absl::Status st = WriteNpy(path, 1, 2, std::vector<float>{1, 2});
  EXPECT_EQ(st.message(), "cannot create '" + path + ".tmp': No such file or directory");
}

TEST(NpyTest, WritesHeaderThenRowMajorFloats) {
  char tmpl[] = "/tmp/npy_testXXXXXX";
  const std::string path = std::string(mkdtemp(tmpl)) + "/a.npy";
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(WriteNpy(path, 2, 3, v).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  const std::string header = NpyHeader(2, 3);
  ASSERT_EQ(bytes.size(), header.size() + 24);
  EXPECT_EQ(bytes.substr(0, header.size()), header);
  std::vector<float> back(6);
  std::memcpy(back.data(), bytes.data() + header.size(), 24);
  EXPECT_EQ(back, v);
}

}  // namespace
}  // namespace lemrt::checkpoint
