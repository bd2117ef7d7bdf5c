#include "runtime/checkpoint/checkpoint_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/bf16.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "runtime/observability/model_checksum.h"

namespace lemrt::checkpoint {
namespace {

absl::Status ReadErrno(const std::string& what, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat("checkpoint: cannot ", what, " '", path, "'"));
}


// Values [0, n) at `p` stored with `bytes` (4 or 2) bytes each, to fp32.
void DecodeValues(const char* p, int64_t n, int bytes, float* out) {
  if (bytes == 4) {
    std::memcpy(out, p, 4 * n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    out[i] = base::Bf16ToFloat(b);
  }
}

void EncodeValues(const float* in, int64_t n, int bytes, char* p) {
  if (bytes == 4) {
    std::memcpy(p, in, 4 * n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = base::FloatToBf16Nearest(in[i]);
    std::memcpy(p + 2 * i, &b, 2);
  }
}

// Checks one mapped table file's records: row ids (record k holds the
// original row of placed row first_row + k row_stride) and checksum, copying
// rows out (as fp32) to their original rows.
absl::Status CheckTableFile(const std::string& path, std::span<const char> bytes,
                            const FileEntry& file, const base::IdPermutation& permutation,
                            int64_t first_row, int64_t row_stride, const TableEntry& t,
                            float* weights, float* slots) {
  const int dim = t.dim();
  const int64_t slot_floats = SlotFloatsPerRecord(t);
  const int64_t rb = RecordBytes(t);
  const char* p = bytes.data();
  uint64_t sum = 0;
  for (int64_t k = 0; k < file.records(); ++k, p += rb) {
    int64_t row;
    std::memcpy(&row, p, 8);
    const int64_t want = permutation.Inverse(first_row + k * row_stride);
    if (row != want) {
      return absl::DataLossError(absl::StrFormat(
          "checkpoint file '%s' is corrupted: record %d holds row %d, expected row %d.", path, k,
          row, want));
    }
    sum += RecordHash(std::span<const char>(p, rb));
    DecodeRecord(t, p, weights + row * dim,
                 slots != nullptr && slot_floats > 0 ? slots + row * slot_floats : nullptr);
  }
  return CheckChecksum(path, sum, file.checksum());
}

// "<what>, row R element E is nan" for the first non-finite float of
// `values` (rows of `width` floats; 0: a flat array, "element E"), or "".
std::string DescribeNonFinite(std::span<const float> values, int64_t width,
                              const std::string& what) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    const int64_t k = static_cast<int64_t>(i);
    return width > 0 ? absl::StrFormat("%s, row %d element %d is %f", what, k / width, k % width,
                                       values[i])
                     : absl::StrFormat("%s, element %d is %f", what, k, values[i]);
  }
  return "";
}

}  // namespace

void DecodeRecord(const TableEntry& t, const char* record, float* weights, float* slots) {
  const int64_t dim = t.dim();
  DecodeValues(record + 8, dim, WeightBytes(t), weights);
  if (slots != nullptr) {
    DecodeValues(record + 8 + WeightBytes(t) * dim, SlotFloatsPerRecord(t), SlotBytes(t), slots);
  }
}

void EncodeRecord(const TableEntry& t, const float* weights, const float* slots, char* record) {
  const int64_t dim = t.dim();
  EncodeValues(weights, dim, WeightBytes(t), record + 8);
  const int64_t slot_floats = SlotFloatsPerRecord(t);
  if (slot_floats > 0) {
    EncodeValues(slots, slot_floats, SlotBytes(t), record + 8 + WeightBytes(t) * dim);
  }
}

std::string Join(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name);
}

absl::Status CheckChecksum(const std::string& path, uint64_t sum, uint64_t expected) {
  if (sum == expected) return absl::OkStatus();
  return absl::DataLossError(absl::StrFormat(
      "checkpoint file '%s' is corrupted: its checksum is %016x, the manifest says %016x.", path,
      sum, expected));
}

absl::StatusOr<MappedFile> OpenVerified(const std::string& dir, const FileEntry& f) {
  const std::string path = Join(dir, f.name());
  LEMRT_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path, f.bytes()));
  LEMRT_RETURN_IF_ERROR(CheckChecksum(path, RecordHash(mapped.bytes()), f.checksum()));
  return mapped;
}

std::string StepDirName(int64_t step) { return absl::StrFormat("step-%08d", step); }

std::string TableFileName(int table_index, int global_sc) {
  return absl::StrFormat("table-%03d-sc-%05d.bin", table_index, global_sc);
}

uint64_t RecordHash(std::span<const char> bytes) {
  uint64_t h = base::Mix64(bytes.size());
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = base::Mix64(h ^ word);
  }
  if (i < bytes.size()) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, bytes.size() - i);
    h = base::Mix64(h ^ word ^ 0xA5);
  }
  return h;
}

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path, int64_t expected_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint file '", path, "' is missing."));
    }
    return ReadErrno("open", path);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const absl::Status s = ReadErrno("stat", path);
    close(fd);
    return s;
  }
  if (st.st_size != expected_bytes) {
    close(fd);
    return absl::DataLossError(absl::StrFormat(
        "checkpoint file '%s' is %s: it has %d bytes, the manifest says %d.", path,
        st.st_size < expected_bytes ? "truncated" : "longer than expected", st.st_size,
        expected_bytes));
  }
  if (expected_bytes == 0) {
    close(fd);
    return MappedFile(nullptr, 0);
  }
  void* data = mmap(nullptr, expected_bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) return ReadErrno("mmap", path);
  return MappedFile(static_cast<const char*>(data), expected_bytes);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

absl::Status ReadWholeTable(const std::string& dir, const Manifest& manifest,
                            const std::string& table_name, std::vector<float>* weights,
                            std::vector<float>* slots) {
  std::vector<std::string> names;
  for (const TableEntry& t : manifest.tables()) {
    names.push_back(t.name());
    if (t.name() != table_name) continue;
    const int64_t slot_floats = SlotFloatsPerRecord(t);
    // Every file is mapped (and its size checked) before the rows are
    // allocated, so a manifest claiming a huge table fails on its files.
    std::vector<MappedFile> files;
    files.reserve(t.files_size());
    for (int g = 0; g < t.files_size(); ++g) {
      LEMRT_ASSIGN_OR_RETURN(MappedFile f, MappedFile::Open(Join(dir, t.files(g).name()),
                                                            t.files(g).bytes()));
      files.push_back(std::move(f));
    }
    weights->assign(t.vocab_size() * t.dim(), 0.0f);
    if (slots != nullptr) slots->assign(t.vocab_size() * slot_floats, 0.0f);
    for (int g = 0; g < t.files_size(); ++g) {
      LEMRT_RETURN_IF_ERROR(CheckTableFile(Join(dir, t.files(g).name()), files[g].bytes(),
                                           t.files(g), SavedPermutation(t), g,
                                           manifest.total_sparse_cores(), t, weights->data(),
                                           slots == nullptr ? nullptr : slots->data()));
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrFormat("checkpoint '%s' has no table '%s'; it has: %s.", dir,
                                             table_name, absl::StrJoin(names, ", ")));
}

absl::Status VerifyCheckpoint(const std::string& dir, const Manifest& manifest) {
  std::vector<float> weights, slots;
  uint64_t row_hash_sum = 0;
  std::string non_finite;  // the first non-finite float found, reported once intact
  for (int t = 0; t < manifest.tables_size(); ++t) {
    const TableEntry& e = manifest.tables(t);
    LEMRT_RETURN_IF_ERROR(ReadWholeTable(dir, manifest, e.name(), &weights, &slots));
    for (int64_t row = 0; row < e.vocab_size(); ++row) {
      row_hash_sum += runtime::ModelRowHash(t, row, weights.data() + row * e.dim(), e.dim());
    }
    if (non_finite.empty()) {
      non_finite = DescribeNonFinite(weights, e.dim(), absl::StrCat("table '", e.name(), "'"));
    }
    if (non_finite.empty()) {
      non_finite = DescribeNonFinite(slots, SlotFloatsPerRecord(e),
                                     absl::StrCat("the optimizer slots of table '", e.name(), "'"));
    }
  }
  LEMRT_ASSIGN_OR_RETURN(MappedFile dense, OpenVerified(dir, manifest.dense().file()));
  std::vector<float> params(manifest.dense().num_params());
  if (!params.empty()) std::memcpy(params.data(), dense.bytes().data(), 4 * params.size());
  const std::string checksum = runtime::ModelChecksum(row_hash_sum, params);
  if (checksum != manifest.model_checksum()) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint '%s': the saved model's checksum is %s, the manifest says %s.", dir, checksum,
        manifest.model_checksum()));
  }
  if (non_finite.empty()) non_finite = DescribeNonFinite(params, 0, "the dense parameters");
  if (non_finite.empty()) {
    std::vector<float> dense_slots((dense.bytes().size() - 4 * params.size()) / 4);
    if (!dense_slots.empty()) {
      std::memcpy(dense_slots.data(), dense.bytes().data() + 4 * params.size(),
                  4 * dense_slots.size());
    }
    non_finite = DescribeNonFinite(dense_slots, 0, "the dense optimizer slots");
  }
  if (!non_finite.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "checkpoint '%s' is intact but holds a diverged model: %s; it was saved after training "
        "went non-finite (lower the learning rates and train again from an earlier checkpoint).",
        dir, non_finite));
  }
  return absl::OkStatus();
}

}  // namespace lemrt::checkpoint
