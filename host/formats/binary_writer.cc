#include "host/formats/binary_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
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

}  // namespace

absl::StatusOr<ConvertStats> ConvertToBinary(const config::RunConfig& config, Split split,
                                             const std::string& out_path) {
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
  const std::string tmp = out_path + ".tmp";
  std::unique_ptr<FILE, FileCloser> out(std::fopen(tmp.c_str(), "wb"));
  if (out == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  ConvertStats stats;
  BlockWriter writer(out.get(), tmp);
  const std::string placeholder(kBinaryHeaderBytes, '\0');
  absl::Status st = writer.Write(placeholder.data(), placeholder.size());
  if (st.ok()) st = WriteRows(input, schema, format.strict(config), writer, &stats);
  if (st.ok()) st = WriteTrailer(*schema, out.get(), writer, &stats);
  if (st.ok()) st = Publish(out.get(), tmp, out_path);
  if (!st.ok()) {
    out.reset();
    std::remove(tmp.c_str());
    return st;
  }
  return stats;
}

}  // namespace lemrt::host
