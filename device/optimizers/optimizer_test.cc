#include "device/optimizers/optimizer.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/optimizers/adam.h"
#include "device/optimizers/ftrl.h"
#include "device/optimizers/rowwise_adagrad.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

TEST(OptimizerTest, SgdStep) {
  SgdOptimizer sgd(0.5f);
  std::vector<float> w = {1.0f, -2.0f, 3.0f};
  std::vector<float> g = {0.2f, 0.4f, -1.0f};
  sgd.Apply(w, {}, g, 1, sgd.learning_rate());
  EXPECT_FLOAT_EQ(w[0], 0.9f);
  EXPECT_FLOAT_EQ(w[1], -2.2f);
  EXPECT_FLOAT_EQ(w[2], 3.5f);
}

TEST(OptimizerTest, AdagradMatchesReferenceOverSteps) {
  AdagradOptimizer ada(0.1f, 0.1f, 1e-10f);
  std::vector<float> w = {1.0f, -1.0f};
  std::vector<float> a(2);
  ada.InitSlots(a);
  EXPECT_FLOAT_EQ(a[0], 0.1f);
  double rw[2] = {1.0, -1.0}, ra[2] = {0.1, 0.1};
  const float grads[3][2] = {{0.5f, -0.2f}, {0.1f, 0.3f}, {-0.4f, 0.0f}};
  for (const auto& g : grads) {
    ada.Apply(w, a, std::span<const float>(g, 2), 1, ada.learning_rate());
    for (int i = 0; i < 2; ++i) {
      ra[i] += double(g[i]) * g[i];
      rw[i] -= 0.1 * g[i] / (std::sqrt(ra[i]) + 1e-10);
    }
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(w[i], rw[i], 1e-6);
    EXPECT_NEAR(a[i], ra[i], 1e-6);
  }
}

// PyTorch's default: the accumulator starts at 0. The first update moves by
// about lr x sign(g); a zero gradient moves nothing (epsilon keeps 0 / 0 away).
TEST(OptimizerTest, AdagradFromAZeroAccumulator) {
  AdagradOptimizer ada(0.05f, 0.0f, 1e-10f);
  std::vector<float> w = {1.0f, -1.0f, 0.5f};
  std::vector<float> a(3);
  ada.InitSlots(a);
  EXPECT_EQ(a, std::vector<float>(3, 0.0f));
  const std::vector<float> g = {0.5f, -0.25f, 0.0f};
  ada.Apply(w, a, g, 1, ada.learning_rate());
  for (int i = 0; i < 3; ++i) {
    const double ref_a = double(g[i]) * g[i];
    const double ref_w =
        std::vector<double>{1.0, -1.0, 0.5}[i] - 0.05 * g[i] / (std::sqrt(ref_a) + 1e-10);
    EXPECT_NEAR(w[i], ref_w, 1e-6) << i;
    EXPECT_TRUE(std::isfinite(w[i]));
  }
  EXPECT_FLOAT_EQ(w[0], 0.95f);
  EXPECT_FLOAT_EQ(w[1], -0.95f);
  EXPECT_EQ(w[2], 0.5f);
}

TEST(OptimizerTest, FactoryUsesDefaultLearningRate) {
  config::OptimizerConfig c;
  auto sgd = CreateOptimizer(c, 0.3f);
  EXPECT_EQ(sgd->name(), "sgd");
  EXPECT_FLOAT_EQ(sgd->learning_rate(), 0.3f);
  c.mutable_adagrad();
  c.set_learning_rate(0.05f);
  auto ada = CreateOptimizer(c, 0.3f);
  EXPECT_EQ(ada->name(), "adagrad");
  EXPECT_EQ(ada->slots_per_param(), 1);
  EXPECT_EQ(ada->SlotFloats(16), 16);
  EXPECT_FLOAT_EQ(ada->learning_rate(), 0.05f);
}

// Hand-computed first Adam step: m = 0.1 g, v = 0.001 g^2, the corrections
// undo the (1 - b) factors, so w moves by lr * g / (|g| + eps) = lr * sign(g).
TEST(OptimizerTest, AdamFirstStepIsSignTimesLearningRate) {
  AdamOptimizer adam(0.01f, 0.9f, 0.999f, 1e-8f);
  std::vector<float> w = {1.0f, -1.0f, 0.5f};
  std::vector<float> s(6);
  adam.InitSlots(s);
  for (float v : s) EXPECT_EQ(v, 0.0f);
  std::vector<float> g = {0.3f, -2.0f, 0.0f};
  adam.Apply(w, s, g, 1, adam.learning_rate());
  EXPECT_NEAR(w[0], 1.0f - 0.01f, 1e-6);
  EXPECT_NEAR(w[1], -1.0f + 0.01f, 1e-6);
  EXPECT_FLOAT_EQ(w[2], 0.5f);
  EXPECT_NEAR(s[0], 0.03f, 1e-7);         // m
  EXPECT_NEAR(s[3], 0.001 * 0.09, 1e-8);  // v
}

TEST(OptimizerTest, AdamMatchesReferenceOverSteps) {
  const double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-6;
  AdamOptimizer adam(lr, b1, b2, eps);
  std::vector<float> w = {0.2f, -0.7f};
  std::vector<float> s(4);
  adam.InitSlots(s);
  double rw[2] = {0.2, -0.7}, rm[2] = {0, 0}, rv[2] = {0, 0};
  const float grads[4][2] = {{0.5f, -0.2f}, {0.1f, 0.3f}, {-0.4f, 0.0f}, {1.5f, -0.25f}};
  int t = 0;
  for (const auto& g : grads) {
    ++t;
    adam.Apply(w, s, std::span<const float>(g, 2), t, adam.learning_rate());
    for (int i = 0; i < 2; ++i) {
      rm[i] = b1 * rm[i] + (1 - b1) * g[i];
      rv[i] = b2 * rv[i] + (1 - b2) * double(g[i]) * g[i];
      const double mhat = rm[i] / (1 - std::pow(b1, t));
      const double vhat = rv[i] / (1 - std::pow(b2, t));
      rw[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(w[i], rw[i], 1e-5);
    EXPECT_NEAR(s[i], rm[i], 1e-6);
    EXPECT_NEAR(s[2 + i], rv[i], 1e-6);
  }
}

// FTRL by hand, one parameter, lr 0.5, p = -0.5, n0 = 0.1, l1 0.1, l2 0.2,
// beta 0.3: first g = 0.6 from w = 0.
//   n' = 0.46, z = 0.6 - (sqrt(.46) - sqrt(.1)) / .5 * 0 = 0.6
//   w = (0.1 - 0.6) / ((sqrt(.46) + .3) / .5 + .4)
TEST(OptimizerTest, FtrlHandComputedStep) {
  FtrlOptimizer ftrl(0.5f, -0.5f, 0.1f, 0.1f, 0.2f, 0.3f);
  std::vector<float> w = {0.0f, 0.0f};
  std::vector<float> s(4);
  ftrl.InitSlots(s);
  EXPECT_FLOAT_EQ(s[0], 0.1f);
  EXPECT_FLOAT_EQ(s[2], 0.0f);
  std::vector<float> g = {0.6f, 0.05f};  // |z| = 0.05 <= l1: stays 0
  ftrl.Apply(w, s, g, 1, ftrl.learning_rate());
  EXPECT_NEAR(s[0], 0.46, 1e-6);
  EXPECT_NEAR(s[2], 0.6, 1e-6);
  EXPECT_NEAR(w[0], (0.1 - 0.6) / ((std::sqrt(0.46) + 0.3) / 0.5 + 0.4), 1e-6);
  EXPECT_EQ(w[1], 0.0f);
}

TEST(OptimizerTest, FtrlMatchesReferenceOverStepsWithGeneralPower) {
  const double lr = 0.2, p = -0.7, n0 = 0.3, l1 = 0.01, l2 = 0.05, beta = 0.1;
  FtrlOptimizer ftrl(lr, p, n0, l1, l2, beta);
  std::vector<float> w = {0.1f, -0.2f};
  std::vector<float> s(4);
  ftrl.InitSlots(s);
  double rw[2] = {0.1, -0.2}, rn[2] = {n0, n0}, rz[2] = {0, 0};
  const float grads[3][2] = {{0.5f, -0.2f}, {0.1f, 0.3f}, {-0.4f, 0.02f}};
  for (const auto& g : grads) {
    ftrl.Apply(w, s, std::span<const float>(g, 2), 1, ftrl.learning_rate());
    for (int i = 0; i < 2; ++i) {
      const double nn = rn[i] + double(g[i]) * g[i];
      rz[i] += g[i] - (std::pow(nn, -p) - std::pow(rn[i], -p)) / lr * rw[i];
      rn[i] = nn;
      rw[i] = std::abs(rz[i]) <= l1
                  ? 0.0
                  : ((rz[i] > 0 ? l1 : -l1) - rz[i]) / ((std::pow(nn, -p) + beta) / lr + 2 * l2);
    }
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(w[i], rw[i], 1e-5);
    EXPECT_NEAR(s[i], rn[i], 1e-5);
    EXPECT_NEAR(s[2 + i], rz[i], 1e-5);
  }
}

TEST(OptimizerTest, FactoryBuildsAdamAndFtrl) {
  config::OptimizerConfig c;
  c.mutable_adam()->set_beta1(0.5f);
  auto adam = CreateOptimizer(c, 0.3f);
  EXPECT_EQ(adam->name(), "adam");
  EXPECT_EQ(adam->slots_per_param(), 2);
  c.mutable_ftrl();
  auto ftrl = CreateOptimizer(c, 0.3f);
  EXPECT_EQ(ftrl->name(), "ftrl");
  EXPECT_EQ(ftrl->slots_per_param(), 2);
}

// ---- The factories pass every field of the config on. Each optimizer is
// built from a config whose fields all differ from their defaults and from
// one another, and runs several steps against a plain double loop of the
// documented formulas with those values written out here; dropping any
// field (its default) or swapping two moves weights or slots far past the
// tolerance.

template <typename Proto>
Proto ParseText(const char* text) {
  Proto p;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &p)) << text;
  return p;
}

// |got - want| within 1e-5 relative (1e-6 absolute near 0): float against
// the double reference over a few steps.
void ExpectClose(std::span<const float> got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::fabs(want[i])) << what << " [" << i << "]";
  }
}

// Gradients of three parameters over six steps: signs change, magnitudes
// from 0.01 to 1.2.
constexpr float kFactoryGrads[6][3] = {{0.5f, -0.02f, 1.2f}, {0.3f, 0.01f, -0.8f},
                                       {-0.1f, 0.02f, 0.6f}, {0.7f, -0.015f, -0.4f},
                                       {0.25f, 0.03f, 0.9f}, {-0.6f, 0.01f, -1.1f}};
const std::vector<double> kFactoryW0 = {0.3, -0.2, 0.1};

// Adam through the dense factory: the optimizer's learning rate replaces
// dense_learning_rate, the dense schedule (a 3-step warm-up) scales it, and
// decoupled weight decay acts beside the step.
TEST(OptimizerFactoryTest, AdamGetsBetasEpsilonRateScheduleAndDecay) {
  const auto run = ParseText<config::RunConfig>(R"pb(
    training {
      dense_learning_rate: 0.5
      dense_optimizer {
        learning_rate: 0.03
        adam { beta1: 0.7 beta2: 0.95 epsilon: 0.05 }
        weight_decay: 0.1
        weight_decay_mode: DECOUPLED
      }
      dense_learning_rate_schedule { warmup_steps: 3 }
    }
  )pb");
  const auto opt = CreateDenseOptimizer(run);
  ASSERT_EQ(opt->name(), "adam");
  const double lr = 0.03f, b1 = 0.7f, b2 = 0.95f, eps = 0.05f, wd = 0.1f;
  const double factor[6] = {1.0 / 3, 2.0 / 3, 1, 1, 1, 1};  // warm-up over 3 steps
  std::vector<float> w(kFactoryW0.begin(), kFactoryW0.end()), s(6, -1.0f);
  opt->InitSlots(s);
  std::vector<double> rw = kFactoryW0, rm(3, 0.0), rv(3, 0.0);
  for (int t = 1; t <= 6; ++t) {
    const float* g = kFactoryGrads[t - 1];
    const double rate = lr * factor[t - 1];
    EXPECT_NEAR(opt->LearningRateAt(t), rate, 1e-7 * rate) << t;
    opt->Apply(w, s, std::span<const float>(g, 3), t, opt->LearningRateAt(t));
    for (int i = 0; i < 3; ++i) {
      rm[i] = b1 * rm[i] + (1 - b1) * g[i];
      rv[i] = b2 * rv[i] + (1 - b2) * double{g[i]} * g[i];
      const double mhat = rm[i] / (1 - std::pow(b1, t)), vhat = rv[i] / (1 - std::pow(b2, t));
      rw[i] = rw[i] - rate * wd * rw[i] - rate * mhat / (std::sqrt(vhat) + eps);
    }
    const std::string at = "step " + std::to_string(t);
    ExpectClose(w, rw, "adam w, " + at);
    ExpectClose(std::span<const float>(s).first(3), rm, "adam m, " + at);
    ExpectClose(std::span<const float>(s).subspan(3), rv, "adam v, " + at);
  }
}

// FTRL through the table factory, with a warm-up and a LINEAR decay to 0.25
// on the embedding schedule, so every step has another rate; a general
// power (not the -0.5 fast path). Element 1's gradients stay near l1, so it
// is clipped to 0 in some steps.
TEST(OptimizerFactoryTest, FtrlGetsEveryFieldAndAScheduledRate) {
  const auto run = ParseText<config::RunConfig>(R"pb(
    tables {
      name: "t"
      optimizer {
        learning_rate: 0.2
        ftrl { learning_rate_power: -0.7 initial_accumulator: 0.4 l1: 0.03 l2: 0.2 beta: 0.5 }
      }
    }
    training {
      steps: 10
      embedding_learning_rate: 0.9
      embedding_learning_rate_schedule {
        warmup_steps: 2
        decay: LINEAR
        decay_steps: 4
        end_factor: 0.25
      }
    }
  )pb");
  const auto opt = CreateTableOptimizer(run, 0);
  ASSERT_EQ(opt->name(), "ftrl");
  const double lr = 0.2f, p = -0.7f, n0 = 0.4f, l1 = 0.03f, l2 = 0.2f, beta = 0.5f;
  // Training step s = t - 1: warm-up 1/2, 2/2, then 1 - 0.75 (s - 2) / 4
  // until s = 6, then 0.25.
  const double factor[6] = {0.5, 1.0, 1.0, 0.8125, 0.625, 0.4375};
  std::vector<float> w(kFactoryW0.begin(), kFactoryW0.end()), s(6, -1.0f);
  opt->InitSlots(s);
  std::vector<double> rw = kFactoryW0, rn(3, n0), rz(3, 0.0);
  int clipped = 0;
  for (int t = 1; t <= 6; ++t) {
    const float* g = kFactoryGrads[t - 1];
    const double rate = lr * factor[t - 1];
    EXPECT_NEAR(opt->LearningRateAt(t), rate, 1e-7 * rate) << t;
    opt->Apply(w, s, std::span<const float>(g, 3), t, opt->LearningRateAt(t));
    for (int i = 0; i < 3; ++i) {
      const double nn = rn[i] + double{g[i]} * g[i];
      rz[i] += g[i] - (std::pow(nn, -p) - std::pow(rn[i], -p)) / rate * rw[i];
      rn[i] = nn;
      if (std::fabs(rz[i]) <= l1) {
        rw[i] = 0.0;
        ++clipped;
      } else {
        rw[i] = ((rz[i] > 0 ? l1 : -l1) - rz[i]) / ((std::pow(nn, -p) + beta) / rate + 2 * l2);
      }
    }
    const std::string at = "step " + std::to_string(t);
    ExpectClose(w, rw, "ftrl w, " + at);
    ExpectClose(std::span<const float>(s).first(3), rn, "ftrl n, " + at);
    ExpectClose(std::span<const float>(s).subspan(3), rz, "ftrl z, " + at);
  }
  EXPECT_EQ(opt->LearningRateAt(7), static_cast<float>(lr * 0.25));  // the end factor, held
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, 18);
}

// Adagrad with a non-default accumulator start and epsilon, and L2 weight
// decay (the default mode).
TEST(OptimizerFactoryTest, AdagradGetsInitialAccumulatorAndEpsilon) {
  const auto c = ParseText<config::OptimizerConfig>(R"pb(
    learning_rate: 0.2
    adagrad { initial_accumulator: 0.5 epsilon: 0.1 }
    weight_decay: 0.05
  )pb");
  const auto opt = CreateOptimizer(c, 0.7f);
  ASSERT_EQ(opt->name(), "adagrad");
  const double lr = 0.2f, a0 = 0.5f, eps = 0.1f, wd = 0.05f;
  std::vector<float> w(kFactoryW0.begin(), kFactoryW0.end()), a(3, -1.0f);
  opt->InitSlots(a);
  std::vector<double> rw = kFactoryW0, ra(3, a0);
  ExpectClose(a, ra, "adagrad initial slots");
  for (int t = 1; t <= 6; ++t) {
    const float* g = kFactoryGrads[t - 1];
    opt->Apply(w, a, std::span<const float>(g, 3), t, opt->LearningRateAt(t));
    for (int i = 0; i < 3; ++i) {
      const double gi = g[i] + wd * rw[i];
      ra[i] += gi * gi;
      rw[i] -= lr * gi / (std::sqrt(ra[i]) + eps);
    }
    ExpectClose(w, rw, "adagrad w, step " + std::to_string(t));
    ExpectClose(a, ra, "adagrad a, step " + std::to_string(t));
  }
}

// Row-wise Adagrad: one accumulator for the row, its own start and epsilon.
TEST(OptimizerFactoryTest, RowwiseAdagradGetsInitialAccumulatorAndEpsilon) {
  const auto c = ParseText<config::OptimizerConfig>(R"pb(
    learning_rate: 0.15
    rowwise_adagrad { initial_accumulator: 0.3 epsilon: 0.2 }
  )pb");
  const auto opt = CreateOptimizer(c, 0.7f);
  ASSERT_EQ(opt->name(), "rowwise_adagrad");
  const double lr = 0.15f, a0 = 0.3f, eps = 0.2f;
  std::vector<float> w(kFactoryW0.begin(), kFactoryW0.end()), a(1, -1.0f);
  opt->InitSlots(a);
  std::vector<double> rw = kFactoryW0, ra = {a0};
  ExpectClose(a, ra, "rowwise adagrad initial slot");
  for (int t = 1; t <= 6; ++t) {
    const float* g = kFactoryGrads[t - 1];
    opt->Apply(w, a, std::span<const float>(g, 3), t, opt->LearningRateAt(t));
    double sq = 0;
    for (int i = 0; i < 3; ++i) sq += double{g[i]} * g[i];
    ra[0] += sq / 3;
    for (int i = 0; i < 3; ++i) rw[i] -= lr * g[i] / (std::sqrt(ra[0]) + eps);
    ExpectClose(w, rw, "rowwise adagrad w, step " + std::to_string(t));
    ExpectClose(a, ra, "rowwise adagrad a, step " + std::to_string(t));
  }
}

// The plain element loops the vectorised Apply must match bit for bit (the
// formulas of the optimizers' headers, one element at a time).
void PlainSgd(float lr, std::vector<float>& w, const std::vector<float>& g) {
  for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
}
void PlainAdagrad(float lr, float eps, std::vector<float>& w, std::vector<float>& a,
                  const std::vector<float>& g) {
  for (size_t i = 0; i < w.size(); ++i) {
    a[i] += g[i] * g[i];
    w[i] -= lr * g[i] / (std::sqrt(a[i]) + eps);
  }
}
void PlainAdam(float lr, float b1, float b2, float eps, int64_t t, std::vector<float>& w,
               std::vector<float>& s, const std::vector<float>& g) {
  const size_t n = w.size();
  const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double{b1}, double(t))));
  const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double{b2}, double(t))));
  for (size_t i = 0; i < n; ++i) {
    float& m = s[i];
    float& v = s[n + i];
    m = b1 * m + (1.0f - b1) * g[i];
    v = b2 * v + (1.0f - b2) * g[i] * g[i];
    w[i] -= lr * (m * c1) / (std::sqrt(v * c2) + eps);
  }
}
void PlainFtrl(float lr, float p, float l1, float l2, float beta, std::vector<float>& w,
               std::vector<float>& s, const std::vector<float>& g) {
  const size_t n = w.size();
  auto pw = [&](float x) { return p == -0.5f ? std::sqrt(x) : std::pow(x, -p); };
  for (size_t i = 0; i < n; ++i) {
    float& acc = s[i];
    float& z = s[n + i];
    const float n_new = acc + g[i] * g[i];
    const float p_new = pw(n_new);
    z += g[i] - (p_new - pw(acc)) / lr * w[i];
    acc = n_new;
    if (std::abs(z) <= l1) {
      w[i] = 0.0f;
    } else {
      w[i] = ((z > 0 ? l1 : -l1) - z) / ((p_new + beta) / lr + 2.0f * l2);
    }
  }
}

// Row lengths around the vector blocks (16 floats) and the embedding dims.
TEST(OptimizerTest, VectorisedApplyMatchesThePlainLoopBitForBit) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t n : {1, 3, 15, 16, 17, 33, 64, 100, 128}) {
    std::vector<float> w0(n), g(n), pos(n);
    for (size_t i = 0; i < n; ++i) {
      w0[i] = u(rng);
      g[i] = u(rng) * 0.1f;
      pos[i] = 0.05f + std::abs(u(rng));
    }
    auto expect_same = [&](const char* what, const std::vector<float>& got,
                           const std::vector<float>& want) {
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * n))
          << what << ", n = " << n;
    };
    {
      SgdOptimizer sgd(0.3f);
      std::vector<float> w = w0, rw = w0;
      sgd.Apply(w, {}, g, 1, sgd.learning_rate());
      PlainSgd(0.3f, rw, g);
      expect_same("sgd", w, rw);
    }
    {
      AdagradOptimizer ada(0.2f, 0.1f, 1e-7f);
      std::vector<float> w = w0, rw = w0, a = pos, ra = pos;
      for (int step = 0; step < 3; ++step) {
        ada.Apply(w, a, g, 1, ada.learning_rate());
        PlainAdagrad(0.2f, 1e-7f, rw, ra, g);
      }
      expect_same("adagrad weights", w, rw);
      expect_same("adagrad slots", a, ra);
    }
    {
      AdamOptimizer adam(0.01f, 0.9f, 0.999f, 1e-8f);
      std::vector<float> w = w0, rw = w0, s(2 * n, 0.0f), rs(2 * n, 0.0f);
      for (int64_t t = 1; t <= 3; ++t) {
        adam.Apply(w, s, g, t, adam.learning_rate());
        PlainAdam(0.01f, 0.9f, 0.999f, 1e-8f, t, rw, rs, g);
      }
      expect_same("adam weights", w, rw);
      expect_same("adam slots", s, rs);
    }
    for (float power : {-0.5f, -0.3f}) {
      FtrlOptimizer ftrl(0.5f, power, 0.1f, 0.02f, 0.2f, 0.3f);
      std::vector<float> w = w0, rw = w0, s(2 * n), rs;
      ftrl.InitSlots(s);
      rs = s;
      for (int step = 0; step < 3; ++step) {
        ftrl.Apply(w, s, g, 1, ftrl.learning_rate());
        PlainFtrl(0.5f, power, 0.02f, 0.2f, 0.3f, rw, rs, g);
      }
      expect_same("ftrl weights", w, rw);
      expect_same("ftrl slots", s, rs);
    }
  }
}

// Row-wise Adagrad against a plain per-row loop in double precision: the
// accumulator gains the mean square of the row's gradient, every element
// moves by lr / (sqrt(a) + eps) times its gradient. Row lengths around the
// 16-lane blocks; several steps, so the accumulator's history matters; each
// weight-decay form.
TEST(OptimizerTest, RowwiseAdagradMatchesPlainRowLoop) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float lr = 0.05f, eps = 1e-8f, init = 0.02f, wd = 0.1f;
  for (const bool decoupled : {false, true}) {
    for (const float decay : {0.0f, wd}) {
      OptimizerOptions o = OptimizerOptions::Constant(lr);
      o.weight_decay = decay;
      o.decoupled_weight_decay = decoupled;
      RowwiseAdagradOptimizer opt(o, init, eps);
      EXPECT_EQ(opt.slots_per_param(), 0);
      EXPECT_EQ(opt.row_slots(), 1);
      for (size_t n : {1, 3, 15, 16, 17, 33, 128}) {
        EXPECT_EQ(opt.SlotFloats(static_cast<int64_t>(n)), 1);
        std::vector<float> w(n), a(1);
        opt.InitSlots(a);
        EXPECT_EQ(a[0], init);
        for (float& v : w) v = u(rng);
        std::vector<double> rw(w.begin(), w.end());
        double ra = init;
        for (int step = 1; step <= 4; ++step) {
          std::vector<float> g(n);
          for (float& v : g) v = 0.3f * u(rng);
          // A row whose gradient is zero in one step keeps its weights
          // (apart from the decay).
          if (step == 3) std::fill(g.begin(), g.end(), 0.0f);
          const float rate = 0.5f * step;  // a scheduled rate per step
          opt.Apply(w, a, g, step, rate);
          std::vector<double> gd(n);
          for (size_t i = 0; i < n; ++i) {
            gd[i] = g[i] + (decay > 0 && !decoupled ? double{decay} * rw[i] : 0.0);
          }
          double sq = 0;
          for (double v : gd) sq += v * v;
          ra += sq / n;
          const double mult = rate / (std::sqrt(ra) + eps);
          for (size_t i = 0; i < n; ++i) {
            const double shrink = decay > 0 && decoupled ? double{rate} * decay * rw[i] : 0.0;
            rw[i] = rw[i] - shrink - mult * gd[i];
          }
        }
        EXPECT_NEAR(a[0], ra, 1e-6 * ra) << "n " << n;
        for (size_t i = 0; i < n; ++i) {
          EXPECT_NEAR(w[i], rw[i], 2e-6)
              << "n " << n << " i " << i << " decay " << decay << " decoupled " << decoupled;
        }
      }
    }
  }
}

// One row-wise accumulator per row however wide: an element's step shrinks
// when the row's other elements have large gradients (the mean square is
// shared), unlike per-element Adagrad.
TEST(OptimizerTest, RowwiseAdagradSharesTheAccumulatorOverTheRow) {
  RowwiseAdagradOptimizer opt(1.0f, 0.0f, 1e-8f);
  std::vector<float> w = {0.0f, 0.0f}, a = {0.0f};
  const std::vector<float> g = {1.0f, 3.0f};
  opt.Apply(w, a, g, 1, 1.0f);
  EXPECT_FLOAT_EQ(a[0], 5.0f);  // (1 + 9) / 2
  EXPECT_NEAR(w[0], -1.0 / std::sqrt(5.0), 1e-6);
  EXPECT_NEAR(w[1], -3.0 / std::sqrt(5.0), 1e-6);
}

// Weight decay in SGD, Adagrad and Adam against plain double loops: L2
// replaces g by g + wd w everywhere, decoupled subtracts lr wd w from the
// old w beside the unregularised step. For SGD both forms are the same.
TEST(OptimizerTest, WeightDecayMatchesPlainLoops) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t n = 37;
  const float lr = 0.1f, wd = 0.2f;
  for (const bool decoupled : {false, true}) {
    OptimizerOptions o = OptimizerOptions::Constant(lr);
    o.weight_decay = wd;
    o.decoupled_weight_decay = decoupled;
    SgdOptimizer sgd(o);
    AdagradOptimizer ada(o, 0.1f, 1e-7f);
    AdamOptimizer adam(o, 0.9f, 0.99f, 1e-8f);
    EXPECT_EQ(sgd.weight_decay_kind(), decoupled ? WeightDecay::kDecoupled : WeightDecay::kL2);
    std::vector<float> w0(n);
    for (float& v : w0) v = u(rng);
    std::vector<float> ws = w0, wa = w0, wm = w0, sa(n, 0.1f), sm(2 * n, 0.0f);
    std::vector<double> rs(w0.begin(), w0.end()), ra = rs, rm = rs, raa(n, 0.1), rmm(n), rvv(n);
    for (int t = 1; t <= 3; ++t) {
      std::vector<float> g(n);
      for (float& v : g) v = 0.5f * u(rng);
      sgd.Apply(ws, {}, g, t, lr);
      ada.Apply(wa, sa, g, t, lr);
      adam.Apply(wm, sm, g, t, lr);
      const double c1 = 1.0 / (1.0 - std::pow(0.9, t)), c2 = 1.0 / (1.0 - std::pow(0.99, t));
      for (size_t i = 0; i < n; ++i) {
        auto grad = [&](double w) { return g[i] + (decoupled ? 0.0 : double{wd} * w); };
        auto shrink = [&](double w) { return decoupled ? double{lr} * wd * w : 0.0; };
        rs[i] = rs[i] - shrink(rs[i]) - lr * grad(rs[i]);
        const double ga = grad(ra[i]);
        raa[i] += ga * ga;
        ra[i] = ra[i] - shrink(ra[i]) - lr * ga / (std::sqrt(raa[i]) + 1e-7);
        const double gm = grad(rm[i]);
        rmm[i] = 0.9 * rmm[i] + 0.1 * gm;
        rvv[i] = 0.99 * rvv[i] + 0.01 * gm * gm;
        rm[i] = rm[i] - shrink(rm[i]) - lr * rmm[i] * c1 / (std::sqrt(rvv[i] * c2) + 1e-8);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(ws[i], rs[i], 1e-6) << "sgd " << i;
      EXPECT_NEAR(wa[i], ra[i], 1e-6) << "adagrad " << i;
      EXPECT_NEAR(wm[i], rm[i], 1e-5) << "adam " << i;
    }
  }
}

// The factory passes weight decay, the schedule and row-wise Adagrad on.
TEST(OptimizerTest, FactoryBuildsRowwiseAdagradWithDecayAndSchedule) {
  config::OptimizerConfig c;
  c.mutable_rowwise_adagrad();
  c.set_weight_decay(0.25f);
  c.set_weight_decay_mode(config::OptimizerConfig::DECOUPLED);
  config::LearningRateScheduleConfig warmup;
  warmup.set_warmup_steps(4);
  auto opt = CreateOptimizer(c, 0.8f, LearningRateSchedule(warmup, 100));
  EXPECT_EQ(opt->name(), "rowwise_adagrad");
  EXPECT_EQ(opt->SlotFloats(128), 1);
  EXPECT_FLOAT_EQ(opt->weight_decay(), 0.25f);
  EXPECT_EQ(opt->weight_decay_kind(), WeightDecay::kDecoupled);
  EXPECT_FLOAT_EQ(opt->learning_rate(), 0.8f);
  EXPECT_FLOAT_EQ(opt->LearningRateAt(1), 0.2f);  // training step 0: 1/4
  EXPECT_FLOAT_EQ(opt->LearningRateAt(4), 0.8f);
  EXPECT_EQ(opt->LearningRateAt(50), 0.8f);
  std::vector<float> slots(1);
  opt->InitSlots(slots);
  EXPECT_EQ(slots[0], 0.0f);  // FBGEMM's default accumulator start
}

}  // namespace
}  // namespace lemrt::device
