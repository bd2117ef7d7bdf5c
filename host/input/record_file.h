// Raw records of input files (a text line, a TFRecord payload, a binary
// record) addressed by index, before any parsing. A RecordFile is one file
// of one format; a RecordSet is the files of one split, concatenated in the
// order given. Readers index their file once when opened (bounded memory: a
// sparse offset index), so any record can be read without reading the file
// into memory; sequential reads cost one pass. Thread-compatible.
#ifndef LEMRT_HOST_INPUT_RECORD_FILE_H_
#define LEMRT_HOST_INPUT_RECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lemrt::host {

// Records appended one after another into one byte buffer: record i is
// bytes [ends[i - 1], ends[i]) (ends[-1] = 0). Clear keeps capacity.
class RecordBatch {
 public:
  void Clear() {
    bytes_.clear();
    ends_.clear();
  }
  void Append(std::string_view record) {
    bytes_.insert(bytes_.end(), record.begin(), record.end());
    ends_.push_back(static_cast<int64_t>(bytes_.size()));
  }
  // Appends a record of `size` bytes and returns where to write them (valid
  // until the next call).
  char* AppendUninitialized(size_t size) {
    bytes_.resize(bytes_.size() + size);
    ends_.push_back(static_cast<int64_t>(bytes_.size()));
    return bytes_.data() + bytes_.size() - size;
  }
  int64_t size() const { return static_cast<int64_t>(ends_.size()); }
  int64_t bytes() const { return static_cast<int64_t>(bytes_.size()); }
  std::string_view operator[](int64_t i) const {
    const int64_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_.data() + begin, ends_[i] - begin);
  }

 private:
  std::vector<char> bytes_;
  std::vector<int64_t> ends_;
};

class RecordFile {
 public:
  virtual ~RecordFile() = default;

  virtual const std::string& path() const = 0;
  virtual int64_t num_records() const = 0;
  // Appends records [first, first + count) to `out` in order. Precondition:
  // 0 <= first, first + count <= num_records(). Cheapest when `first` is
  // where the previous Read ended. Errors: DataLoss naming the file (and
  // record) for read errors and corrupt framing or checksums.
  virtual absl::Status Read(int64_t first, int64_t count, RecordBatch* out) = 0;
  // "path:LINE" (text) or "path, record N" (1-based), for messages.
  virtual std::string Where(int64_t record) const = 0;
  // The record known to be cut short (a text file's last line without a
  // newline), or -1.
  virtual int64_t truncated_record() const { return -1; }
};

class RecordSet {
 public:
  explicit RecordSet(std::vector<std::unique_ptr<RecordFile>> files);

  int64_t num_records() const { return starts_.back(); }
  int num_files() const { return static_cast<int>(files_.size()); }
  const RecordFile& file(int i) const { return *files_[i]; }
  // As RecordFile::Read over the concatenated files.
  absl::Status Read(int64_t first, int64_t count, RecordBatch* out);
  std::string Where(int64_t record) const;
  bool truncated(int64_t record) const;
  // The paths joined by ", " (at most a few, then "and N more").
  std::string Describe() const;

 private:
  // The file holding `record` and the record's index in it.
  std::pair<int, int64_t> Locate(int64_t record) const;

  std::vector<std::unique_ptr<RecordFile>> files_;
  std::vector<int64_t> starts_;  // starts_[i] = first record of file i; back() = total
};

// The files named by `patterns`, in order: a comma-separated list of paths
// and glob(3) patterns (sorted matches); empty entries are skipped. Errors:
// NotFound "`field`: no file matches 'pattern'".
absl::StatusOr<std::vector<std::string>> ExpandPaths(std::string_view patterns,
                                                     std::string_view field);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_RECORD_FILE_H_
