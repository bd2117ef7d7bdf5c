// lemrt_convert: converts one split of the config's file source (delimited
// text, Criteo TSV, TFRecord, or binary) once into lemrt's checksummed
// binary format (host/formats/binary_format.h), which lemrt_train then reads through
// data { binary { ... } } with the same data.schema (docs/data.md). A
// synthetic source's rows are exported (the run's training.steps x
// global_batch rows, or training.eval_samples), and the data section that
// trains from them is printed on a line of its own after "override: ".
//
//   lemrt_convert --config=model.pbtxt [--split=train|eval] --out=train.bin
//   lemrt_convert --tsv=train.txt --out=train.bin [--strict]   (Criteo TSV)
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/text_file.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "host/formats/binary_writer.h"
#include "proto/config_loader.h"
#include "tools/tool_help.h"

DEFINE_string(config, "", "Run config whose data section names the files and their schema.");
DEFINE_string(override, "", "Text proto merged into the config (as lemrt_train's).");
DEFINE_string(split, "train", "Which files of the config to convert: train or eval.");
DEFINE_string(tsv, "", "A Criteo TSV file to convert instead of --config's files.");
DEFINE_string(out, "", "Binary output file (written to OUT.tmp, then renamed).");
DEFINE_bool(strict, false, "--tsv: fail on the first malformed line instead of skipping it.");

namespace {

// The config's own topology.num_chips, so that loading it for one process
// passes the world-size check.
absl::StatusOr<lemrt::config::RunConfig> Load() {
  absl::StatusOr<std::string> text =
      lemrt::base::ReadTextFile(FLAGS_config, lemrt::config::kMaxConfigBytes, "config file");
  if (!text.ok()) return text.status();
  lemrt::config::RunConfig raw;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  (void)parser.ParseFromString(*text, &raw);
  const int world = raw.topology().has_num_chips() ? raw.topology().num_chips() : 1;
  return lemrt::config::ParseConfig(*text, FLAGS_config, FLAGS_override, world);
}

absl::StatusOr<lemrt::host::ConvertStats> Convert() {
  if (!FLAGS_tsv.empty()) {
    lemrt::config::RunConfig config;
    config.mutable_model()->set_num_dense_features(13);
    config.mutable_data()->mutable_criteo()->set_train_path(FLAGS_tsv);
    config.mutable_data()->mutable_criteo()->set_strict(FLAGS_strict);
    return lemrt::host::ConvertToBinary(config, lemrt::host::Split::kTrain, FLAGS_out);
  }
  if (FLAGS_split != "train" && FLAGS_split != "eval") {
    return absl::InvalidArgumentError(
        absl::StrCat("--split is '", FLAGS_split, "'; use train or eval"));
  }
  auto config = Load();
  if (!config.ok()) return config.status();
  return lemrt::host::ConvertToBinary(
      *config, FLAGS_split == "train" ? lemrt::host::Split::kTrain : lemrt::host::Split::kEval,
      FLAGS_out);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "lemrt_convert --config=FILE [--split=train|eval] --out=OUT.bin\n"
      "       lemrt_convert --tsv=CRITEO.tsv --out=OUT.bin [--strict]");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  const char* wrong = nullptr;
  if (!FLAGS_tsv.empty() && !FLAGS_config.empty()) {
    wrong =
        "--tsv and --config exclude each other: --tsv converts one Criteo TSV file, --config "
        "the files of the config's data section";
  } else if (FLAGS_tsv.empty() && FLAGS_config.empty()) {
    wrong = "give --config=FILE (the config's data files) or --tsv=FILE (a Criteo TSV file)";
  } else if (FLAGS_out.empty()) {
    wrong = "--out=OUT.bin is required";
  }
  if (wrong != nullptr) {
    std::fprintf(stderr, "lemrt_convert: error: %s\nusage: %s\n", wrong, gflags::ProgramUsage());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = Convert();
  if (!stats.ok()) {
    std::fprintf(stderr, "lemrt_convert: error: %s\n", std::string(stats.status().message()).c_str());
    return 1;
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %ld records (%.1f MB), %ld malformed lines skipped, %.2f s\n",
              FLAGS_out.c_str(), static_cast<long>(stats->records), stats->bytes / 1e6,
              static_cast<long>(stats->skipped_lines), sec);
  if (!stats->synthetic_schema.empty()) {
    std::printf("override: data { binary { %s_path: \"%s\" } schema { %s } }\n",
                FLAGS_split.c_str(), FLAGS_out.c_str(), stats->synthetic_schema.c_str());
  }
  return 0;
}
