#include "device/tensorcore/cross_network.h"

#include <algorithm>
#include <cstring>

#include "Eigen/Core"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMatrix>;
using ConstMap = Eigen::Map<const RowMatrix>;

// C [m x n] = op(A) [m x k] * op(B) [k x n], row-major, dense (leading
// dimension = row width), overwriting C.
void Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float* c) {
  Map cm(c, m, n);
  if (k == 0) {
    cm.setZero();
    return;
  }
  if (!trans_a && !trans_b) {
    cm.noalias() = ConstMap(a, m, k) * ConstMap(b, k, n);
  } else if (!trans_a && trans_b) {
    cm.noalias() = ConstMap(a, m, k) * ConstMap(b, n, k).transpose();
  } else if (trans_a && !trans_b) {
    cm.noalias() = ConstMap(a, k, m).transpose() * ConstMap(b, k, n);
  } else {
    cm.noalias() = ConstMap(a, k, m).transpose() * ConstMap(b, n, k).transpose();
  }
}

}  // namespace

int64_t CrossNetwork::NumParams(const CrossNetworkShape& shape) {
  const int64_t w = shape.width;
  const int64_t per_layer = shape.low_rank > 0 ? 2 * w * shape.low_rank + w : w * w + w;
  return per_layer * shape.num_layers;
}

CrossNetwork::CrossNetwork(const CrossNetworkShape& shape, int64_t max_batch)
    : shape_(shape), max_batch_(max_batch) {
  CHECK_GT(shape.width, 0);
  CHECK_GT(shape.num_layers, 0);
  CHECK_GE(shape.low_rank, 0);
  CHECK_GE(max_batch, 0);
  const int64_t w = shape.width;
  const size_t rows = static_cast<size_t>(max_batch);
  int64_t offset = 0;
  for (int l = 0; l < shape.num_layers; ++l) {
    Layer layer;
    layer.v_offset = offset;
    if (rank() > 0) {
      layer.u_offset = offset + w * rank();
      layer.bias_offset = layer.u_offset + int64_t{rank()} * w;
    } else {
      layer.bias_offset = offset + w * w;
    }
    offset = layer.bias_offset + w;
    layers_.push_back(layer);
    x_.emplace_back(rows * w);
    a_.emplace_back(rows * w);
    if (rank() > 0) t_.emplace_back(rows * rank());
  }
  num_params_ = offset;
  CHECK_EQ(num_params_, NumParams(shape));
  for (auto& g : g_) g.resize(rows * w);
  da_.resize(rows * w);
  dt_.resize(rows * rank());
}

void CrossNetwork::Forward(std::span<const float> params, int64_t batch, const float* x0) {
  CHECK_EQ(static_cast<int64_t>(params.size()), num_params_);
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  const int64_t w = width();
  const float* x = x0;
  for (int l = 0; l < num_layers(); ++l) {
    const Layer& layer = layers_[l];
    float* a = a_[l].data();
    if (rank() > 0) {
      Product(false, false, batch, rank(), w, x, params.data() + layer.v_offset, t_[l].data());
      Product(false, false, batch, w, rank(), t_[l].data(), params.data() + layer.u_offset, a);
    } else {
      Product(false, false, batch, w, w, x, params.data() + layer.v_offset, a);
    }
    const float* bias = params.data() + layer.bias_offset;
    float* next = x_[l].data();
    for (int64_t r = 0; r < batch; ++r) {
      const float* x0r = x0 + r * w;
      const float* xr = x + r * w;
      float* ar = a + r * w;
      float* nr = next + r * w;
      for (int64_t i = 0; i < w; ++i) {
        ar[i] += bias[i];
        nr[i] = x0r[i] * ar[i] + xr[i];
      }
    }
    x = next;
  }
}

void CrossNetwork::Backward(std::span<const float> params, int64_t batch, const float* x0,
                            const float* d_out, std::span<float> grads, float* d_x0) {
  CHECK_EQ(static_cast<int64_t>(params.size()), num_params_);
  CHECK_EQ(static_cast<int64_t>(grads.size()), num_params_);
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  const int64_t w = width();
  const int64_t n = batch * w;
  // d_x0 collects x_0's direct terms (g * a_l) of every layer; the gradient
  // through the residual chain joins it at the end.
  std::fill(d_x0, d_x0 + n, 0.0f);
  const float* g = d_out;  // dLoss/d x_{l+1}
  int g_buf = -1;
  for (int l = num_layers() - 1; l >= 0; --l) {
    const Layer& layer = layers_[l];
    const float* a = a_[l].data();
    float* da = da_.data();
    for (int64_t i = 0; i < n; ++i) {
      da[i] = g[i] * x0[i];
      d_x0[i] += g[i] * a[i];
    }
    float* db = grads.data() + layer.bias_offset;
    std::fill(db, db + w, 0.0f);
    for (int64_t r = 0; r < batch; ++r) {
      const float* dar = da + r * w;
      for (int64_t i = 0; i < w; ++i) db[i] += dar[i];
    }
    const float* x = l == 0 ? x0 : x_[l - 1].data();
    // The next g: dLoss/d x_l = g (residual) + the product term.
    const int next_buf = g_buf == 0 ? 1 : 0;
    float* dx = g_[next_buf].data();
    if (rank() > 0) {
      const float* u = params.data() + layer.u_offset;
      const float* v = params.data() + layer.v_offset;
      Product(true, false, rank(), w, batch, t_[l].data(), da, grads.data() + layer.u_offset);
      Product(false, true, batch, rank(), w, da, u, dt_.data());
      Product(true, false, w, rank(), batch, x, dt_.data(), grads.data() + layer.v_offset);
      Product(false, true, batch, w, rank(), dt_.data(), v, dx);
    } else {
      const float* wm = params.data() + layer.v_offset;
      Product(true, false, w, w, batch, x, da, grads.data() + layer.v_offset);
      Product(false, true, batch, w, w, da, wm, dx);
    }
    for (int64_t i = 0; i < n; ++i) dx[i] += g[i];
    g = dx;
    g_buf = next_buf;
  }
  for (int64_t i = 0; i < n; ++i) d_x0[i] += g[i];
}

}  // namespace lemrt::device
