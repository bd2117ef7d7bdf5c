// The gradient through a ReLU, element-wise: the one loop behind the MLP's
// ReLU backward pass and the GEMM epilogue that fuses it (gemm.h).
#ifndef LEMRT_DEVICE_TENSORCORE_RELU_GRADIENT_H_
#define LEMRT_DEVICE_TENSORCORE_RELU_GRADIENT_H_

#include <cstdint>

#include "device/tensorcore/lanes.h"

namespace lemrt::device {

// dz[i] = y[i] > 0 ? dy[i] * scale : 0 for i < n, where y is the ReLU's
// output and scale is inverted dropout's 1 / (1 - p) when that output was
// dropped, else 1 (then no multiplication). dz may be dy (in place); no
// other overlap.
inline void ReluGradient(const float* y, const float* dy, float* dz, int64_t n, float scale) {
  using V = lanes::Lanes<8>;
  const V zero = {};
  const bool scaled = scale != 1.0f;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V g = lanes::Load<8>(dy + i);
    if (scaled) g *= scale;
    lanes::Store<8>(dz + i, lanes::Load<8>(y + i) > zero ? g : zero);
  }
  for (; i < n; ++i) {
    const float g = scaled ? dy[i] * scale : dy[i];
    dz[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_RELU_GRADIENT_H_
