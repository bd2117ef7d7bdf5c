// The one path by which every file reader writes a parsed row into a Batch
// (docs/data.md "Schema"): the label, dense and weight values are checked
// (finite; labels in [0, 1], or NaN for an unlabelled row when the schema's
// labels are optional), each feature's values are mapped to rows of
// its table (hashed, used as ids, or looked up in its vocabulary) and its
// list length is held to max_sequence_length (a bad row, or truncated with
// sequence_overflow: OVERFLOW_TRUNCATE). Thread-compatible; one per reader.
#ifndef LEMRT_HOST_INPUT_BATCH_FILLER_H_
#define LEMRT_HOST_INPUT_BATCH_FILLER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "host/batch.h"
#include "host/input/parsed_sample.h"
#include "host/input/schema.h"

namespace lemrt::host {

// Per feature, over the rows appended so far.
struct FeatureCounts {
  int64_t values = 0;     // values read (before truncation)
  int64_t oov = 0;        // vocabulary features: values not in the vocabulary
  int64_t truncated = 0;  // values cut off past max_length
};

class BatchFiller {
 public:
  explicit BatchFiller(std::shared_ptr<const Schema> schema);

  // Sizes `batch` for `samples` rows of this schema (Batch::Resize) with an
  // all-zero mask: rows become real as Append fills them.
  void Start(int64_t samples, Batch* batch) const;

  // Checks `sample` and writes it as row `row` of `batch` (rows in
  // increasing order, each written once by Append or AppendEmpty), setting
  // its mask to 1. Returns InvalidArgument with a sentence naming the input
  // (dense input, feature) and leaves the row unwritten: the caller adds
  // its file:line and calls AppendEmpty. `count` false leaves the counters
  // alone (rows seen before).
  absl::Status Append(const ParsedSample& sample, int64_t row, Batch* batch, bool count = true);

  // Writes row `row` as an empty, masked row (no ids, zero dense, label 0).
  void AppendEmpty(int64_t row, Batch* batch) const;

  // The checks of Append without writing: InvalidArgument naming the input
  // (a label outside [0, 1], a dense input that is not finite or beyond
  // +-2^64 after its transform, an ID-mapped id outside its table when
  // checked, weights, list lengths).
  absl::Status Check(const ParsedSample& sample) const;

  const std::vector<FeatureCounts>& counts() const { return counts_; }
  const Schema& schema() const { return *schema_; }

 private:
  // Mapping kId ids outside their table's rows, when the schema checks them.
  absl::Status CheckIds(const ParsedSample& sample) const;

  std::shared_ptr<const Schema> schema_;
  std::vector<FeatureCounts> counts_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_BATCH_FILLER_H_
