// What a run records about itself besides the model: per-step stage times
// (for the end-of-run breakdown, overlap and diagnosis), per-table id
// counters, the optional Chrome trace (--trace_json, bounded to the
// configured steps), the optional metrics CSV (--metrics_csv) and the
// progress line on rank 0. The trainer owns one per rank and calls its hooks
// right after each stage; other components report into it through the
// Report* methods. Thread-safe: hooks may come from the SparseCore executor
// and the TensorCore thread at once (one mutex, a few locks per step).
//
// Steps passed to the hooks count from 0 (as in the trainer); everything
// written for users (trace args, CSV, progress) counts from 1.
//
// Cost when tracing and the CSV are off: a few clock reads and counter
// updates per step plus one pass over the step's COO entries (per-table
// counts). Memory does not grow with the steps: the stage times of at most
// kStepSlots steps in flight, seven fixed-size percentile sketches
// (base/quantile_sketch.h, 50 KiB each) and the busy periods of the overlap
// (BusyTimeAccumulator, 8 KiB), about 0.4 MiB in all, allocated at Create;
// the hooks allocate nothing. With tracing on, about 10 + 2 S events per
// traced step, kept in memory until Finish.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_RUN_RECORDER_H_
#define LEMRT_RUNTIME_OBSERVABILITY_RUN_RECORDER_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/quantile_sketch.h"
#include "host/batch.h"
#include "host/preprocess/coo.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/step/host_prefetcher.h"
#include "runtime/observability/metrics_csv.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/observability/stage_stats.h"
#include "runtime/comm/timed_communicator.h"
#include "runtime/observability/trace_buffer.h"

namespace lemrt::runtime {

// Mean bytes per step (RunRecorder::exchange_bytes_per_step).
struct HostBytesPerStep {
  double within_host = 0;
  double between_hosts = 0;
};

class RunRecorder : public ExchangeObserver, public HostQueueObserver {
 public:
  using Clock = std::chrono::steady_clock;
  enum Stage { kHost = 0, kScForward, kTc, kScBackward, kNumStages };

  // `config` (validated) must outlive the recorder. Opens the metrics CSV on
  // rank 0 (PermissionDenied naming the path). Not collective; call it at the
  // same point on every rank (the trace origin is taken here).
  static absl::StatusOr<std::unique_ptr<RunRecorder>> Create(const config::RunConfig& config,
                                                             int rank, int world_size);

  // --- Stage hooks (training steps only; `step` counts from 0). ---
  // The whole COO of a training step, before any minibatch split, as
  // layout::CountSegmentTables counted it (on a host worker): adds its ids
  // per table and destination SparseCore and keeps its largest partitions
  // (the summary's partition skew).
  void AddPartitionCounts(std::span<const int64_t> segment_table_counts, int local_sparse_cores);
  // Host preprocessing of `step` ran [begin, end) and produced `coo` (its
  // counts are read: ids_total, ids_after_dedup) from `batch`.
  void HostDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                const host::Batch& batch, const layout::PartitionedCoo& coo);
  // The SparseCore forward (all minibatches) ran [begin, end); buffers
  // `minibatches[m]` hold minibatch m's kernel spans. Must be called on the
  // thread that ran the exchanges, right after the forward.
  void ForwardDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                   std::span<const SparseStepBuffers> minibatches);
  void DenseDone(int64_t step, Clock::time_point begin, Clock::time_point end, int64_t samples);
  // As ForwardDone, for the SparseCore backward.
  void BackwardDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                    std::span<const SparseStepBuffers> minibatches);
  // The SparseCore executor waited `wait_ms` for the host queue to hand it
  // `step` (the "host-bound" diagnosis; the summary's host_wait stage).
  void HostQueueWait(int64_t step, double wait_ms);
  // The trainer's loop finished `step` ([begin, end) of its wall time, eval
  // excluded) with global mean loss `loss`: progress line and CSV row on
  // logged steps.
  void StepDone(int64_t step, Clock::time_point begin, Clock::time_point end, double loss);
  // The model after `step` was evaluated (call after StepDone(step)): its
  // metrics go into that step's CSV row.
  void EvalDone(int64_t step, const EvalColumns& eval);

  // --- Reports from other components (any thread). ---
  // The partition limits applied to `table` (ids / unique ids per partition).
  void ReportPartitionLimits(int table, int64_t max_ids, int64_t max_unique_ids);
  // The most unique ids of `table` seen in one partition in one step.
  void ReportMaxUniqueIdsPerPartition(int table, int64_t unique_ids);
  // Ids of `table` sent including padding, for one step.
  void ReportPaddedIds(int table, int64_t ids);
  // A queue's depth changed to `depth` at `t` (a trace counter; ignored when
  // not tracing). `queue` must be a string literal.
  void ReportQueueDepth(const char* queue, Clock::time_point t, int64_t depth);

  // HostQueueObserver: the host queue's depth, a trace counter ("host
  // queue") on traced steps.
  void OnHostQueueDepth(int64_t step, Clock::time_point t, int64_t ready) override;

  // ExchangeObserver: an all-to-all of the SparseCore stage.
  void OnExchange(Clock::time_point begin, Clock::time_point end,
                  const ExchangeBytes& bytes) override;

  // After Finish: the bytes this rank's exchanges sent per training step to
  // other ranks on its host and to ranks on other hosts, means over the steps
  // counted in the stage statistics (0 when none).
  HostBytesPerStep exchange_bytes_per_step() const;

  // Collective, after the last step has drained: fills `s`'s stages, overlap,
  // tables and diagnosis (appending the diagnosis to any already there),
  // writes the merged trace (rank 0) and closes the CSV. File errors are
  // agreed by all ranks. A stage's mean is exact; its p50 and p99 are the
  // nearest-rank percentiles over all chips' steps to within
  // base::QuantileSketch::kRelativeError (0.39%).
  absl::Status Finish(Communicator& comm, summary::RunSummary* s);

  bool tracing() const { return trace_ != nullptr; }

  // Steps whose stage times are held at once: a step's slot is reused by
  // the step kStepSlots later, far beyond the pipeline's depth (a step still
  // incomplete then is left out of the stage statistics).
  static constexpr int kStepSlots = 64;
  // The series of the stage statistics: the stages, then these.
  enum Series { kExchange = kNumStages, kHostWait, kStep, kNumSeries };

 private:
  struct StepTimes {
    int64_t step = -1;  // the step held; -1 = none
    std::array<double, kNumStages> begin_ms{}, end_ms{}, dur_ms{};
    double exchange_ms = 0;
    int64_t sent_within_host = 0, sent_between_hosts = 0;  // exchange bytes
    double host_wait_ms = 0;
    double step_ms = 0;
    int stages_mask = 0;     // bit k: stage k recorded
    bool step_done = false;  // StepDone seen
    bool retired = false;    // counted in the statistics
  };
  struct Exchange {
    Clock::time_point begin, end;
    ExchangeBytes bytes;
  };

  // Locks mu_; on destruction adds the time since construction (lock wait
  // included) to self_ms_, the recorder's own cost.
  class TimedLock {
   public:
    explicit TimedLock(RunRecorder& r);
    ~TimedLock();

   private:
    RunRecorder& r_;
    Clock::time_point begin_;
  };

  RunRecorder(const config::RunConfig& config, int rank, int world_size);
  bool Traced(int64_t step) const;
  double Ms(Clock::time_point t) const;
  // The slot of `step`, claimed for it if it holds an older step (retiring
  // or dropping that one); null for a step already past (or negative).
  StepTimes* SlotLocked(int64_t step);
  // Counts `t` in the statistics once all its stages are in (and, unless
  // `final`, its StepDone too).
  void RetireIfCompleteLocked(StepTimes& t, bool final);
  void StageLocked(int64_t step, Stage stage, Clock::time_point begin, Clock::time_point end);
  void SparseDone(int64_t step, Stage stage, Clock::time_point begin, Clock::time_point end,
                  std::span<const SparseStepBuffers> minibatches);
  MetricsRow WindowRowLocked(int64_t step, double loss) const;
  absl::Status FlushRowLocked();
  void AddQueueCounters();
  absl::Status FinishTables(Communicator& comm, summary::RunSummary* s);
  absl::Status FinishStages(Communicator& comm, summary::RunSummary* s);

  const config::RunConfig& config_;
  const int rank_;
  const int num_tables_;
  const int64_t total_sparse_cores_;
  const int sparse_cores_per_chip_;
  const Clock::time_point origin_;
  std::vector<int> feature_table_;
  std::unique_ptr<TraceBuffer> trace_;  // null when not tracing
  int64_t trace_first_ = 0, trace_last_ = -1;  // traced steps, from 0, inclusive
  std::unique_ptr<MetricsCsv> csv_;     // rank 0 with --metrics_csv only

  mutable std::mutex mu_;
  std::vector<StepTimes> slots_;  // kStepSlots; step j in slot j % kStepSlots
  // Over the retired (complete) steps: per series, and the overlap.
  std::vector<base::QuantileSketch> series_;  // kNumSeries
  int64_t retired_steps_ = 0;
  int64_t retired_within_host_ = 0, retired_between_hosts_ = 0;  // exchange bytes sent
  double stage_sum_ms_ = 0;
  BusyTimeAccumulator busy_;
  // Traced steps' (sc_forward end, tc begin), for the lookup-queue counter.
  std::vector<std::pair<double, double>> traced_handovers_;
  // Exchanges since the last SparseDone (SparseCore executor thread only).
  std::vector<Exchange> pending_exchanges_;
  // Per table; partition_ids_ is [table][global SC].
  std::vector<int64_t> table_ids_, table_after_dedup_, table_unique_, table_max_partition_;
  std::vector<int64_t> partition_ids_;
  std::vector<int64_t> limit_ids_, limit_unique_, max_unique_, padded_;  // -1 = not reported
  // Progress / CSV window: steps done since the last row, and the stage
  // times of the steps retired since then (with pipelining a step's update
  // may retire after its row).
  int64_t window_steps_ = 0;
  double window_step_ms_ = 0;
  int64_t window_complete_ = 0;
  std::array<double, kNumStages + 1> window_stage_ms_{};  // + exchange
  std::optional<MetricsRow> pending_row_;
  absl::Status csv_status_;  // first CSV write error
  double self_ms_ = 0;       // time inside the hooks
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_RUN_RECORDER_H_
