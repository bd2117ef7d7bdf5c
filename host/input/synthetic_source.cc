#include "host/input/synthetic_source.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/random.h"
#include "glog/logging.h"
#include "host/input/teacher_hidden.h"

namespace lemrt::host {
namespace {

// Stream tags keep the hashed key spaces of samples and teacher apart.
constexpr uint64_t kSampleTag = 0x73616d706c65ULL;  // "sample"
constexpr uint64_t kWeightTag = 0x776569676874ULL;  // "weight"
constexpr uint64_t kDenseTag = 0x64656e7365ULL;     // "dense"
constexpr uint64_t kCrossTag = 0x63726f7373ULL;     // "cross"
constexpr int kMaxPairs = 2;
using base::kRoundoff;

double Damping(int64_t id) { return TeacherHidden::Damping(id); }
using base::HashOn;

}  // namespace

absl::StatusOr<std::unique_ptr<SyntheticSource>> SyntheticSource::Create(
    const config::RunConfig& config, int rank, int world_size) {
  return CreateWithCachedIds(config, rank, world_size, kCachedIds);
}

absl::StatusOr<std::unique_ptr<SyntheticSource>> SyntheticSource::CreateWithCachedIds(
    const config::RunConfig& config, int rank, int world_size, int64_t cached_ids,
    bool exact_hidden) {
  CHECK_GT(world_size, 0);
  CHECK(rank >= 0 && rank < world_size) << rank << " of " << world_size;
  const double exponent = config.data().synthetic().zipf_exponent();
  std::vector<Feature> features;
  for (const config::FeatureConfig& fc : config.features()) {
    Feature f;
    f.table = -1;
    for (int t = 0; t < config.tables_size(); ++t) {
      if (config.tables(t).name() == fc.table()) f.table = t;
    }
    if (f.table < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' names table '%s', which is not in the config.",
          fc.name(), fc.table()));
    }
    f.vocab = config.tables(f.table).vocab_size();
    f.max_length = fc.max_sequence_length();
    if (f.vocab <= 0 || f.max_length <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' has vocab_size %d and max_sequence_length %d; both "
          "must be positive.",
          fc.name(), f.vocab, f.max_length));
    }
    const double top = static_cast<double>(f.vocab) + 1;
    f.zipf_span = std::abs(exponent - 1) < 1e-9
                      ? std::log(top)
                      : std::pow(top, 1 - exponent) - 1;
    f.zipf_power = std::abs(exponent - 1) < 1e-9 ? 0 : 1 / (1 - exponent);
    if (f.zipf_power != 0) {
      f.zipf_floor = base::PowerFloor(f.zipf_power, std::min(1.0, 1 + f.zipf_span),
                                      std::max(1.0, 1 + f.zipf_span));
    }
    features.push_back(f);
  }
  return std::unique_ptr<SyntheticSource>(new SyntheticSource(
      config, rank, world_size, std::move(features), cached_ids, exact_hidden));
}

SyntheticSource::SyntheticSource(const config::RunConfig& config, int rank,
                                 int world_size, std::vector<Feature> features,
                                 int64_t cached_ids, bool exact_hidden)
    : synthetic_(config.data().synthetic()),
      seed_(config.training().seed()),
      global_batch_(config.training().global_batch()),
      local_batch_(global_batch_ / world_size),
      rank_(rank),
      num_dense_(config.model().num_dense_features()),
      num_eval_samples_(config.training().eval_samples()),
      num_eval_chunks_(num_eval_samples_ / global_batch_ + (num_eval_samples_ % global_batch_ != 0)),
      features_(std::move(features)),
      exact_hidden_(exact_hidden) {
  const int num_features = static_cast<int>(features_.size());
  num_pairs_ = std::min(kMaxPairs, num_features / 2);
  if (synthetic_.teacher_cross_scale() != 0) num_crosses_ = std::min(kMaxCrosses, num_features / 3);
  for (int k = 0; k < num_dense_; ++k) {
    base::CounterRng rng(base::HashKeys({seed_, kDenseTag, uint64_t(k)}));
    dense_weight_.push_back(rng.NextNormal() / std::sqrt(num_dense_));
  }
  FillCaches(config, cached_ids);
}

void SyntheticSource::FillCaches(const config::RunConfig& config, int64_t cached_ids) {
  const int num_tables = config.tables_size();
  sample_prefix_ = base::HashKeys({seed_, kSampleTag});
  for (int t = 0; t < num_tables; ++t) {
    weight_prefix_.push_back(base::HashKeys({seed_, kWeightTag, uint64_t(t)}));
    cross_prefix_.push_back(base::HashKeys({seed_, kCrossTag, uint64_t(t)}));
  }
  auto cached = [&](int t) {
    return std::clamp<int64_t>(config.tables(t).vocab_size(), 0, cached_ids);
  };
  hot_u_.resize(num_tables);
  for (int f = 0; f < 3 * num_crosses_; ++f) {
    const int t = features_[f].table;
    if (hot_u_[t].empty()) hot_u_[t] = TeacherFloats(cross_prefix_[t], cached(t));
  }
  for (int t = 0; t < num_tables; ++t) {
    hot_w_.push_back(TeacherFloats(weight_prefix_[t], cached(t)));
  }
  std::vector<int64_t> vocab;
  std::vector<bool> paired(num_tables, false);
  for (int t = 0; t < num_tables; ++t) vocab.push_back(config.tables(t).vocab_size());
  for (int f = 0; f < 2 * num_pairs_; ++f) paired[features_[f].table] = true;
  hidden_.emplace(seed_, vocab, paired, cached_ids);
}

absl::Status SyntheticSource::TrainBatch(int64_t step, Batch* batch) {
  CHECK_GE(step, 0);
  FillBatch(static_cast<uint64_t>(step * global_batch_ + rank_ * local_batch_),
            batch);
  return absl::OkStatus();
}

absl::Status SyntheticSource::EvalBatch(int64_t chunk, Batch* batch) {
  CHECK(chunk >= 0 && chunk < num_eval_chunks_) << chunk;
  FillBatch(kEvalSampleBase + static_cast<uint64_t>(chunk * global_batch_ +
                                                    rank_ * local_batch_),
            batch);
  // Rows past the eval set are masked (not scored).
  const int64_t real = std::clamp<int64_t>(
      num_eval_samples_ - chunk * global_batch_ - rank_ * local_batch_, 0, local_batch_);
  if (real < local_batch_) {
    batch->mask.assign(local_batch_, 0.0f);
    std::fill_n(batch->mask.begin(), real, 1.0f);
  }
  batch->global_samples = std::min(global_batch_, num_eval_samples_ - chunk * global_batch_);
  return absl::OkStatus();
}

void SyntheticSource::FillBatch(uint64_t first_g, Batch* batch) const {
  batch->Resize(local_batch_, num_dense_, static_cast<int>(features_.size()));
  batch->teacher_prob.resize(local_batch_);
  for (int64_t i = 0; i < local_batch_; ++i) {
    FillSample(first_g + static_cast<uint64_t>(i), i, batch);
  }
}

void SyntheticSource::FillSample(uint64_t g, int64_t row, Batch* batch) const {
  base::CounterRng rng(HashOn(sample_prefix_, g));
  // Pooled hidden vectors of the features in pairs (0,1), (2,3), each
  // coordinate within pooled_bound of the exact one (teacher_hidden.h).
  std::array<TeacherHidden::Vector, 2 * kMaxPairs> pooled{}, pooled_bound{};
  // Pooled cross scalars of the features in triples.
  std::array<double, 3 * kMaxCrosses> crossed{};
  double id_term = 0;
  for (size_t f = 0; f < features_.size(); ++f) {
    const Feature& feature = features_[f];
    const int length = 1 + static_cast<int>(rng.NextBelow(feature.max_length));
    const bool in_pair = static_cast<int>(f) < 2 * num_pairs_;
    const bool in_cross = static_cast<int>(f) < 3 * num_crosses_;
    std::vector<int64_t>& ids = batch->ids[f];
    // The ids first, then their teacher values: the draws then overlap
    // instead of each lookup waiting on its draw. The same draws and sums in
    // the same order as one loop.
    const size_t first = ids.size();
    for (int j = 0; j < length; j += kIdChunk) {
      DrawIds(feature, std::min(kIdChunk, length - j), &rng, &ids);
    }
    const int t = feature.table;
    const double weight_sum = SumTeacherFloats(hot_w_[t], weight_prefix_[t], &ids[first], length);
    if (in_pair && !exact_hidden_) {
      hidden_->MeanApproximate(t, &ids[first], length, pooled[f].data(), pooled_bound[f].data());
    }
    if (in_cross) {
      crossed[f] = SumTeacherFloats(hot_u_[t], cross_prefix_[t], &ids[first], length);
    }
    batch->offsets[f][row + 1] = static_cast<int64_t>(ids.size());
    id_term += weight_sum / length;
    if (in_cross) crossed[f] /= length;
  }
  double dense_term = 0;
  float* dense = batch->dense.data() + row * num_dense_;
  for (int k = 0; k < num_dense_; ++k) {
    // 1 - u is in (0, 1], so the log is finite.
    dense[k] = static_cast<float>(std::log1p(-std::log(1 - rng.NextDouble()) * 10));
    dense_term += dense_weight_[k] * (dense[k] - kDenseMean);
  }
  const double pair_term = exact_hidden_ ? ExactPairTerm(*batch, row)
                                         : TeacherHidden::PairTerm(pooled.data(), num_pairs_);
  const Logit logit = TeacherLogit(id_term, dense_term, pair_term, crossed);
  double prob = 1 / (1 + std::exp(-logit.value));
  const double u = rng.NextDouble();
  if (!exact_hidden_) {
    // The exact logit is within logit_bound; the sigmoid's slope is at most
    // 1/4, and each prob rounds within 8 roundoffs (libm's exp counted as an
    // ulp). Where the float or the label could differ, the exact vectors.
    const double logit_bound =
        std::abs(synthetic_.teacher_pair_scale()) *
            TeacherHidden::PairTermBound(pooled.data(), pooled_bound.data(), num_pairs_) +
        16 * kRoundoff * logit.magnitude;
    const double prob_bound = 0.25 * logit_bound * (1 + 1e-6) + 16 * kRoundoff;
    if (!TeacherIsDecided(prob, prob_bound, u)) {
      const double exact = ExactPairTerm(*batch, row);
      prob = 1 / (1 + std::exp(-TeacherLogit(id_term, dense_term, exact, crossed).value));
    }
  }
  batch->teacher_prob[row] = static_cast<float>(prob);
  batch->labels[row] = u < prob ? 1.0f : 0.0f;
}

double SyntheticSource::ExactPairTerm(const Batch& batch, int64_t row) const {
  std::array<TeacherHidden::Vector, 2 * kMaxPairs> pooled{};
  for (int f = 0; f < 2 * num_pairs_; ++f) {
    const int64_t begin = batch.offsets[f][row];
    const int length = static_cast<int>(batch.offsets[f][row + 1] - begin);
    hidden_->MeanExact(features_[f].table, &batch.ids[f][begin], length, pooled[f].data());
  }
  return TeacherHidden::PairTerm(pooled.data(), num_pairs_);
}

bool SyntheticSource::TeacherIsDecided(double prob, double bound, double u) {
  const double low = prob - bound, high = prob + bound;
  return static_cast<float>(low) == static_cast<float>(high) && (u < low || u >= high);
}

SyntheticSource::Logit SyntheticSource::TeacherLogit(
    double id_term, double dense_term, double pair_term,
    const std::array<double, 3 * kMaxCrosses>& crossed) const {
  const double id_norm = features_.empty() ? 0 : kIdGain / std::sqrt(double(features_.size()));
  double logit = kBias + synthetic_.teacher_id_scale() * id_norm * id_term +
                 synthetic_.teacher_dense_scale() * dense_term +
                 synthetic_.teacher_pair_scale() * pair_term;
  double cross_part = 0;
  if (num_crosses_ > 0) {
    double cross_term = 0;
    for (int c = 0; c < num_crosses_; ++c) {
      cross_term += crossed[3 * c] * crossed[3 * c + 1] * crossed[3 * c + 2];
    }
    cross_part = synthetic_.teacher_cross_scale() / std::sqrt(double(num_crosses_)) * cross_term;
    logit += cross_part;
  }
  // Each of the sums' four roundings is within a roundoff of this.
  const double magnitude =
      std::abs(kBias) + std::abs(synthetic_.teacher_id_scale() * id_norm * id_term) +
      std::abs(synthetic_.teacher_dense_scale() * dense_term) +
      std::abs(synthetic_.teacher_pair_scale() * pair_term) + std::abs(cross_part);
  return {logit, magnitude * (1 + 1e-6)};
}

void SyntheticSource::DrawIds(const Feature& feature, int count, base::CounterRng* rng,
                              std::vector<int64_t>* ids) const {
  // Each id takes two values of the stream: u, then the Zipf draw's
  // NextDouble or the uniform draw's NextBelow. The Zipf draws' powers are
  // computed after, all at once (base/power_floor.h).
  std::array<double, kIdChunk> bases{};  // of the Zipf draws' powers
  std::array<int, kIdChunk> slot{};      // their places among the chunk's ids
  int zipfs = 0;
  const double zipf_fraction = synthetic_.zipf_fraction();
  const uint64_t vocab = static_cast<uint64_t>(feature.vocab);
  const size_t first = ids->size();
  for (int j = 0; j < count; ++j) {
    const double u = rng->NextDouble();
    const uint64_t value = rng->NextU64();
    bases[zipfs] = base::CounterRng::UnitDouble(value) * feature.zipf_span;
    slot[zipfs] = j;
    zipfs += u < zipf_fraction;
    ids->push_back(static_cast<int64_t>(base::CounterRng::Below(value, vocab)));
  }
  // Inverse CDF of the density ~ x^-s on [1, V + 1): id floor(x) - 1.
  std::array<double, kIdChunk> floor_x{};
  if (feature.zipf_power == 0) {
    for (int k = 0; k < zipfs; ++k) floor_x[k] = std::floor(std::exp(bases[k]));
  } else {
    for (int k = 0; k < zipfs; ++k) bases[k] += 1;
    feature.zipf_floor.FloorAll(bases.data(), floor_x.data(), zipfs);
  }
  for (int k = 0; k < zipfs; ++k) {
    const double id = floor_x[k] - 1;
    // !(id > 0) also catches NaN.
    (*ids)[first + slot[k]] =
        id > 0 ? std::min(static_cast<int64_t>(std::min(id, 9.0e18)), feature.vocab - 1) : 0;
  }
}

std::vector<float> SyntheticSource::TeacherFloats(uint64_t prefix, int64_t count) const {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t id = 0; id < count; ++id) {
    base::CounterRng rng(HashOn(prefix, uint64_t(id)));
    values[id] = static_cast<float>(rng.NextNormal() * Damping(id));
  }
  return values;
}

double SyntheticSource::SumTeacherFloats(const std::vector<float>& cache, uint64_t prefix,
                                         const int64_t* ids, int count) const {
  double sum = 0;
  std::array<float, kIdChunk> value{};
  std::array<int64_t, kIdChunk> past{};  // the ids past the cache
  std::array<uint64_t, kIdChunk> key{};   // theirs
  std::array<double, kIdChunk> damping{};
  std::array<float, kIdChunk> computed{};
  std::array<int, kIdChunk> slot{};
  const int64_t cached = static_cast<int64_t>(cache.size());
  for (int first = 0; first < count; first += kIdChunk) {
    const int n = std::min(kIdChunk, count - first);
    int uncached = 0;
    for (int j = 0; j < n; ++j) {
      const int64_t id = ids[first + j];
      if (id < cached) {
        value[j] = cache[id];
      } else {
        past[uncached] = id;
        slot[uncached++] = j;
      }
    }
    // Apart, so that this loop vectorises (the file's options).
    for (int k = 0; k < uncached; ++k) {
      key[k] = HashOn(prefix, uint64_t(past[k]));
      damping[k] = Damping(past[k]);
    }
    normals_(key.data(), damping.data(), computed.data(), uncached);
    for (int k = 0; k < uncached; ++k) value[slot[k]] = computed[k];
    for (int j = 0; j < n; ++j) sum += value[j];
  }
  return sum;
}

}  // namespace lemrt::host
