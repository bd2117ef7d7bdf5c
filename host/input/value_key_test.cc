// Value keys against plain references of the documented algorithms (written
// here, not taken from the code) and against pinned literal values, so that a
// change of the hashing, which would move every hashed value to another row
// and make old vocabularies, binary files and checkpoints disagree, fails on
// every build and machine.
#include "host/input/value_key.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

// SplitMix64's output for a state (S. Vigna): mix(state + golden). Seeded
// with 0 its first outputs are the published 0xe220a8397b1dcdaf,
// 0x6e789e6aa1b965f4 (checked below).
uint64_t SplitMix64(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// value_key.h's fingerprint: the bytes zero-padded to whole 8-byte words,
// always with at least one byte of padding (so n / 8 + 1 words), each word
// read little-endian and chained as h = mix(h ^ word) from
// 0x243f6a8885a308d3, then h = mix(h ^ n).
uint64_t FingerprintReference(std::string_view bytes) {
  const size_t words = bytes.size() / 8 + 1;
  std::vector<unsigned char> padded(words * 8, 0);
  for (size_t i = 0; i < bytes.size(); ++i) padded[i] = static_cast<unsigned char>(bytes[i]);
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | padded[w * 8 + b];
    h = SplitMix64(h ^ word);
  }
  return SplitMix64(h ^ static_cast<uint64_t>(bytes.size()));
}

uint64_t HashedRowReference(uint64_t key, int table, uint64_t rows) {
  return SplitMix64(key ^ SplitMix64(static_cast<uint64_t>(table) + 1)) % rows;
}

TEST(ValueKeyTest, TheReferenceMixIsSplitMix64) {
  EXPECT_EQ(SplitMix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(SplitMix64(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(base::Mix64(0), 0xe220a8397b1dcdafULL);
}

TEST(ValueKeyTest, FingerprintHasKnownValues) {
  EXPECT_EQ(Fingerprint64(""), 0x93a9bdb51e5d5285ULL);
  EXPECT_EQ(Fingerprint64("a"), 0xa20208f875918427ULL);
  EXPECT_EQ(Fingerprint64("abc"), 0x534336681e009987ULL);
  EXPECT_EQ(Fingerprint64("12345"), 0x7384246e4230565aULL);
  EXPECT_EQ(Fingerprint64("abcdefgh"), 0xd11f165ab3d4303aULL);  // one whole word
  EXPECT_EQ(Fingerprint64("abcdefghi"), 0x21d158ca3de389d7ULL);
  // Trailing zero bytes change the fingerprint (the length is mixed in).
  EXPECT_EQ(Fingerprint64(std::string_view("a\0", 2)), 0x7d6a2553fffb5b05ULL);
  for (std::string_view s : {"", "a", "abc", "12345", "abcdefgh", "abcdefghi"}) {
    EXPECT_EQ(Fingerprint64(s), FingerprintReference(s)) << s;
  }
}

// Every length from 0 to 40 (whole words, tails of 1-7 bytes), with bytes of
// every value, high ones (signed chars) and zeros included.
TEST(ValueKeyTest, FingerprintMatchesTheReference) {
  uint64_t state = 1;
  for (size_t n = 0; n <= 40; ++n) {
    for (int rep = 0; rep < 20; ++rep) {
      std::string s(n, '\0');
      for (char& c : s) {
        state = SplitMix64(state);
        c = static_cast<char>(state >> 56);
      }
      if (rep == 1) s.assign(n, '\xff');
      if (rep == 2) s.assign(n, '\0');
      ASSERT_EQ(Fingerprint64(s), FingerprintReference(s)) << "length " << n << " rep " << rep;
    }
  }
  EXPECT_NE(Fingerprint64(std::string(8, '\0')), Fingerprint64(std::string(9, '\0')));
  EXPECT_NE(Fingerprint64(""), Fingerprint64(std::string(1, '\0')));
}

TEST(ValueKeyTest, HashedRowHasKnownValuesAndStaysInRange) {
  EXPECT_EQ(HashedRow(0, 0, 1000), 158);
  EXPECT_EQ(HashedRow(42, 1, 97), 17);
  EXPECT_EQ(HashedRow(~uint64_t{0}, 3, int64_t{1} << 40), 780780926595);
  EXPECT_EQ(HashedRow(Fingerprint64("abc"), 0, 12345), 7087);
  uint64_t state = 7;
  for (int i = 0; i < 2000; ++i) {
    state = SplitMix64(state);
    const uint64_t key = state;
    const int table = i % 5;
    const int64_t rows = 1 + static_cast<int64_t>(SplitMix64(state + 1) % 100000);
    const int64_t row = HashedRow(key, table, rows);
    ASSERT_EQ(static_cast<uint64_t>(row), HashedRowReference(key, table, rows)) << key;
    ASSERT_GE(row, 0);
    ASSERT_LT(row, rows);
  }
  // One row: everything lands on it. The table salts the row.
  EXPECT_EQ(HashedRow(123456789, 4, 1), 0);
  int same = 0;
  for (uint64_t key = 0; key < 1000; ++key)
    same += HashedRow(key, 0, 1 << 20) == HashedRow(key, 1, 1 << 20);
  EXPECT_LT(same, 5);
  // The largest table of int64 rows.
  const int64_t max_rows = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(static_cast<uint64_t>(HashedRow(99, 2, max_rows)), HashedRowReference(99, 2, max_rows));
}

// ParseValueKey's result and key (0 when refused).
struct Parsed {
  bool ok;
  uint64_t key;
};
Parsed Parse(std::string_view text, ValueType type, int max_hex_digits = 16) {
  uint64_t key = 0xabcdabcdabcdabcdULL;
  const bool ok = ParseValueKey(text, type, max_hex_digits, &key);
  return {ok, ok ? key : 0};
}

void ExpectKey(std::string_view text, ValueType type, uint64_t want, int max_hex_digits = 16) {
  const Parsed p = Parse(text, type, max_hex_digits);
  EXPECT_TRUE(p.ok) << "'" << text << "'";
  EXPECT_EQ(p.key, want) << "'" << text << "'";
}

void ExpectRefused(std::string_view text, ValueType type, int max_hex_digits = 16) {
  EXPECT_FALSE(Parse(text, type, max_hex_digits).ok) << "'" << text << "'";
}

TEST(ValueKeyTest, StringsAreFingerprinted) {
  ExpectKey("abc", ValueType::kString, 0x534336681e009987ULL);
  ExpectKey(" ", ValueType::kString, Fingerprint64(" "));
  ExpectKey("123", ValueType::kString, Fingerprint64("123"));  // not the number
  ExpectRefused("", ValueType::kString);
}

// Two's-complement bits of the decimal value; int64's whole range, nothing
// past it.
TEST(ValueKeyTest, Int64IsTheTwosComplementBits) {
  ExpectKey("0", ValueType::kInt64, 0);
  ExpectKey("42", ValueType::kInt64, 42);
  ExpectKey("007", ValueType::kInt64, 7);
  ExpectKey("-1", ValueType::kInt64, ~uint64_t{0});
  ExpectKey("9223372036854775807", ValueType::kInt64, 0x7fffffffffffffffULL);
  ExpectKey("-9223372036854775808", ValueType::kInt64, 0x8000000000000000ULL);  // int64 minimum
  ExpectRefused("9223372036854775808", ValueType::kInt64);
  ExpectRefused("-9223372036854775809", ValueType::kInt64);
  ExpectRefused("18446744073709551615", ValueType::kInt64);
  for (std::string_view bad : {"", "-", "1.5", "1e3", "12a", " 7", "7 ", "0x10", "--1"}) {
    ExpectRefused(bad, ValueType::kInt64);
  }
}

// 1..max_hex_digits hex digits of either case; the digit limit counts
// digits, leading zeros included, so a value that fits is still refused
// past it; with a limit above 16 digits, a value past 64 bits is refused.
TEST(ValueKeyTest, HexWithinTheDigitLimit) {
  ExpectKey("0", ValueType::kHex, 0);
  ExpectKey("ff", ValueType::kHex, 255);
  ExpectKey("FF", ValueType::kHex, 255);
  ExpectKey("DeadBeef", ValueType::kHex, 0xdeadbeefULL);
  ExpectKey("ffffffffffffffff", ValueType::kHex, ~uint64_t{0});
  ExpectKey("0000000000000001", ValueType::kHex, 1);
  ExpectRefused("10000000000000000", ValueType::kHex);  // 17 digits
  ExpectRefused("00000000000000001", ValueType::kHex);  // 17 digits, value 1
  for (std::string_view bad : {"", "0x1f", "-1", "+1", "g1", "1 ", " 1", "1.0"}) {
    ExpectRefused(bad, ValueType::kHex);
  }
  // The Criteo limit: 8 digits.
  ExpectKey("ffffffff", ValueType::kHex, 0xffffffffULL, 8);
  ExpectKey("0abc", ValueType::kHex, 0xabc, 8);
  ExpectRefused("100000000", ValueType::kHex, 8);
  ExpectRefused("000000001", ValueType::kHex, 8);
  // A limit past 16 digits: leading zeros pass, overflow does not.
  ExpectKey("0000ffffffffffffffff", ValueType::kHex, ~uint64_t{0}, 20);
  ExpectRefused("10000000000000000", ValueType::kHex, 20);
  ExpectRefused("fffffffffffffffffff", ValueType::kHex, 20);
  // No digits allowed at all.
  ExpectRefused("1", ValueType::kHex, 0);
}

}  // namespace
}  // namespace lemrt::host
