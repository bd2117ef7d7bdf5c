// NormalFloats: static_cast<float>(CounterRng(key).NextNormal() * scale) for
// many keys at once, bit for bit the same, mostly without libm. The normal's
// Box-Muller form sqrt(-2 log u1) cos(2 pi u2) is approximated from
// TableLog and a reduced cosine series, in a loop the compiler vectorises,
// to a relative error under kBound; where the band [x (1 - kBound),
// x (1 + kBound)] rounds to one float, that float is libm's (kBound counts
// libm's log and cos as up to an ulp off; glibc's are under one). The rest
// (u1 > kLargestU1, a cosine within 1e-6 of a zero, and about 4e-5 of the
// others, whose product lies near the midpoint of two floats) take libm.
//
// Thread-compatible; immutable after construction.
#ifndef LEMRT_BASE_NORMAL_FLOATS_H_
#define LEMRT_BASE_NORMAL_FLOATS_H_

#include <cstdint>

#include "base/table_log.h"

namespace lemrt::base {

class NormalFloats {
 public:
  // out[i] = static_cast<float>(CounterRng(keys[i]).NextNormal() * scales[i])
  // for i < n.
  void operator()(const uint64_t* keys, const double* scales, float* out, int n) const;

  // The approximation of the normal from its uniforms u1, u2 (as NextNormal
  // draws them), or NaN where it is not trusted (tests).
  double Approximate(double u1, double u2) const;

  // x[i] = Approximate(u1[i], u2[i]) for i < n, n a multiple of kLanes, in
  // vectors: within kBound x |x[i]| of CounterRng::NormalFrom(u1[i], u2[i]),
  // or NaN. For callers that need the normal as a double and carry the bound.
  static constexpr int kLanes = 8;  // doubles in an AVX-512 vector; whole AVX2 vectors too
  void ApproximateAll(const double* u1, const double* u2, double* x, int n) const;

  // Past this u1, log u1 is too close to 0 for TableLog's absolute error.
  static constexpr double kLargestU1 = 0.99;
  // The relative bound: TableLog's 12 roundoffs absolute at |log u1| >=
  // 0.01 (1,194 relative, halved by the square root), the cosine's series
  // and reduction (8), libm's log, cos and the products (6); 16x margin.
  static constexpr double kBound = 16 * (597 + 8 + 6) * kRoundoff;

 private:
  TableLog log_;
};

}  // namespace lemrt::base

#endif  // LEMRT_BASE_NORMAL_FLOATS_H_
