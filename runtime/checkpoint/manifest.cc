#include "runtime/checkpoint/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/durable_files.h"
#include "runtime/checkpoint/step_dirs.h"

namespace lemrt::checkpoint {
namespace {

// A name of a file directly inside the checkpoint directory: a manifest
// must not make a reader open "../elsewhere" or "/etc/passwd".
bool PlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Reads all of `path` when it is a regular file of at most `max_bytes`.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint manifest '", path, "' is missing."));
    }
    return absl::ErrnoToStatus(errno, absl::StrCat("checkpoint: cannot open '", path, "'"));
  }
  struct stat st;
  std::string text;
  absl::Status status;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > max_bytes) {
    status = absl::DataLossError(absl::StrFormat(
        "checkpoint manifest '%s' is corrupted: it is not a regular file of at most %d bytes.",
        path, max_bytes));
  } else {
    text.resize(st.st_size);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status = absl::DataLossError(
            absl::StrCat("checkpoint manifest '", path, "' could not be read whole."));
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

// The manifest's own checks beyond parsing; `bad` makes the DataLoss error.
template <typename Bad>
absl::Status CheckManifestFields(const Manifest& m, const std::string& dir, const Bad& bad) {
  if (m.format_version() < 1 || m.format_version() > kFormatVersion) {
    return bad(absl::StrFormat("format_version is %d, this build reads 1 to %d",
                               m.format_version(), kFormatVersion));
  }
  if (m.has_manifest_checksum()) {
    const uint64_t sum = ManifestChecksum(m);
    if (sum != m.manifest_checksum()) {
      return bad(absl::StrFormat("its manifest_checksum is %016x but its fields hash to %016x "
                                 "(the manifest was damaged or edited)",
                                 m.manifest_checksum(), sum));
    }
  } else if (m.format_version() >= 2) {
    return bad("manifest_checksum is missing");
  }
  if (m.total_sparse_cores() <= 0 || !m.has_dense() || !m.has_step()) {
    return bad("total_sparse_cores, dense or step is missing");
  }
  if (m.step() < 0) return bad(absl::StrFormat("step is %d", m.step()));
  if (const std::optional<int64_t> dir_step = ParseStepDirName(BaseName(dir));
      dir_step.has_value() && *dir_step != m.step()) {
    return bad(absl::StrFormat("it is in directory %s but says step %d", BaseName(dir), m.step()));
  }
  if (m.has_data() && m.data().has_next_step() && m.data().next_step() != m.step()) {
    return bad(absl::StrFormat("step is %d but data.next_step is %d", m.step(),
                               m.data().next_step()));
  }
  if (m.world_size() > 0 && m.sparse_cores_per_chip() > 0 &&
      int64_t{m.world_size()} * m.sparse_cores_per_chip() != m.total_sparse_cores()) {
    return bad(absl::StrFormat("total_sparse_cores is %d, not world_size %d x "
                               "sparse_cores_per_chip %d",
                               m.total_sparse_cores(), m.world_size(), m.sparse_cores_per_chip()));
  }
  for (const TableEntry& t : m.tables()) {
    // Bounded first, so the sizes below cannot overflow.
    if (t.vocab_size() < 0 || t.dim() <= 0 || t.dim() > kMaxDim || t.slots_per_param() < 0 ||
        t.slots_per_param() > kMaxSlotsPerParam || t.row_slots() < 0 ||
        t.row_slots() > kMaxRowSlots) {
      return bad(absl::StrFormat("table '%s' has vocab_size %d, dim %d, slots_per_param %d, "
                                 "row_slots %d (limits: vocab_size >= 0, dim 1..%d, "
                                 "slots_per_param 0..%d, row_slots 0..%d)",
                                 t.name(), t.vocab_size(), t.dim(), t.slots_per_param(),
                                 t.row_slots(), kMaxDim, kMaxSlotsPerParam, kMaxRowSlots));
    }
    if (m.format_version() < 3 && t.has_row_slots()) {
      return bad(absl::StrFormat("table '%s' has row_slots in a format_version %d manifest",
                                 t.name(), m.format_version()));
    }
    for (const std::string* dtype : {&t.dtype(), &t.slot_dtype()}) {
      if (!dtype->empty() && *dtype != "fp32" && *dtype != "bf16") {
        return bad(absl::StrFormat("table '%s' stores values as '%s' (this build reads fp32 and "
                                   "bf16)",
                                   t.name(), *dtype));
      }
    }
    if (m.format_version() < 4 && (t.has_dtype() || t.has_slot_dtype())) {
      return bad(absl::StrFormat("table '%s' has dtype / slot_dtype in a format_version %d "
                                 "manifest",
                                 t.name(), m.format_version()));
    }
    if (t.files_size() != m.total_sparse_cores()) {
      return bad(absl::StrFormat("table '%s' lists %d files, expected one per SparseCore (%d)",
                                 t.name(), t.files_size(), m.total_sparse_cores()));
    }
    const int64_t rb = RecordBytes(t);
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
  return absl::OkStatus();
}

}  // namespace

uint64_t ManifestChecksum(const Manifest& m) {
  Manifest copy = m;
  copy.clear_manifest_checksum();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&out);
  }
  return RecordHash(bytes);
}

absl::Status WriteManifest(const std::string& dir, Manifest m) {
  m.set_manifest_checksum(ManifestChecksum(m));
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  return WriteFileDurably(Join(dir, kManifestName), text);
}

absl::StatusOr<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = Join(dir, kManifestName);
  LEMRT_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, kMaxManifestBytes));
  Manifest m;
  if (!google::protobuf::TextFormat::ParseFromString(text, &m)) {
    return absl::DataLossError(
        absl::StrCat("checkpoint manifest '", path, "' is corrupted: it does not parse."));
  }
  auto bad = [&](std::string what) {
    return absl::DataLossError(absl::StrCat("checkpoint manifest '", path, "' is corrupted: ",
                                            what, "."));
  };
  LEMRT_RETURN_IF_ERROR(CheckManifestFields(m, dir, bad));
  return m;
}

}  // namespace lemrt::checkpoint
