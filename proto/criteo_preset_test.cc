#include "proto/criteo_preset.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::config {
namespace {

using ::testing::HasSubstr;

// 26 features c1..c26 on table t, fed by the preset by position, plus `more`.
std::string Config(const std::string& more, const std::string& schema_lines) {
  std::string text = "tables { name: 't' vocab_size: 100 dim: 8 }\n";
  for (int c = 1; c <= 26; ++c)
    absl::StrAppend(&text, "features { name: 'c", c, "' table: 't' }\n");
  absl::StrAppend(&text, more, "model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }\n",
                  "training { global_batch: 8 steps: 1 }\n",
                  "data { criteo { train_path: 'x.tsv' } schema {\n", schema_lines, "} }\n");
  return text;
}

std::string ErrorOf(const std::string& text) {
  auto c = ParseConfig(text, "criteo.pbtxt", "", 1);
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(CriteoPresetTest, ColumnNames) {
  EXPECT_EQ(CriteoColumnOf("I1"), 1);
  EXPECT_EQ(CriteoColumnOf("I13"), 13);
  EXPECT_EQ(CriteoColumnOf("C1"), 14);
  EXPECT_EQ(CriteoColumnOf("C26"), 39);
  for (const char* other : {"I0", "I14", "C0", "C27", "I01", "c1", "label", "I", "C1x", "I100"}) {
    EXPECT_EQ(CriteoColumnOf(other), -1) << other;
  }
}

// A line that changes nothing composes the preset into the 39 lines a user
// would write out (and the label's).
TEST(CriteoPresetTest, ComposedPresetEqualsTheWrittenOutSchema) {
  auto composed = ParseConfig(Config("", "dense { name: 'I7' }\n"), "c", "", 1);
  ASSERT_TRUE(composed.ok()) << composed.status();
  EXPECT_TRUE(ComposesCriteoPreset(*composed));
  std::string written = "label { name: 'label' column: 0 }\n";
  for (int k = 1; k <= 13; ++k) {
    absl::StrAppend(&written, "dense { name: 'I", k, "' column: ", k, " transform: LOG1P }\n");
  }
  for (int c = 1; c <= 26; ++c) {
    absl::StrAppend(&written, "sparse { feature: 'c", c, "' key: 'C", c, "' column: ", 13 + c,
                    " type: HEX }\n");
  }
  InputSchema expected;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(written, &expected));
  const InputSchema expanded = ExpandCriteoPreset(*composed);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(expanded, expected))
      << expanded.DebugString();
  EXPECT_EQ(composed->model().num_dense_features(), 13);
  // The written-out lines load as a text source's schema.
  std::string as_text = Config("", written);
  as_text.replace(as_text.find("criteo {"), 8, "text {");
  auto text = ParseConfig(as_text, "t", "", 1);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE(UsesCriteoPreset(*text));
  EXPECT_EQ(text->model().num_dense_features(), 13);
}

TEST(CriteoPresetTest, PlainPresetsDoNotCompose) {
  auto plain = ParseConfig(Config("", ""), "c", "", 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(UsesCriteoPreset(*plain));
  EXPECT_FALSE(ComposesCriteoPreset(*plain));
  // lemrt_predict's label line on Criteo files.
  auto scoring = ParseConfig(Config("", "label { required: false }\n"), "c", "", 1);
  ASSERT_TRUE(scoring.ok()) << scoring.status();
  EXPECT_FALSE(ComposesCriteoPreset(*scoring));
  EXPECT_FALSE(ExpandCriteoPreset(*scoring).label().required());
}

TEST(CriteoPresetTest, LinesOverrideAndAdd) {
  const std::string vocab = ::testing::TempDir() + "/criteo_preset_c2.txt";
  FILE* f = std::fopen(vocab.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("68fd1e64\t9\n0a\t3\n", f);
  std::fclose(f);
  const std::string more =
      "tables { name: 'ti' vocab_size: 50 dim: 8 }\n"
      "tables { name: 'tv' dim: 8 }\n"
      "features { name: 'i5' table: 'ti' }\nfeatures { name: 'i6' table: 'ti' }\n"
      "features { name: 'v' table: 'tv' input_column: 1 }\n";
  const std::string lines = absl::StrCat(
      "dense { name: 'I3' normalize: STANDARDIZE mean: 1 stddev: 2 missing_indicator: true }\n"
      "dense { name: 'I1_raw' column: 1 }\n"
      "sparse { feature: 'v' mapping: VOCABULARY vocabulary_file: '",
      vocab,
      "' num_oov_buckets: 2 }\n"
      "sparse { feature: 'i5' key: 'I5' }\n"
      "sparse { feature: 'i6' column: 6 type: INT64 }\n"
      "sparse { feature: 'c4' key: 'C9' type: STRING }\n");
  auto c = ParseConfig(Config(more, lines), "c", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const InputSchema s = ExpandCriteoPreset(*c);
  ASSERT_EQ(s.dense_size(), 14);
  EXPECT_EQ(c->model().num_dense_features(), 15);  // 14 inputs + 1 indicator
  const DenseInput& i3 = s.dense(2);
  EXPECT_EQ(i3.name(), "I3");
  EXPECT_EQ(i3.column(), 3);
  EXPECT_EQ(i3.transform(), DenseInput::LOG1P);
  EXPECT_EQ(i3.normalize(), DenseInput::STANDARDIZE);
  EXPECT_EQ(i3.stddev(), 2);
  EXPECT_TRUE(i3.missing_indicator());
  EXPECT_EQ(s.dense(13).name(), "I1_raw");
  EXPECT_EQ(s.dense(13).column(), 1);
  EXPECT_EQ(s.dense(13).transform(), DenseInput::IDENTITY);
  ASSERT_EQ(s.sparse_size(), 29);
  EXPECT_EQ(s.sparse(3).key(), "C9");  // c4 reads C9 as strings
  EXPECT_EQ(s.sparse(3).column(), 22);
  EXPECT_EQ(s.sparse(3).type(), SparseInput::STRING);
  EXPECT_EQ(s.sparse(26).key(), "I5");
  EXPECT_EQ(s.sparse(26).column(), 5);
  EXPECT_EQ(s.sparse(26).type(), SparseInput::INT64);
  EXPECT_EQ(s.sparse(27).column(), 6);
  EXPECT_FALSE(s.sparse(27).has_key());
  const SparseInput& v = s.sparse(28);
  EXPECT_EQ(v.key(), "C2");
  EXPECT_EQ(v.column(), 15);
  EXPECT_EQ(v.type(), SparseInput::HEX);
  EXPECT_EQ(v.mapping(), SparseInput::VOCABULARY);
  EXPECT_EQ(c->tables(2).vocab_size(), 4);  // 2 OOV buckets + 2 entries
}

// Each conflict names the line that causes it.
TEST(CriteoPresetTest, ConflictsNameTheLine) {
  // Config() puts the schema lines from line 31 on.
  EXPECT_THAT(ErrorOf(Config("", "dense { name: 'I3' column: 5 }\n")),
              HasSubstr("criteo.pbtxt:31:20: data.schema.dense[0].column: dense input 'I3' is "
                        "the CRITEO preset's column 3, not 5"));
  EXPECT_THAT(ErrorOf(Config("", "dense { name: 'I1' }\ndense { name: 'hour' }\n")),
              HasSubstr("criteo.pbtxt:32:9: data.schema.dense[1].name: dense input 'hour' is "
                        "none of the CRITEO preset's I1..I13"));
  EXPECT_THAT(ErrorOf(Config("", "dense { name: 'x' column: 20 }\n")),
              HasSubstr("data.schema.dense[0].column: dense input 'x' reads column 20"));
  EXPECT_THAT(ErrorOf(Config("", "dense { name: 'I2' }\ndense { name: 'I2' }\n")),
              HasSubstr("criteo.pbtxt:32:9: data.schema.dense[1].name: duplicate dense input"));
  EXPECT_THAT(ErrorOf(Config("", "sparse { feature: 'c1' key: 'C3' column: 7 }\n")),
              HasSubstr("criteo.pbtxt:31:34: data.schema.sparse[0].column: feature 'c1': key "
                        "'C3' is column 16 of the CRITEO preset but column is 7"));
  EXPECT_THAT(ErrorOf(Config("", "sparse { feature: 'c1' key: 'user' }\n")),
              HasSubstr("data.schema.sparse[0].key: feature 'c1': key 'user' names no column"));
  EXPECT_THAT(ErrorOf(Config("", "sparse { feature: 'c1' column: 40 }\n")),
              HasSubstr("data.schema.sparse[0].column: feature 'c1': Criteo rows hold the label "
                        "in column 0 and the inputs in columns 1..39, got 40"));
  EXPECT_THAT(ErrorOf(Config("features { name: 'x' table: 't' input_column: 2 }\n",
                             "sparse { feature: 'x' key: 'I4' }\n")),
              HasSubstr("data.schema.sparse[0].key: feature 'x' has input_column 2 and a sparse "
                        "line naming the column it reads; keep one"));
  EXPECT_THAT(ErrorOf(Config("features { name: 'x' table: 't' }\n",
                             "sparse { feature: 'x' mapping: HASH }\n")),
              HasSubstr("data.schema.sparse[0].feature: feature 'x' is feature 27 of the config, "
                        "past the CRITEO preset's 26 categories"));
  EXPECT_THAT(ErrorOf(Config("features { name: 'x' table: 't' }\n", "dense { name: 'I1' }\n")),
              HasSubstr("criteo.pbtxt:28:12: features[26].name: feature 'x' is feature 27"));
  EXPECT_THAT(ErrorOf(Config("", "sparse { feature: 'nope' }\n")),
              HasSubstr("'nope' is not a feature of the config"));
  EXPECT_THAT(ErrorOf(Config("", "label { column: 3 }\n")),
              HasSubstr("data.schema.label.column: is 3: the CRITEO preset's label is 'label' in "
                        "column 0"));
  auto counted = ParseConfig(Config("", "dense { name: 'I2' missing_indicator: true }\n"),
                             "criteo.pbtxt", "model { num_dense_features: 13 }", 1);
  EXPECT_THAT(counted.status().message(),
              HasSubstr("model.num_dense_features: is 13 but the CRITEO preset with "
                        "data.schema's dense lines has 13 dense inputs and 1 missing-value "
                        "indicators"));
  EXPECT_THAT(ErrorOf(Config("", "dense { name: 'I2' normalize: STANDARDIZE }\n")),
              HasSubstr("STANDARDIZE needs mean and stddev"));
  // Statistics whose scale 1 / 1e-40 is no float.
  EXPECT_THAT(
      ErrorOf(Config("", "dense { name: 'I2' normalize: STANDARDIZE mean: 0 stddev: 1e-40 }\n")),
      HasSubstr("stddev 1e-40 (1 / stddev must be a finite float"));
  EXPECT_THAT(
      ErrorOf(Config("", "dense { name: 'I2' normalize: MIN_MAX minimum: 0 maximum: 1e-40 }\n")),
      HasSubstr("MIN_MAX needs finite minimum < maximum"));
}

}  // namespace
}  // namespace lemrt::config
