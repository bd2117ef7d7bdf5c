#include "base/regular_file.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/regular_file_testXXXXXX";
  return mkdtemp(tmpl);
}

TEST(RegularFileTest, OpensARegularFileBlocking) {
  const std::string path = TempDir() + "/data.csv";
  std::ofstream(path) << "a,b\n";
  auto fd = OpenRegularFile(path, "input file");
  ASSERT_TRUE(fd.ok()) << fd.status();
  char buf[8];
  EXPECT_EQ(read(*fd, buf, sizeof(buf)), 4);
  close(*fd);
}

TEST(RegularFileTest, RefusesFifosDevicesSocketsAndDirectoriesWithoutBlocking) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto st = OpenRegularFile(fifo, "input file").status();  // returns, never blocks
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("input file '" + fifo + "' is a FIFO, not a regular file"));
  st = OpenRegularFile("/dev/zero", "vocabulary").status();
  EXPECT_THAT(st.message(), HasSubstr("vocabulary '/dev/zero' is a character device"));
  st = OpenRegularFile(dir, "input file").status();
  EXPECT_THAT(st.message(), HasSubstr("is a directory"));
  const std::string sock_path = dir + "/sock";
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  st = OpenRegularFile(sock_path, "input file").status();
  EXPECT_FALSE(st.ok());  // open(2) of a socket fails (ENXIO); never blocks
  close(sock);
  st = OpenRegularFile(dir + "/missing", "input file").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("cannot open input file '" + dir + "/missing'"));
}

}  // namespace
}  // namespace lemrt::base
