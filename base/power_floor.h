// PowerFloor: floor(std::pow(b, p)) for b in a known interval, bit for bit
// the same, mostly without calling pow. An approximation x of b^p from a
// table-driven log and exp (a few multiply-adds) carries a relative error
// under a bound E fixed by p and the interval; when [x (1 - E), x (1 + E)]
// holds no integer boundary, its floor is pow's floor (E counts pow's own
// error as up to an ulp; glibc's is under 0.52). Only draws whose power lies
// within E of an integer (about 2 E x of those near x; E is 5e-13 for a Zipf
// draw over 10^6 ids) call pow.
//
// Thread-compatible; immutable after construction.
#ifndef LEMRT_BASE_POWER_FLOOR_H_
#define LEMRT_BASE_POWER_FLOOR_H_

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "base/table_log.h"

namespace lemrt::base {

class PowerFloor {
 public:
  PowerFloor() = default;
  // For b in [b_min, b_max]. Where the interval is not within the positive
  // normal doubles, or b^p could leave [2^-1000, 2^1000]: always pow.
  PowerFloor(double p, double b_min, double b_max);

  // floors[i] = std::floor(std::pow(bases[i], p)) for i < n, bases in
  // [b_min, b_max]: the approximations first, in a loop the compiler
  // vectorises, then the floors. bases and floors must not overlap.
  void FloorAll(const double* bases, double* floors, int n) const;

  // Whether draws take the approximation (tests).
  bool approximates() const { return approximates_; }
  // The approximation of b^p and its relative bound E (tests).
  double Approximate(double b) const;
  double bound() const { return bound_; }

 private:
  // 2^z = 2^k 2^(j / kExpCells) e^(f log 2), |f| <= 1 / (2 kExpCells).
  static constexpr int kExpBits = 5;
  static constexpr int kExpCells = 1 << kExpBits;
  // Powers at or above this go to pow (their floors need every bit).
  static constexpr double kLargest = 0x1p50;

  // x[i] = Approximate(bases[i]), i < n: arrays that do not overlap
  // (__restrict) and the options base/CMakeLists.txt gives power_floor.cc let
  // the compiler vectorise the loop.
  void ApproximateAll(const double* __restrict bases, double* __restrict x, int n) const;
  // pow's floor of b, given x = Approximate(b).
  double FloorOf(double b, double x) const {
    const double lo = std::floor(x * (1 - bound_));
    if (x < kLargest && lo == std::floor(x * (1 + bound_))) return lo;
    return Exact(b);
  }
  double Exact(double b) const { return std::floor(std::pow(b, p_)); }

  double p_ = 1;
  bool approximates_ = false;
  double bound_ = 0;
  TableLog log_;
  std::array<double, kExpCells> exp2_j_{};
};

inline double PowerFloor::Approximate(double b) const {
  constexpr double kLn2 = 0x1.62e42fefa39efp-1;
  constexpr double kInvLn2 = 0x1.71547652b82fep0;
  const double z = p_ * log_(b) * kInvLn2;  // log2 of b^p
  const double j = std::nearbyint(z * kExpCells);
  const double g = (z - j / kExpCells) * kLn2;
  const double exp_g =
      1 + g * (1 + g * (0.5 + g * (1.0 / 6 + g * (1.0 / 24 + g * (1.0 / 120 + g * (1.0 / 720))))));
  const int64_t ji = static_cast<int64_t>(j);
  const int64_t k = ji >> kExpBits;  // floor(j / kExpCells)
  const double scale = std::bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52);
  return exp2_j_[ji & (kExpCells - 1)] * exp_g * scale;
}

}  // namespace lemrt::base

#endif  // LEMRT_BASE_POWER_FLOOR_H_
