#include "host/vocabulary.h"

#include <cerrno>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lemrt::host {

absl::StatusOr<std::unique_ptr<Vocabulary>> Vocabulary::Load(const std::string& path,
                                                             ValueType type, int max_hex_digits) {
  std::ifstream in(path);
  if (!in) return absl::ErrnoToStatus(errno, absl::StrCat("cannot read vocabulary '", path, "'"));
  auto vocabulary = std::unique_ptr<Vocabulary>(new Vocabulary());
  vocabulary->path_ = path;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view value = std::string_view(line).substr(0, line.find('\t'));
    uint64_t key = 0;
    if (!ParseValueKey(value, type, max_hex_digits, &key)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: '%s' is not a value of the feature's type", path, line_number, value));
    }
    const int64_t entry = vocabulary->size();
    if (!vocabulary->index_.emplace(key, entry).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: '%s' appears twice (entry %d repeats entry %d)", path, line_number, value,
          entry, vocabulary->index_.at(key)));
    }
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("read error in '", path, "'"));
  if (vocabulary->size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("vocabulary '", path, "' has no values"));
  }
  return vocabulary;
}

}  // namespace lemrt::host
