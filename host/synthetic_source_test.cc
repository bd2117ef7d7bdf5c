#include "host/synthetic_source.h"

#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/auc.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "host/data_source.h"

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

// The teacher caches (w and h of the Zipf head) change no value: ids, dense
// features, labels and teacher probabilities equal those of a source without
// caches, and of one caching most of the vocabulary, bit for bit.
TEST(SyntheticSourceTest, CachesChangeNoValue) {
  const config::RunConfig config = TestConfig();
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
