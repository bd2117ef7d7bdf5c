// CrossNetwork: the cross layers of DCN-v2 (Wang et al. 2021, "DCN V2:
// Improved Deep & Cross Network"), in the low-rank form MLPerf DLRM-v2 uses,
// applied to a row-major batch x_0 [batch x width]:
//
//   x_{l+1} = x_0 * (x_l V_l U_l + b_l) + x_l        (* elementwise)
//
// for l = 0 .. L-1 (row vectors; V_l [width x rank], U_l [rank x width]), or
// with rank 0 the full-rank x_{l+1} = x_0 * (x_l W_l + b_l) + x_l
// (W_l [width x width]). Layer l's output holds every product of up to l + 2
// coordinates of x_0, so two layers already form three-way feature crosses.
// The parameters and gradients live in caller-owned flat buffers, as for Mlp;
// the network owns the activations kept for Backward, allocated once for
// `max_batch` rows. Its products run on device/tensorcore/gemm.h's Gemm and
// its element-wise passes in fixed row blocks, on the ThreadTeam given at
// construction (the outputs do not depend on the team's size).
// Thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_CROSS_NETWORK_H_
#define LEMRT_DEVICE_TENSORCORE_CROSS_NETWORK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "device/tensorcore/gemm.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

struct CrossNetworkShape {
  int width = 0;       // Of x_0 and every x_l (> 0).
  int num_layers = 0;  // L (> 0).
  int low_rank = 0;    // Rank of V_l U_l; 0 = full-rank W_l.
  // The number format of every product (gemm.h); the rest stays fp32.
  GemmPrecision precision = GemmPrecision::kFp32;
};

// Parameter layout inside the span given to Forward/Backward (floats, packed,
// no padding), layer by layer:
//
//   low rank:  | V_l [width x rank] row-major | U_l [rank x width] | b_l [width] |
//   full rank: | W_l [width x width] row-major | b_l [width] |
//
// The gradient span uses the same layout.
class CrossNetwork {
 public:
  // Where one layer's parameters sit, in floats from the start of the span;
  // u_offset is -1 for a full-rank layer (v_offset is then W_l's).
  struct Layer {
    int64_t v_offset = 0;
    int64_t u_offset = -1;
    int64_t bias_offset = 0;
  };

  // Precondition (CHECKed; callers validate user input first): width > 0,
  // num_layers > 0, low_rank >= 0, max_batch >= 0. `team` (optional; null =
  // the calling thread) must outlive the network.
  CrossNetwork(const CrossNetworkShape& shape, int64_t max_batch, ThreadTeam* team = nullptr);
  CrossNetwork(const CrossNetwork&) = delete;
  CrossNetwork& operator=(const CrossNetwork&) = delete;

  // Parameters of a network of this shape (the layout above).
  static int64_t NumParams(const CrossNetworkShape& shape);

  const CrossNetworkShape& shape() const { return shape_; }
  int64_t num_params() const { return num_params_; }
  int width() const { return shape_.width; }
  int num_layers() const { return shape_.num_layers; }
  const Layer& layer(int l) const { return layers_[l]; }

  // x_L for `batch` rows of x0 ([batch x width], row-major); keeps what
  // Backward needs (x0 itself is not copied: it must stay unchanged until
  // Backward). The output stays readable through output() until the next
  // Forward. Preconditions: 0 <= batch <= max_batch, params.size() ==
  // num_params().
  void Forward(std::span<const float> params, int64_t batch, const float* x0);
  const float* output() const { return x_.back().data(); }

  // Back-propagates d_out = dLoss/d x_L ([batch x width]) through the last
  // Forward (same params, batch and x0). Overwrites `grads` (size
  // num_params()) with dLoss/d params and d_x0 ([batch x width], must not
  // overlap the inputs) with dLoss/d x0.
  void Backward(std::span<const float> params, int64_t batch, const float* x0,
                const float* d_out, std::span<float> grads, float* d_x0);

 private:
  int rank() const { return shape_.low_rank; }

  CrossNetworkShape shape_;
  int64_t max_batch_;
  ThreadTeam* team_;
  int64_t num_params_ = 0;
  std::vector<Layer> layers_;
  // x_[l]: x_{l+1}, the output of layer l, [max_batch x width].
  std::vector<std::vector<float>> x_;
  // a_[l]: x_l V_l U_l + b_l of layer l; t_[l]: x_l V_l [max_batch x rank].
  std::vector<std::vector<float>> a_;
  std::vector<std::vector<float>> t_;
  // Backward scratch: the gradient of the current layer's input (two,
  // alternating), of its a_ and of its t_.
  std::vector<float> g_[2];
  std::vector<float> da_;
  std::vector<float> dt_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_CROSS_NETWORK_H_
