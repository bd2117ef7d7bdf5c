#include "runtime/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/optimizers/optimizer.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "proto/config_loader.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/model_stats.h"

namespace lemrt::checkpoint {
namespace {

using runtime::AgreeOnStatus;
using runtime::Communicator;

std::string DataSourceName(const config::RunConfig& config) {
  if (config.data().has_criteo()) return "criteo";
  if (config.data().has_binary()) return "binary";
  return "synthetic";
}

// The table and dense entries (without checksums) a checkpoint of `config`
// has: the layout every rank agrees on without communicating.
Manifest SkeletonManifest(const config::RunConfig& config, int world_size, int64_t num_params) {
  Manifest m;
  const int total_sc = static_cast<int>(config::TotalSparseCores(config));
  m.set_format_version(kFormatVersion);
  m.set_world_size(world_size);
  m.set_sparse_cores_per_chip(config.topology().sparse_cores_per_chip());
  m.set_total_sparse_cores(total_sc);
  m.set_global_batch(config.training().global_batch());
  m.set_seed(config.training().seed());
  for (int t = 0; t < config.tables_size(); ++t) {
    const config::TableConfig& tc = config.tables(t);
    const auto opt =
        device::CreateOptimizer(tc.optimizer(), config.training().embedding_learning_rate());
    TableEntry* e = m.add_tables();
    e->set_name(tc.name());
    e->set_vocab_size(tc.vocab_size());
    e->set_dim(tc.dim());
    e->set_optimizer(opt->name());
    e->set_slots_per_param(opt->slots_per_param());
    for (int g = 0; g < total_sc; ++g) {
      FileEntry* f = e->add_files();
      f->set_name(TableFileName(t, g));
      f->set_records(RecordsInFile(tc.vocab_size(), g, total_sc));
      f->set_bytes(f->records() * RecordBytes(tc.dim(), opt->slots_per_param()));
    }
  }
  const auto dense_opt = device::CreateOptimizer(config.training().dense_optimizer(),
                                                 config.training().dense_learning_rate());
  DenseEntry* d = m.mutable_dense();
  d->set_num_params(num_params);
  d->set_optimizer(dense_opt->name());
  d->set_slots_per_param(dense_opt->slots_per_param());
  d->mutable_file()->set_name(kDenseFileName);
  d->mutable_file()->set_records(1);
  d->mutable_file()->set_bytes(4 * num_params * (1 + dense_opt->slots_per_param()));
  return m;
}

// The test hook of checkpoint.h: true when this rank is to die while
// writing the checkpoint of `step`.
bool CrashHookArmed(int64_t step, int rank) {
  const char* hook = std::getenv(kCrashHookEnv);
  if (hook == nullptr) return false;
  long long hook_step = -1;
  int hook_rank = -1;
  return std::sscanf(hook, "%lld:%d", &hook_step, &hook_rank) == 2 && hook_step == step &&
         hook_rank == rank;
}

// Simulates a crash in the middle of writing `path`: half of `bytes` reach
// its temporary file, then the process is SIGKILLed.
[[noreturn]] void CrashWhileWriting(const std::string& path, std::string_view bytes) {
  LOG(ERROR) << kCrashHookEnv << ": killing this rank while it writes '" << path << "'";
  google::FlushLogFiles(google::GLOG_INFO);
  const int fd = open((path + ".tmp").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, bytes.data(), bytes.size() / 2);
    fsync(fd);
  }
  raise(SIGKILL);
  std::abort();
}

// Writes this rank's table files into `dir`, adding their checksums to
// sums[t * N + g] and their sizes to *bytes. With `crash`, the rank dies
// while writing its second file (its first when it has one).
absl::Status WriteLocalTables(const std::string& dir, const Manifest& m,
                              const runtime::SparseCoreStage& sparse, bool crash,
                              std::vector<uint64_t>* sums, int64_t* bytes) {
  int files_written = 0;
  const int files_to_write =
      static_cast<int>(sparse.sparse_cores().size()) * m.tables_size();
  const int total_sc = m.total_sparse_cores();
  std::string buffer;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < m.tables_size(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      // File g holds the rows j with j % N == g whichever SparseCore owns
      // them (table stacking rotates them, host/stacking.h): layout-free.
      const int g = static_cast<int>(shard.GlobalRow(0));
      const TableEntry& e = m.tables(t);
      const int64_t rb = RecordBytes(e.dim(), e.slots_per_param());
      const int64_t slot_bytes = 4 * int64_t{e.dim()} * e.slots_per_param();
      CHECK_EQ(shard.local_rows(), e.files(g).records());
      buffer.resize(shard.local_rows() * rb);
      uint64_t sum = 0;
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        char* p = buffer.data() + r * rb;
        const int64_t row = shard.GlobalRow(r);
        std::memcpy(p, &row, 8);
        std::memcpy(p + 8, shard.row(r), 4 * int64_t{e.dim()});
        if (slot_bytes > 0) std::memcpy(p + 8 + 4 * e.dim(), shard.row_slots(r).data(), slot_bytes);
        sum += RecordHash(std::span<const char>(p, rb));
      }
      if (crash && files_written == std::min(1, files_to_write - 1)) {
        CrashWhileWriting(Join(dir, e.files(g).name()), buffer);
      }
      LEMRT_RETURN_IF_ERROR(WriteFileAtomically(Join(dir, e.files(g).name()), buffer));
      ++files_written;
      (*sums)[int64_t{t} * total_sc + g] = sum;
      *bytes += static_cast<int64_t>(buffer.size());
    }
  }
  return absl::OkStatus();
}

std::string DenseBytes(const runtime::TensorCoreStage& dense) {
  const auto params = dense.model().params();
  const auto slots = dense.optimizer_slots();
  std::string bytes(4 * (params.size() + slots.size()), '\0');
  std::memcpy(bytes.data(), params.data(), 4 * params.size());
  if (!slots.empty()) std::memcpy(bytes.data() + 4 * params.size(), slots.data(), 4 * slots.size());
  return bytes;
}

absl::Status Mismatch(const std::string& dir, std::string what) {
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint '", dir, "' does not match the config: ", what, "."));
}

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
  const int64_t rb = RecordBytes(e.dim(), e.slots_per_param());
  const int64_t slot_floats = int64_t{e.dim()} * e.slots_per_param();
  for (const auto& sc : sparse.sparse_cores()) {
    device::TableShard& shard = sc->mutable_shard(t);
    for (int64_t r = 0; r < shard.local_rows(); ++r) {
      const int64_t row = shard.GlobalRow(r);
      const int g = static_cast<int>(row % old_sc);
      const int64_t k = row / old_sc;
      const char* p = files[g].bytes().data() + k * rb;
      int64_t stored;
      std::memcpy(&stored, p, 8);
      if (stored != row) {
        return absl::DataLossError(absl::StrFormat(
            "checkpoint file '%s' is corrupted: record %d holds row %d, expected row %d.",
            Join(dir, e.files(g).name()), k, stored, row));
      }
      (*sums)[int64_t{t} * old_sc + g] += RecordHash(std::span<const char>(p, rb));
      std::memcpy(shard.mutable_row(r).data(), p + 8, 4 * int64_t{e.dim()});
      if (slot_floats > 0) {
        std::memcpy(shard.mutable_row_slots(r).data(), p + 8 + 4 * e.dim(), 4 * slot_floats);
      }
    }
  }
  return absl::OkStatus();
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
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckManifestMatchesConfig(const Manifest& manifest, const std::string& dir,
                                        const config::RunConfig& config) {
  const Manifest want = SkeletonManifest(config, 1, manifest.dense().num_params());
  if (manifest.tables_size() != want.tables_size()) {
    return Mismatch(dir, absl::StrFormat("it has %d tables, the config %d",
                                         manifest.tables_size(), want.tables_size()));
  }
  for (int t = 0; t < want.tables_size(); ++t) {
    const TableEntry& a = manifest.tables(t);
    const TableEntry& b = want.tables(t);
    if (a.name() != b.name()) {
      return Mismatch(dir, absl::StrFormat("table %d is '%s' in the checkpoint, '%s' in the config",
                                           t, a.name(), b.name()));
    }
    auto field = [&](const char* name, auto x, auto y) {
      return Mismatch(dir, absl::StrCat("table '", a.name(), "' has ", name, " ", x,
                                        " in the checkpoint, ", y, " in the config"));
    };
    if (a.vocab_size() != b.vocab_size()) return field("vocab_size", a.vocab_size(), b.vocab_size());
    if (a.dim() != b.dim()) return field("dim", a.dim(), b.dim());
    if (a.optimizer() != b.optimizer()) return field("optimizer", a.optimizer(), b.optimizer());
    if (a.slots_per_param() != b.slots_per_param()) {
      return field("slots_per_param", a.slots_per_param(), b.slots_per_param());
    }
  }
  if (manifest.dense().optimizer() != want.dense().optimizer()) {
    return Mismatch(dir, absl::StrCat("the dense optimizer is ", manifest.dense().optimizer(),
                                      " in the checkpoint, ", want.dense().optimizer(),
                                      " in the config"));
  }
  if (manifest.global_batch() != config.training().global_batch()) {
    return Mismatch(dir, absl::StrCat("training.global_batch is ", manifest.global_batch(),
                                      " in the checkpoint, ", config.training().global_batch(),
                                      " in the config (the data position is counted in "
                                      "steps of the global batch)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SaveResult> SaveCheckpoint(const std::string& root_dir, int64_t step,
                                          const config::RunConfig& config, Communicator& comm,
                                          const runtime::SparseCoreStage& sparse,
                                          const runtime::TensorCoreStage& dense) {
  SaveResult result;
  result.dir = Join(root_dir, StepDirName(step));
  Manifest m = SkeletonManifest(config, comm.size(), dense.model().num_params());
  absl::Status st;
  if (comm.rank() == 0) {
    st = MakeDirs(result.dir);
    // A manifest left from an earlier save of this step goes first, so the
    // directory never pairs it with new data files.
    if (st.ok() && unlink(Join(result.dir, kManifestName).c_str()) != 0 && errno != ENOENT) {
      st = absl::ErrnoToStatus(errno, absl::StrCat("checkpoint: cannot remove the old manifest in '",
                                                   result.dir, "'"));
    }
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));

  const int total_sc = m.total_sparse_cores();
  std::vector<uint64_t> sums(int64_t{m.tables_size()} * total_sc, 0);
  st = WriteLocalTables(result.dir, m, sparse, CrashHookArmed(step, comm.rank()), &sums,
                        &result.bytes);
  uint64_t dense_sum = 0;
  if (st.ok() && comm.rank() == 0) {
    const std::string bytes = DenseBytes(dense);
    dense_sum = RecordHash(bytes);
    result.bytes += static_cast<int64_t>(bytes.size());
    st = WriteFileAtomically(Join(result.dir, kDenseFileName), bytes);
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<uint64_t>(sums)));
  int64_t total_bytes = result.bytes;
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(&total_bytes, 1)));
  result.bytes = total_bytes;
  LEMRT_ASSIGN_OR_RETURN(runtime::ModelStats stats,
                         runtime::ComputeModelStats(comm, sparse, dense.model().params()));

  if (comm.rank() == 0) {
    m.set_step(step);
    m.set_model_checksum(stats.checksum);
    m.set_sparse_updates(sparse.sparse_cores().empty() ? 0 : sparse.sparse_cores()[0]->updates());
    m.set_dense_updates(dense.updates());
    m.mutable_data()->set_next_step(step);
    m.mutable_data()->set_samples_consumed(step * config.training().global_batch());
    m.mutable_data()->set_source(DataSourceName(config));
    for (int t = 0; t < m.tables_size(); ++t) {
      for (int g = 0; g < total_sc; ++g) {
        m.mutable_tables(t)->mutable_files(g)->set_checksum(sums[int64_t{t} * total_sc + g]);
      }
    }
    m.mutable_dense()->mutable_file()->set_checksum(dense_sum);
    std::string text;
    google::protobuf::TextFormat::PrintToString(m, &text);
    st = WriteFileAtomically(Join(result.dir, kManifestName), text);
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  return result;
}

absl::StatusOr<RestoreResult> RestoreCheckpoint(const std::string& dir,
                                                const config::RunConfig& config,
                                                Communicator& comm,
                                                runtime::SparseCoreStage& sparse,
                                                runtime::TensorCoreStage& dense) {
  RestoreResult result;
  absl::Status st;
  {
    auto resolved = ResolveCheckpointDir(dir);
    st = resolved.status();
    if (st.ok()) {
      result.dir = *resolved;
      auto manifest = ReadManifest(result.dir);
      st = manifest.status();
      if (st.ok()) result.manifest = *std::move(manifest);
    }
    if (st.ok()) st = CheckManifestMatchesConfig(result.manifest, result.dir, config);
    if (st.ok() && result.manifest.dense().num_params() != dense.model().num_params()) {
      st = Mismatch(result.dir, absl::StrFormat("it has %d dense parameters, the model %d",
                                                result.manifest.dense().num_params(),
                                                dense.model().num_params()));
    }
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  const Manifest& m = result.manifest;
  std::vector<uint64_t> sums(int64_t{m.tables_size()} * m.total_sparse_cores(), 0);
  for (int t = 0; t < m.tables_size() && st.ok(); ++t) {
    st = RestoreTable(result.dir, m, t, sparse, &sums);
  }
  if (st.ok()) st = RestoreDense(result.dir, m, dense);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  // Each file's records were read by the ranks owning their rows; together
  // they have read every record once.
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<uint64_t>(sums)));
  for (int t = 0; t < m.tables_size(); ++t) {
    for (int g = 0; g < m.total_sparse_cores(); ++g) {
      const FileEntry& f = m.tables(t).files(g);
      LEMRT_RETURN_IF_ERROR(CheckChecksum(Join(result.dir, f.name()),
                                          sums[int64_t{t} * m.total_sparse_cores() + g],
                                          f.checksum()));
    }
  }
  for (const auto& sc : sparse.sparse_cores()) sc->set_updates(m.sparse_updates());
  dense.set_updates(m.dense_updates());
  LEMRT_ASSIGN_OR_RETURN(runtime::ModelStats stats,
                         runtime::ComputeModelStats(comm, sparse, dense.model().params()));
  if (stats.checksum != m.model_checksum()) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint '%s': the restored model's checksum is %s, the manifest says %s.", result.dir,
        stats.checksum, m.model_checksum()));
  }
  return result;
}

}  // namespace lemrt::checkpoint
