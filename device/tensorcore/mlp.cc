#include "device/tensorcore/mlp.h"

#include <algorithm>
#include <cstring>

#include "base/bf16.h"
#include "device/tensorcore/column_sums.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/relu_gradient.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Rows per task of the element-wise passes (ReLU backward, bf16 rounding).
constexpr int64_t kRowsPerTask = 128;

// dst = FloatToBf16Nearest of the packed [rows x cols] matrix at src.
void RoundRows(ThreadTeam* team, int64_t rows, int64_t cols, const float* src, uint16_t* dst) {
  ParallelRanges(team, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    base::NarrowBf16Nearest(
        std::span<const float>(src + begin * cols, static_cast<size_t>((end - begin) * cols)),
        dst + begin * cols);
  });
}

}  // namespace

int64_t Mlp::NumParams(std::span<const int> widths) {
  int64_t n = 0;
  for (size_t l = 1; l < widths.size(); ++l) {
    n += static_cast<int64_t>(widths[l - 1]) * widths[l] + widths[l];
  }
  return n;
}

Mlp::Mlp(MlpShape shape, int64_t max_batch, ThreadTeam* team)
    : team_(team),
      relu_last_(shape.relu_last),
      dropout_(shape.dropout),
      dropout_layer_(shape.dropout_layer),
      precision_(shape.precision),
      max_batch_(max_batch) {
  CHECK_GE(shape.widths.size(), 2u) << "an Mlp needs at least one layer";
  CHECK(shape.dropout >= 0.0f && shape.dropout < 1.0f) << "dropout must be in [0, 1)";
  CHECK_GE(max_batch, 0);
  for (int w : shape.widths) CHECK_GT(w, 0) << "Mlp widths must be positive";
  int64_t offset = 0;
  int max_out = 0;
  for (size_t l = 1; l < shape.widths.size(); ++l) {
    Layer layer;
    layer.in = shape.widths[l - 1];
    layer.out = shape.widths[l];
    layer.weight_offset = offset;
    layer.bias_offset = offset + static_cast<int64_t>(layer.in) * layer.out;
    offset = layer.bias_offset + layer.out;
    layers_.push_back(layer);
    acts_.emplace_back(static_cast<size_t>(max_batch * layer.out));
    max_out = std::max(max_out, layer.out);
    if (bf16()) {
      x16_.emplace_back(static_cast<size_t>(max_batch * layer.in));
      w16_.emplace_back(static_cast<size_t>(layer.in) * layer.out);
    }
  }
  num_params_ = offset;
  for (auto& d : delta_) d.resize(static_cast<size_t>(max_batch * max_out));
  if (bf16()) dz16_.resize(static_cast<size_t>(max_batch * max_out));
}

void Mlp::Forward(std::span<const float> params, int64_t batch, const float* in,
                  float* out, const DropoutKey* dropout) {
  CHECK_EQ(static_cast<int64_t>(params.size()), num_params_);
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  dropped_ = dropout != nullptr && dropout_ > 0.0f;
  const float* x = in;
  for (int l = 0; l < num_layers(); ++l) {
    const Layer& layer = layers_[l];
    const GemmEpilogue bias_relu{.bias = params.data() + layer.bias_offset, .relu = HasRelu(l)};
    const float* w = params.data() + layer.weight_offset;
    Bf16Operands rounded;
    if (bf16()) {
      // Rounded once for the product here and Backward's two.
      RoundRows(team_, batch, layer.in, x, x16_[l].data());
      RoundRows(team_, layer.in, layer.out, w, w16_[l].data());
      rounded = {x16_[l].data(), w16_[l].data()};
    }
    Gemm(team_, false, false, batch, layer.out, layer.in, x, layer.in, w, layer.out,
         acts_[l].data(), layer.out, bias_relu, precision_, rounded);
    if (dropped_ && HasDropout(l)) {
      // Row blocks: a row's mask is keyed by its global sample, not its block.
      float* y = acts_[l].data();
      ParallelRanges(team_, batch, kRowsPerTask, [&](int64_t begin, int64_t end) {
        DropoutKey rows = *dropout;
        rows.first_sample += begin;
        ApplyDropout(rows, dropout_layer_ + l, dropout_, end - begin, layer.out,
                     y + begin * layer.out);
      });
    }
    x = acts_[l].data();
  }
  if (out != nullptr && batch > 0) {
    std::memcpy(out, output(), sizeof(float) * batch * out_width());
  }
}

void Mlp::Backward(std::span<const float> params, int64_t batch,
                   const float* in, const float* d_out, std::span<float> grads,
                   float* d_in) {
  CHECK_EQ(static_cast<int64_t>(params.size()), num_params_);
  CHECK_EQ(static_cast<int64_t>(grads.size()), num_params_);
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  // dy: dLoss/d (post-activation output of layer l), or, when dy_is_dz,
  // already dLoss/d (pre-activation): the GEMM that wrote dx of layer l + 1
  // applied layer l's ReLU backward in its epilogue. dy is either the
  // caller's d_out (dy_buf = -1) or delta_[dy_buf]. Only the caller's d_out
  // needs a ReLU pass of its own: it writes dz to the other delta buffer (the
  // caller's d_out is read-only), and dx goes to whichever buffer dz does not
  // occupy.
  const float* dy = d_out;
  int dy_buf = -1;
  bool dy_is_dz = false;
  for (int l = num_layers() - 1; l >= 0; --l) {
    const Layer& layer = layers_[l];
    const float* dz = dy;
    int dz_buf = dy_buf;
    if (HasRelu(l) && !dy_is_dz) {
      dz_buf = dy_buf == 0 ? 1 : 0;
      float* out = delta_[dz_buf].data();
      const float* y = acts_[l].data();
      const float scale = ReluGradientScale(l);
      ParallelRanges(team_, batch, kRowsPerTask, [&](int64_t begin, int64_t end) {
        const int64_t at = begin * layer.out;
        ReluGradient(y + at, dy + at, out + at, (end - begin) * layer.out, scale);
      });
      dz = out;
    }
    const float* x = l == 0 ? in : acts_[l - 1].data();
    const float* w = params.data() + layer.weight_offset;
    float* dx = nullptr;
    GemmEpilogue dx_epilogue;
    if (l > 0) {
      const int dx_buf = dz_buf == 0 ? 1 : 0;  // dz_buf may be -1.
      dx = delta_[dx_buf].data();
      dy = dx;
      dy_buf = dx_buf;
      dy_is_dz = HasRelu(l - 1);
      if (dy_is_dz) {
        dx_epilogue = {.relu_output = acts_[l - 1].data(),
                       .relu_output_ld = layers_[l - 1].out,
                       .relu_scale = ReluGradientScale(l - 1)};
      }
    } else {
      dx = d_in;
    }
    // bf16: dz rounded once for both products; x and W as Forward rounded them.
    Bf16Operands x_dz, dz_w;
    if (bf16()) {
      RoundRows(team_, batch, layer.out, dz, dz16_.data());
      x_dz = {x16_[l].data(), dz16_.data()};
      dz_w = {dz16_.data(), w16_[l].data()};
    }
    // dW = x^T dz, db = the column sums of dz and dx = dz W^T read only dz,
    // x and W: one fork-join for the three.
    const GemmTasks d_weights(true, false, layer.in, layer.out, batch, x, layer.in, dz, layer.out,
                              grads.data() + layer.weight_offset, layer.out, {}, precision_, x_dz);
    // (No dx wanted, as for the first layer without d_in: m = 0, no blocks.)
    const GemmTasks d_in_tasks(false, true, dx != nullptr ? batch : 0, layer.in, layer.out, dz,
                               layer.out, w, layer.out, dx, layer.in, dx_epilogue, precision_,
                               dz_w);
    const ColumnSumTasks d_bias(dz, batch, layer.out, grads.data() + layer.bias_offset);
    const TaskGroup groups[] = {d_weights.group(), d_in_tasks.group(), d_bias.group()};
    ParallelForGroups(team_, groups);
  }
}

float Mlp::ReluGradientScale(int l) const {
  return dropped_ && HasDropout(l) ? 1.0f / (1.0f - dropout_) : 1.0f;
}

}  // namespace lemrt::device
