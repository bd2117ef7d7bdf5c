// Writes the run summary as JSON (protobuf's JSON printer, proto field names)
// and as a human-readable table. Stateless; thread-safe.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_SUMMARY_WRITER_H_
#define LEMRT_RUNTIME_OBSERVABILITY_SUMMARY_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "proto/summary.pb.h"

namespace lemrt::runtime {

// JSON text of `summary`, every field printed (zeros included).
std::string SummaryJson(const summary::RunSummary& summary);

// Writes SummaryJson to `path` (temporary file + rename, so readers never see
// a partial file). Errors: PermissionDenied / Internal naming the path.
absl::Status WriteSummaryJson(const summary::RunSummary& summary, const std::string& path);

// The end-of-run table printed by lemrt_train.
std::string SummaryTable(const summary::RunSummary& summary);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_SUMMARY_WRITER_H_
