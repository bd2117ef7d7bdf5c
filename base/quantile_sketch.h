// A fixed-size, mergeable histogram of non-negative values that answers
// nearest-rank percentiles within a stated relative error: the run summary's
// stage and step times, whatever the number of steps.
//
// Buckets are log-linear: each power of two in [2^kMinExponent,
// 2^kMaxExponent) is split into 2^kSubBucketBits equal sub-buckets, found
// from the value's binary exponent and top mantissa bits (std::frexp, exact,
// no libm rounding), so the same values give the same answer on every
// machine and in any order. One extra bucket holds values below
// 2^kMinExponent (zero, negatives and NaN included), one those at or above
// 2^kMaxExponent.
//
// Accuracy: Quantile(p) is the nearest-rank percentile of a plain sort
// (sorted[round(p * (n - 1))]) to within kRelativeError (2^-8, 0.39%) of its
// value, or within 2^kMinExponent absolutely for values below that; it is
// clamped to the exact minimum and maximum, so Quantile(0) and Quantile(1)
// are exact. The mean is exact (a double sum). Values at or above
// 2^kMaxExponent are reported as the maximum.
//
// Memory: kBuckets int64 counters (6,402 x 8 B = 50 KiB), independent of the
// number of values. Add never allocates. Not thread-safe.
#ifndef LEMRT_BASE_QUANTILE_SKETCH_H_
#define LEMRT_BASE_QUANTILE_SKETCH_H_

#include <cstdint>
#include <span>
#include <vector>

namespace lemrt::base {

class QuantileSketch {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr int kMinExponent = -20;  // 2^-20 ~ 1e-6 (1 ns in ms)
  static constexpr int kMaxExponent = 30;   // 2^30 ~ 1.1e9 (12 days in ms)
  static constexpr int kBuckets =
      ((kMaxExponent - kMinExponent) << kSubBucketBits) + 2;
  static constexpr double kRelativeError = 1.0 / (2 << kSubBucketBits);

  QuantileSketch();

  void Add(double v);
  // Adds every value `other` holds.
  void Merge(const QuantileSketch& other);

  int64_t count() const { return count_; }
  double sum() const { return sum_; }
  double mean() const { return count_ > 0 ? sum_ / count_ : 0; }
  double min() const { return count_ > 0 ? min_ : 0; }
  double max() const { return count_ > 0 ? max_ : 0; }
  // The nearest-rank percentile, p in [0, 1] (0 when empty); see above.
  double Quantile(double p) const;

  // The state as numbers, for merging over ranks with sum and max
  // reductions: counts (kBuckets, summed) and {count, sum} (summed), {max,
  // -min} (maximised). FromParts rebuilds a sketch from reduced parts.
  std::span<const int64_t> counts() const { return counts_; }
  static QuantileSketch FromParts(std::span<const int64_t> counts, double sum, double max,
                                  double min);

  // The bucket of `v`, and the value reported for bucket `b` (its midpoint;
  // 0 for the low bucket). Exposed for tests.
  static int BucketOf(double v);
  static double BucketValue(int b);

 private:
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  double sum_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace lemrt::base

#endif  // LEMRT_BASE_QUANTILE_SKETCH_H_
