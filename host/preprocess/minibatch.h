// Checks one chip's partitioned COO against the partition limits and, when a
// partition is over, splits the step's ids along the vocabulary dimension into
// minibatches (reference section 7):
//
//   PlanLocal:  count ids and distinct ids per partition
//               (stacked table t, source local SC s, destination SC d;
//               layout/stacking.h; summed from the builder's per-table counts
//               when it made them, CooOptions::count_partitions, else from
//               each segment's sorted keys); for the partitions over their limits, count
//               per bucket (bucket = hash(stack, stacked row) >> 58, 64
//               buckets, so one embedding row is never split) and merge
//               buckets 0..63 greedily while every over-limit partition fits
//               -> the boundary bits this chip needs (bit b: a minibatch
//               starts at bucket b). With boundaries_per_source, one greedy
//               merge per source SparseCore and their OR, so that the OR over
//               all chips depends on the SparseCores' samples only, not on
//               how the SparseCores split over chips (world-size
//               independence: the minibatches decide the order in which a
//               multi-hot sample's partial sums are pooled).
//   (caller):   OR of the boundary bits over all chips (every chip's partitions
//               still fit a finer split), e.g. an all-reduce max per bit.
//   Split:      one layout::PartitionedCoo per minibatch (segment layout and entry
//               order kept), then per minibatch partition either
//               fits, or is cut (allow_id_dropping: entries kept in (stacked
//               row, then segment) order while both counts fit; the rest dropped and
//               counted), or the step fails.
//
// Thread-compatible; its scratch buffers are reused, so the steady state does
// not allocate.
#ifndef LEMRT_HOST_PREPROCESS_MINIBATCH_H_
#define LEMRT_HOST_PREPROCESS_MINIBATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "host/preprocess/coo.h"
#include "layout/limits.h"
#include "layout/stacking.h"

namespace lemrt::host {

struct MinibatchOptions {
  int chip = 0;                // this chip's rank (names source SparseCores in errors)
  int local_sparse_cores = 1;  // S
  int total_sparse_cores = 1;  // N
  bool minibatching = true;
  bool allow_id_dropping = false;
  // The boundaries: the OR of each source SparseCore's greedy merge (a
  // function of the SparseCore's samples alone: the same minibatches however
  // the SparseCores split over chips) instead of one greedy merge over all of
  // the chip's over-limit partitions (fewer minibatches when a chip has
  // several SparseCores). On with training.world_size_independent.
  bool boundaries_per_source = false;
  // Table stacking (layout/stacking.h), one entry per table: partitions,
  // limits, buckets and the dropping order are per stack, over stacked rows.
  // Empty: every table is its own stack (stack index = table index).
  std::vector<layout::StackedTable> stacking;
  layout::PartitionLimits limits;  // one entry per stack (per table when `stacking` is empty)
};

class MinibatchSplitter {
 public:
  static constexpr int kBuckets = 64;

  explicit MinibatchSplitter(MinibatchOptions options);

  // Bucket (0..63) of global row `col` of table `table`.
  static int Bucket(int table, int64_t col);

  // Counts the partitions of `coo` (see counts()) and returns the boundary
  // bits this chip needs: 0 when every partition fits its limits or
  // minibatching is off. Bit 0 is never set.
  uint64_t PlanLocal(const layout::PartitionedCoo& coo);

  // Partition counts of the last PlanLocal, indexed [(t * S + s) * N + d],
  // t = the stack (the table when options.stacking is empty).
  const std::vector<layout::PartitionCount>& counts() const { return counts_; }

  // Splits `coo` at the agreed `boundaries` into popcount(boundaries) + 1
  // minibatches (`out` resized; its buffers reused, and the buffers of
  // minibatches it drops parked here for a later step with more, so steps
  // with a varying number of minibatches allocate nothing once warm). Adds
  // dropped ids per original table to dropped_per_table (sized to the tables). PlanLocal(coo)
  // must have run. Errors (InvalidArgument), when a minibatch partition is
  // still over and dropping is off: names the (stacked) table, the source and
  // destination SparseCore,
  // the observed count and the limit.
  absl::Status Split(const layout::PartitionedCoo& coo, uint64_t boundaries,
                     std::vector<layout::PartitionedCoo>* out,
                     std::vector<int64_t>* dropped_per_table);

  // Split in two halves, for a sample-dimension split between them
  // (host/preprocess/sample_split.h): SplitVocabulary fills `out` (row_group = the
  // minibatch's index) without checking limits; Enforce then cuts or
  // rejects each minibatch's over-limit partitions as Split does
  // (`sample_split`: its errors say the sample dimension was split too).
  void SplitVocabulary(const layout::PartitionedCoo& coo, uint64_t boundaries,
                       std::vector<layout::PartitionedCoo>* out);
  // The same, except that a step of one minibatch is not copied: out[0]
  // swaps its entries and segment offsets with `coo`'s, so `coo` keeps its
  // counts (ids_total, ids_after_dedup, table_partition_counts) but its
  // entries and offsets are out[0]'s old buffers afterwards (both keep their
  // capacity for later steps).
  void SplitVocabulary(layout::PartitionedCoo* coo, uint64_t boundaries,
                       std::vector<layout::PartitionedCoo>* out);
  absl::Status Enforce(std::vector<layout::PartitionedCoo>* out,
                       std::vector<int64_t>* dropped_per_table, bool sample_split = false);
  // Whether a partition of the last PlanLocal was over its limits.
  bool over() const { return over_; }
  const MinibatchOptions& options() const { return options_; }

 private:
  int64_t PartitionIndex(int table, int src, int dest) const {
    return (int64_t{table} * S_ + src) * N_ + dest;
  }
  // The boundary bits the over-limit partitions of local source SparseCore
  // `source` (-1: of every source) need, greedy over bucket_counts_.
  uint64_t GreedyBoundaries(int source);
  // SplitVocabulary; with one minibatch and `take`, swaps instead of copying.
  void Distribute(const layout::PartitionedCoo& coo, uint64_t boundaries,
                  std::vector<layout::PartitionedCoo>* out, layout::PartitionedCoo* take);
  // (stack, stacked row) key of an entry's id.
  uint64_t StackedKey(int table, int64_t col) const;
  // Sorted stacked keys of each segment of `coo`, concatenated.
  void SortSegmentKeys(const layout::PartitionedCoo& coo);
  // Fills counts_: from coo.table_partition_counts when the builder counted
  // them, else from the sorted keys (keys_sorted_).
  void CountPartitions(const layout::PartitionedCoo& coo);
  // Cuts or rejects the over-limit partitions of one minibatch: per
  // segment, ChooseSegmentCuts then CompactSegment.
  absl::Status EnforceLimits(int minibatch, int minibatches, bool sample_split,
                             layout::PartitionedCoo* mb, std::vector<int64_t>* dropped_per_table);
  // Where an over-limit partition was found, for its error sentence.
  std::string OverLimitWhere(int minibatch, int minibatches, bool sample_split) const;
  // Segment k's ([begin, end) of keys_) cut per stack into cut_key_ /
  // cut_keep_; the error naming the first partition over its limit (and
  // where, OverLimitWhere) when ids may not be dropped.
  absl::Status ChooseSegmentCuts(int64_t k, int64_t begin, int64_t end, int minibatch,
                                 int minibatches, bool sample_split);
  // Moves the kept entries of [begin, end) to *w onwards and counts the
  // dropped ones per table.
  void CompactSegment(int64_t begin, int64_t end, layout::PartitionedCoo* mb, int64_t* w,
                      std::vector<int64_t>* dropped_per_table);

  MinibatchOptions options_;
  int S_;
  int N_;
  int T_;             // stacks (limits entries)
  int num_tables_;    // original tables (dropped counts)
  bool over_ = false;  // some partition of the last PlanLocal is over
  bool keys_sorted_ = false;  // keys_ holds the last PlanLocal's sorted keys
  std::vector<layout::PartitionCount> counts_;
  std::vector<uint64_t> keys_;              // per segment sorted keys
  std::vector<uint64_t> key_scratch_;       // RadixSortKeys scratch
  std::vector<int64_t> over_partitions_;    // partition indices over their limits
  std::vector<int32_t> over_slot_;          // partition -> slot in bucket_counts_, or -1
  std::vector<layout::PartitionCount> bucket_counts_;  // [slot][bucket]
  std::vector<layout::PartitionCount> running_;
  std::vector<uint64_t> cut_key_;           // per stack of a segment: first key not fully kept
  std::vector<int32_t> cut_keep_;           // entries of cut_key_ still kept
  // Minibatches Split dropped from `out` (their buffers), reused first.
  std::vector<layout::PartitionedCoo> spare_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_MINIBATCH_H_
