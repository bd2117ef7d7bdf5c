// Arithmetic of the end-of-run report: the busy time of overlapping stage
// intervals (whole, or accumulated in bounded memory) and the diagnosis
// sentences drawn from a finished summary. The functions are stateless and
// thread-safe. Stage-time percentiles: base/quantile_sketch.h.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_STAGE_STATS_H_
#define LEMRT_RUNTIME_OBSERVABILITY_STAGE_STATS_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proto/summary.pb.h"

namespace lemrt::runtime {

// Length of the union of the intervals [begin, end) (any order, any overlap).
double BusyTime(std::vector<std::pair<double, double>> intervals);

// BusyTime of intervals added one at a time, in bounded memory: it keeps the
// newest kPeriods disjoint busy periods (merging each interval into them) and
// folds the older half into a total when full. Equal to BusyTime of all the
// intervals as long as no interval begins before the end of a folded period,
// i.e. reaches back over more than kPeriods / 2 busy periods (a stage's
// interval reaches back over a few steps' stages at most); the part of one
// that does is not counted. Add never allocates. Not thread-safe.
class BusyTimeAccumulator {
 public:
  static constexpr int kPeriods = 512;
  BusyTimeAccumulator();
  void Add(double begin, double end);
  double Total() const;

 private:
  std::vector<std::pair<double, double>> periods_;  // sorted, disjoint
  double folded_ms_ = 0;
  double frontier_ = 0;  // end of the newest folded period
  bool folded_any_ = false;
};

// Thresholds of Diagnose, documented in docs/observability.md.
inline constexpr double kHostBoundShare = 0.30;    // host share (no host_wait stage)
inline constexpr double kHostWaitShare = 0.10;     // host-queue wait share of the step
inline constexpr double kNoOverlapFraction = 0.05;  // overlap below this
inline constexpr double kManyMinibatches = 1.5;     // mean minibatches per step
inline constexpr double kSkewRatio = 1.5;           // busiest partition vs mean
inline constexpr double kPaddingRatio = 1.25;       // padded ids vs ids sent

// One sentence per bottleneck detected in `s` (stages, overlap, tables must be
// filled): host-bound (the host_wait stage's share of the step, or without
// one the host stage's share), no overlap, many minibatches, dropped ids, partition
// skew, padding overhead. Fields still null (not reported by this build) are
// not diagnosed.
std::vector<std::string> Diagnose(const summary::RunSummary& s);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_STAGE_STATS_H_
