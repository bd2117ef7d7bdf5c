// Binary-classification metrics over a whole eval set: ROC AUC, mean log
// loss, the entropy of the base rate (NE's denominator) and group AUC. Pure
// functions of their inputs; thread-safe.
#ifndef LEMRT_BASE_AUC_H_
#define LEMRT_BASE_AUC_H_

#include <cstdint>
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

// The entropy of the base rate p = mean label, -[p log p + (1 - p) log(1 - p)]
// in nats: the log loss of always predicting p. Normalized entropy (NE) is a
// model's log loss over it. Returns 0 for n == 0 and when p is 0 or 1.
double BaseRateEntropy(std::span<const float> labels);

struct GroupAucResult {
  double gauc = 0;     // NaN when no group has both classes
  int64_t groups = 0;  // groups with both classes (the ones averaged)
  int64_t rows = 0;    // their rows (the weights' sum)
};

// Group AUC: rows are grouped by `groups[i]` (rows with a negative key are in
// no group); each group holding both classes contributes Auc of its rows,
// weighted by its rows (impressions); groups with one class are left out.
// The groups are visited in key order and each group's rows in index order,
// so the result is a function of the rows in the given order. O(n log n).
// Precondition (CHECK): equal sizes.
GroupAucResult GroupAuc(std::span<const float> scores, std::span<const float> labels,
                        std::span<const int64_t> groups);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_AUC_H_
