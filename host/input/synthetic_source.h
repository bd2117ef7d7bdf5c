// Built-in synthetic data: sparse ids, dense features and labels drawn from a
// planted "teacher" model. Every sample is a pure function of (training.seed,
// global sample index), so the data is the same for every world size.
// Thread-compatible (TrainBatch / EvalBatch mutate only the caller's Batch;
// the source itself is immutable after Create).
#ifndef LEMRT_HOST_INPUT_SYNTHETIC_SOURCE_H_
#define LEMRT_HOST_INPUT_SYNTHETIC_SOURCE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/normal_floats.h"
#include "base/power_floor.h"
#include "base/random.h"
#include "host/batch.h"
#include "host/input/data_source.h"
#include "host/input/teacher_hidden.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// Sample g (GB = global batch, LB = GB / world_size):
//   train step s, rank r, row i:  g = s * GB + r * LB + i,  0 <= i < LB
//   eval chunk c, rank r, row i:  g = 2^40 + c * GB + r * LB + i
// Per feature f (table t, vocab V):
//   length L uniform in [1, max_sequence_length];
//   each id: with probability zipf_fraction floor(X) - 1 (clamped to V - 1)
//   for X from the continuous power law x^-zipf_exponent on [1, V + 1), so
//   low ids are hot; otherwise uniform in [0, V). Duplicates may occur.
// Dense k: x_k = log1p(10 * Exp(1)), mean 2.01, std 0.91, always >= 0.
// Teacher, fixed per seed (weights hashed from (seed, table, id)):
//   damp(id) = 1 / sqrt(1 + id / kHotScale)       (kHotScale = 100 ids)
//   w(t, id) ~ N(0, 1) * damp(id)
//   h(t, id) ~ N(0, I_4) / 2 * damp(id)
//   v_k ~ N(0, 1) / sqrt(num_dense)
//   logit = kBias
//     + teacher_id_scale * kIdGain / sqrt(F) * sum_f mean_{f's ids} w(t_f, id)
//     + teacher_dense_scale * sum_k v_k * (x_k - kDenseMean)
//     + teacher_pair_scale * sum over pairs (a, b) in {(0, 1), (2, 3)}
//         with b < F of mean_{a's ids} h . mean_{b's ids} h
//     + teacher_cross_scale / sqrt(C) * sum over triples (a, a+1, a+2),
//         a = 0, 3, ..., 3 (C - 1), C = min(kMaxCrosses, F / 3), of
//         mean_{a's ids} u . mean_{a+1's ids} u . mean_{a+2's ids} u
//         with u(t, id) ~ N(0, 1) * damp(id)   (only when the scale is not 0)
//   teacher_prob = sigmoid(logit); label ~ Bernoulli(teacher_prob).
// The pair terms are pairwise dot products, which DLRM's dot interaction
// represents; the three-way crosses are not (the top MLP sees only pairwise
// dot products), while a cross network of two or more layers forms them
// exactly (products of three embedding coordinates).
// The damping puts the id signal on ids that a short run sees often (ids drawn
// uniformly from a large vocabulary are seen about once and carry almost no
// weight), so a trained model can approach the teacher's AUC. 1 / sqrt(F)
// keeps the id term's size independent of the number of features. With the
// defaults the teacher AUC is about 0.78-0.80 and the positive rate 0.35.
class SyntheticSource : public DataSource {
 public:
  static constexpr uint64_t kEvalSampleBase = uint64_t{1} << 40;
  static constexpr double kHotScale = TeacherHidden::kHotScale;  // ids
  static constexpr double kIdGain = 2.0;
  static constexpr double kBias = -0.7;
  static constexpr double kDenseMean = 2.0146;  // E[log1p(10 Exp(1))]
  static constexpr int kHiddenDim = TeacherHidden::kDim;
  static constexpr int kMaxCrosses = 8;  // three-way cross terms

  // Creates rank `rank` of `world_size`'s source. `config` must outlive it and
  // is assumed validated; a feature naming an unknown table, a non-positive
  // vocab_size or max_sequence_length still returns InvalidArgument.
  static absl::StatusOr<std::unique_ptr<SyntheticSource>> Create(
      const config::RunConfig& config, int rank, int world_size);

  // The teacher values w(t, id) and h(t, id) of ids below this many are
  // precomputed (the Zipf head, where most draws land; h only for the tables
  // of paired features). Caching never changes a value.
  static constexpr int64_t kCachedIds = 4096;
  // Create with another cache size; 0 turns the caches off. exact_hidden:
  // the pair term from libm's hidden vectors for every sample, not only where
  // the approximate ones leave teacher_prob's float or the label in doubt.
  // For tests and bench_synthetic: the batches are identical either way.
  static absl::StatusOr<std::unique_ptr<SyntheticSource>> CreateWithCachedIds(
      const config::RunConfig& config, int rank, int world_size, int64_t cached_ids,
      bool exact_hidden = false);

  // Whether every probability within `bound` of `prob` gives the same float
  // and, against the uniform u, the same label (u < probability).
  static bool TeacherIsDecided(double prob, double bound, double u);

  SyntheticSource(const SyntheticSource&) = delete;
  SyntheticSource& operator=(const SyntheticSource&) = delete;

  // Fills `batch` with LB samples (and teacher_prob). Never fails; step >= 0.
  absl::Status TrainBatch(int64_t step, Batch* batch) override;
  // Same for eval chunk `chunk` in [0, num_eval_chunks()); rows past
  // training.eval_samples are masked.
  absl::Status EvalBatch(int64_t chunk, Batch* batch) override;
  // ceil(training.eval_samples / global_batch).
  int64_t num_eval_chunks() const override { return num_eval_chunks_; }
  int64_t num_eval_samples() const override { return num_eval_samples_; }
  bool has_teacher() const override { return true; }

 private:
  struct Feature {
    int table = 0;          // Index into config.tables().
    int64_t vocab = 0;      // Rows of the table.
    int max_length = 1;     // Ids per sample, inclusive upper bound.
    double zipf_span = 0;   // (V + 1)^(1 - s) - 1, or log(V + 1) when s == 1.
    double zipf_power = 0;  // 1 / (1 - s), or 0 when s == 1 (the draw is exp).
    // floor((1 + u x zipf_span)^zipf_power) for u in [0, 1), when s != 1.
    base::PowerFloor zipf_floor;
  };

  SyntheticSource(const config::RunConfig& config, int rank, int world_size,
                  std::vector<Feature> features, int64_t cached_ids, bool exact_hidden);
  // Fills hot_w_[t], hot_u_[t] and hidden_ for ids below `cached_ids`.
  void FillCaches(const config::RunConfig& config, int64_t cached_ids);

  // Fills `batch` with samples first_g .. first_g + LB - 1.
  void FillBatch(uint64_t first_g, Batch* batch) const;
  // Writes sample `g` as row `row` of `batch` (rows are filled in order).
  void FillSample(uint64_t g, int64_t row, Batch* batch) const;
  // The most ids a DrawIds call draws, and the most teacher values a
  // SumTeacherFloats pass computes at once.
  static constexpr int kIdChunk = 64;
  // Appends `count` <= kIdChunk ids of `feature` drawn from `rng`.
  void DrawIds(const Feature& feature, int count, base::CounterRng* rng,
               std::vector<int64_t>* ids) const;
  // float(N(0, 1) x damp(id)) for ids [0, count), the normal keyed by
  // HashOn(prefix, id): the caches of SumTeacherFloats.
  std::vector<float> TeacherFloats(uint64_t prefix, int64_t count) const;
  // The sum over `ids`, in order, of the teacher's w(t, id) (cache hot_w_[t],
  // prefix weight_prefix_[t]) or u(t, id) (hot_u_[t], cross_prefix_[t]):
  // float(N(0, 1) x damp(id)) with the normal keyed by HashOn(prefix, id).
  double SumTeacherFloats(const std::vector<float>& cache, uint64_t prefix, const int64_t* ids,
                          int count) const;
  // The pair term of row `row` of `batch` (whose ids are drawn) from libm's
  // hidden vectors.
  double ExactPairTerm(const Batch& batch, int64_t row) const;
  // The logit from the teacher's terms as the class comment sums them, and
  // a bound on the sum of their absolute values (each of its roundings is
  // within a roundoff of it).
  struct Logit {
    double value = 0;
    double magnitude = 0;
  };
  Logit TeacherLogit(double id_term, double dense_term, double pair_term,
                     const std::array<double, 3 * kMaxCrosses>& crossed) const;

  const config::SyntheticSourceConfig& synthetic_;
  const uint64_t seed_;
  const int64_t global_batch_;  // Samples.
  const int64_t local_batch_;   // Samples.
  const int rank_;
  const int num_dense_;
  const int64_t num_eval_samples_;
  const int64_t num_eval_chunks_;
  const std::vector<Feature> features_;
  int num_pairs_ = 0;                      // Of the pairs (0,1), (2,3).
  int num_crosses_ = 0;                    // Triples (0,1,2), (3,4,5), ...; 0 without them.
  std::vector<double> dense_weight_;       // v_k, [num_dense].
  // base::HashKeys of the leading keys of the hashed streams: (seed,
  // "sample") and, per table, (seed, "weight", t).
  uint64_t sample_prefix_ = 0;
  std::vector<uint64_t> weight_prefix_;
  std::vector<uint64_t> cross_prefix_;     // (seed, "cross", t)
  base::NormalFloats normals_;
  std::vector<std::vector<float>> hot_w_;  // Per table: w(t, id) for small ids.
  std::vector<std::vector<float>> hot_u_;  // Per table of a crossed feature: u(t, id).
  std::optional<TeacherHidden> hidden_;     // h(t, id) of the paired features' tables
  const bool exact_hidden_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_SYNTHETIC_SOURCE_H_
