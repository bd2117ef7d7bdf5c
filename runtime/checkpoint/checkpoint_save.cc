// SaveCheckpoint (checkpoint.h): the save protocol.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/optimizers/optimizer.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "layout/row_placement.h"
#include "proto/config_loader.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/config_match.h"
#include "runtime/checkpoint/crash_hook.h"
#include "runtime/checkpoint/durable_files.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/observability/model_stats.h"

namespace lemrt::checkpoint {
namespace {

using runtime::AgreeOnStatus;
using runtime::Communicator;

// The table and dense entries (without checksums) a checkpoint of `config`
// has: the layout every rank agrees on without communicating.
Manifest SkeletonManifest(const config::RunConfig& config, int world_size, int64_t num_params) {
  Manifest m;
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  const int total_sc = placement.total_sparse_cores();
  m.set_format_version(kFormatVersion);
  m.set_world_size(world_size);
  m.set_sparse_cores_per_chip(config.topology().sparse_cores_per_chip());
  m.set_total_sparse_cores(total_sc);
  m.set_global_batch(config.training().global_batch());
  m.set_seed(config.training().seed());
  for (int t = 0; t < config.tables_size(); ++t) {
    const config::TableConfig& tc = config.tables(t);
    const auto opt = device::CreateTableOptimizer(config, t);
    TableEntry* e = m.add_tables();
    e->set_name(tc.name());
    e->set_vocab_size(tc.vocab_size());
    e->set_dim(tc.dim());
    e->set_optimizer(opt->name());
    e->set_slots_per_param(opt->slots_per_param());
    if (opt->row_slots() > 0) e->set_row_slots(opt->row_slots());
    if (config::IsBf16(tc.dtype())) e->set_dtype("bf16");
    if (config::IsBf16(tc.slot_dtype())) e->set_slot_dtype("bf16");
    if (placement.shuffles(t)) e->set_id_shuffle_key(placement.permutation(t).key());
    for (int g = 0; g < total_sc; ++g) {
      FileEntry* f = e->add_files();
      f->set_name(TableFileName(t, g));
      f->set_records(RecordsInFile(tc.vocab_size(), g, total_sc));
      f->set_bytes(f->records() * RecordBytes(*e));
    }
  }
  const auto dense_opt = device::CreateDenseOptimizer(config);
  CHECK_EQ(dense_opt->row_slots(), 0) << "row slots are for tables (validated config)";
  DenseEntry* d = m.mutable_dense();
  d->set_num_params(num_params);
  d->set_optimizer(dense_opt->name());
  d->set_slots_per_param(dense_opt->slots_per_param());
  d->mutable_file()->set_name(kDenseFileName);
  d->mutable_file()->set_records(1);
  d->mutable_file()->set_bytes(4 * num_params * (1 + dense_opt->slots_per_param()));
  return m;
}

// Writes this rank's table files into `dir`, adding their checksums to
// sums[t * N + g] and their sizes to *bytes.
absl::Status WriteLocalTables(const std::string& dir, const Manifest& m,
                              const runtime::SparseCoreStage& sparse, const CrashHook& crash,
                              std::vector<uint64_t>* sums, int64_t* bytes) {
  int files_written = 0;
  const int files_to_write =
      static_cast<int>(sparse.sparse_cores().size()) * m.tables_size();
  const int total_sc = m.total_sparse_cores();
  std::string buffer;
  std::vector<float> weights, slots;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < m.tables_size(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      // File g holds the placed rows p with p % N == g whichever SparseCore
      // owns them (table stacking rotates them, layout/stacking.h), each
      // record naming its original row: layout-free.
      const int g = static_cast<int>(shard.GlobalRow(0));
      const TableEntry& e = m.tables(t);
      const int64_t rb = RecordBytes(e);
      CHECK_EQ(shard.local_rows(), e.files(g).records());
      buffer.resize(shard.local_rows() * rb);
      uint64_t sum = 0;
      // Through fp32 (bf16 values widen and encode back bit for bit).
      weights.resize(e.dim());
      slots.resize(shard.slot_stride());
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        char* p = buffer.data() + r * rb;
        const int64_t row = shard.OriginalRow(r);
        std::memcpy(p, &row, 8);
        shard.ReadRows(r, 1, weights.data());
        shard.ReadSlots(r, 1, slots.data());
        EncodeRecord(e, weights.data(), slots.data(), p);
        sum += RecordHash(std::span<const char>(p, rb));
      }
      const std::string path = Join(dir, e.files(g).name());
      crash.MidFile(files_written, files_to_write, path, buffer);
      LEMRT_RETURN_IF_ERROR(WriteFileDurably(path, buffer));
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

// Agrees on `st`; on an error rank 0 removes the unfinished directory (a
// failed save leaves nothing behind, so a full disk is not left fuller).
absl::Status AgreeOrAbandon(Communicator& comm, const absl::Status& st, const std::string& work) {
  absl::Status agreed = AgreeOnStatus(comm, st);
  if (!agreed.ok() && comm.rank() == 0 && !work.empty()) (void)RemoveTree(work);
  return agreed;
}

}  // namespace

absl::StatusOr<SaveResult> SaveCheckpoint(const std::string& root_dir, int64_t step,
                                          const config::RunConfig& config, Communicator& comm,
                                          const runtime::SparseCoreStage& sparse,
                                          const runtime::TensorCoreStage& dense) {
  const CrashHook crash(step, comm.rank());
  SaveResult result;
  result.dir = Join(root_dir, StepDirName(step));
  const std::string work = Join(root_dir, kIncompletePrefix + StepDirName(step));
  Manifest m = SkeletonManifest(config, comm.size(), dense.model().num_params());
  for (int64_t e : dense.predicted_exponents()) {
    m.mutable_dense()->add_gradient_exponents(static_cast<int32_t>(e));
  }
  absl::Status st;
  if (comm.rank() == 0) st = BeginStepDir(root_dir, step).status();
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));

  const int total_sc = m.total_sparse_cores();
  std::vector<uint64_t> sums(int64_t{m.tables_size()} * total_sc, 0);
  st = WriteLocalTables(work, m, sparse, crash, &sums, &result.bytes);
  uint64_t dense_sum = 0;
  if (st.ok() && comm.rank() == 0) {
    const std::string bytes = DenseBytes(dense);
    dense_sum = RecordHash(bytes);
    result.bytes += static_cast<int64_t>(bytes.size());
    st = WriteFileDurably(Join(work, kDenseFileName), bytes);
  }
  if (st.ok()) crash.At("tables_written");
  LEMRT_RETURN_IF_ERROR(AgreeOrAbandon(comm, st, work));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<uint64_t>(sums)));
  int64_t total_bytes = result.bytes;
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(&total_bytes, 1)));
  result.bytes = total_bytes;
  LEMRT_ASSIGN_OR_RETURN(runtime::ModelStats stats,
                         runtime::ComputeModelStats(comm, sparse, dense.model().params()));
  if (!std::isfinite(stats.params_l2)) {
    // The same stats on every rank: every rank refuses alike. A diverged
    // model is never published, so a resume takes the last finite one.
    return AgreeOrAbandon(
        comm,
        absl::FailedPreconditionError(absl::StrFormat(
            "step %d: the model's parameters are not finite (params L2 %f): training diverged, "
            "so its checkpoint is not saved; lower the learning rates",
            step, stats.params_l2)),
        work);
  }

  if (comm.rank() == 0) {
    m.set_step(step);
    m.set_model_checksum(stats.checksum);
    m.set_sparse_updates(sparse.sparse_cores().empty() ? 0 : sparse.sparse_cores()[0]->updates());
    m.set_dense_updates(dense.updates());
    m.mutable_data()->set_next_step(step);
    m.mutable_data()->set_samples_consumed(step * config.training().global_batch());
    m.mutable_data()->set_source(DataSourceName(config));
    google::protobuf::TextFormat::PrintToString(config, m.mutable_config_text());
    for (int t = 0; t < m.tables_size(); ++t) {
      for (int g = 0; g < total_sc; ++g) {
        m.mutable_tables(t)->mutable_files(g)->set_checksum(sums[int64_t{t} * total_sc + g]);
      }
    }
    m.mutable_dense()->mutable_file()->set_checksum(dense_sum);
    st = WriteManifest(work, m);
    if (st.ok()) {
      crash.At("manifest_written");
      st = PublishStepDir(root_dir, step, CrashHook::AllowExchange(),
                          [&crash](std::string_view point) { crash.At(point); });
    }
    if (st.ok()) crash.At("published");
  }
  LEMRT_RETURN_IF_ERROR(AgreeOrAbandon(comm, st, work));
  return result;
}

}  // namespace lemrt::checkpoint
