// Converts one split of any configured file source (or exports the
// synthetic source's rows) into lemrt's binary format (host/formats/binary_format.h): one
// sequential pass through the source's reader and the common row checks
// (host/input/batch_filler.h), records grouped in checksummed blocks, written to OUT.tmp, fsynced
// and renamed over OUT. Thread-compatible.
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
  // An exported synthetic source: its data.schema as one line of text
  // proto (SyntheticExportSchema); empty for a file source.
  std::string synthetic_schema;
};

// Writes every valid row of `split` of `config`'s data source (text,
// criteo, tfrecord or binary) to `out_path`, in file order. Malformed rows
// are skipped with a rate-limited warning naming file:line, or (the
// source's strict) are InvalidArgument "path:line: ...". Errors:
// InvalidArgument when `out_path` is one of the inputs, when the split has
// no files or no valid row; the readers' errors; Internal naming an
// unwritable output.
//
// A synthetic source is exported instead: its rows in global sample order
// (training: training.steps x global_batch rows, the ones a run of the
// config trains on, InvalidArgument naming the product when it overflows
// int64; eval: training.eval_samples rows), stored with the
// columns of SyntheticExportSchema(config). Training from the file with that
// data.schema trains the model the synthetic source trains, bit for bit, at
// every world size.
absl::StatusOr<ConvertStats> ConvertToBinary(const config::RunConfig& config, Split split,
                                             const std::string& out_path);

// The data.schema of a synthetic source's exported rows: the label, its
// dense values as dense0 .. dense{D-1} (already transformed: IDENTITY), and
// one INT64 input per feature, keyed by the feature's name, its values the
// rows themselves (mapping ID).
config::InputSchema SyntheticExportSchema(const config::RunConfig& config);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_BINARY_WRITER_H_
