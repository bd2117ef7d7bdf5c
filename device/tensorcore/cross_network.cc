#include "device/tensorcore/cross_network.h"

#include <algorithm>

#include "device/tensorcore/column_sums.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/lanes.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Elements per task of the element-wise passes (64 KiB of each array): a
// batch of 128 rows of a few hundred columns still gives both threads work.
constexpr int64_t kElementsPerTask = 16384;

// The element-wise passes, on [0, n) of their arrays: 8 lanes at a time,
// then the rest one by one (the same operations, so the same bits).
using V = lanes::Lanes<8>;

// x_{l+1} = x_0 * a + x_l.
void CrossOutput(int64_t n, const float* x0, const float* a, const float* x, float* next) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lanes::Store<8>(next + i, lanes::Load<8>(x0 + i) * lanes::Load<8>(a + i) +
                                  lanes::Load<8>(x + i));
  }
  for (; i < n; ++i) next[i] = x0[i] * a[i] + x[i];
}

// da = g * x_0, and d_x0 = g * a (first: the last layer's) or d_x0 += g * a;
// first adds +0 so that -0 becomes +0, as the += form does.
void CrossTerms(int64_t n, bool first, const float* g, const float* x0, const float* a,
                float* da, float* d_x0) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V gi = lanes::Load<8>(g + i);
    const V base = first ? V{} : lanes::Load<8>(d_x0 + i);
    lanes::Store<8>(da + i, gi * lanes::Load<8>(x0 + i));
    lanes::Store<8>(d_x0 + i, base + gi * lanes::Load<8>(a + i));
  }
  for (; i < n; ++i) {
    da[i] = g[i] * x0[i];
    d_x0[i] = (first ? 0.0f : d_x0[i]) + g[i] * a[i];
  }
}

// dx += g (the residual), and, last (layer 0), d_x0 += dx.
void CrossResidual(int64_t n, bool last, const float* g, float* dx, float* d_x0) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V d = lanes::Load<8>(dx + i) + lanes::Load<8>(g + i);
    lanes::Store<8>(dx + i, d);
    if (last) lanes::Store<8>(d_x0 + i, lanes::Load<8>(d_x0 + i) + d);
  }
  for (; i < n; ++i) {
    dx[i] += g[i];
    if (last) d_x0[i] += dx[i];
  }
}

}  // namespace

int64_t CrossNetwork::NumParams(const CrossNetworkShape& shape) {
  const int64_t w = shape.width;
  const int64_t per_layer = shape.low_rank > 0 ? 2 * w * shape.low_rank + w : w * w + w;
  return per_layer * shape.num_layers;
}

CrossNetwork::CrossNetwork(const CrossNetworkShape& shape, int64_t max_batch, ThreadTeam* team)
    : shape_(shape), max_batch_(max_batch), team_(team) {
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
  const int64_t r = rank();
  const GemmPrecision precision = shape_.precision;
  const float* x = x0;
  for (int l = 0; l < num_layers(); ++l) {
    const Layer& layer = layers_[l];
    // a = x V U + b (or x W + b), the bias added in the GEMM's epilogue.
    const GemmEpilogue bias{.bias = params.data() + layer.bias_offset};
    float* a = a_[l].data();
    if (r > 0) {
      float* t = t_[l].data();
      Gemm(team_, false, false, batch, r, w, x, w, params.data() + layer.v_offset, r, t, r, {},
           precision);
      Gemm(team_, false, false, batch, w, r, t, r, params.data() + layer.u_offset, w, a, w, bias,
           precision);
    } else {
      Gemm(team_, false, false, batch, w, w, x, w, params.data() + layer.v_offset, w, a, w, bias,
           precision);
    }
    float* next = x_[l].data();
    ParallelRanges(team_, batch * w, kElementsPerTask, [&](int64_t begin, int64_t end) {
      CrossOutput(end - begin, x0 + begin, a + begin, x + begin, next + begin);
    });
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
  const int64_t r = rank();
  const GemmPrecision precision = shape_.precision;
  const int64_t n = batch * w;
  // d_x0 collects x_0's direct terms (g * a_l) of every layer; the gradient
  // through the residual chain joins it at the end.
  const float* g = d_out;  // dLoss/d x_{l+1}
  int g_buf = -1;
  for (int l = num_layers() - 1; l >= 0; --l) {
    const Layer& layer = layers_[l];
    const float* a = a_[l].data();
    float* da = da_.data();
    const bool first = l == num_layers() - 1;
    ParallelRanges(team_, n, kElementsPerTask, [&](int64_t begin, int64_t end) {
      CrossTerms(end - begin, first, g + begin, x0 + begin, a + begin, da + begin, d_x0 + begin);
    });
    const ColumnSumTasks d_bias(da, batch, w, grads.data() + layer.bias_offset);
    const float* x = l == 0 ? x0 : x_[l - 1].data();
    // The next g: dLoss/d x_l = g (residual) + the product term.
    const int next_buf = g_buf == 0 ? 1 : 0;
    float* dx = g_[next_buf].data();
    if (r > 0) {
      const float* u = params.data() + layer.u_offset;
      const float* v = params.data() + layer.v_offset;
      const float* t = t_[l].data();
      float* dt = dt_.data();
      // dU = t^T da, dt = da U^T and the bias sums read only da, t and U;
      // then dV = x^T dt and dx = dt V^T read only dt, x and V.
      const GemmTasks d_u(true, false, r, w, batch, t, r, da, w, grads.data() + layer.u_offset, w,
                          {}, precision);
      const GemmTasks d_t(false, true, batch, r, w, da, w, u, w, dt, r, {}, precision);
      const TaskGroup first[] = {d_u.group(), d_t.group(), d_bias.group()};
      ParallelForGroups(team_, first);
      const GemmTasks d_v(true, false, w, r, batch, x, w, dt, r, grads.data() + layer.v_offset, r,
                          {}, precision);
      const GemmTasks d_x(false, true, batch, w, r, dt, r, v, r, dx, w, {}, precision);
      const TaskGroup second[] = {d_v.group(), d_x.group()};
      ParallelForGroups(team_, second);
    } else {
      const float* wm = params.data() + layer.v_offset;
      const GemmTasks d_w(true, false, w, w, batch, x, w, da, w, grads.data() + layer.v_offset, w,
                          {}, precision);
      const GemmTasks d_x(false, true, batch, w, w, da, w, wm, w, dx, w, {}, precision);
      const TaskGroup groups[] = {d_w.group(), d_x.group(), d_bias.group()};
      ParallelForGroups(team_, groups);
    }
    const bool last = l == 0;
    ParallelRanges(team_, n, kElementsPerTask, [&](int64_t begin, int64_t end) {
      CrossResidual(end - begin, last, g + begin, dx + begin, d_x0 + begin);
    });
    g = dx;
    g_buf = next_buf;
  }
}

}  // namespace lemrt::device
