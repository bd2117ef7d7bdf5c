#include "layout/limits.h"

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::layout {
namespace {

using ::testing::HasSubstr;

config::RunConfig Config(const std::string& sparse_core) {
  auto c = config::ParseConfig(absl::StrCat(R"pb(
                                              topology { sparse_cores_per_chip: 4 }
                                              tables { name: "a" vocab_size: 100 dim: 4 }
                                              tables { name: "b" vocab_size: 100 dim: 4 }
                                              tables { name: "c" vocab_size: 100 dim: 4 }
                                              features { name: "fa" table: "a" }
                                              model { bottom_mlp: 4 top_mlp: 1 }
                                              training { global_batch: 8 }
                                              sparse_core {)pb",
                                            sparse_core, " }"),
                               "test", "", 2);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

std::string TempFile(const std::string& text) {
  std::string path = testing::TempDir() + "/limits_test.pbtxt";
  std::ofstream(path) << text;
  return path;
}

TEST(LimitsTest, UnlimitedByDefault) {
  auto l = ResolveLimits(Config(""));
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->tables.size(), 3u);
  EXPECT_FALSE(l->any_limited());
  EXPECT_EQ(l->table_names[2], "c");
}

TEST(LimitsTest, PrecedenceFileOverTableMapOverGlobal) {
  const std::string path =
      TempFile(R"pb(tables { table: "a" max_ids_per_partition: 11 }
                    tables { table: "c" max_unique_ids_per_partition: 3 })pb");
  // 8 SparseCores in all: max_ids_per_table 80 -> 10 per partition, 81 -> 11.
  auto l = ResolveLimits(Config(absl::StrCat(
      "max_ids_per_partition: 50 max_unique_ids_per_partition: 40 ",
      "max_ids_per_table { key: 'a' value: 80 } max_ids_per_table { key: 'b' value: 81 } ",
      "max_unique_ids_per_table { key: 'b' value: 16 } limits_file: '", path, "'")));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->tables[0].max_ids, 11);         // file
  EXPECT_EQ(l->tables[0].max_unique_ids, 40);  // global
  EXPECT_EQ(l->tables[1].max_ids, 11);         // ceil(81 / 8)
  EXPECT_EQ(l->tables[1].max_unique_ids, 2);   // 16 / 8
  EXPECT_EQ(l->tables[2].max_ids, 50);
  EXPECT_EQ(l->tables[2].max_unique_ids, 3);
}

TEST(LimitsTest, FileErrors) {
  auto missing = ResolveLimits(Config("limits_file: '/nonexistent/limits.pbtxt'"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::string path = TempFile("tables { table: 'zz' max_ids_per_partition: 3 }");
  auto unknown = ResolveLimits(Config(absl::StrCat("limits_file: '", path, "'")));
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("table 'zz'"));
  path = TempFile("tables { table: 'a' max_ids_per_partition: 0 }");
  auto zero = ResolveLimits(Config(absl::StrCat("limits_file: '", path, "'")));
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("must be > 0"));
  path = TempFile("tables { table: 'a'\n bogus: 1 }");
  auto bad = ResolveLimits(Config(absl::StrCat("limits_file: '", path, "'")));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("limits_test.pbtxt:2:"));
  path = TempFile(
      "tables { table: 'a' max_ids_per_partition: 3 }\n"
      "tables { table: 'a' max_ids_per_partition: 5 }");
  auto twice = ResolveLimits(Config(absl::StrCat("limits_file: '", path, "'")));
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(),
              HasSubstr("tables[1] names table 'a' again (tables[0] did)"));
}

TEST(LimitsTest, WriteThenReadRoundTrips) {
  config::LimitsFile f;
  auto* e = f.add_tables();
  e->set_table("b");
  e->set_max_ids_per_partition(17);
  e->set_max_unique_ids_per_partition(9);
  const std::string path = testing::TempDir() + "/limits_roundtrip.pbtxt";
  ASSERT_TRUE(WriteLimitsFile(f, path).ok());
  auto l = ResolveLimits(Config(absl::StrCat("limits_file: '", path, "'")));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->tables[1].max_ids, 17);
  EXPECT_EQ(l->tables[1].max_unique_ids, 9);
  EXPECT_FALSE(l->tables[0].limited());
}

}  // namespace
}  // namespace lemrt::layout
