// Optimizers applied to a span of parameters with their slots: used per
// embedding row by the SparseCores and on the flat dense parameters by the
// TensorCore. Immutable after creation; thread-safe (Apply on disjoint spans
// may run concurrently).
#ifndef LEMRT_DEVICE_OPTIMIZERS_OPTIMIZER_H_
#define LEMRT_DEVICE_OPTIMIZERS_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace lemrt::device {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Slot floats per parameter (0 for SGD, 1 for Adagrad's accumulator).
  virtual int slots_per_param() const = 0;
  // Writes the initial slot values of one group of n parameters (one
  // embedding row, or the whole dense vector), laid out slot-major as in
  // Apply; slots.size() == n * slots_per_param().
  virtual void InitSlots(std::span<float> slots) const = 0;
  // One update of `params` with gradient `grad` (same size); `slots` holds
  // slots_per_param() floats per parameter, laid out slot-major:
  // slots[s * params.size() + i] is slot s of parameter i. `step` is the
  // 1-based number of this update of the parameter set (Adam's t for bias
  // correction; ignored by the others); the caller counts it.
  virtual void Apply(std::span<float> params, std::span<float> slots,
                     std::span<const float> grad, int64_t step) const = 0;
  virtual std::string name() const = 0;
  virtual float learning_rate() const = 0;
};

// SGD: w -= lr * g.
class SgdOptimizer : public Optimizer {
 public:
  explicit SgdOptimizer(float learning_rate) : lr_(learning_rate) {}
  int slots_per_param() const override { return 0; }
  void InitSlots(std::span<float>) const override {}
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step) const override;
  std::string name() const override { return "sgd"; }
  float learning_rate() const override { return lr_; }

 private:
  float lr_;
};

// Adagrad: a += g^2; w -= lr * g / (sqrt(a) + epsilon); a starts at
// initial_accumulator.
class AdagradOptimizer : public Optimizer {
 public:
  AdagradOptimizer(float learning_rate, float initial_accumulator, float epsilon)
      : lr_(learning_rate), initial_(initial_accumulator), epsilon_(epsilon) {}
  int slots_per_param() const override { return 1; }
  void InitSlots(std::span<float> slots) const override;
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step) const override;
  std::string name() const override { return "adagrad"; }
  float learning_rate() const override { return lr_; }

 private:
  float lr_;
  float initial_;
  float epsilon_;
};

// The optimizer `config` describes; SGD when no kind is set (Adam and FTRL
// live in adam.h and ftrl.h). `default_lr` is
// used when config.learning_rate() is unset. The config must be validated.
std::unique_ptr<Optimizer> CreateOptimizer(const config::OptimizerConfig& config,
                                           float default_lr);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_OPTIMIZER_H_
