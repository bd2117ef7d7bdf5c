// Row-wise Adagrad for embedding rows: FBGEMM's exact row-wise Adagrad
// (TorchRec's default table optimizer). One accumulator float per row instead
// of one per parameter. Immutable; thread-safe.
#ifndef LEMRT_DEVICE_OPTIMIZERS_ROWWISE_ADAGRAD_H_
#define LEMRT_DEVICE_OPTIMIZERS_ROWWISE_ADAGRAD_H_

#include "device/optimizers/optimizer.h"

namespace lemrt::device {

// Slots: one float per row (row_slots() = 1), the accumulator a, starting at
// initial_accumulator. One update of a row of n floats with gradient g:
//   g' = g + weight_decay * w        (L2 weight decay; g' = g otherwise)
//   a += sum_i(g'_i^2) / n           (the mean square of the row's gradient)
//   w -= lr / (sqrt(a) + epsilon) * g'
// and with decoupled weight decay w -= lr * weight_decay * w beside it. The
// sum of squares is formed in kElementBlock lanes (element i adds to lane
// i % kElementBlock, in element order) which are then added in lane order: a
// fixed order, so results are deterministic and the loop vectorises.
class RowwiseAdagradOptimizer : public Optimizer {
 public:
  RowwiseAdagradOptimizer(const OptimizerOptions& options, float initial_accumulator,
                          float epsilon)
      : Optimizer(options), initial_(initial_accumulator), epsilon_(epsilon) {}
  RowwiseAdagradOptimizer(float learning_rate, float initial_accumulator, float epsilon)
      : RowwiseAdagradOptimizer(OptimizerOptions::Constant(learning_rate), initial_accumulator, epsilon) {}
  int slots_per_param() const override { return 0; }
  int row_slots() const override { return 1; }
  void InitSlots(std::span<float> slots) const override;
  // slots.size() == 1.
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step, float learning_rate) const override;
  std::string name() const override { return "rowwise_adagrad"; }

 private:
  float initial_;
  float epsilon_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_ROWWISE_ADAGRAD_H_
