#include "device/optimizers/ftrl.h"

#include <algorithm>
#include <cmath>

#include "device/optimizers/elementwise.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// The element loop, with restrict parameters so that it vectorises
// (elementwise.h; the pow() schedule stays scalar, as pow has no vector
// form here).
template <bool kSqrtSchedule>
__attribute__((noinline)) void FtrlLoop(float* __restrict w, float* __restrict n,
                                         float* __restrict z, const float* __restrict g,
                                         size_t count, float power, float lr, float l1, float l2,
                                         float beta) {
  auto pow_neg = [=](float x) { return kSqrtSchedule ? std::sqrt(x) : std::pow(x, -power); };
  ForEachElement(count, [=](size_t i) {
    const float n_new = n[i] + g[i] * g[i];
    const float p_new = pow_neg(n_new);
    z[i] += g[i] - (p_new - pow_neg(n[i])) / lr * w[i];
    n[i] = n_new;
    if (std::abs(z[i]) <= l1) {
      w[i] = 0.0f;
    } else {
      const float l1_signed = z[i] > 0 ? l1 : -l1;
      w[i] = (l1_signed - z[i]) / ((p_new + beta) / lr + 2.0f * l2);
    }
  });
}

}  // namespace

void FtrlOptimizer::InitSlots(std::span<float> slots) const {
  // Slot-major: the first half is n, the second z (callers pass one
  // parameter group at a time, e.g. one embedding row).
  const size_t half = slots.size() / 2;
  std::fill(slots.begin(), slots.begin() + half, initial_);
  std::fill(slots.begin() + half, slots.end(), 0.0f);
}

void FtrlOptimizer::Apply(std::span<float> params, std::span<float> slots,
                          std::span<const float> grad, int64_t, float lr) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), 2 * params.size());
  const size_t n_params = params.size();
  if (power_ == -0.5f) {
    FtrlLoop<true>(params.data(), slots.data(), slots.data() + n_params, grad.data(), n_params,
                   power_, lr, l1_, l2_, beta_);
  } else {
    FtrlLoop<false>(params.data(), slots.data(), slots.data() + n_params, grad.data(), n_params,
                    power_, lr, l1_, l2_, beta_);
  }
}

}  // namespace lemrt::device
