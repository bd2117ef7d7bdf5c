// Test-only reference for DlrmDense: the model written out plainly from the
// description in dlrm_dense.h, in double, one sample at a time. Header-only;
// thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_DLRM_REFERENCE_TEST_UTIL_H_
#define LEMRT_DEVICE_TENSORCORE_DLRM_REFERENCE_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "device/tensorcore/dlrm_dense.h"
#include "gtest/gtest.h"

namespace lemrt::device::test_util {

// The model written out from the header's description, in double, reading the
// parameters by the documented layout. Returns the logits. With `dropout`, a
// hidden unit o of MLP layer l of sample b is kept by DropoutKeeps(*dropout,
// base + l, b, o, rate) (base 0 for the bottom MLP, kTopMlpDropoutLayer for
// the top) and scaled by 1 / (1 - rate).
inline std::vector<double> NaiveLogits(const DlrmShape& shape,
                                       std::span<const float> p, int64_t batch,
                                       const std::vector<float>& dense,
                                       const std::vector<float>& emb,
                                       const DropoutKey* dropout = nullptr,
                                       DropoutRates rates = {}) {
  int64_t k = 0;  // Cursor into p, advanced as the layout is walked.
  int64_t b = 0;  // The sample.
  auto mlp = [&](std::vector<double> x, const std::vector<int>& widths,
                 bool relu_last, float rate, int base) {
    int in = static_cast<int>(x.size());
    for (size_t l = 0; l < widths.size(); ++l) {
      const int out = widths[l];
      std::vector<double> y(out);
      for (int o = 0; o < out; ++o) {
        double sum = p[k + int64_t{in} * out + o];  // b[o]
        for (int i = 0; i < in; ++i) sum += x[i] * p[k + i * out + o];
        const bool relu = l + 1 < widths.size() || relu_last;
        y[o] = relu ? std::max(sum, 0.0) : sum;
        if (dropout != nullptr && l + 1 < widths.size()) {
          y[o] = DropoutKeeps(*dropout, base + static_cast<int>(l), b, o, rate)
                     ? y[o] / (1.0 - static_cast<double>(rate))
                     : 0.0;
        }
      }
      k += int64_t{in} * out + out;
      in = out;
      x = std::move(y);
    }
    return x;
  };
  const int d = shape.bottom.back();
  const int num_features = static_cast<int>(shape.feature_dims.size());
  const int emb_width =
      std::accumulate(shape.feature_dims.begin(), shape.feature_dims.end(), 0);
  std::vector<double> logits;
  for (b = 0; b < batch; ++b) {
    k = 0;
    std::vector<std::vector<double>> z;
    z.push_back(
        mlp(std::vector<double>(dense.begin() + b * shape.num_dense,
                                dense.begin() + (b + 1) * shape.num_dense),
            shape.bottom, /*relu_last=*/true, rates.bottom, 0));
    int offset = 0;
    for (int f = 0; f < num_features; ++f) {
      const int dim = shape.feature_dims[f];
      const float* e = emb.data() + b * emb_width + offset;
      std::vector<double> zf(d, 0.0);
      for (int j = 0; j < d; ++j) {
        for (int i = 0; i < dim; ++i) {
          zf[j] += dim == d ? (i == j ? e[i] : 0.0) : e[i] * p[k + i * d + j];
        }
      }
      if (dim != d) k += int64_t{dim} * d;
      z.push_back(zf);
      offset += dim;
    }
    std::vector<double> x = z[0];
    for (int i = 0; i <= num_features; ++i) {
      for (int j = i + 1; j <= num_features; ++j) {
        x.push_back(
            std::inner_product(z[i].begin(), z[i].end(), z[j].begin(), 0.0));
      }
    }
    logits.push_back(mlp(x, shape.top, /*relu_last=*/false, rates.top, kTopMlpDropoutLayer)[0]);
    EXPECT_EQ(k, static_cast<int64_t>(p.size())) << "layout not fully walked";
  }
  return logits;
}

}  // namespace lemrt::device::test_util

#endif  // LEMRT_DEVICE_TENSORCORE_DLRM_REFERENCE_TEST_UTIL_H_
