#include "host/input/record_file.h"

#include <glob.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::host {

RecordSet::RecordSet(std::vector<std::unique_ptr<RecordFile>> files) : files_(std::move(files)) {
  starts_.push_back(0);
  for (const auto& f : files_) starts_.push_back(starts_.back() + f->num_records());
}

std::pair<int, int64_t> RecordSet::Locate(int64_t record) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), record);
  const int file = static_cast<int>(it - starts_.begin()) - 1;
  return {file, record - starts_[file]};
}

absl::Status RecordSet::Read(int64_t first, int64_t count, RecordBatch* out) {
  CHECK(first >= 0 && count >= 0 && first + count <= num_records())
      << first << " + " << count << " of " << num_records();
  while (count > 0) {
    const auto [file, local] = Locate(first);
    const int64_t n = std::min(count, files_[file]->num_records() - local);
    LEMRT_RETURN_IF_ERROR(files_[file]->Read(local, n, out));
    first += n;
    count -= n;
  }
  return absl::OkStatus();
}

std::string RecordSet::Where(int64_t record) const {
  const auto [file, local] = Locate(record);
  return files_[file]->Where(local);
}

bool RecordSet::truncated(int64_t record) const {
  const auto [file, local] = Locate(record);
  return files_[file]->truncated_record() == local;
}

std::string RecordSet::Describe() const {
  std::string out;
  constexpr int kShown = 3;
  for (int i = 0; i < num_files() && i < kShown; ++i) {
    absl::StrAppend(&out, i > 0 ? ", " : "", "'", files_[i]->path(), "'");
  }
  if (num_files() > kShown) absl::StrAppend(&out, " and ", num_files() - kShown, " more");
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandPaths(std::string_view patterns,
                                                     std::string_view field) {
  std::vector<std::string> paths;
  for (const absl::string_view entry : absl::StrSplit(absl::string_view(patterns.data(), patterns.size()), ',', absl::SkipEmpty())) {
    const std::string pattern(entry);
    if (pattern.find_first_of("*?[") == std::string::npos) {
      paths.push_back(pattern);  // opened (and reported) by the reader
      continue;
    }
    glob_t g{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == 0) {
      std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
      std::sort(matches.begin(), matches.end());
      paths.insert(paths.end(), matches.begin(), matches.end());
    }
    globfree(&g);
    if (rc != 0) {
      return absl::NotFoundError(absl::StrCat(std::string(field), ": no file matches '", pattern, "'."));
    }
  }
  return paths;
}

}  // namespace lemrt::host
