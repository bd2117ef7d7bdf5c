// lemrt_vocab: counts each feature's values in the training files of the
// config, over all ranks in parallel, and writes one vocabulary per feature
// (docs/data.md "Vocabularies"): the values seen at least --min_frequency
// times, most frequent first (ties by value), one "value<TAB>count" per line —
// what data.schema.sparse { mapping: VOCABULARY vocabulary_file: ... } reads,
// with num_oov_buckets rows in front for the rest (NVTabular's
// Categorify(freq_threshold), Keras' IntegerLookup(num_oov_indices)).
//
//   mpirun -np N lemrt_vocab --config=model.pbtxt --out_dir=vocab
//       [--min_frequency=1] [--max_size=0] [--features=a,b] [--override=TEXT]
//
// Rank r counts rows [r R / N, (r + 1) R / N) of the R training rows; rank 0
// merges the counts (it holds every distinct value once: ~40 bytes + the
// value's text each) and writes <out_dir>/<feature>.txt. Mappings and sizes
// the config already takes from vocabularies are ignored while counting, so
// a config may name the files it is about to get.
//
// With dense inputs in data.schema (or the CRITEO preset's I1..I13) it also
// writes <out_dir>/dense_stats.pbtxt:
// those dense lines with the mean, stddev (STANDARDIZE, also for inputs with
// no normalization) or minimum and maximum (MIN_MAX) of the training rows'
// present values after transform and clip, merged over the ranks in rank
// order (host/dense_stats.h); the lines replace the config's dense lines.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "host/input/dense_stats.h"
#include "host/input/source_registry.h"
#include "proto/config_loader.h"
#include "runtime/checkpoint/durable_files.h"
#include "proto/criteo_preset.h"
#include "runtime/comm/mpi_session.h"
#include "tools/tool_help.h"

DEFINE_string(config, "", "Run config whose training files and schema are counted (required).");
DEFINE_string(override, "", "Text proto merged into the config (as lemrt_train's).");
DEFINE_string(out_dir, "",
              "Directory for the <feature>.txt vocabularies (created with its parents, like "
              "mkdir -p).");
DEFINE_int64(min_frequency, 1, "Keep values seen at least this many times (>= 1).");
DEFINE_int64(max_size, 0, "Keep at most this many values per feature (0 = no limit).");
DEFINE_string(features, "", "Comma-separated features to count (default: all).");

namespace {

using lemrt::config::RunConfig;
using lemrt::host::ValueType;

struct Entry {
  int64_t count = 0;
  std::string text;
};
using Counts = absl::flat_hash_map<uint64_t, Entry>;

// What counting changes in the config: vocabulary mappings turned into
// hashing and vocabulary-sized tables given a placeholder size (and
// normalizations without their statistics placeholder ones), so that it
// loads before the files exist. Counting trains nothing, so the config is
// checked as for one chip: any number of ranks can count (each takes its
// own share of the rows). A config without data.schema gets none.
void RelaxForCounting(RunConfig* raw) {
  raw->mutable_topology()->clear_num_chips();
  for (auto& t : *raw->mutable_tables()) {
    if (!t.has_vocab_size()) t.set_vocab_size(1);
  }
  if (!raw->data().has_schema()) return;
  for (auto& in : *raw->mutable_data()->mutable_schema()->mutable_sparse()) {
    if (in.mapping() != lemrt::config::SparseInput::VOCABULARY) continue;
    in.set_mapping(lemrt::config::SparseInput::HASH);
    in.clear_vocabulary_file();
  }
  // Normalizations waiting for the statistics this run computes: placeholder
  // ones (counting does not normalize; the written lines carry the real ones).
  for (auto& d : *raw->mutable_data()->mutable_schema()->mutable_dense()) {
    if (d.normalize() == lemrt::config::DenseInput::STANDARDIZE) {
      if (!d.has_mean()) d.set_mean(0);
      if (!d.has_stddev()) d.set_stddev(1);
    } else if (d.normalize() == lemrt::config::DenseInput::MIN_MAX) {
      if (!d.has_minimum()) d.set_minimum(0);
      if (!d.has_maximum()) d.set_maximum(d.minimum() + 1);
    }
  }
}

// The config to count, relaxed (RelaxForCounting) inside the loader, so that
// its errors name the line of the config file or of --override that set the
// field. InvalidArgument for synthetic data: it has no values to count.
absl::StatusOr<RunConfig> LoadForCounting() {
  constexpr int kOneChip = 1;
  LEMRT_ASSIGN_OR_RETURN(RunConfig config, lemrt::config::LoadConfig(FLAGS_config, FLAGS_override,
                                                                     kOneChip, RelaxForCounting));
  if (lemrt::host::FormatOf(config.data()).open_split == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config '", FLAGS_config,
        "' has synthetic data, which has no values to count; lemrt_vocab counts the values of "
        "file data (data { text, criteo, tfrecord or binary { train_path: ... } })."));
  }
  return config;
}

std::string TextOf(uint64_t key, ValueType type, const std::vector<std::string>& texts, size_t i) {
  switch (type) {
    case ValueType::kInt64:
      return absl::StrCat(static_cast<int64_t>(key));
    case ValueType::kHex:  // as read; binary files keep no text
      return i < texts.size() ? texts[i] : absl::StrFormat("%x", key);
    case ValueType::kString:
    default:
      return i < texts.size() ? texts[i] : std::string();
  }
}

// Counts this rank's share of the training rows into counts[column].
absl::Status CountShare(const RunConfig& config, int rank, int world_size,
                        const std::vector<int>& columns, std::vector<Counts>* counts,
                        std::vector<lemrt::host::DenseMoments>* moments, int64_t* rows,
                        int64_t* skipped) {
  auto schema = lemrt::host::ResolveSchema(config);
  if (!schema.ok()) return schema.status();
  const lemrt::host::SourceFormat& format = lemrt::host::FormatOf(config.data());
  if (format.open_split == nullptr) {
    return absl::InvalidArgumentError("the config's data source has no files (synthetic data)");
  }
  auto split = format.open_split(config, *schema, lemrt::host::Split::kTrain);
  if (!split.ok()) return split.status();
  if (split->records == nullptr) return absl::InvalidArgumentError("the config names no training files");
  for (int c : columns) {
    if ((*schema)->sparse[c].type == ValueType::kString && config.data().has_binary()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sparse input '", (*schema)->sparse[c].key,
          "' is STRING: binary files keep only its fingerprints; count it from the text or "
          "TFRecord files it was converted from"));
    }
  }
  split->parser->set_keep_text(true);
  lemrt::host::RecordSet& records = *split->records;
  const int64_t n = records.num_records();
  const int64_t begin = n / world_size * rank + n % world_size * rank / world_size;
  const int64_t end = n / world_size * (rank + 1) + n % world_size * (rank + 1) / world_size;
  lemrt::host::RecordBatch chunk;
  lemrt::host::ParsedSample sample;
  for (int64_t first = begin; first < end; first += 4096) {
    const int64_t count = std::min<int64_t>(4096, end - first);
    chunk.Clear();
    if (absl::Status st = records.Read(first, count, &chunk); !st.ok()) return st;
    for (int64_t i = 0; i < count; ++i) {
      const absl::Status st = records.truncated(first + i)
                                  ? absl::InvalidArgumentError("the last line has no newline")
                                  : split->parser->Parse(chunk[i], &sample);
      if (!st.ok()) {
        if (format.strict(config)) {
          return absl::InvalidArgumentError(
              absl::StrCat(records.Where(first + i), ": ", st.message(), "."));
        }
        if (++*skipped <= 10) LOG(WARNING) << records.Where(first + i) << ": " << st.message();
        continue;
      }
      ++*rows;
      lemrt::host::AccumulateDense(**schema, sample, moments);
      for (int c : columns) {
        const std::vector<uint64_t>& values = sample.values[c];
        for (size_t k = 0; k < values.size(); ++k) {
          Entry& e = (*counts)[c][values[k]];
          if (e.count++ == 0) e.text = TextOf(values[k], (*schema)->sparse[c].type, sample.texts[c], k);
        }
      }
    }
  }
  return absl::OkStatus();
}

// Every rank's counts of `column` summed on rank 0 (one Gather; 64-bit sizes).
absl::Status MergeOnRankZero(lemrt::runtime::Communicator& comm, Counts* counts) {
  std::string bytes;
  if (comm.rank() != 0) {
    for (const auto& [key, e] : *counts) {
      const uint32_t len = static_cast<uint32_t>(e.text.size());
      bytes.append(reinterpret_cast<const char*>(&key), 8);
      bytes.append(reinterpret_cast<const char*>(&e.count), 8);
      bytes.append(reinterpret_cast<const char*>(&len), 4);
      bytes += e.text;
    }
  }
  std::vector<char> all;
  if (absl::Status st = comm.Gather<char>(bytes, /*root=*/0, &all); !st.ok()) return st;
  for (size_t p = 0; p + 20 <= all.size();) {
    uint64_t key;
    int64_t count;
    uint32_t len;
    std::memcpy(&key, all.data() + p, 8);
    std::memcpy(&count, all.data() + p + 8, 8);
    std::memcpy(&len, all.data() + p + 16, 4);
    Entry& e = (*counts)[key];
    if (e.count == 0) e.text.assign(all.data() + p + 20, len);
    e.count += count;
    p += 20 + len;
  }
  return absl::OkStatus();
}

absl::Status WriteVocabulary(const std::string& feature, const Counts& counts, int64_t rows) {
  std::vector<const Entry*> kept;
  int64_t occurrences = 0, covered = 0, unwritable = 0;
  for (const auto& [key, e] : counts) {
    occurrences += e.count;
    // A line holds one value: values with a tab or a line break cannot be written.
    if (e.text.find_first_of("\t\r\n") != std::string::npos || e.text.empty()) {
      ++unwritable;
      continue;
    }
    if (e.count >= FLAGS_min_frequency) kept.push_back(&e);
  }
  if (unwritable > 0) {
    std::printf("%s: %ld values hold a tab or a line break and are left out (they stay OOV)\n",
                feature.c_str(), static_cast<long>(unwritable));
  }
  std::sort(kept.begin(), kept.end(), [](const Entry* a, const Entry* b) {
    return a->count != b->count ? a->count > b->count : a->text < b->text;
  });
  if (FLAGS_max_size > 0 && static_cast<int64_t>(kept.size()) > FLAGS_max_size) {
    kept.resize(FLAGS_max_size);
  }
  const std::string path = absl::StrCat(FLAGS_out_dir, "/", feature, ".txt");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
    for (const Entry* e : kept) {
      out << e->text << '\t' << e->count << '\n';
      covered += e->count;
    }
    if (!out.flush()) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  std::printf("%s: %zu of %zu distinct values kept (min frequency %ld): they cover %.2f%% of the "
              "%ld values in %ld rows (OOV rate %.2f%%) -> %s\n",
              feature.c_str(), kept.size(), counts.size(), static_cast<long>(FLAGS_min_frequency),
              occurrences ? 100.0 * covered / occurrences : 100.0, static_cast<long>(occurrences),
              static_cast<long>(rows),
              occurrences ? 100.0 * (occurrences - covered) / occurrences : 0.0, path.c_str());
  return absl::OkStatus();
}

// Every rank's dense moments merged on rank 0, in rank order.
absl::Status MergeMomentsOnRankZero(lemrt::runtime::Communicator& comm,
                                    std::vector<lemrt::host::DenseMoments>* moments) {
  constexpr int kFields = 6;
  std::vector<double> mine;
  for (const lemrt::host::DenseMoments& m : *moments) {
    mine.insert(mine.end(), {static_cast<double>(m.count), static_cast<double>(m.missing), m.mean,
                             m.m2, m.min, m.max});
  }
  std::vector<double> all;
  LEMRT_RETURN_IF_ERROR(comm.Gather<double>(mine, /*root=*/0, &all));
  if (comm.rank() != 0) return absl::OkStatus();
  for (size_t k = 0; k < moments->size(); ++k) {
    lemrt::host::DenseMoments merged;
    for (int r = 0; r < comm.size(); ++r) {
      const double* f = all.data() + (r * moments->size() + k) * kFields;
      merged.Merge({static_cast<int64_t>(f[0]), static_cast<int64_t>(f[1]), f[2], f[3], f[4],
                    f[5]});
    }
    (*moments)[k] = merged;
  }
  return absl::OkStatus();
}

// <out_dir>/dense_stats.pbtxt: the config's dense lines with the statistics
// of their normalization (host/dense_stats.h), also printed.
absl::Status WriteDenseStats(const lemrt::config::InputSchema& schema,
                             const std::vector<lemrt::host::DenseMoments>& moments) {
  const std::string lines = lemrt::host::DenseStatsLines(schema, moments);
  const std::string path = absl::StrCat(FLAGS_out_dir, "/dense_stats.pbtxt");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# lemrt_vocab: dense inputs with the statistics of the training rows; these lines\n"
           "# replace the dense lines of data.schema.\n"
        << lines;
    if (!out.flush()) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  std::printf("dense inputs -> %s:\n%s", path.c_str(), lines.c_str());
  return absl::OkStatus();
}

// The dense lines dense_stats.pbtxt is written from: the config's, or with
// the CRITEO preset its composed inputs (the first `inputs`, those the
// moments are of), the preset's own without their column, so that the lines
// override them by name.
lemrt::config::InputSchema DenseLinesOf(const RunConfig& config, size_t inputs) {
  if (!lemrt::config::UsesCriteoPreset(config)) return config.data().schema();
  lemrt::config::InputSchema lines = lemrt::config::ExpandCriteoPreset(config);
  while (static_cast<size_t>(lines.dense_size()) > inputs) lines.mutable_dense()->RemoveLast();
  for (lemrt::config::DenseInput& d : *lines.mutable_dense()) {
    if (lemrt::config::CriteoColumnOf(d.name()) == d.column()) d.clear_column();
  }
  return lines;
}

// This rank's counts of the columns the wanted features read.
struct Share {
  std::vector<Counts> counts;  // per sparse column
  std::vector<int> columns;
  std::vector<std::pair<std::string, int>> outputs;  // feature, column
  std::vector<lemrt::host::DenseMoments> moments;    // per dense input
  lemrt::config::InputSchema schema;                  // the config's, for the dense lines
  int64_t rows = 0, skipped = 0;
};

// Creates --out_dir and its missing parents (as mkdir -p) and checks that a
// file can be created in it.
absl::Status PrepareOutDir(const std::string& dir) {
  const std::string prefix =
      absl::StrCat("cannot write the vocabularies into --out_dir=", dir, ": ");
  LEMRT_RETURN_IF_ERROR(lemrt::checkpoint::MakeDirs(dir, prefix));
  std::string probe = absl::StrCat(dir, "/.lemrt_vocab.XXXXXX");
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "no file can be created in it: ", std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

absl::Status CountThisRank(int rank, int world_size, Share* share) {
  if (FLAGS_config.empty() || FLAGS_out_dir.empty()) {
    return absl::InvalidArgumentError("--config and --out_dir are required");
  }
  if (FLAGS_min_frequency < 1) return absl::InvalidArgumentError("--min_frequency must be >= 1");
  if (FLAGS_max_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--max_size must be >= 0 (0 keeps every value), got %d", FLAGS_max_size));
  }
  auto config = LoadForCounting();
  if (!config.ok()) return config.status();
  const std::vector<std::string> wanted = absl::StrSplit(FLAGS_features, ',', absl::SkipEmpty());
  auto schema = lemrt::host::ResolveSchema(*config);
  if (!schema.ok()) return schema.status();
  for (const auto& f : (*schema)->features) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), f.name) == wanted.end()) continue;
    share->outputs.push_back({f.name, f.sparse});
    if (std::find(share->columns.begin(), share->columns.end(), f.sparse) == share->columns.end()) {
      share->columns.push_back(f.sparse);
    }
  }
  for (const std::string& w : wanted) {
    if (std::none_of(share->outputs.begin(), share->outputs.end(),
                     [&](const auto& o) { return o.first == w; })) {
      return absl::InvalidArgumentError(
          absl::StrCat("--features: '", w, "' is not a feature of the config"));
    }
  }
  share->counts.resize((*schema)->sparse.size());
  share->moments.resize((*schema)->dense.size());
  share->schema = DenseLinesOf(*config, (*schema)->dense.size());
  // Before the counting, which can take long: rank 0 writes the files.
  if (rank == 0) LEMRT_RETURN_IF_ERROR(PrepareOutDir(FLAGS_out_dir));
  return CountShare(*config, rank, world_size, share->columns, &share->counts, &share->moments,
                    &share->rows, &share->skipped);
}

// Collective; every rank returns the same status up to the writing on rank 0.
absl::Status Run(lemrt::runtime::Communicator& comm) {
  const int rank = comm.rank();
  const int world_size = comm.size();
  Share share;
  // Agree before the gathers: an error on one rank (its unreadable config or
  // file) stops every rank with the same sentence.
  if (absl::Status st = lemrt::runtime::AgreeOnStatus(
          comm, CountThisRank(rank, world_size, &share));
      !st.ok()) {
    return st;
  }
  int64_t sums[2] = {share.rows, share.skipped};
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(sums, 2)));
  absl::Status merged;
  for (int c : share.columns) {
    const absl::Status m = MergeOnRankZero(comm, &share.counts[c]);
    if (merged.ok()) merged = m;
  }
  if (absl::Status m = MergeMomentsOnRankZero(comm, &share.moments); merged.ok()) merged = m;
  if (!merged.ok() || rank != 0) return merged;
  for (const auto& [feature, column] : share.outputs) {
    if (absl::Status w = WriteVocabulary(feature, share.counts[column], sums[0]); !w.ok()) return w;
  }
  if (share.schema.dense_size() > 0) {
    if (absl::Status w = WriteDenseStats(share.schema, share.moments); !w.ok()) return w;
  }
  if (sums[1] > 0) std::printf("%ld malformed rows skipped\n", static_cast<long>(sums[1]));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  lemrt::runtime::MpiSession mpi(&argc, &argv, lemrt::runtime::MpiThreads::kFunneled);
  gflags::SetUsageMessage("mpirun -np N lemrt_vocab --config=FILE --out_dir=DIR [--min_frequency=K]");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (mpi.rank() != 0) FLAGS_minloglevel = google::GLOG_WARNING;
  absl::Status st = mpi.Require(lemrt::runtime::MpiThreads::kFunneled, "lemrt_vocab");
  if (st.ok()) {  // the communicator is freed before the session ends MPI
    auto comm = mpi.World();
    st = comm.ok() ? Run(**comm) : comm.status();
  }
  if (!st.ok()) std::fprintf(stderr, "lemrt_vocab: error: %s\n", std::string(st.message()).c_str());
  return st.ok() ? 0 : 1;
}
