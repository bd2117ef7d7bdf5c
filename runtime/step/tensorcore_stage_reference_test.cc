// TensorCoreStage's training step against a plain reference: a tiny dot
// model written out in double from dlrm_dense.h's description, its gradient
// (the per-sample losses summed over the global batch, divided by the global
// batch) by central differences, and Adagrad written out. Two steps on 1-4
// ranks as threads (runtime/comm/local_communicator.h), each rank on its
// slice of the global batch, with and without world-size-independent sums:
// every rank's parameters are the reference's after each step, and its
// d_activations the reference's for its rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::runtime {
namespace {

constexpr int kGlobal = 12;   // samples; whole on 1, 2, 3 and 4 ranks
constexpr int kDense = 2;     // dense inputs
constexpr int kEmbWidth = 5;  // table a's dim 2 (= d: as is) + b's dim 3 (projected)
constexpr int kSteps = 2;
constexpr double kLearningRate = 0.5;
constexpr double kInitialAccumulator = 0.1;
constexpr double kEpsilon = 1e-10;  // Adagrad's default

// With world_size_independent, blocks of one sample: whole on every world size.
config::RunConfig Config(bool world_size_independent) {
  auto c = config::ParseConfig(R"pb(
                                 topology { num_chips: 1 sparse_cores_per_chip: 4 }
                                 tables { name: "a" vocab_size: 10 dim: 2 combiner: SUM }
                                 tables { name: "b" vocab_size: 10 dim: 3 combiner: SUM }
                                 features { name: "a1" table: "a" }
                                 features { name: "b1" table: "b" }
                                 training {
                                   global_batch: 12
                                   steps: 2
                                   seed: 3
                                   dense_learning_rate: 0.5
                                   dense_optimizer { adagrad { initial_accumulator: 0.1 } }
                                 }
                                 model {
                                   num_dense_features: 2
                                   bottom_mlp: [ 3, 2 ]
                                   top_mlp: [ 3, 1 ]
                                 }
                               )pb",
                               "tensorcore_stage_reference_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  if (world_size_independent) {
    c->mutable_training()->set_world_size_independent(true);
    c->mutable_training()->set_gradient_block_samples(1);
  }
  return *c;
}

// The global batch of step s: dense inputs, pooled embeddings, labels.
struct GlobalBatch {
  std::vector<float> dense, emb, labels;
};
GlobalBatch MakeGlobalBatch(int s) {
  std::mt19937 gen(17 + s);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  GlobalBatch g;
  for (int i = 0; i < kGlobal * kDense; ++i) g.dense.push_back(u(gen));
  for (int i = 0; i < kGlobal * kEmbWidth; ++i) g.emb.push_back(u(gen));
  for (int i = 0; i < kGlobal; ++i) g.labels.push_back(static_cast<float>((i + s) % 2));
  return g;
}

// Rows [first, first + n) of `g` as a host batch of a global batch of kGlobal.
host::Batch Rows(const GlobalBatch& g, int first, int n) {
  host::Batch b;
  b.Resize(n, kDense, 2);
  b.global_samples = kGlobal;
  std::copy_n(g.dense.begin() + first * kDense, n * kDense, b.dense.begin());
  std::copy_n(g.labels.begin() + first, n, b.labels.begin());
  return b;
}

// The model, written out from dlrm_dense.h in double: bottom MLP [2 -> 3 ->
// 2] (ReLU after both), z_1 = table a's embedding (dim 2 = d), z_2 = table
// b's (dim 3) times P [3 x 2], x = [z_0, <z_0,z_1>, <z_0,z_2>, <z_1,z_2>],
// top MLP [5 -> 3 -> 1] (ReLU after the first), BCE with the logit. The
// parameters in the documented layout: | bottom | P | top |, each layer
// | W [in x out] row-major | b [out] |.
class Reference {
 public:
  explicit Reference(std::vector<double> params) : params_(std::move(params)) {}

  // The mean BCE over the global batch (the per-sample losses summed / kGlobal).
  double Loss(const GlobalBatch& g, const std::vector<double>& emb) {
    double sum = 0;
    for (int b = 0; b < kGlobal; ++b) {
      sum += SampleLoss(&g.dense[b * kDense], &emb[b * kEmbWidth], g.labels[b]);
    }
    return sum / kGlobal;
  }

  // dLoss/d params and dLoss/d emb by central differences of Loss.
  std::vector<double> ParamGradient(const GlobalBatch& g) {
    const std::vector<double> emb(g.emb.begin(), g.emb.end());
    return Differences(params_, [&] { return Loss(g, emb); });
  }
  std::vector<double> EmbGradient(const GlobalBatch& g) {
    std::vector<double> emb(g.emb.begin(), g.emb.end());
    return Differences(emb, [&] { return Loss(g, emb); });
  }

  // One Adagrad step on the gradient of `g`: a += grad^2; w -= lr grad /
  // (sqrt(a) + epsilon), a starting at kInitialAccumulator.
  void Step(const GlobalBatch& g) {
    const std::vector<double> grad = ParamGradient(g);
    accumulator_.resize(params_.size(), kInitialAccumulator);
    for (size_t k = 0; k < params_.size(); ++k) {
      accumulator_[k] += grad[k] * grad[k];
      params_[k] -= kLearningRate * grad[k] / (std::sqrt(accumulator_[k]) + kEpsilon);
    }
  }

  const std::vector<double>& params() const { return params_; }
  // The smallest |pre-activation| of a ReLU seen: the central differences
  // (steps of 1e-6) never cross a kink while it stays well above them.
  double relu_margin() const { return relu_margin_; }

 private:
  template <typename LossFn>
  static std::vector<double> Differences(std::vector<double>& x, LossFn loss) {
    constexpr double kStep = 1e-6;
    std::vector<double> d(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      const double saved = x[k];
      x[k] = saved + kStep;
      const double plus = loss();
      x[k] = saved - kStep;
      const double minus = loss();
      x[k] = saved;
      d[k] = (plus - minus) / (2 * kStep);
    }
    return d;
  }

  // y = x W + b (then ReLU) for the layer at params_[*k], advancing *k.
  std::vector<double> Layer(int64_t* k, const std::vector<double>& x, int out, bool relu) {
    const int in = static_cast<int>(x.size());
    std::vector<double> y(out);
    for (int o = 0; o < out; ++o) {
      double sum = params_[*k + in * out + o];
      for (int i = 0; i < in; ++i) sum += x[i] * params_[*k + i * out + o];
      if (relu) {
        relu_margin_ = std::min(relu_margin_, std::abs(sum));
        sum = std::max(sum, 0.0);
      }
      y[o] = sum;
    }
    *k += in * out + out;
    return y;
  }

  double SampleLoss(const float* dense, const double* emb, double label) {
    int64_t k = 0;
    const std::vector<double> h = Layer(&k, {dense[0], dense[1]}, 3, true);
    const std::vector<double> z0 = Layer(&k, h, 2, true);
    const std::vector<double> z1 = {emb[0], emb[1]};
    std::vector<double> z2(2, 0.0);
    for (int j = 0; j < 2; ++j) {
      for (int i = 0; i < 3; ++i) z2[j] += emb[2 + i] * params_[k + i * 2 + j];
    }
    k += 3 * 2;
    auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
      return a[0] * b[0] + a[1] * b[1];
    };
    const std::vector<double> x = {z0[0], z0[1], dot(z0, z1), dot(z0, z2), dot(z1, z2)};
    const std::vector<double> t = Layer(&k, x, 3, true);
    const double logit = Layer(&k, t, 1, false)[0];
    EXPECT_EQ(k, static_cast<int64_t>(params_.size())) << "layout not fully walked";
    // BCE(sigmoid(logit), label) = log(1 + e^logit) - label x logit.
    return std::log1p(std::exp(logit)) - label * logit;
  }

  std::vector<double> params_;
  std::vector<double> accumulator_;
  double relu_margin_ = INFINITY;
};

class TensorCoreStageReferenceTest : public testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(TensorCoreStageReferenceTest, StepsAreTheReferenceAdagradSteps) {
  const auto [world, world_size_independent] = GetParam();
  const config::RunConfig config = Config(world_size_independent);
  // The initial parameters (a function of the config and seed alone).
  SelfCommunicator self;
  auto initial = TensorCoreStage::Create(config, self);
  ASSERT_TRUE(initial.ok()) << initial.status();
  ASSERT_EQ((*initial)->model().embedding_width(), kEmbWidth);
  const auto p0 = (*initial)->mutable_params();
  ASSERT_EQ(p0.size(), 45u);  // bottom 9 + 8, P 6, top 18 + 4

  // The reference: parameters after each step, d_activations of each step.
  Reference ref(std::vector<double>(p0.begin(), p0.end()));
  std::vector<std::vector<double>> want_params, want_d_emb;
  for (int s = 0; s < kSteps; ++s) {
    const GlobalBatch g = MakeGlobalBatch(s);
    want_d_emb.push_back(ref.EmbGradient(g));
    ref.Step(g);
    want_params.push_back(ref.params());
  }
  ASSERT_GT(ref.relu_margin(), 1e-4);
  double moved = 0;  // the first step's largest move, far above the tolerance
  for (size_t k = 0; k < p0.size(); ++k)
    moved = std::max(moved, std::abs(want_params[0][k] - p0[k]));
  EXPECT_GT(moved, 0.05);

  const int local = kGlobal / world;
  std::mutex mu;
  std::vector<std::vector<std::vector<float>>> params(world), d_emb(world);
  const std::vector<absl::Status> status = RunLocalRanks(world, [&](Communicator& comm) {
    auto stage = TensorCoreStage::Create(config, comm);
    if (!stage.ok()) return stage.status();
    const int first = comm.rank() * local;
    for (int s = 0; s < kSteps; ++s) {
      const GlobalBatch g = MakeGlobalBatch(s);
      const std::vector<float> act(g.emb.begin() + first * kEmbWidth,
                                   g.emb.begin() + (first + local) * kEmbWidth);
      std::vector<float> d(act.size());
      auto loss = (*stage)->Step(s, Rows(g, first, local), act, d);
      if (!loss.ok()) return loss.status();
      const auto p = (*stage)->mutable_params();
      std::lock_guard<std::mutex> lock(mu);
      params[comm.rank()].emplace_back(p.begin(), p.end());
      d_emb[comm.rank()].push_back(std::move(d));
    }
    return absl::OkStatus();
  });
  // fp32 forward and backward of 2- to 5-wide layers with O(1) values: a
  // few ulps of error in the gradients, which Adagrad's step (lr / sqrt(0.1)
  // times the gradient at most) turns into ~1e-7 in the parameters.
  constexpr double kTolerance = 5e-7;
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    for (int s = 0; s < kSteps; ++s) {
      SCOPED_TRACE(absl::StrCat("rank ", r, " of ", world, ", step ", s));
      const std::vector<float>& got = params[r][s];
      const std::vector<double>& want = want_params[s];
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_NEAR(got[k], want[k], kTolerance * (1 + std::abs(want[k]))) << "param " << k;
      }
      // d_activations: the gradient of the global mean loss, rank r's rows.
      for (int i = 0; i < local * kEmbWidth; ++i) {
        const double w = want_d_emb[s][r * local * kEmbWidth + i];
        EXPECT_NEAR(d_emb[r][s][i], w, 1e-7 + 1e-5 * std::abs(w)) << "d_activation " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorCoreStageReferenceTest,
                         testing::Combine(testing::Values(1, 2, 3, 4), testing::Bool()),
                         [](const auto& info) {
                           return absl::StrCat(std::get<0>(info.param), "_ranks",
                                               std::get<1>(info.param) ? "_independent" : "");
                         });

}  // namespace
}  // namespace lemrt::runtime
