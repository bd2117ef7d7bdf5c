#include "runtime/checkpoint/table_import.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/dir_lock.h"
#include "runtime/checkpoint/durable_files.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/npy.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/observability/model_checksum.h"

namespace lemrt::checkpoint {
namespace {

// The rows of `npy_path` for table `t`, checked: shape [vocab_size, dim]
// and every value finite.
absl::StatusOr<std::vector<float>> ReadRows(const std::string& npy_path, const TableEntry& t) {
  LEMRT_ASSIGN_OR_RETURN(NpyArray a, ReadNpy(npy_path));
  if (a.rows != t.vocab_size() || a.cols != t.dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        ".npy file '%s' has shape (%d, %d), table '%s' needs (%d, %d) (vocab_size, dim).", npy_path,
        a.rows, a.cols, t.name(), t.vocab_size(), t.dim()));
  }
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (std::isfinite(a.values[i])) continue;
    return absl::InvalidArgumentError(absl::StrFormat(
        ".npy file '%s' holds a non-finite value: row %d column %d is %f; table rows must be "
        "finite.",
        npy_path, i / a.cols, i % a.cols, a.values[i]));
  }
  return std::move(a.values);
}

// Writes table `t`'s files into `work`: its records as in `dir`, with the
// weights replaced by `rows` when not null. Sets each file's new checksum
// in `out` and adds every row's ModelRowHash (of the stored values) to
// `row_hash_sum`.
absl::Status CopyTable(const std::string& dir, const std::string& work, int table_index,
                       const TableEntry& t, const std::vector<float>* rows, TableEntry* out,
                       uint64_t* row_hash_sum) {
  const int64_t rb = RecordBytes(t);
  std::vector<float> weights(t.dim());
  std::vector<float> slots(SlotFloatsPerRecord(t));
  for (int g = 0; g < t.files_size(); ++g) {
    const std::string path = Join(dir, t.files(g).name());
    LEMRT_ASSIGN_OR_RETURN(MappedFile in, MappedFile::Open(path, t.files(g).bytes()));
    std::string bytes(in.bytes().data(), in.bytes().size());
    uint64_t old_sum = 0, sum = 0;
    for (int64_t k = 0; k < t.files(g).records(); ++k) {
      char* record = bytes.data() + k * rb;
      old_sum += RecordHash(std::span<const char>(record, rb));
      int64_t row;
      std::memcpy(&row, record, 8);
      if (row < 0 || row >= t.vocab_size()) {
        return absl::DataLossError(absl::StrFormat(
            "checkpoint file '%s' is corrupted: record %d holds row %d.", path, k, row));
      }
      if (rows != nullptr) {
        DecodeRecord(t, record, weights.data(), slots.data());
        EncodeRecord(t, rows->data() + row * t.dim(), slots.data(), record);
      }
      DecodeRecord(t, record, weights.data(), nullptr);
      sum += RecordHash(std::span<const char>(record, rb));
      *row_hash_sum += runtime::ModelRowHash(table_index, row, weights.data(), t.dim());
    }
    LEMRT_RETURN_IF_ERROR(CheckChecksum(path, old_sum, t.files(g).checksum()));
    LEMRT_RETURN_IF_ERROR(WriteFileDurably(Join(work, t.files(g).name()), bytes));
    out->mutable_files(g)->set_checksum(sum);
  }
  return absl::OkStatus();
}

// Writes the new checkpoint of step m.step() into `work`, manifest last.
absl::StatusOr<std::string> WriteImported(const std::string& dir, const std::string& work,
                                          const Manifest& m, int target,
                                          const std::vector<float>& rows) {
  Manifest out = m;
  uint64_t row_hash_sum = 0;
  for (int t = 0; t < m.tables_size(); ++t) {
    LEMRT_RETURN_IF_ERROR(CopyTable(dir, work, t, m.tables(t), t == target ? &rows : nullptr,
                                    out.mutable_tables(t), &row_hash_sum));
  }
  LEMRT_ASSIGN_OR_RETURN(MappedFile dense, OpenVerified(dir, m.dense().file()));
  std::vector<float> params(m.dense().num_params());
  if (!params.empty()) std::memcpy(params.data(), dense.bytes().data(), 4 * params.size());
  LEMRT_RETURN_IF_ERROR(
      WriteFileDurably(Join(work, m.dense().file().name()),
                       std::string_view(dense.bytes().data(), dense.bytes().size())));
  out.set_model_checksum(runtime::ModelChecksum(row_hash_sum, params));
  LEMRT_RETURN_IF_ERROR(WriteManifest(work, out));
  return out.model_checksum();
}

std::string StripSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

absl::StatusOr<ImportResult> ImportTable(const std::string& dir, const std::string& table_name,
                                         const std::string& npy_path) {
  LEMRT_ASSIGN_OR_RETURN(std::string step_dir, ResolveCheckpointDir(dir));
  step_dir = StripSlashes(step_dir);
  LEMRT_ASSIGN_OR_RETURN(const Manifest m, ReadManifest(step_dir));
  const std::string root = DirOf(step_dir);
  const std::string name = step_dir.substr(step_dir.rfind('/') + 1);
  if (ParseStepDirName(name) != std::optional<int64_t>(m.step())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "import writes a checkpoint as DIR/%s, but '%s' is not such a step directory.",
        StepDirName(m.step()), step_dir));
  }
  int target = -1;
  std::vector<std::string> names;
  for (int t = 0; t < m.tables_size(); ++t) {
    names.push_back(m.tables(t).name());
    if (m.tables(t).name() == table_name) target = t;
  }
  if (target < 0) {
    return absl::NotFoundError(absl::StrFormat("checkpoint '%s' has no table '%s'; it has: %s.",
                                               step_dir, table_name, absl::StrJoin(names, ", ")));
  }
  LEMRT_ASSIGN_OR_RETURN(const std::vector<float> rows, ReadRows(npy_path, m.tables(target)));
  std::string stale_holder;
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<DirLock> lock, DirLock::Acquire(root, &stale_holder));
  LEMRT_RETURN_IF_ERROR(VerifyCheckpoint(step_dir, m));
  LEMRT_ASSIGN_OR_RETURN(const std::string work, BeginStepDir(root, m.step()));
  absl::StatusOr<std::string> checksum = WriteImported(step_dir, work, m, target, rows);
  absl::Status st = checksum.status();
  if (st.ok()) st = PublishStepDir(root, m.step());
  if (!st.ok()) {
    RemoveTree(work).IgnoreError();
    return st;
  }
  return ImportResult{step_dir, *checksum};
}

}  // namespace lemrt::checkpoint
