// Layout-independent statistics of the whole model (all chips): the L2 norm
// of every parameter and a checksum of every parameter's bytes. Both are the
// same for the same model whatever the world size, bit for bit: the checksum
// sums a hash of (table, global row, row bytes) over rows, which does not
// depend on which chip holds a row, and adds a hash of the dense parameters;
// each row's sum of squares (in column order) is summed exactly (int64 fixed
// point, base/exact_sum.h; a row or parameter whose squares reach 2^64
// makes it fall back to a double sum). The rows are hashed and squared eight
// at a time in vector lanes (row_block_stats.h), in blocks of rows shared by
// threads; neither changes a bit of the result.
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

// Collective: every rank calls it; every rank gets the same result. Three
// all-reduces (8 bytes, 8 bytes, 40 bytes). This rank's rows are read by
// `threads` threads (the calling one and threads - 1 started for the call;
// <= 1: the calling thread alone); the result is the same for any count,
// bit for bit, including the double sum used when a value is special.
// Returns the communicator's error.
absl::StatusOr<ModelStats> ComputeModelStats(Communicator& comm, const SparseCoreStage& sparse,
                                             std::span<const float> dense_params, int threads = 1);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_MODEL_STATS_H_
