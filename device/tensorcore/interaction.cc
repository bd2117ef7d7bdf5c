#include "device/tensorcore/interaction.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "Eigen/Core"
#include "device/tensorcore/lanes.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Per-sample kernels. The n vectors of one sample (n * d floats, ~6.9 KiB for
// n = 27, d = 64) stay in L1 while all pairs are formed, and only the upper
// triangle is computed (a batched Gram GEMM also forms the lower triangle and
// the diagonal; oneDNN's takes about as long as this forward at d = 64,
// docs/performance.md).
//
// Widths that are a multiple of 8 (the common 8, 16, ..., 128, fixed at
// compile time as D) run on vectors of L floats (GCC vector extensions): L =
// 16 where the build targets AVX-512 and D is a multiple of 16, else 8. The
// forward forms the dot products of one vector with 8 others as 8
// independent chains and sums their lanes together (SumLanes), the backward
// accumulates each gradient row in registers. Other widths take the plain
// Eigen loops below. The order of every sum is fixed by the code, so the
// bits depend on the inputs only (not on the batch's split into tasks).
using lanes::kWideLanes;
using lanes::Lanes;
using lanes::Load;
using lanes::Store;
using V8 = Lanes<8>;

template <int D>
constexpr int LanesFor() {
  return D % kWideLanes == 0 ? kWideLanes : 8;
}

// The 8 lanes of v: v itself, or the sum of a 16-lane vector's halves (used
// where kWideLanes is 16, with AVX-512).
inline V8 Fold(const V8& v) { return v; }
[[maybe_unused]] inline V8 Fold(const Lanes<16>& v) {
  return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
         __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
}

// {sum of a[0]'s lanes, ..., sum of a[7]'s lanes}: three rounds of adding
// lanes pairwise, each round halving the lanes per input.
inline V8 SumLanes(const V8 (&a)[8]) {
  auto halves = [](const V8& x, const V8& y) {  // x0+x1, y0+y1, x2+x3, y2+y3, ...
    return __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
  };
  auto quarters = [](const V8& x, const V8& y) {
    return __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
  };
  const V8 low = quarters(halves(a[0], a[1]), halves(a[2], a[3]));
  const V8 high = quarters(halves(a[4], a[5]), halves(a[6], a[7]));
  return __builtin_shufflevector(low, high, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(low, high, 4, 5, 6, 7, 12, 13, 14, 15);
}

// <zi, z(j + r)> for r < count (<= 8); lanes past count are 0.
template <int D, int L, typename Rows>
V8 Dots(const Lanes<L> (&zi)[D / L], const Rows& z, int j, int count) {
  V8 acc[8] = {};
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    if (r < count) {
      const float* zj = z(j + r);
      Lanes<L> s = zi[0] * Load<L>(zj);
#pragma GCC unroll 16
      for (int c = 1; c < D / L; ++c) s += zi[c] * Load<L>(zj + L * c);
      acc[r] = Fold(s);
    }
  }
  return SumLanes(acc);
}

// One sample: z(i) is its vector i.
template <int D, typename Rows>
void ForwardSample8(const Rows& z, int n, float* out) {
  constexpr int L = LanesFor<D>();
  constexpr int kChunks = D / L;
  std::memcpy(out, z(0), sizeof(float) * D);
  float* pair = out + D;
  for (int i = 0; i < n; ++i) {
    Lanes<L> zi[kChunks];
    const float* row = z(i);
#pragma GCC unroll 16
    for (int c = 0; c < kChunks; ++c) zi[c] = Load<L>(row + L * c);
    // Pairs (i, j) for j > i are consecutive outputs: 8 at a time, then
    // the last up to 7.
    int j = i + 1;
    for (; j + 8 <= n; j += 8, pair += 8) Store<8>(pair, Dots<D, L>(zi, z, j, 8));
    if (j < n) {
      const V8 sums = Dots<D, L>(zi, z, j, n - j);
      for (int r = 0; r < n - j; ++r) pair[r] = sums[r];
      pair += n - j;
    }
  }
}

// Index of pair (i, j), i < j, among the row-major pairs of n vectors.
inline int PairIndex(int i, int j, int n) {
  return i * (2 * n - i - 1) / 2 + (j - i - 1);
}

// Rows [i0, i0 + R) of dz: d z_i = [i == 0] g[0:d] + sum_{j != i} g_ij z_j,
// the R rows' accumulators in registers so that each z_j is loaded once for
// all of them; the terms are added in ascending j. Pair gradients: for j <
// i0, g_{j,i0+r} are consecutive (pair (j, i0) + r, and pair (j + 1, i0) is
// n - j - 2 further); for j >= i0 + R, row i's g_ij are consecutive from
// pair (i, i + 1).
template <int D, int L, int R, typename Rows, typename OutRows>
void BackwardRows(const Rows& z, const float* pair_grad, const float* g0, int n, int i0,
                  const OutRows& dz) {
  constexpr int kChunks = D / L;
  Lanes<L> acc[R][kChunks];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < kChunks; ++c) {
      acc[r][c] = i0 + r == 0 ? Load<L>(g0 + L * c) : Lanes<L>{};
    }
  }
  // acc[r] += gr[r] z_j for every r, each chunk of z_j loaded once.
  auto add_all = [&](const float (&gr)[R], const float* zj) {
#pragma GCC unroll 16
    for (int c = 0; c < kChunks; ++c) {
      const Lanes<L> zc = Load<L>(zj + L * c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] += gr[r] * zc;
    }
  };
  int below = i0 - 1;  // pair (0, i0)
  for (int j = 0; j < i0; ++j) {
    float gr[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) gr[r] = pair_grad[below + r];
    add_all(gr, z(j));
    below += n - j - 2;
  }
#pragma GCC unroll 8
  for (int q = 0; q < R; ++q) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if (r == q) continue;
      const int i = i0 + r, j = i0 + q;
      const float gij = pair_grad[i < j ? PairIndex(i, j, n) : PairIndex(j, i, n)];
#pragma GCC unroll 16
      for (int c = 0; c < kChunks; ++c) acc[r][c] += gij * Load<L>(z(j) + L * c);
    }
  }
  int above[R];  // pair (i0 + r, i0 + R)
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) above[r] = PairIndex(i0 + r, i0 + R, n);
  for (int j = i0 + R; j < n; ++j) {
    float gr[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) gr[r] = pair_grad[above[r]++];
    add_all(gr, z(j));
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = dz(i0 + r);
#pragma GCC unroll 16
    for (int c = 0; c < kChunks; ++c) Store<L>(out + L * c, acc[r][c]);
  }
}

// The last n - i < R rows as one block (R counts down to n - i).
template <int D, int L, int R, typename Rows, typename OutRows>
void BackwardLastRows(const Rows& z, const float* g, int n, int i, const OutRows& dz) {
  if constexpr (R > 0) {
    if (n - i == R) return BackwardRows<D, L, R>(z, g + D, g, n, i, dz);
    BackwardLastRows<D, L, R - 1>(z, g, n, i, dz);
  }
}

// One sample: z(i) is its vector i, dz(i) where its gradient goes.
template <int D, typename Rows, typename OutRows>
void BackwardSample8(const Rows& z, const float* g, int n, const OutRows& dz) {
  constexpr int L = LanesFor<D>();
  // Rows per block: up to 24 accumulators of the 32 vector registers with
  // AVX-512, 8 of the 16 otherwise; 1 to 6 rows.
  constexpr int kRows = std::clamp((kWideLanes == 16 ? 24 : 8) / (D / L), 1, 6);
  int i = 0;
  for (; i + kRows <= n; i += kRows) BackwardRows<D, L, kRows>(z, g + D, g, n, i, dz);
  BackwardLastRows<D, L, kRows - 1>(z, g, n, i, dz);
}

// Any width: Eigen loops.
using Vec = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using ConstVecMap = Eigen::Map<const Vec>;
using VecMap = Eigen::Map<Vec>;

template <typename Rows>
void ForwardSampleDynamic(const Rows& z, int n, int d, float* out) {
  std::memcpy(out, z(0), sizeof(float) * d);
  float* pair = out + d;
  for (int i = 0; i < n; ++i) {
    ConstVecMap zi(z(i), d);
    for (int j = i + 1; j < n; ++j) {
      *pair++ = zi.dot(ConstVecMap(z(j), d));
    }
  }
}

// The same gradient, accumulating in the output rows instead.
template <typename Rows, typename OutRows>
void BackwardSampleDynamic(const Rows& z, const float* g, int n, int d, const OutRows& dz) {
  std::memcpy(dz(0), g, sizeof(float) * d);
  for (int i = 1; i < n; ++i) std::memset(dz(i), 0, sizeof(float) * d);
  const float* pair_grad = g + d;
  for (int i = 0; i < n; ++i) {
    ConstVecMap zi(z(i), d);
    VecMap dzi(dz(i), d);
    for (int j = i + 1; j < n; ++j) {
      const float gij = *pair_grad++;
      dzi += gij * ConstVecMap(z(j), d);
      VecMap(dz(j), d) += gij * zi;
    }
  }
}

// Calls fn(width, b) for each sample b in [begin, end), where width is
// std::integral_constant<int, D> with D = d for the common widths (8, 16, 32,
// 64, 128) and D = Eigen::Dynamic otherwise: the one place that picks the
// per-sample kernels' compile-time width.
template <typename Fn>
void ForEachSample(int64_t begin, int64_t end, int d, Fn&& fn) {
  CHECK_LE(begin, end);
  auto loop = [&](auto width) {
    for (int64_t b = begin; b < end; ++b) fn(width, b);
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

void DotInteraction::Forward(int64_t begin, int64_t end, InteractionVectors<const float> in,
                             float* out) const {
  const int n = num_vectors_, d = dim_;
  ForEachSample(begin, end, d, [&](auto width, int64_t b) {
    constexpr int D = decltype(width)::value;
    auto z = [&](int i) { return in.Row(b, i); };
    float* o = out + b * output_width();
    if constexpr (D == Eigen::Dynamic) {
      ForwardSampleDynamic(z, n, d, o);
    } else {
      ForwardSample8<D>(z, n, o);
    }
  });
}

void DotInteraction::Backward(int64_t begin, int64_t end, InteractionVectors<const float> in,
                              const float* d_out, InteractionVectors<float> d_in) const {
  const int n = num_vectors_, d = dim_;
  ForEachSample(begin, end, d, [&](auto width, int64_t b) {
    constexpr int D = decltype(width)::value;
    auto z = [&](int i) { return in.Row(b, i); };
    auto dz = [&](int i) { return d_in.Row(b, i); };
    const float* g = d_out + b * output_width();
    if constexpr (D == Eigen::Dynamic) {
      BackwardSampleDynamic(z, g, n, d, dz);
    } else {
      BackwardSample8<D>(z, g, n, dz);
    }
  });
}

}  // namespace lemrt::device
