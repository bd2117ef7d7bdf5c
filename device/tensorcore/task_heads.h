// TaskHeads: the heads of a dense model, one per task (config model.tasks;
// a single-task model has one): each head is a top MLP (mlp.h) of the same
// widths, ending in one logit, on the same input x (the interaction's
// output), and the loss is the sum over tasks of the task's loss weight
// times its binary cross-entropy on the rows that hold its label (a NaN
// label masks the task for that row: no loss, no gradient). With one task of
// weight 1 and no missing labels this is, bit for bit, one top MLP and
// LogisticLossAndGradient (dense_init.h). Thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_TASK_HEADS_H_
#define LEMRT_DEVICE_TENSORCORE_TASK_HEADS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "device/tensorcore/dropout.h"
#include "device/tensorcore/mlp.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

// The dropout key layer of task t's first top-MLP layer: task 0 keeps the
// single-task model's (kTopMlpDropoutLayer), so its masks are unchanged.
inline constexpr int kTaskDropoutLayerStride = 1 << 12;

class TaskHeads {
 public:
  // `shape`: one head's MLP (widths [in, top..., 1], relu_last false);
  // head t draws dropout masks at layer shape.dropout_layer + t x
  // kTaskDropoutLayerStride. `loss_weights`: one per task (>= 1 entries,
  // each finite and >= 0; CHECKed: callers validate config first). `team`
  // (optional) must outlive the heads. Allocates the buffers for max_batch
  // rows.
  TaskHeads(const MlpShape& shape, std::span<const float> loss_weights, int64_t max_batch,
            ThreadTeam* team);

  TaskHeads(const TaskHeads&) = delete;
  TaskHeads& operator=(const TaskHeads&) = delete;

  // Parameters of `tasks` heads of these widths.
  static int64_t NumParams(std::span<const int> widths, int tasks);

  int num_tasks() const { return static_cast<int>(heads_.size()); }
  // Parameters of all heads: head t's are [t x head_params, (t+1) x
  // head_params) of the heads' span, each laid out as mlp.h documents.
  int64_t num_params() const { return head_params_ * num_tasks(); }
  int64_t head_params() const { return head_params_; }
  const Mlp& head(int t) const { return *heads_[t]; }

  // Runs every head on x [batch x in] (in = the widths' first); `params`
  // holds all heads (num_params()). With `dropout` (training) the heads
  // drop by its masks.
  void Forward(std::span<const float> params, int64_t batch, const float* x,
               const DropoutKey* dropout);

  // After Forward: returns sum_t w_t sum_{i: label present} BCE(logit_ti,
  // label_ti) for labels [batch x T] row-major (NaN = missing), and keeps
  // d logit_ti = loss_scale x w_t x (sigmoid - label), 0 where missing.
  double LossAndGradient(int64_t batch, const float* labels, float loss_scale);

  // After LossAndGradient: overwrites `grads` (num_params()) with the heads'
  // gradients and dx [batch x in] with dLoss/dx summed over the heads.
  void Backward(std::span<const float> params, int64_t batch, const float* x,
                std::span<float> grads, float* dx);

  // After Forward: probs [batch x T] row-major = sigmoid(logit).
  void Probabilities(int64_t batch, float* probs) const;

 private:
  std::vector<std::unique_ptr<Mlp>> heads_;
  std::vector<float> loss_weights_;
  int64_t head_params_ = 0;
  // Per task [max_batch] d logits; dx of heads 1.. before they are added
  // ([max_batch x in], only with several tasks).
  std::vector<std::vector<float>> d_logits_;
  std::vector<float> dx_head_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_TASK_HEADS_H_
