// lemrt_ckpt: looks into lemrt checkpoints (no MPI needed).
//
//   lemrt_ckpt inspect DIR [--full]     the manifest: step, world size, tables
//   lemrt_ckpt verify DIR               checks every file's size, row ids, checksum
//   lemrt_ckpt export DIR --table=NAME --out=FILE.npy [--slots]
//                                       one logical table as a [vocab x dim]
//                                       float32 .npy (--slots: its optimizer
//                                       slots, [vocab x slot floats per row])
//   lemrt_ckpt export DIR --task=NAME --out=FILE.npy
//                                       a multi-task model's head of task NAME
//                                       (its top MLP's parameters, laid out as
//                                       device/tensorcore/mlp.h says) as a
//                                       [params x 1] float32 .npy
//   lemrt_ckpt import DIR --table=NAME --npy=FILE.npy
//                                       replaces the table's rows with a
//                                       [vocab x dim] float32 .npy (pretrained
//                                       rows); rewrites DIR's step atomically
//
// DIR is a step directory or a directory of them (the newest complete one).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "device/tensorcore/dense_model.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/npy.h"
#include "runtime/checkpoint/step_dirs.h"
#include "runtime/checkpoint/table_import.h"
#include "runtime/output_paths.h"
#include "tools/tool_help.h"

DEFINE_string(table, "", "export, import: the logical table to write or replace.");
DEFINE_string(task, "", "export: the task (model.tasks name) whose head to write, instead of a table.");
DEFINE_string(out, "", "export: the .npy file to write.");
DEFINE_string(npy, "", "import: the [vocab x dim] float32 .npy file of the table's new rows.");
DEFINE_bool(slots, false, "export: write the table's optimizer slots instead of its weights.");
DEFINE_bool(full, false, "inspect: print the whole manifest, with every file entry.");

namespace lemrt::checkpoint {
namespace {

absl::Status Inspect(const std::string& dir, const Manifest& m) {
  std::printf("checkpoint   %s\n", dir.c_str());
  std::printf("step         %ld (next step %ld, %ld samples consumed, %s data)\n",
              static_cast<long>(m.step()), static_cast<long>(m.data().next_step()),
              static_cast<long>(m.data().samples_consumed()), m.data().source().c_str());
  std::printf("saved on     %d ranks x %d SparseCores (N = %d)\n", m.world_size(),
              m.sparse_cores_per_chip(), m.total_sparse_cores());
  std::printf("batch, seed  %ld, %lu\n", static_cast<long>(m.global_batch()),
              static_cast<unsigned long>(m.seed()));
  std::printf("checksum     %s\n", m.model_checksum().c_str());
  std::printf("%-16s %12s %5s %-15s %12s\n", "table", "rows", "dim", "optimizer", "bytes");
  for (const TableEntry& t : m.tables()) {
    int64_t bytes = 0;
    for (const FileEntry& f : t.files()) bytes += f.bytes();
    std::printf("%-16s %12ld %5d %-15s %12ld\n", t.name().c_str(),
                static_cast<long>(t.vocab_size()), t.dim(), t.optimizer().c_str(),
                static_cast<long>(bytes));
  }
  std::printf("%-16s %12ld %5s %-15s %12ld\n", "(dense)", static_cast<long>(m.dense().num_params()),
              "", m.dense().optimizer().c_str(), static_cast<long>(m.dense().file().bytes()));
  if (FLAGS_full) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(m, &text);
    std::printf("\n%s", text.c_str());
  }
  return absl::OkStatus();
}

// Where task `task`'s head sits in the dense parameters of the model
// `config` describes: the heads are the last parameters, one per task in
// task order (device/tensorcore/task_heads.h).
struct HeadRange {
  int64_t offset = 0;  // of the head's first parameter
  int64_t count = 0;   // the head's parameters
  int64_t total = 0;   // the model's dense parameters
};

absl::StatusOr<HeadRange> FindHead(const config::RunConfig& config, const std::string& task) {
  std::vector<std::string> names;
  int t = -1;
  for (int i = 0; i < config.model().tasks_size(); ++i) {
    names.push_back(config.model().tasks(i).name());
    if (names.back() == task) t = i;
  }
  if (t < 0) {
    return absl::NotFoundError(
        names.empty() ? "the checkpoint's model has one task (no model.tasks); its head is in "
                        "the dense parameters"
                      : absl::StrCat("the checkpoint's model has no task '", task,
                                     "'; its tasks: ", absl::StrJoin(names, ", ")));
  }
  device::DenseModelSpec spec = device::DenseModelSpecFromConfig(config);
  LEMRT_ASSIGN_OR_RETURN(const int64_t all, device::CountDenseParams(spec));
  spec.shape.task_weights = {1.0f};
  LEMRT_ASSIGN_OR_RETURN(const int64_t one, device::CountDenseParams(spec));
  const int64_t head = all - one;  // one more head than the single-task model
  return HeadRange{
      .offset = all - (config.model().tasks_size() - t) * head, .count = head, .total = all};
}

absl::Status ExportHead(const std::string& dir, const Manifest& m) {
  config::RunConfig saved;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  if (!m.has_config_text() || !parser.ParseFromString(m.config_text(), &saved)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint '", dir, "' holds no readable run config to find the heads by"));
  }
  LEMRT_ASSIGN_OR_RETURN(const HeadRange range, FindHead(saved, FLAGS_task));
  if (range.total != m.dense().num_params()) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint '%s' has %d dense parameters, but its config's model has %d", dir,
        m.dense().num_params(), range.total));
  }
  LEMRT_ASSIGN_OR_RETURN(MappedFile mapped, OpenVerified(dir, m.dense().file()));
  std::vector<float> head(range.count);
  std::memcpy(head.data(), mapped.bytes().data() + 4 * range.offset, 4 * head.size());
  LEMRT_RETURN_IF_ERROR(WriteNpy(FLAGS_out, range.count, 1, head));
  std::printf("wrote %s: task '%s' head, %ld float32 (dense parameters %ld..%ld)\n",
              FLAGS_out.c_str(), FLAGS_task.c_str(), static_cast<long>(range.count),
              static_cast<long>(range.offset), static_cast<long>(range.offset + range.count - 1));
  return absl::OkStatus();
}

absl::Status Export(const std::string& dir, const Manifest& m) {
  if (!FLAGS_table.empty() && !FLAGS_task.empty()) {
    return absl::InvalidArgumentError(
        "export: --table and --task exclude each other (--table writes a table's rows, --task a "
        "task's head); give one");
  }
  if (!FLAGS_task.empty() && FLAGS_slots) {
    return absl::InvalidArgumentError("export: --slots is for a --table (a task's head has none)");
  }
  if (FLAGS_table.empty() == FLAGS_task.empty() || FLAGS_out.empty()) {
    return absl::InvalidArgumentError(
        "export needs --table=NAME (or --task=NAME) and --out=FILE.npy");
  }
  // Before the table is read (it can be large): a directory or a missing
  // directory named by --out fails with a sentence naming the flag.
  LEMRT_RETURN_IF_ERROR(runtime::CheckOutputFile(FLAGS_out, "--out"));
  if (!FLAGS_task.empty()) return ExportHead(dir, m);
  for (const TableEntry& t : m.tables()) {
    if (t.name() == FLAGS_table && FLAGS_slots && SlotFloatsPerRecord(t) == 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "export --slots: table '%s' has no optimizer slots (its optimizer, %s, keeps none); "
          "export its weights without --slots",
          t.name(), t.optimizer()));
    }
  }
  std::vector<float> weights, slots;
  LEMRT_RETURN_IF_ERROR(
      ReadWholeTable(dir, m, FLAGS_table, &weights, FLAGS_slots ? &slots : nullptr));
  for (const TableEntry& t : m.tables()) {
    if (t.name() != FLAGS_table) continue;
    const int64_t cols = FLAGS_slots ? SlotFloatsPerRecord(t) : t.dim();
    LEMRT_RETURN_IF_ERROR(WriteNpy(FLAGS_out, t.vocab_size(), cols, FLAGS_slots ? slots : weights));
    std::printf("wrote %s: table '%s' %s, %ld x %ld float32\n", FLAGS_out.c_str(), t.name().c_str(),
                FLAGS_slots ? "slots" : "weights", static_cast<long>(t.vocab_size()),
                static_cast<long>(cols));
  }
  return absl::OkStatus();
}

absl::Status Import(const std::string& dir) {
  if (FLAGS_table.empty() || FLAGS_npy.empty()) {
    return absl::InvalidArgumentError("import needs --table=NAME and --npy=FILE.npy");
  }
  LEMRT_ASSIGN_OR_RETURN(const ImportResult r, ImportTable(dir, FLAGS_table, FLAGS_npy));
  std::printf("imported %s into table '%s' of %s (model checksum %s)\n", FLAGS_npy.c_str(),
              FLAGS_table.c_str(), r.step_dir.c_str(), r.model_checksum.c_str());
  return absl::OkStatus();
}

absl::Status Main(const std::string& command, const std::string& dir_arg) {
  if (command == "import") return Import(dir_arg);
  LEMRT_ASSIGN_OR_RETURN(const std::string dir, ResolveCheckpointDir(dir_arg));
  LEMRT_ASSIGN_OR_RETURN(const Manifest m, ReadManifest(dir));
  if (command == "inspect") return Inspect(dir, m);
  if (command == "verify") {
    LEMRT_RETURN_IF_ERROR(VerifyCheckpoint(dir, m));
    std::printf("ok: %s (step %ld): every file matches the manifest\n", dir.c_str(),
                static_cast<long>(m.step()));
    return absl::OkStatus();
  }
  if (command == "export") return Export(dir, m);
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown command '%s'; use inspect, verify, export or import", command));
}

}  // namespace
}  // namespace lemrt::checkpoint

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "lemrt_ckpt inspect DIR [--full] | verify DIR | export DIR --table=NAME|--task=NAME "
      "--out=FILE.npy [--slots] | import DIR --table=NAME --npy=FILE.npy");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s\n", gflags::ProgramUsage());
    return 2;
  }
  const absl::Status st = lemrt::checkpoint::Main(argv[1], argv[2]);
  if (!st.ok()) {
    std::fprintf(stderr, "lemrt_ckpt: error: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
