// Reading a small text file (a config, a limits file, a manifest) whole, with
// the checks a user-named path needs: it must be a regular file (a
// directory, FIFO or device is refused, never read or blocked on) and at most
// a given size (a huge file is refused before it is read). Thread-safe.
#ifndef LEMRT_BASE_TEXT_FILE_H_
#define LEMRT_BASE_TEXT_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace lemrt::base {

// The contents of `path`. Errors name `what` ("config file") and the path:
// NotFound when it does not exist or cannot be opened; InvalidArgument when
// it is not a regular file ("is a directory", "is a FIFO", ...) or larger
// than `max_bytes` (observed vs limit).
absl::StatusOr<std::string> ReadTextFile(const std::string& path, int64_t max_bytes,
                                         const std::string& what);

// The rest of the open descriptor `fd` (not closed), read to its end; the
// read loop of ReadTextFile, for a caller that opened the file itself
// (base/regular_file.h). Errors name `what` and `path`: NotFound when a read
// fails; InvalidArgument past `max_bytes`.
absl::StatusOr<std::string> ReadToEnd(int fd, int64_t max_bytes, const std::string& path,
                                      const std::string& what);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_TEXT_FILE_H_
