// TensorCoreStage at 1-4 ranks as threads (runtime/comm/local_communicator.h):
// a global batch split over the ranks trains the same dense model on every
// rank, bit for bit, and the same model as one rank given the whole batch
// (within float rounding: the gradient sums add in another order).
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::runtime {
namespace {

constexpr int kGlobal = 12;  // rows; divisible by 1, 2, 3 and 4 ranks

config::RunConfig Config() {
  auto c = config::ParseConfig(R"pb(
                                 topology { num_chips: 1 sparse_cores_per_chip: 4 }
                                 tables { name: "a" vocab_size: 100 dim: 4 combiner: SUM }
                                 features { name: "a1" table: "a" }
                                 training {
                                   global_batch: 12
                                   steps: 1
                                   seed: 5
                                   dense_optimizer { adagrad { initial_accumulator: 0 } }
                                 }
                                 model {
                                   num_dense_features: 3
                                   bottom_mlp: [ 6, 4 ]
                                   top_mlp: [ 5, 1 ]
                                 }
                               )pb",
                               "tensorcore_stage_ranks_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// Rows [first, first + n) of the global batch and their activations.
struct Slice {
  host::Batch batch;
  std::vector<float> activations;
};

Slice RowsOf(int first, int n, int width) {
  Slice s;
  s.batch.Resize(n, 3, 1);
  s.batch.global_samples = kGlobal;
  for (int i = 0; i < n; ++i) {
    const int row = first + i;
    for (int d = 0; d < 3; ++d)
      s.batch.dense[i * 3 + d] = static_cast<float>((row * 7 + d * 3) % 13) / 13;
    s.batch.labels[i] = static_cast<float>(row % 2);
    for (int w = 0; w < width; ++w) {
      s.activations.push_back(static_cast<float>((row * 5 + w) % 11) / 11 - 0.5f);
    }
  }
  return s;
}

class TensorCoreStageRanksTest : public testing::TestWithParam<int> {};

TEST_P(TensorCoreStageRanksTest, SplitBatchTrainsOneModelOnEveryRank) {
  const int W = GetParam();
  const config::RunConfig config = Config();
  SelfCommunicator self;
  auto whole = TensorCoreStage::Create(config, self);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const int width = (*whole)->model().embedding_width();
  Slice all = RowsOf(0, kGlobal, width);
  std::vector<float> d_all(all.activations.size());
  ASSERT_TRUE((*whole)->Step(0, all.batch, all.activations, d_all).ok());

  std::mutex mu;
  std::vector<std::vector<float>> params(W), d_act(W);
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    auto stage = TensorCoreStage::Create(config, comm);
    if (!stage.ok()) return stage.status();
    const int n = kGlobal / W;
    Slice mine = RowsOf(comm.rank() * n, n, width);
    std::vector<float> d(mine.activations.size());
    auto loss = (*stage)->Step(0, mine.batch, mine.activations, d);
    if (!loss.ok()) return loss.status();
    const auto p = (*stage)->mutable_params();
    std::lock_guard<std::mutex> lock(mu);
    params[comm.rank()].assign(p.begin(), p.end());
    d_act[comm.rank()] = std::move(d);
    return absl::OkStatus();
  });
  for (int r = 0; r < W; ++r) ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];

  const auto expected = (*whole)->mutable_params();
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
    EXPECT_EQ(params[r], params[0]);  // bit for bit
    ASSERT_EQ(params[r].size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(params[r][i], expected[i], 1e-5f * (1 + std::fabs(expected[i]))) << "param " << i;
    }
    for (size_t i = 0; i < d_act[r].size(); ++i) {
      const float want = d_all[r * d_act[r].size() + i];
      ASSERT_NEAR(d_act[r][i], want, 1e-6f * (1 + std::fabs(want))) << "d_activation " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorCoreStageRanksTest, testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "_ranks"); });

}  // namespace
}  // namespace lemrt::runtime
