// The run-statistics sink: the counters a training run accumulates on this
// rank for its summary, in one place. The stages report into it as they
// finish (their time, the step's id counts) and the step loop makes one call
// per step (StepDone: its wall time, wait, samples and loss); the summary
// reads it (runtime/trainer_summary.cc). Timelines, the trace, the metrics
// CSV and per-table counters stay with RunRecorder
// (runtime/observability/run_recorder.h), which needs each stage's
// timestamps on its own thread.
//
// Thread-compatible with one rule the step pipeline keeps: each stage's
// entry is written by one thread only (host, sc_forward, sc_backward and the
// ids by the SparseCore executor; tc and StepDone by the TensorCore thread),
// and the readers run after the pipeline has drained. Allocates nothing
// after construction (the step-time sketch is sized at construction).
#ifndef LEMRT_RUNTIME_OBSERVABILITY_RUN_STATS_H_
#define LEMRT_RUNTIME_OBSERVABILITY_RUN_STATS_H_

#include <array>
#include <cstdint>

#include "base/quantile_sketch.h"

namespace lemrt::runtime {

class RunStats {
 public:
  // The stages whose time the summary's breakdown_ms reports, in its order.
  enum Stage { kHost = 0, kScForward, kTc, kScBackward, kNumStages };
  // One step as the step loop saw it.
  struct Step {
    double ms = 0;               // wall time, from the previous step's end
    double forward_wait_ms = 0;  // waiting for this step's lookups
    int64_t samples = 0;         // real samples of the global batch
    double mean_loss = 0;        // global mean loss over those samples
  };
  // The losses StepDone keeps: the summary's loss_mean_last_10.
  static constexpr int kKeptLosses = 10;

  // `stage` of one step took `ms`.
  void AddStageMs(Stage stage, double ms) { stage_ms_[stage] += ms; }
  // One step's ids on this rank: before and after deduplication, and unique
  // ids over its SparseCores.
  void AddIds(int64_t total, int64_t after_dedup, int64_t unique) {
    ids_total_ += total;
    ids_after_dedup_ += after_dedup;
    unique_ids_ += unique;
  }
  // The step loop's one call per step run.
  void StepDone(const Step& step);

  // Readers (after the pipeline has drained).
  double stage_ms(Stage stage) const { return stage_ms_[stage]; }
  int64_t ids_total() const { return ids_total_; }
  int64_t ids_after_dedup() const { return ids_after_dedup_; }
  int64_t unique_ids() const { return unique_ids_; }
  int64_t steps_run() const { return steps_run_; }
  const base::QuantileSketch& step_ms() const { return step_ms_; }
  double train_sec() const { return train_sec_; }  // sum of the steps' ms, in seconds
  double wait_ms() const { return wait_ms_; }
  int64_t samples() const { return samples_; }
  // The last step's mean loss (0 before any step).
  double loss_last() const;
  // The mean of the last min(kKeptLosses, steps_run) steps' losses, summed
  // oldest first (0 before any step).
  double loss_mean_tail() const;

 private:
  std::array<double, kNumStages> stage_ms_{};
  int64_t ids_total_ = 0;
  int64_t ids_after_dedup_ = 0;
  int64_t unique_ids_ = 0;
  base::QuantileSketch step_ms_;
  std::array<double, kKeptLosses> losses_{};  // step j's in losses_[j % kKeptLosses]
  int64_t steps_run_ = 0;
  double train_sec_ = 0;
  double wait_ms_ = 0;
  int64_t samples_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_RUN_STATS_H_
