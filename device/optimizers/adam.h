// Adam with bias correction, for dense parameters and (lazily, only the rows a
// step touches) for embedding rows. Immutable; thread-safe.
#ifndef LEMRT_DEVICE_OPTIMIZERS_ADAM_H_
#define LEMRT_DEVICE_OPTIMIZERS_ADAM_H_

#include "device/optimizers/optimizer.h"

namespace lemrt::device {

// Slots: m (first moment) then v (second moment), both starting at 0.
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + epsilon)
// with t = `step` of Apply (1 for the first update). Weight decay: L2 adds
// weight_decay * w to g before the moments; decoupled (AdamW) subtracts
// lr * weight_decay * w from w beside the step.
class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(const OptimizerOptions& options, float beta1, float beta2, float epsilon)
      : Optimizer(options), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  AdamOptimizer(float learning_rate, float beta1, float beta2, float epsilon)
      : AdamOptimizer(OptimizerOptions::Constant(learning_rate), beta1, beta2, epsilon) {}
  int slots_per_param() const override { return 2; }
  void InitSlots(std::span<float> slots) const override;
  // Precondition: step >= 1.
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step, float learning_rate) const override;
  std::string name() const override { return "adam"; }

 private:
  float beta1_;
  float beta2_;
  float epsilon_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_ADAM_H_
