// The learning-rate schedule of one kind of parameter (dense or embedding):
// the factor its optimizers' base learning rates are multiplied by at each
// training step, a pure function of the step (config.proto documents the
// formulas: linear warm-up, then constant, linear, polynomial or cosine
// decay). Immutable value; thread-safe.
#ifndef LEMRT_DEVICE_OPTIMIZERS_LR_SCHEDULE_H_
#define LEMRT_DEVICE_OPTIMIZERS_LR_SCHEDULE_H_

#include <cstdint>

#include "proto/config.pb.h"

namespace lemrt::device {

class LearningRateSchedule {
 public:
  // Constant factor 1 (no schedule).
  LearningRateSchedule() = default;
  // `config` with its unset fields resolved against a run of `total_steps`
  // steps (decay_start_step = warmup_steps, decay_steps = total_steps -
  // decay_start_step). The config must be validated (warmup_steps >= 0,
  // decay_start_step >= warmup_steps, decay_steps > 0 when decaying, power
  // > 0, end_factor in [0, 1]).
  LearningRateSchedule(const config::LearningRateScheduleConfig& config, int64_t total_steps);

  // The schedules of a run: training.dense_learning_rate_schedule, else
  // training.learning_rate_schedule, else constant; embedding alike.
  static LearningRateSchedule ForDense(const config::TrainingConfig& training);
  static LearningRateSchedule ForEmbeddings(const config::TrainingConfig& training);

  // The factor at 0-based training step `step` (steps past the end keep the
  // last factor). Exactly 1 outside warm-up and decay, so constant phases
  // run at the base rate bit for bit.
  double Factor(int64_t step) const;
  // base x Factor(step), rounded to float.
  float Rate(float base, int64_t step) const {
    return constant_ ? base : static_cast<float>(base * Factor(step));
  }
  bool constant() const { return constant_; }

 private:
  bool constant_ = true;
  config::LearningRateScheduleConfig::Decay decay_ = config::LearningRateScheduleConfig::CONSTANT;
  int64_t warmup_steps_ = 0;
  int64_t decay_start_ = 0;
  int64_t decay_steps_ = 0;
  double power_ = 2;
  double end_factor_ = 0;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_OPTIMIZERS_LR_SCHEDULE_H_
