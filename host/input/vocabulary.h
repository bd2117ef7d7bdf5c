// A feature's vocabulary: the values that get their own table row, in row
// order, read from a text file with one value per line (optionally followed
// by a tab and a count, as lemrt_vocab writes it). Immutable after Load;
// thread-safe.
#ifndef LEMRT_HOST_INPUT_VOCABULARY_H_
#define LEMRT_HOST_INPUT_VOCABULARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "host/input/value_key.h"

namespace lemrt::host {

class Vocabulary {
 public:
  // The longest line (bytes) a vocabulary file may have.
  static constexpr int64_t kMaxLineBytes = 65536;

  // Reads `path`; each line's value (the text before the first tab) is
  // parsed as `type` (host/input/value_key.h). Errors: NotFound / PermissionDenied
  // naming the path; InvalidArgument for a path that is not a regular file
  // (a FIFO is never blocked on), "path:line: ..." for a value that is not a
  // `type` or appears twice, a NUL byte (a binary file) or a line longer than
  // kMaxLineBytes, and for a file without values.
  static absl::StatusOr<std::unique_ptr<Vocabulary>> Load(const std::string& path, ValueType type,
                                                          int max_hex_digits);

  // The entry of `key` (0-based line among the values), or -1.
  int64_t Find(uint64_t key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? -1 : it->second;
  }
  int64_t size() const { return static_cast<int64_t>(index_.size()); }
  const std::string& path() const { return path_; }

 private:
  // Adds one line's value (its number `line_number`, 1-based, for messages).
  absl::Status AddLine(std::string_view line, int64_t line_number, ValueType type,
                       int max_hex_digits);

  std::string path_;
  absl::flat_hash_map<uint64_t, int64_t> index_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_VOCABULARY_H_
