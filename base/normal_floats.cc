#include "base/normal_floats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "base/random.h"

namespace lemrt::base {
namespace {

// pi / 2 = kHalfPiHi + kHalfPiLo to about 2^-107.
constexpr double kHalfPiHi = 0x1.921fb54442d18p0;
constexpr double kHalfPiLo = 0x1.1a62633145c07p-54;
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
// An odd quadrant's reduced argument this close to 0 (a zero of the
// cosine) is not trusted.
constexpr double kSmallestReduced = 1e-6;
constexpr int kChunk = 64;

// Inlined into the loop below, which the compiler then vectorises.
[[gnu::always_inline]] inline double ApproximateNormal(const TableLog& log, double u1, double u2) {
  const double clamped = std::max(u1, 1e-300);  // as NextNormal
  const double radius = std::sqrt(-2.0 * log(clamped));
  // cos theta, theta = r + k pi / 2 with |r| <= pi / 4: fma(-k, hi, theta)
  // is exact (theta and k hi agree in their leading bits).
  const double theta = 6.283185307179586 * u2;
  const double k = std::nearbyint(theta * kTwoOverPi);
  const double r = std::fma(-k, kHalfPiHi, theta) - k * kHalfPiLo;
  const double r2 = r * r;
  // Taylor series to r^15 and r^16: truncation under 7e-17 relative.
  const double sin_r =
      r + r * r2 *
              (-1.0 / 6 +
               r2 * (1.0 / 120 +
                     r2 * (-1.0 / 5040 +
                           r2 * (1.0 / 362880 +
                                 r2 * (-1.0 / 39916800 +
                                       r2 * (1.0 / 6227020800 + r2 * (-1.0 / 1307674368000)))))));
  const double cos_r =
      1 + r2 * (-0.5 +
                r2 * (1.0 / 24 +
                      r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                                               r2 * (-1.0 / 3628800 +
                                                     r2 * (1.0 / 479001600 +
                                                           r2 * (-1.0 / 87178291200 +
                                                                 r2 * (1.0 / 20922789888000))))))));
  // cos theta = cos r, -sin r, -cos r, sin r in quadrants 0 .. 3 (a sign
  // change is exact). Selections on doubles, so that the loop vectorises.
  const int64_t quadrant = static_cast<int64_t>(k) & 3;
  const double odd = static_cast<double>(quadrant & 1);
  const double negative = static_cast<double>(((quadrant + 1) >> 1) & 1);
  const double cosine = (1 - 2 * negative) * (odd != 0 ? sin_r : cos_r);
  const bool untrusted =
      (u1 > NormalFloats::kLargestU1) | ((odd != 0) & (std::abs(r) < kSmallestReduced));
  return untrusted ? std::numeric_limits<double>::quiet_NaN() : radius * cosine;
}

// x[i] = the approximation of normal i, i < n. Arrays that do not overlap
// (__restrict) and the options base/CMakeLists.txt gives this file let the
// compiler vectorise the loop; the caller pads n to whole vectors (kLanes),
// so that no element goes to the scalar remainder loop.
void ApproximateChunk(const TableLog& log, const double* __restrict u1, const double* __restrict u2,
                      double* __restrict x, int n) {
  for (int i = 0; i < n; ++i) x[i] = ApproximateNormal(log, u1[i], u2[i]);
}

}  // namespace

double NormalFloats::Approximate(double u1, double u2) const {
  return ApproximateNormal(log_, u1, u2);
}

void NormalFloats::ApproximateAll(const double* u1, const double* u2, double* x, int n) const {
  ApproximateChunk(log_, u1, u2, x, n);
}

void NormalFloats::operator()(const uint64_t* keys, const double* scales, float* out, int n) const {
  std::array<double, kChunk> u1, u2, x;
  for (int first = 0; first < n; first += kChunk) {
    const int count = std::min(kChunk, n - first);
    const int padded = (count + kLanes - 1) / kLanes * kLanes;
    for (int i = 0; i < count; ++i) {
      CounterRng rng(keys[first + i]);
      u1[i] = rng.NextDouble();
      u2[i] = rng.NextDouble();
    }
    std::fill(u1.begin() + count, u1.begin() + padded, 0.5);
    std::fill(u2.begin() + count, u2.begin() + padded, 0.5);
    ApproximateChunk(log_, u1.data(), u2.data(), x.data(), padded);
    for (int i = 0; i < count; ++i) {
      const double scaled = x[i] * scales[first + i];
      const float lo = static_cast<float>(scaled * (1 - kBound));
      const float hi = static_cast<float>(scaled * (1 + kBound));
      out[first + i] =
          lo == hi
              ? lo
              : static_cast<float>(CounterRng(keys[first + i]).NextNormal() * scales[first + i]);
    }
  }
}

}  // namespace lemrt::base
