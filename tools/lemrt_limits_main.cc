// lemrt_limits: estimates the SparseCore partition limits of a config's data
// source (reference section 7) and writes them as a limits file for
// sparse_core.limits_file. Runs under mpirun like training (one rank = one
// chip); the limits are the maxima over --batches training batches and all
// ranks, times --headroom. Rank 0 prints a per-table report. Partitions are
// per stacked table (layout/stacking.h: ids rotated and offset as in training);
// the file lists every table, each with its stack's limits.
//
//   mpirun -np 4 build/bin/lemrt_limits --config=examples/configs/dlrm_synthetic.pbtxt
//       --batches=20 --out=limits.pbtxt [--headroom=1.1] [--override='...']

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "host/input/data_source.h"
#include "host/preprocess/batch_id_shuffle.h"
#include "host/preprocess/coo.h"
#include "host/preprocess/hot_rows.h"
#include "host/preprocess/limit_estimator.h"
#include "host/preprocess/minibatch.h"
#include "layout/limits.h"
#include "layout/row_placement.h"
#include "layout/stacking.h"
#include "proto/config_loader.h"
#include "proto/hot_row_rule.h"
#include "runtime/comm/mpi_session.h"
#include "runtime/hot_rows/hot_row_choice.h"
#include "runtime/output_paths.h"
#include "tools/tool_help.h"

DEFINE_string(config, "", "Run config in protobuf text format (required).");
DEFINE_string(override, "", "Text proto merged into the config.");
DEFINE_int32(batches, 10, "Training batches to observe (steps 0 .. N-1).");
DEFINE_string(out, "", "Where rank 0 writes the limits file (required).");
DEFINE_double(headroom, 1.1, "Limits = ceil(observed maximum x headroom); 1 to 1000.");
DEFINE_int32(hot_rows, 0,
             "Replicate each table's N most frequent rows (TableConfig.hot_rows) for tables "
             "that set no hot rows, and count the partitions without their ids.");
DEFINE_string(hot_rows_out, "",
              "Where rank 0 writes each table's chosen hot rows as hot_row_ids lines to paste "
              "into its tables { } block.");

namespace {

using lemrt::runtime::Communicator;

// The largest --headroom: a limit 1000 times the observed maximum is no
// estimate any more.
constexpr double kMaxHeadroom = 1000;

absl::Status Estimate(const lemrt::config::RunConfig& config, Communicator& comm) {
  namespace host = lemrt::host;
  namespace layout = lemrt::layout;
  // Where the ids go, as training places them (layout/row_placement.h).
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  const int S = placement.sparse_cores_per_chip();
  const int N = placement.total_sparse_cores();
  const layout::StackingPlan& stacking = placement.stacking();
  const int K = stacking.num_stacks();
  auto data = host::CreateDataSource(config, comm.rank(), comm.size());
  absl::Status st = lemrt::runtime::AgreeOnStatus(comm, data.status());
  if (!st.ok()) return st;
  // Hot rows leave the partitions (runtime/hot_rows/hot_row_choice.h), as in training.
  lemrt::runtime::HotRowChoice hot;
  if (placement.any_hot_rows()) {
    auto counting = host::CreateDataSource(config, comm.rank(), comm.size());
    st = lemrt::runtime::AgreeOnStatus(comm, counting.status());
    if (!st.ok()) return st;
    auto chosen = lemrt::runtime::ChooseHotRows(config, comm, counting->get());
    if (!chosen.ok()) return chosen.status();
    hot = std::move(*chosen);
  }
  host::CooOptions coo_options = host::MakeCooOptions(config);
  // Counted while the COO is built, unless hot entries are taken out after.
  coo_options.count_partitions = hot.placed.empty();
  host::CooBuilder builder(coo_options);
  // The partitions of the ids as training places them (id shuffling).
  const host::IdShuffler shuffler = host::IdShuffler::FromConfig(config);
  host::MinibatchOptions mo;
  mo.chip = comm.rank();
  mo.local_sparse_cores = S;
  mo.total_sparse_cores = N;
  mo.stacking = stacking.tables();
  mo.limits.tables.resize(K);  // unlimited: only counting
  mo.limits.table_names.resize(K);
  host::MinibatchSplitter counter(mo);
  host::LimitEstimator estimator(K, S, N);
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<host::HotEntry> hot_entries;
  int64_t ids[2] = {0, 0};  // after per-sample dedup: all, hot
  for (int64_t b = 0; b < FLAGS_batches; ++b) {
    st = (*data)->TrainBatch(b, &batch);
    if (st.ok()) shuffler.Apply(&batch);
    if (st.ok()) st = builder.Build(batch, &coo);
    if (!st.ok()) st = absl::Status(st.code(), absl::StrFormat("batch %d: %s", b, st.message()));
    st = lemrt::runtime::AgreeOnStatus(comm, st);
    if (!st.ok()) return st;
    ids[0] += coo.ids_after_dedup;
    host::ExtractHotEntries(hot.placed, &coo, &hot_entries);
    ids[1] += static_cast<int64_t>(hot_entries.size());
    counter.PlanLocal(coo);
    estimator.AddBatch(counter.counts());
  }

  lemrt::config::LimitsFile limits;
  std::string report = absl::StrFormat(
      "%-16s %9s %9s %9s %11s %11s %11s %8s %7s\n", "(stacked) table", "max_ids", "mean_ids",
      "p99_ids", "max_unique", "mean_unique", "p99_unique", "hot_sc", "skew");
  for (int t = 0; t < K; ++t) {
    std::vector<float> ids, unique;
    st = comm.AllGather(estimator.ids(t), &ids);
    if (st.ok()) st = comm.AllGather(estimator.unique_ids(t), &unique);
    std::vector<int64_t> per_dest = estimator.ids_per_dest(t);
    if (st.ok()) st = comm.AllReduceSum(std::span<int64_t>(per_dest));
    if (!st.ok()) return st;
    const host::TableLimitReport r =
        host::LimitEstimator::Summarise(std::move(ids), std::move(unique), per_dest);
    // A limit is the stacked table's: every member gets it (layout/stacking.h).
    for (int member : stacking.stacks()[t].tables) {
      *limits.add_tables() =
          host::LimitEstimator::Limits(config.tables(member).name(), r, FLAGS_headroom);
    }
    report += absl::StrFormat("%-16s %9d %9.1f %9.0f %11d %11.1f %11.0f %8d %6.2fx\n",
                              stacking.stacks()[t].name, r.max_ids, r.mean_ids, r.p99_ids,
                              r.max_unique_ids, r.mean_unique_ids, r.p99_unique_ids,
                              r.hottest_sc, r.hottest_share);
  }
  st = comm.AllReduceSum(std::span<int64_t>(ids, 2));
  if (!st.ok()) return st;
  if (comm.rank() != 0) return absl::OkStatus();
  std::string hot_text;
  if (!hot.placed.empty()) {
    report += absl::StrFormat(
        "Hot rows (replicated on every chip, not in the partitions above): %d rows, %d of %d "
        "ids (%.1f%%)\n",
        hot.placed.slots(), ids[1], ids[0], ids[0] > 0 ? 100.0 * ids[1] / ids[0] : 0.0);
    for (int t = 0; t < config.tables_size(); ++t) {
      if (hot.rows[t].empty()) continue;
      const bool listed = config.tables(t).hot_row_ids_size() > 0;
      report += absl::StrFormat(
          "  table '%s': %d rows%s\n", config.tables(t).name(), hot.rows[t].size(),
          listed ? " (listed)"
                 : absl::StrFormat(", %.1f%% of its ids in the counted steps", 100 * hot.share[t]));
      hot_text += absl::StrFormat("# table '%s'\nhot_row_ids: [%s]\n", config.tables(t).name(),
                                  absl::StrJoin(hot.rows[t], ", "));
    }
  }
  std::printf(
      "Partition counts over %d batches x %d ranks (%d SparseCores; a partition = one source SC "
      "-> one destination SC, one (stacked) table, one step, after per-sample dedup; skew = ids of the "
      "most loaded destination SC / the mean; %d tables in %d stacks):\n%s",
      FLAGS_batches, comm.size(), N, config.tables_size(), K, report.c_str());
  std::fflush(stdout);
  st = layout::WriteLimitsFile(limits, FLAGS_out);
  if (st.ok()) std::printf("wrote %s (headroom %.3f)\n", FLAGS_out.c_str(), FLAGS_headroom);
  if (st.ok() && !FLAGS_hot_rows_out.empty()) {
    std::ofstream out(FLAGS_hot_rows_out);
    out << hot_text;
    out.close();
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrFormat("cannot write --hot_rows_out=%s", FLAGS_hot_rows_out));
    }
    std::printf("wrote %s\n", FLAGS_hot_rows_out.c_str());
  }
  return st;
}

// The config from the flags on this rank (no collectives).
absl::StatusOr<lemrt::config::RunConfig> LoadOnThisRank(int world_size) {
  if (FLAGS_config.empty()) return absl::InvalidArgumentError("--config=FILE is required");
  if (FLAGS_out.empty()) return absl::InvalidArgumentError("--out=FILE is required");
  if (FLAGS_batches <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("--batches must be > 0, got %d", FLAGS_batches));
  }
  if (FLAGS_hot_rows < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("--hot_rows must be >= 0, got %d", FLAGS_hot_rows));
  }
  // NaN and inf fail too; a limit past int32 saturates (LimitEstimator::Limits).
  if (!(FLAGS_headroom >= 1.0 && FLAGS_headroom <= kMaxHeadroom)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--headroom must be a number from 1 to %g (limits = ceil(observed maximum x headroom)), "
        "got %g",
        kMaxHeadroom, FLAGS_headroom));
  }
  auto config = lemrt::config::LoadConfig(FLAGS_config, FLAGS_override, world_size);
  if (!config.ok()) return config;
  if (FLAGS_hot_rows > 0) {
    for (lemrt::config::TableConfig& t : *config->mutable_tables()) {
      if (t.hot_rows() == 0 && t.hot_row_ids_size() == 0 && !t.has_quantization()) {
        t.set_hot_rows(static_cast<int32_t>(std::min<int64_t>(FLAGS_hot_rows, t.vocab_size())));
      }
    }
  }
  // --hot_rows_out lists the hot rows of the tables that have them (counted
  // for --hot_rows or the table's hot_rows, or its hot_row_ids); without any
  // it would write an empty file.
  const bool any_hot = std::any_of(
      config->tables().begin(), config->tables().end(), [](const lemrt::config::TableConfig& t) {
        return lemrt::config::HotRowSourceOf(t) != lemrt::config::HotRowSource::kNone;
      });
  if (!FLAGS_hot_rows_out.empty() && !any_hot) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--hot_rows_out=%s needs --hot_rows=N (or a table with hot_rows or hot_row_ids in the "
        "config): %s, so there are no hot rows to write",
        FLAGS_hot_rows_out,
        FLAGS_hot_rows > 0 ? "--hot_rows applies to no table (each is quantized)"
                           : "no table has hot rows"));
  }
  return config;
}

// Collective: rank 0 checks the files it writes at the end (--out,
// --hot_rows_out), as lemrt_train checks its outputs, so that a path that
// cannot be written fails before the batches are read, not after.
absl::Status CheckOutputs(Communicator& comm) {
  absl::Status st;
  if (comm.rank() == 0) {
    st = lemrt::runtime::CheckOutputFile(FLAGS_out, "--out");
    if (st.ok()) st = lemrt::runtime::CheckOutputFile(FLAGS_hot_rows_out, "--hot_rows_out");
  }
  return lemrt::runtime::AgreeOnStatus(comm, st);
}

// Errors that can differ by rank (a file one rank cannot read, an MPMD job's
// different arguments) are agreed before the next collective.
absl::Status Run(Communicator& comm) {
  auto config = LoadOnThisRank(comm.size());
  absl::Status st = lemrt::runtime::AgreeOnStatus(comm, config.status());
  if (!st.ok()) return st;
  // --batches decides how many collectives run.
  int64_t batches[2] = {FLAGS_batches, -int64_t{FLAGS_batches}};  // max, -min
  st = comm.AllReduceMax(std::span<int64_t>(batches, 2));
  if (!st.ok()) return st;
  if (batches[0] != -batches[1]) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--batches differs between ranks (%d to %d); give every rank the same", -batches[1],
        batches[0]));
  }
  st = CheckOutputs(comm);
  if (!st.ok()) return st;
  return Estimate(*config, comm);
}

}  // namespace

int main(int argc, char** argv) {
  lemrt::runtime::MpiSession mpi(&argc, &argv, lemrt::runtime::MpiThreads::kFunneled);
  gflags::SetUsageMessage(
      "mpirun -np N lemrt_limits --config=FILE --batches=N --out=limits.pbtxt [--headroom=1.1]");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  // The communicator first: everything after it that can fail is agreed over it.
  auto comm = mpi.World();
  absl::Status st = mpi.Require(lemrt::runtime::MpiThreads::kFunneled, "lemrt_limits");
  if (st.ok()) st = comm.ok() ? Run(**comm) : comm.status();
  if (!st.ok()) {
    std::fprintf(stderr, "lemrt_limits: error: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
