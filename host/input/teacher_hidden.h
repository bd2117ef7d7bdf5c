// TeacherHidden: the synthetic teacher's hidden vectors (synthetic_source.h)
//   h(t, id) = N(0, I_4) / 2 x damp(id),
// the kDim normals drawn with CounterRng(HashKeys({seed, "hidden", t, id})),
// averaged over a feature's ids. MeanExact is the definition (libm's
// normals); MeanApproximate computes the same mean mostly without libm
// (NormalFloats' vectorised approximation) and bounds its distance from
// MeanExact's, so that a caller can decide whether the difference matters.
// Ids below the cache size read precomputed normals (the Zipf head); caching
// changes no value.
//
// Thread-compatible; immutable after construction.
#ifndef LEMRT_HOST_INPUT_TEACHER_HIDDEN_H_
#define LEMRT_HOST_INPUT_TEACHER_HIDDEN_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/normal_floats.h"

namespace lemrt::host {

class TeacherHidden {
 public:
  static constexpr int kDim = 4;
  static constexpr double kHotScale = 100.0;  // ids

  // damp(id) = 1 / sqrt(1 + id / kHotScale): the teacher's weight on an id.
  static double Damping(int64_t id) {
    return 1.0 / std::sqrt(1.0 + static_cast<double>(id) / kHotScale);
  }

  // Hidden vectors of tables [0, vocab.size()) under `seed`; ids below
  // min(vocab[t], cached_ids) of the tables with cache[t] set are precomputed.
  TeacherHidden(uint64_t seed, const std::vector<int64_t>& vocab, const std::vector<bool>& cache,
                int64_t cached_ids);

  using Vector = std::array<double, kDim>;

  // mean[d] = the sum over ids[0 .. count), in order, of h(table, id)[d]
  // (each term its normal times 0.5 damp(id)), divided by count > 0.
  void MeanExact(int table, const int64_t* ids, int count, double* mean) const;

  // The same mean from approximate normals, and bound[d] >= |mean[d] - the
  // exact mean[d]|, about 1e-12 of the terms' mean absolute value.
  void MeanApproximate(int table, const int64_t* ids, int count, double* mean, double* bound) const;

  // The teacher's pair term: the sum over pairs p < num_pairs and
  // coordinates d, in that order, of means[2p][d] x means[2p + 1][d].
  static double PairTerm(const Vector* means, int num_pairs);
  // A bound on |PairTerm(means) - PairTerm(exact)| when each coordinate of
  // means is within bounds' of exact's.
  static double PairTermBound(const Vector* means, const Vector* bounds, int num_pairs);

 private:
  // Ids a MeanApproximate pass draws at once: kDim normals each.
  static constexpr int kChunkIds = 16;
  // An id's kDim normals and their scale 0.5 damp(id).
  using Normals = std::array<double, kDim + 1>;

  void AddExact(int table, int64_t id, double* acc) const;

  std::vector<uint64_t> prefix_;           // per table: HashKeys({seed, "hidden", t})
  std::vector<std::vector<Normals>> hot_;  // per table: ids below the cache size
  base::NormalFloats normals_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_TEACHER_HIDDEN_H_
