#include "host/coo.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// Builds a one-feature batch from per-sample id lists.
Batch OneFeatureBatch(const std::vector<std::vector<int64_t>>& samples) {
  Batch b;
  b.Resize(static_cast<int64_t>(samples.size()), 1, 1);
  for (size_t i = 0; i < samples.size(); ++i) {
    b.ids[0].insert(b.ids[0].end(), samples[i].begin(), samples[i].end());
    b.offsets[0][i + 1] = static_cast<int64_t>(b.ids[0].size());
  }
  return b;
}

CooOptions Options(int S, int N, config::TableConfig::Combiner combiner, int64_t vocab = 100) {
  CooOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.features.push_back({0, vocab, combiner});
  return o;
}

// The reference's section 3 example: samples [A], [A, B, C], [B, B, D].
TEST(CooTest, ReferenceExampleDedupWithinSample) {
  const int64_t A = 10, B = 11, C = 12, D = 13;
  Batch batch = OneFeatureBatch({{A}, {A, B, C}, {B, B, D}});
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM));
  PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  std::vector<int32_t> rows;
  std::vector<int64_t> cols;
  std::vector<float> gains;
  for (const CooEntry& e : coo.entries) {
    rows.push_back(e.row);
    cols.push_back(e.col);
    gains.push_back(e.gain);
  }
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(cols, (std::vector<int64_t>{A, A, B, C, B, D}));
  EXPECT_EQ(gains, (std::vector<float>{1, 1, 1, 1, 2, 1}));  // duplicate B merged
  EXPECT_EQ(coo.ids_total, 7);
  EXPECT_EQ(coo.ids_after_dedup, 6);
}

TEST(CooTest, CombinerGains) {
  Batch batch = OneFeatureBatch({{1, 1, 2, 3}});
  PartitionedCoo coo;
  CooBuilder mean(Options(1, 1, config::TableConfig::MEAN));
  ASSERT_TRUE(mean.Build(batch, &coo).ok());
  EXPECT_FLOAT_EQ(coo.entries[0].gain, 0.5f);
  EXPECT_FLOAT_EQ(coo.entries[1].gain, 0.25f);
  CooBuilder sqrtn(Options(1, 1, config::TableConfig::SQRTN));
  ASSERT_TRUE(sqrtn.Build(batch, &coo).ok());
  EXPECT_FLOAT_EQ(coo.entries[0].gain, 1.0f);  // 2 / sqrt(4)
  EXPECT_FLOAT_EQ(coo.entries[2].gain, 0.5f);
}

// Every entry lands in segment (col % N, row / (B / S)), sorted inside it, and
// nothing is lost.
TEST(CooTest, ModShardingOverAllSparseCores) {
  const int S = 2, N = 6;
  std::vector<std::vector<int64_t>> samples;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> ids;
    for (int k = 0; k < 1 + i % 4; ++k) ids.push_back((i * 37 + k * 11) % 50);
    samples.push_back(ids);
  }
  Batch batch = OneFeatureBatch(samples);
  CooBuilder builder(Options(S, N, config::TableConfig::SUM, 50));
  PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  std::map<std::pair<int64_t, int64_t>, float> seen;
  for (int d = 0; d < N; ++d) {
    for (int s = 0; s < S; ++s) {
      auto seg = coo.segment(d, s);
      for (size_t k = 0; k < seg.size(); ++k) {
        EXPECT_EQ(seg[k].col % N, d);
        EXPECT_EQ(seg[k].row / 4, s);
        if (k > 0) {
          EXPECT_LT(std::tie(seg[k - 1].feature, seg[k - 1].row, seg[k - 1].col),
                    std::tie(seg[k].feature, seg[k].row, seg[k].col));
        }
        seen[{seg[k].row, seg[k].col}] += seg[k].gain;
      }
    }
  }
  std::map<std::pair<int64_t, int64_t>, float> expected;
  for (size_t i = 0; i < samples.size(); ++i) {
    for (int64_t id : samples[i]) expected[{static_cast<int64_t>(i), id}] += 1;
  }
  EXPECT_EQ(seen, expected);
}

TEST(CooTest, EmptyBatchAndEmptySamples) {
  PartitionedCoo coo;
  CooBuilder builder(Options(2, 4, config::TableConfig::SUM));
  ASSERT_TRUE(builder.Build(OneFeatureBatch({}), &coo).ok());
  EXPECT_TRUE(coo.entries.empty());
  ASSERT_TRUE(builder.Build(OneFeatureBatch({{}, {}}), &coo).ok());
  EXPECT_TRUE(coo.entries.empty());
  EXPECT_EQ(coo.segment_offsets.size(), 9u);
}

TEST(CooTest, IdOutOfRangeNamesFeatureAndSample) {
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM, 10));
  PartitionedCoo coo;
  absl::Status st = builder.Build(OneFeatureBatch({{1}, {3, 10}}), &coo);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("id 10 of feature 0 (table 0) in sample 1"));
  EXPECT_THAT(st.message(), HasSubstr("[0, 10)"));
}

// With the id bound check off, ids are wrapped into the vocabulary (mod) and
// then deduplicated like any other id.
TEST(CooTest, IdBoundCheckOffWrapsIds) {
  CooOptions o = Options(1, 1, config::TableConfig::SUM, 10);
  o.id_bound_check = false;
  CooBuilder builder(o);
  PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(OneFeatureBatch({{13, 3, -7}}), &coo).ok());
  ASSERT_EQ(coo.entries.size(), 1u);
  EXPECT_EQ(coo.entries[0].col, 3);
  EXPECT_EQ(coo.entries[0].gain, 3.0f);
}

TEST(CooTest, MaxIdsPerChipPerSampleObservedVsLimit) {
  CooOptions o = Options(1, 1, config::TableConfig::SUM);
  o.max_ids_per_chip_per_sample = 2;
  CooBuilder builder(o);
  PartitionedCoo coo;
  EXPECT_TRUE(builder.Build(OneFeatureBatch({{1, 1, 1, 2}}), &coo).ok());  // 2 after dedup
  absl::Status st = builder.Build(OneFeatureBatch({{1, 2, 3}}), &coo);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("has 3 ids"));
  EXPECT_THAT(st.message(), HasSubstr("max_ids_per_chip_per_sample = 2"));
}

}  // namespace
}  // namespace lemrt::host
