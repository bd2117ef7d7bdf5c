#include "device/optimizers/rowwise_adagrad.h"

#include <algorithm>
#include <cmath>

#include "device/optimizers/decayed_step.h"
#include "device/optimizers/elementwise.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// The sum of squares, a loop with restrict parameters so that it
// vectorises (elementwise.h); the update is DecayedStep.
template <WeightDecay kDecay>
__attribute__((noinline)) float SumOfSquares(const float* __restrict w,
                                              const float* __restrict g, size_t n, float wd) {
  float lanes[kElementBlock] = {};
  size_t i = 0;
  for (; i + kElementBlock <= n; i += kElementBlock) {
    for (size_t k = 0; k < kElementBlock; ++k) {
      const float gi = kDecay == WeightDecay::kL2 ? g[i + k] + wd * w[i + k] : g[i + k];
      lanes[k] += gi * gi;
    }
  }
  for (size_t k = 0; i + k < n; ++k) {
    const float gi = kDecay == WeightDecay::kL2 ? g[i + k] + wd * w[i + k] : g[i + k];
    lanes[k] += gi * gi;
  }
  float sum = 0.0f;
  for (size_t k = 0; k < kElementBlock; ++k) sum += lanes[k];
  return sum;
}

template <WeightDecay kDecay>
void RowwiseAdagradRow(float* w, float* a, const float* g, size_t n, float lr, float epsilon,
                       float wd) {
  if (n == 0) return;
  *a += SumOfSquares<kDecay>(w, g, n, wd) / static_cast<float>(n);
  const float multiplier = lr / (std::sqrt(*a) + epsilon);
  DecayedStep<kDecay>(w, g, n, multiplier, lr * wd, wd);
}

}  // namespace

void RowwiseAdagradOptimizer::InitSlots(std::span<float> slots) const {
  std::fill(slots.begin(), slots.end(), initial_);
}

void RowwiseAdagradOptimizer::Apply(std::span<float> params, std::span<float> slots,
                                    std::span<const float> grad, int64_t, float lr) const {
  DCHECK_EQ(params.size(), grad.size());
  DCHECK_EQ(slots.size(), 1u);
  float* w = params.data();
  float* a = slots.data();
  const float* g = grad.data();
  const size_t n = params.size();
  const float wd = weight_decay();
  WithWeightDecay(weight_decay_kind(), [&](auto k) {
    RowwiseAdagradRow<decltype(k)::value>(w, a, g, n, lr, epsilon_, wd);
  });
}

}  // namespace lemrt::device
