#include "runtime/step/tensorcore_stage.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/comm/self_communicator.h"

namespace lemrt::runtime {
namespace {

config::RunConfig Config(const std::string& interaction) {
  const std::string text = R"pb(
topology { num_chips: 1 sparse_cores_per_chip: 4 }
tables { name: "a" vocab_size: 100 dim: 4 combiner: SUM }
tables { name: "b" vocab_size: 50 dim: 4 combiner: SUM }
features { name: "a1" table: "a" }
features { name: "b1" table: "b" }
training { global_batch: 8 steps: 1 seed: 5 dense_optimizer { adagrad { initial_accumulator: 0 } } }
model { num_dense_features: 3 bottom_mlp: [ 6, 4 ] top_mlp: [ 5, 1 ] )pb" +
                           interaction + " }\n";
  auto c = config::ParseConfig(text, "tensorcore_stage_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// A batch of `n` samples (3 dense inputs, 2 features) with inputs drawn from
// `seed`; `mask` empty or [n].
host::Batch MakeBatch(int n, uint32_t seed, std::vector<float> mask, int64_t global_samples) {
  host::Batch b;
  b.Resize(n, 3, 2);
  for (int i = 0; i < n * 3; ++i) b.dense[i] = static_cast<float>((seed * 31 + i * 7) % 13) / 13;
  for (int i = 0; i < n; ++i) b.labels[i] = static_cast<float>((seed + i) % 2);
  b.mask = std::move(mask);
  b.global_samples = global_samples;
  return b;
}

std::vector<float> Activations(int n, int width) {
  std::vector<float> a(n * width);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 5) % 11) / 11 - 0.5f;
  return a;
}

class TensorCoreStageTest : public testing::TestWithParam<std::string> {};

// A batch with masked rows trains exactly like the batch of its real rows
// alone: same loss, same parameters after the step, the same d_activations
// on the real rows and zeros on the masked ones.
TEST_P(TensorCoreStageTest, MaskedRowsTrainLikeTheRealRowsAlone) {
  const config::RunConfig config = Config(GetParam());
  SelfCommunicator comm_a, comm_b;
  auto masked = TensorCoreStage::Create(config, comm_a);
  auto real = TensorCoreStage::Create(config, comm_b);
  ASSERT_TRUE(masked.ok() && real.ok());
  const int width = (*masked)->model().embedding_width();
  const std::vector<float> mask = {1, 0, 1, 1, 0, 1, 1, 0};
  host::Batch full = MakeBatch(8, 3, mask, 5);
  std::vector<float> act = Activations(8, width);

  // The real rows, packed by hand.
  host::Batch packed;
  packed.Resize(5, 3, 2);
  packed.global_samples = 5;
  std::vector<float> packed_act;
  int n = 0;
  for (int i = 0; i < 8; ++i) {
    if (mask[i] == 0) continue;
    for (int d = 0; d < 3; ++d) packed.dense[n * 3 + d] = full.dense[i * 3 + d];
    packed.labels[n] = full.labels[i];
    packed_act.insert(packed_act.end(), act.begin() + i * width, act.begin() + (i + 1) * width);
    ++n;
  }

  std::vector<float> d_full(8 * width, 123.0f), d_packed(5 * width);
  auto loss_full = (*masked)->Step(0, full, act, d_full);
  auto loss_packed = (*real)->Step(0, packed, packed_act, d_packed);
  ASSERT_TRUE(loss_full.ok() && loss_packed.ok());
  EXPECT_EQ(*loss_full, *loss_packed);
  EXPECT_GT(*loss_full, 0);
  const auto pa = (*masked)->mutable_params();
  const auto pb = (*real)->mutable_params();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) ASSERT_EQ(pa[i], pb[i]) << "param " << i;
  n = 0;
  for (int i = 0; i < 8; ++i) {
    for (int w = 0; w < width; ++w) {
      const float got = d_full[i * width + w];
      if (mask[i] == 0) {
        EXPECT_EQ(got, 0.0f) << "masked row " << i;
      } else {
        EXPECT_EQ(got, d_packed[n * width + w]) << "row " << i;
      }
    }
    if (mask[i] != 0) ++n;
  }
}

// A rank whose slice of the last batch holds no real row still takes part
// in the step: zero loss, zero gradients, zero d_activations.
TEST_P(TensorCoreStageTest, AllRowsMasked) {
  const config::RunConfig config = Config(GetParam());
  SelfCommunicator comm;
  auto stage = TensorCoreStage::Create(config, comm);
  ASSERT_TRUE(stage.ok());
  const int width = (*stage)->model().embedding_width();
  host::Batch b = MakeBatch(8, 4, std::vector<float>(8, 0.0f), 3);
  std::vector<float> act = Activations(8, width), d(8 * width, 7.0f);
  auto loss = (*stage)->Step(0, b, act, d);
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(*loss, 0.0);
  for (float g : (*stage)->model().grads()) ASSERT_EQ(g, 0.0f);
  for (float x : d) ASSERT_EQ(x, 0.0f);
}

// Rows [begin, end) of `b` as a batch of their own.
host::Batch Slice(const host::Batch& b, int begin, int end) {
  host::Batch s;
  s.Resize(end - begin, 3, 2);
  std::copy(b.dense.begin() + begin * 3, b.dense.begin() + end * 3, s.dense.begin());
  std::copy(b.labels.begin() + begin, b.labels.begin() + end, s.labels.begin());
  if (!b.mask.empty()) s.mask.assign(b.mask.begin() + begin, b.mask.begin() + end);
  s.global_samples = b.global_samples;
  return s;
}

// Steps of a world-size-independent run; before step kForcedStep every
// stage's predicted exponents are set far too small, so that step measures
// them again (the redo path).
constexpr int kSteps = 4;
constexpr int kForcedStep = 2;
host::Batch StepBatch(int step) {
  const std::vector<float> mask = {1, 1, 0, 1, 1, 1, 1, step == 1 ? 1.0f : 0.0f};
  return MakeBatch(8, 6 + step, mask, step == 1 ? 7 : 6);
}
absl::Status ForceMeasure(TensorCoreStage& stage) {
  std::vector<int64_t> tiny(stage.predicted_exponents().size(), -100);
  if (tiny.empty()) return absl::InternalError("no prediction after a step");
  tiny.back() = 0;
  return stage.set_predicted_exponents(tiny);
}

// world_size_independent: kSteps steps of 2 or 4 ranks, each on its slice of
// the global batch (some rows masked), give every rank the parameters and
// rank 0 the losses of one rank's steps over the whole batch, bit for bit,
// and every rank the d_activations of its rows: with predicted exponents,
// with measured ones on the first step, and when a prediction fails (the
// forced step; 1 and 2 ranks hold several blocks and recompute them).
TEST_P(TensorCoreStageTest, WorldSizeIndependentStepsMatchOneRank) {
  config::RunConfig config = Config(GetParam());
  config.mutable_training()->set_world_size_independent(true);
  SelfCommunicator one;
  auto whole = TensorCoreStage::Create(config, one);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ((*whole)->gradient_block_samples(), 2);
  EXPECT_TRUE((*whole)->predicted_exponents().empty());
  const int width = (*whole)->model().embedding_width();
  const std::vector<float> act = Activations(8, width);
  std::vector<std::vector<float>> d_whole(kSteps, std::vector<float>(8 * width));
  std::vector<double> loss_whole(kSteps);
  for (int s = 0; s < kSteps; ++s) {
    if (s == kForcedStep) {
      ASSERT_TRUE(ForceMeasure(**whole).ok());
    }
    auto l = (*whole)->Step(s, StepBatch(s), act, d_whole[s]);
    ASSERT_TRUE(l.ok()) << l.status();
    loss_whole[s] = *l;
  }
  EXPECT_FALSE((*whole)->predicted_exponents().empty());
  const int64_t remeasured = (*whole)->remeasured_steps();
  EXPECT_GE(remeasured, 1);
  EXPECT_LT(remeasured, kSteps - 1);  // predictions hold on other steps
  for (int world : {2, 4}) {
    const int local = 8 / world;
    std::vector<std::vector<float>> params(world), d(world, std::vector<float>(local * width));
    std::vector<std::vector<double>> loss(world, std::vector<double>(kSteps, -1.0));
    std::vector<int64_t> remeasured_at(world, -1);
    // Ranks as threads (runtime/comm/local_communicator.h).
    const std::vector<absl::Status> status = RunLocalRanks(world, [&](Communicator& comm) {
      auto stage = TensorCoreStage::Create(config, comm);
      if (!stage.ok()) return stage.status();
      const int r = comm.rank();
      const std::vector<float> rows(act.begin() + r * local * width,
                                    act.begin() + (r + 1) * local * width);
      for (int s = 0; s < kSteps; ++s) {
        if (s == kForcedStep) LEMRT_RETURN_IF_ERROR(ForceMeasure(**stage));
        auto l = (*stage)->Step(s, Slice(StepBatch(s), r * local, (r + 1) * local), rows, d[r]);
        if (!l.ok()) return l.status();
        loss[r][s] = *l;
        for (int i = 0; i < local * width; ++i) {
          if (d[r][i] != d_whole[s][r * local * width + i]) {
            return absl::InternalError(absl::StrCat("step ", s, ": d_activations ", i));
          }
        }
      }
      remeasured_at[r] = (*stage)->remeasured_steps();
      params[r].assign((*stage)->mutable_params().begin(), (*stage)->mutable_params().end());
      return absl::OkStatus();
    });
    for (int r = 0; r < world; ++r) {
      ASSERT_TRUE(status[r].ok()) << world << " ranks, rank " << r << ": " << status[r];
      // Every rank's parameters are those of one rank; rank 0 has the loss.
      const auto p1 = (*whole)->mutable_params();
      ASSERT_EQ(params[r].size(), p1.size());
      for (size_t i = 0; i < p1.size(); ++i) {
        ASSERT_EQ(params[r][i], p1[i]) << world << " ranks, rank " << r << ", param " << i;
      }
      for (int s = 0; s < kSteps; ++s) {
        EXPECT_EQ(loss[r][s], r == 0 ? loss_whole[s] : 0.0) << world << " ranks, rank " << r;
      }
      EXPECT_EQ(remeasured_at[r], remeasured) << world << " ranks, rank " << r;
    }
  }
}

// What a checkpoint keeps of the stage (parameters, optimizer slots, update
// count, predicted exponents), copied into a fresh stage after 2 steps,
// continues bit for bit like the stage that ran all kSteps; exponents 30
// bits coarser would train another model (so the saved ones matter).
TEST_P(TensorCoreStageTest, ContinuesFromSavedState) {
  config::RunConfig config = Config(GetParam());
  config.mutable_training()->set_world_size_independent(true);
  SelfCommunicator a_comm, b_comm, c_comm;
  auto a = TensorCoreStage::Create(config, a_comm);
  auto b = TensorCoreStage::Create(config, b_comm);
  auto c = TensorCoreStage::Create(config, c_comm);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const int width = (*a)->model().embedding_width();
  const std::vector<float> act = Activations(8, width);
  std::vector<float> d(8 * width);
  for (int s = 0; s < kSteps; ++s) ASSERT_TRUE((*a)->Step(s, StepBatch(s), act, d).ok());
  for (int s = 0; s < 2; ++s) ASSERT_TRUE((*b)->Step(s, StepBatch(s), act, d).ok());
  std::copy((*b)->mutable_params().begin(), (*b)->mutable_params().end(),
            (*c)->mutable_params().begin());
  std::copy((*b)->optimizer_slots().begin(), (*b)->optimizer_slots().end(),
            (*c)->mutable_optimizer_slots().begin());
  (*c)->set_updates((*b)->updates());
  ASSERT_TRUE((*c)->set_predicted_exponents((*b)->predicted_exponents()).ok());
  for (int s = 2; s < kSteps; ++s) ASSERT_TRUE((*c)->Step(s, StepBatch(s), act, d).ok());
  const auto pa = (*a)->mutable_params();
  const auto pc = (*c)->mutable_params();
  for (size_t i = 0; i < pa.size(); ++i) ASSERT_EQ(pc[i], pa[i]) << "param " << i;
  EXPECT_TRUE(std::equal(pa.begin(), pa.end(), pc.begin()));
  const auto ea = (*a)->predicted_exponents();
  const auto ec = (*c)->predicted_exponents();
  EXPECT_TRUE(std::equal(ea.begin(), ea.end(), ec.begin(), ec.end()));
  // The same state with exponents 30 bits coarser trains another model:
  // the saved exponents are in use.
  SelfCommunicator d_comm;
  auto coarse = TensorCoreStage::Create(config, d_comm);
  ASSERT_TRUE(coarse.ok());
  std::copy((*b)->mutable_params().begin(), (*b)->mutable_params().end(),
            (*coarse)->mutable_params().begin());
  std::copy((*b)->optimizer_slots().begin(), (*b)->optimizer_slots().end(),
            (*coarse)->mutable_optimizer_slots().begin());
  (*coarse)->set_updates((*b)->updates());
  std::vector<int64_t> shifted((*b)->predicted_exponents().begin(),
                               (*b)->predicted_exponents().end());
  for (size_t i = 0; i + 1 < shifted.size(); ++i) shifted[i] += 30;
  ASSERT_TRUE((*coarse)->set_predicted_exponents(shifted).ok());
  ASSERT_TRUE((*coarse)->Step(2, StepBatch(2), act, d).ok());
  EXPECT_EQ((*coarse)->remeasured_steps(), 0);
  ASSERT_TRUE((*b)->Step(2, StepBatch(2), act, d).ok());  // b's own exponents
  const auto pb = (*b)->mutable_params();
  const auto pd = (*coarse)->mutable_params();
  size_t differ = 0;
  for (size_t i = 0; i < pb.size(); ++i) differ += pd[i] != pb[i] ? 1 : 0;
  EXPECT_GT(differ, 0u);
}

// Predicted exponents read back (a checkpoint) are checked; empty clears.
TEST_P(TensorCoreStageTest, PredictedExponentsAreChecked) {
  config::RunConfig config = Config(GetParam());
  config.mutable_training()->set_world_size_independent(true);
  SelfCommunicator comm;
  auto stage = TensorCoreStage::Create(config, comm);
  ASSERT_TRUE(stage.ok());
  const int width = (*stage)->model().embedding_width();
  std::vector<float> d(8 * width);
  ASSERT_TRUE((*stage)->Step(0, StepBatch(0), Activations(8, width), d).ok());
  std::vector<int64_t> exps((*stage)->predicted_exponents().begin(),
                            (*stage)->predicted_exponents().end());
  ASSERT_FALSE(exps.empty());
  EXPECT_TRUE((*stage)->set_predicted_exponents(exps).ok());
  exps[0] = 500;
  EXPECT_FALSE((*stage)->set_predicted_exponents(exps).ok());
  exps.pop_back();
  const absl::Status st = (*stage)->set_predicted_exponents(exps);
  EXPECT_NE(st.message().find("expected"), std::string::npos) << st;
  EXPECT_TRUE((*stage)->set_predicted_exponents({}).ok());
  EXPECT_TRUE((*stage)->predicted_exponents().empty());
}

INSTANTIATE_TEST_SUITE_P(Models, TensorCoreStageTest,
                         testing::Values("", "dcn_v2 { num_layers: 2 low_rank: 2 }", "concat { }"));

}  // namespace
}  // namespace lemrt::runtime
