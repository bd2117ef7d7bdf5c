// The summary's `eval` section (proto/summary.proto EvalStats) from an
// evaluation's result: the run summary's rule for undefined metrics in one
// place. Pure function; thread-safe.
#ifndef LEMRT_RUNTIME_EVAL_EVAL_SUMMARY_H_
#define LEMRT_RUNTIME_EVAL_EVAL_SUMMARY_H_

#include "proto/summary.pb.h"
#include "runtime/eval/eval_scores.h"

namespace lemrt::runtime {

// Writes `eval` into `out` (empty): `samples`, each metric that is defined
// (NaN ones stay absent, never 0.5 / 0), GAUC's group count only with GAUC,
// each task of a multi-task model, and the teacher's AUC and log loss as
// numbers, or null without a teacher or without scored rows. A default
// EvalResult (no evaluation: a run stopped by a signal) gives `samples` 0,
// null teacher metrics and nothing else, as an empty eval set does.
void FillEvalStats(const EvalResult& eval, summary::EvalStats* out);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_EVAL_EVAL_SUMMARY_H_
