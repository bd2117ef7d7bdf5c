// HotRowReplicas of BF16 tables (rows and Adagrad slots in bf16) at 2 ranks
// as threads x 2 SparseCores: after one update every touched hot row's
// owner shard holds, bit for bit, what TableShard::Update of the summed
// gradient stores (widened, updated in fp32, rounded stochastically with the
// owner's key), untouched rows keep their bits, and every rank's replicas
// look up the same values.
#include "runtime/hot_rows/hot_row_replicas.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device/optimizers/optimizer.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"

namespace lemrt::runtime {
namespace {

constexpr int kDim = 16;
constexpr int kRanks = 2;
constexpr int kScPerRank = 2;

config::RunConfig Config() {
  const std::string text = R"pb(
    topology { sparse_cores_per_chip: 2 }
    tables {
      name: "t"
      vocab_size: 40
      dim: 16
      dtype: BF16
      slot_dtype: BF16
      optimizer { adagrad {} }
      hot_row_ids: [ 1, 6, 11, 30 ]
    }
    features { name: "f" table: "t" }
    model {
      num_dense_features: 1
      bottom_mlp: [ 16 ]
      top_mlp: [ 4, 1 ]
    }
    training { global_batch: 4 steps: 1 embedding_learning_rate: 0.3 seed: 9 }
  )pb";
  auto c = config::ParseConfig(text, "hot_row_replicas_test", "", kRanks);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// Rank r's d_activations of its 2 samples: multiples of 1/8, so the sums
// over entries and ranks are exact in any order.
std::vector<float> Gradients(int rank) {
  std::vector<float> d(2 * kDim);
  for (int i = 0; i < 2 * kDim; ++i) d[i] = static_cast<float>((i * 7 + rank * 3) % 11 - 5) / 8;
  return d;
}

// Rank 0 looks up slots 0 and 1, rank 1 slots 1 and 2; slot 3 (row 30)
// stays untouched.
std::vector<host::HotEntry> Entries(int rank) {
  if (rank == 0) return {{0, 0, 0, 1.0f}, {1, 1, 0, 0.5f}};
  return {{1, 0, 0, 2.0f}, {2, 1, 0, 1.0f}};
}

struct RowBits {
  std::vector<uint8_t> weights;
  std::vector<float> slots;
};

RowBits Read(const device::TableShard& shard, int64_t local_row) {
  RowBits r;
  const std::span<const uint8_t> all = shard.weight_bytes();
  r.weights.assign(all.begin() + local_row * shard.row_bytes(),
                   all.begin() + (local_row + 1) * shard.row_bytes());
  r.slots.resize(shard.slot_stride());
  shard.ReadSlots(local_row, 1, r.slots.data());
  return r;
}

TEST(HotRowReplicasTest, Bf16ReplicasUpdateAsTheOwnerWould) {
  const config::RunConfig config = Config();
  const std::unique_ptr<device::Optimizer> opt = device::CreateTableOptimizer(config, 0);
  const device::Optimizer* optimizers[] = {opt.get()};
  const std::vector<int> dims = {kDim};
  const std::vector<int64_t> rows = {1, 6, 11, 30};
  std::vector<RowBits> after(rows.size());
  std::vector<std::vector<float>> looked_up(kRanks);
  const std::vector<absl::Status> statuses = RunLocalRanks(kRanks, [&](Communicator& comm) {
    std::vector<std::unique_ptr<device::SparseCore>> scs;
    for (int l = 0; l < kScPerRank; ++l) {
      scs.push_back(
          std::make_unique<device::SparseCore>(config, comm.rank() * kScPerRank + l, optimizers));
    }
    HotRowReplicas hot(host::HotRowSet(std::vector<std::vector<int64_t>>{rows}), dims, optimizers);
    absl::Status st = hot.Refresh(comm, scs);
    if (!st.ok()) return st;
    const std::vector<host::HotEntry> entries = Entries(comm.rank());
    const std::vector<float> d = Gradients(comm.rank());
    const std::vector<int> offsets = {0};
    st = hot.Update(entries, offsets, kDim, d, /*step=*/1, comm, scs);
    if (!st.ok()) return st;
    looked_up[comm.rank()].assign(rows.size() * kDim, 0.0f);
    std::vector<host::HotEntry> all;
    for (int32_t s = 0; s < 4; ++s) all.push_back({s, s, 0, 1.0f});
    hot.Lookup(all, offsets, kDim, looked_up[comm.rank()]);
    for (size_t i = 0; i < rows.size(); ++i) {
      const int owner = static_cast<int>(rows[i] % (kRanks * kScPerRank));
      if (owner / kScPerRank != comm.rank()) continue;
      const device::TableShard& shard = scs[owner % kScPerRank]->shard(0);
      after[i] = Read(shard, shard.LocalRow(rows[i]));
    }
    return absl::OkStatus();
  });
  for (const absl::Status& st : statuses) ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(looked_up[0], looked_up[1]);

  // The reference: fresh shards, each touched row updated once by Update
  // with the gradient summed over both ranks' entries.
  std::vector<std::vector<float>> grad(rows.size(), std::vector<float>(kDim, 0.0f));
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<float> d = Gradients(r);
    for (const host::HotEntry& e : Entries(r)) {
      for (int k = 0; k < kDim; ++k) grad[e.slot][k] += e.gain * d[e.row * kDim + k];
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const int owner = static_cast<int>(rows[i] % (kRanks * kScPerRank));
    device::SparseCore fresh(config, owner, optimizers);
    device::TableShard& shard = fresh.mutable_shard(0);
    const int64_t local = shard.LocalRow(rows[i]);
    const RowBits initial = Read(shard, local);
    const bool touched = i < 3;
    if (touched) shard.Update(local, grad[i], 1, opt->LearningRateAt(1));
    const RowBits want = Read(shard, local);
    if (touched) {
      EXPECT_NE(want.weights, initial.weights) << "row " << rows[i];
    }
    EXPECT_EQ(after[i].weights, want.weights) << "row " << rows[i];
    EXPECT_EQ(after[i].slots, want.slots) << "row " << rows[i];
    std::vector<float> widened(kDim);
    shard.ReadRows(local, 1, widened.data());
    for (int k = 0; k < kDim; ++k) {
      EXPECT_EQ(looked_up[0][i * kDim + k], widened[k]) << "row " << rows[i] << " col " << k;
    }
  }
}

}  // namespace
}  // namespace lemrt::runtime
