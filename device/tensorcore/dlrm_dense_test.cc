#include "device/tensorcore/dlrm_dense.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "device/tensorcore/dlrm_reference_test_util.h"
#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::NaiveLogits;
using test_util::RandomVector;

// d = 4; features 0 and 2 are used as they are, 1 and 3 are projected.
DlrmShape SmallShape() {
  return DlrmShape{.num_dense = 3,
                   .bottom = {5, 4},
                   .top = {6, 1},
                   .feature_dims = {4, 3, 4, 6}};
}

// Parameter counts of SmallShape, following the layout in dlrm_dense.h.
constexpr int64_t kBottomParams = 3 * 5 + 5 + 5 * 4 + 4;      // 44
constexpr int64_t kProjParams = 3 * 4 + 6 * 4;                // 36
constexpr int64_t kTopParams = (4 + 10) * 6 + 6 + 6 * 1 + 1;  // 97

std::unique_ptr<DlrmDense> MakeModel(const DlrmShape& shape, int64_t max_batch,
                                     uint64_t seed) {
  absl::StatusOr<std::unique_ptr<DlrmDense>> model =
      DlrmDense::Create(shape, max_batch, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(model).value() : nullptr;
}

// One batch of inputs for a model.
struct Batch {
  int64_t size;
  std::vector<float> dense, emb, labels;
};

Batch MakeBatch(const DlrmDense& model, int64_t size, uint32_t seed) {
  Batch batch{.size = size, .dense = {}, .emb = {}, .labels = {}};
  batch.dense = RandomVector(size * model.shape().num_dense, seed, -2, 2);
  batch.emb = RandomVector(size * model.embedding_width(), seed + 1);
  for (int64_t i = 0; i < size; ++i) batch.labels.push_back(i % 3 == 0);
  return batch;
}

double BceFromProbs(const std::vector<float>& probs,
                    const std::vector<float>& labels) {
  double loss = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    loss -= labels[i] * std::log(double{probs[i]}) +
            (1 - labels[i]) * std::log1p(-double{probs[i]});
  }
  return loss;
}

TEST(DlrmDenseTest, PredictMatchesNaiveModel) {
  // Wider shapes than SmallShape, with several projected features.
  const DlrmShape shape{.num_dense = 5,
                        .bottom = {7, 6},
                        .top = {9, 4, 1},
                        .feature_dims = {6, 2, 8, 6, 3}};
  std::unique_ptr<DlrmDense> model = MakeModel(shape, 8, 17);
  ASSERT_NE(model, nullptr);
  // Non-zero biases, so that their place in the layout is checked too.
  const std::vector<float> noise =
      RandomVector(model->num_params(), 18, -0.2f, 0.2f);
  for (int64_t k = 0; k < model->num_params(); ++k) {
    model->params()[k] += noise[k];
  }
  const Batch batch = MakeBatch(*model, 8, 19);
  std::vector<float> probs(8);
  model->Predict(8, batch.dense.data(), batch.emb.data(), probs.data());
  const std::vector<double> logits =
      NaiveLogits(shape, model->params(), 8, batch.dense, batch.emb);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(probs[i], 1.0 / (1.0 + std::exp(-logits[i])), 1e-5) << i;
  }
}

TEST(DlrmDenseTest, InitFollowsDocumentedFormula) {
  auto mix64 = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  const uint64_t seed = 2024;
  auto weight = [&](int64_t k, int fan_in, int fan_out) {
    const uint64_t h = mix64(seed * 0x100000001b3ULL ^ mix64(k));
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    return static_cast<float>((2.0 * u - 1.0) *
                              std::sqrt(6.0 / (fan_in + fan_out)));
  };
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 4, seed);
  ASSERT_NE(model, nullptr);
  std::span<const float> p = model->params();
  for (int64_t k = 0; k < 15; ++k) EXPECT_EQ(p[k], weight(k, 3, 5)) << k;
  for (int64_t k = 20; k < 40; ++k) EXPECT_EQ(p[k], weight(k, 5, 4)) << k;
  for (int64_t k = 44; k < 56; ++k) EXPECT_EQ(p[k], weight(k, 3, 4)) << k;
  for (int64_t k = 56; k < 80; ++k) EXPECT_EQ(p[k], weight(k, 6, 4)) << k;
  for (int64_t k = 80; k < 164; ++k) EXPECT_EQ(p[k], weight(k, 14, 6)) << k;
  for (int64_t k = 170; k < 176; ++k) EXPECT_EQ(p[k], weight(k, 6, 1)) << k;
  for (int64_t k : {15, 19, 40, 43, 164, 169, 176}) EXPECT_EQ(p[k], 0.0f) << k;
}

TEST(DlrmDenseTest, SizesAndLayout) {
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 8, 1);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->embedding_width(), 4 + 3 + 4 + 6);
  EXPECT_EQ(model->interaction_dim(), 4);
  EXPECT_EQ(model->num_params(), kBottomParams + kProjParams + kTopParams);
  EXPECT_EQ(model->params().size(), model->grads().size());
  // Biases are zero; weights lie within their Xavier bound.
  std::span<const float> p = model->params();
  for (int64_t k = 15; k < 20; ++k) EXPECT_EQ(p[k], 0.0f);  // Bottom b_1.
  for (int64_t k = 0; k < 15; ++k) {
    EXPECT_LE(std::abs(p[k]), std::sqrt(6.0 / (3 + 5))) << k;
  }
  EXPECT_EQ(p[model->num_params() - 1], 0.0f);  // Top's last bias.
}

class DlrmDenseGradientTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(DlrmDenseGradientTest, MatchesFiniteDifferences) {
  const uint32_t seed = GetParam();
  const int64_t batch_size = 5;
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 8, seed);
  ASSERT_NE(model, nullptr);
  // Move off the initial point: with zero biases, a sample whose hidden units
  // are all dead has a bottom pre-activation of exactly 0, i.e. sits on a ReLU
  // kink where finite differences are meaningless.
  const std::vector<float> noise =
      RandomVector(model->num_params(), seed + 1, -0.1f, 0.1f);
  for (int64_t k = 0; k < model->num_params(); ++k) {
    model->params()[k] += noise[k];
  }
  Batch batch = MakeBatch(*model, batch_size, seed + 2);
  std::vector<float> d_emb(batch.emb.size(), 3.0f);  // Must be overwritten.
  // The loss (loss_scale 1: the sum of BCE) from the double reference
  // (gradient_check_test_util.h).
  auto loss = [&] {
    const std::vector<double> logits = NaiveLogits(
        model->shape(), model->params(), batch_size, batch.dense, batch.emb);
    double sum = 0.0;
    for (int64_t i = 0; i < batch_size; ++i) {
      // BCE(sigmoid(x), y) = log(1 + e^x) - y x, written stably.
      const double x = logits[i];
      sum += std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))) - batch.labels[i] * x;
    }
    return sum;
  };
  std::fill(model->mutable_grads().begin(), model->mutable_grads().end(), 9.f);
  model->ForwardBackward(batch_size, batch.dense.data(), batch.emb.data(),
                         batch.labels.data(), 1.0f, d_emb.data());
  const std::vector<float> grads(model->grads().begin(), model->grads().end());

  // Every group has a live gradient, so the check below is not vacuous.
  auto max_abs = [&](int64_t begin, int64_t end) {
    float m = 0.0f;
    for (int64_t k = begin; k < end; ++k) m = std::max(m, std::abs(grads[k]));
    return m;
  };
  EXPECT_GT(max_abs(0, kBottomParams), 1e-3);
  EXPECT_GT(max_abs(kBottomParams, kBottomParams + kProjParams), 1e-3);
  EXPECT_GT(max_abs(kBottomParams + kProjParams, model->num_params()), 1e-3);

  const test_util::GradientCheckOptions options;
  std::span<float> params = model->params();
  const std::span<const float> g(grads);
  ExpectGradientMatches(params.subspan(0, kBottomParams),
                        g.subspan(0, kBottomParams), loss, "bottom", options);
  ExpectGradientMatches(params.subspan(kBottomParams, kProjParams),
                        g.subspan(kBottomParams, kProjParams), loss,
                        "projection", options);
  ExpectGradientMatches(params.subspan(kBottomParams + kProjParams),
                        g.subspan(kBottomParams + kProjParams), loss, "top",
                        options);
  ExpectGradientMatches(batch.emb, d_emb, loss, "d_emb", options);
}

INSTANTIATE_TEST_SUITE_P(Seeds, DlrmDenseGradientTest,
                         ::testing::Range(1u, 21u));

// Dropout in both MLPs: ForwardBackward's loss and gradients are those of the
// naive model with the key's masks; Predict is the naive model without any.
TEST_P(DlrmDenseGradientTest, DropoutMatchesFiniteDifferencesOfTheMaskedModel) {
  const uint32_t seed = GetParam();
  const int64_t batch_size = 5;
  const DropoutRates rates{.bottom = 0.3f, .top = 0.4f};
  const DropoutKey key{.seed = seed, .step = 9, .first_sample = 40};
  auto created = DlrmDense::Create(SmallShape(), 8, seed, rates);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<DlrmDense> model = std::move(*created);
  const std::vector<float> noise = RandomVector(model->num_params(), seed + 1, -0.1f, 0.1f);
  for (int64_t k = 0; k < model->num_params(); ++k) model->params()[k] += noise[k];
  Batch batch = MakeBatch(*model, batch_size, seed + 2);
  auto loss_of = [&](const DropoutKey* dropout) {
    const std::vector<double> logits = NaiveLogits(model->shape(), model->params(), batch_size,
                                                   batch.dense, batch.emb, dropout, rates);
    double sum = 0.0;
    for (int64_t i = 0; i < batch_size; ++i) {
      const double x = logits[i];
      sum += std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))) - batch.labels[i] * x;
    }
    return sum;
  };
  model->set_dropout_key(key);
  std::vector<float> d_emb(batch.emb.size());
  const double loss = model->ForwardBackward(batch_size, batch.dense.data(), batch.emb.data(),
                                             batch.labels.data(), 1.0f, d_emb.data());
  EXPECT_NEAR(loss, loss_of(&key), 1e-4);
  const std::vector<float> grads(model->grads().begin(), model->grads().end());
  ExpectGradientMatches(model->params(), grads, [&] { return loss_of(&key); }, "params");
  ExpectGradientMatches(batch.emb, d_emb, [&] { return loss_of(&key); }, "d_emb");

  std::vector<float> probs(batch_size);
  model->Predict(batch_size, batch.dense.data(), batch.emb.data(), probs.data());
  const std::vector<double> logits =
      NaiveLogits(model->shape(), model->params(), batch_size, batch.dense, batch.emb);
  for (int64_t i = 0; i < batch_size; ++i) {
    EXPECT_NEAR(probs[i], 1.0 / (1.0 + std::exp(-logits[i])), 1e-5) << i;
  }
}

// Rates of 0 train the model without dropout bit for bit, whatever the key.
TEST(DlrmDenseTest, ZeroDropoutIsThePlainModel) {
  auto plain = MakeModel(SmallShape(), 4, 3);
  auto zero = std::move(DlrmDense::Create(SmallShape(), 4, 3, DropoutRates{}).value());
  zero->set_dropout_key({.seed = 3, .step = 2, .first_sample = 8});
  const Batch batch = MakeBatch(*plain, 4, 4);
  std::vector<float> d_plain(batch.emb.size()), d_zero(batch.emb.size());
  EXPECT_EQ(plain->ForwardBackward(4, batch.dense.data(), batch.emb.data(), batch.labels.data(),
                                   0.25f, d_plain.data()),
            zero->ForwardBackward(4, batch.dense.data(), batch.emb.data(), batch.labels.data(),
                                  0.25f, d_zero.data()));
  EXPECT_EQ(d_plain, d_zero);
  EXPECT_TRUE(std::equal(plain->grads().begin(), plain->grads().end(), zero->grads().begin()));
}

TEST(DlrmDenseTest, LossScaleScalesGradientsOnly) {
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 8, 3);
  ASSERT_NE(model, nullptr);
  const Batch batch = MakeBatch(*model, 6, 21);
  std::vector<float> d_emb1(batch.emb.size()), d_emb2(batch.emb.size());
  const double loss1 =
      model->ForwardBackward(6, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 1.0f, d_emb1.data());
  const std::vector<float> g1(model->grads().begin(), model->grads().end());
  const double loss2 =
      model->ForwardBackward(6, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 0.25f, d_emb2.data());
  EXPECT_EQ(loss1, loss2);
  for (size_t k = 0; k < g1.size(); ++k) {
    EXPECT_NEAR(model->grads()[k], 0.25f * g1[k], 1e-6) << k;
  }
  for (size_t k = 0; k < d_emb1.size(); ++k) {
    EXPECT_NEAR(d_emb2[k], 0.25f * d_emb1[k], 1e-6) << k;
  }
}

TEST(DlrmDenseTest, PredictMatchesForwardBackward) {
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 16, 5);
  ASSERT_NE(model, nullptr);
  const Batch batch = MakeBatch(*model, 16, 31);
  std::vector<float> d_emb(batch.emb.size());
  const double loss =
      model->ForwardBackward(16, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 1.0f, d_emb.data());
  const std::vector<float> grads(model->grads().begin(), model->grads().end());
  std::vector<float> probs(16, -1.0f);
  model->Predict(16, batch.dense.data(), batch.emb.data(), probs.data());
  for (float p : probs) {
    EXPECT_GT(p, 0.0f);
    EXPECT_LT(p, 1.0f);
  }
  EXPECT_NEAR(BceFromProbs(probs, batch.labels), loss, 1e-5 * loss);
  // Predict leaves the gradients alone, and a following step is unchanged.
  EXPECT_EQ(std::vector<float>(model->grads().begin(), model->grads().end()),
            grads);
  std::vector<float> d_emb2(batch.emb.size());
  EXPECT_EQ(model->ForwardBackward(16, batch.dense.data(), batch.emb.data(),
                                   batch.labels.data(), 1.0f, d_emb2.data()),
            loss);
  EXPECT_EQ(d_emb2, d_emb);
}

TEST(DlrmDenseTest, LargeLogitsGiveFiniteLoss) {
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 4, 6);
  ASSERT_NE(model, nullptr);
  // Blow up the top MLP's last bias so logits are +-1e4.
  float& last_bias = model->params()[model->num_params() - 1];
  const Batch batch = MakeBatch(*model, 4, 41);
  std::vector<float> d_emb(batch.emb.size());
  last_bias = 1e4f;
  const double loss_pos =
      model->ForwardBackward(4, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 1.0f, d_emb.data());
  last_bias = -1e4f;
  const double loss_neg =
      model->ForwardBackward(4, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 1.0f, d_emb.data());
  // Labels are {1, 0, 0, 1}: two samples are wrong by ~1e4 each either way.
  EXPECT_TRUE(std::isfinite(loss_pos));
  EXPECT_TRUE(std::isfinite(loss_neg));
  EXPECT_NEAR(loss_pos, 2e4, 100.0);
  EXPECT_NEAR(loss_neg, 2e4, 100.0);
  for (float g : model->grads()) EXPECT_TRUE(std::isfinite(g));
}

TEST(DlrmDenseTest, EmptyAndSingleBatches) {
  std::unique_ptr<DlrmDense> model = MakeModel(SmallShape(), 1, 7);
  ASSERT_NE(model, nullptr);
  std::fill(model->mutable_grads().begin(), model->mutable_grads().end(), 1.f);
  EXPECT_EQ(model->ForwardBackward(0, nullptr, nullptr, nullptr, 1.0f, nullptr),
            0.0);
  for (float g : model->grads()) EXPECT_EQ(g, 0.0f);
  model->Predict(0, nullptr, nullptr, nullptr);

  const Batch batch = MakeBatch(*model, 1, 51);
  std::vector<float> d_emb(batch.emb.size());
  const double loss =
      model->ForwardBackward(1, batch.dense.data(), batch.emb.data(),
                             batch.labels.data(), 1.0f, d_emb.data());
  float prob = 0.0f;
  model->Predict(1, batch.dense.data(), batch.emb.data(), &prob);
  EXPECT_NEAR(BceFromProbs({prob}, batch.labels), loss, 1e-5);
}

TEST(DlrmDenseTest, SameSeedSameParams) {
  std::unique_ptr<DlrmDense> a = MakeModel(SmallShape(), 4, 99);
  std::unique_ptr<DlrmDense> b = MakeModel(SmallShape(), 64, 99);
  std::unique_ptr<DlrmDense> c = MakeModel(SmallShape(), 4, 100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  const std::vector<float> pa(a->params().begin(), a->params().end());
  const std::vector<float> pb(b->params().begin(), b->params().end());
  const std::vector<float> pc(c->params().begin(), c->params().end());
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
}

struct BadShapeCase {
  std::string name;
  DlrmShape shape;
  std::string field;  // Expected in the message.
};

class DlrmDenseBadShapeTest : public ::testing::TestWithParam<BadShapeCase> {};

TEST_P(DlrmDenseBadShapeTest, IsRejected) {
  const absl::StatusOr<std::unique_ptr<DlrmDense>> model =
      DlrmDense::Create(GetParam().shape, 8, 1);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find(GetParam().field), std::string::npos)
      << model.status();
}

DlrmShape With(void (*edit)(DlrmShape&)) {
  DlrmShape shape = SmallShape();
  edit(shape);
  return shape;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DlrmDenseBadShapeTest,
    ::testing::Values(
        BadShapeCase{"EmptyBottom", With([](DlrmShape& s) { s.bottom = {}; }),
                     "bottom"},
        BadShapeCase{"ZeroBottomWidth", With([](DlrmShape& s) {
                       s.bottom = {5, 0, 4};
                     }),
                     "bottom[1]"},
        BadShapeCase{"EmptyTop", With([](DlrmShape& s) { s.top = {}; }), "top"},
        BadShapeCase{"TopNotEndingInOne", With([](DlrmShape& s) {
                       s.top = {6, 2};
                     }),
                     "top"},
        BadShapeCase{"NegativeTopWidth", With([](DlrmShape& s) {
                       s.top = {-6, 1};
                     }),
                     "top[0]"},
        BadShapeCase{"NoFeatures",
                     With([](DlrmShape& s) { s.feature_dims = {}; }),
                     "feature_dims"},
        BadShapeCase{"ZeroFeatureDim", With([](DlrmShape& s) {
                       s.feature_dims = {4, 0};
                     }),
                     "feature_dims[1]"},
        BadShapeCase{"ZeroDense", With([](DlrmShape& s) { s.num_dense = 0; }),
                     "num_dense"}),
    [](const ::testing::TestParamInfo<BadShapeCase>& info) {
      return info.param.name;
    });

TEST(DlrmDenseCreateTest, RejectsNegativeMaxBatch) {
  const absl::StatusOr<std::unique_ptr<DlrmDense>> model =
      DlrmDense::Create(SmallShape(), -1, 1);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("max_batch"), std::string::npos);
}

// A model large enough that its products split into several blocks and its
// per-sample passes into several tasks, with projected and unprojected
// features and dropout in both MLPs: a step on teams of 1..4 threads gives the
// bits of the calling thread alone, step after step.
TEST(DlrmDenseThreadsTest, BitsDoNotDependOnTheTeam) {
  const DlrmShape shape{.num_dense = 13,
                        .bottom = {256, 64},
                        .top = {128, 1},
                        .feature_dims = {64, 32, 64, 16}};
  const int64_t batch = 300;
  struct Run {
    std::vector<float> grads, d_emb, probs;
    double loss = 0;
  };
  auto run = [&](ThreadTeam* team) {
    absl::StatusOr<std::unique_ptr<DlrmDense>> model =
        DlrmDense::Create(shape, batch, 5, DropoutRates{.bottom = 0.25f, .top = 0.25f}, team);
    EXPECT_TRUE(model.ok()) << model.status();
    const Batch b = MakeBatch(**model, batch, 23);
    Run r;
    std::vector<float> d_emb(b.emb.size());
    for (int step = 0; step < 3; ++step) {
      r.loss += (*model)->ForwardBackward(batch, b.dense.data(), b.emb.data(), b.labels.data(),
                                          1.0f / batch, d_emb.data());
      // A plain SGD step, so that the next step starts from new weights.
      std::span<float> p = (*model)->params();
      for (size_t k = 0; k < p.size(); ++k) p[k] -= 0.5f * (*model)->grads()[k];
    }
    r.grads.assign((*model)->grads().begin(), (*model)->grads().end());
    r.d_emb = d_emb;
    r.probs.resize(batch);
    (*model)->Predict(batch, b.dense.data(), b.emb.data(), r.probs.data());
    return r;
  };
  const Run want = run(nullptr);
  for (int threads : {1, 2, 3, 4}) {
    ThreadTeam team(threads);
    const Run got = run(&team);
    EXPECT_EQ(got.loss, want.loss) << threads << " threads";
    EXPECT_EQ(got.grads, want.grads) << threads << " threads";
    EXPECT_EQ(got.d_emb, want.d_emb) << threads << " threads";
    EXPECT_EQ(got.probs, want.probs) << threads << " threads";
  }
}

// model.dense_dtype: BF16 on the dot and the DCN-v2 models (projections,
// cross layers, both MLPs in bf16): 40 SGD steps on one batch lower the loss
// as fp32's do, to within a few percent of fp32's loss; the bits do not
// depend on the team (none, 1 and 3 threads) nor the run; and the model is
// not fp32's.
TEST(DenseBf16Test, TrainsLikeFp32AndIsDeterministic) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  const DlrmShape shape{
      .num_dense = 13, .bottom = {128, 32}, .top = {64, 1}, .feature_dims = {32, 16, 32, 8}};
  const int64_t batch = 256;
  struct Run {
    double first_loss = 0, last_loss = 0;
    std::vector<float> params;
  };
  auto train = [&](DenseModelSpec spec, ThreadTeam* team) {
    auto model = CreateDenseModel(spec, batch, 9, team);
    EXPECT_TRUE(model.ok()) << model.status();
    Run r;
    if (!model.ok()) return r;
    DenseModel& m = **model;
    const std::vector<float> dense = RandomVector(batch * shape.num_dense, 31, -2, 2);
    const std::vector<float> emb = RandomVector(batch * m.embedding_width(), 32);
    std::vector<float> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(emb[i * m.embedding_width()] > 0.2f);
    std::vector<float> d_emb(emb.size());
    for (int step = 0; step < 40; ++step) {
      const double loss = m.ForwardBackward(batch, dense.data(), emb.data(), labels.data(),
                                            1.0f / batch, d_emb.data()) /
                          batch;
      (step == 0 ? r.first_loss : r.last_loss) = loss;
      std::span<float> p = m.params();
      for (size_t k = 0; k < p.size(); ++k) p[k] -= 0.5f * m.grads()[k];
    }
    r.params.assign(m.params().begin(), m.params().end());
    return r;
  };
  for (Interaction interaction : {Interaction::kDot, Interaction::kDcnV2}) {
    DenseModelSpec spec;
    spec.shape = shape;
    spec.interaction = interaction;
    spec.cross_layers = 2;
    spec.cross_low_rank = 16;
    const Run fp32 = train(spec, nullptr);
    spec.precision = GemmPrecision::kBf16;
    const Run bf16 = train(spec, nullptr);
    const std::string name = DescribeInteraction(spec);
    EXPECT_LT(bf16.last_loss, 0.8 * bf16.first_loss) << name;
    EXPECT_NEAR(bf16.last_loss, fp32.last_loss, 0.05 * fp32.last_loss) << name;
    EXPECT_NE(bf16.params, fp32.params) << name;
    for (int threads : {1, 3}) {
      ThreadTeam team(threads);
      const Run again = train(spec, &team);
      EXPECT_EQ(again.last_loss, bf16.last_loss) << name << ", " << threads << " threads";
      EXPECT_EQ(again.params, bf16.params) << name << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace lemrt::device
