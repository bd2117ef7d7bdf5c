#include "host/input/synthetic_source.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/auc.h"
#include "base/random.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "host/input/data_source.h"

namespace lemrt::host {
namespace {

config::RunConfig TestConfig(int64_t global_batch = 64) {
  config::RunConfig config;
  CHECK(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        tables { name: "small" vocab_size: 1000 dim: 8 }
        tables { name: "large" vocab_size: 100000 dim: 8 }
        features { name: "f0" table: "small" }
        features { name: "f1" table: "large" max_sequence_length: 5 }
        features { name: "f2" table: "large" }
        features { name: "f3" table: "small" max_sequence_length: 3 }
        features { name: "f4" table: "large" max_sequence_length: 2 }
        training { seed: 7 eval_samples: 256 }
      )pb",
      &config));
  config.mutable_training()->set_global_batch(global_batch);
  return config;
}

std::unique_ptr<SyntheticSource> MakeSource(const config::RunConfig& config,
                                            int rank, int world_size) {
  auto source = SyntheticSource::Create(config, rank, world_size);
  CHECK(source.ok()) << source.status();
  return *std::move(source);
}

// The batches of all ranks of one step, concatenated in rank order.
Batch GlobalBatch(const config::RunConfig& config, int world_size, bool eval,
                  int64_t index) {
  Batch all;
  for (int rank = 0; rank < world_size; ++rank) {
    auto source = MakeSource(config, rank, world_size);
    Batch local;
    EXPECT_TRUE((eval ? source->EvalBatch(index, &local)
                      : source->TrainBatch(index, &local))
                    .ok());
    all.num_samples += local.num_samples;
    all.num_dense = local.num_dense;
    all.dense.insert(all.dense.end(), local.dense.begin(), local.dense.end());
    all.labels.insert(all.labels.end(), local.labels.begin(),
                      local.labels.end());
    all.teacher_prob.insert(all.teacher_prob.end(), local.teacher_prob.begin(),
                            local.teacher_prob.end());
    all.ids.resize(local.ids.size());
    all.offsets.resize(local.ids.size(), {0});
    for (int f = 0; f < local.num_features(); ++f) {
      const int64_t base = all.offsets[f].back();
      for (int64_t i = 1; i <= local.num_samples; ++i) {
        all.offsets[f].push_back(base + local.offsets[f][i]);
      }
      all.ids[f].insert(all.ids[f].end(), local.ids[f].begin(),
                        local.ids[f].end());
    }
  }
  return all;
}

TEST(SyntheticSourceTest, SamplesDoNotDependOnWorldSize) {
  const config::RunConfig config = TestConfig();
  for (const bool eval : {false, true}) {
    for (const int64_t index : {0, 3}) {
      const Batch reference = GlobalBatch(config, 1, eval, index);
      ASSERT_EQ(reference.num_samples, 64);
      for (const int world_size : {2, 4}) {
        SCOPED_TRACE(testing::Message() << "eval " << eval << " index " << index
                                        << " world " << world_size);
        const Batch other = GlobalBatch(config, world_size, eval, index);
        EXPECT_EQ(other.dense, reference.dense);
        EXPECT_EQ(other.labels, reference.labels);
        EXPECT_EQ(other.teacher_prob, reference.teacher_prob);
        EXPECT_EQ(other.offsets, reference.offsets);
        EXPECT_EQ(other.ids, reference.ids);
      }
    }
  }
}

TEST(SyntheticSourceTest, ShapesIdsAndLengthsAreInRange) {
  const config::RunConfig config = TestConfig();
  auto source = MakeSource(config, 1, 2);
  EXPECT_TRUE(source->has_teacher());
  EXPECT_EQ(source->num_eval_chunks(), 4);
  Batch batch;
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(source->TrainBatch(step, &batch).ok());
    ASSERT_EQ(batch.num_samples, 32);
    ASSERT_EQ(batch.num_dense, 13);
    ASSERT_EQ(batch.num_features(), 5);
    ASSERT_EQ(batch.teacher_prob.size(), 32u);
    for (int f = 0; f < batch.num_features(); ++f) {
      const auto& feature = config.features(f);
      const int64_t vocab = feature.table() == "small" ? 1000 : 100000;
      for (int64_t i = 0; i < batch.num_samples; ++i) {
        const auto ids = batch.SampleIds(f, i);
        EXPECT_GE(static_cast<int>(ids.size()), 1);
        EXPECT_LE(static_cast<int>(ids.size()), feature.max_sequence_length());
        for (const int64_t id : ids) {
          EXPECT_GE(id, 0);
          EXPECT_LT(id, vocab);
        }
      }
    }
    for (int64_t i = 0; i < batch.num_samples; ++i) {
      EXPECT_TRUE(batch.labels[i] == 0.0f || batch.labels[i] == 1.0f);
      EXPECT_GT(batch.teacher_prob[i], 0.0f);
      EXPECT_LT(batch.teacher_prob[i], 1.0f);
    }
    for (const float x : batch.dense) {
      EXPECT_GE(x, 0.0f);
      EXPECT_LT(x, 10.0f);
    }
  }
}

TEST(SyntheticSourceTest, ZipfHeadIsHot) {
  const config::RunConfig config = TestConfig(1024);
  auto source = MakeSource(config, 0, 1);
  Batch batch;
  int64_t head = 0;
  int64_t middle = 0;  // Ids 500..509 together.
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(source->TrainBatch(step, &batch).ok());
    for (const int64_t id : batch.ids[0]) {  // "small", one-hot.
      head += id == 0;
      middle += id >= 500 && id < 510;
    }
  }
  EXPECT_GT(head, 5 * middle) << head << " vs " << middle;
  EXPECT_GT(middle, 0);
}

TEST(SyntheticSourceTest, ExponentOneAndLargeExponentsStayInRange) {
  for (const float exponent : {1.0f, 0.5f, 3.0f}) {
    config::RunConfig config = TestConfig();
    config.mutable_data()->mutable_synthetic()->set_zipf_exponent(exponent);
    config.mutable_data()->mutable_synthetic()->set_zipf_fraction(1.0f);
    auto source = MakeSource(config, 0, 1);
    Batch batch;
    ASSERT_TRUE(source->TrainBatch(0, &batch).ok());
    int64_t zeros = 0;
    for (const int64_t id : batch.ids[1]) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, 100000);
      zeros += id == 0;
    }
    // A flat law (s < 1) over 1e5 ids rarely hits id 0 in one batch.
    if (exponent >= 1.0f) {
      EXPECT_GT(zeros, 0) << exponent;
    }
  }
}

TEST(SyntheticSourceTest, TeacherIsInformativeAndBalanced) {
  const config::RunConfig config = TestConfig(1024);
  auto source = MakeSource(config, 0, 1);
  Batch batch;
  std::vector<float> probs;
  std::vector<float> labels;
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(source->TrainBatch(step, &batch).ok());
    probs.insert(probs.end(), batch.teacher_prob.begin(),
                 batch.teacher_prob.end());
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
  }
  double positives = 0;
  for (const float label : labels) positives += label;
  const double positive_rate = positives / static_cast<double>(labels.size());
  const double auc = base::Auc(probs, labels);
  EXPECT_GT(auc, 0.7);
  EXPECT_LT(auc, 0.95);
  EXPECT_GT(positive_rate, 0.2);
  EXPECT_LT(positive_rate, 0.6);
  RecordProperty("teacher_auc", std::to_string(auc));
}

TEST(SyntheticSourceTest, EvalSamplesDifferFromTrainSamples) {
  const config::RunConfig config = TestConfig();
  auto source = MakeSource(config, 0, 1);
  Batch train;
  Batch eval;
  ASSERT_TRUE(source->TrainBatch(0, &train).ok());
  ASSERT_TRUE(source->EvalBatch(0, &eval).ok());
  int64_t equal_rows = 0;
  for (int64_t i = 0; i < train.num_samples; ++i) {
    bool same = true;
    for (int k = 0; k < train.num_dense; ++k) {
      same = same && train.dense[i * 13 + k] == eval.dense[i * 13 + k];
    }
    equal_rows += same;
  }
  EXPECT_EQ(equal_rows, 0);
  EXPECT_NE(train.ids, eval.ids);
}

TEST(SyntheticSourceTest, SeedChangesTheData) {
  config::RunConfig config = TestConfig();
  const Batch first = GlobalBatch(config, 1, false, 0);
  EXPECT_EQ(GlobalBatch(config, 1, false, 0).dense, first.dense);
  config.mutable_training()->set_seed(8);
  EXPECT_NE(GlobalBatch(config, 1, false, 0).dense, first.dense);
}

// The teacher caches (w, u and h of the Zipf head) change no value: ids, dense
// features, labels and teacher probabilities equal those of a source without
// caches, and of one caching most of the vocabulary, bit for bit.
// A plain transcription of the documented sampling and teacher
// (synthetic_source.h): every hashed stream keyed by base::HashKeys of its
// whole key list, the streams' tags spelled out, nothing cached.
struct ReferenceSample {
  std::vector<std::vector<int64_t>> ids;  // per feature
  std::vector<float> dense;
  double prob = 0;
  float label = 0;
};

ReferenceSample Reference(const config::RunConfig& config, uint64_t g) {
  constexpr uint64_t kSampleTag = 0x73616d706c65ULL;  // "sample"
  constexpr uint64_t kWeightTag = 0x776569676874ULL;  // "weight"
  constexpr uint64_t kHiddenTag = 0x68696464656eULL;  // "hidden"
  constexpr uint64_t kDenseTag = 0x64656e7365ULL;     // "dense"
  constexpr uint64_t kCrossTag = 0x63726f7373ULL;     // "cross"
  const uint64_t seed = config.training().seed();
  const auto& syn = config.data().synthetic();
  const double s = syn.zipf_exponent();
  auto damping = [](int64_t id) { return 1.0 / std::sqrt(1.0 + id / SyntheticSource::kHotScale); };
  auto table_of = [&](const config::FeatureConfig& f) {
    for (int t = 0; t < config.tables_size(); ++t) {
      if (config.tables(t).name() == f.table()) return t;
    }
    return -1;
  };
  const int F = config.features_size();
  const int pairs = std::min(2, F / 2);
  const int crosses = syn.teacher_cross_scale() != 0 ? std::min(8, F / 3) : 0;
  std::vector<double> crossed(F, 0.0);
  base::CounterRng rng(base::HashKeys({seed, kSampleTag, g}));
  ReferenceSample out;
  std::vector<std::array<double, SyntheticSource::kHiddenDim>> pooled(4);
  for (auto& p : pooled) p.fill(0);
  double id_term = 0;
  for (int f = 0; f < F; ++f) {
    const int t = table_of(config.features(f));
    const int64_t vocab = config.tables(t).vocab_size();
    const int length = 1 + static_cast<int>(rng.NextBelow(config.features(f).max_sequence_length()));
    double weight_sum = 0;
    out.ids.emplace_back();
    for (int j = 0; j < length; ++j) {
      int64_t id;
      if (rng.NextDouble() < syn.zipf_fraction()) {
        const double u = rng.NextDouble();
        const double top = static_cast<double>(vocab) + 1;
        const double x = std::abs(s - 1) < 1e-9 ? std::exp(u * std::log(top))
                                                : std::pow(1 + u * (std::pow(top, 1 - s) - 1),
                                                           1 / (1 - s));
        const double v = std::floor(x) - 1;
        id = !(v > 0) ? 0 : std::min(static_cast<int64_t>(std::min(v, 9.0e18)), vocab - 1);
      } else {
        id = static_cast<int64_t>(rng.NextBelow(uint64_t(vocab)));
      }
      out.ids.back().push_back(id);
      base::CounterRng w(base::HashKeys({seed, kWeightTag, uint64_t(t), uint64_t(id)}));
      weight_sum += static_cast<float>(w.NextNormal() * damping(id));
      if (f < 2 * pairs) {
        base::CounterRng h(base::HashKeys({seed, kHiddenTag, uint64_t(t), uint64_t(id)}));
        for (double& acc : pooled[f]) acc += h.NextNormal() * (0.5 * damping(id));
      }
      if (f < 3 * crosses) {
        base::CounterRng u(base::HashKeys({seed, kCrossTag, uint64_t(t), uint64_t(id)}));
        crossed[f] += static_cast<float>(u.NextNormal() * damping(id));
      }
    }
    crossed[f] /= length;
    id_term += weight_sum / length;
    if (f < 2 * pairs) {
      for (double& x : pooled[f]) x /= length;
    }
  }
  const int num_dense = config.model().num_dense_features();
  double dense_term = 0;
  for (int k = 0; k < num_dense; ++k) {
    out.dense.push_back(static_cast<float>(std::log1p(-std::log(1 - rng.NextDouble()) * 10)));
    base::CounterRng v(base::HashKeys({seed, kDenseTag, uint64_t(k)}));
    dense_term += v.NextNormal() / std::sqrt(num_dense) *
                  (out.dense.back() - SyntheticSource::kDenseMean);
  }
  double pair_term = 0;
  for (int p = 0; p < pairs; ++p) {
    for (int d = 0; d < SyntheticSource::kHiddenDim; ++d) {
      pair_term += pooled[2 * p][d] * pooled[2 * p + 1][d];
    }
  }
  double cross_term = 0;
  for (int c = 0; c < crosses; ++c) cross_term += crossed[3 * c] * crossed[3 * c + 1] * crossed[3 * c + 2];
  const double logit = SyntheticSource::kBias +
                       syn.teacher_id_scale() * SyntheticSource::kIdGain / std::sqrt(F) * id_term +
                       syn.teacher_dense_scale() * dense_term + syn.teacher_pair_scale() * pair_term +
                       (crosses > 0 ? syn.teacher_cross_scale() / std::sqrt(crosses) * cross_term : 0.0);
  out.prob = 1 / (1 + std::exp(-logit));
  out.label = rng.NextDouble() < out.prob ? 1.0f : 0.0f;
  return out;
}

// Row `row` of `batch` against the transcription of sample `g`.
void ExpectRowMatchesReference(const config::RunConfig& config, const Batch& batch, int64_t row,
                               uint64_t g) {
  const ReferenceSample ref = Reference(config, g);
  for (int f = 0; f < batch.num_features(); ++f) {
    const std::vector<int64_t> ids(batch.ids[f].begin() + batch.offsets[f][row],
                                   batch.ids[f].begin() + batch.offsets[f][row + 1]);
    EXPECT_EQ(ids, ref.ids[f]) << "sample " << g << " feature " << f;
  }
  const int num_dense = config.model().num_dense_features();
  for (int k = 0; k < num_dense; ++k) {
    EXPECT_EQ(batch.dense[row * num_dense + k], ref.dense[k]) << "sample " << g;
  }
  // The teacher to rounding (the compiler may fuse multiply-adds
  // differently in the two transcriptions); a wrong hashed key would
  // change it completely.
  EXPECT_NEAR(batch.teacher_prob[row], ref.prob, 1e-6) << "sample " << g;
  EXPECT_EQ(batch.labels[row], ref.label) << "sample " << g;
}

TEST(SyntheticSourceTest, MatchesAPlainTranscriptionOfTheFormulas) {
  for (const float cross_scale : {0.0f, 1.5f}) {
    config::RunConfig config = TestConfig(/*global_batch=*/32);
    config.mutable_model()->set_num_dense_features(3);
    config.mutable_data()->mutable_synthetic()->set_zipf_fraction(0.6);
    if (cross_scale != 0) {
      config.mutable_data()->mutable_synthetic()->set_teacher_cross_scale(cross_scale);
    }
    auto source = MakeSource(config, /*rank=*/1, /*world_size=*/2);
    for (int64_t step : {0, 3}) {
      Batch batch;
      ASSERT_TRUE(source->TrainBatch(step, &batch).ok());
      for (int64_t i = 0; i < batch.num_samples; ++i) {
        ExpectRowMatchesReference(config, batch, i, step * 32 + 16 + i);  // rank 1 of 2
      }
    }
  }
}

// Long features (the draws go in chunks of 64, the teacher's values too),
// for exponents above and below 1, near it (1 / (1 - s) about -1000) and at
// it (exp), with the cross terms on: the transcription's libm throughout.
TEST(SyntheticSourceTest, LongFeaturesMatchTheTranscriptionForEveryExponent) {
  for (const float s : {1.05f, 1.0f, 0.5f, 2.0f, 1.2f, 1.001f}) {
    config::RunConfig config = TestConfig(/*global_batch=*/8);
    config.mutable_features(1)->set_max_sequence_length(200);
    config.mutable_features(2)->set_max_sequence_length(129);
    config.mutable_tables(1)->set_vocab_size(1000000);
    config.mutable_model()->set_num_dense_features(2);
    config.mutable_data()->mutable_synthetic()->set_zipf_fraction(0.7);
    config.mutable_data()->mutable_synthetic()->set_zipf_exponent(s);
    config.mutable_data()->mutable_synthetic()->set_teacher_cross_scale(1.5);
    auto source = MakeSource(config, /*rank=*/0, /*world_size=*/1);
    for (int64_t step : {0, 5}) {
      Batch batch;
      ASSERT_TRUE(source->TrainBatch(step, &batch).ok());
      for (int64_t i = 0; i < batch.num_samples; ++i) {
        ExpectRowMatchesReference(config, batch, i, step * 8 + i);
      }
    }
  }
}

// The cross terms change the teacher only (ids, dense features and the
// other terms are the same draws) and are off by default; with hot ids they
// move the logits of most samples.
TEST(SyntheticSourceTest, CrossTermsChangeOnlyTheTeacher) {
  config::RunConfig plain = TestConfig(/*global_batch=*/4096);
  plain.mutable_model()->set_num_dense_features(4);
  plain.mutable_data()->mutable_synthetic()->set_zipf_fraction(0.95);
  config::RunConfig crossed = plain;
  crossed.mutable_data()->mutable_synthetic()->set_teacher_cross_scale(3.0f);
  EXPECT_EQ(config::RunConfig().data().synthetic().teacher_cross_scale(), 0.0f);
  auto a = MakeSource(plain, 0, 1);
  auto b = MakeSource(crossed, 0, 1);
  Batch x, y;
  ASSERT_TRUE(a->TrainBatch(2, &x).ok());
  ASSERT_TRUE(b->TrainBatch(2, &y).ok());
  EXPECT_EQ(x.ids, y.ids);
  EXPECT_EQ(x.dense, y.dense);
  auto logit = [](float p) {
    const double q = std::clamp<double>(p, 1e-6, 1 - 1e-6);
    return std::log(q / (1 - q));
  };
  double sum = 0, sum_sq = 0;
  int64_t moved = 0;
  const int64_t n = x.num_samples;
  for (int64_t i = 0; i < n; ++i) {
    const double d = logit(y.teacher_prob[i]) - logit(x.teacher_prob[i]);
    sum += d;
    sum_sq += d * d;
    moved += std::abs(d) > 1e-3;
  }
  const double sd = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  EXPECT_GT(moved, n / 2);
  EXPECT_GT(sd, 0.2) << "the cross term's spread of the logits";
  EXPECT_LT(std::abs(sum / n), 0.1) << "products of zero-mean values average out";
}

TEST(SyntheticSourceTest, CachesChangeNoValue) {
  config::RunConfig config = TestConfig();
  config.mutable_data()->mutable_synthetic()->set_teacher_cross_scale(1.0f);  // u cached too
  auto plain = SyntheticSource::CreateWithCachedIds(config, 1, 2, /*cached_ids=*/0);
  ASSERT_TRUE(plain.ok());
  for (int64_t cached_ids : {SyntheticSource::kCachedIds, int64_t{60000}}) {
    auto cached = SyntheticSource::CreateWithCachedIds(config, 1, 2, cached_ids);
    ASSERT_TRUE(cached.ok());
    for (int64_t index = 0; index < 4; ++index) {
      for (bool eval : {false, true}) {
        Batch a, b;
        ASSERT_TRUE(
            (eval ? (*cached)->EvalBatch(index % 2, &a) : (*cached)->TrainBatch(index, &a)).ok());
        ASSERT_TRUE(
            (eval ? (*plain)->EvalBatch(index % 2, &b) : (*plain)->TrainBatch(index, &b)).ok());
        EXPECT_EQ(a.ids, b.ids);
        EXPECT_EQ(a.offsets, b.offsets);
        EXPECT_EQ(a.dense, b.dense);
        EXPECT_EQ(a.labels, b.labels);
        ASSERT_EQ(a.teacher_prob.size(), b.teacher_prob.size());
        for (size_t i = 0; i < a.teacher_prob.size(); ++i) {
          EXPECT_EQ(std::bit_cast<uint32_t>(a.teacher_prob[i]),
                    std::bit_cast<uint32_t>(b.teacher_prob[i]))
              << "cached ids " << cached_ids << ", sample " << i << " of "
              << (eval ? "eval chunk " : "step ") << index;
        }
      }
    }
  }
}

// The pair term from approximate hidden vectors, libm's where the float or
// the label is in doubt: every bit as from libm's alone, over long paired
// features of ids past the caches.
TEST(SyntheticSourceTest, ApproximateHiddenVectorsChangeNoValue) {
  config::RunConfig config = TestConfig(/*global_batch=*/512);
  config.mutable_features(0)->set_max_sequence_length(40);
  config.mutable_features(1)->set_max_sequence_length(60);
  config.mutable_features(2)->set_max_sequence_length(30);
  config.mutable_features(3)->set_max_sequence_length(40);
  config.mutable_data()->mutable_synthetic()->set_teacher_pair_scale(8.0f);
  for (const int64_t cached_ids : {int64_t{0}, SyntheticSource::kCachedIds}) {
    auto bounded = SyntheticSource::CreateWithCachedIds(config, 0, 1, cached_ids);
    auto exact =
        SyntheticSource::CreateWithCachedIds(config, 0, 1, cached_ids, /*exact_hidden=*/true);
    ASSERT_TRUE(bounded.ok() && exact.ok());
    for (int64_t step = 0; step < 8; ++step) {
      Batch a, b;
      ASSERT_TRUE((*bounded)->TrainBatch(step, &a).ok());
      ASSERT_TRUE((*exact)->TrainBatch(step, &b).ok());
      EXPECT_EQ(a.ids, b.ids);
      EXPECT_EQ(a.labels, b.labels);
      for (size_t i = 0; i < a.teacher_prob.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(a.teacher_prob[i]),
                  std::bit_cast<uint32_t>(b.teacher_prob[i]))
            << "cached ids " << cached_ids << ", step " << step << ", sample " << i;
      }
    }
  }
}

TEST(SyntheticSourceTest, TeacherIsDecidedOnlyWhenNoProbabilityInTheBandDiffers) {
  const double p = 0.3;
  EXPECT_TRUE(SyntheticSource::TeacherIsDecided(p, 1e-13, 0.2));
  EXPECT_TRUE(SyntheticSource::TeacherIsDecided(p, 1e-13, 0.4));
  EXPECT_TRUE(SyntheticSource::TeacherIsDecided(p, 0, p));  // u < p is false either way
  // The label: u within the band.
  EXPECT_FALSE(SyntheticSource::TeacherIsDecided(p, 1e-13, p + 5e-14));
  EXPECT_FALSE(SyntheticSource::TeacherIsDecided(p, 1e-13, p - 1e-13));
  // The float: a band across the midpoint of two floats.
  const float f = static_cast<float>(p);
  const double midpoint = (double(f) + double(std::nextafter(f, 1.0f))) / 2;
  EXPECT_FALSE(SyntheticSource::TeacherIsDecided(midpoint, 1e-13, 0.9));
  EXPECT_TRUE(SyntheticSource::TeacherIsDecided(midpoint - 1e-12, 1e-13, 0.9));
}

TEST(SyntheticSourceTest, UnknownTableIsAnError) {
  config::RunConfig config = TestConfig();
  config.mutable_features(2)->set_table("missing");
  const auto source = SyntheticSource::Create(config, 0, 1);
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(source.status().message().find("'missing'"), std::string::npos);
}

TEST(SyntheticSourceTest, FactoryDefaultsToSynthetic) {
  const config::RunConfig config = TestConfig();
  auto source = CreateDataSource(config, 0, 1);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE((*source)->has_teacher());
  EXPECT_EQ((*source)->skipped_lines(), 0);
}

}  // namespace
}  // namespace lemrt::host
