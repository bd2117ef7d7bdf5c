#include "device/optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "device/optimizers/decayed_step.h"
#include "device/optimizers/elementwise.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// The element loop, with restrict parameters so that it vectorises
// (elementwise.h).
template <WeightDecay kDecay>
__attribute__((noinline)) void AdamLoop(float* __restrict w, float* __restrict m,
                                         float* __restrict v, const float* __restrict g, size_t n,
                                         float lr, float beta1, float beta2, float c1, float c2,
                                         float epsilon, float wd) {
  const float decay = lr * wd;
  ForEachElement(n, [=](size_t i) {
    const float gi = kDecay == WeightDecay::kL2 ? g[i] + wd * w[i] : g[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
    v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    if constexpr (kDecay == WeightDecay::kDecoupled) {
      w[i] = w[i] - decay * w[i] - lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + epsilon);
    } else {
      w[i] -= lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + epsilon);
    }
  });
}

}  // namespace

void AdamOptimizer::InitSlots(std::span<float> slots) const {
  std::fill(slots.begin(), slots.end(), 0.0f);
}

void AdamOptimizer::Apply(std::span<float> params, std::span<float> slots,
                          std::span<const float> grad, int64_t step, float lr) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), 2 * params.size());
  DCHECK_GE(step, 1);
  const size_t n = params.size();
  // The corrections are computed in double once per call: 1 - b^t loses all
  // precision in float for b close to 1 and small t.
  const double t = static_cast<double>(step);
  const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double{beta1_}, t)));
  const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double{beta2_}, t)));
  float* w = params.data();
  float* m = slots.data();
  float* v = slots.data() + n;
  const float* g = grad.data();
  const float wd = weight_decay();
  WithWeightDecay(weight_decay_kind(), [&](auto k) {
    AdamLoop<decltype(k)::value>(w, m, v, g, n, lr, beta1_, beta2_, c1, c2, epsilon_, wd);
  });
}

}  // namespace lemrt::device
