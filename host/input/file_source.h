// A DataSource over files of any format (docs/data.md): the records of each
// split (host/input/record_file.h) are parsed by the format's RecordParser into
// ParsedSamples and written into batches by the BatchFiller, the one path
// every format shares. Training follows the EpochSchedule and the
// SampleOrder (host/input/epoch_schedule.h), so every rank reads only its slice of
// each global batch, a row at a time position of the epoch's order; eval
// reads each eval row once, in file order. Malformed rows (strict off) are
// skipped with a rate-limited warning naming file:line and counted once (in
// the first epoch, the first evaluation); their batch rows stay masked.
// Memory: one shuffle window of raw records (two when a batch straddles
// windows), the files' sparse indexes and one batch of raw records.
// Thread-compatible.
#ifndef LEMRT_HOST_INPUT_FILE_SOURCE_H_
#define LEMRT_HOST_INPUT_FILE_SOURCE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "host/input/batch_filler.h"
#include "host/input/data_source.h"
#include "host/input/epoch_schedule.h"
#include "host/input/record_file.h"
#include "host/input/record_parser.h"
#include "host/input/schema.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// One split's input: its records and the parser of their format.
struct SplitReader {
  std::unique_ptr<RecordSet> records;  // null: the split is not configured
  std::unique_ptr<RecordParser> parser;
};

class FileSource : public DataSource {
 public:
  // `train` is required, `eval` optional (records == null). Checks that
  // each split has a valid row (reading up to the first one). Errors:
  // InvalidArgument naming the files when a split has no rows or no valid
  // one, or (strict) naming the first malformed row "path:line: ..."; read
  // errors. `config` must outlive the source.
  static absl::StatusOr<std::unique_ptr<FileSource>> Create(const config::RunConfig& config,
                                                            int rank, int world_size,
                                                            std::shared_ptr<const Schema> schema,
                                                            SplitReader train, SplitReader eval,
                                                            bool strict);

  absl::Status TrainBatch(int64_t step, Batch* batch) override;
  absl::Status EvalBatch(int64_t chunk, Batch* batch) override;
  int64_t num_eval_chunks() const override { return num_eval_chunks_; }
  int64_t num_eval_samples() const override { return eval_rows_; }
  const EpochSchedule* train_schedule() const override { return &schedule_; }
  bool has_teacher() const override { return false; }
  int64_t skipped_lines() const override { return skipped_lines_; }
  std::vector<FeatureCounts> feature_counts() const override { return filler_.counts(); }

 private:
  struct Window {
    int64_t index = -1;
    RecordBatch records;
  };

  FileSource(const config::RunConfig& config, int rank, int world_size,
             std::shared_ptr<const Schema> schema, SplitReader train, SplitReader eval,
             bool strict);
  // Parses `record` (row `row` of `split`) into batch row `i`; a malformed
  // record is an error (strict) or a masked row, counted when `first_visit`.
  absl::Status Fill(SplitReader& split, int64_t row, std::string_view record, bool first_visit,
                    int64_t i, Batch* batch);
  // The raw record of training row `row`, loading its shuffle window.
  absl::StatusOr<std::string_view> WindowRecord(int64_t row);
  // InvalidArgument unless some row of `split` is valid.
  absl::Status CheckHasValidRow(SplitReader& split);

  const int rank_;
  const int64_t local_batch_;
  const int64_t global_batch_;
  const bool strict_;
  BatchFiller filler_;
  ParsedSample sample_;
  SplitReader train_;
  SplitReader eval_;
  EpochSchedule schedule_;
  SampleOrder order_;
  std::array<Window, 2> windows_;
  int next_window_slot_ = 0;
  RecordBatch scratch_;
  int64_t eval_rows_ = 0;
  int64_t num_eval_chunks_ = 0;
  bool eval_counted_ = false;  // the first evaluation's skipped rows are counted
  int64_t skipped_lines_ = 0;
  bool scale_checked_ = false;  // rank 0's first training batch drew DenseScaleWarning
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_FILE_SOURCE_H_
