#include "host/formats/gzip_members.h"

#include <stdlib.h>
#include <zlib.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/gzip_members_testXXXXXX";
  return mkdtemp(tmpl);
}

// One gzip member holding `text`.
std::string Member(const std::string& text) {
  z_stream zs = {};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Write(const std::string& bytes) {
  const std::string path = TempDir() + "/x.gz";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(GzipMembersTest, AcceptsPlainFilesAndIntactMembers) {
  EXPECT_TRUE(CheckGzipMembers(Write("not compressed")).ok());
  EXPECT_TRUE(CheckGzipMembers(Write(Member("one"))).ok());
  EXPECT_TRUE(CheckGzipMembers(Write(Member("one") + Member("two") + Member(""))).ok());
}

TEST(GzipMembersTest, NamesADamagedSecondMemberTrailingBytesAndTruncation) {
  const std::string first = Member(std::string(1000, 'a'));
  std::string second = Member("second");
  second[0] = 0;  // its magic bytes: gzread would stop here without an error
  absl::Status st = CheckGzipMembers(Write(first + second));
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(),
              HasSubstr("from byte " + std::to_string(first.size()) +
                        " on, after gzip member 1, are not a gzip member"));
  st = CheckGzipMembers(Write(first + std::string(8, '\0')));
  EXPECT_THAT(st.message(), HasSubstr("after gzip member 1, are not a gzip member"));
  st = CheckGzipMembers(Write(first.substr(0, first.size() - 4)));
  EXPECT_THAT(st.message(), HasSubstr("gzip member 1 (from byte 0) is cut short"));
  std::string flipped = Member(std::string(5000, 'q') + "tail");
  flipped[flipped.size() / 2] ^= 0x55;
  st = CheckGzipMembers(Write(flipped));
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("gzip member 1 (from byte 0)"));
}

}  // namespace
}  // namespace lemrt::host
