#include "device/optimizers/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lemrt::device {

using config::LearningRateScheduleConfig;

LearningRateSchedule::LearningRateSchedule(const LearningRateScheduleConfig& config,
                                           int64_t total_steps)
    : decay_(config.decay()),
      warmup_steps_(config.warmup_steps()),
      decay_start_(config.has_decay_start_step() ? config.decay_start_step()
                                                 : config.warmup_steps()),
      power_(config.power()),
      end_factor_(config.end_factor()) {
  decay_steps_ = config.has_decay_steps() ? config.decay_steps()
                                          : std::max<int64_t>(0, total_steps - decay_start_);
  constant_ = warmup_steps_ == 0 && (decay_ == LearningRateScheduleConfig::CONSTANT ||
                                     decay_steps_ == 0);
}

LearningRateSchedule LearningRateSchedule::ForDense(const config::TrainingConfig& training) {
  if (training.has_dense_learning_rate_schedule()) {
    return LearningRateSchedule(training.dense_learning_rate_schedule(), training.steps());
  }
  if (training.has_learning_rate_schedule()) {
    return LearningRateSchedule(training.learning_rate_schedule(), training.steps());
  }
  return LearningRateSchedule();
}

LearningRateSchedule LearningRateSchedule::ForEmbeddings(const config::TrainingConfig& training) {
  if (training.has_embedding_learning_rate_schedule()) {
    return LearningRateSchedule(training.embedding_learning_rate_schedule(), training.steps());
  }
  if (training.has_learning_rate_schedule()) {
    return LearningRateSchedule(training.learning_rate_schedule(), training.steps());
  }
  return LearningRateSchedule();
}

double LearningRateSchedule::Factor(int64_t step) const {
  if (constant_) return 1.0;
  if (step < warmup_steps_) {
    return static_cast<double>(std::max<int64_t>(step, 0) + 1) / static_cast<double>(warmup_steps_);
  }
  if (decay_ == LearningRateScheduleConfig::CONSTANT || decay_steps_ == 0 || step < decay_start_) {
    return 1.0;
  }
  if (step - decay_start_ >= decay_steps_) return end_factor_;  // (the sum may overflow)
  const double p = static_cast<double>(step - decay_start_) / static_cast<double>(decay_steps_);
  const double e = end_factor_;
  switch (decay_) {
    case LearningRateScheduleConfig::LINEAR:
      return 1.0 - (1.0 - e) * p;
    case LearningRateScheduleConfig::POLYNOMIAL:
      return e + (1.0 - e) * std::pow(1.0 - p, power_);
    case LearningRateScheduleConfig::COSINE:
      return e + (1.0 - e) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
    default:
      return 1.0;
  }
}

}  // namespace lemrt::device
