#include "device/tensorcore/interaction.h"

#include <cstring>
#include <type_traits>

#include "Eigen/Core"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Per-sample kernels. The n vectors of one sample (n * d floats, ~1.7 KiB for
// n = 27, d = 16) stay in L1 while all pairs are formed, which beats a
// batched Gram GEMM that would also compute the unused lower triangle and
// diagonal. D is the width at compile time for the common widths (the
// vectors then live in registers), or Eigen::Dynamic.
template <int D>
using Vec = Eigen::Matrix<float, D, 1>;
template <int D>
using ConstVecMap = Eigen::Map<const Vec<D>>;
template <int D>
using VecMap = Eigen::Map<Vec<D>>;

template <int D>
void ForwardSample(const float* z, int n, int d, float* out) {
  std::memcpy(out, z, sizeof(float) * d);
  float* pair = out + d;
  for (int i = 0; i < n; ++i) {
    ConstVecMap<D> zi(z + i * d, d);
    for (int j = i + 1; j < n; ++j) {
      *pair++ = zi.dot(ConstVecMap<D>(z + j * d, d));
    }
  }
}

// Index of pair (i, j), i < j, among the row-major pairs of n vectors.
inline int PairIndex(int i, int j, int n) {
  return i * (2 * n - i - 1) / 2 + (j - i - 1);
}

// d z_i = [i == 0] g[0:d] + sum_{j != i} g_ij z_j, accumulated in registers
// (fixed D only: a dynamic accumulator would allocate).
template <int D>
void BackwardSampleFixed(const float* z, const float* g, int n, float* dz) {
  const float* pair_grad = g + D;
  for (int i = 0; i < n; ++i) {
    Vec<D> acc = i == 0 ? Vec<D>(ConstVecMap<D>(g)) : Vec<D>(Vec<D>::Zero());
    for (int j = 0; j < i; ++j) {
      acc += pair_grad[PairIndex(j, i, n)] * ConstVecMap<D>(z + j * D);
    }
    for (int j = i + 1; j < n; ++j) {
      acc += pair_grad[PairIndex(i, j, n)] * ConstVecMap<D>(z + j * D);
    }
    VecMap<D>(dz + i * D) = acc;
  }
}

// Same result for any d, accumulating in the output row instead.
void BackwardSampleDynamic(const float* z, const float* g, int n, int d,
                           float* dz) {
  using Map = VecMap<Eigen::Dynamic>;
  using ConstMap = ConstVecMap<Eigen::Dynamic>;
  std::memcpy(dz, g, sizeof(float) * d);
  std::memset(dz + d, 0, sizeof(float) * (n - 1) * d);
  const float* pair_grad = g + d;
  for (int i = 0; i < n; ++i) {
    ConstMap zi(z + i * d, d);
    Map dzi(dz + i * d, d);
    for (int j = i + 1; j < n; ++j) {
      const float gij = *pair_grad++;
      dzi += gij * ConstMap(z + j * d, d);
      Map(dz + j * d, d) += gij * zi;
    }
  }
}

// Calls fn(width, b) for each sample b in [0, batch), where width is
// std::integral_constant<int, D> with D = d for the common widths (8, 16, 32,
// 64, 128) and D = Eigen::Dynamic otherwise: the one place that picks the
// per-sample kernels' compile-time width.
template <typename Fn>
void ForEachSample(int64_t batch, int d, Fn&& fn) {
  CHECK_GE(batch, 0);
  auto loop = [&](auto width) {
    for (int64_t b = 0; b < batch; ++b) fn(width, b);
  };
  switch (d) {
    case 8:
      return loop(std::integral_constant<int, 8>());
    case 16:
      return loop(std::integral_constant<int, 16>());
    case 32:
      return loop(std::integral_constant<int, 32>());
    case 64:
      return loop(std::integral_constant<int, 64>());
    case 128:
      return loop(std::integral_constant<int, 128>());
    default:
      return loop(std::integral_constant<int, Eigen::Dynamic>());
  }
}

}  // namespace

DotInteraction::DotInteraction(int num_vectors, int dim)
    : num_vectors_(num_vectors), dim_(dim) {
  CHECK_GE(num_vectors, 1);
  CHECK_GE(dim, 1);
}

void DotInteraction::Forward(int64_t batch, const float* in, float* out) const {
  const int n = num_vectors_, d = dim_;
  ForEachSample(batch, d, [&](auto width, int64_t b) {
    ForwardSample<decltype(width)::value>(in + b * n * d, n, d, out + b * output_width());
  });
}

void DotInteraction::Backward(int64_t batch, const float* in,
                              const float* d_out, float* d_in) const {
  const int n = num_vectors_, d = dim_;
  ForEachSample(batch, d, [&](auto width, int64_t b) {
    constexpr int D = decltype(width)::value;
    const float* g = d_out + b * output_width();
    if constexpr (D == Eigen::Dynamic) {
      BackwardSampleDynamic(in + b * n * d, g, n, d, d_in + b * n * d);
    } else {
      BackwardSampleFixed<D>(in + b * n * D, g, n, d_in + b * n * D);
    }
  });
}

}  // namespace lemrt::device
