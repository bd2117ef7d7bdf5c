#include "runtime/eval/eval_tracker.h"

#include <cmath>

namespace lemrt::runtime {

EvalTracker::Verdict EvalTracker::Record(int64_t step, double auc, double logloss) {
  Verdict v;
  if (!std::isnan(auc) && (!best_.has_value() || auc > best_->auc)) {
    best_ = Best{.step = step, .auc = auc, .logloss = logloss};
    since_best_ = 0;
    v.improved = true;
    return v;
  }
  ++since_best_;
  v.stop = early_stop_evals_ > 0 && since_best_ >= early_stop_evals_;
  return v;
}

}  // namespace lemrt::runtime
