#include "host/input/vocabulary.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/regular_file.h"
#include "base/status_macros.h"

namespace lemrt::host {
namespace {

// Closes the FILE on every return.
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

absl::Status Vocabulary::AddLine(std::string_view line, int64_t line_number, ValueType type,
                                 int max_hex_digits) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: the line has a NUL byte: a binary file, not a vocabulary (a text file with one "
        "value a line)",
        path_, line_number));
  }
  const std::string_view value = line.substr(0, line.find('\t'));
  uint64_t key = 0;
  if (!ParseValueKey(value, type, max_hex_digits, &key)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: '%s' is not a value of the feature's type", path_, line_number, value));
  }
  const int64_t entry = size();
  if (!index_.emplace(key, entry).second) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d: '%s' appears twice (entry %d repeats entry %d)", path_,
                        line_number, value, entry, index_.at(key)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Vocabulary>> Vocabulary::Load(const std::string& path,
                                                             ValueType type, int max_hex_digits) {
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path, "vocabulary"));
  std::unique_ptr<FILE, FileCloser> in(fdopen(fd, "rb"));
  if (in == nullptr) {
    close(fd);
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read vocabulary '", path, "'"));
  }
  auto vocabulary = std::unique_ptr<Vocabulary>(new Vocabulary());
  vocabulary->path_ = path;
  std::string line;
  int64_t line_number = 1;
  char block[1 << 16];
  size_t got = 0;
  while ((got = std::fread(block, 1, sizeof(block), in.get())) > 0) {
    for (size_t i = 0; i < got; ++i) {
      if (block[i] != '\n') {
        line.push_back(block[i]);
        if (static_cast<int64_t>(line.size()) > kMaxLineBytes) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s:%d: the line is longer than %d bytes, the most a vocabulary value may have "
              "(a vocabulary is a text file with one value a line)",
              path, line_number, kMaxLineBytes));
        }
        continue;
      }
      LEMRT_RETURN_IF_ERROR(vocabulary->AddLine(line, line_number, type, max_hex_digits));
      line.clear();
      ++line_number;
    }
  }
  if (std::ferror(in.get())) return absl::DataLossError(absl::StrCat("read error in '", path, "'"));
  if (!line.empty()) {
    LEMRT_RETURN_IF_ERROR(vocabulary->AddLine(line, line_number, type, max_hex_digits));
  }
  if (vocabulary->size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("vocabulary '", path, "' has no values"));
  }
  return vocabulary;
}

}  // namespace lemrt::host
