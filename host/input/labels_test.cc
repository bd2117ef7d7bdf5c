// Several labels (multi-task, config model.tasks) from each file format: a
// missing optional label is NaN (an empty text field; an absent key or an
// empty list in a TFRecord Example), a missing required one makes the row
// malformed, labels without a header take the first columns in task order,
// a batch carries T labels per row, and binary records converted from text
// carry every label (missing ones included), read back by name.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/formats/binary_writer.h"
#include "host/formats/example_parser.h"
#include "host/input/data_source.h"
#include "host/input/schema.h"
#include "proto/config_loader.h"
#include "proto/example.pb.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

std::string ConfigText(const std::string& path, bool header, const std::string& labels) {
  return absl::StrCat(R"(
    tables { name: "t" vocab_size: 8 dim: 8 }
    features { name: "f" table: "t" }
    model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] tasks { name: "click" } tasks { name: "buy" } }
    training { global_batch: 8 seed: 3 }
    data {
      text { train_path: ")",
                      path, R"(" delimiter: "," header: )", header ? "true" : "false", R"( }
      schema { )",
                      labels, R"( dense { name: "x" }
               sparse { feature: "f" key: "id" type: INT64 mapping: ID } }
    })");
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/lemrt_labels_test_XXXXXX";
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

// Columns buy,x,click,id (buy before click: found by name); row i: buy
// empty where i % 3 != 0, click = (i % 4 == 1), x = id = i.
std::string Csv() {
  std::string out = "buy,x,click,id\n";
  for (int i = 0; i < 8; ++i) {
    const std::string buy = i % 3 == 0 ? absl::StrCat(i % 2) : "";
    absl::StrAppend(&out, buy, ",", i, ",", i % 4 == 1, ",", i, "\n");
  }
  return out;
}

TEST(LabelsTest, TextRowsCarryOneLabelPerTaskNanWhereMissing) {
  TempFile csv(Csv());
  auto config = config::ParseConfig(
      ConfigText(csv.path(), true,
                 R"(labels { name: "click" } labels { name: "buy" required: false })"),
      "test.pbtxt", "", 1);
  ASSERT_TRUE(config.ok()) << config.status();
  auto source = CreateDataSource(*config, 0, 1);
  ASSERT_TRUE(source.ok()) << source.status();
  Batch b;
  ASSERT_TRUE((*source)->TrainBatch(0, &b).ok());
  ASSERT_EQ(b.num_tasks, 2);
  ASSERT_EQ(b.labels.size(), 16u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(b.real(i)) << i;
    EXPECT_EQ(b.labels[2 * i], i % 4 == 1 ? 1.0f : 0.0f) << i;
    if (i % 3 == 0) {
      EXPECT_EQ(b.labels[2 * i + 1], static_cast<float>(i % 2)) << i;
    } else {
      EXPECT_TRUE(std::isnan(b.labels[2 * i + 1])) << i;
    }
  }
}

TEST(LabelsTest, WithoutAHeaderTheLabelsTakeTheFirstColumnsInTaskOrder) {
  // click, buy, x, id: buy empty where i % 3 != 0.
  std::string text;
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&text, i % 4 == 1, ",", i % 3 == 0 ? "1" : "", ",", i, ",", i, "\n");
  }
  TempFile csv(text);
  auto config = config::ParseConfig(
      ConfigText(csv.path(), false,
                 R"(labels { name: "buy" required: false } labels { name: "click" })"),
      "test.pbtxt", "", 1);
  ASSERT_TRUE(config.ok()) << config.status();
  auto schema = ResolveSchema(*config);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ((*schema)->num_tasks(), 2);
  EXPECT_EQ((*schema)->labels[0].key, "click");  // model.tasks order, not the schema's
  EXPECT_EQ((*schema)->labels[0].column, 0);
  EXPECT_EQ((*schema)->labels[1].column, 1);
  EXPECT_EQ((*schema)->dense[0].column, 2);
  auto source = CreateDataSource(*config, 0, 1);
  ASSERT_TRUE(source.ok()) << source.status();
  Batch b;
  ASSERT_TRUE((*source)->TrainBatch(0, &b).ok());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(b.labels[2 * i], i % 4 == 1 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(std::isnan(b.labels[2 * i + 1]), i % 3 != 0) << i;
    EXPECT_EQ(b.dense[i], static_cast<float>(i)) << i;
  }
}

TEST(LabelsTest, TfRecordMissingKeyOrEmptyListIsMissingAndRequiredLabelsAreRequired) {
  auto config = config::ParseConfig(
      ConfigText("x.csv", true,
                 R"(labels { name: "click" } labels { name: "buy" required: false })"),
      "test.pbtxt", "", 1);
  ASSERT_TRUE(config.ok()) << config.status();
  auto schema = ResolveSchema(*config);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ExampleParser parser(*schema);
  ParsedSample sample;
  for (int form = 0; form < 3; ++form) {  // buy: absent, an empty list, a value
    example::Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["click"].mutable_int64_list()->add_value(1);
    if (form == 1) f["buy"].mutable_float_list();
    if (form == 2) f["buy"].mutable_float_list()->add_value(0.5f);
    ASSERT_TRUE(parser.Parse(e.SerializeAsString(), &sample).ok()) << form;
    ASSERT_EQ(sample.labels.size(), 2u);
    EXPECT_EQ(sample.labels[0], 1.0f);
    if (form < 2) {
      EXPECT_TRUE(std::isnan(sample.labels[1])) << form;
    } else {
      EXPECT_EQ(sample.labels[1], 0.5f);
    }
  }
  example::Example e;
  (*e.mutable_features()->mutable_feature())["buy"].mutable_float_list()->add_value(1);
  const absl::Status st = parser.Parse(e.SerializeAsString(), &sample);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("no value for feature key 'click' (label 'click')"));
}

// The rows of `config`'s training split as (labels, dense) per row, from
// its first batch of 8.
std::vector<float> FirstBatch(const config::RunConfig& config, std::vector<float>* dense) {
  auto source = CreateDataSource(config, 0, 1);
  EXPECT_TRUE(source.ok()) << source.status();
  Batch b;
  if (!source.ok() || !(*source)->TrainBatch(0, &b).ok()) return {};
  *dense = b.dense;
  return b.labels;
}

// Same NaN-aware bits: a missing label is NaN in both.
void ExpectSameLabels(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::isnan(a[i]), std::isnan(b[i])) << i;
    if (!std::isnan(a[i])) {
      EXPECT_EQ(a[i], b[i]) << i;
    }
  }
}

TEST(LabelsTest, BinaryRecordsCarryEveryTaskLabelMissingIncluded) {
  TempFile csv(Csv());
  const std::string labels = R"(labels { name: "click" } labels { name: "buy" required: false })";
  auto text = config::ParseConfig(ConfigText(csv.path(), true, labels), "test.pbtxt", "", 1);
  ASSERT_TRUE(text.ok()) << text.status();
  TempFile bin("");
  ASSERT_TRUE(ConvertToBinary(*text, Split::kTrain, bin.path()).ok());
  const std::string binary_source =
      absl::StrCat(R"(data { binary { train_path: ")", bin.path(), R"(" } })");
  auto binary =
      config::ParseConfig(ConfigText(csv.path(), true, labels), "test.pbtxt", binary_source, 1);
  ASSERT_TRUE(binary.ok()) << binary.status();
  std::vector<float> text_dense, binary_dense;
  const std::vector<float> want = FirstBatch(*text, &text_dense);
  ASSERT_EQ(want.size(), 16u);
  ExpectSameLabels(FirstBatch(*binary, &binary_dense), want);
  EXPECT_EQ(binary_dense, text_dense);  // the dense inputs follow the labels

  // Tasks in another order read the stored labels by name.
  std::string swapped = ConfigText(csv.path(), true, labels);
  swapped.replace(swapped.find(R"(tasks { name: "click" } tasks { name: "buy" })"), 45,
                  R"(tasks { name: "buy" } tasks { name: "click" })");
  auto reordered = config::ParseConfig(swapped, "test.pbtxt", binary_source, 1);
  ASSERT_TRUE(reordered.ok()) << reordered.status();
  const std::vector<float> got = FirstBatch(*reordered, &binary_dense);
  ASSERT_EQ(got.size(), 16u);
  for (int i = 0; i < 8; ++i) {
    ExpectSameLabels({got[2 * i], got[2 * i + 1]}, {want[2 * i + 1], want[2 * i]});
  }

  // A task whose label the file lacks: a sentence naming it and the stored ones.
  std::string other = ConfigText(csv.path(), true, labels);
  for (const char* from : {R"("buy" })", R"("buy" required)"}) {
    const size_t at = other.find(from);
    other.replace(at, 5, R"("view")");
  }
  auto lacking = config::ParseConfig(other, "test.pbtxt", binary_source, 1);
  ASSERT_TRUE(lacking.ok()) << lacking.status();
  auto source = CreateDataSource(*lacking, 0, 1);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(std::string(source.status().message()),
              HasSubstr("stores no label 'view' (it stores click, buy)"));
}

}  // namespace
}  // namespace lemrt::host
