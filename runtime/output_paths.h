// Start-up checks of the files a run writes at its end (the summary, the
// trace) or along the way (the metrics CSV), so that a path that cannot be
// written fails before step 0 with a sentence instead of after the whole run
// (the summary would be lost). The checkpoint directory is checked by the
// checkpointer (runtime/checkpoint/checkpointer.h). Stateless; thread-safe.
#ifndef LEMRT_RUNTIME_OUTPUT_PATHS_H_
#define LEMRT_RUNTIME_OUTPUT_PATHS_H_

#include <string>

#include "absl/status/status.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// OK when `path` can be written as the output `flag` names ("--summary_json"):
// an existing regular file that opens for writing (left unchanged), or a new
// name in an existing directory where a file can be created (created and
// removed again). FailedPrecondition naming the flag, the path and why
// otherwise (a directory, a FIFO, a missing or read-only directory, ...).
absl::Status CheckOutputFile(const std::string& path, const std::string& flag);

// Collective: rank 0 (which writes them) checks `summary_json` (may be empty)
// and the config's observability.trace_json and metrics_csv; the result is
// agreed, so every rank returns the same error.
absl::Status CheckOutputPaths(const config::RunConfig& config, const std::string& summary_json,
                              Communicator& comm);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OUTPUT_PATHS_H_
