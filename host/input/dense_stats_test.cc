// Dense inputs end to end against plain formulas: clip and normalization of
// the model inputs a file source gives, missing-value indicators from text
// and TFRecord rows, the moments lemrt_vocab merges over shares, the schema
// lines written from them (read back by the config loader), the start-up
// scale warning, and the config errors of the new fields.
#include "host/input/dense_stats.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/formats/delimited_parser.h"
#include "host/formats/example_parser.h"
#include "host/input/batch_filler.h"
#include "host/input/data_source.h"
#include "host/input/file_source.h"
#include "proto/config_loader.h"
#include "proto/example.pb.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// label,age,hour,cnt: age empty in rows i % 5 == 3, cnt empty in rows i % 4 == 1.
std::string Csv(int rows) {
  std::string out = "label,age,hour,cnt\n";
  for (int i = 0; i < rows; ++i) {
    const std::string age = i % 5 == 3 ? "" : absl::StrCat(18 + (i * 7) % 53);
    const std::string cnt = i % 4 == 1 ? "" : absl::StrCat((i * 37) % 1000);
    absl::StrAppend(&out, i % 2, ",", age, ",", i % 24, ",", cnt, "\n");
  }
  return out;
}

std::string ConfigText(const std::string& path, const std::string& dense) {
  return absl::StrCat(R"(
    tables { name: "t" vocab_size: 24 dim: 8 }  # one row per hour
    features { name: "f" table: "t" }
    model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
    training { global_batch: 40 seed: 3 }
    data {
      text { train_path: ")",
                      path, R"(" delimiter: "," header: true }
      schema { label { name: "label" } )",
                      dense, R"( sparse { feature: "f" key: "hour" type: INT64 mapping: ID } }
    })");
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/lemrt_dense_stats_test_XXXXXX";
    const int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

absl::StatusOr<config::RunConfig> Parse(const std::string& text) {
  return config::ParseConfig(text, "test.pbtxt", "", 1);
}

TEST(DenseTransformTest, ModelInputsAreThePlainFormulasWithIndicatorsLast) {
  TempFile csv(Csv(40));
  const std::string dense = R"(
      dense { name: "age" normalize: STANDARDIZE mean: 40 stddev: 12.5 missing_indicator: true
              default_value: 40 }
      dense { name: "hour" clip_max: 20 normalize: MIN_MAX minimum: 0 maximum: 20 }
      dense { name: "cnt" transform: LOG1P clip_min: 1 missing_indicator: true })";
  auto config = Parse(ConfigText(csv.path(), dense));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model().num_dense_features(), 5);  // 3 values + 2 indicators
  auto source = CreateDataSource(*config, 0, 1);
  ASSERT_TRUE(source.ok()) << source.status();
  Batch b;
  ASSERT_TRUE((*source)->TrainBatch(0, &b).ok());
  ASSERT_EQ(b.num_dense, 5);
  for (int i = 0; i < 40; ++i) {
    const bool age_missing = i % 5 == 3, cnt_missing = i % 4 == 1;
    const double age = age_missing ? 40 : 18 + (i * 7) % 53;
    const double hour = std::min(i % 24, 20);
    const double cnt = std::max(std::log1p(cnt_missing ? 0.0 : (i * 37) % 1000), 1.0);
    const float* row = b.dense.data() + i * 5;
    EXPECT_FLOAT_EQ(row[0], static_cast<float>((age - 40) / 12.5)) << i;
    EXPECT_FLOAT_EQ(row[1], static_cast<float>(hour / 20)) << i;
    EXPECT_FLOAT_EQ(row[2], static_cast<float>(cnt)) << i;
    EXPECT_EQ(row[3], age_missing ? 1.0f : 0.0f) << i;
    EXPECT_EQ(row[4], cnt_missing ? 1.0f : 0.0f) << i;
  }
}

TEST(DenseTransformTest, TfRecordTellsAMissingKeyFromAZero) {
  auto config = Parse(ConfigText("x.csv", R"(dense { name: "age" missing_indicator: true })"));
  ASSERT_TRUE(config.ok()) << config.status();
  auto schema = ResolveSchema(*config);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ExampleParser parser(*schema);
  ParsedSample sample;
  for (const bool present : {false, true}) {
    example::Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["label"].mutable_float_list()->add_value(1);
    if (present) f["age"].mutable_float_list()->add_value(0);
    ASSERT_TRUE(parser.Parse(e.SerializeAsString(), &sample).ok());
    EXPECT_EQ(sample.dense[0], 0.0f);
    EXPECT_EQ(sample.dense_missing[0], present ? 0 : 1);
  }
}

TEST(DenseMomentsTest, SharesMergeToThePlainTwoPassMoments) {
  std::vector<double> xs;
  for (int i = 0; i < 1001; ++i) xs.push_back(1e6 + std::sin(i) * 50 + (i % 7));
  double mean = 0, m2 = 0;
  for (double x : xs) mean += x;
  mean /= xs.size();
  for (double x : xs) m2 += (x - mean) * (x - mean);
  for (const int shares : {1, 2, 3, 1001}) {
    DenseMoments all;
    for (int s = 0; s < shares; ++s) {
      DenseMoments part;
      for (size_t i = xs.size() * s / shares; i < xs.size() * (s + 1) / shares; ++i)
        part.Add(xs[i]);
      part.missing = 1;
      all.Merge(part);
    }
    EXPECT_EQ(all.count, 1001);
    EXPECT_EQ(all.missing, shares);
    EXPECT_NEAR(all.mean, mean, 1e-9 * mean) << shares;
    EXPECT_NEAR(all.stddev(), std::sqrt(m2 / xs.size()), 1e-7) << shares;
    EXPECT_EQ(all.min, *std::min_element(xs.begin(), xs.end()));
    EXPECT_EQ(all.max, *std::max_element(xs.begin(), xs.end()));
  }
  EXPECT_EQ(DenseMoments().stddev(), 0);
}

TEST(DenseStatsLinesTest, LinesLoadBackWithTheStatisticsOfTheClippedValues) {
  TempFile csv(Csv(40));
  auto config = Parse(ConfigText(csv.path(), R"(
      dense { name: "age" missing_indicator: true }
      dense { name: "hour" clip_max: 20 normalize: MIN_MAX minimum: 5 maximum: 6 }
      dense { name: "cnt" transform: LOG1P })"));
  ASSERT_TRUE(config.ok()) << config.status();
  auto schema = ResolveSchema(*config);
  ASSERT_TRUE(schema.ok());
  std::vector<DenseMoments> moments(3);
  ParsedSample sample;
  const std::string text = Csv(40);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  auto parser = DelimitedParser::Create(*schema, ',', lines[0], "test");
  ASSERT_TRUE(parser.ok()) << parser.status();
  for (size_t i = 1; i < lines.size(); ++i) {
    ASSERT_TRUE((*parser)->Parse(lines[i], &sample).ok());
    AccumulateDense(**schema, sample, &moments);
  }
  const std::string out = DenseStatsLines(config->data().schema(), moments);
  // Plain reference: age over the present rows; hour clipped at 20.
  double age_sum = 0, age_sq = 0, n = 0;
  for (int i = 0; i < 40; ++i) {
    if (i % 5 == 3) continue;
    const double a = 18 + (i * 7) % 53;
    age_sum += a;
    age_sq += a * a;
    ++n;
  }
  const double age_mean = age_sum / n, age_std = std::sqrt(age_sq / n - age_mean * age_mean);
  auto reloaded = Parse(ConfigText(csv.path(), out));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status() << "\n" << out;
  const config::InputSchema& s = reloaded->data().schema();
  ASSERT_EQ(s.dense_size(), 3);
  EXPECT_EQ(s.dense(0).normalize(), config::DenseInput::STANDARDIZE);  // none -> STANDARDIZE
  EXPECT_TRUE(s.dense(0).missing_indicator());
  EXPECT_NEAR(s.dense(0).mean(), age_mean, 1e-6);
  EXPECT_NEAR(s.dense(0).stddev(), age_std, 1e-6);
  EXPECT_EQ(s.dense(1).normalize(), config::DenseInput::MIN_MAX);
  EXPECT_EQ(s.dense(1).minimum(), 0);
  EXPECT_EQ(s.dense(1).maximum(), 20);  // clipped: the raw maximum is 23
  EXPECT_EQ(s.dense(1).clip_max(), 20);
  EXPECT_EQ(s.dense(2).transform(), config::DenseInput::LOG1P);
  EXPECT_THAT(out, HasSubstr("# age: 32 values, 8 missing; mean "));
}

TEST(DenseStatsLinesTest, ConstantInputsStayUnnormalized) {
  config::InputSchema schema;
  schema.add_dense()->set_name("one");
  schema.add_dense()->set_name("none");
  std::vector<DenseMoments> moments(2);
  moments[0].Add(3);
  moments[0].Add(3);
  moments[1].missing = 4;
  const std::string out = DenseStatsLines(schema, moments);
  EXPECT_THAT(out, HasSubstr("(a constant: left unnormalized)\ndense { name: \"one\" }"));
  EXPECT_THAT(out, HasSubstr("(no values: left unnormalized)\ndense { name: \"none\" }"));
}

TEST(DenseScaleWarningTest, NamesRawInputsFarFromUnitScaleOnly) {
  TempFile csv(Csv(40));
  auto raw = Parse(ConfigText(csv.path(), R"(dense { name: "age" } dense { name: "hour" }
      dense { name: "cnt" transform: LOG1P })"));
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto source = CreateDataSource(*raw, 0, 1);
  ASSERT_TRUE(source.ok());
  Batch b;
  ASSERT_TRUE((*source)->TrainBatch(0, &b).ok());
  auto schema = ResolveSchema(*raw);
  const std::string w = DenseScaleWarning(**schema, b);
  EXPECT_THAT(w, HasSubstr("dense inputs 'age' (root mean square "));
  EXPECT_THAT(w, HasSubstr("'hour' (root mean square 1"));  // 0..23: rms 13.3
  EXPECT_THAT(w, testing::Not(HasSubstr("'cnt'")));         // log1p: at most 6.9
  EXPECT_THAT(w, HasSubstr("normalize: STANDARDIZE"));
  auto normalized = Parse(ConfigText(csv.path(), R"(
      dense { name: "age" normalize: STANDARDIZE mean: 40 stddev: 15 }
      dense { name: "hour" normalize: MIN_MAX minimum: 0 maximum: 23 }
      dense { name: "cnt" transform: LOG1P })"));
  ASSERT_TRUE(normalized.ok());
  EXPECT_EQ(DenseScaleWarning(**ResolveSchema(*normalized), b), "");
}

TEST(DenseConfigTest, StatisticsBelongToTheirNormalization) {
  auto error = [](const std::string& dense, const std::string& extra = "") {
    auto c = config::ParseConfig(ConfigText("x.csv", dense), "test.pbtxt", extra, 1);
    return c.ok() ? std::string() : std::string(c.status().message());
  };
  EXPECT_EQ(error(R"(dense { name: "a" normalize: STANDARDIZE mean: 1 stddev: 2 })"), "");
  EXPECT_THAT(error(R"(dense { name: "a" normalize: STANDARDIZE mean: 1 })"),
              HasSubstr("STANDARDIZE needs mean and stddev; lemrt_vocab"));
  EXPECT_THAT(error(R"(dense { name: "a" normalize: STANDARDIZE mean: 1 stddev: 0 })"),
              HasSubstr("stddev > 0, got mean 1, stddev 0"));
  EXPECT_THAT(error(R"(dense { name: "a" mean: 1 })"),
              HasSubstr("mean is read only with normalize: STANDARDIZE"));
  EXPECT_THAT(error(R"(dense { name: "a" normalize: MIN_MAX minimum: 2 maximum: 2 })"),
              HasSubstr("finite minimum < maximum, got 2 and 2"));
  EXPECT_THAT(error(R"(dense { name: "a" clip_min: 3 clip_max: 1 })"),
              HasSubstr("is 1, below clip_min 3"));
  EXPECT_THAT(
      error(R"(dense { name: "a" missing_indicator: true })", "model { num_dense_features: 1 }"),
      HasSubstr("is 1 but data.schema has 1 dense inputs and 1 missing-value indicators"));
  auto binary =
      config::ParseConfig(ConfigText("x.csv", R"(dense { name: "a" missing_indicator: true })"),
                          "test.pbtxt", "data { binary { train_path: \"x.bin\" } }", 1);
  ASSERT_FALSE(binary.ok());
  EXPECT_THAT(binary.status().message(), HasSubstr("binary files store a missing value"));
}

}  // namespace
}  // namespace lemrt::host
