// Reads the Criteo display-advertising TSV format (label, 13 integers, 26 hex
// categories per line) into batches; each MPI rank reads only its byte range
// of the file. Thread-compatible: one owner calls TrainBatch / EvalBatch.
#ifndef LEMRT_HOST_CRITEO_READER_H_
#define LEMRT_HOST_CRITEO_READER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "host/batch.h"
#include "host/criteo_shard.h"
#include "host/data_source.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// One parsed line. Fields are tab-separated; any may be empty (missing).
//   field 1        label, "0" or "1"
//   fields 2..14   integers (may be negative)   -> dense = log(1 + max(x, 0))
//   fields 15..40  categories, 1..8 hex digits  -> category[c], c = field - 15
// A line with fewer than 40 fields is padded with empty fields.
struct CriteoLine {
  static constexpr int kNumIntegers = 13;
  static constexpr int kNumCategories = 26;
  static constexpr int kNumFields = 1 + kNumIntegers + kNumCategories;

  float label = 0;
  std::array<float, kNumIntegers> dense{};  // Missing = 0.
  std::array<uint32_t, kNumCategories> category{};
  uint32_t category_present = 0;  // Bit c: column c non-empty.

  bool has_category(int c) const { return (category_present >> c) & 1u; }
};

// Parses `line` (without its newline; a trailing '\r' is ignored) into `out`.
// Returns InvalidArgument with a sentence naming the 1-based field, e.g.
// "field 15 'zz12' is not a hex category" (no file:line; the caller adds it).
absl::Status ParseCriteoLine(std::string_view line, CriteoLine* out);

// The row of a table with `vocab_size` rows that category value `value` maps
// to when it feeds table number `table_index` (its position in the config):
// Mix64(value ^ Mix64(table_index + 1)) % vocab_size.
int64_t CriteoCategoryId(uint32_t value, int table_index, int64_t vocab_size);

// Sharding: of a file of S bytes, rank r of W owns the lines whose first byte
// lies in [r * S / W, (r + 1) * S / W). Training walks the rank's valid lines
// in order, LB = global_batch / W per step, wrapping to the first line at the
// end of the range (epochs); step s starts at valid line s * LB (mod the
// shard's valid lines), so a resumed run continues where it left off.
// Malformed lines (label not 0/1, bad integer, bad hex, more than 40 fields)
// are skipped with a rate-limited LOG(WARNING) naming file:line and counted
// once each, or are InvalidArgument errors "path:line: ..." when
// criteo.strict is set.
// Dense feature k < 13 is integer k (field k + 2); dense features past 13
// are 0. Feature f reads category column input_column (default f) into its
// table; a missing category gives the feature zero ids in that sample.
// Eval: the rank's share of eval_path, up to num_eval_chunks() * LB valid
// lines, is read once at Create and kept in memory. EvalBatch(c) returns the
// cached samples [c * LB, (c + 1) * LB), taken modulo the cache size when
// the shard holds fewer lines (so all ranks run the same number of chunks).
class CriteoReader : public DataSource {
 public:
  // Opens `config.data().criteo()`'s files for rank `rank` of `world_size`
  // and loads the eval shard. `config` must outlive the reader. Errors:
  // NotFound / PermissionDenied naming an unreadable path; InvalidArgument
  // for an empty train_path, a category column outside 0..25, a train or
  // eval shard with no valid line (e.g. an empty file), or (strict) a
  // malformed line met while checking those.
  static absl::StatusOr<std::unique_ptr<CriteoReader>> Create(
      const config::RunConfig& config, int rank, int world_size);
  ~CriteoReader() override;

  CriteoReader(const CriteoReader&) = delete;
  CriteoReader& operator=(const CriteoReader&) = delete;

  // Errors: InvalidArgument when the rank's train shard has no valid line or
  // (strict) on a malformed line; DataLoss when a read fails.
  absl::Status TrainBatch(int64_t step, Batch* batch) override;
  // Precondition: 0 <= chunk < num_eval_chunks(); FailedPrecondition when
  // there is no eval file.
  absl::Status EvalBatch(int64_t chunk, Batch* batch) override;
  // 0 without eval_path, else max(1, eval_samples / global_batch).
  int64_t num_eval_chunks() const override { return num_eval_chunks_; }
  bool has_teacher() const override { return false; }
  int64_t skipped_lines() const override { return skipped_lines_; }

 private:
  class ShardReader;  // Buffered line reader over one rank's byte range.

  CriteoReader(const config::RunConfig& config, int world_size,
               std::vector<CriteoFeature> features);

  // Reads the next valid line of `reader` into `out`, counting and logging
  // skipped lines past the high-water mark `*seen_lines`. Returns false at
  // the end of the shard.
  absl::StatusOr<bool> NextValidLine(ShardReader& reader, int64_t* seen_lines,
                                     CriteoLine* out);
  // Moves the train reader so the next line returned is valid line `target`.
  absl::Status SeekTrain(int64_t target);
  absl::Status NextTrainLine(CriteoLine* out);
  absl::Status LoadEval(ShardReader& reader);

  const bool strict_;
  const int64_t local_batch_;  // Samples.
  const int num_dense_;
  const std::vector<CriteoFeature> features_;
  int64_t num_eval_chunks_ = 0;
  int64_t skipped_lines_ = 0;

  std::unique_ptr<ShardReader> train_;
  int64_t train_seen_lines_ = 0;  // High-water mark of lines examined.
  int64_t train_position_ = 0;    // Valid lines consumed, over all epochs.
  int64_t pass_position_ = 0;     // Valid lines consumed since the rewind.
  int64_t epoch_lines_ = -1;      // Valid lines per pass; -1 until known.
  int64_t eval_seen_lines_ = 0;
  std::vector<CriteoLine> eval_lines_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_CRITEO_READER_H_
