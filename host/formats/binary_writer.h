// Converts one split of any configured file source into lemrt's binary
// format (host/formats/binary_format.h): one sequential pass through the source's
// reader and the common row checks (host/input/batch_filler.h), records grouped in
// checksummed blocks, written to OUT.tmp, fsynced and renamed over OUT.
// Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_BINARY_WRITER_H_
#define LEMRT_HOST_FORMATS_BINARY_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "host/input/source_registry.h"
#include "proto/config.pb.h"

namespace lemrt::host {

struct ConvertStats {
  int64_t records = 0;        // rows written
  int64_t skipped_lines = 0;  // malformed rows left out (strict off)
  int64_t bytes = 0;          // of the output file
};

// Writes every valid row of `split` of `config`'s data source (text,
// criteo, tfrecord or binary) to `out_path`, in file order. Malformed rows
// are skipped with a rate-limited warning naming file:line, or (the
// source's strict) are InvalidArgument "path:line: ...". Errors:
// InvalidArgument when `out_path` is one of the inputs, when the split has
// no files or no valid row, or for a source without files (synthetic);
// the readers' errors; Internal naming an unwritable output.
absl::StatusOr<ConvertStats> ConvertToBinary(const config::RunConfig& config, Split split,
                                             const std::string& out_path);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_BINARY_WRITER_H_
