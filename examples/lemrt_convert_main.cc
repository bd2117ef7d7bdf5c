// lemrt_convert: converts a Criteo TSV file once into lemrt's binary format
// (host/binary_format.h), which lemrt_train reads through data { binary {} }.
//
//   lemrt_convert --tsv=train.txt --out=train.bin [--strict]
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "host/binary_format.h"
#include "host/binary_writer.h"

DEFINE_string(tsv, "", "Criteo TSV input (label, 13 integers, 26 hex categories per line).");
DEFINE_string(out, "", "Binary output file (written to OUT.tmp, then renamed).");
DEFINE_bool(strict, false, "Fail on the first malformed line instead of skipping it.");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("lemrt_convert --tsv=IN.tsv --out=OUT.bin [--strict]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (FLAGS_tsv.empty() || FLAGS_out.empty()) {
    std::fprintf(stderr, "usage: %s\n", gflags::ProgramUsage());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = lemrt::host::ConvertCriteoTsvToBinary(FLAGS_tsv, FLAGS_out, FLAGS_strict);
  if (!stats.ok()) {
    std::fprintf(stderr, "lemrt_convert: error: %s\n", std::string(stats.status().message()).c_str());
    return 1;
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double mb = (lemrt::host::kBinaryHeaderBytes +
                     stats->records * lemrt::host::kBinaryRecordBytes) / 1e6;
  std::printf("wrote %s: %ld records (%.1f MB), %ld malformed lines skipped, %.2f s\n",
              FLAGS_out.c_str(), static_cast<long>(stats->records), mb,
              static_cast<long>(stats->skipped_lines), sec);
  return 0;
}
