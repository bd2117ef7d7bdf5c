#include "device/tensorcore/cross_dense.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device/tensorcore/dlrm_dense.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/gradient_check_test_util.h"
#include "device/tensorcore/thread_team.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::RandomVector;

DenseModelSpec Spec(Interaction interaction, int rank = 3) {
  DenseModelSpec spec;
  spec.shape = DlrmShape{.num_dense = 3, .bottom = {5, 4}, .top = {6, 1}, .feature_dims = {4, 3, 2}};
  spec.interaction = interaction;
  spec.cross_layers = 2;
  spec.cross_low_rank = rank;
  return spec;
}

// The model written out from cross_dense.h's description, in double, one
// sample at a time, reading the parameters by the documented layout. With
// `dropout`, hidden unit o of MLP layer l of sample b is kept by
// DropoutKeeps(*dropout, base + l, b, o, rate) (spec.dropout's rates; base 0
// for the bottom MLP, kTopMlpDropoutLayer for the top), scaled by 1 / (1 - rate).
std::vector<double> NaiveLogits(const DenseModelSpec& spec, std::span<const float> p,
                                int64_t batch, const std::vector<float>& dense,
                                const std::vector<float>& emb,
                                const DropoutKey* dropout = nullptr) {
  const DlrmShape& s = spec.shape;
  int emb_width = 0;
  for (int dim : s.feature_dims) emb_width += dim;
  std::vector<double> logits;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t k = 0;  // cursor into p
    auto mlp = [&](std::vector<double> x, const std::vector<int>& widths, bool relu_last,
                   float rate, int base) {
      int in = static_cast<int>(x.size());
      for (size_t l = 0; l < widths.size(); ++l) {
        const int out = widths[l];
        std::vector<double> y(out);
        for (int o = 0; o < out; ++o) {
          double sum = p[k + int64_t{in} * out + o];
          for (int i = 0; i < in; ++i) sum += x[i] * p[k + i * out + o];
          y[o] = l + 1 < widths.size() || relu_last ? std::max(sum, 0.0) : sum;
          if (dropout != nullptr && l + 1 < widths.size()) {
            y[o] = DropoutKeeps(*dropout, base + static_cast<int>(l), b, o, rate)
                       ? y[o] / (1.0 - static_cast<double>(rate))
                       : 0.0;
          }
        }
        k += int64_t{in} * out + out;
        in = out;
        x = std::move(y);
      }
      return x;
    };
    std::vector<double> x0 =
        mlp(std::vector<double>(dense.begin() + b * s.num_dense,
                                dense.begin() + (b + 1) * s.num_dense),
            s.bottom, true, spec.dropout.bottom, 0);
    x0.insert(x0.end(), emb.begin() + b * emb_width, emb.begin() + (b + 1) * emb_width);
    const int w = static_cast<int>(x0.size());
    std::vector<double> x = x0;
    if (spec.interaction == Interaction::kDcnV2) {
      const int r = spec.cross_low_rank;
      for (int l = 0; l < spec.cross_layers; ++l) {
        std::vector<double> a(w);
        if (r > 0) {
          std::vector<double> t(r);
          for (int j = 0; j < r; ++j) {
            for (int i = 0; i < w; ++i) t[j] += x[i] * p[k + i * r + j];
          }
          k += int64_t{w} * r;
          for (int o = 0; o < w; ++o) {
            for (int j = 0; j < r; ++j) a[o] += t[j] * p[k + j * w + o];
          }
          k += int64_t{r} * w;
        } else {
          for (int o = 0; o < w; ++o) {
            for (int i = 0; i < w; ++i) a[o] += x[i] * p[k + i * w + o];
          }
          k += int64_t{w} * w;
        }
        for (int o = 0; o < w; ++o) x[o] = x0[o] * (a[o] + p[k + o]) + x[o];
        k += w;
      }
    }
    logits.push_back(mlp(x, s.top, false, spec.dropout.top, kTopMlpDropoutLayer)[0]);
  }
  return logits;
}

double NaiveLoss(const DenseModelSpec& spec, std::span<const float> p, int64_t batch,
                 const std::vector<float>& dense, const std::vector<float>& emb,
                 const std::vector<float>& labels, const DropoutKey* dropout = nullptr) {
  double loss = 0;
  const std::vector<double> logits = NaiveLogits(spec, p, batch, dense, emb, dropout);
  for (int64_t i = 0; i < batch; ++i) {
    const double x = logits[i];
    loss += std::max(x, 0.0) - x * labels[i] + std::log1p(std::exp(-std::abs(x)));
  }
  return loss;
}

struct Inputs {
  std::vector<float> dense, emb, labels;
};

Inputs MakeInputs(const DenseModelSpec& spec, int64_t batch, uint32_t seed) {
  int emb_width = 0;
  for (int dim : spec.shape.feature_dims) emb_width += dim;
  Inputs in{RandomVector(batch * spec.shape.num_dense, seed, -2, 2),
            RandomVector(batch * emb_width, seed + 1), {}};
  for (int64_t i = 0; i < batch; ++i) in.labels.push_back(i % 3 == 0);
  return in;
}

class CrossDenseTest : public ::testing::TestWithParam<std::pair<Interaction, int>> {
 protected:
  DenseModelSpec spec() const { return Spec(GetParam().first, GetParam().second); }
};

TEST_P(CrossDenseTest, LayoutAndParameterCount) {
  auto model = CrossDense::Create(spec(), 4, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  const int w = 4 + 4 + 3 + 2;
  EXPECT_EQ((*model)->concat_width(), w);
  const int64_t bottom = 3 * 5 + 5 + 5 * 4 + 4;
  const int64_t top = w * 6 + 6 + 6 + 1;
  int64_t cross = 0;
  if (spec().interaction == Interaction::kDcnV2) {
    const int r = spec().cross_low_rank;
    cross = 2 * (r > 0 ? 2 * w * r + w : w * w + w);
  }
  EXPECT_EQ((*model)->cross_offset(), bottom);
  EXPECT_EQ((*model)->top_offset(), bottom + cross);
  EXPECT_EQ((*model)->num_params(), bottom + cross + top);
  EXPECT_EQ(CountDenseParams(spec()).value(), (*model)->num_params());
  // Deterministic initialisation; biases start at zero.
  auto again = CrossDense::Create(spec(), 2, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::equal((*model)->params().begin(), (*model)->params().end(),
                         (*again)->params().begin()));
  EXPECT_EQ((*model)->params()[3 * 5], 0.0f);  // b_1 of the bottom MLP
}

TEST_P(CrossDenseTest, PredictMatchesNaiveModel) {
  auto model = std::move(CrossDense::Create(spec(), 8, 17).value());
  // Non-zero biases, so that their place in the layout is checked too.
  const std::vector<float> noise = RandomVector(model->num_params(), 18, -0.2f, 0.2f);
  for (int64_t k = 0; k < model->num_params(); ++k) model->params()[k] += noise[k];
  const Inputs in = MakeInputs(spec(), 7, 3);
  std::vector<float> probs(7);
  model->Predict(7, in.dense.data(), in.emb.data(), probs.data());
  const std::vector<double> logits = NaiveLogits(spec(), model->params(), 7, in.dense, in.emb);
  for (int i = 0; i < 7; ++i) {
    EXPECT_NEAR(probs[i], 1 / (1 + std::exp(-logits[i])), 1e-5) << i;
  }
}

// The analytic float gradients against central differences of the naive
// double model (gradient_check_test_util.h): every parameter and every
// embedding input.
TEST_P(CrossDenseTest, GradientsMatchFiniteDifferencesOfTheNaiveModel) {
  const int64_t batch = 3;
  auto model = std::move(CrossDense::Create(spec(), batch, 5).value());
  const std::vector<float> noise = RandomVector(model->num_params(), 6, -0.2f, 0.2f);
  for (int64_t k = 0; k < model->num_params(); ++k) model->params()[k] += noise[k];
  Inputs in = MakeInputs(spec(), batch, 7);
  std::vector<float> d_emb(in.emb.size());
  const float scale = 0.5f;
  const double loss = model->ForwardBackward(batch, in.dense.data(), in.emb.data(),
                                             in.labels.data(), scale, d_emb.data());
  EXPECT_NEAR(loss, NaiveLoss(spec(), model->params(), batch, in.dense, in.emb, in.labels), 1e-4);
  std::vector<float> grads(model->grads().begin(), model->grads().end());
  std::vector<float> params(model->params().begin(), model->params().end());
  auto f = [&] { return scale * NaiveLoss(spec(), params, batch, in.dense, in.emb, in.labels); };
  ExpectGradientMatches(params, grads, f, "params");
  ExpectGradientMatches(in.emb, d_emb, f, "emb");
}

// Dropout in both MLPs: the gradients are those of the naive model with the
// key's masks, and Predict is the naive model without any.
TEST_P(CrossDenseTest, DropoutMatchesFiniteDifferencesOfTheMaskedModel) {
  const int64_t batch = 4;
  DenseModelSpec s = spec();
  s.shape.bottom = {6, 5, 4};  // two dropped bottom layers
  s.dropout = {.bottom = 0.3f, .top = 0.5f};
  const DropoutKey key{.seed = 2, .step = 11, .first_sample = 64};
  auto model = std::move(CrossDense::Create(s, batch, 5).value());
  const std::vector<float> noise = RandomVector(model->num_params(), 8, -0.2f, 0.2f);
  for (int64_t k = 0; k < model->num_params(); ++k) model->params()[k] += noise[k];
  Inputs in = MakeInputs(s, batch, 9);
  std::vector<float> d_emb(in.emb.size());
  model->set_dropout_key(key);
  const double loss = model->ForwardBackward(batch, in.dense.data(), in.emb.data(),
                                             in.labels.data(), 1.0f, d_emb.data());
  EXPECT_NEAR(loss, NaiveLoss(s, model->params(), batch, in.dense, in.emb, in.labels, &key), 1e-4);
  EXPECT_GT(std::abs(loss - NaiveLoss(s, model->params(), batch, in.dense, in.emb, in.labels)),
            1e-4);  // the masks changed the model
  std::vector<float> grads(model->grads().begin(), model->grads().end());
  std::vector<float> params(model->params().begin(), model->params().end());
  auto f = [&] { return NaiveLoss(s, params, batch, in.dense, in.emb, in.labels, &key); };
  ExpectGradientMatches(params, grads, f, "params");
  ExpectGradientMatches(in.emb, d_emb, f, "emb");
  std::vector<float> probs(batch);
  model->Predict(batch, in.dense.data(), in.emb.data(), probs.data());
  const std::vector<double> logits = NaiveLogits(s, model->params(), batch, in.dense, in.emb);
  for (int i = 0; i < batch; ++i) EXPECT_NEAR(probs[i], 1 / (1 + std::exp(-logits[i])), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Interactions, CrossDenseTest,
                         ::testing::Values(std::make_pair(Interaction::kDcnV2, 3),
                                           std::make_pair(Interaction::kDcnV2, 0),
                                           std::make_pair(Interaction::kConcat, 0)));

// Models large enough that their products split into several blocks and
// their element-wise passes, copies and bias sums into several tasks: a step
// on teams of 1, 2 and 4 threads (tensor_core.gemm_threads) gives the bits of
// the calling thread alone, step after step, for low-rank and full-rank
// cross layers and for concat, with dropout in both MLPs.
TEST(CrossDenseThreadsTest, BitsDoNotDependOnTheTeam) {
  for (const auto& [interaction, rank] :
       {std::make_pair(Interaction::kDcnV2, 64), std::make_pair(Interaction::kDcnV2, 0),
        std::make_pair(Interaction::kConcat, 0)}) {
    DenseModelSpec spec;
    spec.shape = DlrmShape{
        .num_dense = 13, .bottom = {256, 64}, .top = {128, 1}, .feature_dims = {64, 32, 64, 16}};
    spec.interaction = interaction;
    spec.cross_layers = 2;
    spec.cross_low_rank = rank;
    spec.dropout = {.bottom = 0.25f, .top = 0.25f};
    const int64_t batch = 300;
    const Inputs in = MakeInputs(spec, batch, 23);
    struct Run {
      std::vector<float> grads, d_emb, probs;
      double loss = 0;
    };
    auto run = [&](ThreadTeam* team) {
      auto model = CreateDenseModel(spec, batch, 5, team);
      EXPECT_TRUE(model.ok()) << model.status();
      Run r;
      std::vector<float> d_emb(in.emb.size());
      for (int step = 0; step < 3; ++step) {
        r.loss += (*model)->ForwardBackward(batch, in.dense.data(), in.emb.data(),
                                            in.labels.data(), 1.0f / batch, d_emb.data());
        // A plain SGD step, so that the next step starts from new weights.
        std::span<float> p = (*model)->params();
        for (size_t k = 0; k < p.size(); ++k) p[k] -= 0.5f * (*model)->grads()[k];
      }
      r.grads.assign((*model)->grads().begin(), (*model)->grads().end());
      r.d_emb = d_emb;
      r.probs.resize(batch);
      (*model)->Predict(batch, in.dense.data(), in.emb.data(), r.probs.data());
      return r;
    };
    const Run want = run(nullptr);
    // The check has teeth: the gradients are not all zero.
    EXPECT_TRUE(std::any_of(want.grads.begin(), want.grads.end(), [](float g) { return g != 0; }));
    for (int threads : {1, 2, 4}) {
      ThreadTeam team(threads);
      const Run got = run(&team);
      const std::string what = DescribeInteraction(spec) + ", " + std::to_string(threads) +
                               " threads";
      EXPECT_EQ(got.loss, want.loss) << what;
      EXPECT_EQ(got.grads, want.grads) << what;
      EXPECT_EQ(got.d_emb, want.d_emb) << what;
      EXPECT_EQ(got.probs, want.probs) << what;
    }
  }
}

// CreateDenseModel picks the model by the interaction, and CountDenseParams
// counts each without building it.
// model.dense_dtype: BF16 reaches the cross layers: a bf16 DCN-v2 model
// (CreateDenseModel) is, bit for bit, its bf16 parts chained by hand (bottom
// Mlp, CrossNetwork, TaskHeads, all kBf16; the cross layer itself is checked
// against the rounded reference in cross_network_test), and the same chain
// with fp32 cross layers is another model.
TEST(CrossDenseBf16Test, CrossLayersRunInBf16) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  DenseModelSpec spec = Spec(Interaction::kDcnV2);
  spec.precision = GemmPrecision::kBf16;
  const int64_t batch = 70;
  auto created = CreateDenseModel(spec, batch, 4);
  ASSERT_TRUE(created.ok()) << created.status();
  auto& model = static_cast<CrossDense&>(**created);
  const DlrmShape& s = spec.shape;
  const int d = s.bottom.back(), emb_width = model.embedding_width(), w = model.concat_width();
  const std::vector<float> dense = RandomVector(batch * s.num_dense, 5);
  const std::vector<float> emb = RandomVector(batch * emb_width, 6);
  std::vector<float> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> d_emb(batch * emb_width);
  model.ForwardBackward(batch, dense.data(), emb.data(), labels.data(), 0.25f, d_emb.data());

  // The chain, with the cross layers in `cross_precision`.
  auto chain = [&](GemmPrecision cross_precision, std::vector<float>* grads,
                   std::vector<float>* chain_d_emb) {
    MlpShape bottom_shape{.widths = {s.num_dense}, .precision = GemmPrecision::kBf16};
    bottom_shape.widths.insert(bottom_shape.widths.end(), s.bottom.begin(), s.bottom.end());
    MlpShape top_shape{.widths = {w},
                       .relu_last = false,
                       .dropout_layer = kTopMlpDropoutLayer,
                       .precision = GemmPrecision::kBf16};
    top_shape.widths.insert(top_shape.widths.end(), s.top.begin(), s.top.end());
    Mlp bottom(bottom_shape, batch);
    CrossNetwork cross({.width = w,
                        .num_layers = spec.cross_layers,
                        .low_rank = spec.cross_low_rank,
                        .precision = cross_precision},
                       batch);
    TaskHeads heads(top_shape, s.task_weights, batch, nullptr);
    const std::span<const float> p = model.params();
    const auto bottom_p = p.subspan(0, bottom.num_params());
    const auto cross_p = p.subspan(model.cross_offset(), cross.num_params());
    const auto top_p = p.subspan(model.top_offset(), heads.num_params());
    grads->assign(p.size(), 0.0f);
    std::span<float> g(*grads);
    std::vector<float> x0(batch * w), dx(batch * w), dx0(batch * w), d_bottom(batch * d);
    bottom.Forward(bottom_p, batch, dense.data(), nullptr);
    for (int64_t r = 0; r < batch; ++r) {
      std::copy_n(bottom.output() + r * d, d, x0.begin() + r * w);
      std::copy_n(emb.begin() + r * emb_width, emb_width, x0.begin() + r * w + d);
    }
    cross.Forward(cross_p, batch, x0.data());
    heads.Forward(top_p, batch, cross.output(), nullptr);
    heads.LossAndGradient(batch, labels.data(), 0.25f);
    heads.Backward(top_p, batch, cross.output(), g.subspan(model.top_offset(), heads.num_params()),
                   dx.data());
    cross.Backward(cross_p, batch, x0.data(), dx.data(),
                   g.subspan(model.cross_offset(), cross.num_params()), dx0.data());
    chain_d_emb->resize(batch * emb_width);
    for (int64_t r = 0; r < batch; ++r) {
      std::copy_n(dx0.begin() + r * w, d, d_bottom.begin() + r * d);
      std::copy_n(dx0.begin() + r * w + d, emb_width, chain_d_emb->begin() + r * emb_width);
    }
    bottom.Backward(bottom_p, batch, dense.data(), d_bottom.data(),
                    g.subspan(0, bottom.num_params()), nullptr);
  };
  std::vector<float> grads, chain_d_emb;
  chain(GemmPrecision::kBf16, &grads, &chain_d_emb);
  EXPECT_TRUE(std::equal(grads.begin(), grads.end(), model.grads().begin(), model.grads().end()));
  EXPECT_EQ(chain_d_emb, d_emb);
  chain(GemmPrecision::kFp32, &grads, &chain_d_emb);
  EXPECT_FALSE(std::equal(grads.begin(), grads.end(), model.grads().begin(), model.grads().end()));
  EXPECT_NE(chain_d_emb, d_emb);
}

TEST(DenseModelTest, FactoryAndParameterCounts) {
  for (Interaction i : {Interaction::kDot, Interaction::kDcnV2, Interaction::kConcat}) {
    const DenseModelSpec spec = Spec(i);
    auto model = CreateDenseModel(spec, 2, 3);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(CountDenseParams(spec).value(), (*model)->num_params()) << DescribeInteraction(spec);
    EXPECT_EQ((*model)->embedding_width(), 9);
    EXPECT_EQ((*model)->num_dense(), 3);
  }
  EXPECT_NE(dynamic_cast<DlrmDense*>(CreateDenseModel(Spec(Interaction::kDot), 1, 1)->get()),
            nullptr);
  EXPECT_EQ(DescribeInteraction(Spec(Interaction::kDcnV2, 512)), "dcn_v2 (2 layers, rank 512)");
  EXPECT_EQ(DescribeInteraction(Spec(Interaction::kDcnV2, 0)), "dcn_v2 (2 layers, full rank)");
  DenseModelSpec bad = Spec(Interaction::kDcnV2);
  bad.cross_layers = 0;
  EXPECT_FALSE(CountDenseParams(bad).ok());
  bad = Spec(Interaction::kConcat);
  bad.shape.top = {4, 2};
  EXPECT_EQ(CountDenseParams(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lemrt::device
