#include "device/optimizers/optimizer.h"

#include "device/optimizers/adam.h"
#include "device/optimizers/ftrl.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

TEST(OptimizerTest, SgdStep) {
  SgdOptimizer sgd(0.5f);
  std::vector<float> w = {1.0f, -2.0f, 3.0f};
  std::vector<float> g = {0.2f, 0.4f, -1.0f};
  sgd.Apply(w, {}, g, 1);
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
    ada.Apply(w, a, std::span<const float>(g, 2), 1);
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
  adam.Apply(w, s, g, 1);
  EXPECT_NEAR(w[0], 1.0f - 0.01f, 1e-6);
  EXPECT_NEAR(w[1], -1.0f + 0.01f, 1e-6);
  EXPECT_FLOAT_EQ(w[2], 0.5f);
  EXPECT_NEAR(s[0], 0.03f, 1e-7);        // m
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
    adam.Apply(w, s, std::span<const float>(g, 2), t);
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
  ftrl.Apply(w, s, g, 1);
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
    ftrl.Apply(w, s, std::span<const float>(g, 2), 1);
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
      sgd.Apply(w, {}, g, 1);
      PlainSgd(0.3f, rw, g);
      expect_same("sgd", w, rw);
    }
    {
      AdagradOptimizer ada(0.2f, 0.1f, 1e-7f);
      std::vector<float> w = w0, rw = w0, a = pos, ra = pos;
      for (int step = 0; step < 3; ++step) {
        ada.Apply(w, a, g, 1);
        PlainAdagrad(0.2f, 1e-7f, rw, ra, g);
      }
      expect_same("adagrad weights", w, rw);
      expect_same("adagrad slots", a, ra);
    }
    {
      AdamOptimizer adam(0.01f, 0.9f, 0.999f, 1e-8f);
      std::vector<float> w = w0, rw = w0, s(2 * n, 0.0f), rs(2 * n, 0.0f);
      for (int64_t t = 1; t <= 3; ++t) {
        adam.Apply(w, s, g, t);
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
        ftrl.Apply(w, s, g, 1);
        PlainFtrl(0.5f, power, 0.02f, 0.2f, 0.3f, rw, rs, g);
      }
      expect_same("ftrl weights", w, rw);
      expect_same("ftrl slots", s, rs);
    }
  }
}

}  // namespace
}  // namespace lemrt::device
