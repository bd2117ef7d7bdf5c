// CrossDense: the dense model of DCN-v2-style recommenders (MLPerf DLRM-v2)
// and its plain-concatenation baseline, behind DenseModel (dense_model.h):
//
//   z_0 = bottom MLP(dense)                    ReLU after every layer
//   x_0 = [z_0, emb_1, ..., emb_F]             width W = d + sum(feature_dims)
//   x   = CrossNetwork(x_0)   (dcn_v2)         cross_network.h
//       = x_0                 (concat)
//   logit_t = top MLP_t(x)                     ReLU after every layer but the last;
//                                              one top MLP per task (task_heads.h)
//   loss  = loss_scale * sum_t w_t sum_i BCE(sigmoid(logit_ti), label_ti)
//           over the present labels
//
// The embeddings enter at their own widths (no projections). Parameter
// layout of params() / grads() (floats, packed, no padding):
//
//   | bottom MLP | cross layers (dcn_v2 only) | top MLP task 0 | task 1 ... |
//
// each MLP as in mlp.h (widths [num_dense, bottom...] and [W, top...]), the
// cross layers as in cross_network.h. Initialisation (a pure function of seed
// and flat index k): biases 0; every weight matrix (MLP W_l, cross V_l, U_l
// or W_l) Xavier-uniform with its (fan_in, fan_out) = (rows, columns), the
// same formula as DlrmDense's (dlrm_dense.h). The step runs on the ThreadTeam
// given to Create (GEMMs through device/tensorcore/gemm.h, copies and
// element-wise passes in fixed sample blocks), and its bits do not depend on
// the team's size. Thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_CROSS_DENSE_H_
#define LEMRT_DEVICE_TENSORCORE_CROSS_DENSE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "device/tensorcore/cross_network.h"
#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/mlp.h"
#include "device/tensorcore/task_heads.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

class CrossDense : public DenseModel {
 public:
  // spec.interaction must be kDcnV2 or kConcat (CHECKed); the rest is
  // validated as CreateDenseModel documents. `team` (optional; null = the
  // calling thread only) must outlive the model.
  static absl::StatusOr<std::unique_ptr<CrossDense>> Create(const DenseModelSpec& spec,
                                                            int64_t max_batch, uint64_t seed,
                                                            ThreadTeam* team = nullptr);
  // Parameters of the model `spec` describes (spec valid).
  static int64_t NumParams(const DenseModelSpec& spec);

  CrossDense(const CrossDense&) = delete;
  CrossDense& operator=(const CrossDense&) = delete;

  const DenseModelSpec& spec() const { return spec_; }
  int64_t num_params() const override { return static_cast<int64_t>(params_.size()); }
  int embedding_width() const override { return embedding_width_; }
  int num_dense() const override { return spec_.shape.num_dense; }
  int64_t max_batch() const override { return max_batch_; }
  int num_tasks() const override { return heads_.num_tasks(); }
  // W = d + embedding_width: the width of x_0 and of the top MLP's input.
  int concat_width() const { return concat_width_; }
  // Offsets of the parts of the layout, in floats.
  int64_t cross_offset() const { return cross_offset_; }
  int64_t top_offset() const { return top_offset_; }

  std::span<float> params() override { return params_; }
  std::span<const float> params() const override { return params_; }
  std::span<const float> grads() const override { return grads_; }
  std::span<float> mutable_grads() override { return grads_; }

  double ForwardBackward(int64_t batch, const float* dense, const float* emb,
                         const float* labels, float loss_scale, float* d_emb) override;
  void Predict(int64_t batch, const float* dense, const float* emb, float* probs) override;
  void set_dropout_key(const DropoutKey& key) override { dropout_key_ = key; }

 private:
  CrossDense(const DenseModelSpec& spec, int64_t max_batch, ThreadTeam* team);
  void InitParams(uint64_t seed);
  // Runs the model up to the logits (the heads' outputs); with `dropout`
  // (training) the MLPs drop by its masks.
  void Forward(int64_t batch, const float* dense, const float* emb, const DropoutKey* dropout);
  std::span<const float> Part(int64_t offset, int64_t count) const {
    return std::span<const float>(params_).subspan(offset, count);
  }

  DenseModelSpec spec_;
  int64_t max_batch_;
  int embedding_width_ = 0;
  int concat_width_ = 0;
  Mlp bottom_;
  std::optional<CrossNetwork> cross_;  // dcn_v2 only
  TaskHeads heads_;
  DropoutKey dropout_key_;
  ThreadTeam* team_;
  int64_t cross_offset_ = 0;
  int64_t top_offset_ = 0;

  std::vector<float> params_;
  std::vector<float> grads_;
  // Scratch, sized for max_batch samples.
  std::vector<float> x0_;        // [batch x W]
  std::vector<float> dx_;        // dLoss/d (top input) [batch x W]
  std::vector<float> dx0_;       // dLoss/d x_0 (dcn_v2) [batch x W]
  std::vector<float> d_bottom_;  // dLoss/d z_0 [batch x d]
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_CROSS_DENSE_H_
