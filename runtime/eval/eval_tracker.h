// EvalTracker: the best evaluation of a run so far (by AUC) and the early-stop
// rule of training.early_stop_evals. Pure bookkeeping, the same on every rank
// (every rank sees the same all-gathered evaluation). Thread-compatible.
#ifndef LEMRT_RUNTIME_EVAL_EVAL_TRACKER_H_
#define LEMRT_RUNTIME_EVAL_EVAL_TRACKER_H_

#include <cstdint>
#include <optional>

namespace lemrt::runtime {

class EvalTracker {
 public:
  struct Best {
    int64_t step = 0;  // completed steps at the evaluation
    double auc = 0;
    double logloss = 0;
  };
  struct Verdict {
    bool improved = false;  // this evaluation is the new best
    bool stop = false;      // early_stop_evals evaluations in a row without improvement
  };

  // `early_stop_evals` 0 never stops.
  explicit EvalTracker(int64_t early_stop_evals) : early_stop_evals_(early_stop_evals) {}

  // Records the evaluation after `step` completed steps. An evaluation
  // improves when its AUC is strictly above the best so far (the first one
  // always does; a NaN AUC never does); the evaluations since the last
  // improvement count towards the stop.
  Verdict Record(int64_t step, double auc, double logloss);

  const std::optional<Best>& best() const { return best_; }
  // Evaluations since the best one.
  int64_t evals_without_improvement() const { return since_best_; }

 private:
  int64_t early_stop_evals_;
  std::optional<Best> best_;
  int64_t since_best_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_EVAL_EVAL_TRACKER_H_
