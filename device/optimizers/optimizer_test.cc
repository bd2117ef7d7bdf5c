#include "device/optimizers/optimizer.h"

#include "device/optimizers/adam.h"
#include "device/optimizers/ftrl.h"

#include <cmath>
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

}  // namespace
}  // namespace lemrt::device
