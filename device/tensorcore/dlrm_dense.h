// DlrmDense: the dense ("TensorCore") part of a DLRM on one chip's local
// batch, the dot-interaction DenseModel (dense_model.h): bottom MLP over the
// dense features, optional per-feature projection of the embeddings to the
// interaction width, dot interaction, top MLP and a binary cross-entropy
// loss. All parameters (and their gradients) sit in one flat float vector, so
// one allreduce and one optimizer call cover the whole model. The step runs
// on the ThreadTeam given to Create (GEMMs through device/tensorcore/gemm.h,
// per-sample work in fixed sample blocks), and its bits do not depend on the
// team's size. Thread-compatible: a const method may run concurrently with
// other const methods, anything else needs external synchronisation.
#ifndef LEMRT_DEVICE_TENSORCORE_DLRM_DENSE_H_
#define LEMRT_DEVICE_TENSORCORE_DLRM_DENSE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/interaction.h"
#include "device/tensorcore/mlp.h"
#include "device/tensorcore/task_heads.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

// Model: z_0 = bottom MLP(dense) with a ReLU after every layer (DLRM);
// z_f = emb_f * P_f for features with feature_dims[f] != d (P_f learned,
// [dim_f x d], no bias), z_f = emb_f otherwise; x = DotInteraction(z_0..z_F)
// of width d + (F+1)F/2; logit_t = top MLP_t(x) with a ReLU after every
// layer but the last, one per task (task_heads.h); loss = loss_scale *
// sum_t w_t sum_i BCE(sigmoid(logit_ti), label_ti) over present labels.
//
// Parameter layout of params() / grads() (floats, packed, no padding):
//
//   | bottom MLP | P_f for each projected f, in increasing f | top MLP task 0 |
//   | top MLP task 1 | ... |      (one top MLP unless several tasks)
//
// where each MLP is, layer by layer (y = x * W_l + b_l; see mlp.h),
//
//   | W_1 [in_1 x out_1] row-major | b_1 [out_1] | W_2 ... | b_L [out_L] |
//
// with widths [num_dense, bottom...] for the bottom MLP and
// [d + (F+1)F/2, top...] for the top MLP, and P_f is [feature_dims[f] x d]
// row-major (z_f = emb_f * P_f). Features with feature_dims[f] == d own no
// parameters.
//
// Initialisation (a pure function of seed and flat index k): biases are 0;
// each weight of W_l or P_f is Xavier-uniform,
//   u = (Mix64(seed * 0x100000001b3 ^ Mix64(k)) >> 11) * 2^-53   in [0, 1),
//   w = float((2u - 1) * sqrt(6 / (fan_in + fan_out))),
// with Mix64 the SplitMix64 finaliser and (fan_in, fan_out) = (in_l, out_l)
// for W_l, (feature_dims[f], d) for P_f.
class DlrmDense : public DenseModel {
 public:
  // Validates `shape` (InvalidArgument naming the bad field: num_dense,
  // bottom, top, feature_dims) and max_batch >= 0 (InvalidArgument), then
  // allocates every buffer for up to max_batch samples and initialises the
  // parameters as a pure function of (shape, seed), identical on every rank.
  // `dropout`: the MLPs' dropout in ForwardBackward (dense_model.h). `team`
  // (optional; null = the calling thread only) must outlive the model.
  // `precision`: the products' number format (DenseModelSpec::precision;
  // kBf16 needs CheckBf16Products() OK, which CreateDenseModel checks).
  static absl::StatusOr<std::unique_ptr<DlrmDense>> Create(
      const DlrmShape& shape, int64_t max_batch, uint64_t seed, DropoutRates dropout = {},
      ThreadTeam* team = nullptr, GemmPrecision precision = GemmPrecision::kFp32);

  DlrmDense(const DlrmDense&) = delete;
  DlrmDense& operator=(const DlrmDense&) = delete;

  const DlrmShape& shape() const { return shape_; }
  int64_t max_batch() const override { return max_batch_; }
  int64_t num_params() const override { return static_cast<int64_t>(params_.size()); }
  // Sum of feature_dims: the width of one sample's embedding row.
  int embedding_width() const override { return embedding_width_; }
  int num_dense() const override { return shape_.num_dense; }
  int num_tasks() const override { return heads_.num_tasks(); }
  // d = bottom.back().
  int interaction_dim() const { return shape_.bottom.back(); }

  // All parameters, laid out as documented above. Callers (optimizer,
  // allreduce, checkpoint) may read and write them between steps.
  std::span<float> params() override { return params_; }
  std::span<const float> params() const override { return params_; }
  // Gradients of the last ForwardBackward, same layout as params().
  std::span<const float> grads() const override { return grads_; }
  std::span<float> mutable_grads() override { return grads_; }

  // Forward and backward over `batch` samples (0 <= batch <= max_batch,
  // CHECKed). Inputs, row-major, caller-owned:
  //   dense  [batch x num_dense];
  //   emb    [batch x embedding_width], feature f in columns
  //          [offset_f, offset_f + feature_dims[f]), offset_f = sum_{g<f} dims;
  //   labels [batch x num_tasks], each in [0, 1] or NaN (masked).
  // The loss is DenseModel::ForwardBackward's; the trainer passes
  // 1 / global_batch so gradients summed over ranks are the global mean.
  // Overwrites grads() with dLoss/d params and d_emb
  // [batch x embedding_width] (same column layout as emb) with dLoss/d emb.
  // Returns the loss without loss_scale. Allocates no
  // buffers of its own (the GEMM backend may still take its packing
  // workspace from the heap).
  double ForwardBackward(int64_t batch, const float* dense, const float* emb,
                         const float* labels, float loss_scale, float* d_emb) override;

  // Forward only: probs [batch x num_tasks] = sigmoid(logit) for the same inputs as
  // ForwardBackward (0 <= batch <= max_batch). Leaves params() and grads()
  // untouched. Allocates like ForwardBackward.
  void Predict(int64_t batch, const float* dense, const float* emb,
               float* probs) override;
  void set_dropout_key(const DropoutKey& key) override { dropout_key_ = key; }

 private:
  struct Feature {
    int dim = 0;
    int64_t emb_offset = 0;    // First column in emb / d_emb.
    int64_t proj_offset = -1;  // P_f in params(); -1: used as is (dim == d).
  };

  DlrmDense(const DlrmShape& shape, int64_t max_batch, DropoutRates dropout, ThreadTeam* team,
            GemmPrecision precision);

  void InitParams(uint64_t seed);
  // Runs the model up to the logits (the heads' outputs); keeps what backward needs.
  // With `dropout` (training), the MLPs drop by its masks.
  void Forward(int64_t batch, const float* dense, const float* emb, const DropoutKey* dropout);
  // Gradients of the interaction input from dx_: of the embeddings (through
  // the projections where there are), the projections, and the bottom MLP's
  // output (d_bottom_).
  void BackwardInteraction(int64_t batch, const float* emb, float* d_emb);

  // Runs proj_tasks_ (filled by the caller) in one fork-join.
  void RunProjections();

  std::span<const float> bottom_params() const;
  std::span<const float> top_params() const;

  DlrmShape shape_;
  int64_t max_batch_;
  ThreadTeam* team_;
  GemmPrecision precision_;
  int embedding_width_ = 0;
  std::vector<Feature> features_;
  Mlp bottom_;
  DotInteraction interaction_;
  TaskHeads heads_;
  DropoutKey dropout_key_;
  int64_t bottom_offset_ = 0;  // Offsets of the MLPs in params_.
  int64_t top_offset_ = 0;

  std::vector<float> params_;
  std::vector<float> grads_;
  // Where the interaction finds vector i of each sample (set per call) and
  // its row stride; z_base_[0] = the bottom MLP's output.
  std::vector<const float*> z_base_;
  std::vector<float*> dz_base_;
  std::vector<int64_t> z_stride_;
  // The projections' products of one call, run as one fork-join (capacity
  // reserved at construction: the step allocates nothing).
  std::vector<GemmTasks> proj_tasks_;
  std::vector<TaskGroup> proj_groups_;
  // Scratch, all sized for max_batch samples.
  // Projected features' z_f, columns of [batch x (F+1) x d] (empty when
  // no feature is projected), and their gradients.
  std::vector<float> z_;
  std::vector<float> dz_;
  std::vector<float> x_;         // Interaction output / top input.
  std::vector<float> dx_;        // Its gradient.
  std::vector<float> d_bottom_;  // dLoss/d z_0 [batch x d].
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_DLRM_DENSE_H_
