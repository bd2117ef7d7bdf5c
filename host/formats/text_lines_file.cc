#include "host/formats/text_lines_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/regular_file.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::host {
namespace {

constexpr size_t kBlockBytes = size_t{4} << 20;

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

TextFile::TextFile(std::string path, FILE* file, bool header)
    : path_(std::move(path)), file_(file), header_(header), buffer_(kBlockBytes) {}

TextFile::~TextFile() { std::fclose(file_); }

absl::StatusOr<std::unique_ptr<TextFile>> TextFile::Open(const std::string& path, bool header) {
  // A FIFO or device (/dev/zero) is refused here: it would block or never end.
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path, "input file"));
  FILE* f = fdopen(fd, "rb");
  if (f == nullptr) {
    const int err = errno;
    close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot open '", path, "'"));
  }
  auto file = std::unique_ptr<TextFile>(new TextFile(path, f, header));
  LEMRT_RETURN_IF_ERROR(file->Index());
  return file;
}

absl::Status TextFile::Index() {
  std::vector<char> block(kBlockBytes);
  const int64_t header_lines = header_ ? 1 : 0;
  int64_t lines = 0;  // '\n' seen so far
  auto line_starts = [&](int64_t offset) {
    const int64_t record = lines - header_lines;
    if (record >= 0 && record % kIndexStride == 0) index_.push_back(offset);
  };
  index_.clear();
  line_starts(0);
  int64_t offset = 0;      // of block[0] in the file
  int64_t line_start = 0;  // of the line being scanned
  bool carriage_return = false;  // a '\r' before the first '\n'
  char last = '\n';
  while (true) {
    const size_t got = std::fread(block.data(), 1, block.size(), file_);
    if (got == 0) {
      if (std::ferror(file_)) return absl::DataLossError(absl::StrCat("read error in '", path_, "'."));
      break;
    }
    const char* p = block.data();
    const char* end = p + got;
    while (const void* nl = std::memchr(p, '\n', end - p)) {
      p = static_cast<const char*>(nl) + 1;
      ++lines;
      line_start = offset + (p - block.data());
      line_starts(line_start);
    }
    // A '\r' before the last byte (a CRLF file's '\r' is followed by '\n').
    if (lines == 0 && std::memchr(block.data(), '\r', got - 1) != nullptr) carriage_return = true;
    last = block[got - 1];
    offset += static_cast<int64_t>(got);
    if (offset - line_start > kMaxLineBytes) return LineTooLong(lines + 1, carriage_return);
  }
  const int64_t total_lines = lines + (last != '\n' ? 1 : 0);
  // A short file with CR-only line ends reads as one line: say so.
  if (lines == 0 && carriage_return) return LineTooLong(1, true);
  unterminated_ = last != '\n';
  num_records_ = std::max<int64_t>(0, total_lines - header_lines);
  // The entry made for the position just past a final '\n' names no record.
  index_.resize(std::min<size_t>(index_.size(), (num_records_ + kIndexStride - 1) / kIndexStride));
  if (header_ && total_lines > 0) {
    LEMRT_RETURN_IF_ERROR(Seek(-1));
    RecordBatch header;
    LEMRT_ASSIGN_OR_RETURN(const bool found, NextLine(&header));
    if (found) header_line_ = std::string(header[0]);
    if (num_records_ == 0) unterminated_ = false;  // the cut line was the header
  }
  next_record_ = -1;
  return absl::OkStatus();
}

absl::Status TextFile::LineTooLong(int64_t line, bool carriage_return) const {
  if (carriage_return) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: the file has '\\r' but no '\\n' line ends (CR-only, classic Mac), so it reads "
        "as one line; convert them with tr '\\r' '\\n'.",
        path_, line));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d: the line is longer than %d bytes, the most a line may have (no line end: is it a "
      "text file?).",
      path_, line, kMaxLineBytes));
}

absl::Status TextFile::Seek(int64_t record) {
  // record -1 is the header line at offset 0.
  const int64_t entry = record < 0 ? -1 : record / kIndexStride;
  const int64_t offset = entry < 0 ? 0 : index_[entry];
  if (fseeko(file_, offset, SEEK_SET) != 0) {
    return absl::DataLossError(absl::StrCat("cannot seek in '", path_, "'."));
  }
  begin_ = end_ = 0;
  eof_ = false;
  next_record_ = entry < 0 ? -1 : entry * kIndexStride;
  RecordBatch skipped;
  while (next_record_ < record) {
    skipped.Clear();
    LEMRT_ASSIGN_OR_RETURN(const bool found, NextLine(&skipped));
    if (!found) return absl::DataLossError(absl::StrCat("'", path_, "' changed while being read."));
  }
  return absl::OkStatus();
}

absl::Status TextFile::Refill() {
  const size_t kept = end_ - begin_;
  std::memmove(buffer_.data(), buffer_.data() + begin_, kept);
  begin_ = 0;
  end_ = kept;
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // one line fills it
  const size_t got = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_);
  end_ += got;
  if (got == 0) {
    if (std::ferror(file_)) return absl::DataLossError(absl::StrCat("read error in '", path_, "'."));
    eof_ = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> TextFile::NextLine(RecordBatch* out) {
  size_t scanned = begin_;
  while (true) {
    const void* nl = std::memchr(buffer_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr || (eof_ && begin_ < end_)) {
      const size_t stop = nl != nullptr ? static_cast<const char*>(nl) - buffer_.data() : end_;
      out->Append(StripCr(std::string_view(buffer_.data() + begin_, stop - begin_)));
      begin_ = std::min(stop + 1, end_);
      ++next_record_;
      return true;
    }
    if (eof_) return false;
    const size_t kept = end_ - begin_;
    LEMRT_RETURN_IF_ERROR(Refill());
    scanned = kept;  // Refill moved the unread bytes (no '\n' among them) to 0
  }
}

absl::Status TextFile::Read(int64_t first, int64_t count, RecordBatch* out) {
  CHECK(first >= 0 && count >= 0 && first + count <= num_records_);
  if (count == 0) return absl::OkStatus();
  if (first != next_record_) LEMRT_RETURN_IF_ERROR(Seek(first));
  for (int64_t i = 0; i < count; ++i) {
    LEMRT_ASSIGN_OR_RETURN(const bool found, NextLine(out));
    if (!found) return absl::DataLossError(absl::StrCat("'", path_, "' changed while being read."));
  }
  return absl::OkStatus();
}

std::string TextFile::Where(int64_t record) const {
  return absl::StrCat(path_, ":", record + 1 + (header_ ? 1 : 0));
}

}  // namespace lemrt::host
