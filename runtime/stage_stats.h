// Arithmetic of the end-of-run report: distributions of stage times, the
// busy time of overlapping stage intervals, and the diagnosis sentences drawn
// from a finished summary. Stateless functions; thread-safe.
#ifndef LEMRT_RUNTIME_STAGE_STATS_H_
#define LEMRT_RUNTIME_STAGE_STATS_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proto/summary.pb.h"

namespace lemrt::runtime {

struct Distribution {
  double mean = 0;
  double p50 = 0;  // nearest-rank percentiles
  double p99 = 0;
};

// Mean and percentiles of `values` (all zero when empty).
Distribution Distribute(std::span<const double> values);

// Length of the union of the intervals [begin, end) (any order, any overlap).
double BusyTime(std::vector<std::pair<double, double>> intervals);

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

#endif  // LEMRT_RUNTIME_STAGE_STATS_H_
