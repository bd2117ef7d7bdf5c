#include "runtime/eval/eval_summary.h"

#include <cmath>

namespace lemrt::runtime {
namespace {

// The teacher's metrics are null (not absent) where there are none.
void SetOrNull(double value, google::protobuf::Value* out) {
  if (value >= 0) {
    out->set_number_value(value);
  } else {
    out->set_null_value(google::protobuf::NULL_VALUE);
  }
}

// The defined metrics of `eval` into `out` (EvalStats or TaskEvalStats,
// whose metric fields share their names); NaN ones stay absent.
template <typename Stats>
void FillMetrics(const EvalResult& eval, Stats* out) {
  if (!std::isnan(eval.auc)) out->set_auc(eval.auc);
  if (!std::isnan(eval.logloss)) out->set_logloss(eval.logloss);
  if (!std::isnan(eval.ne)) out->set_ne(eval.ne);
  if (!std::isnan(eval.calibration)) out->set_calibration(eval.calibration);
  if (!std::isnan(eval.gauc)) {
    out->set_gauc(eval.gauc);
    out->set_gauc_groups(static_cast<double>(eval.gauc_groups));
  }
}

}  // namespace

void FillEvalStats(const EvalResult& eval, summary::EvalStats* out) {
  FillMetrics(eval, out);
  out->set_samples(eval.samples);
  for (const EvalResult& task : eval.tasks) {
    summary::TaskEvalStats* t = out->add_tasks();
    t->set_name(task.task);
    FillMetrics(task, t);
    t->set_labelled(task.labelled);
  }
  SetOrNull(eval.teacher_auc, out->mutable_teacher_auc());
  SetOrNull(eval.teacher_logloss, out->mutable_teacher_logloss());
}

}  // namespace lemrt::runtime
