#include "runtime/checkpoint/checkpoint_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "google/protobuf/text_format.h"

namespace lemrt::checkpoint {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat("checkpoint: cannot ", what, " '", path, "'"));
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Errno("open directory", dir);
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return Errno("fsync directory", dir);
  return absl::OkStatus();
}

// A name of a file directly inside the checkpoint directory: a manifest
// must not make a reader open "../elsewhere" or "/etc/passwd".
bool PlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Checks one mapped table file's records: row ids and checksum, copying
// rows out.
absl::Status CheckTableFile(const std::string& path, std::span<const char> bytes,
                            const FileEntry& file, int64_t first_row, int64_t row_stride, int dim,
                            int slot_floats, float* weights, float* slots) {
  const int64_t rb = 8 + 4 * int64_t{dim + slot_floats};
  const char* p = bytes.data();
  uint64_t sum = 0;
  for (int64_t k = 0; k < file.records(); ++k, p += rb) {
    int64_t row;
    std::memcpy(&row, p, 8);
    const int64_t want = first_row + k * row_stride;
    if (row != want) {
      return absl::DataLossError(absl::StrFormat(
          "checkpoint file '%s' is corrupted: record %d holds row %d, expected row %d.", path, k,
          row, want));
    }
    sum += RecordHash(std::span<const char>(p, rb));
    std::memcpy(weights + row * dim, p + 8, 4 * int64_t{dim});
    if (slots != nullptr && slot_floats > 0) {
      std::memcpy(slots + row * slot_floats, p + 8 + 4 * int64_t{dim}, 4 * int64_t{slot_floats});
    }
  }
  return CheckChecksum(path, sum, file.checksum());
}

}  // namespace

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

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Errno("create", tmp);
  // On failure the partial temporary goes, so a full disk is not left fuller.
  auto fail = [&](const char* what) {
    const absl::Status st = Errno(what, tmp);
    close(fd);
    unlink(tmp.c_str());
    return st;
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("fsync");
  if (close(fd) != 0) {
    const absl::Status st = Errno("close", tmp);
    unlink(tmp.c_str());
    return st;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status st = Errno("rename to its final name", tmp);
    unlink(tmp.c_str());
    return st;
  }
  return SyncDir(DirOf(path));
}

absl::Status MakeDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("checkpoint: the directory name is empty.");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos < path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return Errno("create directory", prefix);
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint: '", path, "' exists and is not a directory."));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir) {
  if (IsFile(Join(dir, kManifestName))) return dir;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint directory '", dir, "' does not exist or cannot be read."));
  }
  int64_t best = -1;
  std::string best_name;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("step-", 0) != 0 || name.size() <= 5) continue;
    const std::string digits = name.substr(5);
    // At most 18 digits: std::stoll would throw past int64 (a stray
    // "step-99999999999999999999" must not abort a restore).
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const int64_t step = std::stoll(digits);
    if (step > best && IsFile(Join(Join(dir, name), kManifestName))) {
      best = step;
      best_name = name;
    }
  }
  closedir(d);
  if (best < 0) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in '", dir, "': it has no ",
                                            kManifestName, " and no step-N directory with one."));
  }
  return Join(dir, best_name);
}

absl::StatusOr<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = Join(dir, kManifestName);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("checkpoint manifest '", path, "' is missing."));
  std::stringstream text;
  text << in.rdbuf();
  Manifest m;
  if (!google::protobuf::TextFormat::ParseFromString(text.str(), &m)) {
    return absl::DataLossError(
        absl::StrCat("checkpoint manifest '", path, "' is corrupted: it does not parse."));
  }
  auto bad = [&](std::string what) {
    return absl::DataLossError(absl::StrCat("checkpoint manifest '", path, "' is corrupted: ",
                                            what, "."));
  };
  if (m.format_version() != kFormatVersion) {
    return bad(absl::StrFormat("format_version is %d, this build reads %d", m.format_version(),
                               kFormatVersion));
  }
  if (m.total_sparse_cores() <= 0 || !m.has_dense() || !m.has_step()) {
    return bad("total_sparse_cores, dense or step is missing");
  }
  for (const TableEntry& t : m.tables()) {
    // Bounded first, so the sizes below cannot overflow (a signed overflow
    // in (1 + slots_per_param) and records x record bytes before).
    if (t.vocab_size() < 0 || t.dim() <= 0 || t.dim() > kMaxDim || t.slots_per_param() < 0 ||
        t.slots_per_param() > kMaxSlotsPerParam) {
      return bad(absl::StrFormat("table '%s' has vocab_size %d, dim %d, slots_per_param %d "
                                 "(limits: vocab_size >= 0, dim 1..%d, slots_per_param 0..%d)",
                                 t.name(), t.vocab_size(), t.dim(), t.slots_per_param(), kMaxDim,
                                 kMaxSlotsPerParam));
    }
    if (t.files_size() != m.total_sparse_cores()) {
      return bad(absl::StrFormat("table '%s' lists %d files, expected one per SparseCore (%d)",
                                 t.name(), t.files_size(), m.total_sparse_cores()));
    }
    const int64_t rb = RecordBytes(t.dim(), t.slots_per_param());
    for (int g = 0; g < t.files_size(); ++g) {
      const FileEntry& f = t.files(g);
      if (!PlainFileName(f.name())) {
        return bad(absl::StrFormat("file %d of table '%s' is named '%s', not a file name in the "
                                   "checkpoint directory",
                                   g, t.name(), f.name()));
      }
      const int64_t records = RecordsInFile(t.vocab_size(), g, m.total_sparse_cores());
      if (records > std::numeric_limits<int64_t>::max() / rb) {
        return bad(absl::StrFormat("table '%s' would need more than 2^63 bytes", t.name()));
      }
      if (f.records() != records || f.bytes() != records * rb) {
        return bad(absl::StrFormat("file '%s' of table '%s' has %d records / %d bytes, expected "
                                   "%d / %d",
                                   f.name(), t.name(), f.records(), f.bytes(), records,
                                   records * rb));
      }
    }
  }
  const DenseEntry& d = m.dense();
  if (!PlainFileName(d.file().name())) {
    return bad(absl::StrFormat("the dense file is named '%s', not a file name in the checkpoint "
                               "directory",
                               d.file().name()));
  }
  if (d.num_params() < 0 || d.slots_per_param() < 0 || d.slots_per_param() > kMaxSlotsPerParam ||
      d.num_params() > std::numeric_limits<int64_t>::max() / 4 / (1 + d.slots_per_param()) ||
      d.file().bytes() != 4 * d.num_params() * (1 + d.slots_per_param())) {
    return bad(absl::StrFormat("dense file size %d does not match %d params with %d slots each",
                               d.file().bytes(), d.num_params(), d.slots_per_param()));
  }
  return m;
}

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path, int64_t expected_bytes) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint file '", path, "' is missing."));
    }
    return Errno("open", path);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const absl::Status s = Errno("stat", path);
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
  if (data == MAP_FAILED) return Errno("mmap", path);
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
    const int slot_floats = t.slots_per_param() * t.dim();
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
                                           t.files(g), g, manifest.total_sparse_cores(), t.dim(),
                                           slot_floats, weights->data(),
                                           slots == nullptr ? nullptr : slots->data()));
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrFormat("checkpoint '%s' has no table '%s'; it has: %s.", dir,
                                             table_name, absl::StrJoin(names, ", ")));
}

absl::Status VerifyCheckpoint(const std::string& dir, const Manifest& manifest) {
  std::vector<float> weights, slots;
  for (const TableEntry& t : manifest.tables()) {
    LEMRT_RETURN_IF_ERROR(ReadWholeTable(dir, manifest, t.name(), &weights, &slots));
  }
  return OpenVerified(dir, manifest.dense().file()).status();
}

}  // namespace lemrt::checkpoint
