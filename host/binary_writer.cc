#include "host/binary_writer.h"

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "host/binary_format.h"
#include "host/criteo_reader.h"

namespace lemrt::host {
namespace {

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

constexpr size_t kBufferBytes = size_t{8} << 20;

}  // namespace

absl::StatusOr<ConvertStats> ConvertCriteoTsvToBinary(const std::string& tsv_path,
                                                      const std::string& out_path, bool strict) {
  FilePtr in(std::fopen(tsv_path.c_str(), "rb"));
  if (in == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", tsv_path, "'"));
  const std::string tmp = out_path + ".tmp";
  FilePtr out(std::fopen(tmp.c_str(), "wb"));
  if (out == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  std::setvbuf(in.get(), nullptr, _IOFBF, kBufferBytes);
  std::setvbuf(out.get(), nullptr, _IOFBF, kBufferBytes);
  auto write_error = [&] {
    return absl::InternalError(absl::StrCat("cannot write '", tmp, "' (disk full?)."));
  };
  // The header is rewritten with the record count at the end.
  if (std::fwrite(EncodeBinaryHeader(0).data(), 1, kBinaryHeaderBytes, out.get()) !=
      static_cast<size_t>(kBinaryHeaderBytes)) {
    return write_error();
  }
  ConvertStats stats;
  std::string line;
  CriteoLine parsed;
  char record[kBinaryRecordBytes];
  int64_t line_number = 0;
  std::vector<char> chunk(1 << 16);
  bool eof = false;
  while (!eof) {
    line.clear();
    // One line, of any length.
    while (true) {
      if (std::fgets(chunk.data(), static_cast<int>(chunk.size()), in.get()) == nullptr) {
        if (std::ferror(in.get())) {
          return absl::DataLossError(absl::StrCat("read error in '", tsv_path, "'."));
        }
        eof = true;
        break;
      }
      line += chunk.data();
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        break;
      }
    }
    if (eof && line.empty()) break;
    ++line_number;
    const absl::Status st = ParseCriteoLine(line, &parsed);
    if (!st.ok()) {
      if (strict) {
        return absl::InvalidArgumentError(
            absl::StrCat(tsv_path, ":", line_number, ": ", st.message(), "."));
      }
      ++stats.skipped_lines;
      if (stats.skipped_lines <= 10 || stats.skipped_lines % 1000 == 0) {
        LOG(WARNING) << tsv_path << ":" << line_number << ": " << st.message()
                     << "; skipping the line (" << stats.skipped_lines << " skipped so far).";
      }
      continue;
    }
    EncodeBinaryRecord(parsed, record);
    if (std::fwrite(record, 1, kBinaryRecordBytes, out.get()) !=
        static_cast<size_t>(kBinaryRecordBytes)) {
      return write_error();
    }
    ++stats.records;
  }
  if (stats.records == 0) {
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("'", tsv_path, "' has no valid line."));
  }
  const std::string header = EncodeBinaryHeader(stats.records);
  if (std::fseek(out.get(), 0, SEEK_SET) != 0 ||
      std::fwrite(header.data(), 1, header.size(), out.get()) != header.size() ||
      std::fflush(out.get()) != 0) {
    return write_error();
  }
  out.reset();
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot rename '", tmp, "' to '", out_path, "'"));
  }
  return stats;
}

}  // namespace lemrt::host
