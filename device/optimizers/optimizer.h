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
#include "device/optimizers/lr_schedule.h"
#include "proto/config.pb.h"

namespace lemrt::device {

// How weight decay enters an update (config.proto WeightDecayMode).
enum class WeightDecay {
  kNone,       // weight_decay 0: the update without any decay term
  kL2,         // g + weight_decay * w replaces g
  kDecoupled,  // w -= lr * weight_decay * w next to the step on g
};

// What every optimizer has: the base learning rate, its schedule and the
// weight decay.
struct OptimizerOptions {
  float learning_rate = 0.1f;
  LearningRateSchedule schedule;
  float weight_decay = 0.0f;  // >= 0; 0 = none
  bool decoupled_weight_decay = false;

  // A constant `learning_rate`, no weight decay.
  static OptimizerOptions Constant(float learning_rate) {
    OptimizerOptions o;
    o.learning_rate = learning_rate;
    return o;
  }
};

// Optimizer state layout. One parameter group (one embedding row of dim
// floats, or the whole dense vector) has SlotFloats(n) floats of state:
//
//   | slot 0 of params 0..n-1 | slot 1 ... | per-row slots (row_slots()) |
//
// slots_per_param() x n per-parameter floats, slot-major, then row_slots()
// floats for the group as a whole (row-wise Adagrad's accumulator).
class Optimizer {
 public:
  explicit Optimizer(const OptimizerOptions& options) : options_(options) {}
  virtual ~Optimizer() = default;

  // Slot floats per parameter (0 for SGD, 1 for Adagrad's accumulator).
  virtual int slots_per_param() const = 0;
  // Slot floats per parameter group (1 for row-wise Adagrad, else 0).
  virtual int row_slots() const { return 0; }
  // Floats of optimizer state of one group of n parameters.
  int64_t SlotFloats(int64_t n) const { return n * slots_per_param() + row_slots(); }
  // Writes the initial slot values of one group (laid out as above;
  // slots.size() == SlotFloats(n)).
  virtual void InitSlots(std::span<float> slots) const = 0;
  // One update of `params` with gradient `grad` (same size n) at learning
  // rate `learning_rate` (LearningRateAt(step), which callers compute once
  // per step); `slots` holds SlotFloats(n) floats laid out as above. `step`
  // is the 1-based number of this update of the parameter set (Adam's t for
  // bias correction; ignored by the others); the caller counts it.
  virtual void Apply(std::span<float> params, std::span<float> slots,
                     std::span<const float> grad, int64_t step, float learning_rate) const = 0;
  virtual std::string name() const = 0;

  // The base learning rate, and the scheduled one for update `step`
  // (1-based: training step step - 1).
  float learning_rate() const { return options_.learning_rate; }
  float LearningRateAt(int64_t step) const {
    return options_.schedule.Rate(options_.learning_rate, step - 1);
  }
  float weight_decay() const { return options_.weight_decay; }
  WeightDecay weight_decay_kind() const {
    if (options_.weight_decay == 0.0f) return WeightDecay::kNone;
    return options_.decoupled_weight_decay ? WeightDecay::kDecoupled : WeightDecay::kL2;
  }

 private:
  OptimizerOptions options_;
};

// SGD: w -= lr * g.
class SgdOptimizer : public Optimizer {
 public:
  explicit SgdOptimizer(const OptimizerOptions& options) : Optimizer(options) {}
  explicit SgdOptimizer(float learning_rate) : Optimizer(OptimizerOptions::Constant(learning_rate)) {}
  int slots_per_param() const override { return 0; }
  void InitSlots(std::span<float>) const override {}
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step, float learning_rate) const override;
  std::string name() const override { return "sgd"; }
};

// Adagrad: a += g^2; w -= lr * g / (sqrt(a) + epsilon); a starts at
// initial_accumulator.
class AdagradOptimizer : public Optimizer {
 public:
  AdagradOptimizer(const OptimizerOptions& options, float initial_accumulator, float epsilon)
      : Optimizer(options), initial_(initial_accumulator), epsilon_(epsilon) {}
  AdagradOptimizer(float learning_rate, float initial_accumulator, float epsilon)
      : AdagradOptimizer(OptimizerOptions::Constant(learning_rate), initial_accumulator, epsilon) {}
  int slots_per_param() const override { return 1; }
  void InitSlots(std::span<float> slots) const override;
  void Apply(std::span<float> params, std::span<float> slots, std::span<const float> grad,
             int64_t step, float learning_rate) const override;
  std::string name() const override { return "adagrad"; }

 private:
  float initial_;
  float epsilon_;
};

// The optimizer `config` describes; SGD when no kind is set (Adam, FTRL and
// row-wise Adagrad live in adam.h, ftrl.h and rowwise_adagrad.h).
// `default_lr` is used when config.learning_rate() is unset; `schedule`
// scales it per step. The config must be validated.
std::unique_ptr<Optimizer> CreateOptimizer(const config::OptimizerConfig& config,
                                           float default_lr,
                                           const LearningRateSchedule& schedule = {});

// The optimizer of table `table` of a run (training.embedding_learning_rate
// and the embedding schedule), and the dense one (dense_learning_rate and
// the dense schedule).
std::unique_ptr<Optimizer> CreateTableOptimizer(const config::RunConfig& config, int table);
std::unique_ptr<Optimizer> CreateDenseOptimizer(const config::RunConfig& config);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_OPTIMIZER_H_
