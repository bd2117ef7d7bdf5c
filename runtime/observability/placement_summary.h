// The summary's placement (proto/summary.proto, PlacementStats): each rank's
// host and what its SparseCore exchanges sent per step within its host and
// between hosts. Stateless; thread-compatible.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_PLACEMENT_SUMMARY_H_
#define LEMRT_RUNTIME_OBSERVABILITY_PLACEMENT_SUMMARY_H_

#include "absl/status/status.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/placement.h"
#include "runtime/observability/run_recorder.h"

namespace lemrt::runtime {

// Collective (one all-reduce of 16 B per rank): fills `out` from
// `placement` (of comm's ranks) and every rank's `mine` (this rank's bytes
// per step, RunRecorder::exchange_bytes_per_step). Every rank gets the same
// `out`. Errors: those of the all-reduce.
absl::Status FillPlacement(Communicator& comm, const Placement& placement,
                           const HostBytesPerStep& mine, summary::PlacementStats* out);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_PLACEMENT_SUMMARY_H_
