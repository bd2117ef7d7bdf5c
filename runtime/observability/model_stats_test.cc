// ComputeModelStats and its per-row kernel (row_block_stats.h) against the
// plain one-row-at-a-time computation: ModelRowHash per row, each row's
// squares summed in column order as doubles, the rows' sums added exactly.
// The vector lanes, the blocks, the thread count and the world size must
// change no bit of the checksum or of params_l2.
#include "runtime/observability/model_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "device/optimizers/optimizer.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/observability/model_checksum.h"
#include "runtime/observability/row_block_stats.h"

namespace lemrt::runtime {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// The reference: one row after another, as ComputeModelStats did before the
// vector lanes.
struct Reference {
  uint64_t hash_sum = 0;
  int64_t exact[base::kExactLimbs] = {};
  int64_t special = 0;
  double float_sum = 0;

  void AddRow(int table, int64_t original_row, const float* row, int dim) {
    hash_sum += ModelRowHash(table, original_row, row, dim);
    double sq = 0;
    for (int d = 0; d < dim; ++d) sq += double{row[d]} * row[d];
    if (!base::AddExact(sq * 0x1p-32, exact)) ++special;
    float_sum += sq;
  }
  double ExactSquares() const { return base::ExactValue(exact) * 0x1p32; }
};

std::vector<float> RandomRows(int64_t rows, int dim, uint64_t seed) {
  base::CounterRng rng(seed);
  std::vector<float> v(rows * dim);
  for (float& x : v) x = static_cast<float>((rng.NextDouble() - 0.5) * 8);
  return v;
}

void ExpectEqual(const Reference& ref, const RowBlockStats& got) {
  EXPECT_EQ(got.hash_sum, ref.hash_sum);
  EXPECT_EQ(got.exact[base::kExactLimbs], ref.special);
  EXPECT_EQ(Bits(got.ExactSquares()), Bits(ref.ExactSquares()));
  EXPECT_EQ(Bits(got.float_sum), Bits(ref.float_sum));
}

TEST(RowBlockStatsTest, EqualsTheRowByRowComputationForEveryRowCountAndDim) {
  for (int dim : {1, 3, 8, 13, 64, 67}) {
    for (int64_t rows : {0, 1, 7, 8, 9, 100}) {
      SCOPED_TRACE(absl::StrCat("dim ", dim, " rows ", rows));
      const std::vector<float> values = RandomRows(rows, dim, 17 * dim + rows);
      std::vector<int64_t> original(rows);
      for (int64_t i = 0; i < rows; ++i) original[i] = 3 * i + 5;
      Reference ref;
      for (int64_t i = 0; i < rows; ++i) ref.AddRow(2, original[i], values.data() + i * dim, dim);
      RowBlockStats got;
      AddRowBlock(2, original.data(), values.data(), rows, dim, &got);
      ExpectEqual(ref, got);
      if (rows > 0) {
        EXPECT_NE(got.hash_sum, 0u);
      }
    }
  }
}

TEST(RowBlockStatsTest, SpecialRowsAreCountedAndKeptInTheFloatSum) {
  const int dim = 5;
  std::vector<float> values = RandomRows(11, dim, 3);
  values[2 * dim + 1] = 1e20f;  // square 1e40 >= 2^64
  values[9 * dim + 4] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int64_t> original(11);
  for (int i = 0; i < 11; ++i) original[i] = i;
  Reference ref;
  for (int i = 0; i < 11; ++i) ref.AddRow(0, i, values.data() + i * dim, dim);
  RowBlockStats got;
  AddRowBlock(0, original.data(), values.data(), 11, dim, &got);
  EXPECT_EQ(got.exact[base::kExactLimbs], 2);
  EXPECT_TRUE(got.special());
  EXPECT_TRUE(std::isnan(got.float_sum));
  EXPECT_EQ(got.hash_sum, ref.hash_sum);
}

TEST(RowBlockStatsTest, BlocksAddedInAnyGroupingGiveTheSameHashAndExactSum) {
  const int dim = 16, rows = 203;
  const std::vector<float> values = RandomRows(rows, dim, 9);
  std::vector<int64_t> original(rows);
  for (int i = 0; i < rows; ++i) original[i] = rows - i;
  RowBlockStats whole;
  AddRowBlock(1, original.data(), values.data(), rows, dim, &whole);
  for (int split : {1, 8, 50, 202}) {
    RowBlockStats a, b, sum;
    AddRowBlock(1, original.data(), values.data(), split, dim, &a);
    AddRowBlock(1, original.data() + split, values.data() + split * dim, rows - split, dim, &b);
    sum.Add(b);
    sum.Add(a);
    EXPECT_EQ(sum.hash_sum, whole.hash_sum) << split;
    EXPECT_EQ(Bits(sum.ExactSquares()), Bits(whole.ExactSquares())) << split;
  }
}

// Three tables over 2 SparseCores a chip: an FP32 one spread over several
// 8192-row blocks per shard, an odd dim, and a BF16 one.
constexpr char kConfig[] = R"pb(
  tables { name: "big" vocab_size: 40001 dim: 8 combiner: SUM }
  tables { name: "odd" vocab_size: 1003 dim: 13 combiner: SUM }
  tables { name: "half" vocab_size: 2050 dim: 16 combiner: SUM dtype: BF16 }
  features { name: "f0" table: "big" }
  features { name: "f1" table: "odd" }
  features { name: "f2" table: "half" }
  model {
    num_dense_features: 2
    bottom_mlp: [ 4 ]
    top_mlp: [ 4, 1 ]
  }
  training { global_batch: 12 steps: 1 seed: 7 }
)pb";

struct RankResult {
  ModelStats stats;
  Reference local;  // this rank's rows, row by row
};

// ComputeModelStats on every rank of `world_size` (ranks as threads) with
// `threads` threads;
// also each rank's row-by-row reference.
std::vector<RankResult> RunRanks(int world_size, int threads) {
  auto config = config::ParseConfig(kConfig, "model_stats_test",
                                    "topology { sparse_cores_per_chip: 2 }", world_size);
  EXPECT_TRUE(config.ok()) << config.status();
  const std::vector<float> dense = {0.5f, -1.25f, 3.0f};
  std::vector<RankResult> results(world_size);
  const std::vector<absl::Status> status = RunLocalRanks(world_size, [&](Communicator& comm) {
    std::vector<std::unique_ptr<device::Optimizer>> optimizers;
    std::vector<const device::Optimizer*> ptrs;
    for (int t = 0; t < config->tables_size(); ++t) {
      optimizers.push_back(device::CreateTableOptimizer(*config, t));
      ptrs.push_back(optimizers.back().get());
    }
    SparseCoreStage stage(*config, comm, ptrs);
    RankResult& r = results[comm.rank()];
    for (const auto& sc : stage.sparse_cores()) {
      for (int t = 0; t < sc->num_tables(); ++t) {
        const device::TableShard& shard = sc->shard(t);
        std::vector<float> row(shard.dim());
        for (int64_t i = 0; i < shard.local_rows(); ++i) {
          shard.ReadRows(i, 1, row.data());
          r.local.AddRow(t, shard.OriginalRow(i), row.data(), shard.dim());
        }
      }
    }
    absl::StatusOr<ModelStats> stats = ComputeModelStats(comm, stage, dense, threads);
    if (!stats.ok()) return stats.status();
    r.stats = *stats;
    return absl::OkStatus();
  });
  for (const absl::Status& s : status) EXPECT_TRUE(s.ok()) << s;
  return results;
}

TEST(ModelStatsTest, SameBitsAtEveryWorldSizeAndThreadCountAsTheRowByRowSum) {
  const std::vector<RankResult> one = RunRanks(1, 1);
  ASSERT_EQ(one.size(), 1u);
  // The reference on one rank: rows, then the dense parameters.
  const Reference& ref = one[0].local;
  const std::vector<float> dense = {0.5f, -1.25f, 3.0f};
  int64_t exact[base::kExactLimbs];
  std::copy_n(ref.exact, base::kExactLimbs, exact);
  for (float v : dense) ASSERT_TRUE(base::AddExact(double{v} * v * 0x1p-32, exact));
  const double l2 = std::sqrt(base::ExactValue(exact) * 0x1p32);
  EXPECT_EQ(Bits(one[0].stats.params_l2), Bits(l2));
  EXPECT_EQ(one[0].stats.checksum, ModelChecksum(ref.hash_sum, dense));
  EXPECT_GT(l2, 1.0);
  for (int world : {1, 2, 3}) {
    for (int threads : {1, 2, 5}) {
      SCOPED_TRACE(absl::StrCat(world, " ranks, ", threads, " threads"));
      for (const RankResult& r : RunRanks(world, threads)) {
        EXPECT_EQ(r.stats.checksum, one[0].stats.checksum);
        EXPECT_EQ(Bits(r.stats.params_l2), Bits(l2));
      }
    }
  }
}

}  // namespace
}  // namespace lemrt::runtime
