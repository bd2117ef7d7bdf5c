#include "device/optimizers/optimizer.h"

#include <algorithm>
#include <cmath>

#include "device/optimizers/adam.h"
#include "device/optimizers/decayed_step.h"
#include "device/optimizers/elementwise.h"
#include "device/optimizers/ftrl.h"
#include "device/optimizers/rowwise_adagrad.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// The Adagrad element loop, with restrict parameters so that it vectorises
// (elementwise.h); one instance per weight-decay kind, so that kNone is the
// plain update bit for bit. SGD's step is DecayedStep.
template <WeightDecay kDecay>
__attribute__((noinline)) void AdagradLoop(float* __restrict w, float* __restrict a,
                                            const float* __restrict g, size_t n, float lr,
                                            float epsilon, float wd) {
  const float decay = lr * wd;
  ForEachElement(n, [=](size_t i) {
    const float gi = kDecay == WeightDecay::kL2 ? g[i] + wd * w[i] : g[i];
    a[i] += gi * gi;
    if constexpr (kDecay == WeightDecay::kDecoupled) {
      w[i] = w[i] - decay * w[i] - lr * gi / (std::sqrt(a[i]) + epsilon);
    } else {
      w[i] -= lr * gi / (std::sqrt(a[i]) + epsilon);
    }
  });
}

}  // namespace

void SgdOptimizer::Apply(std::span<float> params, std::span<float>, std::span<const float> grad,
                         int64_t, float lr) const {
  DCHECK_EQ(params.size(), grad.size());
  const float wd = weight_decay();
  WithWeightDecay(weight_decay_kind(), [&](auto k) {
    DecayedStep<decltype(k)::value>(params.data(), grad.data(), params.size(), lr, lr * wd, wd);
  });
}

void AdagradOptimizer::InitSlots(std::span<float> slots) const {
  std::fill(slots.begin(), slots.end(), initial_);
}

void AdagradOptimizer::Apply(std::span<float> params, std::span<float> slots,
                             std::span<const float> grad, int64_t, float lr) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), params.size());
  float* w = params.data();
  float* a = slots.data();
  const float* g = grad.data();
  const size_t n = params.size();
  const float wd = weight_decay();
  WithWeightDecay(weight_decay_kind(), [&](auto k) {
    AdagradLoop<decltype(k)::value>(w, a, g, n, lr, epsilon_, wd);
  });
}

std::unique_ptr<Optimizer> CreateOptimizer(const config::OptimizerConfig& config,
                                           float default_lr,
                                           const LearningRateSchedule& schedule) {
  OptimizerOptions options;
  options.learning_rate = config.has_learning_rate() ? config.learning_rate() : default_lr;
  options.schedule = schedule;
  options.weight_decay = config.weight_decay();
  options.decoupled_weight_decay =
      config.weight_decay_mode() == config::OptimizerConfig::DECOUPLED;
  if (config.has_adam()) {
    const auto& a = config.adam();
    return std::make_unique<AdamOptimizer>(options, a.beta1(), a.beta2(), a.epsilon());
  }
  if (config.has_ftrl()) {
    CHECK_EQ(options.weight_decay, 0.0f) << "FTRL has its own l2 (validated config)";
    const auto& f = config.ftrl();
    return std::make_unique<FtrlOptimizer>(options.learning_rate, f.learning_rate_power(),
                                           f.initial_accumulator(), f.l1(), f.l2(), f.beta(),
                                           schedule);
  }
  if (config.has_adagrad()) {
    return std::make_unique<AdagradOptimizer>(options, config.adagrad().initial_accumulator(),
                                              config.adagrad().epsilon());
  }
  if (config.has_rowwise_adagrad()) {
    return std::make_unique<RowwiseAdagradOptimizer>(
        options, config.rowwise_adagrad().initial_accumulator(),
        config.rowwise_adagrad().epsilon());
  }
  return std::make_unique<SgdOptimizer>(options);
}

std::unique_ptr<Optimizer> CreateTableOptimizer(const config::RunConfig& config, int table) {
  return CreateOptimizer(config.tables(table).optimizer(),
                         config.training().embedding_learning_rate(),
                         LearningRateSchedule::ForEmbeddings(config.training()));
}

std::unique_ptr<Optimizer> CreateDenseOptimizer(const config::RunConfig& config) {
  return CreateOptimizer(config.training().dense_optimizer(),
                         config.training().dense_learning_rate(),
                         LearningRateSchedule::ForDense(config.training()));
}

}  // namespace lemrt::device
