// DenseModel: the dense ("TensorCore") part of a recommender on one chip's
// local batch, behind one interface: the trainer, the dense optimizer,
// checkpoints and the summary see flat parameters and gradients, a
// forward+backward step and a prediction, whatever the model. Two
// implementations (CreateDenseModel picks by the interaction):
//
//   dot     DlrmDense (dlrm_dense.h): bottom MLP, projections, DLRM's dot
//           interaction, top MLP. The default.
//   dcn_v2  CrossDense (cross_dense.h): bottom MLP, x_0 = [z_0, pooled
//   concat  embeddings], DCN-v2 cross layers (dcn_v2) or nothing (concat),
//           top MLP.
//
// All end in one head per task (task_heads.h: a top MLP and a binary
// cross-entropy loss on its logit; one task unless config model.tasks). Thread-compatible: a
// const method may run concurrently with other const methods, anything else
// needs external synchronisation.
#ifndef LEMRT_DEVICE_TENSORCORE_DENSE_MODEL_H_
#define LEMRT_DEVICE_TENSORCORE_DENSE_MODEL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device/tensorcore/dropout.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/thread_team.h"
#include "proto/config.pb.h"

namespace lemrt::device {

// Widths of the dense model. d = bottom.back() is the bottom output z_0's
// width (with the dot interaction also every projected embedding's).
struct DlrmShape {
  // Dense input features per sample (> 0).
  int num_dense = 13;
  // Bottom MLP widths after the input; >= 1 entries, all > 0; last = d.
  std::vector<int> bottom;
  // Top MLP widths after the interaction; >= 1 entries, all > 0; last = 1.
  std::vector<int> top;
  // Embedding width of each sparse feature f; F >= 1 entries, all > 0.
  std::vector<int> feature_dims;
  // One head (a top MLP of the `top` widths) per task, with this loss
  // weight each (>= 1 entries, finite, >= 0; task_heads.h). {1}: the
  // single-task model.
  std::vector<float> task_weights = {1.0f};
};

enum class Interaction { kDot, kDcnV2, kConcat };

// A dense model: its widths and interaction.
struct DenseModelSpec {
  DlrmShape shape;
  Interaction interaction = Interaction::kDot;
  // kDcnV2: cross layers (> 0) and the rank of each (>= 0; 0 = full rank).
  int cross_layers = 3;
  int cross_low_rank = 512;
  // Dropout after the hidden layers of the bottom and top MLP in training.
  DropoutRates dropout;
  // The number format of the products of the MLPs, the projections and the
  // cross layers (gemm.h; model.dense_dtype). The dot interaction's pairwise
  // dot products, the losses and the parameters stay fp32.
  GemmPrecision precision = GemmPrecision::kFp32;
};

// The model a validated config describes (model.*, the tables' dims in
// feature order).
DenseModelSpec DenseModelSpecFromConfig(const config::RunConfig& config);

// "dot", "dcn_v2 (3 layers, rank 512)", "concat": for logs and the summary.
std::string DescribeInteraction(const DenseModelSpec& spec);

class DenseModel {
 public:
  virtual ~DenseModel() = default;

  virtual int64_t num_params() const = 0;
  // Sum of feature_dims: the width of one sample's embedding row.
  virtual int embedding_width() const = 0;
  virtual int num_dense() const = 0;
  virtual int64_t max_batch() const = 0;
  // T: heads, labels per sample and probabilities per sample.
  virtual int num_tasks() const = 0;

  // All parameters in the implementation's documented layout. Callers
  // (optimizer, allreduce, checkpoint) may read and write them between steps.
  virtual std::span<float> params() = 0;
  virtual std::span<const float> params() const = 0;
  // Gradients of the last ForwardBackward, same layout as params().
  virtual std::span<const float> grads() const = 0;
  virtual std::span<float> mutable_grads() = 0;

  // Forward and backward over `batch` samples (0 <= batch <= max_batch,
  // CHECKed). Inputs, row-major, caller-owned:
  //   dense  [batch x num_dense];
  //   emb    [batch x embedding_width], feature f in columns
  //          [offset_f, offset_f + feature_dims[f]), offset_f = sum_{g<f} dims;
  //   labels [batch x num_tasks], row-major, each in [0, 1] or NaN (the
  //          row has no label for that task: the task is masked there).
  // The loss is loss_scale * sum_t w_t sum_{i: label_ti present}
  // BCE(sigmoid(logit_ti), label_ti) (w_t = task_weights[t]; one task: w = 1
  // and the plain sum); the trainer passes 1 / global_batch so gradients
  // summed over ranks are the global mean. Overwrites grads() with dLoss/d
  // params and d_emb [batch x embedding_width] (same column layout as emb)
  // with dLoss/d emb. Returns the loss without loss_scale.
  virtual double ForwardBackward(int64_t batch, const float* dense, const float* emb,
                                 const float* labels, float loss_scale, float* d_emb) = 0;

  // The dropout masks of the ForwardBackward calls that follow (dropout.h):
  // the run's seed, the training step and the global-batch position of row
  // 0. Until set the key is {0, 0, 0}. Without dropout it has no effect.
  virtual void set_dropout_key(const DropoutKey& key) = 0;

  // Forward only: probs [batch x num_tasks] row-major = sigmoid(logit_ti)
  // for the same inputs as ForwardBackward, never with dropout. Leaves
  // params() and grads() untouched.
  virtual void Predict(int64_t batch, const float* dense, const float* emb, float* probs) = 0;
};

// OK when `spec` describes a model: InvalidArgument naming the bad field
// (num_dense, bottom, top ending in 1, feature_dims, cross layers or rank).
absl::Status ValidateDenseModelSpec(const DenseModelSpec& spec);

// Validates `spec` (InvalidArgument naming the bad field: num_dense, bottom,
// top, feature_dims, cross layers or rank) and max_batch >= 0, and, for bf16
// products, the CPU (CheckBf16Products' FailedPrecondition), then builds the
// model for up to max_batch samples with parameters a pure function of
// (spec, seed), identical on every rank. The model's step runs on `team`
// (optional; null = the calling thread only; it must outlive the model), its
// GEMMs through device/tensorcore/gemm.h, and its bits do not depend on the
// team's size.
absl::StatusOr<std::unique_ptr<DenseModel>> CreateDenseModel(const DenseModelSpec& spec,
                                                             int64_t max_batch, uint64_t seed,
                                                             ThreadTeam* team = nullptr);

// The parameter count of the model `spec` describes, without building it
// (the memory plan's dense heap). Errors as CreateDenseModel's.
absl::StatusOr<int64_t> CountDenseParams(const DenseModelSpec& spec);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_DENSE_MODEL_H_
