#include "device/sparsecore/sparse_core.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "device/optimizers/adam.h"
#include "device/optimizers/ftrl.h"
#include "device/sparsecore/row_kernels.h"
#include "device/sparsecore/table_allocator.h"
#include "gtest/gtest.h"
#include "layout/row_placement.h"
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

using layout::CooEntry;

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

// Row 3 appears three times in one batch (twice in one sample's segment with
// different gains, once in another segment): its gradients are summed per id
// and Adam runs once per step on the sum, with t counting Backward calls.
TEST(SparseCoreTest, AdamSumsRepeatedIdsThenUpdatesOncePerStep) {
  auto c = config::ParseConfig(kConfig, "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const double lr = 0.1, b1 = 0.9, b2 = 0.99, eps = 1e-7;
  AdamOptimizer adam(lr, b1, b2, eps);
  const Optimizer* opts[] = {&adam};
  SparseCore sc(*c, /*global_sc=*/1, opts);
  const TableShard& shard = sc.shard(0);
  std::vector<double> w(shard.row(1), shard.row(1) + 3);  // global row 3
  std::vector<double> m(3, 0.0), v(3, 0.0);

  // Sample 0 (feature 0) has ids 3 (gain 2) and 3 again (gain 0.5) in one
  // group; sample 1 has 3 (gain 1).
  std::vector<CooEntry> a = {{3, 0, 0, 0, 2.0f}, {3, 0, 0, 0, 0.5f}};
  std::vector<CooEntry> b = {{3, 1, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a, b};
  SparseCoreStepState state;
  for (int t = 1; t <= 3; ++t) {
    std::vector<float> pa(3), pb(3);
    std::vector<float*> outs = {pa.data(), pb.data()};
    sc.Forward(segs, outs, &state);
    EXPECT_EQ(state.unique_keys.size(), 1u);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(pa[k], 2.5 * w[k], 1e-5);
    std::vector<float> ga = {0.1f * t, -0.2f, 0.3f}, gb = {1.0f, 0.7f, -0.25f * t};
    std::vector<const float*> ins = {ga.data(), gb.data()};
    sc.Backward(segs, ins, &state);
    for (int k = 0; k < 3; ++k) {
      const double g = 2.5 * ga[k] + 1.0 * gb[k];
      m[k] = b1 * m[k] + (1 - b1) * g;
      v[k] = b2 * v[k] + (1 - b2) * g * g;
      w[k] -= lr * (m[k] / (1 - std::pow(b1, t))) / (std::sqrt(v[k] / (1 - std::pow(b2, t))) + eps);
      EXPECT_NEAR(shard.row(1)[k], w[k], 1e-5) << "step " << t << " element " << k;
      EXPECT_NEAR(shard.row_slots(1)[k], m[k], 1e-6);
      EXPECT_NEAR(shard.row_slots(1)[3 + k], v[k], 1e-6);
    }
  }
  // Untouched rows keep their slots at zero (lazy Adam).
  for (float x : shard.row_slots(0)) EXPECT_EQ(x, 0.0f);
}

TEST(SparseCoreTest, FtrlSumsRepeatedIdsAndKeepsSlotsPerRow) {
  auto c = config::ParseConfig(kConfig, "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const double lr = 0.5, n0 = 0.1, l1 = 0.05, l2 = 0.01;
  FtrlOptimizer ftrl(lr, -0.5f, n0, l1, l2, 0.0f);
  const Optimizer* opts[] = {&ftrl};
  SparseCore sc(*c, /*global_sc=*/0, opts);  // even rows
  const TableShard& shard = sc.shard(0);
  for (int64_t r = 0; r < shard.local_rows(); ++r) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_FLOAT_EQ(shard.row_slots(r)[k], 0.1f);
      EXPECT_FLOAT_EQ(shard.row_slots(r)[3 + k], 0.0f);
    }
  }
  std::vector<double> w(shard.row(2), shard.row(2) + 3);  // global row 4
  std::vector<CooEntry> a = {{4, 0, 0, 0, 1.0f}, {4, 1, 0, 0, 3.0f}, {6, 1, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  std::vector<float> p(6);
  std::vector<float*> outs = {p.data()};
  SparseCoreStepState state;
  sc.Forward(segs, outs, &state);
  std::vector<float> g = {0.2f, -0.1f, 0.0f, 0.05f, 0.3f, -0.6f};
  std::vector<const float*> ins = {g.data()};
  sc.Backward(segs, ins, &state);
  for (int k = 0; k < 3; ++k) {
    const double gs = 1.0 * g[k] + 3.0 * g[3 + k];
    const double nn = n0 + gs * gs;
    const double z = gs - (std::sqrt(nn) - std::sqrt(n0)) / lr * w[k];
    const double want =
        std::abs(z) <= l1 ? 0.0 : ((z > 0 ? l1 : -l1) - z) / (std::sqrt(nn) / lr + 2 * l2);
    EXPECT_NEAR(shard.row(2)[k], want, 1e-5) << k;
    EXPECT_NEAR(shard.row_slots(2)[k], nn, 1e-6);
    EXPECT_NEAR(shard.row_slots(2)[3 + k], z, 1e-6);
  }
}

// Dense rows of 32 floats or more are staged in the tile buffer only when
// something must see the staged copy (here: the guard-word check); otherwise
// the combine pools them straight from the tables. Both must give the same
// partials and updates bit for bit, with a table read in place (dim 64) and
// a staged one (dim 7) in one segment, one-hot and multi-hot groups, and ids
// repeated within and across segments.
TEST(SparseCoreTest, StagedAndDirectCombineAgreeBitForBit) {
  constexpr char kTwoTables[] = R"pb(
topology { sparse_cores_per_chip: 1 }
tables { name: "wide" vocab_size: 50 dim: 64 combiner: SUM optimizer { adagrad {} } }
tables { name: "odd" vocab_size: 40 dim: 7 combiner: SUM }
features { name: "f0" table: "wide" max_sequence_length: 8 }
features { name: "f1" table: "odd" max_sequence_length: 8 }
model { num_dense_features: 1 bottom_mlp: 7 top_mlp: 1 }
training { global_batch: 8 embedding_learning_rate: 0.1 }
)pb";
  auto direct_config = config::ParseConfig(kTwoTables, "t", "", 1);
  ASSERT_TRUE(direct_config.ok()) << direct_config.status();
  config::RunConfig staged_config = *direct_config;
  staged_config.mutable_sparse_core()->set_debug_guard_words(true);
  AdagradOptimizer ada(0.1f, 0.1f, 1e-7f);
  SgdOptimizer sgd(0.1f);
  const Optimizer* opts[] = {&ada, &sgd};
  SparseCore direct(*direct_config, 0, opts), staged(staged_config, 0, opts);

  // Two segments; entries ordered by (feature, row, col), 1-4 ids per group.
  std::mt19937 rng(11);
  std::vector<std::vector<CooEntry>> seg_entries(2);
  for (auto& seg : seg_entries) {
    for (int feature = 0; feature < 2; ++feature) {
      for (int row = 0; row < 8; ++row) {
        const int ids = 1 + static_cast<int>(rng() % 4);
        const int64_t vocab = feature == 0 ? 50 : 40;
        std::vector<int64_t> cols;
        while (static_cast<int>(cols.size()) < ids) {
          // 12 consecutive columns, so "wide" is read in place; repeats.
          const int64_t c = static_cast<int64_t>(rng() % 12) + (vocab - 12);
          if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
        }
        std::sort(cols.begin(), cols.end());
        for (int64_t c : cols) {
          seg.push_back({c, row, feature, feature, 0.25f + static_cast<float>(rng() % 7)});
        }
      }
    }
  }
  std::vector<std::span<const CooEntry>> segs(seg_entries.begin(), seg_entries.end());
  const std::vector<int> dims = {64, 7};
  for (int step = 0; step < 2; ++step) {
    std::vector<std::vector<float>> p_direct(2), p_staged(2), grads(2);
    std::vector<float*> out_direct, out_staged;
    std::vector<const float*> in;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int k = 0; k < 2; ++k) {
      const int64_t floats = PartialFloats(segs[k], dims);
      p_direct[k].assign(floats, 0.0f);
      p_staged[k].assign(floats, 1.0f);
      grads[k].resize(floats);
      for (float& g : grads[k]) g = u(rng);
      out_direct.push_back(p_direct[k].data());
      out_staged.push_back(p_staged[k].data());
      in.push_back(grads[k].data());
    }
    SparseCoreStepState st_direct, st_staged;
    direct.Forward(segs, out_direct, &st_direct);
    staged.Forward(segs, out_staged, &st_staged);
    ASSERT_TRUE(st_staged.debug_status.ok()) << st_staged.debug_status;
    EXPECT_EQ(st_direct.stage_table, (std::vector<uint8_t>{0, 1}));  // "wide" read in place
    EXPECT_EQ(st_staged.stage_table, (std::vector<uint8_t>{1, 1}));
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(0, std::memcmp(p_direct[k].data(), p_staged[k].data(),
                               sizeof(float) * p_direct[k].size()))
          << "step " << step << " segment " << k;
    }
    direct.Backward(segs, in, &st_direct);
    staged.Backward(segs, in, &st_staged);
    for (int t = 0; t < 2; ++t) {
      const auto a = direct.shard(t).weights(), b = staged.shard(t).weights();
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * a.size()))
          << "step " << step << " table " << t;
    }
  }
}

// Sparse ids with repeats (multi-hot, Zipf) are pooled straight from the
// table when the table's unique rows of the partition fit kDirectPoolMaxBytes
// (1 MiB: 4,096 rows of 64 floats), and staged above it; either way the
// partials are the plain loop's, bit for bit, over two segments that share
// rows (pooled table by table, TableMajorRuns).
TEST(SparseCoreTest, SparseRepeatedRowsPooledInPlaceWhenTheyFitTheCache) {
  constexpr char kSparse[] = R"pb(
topology { sparse_cores_per_chip: 1 }
tables { name: "t" vocab_size: 200000 dim: 64 combiner: SUM }
features { name: "f" table: "t" max_sequence_length: 8 }
model { num_dense_features: 1 bottom_mlp: 64 top_mlp: 1 }
training { global_batch: 2 embedding_learning_rate: 0.1 }
)pb";
  auto config = config::ParseConfig(kSparse, "t", "", 1);
  ASSERT_TRUE(config.ok()) << config.status();
  SgdOptimizer sgd(0.1f);
  const Optimizer* opts[] = {&sgd};
  SparseCore sc(*config, 0, opts);
  const float* table = sc.shard(0).row(0);
  for (const int unique : {1000, 5000}) {
    // Rows 37 apart (spread: under half of their range); each row in both
    // segments, one group of 4 ids per sample.
    std::vector<std::vector<CooEntry>> seg_entries(2);
    for (int k = 0; k < 2; ++k) {
      for (int u = 0; u < unique; ++u) {
        const float gain = 0.5f + static_cast<float>(u % 3);
        seg_entries[k].push_back({int64_t{37} * u, u / 4, 0, 0, gain});
      }
    }
    std::vector<std::span<const CooEntry>> segs(seg_entries.begin(), seg_entries.end());
    std::vector<std::vector<float>> partials(2);
    std::vector<float*> outs;
    for (auto& p : partials) {
      p.assign(PartialFloats(segs[0], sc.table_dims()), -1.0f);
      outs.push_back(p.data());
    }
    SparseCoreStepState st;
    sc.Forward(segs, outs, &st);
    EXPECT_EQ(st.stage_table, std::vector<uint8_t>{unique > 4096 ? uint8_t{1} : uint8_t{0}})
        << unique << " unique rows";
    for (int k = 0; k < 2; ++k) {
      for (int g = 0; g < unique / 4; ++g) {
        float want[64] = {};
        for (int j = 4 * g; j < 4 * g + 4; ++j) {
          const CooEntry& e = seg_entries[k][j];
          for (int d = 0; d < 64; ++d) {
            want[d] = row_kernels_internal::MulAdd(e.gain, table[e.col * 64 + d], want[d]);
          }
        }
        ASSERT_EQ(0, std::memcmp(want, partials[k].data() + g * 64, sizeof(want)))
            << unique << " unique rows, segment " << k << " group " << g;
      }
    }
  }
}

// Int8 lookups (--eval_quantized) give the partials of tables whose every row
// was round-tripped in place, bit for bit, for a one-hot table read in place
// and a multi-hot staged one, and leave the tables untouched.
TEST(SparseCoreTest, Int8LookupsEqualRoundTrippedTablesWithoutChangingThem) {
  constexpr char kTwoTables[] = R"pb(
topology { sparse_cores_per_chip: 1 }
tables { name: "wide" vocab_size: 50 dim: 64 combiner: SUM }
tables { name: "odd" vocab_size: 40 dim: 7 combiner: SUM }
features { name: "f0" table: "wide" max_sequence_length: 8 }
features { name: "f1" table: "odd" max_sequence_length: 8 }
model { num_dense_features: 1 bottom_mlp: 7 top_mlp: 1 }
training { global_batch: 8 embedding_learning_rate: 0.1 }
)pb";
  auto config = config::ParseConfig(kTwoTables, "t", "", 1);
  ASSERT_TRUE(config.ok()) << config.status();
  SgdOptimizer sgd(0.1f);
  const Optimizer* opts[] = {&sgd, &sgd};
  SparseCore int8(*config, 0, opts), rounded(*config, 0, opts);
  for (int t = 0; t < 2; ++t) {
    for (int64_t r = 0; r < rounded.shard(t).local_rows(); ++r) {
      Int8RoundTripRow(rounded.mutable_shard(t).mutable_row(r));
    }
  }
  std::mt19937 rng(5);
  std::vector<CooEntry> entries;
  // Ordered by (feature, row, col).
  for (int row = 0; row < 8; ++row) {
    entries.push_back({static_cast<int64_t>(row) + 30, row, 0, 0, 1.0f});  // one-hot, in place
  }
  for (int row = 0; row < 8; ++row) {
    for (int64_t c : {int64_t{row % 3}, int64_t{5 + row % 2}, int64_t{39}}) {
      entries.push_back({c, row, 1, 1, 0.5f + static_cast<float>(rng() % 4)});
    }
  }
  std::vector<std::span<const CooEntry>> segs = {entries};
  const std::vector<int> dims = {64, 7};
  std::vector<float> p_int8(PartialFloats(segs[0], dims)), p_rounded(p_int8.size()),
      p_f32(p_int8.size());
  const std::vector<float> before(int8.shard(0).weights().begin(), int8.shard(0).weights().end());
  SparseCoreStepState st;
  int8.set_int8_lookups(true);
  float* out = p_int8.data();
  int8.Forward(segs, std::span<float* const>(&out, 1), &st);
  int8.set_int8_lookups(false);
  out = p_rounded.data();
  rounded.Forward(segs, std::span<float* const>(&out, 1), &st);
  EXPECT_EQ(0, std::memcmp(p_int8.data(), p_rounded.data(), sizeof(float) * p_int8.size()));
  out = p_f32.data();
  int8.Forward(segs, std::span<float* const>(&out, 1), &st);  // off again: f32 rows
  EXPECT_NE(0, std::memcmp(p_int8.data(), p_f32.data(), sizeof(float) * p_int8.size()));
  EXPECT_EQ(0, std::memcmp(before.data(), int8.shard(0).weights().data(),
                           sizeof(float) * before.size()));
}

// The dedup numbers ids alike whether the partition's keys already ascend
// (numbered straight from the segments) or not (sorted first, also after a
// sorted start): unique keys, rows, offsets and each entry's unique index and
// role as a plain map gives them. Partials (with a segment large enough for
// non-temporal stores into 64-byte aligned outputs) and updates match plain
// loops bit for bit.
TEST(SparseCoreTest, DedupAndOneHotRunsMatchPlainLoops) {
  constexpr char kWide[] = R"pb(
topology { sparse_cores_per_chip: 2 }
tables { name: "a" vocab_size: 80000 dim: 64 combiner: SUM }
tables { name: "b" vocab_size: 600 dim: 16 combiner: SUM }
features { name: "f0" table: "a" max_sequence_length: 4 }
features { name: "f1" table: "b" max_sequence_length: 4 }
model { num_dense_features: 1 bottom_mlp: 16 top_mlp: 1 }
training { global_batch: 8 embedding_learning_rate: 0.1 }
)pb";
  auto c = config::ParseConfig(kWide, "t", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  SgdOptimizer sgd(0.25f);
  const Optimizer* opts[] = {&sgd, &sgd};
  const std::vector<int> dims = {64, 16};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // SparseCore 1 owns odd columns. Segment 0: 17,000 one-hot samples of
  // table a (ascending ids, > 4 MiB of partials); segment 1: multi-hot
  // groups of table b with repeats, ids ascending after segment 0's (keys
  // then ascend over the partition) or shuffled.
  for (const bool ascending : {true, false}) {
    SparseCore sc(*c, /*global_sc=*/1, opts);
    std::vector<CooEntry> a, b;
    for (int32_t r = 0; r < 17000; ++r) a.push_back({2 * r + 1 + 2 * (r / 5), r, 0, 0, u(rng)});
    for (int32_t r = 0; r < 300; ++r) {
      const int n = 1 + r % 3;
      for (int k = 0; k < n; ++k) {
        b.push_back({2 * (ascending ? r / 2 : static_cast<int64_t>(rng() % 300)) + 1, r, 1, 1,
                     u(rng)});
      }
    }
    std::vector<std::span<const CooEntry>> segs = {a, b};
    std::vector<float, TableAllocator<float>> pa(PartialFloats(a, dims)), pb(PartialFloats(b, dims));
    std::vector<float*> outs = {pa.data(), pb.data()};
    // The plain reference: rows before the step.
    auto row_of = [&](const CooEntry& e) {
      return std::vector<float>(sc.shard(e.table).row(e.col / 2),
                                sc.shard(e.table).row(e.col / 2) + dims[e.table]);
    };
    std::vector<float> want_a, want_b;
    for (const CooEntry& e : a) {
      for (float x : row_of(e)) want_a.push_back(0.0f + e.gain * x);
    }
    for (size_t i = 0; i < b.size();) {
      std::vector<float> acc(16, 0.0f);
      size_t j = i;
      for (; j < b.size() && b[j].row == b[i].row; ++j) {
        const std::vector<float> r = row_of(b[j]);
        for (int d = 0; d < 16; ++d) acc[d] += b[j].gain * r[d];
      }
      want_b.insert(want_b.end(), acc.begin(), acc.end());
      i = j;
    }
    SparseCoreStepState state;
    sc.Forward(segs, outs, &state);
    ASSERT_EQ(pa.size(), want_a.size());
    ASSERT_EQ(pb.size(), want_b.size());
    EXPECT_EQ(0, std::memcmp(pa.data(), want_a.data(), sizeof(float) * pa.size())) << ascending;
    EXPECT_EQ(0, std::memcmp(pb.data(), want_b.data(), sizeof(float) * pb.size())) << ascending;

    // Dedup against a map from key to (unique index, entries in order).
    std::map<std::pair<int, int64_t>, std::vector<int>> ids;
    std::vector<const CooEntry*> all;
    for (const auto& seg : segs) {
      for (const CooEntry& e : seg) {
        ids[{e.table, e.col}].push_back(static_cast<int>(all.size()));
        all.push_back(&e);
      }
    }
    ASSERT_EQ(state.unique_keys.size(), ids.size());
    int64_t unique = 0, offset = 0;
    for (const auto& [key, entries] : ids) {
      EXPECT_EQ(state.unique_keys[unique], (uint64_t{static_cast<uint32_t>(key.first)} << 48) |
                                               static_cast<uint64_t>(key.second));
      EXPECT_EQ(state.unique_rows[unique], key.second / 2);
      EXPECT_EQ(state.unique_offsets[unique], offset);
      EXPECT_EQ(state.unique_single[unique], entries.size() == 1 ? 1 : 0);
      for (size_t k = 0; k < entries.size(); ++k) {
        EXPECT_EQ(state.entry_unique[entries[k]], unique);
        EXPECT_EQ(state.entry_role[entries[k]],
                  entries.size() == 1 ? kOnlyEntry : (k == 0 ? kFirstEntry : kAddEntry));
      }
      offset += dims[key.first];
      ++unique;
    }
    EXPECT_EQ(state.unique_offsets.back(), offset);

    // Update: SGD on each id's gradient summed in entry order.
    std::vector<float> ga(pa.size()), gb(pb.size());
    for (float& g : ga) g = u(rng);
    for (float& g : gb) g = u(rng);
    std::map<std::pair<int, int64_t>, std::vector<float>> sums;
    for (size_t i = 0; i < a.size(); ++i) {
      std::vector<float>& s = sums[{0, a[i].col}];
      s.assign(64, 0.0f);
      for (int d = 0; d < 64; ++d) s[d] += a[i].gain * ga[i * 64 + d];
    }
    int64_t group = -1;
    for (size_t i = 0; i < b.size(); ++i) {
      if (i == 0 || b[i].row != b[i - 1].row) ++group;
      std::vector<float>& s = sums[{1, b[i].col}];
      s.resize(16, 0.0f);
      for (int d = 0; d < 16; ++d) s[d] += b[i].gain * gb[group * 16 + d];
    }
    std::map<std::pair<int, int64_t>, std::vector<float>> want_rows;
    for (const auto& [key, s] : sums) {
      const TableShard& shard = sc.shard(key.first);
      std::vector<float> w(shard.row(key.second / 2), shard.row(key.second / 2) + s.size());
      for (size_t d = 0; d < s.size(); ++d) w[d] -= 0.25f * s[d];
      want_rows[key] = w;
    }
    std::vector<const float*> ins = {ga.data(), gb.data()};
    sc.Backward(segs, ins, &state);
    for (const auto& [key, w] : want_rows) {
      EXPECT_EQ(0, std::memcmp(sc.shard(key.first).row(key.second / 2), w.data(),
                               sizeof(float) * w.size()))
          << "table " << key.first << " column " << key.second << " ascending " << ascending;
    }
  }
}

// Every SparseCore's shards hold the rows the row placement gives it
// (layout/row_placement.h), at 2 chips x 2 SparseCores, two stacked tables
// (the second rotated by 2) and id shuffling on the first.
TEST(SparseCoreTest, ShardsHoldTheRowPlacementsRows) {
  auto c = config::ParseConfig(R"pb(
                                 topology { sparse_cores_per_chip: 2 }
                                 tables { name: "a" vocab_size: 23 dim: 2 shuffle_ids: true }
                                 tables { name: "b" vocab_size: 9 dim: 2 }
                                 features { name: "fa" table: "a" }
                                 features { name: "fb" table: "b" }
                                 model { num_dense_features: 1 bottom_mlp: 2 top_mlp: 1 }
                                 training { global_batch: 4 embedding_learning_rate: 0.5 }
                               )pb",
                               "t", "", /*world_size=*/2);
  ASSERT_TRUE(c.ok()) << c.status();
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(*c);
  ASSERT_EQ(placement.total_sparse_cores(), 4);
  ASSERT_TRUE(placement.shuffles(0));
  ASSERT_EQ(placement.sc_shift(1), 2);
  SgdOptimizer sgd(0.5f);
  const Optimizer* opts[] = {&sgd, &sgd};
  for (int t = 0; t < 2; ++t) {
    int64_t rows = 0;
    for (int g = 0; g < 4; ++g) {
      SparseCore sc(*c, g, opts, /*initialize_tables=*/false);
      const TableShard& shard = sc.shard(t);
      ASSERT_EQ(shard.local_rows(), placement.ShardRows(t, g)) << t << " " << g;
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        const int64_t placed = shard.GlobalRow(r);
        EXPECT_EQ(placed, placement.ShardPlacedRow(t, g, r));
        EXPECT_EQ(placement.OwnerSc(t, placed), g);
        EXPECT_EQ(shard.LocalRow(placed), r);
        EXPECT_EQ(placement.Home(t, shard.OriginalRow(r)).local_row, r);
        EXPECT_EQ(placement.Home(t, shard.OriginalRow(r)).global_sc, g);
      }
      rows += shard.local_rows();
    }
    EXPECT_EQ(rows, placement.vocab_size(t));
  }
}

// LocalRow's multiply by the reciprocal equals the division for every
// SparseCore count up to 2^16 over the key columns' range (below 2^48).
TEST(SparseCoreTest, LocalRowEqualsDivision) {
  config::TableConfig table;
  table.set_name("t");
  table.set_vocab_size(4);
  table.set_dim(1);
  SgdOptimizer sgd(0.1f);
  std::mt19937_64 rng(5);
  for (int total : {1, 2, 3, 4, 7, 12, 64, 1000, 65535, 65536, 65537}) {
    TableShard shard(table, 0, 0, total, 1, sgd);
    const int64_t top = (int64_t{1} << 48) - 1;
    std::vector<int64_t> cols = {0, 1, total - 1, total, total + 1, top, top - 1, top - total};
    for (int i = 0; i < 2000; ++i) cols.push_back(static_cast<int64_t>(rng() % (top + 1)));
    for (int i = 0; i < 200; ++i) cols.push_back(static_cast<int64_t>(rng() % (1 << 20)));
    for (int64_t c : cols) {
      if (c < 0) continue;
      ASSERT_EQ(shard.LocalRow(c), c / total) << "column " << c << ", " << total << " SCs";
    }
  }
}

}  // namespace
}  // namespace lemrt::device
