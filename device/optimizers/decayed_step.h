// One gradient step with weight decay, shared by the optimizers whose
// update is a scaled gradient (SGD: the learning rate; row-wise Adagrad: the
// row's learning rate over its accumulator):
//   kNone       w -= step * g
//   kL2         w -= step * (g + wd * w)
//   kDecoupled  w  = w - decay * w - step * g     (decay = lr * wd)
// Out of line with restrict parameters, so that it vectorises
// (elementwise.h); one instance per kind, so that kNone is the plain step
// bit for bit.
#ifndef LEMRT_DEVICE_OPTIMIZERS_DECAYED_STEP_H_
#define LEMRT_DEVICE_OPTIMIZERS_DECAYED_STEP_H_

#include <cstddef>
#include <type_traits>

#include "device/optimizers/elementwise.h"
#include "device/optimizers/optimizer.h"

namespace lemrt::device {

// Calls body(std::integral_constant<WeightDecay, kind>{}), so that an
// optimizer picks its loop instance for a run-time kind in one line:
//   WithWeightDecay(kind, [&](auto k) { Loop<decltype(k)::value>(...); });
template <typename Body>
void WithWeightDecay(WeightDecay kind, Body&& body) {
  switch (kind) {
    case WeightDecay::kNone:
      return body(std::integral_constant<WeightDecay, WeightDecay::kNone>{});
    case WeightDecay::kL2:
      return body(std::integral_constant<WeightDecay, WeightDecay::kL2>{});
    case WeightDecay::kDecoupled:
      return body(std::integral_constant<WeightDecay, WeightDecay::kDecoupled>{});
  }
}

template <WeightDecay kDecay>
__attribute__((noinline)) void DecayedStep(float* __restrict w, const float* __restrict g,
                                           size_t n, float step, float decay, float wd) {
  ForEachElement(n, [=](size_t i) {
    if constexpr (kDecay == WeightDecay::kNone) {
      w[i] -= step * g[i];
    } else if constexpr (kDecay == WeightDecay::kL2) {
      w[i] -= step * (g[i] + wd * w[i]);
    } else {
      w[i] = w[i] - decay * w[i] - step * g[i];
    }
  });
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_DECAYED_STEP_H_
