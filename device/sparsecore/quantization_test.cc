#include "device/sparsecore/quantization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/random.h"
#include "device/sparsecore/sparse_core.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

// Float rounding of low + level x step: a few ulps of the range.
float Slack(const QuantizationParams& q) {
  return 4 * std::numeric_limits<float>::epsilon() * std::max(std::abs(q.low), std::abs(q.high));
}

TEST(QuantizationTest, RoundTripErrorIsAtMostHalfAStep) {
  for (const QuantizationParams q : {QuantizationParams{256, -0.5f, 0.5f},
                                     QuantizationParams{2, -1.0f, 3.0f},
                                     QuantizationParams{17, 0.25f, 0.75f}}) {
    base::CounterRng rng(42);
    std::vector<float> v(10000);
    for (float& x : v) x = q.low + static_cast<float>(rng.NextDouble()) * (q.high - q.low);
    std::vector<float> back = v;
    QuantizeDequantize(q, back);
    const float bound = (q.high - q.low) / (q.num_buckets - 1) / 2;
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_LE(std::abs(back[i] - v[i]), bound + Slack(q)) << "value " << v[i];
      // The result is one of the num_buckets levels.
      const double level = (back[i] - q.low) / q.step();
      EXPECT_NEAR(level, std::round(level), 1e-3);
      EXPECT_GE(std::round(level), 0);
      EXPECT_LE(std::round(level), q.num_buckets - 1);
    }
    // Levels come back unchanged.
    std::vector<float> levels = {q.low, q.low + q.step(), q.high};
    std::vector<float> again = levels;
    QuantizeDequantize(q, again);
    for (size_t i = 0; i < levels.size(); ++i) EXPECT_NEAR(again[i], levels[i], Slack(q));
  }
}

TEST(QuantizationTest, ValuesOutsideTheRangeAreClipped) {
  const QuantizationParams q{256, -0.5f, 0.5f};
  std::vector<float> v = {-7.0f, -0.5001f, 0.5001f, 3.0f, 1e30f, -1e30f};
  QuantizeDequantize(q, v);
  EXPECT_NEAR(v[0], -0.5f, Slack(q));
  EXPECT_NEAR(v[1], -0.5f, Slack(q));
  EXPECT_NEAR(v[2], 0.5f, Slack(q));
  EXPECT_NEAR(v[3], 0.5f, Slack(q));
  EXPECT_NEAR(v[4], 0.5f, Slack(q));
  EXPECT_NEAR(v[5], -0.5f, Slack(q));
}

TEST(QuantizationTest, Int8RowRoundTrip) {
  base::CounterRng rng(7);
  std::vector<float> row(37);
  for (float& x : row) x = static_cast<float>(rng.NextDouble() * 3 - 1);
  const float lo = *std::min_element(row.begin(), row.end());
  const float hi = *std::max_element(row.begin(), row.end());
  std::vector<float> back = row;
  const float err = Int8RoundTripRow(back);
  const float half_scale = (hi - lo) / 255 / 2;
  float max_seen = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    max_seen = std::max(max_seen, std::abs(back[i] - row[i]));
    EXPECT_LE(std::abs(back[i] - row[i]), half_scale * 1.0001f);
  }
  EXPECT_EQ(err, max_seen);
  EXPECT_GT(err, 0);
  // The extremes are levels 0 and 255.
  EXPECT_FLOAT_EQ(*std::min_element(back.begin(), back.end()), lo);
  EXPECT_NEAR(*std::max_element(back.begin(), back.end()), hi, 1e-6);
  std::vector<float> constant(5, 0.3f);
  EXPECT_EQ(Int8RoundTripRow(constant), 0.0f);
  EXPECT_EQ(constant[4], 0.3f);
}

TEST(QuantizationTest, FromConfig) {
  auto c = config::ParseConfig(R"pb(
    tables { name: "q" vocab_size: 10 dim: 4 combiner: SUM
             quantization { num_buckets: 16 low: -0.1 high: 0.2 } }
    tables { name: "f" vocab_size: 10 dim: 4 combiner: SUM }
    features { name: "a" table: "q" } features { name: "b" table: "f" }
    model { num_dense_features: 1 bottom_mlp: 4 top_mlp: 1 }
    training { global_batch: 4 })pb", "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const TableQuantization q = TableQuantization::FromConfig(*c);
  EXPECT_TRUE(q.any());
  ASSERT_NE(q.table(0), nullptr);
  EXPECT_EQ(q.table(0)->num_buckets, 16);
  EXPECT_FLOAT_EQ(q.table(0)->low, -0.1f);
  EXPECT_EQ(q.table(1), nullptr);
}

TEST(QuantizationTest, ConfigErrors) {
  const char* base = R"pb(
    features { name: "a" table: "q" }
    model { num_dense_features: 1 bottom_mlp: 4 top_mlp: 1 }
    training { global_batch: 4 })pb";
  for (const char* bad : {
           R"pb(tables { name: "q" vocab_size: 10 dim: 4 quantization { num_buckets: 1 low: 0 high: 1 } })pb",
           R"pb(tables { name: "q" vocab_size: 10 dim: 4 quantization { low: 1 high: 1 } })pb",
           R"pb(tables { name: "q" vocab_size: 10 dim: 4 quantization { low: 0 } })pb"}) {
    auto c = config::ParseConfig(std::string(bad) + base, "t", "", 1);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(std::string(c.status().message()).find("table 'q'"), std::string::npos)
        << c.status();
  }
}

// The quantized lookup equals a dense reference that pools the quantized
// rows; the unquantized table is untouched, the f32 rows stay f32, and the
// update applies the straight-through gradient to the f32 rows.
TEST(QuantizationTest, LookupMatchesDenseReferenceOfQuantizedRows) {
  auto c = config::ParseConfig(R"pb(
    topology { sparse_cores_per_chip: 1 tiles_per_sparse_core: 3 simd_width: 2 }
    tables { name: "q" vocab_size: 12 dim: 5 combiner: SUM
             initializer { uniform { scale: 0.5 } }
             quantization { num_buckets: 8 low: -0.3 high: 0.3 } }
    tables { name: "f" vocab_size: 9 dim: 3 combiner: SUM }
    features { name: "a" table: "q" max_sequence_length: 3 }
    features { name: "b" table: "f" max_sequence_length: 2 }
    model { num_dense_features: 1 bottom_mlp: 4 top_mlp: 1 }
    training { global_batch: 4 embedding_learning_rate: 0.5 })pb", "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  SgdOptimizer sgd(0.5f);
  const Optimizer* opts[] = {&sgd, &sgd};
  SparseCore sc(*c, /*global_sc=*/0, opts);
  const QuantizationParams qp{8, -0.3f, 0.3f};
  auto row = [&](int t, int64_t j) {
    return std::vector<float>(sc.shard(t).row(j), sc.shard(t).row(j) + sc.shard(t).dim());
  };
  // Entries: (col, sample, feature, table, gain); groups per (feature, sample).
  std::vector<layout::CooEntry> seg = {{1, 0, 0, 0, 1.0f}, {4, 0, 0, 0, 2.0f}, {11, 0, 0, 0, 0.5f},
                                       {2, 0, 1, 1, 1.0f}, {4, 1, 0, 0, 1.0f}, {7, 1, 1, 1, 3.0f}};
  std::vector<std::vector<float>> f32_before;
  for (const auto& e : seg) f32_before.push_back(row(e.table, e.col));
  std::vector<std::span<const layout::CooEntry>> segs = {seg};
  std::vector<float> partials(PartialFloats(seg, sc.table_dims()));
  std::vector<float*> outs = {partials.data()};
  SparseCoreStepState state;
  sc.Forward(segs, outs, &state);
  ASSERT_TRUE(state.debug_status.ok());
  // Dense reference: pool quantized copies of table q's rows, f32 rows of f.
  size_t at = 0, i = 0;
  bool some_clipped = false;
  while (i < seg.size()) {
    const int dim = seg[i].table == 0 ? 5 : 3;
    std::vector<double> pooled(dim, 0.0);
    size_t j = i;
    for (; j < seg.size() && layout::SameGroup(seg[i], seg[j]); ++j) {
      std::vector<float> r = row(seg[j].table, seg[j].col);
      if (seg[j].table == 0) {
        for (float x : r) some_clipped |= std::abs(x) > 0.3f;
        QuantizeDequantize(qp, r);
      }
      for (int d = 0; d < dim; ++d) pooled[d] += seg[j].gain * r[d];
    }
    for (int d = 0; d < dim; ++d) EXPECT_NEAR(partials[at + d], pooled[d], 1e-6) << at + d;
    at += dim;
    i = j;
  }
  EXPECT_EQ(at, partials.size());
  EXPECT_TRUE(some_clipped);  // scale 0.5 puts values beyond +-0.3
  // The table still holds f32 (unquantized) rows.
  for (size_t k = 0; k < seg.size(); ++k) EXPECT_EQ(row(seg[k].table, seg[k].col), f32_before[k]);
  // Backward: straight-through, the f32 row moves by -lr x gain x grad.
  std::vector<float> grads(partials.size(), 1.0f);
  std::vector<const float*> ins = {grads.data()};
  sc.Backward(segs, ins, &state);
  const std::vector<float> r11 = row(0, 11);
  for (int d = 0; d < 5; ++d) EXPECT_FLOAT_EQ(r11[d], f32_before[2][d] - 0.5f * 0.5f);
}

}  // namespace
}  // namespace lemrt::device
