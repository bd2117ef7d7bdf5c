#include "base/power_floor.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace lemrt::base {
namespace {

// The unit roundoff of double.
constexpr double kRoundoff = 0x1p-53;
// Margin over the error analysis below.
constexpr double kMargin = 16;

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

void PowerFloor::FloorAll(const double* bases, double* floors, int n) const {
  if (!approximates_) {
    for (int i = 0; i < n; ++i) floors[i] = Exact(bases[i]);
    return;
  }
  for (int i = 0; i < n; ++i) floors[i] = Approximate(bases[i]);
  for (int i = 0; i < n; ++i) floors[i] = FloorOf(bases[i], floors[i]);
}

}  // namespace lemrt::base
