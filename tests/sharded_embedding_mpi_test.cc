// Sharded lookup, pooling and update across MPI ranks equal a plain
// single-process dense reference (dense tables, dense gradients, the same
// optimizers). Runs under mpirun with 1, 2, 3 and 4 ranks on the same global
// batch, so every world size is checked against the same numbers.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/random.h"
#include "device/sparsecore/table_shard.h"
#include "gtest/gtest.h"
#include "host/preprocess/coo.h"
#include "host/preprocess/hot_rows.h"
#include "host/preprocess/minibatch.h"
#include "host/preprocess/sample_split.h"
#include "layout/stacking.h"
#include "proto/config_loader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/table_serialization.h"

namespace lemrt::runtime {
namespace {

constexpr char kConfig[] = R"pb(
topology { sparse_cores_per_chip: 2 }
tables { name: "t0" vocab_size: 30 dim: 8 combiner: SUM }
tables { name: "t1" vocab_size: 20 dim: 4 combiner: MEAN
         optimizer { adagrad { initial_accumulator: 0.1 } learning_rate: 0.3 } }
tables { name: "t2" vocab_size: 7 dim: 16 combiner: SQRTN initializer { normal { stddev: 0.1 } }
         optimizer { adam {} learning_rate: 0.05 } }
features { name: "f0" table: "t0" max_sequence_length: 4 }
features { name: "f1" table: "t1" max_sequence_length: 3 }
features { name: "f2" table: "t0" max_sequence_length: 2 }
features { name: "f3" table: "t2" max_sequence_length: 5 }
model { num_dense_features: 1 bottom_mlp: 8 top_mlp: 1 }
training { global_batch: 48 embedding_learning_rate: 0.5 seed: 5 }
)pb";

// Tables that stack (layout/stacking.h): t0, t1 (dim 6 pads to 8) and t2 in
// one stack, rotated by 1 SparseCore per member; t0 is read by three features.
constexpr char kStackedConfig[] = R"pb(
topology { sparse_cores_per_chip: 2 }
sparse_core { table_stacking_rotation: 1 }
tables { name: "t0" vocab_size: 30 dim: 8 combiner: SUM }
tables { name: "t1" vocab_size: 21 dim: 6 combiner: SUM }
tables { name: "t2" vocab_size: 7 dim: 8 combiner: SUM initializer { normal { stddev: 0.1 } } }
features { name: "s0" table: "t2" max_sequence_length: 3 }
features { name: "s1" table: "t0" max_sequence_length: 2 }
features { name: "s2" table: "t1" max_sequence_length: 4 }
features { name: "s3" table: "t0" }
features { name: "s4" table: "t0" max_sequence_length: 3 }
model { num_dense_features: 1 bottom_mlp: 8 top_mlp: 1 }
training { global_batch: 48 embedding_learning_rate: 0.5 seed: 6 }
)pb";

// Row-wise Adagrad (one accumulator per row), L2 and decoupled weight decay
// and a warm-up schedule (a different learning rate each step): t0 is read
// by two features, so its rows see repeated ids within and across samples.
constexpr char kRowwiseConfig[] = R"pb(
topology { sparse_cores_per_chip: 2 }
tables { name: "t0" vocab_size: 30 dim: 8 combiner: SUM
         optimizer { rowwise_adagrad {} weight_decay: 0.01 } }
tables { name: "t1" vocab_size: 20 dim: 20 combiner: MEAN
         optimizer { rowwise_adagrad { initial_accumulator: 0.1 } learning_rate: 0.3
                     weight_decay: 0.02 weight_decay_mode: DECOUPLED } }
tables { name: "t2" vocab_size: 7 dim: 16 combiner: SQRTN
         optimizer { adagrad {} weight_decay: 0.05 } }
features { name: "f0" table: "t0" max_sequence_length: 4 }
features { name: "f1" table: "t1" max_sequence_length: 3 }
features { name: "f2" table: "t0" max_sequence_length: 2 }
features { name: "f3" table: "t2" max_sequence_length: 5 }
model { num_dense_features: 1 bottom_mlp: 8 top_mlp: 1 }
training { global_batch: 48 embedding_learning_rate: 0.5 seed: 5
           embedding_learning_rate_schedule { warmup_steps: 3 } }
)pb";

// Ids of global sample g, feature f, at step `step` (duplicates likely).
std::vector<int64_t> SampleIds(const config::RunConfig& c, int step, int64_t g, int f) {
  base::CounterRng rng(base::HashKeys({99, static_cast<uint64_t>(step), static_cast<uint64_t>(g),
                                       static_cast<uint64_t>(f)}));
  const auto& feature = c.features(f);
  const int64_t vocab = c.tables(config::FindTable(c, feature.table())).vocab_size();
  // Some samples have no ids for a feature (length 0).
  const int len = static_cast<int>(rng.NextBelow(feature.max_sequence_length() + 1));
  std::vector<int64_t> ids;
  for (int k = 0; k < len; ++k) ids.push_back(static_cast<int64_t>(rng.NextBelow(vocab)));
  return ids;
}

float DAct(int step, int64_t g, int f, int k) {
  base::CounterRng rng(base::HashKeys({7, static_cast<uint64_t>(step), static_cast<uint64_t>(g),
                                       static_cast<uint64_t>(f), static_cast<uint64_t>(k)}));
  return static_cast<float>(rng.NextDouble() - 0.5);
}

double Gain(const config::TableConfig& t, size_t n) {
  if (t.combiner() == config::TableConfig::MEAN) return 1.0 / n;
  if (t.combiner() == config::TableConfig::SQRTN) return 1.0 / std::sqrt(double(n));
  return 1.0;
}

// Runs 3 steps against the dense reference. max_unique_ids > 0: every
// step's ids are split into vocabulary-dimension minibatches at that
// per-partition limit (boundaries agreed over ranks, as HostStage does).
// serialized_tables > 0: that many stacks (tables when none stack) run one
// after another (xla_sc_num_serialized_tables_to_optimize_hbm, as the
// trainer does). `explicit_stack` (table names) is added as one
// sparse_core.table_stacks entry. max_ids > 0: a per-partition id limit
// that a hot row exceeds on its own, so vocabulary-dimension minibatches are
// split further along the sample dimension (host/preprocess/sample_split.h; ranges
// agreed over ranks, as HostStage does), and a row's gradients from several
// sample ranges must be summed before its one update. In kConfig table t2
// uses Adam, whose step count must advance once per step however the step
// is split. `hot_rows` (per table, may be shorter than the tables): rows
// replicated on every chip (runtime/hot_rows/hot_row_replicas.h), looked up and
// updated there and written back to their owners' shards.
void RunAgainstDenseReference(int32_t max_unique_ids, const char* config_text = kConfig,
                              int serialized_tables = 0,
                              const std::vector<std::string>& explicit_stack = {},
                              int32_t max_ids = 0,
                              std::vector<std::vector<int64_t>> hot_rows = {}) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto config = config::ParseConfig(config_text, "test", "", world);
  ASSERT_TRUE(config.ok()) << config.status();  // same on every rank
  config->mutable_sparse_core()->set_xla_sc_num_serialized_tables_to_optimize_hbm(
      serialized_tables);
  if (!explicit_stack.empty()) {
    auto* stack = config->mutable_sparse_core()->add_table_stacks();
    for (const std::string& t : explicit_stack) stack->add_tables(t);
  }
  const config::RunConfig& c = *config;
  auto plan = device::BuildMemoryPlan(c);
  ASSERT_TRUE(plan.ok()) << plan.status();  // same on every rank
  TableSerializer serializer(*plan);
  EXPECT_EQ(serializer.active(), serialized_tables > 0);
  // Every group runs whole stacks.
  const layout::StackingPlan stacks = layout::StackingPlan::FromConfig(c);
  for (const std::vector<char>& keep : serializer.groups()) {
    for (const layout::TableStack& s : stacks.stacks()) {
      for (int t : s.tables) EXPECT_EQ(keep[t], keep[s.tables[0]]) << "stack " << s.name;
    }
  }
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  ASSERT_TRUE(comm.ok());

  std::vector<std::unique_ptr<device::Optimizer>> opts;
  std::vector<const device::Optimizer*> opt_ptrs;
  for (int t = 0; t < c.tables_size(); ++t) {
    opts.push_back(device::CreateTableOptimizer(c, t));
    opt_ptrs.push_back(opts.back().get());
  }
  SparseCoreStage stage(c, **comm, opt_ptrs);
  const host::HotRowSet hot_set(hot_rows);
  stage.SetHotRows(hot_set, opt_ptrs);
  ASSERT_TRUE(stage.RefreshHotRows().ok());
  std::vector<host::HotEntry> hot;
  int64_t hot_entries = 0;

  // Dense reference tables and slots.
  std::vector<std::vector<float>> ref(c.tables_size()), ref_slots(c.tables_size());
  for (int t = 0; t < c.tables_size(); ++t) {
    const auto& tc = c.tables(t);
    ref[t].resize(tc.vocab_size() * tc.dim());
    for (int64_t j = 0; j < tc.vocab_size(); ++j) {
      device::InitialRow(tc, t, j, c.training().seed(),
                         std::span<float>(ref[t].data() + j * tc.dim(), tc.dim()));
    }
    const int64_t row_slots = opts[t]->SlotFloats(tc.dim());
    ref_slots[t].resize(tc.vocab_size() * row_slots);
    for (int64_t j = 0; j < tc.vocab_size(); ++j) {
      opts[t]->InitSlots(std::span<float>(ref_slots[t].data() + j * row_slots, row_slots));
    }
  }

  const int64_t GB = c.training().global_batch();
  const int64_t LB = GB / world;
  const int F = c.features_size();
  const int width = stage.activation_width();
  host::CooBuilder builder(host::MakeCooOptions(c));
  host::MinibatchOptions mo;
  mo.chip = rank;
  mo.local_sparse_cores = c.topology().sparse_cores_per_chip();
  mo.total_sparse_cores = static_cast<int>(config::TotalSparseCores(c));
  // Partitions and limits per stacked table, as HostStage does.
  const layout::StackingPlan stacking = layout::StackingPlan::FromConfig(c);
  mo.stacking = stacking.tables();
  mo.limits.tables.assign(stacking.num_stacks(), layout::TableLimit{});
  mo.limits.table_names.assign(stacking.num_stacks(), "t");
  if (max_unique_ids > 0) {
    for (auto& l : mo.limits.tables) l.max_unique_ids = max_unique_ids;
  }
  if (max_ids > 0) {
    for (auto& l : mo.limits.tables) l.max_ids = max_ids;
  }
  host::MinibatchSplitter splitter(mo);
  host::SampleSplitter sample_splitter(mo);
  int64_t most_sample_ranges = 1;
  std::vector<layout::PartitionedCoo> minibatches, groups;
  std::vector<SparseStepBuffers> bufs;
  size_t max_minibatches = 0;
  for (int step = 0; step < 3; ++step) {
    host::Batch batch;
    batch.Resize(LB, 1, F);
    for (int f = 0; f < F; ++f) {
      for (int64_t i = 0; i < LB; ++i) {
        auto ids = SampleIds(c, step, rank * LB + i, f);
        batch.ids[f].insert(batch.ids[f].end(), ids.begin(), ids.end());
        batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
      }
    }
    layout::PartitionedCoo coo;
    ASSERT_TRUE(builder.Build(batch, &coo).ok());
    host::ExtractHotEntries(hot_set, &coo, &hot);
    hot_entries += static_cast<int64_t>(hot.size());
    const uint64_t local = splitter.PlanLocal(coo);
    std::vector<int64_t> flags(host::MinibatchSplitter::kBuckets);
    for (int b = 0; b < host::MinibatchSplitter::kBuckets; ++b) flags[b] = (local >> b) & 1;
    MPI_Allreduce(MPI_IN_PLACE, flags.data(), static_cast<int>(flags.size()), MPI_INT64_T,
                  MPI_MAX, MPI_COMM_WORLD);
    uint64_t boundaries = 0;
    for (int b = 0; b < host::MinibatchSplitter::kBuckets; ++b) {
      if (flags[b]) boundaries |= uint64_t{1} << b;
    }
    std::vector<int64_t> dropped;
    splitter.SplitVocabulary(coo, boundaries, &minibatches);
    if (max_ids > 0) {
      const int64_t per_sc = LB / mo.local_sparse_cores;
      std::vector<int64_t> ranges(minibatches.size(), 1);
      for (size_t m = 0; m < minibatches.size(); ++m) {
        ranges[m] = sample_splitter.Plan(minibatches[m], per_sc);
      }
      MPI_Allreduce(MPI_IN_PLACE, ranges.data(), static_cast<int>(ranges.size()), MPI_INT64_T,
                    MPI_MAX, MPI_COMM_WORLD);
      std::vector<layout::PartitionedCoo> split;
      for (size_t m = 0; m < minibatches.size(); ++m) {
        most_sample_ranges = std::max(most_sample_ranges, ranges[m]);
        if (ranges[m] == 1) {
          split.push_back(minibatches[m]);
          continue;
        }
        sample_splitter.Plan(minibatches[m], per_sc);
        const size_t at = split.size();
        split.resize(at + ranges[m]);
        sample_splitter.Split(minibatches[m], static_cast<int>(ranges[m]), split.data() + at);
      }
      minibatches = std::move(split);
    }
    const absl::Status enforced = splitter.Enforce(&minibatches, &dropped, max_ids > 0);
    ASSERT_TRUE(enforced.ok()) << enforced;
    max_minibatches = std::max(max_minibatches, minibatches.size());
    const std::span<const layout::PartitionedCoo> runs = serializer.Expand(minibatches, &groups);
    EXPECT_EQ(runs.size(), minibatches.size() * serializer.num_groups());
    std::vector<float> act(LB * width, -1.0f);
    ASSERT_TRUE(stage.Forward(runs, &bufs, act).ok());
    stage.LookupHot(hot, act);

    // Reference pooling for this rank's samples, and the dense gradient of
    // the whole global batch.
    std::vector<std::vector<double>> grad(c.tables_size());
    std::vector<std::vector<char>> touched(c.tables_size());
    for (int t = 0; t < c.tables_size(); ++t) {
      grad[t].assign(ref[t].size(), 0.0);
      touched[t].assign(c.tables(t).vocab_size(), 0);
    }
    for (int64_t g = 0; g < GB; ++g) {
      for (int f = 0; f < F; ++f) {
        const int t = config::FindTable(c, c.features(f).table());
        const int dim = c.tables(t).dim();
        auto ids = SampleIds(c, step, g, f);
        for (int64_t id : ids) {
          const double gain = Gain(c.tables(t), ids.size());
          touched[t][id] = 1;
          for (int k = 0; k < dim; ++k) grad[t][id * dim + k] += gain * DAct(step, g, f, k);
        }
        if (g / LB != rank) continue;
        for (int k = 0; k < dim; ++k) {
          double pooled = 0;
          for (int64_t id : ids) pooled += Gain(c.tables(t), ids.size()) * ref[t][id * dim + k];
          EXPECT_NEAR(act[(g - rank * LB) * width + stage.feature_offset(f) + k], pooled, 1e-6)
              << "step " << step << " sample " << g << " feature " << f << " k " << k;
        }
      }
    }

    std::vector<float> dact(LB * width);
    for (int64_t i = 0; i < LB; ++i) {
      for (int f = 0; f < F; ++f) {
        const int dim = c.tables(config::FindTable(c, c.features(f).table())).dim();
        for (int k = 0; k < dim; ++k) {
          dact[i * width + stage.feature_offset(f) + k] = DAct(step, rank * LB + i, f, k);
        }
      }
    }
    ASSERT_TRUE(stage.Backward(runs, dact, &bufs).ok());
    ASSERT_TRUE(stage.UpdateHot(hot, dact).ok());

    // Reference update: touched rows only, as the SparseCores do.
    for (int t = 0; t < c.tables_size(); ++t) {
      const int dim = c.tables(t).dim();
      const int64_t ns = opts[t]->SlotFloats(dim);
      for (int64_t j = 0; j < c.tables(t).vocab_size(); ++j) {
        if (!touched[t][j]) continue;
        std::vector<float> g(dim);
        for (int k = 0; k < dim; ++k) g[k] = static_cast<float>(grad[t][j * dim + k]);
        opts[t]->Apply(std::span<float>(ref[t].data() + j * dim, dim),
                       std::span<float>(ref_slots[t].data() + j * ns, ns), g, step + 1,
                       opts[t]->LearningRateAt(step + 1));
      }
    }
    for (const auto& sc : stage.sparse_cores()) {
      for (int t = 0; t < c.tables_size(); ++t) {
        const auto& shard = sc->shard(t);
        for (int64_t r = 0; r < shard.local_rows(); ++r) {
          const int64_t j = shard.GlobalRow(r);
          ASSERT_LT(j, c.tables(t).vocab_size());
          for (int k = 0; k < shard.dim(); ++k) {
            EXPECT_NEAR(shard.row(r)[k], ref[t][j * shard.dim() + k], 1e-6)
                << "step " << step << " table " << t << " row " << j;
          }
          const std::span<const float> slots = shard.row_slots(r);
          for (size_t k = 0; k < slots.size(); ++k) {
            EXPECT_NEAR(slots[k], ref_slots[t][j * slots.size() + k], 1e-5)
                << "step " << step << " table " << t << " row " << j << " slot " << k;
          }
        }
      }
    }
  }
  // Every row of every table is owned by exactly one SparseCore.
  for (int t = 0; t < c.tables_size(); ++t) {
    int64_t rows = 0;
    for (const auto& sc : stage.sparse_cores()) rows += sc->shard(t).local_rows();
    int64_t total = 0;
    MPI_Allreduce(&rows, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, c.tables(t).vocab_size());
  }
  if (max_unique_ids > 0) {
    EXPECT_GT(max_minibatches, 1u);
  } else if (max_ids == 0) {
    EXPECT_EQ(max_minibatches, 1u);
  }
  // On one rank (24 samples per SparseCore) t2's hottest rows alone are over
  // max_ids 8, so some minibatch must have been split by samples.
  if (max_ids > 0 && world == 1) {
    EXPECT_GT(most_sample_ranges, 1);
  }
  if (!hot_set.empty()) {
    MPI_Allreduce(MPI_IN_PLACE, &hot_entries, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GT(hot_entries, 0) << "no hot row was looked up";
  }
}

TEST(ShardedEmbeddingTest, LookupAndUpdateMatchDenseReference) { RunAgainstDenseReference(0); }

// Row-wise Adagrad, weight decay and a learning-rate schedule through the
// SparseCores: each row updated once per step with its summed gradient and
// the step's rate, alone and in minibatches.
TEST(ShardedEmbeddingTest, RowwiseAdagradAndWeightDecayMatchDenseReference) {
  RunAgainstDenseReference(0, kRowwiseConfig);
  RunAgainstDenseReference(3, kRowwiseConfig);
  RunAgainstDenseReference(0, kRowwiseConfig, /*serialized_tables=*/2);
}

// Vocabulary-dimension minibatching (at most 3 distinct rows per partition)
// gives the same lookups and updates.
TEST(ShardedEmbeddingTest, MinibatchedLookupAndUpdateMatchDenseReference) {
  RunAgainstDenseReference(3);
}

// Two serialized tables (each with its own exchange after the third), with
// and without minibatching, give the same lookups and updates.
TEST(ShardedEmbeddingTest, SerializedTablesMatchDenseReference) {
  RunAgainstDenseReference(0, kConfig, /*serialized_tables=*/2);
  RunAgainstDenseReference(3, kConfig, /*serialized_tables=*/2);
}

// Sample-dimension minibatching (a hot row alone over max_ids 8): the same
// lookups and updates, every row updated once per step from the gradients
// of all its sample ranges; also with two serialized tables (row groups per
// table group).
TEST(ShardedEmbeddingTest, SampleMinibatchedLookupAndUpdateMatchDenseReference) {
  RunAgainstDenseReference(0, kConfig, 0, {}, /*max_ids=*/8);
  RunAgainstDenseReference(0, kConfig, /*serialized_tables=*/2, {}, /*max_ids=*/8);
}

// Stacked tables (ids rotated across SparseCores, partitions per stack) give
// the same lookups and updates, with and without minibatching.
TEST(ShardedEmbeddingTest, StackedLookupAndUpdateMatchDenseReference) {
  RunAgainstDenseReference(0, kStackedConfig);
}
TEST(ShardedEmbeddingTest, StackedMinibatchedLookupAndUpdateMatchDenseReference) {
  RunAgainstDenseReference(4, kStackedConfig);
}

// Serialization runs whole stacks (all members of the serialized stack in one
// group). kStackedConfig's tables in two explicit stacks, t0 + t2 (four
// features) and t1 alone: one serialized stack (the larger, t0 + t2, after
// t1), both, with and without minibatching.
TEST(ShardedEmbeddingTest, SerializedStacksMatchDenseReference) {
  const std::vector<std::string> t0_t2 = {"t0", "t2"};
  RunAgainstDenseReference(0, kStackedConfig, /*serialized_tables=*/1, t0_t2);
  RunAgainstDenseReference(4, kStackedConfig, /*serialized_tables=*/1, t0_t2);
  RunAgainstDenseReference(0, kStackedConfig, /*serialized_tables=*/2, t0_t2);
}

// Hot-row replication: each table's replicated rows (t0's 0-3 and 29, t1's
// 2, t2's 0 and 6; some rows are in no sample of a step) are looked up on
// every chip and updated there from the gradients of all chips: the same
// lookups and updates, and the owners' shards hold the updated rows (Adam's
// t2 and Adagrad's t1 with their slots); with minibatching, serialized
// tables, stacked tables and row-wise Adagrad with weight decay too.
TEST(ShardedEmbeddingTest, HotRowsMatchDenseReference) {
  const std::vector<std::vector<int64_t>> hot = {{0, 1, 2, 3, 29}, {2}, {0, 6}};
  RunAgainstDenseReference(0, kConfig, 0, {}, 0, hot);
  RunAgainstDenseReference(3, kConfig, 0, {}, 0, hot);
  RunAgainstDenseReference(0, kConfig, /*serialized_tables=*/2, {}, /*max_ids=*/8, hot);
  RunAgainstDenseReference(0, kStackedConfig, 0, {}, 0, hot);
  RunAgainstDenseReference(0, kRowwiseConfig, 0, {}, 0, {{0, 1}, {}, {3}});
}

}  // namespace
}  // namespace lemrt::runtime
