#include "runtime/checkpoint/checkpoint_format.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "google/protobuf/text_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checkpoint/dir_lock.h"
#include "runtime/checkpoint/durable_files.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/npy.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/checkpoint/table_import.h"
#include "runtime/observability/model_checksum.h"

namespace lemrt::checkpoint {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/ckpt_format_testXXXXXX";
  return mkdtemp(tmpl);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A checkpoint of one table (vocab rows, dim 2, one slot) saved on `total_sc`
// SparseCores, written the way the trainer does, with row j = (j, -j) and
// slot (j/10, j/10). With `shuffle_key`, as a run with id shuffling saves
// it: files in placed-row order, each record naming its original row.
// `poison` makes one stored float NaN, checksums and all (a saved diverged
// model): 1 row 3's weight, 2 row 3's slot, 3 the second dense parameter.
// With `bf16`, weights and slots are stored as bf16 (rounded to nearest).
Manifest WriteFakeCheckpoint(const std::string& dir, int64_t vocab, int total_sc,
                             std::optional<uint64_t> shuffle_key = std::nullopt,
                             int poison = 0, bool bf16 = false) {
  Manifest m;
  m.set_format_version(kFormatVersion);
  m.set_step(7);
  uint64_t row_hash_sum = 0;
  m.set_world_size(1);
  m.set_sparse_cores_per_chip(total_sc);
  m.set_total_sparse_cores(total_sc);
  TableEntry* t = m.add_tables();
  t->set_name("t0");
  t->set_vocab_size(vocab);
  t->set_dim(2);
  t->set_optimizer("adagrad");
  t->set_slots_per_param(1);
  if (shuffle_key.has_value()) t->set_id_shuffle_key(*shuffle_key);
  if (bf16) {
    t->set_dtype("bf16");
    t->set_slot_dtype("bf16");
  }
  const base::IdPermutation permutation = SavedPermutation(*t);
  const int64_t rb = RecordBytes(*t);
  for (int g = 0; g < total_sc; ++g) {
    FileEntry* f = t->add_files();
    f->set_name(TableFileName(0, g));
    f->set_records(RecordsInFile(vocab, g, total_sc));
    f->set_bytes(f->records() * rb);
    std::string bytes(f->bytes(), '\0');
    uint64_t sum = 0;
    for (int64_t k = 0; k < f->records(); ++k) {
      const int64_t row = permutation.Inverse(g + k * total_sc);
      float v[4] = {float(row), -float(row), row / 10.0f, row / 10.0f};
      if (row == 3 && (poison == 1 || poison == 2)) v[poison == 1 ? 1 : 3] = std::nanf("");
      std::memcpy(bytes.data() + k * rb, &row, 8);
      EncodeRecord(*t, v, v + 2, bytes.data() + k * rb);
      DecodeRecord(*t, bytes.data() + k * rb, v, v + 2);  // the stored values
      sum += RecordHash(std::span<const char>(bytes.data() + k * rb, rb));
      row_hash_sum += runtime::ModelRowHash(0, row, v, 2);
    }
    f->set_checksum(sum);
    EXPECT_TRUE(WriteFileAtomically(dir + "/" + f->name(), bytes).ok());
  }
  const std::vector<float> dense = {1, poison == 3 ? std::nanf("") : 2, 3};
  std::string dense_bytes(12, '\0');
  std::memcpy(dense_bytes.data(), dense.data(), 12);
  DenseEntry* d = m.mutable_dense();
  d->set_num_params(3);
  d->set_optimizer("sgd");
  d->set_slots_per_param(0);
  d->mutable_file()->set_name(kDenseFileName);
  d->mutable_file()->set_records(1);
  d->mutable_file()->set_bytes(12);
  d->mutable_file()->set_checksum(RecordHash(dense_bytes));
  EXPECT_TRUE(WriteFileAtomically(dir + "/" + kDenseFileName, dense_bytes).ok());
  m.set_model_checksum(runtime::ModelChecksum(row_hash_sum, dense));
  EXPECT_TRUE(WriteManifest(dir, m).ok());
  return m;
}

TEST(CheckpointFormatTest, NamesAndSizes) {
  EXPECT_EQ(StepDirName(120), "step-00000120");
  EXPECT_EQ(TableFileName(3, 12), "table-003-sc-00012.bin");
  TableEntry e;
  e.set_dim(16);
  e.set_slots_per_param(1);
  EXPECT_EQ(RecordBytes(e), 8 + 4 * 32);
  e.set_slots_per_param(0);
  e.set_row_slots(1);  // row-wise Adagrad: one accumulator per row
  EXPECT_EQ(SlotFloatsPerRecord(e), 1);
  EXPECT_EQ(RecordBytes(e), 8 + 4 * 17);
  // Rows 0..9 on 4 SparseCores: 3, 3, 2, 2; on more SparseCores than rows: 1 or 0.
  EXPECT_EQ(RecordsInFile(10, 0, 4), 3);
  EXPECT_EQ(RecordsInFile(10, 1, 4), 3);
  EXPECT_EQ(RecordsInFile(10, 2, 4), 2);
  EXPECT_EQ(RecordsInFile(10, 3, 4), 2);
  EXPECT_EQ(RecordsInFile(2, 1, 4), 1);
  EXPECT_EQ(RecordsInFile(2, 2, 4), 0);
  EXPECT_EQ(RecordsInFile(0, 0, 1), 0);
}

TEST(CheckpointFormatTest, RecordHashSeesEveryByte) {
  std::string bytes(37, 'x');
  const uint64_t h = RecordHash(bytes);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] ^= 1;
    EXPECT_NE(RecordHash(changed), h) << i;
  }
  EXPECT_NE(RecordHash(std::string(36, 'x')), h);
}

TEST(CheckpointFormatTest, AtomicWriteLeavesNoTemporary) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/f", "hello").ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/f", "world!").ok());
  EXPECT_EQ(ReadAll(dir + "/f"), "world!");
  EXPECT_NE(access((dir + "/f.tmp").c_str(), F_OK), 0);
  const absl::Status st = WriteFileAtomically(dir + "/no/such/dir/f", "x");
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("no/such/dir/f.tmp"));
}

TEST(CheckpointFormatTest, ResolvePicksNewestCompleteStep) {
  const std::string root = TempDir();
  EXPECT_EQ(ResolveCheckpointDir(root).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveCheckpointDir(root + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  for (int step : {20, 100, 300}) {
    ASSERT_TRUE(MakeDirs(root + "/" + StepDirName(step)).ok());
  }
  ASSERT_TRUE(WriteFileAtomically(root + "/step-00000020/" + kManifestName, "x").ok());
  ASSERT_TRUE(WriteFileAtomically(root + "/step-00000100/" + kManifestName, "x").ok());
  // step 300 has no manifest (a damaged checkpoint): skipped.
  auto dir = ResolveCheckpointDir(root);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, root + "/step-00000100");
  EXPECT_EQ(*ResolveCheckpointDir(root + "/step-00000020"), root + "/step-00000020");
}

class FakeCheckpointTest : public ::testing::TestWithParam<int> {};

TEST_P(FakeCheckpointTest, ReadWholeTableMatchesWhatWasWritten) {
  const int total_sc = GetParam();
  const std::string dir = TempDir();
  const Manifest written = WriteFakeCheckpoint(dir, 11, total_sc);
  auto m = ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->step(), 7);
  std::vector<float> w, s;
  ASSERT_TRUE(ReadWholeTable(dir, *m, "t0", &w, &s).ok());
  ASSERT_EQ(w.size(), 22u);
  ASSERT_EQ(s.size(), 22u);
  for (int j = 0; j < 11; ++j) {
    EXPECT_EQ(w[2 * j], float(j));
    EXPECT_EQ(w[2 * j + 1], -float(j));
    EXPECT_EQ(s[2 * j], j / 10.0f);
  }
  EXPECT_TRUE(VerifyCheckpoint(dir, *m).ok());
  const absl::Status unknown = ReadWholeTable(dir, *m, "nope", &w, &s);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("t0"));
}

// Id shuffling: the files are in placed-row order; the whole table comes
// back in original row order, and a manifest without the key (or with
// another) does not match the records.
TEST_P(FakeCheckpointTest, ShuffledTableReadsBackInOriginalRowOrder) {
  const int total_sc = GetParam();
  const std::string dir = TempDir();
  WriteFakeCheckpoint(dir, 37, total_sc, uint64_t{12345});
  auto m = ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->tables(0).has_id_shuffle_key());
  std::vector<float> w, s;
  ASSERT_TRUE(ReadWholeTable(dir, *m, "t0", &w, &s).ok());
  ASSERT_EQ(w.size(), 74u);
  for (int j = 0; j < 37; ++j) {
    EXPECT_EQ(w[2 * j], float(j)) << j;
    EXPECT_EQ(w[2 * j + 1], -float(j)) << j;
    EXPECT_EQ(s[2 * j], j / 10.0f) << j;
  }
  EXPECT_TRUE(VerifyCheckpoint(dir, *m).ok());
  Manifest other = *m;
  other.mutable_tables(0)->set_id_shuffle_key(54321);
  const absl::Status wrong = ReadWholeTable(dir, other, "t0", &w, &s);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wrong.message(), HasSubstr("holds row"));
  other.mutable_tables(0)->clear_id_shuffle_key();
  EXPECT_EQ(ReadWholeTable(dir, other, "t0", &w, &s).code(), absl::StatusCode::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(SparseCores, FakeCheckpointTest, ::testing::Values(1, 2, 3, 4, 16));

TEST(CheckpointFormatTest, VerifyRefusesNonFiniteWeightsSlotsAndDenseParameters) {
  const char* kWant[] = {"", "table 't0', row 3 element 1 is nan",
                         "the optimizer slots of table 't0', row 3 element 1 is nan",
                         "the dense parameters, element 1 is nan"};
  for (int poison = 1; poison <= 3; ++poison) {
    const std::string dir = TempDir();
    WriteFakeCheckpoint(dir, 11, 2, std::nullopt, poison);
    auto m = ReadManifest(dir);
    ASSERT_TRUE(m.ok()) << m.status();
    const absl::Status st = VerifyCheckpoint(dir, *m);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << poison << ": " << st;
    EXPECT_THAT(st.message(), HasSubstr("is intact but holds a diverged model"));
    EXPECT_THAT(st.message(), HasSubstr(kWant[poison]));
  }
}

TEST(CheckpointFormatTest, DetectsCorruptionTruncationAndMissingFiles) {
  const std::string dir = TempDir();
  WriteFakeCheckpoint(dir, 11, 3);
  auto m = ReadManifest(dir);
  ASSERT_TRUE(m.ok());
  const std::string file = dir + "/" + TableFileName(0, 1);
  std::string bytes = ReadAll(file);
  // A flipped bit in a weight.
  std::string bad = bytes;
  bad[8 + 3] ^= 0x10;
  ASSERT_TRUE(WriteFileAtomically(file, bad).ok());
  absl::Status st = VerifyCheckpoint(dir, *m);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr(file));
  EXPECT_THAT(st.message(), HasSubstr("checksum"));
  // A wrong row id.
  bad = bytes;
  bad[0] ^= 0x4;
  ASSERT_TRUE(WriteFileAtomically(file, bad).ok());
  st = VerifyCheckpoint(dir, *m);
  EXPECT_THAT(st.message(), HasSubstr("holds row"));
  // Truncated.
  ASSERT_TRUE(WriteFileAtomically(file, bytes.substr(0, bytes.size() - 5)).ok());
  st = VerifyCheckpoint(dir, *m);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("truncated"));
  EXPECT_THAT(st.message(), HasSubstr(file));
  // Missing.
  ASSERT_EQ(unlink(file.c_str()), 0);
  st = VerifyCheckpoint(dir, *m);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("missing"));
  // A damaged manifest.
  const std::string manifest = ReadAll(dir + "/" + kManifestName);
  ASSERT_TRUE(WriteFileAtomically(dir + "/" + kManifestName,
                                  manifest.substr(0, manifest.size() / 2) + "}{")
                  .ok());
  st = ReadManifest(dir).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr(kManifestName));
}

// Rewrites `dir`'s manifest as `m`, with a fresh manifest checksum (so the
// checks behind the checksum are reached).
void RewriteManifest(const std::string& dir, const Manifest& m) {
  ASSERT_TRUE(WriteManifest(dir, m).ok());
}

// Rewrites `dir`'s manifest as `m`, text as is (no new checksum).
void WriteManifestText(const std::string& dir, const Manifest& m) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  ASSERT_TRUE(WriteFileAtomically(dir + "/" + kManifestName, text).ok());
}

TEST(CheckpointFormatTest, ManifestWithWrongFileCountIsCorrupted) {
  const std::string dir = TempDir();
  Manifest m = WriteFakeCheckpoint(dir, 11, 2);
  m.mutable_tables(0)->mutable_files()->RemoveLast();
  RewriteManifest(dir, m);
  const absl::Status st = ReadManifest(dir).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("lists 1 files"));
}

// The manifest checksum covers every field: an edited step (30 -> 20 once
// resumed at the wrong step) or file checksum is refused; so is a format-2
// manifest without the checksum. Format 1 (no checksum) is still read.
TEST(CheckpointFormatTest, ManifestChecksumCoversEveryField) {
  const std::string dir = TempDir();
  const Manifest good = WriteFakeCheckpoint(dir, 11, 2);
  auto read = ReadManifest(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->has_manifest_checksum());
  EXPECT_EQ(read->manifest_checksum(), ManifestChecksum(*read));
  Manifest m = *read;
  m.set_step(6);
  WriteManifestText(dir, m);
  absl::Status st = ReadManifest(dir).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("manifest_checksum"));
  m = *read;
  m.mutable_tables(0)->mutable_files(1)->set_checksum(12345);
  WriteManifestText(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("damaged or edited"));
  m = *read;
  m.set_model_checksum("0000000000000000");
  WriteManifestText(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("damaged or edited"));
  m = *read;
  m.clear_manifest_checksum();
  WriteManifestText(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("manifest_checksum is missing"));
  m.set_format_version(1);
  WriteManifestText(dir, m);
  EXPECT_TRUE(ReadManifest(dir).ok());
  m.set_format_version(kFormatVersion + 1);
  RewriteManifest(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(),
              HasSubstr(absl::StrCat("format_version is ", kFormatVersion + 1)));
}

// Per-row slots (format version 3): the same bytes read as 2 weights then 2
// row slots when the manifest says slots_per_param 0, row_slots 2. A
// manifest of an older version with row slots is corrupted, as are row slots
// past the bound.
TEST(CheckpointFormatTest, RowSlots) {
  const std::string dir = TempDir();
  const Manifest good = WriteFakeCheckpoint(dir, 11, 2);
  Manifest m = good;
  m.mutable_tables(0)->set_slots_per_param(0);
  m.mutable_tables(0)->set_row_slots(2);
  RewriteManifest(dir, m);
  auto read = ReadManifest(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  std::vector<float> w, slots;
  ASSERT_TRUE(ReadWholeTable(dir, *read, "t0", &w, &slots).ok());
  ASSERT_EQ(slots.size(), 22u);
  for (int row = 0; row < 11; ++row) {
    EXPECT_EQ(slots[2 * row], row / 10.0f);
    EXPECT_EQ(slots[2 * row + 1], row / 10.0f);
  }
  m.set_format_version(2);
  RewriteManifest(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("row_slots in a format_version 2"));
  m = good;
  m.mutable_tables(0)->set_row_slots(kMaxRowSlots + 1);
  RewriteManifest(dir, m);
  EXPECT_EQ(ReadManifest(dir).status().code(), absl::StatusCode::kDataLoss);
}

// A manifest in a step-N directory must say step N, and data.next_step must
// be the step: both are checked without the checksum (format 1 too).
TEST(CheckpointFormatTest, ManifestStepMatchesItsDirectory) {
  const std::string root = TempDir();
  const std::string dir = root + "/" + StepDirName(7);
  ASSERT_TRUE(MakeDirs(dir).ok());
  Manifest m = WriteFakeCheckpoint(dir, 11, 2);
  EXPECT_TRUE(ReadManifest(dir).ok());
  const std::string moved = root + "/" + StepDirName(30);
  ASSERT_EQ(rename(dir.c_str(), moved.c_str()), 0);
  absl::Status st = ReadManifest(moved).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("it is in directory step-00000030 but says step 7"));
  m.set_format_version(1);
  m.mutable_data()->set_next_step(8);
  ASSERT_EQ(rename(moved.c_str(), dir.c_str()), 0);
  WriteManifestText(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("data.next_step is 8"));
}

// Verify ends where restore ends: a model checksum that does not match the
// files is refused even when every file matches its own checksum.
TEST(CheckpointFormatTest, VerifyChecksTheModelChecksum) {
  const std::string dir = TempDir();
  Manifest m = WriteFakeCheckpoint(dir, 11, 2);
  auto read = ReadManifest(dir);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(VerifyCheckpoint(dir, *read).ok());
  m.set_model_checksum("0123456789abcdef");
  RewriteManifest(dir, m);
  read = ReadManifest(dir);
  ASSERT_TRUE(read.ok());
  const absl::Status st = VerifyCheckpoint(dir, *read);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("the manifest says 0123456789abcdef"));
}

// Sizes that overflowed int32 / int64 arithmetic (undefined behaviour before
// ReadManifest bounded them).
TEST(CheckpointFormatTest, ManifestWithOverflowingSizesIsCorrupted) {
  const std::string dir = TempDir();
  const Manifest good = WriteFakeCheckpoint(dir, 11, 2);
  struct Case {
    int64_t vocab;
    int dim;
    int spp;
  };
  for (const Case& c : {Case{11, 2, 2147483647}, Case{11, 2147483647, 1}, Case{11, -2, 1},
                        Case{-5, 2, 1}, Case{int64_t{1} << 62, 1 << 20, 16}}) {
    Manifest m = good;
    m.mutable_tables(0)->set_vocab_size(c.vocab);
    m.mutable_tables(0)->set_dim(c.dim);
    m.mutable_tables(0)->set_slots_per_param(c.spp);
    RewriteManifest(dir, m);
    const absl::Status st = ReadManifest(dir).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << c.vocab << " " << c.dim << " " << c.spp;
    EXPECT_THAT(st.message(), HasSubstr("table 't0'"));
  }
  Manifest m = good;
  m.mutable_dense()->set_num_params(int64_t{1} << 62);
  m.mutable_dense()->set_slots_per_param(3);
  RewriteManifest(dir, m);
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("dense file size"));
  m = good;
  m.mutable_dense()->set_slots_per_param(-1);
  m.mutable_dense()->mutable_file()->set_bytes(0);
  RewriteManifest(dir, m);
  EXPECT_EQ(ReadManifest(dir).status().code(), absl::StatusCode::kDataLoss);
}

// A manifest must not make a reader open files outside its directory.
TEST(CheckpointFormatTest, ManifestFileNamesStayInTheDirectory) {
  const std::string dir = TempDir();
  const Manifest good = WriteFakeCheckpoint(dir, 11, 2);
  for (const char* name : {"../table-000-sc-00000.bin", "/etc/passwd", "", ".."}) {
    Manifest m = good;
    m.mutable_tables(0)->mutable_files(0)->set_name(name);
    RewriteManifest(dir, m);
    const absl::Status st = ReadManifest(dir).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << name;
    EXPECT_THAT(st.message(), HasSubstr("not a file name in the checkpoint directory"));
    m = good;
    m.mutable_dense()->mutable_file()->set_name(name);
    RewriteManifest(dir, m);
    EXPECT_EQ(ReadManifest(dir).status().code(), absl::StatusCode::kDataLoss) << name;
  }
}

// A table claiming more rows than its files hold fails on the files (naming
// one) before the rows are allocated: no std::bad_alloc.
TEST(CheckpointFormatTest, HugeTableFailsOnItsFilesNotOnAllocation) {
  const std::string dir = TempDir();
  Manifest m = WriteFakeCheckpoint(dir, 11, 1);
  const int64_t vocab = int64_t{1} << 40;
  m.mutable_tables(0)->set_vocab_size(vocab);
  m.mutable_tables(0)->mutable_files(0)->set_records(vocab);
  m.mutable_tables(0)->mutable_files(0)->set_bytes(vocab * RecordBytes(m.tables(0)));
  RewriteManifest(dir, m);
  auto read = ReadManifest(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  std::vector<float> w, s;
  const absl::Status st = ReadWholeTable(dir, *read, "t0", &w, &s);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr(TableFileName(0, 0)));
  EXPECT_THAT(st.message(), HasSubstr("truncated"));
}

// A step directory whose number does not fit int64 is skipped, not an
// exception that aborts the restore.
TEST(CheckpointFormatTest, ResolveSkipsStepNumbersPastInt64) {
  const std::string root = TempDir();
  ASSERT_TRUE(MakeDirs(root + "/step-99999999999999999999").ok());
  ASSERT_TRUE(
      WriteFileAtomically(root + "/step-99999999999999999999/" + kManifestName, "x").ok());
  EXPECT_EQ(ResolveCheckpointDir(root).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(MakeDirs(root + "/" + StepDirName(5)).ok());
  ASSERT_TRUE(WriteFileAtomically(root + "/" + StepDirName(5) + "/" + kManifestName, "x").ok());
  EXPECT_EQ(*ResolveCheckpointDir(root), root + "/" + StepDirName(5));
}

// A failed write (here: the disk is full) leaves no temporary behind and
// names the file.
TEST(CheckpointFormatTest, FailedWriteRemovesTheTemporary) {
  const std::string dir = TempDir();
  const std::string path = dir + "/f";
  ASSERT_EQ(symlink("/dev/full", (path + ".tmp").c_str()), 0);
  const absl::Status st = WriteFileAtomically(path, "hello");
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr(path + ".tmp"));
  EXPECT_THAT(st.message(), HasSubstr("No space left on device"));
  struct stat info;
  EXPECT_NE(lstat((path + ".tmp").c_str(), &info), 0);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

// BF16 tables: 2-byte values in the records, read back (ReadWholeTable,
// what `lemrt_ckpt export` writes) as the exact fp32 of the stored bf16;
// the model checksum is over those values, so Verify passes.
TEST(CheckpointFormatTest, Bf16RecordsReadBackAsFp32) {
  TableEntry e;
  e.set_dim(16);
  e.set_slots_per_param(1);
  e.set_dtype("bf16");
  EXPECT_EQ(RecordBytes(e), 8 + 2 * 16 + 4 * 16);
  e.set_slot_dtype("bf16");
  EXPECT_EQ(RecordBytes(e), 8 + 2 * 32);
  // Encode / decode: nearest-even rounding, then exact widening.
  const float w[2] = {1.0f / 3.0f, -1e-3f}, sl[2] = {0.1f, 7.0f};
  TableEntry t;
  t.set_dim(2);
  t.set_slots_per_param(1);
  t.set_dtype("bf16");
  t.set_slot_dtype("bf16");
  std::string rec(RecordBytes(t), '\0');
  EncodeRecord(t, w, sl, rec.data());
  float w2[2], s2[2];
  DecodeRecord(t, rec.data(), w2, s2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(w2[i], base::Bf16ToFloat(base::FloatToBf16Nearest(w[i])));
    EXPECT_EQ(s2[i], base::Bf16ToFloat(base::FloatToBf16Nearest(sl[i])));
  }
  EXPECT_NE(w2[0], w[0]);  // 1/3 is not a bf16 value

  const std::string dir = TempDir();
  const Manifest m = WriteFakeCheckpoint(dir, 10, 3, std::nullopt, 0, /*bf16=*/true);
  const Manifest read = *ReadManifest(dir);
  EXPECT_EQ(read.tables(0).dtype(), "bf16");
  std::vector<float> weights, slots;
  ASSERT_TRUE(ReadWholeTable(dir, read, "t0", &weights, &slots).ok());
  ASSERT_EQ(weights.size(), 20u);
  for (int j = 0; j < 10; ++j) {
    EXPECT_EQ(weights[2 * j], static_cast<float>(j));  // small integers are bf16 values
    EXPECT_EQ(slots[2 * j], base::Bf16ToFloat(base::FloatToBf16Nearest(j / 10.0f))) << j;
  }
  EXPECT_TRUE(VerifyCheckpoint(dir, read).ok()) << VerifyCheckpoint(dir, read);
}

// Manifests: dtype needs format 4 and names a known format.
TEST(CheckpointFormatTest, ManifestDtypeChecks) {
  const std::string dir = TempDir();
  Manifest m = WriteFakeCheckpoint(dir, 10, 2, std::nullopt, 0, /*bf16=*/true);
  m.set_format_version(3);
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  EXPECT_THAT(ReadManifest(dir).status().message(),
              HasSubstr("dtype / slot_dtype in a format_version 3"));
  m.set_format_version(kFormatVersion);
  m.mutable_tables(0)->set_slot_dtype("fp8");
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  EXPECT_THAT(ReadManifest(dir).status().message(), HasSubstr("stores values as 'fp8'"));
}

// lemrt_ckpt import (table_import.h), on a fake checkpoint of 10 rows on 3
// SparseCores in root/step-00000007: fp32 or bf16 (GetParam), shuffled.
class ImportTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    root_ = TempDir();
    dir_ = root_ + "/" + StepDirName(7);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    m_ = WriteFakeCheckpoint(dir_, 10, 3, uint64_t{99}, 0, /*bf16=*/GetParam());
  }
  // Every file of the step directory, by name.
  std::vector<std::string> Files() {
    std::vector<std::string> out = {ReadAll(dir_ + "/" + kManifestName),
                                    ReadAll(dir_ + "/" + kDenseFileName)};
    for (const FileEntry& f : m_.tables(0).files()) out.push_back(ReadAll(dir_ + "/" + f.name()));
    return out;
  }
  std::string root_, dir_;
  Manifest m_;
};

TEST_P(ImportTest, ExportThenImportKeepsEveryByte) {
  std::vector<float> rows;
  ASSERT_TRUE(ReadWholeTable(dir_, m_, "t0", &rows, nullptr).ok());
  const std::string npy = root_ + "/t0.npy";
  ASSERT_TRUE(WriteNpy(npy, 10, 2, rows).ok());
  const std::vector<std::string> before = Files();
  const absl::StatusOr<ImportResult> r = ImportTable(root_, "t0", npy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->step_dir, dir_);
  EXPECT_EQ(r->model_checksum, m_.model_checksum());
  EXPECT_EQ(Files(), before);
  EXPECT_EQ(*ListPublishedSteps(root_), std::vector<int64_t>{7});
}

TEST_P(ImportTest, ImportedRowsAreWhatTheCheckpointHolds) {
  std::vector<float> rows(20), old_slots;
  for (int i = 0; i < 20; ++i) rows[i] = 0.3f * i - 1.0f;
  const std::string npy = root_ + "/t0.npy";
  ASSERT_TRUE(WriteNpy(npy, 10, 2, rows).ok());
  std::vector<float> unused;
  ASSERT_TRUE(ReadWholeTable(dir_, m_, "t0", &unused, &old_slots).ok());
  const absl::StatusOr<ImportResult> r = ImportTable(dir_, "t0", npy);
  ASSERT_TRUE(r.ok()) << r.status();
  const Manifest m = *ReadManifest(dir_);
  EXPECT_EQ(m.model_checksum(), r->model_checksum);
  EXPECT_NE(m.model_checksum(), m_.model_checksum());
  EXPECT_EQ(m.step(), 7);
  EXPECT_EQ(m.config_text(), m_.config_text());
  EXPECT_TRUE(VerifyCheckpoint(dir_, m).ok()) << VerifyCheckpoint(dir_, m);
  std::vector<float> weights, slots;
  ASSERT_TRUE(ReadWholeTable(dir_, m, "t0", &weights, &slots).ok());
  for (int i = 0; i < 20; ++i) {
    const float want = GetParam() ? base::Bf16ToFloat(base::FloatToBf16Nearest(rows[i])) : rows[i];
    EXPECT_EQ(weights[i], want) << i;
  }
  EXPECT_EQ(slots, old_slots);  // the optimizer state is kept
  EXPECT_EQ(*ListPublishedSteps(root_), std::vector<int64_t>{7});
  EXPECT_FALSE(PathExists(root_ + "/incomplete-" + StepDirName(7)));
}

// Wrong shape, wrong dtype, a NaN, an unknown table: sentences naming the
// file and what it holds against what the table needs; nothing changes.
TEST_P(ImportTest, ErrorsNameTheFileAndLeaveTheCheckpointAlone) {
  const std::vector<std::string> before = Files();
  const std::string npy = root_ + "/t0.npy";
  auto error = [&](const std::string& table) {
    const absl::Status st = ImportTable(root_, table, npy).status();
    EXPECT_FALSE(st.ok());
    return std::string(st.message());
  };
  ASSERT_TRUE(WriteNpy(npy, 9, 2, std::vector<float>(18, 1.0f)).ok());
  EXPECT_EQ(error("t0"), ".npy file '" + npy +
                             "' has shape (9, 2), table 't0' needs (10, 2) (vocab_size, dim).");
  std::vector<float> rows(20, 0.5f);
  rows[9] = std::nanf("");
  ASSERT_TRUE(WriteNpy(npy, 10, 2, rows).ok());
  EXPECT_EQ(error("t0"), ".npy file '" + npy +
                             "' holds a non-finite value: row 4 column 1 is nan; table rows must "
                             "be finite.");
  rows[9] = -INFINITY;
  ASSERT_TRUE(WriteNpy(npy, 10, 2, rows).ok());
  EXPECT_THAT(error("t0"), HasSubstr("row 4 column 1 is -inf"));
  std::string f8 = NpyHeader(10, 2);
  f8.replace(f8.find("<f4"), 3, "<f8");
  std::ofstream(npy, std::ios::binary) << f8 << std::string(160, '\0');
  EXPECT_THAT(error("t0"), HasSubstr("'" + npy + "' has dtype '<f8', expected '<f4'"));
  EXPECT_EQ(error("nope"), "checkpoint '" + dir_ + "' has no table 'nope'; it has: t0.");
  EXPECT_EQ(Files(), before);
}

// A job holding the directory's lock (a run saving into it) makes the
// import fail before it writes anything.
TEST_P(ImportTest, RefusedWhileAnotherJobHoldsTheLock) {
  std::vector<float> rows;
  ASSERT_TRUE(ReadWholeTable(dir_, m_, "t0", &rows, nullptr).ok());
  const std::string npy = root_ + "/t0.npy";
  ASSERT_TRUE(WriteNpy(npy, 10, 2, rows).ok());
  std::string stale;
  absl::StatusOr<std::unique_ptr<DirLock>> lock = DirLock::Acquire(root_, &stale);
  ASSERT_TRUE(lock.ok()) << lock.status();
  const absl::Status st = ImportTable(root_, "t0", npy).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_FALSE(PathExists(root_ + "/incomplete-" + StepDirName(7)));
  lock->reset();
  EXPECT_TRUE(ImportTable(root_, "t0", npy).ok());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ImportTest, ::testing::Values(false, true));

}  // namespace
}  // namespace lemrt::checkpoint
