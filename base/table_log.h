// TableLog: the natural log of a positive normal double from a 128-entry
// table and a short series, to a known absolute error: a few multiply-adds,
// branch-free, so that loops over many values vectorise (base/power_floor.h,
// base/normal_floats.h). Not correctly rounded: callers that need libm's
// bits use the error bound to decide when to ask libm.
//
// Thread-compatible; immutable after construction.
#ifndef LEMRT_BASE_TABLE_LOG_H_
#define LEMRT_BASE_TABLE_LOG_H_

#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>

namespace lemrt::base {

// The unit roundoff of doubles (2^-53): the unit in which the bounded
// approximations here and their callers count their errors.
inline constexpr double kRoundoff = 0x1p-53;

class TableLog {
 public:
  TableLog();

  // log b for b >= DBL_MIN (and finite); other b: garbage, not a trap.
  double operator()(double b) const {
    constexpr double kLn2 = 0x1.62e42fefa39efp-1;
    const uint64_t bits = std::bit_cast<uint64_t>(b);
    // 64-bit integers throughout: their conversions vectorise (AVX-512).
    const int64_t e = static_cast<int64_t>(bits >> 52) - 1023;
    const int64_t cell = static_cast<int64_t>(bits >> (52 - kCellBits)) & (kCells - 1);
    const double m =
        std::bit_cast<double>((bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52));
    const double c = 1 + (cell + 0.5) / kCells;
    const double t = (m - c) * inv_c_[cell];
    const double log1p_t =
        t - t * t * (0.5 - t * (1.0 / 3 - t * (0.25 - t * (0.2 - t * (1.0 / 6)))));
    return static_cast<double>(e) * kLn2 + log_c_[cell] + log1p_t;
  }

  // A bound on |(*this)(b) - log b| for b = 2^e m, m in [1, 2), in units of
  // the roundoff 2^-53: e log 2, log c and their sum each round within
  // (|e| + 1) log 2 of |log b|'s scale; t's rounding and the series'
  // truncation (|t|^7 / 7 < 2^-58, |t| <= 2^-8) add under one; doubled.
  static double AbsoluteBoundUlps(int e) { return 4.0 * std::abs(e) + 8; }

 private:
  // b = 2^e m, m in [1, 2); c the centre of m's 1/kCells-wide cell and
  // t = (m - c) / c: log b = e log 2 + log c + log(1 + t).
  static constexpr int kCellBits = 7;
  static constexpr int kCells = 1 << kCellBits;

  std::array<double, kCells> log_c_{};
  std::array<double, kCells> inv_c_{};
};

}  // namespace lemrt::base

#endif  // LEMRT_BASE_TABLE_LOG_H_
