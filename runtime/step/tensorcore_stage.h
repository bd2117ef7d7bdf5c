// The TensorCore stage of a step on one chip: the dense model's
// (device/tensorcore/dense_model.h) forward and backward on the local batch,
// dense gradients summed over chips with one all-reduce, and the dense
// optimizer step. The stage owns the ThreadTeam the dense step runs on
// (tensor_core.gemm_threads threads; 0 counts as 1). Thread-compatible.
//
// World-size-independent mode (training.world_size_independent): the local
// batch runs as blocks of config::GradientBlockSamples()
// consecutive samples of the global batch; each block's gradients are added
// into int64 fixed point with one exponent per chunk of 64 parameters
// (base/block_sum.h) as soon as the block's backward pass ends, and its loss
// exactly (base/exact_sum.h); the all-reduce sums those integers, so the
// bits of the dense update and of the loss do not depend on the world size
// (only on the global batch and the block). The exponents are predicted from
// the previous step's summed gradients (the same on every rank); a count of
// the blocks whose gradients reached a predicted bound travels in the same
// all-reduce, and when it is nonzero the step measures the exponents (an
// all-reduce MAX over every block, recomputing the blocks of a rank holding
// several) and sums again. The first step, and a resume from a checkpoint
// without the prediction, measure. Otherwise the local batch runs in one
// pass and its float gradients are all-reduced (bits that follow the world
// size).
//
// Exchange per step: an all-reduce of all dense gradients (4 x num_params B,
// summed in rank order: Communicator::AllReduceSum;
// world-size-independent: int64 sums, 8 x num_params + 48 B, the loss and
// the failure count included; a measured step adds an all-reduce MAX of the
// chunks' exponents, 8 x (num_params / 64 + 2) B, and the sums again).
#ifndef LEMRT_RUNTIME_STEP_TENSORCORE_STAGE_H_
#define LEMRT_RUNTIME_STEP_TENSORCORE_STAGE_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "device/optimizers/optimizer.h"
#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/thread_team.h"
#include "host/batch.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class TensorCoreStage {
 public:
  // `comm` must outlive the stage. Errors: InvalidArgument for a model shape
  // the dense model rejects, or a local batch that is not whole gradient
  // blocks (config::GradientBlockSamples).
  static absl::StatusOr<std::unique_ptr<TensorCoreStage>> Create(const config::RunConfig& config,
                                                                  Communicator& comm);

  // Forward + backward of training step `step`'s `batch` with pooled
  // embeddings `activations` ([batch x width]); writes d_activations
  // (gradient of the mean loss over the global batch's real samples,
  // batch.global_samples; masked rows weigh nothing: only the real rows are
  // packed and passed to the model, and the masked rows' d_activations are
  // zero) and updates the dense parameters. Dropout masks are keyed by
  // (training.seed, step, the row's position in the global batch), so they
  // depend neither on the world size nor on the packing. Returns this chip's
  // sum of losses over its real rows; world-size-independent: the global
  // batch's exactly summed loss on rank 0 and 0 on the others, so the
  // trainer's sum over ranks is that loss, bit for bit.
  absl::StatusOr<double> Step(int64_t step, const host::Batch& batch,
                              std::span<const float> activations, std::span<float> d_activations);

  // Click probabilities for `batch` (forward only): probs [batch size x
  // model().num_tasks()] row-major, one per task.
  void Predict(const host::Batch& batch, std::span<const float> activations,
               std::span<float> probs);

  const device::DenseModel& model() const { return *model_; }
  // Samples per exactly summed block (0 when world_size_independent is off).
  int64_t gradient_block_samples() const { return block_; }
  // Threads of the dense step (the calling thread included).
  int gemm_threads() const { return team_->threads(); }

  // Parameters (layout of model().params()), optimizer slots (slot-major) and
  // the optimizer update count, for checkpoints.
  std::span<float> mutable_params() { return model_->params(); }
  std::span<const float> optimizer_slots() const { return slots_; }
  std::span<float> mutable_optimizer_slots() { return slots_; }
  int64_t updates() const { return updates_; }
  void set_updates(int64_t updates) { updates_ = updates; }
  // The world-size-independent sum's predicted exponents for the next step
  // (base/block_sum.h; empty before the first step and when the mode is
  // off), for checkpoints. Setting checks the count and the values
  // (InvalidArgument); empty clears the prediction (the next step measures).
  std::span<const int64_t> predicted_exponents() const { return predicted_; }
  absl::Status set_predicted_exponents(std::span<const int64_t> exps);
  // Steps whose predicted exponents did not fit and were measured again.
  int64_t remeasured_steps() const { return remeasured_steps_; }

 private:
  TensorCoreStage(Communicator& comm, std::unique_ptr<device::ThreadTeam> team,
                  std::unique_ptr<device::DenseModel> model,
                  std::unique_ptr<device::Optimizer> optimizer, int64_t global_batch,
                  uint64_t seed, int64_t block);

  // ForwardBackward over batch rows [begin, end) (first_sample of `key` is
  // the global sample of batch row 0), of the real rows only when some are
  // masked (packed contiguously into the buffers below, gradients scattered
  // back). Returns the loss sum; grads() holds the rows' gradients (none
  // real: the grads are not touched and *ran is false).
  double ForwardBackwardRows(device::DropoutKey key, const host::Batch& batch, int64_t begin,
                             int64_t end, std::span<const float> activations,
                             std::span<float> d_activations, float loss_scale, bool* ran);
  // The world-size-independent step's gradients and loss (see the top).
  absl::StatusOr<double> BlockedForwardBackward(device::DropoutKey key, const host::Batch& batch,
                                                std::span<const float> activations,
                                                std::span<float> d_activations,
                                                float loss_scale);
  // Block b's gradients of `blocks` after KeepBlockGrads / RecomputeBlocks
  // (the last block's are the model's grads).
  std::span<const float> BlockGrads(int64_t b, int64_t blocks) const;
  void KeepBlockGrads(int64_t b);
  // Runs every block that held a real row again, keeping its gradients.
  void RecomputeBlocks(device::DropoutKey key, const host::Batch& batch,
                       std::span<const float> activations, std::span<float> d_activations,
                       float loss_scale);
  // Measured exponents over the kept blocks, then the sum of fixed_'s first
  // `summed` values; the model's grads get the result.
  absl::Status MeasuredSum(int64_t blocks, size_t summed);

  Communicator& comm_;
  std::unique_ptr<device::ThreadTeam> team_;  // before model_, which uses it
  std::unique_ptr<device::DenseModel> model_;
  std::unique_ptr<device::Optimizer> optimizer_;
  std::vector<float> slots_;
  float loss_scale_;
  int64_t global_batch_;
  uint64_t seed_;
  int64_t updates_ = 0;  // optimizer updates so far (Adam's t)
  int64_t block_;        // samples per exactly summed block; 0: off
  // World-size-independent sums: the gradients in shared-exponent fixed
  // point (base/block_sum.h), the loss's exact limbs (base/exact_sum.h) and
  // the count of blocks that did not fit, one all-reduce; the predicted
  // exponents (empty: measure); the measured ones (all-reduced MAX); the
  // gradients of every local block but the last when measuring (blocks x
  // params floats), and which blocks held a real row.
  std::vector<int64_t> fixed_;
  std::vector<int64_t> predicted_;
  std::vector<int64_t> exponents_;
  int64_t remeasured_steps_ = 0;
  std::vector<float> block_grads_;
  std::vector<char> block_ran_;
  int headroom_bits_ = 0;  // ceil(log2(global blocks))
  // Packed real rows of a batch with masked rows (grown once, then reused).
  std::vector<float> packed_dense_;
  std::vector<float> packed_emb_;
  std::vector<float> packed_labels_;
  std::vector<float> packed_d_emb_;
  std::vector<int64_t> packed_rows_;  // each packed row's row in the batch
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_TENSORCORE_STAGE_H_
