// Layout-independent statistics of the whole model (all chips): the L2 norm
// of every parameter and a checksum of every parameter's bytes. Both are the
// same for the same model whatever the world size, bit for bit: the checksum
// sums a hash of (table, global row, row bytes) over rows, which does not
// depend on which chip holds a row, and adds a hash of the dense parameters;
// each row's sum of squares (in column order) is summed exactly (int64 fixed
// point, base/exact_sum.h; a row or parameter whose squares reach 2^64
// makes it fall back to a double sum).
#ifndef LEMRT_RUNTIME_OBSERVABILITY_MODEL_STATS_H_
#define LEMRT_RUNTIME_OBSERVABILITY_MODEL_STATS_H_

#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"
#include "runtime/step/sparsecore_stage.h"

namespace lemrt::runtime {

struct ModelStats {
  double params_l2 = 0;
  std::string checksum;  // 16 hex digits
};

// Collective: every rank calls it; every rank gets the same result.
absl::StatusOr<ModelStats> ComputeModelStats(Communicator& comm, const SparseCoreStage& sparse,
                                             std::span<const float> dense_params);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_MODEL_STATS_H_
