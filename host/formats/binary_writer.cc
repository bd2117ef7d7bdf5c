#include "host/formats/binary_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "host/input/batch_filler.h"
#include "host/formats/binary_format.h"
#include "host/formats/binary_parser.h"
#include "host/input/synthetic_source.h"

namespace lemrt::host {
namespace {

constexpr int64_t kReadChunk = 4096;

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

// Whether `a` and `b` name one existing file.
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void EncodeRecord(const ParsedSample& s, const Schema& schema, std::string* out) {
  for (const float label : s.labels) AppendPod(out, label);  // NaN: a missing optional label
  for (size_t k = 0; k < schema.dense.size(); ++k) {
    if (!schema.dense[k].absent) AppendPod(out, s.dense[k]);
  }
  for (size_t c = 0; c < schema.sparse.size(); ++c) {
    const std::vector<uint64_t>& values = s.values[c];
    AppendPod(out, static_cast<uint32_t>(values.size()));
    out->append(reinterpret_cast<const char*>(values.data()), 8 * values.size());
    if (schema.sparse[c].weighted()) {
      out->append(reinterpret_cast<const char*>(s.weights[c].data()), 4 * s.weights[c].size());
    }
  }
}

class BlockWriter {
 public:
  BlockWriter(FILE* out, std::string path) : out_(out), path_(std::move(path)) {}

  absl::Status Add(const std::string& record) {
    records_ += record;
    ends_.push_back(static_cast<uint32_t>(records_.size()));
    if (ends_.size() == kBinaryRecordsPerBlock) return Flush();
    return absl::OkStatus();
  }
  absl::Status Flush() {
    if (ends_.empty()) return absl::OkStatus();
    if (records_.size() > UINT32_MAX) {
      return absl::InvalidArgumentError("a block of 1024 rows holds more than 4 GiB");
    }
    BinaryBlock b;
    b.offset = offset_;
    b.records = static_cast<uint32_t>(ends_.size());
    b.bytes = static_cast<int64_t>(4 * ends_.size() + records_.size());
    b.crc = base::Crc32c(records_.data(), records_.size(),
                         base::Crc32c(ends_.data(), 4 * ends_.size()));
    LEMRT_RETURN_IF_ERROR(Write(ends_.data(), 4 * ends_.size()));
    LEMRT_RETURN_IF_ERROR(Write(records_.data(), records_.size()));
    index_.resize(index_.size() + kBinaryIndexEntryBytes);
    EncodeBinaryBlock(b, index_.data() + index_.size() - kBinaryIndexEntryBytes);
    ++blocks_;
    records_.clear();
    ends_.clear();
    return absl::OkStatus();
  }
  absl::Status Write(const void* data, size_t n) {
    if (std::fwrite(data, 1, n, out_) != n) {
      return absl::InternalError(absl::StrCat("cannot write '", path_, "' (disk full?)."));
    }
    offset_ += static_cast<int64_t>(n);
    return absl::OkStatus();
  }
  int64_t offset() const { return offset_; }
  int64_t blocks() const { return blocks_; }
  const std::string& index() const { return index_; }

 private:
  FILE* out_;
  std::string path_;
  std::string records_;
  std::vector<uint32_t> ends_;
  std::string index_;
  int64_t offset_ = 0;
  int64_t blocks_ = 0;
};

absl::Status Publish(FILE* f, const std::string& tmp, const std::string& out_path) {
  if (std::fflush(f) != 0 || fsync(fileno(f)) != 0) {
    return absl::InternalError(absl::StrCat("cannot write '", tmp, "' (disk full?)."));
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot rename '", tmp, "' to '", out_path, "'"));
  }
  const size_t slash = out_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : out_path.substr(0, slash + 1);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  return absl::OkStatus();
}

// Every valid row of `input`, in order, into `writer`; malformed rows are
// skipped (counted) or, with `strict`, an error naming file:line.
absl::Status WriteRows(SplitReader& input, const std::shared_ptr<const Schema>& schema,
                       bool strict, BlockWriter& writer, ConvertStats* stats) {
  RecordSet& records = *input.records;
  BatchFiller checks(schema);
  ParsedSample sample;
  RecordBatch chunk;
  std::string record;
  for (int64_t first = 0; first < records.num_records(); first += kReadChunk) {
    const int64_t n = std::min(kReadChunk, records.num_records() - first);
    chunk.Clear();
    LEMRT_RETURN_IF_ERROR(records.Read(first, n, &chunk));
    for (int64_t i = 0; i < n; ++i) {
      absl::Status st = records.truncated(first + i)
                            ? absl::InvalidArgumentError("the last line has no newline")
                            : input.parser->Parse(chunk[i], &sample);
      if (st.ok()) st = checks.Check(sample);
      if (!st.ok()) {
        const std::string where = records.Where(first + i);
        if (strict) return absl::InvalidArgumentError(absl::StrCat(where, ": ", st.message(), "."));
        ++stats->skipped_lines;
        if (stats->skipped_lines <= 10 || stats->skipped_lines % 1000 == 0) {
          LOG(WARNING) << where << ": " << st.message() << "; skipping the line ("
                       << stats->skipped_lines << " skipped so far).";
        }
        continue;
      }
      record.clear();
      EncodeRecord(sample, *schema, &record);
      LEMRT_RETURN_IF_ERROR(writer.Add(record));
      ++stats->records;
    }
  }
  if (stats->records == 0) {
    return absl::InvalidArgumentError(absl::StrCat(records.Describe(), " has no valid line."));
  }
  return writer.Flush();
}

// The columns, the index and the header after the blocks.
absl::Status WriteTrailer(const Schema& schema, FILE* out, BlockWriter& writer,
                          ConvertStats* stats) {
  std::string columns;
  google::protobuf::TextFormat::PrintToString(StoredColumns(schema), &columns);
  BinaryHeader header;
  header.num_records = stats->records;
  header.num_blocks = writer.blocks();
  header.columns_offset = writer.offset();
  header.columns_bytes = static_cast<int64_t>(columns.size());
  header.index_offset = header.columns_offset + header.columns_bytes;
  const std::string& index = writer.index();
  header.meta_crc =
      base::Crc32c(index.data(), index.size(), base::Crc32c(columns.data(), columns.size()));
  LEMRT_RETURN_IF_ERROR(writer.Write(columns.data(), columns.size()));
  LEMRT_RETURN_IF_ERROR(writer.Write(index.data(), index.size()));
  stats->bytes = writer.offset();
  const std::string encoded = EncodeBinaryHeader(header);
  if (std::fseek(out, 0, SEEK_SET) != 0 ||
      std::fwrite(encoded.data(), 1, encoded.size(), out) != encoded.size()) {
    return absl::InternalError("cannot write the header (disk full?).");
  }
  return absl::OkStatus();
}

// The binary file `out_path`: the header, the blocks `write_rows` adds, the
// columns of `schema` and the index, written to OUT.tmp and renamed over
// `out_path` (removed on failure).
absl::StatusOr<ConvertStats> WriteBinaryFile(
    const Schema& schema, const std::string& out_path,
    const std::function<absl::Status(BlockWriter&, ConvertStats*)>& write_rows) {
  const std::string tmp = out_path + ".tmp";
  std::unique_ptr<FILE, FileCloser> out(std::fopen(tmp.c_str(), "wb"));
  if (out == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  ConvertStats stats;
  BlockWriter writer(out.get(), tmp);
  const std::string placeholder(kBinaryHeaderBytes, '\0');
  absl::Status st = writer.Write(placeholder.data(), placeholder.size());
  if (st.ok()) st = write_rows(writer, &stats);
  if (st.ok()) st = WriteTrailer(schema, out.get(), writer, &stats);
  if (st.ok()) st = Publish(out.get(), tmp, out_path);
  if (!st.ok()) {
    out.reset();
    std::remove(tmp.c_str());
    return st;
  }
  return stats;
}

// The first `rows` real samples of `split` of the synthetic source, created
// for world size 1 (so in global sample order), into `writer`.
absl::Status WriteSyntheticRows(const config::RunConfig& config, Split split, int64_t rows,
                                const Schema& schema, BlockWriter& writer, ConvertStats* stats) {
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<SyntheticSource> source,
                         SyntheticSource::Create(config, 0, 1));
  Batch batch;
  ParsedSample sample;
  std::string record;
  for (int64_t chunk = 0; stats->records < rows; ++chunk) {
    LEMRT_RETURN_IF_ERROR(split == Split::kTrain ? source->TrainBatch(chunk, &batch)
                                                 : source->EvalBatch(chunk, &batch));
    for (int64_t i = 0; i < batch.num_samples && stats->records < rows; ++i) {
      if (!batch.real(i)) continue;
      sample.Reset(schema);
      sample.labels[0] = batch.labels[i];
      std::copy_n(batch.dense.begin() + i * batch.num_dense, batch.num_dense, sample.dense.begin());
      for (int f = 0; f < batch.num_features(); ++f) {
        const std::span<const int64_t> ids = batch.SampleIds(f, i);
        sample.values[f].assign(ids.begin(), ids.end());
      }
      record.clear();
      EncodeRecord(sample, schema, &record);
      LEMRT_RETURN_IF_ERROR(writer.Add(record));
      ++stats->records;
    }
  }
  return writer.Flush();
}

absl::StatusOr<ConvertStats> ExportSynthetic(const config::RunConfig& config, Split split,
                                             const std::string& out_path) {
  int64_t rows = config.training().eval_samples();
  if (split == Split::kTrain &&
      __builtin_mul_overflow(config.training().steps(), config.training().global_batch(), &rows)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the synthetic source's training split is training.steps x global_batch rows, and %d x "
        "%d is more rows than a 64-bit count holds; set training.steps to the steps the file "
        "should hold.",
        config.training().steps(), config.training().global_batch()));
  }
  if (rows <= 0) {
    return absl::InvalidArgumentError(
        split == Split::kTrain
            ? "the synthetic source's training split is training.steps x global_batch rows, "
              "and that is 0; set training.steps to the steps the file should hold."
            : "the synthetic source's eval split is training.eval_samples rows, and that is 0; "
              "set training.eval_samples.");
  }
  config::RunConfig stored = config;
  stored.mutable_data()->mutable_binary()->set_train_path(out_path);
  *stored.mutable_data()->mutable_schema() = SyntheticExportSchema(config);
  LEMRT_ASSIGN_OR_RETURN(std::shared_ptr<const Schema> schema, ResolveSchema(stored));
  LEMRT_ASSIGN_OR_RETURN(
      ConvertStats stats,
      WriteBinaryFile(*schema, out_path, [&](BlockWriter& writer, ConvertStats* stats) {
        return WriteSyntheticRows(config, split, rows, *schema, writer, stats);
      }));
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(stored.data().schema(), &stats.synthetic_schema);
  return stats;
}

}  // namespace

config::InputSchema SyntheticExportSchema(const config::RunConfig& config) {
  config::InputSchema schema;
  for (int k = 0; k < config.model().num_dense_features(); ++k) {
    schema.add_dense()->set_name(absl::StrCat("dense", k));
  }
  for (const config::FeatureConfig& feature : config.features()) {
    config::SparseInput* in = schema.add_sparse();
    in->set_feature(feature.name());
    in->set_type(config::SparseInput::INT64);
    in->set_mapping(config::SparseInput::ID);
  }
  return schema;
}

absl::StatusOr<ConvertStats> ConvertToBinary(const config::RunConfig& config, Split split,
                                             const std::string& out_path) {
  if (config.data().has_synthetic()) return ExportSynthetic(config, split, out_path);
  const SourceFormat& format = FormatOf(config.data());
  if (format.open_split == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the config's data source (", std::string(format.name), ") has no files to convert."));
  }
  LEMRT_ASSIGN_OR_RETURN(std::shared_ptr<const Schema> schema, ResolveSchema(config));
  LEMRT_ASSIGN_OR_RETURN(SplitReader input, format.open_split(config, schema, split));
  if (input.records == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("the config names no ",
                                                   split == Split::kTrain ? "training" : "eval",
                                                   " files to convert."));
  }
  for (int i = 0; i < input.records->num_files(); ++i) {
    const std::string& path = input.records->file(i).path();
    if (SameFile(path, out_path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out '", out_path, "' is the input '", path,
          "'; converting would replace the data it reads. Name another output file."));
    }
  }
  LEMRT_ASSIGN_OR_RETURN(
      ConvertStats stats,
      WriteBinaryFile(*schema, out_path, [&](BlockWriter& writer, ConvertStats* stats) {
        return WriteRows(input, schema, format.strict(config), writer, stats);
      }));
  return stats;
}

}  // namespace lemrt::host
