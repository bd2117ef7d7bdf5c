// Test-only helpers for the TensorCore unit tests: seeded random buffers and a
// central finite-difference gradient check. Header-only; thread-compatible.
#ifndef LEMRT_DEVICE_TENSORCORE_GRADIENT_CHECK_TEST_UTIL_H_
#define LEMRT_DEVICE_TENSORCORE_GRADIENT_CHECK_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device::test_util {

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
