// Where training and eval samples come from. A DataSource produces one chip's
// slice of each global batch. Thread-compatible: one owner calls it.
#ifndef LEMRT_HOST_DATA_SOURCE_H_
#define LEMRT_HOST_DATA_SOURCE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "host/batch.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class DataSource {
 public:
  virtual ~DataSource() = default;

  // Fills `batch` with this rank's local batch of training step `step`
  // (global_batch / world_size samples). Steps are requested in increasing
  // order, starting anywhere (a resumed run starts at its checkpoint's step).
  // Errors: DataLoss / InvalidArgument for malformed data (naming file:line),
  // NotFound / PermissionDenied for unreadable files.
  virtual absl::Status TrainBatch(int64_t step, Batch* batch) = 0;

  // Fills `batch` with this rank's slice of eval chunk `chunk` (each chunk is
  // one global batch of eval samples; chunks 0 .. num_eval_chunks()-1).
  virtual absl::Status EvalBatch(int64_t chunk, Batch* batch) = 0;
  virtual int64_t num_eval_chunks() const = 0;

  // True when batches carry teacher_prob (synthetic data).
  virtual bool has_teacher() const = 0;

  // Malformed input lines skipped so far on this rank (file data only).
  virtual int64_t skipped_lines() const { return 0; }
};

// Creates the source configured in `config.data()` for `rank` of `world_size`.
// `config` must have passed ValidateConfig and must outlive the source.
absl::StatusOr<std::unique_ptr<DataSource>> CreateDataSource(
    const config::RunConfig& config, int rank, int world_size);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_DATA_SOURCE_H_
