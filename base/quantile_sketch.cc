#include "base/quantile_sketch.h"

#include <algorithm>
#include <cmath>

namespace lemrt::base {

QuantileSketch::QuantileSketch() : counts_(kBuckets, 0) {}

int QuantileSketch::BucketOf(double v) {
  if (!(v >= std::ldexp(1.0, kMinExponent))) return 0;  // small, negative, NaN
  if (v >= std::ldexp(1.0, kMaxExponent)) return kBuckets - 1;
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1): exact
  const int octave = e - 1 - kMinExponent;
  // 2m - 1 in [0, 1); scaling by a power of two is exact, the cast floors.
  const int sub = static_cast<int>(std::ldexp(2 * m - 1, kSubBucketBits));
  return 1 + (octave << kSubBucketBits) + sub;
}

double QuantileSketch::BucketValue(int b) {
  if (b <= 0) return 0;
  if (b >= kBuckets - 1) return std::ldexp(1.0, kMaxExponent);
  const int octave = (b - 1) >> kSubBucketBits;
  const int sub = (b - 1) & ((1 << kSubBucketBits) - 1);
  const int e = octave + kMinExponent;
  const double low = std::ldexp(1.0, e) + std::ldexp(static_cast<double>(sub), e - kSubBucketBits);
  return low + std::ldexp(0.5, e - kSubBucketBits);
}

void QuantileSketch::Add(double v) {
  if (std::isnan(v)) v = 0;
  ++counts_[BucketOf(v)];
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  ++count_;
  sum_ += v;
}

void QuantileSketch::Merge(const QuantileSketch& other) {
  if (other.count_ == 0) return;
  for (int b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

QuantileSketch QuantileSketch::FromParts(std::span<const int64_t> counts, double sum, double max,
                                         double min) {
  QuantileSketch s;
  for (int b = 0; b < kBuckets && b < static_cast<int>(counts.size()); ++b) {
    s.counts_[b] = counts[b];
    s.count_ += counts[b];
  }
  s.sum_ = sum;
  s.min_ = min;
  s.max_ = max;
  return s;
}

double QuantileSketch::Quantile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 1.0);
  const int64_t rank = std::min<int64_t>(
      count_ - 1, static_cast<int64_t>(p * static_cast<double>(count_ - 1) + 0.5));
  if (rank == 0) return min_;
  if (rank == count_ - 1) return max_;
  int64_t seen = 0;
  int b = 0;
  for (; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen > rank) break;
  }
  if (b >= kBuckets - 1) return max_;
  return std::clamp(BucketValue(b), min_, max_);
}

}  // namespace lemrt::base
