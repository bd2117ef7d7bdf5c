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

}  // namespace

void EvalScores::Clear() {
  rows_.clear();
  probs_.clear();
  labels_.clear();
  teacher_.clear();
  groups_.clear();
}

void EvalScores::Add(const host::Batch& batch, std::span<const float> probs, int64_t first_row) {
  for (int64_t i = 0; i < batch.num_samples; ++i) {
    if (!batch.real(i)) continue;
    rows_.push_back(first_row + i);
    probs_.push_back(probs[i]);
    labels_.push_back(batch.labels[i]);
    if (!batch.teacher_prob.empty()) teacher_.push_back(batch.teacher_prob[i]);
    if (group_feature_ >= 0) {
      const auto ids = batch.SampleIds(group_feature_, i);
      groups_.push_back(ids.empty() ? -1 : ids[0]);
    }
  }
}

absl::StatusOr<EvalResult> EvalScores::Finish(Communicator& comm, bool has_teacher,
                                              std::vector<Prediction>* predictions) const {
  constexpr int kRoot = 0;
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
  // auc, logloss, samples, teacher auc, labelled, teacher logloss, one class,
  // ne, calibration, gauc, gauc groups
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double values[11] = {kNaN, kNaN, 0, -1, 0, -1, 0, kNaN, kNaN, kNaN, 0};
  if (comm.rank() == kRoot) {
    // Row order, whatever the world size: the sums below then add in one order.
    std::vector<int64_t> order(rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
    auto permute = [&](std::vector<float>& v) {
      std::vector<float> out(order.size());
      for (size_t i = 0; i < order.size(); ++i) out[i] = v[order[i]];
      v.swap(out);
    };
    permute(probs);
    permute(labels);
    if (teacher_ok) permute(teacher);
    if (!groups.empty()) {
      std::vector<int64_t> out(order.size());
      for (size_t i = 0; i < order.size(); ++i) out[i] = groups[order[i]];
      groups.swap(out);
    }
    values[2] = static_cast<double>(probs.size());
    // The metrics cover the labelled rows (every row outside lemrt_predict).
    std::vector<float> scored, truth, teacher_scored;
    std::vector<int64_t> scored_groups;
    for (size_t i = 0; i < probs.size(); ++i) {
      if (std::isnan(labels[i])) continue;
      scored.push_back(probs[i]);
      truth.push_back(labels[i]);
      if (teacher_ok) teacher_scored.push_back(teacher[i]);
      if (!groups.empty()) scored_groups.push_back(groups[i]);
    }
    values[4] = static_cast<double>(scored.size());
    const int64_t positives =
        std::count_if(truth.begin(), truth.end(), [](float y) { return y > 0.5f; });
    const bool one_class = positives == 0 || positives == static_cast<int64_t>(truth.size());
    values[6] = one_class && !truth.empty() ? 1 : 0;
    if (!scored.empty()) {
      // Base::Auc gives 0.5 for one class; it is undefined, reported absent.
      values[0] = one_class ? kNaN : base::Auc(scored, truth);
      values[1] = base::LogLoss(scored, truth);
      AddCalibrationMetrics(scored, truth, scored_groups, values[1], &values[7]);
      if (teacher_ok) {
        values[3] = base::Auc(teacher_scored, truth);
        values[5] = base::LogLoss(teacher_scored, truth);
      }
    }
    if (predictions != nullptr) {
      predictions->resize(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        (*predictions)[i] = {rows[order[i]], probs[i], labels[i]};
      }
    }
  }
  std::string payload(sizeof(values), '\0');
  std::memcpy(payload.data(), values, sizeof(values));
  LEMRT_RETURN_IF_ERROR(comm.Broadcast(&payload, kRoot));
  std::memcpy(values, payload.data(), sizeof(values));
  EvalResult r;
  r.auc = values[0];
  r.logloss = values[1];
  r.samples = static_cast<int64_t>(values[2]);
  r.teacher_auc = values[3];
  r.labelled = static_cast<int64_t>(values[4]);
  r.teacher_logloss = values[5];
  r.one_class = values[6] != 0;
  r.ne = values[7];
  r.calibration = values[8];
  r.gauc = values[9];
  r.gauc_groups = static_cast<int64_t>(values[10]);
  return r;
}

std::string UndefinedMetricsReason(const EvalResult& e) {
  if (e.labelled == 0) {
    return e.samples == 0 ? "the eval set has no rows" : "the eval set has no labelled rows";
  }
  if (e.one_class) return "AUC is undefined: the eval set has one class";
  return "";
}

std::string FormatEvalMetrics(const EvalResult& e) {
  const std::string auc =
      e.labelled > 0 && !e.one_class ? absl::StrFormat("%.4f", e.auc) : std::string("absent");
  const std::string logloss =
      e.labelled > 0 ? absl::StrFormat("%.5f", e.logloss) : std::string("absent");
  const std::string reason = UndefinedMetricsReason(e);
  std::string more;
  if (!std::isnan(e.ne)) absl::StrAppendFormat(&more, "  ne %.5f", e.ne);
  if (!std::isnan(e.calibration)) absl::StrAppendFormat(&more, "  calibration %.4f", e.calibration);
  if (!std::isnan(e.gauc))
    absl::StrAppendFormat(&more, "  gauc %.4f (%d groups)", e.gauc, e.gauc_groups);
  return absl::StrFormat("auc %s  logloss %s%s  (%d samples)%s", auc, logloss, more, e.samples,
                         reason.empty() ? "" : absl::StrCat("; ", reason));
}

}  // namespace lemrt::runtime
