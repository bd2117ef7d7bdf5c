#include "base/crc32c.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

// Bitwise reference: reflected polynomial 0x82f63b78, init and final xor ~0.
uint32_t ReferenceCrc32c(const std::string& s) {
  uint32_t crc = ~0u;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, KnownValues) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros.
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
}

TEST(Crc32cTest, MatchesBitwiseReferenceAndExtends) {
  std::string s;
  for (int i = 0; i < 1000; ++i) {
    s.push_back(static_cast<char>((i * 131 + 7) & 0xff));
    const uint32_t whole = Crc32c(s.data(), s.size());
    ASSERT_EQ(whole, ReferenceCrc32c(s)) << i;
    const size_t half = s.size() / 2;
    ASSERT_EQ(Crc32c(s.data() + half, s.size() - half, Crc32c(s.data(), half)), whole) << i;
  }
}

TEST(Crc32cTest, MaskIsTensorFlows) {
  // masked_crc32c of an empty payload, as TensorFlow's record writer computes it.
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  const uint32_t crc = 0x12345678u;
  EXPECT_EQ(MaskCrc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

}  // namespace
}  // namespace lemrt::base
