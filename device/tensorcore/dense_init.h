// What the dense models share besides their layers: the Xavier-uniform
// initialisation by flat parameter index and the logistic loss. Header-only,
// stateless; thread-safe.
#ifndef LEMRT_DEVICE_TENSORCORE_DENSE_INIT_H_
#define LEMRT_DEVICE_TENSORCORE_DENSE_INIT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "base/random.h"

namespace lemrt::device {

// Xavier-uniform weights for params[offset, offset + count): the value at
// flat index k is
//   u = (Mix64(seed * 0x100000001b3 ^ Mix64(k)) >> 11) * 2^-53   in [0, 1),
//   w = float((2u - 1) * sqrt(6 / (fan_in + fan_out))),
// so it depends only on (seed, k) and every rank gets the same model.
inline void XavierFill(std::span<float> params, int64_t offset, int64_t count, int fan_in,
                       int fan_out, uint64_t seed) {
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  for (int64_t k = offset; k < offset + count; ++k) {
    const uint64_t h = base::Mix64(seed * 0x100000001b3ULL ^ base::Mix64(static_cast<uint64_t>(k)));
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    params[k] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
}

inline double Sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

// -[y log s(x) + (1 - y) log(1 - s(x))] without overflow for large |x|.
inline double BinaryCrossEntropyWithLogit(double x, double y) {
  return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
}

// The models' loss head: returns sum_i BCE(sigmoid(logits[i]), labels[i]) over
// `batch` samples and writes d_logits[i] = loss_scale * (sigmoid(x_i) - y_i),
// the gradient of loss_scale times that sum.
inline double LogisticLossAndGradient(int64_t batch, const float* logits, const float* labels,
                                      float loss_scale, float* d_logits) {
  double loss = 0.0;
  for (int64_t i = 0; i < batch; ++i) {
    const double x = logits[i];
    const double y = labels[i];
    loss += BinaryCrossEntropyWithLogit(x, y);
    d_logits[i] = static_cast<float>(loss_scale * (Sigmoid(x) - y));
  }
  return loss;
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_DENSE_INIT_H_
