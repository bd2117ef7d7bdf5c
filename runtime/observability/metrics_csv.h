// Metrics over time: one CSV row per logged or evaluated step, written by rank
// 0 while the run goes (each row flushed, so a live run can be plotted), and
// the progress line printed at the same steps. Thread-compatible.
//
// Columns (kMetricsCsvHeader): step (counted from 1), loss (global mean BCE of
// that step), samples_per_sec (over the steps since the previous row, eval
// excluded), eval_auc and eval_logloss (empty when the step was not
// evaluated), then mean ms per step since the previous row of host,
// sc_forward, tc, sc_backward, exchange (inside the SparseCore stages) and the
// whole step, on rank 0; then the learning rates that step ran at (after the
// schedules: device/optimizers/lr_schedule.h): the dense optimizer's, and
// training.embedding_learning_rate's (tables with their own learning_rate
// are scaled by the same factor); then eval_ne, eval_calibration and eval_gauc
// (runtime/eval/eval_scores.h; empty when not evaluated or undefined).
// Multi-task models (model.tasks) add five columns per task, in task order:
// eval_auc_NAME, eval_logloss_NAME, eval_ne_NAME, eval_calibration_NAME,
// eval_gauc_NAME (that task's metrics over the rows holding its label; the
// eval_* columns before them are the first task's).
#ifndef LEMRT_RUNTIME_OBSERVABILITY_METRICS_CSV_H_
#define LEMRT_RUNTIME_OBSERVABILITY_METRICS_CSV_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lemrt::runtime {

inline constexpr char kMetricsCsvHeader[] =
    "step,loss,samples_per_sec,eval_auc,eval_logloss,host_ms,sc_forward_ms,tc_ms,"
    "sc_backward_ms,exchange_ms,step_ms,dense_lr,embedding_lr,eval_ne,eval_calibration,eval_gauc";

struct MetricsRow {
  int64_t step = 0;
  double loss = 0;
  double samples_per_sec = 0;
  std::optional<double> eval_auc;
  std::optional<double> eval_logloss;
  double host_ms = 0, sc_forward_ms = 0, tc_ms = 0, sc_backward_ms = 0, exchange_ms = 0;
  double step_ms = 0;
  double dense_lr = 0, embedding_lr = 0;
  std::optional<double> eval_ne;
  std::optional<double> eval_calibration;
  std::optional<double> eval_gauc;
  // Multi-task: 5 per task (auc, logloss, ne, calibration, gauc) when the
  // step was evaluated; empty otherwise.
  std::vector<std::optional<double>> eval_tasks;
};

// One evaluation's numbers for the CSV row of its step (runtime/eval/eval_scores.h
// EvalResult); NaN where undefined (NE, calibration and GAUC are then empty).
struct EvalColumns {
  double auc = 0;
  double logloss = 0;
  double ne = 0;
  double calibration = 0;
  double gauc = 0;
  // Multi-task: each task's, in task order (their `tasks` empty); empty for
  // one task.
  std::vector<EvalColumns> tasks;
};

// The row as CSV text (no newline), with `tasks` x 5 task columns (empty
// where row.eval_tasks has none).
std::string MetricsCsvLine(const MetricsRow& row, int tasks = 0);

// The header: kMetricsCsvHeader and the task columns of `tasks` (names).
std::string MetricsCsvHeader(const std::vector<std::string>& tasks);

class MetricsCsv {
 public:
  // Creates (truncates) `path` and writes the header (with the columns of
  // multi-task `tasks`, named; empty for one task). PermissionDenied naming
  // the path when it cannot be written.
  static absl::StatusOr<std::unique_ptr<MetricsCsv>> Open(
      const std::string& path, const std::vector<std::string>& tasks = {});

  // Appends and flushes one row. Internal naming the path on a write error.
  absl::Status Append(const MetricsRow& row);

 private:
  MetricsCsv(std::string path, std::ofstream out, int tasks)
      : path_(std::move(path)), out_(std::move(out)), tasks_(tasks) {}
  std::string path_;
  std::ofstream out_;
  int tasks_;
};

// "step 50/500  loss 0.61234  samples/s 123456  ETA 1m05s": the progress line
// after `step` of `total_steps` steps, the ETA from `mean_step_sec` (eval
// time not included).
std::string ProgressLine(int64_t step, int64_t total_steps, double loss, double samples_per_sec,
                         double mean_step_sec);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_METRICS_CSV_H_
