// Mlp: a stack of fully-connected layers (Linear, optionally followed by
// ReLU) applied to a row-major batch [batch x in]. The parameters and
// gradients live in caller-owned flat buffers (so a whole model can keep all
// of them in one vector); the Mlp owns only the activations kept from Forward
// for Backward (with bf16 products also their bf16 roundings), allocated once
// for `max_batch` rows. Its products run on
// device/tensorcore/gemm.h's Gemm, on the ThreadTeam given at construction
// (the outputs do not depend on the team's size). Thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_MLP_H_
#define LEMRT_DEVICE_TENSORCORE_MLP_H_

#include <cstdint>
#include <span>
#include <vector>

#include "device/tensorcore/dropout.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

// Shape of an Mlp.
struct MlpShape {
  // [in, out_1, ..., out_L]: the input width then the output width of each of
  // the L >= 1 layers. All > 0.
  std::vector<int> widths;
  // Whether layer L (the last) is followed by a ReLU; layers 1..L-1 always are.
  bool relu_last = true;
  // Dropout probability after the ReLU of layers 1..L-1 (not after layer L)
  // in a Forward given a DropoutKey, [0, 1); 0 = none (dropout.h).
  float dropout = 0.0f;
  // The dropout key's layer of layer 1 (layer l has dropout_layer + l - 1),
  // so that two Mlps of one model draw different masks.
  int dropout_layer = 0;
  // The number format of every product of Forward and Backward (gemm.h):
  // kBf16 rounds x, W and the deltas to bf16 for the products only; the
  // parameters, gradients, activations and bias/ReLU stay fp32.
  GemmPrecision precision = GemmPrecision::kFp32;
};

// `shape` with its products in `precision`.
inline MlpShape WithPrecision(MlpShape shape, GemmPrecision precision) {
  shape.precision = precision;
  return shape;
}

// Parameter layout inside the span given to Forward/Backward (floats, packed,
// no padding), layer by layer:
//
//   | W_1 [in_1 x out_1] row-major | b_1 [out_1] | W_2 ... | b_L [out_L] |
//
// Layer l computes y = x * W_l + b_l for a row x, so W_l[i][o] connects input
// i to output o (fan_in = in_l, fan_out = out_l). The gradient span uses the
// same layout.
class Mlp {
 public:
  // Where one layer's parameters sit, in floats from the start of the span.
  struct Layer {
    int in = 0;
    int out = 0;
    int64_t weight_offset = 0;  // W [in x out] row-major.
    int64_t bias_offset = 0;    // b [out].
  };

  // Precondition (CHECKed; callers validate user input first): at least two
  // widths, all > 0, and max_batch >= 0. Allocates the activation buffers.
  // `team` (optional; null = the calling thread) must outlive the Mlp.
  Mlp(MlpShape shape, int64_t max_batch, ThreadTeam* team = nullptr);

  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  // Number of parameters of an Mlp with these widths (see the layout above).
  static int64_t NumParams(std::span<const int> widths);

  int64_t num_params() const { return num_params_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  const Layer& layer(int l) const { return layers_[l]; }
  int in_width() const { return layers_.front().in; }
  int out_width() const { return layers_.back().out; }
  int64_t max_batch() const { return max_batch_; }

  // Computes the output for `batch` rows of `in` ([batch x in_width],
  // row-major) and keeps the activations for Backward. The output stays
  // readable through output() until the next Forward; it is also copied to
  // `out` ([batch x out_width]) unless `out` is null. With `dropout` (training)
  // and shape.dropout > 0, the hidden layers' outputs are dropped by the masks
  // of that key (dropout.h); without (evaluation) none is.
  // Preconditions: 0 <= batch <= max_batch, params.size() == num_params().
  void Forward(std::span<const float> params, int64_t batch, const float* in,
               float* out, const DropoutKey* dropout = nullptr);

  // Output of the last Forward: [batch x out_width], row-major.
  const float* output() const { return acts_.back().data(); }

  // Back-propagates d_out = dLoss/d output ([batch x out_width]) through the
  // last Forward, which must have had the same params, batch and `in` (still
  // unchanged), and through its dropout masks. Overwrites (does not accumulate) all of `grads`
  // (grads.size() == num_params()) with dLoss/d params, and writes
  // d_in = dLoss/d in ([batch x in_width]) unless `d_in` is null.
  void Backward(std::span<const float> params, int64_t batch, const float* in,
                const float* d_out, std::span<float> grads, float* d_in);

 private:
  bool bf16() const { return precision_ == GemmPrecision::kBf16; }
  bool HasRelu(int l) const { return l + 1 < num_layers() || relu_last_; }
  bool HasDropout(int l) const { return l + 1 < num_layers() && dropout_ > 0.0f; }
  // What the gradient through layer l's ReLU is multiplied by where the
  // unit was active: inverted dropout's 1 / (1 - p) when the last Forward
  // dropped its output, else 1.
  float ReluGradientScale(int l) const;

  std::vector<Layer> layers_;
  ThreadTeam* team_;
  bool relu_last_;
  float dropout_;
  int dropout_layer_;
  GemmPrecision precision_;
  bool dropped_ = false;  // whether the last Forward applied dropout
  int64_t max_batch_;
  int64_t num_params_;
  // acts_[l]: post-activation output of layer l, [max_batch x out_l].
  std::vector<std::vector<float>> acts_;
  // Two [max_batch x max(out_l)] buffers for the backward deltas.
  std::vector<float> delta_[2];
  // bf16 products only: layer l's input x and W_l as the last Forward rounded
  // them (Backward multiplies them again), and the delta dz of the layer
  // Backward is at, rounded once for its two products.
  std::vector<std::vector<uint16_t>> x16_, w16_;
  std::vector<uint16_t> dz16_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_MLP_H_
