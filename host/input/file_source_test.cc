// The file sources end to end on small files: delimited text (header,
// lists, weights, vocabularies, the CRITEO preset and its composition), the epoch schedule and
// its sharding at several world sizes, eval coverage, malformed rows, and
// binary files converted from text.
#include "host/input/file_source.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "base/crc32c.h"
#include "host/formats/binary_writer.h"
#include "host/input/data_source.h"
#include "host/formats/delimited_parser.h"
#include "host/formats/text_lines_file.h"
#include "host/input/value_key.h"
#include "proto/config_loader.h"
#include "proto/example.pb.h"
#include "zlib.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lemrt_file_source_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(absl::StrCat("rm -rf '", path_, "'").c_str()); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string path = absl::StrCat(path_, "/", name);
    std::ofstream(path) << text;
    return path;
  }
  std::string path(const std::string& name) const { return absl::StrCat(path_, "/", name); }

 private:
  std::string path_;
};

// CSV rows: click,price,age,item,history,hist_w,user.
std::string Csv(int rows, int first = 0) {
  std::string out = "click,price,age,item,history,hist_w,user\n";
  for (int i = first; i < first + rows; ++i) {
    std::string history, weights;
    for (int k = 0; k < i % 4; ++k) {
      absl::StrAppend(&history, k ? "|" : "", (i * 3 + k) % 100);
      absl::StrAppend(&weights, k ? "|" : "", 0.5 * (k + 1));
    }
    absl::StrAppend(&out, i % 2, ",", i * 0.5, ",", i, ",", (i * 7) % 1000, ",", history, ",",
                    weights, ",u", i % 13, "\n");
  }
  return out;
}

std::string SchemaText(const std::string& source) {
  return absl::StrCat(R"(
    tables { name: "t" vocab_size: 1000 dim: 8 }
    tables { name: "u" vocab_size: 50 dim: 8 }
    features { name: "item" table: "t" }
    features { name: "hist" table: "t" max_sequence_length: 4 }
    features { name: "user" table: "u" }
    model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
    training { global_batch: 16 seed: 3 }
    data {
      )", source, R"(
      schema {
        label { name: "click" }
        dense { name: "price" }
        dense { name: "age" transform: LOG1P }
        sparse { feature: "item" type: INT64 mapping: ID }
        sparse { feature: "hist" key: "history" type: INT64 mapping: ID separator: "|"
                 weights_key: "hist_w" }
        sparse { feature: "user" }
      }
    })");
}

config::RunConfig Load(const std::string& text, int world_size, const std::string& extra = "") {
  auto config = config::ParseConfig(text, "test.pbtxt", extra, world_size);
  CHECK(config.ok()) << config.status();
  return *config;
}

std::unique_ptr<DataSource> Source(const config::RunConfig& config, int rank, int world) {
  auto source = CreateDataSource(config, rank, world);
  CHECK(source.ok()) << source.status();
  return std::move(*source);
}

// One global batch as one list of rows: (mask, label, dense..., per feature ids and weights).
struct Row {
  float mask, label;
  std::vector<float> dense;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> weights;
  bool operator==(const Row&) const = default;
};

std::vector<Row> GlobalRows(const config::RunConfig& config, int world, bool eval, int64_t index,
                            int64_t* global_samples = nullptr) {
  std::vector<Row> rows;
  for (int r = 0; r < world; ++r) {
    auto source = Source(config, r, world);
    Batch b;
    const absl::Status st = eval ? source->EvalBatch(index, &b) : source->TrainBatch(index, &b);
    EXPECT_TRUE(st.ok()) << st;
    if (global_samples != nullptr) *global_samples = b.global_samples;
    for (int64_t i = 0; i < b.num_samples; ++i) {
      Row row{b.real(i) ? 1.0f : 0.0f, b.labels[i], {}, {}, {}};
      row.dense.assign(b.dense.begin() + i * b.num_dense, b.dense.begin() + (i + 1) * b.num_dense);
      for (int f = 0; f < b.num_features(); ++f) {
        const auto ids = b.SampleIds(f, i);
        const auto w = b.SampleWeights(f, i);
        row.ids.emplace_back(ids.begin(), ids.end());
        row.weights.emplace_back(w.begin(), w.end());
      }
      rows.push_back(row);
    }
  }
  return rows;
}

TEST(TextFileTest, IndexesLinesAndReadsAnyRange) {
  TempDir dir;
  std::string text = "head\n";
  for (int i = 0; i < 3000; ++i) absl::StrAppend(&text, "line ", i, i % 7 == 0 ? "\r\n" : "\n");
  auto file = TextFile::Open(dir.Write("a.txt", text), /*header=*/true);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->num_records(), 3000);
  EXPECT_EQ((*file)->header_line(), "head");
  EXPECT_EQ((*file)->truncated_record(), -1);
  for (int64_t first : {0, 1, 1023, 1024, 1025, 2999, 5, 2048, 0}) {
    RecordBatch out;
    const int64_t count = std::min<int64_t>(3, 3000 - first);
    ASSERT_TRUE((*file)->Read(first, count, &out).ok());
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(out[i], absl::StrCat("line ", first + i));
  }
  EXPECT_EQ((*file)->Where(0), dir.path("a.txt") + ":2");
  auto cut = TextFile::Open(dir.Write("b.txt", "1\n2\n3"), false);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ((*cut)->num_records(), 3);
  EXPECT_EQ((*cut)->truncated_record(), 2);
  auto empty = TextFile::Open(dir.Write("c.txt", ""), true);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->num_records(), 0);
}

TEST(FileSourceTest, CsvWithHeaderListsWeightsAndHashing) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(37));
  const config::RunConfig config = Load(
      SchemaText(absl::StrCat("text { train_path: \"", train, "\" delimiter: \",\" header: true }")),
      1);
  auto source = Source(config, 0, 1);
  Batch b;
  ASSERT_TRUE(source->TrainBatch(0, &b).ok());
  ASSERT_EQ(b.num_samples, 16);
  EXPECT_EQ(b.global_samples, 16);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(b.labels[i], i % 2);
    EXPECT_FLOAT_EQ(b.dense[2 * i], i * 0.5f);
    EXPECT_FLOAT_EQ(b.dense[2 * i + 1], static_cast<float>(std::log1p(double(i))));
    EXPECT_THAT(std::vector<int64_t>(b.SampleIds(0, i).begin(), b.SampleIds(0, i).end()),
                ::testing::ElementsAre((i * 7) % 1000));
    ASSERT_EQ(b.SampleIds(1, i).size(), size_t(i % 4));
    for (int k = 0; k < i % 4; ++k) {
      EXPECT_EQ(b.SampleIds(1, i)[k], (i * 3 + k) % 100);
      EXPECT_EQ(b.SampleWeights(1, i)[k], 0.5f * (k + 1));
    }
    // STRING values are fingerprinted, then hashed into table 1 (u, 50 rows).
    EXPECT_EQ(b.SampleIds(2, i)[0], HashedRow(Fingerprint64(absl::StrCat("u", i % 13)), 1, 50));
  }
  EXPECT_TRUE(b.weights[0].empty());
}

// Global batch b of an epoch is the rows [b G, (b + 1) G) of the epoch's
// order whatever the world size; the last, partial batch is masked.
TEST(FileSourceTest, SameGlobalBatchesAtEveryWorldSize) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(37));
  for (const int window : {0, 5, 100}) {
    SCOPED_TRACE(window);
    const std::string text = SchemaText(absl::StrCat(
        "shuffle_window: ", window, " text { train_path: \"", train,
        "\" delimiter: \",\" header: true }"));
    const config::RunConfig one = Load(text, 1);
    const std::unique_ptr<DataSource> source = Source(one, 0, 1);
    auto schedule = source->train_schedule();
    ASSERT_NE(schedule, nullptr);
    EXPECT_EQ(schedule->steps_per_epoch(), 3);
    std::multiset<float> epoch_labels_by_age;
    for (int64_t step = 0; step < 6; ++step) {
      int64_t count = 0;
      const std::vector<Row> reference = GlobalRows(one, 1, false, step, &count);
      EXPECT_EQ(count, step % 3 == 2 ? 5 : 16);
      int real = 0;
      for (const Row& r : reference) real += r.mask != 0;
      EXPECT_EQ(real, count);
      if (step < 3) {
        for (const Row& r : reference) {
          if (r.mask != 0) epoch_labels_by_age.insert(r.dense[0]);
        }
      }
      for (const int world : {2, 4}) {
        EXPECT_EQ(GlobalRows(Load(text, world), world, false, step), reference)
            << "world " << world << " step " << step;
      }
    }
    // The first epoch saw every row exactly once.
    std::multiset<float> all;
    for (int i = 0; i < 37; ++i) all.insert(i * 0.5f);
    EXPECT_EQ(epoch_labels_by_age, all);
  }
}

TEST(FileSourceTest, ShuffleChangesByEpochAndStaysInItsWindow) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(37));
  const config::RunConfig config = Load(SchemaText(absl::StrCat(
      "shuffle_window: 8 text { train_path: \"", train, "\" delimiter: \",\" header: true }")), 1);
  auto order = [&](int64_t epoch) {
    std::vector<float> ages;
    for (int64_t step = 3 * epoch; step < 3 * epoch + 3; ++step) {
      for (const Row& r : GlobalRows(config, 1, false, step)) {
        if (r.mask != 0) ages.push_back(r.dense[0] * 2);
      }
    }
    return ages;
  };
  const std::vector<float> e0 = order(0), e1 = order(1);
  ASSERT_EQ(e0.size(), 37u);
  EXPECT_NE(e0, e1);
  for (size_t p = 0; p < e0.size(); ++p) {
    EXPECT_EQ(static_cast<int>(e0[p]) / 8, static_cast<int>(p) / 8) << p;  // within its window
  }
}

TEST(FileSourceTest, EvalScoresEveryRowOnceAtAnyWorldSize) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(20));
  const std::string eval = dir.Write("eval.csv", Csv(37, 100));
  const std::string text = SchemaText(absl::StrCat(
      "text { train_path: \"", train, "\" eval_path: \"", eval,
      "\" delimiter: \",\" header: true }"));
  for (const int world : {1, 2, 4}) {
    const config::RunConfig config = Load(text, world);
    auto source = Source(config, 0, world);
    EXPECT_EQ(source->num_eval_samples(), 37);
    ASSERT_EQ(source->num_eval_chunks(), 3);
    std::vector<float> ages;
    for (int64_t c = 0; c < 3; ++c) {
      for (const Row& r : GlobalRows(config, world, true, c)) {
        if (r.mask != 0) ages.push_back(r.dense[0] * 2);
      }
    }
    ASSERT_EQ(ages.size(), 37u) << world;
    for (int i = 0; i < 37; ++i) EXPECT_EQ(ages[i], 100 + i);
  }
  // A cap below the file scores the first rows; above it, every row once.
  auto capped = Source(Load(text, 1, "training { eval_samples: 20 }"), 0, 1);
  EXPECT_EQ(capped->num_eval_samples(), 20);
  EXPECT_EQ(capped->num_eval_chunks(), 2);
  EXPECT_EQ(Source(Load(text, 1, "training { eval_samples: 1000 }"), 0, 1)->num_eval_samples(), 37);
}

TEST(FileSourceTest, MalformedRowsAreMaskedOrErrors) {
  TempDir dir;
  std::string csv = Csv(20);
  csv += "1,oops,3,4,,,u\n";          // line 22: price is not a number
  csv += "1,1,3,4,1|2|3|4|5,1|1|1|1|1,u\n";  // line 23: 5 values, max_sequence_length 4
  csv += "1,1,3,4,1|2,0.5,u\n";       // line 24: 1 weight for 2 values
  csv += "1,nan,3,4,,,u\n";           // line 25: NaN
  const std::string train = dir.Write("train.csv", csv);
  auto source_text = [&](const std::string& extra) {
    return absl::StrCat("text { train_path: \"", train, "\" delimiter: \",\" header: true", extra,
                        " }");
  };
  const std::string lenient = SchemaText(source_text(""));
  auto source = Source(Load(lenient, 1), 0, 1);
  Batch b;
  ASSERT_TRUE(source->TrainBatch(1, &b).ok());  // rows 16..23
  EXPECT_EQ(source->skipped_lines(), 4);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.real(i), i < 4) << i;
  for (int f = 0; f < 3; ++f) EXPECT_TRUE(b.SampleIds(f, 5).empty());

  const std::string strict = SchemaText(source_text(" strict: true"));
  auto strict_source = Source(Load(strict, 1), 0, 1);
  const absl::Status st = strict_source->TrainBatch(1, &b);
  EXPECT_THAT(st.message(), HasSubstr(train + ":22: field 2 'oops' is not a number (dense input 'price')"));

  // Truncation instead of an error for the long list.
  config::RunConfig t = Load(lenient, 1, "data { schema { sequence_overflow: OVERFLOW_TRUNCATE } }");
  auto tsource = Source(t, 0, 1);
  ASSERT_TRUE(tsource->TrainBatch(1, &b).ok());
  EXPECT_EQ(tsource->skipped_lines(), 3);
  EXPECT_EQ(b.SampleIds(1, 5).size(), 4u);
  EXPECT_EQ(b.SampleIds(1, 5)[3], 4);
}

TEST(FileSourceTest, SequenceTooLongNamesFileLineAndFeature) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(3) + "1,1,3,4,1|2|3|4|5,1|1|1|1|1,u\n");
  auto source = Source(Load(SchemaText(absl::StrCat("text { train_path: \"", train,
                                                    "\" delimiter: \",\" header: true strict: true }")),
                            1),
                       0, 1);
  Batch b;
  const absl::Status st = source->TrainBatch(0, &b);
  EXPECT_THAT(st.message(), HasSubstr(train + ":5: feature 'hist' has 5 values, more than its "
                                              "max_sequence_length 4"));
}

TEST(FileSourceTest, CriteoPresetMatchesTheFormulas) {
  TempDir dir;
  std::string line = "1";
  for (int k = 0; k < 13; ++k) absl::StrAppend(&line, "\t", k == 2 ? "" : absl::StrCat(k * 10 - 5));
  for (int c = 0; c < 26; ++c) absl::StrAppend(&line, "\t", c == 3 ? "" : absl::StrFormat("%x", 0xabc00 + c));
  const std::string train = dir.Write("train.tsv", line + "\n");
  config::RunConfig config = Load(absl::StrCat(R"(
    tables { name: "a" vocab_size: 97 dim: 8 }
    tables { name: "b" vocab_size: 5 dim: 8 }
    features { name: "f0" table: "a" }
    features { name: "f1" table: "b" input_column: 25 }
    features { name: "f2" table: "b" input_column: 3 }
    model { num_dense_features: 14 bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
    training { global_batch: 4 }
    data { criteo { train_path: ")", train, "\" } }"), 1);
  Batch b;
  ASSERT_TRUE(Source(config, 0, 1)->TrainBatch(0, &b).ok());
  EXPECT_EQ(b.labels[0], 1);
  for (int k = 0; k < 14; ++k) {
    const double x = k == 2 || k == 13 ? 0 : std::max(0, k * 10 - 5);
    EXPECT_FLOAT_EQ(b.dense[k], static_cast<float>(std::log1p(x))) << k;
  }
  EXPECT_EQ(b.SampleIds(0, 0)[0], HashedRow(0xabc00, 0, 97));
  EXPECT_EQ(b.SampleIds(1, 0)[0], HashedRow(0xabc00 + 25, 1, 5));
  EXPECT_TRUE(b.SampleIds(2, 0).empty());  // missing category
  EXPECT_FALSE(b.real(1));                 // one row, batch of 4
}

// The CRITEO preset composed with a missing-value indicator for I3 and I5
// read as a categorical reads the rows as the schema written out line by
// line does, batch for batch.
TEST(FileSourceTest, ComposedCriteoPresetReadsAsTheWrittenOutSchema) {
  TempDir dir;
  std::string rows;
  for (int r = 0; r < 3; ++r) {
    absl::StrAppend(&rows, r % 2);
    for (int k = 0; k < 13; ++k) {
      absl::StrAppend(&rows, "\t", k == 2 && r != 1 ? "" : absl::StrCat(k * 10 - 5 + r));
    }
    for (int c = 0; c < 26; ++c) absl::StrAppend(&rows, "\t", absl::StrFormat("%x", 0xabc00 + c + r));
    rows += "\n";
  }
  const std::string train = dir.Write("train.tsv", rows);
  auto model = [](bool preset) {
    return absl::StrCat(R"(
      tables { name: "a" vocab_size: 97 dim: 8 }
      tables { name: "b" vocab_size: 5 dim: 8 }
      tables { name: "i" vocab_size: 31 dim: 8 }
      features { name: "f0" table: "a" }
      features { name: "f1" table: "b" )", preset ? "input_column: 25" : "", R"( }
      features { name: "f2" table: "b" )", preset ? "input_column: 3" : "", R"( }
      features { name: "i5" table: "i" }
      model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
      training { global_batch: 4 })");
  };
  const config::RunConfig composed = Load(absl::StrCat(model(true), R"(
    data { criteo { train_path: ")", train, R"(" } schema {
      dense { name: "I3" missing_indicator: true }
      sparse { feature: "i5" key: "I5" } } })"), 1);
  std::string written = R"(label { name: "label" column: 0 })";
  for (int k = 1; k <= 13; ++k) {
    absl::StrAppend(&written, " dense { name: 'I", k, "' column: ", k, " transform: LOG1P",
                    k == 3 ? " missing_indicator: true" : "", " }");
  }
  absl::StrAppend(&written, " sparse { feature: 'f0' key: 'C1' column: 14 type: HEX }",
                  " sparse { feature: 'f1' key: 'C26' column: 39 type: HEX }",
                  " sparse { feature: 'f2' key: 'C4' column: 17 type: HEX }",
                  " sparse { feature: 'i5' key: 'I5' column: 5 type: INT64 }");
  const config::RunConfig text = Load(
      absl::StrCat(model(false), " data { text { train_path: '", train, "' } schema { ", written, " } }"),
      1);
  EXPECT_EQ(composed.model().num_dense_features(), 14);
  const std::vector<Row> got = GlobalRows(composed, 1, /*eval=*/false, 0);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got, GlobalRows(text, 1, /*eval=*/false, 0));
  EXPECT_EQ(got[0].dense[13], 1);  // I3 missing
  EXPECT_EQ(got[1].dense[13], 0);
  EXPECT_FLOAT_EQ(got[1].dense[2], std::log1p(16.0f));
  EXPECT_EQ(got[2].ids[3][0], HashedRow(37, 2, 31));  // I5 = 35 + row, hashed
  EXPECT_EQ(got[0].ids[1][0], HashedRow(0xabc00 + 25, 1, 5));
  // The preset's reading rules stay: a label of 0.5 is malformed.
  rows.replace(0, 1, "0.5");
  dir.Write("train.tsv", rows);
  Batch b;
  ASSERT_TRUE(Source(composed, 0, 1)->TrainBatch(0, &b).ok());
  EXPECT_FALSE(b.real(0));
}

// lemrt_vocab writes HEX values as the parser kept their text: leading
// zeros stay (the key is the number either way).
TEST(FileSourceTest, HexTextsAreKeptAsRead) {
  config::RunConfig config = Load(R"(
    tables { name: "a" vocab_size: 97 dim: 8 }
    features { name: "f0" table: "a" }
    model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
    data { criteo { train_path: "unused.tsv" } })", 1);
  auto schema = ResolveSchema(config);
  ASSERT_TRUE(schema.ok()) << schema.status();
  auto parser = DelimitedParser::Create(*schema, '\t', "", "test");
  ASSERT_TRUE(parser.ok()) << parser.status();
  (*parser)->set_keep_text(true);
  std::string line = "0";
  for (int k = 0; k < 13; ++k) absl::StrAppend(&line, "\t1");
  for (int c = 0; c < 26; ++c) absl::StrAppend(&line, "\t", c == 0 ? "00abc" : "0A");
  ParsedSample sample;
  ASSERT_TRUE((*parser)->Parse(line, &sample).ok());
  EXPECT_EQ(sample.values[0], std::vector<uint64_t>{0xabc});
  EXPECT_EQ(sample.texts[0], std::vector<std::string>{"00abc"});
  EXPECT_EQ(sample.texts[1], std::vector<std::string>{"0A"});
}

TEST(FileSourceTest, VocabularyMapsValuesAndHashesTheRestIntoOovBuckets) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(16));
  const std::string vocab = dir.Write("users.txt", "u3\t10\nu1\t9\nu7\t2\n");
  std::string text = SchemaText(absl::StrCat("text { train_path: \"", train,
                                             "\" delimiter: \",\" header: true }"));
  text.replace(text.find("sparse { feature: \"user\" }"), 26,
               absl::StrCat("sparse { feature: \"user\" mapping: VOCABULARY num_oov_buckets: 2 "
                            "vocabulary_file: \"", vocab, "\" }"));
  auto source = Source(Load(text, 1), 0, 1);
  Batch b;
  ASSERT_TRUE(source->TrainBatch(0, &b).ok());
  for (int i = 0; i < 16; ++i) {
    const int u = i % 13;
    const int64_t id = b.SampleIds(2, i)[0];
    if (u == 3) EXPECT_EQ(id, 2);
    else if (u == 1) EXPECT_EQ(id, 3);
    else if (u == 7) EXPECT_EQ(id, 4);
    else EXPECT_EQ(id, HashedRow(Fingerprint64(absl::StrCat("u", u)), 1, 2)) << i;
  }
  auto* file_source = dynamic_cast<FileSource*>(source.get());
  ASSERT_NE(file_source, nullptr);
  EXPECT_EQ(file_source->feature_counts()[2].values, 16);
  EXPECT_EQ(file_source->feature_counts()[2].oov, 16 - 4);  // u1 x2, u3, u7
}

// The rows of Csv(rows, first) as TFRecord records of tf.train.Example
// (gzip-compressed with `gz`).
std::string TfRecords(int rows, int first = 0) {
  std::string out;
  auto frame = [&](const std::string& data) {
    const uint64_t length = data.size();
    std::string header(reinterpret_cast<const char*>(&length), 8);
    const uint32_t length_crc = base::MaskCrc32c(base::Crc32c(header.data(), 8));
    const uint32_t data_crc = base::MaskCrc32c(base::Crc32c(data.data(), data.size()));
    out += header;
    out.append(reinterpret_cast<const char*>(&length_crc), 4);
    out += data;
    out.append(reinterpret_cast<const char*>(&data_crc), 4);
  };
  for (int i = first; i < first + rows; ++i) {
    example::Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["click"].mutable_float_list()->add_value(i % 2);
    f["price"].mutable_float_list()->add_value(i * 0.5f);
    f["age"].mutable_int64_list()->add_value(i);
    f["item"].mutable_int64_list()->add_value((i * 7) % 1000);
    for (int k = 0; k < i % 4; ++k) {
      f["history"].mutable_int64_list()->add_value((i * 3 + k) % 100);
      f["hist_w"].mutable_float_list()->add_value(0.5f * (k + 1));
    }
    f["user"].mutable_bytes_list()->add_value(absl::StrCat("u", i % 13));
    frame(e.SerializeAsString());
  }
  return out;
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

TEST(TfRecordTest, GivesTheCsvBatchesPlainAndGzipped) {
  TempDir dir;
  const std::string csv = dir.Write("train.csv", Csv(1500));
  const std::string plain = dir.Write("train.tfrecord", TfRecords(1000));
  const std::string rest = dir.Write("rest.tfrecord", TfRecords(500, 1000));
  WriteGzip(dir.path("train.tfrecord.gz"), TfRecords(1500));
  const std::string text = SchemaText(absl::StrCat(
      "shuffle_window: 700 text { train_path: \"", csv, "\" delimiter: \",\" header: true }"));
  // Two files make one split (a list, in order); the gzip file on its own.
  const std::string two = SchemaText(absl::StrCat("shuffle_window: 700 tfrecord { train_path: \"",
                                                  plain, ",", rest, "\" }"));
  const std::string gz = SchemaText(absl::StrCat("shuffle_window: 700 tfrecord { train_path: \"",
                                                 dir.path("*.gz"), "\" }"));
  for (const int world : {1, 2}) {
    for (int64_t step : {0, 40, 93, 94, 200}) {
      const std::vector<Row> reference = GlobalRows(Load(text, world), world, false, step);
      EXPECT_EQ(GlobalRows(Load(two, world), world, false, step), reference) << world << " " << step;
      EXPECT_EQ(GlobalRows(Load(gz, world), world, false, step), reference) << world << " " << step;
    }
  }
}

TEST(TfRecordTest, CorruptRecordsNameFileAndRecord) {
  TempDir dir;
  std::string bytes = TfRecords(50);
  std::string bad_data = bytes;
  bad_data[bad_data.size() / 2] ^= 1;  // inside some record's data
  const std::string path = dir.Write("bad.tfrecord", bad_data);
  auto source = CreateDataSource(
      Load(SchemaText(absl::StrCat("tfrecord { train_path: \"", path, "\" }")), 1), 0, 1);
  EXPECT_EQ(source.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(source.status().message(), HasSubstr(path + "', record "));
  EXPECT_THAT(source.status().message(), HasSubstr("fails its CRC-32C checksum"));
  const std::string cut = dir.Write("cut.tfrecord", bytes.substr(0, bytes.size() - 7));
  source = CreateDataSource(
      Load(SchemaText(absl::StrCat("tfrecord { train_path: \"", cut, "\" }")), 1), 0, 1);
  EXPECT_THAT(source.status().message(), HasSubstr("record 50: the file ends inside the record"));
  // A label of the wrong kind is a malformed example: skipped, or an error (strict).
  example::Example e;
  (*e.mutable_features()->mutable_feature())["click"].mutable_bytes_list()->add_value("yes");
  std::string odd = TfRecords(3);
  {
    const std::string data = e.SerializeAsString();
    const uint64_t length = data.size();
    std::string header(reinterpret_cast<const char*>(&length), 8);
    const uint32_t a = base::MaskCrc32c(base::Crc32c(header.data(), 8));
    const uint32_t b = base::MaskCrc32c(base::Crc32c(data.data(), data.size()));
    odd += header + std::string(reinterpret_cast<const char*>(&a), 4) + data +
           std::string(reinterpret_cast<const char*>(&b), 4);
  }
  const std::string odd_path = dir.Write("odd.tfrecord", odd);
  auto strict = Source(Load(SchemaText(absl::StrCat("tfrecord { train_path: \"", odd_path,
                                                    "\" strict: true }")), 1), 0, 1);
  Batch b;
  EXPECT_THAT(strict->TrainBatch(0, &b).message(),
              HasSubstr(odd_path + ", record 4: feature key 'click' (the label) is a bytes_list"));
}

TEST(BinaryFileTest, ConvertedTextGivesTheSameBatches) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(2500));
  const std::string text = SchemaText(absl::StrCat("text { train_path: \"", train,
                                                   "\" eval_path: \"", train,
                                                   "\" delimiter: \",\" header: true }"));
  const std::string bin = dir.path("train.bin");
  auto stats = ConvertToBinary(Load(text, 1), Split::kTrain, bin);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->records, 2500);
  const std::string binary_text = SchemaText(absl::StrCat(
      "binary { train_path: \"", bin, "\" eval_path: \"", bin, "\" }"));
  for (const int world : {1, 2}) {
    for (int64_t step : {0, 1, 156, 157, 200}) {
      EXPECT_EQ(GlobalRows(Load(binary_text, world, "data { shuffle_window: 300 }"), world, false, step),
                GlobalRows(Load(text, world, "data { shuffle_window: 300 }"), world, false, step))
          << world << " " << step;
    }
    EXPECT_EQ(GlobalRows(Load(binary_text, world), world, true, 156),
              GlobalRows(Load(text, world), world, true, 156));
  }
  // Converting onto the input is refused.
  const absl::StatusOr<ConvertStats> onto = ConvertToBinary(Load(text, 1), Split::kTrain, train);
  EXPECT_THAT(onto.status().message(), HasSubstr("is the input"));
}

// The synthetic source's training split is steps x global_batch rows: a
// product past int64 is refused naming it, and no file is written (it
// wrapped, (2^60 + 1) x 16 rows to 16, and wrote them).
TEST(BinaryFileTest, SyntheticStepsTimesBatchPastInt64IsRefused) {
  TempDir dir;
  const config::RunConfig config = Load(R"(
    tables { name: "t" vocab_size: 1000 dim: 8 }
    features { name: "item" table: "t" }
    model { bottom_mlp: [ 8 ] top_mlp: [ 1 ] }
    training { global_batch: 16 steps: 1152921504606846977 }
    data { synthetic {} })",
                                        1);
  const std::string bin = dir.path("syn.bin");
  const absl::StatusOr<ConvertStats> stats = ConvertToBinary(config, Split::kTrain, bin);
  EXPECT_EQ(stats.status().message(),
            "the synthetic source's training split is training.steps x global_batch rows, and "
            "1152921504606846977 x 16 is more rows than a 64-bit count holds; set training.steps "
            "to the steps the file should hold.");
  EXPECT_NE(access(bin.c_str(), F_OK), 0);
}

TEST(BinaryFileTest, CorruptBlocksAndOldFilesAreRefused) {
  TempDir dir;
  const std::string train = dir.Write("train.csv", Csv(2500));
  const std::string bin = dir.path("train.bin");
  const config::RunConfig text = Load(SchemaText(absl::StrCat(
      "text { train_path: \"", train, "\" delimiter: \",\" header: true }")), 1);
  ASSERT_TRUE(ConvertToBinary(text, Split::kTrain, bin).ok());
  // Flip one bit in the second block (records 1025..2048).
  {
    std::fstream f(bin, std::ios::in | std::ios::out | std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t pos = all.size() / 2;
    all[pos] ^= 0x10;
    f.seekp(0);
    f.write(all.data(), all.size());
  }
  const config::RunConfig binary = Load(SchemaText(absl::StrCat(
      "binary { train_path: \"", bin, "\" }")), 1);
  auto source = Source(binary, 0, 1);
  Batch b;
  absl::Status st;
  for (int64_t step = 0; step < 157 && st.ok(); ++step) st = source->TrainBatch(step, &b);
  EXPECT_THAT(st.message(), HasSubstr("block 1 (records 1025-2048) fails its CRC-32C checksum"));
  const std::string v1 = dir.Write("old.bin", std::string("LEMRTBN1") + std::string(100, '\0'));
  auto old = CreateDataSource(Load(SchemaText(absl::StrCat("binary { train_path: \"", v1, "\" }")), 1), 0, 1);
  EXPECT_THAT(old.status().message(), HasSubstr("version 1"));
  EXPECT_THAT(old.status().message(), HasSubstr("lemrt_convert"));
}

}  // namespace
}  // namespace lemrt::host
