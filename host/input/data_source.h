// Where training and eval samples come from. A DataSource produces one chip's
// slice of each global batch. Thread-compatible: one owner calls it.
// Implementations: SyntheticSource (host/input/synthetic_source.h) and FileSource
// (host/input/file_source.h) over the file formats of host/input/source_registry.h.
#ifndef LEMRT_HOST_INPUT_DATA_SOURCE_H_
#define LEMRT_HOST_INPUT_DATA_SOURCE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "host/batch.h"
#include "host/input/batch_filler.h"
#include "host/input/epoch_schedule.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class DataSource {
 public:
  virtual ~DataSource() = default;

  // Fills `batch` with this rank's local batch of training step `step`
  // (global_batch / world_size rows; rows past the data are masked, see
  // Batch). Steps are requested in increasing order, starting anywhere (a
  // resumed run starts at its checkpoint's step).
  // Errors: DataLoss / InvalidArgument for malformed data (naming file:line),
  // NotFound / PermissionDenied for unreadable files.
  virtual absl::Status TrainBatch(int64_t step, Batch* batch) = 0;

  // Fills `batch` with this rank's slice of eval chunk `chunk`: chunk c is
  // eval samples [c G, (c + 1) G) and rank r's slice [c G + r LB,
  // c G + (r + 1) LB) (LB = G / world_size), rows past num_eval_samples()
  // masked. Chunks 0 .. num_eval_chunks()-1.
  virtual absl::Status EvalBatch(int64_t chunk, Batch* batch) = 0;
  // ceil(num_eval_samples() / global_batch).
  virtual int64_t num_eval_chunks() const = 0;
  // The eval set's rows (over all ranks), each scored once per evaluation.
  virtual int64_t num_eval_samples() const = 0;

  // The training rows' epochs, or null for data without an end (synthetic).
  virtual const EpochSchedule* train_schedule() const { return nullptr; }

  // True when batches carry teacher_prob (synthetic data).
  virtual bool has_teacher() const = 0;

  // Malformed input lines skipped so far on this rank (file data only).
  virtual int64_t skipped_lines() const { return 0; }

  // Per feature (config order), the values this rank read in the first
  // epoch's rows: counts, OOV and truncated values. Empty for synthetic data.
  virtual std::vector<FeatureCounts> feature_counts() const { return {}; }
};

// Creates the source configured in `config.data()` for `rank` of
// `world_size` (host/input/source_registry.h). `config` must have passed
// ValidateConfig and must outlive the source.
absl::StatusOr<std::unique_ptr<DataSource>> CreateDataSource(
    const config::RunConfig& config, int rank, int world_size);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_DATA_SOURCE_H_
