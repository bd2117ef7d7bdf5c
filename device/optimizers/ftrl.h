// FTRL-proximal for embedding rows, in TensorFlow's parameterisation.
// Immutable; thread-safe.
#ifndef LEMRT_DEVICE_OPTIMIZERS_FTRL_H_
#define LEMRT_DEVICE_OPTIMIZERS_FTRL_H_

#include "device/optimizers/optimizer.h"

namespace lemrt::device {

// Slots: n (accumulator, starts at initial_accumulator) then z (linear, starts
// at 0). With p = learning_rate_power (-0.5 is the usual 1/sqrt schedule):
//   n' = n + g^2
//   z += g - (n'^-p - n^-p) / lr * w
//   w  = |z| <= l1 ? 0 : (sign(z) l1 - z) / ((n'^-p + beta) / lr + 2 l2)
//   n  = n'
// (lr = the scheduled rate of the step; no weight decay: l2 is FTRL's own.)
class FtrlOptimizer : public Optimizer {
 public:
  FtrlOptimizer(float learning_rate, float learning_rate_power, float initial_accumulator,
                float l1, float l2, float beta, const LearningRateSchedule& schedule = {})
      : Optimizer(WithSchedule(learning_rate, schedule)),
        power_(learning_rate_power),
        initial_(initial_accumulator),
        l1_(l1),
        l2_(l2),
        beta_(beta) {}
  int slots_per_param() const override { return 2; }
  void InitSlots(std::span<float> slots) const override;
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step, float learning_rate) const override;
  std::string name() const override { return "ftrl"; }

 private:
  static OptimizerOptions WithSchedule(float learning_rate, const LearningRateSchedule& schedule) {
    OptimizerOptions o = OptimizerOptions::Constant(learning_rate);
    o.schedule = schedule;
    return o;
  }
  float power_;
  float initial_;
  float l1_;
  float l2_;
  float beta_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_FTRL_H_
