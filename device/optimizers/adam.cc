#include "device/optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "glog/logging.h"

namespace lemrt::device {

void AdamOptimizer::InitSlots(std::span<float> slots) const {
  std::fill(slots.begin(), slots.end(), 0.0f);
}

void AdamOptimizer::Apply(std::span<float> params, std::span<float> slots,
                          std::span<const float> grad, int64_t step) const {
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
  for (size_t i = 0; i < n; ++i) {
    m[i] = beta1_ * m[i] + (1.0f - beta1_) * g[i];
    v[i] = beta2_ * v[i] + (1.0f - beta2_) * g[i] * g[i];
    w[i] -= lr_ * (m[i] * c1) / (std::sqrt(v[i] * c2) + epsilon_);
  }
}

}  // namespace lemrt::device
