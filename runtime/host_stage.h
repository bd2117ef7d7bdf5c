// The host stage of a step on one chip: read the local batch, build the
// partitioned COO (host/coo.h), check it against the partition limits and
// split it into vocabulary-dimension minibatches agreed by all chips
// (host/minibatch.h), dropping ids when allowed. Thread-compatible; one per
// rank, driven by the trainer's thread (its calls are collectives).
//
// Collectives per call: AgreeOnStatus (one all-reduce, plus a broadcast on
// error), and when any table has limits one all-reduce max of 64 int64
// boundary flags (512 B per rank), then AgreeOnStatus again for the split.
#ifndef LEMRT_RUNTIME_HOST_STAGE_H_
#define LEMRT_RUNTIME_HOST_STAGE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "host/batch.h"
#include "host/coo.h"
#include "host/data_source.h"
#include "host/limits.h"
#include "host/minibatch.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class HostStage {
 public:
  // `config` (validated), `comm` and `data` must outlive the stage.
  HostStage(const config::RunConfig& config, Communicator& comm, host::DataSource& data,
            host::PartitionLimits limits);

  // Collective: prepares training step `step`: fills `batch`, the step's
  // whole COO `coo` (before the split and any dropping) and the step's vocabulary-dimension `minibatches` (1 when the step fits
  // its limits); all buffers are reused. Errors on any rank
  // (bad data, an id out of range, a partition over its limits with dropping
  // off) are returned on every rank, prefixed with the failing rank and
  // "step N: ".
  absl::Status PrepareTrain(int64_t step, host::Batch* batch, host::PartitionedCoo* coo,
                            std::vector<host::PartitionedCoo>* minibatches);

  // Collective: as PrepareTrain for eval chunk `chunk`; not counted in stats.
  absl::Status PrepareEval(int64_t chunk, host::Batch* batch, host::PartitionedCoo* coo,
                           std::vector<host::PartitionedCoo>* minibatches);

  const host::PartitionLimits& limits() const { return limits_; }

  // Collective (one all-reduce of the dropped counts): the summary's
  // minibatch and dropping statistics over the training steps so far.
  absl::Status Summarise(summary::PreprocessStats* out);

  // Training totals on this chip.
  int64_t ids_total() const { return ids_total_; }
  int64_t ids_after_dedup() const { return ids_after_dedup_; }
  const std::vector<int32_t>& minibatches_per_step() const { return minibatches_per_step_; }
  // Dropped ids per table (training steps only).
  const std::vector<int64_t>& dropped_per_table() const { return dropped_per_table_; }

 private:
  absl::Status Prepare(const char* what, int64_t index, bool train, host::Batch* batch,
                       host::PartitionedCoo* coo, std::vector<host::PartitionedCoo>* minibatches);

  Communicator& comm_;
  host::DataSource& data_;
  host::PartitionLimits limits_;
  bool limited_;
  host::CooBuilder coo_builder_;
  host::MinibatchSplitter splitter_;
  std::vector<int64_t> boundary_flags_;
  std::vector<int64_t> dropped_scratch_;
  std::vector<int64_t> dropped_per_table_;
  std::vector<int32_t> minibatches_per_step_;
  int64_t ids_total_ = 0;
  int64_t ids_after_dedup_ = 0;
  int64_t drop_logs_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_HOST_STAGE_H_
