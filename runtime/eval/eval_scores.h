// Scoring an eval set across ranks (docs/data.md "Evaluation"): each rank
// keeps the scores of its own slice of every eval chunk (real rows only,
// Batch::mask) with their eval row numbers; at the end rank 0 gathers them
// all, puts them in eval row order, and computes the metrics, which every
// rank then receives. So the numbers are the same at every world size and
// batch size. Memory: each rank holds 20 bytes per scored row of its own
// slices (12 more per extra task); rank 0 additionally 33 bytes per row
// (+ 16 per extra task) of the whole eval set while
// it gathers and orders (e.g. 0.9 GB for 27M rows). Thread-compatible.
#ifndef LEMRT_RUNTIME_EVAL_EVAL_SCORES_H_
#define LEMRT_RUNTIME_EVAL_EVAL_SCORES_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "host/batch.h"
#include "runtime/comm/communicator.h"
#include "runtime/observability/metrics_csv.h"

namespace lemrt::runtime {

// AUC and log loss are NaN where they are undefined: both when no row is
// labelled (an empty eval set, training.eval_samples: 0), the AUC when every
// labelled row has one class (no positive, label > 0.5, or no negative).
// NE (normalized entropy) is the log loss over the entropy of the labelled
// rows' base rate (base/auc.h); NaN when that is 0 (one class, no rows).
// Calibration is the mean predicted probability over the mean label; NaN
// when the labels sum to 0. GAUC is NaN without a group feature or when no
// group holds both classes. A default EvalResult is no evaluation (a run
// stopped by a signal skips its final one): no rows, every metric undefined.
struct EvalResult {
  static constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
  double auc = kUndefined;          // over the labelled rows; NaN when undefined
  double logloss = kUndefined;      // over the labelled rows; NaN when undefined
  double ne = kUndefined;           // logloss / entropy of the base rate; NaN when undefined
  double calibration = kUndefined;  // mean probability / mean label; NaN when undefined
  double gauc = kUndefined;  // group AUC (EvalScores::set_group_feature); NaN when undefined
  int64_t gauc_groups = 0;  // groups averaged (holding both classes)
  int64_t samples = 0;   // rows scored
  int64_t labelled = 0;  // rows with a label (all of them but for lemrt_predict)
  bool one_class = false;  // the labelled rows have one class
  double teacher_auc = -1;  // < 0 when the data has no teacher
  double teacher_logloss = -1;
  // Multi-task models (EvalScores::set_tasks with >= 2 names): each task's
  // metrics over the rows holding its label, named (`task`), in task order;
  // the fields above are then the first task's. Empty for one task.
  std::string task;
  std::vector<EvalResult> tasks;
};

// Why the AUC is undefined ("AUC is undefined: the eval set has one class"),
// or "" when it is defined; for log lines and tools.
std::string UndefinedMetricsReason(const EvalResult& e);

// "auc 0.7312  logloss 0.51234  ne 0.86120  calibration 1.0123  gauc 0.6512
// (803 groups)  (4096 samples)", with "auc absent" / "logloss absent" and the
// reason where a metric is undefined; NE, calibration and GAUC only where
// defined. Multi-task: one such part per task, "task click: auc ...; task
// conversion: auc ... (1200 labelled)", the labelled rows where fewer than
// the samples.
std::string FormatEvalMetrics(const EvalResult& e);

// The metrics CSV's columns of `e` (runtime/observability/metrics_csv.h),
// each task's too.
EvalColumns MetricsColumns(const EvalResult& e);

// The scored eval rows, in row order: n rows, T = tasks probabilities and
// labels each.
struct Predictions {
  int tasks = 1;
  std::vector<int64_t> rows;  // [n] 0-based rows of the eval set (its files' rows in order)
  std::vector<float> probabilities;  // [n x T] row-major
  std::vector<float> labels;         // [n x T]; NaN: the row has none for that task
};

class EvalScores {
 public:
  // The tasks' names (model.tasks), one per probability and label of a
  // row; default one unnamed task. Every rank sets the same value.
  void set_tasks(std::vector<std::string> names) { tasks_ = std::move(names); }
  int num_tasks() const { return static_cast<int>(tasks_.size()); }

  // GAUC groups rows by the first id (table row) of feature `feature` (an
  // index into config.features(); rows without one are in no group); -1 (the
  // default) computes no GAUC. Every rank sets the same value.
  void set_group_feature(int feature) { group_feature_ = feature; }

  void Clear();
  // Adds the real rows of `batch` (row i is eval row first_row + i) with
  // their predicted probabilities `probs` ([batch.num_samples x
  // num_tasks()]; batch.num_tasks == num_tasks()).
  void Add(const host::Batch& batch, std::span<const float> probs, int64_t first_row);

  // Collective: gathers every rank's scores onto rank 0 (one all-to-all of
  // counts, then one all-to-all-v per array: 12 + 8 x tasks bytes per row
  // to rank 0, 8 more with a group feature), orders them by row, computes
  // AUC, log loss, NE, calibration, GAUC (per task) and (with `has_teacher`)
  // the teacher's AUC and log loss there, in row order, and broadcasts them.
  // On rank 0, `predictions` (when not null) receives every scored row in
  // row order.
  absl::StatusOr<EvalResult> Finish(Communicator& comm, bool has_teacher,
                                    Predictions* predictions) const;

 private:
  std::vector<int64_t> rows_;
  std::vector<float> probs_;
  std::vector<float> labels_;
  std::vector<float> teacher_;
  std::vector<int64_t> groups_;  // with a group feature: the group key per row, -1 for none
  int group_feature_ = -1;
  std::vector<std::string> tasks_ = {""};
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_EVAL_EVAL_SCORES_H_
