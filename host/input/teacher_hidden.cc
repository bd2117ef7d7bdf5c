#include "host/input/teacher_hidden.h"

#include <algorithm>
#include <cmath>

#include "base/random.h"

namespace lemrt::host {
namespace {

constexpr uint64_t kHiddenTag = 0x68696464656eULL;  // "hidden"
using base::kRoundoff;

// acc += normals x scale: one expression for every path, so that they round
// alike (also where the compiler fuses the multiply-add).
void Accumulate(const double* normals, double scale, double* acc) {
  for (int d = 0; d < TeacherHidden::kDim; ++d) acc[d] += normals[d] * scale;
}

}  // namespace

TeacherHidden::TeacherHidden(uint64_t seed, const std::vector<int64_t>& vocab,
                             const std::vector<bool>& cache, int64_t cached_ids) {
  const int num_tables = static_cast<int>(vocab.size());
  hot_.resize(num_tables);
  for (int t = 0; t < num_tables; ++t) {
    prefix_.push_back(base::HashKeys({seed, kHiddenTag, uint64_t(t)}));
    if (!cache[t]) continue;
    hot_[t].resize(std::clamp<int64_t>(vocab[t], 0, cached_ids));
    for (int64_t id = 0; id < static_cast<int64_t>(hot_[t].size()); ++id) {
      base::CounterRng rng(base::HashOn(prefix_[t], uint64_t(id)));
      for (int d = 0; d < kDim; ++d) hot_[t][id][d] = rng.NextNormal();
      hot_[t][id][kDim] = 0.5 * Damping(id);
    }
  }
}

void TeacherHidden::AddExact(int table, int64_t id, double* acc) const {
  if (id < static_cast<int64_t>(hot_[table].size())) {
    const Normals& h = hot_[table][id];
    Accumulate(h.data(), h[kDim], acc);
    return;
  }
  base::CounterRng rng(base::HashOn(prefix_[table], uint64_t(id)));
  std::array<double, kDim> normals;
  for (double& n : normals) n = rng.NextNormal();
  Accumulate(normals.data(), 0.5 * Damping(id), acc);
}

void TeacherHidden::MeanExact(int table, const int64_t* ids, int count, double* mean) const {
  std::fill_n(mean, kDim, 0.0);
  for (int j = 0; j < count; ++j) AddExact(table, ids[j], mean);
  for (int d = 0; d < kDim; ++d) mean[d] /= count;
}

void TeacherHidden::MeanApproximate(int table, const int64_t* ids, int count, double* mean,
                                    double* bound) const {
  constexpr int kNormals = kChunkIds * kDim;  // a multiple of NormalFloats::kLanes
  static_assert(kNormals % base::NormalFloats::kLanes == 0);
  std::array<double, kNormals> u1, u2, x, relative;
  std::array<int64_t, kChunkIds> past;  // the ids past the cache
  std::array<double, kChunkIds> scale;
  std::array<int, kChunkIds> slot;  // -1: cached
  // The sum, the approximations' error and the terms' absolute sum.
  std::array<double, kDim> acc{}, error{}, magnitude{};
  const int64_t cached = static_cast<int64_t>(hot_[table].size());
  for (int first = 0; first < count; first += kChunkIds) {
    const int n = std::min(kChunkIds, count - first);
    int drawn = 0;
    for (int j = 0; j < n; ++j) {
      const int64_t id = ids[first + j];
      slot[j] = id < cached ? -1 : drawn;
      if (id < cached) continue;
      base::CounterRng rng(base::HashOn(prefix_[table], uint64_t(id)));
      for (int d = 0; d < kDim; ++d) {
        u1[kDim * drawn + d] = rng.NextDouble();
        u2[kDim * drawn + d] = rng.NextDouble();
      }
      past[drawn++] = id;
    }
    // Apart, so that this loop vectorises (the file's options).
    for (int k = 0; k < drawn; ++k) scale[k] = 0.5 * Damping(past[k]);
    const int normals = kDim * drawn;
    const int padded = (normals + base::NormalFloats::kLanes - 1) / base::NormalFloats::kLanes *
                       base::NormalFloats::kLanes;
    std::fill(u1.begin() + normals, u1.begin() + padded, 0.5);
    std::fill(u2.begin() + normals, u2.begin() + padded, 0.5);
    normals_.ApproximateAll(u1.data(), u2.data(), x.data(), padded);
    for (int i = 0; i < normals; ++i) {
      const bool trusted = !std::isnan(x[i]);
      relative[i] = trusted ? base::NormalFloats::kBound : 0.0;
      if (!trusted) x[i] = base::CounterRng::NormalFrom(u1[i], u2[i]);
    }
    for (int j = 0; j < n; ++j) {
      const double* h = slot[j] < 0 ? hot_[table][ids[first + j]].data() : &x[kDim * slot[j]];
      const double s = slot[j] < 0 ? h[kDim] : scale[slot[j]];
      Accumulate(h, s, acc.data());
      for (int d = 0; d < kDim; ++d) {
        const double term = std::abs(h[d] * s);
        magnitude[d] += term;
        if (slot[j] >= 0) error[d] += relative[kDim * slot[j] + d] * term;
      }
    }
  }
  // Each sum's rounding is within (count + 1) roundoffs of the terms'
  // absolute sum (the products' included); both sums round, and both
  // quotients. The factor covers the error and magnitude sums' own rounding
  // and the approximations' terms standing in for the exact ones.
  for (int d = 0; d < kDim; ++d) {
    mean[d] = acc[d] / count;
    bound[d] = (error[d] + 2 * (count + 2) * kRoundoff * magnitude[d]) * (1 + 1e-6) / count +
               4 * kRoundoff * std::abs(mean[d]);
  }
}

double TeacherHidden::PairTerm(const Vector* means, int num_pairs) {
  double sum = 0;
  for (int p = 0; p < num_pairs; ++p) {
    for (int d = 0; d < kDim; ++d) sum += means[2 * p][d] * means[2 * p + 1][d];
  }
  return sum;
}

double TeacherHidden::PairTermBound(const Vector* means, const Vector* bounds, int num_pairs) {
  // The products' errors, and each sum's rounding (its terms + 1 roundoffs
  // of their absolute sum) in both.
  double error = 0, magnitude = 0;
  for (int p = 0; p < num_pairs; ++p) {
    for (int d = 0; d < kDim; ++d) {
      const double a = std::abs(means[2 * p][d]), b = std::abs(means[2 * p + 1][d]);
      const double da = bounds[2 * p][d], db = bounds[2 * p + 1][d];
      error += a * db + b * da + da * db;
      magnitude += (a + da) * (b + db);
    }
  }
  return (error + 2 * (num_pairs * kDim + 2) * kRoundoff * magnitude) * (1 + 1e-6);
}

}  // namespace lemrt::host
