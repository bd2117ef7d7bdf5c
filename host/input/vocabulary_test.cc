#include "host/input/vocabulary.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/input/value_key.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/vocabulary_testXXXXXX";
  return mkdtemp(tmpl);
}

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(VocabularyTest, ReadsOneValueALineWithCountsAndCrlf) {
  const std::string dir = TempDir();
  auto v = Vocabulary::Load(Write(dir, "v.txt", "b\t10\r\na\t3\nd\r\nc"), ValueType::kString,
                            0);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)->size(), 4);
  // Each value is the text before the tab or the line break, at its line.
  auto entry = [&](std::string_view value) {
    uint64_t key = 0;
    EXPECT_TRUE(ParseValueKey(value, ValueType::kString, 0, &key));
    return (*v)->Find(key);
  };
  EXPECT_EQ(entry("b"), 0);
  EXPECT_EQ(entry("a"), 1);
  EXPECT_EQ(entry("d"), 2);
  EXPECT_EQ(entry("c"), 3);
  EXPECT_EQ(entry("d\r"), -1);
  EXPECT_EQ(entry("b\t10"), -1);
}

TEST(VocabularyTest, RefusesBinaryFilesLongLinesAndNonRegularFiles) {
  const std::string dir = TempDir();
  auto st = Vocabulary::Load(Write(dir, "b.bin", std::string("ab\ncd\0ef\n", 9)),
                             ValueType::kString, 0).status();
  EXPECT_THAT(st.message(), HasSubstr("b.bin:2: the line has a NUL byte: a binary file"));
  const std::string long_line(Vocabulary::kMaxLineBytes + 1, 'y');
  st = Vocabulary::Load(Write(dir, "l.txt", "x\n" + long_line), ValueType::kString, 0).status();
  EXPECT_THAT(st.message(), HasSubstr("l.txt:2: the line is longer than 65536 bytes"));
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  st = Vocabulary::Load(fifo, ValueType::kString, 0).status();  // returns, never blocks
  EXPECT_THAT(st.message(), HasSubstr("vocabulary '" + fifo + "' is a FIFO"));
  st = Vocabulary::Load(Write(dir, "e.txt", ""), ValueType::kString, 0).status();
  EXPECT_THAT(st.message(), HasSubstr("has no values"));
  st = Vocabulary::Load(Write(dir, "d.txt", "a\nb\na\n"), ValueType::kString, 0).status();
  EXPECT_THAT(st.message(), HasSubstr("d.txt:3: 'a' appears twice"));
}

}  // namespace
}  // namespace lemrt::host
