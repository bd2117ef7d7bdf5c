#include "host/input/epoch_schedule.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_format.h"
#include "base/random.h"
#include "glog/logging.h"

namespace lemrt::host {

EpochSchedule::EpochSchedule(int64_t rows, int64_t global_batch, bool drop_last)
    : rows_(rows), global_batch_(global_batch) {
  CHECK_GE(rows, 0);
  CHECK_GT(global_batch, 0);
  steps_per_epoch_ = drop_last ? rows / global_batch : (rows + global_batch - 1) / global_batch;
}

int64_t EpochSchedule::rows_per_epoch() const {
  return std::min(rows_, steps_per_epoch_ * global_batch_);
}

EpochSchedule::Step EpochSchedule::At(int64_t step) const {
  CHECK_GT(steps_per_epoch_, 0);
  CHECK_GE(step, 0);
  Step s;
  s.epoch = step / steps_per_epoch_;
  s.first = (step % steps_per_epoch_) * global_batch_;
  s.count = std::min(global_batch_, rows_ - s.first);
  return s;
}

absl::StatusOr<int64_t> ResolveTrainingSteps(const config::TrainingConfig& training,
                                             const EpochSchedule* schedule) {
  if (schedule == nullptr) return training.steps();
  if (schedule->steps_per_epoch() == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the training files have %d rows, %s, so an epoch has no step%s",
        schedule->rows(),
        schedule->rows() == 0 ? "none" : absl::StrFormat("fewer than one global batch of %d",
                                                         schedule->global_batch()),
        schedule->rows() == 0 ? "" : " (drop_last_partial_batch is set)"));
  }
  if (!training.has_epochs()) return training.steps();
  if (training.epochs() > std::numeric_limits<int64_t>::max() / schedule->steps_per_epoch()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "training.epochs: %d epochs of %d steps are more steps than a 64-bit count holds",
        training.epochs(), schedule->steps_per_epoch()));
  }
  const int64_t by_epochs = training.epochs() * schedule->steps_per_epoch();
  return training.has_steps() ? std::min(training.steps(), by_epochs) : by_epochs;
}

SampleOrder::SampleOrder(int64_t rows, int64_t window, uint64_t seed)
    : rows_(rows), window_(window), seed_(seed) {}

int64_t SampleOrder::Row(int64_t epoch, int64_t position) {
  DCHECK(position >= 0 && position < rows_);
  if (window_ <= 0) return position;
  const int64_t window = position / window_;
  const int64_t first = window * window_;
  if (epoch != cached_epoch_ || window != cached_window_) {
    const int64_t len = std::min(window_, rows_ - first);
    perm_.resize(len);
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    base::CounterRng rng(base::HashKeys({seed_, 0x5348554646ULL /* "SHUFF" */,
                                         static_cast<uint64_t>(epoch),
                                         static_cast<uint64_t>(window)}));
    for (int64_t i = len - 1; i > 0; --i) std::swap(perm_[i], perm_[rng.NextBelow(i + 1)]);
    cached_epoch_ = epoch;
    cached_window_ = window;
  }
  return first + perm_[position - first];
}

}  // namespace lemrt::host
