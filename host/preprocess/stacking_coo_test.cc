// Table stacking as host preprocessing applies it (layout/stacking.h): the
// COO builder sends ids to their stacked destination and the minibatch
// splitter counts, limits and drops per stack.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/preprocess/coo.h"
#include "host/preprocess/minibatch.h"
#include "layout/row_placement.h"
#include "layout/stacking.h"
#include "proto/config_loader.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// Four tables on N = 4 SparseCores (2 per chip, 2 chips): a and b (dim 12
// pads to 16) stack; c (another combiner) and d (another optimizer) stand
// alone: three stacks.
config::RunConfig ThreeStackConfig() {
  const std::string text = R"pb(
    topology { sparse_cores_per_chip: 2 }
    tables { name: "a" vocab_size: 100 dim: 16 combiner: SUM optimizer { adagrad {} } }
    tables { name: "b" vocab_size: 50 dim: 12 combiner: SUM optimizer { adagrad {} } }
    tables { name: "c" vocab_size: 30 dim: 16 combiner: MEAN optimizer { adagrad {} } }
    tables { name: "d" vocab_size: 20 dim: 16 combiner: SUM }
    features { name: "a1" table: "a" }
    features { name: "d1" table: "d" }
    features { name: "a2" table: "a" max_sequence_length: 3 }
    features { name: "b1" table: "b" }
    features { name: "c1" table: "c" }
    model { num_dense_features: 1 bottom_mlp: 16 top_mlp: 1 }
    training { global_batch: 16 embedding_learning_rate: 0.05 }
  )pb";
  auto c = config::ParseConfig(text, "test", "", 2);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : config::RunConfig();
}

Batch OneTableBatch(const std::vector<std::vector<std::vector<int64_t>>>& per_feature) {
  Batch b;
  b.Resize(static_cast<int64_t>(per_feature[0].size()), 1,
           static_cast<int>(per_feature.size()));
  for (size_t f = 0; f < per_feature.size(); ++f) {
    for (size_t i = 0; i < per_feature[f].size(); ++i) {
      b.ids[f].insert(b.ids[f].end(), per_feature[f][i].begin(), per_feature[f][i].end());
      b.offsets[f][i + 1] = static_cast<int64_t>(b.ids[f].size());
    }
  }
  return b;
}

// Feature stacking: two features on one table count, per partition, like
// one feature whose samples are the two features' samples concatenated
// (ids unchanged; per-sample dedup per (feature, sample); unique ids over
// both features).
TEST(StackedCooTest, FeaturesSharingATableCountLikeConcatenatedSamples) {
  const std::vector<std::vector<int64_t>> f0 = {{1, 5, 5}, {5, 9}, {2}, {6, 2, 2}};
  const std::vector<std::vector<int64_t>> f1 = {{5}, {1, 1}, {9, 2, 3}, {}};
  std::vector<std::vector<int64_t>> concatenated = f0;
  concatenated.insert(concatenated.end(), f1.begin(), f1.end());
  auto counts = [](const Batch& batch) {
    CooOptions o;
    o.local_sparse_cores = 1;
    o.total_sparse_cores = 3;
    for (int f = 0; f < batch.num_features(); ++f) {
      o.features.push_back(FeatureSpec{.table = 0,
                                       .vocab_size = 100,
                                       .combiner = config::TableConfig::SUM,
                                       .name = "",
                                       .table_name = "",
                                       .sc_shift = 0});
    }
    CooBuilder builder(o);
    layout::PartitionedCoo coo;
    EXPECT_TRUE(builder.Build(batch, &coo).ok());
    MinibatchOptions mo;
    mo.local_sparse_cores = 1;
    mo.total_sparse_cores = 3;
    mo.limits.tables = {layout::TableLimit{}};
    mo.limits.table_names = {"t"};
    MinibatchSplitter splitter(mo);
    splitter.PlanLocal(coo);
    std::vector<std::pair<int, int>> out;
    for (const layout::PartitionCount& c : splitter.counts()) out.push_back({c.ids, c.unique_ids});
    return out;
  };
  const auto stacked = counts(OneTableBatch({f0, f1}));
  EXPECT_EQ(stacked, counts(OneTableBatch({concatenated})));
  // By hand: SC 0 gets 9, 6, 9, 3 (ids 4, unique 3); SC 1 gets 1, 1 (2, 1);
  // SC 2 gets 5, 5, 2, 2, 5, 2 (6, 2).
  EXPECT_EQ(stacked, (std::vector<std::pair<int, int>>{{4, 3}, {2, 1}, {6, 2}}));
}

// The COO sends every id to its stacked destination, and the splitter
// counts partitions per stack: two stacked tables' ids in one partition.
TEST(StackedCooTest, CooDestinationsAndPartitionCountsArePerStack) {
  const config::RunConfig c = ThreeStackConfig();  // S = 2, N = 4
  const layout::StackingPlan plan = layout::StackingPlan::FromConfig(c);
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(c);
  CooOptions o = MakeCooOptions(c);
  o.local_sparse_cores = 1;  // one source SC: 8 samples
  Batch batch;
  batch.Resize(8, 1, c.features_size());
  for (int f = 0; f < c.features_size(); ++f) {
    for (int64_t i = 0; i < 8; ++i) {
      batch.ids[f].push_back((i * 7 + f) % 10);  // ids 0..9 are valid everywhere
      batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
    }
  }
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  std::map<std::pair<int, int>, std::set<int64_t>> unique;  // (stack, dest) -> stacked rows
  std::map<std::pair<int, int>, int> ids;
  for (int d = 0; d < 4; ++d) {
    for (const layout::CooEntry& e : coo.segment(d, 0)) {
      EXPECT_EQ(plan.DestinationSc(e.table, e.col), d);
      EXPECT_EQ(placement.OwnerSc(e.table, e.col), d);
      const auto [stack, row] = plan.Stack(e.table, e.col);
      EXPECT_EQ(row % 4, d);
      unique[{stack, d}].insert(row);
      ++ids[{stack, d}];
    }
  }
  MinibatchOptions mo;
  mo.local_sparse_cores = 1;
  mo.total_sparse_cores = 4;
  mo.stacking = plan.tables();
  mo.limits.tables.assign(plan.num_stacks(), layout::TableLimit{});
  mo.limits.table_names.assign(plan.num_stacks(), "s");
  MinibatchSplitter splitter(mo);
  splitter.PlanLocal(coo);
  ASSERT_EQ(splitter.counts().size(), size_t{3 * 4});
  for (int s = 0; s < 3; ++s) {
    for (int d = 0; d < 4; ++d) {
      const std::pair<int, int> partition(s, d);
      EXPECT_EQ(splitter.counts()[s * 4 + d].ids, ids[partition]) << s << " " << d;
      EXPECT_EQ(splitter.counts()[s * 4 + d].unique_ids,
                static_cast<int>(unique[partition].size()));
    }
  }
}

// Limits are per stack: the error names the stack, and dropping keeps the
// lowest stacked rows and counts drops per original table.
TEST(StackedCooTest, LimitErrorNamesTheStackAndDropsCountPerTable) {
  // Tables 0 and 1 stacked, N = 2, rotation 1: table 1's id j goes to SC
  // (j + 1) % 2. One sample: table 0 ids {0, 2}, table 1 ids {1, 3} -> all
  // on SC 0; stacked rows 0, 2 (table 0) and 4 + 0, 4 + 2 (table 1, padded
  // offset 4).
  const layout::StackingPlan plan = layout::StackingPlan::FromGroups({{0, 1}}, {4, 4}, 2, 1);
  CooOptions o;
  o.local_sparse_cores = 1;
  o.total_sparse_cores = 2;
  o.features.push_back(FeatureSpec{.table = 0,
                                   .vocab_size = 4,
                                   .combiner = config::TableConfig::SUM,
                                   .name = "",
                                   .table_name = "",
                                   .sc_shift = 0});
  o.features.push_back(FeatureSpec{.table = 1,
                                   .vocab_size = 4,
                                   .combiner = config::TableConfig::SUM,
                                   .name = "",
                                   .table_name = "",
                                   .sc_shift = plan.table(1).sc_shift});
  Batch batch = OneTableBatch({{{0, 2}}, {{1, 3}}});
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  EXPECT_EQ(coo.segment(0, 0).size(), 4u);
  MinibatchOptions mo;
  mo.local_sparse_cores = 1;
  mo.total_sparse_cores = 2;
  mo.minibatching = false;
  mo.stacking = plan.tables();
  mo.limits.tables = {layout::TableLimit{3, 3}};
  mo.limits.table_names = {"t0+t1"};
  {
    MinibatchSplitter splitter(mo);
    EXPECT_EQ(splitter.PlanLocal(coo), 0u);
    EXPECT_EQ(splitter.counts()[0].ids, 4);
    std::vector<layout::PartitionedCoo> out;
    std::vector<int64_t> dropped;
    const absl::Status st = splitter.Split(coo, 0, &out, &dropped);
    EXPECT_THAT(std::string(st.message()),
                HasSubstr("table 't0+t1': the partition from SparseCore 0 to SparseCore 0 has 4 "
                          "ids after per-sample dedup, above max_ids_per_partition = 3"));
  }
  mo.allow_id_dropping = true;
  MinibatchSplitter splitter(mo);
  splitter.PlanLocal(coo);
  std::vector<layout::PartitionedCoo> out;
  std::vector<int64_t> dropped;
  ASSERT_TRUE(splitter.Split(coo, 0, &out, &dropped).ok());
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0], 0);
  EXPECT_EQ(dropped[1], 1);  // stacked row 6 = table 1's id 3 is the highest
  ASSERT_EQ(out[0].entries.size(), 3u);
  for (const layout::CooEntry& e : out[0].entries) EXPECT_FALSE(e.table == 1 && e.col == 3);
}

}  // namespace
}  // namespace lemrt::host
