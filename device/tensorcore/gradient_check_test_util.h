// Test-only helpers for the TensorCore unit tests: seeded random buffers, a
// central finite-difference gradient check, the rounding-error bound of a
// float sum and bf16 rounding written out. Header-only; thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_GRADIENT_CHECK_TEST_UTIL_H_
#define LEMRT_DEVICE_TENSORCORE_GRADIENT_CHECK_TEST_UTIL_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device::test_util {

// Unit roundoff of float (round to nearest).
inline constexpr double kFloatUnitRoundoff = 0x1.0p-24;

// Bound on |computed - exact| for a float result built from terms whose
// absolute values sum to `abs_sum` with at most `roundings` rounding steps
// along any term's path (a product and a k-term sum: k + 1): gamma(roundings)
// x abs_sum with gamma(k) = k u / (1 - k u) (Higham, "Accuracy and Stability
// of Numerical Algorithms", section 3.1). Holds for any summation order and
// with or without fused multiply-adds, i.e. on every x86-64 level.
inline double FloatSumErrorBound(int roundings, double abs_sum) {
  const double ku = roundings * kFloatUnitRoundoff;
  return ku / (1.0 - ku) * abs_sum;
}

// x rounded to the nearest bf16, ties to even, from the definition (a
// reference independent of base/bf16.h): a bf16 is a float's top 16 bits, so
// the candidates are x with its low 16 bits cleared and the next bf16 away
// from zero. Finite x below the largest bf16 only.
inline float NearestBf16(float x) {
  const uint32_t kept = std::bit_cast<uint32_t>(x) & 0xffff0000u;
  const float down = std::bit_cast<float>(kept);
  const float up = std::bit_cast<float>(kept + 0x10000u);
  const double below = std::abs(double{x} - down);
  const double above = std::abs(double{up} - x);
  if (below != above) return below < above ? down : up;
  return (kept & 0x10000u) == 0 ? down : up;  // a tie: the even one
}

// `n` values uniform in [lo, hi) from a generator seeded with `seed`.
inline std::vector<float> RandomVector(int64_t n, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// Options of ExpectGradientMatches.
struct GradientCheckOptions {
  double eps = 1e-3;      // Perturbation of each coordinate.
  double rel_tol = 1e-2;  // Relative to max(|numeric|, |analytic|).
  double abs_tol = 1e-4;  // Absolute floor.
  // A ReLU whose pre-activation is within eps of 0 makes the loss kinked
  // inside [x - eps, x + eps], and the central difference then averages two
  // slopes. Such a coordinate (left and right one-sided differences disagree)
  // still passes if the analytic value matches one side within the looser
  // one-sided tolerance below, but at most this fraction of coordinates
  // (and at least 2) may be excused that way.
  double one_sided_rel_tol = 5e-2;
  double one_sided_abs_tol = 2e-3;
  double max_kink_fraction = 0.15;
};

// For every i, perturbs x[i] by +-eps, evaluates `loss` (which must read x)
// and expects the central difference to match analytic[i] (see the options
// for ReLU kinks). `analytic` must not alias anything `loss` writes (copy
// model gradients out first). x is restored afterwards. `name` labels
// failures.
//
// `loss` must be computed in double precision from x (a plain reference of
// the forward pass, not the float kernel under test): a central difference
// turns the loss's rounding error delta into an error of delta / eps in the
// slope. A float forward pass carries delta ~ u x sum |terms| (u = 2^-24),
// which at eps = 1e-3 is 1e-4 and more for wide layers -- the size of the
// tolerances below, so such a check passes or fails with the instruction set
// (a width-128 dot interaction failed it with AVX2 and passed with AVX-512).
// With a double reference delta / eps is ~1e-13, and what is compared is the
// analytic float gradient itself.
inline void ExpectGradientMatches(std::span<float> x,
                                  std::span<const float> analytic,
                                  const std::function<double()>& loss,
                                  const std::string& name,
                                  GradientCheckOptions options = {}) {
  ASSERT_EQ(x.size(), analytic.size()) << name;
  auto near = [](double a, double b, double rel, double abs) {
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + abs;
  };
  const double loss_0 = loss();
  int failures = 0;
  int kinks = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    const float plus = static_cast<float>(saved + options.eps);
    const float minus = static_cast<float>(saved - options.eps);
    x[i] = plus;
    const double loss_plus = loss();
    x[i] = minus;
    const double loss_minus = loss();
    x[i] = saved;
    // Divide by the steps actually taken in float, not the nominal eps.
    const double right = (loss_plus - loss_0) / (double{plus} - saved);
    const double left = (loss_0 - loss_minus) / (double{saved} - minus);
    const double central =
        (loss_plus - loss_minus) / (double{plus} - double{minus});
    const double a = analytic[i];
    if (near(central, a, options.rel_tol, options.abs_tol)) continue;
    const bool kinked =
        !near(left, right, options.rel_tol, options.abs_tol) &&
        (near(left, a, options.one_sided_rel_tol, options.one_sided_abs_tol) ||
         near(right, a, options.one_sided_rel_tol, options.one_sided_abs_tol));
    if (kinked) {
      ++kinks;
      continue;
    }
    if (++failures <= 10) {
      ADD_FAILURE() << name << "[" << i << "]: analytic " << a
                    << " vs finite difference " << central << " (left " << left
                    << ", right " << right << ")";
    }
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << x.size()
                         << " coordinates differ";
  EXPECT_LE(kinks, std::max(2.0, options.max_kink_fraction * x.size()))
      << name << ": too many coordinates excused as ReLU kinks (" << kinks
      << " of " << x.size() << ")";
}

}  // namespace lemrt::device::test_util

#endif  // LEMRT_DEVICE_TENSORCORE_GRADIENT_CHECK_TEST_UTIL_H_
