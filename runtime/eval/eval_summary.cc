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

}  // namespace

void FillEvalStats(const EvalResult& eval, summary::EvalStats* out) {
  if (!std::isnan(eval.auc)) out->set_auc(eval.auc);
  if (!std::isnan(eval.logloss)) out->set_logloss(eval.logloss);
  out->set_samples(eval.samples);
  if (!std::isnan(eval.ne)) out->set_ne(eval.ne);
  if (!std::isnan(eval.calibration)) out->set_calibration(eval.calibration);
  if (!std::isnan(eval.gauc)) {
    out->set_gauc(eval.gauc);
    out->set_gauc_groups(static_cast<double>(eval.gauc_groups));
  }
  for (const EvalResult& task : eval.tasks) {
    summary::TaskEvalStats* t = out->add_tasks();
    t->set_name(task.task);
    if (!std::isnan(task.auc)) t->set_auc(task.auc);
    if (!std::isnan(task.logloss)) t->set_logloss(task.logloss);
    if (!std::isnan(task.ne)) t->set_ne(task.ne);
    if (!std::isnan(task.calibration)) t->set_calibration(task.calibration);
    if (!std::isnan(task.gauc)) {
      t->set_gauc(task.gauc);
      t->set_gauc_groups(static_cast<double>(task.gauc_groups));
    }
    t->set_labelled(task.labelled);
  }
  SetOrNull(eval.teacher_auc, out->mutable_teacher_auc());
  SetOrNull(eval.teacher_logloss, out->mutable_teacher_logloss());
}

}  // namespace lemrt::runtime
