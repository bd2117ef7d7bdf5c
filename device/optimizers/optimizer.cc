#include "device/optimizers/optimizer.h"

#include <algorithm>
#include <cmath>

#include "device/optimizers/adam.h"
#include "device/optimizers/elementwise.h"
#include "device/optimizers/ftrl.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// The element loops, with restrict parameters so that they vectorise
// (elementwise.h).
__attribute__((noinline)) void SgdLoop(float* __restrict w, const float* __restrict g,
                                        size_t n, float lr) {
  ForEachElement(n, [=](size_t i) { w[i] -= lr * g[i]; });
}

__attribute__((noinline)) void AdagradLoop(float* __restrict w, float* __restrict a,
                                            const float* __restrict g, size_t n, float lr,
                                            float epsilon) {
  ForEachElement(n, [=](size_t i) {
    a[i] += g[i] * g[i];
    w[i] -= lr * g[i] / (std::sqrt(a[i]) + epsilon);
  });
}

}  // namespace

void SgdOptimizer::Apply(std::span<float> params, std::span<float>,
                         std::span<const float> grad, int64_t) const {
  DCHECK_EQ(params.size(), grad.size());
  SgdLoop(params.data(), grad.data(), params.size(), lr_);
}

void AdagradOptimizer::InitSlots(std::span<float> slots) const {
  std::fill(slots.begin(), slots.end(), initial_);
}

void AdagradOptimizer::Apply(std::span<float> params, std::span<float> slots,
                             std::span<const float> grad, int64_t) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), params.size());
  AdagradLoop(params.data(), slots.data(), grad.data(), params.size(), lr_, epsilon_);
}

std::unique_ptr<Optimizer> CreateOptimizer(const config::OptimizerConfig& config,
                                           float default_lr) {
  const float lr = config.has_learning_rate() ? config.learning_rate() : default_lr;
  if (config.has_adam()) {
    const auto& a = config.adam();
    return std::make_unique<AdamOptimizer>(lr, a.beta1(), a.beta2(), a.epsilon());
  }
  if (config.has_ftrl()) {
    const auto& f = config.ftrl();
    return std::make_unique<FtrlOptimizer>(lr, f.learning_rate_power(), f.initial_accumulator(),
                                           f.l1(), f.l2(), f.beta());
  }
  if (config.has_adagrad()) {
    return std::make_unique<AdagradOptimizer>(lr, config.adagrad().initial_accumulator(),
                                              config.adagrad().epsilon());
  }
  return std::make_unique<SgdOptimizer>(lr);
}

}  // namespace lemrt::device
