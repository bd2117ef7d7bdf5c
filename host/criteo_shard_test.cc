#include "host/criteo_shard.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "glog/logging.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "host/criteo_reader.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// Shares tile [0, n) in rank order, differ by at most one, and equal the
// plain floor(r n / W) (computed in 128 bits) for every rank.
TEST(RankShareTest, TilesTheRangeLikeFloorDivision) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 3;
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, big}) {
    for (int w = 1; w <= 5; ++w) {
      int64_t expected_begin = 0;
      int64_t min_size = n, max_size = 0;
      for (int r = 0; r < w; ++r) {
        const ShardRange s = RankShare(n, r, w);
        EXPECT_EQ(s.begin, expected_begin) << n << " " << r << "/" << w;
        const __int128 floor_begin = static_cast<__int128>(n) * r / w;
        EXPECT_TRUE(floor_begin == s.begin) << n << " " << r << "/" << w;
        min_size = std::min(min_size, s.size());
        max_size = std::max(max_size, s.size());
        expected_begin = s.end;
      }
      EXPECT_EQ(expected_begin, n);
      EXPECT_LE(max_size - min_size, 1);
    }
  }
}

config::RunConfig TwoTables() {
  config::RunConfig config;
  CHECK(google::protobuf::TextFormat::ParseFromString(
      R"pb(tables { name: "a" vocab_size: 1000 }
           tables { name: "b" vocab_size: 5 }
           features { name: "f0" table: "b" }
           features { name: "f1" table: "a" input_column: 25 })pb",
      &config));
  return config;
}

TEST(ResolveCriteoFeaturesTest, DefaultAndExplicitColumns) {
  const auto features = ResolveCriteoFeatures(TwoTables(), "lines");
  ASSERT_TRUE(features.ok()) << features.status();
  ASSERT_EQ(features->size(), 2u);
  EXPECT_EQ((*features)[0].column, 0);
  EXPECT_EQ((*features)[0].table, 1);
  EXPECT_EQ((*features)[0].vocab, 5);
  EXPECT_EQ((*features)[1].column, 25);
  EXPECT_EQ((*features)[1].table, 0);
  EXPECT_EQ((*features)[1].vocab, 1000);
}

TEST(ResolveCriteoFeaturesTest, ErrorsNameTheFeature) {
  config::RunConfig bad_column = TwoTables();
  bad_column.mutable_features(1)->set_input_column(26);
  const auto a = ResolveCriteoFeatures(bad_column, "records");
  EXPECT_THAT(a.status().message(), HasSubstr("feature 'f1' reads Criteo category column 26; "
                                              "records have columns 0..25"));
  config::RunConfig bad_table = TwoTables();
  bad_table.mutable_features(0)->set_table("zz");
  const auto b = ResolveCriteoFeatures(bad_table, "lines");
  EXPECT_THAT(b.status().message(), HasSubstr("feature 'f0' names table 'zz'"));
}

TEST(AppendCriteoSampleTest, FillsLabelDenseAndIds) {
  const auto features = ResolveCriteoFeatures(TwoTables(), "lines");
  ASSERT_TRUE(features.ok());
  CriteoLine line;
  line.label = 1.0f;
  for (int k = 0; k < CriteoLine::kNumIntegers; ++k) line.dense[k] = k + 0.5f;
  line.category[0] = 0xabc;
  line.category_present = 1u;  // Column 25 missing.
  Batch batch;
  batch.Resize(2, 15, 2);
  AppendCriteoSample(line, *features, 15, 0, &batch);
  line.category_present |= 1u << 25;
  line.category[25] = 7;
  AppendCriteoSample(line, *features, 15, 1, &batch);
  EXPECT_EQ(batch.labels[1], 1.0f);
  for (int k = 0; k < 15; ++k) {
    EXPECT_EQ(batch.dense[15 + k], k < 13 ? k + 0.5f : 0.0f) << k;
  }
  EXPECT_EQ(batch.ids[0], (std::vector<int64_t>{CriteoCategoryId(0xabc, 1, 5),
                                                CriteoCategoryId(0xabc, 1, 5)}));
  EXPECT_EQ(batch.offsets[0], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(batch.ids[1], (std::vector<int64_t>{CriteoCategoryId(7, 0, 1000)}));
  EXPECT_EQ(batch.offsets[1], (std::vector<int64_t>{0, 0, 1}));
}

}  // namespace
}  // namespace lemrt::host
