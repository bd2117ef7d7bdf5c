#include "runtime/observability/run_stats.h"

#include <algorithm>

namespace lemrt::runtime {

void RunStats::StepDone(const Step& step) {
  step_ms_.Add(step.ms);
  train_sec_ += step.ms / 1000.0;
  wait_ms_ += step.forward_wait_ms;
  samples_ += step.samples;
  losses_[steps_run_++ % kKeptLosses] = step.mean_loss;
}

double RunStats::loss_last() const {
  return steps_run_ > 0 ? losses_[(steps_run_ - 1) % kKeptLosses] : 0;
}

double RunStats::loss_mean_tail() const {
  if (steps_run_ == 0) return 0;
  const int64_t n = std::min<int64_t>(kKeptLosses, steps_run_);
  double tail = 0;
  for (int64_t j = steps_run_ - n; j < steps_run_; ++j) tail += losses_[j % kKeptLosses];
  return tail / n;
}

}  // namespace lemrt::runtime
