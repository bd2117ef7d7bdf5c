// lemrt_predict: scores files with a trained checkpoint (docs/data.md
// "Predictions"): one click probability per input row, in input order, with
// the label where the rows have one, and the AUC and log loss of the labelled
// rows (and NE, calibration and, with training.eval_group_feature, GAUC) —
// the numbers the trainer's own evaluation of that checkpoint gives.
// Runs at any world size (the checkpoint is re-sharded on restore).
//
//   mpirun -np N lemrt_predict --config=model.pbtxt --checkpoint=DIR
//       --data=FILE[,FILE...] --out=predictions.csv|.npy [--override=TEXT]
//
// --data names files (or globs) of the config's source format and schema.
// CSV: "row,probability,label" (row: 0-based row of the data files in order;
// label empty when absent); .npy: float32 [rows scored x 2] (probability,
// label; NaN when absent). A multi-task model (model.tasks) writes one pair
// per task, in task order: "row,probability_NAME,label_NAME,..." and
// [rows x 2T]. Malformed rows (strict off) are skipped with a warning and
// counted.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "base/status_macros.h"
#include "host/input/record_file.h"
#include "proto/config_loader.h"
#include "runtime/checkpoint/config_match.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/checkpoint/npy.h"
#include "runtime/comm/mpi_session.h"
#include "runtime/host_memory.h"
#include "runtime/trainer.h"
#include "tools/tool_help.h"

DEFINE_string(config, "", "The run config the checkpoint was trained with (required).");
DEFINE_string(override, "", "Text proto merged into the config (as lemrt_train's).");
DEFINE_string(checkpoint, "",
              "A checkpoint step directory, or a directory of them (the newest is used).");
DEFINE_string(data, "", "Comma-separated files or globs to score, in the config's format.");
DEFINE_string(out, "", "Where rank 0 writes the predictions: a .csv or .npy file.");

namespace {

using lemrt::config::RunConfig;

// Points the config's source at --data for both splits (the training split
// is indexed, never trained), scores every row and trains nothing.
absl::Status ScoreData(RunConfig* config) {
  lemrt::config::DataConfig& d = *config->mutable_data();
  auto set = [&](auto* source) {
    source->set_train_path(FLAGS_data);
    source->set_eval_path(FLAGS_data);
  };
  if (d.has_text()) {
    set(d.mutable_text());
  } else if (d.has_tfrecord()) {
    set(d.mutable_tfrecord());
  } else if (d.has_criteo()) {
    set(d.mutable_criteo());
  } else if (d.has_binary()) {
    set(d.mutable_binary());
  } else {
    return absl::InvalidArgumentError(
        "the config's data source is synthetic; lemrt_predict scores files (a text, tfrecord, "
        "criteo or binary source)");
  }
  if (config->model().tasks_size() == 0) {
    d.mutable_schema()->mutable_label()->set_required(false);
  }
  for (auto& label : *d.mutable_schema()->mutable_labels()) label.set_required(false);
  config->mutable_training()->clear_eval_samples();
  config->mutable_training()->clear_epochs();
  config->mutable_training()->set_steps(0);
  config->clear_checkpoint();
  // Scoring other files than the checkpoint trained on is the point.
  config->mutable_checkpoint()->set_allow_config_change(true);
  return absl::OkStatus();
}

// "row,probability,label", or per task "probability_NAME,label_NAME".
std::string CsvHeader(const RunConfig& config) {
  if (config.model().tasks_size() == 0) return "row,probability,label";
  std::string header = "row";
  for (const auto& task : config.model().tasks()) {
    absl::StrAppend(&header, ",probability_", task.name(), ",label_", task.name());
  }
  return header;
}

// Whether `path` names a .npy output (else it is a .csv one).
bool IsNpy(const std::string& path) { return path.size() > 4 && absl::EndsWith(path, ".npy"); }

absl::Status Write(const RunConfig& config, const lemrt::runtime::Predictions& predictions) {
  const std::string& path = FLAGS_out;
  const int tasks = predictions.tasks;
  const int64_t rows = static_cast<int64_t>(predictions.rows.size());
  if (IsNpy(path)) {
    std::vector<float> values;
    values.reserve(2 * tasks * rows);
    for (int64_t i = 0; i < rows * tasks; ++i) {
      values.push_back(predictions.probabilities[i]);
      values.push_back(predictions.labels[i]);
    }
    return lemrt::checkpoint::WriteNpy(path, rows, 2 * tasks, values);
  }
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  std::fprintf(f, "%s\n", CsvHeader(config).c_str());
  for (int64_t i = 0; i < rows; ++i) {
    std::fprintf(f, "%ld", static_cast<long>(predictions.rows[i]));
    for (int t = 0; t < tasks; ++t) {
      const float p = predictions.probabilities[i * tasks + t];
      const float label = predictions.labels[i * tasks + t];
      if (std::isnan(label)) {
        std::fprintf(f, ",%.9g,", p);
      } else {
        std::fprintf(f, ",%.9g,%g", p, label);
      }
    }
    std::fputc('\n', f);
  }
  const bool written = std::fflush(f) == 0 && std::ferror(f) == 0;
  const int write_error = errno;
  std::fclose(f);
  if (!written) {
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(write_error, absl::StrCat("cannot write '", tmp, "'"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(rename_error,
                               absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return absl::OkStatus();
}

// --out must not be one of the --data files (by name or by device and
// inode): the predictions would replace the rows being scored.
absl::Status CheckOutIsNotData() {
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> inputs,
                         lemrt::host::ExpandPaths(FLAGS_data, "--data"));
  struct stat out;
  const bool out_exists = stat(FLAGS_out.c_str(), &out) == 0;
  for (const std::string& input : inputs) {
    struct stat in;
    const bool same_file = out_exists && stat(input.c_str(), &in) == 0 &&
                           in.st_dev == out.st_dev && in.st_ino == out.st_ino;
    if (input == FLAGS_out || same_file) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out '", FLAGS_out, "' is the input '", input,
          "' (--data); writing the predictions would replace the data they score. Name another "
          "output file."));
    }
  }
  return absl::OkStatus();
}

// The newest checkpoint under --checkpoint must have been trained with the
// config's schema. A checkpoint that cannot be read passes here; the
// restore names its problem.
absl::Status CheckCheckpointSchema(const RunConfig& config) {
  auto dir = lemrt::checkpoint::ResolveCheckpointDir(FLAGS_checkpoint);
  if (!dir.ok()) return absl::OkStatus();
  auto manifest = lemrt::checkpoint::ReadManifest(*dir);
  if (!manifest.ok()) return absl::OkStatus();
  return lemrt::checkpoint::CheckScoringSchema(*manifest, *dir, config);
}

// The scoring config from the flags on this rank (no collectives).
absl::StatusOr<RunConfig> LoadScoringConfig(int world_size) {
  if (FLAGS_config.empty() || FLAGS_checkpoint.empty() || FLAGS_data.empty() ||
      FLAGS_out.empty()) {
    return absl::InvalidArgumentError("--config, --checkpoint, --data and --out are required");
  }
  LEMRT_RETURN_IF_ERROR(CheckOutIsNotData());
  if (!IsNpy(FLAGS_out) && !absl::EndsWith(FLAGS_out, ".csv")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out '", FLAGS_out,
        "' names neither a .csv nor a .npy file; the name's ending chooses the format (CSV "
        "text or a float32 .npy array)"));
  }
  auto config = lemrt::config::LoadConfig(FLAGS_config, FLAGS_override, world_size);
  if (!config.ok()) return config.status();
  if (absl::Status st = ScoreData(&*config); !st.ok()) return st;
  LEMRT_RETURN_IF_ERROR(CheckCheckpointSchema(*config));
  // Scoring needs no overlap of steps; one communicator serves both stages.
  config->mutable_sparse_core()->set_disable_full_embedding_pipelining(true);
  return config;
}

// "  ne X  calibration Y  gauc Z (G groups)": the metrics that are defined.
std::string MoreMetrics(const lemrt::runtime::EvalResult& e) {
  std::string out;
  if (!std::isnan(e.ne)) absl::StrAppendFormat(&out, "  ne %.6f", e.ne);
  if (!std::isnan(e.calibration)) absl::StrAppendFormat(&out, "  calibration %.6f", e.calibration);
  if (!std::isnan(e.gauc)) {
    absl::StrAppendFormat(&out, "  gauc %.6f (%d groups)", e.gauc, e.gauc_groups);
  }
  return out;
}

// One task's metrics line, `prefix` first ("task click: " or "").
void PrintMetrics(const std::string& prefix, const lemrt::runtime::EvalResult& r) {
  if (r.labelled > 0 && r.one_class) {
    std::printf("%sauc absent (%s)  logloss %.6f%s  (%ld labelled rows)\n", prefix.c_str(),
                lemrt::runtime::UndefinedMetricsReason(r).c_str(), r.logloss,
                MoreMetrics(r).c_str(), static_cast<long>(r.labelled));
  } else if (r.labelled > 0) {
    std::printf("%sauc %.6f  logloss %.6f%s  (%ld labelled rows)\n", prefix.c_str(), r.auc,
                r.logloss, MoreMetrics(r).c_str(), static_cast<long>(r.labelled));
  } else {
    std::printf("%sno labels: auc and logloss not computed\n", prefix.c_str());
  }
}

// Every step that can fail on one rank only is agreed before the next
// collective (Trainer::Create and Restore agree on theirs), so every rank
// ends with the same sentence; writing is rank 0's, after the collectives.
absl::Status Run(lemrt::runtime::Communicator& comm) {
  const int rank = comm.rank();
  const int world_size = comm.size();
  auto config = LoadScoringConfig(world_size);
  if (absl::Status st = lemrt::runtime::AgreeOnStatus(comm, config.status()); !st.ok()) return st;
  auto trainer = lemrt::runtime::Trainer::Create(*config, comm, comm);
  if (!trainer.ok()) return trainer.status();
  auto step = (*trainer)->Restore(FLAGS_checkpoint);
  if (!step.ok()) return step.status();
  lemrt::runtime::Predictions predictions;
  auto result = (*trainer)->Evaluate(&predictions);
  if (!result.ok()) return result.status();
  if (rank != 0) return absl::OkStatus();
  if (absl::Status st = Write(*config, predictions); !st.ok()) return st;
  const int64_t skipped = (*trainer)->data().skipped_lines();
  std::printf("scored %ld rows of %s with the checkpoint of step %ld on %d ranks -> %s\n",
              static_cast<long>(predictions.rows.size()), FLAGS_data.c_str(),
              static_cast<long>(*step), world_size, FLAGS_out.c_str());
  if (result->tasks.empty()) {
    PrintMetrics("", *result);
  } else {
    for (const auto& task : result->tasks) PrintMetrics(absl::StrCat("task ", task.task, ": "), task);
  }
  if (skipped > 0) std::printf("%ld malformed rows skipped on rank 0\n", static_cast<long>(skipped));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  lemrt::runtime::InstallOutOfMemoryHandler("lemrt_predict");
  lemrt::runtime::MpiSession mpi(&argc, &argv, lemrt::runtime::MpiThreads::kSerialized);
  gflags::SetUsageMessage(
      "mpirun -np N lemrt_predict --config=FILE --checkpoint=DIR --data=FILES --out=FILE.csv|.npy");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (mpi.rank() != 0) FLAGS_minloglevel = google::GLOG_WARNING;
  absl::Status st = mpi.Require(lemrt::runtime::MpiThreads::kSerialized, "lemrt_predict");
  if (st.ok()) {  // the communicator is freed before the session ends MPI
    // The communicator first: everything after it that can fail is agreed over it.
    auto comm = mpi.World();
    st = comm.ok() ? Run(**comm) : comm.status();
  }
  if (!st.ok()) std::fprintf(stderr, "lemrt_predict: error: %s\n", std::string(st.message()).c_str());
  return st.ok() ? 0 : 1;
}
