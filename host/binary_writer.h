// Converts a Criteo TSV file into lemrt's binary format (binary_format.h):
// one sequential pass with large buffered reads and writes, to a temporary
// name renamed at the end. Thread-compatible.
#ifndef LEMRT_HOST_BINARY_WRITER_H_
#define LEMRT_HOST_BINARY_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace lemrt::host {

struct ConvertStats {
  int64_t records = 0;        // Valid lines written.
  int64_t skipped_lines = 0;  // Malformed lines left out (not strict).
};

// Reads `tsv_path` line by line with ParseCriteoLine and writes every valid
// line as a record to `out_path`. Malformed lines are skipped with a
// rate-limited warning naming file:line, or (strict) are InvalidArgument
// "path:line: ...". Errors: NotFound / PermissionDenied naming an unreadable
// input, Internal naming an unwritable output; InvalidArgument when no line
// is valid.
absl::StatusOr<ConvertStats> ConvertCriteoTsvToBinary(const std::string& tsv_path,
                                                      const std::string& out_path, bool strict);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_BINARY_WRITER_H_
