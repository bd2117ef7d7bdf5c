// RestoreCheckpoint (checkpoint.h): loading, re-sharding and the fall-back
// past damaged checkpoints.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "proto/config_loader.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/config_match.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/observability/model_stats.h"

namespace lemrt::checkpoint {
namespace {

using runtime::AgreeOnStatus;
using runtime::Communicator;

// Copies the rows this rank owns of table `t` out of the mapped files,
// adding each record's hash to sums[t * N_old + file].
absl::Status RestoreTable(const std::string& dir, const Manifest& m, int t,
                          runtime::SparseCoreStage& sparse, std::vector<uint64_t>* sums) {
  const TableEntry& e = m.tables(t);
  const int old_sc = m.total_sparse_cores();
  std::vector<MappedFile> files;
  files.reserve(old_sc);
  for (int g = 0; g < old_sc; ++g) {
    LEMRT_ASSIGN_OR_RETURN(MappedFile f,
                           MappedFile::Open(Join(dir, e.files(g).name()), e.files(g).bytes()));
    files.push_back(std::move(f));
  }
  const int64_t rb = RecordBytes(e);
  // Records decode to fp32 and the shard stores them in its own format
  // (TableConfig.dtype / slot_dtype: fp32 -> bf16 rounds to nearest-even).
  std::vector<float> weights(e.dim()), slots(SlotFloatsPerRecord(e));
  // Layout-free: each shard row's original row, placed as the saving run
  // placed it (id shuffling on either side, or neither).
  const base::IdPermutation saved = SavedPermutation(e);
  for (const auto& sc : sparse.sparse_cores()) {
    device::TableShard& shard = sc->mutable_shard(t);
    for (int64_t r = 0; r < shard.local_rows(); ++r) {
      const int64_t row = shard.OriginalRow(r);
      const int64_t saved_row = saved.Forward(row);
      const int g = static_cast<int>(saved_row % old_sc);
      const int64_t k = saved_row / old_sc;
      const char* p = files[g].bytes().data() + k * rb;
      int64_t stored;
      std::memcpy(&stored, p, 8);
      if (stored != row) {
        return absl::DataLossError(absl::StrFormat(
            "checkpoint file '%s' is corrupted: record %d holds row %d, expected row %d.",
            Join(dir, e.files(g).name()), k, stored, row));
      }
      (*sums)[int64_t{t} * old_sc + g] += RecordHash(std::span<const char>(p, rb));
      DecodeRecord(e, p, weights.data(), slots.data());
      shard.WriteRows(r, 1, weights.data());
      shard.WriteSlots(r, 1, slots.data());
    }
  }
  return absl::OkStatus();
}

// Whether restoring `m` into `config` rounds some table's fp32 rows to bf16.
bool NarrowsRows(const Manifest& m, const config::RunConfig& config) {
  for (int t = 0; t < m.tables_size() && t < config.tables_size(); ++t) {
    if (WeightBytes(m.tables(t)) == 4 && config::IsBf16(config.tables(t).dtype())) return true;
  }
  return false;
}

absl::Status RestoreDense(const std::string& dir, const Manifest& m,
                          runtime::TensorCoreStage& dense) {
  LEMRT_ASSIGN_OR_RETURN(MappedFile mapped, OpenVerified(dir, m.dense().file()));
  auto params = dense.mutable_params();
  auto slots = dense.mutable_optimizer_slots();
  std::memcpy(params.data(), mapped.bytes().data(), 4 * params.size());
  if (!slots.empty()) {
    std::memcpy(slots.data(), mapped.bytes().data() + 4 * params.size(), 4 * slots.size());
  }
  const std::vector<int64_t> exps(m.dense().gradient_exponents().begin(),
                                  m.dense().gradient_exponents().end());
  const absl::Status st = dense.set_predicted_exponents(exps);
  if (!st.ok()) return absl::DataLossError(absl::StrCat("checkpoint '", dir, "': ", st.message()));
  return absl::OkStatus();
}

// Collective: restores checkpoint directory `dir` (one candidate).
absl::Status RestoreOne(const std::string& dir, const config::RunConfig& config,
                        Communicator& comm, runtime::SparseCoreStage& sparse,
                        runtime::TensorCoreStage& dense, RestoreResult* result) {
  absl::Status st;
  {
    auto manifest = ReadManifest(dir);
    st = manifest.status();
    if (st.ok()) result->manifest = *std::move(manifest);
    if (st.ok()) {
      st = CheckManifestMatchesConfig(result->manifest, dir, config, dense.model().num_params());
    }
    if (st.ok()) st = CheckResumeConfig(result->manifest, dir, config);
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  const Manifest& m = result->manifest;
  std::vector<uint64_t> sums(int64_t{m.tables_size()} * m.total_sparse_cores(), 0);
  for (int t = 0; t < m.tables_size() && st.ok(); ++t) {
    st = RestoreTable(dir, m, t, sparse, &sums);
  }
  if (st.ok()) st = RestoreDense(dir, m, dense);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  // Each file's records were read by the ranks owning their rows; together
  // they have read every record once.
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<uint64_t>(sums)));
  for (int t = 0; t < m.tables_size(); ++t) {
    for (int g = 0; g < m.total_sparse_cores(); ++g) {
      const FileEntry& f = m.tables(t).files(g);
      LEMRT_RETURN_IF_ERROR(CheckChecksum(Join(dir, f.name()),
                                          sums[int64_t{t} * m.total_sparse_cores() + g],
                                          f.checksum()));
    }
  }
  for (const auto& sc : sparse.sparse_cores()) sc->set_updates(m.sparse_updates());
  dense.set_updates(m.dense_updates());
  LEMRT_ASSIGN_OR_RETURN(runtime::ModelStats stats,
                         runtime::ComputeModelStats(comm, sparse, dense.model().params()));
  // Rows narrowed from fp32 to bf16 on restore are a different model: the
  // saved checksum no longer applies (the files' checksums were verified).
  if (stats.checksum != m.model_checksum() && !NarrowsRows(m, config)) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint '%s': the restored model's checksum is %s, the manifest says %s.", dir,
        stats.checksum, m.model_checksum()));
  }
  result->dir = dir;
  result->config_changes = ConfigChangesSince(m, config);
  return absl::OkStatus();
}

// Collective: rank 0's list of the checkpoints `dir` may mean, on every rank
// (a shared file system may show the ranks different listings mid-change).
absl::StatusOr<std::vector<std::string>> AgreedCandidates(const std::string& dir,
                                                          Communicator& comm) {
  std::string joined;
  absl::Status st;
  if (comm.rank() == 0) {
    auto candidates = CheckpointCandidates(dir);
    st = candidates.status();
    if (st.ok()) joined = absl::StrJoin(*candidates, "\n");
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  LEMRT_RETURN_IF_ERROR(comm.Broadcast(&joined, 0));
  return std::vector<std::string>(absl::StrSplit(joined, '\n'));
}

// A damaged checkpoint: worth passing over for an older one.
bool IsDamage(const absl::Status& st) { return absl::IsDataLoss(st) || absl::IsNotFound(st); }

}  // namespace

absl::StatusOr<RestoreResult> RestoreCheckpoint(const std::string& dir,
                                                const config::RunConfig& config,
                                                Communicator& comm,
                                                runtime::SparseCoreStage& sparse,
                                                runtime::TensorCoreStage& dense) {
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> candidates, AgreedCandidates(dir, comm));
  RestoreResult result;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const absl::Status st = RestoreOne(candidates[i], config, comm, sparse, dense, &result);
    if (st.ok()) return result;
    // A named step directory is the only candidate: its error as it is.
    if (!IsDamage(st) || candidates[i] == dir) return st;
    result.skipped.push_back(
        absl::StrCat("'", candidates[i], "': ", absl::StripSuffix(st.message(), ".")));
    if (i + 1 == candidates.size()) {
      return absl::Status(st.code(),
                          absl::StrCat("no intact checkpoint in '", dir, "'; tried ",
                                       absl::StrJoin(result.skipped, "; "), "."));
    }
  }
  return absl::NotFoundError(absl::StrCat("no checkpoint in '", dir, "'."));
}

}  // namespace lemrt::checkpoint
