#include "host/criteo_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "host/data_source.h"

namespace lemrt::host {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  CHECK(f != nullptr) << path;
  CHECK_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
  std::fclose(f);
  return path;
}

// A valid line: label, 13 integers (the first is `tag`), 26 categories.
std::string Line(int label, int64_t tag,
                 const std::string& first_category = "a1b2") {
  std::vector<std::string> fields = {std::to_string(label),
                                     std::to_string(tag)};
  for (int k = 1; k < 13; ++k) fields.push_back(std::to_string(k));
  fields.push_back(first_category);
  for (int c = 1; c < 26; ++c) fields.push_back(absl::StrCat(c * 16 + 1));
  return absl::StrJoin(fields, "\t");
}

// Lines tagged 0 .. n-1, of varying lengths, newline-terminated.
std::string TaggedLines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&text, Line(i % 2, i, std::string(1 + i % 8, 'f')), "\n");
  }
  return text;
}

// Tables "a" (1000 rows) and "b" (50 rows); f0 reads column 0 into "a",
// f1 column 2 into "b", f2 column 25 into "a".
config::RunConfig CriteoConfig(const std::string& train_path,
                               int64_t global_batch) {
  config::RunConfig config;
  auto* a = config.add_tables();
  a->set_name("a");
  a->set_vocab_size(1000);
  auto* b = config.add_tables();
  b->set_name("b");
  b->set_vocab_size(50);
  auto* f0 = config.add_features();
  f0->set_name("f0");
  f0->set_table("a");
  auto* f1 = config.add_features();
  f1->set_name("f1");
  f1->set_table("b");
  f1->set_input_column(2);
  auto* f2 = config.add_features();
  f2->set_name("f2");
  f2->set_table("a");
  f2->set_input_column(25);
  config.mutable_training()->set_global_batch(global_batch);
  config.mutable_data()->mutable_criteo()->set_train_path(train_path);
  return config;
}

std::unique_ptr<CriteoReader> MakeReader(const config::RunConfig& config,
                                         int rank = 0, int world_size = 1) {
  auto reader = CriteoReader::Create(config, rank, world_size);
  CHECK(reader.ok()) << reader.status();
  return *std::move(reader);
}

int64_t Tag(const Batch& batch, int64_t row) {
  return std::llround(std::expm1(double{batch.dense[row * batch.num_dense]}));
}

std::vector<int64_t> Tags(const Batch& batch) {
  std::vector<int64_t> tags;
  for (int64_t i = 0; i < batch.num_samples; ++i) tags.push_back(Tag(batch, i));
  return tags;
}

TEST(ParseCriteoLineTest, ParsesFieldsAndPadsShortLines) {
  CriteoLine line;
  ASSERT_TRUE(ParseCriteoLine("1\t5\t-3\t\t0\r", &line).ok());
  EXPECT_EQ(line.label, 1.0f);
  EXPECT_FLOAT_EQ(line.dense[0], std::log(6.0f));
  EXPECT_EQ(line.dense[1], 0.0f);  // Negative -> 0.
  EXPECT_EQ(line.dense[2], 0.0f);  // Missing.
  EXPECT_EQ(line.dense[3], 0.0f);
  EXPECT_EQ(line.category_present, 0u);  // Padded with empty fields.

  ASSERT_TRUE(ParseCriteoLine(Line(0, 7, "68fd1e64"), &line).ok());
  EXPECT_EQ(line.label, 0.0f);
  EXPECT_TRUE(line.has_category(0));
  EXPECT_EQ(line.category[0], 0x68fd1e64u);
  EXPECT_EQ(line.category[25], 0x401u);  // The text "401", read as hex.
}

TEST(ParseCriteoLineTest, RejectsMalformedFields) {
  CriteoLine line;
  const auto message = [&](const std::string& text) {
    return std::string(ParseCriteoLine(text, &line).message());
  };
  EXPECT_EQ(message(Line(1, 1, "zz12")),
            "field 15 'zz12' is not a hex category");
  EXPECT_NE(message(Line(1, 1, "123456789")).find("field 15"),
            std::string::npos);
  EXPECT_NE(message(Line(1, 1, "-12")).find("field 15"), std::string::npos);
  EXPECT_NE(message("2\t1").find("field 1 '2'"), std::string::npos);
  EXPECT_NE(message("\t1").find("field 1"), std::string::npos);
  EXPECT_NE(message("0\t1x").find("field 2 '1x' is not an integer"),
            std::string::npos);
  EXPECT_NE(message("0\t99999999999999999999").find("field 2"),
            std::string::npos);
  EXPECT_NE(message(Line(0, 1) + "\textra").find("more than 40 fields"),
            std::string::npos);
}

TEST(CriteoReaderTest, FillsBatchFromGoodLine) {
  const std::string path =
      WriteFile("good.tsv", "1\t5\t-3\t\t4\t\t\t\t\t\t\t\t\t\t68fd1e64\t\t\t" +
                                std::string(22, '\t') + "00000abc\n");
  config::RunConfig config = CriteoConfig(path, 1);
  config.mutable_model()->set_num_dense_features(14);
  auto reader = MakeReader(config);
  EXPECT_FALSE(reader->has_teacher());
  EXPECT_EQ(reader->num_eval_chunks(), 0);
  Batch batch;
  ASSERT_TRUE(reader->TrainBatch(0, &batch).ok());
  ASSERT_EQ(batch.num_samples, 1);
  EXPECT_EQ(batch.labels[0], 1.0f);
  EXPECT_FLOAT_EQ(batch.dense[0], std::log(6.0f));
  EXPECT_EQ(batch.dense[1], 0.0f);
  EXPECT_EQ(batch.dense[2], 0.0f);
  EXPECT_FLOAT_EQ(batch.dense[3], std::log(5.0f));
  EXPECT_EQ(batch.dense[13], 0.0f);  // Past the 13 integer fields.
  EXPECT_TRUE(batch.teacher_prob.empty());
  ASSERT_EQ(batch.SampleIds(0, 0).size(), 1u);
  EXPECT_EQ(batch.SampleIds(0, 0)[0], CriteoCategoryId(0x68fd1e64, 0, 1000));
  EXPECT_EQ(batch.SampleIds(1, 0).size(), 0u);  // Column 2 is missing.
  ASSERT_EQ(batch.SampleIds(2, 0).size(), 1u);
  EXPECT_EQ(batch.SampleIds(2, 0)[0], CriteoCategoryId(0xabc, 0, 1000));
}

TEST(CriteoReaderTest, CategoryIdsSpreadOverTheVocabulary) {
  std::set<int64_t> ids;
  for (uint32_t v = 0; v < 1000; ++v) {
    const int64_t id = CriteoCategoryId(v, 3, 100);
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 100);
    ids.insert(id);
  }
  EXPECT_GT(ids.size(), 95u);
  EXPECT_NE(CriteoCategoryId(12345, 0, 1 << 30),
            CriteoCategoryId(12345, 1, 1 << 30));
}

TEST(CriteoReaderTest, LenientModeSkipsAndCountsMalformedLinesOnce) {
  const std::string path =
      WriteFile("lenient.tsv", Line(1, 0) + "\n" + Line(1, 1, "xyz") + "\n" +
                                   Line(0, 2) + "\n7\t1\n" + Line(1, 4) + "\n");
  auto reader = MakeReader(CriteoConfig(path, 4));
  Batch batch;
  ASSERT_TRUE(reader->TrainBatch(0, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 2, 4, 0}));
  ASSERT_TRUE(reader->TrainBatch(1, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{2, 4, 0, 2}));
  EXPECT_EQ(reader->skipped_lines(), 2);
}

TEST(CriteoReaderTest, StrictModeNamesFileAndLine) {
  const std::string path =
      WriteFile("file.tsv", Line(1, 0) + "\n" + Line(1, 1) + "\n" +
                                Line(1, 2, "zz12") + "\n");
  config::RunConfig config = CriteoConfig(path, 3);
  config.mutable_data()->mutable_criteo()->set_strict(true);
  auto reader = MakeReader(config);
  Batch batch;
  const absl::Status status = reader->TrainBatch(0, &batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(
                "file.tsv:3: field 15 'zz12' is not a hex category"),
            std::string::npos)
      << status;
}

TEST(CriteoReaderTest, StrictLineNumbersAreAbsoluteInLaterShards) {
  // Six lines of equal length: rank 1 of 2 owns lines 4..6.
  std::string text;
  for (int i = 0; i < 6; ++i) {
    absl::StrAppend(&text, Line(1, i, i == 4 ? "zzzz" : "aaaa"), "\n");
  }
  const std::string path = WriteFile("strict2.tsv", text);
  config::RunConfig config = CriteoConfig(path, 4);
  config.mutable_data()->mutable_criteo()->set_strict(true);
  auto reader = MakeReader(config, 1, 2);
  Batch batch;
  const absl::Status status = reader->TrainBatch(0, &batch);
  EXPECT_NE(status.message().find("strict2.tsv:5:"), std::string::npos)
      << status;
}

TEST(CriteoReaderTest, RankShardsPartitionTheLines) {
  constexpr int kLines = 50;
  const std::string text = TaggedLines(kLines);
  for (const bool trailing_newline : {true, false}) {
    const std::string path =
        WriteFile("partition.tsv",
                  trailing_newline ? text : text.substr(0, text.size() - 1));
    for (const int world_size : {1, 2, 3, 4, 7}) {
      std::vector<int64_t> all;
      for (int rank = 0; rank < world_size; ++rank) {
        auto reader =
            MakeReader(CriteoConfig(path, world_size), rank, world_size);
        Batch batch;
        // One line per step: read until the shard's first line comes back.
        std::vector<int64_t> shard;
        for (int64_t step = 0; step <= kLines; ++step) {
          ASSERT_TRUE(reader->TrainBatch(step, &batch).ok());
          if (!shard.empty() && Tag(batch, 0) == shard[0]) break;
          shard.push_back(Tag(batch, 0));
        }
        EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
        all.insert(all.end(), shard.begin(), shard.end());
      }
      std::vector<int64_t> expected(kLines);
      for (int i = 0; i < kLines; ++i) expected[i] = i;
      EXPECT_EQ(all, expected) << "world " << world_size;
    }
  }
}

TEST(CriteoReaderTest, WrapsAroundAndSeeksToTheStep) {
  const std::string path = WriteFile("wrap.tsv", TaggedLines(5));
  const config::RunConfig config = CriteoConfig(path, 3);
  auto reader = MakeReader(config);
  Batch batch;
  ASSERT_TRUE(reader->TrainBatch(0, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 1, 2}));
  ASSERT_TRUE(reader->TrainBatch(1, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{3, 4, 0}));
  ASSERT_TRUE(reader->TrainBatch(5, &batch).ok());  // Lines 15..17.
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 1, 2}));
  ASSERT_TRUE(reader->TrainBatch(0, &batch).ok());  // Back to the start.
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 1, 2}));

  auto resumed = MakeReader(config);  // Epoch length not yet known.
  ASSERT_TRUE(resumed->TrainBatch(3, &batch).ok());  // Lines 9..11.
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{4, 0, 1}));
}

TEST(CriteoReaderTest, EvalReadsTheShardOnceAndWraps) {
  const std::string train = WriteFile("eval_train.tsv", TaggedLines(4));
  const std::string eval = WriteFile("eval.tsv", TaggedLines(3));
  config::RunConfig config = CriteoConfig(train, 2);
  config.mutable_data()->mutable_criteo()->set_eval_path(eval);
  config.mutable_training()->set_eval_samples(8);
  auto reader = MakeReader(config);
  ASSERT_EQ(reader->num_eval_chunks(), 4);
  Batch batch;
  ASSERT_TRUE(reader->EvalBatch(0, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(reader->EvalBatch(1, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{2, 0}));
  ASSERT_TRUE(reader->EvalBatch(3, &batch).ok());
  EXPECT_EQ(Tags(batch), (std::vector<int64_t>{0, 1}));
}

TEST(CriteoReaderTest, NoEvalFileMeansNoEvalChunks) {
  auto reader =
      MakeReader(CriteoConfig(WriteFile("noeval.tsv", TaggedLines(2)), 1));
  EXPECT_EQ(reader->num_eval_chunks(), 0);
  Batch batch;
  EXPECT_EQ(reader->EvalBatch(0, &batch).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CriteoReaderTest, MissingFileIsNotFound) {
  const std::string path = testing::TempDir() + "does_not_exist.tsv";
  const auto reader = CriteoReader::Create(CriteoConfig(path, 1), 0, 1);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find(path), std::string::npos);

  config::RunConfig config =
      CriteoConfig(WriteFile("ok.tsv", TaggedLines(2)), 1);
  config.mutable_data()->mutable_criteo()->set_eval_path(path);
  EXPECT_EQ(CriteoReader::Create(config, 0, 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(CriteoReaderTest, EmptyOrAllBadShardIsAnError) {
  const std::string empty = WriteFile("empty.tsv", "");
  auto reader = CriteoReader::Create(CriteoConfig(empty, 1), 0, 1);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("empty.tsv"), std::string::npos);

  const std::string bad = WriteFile("bad.tsv", "x\ny\n");
  EXPECT_EQ(CriteoReader::Create(CriteoConfig(bad, 1), 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);

  // One line: rank 1 of 2 owns nothing.
  const std::string one = WriteFile("one.tsv", Line(1, 0) + "\n");
  EXPECT_TRUE(CriteoReader::Create(CriteoConfig(one, 2), 0, 2).ok());
  EXPECT_EQ(CriteoReader::Create(CriteoConfig(one, 2), 1, 2).status().code(),
            absl::StatusCode::kInvalidArgument);

  config::RunConfig config = CriteoConfig(one, 1);
  config.mutable_data()->mutable_criteo()->set_eval_path(empty);
  EXPECT_EQ(CriteoReader::Create(config, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CriteoReaderTest, DirectoryAndBadColumnAreErrors) {
  EXPECT_EQ(CriteoReader::Create(CriteoConfig(testing::TempDir(), 1), 0, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  config::RunConfig config =
      CriteoConfig(WriteFile("col.tsv", TaggedLines(2)), 1);
  config.mutable_features(1)->set_input_column(26);
  const auto reader = CriteoReader::Create(config, 0, 1);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("'f1'"), std::string::npos);
}

TEST(CriteoReaderTest, FactoryPicksCriteo) {
  const config::RunConfig config =
      CriteoConfig(WriteFile("factory.tsv", TaggedLines(2)), 1);
  auto source = CreateDataSource(config, 0, 1);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE((*source)->has_teacher());
}

}  // namespace
}  // namespace lemrt::host
