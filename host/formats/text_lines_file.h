// A text file as records: one line each (without its '\n' and a trailing
// '\r'), the first line left out when it is a header. Opening reads the
// file once to count its lines and keep the byte offset of every
// kIndexStride-th record (8 bytes per kIndexStride lines); a read seeks to
// the nearest indexed line at or before it and skips forward, so random
// access reads at most kIndexStride - 1 extra lines and sequential reads
// are one buffered pass. Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_TEXT_LINES_FILE_H_
#define LEMRT_HOST_FORMATS_TEXT_LINES_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/input/record_file.h"

namespace lemrt::host {

class TextFile : public RecordFile {
 public:
  static constexpr int64_t kIndexStride = 1024;  // records per index entry
  // The longest line (bytes, without its '\n') a file may have: a bound on
  // the read buffer, and what ends a file without line ends at once.
  static constexpr int64_t kMaxLineBytes = int64_t{64} << 20;

  // Opens and indexes `path`. With `header`, line 1 is the header (not a
  // record; an empty file has none). Errors: NotFound / PermissionDenied
  // naming the path; InvalidArgument for anything but a regular file (a
  // directory, FIFO or device: never blocked on), for a line longer than
  // kMaxLineBytes ("path:LINE: ...") and for CR-only line ends; DataLoss for
  // a read error.
  static absl::StatusOr<std::unique_ptr<TextFile>> Open(const std::string& path, bool header);
  ~TextFile() override;

  const std::string& path() const override { return path_; }
  int64_t num_records() const override { return num_records_; }
  absl::Status Read(int64_t first, int64_t count, RecordBatch* out) override;
  std::string Where(int64_t record) const override;
  int64_t truncated_record() const override { return unterminated_ ? num_records_ - 1 : -1; }
  // The header line (empty without `header`).
  const std::string& header_line() const { return header_line_; }

 private:
  TextFile(std::string path, FILE* file, bool header);
  absl::Status Index();
  absl::Status LineTooLong(int64_t line, bool carriage_return) const;
  absl::Status Seek(int64_t record);
  // The next line into `out`; false at the end of the file.
  absl::StatusOr<bool> NextLine(RecordBatch* out);
  absl::Status Refill();

  const std::string path_;
  FILE* file_;
  const bool header_;
  std::string header_line_;
  int64_t num_records_ = 0;
  bool unterminated_ = false;     // the last line has no '\n'
  std::vector<int64_t> index_;    // byte offset of record k * kIndexStride
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;    // unread bytes: buffer_[begin_, end_)
  bool eof_ = false;
  int64_t next_record_ = -1;      // the record NextLine returns next (-1: unknown)
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_TEXT_LINES_FILE_H_
