#include "device/sparsecore/sparse_core.h"

#include <vector>

#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

constexpr char kConfig[] = R"pb(
topology { sparse_cores_per_chip: 2 }
tables { name: "t0" vocab_size: 10 dim: 3 combiner: SUM }
features { name: "f0" table: "t0" max_sequence_length: 4 }
model { num_dense_features: 1 bottom_mlp: 3 top_mlp: 1 }
training { global_batch: 2 embedding_learning_rate: 0.5 }
)pb";

using host::CooEntry;

TEST(SparseCoreTest, PartialFloatsCountsGroups) {
  std::vector<CooEntry> seg = {{1, 0, 0, 0, 1}, {3, 0, 0, 0, 1}, {1, 1, 0, 0, 1}, {5, 1, 1, 0, 1}};
  std::vector<int> dims = {4};
  EXPECT_EQ(PartialFloats(seg, dims), 12);  // groups (f0,r0), (f0,r1), (f1,r1)
  EXPECT_EQ(PartialFloats({}, dims), 0);
}

// SparseCore 1 of 2 owns odd rows; two segments share row 3, which is
// gathered once and updated once with the summed gradient.
TEST(SparseCoreTest, LookupAndUpdateOnOneSparseCore) {
  auto c = config::ParseConfig(kConfig, "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  SgdOptimizer sgd(0.5f);
  const Optimizer* opts[] = {&sgd};
  SparseCore sc(*c, /*global_sc=*/1, opts);
  const TableShard& shard = sc.shard(0);
  ASSERT_EQ(shard.local_rows(), 5);  // rows 1, 3, 5, 7, 9
  auto row = [&](int64_t j) { return std::vector<float>(shard.row(j / 2), shard.row(j / 2) + 3); };
  const std::vector<float> r3 = row(3), r5 = row(5), r7 = row(7);

  std::vector<CooEntry> a = {{3, 0, 0, 0, 2.0f}, {5, 0, 0, 0, 1.0f}};  // sample 0: 2*r3 + r5
  std::vector<CooEntry> b = {{3, 1, 0, 0, 1.0f}, {7, 2, 0, 0, 0.5f}};  // sample 1: r3; 2: r7/2
  std::vector<std::span<const CooEntry>> segs = {a, b};
  std::vector<float> pa(3), pb(6);
  std::vector<float*> outs = {pa.data(), pb.data()};
  SparseCoreStepState state;
  sc.Forward(segs, outs, &state);
  EXPECT_EQ(state.unique_keys.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(pa[k], 2 * r3[k] + r5[k]);
    EXPECT_FLOAT_EQ(pb[k], r3[k]);
    EXPECT_FLOAT_EQ(pb[3 + k], 0.5f * r7[k]);
  }
  std::vector<float> ga = {1, 2, 3}, gb = {0.5f, 0.5f, 0.5f, 4, 4, 4};
  std::vector<const float*> ins = {ga.data(), gb.data()};
  sc.Backward(segs, ins, &state);
  for (int k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(row(3)[k], r3[k] - 0.5f * (2 * ga[k] + gb[k]));
    EXPECT_FLOAT_EQ(row(5)[k], r5[k] - 0.5f * ga[k]);
    EXPECT_FLOAT_EQ(row(7)[k], r7[k] - 0.5f * 0.5f * gb[3 + k]);
  }
}

}  // namespace
}  // namespace lemrt::device
