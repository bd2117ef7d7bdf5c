// Host preprocessing: one chip's local batch -> COO entries partitioned by
// the SparseCore that owns each id (reference sections 3 and 7).
//
//   Batch (CSR ids per feature)
//     -> split samples over the chip's S SparseCores (contiguous row ranges)
//     -> per sample and feature: merge duplicate ids (gain = count x
//        combiner weight; with per-id weights, their sum x the combiner's
//        norm over the sample's weights)
//     -> destination SparseCore = (col + sc_shift of the feature's table) % N
//        (N = SparseCores of all chips; sc_shift = the table's rotation in
//        its stack, layout/stacking.h; 0 without stacking)
//     -> segments ordered [dest SC 0..N-1][source local SC 0..S-1], entries
//        inside a segment ordered by (feature, row, col): the COO wire
//        format, layout/coo_format.h
//
// How (host/preprocess/coo.cc, host/preprocess/coo_records.h): three passes. (1) Count each
// segment's ids, duplicates included, checking ids against their tables.
// (2) Scatter every id, as a record (feature, row, col) packed in 8 bytes
// where the bits allow, to its segment of a staging buffer laid out by those
// counts, in (feature, row) order, through one cache-line buffer per
// destination written out with non-temporal stores; a batch with weighted
// features uses records twice as wide that carry the weight (1 for the
// unweighted features), so unweighted batches keep the narrow ones.
// (3) Per segment, in output order: sort each (feature, sample) group's
// records (a sample's ids spread over the N segments, so a group holds a
// few), merge duplicates (summing their weights), and write the entries;
// optionally count each partition's ids and distinct ids
// for the minibatch split (host/preprocess/minibatch.h) while the segment is in cache.
//
// CooBuilder is thread-compatible; it keeps scratch buffers between calls so
// the steady state does not allocate.
#ifndef LEMRT_HOST_PREPROCESS_COO_H_
#define LEMRT_HOST_PREPROCESS_COO_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "host/batch.h"
#include "host/preprocess/coo_records.h"
#include "layout/coo_format.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// What the builder needs to know of each feature. Initialise it with a
// designated initialiser that names every field (FeatureSpec{.table = ...,
// .sc_shift = ...}): GCC's -Wmissing-field-initializers, an error under
// LEMRT_WERROR, then rejects one that leaves a field out, so a field added
// here cannot be left at its default by an initialiser written before it.
struct FeatureSpec {
  int table = 0;
  int64_t vocab_size = 0;
  config::TableConfig::Combiner combiner = config::TableConfig::SUM;
  std::string name;        // feature name, for error messages
  std::string table_name;  // table name, for error messages
  // The table's rotation in its stack (layout/stacking.h), in [0, N): id j
  // goes to SparseCore (j + sc_shift) % N.
  int sc_shift = 0;
};

struct CooOptions {
  int local_sparse_cores = 1;  // S
  int total_sparse_cores = 1;  // N = chips x S
  int max_ids_per_chip_per_sample = 64;
  // true: an id outside [0, vocab_size) is an error; false: it is wrapped
  // into range (id mod vocab_size, non-negative) before dedup.
  bool id_bound_check = true;
  std::vector<FeatureSpec> features;
  // Tables in the config (>= 1 + the largest FeatureSpec::table; 0: that).
  int num_tables = 0;
  // true: Build also counts each (table, source SC, destination SC)
  // partition's ids and distinct ids (layout::PartitionedCoo::table_partition_counts)
  // with a bitmap of ceil(vocab_size / N) bits per table, when every table's
  // fits kMaxCountedRowsPerTable; otherwise (or false) the counts stay empty
  // and MinibatchSplitter::PlanLocal sorts the segments' keys to count them.
  bool count_partitions = false;
};

// Builds `options` from a validated config (with its table stacking plan).
CooOptions MakeCooOptions(const config::RunConfig& config);

class CooBuilder {
 public:
  // Bitmap budget of CooOptions::count_partitions: rows of a table per
  // SparseCore (ceil(vocab_size / N)) up to which its distinct ids are
  // counted with a bitmap (2 MiB; in cache while a segment is counted).
  static constexpr int64_t kMaxCountedRowsPerTable = int64_t{1} << 24;

  explicit CooBuilder(CooOptions options);

  // Fills `out` from `batch`. batch.num_samples must be divisible by
  // local_sparse_cores. A feature with weights (Batch::weights) gets gain =
  // (sum of the weights of an id's duplicates in the sample, in input order)
  // x norm, norm = 1 (SUM), 1 / sum of the sample's weights (MEAN),
  // 1 / sqrt(sum of their squares) (SQRTN), or 0 when that sum is 0; all-one
  // weights give the unweighted gains bit for bit. Errors (InvalidArgument):
  // with id_bound_check, an id outside its table (naming table, feature,
  // sample and the id); a sample with more ids after dedup over all features
  // than max_ids_per_chip_per_sample (observed vs limit); a feature whose
  // weights are not one per id.
  absl::Status Build(const Batch& batch, layout::PartitionedCoo* out);

 private:
  // What the passes need of each feature, packed.
  struct FeatureCode {
    int32_t table = 0;
    int32_t sc_shift = 0;
    int64_t vocab_size = 0;
    config::TableConfig::Combiner combiner = config::TableConfig::SUM;
  };

  // The passes (host/preprocess/coo.cc), for one way of dividing by N (`Div`) and one
  // staging record layout (`Codec`, host/preprocess/coo_records.h).
  template <class Div>
  absl::Status BuildWith(const Div& div, const Batch& batch, layout::PartitionedCoo* out);
  template <class Div>
  absl::Status CountSegments(const Div& div, const Batch& batch);
  absl::Status CheckSampleIds(const Batch& batch);
  absl::Status ComputeWeightNorms(const Batch& batch);
  template <class Div, class Codec>
  void Scatter(const Div& div, const Codec& codec, const Batch& batch);
  template <class Div, class Codec>
  void Expand(const Div& div, const Codec& codec, const Batch& batch, layout::PartitionedCoo* out);
  // Expand's phases: sizes `out` (returns its partition counts, null when
  // not counted); one sorted segment's feature runs into runs_; clears the
  // bitmap words that segment set.
  layout::PartitionCount* PrepareExpandOutput(layout::PartitionedCoo* out);
  template <class Codec>
  void FindFeatureRuns(const Codec& codec, const typename Codec::Record* r, int64_t n);
  template <class Div, class Codec>
  void ClearSegmentBitmaps(const Div& div, const Codec& codec, const typename Codec::Record* r);
  // Records [begin, end) of a sorted segment are feature `feature`'s.
  struct FeatureRun {
    int feature;
    int64_t begin, end;
  };

  CooOptions options_;
  std::vector<FeatureCode> codes_;
  int num_tables_;
  int col_bits_;           // bit width of the largest vocab_size - 1
  int feature_bits_;       // bit width of features - 1
  bool count_partitions_;  // options_.count_partitions and every bitmap fits
  bool ids_below_2_52_;    // every vocab_size <= 2^52 (exact in a double)
  int row_bits_ = 0;       // this batch: bit width of samples per SC - 1
  std::vector<int64_t> raw_counts_;  // ids per segment, duplicates included
  std::vector<int64_t> region_;      // staging start of each segment (records, line-aligned)
  std::vector<int64_t> histogram_;   // ids per destination of one source SC
  std::vector<int64_t> cursor_;      // records of each destination so far (staging index)
  coo_internal::AlignedScratch<uint64_t> staging_;  // the records, per segment
  coo_internal::AlignedScratch<uint64_t> lines_;    // one line buffer per destination
  std::vector<int64_t> sample_ids_;  // ids per sample (limit check)
  std::vector<int64_t> sorted_;      // one group's ids (limit check)
  std::vector<FeatureRun> runs_;     // of one segment
  std::vector<uint64_t> bitmaps_;    // count_partitions_: per table, ceil(vocab / N) bits
  std::vector<int64_t> bitmap_word_;  // first word of each table's bitmap
  // This batch's weights (ComputeWeightNorms): whether any feature has them
  // (then the records are WeightedCodec's), which do, and per weighted MEAN
  // or SQRTN feature its samples' norms at norms_[norm_begin_[f] + row]
  // (norm_begin_[f] -1 otherwise).
  bool weighted_ = false;
  std::vector<char> feature_weighted_;
  std::vector<int64_t> norm_begin_;
  std::vector<double> norms_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_COO_H_
