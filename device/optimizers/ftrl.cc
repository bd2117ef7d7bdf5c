#include "device/optimizers/ftrl.h"

#include <algorithm>
#include <cmath>

#include "glog/logging.h"

namespace lemrt::device {

void FtrlOptimizer::InitSlots(std::span<float> slots) const {
  // Slot-major: the first half is n, the second z (callers pass one
  // parameter group at a time, e.g. one embedding row).
  const size_t half = slots.size() / 2;
  std::fill(slots.begin(), slots.begin() + half, initial_);
  std::fill(slots.begin() + half, slots.end(), 0.0f);
}

void FtrlOptimizer::Apply(std::span<float> params, std::span<float> slots,
                          std::span<const float> grad, int64_t) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), 2 * params.size());
  const size_t n_params = params.size();
  float* w = params.data();
  float* n = slots.data();
  float* z = slots.data() + n_params;
  const float* g = grad.data();
  const bool sqrt_schedule = power_ == -0.5f;
  auto pow_neg = [&](float x) { return sqrt_schedule ? std::sqrt(x) : std::pow(x, -power_); };
  for (size_t i = 0; i < n_params; ++i) {
    const float n_new = n[i] + g[i] * g[i];
    const float p_new = pow_neg(n_new);
    z[i] += g[i] - (p_new - pow_neg(n[i])) / lr_ * w[i];
    n[i] = n_new;
    if (std::abs(z[i]) <= l1_) {
      w[i] = 0.0f;
    } else {
      const float l1_signed = z[i] > 0 ? l1_ : -l1_;
      w[i] = (l1_signed - z[i]) / ((p_new + beta_) / lr_ + 2.0f * l2_);
    }
  }
}

}  // namespace lemrt::device
