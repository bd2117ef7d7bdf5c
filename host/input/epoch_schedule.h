// Which training rows each step reads (docs/data.md "Epochs"). An epoch is
// one pass over the N rows in the epoch's order; global batch b of an epoch
// is positions [b G, (b + 1) G) of that order (G = global batch), and rank r
// of W takes the contiguous slice [b G + r G / W, b G + (r + 1) G / W). The
// schedule depends on N and G only, so a file trains the same model at every
// world size (up to the order of floating-point sums). The last batch of an
// epoch holds N mod G rows when G does not divide N: it is trained with the
// missing rows masked, or left out (drop_last_partial_batch). Immutable.
#ifndef LEMRT_HOST_INPUT_EPOCH_SCHEDULE_H_
#define LEMRT_HOST_INPUT_EPOCH_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class EpochSchedule {
 public:
  // Precondition: rows >= 0, global_batch > 0.
  EpochSchedule(int64_t rows, int64_t global_batch, bool drop_last);

  int64_t rows() const { return rows_; }
  int64_t global_batch() const { return global_batch_; }
  // ceil(N / G), or floor(N / G) when the partial batch is dropped.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // Rows an epoch trains: N, or G floor(N / G) when dropping.
  int64_t rows_per_epoch() const;

  struct Step {
    int64_t epoch = 0;
    int64_t first = 0;  // position in the epoch's order of the batch's first row
    int64_t count = 0;  // rows in the global batch (G, or N mod G for the last)
  };
  // Precondition: steps_per_epoch() > 0, step >= 0.
  Step At(int64_t step) const;

 private:
  int64_t rows_;
  int64_t global_batch_;
  int64_t steps_per_epoch_;
};

// The steps a run trains: training.steps when epochs is unset; epochs x
// steps_per_epoch when only epochs is set; the smaller of the two when both
// are. `schedule` is null for data without an end (synthetic). Errors:
// InvalidArgument when an epoch has no step (fewer rows than one global
// batch with drop_last_partial_batch, or no rows).
absl::StatusOr<int64_t> ResolveTrainingSteps(const config::TrainingConfig& training,
                                             const EpochSchedule* schedule);

// The rows of each epoch in the order they are read: with window w > 0 the
// N rows are cut into consecutive windows of w rows (the last may be
// shorter), read in file order, and the rows of window k are permuted by a
// Fisher-Yates shuffle drawn from (seed, epoch, k) alone; w = 0 is file
// order. Thread-compatible (caches the last window's permutation).
class SampleOrder {
 public:
  SampleOrder(int64_t rows, int64_t window, uint64_t seed);

  // The row at `position` (0 <= position < rows) of epoch `epoch`'s order.
  int64_t Row(int64_t epoch, int64_t position);
  // The window holding `position` (its rows are [window_begin, window_end)).
  int64_t window() const { return window_; }
  int64_t WindowOf(int64_t position) const { return window_ > 0 ? position / window_ : 0; }

 private:
  int64_t rows_;
  int64_t window_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  int64_t cached_window_ = -1;
  std::vector<int64_t> perm_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_EPOCH_SCHEDULE_H_
