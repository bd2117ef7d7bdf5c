#include "host/binary_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/random.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/binary_format.h"
#include "host/binary_writer.h"
#include "host/criteo_reader.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  CHECK(f != nullptr) << path;
  CHECK_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
  std::fclose(f);
  return path;
}

// `n` random Criteo lines (fixed seed) with empty fields, negative integers,
// and every `bad_every`-th line malformed (0: none).
std::string RandomTsv(int n, int bad_every) {
  base::CounterRng rng(42);
  std::string text;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> fields = {std::to_string(rng.NextBelow(2))};
    for (int k = 0; k < 13; ++k) {
      fields.push_back(rng.NextBelow(5) == 0 ? "" : std::to_string(int(rng.NextBelow(1000)) - 50));
    }
    for (int c = 0; c < 26; ++c) {
      fields.push_back(rng.NextBelow(6) == 0 ? "" : absl::StrFormat("%x", rng.NextU64() & 0xffffffff));
    }
    if (bad_every > 0 && i % bad_every == bad_every - 1) fields[3] = "x7";
    absl::StrAppend(&text, absl::StrJoin(fields, "\t"), "\n");
  }
  return text;
}

config::RunConfig MakeConfig(int64_t global_batch, int num_dense) {
  config::RunConfig config;
  auto* a = config.add_tables();
  a->set_name("a");
  a->set_vocab_size(1000);
  auto* b = config.add_tables();
  b->set_name("b");
  b->set_vocab_size(50);
  for (auto [name, table, column] : {std::tuple{"f0", "a", 0}, {"f1", "b", 2}, {"f2", "a", 25}}) {
    auto* f = config.add_features();
    f->set_name(name);
    f->set_table(table);
    f->set_input_column(column);
  }
  config.mutable_model()->set_num_dense_features(num_dense);
  config.mutable_training()->set_global_batch(global_batch);
  config.mutable_training()->set_seed(5);
  return config;
}

void ExpectSameBatch(const Batch& a, const Batch& b, const std::string& what) {
  EXPECT_EQ(a.num_samples, b.num_samples) << what;
  EXPECT_EQ(a.labels, b.labels) << what;
  EXPECT_EQ(a.dense, b.dense) << what;
  EXPECT_EQ(a.offsets, b.offsets) << what;
  EXPECT_EQ(a.ids, b.ids) << what;
}

TEST(BinaryFormatTest, RecordRoundTrip) {
  CriteoLine line;
  ASSERT_TRUE(ParseCriteoLine(RandomTsv(1, 0).substr(0, RandomTsv(1, 0).size() - 1), &line).ok());
  char record[kBinaryRecordBytes];
  EncodeBinaryRecord(line, record);
  CriteoLine back;
  DecodeBinaryRecord(record, &back);
  EXPECT_EQ(back.label, line.label);
  EXPECT_EQ(back.dense, line.dense);
  EXPECT_EQ(back.category, line.category);
  EXPECT_EQ(back.category_present, line.category_present);
}

// The binary file read in file order gives exactly the TSV reader's batches,
// across epochs (100 valid lines, batch 7) and for eval.
TEST(BinaryReaderTest, MatchesTheTsvReaderBatchForBatch) {
  const std::string tsv = WriteFile("rt.tsv", RandomTsv(111, 10));
  const std::string bin = testing::TempDir() + "rt.bin";
  auto stats = ConvertCriteoTsvToBinary(tsv, bin, /*strict=*/false);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->records, 100);
  EXPECT_EQ(stats->skipped_lines, 11);
  for (int num_dense : {13, 15}) {
    config::RunConfig tsv_config = MakeConfig(7, num_dense);
    tsv_config.mutable_data()->mutable_criteo()->set_train_path(tsv);
    tsv_config.mutable_data()->mutable_criteo()->set_eval_path(tsv);
    tsv_config.mutable_training()->set_eval_samples(35);
    config::RunConfig bin_config = MakeConfig(7, num_dense);
    bin_config.mutable_data()->mutable_binary()->set_train_path(bin);
    bin_config.mutable_data()->mutable_binary()->set_eval_path(bin);
    bin_config.mutable_training()->set_eval_samples(35);
    auto from_tsv = CriteoReader::Create(tsv_config, 0, 1);
    auto from_bin = BinaryReader::Create(bin_config, 0, 1);
    ASSERT_TRUE(from_tsv.ok()) << from_tsv.status();
    ASSERT_TRUE(from_bin.ok()) << from_bin.status();
    Batch a, b;
    for (int64_t step : {0, 1, 2, 13, 14, 15, 40, 3}) {
      ASSERT_TRUE((*from_tsv)->TrainBatch(step, &a).ok());
      ASSERT_TRUE((*from_bin)->TrainBatch(step, &b).ok());
      ExpectSameBatch(a, b, absl::StrCat("step ", step, " dense ", num_dense));
    }
    ASSERT_EQ((*from_bin)->num_eval_chunks(), (*from_tsv)->num_eval_chunks());
    for (int64_t c = 0; c < (*from_bin)->num_eval_chunks(); ++c) {
      ASSERT_TRUE((*from_tsv)->EvalBatch(c, &a).ok());
      ASSERT_TRUE((*from_bin)->EvalBatch(c, &b).ok());
      ExpectSameBatch(a, b, absl::StrCat("eval chunk ", c));
    }
  }
}

// Every record is read exactly once per epoch over all ranks, in a shuffled
// order that is the same for the same seed and changes with the epoch.
TEST(BinaryReaderTest, ShardsAndShufflesDeterministically) {
  const std::string bin = testing::TempDir() + "shuffle.bin";
  ASSERT_TRUE(ConvertCriteoTsvToBinary(WriteFile("shuffle.tsv", RandomTsv(50, 0)), bin, true).ok());
  for (int world : {1, 2, 3, 4}) {
    std::multiset<int64_t> seen;
    int64_t records = 0;
    for (int rank = 0; rank < world; ++rank) {
      config::RunConfig config = MakeConfig(world, 13);
      config.mutable_data()->mutable_binary()->set_train_path(bin);
      config.mutable_data()->mutable_binary()->set_shuffle_window(4);
      auto r = BinaryReader::Create(config, rank, world);
      ASSERT_TRUE(r.ok()) << r.status();
      auto again = BinaryReader::Create(config, rank, world);
      const int64_t begin = 50 / world * rank + 50 % world * rank / world;
      const int64_t n = 50 / world * (rank + 1) + 50 % world * (rank + 1) / world - begin;
      std::vector<int64_t> epoch0, epoch1;
      for (int64_t p = 0; p < n; ++p) {
        epoch0.push_back((*r)->ShardIndex(p));
        epoch1.push_back((*r)->ShardIndex(n + p));
        EXPECT_EQ((*again)->ShardIndex(p), epoch0.back());
        // Windows of 4 stay windows of 4.
        EXPECT_EQ(epoch0.back() / 4, p / 4) << "world " << world << " rank " << rank << " p " << p;
        seen.insert(begin + epoch0.back());
      }
      records += n;
      if (n >= 8) {
        EXPECT_NE(epoch0, epoch1) << "world " << world << " rank " << rank;
      }
      std::vector<int64_t> sorted = epoch0;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t p = 0; p < n; ++p) EXPECT_EQ(sorted[p], p);
    }
    EXPECT_EQ(records, 50);
    EXPECT_EQ(seen.size(), 50u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 50u) << "world " << world;
  }
}

TEST(BinaryReaderTest, RejectsFilesNotInTheFormat) {
  const std::string tsv = WriteFile("notbin.tsv", RandomTsv(5, 0));
  config::RunConfig config = MakeConfig(1, 13);
  config.mutable_data()->mutable_binary()->set_train_path(tsv);
  auto r = BinaryReader::Create(config, 0, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not a lemrt binary Criteo file"));

  const std::string bin = testing::TempDir() + "trunc.bin";
  ASSERT_TRUE(ConvertCriteoTsvToBinary(tsv, bin, true).ok());
  ASSERT_EQ(truncate(bin.c_str(), kBinaryHeaderBytes + 3 * kBinaryRecordBytes + 10), 0);
  config.mutable_data()->mutable_binary()->set_train_path(bin);
  r = BinaryReader::Create(config, 0, 1);
  EXPECT_THAT(r.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(r.status().message(), HasSubstr(bin));

  config.mutable_data()->mutable_binary()->set_train_path(testing::TempDir() + "nope.bin");
  EXPECT_EQ(BinaryReader::Create(config, 0, 1).status().code(), absl::StatusCode::kNotFound);
}

TEST(BinaryWriterTest, StrictConversionNamesFileAndLine) {
  const std::string tsv = WriteFile("strict.tsv", RandomTsv(12, 5));
  auto st = ConvertCriteoTsvToBinary(tsv, testing::TempDir() + "strict.bin", true);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.status().message(), HasSubstr(tsv + ":5:"));
  auto empty = ConvertCriteoTsvToBinary(WriteFile("empty.tsv", ""), testing::TempDir() + "e.bin", false);
  EXPECT_THAT(empty.status().message(), HasSubstr("no valid line"));
}

}  // namespace
}  // namespace lemrt::host
