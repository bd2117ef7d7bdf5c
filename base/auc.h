// Binary-classification metrics over a whole eval set: ROC AUC and mean log
// loss. Pure functions of their inputs; thread-safe.
#ifndef LEMRT_BASE_AUC_H_
#define LEMRT_BASE_AUC_H_

#include <span>

namespace lemrt::base {

// ROC AUC of `scores` against `labels` (a label > 0.5 is positive): the
// probability that a random positive scores above a random negative, ties
// counting one half (the Mann-Whitney U statistic with average ranks).
// NaN scores rank below every number (-inf included) and tie with each
// other, so the result never depends on the input order. O(n log n) time,
// O(n) memory (n x 4 B of indices). Returns 0.5 when either class is absent
// (including n == 0). Precondition (CHECK): equal sizes.
double Auc(std::span<const float> scores, std::span<const float> labels);

// Mean binary cross-entropy -[y log p + (1 - y) log(1 - p)] in nats, with each
// p clamped to [1e-7, 1 - 1e-7]; labels may be soft (in [0, 1]). A NaN
// probability makes the result NaN. Returns 0 for n == 0. Precondition
// (CHECK): equal sizes.
double LogLoss(std::span<const float> probs, std::span<const float> labels);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_AUC_H_
