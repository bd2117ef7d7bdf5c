// SparseCoreStage at 1-4 ranks as threads (runtime/comm/local_communicator.h)
// against a plain reference: dense tables initialised with InitialRow, each
// activation the combiner's weighted sum of its sample's rows, each row
// updated once per step (SGD, or Adagrad) from the summed gradients of the
// samples that read it. Two steps, so the second lookup sees the first
// update. Through HostStage with partition limits (vocabulary- and
// sample-dimension minibatches) the model is the same. The stage at W ranks
// of 2 SparseCores must also equal, bit for bit, one rank of 2W SparseCores
// (the same rows on the same SparseCores, summed in the same order). And a
// NaN gradient on one rank stops every rank with the same sentence.
#include "runtime/step/sparsecore_stage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/tile_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/input/train_only_source.h"
#include "host/preprocess/coo.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/step/host_stage.h"

namespace lemrt::runtime {
namespace {

constexpr int kGlobal = 48;  // samples; local batches divide by 2 SparseCores at 1-4 ranks
constexpr int kSteps = 2;
constexpr float kLearningRate = 0.5f;

// Tables "one" and "two" stack (same dim, combiner and optimizer); "multi"
// is read by two features; every combiner appears; "one", "two" and "sq"
// learn with Adagrad, whose update is not additive: a row updated twice in
// one step (once per minibatch instead of once per row group) shows.
constexpr char kConfig[] = R"pb(
  tables {
    name: "one"
    vocab_size: 40
    dim: 4
    combiner: SUM
    optimizer { adagrad {} }
  }
  tables {
    name: "two"
    vocab_size: 21
    dim: 4
    combiner: SUM
    optimizer { adagrad {} }
  }
  tables { name: "multi" vocab_size: 30 dim: 8 combiner: MEAN }
  tables {
    name: "sq"
    vocab_size: 50
    dim: 8
    combiner: SQRTN
    optimizer { adagrad {} }
  }
  features { name: "f_one" table: "one" }
  features { name: "f_two" table: "two" max_sequence_length: 2 }
  features { name: "f_multi" table: "multi" max_sequence_length: 3 }
  features { name: "f_multi2" table: "multi" max_sequence_length: 2 }
  features { name: "f_sq" table: "sq" max_sequence_length: 3 }
  model {
    num_dense_features: 1
    bottom_mlp: [ 4 ]
    top_mlp: [ 4, 1 ]
  }
  training { global_batch: 48 steps: 2 seed: 11 embedding_learning_rate: 0.5 }
)pb";

// kConfig for `world_size` ranks of `sparse_cores` SparseCores, plus `extra`
// (config text).
config::RunConfig Config(int world_size, int sparse_cores, const std::string& extra = "") {
  auto c = config::ParseConfig(
      kConfig, "sparsecore_stage_test",
      absl::StrCat("topology { sparse_cores_per_chip: ", sparse_cores, " } ", extra), world_size);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// The ids of global sample g, feature f at step `step`: 0 to
// max_sequence_length of them (duplicates allowed), from a counter RNG,
// except that 3 samples in 4 read row 0 of table "one" (feature 0): a hot
// row, whose ids alone crowd a partition (sample-dimension minibatches).
std::vector<int64_t> IdsOf(const config::RunConfig& config, int step, int g, int f) {
  const auto& feature = config.features(f);
  const int64_t vocab = config.tables(config::FindTable(config, feature.table())).vocab_size();
  const int max_len = std::max(1, feature.max_sequence_length());
  base::CounterRng rng(base::HashKeys(
      {7, static_cast<uint64_t>(step), static_cast<uint64_t>(g), static_cast<uint64_t>(f)}));
  if (f == 0 && g % 4 != 3) return {0};
  const int len = static_cast<int>(rng.NextBelow(max_len + 1));
  std::vector<int64_t> ids;
  for (int k = 0; k < len; ++k) ids.push_back(static_cast<int64_t>(rng.NextBelow(vocab)));
  return ids;
}

// Samples [first, first + n) of step `step`; `poison`: sample `first` reads
// row 5 of table "one" (feature 0) alone.
host::Batch BatchOf(const config::RunConfig& config, int step, int first, int n,
                    bool poison = false) {
  host::Batch batch;
  batch.Resize(n, 1, config.features_size());
  batch.global_samples = kGlobal;
  for (int f = 0; f < config.features_size(); ++f) {
    for (int i = 0; i < n; ++i) {
      const std::vector<int64_t> ids =
          poison && i == 0 && f == 0 ? std::vector<int64_t>{5} : IdsOf(config, step, first + i, f);
      for (int64_t id : ids) batch.ids[f].push_back(id);
      batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
    }
  }
  return batch;
}

// The activation gradient of global sample g, activation column c, at `step`.
float GradientOf(int step, int g, int c) {
  base::CounterRng rng(base::HashKeys(
      {9, static_cast<uint64_t>(step), static_cast<uint64_t>(g), static_cast<uint64_t>(c)}));
  return static_cast<float>(rng.NextDouble() - 0.5);
}

// (table, original row) -> the row's values.
using Rows = std::map<std::pair<int, int64_t>, std::vector<float>>;

// The config's table optimizers and the pointers the stage takes.
struct TableOptimizers {
  explicit TableOptimizers(const config::RunConfig& config) {
    for (int t = 0; t < config.tables_size(); ++t) {
      owned.push_back(device::CreateTableOptimizer(config, t));
      pointers.push_back(owned.back().get());
    }
  }
  std::vector<std::unique_ptr<device::Optimizer>> owned;
  std::vector<const device::Optimizer*> pointers;
};

// What one run (of any world size) produced, in global sample order.
struct Result {
  std::vector<std::vector<float>> activations;  // per step, [kGlobal x width]
  Rows rows;                                    // after the last step
  int width = 0;
  int most_minibatches = 0;   // of a step, through HostStage
  bool sample_split = false;  // some minibatches of a step shared a row group
};

// The plain reference: dense tables, a sum per (sample, feature), Adagrad
// (or SGD) once per step on each touched row.
Result Reference(const config::RunConfig& config) {
  Result out;
  Rows accumulators;  // Adagrad's, of the rows touched so far
  std::vector<int> offset, dim;
  for (const auto& f : config.features()) {
    offset.push_back(out.width);
    dim.push_back(config.tables(config::FindTable(config, f.table())).dim());
    out.width += dim.back();
  }
  for (int t = 0; t < config.tables_size(); ++t) {
    const auto& table = config.tables(t);
    for (int64_t r = 0; r < table.vocab_size(); ++r) {
      std::vector<float> row(table.dim());
      device::InitialRow(table, t, r, config.training().seed(), row);
      out.rows[{t, r}] = row;
    }
  }
  for (int step = 0; step < kSteps; ++step) {
    std::vector<double> act(kGlobal * out.width, 0.0);
    Rows grads;
    for (int g = 0; g < kGlobal; ++g) {
      for (int f = 0; f < config.features_size(); ++f) {
        const int t = config::FindTable(config, config.features(f).table());
        const std::vector<int64_t> ids = IdsOf(config, step, g, f);
        const double n = static_cast<double>(ids.size());
        const auto combiner = config.tables(t).combiner();
        const double norm = combiner == config::TableConfig::SUM    ? 1.0
                            : combiner == config::TableConfig::MEAN ? 1.0 / n
                                                                    : 1.0 / std::sqrt(n);
        for (int64_t id : ids) {
          const std::vector<float>& row = out.rows[{t, id}];
          std::vector<float>& grad = grads[{t, id}];
          grad.resize(dim[f], 0.0f);
          for (int d = 0; d < dim[f]; ++d) {
            act[g * out.width + offset[f] + d] += norm * row[d];
            grad[d] += static_cast<float>(norm) * GradientOf(step, g, offset[f] + d);
          }
        }
      }
    }
    out.activations.emplace_back(act.begin(), act.end());
    for (const auto& [key, grad] : grads) {
      std::vector<float>& row = out.rows[key];
      if (!config.tables(key.first).optimizer().has_adagrad()) {
        for (size_t d = 0; d < row.size(); ++d) row[d] -= kLearningRate * grad[d];
        continue;
      }
      // Adagrad (defaults: accumulator from 0.1, epsilon 1e-10), once per
      // step on the step's summed gradient.
      std::vector<float>& acc = accumulators[key];
      acc.resize(row.size(), 0.1f);
      for (size_t d = 0; d < row.size(); ++d) {
        acc[d] += grad[d] * grad[d];
        row[d] -= kLearningRate * grad[d] / (std::sqrt(acc[d]) + 1e-10f);
      }
    }
  }
  return out;
}

// Rank r's samples of BatchOf, for HostStage.
class BatchSource : public host::TrainOnlySource {
 public:
  BatchSource(const config::RunConfig& config, int rank, int n)
      : config_(config), first_(rank * n), n_(n) {}
  absl::Status TrainBatch(int64_t step, host::Batch* batch) override {
    *batch = BatchOf(config_, static_cast<int>(step), first_, n_);
    return absl::OkStatus();
  }

 private:
  const config::RunConfig& config_;
  const int first_, n_;
};

// One rank's part: its local batch through Forward and Backward, kSteps
// times, as one COO or (`host_stage`) as HostStage's minibatches; its
// activations and its SparseCores' rows land in `out` (under `mu`).
absl::Status RunRank(const config::RunConfig& config, Communicator& comm, bool host_stage,
                     int tile_threads, std::mutex& mu, Result* out) {
  const TableOptimizers optimizers(config);
  SparseCoreStage stage(config, comm, optimizers.pointers);
  device::TilePool pool(tile_threads);
  if (tile_threads > 0) {
    for (const auto& sc : stage.sparse_cores()) sc->set_tile_pool(&pool);
  }
  const int n = kGlobal / comm.size(), first = comm.rank() * n;
  BatchSource source(config, comm.rank(), n);
  absl::StatusOr<layout::PartitionLimits> limits = layout::ResolveLimits(config);
  if (!limits.ok()) return limits.status();
  HostStage host(config, comm, source, *limits);
  host::CooBuilder builder(host::MakeCooOptions(config));
  const int width = stage.activation_width();
  SparseStepBuffers buf;
  std::vector<SparseStepBuffers> bufs;
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<layout::PartitionedCoo> minibatches;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> act(n * width), d_act(n * width);
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < width; ++c) d_act[i * width + c] = GradientOf(step, first + i, c);
    }
    absl::Status st;
    if (host_stage) {
      st = host.PrepareTrain(step, &batch, &coo, &minibatches);
      if (st.ok()) st = stage.Forward(minibatches, &bufs, act);
      if (st.ok()) st = stage.Backward(minibatches, d_act, &bufs);
    } else {
      st = builder.Build(BatchOf(config, step, first, n), &coo);
      if (st.ok()) st = stage.Forward(coo, &buf, act);
      if (st.ok()) st = stage.Backward(coo, d_act, &buf);
    }
    if (!st.ok()) return st;
    std::lock_guard<std::mutex> lock(mu);
    out->width = width;
    out->most_minibatches =
        std::max(out->most_minibatches, static_cast<int>(host_stage ? minibatches.size() : 1));
    for (size_t m = 1; host_stage && m < minibatches.size(); ++m) {
      out->sample_split |= minibatches[m].row_group == minibatches[m - 1].row_group;
    }
    out->activations.resize(kSteps, std::vector<float>(kGlobal * width));
    std::copy(act.begin(), act.end(), out->activations[step].begin() + first * width);
  }
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& sc : stage.sparse_cores()) {
    for (int t = 0; t < config.tables_size(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      for (int64_t local = 0; local < shard.local_rows(); ++local) {
        out->rows[{t, shard.OriginalRow(local)}].assign(shard.row(local),
                                                        shard.row(local) + shard.dim());
      }
    }
  }
  return absl::OkStatus();
}

// The stage on `world_size` ranks of `sparse_cores` SparseCores each (with
// `extra` config text, through HostStage when `host_stage`; with a tile pool
// of `tile_threads` threads per rank when > 0, else none).
Result RunStage(int world_size, int sparse_cores, const std::string& extra = "",
                bool host_stage = false, int tile_threads = 0) {
  const config::RunConfig config = Config(world_size, sparse_cores, extra);
  std::mutex mu;
  Result out;
  const std::vector<absl::Status> status = RunLocalRanks(world_size, [&](Communicator& comm) {
    return RunRank(config, comm, host_stage, tile_threads, mu, &out);
  });
  for (int r = 0; r < world_size; ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  }
  return out;
}

// Expects `got` to equal the plain reference within float rounding, with
// most activations non-zero and many rows updated.
void ExpectReference(const Result& got, const config::RunConfig& config) {
  const Result want = Reference(config);
  ASSERT_EQ(got.width, want.width);
  ASSERT_EQ(got.activations.size(), want.activations.size());
  int64_t nonzero = 0;
  for (int step = 0; step < kSteps; ++step) {
    for (size_t i = 0; i < want.activations[step].size(); ++i) {
      const float w = want.activations[step][i];
      nonzero += w != 0;
      ASSERT_NEAR(got.activations[step][i], w, 1e-6f * (1 + std::fabs(w)))
          << "step " << step << " sample " << i / got.width << " column " << i % got.width;
    }
  }
  EXPECT_GT(nonzero, kSteps * kGlobal * got.width / 2);  // most (sample, feature) read ids
  ASSERT_EQ(got.rows.size(), want.rows.size());          // every row of every table, once
  int64_t updated = 0;
  for (const auto& [key, row] : want.rows) {
    const auto it = got.rows.find(key);
    ASSERT_NE(it, got.rows.end()) << "table " << key.first << " row " << key.second;
    std::vector<float> initial(row.size());
    device::InitialRow(config.tables(key.first), key.first, key.second, config.training().seed(),
                       initial);
    updated += initial != row;
    for (size_t d = 0; d < row.size(); ++d) {
      ASSERT_NEAR(it->second[d], row[d], 1e-6f * (1 + std::fabs(row[d])))
          << "table " << key.first << " row " << key.second << " element " << d;
    }
  }
  EXPECT_GT(updated, 40);  // the update was exercised
}

class SparseCoreStageTest : public testing::TestWithParam<int> {};

TEST_P(SparseCoreStageTest, LookupAndUpdateEqualThePlainReference) {
  const int W = GetParam();
  ExpectReference(RunStage(W, 2), Config(W, 2));
}

// HostStage splits each step over the vocabulary and the samples (at most 5
// or 3 ids per partition; one sample's stay within it), and the stage's minibatch
// Forward and Backward (row groups: one update per row and step) still give
// the reference model.
TEST_P(SparseCoreStageTest, HostStageMinibatchesGiveTheReferenceModel) {
  const int W = GetParam();
  // Fewer samples per SparseCore at more ranks: a tighter limit still splits.
  const std::string limit =
      absl::StrCat("sparse_core { max_ids_per_partition: ", W <= 2 ? 5 : 3, " }");
  const Result got = RunStage(W, 2, limit, /*host_stage=*/true);
  EXPECT_GT(got.most_minibatches, 1);
  EXPECT_TRUE(got.sample_split);
  ExpectReference(got, Config(W, 2, limit));
}

// A tile pool (the SparseCores number their ids at once on its threads, then
// look up on its tiles) gives the bits of none.
TEST_P(SparseCoreStageTest, TilePoolThreadsGiveTheBitsOfNone) {
  const int W = GetParam();
  const Result pooled = RunStage(W, 4, "", /*host_stage=*/false, /*tile_threads=*/3);
  const Result alone = RunStage(W, 4);
  EXPECT_EQ(pooled.activations, alone.activations);
  EXPECT_EQ(pooled.rows, alone.rows);
  ExpectReference(pooled, Config(W, 4));
  const std::string limit = "sparse_core { max_ids_per_partition: 3 }";
  const Result minibatches = RunStage(W, 4, limit, /*host_stage=*/true, /*tile_threads=*/3);
  EXPECT_EQ(minibatches.activations, RunStage(W, 4, limit, /*host_stage=*/true).activations);
  ExpectReference(minibatches, Config(W, 4, limit));
}

TEST_P(SparseCoreStageTest, RanksOfTwoSparseCoresEqualOneRankOfAllOfThem) {
  const int W = GetParam();
  const Result ranks = RunStage(W, 2);
  const Result one = RunStage(1, 2 * W);
  EXPECT_EQ(ranks.activations, one.activations);  // bit for bit
  EXPECT_EQ(ranks.rows, one.rows);
}

TEST_P(SparseCoreStageTest, ANanGradientOnOneRankStopsEveryRankWithItsSentence) {
  const int W = GetParam();
  const config::RunConfig config = Config(W, 2, "sparse_core { debug_check_nan: true }");
  std::mutex mu;
  int owner = -1;  // the rank owning the poisoned row
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    const TableOptimizers optimizers(config);
    SparseCoreStage stage(config, comm, optimizers.pointers);
    host::CooBuilder builder(host::MakeCooOptions(config));
    const int n = kGlobal / W;
    const bool poisoned = comm.rank() == W - 1;
    const host::Batch batch = BatchOf(config, 0, comm.rank() * n, n, poisoned);
    layout::PartitionedCoo coo;
    absl::Status st = builder.Build(batch, &coo);
    if (!st.ok()) return st;
    const int width = stage.activation_width();
    std::vector<float> act(n * width), d_act(n * width, 0.25f);
    SparseStepBuffers buf;
    st = stage.Forward(coo, &buf, act);
    if (!st.ok()) return st;
    if (poisoned) {
      d_act[2] = std::nanf("");  // sample 0, feature 0 (table "one", dim 4), element 2
      const int S = coo.local_sparse_cores;
      for (int dest = 0; dest < coo.total_sparse_cores; ++dest) {
        for (int s = 0; s < S; ++s) {
          for (const layout::CooEntry& e : coo.segment(dest, s)) {
            if (e.row != 0 || e.feature != 0) continue;
            std::lock_guard<std::mutex> lock(mu);
            owner = dest / S;
          }
        }
      }
    }
    return stage.Backward(coo, d_act, &buf);
  });
  ASSERT_GE(owner, 0);
  const std::string sentence =
      "NaN check: step 0, stage sc_backward: gradients of table 'one' (feature 0, sample 0, "
      "element 2) is nan on SparseCore";
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
    EXPECT_EQ(status[r].code(), absl::StatusCode::kInternal) << status[r];
    EXPECT_EQ(status[r], status[0]);
    EXPECT_THAT(
        std::string(status[r].message()),
        testing::StartsWith(W > 1 ? absl::StrCat("rank ", owner, ": ", sentence) : sentence));
  }
}

// The partials' sum runs one source SparseCore per thread, each on its own
// samples (host/preprocess/coo.h); a COO whose sources share a sample stops
// with a sentence instead of summing racily.
TEST(SparseCoreStageDeathTest, SourcesSharingASampleFailACheck) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  const config::RunConfig config = Config(1, 2);
  auto run = [&] {
    RunLocalRanks(1, [&](Communicator& comm) {
      const TableOptimizers optimizers(config);
      SparseCoreStage stage(config, comm, optimizers.pointers);
      host::CooBuilder builder(host::MakeCooOptions(config));
      layout::PartitionedCoo coo;
      absl::Status st = builder.Build(BatchOf(config, 0, 0, kGlobal), &coo);
      if (!st.ok()) return st;
      for (int dest = 0; dest < coo.total_sparse_cores; ++dest) {
        const int64_t k = int64_t{dest} * coo.local_sparse_cores + 1;  // source 1
        for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
          coo.entries[i].row = 0;  // source 0's first sample
        }
      }
      std::vector<float> act(kGlobal * stage.activation_width());
      SparseStepBuffers buf;
      return stage.Forward(coo, &buf, act);
    });
  };
  EXPECT_DEATH(run(), "two local SparseCores' segments hold one sample");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SparseCoreStageTest, testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "_ranks"); });

}  // namespace
}  // namespace lemrt::runtime
