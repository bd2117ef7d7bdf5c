#include "runtime/eval/eval_scores.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/auc.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::runtime {
namespace {

// NE, calibration and (with `groups`) GAUC and its group count of the
// labelled rows into out[0..3]; each NaN where undefined.
void AddCalibrationMetrics(std::span<const float> probs, std::span<const float> labels,
                           std::span<const int64_t> groups, double logloss, double* out) {
  const double entropy = base::BaseRateEntropy(labels);
  out[0] = entropy > 0 ? logloss / entropy : std::numeric_limits<double>::quiet_NaN();
  double predicted = 0, actual = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    predicted += probs[i];
    actual += labels[i];
  }
  out[1] = actual > 0 ? predicted / actual : std::numeric_limits<double>::quiet_NaN();
  if (!groups.empty()) {
    const base::GroupAucResult g = base::GroupAuc(probs, labels, groups);
    out[2] = g.gauc;
    out[3] = static_cast<double>(g.groups);
  }
}

// One task's metrics, as Finish broadcasts them.
enum TaskValue { kAuc, kLogLoss, kLabelled, kOneClass, kNe, kCalibration, kGauc, kGaucGroups };
constexpr int kTaskValues = 8;
// Before the tasks' values: rows scored, the teacher's AUC and log loss.
constexpr int kRunValues = 3;

// Task t's metrics over the rows holding its label (probs and labels
// [n x tasks], in row order; groups [n] or empty); with `teacher` ([n] or
// empty) the teacher's AUC and log loss into teacher_out[0..1].
void TaskMetrics(std::span<const float> probs, std::span<const float> labels, int tasks, int t,
                 std::span<const int64_t> groups, std::span<const float> teacher, double* out,
                 double* teacher_out) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::fill_n(out, kTaskValues, kNaN);
  out[kLabelled] = 0;
  out[kOneClass] = 0;
  out[kGaucGroups] = 0;
  std::vector<float> scored, truth, teacher_scored;
  std::vector<int64_t> scored_groups;
  const size_t rows = labels.size() / tasks;
  for (size_t i = 0; i < rows; ++i) {
    const float y = labels[i * tasks + t];
    if (std::isnan(y)) continue;
    scored.push_back(probs[i * tasks + t]);
    truth.push_back(y);
    if (!teacher.empty()) teacher_scored.push_back(teacher[i]);
    if (!groups.empty()) scored_groups.push_back(groups[i]);
  }
  out[kLabelled] = static_cast<double>(scored.size());
  const int64_t positives =
      std::count_if(truth.begin(), truth.end(), [](float y) { return y > 0.5f; });
  const bool one_class = positives == 0 || positives == static_cast<int64_t>(truth.size());
  out[kOneClass] = one_class && !truth.empty() ? 1 : 0;
  if (scored.empty()) return;
  // Base::Auc gives 0.5 for one class; it is undefined, reported absent.
  out[kAuc] = one_class ? kNaN : base::Auc(scored, truth);
  out[kLogLoss] = base::LogLoss(scored, truth);
  double more[4] = {kNaN, kNaN, kNaN, 0};
  AddCalibrationMetrics(scored, truth, scored_groups, out[kLogLoss], more);
  out[kNe] = more[0];
  out[kCalibration] = more[1];
  out[kGauc] = more[2];
  out[kGaucGroups] = more[3];
  if (!teacher.empty()) {
    teacher_out[0] = base::Auc(teacher_scored, truth);
    teacher_out[1] = base::LogLoss(teacher_scored, truth);
  }
}

// `v` (a gathered per-row array of `width` values per row) in `order`.
template <typename T>
void Permute(const std::vector<int64_t>& order, int width, std::vector<T>& v) {
  std::vector<T> out(order.size() * width);
  for (size_t i = 0; i < order.size(); ++i) {
    std::copy_n(v.begin() + order[i] * width, width, out.begin() + i * width);
  }
  v.swap(out);
}

EvalResult TaskResult(const double* run, const double* task) {
  EvalResult r;
  r.samples = static_cast<int64_t>(run[0]);
  r.auc = task[kAuc];
  r.logloss = task[kLogLoss];
  r.labelled = static_cast<int64_t>(task[kLabelled]);
  r.one_class = task[kOneClass] != 0;
  r.ne = task[kNe];
  r.calibration = task[kCalibration];
  r.gauc = task[kGauc];
  r.gauc_groups = static_cast<int64_t>(task[kGaucGroups]);
  return r;
}

}  // namespace

void EvalScores::Clear() {
  rows_.clear();
  probs_.clear();
  labels_.clear();
  teacher_.clear();
  groups_.clear();
}

void EvalScores::Add(const host::Batch& batch, std::span<const float> probs, int64_t first_row) {
  const int tasks = num_tasks();
  CHECK_EQ(batch.num_tasks, tasks);
  for (int64_t i = 0; i < batch.num_samples; ++i) {
    if (!batch.real(i)) continue;
    rows_.push_back(first_row + i);
    probs_.insert(probs_.end(), probs.begin() + i * tasks, probs.begin() + (i + 1) * tasks);
    labels_.insert(labels_.end(), batch.labels.begin() + i * tasks,
                   batch.labels.begin() + (i + 1) * tasks);
    if (!batch.teacher_prob.empty()) teacher_.push_back(batch.teacher_prob[i]);
    if (group_feature_ >= 0) {
      const auto ids = batch.SampleIds(group_feature_, i);
      groups_.push_back(ids.empty() ? -1 : ids[0]);
    }
  }
}

absl::StatusOr<EvalResult> EvalScores::Finish(Communicator& comm, bool has_teacher,
                                              Predictions* predictions) const {
  constexpr int kRoot = 0;
  const int tasks = num_tasks();
  std::vector<int64_t> rows;
  std::vector<float> probs, labels, teacher;
  LEMRT_RETURN_IF_ERROR(comm.Gather<int64_t>(rows_, kRoot, &rows));
  LEMRT_RETURN_IF_ERROR(comm.Gather<float>(probs_, kRoot, &probs));
  LEMRT_RETURN_IF_ERROR(comm.Gather<float>(labels_, kRoot, &labels));
  // has_teacher is the same on every rank, so every rank joins this gather.
  if (has_teacher) LEMRT_RETURN_IF_ERROR(comm.Gather<float>(teacher_, kRoot, &teacher));
  std::vector<int64_t> groups;
  if (group_feature_ >= 0) LEMRT_RETURN_IF_ERROR(comm.Gather<int64_t>(groups_, kRoot, &groups));
  const bool teacher_ok = has_teacher && teacher.size() == rows.size();
  // Rows scored, teacher AUC and log loss, then kTaskValues per task.
  std::vector<double> values(kRunValues + kTaskValues * tasks, 0.0);
  values[1] = values[2] = -1;
  if (comm.rank() == kRoot) {
    // Row order, whatever the world size: the sums below then add in one order.
    std::vector<int64_t> order(rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
    Permute(order, tasks, probs);
    Permute(order, tasks, labels);
    if (teacher_ok) Permute(order, 1, teacher);
    if (!groups.empty()) Permute(order, 1, groups);
    Permute(order, 1, rows);
    values[0] = static_cast<double>(rows.size());
    // The metrics cover each task's labelled rows (every row outside
    // lemrt_predict and multi-task models' missing labels).
    for (int t = 0; t < tasks; ++t) {
      TaskMetrics(probs, labels, tasks, t, groups,
                  t == 0 && teacher_ok ? std::span<const float>(teacher) : std::span<const float>(),
                  &values[kRunValues + kTaskValues * t], &values[1]);
    }
    if (predictions != nullptr) {
      predictions->tasks = tasks;
      predictions->rows = std::move(rows);
      predictions->probabilities = std::move(probs);
      predictions->labels = std::move(labels);
    }
  }
  std::string payload(sizeof(double) * values.size(), '\0');
  std::memcpy(payload.data(), values.data(), payload.size());
  LEMRT_RETURN_IF_ERROR(comm.Broadcast(&payload, kRoot));
  std::memcpy(values.data(), payload.data(), payload.size());
  EvalResult r = TaskResult(values.data(), &values[kRunValues]);
  r.teacher_auc = values[1];
  r.teacher_logloss = values[2];
  if (tasks > 1) {
    for (int t = 0; t < tasks; ++t) {
      r.tasks.push_back(TaskResult(values.data(), &values[kRunValues + kTaskValues * t]));
      r.tasks.back().task = tasks_[t];
    }
    r.task = tasks_[0];
  }
  return r;
}

EvalColumns MetricsColumns(const EvalResult& e) {
  EvalColumns c{.auc = e.auc,
                .logloss = e.logloss,
                .ne = e.ne,
                .calibration = e.calibration,
                .gauc = e.gauc,
                .tasks = {}};
  for (const EvalResult& t : e.tasks) c.tasks.push_back(MetricsColumns(t));
  return c;
}

std::string UndefinedMetricsReason(const EvalResult& e) {
  if (e.labelled == 0) {
    return e.samples == 0 ? "the eval set has no rows" : "the eval set has no labelled rows";
  }
  if (e.one_class) return "AUC is undefined: the eval set has one class";
  return "";
}

namespace {

std::string FormatOneTask(const EvalResult& e) {
  const std::string auc =
      e.labelled > 0 && !e.one_class ? absl::StrFormat("%.4f", e.auc) : std::string("absent");
  const std::string logloss =
      e.labelled > 0 ? absl::StrFormat("%.5f", e.logloss) : std::string("absent");
  std::string more;
  if (!std::isnan(e.ne)) absl::StrAppendFormat(&more, "  ne %.5f", e.ne);
  if (!std::isnan(e.calibration)) absl::StrAppendFormat(&more, "  calibration %.4f", e.calibration);
  if (!std::isnan(e.gauc))
    absl::StrAppendFormat(&more, "  gauc %.4f (%d groups)", e.gauc, e.gauc_groups);
  return absl::StrFormat("auc %s  logloss %s%s", auc, logloss, more);
}

}  // namespace

std::string FormatEvalMetrics(const EvalResult& e) {
  if (e.tasks.empty()) {
    const std::string reason = UndefinedMetricsReason(e);
    return absl::StrFormat("%s  (%d samples)%s", FormatOneTask(e), e.samples,
                           reason.empty() ? "" : absl::StrCat("; ", reason));
  }
  std::string out;
  for (const EvalResult& t : e.tasks) {
    const std::string reason = UndefinedMetricsReason(t);
    absl::StrAppendFormat(&out, "%stask %s: %s", out.empty() ? "" : "; ", t.task, FormatOneTask(t));
    if (t.labelled < t.samples) absl::StrAppendFormat(&out, " (%d labelled)", t.labelled);
    if (!reason.empty()) absl::StrAppendFormat(&out, " (%s)", reason);
  }
  return absl::StrFormat("%s  (%d samples)", out, e.samples);
}

}  // namespace lemrt::runtime
