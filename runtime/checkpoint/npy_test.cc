#include "runtime/checkpoint/npy.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "gmock/gmock.h"
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

// A directory in the file's place: the rename fails, and the error names
// the rename's two paths (it named only the temporary, as if it were the
// directory), leaving no temporary behind.
TEST(NpyTest, ADirectoryInTheFilesPlaceIsNamedWithTheRename) {
  char tmpl[] = "/tmp/npy_testXXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const absl::Status st = WriteNpy(dir, 1, 2, std::vector<float>{1, 2});
  EXPECT_EQ(st.message(), "cannot rename '" + dir + ".tmp' to '" + dir + "': Is a directory");
  struct stat tmp;
  EXPECT_NE(stat((dir + ".tmp").c_str(), &tmp), 0);
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

std::string NpyPath() {
  char tmpl[] = "/tmp/npy_testXXXXXX";
  return std::string(mkdtemp(tmpl)) + "/a.npy";
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(NpyTest, ReadsWhatWriteNpyWrites) {
  const std::string path = NpyPath();
  const std::vector<float> v = {1, -2, 3.5f, 4, 5, 1e-30f};
  ASSERT_TRUE(WriteNpy(path, 3, 2, v).ok());
  const absl::StatusOr<NpyArray> a = ReadNpy(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows, 3);
  EXPECT_EQ(a->cols, 2);
  EXPECT_EQ(a->values, v);
}

// numpy.save of a float64 array, a 1-D array, Fortran order, a short file,
// a file that is no .npy and a missing one: sentences naming the file and
// what it holds against what is expected.
TEST(NpyTest, RefusesWhatItCannotReadAsFloat32Rows) {
  const std::string path = NpyPath();
  auto error = [&](const std::string& bytes) {
    WriteBytes(path, bytes);
    return std::string(ReadNpy(path).status().message());
  };
  std::string f8 = NpyHeader(2, 3);
  f8.replace(f8.find("<f4"), 3, "<f8");
  EXPECT_EQ(error(f8 + std::string(48, '\0')),
            ".npy file '" + path +
                "' has dtype '<f8', expected '<f4' (little-endian float32, as lemrt_ckpt export "
                "writes).");
  std::string one_d = NpyHeader(2, 3);
  one_d.replace(one_d.find("(2, 3)"), 6, "(6,)   ");
  EXPECT_EQ(error(one_d + std::string(24, '\0')),
            ".npy file '" + path + "' has shape (6,), expected a 2-D shape (rows, cols).");
  std::string fortran = NpyHeader(2, 3);
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_EQ(error(fortran + std::string(24, '\0')),
            ".npy file '" + path + "' is not in C (row-major) order (fortran_order is not False).");
  EXPECT_EQ(
      error(NpyHeader(2, 3) + std::string(20, '\0')),
      ".npy file '" + path + "' is truncated: shape (2, 3) needs 24 bytes of data, it has 20.");
  EXPECT_EQ(error(NpyHeader(2, 3) + std::string(28, '\0')),
            ".npy file '" + path + "' has 28 bytes of data, shape (2, 3) needs 24.");
  EXPECT_THAT(error("PK\x03\x04 a zip file"), ::testing::HasSubstr("is not a NumPy .npy file"));
  const absl::Status missing = ReadNpy(path + ".gone").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), ".npy file '" + path + ".gone' is missing.");
}

// A directory, a FIFO and /dev/zero are refused with a sentence, unread (a
// directory threw std::ios_base::failure; /dev/zero never ended); a shape
// larger than the file, or than any file can be, allocates nothing.
TEST(NpyTest, RefusesWhatIsNoRegularFileAndShapesBeyondTheFile) {
  const std::string path = NpyPath();
  const std::string dir = path.substr(0, path.rfind('/'));
  EXPECT_EQ(ReadNpy(dir).status().message(),
            ".npy file '" + dir +
                "' is a directory, not a regular file; lemrt reads data only from regular files "
                "(copy a stream to a file first).");
  const std::string fifo = dir + "/f.npy";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(ReadNpy(fifo).status().message(), ::testing::HasSubstr("is a FIFO"));
  EXPECT_THAT(ReadNpy("/dev/zero").status().message(),
              ::testing::HasSubstr(".npy file '/dev/zero' is a character device"));
  WriteBytes(path, NpyHeader(int64_t{1} << 62, 3) + std::string(4, '\0'));
  EXPECT_EQ(ReadNpy(path).status().message(),
            ".npy file '" + path +
                "' has shape (4611686018427387904, 3), more floats than a file can hold.");
  WriteBytes(path, NpyHeader(1000000000, 1000) + std::string(4, '\0'));
  EXPECT_EQ(ReadNpy(path).status().message(),
            ".npy file '" + path +
                "' is truncated: shape (1000000000, 1000) needs 4000000000000 bytes of data, it "
                "has 4.");
}

}  // namespace
}  // namespace lemrt::checkpoint
