#include "device/optimizers/optimizer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

TEST(OptimizerTest, SgdStep) {
  SgdOptimizer sgd(0.5f);
  std::vector<float> w = {1.0f, -2.0f, 3.0f};
  std::vector<float> g = {0.2f, 0.4f, -1.0f};
  sgd.Apply(w, {}, g);
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
    ada.Apply(w, a, std::span<const float>(g, 2));
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

}  // namespace
}  // namespace lemrt::device
