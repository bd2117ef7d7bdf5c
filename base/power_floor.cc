#include "base/power_floor.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>

namespace lemrt::base {
namespace {

// The unit roundoff of double.
// Margin over the error analysis below.
constexpr double kMargin = 16;
constexpr int kBlock = 64;
constexpr int kLanes = 8;  // doubles in an AVX-512 vector; whole AVX2 vectors too

}  // namespace

PowerFloor::PowerFloor(double p, double b_min, double b_max) : p_(p) {
  if (!(b_min >= DBL_MIN && b_min <= b_max && b_max <= DBL_MAX && std::isfinite(p))) return;
  // |log2 b^p| over the interval, and b's largest binary exponent.
  const double z_max =
      std::abs(p) * std::max(std::abs(std::log2(b_min)), std::abs(std::log2(b_max)));
  if (!(z_max <= 1000)) return;
  const int e_max = std::max(std::abs(std::ilogb(b_min)), std::abs(std::ilogb(b_max)));
  for (int j = 0; j < kExpCells; ++j) exp2_j_[j] = std::exp2(static_cast<double>(j) / kExpCells);
  approximates_ = true;
  // Errors, in roundoffs u. log b: TableLog's absolute bound. z = p log b /
  // log 2: |p| / log 2 times that, plus 3 u |z|.
  // 2^z: j / kExpCells and z - j / kExpCells exact, the series (truncation
  // |g|^7 / 5040 < 2^-60) and the three products under 8 u relative. A
  // relative error of x is log 2 times z's absolute one; pow's own result
  // is within 2 u; the band's products add 1 u each.
  const double z_error =
      std::abs(p) / std::log(2.0) * TableLog::AbsoluteBoundUlps(e_max) + 3 * z_max;
  bound_ = kMargin * (std::log(2.0) * z_error + 12) * kRoundoff;
}

void PowerFloor::ApproximateAll(const double* __restrict bases, double* __restrict x, int n) const {
  for (int i = 0; i < n; ++i) x[i] = Approximate(bases[i]);
}

void PowerFloor::FloorAll(const double* bases, double* floors, int n) const {
  if (!approximates_) {
    for (int i = 0; i < n; ++i) floors[i] = Exact(bases[i]);
    return;
  }
  // Blocks padded to whole vectors with b = 1, so that no element goes to
  // the scalar remainder loop.
  std::array<double, kBlock> b, x;
  for (int first = 0; first < n; first += kBlock) {
    const int count = std::min(kBlock, n - first);
    const int padded = (count + kLanes - 1) / kLanes * kLanes;
    std::copy_n(bases + first, count, b.begin());
    std::fill(b.begin() + count, b.begin() + padded, 1.0);
    ApproximateAll(b.data(), x.data(), padded);
    for (int i = 0; i < count; ++i) floors[first + i] = FloorOf(bases[first + i], x[i]);
  }
}

}  // namespace lemrt::base
